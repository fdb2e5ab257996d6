/*
 * Gang placement (policy.h has the rule and the node score).
 *
 * A trial places the members one by one into the table itself and keeps
 * an undo list, so trying a domain costs no copy of the table: a failed
 * trial is rolled back. Domains are tried tightest first, so the first
 * trial that succeeds is the placement and stays.
 *
 * What makes a trial cheap: every node's score reads that node's state
 * alone, so the members of one spec in a row share one scored list of
 * the nodes that take them (struct trial's cands), and after each member
 * only the node it went to is scored again. On 5,000 nodes with 30% of
 * the gangs on shared GPUs that took the cycle from 3.3x the whole-GPU
 * cycle to about 1.5x (bench/README.md). And the search for the tightest
 * domain walks the level's index (dindex.c) from the least key that could
 * hold the gang, instead of reading every domain: at the node level that
 * read was the cluster's size per gang tried, and the cycle's cost grew
 * with the square of the cluster.
 */
#include "policy/table.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "policy/frag.h"

/* Shares one member may get at most: what a pod's annotation holds. */
#define MAX_SHARES KUBEAPI_VGPU_MAX_SHARES

/* What best_node() reads of a member's spec, worked out once per call
 * (setup()), not once per trial. */
struct look {
	const struct kubeapi_podspec *s;
	const struct policy_fit *f;
	int64_t gpus, cpu;
	struct policy__need need;
	double cpu_per_core;
};

/* The least any member asks, for domain_may_hold(): whole GPUs, CPU and
 * memory, and room on a GPU and empty GPUs when every member asks for
 * vGPUs. */
struct least {
	int64_t gpus, cpu, mem;
	struct policy__need need;
	bool vgpu_all;
};

struct trial {
	struct policy_nodes *t;
	const struct kubeapi_podspec *const *specs;
	struct look *looks;    /* per member */
	const uint32_t *order; /* members, largest GPU request first */
	size_t n;
	uint32_t *out;
	/* Per member that asks for vGPUs, room for its shares (from the
	 * arena once per call, not per trial); NULL for the others. */
	struct policy_held **held;
	struct arena *a; /* the call's: what the memo's records are kept in */
	size_t placed;   /* members placed so far, in order */
	/* What the members ask in all, a resource each (amount > 0), and
	 * their CPU again (what a node lacks most often, in a packed array). */
	struct kubeapi_res *total;
	unsigned ntotal;
	int64_t total_cpu;
	/* The nodes that take the member of spec cspec on the candidate
	 * list clist, cands[0..ncands), kept from one member to the next
	 * within a run(); last: the entry the last member went to. From a
	 * spec's second member on, cands is a heap in before() order
	 * (heaped), so each further member costs O(log cands), not a scan;
	 * or, where scores only get better as members go onto a node
	 * (ranks()), the spec's next members' best in reverse order (ranked:
	 * the best last), no more of them than members to come. */
	struct policy_cand *cands;
	size_t ncands, last;
	bool heaped, ranked;
	/* While a domain of a zone-sized level is tried (gcand: its node
	 * list), its lists of nodes that may have free GPUs (struct
	 * gpu_list, gl; gd: the domain): all a member asking for GPUs is
	 * tried on. */
	const uint32_t *gcand;
	struct gpu_list *gl;
	uint32_t gd, gstart; /* gstart: the domain's start in its level */
	const struct kubeapi_podspec *cspec;
	const uint32_t *clist;
	struct least least;
};

/* The node score of policy.h, as a tuple compared left to right. */
struct score {
	int cpu_on_gpu;
	double frag;
	int64_t gpu_left;
	double cpu_left; /* on registered GPUs with a mix: how far from balance */
	int32_t pref;
};

/* The score's first three: what decides before the CPU left. */
static int score_head_cmp(const struct score *a, const struct score *b)
{
	if (a->cpu_on_gpu != b->cpu_on_gpu)
		return a->cpu_on_gpu < b->cpu_on_gpu ? -1 : 1;
	if (a->frag != b->frag)
		return a->frag < b->frag ? -1 : 1;
	if (a->gpu_left != b->gpu_left)
		return a->gpu_left < b->gpu_left ? -1 : 1;
	return 0;
}

static int score_cmp(const struct score *a, const struct score *b)
{
	int c = score_head_cmp(a, b);

	if (c)
		return c;
	if (a->cpu_left != b->cpu_left)
		return a->cpu_left < b->cpu_left ? -1 : 1;
	if (a->pref != b->pref)
		return a->pref > b->pref ? -1 : 1;
	return 0;
}

/* Node i's score for spec s but for the balance on registered GPUs
 * (filled in only on a tie, as it costs a walk of the node's GPUs);
 * cpu and gpus are what s asks. */
static struct score score_of(const struct policy_nodes *t, size_t i,
                             const struct kubeapi_podspec *s, int64_t cpu, int64_t gpus)
{
	const int64_t *f = &t->free[i * t->nres];
	struct score sc = {
	    .cpu_on_gpu = gpus == 0 && t->gpu_node[i],
	    .gpu_left = f[KUBEAPI_RES_GPU] - gpus,
	    .cpu_left = (double)(f[KUBEAPI_RES_CPU] - cpu),
	    .pref = s->npreferred ? policy_preferred_score(t, i, s) : 0,
	};
	return sc;
}

/* Keep node i's shares for member m as its held record. */
static void keep_shares(struct policy_held *h, const struct policy_nodes *t, size_t i,
                        const struct policy_vgpu_share *v, size_t n, uint32_t ncontainers)
{
	h->n = (uint32_t)n;
	h->ncontainers = ncontainers;
	for (size_t k = 0; k < n; k++)
		h->s[k] = (struct policy_share){t->gpu_first[i] + v[k].gpu, v[k].container,
		                                v[k].mem, v[k].cores};
}

/* A node a member may go to, with its score: what a trial keeps while
 * members of one spec go onto one candidate list (struct trial). */
struct policy_cand {
	struct score sc;
	const struct policy__vrec *rec; /* its vGPU shares, or NULL */
	uint32_t node, k;               /* k: its place in the candidate list */
	bool lazy;                      /* the balance is yet to replace sc.cpu_left */
};

/* A domain of one level the gang may fit in, and what it would leave. */
struct policy_try {
	int64_t left;
	uint32_t d;
};

/* Domains of this many nodes on average (zones, not racks) keep lists
 * of their nodes with free GPUs (struct gpu_list). */
