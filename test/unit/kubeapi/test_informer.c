/*
 * kubeapi/informer against a canned API server on loopback: plain
 * HTTP/1.1, one answer per connection, written by this file from the
 * request's limit and continue parameters, so each test knows the exact
 * requests the informer must send and checks them.
 *
 * What is checked: a watch stream whose first line is empty (under UBSan
 * this once applied an offset to a NULL buffer); a page over the body cap
 * asked again with the same continue token and a smaller limit, and the
 * limit growing back when objects are small; a single object over the
 * body cap skipped past with the continue token read from the part of the
 * page that came; objects over max_object skipped, in a page and in watch
 * events (whole lines and lines over the line cap), counted, logged by
 * namespace/name, kept or removed; an expired continue token (410) listing
 * again from the start; the page-size formula.
 *
 * Every test ends with the informer, the engine and the server closed and
 * uv_loop_close() == 0. Milliseconds to run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "kubeapi/informer.h"
#include "kubeapi/informer_internal.h"

#define MAX_OBJECTS 256
#define MAX_PATHS   256
#define WAIT_MS     10000

/* ---- a growing text buffer ------------------------------------------------------ */

struct text {
	char *p;
	size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = (t->len + (size_t)n + 1) * 2;
		t->p = realloc(t->p, t->cap);
		assert_non_null(t->p);
	}
	va_start(ap, fmt);
	vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

/* Object i, about `size` bytes of JSON: metadata first, as the API server
 * writes it, then padding. */
static void add_object(struct text *t, unsigned i, size_t size)
{
	size_t start = t->len, pad;

	add(t,
	    "{\"metadata\":{\"name\":\"o%u\",\"namespace\":\"ns\",\"resourceVersion\":\"%u\"},"
	    "\"pad\":\"",
	    i, 100 + i);
	pad = size > t->len - start + 2 ? size - (t->len - start + 2) : 0;
	for (; pad > 0; pad--)
		add(t, "x");
	add(t, "\"}");
}

/* ---- the canned API server ---------------------------------------------------------- */

struct fake {
	unsigned nobj;
	size_t size[MAX_OBJECTS]; /* JSON bytes of each listed object */
	unsigned gone_at;         /* 410 for the first page continuing at this index; 0: never */
	bool gone_sent;
	struct text watch; /* the first watch's stream; later watches get no answer */
};

struct peer;

struct fx {
	uv_loop_t loop;
	uv_tcp_t listener;
	uv_timer_t tick;
	struct peer *peers;
	char server[64];
	struct kubeapi_conn conn;
	struct kubeapi_http *http;
	struct kubeapi_informer *inf;
	struct fake api;
	char paths[MAX_PATHS][256];
	unsigned npaths, watches;
	/* What the informer handed over. */
	unsigned upserts, removes, keeps, syncs;
	struct text upserted, removed, kept, logs;
};

struct peer {
	uv_tcp_t tcp;
	struct fx *fx;
	struct peer *next;
	char req[4096];
	size_t len;
	bool answered;
	uv_write_t w;
	struct text out;
};

static unsigned query_uint(const char *path, const char *key, unsigned dflt)
{
	const char *q = strstr(path, key);

	return q ? (unsigned)strtoul(q + strlen(key), NULL, 10) : dflt;
}

/* The List page GET path?limit=L[&continue=K]: objects K .. K+L-1. */
static int list_reply(struct fx *fx, const char *path, struct text *body)
{
	unsigned limit = query_uint(path, "limit=", 500), from = query_uint(path, "continue=", 0);
	unsigned end = from + limit < fx->api.nobj ? from + limit : fx->api.nobj;

	if (fx->api.gone_at && from == fx->api.gone_at && !fx->api.gone_sent) {
		fx->api.gone_sent = true;
		add(body, "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}");
		return 410;
	}
	add(body,
	    "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"99\"");
	if (end < fx->api.nobj)
		add(body, ",\"continue\":\"%u\"", end);
	add(body, "},\"items\":[");
	for (unsigned i = from; i < end; i++) {
		if (i > from)
			add(body, ",");
		add_object(body, i, fx->api.size[i]);
	}
	add(body, "]}");
	return 200;
}

