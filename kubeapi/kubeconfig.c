/*
 * Kubeconfig files and the in-cluster environment, read into a struct
 * kubeapi_conn (see conn.h).
 *
 * A kubeconfig is read whole (at most KUBEAPI_KUBECONFIG_MAX bytes, so the
 * libyaml document tree is bounded too) and walked only along the paths it
 * defines: the context named by the caller or by current-context, then the
 * cluster and user that context names. Every entry of the contexts, clusters
 * and users lists is checked for shape, but only the chosen cluster and user
 * have their fields read, so an exec-plugin user meant for some other
 * cluster does no harm. Those fields are declared once, in tables.
 *
 * Semantics follow client-go's clientcmd where that is cheap: relative paths
 * are resolved against the kubeconfig's directory and made absolute; a file
 * and its -data form both set, a certificate without its key (or the other
 * way round), and insecure-skip-tls-verify together with a CA are errors;
 * with both token and tokenFile the file wins once it has been read. Files
 * that are named are checked with access() and a token file is read once,
 * so a typo fails at startup rather than at the first request.
 *
 * Not supported, with an error naming the field: basic auth, exec and
 * auth-provider plugins, impersonation, proxy-url. Ignored: namespace,
 * extensions, preferences, disable-compression.
 */
#include "kubeapi/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <yaml.h>

#define SA_DIR_DEFAULT "/var/run/secrets/kubernetes.io/serviceaccount"

/* Caps on strings read from a kubeconfig or the environment, in bytes. */
#define NAME_CAP  1024           /* context, cluster and user names */
#define URL_CAP   2048           /* server */
#define HOST_CAP  253            /* tls-server-name, KUBERNETES_SERVICE_HOST */
#define PATH_CAP  (PATH_MAX - 1) /* file names, before and after resolving */
#define TOKEN_CAP KUBEAPI_TOKEN_FILE_MAX
#define DATA_CAP  KUBEAPI_KUBECONFIG_MAX /* base64 text of a -data field */

/* Longest "users[123].user.client-certificate-data" style field path. */
#define WHAT_LEN 96

/* One kubeconfig being read: where it is, its parsed tree, where errors go. */
struct loader {
	const char *file; /* as the caller named it, for messages */
	char *dir;        /* its absolute directory, for relative paths */
	yaml_document_t doc;
	char *err;
	size_t errlen;
};

/* The context chosen and the entries it leads to. Strings point into the
 * document. */
struct selection {
	const char *context, *cluster, *user;
};

enum field_kind {
	FIELD_STRING,     /* char *, no control characters */
	FIELD_PATH,       /* char *, resolved against the kubeconfig's directory */
	FIELD_DATA,       /* struct kubeapi_blob, from base64 */
	FIELD_BOOL,       /* int, from true/false */
	FIELD_UNSUPPORTED /* any value that is not null or empty is an error */
};

/* One key of a cluster or user mapping and where its value goes. */
struct field {
	const char *key;
	enum field_kind kind;
	size_t off; /* into struct kubeapi_conn */
	size_t cap;
	const char *why; /* FIELD_UNSUPPORTED: the message */
};

#define AT(member) offsetof(struct kubeapi_conn, member)

static const struct field cluster_fields[] = {
    {"server", FIELD_STRING, AT(server), URL_CAP, NULL},
    {"certificate-authority", FIELD_PATH, AT(ca_file), PATH_CAP, NULL},
    {"certificate-authority-data", FIELD_DATA, AT(ca_data), DATA_CAP, NULL},
    {"insecure-skip-tls-verify", FIELD_BOOL, AT(insecure_skip_tls_verify), 0, NULL},
    {"tls-server-name", FIELD_STRING, AT(tls_server_name), HOST_CAP, NULL},
    {"proxy-url", FIELD_UNSUPPORTED, 0, 0, "proxies are not supported"},
};

#define NO_BASIC                                                                                   \
	"basic auth (username/password) is not supported; use a token or a client certificate"
#define NO_IMPERSONATION "impersonation is not supported"

