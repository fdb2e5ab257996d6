/*
 * The forecast (plan.h, step 6): an expected start for the waiting gangs
 * the cycle tried and could not admit, not only for the ones that hold a
 * reservation. The cycle's own rules are played forward over the timeline
 * of expected ends. At each moment some work ends (the cycle's timeline,
 * then what the forecast itself started), its room and its quota come
 * back, and the waiting gangs are tried again in the order a cycle would
 * give them their turns then (the cycle's own while they share a queue;
 * across queues fair share moves as usage does, so the queue module
 * orders them again): each must fit its quota and be placed whole; the
 * first ones that do not fit hold the configuration's reservations, and a
 * later gang may use reserved nodes only as far as it cannot delay them
 * (backfill.h). A gang's expected start is the moment it is placed; one
 * still holding a reservation when the forecast stops starts by that
 * reservation's start; PLAN_NEVER (unknown) when it waits for work with
 * no runtime, or fits nowhere.
 *
 * What an expected start assumes: no gang arrives and none ends before
 * or after its runtime; no preemption makes room; fair sharing's memory
 * of past usage stays as the cycle found it; and, so that a moment costs
 * a bounded amount, only the first FORECAST_WINDOW gangs still waiting
 * take part in it (the cycle gives every waiting gang a turn): a gang
 * deeper in the order than that is taken to wait for some ahead of it
 * to start, so its start may come earlier than forecast, where a gang
 * within the window's comes when forecast.
 *
 * Cost: a copy of the node table; per moment, the ends it gives back (a
 * node row and a queue charge each) and, for each gang in the window, a
 * quota check, then a placement unless a cheap test says no: a
 * same-shaped gang already failed at that moment (within one moment room
 * only shrinks), the nodes by free GPUs (a histogram) cannot hold its
 * members, or its last placement failed and no node given back since
 * takes one of its members. The reservations are searched again only
 * when one's start comes or another gang asks for one first. Each
 * placement is O(members x feasible nodes) (policy.h); at 5,000 nodes
 * about 10 us, which is what the budget buys.
 *
 * Budget: CPU time (what the
 * cycles since the last forecast set aside, forecast_pct of each, at most
 * FORECAST_CREDIT_CYCLES of this one's, at least forecast_min_ns) and
 * FORECAST_HORIZON_S. A gang the forecast did not reach keeps 0 ("not
 * estimated"), and plan.forecast_until_s says how far it looked. It runs
 * every forecast_every_s; the cycles between give the gangs still waiting
 * its answers, kept by gang key in plan_memory.forecast.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/plan_internal.h"

/* Buckets of nodes by free whole GPUs: 0 .. 16 each, and one for more. */
#define GPU_BUCKETS 18

/* How far ahead the forecast plays: past this, a gang not yet placed is
 * not estimated (unless a reservation bounds its start). */
#define FORECAST_HORIZON_S (7 * 24 * 3600)

/* The gangs still waiting that take part in a moment (above). */
#define FORECAST_WINDOW 64

/* Slots of the failure memo of one moment (direct mapped). */
#define FORECAST_MEMO 256

/* The most CPU time the cycles between two forecasts set aside for the
 * next, in cycles: a forecast every 10 s with a share of 15% takes at
 * most the time of 4 cycles, however many ran since (a cycle that
 * forecasts may take 5 times as long as one that does not). */
#define FORECAST_CREDIT_CYCLES 4

/* The clock (a system call) is read after each placement tried, and once
 * per this many gangs looked at without one. */
#define CLOCK_EVERY 16

enum fc_state {
	FC_NEW,     /* not looked at yet */
	FC_SKIP,    /* not the forecast's: admitted, or waiting on a gate */
	FC_WAITING, /* looked at, not started */
	FC_DONE,    /* started at `start`, or never (PLAN_NEVER) */
};

