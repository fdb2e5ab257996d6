/*
 * vGPUs through the planner (policy/shares.c, devices.c, place.c): pods
 * asking vGPUs go onto registered GPUs with shares, the shares of pods
 * already bound (from their annotation) and of pods Muster assumed (from
 * the run layer) are counted, and a gang that does not fit says it lacks
 * room on one GPU.
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
#include "policy/frag.h"
#include "policy/plan.h"
#include "queue/queue.h"

static const char yaml[] = "resources: [nvidia.com/gpu]\n"
                           "topology:\n"
                           "  levels: [kubernetes.io/hostname]\n"
                           "queues:\n"
                           "  - name: all\n"
                           "    namespaces: [a, other]\n"
                           "    quota: {nvidia.com/gpu: {nominal: 1000}}\n";

struct world {
	struct synth s;
	struct config *cfg;
	struct queue_set *qs;
	struct plan plan;
	struct plan_memory keep;
	struct idmap assumed, assumed_vgpu;
};

/* Fractions under quota: a GPU's cores in percent, as the device plugin
 * counts them (volcano.sh/vgpu-cores: 100 a GPU). */
static const char yaml_cores[] = "resources: [volcano.sh/vgpu-cores]\n"
                                 "queues:\n"
                                 "  - name: shared\n"
                                 "    namespaces: [a]\n"
                                 "    quota: {volcano.sh/vgpu-cores: {nominal: 100}}\n";

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
	idmap_free(&w->assumed_vgpu);
	queue_set_free(&w->qs);
	config_free(&w->cfg);
	synth_free(&w->s);
}

static void cycle(struct world *w)
{
	struct plan_input in = {
	    .model = w->s.model,
	    .nodes = &w->s.nodes,
	    .pods = &w->s.pods,
	    .groups = &w->s.groups,
	    .vcgroups = &w->s.vcgroups,
	    .qs = w->qs,
	    .schedulers = (const uint32_t[]){synth_id(&w->s, "muster")},
	    .nschedulers = 1,
	    .assumed = &w->assumed,
	    .assumed_vgpu = &w->assumed_vgpu,
	};

	assert_int_equal(plan_cycle(&w->plan, &in, &w->keep), 0);
}

/* A pod asking one vGPU of mem MiB and cores percent; bound to node with
 * annotation ids when node is given. */
static void vpod(struct world *w, const char *name, const char *group, int mem, int cores,
                 const char *node, const char *ids)
{
	char limits[256], ann[256];

	snprintf(limits, sizeof(limits),
	         "\"volcano.sh/vgpu-number\":\"1\",\"volcano.sh/vgpu-memory\":\"%d\","
	         "\"volcano.sh/vgpu-cores\":\"%d\"",
	         mem, cores);
	if (ids)
		snprintf(ann, sizeof(ann), "\"volcano.sh/vgpu-ids-new\":\"%s\"", ids);
	synth_pod_at(&w->s, &(struct synth_pod_desc){.ns = node ? "other" : "a",
	                                             .name = name,
	                                             .group = group,
	                                             .sched = node ? "volcano" : "muster",
	                                             .cpu_m = 1000,
	                                             .node = node,
	                                             .annotations = ids ? ann : NULL,
	                                             .limits = limits});
}

static const char *str(struct world *w, uint32_t id)
{
	return intern_str(kubeapi_model_intern(w->s.model), id);
}

/* bind k's one share: "node GPU mem cores". */
static const char *share(struct world *w, size_t k, char *buf, size_t len)
{
	struct kubeapi_vgpu_hold h[4];
	uint32_t nc;

	assert_int_equal(plan_bind_vgpu(&w->plan, &w->plan.binds[k], h, 4, &nc), 1);
	assert_int_equal(nc, 1);
	snprintf(buf, len, "%s %s %u %u", str(w, w->plan.binds[k].node), str(w, h[0].uuid),
	         h[0].mem, h[0].cores);
	return buf;
}

/* Four half GPUs of one gang: one node, two GPUs, two halves each. The
 * fragmentation score keeps the second GPU's other half for the next
 * half rather than opening a third GPU. */
