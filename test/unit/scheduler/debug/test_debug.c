/*
 * scheduler/debug/metrics.c and scheduler/debug/explain.c: histograms and API
 * counters as Prometheus reads them, and the explanation of a waiting
 * gang from the planner's verdict, on a hand-built snapshot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scheduler/debug/debug.h"
#include "scheduler/debug/metrics.h"

static void test_histogram_buckets(void **state)
{
	struct debug_metrics m;

	(void)state;
	debug_metrics_init(&m);
	debug_hist_observe(&m.cycle, 0.0005); /* first bucket (le 0.001) */
	debug_hist_observe(&m.cycle, 0.001);  /* on the bound: still le 0.001 */
	debug_hist_observe(&m.cycle, 0.07);   /* le 0.1 */
	debug_hist_observe(&m.cycle, 99);     /* +Inf */
	assert_int_equal(m.cycle.count, 4);
	assert_int_equal(m.cycle.counts[0], 2);
	assert_int_equal(m.cycle.counts[6], 1);
	assert_int_equal(m.cycle.counts[m.cycle.n], 1);
	assert_true(m.cycle.sum > 99.07 && m.cycle.sum < 99.072);
}

static void test_api_counts(void **state)
{
	struct debug_metrics m;

	(void)state;
	debug_metrics_init(&m);
	debug_metrics_api(&m, KUBEAPI_POST, 0, 201, 1500);
	debug_metrics_api(&m, KUBEAPI_POST, 0, 201, 2500);
	debug_metrics_api(&m, KUBEAPI_PATCH_STRATEGIC, 0, 0, 30000000); /* no answer */
	debug_metrics_api(&m, KUBEAPI_GET, 1, 200, 600000000);          /* a watch */
	assert_int_equal(m.api_codes[DEBUG_VERB_POST][201], 2);
	assert_int_equal(m.api_codes[DEBUG_VERB_PATCH][0], 1);
	assert_int_equal(m.api_codes[DEBUG_VERB_WATCH][200], 1);
	assert_int_equal(m.api[DEBUG_VERB_POST].count, 2);
	/* A watch is counted, not timed: its duration is not a latency. */
	assert_int_equal(m.api[DEBUG_VERB_WATCH].count, 0);
	assert_int_equal(m.api[DEBUG_VERB_GET].count, 0);
}

/* ---- explanations ------------------------------------------------------- */

static int64_t zeros[4];
static int64_t eight[4] = {8};
static const char *slot_names[] = {"nvidia.com/gpu"};
static const char *res_names[] = {"cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu"};

/* One queue "small" under the root, one slot (GPUs), two nodes with 4
 * free GPUs each. */
static void small_world(struct snap *sn, struct snap_queue *q, struct snap_node *n,
                        int64_t alloc[2][5], int64_t used[2][5])
{
	memset(sn, 0, sizeof(*sn));
	q[0] = (struct snap_queue){.name = "", .parent = -1, .cohort = 1, .weight = 1};
	q[0].nominal = q[0].usage = q[0].borrowing = q[0].lending = q[0].borrowed = q[0].lent =
	    zeros;
	q[1] = q[0];
	q[1].name = "small";
	q[1].parent = 0;
	q[1].cohort = 0;
	sn->queues = q;
	sn->nqueues = 2;
	sn->nslots = 1;
	sn->slot_name = slot_names;
	sn->slot_res = slot_names;
	sn->nres = 5;
	sn->res_name = res_names;
	for (int i = 0; i < 2; i++) {
		alloc[i][4] = 8;
		used[i][4] = 4;
		n[i] = (struct snap_node){.name = i ? "n1" : "n0",
		                          .ready = 1,
		                          .schedulable = 1,
		                          .alloc = alloc[i],
		                          .used = used[i],
		                          .reserved = zeros};
	}
	sn->nodes = n;
	sn->nnodes = 2;
}

