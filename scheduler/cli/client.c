/*
 * The CLI's HTTP client (internal.h): blocking GETs of the debug API
 * (DEBUG.md) over one libcurl easy handle, the only file of the CLI that
 * knows libcurl. Each GET is bounded by a 10 s timeout and the body by
 * the buf's cap (SCHED_CLI_MAX_BODY); a failure is said in words for the
 * person who ran the command.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "scheduler/cli/internal.h"

#define CLI_TIMEOUT_MS 10000L
#define CLI_MAX_TOKEN  ((size_t)64 << 10)

struct sched_cli_client {
	const struct sched_cli_client_opts *o;
	CURL *curl;
	struct curl_slist *headers;
	char *base; /* the address with a scheme and without a trailing '/' */
	char err[CURL_ERROR_SIZE];
};

/* A response body being received. */
struct body {
	struct buf *b;
	int too_big;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct body *b = ud;
	int rc = buf_append(b->b, p, n * size);

	if (rc == -EMSGSIZE)
		b->too_big = 1;
	return rc < 0 ? 0 : n * size; /* 0: curl ends with CURLE_WRITE_ERROR */
}

/* The first line of the token file, without surrounding white space, in
 * a malloc'd "Authorization: Bearer ..." header line. Returns 0, -ENOMEM,
 * or -EIO having said why. */
static int token_header(const struct sched_cli_client_opts *o, char **out)
{
	FILE *f = fopen(o->token_file, "r");
	char *line = f ? malloc(CLI_MAX_TOKEN) : NULL, *t = NULL;
	int rc = -EIO;

	if (!f) {
		fprintf(stderr, "%s: cannot read the token file %s: %s\n", o->prog, o->token_file,
		        strerror(errno));
		return -EIO;
	}
	if (line && fgets(line, (int)CLI_MAX_TOKEN, f)) {
		t = line + strspn(line, " \t");
		t[strcspn(t, " \t\r\n")] = '\0';
	}
	if (!line || (t && *t && asprintf(out, "Authorization: Bearer %s", t) < 0))
		rc = -ENOMEM;
	else if (t && *t)
		rc = 0;
	else
		fprintf(stderr, "%s: the token file %s is empty\n", o->prog, o->token_file);
	fclose(f);
	free(line);
	return rc;
}

static int conn_headers(struct sched_cli_client *c)
{
	struct curl_slist *l = curl_slist_append(NULL, "Accept: application/json");
	char *auth = NULL;
	int rc;

	c->headers = l;
	if (!l)
		return -ENOMEM;
	if (!c->o->token_file)
		return 0;
	rc = token_header(c->o, &auth);
	if (rc < 0)
		return rc;
	l = curl_slist_append(c->headers, auth);
	free(auth);
	if (!l)
		return -ENOMEM;
	c->headers = l;
	return 0;
}

/* Sets an option unless an earlier one failed; rc is a CURLcode. */
#define SETOPT(rc, e, opt, val) ((rc) == CURLE_OK ? ((rc) = curl_easy_setopt((e), opt, val)) : (rc))

