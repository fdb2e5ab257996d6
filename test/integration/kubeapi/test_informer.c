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

#include "kubeapi/conn.h"
#include "kubeapi/http.h"
#include "kubeapi/informer.h"

#define GROUP "informer-test.muster.dev"
#define CRD   "widgets." GROUP

struct fixture {
	uv_loop_t loop;
	struct kubeapi_conn conn;
	struct kubeapi_http *http;
	struct kubeapi_informer *inf;
	unsigned upserts, syncs;
	char last_name[128];
	int done;
	long status;
};

static void on_done(void *data, const struct kubeapi_response *r)
{
	struct fixture *fx = data;

	fx->done = 1;
	fx->status = r->err ? -1 : r->status;
}

static void tick(uv_timer_t *t)
{
	(void)t;
}

/* Run the loop until cond() or timeout_ms; returns cond(). */
static int run_until(struct fixture *fx, int (*cond)(struct fixture *), unsigned timeout_ms)
{
	uv_timer_t t;
	uint64_t end = uv_now(&fx->loop) + timeout_ms;
	int ok;

	uv_timer_init(&fx->loop, &t);
	uv_timer_start(&t, tick, 50, 50);
	while (!(ok = cond(fx)) && uv_now(&fx->loop) < end)
		uv_run(&fx->loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	return ok;
}

static int is_done(struct fixture *fx)
{
	return fx->done;
}

static long call(struct fixture *fx, enum kubeapi_method m, const char *path, const char *body)
{
	struct kubeapi_request req = {.method = m,
	                              .path = path,
	                              .body = body,
	                              .body_len = body ? strlen(body) : 0,
	                              .flags = KUBEAPI_REQ_RETRY,
	                              .done_cb = on_done,
	                              .data = fx};

	fx->done = 0;
	assert_int_equal(kubeapi_http_submit(fx->http, &req, NULL), 0);
	assert_true(run_until(fx, is_done, 30000));
	return fx->status;
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

static int absent(struct fixture *fx)
{
	struct kubeapi_informer_stats st;

	kubeapi_informer_get_stats(fx->inf, &st);
	return st.absent && st.lists >= 2; /* missing, and looked for again */
}

static int got_widget(struct fixture *fx)
{
	return fx->upserts > 0 && !strcmp(fx->last_name, "w1");
}

static int crd_served(struct fixture *fx)
{
	return call(fx, KUBEAPI_GET, "/apis/" GROUP "/v1/widgets", NULL) == 200;
}

static void test_missing_crd_is_looked_for_again(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_informer_options opt = {.absent_retry_ms = 300};
	struct kubeapi_informer_stats st;

	assert_int_equal(
	    kubeapi_informer_new(&fx->loop, fx->http, &widgets, &opt, &ops, fx, &fx->inf), 0);
	assert_int_equal(kubeapi_informer_start(fx->inf), 0);
	assert_true(run_until(fx, absent, 10000));
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
	assert_true(run_until(fx, crd_served, 30000));
	assert_int_equal(call(fx, KUBEAPI_POST, "/apis/" GROUP "/v1/namespaces/default/widgets",
	                      "{\"apiVersion\":\"" GROUP "/v1\",\"kind\":\"Widget\","
	                      "\"metadata\":{\"name\":\"w1\"}}"),
	                 201);
	assert_true(run_until(fx, got_widget, 30000));
	kubeapi_informer_get_stats(fx->inf, &st);
	assert_false(st.absent);
	assert_true(st.synced);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	const char *dir = getenv("MUSTER_CLUSTER_DIR");
	char path[600], err[256];

	assert_non_null(fx);
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/kubeconfig", dir);
	assert_int_equal(kubeapi_conn_from_kubeconfig(path, NULL, &fx->conn, err, sizeof(err)), 0);
	assert_int_equal(uv_loop_init(&fx->loop), 0);
	assert_int_equal(kubeapi_http_new(&fx->loop, &fx->conn, NULL, &fx->http), 0);
	/* A CRD left by an earlier, interrupted run would defeat the test. */
	call(fx, KUBEAPI_DELETE, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" CRD,
	     NULL);
	*state = fx;
	return 0;
}

static int crd_gone(struct fixture *fx)
{
	return call(fx, KUBEAPI_GET, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" CRD,
	            NULL) == 404;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	kubeapi_informer_close(&fx->inf, NULL, NULL);
	call(fx, KUBEAPI_DELETE, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" CRD,
	     NULL);
	run_until(fx, crd_gone, 30000);
	kubeapi_http_close(&fx->http, NULL, NULL);
	uv_run(&fx->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&fx->loop), 0);
	kubeapi_conn_free(&fx->conn);
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
