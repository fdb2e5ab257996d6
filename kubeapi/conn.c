/*
 * The connection settings that are not a kubeconfig (see conn.h): the
 * in-cluster environment, the bearer token cache, kubeapi_conn_free(), and
 * the helpers kubeconfig.c and kubeconfig_yaml.c share with them: capped
 * file reads, error messages, secrets that are wiped before they are
 * freed, path joining.
 *
 * In-cluster settings are KUBERNETES_SERVICE_HOST/PORT plus the service
 * account's token and CA files; the token file is read once to check it,
 * then kept as token_file so that rotation is picked up.
 *
 * Cost. Every file read is bounded when it is opened (at most the cap
 * given, plus one byte to notice growth) and never blocks on a FIFO. The
 * token cache costs one stat() per KUBEAPI_TOKEN_RECHECK_MS and, after the
 * file changed, one read of at most KUBEAPI_TOKEN_FILE_MAX bytes.
 */
#include "kubeapi/conn.h"
#include "kubeapi/conn_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#define SA_DIR_DEFAULT "/var/run/secrets/kubernetes.io/serviceaccount"

/* ---- messages ---------------------------------------------------------- */

__attribute__((format(printf, 4, 0))) int kubeapi__conn_vfail(char *err, size_t errlen, int rc,
                                                              const char *fmt, va_list ap)
{
	if (err && errlen > 0)
		vsnprintf(err, errlen, fmt, ap);
	return rc;
}