#define GPU_LIST_MIN_NODES 256

/* The free GPUs each of a domain's lists is for (struct gpu_list): the
 * counts whole-GPU pods mostly ask. */
#define GPU_LISTS POLICY_TAKES
static const int64_t gpu_list_at[GPU_LISTS] = {1, 2, 4, 8}; /* 2^x, as takes (policy.h) */

/*
 * A zone-sized level's nodes that may have free GPUs, domain by domain,
 * in GPU_LISTS lists: list x holds every node with gpu_list_at[x] free
 * GPUs or more, and some with fewer. A gang too big for any rack is
 * tried on a whole zone, and each member asking for g GPUs only on the
 * list for the most at or below g, not on every node of the zone (in a
 * busy pool most have too few: at 100,000 nodes 88% of the nodes a zone
 * trial read on one list of all nodes with a free GPU). A node is
 * listed once its GPUs rise to the list's count (policy__gpu_rose(),
 * from use(), adjust(), a reset row; a table assigned or a timeline
 * vacated lists its zones again), and a node found below it while a
 * list is read leaves it (gpu_list_keeps()). The lists' reads in a run
 * at 100,000 nodes: 7,187,552 on the one list before, 914,225 now.
 * Domain d's places in its node list are ks[x][lv->start[d]] on,
 * n[x][d] of them, in no order (a trial's choice does not hang on it:
 * before() breaks ties by place); pos: each node's place in its
 * domain's list; in[x]: a bit a node, listed. O(nodes x GPU_LISTS) of
 * arena a level, made with the scratch and again after a bulk change
 * (stale).
 */
struct gpu_list {
	uint32_t *ks[GPU_LISTS], *n[GPU_LISTS], *pos;
	uint64_t *in[GPU_LISTS];
	bool stale;
};

/* The table's working room for placements (policy.h), made on first
 * use: O(nodes + domains) of arena once per table. */
struct policy_scratch {
	struct policy_try *tries;                /* the domains of one level */
	struct policy_cand *cands;               /* the nodes one member may take */
	uint32_t *takers;                        /* the same, before they are scored */
	struct gpu_list gpus[POLICY_MAX_LEVELS]; /* zone-sized levels' (ks[0] NULL: none) */
};

/* The list (and the takes, policy.h) for members asking g GPUs or more:
 * the one for the most at or below g. g >= 1. */
static unsigned list_for(int64_t g)
{
	unsigned x = 0;

	while (x + 1 < GPU_LISTS && gpu_list_at[x + 1] <= g)
		x++;
	return x;
}

static void gpu_list_add(struct gpu_list *g, unsigned x, const struct policy_level *lv, uint32_t d,
                         size_t i)
{
	if (g->in[x][i / 64] >> (i % 64) & 1)
		return;
	g->in[x][i / 64] |= 1ull << (i % 64);
	g->ks[x][lv->start[d] + g->n[x][d]++] = g->pos[i];
}

/* Node i listed wherever its free GPUs, now, reach and it is not. */
static void gpu_list_node(struct gpu_list *g, const struct policy_level *lv, uint32_t d, size_t i,
                          int64_t was, int64_t now)
{
	for (unsigned x = 0; x < GPU_LISTS && gpu_list_at[x] <= now; x++)
		if (gpu_list_at[x] > was)
			gpu_list_add(g, x, lv, d, i);
}

/* List level l's nodes with free GPUs afresh. O(nodes). */
static void gpu_list_fill(struct policy_nodes *t, unsigned l)
{
	const struct policy_level *lv = &t->level[l];
	struct gpu_list *g = &t->scratch->gpus[l];

	for (unsigned x = 0; x < GPU_LISTS; x++) {
		memset(g->n[x], 0, lv->ndomains * sizeof(*g->n[x]));
		memset(g->in[x], 0, (t->n + 63) / 64 * sizeof(*g->in[x]));
	}
	for (size_t i = 0; i < t->n; i++) {
		uint32_t d = t->domain[i * t->nlevels + l];

		if (d != POLICY_NO_DOMAIN)
			gpu_list_node(g, lv, d, i, 0, t->free_gpu[i]);
	}
	g->stale = false;
}

static int gpu_lists(struct policy_scratch *w, struct policy_nodes *t, struct arena *a)
{
	for (unsigned l = 0; l < t->nlevels; l++) {
		const struct policy_level *lv = &t->level[l];
		struct gpu_list *g = &w->gpus[l];
		size_t nodes = lv->start[lv->ndomains];

		*g = (struct gpu_list){0};
		if (!lv->ndomains || nodes / lv->ndomains < GPU_LIST_MIN_NODES)
			continue;
		for (unsigned x = 0; x < GPU_LISTS; x++)
			if (!(g->ks[x] = arena_alloc(a, nodes * sizeof(*g->ks[x]))) ||
			    !(g->n[x] = arena_alloc(a, lv->ndomains * sizeof(*g->n[x]))) ||
			    !(g->in[x] = arena_alloc(a, (t->n + 63) / 64 * sizeof(*g->in[x]))))
				return -ENOMEM;
		if (!(g->pos = arena_alloc(a, t->n * sizeof(*g->pos))))
			return -ENOMEM;
		for (uint32_t d = 0; d < lv->ndomains; d++)
			for (uint32_t k = lv->start[d]; k < lv->start[d + 1]; k++)
				g->pos[lv->members[k]] = k - lv->start[d];
		g->stale = true; /* filled on first use */
	}
	return 0;
}

void policy__gpu_rose(struct policy_nodes *t, size_t i, int64_t was)
{
	for (unsigned l = 0; t->scratch && l < t->nlevels; l++) {
		struct gpu_list *g = &t->scratch->gpus[l];
		uint32_t d = t->domain[i * t->nlevels + l];

		if (g->ks[0] && !g->stale && d != POLICY_NO_DOMAIN)
			gpu_list_node(g, &t->level[l], d, i, was, t->free_gpu[i]);
	}
}

void policy__gpu_lists_stale(struct policy_nodes *t)
{
	for (unsigned l = 0; t->scratch && l < t->nlevels; l++)
		t->scratch->gpus[l].stale = true;
}

/* Whether entry j of ks, one domain's part of list x of g (*n entries),
 * node i with `free` GPUs, stays: if not (below the list's count), it
 * leaves: its bit is cleared, the last entry takes its place and *n
 * counts one fewer. */
