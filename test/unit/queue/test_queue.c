/*
 * queue: a config as a quota tree (slots, requests), which queue a gang
 * belongs to, and the order of one cycle: priority then submission time
 * inside a queue, StrictFIFO against BestEffortFIFO, and weighted fair
 * share across queues (the expected orders are worked out in comments).
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

#include "config/config.h"
#include "queue/queue.h"

static const char teams_yaml[] = "resources: [cpu, nvidia.com/gpu]\n"
                                 "flavors:\n"
                                 "  - name: h100\n"
                                 "    nodeLabels: {nvidia.com/gpu.product: H100}\n"
                                 "  - name: a100\n"
                                 "    nodeLabels: {nvidia.com/gpu.product: A100}\n"
                                 "defaultQueue: shared\n"
                                 "cohorts:\n"
                                 "  - name: research\n"
                                 "    weight: 2\n"
                                 "    queues:\n"
                                 "      - name: team-a\n"
                                 "        namespaces: [team-a, team-a-dev]\n"
                                 "        quota:\n"
                                 "          nvidia.com/gpu: {nominal: 16}\n"
                                 "          nvidia.com/gpu@h100: {nominal: 8}\n"
                                 "      - name: team-b\n"
                                 "        namespaces: [team-b]\n"
                                 "        ordering: StrictFIFO\n"
                                 "        quota:\n"
                                 "          nvidia.com/gpu: {nominal: 16}\n"
                                 "queues:\n"
                                 "  - name: shared\n"
                                 "    quota: {cpu: {nominal: 10}}\n"
                                 "  - name: default\n";

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

static int node_of(const struct fixture *f, const char *name)
{
	int n = queue_set_find(f->qs, name);

	if (n < 0)
		fail_msg("no queue %s", name);
	return n;
}

/* ---- the set ------------------------------------------------------- */

/* Slots: cpu, gpu (the resources), then gpu@h100, the one pair a quota
 * names. team-a's tree quota is 16 GPUs, 8 of them H100; team-b has no
 * H100 quota (nominal 0 there). The research pool is the sum: 32 and 8. */
static void test_slots_and_quotas(void **state)
{
	struct fixture f;
	const struct queue_tree *t;
	int a, b, research;

	(void)state;
	setup(&f, teams_yaml);
	t = queue_set_tree_c(f.qs);
	assert_int_equal(queue_set_nslots(f.qs), 3);
	assert_int_equal(queue_set_slot(f.qs, 0)->resource, 0);
	assert_true(queue_set_slot(f.qs, 1)->flavor == CONFIG_NO_FLAVOR);
	assert_int_equal(queue_set_slot(f.qs, 2)->resource, 1);
	assert_int_equal(queue_set_slot(f.qs, 2)->flavor, 0);
	assert_null(queue_set_slot(f.qs, 3));

	a = node_of(&f, "team-a");
	b = node_of(&f, "team-b");
	research = queue_tree_parent(t, a);
	assert_string_equal(queue_tree_name(t, research), "research");
	assert_int_equal(queue_tree_parent(t, b), research);
	assert_int_equal(queue_tree_quota(t, a, 1), 16);
	assert_int_equal(queue_tree_quota(t, a, 2), 8);
	assert_int_equal(queue_tree_quota(t, b, 2), 0);
	assert_int_equal(queue_tree_quota(t, research, 1), 32);
	assert_int_equal(queue_tree_quota(t, research, 2), 8);
	assert_int_equal(queue_tree_quota(t, node_of(&f, "shared"), 0), 10000); /* millicores */
	assert_string_equal(queue_set_queue(f.qs, a)->name, "team-a");
	assert_null(queue_set_queue(f.qs, research));
	assert_int_equal(queue_set_find(f.qs, "research"), -ENOENT);
	assert_int_equal(queue_set_find(f.qs, "nope"), -ENOENT);
	teardown(&f);
}

/* 8 GPUs and 1 CPU on H100 nodes count in gpu and gpu@h100; on A100 nodes
 * (no quota slot) and on nodes of no flavor, in gpu only. */