struct fc_gang {
	struct plan_gang *g;
	const struct kubeapi_podspec **specs;
	int64_t *req; /* what its n members ask, per queue slot */
	uint32_t n;
	int64_t gpus; /* whole GPUs a member asks when all ask alike, else 0 */
	int64_t runtime;
	int64_t start;                /* FC_DONE: when placed, or PLAN_NEVER */
	int64_t resv_s;               /* the start of the reservation it held last; 0 none */
	const struct policy_fit *fit; /* its one spec's, else NULL */
	/* Its last placement failed (failed) when freed[0..seen) had been
	 * given back, under reservations of generation gen that it had to
	 * keep out of (guarded), or none (0). */
	size_t seen;
	uint64_t gen;
	uint8_t failed, guarded;
	uint8_t state;
	uint8_t holds; /* holds one of the standing reservations */
	/* Its place in the order of the last moment it was in the window
	 * (stamp: that moment), or, stamp 0, its place in the cycle's. */
	uint32_t rank;
	uint64_t stamp;
};

/* A shape that did not fit at this moment: (one spec, members, the
 * reservations it keeps out of). */
struct fc_memo {
	const struct kubeapi_podspec *spec;
	uint32_t n;
	uint64_t moment;
	size_t kept_out;
};

/* A charge the forecast made to the queue tree (work that ended: -1; a
 * gang it started: +1), taken back in reverse when it is done, so the
 * cycle's usage is what the tree says afterwards. */
struct fc_charge {
	const struct kubeapi_podspec *spec;
	int32_t queue;
	uint16_t flavor;
	int8_t sign;
};

struct forecast {
	struct plan_run *r;
	struct policy_nodes s; /* the table at time t */
	int64_t t, horizon;
	/* The cycle's timeline: [at, nends) still to come. */
	struct backfill_end *ends, *forever;
	size_t nends, at, nforever;
	/* The ends of what the forecast placed (and of the cycle's binds
	 * made after the timeline was built), by end: [mfirst, nmine) to
	 * come. */
	struct backfill_end *mine;
	size_t mfirst, nmine, cap_mine;
	/* The nodes of s by free whole GPUs (the last bucket: that many or
	 * more), for the cheap test, and each node's bucket. */
	size_t by_gpus[GPU_BUCKETS];
	uint8_t *bucket_of;
	/* The gangs in turn order; [first, n) may still wait. */
	struct fc_gang *v;
	size_t n, first, left;
	/* One moment's window (indexes into v) and, when its gangs come
	 * from more than one queue, their queue items. */
	uint32_t *win;
	struct queue_item *items;
	struct fc_charge *log;
	size_t nlog, cap_log;
	/* The standing reservations, made in `scratch` (emptied when they
	 * are made again); placements on s take the cycle's arena (what the
	 * table builds on first use, the shares given). */
	struct backfill b;
	struct arena *scratch;
	/* A gang ahead of a holder in the order failed while they were all
	 * given: make them again. */
	uint8_t b_stale;
	size_t last_holder; /* the index of the last gang holding one, + 1 */
	uint64_t b_gen;     /* counts the times they were made */
	/* The nodes work ended on, in the order given back. */
	uint32_t *freed;
	size_t nfreed, cap_freed;
	struct fc_memo memo[FORECAST_MEMO];
	uint64_t moment;
	/* The budget: CPU time from `since`, and the gangs looked at. */
	int64_t budget_ns, since_ns;
	size_t looks;
	uint8_t tried, cut;
};

int64_t plan__cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* t + runtime, PLAN_NEVER absorbing. */
static int64_t after(int64_t t, int64_t runtime)
{
	return runtime == PLAN_NEVER || runtime > PLAN_NEVER - t ? PLAN_NEVER : t + runtime;
}

/* ---- the forecast's own ends ------------------------------------------ */

/* The ends of what the forecast started, by end, in f->mine[mfirst,
 * nmine) (those before mfirst have come): a search reads them in order
 * (backfill.more). A started gang's members end together and go in at
 * once: one move of the later ends a gang. */
static int mine_room(struct forecast *f, size_t more)
{
	while (f->nmine + more > f->cap_mine)
		if (arena_grow(&f->r->p->arena, &f->mine, f->cap_mine, &f->cap_mine,
		               sizeof(*f->mine), 256) < 0)
			return -ENOMEM;
	return 0;
}

static int by_end_s(const void *a, const void *b)
{
	const struct backfill_end *x = a, *y = b;

	return (x->end_s > y->end_s) - (x->end_s < y->end_s);
}

