/*
 * The debug server's credentials: the bearer token and the TLS context
 * (certificate and key), read at start and read again when their files
 * change, so that a rotated Kubernetes Secret is served without a restart.
 *
 * The kubelet rotates a Secret mounted as a volume by writing the new
 * files into a new directory and swapping a symlink (..data), so a path
 * keeps its name and comes to name another file. A file is known by what
 * stat() (which follows the symlink) says of it: device, inode, mtime and
 * size; any difference is a change. The files are stat()ed at most once
 * per HTTPD__CREDS_RECHECK_MS, when a connection is accepted or a request
 * head is answered, so an idle server does no work and a busy one at most
 * three stat()s a second (~1 us each on the tmpfs of a Secret volume).
 *
 * A changed file is read again, on the loop: the token (at most
 * TOKEN_CAP bytes) or the certificate and key (a PEM parse and a key check,
 * ~0.1 ms for P-256, ~1 ms for RSA-2048), once per rotation. A reload that
 * fails (a file missing, unreadable, bad PEM, a key that does not match)
 * keeps the credentials in use and logs one line; the failed file's
 * identity is remembered, so it is neither read nor logged again until it
 * changes once more (the kubelet's next write, say, or the key arriving
 * after its certificate). Files are stat()ed before they are read: a
 * change between the two is seen at the next check, never missed.
 *
 * A new TLS context is used by connections accepted after the swap;
 * connections already open keep theirs (each SSL holds a reference to its
 * SSL_CTX). A new token applies to every request answered after the swap,
 * on open connections too.
 */
#include "scheduler/httpd/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

enum {
	TOKEN_CAP = 4096,
	ERR_CAP = 256,
};

/* What path is now; a file that cannot be stat()ed has its errno instead. */
static struct httpd__file_id file_id(const char *path)
{
	struct httpd__file_id id = {0};
	struct stat st;

	if (stat(path, &st) != 0) {
		id.err = errno ? errno : EIO;
		return id;
	}
	id.dev = st.st_dev;
	id.ino = st.st_ino;
	id.mtime = st.st_mtim;
	id.size = st.st_size;
	return id;
}

static int same_file(const struct httpd__file_id *a, const struct httpd__file_id *b)
{
	return a->err == b->err && a->dev == b->dev && a->ino == b->ino &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->size == b->size;
}

