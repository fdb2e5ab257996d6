/*
 * The vGPU device protocol in decoded objects (kubeapi/decode_vgpu.c): a
 * Node's registered GPUs, a pod's held shares and its containers' asks,
 * the warnings for annotations that cannot be read, and no reference
 * left behind (the teardown fails on a live string or blob).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/intern.h"
#include "kubeapi/decode.h"

#define REG   "volcano.sh/node-vgpu-register"
#define V100  "NVIDIA-Tesla V100-PCIE-32GB"
#define ALLOC "\"volcano.sh/vgpu-number\":\"20\",\"volcano.sh/vgpu-memory\":\"65536\""

static int setup(void **state)
{
	struct kubeapi_model *m = NULL;

	if (kubeapi_model_new(&m) < 0)
		return -1;
	*state = m;
	return 0;
}

static int teardown(void **state)
{
	struct kubeapi_model *m = *state;
	struct intern_stats s;

	intern_stats(kubeapi_model_intern(m), &s);
	kubeapi_model_free(&m);
	if (s.strings || s.blobs) {
		print_error("leak: %zu strings and %zu blobs still live\n", s.strings, s.blobs);
		return -1;
	}
	return 0;
}

static const char *S(struct kubeapi_model *m, uint32_t id)
{
	return intern_str(kubeapi_model_intern(m), id);
}

/* A Node with registration reg (NULL: none) and allocatable extra. */
static int node(struct kubeapi_model *m, const char *reg, const char *extra, struct kubeapi_node *n,
                struct kubeapi_decode_error *err)
{
	char text[2048];
	cJSON *doc;
	int rc;

	snprintf(text, sizeof(text),
	         "{\"metadata\":{\"name\":\"vgpu-0\",\"annotations\":{%s%s%s}},"
	         "\"status\":{\"allocatable\":{\"cpu\":\"32\",\"pods\":\"110\"%s%s}}}",
	         reg ? "\"" REG "\":\"" : "", reg ? reg : "", reg ? "\"" : "", *extra ? "," : "",
	         extra);
	assert_non_null(doc = cJSON_Parse(text));
	rc = kubeapi_node_decode(m, doc, n, err);
	cJSON_Delete(doc);
	return rc;
}

static void test_node_registration(void **state)
{
	struct kubeapi_model *m = *state;
	struct kubeapi_decode_error err;
	struct kubeapi_node n;

	assert_int_equal(node(m,
	                      "GPU-a,10,32768," V100 ",true,hami-core:GPU-b,4,16384,T4,false,mig:",
	                      ALLOC ",\"volcano.sh/vgpu-cores\":\"200\"", &n, &err),
	                 0);
	assert_string_equal(err.warning, "");
	assert_non_null(n.gpus);
	assert_int_equal(n.gpus->n, 2);
	assert_string_equal(S(m, n.gpus->e[0].uuid), "GPU-a");
	assert_string_equal(S(m, n.gpus->e[0].type), V100);
	assert_int_equal(n.gpus->e[0].memory, 32768);
	assert_int_equal(n.gpus->e[0].split, 10);
	assert_true(n.gpus->e[0].healthy && !n.gpus->e[0].mig);
	assert_string_equal(S(m, n.gpus->e[1].uuid), "GPU-b");
	assert_int_equal(n.gpus->e[1].split, 4);
	assert_true(!n.gpus->e[1].healthy && n.gpus->e[1].mig);
	kubeapi_node_release(m, &n);
}

/* Volcano takes a registration only where the plugin's three resources
 * are allocatable; a malformed one is ignored, the Node kept. */
