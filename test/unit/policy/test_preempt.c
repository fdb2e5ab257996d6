/*
 * policy/plan: preemption, reclaim, the room held for a preemptor,
 * protections, and reservations with backfill, on synthetic clusters
 * decoded from API server JSON. Each test lays the cluster out so that one
 * answer is right, says which in a comment, and checks exactly that.
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
#include "scheduler/debug/snap.h"

/* 2026-01-01T00:00:00Z: synth's creation timestamps count from here. */
#define BASE_S 1767225600ll
#define NOW_S  (BASE_S + 3600)

static const char yaml[] = "resources: [nvidia.com/gpu]\n"
                           "topology:\n"
                           "  levels: [muster.dev/rack, kubernetes.io/hostname]\n"
                           "cohorts:\n"
                           "  - name: lab\n"
                           "    queues:\n"
                           "      - name: train\n"
                           "        namespaces: [t]\n"
                           "        quota: {nvidia.com/gpu: {nominal: 16}}\n"
                           "        preemption: {withinQueue: LowerPriority, "
                           "reclaimWithinCohort: Any}\n"
                           "      - name: batch\n"
                           "        namespaces: [b]\n"
                           "        quota: {nvidia.com/gpu: {nominal: 16}}\n"
                           "        preemption: {withinQueue: LowerPriority}\n"
                           "queues:\n"
                           "  - name: solo\n"
                           "    namespaces: [s]\n"
                           "    quota: {nvidia.com/gpu: {nominal: 1000}}\n"
                           "    preemption: {withinQueue: LowerPriority}\n"
                           "  - name: young\n"
                           "    namespaces: [y]\n"
                           "    quota: {nvidia.com/gpu: {nominal: 1000}}\n"
                           "    preemption: {withinQueue: LowerPriority, minRuntime: 10m}\n";

struct world {
	struct synth s;
	struct config *cfg;
	struct queue_set *qs;
	struct plan plan;
	struct plan_memory keep;
	struct idmap pdbs;
};

static void world_init(struct world *w, int racks, int per_rack)
{
	char name[32], rack[16];

	memset(w, 0, sizeof(*w));
	assert_int_equal(synth_init(&w->s), 0);
	assert_int_equal(config_parse("t.yaml", yaml, strlen(yaml), &w->cfg, NULL), 0);
	assert_int_equal(queue_set_build(w->cfg, &w->qs), 0);
	for (int r = 0; r < racks; r++)
		for (int i = 0; i < per_rack; i++) {
			snprintf(name, sizeof(name), "n-%d-%d", r, i);
			snprintf(rack, sizeof(rack), "r%d", r);
			synth_node(&w->s, name, "z", rack, 8, NULL);
		}
}

static void world_free(struct world *w)
{
	const struct idmap_slot *e;

	IDMAP_FOREACH(&w->pdbs, i, e) {
		kubeapi_pdb_release(w->s.model, e->value);
		free(e->value);
	}
	idmap_free(&w->pdbs);
	plan_free(&w->plan);
	plan_memory_free(&w->keep);
	queue_set_free(&w->qs);
	config_free(&w->cfg);
	synth_free(&w->s);
}

struct podopt {
	const char *node;    /* NULL: pending */
	int priority;        /* spec.priority */
	long started;        /* seconds after BASE_S (also its creation) */
	long deadline;       /* activeDeadlineSeconds, 0: none */
	const char *runtime; /* muster.dev/expected-runtime, NULL: none */
	const char *app;     /* label app=..., NULL: none */
	int deleting;        /* metadata.deletionTimestamp set */
	const char *noevict; /* muster.dev/preemptible value, NULL: none */
};

static void stamp(char *buf, size_t len, long s)
{
	snprintf(buf, len, "2026-01-01T%02d:%02d:%02dZ", (int)(s / 3600 % 24), (int)(s / 60 % 60),
	         (int)(s % 60));
}