static bool gpu_list_keeps(struct gpu_list *g, unsigned x, uint32_t *ks, uint32_t *n, size_t j,
                           size_t i, int64_t free)
{
	if (free >= gpu_list_at[x])
		return true;
	g->in[x][i / 64] &= ~(1ull << (i % 64));
	ks[j] = ks[--*n];
	return false;
}

static struct policy_scratch *scratch_of(struct policy_nodes *t, struct arena *a)
{
	struct policy_scratch *w = t->scratch;
	size_t most = 0;

	if (w)
		return w;
	for (unsigned k = 0; k < t->nlevels; k++)
		most = t->level[k].ndomains > most ? t->level[k].ndomains : most;
	if (!(w = arena_alloc(a, sizeof(*w))) ||
	    !(w->tries = arena_alloc(a, (most + 1) * sizeof(*w->tries))) ||
	    !(w->cands = arena_alloc(a, (t->n + 1) * sizeof(*w->cands))) ||
	    !(w->takers = arena_alloc(a, (t->n + 1) * sizeof(*w->takers))) ||
	    gpu_lists(w, t, a) < 0)
		return NULL;
	return t->scratch = w;
}

/* What the first, cheap test of a node for a member reads, gathered once
 * so that a loop over many nodes keeps it in registers (read through tr
 * and lk, the compiler read it again for every node: evaluate() stores
 * between two tests). */
struct first_test {
	const uint64_t *bits; /* the member's static fit */
	const int64_t *free_cpu, *free_gpu;
	int64_t cpu, gpus;
	const uint32_t *gpu_first;
	const uint8_t *room, *empty;
	unsigned need_room, need_alone;
	bool vgpu;
};

static struct first_test first_test_of(const struct trial *tr, const struct look *lk)
{
	const struct policy_nodes *t = tr->t;

	return (struct first_test){lk->f->bits,   t->free_cpu,    t->free_gpu,      lk->cpu,
	                           lk->gpus,      t->gpu_first,   t->gpu_room,      t->gpu_empty,
	                           lk->need.room, lk->need.alone, lk->s->nvgpu != 0};
}

/* The first, cheap test of node i for the member: static fit and room on
 * its GPUs. Most nodes a member passes over fail here, without a call.
 * GPUs before CPU: most nodes of a busy GPU pool have CPU to spare and
 * no GPU, so one array read turns them down, not two (a zone's every
 * node is read this way for a gang too big for any rack). */
static inline bool passes(const struct first_test *x, size_t i)
{
	return (x->bits[i / 64] >> (i % 64) & 1) && (x->gpus <= 0 || x->free_gpu[i] >= x->gpus) &&
	       (x->cpu <= 0 || x->free_cpu[i] >= x->cpu) &&
	       (!x->vgpu || (x->gpu_first[i + 1] != x->gpu_first[i] && x->room[i] >= x->need_room &&
	                     x->empty[i] >= x->need_alone));
}

static inline bool may_take(const struct trial *tr, const struct look *lk, size_t i)
{
	struct first_test x = first_test_of(tr, lk);

	return passes(&x, i);
}

/* Whether node i (cand[k]), which may_take() passed, takes the member,
 * and its score in *c. A node's score reads that node's state alone. */
static bool evaluate(const struct trial *tr, const struct look *lk, size_t i, size_t k,
                     struct policy_cand *c)
{
	const struct kubeapi_podspec *s = lk->s;
	size_t ng = tr->t->gpu_first[i + 1] - tr->t->gpu_first[i];
	double frag = 0;

	if (!policy_fits_free(tr->t, i, s))
		return false;
	c->rec = NULL;
	if (ng && policy__vgpu_score(tr->t, tr->a, s, i, &frag, &c->rec) < 0)
		return false;
	c->sc = score_of(tr->t, i, s, lk->cpu, lk->gpus);
	c->sc.frag = frag;
	c->node = (uint32_t)i;
	c->k = (uint32_t)k;
	/* On registered GPUs under a mix, CPU best fit gives way to the
	 * balance (policy.h, 3.), worked out only when the rest ties. */
	c->lazy = ng && tr->t->mix;
	return true;
}

/* Put x's balance in its score, if it is still to be worked out. */
static void settle(const struct trial *tr, const struct look *lk, struct policy_cand *x)
{
	if (x->lazy)
		x->sc.cpu_left = policy__vgpu_balance(tr->t, lk->s, x->node, lk->cpu_per_core);
	x->lazy = false;
}

/* Does a go before b? The score, then the earlier place in the list. */
static bool before(const struct trial *tr, const struct look *lk, struct policy_cand *a,
                   struct policy_cand *b)
{
	int c = score_head_cmp(&a->sc, &b->sc);

	if (c)
		return c < 0;
	settle(tr, lk, a);
	settle(tr, lk, b);
	c = score_cmp(&a->sc, &b->sc);
	return c ? c < 0 : a->k < b->k;
}

/* The places k in cand[0..ncand) whose node may_take() the member, into
 * out; their count. The loop most nodes of a domain tried end in, so it
 * runs alone, before any is scored. */
static size_t takers(const struct trial *tr, const struct look *lk, const uint32_t *cand,
                     size_t ncand, uint32_t *out)
{
	const struct first_test x = first_test_of(tr, lk);
	size_t n = 0;

	if (x.gpus > 0 && cand == tr->gcand) { /* an unlisted node has too few GPUs */
		unsigned l = list_for(x.gpus);
		uint32_t *ks = tr->gl->ks[l] + tr->gstart, *nks = &tr->gl->n[l][tr->gd];

		for (size_t j = 0; j < *nks;) {
			size_t i = cand[ks[j]];

			if (!gpu_list_keeps(tr->gl, l, ks, nks, j, i, x.free_gpu[i]))
				continue;
			if (passes(&x, i))
				out[n++] = ks[j];
			j++;
		}
		return n;
	}
	for (size_t k = 0; k < ncand; k++)
		if (passes(&x, cand[k]))
			out[n++] = (uint32_t)k;
	return n;
}

/* Whether a goes on top of b in a heap of candidates: the better, or
 * with worst set the worse. */
static bool above(const struct trial *tr, const struct look *lk, struct policy_cand *a,
                  struct policy_cand *b, bool worst)
{
	return worst ? before(tr, lk, b, a) : before(tr, lk, a, b);
}

/* Restore the heap order of c[0..n) below place j, the best on top (the
 * worst with worst set): the entry there may go below its children. */
