/*
 * Preemption's search (preempt.h): minimal victim sets per topology
 * domain, the best of them, and the answer's placement.
 */
#include "policy/preempt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the order ------------------------------------------------------- */

static int by_cost(const void *a, const void *b)
{
	const struct preempt_cand *x = a, *y = b;

	if (x->other_queue != y->other_queue)
		return x->other_queue ? -1 : 1;
	if (x->over != y->over)
		return x->over > y->over ? -1 : 1;
	if (x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	if (x->started_s != y->started_s)
		return x->started_s > y->started_s ? -1 : 1;
	if (x->tie != y->tie)
		return x->tie < y->tie ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->part > y->part) - (x->part < y->part);
}

void preempt_order(struct preempt_cand *c, size_t n)
{
	if (n == 0)
		return; /* c may be NULL then, which qsort may not be given */
	qsort(c, n, sizeof(*c), by_cost);
	for (size_t k = 0; k < n; k++)
		c[k].pos = (uint32_t)k;
}

double preempt_over_nominal(const struct queue_tree *t, unsigned nslots, int q, const int64_t *req)
{
	double worst = 0;

	for (unsigned s = 0; s < nslots; s++) {
		int64_t nominal = queue_tree_quota(t, q, s);
		int64_t over = queue_tree_demand(t, q, s) - nominal;

		if (!req[s] || over <= 0)
			continue;
		if ((double)over / (double)(nominal > 0 ? nominal : 1) > worst)
			worst = (double)over / (double)(nominal > 0 ? nominal : 1);
		if (worst == 0)
			worst = 1e-9;
	}
	return worst;
}

void preempt_release(struct policy_nodes *t, struct queue_tree *tree, const struct preempt_cand *v,
                     int sign)
{
	for (uint32_t k = 0; k < v->npods; k++)
		policy_nodes_use(t, v->node[k], v->spec[k], v->held ? v->held[k] : NULL, sign);
	if (v->npods)
		queue_tree_charge(tree, v->queue, v->req, -sign);
}

/* ---- one set of candidates ------------------------------------------- */

/* One preemptor's search: its ask, its checks so far, the cycle's. */
struct attempt {
	const struct preempt_ask *a;
	struct preempt_budget *b;
	size_t checks;
	uint32_t *out;
	const struct policy_held **held;
};

static void release(struct attempt *x, const struct preempt_cand *v, int sign)
{
	preempt_release(x->a->nodes, x->a->tree, v, sign);
}

/* Does the preemptor fit (quota and nodes) as things are now? budget:
 * the check counts against the budget (-EAGAIN when none is left: no
 * answer, not "no"). The table is as before on return. */
static int fits_now(struct attempt *x, bool budget)
{
	const struct preempt_ask *a = x->a;
	struct policy_why why;
	int rc;

	if (budget && (x->checks >= PREEMPT_CHECKS || x->b->checks >= PREEMPT_CHECKS_PER_CYCLE))
		return -EAGAIN;
	x->checks += budget;
	x->b->checks += budget;
	x->b->tries++;
	if (!queue_tree_fits(a->tree, a->queue, a->req).fits)
		return 0;
	rc = policy_place_within(a->nodes, a->fits, a->arena, a->within, a->specs, a->n, x->out,
	                         x->held, &why);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		return 0;
	for (size_t k = 0; k < a->n; k++)
		policy_nodes_use(a->nodes, x->out[k], a->specs[k], x->held[k], +1);
	return 1;
}

/* The candidates of v[0..n) that may go together, in order, into f:
 * reclaim takes from another queue only while it still borrows, counting
 * the ones before it as gone. Returns how many. */
static size_t still_borrowing(struct attempt *x, const struct preempt_cand *v, size_t n,
                              struct preempt_cand *f)
{
	const struct preempt_ask *a = x->a;
	size_t m = 0;

	for (size_t k = 0; k < n; k++) {
		if (v[k].queue != a->queue &&
		    preempt_over_nominal(a->tree, a->nslots, v[k].queue, a->req) <= 0)
			continue;
		if (v[k].npods)
			queue_tree_charge(a->tree, v[k].queue, v[k].req, -1);
		f[m++] = v[k];
	}
	for (size_t k = 0; k < m; k++)
		if (f[k].npods)
			queue_tree_charge(a->tree, f[k].queue, f[k].req, +1);
	return m;
}

/* Release (on = 1) or put back (on = 0) f[j], keeping rel[j] = whether
 * it is released now. */
static void set_released(struct attempt *x, const struct preempt_cand *f, uint8_t *rel, size_t j,
                         uint8_t on)
{
	if (rel[j] == on)
		return;
	release(x, &f[j], on ? +1 : -1);
	rel[j] = on;
}

