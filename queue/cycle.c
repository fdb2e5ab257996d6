/*
 * One cycle's order over the pending gangs (queue.h).
 *
 * Each queue's items are sorted once, at the start. Choosing is a descent
 * from the root: every cohort picks the child whose next item would leave
 * it with the lowest share, recursively. A cohort's pick is cached and
 * recomputed only when something under it changed (an item was served or
 * usage moved), which is always along one path; and a child's share is
 * weighed again only when its next item or the demand under it changed:
 * a choice costs O(depth x (siblings + depth x slots)) instead of
 * O(tree x slots).
 *
 * Memory: one block of about 4 words per tree node plus an int and a
 * pointer per item, and while the queues are sorted, two 8-byte keys an
 * item.
 */
#include "queue/queue.h"

#include "base/radix.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct qnode {
	int first_child, n_children; /* into cycle.children (cohorts) */
	int begin, end, cursor;      /* into cycle.order (queues) */
	int pick;                    /* cached: the queue to serve under here, or QUEUE_NONE */
	bool dirty, blocked, is_queue;
	bool strict;
	/* This node's share and own fraction as its parent last weighed
	 * them: for the item at cursor share_at of queue share_pick, with
	 * the tree's demand here at version share_version (the fraction at
	 * frac_version: it hangs on the demand alone). Only the child a
	 * choice changed is weighed again (an item failing changes no
	 * usage): the rest are read from here. */
	int share_pick, share_at;
	uint64_t share_version, frac_version;
	double share, frac;
};

struct queue_cycle {
	const struct queue_set *qs;
	const struct queue_item *items;
	size_t n_items;
	int n_nodes;
	struct qnode *nodes;
	int *children; /* child node indexes, grouped by parent */
	int *order;    /* item indexes grouped by queue, each group sorted */
	/* The items' requests in that order: a queue's next ones are read in
	 * a row and asked for ahead (queue_cycle_done()), where each was an
	 * item and then its request at random. */
	const int64_t **reqs;
};

/* Priority high first, then submitted early, then tiebreak, then index:
 * a total order, so the same input always gives the same cycle. */
static int item_cmp(const void *pa, const void *pb, void *arg)
{
	const struct queue_item *items = arg;
	int a = *(const int *)pa, b = *(const int *)pb;
	const struct queue_item *x = &items[a], *y = &items[b];

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->submitted != y->submitted)
		return x->submitted < y->submitted ? -1 : 1;
	if (x->tiebreak != y->tiebreak)
		return x->tiebreak < y->tiebreak ? -1 : 1;
	return (a > b) - (a < b);
}

static bool valid_queue(const struct queue_cycle *c, int node)
{
	return node > 0 && node < c->n_nodes && c->nodes[node].is_queue;
}

/* Children grouped by parent: count, prefix-sum, fill (counting sort). */
static void link_children(struct queue_cycle *c)
{
	const struct queue_tree *t = queue_set_tree_c(c->qs);
	int i, at = 0;

	for (i = 1; i < c->n_nodes; i++)
		c->nodes[queue_tree_parent(t, i)].n_children++;
	for (i = 0; i < c->n_nodes; i++) {
		c->nodes[i].first_child = at;
		at += c->nodes[i].n_children;
		c->nodes[i].n_children = 0;
	}
	for (i = 1; i < c->n_nodes; i++) {
		struct qnode *p = &c->nodes[queue_tree_parent(t, i)];

		c->children[p->first_child + p->n_children++] = i;
	}
}

/* Bits needed for a span of values. */
static unsigned span_bits(uint64_t span)
{
	return span ? 64 - (unsigned)__builtin_clzll(span) : 0;
}

static uint64_t shl(uint64_t x, unsigned s)
{
	return s < 64 ? x << s : 0;
}

/* A queue holding this many items or more is sorted by one packed key
 * each (sort_packed()), fewer by qsort. */
#define PACKED_MIN 256

/*
 * order[0..n), item indexes in ascending order, put in item_cmp()'s
 * order by a stable radix sort (base/radix.h) of one key an item: its
 * priority from the highest down, its submission and its tiebreak, each
 * less the least of the queue's and packed in the bits their spans need.
 * Equal keys keep their positions, which are the index order item_cmp()
 * ends with. v and scratch: room for n keys each. False when the spans
 * take more than 64 bits, or out of memory: order is then as it was.
 *
 * qsort_r's comparisons were about a thirtieth of a steady cycle at
 * 100,000 nodes (40,000 gangs a queue): each reads two items at random.
 */
