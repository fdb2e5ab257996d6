/*
 * Preemption and reclaim (plan.h).
 *
 * A gang that does not fit may evict running gangs, whole, when its queue
 * allows it:
 *   withinQueue          lower-priority gangs of its own queue (or, with
 *                        LowerOrNewerEqualPriority, also equal-priority
 *                        gangs submitted after it);
 *   reclaimWithinCohort  gangs of other queues of its cohort that borrow,
 *                        while its own queue stays within its nominal
 *                        quota (LowerPriority or Any).
 * Never a victim: a gang of a queue with preemption.preemptible false, a
 * gang labelled or annotated muster.dev/preemptible=false, one younger
 * than its queue's minRuntime, one already ending, one whose eviction a
 * PodDisruptionBudget would refuse (or lately refused).
 *
 * Candidates are ordered as Kueue orders them: other queues' gangs first,
 * from the queue furthest above its nominal; then lowest priority; then
 * the most recently started. The search is topology-aware: from the
 * finest level to the whole cluster, in each domain that holds candidates
 * (and enough GPUs with them), candidates there are evicted in order until
 * the gang fits; then each is given back, most valuable first, if the gang
 * still fits without it, so the set is minimal for that domain. The first
 * level with an answer wins, and in it the domain with the fewest victims,
 * then the lowest highest priority among them.
 *
 * The room is then held (plan.keep.holds): each cycle, before any other gang,
 * the preemptor is placed as if its victims were gone, and bound once they
 * are. A hold ends when the preemptor is bound, its victims fail to end
 * within PLAN_HOLD_TIMEOUT_S, or an eviction is refused.
 *
 * Cost: O(running gangs) to find candidates, then at most
 * PLAN_PREEMPT_CHECKS placements per preemptor and
 * PLAN_PREEMPTORS_PER_CYCLE preemptors per cycle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "policy/plan_internal.h"

/* ---- the search ------------------------------------------------------ */

/* Take victim v's pods off (sign +1) or back onto (-1) their nodes, and
 * its usage out of (+1) or back into (-1) its queue. */
static void release(struct plan_run *r, struct plan_gang *v, int sign)
{
	for (uint32_t b = v->bound_first; b; b = r->bound[b - 1].next) {
		const struct plan_bound *x = &r->bound[b - 1];
		int64_t req[QUEUE_MAX_SLOTS] = {0};

		policy_nodes_use(&r->p->nodes, x->node, x->pod->spec, sign);
		plan__request(r, req, &x->pod, 1);
		queue_tree_charge(r->tree, v->queue, req, -sign);
	}
}

struct attempt {
	struct plan_gang *g;
	const struct kubeapi_podspec **specs;
	size_t n;
	uint32_t *out;
	const int64_t *req;
	size_t checks;
};

/* Does the gang fit (quota and nodes) as things are now? */
static int fits_now(struct plan_run *r, struct attempt *a)
{
	struct policy_why why;
	int rc;

	if (a->checks >= PLAN_PREEMPT_CHECKS ||
	    r->pre.preempt_checks >= PLAN_PREEMPT_CHECKS_PER_CYCLE)
		return -EAGAIN; /* out of budget: no answer, not "no" */
	a->checks++;
	r->pre.preempt_checks++;
	r->p->stats.preempt_tries++;
	if (!queue_tree_fits(r->tree, a->g->queue, a->req).fits)
		return 0;
	rc = policy_place(&r->p->nodes, &r->fits, &r->p->arena, a->specs, a->n, a->out, &why);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		return 0;
	for (size_t k = 0; k < a->n; k++)
		policy_nodes_use(&r->p->nodes, a->out[k], a->specs[k], +1);
	return 1;
}

/* Victim v's usage out of (+1) or back into (-1) its queue only. */
static void uncharge(struct plan_run *r, struct plan_gang *v, int sign)
{
	for (uint32_t b = v->bound_first; b; b = r->bound[b - 1].next) {
		int64_t req[QUEUE_MAX_SLOTS];

		plan__request(r, req, &r->bound[b - 1].pod, 1);
		queue_tree_charge(r->tree, v->queue, req, -sign);
	}
}

/* The candidates of v[0..n) that may go together, in order, into f:
 * reclaim takes from another queue only while it still borrows, counting
 * the ones before it as gone. Returns how many. */
