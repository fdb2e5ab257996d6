/*
 * An informer for a kind the API server does not serve yet: a CRD that is
 * not installed is tolerated (ABSENT, counted as synced) and looked for
 * again, so objects appear once the CRD is installed, with no restart.
 * Runs against the real local control plane (MUSTER_CLUSTER_DIR).
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
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
