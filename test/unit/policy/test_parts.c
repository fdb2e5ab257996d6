/*
 * policy/backfill.h and policy/preempt.h on their own, and policy_place(),
 * the placement both build on, with the plain inputs they take (a node
 * table, a timeline of ends, a queue tree, candidate views) and no
 * planner: each test builds a small table whose one right answer it names
 * in a comment, and checks the decision returned and what was left in the
 * table.
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
#include "policy/backfill.h"
#include "policy/preempt.h"
#include "queue/queue.h"

#define NOW_S 1767229200ll

static const char yaml[] = "resources: [nvidia.com/gpu]\n"
                           "queues:\n"
                           "  - name: q\n"
                           "    namespaces: [t]\n"
                           "    quota: {nvidia.com/gpu: {nominal: 100}}\n"
                           "    preemption: {withinQueue: LowerPriority}\n";

/* n nodes n-0 .. n-(n-1) of 8 GPUs each, all free, and pod specs of 8
 * GPUs and of 1 GPU. */
struct world {
	struct synth s;
	struct config *cfg;
	struct queue_set *qs;
	struct arena arena;
	struct policy_nodes t;
	struct policy_fitcache fits;
	const struct kubeapi_podspec *eight, *one;
};

static void world_init(struct world *w, int n)
{
	const struct kubeapi_node *nodes[8];
	char name[16];

	memset(w, 0, sizeof(*w));
	assert_true(n <= 8);
	assert_int_equal(synth_init(&w->s), 0);
	assert_int_equal(config_parse("t.yaml", yaml, strlen(yaml), &w->cfg, NULL), 0);
	assert_int_equal(queue_set_build(w->cfg, &w->qs), 0);
	for (int k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "n-%d", k);
		nodes[k] = synth_node(&w->s, name, NULL, NULL, 8, NULL);
	}
	assert_int_equal(
	    policy_nodes_build(&w->t, &w->arena, w->s.model, w->cfg, NULL, 0, nodes, (size_t)n), 0);
	w->eight = synth_pod(&w->s, "t", "eight", NULL, "muster", 100, 8, NULL, 0, NULL)->spec;
	w->one = synth_pod(&w->s, "t", "one", NULL, "muster", 100, 1, NULL, 0, NULL)->spec;
}

static void world_free(struct world *w)
{
	policy_fitcache_free(&w->fits);
	policy_nodes_release(&w->t);
	arena_free(&w->arena);
	queue_set_free(&w->qs);
	config_free(&w->cfg);
	synth_free(&w->s);
}

static int64_t free_gpus(const struct world *w, uint32_t node)
{
	return w->t.free[(size_t)node * w->t.nres + KUBEAPI_RES_GPU];
}

/* ---- policy_place(), what the parts call ----------------------------- */

/* Two free nodes, n-0 overcommitted on CPU (its free CPU below zero, as
 * when pods bound by another scheduler outgrow it). A pod that asks no
 * CPU still fits there, and as the lower index of two equally tight
 * hosts it goes there; one that asks CPU goes to n-1. (The placement's
 * first test reads a packed copy of the free CPU: an ask of none must
 * pass it whatever the node has.) */
static void test_place_without_cpu_on_overcommitted_node(void **state)
{
	struct world w;
	const struct kubeapi_podspec *none[1], *some[1];
	const struct policy_held *held[1];
	struct policy_why why;
	uint32_t out[1];

	(void)state;
	world_init(&w, 2);
	none[0] = synth_pod(&w.s, "t", "none", NULL, "muster", 0, 1, NULL, 0, NULL)->spec;
	some[0] = w.one;
	policy_nodes_adjust(&w.t, 0, KUBEAPI_RES_CPU, -w.t.free[KUBEAPI_RES_CPU] - 1000);
	assert_true(w.t.free[KUBEAPI_RES_CPU] < 0);
	assert_int_equal(policy_place(&w.t, &w.fits, &w.arena, none, 1, out, held, &why), 0);
	assert_int_equal(out[0], 0);
	assert_int_equal(policy_place(&w.t, &w.fits, &w.arena, some, 1, out, held, &why), 0);
	assert_int_equal(out[0], 1);
	world_free(&w);
}

/* The packed copies of free CPU and GPUs the first test reads match each
 * node's row. */
static void assert_packed(const struct policy_nodes *t)
{
	for (size_t i = 0; i < t->n; i++) {
		assert_int_equal(t->free_cpu[i], t->free[i * t->nres + KUBEAPI_RES_CPU]);
		assert_int_equal(t->free_gpu[i], t->free[i * t->nres + KUBEAPI_RES_GPU]);
	}
}

