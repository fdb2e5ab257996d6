/*
 * The cycle planner (plan.h): the admission loop over the view that view.c
 * and gangs.c build, the setup and end of a cycle. Preemption is holds.c (over
 * preempt.h), reservations timeline.c (over backfill.h), PodGroup gates
 * podgroup.c, the messages words.c.
 *
 * Cost of a cycle, for N nodes, P pods and G gangs with members to place:
 * O(N log N) to sort the nodes, O(P x depth x slots) to count pods and
 * usage, O(G log G) to order, and per gang tried O(members x feasible
 * nodes x levels) to place. Two things keep the last term small when the
 * cluster is full: a domain is only tried when its free GPUs cover the
 * gang's, and within a cycle a gang of one pod spec that failed to place
 * makes every later gang of that spec at least as large fail at once
 * (capacity only shrinks during a cycle).
 */
#include "policy/plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "policy/plan_internal.h"

const char *plan__str(const struct plan_run *r, uint32_t id)
{
	const char *s = id ? intern_str(r->strs, id) : NULL;

	return s ? s : "";
}

const char *plan__strdup(struct plan_run *r, const char *s)
{
	size_t n = strlen(s);
	char *out = arena_alloc(&r->p->arena, n + 1);

	if (!out)
		return "";
	memcpy(out, s, n + 1);
	return out;
}

void plan__say(struct plan_run *r, struct plan_gang *g, struct plan_facts *f)
{
	char buf[1024];

	f->ns = plan__str(r, g->ns);
	f->name = plan__str(r, g->name);
	g->message = plan__strdup(r, plan_words_message(f, buf, sizeof(buf)));
	g->said_memo = 0;
}

/* ---- admission ------------------------------------------------------- */

void plan__quota_wait(struct plan_run *r, struct plan_gang *g, const struct queue_verdict *v,
                      const int64_t *req, enum plan_why why, struct plan_facts *f, char slot[160])
{
	const struct queue_slot *s = queue_set_slot(r->in->qs, v->slot);
	int64_t demand = queue_tree_demand(r->tree, v->node, v->slot);

	queue_set_slot_name(r->in->qs, v->slot, slot, 160);
	*f = (struct plan_facts){.why = (uint8_t)why,
	                         .cohort = queue_tree_is_cohort(r->tree, v->node),
	                         .at = queue_tree_name(r->tree, v->node),
	                         .slot = slot,
	                         .res = r->cfg->resources.v[s->resource],
	                         .usage = demand,
	                         .limit = v->limit,
	                         .need = req[v->slot]};
	g->state = PLAN_WAITING;
	g->block = (struct plan_block){.why = (uint8_t)why,
	                               .node = v->node,
	                               .slot = (uint16_t)v->slot,
	                               .usage = demand,
	                               .limit = v->limit,
	                               .need = req[v->slot]};
}

static void quota_message(struct plan_run *r, struct plan_gang *g, const struct queue_verdict *v,
                          const int64_t *req)
{
	struct plan_facts f;
	char slot[160];

	plan__quota_wait(r, g, v, req, PLAN_WHY_QUOTA, &f, slot);
	r->quota_failed = 1;
	plan__say(r, g, &f);
}

static void place_message(struct plan_run *r, struct plan_gang *g, const struct policy_why *why,
                          size_t n)
{
	const struct policy_fit *f = why->fit;
	struct plan_facts words = {
	    .why = PLAN_WHY_FIT,
	    .placed = (uint32_t)why->placed,
	    .members = (uint32_t)n,
	    .short_nodes = why->short_nodes,
	    .nodes = r->p->nodes.n,
	    .res = why->short_res == POLICY_SHORT_VGPU
	               ? PLAN_WORDS_VGPU_ROOM
	               : kubeapi_model_resource_name(r->in->model, why->short_res),
	};

	if (g->within.level >= 0) {
		const struct policy_nodes *t = &r->p->nodes;

		words.within_unknown = (unsigned)g->within.level >= t->nlevels;
		words.within_none = !words.within_unknown && !t->level[g->within.level].ndomains;
		words.within = plan__str(r, g->group->topology_key);
	}
	g->state = PLAN_WAITING;
	g->block = (struct plan_block){.why = PLAN_WHY_FIT,
	                               .placed = (uint32_t)why->placed,
	                               .members = (uint32_t)n,
	                               .short_nodes = why->short_nodes,
	                               .short_res = why->short_res};
	if (f) {
		memcpy(g->block.rejected, f->rejected, sizeof(g->block.rejected));
		memcpy(words.rejected, f->rejected, sizeof(words.rejected));
	}
	plan__say(r, g, &words);
}