static const struct field user_fields[] = {
    {"token", FIELD_STRING, AT(token), TOKEN_CAP, NULL},
    {"tokenFile", FIELD_PATH, AT(token_file), PATH_CAP, NULL},
    {"client-certificate", FIELD_PATH, AT(cert_file), PATH_CAP, NULL},
    {"client-certificate-data", FIELD_DATA, AT(cert_data), DATA_CAP, NULL},
    {"client-key", FIELD_PATH, AT(key_file), PATH_CAP, NULL},
    {"client-key-data", FIELD_DATA, AT(key_data), DATA_CAP, NULL},
    {"username", FIELD_UNSUPPORTED, 0, 0, NO_BASIC},
    {"password", FIELD_UNSUPPORTED, 0, 0, NO_BASIC},
    {"exec", FIELD_UNSUPPORTED, 0, 0,
     "exec credential plugins are not supported; use a token, tokenFile or client certificate"},
    {"auth-provider", FIELD_UNSUPPORTED, 0, 0,
     "auth-provider plugins are not supported; use a token, tokenFile or client certificate"},
    {"as", FIELD_UNSUPPORTED, 0, 0, NO_IMPERSONATION},
    {"as-uid", FIELD_UNSUPPORTED, 0, 0, NO_IMPERSONATION},
    {"as-groups", FIELD_UNSUPPORTED, 0, 0, NO_IMPERSONATION},
    {"as-user-extra", FIELD_UNSUPPORTED, 0, 0, NO_IMPERSONATION},
};

#define COUNT(t) (sizeof(t) / sizeof((t)[0]))

/* ---- messages ---------------------------------------------------------- */

/* Writes the message to err (when there is room) and returns rc. */
__attribute__((format(printf, 4, 0))) static int vfail(char *err, size_t errlen, int rc,
                                                       const char *fmt, va_list ap)
{
	if (err && errlen > 0)
		vsnprintf(err, errlen, fmt, ap);
	return rc;
}

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, int rc,
                                                      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(err, errlen, rc, fmt, ap);
	va_end(ap);
	return rc;
}

/* "FILE:LINE:COLUMN: message" for node n (1-based), or "FILE: message"
 * when there is no node; returns rc. */