/* The members of 1, 2, 4 and 8 GPUs each domain could take (takes), as
 * counted from its nodes themselves, on every level that keeps them. */
static void assert_takes(const struct policy_nodes *t)
{
	for (unsigned l = 0; l < t->nlevels; l++) {
		const struct policy_level *lv = &t->level[l];

		for (uint32_t d = 0; lv->takes && d < lv->ndomains; d++)
			for (unsigned x = 0; x < POLICY_TAKES; x++) {
				uint32_t want = 0;

				for (uint32_t k = lv->start[d]; k < lv->start[d + 1]; k++) {
					int64_t f = t->free_gpu[lv->members[k]];

					want += f > 0 ? (uint32_t)(f / (1 << x)) : 0;
				}
				assert_int_equal(lv->takes[(size_t)d * POLICY_TAKES + x], want);
			}
	}
}

/* Whole GPUs through the packed copy: an 8-GPU member goes to the only
 * node with 8 free, a 1-GPU one to the node left with the fewest, and
 * once no node has one free, none is placed; the copy follows every
 * change (placement, adjustment, a copy of the table). */
static void test_place_reads_whole_gpus_kept_packed(void **state)
{
	struct world w;
	struct policy_nodes copy;
	const struct kubeapi_podspec *eight[1], *one[1];
	const struct policy_held *held[1];
	struct policy_why why;
	uint32_t out[1];

	(void)state;
	world_init(&w, 2);
	eight[0] = w.eight;
	one[0] = w.one;
	policy_nodes_adjust(&w.t, 1, KUBEAPI_RES_GPU, -6); /* n-1: 2 free */
	assert_packed(&w.t);
	assert_int_equal(policy_place(&w.t, &w.fits, &w.arena, eight, 1, out, held, &why), 0);
	assert_int_equal(out[0], 0);
	assert_packed(&w.t);
	assert_int_equal(policy_place(&w.t, &w.fits, &w.arena, one, 1, out, held, &why), 0);
	assert_int_equal(out[0], 1);
	assert_packed(&w.t);
	assert_int_equal(policy_nodes_copy(&copy, &w.t, &w.arena), 0);
	policy_nodes_adjust(&copy, 1, KUBEAPI_RES_GPU, -1); /* none free in the copy */
	assert_packed(&copy);
	assert_int_equal(policy_place(&copy, &w.fits, &w.arena, one, 1, out, held, &why), -ENOSPC);
	assert_int_equal(policy_place(&w.t, &w.fits, &w.arena, one, 1, out, held, &why), 0);
	assert_int_equal(out[0], 1);
	assert_int_equal(free_gpus(&w, 1), 0);
	world_free(&w);
}

/* An 8-GPU pod (and 100m of CPU) that fits on none of five nodes, each
 * short in its own way: n-0 of a GPU, n-1 of CPU, n-2 of both, n-3 of
 * every GPU, n-4 of pod room alone. The why counts each node short once
 * (5) and names the request short on the most nodes: the GPUs, short on
 * three, where the CPU is short on two. */
static void test_why_counts_the_short_nodes_and_request(void **state)
{
	struct world w;
	const struct kubeapi_podspec *eight[1];
	const struct policy_held *held[1];
	struct policy_why why;
	uint32_t out[1];

	(void)state;
	world_init(&w, 5);
	eight[0] = w.eight;
	policy_nodes_adjust(&w.t, 0, KUBEAPI_RES_GPU, -1);
	policy_nodes_adjust(&w.t, 1, KUBEAPI_RES_CPU, -w.t.free[1 * w.t.nres + KUBEAPI_RES_CPU]);
	policy_nodes_adjust(&w.t, 2, KUBEAPI_RES_GPU, -1);
	policy_nodes_adjust(&w.t, 2, KUBEAPI_RES_CPU, -w.t.free[2 * w.t.nres + KUBEAPI_RES_CPU]);
	policy_nodes_adjust(&w.t, 3, KUBEAPI_RES_GPU, -8);
	policy_nodes_adjust(&w.t, 4, KUBEAPI_RES_PODS, -w.t.free[4 * w.t.nres + KUBEAPI_RES_PODS]);
	assert_int_equal(policy_place(&w.t, &w.fits, &w.arena, eight, 1, out, held, &why), -ENOSPC);
	assert_int_equal(why.placed, 0);
	assert_int_equal(why.short_nodes, 5);
	assert_int_equal(why.short_res, KUBEAPI_RES_GPU);
	/* n-0 with its GPU back but no pod room, n-3 short of CPU too: the
	 * CPU is short on three nodes, the GPUs on two. */
	policy_nodes_adjust(&w.t, 0, KUBEAPI_RES_GPU, 1);
	policy_nodes_adjust(&w.t, 3, KUBEAPI_RES_CPU, -w.t.free[3 * w.t.nres + KUBEAPI_RES_CPU]);
	policy_nodes_adjust(&w.t, 0, KUBEAPI_RES_PODS, -w.t.free[0 * w.t.nres + KUBEAPI_RES_PODS]);
	assert_int_equal(policy_place(&w.t, &w.fits, &w.arena, eight, 1, out, held, &why), -ENOSPC);
	assert_int_equal(why.short_nodes, 5);
	assert_int_equal(why.short_res, KUBEAPI_RES_CPU);
	world_free(&w);
}