static int add_bind(struct plan_run *r, uint32_t gang, const struct kubeapi_pod *pod, uint32_t node,
                    const struct policy_held *held)
{
	struct plan *p = r->p;

	if (arena_grow(&p->arena, &p->binds, p->nbinds, &r->cap_binds, sizeof(*p->binds), 1024) < 0)
		return -ENOMEM;
	p->binds[p->nbinds++] = (struct plan_bind){pod, node, gang, held};
	return 0;
}

/* Are pods[0..n) all of one spec? */
static const struct kubeapi_podspec *one_spec(const struct kubeapi_pod *const *pods, size_t n)
{
	for (size_t k = 1; k < n; k++)
		if (pods[k]->spec != pods[0]->spec)
			return NULL;
	return n ? pods[0]->spec : NULL;
}

const struct kubeapi_podspec **plan__specs(struct plan_run *r, const struct plan_gang *g,
                                           const struct kubeapi_pod *const *pods, size_t n)
{
	const struct kubeapi_podspec **specs = arena_alloc(&r->p->arena, n * sizeof(*specs));

	for (size_t k = 0; specs && k < n; k++)
		specs[k] = g->pending_spec ? g->pending_spec : pods[k]->spec;
	return specs;
}

/* With flavors, the quota is checked again where the pods landed: 1 when
 * it holds (and req is what to charge), else 0 with the members taken off
 * their nodes again and the message set. */
static int flavor_quota(struct plan_run *r, struct plan_gang *g,
                        const struct kubeapi_podspec *const *specs, size_t n, const uint32_t *out,
                        const struct policy_held *const *held, int64_t *req)
{
	struct policy_nodes *t = &r->p->nodes;
	struct queue_verdict v;

	if (r->nslots <= r->nres_cfg)
		return 1;
	memset(req, 0, r->nslots * sizeof(*req));
	for (size_t k = 0; k < n; k++)
		plan__add_pod(r, req, specs[k], t->flavor[out[k]]);
	v = queue_tree_fits(r->tree, g->queue, req);
	if (v.fits)
		return 1;
	for (size_t k = 0; k < n; k++)
		policy_nodes_use(t, out[k], specs[k], held[k], +1);
	quota_message(r, g, &v, req);
	return 0;
}

/* Messages are cut to this, as plan_words_message() cuts them. */
#define MESSAGE_MAX 1023

/* The memo's answer said of g: its kept "gang ns/name: " and the tail.
 * Written for every gang a memo answers (tens of thousands a cycle at
 * 50,000 nodes): the prefix is made once a gang, not from its names,
 * which cost cache misses each time. */
static const char *again(struct plan_run *r, struct plan_gang *g, const char *words)
{
	size_t n, tail = strlen(words);
	char *out;

	if (plan__gang_prefix(r, g) < 0)
		return "";
	n = g->kept->prefix_len;
	if (tail > MESSAGE_MAX - n)
		tail = MESSAGE_MAX - n;
	if (!(out = arena_alloc(&r->p->arena, n + tail + 1)))
		return "";
	memcpy(out, g->kept->prefix, n);
	memcpy(out + n, words, tail);
	out[n + tail] = 0;
	return out;
}

