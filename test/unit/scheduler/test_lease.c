/*
 * scheduler/lease: leader election on a Lease.
 *
 * First the pure pieces (sched_lease_decide, _observe, _parse) as tables
 * and a virtual-clock run; then the I/O machine itself, two or three
 * instances on one loop, each through its own HTTP engine and its own
 * "front" of a fake API server that keeps one Lease in memory with real
 * resourceVersion semantics (409 on a stale PUT or a second create). A
 * front can hang (accept requests and never answer): a network partition
 * of one instance. Times are real but short (a lease of 800 ms), checked
 * with slack for a loaded machine; the orderings (the old leader stops
 * before the new one starts) are exact, since both run on one loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <uv.h>

#include "kubeapi/http.h"
#include "scheduler/lease.h"

/* ---- the pure pieces ---------------------------------------------------- */

static const char lease_json[] =
    "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\","
    "\"metadata\":{\"name\":\"muster\",\"namespace\":\"ns\",\"resourceVersion\":\"4711\"},"
    "\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\":%d,"
    "\"acquireTime\":\"2026-01-01T00:00:00.000000Z\",\"renewTime\":\"%s\","
    "\"leaseTransitions\":%d}}";

static struct sched_lease_record parsed(const char *holder, int secs, const char *renew, int tr,
                                        const char *identity)
{
	struct sched_lease_record r;
	char body[1024];

	snprintf(body, sizeof(body), lease_json, holder, secs, renew, tr);
	assert_int_equal(sched_lease_parse(body, strlen(body), identity, &r), 0);
	return r;
}

static void test_parse_reads_the_spec(void **state)
{
	struct sched_lease_record r = parsed("a_1", 15, "2026-01-01T00:00:01.000000Z", 3, "b_2");

	(void)state;
	assert_string_equal(r.version, "4711");
	assert_string_equal(r.holder, "a_1");
	assert_false(r.ours);
	assert_int_equal(r.lease_ms, 15000);
	assert_int_equal(r.transitions, 3);
	assert_true(r.hash != 0);
	assert_true(parsed("a_1", 15, "2026-01-01T00:00:01.000000Z", 3, "a_1").ours);
	assert_false(parsed("", 1, "2026-01-01T00:00:01.000000Z", 3, "").ours); /* released */
}

static void test_parse_hash_changes_with_every_write(void **state)
{
	uint64_t h1 = parsed("a", 15, "2026-01-01T00:00:01.000000Z", 0, "b").hash;
	struct sched_lease_record r1, r2;

	(void)state;
	assert_true(h1 == parsed("a", 15, "2026-01-01T00:00:01.000000Z", 0, "b").hash);
	assert_true(h1 != parsed("a", 15, "2026-01-01T00:00:02.000000Z", 0, "b").hash);
	assert_true(h1 != parsed("c", 15, "2026-01-01T00:00:01.000000Z", 0, "b").hash);
	assert_true(h1 != parsed("a", 16, "2026-01-01T00:00:01.000000Z", 0, "b").hash);
	assert_true(h1 != parsed("a", 15, "2026-01-01T00:00:01.000000Z", 1, "b").hash);
	/* Any other write too (a label, an annotation): a new resourceVersion. */
	assert_int_equal(
	    sched_lease_parse("{\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":\"1\"}}", 51,
	                      "a", &r1),
	    0);
	assert_int_equal(
	    sched_lease_parse("{\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":\"2\"}}", 51,
	                      "a", &r2),
	    0);
	assert_true(r1.hash != r2.hash);
}

static void test_parse_refuses_what_is_not_a_lease(void **state)
{
	static const char *bad[] = {
	    "",
	    "{",
	    "[]",
	    "{\"kind\":\"Status\",\"metadata\":{\"resourceVersion\":\"1\"}}",
	    "{\"kind\":\"Lease\",\"metadata\":{}}",
	    "{\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":7}}",
	};
	struct sched_lease_record r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(sched_lease_parse(bad[i], strlen(bad[i]), "a", &r), -EPROTO);
	assert_int_equal(sched_lease_parse(NULL, 0, "a", &r), -EPROTO);
	/* No spec: a lease nobody holds, with no duration of its own. */
	assert_int_equal(
	    sched_lease_parse("{\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":\"9\"}}", 51,
	                      "a", &r),
	    0);
	assert_string_equal(r.holder, "");
	assert_int_equal(r.lease_ms, 0);
}

