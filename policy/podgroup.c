/*
 * What a PodGroup asks beyond minMember (plan_internal.h).
 *
 * The minResources gate ("enqueue", as Volcano calls it). A PodGroup
 * that gives spec.minResources is enqueued (Volcano shows the phase
 * Inqueue) only when they fit
 *   - the cluster: each resource at most the allocatable of the ready,
 *     schedulable nodes (a gang asking 400 GPUs of a 128-GPU cluster waits
 *     instead of being bound as soon as some of its pods fit), and
 *   - its queue's quota along the cohort tree, counting the minResources
 *     of every other enqueued PodGroup that has not started, so enqueued
 *     groups together never overrun a quota (Volcano's proportion
 *     plugin counts its Inqueue jobs the same way).
 * Until then its pods are not tried, and it is not timed out: it holds
 * nothing. Once enqueued it stays so (a decision is kept across cycles,
 * and Volcano's Inqueue is read back from the PodGroup), until it starts:
 * from then on its members' own usage counts, not its minResources. The
 * reservations count only for the gate: admission still checks each gang
 * against what runs, as Volcano's allocate does. Without minResources a
 * PodGroup is enqueued at once. Candidates are taken by priority, then
 * age. Cost: O(gangs log gangs) plus O(nodes) once when a gate needs the
 * cluster's capacity.
 *
 * minTaskMember (Volcano): a gang whose pods of some task are fewer than
 * that task's minimum waits for them (NotEnoughPodsOfTask); when it is
 * tried, the members it needs of each task come first among those placed
 * together, so a master and a worker are admitted, not two workers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/plan_internal.h"

bool plan__group_ran(const struct plan_run *r, const struct kubeapi_podgroup *pg)
{
	for (size_t k = 0; pg->status.phase && k < sizeof(r->phase_ran) / sizeof(r->phase_ran[0]);
	     k++)
		if (pg->status.phase == r->phase_ran[k])
			return true;
	return false;
}

/* Enough members bound, assumed or finished for minMember, or its phase
 * says it ran: from here on the gang's own pods count, not its
 * minResources. */
static bool started(const struct plan_gang *g)
{
	return g->ran || g->bound + g->succeeded + g->failed >= g->min_member;
}

/* minResources as a request per queue slot (no flavor: the pods are not
 * placed yet). */
static void group_request(const struct plan_run *r, const struct kubeapi_reslist *l, int64_t *req)
{
	memset(req, 0, r->nslots * sizeof(*req));
	plan__add_amounts(r, req, l->e, l->n, POLICY_NO_FLAVOR);
}

/* Allocatable of the nodes that can take pods, per model resource. */
static const int64_t *capacity(struct plan_run *r)
{
	const struct idmap_slot *s;

	if (r->grp.capacity)
		return r->grp.capacity;
	if (!(r->grp.capacity = arena_calloc(&r->p->arena, KUBEAPI_MAX_RESOURCES, sizeof(int64_t))))
		return NULL;
	IDMAP_FOREACH(r->in->nodes, i, s) {
		const struct kubeapi_node *n = s->value;

		if (!n->ready || n->unschedulable || !n->allocatable)
			continue;
		for (uint32_t e = 0; e < n->allocatable->n; e++)
			r->grp.capacity[n->allocatable->e[e].res] += n->allocatable->e[e].amount;
	}
	return r->grp.capacity;
}

static const char *res_name(const struct plan_run *r, unsigned res)
{
	const char *n = kubeapi_model_resource_name(r->in->model, res);

	return n ? n : "?";
}

