/*
 * policy/frag: the mix of requests, a node's expected GPU fragmentation
 * under it, and the placement of one pod that raises it least. Each case
 * says which rule of frag.h it checks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "policy/frag.h"

#define GIB (INT64_C(1) << 30)

/* A healthy 16 GiB GPU shared by up to 20 pods, with used percent of its
 * cores and memory taken by one pod (none for 0). */
static struct policy_gpu gpu(uint32_t id, uint32_t used)
{
	struct policy_gpu g = {.id = id, .memory = 16384, .split = 20, .healthy = true};

	if (used)
		policy_vgpu_use(&g, 16384 * used / 100, used, +1);
	return g;
}

/* A kind of nums GPUs at pct percent (cores and memory), with cpu
 * millicores and 1 GiB. */
static struct policy_mix_kind kind(uint32_t nums, uint32_t pct, int64_t cpu)
{
	return (struct policy_mix_kind){
	    .cpu_m = cpu, .mem = GIB, .nums = nums, .cores = pct, .gpu_mem_pct = pct};
}

static struct kubeapi_vgpu_ask share(uint32_t nums, uint32_t pct)
{
	return (struct kubeapi_vgpu_ask){nums, 0, pct, pct};
}

static struct policy_frag_node node(const struct policy_gpu *g, size_t n, int64_t cpu)
{
	return (struct policy_frag_node){.cpu_m = cpu, .mem = 64 * GIB, .gpu = g, .ngpus = n};
}

/* Counts become weights that sum to 1; an equal kind adds to its count. */
static void test_mix_weights(void **state)
{
	struct policy_mix m = {0};
	struct policy_mix_kind half = kind(1, 50, 4000), whole = kind(1, 100, 8000);

	(void)state;
	policy_mix_add(&m, &half, 3);
	policy_mix_add(&m, &whole, 1);
	policy_mix_add(&m, &half, 4);
	policy_mix_done(&m);
	assert_int_equal(m.n, 2);
	assert_true(m.kind[0].weight > 0.874 && m.kind[0].weight < 0.876);
	assert_true(m.kind[1].weight > 0.124 && m.kind[1].weight < 0.126);
}

/* Past POLICY_MIX_KINDS a kind merges into the nearest: the same shape
 * (then the nearest CPU) before a nearer CPU of another shape; with no
 * kind of its shape, the nearest GPU demand. */
static void test_mix_merges_past_cap(void **state)
{
	struct policy_mix m = {0};
	struct policy_mix_kind k;

	(void)state;
	for (uint32_t i = 0; i < POLICY_MIX_KINDS - 2; i++) {
		k = kind(0, 0, 1000 * (int64_t)(i + 1)); /* CPU-only, 1..30 cores */
		policy_mix_add(&m, &k, 1);
	}
	k = kind(1, 50, 40000);
	policy_mix_add(&m, &k, 1); /* index 30 */
	k = kind(2, 100, 8000);
	policy_mix_add(&m, &k, 1); /* index 31 */
	assert_int_equal(m.n, POLICY_MIX_KINDS);

	k = kind(1, 50, 3000); /* CPU equal to kind 2's, but the shape is kind 30's */
	policy_mix_add(&m, &k, 5);
	assert_int_equal(m.n, POLICY_MIX_KINDS);
	assert_true(m.kind[30].count == 6);
	assert_int_equal(m.kind[30].cpu_m, 40000); /* the kind keeps its shape */
	assert_true(m.kind[2].count == 1);

	k = kind(1, 100, 1000); /* no 1 x 100 kind: nearest demand is 1 x 50 */
	policy_mix_add(&m, &k, 1);
	assert_true(m.kind[30].count == 7);
	k = kind(4, 100, 1000); /* 400 percent: 2 x 100 is nearest */
	policy_mix_add(&m, &k, 2);
	assert_true(m.kind[31].count == 3);
	policy_mix_done(&m);
	assert_true(m.total == 40);
}

/* Free GPU percent is fragment for a kind when the GPU is too small for
 * it; all of it when the node lacks the CPU (or memory) for the kind. */
static void test_fragment_of_node(void **state)
{
	struct policy_gpu g[2] = {gpu(0, 70), gpu(1, 0)}; /* 30 and 100 free */
	struct policy_mix m = {0};
	struct policy_mix_kind half = kind(1, 50, 8000);
	struct policy_frag_node n = node(g, 2, 16000);

	(void)state;
	policy_mix_add(&m, &half, 1);
	policy_mix_done(&m);
	assert_true(policy_frag_of(&m, &n) == 30); /* GPU 0 cannot take half */
	n.cpu_m = 4000;
	assert_true(policy_frag_of(&m, &n) == 130); /* the node cannot host it */
	n.cpu_m = 16000;
	n.mem = GIB / 2;
	assert_true(policy_frag_of(&m, &n) == 130);
	n.mem = 64 * GIB;
	g[1].healthy = false; /* an unhealthy GPU is no capacity, fragment or not */
	assert_true(policy_frag_of(&m, &n) == 30);
}

