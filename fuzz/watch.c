/*
 * Fuzz target: watch streams (kubeapi/informer.c splitting the bytes of a
 * watch into lines and events) and what the cluster cache does with the
 * events (kubeapi/cache.c: decode, store, replace, delete, sweep).
 *
 * Input: bytes 0 and 1 choose the watch and how its bytes arrive, the
 * rest is the stream, as the API server would send it (one JSON event a
 * line):
 *
 *   byte 0       the kind, as enum kubeapi_store_kind (modulo their count)
 *   byte 1 & 31  0: the stream in one chunk, else chunks of that many
 *                bytes squared (1, 4, 9, ... 961), so events and lines
 *                are split across chunks at every kind of place
 *
 * The real cache and its nine informers run on a libuv loop; only the
 * HTTP engine is replaced, at link time (-Wl,--wrap, see the Makefile),
 * by an in-memory one that keeps the engine's contract (kubeapi/http.h):
 * done_cb exactly once per call, never from within submit, -ECANCELED
 * after kubeapi_http_cancel(), a chunk_cb's negative result as err. Every
 * list is answered with an empty list; the chosen watch gets the stream
 * and then ends as a server timeout does (200). Then every watch still
 * open ends with 410 Gone, so each kind is listed again, empty, and the
 * sweep must drop every object: once all stores are empty nothing may
 * stay interned. Last the cache is closed and the loop run until it has
 * freed everything, so LeakSanitizer sees any leak. No timer is run before
 * the close, so backoffs never fire and a run is deterministic.

 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <uv.h>

#include "fuzz/fuzz.h"
#include "kubeapi/cache.h"

#define MAX_CALLS   16 /* one per informer is the most the cache makes */
#define MAX_ROUNDS  1000
#define MAX_EVENT   8192 /* a pod fits; an oversized event is within reach */
#define EMPTY_LIST  "{\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}"
#define GONE_STATUS "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}"

/* The collection each store watches, by enum kubeapi_store_kind: the
 * Kubernetes API's own paths. */
static const char *const collection[KUBEAPI_STORE_COUNT] = {
    "/api/v1/nodes",
    "/api/v1/pods",
    "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
    "/apis/scheduling.volcano.sh/v1beta1/podgroups",
    "/apis/scheduling.k8s.io/v1beta1/podgroups",
    "/apis/scheduling.k8s.io/v1beta1/workloads",
    "/apis/scheduling.k8s.io/v1/priorityclasses",
    "/apis/policy/v1/poddisruptionbudgets",
    "/api/v1/namespaces",
};

/* ---- the in-memory HTTP engine ------------------------------------------- */

struct fake_call {
	bool used, cancelled, stream;
	char path[256];
	kubeapi_http_done_cb done;
	kubeapi_http_chunk_cb chunk;
	void *data;
};

static struct fake_call calls[MAX_CALLS];
static char engine; /* what the cache gets as its struct kubeapi_http * */
static uv_loop_t loop;

int __wrap_kubeapi_http_submit(struct kubeapi_http *h, const struct kubeapi_request *req,
                               struct kubeapi_http_call **call);
void __wrap_kubeapi_http_cancel(struct kubeapi_http_call *call);

int __wrap_kubeapi_http_submit(struct kubeapi_http *h, const struct kubeapi_request *req,
                               struct kubeapi_http_call **call)
{
	struct fake_call *c = NULL;
	size_t i;

	FUZZ_CHECK(h == (struct kubeapi_http *)&engine);
	FUZZ_CHECK(req->method == KUBEAPI_GET && req->path && req->done_cb);
	for (i = 0; i < MAX_CALLS; i++) {
		/* An informer has one call in flight at a time. */
		FUZZ_CHECK(!calls[i].used || calls[i].data != req->data);
		if (!calls[i].used && !c)
			c = &calls[i];
	}
	FUZZ_CHECK(c);
	memset(c, 0, sizeof(*c));
	c->used = true;
	c->stream = (req->flags & KUBEAPI_REQ_STREAM) != 0;
	FUZZ_CHECK(!c->stream || req->chunk_cb);
	snprintf(c->path, sizeof(c->path), "%s", req->path);
	c->done = req->done_cb;
	c->chunk = req->chunk_cb;
	c->data = req->data;
	if (call)
		*call = (struct kubeapi_http_call *)c;
	return 0;
}

void __wrap_kubeapi_http_cancel(struct kubeapi_http_call *call)
{
	struct fake_call *c = (struct fake_call *)call;

	if (c && c->used)
		c->cancelled = true;
}