static void peer_closed(uv_handle_t *h)
{
	struct peer *p = h->data, **pp;

	for (pp = &p->fx->peers; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	free(p->out.p);
	free(p);
}

static void written(uv_write_t *w, int status)
{
	struct peer *p = w->data;

	(void)status;
	uv_close((uv_handle_t *)&p->tcp, peer_closed); /* the end of the body */
}

/* Answer the request in p->req, or (a later watch) leave it hanging. */
static void answer(struct peer *p)
{
	struct fx *fx = p->fx;
	char path[256] = "";
	struct text body = {0};
	int status = 200;
	uv_buf_t b;

	sscanf(p->req, "GET %255s", path);
	assert_true(fx->npaths < MAX_PATHS);
	snprintf(fx->paths[fx->npaths++], sizeof(fx->paths[0]), "%s", path);
	p->answered = true;
	if (strstr(path, "watch=1")) {
		if (fx->watches++ > 0)
			return;
		add(&body, "%.*s", (int)fx->api.watch.len, fx->api.watch.p ? fx->api.watch.p : "");
	} else {
		status = list_reply(fx, path, &body);
	}
	add(&p->out, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
	    status);
	add(&p->out, "%.*s", (int)body.len, body.p ? body.p : "");
	free(body.p);
	b = uv_buf_init(p->out.p, (unsigned)p->out.len);
	p->w.data = p;
	assert_int_equal(uv_write(&p->w, (uv_stream_t *)&p->tcp, &b, 1, written), 0);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct peer *p = h->data;

	(void)hint;
	*buf = uv_buf_init(p->req + p->len, (unsigned)(sizeof(p->req) - 1 - p->len));
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct peer *p = s->data;

	(void)buf;
	if (n < 0) {
		if (!uv_is_closing((uv_handle_t *)s))
			uv_close((uv_handle_t *)s, peer_closed);
		return;
	}
	p->len += (size_t)n;
	p->req[p->len] = '\0';
	if (!p->answered && strstr(p->req, "\r\n\r\n"))
		answer(p);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct fx *fx = server->data;
	struct peer *p = calloc(1, sizeof(*p));

	assert_int_equal(status, 0);
	assert_non_null(p);
	p->fx = fx;
	p->next = fx->peers;
	fx->peers = p;
	uv_tcp_init(&fx->loop, &p->tcp);
	p->tcp.data = p;
	assert_int_equal(uv_accept(server, (uv_stream_t *)&p->tcp), 0);
	uv_read_start((uv_stream_t *)&p->tcp, alloc_cb, read_cb);
}

/* ---- the informer's receiver ------------------------------------------------------ */

static const char *name_of(const cJSON *obj)
{
	const cJSON *n = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "name");

	return cJSON_IsString(n) ? n->valuestring : "?";
}

static void on_upsert(void *data, const cJSON *obj)
{
	struct fx *fx = data;

	fx->upserts++;
	add(&fx->upserted, "%s ", name_of(obj));
}

static void on_remove(void *data, const cJSON *obj)
{
	struct fx *fx = data;

	fx->removes++;
	add(&fx->removed, "%s ", name_of(obj));
}

static void on_keep(void *data, const cJSON *obj)
{
	struct fx *fx = data;

	fx->keeps++;
	add(&fx->kept, "%s ", name_of(obj));
}

static void on_sync_end(void *data)
{
	((struct fx *)data)->syncs++;
}

static void on_log(void *data, const char *msg)
{
	add(&((struct fx *)data)->logs, "%s\n", msg);
}

static const struct kubeapi_kind pods = {"Pod", "/api/v1/pods", false};
static const struct kubeapi_informer_ops ops = {.upsert = on_upsert,
                                                .remove = on_remove,
                                                .keep = on_keep,
                                                .sync_end = on_sync_end,
                                                .log = on_log};

/* ---- running ----------------------------------------------------------------------- */

static void tick(uv_timer_t *t)
{
	(void)t;
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct sockaddr_in addr;
	struct sockaddr_storage name;
	int len = sizeof(name);

	assert_non_null(fx);
	assert_int_equal(uv_loop_init(&fx->loop), 0);
	uv_tcp_init(&fx->loop, &fx->listener);
	fx->listener.data = fx;
	uv_ip4_addr("127.0.0.1", 0, &addr);
	assert_int_equal(uv_tcp_bind(&fx->listener, (const struct sockaddr *)&addr, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *)&fx->listener, 64, on_connection), 0);
	uv_tcp_getsockname(&fx->listener, (struct sockaddr *)&name, &len);
	snprintf(fx->server, sizeof(fx->server), "http://127.0.0.1:%d",
	         ntohs(((struct sockaddr_in *)&name)->sin_port));
	fx->conn.server = fx->server;
	uv_timer_init(&fx->loop, &fx->tick);
	uv_timer_start(&fx->tick, tick, 5, 5); /* keeps the loop turning */
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	kubeapi_informer_close(&fx->inf, NULL, NULL);
	kubeapi_http_close(&fx->http, NULL, NULL);
	for (struct peer *p = fx->peers; p; p = p->next)
		if (!uv_is_closing((uv_handle_t *)&p->tcp))
			uv_close((uv_handle_t *)&p->tcp, peer_closed);
	uv_close((uv_handle_t *)&fx->listener, NULL);
	uv_close((uv_handle_t *)&fx->tick, NULL);
	uv_run(&fx->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&fx->loop), 0);
	free(fx->api.watch.p);
	free(fx->upserted.p);
	free(fx->removed.p);
	free(fx->kept.p);
	free(fx->logs.p);
	free(fx);
	return 0;
}