/* A table's domains, every level, against another's. */
static void assert_same_levels(const struct policy_nodes *a, const struct policy_nodes *b)
{
	assert_int_equal(a->nlevels, b->nlevels);
	for (unsigned l = 0; l < a->nlevels; l++) {
		assert_int_equal(a->level[l].ndomains, b->level[l].ndomains);
		for (uint32_t d = 0; d < a->level[l].ndomains; d++) {
			assert_int_equal(a->level[l].free_gpu[d], b->level[l].free_gpu[d]);
			assert_int_equal(a->level[l].free_core[d], b->level[l].free_core[d]);
			assert_int_equal(a->level[l].empty_gpu[d], b->level[l].empty_gpu[d]);
		}
	}
	assert_takes(a);
	assert_takes(b);
}

/* Zones, racks and hosts: the levels of the tests below. */
static const char levels[] = "resources: [nvidia.com/gpu]\n"
                             "topology:\n"
                             "  levels: [topology.kubernetes.io/zone, muster.dev/rack,\n"
                             "           kubernetes.io/hostname]\n"
                             "queues:\n"
                             "  - name: q\n"
                             "    namespaces: [t]\n";

/* A tally (the bound pods' count, whose domains' totals are summed once
 * at the settle) leaves every domain of every level as counting pod by
 * pod does: whole GPUs on plain nodes, and vGPU shares on a registered
 * node (one GPU half used, one full, two empty). */
static void test_tally_sums_domains_as_a_count_keeps_them(void **state)
{
	const char *lab = "\"kubernetes.io/hostname\":\"v-0\",\"topology.kubernetes.io/zone\":"
	                  "\"z-1\",\"muster.dev/rack\":\"r-2\"";
	struct synth s;
	struct config *cfg;
	struct arena a1 = {0}, a2 = {0};
	struct policy_nodes t1, t2;
	const struct kubeapi_node *nodes[5];
	const struct kubeapi_podspec *one, *four;
	struct kubeapi_vgpu_held *kh = calloc(1, sizeof(*kh) + 2 * sizeof(kh->e[0]));
	const struct policy_held *h1, *h2;
	char name[16], zone[16], rack[16];

	(void)state;
	assert_int_equal(synth_init(&s), 0);
	assert_int_equal(config_parse("t.yaml", levels, strlen(levels), &cfg, NULL), 0);
	for (int k = 0; k < 4; k++) {
		snprintf(name, sizeof(name), "n-%d", k);
		snprintf(zone, sizeof(zone), "z-%d", k / 2);
		snprintf(rack, sizeof(rack), "r-%d", k);
		nodes[k] = synth_node(&s, name, zone, rack, 8, NULL);
	}
	nodes[4] = synth_vgpu_node(&s, "v-0", 4, 32768, 10, lab);
	assert_int_equal(policy_nodes_build(&t1, &a1, s.model, cfg, NULL, 0, nodes, 5), 0);
	assert_int_equal(policy_nodes_build(&t2, &a2, s.model, cfg, NULL, 0, nodes, 5), 0);
	one = synth_pod(&s, "t", "one", NULL, "muster", 100, 1, NULL, 0, NULL)->spec;
	four = synth_pod(&s, "t", "four", NULL, "muster", 100, 4, NULL, 0, NULL)->spec;
	*kh = (struct kubeapi_vgpu_held){.n = 2, .ncontainers = 1};
	kh->e[0] = (struct kubeapi_vgpu_hold){0, synth_id(&s, "GPU-v-0-1"), 16384, 50};
	kh->e[1] = (struct kubeapi_vgpu_hold){0, synth_id(&s, "GPU-v-0-2"), 32768, 100};
	assert_int_equal(policy_nodes_held(&t1, 4, kh, &a1, &h1), 0);
	assert_int_equal(policy_nodes_held(&t2, 4, kh, &a2, &h2), 0);
	assert_non_null(h1);
	for (size_t i = 0; i < 4; i++) {
		policy_nodes_tally(&t1, i, i % 2 ? one : four, NULL, -1);
		policy_nodes_count(&t2, i, i % 2 ? one : four, NULL, -1);
	}
	policy_nodes_tally(&t1, 0, one, NULL, -1);
	policy_nodes_count(&t2, 0, one, NULL, -1);
	policy_nodes_tally(&t1, 4, one, h1, -1);
	policy_nodes_count(&t2, 4, one, h2, -1);
	policy_nodes_settle(&t1);
	policy_nodes_settle(&t2);
	assert_same_levels(&t1, &t2);
	assert_int_equal(t1.level[0].free_gpu[0], 16 - 4 - 1 - 1); /* zone z-0: n-0, n-1 */
	assert_int_equal(t1.level[2].empty_gpu[t1.domain[4 * t1.nlevels + 2]], 2);
	assert_int_equal(t1.level[2].free_core[t1.domain[4 * t1.nlevels + 2]], 250);
	policy_nodes_release(&t1);
	policy_nodes_release(&t2);
	arena_free(&a1);
	arena_free(&a2);
	free(kh);
	config_free(&cfg);
	synth_free(&s);
}

