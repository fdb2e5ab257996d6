/*
 * What a run comes to (sim.h: struct sim_report): waits per queue,
 * utilisation, and the GPUs left idle while some gang waited, the waste
 * a packing or a policy should keep small. One sort of the gangs by queue
 * and wait, one sort of their events by time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

struct row {
	const char *queue;
	int64_t wait; /* SIM_NO_TIME: never started */
};

static int cmp_queue(const char *a, const char *b)
{
	return !a ? (b ? -1 : 0) : !b ? 1 : strcmp(a, b);
}

static int by_queue_wait(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	int c = cmp_queue(a->queue, b->queue);

	if (c)
		return c;
	return (a->wait > b->wait) - (a->wait < b->wait);
}

/* Nearest rank: the smallest wait that p percent of w[0..n) do not pass. */
static int64_t rank(const int64_t *w, size_t n, unsigned p)
{
	size_t k = (n * p + 99) / 100;

	return n ? w[k ? k - 1 : 0] : 0;
}

static int queues(const struct sim_options *o, const struct sim_result *r, struct sim_report *out)
{
	struct row *v = malloc((o->ngangs + 1) * sizeof(*v));
	int64_t *w = malloc((o->ngangs + 1) * sizeof(*w));
	size_t k = 0;

	out->queues = calloc(o->ngangs + 1, sizeof(*out->queues));
	if (!v || !w || !out->queues) {
		free(v);
		free(w);
		return -ENOMEM;
	}
	for (size_t i = 0; i < o->ngangs; i++)
		v[i] = (struct row){o->gangs[i].queue, r->start_s[i] == SIM_NO_TIME
		                                           ? SIM_NO_TIME
		                                           : r->start_s[i] - o->gangs[i].at_s};
	qsort(v, o->ngangs, sizeof(*v), by_queue_wait);
	while (k < o->ngangs) {
		struct sim_queue_report *q = &out->queues[out->nqueues++];
		size_t n = 0;
		int64_t sum = 0;

		q->queue = v[k].queue;
		for (; k < o->ngangs && !cmp_queue(v[k].queue, q->queue); k++) {
			q->gangs++;
			if (v[k].wait != SIM_NO_TIME)
				sum += w[n++] = v[k].wait;
		}
		q->started = n;
		q->mean = n ? sum / (int64_t)n : 0;
		q->p50 = rank(w, n, 50);
		q->p90 = rank(w, n, 90);
		q->p99 = rank(w, n, 99);
		q->max = n ? w[n - 1] : 0;
	}
	free(v);
	free(w);
	return 0;
}

/* An event in a gang's life: its waiting and the GPUs in use change. */
struct event {
	int64_t t;
	int waiting;
	int64_t gpus;
};

static int by_time(const void *x, const void *y)
{
	const struct event *a = x, *b = y;

	return (a->t > b->t) - (a->t < b->t);
}

static int usage(const struct sim_options *o, const struct sim_result *r, struct sim_report *out)
{
	struct event *e = malloc((3 * o->ngangs + 1) * sizeof(*e));
	int64_t capacity = 0, first = INT64_MAX, last = 0, used = 0, idle_sum = 0;
	double run = 0;
	size_t n = 0;
	int waiting = 0;

	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < o->nnodes; i++)
		capacity += o->nodes[i].gpus;
	for (size_t k = 0; k < o->ngangs; k++) {
		const struct sim_gang *g = &o->gangs[k];
		int64_t gpus = (int64_t)g->pods * g->gpus;
		int64_t end = r->end_s[k] != SIM_NO_TIME ? r->end_s[k] : r->now_s;

		first = g->at_s < first ? g->at_s : first;
		e[n++] = (struct event){g->at_s, +1, 0};
		if (r->start_s[k] == SIM_NO_TIME) {
			last = r->now_s > last ? r->now_s : last;
			continue;
		}
		e[n++] = (struct event){r->start_s[k], -1, gpus};
		e[n++] = (struct event){end, 0, -gpus};
		run += (double)gpus * (double)(end - r->start_s[k]);
		last = end > last ? end : last;
	}
	qsort(e, n, sizeof(*e), by_time);
	for (size_t i = 0; i < n; i++) {
		int64_t dt = i + 1 < n ? e[i + 1].t - e[i].t : 0;

		waiting += e[i].waiting;
		used += e[i].gpus;
		if (waiting > 0 && dt > 0) {
			out->waiting_s += dt;
			idle_sum += (capacity - used) * dt;
		}
	}
	free(e);
	out->makespan_s = o->ngangs && last > first ? last - first : 0;
	out->utilisation =
	    out->makespan_s && capacity ? run / ((double)capacity * (double)out->makespan_s) : 0;
	out->stranded_gpus = out->waiting_s ? (double)idle_sum / (double)out->waiting_s : 0;
	return 0;
}

int sim_report(const struct sim_options *o, const struct sim_result *r, struct sim_report *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = queues(o, r, out)) < 0 || (rc = usage(o, r, out)) < 0)
		sim_report_free(out);
	return rc;
}

void sim_report_free(struct sim_report *rep)
{
	free(rep->queues);
	memset(rep, 0, sizeof(*rep));
}