/* Exactly f[0..to) released. */
static void release_prefix(struct attempt *x, const struct preempt_cand *f, uint8_t *rel, size_t m,
                           size_t to)
{
	for (size_t j = 0; j < m; j++)
		set_released(x, f, rel, j, j < to);
}

/* The shortest prefix of f (found by binary search: releasing more only
 * frees more) after which the preemptor fits, then each of it given back,
 * most valuable first, when it still fits without it. rel[k] = 1 for the
 * victims left; returns their count, 0 when it never fits or the search
 * ran out of budget. The table and usage are as before on return. */
static int try_set(struct attempt *x, const struct preempt_cand *f, size_t m, uint8_t *rel)
{
	size_t lo = 0, hi = m, taken = 0;
	int rc;

	memset(rel, 0, m);
	release_prefix(x, f, rel, m, m);
	if ((rc = fits_now(x, true)) <= 0)
		goto out;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		release_prefix(x, f, rel, m, mid);
		if ((rc = fits_now(x, true)) < 0)
			goto out;
		if (rc)
			hi = mid;
		else
			lo = mid;
	}
	release_prefix(x, f, rel, m, hi);
	for (size_t j = hi; j-- > 0;) {
		set_released(x, f, rel, j, 0);
		if ((rc = fits_now(x, true)) < 0)
			goto out;
		if (rc == 0)
			set_released(x, f, rel, j, 1);
	}
	for (size_t j = 0; j < m; j++)
		taken += rel[j];
	rc = (int)taken;
out:
	/* Put everything back; rel[] keeps the answer when there is one. */
	for (size_t j = 0; j < m; j++)
		if (rel[j])
			release(x, &f[j], -1);
	if (rc <= 0)
		memset(rel, 0, m);
	return rc > 0 ? rc : rc == -EAGAIN ? 0 : rc;
}

/* The best victim set found so far: the fewest victims, then the lowest
 * highest priority among them, then the ones furthest ahead in the
 * candidate order (its most valuable member the least valuable). */
struct best {
	size_t count;
	int32_t top_priority;
	uint32_t last_pos;
	struct preempt_cand *set;
};

static void consider(struct best *b, const struct preempt_cand *v, size_t n, const uint8_t *keep,
                     size_t count)
{
	int32_t top = INT32_MIN;
	uint32_t last = 0;
	size_t m = 0;

	for (size_t k = 0; k < n; k++) {
		if (keep[k] && v[k].priority > top)
			top = v[k].priority;
		if (keep[k] && v[k].pos > last)
			last = v[k].pos;
	}
	if (b->count && (count > b->count ||
	                 (count == b->count && (top > b->top_priority ||
	                                        (top == b->top_priority && last >= b->last_pos)))))
		return;
	b->last_pos = last;
	for (size_t k = 0; k < n; k++)
		if (keep[k])
			b->set[m++] = v[k];
	b->count = m;
	b->top_priority = top;
}

/* Try one set of candidates; 1 when it gave an answer. */
static int try_cands(struct attempt *x, const struct preempt_cand *sub, size_t ns,
                     struct preempt_cand *f, uint8_t *keep, struct best *b)
{
	size_t m = still_borrowing(x, sub, ns, f);
	int rc;

	if (!m || (rc = try_set(x, f, m, keep)) == 0)
		return 0;
	if (rc < 0)
		return rc;
	consider(b, f, m, keep, (size_t)rc);
	return 1;
}

/* ---- by domain ------------------------------------------------------- */

/* A candidate with pods in a domain, and the GPUs they hold there. */
struct member {
	uint32_t domain, cand; /* cand: index into the candidate order */
	int64_t gpus;
};

static int by_domain(const void *a, const void *b)
{
	const struct member *x = a, *y = b;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	return (x->cand > y->cand) - (x->cand < y->cand);
}

/* Every (domain of level l, candidate) pair, by domain then candidate
 * order, one per pair: O(candidates' pods x log). */
static size_t members_of(const struct policy_nodes *t, const struct preempt_cand *c, size_t nc,
                         unsigned l, struct member *out)
{
	size_t n = 0, w = 0;

	for (size_t k = 0; k < nc; k++)
		for (uint32_t p = 0; p < c[k].npods; p++) {
			uint32_t d = t->domain[(size_t)c[k].node[p] * t->nlevels + l];

			if (d != POLICY_NO_DOMAIN)
				out[n++] =
				    (struct member){d, (uint32_t)k, policy_spec_gpus(c[k].spec[p])};
		}
	qsort(out, n, sizeof(*out), by_domain);
	for (size_t k = 0; k < n; k++) {
		if (w && out[w - 1].domain == out[k].domain && out[w - 1].cand == out[k].cand) {
			out[w - 1].gpus += out[k].gpus;
			continue;
		}
		out[w++] = out[k];
	}
	return w;
}

/* A domain's candidates, from members mb[0..n) of one domain, into sub;
 * with the domain's free GPUs, the GPUs it could have. */
