/*
 * What a cycle plans over (plan.h, steps 1 to 3): the node table with
 * every bound or assumed pod counted out of its node, the gangs (Muster's
 * pods grouped by PodGroup of either dialect, or alone) with their queue,
 * priority and submission time, the usage of every queue counted again
 * from what runs, and each gang's pending members in order.
 *
 * Cost: O(N log N) to sort the nodes, O(P x depth x slots) to count pods
 * and usage, O(G x members log members) to order the pending.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "policy/plan_internal.h"

uint64_t plan_gang_key(uint32_t ns, uint32_t name, int single)
{
	return ((uint64_t)ns << 32 | name) | (single ? 1ull << 63 : 0);
}

/* ---- amounts --------------------------------------------------------- */

void plan__add_amounts(const struct plan_run *r, int64_t *req, const struct kubeapi_res *e,
                       size_t n, uint16_t f)
{
	int64_t amount[CONFIG_MAX_SLOTS] = {0};

	for (size_t k = 0; k < r->nres_cfg; k++)
		for (size_t i = 0; r->res_map[k] >= 0 && i < n; i++)
			if (e[i].res == (unsigned)r->res_map[k])
				amount[k] = e[i].amount;
	queue_set_add_request(r->in->qs, req, amount, f == POLICY_NO_FLAVOR ? CONFIG_NO_FLAVOR : f);
}

/* Add pod spec s, placed on a node of flavor f, to the slot vector req. */
void plan__add_pod(const struct plan_run *r, int64_t *req, const struct kubeapi_podspec *s,
                   uint16_t f)
{
	plan__add_amounts(r, req, kubeapi_podspec_requests(s), s->nrequests, f);
}

void plan__slot_name(const struct plan_run *r, unsigned slot, char *buf, size_t len)
{
	const struct queue_slot *s = queue_set_slot(r->in->qs, slot);

	if (s->flavor == CONFIG_NO_FLAVOR)
		snprintf(buf, len, "%s", r->cfg->resources.v[s->resource]);
	else
		snprintf(buf, len, "%s@%s", r->cfg->resources.v[s->resource],
		         r->cfg->flavors[s->flavor].name);
}

/* ---- nodes ----------------------------------------------------------- */

static int by_name(const void *a, const void *b, void *strs)
{
	const struct kubeapi_node *x = *(const struct kubeapi_node *const *)a;
	const struct kubeapi_node *y = *(const struct kubeapi_node *const *)b;

	return strcmp(intern_str(strs, x->name), intern_str(strs, y->name));
}

/* Nodes in name order, so that equal clusters place equally whatever the
 * order the watch delivered them in. */
int plan__build_nodes(struct plan_run *r)
{
	const struct idmap *m = r->in->nodes;
	const struct kubeapi_node **v = arena_alloc(&r->p->arena, (m->n + 1) * sizeof(*v));
	const struct idmap_slot *e;
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	IDMAP_FOREACH(m, i, e)
		v[n++] = e->value;
	qsort_r(v, n, sizeof(*v), by_name, r->strs);
	r->p->stats.nodes = n;
	return policy_nodes_build(&r->p->nodes, &r->p->arena, r->in->model, r->cfg, v, n);
}

/* ---- gangs ----------------------------------------------------------- */

static const struct kubeapi_podgroup *find_group(const struct plan_run *r,
                                                 const struct kubeapi_pod *pod)
{
	uint64_t key = (uint64_t)pod->ns << 32 | pod->group;
	const struct idmap *first = r->in->groups, *second = r->in->vcgroups;
	const struct kubeapi_podgroup *g;

	if (pod->group_source == KUBEAPI_GROUP_ANNOTATION) {
		first = r->in->vcgroups;
		second = r->in->groups;
	}
	g = first ? idmap_get(first, key) : NULL;
	return g ? g : second ? idmap_get(second, key) : NULL;
}

static int32_t pod_priority(const struct kubeapi_pod *pod)
{
	return pod->spec && pod->spec->has_priority ? pod->spec->priority : 0;
}

