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

/** Insert or replace; 0 or -ENOMEM (-EINVAL for key 0). Amortized O(1). */
int idmap_put(struct idmap *m, uint64_t key, void *value);

/** Remove key; returns its value or NULL. */
void *idmap_del(struct idmap *m, uint64_t key);

/** Free the slots (not the values) and zero the map. */
void idmap_free(struct idmap *m);

/* Iterate: for (i = 0; i < m->nslots; i++) if (m->slots[i].key) ...
 * Deleting during iteration may move a later entry before i, or rebuild
 * the table: collect keys first. */

#endif /* MUSTER_BASE_IDMAP_H */
