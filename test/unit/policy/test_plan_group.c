/*
 * policy/podgroup.c: what a PodGroup asks beyond minMember. The
 * minResources gate (Volcano's enqueue) before and after pods exist,
 * enqueued PodGroups counted together against a quota, Inqueue read back
 * from the PodGroup, the cluster's capacity; minTaskMember.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench/synth.h"
#include "config/config.h"
#include "queue/queue.h"
#include "policy/plan.h"

static const char yaml[] = "resources: [nvidia.com/gpu]\n"
                           "queues:\n"
                           "  - name: small\n"
                           "    namespaces: [s]\n"
                           "    quota:\n"
                           "      nvidia.com/gpu: {nominal: 8, borrowingLimit: 0}\n";

struct world {
	struct synth s;
	struct config *cfg;
	struct queue_set *qs;
	struct plan plan;
	struct plan_memory keep;
};

static void world_init(struct world *w, int nodes)
{
	char name[16];

	memset(w, 0, sizeof(*w));
	assert_int_equal(synth_init(&w->s), 0);
	assert_int_equal(config_parse("t.yaml", yaml, strlen(yaml), &w->cfg, NULL), 0);
	assert_int_equal(queue_set_build(w->cfg, &w->qs), 0);
	for (int k = 0; k < nodes; k++) {
		snprintf(name, sizeof(name), "n-%d", k);
		synth_node(&w->s, name, "z", "r", 8, NULL);
	}
}

static void world_free(struct world *w)
{
	plan_free(&w->plan);
	plan_memory_free(&w->keep);
	queue_set_free(&w->qs);
	config_free(&w->cfg);
	synth_free(&w->s);
}

/* A Volcano PodGroup s/name: spec and status as JSON object bodies. */
static void vc_group(struct world *w, const char *name, const char *spec, const char *status)
{
	struct kubeapi_podgroup *g = calloc(1, sizeof(*g));
	struct kubeapi_decode_error err;
	unsigned long seq = ++w->s.seq;
	cJSON *o = synth_parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"s\","
	                       "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":"
	                       "\"1\",\"creationTimestamp\":\"2026-01-01T00:00:%02luZ\"},"
	                       "\"spec\":{%s},\"status\":{%s}}",
	                       name, seq, seq % 60, spec, status);

	assert_non_null(g);
	assert_int_equal(kubeapi_podgroup_decode(w->s.model, KUBEAPI_PG_VOLCANO, o, g, &err), 0);
	cJSON_Delete(o);
	idmap_put(&w->s.vcgroups, synth_key(&w->s, "s", name), g);
}

/* A pending pod of Volcano gang `group` (annotation), task `task` or NULL. */
static void vc_pod(struct world *w, const char *name, const char *group, const char *task, int gpus)
{
	struct kubeapi_pod *p = calloc(1, sizeof(*p));
	struct kubeapi_decode_error err;
	unsigned long seq = ++w->s.seq;
	cJSON *o = synth_parse(
	    "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"s\","
	    "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":\"1\","
	    "\"creationTimestamp\":\"2026-01-01T00:01:%02luZ\",\"annotations\":{"
	    "\"scheduling.k8s.io/group-name\":\"%s\"%s%s%s}},"
	    "\"spec\":{\"schedulerName\":\"volcano\",\"tolerations\":[{\"key\":"
	    "\"nvidia.com/gpu\",\"operator\":\"Exists\"}],\"containers\":[{\"name\":\"c\","
	    "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"%d\"}}}]},"
	    "\"status\":{\"phase\":\"Pending\"}}",
	    name, seq, seq % 60, group, task ? ",\"volcano.sh/task-spec\":\"" : "",
	    task ? task : "", task ? "\"" : "", gpus);

	assert_non_null(p);
	assert_int_equal(kubeapi_pod_decode(w->s.model, o, p, &err), 0);
	cJSON_Delete(o);
	idmap_put(&w->s.pods, synth_key(&w->s, "s", name), p);
}

static void cycle(struct world *w, int volcano_groups)
{
	struct plan_input in = {
	    .model = w->s.model,
	    .nodes = &w->s.nodes,
	    .pods = &w->s.pods,
	    .groups = &w->s.groups,
	    .vcgroups = &w->s.vcgroups,
	    .qs = w->qs,
	    .schedulers = (const uint32_t[]){synth_id(&w->s, "volcano")},
	    .nschedulers = 1,
	    .volcano_groups = (uint8_t)volcano_groups,
	};

	assert_int_equal(plan_cycle(&w->plan, &in, &w->keep), 0);
}

static const struct plan_gang *gang(struct world *w, const char *name)
{
	uint64_t key = plan_gang_key(synth_id(&w->s, "s"), synth_id(&w->s, name), 0);

	for (size_t k = 0; k < w->plan.ngangs; k++)
		if (w->plan.gangs[k].key == key)
			return &w->plan.gangs[k];
	return NULL;
}

static bool bound(struct world *w, const char *pod)
{
	uint32_t id = synth_id(&w->s, pod);

	for (size_t k = 0; k < w->plan.nbinds; k++)
		if (w->plan.binds[k].pod->name == id)
			return true;
	return false;
}

/* Enqueued in order while they fit the queue together; the third waits
 * on quota, a fourth on the cluster; without pods. Standing in for
 * Volcano only: otherwise a PodGroup without pods is not Muster's. */
