/*
 * Fuzz target: the debug server's request handling (scheduler/httpd*.c:
 * llhttp's callbacks, httpd__screen(), the connection's states, pipelined
 * requests, rejections and responses).
 *
 * Input: byte 0 sets up the exchange, the rest is what a client sends:
 *
 *   byte 0 & 1   1: the server requires the bearer token "fuzz-token"
 *                (loopback, so only for paths other than the probes)
 *   byte 0 >> 1  0: the bytes in one send, else sends of that many bytes
 *                (1 .. 127; the first 64 sends, then the rest at once),
 *                each read by the server on its own, so heads and values
 *                are split across reads at every kind of place
 *
 * The real server runs per input: httpd_start() on 127.0.0.1, port 0,
 * with a head limit of 1 KiB (so 431 is reachable) on a libuv loop that
 * this thread runs with UV_RUN_NOWAIT between its own steps as a client
 * over a real TCP connection: connect, the sends, reading until a step
 * brings nothing more (the server waits for more, or has closed), then a
 * reset (never a FIN: see client_reset()). The server is then closed and
 * the loop run until httpd_close()'s callback has freed everything, so
 * LeakSanitizer sees any leak.
 *
 * Checked: the handler only sees GET or HEAD, a path starting with '/',
 * and a query and Accept that are strings (httpd.h's promise); whatever
 * the server sends begins with a status line; it stops sending within
 * 5 s of the last bytes it was sent. The handler echoes the request, and
 * answers /status/N with status N and /type/T with content type T (so
 * its checks of a handler's answer run).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "fuzz/fuzz.h"
#include "scheduler/httpd/httpd.h"

#define MAX_HEAD    1024
#define MAX_SENDS   64
#define STEP_RUNS   3    /* loop iterations after each send */
#define SETTLE_MS   5000 /* for the server to answer what it was sent */
#define REPLY_CAP   (64 * 1024)
#define STATUS_LINE "HTTP/1.1 "

static uv_loop_t loop;
static char token_path[96];

static void handler(void *data, const struct httpd_request *req, struct httpd_response *resp)
{
	char *body;
	int n;

	(void)data;
	FUZZ_CHECK(!strcmp(req->method, "GET") || !strcmp(req->method, "HEAD"));
	FUZZ_CHECK(req->path && req->path[0] == '/');
	FUZZ_CHECK(req->query && req->accept);
	if (!strncmp(req->path, "/status/", 8))
		resp->status = atoi(req->path + 8);
	if (!strncmp(req->path, "/type/", 6))
		resp->content_type = req->path + 6; /* valid until the response is sent */
	n = asprintf(&body, "%s %s q=%s a=%s\n", req->method, req->path, req->query, req->accept);
	FUZZ_CHECK(n > 0);
	resp->body = body;
	resp->len = (size_t)n;
}

static void discard_log(void *data, const char *msg)
{
	(void)data;
	(void)msg;
}

static void on_closed(void *data)
{
	*(bool *)data = true;
}

static void remove_token(void)
{
	unlink(token_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	FILE *f;
	int fd;

	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN); /* httpd.h: the process must ignore it */
	FUZZ_CHECK(uv_loop_init(&loop) == 0);
	snprintf(token_path, sizeof(token_path), "%s/muster-fuzz-token-XXXXXX",
	         tmp && *tmp && strlen(tmp) < 48 ? tmp : "/tmp");
	fd = mkstemp(token_path);
	FUZZ_CHECK(fd >= 0);
	atexit(remove_token);
	f = fdopen(fd, "w");
	FUZZ_CHECK(f && fputs("fuzz-token\n", f) >= 0 && fclose(f) == 0);
	return 0;
}

/* ---- the client ------------------------------------------------------------ */

struct client {
	int fd;
	bool eof;
	size_t got;
	char reply[REPLY_CAP]; /* the start of what the server sent */
};

static int connect_finish(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int err = 0;
	socklen_t len = sizeof(err);
	int n;

	while ((n = poll(&p, 1, 5000)) < 0 && errno == EINTR)
		;
	if (n != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return -ETIMEDOUT;
	return -err;
}

static int client_connect(struct client *c, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct linger no_linger = {.l_onoff = 1, .l_linger = 0};

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	FUZZ_CHECK(c->fd >= 0);
	/* Closed with a reset: no TIME_WAIT left behind by each input. */
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &no_linger, sizeof(no_linger));
	/* Loopback: the kernel completes it before the server accepts. A
	 * signal (libFuzzer's -timeout alarm, every second) can interrupt it:
	 * the connection then goes on, and poll() says when it is done. */
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return 0;
	return errno == EINTR ? connect_finish(c->fd) : -errno;
}

