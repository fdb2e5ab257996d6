/*
 * The asynchronous HTTP engine through which every Kubernetes API call goes.
 *
 * One engine per API server. It owns a libcurl multi handle driven by a
 * libuv loop through the multi *socket* interface (a uv_poll_t per socket
 * curl opens, one uv_timer_t for curl's timeout), so nothing on the loop
 * ever blocks and no thread is started by this module. Requests negotiate
 * HTTP/2 over TLS and are multiplexed, streams_per_conn of them on one
 * connection (PIPEWAIT), on at most max_inflight / streams_per_conn
 * connections: curl opens another only when every open one holds that
 * many. The default puts all of max_inflight (at least 100) on one
 * connection. Against a server without HTTP/2, the cap on connections
 * is also the cap on requests at once; only the default then allows all
 * of max_inflight. A scheduler that writes in bursts wants several
 * connections: kube-apiserver (Go's HTTP/2 server) reads, decrypts and
 * frames each connection's streams on one goroutine, so one connection
 * caps what it absorbs. Measured on the `large` test cluster
 * (bench/apiserver_limit, 2,000 binds, 2 cores loaded by the cluster
 * itself, 29 Nov; bench/README.md): 400 to 556 binds/s over one
 * connection at 64 streams (eight runs), 641 to 812/s over eight
 * connections (three runs), 616 to 967/s over 256 HTTP/1.1 connections
 * (nine runs).
 *
 * Order and limits. A call waits in FIFO order for one of max_inflight
 * slots; a write (POST, PUT, PATCH, DELETE) also waits for a token from a
 * token bucket (write_qps, write_burst). An urgent call
 * (KUBEAPI_REQ_URGENT) waits for neither queue nor token. A read never waits behind a write
 * that is only waiting for a token. A retry takes a slot and, for a write,
 * a token again: the server sees every attempt.
 *
 * Background calls (KUBEAPI_REQ_BACKGROUND: Events) wait in a queue of
 * their own that starts one only while no other call waits, and at most
 * max_background of them run at once. Under a burst of binds the server
 * gets the binds first and a trickle of Events, the rest once the burst
 * has passed: a bind is what a pod waits for, an Event what a person
 * reads later. At most max_background_queued wait; past that a submit is
 * refused (-ENOBUFS), as kube-scheduler's event broadcaster drops what
 * its full queue (of 1,000) cannot take. An Event's call is about 1 KiB:
 * 4 MiB at the default cap.
 *
 * Retries (KUBEAPI_REQ_RETRY only): 429, 5xx other than 501 and 505, and
 * connection-level failures (refused, reset, timed out, broken HTTP/2
 * stream). The delay before retry n (n = 1, 2, ...) is the server's
 * Retry-After when it sent one, else uniform in
 * [0, min(backoff_cap_ms, backoff_base_ms * 2^(n-1))] ("full jitter");
 * either way at most backoff_cap_ms. A retry is never started early: the
 * delay is measured on the monotonic clock. No 4xx other than 429 is ever
 * retried, and KUBEAPI_REQ_NO_RETRY_429 turns off 429 too (an Eviction
 * refused by a PodDisruptionBudget answers 429; retrying it blindly only
 * hammers the server). A stream is retried only if it failed before its
 * first chunk was delivered.
 *
 * Slots. A stream (a watch) holds its slot for as long as it runs: size
 * max_inflight for the watches plus the concurrency wanted for the rest.
 *
 * Costs (measured with curl 7.88, OpenSSL 3, nghttp2 1.52 against the
 * local kube-apiserver). Per call: one allocation holding the call (about
 * 220 bytes), its URL and a copy of the request body, plus the buffered
 * response body, grown by doubling and never beyond max_body + 1 bytes.
 * Per running attempt: about 40 KiB (a curl easy handle with its receive
 * buffer, HTTP/2 stream state, a few header strings); easy handles are
 * pooled on a free list of at most max_inflight and reused, so this memory
 * follows max_inflight, not the call rate. Per connection: 150 to 450 KiB,
 * mostly OpenSSL (context, CA store, session) and nghttp2, plus one
 * uv_poll_t; HTTP/2 keeps that to one connection per streams_per_conn
 * concurrent attempts. Queue operations are O(1);
 * scheduling a retry is O(calls waiting to retry).
 *
 * Credentials come from the conn at each attempt: the CA, client
 * certificate and key as files or in memory, the bearer token through
 * kubeapi_conn_token() (so a rotated token file is picked up), and
 * tls_server_name by addressing requests to that name and connecting to
 * the server's host and port (CURLOPT_CONNECT_TO). TLS verification is
 * off only when the conn says insecure_skip_tls_verify.
 *
 * Lifetimes. The engine borrows the loop and the conn: both must outlive
 * it, and the conn must not change while the engine runs. Everything here
 * is called on the loop's thread only.
 */
