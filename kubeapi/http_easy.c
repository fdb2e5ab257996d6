/*
 * The HTTP engine's easy handles (see http.c for the design): a free list
 * of idle handles, the options of one attempt (URL, headers, method and
 * body, timeouts, TLS, HTTP/2) and the callbacks curl makes during a
 * transfer to hand over the body and the headers.
 *
 * Cost. Each attempt resets a pooled handle and sets its options again
 * (connections are pooled by the multi handle, not by easy handles; at
 * most max_inflight idle handles are kept). It allocates a header list of
 * up to four lines and gets the token from kubeapi_conn_token(), which
 * stat()s a token file at most once per KUBEAPI_TOKEN_RECHECK_MS. A
 * buffered body (base/buf) grows by doubling from 256 bytes (or is sized
 * at once from Content-Length) up to max_body + 1 bytes; a streamed body goes to
 * chunk_cb as it arrives and is never copied.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "kubeapi/conn.h"
#include "kubeapi/http.h"
#include "kubeapi/http_internal.h"

/* The token to send now; a rotated token file is re-read (conn.c
 * stat()s it at most once per KUBEAPI_TOKEN_RECHECK_MS). */
static const char *conn_token(struct kubeapi_conn *c)
{
	return kubeapi_conn_token(c, kubeapi__http_now_ms());
}

/* ---- Easy handles: a free list keeps them, and their buffers, warm ----- */

CURL *kubeapi__http_easy_get(struct kubeapi_http *h)
{
	if (h->npool > 0)
		return h->pool[--h->npool];
	return curl_easy_init();
}

void kubeapi__http_easy_put(struct kubeapi_http *h, CURL *e)
{
	if (h->npool < h->opt.max_inflight)
		h->pool[h->npool++] = e;
	else
		curl_easy_cleanup(e);
}

/* ---- Building an attempt ---------------------------------------------- */

static struct curl_slist *header_add(struct curl_slist *l, const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 3;
	char *line = malloc(n);
	struct curl_slist *r = NULL;

	if (line) {
		snprintf(line, n, "%s: %s", name, value);
		r = curl_slist_append(l, line);
		free(line);
	}
	if (!r)
		curl_slist_free_all(l);
	return r;
}

/* Accept, Content-Type, Authorization, and no "Expect: 100-continue"
 * (one round trip less for large bodies over HTTP/1.1). */
static struct curl_slist *build_headers(struct kubeapi_http_call *c)
{
	const struct kubeapi_http_method_info *m = kubeapi_http_method_info(c->method);
	const char *token = conn_token(c->h->conn);
	struct curl_slist *l = curl_slist_append(NULL, "Expect:");

	if (l)
		l = header_add(l, "Accept", "application/json");
	if (l && m->content_type && (c->body_len > 0 || m->body_required))
		l = header_add(l, "Content-Type", m->content_type);
	if (l && token) {
		/* "Bearer " + token; a header line, not logged anywhere. */
		size_t n = strlen(token) + 8;
		char *v = malloc(n);

		if (!v) {
			curl_slist_free_all(l);
			return NULL;
		}
		snprintf(v, n, "Bearer %s", token);
		l = header_add(l, "Authorization", v);
		free(v);
	}
	return l;
}

/* Sets an option unless an earlier one failed; rc is a CURLcode. */
#define SETOPT(rc, e, opt, val) ((rc) == CURLE_OK ? ((rc) = curl_easy_setopt((e), opt, val)) : (rc))

/*
 * With a CA from the kubeconfig (or the service account's ca.crt), that CA
 * is the only trust anchor, as in client-go: curl's default CA directory
 * (CURLOPT_CAPATH, /etc/ssl/certs on Debian's build, which the image
 * fills) would otherwise add every public CA to it.
 *
 * And a rotated CA file is read again: curl >= 7.87 keeps the store it
 * built from a CAINFO file on the multi handle for CURLOPT_CA_CACHE_TIMEOUT
 * (24 h by default) and checks only the file's name, so a new ca.crt (a
 * rotated Secret or cluster CA) would go unused for a day and new
 * connections to a server with a certificate from the new CA would fail.
 * 0 turns the cache off. What it costs: one load of the CA file per new
 * TLS connection, on the loop: ~0.25 ms for a cluster CA of one
 * certificate (X509_STORE_load_file, OpenSSL 3.0; about what the handshake
 * itself costs), ~45 ms for Debian's whole 144-certificate bundle, should a
 * kubeconfig name that. The engine opens few connections (at most eight,
 * HTTP/2, long-lived), so it does not show; a store cached for a minute
 * instead would bound staleness at a minute, but cannot be tested without
 * waiting for it. A libcurl older than its headers may not know the
 * option; its result is ignored, since such a libcurl has no cache either.
 */