/* Two 4-GPU members, one zone of two racks, 8 GPUs free in each: rack
 * r-0's on nodes of 6 and 2, too small for two members, rack r-1's as
 * 4 and 4. No node holds both; r-0 is the first rack the search meets
 * (equal room, lower index), and the members its nodes could take turn it
 * down (a run in it would fail as well: the gang lands in r-1 either
 * way). The counts follow every change: adjustment, placement, a copy
 * of the table and an assignment back. */
static void test_gpu_counts_follow_every_change(void **state)
{
	static const int64_t take[4] = {2, 6, 4, 4}; /* leaves 6, 2, 4, 4 */
	struct synth s;
	struct config *cfg;
	struct arena a = {0};
	struct policy_nodes t, copy;
	struct policy_fitcache fits = {0};
	const struct kubeapi_node *nodes[4];
	const struct kubeapi_podspec *four[2];
	const struct policy_held *held[2];
	struct policy_why why;
	uint32_t out[2];
	char name[16], rack[16];

	(void)state;
	assert_int_equal(synth_init(&s), 0);
	assert_int_equal(config_parse("t.yaml", levels, strlen(levels), &cfg, NULL), 0);
	for (int k = 0; k < 4; k++) {
		snprintf(name, sizeof(name), "n-%d", k);
		snprintf(rack, sizeof(rack), "r-%d", k / 2);
		nodes[k] = synth_node(&s, name, "z-0", rack, 8, NULL);
	}
	assert_int_equal(policy_nodes_build(&t, &a, s.model, cfg, NULL, 0, nodes, 4), 0);
	assert_non_null(t.level[0].takes); /* zones and racks keep counts */
	assert_non_null(t.level[1].takes);
	assert_null(t.level[2].takes); /* a host's are its row */
	assert_takes(&t);
	for (size_t i = 0; i < 4; i++)
		policy_nodes_adjust(&t, i, KUBEAPI_RES_GPU, -take[i]);
	assert_takes(&t);
	assert_int_equal(t.level[1].takes[0], 8); /* r-0: 6 and 2 free */
	assert_int_equal(t.level[1].takes[2], 1); /* one member of 4 GPUs */
	assert_int_equal(policy_nodes_copy(&copy, &t, &a), 0);
	four[0] = four[1] = synth_pod(&s, "t", "four", NULL, "muster", 100, 4, NULL, 0, NULL)->spec;
	assert_int_equal(policy_place(&t, &fits, &a, four, 2, out, held, &why), 0);
	assert_true(out[0] >= 2 && out[1] >= 2 && out[0] != out[1]); /* r-1's nodes */
	assert_takes(&t);
	assert_takes(&copy); /* the copy's own, unchanged */
	/* r-1 in the copy: 4 and 4 free */
	assert_int_equal(copy.level[1].takes[POLICY_TAKES + 2], 2);
	policy_nodes_assign(&t, &copy);
	assert_takes(&t);
	assert_int_equal(t.level[0].takes[2], 3); /* 6, 2, 4, 4 free */
	policy_fitcache_free(&fits);
	policy_nodes_release(&t);
	arena_free(&a);
	config_free(&cfg);
	synth_free(&s);
}