static void test_requests(void **state)
{
	const int64_t pod[2] = {1000, 8};
	struct fixture f;
	int64_t req[3] = {0};

	(void)state;
	setup(&f, teams_yaml);
	queue_set_add_request(f.qs, req, pod, 0);
	assert_int_equal(req[0], 1000);
	assert_int_equal(req[1], 8);
	assert_int_equal(req[2], 8);
	queue_set_add_request(f.qs, req, pod, 1);
	queue_set_add_request(f.qs, req, pod, CONFIG_NO_FLAVOR);
	assert_int_equal(req[0], 3000);
	assert_int_equal(req[1], 24);
	assert_int_equal(req[2], 8);

	/* The H100 quota binds before the GPU one: 8 H100 GPUs fit team-b
	 * only by borrowing team-a's H100 lending, which is all 8. */
	{
		struct queue_verdict v;
		int64_t nine[3] = {0, 9, 9};

		v = queue_tree_fits(queue_set_tree_c(f.qs), node_of(&f, "team-b"), nine);
		assert_false(v.fits);
		assert_int_equal(v.slot, 2);
		assert_int_equal(v.limit, 8);
	}
	teardown(&f);
}

/* ---- resolution ----------------------------------------------------- */

struct resolve_case {
	const char *label, *volcano, *ns;
	const char *want_queue; /* NULL: no queue */
	enum queue_source want_source;
	const char *want_reason; /* a substring, when no queue */
};

static void run_resolve(const struct fixture *f, const struct resolve_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct resolve_case *k = &cases[i];
		struct queue_resolution r;
		int rc = queue_resolve(f->qs, k->label, k->volcano, k->ns, &r);

		if (k->want_queue) {
			if (rc != 0)
				fail_msg("case %zu: %s", i, r.reason);
			assert_string_equal(queue_tree_name(queue_set_tree_c(f->qs), r.node),
			                    k->want_queue);
			if (r.source != k->want_source)
				fail_msg("case %zu: source %s", i, queue_source_name(r.source));
			assert_string_equal(r.reason, "");
			continue;
		}
		assert_int_equal(rc, -ENOENT);
		assert_int_equal(r.node, QUEUE_NONE);
		if (!strstr(r.reason, k->want_reason))
			fail_msg("case %zu: reason \"%s\", want \"%s\"", i, r.reason,
			         k->want_reason);
	}
}

static void test_resolve(void **state)
{
	static const struct resolve_case with_default[] = {
	    /* the label wins over everything */
	    {"team-b", "team-a", "team-a", "team-b", QUEUE_FROM_LABEL, NULL},
	    {"nope", NULL, "team-a", NULL, 0,
	     "label muster.dev/queue names queue \"nope\", which is not a queue"},
	    {"research", NULL, "team-a", NULL, 0, "names queue \"research\""}, /* a cohort */
	    /* then Volcano's spec.queue */
	    {NULL, "team-a", "team-b", "team-a", QUEUE_FROM_VOLCANO, NULL},
	    {"", "team-a", "team-b", "team-a", QUEUE_FROM_VOLCANO, NULL}, /* empty label */
	    {NULL, "ghost", "team-b", NULL, 0, "spec.queue names queue \"ghost\""},
	    /* "default" is a queue of this config, so it is taken */
	    {NULL, "default", "team-b", "default", QUEUE_FROM_VOLCANO, NULL},
	    /* then the namespace */
	    {NULL, NULL, "team-a-dev", "team-a", QUEUE_FROM_NAMESPACE, NULL},
	    {NULL, "", "team-b", "team-b", QUEUE_FROM_NAMESPACE, NULL},
	    /* then defaultQueue */
	    {NULL, NULL, "elsewhere", "shared", QUEUE_FROM_DEFAULT, NULL},
	    {NULL, NULL, NULL, "shared", QUEUE_FROM_DEFAULT, NULL},
	};
	static const struct resolve_case without_default[] = {
	    /* Volcano's "default" is its admission's filler: it falls through */
	    {NULL, "default", "a", "qa", QUEUE_FROM_NAMESPACE, NULL},
	    {NULL, "default", "b", NULL, 0, "no queue lists namespace \"b\""},
	    {NULL, NULL, "b", NULL, 0,
	     "no queue: no muster.dev/queue label, no queue lists namespace \"b\", and there is "
	     "no defaultQueue"},
	    {"qa", NULL, "b", "qa", QUEUE_FROM_LABEL, NULL},
	};
	struct fixture f;

	(void)state;
	setup(&f, teams_yaml);
	run_resolve(&f, with_default, sizeof(with_default) / sizeof(with_default[0]));
	teardown(&f);
	setup(&f, "queues: [{name: qa, namespaces: [a]}]\n");
	run_resolve(&f, without_default, sizeof(without_default) / sizeof(without_default[0]));
	teardown(&f);
}