/* A pod of gang `group` (NULL: alone) in ns asking for gpus. */
static void pod(struct world *w, const char *ns, const char *name, const char *group, int gpus,
                const struct podopt *o)
{
	struct kubeapi_pod *p = calloc(1, sizeof(*p));
	struct kubeapi_decode_error err;
	char created[32], labels[256] = "", ann[256] = "", extra[256] = "", del[64] = "";
	size_t n = 0;
	cJSON *j;

	stamp(created, sizeof(created), o->started);
	if (group)
		n += (size_t)snprintf(labels + n, sizeof(labels) - n,
		                      "\"scheduling.x-k8s.io/pod-group\":\"%s\"", group);
	if (o->app)
		n += (size_t)snprintf(labels + n, sizeof(labels) - n, "%s\"app\":\"%s\"",
		                      n ? "," : "", o->app);
	if (o->noevict)
		snprintf(labels + n, sizeof(labels) - n, "%s\"muster.dev/preemptible\":\"%s\"",
		         n ? "," : "", o->noevict);
	if (o->runtime)
		snprintf(ann, sizeof(ann), "\"muster.dev/expected-runtime\":\"%s\"", o->runtime);
	if (o->deleting)
		snprintf(del, sizeof(del), ",\"deletionTimestamp\":\"%s\"", created);
	if (o->deadline)
		snprintf(extra, sizeof(extra), ",\"activeDeadlineSeconds\":%ld", o->deadline);
	j = synth_parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
	                "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":\"1\","
	                "\"creationTimestamp\":\"%s\"%s,\"labels\":{%s},\"annotations\":{%s}},"
	                "\"spec\":{\"schedulerName\":\"muster\",\"priority\":%d%s%s%s%s,"
	                "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}],"
	                "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{"
	                "\"cpu\":\"1\",\"nvidia.com/gpu\":\"%d\"}}}]},"
	                "\"status\":{\"phase\":\"%s\"%s%s%s}}",
	                name, ns, ++w->s.seq, created, del, labels, ann, o->priority,
	                o->node ? ",\"nodeName\":\"" : "", o->node ? o->node : "",
	                o->node ? "\"" : "", extra, gpus, o->node ? "Running" : "Pending",
	                o->node ? ",\"startTime\":\"" : "", o->node ? created : "",
	                o->node ? "\"" : "");
	if (!p || kubeapi_pod_decode(w->s.model, j, p, &err) != 0) {
		char b[512];

		fail_msg("pod: %s", kubeapi_decode_error_str(&err, b, sizeof(b)));
	}
	cJSON_Delete(j);
	idmap_put(&w->s.pods, synth_key(&w->s, ns, name), p);
}

static void del_pod(struct world *w, const char *ns, const char *name)
{
	struct kubeapi_pod *p = idmap_del(&w->s.pods, synth_key(&w->s, ns, name));

	assert_non_null(p);
	kubeapi_pod_release(w->s.model, p);
	free(p);
}

/* A gang of n pods of `gpus` each, the k-th on nodes[k] (NULL: pending). */
static void gang(struct world *w, const char *ns, const char *g, int n, int gpus,
                 const char *const *nodes, struct podopt o)
{
	char name[64];

	synth_group(&w->s, ns, g, n, o.started, NULL);
	for (int k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "%s-%d", g, k);
		o.node = nodes ? nodes[k] : NULL;
		pod(w, ns, name, g, gpus, &o);
	}
}

static void pdb(struct world *w, const char *ns, const char *app, int allowed)
{
	struct kubeapi_pdb *b = calloc(1, sizeof(*b));
	struct kubeapi_decode_error err;
	cJSON *j =
	    synth_parse("{\"metadata\":{\"name\":\"pdb-%s\",\"namespace\":\"%s\","
	                "\"uid\":\"00000000-0000-0000-0001-%012lx\",\"resourceVersion\":\"1\","
	                "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
	                "\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"%s\"}}},"
	                "\"status\":{\"disruptionsAllowed\":%d}}",
	                app, ns, ++w->s.seq, app, allowed);

	assert_non_null(b);
	assert_int_equal(kubeapi_pdb_decode(w->s.model, j, b, &err), 0);
	cJSON_Delete(j);
	idmap_put(&w->pdbs, synth_key(&w->s, ns, app), b);
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
	    .now_s = NOW_S,
	    .pdbs = &w->pdbs,
	};

	assert_int_equal(plan_cycle(&w->plan, &in, &w->keep), 0);
}

static const struct plan_gang *find(struct world *w, const char *ns, const char *name)
{
	uint32_t n = synth_id(&w->s, ns), g = synth_id(&w->s, name);

	for (size_t k = 0; k < w->plan.ngangs; k++)
		if (w->plan.gangs[k].ns == n && w->plan.gangs[k].name == g)
			return &w->plan.gangs[k];
	fail_msg("no gang %s/%s", ns, name);
	return NULL;
}

/* The names of the gangs evicted this cycle, "a b c" in eviction order
 * without repeats. */
static const char *victims(struct world *w, char *buf, size_t len)
{
	size_t n = 0;
	uint32_t last = UINT32_MAX;

	buf[0] = 0;
	for (size_t k = 0; k < w->plan.nevictions; k++) {
		const struct plan_gang *v = &w->plan.gangs[w->plan.evictions[k].victim];

		if (w->plan.evictions[k].victim == last)
			continue;
		last = w->plan.evictions[k].victim;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " " : "",
		                      intern_str(kubeapi_model_intern(w->s.model), v->name));
	}
	return buf;
}

static const char *const *on(const char *a, const char *b)
{
	static const char *v[2];

	v[0] = a;
	v[1] = b;
	return v;
}

/* Four 8-GPU nodes in two racks, all used by priority-1 gangs of queue
 * solo: A (8 on n-0-0), B (4+4 on n-0-1), C and D (4 each on n-1-0), E
 * (8 on n-1-1); B started last. A priority-100 gang of one 8-GPU pod
 * needs one node: one victim is enough (A, B or E; never C+D), and of
 * those B started most recently. B goes, both pods; nothing else. */
