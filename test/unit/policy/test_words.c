/* policy/words: a verdict's facts into the exact sentences people read.
 * The planner's tests check the messages of real cycles; these pin the
 * words of each verdict on their own, including the ones a cycle rarely
 * reaches (a cohort, fragmentation, an unknown start). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "policy/plan.h"
#include "policy/words.h"

/* The sentences of plan_words_explain(), each list joined by " | ". */
struct said {
	char explain[2048], would[2048];
};

static void collect(void *data, enum plan_words_list list, const char *sentence)
{
	struct said *s = data;
	char *to = list == PLAN_WORDS_EXPLAIN ? s->explain : s->would;
	size_t len = strlen(to);

	snprintf(to + len, sizeof(s->explain) - len, "%s%s", len ? " | " : "", sentence);
}

static void explain(const struct plan_facts *f, struct said *s)
{
	memset(s, 0, sizeof(*s));
	plan_words_explain(f, collect, s);
}

static void test_quota_in_a_cohort(void **state)
{
	struct plan_facts f = {.why = PLAN_WHY_QUOTA,
	                       .ns = "ml",
	                       .name = "train",
	                       .cohort = true,
	                       .at = "research",
	                       .slot = "nvidia.com/gpu",
	                       .res = "nvidia.com/gpu",
	                       .usage = 60,
	                       .limit = 64,
	                       .need = 8};
	char buf[512];
	struct said s;

	(void)state;
	assert_string_equal(plan_words_message(&f, buf, sizeof(buf)),
	                    "gang ml/train: cohort research at 60/64 nvidia.com/gpu; the gang "
	                    "needs 8 more");
	explain(&f, &s);
	assert_string_equal(s.explain,
	                    "quota: cohort research uses 60 of the 64 nvidia.com/gpu it "
	                    "may use (nominal plus what it may borrow); the gang needs 8 "
	                    "more");
	assert_string_equal(
	    s.would, "4 nvidia.com/gpu freed in cohort research: its running gangs ending, "
	             "or preempted by a queue that may preempt | or more nvidia.com/gpu lent "
	             "into cohort research (its members' lendingLimit) or a larger nominal "
	             "quota there");
}

static void test_fit_fragmented_and_not(void **state)
{
	struct plan_facts f = {.why = PLAN_WHY_FIT,
	                       .ns = "ml",
	                       .name = "big",
	                       .placed = 2,
	                       .members = 4,
	                       .short_nodes = 5,
	                       .nodes = 9,
	                       .res = "nvidia.com/gpu",
	                       .free_total = 16,
	                       .ask = 16};
	char buf[512];
	struct said s;

	(void)state;
	f.rejected[POLICY_TAINT] = 3;
	f.rejected[POLICY_NOT_READY] = 1;
	assert_string_equal(plan_words_message(&f, buf, sizeof(buf)),
	                    "gang ml/big: 2 of 4 members fit; 0/9 nodes are available: 1 node(s) "
	                    "were not ready, 3 node(s) had untolerated taints, 5 Insufficient "
	                    "nvidia.com/gpu");
	assert_true(plan_facts_fragmented(&f));
	explain(&f, &s);
	assert_non_null(
	    strstr(s.explain, "16 nvidia.com/gpu free in all, enough for the gang's 16"));
	assert_string_equal(s.would, "tolerations for the taints of 3 node(s) it cannot use now | "
	                             "whole nodes freed as running pods end (the placement packs "
	                             "pods to keep nodes whole)");
	f.free_total = 15; /* not enough in all: more room, not fewer pieces */
	assert_false(plan_facts_fragmented(&f));
	explain(&f, &s);
	assert_non_null(strstr(s.would, "2 more member(s) worth of nvidia.com/gpu free"));
}

