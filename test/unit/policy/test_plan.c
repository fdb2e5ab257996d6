/*
 * policy/plan: one cycle over a synthetic cluster decoded from API
 * server JSON. Gangs admitted whole or not at all, with the reason; the
 * smallest topology domain; quotas; pods of other schedulers; assumed
 * placements; minMember; CPU-only pods kept off GPU nodes.
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

static const char yaml[] =
    "resources: [cpu, memory, nvidia.com/gpu]\n"
    "topology:\n"
    "  levels: [topology.kubernetes.io/zone, muster.dev/rack, kubernetes.io/hostname]\n"
    "queues:\n"
    "  - name: big\n"
    "    namespaces: [a]\n"
    "    quota: {nvidia.com/gpu: {nominal: 1000}, cpu: {nominal: 10000}, memory: {nominal: 1Pi}}\n"
    "  - name: small\n"
    "    namespaces: [s]\n"
    "    quota:\n"
    "      nvidia.com/gpu: {nominal: 8, borrowingLimit: 0}\n"
    "      cpu: {nominal: 100}\n"
    "      memory: {nominal: 1Ti}\n";

struct world {
	struct synth s;
	struct config *cfg;
	struct queue_set *qs;
	struct plan plan;
	struct plan_memory keep;
	struct idmap assumed;
};

static void world_init_with(struct world *w, const char *text)
{
	memset(w, 0, sizeof(*w));
	assert_int_equal(synth_init(&w->s), 0);
	assert_int_equal(config_parse("t.yaml", text, strlen(text), &w->cfg, NULL), 0);
	assert_int_equal(queue_set_build(w->cfg, &w->qs), 0);
}

static void world_init(struct world *w)
{
	world_init_with(w, yaml);
}

static void world_free(struct world *w)
{
	plan_free(&w->plan);
	plan_memory_free(&w->keep);
	idmap_free(&w->assumed);
	queue_set_free(&w->qs);
	config_free(&w->cfg);
	synth_free(&w->s);
}

/* racks x per_rack GPU nodes named n-<rack>-<i>, 8 GPUs each, zone z. */
static void gpu_nodes(struct world *w, int racks, int per_rack)
{
	char name[32], rack[16];

	for (int r = 0; r < racks; r++)
		for (int i = 0; i < per_rack; i++) {
			snprintf(name, sizeof(name), "n-%d-%d", r, i);
			snprintf(rack, sizeof(rack), "r%d", r);
			synth_node(&w->s, name, "z", rack, 8, NULL);
		}
}

/* A gang: PodGroup g in ns with minMember n and n pods of `gpus` GPUs,
 * each gang submitted a second after the one before. */
static void gang(struct world *w, const char *ns, const char *g, int n, int gpus)
{
	static long submitted;
	char name[64];

	synth_group(&w->s, ns, g, n, ++submitted, NULL);
	for (int k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "%s-%d", g, k);
		synth_pod(&w->s, ns, name, g, "muster", 1000, gpus, NULL, k, NULL);
	}
}

/* A cycle over the world, with what `in` says beside it (what changed,
 * check_state). */
static void cycle_with(struct world *w, struct plan_input in)
{
	const uint32_t muster = synth_id(&w->s, "muster");

	in.model = w->s.model;
	in.nodes = &w->s.nodes;
	in.pods = &w->s.pods;
	in.groups = &w->s.groups;
	in.vcgroups = &w->s.vcgroups;
	in.qs = w->qs;
	in.schedulers = &muster;
	in.nschedulers = 1;
	in.assumed = &w->assumed;
	assert_int_equal(plan_cycle(&w->plan, &in, &w->keep), 0);
}

static void cycle(struct world *w)
{
	cycle_with(w, (struct plan_input){0});
}

static const struct plan_gang *find_gang(struct world *w, const char *ns, const char *name)
{
	uint32_t n = synth_id(&w->s, ns), g = synth_id(&w->s, name);

	for (size_t k = 0; k < w->plan.ngangs; k++)
		if (w->plan.gangs[k].ns == n && w->plan.gangs[k].name == g)
			return &w->plan.gangs[k];
	fail_msg("no gang %s/%s", ns, name);
	return NULL;
}

static const char *s_(struct world *w, uint32_t id)
{
	return intern_str(kubeapi_model_intern(w->s.model), id);
}

/* The label value of node name id `node` for key. */
static const char *node_label(struct world *w, uint32_t node, const char *key)
{
	const struct kubeapi_node *n = idmap_get(&w->s.nodes, (uint64_t)node);

	assert_non_null(n);
	return s_(w, kubeapi_labels_get(n->labels, synth_id(&w->s, key)));
}