/* ---- one cycle ------------------------------------------------------ */

/* Runs a whole cycle; every item is admitted unless its index is in
 * `refuse` (a bitmask of the first 64), and admitted ones are charged. Writes the items in
 * the order served to got[] and returns how many. */
static size_t run_cycle(struct fixture *f, const struct queue_item *items, size_t n,
                        uint64_t refuse, int *got)
{
	struct queue_cycle *c;
	size_t k = 0;
	int i;

	assert_int_equal(queue_cycle_new(f->qs, items, n, &c), 0);
	while ((i = queue_cycle_next(c)) >= 0) {
		bool ok = i >= 64 || !(refuse >> i & 1);

		assert_true(k < n);
		got[k++] = i;
		if (ok && items[i].req)
			assert_int_equal(queue_tree_charge(queue_set_tree(f->qs), items[i].node,
			                                   items[i].req, +1),
			                 0);
		queue_cycle_done(c, i, ok);
	}
	queue_cycle_free(&c);
	return k;
}

static void expect_order(const int *got, size_t n, const int *want, size_t wn)
{
	char g[256] = "", w[256] = "";

	for (size_t i = 0; i < n; i++)
		snprintf(g + strlen(g), sizeof(g) - strlen(g), " %d", got[i]);
	for (size_t i = 0; i < wn; i++)
		snprintf(w + strlen(w), sizeof(w) - strlen(w), " %d", want[i]);
	if (strcmp(g, w) != 0)
		fail_msg("order%s, want%s", g, w);
}

/* In one queue: priority high first, then submitted early, then the
 * tiebreak. Items in no queue (node 0, the root, or -1) are never served. */
static void test_order_in_queue(void **state)
{
	struct fixture f;
	int a, got[8];
	size_t n;

	(void)state;
	setup(&f, teams_yaml);
	a = node_of(&f, "team-a");
	{
		const struct queue_item items[] = {
		    {a, 0, 5, 0, NULL},  /* 0 */
		    {a, 10, 9, 7, NULL}, /* 1 */
		    {a, 0, 1, 0, NULL},  /* 2 */
		    {a, 10, 9, 3, NULL}, /* 3: same as 1 but the lower tiebreak */
		    {0, 99, 0, 0, NULL}, /* 4: the root is not a queue */
		    {-1, 99, 0, 0, NULL}, {a, -5, 0, 0, NULL}, /* 6 */
		};
		const int want[] = {3, 1, 2, 0, 6};

		n = run_cycle(&f, items, 7, 0, got);
		expect_order(got, n, want, 5);
	}
	teardown(&f);
}

/* The reference order of test_order_of_many_in_queue: queue.h's. */
static int ref_cmp(const void *pa, const void *pb, void *arg)
{
	const struct queue_item *items = arg;
	int a = *(const int *)pa, b = *(const int *)pb;
	const struct queue_item *x = &items[a], *y = &items[b];

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->submitted != y->submitted)
		return x->submitted < y->submitted ? -1 : 1;
	if (x->tiebreak != y->tiebreak)
		return x->tiebreak < y->tiebreak ? -1 : 1;
	return (a > b) - (a < b);
}

/* A queue of many items (sorted by one packed key each, cycle.c) in the
 * same order as a few: with equal keys, extreme priorities and times
 * before 1970, and with keys too wide to pack (sorted by qsort then). */