void plan__message(struct plan_run *r, struct plan_gang *g)
{
	if (!g->said_memo)
		return;
	g->said_memo = 0;
	g->message = again(r, g, g->message);
}

/* Every message the memo left as its words alone made whole, after the
 * turns: in gang order, which is the order of the gangs' kept entries
 * and prefixes in memory, where the turns' order met each at random (two
 * cache misses a gang the memo answers, 190,000 of them a cycle at
 * 100,000 nodes). */
static void messages(struct plan_run *r)
{
	for (size_t k = 0; k < r->p->ngangs; k++)
		plan__message(r, &r->p->gangs[k]);
}

/* Place pods[0..n) of gang g (a slice of g->pending) whole, within
 * quota, counting them into the node table and the queue's usage: 1
 * placed (out[k] is member k's node index), 0 not (the gang's message
 * says why), or -ENOMEM. */
int plan__place(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *const *pods,
                size_t n, uint32_t *out, const struct policy_held **held)
{
	const struct kubeapi_podspec **specs;
	const struct kubeapi_podspec *same = g->pending_spec ? g->pending_spec : one_spec(pods, n);
	int64_t req[QUEUE_MAX_SLOTS];
	struct queue_verdict v;
	struct policy_why why;
	const struct policy_fit *fit = NULL;
	const struct plan_memo_shape *hit;
	int rc;

	r->quota_failed = 0;
	if (pods == g->pending && n == g->npending && g->req)
		memcpy(req, g->req, r->nslots * sizeof(*req)); /* the whole gang: known */
	else
		plan__request(r, req, pods, n);
	v = queue_tree_fits(r->tree, g->queue, req);
	if (!v.fits) {
		quota_message(r, g, &v, req);
		return 0;
	}
	/* The memo knows shapes, not constraints: a constrained gang is
	 * placed afresh and leaves no answer behind; so is a hold's
	 * preemptor, placed while victims' room is taken off the table and
	 * put back (capacity not only shrinking). */
	if (same && g->within.level < 0 && !r->holding &&
	    !(fit = policy_fit_get(&r->fits, &r->p->arena, &r->p->nodes, same)))
		return -ENOMEM;
	hit = fit ? plan__memo_find(r, fit, same, n, plan__runtime(r, g)) : NULL;
	if (hit) {
		r->p->stats.memo_hits++;
		g->state = PLAN_WAITING;
		g->block = hit->block;
		g->message = hit->message; /* its prefix comes after the turns */
		g->said_memo = 1;
		return 0;
	}
	if (!(specs = plan__specs(r, g, pods, n)))
		return -ENOMEM;
	r->p->stats.placement_tries++;
	rc = backfill_place(&r->bf, r->bf.nresv ? plan__end(r, g) : 0, &g->within, specs, n, out,
	                    held, &why);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		place_message(r, g, &why, n);
		if (fit)
			plan__memo_add(r, fit, same, n, plan__runtime(r, g), g->message, &g->block);
		return 0;
	}
	if (!flavor_quota(r, g, specs, n, out, held, req))
		return 0;
	queue_tree_charge(r->tree, g->queue, req, +1);
	if (g->within.level >= 0 && n > 0) /* the rest go where these went */
		g->within.domain =
		    r->p->nodes
		        .domain[(size_t)out[0] * r->p->nodes.nlevels + (unsigned)g->within.level];
	return 1;
}

int plan__add_binds(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *const *pods,
                    size_t n, const uint32_t *out, const struct policy_held *const *held)
{
	int rc;

	plan__run_drop(r, g->kept); /* its pods are assumed from now on */
	for (size_t k = 0; k < n; k++)
		if ((rc = add_bind(r, (uint32_t)(g - r->p->gangs), pods[k],
		                   r->p->nodes.node[out[k]]->name, held[k])) < 0)
			return rc;
	return 0;
}

/* Place and bind: 1 admitted, 0 not, or -ENOMEM. The nodes and shares
 * go into the cycle's one room for them, made larger when a gang needs
 * it: nothing keeps the arrays (the binds copy what they say). */