static void test_node_registration_ignored(void **state)
{
	struct kubeapi_model *m = *state;
	struct kubeapi_decode_error err;
	struct kubeapi_node n;

	assert_int_equal(node(m, "GPU-a,10,32768,T4,true,hami-core:", ALLOC, &n, &err), 0);
	assert_null(n.gpus);
	assert_non_null(strstr(err.warning, "allocatable has no volcano.sh/vgpu-cores"));
	kubeapi_node_release(m, &n);

	assert_int_equal(node(m, "GPU-a,ten,32768,T4,true,hami-core:",
	                      ALLOC ",\"volcano.sh/vgpu-cores\":\"100\"", &n, &err),
	                 0);
	assert_null(n.gpus);
	assert_string_equal(err.warning, "annotation " REG " ignored: malformed");
	assert_int_equal(n.ready, 0);
	assert_non_null(n.allocatable);
	kubeapi_node_release(m, &n);

	assert_int_equal(node(m, NULL, ALLOC ",\"volcano.sh/vgpu-cores\":\"100\"", &n, &err), 0);
	assert_null(n.gpus);
	assert_string_equal(err.warning, "");
	kubeapi_node_release(m, &n);
}

/* A pod whose containers have these resources objects, and annotations. */
static int pod(struct kubeapi_model *m, const char *const *res, size_t n, const char *annotations,
               struct kubeapi_pod *p, struct kubeapi_decode_error *err)
{
	char text[4096];
	size_t at;
	cJSON *doc;
	int rc;

	at = (size_t)snprintf(
	    text, sizeof(text),
	    "{\"metadata\":{\"name\":\"p\",\"namespace\":\"t\",\"annotations\":{%s}},"
	    "\"spec\":{\"containers\":[",
	    annotations);
	for (size_t k = 0; k < n; k++)
		at += (size_t)snprintf(text + at, sizeof(text) - at,
		                       "%s{\"name\":\"c%zu\",\"resources\":%s}", k ? "," : "", k,
		                       res[k]);
	snprintf(text + at, sizeof(text) - at, "]}}");
	assert_non_null(doc = cJSON_Parse(text));
	rc = kubeapi_pod_decode(m, doc, p, err);
	cJSON_Delete(doc);
	return rc;
}

/* Volcano's ExtractResourceRequest: the count from limits only; memory,
 * percentage and cores from limits, else requests; a memory limit alone
 * asks one GPU; neither memory asked means 100 percent of it. */
static void test_container_asks(void **state)
{
	struct kubeapi_model *m = *state;
	static const char *const res[] = {
	    "{\"limits\":{\"volcano.sh/vgpu-number\":\"2\",\"volcano.sh/vgpu-memory\":\"8000\"},"
	    "\"requests\":{\"volcano.sh/vgpu-cores\":\"30\"}}",
	    "{\"requests\":{\"cpu\":\"1\"}}",
	    "{\"limits\":{\"volcano.sh/vgpu-memory\":4096}}",
	    "{\"limits\":{\"volcano.sh/vgpu-number\":\"1\",\"volcano.sh/vgpu-memory-percentage\":"
	    "\"25\"}}",
	    "{\"limits\":{\"volcano.sh/vgpu-number\":\"1\"}}",
	    "{\"requests\":{\"volcano.sh/vgpu-number\":\"1\"}}",
	};
	struct kubeapi_decode_error err;
	struct kubeapi_pod p;
	const struct kubeapi_vgpu_ask *a;

	assert_int_equal(pod(m, res, 6, "", &p, &err), 0);
	assert_int_equal(p.spec->nvgpu, 4);
	a = kubeapi_podspec_vgpu(p.spec);
	assert_int_equal(a[0].nums, 2);
	assert_int_equal(a[0].mem, 8000);
	assert_int_equal(a[0].mem_pct, KUBEAPI_VGPU_NO_PCT);
	assert_int_equal(a[0].cores, 30);
	assert_int_equal(a[1].nums, 1);
	assert_int_equal(a[1].mem, 4096);
	assert_int_equal(a[2].mem_pct, 25);
	assert_int_equal(a[2].mem, 0);
	assert_int_equal(a[3].mem_pct, 100);
	assert_int_equal(a[3].cores, 0);
	assert_null(p.vgpu);
	kubeapi_pod_release(m, &p);
}

