/*
 * A small HTTP/1.1 server on a libuv loop, for /healthz, /metrics and
 * /debug: requests are parsed by llhttp, answered by one synchronous
 * handler, and every buffer and wait is bounded.
 *
 * Bounds (struct httpd_options, 0 = default): at most max_clients
 * connections and max_per_peer from one IP address, a request head of at
 * most max_head bytes (431 past it), no request body (413 for one), a
 * complete head (and TLS handshake) within head_timeout_ms of the accept
 * or of the last response (408/close; an idle keep-alive connection just
 * closes), a response read within timeout_ms. Only GET and HEAD are
 * served (405 otherwise).
 *
 * Room for a newcomer: when its address already has max_per_peer
 * connections, the oldest of them that is between requests or still
 * sending a head is closed for it; when the server is full, the same
 * happens to the address holding the most connections, if it holds more
 * than the newcomer's would. So a client that opens connections cannot
 * keep one from another address out, and an idle or slowloris connection
 * is what gives way, never a response being written. New TLS sessions are
 * bounded by a budget per second (each costs ~1.4 ms of the loop); past it
 * a connection is closed before its handshake.
 *
 * Security: an address other than loopback needs TLS (cert_file and
 * key_file, OpenSSL) and a bearer token (token_file; each request needs
 * "Authorization: Bearer <token>", compared in constant time, 401
 * otherwise): httpd_start() refuses such an address without both. On
 * loopback both are optional; a token, when given, is always required,
 * except for /healthz and /readyz, which answer without one (kubelet
 * probes cannot send a token), and /debug/ (the page a browser loads,
 * static HTML that then asks for the token). So those must not reveal
 * anything.
 *
 * Every response carries Content-Type, Content-Length, Cache-Control:
 * no-store, X-Content-Type-Options: nosniff and Connection; a HEAD gets
 * the Content-Length of the body it does not get. Requests are answered
 * one at a time per connection, in order (pipelining is safe).
 *
 * Logging goes only to o->log, one line per error or rejection (never per
 * request, never a token or a path). The process must ignore SIGPIPE:
 * libuv writes with write(2), and a client gone mid-response would kill
 * it otherwise.
 *
 * Knows nothing of Muster: the daemon gives it a handler (scheduler/debug/).
 */
#ifndef MUSTER_SCHEDULER_HTTPD_H
#define MUSTER_SCHEDULER_HTTPD_H

#include <stddef.h>
#include <uv.h>

struct httpd;

struct httpd_request {
	const char *method; /* "GET" or "HEAD" */
	const char *path;   /* percent-decoded, without the query; starts with '/' */
	const char *query;  /* raw, without '?'; "" when none */
	const char *accept; /* the Accept header, "" when none */
};

/* What the handler fills in. body is malloc'd (or NULL for none) and
 * becomes the server's, which frees it after sending. */
struct httpd_response {
	int status;               /* 200 when left 0 */
	const char *content_type; /* static string; "text/plain; charset=utf-8" when NULL */
	char *body;
	size_t len;
};

typedef void (*httpd_handler)(void *data, const struct httpd_request *req,
                              struct httpd_response *resp);

struct httpd_options {
	const char *addr;       /* "host:port" or "[v6]:port"; port 0 picks one */
	const char *cert_file;  /* PEM certificate chain: TLS when set with key_file */
	const char *key_file;   /* PEM private key */
	const char *token_file; /* bearer token (first line); required when set */
	unsigned max_clients;   /* default 64 */
	unsigned max_per_peer;  /* connections from one IP address, default 16 */
	size_t max_head;        /* request line and headers, default 16 KiB */
	unsigned timeout_ms;    /* writing a response; default 10000 */
	/* From accept (or the end of the last response) to a complete request
	 * head, TLS handshake included: idle and slow clients give their slot
	 * back this soon. Default min(5000, timeout_ms). */
	unsigned head_timeout_ms;
	unsigned tls_handshakes_per_s; /* budget for new TLS sessions, default 100 */
	/* Plain HTTP without a token on any address: only for a handler that
	 * reveals nothing (the kubelet's probes). */
	int public_plain;
	httpd_handler handler;
	void *data; /* for handler */
	/* Lines about connections, with log_data: may be NULL. Its own data,
	 * so the handler's need not be what the log wants. */
	void (*log)(void *log_data, const char *msg);
	void *log_data;
};

/** Listen on o->addr and serve. Returns 0 and *out, or a negative errno
 *  with err (if not NULL) saying why in a sentence: -EINVAL for a bad
 *  address, a non-loopback address without TLS and token, or unreadable
 *  cert/key/token; -EADDRINUSE etc. from libuv; -ENOMEM. The address is
 *  numeric ("localhost" means 127.0.0.1; no DNS). The cert, key and token
 *  files are read here with blocking reads, and again whenever they change
 *  (a rotated Secret; stat()ed at most once a second, as connections come
 *  and requests are answered: a new token applies to the next request, a
 *  new certificate to the next connection; a reload that fails keeps the
 *  old ones and logs a line). Copies of their paths are kept, none of o's
 *  other strings. On failure nothing is left but, maybe, a listener
 *  closing on the loop, freed when the loop next runs. */
int httpd_start(uv_loop_t *loop, const struct httpd_options *o, struct httpd **out, char *err,
                size_t errlen);

/** The port it listens on (useful after port 0). */
int httpd_port(const struct httpd *h);

/** Close the listener and every connection, then call closed_cb(data)
 *  once all its handles are closed and memory freed. Clears *hp; safe on
 *  NULL (then closed_cb is not called). */
void httpd_close(struct httpd **hp, void (*closed_cb)(void *), void *data);

#endif /* MUSTER_SCHEDULER_HTTPD_H */