/* Best fit member by member among more nodes than members: three 4-GPU
 * members, a gang no node holds, in a rack of seven nodes left with 8,
 * 7, 3, 6, 2, 5 and 4 free GPUs. The first goes to the node of 4 (none
 * left), the second to that of 5 (too few left for a third), the third
 * to that of 6: the three best in order, the best nodes listed last, as
 * a spec's first member keeps them (place.c's keep_best()). */
static void test_members_take_the_best_fits_in_order(void **state)
{
	static const int64_t take[7] = {0, 1, 5, 2, 6, 3, 4};
	struct synth s;
	struct config *cfg;
	struct arena a = {0};
	struct policy_nodes t;
	struct policy_fitcache fits = {0};
	const struct kubeapi_node *nodes[7];
	const struct kubeapi_podspec *gang[3];
	const struct policy_held *held[3];
	struct policy_why why;
	uint32_t out[3];
	char name[16];

	(void)state;
	assert_int_equal(synth_init(&s), 0);
	assert_int_equal(config_parse("t.yaml", levels, strlen(levels), &cfg, NULL), 0);
	for (int k = 0; k < 7; k++) {
		snprintf(name, sizeof(name), "n-%d", k);
		nodes[k] = synth_node(&s, name, "z-0", "r-0", 8, NULL);
	}
	assert_int_equal(policy_nodes_build(&t, &a, s.model, cfg, NULL, 0, nodes, 7), 0);
	for (size_t i = 0; i < 7; i++)
		policy_nodes_adjust(&t, i, KUBEAPI_RES_GPU, -take[i]);
	gang[0] = gang[1] = gang[2] =
	    synth_pod(&s, "t", "four", NULL, "muster", 100, 4, NULL, 0, NULL)->spec;
	assert_int_equal(policy_place(&t, &fits, &a, gang, 3, out, held, &why), 0);
	assert_int_equal(out[0], 6);
	assert_int_equal(out[1], 5);
	assert_int_equal(out[2], 3);
	assert_takes(&t);
	policy_fitcache_free(&fits);
	policy_nodes_release(&t);
	arena_free(&a);
	config_free(&cfg);
	synth_free(&s);
}

/* The zone test's gang (below): twelve 8-GPU members, one node in 25
 * at the same offset each time GPUs are given back. */
enum { ZONE_NODES = 320, ZONE_MEMBERS = 12, ZONE_EVERY = 25 };

/* The gang placed within zone 0 of t: where it went, as the offset its
 * nodes share (-1 if they differ), or placement's negative errno. */
static long zone_offset(struct policy_nodes *t, struct policy_fitcache *fits, struct arena *a,
                        const struct kubeapi_podspec *const *gang)
{
	const struct policy_within zone = {0, POLICY_NO_DOMAIN};
	const struct policy_held *held[ZONE_MEMBERS];
	struct policy_why why;
	uint32_t out[ZONE_MEMBERS];
	int rc = policy_place_within(t, fits, a, &zone, gang, ZONE_MEMBERS, out, held, &why);

	if (rc < 0)
		return rc;
	for (size_t m = 1; m < ZONE_MEMBERS; m++)
		if (out[m] % ZONE_EVERY != out[0] % ZONE_EVERY)
			return -1;
	return out[0] % ZONE_EVERY;
}

/* gpus given back on the nodes at offset at, one in ZONE_EVERY. */
static void give_back(struct policy_nodes *t, size_t at, int64_t gpus)
{
	for (size_t m = 0; m < ZONE_MEMBERS; m++)
		policy_nodes_adjust(t, m * ZONE_EVERY + at, KUBEAPI_RES_GPU, gpus);
}

/* A zone of 320 nodes in racks of 8 keeps lists of its nodes by free
 * GPUs (place.c), which a gang too big for any rack is placed on: twelve
 * 8-GPU members. The lists are made as the gang first lands on the only
 * twelve nodes with GPUs free, one a rack; GPUs given back then on twelve
 * others must reach them (adjustment), and so must a whole table assigned
 * back (a copy with yet other nodes free) and GPUs given back in two
 * halves, or the gang fits nowhere (it is asked to stay within a zone:
 * no placement over the whole cluster makes up for a zone trial that
 * missed its nodes). */