static void test_halves_pack_two_gpus_of_one_node(void **state)
{
	struct world w;
	char buf[4][128], name[16];

	(void)state;
	world_init(&w);
	synth_vgpu_node(&w.s, "v0", 4, 32768, 10, NULL);
	synth_vgpu_node(&w.s, "v1", 4, 32768, 10, NULL);
	synth_group(&w.s, "a", "halves", 4, 1, NULL);
	for (int k = 0; k < 4; k++) {
		snprintf(name, sizeof(name), "h-%d", k);
		vpod(&w, name, "halves", 16384, 50, NULL, NULL);
	}
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 4);
	for (size_t k = 0; k < 4; k++)
		share(&w, k, buf[k], sizeof(buf[k]));
	qsort(buf, 4, sizeof(buf[0]), (int (*)(const void *, const void *))strcmp);
	assert_string_equal(buf[0], buf[1]);
	assert_string_equal(buf[2], buf[3]);
	assert_string_not_equal(buf[1], buf[2]);
	assert_memory_equal(buf[0], buf[2], 3); /* "v0 " or "v1 ": the same node */
	assert_non_null(strstr(buf[0], " 16384 50"));
	world_free(&w);
}

/* Shares of pods bound by someone else, read from their annotation: two
 * GPUs with 60% of their cores taken take a 40% pod but not a 50% one,
 * which waits short of room on one GPU though the node has 80% free. */
static void test_bound_shares_are_counted(void **state)
{
	struct world w;
	char buf[128];

	(void)state;
	world_init(&w);
	synth_vgpu_node(&w.s, "v0", 2, 32768, 10, NULL);
	vpod(&w, "old", NULL, 8192, 60, "v0", "GPU-v0-0,NVIDIA,8192,60:");
	vpod(&w, "old2", NULL, 8192, 60, "v0", "GPU-v0-1,NVIDIA,8192,60:");
	vpod(&w, "fifty", NULL, 1024, 50, NULL, NULL);
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 0);
	assert_non_null(strstr(w.plan.gangs[w.plan.ngangs - 1].message,
	                       "1 Insufficient room on one GPU for a vGPU share"));
	vpod(&w, "forty", NULL, 1024, 40, NULL, NULL);
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 1);
	assert_non_null(strstr(share(&w, 0, buf, sizeof(buf)), " 1024 40"));
	world_free(&w);
}

/* A pod Muster is binding: its shares count from the run layer's record
 * even though its annotation is not in the cache yet. */
static void test_assumed_shares_are_counted(void **state)
{
	struct world w;
	struct kubeapi_vgpu_held *h = calloc(1, sizeof(*h) + sizeof(h->e[0]));
	char buf[128];

	(void)state;
	world_init(&w);
	synth_vgpu_node(&w.s, "v0", 2, 32768, 10, NULL);
	vpod(&w, "mine", NULL, 32768, 100, NULL, NULL);
	*h = (struct kubeapi_vgpu_held){.n = 1, .ncontainers = 1};
	/* GPU 1 is the one Volcano's order takes first: the test shows it
	 * is skipped because the assumption holds it. */
	h->e[0] = (struct kubeapi_vgpu_hold){0, synth_id(&w.s, "GPU-v0-1"), 32768, 100};
	idmap_put(&w.assumed, synth_key(&w.s, "a", "mine"),
	          (void *)(uintptr_t)synth_id(&w.s, "v0"));
	idmap_put(&w.assumed_vgpu, synth_key(&w.s, "a", "mine"), h);
	vpod(&w, "next", NULL, 32768, 100, NULL, NULL);
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 1);
	assert_string_equal(share(&w, 0, buf, sizeof(buf)), "v0 GPU-v0-0 32768 100");
	vpod(&w, "third", NULL, 32768, 100, NULL, NULL);
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 1); /* next again (never bound here); third waits */
	free(h);
	world_free(&w);
}

/* A queue with one GPU's worth of cores takes two half GPUs, and the
 * third waits on quota, not room (the node has four GPUs). */
static void test_quota_counts_fractions(void **state)
{
	struct world w;
	const struct plan_gang *g = NULL;

	(void)state;
	world_init_with(&w, yaml_cores);
	synth_vgpu_node(&w.s, "v0", 4, 32768, 10, NULL);
	vpod(&w, "h0", NULL, 16384, 50, NULL, NULL);
	vpod(&w, "h1", NULL, 16384, 50, NULL, NULL);
	vpod(&w, "h2", NULL, 16384, 50, NULL, NULL);
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 2);
	for (size_t k = 0; k < w.plan.ngangs; k++)
		if (w.plan.gangs[k].state == PLAN_WAITING)
			g = &w.plan.gangs[k];
	assert_non_null(g);
	assert_non_null(
	    strstr(g->message, "at 100/100 volcano.sh/vgpu-cores; the gang needs 50 more"));
	world_free(&w);
}

