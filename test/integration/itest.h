/*
 * What the integration tests share: where the local cluster is
 * (MUSTER_CLUSTER_DIR), a loop with an HTTP engine on the admin kubeconfig,
 * driving the loop until a condition holds, and synchronous calls.
 * Include after <cmocka.h>. Header-only: each test is one program.
 */
#ifndef MUSTER_TEST_ITEST_H
#define MUSTER_TEST_ITEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeapi/conn.h"
#include "kubeapi/http.h"

struct itest {
	char dir[512];
	char kubectl[600]; /* "BIN/kubectl --kubeconfig DIR/kubeconfig" */
	char ctl[600];     /* test/cluster/ctl for this cluster */
	char etcd_port[16];
	uv_loop_t loop;
	struct kubeapi_conn conn;
	struct kubeapi_http *http;
	/* The last call made through itest_wait(). */
	int done, err;
	long status;
	unsigned attempts;
	char body[8192];
};

/* Read cluster.env and open a loop and an engine on the admin kubeconfig. */
static inline void itest_open(struct itest *t)
{
	const char *dir = getenv("MUSTER_CLUSTER_DIR");
	char path[600], err[256], line[1024];
	FILE *f;

	assert_non_null(dir);
	snprintf(t->dir, sizeof(t->dir), "%s", dir);
	snprintf(path, sizeof(path), "%s/cluster.env", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "BIN=", 4))
			snprintf(t->kubectl, sizeof(t->kubectl),
			         "%.200s/kubectl --kubeconfig %.200s/kubeconfig", line + 4, dir);
		if (!strncmp(line, "ETCD_PORT=", 10))
			snprintf(t->etcd_port, sizeof(t->etcd_port), "%.8s", line + 10);
	}
	fclose(f);
	assert_true(t->kubectl[0] && t->etcd_port[0]);
	snprintf(t->ctl, sizeof(t->ctl), "MUSTER_CLUSTER_DIR=%.500s test/cluster/ctl", dir);
	snprintf(path, sizeof(path), "%s/kubeconfig", dir);
	assert_int_equal(kubeapi_conn_from_kubeconfig(path, NULL, &t->conn, err, sizeof(err)), 0);
	assert_int_equal(uv_loop_init(&t->loop), 0);
	assert_int_equal(kubeapi_http_new(&t->loop, &t->conn, NULL, &t->http), 0);
}

/* Close the engine, run the loop dry, and check it closes cleanly. */
static inline void itest_close(struct itest *t)
{
	kubeapi_http_close(&t->http, NULL, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&t->loop), 0);
	kubeapi_conn_free(&t->conn);
}

static inline void itest__tick(uv_timer_t *timer)
{
	(void)timer;
}

/* Run the loop until cond(arg) holds, at most timeout_ms; returns it. A
 * 50 ms tick keeps the loop turning while nothing else happens. */
static inline int itest_run_until(struct itest *t, int (*cond)(void *), void *arg,
                                  unsigned timeout_ms)
{
	uv_timer_t timer;
	uint64_t end = uv_now(&t->loop) + timeout_ms;
	int ok;

	uv_timer_init(&t->loop, &timer);
	uv_timer_start(&timer, itest__tick, 50, 50);
	while (!(ok = cond(arg)) && uv_now(&t->loop) < end)
		uv_run(&t->loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&timer, NULL);
	uv_run(&t->loop, UV_RUN_NOWAIT);
	return ok;
}

/* A done callback that records the response in the itest (data). */
static inline void itest_done(void *data, const struct kubeapi_response *r)
{
	struct itest *t = data;

	t->done = 1;
	t->status = r->status;
	t->err = r->err;
	t->attempts = r->attempts;
	snprintf(t->body, sizeof(t->body), "%s", r->body ? r->body : "");
}

static inline int itest__is_done(void *arg)
{
	return ((struct itest *)arg)->done;
}

/* Wait for the call just submitted with itest_done (rc is what the submit
 * returned); returns its HTTP status, asserting there was no error. The
 * engine never calls done_cb inside submit, so resetting here is safe. */
static inline long itest_wait(struct itest *t, int rc)
{
	t->done = 0;
	assert_int_equal(rc, 0);
	assert_true(itest_run_until(t, itest__is_done, t, 60000));
	assert_int_equal(t->err, 0);
	return t->status;
}

/* A synchronous request, retried as writes are; returns the status. */
static inline long itest_call(struct itest *t, enum kubeapi_method m, const char *path,
                              const char *body)
{
	struct kubeapi_request req = {
	    .method = m,
	    .path = path,
	    .body = body,
	    .body_len = body ? strlen(body) : 0,
	    .flags = KUBEAPI_REQ_RETRY,
	    .done_cb = itest_done,
	    .data = t,
	};

	return itest_wait(t, kubeapi_http_submit(t->http, &req, NULL));
}

/* Run a shell command built from fmt; it must succeed. */
static inline void itest_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void itest_sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

#endif /* MUSTER_TEST_ITEST_H */
