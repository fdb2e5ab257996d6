/*
 * Shared by the files of the HTTP engine (http.c, http_run.c, http_easy.c,
 * http_sock.c) and nothing else: the state of the engine and of a call,
 * the intrusive lists that hold calls, and the functions one part of the
 * engine calls in another. The design is described at the top of http.c;
 * comments say process() for kubeapi__http_process().
 */
#ifndef MUSTER_KUBEAPI_HTTP_INTERNAL_H
#define MUSTER_KUBEAPI_HTTP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <uv.h>

#include "base/buf.h"
#include "kubeapi/http.h"

#define KUBEAPI__CONTAINER_OF(ptr, type, member)                                                   \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* Intrusive circular doubly linked list; a detached link points to itself. */
struct kubeapi__link {
	struct kubeapi__link *prev, *next;
};

static inline void kubeapi__list_init(struct kubeapi__link *l)
{
	l->prev = l->next = l;
}

static inline int kubeapi__list_empty(const struct kubeapi__link *l)
{
	return l->next == l;
}

static inline void kubeapi__list_insert_after(struct kubeapi__link *pos, struct kubeapi__link *n)
{
	n->prev = pos;
	n->next = pos->next;
	pos->next->prev = n;
	pos->next = n;
}

static inline void kubeapi__list_remove(struct kubeapi__link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	kubeapi__list_init(n);
}

enum kubeapi__call_state {
	KUBEAPI__CALL_QUEUED,
	KUBEAPI__CALL_RUNNING,
	KUBEAPI__CALL_RETRYING,
	KUBEAPI__CALL_DONE
};

/* How the current attempt's body is handled, decided at its first byte. */
enum kubeapi__body_mode { KUBEAPI__BODY_UNDECIDED, KUBEAPI__BODY_BUFFER, KUBEAPI__BODY_STREAM };

struct kubeapi_http_call {
	struct kubeapi__link link; /* on one list of h, by state */
	struct kubeapi_http *h;
	enum kubeapi__call_state state;
	enum kubeapi_method method;
	unsigned flags;
	uint64_t seq;         /* submission order */
	uint64_t timeout_ms;  /* per attempt, or a stream's idle limit */
	uint64_t retry_at_ms; /* RETRYING: monotonic due time */
	kubeapi_http_chunk_cb chunk_cb;
	kubeapi_http_done_cb done_cb;
	void *data;
	char *url;  /* in this allocation */
	char *body; /* in this allocation, NUL-terminated */
	size_t body_len;

	/* The current (or last) attempt. */
	CURL *easy; /* RUNNING only */
	struct curl_slist *headers;
	enum kubeapi__body_mode mode;
	struct buf resp; /* response body, max_body; the memory is kept across attempts */
	long status;
	unsigned http_version;
	uint64_t attempt_us; /* the last attempt's duration */
	int abort_err;       /* set by a callback that stopped the transfer */
	int cancelled;       /* RUNNING: reap at the next process() */
	int has_retry_after;
	uint64_t retry_after_ms;
	unsigned attempts;
	int err; /* DONE: the result */
};

struct kubeapi_http {
	uv_loop_t *loop;
	struct kubeapi_conn *conn;
	struct kubeapi_http_options opt;
	char *base;                    /* URL prefix of every call */
	struct curl_slist *connect_to; /* with tls_server_name: where base really is */
	CURLM *multi;
	uv_timer_t curl_timer; /* curl's timeout */
	uv_timer_t wake;       /* a kick, the next write token or the next retry */
	struct kubeapi__link urgent, reads, writes, background, running, retrying, done, socks;
	struct kubeapi_http_bucket bucket;
	CURL **pool; /* idle easy handles, at most opt.max_inflight */
	unsigned npool;
	uint64_t rng;
	uint64_t next_seq;
	unsigned ncalls;       /* calls allocated and not yet freed */
	unsigned ncancel;      /* RUNNING calls flagged cancelled since process() */
	unsigned open_handles; /* uv handles not yet closed */
	int kicked, closing, torn_down;
	int fenced; /* kubeapi_http_fence(): no write starts again */
	/* CURLMOPT_MAX_HOST_CONNECTIONS in force (0: none), until a server
	 * without HTTP/2 lifts it (http_run.c, detach()). */
	long conn_cap;
	char user_agent[128];
	void (*closed_cb)(void *);
	void *closed_data;
	struct kubeapi_http_stats stats;
};

static inline uint64_t kubeapi__http_now_ms(void)
{
	return uv_hrtime() / 1000000u;
}

static inline struct kubeapi_http_call *kubeapi__http_call_of(struct kubeapi__link *l)
{
	return KUBEAPI__CONTAINER_OF(l, struct kubeapi_http_call, link);
}

/* ---- http_run.c: queues, attempts, process() -------------------------- */

/* Append c to its queue (background by its flag, else writes or reads by
 * method), or put it at the head with front; c becomes QUEUED. */
void kubeapi__http_enqueue(struct kubeapi_http *h, struct kubeapi_http_call *c, int front);

/* Take a QUEUED or RETRYING c off its list. */
void kubeapi__http_dequeue(struct kubeapi_http *h, struct kubeapi_http_call *c);

/* Runs from a uv callback soon: the only way entry points get work done. */
void kubeapi__http_kick(struct kubeapi_http *h);

/* c is DONE with result err; its done_cb runs in the next process(). */
void kubeapi__http_complete(struct kubeapi_http_call *c, int err);

/* The one place where work happens: reap cancelled and finished attempts,
 * promote due retries, start calls into free slots, deliver done calls,
 * tear down a closing engine with no calls left. Runs only from a uv
 * callback and never re-enters itself. */
void kubeapi__http_process(struct kubeapi_http *h);

/* ---- http_easy.c: easy handles ---------------------------------------- */

/* An idle easy handle from the free list, or a new one; NULL when out of
 * memory. */
CURL *kubeapi__http_easy_get(struct kubeapi_http *h);

/* Back to the free list (at most opt.max_inflight kept), else cleaned up. */
void kubeapi__http_easy_put(struct kubeapi_http *h, CURL *e);

/* Reset e and configure it for c's next attempt: sets c->headers. Returns
 * 0, -ENOMEM or -EINVAL (then c->headers is NULL). */
int kubeapi__http_setup_easy(struct kubeapi_http_call *c, CURL *e);

/* ---- http_sock.c: curl <-> uv ----------------------------------------- */

/* Point curl's socket and timer callbacks at h and turn on HTTP/2
 * multiplexing. 0 or -EINVAL. */
int kubeapi__http_setup_multi(struct kubeapi_http *h);

/* No calls are left: release curl, then the uv handles. */
void kubeapi__http_teardown(struct kubeapi_http *h);

/* ---- http.c: life cycle ----------------------------------------------- */

/* The last uv handle of h has closed: free h, then call its closed_cb. */
void kubeapi__http_free_engine(struct kubeapi_http *h);

#endif /* MUSTER_KUBEAPI_HTTP_INTERNAL_H */