static bool sort_packed(const struct queue_item *items, int *order, size_t n, uint64_t *v,
                        uint64_t *scratch)
{
	int64_t pmin = INT32_MAX, pmax = INT32_MIN, smin = INT64_MAX, smax = INT64_MIN;
	uint64_t tmin = UINT64_MAX, tmax = 0, *pos, *was;
	unsigned wp, ws, wt;

	for (size_t k = 0; k < n; k++) {
		const struct queue_item *x = &items[order[k]];

		pmin = x->priority < pmin ? x->priority : pmin;
		pmax = x->priority > pmax ? x->priority : pmax;
		smin = x->submitted < smin ? x->submitted : smin;
		smax = x->submitted > smax ? x->submitted : smax;
		tmin = x->tiebreak < tmin ? x->tiebreak : tmin;
		tmax = x->tiebreak > tmax ? x->tiebreak : tmax;
	}
	wp = span_bits((uint64_t)(pmax - pmin));
	ws = span_bits((uint64_t)smax - (uint64_t)smin);
	wt = span_bits(tmax - tmin);
	if (wp + ws + wt > 64)
		return false;
	for (size_t k = 0; k < n; k++) {
		const struct queue_item *x = &items[order[k]];

		v[k] = shl((uint64_t)(pmax - x->priority), ws + wt) |
		       shl((uint64_t)x->submitted - (uint64_t)smin, wt) | (x->tiebreak - tmin);
	}
	if (radix_order(v, scratch, n, &pos) < 0)
		return false;
	was = pos == v ? scratch : v;
	for (size_t k = 0; k < n; k++)
		was[k] = (uint64_t)order[k];
	for (size_t k = 0; k < n; k++)
		order[k] = (int)was[pos[k]];
	return true;
}

/* Items grouped by queue the same way, then each group sorted (keys:
 * room for sort_packed()'s keys of the largest group, or NULL). */
static void group_items(struct queue_cycle *c, uint64_t *keys)
{
	size_t i;
	int at = 0, q;

	for (i = 0; i < c->n_items; i++)
		if (valid_queue(c, c->items[i].node))
			c->nodes[c->items[i].node].end++;
	for (q = 0; q < c->n_nodes; q++) {
		int n = c->nodes[q].end;

		c->nodes[q].begin = c->nodes[q].cursor = at;
		c->nodes[q].end = at;
		at += n;
	}
	for (i = 0; i < c->n_items; i++)
		if (valid_queue(c, c->items[i].node))
			c->order[c->nodes[c->items[i].node].end++] = (int)i;
	for (q = 0; q < c->n_nodes; q++) {
		int *o = c->order + c->nodes[q].begin;
		size_t n = (size_t)(c->nodes[q].end - c->nodes[q].begin);

		if (n < PACKED_MIN || !keys ||
		    !sort_packed(c->items, o, n, keys, keys + c->n_items))
			qsort_r(o, n, sizeof(*o), item_cmp, (void *)c->items);
	}
}

/* The request of queue node q's item after its next one, asked for now:
 * weighing the queue's next head reads it, a few turns later. */
static void ask_ahead(const struct queue_cycle *c, int q)
{
	const struct qnode *nd = &c->nodes[q];

	if (nd->is_queue && nd->cursor + 1 < nd->end && c->reqs[nd->cursor + 1])
		__builtin_prefetch(c->reqs[nd->cursor + 1]);
}

int queue_cycle_new(const struct queue_set *qs, const struct queue_item *items, size_t n,
                    struct queue_cycle **out)
{
	int nn = queue_tree_size(queue_set_tree_c(qs)), i;
	struct queue_cycle *c;
	uint64_t *keys;

	*out = NULL;
	if (n > INT32_MAX)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->nodes = calloc((size_t)nn, sizeof(*c->nodes))) ||
	    !(c->children = malloc((size_t)nn * sizeof(*c->children))) ||
	    !(c->order = malloc((n + 1) * sizeof(*c->order))) ||
	    !(c->reqs = malloc((n + 1) * sizeof(*c->reqs)))) {
		queue_cycle_free(&c);
		return -ENOMEM;
	}
	c->qs = qs;
	c->items = items;
	c->n_items = n;
	c->n_nodes = nn;
	for (i = 0; i < nn; i++) {
		const struct config_queue *q = queue_set_queue(qs, i);

		c->nodes[i].is_queue = q != NULL;
		c->nodes[i].strict = q && q->ordering == CONFIG_ORDERING_STRICT_FIFO;
		c->nodes[i].dirty = true;
		c->nodes[i].pick = QUEUE_NONE;
		c->nodes[i].share_pick = QUEUE_NONE;
		c->nodes[i].frac_version = UINT64_MAX; /* none yet: versions count up from 0 */
	}
	link_children(c);
	/* Without the room for keys, every queue is sorted by qsort. */
	keys = n >= PACKED_MIN ? malloc(2 * n * sizeof(*keys)) : NULL;
	group_items(c, keys);
	free(keys);
	for (i = 0; i < nn; i++) { /* items in no queue are in no group */
		for (int k = c->nodes[i].begin; k < c->nodes[i].end; k++)
			c->reqs[k] = items[c->order[k]].req;
		ask_ahead(c, i);
	}
	*out = c;
	return 0;
}

void queue_cycle_free(struct queue_cycle **cp)
{
	struct queue_cycle *c = cp ? *cp : NULL;

	if (!c)
		return;
	free(c->nodes);
	free(c->children);
	free(c->order);
	free(c->reqs);
	free(c);
	*cp = NULL;
}