static void test_order_of_many_in_queue(void **state)
{
	enum { N = 3000 };
	static const int32_t prio[] = {INT32_MIN, -7, 0, 3, 1000, INT32_MAX};
	struct queue_item *items = calloc(N, sizeof(*items));
	int *got = calloc(N, sizeof(*got)), *want = calloc(N, sizeof(*want));
	uint64_t rng = 0x2545f4914f6cdd1dull;
	struct fixture f;

	(void)state;
	assert_non_null(items);
	assert_non_null(got);
	assert_non_null(want);
	setup(&f, teams_yaml);
	for (int wide = 0; wide < 2; wide++) {
		for (int k = 0; k < N; k++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			items[k] = (struct queue_item){
			    .node = node_of(&f, "team-a"),
			    .priority = prio[rng % 6],
			    .submitted = (int64_t)(rng >> 8 & 63) - 20, /* ties, some negative */
			    .tiebreak = wide ? rng : rng >> 40 & 7,
			};
			want[k] = k;
		}
		qsort_r(want, N, sizeof(*want), ref_cmp, items);
		assert_int_equal(run_cycle(&f, items, N, 0, got), N);
		for (int k = 0; k < N; k++)
			if (got[k] != want[k])
				fail_msg("wide %d: item %d served %dth, want %d", wide, got[k], k,
				         want[k]);
	}
	teardown(&f);
	free(items);
	free(got);
	free(want);
}

/* team-a is BestEffortFIFO: its refused head (0) lets 1 and 2 go. team-b
 * is StrictFIFO: its refused head (3) stops 4 and 5 for the cycle. Nobody
 * is charged (no requests), so the two queues share nothing and alternate
 * by tree order under the research cohort. */
static void test_strict_and_best_effort(void **state)
{
	struct fixture f;
	int a, b, got[8];
	size_t n;

	(void)state;
	setup(&f, teams_yaml);
	a = node_of(&f, "team-a");
	b = node_of(&f, "team-b");
	{
		const struct queue_item items[] = {
		    {a, 0, 1, 0, NULL}, {a, 0, 2, 0, NULL}, {a, 0, 3, 0, NULL},
		    {b, 0, 1, 0, NULL}, {b, 0, 2, 0, NULL}, {b, 0, 3, 0, NULL},
		};
		struct queue_cycle *c;
		int i;

		n = run_cycle(&f, items, 6, 1u << 0 | 1u << 3, got);
		/* 3 is refused at once and blocks team-b; team-a goes on. */
		{
			const int want[] = {0, 1, 2, 3};
			int sorted[4];

			memcpy(sorted, got, sizeof(sorted));
			assert_int_equal(n, 4);
			for (int x = 0; x < 4; x++)
				for (int y = x + 1; y < 4; y++)
					if (sorted[y] < sorted[x]) {
						int tmp = sorted[x];
						sorted[x] = sorted[y];
						sorted[y] = tmp;
					}
			expect_order(sorted, 4, want, 4);
		}
		/* Admitted, team-b's head lets the next one through. */
		assert_int_equal(queue_cycle_new(f.qs, items, 6, &c), 0);
		while ((i = queue_cycle_next(c)) >= 0)
			queue_cycle_done(c, i, true);
		assert_false(queue_cycle_blocked(c, b));
		queue_cycle_free(&c);
		assert_int_equal(queue_cycle_new(f.qs, items, 6, &c), 0);
		while ((i = queue_cycle_next(c)) >= 0)
			queue_cycle_done(c, i, i != 3);
		assert_true(queue_cycle_blocked(c, b));
		assert_false(queue_cycle_blocked(c, a));
		queue_cycle_free(&c);
	}
	teardown(&f);
}

/*
 * Weighted fair share. lab's pool is 20 GPUs (two nominals of 10). x
 * (weight 1) already uses 12, y (weight 3) uses 14. Each item wants 1 GPU,
 * and a child's share counts its next item:
 *
 *   x: (12 + 1 - 10) / 20 / 1 = 0.15
 *   y: (14 + 1 - 10) / 20 / 3 = 0.083  -> y   (y uses 15)
 *   y: 6 / 60 = 0.100                   -> y   (16)
 *   y: 7 / 60 = 0.117                   -> y   (17)
 *   y: 8 / 60 = 0.133                   -> y   (18)
 *   y: 9 / 60 = 0.150 = x's 0.15: tie; x is less full of its own quota
 *      (12/10 against 18/10)            -> x   (x uses 13)
 *   x: (14 - 10) / 20 = 0.2, y 0.15     -> y   (19, y's last item)
 *   then x's remaining three.
 *
 * y uses more GPUs than x all along, yet is served first: its weight
 * entitles it to three times x's share of the pool.
 */
