/*
 * Gang formation (plan.h, step 2): Muster's pods grouped by PodGroup of
 * either dialect (or alone), standing in for Volcano also its PodGroups
 * that have no pod yet; each gang with its queue (queue_resolve), its
 * priority (its PodGroup's priority class, else its members' highest)
 * and its submission time. A member whose PodGroup is missing makes its
 * gang INCOMPLETE; one no queue takes, NO_QUEUE.
 *
 * Cost: O(1) per pod (an id map by gang key), O(PodGroups) for Volcano's
 * groups without pods.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/plan_internal.h"

uint64_t plan_gang_key(uint32_t ns, uint32_t name, int single)
{
	return ((uint64_t)ns << 32 | name) | (single ? 1ull << 63 : 0);
}

uint64_t plan__gang_key_of(const struct kubeapi_pod *pod)
{
	return pod->group ? plan_gang_key(pod->ns, pod->group, 0)
	                  : plan_gang_key(pod->ns, pod->name, 1);
}

/* ---- gangs ----------------------------------------------------------- */

static const struct kubeapi_podgroup *find_group(const struct plan_run *r,
                                                 const struct kubeapi_pod *pod)
{
	uint64_t key = (uint64_t)pod->ns << 32 | pod->group;
	const struct idmap *first = r->in->groups, *second = r->in->vcgroups;
	const struct kubeapi_podgroup *g;

	/* The native field names a native PodGroup and nothing else: the
	 * CRDs' PodGroups of the same name are other objects. */
	if (pod->group_source == KUBEAPI_GROUP_NATIVE)
		return r->in->natgroups ? idmap_get(r->in->natgroups, key) : NULL;
	if (pod->group_source == KUBEAPI_GROUP_ANNOTATION) {
		first = r->in->vcgroups;
		second = r->in->groups;
	}
	g = first ? idmap_get(first, key) : NULL;
	return g ? g : second ? idmap_get(second, key) : NULL;
}

int32_t plan__pod_priority(const struct kubeapi_pod *pod)
{
	return pod->spec && pod->spec->has_priority ? pod->spec->priority : 0;
}

/* The queue label of a native PodGroup's Workload, or 0. */
static uint32_t workload_label(const struct plan_run *r, const struct kubeapi_podgroup *pg)
{
	const struct kubeapi_workload *w;

	if (!pg->workload || !r->in->workloads)
		return 0;
	w = idmap_get(r->in->workloads, (uint64_t)pg->ns << 32 | pg->workload);
	return w ? kubeapi_labels_get(w->muster, r->queue_label) : 0;
}

/* The queue of a pod in PodGroup pg (or alone, pg NULL), or of PodGroup
 * pg before it has pods (pod NULL), or QUEUE_NONE with res->reason saying
 * why. The label muster.dev/queue is read from the PodGroup, then (native)
 * its Workload, then the pod. */
int plan__queue_of(const struct plan_run *r, const struct kubeapi_podgroup *pg,
                   const struct kubeapi_pod *pod, struct queue_resolution *res)
{
	uint32_t label = 0, volcano = 0;

	if (pg)
		label = kubeapi_labels_get(pg->muster, r->queue_label);
	if (pg && !label)
		label = workload_label(r, pg);
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

	if ((g->queue = plan__queue_of(r, g->group, pod, &res)) != QUEUE_NONE)
		return;
	g->state = PLAN_NO_QUEUE;
	g->block.why = PLAN_WHY_NO_QUEUE;
	f.message = res.reason;
	plan__say(r, g, &f);
}

/* A PodGroup's priority: a native one's spec.priority, else its priority
 * class's value; INT32_MIN for none (the members' then count). */
static int32_t group_priority(const struct plan_run *r, const struct kubeapi_podgroup *pg)
{
	const struct kubeapi_priorityclass *pc;

	if (pg && pg->has_priority)
		return pg->priority;
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
	g->within = (struct policy_within){-1, POLICY_NO_DOMAIN};
	if (idmap_put(&r->by_group, key, (void *)(uintptr_t)p->ngangs) < 0)
		return NULL;
	return g;
}

/* The topology level a PodGroup's constraint names: its index, nlevels
 * when the table has none of that key, -1 for no constraint. */
static int constraint_level(const struct plan_run *r, const struct kubeapi_podgroup *pg)
{
	const struct policy_nodes *t = &r->p->nodes;
	unsigned l = 0;

	if (!pg->topology_key)
		return -1;
	while (l < t->nlevels && t->level[l].key != pg->topology_key)
		l++;
	return (int)l;
}

/* What gang g takes from its PodGroup pg. */
static void use_group(const struct plan_run *r, struct plan_gang *g,
                      const struct kubeapi_podgroup *pg)
{
	g->group = pg;
	g->within.level = constraint_level(r, pg);
	g->ran = plan__group_ran(r, pg);
	g->min_member = pg->min_member > 0 ? (uint32_t)pg->min_member : 1;
	g->submitted_s = pg->created_s;
	g->priority = group_priority(r, pg);
	g->fixed_priority = g->priority != INT32_MIN;
}

/* A member of a native PodGroup whose policy is basic: scheduled pod by
 * pod, as kube-scheduler does, so a gang of its own (taking the group's
 * priority). The Job controller gives every Job such a group unless the
 * Job asks for a gang. */
static const struct kubeapi_podgroup *basic_group(const struct plan_run *r,
                                                  const struct kubeapi_pod *pod)
{
	const struct kubeapi_podgroup *pg;

	if (!pod->group || pod->group_source != KUBEAPI_GROUP_NATIVE)
		return NULL;
	pg = find_group(r, pod);
	return pg && pg->basic ? pg : NULL;
}

/* The gang pod belongs to, created on first sight. NULL: out of memory. */
struct plan_gang *plan__gang_of(struct plan_run *r, const struct kubeapi_pod *pod)
{
	struct plan *p = r->p;
	const struct kubeapi_podgroup *basic = basic_group(r, pod);
	uint32_t group = basic ? 0 : pod->group;
	uint64_t key =
	    group ? plan_gang_key(pod->ns, group, 0) : plan_gang_key(pod->ns, pod->name, 1);
	uintptr_t at = (uintptr_t)idmap_get(&r->by_group, key);
	const struct kubeapi_podgroup *pg;
	struct plan_gang *g;

	if (at)
		return &p->gangs[at - 1];
	if (!(g = new_gang(r, key, pod->ns, group ? group : pod->name)))
		return NULL;
	g->submitted_s = pod->created_s;
	g->enqueued = !group; /* a single pod has no minResources */
	if (basic) {
		g->priority = group_priority(r, basic);
		g->fixed_priority = g->priority != INT32_MIN;
	} else if (group) {
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
