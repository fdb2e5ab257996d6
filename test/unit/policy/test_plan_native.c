/*
 * Native PodGroups (scheduling.k8s.io/v1beta1) in the planner: a gang of
 * minCount members; a basic group's pods placed one by one; the topology
 * constraint as a hard rule, whole gangs and later members alike; the
 * group's own priority; the message when no domain holds the gang or
 * the key is not a configured level; and preemption by disruptionMode
 * (single: members one by one; all: the gang whole).
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

#include "base/intern.h"
#include "bench/synth.h"
#include "config/config.h"
#include "queue/queue.h"
#include "policy/plan.h"

/* Queue q's head: the test worlds' queues differ only after it. */
#define QUEUE_Q                                                                                    \
	"resources: [nvidia.com/gpu]\n"                                                            \
	"topology:\n"                                                                              \
	"  levels: [topology.kubernetes.io/zone, muster.dev/rack, kubernetes.io/hostname]\n"       \
	"queues:\n"                                                                                \
	"  - name: q\n"                                                                            \
	"    namespaces: [s]\n"

static const char yaml[] = QUEUE_Q "    quota:\n"
                                   "      nvidia.com/gpu: {nominal: 1000}\n"
                                   "  - name: tiny\n"
                                   "    quota:\n"
                                   "      nvidia.com/gpu: {nominal: 1, borrowingLimit: 0}\n";

struct world {
	struct synth s;
	struct idmap natgroups, workloads;
	struct config *cfg;
	struct queue_set *qs;
	struct plan plan;
	struct plan_memory keep;
};

/* Queue q again, now preempting lower priorities within itself. */
static const char yaml_preempt[] = QUEUE_Q "    preemption: {withinQueue: LowerPriority}\n"
                                           "    quota:\n"
                                           "      nvidia.com/gpu: {nominal: 1000}\n";

/* racks x per_rack nodes of 8 GPUs, one zone; rack r's nodes r-0, r-1...;
 * the queues of `text`. */
static void world_init_with(struct world *w, const char *text, int racks, int per_rack)
{
	char name[16], rack[8];

	memset(w, 0, sizeof(*w));
	assert_int_equal(synth_init(&w->s), 0);
	assert_int_equal(config_parse("t.yaml", text, strlen(text), &w->cfg, NULL), 0);
	assert_int_equal(queue_set_build(w->cfg, &w->qs), 0);
	for (int r = 0; r < racks; r++)
		for (int k = 0; k < per_rack; k++) {
			snprintf(rack, sizeof(rack), "r%d", r);
			snprintf(name, sizeof(name), "r%d-%d", r, k);
			synth_node(&w->s, name, "z", rack, 8, NULL);
		}
}

static void world_init(struct world *w, int racks, int per_rack)
{
	world_init_with(w, yaml, racks, per_rack);
}

static void world_free(struct world *w)
{
	const struct idmap_slot *e;

	IDMAP_FOREACH(&w->natgroups, i, e) {
		kubeapi_podgroup_release(w->s.model, (void *)e->value);
		free((void *)e->value);
	}
	idmap_free(&w->natgroups);
	IDMAP_FOREACH(&w->workloads, i, e) {
		kubeapi_workload_release(w->s.model, (void *)e->value);
		free((void *)e->value);
	}
	idmap_free(&w->workloads);
	plan_free(&w->plan);
	plan_memory_free(&w->keep);
	queue_set_free(&w->qs);
	config_free(&w->cfg);
	synth_free(&w->s);
}

/* A native PodGroup s/name; spec as a JSON object body. */
static void nat_group(struct world *w, const char *name, const char *spec)
{
	struct kubeapi_podgroup *g = calloc(1, sizeof(*g));
	struct kubeapi_decode_error err;
	unsigned long seq = ++w->s.seq;
	cJSON *o = synth_parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"s\","
	                       "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":"
	                       "\"1\",\"creationTimestamp\":\"2026-01-01T00:00:%02luZ\"},"
	                       "\"spec\":{%s}}",
	                       name, seq, seq % 60, spec);

	assert_non_null(g);
	assert_int_equal(kubeapi_podgroup_decode(w->s.model, KUBEAPI_PG_NATIVE, o, g, &err), 0);
	cJSON_Delete(o);
	assert_int_equal(idmap_put(&w->natgroups, synth_key(&w->s, "s", name), g), 0);
}