/* The node table's names, in its order, joined by spaces into buf. */
static const char *table_names(struct world *w, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (size_t k = 0; k < w->plan.nodes.n && at < len; k++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", k ? " " : "",
		                       s_(w, w->plan.nodes.node[k]->name));
	return buf;
}

/* Node i of the store replaced by a new object (an update from the
 * watch), the old one freed. */
static void replace_node(struct world *w, const char *name)
{
	uint64_t key = synth_id(&w->s, name);
	struct kubeapi_node *old = idmap_get(&w->s.nodes, key);

	assert_non_null(old);
	idmap_del(&w->s.nodes, key); /* so the store's own pointer is not the old one */
	synth_node(&w->s, name, "z", "r0", 8, NULL);
	kubeapi_node_release(w->s.model, old);
	free(old);
}

/* The table is in name order whatever the store's order; the planner
 * keeps the order between cycles while the store holds the same nodes,
 * and must sort again when a node comes or goes, and take a node's new
 * object when it is replaced. */
static void test_node_order_kept_across_cycles(void **state)
{
	struct world w;
	char buf[256];
	struct kubeapi_node *gone;

	(void)state;
	world_init(&w);
	synth_node(&w.s, "n-3", "z", "r0", 8, NULL);
	synth_node(&w.s, "n-1", "z", "r0", 8, NULL);
	cycle(&w);
	assert_string_equal(table_names(&w, buf, sizeof(buf)), "n-1 n-3");
	synth_node(&w.s, "n-2", "z", "r0", 8, NULL);
	cycle(&w);
	assert_string_equal(table_names(&w, buf, sizeof(buf)), "n-1 n-2 n-3");
	cycle(&w); /* nothing changed: the kept order */
	assert_string_equal(table_names(&w, buf, sizeof(buf)), "n-1 n-2 n-3");
	gone = idmap_del(&w.s.nodes, synth_id(&w.s, "n-1"));
	kubeapi_node_release(w.s.model, gone);
	free(gone);
	synth_node(&w.s, "n-0", "z", "r0", 8, NULL); /* as many nodes, another key */
	cycle(&w);
	assert_string_equal(table_names(&w, buf, sizeof(buf)), "n-0 n-2 n-3");
	replace_node(&w, "n-2");
	cycle(&w);
	assert_ptr_equal(w.plan.nodes.node[1], idmap_get(&w.s.nodes, synth_id(&w.s, "n-2")));
	assert_string_equal(table_names(&w, buf, sizeof(buf)), "n-0 n-2 n-3");
	world_free(&w);
}

static void test_gang_fits_whole(void **state)
{
	struct world w;
	const struct plan_gang *g;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 2);
	gang(&w, "a", "train", 4, 2);
	cycle(&w);
	g = find_gang(&w, "a", "train");
	assert_int_equal(g->state, PLAN_ADMITTED);
	assert_int_equal(g->nbind, 4);
	assert_int_equal(w.plan.nbinds, 4);
	/* 8 GPUs fit one node: the hostname level takes it, one node. */
	for (size_t k = 1; k < 4; k++)
		assert_int_equal(w.plan.binds[k].node, w.plan.binds[0].node);
	world_free(&w);
}

/* Two nodes of 8; three pods of 6 GPUs: two fit, the third does not, so
 * nothing is bound, and the message says how far it got and why. */
static void test_gang_short_binds_nothing(void **state)
{
	struct world w;
	const struct plan_gang *g;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 2);
	gang(&w, "a", "big", 3, 6);
	cycle(&w);
	g = find_gang(&w, "a", "big");
	assert_int_equal(g->state, PLAN_WAITING);
	assert_int_equal(w.plan.nbinds, 0);
	assert_string_equal(g->message, "gang a/big: 2 of 3 members fit; 0/2 nodes are available: "
	                                "2 Insufficient nvidia.com/gpu");
	/* One more node and it fits. */
	synth_node(&w.s, "n-9-9", "z", "r9", 8, NULL);
	cycle(&w);
	g = find_gang(&w, "a", "big");
	assert_int_equal(g->state, PLAN_ADMITTED);
	assert_int_equal(w.plan.nbinds, 3);
	world_free(&w);
}

/* Two racks of four 8-GPU nodes; rack r0 has one GPU in use. Four 8-GPU
 * pods need a whole rack: r1. */
static void test_rack_packing(void **state)
{
	struct world w;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 2, 4);
	synth_pod(&w.s, "other", "x", NULL, "default-scheduler", 100, 1, "n-0-2", 0, NULL);
	gang(&w, "a", "llm", 4, 8);
	cycle(&w);
	assert_int_equal(find_gang(&w, "a", "llm")->state, PLAN_ADMITTED);
	assert_int_equal(w.plan.nbinds, 4);
	for (size_t k = 0; k < 4; k++)
		assert_string_equal(node_label(&w, w.plan.binds[k].node, "muster.dev/rack"), "r1");
	world_free(&w);
}