/* Does minResources l fit the cluster? If not, say so on g. -ENOMEM. */
static int fits_cluster(struct plan_run *r, struct plan_gang *g, const struct kubeapi_reslist *l)
{
	const int64_t *cap = capacity(r);

	if (!cap)
		return -ENOMEM;
	for (uint32_t e = 0; e < l->n; e++) {
		const struct kubeapi_res *x = &l->e[e];

		if (x->amount <= cap[x->res])
			continue;
		struct plan_facts f = {.why = PLAN_WHY_ENQUEUE,
		                       .cluster = true,
		                       .res = res_name(r, x->res),
		                       .usage = cap[x->res],
		                       .need = x->amount};

		g->state = PLAN_WAITING;
		g->block = (struct plan_block){.why = PLAN_WHY_ENQUEUE,
		                               .node = -1,
		                               .short_res = x->res,
		                               .usage = cap[x->res],
		                               .need = x->amount};
		plan__say(r, g, &f);
		return 0;
	}
	return 1;
}

/* Does minResources req fit g's queue beside what is enqueued? If not,
 * say so on g. */
static int fits_quota(struct plan_run *r, struct plan_gang *g, const int64_t *req)
{
	struct queue_verdict v = queue_tree_fits(r->tree, g->queue, req);
	struct plan_facts f;
	char slot[160];

	if (v.fits)
		return 1;
	plan__quota_wait(r, g, &v, req, PLAN_WHY_ENQUEUE, &f, slot);
	plan__say(r, g, &f);
	return 0;
}

/* Reserve (sign +1) or give back (-1) g's minResources in its queue. */
static int reserve(struct plan_run *r, const struct plan_gang *g, int sign)
{
	int64_t req[QUEUE_MAX_SLOTS];

	group_request(r, g->group->min_resources, req);
	return queue_tree_charge(r->tree, g->queue, req, sign);
}

/* The gate for one candidate: 1 enqueued (and reserved), 0 not (g says
 * why), -ENOMEM. */
static int gate(struct plan_run *r, struct plan_gang *g)
{
	int64_t req[QUEUE_MAX_SLOTS];
	int rc;

	if (!g->group->min_resources)
		return 1;
	if ((rc = fits_cluster(r, g, g->group->min_resources)) <= 0)
		return rc;
	group_request(r, g->group->min_resources, req);
	if (!fits_quota(r, g, req))
		return 0;
	return queue_tree_charge(r->tree, g->queue, req, +1) < 0 ? -EINVAL : 1;
}

static int by_turn(const void *a, const void *b, void *gangs)
{
	const struct plan_gang *x = (const struct plan_gang *)gangs + *(const uint32_t *)a;
	const struct plan_gang *y = (const struct plan_gang *)gangs + *(const uint32_t *)b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->submitted_s != y->submitted_s)
		return x->submitted_s < y->submitted_s ? -1 : 1;
	return (x->key > y->key) - (x->key < y->key);
}

/* Already enqueued: decided earlier, or Inqueue on the PodGroup itself. */
static bool was_enqueued(const struct plan_gang *g)
{
	return g->kept_enqueued || (g->group_gate & PLAN_GATE_INQUEUE);
}

int plan__enqueue(struct plan_run *r)
{
	struct plan *p = r->p;
	uint32_t *cand = arena_alloc(&p->arena, (p->ngangs + 1) * sizeof(*cand));
	uint32_t *held = arena_alloc(&p->arena, (p->ngangs + 1) * sizeof(*held));
	size_t ncand = 0, nheld = 0;
	int rc = 0;

	if (!cand || !held)
		return -ENOMEM;
	for (size_t k = 0; k < p->ngangs; k++) {
		struct plan_gang *g = &p->gangs[k];

		/* A decision about a gang that has started is over (the gate
		 * below takes none that has). */
		if (g->kept_enqueued && started(g))
			g->kept->enqueued = g->kept_enqueued = 0;
		if (!g->group || g->enqueued || g->queue == QUEUE_NONE)
			continue;
		if (started(g) || g->bound) {
			g->enqueued = 1; /* admission under way or done */
			continue;
		}
		if (!was_enqueued(g)) {
			cand[ncand++] = (uint32_t)k;
			continue;
		}
		g->enqueued = 1;
		if (g->group_gate & PLAN_GATE_MIN_RESOURCES) {
			if ((rc = reserve(r, g, +1)) < 0)
				return rc;
			held[nheld++] = (uint32_t)k;
		}
	}
	qsort_r(cand, ncand, sizeof(*cand), by_turn, p->gangs);
	for (size_t k = 0; k < ncand; k++) {
		struct plan_gang *g = &p->gangs[cand[k]];

		if ((rc = gate(r, g)) < 0)
			break;
		if (rc == 0)
			continue;
		g->enqueued = 1;
		if (g->group_gate & PLAN_GATE_MIN_RESOURCES)
			held[nheld++] = cand[k];
		g->kept->enqueued = g->kept_enqueued = 1;
	}
	/* The reservations only gate enqueueing: admission sees what runs. */
	for (size_t k = 0; k < nheld; k++)
		reserve(r, &p->gangs[held[k]], -1);
	return rc < 0 ? rc : 0;
}