int plan__turn_room(struct plan_run *r, size_t n)
{
	if (n > r->cap_turn) {
		size_t cap = n > 64 ? n : 64;

		if (!(r->turn_out = arena_alloc(&r->p->arena, cap * sizeof(*r->turn_out))) ||
		    !(r->turn_held = arena_alloc(&r->p->arena, cap * sizeof(*r->turn_held))))
			return -ENOMEM;
		r->cap_turn = cap;
	}
	memset(r->turn_held, 0, n * sizeof(*r->turn_held));
	return 0;
}

static int admit(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *const *pods,
                 size_t n)
{
	int rc;

	if ((rc = plan__turn_room(r, n)) < 0)
		return rc;
	if ((rc = plan__place(r, g, pods, n, r->turn_out, r->turn_held)) <= 0)
		return rc;
	return (rc = plan__add_binds(r, g, pods, n, r->turn_out, r->turn_held)) < 0 ? rc : 1;
}

/* A gang that does not fit: make room by preemption if its queue allows,
 * else hold a reservation if it is at the head of the order. */
static int make_room(struct plan_run *r, struct plan_gang *g, uint32_t need)
{
	/* No queue may preempt (setup()): nothing to ask of each gang that
	 * does not fit, most of a steady cycle's gangs (plan__preempt() sets
	 * up its ask first: 3.5% of a steady cycle's samples at 50,000
	 * nodes, perf). */
	int rc = r->preemption ? plan__preempt(r, g, g->pending, need) : 0;

	if (rc != 0)
		return rc < 0 ? rc : 0;
	return plan__reserve(r, g, g->pending, need);
}

/* A gang's turn: the members that make up minMember together, then the
 * rest one by one while they fit. */
static int try_gang(struct plan_run *r, struct plan_gang *g)
{
	uint32_t have = g->bound + g->succeeded;
	uint32_t need = have < g->min_member ? g->min_member - have : 0;
	uint32_t first = r->p->nbinds;
	int rc = 1;

	if (g->group_tasks)
		need = plan__task_order(r, g, need);
	if (need > g->npending)
		need = g->npending; /* cannot happen: such gangs are INCOMPLETE */
	if (need && (rc = admit(r, g, g->pending, need)) <= 0)
		return rc < 0 ? rc : make_room(r, g, need);
	for (uint32_t k = need; k < g->npending; k++) {
		const char *msg = g->message;
		enum plan_state st = g->state;
		struct plan_block block = g->block;
		uint8_t memo = g->said_memo;

		if ((rc = admit(r, g, &g->pending[k], 1)) < 0)
			return rc;
		if (rc == 0) {
			if (need || k > 0) {
				/* The gang is admitted; extras wait quietly. */
				g->message = msg;
				g->said_memo = memo;
				g->state = st;
				g->block = block;
			} else if ((rc = make_room(r, g, 1)) < 0) {
				return rc;
			}
			break;
		}
	}
	g->first_bind = first;
	g->nbind = r->p->nbinds - first;
	if (g->nbind == 0)
		return 0;
	g->state = PLAN_ADMITTED;
	g->message = NULL;
	g->said_memo = 0;
	g->block.why = PLAN_WHY_NONE;
	return 1;
}

/* When Muster first saw a gang waiting: creation times have one-second
 * resolution, and a gang that arrives in the same second as one already
 * waiting (and holding a reservation, say) must not jump ahead of it. The
 * gangs first seen in one cycle are numbered in key order, so that the
 * order does not hang on the order the cycle met them in. 0: not seen. */
static uint64_t seen_before(const struct plan_gang *g)
{
	return g->kept->seen;
}

struct fresh_order {
	const struct plan_gang *gangs;
	const uint32_t *gang_of_item;
};

static int by_key(const void *a, const void *b, void *arg)
{
	const struct fresh_order *o = arg;
	uint64_t x = o->gangs[o->gang_of_item[*(const uint32_t *)a]].key;
	uint64_t y = o->gangs[o->gang_of_item[*(const uint32_t *)b]].key;

	return (x > y) - (x < y);
}