/* x's n members, placed on r->turn_out with r->turn_held, all ending at end. */
static int mine_insert(struct forecast *f, const struct fc_gang *x, int64_t end)
{
	size_t lo = f->mfirst, hi = f->nmine;

	if (mine_room(f, x->n) < 0)
		return -ENOMEM;
	while (lo < hi) { /* after every end at or before it */
		size_t mid = lo + (hi - lo) / 2;

		if (f->mine[mid].end_s <= end)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&f->mine[lo + x->n], &f->mine[lo], (f->nmine - lo) * sizeof(*f->mine));
	for (uint32_t k = 0; k < x->n; k++)
		f->mine[lo + k] = (struct backfill_end){end, f->r->turn_out[k], x->g->queue,
		                                        x->specs[k], f->r->turn_held[k]};
	f->nmine += x->n;
	return 0;
}

/* ---- free GPUs ---------------------------------------------------------- */

static unsigned bucket(int64_t free)
{
	if (free < 0)
		return 0;
	return free < GPU_BUCKETS - 1 ? (unsigned)free : GPU_BUCKETS - 1;
}

/* Could n members of `gpus` whole GPUs each find nodes with as many free?
 * (No means they do not fit; yes, that they might.) */
static bool gpus_may_fit(const struct forecast *f, int64_t gpus, uint32_t n)
{
	uint64_t can = 0;

	if (gpus <= 0 || f->by_gpus[GPU_BUCKETS - 1])
		return true;
	for (unsigned b = (unsigned)gpus; b < GPU_BUCKETS - 1 && can < n; b++)
		can += f->by_gpus[b] * (uint64_t)(b / (unsigned)gpus);
	return can >= n;
}

/* Node i's free GPUs changed: its place in the histogram. */
static void rebucket(struct forecast *f, size_t i)
{
	unsigned b = bucket(f->s.free_gpu[i]);

	f->by_gpus[f->bucket_of[i]]--;
	f->by_gpus[b]++;
	f->bucket_of[i] = (uint8_t)b;
}

/* ---- queue usage ------------------------------------------------------- */

/* A pod of spec on node i in (sign +1) or out of (-1) queue's usage. */
static int charge(struct forecast *f, int queue, const struct kubeapi_podspec *spec, size_t i,
                  int sign)
{
	struct plan_run *r = f->r;
	uint16_t flavor = f->s.flavor[i];
	int64_t req[QUEUE_MAX_SLOTS];

	if (queue == QUEUE_NONE)
		return 0;
	if (arena_grow(&r->p->arena, &f->log, f->nlog, &f->cap_log, sizeof(*f->log), 256) < 0)
		return -ENOMEM;
	f->log[f->nlog++] = (struct fc_charge){spec, queue, flavor, (int8_t)sign};
	memset(req, 0, r->nslots * sizeof(*req));
	plan__add_pod(r, req, spec, flavor);
	return queue_tree_charge(r->tree, queue, req, sign);
}

/* Every charge taken back: the tree as the cycle left it. */
static void uncharge(struct forecast *f)
{
	struct plan_run *r = f->r;
	int64_t req[QUEUE_MAX_SLOTS];

	while (f->nlog) {
		const struct fc_charge *c = &f->log[--f->nlog];

		memset(req, 0, r->nslots * sizeof(*req));
		plan__add_pod(r, req, c->spec, c->flavor);
		queue_tree_charge(r->tree, c->queue, req, -c->sign);
	}
}

/* ---- setting up -------------------------------------------------------- */

/* Does the forecast take g: waiting for room or quota (not for a gate,
 * a StrictFIFO head or members)? */
static bool forecast_takes(const struct plan_gang *g)
{
	return g->state == PLAN_WAITING && g->npending &&
	       (g->block.why == PLAN_WHY_FIT || g->block.why == PLAN_WHY_QUOTA);
}

/* Gang x as the forecast takes it, made when the window first reaches
 * it (most waiting gangs of a large cluster never are): the members that
 * make up minMember, as the cycle's turn tries them, their specs and
 * request. 0 or -ENOMEM. */
