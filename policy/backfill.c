/*
 * Reservations and backfill (backfill.h): the search for a reservation's
 * start over the timeline of ends, and placements that keep out of the
 * reservations' way.
 */
#include "policy/backfill.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A node amount lowered for one backfill placement, to give back. */
struct backfill_undo {
	uint32_t node;
	uint32_t res;
	int64_t delta;
};

int backfill_init(struct backfill *b, struct policy_nodes *t, struct policy_fitcache *fc,
                  struct arena *a, int64_t now_s, unsigned reservations)
{
	memset(b, 0, sizeof(*b));
	b->nodes = t;
	b->fits = fc;
	b->arena = a;
	b->table_arena = a;
	b->now_s = now_s;
	b->max_resv = reservations;
	b->resv = arena_calloc(a, (size_t)reservations + 1, sizeof(*b->resv));
	return b->resv ? 0 : -ENOMEM;
}

bool backfill_full(const struct backfill *b)
{
	return b->nresv >= b->max_resv;
}

/* ---- the timeline ---------------------------------------------------- */

/* By end, then node and spec: a total order (on all but the vGPU shares'
 * address), so that the timeline, and the prefix of it a search tries,
 * does not depend on the order the running pods were met in. */
static int by_end(const void *a, const void *b)
{
	const struct backfill_end *x = a, *y = b;

	if (x->end_s != y->end_s)
		return x->end_s < y->end_s ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->spec != y->spec)
		return (uintptr_t)x->spec < (uintptr_t)y->spec ? -1 : 1;
	return ((uintptr_t)x->held > (uintptr_t)y->held) -
	       ((uintptr_t)x->held < (uintptr_t)y->held);
}

int backfill_timeline_add(struct backfill *b, int64_t end_s, uint32_t node, int32_t tag,
                          const struct kubeapi_podspec *spec, const struct policy_held *held)
{
	if (end_s == POLICY_NEVER) {
		if (arena_grow(b->arena, &b->forever, b->nforever, &b->cap_forever,
		               sizeof(*b->forever), 1024) < 0)
			return -ENOMEM;
		b->forever[b->nforever++] = (struct backfill_end){end_s, node, tag, spec, held};
		return 0;
	}
	if (arena_grow(b->arena, &b->ends, b->nends, &b->cap_ends, sizeof(*b->ends), 1024) < 0)
		return -ENOMEM;
	if (end_s < b->now_s)
		end_s = b->now_s; /* past its estimate: any moment now */
	b->ends[b->nends++] = (struct backfill_end){end_s, node, tag, spec, held};
	return 0;
}

/* Room for n more in one of the timeline's arrays (v[0..*len) of *cap). */
static int room(struct arena *a, struct backfill_end **v, size_t len, size_t *cap, size_t n)
{
	struct backfill_end *w;

	if (n <= *cap - len)
		return 0;
	if (n > SIZE_MAX / sizeof(*w) - len || !(w = arena_alloc(a, (len + n) * sizeof(*w))))
		return -ENOMEM;
	if (len)
		memcpy(w, *v, len * sizeof(*w));
	*v = w;
	*cap = len + n;
	return 0;
}

int backfill_timeline_room(struct backfill *b, size_t nends, size_t nforever)
{
	int rc = room(b->arena, &b->ends, b->nends, &b->cap_ends, nends);

	return rc < 0 ? rc : room(b->arena, &b->forever, b->nforever, &b->cap_forever, nforever);
}

int backfill_forever(struct backfill *b)
{
	int (*fill)(void *, struct backfill *) = b->forever_fill;

	b->forever_fill = NULL; /* once, whatever it returns */
	return fill ? fill(b->vacate_arg, b) : 0;
}

void backfill_timeline_done(struct backfill *b)
{
	if (b->nends)
		qsort(b->ends, b->nends, sizeof(*b->ends), by_end);
	b->timeline_done = 1;
}