#ifndef MUSTER_KUBEAPI_HTTP_H
#define MUSTER_KUBEAPI_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <uv.h>

#include "kubeapi/conn.h"

struct kubeapi_http;      /* one per API server */
struct kubeapi_http_call; /* one request, queued, in flight or waiting to retry */

/* Zero in any field means its default (so max_retries 0 is 5: to never
 * retry, leave KUBEAPI_REQ_RETRY out of the request). Times must fit a
 * long, and backoff_base_ms must not exceed backoff_cap_ms. */
enum kubeapi_method {
	KUBEAPI_GET,
	KUBEAPI_POST,
	KUBEAPI_PUT,
	KUBEAPI_PATCH_MERGE,     /* application/merge-patch+json */
	KUBEAPI_PATCH_STRATEGIC, /* application/strategic-merge-patch+json */
	KUBEAPI_PATCH_JSON,      /* application/json-patch+json */
	KUBEAPI_DELETE,
	KUBEAPI_PATCH_APPLY, /* server-side apply: application/apply-patch+yaml (JSON is YAML) */
};

struct kubeapi_http_options {
	unsigned max_inflight;     /* concurrent attempts, default 64 */
	unsigned streams_per_conn; /* HTTP/2 streams a connection, default max(100, max_inflight) */
	double write_qps;          /* writes per second, default 500; < 0: unlimited */
	unsigned write_burst;      /* token bucket depth, default 1000 */
	uint64_t timeout_ms;       /* per attempt, default 30000; a stream's connect */
	unsigned max_retries;      /* retries after the first attempt, default 5 */
	size_t max_body;           /* cap on a buffered response body, default 64 MiB */
	uint64_t backoff_base_ms;  /* first retry's jitter ceiling, default 200 */
	uint64_t backoff_cap_ms;   /* ceiling on any retry delay, default 30000 */
	uint64_t stream_idle_ms;   /* a stream silent this long fails, default 300000 */
	unsigned max_background;   /* background calls running at once, default 4 */
	unsigned max_background_queued; /* background calls waiting, default 4096 */
	/* Called after every attempt (retries included), for metrics: its
	 * method, whether it was a stream (a watch), the HTTP status (0 when
	 * no response came) and how long it took; a stream that starts (2xx)
	 * is reported then, with usec 0, and not again. May be NULL. */
	void (*observe)(void *data, enum kubeapi_method m, int stream, long status, uint64_t usec);
	void *observe_data;
	/* The User-Agent of every request, default "muster"; copied, at most
	 * 127 bytes. Replicas that say who they are ("muster/<identity>") can
	 * be told apart in the API server's audit log and by a proxy. */
	const char *user_agent;
};

