/*
 * The cluster cache against the real local control plane
 * (MUSTER_CLUSTER_DIR). Writes go through Muster's own HTTP engine; the
 * truth the cache is compared with is read by kubectl, an independent
 * client.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kubeapi/cache.h"
#include "test/integration/itest.h"

#define POLL_MS 100

struct fixture {
	struct itest t;
	struct kubeapi_cache *cache;
	char ns[64];
	unsigned pending, failed; /* writes in flight, writes that failed */
	uint64_t next_compare;    /* kubectl is slow: compare twice a second */
	char skipped[1024];       /* the last "skipping ..." line about fx->ns */
	unsigned skips;           /* how many such lines */
	unsigned relists;         /* "... listing again" lines of a hold */
	unsigned want_events;     /* events_seen(): the pod informer's count to reach */
	/* A test's second cache, standing in for fx->cache while it runs
	 * (teardown closes it if an assertion left it so), and the first. */
	struct kubeapi_cache *extra, *shared;
};

static int synced(void *arg)
{
	struct fixture *fx = arg;

	return kubeapi_cache_synced(fx->cache);
}

static int writes_done(void *arg)
{
	struct fixture *fx = arg;

	return fx->pending == 0;
}

/* ---- writes through the engine ----------------------------------------------------- */

static void write_done(void *data, const struct kubeapi_response *r)
{
	struct fixture *fx = data;

	fx->pending--;
	if (r->err || r->status >= 300) {
		fx->failed++;
		fprintf(stderr, "write failed: %ld %d %.200s\n", r->status, r->err,
		        r->body ? r->body : "");
	}
}

static void submit_write(struct fixture *fx, enum kubeapi_method m, const char *path,
                         const char *body)
{
	struct kubeapi_request req = {
	    .method = m,
	    .path = path,
	    .body = body,
	    .body_len = body ? strlen(body) : 0,
	    .flags = KUBEAPI_REQ_RETRY,
	    .done_cb = write_done,
	    .data = fx,
	};

	assert_int_equal(kubeapi_http_submit(fx->t.http, &req, NULL), 0);
	fx->pending++;
}

static void create_pod(struct fixture *fx, int i, const char *batch)
{
	char path[256], body[1024];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", fx->ns);
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%04d\","
	         "\"labels\":{\"batch\":\"%s\"}},\"spec\":{\"schedulerName\":\"nobody\","
	         "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":"
	         "{\"requests\":{\"cpu\":\"%dm\",\"memory\":\"1Gi\"}}}]}}",
	         i, batch, 100 + i % 7);
	submit_write(fx, KUBEAPI_POST, path, body);
}

/* ---- comparing with kubectl --------------------------------------------------------- */