static void sift_cands(const struct trial *tr, const struct look *lk, struct policy_cand *c,
                       size_t n, size_t j, bool worst)
{
	for (;;) {
		size_t l = 2 * j + 1, m = j;
		struct policy_cand x;

		if (l < n && above(tr, lk, &c[l], &c[m], worst))
			m = l;
		if (l + 1 < n && above(tr, lk, &c[l + 1], &c[m], worst))
			m = l + 1;
		if (m == j)
			return;
		x = c[j];
		c[j] = c[m];
		c[m] = x;
		j = m;
	}
}

static void cand_sift(struct trial *tr, const struct look *lk, size_t j)
{
	sift_cands(tr, lk, tr->cands, tr->ncands, j, false);
}

/* The members still to place, from the next, that share its spec s:
 * those a candidate list made for it serves in a row. */
static size_t run_of(const struct trial *tr, const struct kubeapi_podspec *s)
{
	size_t k = tr->placed;

	while (k < tr->n && tr->specs[tr->order[k]] == s)
		k++;
	return k - tr->placed;
}

/* Whether the member's candidates keep their order as members go onto
 * them: a node's score reads its GPUs and CPU left (fewer is better),
 * which only fall as members take them, and its static preference; the
 * fragmentation and balance terms, which can rise, need registered GPUs
 * (and a mix), which no node has. Then the member on the best node leaves
 * it the best or unable to take the next, and the spec's r members in a
 * row go onto nodes of its r best at most, in their order. */
static bool ranks(const struct trial *tr, const struct look *lk)
{
	const struct policy_nodes *t = tr->t;

	return !t->mix && t->gpu_first[t->n] == 0 && lk->s->nvgpu == 0;
}

/* Keep tr->cands' best r (r >= 2), the best last: a heap of the r best
 * so far, the worst on top, that each further candidate replaces the top
 * of if better, then sorted. A before() call a candidate, log r more for
 * each that goes in, and r log r for the sort, where a heap of all of
 * them cost 2 cands + r log cands: at 100,000 nodes a zone trial's spec
 * has 562 candidates and 8 to 64 members. */
static void keep_best(struct trial *tr, const struct look *lk, size_t r)
{
	struct policy_cand *c = tr->cands, x;
	size_t n = tr->ncands < r ? tr->ncands : r;

	for (size_t i = n / 2; i-- > 0;)
		sift_cands(tr, lk, c, n, i, true);
	for (size_t j = n; j < tr->ncands; j++)
		if (before(tr, lk, &c[j], &c[0])) {
			c[0] = c[j];
			sift_cands(tr, lk, c, n, 0, true);
		}
	for (size_t k = n; k-- > 1;) { /* the worst to the back, then all turned */
		x = c[0];
		c[0] = c[k];
		c[k] = x;
		sift_cands(tr, lk, c, k, 0, true);
	}
	for (size_t k = 0; k < n / 2; k++) {
		x = c[k];
		c[k] = c[n - 1 - k];
		c[n - 1 - k] = x;
	}
	tr->ncands = n;
	tr->ranked = true;
}

/* The nodes of cand[0..ncand) that take the member, into tr->cands: the
 * whole list for the first member of a spec; after that only the node
 * the last member went to changed, and only it is scored again. A spec's
 * first member scans the list for the best (a heap would cost twice
 * that for the many gangs of one member); its second makes the heap.
 * Where the order holds as members go onto nodes (ranks()), the first
 * keeps the best as many as the spec has members in a row, sorted, and
 * the others take them from the end. */
static void candidates(struct trial *tr, const struct look *lk, const uint32_t *cand, size_t ncand)
{
	struct policy_cand *c = tr->cands;

	if (tr->cspec != lk->s || tr->clist != cand) {
		uint32_t *ks = tr->t->scratch->takers;
		size_t nk = takers(tr, lk, cand, ncand, ks), r = run_of(tr, lk->s);

		tr->ncands = 0;
		for (size_t j = 0; j < nk; j++)
			tr->ncands += evaluate(tr, lk, cand[ks[j]], ks[j], &c[tr->ncands]);
		tr->cspec = lk->s;
		tr->clist = cand;
		tr->heaped = tr->ranked = false;
		if (r > 1 && tr->ncands > 1 && ranks(tr, lk))
			keep_best(tr, lk, r);
	} else if (tr->last < tr->ncands) {
		size_t j = tr->last;

		if (!may_take(tr, lk, c[j].node) || !evaluate(tr, lk, c[j].node, c[j].k, &c[j]))
			c[j] = c[--tr->ncands]; /* order is in k, not in place */
		/* Ranked, j was the best, last, and stays so while it takes one. */
		if (tr->heaped)
			cand_sift(tr, lk, j); /* j is the root: the last best */
		else if (!tr->ranked) {
			for (size_t i = tr->ncands / 2; i-- > 0;)
				cand_sift(tr, lk, i);
			tr->heaped = true;
		}
	}
	tr->last = SIZE_MAX;
}

/* The best node for member m among cand[0..ncand), or -1; the shares it
 * gets there are in tr->held[m]: the memo's record of the winner, else
 * computed for the winner alone. O(ncand) for a spec's first member,
 * O(nodes that take it) for the second, O(log of them) after that. */
static long best_node(struct trial *tr, size_t m, const uint32_t *cand, size_t ncand)
{
	const struct kubeapi_podspec *s = tr->specs[m];
	const struct look *lk = &tr->looks[m];
	struct policy_vgpu_share v[MAX_SHARES];
	size_t best = 0, nv = 0, pick;

	candidates(tr, lk, cand, ncand);
	if (tr->ncands == 0)
		return -1;
	if (tr->ranked)
		best = tr->ncands - 1;
	for (size_t j = 1; !tr->heaped && !tr->ranked && j < tr->ncands; j++)
		if (before(tr, lk, &tr->cands[j], &tr->cands[best]))
			best = j;
	tr->last = best; /* run() places the member there */
	pick = tr->cands[best].node;
	if (tr->t->gpu_first[pick + 1] == tr->t->gpu_first[pick])
		return (long)pick;
	if (policy__vgpu_shares(tr->t, s, pick, tr->cands[best].rec, v, &nv) < 0)
		return -1; /* only a memo collision can get here */
	if (tr->held[m])
		keep_shares(tr->held[m], tr->t, pick, v, nv, s->nvgpu);
	return (long)pick;
}

static void undo(struct trial *tr)
{
	while (tr->placed > 0) {
		size_t m = tr->order[--tr->placed];

		policy_nodes_use(tr->t, tr->out[m], tr->specs[m], tr->held[m], +1);
	}
}