static void lay_out_five(struct world *w)
{
	gang(w, "s", "A", 1, 8, on("n-0-0", NULL), (struct podopt){.priority = 1, .started = 10});
	gang(w, "s", "B", 2, 4, on("n-0-1", "n-0-1"),
	     (struct podopt){.priority = 1, .started = 50, .app = "b"});
	gang(w, "s", "C", 1, 4, on("n-1-0", NULL), (struct podopt){.priority = 1, .started = 20});
	gang(w, "s", "D", 1, 4, on("n-1-0", NULL), (struct podopt){.priority = 1, .started = 30});
	gang(w, "s", "E", 1, 8, on("n-1-1", NULL), (struct podopt){.priority = 1, .started = 40});
}

static void test_priority_minimal_whole_gang(void **state)
{
	struct world w;
	char buf[128];
	const struct plan_gang *h;

	(void)state;
	world_init(&w, 2, 2);
	lay_out_five(&w);
	gang(&w, "s", "H", 1, 8, NULL, (struct podopt){.priority = 100, .started = 60});
	cycle(&w);
	h = find(&w, "s", "H");
	assert_int_equal(h->state, PLAN_PREEMPTING);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "B");
	assert_int_equal(w.plan.nevictions, 2); /* both of B's pods */
	assert_int_equal(w.plan.nbinds, 0);
	assert_string_equal(h->message, "gang s/H: preempting 1 gang(s) to make room: s/B");
	assert_int_equal(find(&w, "s", "B")->preempted_by, (uint32_t)(h - w.plan.gangs) + 1);
	world_free(&w);
}

/* The room is held: while B's pods end, a gang that goes first in the
 * order and would fit in the half of n-0-1 already free gets nothing, and
 * H is not bound yet; once they are gone, H is bound on n-0-1. */
static void test_hold_keeps_room_for_preemptor(void **state)
{
	struct world w;
	const struct plan_gang *h;

	(void)state;
	world_init(&w, 2, 2);
	lay_out_five(&w);
	gang(&w, "s", "H", 1, 8, NULL, (struct podopt){.priority = 100, .started = 60});
	cycle(&w);
	assert_int_equal(find(&w, "s", "H")->state, PLAN_PREEMPTING);
	/* B's pods are being deleted; a competitor arrives. */
	del_pod(&w, "s", "B-0");
	del_pod(&w, "s", "B-1");
	pod(&w, "s", "B-0", "B", 4,
	    &(struct podopt){.node = "n-0-1", .priority = 1, .started = 50, .deleting = 1});
	/* X, in queue young, would go first in the order (its queue uses
	 * nothing) and fits in what B-1 left; it has nobody to preempt. */
	gang(&w, "y", "X", 1, 4, NULL, (struct podopt){.priority = 50, .started = 70});
	cycle(&w);
	h = find(&w, "s", "H");
	assert_int_equal(h->state, PLAN_PREEMPTING);
	assert_string_equal(h->message, "gang s/H: preempting 1 gang(s) to make room: waiting for "
	                                "1 pod(s) to end");
	assert_int_equal(find(&w, "y", "X")->state, PLAN_WAITING);
	assert_int_equal(w.plan.nbinds, 0);
	assert_int_equal(w.plan.nevictions, 0); /* B-0 is already going */
	/* Gone: H is bound where B was. */
	del_pod(&w, "s", "B-0");
	cycle(&w);
	h = find(&w, "s", "H");
	assert_int_equal(h->state, PLAN_ADMITTED);
	assert_int_equal(w.plan.nbinds, 1);
	assert_string_equal(intern_str(kubeapi_model_intern(w.s.model), w.plan.binds[0].node),
	                    "n-0-1");
	assert_int_equal(find(&w, "y", "X")->state, PLAN_WAITING);
	world_free(&w);
}

/* Two holds, victims of eight one-GPU pods each: H1 took L2, H2 took L1.
 * Six of L2's pods are gone, two still ending. H1 keeps its hold (nobody
 * else is evicted, L0 stays), and is bound where L2 was once all are gone.
 * Names in both orders, whichever way the holds' map orders them. */
