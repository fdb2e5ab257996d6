/*
 * The informer's list (see informer.h): pages of `limit` objects, sized by
 * bytes, and what is done with a page over the engine's body cap.
 *
 * A page is skimmed (jscan.h) for its metadata and the span of each item,
 * then parsed item by item: an item over max_object is skipped unparsed,
 * and at most one item is a cJSON tree at a time. Two passes over the
 * page (one skips "items" whole to reach the end of the envelope, one
 * walks the items), then cJSON over what is kept.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kubeapi/informer_internal.h"

static void request_page(struct kubeapi_informer *inf);

/* ---- page size ------------------------------------------------------------------ */

unsigned kubeapi__page_limit(unsigned limit, unsigned page_size, size_t target, size_t items,
                             size_t bytes)
{
	uint64_t n = (uint64_t)limit * 2, mean;

	if (n > page_size)
		n = page_size;
	if (items > 0 && (mean = bytes / items) > 0 && target / mean < n)
		n = target / mean;
	return n ? (unsigned)n : 1;
}

unsigned kubeapi__page_limit_over(unsigned limit, size_t target, size_t complete, size_t got)
{
	uint64_t n = limit / 2, mean;

	if (got > 0 && complete == 0)
		return 1; /* the first object alone is over the cap */
	if (complete > 0 && (mean = got / complete) > 0 && target / mean < n)
		n = target / mean;
	return n ? (unsigned)n : 1;
}

/* ---- reading a page --------------------------------------------------------------- */

static bool key_is(const char *p, struct kubeapi__span k, const char *name)
{
	return k.len == strlen(name) && memcmp(p + k.off, name, k.len) == 0;
}

/* The envelope of a List: *md, the metadata object, and *items at the
 * items array (*has_items false when null or absent). Works on a page cut
 * short as long as metadata came whole before it ended. 0, -EINVAL,
 * -EAGAIN (cut short before metadata). */
static int page_open(const char *p, size_t len, struct kubeapi__span *md,
                     struct kubeapi__jiter *items, bool *has_items)
{
	struct kubeapi__jiter top;
	struct kubeapi__span key, val;
	bool have_md = false;
	int rc;

	*has_items = false;
	if (kubeapi__jiter_init(&top, p, len, 0) < 0 || top.close != '}')
		return -EINVAL;
	do {
		rc = kubeapi__jiter_next(&top, &key, &val);
		if (rc == 1 && key_is(p, key, "metadata")) {
			*md = val;
			have_md = true;
		} else if (rc != 0 && rc != -EINVAL && val.len > 0 && key_is(p, key, "items") &&
		           p[val.off] != 'n') {
			if (kubeapi__jiter_init(items, p, len, val.off) < 0 || items->close != ']')
				return -EINVAL;
			*has_items = true;
		}
	} while (rc == 1 && !(have_md && *has_items));
	if (have_md)
		return 0;
	return rc == -EAGAIN ? -EAGAIN : -EINVAL;
}

/* metadata.continue into inf->cont, metadata.resourceVersion into rv. */
static int read_meta(struct kubeapi_informer *inf, const char *p, struct kubeapi__span md, char *rv)
{
	cJSON *o = cJSON_ParseWithLength(p + md.off, md.len);
	int rc = -EINVAL;

	if (cJSON_IsObject(o) &&
	    kubeapi__inf_copy_string(o, "continue", inf->cont, KUBEAPI__CONTINUE_MAX) == 0 &&
	    kubeapi__inf_copy_string(o, "resourceVersion", rv, KUBEAPI__RV_MAX) == 0)
		rc = 0;
	cJSON_Delete(o);
	return rc;
}

