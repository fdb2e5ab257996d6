/*
 * The planner's side of preemption (plan.h): a gang that does not fit
 * asks preempt.h for victims among its candidates (victims.c), when its
 * queue allows it:
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
 * On an answer every member of each victim is evicted (of a native
 * gang in disruptionMode single, the members chosen: victims.c) and the
 * room is held (plan_memory.holds): each cycle, before any other gang, the
 * preemptor is placed as if its victims were gone, and bound once they
 * are. A hold ends when the preemptor is bound, its victims fail to end
 * within PLAN_HOLD_TIMEOUT_S, or an eviction is refused.
 *
 * Cost: O(running gangs) to find candidates, then preempt.h's budget, for
 * at most PLAN_PREEMPTORS_PER_CYCLE preemptors per cycle; a hold costs
 * one placement a cycle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "policy/plan_internal.h"

/* ---- evictions ------------------------------------------------------- */

static int add_eviction(struct plan_run *r, const struct plan_bound *x, uint32_t victim,
                        uint32_t preemptor, bool whole)
{
	struct plan *p = r->p;

	if (x->pod->deleting)
		return 0; /* already on its way out */
	if (arena_grow(&p->arena, &p->evictions, p->nevictions, &r->cap_evictions,
	               sizeof(*p->evictions), 64) < 0)
		return -ENOMEM;
	p->evictions[p->nevictions++] =
	    (struct plan_evict){x->pod, p->nodes.node[x->node]->name, victim, preemptor, whole};
	return 0;
}

/* Victim v makes way for g: every member still running asked to leave
 * (it keeps its room in the table until it is gone), or, part > 0, the
 * member at r->bound[part - 1] alone. */
static int evict(struct plan_run *r, struct plan_gang *v, uint32_t part, struct plan_gang *g)
{
	uint32_t vi = (uint32_t)(v - r->p->gangs), gi = (uint32_t)(g - r->p->gangs);
	int rc;

	v->preempted_by = gi + 1;
	if (part)
		return add_eviction(r, &r->bound[part - 1], vi, gi, false);
	for (uint32_t b = v->bound_first; b; b = r->bound[b - 1].next)
		if ((rc = add_eviction(r, &r->bound[b - 1], vi, gi, true)) < 0)
			return rc;
	return 0;
}

static int hold_new(struct plan_run *r, struct plan_gang *g, const struct preempt_answer *a)
{
	struct plan_hold *h = malloc(sizeof(*h) + a->nvictims * sizeof(h->victim[0]));
	int rc;

	if (!h)
		return -ENOMEM;
	h->since_s = r->in->now_s;
	h->nvictims = (uint32_t)a->nvictims;
	for (size_t k = 0; k < a->nvictims; k++) {
		const struct preempt_cand *v = &a->victims[k];

		h->victim[k] =
		    (struct plan_victim){r->p->gangs[v->id].key,
		                         v->part ? kubeapi_pod_key(r->bound[v->part - 1].pod) : 0};
	}
	free(idmap_del(&r->keep->holds, g->key));
	if ((rc = idmap_put(&r->keep->holds, g->key, h)) < 0)
		free(h);
	return rc;
}

/* "ns/gang" for a whole victim, "ns/pod" for a member taken alone. */
static const char *victim_names(struct plan_run *r, const struct preempt_answer *a)
{
	char buf[512];
	size_t len = 0;

	buf[0] = 0;
	for (size_t k = 0; k < a->nvictims && len < sizeof(buf); k++) {
		const struct preempt_cand *c = &a->victims[k];
		const struct plan_gang *v = &r->p->gangs[c->id];
		uint32_t name = c->part ? r->bound[c->part - 1].pod->name : v->name;

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s/%s", k ? ", " : "",
		                        plan__str(r, v->ns), plan__str(r, name));
	}
	return plan__strdup(r, buf);
}