/* Number the items fresh[0..n) (indexes into items), first seen now, in
 * their gangs' key order. O(n log n). */
static void first_seen(struct plan_run *r, struct queue_item *items, const uint32_t *gang_of_item,
                       uint32_t *fresh, size_t n)
{
	struct fresh_order o = {r->p->gangs, gang_of_item};
	struct plan_memory *keep = r->keep;

	qsort_r(fresh, n, sizeof(*fresh), by_key, &o);
	for (size_t k = 0; k < n; k++) {
		struct plan_gang *g = &r->p->gangs[gang_of_item[fresh[k]]];

		items[fresh[k]].tiebreak = g->kept->seen = ++keep->seen_seq;
	}
}

/* Does a pending member of g state a constraint Muster does not apply
 * (kubeapi_unsupported)? Then g waits, saying which, rather than be
 * placed against it: the kubelet checks none of them. One read when the
 * members share a spec; else O(pending members). */
static bool unsupported(struct plan_run *r, struct plan_gang *g)
{
	uint32_t k = 0;
	unsigned bits = 0;

	if (g->pending_spec)
		bits = g->pending_spec->unsupported;
	else
		for (; k < g->npending && !(bits = g->pending[k]->spec->unsupported); k++)
			;
	if (!bits)
		return false;
	k = k < g->npending ? k : 0;
	bits &= ~(bits - 1); /* the lowest: the one named */
	struct plan_facts f = {.why = PLAN_WHY_UNSUPPORTED,
	                       .pod = plan__str(r, g->pending[k]->name),
	                       .constraint = kubeapi_unsupported_name(bits)};

	g->state = PLAN_INCOMPLETE;
	g->block = (struct plan_block){
	    .why = PLAN_WHY_UNSUPPORTED, .member = k, .unsupported = (uint16_t)bits};
	plan__say(r, g, &f);
	return true;
}

/* Gangs whose turn it is this cycle, as queue items. */
static int pending_items(struct plan_run *r, struct queue_item *items, uint32_t *gang_of_item,
                         size_t *np)
{
	struct plan *p = r->p;
	uint32_t *fresh = arena_alloc(&p->arena, (p->ngangs + 1) * sizeof(*fresh));
	size_t n = 0, nfresh = 0;

	if (!fresh)
		return -ENOMEM;

	for (size_t k = 0; k < p->ngangs; k++) {
		struct plan_gang *g = &p->gangs[k];

		/* A gang that no longer waits is seen waiting afresh when it
		 * next does (one absent from a cycle: new_gang()). */
		if (g->npending == 0) {
			g->kept->seen = 0;
			continue;
		}
		if (g->state != PLAN_RUNNING || !g->enqueued)
			continue;
		if (unsupported(r, g))
			continue;
		if (g->bound + g->succeeded + g->npending < g->min_member) {
			struct plan_facts f = {.why = PLAN_WHY_MEMBERS,
			                       .have = g->bound + g->succeeded + g->npending,
			                       .min_member = g->min_member,
			                       .gated = g->gated,
			                       .gated_pod =
			                           g->gated ? plan__str(r, g->gated_name) : NULL};

			g->state = PLAN_INCOMPLETE;
			g->block.why = PLAN_WHY_MEMBERS;
			g->block.gated = g->gated;
			plan__say(r, g, &f);
			continue;
		}
		if (g->group_tasks && plan__tasks_short(r, g))
			continue;
		if (r->in->backoff && idmap_get(r->in->backoff, g->key)) {
			struct plan_facts f = {.why = PLAN_WHY_TIMEOUT};

			g->state = PLAN_BACKOFF;
			g->block.why = PLAN_WHY_TIMEOUT;
			plan__say(r, g, &f);
			continue;
		}
		g->state = PLAN_WAITING; /* until admitted */
		items[n] = (struct queue_item){g->queue, g->priority, g->submitted_s,
		                               seen_before(g), g->req};
		if (!items[n].tiebreak)
			fresh[nfresh++] = (uint32_t)n;
		gang_of_item[n++] = (uint32_t)k;
	}
	first_seen(r, items, gang_of_item, fresh, nfresh);
	*np = n;
	return 0;
}

