/*
 * The HTTP engine (kubeapi/http.h): libcurl's multi socket interface on a
 * libuv loop.
 *
 * Wiring (http_sock.c). curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION:
 * one uv_poll_t each, found again through curl_multi_assign) and when to
 * call it back (CURLMOPT_TIMERFUNCTION: one uv_timer_t); both end in
 * curl_multi_socket_action(). Neither callback ever calls back into curl.
 *
 * Calls (http_run.c). Each call sits on exactly one list of the engine, by state:
 *
 *   submit -> urgent | reads | writes | background (QUEUED, FIFO)
 *          -> running (RUNNING, in curl)
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
 *
 * Files. http.c (this file): options, the base URL, the life cycle and
 * the public entry points. http_run.c: the queues, slots, attempts,
 * retries and process(). http_easy.c: easy handles, their options and
 * curl's body and header callbacks. http_sock.c: the curl <-> uv glue
 * (sockets, curl's timer) and teardown(). Shared state lives in
 * http_internal.h, where the shared functions are named kubeapi__http_*
 * (process() is kubeapi__http_process()); the pure policy (backoff,
 * Retry-After, the token bucket, the method table) is in http_policy.c.
 *
 * Cost. submit makes one allocation (the call, its URL and a copy of the
 * body) and cancel is O(1): both only move a call between lists and kick.
 * close is O(calls). An engine holds an array of max_inflight pointers
 * for its pool of idle easy handles.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <uv.h>

#include "kubeapi/http.h"
#include "kubeapi/http_internal.h"

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
	DEFAULT(streams_per_conn, o->max_inflight > KUBEAPI_HTTP_DEFAULT_STREAMS
	                              ? o->max_inflight
	                              : KUBEAPI_HTTP_DEFAULT_STREAMS);
	DEFAULT(write_qps, KUBEAPI_HTTP_DEFAULT_WRITE_QPS);
	DEFAULT(write_burst, KUBEAPI_HTTP_DEFAULT_WRITE_BURST);
	DEFAULT(timeout_ms, KUBEAPI_HTTP_DEFAULT_TIMEOUT_MS);
	DEFAULT(max_retries, KUBEAPI_HTTP_DEFAULT_MAX_RETRIES);
	DEFAULT(max_body, KUBEAPI_HTTP_DEFAULT_MAX_BODY);
	DEFAULT(backoff_base_ms, KUBEAPI_HTTP_DEFAULT_BACKOFF_BASE_MS);
	DEFAULT(backoff_cap_ms, KUBEAPI_HTTP_DEFAULT_BACKOFF_CAP_MS);
	DEFAULT(stream_idle_ms, KUBEAPI_HTTP_DEFAULT_STREAM_IDLE_MS);
	DEFAULT(max_background, KUBEAPI_HTTP_DEFAULT_MAX_BACKGROUND);
	DEFAULT(max_background_queued, KUBEAPI_HTTP_DEFAULT_MAX_BG_QUEUED);
	/* curl takes times as long; uv timers would take them as uint64_t. */
	if (isnan(o->write_qps) || o->max_inflight > 65536 || o->streams_per_conn > 65536 ||
	    o->max_body > SIZE_MAX / 2 || o->timeout_ms > LONG_MAX ||
	    o->stream_idle_ms > LONG_MAX || o->backoff_cap_ms > LONG_MAX ||
	    o->backoff_base_ms > o->backoff_cap_ms)
		return -EINVAL;
	return 0;
}

#undef DEFAULT

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
	snprintf(h->user_agent, sizeof(h->user_agent), "%s",
	         h->opt.user_agent && *h->opt.user_agent ? h->opt.user_agent : "muster");
	h->opt.user_agent = h->user_agent;
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
	rc = kubeapi__http_setup_multi(h);
	if (rc < 0)
		goto fail_setup;

	h->loop = loop;
	h->rng = uv_hrtime() ^ (uint64_t)(uintptr_t)h;
	kubeapi_http_bucket_init(&h->bucket, h->opt.write_qps, h->opt.write_burst,
	                         kubeapi__http_now_ms());
	kubeapi__list_init(&h->urgent);
	kubeapi__list_init(&h->reads);
	kubeapi__list_init(&h->writes);
	kubeapi__list_init(&h->background);
	kubeapi__list_init(&h->running);
	kubeapi__list_init(&h->retrying);
	kubeapi__list_init(&h->done);
	kubeapi__list_init(&h->socks);
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
	    ((req->flags & KUBEAPI_REQ_STREAM) && !req->chunk_cb) || req->timeout_ms > LONG_MAX ||
	    ((req->flags & KUBEAPI_REQ_URGENT) && (req->flags & KUBEAPI_REQ_BACKGROUND)))
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
	buf_init(&c->resp, h->opt.max_body);
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
	kubeapi__list_init(&c->link);
	return c;
}

