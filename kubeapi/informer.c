/*
 * The informer's state machine (see informer.h). One call in flight at a
 * time (a list page or the watch), one timer for backoffs. Watch bytes are
 * split into lines in a buffer capped at max_event; each line is one event.
 */
#include "kubeapi/informer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RV_MAX       64
#define CONTINUE_MAX 4096

enum state { ST_IDLE, ST_LIST, ST_WATCH, ST_WAIT, ST_CLOSING };

struct kubeapi_informer {
	uv_loop_t *loop;
	struct kubeapi_http *http;
	const struct kubeapi_kind *kind;
	struct kubeapi_informer_options opt;
	struct kubeapi_informer_ops ops;
	void *data;

	enum state state;
	struct kubeapi_http_call *call; /* in flight, or NULL */
	uv_timer_t timer;
	bool timer_open;
	void (*next)(struct kubeapi_informer *); /* what the timer starts */
	unsigned failures;                       /* in a row, for backoff */
	uint64_t rng;                            /* xorshift state for jitter */
	bool got_chunk;                          /* the current watch sent data */

	char rv[RV_MAX + 1];
	char cont[CONTINUE_MAX + 1]; /* list continue token */
	bool relist;                 /* the watch saw 410, or a relist was asked: list again */
	bool relist_asked;           /* kubeapi_informer_relist(): no "gone" line */

	char *line; /* partial watch event */
	size_t line_len, line_cap;
	bool skipping; /* dropping an oversized event up to its newline */

	struct kubeapi_informer_stats stats;
	void (*closed_cb)(void *);
	void *closed_data;
};

static void start_list(struct kubeapi_informer *inf);
static void start_watch(struct kubeapi_informer *inf);

