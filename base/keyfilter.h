/*
 * A filter over 64-bit keys: whether a key may be in a small set, for a
 * walk that asks of every record and finds few (the pod table's changed
 * pods, the assumed binds among every waiting pod). One hash picks a
 * 64-bit word and two bits in it (a blocked Bloom filter), 16 bits a
 * key: a key not in the set passes about one time in 60 (one bit a key
 * passed one in 16, and each pass cost the caller a probe of the set
 * itself: at 50,000 nodes 84,000 probes a cycle of the assumed binds).
 * Cost: 2 bytes a key, at least 512 bytes; a question is one load that
 * mostly hits L1 or L2 where a map's probe missed the cache.
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

static inline uint64_t keyfilter__hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	key *= 0xc4ceb9fe1a85ec53ull;
	key ^= key >> 33;
	return key;
}

/* The key's word: the hash's low bits. */
static inline uint64_t keyfilter__word(const struct keyfilter *f, uint64_t h)
{
	return (h & f->mask) / 64;
}

/* Its two bits in the word: six bits of the hash each, from the top. */
static inline uint64_t keyfilter__bits(uint64_t h)
{
	return 1ull << (h >> 58) | 1ull << (h >> 52 & 63);
}

static inline void keyfilter_add(struct keyfilter *f, uint64_t key)
{
	uint64_t h = keyfilter__hash(key);

	f->bits[keyfilter__word(f, h)] |= keyfilter__bits(h);
}

/** false: key was never added. true: it may have been. */
static inline bool keyfilter_may(const struct keyfilter *f, uint64_t key)
{
	uint64_t h = keyfilter__hash(key), m = keyfilter__bits(h);

	return (f->bits[keyfilter__word(f, h)] & m) == m;
}

void keyfilter_free(struct keyfilter *f);

#endif