/* Ends c: its slot is free before done_cb runs, which may submit again. */
static void complete(struct fake_call *c, long status, int err, const char *body)
{
	struct kubeapi_response r = {
	    .status = status,
	    .err = err,
	    .body = body,
	    .len = body ? strlen(body) : 0,
	    .attempts = 1,
	    .http_version = 20,
	};
	kubeapi_http_done_cb done = c->done;
	void *data = c->data;

	memset(c, 0, sizeof(*c));
	done(data, &r);
}

/* Answer every list with an empty one and end every cancelled call, until
 * only watches are left open. */
static void pump(void)
{
	unsigned rounds = 0;
	size_t i;

	for (i = 0; i < MAX_CALLS; i++) {
		struct fake_call *c = &calls[i];

		if (!c->used || (c->stream && !c->cancelled))
			continue;
		FUZZ_CHECK(++rounds < MAX_ROUNDS); /* an informer that never settles */
		if (c->cancelled)
			complete(c, 0, -ECANCELED, NULL);
		else
			complete(c, 200, 0, EMPTY_LIST);
		i = (size_t)-1; /* done_cb may have used any slot: look again */
	}
}

static struct fake_call *find_watch(const char *path)
{
	size_t i, n = strlen(path);

	for (i = 0; i < MAX_CALLS; i++)
		if (calls[i].used && calls[i].stream && !strncmp(calls[i].path, path, n) &&
		    calls[i].path[n] == '?')
			return &calls[i];
	return NULL;
}

/* ---- the cache ------------------------------------------------------------ */

static void discard_log(void *data, const char *msg)
{
	(void)data;
	(void)msg;
}

static void on_closed(void *data)
{
	*(bool *)data = true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	FUZZ_CHECK(uv_loop_init(&loop) == 0);
	return 0;
}

/* The stream in chunks of `piece` bytes (0: whole); a chunk_cb's negative
 * result ends the call with it, as the engine does. */
static int feed(struct fake_call *c, const char *p, size_t len, size_t piece)
{
	int rc = 0;

	while (rc == 0 && len > 0) {
		size_t n = piece && piece < len ? piece : len;

		rc = c->chunk(c->data, p, n);
		p += n;
		len -= n;
	}
	return rc;
}

/* Every open watch ends with 410, so every kind is listed again (empty)
 * and swept; true when all stores are empty after that. */
static bool relist_all(struct kubeapi_cache *cache)
{
	unsigned k;
	size_t i;

	for (i = 0; i < MAX_CALLS; i++)
		if (calls[i].used && calls[i].stream && !calls[i].cancelled)
			complete(&calls[i], 410, 0, GONE_STATUS);
	pump();
	for (k = 0; k < KUBEAPI_STORE_COUNT; k++)
		if (kubeapi_cache_store(cache, (enum kubeapi_store_kind)k)->n)
			return false; /* that informer is waiting out a backoff */
	return true;
}

static void close_cache(struct kubeapi_cache **cache)
{
	bool closed = false;
	unsigned rounds = 0;
	size_t i;

	kubeapi_cache_close(cache, on_closed, &closed);
	pump();
	while (!closed) {
		FUZZ_CHECK(++rounds < MAX_ROUNDS);
		uv_run(&loop, UV_RUN_NOWAIT);
	}
	for (i = 0; i < MAX_CALLS; i++)
		FUZZ_CHECK(!calls[i].used);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kubeapi_cache_options opt = {
	    .informer = {.max_object = MAX_EVENT},
	    .log = discard_log,
	};
	struct kubeapi_cache *cache = NULL;
	struct fake_call *watch;
	unsigned kind, root;
	int rc;

	if (size < 2)
		return 0;
	kind = data[0] % KUBEAPI_STORE_COUNT;
	root = data[1] & 31;
	FUZZ_CHECK(kubeapi_cache_new(&loop, (struct kubeapi_http *)&engine, &opt, &cache) == 0);
	FUZZ_CHECK(kubeapi_cache_start(cache) == 0);
	pump();
	watch = find_watch(collection[kind]);
	FUZZ_CHECK(watch); /* every kind is watched once its list is in */
	rc = feed(watch, (const char *)data + 2, size - 2, (size_t)root * root);
	complete(watch, 200, rc, NULL);
	pump();
	if (relist_all(cache)) {
		struct intern_stats st;

		intern_stats(kubeapi_model_intern(kubeapi_cache_model(cache)), &st);
		FUZZ_CHECK(st.strings == 0 && st.blobs == 0);
	}
	close_cache(&cache);
	return 0;
}
