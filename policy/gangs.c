/*
 * Gang formation (plan.h, step 2): Muster's pods grouped by PodGroup of
 * either dialect (or alone), standing in for Volcano also its PodGroups
 * that have no pod yet; each gang with its queue (queue_resolve), its
 * priority (its PodGroup's priority class, else its members' highest)
 * and its submission time. A member whose PodGroup is missing makes its
 * gang INCOMPLETE; one no queue takes, NO_QUEUE.
 *
 * What a new record takes from the PodGroup, the first pod met, the
 * queues and the priority classes (struct plan_gang_facts) is kept
 * across cycles with the gang's entry in plan_memory.gangs, which also
 * indexes this cycle's records: while none of those changed (the input
 * names the pods and PodGroups that did), a record is made from the
 * entry alone. Reading a gang's pod and PodGroup and resolving its queue
 * was a fifth of a steady cycle at 50,000 nodes, in cache misses.
 *
 * Cost: O(1) per pod (an id map by gang key), O(PodGroups) for Volcano's
 * groups without pods; O(changes) a cycle to forget facts; every 32
 * cycles a pass over the entries to drop the gangs not met since.
 * Memory: an entry (about 90 bytes with the map's slot) per gang.
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

/* A record's defaults before anything is known of its gang. */
static void gang_init(struct plan_gang *g, uint64_t key, uint32_t ns, uint32_t name)
{
	memset(g, 0, sizeof(*g));
	g->key = key;
	g->ns = ns;
	g->name = name;
	g->priority = INT32_MIN;
	g->queue = QUEUE_NONE;
	g->state = PLAN_RUNNING;
	g->min_member = 1;
	g->within = (struct policy_within){-1, POLICY_NO_DOMAIN};
}

/* A new gang record under key, indexed: its kept entry e when the
 * caller has it (one probe of the map, not two), else the one under key,
 * made on first sight with no facts. NULL: out of memory. */
static struct plan_gang *new_gang(struct plan_run *r, uint64_t key, uint32_t ns, uint32_t name,
                                  struct plan_kept_gang *e)
{
	struct plan *p = r->p;
	struct plan_gangs_kept *m = &r->keep->gangs;
	struct plan_kept_gang **slot;
	struct plan_gang *g;

	if (arena_grow(&p->arena, &p->gangs, p->ngangs, &r->cap_gangs, sizeof(*p->gangs), 1024))
		return NULL;
	if (!e) {
		if (!(slot = (struct plan_kept_gang **)idmap_ref(&m->map, key)) ||
		    (!*slot && !(*slot = calloc(1, sizeof(**slot)))))
			return NULL;
		e = *slot;
	}
	/* Absent from the last cycle: it is seen waiting afresh, and goes
	 * through the gate again. */
	if (e->cycle + 1 != m->cycle) {
		e->seen = 0;
		e->enqueued = 0;
	}
	e->cycle = e->met = m->cycle;
	e->index = (uint32_t)p->ngangs;
	g = &p->gangs[p->ngangs++];
	gang_init(g, key, ns, name);
	g->kept = e;
	g->kept_enqueued = e->enqueued;
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
	g->group_tasks = pg->ntasks;
	g->group_runtime = r->runtime_key ? kubeapi_labels_get(pg->muster, r->runtime_key) : 0;
	g->group_gate = (uint8_t)((pg->min_resources ? PLAN_GATE_MIN_RESOURCES : 0) |
	                          (pg->dialect == KUBEAPI_PG_VOLCANO && r->phase_inqueue &&
	                                   pg->status.phase == r->phase_inqueue
	                               ? PLAN_GATE_INQUEUE
	                               : 0));
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

/* Record g (gang_init()'s) as pod, the first member met, makes it: its
 * PodGroup's facts (basic: the native PodGroup of a pod scheduled on its
 * own), its queue, and why it cannot be planned if so. */
static void first_sight(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *pod,
                        const struct kubeapi_podgroup *basic)
{
	const struct kubeapi_podgroup *pg;
	bool group = !basic && pod->group;

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
}

/* The facts first_sight() gave record g. */
static struct plan_gang_facts facts_of(const struct plan_gang *g)
{
	return (struct plan_gang_facts){
	    .group = g->group,
	    .submitted_s = g->submitted_s,
	    .queue = g->queue,
	    .priority = g->priority,
	    .min_member = g->min_member,
	    .within_level = g->within.level,
	    .group_runtime = g->group_runtime,
	    .fixed_priority = g->fixed_priority,
	    .enqueued = g->enqueued,
	    .ran = g->ran,
	    .group_tasks = g->group_tasks,
	    .group_gate = g->group_gate,
	};
}

static bool same_facts(const struct plan_gang_facts *a, const struct plan_gang_facts *b)
{
	return a->group == b->group && a->submitted_s == b->submitted_s && a->queue == b->queue &&
	       a->priority == b->priority && a->min_member == b->min_member &&
	       a->within_level == b->within_level && a->group_runtime == b->group_runtime &&
	       a->fixed_priority == b->fixed_priority && a->enqueued == b->enqueued &&
	       a->ran == b->ran && a->group_tasks == b->group_tasks &&
	       a->group_gate == b->group_gate;
}

static struct plan_kept_gang *kept(const struct plan_run *r, uint64_t key)
{
	return idmap_get(&r->keep->gangs.map, key);
}

struct plan_gang *plan__gang_this_cycle(struct plan_run *r, uint64_t key)
{
	struct plan_kept_gang *e = kept(r, key);