__attribute__((format(printf, 4, 5))) static int fail_at(struct loader *l, const yaml_node_t *n,
                                                         int rc, const char *fmt, ...)
{
	va_list ap;
	int used = 0;

	if (!l->err || l->errlen == 0)
		return rc;
	if (n)
		used = snprintf(l->err, l->errlen, "%s:%zu:%zu: ", l->file, n->start_mark.line + 1,
		                n->start_mark.column + 1);
	else
		used = snprintf(l->err, l->errlen, "%s: ", l->file);
	if (used < 0 || (size_t)used >= l->errlen)
		return rc;
	va_start(ap, fmt);
	vfail(l->err + used, l->errlen - (size_t)used, rc, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- small helpers ----------------------------------------------------- */

/* Wipes and frees *p, then clears it. */
static void free_secret(char **p, size_t len)
{
	if (*p) {
		OPENSSL_cleanse(*p, len);
		free(*p);
		*p = NULL;
	}
}

static void free_string_secret(char **p)
{
	free_secret(p, *p ? strlen(*p) : 0);
}

static bool has_control_char(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* dir + "/" + name in a new string; -ENAMETOOLONG past PATH_CAP. */
static int join_path(const char *dir, const char *name, char **out)
{
	size_t dlen = strlen(dir), nlen = strlen(name);
	bool slash = dlen > 0 && dir[dlen - 1] == '/';
	char *p;

	if (dlen + nlen + 1 > PATH_CAP)
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

/* Reads the regular file at path, at most cap bytes, into a new
 * NUL-terminated buffer (cap + 1 bytes are allocated) and gives its mtime.
 * -EFBIG when it is longer than cap, -EINVAL when it is not a regular file
 * (opened non-blocking, so a FIFO cannot stall the caller), else -errno. */
static int read_capped(const char *path, size_t cap, char **buf, size_t *len,
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

	rc = read_capped(path, TOKEN_CAP, &buf, &len, mtime);
	if (rc)
		return rc;
	start = buf;
	end = len;
	while (end > 0 && is_space(buf[end - 1]))
		end--;
	while (start < buf + end && is_space(*start))
		start++;
	if (start == buf + end || has_control_char(start, (size_t)(buf + end - start))) {
		rc = -EINVAL;
		goto out;
	}
	*token = strndup(start, (size_t)(buf + end - start));
	if (!*token)
		rc = -ENOMEM;
out:
	free_secret(&buf, len);
	return rc;
}

/* ---- the token cache --------------------------------------------------- */

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
	free_secret(&c->key_data.data, c->key_data.len);
	free_string_secret(&c->token);
	free(c->token_file);
	free_string_secret(&c->token_cached);
	free(c->tls_server_name);
	memset(c, 0, sizeof(*c));
}

/* ---- the YAML tree ----------------------------------------------------- */

static yaml_node_t *node_at(struct loader *l, yaml_node_item_t id)
{
	return yaml_document_get_node(&l->doc, id);
}

static bool scalar_is(const yaml_node_t *n, const char *s)
{
	size_t len = strlen(s);

	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == len &&
	       memcmp(n->data.scalar.value, s, len) == 0;
}

/* Absent, an empty value or a plain null (~, null): "not set". */
static bool is_unset(const yaml_node_t *n)
{
	if (!n)
		return true;
	if (n->type != YAML_SCALAR_NODE)
		return false;
	if (n->data.scalar.length == 0)
		return true;
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (scalar_is(n, "~") || scalar_is(n, "null") || scalar_is(n, "Null") ||
	        scalar_is(n, "NULL"));
}

/* The value under key in mapping map, or NULL. O(pairs). */
static yaml_node_t *map_get(struct loader *l, const yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = node_at(l, p->key);

		if (k && scalar_is(k, key))
			return node_at(l, p->value);
	}
	return NULL;
}

static int expect_type(struct loader *l, const yaml_node_t *n, yaml_node_type_t type,
                       const char *what)
{
	const char *name = type == YAML_SCALAR_NODE     ? "a string"
	                   : type == YAML_SEQUENCE_NODE ? "a list"
	                                                : "a mapping";

	if (n->type == type)
		return 0;
	return fail_at(l, n, -EINVAL, "expected %s for '%s'", name, what);
}

/* The scalar's text, NUL-terminated by libyaml and valid while the
 * document lives: at most cap bytes and no NUL inside. */
static int scalar_text(struct loader *l, const yaml_node_t *n, const char *what, size_t cap,
                       const char **s)
{
	int rc = expect_type(l, n, YAML_SCALAR_NODE, what);

	if (rc)
		return rc;
	if (n->data.scalar.length > cap)
		return fail_at(l, n, -EINVAL, "'%s' is longer than %zu bytes", what, cap);
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
		return fail_at(l, n, -EINVAL, "'%s' contains a NUL byte", what);
	*s = (const char *)n->data.scalar.value;
	return 0;
}

/* The optional string under key in map into *s ("" when unset). */
static int optional_text(struct loader *l, const yaml_node_t *map, const char *key,
                         const char *prefix, const char **s)
{
	const yaml_node_t *n = map_get(l, map, key);
	char what[WHAT_LEN];

	*s = "";
	if (is_unset(n))
		return 0;
	snprintf(what, sizeof(what), "%s%s%s", prefix, prefix[0] ? "." : "", key);
	return scalar_text(l, n, what, NAME_CAP, s);
}

/* Wipes every scalar so tokens and keys do not linger in freed memory. */
static void wipe_document(yaml_document_t *doc)
{
	for (yaml_node_t *n = doc->nodes.start; n && n < doc->nodes.top; n++)
		if (n->type == YAML_SCALAR_NODE)
			OPENSSL_cleanse(n->data.scalar.value, n->data.scalar.length);
}

/* ---- named lists ------------------------------------------------------- */

/* Checks entry `what` ("clusters[2]") of a named list: a mapping with a
 * string name and, under inner, a mapping or nothing. */
static int check_entry(struct loader *l, const yaml_node_t *entry, const char *what,
                       const char *inner, const char **name, const yaml_node_t **value)
{
	char sub[2 * WHAT_LEN];
	int rc;

	rc = expect_type(l, entry, YAML_MAPPING_NODE, what);
	if (rc)
		return rc;
	rc = optional_text(l, entry, "name", what, name);
	if (rc)
		return rc;
	*value = map_get(l, entry, inner);
	if (is_unset(*value)) {
		*value = NULL;
		return 0;
	}
	snprintf(sub, sizeof(sub), "%s.%s", what, inner);
	return expect_type(l, *value, YAML_MAPPING_NODE, sub);
}

/* Finds the entry named name in the top-level list `list` ("clusters") and
 * gives its index (-1 if none) and its `inner` mapping (NULL if unset).
 * Every entry's shape is checked; a name that appears twice is an error.
 * O(entries). */
static int find_named(struct loader *l, const yaml_node_t *root, const char *list,
                      const char *inner, const char *name, long *index, const yaml_node_t **value)
{
	const yaml_node_t *seq = map_get(l, root, list), *v;
	char what[WHAT_LEN];
	const char *entry_name;
	long i = 0;
	int rc;

	*index = -1;
	*value = NULL;
	if (is_unset(seq))
		return 0;
	rc = expect_type(l, seq, YAML_SEQUENCE_NODE, list);
	for (yaml_node_item_t *it = seq->data.sequence.items.start;
	     rc == 0 && it < seq->data.sequence.items.top; it++, i++) {
		const yaml_node_t *entry = node_at(l, *it);

		snprintf(what, sizeof(what), "%s[%ld]", list, i);
		rc = check_entry(l, entry, what, inner, &entry_name, &v);
		if (rc || strcmp(entry_name, name) != 0)
			continue;
		if (*index >= 0)
			return fail_at(l, entry, -EINVAL, "%s name '%s' appears twice", list, name);
		*index = i;
		*value = v;
	}
	return rc;
}

/* ---- field values ------------------------------------------------------ */

static int field_string(struct loader *l, const yaml_node_t *n, const char *what,
                        const struct field *f, char **out)
{
	const char *s;
	int rc = scalar_text(l, n, what, f->cap, &s);

	if (rc)
		return rc;
	if (has_control_char(s, n->data.scalar.length))
		return fail_at(l, n, -EINVAL, "'%s' contains a control character", what);
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

static int field_path(struct loader *l, const yaml_node_t *n, const char *what,
                      const struct field *f, char **out)
{
	char *p = NULL;
	int rc = field_string(l, n, what, f, &p);

	if (rc || p[0] == '/') {
		*out = p;
		return rc;
	}
	rc = join_path(l->dir, p, out);
	free(p);
	if (rc == -ENAMETOOLONG)
		return fail_at(l, n, -EINVAL, "'%s' is too long once resolved against %s", what,
		               l->dir);
	return rc;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' || c == '/' ? 0 : -1;
}

/* Copies s without whitespace into compact (len + 1 bytes) and checks that
 * it is standard, padded base64. Returns its length and the padding count,
 * or -1 with *bad set to the offset in s of the first offending byte. */
static long b64_compact(const char *s, size_t len, char *compact, size_t *pad, size_t *bad)
{
	size_t n = 0;

	*pad = 0;
	for (size_t i = 0; i < len; i++) {
		if (is_space(s[i]))
			continue;
		*bad = i;
		if (s[i] == '=' && *pad < 2)
			(*pad)++;
		else if (*pad > 0 || b64_value(s[i]) < 0)
			return -1;
		compact[n++] = s[i];
	}
	*bad = len;
	return n % 4 == 0 ? (long)n : -1;
}

/* Decodes a -data field into a new blob (NUL-terminated past len). Strict:
 * the standard alphabet, '=' padding to a multiple of 4, whitespace and
 * line breaks ignored; anything else is -EINVAL. */
static int field_data(struct loader *l, const yaml_node_t *n, const char *what,
                      const struct field *f, struct kubeapi_blob *out)
{
	size_t pad, bad, len;
	char *compact, *bytes = NULL;
	const char *s;
	long clen;
	int rc, got;

	rc = scalar_text(l, n, what, f->cap, &s);
	if (rc)
		return rc;
	len = n->data.scalar.length;
	compact = malloc(len + 1);
	if (!compact)
		return -ENOMEM;
	clen = b64_compact(s, len, compact, &pad, &bad);
	if (clen < 0 && bad < len)
		rc = fail_at(l, n, -EINVAL, "'%s' is not valid base64 (byte %zu of the value)",
		             what, bad + 1);
	else if (clen < 0)
		rc = fail_at(l, n, -EINVAL, "'%s' is not valid base64 (length not a multiple of 4)",
		             what);
	if (clen <= 0) /* an error, or only whitespace: unset */
		goto out;
	bytes = malloc((size_t)clen / 4 * 3 + 1);
	if (!bytes) {
		rc = -ENOMEM;
		goto out;
	}
	/* EVP_DecodeBlock decodes '=' as zero bits; the padding count says how
	 * many of its output bytes are not data. */
	got = EVP_DecodeBlock((unsigned char *)bytes, (unsigned char *)compact, (int)clen);
	if (got < 0 || (size_t)got < pad) {
		rc = fail_at(l, n, -EINVAL, "'%s' is not valid base64", what);
		goto out;
	}
	out->len = (size_t)got - pad;
	bytes[out->len] = '\0';
	out->data = bytes;
	bytes = NULL;
out:
	free_secret(&bytes, clen > 0 ? (size_t)clen / 4 * 3 : 0);
	free_secret(&compact, len);
	return rc;
}

/* Only the YAML 1.2 core booleans; "yes", "on", "1" or a quoted "true" are
 * errors rather than a guess. */
static int field_bool(struct loader *l, const yaml_node_t *n, const char *what, int *out)
{
	static const char *const truths[] = {"true", "True", "TRUE"};
	static const char *const lies[] = {"false", "False", "FALSE"};
	int rc = expect_type(l, n, YAML_SCALAR_NODE, what);

	if (rc)
		return rc;
	for (size_t i = 0; n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && i < 3; i++) {
		if (scalar_is(n, truths[i]) || scalar_is(n, lies[i])) {
			*out = scalar_is(n, truths[i]);
			return 0;
		}
	}
	return fail_at(l, n, -EINVAL, "expected true or false for '%s'", what);
}

static int apply_field(struct loader *l, const yaml_node_t *n, const char *what,
                       const struct field *f, struct kubeapi_conn *c)
{
	void *dst = (char *)c + f->off;

	switch (f->kind) {
	case FIELD_STRING:
		return field_string(l, n, what, f, dst);
	case FIELD_PATH:
		return field_path(l, n, what, f, dst);
	case FIELD_DATA:
		return field_data(l, n, what, f, dst);
	case FIELD_BOOL:
		return field_bool(l, n, what, dst);
	case FIELD_UNSUPPORTED:
		break;
	}
	return fail_at(l, n, -ENOTSUP, "'%s': %s", what, f->why);
}

/* Reads the fields of table[] found in map (the cluster or user mapping
 * at `prefix`) into c. Unknown keys are ignored. O(fields * pairs). */
static int apply_fields(struct loader *l, const yaml_node_t *map, const char *prefix,
                        const struct field *table, size_t count, struct kubeapi_conn *c)
{
	char what[WHAT_LEN];
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < count; i++) {
		const yaml_node_t *n = map_get(l, map, table[i].key);

		if (is_unset(n))
			continue;
		snprintf(what, sizeof(what), "%s.%s", prefix, table[i].key);
		rc = apply_field(l, n, what, &table[i], c);
	}
	return rc;
}

/* ---- checks across fields ---------------------------------------------- */

/* Scheme http or https (https added when there is none, as client-go
 * does), a host, no trailing '/'. Edits c->server in place. */
static int normalize_server(struct loader *l, const yaml_node_t *at, const char *cluster,
                            struct kubeapi_conn *c)
{
	const char *sep = strstr(c->server, "://");
	size_t len = strlen(c->server), min;
	char *url;

	if (!sep) {
		if (asprintf(&url, "https://%s", c->server) < 0)
			return -ENOMEM;
		free(c->server);
		c->server = url;
		sep = strstr(url, "://");
		len = strlen(url);
	}
	if (!(sep - c->server == 5 && strncasecmp(c->server, "https", 5) == 0) &&
	    !(sep - c->server == 4 && strncasecmp(c->server, "http", 4) == 0))
		return fail_at(l, at, -EINVAL, "cluster '%s': server '%s' is not an http(s) URL",
		               cluster, c->server);
	min = (size_t)(sep - c->server) + 3;
	while (len > min && c->server[len - 1] == '/')
		c->server[--len] = '\0';
	if (len == min)
		return fail_at(l, at, -EINVAL, "cluster '%s': server '%s' has no host", cluster,
		               c->server);
	return 0;
}

/* A file the kubeconfig names must be readable now. */
static int check_readable(struct loader *l, const char *path, const char *key, const char *kind,
                          const char *name)
{
	if (!path || access(path, R_OK) == 0)
		return 0;
	return fail_at(l, NULL, -errno, "%s '%s' of %s '%s': %s", key, path, kind, name,
	               strerror(errno));
}

static int check_cluster(struct loader *l, const yaml_node_t *at, const char *name,
                         struct kubeapi_conn *c)
{
	if (!c->server)
		return fail_at(l, at, -EINVAL, "cluster '%s' has no server", name);
	if (c->ca_file && c->ca_data.data)
		return fail_at(l, at, -EINVAL,
		               "cluster '%s': certificate-authority and certificate-authority-data "
		               "are both set",
		               name);
	if (c->insecure_skip_tls_verify && (c->ca_file || c->ca_data.data))
		return fail_at(l, at, -EINVAL,
		               "cluster '%s': insecure-skip-tls-verify is set together with a "
		               "certificate authority",
		               name);
	return check_readable(l, c->ca_file, "certificate-authority", "cluster", name);
}

static int check_user(struct loader *l, const yaml_node_t *at, const char *name,
                      struct kubeapi_conn *c)
{
	bool cert = c->cert_file || c->cert_data.data, key = c->key_file || c->key_data.data;
	int rc;

	if (c->cert_file && c->cert_data.data)
		return fail_at(l, at, -EINVAL,
		               "user '%s': client-certificate and client-certificate-data are "
		               "both set",
		               name);
	if (c->key_file && c->key_data.data)
		return fail_at(l, at, -EINVAL,
		               "user '%s': client-key and client-key-data are both set", name);
	if (cert != key)
		return fail_at(l, at, -EINVAL, "user '%s': a client %s needs a client %s", name,
		               cert ? "certificate" : "key", cert ? "key" : "certificate");
	rc = check_readable(l, c->cert_file, "client-certificate", "user", name);
	if (rc == 0)
		rc = check_readable(l, c->key_file, "client-key", "user", name);
	return rc;
}

/* Reads the token file once so that a bad path fails now; primes the cache
 * without spending the first kubeapi_conn_token() check. */
static int prime_token(struct kubeapi_conn *c)
{
	return c->token_file ? read_token_file(c->token_file, &c->token_cached, &c->token_mtime)
	                     : 0;
}

/* ---- the kubeconfig ---------------------------------------------------- */

static int pick_context(struct loader *l, const yaml_node_t *root, const char *want,
                        struct selection *sel)
{
	const yaml_node_t *ctx;
	char what[WHAT_LEN];
	long i;
	int rc;

	sel->context = want ? want : "";
	if (!sel->context[0]) {
		rc = optional_text(l, root, "current-context", "", &sel->context);
		if (rc)
			return rc;
	}
	if (!sel->context[0])
		return fail_at(l, NULL, -ENOENT, "no context given and no current-context set");
	rc = find_named(l, root, "contexts", "context", sel->context, &i, &ctx);
	if (rc)
		return rc;
	if (i < 0)
		return fail_at(l, NULL, -ENOENT, "context '%s' not found", sel->context);
	snprintf(what, sizeof(what), "contexts[%ld].context", i);
	rc = optional_text(l, ctx, "cluster", what, &sel->cluster);
	if (rc == 0)
		rc = optional_text(l, ctx, "user", what, &sel->user);
	if (rc == 0 && !sel->cluster[0])
		rc = fail_at(l, ctx, -ENOENT, "context '%s' names no cluster", sel->context);
	return rc;
}

static int load_cluster(struct loader *l, const yaml_node_t *root, const struct selection *sel,
                        struct kubeapi_conn *c)
{
	const yaml_node_t *map;
	char what[WHAT_LEN];
	long i;
	int rc;

	rc = find_named(l, root, "clusters", "cluster", sel->cluster, &i, &map);
	if (rc)
		return rc;
	if (i < 0)
		return fail_at(l, NULL, -ENOENT, "cluster '%s' (of context '%s') not found",
		               sel->cluster, sel->context);
	snprintf(what, sizeof(what), "clusters[%ld].cluster", i);
	rc = apply_fields(l, map, what, cluster_fields, COUNT(cluster_fields), c);
	if (rc == 0)
		rc = check_cluster(l, map, sel->cluster, c);
	if (rc == 0)
		rc = normalize_server(l, map, sel->cluster, c);
	return rc;
}

/* A context without a user is anonymous, as in client-go. */
static int load_user(struct loader *l, const yaml_node_t *root, const struct selection *sel,
                     struct kubeapi_conn *c)
{
	const yaml_node_t *map;
	char what[WHAT_LEN];
	long i;
	int rc;

	if (!sel->user[0])
		return 0;
	rc = find_named(l, root, "users", "user", sel->user, &i, &map);
	if (rc)
		return rc;
	if (i < 0)
		return fail_at(l, NULL, -ENOENT, "user '%s' (of context '%s') not found", sel->user,
		               sel->context);
	snprintf(what, sizeof(what), "users[%ld].user", i);
	rc = apply_fields(l, map, what, user_fields, COUNT(user_fields), c);
	if (rc == 0)
		rc = check_user(l, map, sel->user, c);
	if (rc == 0) {
		rc = prime_token(c);
		if (rc)
			fail_at(l, NULL, rc, "tokenFile '%s' of user '%s': %s", c->token_file,
			        sel->user, rc == -EINVAL ? "empty or not a token" : strerror(-rc));
	}
	return rc;
}

static int load(struct loader *l, const char *context, struct kubeapi_conn *c)
{
	const yaml_node_t *root = yaml_document_get_root_node(&l->doc);
	struct selection sel;
	int rc;

	if (is_unset(root))
		root = NULL; /* an empty file: no contexts */
	else if ((rc = expect_type(l, root, YAML_MAPPING_NODE, "the top level")) != 0)
		return rc;
	rc = pick_context(l, root, context, &sel);
	if (rc == 0)
		rc = load_cluster(l, root, &sel, c);
	if (rc == 0)
		rc = load_user(l, root, &sel, c);
	return rc;
}

/* Parses text into l->doc; a syntax error names its line and column. */
static int parse(struct loader *l, const char *text, size_t len)
{
	yaml_parser_t parser;
	int rc = 0;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (yaml_parser_load(&parser, &l->doc))
		goto out;
	if (parser.error == YAML_MEMORY_ERROR)
		rc = fail_at(l, NULL, -ENOMEM, "out of memory parsing YAML");
	else if (parser.error == YAML_READER_ERROR)
		rc = fail_at(l, NULL, -EINVAL, "byte %zu: %s", parser.problem_offset + 1,
		             parser.problem ? parser.problem : "unreadable input");
	else if (parser.context)
		rc = fail(l->err, l->errlen, -EINVAL, "%s:%zu:%zu: %s (%s at %zu:%zu)", l->file,
		          parser.problem_mark.line + 1, parser.problem_mark.column + 1,
		          parser.problem ? parser.problem : "invalid YAML", parser.context,
		          parser.context_mark.line + 1, parser.context_mark.column + 1);
	else
		rc = fail(l->err, l->errlen, -EINVAL, "%s:%zu:%zu: %s", l->file,
		          parser.problem_mark.line + 1, parser.problem_mark.column + 1,
		          parser.problem ? parser.problem : "invalid YAML");
out:
	yaml_parser_delete(&parser);
	return rc;
}

/* The absolute directory of l->file, for relative paths inside it. */
static int set_dir(struct loader *l)
{
	const char *slash = strrchr(l->file, '/');
	char *dir, *cwd;
	int rc;

	if (slash == l->file)
		dir = strdup("/");
	else if (slash && !(slash - l->file == 1 && l->file[0] == '.'))
		dir = strndup(l->file, (size_t)(slash - l->file));
	else
		dir = strdup(""); /* "kubeconfig" or "./kubeconfig" */
	if (!dir)
		return -ENOMEM;
	if (dir[0] == '/') {
		l->dir = dir;
		return 0;
	}
	cwd = getcwd(NULL, 0);
	rc = !cwd ? -errno : dir[0] ? join_path(cwd, dir, &l->dir) : 0;
	if (rc == 0 && !dir[0]) {
		l->dir = cwd;
		cwd = NULL;
	}
	free(cwd);
	free(dir);
	if (rc)
		return fail_at(l, NULL, rc, "cannot resolve its directory: %s", strerror(-rc));
	return 0;
}

static int read_kubeconfig(struct loader *l, char **text, size_t *len)
{
	struct timespec mtime;
	int rc = read_capped(l->file, KUBEAPI_KUBECONFIG_MAX, text, len, &mtime);

	if (rc == -EFBIG)
		return fail_at(l, NULL, rc, "larger than %d bytes", KUBEAPI_KUBECONFIG_MAX);
	if (rc == -EINVAL)
		return fail_at(l, NULL, rc, "not a regular file");
	if (rc)
		return fail_at(l, NULL, rc, "%s", strerror(-rc));
	return 0;
}

int kubeapi_conn_from_kubeconfig(const char *path, const char *context, struct kubeapi_conn *out,
                                 char *err, size_t errlen)
{
	struct loader l = {.file = path, .err = err, .errlen = errlen};
	struct kubeapi_conn c = {0};
	char *text = NULL;
	size_t len = 0;
	int rc;

	fail(err, errlen, 0, "%s", "");
	rc = read_kubeconfig(&l, &text, &len);
	if (rc)
		return rc;
	rc = parse(&l, text, len);
	if (rc)
		goto fail_parse;
	rc = set_dir(&l);
	if (rc == 0)
		rc = load(&l, context, &c);
	if (rc == 0) {
		*out = c;
		memset(&c, 0, sizeof(c));
	}
	kubeapi_conn_free(&c);
	free(l.dir);
	wipe_document(&l.doc);
	yaml_document_delete(&l.doc);
fail_parse:
	free_secret(&text, len);
	return rc;
}

/* ---- in-cluster -------------------------------------------------------- */

/* "https://host:port", with brackets around an IPv6 host. */
static int service_url(const char *host, const char *port, char **url, char *err, size_t errlen)
{
	size_t hlen = strlen(host), plen = strlen(port);
	bool v6 = strchr(host, ':') != NULL;
	long p;

	if (hlen > HOST_CAP || strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                                    "0123456789.-:") != hlen)
		return fail(err, errlen, -EINVAL, "KUBERNETES_SERVICE_HOST '%.*s' is not a host",
		            HOST_CAP, host);
	p = plen <= 5 && strspn(port, "0123456789") == plen ? strtol(port, NULL, 10) : 0;
	if (p < 1 || p > 65535)
		return fail(err, errlen, -EINVAL, "KUBERNETES_SERVICE_PORT '%.*s' is not a port",
		            HOST_CAP, port);
	if (asprintf(url, "https://%s%s%s:%ld", v6 ? "[" : "", host, v6 ? "]" : "", p) < 0)
		return -ENOMEM;
	return 0;
}

static int sa_file(const char *dir, const char *name, char **out, char *err, size_t errlen)
{
	int rc = join_path(dir, name, out);

	if (rc == -ENAMETOOLONG)
		return fail(err, errlen, -EINVAL, "service account directory '%.*s' is too long",
		            PATH_CAP, dir);
	return rc;
}

int kubeapi_conn_in_cluster(const char *sa_dir, struct kubeapi_conn *out, char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	struct kubeapi_conn c = {0};
	int rc;

	fail(err, errlen, 0, "%s", "");
	if (!sa_dir)
		sa_dir = SA_DIR_DEFAULT;
	if (!host || !host[0] || !port || !port[0])
		return fail(err, errlen, -ENOENT,
		            "not running in a cluster: KUBERNETES_SERVICE_HOST and "
		            "KUBERNETES_SERVICE_PORT are not set");
	rc = service_url(host, port, &c.server, err, errlen);
	if (rc == 0)
		rc = sa_file(sa_dir, "token", &c.token_file, err, errlen);
	if (rc == 0)
		rc = sa_file(sa_dir, "ca.crt", &c.ca_file, err, errlen);
	if (rc == 0 && (rc = prime_token(&c)) != 0)
		fail(err, errlen, rc, "in-cluster service account token %s: %s", c.token_file,
		     rc == -EINVAL ? "empty or not a token" : strerror(-rc));
	if (rc == 0 && access(c.ca_file, R_OK) != 0)
		rc = fail(err, errlen, -errno, "in-cluster service account CA %s: %s", c.ca_file,
		          strerror(errno));
	if (rc == 0) {
		*out = c;
		memset(&c, 0, sizeof(c));
	}
	kubeapi_conn_free(&c);
	return rc;
}
