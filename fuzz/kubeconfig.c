/*
 * Fuzz target: kubeconfig files (kubeapi/kubeconfig.c, kubeconfig_yaml.c
 * and the capped reads of conn.c).
 *
 * The loader reads a file, so each input is written to "config" in a
 * directory made once per run, and kubeapi_conn_from_kubeconfig() loads it
 * with its current-context, as `muster run --kubeconfig` does, or with the
 * context a first line "# context: NAME" names, as --context does. The
 * directory also holds ca.crt, client.crt, client.key and token, so that
 * relative file fields in the seeds resolve and the paths past access()
 * and the token read are reached. It is removed when the run ends.
 *
 * Checked, as kubeapi/conn.h promises: a negative errno leaves *out as it
 * was and says why in err; success leaves err empty and gives a server
 * with a scheme and without a trailing '/', no file and -data form of the
 * same thing, a client certificate only with its key, no CA with
 * insecure-skip-tls-verify; kubeapi_conn_free() zeroes the struct.
 */
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "kubeapi/conn.h"

#define POISON 0xa5

static char dir[64];
static char config_path[128];

static void write_file(const char *name, const void *data, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	FUZZ_CHECK(f);
	FUZZ_CHECK(fwrite(data, 1, len, f) == len);
	FUZZ_CHECK(fclose(f) == 0);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_dir(void)
{
	nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/muster-fuzz-kubeconfig-XXXXXX",
	         tmp && *tmp && strlen(tmp) < 24 ? tmp : "/tmp");
	FUZZ_CHECK(mkdtemp(dir));
	atexit(remove_dir);
	snprintf(config_path, sizeof(config_path), "%s/config", dir);
	write_file("ca.crt", "-----BEGIN CERTIFICATE-----\n", 28);
	write_file("client.crt", "-----BEGIN CERTIFICATE-----\n", 28);
	write_file("client.key", "-----BEGIN PRIVATE KEY-----\n", 28);
	write_file("token", "fuzz-token\n", 11);
	return 0;
}

static bool all_bytes(const void *p, size_t n, unsigned char v)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

static void check_conn(struct kubeapi_conn *c)
{
	size_t n;

	FUZZ_CHECK(c->server);
	/* A URL's scheme is case-insensitive, and libcurl reads it so. */
	FUZZ_CHECK(!strncasecmp(c->server, "https://", 8) || !strncasecmp(c->server, "http://", 7));
	n = strlen(c->server);
	FUZZ_CHECK(n > 0 && c->server[n - 1] != '/');
	FUZZ_CHECK(!(c->ca_file && c->ca_data.data));
	FUZZ_CHECK(!(c->cert_file && c->cert_data.data));
	FUZZ_CHECK(!(c->key_file && c->key_data.data));
	FUZZ_CHECK(!(c->cert_file || c->cert_data.data) == !(c->key_file || c->key_data.data));
	FUZZ_CHECK(!(c->insecure_skip_tls_verify && (c->ca_file || c->ca_data.data)));
	kubeapi_conn_token(c, 0);
}

/* The context named by a first line "# context: NAME" (a YAML comment, so
 * the loader does not see it), as --context would give it; else NULL. */
static const char *context_of(const uint8_t *data, size_t size, char *buf, size_t cap)
{
	static const char tag[] = "# context: ";
	const char *p = (const char *)data + sizeof(tag) - 1;
	size_t n;

	if (size < sizeof(tag) - 1 || memcmp(data, tag, sizeof(tag) - 1) != 0)
		return NULL;
	size -= sizeof(tag) - 1;
	for (n = 0; n < size && n + 1 < cap && p[n] != '\n' && p[n] != '\0'; n++)
		buf[n] = p[n];
	buf[n] = '\0';
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kubeapi_conn c;
	char err[512], context[256];
	int rc;

	write_file("config", data, size);
	memset(&c, POISON, sizeof(c));
	memset(err, POISON, sizeof(err));
	rc = kubeapi_conn_from_kubeconfig(
	    config_path, context_of(data, size, context, sizeof(context)), &c, err, sizeof(err));
	FUZZ_CHECK(rc <= 0);
	FUZZ_CHECK(memchr(err, '\0', sizeof(err)));
	if (rc < 0) {
		FUZZ_CHECK(err[0] != '\0');
		FUZZ_CHECK(all_bytes(&c, sizeof(c), POISON));
		return 0;
	}
	FUZZ_CHECK(err[0] == '\0');
	check_conn(&c);
	kubeapi_conn_free(&c);
	FUZZ_CHECK(all_bytes(&c, sizeof(c), 0));
	return 0;
}