static void two_holds(const char *h1, const char *h2)
{
	static const char *const n0[8] = {"n-0-0", "n-0-0", "n-0-0", "n-0-0",
	                                  "n-0-0", "n-0-0", "n-0-0", "n-0-0"};
	static const char *const n1[8] = {"n-0-1", "n-0-1", "n-0-1", "n-0-1",
	                                  "n-0-1", "n-0-1", "n-0-1", "n-0-1"};
	static const char *const n2[8] = {"n-0-2", "n-0-2", "n-0-2", "n-0-2",
	                                  "n-0-2", "n-0-2", "n-0-2", "n-0-2"};
	struct world w;
	char buf[128], name[16];

	world_init(&w, 1, 3);
	gang(&w, "s", "L0", 8, 1, n0, (struct podopt){.priority = 1, .started = 10});
	gang(&w, "s", "L1", 8, 1, n1, (struct podopt){.priority = 1, .started = 20});
	gang(&w, "s", "L2", 8, 1, n2, (struct podopt){.priority = 1, .started = 30});
	gang(&w, "s", h1, 8, 1, NULL, (struct podopt){.priority = 100, .started = 60});
	cycle(&w);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "L2");
	gang(&w, "s", h2, 8, 1, NULL, (struct podopt){.priority = 100, .started = 70});
	cycle(&w);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "L2 L1");
	for (int k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "L2-%d", k);
		del_pod(&w, "s", name);
		if (k >= 6)
			pod(&w, "s", name, "L2", 1,
			    &(struct podopt){
			        .node = "n-0-2", .priority = 1, .started = 30, .deleting = 1});
	}
	cycle(&w);
	assert_int_equal(find(&w, "s", h1)->state, PLAN_PREEMPTING);
	assert_int_equal(find(&w, "s", h2)->state, PLAN_PREEMPTING);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "L1"); /* asked again, nothing new */
	del_pod(&w, "s", "L2-6");
	del_pod(&w, "s", "L2-7");
	cycle(&w);
	assert_int_equal(find(&w, "s", h1)->state, PLAN_ADMITTED);
	assert_int_equal(w.plan.nbinds, 8);
	assert_string_equal(intern_str(kubeapi_model_intern(w.s.model), w.plan.binds[0].node),
	                    "n-0-2");
	assert_string_equal(victims(&w, buf, sizeof(buf)), "L1");
	world_free(&w);
}

static void test_two_holds_keep_their_rooms(void **state)
{
	(void)state;
	two_holds("H1", "H2");
	two_holds("P9", "P0");
	two_holds("zz", "aa");
}

/* Two holds again, H1 on L2 (n-0-2), H2 on L1 (n-0-1): now L1 is gone
 * while all of L2 is still ending. H2 is bound on n-0-1; H1 keeps its
 * hold, not placed on n-0-1 (first in the node order, and free) with
 * H2 left to preempt L0. */
static void test_hold_leaves_another_holds_room(void **state)
{
	static const char *const n[3][8] = {
	    {"n-0-0", "n-0-0", "n-0-0", "n-0-0", "n-0-0", "n-0-0", "n-0-0", "n-0-0"},
	    {"n-0-1", "n-0-1", "n-0-1", "n-0-1", "n-0-1", "n-0-1", "n-0-1", "n-0-1"},
	    {"n-0-2", "n-0-2", "n-0-2", "n-0-2", "n-0-2", "n-0-2", "n-0-2", "n-0-2"}};
	struct world w;
	char buf[128], name[16];

	(void)state;
	world_init(&w, 1, 3);
	gang(&w, "s", "L0", 8, 1, n[0], (struct podopt){.priority = 1, .started = 10});
	gang(&w, "s", "L1", 8, 1, n[1], (struct podopt){.priority = 1, .started = 20});
	gang(&w, "s", "L2", 8, 1, n[2], (struct podopt){.priority = 1, .started = 30});
	gang(&w, "s", "H1", 8, 1, NULL, (struct podopt){.priority = 100, .started = 60});
	cycle(&w);
	gang(&w, "s", "H2", 8, 1, NULL, (struct podopt){.priority = 100, .started = 70});
	cycle(&w);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "L2 L1");
	for (int k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "L1-%d", k);
		del_pod(&w, "s", name);
		snprintf(name, sizeof(name), "L2-%d", k);
		del_pod(&w, "s", name);
		pod(&w, "s", name, "L2", 1,
		    &(struct podopt){.node = "n-0-2", .priority = 1, .started = 30, .deleting = 1});
	}
	cycle(&w);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "");
	assert_int_equal(find(&w, "s", "H2")->state, PLAN_ADMITTED);
	assert_int_equal(w.plan.nbinds, 8);
	assert_string_equal(intern_str(kubeapi_model_intern(w.s.model), w.plan.binds[0].node),
	                    "n-0-1");
	assert_int_equal(find(&w, "s", "H1")->state, PLAN_PREEMPTING);
	world_free(&w);
}

/* Two holds of the same shape: H1 took L2, H2 took L1. L2 is gone, but
 * X took a GPU of its node, so H1 has lost its room: it is planned
 * afresh and takes L0. H2, whose L1 is still ending, keeps its hold:
 * H1's failed placement says nothing of the room H2 waits for. */