static CURLcode conn_options(struct sched_cli_client *c)
{
	CURLcode rc = CURLE_OK;

	SETOPT(rc, c->curl, CURLOPT_NOSIGNAL, 1L);
	SETOPT(rc, c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(rc, c->curl, CURLOPT_CONNECTTIMEOUT_MS, CLI_TIMEOUT_MS);
	SETOPT(rc, c->curl, CURLOPT_TIMEOUT_MS, CLI_TIMEOUT_MS);
	SETOPT(rc, c->curl, CURLOPT_USERAGENT, "muster-cli");
	SETOPT(rc, c->curl, CURLOPT_HTTPHEADER, c->headers);
	SETOPT(rc, c->curl, CURLOPT_ERRORBUFFER, c->err);
	SETOPT(rc, c->curl, CURLOPT_WRITEFUNCTION, on_body);
	if (c->o->cacert)
		SETOPT(rc, c->curl, CURLOPT_CAINFO, c->o->cacert);
	return rc;
}

/* "127.0.0.1:10251/" is read as "http://127.0.0.1:10251". Returns 0,
 * -ENOMEM, or -EIO/-EINVAL having said why. */
static int conn_open(struct sched_cli_client *c, const struct sched_cli_client_opts *o)
{
	const char *scheme = strstr(o->addr, "://") ? "" : "http://";
	size_t n = strlen(o->addr);
	int rc;

	memset(c, 0, sizeof(*c));
	c->o = o;
	while (n > 0 && o->addr[n - 1] == '/')
		n--;
	if (asprintf(&c->base, "%s%.*s", scheme, (int)n, o->addr) < 0) {
		c->base = NULL;
		return -ENOMEM;
	}
	c->curl = curl_easy_init();
	if (!c->curl)
		return -ENOMEM;
	rc = conn_headers(c);
	if (rc < 0)
		return rc;
	if (conn_options(c) != CURLE_OK) {
		fprintf(stderr, "%s: cannot set up libcurl\n", o->prog);
		return -EINVAL;
	}
	return 0;
}

static void conn_close(struct sched_cli_client *c)
{
	curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->headers);
	free(c->base);
	c->curl = NULL;
	c->headers = NULL;
	c->base = NULL;
}

/* Why a transfer failed, in words for the person who ran the command. */
static void transfer_error(const struct sched_cli_client *c, CURLcode rc, const struct body *b)
{
	const char *p = c->o->prog, *u = c->base;
	const char *why = c->err[0] ? c->err : curl_easy_strerror(rc);

	if (rc == CURLE_COULDNT_CONNECT)
		fprintf(stderr,
		        "%s: cannot reach the debug API at %s (is muster run --debug-addr set?)\n",
		        p, u);
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		fprintf(stderr, "%s: the debug API at %s did not answer within %ld s\n", p, u,
		        CLI_TIMEOUT_MS / 1000);
	else if (rc == CURLE_PEER_FAILED_VERIFICATION)
		fprintf(stderr,
		        "%s: cannot verify the debug API at %s: %s (--cacert FILE names its CA)\n",
		        p, u, why);
	else if (rc == CURLE_WRITE_ERROR && b->too_big)
		fprintf(stderr, "%s: the answer from %s is larger than %zu MiB\n", p, u,
		        SCHED_CLI_MAX_BODY >> 20);
	else
		fprintf(stderr, "%s: cannot read the debug API at %s: %s\n", p, u, why);
}

int sched_cli__client_get(struct sched_cli_client *c, const char *path, struct buf *body,
                          long *status)
{
	struct body bb = {body, 0}, *b = &bb;
	char *url;
	CURLcode rc;

	if (asprintf(&url, "%s%s", c->base, path) < 0)
		return -ENOMEM;
	c->err[0] = '\0';
	rc = curl_easy_setopt(c->curl, CURLOPT_URL, url);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, (void *)b);
	if (rc == CURLE_OK)
		rc = curl_easy_perform(c->curl);
	if (rc == CURLE_OK)
		rc = curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
	free(url);
	if (rc != CURLE_OK) {
		transfer_error(c, rc, b);
		return -EIO;
	}
	return 0;
}

int sched_cli__client_open(const struct sched_cli_client_opts *o, struct sched_cli_client **out)
{
	struct sched_cli_client *c = calloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "%s: cannot initialize libcurl\n", o->prog);
		free(c);
		return -EIO;
	}
	if ((rc = conn_open(c, o)) < 0) {
		conn_close(c);
		curl_global_cleanup();
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

const char *sched_cli__client_base(const struct sched_cli_client *c)
{
	return c->base;
}

char *sched_cli__client_escape(struct sched_cli_client *c, const char *s, size_t n)
{
	char *e = curl_easy_escape(c->curl, s, (int)n), *copy = e ? strdup(e) : NULL;

	curl_free(e);
	return copy;
}

void sched_cli__client_close(struct sched_cli_client **cp)
{
	if (!*cp)
		return;
	conn_close(*cp);
	curl_global_cleanup();
	free(*cp);
	*cp = NULL;
}