/* Best fit: a 2-GPU pod goes to the node with 2 free, not to an empty
 * one, so whole nodes stay whole. */
static void test_best_fit_keeps_nodes_whole(void **state)
{
	struct world w;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 3);
	synth_pod(&w.s, "other", "x", NULL, "default-scheduler", 100, 6, "n-0-1", 0, NULL);
	synth_pod(&w.s, "a", "solo", NULL, "muster", 100, 2, NULL, 0, NULL);
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 1);
	assert_string_equal(s_(&w, w.plan.binds[0].node), "n-0-1");
	world_free(&w);
}

/* A CPU-only pod goes to a CPU node while one can take it. */
static void test_cpu_pod_avoids_gpu_nodes(void **state)
{
	struct world w;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 2);
	synth_node(&w.s, "cpu-0", "z", "r0", 0, NULL);
	synth_pod(&w.s, "a", "web", NULL, "muster", 2000, 0, NULL, 0, NULL);
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 1);
	assert_string_equal(s_(&w, w.plan.binds[0].node), "cpu-0");
	world_free(&w);
}

/* Queue small has 8 GPUs and may not borrow: of two 8-GPU gangs one is
 * admitted, the other waits on the quota, with numbers. */
static void test_quota(void **state)
{
	struct world w;
	const struct plan_gang *first, *second;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 4);
	gang(&w, "s", "g1", 1, 8);
	gang(&w, "s", "g2", 1, 8);
	cycle(&w);
	first = find_gang(&w, "s", "g1");
	second = find_gang(&w, "s", "g2");
	assert_int_equal(w.plan.nbinds, 1);
	assert_int_equal(first->state, PLAN_ADMITTED);
	assert_int_equal(second->state, PLAN_WAITING);
	assert_string_equal(second->message,
	                    "gang s/g2: queue small at 8/8 nvidia.com/gpu; the gang needs 8 more");
	/* The same verdict as data, for the debug API. */
	assert_int_equal(first->block.why, PLAN_WHY_NONE);
	assert_int_equal(second->block.why, PLAN_WHY_QUOTA);
	assert_int_equal(second->block.node, queue_set_find(w.qs, "small"));
	assert_int_equal(second->block.usage, 8);
	assert_int_equal(second->block.limit, 8);
	assert_int_equal(second->block.need, 8);
	assert_int_equal(first->tried, 1);
	assert_int_equal(second->tried, 2);
	assert_non_null(second->req);
	assert_int_equal(second->req[2], 8); /* slot 2: nvidia.com/gpu */
	world_free(&w);
}

/* Pods of other schedulers are never placed, but their bound pods use
 * capacity; Muster's bound pods count in their queue's usage. */
static void test_other_schedulers(void **state)
{
	struct world w;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 1);
	synth_pod(&w.s, "a", "theirs", NULL, "default-scheduler", 100, 1, NULL, 0, NULL);
	synth_pod(&w.s, "a", "theirs-bound", NULL, "default-scheduler", 100, 4, "n-0-0", 0, NULL);
	synth_pod(&w.s, "s", "ours-bound", NULL, "muster", 100, 4, "n-0-0", 0, NULL);
	synth_pod(&w.s, "s", "ours", NULL, "muster", 100, 1, NULL, 0, NULL);
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 0); /* node full: 4 + 4 */
	assert_int_equal(w.plan.ngangs, 1); /* only ours, pending */
	assert_int_equal(
	    queue_tree_demand(queue_set_tree_c(w.qs), queue_set_find(w.qs, "small"), 2), 4);
	world_free(&w);
}

/* A gang the failure memo answers (the same shape failed before it in
 * the cycle) says so in its own name: the memo keeps the words after
 * "gang ns/name: ", and the cycle puts the gang's own before them once
 * its turns are over (plan.c's messages()). */
static void test_memo_answer_names_its_gang(void **state)
{
	struct world w;
	const struct plan_gang *first, *second;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 2);
	gang(&w, "a", "big", 3, 6);
	gang(&w, "a", "bigger", 3, 6);
	cycle(&w);
	first = find_gang(&w, "a", "big");
	second = find_gang(&w, "a", "bigger");
	assert_int_equal(w.plan.stats.memo_hits, 1);
	assert_int_equal(second->state, PLAN_WAITING);
	assert_int_equal(second->block.why, PLAN_WHY_FIT);
	assert_string_equal(first->message,
	                    "gang a/big: 2 of 3 members fit; 0/2 nodes are available: "
	                    "2 Insufficient nvidia.com/gpu");
	assert_string_equal(second->message,
	                    "gang a/bigger: 2 of 3 members fit; 0/2 nodes are available: "
	                    "2 Insufficient nvidia.com/gpu");
	world_free(&w);
}