static void test_parse_compares_a_long_holder_exactly(void **state)
{
	char holder[400], other[400];
	struct sched_lease_record r;

	(void)state;
	memset(holder, 'h', sizeof(holder) - 1);
	holder[sizeof(holder) - 1] = 0;
	memcpy(other, holder, sizeof(other));
	other[350] = 'x'; /* differs past what the record keeps */
	r = parsed(holder, 15, "t", 0, other);
	assert_false(r.ours);
	assert_int_equal(strlen(r.holder), sizeof(r.holder) - 1);
	assert_true(parsed(holder, 15, "t", 0, holder).ours);
}

static void test_observe_restarts_only_on_a_change(void **state)
{
	struct sched_lease_seen s = {0};

	(void)state;
	assert_int_equal(sched_lease_observe(&s, 7, 100), 100);
	assert_int_equal(sched_lease_observe(&s, 7, 900), 100);
	assert_int_equal(sched_lease_observe(&s, 8, 1000), 1000);
	assert_int_equal(sched_lease_observe(&s, 0, 1100), 1100); /* gone */
	assert_int_equal(sched_lease_observe(&s, 0, 5000), 1100);
}

/* One row: a view and the decision it must give. */
struct decide_case {
	const char *what;
	bool leader, absent, ever_held, ours, released;
	uint64_t now, renewed, observed;
	unsigned lease_ms; /* the record's */
	enum sched_lease_action want;
};

static void test_decide_table(void **state)
{
	/* Ours: renew 10000, duration 15000. */
	static const struct decide_case cases[] = {
	    {"first start, no Lease: create at once", .absent = true, .now = 5,
	     .want = SCHED_LEASE_CREATE},
	    {"a Lease seen before is gone: wait out a duration", .absent = true, .ever_held = true,
	     .now = 20000, .observed = 6000, .want = SCHED_LEASE_WAIT},
	    {"... and create after it", .absent = true, .ever_held = true, .now = 21000,
	     .observed = 6000, .want = SCHED_LEASE_CREATE},
	    {"released: take at once", .released = true, .now = 1, .observed = 1, .lease_ms = 1000,
	     .want = SCHED_LEASE_TAKE},
	    {"another holder, seen unchanged 14.999 s", .now = 14999, .lease_ms = 15000,
	     .want = SCHED_LEASE_WAIT},
	    {"another holder, seen unchanged 15 s", .now = 15000, .lease_ms = 15000,
	     .want = SCHED_LEASE_TAKE},
	    {"the record's longer duration is honoured", .now = 20000, .lease_ms = 30000,
	     .want = SCHED_LEASE_WAIT},
	    {"the record's shorter one too (its holder promised no more)", .now = 5000,
	     .lease_ms = 5000, .want = SCHED_LEASE_TAKE},
	    {"a record without a duration: ours", .now = 14999, .want = SCHED_LEASE_WAIT},
	    {"a record without a duration: ours, then take", .now = 15000,
	     .want = SCHED_LEASE_TAKE},
	    {"a clock that went backwards never takes", .now = 10, .observed = 20, .lease_ms = 5,
	     .want = SCHED_LEASE_WAIT},
	    {"ours while not leading (an answer lost): take at once", .ours = true, .now = 1,
	     .lease_ms = 15000, .want = SCHED_LEASE_TAKE},
	    {"leader, ours, within the deadline: renew", .leader = true, .ours = true, .now = 9999,
	     .lease_ms = 15000, .want = SCHED_LEASE_RENEW},
	    {"leader at the deadline: lost", .leader = true, .ours = true, .now = 10000,
	     .lease_ms = 15000, .want = SCHED_LEASE_LOST},
	    {"leader, deadline passed, no Lease: lost", .leader = true, .absent = true,
	     .now = 10001, .want = SCHED_LEASE_LOST},
	    {"leader, another holder: lost at once", .leader = true, .now = 1, .lease_ms = 15000,
	     .want = SCHED_LEASE_LOST},
	    {"leader, released by someone else: lost", .leader = true, .released = true, .now = 1,
	     .want = SCHED_LEASE_LOST},
	    {"leader, Lease deleted: lost, never recreated", .leader = true, .absent = true,
	     .ever_held = true, .now = 1, .want = SCHED_LEASE_LOST},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct decide_case *c = &cases[i];
		struct sched_lease_record rec = {.ours = c->ours, .lease_ms = c->lease_ms};
		struct sched_lease_view v = {.now_ms = c->now,
		                             .leader = c->leader,
		                             .renewed_ms = c->renewed,
		                             .renew_ms = 10000,
		                             .duration_ms = 15000,
		                             .absent = c->absent,
		                             .ever_held = c->ever_held,
		                             .rec = &rec,
		                             .observed_ms = c->observed};
		enum sched_lease_action got;

		snprintf(rec.holder, sizeof(rec.holder), "%s",
		         c->released ? "" : (c->ours ? "me" : "other"));
		got = sched_lease_decide(&v);
		if (got != c->want)
			fail_msg("%s: decided %d, want %d", c->what, (int)got, (int)c->want);
	}
}

