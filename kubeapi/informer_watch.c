/*
 * The informer's watch (see informer.h): the stream is split into lines in
 * a buffer of at most max_object + KUBEAPI__EVENT_ENVELOPE bytes; each line
 * is one event. A line over that is not buffered further: what it held
 * when it reached the cap (its head) names its type and object, the rest
 * is counted and dropped up to the newline. A line within the buffer whose
 * object is over max_object is skipped unparsed all the same.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeapi/informer_internal.h"

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
	kubeapi__inf_log(inf, "watch error event: %.200s",
	                 cJSON_IsString(msg) ? msg->valuestring : "(no message)");
}

static void advance_rv(struct kubeapi_informer *inf, const cJSON *obj)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	char rv[KUBEAPI__RV_MAX + 1];

	if (cJSON_IsObject(md) &&
	    kubeapi__inf_copy_string(md, "resourceVersion", rv, KUBEAPI__RV_MAX) == 0 && rv[0])
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
		kubeapi__inf_log(inf, "skipping a watch event that is not JSON (%zu bytes)", len);
		inf->stats.skipped++;
		return 0;
	}
	type = cJSON_GetObjectItemCaseSensitive(ev, "type");
	obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
	t = cJSON_IsString(type) ? type->valuestring : "";
	if (!cJSON_IsObject(obj)) {
		kubeapi__inf_log(inf, "skipping a watch event without an object (type \"%.32s\")",
		                 t);
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
		kubeapi__inf_log(inf, "skipping a watch event of unknown type \"%.32s\"", t);
		inf->stats.skipped++;
	}
	cJSON_Delete(ev);
	return rc;
}

/* ---- events too large ------------------------------------------------------------ */

/* The type and object of the event whose text (maybe cut short) is
 * p[0..len). */
static void event_head(const char *p, size_t len, char *type, size_t tcap,
                       struct kubeapi__object_id *id)
{
	struct kubeapi__span v;

	type[0] = '\0';
	memset(id, 0, sizeof(*id));
	if (kubeapi__jfind(p, len, 0, "type", &v) == 1)
		kubeapi__jstring(p, v, type, tcap);
	if (kubeapi__jfind(p, len, 0, "object", &v) == 1 || v.len > 0)
		kubeapi__object_id(p, v.off + v.len, v.off, id);
}

/* Skip an event of `size` bytes whose object is over max_object. The
 * watch moves past it: were it resumed from before, the server would send
 * it again. */
static void skip_event(struct kubeapi_informer *inf, const char *type,
                       const struct kubeapi__object_id *id, size_t size)
{
	bool change = !strcmp(type, "ADDED") || !strcmp(type, "MODIFIED");
	bool deleted = !strcmp(type, "DELETED");
	char where[48], why[128];

	snprintf(where, sizeof(where), "%s watch event", type[0] ? type : "a");
	snprintf(why, sizeof(why), "%zu bytes, over the %zu-byte object cap", size,
	         inf->opt.max_object);
	kubeapi__inf_too_large(inf, id, where, why, deleted);
	if ((change || deleted) && id->rv[0])
		memcpy(inf->rv, id->rv, sizeof(inf->rv));
}

/* A whole line: its object measured before it is parsed. Only a line
 * longer than max_object can hold an object over it, so only those are
 * skimmed: O(line) once more. */
static int watch_line(struct kubeapi_informer *inf, const char *line, size_t len)
{
	struct kubeapi__span obj;
	struct kubeapi__object_id id;
	char type[16];

	if (len > inf->opt.max_object && kubeapi__jfind(line, len, 0, "object", &obj) == 1 &&
	    obj.len > inf->opt.max_object) {
		event_head(line, len, type, sizeof(type), &id);
		skip_event(inf, type, &id, obj.len);
		return 0;
	}
	return watch_event(inf, line, len);
}

/* ---- the stream, split into lines ------------------------------------------------ */

/* Up to the line cap; past it, the line's head says what is skipped. */
static int line_append(struct kubeapi_informer *inf, const char *p, size_t n)
{
	struct buf *l = &inf->line;
	size_t room = l->max - l->len, take = n < room ? n : room;

	if (take > 0 && buf_append(l, p, take) < 0)
		return -ENOMEM; /* take fits the cap: only the allocation can fail */
	if (take == n)
		return 0;
	event_head(l->p, l->len, inf->skip_type, sizeof(inf->skip_type), &inf->skip_id);
	inf->skipping = true;
	inf->skip_len = l->len + (n - take);
	buf_reset(l);
	return 0;
}

/* A newline: the line is complete. */
static int line_end(struct kubeapi_informer *inf)
{
	int rc = 0;

	if (inf->skipping)
		skip_event(inf, inf->skip_type, &inf->skip_id, inf->skip_len);
	else if (inf->line.len)
		rc = watch_line(inf, inf->line.p, inf->line.len);
	inf->skipping = false;
	buf_reset(&inf->line);
	return rc;
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

		if (inf->skipping)
			inf->skip_len += n;
		else
			rc = line_append(inf, buf, n);
		if (rc < 0)
			return rc;
		buf += n;
		if (!nl)
			break;
		buf++; /* the newline */
		if ((rc = line_end(inf)) < 0)
			return rc;
	}
	return 0;
}

static void watch_done(void *data, const struct kubeapi_response *r)
{
	struct kubeapi_informer *inf = data;

	inf->call = NULL;
	buf_reset(&inf->line);
	inf->skipping = false; /* an event cut short comes again after the resume */
	if (inf->state == KUBEAPI__ST_CLOSING) {
		kubeapi__inf_maybe_free(inf);
		return;
	}
	if (inf->relist || r->status == 410) {
		if (r->status == 410 || !inf->relist_asked)
			kubeapi__inf_log(inf, "resourceVersion %s is gone; listing again", inf->rv);
		inf->relist = inf->relist_asked = false;
		if (r->status == 410)
			inf->stats.gone++;
		kubeapi__inf_begin_list(inf);
		return;
	}
	if (r->err == 0 && r->status == 200 && inf->got_chunk) {
		kubeapi__inf_start_watch(inf); /* the server's timeout: resume at once */
		return;
	}
	kubeapi__inf_log(inf, "watch ended: status %ld, %s; resuming from %s", r->status,
	                 r->err ? strerror(-r->err) : "", inf->rv);
	kubeapi__inf_retry_later(inf, kubeapi__inf_start_watch);
}

void kubeapi__inf_start_watch(struct kubeapi_informer *inf)
{
	char path[KUBEAPI_HTTP_MAX_PATH];
	int rc;

	if (inf->relist) { /* asked while listing or waiting */
		inf->relist = inf->relist_asked = false;
		kubeapi__inf_begin_list(inf);
		return;
	}
	snprintf(path, sizeof(path),
	         "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%u&resourceVersion=",
	         inf->kind->path, inf->opt.watch_timeout_s);
	kubeapi_query_append(path, sizeof(path), inf->rv);
	inf->state = KUBEAPI__ST_WATCH;
	inf->got_chunk = false;
	inf->stats.watches++;
	rc = kubeapi__inf_submit(inf, path, KUBEAPI_REQ_STREAM, watch_done, watch_chunk);
	if (rc < 0) {
		kubeapi__inf_log(inf, "cannot watch: %s", strerror(-rc));
		kubeapi__inf_retry_later(inf, kubeapi__inf_start_watch);
	}
}
