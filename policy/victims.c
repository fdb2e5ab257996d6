/*
 * Who may be a victim of preemption (plan_internal.h): the gangs never
 * taken (protection, PodDisruptionBudgets), and the candidates of one
 * preemptor as preempt.h's plain views, in its cost order. preempt.h
 * searches among them.
 *
 * A candidate is a whole gang, except in a native PodGroup whose
 * disruptionMode is single (the API's default): there each bound member
 * is a candidate of its own, as kube-scheduler 1.37 treats such pods, so
 * a preemption may take one worker of it and leave the rest running.
 *
 * Cost: O(running gangs + members of single-mode gangs) per preemptor,
 * plus O(budgets x members) for the budgets of a candidate's namespace;
 * a gang's view (its bound pods' nodes, specs and request) is built once
 * a cycle, on first use, a member's each time it is offered (at most
 * PLAN_PREEMPTORS_PER_CYCLE times a cycle).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "policy/plan_internal.h"

/* ---- protection ------------------------------------------------------ */

static bool says_false(const struct plan_run *r, const struct kubeapi_labels *l)
{
	return r->preemptible_key && r->false_value &&
	       kubeapi_labels_get(l, r->preemptible_key) == r->false_value;
}

void plan__protect(struct plan_run *r)
{
	for (size_t k = 0; k < r->p->ngangs; k++) {
		struct plan_gang *g = &r->p->gangs[k];
		const struct config_queue *q =
		    g->queue == QUEUE_NONE ? NULL : queue_set_queue(r->in->qs, g->queue);
		bool ending = false;

		if (!g->bound_first)
			continue;
		for (uint32_t b = g->bound_first; b; b = r->bound[b - 1].next) {
			const struct kubeapi_pod *pod = r->bound[b - 1].pod;

			ending |= pod->deleting || says_false(r, pod->muster);
			if (plan__pod_start(pod) > g->started_s)
				g->started_s = plan__pod_start(pod);
		}
		g->protected_ =
		    ending || !q || !q->preemption.preemptible ||
		    (g->group && says_false(r, g->group->muster)) ||
		    (q->preemption.min_runtime_ms > 0 &&
		     r->in->now_s - g->started_s < (q->preemption.min_runtime_ms + 999) / 1000) ||
		    (r->in->refused && idmap_get(r->in->refused, g->key));
	}
}

/* Does budget b guard pod? The matching is kubeapi_selector_matches(). */
static bool selects(const struct kubeapi_model *m, const struct kubeapi_pdb *b,
                    const struct kubeapi_pod *pod)
{
	if (b->selects_nothing || !b->selector || b->ns != pod->ns)
		return false;
	return kubeapi_selector_matches(m, b->selector, pod->labels);
}

/* Would a budget refuse to evict all of g's bound pods? O(budgets x pods
 * of g); budgets are few. */
static bool budget_refuses(const struct plan_run *r, const struct plan_gang *g)
{
	const struct idmap_slot *e;

	IDMAP_FOREACH(r->in->pdbs, s, e) {
		const struct kubeapi_pdb *b = e->value;
		int32_t hit = 0;

		if (b->ns != g->ns)
			continue;
		for (uint32_t i = g->bound_first; i; i = r->bound[i - 1].next)
			hit += selects(r->in->model, b, r->bound[i - 1].pod);
		if (hit > b->disruptions_allowed)
			return true;
	}
	return false;
}

/* Would a budget refuse to evict pod alone? */
static bool budget_refuses_pod(const struct plan_run *r, const struct kubeapi_pod *pod)
{
	const struct idmap_slot *e;

	IDMAP_FOREACH(r->in->pdbs, s, e) {
		const struct kubeapi_pdb *b = e->value;

		if (b->disruptions_allowed < 1 && selects(r->in->model, b, pod))
			return true;
	}
	return false;
}

/* ---- candidates ------------------------------------------------------ */

/* Does v's PodGroup let its members be disrupted one by one? A native
 * PodGroup's disruptionMode single, or none (the API defaults it to
 * single, and kube-scheduler groups victims only under all); the CRD
 * dialects have no such field, and a gang of theirs goes whole. */
bool plan__by_member(const struct plan_gang *v)
{
	return v->group && v->group->dialect == KUBEAPI_PG_NATIVE &&
	       v->group->disruption != KUBEAPI_DISRUPT_ALL;
}

/* The cohort under the root that holds node, or QUEUE_NONE outside any. */
static int top_cohort(const struct queue_tree *t, int node)
{
	int up;

	while ((up = queue_tree_parent(t, node)) > 0)
		node = up;
	return node == QUEUE_NONE || !queue_tree_is_cohort(t, node) ? QUEUE_NONE : node;
}