static int prepare(struct forecast *f, struct fc_gang *x)
{
	struct plan_run *r = f->r;
	struct plan_gang *g = x->g;
	uint32_t have = g->bound + g->succeeded;
	uint32_t need = have < g->min_member ? g->min_member - have : 1;

	x->state = FC_SKIP;
	if (!forecast_takes(g)) {
		f->left--;
		return 0;
	}
	if (g->group_tasks)
		need = plan__task_order(r, g, need);
	if (need > g->npending)
		need = g->npending;
	x->n = need;
	x->runtime = plan__runtime(r, g);
	if (!(x->specs = plan__specs(r, g, g->pending, need)) ||
	    !(x->req = arena_alloc(&r->p->arena, r->nslots * sizeof(*x->req))))
		return -ENOMEM;
	plan__request(r, x->req, g->pending, need);
	x->gpus = g->pending_spec ? policy_spec_gpus(g->pending_spec) : 0;
	if (g->pending_spec && g->within.level < 0 &&
	    !(x->fit = policy_fit_get(&r->fits, &r->p->arena, &r->p->nodes, g->pending_spec)))
		return -ENOMEM;
	/* Each spec's fit made now, in the cycle's arena: a fit the cache
	 * first met during a search would not outlive its scratch room. */
	for (uint32_t m = 0; m < need; m++)
		if ((m == 0 || x->specs[m] != x->specs[m - 1]) &&
		    !policy_fit_get(&r->fits, &r->p->arena, &r->p->nodes, x->specs[m]))
			return -ENOMEM;
	if (plan__turn_room(r, need) < 0)
		return -ENOMEM;
	x->state = FC_WAITING;
	return 0;
}

static int setup(struct forecast *f, struct plan_run *r)
{
	int rc;

	memset(f, 0, sizeof(*f));
	f->r = r;
	f->scratch = &r->keep->forecast.scratch;
	f->b_stale = 1;
	if (r->in->forecast_pct || r->in->forecast_min_ns) {
		f->since_ns = plan__cpu_ns();
		f->budget_ns = r->keep->forecast.credit_ns;
		if (f->budget_ns < r->in->forecast_min_ns)
			f->budget_ns = r->in->forecast_min_ns;
	}
	f->t = r->in->now_s;
	f->horizon = after(r->in->now_s, FORECAST_HORIZON_S);
	f->n = r->nturns;
	if (!(f->v = arena_calloc(&r->p->arena, f->n + 1, sizeof(*f->v))))
		return -ENOMEM;
	for (size_t k = 0; k < f->n; k++) {
		f->v[k].g = &r->p->gangs[r->turns[k]];
		f->v[k].rank = (uint32_t)k;
	}
	f->left = f->n;
	if (!(f->win = arena_alloc(&r->p->arena, FORECAST_WINDOW * sizeof(*f->win))) ||
	    !(f->items = arena_alloc(&r->p->arena, FORECAST_WINDOW * sizeof(*f->items))))
		return -ENOMEM;
	if ((rc = plan__timeline(r)) < 0 || (rc = backfill_forever(&r->bf)) < 0 ||
	    (rc = policy_nodes_copy(&f->s, &r->p->nodes, &r->p->arena)) < 0)
		return rc;
	if (!(f->bucket_of = arena_alloc(&r->p->arena, f->s.n + 1)))
		return -ENOMEM;
	for (size_t i = 0; i < f->s.n; i++) {
		f->bucket_of[i] = (uint8_t)bucket(f->s.free_gpu[i]);
		f->by_gpus[f->bucket_of[i]]++;
	}
	f->ends = r->bf.ends;
	f->nends = r->bf.nends;
	f->forever = r->bf.forever;
	f->nforever = r->bf.nforever;
	/* The cycle's binds the timeline missed (made after it was built). */
	for (size_t k = r->timed_binds; k < r->p->nbinds; k++) {
		const struct plan_bind *b = &r->p->binds[k];
		const struct plan_gang *g = &r->p->gangs[b->gang];
		long i = policy_nodes_find(&f->s, b->node);
		int64_t end = plan__end(r, &r->p->gangs[b->gang]);

		if (i < 0 || end == PLAN_NEVER)
			continue;
		if ((rc = mine_room(f, 1)) < 0)
			return rc;
		f->mine[f->nmine++] =
		    (struct backfill_end){end, (uint32_t)i, g->queue, b->pod->spec, b->held};
	}
	if (f->nmine)
		qsort(f->mine, f->nmine, sizeof(*f->mine), by_end_s);
	return 0;
}

/* ---- one moment -------------------------------------------------------- */

/* Over budget: stop where it stands. */
static bool spent(struct forecast *f)
{
	if (f->budget_ns && (f->tried || ++f->looks % CLOCK_EVERY == 0) &&
	    plan__cpu_ns() - f->since_ns > f->budget_ns)
		f->cut = 1;
	f->tried = 0;
	return f->cut;
}

