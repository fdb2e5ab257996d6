/*
 * The HTTP engine (kubeapi/http.h): libcurl's multi socket interface on a
 * libuv loop.
 *
 * Wiring. curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION:
 * one uv_poll_t each, found again through curl_multi_assign) and when to
 * call it back (CURLMOPT_TIMERFUNCTION: one uv_timer_t); both end in
 * curl_multi_socket_action(). Neither callback ever calls back into curl.
 *
 * Calls. Each call sits on exactly one list of the engine, by state:
 *
 *   submit -> reads | writes (QUEUED, FIFO) -> running (RUNNING, in curl)
 *          -> retrying (RETRYING, sorted by due time) -> back to the head
 *             of its queue
 *          -> done (DONE) -> done_cb, then freed
 *
 * Every transition that curl must see (adding or removing an easy handle)
 * and every done_cb happen in process(), which runs only from a uv
 * callback and never re-enters itself. The public entry points (submit,
 * cancel, close) only move calls between lists and kick() the engine, so
 * they are safe from within any callback: a done_cb, or a chunk_cb running
 * inside curl, where curl forbids removing handles.
 *
 * Closing. close() cancels everything and kicks; once the last call has
 * been delivered, teardown() stops watching sockets, cleans up curl and
 * closes the two timers; the last uv close callback frees the engine and
 * calls closed_cb.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <uv.h>

#include "kubeapi/http.h"

#define CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* Intrusive circular doubly linked list; a detached link points to itself. */
struct link {
	struct link *prev, *next;
};

static void list_init(struct link *l)
{
	l->prev = l->next = l;
}

static int list_empty(const struct link *l)
{
	return l->next == l;
}

static void list_insert_after(struct link *pos, struct link *n)
{
	n->prev = pos;
	n->next = pos->next;
	pos->next->prev = n;
	pos->next = n;
}

static void list_remove(struct link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}

enum call_state { CALL_QUEUED, CALL_RUNNING, CALL_RETRYING, CALL_DONE };

/* How the current attempt's body is handled, decided at its first byte. */
enum body_mode { BODY_UNDECIDED, BODY_BUFFER, BODY_STREAM };

struct kubeapi_http_call {
	struct link link; /* on one list of h, by state */
	struct kubeapi_http *h;
	enum call_state state;
	enum kubeapi_method method;
	unsigned flags;
	uint64_t seq;         /* submission order */
	uint64_t timeout_ms;  /* per attempt, or a stream's idle limit */
	uint64_t retry_at_ms; /* RETRYING: monotonic due time */
	kubeapi_http_chunk_cb chunk_cb;
	kubeapi_http_done_cb done_cb;
	void *data;
	char *url;  /* in this allocation */
	char *body; /* in this allocation, NUL-terminated */
	size_t body_len;

	/* The current (or last) attempt. */
	CURL *easy; /* RUNNING only */
	struct curl_slist *headers;
	enum body_mode mode;
	char *buf; /* response body, cap bytes, kept across attempts */
	size_t len, cap;
	long status;
	unsigned http_version;
	int abort_err; /* set by a callback that stopped the transfer */
	int cancelled; /* RUNNING: reap at the next process() */
	int has_retry_after;
	uint64_t retry_after_ms;
	unsigned attempts;
	int err; /* DONE: the result */
};

/* A socket curl asked us to watch. */
struct sock {
	uv_poll_t poll;
	struct link link; /* on h->socks while open */
	struct kubeapi_http *h;
	curl_socket_t fd;
};

struct kubeapi_http {
	uv_loop_t *loop;
	struct kubeapi_conn *conn;
	struct kubeapi_http_options opt;
	char *base;                    /* URL prefix of every call */
	struct curl_slist *connect_to; /* with tls_server_name: where base really is */
	CURLM *multi;
	uv_timer_t curl_timer; /* curl's timeout */
	uv_timer_t wake;       /* a kick, the next write token or the next retry */
	struct link reads, writes, running, retrying, done, socks;
	struct kubeapi_http_bucket bucket;
	CURL **pool; /* idle easy handles, at most opt.max_inflight */
	unsigned npool;
	uint64_t rng;
	uint64_t next_seq;
	unsigned ncalls;       /* calls allocated and not yet freed */
	unsigned ncancel;      /* RUNNING calls flagged cancelled since process() */
	unsigned open_handles; /* uv handles not yet closed */
	int kicked, closing, torn_down;
	void (*closed_cb)(void *);
	void *closed_data;
	struct kubeapi_http_stats stats;
};

static void process(struct kubeapi_http *h);

static void on_wake(uv_timer_t *t)
{
	process(t->data);
}

static uint64_t now_ms(void)
{
	return uv_hrtime() / 1000000u;
}