static void test_hold_lost_leaves_the_other(void **state)
{
	static const char *const n0[8] = {"n-0-0", "n-0-0", "n-0-0", "n-0-0",
	                                  "n-0-0", "n-0-0", "n-0-0", "n-0-0"};
	static const char *const n1[8] = {"n-0-1", "n-0-1", "n-0-1", "n-0-1",
	                                  "n-0-1", "n-0-1", "n-0-1", "n-0-1"};
	static const char *const n2[8] = {"n-0-2", "n-0-2", "n-0-2", "n-0-2",
	                                  "n-0-2", "n-0-2", "n-0-2", "n-0-2"};
	struct world w;
	char buf[128], name[16];

	(void)state;
	world_init(&w, 1, 3);
	gang(&w, "s", "L0", 8, 1, n0, (struct podopt){.priority = 1, .started = 10});
	gang(&w, "s", "L1", 8, 1, n1, (struct podopt){.priority = 1, .started = 20});
	gang(&w, "s", "L2", 8, 1, n2, (struct podopt){.priority = 1, .started = 30});
	gang(&w, "s", "H1", 8, 1, NULL, (struct podopt){.priority = 100, .started = 60});
	cycle(&w);
	gang(&w, "s", "H2", 8, 1, NULL, (struct podopt){.priority = 100, .started = 70});
	cycle(&w);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "L2 L1");
	for (int k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "L2-%d", k);
		del_pod(&w, "s", name);
		snprintf(name, sizeof(name), "L1-%d", k);
		del_pod(&w, "s", name);
		pod(&w, "s", name, "L1", 1,
		    &(struct podopt){.node = "n-0-1", .priority = 1, .started = 20, .deleting = 1});
	}
	pod(&w, "s", "X", NULL, 1,
	    &(struct podopt){.node = "n-0-2", .priority = 100, .started = 80});
	cycle(&w);
	assert_int_equal(find(&w, "s", "H2")->state, PLAN_PREEMPTING);
	assert_string_equal(find(&w, "s", "H2")->message,
	                    "gang s/H2: preempting 1 gang(s) to make room: waiting for 8 pod(s) "
	                    "to end");
	assert_int_equal(find(&w, "s", "H1")->state, PLAN_PREEMPTING);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "L0");
	world_free(&w);
}

/* ---- preemptors arriving over several cycles -------------------------- */

/* bench/peers' preempt shape, small: twelve 8-GPU nodes in two racks,
 * each full with one low gang of eight one-GPU pods (Li on node_of(i)),
 * then eight preemptors of eight one-GPU pods (Hk), each needing exactly
 * one low gang. Whatever cycles they arrive in and however the victims
 * end, eight gangs (64 pods) are evicted, no node ever holds more than 8
 * GPUs, and all eight preemptors are bound. */
#define ARRIVE_NODES  12
#define ARRIVE_GANGS  8
#define ARRIVE_CYCLES 24

struct arrivals {
	const char *name;
	int per_cycle[ARRIVE_CYCLES]; /* preemptors created before cycle c */
};

/* How the k-th victim gang (in eviction order) ends, counted in cycles
 * after the one that evicted it: its pods keep running for `late`
 * (the eviction not landed yet), then are seen deleting for slow[k]
 * (0: gone before the next cycle), all but `early` of them, which go
 * at once. */
struct ending {
	const char *name;
	int slow[ARRIVE_NODES];
	int early, late;
};

struct arrive_world {
	struct world w;
	int evicted_at[ARRIVE_NODES]; /* cycle + 1 of Li's first eviction, 0: never */
	int rank[ARRIVE_NODES];       /* Li's place in the eviction order */
	int gone[ARRIVE_NODES];       /* Li's pods gone so far (the first ones) */
	int used[ARRIVE_NODES];       /* GPUs bound on node i: low pods not gone, binds */
	int bound[ARRIVE_GANGS];      /* Hk's pods bound */
	int nvictims;
};

static const char *node_of(int i)
{
	static char buf[ARRIVE_NODES][16];

	snprintf(buf[i], sizeof(buf[i]), "n-%d-%d", i / 6, i % 6);
	return buf[i];
}

/* Li's pod k after cycle c, which ends as e says. */
static void low_pod_step(struct arrive_world *a, const struct ending *e, int i, int k, int c)
{
	int age = c - (a->evicted_at[i] - 1) - e->late;
	char name[16], gang[8];

	if (age < 0)
		return;
	snprintf(name, sizeof(name), "L%d-%d", i, k);
	snprintf(gang, sizeof(gang), "L%d", i);
	del_pod(&a->w, "s", name);
	if (k < e->early || age >= e->slow[a->rank[i]]) {
		a->gone[i]++;
		a->used[i]--;
		return;
	}
	pod(&a->w, "s", name, gang, 1,
	    &(struct podopt){.node = node_of(i), .priority = 1, .started = 10 + i, .deleting = 1});
}

/* Cycle c's binds land: pod `name` of its gang bound on `node`. */
static void bind_step(struct arrive_world *a, const char *name, const char *node)
{
	char gang[8];
	int n = -1;

	snprintf(gang, sizeof(gang), "%.*s", (int)strcspn(name, "-"), name);
	for (int i = 0; i < ARRIVE_NODES; i++)
		n = strcmp(node_of(i), node) ? n : i;
	assert_true(n >= 0);
	del_pod(&a->w, "s", name);
	pod(&a->w, "s", name, gang, 1,
	    &(struct podopt){.node = node, .priority = 100, .started = 100});
	a->bound[atoi(gang + 1)]++;
	if (++a->used[n] > 8)
		fail_msg("%s: more than 8 GPUs bound", node);
}