/* Place every member onto candidates (NULL: each member's own feasible
 * list). True with all placed; false with tr->placed telling how far. */
static bool run(struct trial *tr, const uint32_t *cand, size_t ncand)
{
	tr->placed = 0;
	tr->cspec = NULL;
	while (tr->placed < tr->n) {
		size_t m = tr->order[tr->placed];
		long i = cand ? best_node(tr, m, cand, ncand)
		              : best_node(tr, m, tr->looks[m].f->nodes, tr->looks[m].f->count);

		if (i < 0)
			return false;
		policy_nodes_use(tr->t, (size_t)i, tr->specs[m], tr->held[m], -1);
		tr->out[m] = (uint32_t)i;
		tr->placed++;
	}
	return true;
}

/* Sort members by GPU request, largest first; insertion sort keeps equal
 * ones in member order (gangs are small next to the node count). */
static void order_members(uint32_t *order, const struct kubeapi_podspec *const *specs, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		int64_t g = policy_spec_gpus(specs[k]);
		size_t j = k;

		while (j > 0 && policy_spec_gpus(specs[order[j - 1]]) < g) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = (uint32_t)k;
	}
}

/* Whether node i lacks the GPUs a vGPU ask needing need takes: none
 * registered, no GPU with the room, or too few empty. (passes() makes the
 * same test from its gathered arrays.) */
static bool lacks_room(const struct policy_nodes *t, size_t i, struct policy__need need)
{
	return t->gpu_first[i + 1] == t->gpu_first[i] || t->gpu_room[i] < need.room ||
	       t->gpu_empty[i] < need.alone;
}

/* Whether member m's vGPUs (needing need) lack room on node i: the test
 * best_node() makes, so the message says what placement met (and the
 * memo mostly answers it, the member having just been tried on these
 * nodes). */
static bool vgpu_short(const struct trial *tr, size_t m, struct policy__need need, size_t i)
{
	const struct kubeapi_podspec *s = tr->specs[m];
	const struct policy__vrec *rec;
	double frag;

	if (!s->nvgpu)
		return false;
	if (lacks_room(tr->t, i, need))
		return true;
	return policy__vgpu_score(tr->t, tr->a, s, i, &frag, &rec) < 0;
}

/* The requests explain() counts, flat: the request's index in the spec,
 * its resource and amount, and how many nodes lack it (a spec holds at
 * most KUBEAPI_MAX_RESOURCES, 64). */
struct lacks {
	unsigned n;
	unsigned q[KUBEAPI_MAX_RESOURCES];
	unsigned res[KUBEAPI_MAX_RESOURCES];
	int64_t amount[KUBEAPI_MAX_RESOURCES];
	uint32_t count[KUBEAPI_MAX_RESOURCES];
};

/* The requests the free row fr lacks counted into l: whether it lacks
 * any. A compare and an add a request and no branch, the same work at
 * every node: a loop over the lacking requests' bits mispredicted
 * wherever their number changed from one node to the next. */
static inline bool count_lacking(struct lacks *l, const int64_t *fr)
{
	unsigned any = 0;

	for (unsigned j = 0; j < l->n; j++) {
		unsigned lacks = fr[l->res[j]] < l->amount[j];

		l->count[j] += lacks;
		any |= lacks;
	}
	return any;
}

/* count_lacking() over every feasible node, for at most this many
 * requests and no vGPU: see count_small(). */
#define SMALL_LACKS 4

/* The nodes of fit f that have room for l's requests (l has at most
 * SMALL_LACKS, and the spec no vGPU), each request's lacking nodes
 * counted into l: count_lacking()'s pass with the counts in registers
 * and the requests not asked for padded to ask for nothing (no row is
 * below INT64_MIN). count_lacking() kept the counts in l, a load and a
 * store a request a node: explain() ran 29% fewer instructions with this
 * pass (callgrind, two steady cycles at 20,000 nodes). */
static uint32_t count_small(struct lacks *l, const struct policy_nodes *t,
                            const struct policy_fit *f, bool everywhere)
{
	unsigned res[SMALL_LACKS];
	int64_t amount[SMALL_LACKS];
	uint32_t c0 = 0, c1 = 0, c2 = 0, c3 = 0, roomy = 0;

	for (unsigned j = 0; j < SMALL_LACKS; j++) {
		res[j] = j < l->n ? l->res[j] : KUBEAPI_RES_PODS;
		amount[j] = j < l->n ? l->amount[j] : INT64_MIN;
	}
	for (size_t k = 0; k < f->count; k++) {
		const int64_t *fr = &t->free[f->nodes[k] * t->nres];
		unsigned a = fr[res[0]] < amount[0], b = fr[res[1]] < amount[1];
		unsigned c = fr[res[2]] < amount[2], d = fr[res[3]] < amount[3];

		c0 += a;
		c1 += b;
		c2 += c;
		c3 += d;
		roomy += !(a | b | c | d | everywhere | (fr[KUBEAPI_RES_PODS] < 1));
	}
	l->count[0] = c0;
	l->count[1] = c1;
	l->count[2] = c2;
	l->count[3] = c3;
	return roomy;
}

/* The nodes of fit f that have room for member m, whatever its requests
 * and vGPUs: count_lacking() a node, then for a node with room for every
 * request, whether its vGPUs lack room (counted into *lack_vgpu). */
static uint32_t count_each(const struct trial *tr, size_t m, struct lacks *l,
                           const struct policy_fit *f, bool everywhere, uint32_t *lack_vgpu)
{
	const struct policy_nodes *t = tr->t;
	struct policy__need need = policy__vgpu_need(tr->specs[m]);
	uint32_t roomy = 0;

	for (size_t k = 0; k < f->count; k++) {
		const int64_t *fr = &t->free[f->nodes[k] * t->nres];
		bool short_here = count_lacking(l, fr) | everywhere | (fr[KUBEAPI_RES_PODS] < 1);

		if (!short_here && vgpu_short(tr, m, need, f->nodes[k])) {
			(*lack_vgpu)++;
			short_here = true;
		}
		roomy += !short_here;
	}
	return roomy;
}

/* Why the first unplaced member failed, for the message: in one pass
 * over its feasible nodes, how many lack room, and which of its requests
 * (or room on one GPU, for vGPUs: POLICY_SHORT_VGPU) is short on the most
 * of them. O(feasible nodes x requests), and x GPUs for vGPUs; a node
 * costs a compare and an add per request (count_small(), or
 * count_lacking() past four requests or with vGPUs), which matters: a
 * gang that does not fit reads every node. */
