/*
 * scheduler/usage: fair sharing's memory as the document kept in a
 * ConfigMap. A tree that remembers is written and read back into a tree
 * of another configuration: what keeps its name keeps its memory; a
 * document that is not one is refused whole or in part, never taken
 * with values the tree could not hold.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "queue/queue.h"
#include "scheduler/sched.h"

static const char two_teams[] = "resources: [cpu, nvidia.com/gpu]\n"
                                "fairSharing: {halfLife: 6h}\n"
                                "cohorts:\n"
                                "  - name: lab\n"
                                "    queues:\n"
                                "      - {name: a, quota: {nvidia.com/gpu: {nominal: 8}}}\n"
                                "      - {name: b, quota: {nvidia.com/gpu: {nominal: 8}}}\n";

struct fixture {
	struct config *cfg;
	struct queue_set *qs;
};

static void setup(struct fixture *f, const char *yaml)
{
	struct config_errors errs;

	config_errors_init(&errs);
	if (config_parse("t.yaml", yaml, strlen(yaml), &f->cfg, &errs) != 0)
		fail_msg("config: %s", errs.n ? errs.v[0].msg : "?");
	assert_int_equal(queue_set_build(f->cfg, &f->qs), 0);
}

static void teardown(struct fixture *f)
{
	queue_set_free(&f->qs);
	config_free(&f->cfg);
}

static int node(const struct fixture *f, const char *name)
{
	int n = queue_set_find_node(f->qs, name);

	if (n < 0)
		fail_msg("no node %s", name);
	return n;
}

/* a held 12 GPUs for 6 h (one half-life): it remembers 6. */
static void remember(struct fixture *f)
{
	struct queue_tree *t = queue_set_tree(f->qs);
	int64_t req[2] = {0, 12};

	queue_tree_age(t, 1000);
	assert_int_equal(queue_tree_charge(t, node(f, "a"), req, +1), 0);
	queue_tree_hold(t);
	queue_tree_age(t, 1000 + 6 * 3600);
}

static void test_written_and_read_back(void **state)
{
	struct fixture f, g;
	char *doc = NULL;
	size_t kept;
	int gpu;

	(void)state;
	setup(&f, two_teams);
	assert_int_equal(sched_usage_encode(f.qs, &doc), -ENOENT); /* nothing yet */
	remember(&f);
	assert_int_equal(sched_usage_encode(f.qs, &doc), 0);
	assert_non_null(strstr(doc, "\"a\":{\"nvidia.com/gpu\":[6,12]}"));
	assert_non_null(strstr(doc, "\"at\":22600"));
	/* Into a configuration that renamed b to c and added a flavor slot. */
	setup(&g, "resources: [nvidia.com/gpu, cpu]\n"
	          "fairSharing: {halfLife: 6h}\n"
	          "cohorts:\n"
	          "  - name: lab\n"
	          "    queues:\n"
	          "      - {name: c, quota: {nvidia.com/gpu: {nominal: 8}}}\n"
	          "      - {name: a, quota: {nvidia.com/gpu: {nominal: 8}}}\n");
	assert_int_equal(sched_usage_decode(g.qs, doc, strlen(doc), &kept), 0);
	assert_int_equal(kept, 3); /* a, lab, root: one slot each */
	gpu = queue_set_find_slot(g.qs, "nvidia.com/gpu");
	assert_int_equal(gpu, 0);
	assert_float_equal(queue_tree_remembered(queue_set_tree_c(g.qs), node(&g, "a"), 0), 6.0,
	                   1e-9);
	assert_int_equal(queue_tree_held(queue_set_tree_c(g.qs), node(&g, "a"), 0), 12);
	assert_float_equal(queue_tree_remembered(queue_set_tree_c(g.qs), node(&g, "c"), 0), 0.0,
	                   1e-12);
	assert_int_equal(queue_tree_memory_at(queue_set_tree_c(g.qs)), 1000 + 6 * 3600);
	free(doc);
	teardown(&g);
	teardown(&f);
}

static void test_bad_documents_are_refused(void **state)
{
	static const char *const bad[] = {
	    "",
	    "[]",
	    "{\"version\":2,\"at\":5,\"nodes\":{}}",
	    "{\"version\":1,\"nodes\":{}}",
	    "{\"version\":1,\"at\":-5,\"nodes\":{}}",
	    "{\"version\":1,\"at\":5,\"nodes\":[]}",
	    "{\"version\":1,\"at\":5,\"nodes\":{\"a\":[1,2]}}",
	    "{\"version\":1,\"at\":5,\"nodes\":{\"a\":{\"nvidia.com/gpu\":[1]}}}",
	    "{\"version\":1,\"at\":5,\"nodes\":{\"a\":{\"nvidia.com/gpu\":[-1,0]}}}",
	    "{\"version\":1,\"at\":5,\"nodes\":{\"a\":{\"nvidia.com/gpu\":[1,-2]}}}",
	    "{\"version\":1,\"at\":5,\"nodes\":{\"a\":{\"nvidia.com/gpu\":[1e400,0]}}}",
	    "{\"version\":1,\"at\":5,\"nodes\":{\"a\":{\"nvidia.com/gpu\":[\"1\",0]}}}",
	    "{\"version\":1,\"at\":5,\"nodes\":{\"a\":{\"nvidia.com/gpu\":[1,1e30]}}}",
	};
	struct fixture f;
	size_t kept;

	(void)state;
	setup(&f, two_teams);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		if (sched_usage_decode(f.qs, bad[k], strlen(bad[k]), &kept) != -EPROTO)
			fail_msg("taken: %s", bad[k]);
	/* Nothing was taken from any of them. */
	assert_int_equal(queue_tree_memory_at(queue_set_tree_c(f.qs)), QUEUE_NO_TIME);
	/* Names the configuration does not have are skipped, not refused. */
	{
		static const char other[] = "{\"version\":1,\"at\":5,\"nodes\":{\"gone\":{\"x\":[1,"
		                            "1]},\"a\":{\"memory\":[1,1]}}}";

		assert_int_equal(sched_usage_decode(f.qs, other, strlen(other), &kept), 0);
	}
	assert_int_equal(kept, 0);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_written_and_read_back),
	    cmocka_unit_test(test_bad_documents_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
