/*
 * The quota tree (see quota.h for the rule and the fair-share formula).
 *
 * Nodes live in one array in the order they were added, so a parent always
 * comes before its children: finalize() computes the cohorts' pools in one
 * backward pass. A request's effect climbs the path to the root as a delta
 * of draws: at each node only the part above its reserve reaches the
 * parent. Memory: 9 x nslots x 8 bytes per node.
 *
 * The memory (fair sharing with a half-life) is an exponential average of
 * each node's demand: over a span dt in which the node held demand h,
 *
 *   mem <- mem x 2^(-dt / halfLife) + h x (1 - 2^(-dt / halfLife))
 *
 * so a node that held h for long remembers h, and one that stopped
 * remembers half as much every half-life. Demand is what the planner
 * counts each cycle; the span is from one cycle to the next, over which
 * the demand the last cycle left (held) stood. Nothing here reads a clock:
 * the caller says what time it is.
 */
#include "queue/quota.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct node {
	char *name;
	int parent;
	bool cohort;
	double weight;
	int64_t *nominal, *borrow, *lend; /* as configured (queues) */
	int64_t *quota;                   /* Q: nominal, or the cohort's pool */
	int64_t *demand;
	int64_t *held; /* the demand the last cycle left: what stood since */
	double *mem;   /* remembered demand (see the top of this file) */
	/* From the quota, once it is final (finalize()): the reserve (what
	 * is not lent: demand up to it draws nothing on the parent) and the
	 * limit (quota plus borrowing). Every turn of a cycle climbs the
	 * tree through them, twice; working them out at each step was about
	 * a fifth of the tree's instructions in a steady cycle. */
	int64_t *reserve, *limit;
	/* Bumped whenever demand is written (here or under it): what lets a
	 * cycle keep a share it worked out until something under it moved. */
	uint64_t version;
};

struct queue_tree {
	unsigned nslots;
	int64_t half_life_ms; /* 0: no memory */
	int64_t mem_at_s;     /* when mem was last brought up to date; QUEUE_NO_TIME */
	struct node *nodes;
	int n, cap;
};

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* a + b, saturating at QUEUE_UNLIMITED (amounts are never negative here). */
static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? QUEUE_UNLIMITED : r;
}

static void node_free(struct node *n)
{
	free(n->name);
	free(n->nominal); /* one block holds all nine vectors */
}

static int node_init(struct node *n, unsigned nslots, int parent, bool cohort, const char *name,
                     double weight)
{
	int64_t *v = calloc(9 * (size_t)nslots, sizeof(*v));
	unsigned s;

	n->name = strdup(name ? name : "");
	if (!v || !n->name) {
		free(v);
		free(n->name);
		return -ENOMEM;
	}
	n->parent = parent;
	n->cohort = cohort;
	n->weight = weight;
	n->version = 0;
	n->nominal = v;
	n->borrow = v + nslots;
	n->lend = v + 2 * nslots;
	n->quota = v + 3 * nslots;
	n->demand = v + 4 * nslots;
	n->held = v + 5 * nslots;
	/* A double is 8 bytes like an int64 (static_assert below); 0 bits
	 * are 0.0. */
	n->mem = (double *)(void *)(v + 6 * nslots);
	n->reserve = v + 7 * nslots;
	n->limit = v + 8 * nslots;
	for (s = 0; s < nslots; s++) {
		n->borrow[s] = parent == QUEUE_NONE ? 0 : QUEUE_UNLIMITED;
		n->lend[s] = QUEUE_UNLIMITED;
	}
	return 0;
}

