/*
 * A request of the debug server: the llhttp callbacks, which copy the
 * target and the Accept and Authorization values into the connection's
 * buffer (each NUL-terminated; a value may come in pieces across reads)
 * and pause at the end of the head; then the checks that decide whether
 * the handler sees it: method, body, target, token.
 */
#include "scheduler/httpd/internal.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

/* Paths that answer without a token: kubelet probes cannot send one,
 * and a browser cannot send one for the page it loads; the debug page is
 * static HTML (no data) that asks for the token and sends it itself. */
static const char *const probe_paths[] = {"/healthz", "/readyz", "/debug/", "/debug"};

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Decodes %XX in place; -EINVAL for a malformed escape or %00. */
static int percent_decode(char *s)
{
	const char *r;
	char *w = s;
	int hi, lo;

	for (r = s; *r; r++) {
		if (*r != '%') {
			*w++ = *r;
			continue;
		}
		hi = hexval((unsigned char)r[1]);
		lo = hi < 0 ? -1 : hexval((unsigned char)r[2]);
		if (lo < 0 || (hi | lo) == 0)
			return -EINVAL;
		*w++ = (char)(hi << 4 | lo);
		r += 2;
	}
	*w = '\0';
	return 0;
}

/* The target as path and query, in place: origin-form ("/p?q") or
 * absolute-form ("http://host/p?q", whose authority is dropped). */
static int split_target(char *url, struct httpd_request *req)
{
	char *path = url, *q;

	if (*url != '/') {
		char *sep = strstr(url, "://");

		if (!sep || sep == url)
			return -EINVAL;
		path = sep + 3 + strcspn(sep + 3, "/?");
	}
	req->query = "";
	q = strchr(path, '?');
	if (q) {
		*q = '\0';
		req->query = q + 1;
	}
	if (percent_decode(path) < 0)
		return -EINVAL;
	req->path = *path ? path : "/";
	return 0;
}

static int is_probe(const char *path)
{
	size_t i;

	for (i = 0; i < sizeof(probe_paths) / sizeof(probe_paths[0]); i++)
		if (strcmp(path, probe_paths[i]) == 0)
			return 1;
	return 0;
}

/* "Bearer <token>", the token compared in constant time. */
static int authorized(const struct httpd__conn *c)
{
	const struct httpd *h = c->h;
	const char *v = c->req + c->auth.off;
	size_t n = c->auth.len;

	if (!c->auth.set || c->auth_dup || n < 7 || strncasecmp(v, "Bearer ", 7) != 0)
		return 0;
	v += 7;
	n -= 7;
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return n == h->token_len && CRYPTO_memcmp(v, h->token, n) == 0;
}

static int refuse(const char **why, const char *text, int status)
{
	*why = text;
	return status;
}

int httpd__screen(struct httpd__conn *c, struct httpd_request *req, const char **why)
{
	llhttp_t *p = &c->parser;
	int method = llhttp_get_method(p);
	int has_body = p->content_length > 0 || (p->flags & F_CHUNKED);

	c->is_head = method == HTTP_HEAD;
	c->keep =
	    llhttp_should_keep_alive(p) && !llhttp_get_upgrade(p) && !has_body && !c->h->closing;
	req->method = c->is_head ? "HEAD" : "GET";
	req->accept = c->accept.set ? c->req + c->accept.off : "";
	if (method != HTTP_GET && method != HTTP_HEAD)
		return refuse(why, llhttp_method_name(method), 405);
	if (has_body)
		return refuse(why, "a request body", 413);
	if (split_target(c->req + c->url.off, req) < 0)
		return refuse(why, "bad request target", 400);
	if (c->h->token && !is_probe(req->path) && !authorized(c))
		return refuse(why, "missing or wrong bearer token", 401);
	return refuse(why, NULL, 0);
}

/* Both fail with 431 past req_cap, whatever the head count says: that
 * is only checked between two llhttp_execute() calls. */
static int append(struct httpd__conn *c, const char *at, size_t len)
{
	if (len >= c->req_cap - c->req_len) { /* keep room for a NUL */
		c->reject = 431;
		return -1;
	}
	memcpy(c->req + c->req_len, at, len);
	c->req_len += len;
	return 0;
}

static int terminate(struct httpd__conn *c)
{
	if (c->req_len >= c->req_cap) {
		c->reject = 431;
		return -1;
	}
	c->req[c->req_len++] = '\0';
	return 0;
}

static int on_message_begin(llhttp_t *p)
{
	struct httpd__conn *c = p->data;

	c->in_request = 1;
	c->req_len = 0;
	c->url = c->accept = c->auth = (struct httpd__span){0};
	c->cur = NULL;
	c->auth_dup = 0;
	c->field_len = 0;
	/* No timer here: the head's deadline was armed at the accept (or at
	 * the end of the last response) and bytes arriving must not move it,
	 * or a client sending one byte a second holds its slot for
	 * head_timeout_ms + timeout_ms instead of head_timeout_ms. */
	return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
	return append(p->data, at, len);
}

static int on_url_complete(llhttp_t *p)
{
	struct httpd__conn *c = p->data;

	c->url.len = c->req_len;
	return terminate(c);
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
	struct httpd__conn *c = p->data;

	/* Only short names matter; a longer one is remembered as too long. */
	if (len > sizeof(c->field) - c->field_len)
		len = sizeof(c->field) - c->field_len;
	memcpy(c->field + c->field_len, at, len);
	c->field_len += len;
	return 0;
}

static int field_is(const struct httpd__conn *c, const char *name)
{
	size_t n = strlen(name);

	return c->field_len == n && strncasecmp(c->field, name, n) == 0;
}

static int on_header_field_complete(llhttp_t *p)
{
	struct httpd__conn *c = p->data;

	c->cur = NULL;
	if (field_is(c, "accept") && !c->accept.set)
		c->cur = &c->accept;
	else if (field_is(c, "authorization") && c->auth.set)
		c->auth_dup = 1; /* ambiguous: refused */
	else if (field_is(c, "authorization"))
		c->cur = &c->auth;
	if (c->cur)
		c->cur->off = c->req_len;
	c->field_len = 0;
	return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
	struct httpd__conn *c = p->data;

	return c->cur ? append(c, at, len) : 0;
}

static int on_header_value_complete(llhttp_t *p)
{
	struct httpd__conn *c = p->data;
	struct httpd__span *s = c->cur;

	c->cur = NULL;
	if (!s)
		return 0;
	s->len = c->req_len - s->off;
	s->set = 1;
	return terminate(c);
}

static int on_headers_complete(llhttp_t *p)
{
	(void)p;
	return HPE_PAUSED; /* one request at a time: httpd__feed() answers it */
}

const llhttp_settings_t httpd__parser_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_url_complete = on_url_complete,
    .on_header_field = on_header_field,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value = on_header_value,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
};
