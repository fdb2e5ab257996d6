/*
 * Time in the planner (plan.h): how long work runs, the timeline of ends
 * handed to backfill.h, and a waiting gang's reservation.
 *
 * A pod's runtime is its activeDeadlineSeconds, else the annotation
 * muster.dev/expected-runtime on the pod or its PodGroup, else its queue's
 * defaultRuntime; running work ends at its start plus that (work past its
 * estimate is taken to end any moment now).
 *
 * Cost: the timeline is built on the cycle's first reservation, once:
 * O(bound pods + binds) runtimes, then backfill.h's sort.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "policy/plan_internal.h"

/* ---- runtimes -------------------------------------------------------- */

/* Seconds in an annotation value ("600", "10m", "1h30m"), or PLAN_NEVER.
 * The timeline asks for every bound pod's, and pods mostly share a few
 * values: each is parsed once a cycle while it keeps its memo slot. */
static int64_t parse_runtime(struct plan_run *r, uint32_t value)
{
	struct plan_runtime_memo *m = &r->runtimes[value % PLAN_RUNTIME_MEMO];
	const char *s;
	int64_t ms;

	if (m->value == value)
		return m->s;
	s = plan__str(r, value);
	m->value = value;
	m->s =
	    units_duration_parse(s, strlen(s), &ms) < 0 || ms <= 0 ? PLAN_NEVER : (ms + 999) / 1000;
	return m->s;
}

/* The runtime of a pod of spec `spec` whose own annotation value is
 * `own` (0: none) in gang g (NULL: none). */
static int64_t runtime_of(struct plan_run *r, const struct kubeapi_podspec *spec, uint32_t own,
                          const struct plan_gang *g)
{
	const struct config_queue *q;

	if (spec && spec->active_deadline_s > 0)
		return spec->active_deadline_s;
	if (!own && g)
		own = g->group_runtime;
	if (own)
		return parse_runtime(r, own);
	if (g && g->queue != QUEUE_NONE && (q = queue_set_queue(r->in->qs, g->queue)) &&
	    q->default_runtime_ms > 0)
		return (q->default_runtime_ms + 999) / 1000;
	return PLAN_NEVER;
}

static int64_t pod_runtime(struct plan_run *r, const struct kubeapi_pod *pod,
                           const struct plan_gang *g)
{
	return runtime_of(r, pod->spec,
	                  r->runtime_key ? kubeapi_labels_get(pod->muster, r->runtime_key) : 0, g);
}

/* A bound pod's: its struct is read only when its record says it has an
 * annotation of its own (the timeline asks for every bound pod's). */
static int64_t bound_runtime(struct plan_run *r, const struct plan_bound *b,
                             const struct plan_gang *g)
{
	return b->runtime ? pod_runtime(r, b->pod, g) : runtime_of(r, b->spec, 0, g);
}

int64_t plan__pod_start(const struct kubeapi_pod *pod)
{
	return pod->started_s ? pod->started_s : pod->created_s;
}

/* The later of two runtimes, PLAN_NEVER absorbing. */
static int64_t longer(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Computed on first use: most gangs of a cycle are answered by the memo
 * before anything asks for their runtime. */
int64_t plan__runtime(struct plan_run *r, struct plan_gang *g)
{
	int64_t runtime = 0;

	if (g->runtime_s)
		return g->runtime_s;
	if (!g->npending)
		for (uint32_t b = g->bound_first; b; b = r->bound[b - 1].next)
			runtime = longer(runtime, bound_runtime(r, &r->bound[b - 1], g));
	else if (g->pending_spec && !g->pending_runtime)
		runtime = runtime_of(r, g->pending_spec, 0, g); /* every member's */
	else
		for (uint32_t m = 0; m < g->npending; m++)
			runtime = longer(runtime, pod_runtime(r, g->pending[m], g));
	return g->runtime_s = runtime ? runtime : PLAN_NEVER;
}

/* now + runtime, PLAN_NEVER absorbing. */
static int64_t end_of(const struct plan_run *r, int64_t runtime_s)
{
	return runtime_s == PLAN_NEVER || runtime_s > PLAN_NEVER - r->in->now_s
	           ? PLAN_NEVER
	           : r->in->now_s + runtime_s;
}

int64_t plan__end(struct plan_run *r, struct plan_gang *g)
{
	return end_of(r, plan__runtime(r, g));
}

/* ---- the timeline ---------------------------------------------------- */

/* Every bound pod on a known node, and every member admitted this cycle
 * with a runtime, into backfill's timeline. (Admitted without one, they
 * stay in the search's table copy for good, which is what no end means.) */
static int build_timeline(struct plan_run *r)
{
	int rc;

	for (size_t k = 0; k < r->nbound; k++) {
		const struct plan_bound *b = &r->bound[k];
		const struct plan_gang *g = b->gang == UINT32_MAX ? NULL : &r->p->gangs[b->gang];
		int64_t run = bound_runtime(r, b, g);
		int64_t end = run == PLAN_NEVER ? PLAN_NEVER : plan__pod_start(b->pod) + run;

		if ((rc = backfill_timeline_add(&r->bf, end, b->node, b->spec, b->held)) < 0)
			return rc;
	}
	for (size_t k = 0; k < r->p->nbinds; k++) {
		const struct plan_bind *b = &r->p->binds[k];
		long i = policy_nodes_find(&r->p->nodes, b->node);
		int64_t end = plan__end(r, &r->p->gangs[b->gang]);

		if (i >= 0 && end != PLAN_NEVER &&
		    (rc = backfill_timeline_add(&r->bf, end, (uint32_t)i, b->pod->spec, b->held)) <
		        0)
			return rc;
	}
	backfill_timeline_done(&r->bf);
	return 0;
}

/* ---- a gang's reservation -------------------------------------------- */

int plan__reserve(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *const *pods,
                  size_t n)
{
	const struct kubeapi_podspec **specs;
	const struct backfill_resv *v;
	char buf[1024];
	int rc;

	if (backfill_full(&r->bf) || r->quota_failed || g->state != PLAN_WAITING)
		return 0;
	if (!r->bf.timeline_done && (rc = build_timeline(r)) < 0)
		return rc;
	if (!(specs = plan__specs(r, g, pods, n)))
		return -ENOMEM;
	rc = backfill_reserve(&r->bf, (uint32_t)(g - r->p->gangs), &g->within, specs, n,
	                      plan__runtime(r, g), &v);
	if (rc <= 0)
		return rc; /* 0: never fits, holds nothing */
	g->reserved = 1;
	g->expected_start_s = v->start_s;
	g->message =
	    plan__strdup(r, plan_words_start(g->message, v->start_s, v->n, buf, sizeof(buf)));
	return 0;
}
