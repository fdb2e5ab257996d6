/*
 * Kubeconfig files, read into a struct kubeapi_conn (see conn.h). The
 * libyaml document and the values of its fields are read in
 * kubeconfig_yaml.c; the in-cluster environment, the token cache and the
 * capped file reads are in conn.c.
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
#include "kubeapi/conn_internal.h"
#include "kubeapi/kubeconfig_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <yaml.h>

/* The context chosen and the entries it leads to. Strings point into the
 * document. */
struct selection {
	const char *context, *cluster, *user;
};

#define AT(member) offsetof(struct kubeapi_conn, member)

static const struct kubeapi__field cluster_fields[] = {
    {"server", KUBEAPI__FIELD_STRING, AT(server), KUBEAPI__URL_CAP, NULL},
    {"certificate-authority", KUBEAPI__FIELD_PATH, AT(ca_file), KUBEAPI__PATH_CAP, NULL},
    {"certificate-authority-data", KUBEAPI__FIELD_DATA, AT(ca_data), KUBEAPI__DATA_CAP, NULL},
    {"insecure-skip-tls-verify", KUBEAPI__FIELD_BOOL, AT(insecure_skip_tls_verify), 0, NULL},
    {"tls-server-name", KUBEAPI__FIELD_STRING, AT(tls_server_name), KUBEAPI__HOST_CAP, NULL},
    {"proxy-url", KUBEAPI__FIELD_UNSUPPORTED, 0, 0, "proxies are not supported"},
};

#define NO_BASIC                                                                                   \
	"basic auth (username/password) is not supported; use a token or a client certificate"
#define NO_IMPERSONATION "impersonation is not supported"

static const struct kubeapi__field user_fields[] = {
    {"token", KUBEAPI__FIELD_STRING, AT(token), KUBEAPI__TOKEN_CAP, NULL},
    {"tokenFile", KUBEAPI__FIELD_PATH, AT(token_file), KUBEAPI__PATH_CAP, NULL},
    {"client-certificate", KUBEAPI__FIELD_PATH, AT(cert_file), KUBEAPI__PATH_CAP, NULL},
    {"client-certificate-data", KUBEAPI__FIELD_DATA, AT(cert_data), KUBEAPI__DATA_CAP, NULL},
    {"client-key", KUBEAPI__FIELD_PATH, AT(key_file), KUBEAPI__PATH_CAP, NULL},
    {"client-key-data", KUBEAPI__FIELD_DATA, AT(key_data), KUBEAPI__DATA_CAP, NULL},
    {"username", KUBEAPI__FIELD_UNSUPPORTED, 0, 0, NO_BASIC},
    {"password", KUBEAPI__FIELD_UNSUPPORTED, 0, 0, NO_BASIC},
    {"exec", KUBEAPI__FIELD_UNSUPPORTED, 0, 0,
     "exec credential plugins are not supported; use a token, tokenFile or client certificate"},
    {"auth-provider", KUBEAPI__FIELD_UNSUPPORTED, 0, 0,
     "auth-provider plugins are not supported; use a token, tokenFile or client certificate"},
    {"as", KUBEAPI__FIELD_UNSUPPORTED, 0, 0, NO_IMPERSONATION},
    {"as-uid", KUBEAPI__FIELD_UNSUPPORTED, 0, 0, NO_IMPERSONATION},
    {"as-groups", KUBEAPI__FIELD_UNSUPPORTED, 0, 0, NO_IMPERSONATION},
    {"as-user-extra", KUBEAPI__FIELD_UNSUPPORTED, 0, 0, NO_IMPERSONATION},
};

#define COUNT(t) (sizeof(t) / sizeof((t)[0]))

/* ---- checks across fields ---------------------------------------------- */

/* Scheme http or https (https added when there is none, as client-go
 * does), a host, no trailing '/'. Edits c->server in place. */
static int normalize_server(struct kubeapi__loader *l, const yaml_node_t *at, const char *cluster,
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
		return kubeapi__yaml_fail_at(l, at, -EINVAL,
		                             "cluster '%s': server '%s' is not an http(s) URL",
		                             cluster, c->server);
	min = (size_t)(sep - c->server) + 3;
	while (len > min && c->server[len - 1] == '/')
		c->server[--len] = '\0';
	if (len == min)
		return kubeapi__yaml_fail_at(
		    l, at, -EINVAL, "cluster '%s': server '%s' has no host", cluster, c->server);
	return 0;
}

