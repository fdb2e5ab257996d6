/*
 * What the files of the debug server share (httpd.c: the server,
 * conn.c: a connection, request.c: a request, tls.c: TLS, creds.c: the
 * token and certificate, reread when they change). Nothing else includes
 * this.
 */
#ifndef MUSTER_SCHEDULER_HTTPD_INTERNAL_H
#define MUSTER_SCHEDULER_HTTPD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include <llhttp.h>
#include <openssl/ssl.h>
#include <uv.h>

#include "scheduler/httpd/httpd.h"

enum {
	HTTPD__READ_CAP = 16 * 1024,    /* one read from a socket */
	HTTPD__FIELD_CAP = 16,          /* longer header names are not ours */
	HTTPD__CREDS_RECHECK_MS = 1000, /* credential files stat()ed at most this often */
};

enum httpd__state {
	HTTPD__READ,   /* reading a request, or idle between two */
	HTTPD__WRITE,  /* writing a response; not reading */
	HTTPD__LINGER, /* last response sent: FIN, dropping what comes */
	HTTPD__CLOSED, /* uv_close() called */
};

/* A value copied into conn.req: offset, length, whether seen. */
struct httpd__span {
	size_t off, len;
	int set;
};

struct httpd__conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_shutdown_t shutdown;
	struct httpd *h;
	struct httpd__conn *prev, *next;
	llhttp_t parser;
	enum httpd__state state;
	int handles; /* of tcp and timer, not yet closed */
	unsigned counted : 1, reading : 1, keep : 1, in_request : 1, is_head : 1, auth_dup : 1;
	int reject;        /* status a parser callback chose, 0 = none */
	size_t head_bytes; /* of the current request, fed to the parser */
	/* The target, Accept and Authorization values, NUL-terminated. */
	char *req;
	size_t req_len, req_cap;
	struct httpd__span url, accept, auth, *cur;
	char field[HTTPD__FIELD_CAP];
	size_t field_len;
	char *pend; /* read past a head, fed after its response */
	size_t pend_len;
	SSL *ssl; /* NULL without TLS; reads rbio, writes wbio */
	BIO *rbio, *wbio;
	unsigned tls_paid : 1;  /* took a handshake from the budget */
	uint64_t seq;           /* accept order: lower is older */
	unsigned char peer[17]; /* family byte, then the address (v4 in 4 bytes) */
};

/* A file as stat() saw it (through symlinks); err: stat() failed so. */
struct httpd__file_id {
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	off_t size;
	int err;
};

/* Where the credentials come from, and what those files were when last
 * read (or tried): see creds.c. */
struct httpd__creds {
	char *token_path, *cert_path, *key_path; /* copies; NULL when unused */
	struct httpd__file_id token_id, cert_id, key_id;
	uint64_t checked_ms; /* the loop's clock at the last stat()s */
};

struct httpd {
	uv_loop_t *loop;
	uv_tcp_t listener;
	struct httpd_options o; /* defaults applied; no file names */
	char *token;            /* NULL: no token required */
	size_t token_len;
	SSL_CTX *tls; /* NULL: plain HTTP */
	struct httpd__creds creds;
	struct httpd__conn *conns;
	unsigned served; /* connections counted against max_clients */
	unsigned open;   /* the listener, resume and every conn not yet freed */
	/* Accepts in this loop turn (the turn known by uv_now). Past the
	 * budget the next connection waits in the kernel and `resume`, an
	 * idle handle, accepts it on the next turn. */
	uv_idle_t resume;
	unsigned turn_accepts;
	uint64_t turn_ms;
	int port;
	int closing;
	uint64_t next_seq;
	/* TLS handshakes: a token bucket of o.tls_handshakes_per_s, refilled
	 * from the loop's clock (ms). */
	double tls_tokens;
	uint64_t tls_refilled_ms;
	/* Connections closed or refused to keep room, logged once a period. */
	unsigned shed, shed_logged_at_s;
	void (*closed_cb)(void *);
	void *closed_data;
	char rbuf[HTTPD__READ_CAP]; /* every socket read, used at once */
	char pbuf[HTTPD__READ_CAP]; /* TLS plaintext, used at once */
};

