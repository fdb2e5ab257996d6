/*
 * policy/dindex: a level's domains in (100 x free GPUs + free cores,
 * index) order, the order placement's tightest-first search tries them
 * in, all of them or those whose takes reach a gang's tier. Checked
 * against a sort of the counts themselves after every step of a long
 * random run of changes, and across changes undone mid-walk, as a
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
	/* Each domain's takes: its free GPUs times its width, halved for
	 * each further x, so they follow the GPUs and come back with them;
	 * widths up to 40 reach past the last tier (256). */
	uint32_t takes[ND * POLICY_TAKES + 1], width[ND + 1];
	uint64_t rng;
};

/* The tiers' floors, as the index's header says: a walk for n members
 * lets through the domains whose takes reach the largest at most n. */
static const uint32_t floors[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};

static uint32_t floor_of(uint32_t n)
{
	uint32_t f = 0;

	for (size_t k = 0; k < sizeof(floors) / sizeof(floors[0]) && floors[k] <= n; k++)
		f = floors[k];
	return f;
}

static void set_takes(struct world *w, uint32_t d)
{
	for (unsigned x = 0; x < POLICY_TAKES; x++)
		w->takes[d * POLICY_TAKES + x] =
		    w->gpu[d] > 0 ? (uint32_t)(w->gpu[d] * w->width[d]) >> x : 0;
}

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
	w->lv.takes = w->takes;
	for (uint32_t d = 0; d < ND; d++) {
		/* Mostly whole GPUs (0..8, many full), some cores, a few below
		 * zero (a node overcommitted by another scheduler). */
		w->gpu[d] = (int64_t)(next(w) % 12) - 2;
		w->gpu[d] = w->gpu[d] > 8 ? 0 : w->gpu[d];
		w->core[d] = next(w) % 4 == 0 ? (int64_t)(next(w) % 9) * 10 : 0;
		w->width[d] = (uint32_t)(next(w) % 41);
		set_takes(w, d);
	}
	assert_int_equal(policy__dindex_build(&w->lv, &w->a), 0);
	assert_non_null(w->lv.index);
}

/* The walk from kmin against every domain with key >= kmin (both
 * counts >= 0), sorted by (key, index); with n > 0, of those only the
 * ones whose takes x reach n's floor. */
static void check_walk_only(const struct world *w, int64_t kmin, unsigned x, uint32_t n)
{
	struct policy__dcursor c = {kmin, 0, NULL};
	uint32_t got;
	int64_t top = 0;

	if (n) {
		c.only = policy__dindex_only(w->lv.index, x, n);
		assert_non_null(c.only);
	}
	for (uint32_t d = 0; d < ND; d++)
		top = 100 * w->gpu[d] + w->core[d] > top ? 100 * w->gpu[d] + w->core[d] : top;
	for (int64_t k = kmin; k <= top; k++)
		for (uint32_t d = 0; d < ND; d++) {
			if (w->gpu[d] < 0 || w->core[d] < 0 || 100 * w->gpu[d] + w->core[d] != k)
				continue;
			if (n && w->takes[d * POLICY_TAKES + x] < floor_of(n))
				continue;
			assert_true(policy__dindex_next(w->lv.index, &c, &got));
			assert_int_equal(got, d);
		}
	assert_false(policy__dindex_next(w->lv.index, &c, &got));
}

static void check_walk(const struct world *w, int64_t kmin)
{
	check_walk_only(w, kmin, 0, 0);
}

/* The walks for gangs of every size 1 .. 300 (past the last tier), each
 * takes. */
static void check_walks_only(const struct world *w, int64_t kmin)
{
	for (unsigned x = 0; x < POLICY_TAKES; x++)
		for (uint32_t n = 1; n <= 300; n += n < 20 ? 1 : 7)
			check_walk_only(w, kmin, x, n);
}

static void change(struct world *w, uint32_t d, int64_t dg, int64_t dc)
{
	w->gpu[d] += dg;
	w->core[d] += dc;
	set_takes(w, d);
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
		if (step % 331 == 0)
			check_walks_only(&w, (int64_t)(next(&w) % 400));
	}
	check_walks_only(&w, 0);
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
	struct policy__dcursor c = {100, 0, NULL}, ref = {100, 0, NULL};
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