/* An engine with this body cap and an informer with these options. */
static void start(struct fx *fx, size_t max_body, struct kubeapi_informer_options opt)
{
	struct kubeapi_http_options hopt = {
	    .max_body = max_body, .backoff_base_ms = 1, .backoff_cap_ms = 10};

	opt.backoff_base_ms = opt.backoff_base_ms ? opt.backoff_base_ms : 1;
	opt.backoff_cap_ms = opt.backoff_cap_ms ? opt.backoff_cap_ms : 10;
	assert_int_equal(kubeapi_http_new(&fx->loop, &fx->conn, &hopt, &fx->http), 0);
	assert_int_equal(kubeapi_informer_new(&fx->loop, fx->http, &pods, &opt, &ops, fx, &fx->inf),
	                 0);
	assert_int_equal(kubeapi_informer_start(fx->inf), 0);
}

static struct kubeapi_informer_stats stats(const struct fx *fx)
{
	struct kubeapi_informer_stats st;

	kubeapi_informer_get_stats(fx->inf, &st);
	return st;
}

/* Run until the informer watches with at least `n` watch requests seen. */
static void run_until_watching(struct fx *fx, unsigned n)
{
	uint64_t end = uv_now(&fx->loop) + WAIT_MS;

	while (!(stats(fx).synced && fx->watches >= n)) {
		if (uv_now(&fx->loop) > end)
			fail_msg("not watching after %d ms; log:\n%s", WAIT_MS,
			         fx->logs.p ? fx->logs.p : "");
		uv_run(&fx->loop, UV_RUN_ONCE);
	}
}

/* Run until the upserts reach n (a watch delivers them). */
static void run_until_upserts(struct fx *fx, unsigned n)
{
	uint64_t end = uv_now(&fx->loop) + WAIT_MS;

	while (fx->upserts < n) {
		if (uv_now(&fx->loop) > end)
			fail_msg("%u upserts, want %u; log:\n%s", fx->upserts, n,
			         fx->logs.p ? fx->logs.p : "");
		uv_run(&fx->loop, UV_RUN_ONCE);
	}
}

static bool has_continue(const char *path, unsigned *k)
{
	const char *q = strstr(path, "continue=");

	if (q)
		*k = (unsigned)strtoul(q + 9, NULL, 10);
	return q != NULL;
}

/* No list request is sent twice in a row. */
static void assert_no_repeat(const struct fx *fx)
{
	for (unsigned i = 1; i < fx->npaths; i++)
		if (!strcmp(fx->paths[i], fx->paths[i - 1]) && !strstr(fx->paths[i], "watch=1"))
			fail_msg("request %u repeats %s", i, fx->paths[i]);
}

static bool logged(const struct fx *fx, const char *s)
{
	return fx->logs.p && strstr(fx->logs.p, s);
}

static void add_event(struct text *t, const char *type, unsigned i, size_t size)
{
	add(t, "{\"type\":\"%s\",\"object\":", type);
	add_object(t, i, size);
	add(t, "}\n");
}

/* ---- tests ------------------------------------------------------------------------------ */

/* The first bytes of the stream are a newline: an empty line, skipped. */
static void test_watch_stream_starting_with_an_empty_line(void **state)
{
	struct fx *fx = *state;
	struct kubeapi_informer_stats st;

	add(&fx->api.watch, "\n");
	add_event(&fx->api.watch, "ADDED", 1, 200);
	add(&fx->api.watch, "\n\n");
	add_event(&fx->api.watch, "MODIFIED", 2, 200);
	start(fx, 0, (struct kubeapi_informer_options){0});
	run_until_upserts(fx, 2);
	st = stats(fx);
	assert_int_equal(st.events, 2);
	assert_int_equal(st.skipped, 0);
	assert_int_equal(st.too_large, 0);
	assert_string_equal(fx->upserted.p, "o1 o2 ");
	assert_string_equal(kubeapi_informer_rv(fx->inf), "102");
}

