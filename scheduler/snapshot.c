/*
 * `muster snapshot`: a live cluster as `muster simulate --snapshot` reads
 * it, listed from the API server directly: one JSON List of its Nodes,
 * Pods, PodGroups of the three dialects and PriorityClasses, each item
 * with its kind and apiVersion as kubectl prints them. The collections are
 * the informers' own (kubeapi_cache_kind()); a PodGroup CRD that is not
 * installed (404) is left out, as the informers leave it.
 *
 * Its own loop and HTTP engine, one collection at a time, in pages of
 * SNAPSHOT_PAGE items (each page's body capped by the engine's max_body),
 * so memory is the document plus one page. Nothing is written to the
 * cluster.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "kubeapi/cache.h"
#include "kubeapi/conn.h"
#include "kubeapi/http.h"
#include "kubeapi/informer.h"
#include "scheduler/sched.h"

#define SNAPSHOT_PAGE     500 /* items a page, by default (kubectl's --chunk-size) */
#define SNAPSHOT_MAX_PAGE 100000
/* A continue token longer than this is refused (the server's are ~100):
 * escaped, it still fits a request path. */
#define SNAPSHOT_MAX_CONTINUE 2048
_Static_assert(3 * SNAPSHOT_MAX_CONTINUE + 256 < KUBEAPI_HTTP_MAX_PATH, "a token fits a path");

static const enum kubeapi_store_kind listed[] = {
    KUBEAPI_STORE_NODES,  KUBEAPI_STORE_PODS,      KUBEAPI_STORE_PODGROUPS,
    KUBEAPI_STORE_VCJOBS, KUBEAPI_STORE_NATIVEPGS, KUBEAPI_STORE_PRIORITYCLASSES,
};
#define NLISTED (sizeof(listed) / sizeof(listed[0]))

struct lister {
	uv_loop_t loop;
	struct kubeapi_conn conn;
	struct kubeapi_http *http;
	cJSON *doc, *items;
	size_t at; /* listed[at] is being read */
	long page; /* items a page */
	char cont[SNAPSHOT_MAX_CONTINUE];
	int rc;
	char err[512];
};

static void next_page(struct lister *s);

static void fail(struct lister *s, int rc, const char *what, const char *detail)
{
	const struct kubeapi_kind *k = kubeapi_cache_kind(listed[s->at]);

	s->rc = rc;
	snprintf(s->err, sizeof(s->err), "listing %s: %s%s%s", k->path, what, detail ? ": " : "",
	         detail ? detail : "");
}

/* A page's items into the document, each with the kind and apiVersion of
 * its List ("PodList" in "v1": "Pod", "v1"). 0, or -EINVAL. */
static int take_page(struct lister *s, cJSON *page)
{
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(page, "kind"));
	const char *api =
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(page, "apiVersion"));
	cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "items"), *item;
	const char *cont = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(page, "metadata"), "continue"));
	size_t klen = kind ? strlen(kind) : 0;
	char item_kind[64];

	if (!api || klen < 5 || klen >= sizeof(item_kind) + 4 || strcmp(kind + klen - 4, "List") ||
	    !cJSON_IsArray(items) || (cont && strlen(cont) >= sizeof(s->cont)))
		return -EINVAL;
	snprintf(item_kind, sizeof(item_kind), "%.*s", (int)(klen - 4), kind);
	while ((item = cJSON_DetachItemFromArray(items, 0))) {
		cJSON_DeleteItemFromObjectCaseSensitive(item, "kind");
		cJSON_DeleteItemFromObjectCaseSensitive(item, "apiVersion");
		cJSON_AddStringToObject(item, "apiVersion", api);
		cJSON_AddStringToObject(item, "kind", item_kind);
		cJSON_AddItemToArray(s->items, item);
	}
	snprintf(s->cont, sizeof(s->cont), "%s", cont ? cont : "");
	return 0;
}

static void got_page(void *data, const struct kubeapi_response *resp)
{
	struct lister *s = data;
	const struct kubeapi_kind *k = kubeapi_cache_kind(listed[s->at]);
	cJSON *page;
	char status[32];

	if (resp->err) {
		fail(s, resp->err, strerror(-resp->err), NULL);
		return;
	}
	if (resp->status == 404 && k->optional) {
		s->cont[0] = '\0'; /* not installed: nothing of that kind */
	} else if (resp->status != 200) {
		snprintf(status, sizeof(status), "HTTP %ld", resp->status);
		fail(s, -EIO, status, resp->body);
		return;
	} else if (!(page = cJSON_ParseWithLength(resp->body, resp->len))) {
		fail(s, -EINVAL, "not JSON", NULL);
		return;
	} else {
		int rc = take_page(s, page);

		cJSON_Delete(page);
		if (rc < 0) {
			fail(s, rc, "not a List", NULL);
			return;
		}
	}
	if (!s->cont[0] && ++s->at == NLISTED)
		return; /* all read: the loop ends */
	next_page(s);
}

