/*
 * /metrics: counters and histograms kept by the running scheduler, and
 * their rendering in the Prometheus text format (version 0.0.4).
 *
 * Observing costs O(buckets) (a dozen compares); rendering costs
 * O(queues x slots + verbs x codes seen) and allocates one buffer of at
 * most SCHED_METRICS_MAX bytes.
 *
 * Internal to scheduler/.
 */
#ifndef MUSTER_SCHEDULER_METRICS_H
#define MUSTER_SCHEDULER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "kubeapi/http.h"

#define SCHED_HIST_MAX    16
#define SCHED_METRICS_MAX (8u << 20)

/* A histogram with fixed upper bounds (le), cumulative when rendered. */
struct sched_hist {
	const double *le;
	unsigned n;
	uint64_t counts[SCHED_HIST_MAX + 1]; /* the last one: +Inf */
	double sum;
	uint64_t count;
};

enum sched_verb {
	SCHED_VERB_GET,
	SCHED_VERB_POST,
	SCHED_VERB_PUT,
	SCHED_VERB_PATCH,
	SCHED_VERB_DELETE,
	SCHED_VERB_WATCH,
	SCHED_NVERBS,
};

/* HTTP status codes 100..599 are counted each; 0 is "error" (no answer). */
#define SCHED_CODES 600

struct sched_metrics {
	struct sched_hist cycle;          /* seconds */
	struct sched_hist admission_wait; /* seconds from creation to admission */
	struct sched_hist api[SCHED_NVERBS];
	uint64_t api_codes[SCHED_NVERBS][SCHED_CODES];
	uint64_t preemptions;
};

/** Set the bucket bounds; all counts zero. */
void sched_metrics_init(struct sched_metrics *m);

/** Count v into h. */
void sched_hist_observe(struct sched_hist *h, double v);

/** The engine's observe hook (kubeapi_http_options.observe); data is the
 *  struct sched_metrics. */
void sched_metrics_api(void *data, enum kubeapi_method m, int stream, long status, uint64_t usec);

struct sched;
struct snap;

/** The whole /metrics document into *out (malloc'd, the caller frees) and
 *  *len. 0, -ENOMEM, -E2BIG past SCHED_METRICS_MAX. */
int sched_metrics_render(const struct sched *s, const struct snap *sn, char **out, size_t *len);

#endif /* MUSTER_SCHEDULER_METRICS_H */