/* Names and resourceVersions of the namespace's pods, as kubectl sees them. */
static cJSON *truth(struct fixture *fx)
{
	char cmd[1024], *buf = NULL;
	size_t cap = 0, len = 0, n;
	FILE *p;
	cJSON *doc;

	snprintf(cmd, sizeof(cmd), "%s get pods -n %s -o json", fx->t.kubectl, fx->ns);
	p = popen(cmd, "r");
	assert_non_null(p);
	do {
		if (len + 65536 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = fread(buf + len, 1, cap - len - 1, p);
		len += n;
	} while (n > 0);
	assert_int_equal(pclose(p), 0);
	buf[len] = '\0';
	doc = cJSON_Parse(buf);
	free(buf);
	assert_non_null(doc);
	return doc;
}

/* 1 when the cache holds exactly kubectl's pods of fx->ns, same versions. */
static int cache_matches(struct fixture *fx)
{
	struct intern *in = kubeapi_model_intern(kubeapi_cache_model(fx->cache));
	const struct idmap *pods = kubeapi_cache_store(fx->cache, KUBEAPI_STORE_PODS);
	uint32_t ns = intern_find(in, fx->ns, strlen(fx->ns));
	cJSON *doc = truth(fx), *it;
	const struct idmap_slot *e;
	size_t want = 0, have = 0;
	int ok = 1;

	cJSON_ArrayForEach(it, cJSON_GetObjectItem(doc, "items"))
	{
		cJSON *md = cJSON_GetObjectItem(it, "metadata");
		const char *name = cJSON_GetObjectItem(md, "name")->valuestring;
		const char *rv = cJSON_GetObjectItem(md, "resourceVersion")->valuestring;
		uint32_t id = intern_find(in, name, strlen(name));
		const struct kubeapi_pod *p =
		    id && ns ? idmap_get(pods, kubeapi_cache_key(ns, id)) : NULL;

		want++;
		if (!p || p->rv != strtoull(rv, NULL, 10))
			ok = 0;
	}
	IDMAP_FOREACH(pods, i, e)
		if ((uint32_t)(e->key >> 32) == ns && ns)
			have++;
	cJSON_Delete(doc);
	return ok && want == have;
}

static int settled(void *arg)
{
	struct fixture *fx = arg;

	if (uv_now(&fx->t.loop) < fx->next_compare)
		return 0;
	fx->next_compare = uv_now(&fx->t.loop) + 500;
	return cache_matches(fx);
}

/* ---- setup ---------------------------------------------------------------------------- */

static void capture_log(void *data, const char *msg)
{
	struct fixture *fx = data;

	char mine[80];

	/* Other runs' leftovers may be skipped too: count only our namespace. */
	snprintf(mine, sizeof(mine), " %s/", fx->ns);
	if (strstr(msg, "while the cache was held") && strstr(msg, "listing again"))
		fx->relists++;
	if (!strncmp(msg, "skipping ", 9) && strstr(msg, mine)) {
		snprintf(fx->skipped, sizeof(fx->skipped), "%s", msg);
		fx->skips++;
	}
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char path[700];
	/* Pages of 7: every list here spans several continue tokens. */
	struct kubeapi_cache_options copt = {.informer = {.backoff_cap_ms = 2000, .page_size = 7},
	                                     .log = capture_log};

	assert_non_null(fx);
	copt.data = fx;
	itest_open(&fx->t);
	assert_int_equal(kubeapi_cache_new(&fx->t.loop, fx->t.http, &copt, &fx->cache), 0);
	assert_int_equal(kubeapi_cache_start(fx->cache), 0);
	assert_true(itest_run_until(&fx->t, synced, fx, 30000));
	snprintf(fx->ns, sizeof(fx->ns), "cache-%d", (int)getpid());
	snprintf(path, sizeof(path), "{\"metadata\":{\"name\":\"%s\"}}", fx->ns);
	submit_write(fx, KUBEAPI_POST, "/api/v1/namespaces", path);
	assert_true(itest_run_until(&fx->t, writes_done, fx, 30000));
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char path[128];

	if (fx->extra) {
		kubeapi_cache_close(&fx->extra, NULL, NULL);
		fx->cache = fx->shared;
	}
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s", fx->ns);
	submit_write(fx, KUBEAPI_DELETE, path, NULL);
	itest_run_until(&fx->t, writes_done, fx, 30000);
	kubeapi_cache_close(&fx->cache, NULL, NULL);
	itest_close(&fx->t);
	free(fx);
	return 0;
}

/* ---- tests ---------------------------------------------------------------------------- */

/* Nodes and namespaces were listed: the cache knows the profile's nodes. */
static void test_initial_sync_has_the_nodes(void **state)
{
	struct fixture *fx = *state;
	const struct idmap *nodes = kubeapi_cache_store(fx->cache, KUBEAPI_STORE_NODES);
	char cmd[700];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "%s get nodes --no-headers | wc -l", fx->t.kubectl);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	assert_true(n > 0);
	assert_int_equal(nodes->n, (size_t)n);
	assert_int_equal(fx->skips, 0);
}

/* 1,000 creates, updates and deletes: the cache ends equal to kubectl. */
static void test_churn_converges(void **state)
{
	struct fixture *fx = *state;
	char path[256];
	int i;

	for (i = 0; i < 400; i++)
		create_pod(fx, i, i < 200 ? "a" : "b");
	assert_true(itest_run_until(&fx->t, writes_done, fx, 60000));
	for (i = 0; i < 300; i++) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/p-%04d", fx->ns, i);
		submit_write(fx, KUBEAPI_PATCH_MERGE, path,
		             "{\"metadata\":{\"labels\":{\"touched\":\"yes\"}}}");
	}
	assert_true(itest_run_until(&fx->t, writes_done, fx, 60000));
	for (i = 100; i < 400; i++) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/p-%04d", fx->ns, i);
		submit_write(fx, KUBEAPI_DELETE, path, NULL);
	}
	assert_true(itest_run_until(&fx->t, writes_done, fx, 60000));
	assert_int_equal(fx->failed, 0);
	assert_true(itest_run_until(&fx->t, settled, fx, 30000));
}

