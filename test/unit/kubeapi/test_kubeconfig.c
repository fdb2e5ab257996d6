/*
 * kubeapi/kubeconfig: kubeconfig files and the in-cluster environment read
 * into a struct kubeapi_conn, and the rotating token file cache.
 *
 * Every test works in its own directory made by mkdtemp under /tmp and
 * removed afterwards; nothing depends on a real cluster. Error tests check
 * the errno, the exact message a person would see, and that the caller's
 * struct was not touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kubeapi/conn.h"

/* One test's scratch directory and the conn it loads into. */
struct fixture {
	char dir[64];
	struct kubeapi_conn conn;
	char err[512];
};

/* Written over an output struct before a call that must fail. */
#define POISON 0xa5

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/muster-kubeconfig-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	kubeapi_conn_free(&f->conn);
	nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	return 0;
}

/* f->dir + "/" + name, in a static-lifetime-free buffer owned by the caller. */
static void path_in(const struct fixture *f, const char *name, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%s", f->dir, name);

	assert_true(n > 0 && (size_t)n < len);
}

static void write_bytes(const struct fixture *f, const char *name, const char *data, size_t len)
{
	char path[256];
	FILE *fp;

	path_in(f, name, path, sizeof(path));
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

static void write_file(const struct fixture *f, const char *name, const char *text)
{
	write_bytes(f, name, text, strlen(text));
}

static void make_dir(const struct fixture *f, const char *name)
{
	char path[256];

	path_in(f, name, path, sizeof(path));
	assert_int_equal(mkdir(path, 0700), 0);
}

/* Loads f->dir/name into f->conn. */
static int load(struct fixture *f, const char *name, const char *context)
{
	char path[256];

	path_in(f, name, path, sizeof(path));
	return kubeapi_conn_from_kubeconfig(path, context, &f->conn, f->err, sizeof(f->err));
}

/* Loading f->dir/name must fail with rc and exactly the message
 * "<dir>/<name><suffix>", leaving the output struct as it was. */
static void expect_error(struct fixture *f, const char *name, const char *context, int rc,
                         const char *suffix)
{
	struct kubeapi_conn c, before;
	char path[256], want[768];

	memset(&c, POISON, sizeof(c));
	memcpy(&before, &c, sizeof(c));
	path_in(f, name, path, sizeof(path));
	snprintf(want, sizeof(want), "%s%s", path, suffix);
	assert_int_equal(kubeapi_conn_from_kubeconfig(path, context, &c, f->err, sizeof(f->err)),
	                 rc);
	assert_string_equal(f->err, want);
	assert_memory_equal(&c, &before, sizeof(c));
}

static void expect_path(const struct fixture *f, const char *got, const char *name)
{
	char want[256];

	path_in(f, name, want, sizeof(want));
	assert_non_null(got);
	assert_string_equal(got, want);
}

/* Sets a file's mtime to `sec` seconds after the epoch. */
static void set_mtime(const struct fixture *f, const char *name, time_t sec)
{
	struct timespec times[2] = {{sec, 0}, {sec, 0}};
	char path[256];

	path_in(f, name, path, sizeof(path));
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

/* Two of everything; current-context picks "b". */
static const char two_contexts[] = "apiVersion: v1\n"
                                   "kind: Config\n"
                                   "clusters:\n"
                                   "- name: a\n"
                                   "  cluster:\n"
                                   "    server: https://a.example:6443\n"
                                   "- name: b\n"
                                   "  cluster:\n"
                                   "    server: https://b.example:6443/prefix//\n"
                                   "    insecure-skip-tls-verify: true\n"
                                   "users:\n"
                                   "- name: ua\n"
                                   "  user: {token: token-a}\n"
                                   "- name: ub\n"
                                   "  user:\n"
                                   "    token: \"token-b\"\n"
                                   "contexts:\n"
                                   "- name: ctx-a\n"
                                   "  context: {cluster: a, user: ua, namespace: default}\n"
                                   "- name: ctx-b\n"
                                   "  context:\n"
                                   "    cluster: b\n"
                                   "    user: ub\n"
                                   "current-context: ctx-b\n";

static void test_current_context(void **state)
{
	struct fixture *f = *state;

	write_file(f, "config", two_contexts);
	assert_int_equal(load(f, "config", NULL), 0);
	assert_string_equal(f->err, "");
	assert_string_equal(f->conn.server, "https://b.example:6443/prefix");
	assert_string_equal(kubeapi_conn_token(&f->conn, 1000), "token-b");
	assert_int_equal(f->conn.insecure_skip_tls_verify, 1);
	assert_null(f->conn.ca_file);
	assert_null(f->conn.token_file);
}

static void test_explicit_context(void **state)
{
	struct fixture *f = *state;

	write_file(f, "config", two_contexts);
	assert_int_equal(load(f, "config", "ctx-a"), 0);
	assert_string_equal(f->conn.server, "https://a.example:6443");
	assert_string_equal(kubeapi_conn_token(&f->conn, 1000), "token-a");
	assert_int_equal(f->conn.insecure_skip_tls_verify, 0);
}

/* Only the plain YAML booleans true/false; anything else is refused. */
static void test_insecure_flag(void **state)
{
	struct fixture *f = *state;
	const char *head = "current-context: c\n"
	                   "contexts: [{name: c, context: {cluster: k}}]\n"
	                   "clusters:\n"
	                   "- name: k\n"
	                   "  cluster:\n"
	                   "    server: https://k\n";
	char text[512];

	snprintf(text, sizeof(text), "%s    insecure-skip-tls-verify: false\n", head);
	write_file(f, "false", text);
	assert_int_equal(load(f, "false", NULL), 0);
	assert_int_equal(f->conn.insecure_skip_tls_verify, 0);
	kubeapi_conn_free(&f->conn);

	snprintf(text, sizeof(text), "%s    insecure-skip-tls-verify: yes\n", head);
	write_file(f, "yes", text);
	expect_error(f, "yes", NULL, -EINVAL,
	             ":7:31: expected true or false for "
	             "'clusters[0].cluster.insecure-skip-tls-verify'");

	snprintf(text, sizeof(text), "%s    insecure-skip-tls-verify: \"true\"\n", head);
	write_file(f, "quoted", text);
	expect_error(f, "quoted", NULL, -EINVAL,
	             ":7:31: expected true or false for "
	             "'clusters[0].cluster.insecure-skip-tls-verify'");
}

/* "-----BEGIN X-----\n" style bytes whose lengths give 0, 1 and 2 padding
 * characters, with a NUL inside to prove the length is not strlen's. */
static const char ca_bytes[] = "CA\0PEM\n"; /* 7 bytes: "Q0EAUEVNCg==" */
static const char cert_bytes[] = "cert-1";  /* 6 bytes: "Y2VydC0x" */
static const char key_bytes[] = "secret-k"; /* 8 bytes: "c2VjcmV0LWs=" */

static void test_data_fields(void **state)
{
	struct fixture *f = *state;

	write_file(f, "config",
	           "current-context: c\n"
	           "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
	           "clusters:\n"
	           "- name: k\n"
	           "  cluster:\n"
	           "    server: https://k:443\n"
	           "    certificate-authority-data: Q0EA\n"
	           "      UEVNCg==\n"
	           "users:\n"
	           "- name: u\n"
	           "  user:\n"
	           "    client-certificate-data: Y2VydC0x\n"
	           "    client-key-data: |\n"
	           "      c2Vj\n"
	           "      cmV0LWs=\n");
	assert_int_equal(load(f, "config", NULL), 0);
	assert_int_equal(f->conn.ca_data.len, sizeof(ca_bytes) - 1);
	assert_memory_equal(f->conn.ca_data.data, ca_bytes, sizeof(ca_bytes) - 1);
	assert_int_equal(f->conn.cert_data.len, sizeof(cert_bytes) - 1);
	assert_memory_equal(f->conn.cert_data.data, cert_bytes, sizeof(cert_bytes) - 1);
	assert_int_equal(f->conn.key_data.len, sizeof(key_bytes) - 1);
	assert_memory_equal(f->conn.key_data.data, key_bytes, sizeof(key_bytes) - 1);
	assert_null(f->conn.ca_file);
	assert_null(f->conn.cert_file);
	assert_null(f->conn.key_file);
	assert_null(kubeapi_conn_token(&f->conn, 1000));
}

static void test_file_fields(void **state)
{
	struct fixture *f = *state;
	char text[1024], ca[256], cert[256], key[256];

	write_file(f, "ca.crt", "ca");
	write_file(f, "c.crt", "cert");
	write_file(f, "c.key", "key");
	path_in(f, "ca.crt", ca, sizeof(ca));
	path_in(f, "c.crt", cert, sizeof(cert));
	path_in(f, "c.key", key, sizeof(key));
	snprintf(
	    text, sizeof(text),
	    "current-context: c\n"
	    "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
	    "clusters: [{name: k, cluster: {server: 'https://k', certificate-authority: %s}}]\n"
	    "users: [{name: u, user: {client-certificate: %s, client-key: %s}}]\n",
	    ca, cert, key);
	write_file(f, "config", text);
	assert_int_equal(load(f, "config", NULL), 0);
	assert_string_equal(f->conn.ca_file, ca);
	assert_string_equal(f->conn.cert_file, cert);
	assert_string_equal(f->conn.key_file, key);
	assert_null(f->conn.ca_data.data);
	assert_null(f->conn.cert_data.data);
	assert_null(f->conn.key_data.data);
}

static const char relative_config[] =
    "current-context: c\n"
    "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    "clusters: [{name: k, cluster: {server: k.example, certificate-authority: ca.crt}}]\n"
    "users:\n"
    "- name: u\n"
    "  user:\n"
    "    client-certificate: ../pki/u.crt\n"
    "    client-key: ../pki/u.key\n"
    "    tokenFile: tok\n";

/* Relative to the kubeconfig's directory, not the working directory; a
 * server without a scheme gets https://. */
static void test_relative_paths(void **state)
{
	struct fixture *f = *state;

	make_dir(f, "kube");
	make_dir(f, "pki");
	write_file(f, "kube/config", relative_config);
	write_file(f, "kube/ca.crt", "ca");
	write_file(f, "kube/tok", "t0k\n");
	write_file(f, "pki/u.crt", "cert");
	write_file(f, "pki/u.key", "key");
	assert_int_equal(load(f, "kube/config", NULL), 0);
	expect_path(f, f->conn.ca_file, "kube/ca.crt");
	expect_path(f, f->conn.cert_file, "kube/../pki/u.crt");
	expect_path(f, f->conn.key_file, "kube/../pki/u.key");
	expect_path(f, f->conn.token_file, "kube/tok");
	assert_string_equal(f->conn.server, "https://k.example");
}

/* A kubeconfig named by a relative path still yields absolute paths. */
static void test_relative_kubeconfig_path(void **state)
{
	struct fixture *f = *state;
	char cwd[4096];

	make_dir(f, "kube");
	make_dir(f, "pki");
	write_file(f, "kube/config", relative_config);
	write_file(f, "kube/ca.crt", "ca");
	write_file(f, "kube/tok", "t0k\n");
	write_file(f, "pki/u.crt", "cert");
	write_file(f, "pki/u.key", "key");
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(f->dir), 0);
	int rc =
	    kubeapi_conn_from_kubeconfig("kube/config", NULL, &f->conn, f->err, sizeof(f->err));
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(rc, 0);
	expect_path(f, f->conn.ca_file, "kube/ca.crt");
	expect_path(f, f->conn.token_file, "kube/tok");
}

static const char token_file_config[] = "current-context: c\n"
                                        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                                        "clusters: [{name: k, cluster: {server: 'https://k'}}]\n"
                                        "users: [{name: u, user: {tokenFile: tok}}]\n";

static void test_token_vs_token_file(void **state)
{
	struct fixture *f = *state;

	write_file(f, "static",
	           "current-context: c\n"
	           "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
	           "clusters: [{name: k, cluster: {server: 'https://k'}}]\n"
	           "users: [{name: u, user: {token: ' abc '}}]\n");
	assert_int_equal(load(f, "static", NULL), 0);
	assert_null(f->conn.token_file);
	assert_string_equal(kubeapi_conn_token(&f->conn, 1000), " abc ");
	kubeapi_conn_free(&f->conn);

	write_file(f, "tok", "  from-file \r\n\n");
	write_file(f, "config", token_file_config);
	assert_int_equal(load(f, "config", NULL), 0);
	assert_null(f->conn.token);
	expect_path(f, f->conn.token_file, "tok");
	assert_string_equal(kubeapi_conn_token(&f->conn, 1000), "from-file");
}

/* The file is stat()ed at most every 10 s and re-read only when its mtime
 * moved; a file that vanishes or turns bad keeps the last good token. */
static void test_token_rotation(void **state)
{
	struct fixture *f = *state;
	const uint64_t t0 = 5000000;
	char big[KUBEAPI_TOKEN_FILE_MAX + 2];
	char path[256];

	write_file(f, "tok", "one\n");
	set_mtime(f, "tok", 1000);
	write_file(f, "config", token_file_config);
	assert_int_equal(load(f, "config", NULL), 0);
	assert_string_equal(kubeapi_conn_token(&f->conn, t0), "one");

	write_file(f, "tok", "two\n");
	set_mtime(f, "tok", 2000);
	assert_string_equal(kubeapi_conn_token(&f->conn, t0 + 9999), "one");
	assert_string_equal(kubeapi_conn_token(&f->conn, t0 + 10000), "two");

	/* Same mtime: not re-read, even though the content changed. */
	write_file(f, "tok", "three\n");
	set_mtime(f, "tok", 2000);
	assert_string_equal(kubeapi_conn_token(&f->conn, t0 + 30000), "two");

	/* Gone, empty, or past the cap: the last good token stays. */
	path_in(f, "tok", path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	assert_string_equal(kubeapi_conn_token(&f->conn, t0 + 50000), "two");
	write_file(f, "tok", " \n");
	set_mtime(f, "tok", 3000);
	assert_string_equal(kubeapi_conn_token(&f->conn, t0 + 70000), "two");
	memset(big, 'x', sizeof(big));
	write_bytes(f, "tok", big, sizeof(big));
	set_mtime(f, "tok", 4000);
	assert_string_equal(kubeapi_conn_token(&f->conn, t0 + 90000), "two");

	/* And a good file is picked up again. */
	write_file(f, "tok", "four");
	set_mtime(f, "tok", 5000);
	assert_string_equal(kubeapi_conn_token(&f->conn, t0 + 110000), "four");
}

static void test_malformed_yaml(void **state)
{
	struct fixture *f = *state;

	write_file(f, "indent",
	           "apiVersion: v1\n"
	           "clusters:\n"
	           "- name: a\n"
	           "  cluster:\n"
	           "    server: https://x\n"
	           "   bad: indent\n");
	expect_error(f, "indent", NULL, -EINVAL,
	             ":6:4: did not find expected key (while parsing a block mapping at 3:3)");
	write_file(f, "flow",
	           "clusters:\n"
	           "- name: a\n"
	           "  cluster: {server: \"https://x\"\n"
	           "current-context: a\n");
	expect_error(f, "flow", NULL, -EINVAL,
	             ":4:1: did not find expected ',' or '}' (while parsing a flow mapping at "
	             "3:12)");
}

static const char wrong_head[] = "current-context: c\n"
                                 "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                                 "users: [{name: u, user: {}}]\n";

static void test_wrong_types(void **state)
{
	struct fixture *f = *state;
	char text[512];

	snprintf(text, sizeof(text),
	         "%sclusters:\n"
	         "- name: k\n"
	         "  cluster:\n"
	         "  - server: https://k\n",
	         wrong_head);
	write_file(f, "list", text);
	expect_error(f, "list", NULL, -EINVAL,
	             ":7:3: expected a mapping for 'clusters[0].cluster'");

	snprintf(text, sizeof(text), "%sclusters: {k: {server: https://k}}\n", wrong_head);
	write_file(f, "map", text);
	expect_error(f, "map", NULL, -EINVAL, ":4:11: expected a list for 'clusters'");

	snprintf(text, sizeof(text), "%sclusters: [{name: k, cluster: {server: [a]}}]\n",
	         wrong_head);
	write_file(f, "server", text);
	expect_error(f, "server", NULL, -EINVAL,
	             ":4:40: expected a string for 'clusters[0].cluster.server'");

	write_file(f, "top", "- just\n- a list\n");
	expect_error(f, "top", NULL, -EINVAL, ":1:1: expected a mapping for 'the top level'");
}

static void test_missing_names(void **state)
{
	struct fixture *f = *state;

	write_file(f, "config", two_contexts);
	expect_error(f, "config", "nope", -ENOENT, ": context 'nope' not found");

	write_file(f, "nocurrent",
	           "contexts: [{name: c, context: {cluster: k}}]\n"
	           "clusters: [{name: k, cluster: {server: https://k}}]\n");
	expect_error(f, "nocurrent", NULL, -ENOENT,
	             ": no context given and no current-context set");

	write_file(f, "nocluster",
	           "current-context: c\n"
	           "contexts: [{name: c, context: {cluster: gone, user: u}}]\n"
	           "clusters: [{name: k, cluster: {server: https://k}}]\n"
	           "users: [{name: u, user: {token: t}}]\n");
	expect_error(f, "nocluster", NULL, -ENOENT, ": cluster 'gone' (of context 'c') not found");

	write_file(f, "nouser",
	           "current-context: c\n"
	           "contexts: [{name: c, context: {cluster: k, user: gone}}]\n"
	           "clusters: [{name: k, cluster: {server: https://k}}]\n"
	           "users: [{name: u, user: {token: t}}]\n");
	expect_error(f, "nouser", NULL, -ENOENT, ": user 'gone' (of context 'c') not found");

	write_file(f, "noserver",
	           "current-context: c\n"
	           "contexts: [{name: c, context: {cluster: k}}]\n"
	           "clusters: [{name: k, cluster: {server: ''}}]\n");
	expect_error(f, "noserver", NULL, -EINVAL, ":3:31: cluster 'k' has no server");

	expect_error(f, "absent", NULL, -ENOENT, ": No such file or directory");
}

/* A context without a user is anonymous. */
static void test_anonymous_user(void **state)
{
	struct fixture *f = *state;

	write_file(f, "config",
	           "current-context: c\n"
	           "contexts: [{name: c, context: {cluster: k}}]\n"
	           "clusters: [{name: k, cluster: {server: http://k:8080/}}]\n");
	assert_int_equal(load(f, "config", NULL), 0);
	assert_string_equal(f->conn.server, "http://k:8080");
	assert_null(kubeapi_conn_token(&f->conn, 1000));
	assert_null(f->conn.cert_file);
	assert_null(f->conn.cert_data.data);
}

static void expect_bad_base64(struct fixture *f, const char *value, const char *why)
{
	char text[512], suffix[256];

	snprintf(text, sizeof(text),
	         "current-context: c\n"
	         "contexts: [{name: c, context: {cluster: k}}]\n"
	         "clusters:\n"
	         "- name: k\n"
	         "  cluster:\n"
	         "    server: https://k\n"
	         "    certificate-authority-data: %s\n",
	         value);
	write_file(f, "config", text);
	snprintf(suffix, sizeof(suffix),
	         ":7:33: 'clusters[0].cluster.certificate-authority-data' is not valid base64 (%s)",
	         why);
	expect_error(f, "config", NULL, -EINVAL, suffix);
}

static void test_invalid_base64(void **state)
{
	struct fixture *f = *state;

	expect_bad_base64(f, "Q0EA!EVN", "byte 5 of the value");
	expect_bad_base64(f, "Q0EAUEVNCg", "length not a multiple of 4");
	expect_bad_base64(f, "Q0E=UEVN", "byte 5 of the value");
	expect_bad_base64(f, "Q===", "byte 4 of the value");
	expect_bad_base64(f, "Q0-A", "byte 3 of the value");
}

static void test_oversized_file(void **state)
{
	struct fixture *f = *state;
	const char *body = "current-context: c\n"
	                   "contexts: [{name: c, context: {cluster: k}}]\n"
	                   "clusters: [{name: k, cluster: {server: https://k}}]\n#";
	size_t blen = strlen(body);
	char *text = malloc(KUBEAPI_KUBECONFIG_MAX + 1);
	char suffix[64];

	assert_non_null(text);
	memcpy(text, body, blen);
	memset(text + blen, 'x', KUBEAPI_KUBECONFIG_MAX + 1 - blen);

	/* Exactly at the cap (the rest is one long comment) is fine... */
	write_bytes(f, "fits", text, KUBEAPI_KUBECONFIG_MAX);
	assert_int_equal(load(f, "fits", NULL), 0);
	assert_string_equal(f->conn.server, "https://k");

	/* ...one byte more is not. */
	write_bytes(f, "big", text, KUBEAPI_KUBECONFIG_MAX + 1);
	snprintf(suffix, sizeof(suffix), ": larger than %d bytes", KUBEAPI_KUBECONFIG_MAX);
	expect_error(f, "big", NULL, -EFBIG, suffix);
	free(text);
}

/* Nesting is refused before libyaml loads the file, as the queue file's
 * is (base/yaml_guard.h), with the position; brackets in text pass. */
static void test_nested_yaml(void **state)
{
	struct fixture *f = *state;
	size_t head = strlen("clusters: "), len = KUBEAPI_KUBECONFIG_MAX;
	char *text = malloc(len);
	char lines[65 * 70], *p = lines;
	char fine[1024];

	assert_non_null(text);
	memcpy(text, "clusters: ", head);
	memset(text + head, '[', len - head);
	write_bytes(f, "brackets", text, len);
	free(text);
	expect_error(f, "brackets", NULL, -EINVAL, ":1:75: '[' nested deeper than 64 levels");

	for (int i = 0; i < 65; i++)
		p += sprintf(p, "%*susers:\n", i, "");
	write_file(f, "blocks", lines);
	expect_error(f, "blocks", NULL, -EINVAL, ":65:65: a mapping nested deeper than 64 levels");

	snprintf(fine, sizeof(fine),
	         "%s# %s\npreferences: {note: '%s', more: \"%s\"}\nextensions:\n- x: |\n    %s\n",
	         two_contexts,
	         "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
	         "{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{",
	         "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
	         "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
	write_file(f, "fine", fine);
	assert_int_equal(load(f, "fine", NULL), 0);
	assert_string_equal(f->conn.server, "https://b.example:6443/prefix");
}

static void test_unsupported_auth(void **state)
{
	struct fixture *f = *state;
	const char *head =
	    "current-context: c\n"
	    "contexts:\n"
	    "- {name: c, context: {cluster: k, user: u}}\n"
	    "- {name: other, context: {cluster: k, user: plugin}}\n"
	    "clusters: [{name: k, cluster: {server: https://k}}]\n"
	    "users:\n"
	    "- name: plugin\n"
	    "  user:\n"
	    "    exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}\n";
	char text[768];

	/* An exec user that the chosen context does not use does no harm. */
	snprintf(text, sizeof(text), "%s- {name: u, user: {token: t}}\n", head);
	write_file(f, "config", text);
	assert_int_equal(load(f, "config", NULL), 0);
	assert_string_equal(kubeapi_conn_token(&f->conn, 1000), "t");

	expect_error(f, "config", "other", -ENOTSUP,
	             ":9:11: 'users[0].user.exec': exec credential plugins are not supported; use "
	             "a token, tokenFile or client certificate");

	snprintf(text, sizeof(text), "%s- {name: u, user: {username: me, password: pw}}\n", head);
	write_file(f, "basic", text);
	expect_error(f, "basic", NULL, -ENOTSUP,
	             ":10:30: 'users[1].user.username': basic auth (username/password) is not "
	             "supported; use a token or a client certificate");
}

static void test_inconsistent_fields(void **state)
{
	struct fixture *f = *state;
	const char *head = "current-context: c\n"
	                   "contexts: [{name: c, context: {cluster: k, user: u}}]\n";
	char text[512];

	snprintf(text, sizeof(text),
	         "%sclusters: [{name: k, cluster: {server: https://k}}]\n"
	         "users: [{name: u, user: {client-certificate-data: Y2VydC0x}}]\n",
	         head);
	write_file(f, "nokey", text);
	expect_error(f, "nokey", NULL, -EINVAL,
	             ":4:25: user 'u': a client certificate needs a client key");

	snprintf(text, sizeof(text),
	         "%sclusters: [{name: k, cluster: {server: https://k, certificate-authority: ca,"
	         " certificate-authority-data: Y2VydC0x}}]\n",
	         head);
	write_file(f, "ca", "ca");
	write_file(f, "both", text);
	expect_error(f, "both", NULL, -EINVAL,
	             ":3:31: cluster 'k': certificate-authority and certificate-authority-data "
	             "are both set");

	snprintf(text, sizeof(text),
	         "%sclusters: [{name: k, cluster: {server: https://k, certificate-authority: "
	         "missing.crt}}]\n",
	         head);
	write_file(f, "missing", text);
	char suffix[512], ca[256];
	path_in(f, "missing.crt", ca, sizeof(ca));
	snprintf(suffix, sizeof(suffix),
	         ": certificate-authority '%s' of cluster 'k': No such file or directory", ca);
	expect_error(f, "missing", NULL, -ENOENT, suffix);

	snprintf(text, sizeof(text),
	         "%sclusters: [{name: k, cluster: {server: https://k}}]\n"
	         "users: [{name: u, user: {token: t}}, {name: u, user: {token: t2}}]\n",
	         head);
	write_file(f, "dup", text);
	expect_error(f, "dup", NULL, -EINVAL, ":4:38: users name 'u' appears twice");
}

static void write_sa_dir(struct fixture *f)
{
	make_dir(f, "sa");
	write_file(f, "sa/token", "sa-token\n");
	write_file(f, "sa/ca.crt", "ca");
}

static int in_cluster(struct fixture *f, struct kubeapi_conn *c)
{
	char sa[256];

	path_in(f, "sa", sa, sizeof(sa));
	return kubeapi_conn_in_cluster(sa, c, f->err, sizeof(f->err));
}

static void test_in_cluster(void **state)
{
	struct fixture *f = *state;

	write_sa_dir(f);
	assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
	assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);
	assert_int_equal(in_cluster(f, &f->conn), 0);
	assert_string_equal(f->conn.server, "https://10.96.0.1:443");
	expect_path(f, f->conn.token_file, "sa/token");
	expect_path(f, f->conn.ca_file, "sa/ca.crt");
	assert_null(f->conn.token);
	assert_string_equal(kubeapi_conn_token(&f->conn, 1000), "sa-token");

	/* The token is a file to follow, not a copy. */
	write_file(f, "sa/token", "rotated");
	set_mtime(f, "sa/token", 12345);
	assert_string_equal(kubeapi_conn_token(&f->conn, 11000), "rotated");
}

static void test_in_cluster_ipv6(void **state)
{
	struct fixture *f = *state;

	write_sa_dir(f);
	assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1), 0);
	assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", "6443", 1), 0);
	assert_int_equal(in_cluster(f, &f->conn), 0);
	assert_string_equal(f->conn.server, "https://[fd00:10:96::1]:6443");
}