/* The queue of a pod in PodGroup pg (or alone, pg NULL), or of PodGroup
 * pg before it has pods (pod NULL), or QUEUE_NONE with res->reason saying
 * why. */
static int queue_of(const struct plan_run *r, const struct kubeapi_podgroup *pg,
                    const struct kubeapi_pod *pod, struct queue_resolution *res)
{
	uint32_t label = 0, volcano = 0;

	if (pg)
		label = kubeapi_labels_get(pg->muster, r->queue_label);
	if (!label && pod)
		label = kubeapi_labels_get(pod->muster, r->queue_label);
	if (pg && pg->dialect == KUBEAPI_PG_VOLCANO)
		volcano = pg->queue;
	queue_resolve(r->in->qs, label ? plan__str(r, label) : NULL,
	              volcano ? plan__str(r, volcano) : NULL, plan__str(r, pod ? pod->ns : pg->ns),
	              res);
	return res->node;
}

/* pod: a member, or NULL for a PodGroup without pods. */
static void resolve_queue(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *pod)
{
	struct queue_resolution res;
	struct plan_facts f = {.why = PLAN_WHY_NO_QUEUE};

	if ((g->queue = queue_of(r, g->group, pod, &res)) != QUEUE_NONE)
		return;
	g->state = PLAN_NO_QUEUE;
	g->block.why = PLAN_WHY_NO_QUEUE;
	f.message = res.reason;
	plan__say(r, g, &f);
}

static int32_t group_priority(const struct plan_run *r, const struct kubeapi_podgroup *pg)
{
	const struct kubeapi_priorityclass *pc;

	if (!pg || !pg->priority_class || !r->in->priorityclasses)
		return INT32_MIN;
	pc = idmap_get(r->in->priorityclasses, pg->priority_class);
	return pc ? pc->value : INT32_MIN;
}

/* A new gang record under key, indexed. NULL: out of memory. */
static struct plan_gang *new_gang(struct plan_run *r, uint64_t key, uint32_t ns, uint32_t name)
{
	struct plan *p = r->p;
	struct plan_gang *g;

	if (arena_grow(&p->arena, &p->gangs, p->ngangs, &r->cap_gangs, sizeof(*p->gangs), 1024) < 0)
		return NULL;
	g = &p->gangs[p->ngangs++];
	memset(g, 0, sizeof(*g));
	g->key = key;
	g->ns = ns;
	g->name = name;
	g->priority = INT32_MIN;
	g->queue = QUEUE_NONE;
	g->state = PLAN_RUNNING;
	g->min_member = 1;
	if (idmap_put(&r->by_group, key, (void *)(uintptr_t)p->ngangs) < 0)
		return NULL;
	return g;
}

/* What gang g takes from its PodGroup pg. */
static void use_group(const struct plan_run *r, struct plan_gang *g,
                      const struct kubeapi_podgroup *pg)
{
	g->group = pg;
	g->ran = plan__group_ran(r, pg);
	g->min_member = pg->min_member > 0 ? (uint32_t)pg->min_member : 1;
	g->submitted_s = pg->created_s;
	g->priority = group_priority(r, pg);
	g->fixed_priority = g->priority != INT32_MIN;
}

/* The gang pod belongs to, created on first sight. NULL: out of memory. */
static struct plan_gang *gang_of(struct plan_run *r, const struct kubeapi_pod *pod)
{
	struct plan *p = r->p;
	uint64_t key = pod->group ? plan_gang_key(pod->ns, pod->group, 0)
	                          : plan_gang_key(pod->ns, pod->name, 1);
	uintptr_t at = (uintptr_t)idmap_get(&r->by_group, key);
	const struct kubeapi_podgroup *pg;
	struct plan_gang *g;

	if (at)
		return &p->gangs[at - 1];
	if (!(g = new_gang(r, key, pod->ns, pod->group ? pod->group : pod->name)))
		return NULL;
	g->submitted_s = pod->created_s;
	g->enqueued = !pod->group; /* a single pod has no minResources */
	if (pod->group) {
		if ((pg = find_group(r, pod))) {
			use_group(r, g, pg);
		} else {
			struct plan_facts f = {.why = PLAN_WHY_MEMBERS, .no_group = true};

			g->state = PLAN_INCOMPLETE;
			g->block.why = PLAN_WHY_MEMBERS;
			plan__say(r, g, &f);
		}
	}
	resolve_queue(r, g, pod);
	return g;
}