__attribute__((format(printf, 4, 5))) int kubeapi__conn_fail(char *err, size_t errlen, int rc,
                                                             const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kubeapi__conn_vfail(err, errlen, rc, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- small helpers ----------------------------------------------------- */

void kubeapi__conn_free_secret(char **p, size_t len)
{
	if (*p) {
		OPENSSL_cleanse(*p, len);
		free(*p);
		*p = NULL;
	}
}

static void free_string_secret(char **p)
{
	kubeapi__conn_free_secret(p, *p ? strlen(*p) : 0);
}

bool kubeapi__conn_has_control_char(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

bool kubeapi__conn_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int kubeapi__conn_join_path(const char *dir, const char *name, char **out)
{
	size_t dlen = strlen(dir), nlen = strlen(name);
	bool slash = dlen > 0 && dir[dlen - 1] == '/';
	char *p;

	if (dlen + nlen + 1 > KUBEAPI__PATH_CAP)
		return -ENAMETOOLONG;
	p = malloc(dlen + nlen + 2);
	if (!p)
		return -ENOMEM;
	memcpy(p, dir, dlen);
	if (!slash)
		p[dlen++] = '/';
	memcpy(p + dlen, name, nlen + 1);
	*out = p;
	return 0;
}

/* ---- bounded file reads ------------------------------------------------ */

int kubeapi__conn_read_capped(const char *path, size_t cap, char **buf, size_t *len,
                              struct timespec *mtime)
{
	struct stat st;
	size_t n = 0;
	ssize_t got;
	char *b = NULL;
	int rc = 0, fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto out;
	}
	if ((unsigned long long)st.st_size > cap) {
		rc = -EFBIG;
		goto out;
	}
	b = malloc(cap + 1);
	if (!b) {
		rc = -ENOMEM;
		goto out;
	}
	/* Reads one byte past the cap to notice a file that grew since fstat. */
	while (n <= cap && (got = read(fd, b + n, cap + 1 - n)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = -errno;
			goto out;
		}
		n += (size_t)got;
	}
	if (n > cap) {
		rc = -EFBIG;
		goto out;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	*mtime = st.st_mtim;
	b = NULL;
out:
	if (b) {
		OPENSSL_cleanse(b, n);
		free(b);
	}
	close(fd);
	return rc;
}

/* Reads a token file: surrounding whitespace trimmed, not empty, no control
 * characters. *token is a new string. */
static int read_token_file(const char *path, char **token, struct timespec *mtime)
{
	char *buf = NULL, *start;
	size_t len = 0, end;
	int rc;

	rc = kubeapi__conn_read_capped(path, KUBEAPI__TOKEN_CAP, &buf, &len, mtime);
	if (rc)
		return rc;
	start = buf;
	end = len;
	while (end > 0 && kubeapi__conn_is_space(buf[end - 1]))
		end--;
	while (start < buf + end && kubeapi__conn_is_space(*start))
		start++;
	if (start == buf + end ||
	    kubeapi__conn_has_control_char(start, (size_t)(buf + end - start))) {
		rc = -EINVAL;
		goto out;
	}
	*token = strndup(start, (size_t)(buf + end - start));
	if (!*token)
		rc = -ENOMEM;
out:
	kubeapi__conn_free_secret(&buf, len);
	return rc;
}

/* ---- the token cache --------------------------------------------------- */

int kubeapi__conn_prime_token(struct kubeapi_conn *c)
{
	return c->token_file ? read_token_file(c->token_file, &c->token_cached, &c->token_mtime)
	                     : 0;
}

static bool token_due(const struct kubeapi_conn *c, uint64_t now_ms)
{
	return c->token_checked_ms == 0 || now_ms < c->token_checked_ms ||
	       now_ms - c->token_checked_ms >= KUBEAPI_TOKEN_RECHECK_MS;
}

/* Re-reads the token file if its mtime changed; on any failure keeps what
 * is cached. Costs one stat(), plus a capped read after a change. */
static void token_refresh(struct kubeapi_conn *c, uint64_t now_ms)
{
	struct timespec mtime;
	struct stat st;
	char *token = NULL;

	c->token_checked_ms = now_ms ? now_ms : 1; /* 0 means never checked */
	if (stat(c->token_file, &st) != 0)
		return;
	if (c->token_cached && st.st_mtim.tv_sec == c->token_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == c->token_mtime.tv_nsec)
		return;
	if (read_token_file(c->token_file, &token, &mtime) != 0)
		return;
	free_string_secret(&c->token_cached);
	c->token_cached = token;
	c->token_mtime = mtime;
}

const char *kubeapi_conn_token(struct kubeapi_conn *c, uint64_t now_ms)
{
	if (!c->token_file)
		return c->token;
	if (token_due(c, now_ms))
		token_refresh(c, now_ms);
	return c->token_cached ? c->token_cached : c->token;
}

void kubeapi_conn_free(struct kubeapi_conn *c)
{
	free(c->server);
	free(c->ca_file);
	free(c->ca_data.data);
	free(c->cert_file);
	free(c->key_file);
	free(c->cert_data.data);
	kubeapi__conn_free_secret(&c->key_data.data, c->key_data.len);
	free_string_secret(&c->token);
	free(c->token_file);
	free_string_secret(&c->token_cached);
	free(c->tls_server_name);
	memset(c, 0, sizeof(*c));
}

/* ---- in-cluster -------------------------------------------------------- */

/* "https://host:port", with brackets around an IPv6 host. */
static int service_url(const char *host, const char *port, char **url, char *err, size_t errlen)
{
	size_t hlen = strlen(host), plen = strlen(port);
	bool v6 = strchr(host, ':') != NULL;
	long p;

	if (hlen > KUBEAPI__HOST_CAP ||
	    strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                 "0123456789.-:") != hlen)
		return kubeapi__conn_fail(err, errlen, -EINVAL,
		                          "KUBERNETES_SERVICE_HOST '%.*s' is not a host",
		                          KUBEAPI__HOST_CAP, host);
	p = plen <= 5 && strspn(port, "0123456789") == plen ? strtol(port, NULL, 10) : 0;
	if (p < 1 || p > 65535)
		return kubeapi__conn_fail(err, errlen, -EINVAL,
		                          "KUBERNETES_SERVICE_PORT '%.*s' is not a port",
		                          KUBEAPI__HOST_CAP, port);
	if (asprintf(url, "https://%s%s%s:%ld", v6 ? "[" : "", host, v6 ? "]" : "", p) < 0)
		return -ENOMEM;
	return 0;
}

static int sa_file(const char *dir, const char *name, char **out, char *err, size_t errlen)
{
	int rc = kubeapi__conn_join_path(dir, name, out);

	if (rc == -ENAMETOOLONG)
		return kubeapi__conn_fail(err, errlen, -EINVAL,
		                          "service account directory '%.*s' is too long",
		                          KUBEAPI__PATH_CAP, dir);
	return rc;
}

int kubeapi_conn_in_cluster(const char *sa_dir, struct kubeapi_conn *out, char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	struct kubeapi_conn c = {0};
	int rc;

	kubeapi__conn_fail(err, errlen, 0, "%s", "");
	if (!sa_dir)
		sa_dir = SA_DIR_DEFAULT;
	if (!host || !host[0] || !port || !port[0])
		return kubeapi__conn_fail(err, errlen, -ENOENT,
		                          "not running in a cluster: KUBERNETES_SERVICE_HOST and "
		                          "KUBERNETES_SERVICE_PORT are not set");
	rc = service_url(host, port, &c.server, err, errlen);
	if (rc == 0)
		rc = sa_file(sa_dir, "token", &c.token_file, err, errlen);
	if (rc == 0)
		rc = sa_file(sa_dir, "ca.crt", &c.ca_file, err, errlen);
	if (rc == 0 && (rc = kubeapi__conn_prime_token(&c)) != 0)
		kubeapi__conn_fail(err, errlen, rc, "in-cluster service account token %s: %s",
		                   c.token_file,
		                   rc == -EINVAL ? "empty or not a token" : strerror(-rc));
	if (rc == 0 && access(c.ca_file, R_OK) != 0)
		rc = kubeapi__conn_fail(err, errlen, -errno, "in-cluster service account CA %s: %s",
		                        c.ca_file, strerror(errno));
	if (rc == 0) {
		*out = c;
		memset(&c, 0, sizeof(c));
	}
	kubeapi_conn_free(&c);
	return rc;
}
