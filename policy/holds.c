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
 * The holds take their turns together, in two steps, so that none takes
 * the room another's victims left: the room of a victim gone is free in
 * the table, anybody's, while that of one still ending is taken off only
 * for the holds' placements. First the holds whose victims are all gone
 * are bound in the room free now; then the rest are placed with every
 * waiting hold's victims off the table at once. So a hold is planned
 * afresh (and preempts again) only when the holds' room together, the
 * victims' and what is free, no longer holds them all: not because a
 * hold earlier in the map's order was placed where a later one's victims
 * had already left.
 *
 * Cost: O(running gangs) to find candidates, then preempt.h's budget, for
 * at most PLAN_PREEMPTORS_PER_CYCLE preemptors per cycle; a hold costs
 * one placement a cycle (without the failure memo: the holds' room grows
 * and shrinks) and O(its victims' pods) twice to take them off and back.
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
 * still bound (0: gone, or already counted by an earlier hold this
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

/* One hold this cycle: its preemptor, how many members it places, the
 * views of its victims still bound (ending[0..nending), `left` pods in all),
 * and the room for its placement. */
struct hold_turn {
	uint64_t key;
	struct plan_gang *g;
	const struct plan_hold *h;
	uint32_t need, left, nending;
	const struct preempt_cand **ending;
	uint32_t *out;
	const struct policy_held **held;
	bool kept; /* still held after its placement */
};

/* Take hold t's victims still bound off the table (sign +1) or put them
 * back (-1). */
static void hold_release(struct plan_run *r, const struct hold_turn *t, int sign)
{
	for (uint32_t k = 0; k < t->nending; k++)
		preempt_release(&r->p->nodes, r->tree, t->ending[k], sign);
}

/* Hold t dropped: its whole victims are nobody's again this cycle. */
static void hold_unmark(struct plan_run *r, const struct hold_turn *t)
{
	uint32_t gi = (uint32_t)(t->g - r->p->gangs) + 1;

	for (uint32_t k = 0; k < t->nending; k++)
		if (!t->ending[k]->part && r->p->gangs[t->ending[k]->id].preempted_by == gi)
			r->p->gangs[t->ending[k]->id].preempted_by = 0;
}

/* Hold t as this cycle finds it: 1 to be placed, 0 to drop (its
 * preemptor has nothing to place, is backed off, or waited too long),
 * <0 error. Its victims still bound are counted, the table unchanged. */
static int hold_look(struct plan_run *r, struct hold_turn *t)
{
	struct plan_gang *g = t->g;
	uint32_t have = g->bound + g->succeeded;

	t->need = have < g->min_member ? g->min_member - have : g->npending ? 1 : 0;
	if (g->state != PLAN_RUNNING || !t->need || t->need > g->npending ||
	    r->in->now_s - t->h->since_s > PLAN_HOLD_TIMEOUT_S ||
	    (r->in->backoff && idmap_get(r->in->backoff, g->key)))
		return 0;
	t->ending = arena_alloc(&r->p->arena, (t->h->nvictims + 1) * sizeof(*t->ending));
	t->out = arena_alloc(&r->p->arena, (t->need + 1) * sizeof(*t->out));
	t->held = arena_calloc(&r->p->arena, t->need + 1, sizeof(*t->held));
	if (!t->ending || !t->out || !t->held)
		return -ENOMEM;
	for (uint32_t k = 0; k < t->h->nvictims; k++) {
		int there = still_there(r, &t->h->victim[k], &t->ending[t->nending]);

		if (there < 0)
			return there;
		if (there == 0)
			continue;
		t->left += (uint32_t)there;
		/* Counted once, by the first hold that names it. */
		if (!t->h->victim[k].pod)
			r->p->gangs[t->ending[t->nending]->id].preempted_by =
			    (uint32_t)(g - r->p->gangs) + 1;
		t->nending++;
	}
	return 1;
}

/* A hold whose victims are all gone: its preemptor bound in the room free
 * now. 0 either way (the hold ends: bound, or planned afresh), <0 error. */
static int hold_bind(struct plan_run *r, struct hold_turn *t)
{
	struct plan_gang *g = t->g;
	int rc;

	if ((rc = plan__place(r, g, g->pending, t->need, t->out, t->held)) <= 0)
		return rc;
	g->first_bind = (uint32_t)r->p->nbinds;
	if ((rc = plan__add_binds(r, g, g->pending, t->need, t->out, t->held)) < 0)
		return rc;
	g->nbind = t->need;
	g->state = PLAN_ADMITTED;
	g->message = NULL;
	g->said_memo = 0;
	r->p->stats.admitted_gangs++;
	return 0;
}

/* A hold still waiting, after its placement (t->kept): its victims
 * asked again (the run layer sends each eviction once, and again only
 * after one failed), its message said. */
static int hold_wait(struct plan_run *r, struct hold_turn *t)
{
	struct plan_facts f = {
	    .why = PLAN_WHY_PREEMPTING, .nvictims = t->h->nvictims, .pods_left = t->left};
	int rc;

	for (uint32_t k = 0; k < t->nending; k++)
		if ((rc = evict(r, &r->p->gangs[t->ending[k]->id], t->ending[k]->part, t->g)) < 0)
			return rc;
	t->g->state = PLAN_PREEMPTING;
	t->g->block.why = PLAN_WHY_PREEMPTING;
	plan__say(r, t->g, &f);
	return 0;
}

/* The holds still waiting, placed together: every one's victims still
 * bound taken off the table at once, so that no hold's placement lands
 * in room freed for another and leaves it none (a gone victim's room is
 * free in the table, a still-bound one's only in its own hold's turn);
 * then put back, their room beyond the preemptors' nobody's yet. */
static int holds_wait(struct plan_run *r, struct hold_turn *t, size_t n)
{
	int rc = 0;

	for (size_t k = 0; k < n; k++)
		if (t[k].left) /* kept, all of them: the others have none */
			hold_release(r, &t[k], +1);
	for (size_t k = 0; k < n && rc >= 0; k++) {
		if (!t[k].kept ||
		    (rc = plan__place(r, t[k].g, t[k].g->pending, t[k].need, t[k].out, t[k].held)))
			continue;
		t[k].kept = false; /* the room is gone: plan afresh */
		hold_unmark(r, &t[k]);
	}
	for (size_t k = 0; k < n; k++)
		if (t[k].left)
			hold_release(r, &t[k], -1);
	if (rc < 0)
		return rc;
	for (size_t k = 0; k < n; k++)
		if (t[k].kept && (rc = hold_wait(r, &t[k])) < 0)
			return rc;
	return 0;
}

/* Hold t's end: its preemptor, unless just bound, to its normal turn,
 * which comes in the order. */
static void hold_end(struct plan_run *r, struct hold_turn *t)
{
	free(idmap_del(&r->keep->holds, t->key));
	if (t->g && t->g->state == PLAN_WAITING) {
		t->g->state = PLAN_RUNNING;
		t->g->message = NULL;
		t->g->said_memo = 0;
	}
}

/* The turns of holds t[0..n), one per entry of the holds' map. */
static int holds_turns(struct plan_run *r, struct hold_turn *t, size_t n)
{
	int rc;

	for (size_t k = 0; k < n; k++)
		if (t[k].g && (rc = hold_look(r, &t[k])) != 0) {
			if (rc < 0)
				return rc;
			t[k].kept = true;
		}
	for (size_t k = 0; k < n; k++)
		if (t[k].kept && !t[k].left) {
			if ((rc = hold_bind(r, &t[k])) < 0)
				return rc;
			t[k].kept = false;
		}
	if ((rc = holds_wait(r, t, n)) < 0)
		return rc;
	for (size_t k = 0; k < n; k++)
		if (!t[k].kept)
			hold_end(r, &t[k]);
	return 0;
}

/* Each hold's turn, before everyone else's. First the holds whose victims
 * are all gone are bound, in the room free now (taking nobody's victims
 * off the table); then the rest are placed in their victims' room, all
 * together (holds_wait()). A hold dropped leaves its preemptor to its
 * normal turn. The failure memo is left alone meanwhile (r->holding):
 * room is taken off the table and put back. */
int plan__holds(struct plan_run *r)
{
	struct idmap *m = &r->keep->holds;
	const struct idmap_slot *e;
	struct hold_turn *t;
	size_t n = 0;
	int rc;

	if (!m->n)
		return 0;
	if (!(t = arena_calloc(&r->p->arena, m->n, sizeof(*t))))
		return -ENOMEM;
	IDMAP_FOREACH(m, s, e) {
		long gi = plan__gang_index(r, e->key);

		t[n].key = e->key;
		t[n].h = e->value;
		t[n++].g = gi < 0 ? NULL : &r->p->gangs[gi];
	}
	r->holding = 1;
	rc = holds_turns(r, t, n);
	r->holding = 0;
	return rc;
}
