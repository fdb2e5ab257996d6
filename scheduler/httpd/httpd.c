/*
 * The debug HTTP server: HTTP/1.1 on the daemon's libuv loop. This file:
 * starting, accepting, closing; conn.c: a connection's reads, writes and
 * timer; request.c: the llhttp callbacks and the checks of a request;
 * tls.c: TLS over memory BIOs; creds.c: the token and the certificate,
 * read again when their files change.
 *
 * Requests are parsed by llhttp, not by hand: request parsing is where
 * smuggling and overflow bugs live, and llhttp (Node.js's parser) is
 * maintained, fuzzed, allocates nothing and costs ~100 bytes of state.
 *
 * One request at a time per connection. llhttp pauses when a request's
 * head is complete; the handler runs; reading stops until the response is
 * written; then the bytes read past that head (a pipelined request) are
 * fed first. So a client holds at most one read's worth of unparsed bytes,
 * and no client can make the loop wait: sockets are non-blocking and the
 * handler is the only synchronous work.
 *
 * Bounds: max_clients connections, max_per_peer from one address (room
 * is made by closing the oldest idle or slow connection of the address
 * holding the most, see httpd.h); a head of max_head bytes, counted as fed to the parser, and of it
 * only the target and the Accept and Authorization values are copied, into a buffer of that size;
 * no body; one timer per connection, re-armed for each phase (handshake and head, idle keep-alive,
 * response write, closing linger); at most ACCEPT_PER_TURN accepts per loop turn, so clients
 * that reconnect as fast as they are closed cannot hold the loop. Making room costs one pass over
 * the connections per accept (a 6 KiB tally on the stack), ~1 us at 64.
 *
 * Cost per connection: 0.8 KiB of state, the max_head buffer (16 KiB by
 * default), the bytes left over from a read while a response is written
 * (< 16 KiB) and the response itself until the kernel has it. With TLS
 * also an SSL: ~9 KiB idle (its record buffers are released), ~34 KiB
 * more while records are in flight, and the response's ciphertext. The
 * server itself has two 16 KiB buffers that every read goes through.
 */
#include "scheduler/httpd/httpd.h"
#include "scheduler/httpd/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

enum {
	DEFAULT_CLIENTS = 64,
	DEFAULT_PER_PEER = 16,
	DEFAULT_HEAD = 16 * 1024,
	DEFAULT_TIMEOUT_MS = 10000,
	DEFAULT_HEAD_TIMEOUT_MS = 5000,
	DEFAULT_TLS_PER_S = 100,
	BACKLOG = 511,        /* as nginx and Redis: a storm must not drop a probe's SYN */
	ACCEPT_PER_TURN = 32, /* accepts per loop turn, see on_connection */
	LOG_CAP = 256,
	SHED_LOG_S = 10, /* at most one "closed to keep room" line per this */
	TALLY = 256,     /* > 2 * max_clients: the peer tally's open addressing */
};

int httpd__fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static void peer_name(const struct httpd__conn *c, char *out, size_t cap)
{
	struct sockaddr_storage sa = {0}; /* "?:0" when the peer is gone */
	int len = sizeof(sa);
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &len) == 0) {
		if (sa.ss_family == AF_INET6) {
			const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&sa;
			uv_ip6_name(s6, ip, sizeof(ip));
			port = ntohs(s6->sin6_port);
		} else {
			const struct sockaddr_in *s4 = (const struct sockaddr_in *)&sa;
			uv_ip4_name(s4, ip, sizeof(ip));
			port = ntohs(s4->sin_port);
		}
	}
	snprintf(out, cap, sa.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", ip, port);
}