static size_t still_borrowing(struct plan_run *r, struct attempt *a, const struct plan_cand *v,
                              size_t n, struct plan_cand *f)
{
	size_t m = 0;

	for (size_t k = 0; k < n; k++) {
		struct plan_gang *x = &r->p->gangs[v[k].gang];

		if (x->queue != a->g->queue && plan__over_nominal(r, x->queue, a->req) <= 0)
			continue;
		uncharge(r, x, +1);
		f[m++] = v[k];
	}
	for (size_t k = 0; k < m; k++)
		uncharge(r, &r->p->gangs[f[k].gang], -1);
	return m;
}

/* Release (on = 1) or put back (on = 0) f[j], keeping rel[j] = whether
 * it is released now. */
static void set_released(struct plan_run *r, const struct plan_cand *f, uint8_t *rel, size_t j,
                         uint8_t on)
{
	if (rel[j] == on)
		return;
	release(r, &r->p->gangs[f[j].gang], on ? +1 : -1);
	rel[j] = on;
}

/* Exactly f[0..to) released. */
static void release_prefix(struct plan_run *r, const struct plan_cand *f, uint8_t *rel, size_t m,
                           size_t to)
{
	for (size_t j = 0; j < m; j++)
		set_released(r, f, rel, j, j < to);
}

/* The shortest prefix of f (found by binary search: releasing more only
 * frees more) after which the gang fits, then each of it given back, most
 * valuable first, when the gang still fits without it. rel[k] = 1 for the
 * victims left; returns their count, 0 when the gang never fits or the
 * search ran out of budget (evicting on a guess would over-evict). The
 * table and usage are as before on return. */
static int try_set(struct plan_run *r, struct attempt *a, const struct plan_cand *f, size_t m,
                   uint8_t *rel)
{
	size_t lo = 0, hi = m, taken = 0;
	int rc;

	memset(rel, 0, m);
	release_prefix(r, f, rel, m, m);
	if ((rc = fits_now(r, a)) <= 0)
		goto out;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		release_prefix(r, f, rel, m, mid);
		if ((rc = fits_now(r, a)) < 0)
			goto out;
		if (rc)
			hi = mid;
		else
			lo = mid;
	}
	release_prefix(r, f, rel, m, hi);
	for (size_t j = hi; j-- > 0;) {
		set_released(r, f, rel, j, 0);
		if ((rc = fits_now(r, a)) < 0)
			goto out;
		if (rc == 0)
			set_released(r, f, rel, j, 1);
	}
	for (size_t j = 0; j < m; j++)
		taken += rel[j];
	rc = (int)taken;
out:
	/* Put everything back; rel[] keeps the answer when there is one. */
	for (size_t j = 0; j < m; j++)
		if (rel[j])
			release(r, &r->p->gangs[f[j].gang], -1);
	if (rc <= 0)
		memset(rel, 0, m);
	return rc > 0 ? rc : rc == -EAGAIN ? 0 : rc;
}

/* The best victim set found so far: the fewest victims, then the lowest
 * highest priority among them, then the ones furthest ahead in the
 * candidate order (its most valuable member the least valuable). */
struct best {
	size_t count;
	int32_t top_priority;
	uint32_t last_pos;
	struct plan_cand *set;
};

static void consider(struct best *b, const struct plan_cand *v, size_t n, const uint8_t *keep,
                     size_t count)
{
	int32_t top = INT32_MIN;
	uint32_t last = 0;
	size_t m = 0;

	for (size_t k = 0; k < n; k++) {
		if (keep[k] && v[k].priority > top)
			top = v[k].priority;
		if (keep[k] && v[k].pos > last)
			last = v[k].pos;
	}
	if (b->count && (count > b->count ||
	                 (count == b->count && (top > b->top_priority ||
	                                        (top == b->top_priority && last >= b->last_pos)))))
		return;
	b->last_pos = last;
	for (size_t k = 0; k < n; k++)
		if (keep[k])
			b->set[m++] = v[k];
	b->count = m;
	b->top_priority = top;
}

/* A candidate with pods in a domain, and the GPUs they hold there. */
struct member {
	uint32_t domain, cand; /* cand: index into the candidate order */
	int64_t gpus;
};

static int by_domain(const void *a, const void *b)
{
	const struct member *x = a, *y = b;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	return (x->cand > y->cand) - (x->cand < y->cand);
}

/* Every (domain of level l, candidate) pair, by domain then candidate
 * order, one per pair: O(candidates' pods x log). */
static size_t members_of(struct plan_run *r, const struct plan_cand *c, size_t nc, unsigned l,
                         struct member *out)
{
	const struct policy_nodes *t = &r->p->nodes;
	size_t n = 0, w = 0;