/* Virtual time, in steps of 100 ms: leader A renews every retry period
 * until its writes stop landing at `cut`; candidate B reads every retry
 * period, 40 ms out of phase. At no step do both lead; B leads within a
 * duration and two retry periods of the cut; while A renews, B never
 * takes, however long it watches. */
static void test_virtual_failover_never_has_two_leaders(void **state)
{
	const unsigned retry = 2000, renew = 10000, duration = 15000;
	const uint64_t cut = 60000;
	struct sched_lease_record rec = {.ours = false, .lease_ms = duration, .hash = 1};
	struct sched_lease_seen seen = {0};
	uint64_t a_renewed = 0, b_took = 0, a_lost = 0;
	bool a = true, b = false;

	(void)state;
	snprintf(rec.holder, sizeof(rec.holder), "a");
	for (uint64_t t = 0; t <= 120000 && !b; t += 20) {
		if (a && t % retry == 0 && t < cut) {
			a_renewed = t; /* sent and landed */
			rec.hash++;
		}
		if (a) {
			struct sched_lease_record mine = rec;
			struct sched_lease_view v = {.now_ms = t,
			                             .leader = true,
			                             .renewed_ms = a_renewed,
			                             .renew_ms = renew,
			                             .duration_ms = duration,
			                             .rec = &mine};

			mine.ours = true;
			if (sched_lease_decide(&v) == SCHED_LEASE_LOST) {
				a = false;
				a_lost = t;
			}
		}
		if (t % retry == 40) {
			struct sched_lease_view v = {
			    .now_ms = t, .renew_ms = renew, .duration_ms = duration, .rec = &rec};

			v.observed_ms = sched_lease_observe(&seen, rec.hash, t);
			if (sched_lease_decide(&v) == SCHED_LEASE_TAKE) {
				b = true;
				b_took = t;
			}
		}
		assert_false(a && b);
	}
	assert_true(b);
	assert_true(a_lost > 0 && a_lost < b_took);
	assert_true(b_took >= cut);
	assert_true(b_took <= cut + duration + 2 * retry);
}

/* ---- a fake API server ---------------------------------------------------- */

#define LEASES      "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
#define LEASE       LEASES "/muster"
#define MAX_CONNS   64
#define MAX_REQUEST 16384

struct fake;

struct front {
	struct fake *f;
	uv_tcp_t server;
	int port;
	bool hang; /* take requests, never answer */
	unsigned requests;
};

struct fconn {
	struct front *fr;
	uv_tcp_t tcp;
	char buf[MAX_REQUEST];
	size_t len;
};

struct fake {
	uv_loop_t *loop;
	struct front fronts[3];
	struct fconn *conns[MAX_CONNS];
	char *lease; /* the stored object, or NULL */
	unsigned rv, writes, conflicts;
};

