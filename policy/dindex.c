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
 * Memory, from the table's arena: per domain its key; per key in use a
 * bitmap of domains/8 bytes (9 keys on whole-GPU nodes); the key array
 * up to the largest key. Levels with few domains, or keys too large for
 * an array, have none and are scanned as before.
 */
#include "policy/table.h"

#include <errno.h>
#include <string.h>

/* Fewer domains than this are scanned: a walk would cost as much. */
#define DINDEX_MIN_DOMAINS 64
/* Keys past this have no index (a level of huge domains, which are
 * few): 8 MiB of bucket pointers. */
#define DINDEX_MAX_KEY (1 << 20)

struct policy_dindex {
	uint32_t ndomains, nwords; /* nwords: 64-bit words of one bitmap */
	int64_t nkeys;             /* keys 0 .. nkeys-1 have room below */
	int64_t *key;              /* per domain: its key, -1 below zero */
	uint64_t **bucket;         /* per key: bitmap of domains, NULL unused */
	uint32_t *count;           /* per key: domains in its bucket */
	uint64_t *used;            /* bitmap over keys: count > 0 */
	struct arena *a;
};

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
	for (uint32_t d = 0; d < lv->ndomains && rc == 0; d++)
		rc = insert(x, d, key_of(lv, d));
	if (rc == 0)
		lv->index = x;
	return rc == -ERANGE ? 0 : rc;
}

void policy__dindex_update(struct policy_level *lv, uint32_t d)
{
	struct policy_dindex *x = lv->index;
	int64_t k = key_of(lv, d);

	if (k == x->key[d])
		return;
	erase(x, d);
	/* Out of room: the level is scanned from here on, which reads the
	 * domains' counts themselves and so misses nothing. */
	if (insert(x, d, k) < 0)
		lv->index = NULL;
}

/* The lowest set bit at or after `from` in bits[0 .. nbits), or -1. */
static int64_t next_bit(const uint64_t *bits, int64_t nbits, int64_t from)
{
	int64_t w = from / 64;
	uint64_t m;

	if (from >= nbits)
		return -1;
	m = bits[w] & (~0ull << (from % 64));
	while (!m) {
		if (++w * 64 >= nbits)
			return -1;
		m = bits[w];
	}
	return w * 64 + __builtin_ctzll(m);
}

bool policy__dindex_next(const struct policy_dindex *x, struct policy__dcursor *c, uint32_t *d)
{
	int64_t k = c->key < 0 ? 0 : c->key, e;
	int64_t from = c->key < 0 ? 0 : c->d;

	while ((k = next_bit(x->used, x->nkeys, k)) >= 0) {
		if (k != c->key)
			from = 0;
		if ((e = next_bit(x->bucket[k], x->ndomains, from)) >= 0) {
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