static void logf_(struct kubeapi_informer *inf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void logf_(struct kubeapi_informer *inf, const char *fmt, ...)
{
	char msg[512];
	int n;
	va_list ap;

	if (!inf->ops.log)
		return;
	n = snprintf(msg, sizeof(msg), "informer %s: ", inf->kind->name);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	inf->ops.log(inf->data, msg);
}

/* ---- lifetime ------------------------------------------------------------------ */

static void maybe_free(struct kubeapi_informer *inf)
{
	if (inf->state != ST_CLOSING || inf->call || inf->timer_open)
		return;
	if (inf->closed_cb)
		inf->closed_cb(inf->closed_data);
	free(inf->line);
	free(inf);
}

static void timer_closed(uv_handle_t *h)
{
	struct kubeapi_informer *inf = h->data;

	inf->timer_open = false;
	maybe_free(inf);
}

int kubeapi_informer_new(uv_loop_t *loop, struct kubeapi_http *http,
                         const struct kubeapi_kind *kind,
                         const struct kubeapi_informer_options *opt,
                         const struct kubeapi_informer_ops *ops, void *data,
                         struct kubeapi_informer **out)
{
	struct kubeapi_informer *inf;

	if (!loop || !http || !kind || !kind->path || !ops || !ops->upsert || !ops->remove)
		return -EINVAL;
	inf = calloc(1, sizeof(*inf));
	if (!inf)
		return -ENOMEM;
	inf->loop = loop;
	inf->http = http;
	inf->kind = kind;
	inf->ops = *ops;
	inf->data = data;
	if (opt)
		inf->opt = *opt;
	inf->opt.page_size = inf->opt.page_size ? inf->opt.page_size : 500;
	inf->opt.watch_timeout_s = inf->opt.watch_timeout_s ? inf->opt.watch_timeout_s : 300;
	inf->opt.absent_retry_ms = inf->opt.absent_retry_ms ? inf->opt.absent_retry_ms : 30000;
	inf->opt.backoff_base_ms = inf->opt.backoff_base_ms ? inf->opt.backoff_base_ms : 250;
	inf->opt.backoff_cap_ms = inf->opt.backoff_cap_ms ? inf->opt.backoff_cap_ms : 8000;
	inf->opt.max_event = inf->opt.max_event ? inf->opt.max_event : (size_t)16 << 20;
	inf->rng = uv_hrtime() ^ (uint64_t)(uintptr_t)inf ^ 0x9e3779b97f4a7c15ULL;
	uv_timer_init(loop, &inf->timer);
	inf->timer.data = inf;
	inf->timer_open = true;
	*out = inf;
	return 0;
}

void kubeapi_informer_close(struct kubeapi_informer **ip, void (*closed_cb)(void *), void *data)
{
	struct kubeapi_informer *inf = ip ? *ip : NULL;

	if (!inf)
		return;
	*ip = NULL;
	inf->state = ST_CLOSING;
	inf->closed_cb = closed_cb;
	inf->closed_data = data;
	if (inf->call)
		kubeapi_http_cancel(inf->call);
	uv_close((uv_handle_t *)&inf->timer, timer_closed);
}

const char *kubeapi_informer_rv(const struct kubeapi_informer *inf)
{
	return inf->rv;
}

void kubeapi_informer_get_stats(const struct kubeapi_informer *inf,
                                struct kubeapi_informer_stats *out)
{
	*out = inf->stats;
}

/* ---- backoff ---------------------------------------------------------------------- */

static void timer_fired(uv_timer_t *t)
{
	struct kubeapi_informer *inf = t->data;

	if (inf->state == ST_WAIT)
		inf->next(inf);
}

static void later(struct kubeapi_informer *inf, uint64_t ms,
                  void (*next)(struct kubeapi_informer *))
{
	inf->state = ST_WAIT;
	inf->next = next;
	uv_timer_start(&inf->timer, timer_fired, ms, 0);
}

/* After a failure: full-jitter backoff growing with failures in a row. */
static void retry_later(struct kubeapi_informer *inf, void (*next)(struct kubeapi_informer *))
{
	uint64_t ms;

	inf->rng ^= inf->rng << 13;
	inf->rng ^= inf->rng >> 7;
	inf->rng ^= inf->rng << 17;
	ms = kubeapi_http_backoff_ms(++inf->failures, inf->opt.backoff_base_ms,
	                             inf->opt.backoff_cap_ms, inf->rng);

	inf->stats.failures++;
	later(inf, ms, next);
}

static int submit(struct kubeapi_informer *inf, const char *path, unsigned flags,
                  kubeapi_http_done_cb done, kubeapi_http_chunk_cb chunk)
{
	struct kubeapi_request req = {
	    .method = KUBEAPI_GET,
	    .path = path,
	    .flags = flags,
	    .done_cb = done,
	    .chunk_cb = chunk,
	    .data = inf,
	};

	return kubeapi_http_submit(inf->http, &req, &inf->call);
}

/* ---- list -------------------------------------------------------------------------- */

static int copy_string(const cJSON *o, const char *key, char *out, size_t cap)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, key);

	out[0] = '\0';
	if (!f || cJSON_IsNull(f))
		return 0;
	if (!cJSON_IsString(f) || strlen(f->valuestring) > cap)
		return -EINVAL;
	memcpy(out, f->valuestring, strlen(f->valuestring) + 1);
	return 0;
}

/* One page: hand the items over, remember continue and resourceVersion. */
static int list_page(struct kubeapi_informer *inf, const char *body, size_t len)
{
	cJSON *doc = cJSON_ParseWithLength(body, len);
	const cJSON *md, *items, *it;
	char rv[RV_MAX + 1];
	int rc = -EINVAL;

	if (!doc)
		return -EINVAL;
	md = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
	items = cJSON_GetObjectItemCaseSensitive(doc, "items");
	if (!cJSON_IsObject(md) || !(cJSON_IsArray(items) || cJSON_IsNull(items)) ||
	    copy_string(md, "continue", inf->cont, CONTINUE_MAX) < 0 ||
	    copy_string(md, "resourceVersion", rv, RV_MAX) < 0)
		goto out;
	cJSON_ArrayForEach(it, items) inf->ops.upsert(inf->data, it);
	if (!inf->cont[0])
		memcpy(inf->rv, rv, sizeof(rv));
	rc = 0;
out:
	cJSON_Delete(doc);
	return rc;
}