	for (size_t k = 0; k < nc; k++)
		for (uint32_t b = r->p->gangs[c[k].gang].bound_first; b; b = r->bound[b - 1].next) {
			const struct plan_bound *x = &r->bound[b - 1];
			uint32_t d = t->domain[(size_t)x->node * t->nlevels + l];

			if (d != POLICY_NO_DOMAIN)
				out[n++] =
				    (struct member){d, (uint32_t)k, policy_spec_gpus(x->pod->spec)};
		}
	qsort(out, n, sizeof(*out), by_domain);
	for (size_t k = 0; k < n; k++) {
		if (w && out[w - 1].domain == out[k].domain && out[w - 1].cand == out[k].cand) {
			out[w - 1].gpus += out[k].gpus;
			continue;
		}
		out[w++] = out[k];
	}
	return w;
}

/* A domain's candidates, from members mb[0..n) of one domain, into sub;
 * with the domain's free GPUs, the GPUs it could have. */
static size_t domain_cands(struct plan_run *r, const struct plan_cand *c, unsigned l,
                           const struct member *mb, size_t n, struct plan_cand *sub, int64_t *gpus)
{
	*gpus = r->p->nodes.level[l].free_gpu[mb[0].domain];
	for (size_t k = 0; k < n; k++) {
		sub[k] = c[mb[k].cand];
		*gpus += mb[k].gpus;
	}
	return n;
}

/* Try one set of candidates; 1 when it gave an answer. */
static int try_cands(struct plan_run *r, struct attempt *a, const struct plan_cand *sub, size_t ns,
                     struct plan_cand *f, uint8_t *keep, struct best *b)
{
	size_t m = still_borrowing(r, a, sub, ns, f);
	int rc;

	if (!m || (rc = try_set(r, a, f, m, keep)) == 0)
		return 0;
	if (rc < 0)
		return rc;
	consider(b, f, m, keep, (size_t)rc);
	return 1;
}

static int search(struct plan_run *r, struct attempt *a, const struct plan_cand *c, size_t nc,
                  struct best *b)
{
	const struct policy_nodes *t = &r->p->nodes;
	size_t npods = 0;
	struct plan_cand *sub, *f;
	struct member *mb;
	uint8_t *keep;
	int64_t want = 0;
	int rc;

	for (size_t k = 0; k < nc; k++)
		npods += r->p->gangs[c[k].gang].bound;
	sub = arena_alloc(&r->p->arena, (nc + 1) * sizeof(*sub));
	f = arena_alloc(&r->p->arena, (nc + 1) * sizeof(*f));
	keep = arena_alloc(&r->p->arena, nc + 1);
	mb = arena_alloc(&r->p->arena, (npods + 1) * sizeof(*mb));
	if (!sub || !f || !keep || !mb)
		return -ENOMEM;
	for (size_t k = 0; k < a->n; k++)
		want += policy_spec_gpus(a->specs[k]);
	for (unsigned l = t->nlevels; l-- > 0 && !b->count;) {
		size_t n = members_of(r, c, nc, l, mb), answers = 0;

		for (size_t i = 0, j;
		     i < n && answers < PLAN_PREEMPT_ANSWERS && a->checks < PLAN_PREEMPT_CHECKS;
		     i = j) {
			int64_t gpus;
			size_t ns;

			for (j = i; j < n && mb[j].domain == mb[i].domain; j++)
				;
			ns = domain_cands(r, c, l, &mb[i], j - i, sub, &gpus);
			if (gpus < want)
				continue;
			if ((rc = try_cands(r, a, sub, ns, f, keep, b)) < 0)
				return rc;
			answers += (size_t)rc;
		}
	}
	if (b->count)
		return 0;
	/* No single domain: the whole cluster, as placement itself falls
	 * back to. */
	rc = try_cands(r, a, c, nc, f, keep, b);
	return rc < 0 ? rc : 0;
}

/* ---- acting on it ---------------------------------------------------- */

static int add_eviction(struct plan_run *r, const struct plan_bound *x, uint32_t victim,
                        uint32_t preemptor)
{
	struct plan *p = r->p;

	if (x->pod->deleting)
		return 0; /* already on its way out */
	if (arena_grow(&p->arena, &p->evictions, p->nevictions, &r->cap_evictions,
	               sizeof(*p->evictions), 64) < 0)
		return -ENOMEM;
	p->evictions[p->nevictions++] =
	    (struct plan_evict){x->pod, p->nodes.node[x->node]->name, victim, preemptor};
	return 0;
}