/* What the API server and kubelets do after cycle c: the victims
 * evicted go on ending, the binds land. */
static void arrive_step(struct arrive_world *a, const struct ending *e, int c)
{
	struct intern *s = kubeapi_model_intern(a->w.s.model);
	char names[8 * ARRIVE_GANGS][16], nodes[8 * ARRIVE_GANGS][16];
	size_t nb = a->w.plan.nbinds;

	assert_true(nb <= 8 * ARRIVE_GANGS);
	for (size_t k = 0; k < a->w.plan.nevictions; k++) {
		int i =
		    atoi(intern_str(s, a->w.plan.gangs[a->w.plan.evictions[k].victim].name) + 1);

		if (!a->evicted_at[i]) {
			a->evicted_at[i] = c + 1;
			a->rank[i] = a->nvictims++;
		}
	}
	for (size_t k = 0; k < nb; k++) { /* read before the pods change */
		snprintf(names[k], sizeof(names[k]), "%s",
		         intern_str(s, a->w.plan.binds[k].pod->name));
		snprintf(nodes[k], sizeof(nodes[k]), "%s", intern_str(s, a->w.plan.binds[k].node));
	}
	for (int i = 0; i < ARRIVE_NODES; i++)
		for (int k = a->gone[i]; a->evicted_at[i] && k < 8; k++)
			low_pod_step(a, e, i, k, c);
	for (size_t k = 0; k < nb; k++)
		bind_step(a, names[k], nodes[k]);
}

/* One run: 0 when it went as it should, else 1, said. */
static int arrive_run(const struct arrivals *ar, const struct ending *e)
{
	struct arrive_world a;
	int next = 0, c, done = 0;

	memset(&a, 0, sizeof(a));
	world_init(&a.w, 2, 6);
	for (int i = 0; i < ARRIVE_NODES; i++) {
		const char *on8[8];
		char name[8];

		for (int k = 0; k < 8; k++)
			on8[k] = node_of(i);
		snprintf(name, sizeof(name), "L%d", i);
		gang(&a.w, "s", name, 8, 1, on8, (struct podopt){.priority = 1, .started = 10 + i});
		a.used[i] = 8;
	}
	for (c = 0; c < ARRIVE_CYCLES && done < ARRIVE_GANGS; c++) {
		for (int k = 0; k < ar->per_cycle[c] && next < ARRIVE_GANGS; k++, next++) {
			char name[8];

			snprintf(name, sizeof(name), "H%d", next);
			gang(&a.w, "s", name, 8, 1, NULL,
			     (struct podopt){.priority = 100, .started = 100 + next});
		}
		cycle(&a.w);
		arrive_step(&a, e, c);
		done = 0;
		for (int k = 0; k < ARRIVE_GANGS; k++)
			done += a.bound[k] == 8;
	}
	world_free(&a.w);
	if (a.nvictims == ARRIVE_GANGS && done == ARRIVE_GANGS)
		return 0;
	print_error("arrivals %s, victims ending %s: %d victim gangs (%d pods) for %d "
	            "preemptors, %d bound\n",
	            ar->name, e->name, a.nvictims, 8 * a.nvictims, ARRIVE_GANGS, done);
	return 1;
}

static void test_preemptors_across_cycles_minimal_victims(void **state)
{
	static const struct arrivals ar[] = {
	    {"8", {8}},
	    {"1+7", {1, 7}},
	    {"7+1", {7, 1}},
	    {"4+4", {4, 4}},
	    {"2+2+2+2", {2, 2, 2, 2}},
	    {"one a cycle", {1, 1, 1, 1, 1, 1, 1, 1}},
	    {"3, none, 5", {3, 0, 5}},
	    {"2 every other cycle", {2, 0, 2, 0, 2, 0, 2}},
	};
	static const struct ending e[] = {
	    {"at once", {0}, 0, 0},
	    {"in one cycle", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0, 0},
	    {"in two cycles", {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, 0, 0},
	    {"the first slowest", {4, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0, 0},
	    {"the first slow", {3}, 0, 0},
	    {"the later slower", {0, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4}, 0, 0},
	    {"alternately", {2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0}, 0, 0},
	    {"half at once, the first slowest", {3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 4, 0},
	    {"a cycle late, the later slower", {0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3}, 0, 1},
	    {"a cycle late, alternately", {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}, 0, 1},
	};
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(ar) / sizeof(ar[0]); i++)
		for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++)
			bad += arrive_run(&ar[i], &e[k]);
	assert_int_equal(bad, 0);
}

/* B is guarded by a budget that allows no disruption: passed over. Of A
 * and E (one victim each), E started later. */
static void test_budget_protects_victim(void **state)
{
	struct world w;
	char buf[128];

	(void)state;
	world_init(&w, 2, 2);
	lay_out_five(&w);
	pdb(&w, "s", "b", 0);
	gang(&w, "s", "H", 1, 8, NULL, (struct podopt){.priority = 100, .started = 60});
	cycle(&w);
	assert_int_equal(find(&w, "s", "H")->state, PLAN_PREEMPTING);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "E");
	world_free(&w);
}