static void explain(struct trial *tr, struct policy_why *why)
{
	size_t m = tr->order[tr->placed < tr->n ? tr->placed : 0];
	const struct kubeapi_podspec *s = tr->specs[m];
	const struct kubeapi_res *r = kubeapi_podspec_requests(s);
	const struct policy_fit *f = tr->looks[m].f;
	const struct policy_nodes *t = tr->t;
	uint32_t lacking[KUBEAPI_MAX_RESOURCES + 1] = {0}, worst = 0, lack_vgpu = 0, roomy;
	unsigned nreq = s->nrequests < KUBEAPI_MAX_RESOURCES ? s->nrequests : KUBEAPI_MAX_RESOURCES;
	struct lacks l = {0};
	bool everywhere = false; /* a request no node has: short on every node */

	why->placed = tr->placed;
	why->fit = f;
	why->short_res = KUBEAPI_RES_PODS;
	for (unsigned q = 0; q < nreq; q++) {
		if (r[q].amount > 0 && r[q].res >= t->nres)
			lacking[q] = (uint32_t)f->count;
		else if (r[q].amount > 0) {
			l.res[l.n] = r[q].res;
			l.amount[l.n] = r[q].amount;
			l.q[l.n++] = q;
		}
		everywhere |= r[q].amount > 0 && r[q].res >= t->nres;
	}
	if (l.n <= SMALL_LACKS && !s->nvgpu)
		roomy = count_small(&l, t, f, everywhere);
	else
		roomy = count_each(tr, m, &l, f, everywhere, &lack_vgpu);
	for (unsigned j = 0; j < l.n; j++)
		lacking[l.q[j]] += l.count[j];
	why->short_nodes = f->count - roomy;
	for (unsigned q = 0; q < nreq; q++)
		if (lacking[q] > worst) {
			worst = lacking[q];
			why->short_res = r[q].res;
		}
	if (lack_vgpu > worst)
		why->short_res = POLICY_SHORT_VGPU;
}

/* What a gang asks of a domain: whole GPUs, cores (percent) of
 * registered GPUs, and registered GPUs alone (asks of 100 cores). */
struct ask {
	int64_t gpus, cores, alone;
};

static bool try_before(const struct policy_try *a, const struct policy_try *b)
{
	return a->left != b->left ? a->left < b->left : a->d < b->d;
}

/* Restore the min-heap h[0..n) below k. O(log n). */
static void sift(struct policy_try *h, size_t n, size_t k)
{
	for (;;) {
		size_t c = 2 * k + 1;
		struct policy_try x;

		if (c >= n)
			return;
		if (c + 1 < n && try_before(&h[c + 1], &h[c]))
			c++;
		if (!try_before(&h[c], &h[k]))
			return;
		x = h[k];
		h[k] = h[c];
		h[c] = x;
		k = c;
	}
}

/* Whether a domain of one node could hold the gang's total: a cheap
 * necessary test that skips the trial of a host the gang cannot fit,
 * exact for one node since what members use adds up. */
static bool node_holds_total(const struct trial *tr, uint32_t i)
{
	const int64_t *f;

	if (tr->t->free_cpu[i] < tr->total_cpu)
		return false; /* the most common miss, without reading the row */
	f = &tr->t->free[(size_t)i * tr->t->nres];
	if (f[KUBEAPI_RES_PODS] < (int64_t)tr->n)
		return false;
	for (unsigned k = 0; k < tr->ntotal; k++)
		if (tr->total[k].res >= tr->t->nres || f[tr->total[k].res] < tr->total[k].amount)
			return false;
	return true;
}

/* Whether some domain of level lv is big enough for the gang at all: its
 * well-known requests in all against what the biggest domain has. */
static bool level_holds(const struct trial *tr, const struct policy_level *lv)
{
	if ((int64_t)tr->n > lv->most[KUBEAPI_RES_PODS])
		return false;
	for (unsigned k = 0; k < tr->ntotal; k++)
		if (tr->total[k].res < KUBEAPI_RES_WELL_KNOWN &&
		    tr->total[k].amount > lv->most[tr->total[k].res])
			return false;
	return true;
}

/* Whether domain d of lv may hold the gang: enough GPUs and cores free,
 * and for a domain of one node, enough of everything. */
static bool offers(const struct trial *tr, const struct policy_level *lv, const struct ask *ask,
                   uint32_t d)
{
	if (lv->free_gpu[d] < ask->gpus || lv->free_core[d] < ask->cores ||
	    lv->empty_gpu[d] < ask->alone)
		return false;
	return lv->start[d + 1] - lv->start[d] != 1 ||
	       node_holds_total(tr, lv->members[lv->start[d]]);
}

/* The domains of level l that may hold the gang, into h as a min-heap
 * on (what is left, index); their count. What is left is counted in
 * percent of a GPU, so whole GPUs and shares weigh alike. O(domains). */
static size_t offered(const struct trial *tr, const struct policy_level *lv, const struct ask *ask,
                      struct policy_try *h)
{
	size_t n = 0;

	for (uint32_t d = 0; d < lv->ndomains; d++) {
		if (!offers(tr, lv, ask, d))
			continue;
		h[n++] = (struct policy_try){
		    100 * (lv->free_gpu[d] - ask->gpus) + lv->free_core[d] - ask->cores, d};
	}
	for (size_t k = n / 2; k-- > 0;)
		sift(h, n, k);
	return n;
}

/* How many members node i could take at most, counted as if each asked
 * the least (struct least) of CPU, memory and pods; none where the least
 * vGPU ask finds no room. Reads the node's row only if its CPU admits
 * one. */
static int64_t members_at_most(const struct trial *tr, uint32_t i)
{
	const struct policy_nodes *t = tr->t;
	const struct least *l = &tr->least;
	const int64_t *f;
	int64_t cap, m;

	if (l->vgpu_all && lacks_room(t, i, l->need))
		return 0;
	if (l->gpus > 0 && t->free_gpu[i] < l->gpus)
		return 0; /* as below, without reading the CPU (passes()) */
	cap = l->cpu > 0 ? t->free_cpu[i] / l->cpu : (int64_t)tr->n;
	if (l->gpus > 0 && t->free_gpu[i] / l->gpus < cap)
		cap = t->free_gpu[i] / l->gpus;
	if (cap <= 0)
		return 0;
	f = &t->free[(size_t)i * t->nres];
	m = l->mem > 0 ? f[KUBEAPI_RES_MEMORY] / l->mem : cap;
	cap = m < cap ? m : cap;
	cap = f[KUBEAPI_RES_PODS] < cap ? f[KUBEAPI_RES_PODS] : cap;
	return cap > 0 ? cap : 0; /* an over-committed node takes none, and gives none */
}