/* Victim v makes way for g: every member still running asked to leave
 * (it keeps its room in the table until it is gone). */
static int evict(struct plan_run *r, struct plan_gang *v, struct plan_gang *g)
{
	uint32_t vi = (uint32_t)(v - r->p->gangs), gi = (uint32_t)(g - r->p->gangs);
	int rc;

	v->preempted_by = gi + 1;
	for (uint32_t b = v->bound_first; b; b = r->bound[b - 1].next)
		if ((rc = add_eviction(r, &r->bound[b - 1], vi, gi)) < 0)
			return rc;
	return 0;
}

static int hold_new(struct plan_run *r, struct plan_gang *g, const struct best *b)
{
	struct plan_hold *h = malloc(sizeof(*h) + b->count * sizeof(h->victim[0]));
	int rc;

	if (!h)
		return -ENOMEM;
	h->since_s = r->in->now_s;
	h->nvictims = (uint32_t)b->count;
	for (size_t k = 0; k < b->count; k++)
		h->victim[k] = r->p->gangs[b->set[k].gang].key;
	free(idmap_del(&r->p->keep.holds, g->key));
	if ((rc = idmap_put(&r->p->keep.holds, g->key, h)) < 0)
		free(h);
	return rc;
}

static const char *victim_names(struct plan_run *r, const struct best *b)
{
	char buf[512];
	size_t len = 0;

	buf[0] = 0;
	for (size_t k = 0; k < b->count && len < sizeof(buf); k++) {
		const struct plan_gang *v = &r->p->gangs[b->set[k].gang];

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s/%s", k ? ", " : "",
		                        plan__str(r, v->ns), plan__str(r, v->name));
	}
	return plan__printf(r, "%s", buf);
}

static bool may_preempt(const struct plan_run *r, const struct plan_gang *g,
                        const struct kubeapi_pod *const *pods, size_t n)
{
	const struct config_queue *q =
	    g->queue == QUEUE_NONE ? NULL : queue_set_queue(r->in->qs, g->queue);

	if (!q || (q->preemption.within_queue == CONFIG_WITHIN_QUEUE_NEVER &&
	           q->preemption.reclaim_within_cohort == CONFIG_RECLAIM_NEVER))
		return false;
	for (size_t k = 0; k < n; k++)
		if (pods[k]->spec->preempt_never)
			return false;
	return true;
}

int plan__preempt(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *const *pods,
                  size_t n)
{
	int64_t req[QUEUE_MAX_SLOTS];
	struct attempt a = {g, NULL, n, NULL, req, 0};
	struct plan_facts f = {.why = PLAN_WHY_PREEMPTING};
	struct best b = {0};
	struct plan_cand *c;
	size_t nc;
	int rc;

	if (!may_preempt(r, g, pods, n) || r->pre.preemptors >= PLAN_PREEMPTORS_PER_CYCLE)
		return 0;
	plan__request(r, req, pods, n);
	if ((rc = plan__candidates(r, g, req, &c, &nc)) < 0 || nc == 0)
		return rc;
	r->pre.preemptors++;
	a.specs = plan__specs(r, pods, n);
	a.out = arena_alloc(&r->p->arena, n * sizeof(*a.out));
	b.set = arena_alloc(&r->p->arena, nc * sizeof(*b.set));
	if (!a.specs || !a.out || !b.set)
		return -ENOMEM;
	if ((rc = search(r, &a, c, nc, &b)) < 0 || b.count == 0)
		return rc;
	for (size_t k = 0; k < b.count; k++)
		release(r, &r->p->gangs[b.set[k].gang], +1);
	r->pre.preempt_checks--; /* the placement of an answer is not a search */
	rc = fits_now(r, &(struct attempt){g, a.specs, n, a.out, req, 0});
	if (rc == 1) {
		/* The room is the preemptor's from now on. */
		for (size_t k = 0; k < n; k++)
			policy_nodes_use(&r->p->nodes, a.out[k], a.specs[k], -1);
		queue_tree_charge(r->tree, g->queue, req, +1);
	}
	/* The victims run until they are gone: what they free beyond the
	 * preemptor's room is nobody's until then (a pod bound there now
	 * would find the node still full). */
	for (size_t k = 0; k < b.count; k++)
		release(r, &r->p->gangs[b.set[k].gang], -1);
	if (rc != 1)
		return rc < 0 && rc != -EAGAIN ? rc : 0;
	for (size_t k = 0; k < b.count; k++)
		if ((rc = evict(r, &r->p->gangs[b.set[k].gang], g)) < 0)
			return rc;
	if ((rc = hold_new(r, g, &b)) < 0)
		return rc;
	r->p->stats.preemptions++;
	r->p->stats.victims += b.count;
	g->state = PLAN_PREEMPTING;
	g->block.why = PLAN_WHY_PREEMPTING;
	f.victims = victim_names(r, &b);
	f.nvictims = b.count;
	plan__say(r, g, &f);
	return 1;
}