/* One item, whole: skipped when over max_object, else parsed and upserted. */
static void list_item(struct kubeapi_informer *inf, const char *p, struct kubeapi__span it)
{
	struct kubeapi__object_id id;
	char why[128];
	cJSON *obj;

	if (it.len > inf->opt.max_object) {
		kubeapi__object_id(p, it.off + it.len, it.off, &id);
		snprintf(why, sizeof(why), "%zu bytes, over the %zu-byte object cap", it.len,
		         inf->opt.max_object);
		kubeapi__inf_too_large(inf, &id, "list page", why, false);
		return;
	}
	obj = cJSON_ParseWithLength(p + it.off, it.len);
	if (cJSON_IsObject(obj)) {
		inf->ops.upsert(inf->data, obj);
	} else {
		kubeapi__inf_log(inf, "skipping a list item that is not a JSON object (%zu bytes)",
		                 it.len);
		inf->stats.skipped++;
	}
	cJSON_Delete(obj);
}

/* A whole page: its items to upsert(), the continue token, the size of
 * the next page; the list's resourceVersion on the last page. */
static int list_page(struct kubeapi_informer *inf, const char *p, size_t len)
{
	struct kubeapi__jiter items;
	struct kubeapi__span md, it;
	char rv[KUBEAPI__RV_MAX + 1];
	bool has_items;
	size_t n = 0;
	int rc = 0;

	if (page_open(p, len, &md, &items, &has_items) < 0 || read_meta(inf, p, md, rv) < 0)
		return -EINVAL;
	while (has_items && (rc = kubeapi__jiter_next(&items, NULL, &it)) == 1) {
		list_item(inf, p, it);
		n++;
	}
	if (has_items && rc != 0)
		return -EINVAL;
	inf->limit = kubeapi__page_limit(inf->limit, inf->opt.page_size, inf->page_bytes, n, len);
	if (!inf->cont[0])
		memcpy(inf->rv, rv, sizeof(rv));
	return 0;
}

/* A page was read (or skipped past): the next one, or the list is done. */
static void page_done(struct kubeapi_informer *inf)
{
	if (inf->cont[0]) {
		request_page(inf);
		return;
	}
	if (inf->ops.sync_end)
		inf->ops.sync_end(inf->data);
	inf->stats.synced = true;
	inf->failures = 0;
	kubeapi__inf_start_watch(inf);
}

/* ---- a page over the body cap ------------------------------------------------------ */

/* The page of one object, cut short at the cap: its metadata came first,
 * so take its continue token and skip the object. 0, or -EINVAL when the
 * part read does not name them. */
static int skip_past(struct kubeapi_informer *inf, const char *p, size_t len)
{
	struct kubeapi__jiter items;
	struct kubeapi__span md, it;
	struct kubeapi__object_id id;
	char rv[KUBEAPI__RV_MAX + 1], why[160];
	bool has_items;
	int rc;

	if (page_open(p, len, &md, &items, &has_items) < 0 || !has_items ||
	    read_meta(inf, p, md, rv) < 0)
		return -EINVAL;
	rc = kubeapi__jiter_next(&items, NULL, &it);
	if (rc == 1) {
		list_item(inf, p, it); /* whole after all: the page's tail was over */
	} else if (rc == -EAGAIN && it.len > 0) {
		kubeapi__object_id(p, len, it.off, &id);
		snprintf(why, sizeof(why),
		         "over %zu bytes, the body cap on a list page of one object",
		         inf->max_body);
		kubeapi__inf_too_large(inf, &id, "list page", why, false);
	} else {
		return -EINVAL;
	}
	if (!inf->cont[0])
		memcpy(inf->rv, rv, sizeof(rv));
	return 0;
}

/* How many items came whole before the cap: 0 and *n, or -EINVAL when
 * the part read is not the head of a List. */
static int count_whole(const char *p, size_t len, size_t *n)
{
	struct kubeapi__jiter items;
	struct kubeapi__span md, it;
	bool has_items;

	*n = 0;
	if (page_open(p, len, &md, &items, &has_items) < 0 || !has_items)
		return -EINVAL;
	while (kubeapi__jiter_next(&items, NULL, &it) == 1)
		(*n)++;
	return 0;
}