int kubeapi_http_submit(struct kubeapi_http *h, const struct kubeapi_request *req,
                        struct kubeapi_http_call **call)
{
	struct kubeapi_http_call *c;
	int rc = check_request(h, req);

	if (rc < 0)
		return rc;
	if (h->fenced && kubeapi_http_method_info(req->method)->write)
		return -EPERM;
	if ((req->flags & KUBEAPI_REQ_BACKGROUND) &&
	    h->stats.background_queued >= h->opt.max_background_queued)
		return -ENOBUFS;
	c = call_new(h, req);
	if (!c)
		return -ENOMEM;
	h->ncalls++;
	h->stats.submitted++;
	kubeapi__http_enqueue(h, c, 0);
	kubeapi__http_kick(h);
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
	case KUBEAPI__CALL_QUEUED:
	case KUBEAPI__CALL_RETRYING:
		kubeapi__http_dequeue(h, c);
		kubeapi__http_complete(c, -ECANCELED);
		kubeapi__http_kick(h);
		break;
	case KUBEAPI__CALL_RUNNING:
		if (!c->cancelled) {
			c->cancelled = 1;
			h->ncancel++;
			kubeapi__http_kick(h);
		}
		break;
	case KUBEAPI__CALL_DONE:
		break;
	}
}

bool kubeapi_http_background_full(const struct kubeapi_http *h)
{
	return h->stats.background_queued >= h->opt.max_background_queued;
}

size_t kubeapi_http_max_body(const struct kubeapi_http *h)
{
	return h->opt.max_body;
}

void kubeapi_http_get_stats(const struct kubeapi_http *h, struct kubeapi_http_stats *out)
{
	*out = h->stats;
	out->easy_pooled = h->npool;
}

static void cancel_list(struct kubeapi__link *list)
{
	while (!kubeapi__list_empty(list))
		kubeapi_http_cancel(kubeapi__http_call_of(list->next));
}

/* Cancel the writes on list l. A cancel moves a queued call to the done
 * list (and marks a running one), so the walk takes the next link first. */
static void cancel_writes(struct kubeapi__link *l)
{
	struct kubeapi__link *p, *next;

	for (p = l->next; p != l; p = next) {
		struct kubeapi_http_call *c = kubeapi__http_call_of(p);

		next = p->next;
		if (kubeapi_http_method_info(c->method)->write)
			kubeapi_http_cancel(c);
	}
}

void kubeapi_http_fence(struct kubeapi_http *h)
{
	if (!h || h->fenced)
		return;
	h->fenced = 1;
	cancel_writes(&h->urgent);
	cancel_writes(&h->writes);
	cancel_writes(&h->background);
	cancel_writes(&h->retrying);
	cancel_writes(&h->running);
}

void kubeapi_http_close(struct kubeapi_http **hp, void (*closed_cb)(void *), void *data)
{
	struct kubeapi_http *h = *hp;
	struct kubeapi__link *l;

	*hp = NULL;
	if (!h || h->closing)
		return;
	h->closing = 1;
	h->closed_cb = closed_cb;
	h->closed_data = data;
	cancel_list(&h->urgent);
	cancel_list(&h->reads);
	cancel_list(&h->writes);
	cancel_list(&h->background);
	cancel_list(&h->retrying);
	for (l = h->running.next; l != &h->running; l = l->next)
		kubeapi_http_cancel(kubeapi__http_call_of(l));
	kubeapi__http_kick(h);
}

void kubeapi__http_free_engine(struct kubeapi_http *h)
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

void kubeapi_query_append(char *dst, size_t cap, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(dst);

	for (; *s && n + 4 < cap; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			dst[n++] = (char)c;
		} else {
			dst[n++] = '%';
			dst[n++] = hex[c >> 4];
			dst[n++] = hex[c & 15];
		}
	}
	dst[n] = '\0';
}