/* A pod assumed bound uses its node and is not placed again. */
static void test_assumed(void **state)
{
	struct world w;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 1);
	synth_pod(&w.s, "a", "p1", NULL, "muster", 100, 8, NULL, 0, NULL);
	synth_pod(&w.s, "a", "p2", NULL, "muster", 100, 8, NULL, 1, NULL);
	idmap_put(&w.assumed, synth_key(&w.s, "a", "p1"),
	          (void *)(uintptr_t)synth_id(&w.s, "n-0-0"));
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 0);
	assert_int_equal(find_gang(&w, "a", "p2")->state, PLAN_WAITING);
	world_free(&w);
}

/* An assumed pod keeps its node when the node table changes under it: a
 * later cycle that keeps the pod table, with a node gone before the
 * assumed one's, counts it on its node by name, not at the index it had
 * (view.c keeps that index as a hint). The pod that comes next then
 * takes the only node left free. */
static void test_assumed_across_a_node_change(void **state)
{
	struct world w;
	struct kubeapi_node *gone;
	uint64_t p2;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 3);
	synth_pod(&w.s, "a", "p1", NULL, "muster", 100, 8, NULL, 0, NULL);
	idmap_put(&w.assumed, synth_key(&w.s, "a", "p1"),
	          (void *)(uintptr_t)synth_id(&w.s, "n-0-1"));
	cycle(&w); /* reads every pod: p1 on n-0-1, at index 1 */
	assert_int_equal(w.plan.nbinds, 0);
	gone = idmap_del(&w.s.nodes, synth_key(&w.s, NULL, "n-0-0"));
	assert_non_null(gone);
	kubeapi_node_release(w.s.model, gone);
	free(gone);
	synth_pod(&w.s, "a", "p2", NULL, "muster", 100, 8, NULL, 1, NULL);
	p2 = synth_key(&w.s, "a", "p2");
	/* The pods told (p2 is new); the nodes not: the table is built
	 * again, n-0-1 now at index 0 and n-0-2 at index 1. */
	cycle_with(&w,
	           (struct plan_input){
	               .pod_changes = &p2, .npod_changes = 1, .pods_known = 1, .check_state = 1});
	assert_int_equal(w.plan.stats.pods_rebuilt, 0);
	assert_int_equal(w.plan.stats.state_mismatches, 0);
	assert_int_equal(w.plan.nbinds, 1);
	assert_int_equal(w.plan.binds[0].node, synth_id(&w.s, "n-0-2"));
	world_free(&w);
}

/* minMember 4 with 3 pods: incomplete, nothing bound. */
static void test_incomplete(void **state)
{
	struct world w;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 2);
	synth_group(&w.s, "a", "half", 4, 0, NULL);
	for (int k = 0; k < 3; k++) {
		char name[16];

		snprintf(name, sizeof(name), "half-%d", k);
		synth_pod(&w.s, "a", name, "half", "muster", 100, 1, NULL, k, NULL);
	}
	synth_pod(&w.s, "a", "orphan", "nogroup", "muster", 100, 1, NULL, 0, NULL);
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 0);
	assert_string_equal(find_gang(&w, "a", "half")->message,
	                    "gang a/half: 3 of 4 members exist (minMember 4)");
	assert_int_equal(find_gang(&w, "a", "half")->block.why, PLAN_WHY_MEMBERS);
	assert_int_equal(find_gang(&w, "a", "half")->tried, 0);
	assert_string_equal(find_gang(&w, "a", "nogroup")->message,
	                    "gang a/nogroup: PodGroup a/nogroup not found");
	world_free(&w);
}

#define GATES "\"schedulingGates\":[{\"name\":\"kueue.x-k8s.io/admission\"}]"

/* Member k of gang a/g (1 GPU), with spec JSON `spec` (NULL: none),
 * written anew. */
static void gang_member(struct world *w, int k, const char *spec)
{
	char name[16];

	snprintf(name, sizeof(name), "g-%d", k);
	synth_pod_at(&w->s, &(struct synth_pod_desc){.ns = "a",
	                                             .name = name,
	                                             .group = "g",
	                                             .sched = "muster",
	                                             .cpu_m = 100,
	                                             .gpus = 1,
	                                             .created_s = k,
	                                             .spec = spec});
}

/* Scheduling gates: a gated pod is not a member yet. Its gang waits,
 * counting it; a gated pod on its own is left alone (no gang, no
 * message); once the gates go, the gang is bound whole. */