/* With a budget allowing two disruptions B is fair game again. */
static void test_budget_with_room_allows(void **state)
{
	struct world w;
	char buf[128];

	(void)state;
	world_init(&w, 2, 2);
	lay_out_five(&w);
	pdb(&w, "s", "b", 2);
	gang(&w, "s", "H", 1, 8, NULL, (struct podopt){.priority = 100, .started = 60});
	cycle(&w);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "B");
	world_free(&w);
}

/* Equal priority is never preempted under LowerPriority, and a gang that
 * says muster.dev/preemptible=false is never a victim. */
static void test_protections(void **state)
{
	struct world w;
	char buf[128];

	(void)state;
	world_init(&w, 1, 2);
	gang(&w, "s", "P", 1, 8, on("n-0-0", NULL),
	     (struct podopt){.priority = 1, .started = 10, .noevict = "false"});
	gang(&w, "s", "Q", 1, 8, on("n-0-1", NULL), (struct podopt){.priority = 5, .started = 20});
	gang(&w, "s", "H", 1, 8, NULL, (struct podopt){.priority = 5, .started = 60});
	cycle(&w);
	assert_int_equal(find(&w, "s", "H")->state, PLAN_WAITING);
	assert_int_equal(w.plan.nevictions, 0);
	/* Higher than Q now: Q goes, P still not. */
	gang(&w, "s", "H2", 1, 8, NULL, (struct podopt){.priority = 9, .started = 61});
	cycle(&w);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "Q");
	world_free(&w);
}

/* minRuntime 10m: a victim that started 5 minutes ago is protected, one
 * that started 50 minutes ago is not. */
static void test_min_runtime(void **state)
{
	struct world w;
	char buf[128];

	(void)state;
	world_init(&w, 1, 2);
	gang(&w, "y", "new", 1, 8, on("n-0-0", NULL),
	     (struct podopt){.priority = 1, .started = 3600 - 300});
	gang(&w, "y", "old", 1, 8, on("n-0-1", NULL),
	     (struct podopt){.priority = 1, .started = 600});
	gang(&w, "y", "H", 1, 8, NULL, (struct podopt){.priority = 100, .started = 3590});
	cycle(&w);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "old");
	world_free(&w);
}

/* Reclaim: train and batch each own 16 GPUs in cohort lab; batch runs
 * four 8-GPU gangs (32: it borrows 16 from train). train asks for 2 x 8
 * in one rack: batch's two most recently started gangs in a rack go (g3,
 * g4 in rack r1), which brings batch back to its nominal 16, and the ones
 * within its nominal stay. */
static void test_reclaim(void **state)
{
	struct world w;
	char buf[128];

	(void)state;
	world_init(&w, 2, 2);
	gang(&w, "b", "g1", 1, 8, on("n-0-0", NULL), (struct podopt){.priority = 0, .started = 10});
	gang(&w, "b", "g2", 1, 8, on("n-0-1", NULL), (struct podopt){.priority = 0, .started = 20});
	gang(&w, "b", "g3", 1, 8, on("n-1-0", NULL), (struct podopt){.priority = 0, .started = 30});
	gang(&w, "b", "g4", 1, 8, on("n-1-1", NULL), (struct podopt){.priority = 0, .started = 40});
	gang(&w, "t", "T", 2, 8, NULL, (struct podopt){.priority = 0, .started = 60});
	cycle(&w);
	assert_int_equal(find(&w, "t", "T")->state, PLAN_PREEMPTING);
	assert_string_equal(victims(&w, buf, sizeof(buf)), "g4 g3");
	world_free(&w);
}

/* Batch may not reclaim (its policy is withinQueue only), and a queue
 * that would go past its nominal cannot reclaim either. */
static void test_no_reclaim_beyond_nominal(void **state)
{
	struct world w;

	(void)state;
	world_init(&w, 2, 2);
	gang(&w, "b", "g1", 1, 8, on("n-0-0", NULL), (struct podopt){.started = 10});
	gang(&w, "b", "g2", 1, 8, on("n-0-1", NULL), (struct podopt){.started = 20});
	gang(&w, "b", "g3", 1, 8, on("n-1-0", NULL), (struct podopt){.started = 30});
	gang(&w, "b", "g4", 1, 8, on("n-1-1", NULL), (struct podopt){.started = 40});
	/* 24 GPUs: over train's nominal of 16. */
	gang(&w, "t", "T", 3, 8, NULL, (struct podopt){.started = 60});
	cycle(&w);
	assert_int_equal(find(&w, "t", "T")->state, PLAN_WAITING);
	assert_int_equal(w.plan.nevictions, 0);
	world_free(&w);
}