/* Standing in for Volcano: its PodGroups that have no pod of Muster's yet
 * are gangs too, so they can be enqueued (operators such as Kubeflow's
 * create pods only once their PodGroup is Inqueue). One that has run and
 * lost its pods is left as it is. */
int plan__group_gangs(struct plan_run *r)
{
	const struct idmap *m = r->in->vcgroups;
	const struct idmap_slot *e;
	struct plan_gang *g;

	if (!r->in->volcano_groups || !m)
		return 0;
	IDMAP_FOREACH(m, i, e) {
		const struct kubeapi_podgroup *pg = e->value;
		uint64_t key;

		if (plan__group_ran(r, pg))
			continue;
		key = plan_gang_key(pg->ns, pg->name, 0);
		if (idmap_get(&r->by_group, key))
			continue;
		if (!(g = new_gang(r, key, pg->ns, pg->name)))
			return -ENOMEM;
		use_group(r, g, pg);
		resolve_queue(r, g, NULL);
	}
	return 0;
}

static bool is_ours(const struct plan_run *r, const struct kubeapi_pod *pod)
{
	for (size_t k = 0; pod->spec && k < r->in->nschedulers; k++)
		if (pod->spec->scheduler == r->in->schedulers[k])
			return true;
	return false;
}

/* The node a pod is on or assumed on: its name id, or 0. */
static uint32_t node_of(const struct plan_run *r, const struct kubeapi_pod *pod)
{
	if (pod->node)
		return pod->node;
	if (r->in->assumed)
		return (uint32_t)(uintptr_t)idmap_get(r->in->assumed,
		                                      (uint64_t)pod->ns << 32 | pod->name);
	return 0;
}

static int add_bound(struct plan_run *r, const struct kubeapi_pod *pod, long node,
                     struct plan_gang *g)
{
	struct plan_bound *b;

	if (arena_grow(&r->p->arena, &r->bound, r->nbound, &r->cap_bound, sizeof(*b), 4096) < 0)
		return -ENOMEM;
	b = &r->bound[r->nbound++];
	b->pod = pod;
	b->node = (uint32_t)node;
	b->gang = g ? (uint32_t)(g - r->p->gangs) : UINT32_MAX;
	b->next = 0;
	if (g) {
		b->next = g->bound_first;
		g->bound_first = (uint32_t)r->nbound;
	}
	return 0;
}

/* A bound (or assumed) pod: out of its node's free resources, and, when
 * Muster's, into its gang (a single pod is a gang of one: it may be a
 * victim) and its queue's usage. Every pod on a known node is remembered
 * for preemption and for the reservations' timeline. */
static int count_bound(struct plan_run *r, const struct kubeapi_pod *pod, uint32_t node)
{
	long i = policy_nodes_find(&r->p->nodes, node);
	uint16_t flavor = i >= 0 ? r->p->nodes.flavor[i] : POLICY_NO_FLAVOR;
	int64_t req[QUEUE_MAX_SLOTS] = {0};
	struct queue_resolution res;
	struct plan_gang *g = NULL;
	int rc, queue = QUEUE_NONE;

	if (i >= 0)
		policy_nodes_use(&r->p->nodes, (size_t)i, pod->spec, -1);
	r->p->stats.bound_pods++;
	if (is_ours(r, pod) && (pod->group || r->preemption)) {
		if (!(g = gang_of(r, pod)))
			return -ENOMEM;
		g->bound++;
		g->running += pod->phase == KUBEAPI_POD_RUNNING;
		if (!g->fixed_priority && pod_priority(pod) > g->priority)
			g->priority = pod_priority(pod); /* what a preemptor weighs */
		queue = g->queue;
	} else if (is_ours(r, pod)) {
		/* Without preemption a bound pod on its own is never looked at
		 * again: its queue is all it needs, not a gang record. */
		queue = queue_of(r, NULL, pod, &res);
	}
	if (i >= 0 && (rc = add_bound(r, pod, i, g)) < 0)
		return rc;
	if (queue == QUEUE_NONE)
		return 0;
	plan__add_pod(r, req, pod->spec, flavor);
	return queue_tree_charge(r->tree, queue, req, +1);
}

