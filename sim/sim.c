/*
 * The clock (sim.h): events, cycles, binds applied, and the invariants a
 * plan must keep, checked as they happen.
 *
 * Cost: each event time costs one cycle per round of binds (plan_cycle
 * keeps what did not change, so a cycle costs what changed plus the
 * queue's turns) and O(gangs) to find the next event; memory is the
 * world's objects plus four words a gang and one a pod.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue.h"
#include "sim/internal.h"

struct gstate {
	int64_t start, end;
	uint32_t first; /* its first member's slot in run.node_of */
	uint8_t arrived, finished;
};

struct run {
	const struct sim_options *o;
	struct sim_world w;
	struct queue_set *qs;
	struct plan plan;
	struct plan_memory keep;
	struct gstate *g;
	uint32_t *node_of;  /* per member: node index, UINT32_MAX while pending */
	int64_t *free_gpus; /* per node */
	uint32_t *node_id;  /* per node: its interned name */
	uint32_t *bound;    /* per gang: members bound by the cycle in hand */
	/* Pod name id -> its member slot + 1; node name id -> index + 1;
	 * PodGroup name id -> gang index + 1. */
	struct idmap member, node_at, gang_at;
	long *plan_gang; /* per plan gang of the cycle in hand: its gang, or -1 */
	size_t cap_plan_gang;
	uint32_t *gang_of; /* per member slot: its gang */
	uint32_t sched_id, ns_id;
	int64_t now;
	uint64_t cycles;
	size_t violations;
};

static __attribute__((format(printf, 2, 3))) void violation(struct run *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->violations++;
	if (r->o->hooks.violation)
		r->o->hooks.violation(r->o->hooks.data, r->now, msg);
}

/* ---- the world as it moves ------------------------------------------------ */

/* Past a deadline shorter than its run, a pod is killed: Failed then. */
static bool killed(const struct sim_gang *g)
{
	return g->declared == SIM_DECLARED_DEADLINE && g->deadline_s < g->runtime_s;
}

static int arrive(struct run *r, size_t k)
{
	const struct sim_gang *g = &r->o->gangs[k];
	int rc = sim__put_group(&r->w, g);

	for (uint32_t p = 0; rc == 0 && p < g->pods; p++)
		rc = sim__put_pod(&r->w, g, p, NULL, NULL, SIM_NO_TIME);
	r->g[k].arrived = 1;
	if (rc == 0 && r->o->hooks.arrived)
		r->o->hooks.arrived(r->o->hooks.data, r->now, k);
	return rc;
}

static int complete(struct run *r, size_t k)
{
	const struct sim_gang *g = &r->o->gangs[k];
	struct gstate *s = &r->g[k];
	int rc = 0;

	for (uint32_t p = 0; rc == 0 && p < g->pods; p++) {
		uint32_t n = r->node_of[s->first + p];

		rc = sim__put_pod(&r->w, g, p, r->o->nodes[n].name,
		                  killed(g) ? "Failed" : "Succeeded", s->start);
		r->free_gpus[n] += g->gpus;
	}
	s->finished = 1;
	if (rc == 0 && r->o->hooks.ended)
		r->o->hooks.ended(r->o->hooks.data, r->now, k, killed(g));
	return rc;
}

/* ---- a cycle's binds ------------------------------------------------------ */

/* One bind: checked (a member of a known gang, not bound yet, room on the
 * node), then counted in. */
