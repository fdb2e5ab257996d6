/*
 * kubeapi/vgpu: the vGPU device protocol's texts. The registration is
 * the one volcano-vgpu-device-plugin writes (Id,Count,Devmem,Type,Health,
 * Mode per device, each ended by ':'); the pod texts are what Volcano
 * v1.15.1's encodePodDevices writes, e.g. "GPU-1234,NVIDIA,16384,0:" as
 * in its own device_info_test.go. Each case names what Volcano does with
 * the same text.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "kubeapi/vgpu.h"

#define V100 "NVIDIA-Tesla V100-PCIE-32GB"

static bool text_is(struct kubeapi_vgpu_text t, const char *s)
{
	return t.len == strlen(s) && memcmp(t.p, s, t.len) == 0;
}

static int decode_node(const char *s, struct kubeapi_vgpu_device *d, size_t cap, size_t *n)
{
	return kubeapi_vgpu_decode_node(s, strlen(s), d, cap, n);
}

/* Two GPUs as the plugin registers them: ids 0 and 1, the empty piece
 * after the last ':' holds nothing. */
static void test_node_registration(void **state)
{
	const char *s =
	    "GPU-aaaa,10,32768," V100 ",true,hami-core:GPU-bbbb,4,16384," V100 ",false,mig:";
	struct kubeapi_vgpu_device d[4];
	size_t n;

	(void)state;
	assert_int_equal(decode_node(s, d, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(d[0].id, 0);
	assert_true(text_is(d[0].uuid, "GPU-aaaa"));
	assert_int_equal(d[0].split, 10);
	assert_int_equal(d[0].memory, 32768);
	assert_true(text_is(d[0].type, V100));
	assert_true(d[0].healthy);
	assert_false(d[0].mig);
	assert_int_equal(d[1].id, 1);
	assert_true(text_is(d[1].uuid, "GPU-bbbb"));
	assert_int_equal(d[1].split, 4);
	assert_false(d[1].healthy);
	assert_true(d[1].mig);
}

/* A device's id is its piece's position, empty pieces counted (Volcano's
 * index over strings.Split); fields past the sixth are ignored; a mode
 * it does not know is hami-core; Go's bool spellings. */
static void test_node_ids_and_spellings(void **state)
{
	struct kubeapi_vgpu_device d[4];
	size_t n;

	(void)state;
	assert_int_equal(decode_node("::GPU-c,2,1024,NVIDIA-A,T,mps,extra,more", d, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(d[0].id, 2);
	assert_true(d[0].healthy);
	assert_false(d[0].mig);
	assert_true(text_is(d[0].mode, "mps"));
	assert_int_equal(decode_node("GPU-c,2,1024,NVIDIA-A,0,hami-core:", d, 4, &n), 0);
	assert_false(d[0].healthy);
}

/* No ':' at all: no devices (Volcano returns nil, the node keeps whole
 * GPUs). Malformed pieces and too many devices are refused. */
static void test_node_refusals(void **state)
{
	struct kubeapi_vgpu_device d[2];
	size_t n = 7;

	(void)state;
	assert_int_equal(decode_node("GPU-a,10,32768,T,true,hami-core", d, 2, &n), -ENOENT);
	assert_int_equal(n, 0);
	assert_int_equal(decode_node("", d, 2, &n), -ENOENT);
	/* Volcano: fewer than six fields makes the whole registration nil. */
	assert_int_equal(decode_node("GPU-a,10,32768,T,true:", d, 2, &n), -EINVAL);
	/* Volcano reads these as 0 or false; Muster refuses them. */
	assert_int_equal(decode_node("GPU-a,ten,32768,T,true,hami-core:", d, 2, &n), -EINVAL);
	assert_int_equal(decode_node("GPU-a,10,-1,T,true,hami-core:", d, 2, &n), -EINVAL);
	assert_int_equal(decode_node("GPU-a,10,4294967296,T,true,hami-core:", d, 2, &n), -EINVAL);
	assert_int_equal(decode_node("GPU-a,10,1,T,yes,hami-core:", d, 2, &n), -EINVAL);
	assert_int_equal(decode_node("a,1,1,T,true,m:b,1,1,T,true,m:c,1,1,T,true,m:", d, 2, &n),
	                 -E2BIG);
}

static int decode_pod(const char *s, struct kubeapi_vgpu_share *v, size_t cap, size_t *n,
                      size_t *nc)
{
	return kubeapi_vgpu_decode_pod(s, strlen(s), v, cap, n, nc);
}

/* Volcano's own example, and two containers, the first with two GPUs. */
static void test_pod_shares(void **state)
{
	struct kubeapi_vgpu_share v[4];
	size_t n, nc;

	(void)state;
	assert_int_equal(decode_pod("GPU-1234,NVIDIA,16384,0", v, 4, &n, &nc), 0);
	assert_int_equal(n, 1);
	assert_int_equal(nc, 1);
	assert_true(text_is(v[0].uuid, "GPU-1234"));
	assert_true(text_is(v[0].type, "NVIDIA"));
	assert_int_equal(v[0].memory, 16384);
	assert_int_equal(v[0].cores, 0);
	assert_int_equal(
	    decode_pod("GPU-a,NVIDIA,8000,30:GPU-b,NVIDIA,8000,30:;GPU-c,NVIDIA,100,0:", v, 4, &n,
	               &nc),
	    0);
	assert_int_equal(n, 3);
	assert_int_equal(nc, 2);
	assert_int_equal(v[1].container, 0);
	assert_true(text_is(v[1].uuid, "GPU-b"));
	assert_int_equal(v[1].cores, 30);
	assert_int_equal(v[2].container, 1);
	assert_int_equal(v[2].memory, 100);
	/* Empty text: no containers; an empty part: a container with none. */
	assert_int_equal(decode_pod("", v, 4, &n, &nc), 0);
	assert_int_equal(nc, 0);
	assert_int_equal(decode_pod(";GPU-c,NVIDIA,1,0:", v, 4, &n, &nc), 0);
	assert_int_equal(nc, 2);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].container, 1);
}

/* Volcano panics on a share of fewer than four fields; Muster refuses
 * it, and numbers that are not int32 ones. */
static void test_pod_refusals(void **state)
{
	struct kubeapi_vgpu_share v[1];
	size_t n, nc;

	(void)state;
	assert_int_equal(decode_pod("GPU-a,NVIDIA,10:", v, 1, &n, &nc), -EINVAL);
	assert_int_equal(decode_pod("GPU-a,NVIDIA,2147483648,0:", v, 1, &n, &nc), -EINVAL);
	assert_int_equal(decode_pod("GPU-a,NVIDIA,1,x:", v, 1, &n, &nc), -EINVAL);
	assert_int_equal(decode_pod("GPU-a,NVIDIA,1,0:GPU-b,NVIDIA,1,0:", v, 1, &n, &nc), -E2BIG);
}

/* encodePodDevices' bytes: "UUID,type,mem,cores:" per share, parts joined
 * by ';', an empty part for a container without shares; and back. */
static void test_encode_round_trip(void **state)
{
	const char *want = "GPU-a,NVIDIA,8000,30:GPU-b,NVIDIA,8000,30:;;GPU-c,NVIDIA,100,0:";
	struct kubeapi_vgpu_share v[4], back[4];
	struct buf b;
	size_t n, nc;

	(void)state;
	assert_int_equal(decode_pod(want, v, 4, &n, &nc), 0);
	assert_int_equal(nc, 3);
	buf_init(&b, 4096);
	assert_int_equal(kubeapi_vgpu_encode_pod(v, n, nc, &b), 0);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.p, want, b.len);
	assert_int_equal(kubeapi_vgpu_decode_pod(b.p, b.len, back, 4, &n, &nc), 0);
	assert_int_equal(n, 3);
	assert_int_equal(back[2].container, 2);
	/* A share for a container past ncontainers is an error. */
	b.len = 0;
	assert_int_equal(kubeapi_vgpu_encode_pod(v, 3, 2, &b), -EINVAL);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_node_registration), cmocka_unit_test(test_node_ids_and_spellings),
	    cmocka_unit_test(test_node_refusals),     cmocka_unit_test(test_pod_shares),
	    cmocka_unit_test(test_pod_refusals),      cmocka_unit_test(test_encode_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