/* While Muster is not reading, the API server restarts, pods are deleted and
 * etcd is compacted: the watch cannot resume from its old
 * resourceVersion, the informer relists, and the relist sweeps the pods
 * deleted meanwhile. */
static void test_relist_after_restart_and_compaction_sweeps_deleted(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_informer_stats before, after;
	int i;

	for (i = 1000; i < 1060; i++)
		create_pod(fx, i, "c");
	assert_true(itest_run_until(&fx->t, writes_done, fx, 60000));
	assert_true(itest_run_until(&fx->t, settled, fx, 30000));
	kubeapi_cache_informer_stats(fx->cache, KUBEAPI_STORE_PODS, &before);
	/* The loop is not run from here on until the end: nothing is read. */
	/* Restart first, so the old watch holds no buffered events: the
	 * deletions below are only visible to a new watch or a list. */
	itest_sh("%s stop kube-apiserver && %s start kube-apiserver >/dev/null", fx->t.ctl,
	         fx->t.ctl);
	itest_sh("%s delete pods -n %s -l batch=c --wait=false >/dev/null", fx->t.kubectl, fx->ns);
	itest_sh("rev=$(curl -s -X POST http://127.0.0.1:%s/v3/kv/range -d '{\"key\":\"AA==\"}' | "
	         "sed 's/.*\"revision\":\"\\([0-9]*\\)\".*/\\1/') && "
	         "curl -sf -X POST http://127.0.0.1:%s/v3/kv/compaction "
	         "-d \"{\\\"revision\\\":\\\"$rev\\\",\\\"physical\\\":true}\" >/dev/null",
	         fx->t.etcd_port, fx->t.etcd_port);
	assert_true(itest_run_until(&fx->t, settled, fx, 60000));
	kubeapi_cache_informer_stats(fx->cache, KUBEAPI_STORE_PODS, &after);
	fprintf(stderr, "pods informer: lists %u->%u watches %u->%u gone %u->%u events %u->%u\n",
	        before.lists, after.lists, before.watches, after.watches, before.gone, after.gone,
	        before.events, after.events);
	assert_true(after.lists > before.lists);
	/* The 100 pods left by the churn test alone need 15 pages of 7. */
	assert_true(after.pages - before.pages >= 100 / 7 + 1);
	assert_int_equal(fx->skips, 0);
}

static const struct kubeapi_pod *cached_pod(struct fixture *fx, const char *name)
{
	struct intern *in = kubeapi_model_intern(kubeapi_cache_model(fx->cache));
	uint32_t ns = intern_find(in, fx->ns, strlen(fx->ns));
	uint32_t id = intern_find(in, name, strlen(name));

	if (!ns || !id)
		return NULL;
	return idmap_get(kubeapi_cache_store(fx->cache, KUBEAPI_STORE_PODS),
	                 kubeapi_cache_key(ns, id));
}

static int fine_cached(void *arg)
{
	struct fixture *fx = arg;

	return cached_pod(fx, "fine") != NULL;
}

/* The API server accepts a pod with 257 containers; the decoder's cap is
 * 256. The cache logs it by kind, namespace and name, skips it, and keeps
 * going: a pod created after it is cached as usual. */
