/*
 * The HTTP engine's glue between curl and libuv (see http.c for the
 * design). curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION:
 * one uv_poll_t each, found again through curl_multi_assign) and when to
 * call it back (CURLMOPT_TIMERFUNCTION: one uv_timer_t); both end in
 * curl_multi_socket_action() and a kubeapi__http_process() run. Neither
 * callback ever calls back into curl. Here too is the end of an engine:
 * teardown stops watching sockets, cleans up curl and closes the two
 * timers; the last uv close callback frees the engine.
 *
 * Cost. One allocation per socket curl opens, freed in its uv close
 * callback. Each socket or timer event costs one
 * curl_multi_socket_action() and one process() run.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <curl/curl.h>
#include <uv.h>

#include "kubeapi/http.h"
#include "kubeapi/http_internal.h"

/* A socket curl asked us to watch. */
struct sock {
	uv_poll_t poll;
	struct kubeapi__link link; /* on h->socks while open */
	struct kubeapi_http *h;
	curl_socket_t fd;
};

/* ---- curl's callbacks: sockets and its timer -------------------------- */

static void drive(struct kubeapi_http *h, curl_socket_t fd, int events)
{
	int running;

	curl_multi_socket_action(h->multi, fd, events, &running);
	kubeapi__http_process(h);
}

static void on_curl_timeout(uv_timer_t *t)
{
	drive(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_timer(CURLM *m, long timeout_ms, void *userp)
{
	struct kubeapi_http *h = userp;

	(void)m;
	if (h->torn_down)
		return 0;
	if (timeout_ms < 0)
		uv_timer_stop(&h->curl_timer);
	else
		uv_timer_start(&h->curl_timer, on_curl_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct sock *s = KUBEAPI__CONTAINER_OF(p, struct sock, poll);
	int ev = 0;

	if (status < 0)
		ev = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		ev |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		ev |= CURL_CSELECT_OUT;
	drive(s->h, s->fd, ev);
}

static void on_handle_closed(struct kubeapi_http *h)
{
	if (--h->open_handles == 0 && h->torn_down)
		kubeapi__http_free_engine(h);
}

static void on_sock_closed(uv_handle_t *handle)
{
	struct sock *s = KUBEAPI__CONTAINER_OF(handle, struct sock, poll);
	struct kubeapi_http *h = s->h;

	free(s);
	on_handle_closed(h);
}

static struct sock *sock_open(struct kubeapi_http *h, curl_socket_t fd)
{
	struct sock *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (uv_poll_init_socket(h->loop, &s->poll, fd) < 0) {
		free(s);
		return NULL;
	}
	s->h = h;
	s->fd = fd;
	kubeapi__list_insert_after(&h->socks, &s->link);
	h->open_handles++;
	if (++h->stats.sockets > h->stats.sockets_hwm)
		h->stats.sockets_hwm = h->stats.sockets;
	curl_multi_assign(h->multi, fd, s);
	return s;
}

/* uv_close stops the poll now, so curl may reuse the fd at once. */
static void sock_close(struct kubeapi_http *h, struct sock *s)
{
	kubeapi__list_remove(&s->link);
	h->stats.sockets--;
	uv_close((uv_handle_t *)&s->poll, on_sock_closed);
}

static int on_curl_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct kubeapi_http *h = userp;
	struct sock *s = socketp;
	int events = 0;

	(void)e;
	if (h->torn_down)
		return 0;
	if (what == CURL_POLL_REMOVE) {
		if (s)
			sock_close(h, s);
		return 0;
	}
	if (!s && !(s = sock_open(h, fd)))
		return -1;
	if (what & CURL_POLL_IN)
		events |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		events |= UV_WRITABLE;
	return uv_poll_start(&s->poll, events, on_poll) == 0 ? 0 : -1;
}

/* ---- Setting up and tearing down ------------------------------------ */

int kubeapi__http_setup_multi(struct kubeapi_http *h)
{
	CURLM *m = h->multi;
	long streams = (long)h->opt.streams_per_conn;
	/* Without a cap, a burst opens a connection for nearly every attempt
	 * past the first connection's streams: curl knows the new ones will
	 * multiplex only once their handshakes end (13 connections for 16
	 * attempts at 4 streams, measured). A waiting attempt takes a free
	 * stream on an open connection when one finishes. No cap when all of
	 * max_inflight fit on one connection, so a server without HTTP/2
	 * still gets max_inflight connections. */
	long conns = streams < (long)h->opt.max_inflight
	                 ? ((long)h->opt.max_inflight + streams - 1) / streams
	                 : 0L;
	CURLMcode rc = CURLM_OK;

#define MSETOPT(opt, val) (rc == CURLM_OK ? (rc = curl_multi_setopt(m, opt, val)) : rc)
	MSETOPT(CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	MSETOPT(CURLMOPT_SOCKETDATA, (void *)h);
	MSETOPT(CURLMOPT_TIMERFUNCTION, on_curl_timer);
	MSETOPT(CURLMOPT_TIMERDATA, (void *)h);
	MSETOPT(CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	MSETOPT(CURLMOPT_MAX_CONCURRENT_STREAMS, streams);
	MSETOPT(CURLMOPT_MAX_HOST_CONNECTIONS, conns);
#undef MSETOPT
	h->conn_cap = conns;
	return rc == CURLM_OK ? 0 : -EINVAL;
}

static void on_timer_closed(uv_handle_t *t)
{
	on_handle_closed(t->data);
}

void kubeapi__http_teardown(struct kubeapi_http *h)
{
	h->torn_down = 1;
	while (!kubeapi__list_empty(&h->socks))
		sock_close(h, KUBEAPI__CONTAINER_OF(h->socks.next, struct sock, link));
	curl_multi_cleanup(h->multi); /* its socket callbacks are ignored now */
	h->multi = NULL;
	while (h->npool > 0)
		curl_easy_cleanup(h->pool[--h->npool]);
	uv_close((uv_handle_t *)&h->curl_timer, on_timer_closed);
	uv_close((uv_handle_t *)&h->wake, on_timer_closed);
}
