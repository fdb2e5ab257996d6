/*
 * queue/quota: admission by quota, borrowing and lending over two and three
 * levels, and fair-share order, with numbers small enough to check by hand
 * (the expected values are worked out in the comments).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "queue/quota.h"

#define U QUEUE_UNLIMITED

static int64_t one[1];

/* Does a request of `gpus` (one slot) fit queue q? */
static int fits1(struct queue_tree *t, int q, int64_t gpus)
{
	one[0] = gpus;
	return queue_tree_fits(t, q, one).fits;
}

static void use1(struct queue_tree *t, int q, int64_t gpus)
{
	one[0] = gpus;
	assert_int_equal(queue_tree_charge(t, q, one, +1), 0);
}

/* research: a {nominal 16, lending 8}, b {nominal 16}.
 * Q(research) = lend(a) + lend(b) = 8 + 16 = 24; a keeps 8 for itself. */
static void test_two_levels_borrow_and_lend(void **state)
{
	struct queue_tree *t;
	struct queue_verdict v;
	int research, a, b;

	(void)state;
	assert_int_equal(queue_tree_new(1, &t), 0);
	research = queue_tree_add_cohort(t, 0, "research", 1);
	a = queue_tree_add_queue(t, research, "a", 1);
	b = queue_tree_add_queue(t, research, "b", 1);
	assert_int_equal(queue_tree_set_quota(t, a, 0, 16, U, 8), 0);
	assert_int_equal(queue_tree_set_quota(t, b, 0, 16, U, U), 0);
	queue_tree_finalize(t);
	assert_int_equal(queue_tree_quota(t, research, 0), 24);
	/* b alone: its 16 plus the 8 a lends, never a's reserved 8. */
	assert_true(fits1(t, b, 24));
	assert_false(fits1(t, b, 25));
	v = queue_tree_fits(t, b, (int64_t[]){25});
	assert_int_equal(v.node, 0); /* the root pool is what runs out */
	assert_int_equal(v.demand, 25);
	assert_int_equal(v.limit, 24);
	/* a alone may use everything: its 16 and b's 16. */
	assert_true(fits1(t, a, 32));
	assert_false(fits1(t, a, 33));
	/* a uses 12 (4 drawn from the pool), b then gets 24 - 4 = 20. */
	use1(t, a, 12);
	assert_true(fits1(t, b, 20));
	assert_false(fits1(t, b, 21));
	use1(t, b, 20);
	/* Full: 12 + 20 = 32 = both nominals. Nothing more fits anywhere. */
	assert_false(fits1(t, a, 1));
	assert_false(fits1(t, b, 1));
	assert_int_equal(queue_tree_demand(t, research, 0), 24);
	queue_tree_free(&t);
	assert_null(t);
}

/* a {nominal 4, borrowing 2}, b {nominal 8}: a stops at 4 + 2 however
 * much b lends. b {nominal 8, lending 3}: a gets at most 4 + 3. */
static void test_borrowing_and_lending_limits(void **state)
{
	struct queue_tree *t;
	struct queue_verdict v;
	int a, b;

	(void)state;
	assert_int_equal(queue_tree_new(1, &t), 0);
	a = queue_tree_add_queue(t, 0, "a", 1);
	b = queue_tree_add_queue(t, 0, "b", 1);
	assert_int_equal(queue_tree_set_quota(t, a, 0, 4, 2, U), 0);
	assert_int_equal(queue_tree_set_quota(t, b, 0, 8, U, U), 0);
	queue_tree_finalize(t);
	assert_true(fits1(t, a, 6));
	v = queue_tree_fits(t, a, (int64_t[]){7});
	assert_false(v.fits);
	assert_int_equal(v.node, a);
	assert_int_equal(v.limit, 6);
	queue_tree_free(&t);

	assert_int_equal(queue_tree_new(1, &t), 0);
	a = queue_tree_add_queue(t, 0, "a", 1);
	b = queue_tree_add_queue(t, 0, "b", 1);
	assert_int_equal(queue_tree_set_quota(t, a, 0, 4, U, U), 0);
	assert_int_equal(queue_tree_set_quota(t, b, 0, 8, U, 3), 0);
	queue_tree_finalize(t);
	assert_int_equal(queue_tree_quota(t, 0, 0), 7); /* 4 + 3 */
	assert_true(fits1(t, a, 7));
	assert_false(fits1(t, a, 8));
	/* a borrowed the 3 b lends: b's reserved 5 stay admissible, the 3 lent
	 * come back only through reclaim (preemption), not by admission. */
	use1(t, a, 7);
	assert_true(fits1(t, b, 5));
	assert_false(fits1(t, b, 6));
	queue_tree_free(&t);
}