/* A Workload s/name with labels (a JSON object body). */
static void workload(struct world *w, const char *name, const char *labels)
{
	struct kubeapi_workload *v = calloc(1, sizeof(*v));
	struct kubeapi_decode_error err;
	cJSON *o = synth_parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"s\","
	                       "\"resourceVersion\":\"1\",\"labels\":{%s}},\"spec\":{}}",
	                       name, labels);

	assert_non_null(v);
	assert_int_equal(kubeapi_workload_decode(w->s.model, o, v, &err), 0);
	cJSON_Delete(o);
	assert_int_equal(idmap_put(&w->workloads, synth_key(&w->s, "s", name), v), 0);
}

/* A pod of Muster's in native group `group` asking gpus, bound to `node`
 * (NULL: pending). */
static void nat_pod(struct world *w, const char *name, const char *group, int gpus,
                    const char *node)
{
	struct kubeapi_pod *p = calloc(1, sizeof(*p));
	struct kubeapi_decode_error err;
	unsigned long seq = ++w->s.seq;
	char bind[64] = "";
	cJSON *o;

	if (node)
		snprintf(bind, sizeof(bind), "\"nodeName\":\"%s\",", node);
	o = synth_parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"s\","
	                "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":\"1\","
	                "\"creationTimestamp\":\"2026-01-01T00:01:%02luZ\"},"
	                "\"spec\":{%s\"schedulerName\":\"muster\","
	                "\"schedulingGroup\":{\"podGroupName\":\"%s\"},"
	                "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}],"
	                "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
	                "{\"nvidia.com/gpu\":\"%d\"}}}]},"
	                "\"status\":{\"phase\":\"%s\"}}",
	                name, seq, seq % 60, bind, group, gpus, node ? "Running" : "Pending");
	assert_non_null(p);
	assert_int_equal(kubeapi_pod_decode(w->s.model, o, p, &err), 0);
	cJSON_Delete(o);
	assert_int_equal(idmap_put(&w->s.pods, synth_key(&w->s, "s", name), p), 0);
}