/* Take what the server sent so far, without waiting. */
static void client_drain(struct client *c)
{
	char buf[16 * 1024];

	while (!c->eof && c->fd >= 0) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n <= 0) {
			c->eof = true; /* closed, or reset with data unread */
			return;
		}
		if (c->got < REPLY_CAP) {
			size_t keep =
			    (size_t)n < REPLY_CAP - c->got ? (size_t)n : REPLY_CAP - c->got;

			memcpy(c->reply + c->got, buf, keep);
		}
		c->got += (size_t)n;
	}
}

static void step(struct client *c)
{
	int i;

	for (i = 0; i < STEP_RUNS; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		client_drain(c);
	}
}

static void client_send(struct client *c, const char *p, size_t len)
{
	while (len > 0 && !c->eof) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return; /* the server closed: the rest is not wanted */
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
		step(c);
	}
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Step until a step brings nothing new: the server has answered all it
 * can and waits for more (or has closed). Every response is written as
 * soon as its head is parsed, so a quiet step means the server is idle. */
static void client_settle(struct client *c)
{
	double deadline = now_ms() + SETTLE_MS;
	size_t before;

	do {
		if (now_ms() > deadline) {
			fprintf(stderr, "httpd kept sending for %d ms\n", SETTLE_MS);
			FUZZ_CHECK(now_ms() <= deadline);
		}
		before = c->got;
		step(c);
	} while (c->got != before && !c->eof);
	if (c->got > 0) {
		size_t n = strlen(STATUS_LINE);

		FUZZ_CHECK(c->got >= n && !memcmp(c->reply, STATUS_LINE, n));
	}
}

/* Reset the connection and let the server see it. A reset, not a FIN:
 * the side that sends the first FIN keeps the port pair in TIME_WAIT for
 * a minute, and at hundreds of inputs a second that runs out of ports. */
static void client_reset(struct client *c)
{
	close(c->fd);
	c->fd = -1;
	step(c);
}

/* ---- one exchange ------------------------------------------------------------ */

static struct httpd *server_start(bool token)
{
	struct httpd_options o = {
	    .addr = "127.0.0.1:0",
	    .token_file = token ? token_path : NULL,
	    .max_head = MAX_HEAD,
	    .handler = handler,
	    .log = discard_log,
	};
	struct httpd *h = NULL;
	char err[256];

	FUZZ_CHECK(httpd_start(&loop, &o, &h, err, sizeof(err)) == 0);
	return h;
}

static void server_stop(struct httpd **h)
{
	bool closed = false;
	unsigned rounds = 0;

	httpd_close(h, on_closed, &closed);
	while (!closed) {
		FUZZ_CHECK(++rounds < 1000);
		uv_run(&loop, UV_RUN_NOWAIT);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct client c; /* its reply buffer is large */
	struct httpd *h;
	const char *p = (const char *)data + 1;
	size_t len, piece, sends = 0;
	int rc;

	if (size < 1)
		return 0;
	len = size - 1;
	piece = data[0] >> 1;
	h = server_start(data[0] & 1);
	memset(&c, 0, sizeof(c));
	rc = client_connect(&c, httpd_port(h));
	if (rc == -EADDRNOTAVAIL || rc == -EAGAIN) {
		/* The machine is out of loopback ports (another program's
		 * connections in TIME_WAIT): nothing about the server. */
		client_reset(&c);
		server_stop(&h);
		return 0;
	}
	if (rc != 0)
		fprintf(stderr, "connect to the server: %s\n", strerror(-rc));
	FUZZ_CHECK(rc == 0);
	step(&c); /* the server accepts */
	while (len > 0) {
		size_t n = piece && sends < MAX_SENDS && piece < len ? piece : len;

		client_send(&c, p, n);
		p += n;
		len -= n;
		sends++;
	}
	client_settle(&c);
	client_reset(&c);
	server_stop(&h);
	return 0;
}