static const char yaml_prio[] = "resources: [nvidia.com/gpu]\n"
                                "queues:\n"
                                "  - name: all\n"
                                "    namespaces: [a]\n"
                                "    quota: {nvidia.com/gpu: {nominal: 1000}}\n"
                                "    preemption: {withinQueue: LowerPriority}\n";

/* A pod of ours in namespace a at priority prio: bound holding `ids`
 * when node is given, else pending. */
static void ppod(struct world *w, const char *name, int prio, int mem, int cores, const char *node,
                 const char *ids, int64_t created_s)
{
	char limits[256], ann[256], spec[64];

	snprintf(limits, sizeof(limits),
	         "\"volcano.sh/vgpu-number\":\"1\",\"volcano.sh/vgpu-memory\":\"%d\","
	         "\"volcano.sh/vgpu-cores\":\"%d\"",
	         mem, cores);
	snprintf(ann, sizeof(ann), "\"volcano.sh/vgpu-ids-new\":\"%s\"", ids ? ids : "");
	snprintf(spec, sizeof(spec), "\"priority\":%d", prio);
	synth_pod_at(&w->s, &(struct synth_pod_desc){.ns = "a",
	                                             .name = name,
	                                             .sched = "muster",
	                                             .cpu_m = 1000,
	                                             .node = node,
	                                             .created_s = created_s,
	                                             .started_s = node ? created_s : 0,
	                                             .annotations = ids ? ann : NULL,
	                                             .spec = spec,
	                                             .limits = limits});
}

/* A whole vGPU at priority 100 where two GPUs are held at priority 1: the
 * whole one (old), and a 30% share (newer) beside a 30% share at
 * priority 100 that may not be preempted. Evicting the newer share frees
 * no GPU whole, so the victim is the old pod, and only it. */
static void test_preemption_frees_exactly_the_victims_shares(void **state)
{
	struct world w;

	(void)state;
	world_init_with(&w, yaml_prio);
	synth_vgpu_node(&w.s, "v0", 2, 32768, 10, NULL);
	ppod(&w, "old", 1, 32768, 100, "v0", "GPU-v0-0,NVIDIA,32768,100:", 1767225600);
	ppod(&w, "newer", 1, 4096, 30, "v0", "GPU-v0-1,NVIDIA,4096,30:", 1767229200);
	ppod(&w, "kept", 100, 4096, 30, "v0", "GPU-v0-1,NVIDIA,4096,30:", 1767229200);
	ppod(&w, "urgent", 100, 32768, 100, NULL, NULL, 1767232800);
	cycle(&w);
	assert_int_equal(w.plan.nevictions, 1);
	assert_string_equal(str(&w, w.plan.evictions[0].pod->name), "old");
	assert_int_equal(w.plan.nbinds, 0); /* the victim still runs */
	world_free(&w);
}

static const char yaml_racks[] = "resources: [nvidia.com/gpu]\n"
                                 "topology:\n"
                                 "  levels: [muster.dev/rack, kubernetes.io/hostname]\n"
                                 "queues:\n"
                                 "  - name: all\n"
                                 "    namespaces: [a, other]\n"
                                 "    quota: {nvidia.com/gpu: {nominal: 1000}}\n";

/* A node of two V100s in rack, whose GPUs listed in full hold a share of
 * all of them, and whose CPU a pod of hog_m millicores takes. */
static void rack_node(struct world *w, const char *name, const char *rack, const char *full,
                      long hog_m)
{
	char labels[128], pod[32], ids[64];

	snprintf(labels, sizeof(labels),
	         "\"kubernetes.io/hostname\":\"%s\",\"muster.dev/rack\":\"%s\"", name, rack);
	synth_vgpu_node(&w->s, name, 2, 32768, 10, labels);
	for (const char *g = full; g && *g; g++) {
		snprintf(pod, sizeof(pod), "%s-full-%c", name, *g);
		snprintf(ids, sizeof(ids), "GPU-%s-%c,NVIDIA,32768,100:", name, *g);
		vpod(w, pod, NULL, 32768, 100, name, ids);
	}
	snprintf(pod, sizeof(pod), "%s-hog", name);
	synth_pod_at(
	    &w->s,
	    &(struct synth_pod_desc){
	        .ns = "other", .name = pod, .sched = "volcano", .cpu_m = hog_m, .node = name});
}