static void next_page(struct lister *s)
{
	const struct kubeapi_kind *k = kubeapi_cache_kind(listed[s->at]);
	char path[KUBEAPI_HTTP_MAX_PATH];
	struct kubeapi_request req = {.method = KUBEAPI_GET,
	                              .path = path,
	                              .flags = KUBEAPI_REQ_RETRY,
	                              .done_cb = got_page,
	                              .data = s};
	int rc;

	/* take_page() keeps a token short enough for the path, escaped. */
	snprintf(path, sizeof(path), "%s?limit=%ld%s", k->path, s->page,
	         s->cont[0] ? "&continue=" : "");
	kubeapi_query_append(path, sizeof(path), s->cont);
	if ((rc = kubeapi_http_submit(s->http, &req, NULL)) < 0)
		fail(s, rc, "cannot submit", strerror(-rc));
}

int sched_snapshot(const char *kubeconfig, const char *context, long page, cJSON **out, char *err,
                   size_t errlen)
{
	struct lister *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s || uv_loop_init(&s->loop) < 0) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->page = page > 0 ? page : SNAPSHOT_PAGE;
	rc = kubeconfig ? kubeapi_conn_from_kubeconfig(kubeconfig, context, &s->conn, s->err,
	                                               sizeof(s->err))
	                : kubeapi_conn_in_cluster(NULL, &s->conn, s->err, sizeof(s->err));
	if (rc == 0 && (rc = kubeapi_http_new(&s->loop, &s->conn, NULL, &s->http)) < 0)
		snprintf(s->err, sizeof(s->err), "cannot reach the API server: %s", strerror(-rc));
	if (rc == 0) {
		s->doc = cJSON_CreateObject();
		cJSON_AddStringToObject(s->doc, "apiVersion", "v1");
		cJSON_AddStringToObject(s->doc, "kind", "List");
		s->items = cJSON_AddArrayToObject(s->doc, "items");
		if (!s->items) {
			rc = -ENOMEM;
			snprintf(s->err, sizeof(s->err), "out of memory");
		}
	}
	if (rc == 0) {
		next_page(s);
		uv_run(&s->loop, UV_RUN_DEFAULT); /* until the last page, or a failure */
		rc = s->rc;
	}
	if (s->http) {
		kubeapi_http_close(&s->http, NULL, NULL);
		uv_run(&s->loop, UV_RUN_DEFAULT);
	}
	uv_loop_close(&s->loop);
	kubeapi_conn_free(&s->conn);
	snprintf(err, errlen, "%s", s->err);
	if (rc == 0)
		*out = s->doc;
	else
		cJSON_Delete(s->doc);
	free(s);
	return rc;
}

static const char snapshot_usage[] =
    "usage: muster snapshot [--kubeconfig FILE [--context NAME]] [--chunk-size N] [-o FILE]\n"
    "\n"
    "Write the cluster's Nodes, Pods, PodGroups (scheduler-plugins, Volcano,\n"
    "scheduling.k8s.io) and PriorityClasses as one JSON List, listed from the\n"
    "API server (the kubeconfig given, else the pod's service account), for\n"
    "`muster simulate --snapshot`. Nothing is written to the cluster.\n"
    "\n"
    "  --kubeconfig FILE  the API server and credentials (default: in-cluster)\n"
    "  --context NAME     a context of the kubeconfig (default: its current one)\n"
    "  --chunk-size N     items a request lists at most (default 500)\n"
    "  -o FILE            write there (default: standard output)\n";

int sched_snapshot_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"kubeconfig", required_argument, NULL, 'k'},
	    {"context", required_argument, NULL, 'c'},
	    {"chunk-size", required_argument, NULL, 'n'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *kubeconfig = NULL, *context = NULL, *path = NULL;
	char err[512], *text, *end;
	long page = SNAPSHOT_PAGE;
	cJSON *doc;
	FILE *f;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
		if (c == 'k')
			kubeconfig = optarg;
		else if (c == 'c')
			context = optarg;
		else if (c == 'o')
			path = optarg;
		else if (c == 'n' && (page = strtol(optarg, &end, 10)) > 0 && !*end &&
		         page <= SNAPSHOT_MAX_PAGE)
			continue;
		else {
			fputs(snapshot_usage, c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc) {
		fputs(snapshot_usage, stderr);
		return 2;
	}
	if ((rc = sched_snapshot(kubeconfig, context, page, &doc, err, sizeof(err))) < 0) {
		fprintf(stderr, "muster snapshot: %s\n", err);
		return 1;
	}
	text = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	if (!text || !(f = path ? fopen(path, "w") : stdout)) {
		fprintf(stderr, "muster snapshot: %s: %s\n", path ? path : "output",
		        text ? strerror(errno) : "out of memory");
		free(text);
		return 1;
	}
	fputs(text, f);
	fputc('\n', f);
	free(text);
	if ((path ? fclose(f) : fflush(f)) != 0) {
		fprintf(stderr, "muster snapshot: %s: %s\n", path ? path : "output",
		        strerror(errno));
		return 1;
	}
	return 0;
}
