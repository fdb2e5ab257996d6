/*
 * A connection of the debug server, as a small state machine driven by
 * libuv callbacks (states in httpd_internal.h):
 *
 *   READ  --head complete--> WRITE --written, kept--> READ
 *                            WRITE --written, close--> LINGER --> closed
 *
 * and one timer, re-armed on each change: READ idle or mid-head, WRITE
 * (a client that does not read), LINGER. An error closes at once.
 * Responses are written with one uv_write() of head and body (or of their
 * ciphertext); the body is freed when the kernel has taken it.
 */
#include "scheduler/httpd/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	OUT_HEAD_CAP = 512, /* our response head */
	LINGER_MS = 1000,   /* reading what a closed connection still sends */
};

static const char TEXT_PLAIN[] = "text/plain; charset=utf-8";

static const struct {
	int status;
	const char *reason;
} reasons[] = {
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {204, "No Content"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {304, "Not Modified"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {408, "Request Timeout"},
    {413, "Content Too Large"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {503, "Service Unavailable"},
};

/* One write to the socket: a response (head and body) or TLS records. */
struct wreq {
	uv_write_t req;
	struct httpd__conn *c;
	char *owned; /* freed once written */
	int last;    /* the write that completes a response */
	char head[OUT_HEAD_CAP];
};

/* A response about to be sent. */
struct answer {
	int status;
	const char *type;
	const char *extra; /* more header lines, each ending in CRLF */
	const char *body;
	size_t len;
	char *owned; /* freed once sent (often body) */
};

static void on_timer(uv_timer_t *t);

static void conn_resume(struct httpd__conn *c);

static const char *reason_of(int status)
{
	size_t i;

	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].status == status)
			return reasons[i].reason;
	return "Unknown";
}

void httpd__arm(struct httpd__conn *c, unsigned ms)
{
	uv_timer_start(&c->timer, on_timer, ms, 0);
}

static void on_alloc(uv_handle_t *handle, size_t hint, uv_buf_t *buf)
{
	struct httpd__conn *c = handle->data;

	/* The server's buffer: read_cb consumes (or copies) it before the
	 * next alloc of any connection. */
	(void)hint;
	*buf = uv_buf_init(c->h->rbuf, sizeof(c->h->rbuf));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void read_on(struct httpd__conn *c)
{
	if (c->reading)
		return;
	if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) {
		httpd__conn_close(c);
		return;
	}
	c->reading = 1;
}

static void read_off(struct httpd__conn *c)
{
	if (c->reading)
		uv_read_stop((uv_stream_t *)&c->tcp);
	c->reading = 0;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct httpd__conn *c = s->data;

	if (n == 0 || c->state == HTTPD__CLOSED)
		return;
	if (n < 0) {
		/* EOF or a reset: nothing to answer, nobody to tell. */
		httpd__conn_close(c);
		return;
	}
	if (c->state == HTTPD__LINGER)
		return;
	if (c->ssl)
		httpd__tls_in(c, buf->base, (size_t)n);
	else
		httpd__feed(c, buf->base, (size_t)n);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct httpd__conn *c = req->data;

	if (status < 0)
		httpd__conn_close(c);
}

/* After the last response: FIN, then read and drop what the client still
 * sends for a moment, so that the kernel does not answer it with a reset
 * that could destroy the response before the client has read it. */
static void linger(struct httpd__conn *c)
{
	unsigned ms = c->h->o.timeout_ms < LINGER_MS ? c->h->o.timeout_ms : LINGER_MS;

	c->state = HTTPD__LINGER;
	c->shutdown.data = c;
	if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
		httpd__conn_close(c);
		return;
	}
	httpd__arm(c, ms);
	read_on(c);
}

static void on_write(uv_write_t *req, int status)
{
	struct wreq *w = req->data;
	struct httpd__conn *c = w->c;
	int last = w->last;

	free(w->owned);
	free(w);
	if (c->state == HTTPD__CLOSED)
		return;
	if (status < 0) {
		httpd__conn_close(c);
		return;
	}
	if (!last)
		return;
	if (c->keep)
		conn_resume(c);
	else
		linger(c);
}

/* Takes w (and what it owns) in every case; a failure closes c. */
static int write_bufs(struct httpd__conn *c, struct wreq *w, const uv_buf_t *bufs, unsigned n)
{
	int rc;

	w->c = c;
	w->req.data = w;
	rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs, n, on_write);
	if (rc < 0) {
		free(w->owned);
		free(w);
		httpd__conn_close(c);
	}
	return rc;
}

int httpd__write(struct httpd__conn *c, char *buf, size_t len, int last)
{
	struct wreq *w = malloc(sizeof(*w));
	uv_buf_t b = {.base = buf, .len = len};

	if (!w) {
		free(buf);
		httpd__conn_close(c);
		return -ENOMEM;
	}
	w->owned = buf;
	w->last = last;
	return write_bufs(c, w, &b, 1);
}

static int format_head(char *out, const struct answer *a, int keep)
{
	int n = snprintf(out, OUT_HEAD_CAP,
	                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	                 "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
	                 "Connection: %s\r\n%s\r\n",
	                 a->status, reason_of(a->status), a->type, a->len,
	                 keep ? "keep-alive" : "close", a->extra ? a->extra : "");

	return n > 0 && n < OUT_HEAD_CAP ? n : -ENOSPC;
}

/* Sends a's head and (unless the request was HEAD) body; takes a->owned.
 * Reading stops and the timer now bounds the write. */
