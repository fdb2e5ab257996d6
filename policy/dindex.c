/*
 * A level's domains ordered by what they have free (table.h): a bucket
 * queue on key = 100 x free GPUs + free cores of registered GPUs, the
 * quantity placement's tightest-first search orders domains by. Each
 * key's bucket is a bitmap of domain indexes, so one walk in (key,
 * index) order is exactly the order the search tries domains in, and
 * moving a domain between buckets is two bit flips.
 *
 * Why: without it every gang tried scans the level's every domain (at
 * the node level, every node), so a cycle that admits work in
 * proportion to the cluster costs nodes squared (bench/README.md, issue
 * 18's sweep). With it a search costs the keys and bitmap words it
 * passes over: O(keys / 64 + domains / 64) to the first candidate.
 *
 * A walk may also pass over the domains that could not take the gang's
 * members by their free GPUs (policy.h's takes), ANDing a bitmap into
 * each bucket's words: on a level of racks, a gang too big for any rack
 * passed over 121 racks a walk at 100,000 nodes whose GPUs were free in
 * sum but scattered, each a read of its counts: 30 ms of a 730 ms cycle
 * (bench/README.md). The bitmaps are by tier, powers of two and the
 * halves between, so a gang of n members lets through the domains that
 * take n and those that take at least the largest tier at or below it:
 * two thirds of n or more.
 *
 * Memory, from the table's arena: per domain its key and 4 bytes of
 * tiers; per key in use a bitmap of domains/8 bytes (9 keys on whole-GPU
 * nodes); the key array up to the largest key; 64 bitmaps of the
 * domains by tier (4 takes x 16 tiers), 25 KB for 3,125 racks. Levels
 * with few domains, or keys too large for an array, have none and are
 * scanned as before.
 */
#include "policy/table.h"

#include <errno.h>
#include <string.h>

/* Fewer domains than this are scanned: a walk would cost as much. */
#define DINDEX_MIN_DOMAINS 64
/* Keys past this have no index (a level of huge domains, which are
 * few): 8 MiB of bucket pointers. */
#define DINDEX_MAX_KEY (1 << 20)
/* Tiers of a domain's takes (policy.h): 1, 2, 3, 4, 6, 8, 12 .. 192,
 * 256 members or more, powers of two and the halves between (tier_of()),
 * so that a gang's filter lets through few domains that take fewer
 * members than it has. */
#define DINDEX_TIERS 16

struct policy_dindex {
	uint32_t ndomains, nwords; /* nwords: 64-bit words of one bitmap */
	int64_t nkeys;             /* keys 0 .. nkeys-1 have room below */
	int64_t *key;              /* per domain: its key, -1 below zero */
	uint64_t **bucket;         /* per key: bitmap of domains, NULL unused */
	uint32_t *count;           /* per key: domains in its bucket */
	uint64_t *used;            /* bitmap over keys: count > 0 */
	/* With the level's takes: for takes x and tier j, the bitmap of
	 * domains whose takes reach tier j + 1, at fit[(x * DINDEX_TIERS +
	 * j) * nwords]; and each domain's tiers, tier[d * POLICY_TAKES + x].
	 * NULL on a level without takes. */
	uint64_t *fit;
	uint8_t *tier;
	struct arena *a;
};

/* The tier of c members: how many of 1, 2, 3, 4, 6, 8, 12 .. 256 are at
 * most c (DINDEX_TIERS for more). */
static unsigned tier_of(uint32_t c)
{
	unsigned b, t;

	if (c == 0)
		return 0;
	b = 31u - (unsigned)__builtin_clz(c); /* 2^b <= c */
	t = b == 0 ? 1 : 2 * b + (c >= 3u << (b - 1));
	return t < DINDEX_TIERS ? t : DINDEX_TIERS;
}

/* Domain d's bits in the fit bitmaps set for its takes as they are. */
static void refit(struct policy_dindex *x, const struct policy_level *lv, uint32_t d)
{
	for (unsigned k = 0; x->fit && k < POLICY_TAKES; k++) {
		uint8_t *was = &x->tier[(size_t)d * POLICY_TAKES + k];
		unsigned now = tier_of(lv->takes[(size_t)d * POLICY_TAKES + k]);
		uint64_t *bits = x->fit + (size_t)k * DINDEX_TIERS * x->nwords + d / 64;

		for (unsigned j = now; j < *was; j++) /* fell: out of tiers now .. was */
			bits[j * x->nwords] &= ~(1ull << (d % 64));
		for (unsigned j = *was; j < now; j++)
			bits[j * x->nwords] |= 1ull << (d % 64);
		*was = (uint8_t)now;
	}
}

static int64_t key_of(const struct policy_level *lv, uint32_t d)
{
	int64_t k = 100 * lv->free_gpu[d] + lv->free_core[d];

	/* A domain with less than nothing free takes no ask (free GPUs and
	 * cores are both >= an ask's, which are >= 0): it is in no bucket. */
	return lv->free_gpu[d] < 0 || lv->free_core[d] < 0 ? -1 : k;
}

/* Room for keys up to k: the arrays grown (doubling) into the arena.
 * 0, -ENOMEM, or -ERANGE past DINDEX_MAX_KEY. */