static struct fc_memo *memo_slot(struct forecast *f, const struct fc_gang *x, size_t kept)
{
	uint64_t h =
	    (uint64_t)(uintptr_t)x->specs[0] ^ ((uint64_t)x->n << 7) ^ ((uint64_t)kept << 3);

	return &f->memo[(h * 0x9E3779B97F4A7C15ull >> 56) % FORECAST_MEMO];
}

/* Did a gang of x's shape fail at this moment, keeping out of as many
 * reservations? Only gangs of one spec and no topology constraint have a
 * shape. */
static bool memo_says_no(struct forecast *f, const struct fc_gang *x, size_t kept)
{
	const struct fc_memo *m;

	if (!x->g->pending_spec || x->g->within.level >= 0)
		return false;
	m = memo_slot(f, x, kept);
	return m->moment == f->moment && m->spec == x->specs[0] && m->n == x->n &&
	       m->kept_out == kept;
}

static void memo_add(struct forecast *f, const struct fc_gang *x, size_t kept)
{
	if (x->g->pending_spec && x->g->within.level < 0)
		*memo_slot(f, x, kept) = (struct fc_memo){x->specs[0], x->n, f->moment, kept};
}

/* x placed at time t (r->turn_out, turn_held, counted into s): its quota
 * charged, and its members' ends, if it has a runtime, to come; without
 * one they hold their nodes for good. */
static int started(struct forecast *f, struct fc_gang *x)
{
	int64_t end = after(f->t, x->runtime);
	int rc;

	x->state = FC_DONE;
	x->start = f->t;
	f->left--;
	for (uint32_t k = 0; k < x->n; k++)
		rebucket(f, f->r->turn_out[k]);
	for (uint32_t k = 0; k < x->n; k++)
		if ((rc = charge(f, x->g->queue, x->specs[k], f->r->turn_out[k], +1)) < 0)
			return rc;
	return end == PLAN_NEVER ? 0 : mine_insert(f, x, end);
}

/* Is x ahead of the last gang given a reservation, in this moment's
 * order? Yes, too, when the holder's place is of another order (it left
 * the window, or the order was worked out afresh since): the holders may
 * then not be the first that do not fit, so they are made again. */
static bool ahead_of_holder(const struct forecast *f, const struct fc_gang *x)
{
	const struct fc_gang *h = f->last_holder ? &f->v[f->last_holder - 1] : NULL;

	return h && (h->stamp != x->stamp || x->rank < h->rank);
}

/* x does not fit now: a reservation if one is left to give. */
static int reserve(struct forecast *f, struct fc_gang *x)
{
	const struct backfill_resv *v;
	int rc;

	if (backfill_full(&f->b)) {
		/* The cycle would give it the reservation a later gang holds:
		 * from the next moment on. */
		f->b_stale |= ahead_of_holder(f, x);
		return 0;
	}
	f->b.more = f->mine + f->mfirst; /* what the forecast placed ends too */
	f->b.nmore = f->nmine - f->mfirst;
	if ((rc = backfill_reserve(&f->b, (uint32_t)(x->g - f->r->p->gangs), &x->g->within,
	                           x->specs, x->n, x->runtime, &v)) < 0)
		return rc;
	if (rc == 0) { /* fits not even once everything has ended */
		x->state = FC_DONE;
		x->start = PLAN_NEVER;
		f->left--;
		return 0;
	}
	x->resv_s = v->start_s;
	x->holds = 1;
	f->last_holder = (size_t)(x - f->v) + 1;
	return 0;
}

/* Could x fit now, where its last placement failed? Room only comes
 * back where work ends, so a placement now that the last failure did not
 * find must put a member on a node given back since (one of x's one spec
 * fits there now), unless the reservations it had to keep out of were
 * made again. Without one spec, or a constraint, it is placed afresh. */
static bool may_fit_now(struct forecast *f, struct fc_gang *x)
{
	if (!x->failed || !x->fit || (x->guarded && x->gen != f->b_gen))
		return true;
	for (; x->seen < f->nfreed; x->seen++) {
		uint32_t i = f->freed[x->seen];

		if ((x->fit->bits[i / 64] >> (i % 64) & 1) &&
		    policy_fits_free(&f->s, i, x->specs[0]))
			return true;
	}
	return false;
}