void backfill_timeline_use(struct backfill *b, struct backfill_end *ends, size_t n,
                           struct backfill_end *forever, size_t nforever)
{
	b->ends = ends;
	b->nends = n;
	b->cap_ends = 0; /* not the arena's: never grown */
	b->forever = forever;
	b->nforever = nforever;
	b->cap_forever = 0;
	b->timeline_done = 1;
}

/* ---- reservations ---------------------------------------------------- */

/* The timeline one search walks: running work (a: the timeline, used in
 * place), merged by time with the few ends a copy holds (m: the earlier
 * reservations' and the caller's more ends, sorted; pos[j] is m[j]'s
 * index in the merged order, an end of a coming first among equal
 * times). Merged where it is read, not copied: a copy of every end was
 * O(running pods) for each search once anything else ended too. */
struct search {
	struct policy_nodes s; /* the scratch table */
	const struct backfill_end *a, *m;
	size_t na, nm, *pos;
	size_t nev, at; /* events [0, at) of the merged order are applied to s */
	const struct kubeapi_podspec **specs;
	size_t n;
	uint32_t *out;
	const struct policy_held **held;
	const struct policy_within *within; /* the gang's constraint, or NULL */
};

/* How many of a[0..n) end at or before t (a by end). */
static size_t ends_by(const struct backfill_end *a, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].end_s <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The caller's more ends (by end) merged into mine[0..k) (by end), which
 * has room for them. */
static int merge_more(struct backfill *b, struct backfill_end *mine, size_t k)
{
	struct backfill_end *own = arena_alloc(b->arena, (k + 1) * sizeof(*own));
	size_t i = 0, j = 0, n = 0;

	if (!own)
		return -ENOMEM;
	if (k)
		memcpy(own, mine, k * sizeof(*own));
	while (i < k || j < b->nmore)
		mine[n++] = j >= b->nmore || (i < k && own[i].end_s <= b->more[j].end_s)
		                ? own[i++]
		                : b->more[j++];
	return 0;
}

static int merge_events(struct backfill *b, struct search *x)
{
	size_t extra = b->nmore, k = 0;
	struct backfill_end *mine;
	int rc;

	x->a = b->ends;
	x->na = b->nends;
	for (size_t v = 0; v < b->nresv; v++)
		if (b->resv[v].end_s != POLICY_NEVER)
			extra += b->resv[v].nmembers;
	x->nev = x->na + extra;
	if (!extra)
		return 0;
	mine = arena_alloc(b->arena, extra * sizeof(*mine));
	x->pos = arena_alloc(b->arena, extra * sizeof(*x->pos));
	if (!mine || !x->pos)
		return -ENOMEM;
	for (size_t v = 0; v < b->nresv; v++)
		for (uint32_t m = 0; b->resv[v].end_s != POLICY_NEVER && m < b->resv[v].nmembers;
		     m++)
			mine[k++] = (struct backfill_end){b->resv[v].end_s, b->resv[v].at[m], -1,
			                                  b->resv[v].specs[m], b->resv[v].held[m]};
	qsort(mine, k, sizeof(*mine), by_end);
	if (b->nmore && (rc = merge_more(b, mine, k)) < 0)
		return rc;
	for (size_t j = 0; j < extra; j++)
		x->pos[j] = j + ends_by(x->a, x->na, mine[j].end_s);
	x->m = mine;
	x->nm = extra;
	return 0;
}