static void conn_closed(uv_handle_t *h)
{
	free(h->data);
}

static void buf_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct fconn *c = h->data;

	(void)hint;
	*b = uv_buf_init(c->buf + c->len, (unsigned)(sizeof(c->buf) - c->len));
}

static void written(uv_write_t *w, int status)
{
	(void)status;
	free(w->data);
	free(w);
}

static void respond(struct fconn *c, int status, const char *body)
{
	uv_write_t *w = malloc(sizeof(*w));
	size_t n = strlen(body) + 160;
	char *text = malloc(n);
	uv_buf_t b;

	assert_non_null(w);
	assert_non_null(text);
	snprintf(text, n,
	         "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	         status, strlen(body), body);
	b = uv_buf_init(text, (unsigned)strlen(text));
	w->data = text;
	if (uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, written) < 0)
		written(w, 0);
}

/* Store body as the Lease at the next resourceVersion; the stored text. */
static const char *store(struct fake *f, const char *body)
{
	cJSON *o = cJSON_Parse(body), *md = cJSON_GetObjectItem(o, "metadata");
	char rv[16];

	assert_non_null(md);
	snprintf(rv, sizeof(rv), "%u", ++f->rv);
	cJSON_DeleteItemFromObject(md, "resourceVersion");
	cJSON_AddStringToObject(md, "resourceVersion", rv);
	free(f->lease);
	f->lease = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	f->writes++;
	return f->lease;
}

/* metadata.resourceVersion of json into rv ("" when none). */
static void rv_of(const char *json, char rv[16])
{
	cJSON *o = cJSON_Parse(json);
	const char *v = cJSON_GetStringValue(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "resourceVersion"));

	snprintf(rv, 16, "%s", v ? v : "");
	cJSON_Delete(o);
}

static const char not_found[] = "{\"kind\":\"Status\",\"code\":404}";
static const char conflict[] = "{\"kind\":\"Status\",\"code\":409}";

static void serve(struct fconn *c, const char *method, const char *path, const char *body)
{
	struct fake *f = c->fr->f;
	char want[16], got[16];

	c->fr->requests++;
	if (c->fr->hang)
		return;
	if (strcmp(method, "GET") == 0 && strcmp(path, LEASE) == 0) {
		respond(c, f->lease ? 200 : 404, f->lease ? f->lease : not_found);
	} else if (strcmp(method, "POST") == 0 && strcmp(path, LEASES) == 0) {
		if (f->lease) {
			f->conflicts++;
			respond(c, 409, conflict);
		} else {
			respond(c, 201, store(f, body));
		}
	} else if (strcmp(method, "PUT") == 0 && strcmp(path, LEASE) == 0) {
		if (!f->lease) {
			respond(c, 404, not_found);
			return;
		}
		rv_of(f->lease, want);
		rv_of(body, got);
		if (strcmp(got, want) != 0) {
			f->conflicts++;
			respond(c, 409, conflict);
		} else {
			respond(c, 200, store(f, body));
		}
	} else {
		fail_msg("fake API server: unexpected %s %s", method, path);
	}
}

