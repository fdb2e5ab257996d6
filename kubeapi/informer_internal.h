/*
 * Shared by the files of the informer (informer.c: lifetime, backoff,
 * requests, skipped objects; informer_list.c: list pages and their size;
 * informer_watch.c: the watch stream) and its unit tests, nothing else.
 */
#ifndef MUSTER_KUBEAPI_INFORMER_INTERNAL_H
#define MUSTER_KUBEAPI_INFORMER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "kubeapi/informer.h"
#include "kubeapi/jscan.h"

#define KUBEAPI__RV_MAX       64
#define KUBEAPI__CONTINUE_MAX 4096

/* A watch line may exceed max_object by the event around the object
 * ({"type":"MODIFIED","object":...}, 30 bytes from the API server). */
#define KUBEAPI__EVENT_ENVELOPE 4096

enum kubeapi__inf_state {
	KUBEAPI__ST_IDLE,
	KUBEAPI__ST_LIST,
	KUBEAPI__ST_WATCH,
	KUBEAPI__ST_WAIT,
	KUBEAPI__ST_CLOSING
};

/* Who an object is, as far as its text says (each "" when unknown). */
struct kubeapi__object_id {
	char ns[64];
	char name[254];
	char rv[KUBEAPI__RV_MAX + 1];
};

struct kubeapi_informer {
	uv_loop_t *loop;
	struct kubeapi_http *http;
	const struct kubeapi_kind *kind;
	struct kubeapi_informer_options opt;
	struct kubeapi_informer_ops ops;
	void *data;
	size_t max_body;   /* the engine's cap on a list page */
	size_t page_bytes; /* what a page is sized for: min(opt.page_bytes, max_body / 4) */

	enum kubeapi__inf_state state;
	struct kubeapi_http_call *call; /* in flight, or NULL */
	uv_timer_t timer;
	bool timer_open;
	void (*next)(struct kubeapi_informer *); /* what the timer starts */
	unsigned failures;                       /* in a row, for backoff */
	uint64_t rng;                            /* xorshift state for jitter */
	bool got_chunk;                          /* the current watch sent data */

	char rv[KUBEAPI__RV_MAX + 1];
	char cont[KUBEAPI__CONTINUE_MAX + 1]; /* list continue token */
	unsigned limit;                       /* of the next list page */
	bool relist;       /* the watch saw 410, or a relist was asked: list again */
	bool relist_asked; /* kubeapi_informer_relist(): no "gone" line */

	struct buf line;                   /* partial watch event, at most max_object + envelope */
	bool skipping;                     /* dropping an event over that up to its newline */
	size_t skip_len;                   /* its length so far */
	char skip_type[16];                /* its type, from its head */
	struct kubeapi__object_id skip_id; /* its object, from its head */

	struct kubeapi_informer_stats stats;
	void (*closed_cb)(void *);
	void *closed_data;
};

/* informer.c */
void kubeapi__inf_log(struct kubeapi_informer *inf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kubeapi__inf_retry_later(struct kubeapi_informer *inf,
                              void (*next)(struct kubeapi_informer *));
void kubeapi__inf_later(struct kubeapi_informer *inf, uint64_t ms,
                        void (*next)(struct kubeapi_informer *));
int kubeapi__inf_submit(struct kubeapi_informer *inf, const char *path, unsigned flags,
                        kubeapi_http_done_cb done, kubeapi_http_chunk_cb chunk);
void kubeapi__inf_maybe_free(struct kubeapi_informer *inf);
/* String member `key` of a parsed object into out[cap + 1] ("" if absent
 * or null). 0 or -EINVAL (not a string, or longer than cap). */
int kubeapi__inf_copy_string(const cJSON *o, const char *key, char *out, size_t cap);

/** metadata.namespace, .name and .resourceVersion of the object whose text
 *  starts at p[off], reading no further than p[len) (the text may be cut
 *  short). O(bytes before them). */
void kubeapi__object_id(const char *p, size_t len, size_t off, struct kubeapi__object_id *id);

/** An object too large to take (in `where`: "list page", "MODIFIED watch
 *  event"; `why`: its size against which cap): log it, count it; a
 *  DELETED one is removed all the same, any other is kept as the receiver
 *  last saw it (ops.keep). */
void kubeapi__inf_too_large(struct kubeapi_informer *inf, const struct kubeapi__object_id *id,
                            const char *where, const char *why, bool deleted);

/* informer_list.c */
void kubeapi__inf_begin_list(struct kubeapi_informer *inf);

/** The limit of the next page after one of `items` in `bytes` at `limit`:
 *  sized for `target` bytes at this page's mean item size, at most twice
 *  `limit` and at most page_size, at least 1. O(1). */
unsigned kubeapi__page_limit(unsigned limit, unsigned page_size, size_t target, size_t items,
                             size_t bytes);

/** After a page at `limit` ran over the body cap: `complete` items fitted
 *  in the `got` bytes read (got 0: nothing could be read; complete 0 with
 *  got > 0: the first item alone is over the cap, so 1). At most half of
 *  limit, at least 1. O(1). */
unsigned kubeapi__page_limit_over(unsigned limit, size_t target, size_t complete, size_t got);

/* informer_watch.c */
void kubeapi__inf_start_watch(struct kubeapi_informer *inf);

#endif /* MUSTER_KUBEAPI_INFORMER_INTERNAL_H */
