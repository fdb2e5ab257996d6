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
	unsigned shift; /* 64 - log2(words): the hash's top bits pick the word */
};

/** An empty filter sized for n keys: 0 or -ENOMEM. */
int keyfilter_init(struct keyfilter *f, size_t n);

/* One multiply (Fibonacci hashing): its top bits, which every bit of the
 * key reaches, pick the word, and two fields of six bits below them the
 * bits. The walks ask it of every record (the pod table's 1,750,000 at
 * 50,000 nodes each steady cycle): three multiplies and shifts more, a
 * full mix, were half the question's instructions. Keys are pod keys,
 * (namespace id << 32 | name id) with ids handed out in a row, which
 * the golden ratio spreads well. */
static inline uint64_t keyfilter__hash(uint64_t key)
{
	return key * 0x9e3779b97f4a7c15ull;
}

static inline uint64_t keyfilter__word(const struct keyfilter *f, uint64_t h)
{
	return h >> f->shift;
}

/* Its two bits in the word: six bits of the hash each, below the word's. */
static inline uint64_t keyfilter__bits(uint64_t h)
{
	return 1ull << (h >> 20 & 63) | 1ull << (h >> 26 & 63);
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
