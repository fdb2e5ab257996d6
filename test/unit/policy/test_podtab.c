/*
 * policy/podtab and gangs: the pod table and the gangs' facts the
 * planner keeps across cycles. A long random sequence of events (gangs
 * of scheduler-plugins' and native PodGroups arriving, binds, pods
 * finishing, deletions, replacements, pods of another scheduler,
 * PodGroups changing their minMember or queue) is fed to two planners:
 * one told only which pods and PodGroups changed (plan_input.pod_changes,
 * group_changes), one that reads every pod and works every gang out
 * afresh each cycle. After every cycle the first's table equals a
 * rebuild, each kept gang's facts equal fresh ones, and its kept node
 * counts equal a count afresh (check_state), and both decide the same.
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
    "      nvidia.com/gpu: {nominal: 24, borrowingLimit: 0}\n"
    "      cpu: {nominal: 100}\n"
    "      memory: {nominal: 1Ti}\n";

#define MAX_PODS 4096
#define NODES    16

/* A pod as the test drives it through its life. */
struct tpod {
	char ns[4], name[32], group[32];
	uint8_t native; /* group is a scheduling.k8s.io PodGroup (spec.schedulingGroup) */
	const char *sched;
	int gpus;
	int node;      /* index, -1: pending */
	int phase;     /* 0 as the node says, 1 Succeeded */
	long created;  /* seconds */
	uint8_t alive; /* in the store */
};

struct side {
	struct plan plan;
	struct plan_memory keep;
};

struct world {
	struct synth s;
	struct config *cfg;
	struct queue_set *qs;
	struct side inc, full; /* told the changes; reading every pod */
	struct idmap natgroups;
	struct tpod pod[MAX_PODS];
	size_t npods;
	uint64_t changes[MAX_PODS * 4];
	size_t nchanges;
	/* PodGroups changed: scheduler-plugins' (0) and native (2). */
	uint64_t gchanges[3][MAX_PODS * 4];
	size_t ngchanges[3];
	size_t group_edits, single_edits, moves;
	uint64_t rng;
	long clock;
	int ngroups;
	size_t native_bound; /* binds of pods in native PodGroups */
	/* Binds made real only after the next cycle, which is told them as
	 * assumed (pod key -> node name id), as the run layer does while
	 * the bind is on its way: their pods' records do not change. */
	struct idmap assumed;
	struct target {
		uint32_t ns, name;
		int node;
	} late[MAX_PODS];
	size_t nlate;
};

static uint64_t rnd(struct world *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 0x2545f4914f6cdd1dull;
}

static const char *node_name(int i, char *buf, size_t len)
{
	snprintf(buf, len, "n-%d", i);
	return buf;
}

/* Write pod k as it now is (a new object under its key) and note it. */
static void put(struct world *w, size_t k)
{
	struct tpod *t = &w->pod[k];
	char node[16], native[64];
	struct synth_pod_desc d = {.ns = t->ns,
	                           .name = t->name,
	                           .group = t->group[0] && !t->native ? t->group : NULL,
	                           .sched = t->sched,
	                           .cpu_m = 1000,
	                           .gpus = t->gpus,
	                           .node =
	                               t->node >= 0 ? node_name(t->node, node, sizeof(node)) : NULL,
	                           .phase = t->phase ? "Succeeded" : NULL,
	                           .created_s = 1767225600 + t->created};

	snprintf(native, sizeof(native), "\"schedulingGroup\":{\"podGroupName\":\"%s\"}", t->group);
	d.spec = t->native ? native : NULL;
	synth_pod_at(&w->s, &d);
	t->alive = 1;
	w->changes[w->nchanges++] = synth_key(&w->s, t->ns, t->name);
}

static void drop(struct world *w, size_t k)
{
	struct tpod *t = &w->pod[k];
	uint64_t key = synth_key(&w->s, t->ns, t->name);
	struct kubeapi_pod *p = idmap_del(&w->s.pods, key);

	kubeapi_pod_release(w->s.model, p);
	free(p);
	t->alive = 0;
	w->changes[w->nchanges++] = key;
}

/* A native PodGroup ns/name: a gang of n, or (basic) each pod its own. */
static void native_group(struct world *w, const char *ns, const char *name, int n, bool basic)
{
	struct kubeapi_podgroup *g = calloc(1, sizeof(*g));
	struct kubeapi_decode_error err;
	char t[32], policy[64];
	cJSON *o;

	if (basic)
		snprintf(policy, sizeof(policy), "{\"basic\":{}}");
	else
		snprintf(policy, sizeof(policy), "{\"gang\":{\"minCount\":%d}}", n);
	o = synth_parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
	                "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":\"1\","
	                "\"creationTimestamp\":\"%s\"},\"spec\":{\"schedulingPolicy\":%s}}",
	                name, ns, ++w->s.seq, synth_time(t, sizeof(t), 1767225600 + w->clock),
	                policy);
	assert_non_null(g);
	assert_int_equal(kubeapi_podgroup_decode(w->s.model, KUBEAPI_PG_NATIVE, o, g, &err), 0);
	cJSON_Delete(o);
	assert_int_equal(idmap_put(&w->natgroups, synth_key(&w->s, ns, name), g), 0);
	w->gchanges[2][w->ngchanges[2]++] = synth_key(&w->s, ns, name);
}