/* A gang of two half GPUs, 60 CPUs each (no node holds both), goes to
 * the tightest rack that holds it: past a tighter one that has the cores
 * and the CPU but on different nodes (which placement turns down without
 * a trial), into one whose two nodes have CPU for exactly one member
 * each (a count that turned it down would leave the gang to the search
 * over all nodes, whose ties go to the looser rack's nodes). */
static void test_tightest_rack_counts_members_node_by_node(void **state)
{
	struct world w;
	const char *limits =
	    "\"volcano.sh/vgpu-number\":\"1\",\"volcano.sh/vgpu-memory\":\"16384\","
	    "\"volcano.sh/vgpu-cores\":\"50\"";
	char name[16];
	const char *got[2];

	(void)state;
	world_init_with(&w, yaml_racks);
	rack_node(&w, "a1", "r1", "0", 95000); /* a GPU free, no CPU */
	rack_node(&w, "a2", "r1", "01", 0);    /* CPU, no GPU free */
	rack_node(&w, "d1", "r2", "0", 35000); /* a GPU and 60 CPUs free */
	rack_node(&w, "d2", "r2", "0", 35000);
	/* As r2, and looser by a node with a GPU free but no CPU. */
	rack_node(&w, "c1", "r3", "0", 35000);
	rack_node(&w, "c2", "r3", "0", 35000);
	rack_node(&w, "c3", "r3", NULL, 95000);
	synth_group(&w.s, "a", "pair", 2, 1, NULL);
	for (int k = 0; k < 2; k++) {
		snprintf(name, sizeof(name), "p-%d", k);
		synth_pod_at(&w.s, &(struct synth_pod_desc){.ns = "a",
		                                            .name = name,
		                                            .group = "pair",
		                                            .sched = "muster",
		                                            .cpu_m = 60000,
		                                            .limits = limits});
	}
	cycle(&w);
	assert_int_equal(w.plan.nbinds, 2);
	for (size_t k = 0; k < 2; k++)
		got[k] = str(&w, w.plan.binds[k].node);
	assert_string_not_equal(got[0], got[1]);
	assert_true(got[0][0] == 'd' && got[1][0] == 'd');
	world_free(&w);
}

/* GPU models: a node's is its label nvidia.com/gpu.product, numbered as
 * the table meets them (n0's T4 bit 0, n1's V100 bit 1; n2 has none); a
 * spec's are those its required affinity (In) or nodeSelector names, a
 * model no node has as bit POLICY_MODELS, and any (0) when one term leaves
 * the model open. The mix weighs a kind of V100s by the GPUs of known
 * models over the V100s: 4 / 2. */
#define AFF_TERM(v)                                                                                \
	"{\"matchExpressions\":[{\"key\":\"nvidia.com/gpu.product\",\"operator\":\"In\","          \
	"\"values\":[" v "]}]}"
#define AFFINITY(terms)                                                                            \
	"\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"      \
	"{\"nodeSelectorTerms\":[" terms "]}}}"