/* Whether the nodes cand[0..ncand) could hold every member, node by node:
 * a necessary test, so a domain it turns down would have failed its
 * trial. It is the trial a domain's totals (offers()) cannot save: with
 * shared GPUs a rack often has the cores and the CPU, but on different
 * nodes, and its trial placed a few members before it failed. At 5,000
 * nodes with 30% fractional gangs it turns down 26k of a cycle's 27k
 * rack trials, for a read of each rack's nodes (bench/README.md). */
static bool domain_may_hold(const struct trial *tr, const uint32_t *cand, size_t ncand)
{
	int64_t got = 0;

	if (tr->n == 1)
		return true; /* its trial is this test, as cheap */
	/* On a zone's list (struct gpu_list): the nodes not listed hold none. */
	if (tr->least.gpus > 0 && cand == tr->gcand) {
		unsigned l = list_for(tr->least.gpus);
		uint32_t *ks = tr->gl->ks[l] + tr->gstart, *nks = &tr->gl->n[l][tr->gd];

		for (size_t j = 0; j < *nks;) {
			size_t i = cand[ks[j]];

			if (!gpu_list_keeps(tr->gl, l, ks, nks, j, i, tr->t->free_gpu[i]))
				continue;
			if ((got += members_at_most(tr, i)) >= (int64_t)tr->n)
				return true;
			j++;
		}
		return false;
	}
	for (size_t k = 0; k < ncand; k++)
		if ((got += members_at_most(tr, cand[k])) >= (int64_t)tr->n)
			return true;
	return false;
}

/* Whether domain d of lv could hold every member by free whole GPUs
 * alone, each asking the least any asks (struct least): its takes for
 * the most 2^x at or below that (policy.h), one read. A necessary test
 * like domain_may_hold(), which reads every node of the domain where
 * this reads none: the test that turns down the racks a gang too big
 * for any rack meets, whose GPUs are free in sum but scattered. The
 * level's index makes it too, for its walk (tightest()). */
static bool gpus_may_hold(const struct trial *tr, const struct policy_level *lv, uint32_t d)
{
	int64_t g = tr->least.gpus;

	if (!lv->takes || g <= 0 || g == INT64_MAX)
		return true;
	return lv->takes[(size_t)d * POLICY_TAKES + list_for(g)] >= tr->n;
}

/* Domain d of lv, a zone-sized level, its lists of nodes (struct
 * gpu_list) in tr, and tr->gcand = cand, its node list; nothing for a
 * level that keeps no lists. */
static void gpu_list_of(struct trial *tr, const struct policy_level *lv, uint32_t d,
                        const uint32_t *cand)
{
	unsigned l = (unsigned)(lv - tr->t->level);
	struct gpu_list *g = &tr->t->scratch->gpus[l];

	if (!g->ks[0])
		return;
	if (g->stale)
		gpu_list_fill(tr->t, l);
	tr->gcand = cand;
	tr->gl = g;
	tr->gd = d;
	tr->gstart = lv->start[d];
}

/* The trial of domain d of lv: true when placed; false with the table
 * unchanged. */
static bool try_domain(struct trial *tr, const struct policy_level *lv, uint32_t d)
{
	const uint32_t *cand = lv->members + lv->start[d];
	size_t ncand = lv->start[d + 1] - lv->start[d];
	bool placed = false;

	if (!gpus_may_hold(tr, lv, d))
		return false;
	gpu_list_of(tr, lv, d, cand);
	if (domain_may_hold(tr, cand, ncand)) {
		placed = run(tr, cand, ncand);
		if (!placed)
			undo(tr);
	}
	tr->gcand = NULL;
	return placed;
}

/*
 * The gang placed into the tightest domain of level l that holds it: the
 * one left with the least, ties to the lower index. Domains are tried in
 * that order, so the first that holds the gang wins and its trial is
 * kept: no domain is tried that a tighter one beat, and the winner is not
 * placed twice. True when placed (and counted into the table); false with
 * the table unchanged.
 */
static bool scan_tightest(struct trial *tr, const struct policy_level *lv, const struct ask *ask)
{
	struct policy_try *h = tr->t->scratch->tries;
	size_t n = offered(tr, lv, ask, h);

	while (n > 0) {
		if (try_domain(tr, lv, h[0].d))
			return true;
		h[0] = h[--n];
		sift(h, n, 0);
	}
	return false;
}

/* The same search over the level's index: its walk is in (what is left,
 * index) order, the heap's, so the same domain wins, without reading the
 * domains that have too little free, nor most of those gpus_may_hold()
 * would turn down (the walk's `only` passes over no other). Trials undo
 * what they change, so the walk stays valid; should one drop the index
 * (out of memory), the scan takes over and finds the same answer. */
static bool tightest(struct trial *tr, unsigned l, const struct ask *ask)
{
	struct policy_level *lv = &tr->t->level[l];
	struct policy__dcursor c = {100 * ask->gpus + ask->cores, 0, NULL};
	int64_t g = tr->least.gpus;
	uint32_t d;

	if (!level_holds(tr, lv))
		return false;
	if (!lv->index_tried && policy__dindex_build(lv, tr->a) < 0)
		lv->index = NULL; /* scanned */
	if (lv->index && g > 0 && g != INT64_MAX)
		c.only = policy__dindex_only(lv->index, list_for(g), (uint32_t)tr->n);
	while (lv->index && policy__dindex_next(lv->index, &c, &d)) {
		if (offers(tr, lv, ask, d) && try_domain(tr, lv, d))
			return true;
	}
	return lv->index ? false : scan_tightest(tr, lv, ask);
}

/* Count spec s's requests into the gang's total. */
static void add_total(struct trial *tr, const struct kubeapi_podspec *s)
{
	const struct kubeapi_res *r = kubeapi_podspec_requests(s);

	for (unsigned q = 0; q < s->nrequests; q++) {
		unsigned k = 0;

		if (r[q].amount <= 0)
			continue;
		while (k < tr->ntotal && tr->total[k].res != r[q].res)
			k++;
		if (k == tr->ntotal) {
			if (k == KUBEAPI_MAX_RESOURCES)
				continue; /* a spec holds fewer: cannot happen */
			tr->total[tr->ntotal++] = (struct kubeapi_res){.res = r[q].res};
		}
		tr->total[k].amount += r[q].amount;
		if (r[q].res == KUBEAPI_RES_CPU)
			tr->total_cpu += r[q].amount;
	}
}