static double over_nominal(const struct plan_run *r, int q, const int64_t *req)
{
	return preempt_over_nominal(r->tree, r->nslots, q, req);
}

/* Would q stay within its nominal quota with req added? */
static bool within_nominal(const struct plan_run *r, int q, const int64_t *req)
{
	for (unsigned s = 0; s < r->nslots; s++)
		if (req[s] &&
		    queue_tree_demand(r->tree, q, s) + req[s] > queue_tree_quota(r->tree, q, s))
			return false;
	return true;
}

static bool may_take(const struct plan_run *r, const struct plan_gang *g,
                     const struct config_queue *gq, const struct plan_gang *v, bool reclaim)
{
	if (v->queue == g->queue) {
		switch (gq->preemption.within_queue) {
		case CONFIG_WITHIN_QUEUE_LOWER_PRIORITY:
			return v->priority < g->priority;
		case CONFIG_WITHIN_QUEUE_LOWER_OR_NEWER_EQUAL_PRIORITY:
			return v->priority < g->priority ||
			       (v->priority == g->priority && v->submitted_s > g->submitted_s);
		default:
			return false;
		}
	}
	if (!reclaim || top_cohort(r->tree, v->queue) != top_cohort(r->tree, g->queue) ||
	    top_cohort(r->tree, g->queue) == QUEUE_NONE)
		return false;
	switch (gq->preemption.reclaim_within_cohort) {
	case CONFIG_RECLAIM_LOWER_PRIORITY:
		return v->priority < g->priority;
	case CONFIG_RECLAIM_ANY:
		return true;
	default:
		return false;
	}
}

/* Does the gang ask for GPUs? */
static bool asks_gpus(const struct plan_gang *g)
{
	for (uint32_t m = 0; m < g->npending; m++)
		if (policy_spec_gpus(g->pending[m]->spec) > 0)
			return true;
	return false;
}

static bool holds_gpus(const struct plan_run *r, const struct plan_gang *v)
{
	for (uint32_t b = v->bound_first; b; b = r->bound[b - 1].next)
		if (policy_spec_gpus(r->bound[b - 1].pod->spec) > 0)
			return true;
	return false;
}

const struct preempt_cand *plan__victim_view(struct plan_run *r, uint32_t gang)
{
	struct preempt_cand *v;
	const struct plan_gang *g = &r->p->gangs[gang];
	uint32_t *node;
	const struct kubeapi_podspec **spec;
	const struct policy_held **held;
	int64_t *req;
	uint32_t n = 0;

	if (!r->pre.view &&
	    !(r->pre.view = arena_calloc(&r->p->arena, r->p->ngangs + 1, sizeof(*r->pre.view))))
		return NULL;
	v = &r->pre.view[gang];
	if (v->req)
		return v;
	for (uint32_t b = g->bound_first; b; b = r->bound[b - 1].next)
		n++;
	node = arena_alloc(&r->p->arena, (n + 1) * sizeof(*node));
	spec = arena_alloc(&r->p->arena, (n + 1) * sizeof(*spec));
	held = arena_alloc(&r->p->arena, (n + 1) * sizeof(*held));
	req = arena_calloc(&r->p->arena, r->nslots + 1, sizeof(*req));
	if (!node || !spec || !held || !req)
		return NULL;
	n = 0;
	for (uint32_t b = g->bound_first; b; b = r->bound[b - 1].next, n++) {
		node[n] = r->bound[b - 1].node;
		spec[n] = r->bound[b - 1].pod->spec;
		held[n] = r->bound[b - 1].held;
		plan__add_pod(r, req, spec[n], POLICY_NO_FLAVOR);
	}
	*v = (struct preempt_cand){.id = gang,
	                           .tie = g->key,
	                           .queue = g->queue,
	                           .priority = g->priority,
	                           .started_s = g->started_s,
	                           .npods = n,
	                           .node = node,
	                           .spec = spec,
	                           .held = held,
	                           .req = req};
	return v;
}

/* One member of a bound gang as preempt.h sees it alone: its node, spec,
 * shares and request. */
struct member_view {
	struct preempt_cand cand;
	uint32_t node;
	const struct kubeapi_podspec *spec;
	const struct policy_held *held;
};