#define KUBEAPI_HTTP_DEFAULT_MAX_INFLIGHT    64u
#define KUBEAPI_HTTP_DEFAULT_STREAMS         100u
#define KUBEAPI_HTTP_DEFAULT_WRITE_QPS       500.0
#define KUBEAPI_HTTP_DEFAULT_WRITE_BURST     1000u
#define KUBEAPI_HTTP_DEFAULT_TIMEOUT_MS      30000u
#define KUBEAPI_HTTP_DEFAULT_MAX_RETRIES     5u
#define KUBEAPI_HTTP_DEFAULT_MAX_BODY        ((size_t)64 << 20)
#define KUBEAPI_HTTP_DEFAULT_BACKOFF_BASE_MS 200u
#define KUBEAPI_HTTP_DEFAULT_BACKOFF_CAP_MS  30000u
#define KUBEAPI_HTTP_DEFAULT_STREAM_IDLE_MS  300000u
#define KUBEAPI_HTTP_DEFAULT_MAX_BACKGROUND  4u
#define KUBEAPI_HTTP_DEFAULT_MAX_BG_QUEUED   4096u

/* Longest request path accepted, in bytes. */
#define KUBEAPI_HTTP_MAX_PATH 8192u

/* Retry 429 (honouring Retry-After), 5xx and connection errors. */
#define KUBEAPI_REQ_RETRY (1u << 0)
/* Deliver the body through chunk_cb as it arrives; no total timeout, but
 * the call fails with -ETIMEDOUT when the server sends under about one
 * byte a second for the idle limit (request timeout_ms, else
 * stream_idle_ms): ask for watch bookmarks to keep a quiet watch alive. */
#define KUBEAPI_REQ_STREAM (1u << 1)
/* With KUBEAPI_REQ_RETRY: hand a 429 to the caller instead of retrying. */
#define KUBEAPI_REQ_NO_RETRY_429 (1u << 2)
/* May wait behind every other call (see Background calls above). */
#define KUBEAPI_REQ_BACKGROUND (1u << 3)
/* Starts ahead of every queued call at the next free slot, and never waits
 * for a write token: for the lease, whose renewal must not wait behind a
 * burst of binds (8,000 queued binds at 400/s would hold it 20 s, twice
 * the renew deadline). kube-scheduler gives leader election a client of
 * its own for the same reason. Meant for a call every few seconds. */
#define KUBEAPI_REQ_URGENT (1u << 4)

struct kubeapi_response {
	long status;           /* HTTP status of the last attempt, 0 if none */
	int err;               /* 0, or negative errno, see below */
	const char *body;      /* buffered body, NUL-terminated; NULL for a 2xx stream */
	size_t len;            /* bytes in body, without the NUL */
	unsigned attempts;     /* attempts made, >= 1 unless cancelled while queued */
	unsigned http_version; /* of the last attempt: 10, 11, 20, 30; 0 if none */
};
/* err: -ETIMEDOUT (attempt or stream idle limit), -ECONNREFUSED,
 * -ECANCELED (kubeapi_http_cancel or kubeapi_http_close), -EMSGSIZE (body
 * over max_body), -EHOSTUNREACH (name did not resolve), -ENOMEM, -EIO
 * (TLS, protocol, reset: anything else), or what a chunk_cb returned.
 * An HTTP error status is not an err: a 404 is status 404, err 0.
 * With -EMSGSIZE, body holds what was read before the cap (at most
 * max_body bytes; none when a Content-Length over the cap came first), so
 * a caller can read the head of a document it cannot have whole. */

/** Called exactly once per submitted call, on the loop. resp and its body
 *  are valid only during the call; copy what you keep. */
typedef void (*kubeapi_http_done_cb)(void *data, const struct kubeapi_response *resp);

/** Streaming (watch): raw bytes of a 2xx response as they arrive, in
 *  order, with no framing. Return < 0 to abort the call: done_cb then gets
 *  that value as err. A non-2xx response is buffered for done_cb instead. */
typedef int (*kubeapi_http_chunk_cb)(void *data, const char *buf, size_t len);