/* How many of the copied ends come before merged index k. */
static size_t copied_before(const struct search *x, size_t k)
{
	size_t lo = 0, hi = x->nm;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->pos[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The end at merged index k. */
static const struct backfill_end *event(const struct search *x, size_t k)
{
	size_t c = copied_before(x, k);

	return c < x->nm && x->pos[c] == k ? &x->m[c] : &x->a[k - c];
}

/* Count merged ends [lo, hi) back into (sign +1) or out of (-1) table t,
 * each node's GPU summary worked out once at the end (a node holds many
 * of them: once a pod, that was a fifth of a cycle on shared GPUs). */
static void count_range(const struct search *x, struct policy_nodes *t, size_t lo, size_t hi,
                        int sign)
{
	size_t c = copied_before(x, lo), k;

	for (k = lo; k < hi; k++) {
		const struct backfill_end *e =
		    c < x->nm && x->pos[c] == k ? &x->m[c++] : &x->a[k - c];

		policy_nodes_count(t, e->node, e->spec, e->held, sign);
	}
	c = copied_before(x, lo);
	for (k = lo; k < hi; k++) {
		const struct backfill_end *e =
		    c < x->nm && x->pos[c] == k ? &x->m[c++] : &x->a[k - c];

		policy_nodes_settle_node(t, e->node);
	}
}

/* Count ends[0..n) back into table t, settled as count_range(). */
static void count_ends(struct policy_nodes *t, const struct backfill_end *ends, size_t n)
{
	for (size_t k = 0; k < n; k++)
		policy_nodes_count(t, ends[k].node, ends[k].spec, ends[k].held, +1);
	for (size_t k = 0; k < n; k++)
		policy_nodes_settle_node(t, ends[k].node);
}

/* Apply or take back events until exactly [0, m) are applied. */
static void seek(struct search *x, size_t m)
{
	if (x->at < m)
		count_range(x, &x->s, x->at, m, +1);
	else if (x->at > m)
		count_range(x, &x->s, m, x->at, -1);
	x->at = m;
}

/* Every end given back to the scratch table, the timed ones applied:
 * by the caller's vacate at once when it can (from none applied), else
 * the rest one by one. The caller's vacate knows nothing of its own more
 * ends; nor of the earlier reservations', which it leaves held. 0 or
 * -ENOMEM (the ends without an estimate not made: x->s is then short of
 * them). */
static int vacate(struct backfill *b, struct search *x)
{
	int rc;

	if (b->vacate && !b->nmore) {
		seek(x, 0);
		if (b->vacate(b->vacate_arg, &x->s) == 0) {
			x->at = x->nev;
			return 0;
		}
	}
	seek(x, x->nev);
	if ((rc = backfill_forever(b)) < 0)
		return rc;
	count_ends(&x->s, b->forever, b->nforever);
	return 0;
}

/* Does the gang fit the scratch table now? keep: leave it placed. */
static int fits(struct backfill *b, struct search *x, bool keep)
{
	int rc = policy_place_within(&x->s, b->fits, b->arena, x->within, x->specs, x->n, x->out,
	                             x->held, NULL);

	b->tries++;
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		return 0;
	for (size_t k = 0; !keep && k < x->n; k++)
		policy_nodes_use(&x->s, x->out[k], x->specs[k], x->held[k], +1);
	return 1;
}

/* The scratch table: the live one, the earlier reservations holding
 * their nodes from now on. */
static int search_init(struct backfill *b, struct search *x,
                       const struct kubeapi_podspec *const *specs, size_t n)
{
	int rc;

	memset(x, 0, sizeof(*x));
	if ((rc = policy_nodes_copy(&x->s, b->nodes, b->arena)) < 0 ||
	    (rc = merge_events(b, x)) < 0)
		return rc;
	for (size_t v = 0; v < b->nresv; v++)
		for (uint32_t m = 0; m < b->resv[v].nmembers; m++)
			policy_nodes_use(&x->s, b->resv[v].at[m], b->resv[v].specs[m],
			                 b->resv[v].held[m], -1);
	x->n = n;
	x->specs = arena_alloc(b->arena, n * sizeof(*x->specs));
	x->out = arena_alloc(b->arena, n * sizeof(*x->out));
	x->held = arena_calloc(b->arena, n, sizeof(*x->held));
	if (!x->specs || !x->out || !x->held)
		return -ENOMEM;
	memcpy(x->specs, specs, n * sizeof(*x->specs));
	return 0;
}

/* The smallest prefix of the timeline after which the gang fits, placed
 * in x->s: its start time, or POLICY_NEVER when it fits only once work
 * without an estimate has ended too; -ENOSPC when not even then. */
static int64_t search_start(struct backfill *b, struct search *x, int *err)
{
	size_t lo = 0, hi = 1; /* lo does not fit: the live table already said so */
	int rc;

	/* Gallop: 1, 2, 4 ... ends given back until the gang fits, so the
	 * ends counted are about twice the answer's, not the whole timeline
	 * (every running pod with a runtime: a tenth of a steady cycle). */
	for (;;) {
		hi = hi < x->nev ? hi : x->nev;
		seek(x, hi);
		if ((rc = fits(b, x, false)) < 0) {
			*err = rc;
			return 0;
		}
		if (rc)
			break;
		if (hi == x->nev) {
			/* Not even when all timed work ends: give back the rest too. */
			if ((rc = vacate(b, x)) < 0) {
				*err = rc;
				return 0;
			}
			if ((rc = fits(b, x, true)) == 1)
				return POLICY_NEVER;
			*err = rc < 0 ? rc : -ENOSPC;
			return 0;
		}
		lo = hi;
		hi *= 2;
	}
	/* fits(hi), not fits(lo): find the smallest such prefix between. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		seek(x, mid);
		if ((rc = fits(b, x, false)) < 0) {
			*err = rc;
			return 0;
		}
		if (rc)
			hi = mid;
		else
			lo = mid;
	}
	/* Everything that ends at that moment has ended: the placement then
	 * sees all the room of that moment, and need not take what is free
	 * now and could be backfilled. */
	while (hi > 0 && hi < x->nev && event(x, hi)->end_s == event(x, hi - 1)->end_s)
		hi++;
	seek(x, hi);
	if ((rc = fits(b, x, true)) != 1) {
		*err = rc < 0 ? rc : -ENOSPC;
		return 0;
	}
	return hi ? event(x, hi - 1)->end_s : b->now_s;
}

/* Room to lower every reserved node's every resource once. */
static int undo_room(struct backfill *b)
{
	size_t need = 0;

	for (size_t k = 0; k <= b->nresv; k++)
		need += (size_t)b->resv[k].n * b->nodes->nres;
	if (need <= b->cap_undo)
		return 0;
	if (!(b->undo = arena_alloc(b->arena, need * sizeof(*b->undo))))
		return -ENOMEM;
	b->cap_undo = need;
	return 0;
}

/* Record the reservation placed in x->s: its distinct nodes and what is
 * left on each at the start. */
static int install(struct backfill *b, uint32_t id, struct search *x, int64_t start,
                   int64_t runtime_s)
{
	struct backfill_resv *v = &b->resv[b->nresv];
	unsigned nres = x->s.nres;
	int rc;

	memset(v, 0, sizeof(*v));
	v->node = arena_alloc(b->arena, x->n * sizeof(*v->node));
	v->extra = arena_alloc(b->arena, x->n * nres * sizeof(*v->extra));
	if (!v->node || !v->extra)
		return -ENOMEM;
	for (size_t k = 0; k < x->n; k++) {
		uint32_t j = 0;

		while (j < v->n && v->node[j] != x->out[k])
			j++;
		if (j == v->n) {
			v->node[v->n++] = x->out[k];
			memcpy(&v->extra[(size_t)j * nres], &x->s.free[(size_t)x->out[k] * nres],
			       nres * sizeof(*v->extra));
		}
	}
	v->id = id;
	v->start_s = start;
	v->end_s =
	    start == POLICY_NEVER || runtime_s == POLICY_NEVER ? POLICY_NEVER : start + runtime_s;
	v->nmembers = (uint32_t)x->n;
	v->specs = x->specs;
	v->held = x->held;
	v->at = x->out;
	if ((rc = undo_room(b)) < 0)
		return rc;
	b->nresv++;
	return 0;
}

int backfill_reserve(struct backfill *b, uint32_t id, const struct policy_within *w,
                     const struct kubeapi_podspec *const *specs, size_t n, int64_t runtime_s,
                     const struct backfill_resv **out)
{
	struct search x;
	int64_t start;
	int rc, err = 0;

	*out = NULL;
	if (backfill_full(b) || !b->timeline_done)
		return -EINVAL;
	if ((rc = search_init(b, &x, specs, n)) < 0)
		return rc;
	x.within = w;
	start = search_start(b, &x, &err);
	if (err)
		return err == -ENOSPC ? 0 : err; /* never fits: holds nothing */
	if ((rc = install(b, id, &x, start, runtime_s)) < 0)
		return rc;
	*out = &b->resv[b->nresv - 1];
	return 1;
}

/* ---- backfill -------------------------------------------------------- */

/* Must a placement ending at end_s keep out of v's room? */
static bool kept_out(const struct backfill_resv *v, int64_t end_s)
{
	return v->start_s == POLICY_NEVER || end_s == POLICY_NEVER || end_s > v->start_s;
}

size_t backfill_kept_out(const struct backfill *b, int64_t end_s)
{
	size_t n = 0;

	for (size_t v = 0; v < b->nresv; v++)
		n += kept_out(&b->resv[v], end_s);
	return n;
}

/* Lower each reserved node to what the placement may use of it. */
static size_t lower(struct backfill *b, int64_t end_s)
{
	struct policy_nodes *t = b->nodes;
	size_t nu = 0;

	for (size_t v = 0; v < b->nresv; v++) {
		const struct backfill_resv *rv = &b->resv[v];

		if (!kept_out(rv, end_s))
			continue;
		for (uint32_t j = 0; j < rv->n; j++)
			for (unsigned res = 0; res < t->nres; res++) {
				int64_t f = t->free[(size_t)rv->node[j] * t->nres + res];
				int64_t e = rv->extra[(size_t)j * t->nres + res];

				if (f <= e)
					continue;
				policy_nodes_adjust(t, rv->node[j], res, e - f);
				b->undo[nu++] = (struct backfill_undo){rv->node[j], res, f - e};
			}
	}
	return nu;
}

/* A placed member on a reserved node uses that node's extra. */
static void take_extra(struct backfill *b, int64_t end_s, uint32_t node,
                       const struct kubeapi_podspec *spec)
{
	const struct kubeapi_res *req = kubeapi_podspec_requests(spec);
	unsigned nres = b->nodes->nres;

	for (size_t v = 0; v < b->nresv; v++) {
		struct backfill_resv *rv = &b->resv[v];

		if (!kept_out(rv, end_s))
			continue;
		for (uint32_t j = 0; j < rv->n; j++) {
			int64_t *e = &rv->extra[(size_t)j * nres];

			if (rv->node[j] != node)
				continue;
			for (unsigned k = 0; k < spec->nrequests; k++)
				if (req[k].res < nres)
					e[req[k].res] -= req[k].amount;
			e[KUBEAPI_RES_PODS] -= 1;
		}
	}
}

int backfill_place(struct backfill *b, int64_t end_s, const struct policy_within *w,
                   const struct kubeapi_podspec *const *specs, size_t n, uint32_t *out,
                   const struct policy_held **held, struct policy_why *why)
{
	struct policy_nodes *t = b->nodes;
	size_t nu;
	int rc;

	if (!b->nresv)
		return policy_place_within(t, b->fits, b->table_arena, w, specs, n, out, held, why);
	nu = lower(b, end_s);
	rc = policy_place_within(t, b->fits, b->table_arena, w, specs, n, out, held, why);
	while (nu--)
		policy_nodes_adjust(t, b->undo[nu].node, b->undo[nu].res, b->undo[nu].delta);
	if (rc < 0)
		return rc;
	for (size_t k = 0; k < n; k++)
		take_extra(b, end_s, out[k], specs[k]);
	b->backfilled++;
	return 0;
}