static void least_of(struct trial *tr)
{
	struct least *l = &tr->least;

	*l = (struct least){INT64_MAX, INT64_MAX, INT64_MAX, {UINT_MAX, UINT_MAX}, true};
	for (size_t k = 0; k < tr->n; k++) {
		const struct look *lk = &tr->looks[k];
		int64_t mem = policy_spec_request(lk->s, KUBEAPI_RES_MEMORY);

		l->gpus = lk->gpus < l->gpus ? lk->gpus : l->gpus;
		l->cpu = lk->cpu < l->cpu ? lk->cpu : l->cpu;
		l->mem = mem < l->mem ? mem : l->mem;
		l->need.room = lk->need.room < l->need.room ? lk->need.room : l->need.room;
		l->need.alone = lk->need.alone < l->need.alone ? lk->need.alone : l->need.alone;
		l->vgpu_all &= lk->s->nvgpu != 0;
	}
}

static int setup(struct trial *tr, struct policy_fitcache *fc, struct arena *a,
                 struct policy_why *why, struct ask *ask)
{
	uint32_t *order = arena_alloc(a, tr->n * sizeof(*order));

	tr->looks = arena_alloc(a, tr->n * sizeof(*tr->looks));
	tr->held = arena_calloc(a, tr->n, sizeof(*tr->held));
	tr->total = arena_alloc(a, KUBEAPI_MAX_RESOURCES * sizeof(*tr->total));
	if (!order || !tr->looks || !tr->held || !tr->total || !scratch_of(tr->t, a))
		return -ENOMEM;
	tr->cands = tr->t->scratch->cands;
	tr->ntotal = 0;
	tr->total_cpu = 0;
	*ask = (struct ask){0};
	for (size_t k = 0; k < tr->n; k++) {
		const struct kubeapi_vgpu_ask *v = kubeapi_podspec_vgpu(tr->specs[k]);
		struct look *lk = &tr->looks[k];

		for (uint16_t c = 0; c < tr->specs[k]->nvgpu; c++) {
			ask->cores += (int64_t)v[c].nums * v[c].cores;
			ask->alone += v[c].cores >= 100 ? v[c].nums : 0;
		}
		*lk = (struct look){tr->specs[k],
		                    policy_fit_get(fc, a, tr->t, tr->specs[k]),
		                    policy_spec_gpus(tr->specs[k]),
		                    policy_spec_request(tr->specs[k], KUBEAPI_RES_CPU),
		                    policy__vgpu_need(tr->specs[k]),
		                    tr->t->mix ? tr->t->mix->cpu_per_core : 0};
		if (!lk->f)
			return -ENOMEM;
		if (tr->specs[k]->nvgpu &&
		    !(tr->held[k] = arena_alloc(a, sizeof(struct policy_held) +
		                                       MAX_SHARES * sizeof(struct policy_share))))
			return -ENOMEM;
		add_total(tr, tr->specs[k]);
		ask->gpus += policy_spec_gpus(tr->specs[k]);
		if (lk->f->count == 0) {
			if (why)
				*why = (struct policy_why){.placed = 0, .fit = lk->f};
			return -ENOSPC; /* no node could ever take it */
		}
	}
	least_of(tr);
	order_members(order, tr->specs, tr->n);
	tr->order = order;
	return 0;
}

/* The members' shares, for the caller. */
static void give_held(const struct trial *tr, const struct policy_held **held)
{
	for (size_t k = 0; k < tr->n; k++)
		held[k] = tr->held[k];
}

/* Whether every node is in some domain of level l. A pod alone that no
 * domain of such a level takes is taken by no node: the coarser levels
 * and the whole cluster need no trial. */
static bool covers_all(const struct policy_nodes *t, unsigned l)
{
	return t->level[l].start[t->level[l].ndomains] == t->n;
}

/* The gang inside one domain of level w->level, or of domain w->domain
 * when it names one: true when placed. */
static bool within(struct trial *tr, const struct policy_within *w, const struct ask *ask)
{
	const struct policy_level *lv = &tr->t->level[w->level];

	if (w->domain == POLICY_NO_DOMAIN)
		return tightest(tr, (unsigned)w->level, ask);
	if (w->domain >= lv->ndomains)
		return false;
	return run(tr, lv->members + lv->start[w->domain],
	           lv->start[w->domain + 1] - lv->start[w->domain]);
}

int policy_place_within(struct policy_nodes *t, struct policy_fitcache *fc, struct arena *a,
                        const struct policy_within *w, const struct kubeapi_podspec *const *specs,
                        size_t n, uint32_t *out, const struct policy_held **held,
                        struct policy_why *why)
{
	struct trial tr = {.t = t, .specs = specs, .n = n, .out = out, .a = a};
	struct ask ask;
	int rc;

	if (why)
		memset(why, 0, sizeof(*why));
	if (n == 0)
		return 0;
	if ((rc = setup(&tr, fc, a, why, &ask)) < 0)
		return rc;
	if (w && w->level >= 0) {
		if (w->level < (int)t->nlevels && within(&tr, w, &ask)) {
			give_held(&tr, held);
			return 0;
		}
		if (why)
			explain(&tr, why);
		undo(&tr);
		return -ENOSPC;
	}
	for (unsigned l = t->nsearch; l-- > 0;) {
		if (tightest(&tr, l, &ask)) {
			give_held(&tr, held);
			return 0;
		}
		if (n == 1 && covers_all(t, l))
			break; /* one pod no domain holds fits on no node */
	}
	if ((n > 1 || !t->nsearch || !covers_all(t, 0)) && run(&tr, NULL, 0)) {
		give_held(&tr, held);
		return 0;
	}
	if (why)
		explain(&tr, why);
	undo(&tr);
	return -ENOSPC;
}

int policy_place(struct policy_nodes *t, struct policy_fitcache *fc, struct arena *a,
                 const struct kubeapi_podspec *const *specs, size_t n, uint32_t *out,
                 const struct policy_held **held, struct policy_why *why)
{
	return policy_place_within(t, fc, a, NULL, specs, n, out, held, why);
}