static void cycle(struct world *w)
{
	struct plan_input in = {
	    .model = w->s.model,
	    .nodes = &w->s.nodes,
	    .pods = &w->s.pods,
	    .groups = &w->s.groups,
	    .vcgroups = &w->s.vcgroups,
	    .natgroups = &w->natgroups,
	    .workloads = &w->workloads,
	    .qs = w->qs,
	    .schedulers = (const uint32_t[]){synth_id(&w->s, "muster")},
	    .nschedulers = 1,
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

/* The node pod was bound to this cycle, or NULL. */
static const char *node_of(struct world *w, const char *pod)
{
	uint32_t id = synth_id(&w->s, pod);

	for (size_t k = 0; k < w->plan.nbinds; k++)
		if (w->plan.binds[k].pod->name == id)
			return intern_str(kubeapi_model_intern(w->s.model), w->plan.binds[k].node);
	return NULL;
}

/* The rack of a node "rR-K": "rR". */
static void rack_of(const char *node, char *out, size_t len)
{
	snprintf(out, len, "%.*s", (int)strcspn(node, "-"), node);
}

/* A gang of 4 x 8 GPUs asking one rack: it goes to the rack with room for
 * all four, although the cluster has eight free nodes spread over racks
 * that hold three each. */
static void test_topology_one_rack(void **state)
{
	struct world w;
	char rack[8], other[8];

	(void)state;
	world_init(&w, 3, 4); /* r0..r2, 4 nodes each */
	nat_group(&w, "busy", "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}");
	nat_pod(&w, "busy-0", "busy", 8, "r0-0");
	nat_pod(&w, "busy-1", "busy", 8, "r2-0");
	nat_group(&w, "g",
	          "\"schedulingPolicy\":{\"gang\":{\"minCount\":4}},"
	          "\"schedulingConstraints\":{\"topology\":[{\"key\":\"muster.dev/rack\"}]}");
	for (int k = 0; k < 4; k++) {
		char name[8];

		snprintf(name, sizeof(name), "g-%d", k);
		nat_pod(&w, name, "g", 8, NULL);
	}
	cycle(&w);
	assert_int_equal(gang(&w, "g")->state, PLAN_ADMITTED);
	for (int k = 0; k < 4; k++) {
		char name[8];

		snprintf(name, sizeof(name), "g-%d", k);
		assert_non_null(node_of(&w, name));
		rack_of(node_of(&w, name), k ? other : rack, sizeof(rack));
		if (k)
			assert_string_equal(other, rack);
	}
	assert_string_equal(rack, "r1");
	world_free(&w);
}

/* One GPU taken on the first node of each rack (r0-0, r1-0): no rack of
 * two 8-GPU nodes holds two whole-node members any more. */
static void one_gpu_taken_per_rack(struct world *w)
{
	nat_group(w, "busy", "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}");
	nat_pod(w, "busy-0", "busy", 1, "r0-0");
	nat_pod(w, "busy-1", "busy", 1, "r1-0");
}

/* One GPU short in every rack: nothing is bound, and the message names
 * the key; the same gang without the constraint is admitted across
 * racks. A key no configured level has waits saying so. */
static void test_topology_short_and_unknown(void **state)
{
	struct world w;
	const struct plan_gang *g;

	(void)state;
	world_init(&w, 2, 2); /* 4 nodes, 32 GPUs */
	one_gpu_taken_per_rack(&w);
	nat_group(&w, "g",
	          "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},"
	          "\"schedulingConstraints\":{\"topology\":[{\"key\":\"muster.dev/rack\"}]}");
	nat_pod(&w, "g-0", "g", 8, NULL);
	nat_pod(&w, "g-1", "g", 8, NULL);
	nat_group(&w, "u",
	          "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}},"
	          "\"schedulingConstraints\":{\"topology\":[{\"key\":\"example.com/pod\"}]}");
	nat_pod(&w, "u-0", "u", 1, NULL);
	cycle(&w);
	g = gang(&w, "g");
	assert_int_equal(g->state, PLAN_WAITING);
	assert_null(node_of(&w, "g-0"));
	assert_null(node_of(&w, "g-1"));
	assert_string_equal(g->message, "gang s/g: no muster.dev/rack domain holds its 2 members; "
	                                "0/4 nodes are available: 2 Insufficient nvidia.com/gpu; "
	                                "expected start unknown (reservation on 2 node(s))");
	g = gang(&w, "u");
	assert_int_equal(g->state, PLAN_WAITING);
	assert_null(node_of(&w, "u-0"));
	assert_int_equal(g->state, PLAN_WAITING); /* no node has the label */
	assert_string_equal(g->message,
	                    "gang s/u: its PodGroup asks for every member in one domain "
	                    "of example.com/pod, and no node has that label");
	world_free(&w);

	world_init(&w, 2, 2);
	one_gpu_taken_per_rack(&w);
	nat_group(&w, "g", "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}");
	nat_pod(&w, "g-0", "g", 8, NULL);
	nat_pod(&w, "g-1", "g", 8, NULL);
	cycle(&w);
	assert_int_equal(gang(&w, "g")->state, PLAN_ADMITTED);
	world_free(&w);
}

/* A key the configuration does not list still constrains: blocks that
 * cut across the racks (b1 = r0-0 + r1-0, b2 = r0-1 + r1-1). A gang of 2 x
 * 8 GPUs asking for one block goes to b2, the whole free block, though
 * unconstrained it would fill rack r1; the debug view's levels stay the
 * configured three. */
static void test_topology_key_not_configured(void **state)
{
	static const char *const nodes[][2] = {
	    {"r0-0", "b1"}, {"r0-1", "b2"}, {"r1-0", "b1"}, {"r1-1", "b2"}};
	struct world w;
	char labels[64];

	(void)state;
	world_init(&w, 0, 0);
	for (size_t k = 0; k < 4; k++) {
		snprintf(labels, sizeof(labels), "\"example.com/block\":\"%s\"", nodes[k][1]);
		synth_node(&w.s, nodes[k][0], "z", k < 2 ? "r0" : "r1", 8, labels);
	}
	nat_group(&w, "busy", "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}}");
	nat_pod(&w, "busy-0", "busy", 1, "r0-0");
	nat_group(&w, "g",
	          "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},"
	          "\"schedulingConstraints\":{\"topology\":[{\"key\":\"example.com/block\"}]}");
	nat_pod(&w, "g-0", "g", 8, NULL);
	nat_pod(&w, "g-1", "g", 8, NULL);
	cycle(&w);
	assert_int_equal(gang(&w, "g")->state, PLAN_ADMITTED);
	assert_true(
	    (strcmp(node_of(&w, "g-0"), "r0-1") == 0 && strcmp(node_of(&w, "g-1"), "r1-1") == 0) ||
	    (strcmp(node_of(&w, "g-0"), "r1-1") == 0 && strcmp(node_of(&w, "g-1"), "r0-1") == 0));
	assert_int_equal(w.plan.nodes.nsearch, 3);
	assert_int_equal(w.plan.nodes.nlevels, 4);
	world_free(&w);
}

/* Members past minCount, and members of a gang already running, go into
 * the domain the gang is in, never another. */
static void test_topology_later_members(void **state)
{
	struct world w;
	char rack[8];

	(void)state;
	world_init(&w, 2, 2);
	nat_group(&w, "g",
	          "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}},"
	          "\"schedulingConstraints\":{\"topology\":[{\"key\":\"muster.dev/rack\"}]}");
	nat_pod(&w, "g-0", "g", 8, "r1-0");
	nat_pod(&w, "g-1", "g", 8, NULL); /* fits r1-1 */
	nat_pod(&w, "g-2", "g", 8, NULL); /* r1 is full: waits, though r0 is empty */
	cycle(&w);
	assert_non_null(node_of(&w, "g-1"));
	rack_of(node_of(&w, "g-1"), rack, sizeof(rack));
	assert_string_equal(rack, "r1");
	assert_null(node_of(&w, "g-2"));
	world_free(&w);
}

/* basic: each pod on its own, no gang (two of four fit, two are bound);
 * the group's priority orders it ahead of a gang created earlier. */
static void test_basic_and_priority(void **state)
{
	struct world w;

	(void)state;
	world_init(&w, 1, 2); /* 16 GPUs */
	nat_group(&w, "low", "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},\"priority\":1");
	nat_pod(&w, "low-0", "low", 8, NULL);
	nat_pod(&w, "low-1", "low", 8, NULL);
	nat_group(&w, "b", "\"schedulingPolicy\":{\"basic\":{}},\"priority\":10");
	for (int k = 0; k < 4; k++) {
		char name[8];

		snprintf(name, sizeof(name), "b-%d", k);
		nat_pod(&w, name, "b", 7, NULL);
	}
	cycle(&w);
	assert_null(gang(&w, "b")); /* no gang record under the group's name */
	assert_non_null(node_of(&w, "b-0"));
	assert_non_null(node_of(&w, "b-1"));
	assert_null(node_of(&w, "b-2"));
	assert_null(node_of(&w, "low-0"));
	assert_int_equal(gang(&w, "low")->state, PLAN_WAITING);
	world_free(&w);
}

/* The queue: the PodGroup's label, else its Workload's, else the pod's
 * or the namespace's. A Workload naming queue tiny (1 GPU) holds its
 * PodGroup's 2-GPU gang; a label on the PodGroup itself wins. */
static void test_queue_from_workload(void **state)
{
	struct world w;

	(void)state;
	world_init(&w, 1, 1);
	workload(&w, "wl", "\"muster.dev/queue\":\"tiny\"");
	nat_group(&w, "a",
	          "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}},"
	          "\"workloadRef\":{\"workloadName\":\"wl\",\"templateName\":\"t\"}");
	nat_pod(&w, "a-0", "a", 2, NULL);
	cycle(&w);
	assert_null(node_of(&w, "a-0"));
	assert_non_null(strstr(gang(&w, "a")->message, "queue tiny"));
	world_free(&w);

	world_init(&w, 1, 1);
	workload(&w, "wl", "\"muster.dev/queue\":\"tiny\"");
	nat_group(&w, "a",
	          "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}},"
	          "\"workloadRef\":{\"workloadName\":\"wl\",\"templateName\":\"t\"}");
	nat_pod(&w, "a-0", "a", 2, NULL);
	/* the same PodGroup, labelled for q */
	{
		struct kubeapi_podgroup *g =
		    (void *)idmap_get(&w.natgroups, synth_key(&w.s, "s", "a"));
		struct kubeapi_decode_error err;
		cJSON *o = synth_parse(
		    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"s\",\"resourceVersion\":\"2\","
		    "\"labels\":{\"muster.dev/"
		    "queue\":\"q\"}},\"spec\":{\"schedulingPolicy\":{\"gang\":"
		    "{\"minCount\":1}},\"workloadRef\":{\"workloadName\":\"wl\",\"templateName\":"
		    "\"t\"}}}");

		kubeapi_podgroup_release(w.s.model, g);
		assert_int_equal(kubeapi_podgroup_decode(w.s.model, KUBEAPI_PG_NATIVE, o, g, &err),
		                 0);
		cJSON_Delete(o);
	}
	cycle(&w);
	assert_non_null(node_of(&w, "a-0"));
	world_free(&w);
}

static void del_pod(struct world *w, const char *name)
{
	struct kubeapi_pod *p = idmap_del(&w->s.pods, synth_key(&w->s, "s", name));

	assert_non_null(p);
	kubeapi_pod_release(w->s.model, p);
	free(p);
}

/* Gang "low" (4 x 4 GPUs, priority 0, disruptionMode from `mode`) fills
 * the two nodes of one rack; "hi" (1 x 4 GPUs, priority 10) waits. */
static void low_and_hi(struct world *w, const char *mode)
{
	char spec[160];

	world_init_with(w, yaml_preempt, 1, 2);
	snprintf(spec, sizeof(spec), "\"schedulingPolicy\":{\"gang\":{\"minCount\":4}}%s", mode);
	nat_group(w, "low", spec);
	nat_pod(w, "low-0", "low", 4, "r0-0");
	nat_pod(w, "low-1", "low", 4, "r0-0");
	nat_pod(w, "low-2", "low", 4, "r0-1");
	nat_pod(w, "low-3", "low", 4, "r0-1");
	nat_group(w, "hi", "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}},\"priority\":10");
	nat_pod(w, "hi-0", "hi", 4, NULL);
}

/* disruptionMode single (and unset, the API's default): the preemptor
 * takes one member of the gang, not the four, and the PodGroup is not
 * marked as disrupted whole; once that member is gone, the preemptor is
 * bound in the room it held. */
static void test_single_mode_takes_one_member(void **state)
{
	static const char *const modes[] = {",\"disruptionMode\":{\"single\":{}}", ""};
	struct world w;

	(void)state;
	for (size_t m = 0; m < 2; m++) {
		const char *victim;

		low_and_hi(&w, modes[m]);
		cycle(&w);
		assert_int_equal(gang(&w, "hi")->state, PLAN_PREEMPTING);
		assert_int_equal(w.plan.nevictions, 1);
		assert_false(w.plan.evictions[0].whole);
		assert_ptr_equal(&w.plan.gangs[w.plan.evictions[0].victim], gang(&w, "low"));
		victim = intern_str(kubeapi_model_intern(w.s.model), w.plan.evictions[0].pod->name);
		assert_non_null(strstr(gang(&w, "hi")->message, victim));
		/* the victim is gone: the hold binds the preemptor where it was */
		{
			char name[16];
			const char *was =
			    intern_str(kubeapi_model_intern(w.s.model), w.plan.evictions[0].node);
			char where[16];

			snprintf(name, sizeof(name), "%s", victim);
			snprintf(where, sizeof(where), "%s", was);
			del_pod(&w, name);
			cycle(&w);
			assert_int_equal(gang(&w, "hi")->state, PLAN_ADMITTED);
			assert_string_equal(node_of(&w, "hi-0"), where);
			assert_int_equal(w.plan.nevictions, 0);
		}
		world_free(&w);
	}
}

/* disruptionMode all: the gang goes whole, all four members, and the
 * eviction says so (the run layer marks the PodGroup). */
static void test_all_mode_takes_the_gang(void **state)
{
	struct world w;

	(void)state;
	low_and_hi(&w, ",\"disruptionMode\":{\"all\":{}}");
	cycle(&w);
	assert_int_equal(gang(&w, "hi")->state, PLAN_PREEMPTING);
	assert_int_equal(w.plan.nevictions, 4);
	for (size_t k = 0; k < 4; k++)
		assert_true(w.plan.evictions[k].whole);
	assert_non_null(strstr(gang(&w, "hi")->message, "s/low"));
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_topology_one_rack),
	    cmocka_unit_test(test_topology_short_and_unknown),
	    cmocka_unit_test(test_topology_later_members),
	    cmocka_unit_test(test_topology_key_not_configured),
	    cmocka_unit_test(test_basic_and_priority),
	    cmocka_unit_test(test_queue_from_workload),
	    cmocka_unit_test(test_single_mode_takes_one_member),
	    cmocka_unit_test(test_all_mode_takes_the_gang),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
