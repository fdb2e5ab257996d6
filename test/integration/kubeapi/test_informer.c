/*
 * Informers against the real local control plane (MUSTER_CLUSTER_DIR):
 *
 * - a kind the API server does not serve yet: a CRD that is not installed
 *   is tolerated (ABSENT, counted as synced) and looked for again, so
 *   objects appear once the CRD is installed, with no restart;
 * - objects over the caps: with a 1 MiB body cap and a 1 MiB object cap, a
 *   pod of 1.4 MB is skipped past in a list (the API server writes the
 *   page's metadata, continue token included, before its items and sends
 *   no Content-Length for a large page, so the head of the page that does
 *   not fit names the way past it) and in a watch, and the objects around
 *   it arrive.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kubeapi/informer.h"
#include "test/integration/itest.h"

#define GROUP "informer-test.muster.dev"
#define CRD   "widgets." GROUP

struct fixture {
	struct itest t;
	struct kubeapi_informer *inf;
	unsigned upserts, syncs;
	char last_name[128];
};

static long call(struct fixture *fx, enum kubeapi_method m, const char *path, const char *body)
{
	return itest_call(&fx->t, m, path, body);
}

static void on_upsert(void *data, const cJSON *obj)
{
	struct fixture *fx = data;
	const cJSON *name = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "name");

	fx->upserts++;
	snprintf(fx->last_name, sizeof(fx->last_name), "%s",
	         cJSON_IsString(name) ? name->valuestring : "");
}

static void on_remove(void *data, const cJSON *obj)
{
	(void)data;
	(void)obj;
}

static void on_sync_end(void *data)
{
	((struct fixture *)data)->syncs++;
}

static const struct kubeapi_kind widgets = {"Widget", "/apis/" GROUP "/v1/widgets", true};
static const struct kubeapi_informer_ops ops = {
    .upsert = on_upsert, .remove = on_remove, .sync_end = on_sync_end};

static int absent(void *arg)
{
	struct fixture *fx = arg;
	struct kubeapi_informer_stats st;

	kubeapi_informer_get_stats(fx->inf, &st);
	return st.absent && st.lists >= 2; /* missing, and looked for again */
}

static int got_widget(void *arg)
{
	struct fixture *fx = arg;

	return fx->upserts > 0 && !strcmp(fx->last_name, "w1");
}

static int crd_served(void *arg)
{
	struct fixture *fx = arg;

	return call(fx, KUBEAPI_GET, "/apis/" GROUP "/v1/widgets", NULL) == 200;
}

static void test_missing_crd_is_looked_for_again(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_informer_options opt = {.absent_retry_ms = 300};
	struct kubeapi_informer_stats st;

	assert_int_equal(
	    kubeapi_informer_new(&fx->t.loop, fx->t.http, &widgets, &opt, &ops, fx, &fx->inf), 0);
	assert_int_equal(kubeapi_informer_start(fx->inf), 0);
	assert_true(itest_run_until(&fx->t, absent, fx, 10000));
	assert_int_equal(fx->upserts, 0);
	assert_int_equal(
	    call(
	        fx, KUBEAPI_POST, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
	        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
	        "\"metadata\":{\"name\":\"" CRD "\"},\"spec\":{\"group\":\"" GROUP "\","
	        "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
	        "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":"
	        "{\"openAPIV3Schema\":{\"type\":\"object\","
	        "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}"),
	    201);
	assert_true(itest_run_until(&fx->t, crd_served, fx, 30000));
	assert_int_equal(call(fx, KUBEAPI_POST, "/apis/" GROUP "/v1/namespaces/default/widgets",
	                      "{\"apiVersion\":\"" GROUP "/v1\",\"kind\":\"Widget\","
	                      "\"metadata\":{\"name\":\"w1\"}}"),
	                 201);
	assert_true(itest_run_until(&fx->t, got_widget, fx, 30000));
	kubeapi_informer_get_stats(fx->inf, &st);
	assert_false(st.absent);
	assert_true(st.synced);
}

/* ---- objects over the caps ---------------------------------------------------- */

#define BIG_NS  "informer-test-big"
#define BALLAST 1400000 /* bytes of one environment variable: a 1.4 MB pod */
#define MIB     ((size_t)1 << 20)

static const struct kubeapi_kind big_pods = {"Pod", "/api/v1/namespaces/" BIG_NS "/pods", false};

struct big {
	struct fixture *fx;
	struct kubeapi_http *http; /* with a 1 MiB body cap */
	unsigned upserts, keeps;
	char upserted[256], kept[256];
};

static const char *name_of(const cJSON *obj)
{
	const cJSON *n = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "name");

	return cJSON_IsString(n) ? n->valuestring : "?";
}

static void big_upsert(void *data, const cJSON *obj)
{
	struct big *b = data;
	size_t n = strlen(b->upserted);

	b->upserts++;
	snprintf(b->upserted + n, sizeof(b->upserted) - n, "%s ", name_of(obj));
}

