/*
 * Time in the planner: runtimes, reservations, backfill (plan.h).
 *
 * A pod's runtime is its activeDeadlineSeconds, else the annotation
 * muster.dev/expected-runtime on the pod or its PodGroup, else its queue's
 * defaultRuntime; running work ends at its start plus that (work past its
 * estimate is taken to end any moment now).
 *
 * Reservation (EASY backfill, as Slurm's and Maui's): the first gangs of the
 * order (backfill.reservations of them) that do not fit get the nodes where
 * they would start as running work ends. The start is found by a binary
 * search over the timeline of ends: place the gang on a scratch copy of the
 * node table with the first m ends given back, for the smallest m that
 * fits. Each reservation then records, per node it uses, what is left there
 * at its start ("extra").
 *
 * Backfill: a later gang whose own end comes after a reservation's start
 * (or is unknown) may use of a reserved node only min(free now, extra), so
 * it can never be in the way when the reservation starts; one that ends
 * before the start may use what is free now. A later reservation is
 * searched with the earlier ones holding their nodes from now until they
 * end: it may start later than it could, never earlier.
 *
 * Cost: the timeline is built and sorted once per cycle that reserves
 * (O(P log P)); a reservation costs O(log P) placements on a copy of the
 * table; a later gang pays O(reserved nodes x resources) to see the
 * reservations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/intern.h"
#include "policy/plan_internal.h"

/* ---- runtimes -------------------------------------------------------- */

/* Seconds in an annotation value ("600", "10m", "1h30m"), or PLAN_NEVER. */
static int64_t parse_runtime(const struct plan_run *r, uint32_t value)
{
	const char *s = plan__str(r, value);
	int64_t ms;

	if (units_duration_parse(s, strlen(s), &ms) < 0 || ms <= 0)
		return PLAN_NEVER;
	return (ms + 999) / 1000;
}

