/*
 * The informer's state machine (see informer.h). One call in flight at a
 * time (a list page or the watch), one timer for backoffs. This file: the
 * lifetime, backoff and requests, and what is done with an object too
 * large to take; informer_list.c lists, informer_watch.c watches.
 */
#include "kubeapi/informer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeapi/informer_internal.h"

#define DEFAULT_MAX_OBJECT ((size_t)16 << 20)
#define DEFAULT_PAGE_BYTES ((size_t)16 << 20)

void kubeapi__inf_log(struct kubeapi_informer *inf, const char *fmt, ...)
{
	char msg[768];
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

void kubeapi__inf_maybe_free(struct kubeapi_informer *inf)
{
	if (inf->state != KUBEAPI__ST_CLOSING || inf->call || inf->timer_open)
		return;
	if (inf->closed_cb)
		inf->closed_cb(inf->closed_data);
	buf_free(&inf->line);
	free(inf);
}

static void timer_closed(uv_handle_t *h)
{
	struct kubeapi_informer *inf = h->data;

	inf->timer_open = false;
	kubeapi__inf_maybe_free(inf);
}

static void apply_defaults(struct kubeapi_informer *inf)
{
	struct kubeapi_informer_options *o = &inf->opt;

	o->page_size = o->page_size ? o->page_size : 500;
	o->watch_timeout_s = o->watch_timeout_s ? o->watch_timeout_s : 300;
	o->absent_retry_ms = o->absent_retry_ms ? o->absent_retry_ms : 30000;
	o->backoff_base_ms = o->backoff_base_ms ? o->backoff_base_ms : 250;
	o->backoff_cap_ms = o->backoff_cap_ms ? o->backoff_cap_ms : 8000;
	o->max_object = o->max_object ? o->max_object : DEFAULT_MAX_OBJECT;
	o->page_bytes = o->page_bytes ? o->page_bytes : DEFAULT_PAGE_BYTES;
	inf->max_body = kubeapi_http_max_body(inf->http);
	inf->page_bytes = o->page_bytes < inf->max_body / 4 ? o->page_bytes : inf->max_body / 4;
	if (inf->page_bytes == 0)
		inf->page_bytes = 1;
	inf->limit = o->page_size;
	inf->stats.limit = inf->limit;
	buf_init(&inf->line, o->max_object > SIZE_MAX - KUBEAPI__EVENT_ENVELOPE
	                         ? SIZE_MAX
	                         : o->max_object + KUBEAPI__EVENT_ENVELOPE);
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
	apply_defaults(inf);
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
	inf->state = KUBEAPI__ST_CLOSING;
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

void kubeapi_informer_relist(struct kubeapi_informer *inf)
{
	if (inf->state == KUBEAPI__ST_IDLE || inf->state == KUBEAPI__ST_CLOSING)
		return;
	inf->relist = inf->relist_asked = true;
	/* A watch ends now (watch_done lists); a list in progress or a wait
	 * lists again when it would have watched. */
	if (inf->state == KUBEAPI__ST_WATCH && inf->call)
		kubeapi_http_cancel(inf->call);
}

int kubeapi_informer_start(struct kubeapi_informer *inf)
{
	if (inf->state != KUBEAPI__ST_IDLE)
		return -EALREADY;
	kubeapi__inf_begin_list(inf);
	return 0;
}

/* ---- backoff and requests ------------------------------------------------------ */

static void timer_fired(uv_timer_t *t)
{
	struct kubeapi_informer *inf = t->data;

	if (inf->state == KUBEAPI__ST_WAIT)
		inf->next(inf);
}

void kubeapi__inf_later(struct kubeapi_informer *inf, uint64_t ms,
                        void (*next)(struct kubeapi_informer *))
{
	inf->state = KUBEAPI__ST_WAIT;
	inf->next = next;
	uv_timer_start(&inf->timer, timer_fired, ms, 0);
}

/* After a failure: full-jitter backoff growing with failures in a row. */
void kubeapi__inf_retry_later(struct kubeapi_informer *inf, void (*next)(struct kubeapi_informer *))
{
	uint64_t ms;

	inf->rng ^= inf->rng << 13;
	inf->rng ^= inf->rng >> 7;
	inf->rng ^= inf->rng << 17;
	ms = kubeapi_http_backoff_ms(++inf->failures, inf->opt.backoff_base_ms,
	                             inf->opt.backoff_cap_ms, inf->rng);

	inf->stats.failures++;
	kubeapi__inf_later(inf, ms, next);
}

int kubeapi__inf_submit(struct kubeapi_informer *inf, const char *path, unsigned flags,
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

int kubeapi__inf_copy_string(const cJSON *o, const char *key, char *out, size_t cap)
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

/* ---- objects too large to take ------------------------------------------------- */

void kubeapi__object_id(const char *p, size_t len, size_t off, struct kubeapi__object_id *id)
{
	struct kubeapi__jiter it;
	struct kubeapi__span md, key, val;

	memset(id, 0, sizeof(*id));
	if (kubeapi__jfind(p, len, off, "metadata", &md) != 1 && md.len == 0)
		return;
	if (kubeapi__jiter_init(&it, p, md.off + md.len, md.off) < 0 || it.close != '}')
		return;
	while (kubeapi__jiter_next(&it, &key, &val) == 1) {
		const char *k = p + key.off;

		if (key.len == 4 && !memcmp(k, "name", 4))
			kubeapi__jstring(p, val, id->name, sizeof(id->name));
		else if (key.len == 9 && !memcmp(k, "namespace", 9))
			kubeapi__jstring(p, val, id->ns, sizeof(id->ns));
		else if (key.len == 15 && !memcmp(k, "resourceVersion", 15))
			kubeapi__jstring(p, val, id->rv, sizeof(id->rv));
	}
}

/* {"metadata":{"namespace":ns,"name":name}}, or NULL (no name, no memory). */
static cJSON *stub_object(const struct kubeapi__object_id *id)
{
	cJSON *o, *md;

	if (!id->name[0] || !(o = cJSON_CreateObject()))
		return NULL;
	md = cJSON_AddObjectToObject(o, "metadata");
	if (!md || (id->ns[0] && !cJSON_AddStringToObject(md, "namespace", id->ns)) ||
	    !cJSON_AddStringToObject(md, "name", id->name)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

void kubeapi__inf_too_large(struct kubeapi_informer *inf, const struct kubeapi__object_id *id,
                            const char *where, const char *why, bool deleted)
{
	cJSON *stub = stub_object(id);

	inf->stats.too_large++;
	kubeapi__inf_log(inf, "skipping %s%s%s (%s): %s; %s", id->ns, id->ns[0] ? "/" : "",
	                 id->name[0] ? id->name : "(name not read)", where, why,
	                 deleted
	                     ? "removed from the cache all the same"
	                     : "left out of the cache (or kept as last seen) until it is smaller");
	if (stub && deleted)
		inf->ops.remove(inf->data, stub);
	else if (stub && inf->ops.keep)
		inf->ops.keep(inf->data, stub);
	cJSON_Delete(stub);
}