static void test_container_asks_out_of_range(void **state)
{
	struct kubeapi_model *m = *state;
	static const char *const cores[] = {
	    "{\"limits\":{\"volcano.sh/vgpu-number\":\"1\",\"volcano.sh/vgpu-cores\":\"101\"}}"};
	static const char *const big[] = {"{\"limits\":{\"volcano.sh/vgpu-memory\":\"10Gi\"}}"};
	static const char *const none[] = {"{\"limits\":{\"volcano.sh/vgpu-number\":\"0\"}}"};
	struct kubeapi_decode_error err;
	struct kubeapi_pod p;

	assert_int_equal(pod(m, cores, 1, "", &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "vGPU ask out of range"));
	assert_int_equal(pod(m, big, 1, "", &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "volcano.sh/vgpu-memory: not a whole number"));
	assert_int_equal(pod(m, none, 1, "", &p, &err), -EINVAL);
}

static void test_pod_held_shares(void **state)
{
	struct kubeapi_model *m = *state;
	static const char *const res[] = {"{}"};
	struct kubeapi_decode_error err;
	struct kubeapi_pod p, q;

	assert_int_equal(pod(m, res, 1,
	                     "\"volcano.sh/vgpu-ids-new\":\"GPU-a," V100 ",16384,50:;GPU-b,T4,"
	                     "1024,0:GPU-c,T4,1024,0:\"",
	                     &p, &err),
	                 0);
	assert_string_equal(err.warning, "");
	assert_non_null(p.vgpu);
	assert_int_equal(p.vgpu->n, 3);
	assert_int_equal(p.vgpu->ncontainers, 2);
	assert_string_equal(S(m, p.vgpu->e[0].uuid), "GPU-a");
	assert_int_equal(p.vgpu->e[0].container, 0);
	assert_int_equal(p.vgpu->e[0].mem, 16384);
	assert_int_equal(p.vgpu->e[0].cores, 50);
	assert_string_equal(S(m, p.vgpu->e[2].uuid), "GPU-c");
	assert_int_equal(p.vgpu->e[2].container, 1);

	/* Unreadable: the pod is kept, holding no share, and the decode
	 * says so. */
	assert_int_equal(
	    pod(m, res, 1, "\"volcano.sh/vgpu-ids-new\":\"GPU-a,T4,16384:\"", &q, &err), 0);
	assert_null(q.vgpu);
	assert_string_equal(err.warning, "annotation volcano.sh/vgpu-ids-new ignored: malformed");
	kubeapi_pod_release(m, &q);
	kubeapi_pod_release(m, &p);
}

/* The fixture testdata/vgpu.json (also a seed of the decode fuzz
 * target): a registered node, a pod holding a share, one asking two
 * quarter GPUs by percentage. */
static void test_fixture(void **state)
{
	struct kubeapi_model *m = *state;
	struct kubeapi_decode_error err;
	struct kubeapi_node n;
	struct kubeapi_pod p[2];
	FILE *f = fopen("test/unit/kubeapi/testdata/vgpu.json", "r");
	static char text[16384];
	size_t len;
	cJSON *doc, *items;

	assert_non_null(f);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	assert_non_null(doc = cJSON_Parse(text));
	items = cJSON_GetObjectItem(doc, "items");
	assert_int_equal(kubeapi_node_decode(m, cJSON_GetArrayItem(items, 0), &n, &err), 0);
	assert_int_equal(n.gpus->n, 2);
	assert_int_equal(kubeapi_pod_decode(m, cJSON_GetArrayItem(items, 1), &p[0], &err), 0);
	assert_int_equal(p[0].vgpu->n, 1);
	assert_int_equal(p[0].vgpu->ncontainers, 2); /* the text ends with a ';' */
	assert_int_equal(p[0].vgpu->e[0].uuid, n.gpus->e[0].uuid);
	assert_int_equal(kubeapi_pod_decode(m, cJSON_GetArrayItem(items, 2), &p[1], &err), 0);
	assert_int_equal(p[1].spec->nvgpu, 1);
	assert_int_equal(kubeapi_podspec_vgpu(p[1].spec)[0].nums, 2);
	assert_int_equal(kubeapi_podspec_vgpu(p[1].spec)[0].mem_pct, 25);
	kubeapi_pod_release(m, &p[1]);
	kubeapi_pod_release(m, &p[0]);
	kubeapi_node_release(m, &n);
	cJSON_Delete(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_node_registration, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_node_registration_ignored, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_container_asks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_container_asks_out_of_range, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pod_held_shares, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fixture, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
