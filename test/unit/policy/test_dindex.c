/*
 * policy/dindex: a level's domains in (100 x free GPUs + free cores,
 * index) order, the order placement's tightest-first search tries them
 * in. Checked against a sort of the counts themselves after every step of
 * a long random run of changes, and across changes undone mid-walk, as a
 * placement trial does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "policy/table.h"

#define ND 300

struct world {
	struct arena a;
	struct policy_level lv;
	int64_t gpu[ND + 1], core[ND + 1], empty[ND + 1];
	uint64_t rng;
};

static uint64_t next(struct world *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 0x2545f4914f6cdd1dull;
}

static void init(struct world *w, uint64_t seed)
{
	*w = (struct world){.rng = seed};
	w->lv.ndomains = ND;
	w->lv.free_gpu = w->gpu;
	w->lv.free_core = w->core;
	w->lv.empty_gpu = w->empty;
	for (uint32_t d = 0; d < ND; d++) {
		/* Mostly whole GPUs (0..8, many full), some cores, a few below
		 * zero (a node overcommitted by another scheduler). */
		w->gpu[d] = (int64_t)(next(w) % 12) - 2;
		w->gpu[d] = w->gpu[d] > 8 ? 0 : w->gpu[d];
		w->core[d] = next(w) % 4 == 0 ? (int64_t)(next(w) % 9) * 10 : 0;
	}
	assert_int_equal(policy__dindex_build(&w->lv, &w->a), 0);
	assert_non_null(w->lv.index);
}

/* The walk from kmin against every domain with key >= kmin (both
 * counts >= 0), sorted by (key, index). */
static void check_walk(const struct world *w, int64_t kmin)
{
	struct policy__dcursor c = {kmin, 0};
	uint32_t got;
	int64_t top = 0;

	for (uint32_t d = 0; d < ND; d++)
		top = 100 * w->gpu[d] + w->core[d] > top ? 100 * w->gpu[d] + w->core[d] : top;
	for (int64_t k = kmin; k <= top; k++)
		for (uint32_t d = 0; d < ND; d++) {
			if (w->gpu[d] < 0 || w->core[d] < 0 || 100 * w->gpu[d] + w->core[d] != k)
				continue;
			assert_true(policy__dindex_next(w->lv.index, &c, &got));
			assert_int_equal(got, d);
		}
	assert_false(policy__dindex_next(w->lv.index, &c, &got));
}

static void change(struct world *w, uint32_t d, int64_t dg, int64_t dc)
{
	w->gpu[d] += dg;
	w->core[d] += dc;
	policy__dindex_update(&w->lv, d);
}

static void test_random_changes_keep_the_order(void **state)
{
	struct world w;

	(void)state;
	init(&w, 0x9e3779b97f4a7c15ull);
	check_walk(&w, 0);
	for (int step = 0; step < 2000; step++) {
		uint32_t d = (uint32_t)(next(&w) % ND);
		int64_t dg = (int64_t)(next(&w) % 5) - 2, dc = (int64_t)(next(&w) % 3) * 10 - 10;

		change(&w, d, dg, dc);
		assert_non_null(w.lv.index);
		if (step % 97 == 0)
			check_walk(&w, (int64_t)(next(&w) % 900));
	}
	check_walk(&w, 0);
	check_walk(&w, 100);
	check_walk(&w, 801);
	arena_free(&w.a);
}

/* A trial takes from the domain the walk stands on and from others, then
 * gives it all back: the walk goes on as if nothing happened. */
static void test_walk_survives_undone_changes(void **state)
{
	struct world w;
	struct policy__dcursor c = {100, 0}, ref = {100, 0};
	uint32_t d, e;

	(void)state;
	init(&w, 42);
	while (policy__dindex_next(w.lv.index, &c, &d)) {
		uint32_t other = (d * 7 + 3) % ND;

		assert_true(policy__dindex_next(w.lv.index, &ref, &e));
		assert_int_equal(d, e);
		change(&w, d, -1, 0);
		change(&w, other, +3, 20);
		change(&w, other, -3, -20);
		change(&w, d, +1, 0);
	}
	assert_false(policy__dindex_next(w.lv.index, &ref, &e));
	arena_free(&w.a);
}

/* Few domains are scanned: no index is made. */
static void test_small_level_has_none(void **state)
{
	struct arena a = {0};
	int64_t g[8] = {0}, c[8] = {0}, e[8] = {0};
	struct policy_level lv = {.ndomains = 8, .free_gpu = g, .free_core = c, .empty_gpu = e};

	(void)state;
	assert_int_equal(policy__dindex_build(&lv, &a), 0);
	assert_null(lv.index);
	assert_true(lv.index_tried);
	arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_changes_keep_the_order),
	    cmocka_unit_test(test_walk_survives_undone_changes),
	    cmocka_unit_test(test_small_level_has_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
