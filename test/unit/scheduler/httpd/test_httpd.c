/*
 * httpd: the server runs on a real libuv loop in a second thread; this
 * thread is its client, with plain blocking sockets (and a blocking
 * OpenSSL client for TLS), and reads exactly what went over the wire.
 * Each test stops the server and closes the loop; ASan checks that
 * nothing leaks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <uv.h>

#include "scheduler/httpd/httpd.h"

#define BIG_LEN (16u << 20) /* more than the kernel buffers of both ends */

struct srv {
	uv_loop_t loop;
	uv_async_t stop;
	pthread_t thread;
	struct httpd *h;
	int port;
	int running;
	int closed; /* closed_cb calls */
	int calls;  /* handler calls (read after the loop thread ended) */
	char logs[8192];
	char dir[64]; /* for certificates and tokens */
	char cert[128], key[128], key2[128], token[128];
};

/* ---- the server side (runs on the loop thread) -------------------------- */

static void handler(void *data, const struct httpd_request *req, struct httpd_response *resp)
{
	struct srv *s = data;
	char *body;
	int n;

	s->calls++;
	if (strcmp(req->path, "/big") == 0) {
		resp->body = malloc(BIG_LEN);
		memset(resp->body, 'x', BIG_LEN);
		resp->len = BIG_LEN;
		return;
	}
	if (strcmp(req->path, "/json") == 0) {
		resp->content_type = "application/json";
		resp->body = strdup("{}");
		resp->len = 2;
		return;
	}
	n = asprintf(&body, "%s %s q=%s a=%s\n", req->method, req->path, req->query, req->accept);
	assert_true(n > 0);
	resp->body = body;
	resp->len = (size_t)n;
}

static void on_log(void *data, const char *msg)
{
	struct srv *s = data;
	size_t used = strlen(s->logs);

	snprintf(s->logs + used, sizeof(s->logs) - used, "%s\n", msg);
}

static void on_closed(void *data)
{
	((struct srv *)data)->closed++;
}

static void on_stop(uv_async_t *a)
{
	struct srv *s = a->data;

	httpd_close(&s->h, on_closed, s);
	uv_close((uv_handle_t *)a, NULL);
}

static void *loop_main(void *arg)
{
	struct srv *s = arg;

	uv_run(&s->loop, UV_RUN_DEFAULT);
	return NULL;
}

static struct httpd_options options(struct srv *s, const char *addr)
{
	struct httpd_options o = {
	    .addr = addr, .handler = handler, .data = s, .log = on_log, .log_data = s};

	return o;
}

/* Start the server on the loop; the loop does not run yet. */
static void srv_listen(struct srv *s, const struct httpd_options *o)
{
	char err[256] = "";

	assert_int_equal(httpd_start(&s->loop, o, &s->h, err, sizeof(err)), 0);
	s->port = httpd_port(s->h);
	assert_true(s->port > 0);
	assert_int_equal(uv_async_init(&s->loop, &s->stop, on_stop), 0);
	s->stop.data = s;
}

/* Run the loop in its thread. */
static void srv_run(struct srv *s)
{
	assert_int_equal(pthread_create(&s->thread, NULL, loop_main, s), 0);
	s->running = 1;
}

static void srv_start(struct srv *s, const struct httpd_options *o)
{
	srv_listen(s, o);
	srv_run(s);
}

/* Close the server from its loop and wait for the loop to end. */
static void srv_stop(struct srv *s)
{
	if (!s->running)
		return;
	s->running = 0;
	uv_async_send(&s->stop);
	pthread_join(s->thread, NULL);
	assert_int_equal(s->closed, 1);
	assert_null(s->h);
}

/* For starts that must fail: run what they left to close. */
static int start_fails(struct srv *s, const struct httpd_options *o, char *err, size_t errlen)
{
	struct httpd *h = NULL;
	int rc = httpd_start(&s->loop, o, &h, err, errlen);

	assert_null(h);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	return rc;
}

static int setup(void **state)
{
	struct srv *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	assert_int_equal(uv_loop_init(&s->loop), 0);
	snprintf(s->dir, sizeof(s->dir), "/tmp/muster-httpd-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->cert, sizeof(s->cert), "%s/cert.pem", s->dir);
	snprintf(s->key, sizeof(s->key), "%s/key.pem", s->dir);
	snprintf(s->key2, sizeof(s->key2), "%s/other-key.pem", s->dir);
	snprintf(s->token, sizeof(s->token), "%s/token", s->dir);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	struct srv *s = *state;

	srv_stop(s);
	assert_int_equal(uv_loop_close(&s->loop), 0);
	unlink(s->cert);
	unlink(s->key);
	unlink(s->key2);
	unlink(s->token);
	rmdir(s->dir);
	free(s);
	return 0;
}

/* ---- the client side (this thread) -------------------------------------- */

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* From 127.0.0.`from` (1: the usual loopback address): other source
 * addresses stand for other clients (a kubelet, another pod). */
static int cli_connect_from(int port, int rcvbuf, int from)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct sockaddr_in src = {.sin_family = AF_INET};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	if (from != 1) {
		src.sin_addr.s_addr = htonl(0x7f000000u | (unsigned)from);
		assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static int cli_connect_buf(int port, int rcvbuf)
{
	return cli_connect_from(port, rcvbuf, 1);
}

static int cli_connect(int port)
{
	return cli_connect_buf(port, 0);
}

static void cli_send(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

		assert_true(n > 0);
		data += n;
		len -= (size_t)n;
	}
}

static void cli_sends(int fd, const char *text)
{
	cli_send(fd, text, strlen(text));
}

/* How many complete responses buf holds (bodies absent if head_only). */
static int complete(const char *buf, size_t len, int head_only)
{
	const char *p = buf, *end = buf + len;
	int n = 0;

	for (;;) {
		const char *eoh = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
		const char *cl;
		size_t body = 0;

		if (!eoh)
			return n;
		cl = memmem(p, (size_t)(eoh - p), "Content-Length: ", 16);
		if (cl && !head_only)
			body = strtoul(cl + 16, NULL, 10);
		if ((size_t)(end - (eoh + 4)) < body)
			return n;
		p = eoh + 4 + body;
		n++;
	}
}

/* Reads until want responses are complete (want < 0: until the server
 * closes), or 5 s pass. *eof: the server closed (or reset). */
static size_t cli_read(int fd, char *buf, size_t cap, int want, int head_only, int *eof)
{
	size_t len = 0;

	*eof = 0;
	while (want < 0 || complete(buf, len, head_only) < want) {
		ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);

		if (n <= 0) {
			*eof = n == 0 || errno == ECONNRESET;
			break;
		}
		len += (size_t)n;
		if (len == cap - 1)
			break;
	}
	buf[len] = '\0';
	return len;
}

