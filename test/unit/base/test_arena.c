/*
 * base/arena: bump allocation, zeroing, growth by doubling, and the reuse
 * of the last cycle's blocks after a reset (what spares a big cycle its
 * mallocs and page faults), with the spares a cycle did not need freed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/arena.h"

static size_t spares(const struct arena *a)
{
	size_t n = 0;

	/* The block's layout is the arena's own: count through the list's
	 * first member, a pointer to the next block. */
	for (const void *b = a->spare; b; b = *(const void *const *)b)
		n++;
	return n;
}

static void test_alloc_is_aligned_and_zeroed(void **state)
{
	struct arena a = {0};
	char *p = arena_alloc(&a, 3);
	uint64_t *q = arena_calloc(&a, 100, sizeof(*q));

	(void)state;
	assert_non_null(p);
	assert_non_null(q);
	assert_int_equal((uintptr_t)q % _Alignof(max_align_t), 0);
	for (int k = 0; k < 100; k++)
		assert_int_equal(q[k], 0);
	assert_null(arena_calloc(&a, SIZE_MAX / 2, 4)); /* n x size overflows */
	arena_free(&a);
}

/* A cycle like the last reuses its blocks, big ones included: the same
 * addresses come back, and nothing is left over. */
static void test_reset_reuses_the_last_cycles_blocks(void **state)
{
	struct arena a = {0};
	void *small[40], *big, *again;

	(void)state;
	for (int k = 0; k < 40; k++)
		small[k] = arena_alloc(&a, 100000); /* 4 MiB: a few blocks */
	big = arena_alloc(&a, 8u << 20);
	assert_non_null(big);
	arena_reset(&a);
	assert_int_equal(a.used_total, 0);
	assert_true(spares(&a) >= 4);
	again = arena_alloc(&a, 8u << 20);
	assert_ptr_equal(again, big); /* the smallest spare that holds it */
	for (int k = 0; k < 40; k++)
		memset(arena_alloc(&a, 100000), 0xab, 100000);
	assert_int_equal(spares(&a), 0);
	(void)small;
	arena_free(&a);
}

/* Spares a cycle did not take are freed at the next reset: what stays is
 * the last cycle's size, not the largest ever. */
static void test_unused_spares_are_freed(void **state)
{
	struct arena a = {0};

	(void)state;
	for (int k = 0; k < 50; k++)
		arena_alloc(&a, 100000);
	arena_reset(&a);
	assert_true(spares(&a) >= 4);
	arena_alloc(&a, 10); /* a small cycle: one block */
	arena_reset(&a);
	assert_int_equal(spares(&a), 1);
	arena_free(&a);
	assert_null(a.head);
	assert_null(a.spare);
}

static void test_grow_doubles_and_keeps(void **state)
{
	struct arena a = {0};
	int *v = NULL;
	size_t cap = 0;

	(void)state;
	for (size_t n = 0; n < 1000; n++) {
		assert_int_equal(arena_grow(&a, &v, n, &cap, sizeof(*v), 16), 0);
		v[n] = (int)n;
	}
	assert_int_equal(cap, 1024);
	for (int k = 0; k < 1000; k++)
		assert_int_equal(v[k], k);
	arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_alloc_is_aligned_and_zeroed),
	    cmocka_unit_test(test_reset_reuses_the_last_cycles_blocks),
	    cmocka_unit_test(test_unused_spares_are_freed),
	    cmocka_unit_test(test_grow_doubles_and_keeps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