static int add_node(struct queue_tree *t, int parent, bool cohort, const char *name, double weight)
{
	if (parent != QUEUE_NONE &&
	    (parent < 0 || parent >= t->n || !t->nodes[parent].cohort || !(weight > 0)))
		return -EINVAL;
	if (t->n == t->cap) {
		int cap = t->cap ? t->cap * 2 : 16;
		struct node *v = realloc(t->nodes, (size_t)cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->nodes = v;
		t->cap = cap;
	}
	if (node_init(&t->nodes[t->n], t->nslots, parent, cohort, name, weight) < 0)
		return -ENOMEM;
	return t->n++;
}

int queue_tree_new(unsigned nslots, struct queue_tree **out)
{
	struct queue_tree *t;

	if (nslots == 0 || nslots > QUEUE_MAX_SLOTS)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->nslots = nslots;
	t->mem_at_s = QUEUE_NO_TIME;
	if (add_node(t, QUEUE_NONE, true, "root", 1.0) < 0) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void queue_tree_free(struct queue_tree **tp)
{
	struct queue_tree *t = tp ? *tp : NULL;
	int i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++)
		node_free(&t->nodes[i]);
	free(t->nodes);
	free(t);
	*tp = NULL;
}

int queue_tree_add_cohort(struct queue_tree *t, int parent, const char *name, double weight)
{
	return add_node(t, parent, true, name, weight);
}

int queue_tree_add_queue(struct queue_tree *t, int parent, const char *name, double weight)
{
	return add_node(t, parent, false, name, weight);
}

int queue_tree_set_quota(struct queue_tree *t, int queue, unsigned slot, int64_t nominal,
                         int64_t borrowing_limit, int64_t lending_limit)
{
	struct node *n;

	if (queue <= 0 || queue >= t->n || t->nodes[queue].cohort || slot >= t->nslots ||
	    nominal < 0 || borrowing_limit < 0 || lending_limit < 0 ||
	    (lending_limit != QUEUE_UNLIMITED && lending_limit > nominal))
		return -EINVAL;
	n = &t->nodes[queue];
	n->nominal[slot] = nominal;
	n->borrow[slot] = borrowing_limit;
	n->lend[slot] = lending_limit;
	return 0;
}

static int64_t lend_of(const struct node *n, unsigned s)
{
	return min64(n->quota[s], n->lend[s]);
}

/* Children come after parents: one backward pass sums the pools. */
void queue_tree_finalize(struct queue_tree *t)
{
	unsigned s;
	int i;

	for (i = 0; i < t->n; i++)
		for (s = 0; s < t->nslots; s++)
			t->nodes[i].quota[s] = t->nodes[i].cohort ? 0 : t->nodes[i].nominal[s];
	for (i = t->n - 1; i > 0; i--) {
		struct node *c = &t->nodes[i], *p = &t->nodes[c->parent];

		for (s = 0; s < t->nslots; s++)
			p->quota[s] = add_sat(p->quota[s], lend_of(c, s));
	}
	for (i = 0; i < t->n; i++) {
		struct node *n = &t->nodes[i];

		for (s = 0; s < t->nslots; s++) {
			n->reserve[s] = n->quota[s] - lend_of(n, s);
			n->limit[s] = add_sat(n->quota[s], n->borrow[s]);
		}
	}
}

/* The draw of n on its parent when its demand is d. */
static int64_t draw_at(const struct node *n, unsigned s, int64_t d)
{
	return max64(0, d - n->reserve[s]);
}

/* One step of a request's walk up the tree: at node nd, the demands
 * demand[s] + delta[s] are what nd would have; delta becomes what nd
 * would pass its parent (its draw changes by it). */
static void pass_up(const struct node *nd, unsigned nslots, int64_t *delta)
{
	for (unsigned s = 0; s < nslots; s++) {
		int64_t before = nd->demand[s];

		delta[s] = draw_at(nd, s, before + delta[s]) - draw_at(nd, s, before);
	}
}

/* pass_up() of a request `in` into delta, which it leaves in untouched:
 * the first step, with no copy of the request first. */
static void pass_up_from(const struct node *nd, unsigned nslots, const int64_t *in, int64_t *delta)
{
	for (unsigned s = 0; s < nslots; s++) {
		int64_t before = nd->demand[s];

		delta[s] = draw_at(nd, s, before + in[s]) - draw_at(nd, s, before);
	}
}

struct queue_verdict queue_tree_fits(const struct queue_tree *t, int q, const int64_t *req)
{
	struct queue_verdict v = {.fits = 1, .node = q};
	int64_t delta[QUEUE_MAX_SLOTS];

	if (q <= 0 || q >= t->n || t->nodes[q].cohort) {
		v.fits = 0;
		return v;
	}
	for (unsigned s = 0; s < t->nslots; s++)
		delta[s] = req ? req[s] : 0;
	/* Node by node from q up, slot by slot: the first limit passed. */
	for (int n = q; n != QUEUE_NONE; n = t->nodes[n].parent) {
		const struct node *nd = &t->nodes[n];

		for (unsigned s = 0; s < t->nslots; s++) {
			int64_t demand = nd->demand[s] + delta[s];
			int64_t limit = nd->limit[s];

			if (demand > limit)
				return (struct queue_verdict){.fits = 0,
				                              .node = n,
				                              .slot = s,
				                              .demand = demand,
				                              .limit = limit};
		}
		pass_up(nd, t->nslots, delta);
	}
	return v;
}

int queue_tree_charge(struct queue_tree *t, int q, const int64_t *req, int sign)
{
	int64_t delta[QUEUE_MAX_SLOTS];

	if (q <= 0 || q >= t->n || t->nodes[q].cohort || (sign != 1 && sign != -1) || !req)
		return -EINVAL;
	for (unsigned s = 0; s < t->nslots; s++)
		delta[s] = sign * req[s];
	for (int n = q; n != QUEUE_NONE; n = t->nodes[n].parent) {
		struct node *nd = &t->nodes[n];
		int64_t before[QUEUE_MAX_SLOTS];

		memcpy(before, nd->demand, t->nslots * sizeof(before[0]));
		for (unsigned s = 0; s < t->nslots; s++)
			nd->demand[s] = before[s] + delta[s];
		for (unsigned s = 0; s < t->nslots; s++)
			delta[s] = draw_at(nd, s, nd->demand[s]) - draw_at(nd, s, before[s]);
		nd->version++;
	}
	return 0;
}

/* Is c an ancestor-or-self of q? */
static bool contains(const struct queue_tree *t, int c, int q)
{
	for (; q != QUEUE_NONE; q = t->nodes[q].parent)
		if (q == c)
			return true;
	return false;
}

/* What node n counts as its use of slot s in a share: its demand with
 * the request's part d added, or with memory on, the larger of that and
 * what it remembers. */
static double used(const struct queue_tree *t, const struct node *n, unsigned s, int64_t d)
{
	double now = (double)(n->demand[s] + d);

	return t->half_life_ms > 0 && n->mem[s] > now ? n->mem[s] : now;
}

double queue_tree_share(const struct queue_tree *t, int c, int q, const int64_t *req)
{
	const struct node *n = &t->nodes[c], *p;
	int64_t delta[QUEUE_MAX_SLOTS];
	const int64_t *d = NULL; /* NULL: nothing reaches c */
	double share = 0;
	unsigned s;

	if (c <= 0 || c >= t->n)
		return 0;
	p = &t->nodes[n->parent];
	/* What reaches c of req added at q (the slots in use only, and no
	 * copy of req: this is asked once a turn of the cycle's queue
	 * order, and the copy, a call to memmove, was 3% of a steady cycle
	 * at 50,000 nodes in a profile). */
	if (req && q > 0 && q < t->n && contains(t, c, q)) {
		d = req;
		if (q != c) {
			pass_up_from(&t->nodes[q], t->nslots, req, delta);
			for (int k = t->nodes[q].parent; k != c; k = t->nodes[k].parent)
				pass_up(&t->nodes[k], t->nslots, delta);
			d = delta;
		}
	}
	for (s = 0; s < t->nslots; s++) {
		double over = used(t, n, s, d ? d[s] : 0) - (double)n->quota[s];

		if (over > 0 && p->quota[s] > 0 && over / (double)p->quota[s] > share)
			share = over / (double)p->quota[s];
	}
	return share / n->weight;
}

void queue_tree_reset_usage(struct queue_tree *t)
{
	for (int i = 0; i < t->n; i++) {
		memset(t->nodes[i].demand, 0, t->nslots * sizeof(int64_t));
		t->nodes[i].version++;
	}
}

int queue_tree_is_cohort(const struct queue_tree *t, int node)
{
	return node >= 0 && node < t->n && t->nodes[node].cohort;
}

const char *queue_tree_name(const struct queue_tree *t, int node)
{
	return node >= 0 && node < t->n ? t->nodes[node].name : NULL;
}

int queue_tree_parent(const struct queue_tree *t, int node)
{
	return node >= 0 && node < t->n ? t->nodes[node].parent : QUEUE_NONE;
}

int64_t queue_tree_quota(const struct queue_tree *t, int node, unsigned slot)
{
	return t->nodes[node].quota[slot];
}

uint64_t queue_tree_version(const struct queue_tree *t, int node)
{
	return t->nodes[node].version;
}

int64_t queue_tree_demand(const struct queue_tree *t, int node, unsigned slot)
{
	return t->nodes[node].demand[slot];
}

int queue_tree_size(const struct queue_tree *t)
{
	return t->n;
}

/* ---- memory ------------------------------------------------------------ */

_Static_assert(sizeof(double) == sizeof(int64_t), "mem shares the nodes' int64 block");

void queue_tree_set_half_life(struct queue_tree *t, int64_t half_life_ms)
{
	t->half_life_ms = half_life_ms > 0 ? half_life_ms : 0;
}

int64_t queue_tree_half_life(const struct queue_tree *t)
{
	return t->half_life_ms;
}

void queue_tree_age(struct queue_tree *t, int64_t now_s)
{
	double keep;

	if (t->half_life_ms <= 0)
		return;
	if (t->mem_at_s == QUEUE_NO_TIME || now_s <= t->mem_at_s) {
		/* The first time, or a clock that went back: start from here. */
		if (t->mem_at_s == QUEUE_NO_TIME || now_s < t->mem_at_s)
			t->mem_at_s = now_s;
		return;
	}
	keep = exp2(-(double)(now_s - t->mem_at_s) * 1000.0 / (double)t->half_life_ms);
	for (int i = 0; i < t->n; i++) {
		struct node *n = &t->nodes[i];

		for (unsigned s = 0; s < t->nslots; s++)
			n->mem[s] = n->mem[s] * keep + (double)n->held[s] * (1.0 - keep);
		n->version++;
	}
	t->mem_at_s = now_s;
}

void queue_tree_hold(struct queue_tree *t)
{
	if (t->half_life_ms <= 0)
		return;
	for (int i = 0; i < t->n; i++)
		memcpy(t->nodes[i].held, t->nodes[i].demand, t->nslots * sizeof(int64_t));
}

int64_t queue_tree_memory_at(const struct queue_tree *t)
{
	return t->mem_at_s;
}

double queue_tree_remembered(const struct queue_tree *t, int node, unsigned slot)
{
	return node >= 0 && node < t->n && slot < t->nslots ? t->nodes[node].mem[slot] : 0;
}

int64_t queue_tree_held(const struct queue_tree *t, int node, unsigned slot)
{
	return node >= 0 && node < t->n && slot < t->nslots ? t->nodes[node].held[slot] : 0;
}

int queue_tree_recall(struct queue_tree *t, int node, unsigned slot, double mem, int64_t held,
                      int64_t at_s)
{
	struct node *n;

	if (node < 0 || node >= t->n || slot >= t->nslots || !(mem >= 0) || isinf(mem) ||
	    held < 0 || at_s == QUEUE_NO_TIME)
		return -EINVAL;
	n = &t->nodes[node];
	n->mem[slot] = mem;
	n->held[slot] = held;
	n->version++;
	t->mem_at_s = at_s;
	return 0;
}