static void test_fair_share_weights(void **state)
{
	static const char yaml[] = "resources: [nvidia.com/gpu]\n"
	                           "cohorts:\n"
	                           "  - name: lab\n"
	                           "    queues:\n"
	                           "      - {name: x, quota: {nvidia.com/gpu: {nominal: 10}}}\n"
	                           "      - name: y\n"
	                           "        weight: 3\n"
	                           "        quota: {nvidia.com/gpu: {nominal: 10}}\n";
	static const int64_t one[1] = {1}, twelve[1] = {12}, fourteen[1] = {14};
	struct fixture f;
	int x, y, got[10];
	size_t n;

	(void)state;
	setup(&f, yaml);
	x = node_of(&f, "x");
	y = node_of(&f, "y");
	assert_int_equal(queue_tree_charge(queue_set_tree(f.qs), x, twelve, +1), 0);
	assert_int_equal(queue_tree_charge(queue_set_tree(f.qs), y, fourteen, +1), 0);
	{
		/* x's items are 0..4, y's 5..9, each in submission order. */
		struct queue_item items[10];
		const int want[] = {5, 6, 7, 8, 0, 9, 1, 2, 3, 4};

		for (int i = 0; i < 10; i++)
			items[i] = (struct queue_item){i < 5 ? x : y, 0, i, 0, one};
		n = run_cycle(&f, items, 10, 0, got);
		expect_order(got, n, want, 10);
	}
	assert_int_equal(queue_tree_demand(queue_set_tree_c(f.qs), x, 0), 17);
	assert_int_equal(queue_tree_demand(queue_set_tree_c(f.qs), y, 0), 19);
	teardown(&f);
}

/*
 * Two levels: the root holds cohort c (queues c1 and c2, 4 GPUs each, so
 * c's pool is 8) and queue solo (8 GPUs); the root's pool is 16. c1
 * already uses 10, solo 8. Inside c, c2 is within its quota (share 0)
 * while c1 borrows, so c offers c2's item, and c's share with it is
 * (10 + 1 - 8) / 16 = 0.1875.
 *
 *   solo: (8 + 1 - 8) / 16 = 0.0625   -> solo (uses 9)
 *   solo: 2 / 16 = 0.125              -> solo (10)
 *   solo: 3 / 16 = 0.1875 = c's: tie; both use 10/8 of their own quota,
 *         so the one configured first  -> c, that is c2 (c uses 11)
 *   c now offers c1: (12 - 8) / 16 = 0.25 > solo's 0.1875 -> solo
 *   then c1.
 */
static void test_fair_share_two_levels(void **state)
{
	static const char yaml[] = "resources: [nvidia.com/gpu]\n"
	                           "cohorts:\n"
	                           "  - name: c\n"
	                           "    queues:\n"
	                           "      - {name: c1, quota: {nvidia.com/gpu: {nominal: 4}}}\n"
	                           "      - {name: c2, quota: {nvidia.com/gpu: {nominal: 4}}}\n"
	                           "queues:\n"
	                           "  - {name: solo, quota: {nvidia.com/gpu: {nominal: 8}}}\n";
	static const int64_t one[1] = {1}, ten[1] = {10}, eight[1] = {8};
	struct fixture f;
	int c1, c2, solo, got[6];
	size_t n;

	(void)state;
	setup(&f, yaml);
	c1 = node_of(&f, "c1");
	c2 = node_of(&f, "c2");
	solo = node_of(&f, "solo");
	assert_int_equal(queue_tree_charge(queue_set_tree(f.qs), c1, ten, +1), 0);
	assert_int_equal(queue_tree_charge(queue_set_tree(f.qs), solo, eight, +1), 0);
	{
		const struct queue_item items[] = {
		    {c1, 0, 1, 0, one},   /* 0 */
		    {c2, 0, 2, 0, one},   /* 1 */
		    {solo, 0, 3, 0, one}, /* 2 */
		    {solo, 0, 4, 0, one}, /* 3 */
		    {solo, 0, 5, 0, one}, /* 4 */
		};
		const int want[] = {2, 3, 1, 4, 0};

		n = run_cycle(&f, items, 5, 0, got);
		expect_order(got, n, want, 5);
	}
	teardown(&f);
}