static cJSON *explain(const struct snap *sn, const struct snap_gang *g)
{
	cJSON *doc = cJSON_CreateObject();

	debug_explain(sn, g, doc);
	return doc;
}

static const char *str_at(const cJSON *doc, const char *arr, int k)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, arr);
	const cJSON *e = cJSON_GetArrayItem(a, k);

	return cJSON_IsString(e) ? e->valuestring : "";
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

static void test_explain_quota(void **state)
{
	struct snap sn;
	struct snap_queue q[2];
	struct snap_node n[2];
	int64_t alloc[2][5] = {{0}}, used[2][5] = {{0}};
	struct snap_gang g = {.ns = "s", .name = "g2", .queue = 1, .req = eight, .min_member = 1};
	const char *pods[] = {"g2-0"};
	cJSON *doc, *by;

	(void)state;
	small_world(&sn, q, n, alloc, used);
	g.pods = pods;
	g.npending = 1;
	g.block = (struct plan_block){
	    .why = PLAN_WHY_QUOTA, .node = 1, .slot = 0, .usage = 8, .limit = 8, .need = 8};
	doc = explain(&sn, &g);
	by = cJSON_GetObjectItemCaseSensitive(doc, "blockedBy");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(by, "constraint")->valuestring,
	                    "quota");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(by, "level")->valuestring, "queue");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(by, "at")->valuestring, "small");
	assert_true(num(by, "usage") == 8 && num(by, "limit") == 8 && num(by, "need") == 8);
	assert_non_null(strstr(str_at(doc, "explain", 0), "queue small uses 8 of the 8"));
	assert_non_null(
	    strstr(str_at(doc, "wouldAdmit", 0), "8 nvidia.com/gpu freed in queue small"));
	assert_non_null(strstr(str_at(doc, "wouldAdmit", 1), "queue small"));
	assert_string_equal(
	    cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "pods"), 0), "name")
	        ->valuestring,
	    "g2-0");
	cJSON_Delete(doc);
}

/* 8 GPUs free in all, but 4 per node: a member of 8 fits nowhere. */
static void test_explain_fragmented(void **state)
{
	struct snap sn;
	struct snap_queue q[2];
	struct snap_node n[2];
	int64_t alloc[2][5] = {{0}}, used[2][5] = {{0}};
	struct snap_gang g = {.ns = "a", .name = "big", .queue = 1, .req = eight, .min_member = 1};
	cJSON *doc, *by;

	(void)state;
	small_world(&sn, q, n, alloc, used);
	g.block = (struct plan_block){
	    .why = PLAN_WHY_FIT, .placed = 0, .members = 1, .short_nodes = 2, .short_res = 4};
	g.block.rejected[POLICY_TAINT] = 3;
	doc = explain(&sn, &g);
	by = cJSON_GetObjectItemCaseSensitive(doc, "blockedBy");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(by, "constraint")->valuestring, "fit");
	assert_true(num(by, "freeInCluster") == 8);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(by, "fragmented")));
	assert_true(num(cJSON_GetObjectItemCaseSensitive(by, "rejected"), "taints") == 3);
	assert_non_null(strstr(str_at(doc, "explain", 1), "8 nvidia.com/gpu free in all"));
	assert_non_null(strstr(str_at(doc, "wouldAdmit", 0), "taints of 3 node(s)"));
	assert_non_null(strstr(str_at(doc, "wouldAdmit", 1), "whole nodes"));
	cJSON_Delete(doc);

	/* With one node full, 4 free in all: not fragmentation, room. */
	used[1][4] = 8;
	doc = explain(&sn, &g);
	by = cJSON_GetObjectItemCaseSensitive(doc, "blockedBy");
	assert_null(cJSON_GetObjectItemCaseSensitive(by, "fragmented"));
	assert_non_null(strstr(str_at(doc, "wouldAdmit", 1), "1 more member(s)"));
	cJSON_Delete(doc);
}