static void take_bind(struct run *r, const struct plan_bind *b)
{
	uintptr_t m = b->pod->ns == r->ns_id ? (uintptr_t)idmap_get(&r->member, b->pod->name) : 0;
	uintptr_t at = (uintptr_t)idmap_get(&r->node_at, b->node);
	uint32_t k, *slot;
	long i, p;

	if (!m || !at) {
		violation(r, "a bind of a pod of no simulated gang, or to no node");
		return;
	}
	k = r->gang_of[m - 1];
	p = (long)(m - 1 - r->g[k].first);
	i = (long)at - 1;
	slot = &r->node_of[m - 1];
	if (*slot != UINT32_MAX || r->g[k].start != SIM_NO_TIME) {
		violation(r, "%s: member %ld bound twice", r->o->gangs[k].name, p);
		return;
	}
	*slot = (uint32_t)i;
	r->free_gpus[i] -= r->o->gangs[k].gpus;
	if (r->free_gpus[i] < 0)
		violation(r, "node %s over-committed by %" PRId64 " GPUs", r->o->nodes[i].name,
		          -r->free_gpus[i]);
	r->bound[k]++;
}

/* The gangs the cycle bound: whole, written back bound and Running. */
static int start_gangs(struct run *r)
{
	int rc = 0;

	for (size_t k = 0; rc == 0 && k < r->o->ngangs; k++) {
		const struct sim_gang *g = &r->o->gangs[k];
		struct gstate *s = &r->g[k];

		if (!r->bound[k])
			continue;
		if (r->bound[k] != g->pods)
			violation(r, "%s: %" PRIu32 " of %" PRIu32 " members bound in one cycle",
			          g->name, r->bound[k], g->pods);
		r->bound[k] = 0;
		s->start = r->now;
		s->end = r->now + (killed(g) ? g->deadline_s : g->runtime_s);
		for (uint32_t p = 0; rc == 0 && p < g->pods; p++)
			if (r->node_of[s->first + p] != UINT32_MAX)
				rc = sim__put_pod(&r->w, g, p,
				                  r->o->nodes[r->node_of[s->first + p]].name, NULL,
				                  s->start);
		if (rc == 0 && r->o->hooks.started)
			r->o->hooks.started(r->o->hooks.data, r->now, k, r->node_of + s->first);
	}
	return rc;
}