/* The request of queue q's next item. */
static const int64_t *head_req(const struct queue_cycle *c, int q)
{
	return c->reqs[c->nodes[q].cursor];
}

/* How full node n is against its own quota: max over slots of
 * demand / Q. Only breaks ties between equal shares. */
static double own_fraction(const struct queue_tree *t, int n, unsigned nslots)
{
	double f = 0;
	unsigned s;

	for (s = 0; s < nslots; s++) {
		int64_t q = queue_tree_quota(t, n, s);
		double x = q > 0 ? (double)queue_tree_demand(t, n, s) / (double)q : 0;

		if (x > f)
			f = x;
	}
	return f;
}

/* Shares closer than this are equal: 9/20/3 and 3/20 must tie, whatever
 * the rounding of each division. */
#define SHARE_EPSILON 1e-12

/* Child ch's share with queue q's next item added, and its own
 * fraction: worked out again only when that item or the demand under ch
 * changed since the last time. */
static void weigh(struct queue_cycle *c, int ch, int q)
{
	const struct queue_tree *t = queue_set_tree_c(c->qs);
	struct qnode *w = &c->nodes[ch];
	uint64_t version = queue_tree_version(t, ch);

	if (w->share_pick == q && w->share_at == c->nodes[q].cursor && w->share_version == version)
		return;
	w->share = queue_tree_share(t, ch, q, head_req(c, q));
	/* A gang that failed moved the cursor and left the demand: the
	 * fraction's divisions, a slot each, were a fifth of pick() in a
	 * steady cycle where most gangs fail from the memo. */
	if (w->frac_version != version)
		w->frac = own_fraction(t, ch, queue_set_nslots(c->qs));
	w->frac_version = version;
	w->share_pick = q;
	w->share_at = c->nodes[q].cursor;
	w->share_version = version;
}

/* Child ch, whose pick is queue q, against the best of cohort nd so far
 * (nd->pick, of share *share and own fraction *frac). */
static void consider(struct queue_cycle *c, struct qnode *nd, int ch, int q, double *share,
                     double *frac)
{
	const struct qnode *w = &c->nodes[ch];

	weigh(c, ch, q);
	if (nd->pick == QUEUE_NONE || w->share < *share - SHARE_EPSILON ||
	    (w->share <= *share + SHARE_EPSILON && w->frac < *frac)) {
		nd->pick = q;
		*share = w->share;
		*frac = w->frac;
	}
}

static int pick(struct queue_cycle *c, int n)
{
	struct qnode *nd = &c->nodes[n];
	double best_share = 0, best_frac = 0;
	int some = 0, first = QUEUE_NONE, first_q = QUEUE_NONE;

	if (nd->is_queue)
		return !nd->blocked && nd->cursor < nd->end ? n : QUEUE_NONE;
	if (!nd->dirty)
		return nd->pick;
	nd->pick = QUEUE_NONE;
	/* A child with something to serve and no rival needs no weighing
	 * (a root over one cohort, a cohort whose other queues are done):
	 * its share was a third of pick()'s instructions in a steady cycle
	 * (callgrind, 20,000 nodes, the bench's tree). So the first such
	 * child is weighed only once a second shows. */
	for (int i = 0; i < nd->n_children; i++) {
		int ch = c->children[nd->first_child + i], q = pick(c, ch);

		if (q == QUEUE_NONE)
			continue;
		if (some++ == 0) {
			first = ch;
			first_q = q;
			continue;
		}
		if (some == 2)
			consider(c, nd, first, first_q, &best_share, &best_frac);
		consider(c, nd, ch, q, &best_share, &best_frac);
	}
	if (some == 1)
		nd->pick = first_q;
	nd->dirty = false;
	return nd->pick;
}

int queue_cycle_next(struct queue_cycle *c)
{
	int q = pick(c, 0);

	return q == QUEUE_NONE ? -ENOENT : c->order[c->nodes[q].cursor];
}

void queue_cycle_touch(struct queue_cycle *c, int node)
{
	const struct queue_tree *t = queue_set_tree_c(c->qs);

	for (; node >= 0 && node < c->n_nodes; node = queue_tree_parent(t, node))
		c->nodes[node].dirty = true;
}

void queue_cycle_done(struct queue_cycle *c, int item, bool admitted)
{
	struct qnode *q;
	int node;

	if (item < 0 || (size_t)item >= c->n_items || !valid_queue(c, c->items[item].node))
		return;
	node = c->items[item].node;
	q = &c->nodes[node];
	if (q->cursor >= q->end || c->order[q->cursor] != item)
		return; /* not the head: nothing to move */
	q->cursor++;
	ask_ahead(c, node);
	if (!admitted && q->strict)
		q->blocked = true;
	queue_cycle_touch(c, node);
}

bool queue_cycle_blocked(const struct queue_cycle *c, int node)
{
	return valid_queue(c, node) && c->nodes[node].blocked;
}