static void expect_in_cluster_error(struct fixture *f, int rc, const char *msg)
{
	struct kubeapi_conn c, before;

	memset(&c, POISON, sizeof(c));
	memcpy(&before, &c, sizeof(c));
	assert_int_equal(in_cluster(f, &c), rc);
	assert_string_equal(f->err, msg);
	assert_memory_equal(&c, &before, sizeof(c));
}

static void test_not_in_cluster(void **state)
{
	struct fixture *f = *state;
	char msg[512], token[256];

	write_sa_dir(f);
	expect_in_cluster_error(f, -ENOENT,
	                        "not running in a cluster: KUBERNETES_SERVICE_HOST and "
	                        "KUBERNETES_SERVICE_PORT are not set");

	assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
	assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", "http", 1), 0);
	expect_in_cluster_error(f, -EINVAL, "KUBERNETES_SERVICE_PORT 'http' is not a port");

	assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);
	path_in(f, "sa/token", token, sizeof(token));
	assert_int_equal(unlink(token), 0);
	snprintf(msg, sizeof(msg), "in-cluster service account token %s: No such file or directory",
	         token);
	expect_in_cluster_error(f, -ENOENT, msg);
}

static void test_conn_free(void **state)
{
	struct fixture *f = *state;
	struct kubeapi_conn zero;

	memset(&zero, 0, sizeof(zero));
	kubeapi_conn_free(&f->conn); /* zeroed: a no-op */
	assert_memory_equal(&f->conn, &zero, sizeof(zero));

	write_file(f, "config", two_contexts);
	assert_int_equal(load(f, "config", NULL), 0);
	assert_non_null(f->conn.server);
	kubeapi_conn_free(&f->conn);
	assert_memory_equal(&f->conn, &zero, sizeof(zero));
	kubeapi_conn_free(&f->conn); /* twice is fine */
}

#define TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_current_context),
	    TEST(test_explicit_context),
	    TEST(test_insecure_flag),
	    TEST(test_data_fields),
	    TEST(test_file_fields),
	    TEST(test_relative_paths),
	    TEST(test_relative_kubeconfig_path),
	    TEST(test_token_vs_token_file),
	    TEST(test_token_rotation),
	    TEST(test_malformed_yaml),
	    TEST(test_wrong_types),
	    TEST(test_missing_names),
	    TEST(test_anonymous_user),
	    TEST(test_invalid_base64),
	    TEST(test_oversized_file),
	    TEST(test_nested_yaml),
	    TEST(test_unsupported_auth),
	    TEST(test_inconsistent_fields),
	    TEST(test_in_cluster),
	    TEST(test_in_cluster_ipv6),
	    TEST(test_not_in_cluster),
	    TEST(test_conn_free),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