struct kubeapi_request {
	enum kubeapi_method method;
	const char *path; /* "/api/v1/pods?limit=500", starts with '/'; copied */
	const char *body; /* JSON, or NULL; copied */
	size_t body_len;
	unsigned flags;                 /* KUBEAPI_REQ_* */
	uint64_t timeout_ms;            /* per attempt, 0 = default; a stream's idle limit */
	kubeapi_http_chunk_cb chunk_cb; /* required with KUBEAPI_REQ_STREAM */
	kubeapi_http_done_cb done_cb;   /* required */
	void *data;
};

struct kubeapi_http_stats {
	unsigned inflight;           /* attempts running now */
	unsigned max_inflight_hwm;   /* most attempts ever running at once */
	unsigned queued;             /* waiting for a slot or a write token */
	unsigned background_queued;  /* of them, background calls */
	unsigned background_running; /* background attempts running now */
	unsigned max_background_hwm; /* most background attempts ever running at once */
	unsigned retrying;           /* waiting out a retry delay */
	unsigned sockets;            /* sockets curl asked us to watch */
	unsigned sockets_hwm;        /* most sockets ever watched at once */
	unsigned easy_pooled;        /* idle easy handles on the free list */
	uint64_t submitted, completed, attempts, retries;
};

/** Create an engine for the API server described by conn. opt NULL, or
 *  any zero field, means the defaults. Returns 0 and *out, -EINVAL (bad
 *  option, conn without server, a server URL with tls_server_name that
 *  curl cannot parse), -ENOMEM. Calls curl_global_init (reference counted
 *  by curl; the last kubeapi_http_close undoes it). */
int kubeapi_http_new(uv_loop_t *loop, struct kubeapi_conn *conn,
                     const struct kubeapi_http_options *opt, struct kubeapi_http **out);

/** Append s to the request path in dst (cap bytes, NUL-terminated),
 *  percent-encoded but for RFC 3986's unreserved characters: for a token
 *  from the server (a continue token, a resourceVersion) in a query
 *  string. Stops short rather than overflow: give room for 3 x strlen(s). */
void kubeapi_query_append(char *dst, size_t cap, const char *s);

/** Queue a request. Returns 0, and *call when call is not NULL: valid
 *  until done_cb begins, for kubeapi_http_cancel(). Returns -EINVAL (bad
 *  method, path, missing callback), -EMSGSIZE (body over max_body),
 *  -ESHUTDOWN (engine closing), -EPERM (a write after kubeapi_http_fence()), -ENOBUFS (a background
 * call over max_background_queued), -ENOMEM; then done_cb is never called. Never calls done_cb
 * before returning. */
int kubeapi_http_submit(struct kubeapi_http *h, const struct kubeapi_request *req,
                        struct kubeapi_http_call **call);

/** Cancel a call: its done_cb gets -ECANCELED on a later loop iteration,
 *  unless the call had already finished, in which case it gets its result.
 *  A no-op for NULL and from within the call's own done_cb. Safe from any
 *  callback, including a chunk_cb. */
void kubeapi_http_cancel(struct kubeapi_http_call *call);

/** Whether a background call submitted now would be refused (-ENOBUFS):
 *  for a caller that would build a body for nothing. O(1). */
bool kubeapi_http_background_full(const struct kubeapi_http *h);

/** Refuse writes from now on: every write (POST, PUT, PATCH, DELETE) that
 *  is queued, waiting to retry or running is cancelled (its done_cb gets
 *  -ECANCELED on a later loop iteration), and kubeapi_http_submit()
 *  refuses a new one with -EPERM. Reads go on. For a leader that has lost
 *  its lease: what it decided is no longer its to write, and a standby may
 *  lead already. A running write may still reach the server, as any
 *  request may that was sent before the loss; none starts after. Not
 *  undone. O(calls). */
void kubeapi_http_fence(struct kubeapi_http *h);

/** The cap on a buffered response body (max_body in force). O(1). */
size_t kubeapi_http_max_body(const struct kubeapi_http *h);