/* A quarter-GPU pod goes where it leaves no remainder that half-GPU pods
 * could not use: GPU 0 (75 free, 50 after) rather than GPU 1 (50 free, 25
 * after), which best fit alone and Volcano's order (descending) pick. */
static void test_quarter_leaves_least_remainder(void **state)
{
	struct policy_gpu g[2] = {gpu(0, 25), gpu(1, 50)};
	struct policy_mix m = {0};
	struct policy_mix_kind half = kind(1, 50, 1000);
	struct kubeapi_vgpu_ask quarter = share(1, 25);
	struct policy_frag_ask a = {1000, GIB, &quarter, 1};
	struct policy_frag_node n = node(g, 2, 16000);
	struct policy_vgpu_share out[2];
	size_t nout;
	double score;

	(void)state;
	policy_mix_add(&m, &half, 1);
	policy_mix_done(&m);
	assert_int_equal(policy_frag_best(&m, &n, &a, out, 2, &nout, &score), 0);
	assert_int_equal(nout, 1);
	assert_int_equal(out[0].gpu, 0);
	assert_int_equal(out[0].cores, 25);
	assert_int_equal(out[0].mem, 4096);
	assert_true(score >= 0 && score < 1e-3); /* no rise: only the tie-breaks */
	assert_int_equal(g[0].used_core, 25);    /* the node is not changed */

	/* Without half-GPU pods in the mix, best fit decides: GPU 1. */
	m = (struct policy_mix){0};
	assert_int_equal(policy_frag_best(&m, &n, &a, out, 2, &nout, &score), 0);
	assert_int_equal(out[0].gpu, 1);
}

/* Node scores: a whole GPU taken from a node with 3 free keeps room for
 * the mix's 2-GPU pods, from a node with 2 free it does not. Rises are
 * compared, and the pod fills what the 4-GPU pods could not use. */
static void test_node_scores(void **state)
{
	struct policy_gpu three[4] = {gpu(0, 100), gpu(1, 0), gpu(2, 0), gpu(3, 0)};
	struct policy_gpu two[4] = {gpu(0, 100), gpu(1, 100), gpu(2, 0), gpu(3, 0)};
	struct policy_mix m = {0};
	struct policy_mix_kind pair = kind(2, 100, 1000);
	struct kubeapi_vgpu_ask one = share(1, 100);
	struct policy_frag_ask a = {1000, GIB, &one, 1};
	struct policy_frag_node n3 = node(three, 4, 16000), n2 = node(two, 4, 16000);
	struct policy_vgpu_share out[1];
	size_t nout;
	double s3, s2;

	(void)state;
	policy_mix_add(&m, &pair, 1);
	policy_mix_done(&m);
	assert_int_equal(policy_frag_best(&m, &n3, &a, out, 1, &nout, &s3), 0);
	assert_int_equal(policy_frag_best(&m, &n2, &a, out, 1, &nout, &s2), 0);
	assert_true(s3 < 1e-3 && s3 > -1e-3); /* 3 -> 2 free: still hosts a pair */
	assert_true(s2 > 89 && s2 < 91);      /* 2 -> 1 free: 100 stranded, to a step of 30 */

	/* A CPU-only pod that leaves too little CPU for the pair strands all
	 * the node's free GPU. */
	a = (struct policy_frag_ask){15500, GIB, NULL, 0};
	assert_int_equal(policy_frag_best(&m, &n2, &a, out, 1, &nout, &s2), 0);
	assert_int_equal(nout, 0);
	assert_true(s2 > 199 && s2 < 201);
}

/* The split count and the memory left are honoured; one container's GPUs
 * are distinct; shares carry the memory Volcano would count. */