/* Gangs the cycle never tried because their StrictFIFO queue's head
 * waits: say so. O(items). */
static void behind_heads(struct plan_run *r, const struct queue_cycle *c,
                         const struct queue_item *items, const uint32_t *gang_of_item, size_t n,
                         const uint32_t *head)
{
	int q = 0, nq = queue_tree_size(r->tree);

	/* Most cycles block no queue: then no item is looked at (each a
	 * gang record at random, 100,000 of them at 50,000 nodes). */
	while (q < nq && !queue_cycle_blocked(c, q))
		q++;
	for (size_t k = 0; q < nq && k < n; k++) {
		struct plan_gang *g;
		const struct plan_gang *h;
		struct plan_facts f;

		if (!queue_cycle_blocked(c, items[k].node) ||
		    (g = &r->p->gangs[gang_of_item[k]])->tried)
			continue;
		h = &r->p->gangs[head[items[k].node]];
		f = (struct plan_facts){.why = PLAN_WHY_STRICT_FIFO};
		g->block =
		    (struct plan_block){.why = PLAN_WHY_STRICT_FIFO, .head = head[items[k].node]};
		f.queue = queue_tree_name(r->tree, g->queue);
		f.head_ns = plan__str(r, h->ns);
		f.head_name = plan__str(r, h->name);
		plan__say(r, g, &f);
	}
}

static int schedule(struct plan_run *r)
{
	struct plan *p = r->p;
	struct queue_item *items = arena_alloc(&p->arena, (p->ngangs + 1) * sizeof(*items));
	uint32_t *gang_of_item = arena_alloc(&p->arena, (p->ngangs + 1) * sizeof(*gang_of_item));
	uint32_t *head = arena_alloc(&p->arena, (size_t)queue_tree_size(r->tree) * sizeof(*head));
	struct queue_cycle *c;
	uint32_t tried = 0;
	size_t n = 0;
	int i, rc;

	if (!items || !gang_of_item || !head)
		return -ENOMEM;
	/* Preemptors holding room go first: the room is theirs. */
	if ((rc = plan__holds(r)) < 0 || (rc = pending_items(r, items, gang_of_item, &n)) < 0)
		return rc;
	p->stats.pending_gangs = n;
	if (r->in->forecast && !(r->turns = arena_alloc(&p->arena, (n + 1) * sizeof(*r->turns))))
		return -ENOMEM;
	if ((rc = queue_cycle_new(r->in->qs, items, n, &c)) < 0)
		return rc;
	while ((i = queue_cycle_next(c)) >= 0) {
		struct plan_gang *g = &p->gangs[gang_of_item[i]];

		g->tried = ++tried;
		if (r->turns)
			r->turns[r->nturns++] = gang_of_item[i];
		if ((rc = try_gang(r, g)) < 0)
			break;
		if (rc == 0)
			head[g->queue] = gang_of_item[i];
		p->stats.admitted_gangs += rc;
		queue_cycle_done(c, i, rc > 0);
		rc = 0;
	}
	if (rc == 0)
		behind_heads(r, c, items, gang_of_item, n, head);
	queue_cycle_free(&c);
	return rc;
}

static uint32_t find_id(const struct plan_run *r, const char *s)
{
	return intern_find(r->strs, s, strlen(s));
}

/* Room for about as many gangs, bound and pending pods as the last cycle
 * had (plus an eighth), in the arrays and the gangs' index, so that none
 * is copied over and over as it grows: at 100,000 nodes the copies were
 * a tenth of the cycle. */