static void test_zone_list_follows_gpus_given_back(void **state)
{
	struct synth s;
	struct config *cfg;
	struct arena a = {0};
	struct policy_nodes t, copy;
	struct policy_fitcache fits = {0};
	const struct kubeapi_node *nodes[ZONE_NODES];
	const struct kubeapi_podspec *eight[ZONE_MEMBERS];
	char name[16], rack[16];

	(void)state;
	assert_int_equal(synth_init(&s), 0);
	assert_int_equal(config_parse("t.yaml", levels, strlen(levels), &cfg, NULL), 0);
	for (int k = 0; k < ZONE_NODES; k++) {
		snprintf(name, sizeof(name), "n-%03d", k);
		snprintf(rack, sizeof(rack), "r-%02d", k / 8);
		nodes[k] = synth_node(&s, name, "z-0", rack, 8, NULL);
	}
	assert_int_equal(policy_nodes_build(&t, &a, s.model, cfg, NULL, 0, nodes, ZONE_NODES), 0);
	for (size_t i = 0; i < ZONE_NODES; i++)
		if (i % ZONE_EVERY != 3 || i / ZONE_EVERY >= ZONE_MEMBERS)
			policy_nodes_adjust(&t, i, KUBEAPI_RES_GPU, -8);
	eight[0] = synth_pod(&s, "t", "eight", NULL, "muster", 100, 8, NULL, 0, NULL)->spec;
	for (int m = 1; m < ZONE_MEMBERS; m++)
		eight[m] = eight[0];
	assert_int_equal(zone_offset(&t, &fits, &a, eight), 3);
	assert_int_equal(zone_offset(&t, &fits, &a, eight), -ENOSPC);
	give_back(&t, 11, 8);
	assert_int_equal(zone_offset(&t, &fits, &a, eight), 11);
	assert_int_equal(policy_nodes_copy(&copy, &t, &a), 0);
	give_back(&copy, 17, 8);
	policy_nodes_assign(&t, &copy);
	assert_int_equal(zone_offset(&t, &fits, &a, eight), 17);
	/* Halfway is not enough for an 8-GPU member; the second half must
	 * list the nodes for eight (a rise from 4, not from none). */
	give_back(&t, 5, 4);
	assert_int_equal(zone_offset(&t, &fits, &a, eight), -ENOSPC);
	give_back(&t, 5, 4);
	assert_int_equal(zone_offset(&t, &fits, &a, eight), 5);
	policy_fitcache_free(&fits);
	policy_nodes_release(&t);
	arena_free(&a);
	config_free(&cfg);
	synth_free(&s);
}

/* ---- backfill.h ------------------------------------------------------ */

/* Three nodes; n-0 is busy until now+100, n-1 until now+200, n-2 free. A
 * gang of three 8-GPU members starts when both have ended: now+200, on
 * all three nodes, and ends its runtime later. Then a pod ending after
 * that start may not take n-2 (the reservation leaves nothing there);
 * one ending before it may. */
static void test_reserve_then_backfill(void **state)
{
	const struct kubeapi_podspec *gang[3], *one[1];
	const struct backfill_resv *v;
	struct backfill b;
	struct policy_why why;
	struct world w;
	uint32_t out[1];
	const struct policy_held *held[1];

	(void)state;
	world_init(&w, 3);
	gang[0] = gang[1] = gang[2] = w.eight;
	policy_nodes_use(&w.t, 0, w.eight, NULL, -1);
	policy_nodes_use(&w.t, 1, w.eight, NULL, -1);
	assert_int_equal(backfill_init(&b, &w.t, &w.fits, &w.arena, NOW_S, 1), 0);
	assert_int_equal(backfill_timeline_add(&b, NOW_S + 200, 1, -1, w.eight, NULL), 0);
	assert_int_equal(backfill_timeline_add(&b, NOW_S + 100, 0, -1, w.eight, NULL), 0);
	assert_int_equal(backfill_reserve(&b, 7, NULL, gang, 3, 50, &v),
	                 -EINVAL); /* no timeline yet */
	backfill_timeline_done(&b);
	assert_int_equal(backfill_reserve(&b, 7, NULL, gang, 3, 50, &v), 1);
	assert_int_equal(v->id, 7);
	assert_int_equal(v->start_s, NOW_S + 200);
	assert_int_equal(v->end_s, NOW_S + 250);
	assert_int_equal(v->nmembers, 3);
	assert_int_equal(v->n, 3);
	assert_true(backfill_full(&b));
	/* The live table is untouched by the search. */
	assert_int_equal(free_gpus(&w, 0), 0);
	assert_int_equal(free_gpus(&w, 1), 0);
	assert_int_equal(free_gpus(&w, 2), 8);

	one[0] = w.eight;
	assert_int_equal(backfill_place(&b, NOW_S + 300, NULL, one, 1, out, held, &why), -ENOSPC);
	assert_int_equal(backfill_place(&b, POLICY_NEVER, NULL, one, 1, out, held, &why), -ENOSPC);
	assert_int_equal(free_gpus(&w, 2), 8); /* given back after the refusal */
	assert_int_equal(backfill_place(&b, NOW_S + 150, NULL, one, 1, out, held, &why), 0);
	assert_int_equal(out[0], 2);
	assert_int_equal(free_gpus(&w, 2), 0);
	assert_int_equal(b.backfilled, 1);
	world_free(&w);
}