static CURLcode trust_only_ca(CURL *e, CURLcode rc)
{
	SETOPT(rc, e, CURLOPT_CAPATH, NULL);
#if LIBCURL_VERSION_NUM >= 0x075700 /* 7.87.0, where the cache came */
	if (rc == CURLE_OK)
		(void)curl_easy_setopt(e, CURLOPT_CA_CACHE_TIMEOUT, 0L);
#endif
	return rc;
}

static CURLcode set_tls(CURL *e, const struct kubeapi_conn *k)
{
	CURLcode rc = CURLE_OK;
	/* NOCOPY: the conn outlives the engine (kubeapi/http.h). */
	struct curl_blob ca = {k->ca_data.data, k->ca_data.len, CURL_BLOB_NOCOPY};
	struct curl_blob cert = {k->cert_data.data, k->cert_data.len, CURL_BLOB_NOCOPY};
	struct curl_blob key = {k->key_data.data, k->key_data.len, CURL_BLOB_NOCOPY};

	if (k->ca_file)
		SETOPT(rc, e, CURLOPT_CAINFO, k->ca_file);
	else if (k->ca_data.data)
		SETOPT(rc, e, CURLOPT_CAINFO_BLOB, &ca);
	if (k->ca_file || k->ca_data.data)
		rc = trust_only_ca(e, rc);
	if (k->cert_file)
		SETOPT(rc, e, CURLOPT_SSLCERT, k->cert_file);
	else if (k->cert_data.data)
		SETOPT(rc, e, CURLOPT_SSLCERT_BLOB, &cert);
	if (k->key_file)
		SETOPT(rc, e, CURLOPT_SSLKEY, k->key_file);
	else if (k->key_data.data)
		SETOPT(rc, e, CURLOPT_SSLKEY_BLOB, &key);
	if (k->insecure_skip_tls_verify) {
		SETOPT(rc, e, CURLOPT_SSL_VERIFYPEER, 0L);
		SETOPT(rc, e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	return rc;
}

/* What every attempt shares: one connection pool, so one set of options. */
static CURLcode set_transport(CURL *e, const struct kubeapi_conn *k, const char *user_agent)
{
	CURLcode rc = CURLE_OK;

	SETOPT(rc, e, CURLOPT_NOSIGNAL, 1L);
	SETOPT(rc, e, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(rc, e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	SETOPT(rc, e, CURLOPT_PIPEWAIT, 1L);
	SETOPT(rc, e, CURLOPT_ACCEPT_ENCODING, "gzip");
	SETOPT(rc, e, CURLOPT_USERAGENT, user_agent);
	SETOPT(rc, e, CURLOPT_TCP_KEEPALIVE, 1L);
	SETOPT(rc, e, CURLOPT_TCP_KEEPIDLE, 30L);
	SETOPT(rc, e, CURLOPT_TCP_KEEPINTVL, 10L);
	if (rc == CURLE_OK)
		rc = set_tls(e, k);
	return rc;
}

/* GET as curl's default; POST by CURLOPT_POST; the rest by
 * CURLOPT_CUSTOMREQUEST, with the body (if any) as POSTFIELDS. */
static CURLcode set_method(struct kubeapi_http_call *c, CURL *e)
{
	const struct kubeapi_http_method_info *m = kubeapi_http_method_info(c->method);
	CURLcode rc = CURLE_OK;

	if (!m->custom_request && !m->body_required)
		return curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	if (m->custom_request)
		SETOPT(rc, e, CURLOPT_CUSTOMREQUEST, m->custom_request);
	else
		SETOPT(rc, e, CURLOPT_POST, 1L);
	if (c->body_len > 0 || m->body_required) {
		SETOPT(rc, e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
		SETOPT(rc, e, CURLOPT_POSTFIELDS, c->body);
	}
	return rc;
}

static CURLcode set_timeouts(struct kubeapi_http_call *c, CURL *e)
{
	const struct kubeapi_http_options *o = &c->h->opt;
	CURLcode rc = CURLE_OK;

	if (!(c->flags & KUBEAPI_REQ_STREAM))
		return curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	/* Under 1 byte/s for the idle limit: dead. curl checks it every second. */
	SETOPT(rc, e, CURLOPT_CONNECTTIMEOUT_MS, (long)o->timeout_ms);
	SETOPT(rc, e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	SETOPT(rc, e, CURLOPT_LOW_SPEED_TIME, (long)((c->timeout_ms + 999) / 1000));
	return rc;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud);
static size_t on_header(char *p, size_t size, size_t n, void *ud);

static CURLcode set_call(struct kubeapi_http_call *c, CURL *e)
{
	CURLcode rc = CURLE_OK;

	SETOPT(rc, e, CURLOPT_URL, c->url);
	SETOPT(rc, e, CURLOPT_CONNECT_TO, c->h->connect_to);
	SETOPT(rc, e, CURLOPT_PRIVATE, (void *)c);
	SETOPT(rc, e, CURLOPT_HTTPHEADER, c->headers);
	SETOPT(rc, e, CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(rc, e, CURLOPT_WRITEDATA, (void *)c);
	SETOPT(rc, e, CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(rc, e, CURLOPT_HEADERDATA, (void *)c);
	if (rc == CURLE_OK)
		rc = set_method(c, e);
	if (rc == CURLE_OK)
		rc = set_timeouts(c, e);
	return rc;
}

int kubeapi__http_setup_easy(struct kubeapi_http_call *c, CURL *e)
{
	CURLcode rc;

	curl_easy_reset(e);
	c->headers = build_headers(c);
	if (!c->headers)
		return -ENOMEM;
	rc = set_transport(e, c->h->conn, c->h->user_agent);
	if (rc == CURLE_OK)
		rc = set_call(c, e);
	if (rc != CURLE_OK) {
		curl_slist_free_all(c->headers);
		c->headers = NULL;
		return rc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EINVAL;
	}
	return 0;
}

/* ---- Bodies and headers, called by curl during a transfer -------------- */

/* At the first byte of a body: stream a 2xx answer to a stream request,
 * buffer anything else (sized from Content-Length when it is known). */
static int decide_mode(struct kubeapi_http_call *c)
{
	curl_off_t clen = -1;

	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
	if ((c->flags & KUBEAPI_REQ_STREAM) && c->status >= 200 && c->status <= 299) {
		c->mode = KUBEAPI__BODY_STREAM;
		/* A watch is counted when it starts: it may run for minutes. */
		if (c->h->opt.observe)
			c->h->opt.observe(c->h->opt.observe_data, c->method, 1, c->status, 0);
		return 0;
	}
	c->mode = KUBEAPI__BODY_BUFFER;
	curl_easy_getinfo(c->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &clen);
	if (clen > 0 && (uint64_t)clen > c->h->opt.max_body)
		return -EMSGSIZE;
	return clen > 0 ? buf_reserve(&c->resp, (size_t)clen) : 0;
}

/* Stream or buffer one piece of the body; < 0 stops the transfer. */
static int body_write(struct kubeapi_http_call *c, const char *p, size_t len)
{
	int rc;

	if (c->mode == KUBEAPI__BODY_UNDECIDED && (rc = decide_mode(c)) < 0)
		return rc;
	if (c->mode == KUBEAPI__BODY_STREAM) {
		rc = c->chunk_cb(c->data, p, len);
		return rc < 0 ? rc : 0;
	}
	return buf_append(&c->resp, p, len);
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct kubeapi_http_call *c = ud;
	int rc;

	if (c->cancelled)
		return CURL_WRITEFUNC_ERROR;
	rc = body_write(c, p, size * n);
	if (rc < 0) {
		c->abort_err = rc;
		return CURL_WRITEFUNC_ERROR;
	}
	/* A chunk_cb may have cancelled its own call, or closed the engine. */
	return c->cancelled ? CURL_WRITEFUNC_ERROR : size * n;
}

/* Remembers Retry-After from the final response; a new status line (after
 * a 1xx, or a new attempt) forgets it. Reads the wall clock, which an
 * HTTP-date needs; every other time here is monotonic. */
static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	static const char name[] = "retry-after:";
	struct kubeapi_http_call *c = ud;
	size_t len = size * n, vlen;
	const char *v = p + sizeof(name) - 1;
	uint64_t ms;

	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		c->has_retry_after = 0;
		return len;
	}
	if (len < sizeof(name) || strncasecmp(p, name, sizeof(name) - 1) != 0)
		return len;
	vlen = len - (sizeof(name) - 1);
	while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
		vlen--;
	if (kubeapi_http_retry_after_ms(v, vlen, time(NULL), &ms) == 0) {
		c->retry_after_ms = ms;
		c->has_retry_after = 1;
	}
	return len;
}