/* Serve every whole request in the buffer (HTTP/1.1, Content-Length). */
static void serve_buffered(struct fconn *c)
{
	char *end, *cl, method[16], path[512];
	size_t head, body_len;

	while ((end = memmem(c->buf, c->len, "\r\n\r\n", 4)) != NULL) {
		head = (size_t)(end - c->buf) + 4;
		*end = 0;
		cl = strcasestr(c->buf, "\r\ncontent-length:");
		body_len = cl ? strtoul(cl + 17, NULL, 10) : 0;
		*end = '\r';
		if (c->len < head + body_len)
			return;
		assert_int_equal(sscanf(c->buf, "%15s %511s", method, path), 2);
		{
			char *body = strndup(c->buf + head, body_len);

			serve(c, method, path, body);
			free(body);
		}
		memmove(c->buf, c->buf + head + body_len, c->len - head - body_len);
		c->len -= head + body_len;
	}
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct fconn *c = s->data;

	(void)b;
	if (n < 0) {
		for (size_t i = 0; i < MAX_CONNS; i++)
			if (c->fr->f->conns[i] == c)
				c->fr->f->conns[i] = NULL;
		uv_close((uv_handle_t *)&c->tcp, conn_closed);
		return;
	}
	c->len += (size_t)n;
	assert_true(c->len < sizeof(c->buf));
	serve_buffered(c);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct front *fr = server->data;
	struct fconn *c = calloc(1, sizeof(*c));
	size_t i;

	assert_int_equal(status, 0);
	assert_non_null(c);
	c->fr = fr;
	uv_tcp_init(fr->f->loop, &c->tcp);
	c->tcp.data = c;
	assert_int_equal(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
	for (i = 0; i < MAX_CONNS && fr->f->conns[i]; i++)
		;
	assert_true(i < MAX_CONNS);
	fr->f->conns[i] = c;
	uv_read_start((uv_stream_t *)&c->tcp, buf_alloc, on_read);
}

static void fake_start(struct fake *f, uv_loop_t *loop)
{
	memset(f, 0, sizeof(*f));
	f->loop = loop;
	for (size_t i = 0; i < 3; i++) {
		struct front *fr = &f->fronts[i];
		struct sockaddr_in a;
		struct sockaddr_storage got;
		int len = sizeof(got);

		fr->f = f;
		uv_tcp_init(loop, &fr->server);
		fr->server.data = fr;
		uv_ip4_addr("127.0.0.1", 0, &a);
		assert_int_equal(uv_tcp_bind(&fr->server, (const struct sockaddr *)&a, 0), 0);
		assert_int_equal(uv_listen((uv_stream_t *)&fr->server, 16, on_connection), 0);
		uv_tcp_getsockname(&fr->server, (struct sockaddr *)&got, &len);
		fr->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
	}
}

static void fake_stop(struct fake *f)
{
	for (size_t i = 0; i < 3; i++)
		uv_close((uv_handle_t *)&f->fronts[i].server, NULL);
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (f->conns[i])
			uv_close((uv_handle_t *)&f->conns[i]->tcp, conn_closed);
	free(f->lease);
}

/* A field of the stored Lease's spec. */
static cJSON *stored(struct fake *f, cJSON **doc, const char *key)
{
	*doc = f->lease ? cJSON_Parse(f->lease) : NULL;
	return cJSON_GetObjectItem(cJSON_GetObjectItem(*doc, "spec"), key);
}

static char *stored_holder(struct fake *f)
{
	cJSON *doc, *v = stored(f, &doc, "holderIdentity");
	char *s = strdup(cJSON_GetStringValue(v) ? cJSON_GetStringValue(v) : "(none)");

	cJSON_Delete(doc);
	return s;
}

static int stored_number(struct fake *f, const char *key)
{
	cJSON *doc, *v = stored(f, &doc, key);
	int d = cJSON_IsNumber(v) ? v->valueint : -1;

	cJSON_Delete(doc);
	return d;
}

/* ---- instances ------------------------------------------------------------ */

struct inst {
	const char *id;
	uv_loop_t *loop;
	char server[64];
	struct kubeapi_conn conn;
	struct kubeapi_http *http;
	struct sched_lease *lease;
	bool leader, closed, http_closed;
	int changes;
	uint64_t became_ms, lost_ms;
};

static void on_changed(void *data, bool leader)
{
	struct inst *in = data;

	assert_true(leader != in->leader); /* a change, every time */
	in->leader = leader;
	in->changes++;
	if (leader)
		in->became_ms = uv_now(in->loop);
	else
		in->lost_ms = uv_now(in->loop);
}

static void on_log(void *data, const char *msg)
{
	if (getenv("MUSTER_LEASE_TRACE"))
		fprintf(stderr, "%s: %s\n", ((struct inst *)data)->id, msg);
}

static void inst_start(struct inst *in, uv_loop_t *loop, struct front *fr, const char *id,
                       unsigned duration, unsigned renew, unsigned retry)
{
	struct kubeapi_http_options ho = {
	    .backoff_base_ms = 1, .backoff_cap_ms = 5, .timeout_ms = 60000};
	struct sched_lease_options lo = {.ns = "ns",
	                                 .name = "muster",
	                                 .identity = id,
	                                 .duration_ms = duration,
	                                 .renew_ms = renew,
	                                 .retry_ms = retry,
	                                 .changed = on_changed,
	                                 .log = on_log,
	                                 .data = in};

	memset(in, 0, sizeof(*in));
	in->id = id;
	in->loop = loop;
	snprintf(in->server, sizeof(in->server), "http://127.0.0.1:%d", fr->port);
	in->conn.server = in->server;
	assert_int_equal(kubeapi_http_new(loop, &in->conn, &ho, &in->http), 0);
	assert_int_equal(sched_lease_start(loop, in->http, &lo, &in->lease), 0);
}

static void http_closed(void *data)
{
	((struct inst *)data)->http_closed = true;
}

/* The lease has closed: now its engine, as run.c does it. */
static void lease_closed(void *data)
{
	struct inst *in = data;

	in->closed = true;
	kubeapi_http_close(&in->http, http_closed, in);
}

static void inst_close(struct inst *in)
{
	sched_lease_close(&in->lease, lease_closed, in);
	assert_null(in->lease);
}

static void poke(uv_timer_t *t)
{
	(void)t;
}

/* Run the loop until pred(ctx) holds or timeout_ms pass; whether it holds. */
static bool run_until(uv_loop_t *loop, bool (*pred)(void *), void *ctx, uint64_t timeout_ms)
{
	uv_timer_t t;
	uint64_t end;
	bool ok;

	uv_update_time(loop);
	end = uv_now(loop) + timeout_ms;
	uv_timer_init(loop, &t);
	uv_timer_start(&t, poke, 5, 5);
	while (!(ok = pred(ctx)) && uv_now(loop) < end)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return ok;
}

static bool never(void *ctx)
{
	(void)ctx;
	return false;
}

static bool is_leader(void *ctx)
{
	return ((struct inst *)ctx)->leader;
}

static bool has_lost(void *ctx)
{
	return ((struct inst *)ctx)->lost_ms != 0;
}

static bool sees_a(void *ctx)
{
	return strcmp(sched_lease_holder(((struct inst *)ctx)->lease), "a") == 0;
}

static bool all_closed(void *ctx)
{
	struct inst **v = ctx;

	for (; *v; v++)
		if (!(*v)->closed || !(*v)->http_closed)
			return false;
	return true;
}

/* Close the instances, then the fake; every handle must be gone. */
static void shut(uv_loop_t *loop, struct fake *f, struct inst **v)
{
	for (struct inst **p = v; *p; p++)
		if ((*p)->lease)
			inst_close(*p);
	assert_true(run_until(loop, all_closed, v, 5000));
	fake_stop(f);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(loop), 0);
}