static size_t domain_cands(const struct policy_nodes *t, const struct preempt_cand *c, unsigned l,
                           const struct member *mb, size_t n, struct preempt_cand *sub,
                           int64_t *gpus)
{
	*gpus = t->level[l].free_gpu[mb[0].domain];
	for (size_t k = 0; k < n; k++) {
		sub[k] = c[mb[k].cand];
		*gpus += mb[k].gpus;
	}
	return n;
}

/* Scratch for one search, from the arena. */
struct scratch {
	struct preempt_cand *sub, *f;
	struct member *mb;
	uint8_t *keep;
};

static int scratch_init(struct attempt *x, const struct preempt_cand *c, size_t nc,
                        struct scratch *s)
{
	struct arena *ar = x->a->arena;
	size_t npods = 0;

	for (size_t k = 0; k < nc; k++)
		npods += c[k].npods;
	s->sub = arena_alloc(ar, (nc + 1) * sizeof(*s->sub));
	s->f = arena_alloc(ar, (nc + 1) * sizeof(*s->f));
	s->keep = arena_alloc(ar, nc + 1);
	s->mb = arena_alloc(ar, (npods + 1) * sizeof(*s->mb));
	return s->sub && s->f && s->keep && s->mb ? 0 : -ENOMEM;
}

/* The domains of level l with an answer, up to PREEMPT_ANSWERS. */
static int search_level(struct attempt *x, const struct preempt_cand *c, size_t nc, unsigned l,
                        int64_t want, struct scratch *s, struct best *b)
{
	const struct policy_nodes *t = x->a->nodes;
	size_t n = members_of(t, c, nc, l, s->mb), answers = 0;
	int rc;

	for (size_t i = 0, j; i < n && answers < PREEMPT_ANSWERS && x->checks < PREEMPT_CHECKS;
	     i = j) {
		int64_t gpus;
		size_t ns;

		for (j = i; j < n && s->mb[j].domain == s->mb[i].domain; j++)
			;
		ns = domain_cands(t, c, l, &s->mb[i], j - i, s->sub, &gpus);
		if (gpus < want)
			continue;
		if ((rc = try_cands(x, s->sub, ns, s->f, s->keep, b)) < 0)
			return rc;
		answers += (size_t)rc;
	}
	return 0;
}

static int search(struct attempt *x, const struct preempt_cand *c, size_t nc, struct best *b)
{
	struct scratch s;
	int64_t want = 0;
	int rc;

	if ((rc = scratch_init(x, c, nc, &s)) < 0)
		return rc;
	for (size_t k = 0; k < x->a->n; k++)
		want += policy_spec_gpus(x->a->specs[k]);
	for (unsigned l = x->a->nodes->nsearch; l-- > 0 && !b->count;)
		if ((rc = search_level(x, c, nc, l, want, &s, b)) < 0)
			return rc;
	if (b->count)
		return 0;
	/* No single domain: the whole cluster, as placement itself falls
	 * back to. */
	rc = try_cands(x, c, nc, s.f, s.keep, b);
	return rc < 0 ? rc : 0;
}

/* ---- the answer ------------------------------------------------------ */

int preempt_search(const struct preempt_ask *a, const struct preempt_cand *c, size_t nc,
                   struct preempt_budget *bud, struct preempt_answer *out)
{
	struct attempt x = {a, bud, 0, NULL, NULL};
	struct best b = {0};
	int rc;

	memset(out, 0, sizeof(*out));
	x.out = arena_alloc(a->arena, a->n * sizeof(*x.out));
	x.held = arena_calloc(a->arena, a->n, sizeof(*x.held));
	b.set = arena_alloc(a->arena, nc * sizeof(*b.set));
	if (!x.out || !x.held || !b.set)
		return -ENOMEM;
	if ((rc = search(&x, c, nc, &b)) < 0 || b.count == 0)
		return rc;
	/* The answer's placement, with the victims gone: not a search, so
	 * outside the budget. */
	for (size_t k = 0; k < b.count; k++)
		release(&x, &b.set[k], +1);
	rc = fits_now(&x, false);
	if (rc == 1) {
		/* The room is the preemptor's from now on. */
		for (size_t k = 0; k < a->n; k++)
			policy_nodes_use(a->nodes, x.out[k], a->specs[k], x.held[k], -1);
		queue_tree_charge(a->tree, a->queue, a->req, +1);
	}
	/* The victims run until they are gone: what they free beyond the
	 * preemptor's room is nobody's until then (a pod bound there now
	 * would find the node still full). */
	for (size_t k = 0; k < b.count; k++)
		release(&x, &b.set[k], -1);
	if (rc != 1)
		return rc < 0 ? rc : 0;
	*out = (struct preempt_answer){b.set, b.count, x.out, x.held};
	return 1;
}