/* A gang of 1 to 4 pods: three in six of scheduler-plugins' PodGroups,
 * one a native gang, one a basic native group (each pod its own gang),
 * one single pods of no PodGroup. */
static void new_gang(struct world *w)
{
	int n = 1 + (int)(rnd(w) % 4), gpus = 1 << (rnd(w) % 3), kind = (int)(rnd(w) % 6);
	const char *ns = rnd(w) % 3 ? "a" : "s";
	char group[32];

	snprintf(group, sizeof(group), "g%d", w->ngroups++);
	++w->clock;
	if (kind == 3 || kind == 4)
		native_group(w, ns, group, n, kind == 4);
	else if (kind < 3) {
		synth_group(&w->s, ns, group, n, w->clock, NULL);
		w->gchanges[0][w->ngchanges[0]++] = synth_key(&w->s, ns, group);
	}
	for (int k = 0; k < n && w->npods < MAX_PODS; k++) {
		struct tpod *t = &w->pod[w->npods];

		*t = (struct tpod){.sched = "muster",
		                   .gpus = gpus,
		                   .node = -1,
		                   .created = w->clock,
		                   .native = kind == 3 || kind == 4};
		snprintf(t->ns, sizeof(t->ns), "%s", ns);
		snprintf(t->name, sizeof(t->name), "%.20s-%d", group, k);
		snprintf(t->group, sizeof(t->group), "%s", kind == 5 ? "" : group);
		put(w, w->npods++);
	}
}

/* A pod of default-scheduler on a random node: capacity Muster does not own. */
static void foreign_pod(struct world *w)
{
	struct tpod *t = &w->pod[w->npods];

	if (w->npods == MAX_PODS)
		return;
	*t = (struct tpod){.sched = "default-scheduler",
	                   .gpus = (int)(rnd(w) % 2),
	                   .node = (int)(rnd(w) % NODES),
	                   .created = ++w->clock};
	snprintf(t->ns, sizeof(t->ns), "o");
	snprintf(t->name, sizeof(t->name), "f%zu", w->npods);
	put(w, w->npods++);
}

static int in_sp_group(const struct tpod *t);

static long pick(struct world *w, int (*want)(const struct tpod *));

/* A scheduler-plugins PodGroup is written again with another minMember
 * or queue label: what its gang's record takes from it changes. */
static void edit_group(struct world *w)
{
	static const char *const labels[] = {NULL, "\"muster.dev/queue\":\"small\"",
	                                     "\"muster.dev/queue\":\"big\""};
	long k = pick(w, in_sp_group);
	const struct tpod *t;
	struct kubeapi_podgroup *old;
	uint64_t key;

	if (k < 0)
		return;
	t = &w->pod[k];
	key = synth_key(&w->s, t->ns, t->group);
	if (!(old = idmap_get(&w->s.groups, key)))
		return;
	synth_group(&w->s, t->ns, t->group, 1 + (int)(rnd(w) % 4), w->clock, labels[rnd(w) % 3]);
	kubeapi_podgroup_release(w->s.model, old);
	free(old);
	w->gchanges[0][w->ngchanges[0]++] = key;
	w->group_edits++;
}

/* A random live pod for which want() holds, or -1. */
static long pick(struct world *w, int (*want)(const struct tpod *))
{
	size_t start = (size_t)(rnd(w) % (w->npods + 1));

	for (size_t k = 0; k < w->npods; k++) {
		size_t i = (start + k) % w->npods;

		if (w->pod[i].alive && want(&w->pod[i]))
			return (long)i;
	}
	return -1;
}

static int running(const struct tpod *t)
{
	return t->node >= 0 && !t->phase;
}

static int any(const struct tpod *t)
{
	(void)t;
	return 1;
}

static int in_sp_group(const struct tpod *t)
{
	return t->group[0] && !t->native;
}

static int waiting_single(const struct tpod *t)
{
	return !t->group[0] && t->node < 0 && !strcmp(t->sched, "muster");
}

static int waiting_in_sp_group(const struct tpod *t)
{
	return in_sp_group(t) && t->node < 0 && !t->phase;
}

/* A waiting pod's PodGroup label names another group of its namespace:
 * its record, filed among its old gang's, now belongs to a gang whose
 * records are elsewhere. */