	return e && e->cycle == r->keep->gangs.cycle ? &r->p->gangs[e->index] : NULL;
}

void plan__gang_prefetch(const struct plan_run *r, uint64_t key, bool group)
{
	idmap_prefetch(&r->keep->gangs.map, key);
	/* A PodGroup gang's key is its PodGroup's in the CRD maps (a native
	 * PodGroup's pods have no key in the table). */
	if (!group || key >> 63)
		return;
	if (r->in->groups)
		idmap_prefetch(r->in->groups, key);
	if (r->in->vcgroups)
		idmap_prefetch(r->in->vcgroups, key);
}

void plan__group_prefetch(const struct plan_run *r, uint64_t key)
{
	const struct kubeapi_podgroup *pg = NULL;

	if (key >> 63) /* a single pod's */
		return;
	if (r->in->groups)
		pg = idmap_get(r->in->groups, key);
	if (!pg && r->in->vcgroups)
		pg = idmap_get(r->in->vcgroups, key);
	if (pg) { /* use_group() reads up to the status, two or three lines */
		__builtin_prefetch(pg);
		__builtin_prefetch((const char *)pg + 64);
		__builtin_prefetch(&pg->status.phase);
	}
}

long plan__gang_index(const struct plan_run *r, uint64_t key)
{
	const struct plan_kept_gang *e = kept(r, key);

	return e && e->cycle == r->keep->gangs.cycle ? (long)e->index : -1;
}

/* The gang pod belongs to, created on first sight. NULL: out of memory. */
struct plan_gang *plan__gang_of(struct plan_run *r, const struct kubeapi_pod *pod)
{
	const struct kubeapi_podgroup *basic = basic_group(r, pod);
	uint32_t group = basic ? 0 : pod->group;
	uint64_t key =
	    group ? plan_gang_key(pod->ns, group, 0) : plan_gang_key(pod->ns, pod->name, 1);
	struct plan_kept_gang *e = kept(r, key);
	struct plan_gang *g;

	if (e && e->cycle == r->keep->gangs.cycle)
		return &r->p->gangs[e->index];
	if (!(g = new_gang(r, key, pod->ns, group ? group : pod->name, e)))
		return NULL;
	first_sight(r, g, pod, basic);
	/* A gang that waits for its PodGroup or a queue says so in words of
	 * this cycle: it is worked out again every cycle. */
	e = g->kept;
	e->facts = facts_of(g);
	e->epoch = g->state == PLAN_RUNNING ? r->keep->gangs.epoch : 0;
	return g;
}

struct plan_gang *plan__gang_of_key(struct plan_run *r, uint64_t key, const struct kubeapi_pod *pod)
{
	return plan__gang_of_entry(r, kept(r, key), key, pod);
}

struct plan_gang *plan__gang_of_entry(struct plan_run *r, struct plan_kept_gang *e, uint64_t key,
                                      const struct kubeapi_pod *pod)
{
	struct plan_gang *g;
	struct plan_gang_facts f;

	if (e && e->cycle == r->keep->gangs.cycle)
		return &r->p->gangs[e->index];
	if (!e || e->epoch != r->keep->gangs.epoch)
		return plan__gang_of(r, pod);
	f = e->facts;
	if (!(g = new_gang(r, key, (uint32_t)(key >> 32) & 0x7fffffffu, (uint32_t)key, e)))
		return NULL;
	g->group = f.group;
	g->submitted_s = f.submitted_s;
	g->queue = f.queue;
	g->priority = f.priority;
	g->min_member = f.min_member;
	g->within.level = f.within_level;
	g->fixed_priority = f.fixed_priority;
	g->enqueued = f.enqueued;
	g->ran = f.ran;
	g->group_tasks = f.group_tasks;
	g->group_gate = f.group_gate;
	g->group_runtime = f.group_runtime;
	if (r->in->check_state) { /* against facts worked out afresh */
		struct plan_gang fresh;
		struct plan_gang_facts now;

		gang_init(&fresh, key, g->ns, g->name);
		first_sight(r, &fresh, pod, NULL);
		now = facts_of(&fresh);
		if (fresh.state != PLAN_RUNNING || !same_facts(&now, &f))
			r->p->stats.state_mismatches++;
	}
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
		if (plan__gang_index(r, key) >= 0)
			continue;
		if (!(g = new_gang(r, key, pg->ns, pg->name, NULL)))
			return -ENOMEM;
		use_group(r, g, pg);
		resolve_queue(r, g, NULL);
	}
	return 0;
}

