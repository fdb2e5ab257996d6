/*
 * policy/gpus: one more share on a GPU by Volcano v1.15.1's rules, and a
 * pod's containers on a node's GPUs. Each case says which rule it checks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "policy/gpus.h"

/* A healthy 32 GiB GPU shared by up to 10 pods, nothing on it. */
static struct policy_gpu v100(uint32_t id)
{
	return (struct policy_gpu){.id = id, .memory = 32768, .split = 10, .healthy = true};
}

static struct kubeapi_vgpu_ask ask(uint32_t nums, uint32_t mem, uint32_t pct, uint32_t cores)
{
	return (struct kubeapi_vgpu_ask){nums, mem, pct, cores};
}

/* Memory: absolute, or a truncated percentage of the GPU's. */
static void test_memory(void **state)
{
	struct policy_gpu g = v100(0);
	struct policy_gpu odd = {.memory = 16001, .split = 10, .healthy = true};
	struct kubeapi_vgpu_ask half = ask(1, 0, 50, 0);

	(void)state;
	assert_int_equal(policy_vgpu_mem_for(&g, &half), 16384);
	assert_int_equal(policy_vgpu_mem_for(&odd, &(struct kubeapi_vgpu_ask){1, 0, 33, 0}), 5280);
	assert_int_equal(policy_vgpu_mem_for(&g, &(struct kubeapi_vgpu_ask){1, 1000, 101, 0}),
	                 1000);
	policy_vgpu_use(&g, 16384, 0, +1);
	assert_true(policy_vgpu_fits(&g, &half));
	policy_vgpu_use(&g, 16384, 0, +1);
	assert_false(policy_vgpu_fits(&g, &half)); /* no memory left */
	assert_true(policy_vgpu_fits(&g, &(struct kubeapi_vgpu_ask){1, 0, 101, 0}));
}

/* Split count, cores up to 100, exclusive 100, none on a core-full GPU;
 * an unhealthy GPU takes nothing. */
static void test_shares_and_cores(void **state)
{
	struct policy_gpu g = v100(0);
	struct kubeapi_vgpu_ask small = ask(1, 100, 101, 30), alone = ask(1, 100, 101, 100);

	(void)state;
	assert_true(policy_vgpu_fits(&g, &alone));
	policy_vgpu_use(&g, 100, 30, +1);
	assert_false(policy_vgpu_fits(&g, &alone)); /* someone is on it */
	policy_vgpu_use(&g, 100, 30, +1);
	policy_vgpu_use(&g, 100, 30, +1);
	assert_false(policy_vgpu_fits(&g, &small)); /* 90 + 30 > 100 */
	assert_true(policy_vgpu_fits(&g, &(struct kubeapi_vgpu_ask){1, 100, 101, 10}));
	policy_vgpu_use(&g, 100, 10, +1);
	assert_false(policy_vgpu_fits(&g, &(struct kubeapi_vgpu_ask){1, 100, 101, 0}));
	g = v100(0);
	g.split = 2;
	policy_vgpu_use(&g, 1, 0, +1);
	policy_vgpu_use(&g, 1, 0, +1);
	assert_false(policy_vgpu_fits(&g, &(struct kubeapi_vgpu_ask){1, 1, 101, 0}));
	g = v100(0);
	g.healthy = false;
	assert_false(policy_vgpu_fits(&g, &small));
	/* Taking off never goes below zero. */
	g = v100(0);
	policy_vgpu_use(&g, 5, 5, -1);
	assert_int_equal(g.used_num + g.used_mem + g.used_core, 0);
}

/* Four half-GPU pods fill two GPUs; the order is by descending index,
 * so GPU 1 fills first. */
static void test_half_gpus(void **state)
{
	struct policy_gpu gpus[2] = {v100(0), v100(1)};
	struct kubeapi_vgpu_ask half = ask(1, 0, 50, 50);
	struct policy_vgpu_share out[2];
	size_t n;
	uint32_t on[4];

	(void)state;
	for (int k = 0; k < 4; k++) {
		assert_int_equal(policy_vgpu_place(gpus, 2, &half, 1, out, 2, &n), 0);
		assert_int_equal(n, 1);
		assert_int_equal(out[0].mem, 16384);
		on[k] = out[0].gpu;
	}
	assert_int_equal(on[0], 1);
	assert_int_equal(on[1], 1);
	assert_int_equal(on[2], 0);
	assert_int_equal(on[3], 0);
	assert_int_equal(policy_vgpu_place(gpus, 2, &half, 1, out, 2, &n), -ENOSPC);
	assert_int_equal(gpus[0].used_num + gpus[1].used_num, 4);
}

/* A pod of two containers: the second does not fit, so nothing of the
 * first stays counted; one container's GPUs are distinct. */
static void test_all_or_nothing(void **state)
{
	struct policy_gpu gpus[2] = {v100(0), v100(1)};
	struct kubeapi_vgpu_ask two[2] = {ask(2, 1000, 101, 0), ask(1, 0, 101, 100)};
	struct policy_vgpu_share out[4];
	size_t n = 9;

	(void)state;
	assert_int_equal(policy_vgpu_place(gpus, 2, two, 2, out, 4, &n), -ENOSPC);
	assert_int_equal(n, 0);
	assert_int_equal(gpus[0].used_num + gpus[1].used_num, 0);
	assert_int_equal(gpus[0].used_mem + gpus[1].used_mem, 0);
	assert_int_equal(policy_vgpu_place(gpus, 2, two, 1, out, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_int_not_equal(out[0].gpu, out[1].gpu);
	assert_int_equal(
	    policy_vgpu_place(gpus, 2, &(struct kubeapi_vgpu_ask){3, 1, 101, 0}, 1, out, 4, &n),
	    -ENOSPC); /* more GPUs than the node has */
	assert_int_equal(policy_vgpu_place(gpus, 2, two, 1, out, 1, &n), -E2BIG);
	assert_int_equal(gpus[0].used_num + gpus[1].used_num, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_memory),
	    cmocka_unit_test(test_shares_and_cores),
	    cmocka_unit_test(test_half_gpus),
	    cmocka_unit_test(test_all_or_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