static void test_gpu_models(void **state)
{
	static const struct {
		const char *name, *spec;
		uint64_t models;
	} pods[] = {
	    {"v100", AFFINITY(AFF_TERM("\"V100\"")), 2},
	    {"both", AFFINITY(AFF_TERM("\"V100\",\"T4\"")), 3},
	    {"t4", "\"nodeSelector\":{\"nvidia.com/gpu.product\":\"T4\"}", 1},
	    {"a100", AFFINITY(AFF_TERM("\"A100\"")), UINT64_C(1) << POLICY_MODELS},
	    {"open",
	     AFFINITY(AFF_TERM("\"V100\"") ",{\"matchExpressions\":[{\"key\":\"x\","
	                                   "\"operator\":\"Exists\"}]}"),
	     0},
	    {"any", NULL, 0},
	};
	const struct policy_nodes *t;
	struct world w;
	char limits[] = "\"volcano.sh/vgpu-number\":\"1\",\"volcano.sh/vgpu-cores\":\"50\"";
	bool weighed = false;

	(void)state;
	world_init(&w);
	synth_vgpu_node(&w.s, "n0", 2, 16384, 10, "\"nvidia.com/gpu.product\":\"T4\"");
	synth_vgpu_node(&w.s, "n1", 2, 16384, 10, "\"nvidia.com/gpu.product\":\"V100\"");
	synth_vgpu_node(&w.s, "n2", 1, 16384, 10, NULL);
	for (size_t k = 0; k < sizeof(pods) / sizeof(pods[0]); k++)
		synth_pod_at(&w.s, &(struct synth_pod_desc){.ns = "a",
		                                            .name = pods[k].name,
		                                            .sched = "muster",
		                                            .cpu_m = 1000,
		                                            .created_s = 100 + (int64_t)k,
		                                            .spec = pods[k].spec,
		                                            .limits = limits});
	cycle(&w);
	t = &w.plan.nodes;
	assert_int_equal(t->nmodels, 2);
	assert_true(t->gpu_model[0] == 1 && t->gpu_model[1] == 2 && t->gpu_model[2] == 0);
	assert_true(t->model_gpus[0] == 2 && t->model_gpus[1] == 2);
	for (size_t k = 0; k < sizeof(pods) / sizeof(pods[0]); k++) {
		const struct kubeapi_pod *p =
		    idmap_get(&w.s.pods, synth_key(&w.s, "a", pods[k].name));

		assert_non_null(p);
		if (policy_nodes_spec_models(t, p->spec) != pods[k].models)
			fail_msg("%s: models %#llx, want %#llx", pods[k].name,
			         (unsigned long long)policy_nodes_spec_models(t, p->spec),
			         (unsigned long long)pods[k].models);
	}
	assert_non_null(t->mix);
	for (size_t k = 0; k < t->mix->n; k++)
		if (t->mix->kind[k].models == 2) {
			assert_true(t->mix->kind[k].press == t->mix->kind[k].count * 2.0);
			weighed = true;
		}
	assert_true(weighed);
	world_free(&w);
}

/* Past POLICY_MIX_KINDS kinds, the mix keeps whole the kinds seen first
 * (their oldest pod), as they would have come one by one, and merges the
 * newest: here 33 kinds of CPU, the largest created first, so the
 * smallest CPU (the newest) is the one merged, into its nearest. */
static void test_mix_keeps_the_oldest_kinds(void **state)
{
	char limits[] = "\"volcano.sh/vgpu-number\":\"1\",\"volcano.sh/vgpu-cores\":\"50\"";
	const struct policy_mix *m;
	struct world w;
	bool newest = false, oldest = false;

	(void)state;
	world_init(&w);
	synth_vgpu_node(&w.s, "n0", 1, 16384, 10, NULL);
	for (int k = 0; k <= POLICY_MIX_KINDS; k++) {
		char name[16];

		snprintf(name, sizeof(name), "p%d", k);
		synth_pod_at(&w.s,
		             &(struct synth_pod_desc){.ns = "a",
		                                      .name = name,
		                                      .sched = "muster",
		                                      .cpu_m = 1000 * (POLICY_MIX_KINDS + 1 - k),
		                                      .created_s = 100 + k,
		                                      .limits = limits});
	}
	cycle(&w);
	m = w.plan.nodes.mix;
	assert_non_null(m);
	assert_int_equal(m->n, POLICY_MIX_KINDS);
	for (size_t k = 0; k < m->n; k++) {
		newest |= m->kind[k].cpu_m == 1000;
		oldest |= m->kind[k].cpu_m == 1000 * (POLICY_MIX_KINDS + 1);
	}
	assert_true(oldest && !newest);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_halves_pack_two_gpus_of_one_node),
	    cmocka_unit_test(test_bound_shares_are_counted),
	    cmocka_unit_test(test_assumed_shares_are_counted),
	    cmocka_unit_test(test_quota_counts_fractions),
	    cmocka_unit_test(test_preemption_frees_exactly_the_victims_shares),
	    cmocka_unit_test(test_tightest_rack_counts_members_node_by_node),
	    cmocka_unit_test(test_gpu_models),
	    cmocka_unit_test(test_mix_keeps_the_oldest_kinds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