static void test_gated_members(void **state)
{
	struct world w;
	const struct plan_gang *g;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 2);
	synth_group(&w.s, "a", "g", 4, 0, NULL);
	for (int k = 0; k < 4; k++)
		gang_member(&w, k, k >= 2 ? GATES : NULL);
	synth_pod_at(&w.s, &(struct synth_pod_desc){.ns = "a",
	                                            .name = "solo",
	                                            .sched = "muster",
	                                            .cpu_m = 100,
	                                            .gpus = 1,
	                                            .spec = GATES});
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 0);
	g = find_gang(&w, "a", "g");
	assert_int_equal(g->block.why, PLAN_WHY_MEMBERS);
	assert_int_equal(g->gated, 2);
	assert_int_equal(g->npending, 2);
	assert_non_null(strstr(g->message, "gang a/g: 2 of 4 members exist (minMember 4); 2 more "
	                                   "wait for their schedulingGates (g-"));
	for (size_t k = 0; k < w.plan.ngangs; k++)
		assert_int_not_equal(w.plan.gangs[k].name, synth_id(&w.s, "solo"));

	for (int k = 2; k < 4; k++)
		gang_member(&w, k, NULL); /* the gates removed */
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 4);
	assert_int_equal(find_gang(&w, "a", "g")->gated, 0);
	world_free(&w);
}

/* A member stating a constraint Muster does not apply holds its gang
 * back, named; the forms that are only preferences do not. */
static void test_unsupported_constraints(void **state)
{
	static const char anti[] =
	    "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
	    "[{\"labelSelector\":{\"matchLabels\":{\"app\":\"x\"}},\"topologyKey\":"
	    "\"kubernetes.io/hostname\"}]}}";
	static const char preferred[] =
	    "\"affinity\":{\"podAntiAffinity\":{"
	    "\"preferredDuringSchedulingIgnoredDuringExecution\":"
	    "[{\"weight\":10,\"podAffinityTerm\":{\"topologyKey\":\"kubernetes.io/hostname\"}}]}},"
	    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","
	    "\"whenUnsatisfiable\":\"ScheduleAnyway\"}]";
	struct world w;
	const struct plan_gang *g;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 2);
	synth_group(&w.s, "a", "g", 2, 0, NULL);
	synth_pod_at(&w.s, &(struct synth_pod_desc){.ns = "a",
	                                            .name = "g-0",
	                                            .group = "g",
	                                            .sched = "muster",
	                                            .cpu_m = 100,
	                                            .gpus = 1});
	synth_pod_at(&w.s, &(struct synth_pod_desc){.ns = "a",
	                                            .name = "g-1",
	                                            .group = "g",
	                                            .sched = "muster",
	                                            .cpu_m = 100,
	                                            .gpus = 1,
	                                            .created_s = 1,
	                                            .spec = anti});
	synth_pod_at(&w.s, &(struct synth_pod_desc){
	                       .ns = "a",
	                       .name = "vol",
	                       .sched = "muster",
	                       .cpu_m = 100,
	                       .spec = "\"volumes\":[{\"name\":\"d\",\"persistentVolumeClaim\":{"
	                               "\"claimName\":\"data\"}}]"});
	synth_pod_at(&w.s, &(struct synth_pod_desc){.ns = "a",
	                                            .name = "pref",
	                                            .sched = "muster",
	                                            .cpu_m = 100,
	                                            .gpus = 1,
	                                            .spec = preferred});
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 1);
	assert_string_equal(s_(&w, w.plan.binds[0].pod->name), "pref");
	g = find_gang(&w, "a", "g");
	assert_int_equal(g->state, PLAN_INCOMPLETE);
	assert_int_equal(g->block.why, PLAN_WHY_UNSUPPORTED);
	assert_int_equal(g->block.unsupported, KUBEAPI_UNSUP_POD_ANTI_AFFINITY);
	assert_string_equal(s_(&w, g->pending[g->block.member]->name), "g-1");
	assert_string_equal(
	    g->message, "gang a/g: pod g-1 states podAntiAffinity (required), which Muster does "
	                "not apply yet; it waits rather than be placed against it");
	assert_string_equal(
	    find_gang(&w, "a", "vol")->message,
	    "gang a/vol: pod vol states PersistentVolumeClaim or ephemeral volumes, "
	    "which Muster does not apply yet; it waits rather than be placed "
	    "against it");
	assert_int_equal(g->tried, 0);
	world_free(&w);
}