static void test_members_task_and_group(void **state)
{
	struct plan_facts f = {
	    .why = PLAN_WHY_MEMBERS, .ns = "a", .name = "g", .have = 3, .min_member = 4};
	char buf[256];

	(void)state;
	assert_string_equal(plan_words_message(&f, buf, sizeof(buf)),
	                    "gang a/g: 3 of 4 members exist (minMember 4)");
	f.task = "worker";
	f.task_min = 4;
	assert_string_equal(plan_words_message(&f, buf, sizeof(buf)),
	                    "gang a/g: task worker has 3 of 4 members (minTaskMember)");
	f.no_group = true;
	assert_string_equal(plan_words_message(&f, buf, sizeof(buf)),
	                    "gang a/g: PodGroup a/g not found");
}

static void test_minresources_cluster_and_quota(void **state)
{
	struct plan_facts f = {.why = PLAN_WHY_ENQUEUE,
	                       .ns = "a",
	                       .name = "g",
	                       .cluster = true,
	                       .res = "memory",
	                       .usage = 64LL << 30,
	                       .need = 128LL << 30};
	char buf[256];

	(void)state;
	assert_string_equal(plan_words_message(&f, buf, sizeof(buf)),
	                    "gang a/g: PodGroup minResources ask 128Gi memory; the cluster's ready "
	                    "nodes have 64Gi");
	f.cluster = false;
	f.at = "team";
	f.slot = "memory";
	f.limit = 96LL << 30;
	assert_string_equal(plan_words_message(&f, buf, sizeof(buf)),
	                    "gang a/g: PodGroup minResources need 128Gi memory; queue team is at "
	                    "64Gi/96Gi (running and enqueued PodGroups)");
}

static void test_preempting_and_start(void **state)
{
	struct plan_facts f = {.why = PLAN_WHY_PREEMPTING,
	                       .ns = "a",
	                       .name = "g",
	                       .victims = "b/x, b/y",
	                       .nvictims = 2};
	char buf[256], out[512];

	(void)state;
	assert_string_equal(plan_words_message(&f, buf, sizeof(buf)),
	                    "gang a/g: preempting 2 gang(s) to make room: b/x, b/y");
	f.victims = NULL;
	f.pods_left = 5;
	assert_string_equal(plan_words_message(&f, buf, sizeof(buf)),
	                    "gang a/g: preempting 2 gang(s) to make room: waiting for 5 pod(s) to "
	                    "end");
	assert_string_equal(plan_words_start("gang a/g: x", PLAN_NEVER, 3, out, sizeof(out)),
	                    "gang a/g: x; expected start unknown (reservation on 3 node(s))");
	assert_string_equal(plan_words_start("gang a/g: x", 86400, 1, out, sizeof(out)),
	                    "gang a/g: x; expected start 1970-01-02T00:00:00Z (reservation on 1 "
	                    "node(s))");
	assert_string_equal(plan_words_tail("gang a/g: 2 of 4 members fit"), "2 of 4 members fit");
	/* The prefix of one gang and the tail of another's message: the
	 * second's verdict said of the first (the planner's memo). */
	assert_int_equal(plan_words_prefix("b", "h", out, sizeof(out)), strlen("gang b/h: "));
	strcat(out, plan_words_tail("gang a/g: 2 of 4 members fit"));
	assert_string_equal(out, "gang b/h: 2 of 4 members fit");
	assert_int_equal(plan_words_prefix("b", "h", out, 6), 5); /* cut, as snprintf() cuts */
	assert_string_equal(out, "gang ");
}

static void test_reservation_sentence_follows_the_verdict(void **state)
{
	struct plan_facts f = {.why = PLAN_WHY_STRICT_FIFO,
	                       .queue = "q",
	                       .reserved = true,
	                       .resv_nodes = 2,
	                       .start_s = PLAN_NEVER};
	struct said s;

	(void)state;
	explain(&f, &s);
	assert_string_equal(s.explain, "order: queue q is StrictFIFO, and the gang at its head "
	                               "waits | reservation: it holds 2 node(s); the start is "
	                               "unknown because running work there declares no runtime");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_quota_in_a_cohort),
	    cmocka_unit_test(test_fit_fragmented_and_not),
	    cmocka_unit_test(test_members_task_and_group),
	    cmocka_unit_test(test_minresources_cluster_and_quota),
	    cmocka_unit_test(test_preempting_and_start),
	    cmocka_unit_test(test_reservation_sentence_follows_the_verdict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