static void test_explain_members(void **state)
{
	struct snap sn;
	struct snap_queue q[2];
	struct snap_node n[2];
	int64_t alloc[2][5] = {{0}}, used[2][5] = {{0}};
	struct snap_gang g = {.ns = "a", .name = "half", .queue = 1, .req = zeros, .min_member = 4};
	const char *pods[] = {"h0", "h1", "h2"};
	cJSON *doc, *by;

	(void)state;
	small_world(&sn, q, n, alloc, used);
	g.pods = pods;
	g.npending = 3;
	g.block.why = PLAN_WHY_MEMBERS;
	doc = explain(&sn, &g);
	by = cJSON_GetObjectItemCaseSensitive(doc, "blockedBy");
	assert_true(num(by, "have") == 3 && num(by, "minMember") == 4);
	assert_string_equal(str_at(doc, "wouldAdmit", 0),
	                    "1 more pod(s) of the gang created (minMember 4)");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "pods")), 3);
	cJSON_Delete(doc);
}

/* Members held by gates are counted, and what would let the gang in is
 * their gates going. */
static void test_explain_gated_members(void **state)
{
	struct snap sn;
	struct snap_queue q[2];
	struct snap_node n[2];
	int64_t alloc[2][5] = {{0}}, used[2][5] = {{0}};
	struct snap_gang g = {.ns = "a", .name = "half", .queue = 1, .req = zeros, .min_member = 4};
	const char *pods[] = {"h0", "h1"};
	cJSON *doc, *by;

	(void)state;
	small_world(&sn, q, n, alloc, used);
	g.pods = pods;
	g.npending = 2;
	g.block = (struct plan_block){.why = PLAN_WHY_MEMBERS, .gated = 2};
	doc = explain(&sn, &g);
	by = cJSON_GetObjectItemCaseSensitive(doc, "blockedBy");
	assert_true(num(by, "have") == 2 && num(by, "gated") == 2);
	assert_string_equal(str_at(doc, "explain", 1),
	                    "2 more pod(s) wait for their schedulingGates");
	assert_string_equal(str_at(doc, "wouldAdmit", 0),
	                    "the gated pods' schedulingGates removed");
	cJSON_Delete(doc);
}

/* A member stating what Muster does not apply: named, with the field. */
static void test_explain_unsupported(void **state)
{
	struct snap sn;
	struct snap_queue q[2];
	struct snap_node n[2];
	int64_t alloc[2][5] = {{0}}, used[2][5] = {{0}};
	struct snap_gang g = {
	    .ns = "a", .name = "apart", .queue = 1, .req = zeros, .min_member = 2};
	const char *pods[] = {"apart-0", "apart-1"};
	cJSON *doc, *by;

	(void)state;
	small_world(&sn, q, n, alloc, used);
	g.pods = pods;
	g.npending = 2;
	g.block = (struct plan_block){.why = PLAN_WHY_UNSUPPORTED,
	                              .member = 1,
	                              .unsupported = KUBEAPI_UNSUP_POD_ANTI_AFFINITY};
	doc = explain(&sn, &g);
	by = cJSON_GetObjectItemCaseSensitive(doc, "blockedBy");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(by, "constraint")->valuestring,
	                    "unsupported");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(by, "pod")->valuestring, "apart-1");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(by, "field")->valuestring,
	                    "podAntiAffinity (required)");
	assert_string_equal(str_at(doc, "explain", 0),
	                    "unsupported: pod apart-1 states podAntiAffinity (required), which "
	                    "Muster does not apply");
	cJSON_Delete(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_histogram_buckets),
	    cmocka_unit_test(test_api_counts),
	    cmocka_unit_test(test_explain_quota),
	    cmocka_unit_test(test_explain_fragmented),
	    cmocka_unit_test(test_explain_members),
	    cmocka_unit_test(test_explain_gated_members),
	    cmocka_unit_test(test_explain_unsupported),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