static int presize(struct plan_run *r, size_t gangs, size_t bound)
{
	struct plan *p = r->p;

	p->gangs = NULL;
	r->cap_gangs = gangs ? gangs + gangs / 8 : 0;
	r->cap_bound = bound ? bound + bound / 8 : 0;
	/* Where a queue has a default runtime every bound pod may end. */
	r->cap_may_end = r->queue_runtimes ? r->cap_bound : 0;
	if ((r->cap_gangs &&
	     !(p->gangs = arena_alloc(&p->arena, r->cap_gangs * sizeof(*p->gangs)))) ||
	    (r->cap_bound &&
	     !(r->bound = arena_alloc(&p->arena, r->cap_bound * sizeof(*r->bound)))) ||
	    (r->cap_may_end &&
	     !(r->may_end = arena_alloc(&p->arena, r->cap_may_end * sizeof(*r->may_end)))))
		return -ENOMEM;
	return 0;
}

static int setup(struct plan_run *r, struct plan *p, const struct plan_input *in)
{
	/* A PodGroup in one of these phases has run (both dialects'). */
	static const char *const ran[] = {"Running", "Completed", "Unknown", "Finished", "Failed"};
	size_t gangs;

	r->p = p;
	r->in = in;
	r->strs = kubeapi_model_intern(in->model);
	r->cfg = queue_set_config(in->qs);
	r->tree = queue_set_tree(in->qs);
	r->nslots = queue_set_nslots(in->qs);
	r->nres_cfg = r->cfg->resources.n;
	for (size_t k = 0; k < r->nres_cfg; k++)
		r->res_map[k] = kubeapi_model_resource(in->model, r->cfg->resources.v[k],
		                                       strlen(r->cfg->resources.v[k]));
	r->queue_label = find_id(r, "muster.dev/queue");
	r->runtime_key = find_id(r, "muster.dev/expected-runtime");
	r->preemptible_key = find_id(r, "muster.dev/preemptible");
	r->false_value = find_id(r, "false");
	r->phase_inqueue = find_id(r, "Inqueue");
	for (size_t k = 0; k < sizeof(ran) / sizeof(ran[0]); k++)
		r->phase_ran[k] = find_id(r, ran[k]);
	for (size_t k = 0; k < r->cfg->n_all_queues; k++) {
		const struct config_queue *q = r->cfg->all_queues[k];

		r->preemption |= q->preemption.within_queue != CONFIG_WITHIN_QUEUE_NEVER ||
		                 q->preemption.reclaim_within_cohort != CONFIG_RECLAIM_NEVER;
		r->queue_runtimes |= q->default_runtime_ms > 0;
	}
	queue_tree_reset_usage(r->tree);
	queue_tree_age(r->tree, in->now_s); /* fair-share memory, if any: up to now */
	policy_nodes_release(&p->nodes);
	arena_reset(&p->arena);
	/* No gang is left from the last cycle, whatever fails from here on
	 * (plan_cycle() still makes the gangs' messages whole). */
	gangs = p->ngangs;
	p->ngangs = 0;
	if (presize(r, gangs, p->stats.bound_pods) < 0 ||
	    !(r->slot_memo = arena_calloc(&p->arena, PLAN_SLOT_MEMO, sizeof(*r->slot_memo))))
		return -ENOMEM;
	memset(&p->stats, 0, sizeof(p->stats));
	p->binds = NULL;
	p->nbinds = 0;
	p->evictions = NULL;
	p->nevictions = 0;
	p->resv = NULL;
	p->nresv = 0;
	p->ends = NULL;
	p->nends = 0;
	if (backfill_init(&r->bf, &p->nodes, &r->fits, &p->arena, in->now_s,
	                  (unsigned)r->cfg->backfill.reservations) < 0)
		return -ENOMEM;
	return plan__build_nodes(r);
}