static void over_cap(struct kubeapi_informer *inf, const char *p, size_t len)
{
	unsigned was = inf->limit;
	size_t whole;

	if (was > 1) {
		if (count_whole(p, len, &whole) < 0)
			len = 0; /* nothing learnt: halve */
		inf->limit = kubeapi__page_limit_over(was, inf->page_bytes, whole, len);
		inf->stats.shrinks++;
		kubeapi__inf_log(inf,
		                 "a page of %u is over the %zu-byte body cap (%zu whole objects "
		                 "read); asking for %u",
		                 was, inf->max_body, whole, inf->limit);
		request_page(inf);
		return;
	}
	if (skip_past(inf, p, len) == 0) {
		page_done(inf);
		return;
	}
	kubeapi__inf_log(inf,
	                 "a page of one object is over the %zu-byte body cap and the %zu bytes "
	                 "read do not say how to continue past it; trying again",
	                 inf->max_body, len);
	kubeapi__inf_retry_later(inf, request_page);
}

/* ---- requests ------------------------------------------------------------------------ */

static void list_failed(struct kubeapi_informer *inf, const struct kubeapi_response *r)
{
	if (r->status == 404 && inf->kind->optional) {
		if (!inf->stats.absent)
			kubeapi__inf_log(
			    inf, "not served (CRD not installed?); looking again every %llus",
			    (unsigned long long)inf->opt.absent_retry_ms / 1000);
		inf->stats.absent = true;
		kubeapi__inf_later(inf, inf->opt.absent_retry_ms, kubeapi__inf_begin_list);
		return;
	}
	if (r->status == 410)
		kubeapi__inf_log(inf,
		                 "list continue token expired (410); listing again from the start");
	else
		kubeapi__inf_log(inf, "list failed: status %ld, %s", r->status,
		                 r->err ? strerror(-r->err) : "");
	kubeapi__inf_retry_later(inf, kubeapi__inf_begin_list);
}

static void list_done(void *data, const struct kubeapi_response *r)
{
	struct kubeapi_informer *inf = data;

	inf->call = NULL;
	if (inf->state == KUBEAPI__ST_CLOSING) {
		kubeapi__inf_maybe_free(inf);
		return;
	}
	if (r->err == -EMSGSIZE && r->status == 200) {
		over_cap(inf, r->body, r->len);
		return;
	}
	if (r->err || r->status != 200) {
		list_failed(inf, r);
		return;
	}
	inf->stats.absent = false;
	inf->stats.pages++;
	if (list_page(inf, r->body, r->len) < 0) {
		kubeapi__inf_log(inf, "list page is not a valid list; listing again");
		kubeapi__inf_retry_later(inf, kubeapi__inf_begin_list);
		return;
	}
	page_done(inf);
}

static void request_page(struct kubeapi_informer *inf)
{
	char path[KUBEAPI_HTTP_MAX_PATH];
	int rc;

	snprintf(path, sizeof(path), "%s?limit=%u%s", inf->kind->path, inf->limit,
	         inf->cont[0] ? "&continue=" : "");
	if (inf->cont[0])
		kubeapi_query_append(path, sizeof(path), inf->cont);
	inf->state = KUBEAPI__ST_LIST;
	inf->stats.limit = inf->limit;
	rc = kubeapi__inf_submit(inf, path, KUBEAPI_REQ_RETRY, list_done, NULL);
	if (rc < 0) {
		kubeapi__inf_log(inf, "cannot list: %s", strerror(-rc));
		kubeapi__inf_retry_later(inf, kubeapi__inf_begin_list);
	}
}

/* A list from the start: the receiver marks what it names from here. */
void kubeapi__inf_begin_list(struct kubeapi_informer *inf)
{
	inf->cont[0] = '\0';
	inf->stats.lists++;
	if (inf->ops.sync_begin)
		inf->ops.sync_begin(inf->data);
	request_page(inf);
}