/* A file the kubeconfig names must be readable now. */
static int check_readable(struct kubeapi__loader *l, const char *path, const char *key,
                          const char *kind, const char *name)
{
	if (!path || access(path, R_OK) == 0)
		return 0;
	return kubeapi__yaml_fail_at(l, NULL, -errno, "%s '%s' of %s '%s': %s", key, path, kind,
	                             name, strerror(errno));
}

static int check_cluster(struct kubeapi__loader *l, const yaml_node_t *at, const char *name,
                         struct kubeapi_conn *c)
{
	if (!c->server)
		return kubeapi__yaml_fail_at(l, at, -EINVAL, "cluster '%s' has no server", name);
	if (c->ca_file && c->ca_data.data)
		return kubeapi__yaml_fail_at(
		    l, at, -EINVAL,
		    "cluster '%s': certificate-authority and certificate-authority-data "
		    "are both set",
		    name);
	if (c->insecure_skip_tls_verify && (c->ca_file || c->ca_data.data))
		return kubeapi__yaml_fail_at(
		    l, at, -EINVAL,
		    "cluster '%s': insecure-skip-tls-verify is set together with a "
		    "certificate authority",
		    name);
	return check_readable(l, c->ca_file, "certificate-authority", "cluster", name);
}

static int check_user(struct kubeapi__loader *l, const yaml_node_t *at, const char *name,
                      struct kubeapi_conn *c)
{
	bool cert = c->cert_file || c->cert_data.data, key = c->key_file || c->key_data.data;
	int rc;

	if (c->cert_file && c->cert_data.data)
		return kubeapi__yaml_fail_at(
		    l, at, -EINVAL,
		    "user '%s': client-certificate and client-certificate-data are "
		    "both set",
		    name);
	if (c->key_file && c->key_data.data)
		return kubeapi__yaml_fail_at(
		    l, at, -EINVAL, "user '%s': client-key and client-key-data are both set", name);
	if (cert != key)
		return kubeapi__yaml_fail_at(
		    l, at, -EINVAL, "user '%s': a client %s needs a client %s", name,
		    cert ? "certificate" : "key", cert ? "key" : "certificate");
	rc = check_readable(l, c->cert_file, "client-certificate", "user", name);
	if (rc == 0)
		rc = check_readable(l, c->key_file, "client-key", "user", name);
	return rc;
}

/* ---- the kubeconfig ---------------------------------------------------- */

static int pick_context(struct kubeapi__loader *l, const yaml_node_t *root, const char *want,
                        struct selection *sel)
{
	const yaml_node_t *ctx;
	char what[KUBEAPI__WHAT_LEN];
	long i;
	int rc;

	sel->context = want ? want : "";
	if (!sel->context[0]) {
		rc = kubeapi__yaml_optional_text(l, root, "current-context", "", &sel->context);
		if (rc)
			return rc;
	}
	if (!sel->context[0])
		return kubeapi__yaml_fail_at(l, NULL, -ENOENT,
		                             "no context given and no current-context set");
	rc = kubeapi__yaml_find_named(l, root, "contexts", "context", sel->context, &i, &ctx);
	if (rc)
		return rc;
	if (i < 0)
		return kubeapi__yaml_fail_at(l, NULL, -ENOENT, "context '%s' not found",
		                             sel->context);
	snprintf(what, sizeof(what), "contexts[%ld].context", i);
	rc = kubeapi__yaml_optional_text(l, ctx, "cluster", what, &sel->cluster);
	if (rc == 0)
		rc = kubeapi__yaml_optional_text(l, ctx, "user", what, &sel->user);
	if (rc == 0 && !sel->cluster[0])
		rc = kubeapi__yaml_fail_at(l, ctx, -ENOENT, "context '%s' names no cluster",
		                           sel->context);
	return rc;
}

static int load_cluster(struct kubeapi__loader *l, const yaml_node_t *root,
                        const struct selection *sel, struct kubeapi_conn *c)
{
	const yaml_node_t *map;
	char what[KUBEAPI__WHAT_LEN];
	long i;
	int rc;

	rc = kubeapi__yaml_find_named(l, root, "clusters", "cluster", sel->cluster, &i, &map);
	if (rc)
		return rc;
	if (i < 0)
		return kubeapi__yaml_fail_at(l, NULL, -ENOENT,
		                             "cluster '%s' (of context '%s') not found",
		                             sel->cluster, sel->context);
	snprintf(what, sizeof(what), "clusters[%ld].cluster", i);
	rc = kubeapi__yaml_apply_fields(l, map, what, cluster_fields, COUNT(cluster_fields), c);
	if (rc == 0)
		rc = check_cluster(l, map, sel->cluster, c);
	if (rc == 0)
		rc = normalize_server(l, map, sel->cluster, c);
	return rc;
}