static uint64_t now(uv_loop_t *loop)
{
	uv_update_time(loop);
	return uv_now(loop);
}

enum { DURATION = 800, RENEW = 500, RETRY = 100, SLACK = 400 };

/* A leads; B stands by through many lease durations while A renews; A is
 * cut off (its requests hang): A stops by its renew deadline, B takes over
 * within a duration and two retry periods, never before A stopped. */
static void test_failover_after_a_partition(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct inst a, b, *all[] = {&a, &b, NULL};
	unsigned writes;
	uint64_t cut;
	char *holder;

	(void)state;
	uv_loop_init(&loop);
	fake_start(&f, &loop);
	inst_start(&a, &loop, &f.fronts[0], "a", DURATION, RENEW, RETRY);
	assert_true(run_until(&loop, is_leader, &a, 2000));
	inst_start(&b, &loop, &f.fronts[1], "b", DURATION, RENEW, RETRY);
	assert_true(run_until(&loop, sees_a, &b, 2000));
	writes = f.writes;
	run_until(&loop, never, NULL, 3 * DURATION);
	assert_true(a.leader && !b.leader);
	assert_true(f.writes >= writes + 3 * DURATION / RETRY / 2); /* A renewed */
	assert_string_equal(sched_lease_holder(b.lease), "a");

	f.fronts[0].hang = true;
	cut = now(&loop);
	assert_true(run_until(&loop, is_leader, &b, 3000));
	assert_int_equal(a.changes, 2);
	assert_int_equal(b.changes, 1);
	assert_true(a.lost_ms > 0 && a.lost_ms <= b.became_ms);
	assert_true(a.lost_ms <= cut + RENEW + 50);
	assert_true(b.became_ms >= cut + DURATION - RETRY);
	assert_true(b.became_ms <= cut + DURATION + 2 * RETRY + SLACK);
	assert_false(sched_lease_leader(a.lease));
	assert_true(sched_lease_leader(b.lease));
	assert_string_equal(sched_lease_holder(b.lease), "b");
	holder = stored_holder(&f);
	assert_string_equal(holder, "b");
	free(holder);
	assert_int_equal(stored_number(&f, "leaseTransitions"), 1);

	/* B releases as it closes; A, cut off, never learns. */
	shut(&loop, &f, all);
}