void httpd__log(const struct httpd__conn *c, const char *fmt, ...)
{
	const struct httpd *h = c->h;
	char peer[INET6_ADDRSTRLEN + 8], msg[LOG_CAP];
	char what[LOG_CAP - sizeof(peer) - 16];
	va_list ap;

	if (!h->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	peer_name(c, peer, sizeof(peer));
	snprintf(msg, sizeof(msg), "httpd: %s: %s", peer, what);
	h->o.log(h->o.log_data, msg);
}

__attribute__((format(printf, 2, 3))) static void server_log(const struct httpd *h, const char *fmt,
                                                             ...)
{
	char msg[LOG_CAP] = "httpd: ";
	va_list ap;

	if (!h->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg + 7, sizeof(msg) - 7, fmt, ap);
	va_end(ap);
	h->o.log(h->o.log_data, msg);
}

static void server_free(struct httpd *h)
{
	httpd__creds_free(h);
	free(h);
}

/* Called as each handle of the server closes: the last one frees it. */
static void server_release(struct httpd *h)
{
	void (*cb)(void *) = h->closed_cb;
	void *data = h->closed_data;

	if (--h->open > 0 || !h->closing)
		return;
	server_free(h);
	if (cb)
		cb(data);
}

/* The listener's and resume's close callback. */
static void on_server_handle_closed(uv_handle_t *handle)
{
	server_release(handle->data);
}

static void on_conn_closed(uv_handle_t *handle)
{
	struct httpd__conn *c = handle->data;
	struct httpd *h = c->h;

	if (--c->handles > 0)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	httpd__tls_conn_free(c);
	free(c->req);
	free(c->pend);
	free(c);
	server_release(h);
}

/* Closes at once; pending writes fail with ECANCELED before the memory
 * goes (libuv calls them before the close callback). */
void httpd__conn_close(struct httpd__conn *c)
{
	if (c->state == HTTPD__CLOSED)
		return;
	c->state = HTTPD__CLOSED;
	if (c->counted) {
		c->counted = 0;
		c->h->served--;
	}
	uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
	uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

static struct httpd__conn *conn_new(struct httpd *h)
{
	struct httpd__conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (uv_tcp_init(h->loop, &c->tcp) < 0) {
		free(c);
		return NULL;
	}
	uv_timer_init(h->loop, &c->timer);
	c->h = h;
	c->tcp.data = c;
	c->timer.data = c;
	c->handles = 2;
	c->next = h->conns;
	if (h->conns)
		h->conns->prev = c;
	h->conns = c;
	h->open++;
	return c;
}

void httpd__shed(struct httpd *h, const char *why)
{
	uint64_t now_s = uv_now(h->loop) / 1000;

	h->shed++;
	if (h->shed_logged_at_s && now_s < h->shed_logged_at_s + SHED_LOG_S)
		return;
	server_log(h,
	           "%u connection(s) closed or refused to keep room (last: %s; at most %u in all, "
	           "%u per address)",
	           h->shed, why, h->o.max_clients, h->o.max_per_peer);
	h->shed = 0;
	h->shed_logged_at_s = now_s ? now_s : 1;
}

int httpd__tls_budget(struct httpd *h)
{
	uint64_t now = uv_now(h->loop);
	double cap = h->o.tls_handshakes_per_s;

	h->tls_tokens += (double)(now - h->tls_refilled_ms) * cap / 1000.0;
	if (h->tls_tokens > cap)
		h->tls_tokens = cap;
	h->tls_refilled_ms = now;
	if (h->tls_tokens < 1.0)
		return -EBUSY;
	h->tls_tokens -= 1.0;
	return 0;
}

/* The peer's IP address (not its port) as the tally compares it. */
static void peer_key(uv_tcp_t *tcp, unsigned char key[17])
{
	struct sockaddr_storage sa = {0};
	int len = sizeof(sa);

	memset(key, 0, 17);
	if (uv_tcp_getpeername(tcp, (struct sockaddr *)&sa, &len) != 0)
		return;
	key[0] = (unsigned char)sa.ss_family;
	if (sa.ss_family == AF_INET6)
		memcpy(key + 1, &((struct sockaddr_in6 *)&sa)->sin6_addr, 16);
	else
		memcpy(key + 1, &((struct sockaddr_in *)&sa)->sin_addr, 4);
}

/* Connections per address, and the oldest one of each that may give way:
 * one pass over at most max_clients connections. */
struct tally {
	const unsigned char *key;
	unsigned n;
	struct httpd__conn *oldest;
};

static struct tally *tally_slot(struct tally *t, const unsigned char key[17])
{
	size_t i = 0;

	for (size_t k = 0; k < 17; k++)
		i = i * 31 + key[k];
	for (i %= TALLY; t[i].key && memcmp(t[i].key, key, 17) != 0; i = (i + 1) % TALLY)
		;
	t[i].key = key;
	return &t[i];
}

/* Between requests or in the middle of one's head (or the handshake):
 * nothing of ours is lost by closing it. */
static int may_give_way(const struct httpd__conn *c)
{
	return c->counted && c->state == HTTPD__READ;
}

static void tally_count(const struct httpd *h, struct tally *t)
{
	for (struct httpd__conn *c = h->conns; c; c = c->next) {
		struct tally *e;

		if (!c->counted)
			continue;
		e = tally_slot(t, c->peer);
		e->n++;
		if (may_give_way(c) && (!e->oldest || c->seq < e->oldest->seq))
			e->oldest = c;
	}
}

/* Who gives way for newcomer c: NULL when it fits as is; *refuse when it
 * cannot come in. */
static struct httpd__conn *make_room(struct httpd *h, const struct httpd__conn *c, int *refuse)
{
	struct tally t[TALLY] = {0}, *mine, *top = NULL;

	*refuse = 0;
	tally_count(h, t);
	mine = tally_slot(t, c->peer);
	if (mine->n >= h->o.max_per_peer) {
		*refuse = !mine->oldest;
		return mine->oldest;
	}
	if (h->served < h->o.max_clients)
		return NULL;
	for (size_t i = 0; i < TALLY; i++)
		if (t[i].key && t[i].oldest && t[i].n > mine->n + 1 && (!top || t[i].n > top->n))
			top = &t[i];
	*refuse = !top;
	return top ? top->oldest : NULL;
}

/* An accepted connection within max_clients: buffers, parser, TLS. */
static int conn_serve(struct httpd__conn *c)
{
	struct httpd *h = c->h;

	c->counted = 1;
	h->served++;
	/* Target and kept values, each with its NUL, fit in the head. */
	c->req_cap = h->o.max_head + 4;
	c->req = malloc(c->req_cap);
	if (!c->req)
		return -ENOMEM;
	llhttp_init(&c->parser, HTTP_REQUEST, &httpd__parser_settings);
	c->parser.data = c;
	if (h->tls && httpd__tls_conn_new(c) < 0)
		return -ENOMEM;
	uv_tcp_nodelay(&c->tcp, 1);
	httpd__conn_begin(c);
	return 0;
}

/* Takes the connection libuv holds for us, makes room for it, serves it. */
static void accept_one(struct httpd *h)
{
	struct httpd__conn *c, *victim;
	int refuse;

	c = conn_new(h);
	if (!c) {
		/* libuv keeps the socket and stops listening until it is
		 * accepted; nothing better to do without memory. */
		server_log(h, "accept: out of memory");
		return;
	}
	if (uv_accept((uv_stream_t *)&h->listener, (uv_stream_t *)&c->tcp) < 0) {
		httpd__conn_close(c);
		return;
	}
	h->turn_accepts++;
	httpd__creds_refresh(h); /* before conn_serve() takes h->tls */
	peer_key(&c->tcp, c->peer);
	c->seq = h->next_seq++;
	victim = make_room(h, c, &refuse);
	if (refuse) {
		httpd__shed(h, "refused a newcomer: every connection is busy answering");
		httpd__conn_close(c);
		return;
	}
	if (victim) {
		httpd__shed(h, "closed an idle or slow connection for a newcomer");
		httpd__conn_close(victim);
	}
	if (conn_serve(c) < 0) {
		httpd__log(c, "refused: out of memory");
		httpd__conn_close(c);
	}
}

/* The next turn: the connection left waiting first, and libuv watches
 * the listener again. */
static void on_resume(uv_idle_t *idle)
{
	struct httpd *h = idle->data;

	uv_idle_stop(idle);
	h->turn_accepts = 0;
	h->turn_ms = uv_now(h->loop);
	accept_one(h);
}

/*
 * libuv accepts in a loop until the kernel's queue is empty. Clients that
 * reconnect as fast as they are closed keep it from ever emptying: the
 * loop would never reach a watch read, a timer or the close callbacks
 * that free the connections closed to keep room (one such storm held the
 * loop for minutes and grew to 650 MB). So a turn accepts at most
 * ACCEPT_PER_TURN; leaving the next one unaccepted makes libuv stop
 * watching the listener until on_resume takes it, one turn later. A
 * client in the kernel's queue waits at most queue / ACCEPT_PER_TURN turns.
 */
static void on_connection(uv_stream_t *server, int status)
{
	struct httpd *h = server->data;
	uint64_t now = uv_now(h->loop);

	if (status < 0) {
		server_log(h, "accept: %s", uv_strerror(status));
		return;
	}
	if (now != h->turn_ms) {
		h->turn_ms = now;
		h->turn_accepts = 0;
	}
	if (h->turn_accepts >= ACCEPT_PER_TURN) {
		uv_idle_start(&h->resume, on_resume);
		return;
	}
	accept_one(h);
}

static int parse_port(const char *s, int *port)
{
	long v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || (v = v * 10 + (*s - '0')) > 65535)
			return -EINVAL;
	}
	*port = (int)v;
	return 0;
}

