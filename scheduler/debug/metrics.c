/*
 * /metrics (metrics.h). Names follow Prometheus conventions: base units
 * (seconds), _total for counters, one HELP and TYPE line per family.
 * Queue series carry the queue (or cohort) name and its kind; amounts are
 * in the resource's own unit (cpu in cores).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "scheduler/debug/metrics.h"
#include "scheduler/debug/debug.h"
#include "kubeapi/cache.h"
#include "scheduler/debug/snap.h"

/* Cycles: 1 ms to 10 s. Admission waits: 1 s to a day. API calls: 1 ms
 * to 30 s (a request's default timeout). */
static const double cycle_le[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                  0.25,  0.5,    1,     2.5,  5,     10};
/* Loop stalls: 1 ms to 10 s, with 100 ms (what a loop may be held at
 * most, issue 18) a bound of its own. */
static const double stall_le[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static const double wait_le[] = {1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21600, 86400};
static const double api_le[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                0.25,  0.5,    1,     2.5,  5,     10,   30};

static const char *const verb_name[DEBUG_NVERBS] = {"GET",   "POST",   "PUT",
                                                    "PATCH", "DELETE", "WATCH"};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void hist_init(struct debug_hist *h, const double *le, unsigned n)
{
	memset(h, 0, sizeof(*h));
	h->le = le;
	h->n = n;
}

void debug_metrics_init(struct debug_metrics *m)
{
	memset(m, 0, sizeof(*m));
	hist_init(&m->cycle, cycle_le, N(cycle_le));
	hist_init(&m->admission_wait, wait_le, N(wait_le));
	hist_init(&m->stall, stall_le, N(stall_le));
	for (unsigned v = 0; v < DEBUG_NVERBS; v++)
		hist_init(&m->api[v], api_le, N(api_le));
}

void debug_hist_observe(struct debug_hist *h, double v)
{
	unsigned k = 0;

	while (k < h->n && v > h->le[k])
		k++;
	h->counts[k]++;
	h->sum += v;
	h->count++;
}

static enum debug_verb verb_of(enum kubeapi_method m, int stream)
{
	if (stream)
		return DEBUG_VERB_WATCH;
	switch (m) {
	case KUBEAPI_GET:
		return DEBUG_VERB_GET;
	case KUBEAPI_POST:
		return DEBUG_VERB_POST;
	case KUBEAPI_PUT:
		return DEBUG_VERB_PUT;
	case KUBEAPI_DELETE:
		return DEBUG_VERB_DELETE;
	default:
		return DEBUG_VERB_PATCH;
	}
}

void debug_metrics_api(void *data, enum kubeapi_method m, int stream, long status, uint64_t usec)
{
	struct debug_metrics *sm = data;
	enum debug_verb v = verb_of(m, stream);

	sm->api_codes[v][status >= 100 && status < DEBUG_CODES ? status : 0]++;
	/* A watch's duration is how long the stream stayed open, not a
	 * latency: counted, not timed. */
	if (!stream)
		debug_hist_observe(&sm->api[v], (double)usec / 1e6);
}

/* ---- rendering ---------------------------------------------------------- */

/* The document under construction. The first error sticks and every
 * later put() is a no-op, so the renderers need no error paths. */
struct mbuf {
	struct buf b; /* capped at DEBUG_METRICS_MAX bytes with the NUL */
	int err;
};

__attribute__((format(printf, 2, 3))) static void put(struct mbuf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	if (b->err)
		return;
	va_start(ap, fmt);
	rc = buf_vprintf(&b->b, fmt, ap);
	va_end(ap);
	b->err = rc == -EMSGSIZE ? -E2BIG : rc;
}

static void family(struct mbuf *b, const char *name, const char *type, const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values are names from the configuration and the model: escape
 * backslash, quote and newline as the format asks. */
static void put_escaped(struct mbuf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			put(b, "\\%c", *s);
		else if (*s == '\n')
			put(b, "\\n");
		else
			put(b, "%c", *s);
	}
}

static void hist(struct mbuf *b, const char *name, const char *labels, const struct debug_hist *h)
{
	uint64_t cum = 0;
	const char *sep = labels[0] ? "," : "";

	for (unsigned k = 0; k < h->n; k++) {
		cum += h->counts[k];
		put(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, h->le[k],
		    (unsigned long long)cum);
	}
	put(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
	    (unsigned long long)h->count);
	put(b, "%s_sum%s%s%s %.6f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
	    h->sum);
	put(b, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
	    (unsigned long long)h->count);
}

static void queue_labels(struct mbuf *b, const struct snap_queue *q)
{
	put(b, "{queue=\"");
	put_escaped(b, q->name);
	put(b, "\",kind=\"%s\"", q->cohort ? "cohort" : "queue");
}

/* One gauge family over every queue and cohort (not the root). */
static void queue_counts(struct mbuf *b, const struct snap *sn, const char *name, const char *help,
                         int admitted)
{
	family(b, name, "gauge", help);
	for (int i = 1; i < sn->nqueues; i++) {
		put(b, "%s", name);
		queue_labels(b, &sn->queues[i]);
		put(b, "} %u\n", admitted ? sn->queues[i].admitted : sn->queues[i].pending);
	}
}

static void queue_amounts(struct mbuf *b, const struct snap *sn, const char *name, const char *help,
                          size_t field)
{
	family(b, name, "gauge", help);
	for (int i = 1; i < sn->nqueues; i++) {
		const struct snap_queue *q = &sn->queues[i];
		const int64_t *v = *(int64_t *const *)((const char *)q + field);

		for (unsigned k = 0; k < sn->nslots; k++) {
			if (v[k] == QUEUE_UNLIMITED)
				continue;
			put(b, "%s", name);
			queue_labels(b, q);
			put(b, ",resource=\"");
			put_escaped(b, sn->slot_name[k]);
			put(b, "\"} %.17g\n", snap_amount(sn->slot_res[k], v[k]));
		}
	}
}

static void queues(struct mbuf *b, const struct snap *sn)
{
	queue_counts(b, sn, "muster_queue_pending_gangs", "Gangs waiting in the queue.", 0);
	queue_counts(b, sn, "muster_queue_admitted_gangs", "Gangs with members bound or binding.",
	             1);
	queue_amounts(b, sn, "muster_queue_usage", "What admitted gangs hold.",
	              offsetof(struct snap_queue, usage));
	queue_amounts(b, sn, "muster_queue_nominal", "Nominal quota (cohorts: what members lend).",
	              offsetof(struct snap_queue, nominal));
	queue_amounts(b, sn, "muster_queue_borrowed", "Usage above nominal quota.",
	              offsetof(struct snap_queue, borrowed));
	if (sn->half_life_ms)
		queue_amounts(b, sn, "muster_queue_remembered_usage",
		              "Usage as fair sharing remembers it (fairSharing.halfLife).",
		              offsetof(struct snap_queue, remembered));
	family(b, "muster_queue_fair_share", "gauge",
	       "Weighted share of its quota in use; above 1 it borrows.");
	for (int i = 1; i < sn->nqueues; i++) {
		put(b, "muster_queue_fair_share");
		queue_labels(b, &sn->queues[i]);
		put(b, "} %.6g\n", sn->queues[i].share);
	}
}

static void counter(struct mbuf *b, const char *name, const char *help, uint64_t v)
{
	family(b, name, "counter", help);
	put(b, "%s %llu\n", name, (unsigned long long)v);
}

static void api(struct mbuf *b, const struct debug_metrics *m)
{
	char labels[64];

	family(b, "muster_api_requests_total", "counter",
	       "Requests to the API server, by verb and status code (error: no answer).");
	for (unsigned v = 0; v < DEBUG_NVERBS; v++)
		for (unsigned c = 0; c < DEBUG_CODES; c++)
			if (m->api_codes[v][c]) {
				if (c)
					put(b,
					    "muster_api_requests_total{verb=\"%s\",code=\"%u\"} "
					    "%llu\n",
					    verb_name[v], c,
					    (unsigned long long)m->api_codes[v][c]);
				else
					put(b,
					    "muster_api_requests_total{verb=\"%s\",code=\"error\"} "
					    "%llu\n",
					    verb_name[v], (unsigned long long)m->api_codes[v][c]);
			}
	family(b, "muster_api_request_duration_seconds", "histogram",
	       "Latency of requests to the API server (watches are not timed).");
	for (unsigned v = 0; v < DEBUG_NVERBS; v++) {
		if (v == DEBUG_VERB_WATCH)
			continue;
		snprintf(labels, sizeof(labels), "verb=\"%s\"", verb_name[v]);
		hist(b, "muster_api_request_duration_seconds", labels, &m->api[v]);
	}
}

/* What came from the watches while a cycle ran, applied after it. */
static void held(struct mbuf *b, const struct kubeapi_cache *c)
{
	uint64_t replayed;
	unsigned relisted;

	kubeapi_cache_hold_stats(c, &replayed, &relisted);
	counter(b, "muster_cache_held_changes_total",
	        "Watch changes that came while a cycle ran, applied after it.", replayed);
	counter(b, "muster_cache_hold_relists_total",
	        "Kinds listed again because their changes during a cycle ran over the cap "
	        "(each is logged).",
	        relisted);
}

static void scheduler(struct mbuf *b, const struct debug_view *v)
{
	family(b, "muster_cycle_duration_seconds", "histogram", "Duration of a scheduling cycle.");
	hist(b, "muster_cycle_duration_seconds", "", &v->m->cycle);
	family(b, "muster_admission_wait_seconds", "histogram",
	       "From a gang's creation to the cycle that admitted it.");
	hist(b, "muster_admission_wait_seconds", "", &v->m->admission_wait);
	family(b, "muster_loop_stall_seconds", "histogram",
	       "Time the event loop ran callbacks between two waits for I/O (watch reads, "
	       "carrying out a cycle, debug requests; the planner runs on a thread of its own): "
	       "while it does, nothing else is read or answered.");
	hist(b, "muster_loop_stall_seconds", "", &v->m->stall);
	family(b, "muster_loop_stall_max_seconds", "gauge", "The longest loop stall since start.");
	put(b, "muster_loop_stall_max_seconds %.6f\n", v->m->stall_max);
	counter(b, "muster_cycles_total", "Scheduling cycles run.", v->cycles);
	counter(b, "muster_binds_total", "Pods bound (the API server said yes).", v->binds_ok);
	counter(b, "muster_bind_failures_total",
	        "Binds answered that the pod is gone, replaced or bound elsewhere.",
	        v->binds_failed);
	counter(b, "muster_bind_retries_total",
	        "Binds answered without taking them (no answer, 5xx, 429, 401, 403, a refusal "
	        "that says nothing about the pod): the room stays held and the bind goes again.",
	        v->binds_retried);
	counter(
	    b, "muster_write_errors_total",
	    "Status, Event and eviction writes that failed (each is tried again while it is due).",
	    v->write_errors);
	counter(b, "muster_evictions_total", "Pods evicted to make room.", v->evictions);
	counter(b, "muster_events_dropped_total",
	        "Events not sent: too many waited behind binds already (kubeapi/http.h).",
	        v->events_dropped);
	counter(b, "muster_preemptions_total", "Gangs that preempted others.", v->m->preemptions);
	counter(b, "muster_plan_pods_read_total",
	        "Pods the planner read again: those that changed since the cycle before, or all.",
	        v->m->pods_read);
	counter(b, "muster_plan_pod_table_rebuilds_total",
	        "Cycles that read every pod (the first, or one whose changes were not known).",
	        v->m->pod_table_rebuilds);
	family(b, "muster_leader", "gauge", "1 when this instance schedules (holds the lease).");
	put(b, "muster_leader %d\n", v->leader ? 1 : 0);
	family(b, "muster_ready", "gauge", "1 once the caches have synced.");
	put(b, "muster_ready %d\n", v->cache && kubeapi_cache_synced(v->cache) ? 1 : 0);
	if (!v->cache)
		return;
	counter(b, "muster_node_resources_untracked_total",
	        "Node decodes that left resource names out: the resource table was full or the "
	        "Node brought too many new names (each is logged).",
	        kubeapi_cache_untracked(v->cache));
	held(b, v->cache);
}

/* Per kind: label value kind="Pod", etc. */
static void kind_series(struct mbuf *b, const char *name, enum kubeapi_store_kind k,
                        const char *reason, unsigned long long v)
{
	put(b, "%s{kind=\"", name);
	put_escaped(b, kubeapi_cache_kind_name(k));
	if (reason)
		put(b, "\",reason=\"%s", reason);
	put(b, "\"} %llu\n", v);
}

/* The informers' lists and what they could not take (informer.h). */
static void informers(struct mbuf *b, const struct kubeapi_cache *c)
{
	struct kubeapi_informer_stats st[KUBEAPI_STORE_COUNT];
	unsigned k;

	for (k = 0; k < KUBEAPI_STORE_COUNT; k++)
		kubeapi_cache_informer_stats(c, k, &st[k]);
	family(b, "muster_skipped_objects_total", "counter",
	       "Objects left out of the cache: too_large (over the object or body cap), "
	       "unreadable (not JSON), undecodable (fields the scheduler reads are wrong).");
	for (k = 0; k < KUBEAPI_STORE_COUNT; k++) {
		kind_series(b, "muster_skipped_objects_total", k, "too_large", st[k].too_large);
		kind_series(b, "muster_skipped_objects_total", k, "unreadable", st[k].skipped);
		kind_series(b, "muster_skipped_objects_total", k, "undecodable",
		            kubeapi_cache_kind_decode_errors(c, k));
	}
	family(b, "muster_list_pages_total", "counter", "List pages read whole.");
	for (k = 0; k < KUBEAPI_STORE_COUNT; k++)
		kind_series(b, "muster_list_pages_total", k, NULL, st[k].pages);
	family(b, "muster_list_page_shrinks_total", "counter",
	       "List pages asked again with a smaller limit: over the response body cap.");
	for (k = 0; k < KUBEAPI_STORE_COUNT; k++)
		kind_series(b, "muster_list_page_shrinks_total", k, NULL, st[k].shrinks);
	family(b, "muster_list_page_limit", "gauge",
	       "The limit of the next list page: page size, less when objects are large.");
	for (k = 0; k < KUBEAPI_STORE_COUNT; k++)
		kind_series(b, "muster_list_page_limit", k, NULL, st[k].limit);
}

int debug_metrics_render(const struct debug_view *v, char **out, size_t *len)
{
	const struct snap *sn = v->snap;
	struct mbuf b = {.err = 0};

	/* The allocation counts the NUL; 64 KiB at once: a document is rarely
	 * smaller, and it saves the first eight doublings. */
	buf_init(&b.b, DEBUG_METRICS_MAX - 1);
	b.err = buf_reserve(&b.b, 65536 - 1);
	scheduler(&b, v);
	api(&b, v->m);
	if (v->cache)
		informers(&b, v->cache);
	if (sn && sn->queues)
		queues(&b, sn);
	if (b.err || !b.b.p) {
		buf_free(&b.b);
		return b.err ? b.err : -ENOMEM;
	}
	*out = buf_steal(&b.b, len);
	return 0;
}