int plan__count_pods(struct plan_run *r)
{
	const struct idmap_slot *e;
	int rc;

	IDMAP_FOREACH(r->in->pods, s, e) {
		const struct kubeapi_pod *pod = e->value;
		uint32_t node;
		struct plan_gang *g;

		if (!pod->spec)
			continue;
		if (pod->phase == KUBEAPI_POD_SUCCEEDED || pod->phase == KUBEAPI_POD_FAILED) {
			/* Finished members hold nothing, but count for the
			 * PodGroup's status and toward minMember. */
			if (pod->group && is_ours(r, pod)) {
				if (!(g = gang_of(r, pod)))
					return -ENOMEM;
				g->succeeded += pod->phase == KUBEAPI_POD_SUCCEEDED;
				g->failed += pod->phase == KUBEAPI_POD_FAILED;
				if (pod->task && (rc = plan__task_done(r, g, pod)) < 0)
					return rc;
			}
			continue;
		}
		r->p->stats.pods++;
		node = node_of(r, pod);
		if (node) {
			if ((rc = count_bound(r, pod, node)) < 0)
				return rc;
			continue;
		}
		if (!is_ours(r, pod) || pod->deleting)
			continue;
		if (!(g = gang_of(r, pod)))
			return -ENOMEM;
		g->npending++;
		if (!g->fixed_priority && pod_priority(pod) > g->priority)
			g->priority = pod_priority(pod);
	}
	return 0;
}

static int by_age(const void *a, const void *b, void *strs)
{
	const struct kubeapi_pod *x = *(const struct kubeapi_pod *const *)a;
	const struct kubeapi_pod *y = *(const struct kubeapi_pod *const *)b;

	(void)strs;
	if (x->created_s != y->created_s)
		return x->created_s < y->created_s ? -1 : 1;
	/* Pods of one gang are mostly created in the same second; their name
	 * ids give a stable order without reading the strings. */
	return (x->name > y->name) - (x->name < y->name);
}

/* Second pass: each gang's pending pods, oldest first. */
int plan__collect_pending(struct plan_run *r)
{
	const struct idmap *m = r->in->pods;
	const struct idmap_slot *e;
	struct plan *p = r->p;

	for (size_t k = 0; k < p->ngangs; k++) {
		struct plan_gang *g = &p->gangs[k];

		g->pending =
		    g->npending ? arena_alloc(&p->arena, g->npending * sizeof(*g->pending)) : NULL;
		if (g->npending && !g->pending)
			return -ENOMEM;
		g->npending = 0;
	}
	IDMAP_FOREACH(m, s, e) {
		const struct kubeapi_pod *pod = e->value;
		struct plan_gang *g;

		if (!pod->spec || pod->phase == KUBEAPI_POD_SUCCEEDED ||
		    pod->phase == KUBEAPI_POD_FAILED || node_of(r, pod) || !is_ours(r, pod) ||
		    pod->deleting)
			continue;
		if (!(g = gang_of(r, pod)))
			return -ENOMEM;
		g->pending[g->npending++] = pod;
	}
	for (size_t k = 0; k < p->ngangs; k++)
		if (p->gangs[k].npending > 1)
			qsort_r(p->gangs[k].pending, p->gangs[k].npending,
			        sizeof(*p->gangs[k].pending), by_age, r->strs);
	return 0;
}

void plan__request(const struct plan_run *r, int64_t *req, const struct kubeapi_pod *const *pods,
                   size_t n)
{
	memset(req, 0, r->nslots * sizeof(*req));
	for (size_t k = 0; k < n; k++)
		plan__add_pod(r, req, pods[k]->spec, POLICY_NO_FLAVOR);
}