int64_t plan__pod_runtime(const struct plan_run *r, const struct kubeapi_pod *pod,
                          const struct plan_gang *g)
{
	const struct config_queue *q;
	uint32_t v = 0;

	if (pod->spec && pod->spec->active_deadline_s > 0)
		return pod->spec->active_deadline_s;
	if (r->runtime_key) {
		v = kubeapi_labels_get(pod->muster, r->runtime_key);
		if (!v && g && g->group)
			v = kubeapi_labels_get(g->group->muster, r->runtime_key);
	}
	if (v)
		return parse_runtime(r, v);
	if (g && g->queue != QUEUE_NONE && (q = queue_set_queue(r->in->qs, g->queue)) &&
	    q->default_runtime_ms > 0)
		return (q->default_runtime_ms + 999) / 1000;
	return PLAN_NEVER;
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
int64_t plan__runtime(const struct plan_run *r, struct plan_gang *g)
{
	int64_t runtime = 0;

	if (g->runtime_s)
		return g->runtime_s;
	if (!g->npending)
		for (uint32_t b = g->bound_first; b; b = r->bound[b - 1].next)
			runtime = longer(runtime, plan__pod_runtime(r, r->bound[b - 1].pod, g));
	for (uint32_t m = 0; m < g->npending; m++)
		runtime = longer(runtime, plan__pod_runtime(r, g->pending[m], g));
	return g->runtime_s = runtime ? runtime : PLAN_NEVER;
}

/* now + runtime, PLAN_NEVER absorbing. */
static int64_t end_of(const struct plan_run *r, int64_t runtime_s)
{
	return runtime_s == PLAN_NEVER || runtime_s > PLAN_NEVER - r->in->now_s
	           ? PLAN_NEVER
	           : r->in->now_s + runtime_s;
}

/* ---- the timeline ---------------------------------------------------- */

static int by_end(const void *a, const void *b)
{
	const struct plan_ends *x = a, *y = b;

	return (x->end_s > y->end_s) - (x->end_s < y->end_s);
}

static int add_end(struct plan_run *r, size_t *cap, int64_t end_s, uint32_t node,
                   const struct kubeapi_podspec *spec)
{
	if (arena_grow(&r->p->arena, &r->bf.ends, r->bf.nends, cap, sizeof(*r->bf.ends), 1024) < 0)
		return -ENOMEM;
	if (end_s < r->in->now_s)
		end_s = r->in->now_s; /* past its estimate: any moment now */
	r->bf.ends[r->bf.nends++] = (struct plan_ends){end_s, node, spec};
	return 0;
}

/* Every bound pod on a known node, and every member admitted this cycle,
 * into the timeline (known end) or the forever list. */
static int build_ends(struct plan_run *r)
{
	size_t cap = 0;
	int rc;

	r->bf.forever = arena_alloc(&r->p->arena, (r->nbound + 1) * sizeof(*r->bf.forever));
	if (!r->bf.forever)
		return -ENOMEM;
	for (size_t k = 0; k < r->nbound; k++) {
		struct plan_bound *b = &r->bound[k];
		const struct plan_gang *g = b->gang == UINT32_MAX ? NULL : &r->p->gangs[b->gang];
		int64_t run = plan__pod_runtime(r, b->pod, g);
		int64_t start = plan__pod_start(b->pod);

		if (run == PLAN_NEVER)
			r->bf.forever[r->bf.nforever++] = b;
		else if ((rc = add_end(r, &cap, start + run, b->node, b->pod->spec)) < 0)
			return rc;
	}
	for (size_t k = 0; k < r->p->nbinds; k++) {
		const struct plan_bind *b = &r->p->binds[k];
		long i = policy_nodes_find(&r->p->nodes, b->node);
		int64_t end = end_of(r, plan__runtime(r, &r->p->gangs[b->gang]));

		/* Admitted this cycle without a runtime: they stay in the
		 * table copy for good, which is what forever means. */
		if (i >= 0 && end != PLAN_NEVER &&
		    (rc = add_end(r, &cap, end, (uint32_t)i, b->pod->spec)) < 0)
			return rc;
	}
	if (r->bf.nends)
		qsort(r->bf.ends, r->bf.nends, sizeof(*r->bf.ends), by_end);
	r->bf.ends_built = 1;
	return 0;
}

/* ---- reservations ---------------------------------------------------- */

/* The timeline one search walks: running work, then the earlier
 * reservations ending, merged by time. */
struct search {
	struct policy_nodes s; /* the scratch table */
	struct plan_ends *ev;
	size_t nev, at; /* events [0, at) are applied to s */
	const struct kubeapi_podspec **specs;
	size_t n;
	uint32_t *out;
};

static int merge_events(struct plan_run *r, struct search *x)
{
	size_t extra = 0, i = 0, j = 0, k = 0;
	struct plan_ends *mine;

	for (size_t v = 0; v < r->bf.nresv; v++)
		if (r->bf.resv[v].end_s != PLAN_NEVER)
			extra += r->bf.resv[v].nmembers;
	x->ev = arena_alloc(&r->p->arena, (r->bf.nends + extra + 1) * sizeof(*x->ev));
	mine = arena_alloc(&r->p->arena, (extra + 1) * sizeof(*mine));
	if (!x->ev || !mine)
		return -ENOMEM;
	for (size_t v = 0; v < r->bf.nresv; v++)
		for (uint32_t m = 0;
		     r->bf.resv[v].end_s != PLAN_NEVER && m < r->bf.resv[v].nmembers; m++)
			mine[k++] = (struct plan_ends){r->bf.resv[v].end_s, r->bf.resv[v].at[m],
			                               r->bf.resv[v].specs[m]};
	qsort(mine, k, sizeof(*mine), by_end);
	while (i < r->bf.nends || j < k)
		x->ev[x->nev++] =
		    j >= k || (i < r->bf.nends && r->bf.ends[i].end_s <= mine[j].end_s)
		        ? r->bf.ends[i++]
		        : mine[j++];
	return 0;
}

/* Apply or take back events until exactly [0, m) are applied. */
static void seek(struct search *x, size_t m)
{
	for (; x->at < m; x->at++)
		policy_nodes_use(&x->s, x->ev[x->at].node, x->ev[x->at].spec, +1);
	for (; x->at > m; x->at--)
		policy_nodes_use(&x->s, x->ev[x->at - 1].node, x->ev[x->at - 1].spec, -1);
}

/* Does the gang fit the scratch table now? keep: leave it placed. */
static int fits(struct plan_run *r, struct search *x, bool keep)
{
	struct policy_why why;
	int rc = policy_place(&x->s, &r->fits, &r->p->arena, x->specs, x->n, x->out, &why);

	r->p->stats.reserve_tries++;
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		return 0;
	for (size_t k = 0; !keep && k < x->n; k++)
		policy_nodes_use(&x->s, x->out[k], x->specs[k], +1);
	return 1;
}

/* The scratch table: the live one, the earlier reservations holding
 * their nodes from now on. */
static int search_init(struct plan_run *r, struct search *x, const struct kubeapi_pod *const *pods,
                       size_t n)
{
	int rc;

	memset(x, 0, sizeof(*x));
	if (!r->bf.ends_built && (rc = build_ends(r)) < 0)
		return rc;
	if ((rc = policy_nodes_copy(&x->s, &r->p->nodes, &r->p->arena)) < 0 ||
	    (rc = merge_events(r, x)) < 0)
		return rc;
	for (size_t v = 0; v < r->bf.nresv; v++)
		for (uint32_t m = 0; m < r->bf.resv[v].nmembers; m++)
			policy_nodes_use(&x->s, r->bf.resv[v].at[m], r->bf.resv[v].specs[m], -1);
	x->n = n;
	x->specs = plan__specs(r, pods, n);
	x->out = arena_alloc(&r->p->arena, n * sizeof(*x->out));
	return x->specs && x->out ? 0 : -ENOMEM;
}

/* The smallest prefix of the timeline after which the gang fits, placed
 * in x->s: its start time, or PLAN_NEVER when it fits only once work
 * without a runtime has ended too; -ENOSPC when not even then. */
static int64_t search_start(struct plan_run *r, struct search *x, int *err)
{
	size_t lo = 0, hi = x->nev;
	int rc;

	seek(x, hi);
	if ((rc = fits(r, x, false)) <= 0) {
		/* Not even when all timed work ends: give back the rest too. */
		for (size_t k = 0; rc == 0 && k < r->bf.nforever; k++)
			policy_nodes_use(&x->s, r->bf.forever[k]->node, r->bf.forever[k]->pod->spec,
			                 +1);
		if (rc == 0 && (rc = fits(r, x, true)) == 1)
			return PLAN_NEVER;
		*err = rc < 0 ? rc : -ENOSPC;
		return 0;
	}
	/* fits(hi); find the smallest such prefix (lo does not fit: the live
	 * table already said so). */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		seek(x, mid);
		if ((rc = fits(r, x, false)) < 0) {
			*err = rc;
			return 0;
		}
		if (rc)
			hi = mid;
		else
			lo = mid;
	}
	/* Everything that ends at that moment has ended: the placement then
	 * sees all the room of that moment, and need not take what is free
	 * now and could be backfilled. */
	while (hi > 0 && hi < x->nev && x->ev[hi].end_s == x->ev[hi - 1].end_s)
		hi++;
	seek(x, hi);
	if ((rc = fits(r, x, true)) != 1) {
		*err = rc < 0 ? rc : -ENOSPC;
		return 0;
	}
	return hi ? x->ev[hi - 1].end_s : r->in->now_s;
}