static void big_keep(void *data, const cJSON *obj)
{
	struct big *b = data;
	size_t n = strlen(b->kept);

	b->keeps++;
	snprintf(b->kept + n, sizeof(b->kept) - n, "%s ", name_of(obj));
}

static void big_log(void *data, const char *msg)
{
	(void)data;
	fprintf(stderr, "  %s\n", msg);
}

static const struct kubeapi_informer_ops big_ops = {
    .upsert = big_upsert, .remove = on_remove, .keep = big_keep, .log = big_log};

/* A pod for no scheduler that runs here, with `ballast` bytes of env. */
static void create_pod(struct fixture *fx, const char *name, size_t ballast)
{
	size_t n = ballast + 512;
	char *body = malloc(n), *v;
	int k;

	assert_non_null(body);
	k = snprintf(body, n,
	             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},"
	             "\"spec\":{\"schedulerName\":\"nobody\",\"containers\":[{\"name\":\"c\","
	             "\"image\":\"busybox\",\"env\":[{\"name\":\"BALLAST\",\"value\":\"",
	             name);
	v = body + k;
	memset(v, 'a', ballast);
	snprintf(v + ballast, n - (size_t)k - ballast, "\"}]}]}}");
	assert_int_equal(call(fx, KUBEAPI_POST, "/api/v1/namespaces/" BIG_NS "/pods", body), 201);
	free(body);
}

static int big_synced(void *arg)
{
	struct big *b = arg;
	struct kubeapi_informer_stats st;

	kubeapi_informer_get_stats(b->fx->inf, &st);
	return st.synced;
}

static int big_got_e(void *arg)
{
	return strstr(((struct big *)arg)->upserted, "e ") != NULL;
}

static int ns_gone(void *arg)
{
	return call(arg, KUBEAPI_GET, "/api/v1/namespaces/" BIG_NS, NULL) == 404;
}

static void test_objects_over_the_caps_are_skipped(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_http_options hopt = {.max_body = MIB};
	struct kubeapi_informer_options opt = {.max_object = MIB, .backoff_cap_ms = 1000};
	struct kubeapi_informer_stats st;
	static struct big b; /* the informer's, until the loop has let go */

	b = (struct big){.fx = fx};
	kubeapi_informer_close(&fx->inf, NULL, NULL); /* the test before's */
	call(fx, KUBEAPI_DELETE, "/api/v1/namespaces/" BIG_NS "?gracePeriodSeconds=0", NULL);
	assert_true(itest_run_until(&fx->t, ns_gone, fx, 60000));
	assert_int_equal(call(fx, KUBEAPI_POST, "/api/v1/namespaces",
	                      "{\"metadata\":{\"name\":\"" BIG_NS "\"}}"),
	                 201);
	create_pod(fx, "a", 100);
	create_pod(fx, "b", BALLAST);
	create_pod(fx, "c", 100);
	assert_int_equal(kubeapi_http_new(&fx->t.loop, &fx->t.conn, &hopt, &b.http), 0);
	assert_int_equal(
	    kubeapi_informer_new(&fx->t.loop, b.http, &big_pods, &opt, &big_ops, &b, &fx->inf), 0);
	assert_int_equal(kubeapi_informer_start(fx->inf), 0);
	assert_true(itest_run_until(&fx->t, big_synced, &b, 30000));
	kubeapi_informer_get_stats(fx->inf, &st);
	assert_string_equal(b.upserted, "a c ");
	assert_string_equal(b.kept, "b ");
	assert_int_equal(st.too_large, 1);
	assert_true(st.shrinks >= 1);
	/* The watch: d is skipped, e after it arrives. */
	create_pod(fx, "d", BALLAST);
	create_pod(fx, "e", 100);
	assert_true(itest_run_until(&fx->t, big_got_e, &b, 30000));
	kubeapi_informer_get_stats(fx->inf, &st);
	assert_string_equal(b.upserted, "a c e ");
	assert_string_equal(b.kept, "b d ");
	assert_int_equal(st.too_large, 2);
	kubeapi_informer_close(&fx->inf, NULL, NULL);
	kubeapi_http_close(&b.http, NULL, NULL);
	call(fx, KUBEAPI_DELETE, "/api/v1/namespaces/" BIG_NS "?gracePeriodSeconds=0", NULL);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	itest_open(&fx->t);
	/* A CRD left by an earlier, interrupted run would defeat the test. */
	call(fx, KUBEAPI_DELETE, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" CRD,
	     NULL);
	*state = fx;
	return 0;
}

static int crd_gone(void *arg)
{
	struct fixture *fx = arg;

	return call(fx, KUBEAPI_GET, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" CRD,
	            NULL) == 404;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	kubeapi_informer_close(&fx->inf, NULL, NULL);
	call(fx, KUBEAPI_DELETE, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" CRD,
	     NULL);
	itest_run_until(&fx->t, crd_gone, fx, 30000);
	itest_close(&fx->t);
	free(fx);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_missing_crd_is_looked_for_again),
	    cmocka_unit_test(test_objects_over_the_caps_are_skipped),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