/* The cycle's reservations, for the debug API. */
static int publish_resv(struct plan_run *r)
{
	struct plan *p = r->p;

	p->nresv = 0;
	if (!r->bf.nresv)
		return 0;
	if (!(p->resv = arena_alloc(&p->arena, r->bf.nresv * sizeof(*p->resv))))
		return -ENOMEM;
	for (size_t k = 0; k < r->bf.nresv; k++) {
		const struct backfill_resv *v = &r->bf.resv[k];

		p->resv[k] =
		    (struct plan_reservation){v->id, v->start_s, v->nmembers, v->specs, v->at};
	}
	p->nresv = r->bf.nresv;
	return 0;
}

/* With plan_input.check_state, what is kept across cycles against a
 * rebuild (plan_stats.state_mismatches). */
static int check_state(struct plan_run *r)
{
	size_t pods = 0;
	int rc = r->in->check_state ? plan__podtab_check(r, &pods) : 0;

	r->p->stats.state_mismatches += pods; /* beside the node table's (view.c) */
	return rc;
}

int plan_cycle(struct plan *p, const struct plan_input *in, struct plan_memory *keep)
{
	struct plan_run r = {.keep = keep};
	int rc;

	if (in->forecast && (in->forecast_pct || in->forecast_min_ns))
		r.cpu0_ns = plan__cpu_ns();
	if ((rc = setup(&r, p, in)) == 0 && (rc = plan__podtab_sync(&r)) == 0 &&
	    (rc = check_state(&r)) == 0 && (rc = plan__gangs_start(&r)) == 0 &&
	    (rc = plan__count_pods(&r)) == 0 && (rc = plan__group_gangs(&r)) == 0 &&
	    (rc = plan__collect_pending(&r)) == 0 && (rc = plan__mix(&r)) == 0 &&
	    (rc = plan__enqueue(&r)) == 0) {
		if (r.preemption)
			plan__protect(&r);
		if ((rc = schedule(&r)) == 0) {
			queue_tree_hold(r.tree); /* what stands until the next cycle */
			plan__forecast(&r);
		}
	}
	messages(&r);
	if (rc == 0 && (rc = publish_resv(&r)) == 0)
		rc = plan__publish_ends(&r);
	if (rc < 0) { /* the changes given may not be filed: read all next time */
		keep->pods.built = 0;
		keep->base.valid = 0;
		keep->counted.valid = 0;
	}
	plan__gangs_end(&r, rc);
	p->stats.gangs = p->ngangs;
	p->stats.reservations = r.bf.nresv;
	p->stats.reserve_tries = r.bf.tries;
	p->stats.backfilled = r.bf.backfilled;
	p->stats.preempt_tries = r.pre.budget.tries;
	p->stats.arena_bytes = p->arena.used_total;
	idmap_free(&r.memo);
	idmap_free(&r.mix_specs);
	policy_fitcache_free(&r.fits);
	return rc;
}

void plan_hold_drop(struct plan_memory *keep, uint64_t key)
{
	free(idmap_del(&keep->holds, key));
}

void plan_memory_free(struct plan_memory *keep)
{
	const struct idmap_slot *e;

	IDMAP_FOREACH(&keep->holds, i, e)
		free(e->value);
	idmap_free(&keep->holds);
	free(keep->gated);
	free(keep->pods.v);
	free(keep->pods.keys);
	free(keep->pods.names);
	arena_free(&keep->pods.runs);
	free(keep->pods.order);
	free(keep->pods.next);
	plan__gangs_free(&keep->gangs);
	free(keep->nodes.keys);
	free(keep->nodes.slot);
	policy_nodes_release(&keep->counted.t);
	arena_free(&keep->counted.arena);
	free(keep->counted.names);
	policy_nodes_release(&keep->base.t);
	arena_free(&keep->base.arena);
	arena_free(&keep->forecast.scratch);
	free(keep->forecast.keys);
	free(keep->forecast.starts);
	memset(keep, 0, sizeof(*keep));
}

void plan_free(struct plan *p)
{
	policy_nodes_release(&p->nodes);
	arena_free(&p->arena);
	memset(p, 0, sizeof(*p));
}