/* splitmix64: the jitter needs spread, not secrecy. */
static uint64_t rng_next(struct kubeapi_http *h)
{
	uint64_t z = (h->rng += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* The token to send now; a rotated token file is re-read (kubeconfig.c
 * stat()s it at most once per KUBEAPI_TOKEN_RECHECK_MS). */
static const char *conn_token(struct kubeapi_conn *c)
{
	return kubeapi_conn_token(c, now_ms());
}

static struct kubeapi_http_call *call_of(struct link *l)
{
	return CONTAINER_OF(l, struct kubeapi_http_call, link);
}

/* ---- Options ---------------------------------------------------------- */

#define DEFAULT(field, value)                                                                      \
	do {                                                                                       \
		if (o->field == 0)                                                                 \
			o->field = (value);                                                        \
	} while (0)

static int apply_options(struct kubeapi_http_options *o, const struct kubeapi_http_options *in)
{
	if (in)
		*o = *in;
	DEFAULT(max_inflight, KUBEAPI_HTTP_DEFAULT_MAX_INFLIGHT);
	DEFAULT(write_qps, KUBEAPI_HTTP_DEFAULT_WRITE_QPS);
	DEFAULT(write_burst, KUBEAPI_HTTP_DEFAULT_WRITE_BURST);
	DEFAULT(timeout_ms, KUBEAPI_HTTP_DEFAULT_TIMEOUT_MS);
	DEFAULT(max_retries, KUBEAPI_HTTP_DEFAULT_MAX_RETRIES);
	DEFAULT(max_body, KUBEAPI_HTTP_DEFAULT_MAX_BODY);
	DEFAULT(backoff_base_ms, KUBEAPI_HTTP_DEFAULT_BACKOFF_BASE_MS);
	DEFAULT(backoff_cap_ms, KUBEAPI_HTTP_DEFAULT_BACKOFF_CAP_MS);
	DEFAULT(stream_idle_ms, KUBEAPI_HTTP_DEFAULT_STREAM_IDLE_MS);
	/* curl takes times as long; uv timers would take them as uint64_t. */
	if (isnan(o->write_qps) || o->max_inflight > 65536 || o->max_body > SIZE_MAX / 2 ||
	    o->timeout_ms > LONG_MAX || o->stream_idle_ms > LONG_MAX ||
	    o->backoff_cap_ms > LONG_MAX || o->backoff_base_ms > o->backoff_cap_ms)
		return -EINVAL;
	return 0;
}

#undef DEFAULT

/* ---- Easy handles: a free list keeps them, and their buffers, warm ----- */

static CURL *easy_get(struct kubeapi_http *h)
{
	if (h->npool > 0)
		return h->pool[--h->npool];
	return curl_easy_init();
}

static void easy_put(struct kubeapi_http *h, CURL *e)
{
	if (h->npool < h->opt.max_inflight)
		h->pool[h->npool++] = e;
	else
		curl_easy_cleanup(e);
}

/* ---- Queues ----------------------------------------------------------- */

static void enqueue(struct kubeapi_http *h, struct kubeapi_http_call *c, int front)
{
	struct link *q = kubeapi_http_method_info(c->method)->write ? &h->writes : &h->reads;

	c->state = CALL_QUEUED;
	list_insert_after(front ? q : q->prev, &c->link);
	h->stats.queued++;
}

static void dequeue(struct kubeapi_http *h, struct kubeapi_http_call *c)
{
	list_remove(&c->link);
	if (c->state == CALL_QUEUED)
		h->stats.queued--;
	else if (c->state == CALL_RETRYING)
		h->stats.retrying--;
}

/* The next call to start, or NULL: the older queue head, except that a
 * write without a token gives way to a read. Takes the write's token. */
static struct kubeapi_http_call *next_call(struct kubeapi_http *h, uint64_t now)
{
	struct kubeapi_http_call *r = list_empty(&h->reads) ? NULL : call_of(h->reads.next);
	struct kubeapi_http_call *w = list_empty(&h->writes) ? NULL : call_of(h->writes.next);

	if (w && (!r || w->seq < r->seq)) {
		if (kubeapi_http_bucket_take(&h->bucket, now) == 0)
			return w;
		return r;
	}
	return r;
}

/* Runs from a uv callback soon: the only way entry points get work done. */
static void kick(struct kubeapi_http *h)
{
	if (h->torn_down)
		return;
	h->kicked = 1;
	uv_timer_start(&h->wake, on_wake, 0, 0);
}

static void complete(struct kubeapi_http_call *c, int err)
{
	c->err = err;
	c->state = CALL_DONE;
	list_insert_after(c->h->done.prev, &c->link);
}

/* ---- Building an attempt ---------------------------------------------- */

static struct curl_slist *header_add(struct curl_slist *l, const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 3;
	char *line = malloc(n);
	struct curl_slist *r = NULL;

	if (line) {
		snprintf(line, n, "%s: %s", name, value);
		r = curl_slist_append(l, line);
		free(line);
	}
	if (!r)
		curl_slist_free_all(l);
	return r;
}

/* Accept, Content-Type, Authorization, and no "Expect: 100-continue"
 * (one round trip less for large bodies over HTTP/1.1). */
static struct curl_slist *build_headers(struct kubeapi_http_call *c)
{
	const struct kubeapi_http_method_info *m = kubeapi_http_method_info(c->method);
	const char *token = conn_token(c->h->conn);
	struct curl_slist *l = curl_slist_append(NULL, "Expect:");

	if (l)
		l = header_add(l, "Accept", "application/json");
	if (l && m->content_type && (c->body_len > 0 || m->body_required))
		l = header_add(l, "Content-Type", m->content_type);
	if (l && token) {
		/* "Bearer " + token; a header line, not logged anywhere. */
		size_t n = strlen(token) + 8;
		char *v = malloc(n);

		if (!v) {
			curl_slist_free_all(l);
			return NULL;
		}
		snprintf(v, n, "Bearer %s", token);
		l = header_add(l, "Authorization", v);
		free(v);
	}
	return l;
}

/* Sets an option unless an earlier one failed; rc is a CURLcode. */
#define SETOPT(rc, e, opt, val) ((rc) == CURLE_OK ? ((rc) = curl_easy_setopt((e), opt, val)) : (rc))

static CURLcode set_tls(CURL *e, const struct kubeapi_conn *k)
{
	CURLcode rc = CURLE_OK;
	/* NOCOPY: the conn outlives the engine (kubeapi/http.h). */
	struct curl_blob ca = {k->ca_data.data, k->ca_data.len, CURL_BLOB_NOCOPY};
	struct curl_blob cert = {k->cert_data.data, k->cert_data.len, CURL_BLOB_NOCOPY};
	struct curl_blob key = {k->key_data.data, k->key_data.len, CURL_BLOB_NOCOPY};

	if (k->ca_file)
		SETOPT(rc, e, CURLOPT_CAINFO, k->ca_file);
	else if (k->ca_data.data)
		SETOPT(rc, e, CURLOPT_CAINFO_BLOB, &ca);
	if (k->cert_file)
		SETOPT(rc, e, CURLOPT_SSLCERT, k->cert_file);
	else if (k->cert_data.data)
		SETOPT(rc, e, CURLOPT_SSLCERT_BLOB, &cert);
	if (k->key_file)
		SETOPT(rc, e, CURLOPT_SSLKEY, k->key_file);
	else if (k->key_data.data)
		SETOPT(rc, e, CURLOPT_SSLKEY_BLOB, &key);
	if (k->insecure_skip_tls_verify) {
		SETOPT(rc, e, CURLOPT_SSL_VERIFYPEER, 0L);
		SETOPT(rc, e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	return rc;
}

/* What every attempt shares: one connection pool, so one set of options. */
static CURLcode set_transport(CURL *e, const struct kubeapi_conn *k)
{
	CURLcode rc = CURLE_OK;

	SETOPT(rc, e, CURLOPT_NOSIGNAL, 1L);
	SETOPT(rc, e, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(rc, e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	SETOPT(rc, e, CURLOPT_PIPEWAIT, 1L);
	SETOPT(rc, e, CURLOPT_ACCEPT_ENCODING, "gzip");
	SETOPT(rc, e, CURLOPT_USERAGENT, "muster");
	SETOPT(rc, e, CURLOPT_TCP_KEEPALIVE, 1L);
	SETOPT(rc, e, CURLOPT_TCP_KEEPIDLE, 30L);
	SETOPT(rc, e, CURLOPT_TCP_KEEPINTVL, 10L);
	if (rc == CURLE_OK)
		rc = set_tls(e, k);
	return rc;
}

/* GET as curl's default; POST by CURLOPT_POST; the rest by
 * CURLOPT_CUSTOMREQUEST, with the body (if any) as POSTFIELDS. */
static CURLcode set_method(struct kubeapi_http_call *c, CURL *e)
{
	const struct kubeapi_http_method_info *m = kubeapi_http_method_info(c->method);
	CURLcode rc = CURLE_OK;

	if (!m->custom_request && !m->body_required)
		return curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	if (m->custom_request)
		SETOPT(rc, e, CURLOPT_CUSTOMREQUEST, m->custom_request);
	else
		SETOPT(rc, e, CURLOPT_POST, 1L);
	if (c->body_len > 0 || m->body_required) {
		SETOPT(rc, e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
		SETOPT(rc, e, CURLOPT_POSTFIELDS, c->body);
	}
	return rc;
}

static CURLcode set_timeouts(struct kubeapi_http_call *c, CURL *e)
{
	const struct kubeapi_http_options *o = &c->h->opt;
	CURLcode rc = CURLE_OK;

	if (!(c->flags & KUBEAPI_REQ_STREAM))
		return curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	/* Under 1 byte/s for the idle limit: dead. curl checks it every second. */
	SETOPT(rc, e, CURLOPT_CONNECTTIMEOUT_MS, (long)o->timeout_ms);
	SETOPT(rc, e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	SETOPT(rc, e, CURLOPT_LOW_SPEED_TIME, (long)((c->timeout_ms + 999) / 1000));
	return rc;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud);
static size_t on_header(char *p, size_t size, size_t n, void *ud);

static CURLcode set_call(struct kubeapi_http_call *c, CURL *e)
{
	CURLcode rc = CURLE_OK;

	SETOPT(rc, e, CURLOPT_URL, c->url);
	SETOPT(rc, e, CURLOPT_CONNECT_TO, c->h->connect_to);
	SETOPT(rc, e, CURLOPT_PRIVATE, (void *)c);
	SETOPT(rc, e, CURLOPT_HTTPHEADER, c->headers);
	SETOPT(rc, e, CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(rc, e, CURLOPT_WRITEDATA, (void *)c);
	SETOPT(rc, e, CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(rc, e, CURLOPT_HEADERDATA, (void *)c);
	if (rc == CURLE_OK)
		rc = set_method(c, e);
	if (rc == CURLE_OK)
		rc = set_timeouts(c, e);
	return rc;
}

/* Reset e and configure it for c's next attempt. */
static int setup_easy(struct kubeapi_http_call *c, CURL *e)
{
	CURLcode rc;

	curl_easy_reset(e);
	c->headers = build_headers(c);
	if (!c->headers)
		return -ENOMEM;
	rc = set_transport(e, c->h->conn);
	if (rc == CURLE_OK)
		rc = set_call(c, e);
	if (rc != CURLE_OK) {
		curl_slist_free_all(c->headers);
		c->headers = NULL;
		return rc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EINVAL;
	}
	return 0;
}

static void attempt_reset(struct kubeapi_http_call *c)
{
	c->mode = BODY_UNDECIDED;
	c->len = 0;
	c->status = 0;
	c->http_version = 0;
	c->abort_err = 0;
	c->has_retry_after = 0;
}

/* Hand c to curl. Returns 0, or a negative errno and c is not running. */
static int start_attempt(struct kubeapi_http *h, struct kubeapi_http_call *c)
{
	CURL *e = easy_get(h);
	int rc;

	if (!e)
		return -ENOMEM;
	attempt_reset(c);
	rc = setup_easy(c, e);
	if (rc == 0 && curl_multi_add_handle(h->multi, e) != CURLM_OK) {
		curl_slist_free_all(c->headers);
		c->headers = NULL;
		rc = -ENOMEM;
	}
	if (rc < 0) {
		easy_put(h, e);
		return rc;
	}
	c->easy = e;
	c->state = CALL_RUNNING;
	list_insert_after(h->running.prev, &c->link);
	c->attempts++;
	h->stats.attempts++;
	if (++h->stats.inflight > h->stats.max_inflight_hwm)
		h->stats.max_inflight_hwm = h->stats.inflight;
	return 0;
}

/* ---- Bodies and headers, called by curl during a transfer -------------- */

/* Grow c->buf to hold len more bytes and a NUL, within max_body. */
static int buffer_reserve(struct kubeapi_http_call *c, size_t len)
{
	size_t max = c->h->opt.max_body, cap = c->cap ? c->cap : 4096;
	char *p;

	if (len > max - c->len)
		return -EMSGSIZE;
	if (c->len + len + 1 <= c->cap)
		return 0;
	while (cap < c->len + len + 1)
		cap *= 2;
	if (cap > max + 1)
		cap = max + 1;
	p = realloc(c->buf, cap);
	if (!p)
		return -ENOMEM;
	c->buf = p;
	c->cap = cap;
	return 0;
}

/* At the first byte of a body: stream a 2xx answer to a stream request,
 * buffer anything else (sized from Content-Length when it is known). */
static int decide_mode(struct kubeapi_http_call *c)
{
	curl_off_t clen = -1;

	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
	if ((c->flags & KUBEAPI_REQ_STREAM) && c->status >= 200 && c->status <= 299) {
		c->mode = BODY_STREAM;
		return 0;
	}
	c->mode = BODY_BUFFER;
	curl_easy_getinfo(c->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &clen);
	if (clen > 0 && (uint64_t)clen > c->h->opt.max_body)
		return -EMSGSIZE;
	return clen > 0 ? buffer_reserve(c, (size_t)clen) : 0;
}

/* Stream or buffer one piece of the body; < 0 stops the transfer. */
static int body_write(struct kubeapi_http_call *c, const char *p, size_t len)
{
	int rc;

	if (c->mode == BODY_UNDECIDED && (rc = decide_mode(c)) < 0)
		return rc;
	if (c->mode == BODY_STREAM) {
		rc = c->chunk_cb(c->data, p, len);
		return rc < 0 ? rc : 0;
	}
	rc = buffer_reserve(c, len);
	if (rc < 0)
		return rc;
	memcpy(c->buf + c->len, p, len);
	c->len += len;
	c->buf[c->len] = '\0';
	return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct kubeapi_http_call *c = ud;
	int rc;

	if (c->cancelled)
		return CURL_WRITEFUNC_ERROR;
	rc = body_write(c, p, size * n);
	if (rc < 0) {
		c->abort_err = rc;
		return CURL_WRITEFUNC_ERROR;
	}
	/* A chunk_cb may have cancelled its own call, or closed the engine. */
	return c->cancelled ? CURL_WRITEFUNC_ERROR : size * n;
}

/* Remembers Retry-After from the final response; a new status line (after
 * a 1xx, or a new attempt) forgets it. Reads the wall clock, which an
 * HTTP-date needs; every other time here is monotonic. */
static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	static const char name[] = "retry-after:";
	struct kubeapi_http_call *c = ud;
	size_t len = size * n, vlen;
	const char *v = p + sizeof(name) - 1;
	uint64_t ms;

	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		c->has_retry_after = 0;
		return len;
	}
	if (len < sizeof(name) || strncasecmp(p, name, sizeof(name) - 1) != 0)
		return len;
	vlen = len - (sizeof(name) - 1);
	while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
		vlen--;
	if (kubeapi_http_retry_after_ms(v, vlen, time(NULL), &ms) == 0) {
		c->retry_after_ms = ms;
		c->has_retry_after = 1;
	}
	return len;
}

/* ---- Finishing an attempt --------------------------------------------- */

static unsigned version_number(long v)
{
	switch (v) {
	case CURL_HTTP_VERSION_1_0:
		return 10;
	case CURL_HTTP_VERSION_1_1:
		return 11;
	case CURL_HTTP_VERSION_2_0:
		return 20;
	case CURL_HTTP_VERSION_3:
		return 30;
	default:
		return 0;
	}
}

/* Take c's easy handle back from curl; c leaves the running list. */
static void detach(struct kubeapi_http *h, struct kubeapi_http_call *c)
{
	long status = 0, version = 0;

	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(c->easy, CURLINFO_HTTP_VERSION, &version);
	c->status = status;
	c->http_version = version_number(version);
	curl_multi_remove_handle(h->multi, c->easy);
	easy_put(h, c->easy);
	c->easy = NULL;
	curl_slist_free_all(c->headers);
	c->headers = NULL;
	list_remove(&c->link);
	h->stats.inflight--;
}

static void schedule_retry(struct kubeapi_http *h, struct kubeapi_http_call *c)
{
	const struct kubeapi_http_options *o = &h->opt;
	uint64_t delay;
	struct link *pos;

	if (c->has_retry_after)
		delay =
		    c->retry_after_ms < o->backoff_cap_ms ? c->retry_after_ms : o->backoff_cap_ms;
	else
		delay = kubeapi_http_backoff_ms(c->attempts, o->backoff_base_ms, o->backoff_cap_ms,
		                                rng_next(h));
	c->retry_at_ms = now_ms() + delay;
	c->state = CALL_RETRYING;
	/* Sorted by due time; a new delay is usually the latest, so walk back. */
	for (pos = h->retrying.prev; pos != &h->retrying; pos = pos->prev)
		if (call_of(pos)->retry_at_ms <= c->retry_at_ms)
			break;
	list_insert_after(pos, &c->link);
	h->stats.retrying++;
	h->stats.retries++;
}

/* The attempt is over: retry it, or complete the call. */
static void attempt_done(struct kubeapi_http *h, struct kubeapi_http_call *c, CURLcode result)
{
	int again = 0, err;

	detach(h, c);
	if (c->cancelled)
		err = -ECANCELED;
	else if (c->abort_err)
		err = c->abort_err;
	else
		err = kubeapi_http_curl_errno((int)result, &again);
	if (!c->cancelled && !h->closing && c->attempts <= h->opt.max_retries &&
	    c->mode != BODY_STREAM && kubeapi_http_should_retry(c->flags, c->status, err, again))
		schedule_retry(h, c);
	else
		complete(c, err);
}

static void reap_cancelled(struct kubeapi_http *h)
{
	struct link *l, *next;

	for (l = h->running.next; l != &h->running; l = next) {
		next = l->next;
		if (call_of(l)->cancelled)
			attempt_done(h, call_of(l), CURLE_OK);
	}
	h->ncancel = 0;
}

static void read_finished(struct kubeapi_http *h)
{
	CURLMsg *msg;
	char *c;
	int left;

	while ((msg = curl_multi_info_read(h->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &c);
		attempt_done(h, (struct kubeapi_http_call *)(void *)c, msg->data.result);
	}
}

/* ---- process(): the one place where work happens ---------------------- */

static void promote_retries(struct kubeapi_http *h, uint64_t now)
{
	struct kubeapi_http_call *c;

	while (!list_empty(&h->retrying) && call_of(h->retrying.next)->retry_at_ms <= now) {
		c = call_of(h->retrying.next);
		dequeue(h, c);
		enqueue(h, c, 1); /* it has waited its turn already */
	}
}

static void dispatch(struct kubeapi_http *h, uint64_t now)
{
	struct kubeapi_http_call *c;
	int rc;

	while (h->stats.inflight < h->opt.max_inflight && (c = next_call(h, now))) {
		dequeue(h, c);
		rc = start_attempt(h, c);
		if (rc < 0)
			complete(c, rc);
	}
}

static struct kubeapi_response response_of(const struct kubeapi_http_call *c)
{
	struct kubeapi_response r = {
	    .status = c->status,
	    .err = c->err,
	    .body = c->mode == BODY_STREAM ? NULL
	            : c->buf && c->len     ? c->buf
	                                   : "",
	    .len = c->mode == BODY_STREAM ? 0 : c->len,
	    .attempts = c->attempts,
	    .http_version = c->http_version,
	};
	return r;
}

static void call_free(struct kubeapi_http *h, struct kubeapi_http_call *c)
{
	free(c->buf);
	free(c);
	h->ncalls--;
}

/* done_cbs may submit, cancel or close; none of those re-enter here. */
static void deliver_done(struct kubeapi_http *h)
{
	struct kubeapi_http_call *c;
	struct kubeapi_response r;

	while (!list_empty(&h->done)) {
		c = call_of(h->done.next);
		list_remove(&c->link);
		r = response_of(c);
		c->done_cb(c->data, &r);
		h->stats.completed++;
		call_free(h, c);
	}
}

/* Sleep until the next retry is due or, if a slot is free, the next write
 * token; a kick during process() already set the timer to 0. */
static void arm_wake(struct kubeapi_http *h)
{
	uint64_t now = now_ms(), wait = UINT64_MAX, w;

	if (!list_empty(&h->retrying)) {
		w = call_of(h->retrying.next)->retry_at_ms;
		wait = w > now ? w - now : 0;
	}
	if (!list_empty(&h->writes) && h->stats.inflight < h->opt.max_inflight) {
		w = kubeapi_http_bucket_wait_ms(&h->bucket, now);
		wait = w < wait ? w : wait;
	}
	if (wait == UINT64_MAX)
		uv_timer_stop(&h->wake);
	else
		uv_timer_start(&h->wake, on_wake, wait, 0);
}

static void teardown(struct kubeapi_http *h);

static void process(struct kubeapi_http *h)
{
	uint64_t now;

	if (h->torn_down)
		return;
	h->kicked = 0;
	if (h->ncancel)
		reap_cancelled(h);
	read_finished(h);
	now = now_ms();
	promote_retries(h, now);
	dispatch(h, now);
	deliver_done(h);
	if (h->closing && h->ncalls == 0)
		teardown(h);
	else if (!h->kicked)
		arm_wake(h);
}

/* ---- curl's callbacks: sockets and its timer -------------------------- */

static void drive(struct kubeapi_http *h, curl_socket_t fd, int events)
{
	int running;

	curl_multi_socket_action(h->multi, fd, events, &running);
	process(h);
}

static void on_curl_timeout(uv_timer_t *t)
{
	drive(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_timer(CURLM *m, long timeout_ms, void *userp)
{
	struct kubeapi_http *h = userp;

	(void)m;
	if (h->torn_down)
		return 0;
	if (timeout_ms < 0)
		uv_timer_stop(&h->curl_timer);
	else
		uv_timer_start(&h->curl_timer, on_curl_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct sock *s = CONTAINER_OF(p, struct sock, poll);
	int ev = 0;

	if (status < 0)
		ev = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		ev |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		ev |= CURL_CSELECT_OUT;
	drive(s->h, s->fd, ev);
}

static void free_engine(struct kubeapi_http *h);

static void on_handle_closed(struct kubeapi_http *h)
{
	if (--h->open_handles == 0 && h->torn_down)
		free_engine(h);
}

static void on_sock_closed(uv_handle_t *handle)
{
	struct sock *s = CONTAINER_OF(handle, struct sock, poll);
	struct kubeapi_http *h = s->h;

	free(s);
	on_handle_closed(h);
}

static struct sock *sock_open(struct kubeapi_http *h, curl_socket_t fd)
{
	struct sock *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (uv_poll_init_socket(h->loop, &s->poll, fd) < 0) {
		free(s);
		return NULL;
	}
	s->h = h;
	s->fd = fd;
	list_insert_after(&h->socks, &s->link);
	h->open_handles++;
	h->stats.sockets++;
	curl_multi_assign(h->multi, fd, s);
	return s;
}

/* uv_close stops the poll now, so curl may reuse the fd at once. */
static void sock_close(struct kubeapi_http *h, struct sock *s)
{
	list_remove(&s->link);
	h->stats.sockets--;
	uv_close((uv_handle_t *)&s->poll, on_sock_closed);
}

static int on_curl_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct kubeapi_http *h = userp;
	struct sock *s = socketp;
	int events = 0;

	(void)e;
	if (h->torn_down)
		return 0;
	if (what == CURL_POLL_REMOVE) {
		if (s)
			sock_close(h, s);
		return 0;
	}
	if (!s && !(s = sock_open(h, fd)))
		return -1;
	if (what & CURL_POLL_IN)
		events |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		events |= UV_WRITABLE;
	return uv_poll_start(&s->poll, events, on_poll) == 0 ? 0 : -1;
}

/* ---- Life cycle ------------------------------------------------------- */

/* "name:port:host:port" for CURLOPT_CONNECT_TO, and u's host set to name. */
static int connect_to_line(CURLU *u, const char *name, char **line)
{
	char *host = NULL, *port = NULL;
	int rc = -EINVAL;
	size_t n;

	if (curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) ||
	    curl_url_set(u, CURLUPART_HOST, name, 0))
		goto out;
	n = strlen(name) + strlen(host) + 2 * strlen(port) + 4;
	rc = -ENOMEM;
	*line = malloc(n);
	if (!*line)
		goto out;
	snprintf(*line, n, "%s:%s:%s:%s", name, port, host, port);
	rc = 0;
out:
	curl_free(port);
	curl_free(host);
	return rc;
}

/* With tls_server_name: call URLs name that host, so that curl sends it as
 * SNI and verifies the certificate for it (as client-go's ServerName
 * does), and CURLOPT_CONNECT_TO takes the connection to the real host. */
static int redirect_base(struct kubeapi_http *h)
{
	CURLU *u = curl_url();
	char *line = NULL, *url = NULL;
	int rc = -ENOMEM;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, h->conn->server, 0) != CURLUE_OK)
		rc = -EINVAL;
	else
		rc = connect_to_line(u, h->conn->tls_server_name, &line);
	if (rc == 0 && curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK)
		rc = -EINVAL;
	if (rc == 0) {
		h->base = strdup(url);
		h->connect_to = curl_slist_append(NULL, line);
		rc = h->base && h->connect_to ? 0 : -ENOMEM;
	}
	curl_free(url);
	free(line);
	curl_url_cleanup(u);
	return rc;
}

/* Sets h->base, and h->connect_to if needed: what call URLs start with.
 * On failure sets neither. */
static int resolve_base(struct kubeapi_http *h)
{
	size_t n;
	int rc;

	if (!h->conn->tls_server_name) {
		h->base = strdup(h->conn->server);
		return h->base ? 0 : -ENOMEM;
	}
	rc = redirect_base(h);
	if (rc < 0) {
		free(h->base);
		curl_slist_free_all(h->connect_to);
		h->base = NULL;
		h->connect_to = NULL;
		return rc;
	}
	/* curl writes an empty path as "/"; calls bring their own. */
	n = strlen(h->base);
	while (n > 0 && h->base[n - 1] == '/')
		h->base[--n] = '\0';
	return 0;
}

static int setup_multi(struct kubeapi_http *h)
{
	CURLM *m = h->multi;
	long streams = h->opt.max_inflight > 100 ? (long)h->opt.max_inflight : 100L;
	CURLMcode rc = CURLM_OK;

#define MSETOPT(opt, val) (rc == CURLM_OK ? (rc = curl_multi_setopt(m, opt, val)) : rc)
	MSETOPT(CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	MSETOPT(CURLMOPT_SOCKETDATA, (void *)h);
	MSETOPT(CURLMOPT_TIMERFUNCTION, on_curl_timer);
	MSETOPT(CURLMOPT_TIMERDATA, (void *)h);
	MSETOPT(CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	MSETOPT(CURLMOPT_MAX_CONCURRENT_STREAMS, streams);
#undef MSETOPT
	return rc == CURLM_OK ? 0 : -EINVAL;
}

int kubeapi_http_new(uv_loop_t *loop, struct kubeapi_conn *conn,
                     const struct kubeapi_http_options *opt, struct kubeapi_http **out)
{
	struct kubeapi_http *h;
	int rc;

	if (!loop || !conn || !conn->server || !out)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	rc = apply_options(&h->opt, opt);
	if (rc < 0)
		goto fail_options;
	h->conn = conn;
	rc = resolve_base(h);
	if (rc < 0)
		goto fail_options;
	rc = -ENOMEM;
	h->pool = calloc(h->opt.max_inflight, sizeof(*h->pool));
	if (!h->pool)
		goto fail_pool;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		goto fail_global;
	h->multi = curl_multi_init();
	if (!h->multi)
		goto fail_multi;
	rc = setup_multi(h);
	if (rc < 0)
		goto fail_setup;

	h->loop = loop;
	h->rng = uv_hrtime() ^ (uint64_t)(uintptr_t)h;
	kubeapi_http_bucket_init(&h->bucket, h->opt.write_qps, h->opt.write_burst, now_ms());
	list_init(&h->reads);
	list_init(&h->writes);
	list_init(&h->running);
	list_init(&h->retrying);
	list_init(&h->done);
	list_init(&h->socks);
	uv_timer_init(loop, &h->curl_timer);
	uv_timer_init(loop, &h->wake);
	h->curl_timer.data = h;
	h->wake.data = h;
	h->open_handles = 2;
	*out = h;
	return 0;

fail_setup:
	curl_multi_cleanup(h->multi);
fail_multi:
	curl_global_cleanup();
fail_global:
	free(h->pool);
fail_pool:
	free(h->base);
	curl_slist_free_all(h->connect_to);
fail_options:
	free(h);
	return rc;
}

static int check_request(const struct kubeapi_http *h, const struct kubeapi_request *req)
{
	if (!h || !req || !kubeapi_http_method_info(req->method) || !req->done_cb || !req->path ||
	    req->path[0] != '/' ||
	    strnlen(req->path, KUBEAPI_HTTP_MAX_PATH + 1) > KUBEAPI_HTTP_MAX_PATH ||
	    (req->body_len > 0 && !req->body) ||
	    ((req->flags & KUBEAPI_REQ_STREAM) && !req->chunk_cb) || req->timeout_ms > LONG_MAX)
		return -EINVAL;
	if (h->closing)
		return -ESHUTDOWN;
	if (req->body_len > h->opt.max_body)
		return -EMSGSIZE;
	return 0;
}

/* One allocation: the call, then "server" "path" NUL, then body NUL. */
static struct kubeapi_http_call *call_new(struct kubeapi_http *h, const struct kubeapi_request *req)
{
	size_t slen = strlen(h->base), plen = strlen(req->path);
	struct kubeapi_http_call *c = calloc(1, sizeof(*c) + slen + plen + 1 + req->body_len + 1);
	uint64_t deflt;

	if (!c)
		return NULL;
	c->h = h;
	c->method = req->method;
	c->flags = req->flags;
	c->seq = h->next_seq++;
	deflt = req->flags & KUBEAPI_REQ_STREAM ? h->opt.stream_idle_ms : h->opt.timeout_ms;
	c->timeout_ms = req->timeout_ms ? req->timeout_ms : deflt;
	c->chunk_cb = req->chunk_cb;
	c->done_cb = req->done_cb;
	c->data = req->data;
	c->url = (char *)(c + 1);
	memcpy(c->url, h->base, slen);
	memcpy(c->url + slen, req->path, plen + 1);
	c->body = c->url + slen + plen + 1;
	if (req->body_len)
		memcpy(c->body, req->body, req->body_len);
	c->body_len = req->body_len;
	list_init(&c->link);
	return c;
}

int kubeapi_http_submit(struct kubeapi_http *h, const struct kubeapi_request *req,
                        struct kubeapi_http_call **call)
{
	struct kubeapi_http_call *c;
	int rc = check_request(h, req);

	if (rc < 0)
		return rc;
	c = call_new(h, req);
	if (!c)
		return -ENOMEM;
	h->ncalls++;
	h->stats.submitted++;
	enqueue(h, c, 0);
	kick(h);
	if (call)
		*call = c;
	return 0;
}

void kubeapi_http_cancel(struct kubeapi_http_call *c)
{
	struct kubeapi_http *h;

	if (!c)
		return;
	h = c->h;
	switch (c->state) {
	case CALL_QUEUED:
	case CALL_RETRYING:
		dequeue(h, c);
		complete(c, -ECANCELED);
		kick(h);
		break;
	case CALL_RUNNING:
		if (!c->cancelled) {
			c->cancelled = 1;
			h->ncancel++;
			kick(h);
		}
		break;
	case CALL_DONE:
		break;
	}
}

void kubeapi_http_get_stats(const struct kubeapi_http *h, struct kubeapi_http_stats *out)
{
	*out = h->stats;
	out->easy_pooled = h->npool;
}

static void cancel_list(struct link *list)
{
	while (!list_empty(list))
		kubeapi_http_cancel(call_of(list->next));
}

void kubeapi_http_close(struct kubeapi_http **hp, void (*closed_cb)(void *), void *data)
{
	struct kubeapi_http *h = *hp;
	struct link *l;

	*hp = NULL;
	if (!h || h->closing)
		return;
	h->closing = 1;
	h->closed_cb = closed_cb;
	h->closed_data = data;
	cancel_list(&h->reads);
	cancel_list(&h->writes);
	cancel_list(&h->retrying);
	for (l = h->running.next; l != &h->running; l = l->next)
		kubeapi_http_cancel(call_of(l));
	kick(h);
}

static void on_timer_closed(uv_handle_t *t)
{
	on_handle_closed(t->data);
}

/* No calls are left: release curl, then the uv handles. */
static void teardown(struct kubeapi_http *h)
{
	h->torn_down = 1;
	while (!list_empty(&h->socks))
		sock_close(h, CONTAINER_OF(h->socks.next, struct sock, link));
	curl_multi_cleanup(h->multi); /* its socket callbacks are ignored now */
	h->multi = NULL;
	while (h->npool > 0)
		curl_easy_cleanup(h->pool[--h->npool]);
	uv_close((uv_handle_t *)&h->curl_timer, on_timer_closed);
	uv_close((uv_handle_t *)&h->wake, on_timer_closed);
}

static void free_engine(struct kubeapi_http *h)
{
	void (*cb)(void *) = h->closed_cb;
	void *data = h->closed_data;

	free(h->pool);
	free(h->base);
	curl_slist_free_all(h->connect_to);
	free(h);
	curl_global_cleanup();
	if (cb)
		cb(data);
}