static void list_done(void *data, const struct kubeapi_response *r)
{
	struct kubeapi_informer *inf = data;

	inf->call = NULL;
	if (inf->state == ST_CLOSING) {
		maybe_free(inf);
		return;
	}
	if (r->err || r->status != 200) {
		if (r->status == 404 && inf->kind->optional) {
			if (!inf->stats.absent)
				logf_(inf,
				      "not served (CRD not installed?); looking again every %llus",
				      (unsigned long long)inf->opt.absent_retry_ms / 1000);
			inf->stats.absent = true;
			inf->cont[0] = '\0';
			later(inf, inf->opt.absent_retry_ms, start_list);
			return;
		}
		logf_(inf, "list failed: status %ld, %s", r->status,
		      r->err ? strerror(-r->err) : "");
		inf->cont[0] = '\0'; /* 410 for an expired continue token lands here too */
		retry_later(inf, start_list);
		return;
	}
	inf->stats.absent = false;
	inf->stats.pages++;
	if (list_page(inf, r->body, r->len) < 0) {
		logf_(inf, "list page is not a valid list; listing again");
		inf->cont[0] = '\0';
		retry_later(inf, start_list);
		return;
	}
	if (inf->cont[0]) {
		start_list(inf);
		return;
	}
	if (inf->ops.sync_end)
		inf->ops.sync_end(inf->data);
	inf->stats.synced = true;
	inf->failures = 0;
	start_watch(inf);
}

/* Query strings carry tokens from the server: escape what is not safe. */
static void append_escaped(char *dst, size_t cap, const char *s)
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

static void start_list(struct kubeapi_informer *inf)
{
	char path[KUBEAPI_HTTP_MAX_PATH];
	int rc;

	if (!inf->cont[0]) {
		inf->stats.lists++;
		if (inf->ops.sync_begin)
			inf->ops.sync_begin(inf->data);
	}
	snprintf(path, sizeof(path), "%s?limit=%u%s", inf->kind->path, inf->opt.page_size,
	         inf->cont[0] ? "&continue=" : "");
	if (inf->cont[0])
		append_escaped(path, sizeof(path), inf->cont);
	inf->state = ST_LIST;
	rc = submit(inf, path, KUBEAPI_REQ_RETRY, list_done, NULL);
	if (rc < 0) {
		logf_(inf, "cannot list: %s", strerror(-rc));
		inf->cont[0] = '\0';
		retry_later(inf, start_list);
	}
}

/* ---- watch ------------------------------------------------------------------------- */

/* The Status of an ERROR event: 410 means our RV is too old. */
static void watch_error(struct kubeapi_informer *inf, const cJSON *obj)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(obj, "message");

	if (cJSON_IsNumber(code) && code->valuedouble == 410) {
		inf->relist = true;
		inf->stats.gone++;
		return;
	}
	logf_(inf, "watch error event: %.200s",
	      cJSON_IsString(msg) ? msg->valuestring : "(no message)");
}

static void advance_rv(struct kubeapi_informer *inf, const cJSON *obj)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	char rv[RV_MAX + 1];

	if (cJSON_IsObject(md) && copy_string(md, "resourceVersion", rv, RV_MAX) == 0 && rv[0])
		memcpy(inf->rv, rv, sizeof(rv));
}

/* One event line. Returns < 0 to end the watch (then relist if flagged). */
static int watch_event(struct kubeapi_informer *inf, const char *line, size_t len)
{
	cJSON *ev = cJSON_ParseWithLength(line, len);
	const cJSON *type, *obj;
	const char *t;
	int rc = 0;

	if (!ev) {
		logf_(inf, "skipping a watch event that is not JSON (%zu bytes)", len);
		inf->stats.skipped++;
		return 0;
	}
	type = cJSON_GetObjectItemCaseSensitive(ev, "type");
	obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
	t = cJSON_IsString(type) ? type->valuestring : "";
	if (!cJSON_IsObject(obj)) {
		logf_(inf, "skipping a watch event without an object (type \"%.32s\")", t);
		inf->stats.skipped++;
	} else if (!strcmp(t, "ADDED") || !strcmp(t, "MODIFIED")) {
		inf->stats.events++;
		inf->ops.upsert(inf->data, obj);
		advance_rv(inf, obj);
	} else if (!strcmp(t, "DELETED")) {
		inf->stats.events++;
		inf->ops.remove(inf->data, obj);
		advance_rv(inf, obj);
	} else if (!strcmp(t, "BOOKMARK")) {
		inf->stats.bookmarks++;
		advance_rv(inf, obj);
	} else if (!strcmp(t, "ERROR")) {
		watch_error(inf, obj);
		rc = -ESTALE;
	} else {
		logf_(inf, "skipping a watch event of unknown type \"%.32s\"", t);
		inf->stats.skipped++;
	}
	cJSON_Delete(ev);
	return rc;
}

