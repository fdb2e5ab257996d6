/*
 * /metrics: counters and histograms kept by the running scheduler, and
 * their rendering in the Prometheus text format (version 0.0.4).
 *
 * Observing costs O(buckets) (a dozen compares); rendering costs
 * O(queues x slots + verbs x codes seen) and allocates one buffer of at
 * most DEBUG_METRICS_MAX bytes.
 *
 * Used by the daemon (scheduler/), which owns the state it reads.
 */
#ifndef MUSTER_SCHEDULER_DEBUG_METRICS_H
#define MUSTER_SCHEDULER_DEBUG_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "kubeapi/http.h"

#define DEBUG_HIST_MAX    16
#define DEBUG_METRICS_MAX (8u << 20)

/* A histogram with fixed upper bounds (le), cumulative when rendered. */
struct debug_hist {
	const double *le;
	unsigned n;
	uint64_t counts[DEBUG_HIST_MAX + 1]; /* the last one: +Inf */
	double sum;
	uint64_t count;
};

enum debug_verb {
	DEBUG_VERB_GET,
	DEBUG_VERB_POST,
	DEBUG_VERB_PUT,
	DEBUG_VERB_PATCH,
	DEBUG_VERB_DELETE,
	DEBUG_VERB_WATCH,
	DEBUG_NVERBS,
};

/* HTTP status codes 100..599 are counted each; 0 is "error" (no answer). */
#define DEBUG_CODES 600

struct debug_metrics {
	struct debug_hist cycle;          /* seconds */
	struct debug_hist admission_wait; /* seconds from creation to admission */
	/* The event loop's busy spans: seconds of callbacks between two
	 * waits for I/O (run.c), and the longest since start. */
	struct debug_hist stall;
	double stall_max;
	struct debug_hist api[DEBUG_NVERBS];
	uint64_t api_codes[DEBUG_NVERBS][DEBUG_CODES];
	uint64_t preemptions;
	/* The planner's pod table (policy/podtab.c): pods read again (the
	 * changed ones, or all of them), and cycles that read every pod. */
	uint64_t pods_read, pod_table_rebuilds;
};

/** Set the bucket bounds; all counts zero. */
void debug_metrics_init(struct debug_metrics *m);

/** Count v into h. */
void debug_hist_observe(struct debug_hist *h, double v);

/** The engine's observe hook (kubeapi_http_options.observe); data is the
 *  struct debug_metrics. */
void debug_metrics_api(void *data, enum kubeapi_method m, int stream, long status, uint64_t usec);

struct debug_view;

/** The whole /metrics document for view v into *out (malloc'd, the
 *  caller frees) and *len. 0, -ENOMEM, -E2BIG past DEBUG_METRICS_MAX. */
int debug_metrics_render(const struct debug_view *v, char **out, size_t *len);

#endif /* MUSTER_SCHEDULER_DEBUG_METRICS_H */