/* Gang x's turn at this moment: within its quota, placed within the
 * reservations standing, else a reservation while one is left. */
static int turn(struct forecast *f, struct fc_gang *x)
{
	struct plan_run *r = f->r;
	int64_t end = f->b.nresv ? after(f->t, x->runtime) : 0;
	size_t kept = backfill_kept_out(&f->b, end);
	int rc;

	if (x->holds)
		return 0; /* its reservation stands: it fits not before its start */
	if (x->g->queue != QUEUE_NONE && !queue_tree_fits(r->tree, x->g->queue, x->req).fits)
		return 0; /* as in the cycle: no reservation for a gang short of quota */
	if (memo_says_no(f, x, kept) || !gpus_may_fit(f, x->gpus, x->n) || !may_fit_now(f, x))
		return reserve(f, x);
	memset(r->turn_held, 0, x->n * sizeof(*r->turn_held));
	r->p->stats.forecast_tries++;
	f->tried = 1;
	rc = backfill_place(&f->b, end, &x->g->within, x->specs, x->n, r->turn_out, r->turn_held,
	                    NULL);
	if (rc == -ENOMEM)
		return rc;
	if (rc == 0)
		return started(f, x);
	memo_add(f, x, kept);
	x->failed = 1;
	x->seen = f->nfreed;
	x->guarded = kept > 0;
	x->gen = f->b_gen;
	return reserve(f, x);
}

/* The reservations made again when one's start has come, or a gang ahead
 * of a holder now asks for one (a quota freed: the cycle would give it
 * that reservation; the moment it was found in kept the old ones). Else
 * they stand as the searches would find them again: a gang the forecast
 * started since was placed within them (backfill_place()), so it delays
 * none, and the holders are still the first gangs that do not fit; only
 * the timeline moves on. */
static int reservations(struct forecast *f)
{
	struct plan_run *r = f->r;
	int64_t soonest = PLAN_NEVER;
	int rc;

	for (size_t v = 0; v < f->b.nresv; v++)
		if (f->b.resv[v].start_s < soonest)
			soonest = f->b.resv[v].start_s;
	if (f->b_stale || soonest <= f->t) {
		r->p->stats.forecast_tries += f->b.tries;
		arena_reset(f->scratch);
		if ((rc = backfill_init(&f->b, &f->s, &r->fits, f->scratch, f->t,
		                        (unsigned)r->cfg->backfill.reservations)) < 0)
			return rc;
		f->b.table_arena = &r->p->arena; /* the table outlives the room */
		f->b_stale = 0;
		f->b_gen++;
		f->last_holder = 0;
		for (size_t k = f->first; k < f->n; k++)
			f->v[k].holds = 0;
	}
	f->b.now_s = f->t;
	backfill_timeline_use(&f->b, f->ends + f->at, f->nends - f->at, f->forever, f->nforever);
	return 0;
}

/* The window's gangs in the order a cycle would give them their turns now
 * (the queue module's, queue.h): fair share moves as work ends and as
 * the forecast starts gangs, so across queues the cycle's order does not
 * stand. Each gang's rank says its place. O(w log w) a moment for w
 * gangs, and O(w x depth x siblings) per turn. The memory of a half-life
 * stays as the cycle found it. */
static int fair_turns(struct forecast *f, size_t nwin)
{
	struct queue_cycle *c;
	uint32_t rank = 0;
	int i, rc = 0;

	for (size_t w = 0; w < nwin; w++) {
		const struct plan_gang *g = f->v[f->win[w]].g;

		f->items[w] = (struct queue_item){g->queue, g->priority, g->submitted_s,
		                                  g->kept->seen, f->v[f->win[w]].req};
	}
	if ((rc = queue_cycle_new(f->r->in->qs, f->items, nwin, &c)) < 0)
		return rc;
	while (!spent(f) && (i = queue_cycle_next(c)) >= 0) {
		struct fc_gang *x = &f->v[f->win[i]];

		x->rank = rank++;
		x->stamp = f->moment;
		if ((rc = turn(f, x)) < 0)
			break;
		queue_cycle_done(c, i, x->state == FC_DONE && x->start == f->t);
	}
	queue_cycle_free(&c);
	return rc;
}