/* Record the reservation placed in x->s: its distinct nodes and what is
 * left on each at the start. */
static int install(struct plan_run *r, struct plan_gang *g, struct search *x, int64_t start)
{
	struct plan_resv *v = &r->bf.resv[r->bf.nresv];
	unsigned nres = x->s.nres;
	size_t need;

	memset(v, 0, sizeof(*v));
	v->node = arena_alloc(&r->p->arena, x->n * sizeof(*v->node));
	v->extra = arena_alloc(&r->p->arena, x->n * nres * sizeof(*v->extra));
	if (!v->node || !v->extra)
		return -ENOMEM;
	for (size_t k = 0; k < x->n; k++) {
		uint32_t j = 0;

		while (j < v->n && v->node[j] != x->out[k])
			j++;
		if (j == v->n) {
			v->node[v->n++] = x->out[k];
			memcpy(&v->extra[(size_t)j * nres], &x->s.free[(size_t)x->out[k] * nres],
			       nres * sizeof(*v->extra));
		}
	}
	v->gang = (uint32_t)(g - r->p->gangs);
	v->start_s = start;
	v->end_s = start == PLAN_NEVER || plan__runtime(r, g) == PLAN_NEVER ? PLAN_NEVER
	                                                                    : start + g->runtime_s;
	v->nmembers = (uint32_t)x->n;
	v->specs = x->specs;
	v->at = x->out;
	/* Room to lower every reserved node's every resource once. */
	need = 0;
	for (size_t k = 0; k <= r->bf.nresv; k++)
		need += (size_t)r->bf.resv[k].n * nres;
	if (need > r->bf.cap_undo) {
		if (!(r->bf.undo = arena_alloc(&r->p->arena, need * sizeof(*r->bf.undo))))
			return -ENOMEM;
		r->bf.cap_undo = need;
	}
	r->bf.nresv++;
	return 0;
}