/* ---- holds ----------------------------------------------------------- */

/* One hold's turn, before everyone else's: 1 kept, 0 to drop, <0 error.
 * The victims still there are taken off the table (their pods end soon),
 * the preemptor is placed in the room, and bound once nobody is left. */
static int hold_turn(struct plan_run *r, struct plan_gang *g, const struct plan_hold *h)
{
	struct plan_facts f = {.why = PLAN_WHY_PREEMPTING};
	uint32_t have = g->bound + g->succeeded;
	uint32_t need = have < g->min_member ? g->min_member - have : g->npending ? 1 : 0;
	struct plan_gang **gone = arena_alloc(&r->p->arena, (h->nvictims + 1) * sizeof(*gone));
	uint32_t left = 0, ngone = 0, *out = arena_alloc(&r->p->arena, (need + 1) * sizeof(*out));
	int rc;

	if (!gone || !out)
		return -ENOMEM;
	if (g->state != PLAN_RUNNING || !need || need > g->npending ||
	    r->in->now_s - h->since_s > PLAN_HOLD_TIMEOUT_S ||
	    (r->in->backoff && idmap_get(r->in->backoff, g->key)))
		return 0;
	for (uint32_t k = 0; k < h->nvictims; k++) {
		long vi = plan__gang_index(r, h->victim[k]);
		struct plan_gang *v = vi < 0 ? NULL : &r->p->gangs[vi];

		if (!v || !v->bound_first || v->preempted_by)
			continue;
		left += v->bound;
		release(r, v, +1);
		gone[ngone++] = v;
	}
	if ((rc = plan__place(r, g, g->pending, need, out)) <= 0) {
		while (ngone--) /* the room is gone: plan afresh */
			release(r, gone[ngone], -1);
		return rc;
	}
	for (uint32_t k = 0; k < ngone; k++) {
		/* Still running: their room beyond the preemptor's is nobody's
		 * yet. Asked again: the run layer sends each eviction once, and
		 * again only after one failed. */
		release(r, gone[k], -1);
		if ((rc = evict(r, gone[k], g)) < 0)
			return rc;
	}
	if (left == 0) {
		g->first_bind = (uint32_t)r->p->nbinds;
		if ((rc = plan__add_binds(r, g, g->pending, need, out)) < 0)
			return rc;
		g->nbind = need;
		g->state = PLAN_ADMITTED;
		g->message = NULL;
		r->p->stats.admitted_gangs++;
		return 0; /* done: the hold ends */
	}
	g->state = PLAN_PREEMPTING;
	g->block.why = PLAN_WHY_PREEMPTING;
	f.nvictims = h->nvictims;
	f.pods_left = left;
	plan__say(r, g, &f);
	return 1;
}

int plan__holds(struct plan_run *r)
{
	struct idmap *m = &r->p->keep.holds;
	const struct idmap_slot *e;
	uint64_t *keys;
	size_t n = 0;
	int rc;

	if (!m->n)
		return 0;
	if (!(keys = arena_alloc(&r->p->arena, m->n * sizeof(*keys))))
		return -ENOMEM;
	IDMAP_FOREACH(m, s, e)
		keys[n++] = e->key;
	for (size_t k = 0; k < n; k++) {
		long gi = plan__gang_index(r, keys[k]);

		struct plan_gang *g = gi < 0 ? NULL : &r->p->gangs[gi];

		rc = g ? hold_turn(r, g, idmap_get(m, keys[k])) : 0;
		if (rc < 0)
			return rc;
		if (rc > 0)
			continue;
		free(idmap_del(m, keys[k]));
		if (g && g->state == PLAN_WAITING) {
			/* Its normal turn comes in the order. */
			g->state = PLAN_RUNNING;
			g->message = NULL;
		}
	}
	return 0;
}