static void test_enqueue_before_pods(void **state)
{
	struct world w;
	const struct plan_gang *g;

	(void)state;
	world_init(&w, 2); /* 16 GPUs; the queue has 8 */
	vc_group(&w, "a", "\"minMember\":2,\"minResources\":{\"nvidia.com/gpu\":\"4\"}", "");
	vc_group(&w, "b", "\"minMember\":2,\"minResources\":{\"nvidia.com/gpu\":\"4\"}", "");
	vc_group(&w, "c", "\"minMember\":2,\"minResources\":{\"nvidia.com/gpu\":\"1\"}", "");
	vc_group(&w, "d", "\"minMember\":2,\"minResources\":{\"nvidia.com/gpu\":\"17\"}", "");
	vc_group(&w, "e", "\"minMember\":2", "");
	cycle(&w, 0);
	assert_null(gang(&w, "a"));
	cycle(&w, 1);
	assert_true(gang(&w, "a")->enqueued && gang(&w, "b")->enqueued && gang(&w, "e")->enqueued);
	g = gang(&w, "c");
	assert_false(g->enqueued);
	assert_int_equal(g->state, PLAN_WAITING);
	assert_int_equal(g->block.why, PLAN_WHY_ENQUEUE);
	assert_string_equal(g->message, "gang s/c: PodGroup minResources need 1 nvidia.com/gpu; "
	                                "queue small is at 8/8 (running and enqueued PodGroups)");
	g = gang(&w, "d");
	assert_false(g->enqueued);
	assert_int_equal(g->block.node, -1);
	assert_string_equal(g->message, "gang s/d: PodGroup minResources ask 17 nvidia.com/gpu; "
	                                "the cluster's ready nodes have 16");
	/* The decisions stand in the next cycle, whatever the order. */
	cycle(&w, 1);
	assert_true(gang(&w, "a")->enqueued && gang(&w, "b")->enqueued);
	assert_false(gang(&w, "c")->enqueued);
	world_free(&w);
}

/* A PodGroup already Inqueue (said by the server) holds its minResources
 * against later ones; its pods are admitted; one that is not enqueued
 * keeps its pods waiting even though they fit. */
static void test_inqueue_read_back_and_pods_held(void **state)
{
	struct world w;
	const struct plan_gang *g;

	(void)state;
	world_init(&w, 2);
	vc_group(&w, "old", "\"minMember\":1,\"minResources\":{\"nvidia.com/gpu\":\"6\"}",
	         "\"phase\":\"Inqueue\"");
	vc_group(&w, "new", "\"minMember\":1,\"minResources\":{\"nvidia.com/gpu\":\"6\"}", "");
	vc_pod(&w, "new-0", "new", NULL, 1);
	cycle(&w, 1);
	g = gang(&w, "new");
	assert_false(g->enqueued);
	assert_int_equal(g->block.why, PLAN_WHY_ENQUEUE);
	assert_false(bound(&w, "new-0"));
	assert_true(gang(&w, "old")->enqueued);
	/* Without pods the old one is admitted as soon as they come. */
	vc_pod(&w, "old-0", "old", NULL, 6);
	cycle(&w, 1);
	assert_true(bound(&w, "old-0"));
	world_free(&w);
}

/* minTaskMember: two workers wait for the master; with room for two
 * members on the one node, the master and a worker are admitted. */
static void test_min_task_member(void **state)
{
	struct world w;
	const struct plan_gang *g;

	(void)state;
	world_init(&w, 1);
	vc_group(&w, "job", "\"minMember\":2,\"minTaskMember\":{\"worker\":1,\"master\":1}", "");
	vc_pod(&w, "worker-0", "job", "worker", 4);
	vc_pod(&w, "worker-1", "job", "worker", 4);
	cycle(&w, 0);
	g = gang(&w, "job");
	assert_int_equal(g->state, PLAN_INCOMPLETE);
	assert_int_equal(g->block.why, PLAN_WHY_MEMBERS);
	assert_int_equal(g->block.task, synth_id(&w.s, "master"));
	assert_string_equal(g->message,
	                    "gang s/job: task master has 0 of 1 members (minTaskMember)");
	vc_pod(&w, "master", "job", "master", 4);
	cycle(&w, 0);
	g = gang(&w, "job");
	assert_int_equal(g->state, PLAN_ADMITTED);
	assert_true(bound(&w, "master"));
	assert_int_equal(w.plan.nbinds, 2);
	world_free(&w);
}

/* Decoding minTaskMember: more than KUBEAPI_MAX_TASKS tasks, or a count
 * that is not an integer, is an error, not a silent cut. */
static void test_min_task_member_decode(void **state)
{
	struct synth s;
	struct kubeapi_podgroup g;
	struct kubeapi_decode_error err;
	char b[256];
	const char *bad[] = {
	    "{\"a\":1,\"b\":1,\"c\":1,\"d\":1,\"e\":1,\"f\":1,\"g\":1,\"h\":1,\"i\":1}",
	    "{\"a\":1.5}",
	    "{\"a\":\"1\"}",
	    "{\"a\":-1}",
	};

	(void)state;
	assert_int_equal(synth_init(&s), 0);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		cJSON *o = synth_parse("{\"metadata\":{\"name\":\"g\",\"namespace\":\"s\","
		                       "\"uid\":\"00000000-0000-0000-0000-000000000001\"},"
		                       "\"spec\":{\"minTaskMember\":%s}}",
		                       bad[k]);

		assert_int_equal(kubeapi_podgroup_decode(s.model, KUBEAPI_PG_VOLCANO, o, &g, &err),
		                 -EINVAL);
		assert_non_null(
		    strstr(kubeapi_decode_error_str(&err, b, sizeof(b)), "spec.minTaskMember"));
		cJSON_Delete(o);
	}
	synth_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_enqueue_before_pods),
	    cmocka_unit_test(test_inqueue_read_back_and_pods_held),
	    cmocka_unit_test(test_min_task_member),
	    cmocka_unit_test(test_min_task_member_decode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