static void test_split_and_memory(void **state)
{
	struct policy_gpu g[3] = {gpu(0, 0), gpu(1, 0), gpu(2, 0)};
	struct policy_mix m = {0};
	struct policy_mix_kind tenth = kind(1, 10, 1000);
	struct kubeapi_vgpu_ask two = share(2, 10);
	struct policy_frag_ask a = {1000, GIB, &two, 1};
	struct policy_frag_node n = node(g, 3, 16000);
	struct policy_vgpu_share out[2];
	size_t nout;
	double score;

	(void)state;
	policy_mix_add(&m, &tenth, 1);
	policy_mix_done(&m);
	g[2].split = 1;
	policy_vgpu_use(&g[2], 1, 0, +1); /* GPU 2: no slot left */
	g[1].used_mem = 16384 - 1000;     /* GPU 1: too little memory */
	g[0].memory = 20000;
	assert_int_equal(policy_frag_best(&m, &n, &a, out, 2, &nout, &score), -ENOSPC);
	g[1].used_mem = 0;
	assert_int_equal(policy_frag_best(&m, &n, &a, out, 2, &nout, &score), 0);
	assert_int_equal(nout, 2);
	assert_int_not_equal(out[0].gpu, out[1].gpu);
	assert_true(out[0].gpu != 2 && out[1].gpu != 2);
	for (size_t k = 0; k < nout; k++)
		assert_int_equal(out[k].mem, policy_vgpu_mem_for(&g[out[k].gpu], &two));
}

/* All containers or none; -E2BIG past cap; -ENOSPC for a pod the GPUs do
 * not take; a kind whose models exclude the node's counts all its free. */
static void test_errors_and_models(void **state)
{
	struct policy_gpu g[2] = {gpu(0, 0), gpu(1, 60)};
	struct policy_mix m = {0};
	struct policy_mix_kind v100 = kind(1, 50, 1000);
	struct kubeapi_vgpu_ask asks[2] = {share(1, 50), share(2, 100)};
	struct policy_frag_ask a = {1000, GIB, asks, 2};
	struct policy_frag_node n = node(g, 2, 16000);
	struct policy_vgpu_share out[4];
	size_t nout = 7;
	double score;

	(void)state;
	v100.models = 1u << 3;
	policy_mix_add(&m, &v100, 1);
	policy_mix_done(&m);
	assert_int_equal(policy_frag_best(&m, &n, &a, out, 4, &nout, &score), -ENOSPC);
	assert_int_equal(nout, 0);
	assert_int_equal(policy_frag_best(&m, &n, &a, out, 2, &nout, &score), -E2BIG);
	a.nasks = 1;
	assert_int_equal(policy_frag_best(&m, &n, &a, out, 4, &nout, &score), 0);
	assert_int_equal(out[0].gpu, 0); /* GPU 1's 40 percent does not take 50 */

	assert_true(policy_frag_of(&m, &n) == 40);
	n.model = 1u << 3;
	assert_true(policy_frag_of(&m, &n) == 40);
	n.model = 1u << 2; /* a model the kind may not use */
	assert_true(policy_frag_of(&m, &n) == 140);
}

/* The rise is rounded to 0.3 of the pod's own GPU ask: a whole GPU that
 * strands 100 percent scores 90 (steps of 30), a 30 percent share that
 * strands 170 scores 171 (steps of 9); a CPU-only pod's step is 5. */
static void test_rounding_by_ask(void **state)
{
	struct policy_gpu g[2] = {gpu(0, 0), gpu(1, 0)};
	struct policy_mix m = {0};
	struct policy_mix_kind pair = kind(2, 100, 1000);
	struct kubeapi_vgpu_ask one = share(1, 100), part = share(1, 30);
	struct policy_frag_ask a = {1000, GIB, &one, 1};
	struct policy_frag_node n = node(g, 2, 16000);
	struct policy_vgpu_share out[1];
	size_t nout;
	double score;

	(void)state;
	policy_mix_add(&m, &pair, 1);
	policy_mix_done(&m);
	assert_int_equal(policy_frag_best(&m, &n, &a, out, 1, &nout, &score), 0);
	assert_true(score > 89.9 && score < 90.1);
	a.asks = &part;
	assert_int_equal(policy_frag_best(&m, &n, &a, out, 1, &nout, &score), 0);
	assert_true(score > 170.9 && score < 171.1);
	a = (struct policy_frag_ask){15500, GIB, NULL, 0}; /* strands 200: 200 */
	assert_int_equal(policy_frag_best(&m, &n, &a, out, 1, &nout, &score), 0);
	assert_true(score > 199.9 && score < 200.1);
}

/* Best fit relative to the node's size: a half share leaves a 2-GPU node
 * 25 percent free on average and an 8-GPU node 18.75, though the latter
 * keeps more GPU free in all (150 against 50): the 8-GPU node wins. */