/* One request on a new connection, read until the server closes. */
static size_t exchange(int port, const char *req, char *buf, size_t cap)
{
	int fd = cli_connect(port), eof;
	size_t n;

	cli_sends(fd, req);
	n = cli_read(fd, buf, cap, -1, 0, &eof);
	assert_true(eof);
	close(fd);
	return n;
}

static void assert_status(const char *resp, int status)
{
	char want[32];

	snprintf(want, sizeof(want), "HTTP/1.1 %d ", status);
	if (strncmp(resp, want, strlen(want)) != 0)
		fail_msg("want %d, got: %.200s", status, resp);
}

static void assert_has(const char *text, const char *part)
{
	if (!strstr(text, part))
		fail_msg("\"%s\" not in: %.600s", part, text);
}

/* ---- tests --------------------------------------------------------------- */

static void test_get_body_and_headers(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[4096];
	int fd, eof;

	srv_start(s, &o);
	fd = cli_connect(s->port);
	cli_sends(fd,
	          "GET /a%20b/c%2Fd?x=1&y=%41 HTTP/1.1\r\nHost: t\r\nAccept: text/html\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_status(buf, 200);
	assert_has(buf, "\r\nContent-Type: text/plain; charset=utf-8\r\n");
	assert_has(buf, "\r\nContent-Length: 37\r\n");
	assert_has(buf, "\r\nCache-Control: no-store\r\n");
	assert_has(buf, "\r\nX-Content-Type-Options: nosniff\r\n");
	assert_has(buf, "\r\nConnection: keep-alive\r\n");
	/* The path decoded, the query raw. */
	assert_string_equal(strstr(buf, "\r\n\r\n") + 4, "GET /a b/c/d q=x=1&y=%41 a=text/html\n");

	/* The handler's content type; an absolute-form target. */
	cli_sends(fd, "GET http://t:1/json HTTP/1.1\r\nHost: t\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_status(buf, 200);
	assert_has(buf, "\r\nContent-Type: application/json\r\n");
	assert_has(buf, "\r\nContent-Length: 2\r\n");
	close(fd);
	srv_stop(s);
	assert_int_equal(s->calls, 2);
	assert_string_equal(s->logs, ""); /* nothing logged per request */
}

static void test_keep_alive_two_requests(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[4096];
	int fd, eof;

	srv_start(s, &o);
	fd = cli_connect(s->port);
	cli_sends(fd, "GET /one HTTP/1.1\r\nHost: t\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_false(eof);
	assert_has(buf, "GET /one q= a=\n");
	cli_sends(fd, "GET /two HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), -1, 0, &eof);
	assert_true(eof);
	assert_status(buf, 200);
	assert_has(buf, "\r\nConnection: close\r\n");
	assert_has(buf, "GET /two q= a=\n");
	close(fd);

	/* HTTP/1.0 closes unless it asks to keep the connection. */
	fd = cli_connect(s->port);
	cli_sends(fd, "GET /k HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_has(buf, "\r\nConnection: keep-alive\r\n");
	cli_sends(fd, "GET /old HTTP/1.0\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), -1, 0, &eof);
	assert_true(eof);
	assert_has(buf, "\r\nConnection: close\r\n");
	assert_has(buf, "GET /old q= a=\n");
	close(fd);
	srv_stop(s);
	assert_int_equal(s->calls, 4);
}

static void test_pipelined_in_one_write(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[8192];
	const char *second;
	int fd, eof;

	srv_start(s, &o);
	fd = cli_connect(s->port);
	cli_sends(fd, "GET /first HTTP/1.1\r\nHost: t\r\n\r\n"
	              "HEAD /second HTTP/1.1\r\nHost: t\r\n\r\n"
	              "GET /third HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), -1, 0, &eof);
	assert_true(eof);
	/* In order, each once, the HEAD without a body. */
	second = strstr(buf, "GET /first q= a=\n");
	assert_non_null(second);
	second += strlen("GET /first q= a=\n");
	assert_status(second, 200);
	assert_has(second, "\r\nContent-Length: 19\r\n");
	assert_has(second, "\r\nConnection: keep-alive\r\n\r\nHTTP/1.1 200 OK\r\n");
	assert_has(second, "\r\n\r\nGET /third q= a=\n");
	assert_null(strstr(buf, "HEAD /second"));
	close(fd);
	srv_stop(s);
	assert_int_equal(s->calls, 3);
}

static void test_head_has_no_body(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[4096];
	int fd, eof;

	srv_start(s, &o);
	fd = cli_connect(s->port);
	cli_sends(fd, "HEAD /h HTTP/1.1\r\nHost: t\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 1, &eof);
	assert_status(buf, 200);
	assert_has(buf, "\r\nContent-Length: 14\r\n"); /* "HEAD /h q= a=\n" */
	assert_string_equal(strstr(buf, "\r\n\r\n"), "\r\n\r\n");
	/* The next response starts right after the head: no stray body. */
	cli_sends(fd, "GET /g HTTP/1.1\r\nHost: t\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_status(buf, 200);
	assert_has(buf, "\r\n\r\nGET /g q= a=\n");
	close(fd);
}

static void test_other_methods_405(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[4096];
	int fd, eof;

	srv_start(s, &o);
	fd = cli_connect(s->port);
	cli_sends(fd, "DELETE /x HTTP/1.1\r\nHost: t\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_status(buf, 405);
	assert_has(buf, "\r\nAllow: GET, HEAD\r\n");
	assert_has(buf, "\r\nConnection: keep-alive\r\n");
	cli_sends(fd, "GET /after HTTP/1.1\r\nHost: t\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_has(buf, "GET /after q= a=\n");
	close(fd);
	/* A POST with a body: 405, and the connection closes. */
	exchange(s->port, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc", buf,
	         sizeof(buf));
	assert_status(buf, 405);
	assert_has(buf, "\r\nConnection: close\r\n");
	srv_stop(s);
	assert_int_equal(s->calls, 1);
	assert_has(s->logs, "405 Method Not Allowed: DELETE");
}

static void test_body_413(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[4096];

	srv_start(s, &o);
	exchange(s->port, "GET /x HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello", buf,
	         sizeof(buf));
	assert_status(buf, 413);
	assert_has(buf, "\r\nConnection: close\r\n");
	exchange(s->port,
	         "GET /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: "
	         "chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	         buf, sizeof(buf));
	assert_status(buf, 413);
	/* An empty body is no body. */
	exchange(s->port, "GET /z HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", buf,
	         sizeof(buf));
	assert_status(buf, 200);
	srv_stop(s);
	assert_int_equal(s->calls, 1);
}

static void test_big_head_431(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char big[4096], buf[4096];

	o.max_head = 1024;
	srv_start(s, &o);
	/* One header too big (a value we do not keep)... */
	snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Big: %01500d\r\n\r\n", 0);
	exchange(s->port, big, buf, sizeof(buf));
	assert_status(buf, 431);
	assert_has(buf, "\r\nConnection: close\r\n");
	/* ...a target too big (kept), many small headers, just below. */
	snprintf(big, sizeof(big), "GET /%01500d HTTP/1.1\r\n\r\n", 0);
	exchange(s->port, big, buf, sizeof(buf));
	assert_status(buf, 431);
	strcpy(big, "GET / HTTP/1.1\r\n");
	while (strlen(big) < 1100)
		strcat(big, "A: b\r\n");
	strcat(big, "\r\n");
	exchange(s->port, big, buf, sizeof(buf));
	assert_status(buf, 431);
	snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nConnection: close\r\nX: %0900d\r\n\r\n", 0);
	exchange(s->port, big, buf, sizeof(buf));
	assert_status(buf, 200);
	srv_stop(s);
	assert_int_equal(s->calls, 1);
	assert_has(s->logs, "431 Request Header Fields Too Large");

	/* The copy buffer (max_head + 4) exactly filled by the target, then
	 * an empty Accept: in one read, before the head count is checked. */
	s->closed = 0;
	o.max_head = 64;
	srv_start(s, &o);
	snprintf(big, sizeof(big), "GET /%066d HTTP/1.1\r\nAccept:\r\n\r\n", 0);
	exchange(s->port, big, buf, sizeof(buf));
	assert_status(buf, 431);
	srv_stop(s);
}

static void test_garbage_400(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	static const char *const bad[] = {
	    "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
	    "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
	    "GET / HTTP/9.9\r\n\r\n",
	    "GET /a b HTTP/1.1\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
	};
	char buf[4096];
	size_t i;

	srv_start(s, &o);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		exchange(s->port, bad[i], buf, sizeof(buf));
		assert_status(buf, 400);
		assert_has(buf, "\r\nConnection: close\r\n");
	}
	srv_stop(s);
	assert_int_equal(s->calls, 0);
}

static void test_bad_percent_400(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	static const char *const bad[] = {"/a%zz", "/a%2", "/a%", "/a%00b", "/%0g"};
	char req[128], buf[4096];
	size_t i;

	srv_start(s, &o);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", bad[i]);
		exchange(s->port, req, buf, sizeof(buf));
		assert_status(buf, 400);
	}
	/* A malformed escape in the query is the handler's business. */
	exchange(s->port, "GET /q?%zz HTTP/1.1\r\nConnection: close\r\n\r\n", buf, sizeof(buf));
	assert_status(buf, 200);
	assert_has(buf, "GET /q q=%zz a=\n");
	srv_stop(s);
	assert_int_equal(s->calls, 1);
}

static void test_timeouts(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[4096];
	double t0, dt;
	int fd, eof;

	o.timeout_ms = 200;
	srv_start(s, &o);
	/* Half a request: 408, then closed. */
	fd = cli_connect(s->port);
	t0 = now_ms();
	cli_sends(fd, "GET / HTTP/1.1\r\nHost: t\r\n");
	cli_read(fd, buf, sizeof(buf), -1, 0, &eof);
	dt = now_ms() - t0;
	assert_true(eof);
	assert_status(buf, 408);
	assert_true(dt >= 150 && dt < 2000);
	close(fd);

	/* Idle keep-alive after a response: closed, nothing sent. */
	fd = cli_connect(s->port);
	cli_sends(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_status(buf, 200);
	t0 = now_ms();
	assert_int_equal(cli_read(fd, buf, sizeof(buf), -1, 0, &eof), 0);
	dt = now_ms() - t0;
	assert_true(eof);
	assert_true(dt >= 150 && dt < 2000);
	close(fd);

	/* A connection that never sends: closed too. */
	fd = cli_connect(s->port);
	assert_int_equal(cli_read(fd, buf, sizeof(buf), -1, 0, &eof), 0);
	assert_true(eof);
	close(fd);
	srv_stop(s);
	assert_has(s->logs, "request head not complete within 200 ms");
}

/* Trickles head (one byte every step_ms, the first after step_ms) until the
 * server answers or closes; the ms from the call to that, and the answer in
 * buf. */
static double trickle(int fd, const char *head, unsigned step_ms, char *buf, size_t cap)
{
	size_t len = 0, sent = 0, n = strlen(head);
	double t0 = now_ms();

	buf[0] = '\0';
	for (;;) {
		ssize_t r;

		usleep(step_ms * 1000);
		r = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
		if (r > 0)
			len += (size_t)r;
		if (r > 0 || r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			break;
		if (sent < n && send(fd, head + sent, 1, MSG_NOSIGNAL) == 1)
			sent++;
		if (now_ms() - t0 > 10000)
			fail_msg("a trickled head was still open after 10 s");
	}
	buf[len] = '\0';
	return now_ms() - t0;
}

/* A slowloris (one byte every 20 ms, never a whole head) is cut at
 * head_timeout_ms from the accept, and on a kept connection from the end
 * of the last response: bytes arriving never re-arm the deadline (the
 * first byte once did, with timeout_ms: head_timeout_ms + timeout_ms). */
static void test_head_deadline_not_rearmed(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	const char *slow =
	    "GET /slow HTTP/1.1\r\nHost: t\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	char buf[4096];
	double dt;
	int fd, eof;

	o.head_timeout_ms = 300;
	o.timeout_ms = 3000;
	srv_start(s, &o);
	fd = cli_connect(s->port);
	dt = trickle(fd, slow, 20, buf, sizeof(buf));
	assert_status(buf, 408);
	if (dt < 250 || dt > 1000)
		fail_msg("trickled head cut after %.0f ms, want ~300", dt);
	close(fd);

	/* Kept: the deadline runs from the end of the response. */
	fd = cli_connect(s->port);
	cli_sends(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_status(buf, 200);
	dt = trickle(fd, slow, 20, buf, sizeof(buf));
	assert_status(buf, 408);
	if (dt < 250 || dt > 1000)
		fail_msg("trickled second head cut after %.0f ms, want ~300", dt);
	close(fd);
	srv_stop(s);
	assert_has(s->logs, "request head not complete within 300 ms");
}

static void test_client_not_reading(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	size_t total = 0;
	char *buf = malloc(1 << 16);
	int fd;

	assert_non_null(buf);
	o.timeout_ms = 200;
	srv_start(s, &o);
	fd = cli_connect_buf(s->port, 4096);
	cli_sends(fd, "GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
	usleep(800 * 1000);
	for (;;) {
		ssize_t n = recv(fd, buf, 1 << 16, 0);

		if (n <= 0)
			break;
		total += (size_t)n;
	}
	assert_true(total > 0 && total < BIG_LEN);
	close(fd);
	free(buf);
	srv_stop(s);
	assert_has(s->logs, "response not read within 200 ms");
}

static void test_max_clients(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[4096];
	int a, b, c, d, eof, tries;

	o.max_clients = 2;
	srv_start(s, &o);
	a = cli_connect(s->port);
	b = cli_connect(s->port);
	cli_sends(a, "GET /a HTTP/1.1\r\n\r\n");
	cli_sends(b, "GET /b HTTP/1.1\r\n\r\n");
	cli_read(a, buf, sizeof(buf), 1, 0, &eof);
	assert_has(buf, "GET /a q= a=\n");
	cli_read(b, buf, sizeof(buf), 1, 0, &eof);
	assert_has(buf, "GET /b q= a=\n");

	/* A third is accepted and closed at once... */
	c = cli_connect(s->port);
	assert_int_equal(cli_read(c, buf, sizeof(buf), -1, 0, &eof), 0);
	assert_true(eof);
	close(c);
	/* ...while the two are still served. */
	cli_sends(a, "GET /a2 HTTP/1.1\r\n\r\n");
	cli_read(a, buf, sizeof(buf), 1, 0, &eof);
	assert_has(buf, "GET /a2 q= a=\n");

	/* A closed client frees its place (once the server has seen it). */
	close(b);
	for (tries = 0; tries < 100; tries++) {
		d = cli_connect(s->port);
		cli_sends(d, "GET /d HTTP/1.1\r\nConnection: close\r\n\r\n");
		cli_read(d, buf, sizeof(buf), -1, 0, &eof);
		close(d);
		if (strstr(buf, "GET /d q= a=\n"))
			break;
		usleep(20 * 1000);
	}
	assert_true(tries < 100);
	close(a);
	srv_stop(s);
	assert_has(s->logs,
	           "1 connection(s) closed or refused to keep room (last: refused a newcomer");
}

/* Many clients at once, each with a request in flight: all answered. */
static void test_many_clients(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	enum { N = 60 }; /* under the default max_clients of 64 */
	char req[64], want[64], buf[1024];
	int fd[N], i, eof;

	o.max_per_peer = N; /* all from one address */
	srv_start(s, &o);
	for (i = 0; i < N; i++) {
		fd[i] = cli_connect(s->port);
		snprintf(req, sizeof(req), "GET /c%d HTTP/1.1\r\n\r\n", i);
		cli_sends(fd[i], req);
	}
	for (i = N - 1; i >= 0; i--) {
		snprintf(want, sizeof(want), "GET /c%d q= a=\n", i);
		cli_read(fd[i], buf, sizeof(buf), 1, 0, &eof);
		assert_has(buf, want);
		close(fd[i]);
	}
	srv_stop(s);
	assert_int_equal(s->calls, N);
}

/* A request on fd answered (keep-alive), so fd is now idle. */
static void served(int fd, const char *path)
{
	char req[64], want[64], buf[1024];
	int eof;

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n\r\n", path);
	snprintf(want, sizeof(want), "GET %s q= a=\n", path);
	cli_sends(fd, req);
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_has(buf, want);
}

/* Closed by the server: EOF (or a reset) with nothing sent. */
static void closed(int fd)
{
	char buf[256];
	int eof = 0;

	assert_int_equal(cli_read(fd, buf, sizeof(buf), -1, 0, &eof), 0);
	assert_true(eof);
}

/* An address at max_per_peer: its oldest idle connection gives way to its
 * newest; the others are untouched. */
static void test_room_per_address(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	int a, b, c;

	o.max_per_peer = 2;
	srv_start(s, &o);
	a = cli_connect(s->port);
	served(a, "/a");
	b = cli_connect(s->port);
	served(b, "/b");
	c = cli_connect(s->port);
	served(c, "/c");
	closed(a);
	served(b, "/b2");
	close(a);
	close(b);
	close(c);
	srv_stop(s);
	assert_has(s->logs, "closed an idle or slow connection for a newcomer");
}

/* A full server: a newcomer from another address takes the place of the
 * oldest connection of the address holding the most; one that would hold
 * as many as the greediest is refused. One log line for all of it. */
static void test_room_when_full(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	int a, b, c, d, e, f;

	o.max_clients = 3;
	srv_start(s, &o);
	a = cli_connect(s->port);
	served(a, "/a");
	b = cli_connect(s->port);
	served(b, "/b");
	c = cli_connect(s->port);
	served(c, "/c");
	d = cli_connect_from(s->port, 0, 2); /* 127.0.0.1 has 3 */
	served(d, "/d");
	closed(a);
	e = cli_connect_from(s->port, 0, 3); /* 127.0.0.1 has 2 */
	served(e, "/e");
	closed(b);
	f = cli_connect_from(s->port, 0, 2); /* each address has 1 */
	closed(f);
	served(c, "/c2");
	served(d, "/d2");
	served(e, "/e2");
	for (int fd = 0, *all[] = {&a, &b, &c, &d, &e, &f}; fd < 6; fd++)
		close(*all[fd]);
	srv_stop(s);
	assert_has(s->logs, "connection(s) closed or refused to keep room");
	assert_null(strstr(strstr(s->logs, "keep room") + 1, "keep room"));
}

/* How many of fd[0..n) the server has closed (EOF or reset), without
 * waiting. */
static int count_closed(const int *fd, int n)
{
	int closed = 0;

	for (int i = 0; i < n; i++) {
		char b;
		ssize_t r = recv(fd[i], &b, 1, MSG_DONTWAIT | MSG_PEEK);

		closed += r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
	}
	return closed;
}

/* Clients that reconnect as fast as they are closed keep the kernel's
 * queue full. A loop turn accepts a bounded number of them and leaves the
 * rest for later turns, so timers, watch reads and close callbacks still
 * run (libuv alone would accept until the queue is empty, for ever under
 * such a storm). Here 100 wait before the loop runs: one turn must not
 * take them all, and the following turns take the rest. */
static void test_accept_budget_per_turn(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	enum { N = 100, PER_PEER = 4 };
	int fd[N], closed, turns;

	o.max_per_peer = PER_PEER; /* each newcomer closes the oldest */
	srv_listen(s, &o);
	for (int i = 0; i < N; i++)
		fd[i] = cli_connect(s->port);
	uv_run(&s->loop, UV_RUN_NOWAIT);
	closed = count_closed(fd, N);
	assert_true(closed > 0);      /* it did accept... */
	assert_true(closed <= N / 3); /* ...but left most waiting (a turn takes 32) */
	for (turns = 1; turns < 50 && count_closed(fd, N) < N - PER_PEER; turns++)
		uv_run(&s->loop, UV_RUN_NOWAIT);
	assert_int_equal(count_closed(fd, N), N - PER_PEER);
	assert_true(turns > 1);
	/* The last four are the ones kept, and they are served. */
	srv_run(s);
	for (int i = N - PER_PEER; i < N; i++)
		served(fd[i], "/kept");
	for (int i = 0; i < N; i++)
		close(fd[i]);
	srv_stop(s);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static void test_token(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[4096];

	write_text(s->token, "s3cret-token\n");
	o.token_file = s->token;
	srv_start(s, &o);
	exchange(s->port, "GET /debug/queues HTTP/1.1\r\nConnection: close\r\n\r\n", buf,
	         sizeof(buf));
	assert_status(buf, 401);
	assert_has(buf, "\r\nWWW-Authenticate: Bearer\r\n");
	exchange(s->port,
	         "GET /debug/queues HTTP/1.1\r\nAuthorization: Bearer s3cret-tokeN\r\nConnection: "
	         "close\r\n\r\n",
	         buf, sizeof(buf));
	assert_status(buf, 401);
	exchange(s->port,
	         "GET /debug/queues HTTP/1.1\r\nAuthorization: Bearer s3cret-token-\r\nConnection: "
	         "close\r\n\r\n",
	         buf, sizeof(buf));
	assert_status(buf, 401);
	exchange(s->port,
	         "GET /debug/queues HTTP/1.1\r\nAuthorization: Basic s3cret-token\r\nConnection: "
	         "close\r\n\r\n",
	         buf, sizeof(buf));
	assert_status(buf, 401);
	/* Two Authorization headers are refused even when one is right. */
	exchange(s->port,
	         "GET /debug/queues HTTP/1.1\r\nAuthorization: Bearer s3cret-token\r\n"
	         "Authorization: Bearer x\r\nConnection: close\r\n\r\n",
	         buf, sizeof(buf));
	assert_status(buf, 401);
	exchange(
	    s->port,
	    "GET /debug/queues HTTP/1.1\r\nAuthorization: bearer  s3cret-token \r\nConnection: "
	    "close\r\n\r\n",
	    buf, sizeof(buf));
	assert_status(buf, 200);
	assert_has(buf, "GET /debug/queues q= a=\n");
	/* Probes need none. */
	exchange(s->port, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", buf, sizeof(buf));
	assert_status(buf, 200);
	exchange(s->port, "GET /readyz?verbose HTTP/1.1\r\nConnection: close\r\n\r\n", buf,
	         sizeof(buf));
	assert_status(buf, 200);
	/* Nor does the page (static; it asks for the token), but its data does. */
	exchange(s->port, "GET /debug/ HTTP/1.1\r\nConnection: close\r\n\r\n", buf, sizeof(buf));
	assert_status(buf, 200);
	exchange(s->port, "GET /healthz/x HTTP/1.1\r\nConnection: close\r\n\r\n", buf, sizeof(buf));
	assert_status(buf, 401);
	srv_stop(s);
	assert_int_equal(s->calls, 4);
	assert_has(s->logs, "401 Unauthorized: missing or wrong bearer token");
	assert_null(strstr(s->logs, "s3cret")); /* never logged */
}

/* A new key, and a self-signed certificate for it named cn. */
static void write_cert(const char *cert, const char *key_path, const char *cn)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name;
	FILE *f;

	assert_non_null(key);
	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, key);
	name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, name);
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	assert_non_null(f = fopen(cert, "w"));
	assert_int_equal(PEM_write_X509(f, x), 1);
	fclose(f);
	assert_non_null(f = fopen(key_path, "w"));
	assert_int_equal(PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL), 1);
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(key);
}

/* A self-signed certificate for 127.0.0.1, and a second, unrelated key. */
static void make_cert(struct srv *s)
{
	EVP_PKEY *other = EVP_EC_gen("P-256");
	FILE *f;

	assert_non_null(other);
	write_cert(s->cert, s->key, "127.0.0.1");
	assert_non_null(f = fopen(s->key2, "w"));
	assert_int_equal(PEM_write_PrivateKey(f, other, NULL, NULL, 0, NULL, NULL), 1);
	fclose(f);
	EVP_PKEY_free(other);
}

/* One request over TLS, verifying the server's certificate. */
static void tls_get(struct srv *s, const char *req, char *buf, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl;
	size_t len = 0;
	int fd = cli_connect(s->port), n;

	assert_non_null(ctx);
	assert_int_equal(SSL_CTX_load_verify_locations(ctx, s->cert, NULL), 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	assert_non_null(ssl = SSL_new(ctx));
	SSL_set_fd(ssl, fd);
	if (SSL_connect(ssl) != 1)
		fail_msg("TLS handshake failed; server said: %s", s->logs);
	assert_true(SSL_version(ssl) >= TLS1_2_VERSION);
	assert_int_equal(SSL_write(ssl, req, (int)strlen(req)), (int)strlen(req));
	while ((n = SSL_read(ssl, buf + len, (int)(cap - 1 - len))) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
}

static void test_tls(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "0.0.0.0:0"); /* allowed: TLS and a token */
	char buf[8192];

	make_cert(s);
	write_text(s->token, "tok\n");
	o.cert_file = s->cert;
	o.key_file = s->key;
	o.token_file = s->token;
	srv_start(s, &o);
	tls_get(s,
	        "GET /x?y HTTP/1.1\r\nAuthorization: Bearer tok\r\n\r\n"
	        "GET /z HTTP/1.1\r\nAuthorization: Bearer tok\r\nConnection: close\r\n\r\n",
	        buf, sizeof(buf));
	assert_status(buf, 200);
	assert_has(buf, "GET /x q=y a=\n");
	assert_has(buf, "GET /z q= a=\n");
	tls_get(s, "GET /x HTTP/1.1\r\nConnection: close\r\n\r\n", buf, sizeof(buf));
	assert_status(buf, 401);

	/* Plain HTTP against the TLS port: closed, no HTTP answer. */
	exchange(s->port, "GET / HTTP/1.1\r\nHost: t\r\n\r\n", buf, sizeof(buf));
	assert_null(strstr(buf, "HTTP/1.1"));
	srv_stop(s);
	assert_int_equal(s->calls, 2);
	assert_has(s->logs, "TLS handshake failed");
}

static void test_tls_handshake_timeout(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[256];
	double t0;
	int fd, eof;

	make_cert(s);
	o.cert_file = s->cert;
	o.key_file = s->key;
	o.timeout_ms = 200;
	srv_start(s, &o);
	fd = cli_connect(s->port);
	t0 = now_ms();
	assert_int_equal(cli_read(fd, buf, sizeof(buf), -1, 0, &eof), 0);
	assert_true(eof);
	assert_true(now_ms() - t0 < 2000);
	close(fd);
	srv_stop(s);
	assert_has(s->logs, "TLS handshake not complete within 200 ms");
}

/* New TLS sessions within the budget: with one a second, the second
 * handshake right after the first is closed before any TLS work, and one a
 * second later gets through. */
static void test_tls_handshake_budget(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[4096];
	int fd;

	make_cert(s);
	o.cert_file = s->cert;
	o.key_file = s->key;
	o.tls_handshakes_per_s = 1;
	srv_start(s, &o);
	tls_get(s, "GET /a HTTP/1.1\r\nConnection: close\r\n\r\n", buf, sizeof(buf));
	assert_has(buf, "GET /a q= a=\n");
	fd = cli_connect(s->port);
	cli_sends(fd, "\x16\x03\x01\x00\x05hello"); /* the start of a ClientHello */
	closed(fd);
	close(fd);
	usleep(1100 * 1000);
	tls_get(s, "GET /b HTTP/1.1\r\nConnection: close\r\n\r\n", buf, sizeof(buf));
	assert_has(buf, "GET /b q= a=\n");
	srv_stop(s);
	assert_has(s->logs, "the TLS handshake budget is spent");
}

/* Points link at target as the kubelet rotates a Secret volume: a new
 * symlink renamed over the old one, in one step. */
static void swap_link(const char *target, const char *link)
{
	char tmp[160];

	snprintf(tmp, sizeof(tmp), "%s.new", link);
	unlink(tmp);
	assert_int_equal(symlink(target, tmp), 0);
	assert_int_equal(rename(tmp, link), 0);
}

/* The status of one request for token's data on a new connection. */
static int status_with(int port, const char *token)
{
	char req[256], buf[4096];

	snprintf(req, sizeof(req),
	         "GET /debug/queues HTTP/1.1\r\nAuthorization: Bearer %s\r\nConnection: "
	         "close\r\n\r\n",
	         token);
	exchange(port, req, buf, sizeof(buf));
	return strncmp(buf, "HTTP/1.1 ", 9) == 0 ? atoi(buf + 9) : -1;
}

static int count_of(const char *text, const char *part)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, part)); p += strlen(part))
		n++;
	return n;
}

/* A rotated token file is read again within a second: the old token is
 * refused and the new one served, on a kept connection too; a rotation to
 * a bad file keeps the token in use and says so once. */
static void test_token_rotation(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char t1[160], t2[160], t3[160], buf[4096];
	int fd, eof;

	snprintf(t1, sizeof(t1), "%s/token.1", s->dir);
	snprintf(t2, sizeof(t2), "%s/token.2", s->dir);
	snprintf(t3, sizeof(t3), "%s/token.3", s->dir);
	write_text(t1, "first\n");
	write_text(t2, "second\n");
	write_text(t3, "\n");
	swap_link(t1, s->token);
	o.token_file = s->token;
	srv_start(s, &o);
	assert_int_equal(status_with(s->port, "first"), 200);
	assert_int_equal(status_with(s->port, "second"), 401);
	fd = cli_connect(s->port);
	cli_sends(fd, "GET /a HTTP/1.1\r\nAuthorization: Bearer first\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_status(buf, 200);

	swap_link(t2, s->token);
	usleep(1100 * 1000);
	cli_sends(fd, "GET /b HTTP/1.1\r\nAuthorization: Bearer first\r\n\r\n");
	cli_read(fd, buf, sizeof(buf), 1, 0, &eof);
	assert_status(buf, 401); /* the kept connection sees it too */
	close(fd);
	assert_int_equal(status_with(s->port, "first"), 401);
	assert_int_equal(status_with(s->port, "second"), 200);

	swap_link(t3, s->token); /* no token in it: kept, said once */
	usleep(1100 * 1000);
	assert_int_equal(status_with(s->port, "second"), 200);
	usleep(1100 * 1000);
	assert_int_equal(status_with(s->port, "second"), 200);
	assert_int_equal(status_with(s->port, ""), 401);
	srv_stop(s);
	assert_int_equal(count_of(s->logs, "the token file changed: reloaded"), 1);
	assert_int_equal(count_of(s->logs, "no token on its first line; still serving the token"),
	                 1);
	assert_null(strstr(s->logs, "second")); /* never logged */
	unlink(t1);
	unlink(t2);
	unlink(t3);
}

/* Whether a TLS request verified against ca (a self-signed certificate)
 * was answered. */
static int tls_ok(struct srv *s, const char *ca)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	const char *req = "GET /x HTTP/1.1\r\nConnection: close\r\n\r\n";
	char buf[4096];
	SSL *ssl;
	int fd = cli_connect(s->port), ok, n, len = 0;

	assert_non_null(ctx);
	assert_int_equal(SSL_CTX_load_verify_locations(ctx, ca, NULL), 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	assert_non_null(ssl = SSL_new(ctx));
	SSL_set_fd(ssl, fd);
	ok = SSL_connect(ssl) == 1 && SSL_write(ssl, req, (int)strlen(req)) == (int)strlen(req);
	while (ok && (n = SSL_read(ssl, buf + len, (int)sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = '\0';
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return ok && strncmp(buf, "HTTP/1.1 200 ", 13) == 0;
}

/* A rotated certificate and key are served to new connections within a
 * second: a client that trusts only the new certificate gets through, one
 * that trusts only the old one does not; a rotation to a bad certificate
 * keeps the one in use and says so once. */
static void test_tls_rotation(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char old[160], cert2[160], key2[160], bad[160];

	snprintf(old, sizeof(old), "%s/old-cert.pem", s->dir);
	snprintf(cert2, sizeof(cert2), "%s/cert2.pem", s->dir);
	snprintf(key2, sizeof(key2), "%s/key2.pem", s->dir);
	snprintf(bad, sizeof(bad), "%s/bad.pem", s->dir);
	make_cert(s);
	assert_int_equal(link(s->cert, old), 0);
	o.cert_file = s->cert;
	o.key_file = s->key;
	srv_start(s, &o);
	assert_true(tls_ok(s, old));

	write_cert(cert2, key2, "rotated");
	assert_int_equal(rename(key2, s->key), 0);
	assert_int_equal(link(cert2, key2), 0); /* a copy to verify with */
	assert_int_equal(rename(cert2, s->cert), 0);
	usleep(1100 * 1000);
	assert_true(tls_ok(s, key2));
	assert_false(tls_ok(s, old));

	write_text(bad, "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
	assert_int_equal(rename(bad, s->cert), 0);
	usleep(1100 * 1000);
	assert_true(tls_ok(s, key2));
	usleep(1100 * 1000);
	assert_true(tls_ok(s, key2));
	srv_stop(s);
	assert_int_equal(count_of(s->logs, "the TLS certificate or key changed: reloaded"), 1);
	assert_int_equal(count_of(s->logs, "still serving the certificate and key read before"), 1);
	unlink(old);
	unlink(key2);
}

static void test_start_refusals(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "0.0.0.0:0");
	static const char *const bad_addrs[] = {
	    "",      "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:8x",   "localhost.:1",
	    ":8080", "[::1]",     "[::1]8080",  "::1:8080",        "example.com:80", "1.2.3:80",
	};
	char err[256];
	size_t i;

	make_cert(s);
	write_text(s->token, "tok\n");
	/* Beyond loopback without TLS and a token. */
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	assert_has(err, "0.0.0.0:0 is not a loopback address");
	assert_has(err, "TLS");
	o.cert_file = s->cert;
	o.key_file = s->key;
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	assert_has(err, "--debug-token-file");
	o.cert_file = o.key_file = NULL;
	o.token_file = s->token;
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	o.token_file = NULL;
	o.addr = "[::]:0";
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	o.addr = "10.1.2.3:80";
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	for (i = 0; i < sizeof(bad_addrs) / sizeof(bad_addrs[0]); i++) {
		o.addr = bad_addrs[i];
		err[0] = '\0';
		assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
		assert_has(err, "bad address");
	}
	o.addr = NULL;
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	o.addr = "127.0.0.1:0";
	o.handler = NULL;
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	/* err may be NULL. */
	o = options(s, "0.0.0.0:0");
	assert_int_equal(start_fails(s, &o, NULL, 0), -EINVAL);
}

static void test_start_bad_files(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char err[512], missing[160];

	make_cert(s);
	snprintf(missing, sizeof(missing), "%s/missing.pem", s->dir);
	o.cert_file = missing;
	o.key_file = s->key;
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	assert_has(err, "cannot use the certificate (--debug-tls-cert)");
	assert_has(err, missing);
	o.cert_file = s->key; /* a key is no certificate */
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	assert_has(err, "--debug-tls-cert");
	o.cert_file = s->cert;
	o.key_file = missing;
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	assert_has(err, "cannot use the key (--debug-tls-key");
	o.key_file = s->key2; /* OpenSSL finds the mismatch as it loads */
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	assert_has(err, "cannot use the key (--debug-tls-key");
	assert_has(err, "mismatch");
	o.key_file = NULL;
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	assert_has(err, "needs both a certificate (--debug-tls-cert) and a key");

	o = options(s, "127.0.0.1:0");
	o.token_file = missing;
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	assert_has(err, "cannot read the token file");
	write_text(s->token, "\nsecond line\n");
	o.token_file = s->token;
	assert_int_equal(start_fails(s, &o, err, sizeof(err)), -EINVAL);
	assert_has(err, "no token on its first line");
}

static void test_port_in_use(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char addr[32], err[256];

	srv_start(s, &o);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s->port);
	o.addr = addr;
	/* The loop runs in its thread: only look at the result here. */
	{
		uv_loop_t other;
		struct httpd *h = NULL;

		assert_int_equal(uv_loop_init(&other), 0);
		assert_int_equal(httpd_start(&other, &o, &h, err, sizeof(err)), -EADDRINUSE);
		assert_null(h);
		assert_has(err, "cannot listen on");
		uv_run(&other, UV_RUN_DEFAULT);
		assert_int_equal(uv_loop_close(&other), 0);
	}
}

static void test_close_null_and_idle(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "[::1]:0");
	struct httpd *h = NULL;
	char err[256];
	int rc;

	httpd_close(&h, on_closed, s); /* safe, no callback */
	assert_int_equal(s->closed, 0);
	rc = httpd_start(&s->loop, &o, &h, err, sizeof(err));
	if (rc == -EADDRNOTAVAIL || rc == -EAFNOSUPPORT) {
		o.addr = "127.0.0.1:0";
		rc = httpd_start(&s->loop, &o, &h, err, sizeof(err));
	}
	assert_int_equal(rc, 0);
	httpd_close(&h, on_closed, s);
	assert_null(h);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	assert_int_equal(s->closed, 1);
}

/* Closing with clients in every phase: connected, half a request, and a
 * response being written to a client that does not read. */
static void test_close_with_clients(void **state)
{
	struct srv *s = *state;
	struct httpd_options o = options(s, "127.0.0.1:0");
	char buf[256];
	int a, b, c, eof;

	srv_start(s, &o);
	a = cli_connect(s->port);
	b = cli_connect(s->port);
	c = cli_connect_buf(s->port, 4096);
	cli_sends(b, "GET / HTTP/1.1\r\n");
	cli_sends(c, "GET /big HTTP/1.1\r\n\r\n");
	usleep(200 * 1000);
	srv_stop(s);
	assert_int_equal(cli_read(a, buf, sizeof(buf), -1, 0, &eof), 0);
	assert_true(eof);
	close(a);
	close(b);
	close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_get_body_and_headers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keep_alive_two_requests, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pipelined_in_one_write, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_head_has_no_body, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_other_methods_405, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_body_413, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_big_head_431, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_garbage_400, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_percent_400, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_timeouts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_head_deadline_not_rearmed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_not_reading, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_max_clients, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_clients, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_room_per_address, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_room_when_full, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_accept_budget_per_turn, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_token, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tls_handshake_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tls_handshake_budget, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_token_rotation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tls_rotation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_start_refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_start_bad_files, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_port_in_use, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_close_null_and_idle, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_close_with_clients, setup, teardown),
	};

	/* libuv writes with write(2): a client gone mid-response would
	 * otherwise kill the process (the daemon ignores SIGPIPE too). */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