/* Reservation and backfill on two nodes. n-0-0: R (4 GPUs) ends in 50 s,
 * 4 free. n-0-1: F (8 GPUs) has no runtime. H (8 GPUs) waits first in
 * line: reserved on n-0-0 from now + 50. Then, of three 4-GPU gangs:
 * L (runtime 100 s) would still run at H's start: waits; N (no runtime):
 * waits; S (runtime 30 s) ends before: backfills onto n-0-0. */
/* The debug API's copy of the cycle (scheduler/debug/snap.h) shows gang s/NAME
 * holding node `node`, reserving `gpus` there, listed first. */
static void snap_has_reservation(struct world *w, const char *name, const char *node, int64_t gpus)
{
	struct snap_input in = {&w->plan, w->qs, w->cfg, w->s.model, 1, NOW_S};
	struct snap sn = {0};
	const struct snap_gang *g;
	const struct snap_node *n = NULL;

	assert_int_equal(snap_take(&in, &sn), 0);
	g = &sn.gangs[0];
	assert_string_equal(g->name, name);
	assert_int_equal(g->position, 1);
	assert_true(g->reserved);
	assert_int_equal(g->nresv_nodes, 1);
	n = &sn.nodes[g->resv_nodes[0]];
	assert_string_equal(n->name, node);
	assert_int_equal(n->reserved[KUBEAPI_RES_GPU], gpus);
	assert_int_equal(n->nreserved_for, 1);
	assert_ptr_equal(&sn.gangs[n->reserved_for[0]], g);
	snap_free(&sn);
}

static void test_reservation_and_backfill(void **state)
{
	struct world w;
	const struct plan_gang *h;

	(void)state;
	world_init(&w, 1, 2);
	pod(&w, "s", "R", NULL, 4,
	    &(struct podopt){.node = "n-0-0", .started = 3600 - 50, .deadline = 100});
	pod(&w, "s", "F", NULL, 8, &(struct podopt){.node = "n-0-1", .started = 10});
	gang(&w, "s", "H", 1, 8, NULL, (struct podopt){.started = 3000});
	gang(&w, "s", "L", 1, 4, NULL, (struct podopt){.started = 3001, .runtime = "100s"});
	gang(&w, "s", "N", 1, 4, NULL, (struct podopt){.started = 3002});
	gang(&w, "s", "S", 1, 4, NULL, (struct podopt){.started = 3003, .runtime = "30"});
	cycle(&w);
	h = find(&w, "s", "H");
	assert_int_equal(h->state, PLAN_WAITING);
	assert_true(h->reserved);
	assert_int_equal(h->expected_start_s, NOW_S + 50);
	assert_non_null(strstr(h->message, "; expected start 2026-01-01T01:00:50Z (reservation on "
	                                   "1 node(s))"));
	assert_int_equal(find(&w, "s", "L")->state, PLAN_WAITING);
	assert_int_equal(find(&w, "s", "N")->state, PLAN_WAITING);
	assert_int_equal(find(&w, "s", "S")->state, PLAN_ADMITTED);
	assert_int_equal(w.plan.nbinds, 1);
	assert_int_equal(w.plan.stats.reservations, 1);
	snap_has_reservation(&w, "H", "n-0-0", 8);
	world_free(&w);
}

/* Nothing running has a runtime: H's start is unknown, and every later
 * gang, short or not, keeps off its node. */
static void test_reservation_unknown_start(void **state)
{
	struct world w;
	const struct plan_gang *h;

	(void)state;
	world_init(&w, 1, 1);
	pod(&w, "s", "R", NULL, 4, &(struct podopt){.node = "n-0-0", .started = 10});
	gang(&w, "s", "H", 1, 8, NULL, (struct podopt){.started = 3000});
	gang(&w, "s", "S", 1, 4, NULL, (struct podopt){.started = 3003, .runtime = "30"});
	cycle(&w);
	h = find(&w, "s", "H");
	assert_true(h->reserved);
	assert_int_equal(h->expected_start_s, PLAN_NEVER);
	assert_non_null(strstr(h->message, "; expected start unknown (reservation on 1 node(s))"));
	assert_int_equal(find(&w, "s", "S")->state, PLAN_WAITING);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_priority_minimal_whole_gang),
	    cmocka_unit_test(test_hold_keeps_room_for_preemptor),
	    cmocka_unit_test(test_two_holds_keep_their_rooms),
	    cmocka_unit_test(test_hold_leaves_another_holds_room),
	    cmocka_unit_test(test_hold_lost_leaves_the_other),
	    cmocka_unit_test(test_preemptors_across_cycles_minimal_victims),
	    cmocka_unit_test(test_budget_protects_victim),
	    cmocka_unit_test(test_budget_with_room_allows),
	    cmocka_unit_test(test_protections),
	    cmocka_unit_test(test_min_runtime),
	    cmocka_unit_test(test_reclaim),
	    cmocka_unit_test(test_no_reclaim_beyond_nominal),
	    cmocka_unit_test(test_reservation_and_backfill),
	    cmocka_unit_test(test_reservation_unknown_start),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