/* root - org - research {q1: 8, q2: 8}
 *            - prod {q3: nominal 16, lending 4}
 * Q(research) = 16, Q(prod) = lend(q3) = 4, Q(org) = 16 + 4 = 20. */
static void test_three_levels(void **state)
{
	struct queue_tree *t;
	int org, research, prod, q1, q2, q3;

	(void)state;
	assert_int_equal(queue_tree_new(1, &t), 0);
	org = queue_tree_add_cohort(t, 0, "org", 1);
	research = queue_tree_add_cohort(t, org, "research", 1);
	prod = queue_tree_add_cohort(t, org, "prod", 1);
	q1 = queue_tree_add_queue(t, research, "q1", 1);
	q2 = queue_tree_add_queue(t, research, "q2", 1);
	q3 = queue_tree_add_queue(t, prod, "q3", 1);
	assert_int_equal(queue_tree_set_quota(t, q1, 0, 8, U, U), 0);
	assert_int_equal(queue_tree_set_quota(t, q2, 0, 8, U, U), 0);
	assert_int_equal(queue_tree_set_quota(t, q3, 0, 16, U, 4), 0);
	queue_tree_finalize(t);
	assert_int_equal(queue_tree_quota(t, research, 0), 16);
	assert_int_equal(queue_tree_quota(t, prod, 0), 4);
	assert_int_equal(queue_tree_quota(t, org, 0), 20);
	/* q1 alone: 8 + q2's 8 + the 4 q3 lends = 20. */
	assert_true(fits1(t, q1, 20));
	assert_false(fits1(t, q1, 21));
	/* q3 alone: its 12 reserved + its 4 lent + research's 16 = 32. */
	assert_true(fits1(t, q3, 32));
	assert_false(fits1(t, q3, 33));
	/* research full (16): q3 keeps 12 + 4 and borrows nothing more. */
	use1(t, q1, 16);
	assert_true(fits1(t, q3, 16));
	assert_false(fits1(t, q3, 17));
	/* q1 took q2's 8, but prod still lends 4 to org: q2 may borrow those. */
	assert_true(fits1(t, q2, 4));
	assert_false(fits1(t, q2, 5));
	/* Release q1's gang: all of it is available again. */
	one[0] = 16;
	assert_int_equal(queue_tree_charge(t, q1, one, -1), 0);
	assert_int_equal(queue_tree_demand(t, org, 0), 0);
	assert_int_equal(queue_tree_demand(t, 0, 0), 0);
	assert_true(fits1(t, q2, 20));
	queue_tree_free(&t);
}

/* Two slots (cpu millicores, gpus): the verdict names the slot that fails. */
static void test_the_verdict_names_the_slot(void **state)
{
	struct queue_tree *t;
	struct queue_verdict v;
	int a;

	(void)state;
	assert_int_equal(queue_tree_new(2, &t), 0);
	a = queue_tree_add_queue(t, 0, "a", 1);
	assert_int_equal(queue_tree_set_quota(t, a, 0, 64000, U, U), 0);
	assert_int_equal(queue_tree_set_quota(t, a, 1, 8, U, U), 0);
	queue_tree_finalize(t);
	v = queue_tree_fits(t, a, (int64_t[]){32000, 9});
	assert_false(v.fits);
	assert_int_equal(v.slot, 1);
	assert_int_equal(v.demand, 9);
	assert_int_equal(v.limit, 8);
	assert_true(queue_tree_fits(t, a, (int64_t[]){64000, 8}).fits);
	queue_tree_free(&t);
}