static void test_tie_relative_to_size(void **state)
{
	struct policy_gpu small[2] = {gpu(0, 0), gpu(1, 100)};
	struct policy_gpu big[8];
	struct policy_mix m = {0}; /* empty: only the tie-break */
	struct kubeapi_vgpu_ask half = share(1, 50);
	struct policy_frag_ask a = {1000, GIB, &half, 1};
	struct policy_frag_node ns = node(small, 2, 16000), nb = node(big, 8, 16000);
	struct policy_vgpu_share out[1];
	size_t nout;
	double ss, sb;

	(void)state;
	for (uint32_t j = 0; j < 8; j++)
		big[j] = gpu(j, j < 2 ? 0 : 100);
	assert_int_equal(policy_frag_best(&m, &ns, &a, out, 1, &nout, &ss), 0);
	assert_int_equal(policy_frag_best(&m, &nb, &a, out, 1, &nout, &sb), 0);
	assert_true(sb < ss);
	assert_true(ss > 0 && ss < 1e-6);
}

/* With the cluster's GPUs per model, a kind that may use only model A
 * (100 of 400 GPUs) weighs 4 times its count: its free GPU on A is worth
 * more, and on a node of model B (which it may not use) all free counts
 * for it, so a pod any node could take gains more (F falls more) there. */
static void test_model_pressure(void **state)
{
	struct policy_gpu g[2] = {gpu(0, 70), gpu(1, 0)}; /* 30 and 100 free */
	struct policy_gpu e[2] = {gpu(0, 0), gpu(1, 0)};
	struct policy_mix m = {0};
	struct policy_mix_kind only_a = kind(1, 50, 1000), any = kind(1, 50, 1000);
	struct kubeapi_vgpu_ask one = share(1, 100);
	struct policy_frag_ask a = {1000, GIB, &one, 1};
	struct policy_frag_node n = node(g, 2, 16000), ne = node(e, 2, 16000);
	struct policy_vgpu_share out[1];
	size_t nout;
	double sa, sb;

	(void)state;
	only_a.models = 1u << 0;
	policy_mix_add(&m, &only_a, 1);
	policy_mix_add(&m, &any, 1);
	m.model_gpus[0] = 100; /* model A */
	m.model_gpus[1] = 300; /* model B */
	policy_mix_done(&m);
	assert_true(m.kind[0].press == 4 && m.kind[1].press == 1);
	n.model = 1u << 0;
	assert_true(policy_frag_of(&m, &n) == (4 * 30 + 30) / 2.0);
	n.model = 1u << 1;
	assert_true(policy_frag_of(&m, &n) == (4 * 130 + 30) / 2.0);

	ne.model = 1u << 0;
	assert_int_equal(policy_frag_best(&m, &ne, &a, out, 1, &nout, &sa), 0);
	ne.model = 1u << 1;
	assert_int_equal(policy_frag_best(&m, &ne, &a, out, 1, &nout, &sb), 0);
	assert_true(sa > -1e-3 && sa < 1e-3); /* A: both kinds still fit */
	assert_true(sb < -209 && sb > -211);  /* B: 4 x -100 / 2, to steps of 30 */

	m.model_gpus[0] = m.model_gpus[1] = 0; /* unknown: FGD's count weights */
	policy_mix_done(&m);
	assert_true(m.kind[0].press == 1);
	assert_int_equal(policy_frag_best(&m, &ne, &a, out, 1, &nout, &sb), 0);
	assert_true(sb < -59 && sb > -61); /* -100 / 2 */
}

/* Room (frag.h, room_k): a node's free GPU that a hosted kind's pods
 * could not use for want of CPU or memory counts half. Whole-GPU pods of
 * 8 cores and 4 GiB on two free GPUs: with 16 cores both GPUs can be
 * used; with 12 one and a half, so 50 percent is beyond the room and 25
 * counts; with 6 GiB the memory limits alike; with 4 cores the node does
 * not host the kind at all. FGD's measure says 0, 0, 0, 200. */
static void test_room_counts_half(void **state)
{
	struct policy_gpu g[2] = {gpu(0, 0), gpu(1, 0)};
	struct policy_gpu g3[3] = {gpu(0, 0), gpu(1, 0), gpu(2, 70)};
	struct policy_mix m = {0};
	struct policy_mix_kind whole = kind(1, 100, 8000);
	struct policy_frag_node n = node(g, 2, 16000);

	(void)state;
	whole.mem = 4 * GIB;
	policy_mix_add(&m, &whole, 1);
	policy_mix_done(&m);
	assert_true(policy_frag_of(&m, &n) == 0);
	n.cpu_m = 12000;
	assert_true(policy_frag_of(&m, &n) == 25);
	n.cpu_m = 16000;
	n.mem = 6 * GIB;
	assert_true(policy_frag_of(&m, &n) == 25);
	n.mem = 64 * GIB;
	n.cpu_m = 4000;
	assert_true(policy_frag_of(&m, &n) == 200);
	n = node(g3, 3, 12000); /* the GPU too small counts whole, as before */
	assert_true(policy_frag_of(&m, &n) == 30 + 25);
}