static bool may_preempt(const struct plan_run *r, const struct plan_gang *g,
                        const struct kubeapi_pod *const *pods, size_t n)
{
	const struct config_queue *q =
	    g->queue == QUEUE_NONE ? NULL : queue_set_queue(r->in->qs, g->queue);

	if (!q || (q->preemption.within_queue == CONFIG_WITHIN_QUEUE_NEVER &&
	           q->preemption.reclaim_within_cohort == CONFIG_RECLAIM_NEVER))
		return false;
	if (g->group && g->group->preempt_never)
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
	struct preempt_ask ask = {.nodes = &r->p->nodes,
	                          .fits = &r->fits,
	                          .arena = &r->p->arena,
	                          .tree = r->tree,
	                          .nslots = r->nslots,
	                          .queue = g->queue,
	                          .req = req,
	                          .n = n,
	                          .within = &g->within};
	struct plan_facts f = {.why = PLAN_WHY_PREEMPTING};
	struct preempt_answer ans;
	struct preempt_cand *c;
	size_t nc;
	int rc;

	if (!may_preempt(r, g, pods, n) || r->pre.preemptors >= PLAN_PREEMPTORS_PER_CYCLE)
		return 0;
	plan__request(r, req, pods, n);
	if ((rc = plan__candidates(r, g, req, &c, &nc)) < 0 || nc == 0)
		return rc;
	r->pre.preemptors++;
	if (!(ask.specs = plan__specs(r, g, pods, n)))
		return -ENOMEM;
	rc = preempt_search(&ask, c, nc, &r->pre.budget, &ans);
	if (rc <= 0)
		return rc;
	for (size_t k = 0; k < ans.nvictims; k++)
		if ((rc = evict(r, &r->p->gangs[ans.victims[k].id], ans.victims[k].part, g)) < 0)
			return rc;
	if ((rc = hold_new(r, g, &ans)) < 0)
		return rc;
	r->p->stats.preemptions++;
	r->p->stats.victims += ans.nvictims;
	g->state = PLAN_PREEMPTING;
	g->block.why = PLAN_WHY_PREEMPTING;
	f.victims = victim_names(r, &ans);
	f.nvictims = ans.nvictims;
	plan__say(r, g, &f);
	return 1;
}

/* ---- holds ----------------------------------------------------------- */

/* Hold victim x as it is this cycle, in *view: the count of its pods
 * still bound (0: gone, or already taken off by an earlier hold this
 * cycle), or -ENOMEM. O(the gang's bound members) for a member. */
static int still_there(struct plan_run *r, const struct plan_victim *x,
                       const struct preempt_cand **view)
{
	long vi = plan__gang_index(r, x->gang);
	const struct plan_gang *v = vi < 0 ? NULL : &r->p->gangs[vi];

	if (!v || !v->bound_first)
		return 0;
	if (!x->pod) {
		if (v->preempted_by)
			return 0;
		*view = plan__victim_view(r, (uint32_t)vi);
		return *view ? (int)v->bound : -ENOMEM;
	}
	for (uint32_t b = v->bound_first; b; b = r->bound[b - 1].next)
		if (kubeapi_pod_key(r->bound[b - 1].pod) == x->pod) {
			*view = plan__member_view(r, (uint32_t)vi, b);
			return *view ? 1 : -ENOMEM;
		}
	return 0;
}

/* One hold's turn, before everyone else's: 1 kept, 0 to drop, <0 error.
 * The victims still there are taken off the table (their pods end soon),
 * the preemptor is placed in the room, and bound once nobody is left. */
static int hold_turn(struct plan_run *r, struct plan_gang *g, const struct plan_hold *h)
{
	struct plan_facts f = {.why = PLAN_WHY_PREEMPTING};
	uint32_t have = g->bound + g->succeeded;
	uint32_t need = have < g->min_member ? g->min_member - have : g->npending ? 1 : 0;
	const struct preempt_cand **gone =
	    arena_alloc(&r->p->arena, (h->nvictims + 1) * sizeof(*gone));
	uint32_t left = 0, ngone = 0, *out = arena_alloc(&r->p->arena, (need + 1) * sizeof(*out));
	const struct policy_held **held = arena_calloc(&r->p->arena, need + 1, sizeof(*held));
	int rc;

	if (!gone || !out || !held)
		return -ENOMEM;
	if (g->state != PLAN_RUNNING || !need || need > g->npending ||
	    r->in->now_s - h->since_s > PLAN_HOLD_TIMEOUT_S ||
	    (r->in->backoff && idmap_get(r->in->backoff, g->key)))
		return 0;
	for (uint32_t k = 0; k < h->nvictims; k++) {
		int there = still_there(r, &h->victim[k], &gone[ngone]);

		if (there < 0)
			return there;
		if (there == 0)
			continue;
		left += (uint32_t)there;
		preempt_release(&r->p->nodes, r->tree, gone[ngone++], +1);
	}
	if ((rc = plan__place(r, g, g->pending, need, out, held)) <= 0) {
		while (ngone--) /* the room is gone: plan afresh */
			preempt_release(&r->p->nodes, r->tree, gone[ngone], -1);
		return rc;
	}
	for (uint32_t k = 0; k < ngone; k++) {
		/* Still running: their room beyond the preemptor's is nobody's
		 * yet. Asked again: the run layer sends each eviction once, and
		 * again only after one failed. */
		preempt_release(&r->p->nodes, r->tree, gone[k], -1);
		if ((rc = evict(r, &r->p->gangs[gone[k]->id], gone[k]->part, g)) < 0)
			return rc;
	}
	if (left == 0) {
		g->first_bind = (uint32_t)r->p->nbinds;
		if ((rc = plan__add_binds(r, g, g->pending, need, out, held)) < 0)
			return rc;
		g->nbind = need;
		g->state = PLAN_ADMITTED;
		g->message = NULL;
		g->said_memo = 0;
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
	struct idmap *m = &r->keep->holds;
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
			g->said_memo = 0;
		}
	}
	return 0;
}