/* Which simulated gang each of the plan's is. O(plan gangs). */
static int map_plan_gangs(struct run *r)
{
	if (r->plan.ngangs > r->cap_plan_gang) {
		long *v = realloc(r->plan_gang, r->plan.ngangs * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->plan_gang = v;
		r->cap_plan_gang = r->plan.ngangs;
	}
	for (size_t i = 0; i < r->plan.ngangs; i++) {
		const struct plan_gang *pg = &r->plan.gangs[i];
		uintptr_t k = pg->ns == r->ns_id ? (uintptr_t)idmap_get(&r->gang_at, pg->name) : 0;

		r->plan_gang[i] = (long)k - 1;
	}
	return 0;
}

/* One cycle at r->now: the pods it bound (>= 0), or an error. */
static int cycle(struct run *r)
{
	struct plan_input in;
	int rc;

	sim__plan_input(&r->w, r->qs, &in);
	in.schedulers = &r->sched_id;
	in.nschedulers = 1;
	in.now_s = r->o->epoch_s + r->now;
	in.check_state = r->o->check_state;
	in.forecast = r->o->forecast;
	in.forecast_every_s = r->o->forecast_every_s;
	r->cycles++;
	if ((rc = plan_cycle(&r->plan, &in, &r->keep)) < 0) {
		violation(r, "cycle %" PRIu64 " failed: %s", r->cycles, strerror(-rc));
		return rc;
	}
	if (r->plan.stats.state_mismatches)
		violation(r, "cycle %" PRIu64 ": %zu kept records unlike a rebuild's", r->cycles,
		          r->plan.stats.state_mismatches);
	if (r->plan.nevictions)
		violation(r, "%zu evictions: the simulator does not preempt", r->plan.nevictions);
	if (r->o->hooks.cycled) {
		if ((rc = map_plan_gangs(r)) < 0)
			return rc;
		r->o->hooks.cycled(r->o->hooks.data, r->now, r->cycles, &r->plan, &r->keep,
		                   r->plan_gang);
	}
	for (size_t b = 0; b < r->plan.nbinds; b++)
		take_bind(r, &r->plan.binds[b]);
	if ((rc = start_gangs(r)) < 0)
		return rc;
	return (int)(r->plan.nbinds > 0);
}

/* ---- the clock ------------------------------------------------------------ */

/* The next event after r->now, or SIM_NO_TIME. O(gangs). */
static int64_t next_event(const struct run *r)
{
	int64_t t = SIM_NO_TIME;
	bool waiting = false;

	for (size_t k = 0; k < r->o->ngangs; k++) {
		const struct gstate *s = &r->g[k];
		int64_t e = !s->arrived                               ? r->o->gangs[k].at_s
		            : s->start != SIM_NO_TIME && !s->finished ? s->end
		                                                      : SIM_NO_TIME;

		waiting |= s->arrived && s->start == SIM_NO_TIME;
		if (e != SIM_NO_TIME && (t == SIM_NO_TIME || e < t))
			t = e;
	}
	if (waiting && r->o->tick_s && (t == SIM_NO_TIME || r->now + r->o->tick_s < t))
		t = r->now + r->o->tick_s;
	return t;
}

/* Everything due at r->now, then cycles until one binds nothing. */
static int step(struct run *r)
{
	int rc = 0, rounds = 0;

	for (size_t k = 0; rc == 0 && k < r->o->ngangs; k++)
		if (r->g[k].start != SIM_NO_TIME && !r->g[k].finished && r->g[k].end <= r->now)
			rc = complete(r, k);
	for (size_t k = 0; rc == 0 && k < r->o->ngangs; k++)
		if (!r->g[k].arrived && r->o->gangs[k].at_s <= r->now)
			rc = arrive(r, k);
	while (rc == 0 && (rc = cycle(r)) > 0)
		if (++rounds == SIM_MAX_ROUNDS) {
			violation(r, "still binding after %d cycles at one time", rounds);
			return -ELOOP;
		}
	return rc;
}

/* ---- setting up ------------------------------------------------------------ */

static int check_input(const struct sim_options *o)
{
	int64_t gpus = 0;

	for (size_t i = 0; i < o->nnodes; i++)
		gpus += o->nodes[i].gpus;
	for (size_t k = 0; k < o->ngangs; k++) {
		const struct sim_gang *g = &o->gangs[k];

		if (!g->name || !g->pods || g->gpus < 0 || g->runtime_s < 0 || g->at_s < 0 ||
		    (int64_t)g->pods * g->gpus > gpus ||
		    ((g->declared == SIM_DECLARED_POD || g->declared == SIM_DECLARED_GROUP) &&
		     !g->declared_value))
			return -EINVAL;
	}
	return 0;
}

/* Member p of gang k: its pod's name id maps to its slot. */
static int add_member(struct run *r, size_t k, uint32_t p)
{
	uint32_t slot = r->g[k].first + p, id;
	char name[300];

	snprintf(name, sizeof(name), "%s-%" PRIu32, r->o->gangs[k].name, p);
	id = sim__id(&r->w, name);
	if (idmap_get(&r->member, id))
		return -EINVAL; /* two gangs of one name, or names that meet */
	r->gang_of[slot] = (uint32_t)k;
	return idmap_put(&r->member, id, (void *)(uintptr_t)(slot + 1)) < 0 ? -ENOMEM : 0;
}

static int setup(struct run *r, const struct sim_options *o)
{
	size_t members = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	r->o = o;
	if ((rc = check_input(o)) < 0 || (rc = sim__world_init(&r->w, o->epoch_s)) < 0 ||
	    (rc = queue_set_build(o->cfg, &r->qs)) < 0)
		return rc;
	for (size_t k = 0; k < o->ngangs; k++)
		members += o->gangs[k].pods;
	r->g = calloc(o->ngangs + 1, sizeof(*r->g));
	r->bound = calloc(o->ngangs + 1, sizeof(*r->bound));
	r->node_of = malloc((members + 1) * sizeof(*r->node_of));
	r->free_gpus = calloc(o->nnodes + 1, sizeof(*r->free_gpus));
	r->node_id = calloc(o->nnodes + 1, sizeof(*r->node_id));
	r->gang_of = malloc((members + 1) * sizeof(*r->gang_of));
	if (!r->g || !r->bound || !r->node_of || !r->free_gpus || !r->node_id || !r->gang_of)
		return -ENOMEM;
	memset(r->node_of, 0xff, (members + 1) * sizeof(*r->node_of));
	for (size_t k = 0, first = 0; k < o->ngangs; first += o->gangs[k++].pods) {
		uint32_t id = sim__id(&r->w, o->gangs[k].name);

		if (idmap_get(&r->gang_at, id))
			return -EINVAL;
		if (idmap_put(&r->gang_at, id, (void *)(uintptr_t)(k + 1)) < 0)
			return -ENOMEM;
		r->g[k].first = (uint32_t)first;
		r->g[k].start = r->g[k].end = SIM_NO_TIME;
		for (uint32_t p = 0; p < o->gangs[k].pods; p++)
			if ((rc = add_member(r, k, p)) < 0)
				return rc;
	}
	for (size_t i = 0; i < o->nnodes; i++) {
		if ((rc = sim__put_node(&r->w, &o->nodes[i])) < 0)
			return rc;
		r->node_id[i] = sim__id(&r->w, o->nodes[i].name);
		r->free_gpus[i] = o->nodes[i].gpus;
		if (idmap_get(&r->node_at, r->node_id[i]))
			return -EINVAL; /* two nodes of one name */
		if (idmap_put(&r->node_at, r->node_id[i], (void *)(uintptr_t)(i + 1)) < 0)
			return -ENOMEM;
	}
	r->sched_id = sim__id(&r->w, SIM_SCHEDULER);
	r->ns_id = sim__id(&r->w, SIM_NAMESPACE);
	return 0;
}

static void teardown(struct run *r)
{
	plan_free(&r->plan);
	plan_memory_free(&r->keep);
	queue_set_free(&r->qs);
	sim__world_free(&r->w);
	free(r->g);
	free(r->bound);
	free(r->node_of);
	free(r->free_gpus);
	free(r->node_id);
	free(r->gang_of);
	idmap_free(&r->member);
	idmap_free(&r->node_at);
	idmap_free(&r->gang_at);
	free(r->plan_gang);
}

static int result(const struct run *r, struct sim_result *out)
{
	size_t n = r->o->ngangs + 1;

	out->start_s = malloc(n * sizeof(*out->start_s));
	out->end_s = malloc(n * sizeof(*out->end_s));
	if (!out->start_s || !out->end_s)
		return -ENOMEM;
	for (size_t k = 0; k < r->o->ngangs; k++) {
		out->start_s[k] = r->g[k].start;
		out->end_s[k] = r->g[k].finished ? r->g[k].end : SIM_NO_TIME;
	}
	out->now_s = r->now;
	out->cycles = r->cycles;
	out->violations = r->violations;
	return 0;
}

int sim_run(const struct sim_options *o, struct sim_result *out)
{
	int64_t stop = o->stop_s ? o->stop_s : SIM_DEFAULT_STOP_S, t;
	struct run r;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = setup(&r, o)) == 0) {
		r.now = 0;
		while ((rc = step(&r)) >= 0 && (t = next_event(&r)) != SIM_NO_TIME && t <= stop)
			r.now = t;
		if (rc > 0)
			rc = 0;
		if (result(&r, out) < 0 && rc == 0)
			rc = -ENOMEM;
	}
	teardown(&r);
	if (rc < 0 && !out->start_s)
		sim_result_free(out);
	return rc;
}

void sim_result_free(struct sim_result *r)
{
	free(r->start_s);
	free(r->end_s);
	memset(r, 0, sizeof(*r));
}