/* nodeSelector: the pod only goes where the label is. */
static void test_selector(void **state)
{
	struct world w;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 2);
	synth_node(&w.s, "special", "z", "r0", 8, "\"pool\":\"x\"");
	synth_pod(&w.s, "a", "picky", NULL, "muster", 100, 1, NULL, 0,
	          "\"nodeSelector\":{\"pool\":\"x\"}");
	synth_pod(&w.s, "a", "nowhere", NULL, "muster", 100, 1, NULL, 0,
	          "\"nodeSelector\":{\"pool\":\"y\"}");
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 1);
	assert_string_equal(s_(&w, w.plan.binds[0].node), "special");
	assert_string_equal(
	    find_gang(&w, "a", "nowhere")->message,
	    "gang a/nowhere: 0 of 1 members fit; 0/3 nodes are available: 3 node(s) "
	    "didn't match the node selector or affinity");
	assert_int_equal(find_gang(&w, "a", "nowhere")->block.why, PLAN_WHY_FIT);
	assert_int_equal(find_gang(&w, "a", "nowhere")->block.rejected[POLICY_SELECTOR], 3);
	assert_int_equal(find_gang(&w, "a", "nowhere")->block.members, 1);
	assert_int_equal(find_gang(&w, "a", "nowhere")->block.placed, 0);
	world_free(&w);
}

/* A pod asking for one Gt/Lt requirement: "key Gt value". */
static void int_pod(struct world *w, const char *name, const char *op, const char *value)
{
	char spec[256];

	snprintf(
	    spec, sizeof(spec),
	    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
	    "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"gen\",\"operator\":"
	    "\"%s\",\"values\":[\"%s\"]}]}]}}}",
	    op, value);
	synth_pod(&w->s, "a", name, NULL, "muster", 100, 0, NULL, 0, spec);
}

/* Gt/Lt read values as Go's ParseInt does: a label or operand outside
 * int64, or with blanks, fails the match instead of saturating. */
static void test_selector_gt_lt(void **state)
{
	struct world w;

	(void)state;
	world_init(&w);
	synth_node(&w.s, "huge", "z", "r0", 0, "\"gen\":\"99999999999999999999\"");
	synth_node(&w.s, "spaced", "z", "r0", 0, "\"gen\":\" 7\"");
	synth_node(&w.s, "min", "z", "r0", 0, "\"gen\":\"-9223372036854775808\"");
	int_pod(&w, "gt-max", "Gt", "9223372036854775806");
	int_pod(&w, "lt-big", "Lt", "-9223372036854775807");
	int_pod(&w, "gt-over", "Gt", "9223372036854775808");
	cycle(&w);
	/* "huge" saturates under strtoll and would take gt-max; only "min"
	 * (LLONG_MIN exactly) matches, and only lt-big. */
	assert_int_equal(w.plan.nbinds, 1);
	assert_string_equal(s_(&w, w.plan.binds[0].node), "min");
	assert_int_equal(find_gang(&w, "a", "gt-max")->block.rejected[POLICY_SELECTOR], 3);
	assert_int_equal(find_gang(&w, "a", "gt-over")->block.rejected[POLICY_SELECTOR], 3);
	world_free(&w);
}

/* Many gangs of one spec that cannot fit: after the first failure the
 * rest are answered from the memo. */
static void test_memo(void **state)
{
	struct world w;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 1);
	for (int k = 0; k < 20; k++) {
		char name[16];

		snprintf(name, sizeof(name), "g%d", k);
		gang(&w, "a", name, 2, 8);
	}
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 0);
	assert_int_equal(w.plan.stats.placement_tries, 1);
	assert_int_equal(w.plan.stats.memo_hits, 19);
	/* A gang answered from the memo carries the verdict too. */
	assert_int_equal(find_gang(&w, "a", "g19")->block.why, PLAN_WHY_FIT);
	assert_int_equal(find_gang(&w, "a", "g19")->block.placed, 1);
	assert_int_equal(find_gang(&w, "a", "g19")->block.members, 2);
	assert_int_equal(find_gang(&w, "a", "g19")->block.short_nodes, 1);
	world_free(&w);
}

/* Gangs behind the waiting head of a StrictFIFO queue are never tried;
 * each says whose turn it is. */
static void test_strict_fifo_why(void **state)
{
	static const char strict[] = "resources: [nvidia.com/gpu]\n"
	                             "queues:\n"
	                             "  - name: fifo\n"
	                             "    namespaces: [f]\n"
	                             "    ordering: StrictFIFO\n"
	                             "    quota: {nvidia.com/gpu: {nominal: 1000}}\n";
	struct world w;
	const struct plan_gang *head, *behind;

	(void)state;
	world_init_with(&w, strict);
	gpu_nodes(&w, 1, 1);
	gang(&w, "f", "huge", 2, 8); /* 16 GPUs: never fits on one 8-GPU node */
	gang(&w, "f", "tiny", 1, 1);
	cycle(&w);
	head = find_gang(&w, "f", "huge");
	behind = find_gang(&w, "f", "tiny");
	assert_int_equal(w.plan.nbinds, 0);
	assert_int_equal(head->block.why, PLAN_WHY_FIT);
	assert_int_equal(head->tried, 1);
	assert_int_equal(behind->tried, 0);
	assert_int_equal(behind->block.why, PLAN_WHY_STRICT_FIFO);
	assert_ptr_equal(&w.plan.gangs[behind->block.head], head);
	assert_string_equal(behind->message,
	                    "gang f/tiny: queue fifo is StrictFIFO and its head f/huge waits");
	world_free(&w);
}