/* "host:port" or "[v6]:port", numeric ("localhost" is 127.0.0.1: no DNS
 * on the loop). *loopback says whether it stays on this host. */
static int parse_addr(const char *addr, struct sockaddr_storage *sa, int *loopback)
{
	char host[64];
	const char *start = addr, *colon;
	size_t len;
	int port, v6 = addr[0] == '[';

	if (v6) {
		const char *end = strchr(addr, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		start = addr + 1;
		colon = end + 1;
		len = (size_t)(end - start);
	} else {
		colon = strchr(addr, ':');
		if (!colon || strchr(colon + 1, ':'))
			return -EINVAL;
		len = (size_t)(colon - addr);
	}
	if (len == 0 || len >= sizeof(host) || parse_port(colon + 1, &port) < 0)
		return -EINVAL;
	memcpy(host, start, len);
	host[len] = '\0';
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		if (uv_ip6_addr(host, port, s6) != 0)
			return -EINVAL;
		*loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
		return 0;
	}
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	if (uv_ip4_addr(host, port, (struct sockaddr_in *)sa) != 0)
		return -EINVAL;
	*loopback = (ntohl(((struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	return 0;
}

static int check_options(const struct httpd_options *o, struct sockaddr_storage *sa, char *err,
                         size_t errlen)
{
	int loopback = 0;

	if (!o || !o->handler)
		return httpd__fail(err, errlen, -EINVAL, "httpd: no handler");
	memset(sa, 0, sizeof(*sa));
	if (!o->addr || parse_addr(o->addr, sa, &loopback) < 0)
		return httpd__fail(
		    err, errlen, -EINVAL,
		    "httpd: bad address \"%s\": want IP:PORT or [IPV6]:PORT, numeric",
		    o->addr ? o->addr : "");
	if (!o->cert_file != !o->key_file)
		return httpd__fail(
		    err, errlen, -EINVAL,
		    "httpd: TLS needs both a certificate (--debug-tls-cert) and a key "
		    "(--debug-tls-key)");
	if (!loopback && !o->public_plain && (!o->cert_file || !o->token_file))
		return httpd__fail(
		    err, errlen, -EINVAL,
		    "httpd: %s is not a loopback address; serving beyond this host needs "
		    "TLS (--debug-tls-cert, --debug-tls-key) and a bearer token "
		    "(--debug-token-file)",
		    o->addr);
	return 0;
}

static int listen_on(struct httpd *h, const struct sockaddr_storage *sa)
{
	struct sockaddr_storage name;
	int len = sizeof(name), rc;

	if ((rc = uv_tcp_bind(&h->listener, (const struct sockaddr *)sa, 0)) < 0 ||
	    (rc = uv_listen((uv_stream_t *)&h->listener, BACKLOG, on_connection)) < 0 ||
	    (rc = uv_tcp_getsockname(&h->listener, (struct sockaddr *)&name, &len)) < 0)
		return rc;
	h->port = ntohs(name.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&name)->sin6_port
	                                           : ((struct sockaddr_in *)&name)->sin_port);
	return 0;
}

static void apply_defaults(struct httpd_options *o)
{
	if (!o->max_clients)
		o->max_clients = DEFAULT_CLIENTS;
	if (!o->max_head)
		o->max_head = DEFAULT_HEAD;
	if (!o->timeout_ms)
		o->timeout_ms = DEFAULT_TIMEOUT_MS;
	if (!o->max_per_peer)
		o->max_per_peer = DEFAULT_PER_PEER;
	if (!o->head_timeout_ms)
		o->head_timeout_ms = o->timeout_ms < DEFAULT_HEAD_TIMEOUT_MS
		                         ? o->timeout_ms
		                         : DEFAULT_HEAD_TIMEOUT_MS;
	if (!o->tls_handshakes_per_s)
		o->tls_handshakes_per_s = DEFAULT_TLS_PER_S;
	/* Only used by httpd_start(): the caller's strings are not kept. */
	o->addr = o->cert_file = o->key_file = o->token_file = NULL;
}

int httpd_start(uv_loop_t *loop, const struct httpd_options *o, struct httpd **out, char *err,
                size_t errlen)
{
	struct sockaddr_storage sa;
	struct httpd *h;
	int rc;

	*out = NULL;
	if ((rc = check_options(o, &sa, err, errlen)) < 0)
		return rc;
	if (!(h = calloc(1, sizeof(*h))))
		return httpd__fail(err, errlen, -ENOMEM, "httpd: out of memory");
	h->loop = loop;
	h->o = *o;
	apply_defaults(&h->o);
	h->tls_tokens = h->o.tls_handshakes_per_s;
	h->tls_refilled_ms = uv_now(loop);
	if ((rc = httpd__creds_load(h, o, err, errlen)) < 0)
		goto fail_free;
	if ((rc = uv_tcp_init(loop, &h->listener)) < 0) {
		httpd__fail(err, errlen, rc, "httpd: %s", uv_strerror(rc));
		goto fail_free;
	}
	h->listener.data = h;
	uv_idle_init(loop, &h->resume);
	h->resume.data = h;
	h->open = 2;
	if ((rc = listen_on(h, &sa)) < 0)
		goto fail_close;
	*out = h;
	return 0;

fail_close:
	httpd__fail(err, errlen, rc, "httpd: cannot listen on %s: %s", o->addr, uv_strerror(rc));
	h->closing = 1;
	uv_close((uv_handle_t *)&h->listener, on_server_handle_closed);
	uv_close((uv_handle_t *)&h->resume, on_server_handle_closed);
	return rc;
fail_free:
	server_free(h);
	return rc;
}

int httpd_port(const struct httpd *h)
{
	return h->port;
}

void httpd_close(struct httpd **hp, void (*closed_cb)(void *), void *data)
{
	struct httpd *h = *hp;
	struct httpd__conn *c;

	if (!h)
		return;
	*hp = NULL;
	h->closing = 1;
	h->closed_cb = closed_cb;
	h->closed_data = data;
	uv_close((uv_handle_t *)&h->listener, on_server_handle_closed);
	uv_close((uv_handle_t *)&h->resume, on_server_handle_closed);
	for (c = h->conns; c; c = c->next)
		httpd__conn_close(c);
}