static void move_pod(struct world *w)
{
	long k = pick(w, waiting_in_sp_group), j = pick(w, in_sp_group);

	if (k < 0 || j < 0 || strcmp(w->pod[k].ns, w->pod[j].ns) ||
	    !strcmp(w->pod[k].group, w->pod[j].group))
		return;
	memcpy(w->pod[k].group, w->pod[j].group, sizeof(w->pod[k].group));
	put(w, (size_t)k);
	w->moves++;
}

/* One random event. */
static void event(struct world *w)
{
	long k;

	switch (rnd(w) % 7) {
	case 0:
	case 1:
		new_gang(w);
		break;
	case 2: /* a running pod finishes */
		if ((k = pick(w, running)) >= 0) {
			w->pod[k].phase = 1;
			put(w, (size_t)k);
		}
		break;
	case 3: /* a pod goes */
		if ((k = pick(w, any)) >= 0)
			drop(w, (size_t)k);
		break;
	case 4: /* an update that changes nothing the planner reads */
		if ((k = pick(w, any)) >= 0)
			put(w, (size_t)k);
		break;
	case 5:
		edit_group(w);
		/* and a single pod is made again, created later: its gang's
		 * submission time changes with it */
		if ((k = pick(w, waiting_single)) >= 0) {
			w->pod[k].created = ++w->clock;
			put(w, (size_t)k);
			w->single_edits++;
		}
		move_pod(w);
		break;
	default:
		foreign_pod(w);
	}
}

/* The feed names the changes in no set order: a gang's new pods may
 * come youngest first, and the table must still hand them over oldest
 * first. */
static void shuffle_changes(struct world *w)
{
	for (size_t k = w->nchanges; k > 1; k--) {
		size_t j = (size_t)(rnd(w) % k);
		uint64_t x = w->changes[k - 1];

		w->changes[k - 1] = w->changes[j];
		w->changes[j] = x;
	}
}

/* told: the side is told the changes; reread: it is told that it is not
 * (its table is read in full, in age order again, no record late). */
static void side_cycle(struct world *w, struct side *d, bool told, bool reread)
{
	struct plan_input in = {
	    .model = w->s.model,
	    .nodes = &w->s.nodes,
	    .pods = &w->s.pods,
	    .groups = &w->s.groups,
	    .vcgroups = &w->s.vcgroups,
	    .natgroups = &w->natgroups,
	    .qs = w->qs,
	    .schedulers = (const uint32_t[]){synth_id(&w->s, "muster")},
	    .nschedulers = 1,
	    .pod_changes = w->changes,
	    .npod_changes = w->nchanges,
	    .pods_known = told && !reread,
	    .group_changes = {w->gchanges[0], w->gchanges[1], w->gchanges[2]},
	    .ngroup_changes = {w->ngchanges[0], w->ngchanges[1], w->ngchanges[2]},
	    .groups_known = told,
	    .nodes_known = told, /* the nodes never change here */
	    .check_state = told,
	    .assumed = w->assumed.n ? &w->assumed : NULL,
	};

	assert_int_equal(plan_cycle(&d->plan, &in, &d->keep), 0);
	if (told)
		assert_int_equal(d->plan.stats.state_mismatches, 0);
}

/* The two planners decided the same: the binds in order, and each gang's
 * state (their gang tables may be in another order). */
static void same_decisions(struct world *w)
{
	const struct plan *a = &w->inc.plan, *b = &w->full.plan;

	assert_int_equal(a->nbinds, b->nbinds);
	for (size_t k = 0; k < a->nbinds; k++) {
		assert_ptr_equal(a->binds[k].pod, b->binds[k].pod);
		assert_int_equal(a->binds[k].node, b->binds[k].node);
	}
	assert_int_equal(a->ngangs, b->ngangs);
	for (size_t k = 0; k < a->ngangs; k++) {
		size_t j = 0;

		while (j < b->ngangs && b->gangs[j].key != a->gangs[k].key)
			j++;
		assert_true(j < b->ngangs);
		assert_int_equal(a->gangs[k].state, b->gangs[j].state);
		assert_int_equal(a->gangs[k].bound, b->gangs[j].bound);
		assert_int_equal(a->gangs[k].npending, b->gangs[j].npending);
	}
	assert_int_equal(a->stats.bound_pods, b->stats.bound_pods);
	assert_int_equal(a->stats.pods, b->stats.pods);
}

/* The cycle's binds, as targets for bind() (names read now: each put
 * replaces the bound pod's object); with `assume`, also into the
 * assumed map the next cycle is told. */