static void shut_keep_fake(uv_loop_t *loop, struct inst **v)
{
	for (struct inst **p = v; *p; p++)
		if ((*p)->lease)
			inst_close(*p);
	assert_true(run_until(loop, all_closed, v, 5000));
}

/* A leader that closes releases the lease (holder "", 1 s): the standby
 * takes it at its next read, not a lease duration later. */
static void test_close_releases_and_the_standby_takes_over_at_once(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct inst a, b, *just_a[] = {&a, NULL}, *just_b[] = {&b, NULL};
	uint64_t t0;
	char *holder;

	(void)state;
	uv_loop_init(&loop);
	fake_start(&f, &loop);
	inst_start(&a, &loop, &f.fronts[0], "a", 5000, 3000, RETRY);
	assert_true(run_until(&loop, is_leader, &a, 2000));
	inst_start(&b, &loop, &f.fronts[1], "b", 5000, 3000, RETRY);
	assert_true(run_until(&loop, sees_a, &b, 2000));
	t0 = now(&loop);
	shut_keep_fake(&loop, just_a);
	assert_int_equal(a.changes, 1); /* closing is not a change */
	assert_true(run_until(&loop, is_leader, &b, 2000));
	assert_true(b.became_ms - t0 < 3 * RETRY + SLACK);
	assert_int_equal(stored_number(&f, "leaseTransitions"), 1);

	shut_keep_fake(&loop, just_b);
	holder = stored_holder(&f);
	assert_string_equal(holder, "");
	free(holder);
	assert_int_equal(stored_number(&f, "leaseDurationSeconds"), 1);
	fake_stop(&f);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* Three start together on a missing Lease: all try to create it, one
 * wins, and it stays the only leader. */
static void test_three_candidates_one_leader(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct inst a, b, c, *all[] = {&a, &b, &c, NULL};
	int leaders;

	(void)state;
	uv_loop_init(&loop);
	fake_start(&f, &loop);
	inst_start(&a, &loop, &f.fronts[0], "a", DURATION, RENEW, RETRY);
	inst_start(&b, &loop, &f.fronts[1], "b", DURATION, RENEW, RETRY);
	inst_start(&c, &loop, &f.fronts[2], "c", DURATION, RENEW, RETRY);
	run_until(&loop, never, NULL, 3 * DURATION);
	leaders = a.leader + b.leader + c.leader;
	assert_int_equal(leaders, 1);
	assert_int_equal(a.changes + b.changes + c.changes, 1);
	assert_true(f.conflicts >= 1);
	shut(&loop, &f, all);
}

/* The Lease deleted under a leader: it stops at its next renew (404) and
 * read, and closes (as run.c makes it); a standby that had seen the Lease
 * waits a duration before creating it again. */
static void test_deleted_lease_stops_the_leader(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct inst a, b, *all[] = {&a, &b, NULL}, *just_a[] = {&a, NULL};
	uint64_t t0;

	(void)state;
	uv_loop_init(&loop);
	fake_start(&f, &loop);
	inst_start(&a, &loop, &f.fronts[0], "a", DURATION, RENEW, RETRY);
	assert_true(run_until(&loop, is_leader, &a, 2000));
	inst_start(&b, &loop, &f.fronts[1], "b", DURATION, RENEW, RETRY);
	assert_true(run_until(&loop, sees_a, &b, 2000));
	free(f.lease);
	f.lease = NULL;
	t0 = now(&loop);
	assert_true(run_until(&loop, has_lost, &a, 2000));
	assert_true(a.lost_ms - t0 <= 3 * RETRY + SLACK);
	shut_keep_fake(&loop, just_a);
	assert_true(run_until(&loop, is_leader, &b, 3000));
	assert_true(b.became_ms >= t0 + DURATION - RETRY);
	assert_false(a.leader);
	shut(&loop, &f, all);
}

/* Closed while its requests hang: closed_cb comes within the grace, and
 * the struct is freed once the engine cancels them (ASan checks). */
static void test_close_while_requests_hang(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct inst a, *all[] = {&a, NULL};

	(void)state;
	uv_loop_init(&loop);
	fake_start(&f, &loop);
	inst_start(&a, &loop, &f.fronts[0], "a", DURATION, RENEW, RETRY);
	assert_true(run_until(&loop, is_leader, &a, 2000));
	f.fronts[0].hang = true;
	run_until(&loop, never, NULL, 3 * RETRY);
	assert_true(a.leader); /* still within its deadline */
	shut(&loop, &f, all);
	assert_int_equal(a.changes, 1);
}

static void test_start_refuses_bad_options(void **state)
{
	uv_loop_t loop;
	struct kubeapi_conn conn = {.server = "http://127.0.0.1:1"};
	struct kubeapi_http *http;
	struct sched_lease *l = NULL;
	struct sched_lease_options ok = {.ns = "ns",
	                                 .name = "muster",
	                                 .identity = "a",
	                                 .duration_ms = 15000,
	                                 .renew_ms = 10000,
	                                 .retry_ms = 2000,
	                                 .changed = on_changed},
	                           o;
	char long_id[300];

	(void)state;
	memset(long_id, 'i', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = 0;
	uv_loop_init(&loop);
	assert_int_equal(kubeapi_http_new(&loop, &conn, NULL, &http), 0);
#define REFUSED(field, value)                                                                      \
	do {                                                                                       \
		o = ok;                                                                            \
		o.field = value;                                                                   \
		assert_int_equal(sched_lease_start(&loop, http, &o, &l), -EINVAL);                 \
		assert_null(l);                                                                    \
	} while (0)
	REFUSED(retry_ms, 10000); /* not < renew */
	REFUSED(renew_ms, 15000); /* not < duration */
	REFUSED(retry_ms, 0);
	REFUSED(identity, "");
	REFUSED(identity, NULL);
	REFUSED(identity, long_id);
	REFUSED(ns, NULL);
	REFUSED(ns, "Upper");
	REFUSED(name, "a/b");
	REFUSED(changed, NULL);
#undef REFUSED
	assert_int_equal(sched_lease_start(&loop, http, NULL, &l), -EINVAL);
	sched_lease_close(&l, NULL, NULL); /* NULL: a no-op */
	kubeapi_http_close(&http, NULL, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_reads_the_spec),
	    cmocka_unit_test(test_parse_hash_changes_with_every_write),
	    cmocka_unit_test(test_parse_refuses_what_is_not_a_lease),
	    cmocka_unit_test(test_parse_compares_a_long_holder_exactly),
	    cmocka_unit_test(test_observe_restarts_only_on_a_change),
	    cmocka_unit_test(test_decide_table),
	    cmocka_unit_test(test_virtual_failover_never_has_two_leaders),
	    cmocka_unit_test(test_start_refuses_bad_options),
	    cmocka_unit_test(test_failover_after_a_partition),
	    cmocka_unit_test(test_close_releases_and_the_standby_takes_over_at_once),
	    cmocka_unit_test(test_three_candidates_one_leader),
	    cmocka_unit_test(test_deleted_lease_stops_the_leader),
	    cmocka_unit_test(test_close_while_requests_hang),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