/* 100 small objects, 40 of 4 KB, 20 small, under a 64 KiB body cap: the
 * second page (limit 100) is over the cap and asked again at the same
 * continue token, smaller; pages then hold about page_bytes (16 KiB, a
 * quarter of the cap) and grow back, at most doubling, once the objects
 * are small again. Every object arrives once; no request is repeated. */
static void test_page_over_the_body_cap_is_asked_again_smaller(void **state)
{
	struct fx *fx = *state;
	struct kubeapi_informer_stats st;
	unsigned i, k, prev = 0, small = UINT32_MAX, last_limit = 0;

	fx->api.nobj = 160;
	for (i = 0; i < fx->api.nobj; i++)
		fx->api.size[i] = i >= 100 && i < 140 ? 4000 : 100;
	start(fx, 64 << 10, (struct kubeapi_informer_options){.page_size = 100});
	run_until_watching(fx, 1);
	st = stats(fx);
	assert_int_equal(fx->upserts, 160);
	assert_int_equal(fx->syncs, 1);
	assert_int_equal(st.shrinks, 1);
	assert_int_equal(st.too_large, 0);
	assert_no_repeat(fx);
	assert_string_equal(fx->paths[0], "/api/v1/pods?limit=100");
	assert_string_equal(fx->paths[1], "/api/v1/pods?limit=100&continue=100");
	/* The same token again, and at most half the limit: 16 KiB of 4 KB
	 * objects. */
	assert_true(has_continue(fx->paths[2], &k) && k == 100);
	assert_true(query_uint(fx->paths[2], "limit=", 0) <= 4);
	assert_true(logged(fx, "a page of 100 is over the 65536-byte body cap"));
	for (i = 2; i < fx->npaths && !strstr(fx->paths[i], "watch=1"); i++) {
		unsigned l = query_uint(fx->paths[i], "limit=", 0);

		assert_true(l >= 1 && l <= 100);
		if (prev)
			assert_true(l <= 2 * prev);
		small = l < small ? l : small;
		prev = last_limit = l;
	}
	assert_true(last_limit > small); /* grew back */
}

/* A 100 KB object under a 64 KiB cap: no page holding it can be read, not
 * even at limit 1; its metadata and continue token come first, so the
 * list skips past it, logs it and tells the receiver to keep it. */
static void test_one_object_over_the_body_cap_is_skipped_past(void **state)
{
	struct fx *fx = *state;
	struct kubeapi_informer_stats st;

	fx->api.nobj = 3;
	fx->api.size[0] = fx->api.size[2] = 300;
	fx->api.size[1] = 100000;
	start(fx, 64 << 10, (struct kubeapi_informer_options){0});
	run_until_watching(fx, 1);
	st = stats(fx);
	assert_string_equal(fx->upserted.p, "o0 o2 ");
	assert_string_equal(fx->kept.p, "o1 ");
	assert_int_equal(st.too_large, 1);
	assert_true(st.shrinks >= 1);
	assert_int_equal(fx->syncs, 1);
	assert_string_equal(kubeapi_informer_rv(fx->inf), "99");
	assert_true(logged(fx, "skipping ns/o1 (list page): over 65536 bytes, the body cap"));
	assert_no_repeat(fx);
	/* The page of o1 alone was asked once, and the next from past it. */
	for (unsigned i = 0, k; i + 1 < fx->npaths; i++)
		if (strstr(fx->paths[i], "limit=1&continue=1"))
			assert_true(has_continue(fx->paths[i + 1], &k) && k == 2);
}

/* max_object 8 KiB: a 10 KB object in a page is skipped unparsed. */
static void test_object_over_max_object_in_a_page_is_skipped(void **state)
{
	struct fx *fx = *state;
	struct kubeapi_informer_stats st;

	fx->api.nobj = 3;
	fx->api.size[0] = fx->api.size[2] = 300;
	fx->api.size[1] = 10000;
	start(fx, 0, (struct kubeapi_informer_options){.max_object = 8192});
	run_until_watching(fx, 1);
	st = stats(fx);
	assert_string_equal(fx->upserted.p, "o0 o2 ");
	assert_string_equal(fx->kept.p, "o1 ");
	assert_int_equal(st.too_large, 1);
	assert_int_equal(st.shrinks, 0);
	assert_int_equal(st.pages, 1);
	assert_true(logged(fx, "skipping ns/o1 (list page): 10000 bytes, over the 8192-byte "
	                       "object cap"));
}