/* Pool 20 (a: nominal 10, weight 1; b: nominal 10, weight 2).
 * a uses 14: over by 4 = 0.2 of the pool, share 0.2 / 1 = 0.2.
 * b uses 16: over by 6 = 0.3 of the pool, share 0.3 / 2 = 0.15.
 * b is further below its fair share: it goes first. */
static void test_fair_share_with_weights(void **state)
{
	struct queue_tree *t;
	int c, a, b;

	(void)state;
	assert_int_equal(queue_tree_new(1, &t), 0);
	c = queue_tree_add_cohort(t, 0, "c", 1);
	a = queue_tree_add_queue(t, c, "a", 1);
	b = queue_tree_add_queue(t, c, "b", 2);
	assert_int_equal(queue_tree_set_quota(t, a, 0, 10, U, U), 0);
	assert_int_equal(queue_tree_set_quota(t, b, 0, 10, U, U), 0);
	queue_tree_finalize(t);
	assert_true(queue_tree_share(t, a, a, NULL) == 0.0); /* within quota */
	use1(t, a, 9);
	assert_true(queue_tree_share(t, a, a, NULL) == 0.0);
	use1(t, a, 5);
	use1(t, b, 6); /* b at 6: within quota */
	assert_true(queue_tree_share(t, b, b, NULL) == 0.0);
	/* b at 16 is not admissible with a at 14 (pool 20): compare shares as
	 * if each asked for more, with the request added. */
	assert_float_equal(queue_tree_share(t, a, a, NULL), 0.2, 1e-12);
	assert_float_equal(queue_tree_share(t, b, b, (int64_t[]){10}), 0.15, 1e-12);
	assert_true(queue_tree_share(t, b, b, (int64_t[]){10}) < queue_tree_share(t, a, a, NULL));
	/* With a request of 2 on each: a 16 -> 6/20 = 0.3; b 8 -> 0. */
	assert_float_equal(queue_tree_share(t, a, a, (int64_t[]){2}), 0.3, 1e-12);
	assert_float_equal(queue_tree_share(t, b, b, (int64_t[]){2}), 0.0, 1e-12);
	/* A cohort's share comes from its queue's request too: c holds 14 + 6
	 * = 20 of its pool of 20; a's 2 more put it 2 over, 2 / 20 = 0.1 of
	 * the root's pool (which is c's 20). */
	assert_float_equal(queue_tree_share(t, c, a, NULL), 0.0, 1e-12);
	assert_float_equal(queue_tree_share(t, c, a, (int64_t[]){2}), 0.1, 1e-12);
	queue_tree_free(&t);
}

/*
 * Memory with a half-life of 1 h (3,600,000 ms), one cohort of a and b
 * with 8 each (pool 16). a holds 16 from t = 0 to t = 7200 (two
 * half-lives): it remembers 16 x (1 - 1/4) = 12. Then it holds nothing:
 * an hour later, 6; b never held anything and remembers 0.
 */