/* Usage that moves behind the cycle's back (a preemption, say) changes
 * the next choice once the cycle is told. */
static void test_touch(void **state)
{
	static const char yaml[] = "resources: [nvidia.com/gpu]\n"
	                           "queues:\n"
	                           "  - {name: p, quota: {nvidia.com/gpu: {nominal: 4}}}\n"
	                           "  - {name: q, quota: {nvidia.com/gpu: {nominal: 4}}}\n";
	static const int64_t one[1] = {1}, six[1] = {6};
	struct fixture f;
	struct queue_cycle *c;
	int p, q;

	(void)state;
	setup(&f, yaml);
	p = node_of(&f, "p");
	q = node_of(&f, "q");
	{
		const struct queue_item items[] = {{p, 0, 1, 0, one}, {q, 0, 2, 0, one}};

		assert_int_equal(queue_cycle_new(f.qs, items, 2, &c), 0);
		assert_int_equal(queue_cycle_next(c), 0); /* both at 0: p first */
		assert_int_equal(queue_tree_charge(queue_set_tree(f.qs), p, six, +1), 0);
		assert_int_equal(queue_cycle_next(c), 0); /* cached: not told yet */
		queue_cycle_touch(c, p);
		assert_int_equal(queue_cycle_next(c), 1); /* p now borrows 3 */
		queue_cycle_free(&c);
	}
	teardown(&f);
}

/*
 * Memory: a and b, 8 GPUs each in one cohort (pool 16); a held all 16
 * for a day, b nothing. Each offers four gangs of 4, a's submitted
 * first. Without memory both are at 0 and the order alternates, a
 * first (written first, then the one less full of its own quota):
 * a b a b a b a b. With a half-life of 6 h, a remembers 16 x (1 - 2^-4)
 * = 15, so its share is (15 - 8) / 16 = 0.4375 until its own usage
 * passes 15. b's is (usage + 4 - 8) / 16: 0, 0, 0.25 for its first
 * three, 0.5 for its fourth; so b b b, then a a a (0.4375 each), then
 * a's fourth ties b's fourth at 0.5 and a, written first, goes:
 * b b b a a a a b.
 */
static void test_memory_orders_the_other_team_first(void **state)
{
	static const char yaml[] = "resources: [nvidia.com/gpu]\n"
	                           "%s"
	                           "cohorts:\n"
	                           "  - name: lab\n"
	                           "    queues:\n"
	                           "      - {name: a, quota: {nvidia.com/gpu: {nominal: 8}}}\n"
	                           "      - {name: b, quota: {nvidia.com/gpu: {nominal: 8}}}\n";
	static const int64_t four[1] = {4}, all[1] = {16};
	static const int plain[] = {0, 4, 1, 5, 2, 6, 3, 7};
	static const int remembered[] = {4, 5, 6, 0, 1, 2, 3, 7};
	char text[512];

	(void)state;
	for (int mem = 0; mem < 2; mem++) {
		struct fixture f;
		struct queue_tree *t;
		struct queue_item items[8];
		int a, b, got[8];
		size_t n;

		snprintf(text, sizeof(text), yaml, mem ? "fairSharing: {halfLife: 6h}\n" : "");
		setup(&f, text);
		t = queue_set_tree(f.qs);
		a = node_of(&f, "a");
		b = node_of(&f, "b");
		/* A day of a holding everything, then its gangs end. */
		queue_tree_age(t, 0);
		assert_int_equal(queue_tree_charge(t, a, all, +1), 0);
		queue_tree_hold(t);
		queue_tree_reset_usage(t);
		queue_tree_age(t, 24 * 3600);
		assert_float_equal(queue_tree_remembered(t, a, 0), mem ? 15.0 : 0.0, 1e-9);
		for (int i = 0; i < 8; i++)
			items[i] = (struct queue_item){i < 4 ? a : b, 0, i, 0, four};
		n = run_cycle(&f, items, 8, 0, got);
		expect_order(got, n, mem ? remembered : plain, 8);
		teardown(&f);
	}
}

