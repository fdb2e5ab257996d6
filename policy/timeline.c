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
#include "policy/table.h"

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
 * `own` (0: none) in gang g (NULL: none) of queue `queue` (QUEUE_NONE:
 * none; a gang's is g->queue). */
static int64_t runtime_in(struct plan_run *r, const struct kubeapi_podspec *spec, uint32_t own,
                          const struct plan_gang *g, int queue)
{
	const struct config_queue *q;

	if (spec && spec->active_deadline_s > 0)
		return spec->active_deadline_s;
	if (!own && g)
		own = g->group_runtime;
	if (own)
		return parse_runtime(r, own);
	if (queue != QUEUE_NONE && (q = queue_set_queue(r->in->qs, queue)) &&
	    q->default_runtime_ms > 0)
		return (q->default_runtime_ms + 999) / 1000;
	return PLAN_NEVER;
}

static int64_t runtime_of(struct plan_run *r, const struct kubeapi_podspec *spec, uint32_t own,
                          const struct plan_gang *g)
{
	return runtime_in(r, spec, own, g, g ? g->queue : QUEUE_NONE);
}

static uint32_t own_runtime(const struct plan_run *r, const struct kubeapi_pod *pod)
{
	return r->runtime_key ? kubeapi_labels_get(pod->muster, r->runtime_key) : 0;
}

static int64_t pod_runtime(struct plan_run *r, const struct kubeapi_pod *pod,
                           const struct plan_gang *g)
{
	return runtime_of(r, pod->spec, own_runtime(r, pod), g);
}

/* A bound pod's: its struct is read only when its record says it has an
 * annotation of its own (the timeline asks for every bound pod's). A
 * single pod of Muster's has no gang record where no queue may preempt
 * (view.c): its queue, kept beside it, gives the default. */
static int64_t bound_runtime(struct plan_run *r, const struct plan_bound *b,
                             const struct plan_gang *g)
{
	return runtime_in(r, b->spec, b->runtime ? own_runtime(r, b->pod) : 0, g,
	                  g ? g->queue : b->queue);
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

/* Whether bind b of this cycle has an end, and the node index it is on
 * (-1: none): what makes build_timeline() add it. */
static bool timed_bind(struct plan_run *r, const struct plan_bind *b, long *i)
{
	*i = policy_nodes_find(&r->p->nodes, b->node);
	return *i >= 0 && plan__end(r, &r->p->gangs[b->gang]) != PLAN_NEVER;
}

/* With check_state: ref, a copy of t with every end of the timeline
 * given back one by one, as backfill does without vacate(). */
static int vacate_ref(struct plan_run *r, const struct policy_nodes *t, struct policy_nodes *ref)
{
	struct backfill *b = &r->bf;
	int rc = backfill_forever(b);

	if (rc == 0)
		rc = policy_nodes_copy(ref, t, &r->p->arena);
	for (size_t k = 0; rc == 0 && k < b->nends + b->nforever; k++) {
		const struct backfill_end *e =
		    k < b->nends ? &b->ends[k] : &b->forever[k - b->nends];

		policy_nodes_count(ref, e->node, e->spec, e->held, +1);
	}
	if (rc == 0)
		policy_nodes_settle(ref);
	return rc;
}

/* backfill's vacate (backfill.h): the whole timeline given back to t at
 * once. It holds every bound pod the cycle counted (view.c: the kept
 * counts, then the assumed pods) and the members admitted before it was
 * built that have an end; what the first hold together is the base's
 * rows less the kept counts. O(nodes x resources + GPUs), sequential,
 * where giving back each running pod was a random row update apiece (a
 * tenth of a steady cycle at 100,000 nodes, for each reservation that
 * fits only once everything has ended). */
static int vacate(void *arg, struct policy_nodes *t)
{
	struct plan_run *r = arg;
	const struct policy_nodes *base = &r->keep->base.t, *kept = &r->keep->counted.t;
	struct policy_nodes ref;
	size_t nr = t->nres, ngpus;

	if (!r->keep->counted.valid || base->n != t->n || kept->n != t->n || base->nres != nr ||
	    kept->nres != nr || kept->gpu_first[kept->n] != t->gpu_first[t->n])
		return -EINVAL;
	if (r->in->check_state && vacate_ref(r, t, &ref) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		for (unsigned k = 0; k < nr; k++)
			t->free[i * nr + k] += base->free[i * nr + k] - kept->free[i * nr + k];
		t->free_cpu[i] = t->free[i * nr + KUBEAPI_RES_CPU];
		t->free_gpu[i] = t->free[i * nr + KUBEAPI_RES_GPU];
		if (t->gpu_first[i] != t->gpu_first[i + 1])
			t->room_stale[i] = 1;
	}
	policy__gpu_lists_stale(t);
	ngpus = t->gpu_first[t->n];
	for (size_t k = 0; k < ngpus; k++) { /* the kept counts are in t's: no underflow */
		t->gpu[k].used_num -= kept->gpu[k].used_num;
		t->gpu[k].used_mem -= kept->gpu[k].used_mem;
		t->gpu[k].used_core -= kept->gpu[k].used_core;
	}
	for (size_t k = 0; k < r->nassumed; k++)
		policy_nodes_count(t, r->assumed[k].node, r->assumed[k].spec, r->assumed[k].held,
		                   +1);
	for (size_t k = 0; k < r->timed_binds; k++) {
		const struct plan_bind *b = &r->p->binds[k];
		long i;

		if (timed_bind(r, b, &i))
			policy_nodes_count(t, (size_t)i, b->pod->spec, b->held, +1);
	}
	t->levels_stale = 1;
	policy_nodes_settle(t);
	if (r->in->check_state)
		r->p->stats.state_mismatches += policy_nodes_differ(&ref, t);
	return 0;
}

/* When bound pod b is expected to end, PLAN_NEVER without a runtime. */
static int64_t bound_end(struct plan_run *r, const struct plan_bound *b)
{
	const struct plan_gang *g = b->gang == UINT32_MAX ? NULL : &r->p->gangs[b->gang];
	int64_t run = bound_runtime(r, b, g);

	return run == PLAN_NEVER ? PLAN_NEVER : plan__pod_start(b->pod) + run;
}

/* How many bound pods ahead of build_timeline() a pod's start is asked
 * for: bound_end() reads it from the pod's struct, a cache miss apiece
 * at 100,000 nodes (800,000 pods; a gang's structs lie together, gangs
 * apart). */
#define TIMELINE_AHEAD 16

/* backfill's forever_fill (backfill.h): every bound pod on a known node
 * without an end, in the order the walk met them. Those the walk did not
 * list in may_end (ascending) have none (view.c); with check_state that
 * is held to bound_end(). O(bound pods), and not run in a cycle whose
 * searches all found their room among the timed ends or through
 * vacate(). */
static int fill_forever(void *arg, struct backfill *bf)
{
	struct plan_run *r = arg;
	int rc = backfill_timeline_room(bf, 0, r->nbound);

	for (size_t k = 0, j = 0; rc == 0 && k < r->nbound; k++) {
		const struct plan_bound *b = &r->bound[k];
		bool listed = j < r->nmay_end && r->may_end[j] == k;
		bool none = !listed || bound_end(r, b) == PLAN_NEVER;

		j += listed;
		if (!listed && r->in->check_state && bound_end(r, b) != PLAN_NEVER)
			r->p->stats.state_mismatches++;
		if (none)
			rc = backfill_timeline_add(bf, PLAN_NEVER, b->node, b->queue, b->spec,
			                           b->held);
	}
	return rc;
}

/* Every bound pod on a known node that has an end, and every member
 * admitted this cycle with a runtime, into backfill's timeline; the
 * bound pods without one on first need (fill_forever()). (Admitted
 * without one, they stay in the search's table copy for good, which is
 * what no end means.) Only the pods the walk listed as may_end are read:
 * in a cluster that gives no runtimes, none, where reading every bound
 * pod for its runtime was a thirteenth of a steady cycle at 20,000
 * nodes. */
static int build_timeline(struct plan_run *r)
{
	int rc = backfill_timeline_room(&r->bf, r->nmay_end + r->p->nbinds, 0);

	if (rc < 0)
		return rc;
	for (size_t k = 0; k < r->nmay_end; k++) {
		const struct plan_bound *b = &r->bound[r->may_end[k]];
		int64_t end;

		if (k + TIMELINE_AHEAD < r->nmay_end) {
			const struct kubeapi_pod *ahead =
			    r->bound[r->may_end[k + TIMELINE_AHEAD]].pod;

			__builtin_prefetch(&ahead->created_s);
			__builtin_prefetch(&ahead->started_s);
		}
		if ((end = bound_end(r, b)) != PLAN_NEVER &&
		    (rc = backfill_timeline_add(&r->bf, end, b->node, b->queue, b->spec, b->held)) <
		        0)
			return rc;
	}
	for (size_t k = 0; k < r->p->nbinds; k++) {
		const struct plan_bind *b = &r->p->binds[k];
		long i;

		if (timed_bind(r, b, &i) &&
		    (rc = backfill_timeline_add(&r->bf, plan__end(r, &r->p->gangs[b->gang]),
		                                (uint32_t)i, r->p->gangs[b->gang].queue,
		                                b->pod->spec, b->held)) < 0)
			return rc;
	}
	r->timed_binds = r->p->nbinds;
	r->bf.vacate = vacate;
	r->bf.forever_fill = fill_forever;
	r->bf.vacate_arg = r;
	backfill_timeline_done(&r->bf);
	return 0;
}

int plan__timeline(struct plan_run *r)
{
	return r->bf.timeline_done ? 0 : build_timeline(r);
}

int plan__publish_ends(struct plan_run *r)
{
	struct plan *p = r->p;

	p->ends = NULL;
	p->nends = 0;
	if (!r->in->ends || !r->nbound)
		return 0;
	if (!(p->ends = arena_alloc(&p->arena, r->nbound * sizeof(*p->ends))))
		return -ENOMEM;
	for (size_t k = 0; k < r->nbound; k++)
		p->ends[p->nends++] =
		    (struct plan_end){r->bound[k].pod, bound_end(r, &r->bound[k])};
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
	if ((rc = plan__timeline(r)) < 0)
		return rc;
	if (!(specs = plan__specs(r, g, pods, n)))
		return -ENOMEM;
	rc = backfill_reserve(&r->bf, (uint32_t)(g - r->p->gangs), &g->within, specs, n,
	                      plan__runtime(r, g), &v);
	if (rc <= 0)
		return rc; /* 0: never fits, holds nothing */
	g->reserved = 1;
	g->expected_start_s = v->start_s;
	plan__message(r, g);
	g->message =
	    plan__strdup(r, plan_words_start(g->message, v->start_s, v->n, buf, sizeof(buf)));
	return 0;
}