/** Counters, for tests and metrics. O(1). */
void kubeapi_http_get_stats(const struct kubeapi_http *h, struct kubeapi_http_stats *out);

/** Cancel every call (each done_cb gets -ECANCELED, or its result if it had
 *  finished), close connections and uv handles, then call closed_cb(data)
 *  (if not NULL) once all memory is released. Clears *hp; safe from any
 *  callback, including a done_cb. */
void kubeapi_http_close(struct kubeapi_http **hp, void (*closed_cb)(void *), void *data);

/*
 * The pure pieces of the policy above: no I/O, no clock of their own, no
 * allocation. Public so that callers can show or log the schedule, and so
 * that the unit tests drive them directly.
 */

/** Upper bound of the delay before retry `retry` (1 for the first):
 *  min(cap_ms, base_ms * 2^(retry-1)), never overflowing. */
uint64_t kubeapi_http_backoff_ceiling_ms(unsigned retry, uint64_t base_ms, uint64_t cap_ms);

/** Full-jitter delay before retry `retry`: rnd mapped into
 *  [0, kubeapi_http_backoff_ceiling_ms()]. rnd is any 64-bit random value. */
uint64_t kubeapi_http_backoff_ms(unsigned retry, uint64_t base_ms, uint64_t cap_ms, uint64_t rnd);

/** Parse a Retry-After value s[0..len) (no NUL needed): delta-seconds
 *  ("120") or an HTTP-date in any of the three forms of RFC 9110, read
 *  against the wall-clock time `now`. A date in the past is 0. Returns 0 and
 *  *ms, -EINVAL (malformed or longer than 64 bytes), -ERANGE (more than
 *  UINT32_MAX seconds). */
int kubeapi_http_retry_after_ms(const char *s, size_t len, time_t now, uint64_t *ms);

/** A token bucket on a caller-supplied millisecond clock. */
struct kubeapi_http_bucket {
	double tokens;    /* available now, <= burst */
	double rate;      /* tokens per second; < 0: unlimited */
	double burst;     /* depth */
	uint64_t last_ms; /* when tokens was last brought up to date */
};

/** A full bucket at now_ms. */
void kubeapi_http_bucket_init(struct kubeapi_http_bucket *b, double rate, unsigned burst,
                              uint64_t now_ms);

/** Milliseconds until a token is available at now_ms: 0 if one is. Rounded
 *  up, so waiting that long always suffices. Refills as a side effect. */
uint64_t kubeapi_http_bucket_wait_ms(struct kubeapi_http_bucket *b, uint64_t now_ms);

/** Take a token at now_ms: 0, or -EAGAIN if none is available. */
int kubeapi_http_bucket_take(struct kubeapi_http_bucket *b, uint64_t now_ms);

/** How a method goes on the wire and into curl. */
struct kubeapi_http_method_info {
	const char *name;           /* "PATCH" */
	const char *custom_request; /* CURLOPT_CUSTOMREQUEST, or NULL for curl's GET/POST */
	const char *content_type;   /* of a request body, NULL for GET */
	unsigned write : 1;         /* counted against write_qps */
	unsigned body_required : 1; /* an empty body is sent when none is given */
};

/** The row for m, or NULL for a value outside enum kubeapi_method. */
const struct kubeapi_http_method_info *kubeapi_http_method_info(enum kubeapi_method m);

/** What a libcurl result code means here: 0 for CURLE_OK, else a negative
 *  errno as listed for kubeapi_response.err; *retryable (may be NULL) says
 *  whether KUBEAPI_REQ_RETRY retries it. */
int kubeapi_http_curl_errno(int curl_code, int *retryable);

/** Whether a finished attempt is worth retrying under flags: status is the
 *  HTTP status (0 if none), err the mapped error, err_retryable from
 *  kubeapi_http_curl_errno(). Ignores attempt counts and streams. */
int kubeapi_http_should_retry(unsigned flags, long status, int err, int err_retryable);

#endif /* MUSTER_KUBEAPI_HTTP_H */
