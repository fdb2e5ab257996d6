/*
 * What a cycle plans over (plan.h, steps 1 and 3): the node table with
 * every bound or assumed pod counted out of its node, the usage of every
 * queue counted again from what runs, and each gang's pending members in
 * order (the gangs themselves are gangs.c's); and the amounts a pod asks
 * per queue slot.
 *
 * The node table and the bound pods' counts are kept across cycles
 * (plan_memory.base, .counted): a cycle copies them, counting again only
 * the nodes whose pods changed, and counts the assumed pods into its
 * copy. So is each waiting gang's run of waiting records (struct
 * plan_kept_run): a cycle files those members from it without reading
 * the records, until one of them changes or the gang is bound.
 *
 * Cost: O(N log N) to sort the nodes when they changed, else O(N x
 * resources) in copies; O(P) for the walk of the pod table, but a
 * waiting member of a kept run costs only the lookahead's load and
 * compare (the first cycle, and one after records moved, keep the runs
 * afresh), O(changed nodes' pods) to count them again, O(P x depth x
 * slots / run length) for the queues' usage; O(G x members log members)
 * to order the pending of gangs with a member that came late. Memory: a
 * kept run is 40 bytes and 8 a member.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "base/keyfilter.h"
#include "policy/plan_internal.h"

/* ---- amounts --------------------------------------------------------- */

/* plan__add_amounts(), times times. */
static void add_amounts_times(const struct plan_run *r, int64_t *req, const struct kubeapi_res *e,
                              size_t n, uint16_t f, int64_t times)
{
	int64_t amount[CONFIG_MAX_SLOTS];

	/* Only the configured resources' amounts are set and read (this is
	 * asked for every gang every cycle; zeroing all 64 slots was 512
	 * bytes a call for a vector of a few). */
	for (size_t k = 0; k < r->nres_cfg; k++) {
		amount[k] = 0;
		for (size_t i = 0; r->res_map[k] >= 0 && i < n; i++)
			if (e[i].res == (unsigned)r->res_map[k])
				amount[k] = e[i].amount * times;
	}
	queue_set_add_request(r->in->qs, req, amount, f == POLICY_NO_FLAVOR ? CONFIG_NO_FLAVOR : f);
}

void plan__add_amounts(const struct plan_run *r, int64_t *req, const struct kubeapi_res *e,
                       size_t n, uint16_t f)
{
	add_amounts_times(r, req, e, n, f, 1);
}

/* Memo slot m made spec s's on flavor f: false when out of memory. */
static bool slots_of(const struct plan_run *r, struct plan_slot_memo *m,
                     const struct kubeapi_podspec *s, uint16_t f)
{
	if (!m->v && !(m->v = arena_alloc(&r->p->arena, r->nslots * sizeof(*m->v))))
		return false;
	memset(m->v, 0, r->nslots * sizeof(*m->v));
	add_amounts_times(r, m->v, kubeapi_podspec_requests(s), s->nrequests, f, 1);
	m->spec = s;
	m->flavor = f;
	return true;
}

/* times pods of spec s, on a node of flavor f, into the slot vector req:
 * the spec's vector for one pod from the memo (worked out on a miss, in
 * the slot's own room), then a multiply and an add a slot. Each cycle
 * adds every gang's runs of pods this way; working the vector out from
 * the spec's requests each time (add_amounts_times()) was 4% of a steady
 * cycle's instructions at 20,000 nodes (callgrind). */
static void add_pods(const struct plan_run *r, int64_t *req, const struct kubeapi_podspec *s,
                     uint16_t f, int64_t times)
{
	struct plan_slot_memo *m =
	    r->slot_memo ? &r->slot_memo[((uintptr_t)s >> 6 ^ f) % PLAN_SLOT_MEMO] : NULL;

	if (!m || ((m->spec != s || m->flavor != f) && !slots_of(r, m, s, f))) {
		add_amounts_times(r, req, kubeapi_podspec_requests(s), s->nrequests, f, times);
		return;
	}
	for (size_t k = 0; k < r->nslots; k++)
		req[k] += m->v[k] * times;
}

/* Add pod spec s, placed on a node of flavor f, to the slot vector req. */
void plan__add_pod(const struct plan_run *r, int64_t *req, const struct kubeapi_podspec *s,
                   uint16_t f)
{
	add_pods(r, req, s, f, 1);
}

/* ---- nodes ----------------------------------------------------------- */

struct name_order {
	const struct kubeapi_node *const *v;
	const struct intern *strs;
};

static int by_name(const void *a, const void *b, void *arg)
{
	const struct name_order *o = arg;
	const struct kubeapi_node *x = o->v[*(const uint32_t *)a];
	const struct kubeapi_node *y = o->v[*(const uint32_t *)b];

	return strcmp(intern_str(o->strs, x->name), intern_str(o->strs, y->name));
}

/* The topology keys native PodGroups require, distinct, into keys[0..cap):
 * the table gets a constraint-only level for each the configuration does
 * not list. O(PodGroups). */
static size_t required_keys(const struct plan_run *r, uint32_t *keys, size_t cap)
{
	const struct idmap_slot *e;
	size_t n = 0;

	if (!r->in->natgroups)
		return 0;
	IDMAP_FOREACH(r->in->natgroups, i, e) {
		uint32_t key = ((const struct kubeapi_podgroup *)e->value)->topology_key;
		size_t k = 0;

		while (k < n && keys[k] != key)
			k++;
		if (key && k == n && n < cap)
			keys[n++] = key;
	}
	return n;
}

/* The nodes of the store, in name order, into out[0..n): the order the
 * last cycle sorted them into while the store holds the same keys in the
 * same slots (a node's name is its key), else sorted afresh and kept.
 * Sorting 100,000 names costs tens of milliseconds in cache misses on
 * the strings; the check is a pass over the keys. 0 or -ENOMEM. */
static int name_order(struct plan_run *r, const struct kubeapi_node **out, size_t *np, bool *kept)
{
	struct plan_nodeorder *o = &r->keep->nodes;
	const struct idmap *m = r->in->nodes;
	const struct kubeapi_node **v = arena_alloc(&r->p->arena, (m->n + 1) * sizeof(*v));
	const struct idmap_slot *e;
	bool same;
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	same = o->n == m->n;
	IDMAP_FOREACH(m, i, e) {
		same = same && o->keys[n] == e->key;
		v[n++] = e->value;
	}
	if (!same) {
		uint64_t *keys = realloc(o->keys, (n + 1) * sizeof(*keys));
		uint32_t *slot = keys ? realloc(o->slot, (n + 1) * sizeof(*slot)) : NULL;

		if (keys)
			o->keys = keys;
		if (!slot)
			return -ENOMEM;
		o->slot = slot;
		o->n = 0; /* until filled */
		n = 0;
		IDMAP_FOREACH(m, i, e) {
			o->keys[n] = e->key;
			o->slot[n] = (uint32_t)n;
			n++;
		}
		qsort_r(o->slot, n, sizeof(*o->slot), by_name, &(struct name_order){v, r->strs});
		o->n = n;
	}
	for (size_t k = 0; k < n; k++)
		out[k] = v[o->slot[k]];
	*np = n;
	*kept = same;
	return 0;
}