int plan__single_queue(struct plan_run *r, uint64_t key, const struct kubeapi_pod *pod)
{
	struct plan_gangs_kept *m = &r->keep->gangs;
	struct plan_kept_gang **e = (struct plan_kept_gang **)idmap_ref(&m->map, key);
	struct plan_gang fresh;
	struct plan_gang_facts f;

	if (e && *e && (*e)->epoch == m->epoch) {
		(*e)->met = m->cycle;
		if (r->in->check_state) { /* against facts worked out afresh */
			gang_init(&fresh, key, pod->ns, pod->name);
			first_sight(r, &fresh, pod, NULL);
			f = facts_of(&fresh);
			if (fresh.state != PLAN_RUNNING || !same_facts(&f, &(*e)->facts))
				r->p->stats.state_mismatches++;
		}
		return (*e)->facts.queue;
	}
	gang_init(&fresh, key, pod->ns, pod->name);
	first_sight(r, &fresh, pod, NULL);
	if (e && (*e || (*e = calloc(1, sizeof(**e))))) {
		(*e)->facts = facts_of(&fresh);
		(*e)->epoch = fresh.state == PLAN_RUNNING ? m->epoch : 0;
		(*e)->met = m->cycle;
	}
	return fresh.queue;
}

/* ---- what is kept across cycles --------------------------------------- */

/* Every this many cycles the entries of gangs not met since are freed. */
#define SWEEP_EVERY 32

void plan__gang_touched(struct plan_run *r, uint64_t key)
{
	struct plan_kept_gang *e = key ? kept(r, key) : NULL;

	if (e) {
		e->epoch = 0;
		plan__run_drop(r, e);
	}
}

/* A hash of the node table's level keys: a gang's constraint level
 * (use_group()) is an index among them. */
static uint64_t levels_of(const struct policy_nodes *t)
{
	uint64_t h = t->nlevels;

	for (unsigned k = 0; k < t->nlevels; k++)
		h = h * 0x100000001b3ull ^ t->level[k].key;
	return h;
}

int plan__gangs_start(struct plan_run *r)
{
	struct plan_gangs_kept *m = &r->keep->gangs;
	const struct plan_input *in = r->in;
	uint64_t levels = levels_of(&r->p->nodes);

	m->cycle++;
	if (!in->pods_known || !in->groups_known || r->p->stats.pods_rebuilt ||
	    m->config != in->config_gen || m->levels != levels || !m->epoch) {
		m->epoch++; /* every fact kept is forgotten */
		m->config = in->config_gen;
		m->levels = levels;
	}
	m->forgot = m->epoch != m->last_epoch; /* a failed cycle's bump too */
	m->last_epoch = m->epoch;
	if (m->forgot)
		return 0;
	for (unsigned s = 0; s < 3; s++)
		for (size_t k = 0; k < in->ngroup_changes[s]; k++)
			plan__gang_touched(r,
			                   plan_gang_key((uint32_t)(in->group_changes[s][k] >> 32),
			                                 (uint32_t)in->group_changes[s][k], 0));
	return 0;
}

static void kept_free(struct plan_kept_gang *e)
{
	if (e)
		free(e->prefix);
	free(e);
}

void plan__gangs_free(struct plan_gangs_kept *m)
{
	const struct idmap_slot *e;

	IDMAP_FOREACH(&m->map, i, e)
		kept_free(e->value);
	idmap_free(&m->map);
}

int plan__gang_prefix(struct plan_run *r, struct plan_gang *g)
{
	struct plan_kept_gang *e = g->kept;
	char buf[1024];
	size_t n;

	if (e->prefix)
		return 0;
	n = plan_words_prefix(plan__str(r, g->ns), plan__str(r, g->name), buf, sizeof(buf));
	if (!(e->prefix = malloc(n + 1)))
		return -ENOMEM;
	memcpy(e->prefix, buf, n + 1);
	e->prefix_len = (uint32_t)n;
	return 0;
}

void plan__gangs_end(struct plan_run *r, int rc)
{
	struct plan_gangs_kept *m = &r->keep->gangs;
	const struct idmap_slot *e;
	uint64_t *gone;
	size_t n = 0;

	if (rc < 0)
		m->epoch++; /* the changes given may not have been filed */
	if (m->cycle % SWEEP_EVERY || !m->map.n || !(gone = malloc(m->map.n * sizeof(*gone))))
		return;
	IDMAP_FOREACH(&m->map, i, e) {
		const struct plan_kept_gang *v = e->value; /* NULL: its calloc() failed */

		if (v && v->met == m->cycle)
			continue;
		gone[n++] = e->key;
		/* Not met, so in no walk's list of runs; and should one be,
		 * its run no longer names it. */
		if (v && v->run && v->run_layout == r->keep->pods.layout)
			v->run->entry = NULL;
	}
	for (size_t k = 0; k < n; k++)
		kept_free(idmap_del(&m->map, gone[k]));
	free(gone);
}