static void test_an_object_that_cannot_be_decoded_is_logged_and_skipped(void **state)
{
	struct fixture *fx = *state;
	size_t cap = 64 * 1024, n;
	char *body = malloc(cap), path[128], want[256];
	unsigned errors = kubeapi_cache_decode_errors(fx->cache), skips = fx->skips;
	int i;

	assert_non_null(body);
	n = (size_t)snprintf(body, cap,
	                     "{\"metadata\":{\"name\":\"huge\"},\"spec\":{\"schedulerName\":"
	                     "\"nobody\",\"containers\":[");
	for (i = 0; i < KUBEAPI_MAX_CONTAINERS + 1; i++)
		n += (size_t)snprintf(body + n, cap - n, "%s{\"name\":\"c%d\",\"image\":\"x\"}",
		                      i ? "," : "", i);
	snprintf(body + n, cap - n, "]}}");
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", fx->ns);
	submit_write(fx, KUBEAPI_POST, path, body);
	assert_true(itest_run_until(&fx->t, writes_done, fx, 30000));
	create_pod(fx, 9999, "d");
	submit_write(fx, KUBEAPI_POST, path,
	             "{\"metadata\":{\"name\":\"fine\"},\"spec\":{\"schedulerName\":\"nobody\","
	             "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
	assert_true(itest_run_until(&fx->t, writes_done, fx, 30000));
	assert_int_equal(fx->failed, 0);
	assert_true(itest_run_until(&fx->t, fine_cached, fx, 30000));
	assert_null(cached_pod(fx, "huge"));
	assert_true(kubeapi_cache_decode_errors(fx->cache) > errors);
	assert_int_equal(fx->skips, skips + 1);
	snprintf(want, sizeof(want), "skipping Pod %s/huge: spec.containers", fx->ns);
	assert_memory_equal(fx->skipped, want, strlen(want));
	free(body);
}

/* ---- holding still --------------------------------------------------------------- */

static int events_seen(void *arg)
{
	struct fixture *fx = arg;
	struct kubeapi_informer_stats st;

	kubeapi_cache_informer_stats(fx->cache, KUBEAPI_STORE_PODS, &st);
	return st.events >= fx->want_events;
}

/* Pods of fx->ns in fx->cache's store. */
static size_t ns_pods(struct fixture *fx)
{
	struct intern *in = kubeapi_model_intern(kubeapi_cache_model(fx->cache));
	uint32_t ns = intern_find(in, fx->ns, strlen(fx->ns));
	const struct idmap_slot *e;
	size_t n = 0;

	IDMAP_FOREACH(kubeapi_cache_store(fx->cache, KUBEAPI_STORE_PODS), i, e)
		n += ns && (uint32_t)(e->key >> 32) == ns;
	return n;
}

/* Creates pods i..i+n of fx->ns while fx->cache is held, and runs the loop
 * until they are written and their watch events read. */
static void churn_held(struct fixture *fx, int i, int n)
{
	struct kubeapi_informer_stats st;

	kubeapi_cache_informer_stats(fx->cache, KUBEAPI_STORE_PODS, &st);
	fx->want_events = st.events + (unsigned)n;
	kubeapi_cache_hold(fx->cache);
	for (int k = i; k < i + n; k++)
		create_pod(fx, k, "held");
	assert_true(itest_run_until(&fx->t, writes_done, fx, 60000));
	assert_int_equal(fx->failed, 0);
	assert_true(itest_run_until(&fx->t, events_seen, fx, 30000));
}

/* Held, the cache reads its watches on and its stores stay as they were
 * (a planner's thread may read them); released, in slices of one change,
 * every change that came meanwhile is applied and the cache equals
 * kubectl's view. */
static void test_a_held_cache_changes_only_at_release(void **state)
{
	struct fixture *fx = *state;
	size_t before = ns_pods(fx);
	uint64_t replayed0, replayed;
	unsigned relisted0, relisted, calls = 0;

	kubeapi_cache_hold_stats(fx->cache, &replayed0, &relisted0);
	churn_held(fx, 2000, 60);
	assert_int_equal(ns_pods(fx), before);
	/* A release with no time to spare applies one change a call. */
	while (!kubeapi_cache_release(fx->cache, 0))
		calls++;
	assert_true(calls >= 59);
	assert_int_equal(ns_pods(fx), before + 60);
	kubeapi_cache_hold_stats(fx->cache, &replayed, &relisted);
	assert_true(replayed >= replayed0 + 60);
	assert_int_equal(relisted, relisted0);
	assert_true(itest_run_until(&fx->t, settled, fx, 30000));
}

/* A hold whose changes run over its cap (here 4 KiB, a few pods) drops
 * them, says so, and lists the kind again: nothing is lost. */
static void test_a_hold_over_its_cap_lists_again(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_cache_options copt = {
	    .informer = {.page_size = 7}, .log = capture_log, .data = fx, .hold_max_bytes = 4096};
	struct kubeapi_informer_stats st;
	uint64_t replayed;
	unsigned relisted, relists = fx->relists, lists;
	size_t before;

	assert_int_equal(kubeapi_cache_new(&fx->t.loop, fx->t.http, &copt, &fx->extra), 0);
	assert_int_equal(kubeapi_cache_start(fx->extra), 0);
	fx->shared = fx->cache;
	fx->cache = fx->extra;
	assert_true(itest_run_until(&fx->t, synced, fx, 30000));
	before = ns_pods(fx);
	churn_held(fx, 3000, 30);
	assert_int_equal(ns_pods(fx), before);
	kubeapi_cache_informer_stats(fx->cache, KUBEAPI_STORE_PODS, &st);
	lists = st.lists;
	assert_true(kubeapi_cache_release(fx->cache, UINT64_MAX));
	/* Pods listed again; another kind may have run over too (a Node
	 * alone is about 4 KiB). */
	kubeapi_cache_hold_stats(fx->cache, &replayed, &relisted);
	assert_true(relisted >= 1);
	assert_int_equal(fx->relists, relists + relisted);
	assert_true(itest_run_until(&fx->t, settled, fx, 30000));
	kubeapi_cache_informer_stats(fx->cache, KUBEAPI_STORE_PODS, &st);
	assert_true(st.lists > lists);
	assert_int_equal(ns_pods(fx), before + 30);
	fx->cache = fx->shared;
	kubeapi_cache_close(&fx->extra, NULL, NULL);
	assert_true(itest_run_until(&fx->t, settled, fx, 30000));
}

/* How many times key is among keys[0..n). */
static size_t count_key(const uint64_t *keys, size_t n, uint64_t key)
{
	size_t c = 0;

	for (size_t k = 0; k < n; k++)
		c += keys[k] == key;
	return c;
}

/* A cache that tracks Pods names every pod created, changed or deleted
 * since its last clear (a deleted one twice: its creation and its
 * deletion); an untracked kind's changes are not known. */
static void test_the_change_feed_names_the_pods_that_changed(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_cache_options copt = {.informer = {.page_size = 7},
	                                     .log = capture_log,
	                                     .data = fx,
	                                     .track_changes = 1u << KUBEAPI_STORE_PODS};
	uint64_t want[20];
	struct intern *in;
	const uint64_t *keys;
	size_t n;
	char path[256], name[32];
	uint32_t ns;

	assert_int_equal(kubeapi_cache_new(&fx->t.loop, fx->t.http, &copt, &fx->extra), 0);
	assert_int_equal(kubeapi_cache_start(fx->extra), 0);
	fx->shared = fx->cache;
	fx->cache = fx->extra;
	assert_true(itest_run_until(&fx->t, synced, fx, 30000));
	assert_false(kubeapi_cache_changes(fx->cache, KUBEAPI_STORE_NODES, &keys, &n));
	assert_true(itest_run_until(&fx->t, settled, fx, 30000));
	kubeapi_cache_changes_clear(fx->cache, KUBEAPI_STORE_PODS);
	assert_true(kubeapi_cache_changes(fx->cache, KUBEAPI_STORE_PODS, &keys, &n));
	assert_int_equal(n, 0);
	for (int i = 0; i < 20; i++)
		create_pod(fx, 5000 + i, "feed");
	assert_true(itest_run_until(&fx->t, writes_done, fx, 60000));
	assert_true(itest_run_until(&fx->t, settled, fx, 30000));
	in = kubeapi_model_intern(kubeapi_cache_model(fx->cache));
	ns = intern_find(in, fx->ns, strlen(fx->ns));
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "p-%04d", 5000 + i);
		want[i] = kubeapi_cache_key(ns, intern_find(in, name, strlen(name)));
	}
	for (int i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/p-%04d", fx->ns, 5000 + i);
		submit_write(fx, KUBEAPI_DELETE, path, NULL);
	}
	assert_true(itest_run_until(&fx->t, writes_done, fx, 60000));
	assert_int_equal(fx->failed, 0);
	assert_true(itest_run_until(&fx->t, settled, fx, 30000));
	assert_true(kubeapi_cache_changes(fx->cache, KUBEAPI_STORE_PODS, &keys, &n));
	for (int i = 0; i < 20; i++)
		assert_true(count_key(keys, n, want[i]) >= (i < 5 ? 2u : 1u));
	kubeapi_cache_changes_clear(fx->cache, KUBEAPI_STORE_PODS);
	assert_true(kubeapi_cache_changes(fx->cache, KUBEAPI_STORE_PODS, &keys, &n));
	assert_int_equal(n, 0);
	fx->cache = fx->shared;
	kubeapi_cache_close(&fx->extra, NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_initial_sync_has_the_nodes),
	    cmocka_unit_test(test_churn_converges),
	    cmocka_unit_test(test_relist_after_restart_and_compaction_sweeps_deleted),
	    /* Before the next: it leaves a pod the cache never takes. */
	    cmocka_unit_test(test_a_held_cache_changes_only_at_release),
	    cmocka_unit_test(test_a_hold_over_its_cap_lists_again),
	    cmocka_unit_test(test_the_change_feed_names_the_pods_that_changed),
	    cmocka_unit_test(test_an_object_that_cannot_be_decoded_is_logged_and_skipped),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
