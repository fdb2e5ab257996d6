/*
 * cache_sync: how long Muster's cluster cache takes to list and start
 * watching a cluster from cold, and how much memory it holds afterwards.
 *
 * usage: cache_sync KUBECONFIG
 * Prints one line of key=value pairs: objects per kind, sync seconds, heap
 * bytes in use (glibc mallinfo2) and resident set size before and after,
 * and the intern table's share. bench/cache-sync runs it before and after
 * adding pods and turns the differences into bytes per node and per pod.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kubeapi/cache.h"
#include "kubeapi/conn.h"
#include "kubeapi/http.h"

static long rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

static void quiet(void *data, const char *msg)
{
	(void)data;
	(void)msg;
}

static void tick(uv_timer_t *t)
{
	(void)t;
}

static void closed(void *data)
{
	(void)data;
}

int main(int argc, char **argv)
{
	struct kubeapi_conn conn = {0};
	struct kubeapi_http *http = NULL;
	struct kubeapi_cache *cache = NULL;
	struct kubeapi_cache_options copt = {.log = quiet};
	struct intern_stats st;
	struct mallinfo2 m0, m1;
	uv_loop_t loop;
	uv_timer_t timer;
	char err[512];
	long rss0, rss1;
	uint64_t t0, t1;

	if (argc != 2) {
		fprintf(stderr, "usage: cache_sync KUBECONFIG\n");
		return 2;
	}
	if (kubeapi_conn_from_kubeconfig(argv[1], NULL, &conn, err, sizeof(err)) < 0) {
		fprintf(stderr, "cache_sync: %s\n", err);
		return 1;
	}
	uv_loop_init(&loop);
	if (kubeapi_http_new(&loop, &conn, NULL, &http) < 0)
		return 1;
	uv_timer_init(&loop, &timer);
	uv_timer_start(&timer, tick, 50, 50);
	m0 = mallinfo2();
	rss0 = rss_bytes();
	t0 = uv_hrtime();
	if (kubeapi_cache_new(&loop, http, &copt, &cache) < 0 || kubeapi_cache_start(cache) < 0)
		return 1;
	while (!kubeapi_cache_synced(cache))
		uv_run(&loop, UV_RUN_ONCE);
	t1 = uv_hrtime();
	malloc_trim(0);
	m1 = mallinfo2();
	rss1 = rss_bytes();
	intern_stats(kubeapi_model_intern(kubeapi_cache_model(cache)), &st);
	printf("nodes=%zu pods=%zu sync_s=%.3f heap_before=%zu heap_after=%zu rss_before=%ld "
	       "rss_after=%ld strings=%zu string_bytes=%zu blobs=%zu blob_bytes=%zu "
	       "table_bytes=%zu\n",
	       kubeapi_cache_store(cache, KUBEAPI_STORE_NODES)->n,
	       kubeapi_cache_store(cache, KUBEAPI_STORE_PODS)->n, (double)(t1 - t0) / 1e9,
	       m0.uordblks, m1.uordblks, rss0, rss1, st.strings, st.string_bytes, st.blobs,
	       st.blob_bytes, st.table_bytes);
	kubeapi_cache_close(&cache, closed, NULL);
	kubeapi_http_close(&http, closed, NULL);
	uv_close((uv_handle_t *)&timer, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	kubeapi_conn_free(&conn);
	return 0;
}