/* The first line of path, without trailing blanks, into a new *out. */
static int read_token(const char *path, char **out, size_t *out_len, char *err, size_t errlen)
{
	char buf[TOKEN_CAP + 2];
	FILE *f = fopen(path, "r");
	size_t n;
	int rc = 0;

	if (!f)
		return httpd__fail(err, errlen, -EINVAL, "httpd: cannot read the token file %s: %s",
		                   path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	n = strcspn(buf, "\r\n");
	while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		n--;
	if (n == 0 || n > TOKEN_CAP)
		rc = httpd__fail(err, errlen, -EINVAL, "httpd: the token file %s: %s", path,
		                 n ? "first line longer than 4096 bytes"
		                   : "no token on its first line");
	else if (!(*out = malloc(n)))
		rc = httpd__fail(err, errlen, -ENOMEM, "httpd: out of memory");
	else
		memcpy(*out, buf, *out_len = n);
	OPENSSL_cleanse(buf, sizeof(buf));
	return rc;
}

static void token_free(struct httpd *h)
{
	if (h->token) {
		OPENSSL_cleanse(h->token, h->token_len);
		free(h->token);
	}
	h->token = NULL;
	h->token_len = 0;
}

/* Reads the token file into h (the old token goes once the new is in). */
static int load_token(struct httpd *h, char *err, size_t errlen)
{
	struct httpd__creds *cr = &h->creds;
	char *token = NULL;
	size_t len = 0;
	int rc;

	cr->token_id = file_id(cr->token_path);
	if ((rc = read_token(cr->token_path, &token, &len, err, errlen)) < 0)
		return rc;
	token_free(h);
	h->token = token;
	h->token_len = len;
	return 0;
}

/* Builds a TLS context from the files into h (the old one goes once the
 * new is in; open connections hold their own reference to theirs). */
static int load_tls(struct httpd *h, char *err, size_t errlen)
{
	struct httpd__creds *cr = &h->creds;
	SSL_CTX *ctx = NULL;
	int rc;

	cr->cert_id = file_id(cr->cert_path);
	cr->key_id = file_id(cr->key_path);
	if ((rc = httpd__tls_ctx_new(cr->cert_path, cr->key_path, &ctx, err, errlen)) < 0)
		return rc;
	httpd__tls_ctx_free(h->tls);
	h->tls = ctx;
	return 0;
}

static int dup_path(const char *path, char **out)
{
	if (!path)
		return 0;
	*out = strdup(path);
	return *out ? 0 : -ENOMEM;
}

int httpd__creds_load(struct httpd *h, const struct httpd_options *o, char *err, size_t errlen)
{
	struct httpd__creds *cr = &h->creds;
	int rc;

	if (dup_path(o->token_file, &cr->token_path) < 0 ||
	    dup_path(o->cert_file, &cr->cert_path) < 0 || dup_path(o->key_file, &cr->key_path) < 0)
		return httpd__fail(err, errlen, -ENOMEM, "httpd: out of memory");
	cr->checked_ms = uv_now(h->loop);
	if (cr->token_path && (rc = load_token(h, err, errlen)) < 0)
		return rc;
	if (cr->cert_path && (rc = load_tls(h, err, errlen)) < 0)
		return rc;
	return 0;
}

/* One line for a failed reload; the credentials in use stay. */
static void reload_failed(const struct httpd *h, const char *what, const char *err)
{
	char msg[ERR_CAP + 64];

	if (!h->o.log)
		return;
	snprintf(msg, sizeof(msg), "%s; still serving the %s read before", err, what);
	h->o.log(h->o.log_data, msg);
}

static void reloaded(const struct httpd *h, const char *what)
{
	char msg[96];

	if (!h->o.log)
		return;
	snprintf(msg, sizeof(msg), "httpd: %s changed: reloaded", what);
	h->o.log(h->o.log_data, msg);
}

static void refresh_token(struct httpd *h)
{
	struct httpd__file_id now = file_id(h->creds.token_path);
	char err[ERR_CAP];

	if (same_file(&now, &h->creds.token_id))
		return;
	if (load_token(h, err, sizeof(err)) < 0)
		reload_failed(h, "token", err);
	else
		reloaded(h, "the token file");
}

static void refresh_tls(struct httpd *h)
{
	struct httpd__file_id cert = file_id(h->creds.cert_path);
	struct httpd__file_id key = file_id(h->creds.key_path);
	char err[ERR_CAP];

	if (same_file(&cert, &h->creds.cert_id) && same_file(&key, &h->creds.key_id))
		return;
	if (load_tls(h, err, sizeof(err)) < 0)
		reload_failed(h, "certificate and key", err);
	else
		reloaded(h, "the TLS certificate or key");
}

void httpd__creds_refresh(struct httpd *h)
{
	struct httpd__creds *cr = &h->creds;
	uint64_t now = uv_now(h->loop);

	if (now - cr->checked_ms < HTTPD__CREDS_RECHECK_MS)
		return;
	cr->checked_ms = now;
	if (cr->token_path)
		refresh_token(h);
	if (cr->cert_path)
		refresh_tls(h);
}

void httpd__creds_free(struct httpd *h)
{
	struct httpd__creds *cr = &h->creds;

	httpd__tls_ctx_free(h->tls);
	h->tls = NULL;
	token_free(h);
	free(cr->token_path);
	free(cr->cert_path);
	free(cr->key_path);
	cr->token_path = cr->cert_path = cr->key_path = NULL;
}