static int room_for(struct policy_dindex *x, int64_t k)
{
	int64_t n = x->nkeys ? x->nkeys : 64;
	uint64_t **bucket;
	uint32_t *count;
	uint64_t *used;

	if (k < x->nkeys)
		return 0;
	if (k >= DINDEX_MAX_KEY)
		return -ERANGE;
	while (n <= k)
		n *= 2;
	bucket = arena_calloc(x->a, (size_t)n, sizeof(*bucket));
	count = arena_calloc(x->a, (size_t)n, sizeof(*count));
	used = arena_calloc(x->a, (size_t)(n + 63) / 64, sizeof(*used));
	if (!bucket || !count || !used)
		return -ENOMEM;
	if (x->nkeys) {
		memcpy(bucket, x->bucket, (size_t)x->nkeys * sizeof(*bucket));
		memcpy(count, x->count, (size_t)x->nkeys * sizeof(*count));
		memcpy(used, x->used, (size_t)(x->nkeys + 63) / 64 * sizeof(*used));
	}
	x->bucket = bucket;
	x->count = count;
	x->used = used;
	x->nkeys = n;
	return 0;
}

static int insert(struct policy_dindex *x, uint32_t d, int64_t k)
{
	int rc;

	x->key[d] = k;
	if (k < 0)
		return 0;
	if ((rc = room_for(x, k)) < 0)
		return rc;
	if (!x->bucket[k] && !(x->bucket[k] = arena_calloc(x->a, x->nwords, sizeof(*x->bucket[k]))))
		return -ENOMEM;
	x->bucket[k][d / 64] |= 1ull << (d % 64);
	if (x->count[k]++ == 0)
		x->used[k / 64] |= 1ull << (k % 64);
	return 0;
}

static void erase(struct policy_dindex *x, uint32_t d)
{
	int64_t k = x->key[d];

	if (k < 0)
		return;
	x->bucket[k][d / 64] &= ~(1ull << (d % 64));
	if (--x->count[k] == 0)
		x->used[k / 64] &= ~(1ull << (k % 64));
	x->key[d] = -1;
}

int policy__dindex_build(struct policy_level *lv, struct arena *a)
{
	struct policy_dindex *x;
	int rc = 0;

	lv->index = NULL;
	lv->index_tried = 1;
	if (lv->ndomains < DINDEX_MIN_DOMAINS)
		return 0;
	if (!(x = arena_calloc(a, 1, sizeof(*x))) ||
	    !(x->key = arena_alloc(a, lv->ndomains * sizeof(*x->key))))
		return -ENOMEM;
	x->ndomains = lv->ndomains;
	x->nwords = (lv->ndomains + 63) / 64;
	x->a = a;
	if (lv->takes &&
	    (!(x->fit = arena_calloc(a, (size_t)POLICY_TAKES * DINDEX_TIERS * x->nwords,
	                             sizeof(*x->fit))) ||
	     !(x->tier = arena_calloc(a, (size_t)lv->ndomains * POLICY_TAKES, 1))))
		return -ENOMEM;
	for (uint32_t d = 0; d < lv->ndomains && rc == 0; d++) {
		refit(x, lv, d);
		rc = insert(x, d, key_of(lv, d));
	}
	if (rc == 0)
		lv->index = x;
	return rc == -ERANGE ? 0 : rc;
}

void policy__dindex_update(struct policy_level *lv, uint32_t d)
{
	struct policy_dindex *x = lv->index;
	int64_t k = key_of(lv, d);

	refit(x, lv, d); /* takes may change under the same key */
	if (k == x->key[d])
		return;
	erase(x, d);
	/* Out of room: the level is scanned from here on, which reads the
	 * domains' counts themselves and so misses nothing. */
	if (insert(x, d, k) < 0)
		lv->index = NULL;
}

/* Word w of bits, and of only unless NULL. */
static inline uint64_t word_of(const uint64_t *bits, const uint64_t *only, int64_t w)
{
	return only ? bits[w] & only[w] : bits[w];
}

/* The lowest bit at or after `from` in bits[0 .. nbits) set there and,
 * unless only is NULL, in only; or -1. */
static int64_t next_bit(const uint64_t *bits, const uint64_t *only, int64_t nbits, int64_t from)
{
	int64_t w = from / 64;
	uint64_t m;

	if (from >= nbits)
		return -1;
	m = word_of(bits, only, w) & (~0ull << (from % 64));
	while (!m) {
		if (++w * 64 >= nbits)
			return -1;
		m = word_of(bits, only, w);
	}
	return w * 64 + __builtin_ctzll(m);
}

const uint64_t *policy__dindex_only(const struct policy_dindex *x, unsigned takes, uint32_t n)
{
	unsigned j = tier_of(n);

	if (!x->fit || j == 0 || takes >= POLICY_TAKES)
		return NULL;
	return x->fit + ((size_t)takes * DINDEX_TIERS + j - 1) * x->nwords;
}

bool policy__dindex_next(const struct policy_dindex *x, struct policy__dcursor *c, uint32_t *d)
{
	int64_t k = c->key < 0 ? 0 : c->key, e;
	int64_t from = c->key < 0 ? 0 : c->d;

	while ((k = next_bit(x->used, NULL, x->nkeys, k)) >= 0) {
		if (k != c->key)
			from = 0;
		if ((e = next_bit(x->bucket[k], c->only, x->ndomains, from)) >= 0) {
			*d = (uint32_t)e;
			c->key = k;
			c->d = (uint32_t)e + 1;
			return true;
		}
		c->key = ++k;
		from = 0;
	}
	return false;
}