/* What the kept table was built under besides the nodes: the
 * configuration (its levels and flavors), the extra level keys, the
 * model's resources. */
static uint64_t base_sig(const struct plan_run *r, const uint32_t *keys, size_t nkeys)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint64_t part[4] = {r->in->config_gen, (uint64_t)(uintptr_t)r->cfg,
	                    (uint64_t)(uintptr_t)r->in->model,
	                    kubeapi_model_nresources(r->in->model)};

	for (size_t k = 0; k < 4; k++)
		h = (h ^ part[k]) * 0x100000001b3ull;
	for (size_t k = 0; k < nkeys; k++)
		h = (h ^ keys[k]) * 0x100000001b3ull;
	return h ^ nkeys;
}

/* Whether the kept table still stands for the nodes v[0..n) (in the
 * order it was built in: same_order): each changed node's row as a
 * build would make it. O(changes x (resources + levels)). */
static bool base_stands(const struct plan_run *r, uint64_t sig, bool same_order)
{
	const struct plan_nodebase *b = &r->keep->base;

	if (!b->valid || b->sig != sig || !same_order || !r->in->nodes_known)
		return false;
	for (size_t k = 0; k < r->in->nnode_changes; k++) {
		const struct kubeapi_node *node = idmap_get(r->in->nodes, r->in->node_changes[k]);
		long i;

		if (!node || (i = policy_nodes_find(&b->t, node->name)) < 0 ||
		    !policy_nodes_same_row(&b->t, (size_t)i, node))
			return false;
	}
	return true;
}

/* Nodes in name order, so that equal clusters place equally whatever the
 * order the watch delivered them in. */
int plan__build_nodes(struct plan_run *r)
{
	const struct kubeapi_node **v =
	    arena_alloc(&r->p->arena, (r->in->nodes->n + 1) * sizeof(*v));
	uint32_t keys[POLICY_MAX_LEVELS];
	size_t n = 0, nkeys = required_keys(r, keys, POLICY_MAX_LEVELS);
	struct plan_nodebase *b = &r->keep->base;
	uint64_t sig = base_sig(r, keys, nkeys);
	bool same_order;
	int rc;

	if (!v)
		return -ENOMEM;
	if ((rc = name_order(r, v, &n, &same_order)) < 0)
		return rc;
	r->p->stats.nodes = n;
	if (!base_stands(r, sig, same_order)) {
		r->p->stats.nodes_built = 1;
		policy_nodes_release(&b->t);
		arena_reset(&b->arena);
		b->valid = 0;
		if ((rc = policy_nodes_build(&b->t, &b->arena, r->in->model, r->cfg, keys, nkeys, v,
		                             n)) < 0)
			return rc;
		b->sig = sig;
		b->gen++;
		b->valid = 1;
	} else if (r->in->check_state) { /* every row against the node now */
		for (size_t k = 0; k < n; k++)
			r->p->stats.state_mismatches +=
			    k >= b->t.n || !policy_nodes_same_row(&b->t, k, v[k]);
		r->p->stats.state_mismatches += b->t.n != n;
	}
	/* Its rows are the kept counts' (counted_end() assigns them). */
	return policy_nodes_clone_shape(&r->p->nodes, &b->t, &r->p->arena);
}

bool plan__names_us(const struct plan_run *r, const struct kubeapi_pod *pod)
{
	for (size_t k = 0; pod->spec && k < r->in->nschedulers; k++)
		if (pod->spec->scheduler == r->in->schedulers[k])
			return true;
	return false;
}

/* A pod with scheduling gates is not a member yet, as kube-scheduler
 * does not queue it: it is not planned, holds no room, is not counted
 * toward minMember and gets no status; its gang's message counts it
 * (note_gated()). The gates are in the spec, so their removal is a new
 * record and the pod joins. */
bool plan__is_ours(const struct plan_run *r, const struct kubeapi_pod *pod)
{
	return plan__names_us(r, pod) && !pod->spec->gated;
}

/* A gated pod of Muster's in a PodGroup (not ours yet, plan__is_ours()):
 * noted for its gang's message, filed once the walk has made the gangs
 * (gated_filed()). O(1) amortized; only gated pods come here. */
