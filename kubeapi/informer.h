/*
 * An informer keeps one kind of object in step with the API server: a
 * paginated list, then a watch from the list's resourceVersion, forever.
 *
 *   LIST   GET path?limit=N[&continue=C] until no continue token; every
 *          item goes to upsert() between sync_begin() and sync_end(), so
 *          the receiver can drop what the new list no longer names.
 *   WATCH  GET path?watch=1&allowWatchBookmarks=true&resourceVersion=RV,
 *          newline-delimited events: ADDED and MODIFIED to upsert(),
 *          DELETED to remove(); every event and bookmark advances RV.
 *          When the stream ends (server timeout, disconnect, API server
 *          restart) the watch resumes from the last RV after a backoff.
 *   GONE   410 Gone (RV compacted away, an expired continue token, or an
 *          ERROR event with code 410): list again from scratch.
 *   ABSENT a 404 on the list of an optional kind (a CRD not installed):
 *          look again every absent_retry_ms.
 *
 * Page size. N starts at page_size and follows the objects' size: after
 * each page it is what would fill page_bytes at that page's mean object
 * size, at most twice the last N (so it grows back toward page_size when
 * objects are small, and a page that grew overshoots page_bytes at most
 * twice over). A page over the HTTP engine's body cap is asked again, same
 * continue token, with N at most halved: estimated from the items that
 * fitted before the cap, down to 1. At N = 1 the one object is over the
 * cap: the part that was read carries the page's metadata (the API server
 * writes it before the items), so the list continues past the object with
 * that page's continue token, and the object is skipped as below. The
 * same request is never sent again after it ran over the cap, except when
 * the server sent nothing to read past it (no API server does that).
 *
 * Object size. An object whose JSON is over max_object bytes, in a list
 * page or in a watch event, is skipped: one log line (kind,
 * namespace/name when its text names them before the cap, size, cap), and
 * counted in stats.too_large. A skipped DELETED event still removes the
 * object; otherwise keep() tells the receiver to keep what it last saw.
 * The list completes without it.
 *
 * Nothing is lost silently: an event that cannot be parsed is logged and
 * skipped (the object will be right again at its next change or the next
 * list); anything else that goes wrong ends in a resumed watch or a
 * relist. All I/O goes through the HTTP engine on the loop; the informer
 * itself only parses.
 *
 * Cost. A page is read into one buffer (at most the engine's max_body),
 * skimmed for its items (two linear passes, kubeapi/jscan.h) and parsed
 * item by item, so at most one item is a cJSON tree at a time. A watch keeps one
 * line buffer of at most max_object + 4 KiB.
 */
#ifndef MUSTER_KUBEAPI_INFORMER_H
#define MUSTER_KUBEAPI_INFORMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "kubeapi/http.h"

/* One watched kind: a row of the cache's table. */
struct kubeapi_kind {
	const char *name; /* "Pod", for logs */
	const char *path; /* collection path, e.g. "/api/v1/pods" (all namespaces) */
	bool optional;    /* a CRD that may be missing: 404 means "look again later" */
};

struct kubeapi_informer_ops {
	void (*sync_begin)(void *data);
	void (*upsert)(void *data, const cJSON *obj);
	void (*remove)(void *data, const cJSON *obj);
	void (*sync_end)(void *data);
	void (*log)(void *data, const char *msg);
	/* Optional. An object that exists but was skipped (too large): keep
	 * what was last stored for it through this list's sync_end. obj holds
	 * only metadata.namespace and metadata.name, as does the obj given to
	 * remove() for a skipped DELETED event. */
	void (*keep)(void *data, const cJSON *obj);
};

/* Zero means the default. */
struct kubeapi_informer_options {
	unsigned page_size;       /* list page, default 500 */
	unsigned watch_timeout_s; /* server-side watch timeout, default 300 */
	uint64_t absent_retry_ms; /* optional kind missing: default 30000 */
	uint64_t backoff_base_ms; /* after a failure: default 250 */
	uint64_t backoff_cap_ms;  /* default 8000 */
	/* One object's JSON, default 16 MiB: over any object the API server
	 * can store (etcd takes 1.5 MiB encoded; JSON escapes '<', '>', '&'
	 * and control bytes as 6 bytes each, so 9 MiB at worst), so a real
	 * object is never skipped, while one parse stays bounded. */
	size_t max_object;
	/* A list page aims at this many bytes, default 16 MiB, and never more
	 * than a quarter of the engine's max_body: a page sized from the one
	 * before runs over the cap only if its objects are, on average, more
	 * than twice as large. */
	size_t page_bytes;
};

struct kubeapi_informer_stats {
	unsigned lists, pages, watches, events, bookmarks, gone, failures;
	unsigned skipped;   /* events or items that could not be read */
	unsigned too_large; /* objects over max_object (or the body cap) */
	unsigned shrinks;   /* pages asked again smaller: over the body cap */
	unsigned limit;     /* of the next list page */
	bool synced, absent;
};

struct kubeapi_informer;

/** Create an informer for `kind` (the struct must outlive it). It starts
 *  with kubeapi_informer_start(). Returns 0, -EINVAL, -ENOMEM. */
int kubeapi_informer_new(uv_loop_t *loop, struct kubeapi_http *http,
                         const struct kubeapi_kind *kind,
                         const struct kubeapi_informer_options *opt,
                         const struct kubeapi_informer_ops *ops, void *data,
                         struct kubeapi_informer **out);

/** Start listing. 0 or a negative errno from the HTTP engine. */
int kubeapi_informer_start(struct kubeapi_informer *inf);

/** List again (every object delivered anew, then a sync_end) as soon as
 *  possible: at once while watching, after a list in progress or a wait. */
void kubeapi_informer_relist(struct kubeapi_informer *inf);

/** The last resourceVersion seen ("" before the first list). */
const char *kubeapi_informer_rv(const struct kubeapi_informer *inf);

void kubeapi_informer_get_stats(const struct kubeapi_informer *inf,
                                struct kubeapi_informer_stats *out);

/** Stop: cancel the call in flight and the timer; no op is called after
 *  this returns. Memory is freed once libuv and the engine let go, then
 *  closed_cb(data) if not NULL. Clears *ip. */
void kubeapi_informer_close(struct kubeapi_informer **ip, void (*closed_cb)(void *), void *data);

#endif /* MUSTER_KUBEAPI_INFORMER_H */