/* A context without a user is anonymous, as in client-go. */
static int load_user(struct kubeapi__loader *l, const yaml_node_t *root,
                     const struct selection *sel, struct kubeapi_conn *c)
{
	const yaml_node_t *map;
	char what[KUBEAPI__WHAT_LEN];
	long i;
	int rc;

	if (!sel->user[0])
		return 0;
	rc = kubeapi__yaml_find_named(l, root, "users", "user", sel->user, &i, &map);
	if (rc)
		return rc;
	if (i < 0)
		return kubeapi__yaml_fail_at(l, NULL, -ENOENT,
		                             "user '%s' (of context '%s') not found", sel->user,
		                             sel->context);
	snprintf(what, sizeof(what), "users[%ld].user", i);
	rc = kubeapi__yaml_apply_fields(l, map, what, user_fields, COUNT(user_fields), c);
	if (rc == 0)
		rc = check_user(l, map, sel->user, c);
	if (rc == 0) {
		rc = kubeapi__conn_prime_token(c);
		if (rc)
			kubeapi__yaml_fail_at(
			    l, NULL, rc, "tokenFile '%s' of user '%s': %s", c->token_file,
			    sel->user, rc == -EINVAL ? "empty or not a token" : strerror(-rc));
	}
	return rc;
}

static int load(struct kubeapi__loader *l, const char *context, struct kubeapi_conn *c)
{
	const yaml_node_t *root = yaml_document_get_root_node(&l->doc);
	struct selection sel;
	int rc;

	if (kubeapi__yaml_is_unset(root))
		root = NULL; /* an empty file: no contexts */
	else if ((rc = kubeapi__yaml_expect_type(l, root, YAML_MAPPING_NODE, "the top level")) != 0)
		return rc;
	rc = pick_context(l, root, context, &sel);
	if (rc == 0)
		rc = load_cluster(l, root, &sel, c);
	if (rc == 0)
		rc = load_user(l, root, &sel, c);
	return rc;
}

/* The absolute directory of l->file, for relative paths inside it. */
static int set_dir(struct kubeapi__loader *l)
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
	rc = !cwd ? -errno : dir[0] ? kubeapi__conn_join_path(cwd, dir, &l->dir) : 0;
	if (rc == 0 && !dir[0]) {
		l->dir = cwd;
		cwd = NULL;
	}
	free(cwd);
	free(dir);
	if (rc)
		return kubeapi__yaml_fail_at(l, NULL, rc, "cannot resolve its directory: %s",
		                             strerror(-rc));
	return 0;
}

static int read_kubeconfig(struct kubeapi__loader *l, char **text, size_t *len)
{
	struct timespec mtime;
	int rc = kubeapi__conn_read_capped(l->file, KUBEAPI_KUBECONFIG_MAX, text, len, &mtime);

	if (rc == -EFBIG)
		return kubeapi__yaml_fail_at(l, NULL, rc, "larger than %d bytes",
		                             KUBEAPI_KUBECONFIG_MAX);
	if (rc == -EINVAL)
		return kubeapi__yaml_fail_at(l, NULL, rc, "not a regular file");
	if (rc)
		return kubeapi__yaml_fail_at(l, NULL, rc, "%s", strerror(-rc));
	return 0;
}

int kubeapi_conn_from_kubeconfig(const char *path, const char *context, struct kubeapi_conn *out,
                                 char *err, size_t errlen)
{
	struct kubeapi__loader l = {.file = path, .err = err, .errlen = errlen};
	struct kubeapi_conn c = {0};
	char *text = NULL;
	size_t len = 0;
	int rc;

	kubeapi__conn_fail(err, errlen, 0, "%s", "");
	rc = read_kubeconfig(&l, &text, &len);
	if (rc)
		return rc;
	rc = kubeapi__yaml_parse(&l, text, len);
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
	kubeapi__yaml_wipe_document(&l.doc);
	yaml_document_delete(&l.doc);
fail_parse:
	kubeapi__conn_free_secret(&text, len);
	return rc;
}