/** Write the message to err (if any); returns rc. */
__attribute__((format(printf, 4, 5))) int httpd__fail(char *err, size_t errlen, int rc,
                                                      const char *fmt, ...);

/** One line through o->log, prefixed with "httpd: PEER: ". */
__attribute__((format(printf, 2, 3))) void httpd__log(const struct httpd__conn *c, const char *fmt,
                                                      ...);

/** Close c's handles; memory goes in the last close callback. Idempotent. */
void httpd__conn_close(struct httpd__conn *c);

/** Parse plaintext, answering each complete request head; what follows a
 *  head is kept until its response is written. */
void httpd__feed(struct httpd__conn *c, const char *data, size_t len);

/** Start serving an accepted connection: reading, and the timer. */
void httpd__conn_begin(struct httpd__conn *c);

/** (Re)start c's one timer, ms from now; what it ends depends on state. */
void httpd__arm(struct httpd__conn *c, unsigned ms);

/** The llhttp callbacks: copy what a request needs into c->req (431 past
 *  req_cap), pause at the end of each head. */
extern const llhttp_settings_t httpd__parser_settings;

/** Check a complete head: fill req (pointing into c->req), c->keep and
 *  c->is_head. 0: for the handler; else the status to answer, with *why
 *  (static) for the log. */
int httpd__screen(struct httpd__conn *c, struct httpd_request *req, const char **why);

/** Queue buf (taken, freed once written; last: it ends a response).
 *  A failure closes c. */
int httpd__write(struct httpd__conn *c, char *buf, size_t len, int last);

/** An SSL_CTX from PEM files (TLS 1.2 minimum), or -EINVAL with err. */
int httpd__tls_ctx_new(const char *cert_file, const char *key_file, SSL_CTX **out, char *err,
                       size_t errlen);

/** Free a context; NULL is fine. */
void httpd__tls_ctx_free(SSL_CTX *ctx);

/** Give c an SSL over two memory BIOs, in accept state. -ENOMEM. */
int httpd__tls_conn_new(struct httpd__conn *c);

/** Free c's SSL (and BIOs); no SSL is fine. */
void httpd__tls_conn_free(struct httpd__conn *c);

/** Ciphertext from the socket: handshake, decrypt, feed; errors close. */
void httpd__tls_in(struct httpd__conn *c, const char *buf, size_t len);

/** Decrypt what the SSL already holds and feed it, while c reads. */
void httpd__tls_pump(struct httpd__conn *c);

/** Encrypt a response (head, body) and write it as the last write;
 *  close_notify follows it when c is not kept. Errors close c. */
void httpd__tls_send(struct httpd__conn *c, const char *head, size_t hlen, const char *body,
                     size_t blen);

/** Whether the handshake is done. */
int httpd__tls_ready(const struct httpd__conn *c);

/** Take one handshake from the server's budget: 0, or -EBUSY when it is
 *  spent for now (the caller closes the connection). */
int httpd__tls_budget(struct httpd *h);

/** Read the token (o->token_file) and build the TLS context (o->cert_file,
 *  o->key_file) into h, keeping copies of the paths: 0, or -EINVAL (a file
 *  unreadable or bad, said in err), -ENOMEM. Blocking reads. On failure
 *  what was loaded stays for httpd__creds_free(). */
int httpd__creds_load(struct httpd *h, const struct httpd_options *o, char *err, size_t errlen);

/** At most once per HTTPD__CREDS_RECHECK_MS: stat() the credential files
 *  and reload those that changed; a failed reload keeps what h has and
 *  logs one line. Cheap when it is not time (one clock compare). */
void httpd__creds_refresh(struct httpd *h);

/** Free the token (wiped), the TLS context and the paths. */
void httpd__creds_free(struct httpd *h);

/** A connection closed or refused to keep room: counted, and said in one
 *  log line per period rather than one per connection. */
void httpd__shed(struct httpd *h, const char *why);

#endif /* MUSTER_SCHEDULER_HTTPD_INTERNAL_H */