/* ---- minTaskMember ----------------------------------------------------- */

int plan__task_done(struct plan_run *r, const struct plan_gang *g, const struct kubeapi_pod *pod)
{
	if (arena_grow(&r->p->arena, &r->grp.done, r->grp.ndone, &r->grp.cap_done,
	               sizeof(*r->grp.done), 64) < 0)
		return -ENOMEM;
	r->grp.done[r->grp.ndone++] =
	    (struct plan_task_done){(uint32_t)(g - r->p->gangs), pod->task};
	return 0;
}

/* Members of task t that are bound, assumed or finished. O(bound members
 * + finished members with a task). */
static uint32_t task_have(const struct plan_run *r, const struct plan_gang *g, uint32_t t)
{
	uint32_t n = 0, gi = (uint32_t)(g - r->p->gangs);

	for (uint32_t b = g->bound_first; b; b = r->bound[b - 1].next)
		n += r->bound[b - 1].pod->task == t;
	for (size_t k = 0; k < r->grp.ndone; k++)
		n += r->grp.done[k].gang == gi && r->grp.done[k].task == t;
	return n;
}

static uint32_t task_pending(const struct plan_gang *g, uint32_t t)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < g->npending; k++)
		n += g->pending[k]->task == t;
	return n;
}

bool plan__tasks_short(struct plan_run *r, struct plan_gang *g)
{
	for (unsigned k = 0; k < g->group->ntasks; k++) {
		const struct kubeapi_min_task *t = &g->group->min_tasks[k];
		uint32_t have = task_have(r, g, t->task) + task_pending(g, t->task);

		if ((int64_t)have >= t->min)
			continue;
		struct plan_facts f = {.why = PLAN_WHY_MEMBERS,
		                       .task = plan__str(r, t->task),
		                       .have = have,
		                       .task_min = t->min};

		g->state = PLAN_INCOMPLETE;
		g->block = (struct plan_block){.why = PLAN_WHY_MEMBERS, .task = t->task};
		plan__say(r, g, &f);
		return true;
	}
	return false;
}

/* Move the pending members each task still needs to the front (oldest
 * first, the rest keeping their order) and return how many must be
 * placed together: at least need, at least those. O(tasks x pending). */
uint32_t plan__task_order(struct plan_run *r, struct plan_gang *g, uint32_t need)
{
	uint32_t front = 0;

	for (unsigned k = 0; k < g->group->ntasks; k++) {
		const struct kubeapi_min_task *t = &g->group->min_tasks[k];
		uint32_t have = task_have(r, g, t->task);
		int64_t want = (int64_t)t->min - have;

		for (uint32_t i = front; i < g->npending && want > 0; i++) {
			const struct kubeapi_pod *pod = g->pending[i];

			if (pod->task != t->task)
				continue;
			memmove(&g->pending[front + 1], &g->pending[front],
			        (i - front) * sizeof(*g->pending));
			g->pending[front++] = pod;
			want--;
		}
	}
	return front > need ? front : need;
}