static void append_start(struct plan_run *r, struct plan_gang *g, const struct plan_resv *v)
{
	char buf[1024];

	g->message =
	    plan__printf(r, "%s", plan_words_start(g->message, v->start_s, v->n, buf, sizeof(buf)));
}

int plan__reserve(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *const *pods,
                  size_t n)
{
	struct search x;
	int64_t start;
	int rc, err = 0;

	if (r->bf.nresv >= (size_t)r->cfg->backfill.reservations || r->quota_failed ||
	    g->state != PLAN_WAITING)
		return 0;
	if ((rc = search_init(r, &x, pods, n)) < 0)
		return rc;
	start = search_start(r, &x, &err);
	if (err)
		return err == -ENOSPC ? 0 : err; /* never fits: holds nothing */
	if ((rc = install(r, g, &x, start)) < 0)
		return rc;
	g->reserved = 1;
	g->expected_start_s = start;
	r->p->stats.reservations++;
	append_start(r, g, &r->bf.resv[r->bf.nresv - 1]);
	return 0;
}

/* ---- backfill -------------------------------------------------------- */

/* Must a gang ending at end_s keep out of v's room? */
static bool kept_out(const struct plan_resv *v, int64_t end_s)
{
	return v->start_s == PLAN_NEVER || end_s == PLAN_NEVER || end_s > v->start_s;
}

/* Lower each reserved node to what the gang may use of it. */
static size_t lower(struct plan_run *r, int64_t end_s)
{
	struct policy_nodes *t = &r->p->nodes;
	size_t nu = 0;

	for (size_t v = 0; v < r->bf.nresv; v++) {
		const struct plan_resv *rv = &r->bf.resv[v];

		if (!kept_out(rv, end_s))
			continue;
		for (uint32_t j = 0; j < rv->n; j++)
			for (unsigned res = 0; res < t->nres; res++) {
				int64_t f = t->free[(size_t)rv->node[j] * t->nres + res];
				int64_t e = rv->extra[(size_t)j * t->nres + res];

				if (f <= e)
					continue;
				policy_nodes_adjust(t, rv->node[j], res, e - f);
				r->bf.undo[nu++] = (struct plan_undo){rv->node[j], res, f - e};
			}
	}
	return nu;
}

/* A placed member on a reserved node uses that node's extra. */
static void take_extra(struct plan_run *r, int64_t end_s, uint32_t node,
                       const struct kubeapi_podspec *spec)
{
	const struct kubeapi_res *req = kubeapi_podspec_requests(spec);
	unsigned nres = r->p->nodes.nres;

	for (size_t v = 0; v < r->bf.nresv; v++) {
		struct plan_resv *rv = &r->bf.resv[v];

		if (!kept_out(rv, end_s))
			continue;
		for (uint32_t j = 0; j < rv->n; j++) {
			int64_t *e = &rv->extra[(size_t)j * nres];

			if (rv->node[j] != node)
				continue;
			for (unsigned k = 0; k < spec->nrequests; k++)
				if (req[k].res < nres)
					e[req[k].res] -= req[k].amount;
			e[KUBEAPI_RES_PODS] -= 1;
		}
	}
}

int plan__backfill_place(struct plan_run *r, struct plan_gang *g,
                         const struct kubeapi_podspec *const *specs, size_t n, uint32_t *out,
                         struct policy_why *why)
{
	struct policy_nodes *t = &r->p->nodes;
	int64_t end_s;
	size_t nu;
	int rc;

	if (!r->bf.nresv)
		return policy_place(t, &r->fits, &r->p->arena, specs, n, out, why);
	end_s = end_of(r, plan__runtime(r, g));
	nu = lower(r, end_s);
	rc = policy_place(t, &r->fits, &r->p->arena, specs, n, out, why);
	while (nu--)
		policy_nodes_adjust(t, r->bf.undo[nu].node, r->bf.undo[nu].res,
		                    r->bf.undo[nu].delta);
	if (rc < 0)
		return rc;
	for (size_t k = 0; k < n; k++)
		take_extra(r, end_s, out[k], specs[k]);
	r->p->stats.backfilled++;
	return 0;
}