static void send_answer(struct httpd__conn *c, struct answer *a)
{
	struct wreq *w = malloc(sizeof(*w));
	uv_buf_t bufs[2];
	int n;

	c->state = HTTPD__WRITE;
	read_off(c);
	httpd__arm(c, c->h->o.timeout_ms);
	if (!w || (n = format_head(w->head, a, c->keep)) < 0) {
		free(w);
		free(a->owned);
		httpd__conn_close(c);
		return;
	}
	if (c->is_head)
		a->len = 0;
	if (c->ssl) {
		httpd__tls_send(c, w->head, (size_t)n, a->body, a->len);
		free(a->owned);
		free(w);
		return;
	}
	w->owned = a->owned;
	w->last = 1;
	bufs[0] = uv_buf_init(w->head, (unsigned)n);
	bufs[1].base = (char *)a->body; /* uv_buf_init() takes an unsigned */
	bufs[1].len = a->len;
	write_bufs(c, w, bufs, a->len ? 2 : 1);
}

/* Answers with status itself (an error); why, when set, is logged. */
static void reject(struct httpd__conn *c, int status, const char *why)
{
	struct answer a = {.status = status, .type = TEXT_PLAIN, .body = reason_of(status)};

	a.len = strlen(a.body);
	if (why)
		httpd__log(c, "%d %s: %s", status, a.body, why);
	if (status == 401)
		a.extra = "WWW-Authenticate: Bearer\r\n";
	else if (status == 405)
		a.extra = "Allow: GET, HEAD\r\n";
	else
		c->keep = 0; /* the rest of the stream cannot be trusted */
	send_answer(c, &a);
}

static void respond(struct httpd__conn *c, struct httpd_response *r)
{
	struct answer a = {.status = r->status ? r->status : 200,
	                   .type = r->content_type ? r->content_type : TEXT_PLAIN,
	                   .body = r->body,
	                   .len = r->body ? r->len : 0,
	                   .owned = r->body};

	if (a.status < 200 || a.status > 599 || strlen(a.type) > 128 || strpbrk(a.type, "\r\n")) {
		httpd__log(c, "the handler answered status %d, type \"%.40s\"", a.status, a.type);
		free(a.owned);
		reject(c, 500, NULL);
		return;
	}
	send_answer(c, &a);
}

/* A complete head: answer it (the handler, once) and stop reading. */
static void dispatch(struct httpd__conn *c)
{
	struct httpd_request req = {0};
	struct httpd_response resp = {0};
	const char *why;
	int status;

	httpd__creds_refresh(c->h); /* a rotated token, on kept connections too */
	status = httpd__screen(c, &req, &why);

	c->in_request = 0;
	c->head_bytes = 0;
	if (status) {
		reject(c, status, why);
		return;
	}
	c->h->o.handler(c->h->o.data, &req, &resp);
	if (c->state == HTTPD__CLOSED) { /* the handler closed the server */
		free(resp.body);
		return;
	}
	respond(c, &resp);
}

/* Keeps bytes read past a head until its response is written. */
static void stash(struct httpd__conn *c, const char *data, size_t len)
{
	c->pend = malloc(len);
	if (!c->pend) {
		httpd__conn_close(c);
		return;
	}
	memcpy(c->pend, data, len);
	c->pend_len = len;
}

/* llhttp refused the bytes: 431 when a callback ran out of room. */
static void parse_error(struct httpd__conn *c)
{
	const char *why = llhttp_get_error_reason(&c->parser);

	if (c->reject)
		reject(c, c->reject, "request head too large");
	else
		reject(c, 400, why ? why : "bad request");
}

void httpd__feed(struct httpd__conn *c, const char *data, size_t len)
{
	while (len > 0 && c->state == HTTPD__READ) {
		llhttp_errno_t e = llhttp_execute(&c->parser, data, len);
		size_t used = len;

		if (e == HPE_PAUSED) {
			used = (size_t)(llhttp_get_error_pos(&c->parser) - data);
		} else if (e != HPE_OK) {
			parse_error(c);
			return;
		}
		if (c->in_request)
			c->head_bytes += used;
		data += used;
		len -= used;
		if (c->head_bytes > c->h->o.max_head) {
			reject(c, 431, "request head too large");
			return;
		}
		if (e == HPE_PAUSED) {
			llhttp_resume(&c->parser);
			dispatch(c);
		}
	}
	if (len > 0 && c->state == HTTPD__WRITE && c->keep)
		stash(c, data, len);
}

/* After a response on a kept connection: what was read past it first,
 * then the socket. The timer now bounds the idle time. */
static void conn_resume(struct httpd__conn *c)
{
	char *pend = c->pend;

	c->state = HTTPD__READ;
	httpd__arm(c, c->h->o.head_timeout_ms);
	c->pend = NULL;
	if (pend) {
		httpd__feed(c, pend, c->pend_len);
		free(pend);
	}
	if (c->state == HTTPD__READ && c->ssl)
		httpd__tls_pump(c);
	if (c->state == HTTPD__READ)
		read_on(c);
}

static void on_timer(uv_timer_t *t)
{
	struct httpd__conn *c = t->data;
	unsigned ms = c->state == HTTPD__READ ? c->h->o.head_timeout_ms : c->h->o.timeout_ms;

	if (c->state == HTTPD__READ && c->in_request) {
		c->in_request = 0;
		httpd__log(c, "request head not complete within %u ms", ms);
		reject(c, 408, NULL);
		return;
	}
	if (c->state == HTTPD__READ && c->ssl && !httpd__tls_ready(c))
		httpd__log(c, "TLS handshake not complete within %u ms", ms);
	else if (c->state == HTTPD__WRITE)
		httpd__log(c, "response not read within %u ms", ms);
	httpd__conn_close(c);
}

void httpd__conn_begin(struct httpd__conn *c)
{
	c->state = HTTPD__READ;
	httpd__arm(c, c->h->o.head_timeout_ms);
	read_on(c);
}
