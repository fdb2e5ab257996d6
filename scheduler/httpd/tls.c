/*
 * TLS for the debug server: OpenSSL driven through two memory BIOs, so
 * that libuv does all socket I/O and nothing blocks. Ciphertext read from
 * the socket goes into rbio; SSL_read() gives the parser plaintext;
 * whatever the SSL has to send (handshake, records, alerts) is taken from
 * wbio and handed to uv_write().
 *
 * Settings that also bound memory and work: TLS 1.2 at least, no
 * renegotiation, no session cache and no tickets (a debug endpoint gains
 * nothing from resumption; it costs a full handshake per connection,
 * which keep-alive amortises), record buffers released while idle, and a
 * key file with a passphrase refused rather than prompted for on a
 * terminal. A response is encrypted whole into wbio, so for a moment it
 * exists twice (plaintext and ciphertext, ~1.003x).
 */
#include "scheduler/httpd/internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

enum { WRITE_CHUNK = 1 << 20 }; /* one SSL_write(), which takes an int */

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

/* The first queued OpenSSL error (the root cause: for a missing file
 * "No such file or directory"), then the queue is cleared. */
static const char *first_error(void)
{
	unsigned long e = ERR_get_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;

	ERR_clear_error();
	return r ? r : "unknown error";
}

static int ctx_fail(SSL_CTX *ctx, char *err, size_t errlen, const char *what, const char *path)
{
	if (err && errlen > 0)
		snprintf(err, errlen, "httpd: %s %s: %s", what, path, first_error());
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return -EINVAL;
}

int httpd__tls_ctx_new(const char *cert_file, const char *key_file, SSL_CTX **out, char *err,
                       size_t errlen)
{
	SSL_CTX *ctx;

	ERR_clear_error();
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		if (err && errlen > 0)
			snprintf(err, errlen, "httpd: TLS context: %s", first_error());
		return -ENOMEM;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
		return ctx_fail(ctx, err, errlen, "cannot use the certificate (--debug-tls-cert)",
		                cert_file);
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1)
		return ctx_fail(ctx, err, errlen,
		                "cannot use the key (--debug-tls-key; PEM, no passphrase)",
		                key_file);
	if (SSL_CTX_check_private_key(ctx) != 1)
		return ctx_fail(ctx, err, errlen,
		                "the key does not match the certificate:", key_file);
	*out = ctx;
	return 0;
}

void httpd__tls_ctx_free(SSL_CTX *ctx)
{
	SSL_CTX_free(ctx);
}

int httpd__tls_conn_new(struct httpd__conn *c)
{
	SSL *ssl = SSL_new(c->h->tls);
	BIO *r = BIO_new(BIO_s_mem()), *w = BIO_new(BIO_s_mem());

	if (!ssl || !r || !w) {
		SSL_free(ssl);
		BIO_free(r);
		BIO_free(w);
		ERR_clear_error();
		return -ENOMEM;
	}
	/* Empty means "wait for more", not end of stream. */
	BIO_set_mem_eof_return(r, -1);
	BIO_set_mem_eof_return(w, -1);
	SSL_set_bio(ssl, r, w);
	SSL_set_accept_state(ssl);
	c->ssl = ssl;
	c->rbio = r;
	c->wbio = w;
	return 0;
}

void httpd__tls_conn_free(struct httpd__conn *c)
{
	SSL_free(c->ssl); /* and both BIOs */
	c->ssl = NULL;
	c->rbio = c->wbio = NULL;
}

int httpd__tls_ready(const struct httpd__conn *c)
{
	return SSL_is_init_finished(c->ssl);
}

/* Writes what the SSL has to send; last: it ends a response (written
 * even when empty, so that the response completes). */
static int flush(struct httpd__conn *c, int last)
{
	size_t n = BIO_ctrl_pending(c->wbio);
	char *buf;

	if (n == 0 && !last)
		return 0;
	if (n > INT_MAX || !(buf = malloc(n ? n : 1))) {
		httpd__log(c, "TLS: out of memory");
		httpd__conn_close(c);
		return -ENOMEM;
	}
	if (n && BIO_read(c->wbio, buf, (int)n) != (int)n) {
		free(buf);
		httpd__conn_close(c);
		return -EIO;
	}
	return httpd__write(c, buf, n, last);
}

/* After an SSL call returned rc <= 0: 0 when it only wants more input;
 * else c is closed (logged, unless the client ended cleanly) and -1. The
 * alert the SSL may have queued is sent first. */
static int check(struct httpd__conn *c, int rc, const char *what)
{
	int e = SSL_get_error(c->ssl, rc);

	if (e == SSL_ERROR_WANT_READ)
		return 0;
	if (e != SSL_ERROR_ZERO_RETURN)
		httpd__log(c, "TLS %s failed: %s", what, first_error());
	ERR_clear_error();
	if (flush(c, 0) == 0)
		httpd__conn_close(c);
	return -1;
}

void httpd__tls_pump(struct httpd__conn *c)
{
	int n;

	if (!SSL_is_init_finished(c->ssl)) {
		ERR_clear_error();
		n = SSL_do_handshake(c->ssl);
		if (n != 1) {
			if (check(c, n, "handshake") == 0)
				flush(c, 0);
			return;
		}
	}
	while (c->state == HTTPD__READ) {
		ERR_clear_error();
		n = SSL_read(c->ssl, c->h->pbuf, sizeof(c->h->pbuf));
		if (n <= 0) {
			if (check(c, n, "read") < 0)
				return;
			break;
		}
		httpd__feed(c, c->h->pbuf, (size_t)n);
	}
	if (c->state == HTTPD__READ)
		flush(c, 0);
}

void httpd__tls_in(struct httpd__conn *c, const char *buf, size_t len)
{
	if (!c->tls_paid) {
		if (httpd__tls_budget(c->h) < 0) {
			httpd__shed(c->h, "the TLS handshake budget is spent for this second");
			httpd__conn_close(c);
			return;
		}
		c->tls_paid = 1;
	}
	if (BIO_write(c->rbio, buf, (int)len) != (int)len) {
		ERR_clear_error();
		httpd__log(c, "TLS: out of memory");
		httpd__conn_close(c);
		return;
	}
	httpd__tls_pump(c);
}

static int put(struct httpd__conn *c, const char *p, size_t n)
{
	while (n > 0) {
		int w;

		ERR_clear_error();
		w = SSL_write(c->ssl, p, n > WRITE_CHUNK ? WRITE_CHUNK : (int)n);
		if (w <= 0) {
			httpd__log(c, "TLS write failed: %s", first_error());
			httpd__conn_close(c);
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

void httpd__tls_send(struct httpd__conn *c, const char *head, size_t hlen, const char *body,
                     size_t blen)
{
	if (put(c, head, hlen) < 0 || put(c, body, blen) < 0)
		return;
	if (!c->keep) {
		SSL_shutdown(c->ssl); /* close_notify after the response */
		ERR_clear_error();
	}
	flush(c, 1);
}