const struct preempt_cand *plan__member_view(struct plan_run *r, uint32_t gang, uint32_t b)
{
	const struct plan_bound *x = &r->bound[b - 1];
	const struct plan_gang *g = &r->p->gangs[gang];
	struct member_view *m = arena_alloc(&r->p->arena, sizeof(*m));
	int64_t *req = arena_calloc(&r->p->arena, r->nslots + 1, sizeof(*req));

	if (!m || !req)
		return NULL;
	m->node = x->node;
	m->spec = x->pod->spec;
	m->held = x->held;
	plan__add_pod(r, req, m->spec, POLICY_NO_FLAVOR);
	m->cand = (struct preempt_cand){.id = gang,
	                                .part = b,
	                                .tie = kubeapi_pod_key(x->pod),
	                                .queue = g->queue,
	                                .priority = g->priority,
	                                .started_s = g->started_s,
	                                .npods = 1,
	                                .node = &m->node,
	                                .spec = &m->spec,
	                                .held = &m->held,
	                                .req = req};
	return &m->cand;
}

/* May v be a victim of g (queue gq, asking req)? reclaim: g may take
 * from other queues of its cohort. A gang taken member by member is
 * checked here as a gang, its members one by one in add_members(). */
static bool candidate(struct plan_run *r, const struct plan_gang *g, const struct config_queue *gq,
                      const struct plan_gang *v, const int64_t *req, bool reclaim, bool gpus)
{
	if (v == g || !v->bound_first || v->protected_ || v->preempted_by ||
	    v->queue == QUEUE_NONE || v->state == PLAN_PREEMPTING)
		return false;
	/* GPUs are what a GPU gang lacks: evicting a CPU pod for it would
	 * free nothing it can use. */
	if (gpus && !holds_gpus(r, v))
		return false;
	if (!may_take(r, g, gq, v, reclaim))
		return false;
	if (v->queue != g->queue && over_nominal(r, v->queue, req) <= 0)
		return false; /* reclaim takes back only what is borrowed */
	return plan__by_member(v) || !budget_refuses(r, v);
}

static int add_cand(struct plan_run *r, const struct preempt_cand *view, size_t *n)
{
	if (arena_grow(&r->p->arena, &r->pre.cand_buf, *n, &r->pre.cap_cand,
	               sizeof(*r->pre.cand_buf), 64) < 0)
		return -ENOMEM;
	r->pre.cand_buf[(*n)++] = *view;
	return 0;
}

/* Each member of single-mode gang v (index vi) that may go alone, as a
 * candidate of its own. */
static int add_members(struct plan_run *r, uint32_t vi, bool gpus, size_t *n)
{
	const struct plan_gang *v = &r->p->gangs[vi];
	const struct preempt_cand *view;
	int rc;

	for (uint32_t b = v->bound_first; b; b = r->bound[b - 1].next) {
		const struct kubeapi_pod *pod = r->bound[b - 1].pod;

		if ((gpus && policy_spec_gpus(pod->spec) <= 0) || budget_refuses_pod(r, pod))
			continue;
		if (!(view = plan__member_view(r, vi, b)))
			return -ENOMEM;
		if ((rc = add_cand(r, view, n)) < 0)
			return rc;
	}
	return 0;
}

int plan__candidates(struct plan_run *r, struct plan_gang *g, const int64_t *req,
                     struct preempt_cand **out, size_t *nout)
{
	const struct config_queue *gq = queue_set_queue(r->in->qs, g->queue);
	bool reclaim = gq && gq->preemption.reclaim_within_cohort != CONFIG_RECLAIM_NEVER &&
	               within_nominal(r, g->queue, req);
	bool gpus = asks_gpus(g);
	size_t n = 0;
	int rc;

	*out = NULL;
	*nout = 0;
	if (!gq)
		return 0;
	for (size_t k = 0; k < r->p->ngangs; k++) {
		const struct plan_gang *v = &r->p->gangs[k];
		const struct preempt_cand *view;
		size_t first = n;
		double over;

		if (!candidate(r, g, gq, v, req, reclaim, gpus))
			continue;
		if (plan__by_member(v))
			rc = add_members(r, (uint32_t)k, gpus, &n);
		else if (!(view = plan__victim_view(r, (uint32_t)k)))
			rc = -ENOMEM;
		else
			rc = add_cand(r, view, &n);
		if (rc < 0)
			return rc;
		over = v->queue != g->queue ? over_nominal(r, v->queue, req) : 0;
		for (size_t i = first; i < n; i++) {
			r->pre.cand_buf[i].other_queue = v->queue != g->queue;
			r->pre.cand_buf[i].over = over;
		}
	}
	preempt_order(r->pre.cand_buf, n);
	*out = r->pre.cand_buf;
	*nout = n;
	return 0;
}