/* max_object 8 KiB, so lines are buffered up to 12 KiB: a 10 KB DELETED
 * (a whole line, object over the cap) is removed all the same; a 20 KB
 * MODIFIED (over the line cap, named from its head) is kept as last seen;
 * the events around them arrive, and the watch resumes past the last one. */
static void test_watch_event_over_max_object_is_skipped(void **state)
{
	struct fx *fx = *state;
	struct kubeapi_informer_stats st;

	add_event(&fx->api.watch, "ADDED", 1, 200);
	add_event(&fx->api.watch, "DELETED", 3, 10000);
	add_event(&fx->api.watch, "ADDED", 4, 200);
	add_event(&fx->api.watch, "MODIFIED", 5, 20000);
	start(fx, 0, (struct kubeapi_informer_options){.max_object = 8192});
	run_until_watching(fx, 2);
	st = stats(fx);
	assert_string_equal(fx->upserted.p, "o1 o4 ");
	assert_string_equal(fx->removed.p, "o3 ");
	assert_string_equal(fx->kept.p, "o5 ");
	assert_int_equal(st.too_large, 2);
	assert_int_equal(st.skipped, 0);
	assert_string_equal(kubeapi_informer_rv(fx->inf), "105");
	assert_non_null(strstr(fx->paths[fx->npaths - 1], "resourceVersion=105"));
	assert_true(logged(fx, "skipping ns/o3 (DELETED watch event): 10000 bytes"));
	assert_true(logged(fx, "skipping ns/o5 (MODIFIED watch event): 200"));
}

/* A 410 for a continue token: the list starts again from the beginning. */
static void test_expired_continue_token_lists_again(void **state)
{
	struct fx *fx = *state;
	struct kubeapi_informer_stats st;
	unsigned k;

	fx->api.nobj = 3;
	fx->api.size[0] = fx->api.size[1] = fx->api.size[2] = 200;
	fx->api.gone_at = 1;
	start(fx, 0, (struct kubeapi_informer_options){.page_size = 1});
	run_until_watching(fx, 1);
	st = stats(fx);
	assert_int_equal(st.lists, 2);
	assert_int_equal(fx->syncs, 1);
	assert_true(has_continue(fx->paths[1], &k) && k == 1);
	assert_false(has_continue(fx->paths[2], &k));
	assert_true(logged(fx, "continue token expired (410)"));
	assert_string_equal(fx->upserted.p, "o0 o0 o1 o2 ");
}

static void test_page_limit_formula(void **state)
{
	(void)state;
	/* Small objects: grow, at most doubling, up to page_size. */
	assert_int_equal(kubeapi__page_limit(500, 500, 16 << 20, 500, 2500000), 500);
	assert_int_equal(kubeapi__page_limit(11, 500, 16 << 20, 11, 11000), 22);
	assert_int_equal(kubeapi__page_limit(400, 500, 16 << 20, 400, 400000), 500);
	/* 1.4 MB objects: 16 MiB of them. */
	assert_int_equal(kubeapi__page_limit(500, 500, 16 << 20, 30, 30 * 1400000), 11);
	/* Larger than the target each: one at a time; an empty page: grow. */
	assert_int_equal(kubeapi__page_limit(4, 500, 16 << 20, 4, 4 * (20 << 20)), 1);
	assert_int_equal(kubeapi__page_limit(3, 500, 16 << 20, 0, 100), 6);
	/* Over the cap: at most half; from what fitted; 1 when none did. */
	assert_int_equal(kubeapi__page_limit_over(500, 16 << 20, 0, 0), 250);
	assert_int_equal(kubeapi__page_limit_over(500, 16 << 20, 47, 64 << 20), 11);
	assert_int_equal(kubeapi__page_limit_over(500, 16 << 20, 0, 64 << 20), 1);
	assert_int_equal(kubeapi__page_limit_over(2, 16 << 20, 1, 100), 1);
	assert_int_equal(kubeapi__page_limit_over(1, 16 << 20, 0, 0), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_watch_stream_starting_with_an_empty_line, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_page_over_the_body_cap_is_asked_again_smaller,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_one_object_over_the_body_cap_is_skipped_past,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_object_over_max_object_in_a_page_is_skipped, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_watch_event_over_max_object_is_skipped, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_expired_continue_token_lists_again, setup,
	                                    teardown),
	    cmocka_unit_test(test_page_limit_formula),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
