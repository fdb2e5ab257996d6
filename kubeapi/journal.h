/*
 * The informer callbacks a held cache could not apply (cache.h,
 * kubeapi_cache_hold), in order: each object kept as its JSON text, so
 * that a record costs about what the API server sent, and the bytes kept
 * are capped.
 *
 * Internal to kubeapi/ (cache.c and its tests).
 */
#ifndef MUSTER_KUBEAPI_JOURNAL_H
#define MUSTER_KUBEAPI_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

enum kubeapi__journal_op {
	KUBEAPI__J_SYNC_BEGIN,
	KUBEAPI__J_UPSERT,
	KUBEAPI__J_REMOVE,
	KUBEAPI__J_KEEP,
	KUBEAPI__J_SYNC_END,
};

struct kubeapi__journal_rec {
	uint8_t store; /* the caller's: which store it was for */
	uint8_t op;    /* enum kubeapi__journal_op */
	char *text;    /* the object, unformatted JSON; NULL for the sync ops */
	size_t len;
};

struct kubeapi__journal {
	struct kubeapi__journal_rec *v;
	size_t n, cap;
	size_t bytes;     /* of text, all records */
	size_t max_bytes; /* the cap on bytes; set before the first add */
};

/** Append one callback (obj NULL for the sync ops). 0; -EMSGSIZE past
 *  max_bytes or -ENOMEM, the journal unchanged. O(size of obj). */
int kubeapi__journal_add(struct kubeapi__journal *j, unsigned store, enum kubeapi__journal_op op,
                         const cJSON *obj);

/** Record k is applied: its text is freed and no longer counts toward
 *  the cap (the record itself stays until the clear). */
void kubeapi__journal_done(struct kubeapi__journal *j, size_t k);

/** Drop every record (the cap stays). */
void kubeapi__journal_clear(struct kubeapi__journal *j);

#endif /* MUSTER_KUBEAPI_JOURNAL_H */
