/*
 * A filter over 64-bit keys: whether a key may be in a small set, for a
 * walk that asks of every record and finds few (the pod table's changed
 * pods, the assumed binds among every waiting pod). One hash, a bit per
 * slot, 16 slots a key: a key not in the set passes about one time in
 * 16, and the caller then asks the set itself. Cost: 2 bytes a key,
 * at least 512 bytes; a question is one load that mostly hits L1 or L2
 * where a map's probe missed the cache.
 */
#ifndef MUSTER_BASE_KEYFILTER_H
#define MUSTER_BASE_KEYFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct keyfilter {
	uint64_t *bits;
	uint64_t mask; /* slots - 1 */
};

/** An empty filter sized for n keys: 0 or -ENOMEM. */
int keyfilter_init(struct keyfilter *f, size_t n);

static inline uint64_t keyfilter__slot(const struct keyfilter *f, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return key & f->mask;
}

static inline void keyfilter_add(struct keyfilter *f, uint64_t key)
{
	uint64_t b = keyfilter__slot(f, key);

	f->bits[b / 64] |= 1ull << (b % 64);
}

/** false: key was never added. true: it may have been. */
static inline bool keyfilter_may(const struct keyfilter *f, uint64_t key)
{
	uint64_t b = keyfilter__slot(f, key);

	return f->bits[b / 64] >> (b % 64) & 1;
}

void keyfilter_free(struct keyfilter *f);

#endif