static int note_gated(struct plan_run *r, const struct plan_pod *x)
{
	struct plan_memory *m = r->keep;

	if (!(x->flags & PLAN_POD_GROUP) || !plan__names_us(r, x->pod))
		return 0;
	if (m->ngated == m->cap_gated) {
		size_t cap = m->cap_gated ? m->cap_gated * 2 : 64;
		struct plan_gated *v = realloc(m->gated, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->gated = v;
		m->cap_gated = cap;
	}
	m->gated[m->ngated++] = (struct plan_gated){plan__gang_key_of(x->pod), x->pod->name};
	return 0;
}

/* Each noted gated pod counted in its gang, if its gang waits this cycle
 * (one made of gated pods alone has nothing to say: the API server has
 * given each pod PodScheduled=False, reason SchedulingGated). The first
 * noted is the one its message names. O(gated pods). */
static void gated_filed(struct plan_run *r)
{
	const struct plan_gated *n = r->keep->gated;

	for (size_t k = 0; k < r->keep->ngated; k++) {
		struct plan_gang *g = plan__gang_this_cycle(r, n[k].gang);

		if (g && g->gated++ == 0)
			g->gated_name = n[k].name;
	}
	r->keep->ngated = 0;
}

/* The node the pod of key `key` is assumed on (bound by an earlier
 * cycle, not yet seen so): its name id, or 0. The filter over the
 * assumed keys spares most waiting pods a probe of the map. */
static uint32_t assumed_node(const struct plan_run *r, const struct keyfilter *assumed,
                             uint64_t key)
{
	if (r->in->assumed && keyfilter_may(assumed, key))
		return (uint32_t)(uintptr_t)idmap_get(r->in->assumed, key);
	return 0;
}

/* The node a pod is on or assumed on: its name id, or 0. */
static uint32_t node_of(const struct plan_run *r, const struct keyfilter *assumed,
                        const struct plan_pod *x, uint64_t key)
{
	if (x->node)
		return x->node;
	return x->flags & PLAN_POD_OURS ? assumed_node(r, assumed, key) : 0;
}

/* A filter over the keys of the assumed binds. 0 or -ENOMEM. */
static int assumed_filter(const struct plan_run *r, struct keyfilter *f)
{
	const struct idmap_slot *e;

	if (keyfilter_init(f, r->in->assumed ? r->in->assumed->n : 0) < 0)
		return -ENOMEM;
	if (r->in->assumed)
		IDMAP_FOREACH(r->in->assumed, i, e)
			keyfilter_add(f, e->key);
	return 0;
}

/* The node table index of the node x is on or assumed on (name id node),
 * or -1: kept in the record while the table's names stay the same.
 *
 * An assumed pod's bind may not stand, so its index is a hint, taken when
 * the table's name there is still that node (plan_podtab.names, which
 * plan__podtab_nodes() made the table's): a lookup by name is a cache
 * miss, each cycle for each pod assumed, until the watch shows it bound
 * and its record is read again. (The bench's steady rounds each follow
 * a full read, which makes the records afresh: there every assumed pod
 * is looked up once a round all the same.) */
static long node_index(const struct plan_run *r, struct plan_pod *x, uint32_t node, bool kept)
{
	const struct plan_podtab *t = &r->keep->pods;
	long i;

	if (node != x->node) {
		if (x->index < t->nnames && t->names[x->index] == node)
			return (long)x->index;
		i = policy_nodes_find(&r->p->nodes, node);
		x->index = i >= 0 ? (uint32_t)i : PLAN_POD_STALE;
		return i;
	}
	if (kept && x->index != PLAN_POD_STALE)
		return x->index == PLAN_POD_NO_NODE ? -1 : (long)x->index;
	i = policy_nodes_find(&r->p->nodes, node);
	x->index = i >= 0 ? (uint32_t)i : PLAN_POD_NO_NODE;
	return i;
}

/* The gang of pod x of ours, made on first sight; *last is the one the
 * walk met before (a gang's records are mostly in a row). NULL: out of
 * memory. */
static struct plan_gang *gang_of(struct plan_run *r, const struct plan_pod *x, size_t *last)
{
	struct plan_gang *g;

	if (x->gang && *last < r->p->ngangs && r->p->gangs[*last].key == x->gang)
		return &r->p->gangs[*last];
	if ((g = x->gang ? plan__gang_of_key(r, x->gang, x->pod) : plan__gang_of(r, x->pod)))
		*last = (size_t)(g - r->p->gangs);
	return g;
}

/* Whether bound pod x of gang g (NULL: none) may have an end: a runtime
 * from its spec's activeDeadlineSeconds, its own or its PodGroup's
 * annotation, or a queue's default (timeline.c's runtime_in(), which
 * gives the rest none). A superset, cheap from what the walk holds:
 * every queue is taken to have a default when one has. */
static bool may_end(const struct plan_run *r, const struct plan_pod *x, const struct plan_gang *g)
{
	return r->queue_runtimes || (x->flags & PLAN_POD_RUNTIME) || (g && g->group_runtime) ||
	       x->spec->active_deadline_s > 0;
}

/* Pod x on node table index `node` into the cycle's bound pods (for
 * preemption and the timeline), and into the list of those that may
 * have an end. */
static int add_bound(struct plan_run *r, const struct plan_pod *x, long node,
                     const struct policy_held *held, struct plan_gang *g, int queue)
{
	struct plan_bound *b;
	bool ends = may_end(r, x, g);

	if (arena_grow(&r->p->arena, &r->bound, r->nbound, &r->cap_bound, sizeof(*b), 4096) < 0 ||
	    (ends && arena_grow(&r->p->arena, &r->may_end, r->nmay_end, &r->cap_may_end,
	                        sizeof(*r->may_end), 1024) < 0))
		return -ENOMEM;
	if (ends)
		r->may_end[r->nmay_end++] = (uint32_t)r->nbound;
	b = &r->bound[r->nbound++];
	b->pod = x->pod;
	b->spec = x->spec;
	b->held = held;
	b->node = (uint32_t)node;
	b->gang = g ? (uint32_t)(g - r->p->gangs) : UINT32_MAX;
	b->next = 0;
	b->queue = (int16_t)(queue >= INT16_MIN && queue <= INT16_MAX ? queue : QUEUE_NONE);
	b->runtime = (x->flags & PLAN_POD_RUNTIME) != 0;
	if (g && g->within.level >= 0 && (unsigned)g->within.level < r->p->nodes.nlevels)
		g->within.domain =
		    r->p->nodes
		        .domain[(size_t)node * r->p->nodes.nlevels + (unsigned)g->within.level];
	if (g) {
		b->next = g->bound_first;
		g->bound_first = (uint32_t)r->nbound;
	}
	return 0;
}

/* What the walk has counted toward one queue and not charged yet: a
 * gang's pods come in a row, so the queue tree is climbed once a run,
 * not once a pod. The usage a tree ends with does not hang on how its
 * charges were split (each node passes its parent the change in what it
 * draws, and those changes add up to the change over the whole run). */
struct charge {
	int queue; /* QUEUE_NONE: nothing counted */
	int64_t req[QUEUE_MAX_SLOTS];
	/* The run of pods of one spec on nodes of one flavor met last, not
	 * yet in req: added at once, times its length (the slot vector is
	 * linear in the pods), where adding each pod was a twentieth of a
	 * steady cycle. */
	const struct kubeapi_podspec *spec;
	uint16_t flavor;
	int64_t pods;
};

static void charge_run(const struct plan_run *r, struct charge *c)
{
	if (c->pods)
		add_pods(r, c->req, c->spec, c->flavor, c->pods);
	c->pods = 0;
}

static int charge_flush(struct plan_run *r, struct charge *c)
{
	int rc;

	charge_run(r, c);
	rc = c->queue == QUEUE_NONE ? 0 : queue_tree_charge(r->tree, c->queue, c->req, +1);
	c->queue = QUEUE_NONE;
	memset(c->req, 0, r->nslots * sizeof(c->req[0]));
	return rc;
}

/* A pod of spec s on a node of flavor f into queue's charge. */
static int charge_add(struct plan_run *r, struct charge *c, int queue,
                      const struct kubeapi_podspec *s, uint16_t f)
{
	int rc;

	if (queue != c->queue && (rc = charge_flush(r, c)) < 0)
		return rc;
	c->queue = queue;
	if (c->pods && (s != c->spec || f != c->flavor))
		charge_run(r, c);
	c->spec = s;
	c->flavor = f;
	c->pods++;
	return 0;
}

/* The queue of x, a bound pod of ours of no PodGroup: kept in its
 * record while the kept gangs' facts stand (a record read again drops
 * it), so a steady cycle reads neither the pod nor its gang's entry. */
static int single_queue(struct plan_run *r, struct plan_pod *x)
{
	int queue;

	if ((x->flags & PLAN_POD_QUEUED) && !r->keep->gangs.forgot) {
		if (r->in->check_state && plan__single_queue(r, x->gang, x->pod) != x->queue)
			r->p->stats.state_mismatches++;
		return x->queue;
	}
	queue = plan__single_queue(r, x->gang, x->pod);
	if (queue >= INT16_MIN && queue <= INT16_MAX) {
		x->queue = (int16_t)queue;
		x->flags |= PLAN_POD_QUEUED;
	}
	return queue;
}

/* ---- the counts kept across cycles (plan_memory.counted) ------------- */

/* Past this many touched names the next cycle counts every node again
 * (a million names: 4 MB, about what counting every pod costs then). */
#define TOUCHED_MAX (1u << 20)

void plan__node_touched(struct plan_run *r, uint32_t name)
{
	struct plan_counted *c = &r->keep->counted;

	if (!name || c->over || !c->valid)
		return;
	if (c->nnames == c->cap_names) {
		size_t cap = c->cap_names ? c->cap_names * 2 : 1024;
		uint32_t *v = cap <= TOUCHED_MAX ? realloc(c->names, cap * sizeof(*v)) : NULL;

		if (!v) {
			c->over = 1;
			return;
		}
		c->names = v;
		c->cap_names = cap;
	}
	c->names[c->nnames++] = name;
}

/* Before the walk: the kept counts made ready to take this cycle's
 * changes. Kept when they were counted against this very base and the
 * pod table was not read afresh (its records' node indexes stand);
 * then only touched nodes are counted again, from the base's rows.
 * Else a fresh copy of the base, every node to be counted. */
static int counted_start(struct plan_run *r, bool kept)
{
	struct plan_counted *c = &r->keep->counted;
	const struct plan_nodebase *b = &r->keep->base;
	size_t n = b->t.n;
	int rc;

	if (c->valid && !c->over && kept && c->base_gen == b->gen && !r->p->stats.pods_rebuilt) {
		for (size_t k = 0; k < c->nnames; k++) {
			long i = policy_nodes_find(&c->t, c->names[k]);

			if (i >= 0 && !c->dirty[i]) {
				c->dirty[i] = 1;
				policy_nodes_reset_row(&c->t, &b->t, (size_t)i);
				r->p->stats.nodes_recounted++;
			}
		}
		c->nnames = 0;
		return 0;
	}
	c->valid = 0;
	c->over = 0;
	c->nnames = 0;
	policy_nodes_release(&c->t);
	arena_reset(&c->arena);
	if ((rc = policy_nodes_clone(&c->t, &b->t, &c->arena)) < 0)
		return rc;
	if (!(c->dirty = arena_alloc(&c->arena, n + 1)))
		return -ENOMEM;
	memset(c->dirty, 1, n);
	c->base_gen = b->gen;
	r->p->stats.nodes_recounted = n;
	return 0;
}

/* Pod x out of node i's free resources: a bound pod out of the kept
 * counts when its node is counted again this cycle (else they have it
 * already); an assumed one (its bind may not stand) remembered, to be
 * counted out of the cycle's table alone. */
static int tally(struct plan_run *r, const struct plan_pod *x, size_t i,
                 const struct policy_held *held)
{
	struct plan_counted *c = &r->keep->counted;

	if (x->node) {
		if (c->dirty[i])
			policy_nodes_tally(&c->t, i, x->spec, held, -1);
		return 0;
	}
	if (arena_grow(&r->p->arena, &r->assumed, r->nassumed, &r->cap_assumed, sizeof(*r->assumed),
	               256) < 0)
		return -ENOMEM;
	r->assumed[r->nassumed++] = (struct plan_assumed){x->spec, held, (uint32_t)i};
	return 0;
}

/* With check_state: the kept counts against every bound pod counted
 * afresh into a copy of the base (rows that differ, into the stats). */
static int counted_check(struct plan_run *r)
{
	const struct plan_podtab *t = &r->keep->pods;
	struct policy_nodes fresh;
	int rc;

	if ((rc = policy_nodes_clone(&fresh, &r->keep->base.t, &r->p->arena)) < 0)
		goto out;
	for (size_t k = 0; k < t->n; k++) {
		const struct plan_pod *x = &t->v[k];
		const struct policy_held *held = NULL;
		long i;

		if (!x->pod || !x->spec || !x->node || x->phase == KUBEAPI_POD_SUCCEEDED ||
		    x->phase == KUBEAPI_POD_FAILED || (i = policy_nodes_find(&fresh, x->node)) < 0)
			continue;
		if ((x->flags & PLAN_POD_VGPU) &&
		    (rc = plan__held_of(r, x->pod, (size_t)i, &held)) < 0)
			goto out;
		policy_nodes_tally(&fresh, (size_t)i, x->spec, held, -1);
	}
	r->p->stats.state_mismatches += policy_nodes_differ(&fresh, &r->keep->counted.t);
out:
	policy_nodes_release(&fresh);
	return rc;
}

/* After the walk: the kept counts settled and kept, the cycle's table
 * made theirs, and the assumed pods counted out of it. */
static int counted_end(struct plan_run *r)
{
	struct plan_counted *c = &r->keep->counted;
	int rc = 0;

	policy_nodes_settle(&c->t);
	memset(c->dirty, 0, c->t.n);
	c->valid = 1;
	if (r->in->check_state && (rc = counted_check(r)) < 0)
		return rc;
	policy_nodes_assign(&r->p->nodes, &c->t);
	for (size_t k = 0; k < r->nassumed; k++)
		policy_nodes_tally(&r->p->nodes, r->assumed[k].node, r->assumed[k].spec,
		                   r->assumed[k].held, -1);
	return 0;
}

/* A bound (or assumed) pod on node table index i (-1: a node not in the
 * table): out of its node's free resources, and, when Muster's, into its
 * gang (a single pod is a gang of one: it may be a victim) and its
 * queue's usage (through c). Every pod on a known node is remembered for
 * preemption and for the reservations' timeline. */
static int count_bound(struct plan_run *r, struct plan_pod *x, long i, size_t *last,
                       struct charge *c)
{
	const struct kubeapi_pod *pod = x->pod;
	uint16_t flavor = i >= 0 ? r->p->nodes.flavor[i] : POLICY_NO_FLAVOR;
	struct plan_gang *g = NULL;
	const struct policy_held *held = NULL;
	int rc, queue = QUEUE_NONE;

	/* Shares come from the pod's annotation, or for an assumed pod
	 * from the run layer (shares.c): both need the pod itself. */
	if (i >= 0 && (x->flags & PLAN_POD_VGPU || !x->node) &&
	    (rc = plan__held_of(r, pod, (size_t)i, &held)) < 0)
		return rc;
	if (i >= 0 && (rc = tally(r, x, (size_t)i, held)) < 0)
		return rc;
	r->p->stats.bound_pods++;
	if ((x->flags & PLAN_POD_OURS) && ((x->flags & PLAN_POD_GROUP) || r->preemption)) {
		if (!(g = gang_of(r, x, last)))
			return -ENOMEM;
		g->bound++;
		g->running += x->phase == KUBEAPI_POD_RUNNING;
		if (!g->fixed_priority && x->priority > g->priority)
			g->priority = x->priority; /* what a preemptor weighs */
		queue = g->queue;
	} else if (x->flags & PLAN_POD_OURS) {
		/* Without preemption a bound pod on its own is never looked at
		 * again: its queue is all it needs, not a gang record. */
		queue = single_queue(r, x);
	}
	if (i >= 0 && (rc = add_bound(r, x, i, held, g, queue)) < 0)
		return rc;
	if (queue == QUEUE_NONE)
		return 0;
	return charge_add(r, c, queue, x->spec, flavor);
}

/* A finished member: it holds nothing, but counts for the PodGroup's
 * status and toward minMember. */
static int count_finished(struct plan_run *r, const struct plan_pod *x, size_t *last)
{
	struct plan_gang *g;

	if (!(x->flags & PLAN_POD_GROUP) || !(x->flags & PLAN_POD_OURS))
		return 0;
	if (!(g = gang_of(r, x, last)))
		return -ENOMEM;
	g->succeeded += x->phase == KUBEAPI_POD_SUCCEEDED;
	g->failed += x->phase == KUBEAPI_POD_FAILED;
	return x->flags & PLAN_POD_TASK ? plan__task_done(r, g, x->pod) : 0;
}

/* g's run of pending members of one spec into its request, at once,
 * times its length. */
static void pending_run(const struct plan_run *r, struct plan_gang *g)
{
	if (g->run_pods)
		add_pods(r, (int64_t *)g->req, g->run_spec, POLICY_NO_FLAVOR, g->run_pods);
	g->run_pods = 0;
}

/* Room for m more pending members of g: its list made (as long as the
 * last cycle's, kept in its entry) or doubled until they fit, and its
 * request. */
static int pending_room(struct plan_run *r, struct plan_gang *g, size_t m)
{
	size_t cap = g->cap_pending, want = g->npending + m;
	const struct kubeapi_pod **v;

	if (want <= cap)
		return 0;
	if (!g->req && !(g->req = arena_calloc(&r->p->arena, r->nslots, sizeof(*g->req))))
		return -ENOMEM;
	cap = cap ? cap * 2 : g->kept->pending_room ? g->kept->pending_room : 4;
	while (cap < want)
		cap *= 2;
	if (cap > UINT32_MAX || !(v = arena_alloc(&r->p->arena, cap * sizeof(*v))))
		return -ENOMEM;
	if (g->npending)
		memcpy(v, g->pending, g->npending * sizeof(*v));
	g->pending = v;
	g->cap_pending = (uint32_t)cap;
	g->kept->pending_room = (uint32_t)cap;
	return 0;
}

/* n members of spec s about to be filed into g: the one spec its pending
 * share (or none), and the request's run of one spec. */
static void file_spec(const struct plan_run *r, struct plan_gang *g,
                      const struct kubeapi_podspec *s, uint32_t n)
{
	if (!g->npending)
		g->pending_spec = s;
	else if (g->pending_spec != s)
		g->pending_spec = NULL;
	if (g->run_pods && g->run_spec != s)
		pending_run(r, g);
	g->run_spec = s;
	g->run_pods += n;
}

/* Pending member x of g into its list (which has room): the one spec
 * they share (or none), whether one has its own runtime or came late,
 * and the request, by runs of one spec. */
static void file_pending(const struct plan_run *r, struct plan_gang *g, const struct plan_pod *x)
{
	file_spec(r, g, x->spec, 1);
	g->pending_runtime |= (x->flags & PLAN_POD_RUNTIME) != 0;
	/* A native PodGroup's members sit among the records of no gang key,
	 * in no order: their gang is checked as if they came late. */
	g->pending_late |= (x->flags & PLAN_POD_LATE) || !x->gang;
	g->pending[g->npending++] = x->pod;
	if (!g->fixed_priority && x->priority > g->priority)
		g->priority = x->priority;
}

/* A pending member of ours, filed into its gang as the walk meets it. */
static int count_pending(struct plan_run *r, const struct plan_pod *x, size_t *last)
{
	struct plan_gang *g;

	if (!(g = gang_of(r, x, last)) || pending_room(r, g, 1) < 0)
		return -ENOMEM;
	file_pending(r, g, x);
	return 0;
}

/* How far ahead of the walk a record's gang slot and node row are asked
 * for: each is a cache miss at random, which the walk's work on the
 * records between hides. Steady cycle at 50,000 nodes, five runs each
 * way: 177-200 ms against 196-327 with 16 (also tried, no better: the
 * gang's kept entry half as far ahead, the node's domains and packed
 * CPU). Since a kept run skips a gang's waiting records at once, 16
 * records were about one gang ahead: 48 (the ten-cycle loop's best
 * cycle 98-103 ms against 100-101 with 24; further stages, each gang's
 * entry and run, 106-110). */
#define AHEAD 48

/* Start loading what the walk will read for record y: its gang's slot
 * in the kept map (once per run of one gang) and its node's row in the
 * cycle's table. (Since the counts are kept, the walk counts into the
 * kept table's row, and only for nodes counted again; asking for the
 * node's flavor and that row instead measured no different.) A walk
 * that counts afresh (kept false) meets its gangs for the first time,
 * so their PodGroups' slots too and the first pod's struct (read by
 * first_sight(); a miss at random once the pods are past the cache, a
 * tenth of the full cycle at 100,000 nodes), and looks its nodes up by
 * name. */
static void prefetch(const struct plan_run *r, const struct plan_pod *y, bool kept)
{
	const struct policy_nodes *t = &r->p->nodes;

	if (y->gang && y->gang != y[-1].gang) {
		plan__gang_prefetch(r, y->gang, !kept);
		if (!kept && y->pod) { /* first_sight() reads it */
			__builtin_prefetch((const char *)y->pod + 16);
			__builtin_prefetch((const char *)y->pod + 16 + 64);
		}
	}
	if (kept && y->node && y->index < PLAN_POD_STALE)
		__builtin_prefetch(&t->free[(size_t)y->index * t->nres]);
	else if (y->node)
		policy_nodes_prefetch(t, y->node);
}

/* A PodGroup gang's group, for its first record half as far ahead as
 * prefetch(): the map slot that one asked for is in cache by then, and
 * first_sight() reads the group (a full read; later cycles keep the
 * facts). */
static void prefetch_group(const struct plan_run *r, const struct plan_pod *y)
{
	const struct plan_pod *v = r->keep->pods.v;

	if (y->gang && (y->flags & PLAN_POD_GROUP) && (y == v || y->gang != y[-1].gang))
		plan__group_prefetch(r, y->gang);
}

/* A cursor over the listed runs (plan_podtab.order), which moves forward
 * as a walk does over the records: the next run's index and where it
 * starts (SIZE_MAX: none), so that a record before it costs a compare,
 * not a read of the run. */
struct runs_at {
	size_t at, start;
};

static void runs_first(const struct plan_podtab *t, struct runs_at *c)
{
	c->at = 0;
	c->start = t->order_layout == t->layout && t->norder ? t->order[0]->start : SIZE_MAX;
}

/* The listed run that starts at record k, if any. */
static struct plan_kept_run *listed_run(const struct plan_podtab *t, struct runs_at *c, size_t k)
{
	while (c->start < k)
		c->start = ++c->at < t->norder ? t->order[c->at]->start : SIZE_MAX;
	return c->start == k ? t->order[c->at] : NULL;
}

/* Where the walk's lookahead stands: the next record it has not looked
 * at, and its own cursor over the listed runs. */
struct lookahead {
	size_t next;
	struct runs_at runs;
};

/* The walk's lookahead, called with upto = the record about to be read
 * + AHEAD: prefetch() for every record below upto not yet given it (from
 * a->next on), each record's line and key loaded AHEAD records before
 * that. A listed run's records are passed over, as the walk will take
 * them from the run (take_run()): its gang's entry is loaded instead.
 * Records a run found by its gang skips get it too, so that the gangs
 * after the run have their slots loaded in time. */
static void ahead(const struct plan_run *r, struct lookahead *a, size_t upto, bool kept)
{
	const struct plan_podtab *t = &r->keep->pods;

	if (upto > t->n)
		upto = t->n;
	while (a->next < upto) {
		const struct plan_kept_run *u = listed_run(t, &a->runs, a->next);

		if (u) {
			__builtin_prefetch(u->entry);
			a->next += u->n ? u->n : 1;
			continue;
		}
		if (a->next + AHEAD < t->n) {
			__builtin_prefetch(&t->v[a->next + AHEAD]);
			__builtin_prefetch(&t->keys[a->next + AHEAD]);
		}
		if (a->next)
			prefetch(r, &t->v[a->next], kept);
		if (!kept && a->next >= AHEAD / 2)
			prefetch_group(r, &t->v[a->next - AHEAD / 2]);
		a->next++;
	}
}

/* The runs of pods of ours of one spec the walk has met, told to the mix
 * (shares.c) a run at once: a gang's pods are in a row. */
struct mix_run {
	const struct kubeapi_podspec *spec;
	size_t pods;
	int64_t first_s; /* the oldest one's creation */
};

/* n more pods of ours of spec s met, while mixing(); the oldest of them
 * (which kind the mix saw first) is among pods[0..nold). */
static int mix_add(struct plan_run *r, struct mix_run *m, const struct kubeapi_podspec *s, size_t n,
                   const struct kubeapi_pod *const *pods, size_t nold)
{
	int rc = 0;

	if (s != m->spec) {
		rc = plan__mix_count(r, m->spec, m->pods, m->first_s);
		m->spec = s;
		m->pods = 0;
		m->first_s = INT64_MAX;
	}
	m->pods += n;
	for (size_t k = 0; k < nold; k++)
		if (pods[k]->created_s < m->first_s)
			m->first_s = pods[k]->created_s;
	return rc;
}

/* Does record x wait, a member of gang key `gang` the walk files
 * (count_pending()), unless it is assumed (the caller asks)? */
static bool waits(const struct plan_pod *x, uint64_t gang)
{
	return x->gang == gang && x->pod && x->spec && !x->node &&
	       (x->flags & (PLAN_POD_OURS | PLAN_POD_DELETING)) == PLAN_POD_OURS &&
	       x->phase != KUBEAPI_POD_SUCCEEDED && x->phase != KUBEAPI_POD_FAILED;
}

/* Is the pod of key `key`, a waiting pod of ours, assumed bound? */
static bool is_assumed(const struct plan_run *r, const struct keyfilter *assumed, uint64_t key)
{
	return assumed_node(r, assumed, key) != 0;
}

void plan__run_drop(struct plan_run *r, struct plan_kept_gang *e)
{
	struct plan_podtab *t = &r->keep->pods;

	if (e->run && e->run_layout == t->layout)
		t->runs_garbage += sizeof(*e->run) + e->run->cap * sizeof(e->run->pods[0]);
	e->run = NULL;
}

/* g's kept run of waiting records, if it starts at record k and stands. */
static const struct plan_kept_run *kept_run(const struct plan_run *r, const struct plan_gang *g,
                                            size_t k)
{
	const struct plan_kept_gang *e = g->kept;
	const struct plan_kept_run *u = e->run;

	return u && e->run_layout == r->keep->pods.layout && u->start == k &&
	               u->epoch == r->keep->gangs.epoch
	           ? u
	           : NULL;
}

/* Whether v[0..n) is in plan__by_age() order: reads each pod. */
static bool in_age_order(const struct kubeapi_pod *const *v, size_t n)
{
	for (size_t k = 1; k < n; k++)
		if (plan__by_age(v[k - 1], v[k]) > 0)
			return false;
	return true;
}

/* With check_state: kept run u, used at record k, against the records:
 * each still a waiting member of ours, not assumed, the same pod. */
static void check_run(struct plan_run *r, const struct keyfilter *assumed,
                      const struct plan_kept_run *u, size_t k)
{
	const struct plan_podtab *t = &r->keep->pods;

	for (size_t i = 0; i < u->n; i++) {
		const struct plan_pod *x = k + i < t->n ? &t->v[k + i] : NULL;

		if (!x || !waits(x, t->v[k].gang) || is_assumed(r, assumed, t->keys[k + i]) ||
		    x->pod != u->pods[i] || x->spec != u->spec)
			r->p->stats.state_mismatches++;
	}
}

/* Gang g's waiting members from kept run u, filed as the records would
 * file them (file_pending(), a run of one spec): no record is read.
 *
 * A run with a member that came late sends the gang's list to
 * collect_pending()'s check of age order, unless it is the gang's first,
 * was in order when kept and sits among the records appended since the
 * table was put in gang order (its tail): whatever is filed after it
 * then came late too and asks for the check itself. (A record moved to
 * another gang is marked late where it stands, before the tail: a run
 * of such records is checked.) Without that, a
 * long-running scheduler, whose gangs nearly all came after the table
 * was read, read every waiting pod's struct each cycle for the check.
 *
 * The list is the run's own when it is the gang's first and will not be
 * sorted (nothing writes into it then: minTaskMember's gangs keep no
 * run, and a list that grows is copied into the arena first). */
static int use_run(struct plan_run *r, struct plan_gang *g, const struct plan_kept_run *u,
                   struct mix_run *mix)
{
	bool checked = u->late && u->ordered && !g->npending && u->start >= r->keep->pods.tail;
	int rc;

	if (!g->req && !(g->req = arena_calloc(&r->p->arena, r->nslots, sizeof(*g->req))))
		return -ENOMEM;
	if (!g->npending && !g->cap_pending && (!u->late || checked)) {
		g->pending = (const struct kubeapi_pod **)u->pods;
		g->cap_pending = u->n;
	} else {
		if ((rc = pending_room(r, g, u->n)) < 0)
			return rc;
		memcpy(g->pending + g->npending, u->pods, u->n * sizeof(*u->pods));
	}
	file_spec(r, g, u->spec, u->n);
	g->npending += u->n;
	pending_run(r, g);
	g->pending_runtime |= u->runtime;
	g->pending_late |= u->late && !checked;
	if (!g->fixed_priority && u->priority > g->priority)
		g->priority = u->priority;
	r->p->stats.pods += u->n;
	r->p->stats.pods_from_runs += u->n;
	r->p->stats.late_from_runs += checked ? u->n : 0;
	/* A run in age order has its oldest first: one pod read, not u->n. */
	return plan__mixing(r)
	           ? mix_add(r, mix, u->spec, u->n, u->pods, !u->late || u->ordered ? 1 : u->n)
	           : 0;
}

/* Records [k, j), waiting members of gang g just filed, kept as its run
 * (in place of the one it had) when they share one spec and g's list is
 * never reordered by minTaskMember. Not kept when out of
 * memory. A run not kept leaves the one g had: it still says what its
 * records are, or it would have been dropped. */
static void keep_run(struct plan_run *r, struct plan_gang *g, size_t k, size_t j)
{
	struct plan_podtab *t = &r->keep->pods;
	struct plan_kept_gang *e = g->kept;
	struct plan_kept_run *u = e->run_layout == t->layout ? e->run : NULL;
	int32_t priority = INT32_MIN;
	uint8_t runtime = 0, late = 0;

	if (g->group_tasks || j - k > UINT32_MAX)
		return;
	for (size_t i = k; i < j; i++) {
		const struct plan_pod *x = &t->v[i];

		if (x->spec != t->v[k].spec)
			return;
		runtime |= (x->flags & PLAN_POD_RUNTIME) != 0;
		late |= (x->flags & PLAN_POD_LATE) != 0;
		if (x->priority > priority)
			priority = x->priority;
	}
	if (!u || j - k > u->cap) {
		struct plan_kept_run *v =
		    arena_alloc(&t->runs, sizeof(*v) + (j - k) * sizeof(v->pods[0]));

		if (!v)
			return;
		plan__run_drop(r, e);
		v->cap = (uint32_t)(j - k);
		e->run = u = v;
		e->run_layout = t->layout;
	}
	for (size_t i = k; i < j; i++)
		u->pods[i - k] = t->v[i].pod;
	u->spec = t->v[k].spec;
	u->epoch = r->keep->gangs.epoch;
	u->start = k;
	u->n = (uint32_t)(j - k);
	u->priority = priority;
	u->runtime = runtime;
	u->late = late;
	u->key = g->key;
	u->entry = e;
	/* Read once here, where use_run() would have it read each cycle. */
	u->ordered = late && in_age_order(u->pods, u->n);
}

/* Entry e's run, if it stands and starts at record k, into the list of
 * runs the next walk meets (plan_podtab.order); not listed when out of
 * memory (the next walk then finds it by its gang). */
static void note_run(struct plan_run *r, const struct plan_kept_gang *e, size_t k)
{
	struct plan_podtab *t = &r->keep->pods;
	struct plan_kept_run *u = e->run;

	if (!u || e->run_layout != t->layout || u->start != k)
		return;
	if (t->nnext == t->cap_next) {
		size_t cap = t->cap_next ? 2 * t->cap_next : 1024;
		struct plan_kept_run **v = realloc(t->next, cap * sizeof(*v));

		if (!v)
			return;
		t->next = v;
		t->cap_next = cap;
	}
	t->next[t->nnext++] = u;
}

/* The waiting members of one gang from record k on (k waits: waits()),
 * filed at once: from the gang's kept run when it stands, else in a
 * tight pass over the records that looks the gang up and makes room
 * once, and adds the request's last run while the gang's record is in
 * cache (collect_pending() then has none left to add); that pass keeps
 * the run for the next cycle. Three records in four are such pods in
 * the bench, in runs of 13 on average. *nout: how many (0: record k is
 * assumed, on node *at, and the walk's own path takes it, without a
 * second probe of the assumed map). */
static int pending_rows(struct plan_run *r, const struct keyfilter *assumed, size_t k, size_t *last,
                        struct mix_run *mix, size_t *nout, uint32_t *at)
{
	const struct plan_podtab *t = &r->keep->pods;
	uint64_t gang = t->v[k].gang;
	const struct plan_kept_run *u;
	struct plan_gang *g;
	size_t j;
	int rc;

	/* An assumed pod is counted as bound, which makes its gang's record
	 * there too but for a single pod without preemption (count_bound()):
	 * only then is record k asked first. A kept run has no assumed pod. */
	bool early = !(t->v[k].flags & PLAN_POD_GROUP) && !r->preemption;

	*nout = 0;
	if (early && (*at = assumed_node(r, assumed, t->keys[k])))
		return 0;
	if (!(g = gang_of(r, &t->v[k], last)))
		return -ENOMEM;
	if ((u = kept_run(r, g, k))) {
		if (r->in->check_state)
			check_run(r, assumed, u, k);
		*nout = u->n;
		note_run(r, g->kept, k);
		return use_run(r, g, u, mix);
	}
	if (!early && (*at = assumed_node(r, assumed, t->keys[k])))
		return 0;
	for (j = k + 1; j < t->n && waits(&t->v[j], gang) && !is_assumed(r, assumed, t->keys[j]);
	     j++)
		;
	if (pending_room(r, g, j - k) < 0)
		return -ENOMEM;
	for (size_t i = k; i < j; i++) {
		if (plan__mixing(r) && (rc = mix_add(r, mix, t->v[i].spec, 1, &t->v[i].pod, 1)) < 0)
			return rc;
		file_pending(r, g, &t->v[i]);
	}
	r->p->stats.pods += j - k;
	pending_run(r, g);
	keep_run(r, g, k, j);
	note_run(r, g->kept, k);
	*nout = j - k;
	return 0;
}

/* The runs this walk listed become the ones the next walk meets. */
static void runs_listed(struct plan_podtab *t)
{
	struct plan_kept_run **v = t->order;
	size_t cap = t->cap_order;

	t->order = t->next;
	t->cap_order = t->cap_next;
	t->norder = t->nnext;
	t->next = v;
	t->cap_next = cap;
	t->nnext = 0;
	t->order_layout = t->layout;
}

/* The waiting members of a gang from listed run u, which starts at record
 * k, when it stands: its gang from the entry it names, and none of its
 * records read. *nout: how many (0: it does not stand; the walk then
 * reads record k). A standing run has no assumed pod, single or not:
 * binding a member drops its gang's run (plan.c's plan__add_binds()),
 * and with check_state check_run() holds each run to that. */
static int take_run(struct plan_run *r, const struct keyfilter *assumed, struct plan_kept_run *u,
                    size_t k, size_t *last, struct mix_run *mix, size_t *nout)
{
	struct plan_podtab *t = &r->keep->pods;
	struct plan_kept_gang *e = u->entry;
	struct plan_gang *g;

	*nout = 0;
	if (!e || e->run != u || e->run_layout != t->layout || u->start != k ||
	    u->epoch != r->keep->gangs.epoch)
		return 0;
	if (!(g = plan__gang_of_entry(r, e, u->key, u->pods[0])))
		return -ENOMEM;
	*last = (size_t)(g - r->p->gangs);
	if (r->in->check_state)
		check_run(r, assumed, u, k);
	*nout = u->n;
	note_run(r, e, k);
	return use_run(r, g, u, mix);
}

/* Every pod, from the pod table (podtab.c), which plan__podtab_sync() has
 * brought up to date. */
static int count_walk(struct plan_run *r, const struct keyfilter *assumed, bool kept)
{
	struct plan_podtab *t = &r->keep->pods;
	struct mix_run mix = {0};
	size_t last = SIZE_MAX, m;
	struct charge c = {.queue = QUEUE_NONE};
	struct lookahead la = {0};
	struct runs_at at;
	struct plan_kept_run *u;
	int rc;

	runs_first(t, &at);
	la.runs = at;
	t->nnext = 0;
	for (size_t k = 0; k < t->n; k++) {
		struct plan_pod *x = &t->v[k];
		uint32_t node = 0;

		ahead(r, &la, k + AHEAD, kept);
		if ((u = listed_run(t, &at, k))) {
			if ((rc = take_run(r, assumed, u, k, &last, &mix, &m)) < 0)
				return rc;
			if (m) {
				k += m - 1;
				continue;
			}
		}
		if (!x->pod || !x->spec)
			continue;
		if (x->phase == KUBEAPI_POD_SUCCEEDED || x->phase == KUBEAPI_POD_FAILED) {
			if ((rc = count_finished(r, x, &last)) < 0)
				return rc;
			continue;
		}
		if (x->gang && waits(x, x->gang)) {
			if ((rc = pending_rows(r, assumed, k, &last, &mix, &m, &node)) < 0)
				return rc;
			if (m) {
				k += m - 1;
				continue;
			}
		}
		r->p->stats.pods++;
		if (x->flags & PLAN_POD_OURS && plan__mixing(r) &&
		    (rc = mix_add(r, &mix, x->spec, 1, &x->pod, 1)) < 0)
			return rc;
		if (node || (node = node_of(r, assumed, x, t->keys[k]))) {
			if ((rc = count_bound(r, x, node_index(r, x, node, kept), &last, &c)) < 0)
				return rc;
			continue;
		}
		if (!(x->flags & PLAN_POD_OURS) && x->spec->gated && (rc = note_gated(r, x)) < 0)
			return rc;
		if (!(x->flags & PLAN_POD_OURS) || (x->flags & PLAN_POD_DELETING))
			continue;
		if ((rc = count_pending(r, x, &last)) < 0)
			return rc;
	}
	if ((rc = charge_flush(r, &c)) < 0)
		return rc;
	runs_listed(t);
	return plan__mix_count(r, mix.spec, mix.pods, mix.first_s);
}

int plan__count_pods(struct plan_run *r)
{
	struct keyfilter assumed = {0};
	bool kept;
	int rc;

	if ((rc = plan__podtab_nodes(r, &kept)) == 0 && (rc = counted_start(r, kept)) == 0 &&
	    (rc = assumed_filter(r, &assumed)) == 0 && (rc = count_walk(r, &assumed, kept)) == 0)
		rc = counted_end(r);
	gated_filed(r);
	keyfilter_free(&assumed);
	if (rc < 0)
		r->keep->counted.valid = 0;
	policy_nodes_settle(&r->p->nodes);
	return rc;
}

int plan__by_age(const struct kubeapi_pod *x, const struct kubeapi_pod *y)
{
	if (x->created_s != y->created_s)
		return x->created_s < y->created_s ? -1 : 1;
	/* Pods of one gang are mostly created in the same second; their name
	 * ids give a stable order without reading the strings. */
	return (x->name > y->name) - (x->name < y->name);
}

static int by_age(const void *a, const void *b)
{
	return plan__by_age(*(const struct kubeapi_pod *const *)a,
	                    *(const struct kubeapi_pod *const *)b);
}

/* With check_state: g's request, added up run by run as its members
 * were filed (some from kept runs), against its pending pods' own. */
static void check_request(struct plan_run *r, const struct plan_gang *g)
{
	int64_t req[QUEUE_MAX_SLOTS];

	plan__request(r, req, g->pending, g->npending);
	if (!g->req || memcmp(req, g->req, r->nslots * sizeof(*req)))
		r->p->stats.state_mismatches++;
}

/* Each gang's pending pods, oldest first, and its request: the pod walk
 * filed them (count_pending()); here the last run of each request is
 * added, and a gang with a member that came late is checked and sorted
 * if it has to be. The order is plan__by_age()'s alone (creation, then
 * name, distinct within a gang), whatever order the pods were met in.
 * The pod table keeps a gang's records in that order (podtab.c) but for
 * pods added since it was last read in full or regrouped (sorting every
 * waiting pod each cycle was a fifth of a steady cycle at 50,000 nodes;
 * filing them in a second pass over a list of every waiting pod, a
 * twentieth). */
int plan__collect_pending(struct plan_run *r)
{
	struct plan *p = r->p;

	for (size_t k = 0; k < p->ngangs; k++) {
		struct plan_gang *g = &p->gangs[k];

		pending_run(r, g);
		if (g->pending_late && !in_age_order(g->pending, g->npending))
			qsort(g->pending, g->npending, sizeof(*g->pending), by_age);
		if (r->in->check_state && g->npending) {
			check_request(r, g);
			/* What the table's order and the late marks promise. */
			if (!in_age_order(g->pending, g->npending))
				r->p->stats.state_mismatches++;
		}
	}
	return 0;
}

void plan__request(const struct plan_run *r, int64_t *req, const struct kubeapi_pod *const *pods,
                   size_t n)
{
	memset(req, 0, r->nslots * sizeof(*req));
	/* A gang's pods mostly share one spec, in a row: each run is added
	 * once, times its length (every waiting gang's request is worked
	 * out each cycle, so this is a pass over every waiting pod). */
	for (size_t k = 0, run; k < n; k += run) {
		const struct kubeapi_podspec *s = pods[k]->spec;

		for (run = 1; k + run < n && pods[k + run]->spec == s; run++)
			;
		add_pods(r, req, s, POLICY_NO_FLAVOR, (int64_t)run);
	}
}