/* A cycle told which nodes changed (none: NULL, 0), as the scheduler
 * tells it: whether it built the node table or kept the last one. */
static bool cycle_known(struct world *w, const uint64_t *changed, size_t n, bool check)
{
	cycle_with(w, (struct plan_input){.node_changes = changed,
	                                  .nnode_changes = n,
	                                  .nodes_known = 1,
	                                  .check_state = check});
	return w->plan.stats.nodes_built;
}

/* Node `name` changed in place, as the cache changes a node: `gpus`
 * GPUs allocatable, Ready or not. Its key. */
static uint64_t node_changes_to(struct world *w, const char *name, int gpus, bool ready)
{
	uint64_t key = synth_key(&w->s, NULL, name);
	struct kubeapi_node *n = idmap_get(&w->s.nodes, key), fresh;
	struct kubeapi_decode_error err;
	cJSON *o = synth_parse(
	    "{\"metadata\":{\"name\":\"%s\",\"uid\":\"00000000-0000-0000-0000-0000000000aa\","
	    "\"resourceVersion\":\"2\",\"labels\":{\"kubernetes.io/hostname\":\"%s\","
	    "\"topology.kubernetes.io/zone\":\"z\",\"muster.dev/rack\":\"r0\"}},"
	    "\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\","
	    "\"effect\":\"NoSchedule\"}]},\"status\":{\"allocatable\":{\"cpu\":\"96\","
	    "\"memory\":\"1Ti\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
	    name, name, gpus, ready ? "True" : "False");

	assert_non_null(n);
	assert_int_equal(kubeapi_node_decode(w->s.model, o, &fresh, &err), 0);
	cJSON_Delete(o);
	kubeapi_node_release(w->s.model, n);
	*n = fresh;
	return key;
}

/* The node table is kept across cycles while the nodes stand as it was
 * built from, and built again when a changed node's row would differ;
 * what it reads through a node as it goes (readiness) is the node's
 * now either way. */
static void test_kept_node_table_follows_node_changes(void **state)
{
	struct world w;
	uint64_t key;

	(void)state;
	world_init(&w);
	gpu_nodes(&w, 1, 2);                          /* n-0-0, n-0-1: 8 GPUs each */
	assert_true(cycle_known(&w, NULL, 0, false)); /* the first cycle builds */
	assert_false(cycle_known(&w, NULL, 0, false));
	gang(&w, "a", "pair", 2, 8);
	key = node_changes_to(&w, "n-0-0", 2, true);
	assert_true(cycle_known(&w, &key, 1, false)); /* allocatable changed */
	assert_int_equal(find_gang(&w, "a", "pair")->state, PLAN_WAITING);
	key = node_changes_to(&w, "n-0-0", 8, false);
	assert_true(cycle_known(&w, &key, 1, false));
	assert_int_equal(find_gang(&w, "a", "pair")->state, PLAN_WAITING);
	key = node_changes_to(&w, "n-0-0", 8, true); /* only readiness changed */
	assert_false(cycle_known(&w, &key, 1, false));
	assert_int_equal(find_gang(&w, "a", "pair")->state, PLAN_ADMITTED);
	cycle(&w); /* changes not known: built */
	assert_true(w.plan.stats.nodes_built);
	/* A change the feed missed: kept, and the check finds the row. */
	assert_false(cycle_known(&w, NULL, 0, false));
	assert_int_equal(w.plan.stats.state_mismatches, 0);
	node_changes_to(&w, "n-0-1", 4, true);
	assert_false(cycle_known(&w, NULL, 0, true));
	assert_int_equal(w.plan.stats.state_mismatches, 1);
	world_free(&w);
}

/* A single pod of Muster's, running with no runtime of its own, ends at
 * its start plus its queue's defaultRuntime, as a gang's members do; so
 * in a config where no queue may preempt too, where a bound single pod
 * has no gang record. h, which needs its node, is promised that end. */