static void take_binds(struct world *w, bool assume)
{
	const struct plan *p = &w->inc.plan;

	for (size_t k = 0; k < p->nbinds && w->nlate < MAX_PODS; k++) {
		const char *node = intern_str(kubeapi_model_intern(w->s.model), p->binds[k].node);

		w->late[w->nlate++] = (struct target){p->binds[k].pod->ns, p->binds[k].pod->name,
		                                      atoi(node + 2)}; /* "n-<i>" */
		if (assume)
			assert_int_equal(idmap_put(&w->assumed, kubeapi_pod_key(p->binds[k].pod),
			                           (void *)(uintptr_t)p->binds[k].node),
			                 0);
	}
}

/* The binds taken become real, as the watch would show them. */
static void bind_all(struct world *w)
{
	for (size_t k = 0; k < w->nlate; k++)
		for (size_t i = 0; i < w->npods; i++) {
			struct tpod *t = &w->pod[i];

			if (t->alive && w->late[k].name == synth_id(&w->s, t->name) &&
			    w->late[k].ns == synth_id(&w->s, t->ns)) {
				t->node = w->late[k].node;
				w->native_bound += t->native;
				put(w, i);
				break;
			}
		}
	w->nlate = 0;
	idmap_free(&w->assumed);
}

static void test_a_table_kept_by_changes_equals_a_rebuild(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	const struct idmap_slot *e;
	char name[16];
	size_t admitted = 0, reread = 0, stored = 0, recounted = 0, cycles = 0, from_runs = 0;
	size_t assumed = 0, late_runs = 0, regrouped = 0;

	(void)state;
	assert_non_null(w);
	w->rng = 0x9e3779b97f4a7c15ull;
	assert_int_equal(synth_init(&w->s), 0);
	assert_int_equal(config_parse("t.yaml", yaml, strlen(yaml), &w->cfg, NULL), 0);
	assert_int_equal(queue_set_build(w->cfg, &w->qs), 0);
	for (int i = 0; i < NODES; i++)
		synth_node(&w->s, node_name(i, name, sizeof(name)), "z",
		           i < NODES / 2 ? "r0" : "r1", 8, NULL);
	for (int step = 0; step < 600; step++) {
		for (int k = 0; k < 3; k++)
			event(w);
		if (step % 4)
			continue;
		shuffle_changes(w);
		/* Halfway the table is read in full once: the runs kept after
		 * it have no record that came late, and are shared as lists. */
		side_cycle(w, &w->inc, true, cycles == 75);
		side_cycle(w, &w->full, false, false);
		same_decisions(w);
		admitted += w->inc.plan.nbinds;
		reread += w->inc.plan.stats.pods_read;
		stored += w->s.pods.n;
		/* The node table and its counts were kept, and only nodes whose
		 * pods changed counted again (check_state holds them to a count
		 * afresh, row by row). */
		assert_true(cycles == 0 || !w->inc.plan.stats.nodes_built);
		recounted += w->inc.plan.stats.nodes_recounted;
		from_runs += w->inc.plan.stats.pods_from_runs;
		late_runs += w->inc.plan.stats.late_from_runs;
		regrouped += w->inc.plan.stats.pods_regrouped;
		cycles++;
		w->nchanges = 0;
		memset(w->ngchanges, 0, sizeof(w->ngchanges));
		/* One cycle in three leaves its binds assumed through the next:
		 * a gang's kept run of waiting records must not stand for pods
		 * that are bound while their records are unchanged. */
		assumed += w->assumed.n;
		if (cycles % 3 == 1 && !w->assumed.n) {
			take_binds(w, true);
			continue;
		}
		take_binds(w, false);
		bind_all(w);
	}
	/* It did bind, and read again a fraction of what reading every pod
	 * each cycle reads. */
	assert_true(admitted > 100);
	assert_true(w->native_bound > 10);
	assert_true(reread * 4 < stored);
	assert_true(recounted * 2 < cycles * NODES);
	assert_true(assumed > 20);
	assert_true(from_runs > 100); /* waiting gangs filed without their records */
	/* Some of them late, in age order without a check; and late records
	 * were put back among their gangs' more than once. */
	assert_true(late_runs > 0);
	assert_true(regrouped > 1);
	assert_true(w->group_edits > 50);
	assert_true(w->single_edits > 50);
	assert_true(w->moves > 10);
	plan_free(&w->inc.plan);
	plan_free(&w->full.plan);
	plan_memory_free(&w->inc.keep);
	plan_memory_free(&w->full.keep);
	IDMAP_FOREACH(&w->natgroups, i, e) {
		kubeapi_podgroup_release(w->s.model, e->value);
		free(e->value);
	}
	idmap_free(&w->natgroups);
	idmap_free(&w->assumed);
	queue_set_free(&w->qs);
	config_free(&w->cfg);
	synth_free(&w->s);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_table_kept_by_changes_equals_a_rebuild),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