static int line_append(struct kubeapi_informer *inf, const char *p, size_t n)
{
	if (inf->line_len + n > inf->opt.max_event) {
		logf_(inf, "skipping a watch event over %zu bytes", inf->opt.max_event);
		inf->stats.skipped++;
		inf->skipping = true;
		inf->line_len = 0;
		return 0;
	}
	if (inf->line_len + n > inf->line_cap) {
		size_t cap = inf->line_cap ? inf->line_cap : 4096;
		char *b;

		while (cap < inf->line_len + n)
			cap *= 2;
		b = realloc(inf->line, cap);
		if (!b)
			return -ENOMEM;
		inf->line = b;
		inf->line_cap = cap;
	}
	memcpy(inf->line + inf->line_len, p, n);
	inf->line_len += n;
	return 0;
}

/* Bytes of the stream: split at newlines; a line split across chunks is
 * kept in inf->line. */
static int watch_chunk(void *data, const char *buf, size_t len)
{
	struct kubeapi_informer *inf = data;
	const char *end = buf + len;

	inf->failures = 0; /* the watch is up */
	inf->got_chunk = true;
	while (buf < end) {
		const char *nl = memchr(buf, '\n', (size_t)(end - buf));
		size_t n = (size_t)((nl ? nl : end) - buf);
		int rc = 0;

		if (!inf->skipping)
			rc = line_append(inf, buf, n);
		if (rc < 0)
			return rc;
		buf += n;
		if (!nl)
			break;
		buf++; /* the newline */
		if (!inf->skipping && inf->line_len)
			rc = watch_event(inf, inf->line, inf->line_len);
		inf->skipping = false;
		inf->line_len = 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void watch_done(void *data, const struct kubeapi_response *r)
{
	struct kubeapi_informer *inf = data;

	inf->call = NULL;
	inf->line_len = 0;
	inf->skipping = false;
	if (inf->state == ST_CLOSING) {
		maybe_free(inf);
		return;
	}
	if (inf->relist || r->status == 410) {
		if (r->status == 410 || !inf->relist_asked)
			logf_(inf, "resourceVersion %s is gone; listing again", inf->rv);
		inf->relist_asked = false;
		inf->relist = false;
		inf->cont[0] = '\0';
		if (r->status == 410)
			inf->stats.gone++;
		start_list(inf);
		return;
	}
	if (r->err == 0 && r->status == 200 && inf->got_chunk) {
		start_watch(inf); /* the server's timeout: resume at once */
		return;
	}
	logf_(inf, "watch ended: status %ld, %s; resuming from %s", r->status,
	      r->err ? strerror(-r->err) : "", inf->rv);
	retry_later(inf, start_watch);
}

static void start_watch(struct kubeapi_informer *inf)
{
	char path[KUBEAPI_HTTP_MAX_PATH];
	int rc;

	if (inf->relist) { /* asked while listing or waiting */
		inf->relist = inf->relist_asked = false;
		inf->cont[0] = '\0';
		start_list(inf);
		return;
	}
	snprintf(path, sizeof(path),
	         "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%u&resourceVersion=",
	         inf->kind->path, inf->opt.watch_timeout_s);
	append_escaped(path, sizeof(path), inf->rv);
	inf->state = ST_WATCH;
	inf->got_chunk = false;
	inf->stats.watches++;
	rc = submit(inf, path, KUBEAPI_REQ_STREAM, watch_done, watch_chunk);
	if (rc < 0) {
		logf_(inf, "cannot watch: %s", strerror(-rc));
		retry_later(inf, start_watch);
	}
}

void kubeapi_informer_relist(struct kubeapi_informer *inf)
{
	if (inf->state == ST_IDLE || inf->state == ST_CLOSING)
		return;
	inf->relist = inf->relist_asked = true;
	/* A watch ends now (watch_done lists); a list in progress or a wait
	 * lists again when it would have watched. */
	if (inf->state == ST_WATCH && inf->call)
		kubeapi_http_cancel(inf->call);
}

int kubeapi_informer_start(struct kubeapi_informer *inf)
{
	if (inf->state != ST_IDLE)
		return -EALREADY;
	start_list(inf);
	return 0;
}