static void test_single_pod_ends_by_queue_default(void **state)
{
	static const char text[] = "resources: [nvidia.com/gpu]\n"
	                           "queues:\n"
	                           "  - name: q\n"
	                           "    namespaces: [a]\n"
	                           "    defaultRuntime: 10m\n"
	                           "    quota: {nvidia.com/gpu: {nominal: 100}}\n";
	const int64_t now = 1767229200, started = now - 100;
	struct world w;
	const struct plan_gang *h;

	(void)state;
	world_init_with(&w, text);
	gpu_nodes(&w, 1, 1);
	synth_pod_at(&w.s, &(struct synth_pod_desc){.ns = "a",
	                                            .name = "r",
	                                            .sched = "muster",
	                                            .cpu_m = 1000,
	                                            .gpus = 8,
	                                            .node = "n-0-0",
	                                            .created_s = started,
	                                            .started_s = started});
	gang(&w, "a", "h", 1, 8);
	cycle_with(&w, (struct plan_input){.now_s = now});
	h = find_gang(&w, "a", "h");
	assert_int_equal(h->state, PLAN_WAITING);
	assert_true(h->reserved);
	assert_int_equal(h->expected_start_s, started + 600);
	world_free(&w);
}

/* A gang's two running pods of one spec, one on an H100 node and one on
 * an A100 node, count toward their queue's slot of each flavor once: 4
 * GPUs in gpu@h100, 4 in gpu@a100, 8 in gpu. (A pod's slot vector is
 * kept once a cycle per spec and flavor, view.c: keyed by spec alone,
 * both pods went into one flavor's slot.) */
static void test_usage_by_flavor_of_one_spec(void **state)
{
	static const char text[] = "resources: [nvidia.com/gpu]\n"
	                           "flavors:\n"
	                           "  - name: h100\n"
	                           "    nodeLabels: {nvidia.com/gpu.product: H100}\n"
	                           "  - name: a100\n"
	                           "    nodeLabels: {nvidia.com/gpu.product: A100}\n"
	                           "queues:\n"
	                           "  - name: q\n"
	                           "    namespaces: [a]\n"
	                           "    quota:\n"
	                           "      nvidia.com/gpu: {nominal: 100}\n"
	                           "      nvidia.com/gpu@h100: {nominal: 8}\n"
	                           "      nvidia.com/gpu@a100: {nominal: 8}\n";
	const struct queue_tree *t;
	struct world w;
	int q, gpu, h100, a100;

	(void)state;
	world_init_with(&w, text);
	synth_node(&w.s, "n-h", "z", "r0", 8, "\"nvidia.com/gpu.product\":\"H100\"");
	synth_node(&w.s, "n-a", "z", "r0", 8, "\"nvidia.com/gpu.product\":\"A100\"");
	synth_group(&w.s, "a", "g", 2, 1, NULL);
	synth_pod(&w.s, "a", "g-0", "g", "muster", 1000, 4, "n-h", 0, NULL);
	synth_pod(&w.s, "a", "g-1", "g", "muster", 1000, 4, "n-a", 1, NULL);
	cycle(&w);
	t = queue_set_tree_c(w.qs);
	q = queue_set_find(w.qs, "q");
	gpu = queue_set_find_slot(w.qs, "nvidia.com/gpu");
	h100 = queue_set_find_slot(w.qs, "nvidia.com/gpu@h100");
	a100 = queue_set_find_slot(w.qs, "nvidia.com/gpu@a100");
	assert_true(q > 0 && gpu >= 0 && h100 >= 0 && a100 >= 0);
	assert_int_equal(queue_tree_demand(t, q, (unsigned)gpu), 8);
	assert_int_equal(queue_tree_demand(t, q, (unsigned)h100), 4);
	assert_int_equal(queue_tree_demand(t, q, (unsigned)a100), 4);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_node_order_kept_across_cycles),
	    cmocka_unit_test(test_gang_fits_whole),
	    cmocka_unit_test(test_gang_short_binds_nothing),
	    cmocka_unit_test(test_rack_packing),
	    cmocka_unit_test(test_best_fit_keeps_nodes_whole),
	    cmocka_unit_test(test_cpu_pod_avoids_gpu_nodes),
	    cmocka_unit_test(test_quota),
	    cmocka_unit_test(test_other_schedulers),
	    cmocka_unit_test(test_memo_answer_names_its_gang),
	    cmocka_unit_test(test_single_pod_ends_by_queue_default),
	    cmocka_unit_test(test_usage_by_flavor_of_one_spec),
	    cmocka_unit_test(test_assumed),
	    cmocka_unit_test(test_assumed_across_a_node_change),
	    cmocka_unit_test(test_incomplete),
	    cmocka_unit_test(test_gated_members),
	    cmocka_unit_test(test_unsupported_constraints),
	    cmocka_unit_test(test_selector),
	    cmocka_unit_test(test_selector_gt_lt),
	    cmocka_unit_test(test_memo),
	    cmocka_unit_test(test_strict_fifo_why),
	    cmocka_unit_test(test_kept_node_table_follows_node_changes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
