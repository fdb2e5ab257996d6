/* base/radix: radix_sort() sorts, and radix_order() gives the positions
 * in key order, ties in position order, for keys that fit above the
 * position, keys with runs of bits the same everywhere (more runs than
 * it drops), and keys too wide for one round. Each checked against a
 * qsort of the same keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/radix.h"

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct pair {
	uint64_t key;
	size_t at;
};

static int by_key_then_at(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

typedef uint64_t (*keygen)(uint64_t *s, const uint64_t *pool);

/* radix_order() of n keys from gen against the qsort of (key, position). */
static void check_order(size_t n, keygen gen, uint64_t seed)
{
	uint64_t *v = malloc((n + 1) * sizeof(*v)), *scratch = malloc((n + 1) * sizeof(*scratch));
	uint64_t *order, pool[37], s = seed;
	struct pair *want = malloc((n + 1) * sizeof(*want));

	assert_true(v && scratch && want);
	for (size_t k = 0; k < 37; k++)
		pool[k] = next_rand(&s);
	for (size_t k = 0; k < n; k++) {
		v[k] = gen(&s, pool);
		want[k] = (struct pair){v[k], k};
	}
	qsort(want, n, sizeof(*want), by_key_then_at);
	assert_int_equal(radix_order(v, scratch, n, &order), 0);
	assert_true(order == v || order == scratch);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(order[k], want[k].at);
	free(v);
	free(scratch);
	free(want);
}

/* 64 bits from a pool of 37: ties, and no bit the same everywhere, so
 * never one round (the position takes some of the 64). */
static uint64_t wide(uint64_t *s, const uint64_t *pool)
{
	return pool[next_rand(s) % 37];
}

/* A gang key's shape (plan_gang_key()): a flag on top, a namespace id
 * and a name id each in the low bits of its half; 0 for no gang. */
static uint64_t gang(uint64_t *s, const uint64_t *pool)
{
	uint64_t r = next_rand(s);

	(void)pool;
	if (r % 10 == 0)
		return 0;
	return (r >> 8 & 1) << 63 | (r >> 9 & 0x3f) << 32 | (r >> 20 & 0xfff);
}

/* Bits only at every third place: 20 runs of bits the same everywhere,
 * more than are dropped. */
static uint64_t sparse(uint64_t *s, const uint64_t *pool)
{
	uint64_t r = next_rand(s), v = 0;

	(void)pool;
	for (unsigned b = 0; b < 21; b++)
		v |= (r >> b & 1) << (3 * b);
	return v;
}

static uint64_t same(uint64_t *s, const uint64_t *pool)
{
	(void)s;
	return pool[3];
}

static void test_order_is_stable_key_order(void **state)
{
	const keygen gens[] = {wide, gang, sparse, same};

	(void)state;
	for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++) {
		check_order(0, gens[g], 1);
		check_order(1, gens[g], 2);
		check_order(2, gens[g], 3);
		check_order(1000, gens[g], 4 + g);
		check_order(70001, gens[g], 9 + g); /* 17 bits of position */
	}
}

static void check_sort(size_t n, uint64_t high, uint64_t seed)
{
	uint64_t *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
	uint64_t *want = malloc((n + 1) * sizeof(*want)), *got, s = seed;

	assert_true(a && b && want);
	for (size_t k = 0; k < n; k++) /* addresses: aligned, one high part */
		want[k] = a[k] = high | (next_rand(&s) & 0xffffff0);
	qsort(want, n, sizeof(*want), by_value);
	got = radix_sort(a, b, n, 0);
	assert_true(got == a || got == b);
	assert_memory_equal(got, want, n * sizeof(*want));
	free(a);
	free(b);
	free(want);
}

/* Sorted by the bits from low up only: items the same there keep their
 * order, whatever their bits below low (random here, so a sort that read
 * them, or was not stable, puts some pair the other way round). */
struct at {
	uint64_t v;
	size_t k;
	unsigned low;
};

static int by_high_then_place(const void *x, const void *y)
{
	const struct at *a = x, *b = y;
	uint64_t ha = a->v >> a->low, hb = b->v >> b->low;

	if (ha != hb)
		return ha < hb ? -1 : 1;
	return (a->k > b->k) - (a->k < b->k);
}

static void check_sort_from(size_t n, unsigned low, uint64_t base, uint64_t seed)
{
	uint64_t *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b)), *got,
	         s = seed;
	struct at *want = malloc((n + 1) * sizeof(*want));

	assert_true(a && b && want);
	for (size_t k = 0; k < n; k++) {
		/* few values above low, so that many items share one */
		a[k] = base + ((next_rand(&s) % 97) << low | (next_rand(&s) & ((1ull << low) - 1)));
		want[k] = (struct at){a[k], k, low};
	}
	qsort(want, n, sizeof(*want), by_high_then_place);
	got = radix_sort(a, b, n, low);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(got[k], want[k].v);
	free(a);
	free(b);
	free(want);
}

static void test_sort_from_a_bit_keeps_order_below_it(void **state)
{
	(void)state;
	check_sort_from(0, 6, 0, 1);
	check_sort_from(5000, 6, 0, 2);
	check_sort_from(5000, 1, 0, 3);
	check_sort_from(3000, 63, 0, 4);
	/* Across a multiple of 2^40, from a base not a multiple of 2^low:
	 * the items are read less the least, whose bits below low stay. */
	check_sort_from(5000, 6, (1ull << 40) - (50ull << 6) - 17, 5);
	check_sort_from(5000, 3, (1ull << 40) - (50ull << 3) - 5, 6);
}

static void test_sort_sorts(void **state)
{
	(void)state;
	check_sort(0, 0, 1);
	check_sort(1, 0x7f0000000000ull, 2);
	check_sort(5000, 0x7f0000000000ull, 3);
	check_sort(100000, 0, 4);
}

/* Keys of every width from 1 to 64 bits, so that some digit is cut
 * short by the top bit at every place: both sorts against qsort. */
static void test_every_width_sorts(void **state)
{
	enum { N = 3000 };
	uint64_t *a = malloc(N * sizeof(*a)), *b = malloc(N * sizeof(*b)),
	         *want = malloc(N * sizeof(*want)), *got, s = 77;
	struct pair *pairs = malloc(N * sizeof(*pairs));

	(void)state;
	assert_true(a && b && want && pairs);
	for (unsigned w = 1; w <= 64; w++) {
		uint64_t mask = w == 64 ? UINT64_MAX : (1ull << w) - 1;

		for (size_t k = 0; k < N; k++)
			want[k] = a[k] = next_rand(&s) & mask;
		a[0] = want[0] = mask; /* the top bit set in one at least */
		qsort(want, N, sizeof(*want), by_value);
		got = radix_sort(a, b, N, 0);
		assert_memory_equal(got, want, N * sizeof(*want));
		for (size_t k = 0; k < N; k++) {
			a[k] = next_rand(&s) & mask & ~0xfull; /* ties: the low bits the same */
			pairs[k] = (struct pair){a[k], k};
		}
		qsort(pairs, N, sizeof(*pairs), by_key_then_at);
		assert_int_equal(radix_order(a, b, N, &got), 0);
		for (size_t k = 0; k < N; k++)
			assert_int_equal(got[k], pairs[k].at);
	}
	free(a);
	free(b);
	free(want);
	free(pairs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order_is_stable_key_order),
	    cmocka_unit_test(test_sort_sorts),
	    cmocka_unit_test(test_sort_from_a_bit_keeps_order_below_it),
	    cmocka_unit_test(test_every_width_sorts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
