/*
 * A hash map from 64-bit keys to pointers: the cache's stores, keyed by
 * (namespace id << 32 | name id) of interned strings. Open addressing with
 * linear probing and backward-shift deletion (no tombstones), load <= 0.7,
 * halved when it falls under 0.175 (never under 64 slots). Cost: 16 bytes
 * a slot, about 23 bytes per entry. Key 0 is reserved.
 */
#ifndef MUSTER_BASE_IDMAP_H
#define MUSTER_BASE_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct idmap {
	struct idmap_slot {
		uint64_t key; /* 0 = empty */
		void *value;
	} * slots;
	size_t nslots, n;
};

/** The value for key, or NULL. Expected O(1). */
void *idmap_get(const struct idmap *m, uint64_t key);

/** Start loading key's first slot into the cache, for a get a little
 *  later (a walk that looks keys up at random, one after another). */
void idmap_prefetch(const struct idmap *m, uint64_t key);

/** Insert or replace; 0 or -ENOMEM (-EINVAL for key 0). Amortized O(1). */
int idmap_put(struct idmap *m, uint64_t key, void *value);

/** The value slot of key, inserted holding NULL when absent: one probe
 *  where a get then a put take two. NULL when out of memory or for key
 *  0. Valid until the map next changes. Amortized O(1). */
void **idmap_ref(struct idmap *m, uint64_t key);

/** Room for n entries without a rebuild (a map filled afresh each
 *  cycle, whose size the last cycle told). 0 or -ENOMEM. O(n). */
int idmap_reserve(struct idmap *m, size_t n);

/** Remove key; returns its value or NULL. */
void *idmap_del(struct idmap *m, uint64_t key);

/**
 * The address of each entry's value, in slot order, into out, which has
 * room for m->n + 1 (one more is written past them); their count, m->n.
 * For a walk that sorts the values by address before it reads them: no
 * branch a slot, where idmap_next()'s test of each slot is a mispredict
 * for about every other one (entries sit in slots at random), most of a
 * walk of the 8 million slots of 3.5 million pods. O(nslots).
 */
size_t idmap_addresses(const struct idmap *m, uint64_t *out);

/** Free the slots (not the values) and zero the map. */
void idmap_free(struct idmap *m);

/**
 * The first entry in slot *i or after it, with *i moved past it; NULL
 * when there is none (and for a NULL map). Start with *i = 0: each entry
 * comes once, in slot order. A whole walk costs O(nslots): under 6 slots
 * per entry, as the map halves under a 0.175 load (64 slots at least).
 *
 * No idmap_put() or idmap_del() during a walk: deleting may move a later
 * entry before *i (it would be missed) and either may rebuild the table.
 * Collect the keys first, then change the map.
 */
static inline struct idmap_slot *idmap_next(const struct idmap *m, size_t *i)
{
	for (; m && *i < m->nslots; (*i)++)
		if (m->slots[*i].key)
			return &m->slots[(*i)++];
	return NULL;
}

/* for each entry e (a struct idmap_slot *, declared by the caller) of the
 * map m, a NULL map being empty; i is the walk's cursor, declared here. */
#define IDMAP_FOREACH(m, i, e) for (size_t i = 0; ((e) = idmap_next((m), &(i))) != NULL;)

#endif /* MUSTER_BASE_IDMAP_H */