/* Work without an estimate: the gang starts only once it ends too, so
 * its start is unknown; a gang larger than the cluster holds nothing. */
static void test_reserve_unknown_and_never(void **state)
{
	const struct kubeapi_podspec *two[2] = {0}, *three[3] = {0};
	const struct backfill_resv *v;
	struct backfill b;
	struct world w;

	(void)state;
	world_init(&w, 2);
	two[0] = two[1] = three[0] = three[1] = three[2] = w.eight;
	policy_nodes_use(&w.t, 0, w.eight, NULL, -1);
	assert_int_equal(backfill_init(&b, &w.t, &w.fits, &w.arena, NOW_S, 2), 0);
	assert_int_equal(backfill_timeline_add(&b, POLICY_NEVER, 0, -1, w.eight, NULL), 0);
	backfill_timeline_done(&b);
	assert_int_equal(backfill_reserve(&b, 1, NULL, three, 3, 60, &v), 0);
	assert_null(v);
	assert_int_equal(b.nresv, 0);
	assert_int_equal(backfill_reserve(&b, 2, NULL, two, 2, 60, &v), 1);
	assert_int_equal(v->start_s, POLICY_NEVER);
	assert_int_equal(v->end_s, POLICY_NEVER);
	world_free(&w);
}

/* What a forever_fill callback gives: one end without an estimate, on
 * node 0; how many times it was called. */
struct fill_once {
	const struct kubeapi_podspec *spec;
	int calls;
};

static int fill_one(void *arg, struct backfill *b)
{
	struct fill_once *f = arg;

	f->calls++;
	return backfill_timeline_add(b, POLICY_NEVER, 0, -1, f->spec, NULL);
}

/* The work without an estimate, given on first need: a search that
 * finds room among the timed ends never asks for it; one that runs out
 * of them asks once, and the gang's start is unknown, as when the work
 * came with the timeline. n-0 is busy for good, n-1 until now+100. */
static void test_reserve_forever_on_need(void **state)
{
	const struct kubeapi_podspec *one[1] = {0}, *two[2] = {0};
	const struct backfill_resv *v;
	struct backfill b;
	struct fill_once f = {0};
	struct world w;

	(void)state;
	world_init(&w, 2);
	f.spec = one[0] = two[0] = two[1] = w.eight;
	policy_nodes_use(&w.t, 0, w.eight, NULL, -1);
	policy_nodes_use(&w.t, 1, w.eight, NULL, -1);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(backfill_init(&b, &w.t, &w.fits, &w.arena, NOW_S, 1), 0);
		assert_int_equal(backfill_timeline_add(&b, NOW_S + 100, 1, -1, w.eight, NULL), 0);
		backfill_timeline_done(&b);
		b.forever_fill = fill_one;
		b.vacate_arg = &f;
		assert_int_equal(backfill_reserve(&b, 1, NULL, k ? two : one, k ? 2 : 1, 60, &v),
		                 1);
		assert_int_equal(v->start_s, k ? POLICY_NEVER : NOW_S + 100);
		assert_int_equal(f.calls, k);
		assert_int_equal(b.nforever, k);
	}
	assert_int_equal(backfill_forever(&b), 0); /* made once */
	assert_int_equal(f.calls, 1);
	world_free(&w);
}

/* ---- preempt.h ------------------------------------------------------- */