/* The gangs in the window tried at time t: in the cycle's turn order
 * while they share a queue, else in the fair order of the moment. */
static int moment(struct forecast *f)
{
	size_t nwin = 0;
	bool mixed = false;
	int rc;

	f->moment++;
	f->r->p->stats.forecast_moments++;
	if ((rc = reservations(f)) < 0)
		return rc;
	while (f->first < f->n &&
	       (f->v[f->first].state == FC_SKIP || f->v[f->first].state == FC_DONE))
		f->first++;
	for (size_t k = f->first; k < f->n && nwin < FORECAST_WINDOW && !spent(f); k++) {
		struct fc_gang *x = &f->v[k];

		if (x->state == FC_NEW && (rc = prepare(f, x)) < 0)
			return rc;
		if (x->state != FC_WAITING)
			continue;
		mixed |= nwin && x->g->queue != f->v[f->win[0]].g->queue;
		f->win[nwin++] = (uint32_t)k;
	}
	if (mixed)
		return fair_turns(f, nwin);
	for (size_t w = 0; w < nwin && !spent(f); w++) {
		struct fc_gang *x = &f->v[f->win[w]];

		x->rank = f->win[w];
		x->stamp = 0;
		if ((rc = turn(f, x)) < 0)
			return rc;
	}
	return 0;
}

/* Node i's ended pods are all back: its GPU summary, and a note that it
 * has room again (the node of the end before it, likely, needs none). */
static int given_back(struct forecast *f, uint32_t i)
{
	policy_nodes_settle_node(&f->s, i);
	if (f->nfreed && f->freed[f->nfreed - 1] == i)
		return 0;
	if (arena_grow(&f->r->p->arena, &f->freed, f->nfreed, &f->cap_freed, sizeof(*f->freed),
	               256) < 0)
		return -ENOMEM;
	f->freed[f->nfreed++] = i;
	return 0;
}

/* On to the next moment anything ends at, its ends given back to the
 * table and the queues: 0, 1 when nothing is left to end, or -ENOMEM. */
static int advance(struct forecast *f)
{
	int64_t t = PLAN_NEVER;
	size_t from = f->at, mfrom = f->mfirst;
	int rc;

	if (f->at < f->nends)
		t = f->ends[f->at].end_s;
	if (f->mfirst < f->nmine && f->mine[f->mfirst].end_s < t)
		t = f->mine[f->mfirst].end_s;
	if (t == PLAN_NEVER)
		return 1;
	f->t = t;
	while (f->at < f->nends && f->ends[f->at].end_s <= t) {
		const struct backfill_end *e = &f->ends[f->at++];

		policy_nodes_count(&f->s, e->node, e->spec, e->held, +1);
		rebucket(f, e->node);
		if ((rc = charge(f, e->tag, e->spec, e->node, -1)) < 0)
			return rc;
	}
	while (f->mfirst < f->nmine && f->mine[f->mfirst].end_s <= t) {
		const struct backfill_end *e = &f->mine[f->mfirst++];

		policy_nodes_count(&f->s, e->node, e->spec, e->held, +1);
		rebucket(f, e->node);
		if ((rc = charge(f, e->tag, e->spec, e->node, -1)) < 0)
			return rc;
	}
	/* Each node's GPU summary once, after all its pods are back. */
	for (size_t k = from; k < f->at; k++)
		if ((rc = given_back(f, f->ends[k].node)) < 0)
			return rc;
	for (size_t k = mfrom; k < f->mfirst; k++)
		if ((rc = given_back(f, f->mine[k].node)) < 0)
			return rc;
	return 0;
}

/* ---- the answers --------------------------------------------------------- */

/* Gang g's expected start: in its record and its message. */
static void say_start(struct plan_run *r, struct plan_gang *g, int64_t start)
{
	char buf[1024];

	g->expected_start_s = start;
	g->forecast = 1;
	plan__message(r, g);
	g->message = plan__strdup(r, plan_words_forecast(g->message, start, buf, sizeof(buf)));
	r->p->stats.forecast_gangs++;
}

/* Gang g's start kept for the cycles until the next forecast (a gang left
 * out when there is no memory for it: it shows no estimate until then). */