/* A reload keeps the memory of what keeps its name: queue a and the
 * cohort, and the GPU slot; b is new and starts from nothing. */
static void test_memory_carried_over_a_reload(void **state)
{
	static const char before[] = "resources: [nvidia.com/gpu]\n"
	                             "fairSharing: {halfLife: 1h}\n"
	                             "cohorts:\n"
	                             "  - name: lab\n"
	                             "    queues:\n"
	                             "      - {name: a, quota: {nvidia.com/gpu: {nominal: 8}}}\n"
	                             "      - {name: old, quota: {nvidia.com/gpu: {nominal: 8}}}\n";
	static const char after[] = "resources: [cpu, nvidia.com/gpu]\n"
	                            "fairSharing: {halfLife: 2h}\n"
	                            "cohorts:\n"
	                            "  - name: lab\n"
	                            "    queues:\n"
	                            "      - {name: b, quota: {nvidia.com/gpu: {nominal: 8}}}\n"
	                            "      - {name: a, quota: {nvidia.com/gpu: {nominal: 8}}}\n";
	static const int64_t six[1] = {6};
	struct fixture f, g;
	struct queue_tree *t;
	int gpu;

	(void)state;
	setup(&f, before);
	t = queue_set_tree(f.qs);
	queue_tree_age(t, 100);
	assert_int_equal(queue_tree_charge(t, node_of(&f, "a"), six, +1), 0);
	queue_tree_hold(t);
	queue_tree_age(t, 100 + 3600);
	assert_float_equal(queue_tree_remembered(t, node_of(&f, "a"), 0), 3.0, 1e-9);
	setup(&g, after);
	queue_set_carry(g.qs, f.qs);
	gpu = queue_set_find_slot(g.qs, "nvidia.com/gpu");
	assert_int_equal(gpu, 1);
	assert_int_equal(queue_set_find_slot(g.qs, "nvidia.com/gpu@h100"), -ENOENT);
	t = queue_set_tree(g.qs);
	assert_int_equal(queue_tree_memory_at(t), 100 + 3600);
	assert_float_equal(queue_tree_remembered(t, node_of(&g, "a"), (unsigned)gpu), 3.0, 1e-9);
	assert_int_equal(queue_tree_held(t, node_of(&g, "a"), (unsigned)gpu), 6);
	assert_float_equal(
	    queue_tree_remembered(t, queue_set_find_node(g.qs, "lab"), (unsigned)gpu), 3.0, 1e-9);
	assert_float_equal(queue_tree_remembered(t, node_of(&g, "b"), (unsigned)gpu), 0.0, 1e-12);
	assert_float_equal(queue_tree_remembered(t, node_of(&g, "a"), 0), 0.0, 1e-12); /* cpu */
	/* Two more hours at 6 under the new half-life of 2 h: 3 + (6 - 3) / 2. */
	queue_tree_age(t, 100 + 3600 + 7200);
	assert_float_equal(queue_tree_remembered(t, node_of(&g, "a"), (unsigned)gpu), 4.5, 1e-9);
	assert_int_equal(queue_set_find_node(g.qs, "old"), -ENOENT);
	teardown(&g);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slots_and_quotas),
	    cmocka_unit_test(test_requests),
	    cmocka_unit_test(test_resolve),
	    cmocka_unit_test(test_order_in_queue),
	    cmocka_unit_test(test_strict_and_best_effort),
	    cmocka_unit_test(test_fair_share_weights),
	    cmocka_unit_test(test_fair_share_two_levels),
	    cmocka_unit_test(test_touch),
	    cmocka_unit_test(test_order_of_many_in_queue),
	    cmocka_unit_test(test_memory_orders_the_other_team_first),
	    cmocka_unit_test(test_memory_carried_over_a_reload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