/* A candidate of one 8-GPU pod on node `node`, in queue q. */
static struct preempt_cand cand(struct world *w, uint32_t id, uint32_t node, int32_t priority,
                                int64_t *req)
{
	uint32_t *at = arena_alloc(&w->arena, sizeof(*at));
	const struct kubeapi_podspec **spec = arena_alloc(&w->arena, sizeof(*spec));

	*at = node;
	*spec = w->eight;
	req[0] = 8;
	return (struct preempt_cand){.id = id,
	                             .queue = queue_set_find(w->qs, "q"),
	                             .priority = priority,
	                             .started_s = NOW_S - 600,
	                             .npods = 1,
	                             .node = at,
	                             .spec = spec,
	                             .req = req};
}

/* Two nodes full, each with one candidate; the cheaper (lower priority)
 * one is the single victim, the preemptor goes where it ran, and both
 * stay counted until the victim is gone. */
static void test_preempt_one_victim(void **state)
{
	int64_t req[1] = {8}, vreq[2][1];
	const struct kubeapi_podspec *specs[1];
	struct preempt_cand c[2];
	struct preempt_budget budget = {0};
	struct preempt_answer ans;
	struct preempt_ask ask;
	struct world w;
	int q;

	(void)state;
	world_init(&w, 2);
	q = queue_set_find(w.qs, "q");
	specs[0] = w.eight;
	c[0] = cand(&w, 10, 0, 5, vreq[0]);
	c[1] = cand(&w, 11, 1, 1, vreq[1]);
	for (int k = 0; k < 2; k++)
		preempt_release(&w.t, queue_set_tree(w.qs), &c[k], -1); /* they run */
	assert_int_equal(queue_tree_demand(queue_set_tree(w.qs), q, 0), 16);
	preempt_order(c, 2);
	assert_int_equal(c[0].id, 11); /* lower priority first */
	ask = (struct preempt_ask){&w.t,  &w.fits, &w.arena, queue_set_tree(w.qs), 1, q, req,
	                           specs, 1,       NULL};
	assert_int_equal(preempt_search(&ask, c, 2, &budget, &ans), 1);
	assert_int_equal(ans.nvictims, 1);
	assert_int_equal(ans.victims[0].id, 11);
	assert_int_equal(ans.at[0], 1);
	assert_true(budget.tries > budget.checks); /* the answer's placement is outside it */
	assert_int_equal(free_gpus(&w, 1), -8);
	assert_int_equal(free_gpus(&w, 0), 0);
	assert_int_equal(queue_tree_demand(queue_set_tree(w.qs), q, 0), 24);
	world_free(&w);
}

/* Out of budget: no answer, and nothing changed. */
static void test_preempt_out_of_budget(void **state)
{
	int64_t req[1] = {8}, vreq[1][1];
	const struct kubeapi_podspec *specs[1];
	struct preempt_cand c[1];
	struct preempt_budget budget = {PREEMPT_CHECKS_PER_CYCLE, 0};
	struct preempt_answer ans;
	struct preempt_ask ask;
	struct world w;
	int q;

	(void)state;
	world_init(&w, 1);
	q = queue_set_find(w.qs, "q");
	specs[0] = w.eight;
	c[0] = cand(&w, 3, 0, 0, vreq[0]);
	preempt_release(&w.t, queue_set_tree(w.qs), &c[0], -1);
	preempt_order(c, 1);
	ask = (struct preempt_ask){&w.t,  &w.fits, &w.arena, queue_set_tree(w.qs), 1, q, req,
	                           specs, 1,       NULL};
	assert_int_equal(preempt_search(&ask, c, 1, &budget, &ans), 0);
	assert_int_equal(ans.nvictims, 0);
	assert_int_equal(budget.tries, 0);
	assert_int_equal(free_gpus(&w, 0), 0);
	assert_int_equal(queue_tree_demand(queue_set_tree(w.qs), q, 0), 8);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_place_without_cpu_on_overcommitted_node),
	    cmocka_unit_test(test_place_reads_whole_gpus_kept_packed),
	    cmocka_unit_test(test_why_counts_the_short_nodes_and_request),
	    cmocka_unit_test(test_tally_sums_domains_as_a_count_keeps_them),
	    cmocka_unit_test(test_gpu_counts_follow_every_change),
	    cmocka_unit_test(test_members_take_the_best_fits_in_order),
	    cmocka_unit_test(test_zone_list_follows_gpus_given_back),
	    cmocka_unit_test(test_reserve_then_backfill),
	    cmocka_unit_test(test_reserve_unknown_and_never),
	    cmocka_unit_test(test_reserve_forever_on_need),
	    cmocka_unit_test(test_preempt_one_victim),
	    cmocka_unit_test(test_preempt_out_of_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