static void keep_start(struct plan_forecast_kept *k, uint64_t key, int64_t start)
{
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 256;
		uint64_t *keys = realloc(k->keys, cap * sizeof(*keys));
		int64_t *starts;

		if (keys)
			k->keys = keys;
		if (!keys || !(starts = realloc(k->starts, cap * sizeof(*starts))))
			return;
		k->starts = starts;
		k->cap = cap;
	}
	k->keys[k->n] = key;
	k->starts[k->n++] = start;
}

/* Each gang's expected start, said and kept. ended: no work was left to
 * end (a gang not started waits for work without a runtime). */
static void publish(struct forecast *f, bool ended)
{
	struct plan_run *r = f->r;
	struct plan_forecast_kept *k = &r->keep->forecast;

	k->n = 0;
	for (size_t i = 0; i < f->n; i++) {
		struct fc_gang *x = &f->v[i];
		struct plan_gang *g = x->g;
		int64_t start = x->state == FC_DONE ? x->start : x->resv_s;

		/* Once no work with a runtime is left to end, the gangs the
		 * window did not reach wait for work without one, too. */
		if (x->state == FC_NEW && ended && !spent(f) && forecast_takes(g))
			x->state = FC_WAITING;
		if (x->state != FC_DONE && x->state != FC_WAITING)
			continue;
		if (!start && ended && x->state == FC_WAITING)
			start = PLAN_NEVER;
		if (!start || g->reserved)
			continue; /* not reached; or the cycle's reservation says it */
		say_start(r, g, start);
		keep_start(k, g->key, start);
	}
	r->p->forecast_at_s = k->last_s;
	k->until_s = r->p->forecast_until_s = f->t;
	k->cut = r->p->forecast_cut = f->cut || (!ended && f->left);
}

/* A cycle between forecasts: the last one's starts given to the gangs
 * still waiting for room or quota without a reservation (one whose start
 * has passed shows none: it was wrong, and the next forecast says anew).
 * O(gangs it answered). */
static void carry(struct plan_run *r)
{
	const struct plan_forecast_kept *k = &r->keep->forecast;

	for (size_t i = 0; i < k->n; i++) {
		long at = plan__gang_index(r, k->keys[i]);
		struct plan_gang *g;

		if (at < 0 || (k->starts[i] != PLAN_NEVER && k->starts[i] < r->in->now_s))
			continue;
		g = &r->p->gangs[at];
		if (forecast_takes(g) && g->tried && !g->reserved)
			say_start(r, g, k->starts[i]);
	}
	r->p->forecast_at_s = k->last_s;
	r->p->forecast_until_s = k->until_s;
	r->p->forecast_cut = k->cut;
}

/* Is a forecast due this cycle? The CPU time the cycles set aside for it
 * grows by this one's share, up to FORECAST_CREDIT_CYCLES of it. */
static bool due(struct plan_run *r)
{
	struct plan_forecast_kept *k = &r->keep->forecast;
	int64_t spent_ns = r->cpu0_ns ? plan__cpu_ns() - r->cpu0_ns : 0;

	k->credit_ns += spent_ns * r->in->forecast_pct / 100;
	if (k->credit_ns > spent_ns * FORECAST_CREDIT_CYCLES)
		k->credit_ns = spent_ns * FORECAST_CREDIT_CYCLES;
	return !k->ran || r->in->now_s - k->last_s >= r->in->forecast_every_s;
}

void plan__forecast(struct plan_run *r)
{
	struct forecast f;
	int rc;

	r->p->forecast_at_s = r->p->forecast_until_s = 0;
	r->p->forecast_cut = 0;
	if (!r->in->forecast || !r->nturns)
		return;
	if (!due(r)) {
		carry(r);
		return;
	}
	r->keep->forecast.ran = 1;
	r->keep->forecast.last_s = r->in->now_s;
	if ((rc = setup(&f, r)) == 0) {
		r->keep->forecast.credit_ns = 0;
		while (f.left && !f.cut)
			if ((rc = advance(&f)) != 0 || f.t > f.horizon || (rc = moment(&f)) < 0)
				break;
	}
	uncharge(&f);
	if (rc < 0) {
		/* Out of memory: the forecast is dropped, never the cycle's
		 * decisions; the gangs show no estimate until the next. */
		r->keep->forecast.n = 0;
		return;
	}
	r->p->stats.forecast_tries += f.b.tries;
	publish(&f, rc == 1);
}