/* A pod is placed by what it takes of what the mix still needs there.
 * The mix asks 10 cores a GPU; a node with two free GPUs and 15 cores
 * could serve one and a half of them (25 counts), one with 60 cores both.
 * A whole GPU asking 1 core fills the GPU the poor node's CPU could not
 * serve: F falls there (-25, to a step of 30) and not on the rich node.
 * A CPU-only pod of 5 cores leaves the poor node CPU for one GPU of two
 * (rise 25, to steps of 5), the rich one enough for both (0). Without
 * room_k every score here is 0. */
static void test_room_steers_cpu_and_gpu(void **state)
{
	struct policy_gpu g[2] = {gpu(0, 0), gpu(1, 0)};
	struct policy_mix m = {0};
	struct policy_mix_kind mixk = kind(1, 100, 10000);
	struct kubeapi_vgpu_ask one = share(1, 100);
	struct policy_frag_ask light = {1000, GIB, &one, 1}, cpu = {5000, GIB, NULL, 0};
	struct policy_frag_node poor = node(g, 2, 15000), rich = node(g, 2, 60000);
	struct policy_vgpu_share out[1];
	size_t nout;
	double sp, sr;

	(void)state;
	policy_mix_add(&m, &mixk, 1);
	policy_mix_done(&m);
	assert_true(policy_frag_of(&m, &poor) == 25);
	assert_int_equal(policy_frag_best(&m, &poor, &light, out, 1, &nout, &sp), 0);
	assert_int_equal(policy_frag_best(&m, &rich, &light, out, 1, &nout, &sr), 0);
	assert_true(sp > -30.1 && sp < -29.9);
	assert_true(sr > -1e-3 && sr < 1e-3);

	poor.cpu_m = 20000;
	assert_int_equal(policy_frag_best(&m, &poor, &cpu, out, 1, &nout, &sp), 0);
	assert_int_equal(policy_frag_best(&m, &rich, &cpu, out, 1, &nout, &sr), 0);
	assert_true(sp > 24.9 && sp < 25.1);
	assert_true(sr > -1e-3 && sr < 1e-3);
}

/* The tie-break after the score: a mix asking 8 cores per GPU (80
 * millicores per GPU percent); a half-GPU pod of 4 cores on a node of two
 * empty GPUs leaves 150 cores' worth of GPU. With 12 cores left after it
 * the node sits at |12000 - 80 x 150| = 0 from balance; with 40 left it
 * is 28000 away, so the first wins the tie. */
static void test_cpu_balance(void **state)
{
	struct policy_mix m = {0};
	struct policy_mix_kind whole = {.cpu_m = 8000, .nums = 1, .cores = 100};
	struct policy_gpu g[2] = {{.memory = 32768, .split = 10, .healthy = true},
	                          {.id = 1, .memory = 32768, .split = 10, .healthy = true}};
	struct kubeapi_vgpu_ask half = {1, 0, 50, 50};
	struct policy_frag_node n = {.gpu = g, .ngpus = 2};
	struct policy_frag_ask a = {.cpu_m = 4000, .asks = &half, .nasks = 1};
	double per_core;

	(void)state;
	policy_mix_add(&m, &whole, 1);
	policy_mix_done(&m);
	per_core = policy_frag_cpu_per_core(&m);
	assert_true(per_core > 79.999 && per_core < 80.001);
	assert_true(policy_frag_balance(&n, &a, per_core, 12000) < 1e-6);
	assert_true(policy_frag_balance(&n, &a, per_core, 40000) > 27999.0);
	assert_true(policy_frag_balance(&n, &a, per_core, 40000) < 28001.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mix_weights),
	    cmocka_unit_test(test_mix_merges_past_cap),
	    cmocka_unit_test(test_fragment_of_node),
	    cmocka_unit_test(test_quarter_leaves_least_remainder),
	    cmocka_unit_test(test_node_scores),
	    cmocka_unit_test(test_split_and_memory),
	    cmocka_unit_test(test_errors_and_models),
	    cmocka_unit_test(test_rounding_by_ask),
	    cmocka_unit_test(test_tie_relative_to_size),
	    cmocka_unit_test(test_model_pressure),
	    cmocka_unit_test(test_room_counts_half),
	    cmocka_unit_test(test_room_steers_cpu_and_gpu),
	    cmocka_unit_test(test_cpu_balance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