static void test_memory_decays_by_half_lives(void **state)
{
	struct queue_tree *t;
	int lab, a, b;

	(void)state;
	assert_int_equal(queue_tree_new(1, &t), 0);
	lab = queue_tree_add_cohort(t, 0, "lab", 1);
	a = queue_tree_add_queue(t, lab, "a", 1);
	b = queue_tree_add_queue(t, lab, "b", 1);
	assert_int_equal(queue_tree_set_quota(t, a, 0, 8, U, U), 0);
	assert_int_equal(queue_tree_set_quota(t, b, 0, 8, U, U), 0);
	queue_tree_finalize(t);
	queue_tree_set_half_life(t, 3600 * 1000);

	queue_tree_age(t, 1000); /* starts the clock */
	assert_int_equal(queue_tree_memory_at(t), 1000);
	use1(t, a, 16);
	queue_tree_hold(t);
	queue_tree_reset_usage(t);
	queue_tree_age(t, 1000 + 7200);
	assert_float_equal(queue_tree_remembered(t, a, 0), 12.0, 1e-9);
	assert_float_equal(queue_tree_remembered(t, lab, 0), 12.0, 1e-9); /* its draw, 16 */
	assert_float_equal(queue_tree_remembered(t, b, 0), 0.0, 1e-12);
	queue_tree_hold(t); /* now a holds nothing */
	queue_tree_age(t, 1000 + 7200 + 3600);
	assert_float_equal(queue_tree_remembered(t, a, 0), 6.0, 1e-9);

	/* The share counts max(usage + request, memory): a at 0 asking 2
	 * counts 6, within its 8: 0. Put back 14 and it counts 14: (14 - 8)
	 * / 16. b asking 10 counts 10: 2 / 16 < a's, so b goes first. */
	assert_float_equal(queue_tree_share(t, a, a, (int64_t[]){2}), 0.0, 1e-12);
	assert_int_equal(queue_tree_recall(t, a, 0, 14.0, 0, 1000 + 7200 + 3600), 0);
	assert_float_equal(queue_tree_share(t, a, a, (int64_t[]){2}), 6.0 / 16, 1e-12);
	assert_float_equal(queue_tree_share(t, b, b, (int64_t[]){10}), 2.0 / 16, 1e-12);
	/* Admission never looks at memory: a may still take all 16. */
	assert_true(fits1(t, a, 16));
	/* Off, the share is as without memory. */
	queue_tree_set_half_life(t, 0);
	assert_float_equal(queue_tree_share(t, a, a, (int64_t[]){2}), 0.0, 1e-12);
	/* A clock that goes back restarts from there; nothing decays. */
	queue_tree_set_half_life(t, 3600 * 1000);
	queue_tree_age(t, 500);
	assert_int_equal(queue_tree_memory_at(t), 500);
	assert_float_equal(queue_tree_remembered(t, a, 0), 14.0, 1e-12);
	assert_int_equal(queue_tree_recall(t, a, 0, -1.0, 0, 500), -22);
	assert_int_equal(queue_tree_recall(t, a, 1, 1.0, 0, 500), -22);
	assert_int_equal(queue_tree_recall(t, 99, 0, 1.0, 0, 500), -22);
	queue_tree_free(&t);
}

static void test_bad_input_is_refused(void **state)
{
	struct queue_tree *t;
	int a;

	(void)state;
	assert_int_equal(queue_tree_new(0, &t), -22);
	assert_int_equal(queue_tree_new(QUEUE_MAX_SLOTS + 1, &t), -22);
	assert_int_equal(queue_tree_new(1, &t), 0);
	a = queue_tree_add_queue(t, 0, "a", 1);
	assert_int_equal(queue_tree_add_queue(t, a, "under-a-queue", 1), -22);
	assert_int_equal(queue_tree_add_cohort(t, 0, "zero-weight", 0), -22);
	assert_int_equal(queue_tree_add_cohort(t, 99, "no-parent", 1), -22);
	assert_int_equal(queue_tree_set_quota(t, a, 0, 4, U, 5), -22); /* lending > nominal */
	assert_int_equal(queue_tree_set_quota(t, a, 0, -1, U, U), -22);
	assert_int_equal(queue_tree_set_quota(t, a, 1, 4, U, U), -22); /* no such slot */
	assert_int_equal(queue_tree_set_quota(t, 0, 0, 4, U, U), -22); /* a cohort */
	assert_int_equal(queue_tree_charge(t, 0, one, +1), -22);
	assert_false(queue_tree_fits(t, 0, one).fits);
	assert_string_equal(queue_tree_name(t, a), "a");
	assert_int_equal(queue_tree_parent(t, a), 0);
	assert_int_equal(queue_tree_size(t), 2);
	queue_tree_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_levels_borrow_and_lend),
	    cmocka_unit_test(test_borrowing_and_lending_limits),
	    cmocka_unit_test(test_three_levels),
	    cmocka_unit_test(test_the_verdict_names_the_slot),
	    cmocka_unit_test(test_fair_share_with_weights),
	    cmocka_unit_test(test_memory_decays_by_half_lives),
	    cmocka_unit_test(test_bad_input_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
