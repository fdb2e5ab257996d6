/*
 * Gang placement (policy.h has the rule and the node score).
 *
 * A trial places the members one by one into the table itself and keeps
 * an undo list, so trying a domain costs no copy of the table: a failed or
 * exploratory trial is rolled back, the winning domain is placed again
 * for real. The greedy choice is deterministic, so the second run lands
 * exactly where the first did.
 */
#include "policy/table.h"

#include <errno.h>
#include <string.h>

#include "policy/frag.h"

/* Shares one member may get at most: what a pod's annotation holds. */
#define MAX_SHARES KUBEAPI_VGPU_MAX_SHARES

struct trial {
	struct policy_nodes *t;
	const struct kubeapi_podspec *const *specs;
	const struct policy_fit **fits;
	const uint32_t *order; /* members, largest GPU request first */
	size_t n;
	uint32_t *out;
	/* Per member that asks for vGPUs, room for its shares (from the
	 * arena once per call, not per trial); NULL for the others. */
	struct policy_held **held;
	struct arena *a; /* the call's: what the memo's records are kept in */
	size_t placed;   /* members placed so far, in order */
};

/* The node score of policy.h, as a tuple compared left to right. */
struct score {
	int cpu_on_gpu;
	double frag;
	int64_t gpu_left, cpu_left;
	int32_t pref;
};

static int score_cmp(const struct score *a, const struct score *b)
{
	if (a->cpu_on_gpu != b->cpu_on_gpu)
		return a->cpu_on_gpu < b->cpu_on_gpu ? -1 : 1;
	if (a->frag != b->frag)
		return a->frag < b->frag ? -1 : 1;
	if (a->gpu_left != b->gpu_left)
		return a->gpu_left < b->gpu_left ? -1 : 1;
	if (a->cpu_left != b->cpu_left)
		return a->cpu_left < b->cpu_left ? -1 : 1;
	if (a->pref != b->pref)
		return a->pref > b->pref ? -1 : 1;
	return 0;
}

static struct score score_of(const struct policy_nodes *t, size_t i,
                             const struct kubeapi_podspec *s, int64_t gpus)
{
	const int64_t *f = &t->free[i * t->nres];
	struct score sc = {
	    .cpu_on_gpu = gpus == 0 && t->gpu_node[i],
	    .gpu_left = f[KUBEAPI_RES_GPU] - gpus,
	    .cpu_left = f[KUBEAPI_RES_CPU] - policy_spec_request(s, KUBEAPI_RES_CPU),
	    .pref = s->npreferred ? policy_preferred_score(t, i, s) : 0,
	};
	return sc;
}

static bool feasible(const struct policy_fit *f, size_t i)
{
	return f->bits[i / 64] >> (i % 64) & 1;
}

/* Member m's shares on node i (which has registered GPUs) into
 * out[0..*n), and the rise of the node's fragmentation they cause.
 * Without a mix, Volcano's default order and a rise of 0. 0, -ENOSPC. */
static int shares_on(const struct trial *tr, size_t m, size_t i, struct policy_vgpu_share *out,
                     size_t *n, double *frag)
{
	const struct kubeapi_podspec *s = tr->specs[m];
	const struct kubeapi_vgpu_ask *ka = kubeapi_podspec_vgpu(s);
	struct policy_vgpu_ask asks[MAX_SHARES];
	struct policy_gpu scratch[KUBEAPI_VGPU_MAX_DEVICES];
	size_t ngpus, nasks = s->nvgpu;
	const struct policy_gpu *g = policy_nodes_gpus(tr->t, i, &ngpus);

	if (nasks > MAX_SHARES || ngpus > KUBEAPI_VGPU_MAX_DEVICES)
		return -ENOSPC;
	for (size_t k = 0; k < nasks; k++)
		asks[k] =
		    (struct policy_vgpu_ask){ka[k].nums, ka[k].mem, ka[k].mem_pct, ka[k].cores};
	*frag = 0;
	if (tr->t->mix) {
		const int64_t *f = &tr->t->free[i * tr->t->nres];
		struct policy_frag_node fn = {.cpu_m = f[KUBEAPI_RES_CPU],
		                              .mem = f[KUBEAPI_RES_MEMORY],
		                              .gpu = g,
		                              .ngpus = ngpus};
		struct policy_frag_ask fa = {.cpu_m = policy_spec_request(s, KUBEAPI_RES_CPU),
		                             .mem = policy_spec_request(s, KUBEAPI_RES_MEMORY),
		                             .asks = asks,
		                             .nasks = nasks};

		return policy_frag_best(tr->t->mix, &fn, &fa, out, MAX_SHARES, n, frag);
	}
	memcpy(scratch, g, ngpus * sizeof(*g)); /* policy_vgpu_place counts them in */
	return policy_vgpu_place(scratch, ngpus, asks, nasks, out, MAX_SHARES, n);
}

/* ---- the fragmentation memo ---------------------------------------- */

/* Entries kept at most; past it the memo starts afresh (16 bytes each). */
#define MEMO_MAX (1u << 18)

static uint64_t mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h ^= h >> 31;
	return h * 0xbf58476d1ce4e5b9ull;
}

static uint64_t dbits(double d)
{
	uint64_t b;

	d = d == 0 ? 0 : d; /* -0.0 is 0.0 */
	memcpy(&b, &d, sizeof(b));
	return b;
}

/* The kinds of the mix a node with cpu millicores and mem bytes free
 * could host: a bit each. */
static uint64_t kinds_admitted(const struct policy_mix *m, int64_t cpu, int64_t mem)
{
	uint64_t bits = 0;

	for (size_t k = 0; k < m->n; k++)
		bits |= (uint64_t)(m->kind[k].cpu_m <= cpu && m->kind[k].mem <= mem) << k;
	return bits;
}

/* The memo's key for spec s on node i as it is now: everything the score
 * reads (the spec, the mix and its counts, which kinds the node's CPU and
 * memory admit before and after s, each GPU's state), hashed to 64 bits.
 * Nodes in the same state share a key. A collision (about one in 2^64 per
 * pair) only misjudges a score; the shares are computed afresh for the
 * node chosen. O(GPUs of the node + kinds). */
static uint64_t memo_key(const struct policy_nodes *t, size_t i, const struct kubeapi_podspec *s)
{
	const int64_t *f = &t->free[i * t->nres];
	int64_t cpu = policy_spec_request(s, KUBEAPI_RES_CPU);
	int64_t mem = policy_spec_request(s, KUBEAPI_RES_MEMORY);
	size_t ng;
	const struct policy_gpu *g = policy_nodes_gpus(t, i, &ng);
	uint64_t h = mix64((uintptr_t)s, (uintptr_t)t->mix);

	h = mix64(h, dbits(t->mix->total));
	h = mix64(h, kinds_admitted(t->mix, f[KUBEAPI_RES_CPU], f[KUBEAPI_RES_MEMORY]));
	h = mix64(h, kinds_admitted(t->mix, f[KUBEAPI_RES_CPU] - cpu, f[KUBEAPI_RES_MEMORY] - mem));
	for (size_t k = 0; k < ng; k++) {
		h = mix64(h, g[k].used_num | (uint64_t)g[k].used_core << 16 |
		                 (uint64_t)g[k].used_mem << 32);
		h = mix64(h,
		          g[k].memory | (uint64_t)g[k].split << 32 | (uint64_t)g[k].healthy << 63);
	}
	return h | 1;
}

/* What the memo keeps of one score: its shares (GPU indexes within the
 * node) and the score, or rc -ENOSPC when the node takes none. Kept in
 * the arena of the policy_place() call that computed it. */
struct memo_rec {
	double frag;
	int rc;
	uint32_t n;
	struct policy_vgpu_share s[];
};

/* Member m on node i from the memo, or computed and kept; NULL only when
 * out of memory (*err -ENOMEM) or on another error of the score. */
static const struct memo_rec *memo_get(const struct trial *tr, size_t m, size_t i, int *err)
{
	struct idmap *memo = tr->t->frag_memo;
	uint64_t key = memo_key(tr->t, i, tr->specs[m]);
	struct policy_vgpu_share out[MAX_SHARES];
	struct memo_rec *rec = idmap_get(memo, key);
	size_t n = 0;
	double frag = 0;
	int rc;

	if (rec)
		return rec;
	rc = shares_on(tr, m, i, out, &n, &frag);
	if (rc < 0 && rc != -ENOSPC) {
		*err = rc;
		return NULL;
	}
	if (!(rec = arena_alloc(tr->a, sizeof(*rec) + n * sizeof(out[0])))) {
		*err = -ENOMEM;
		return NULL;
	}
	*rec = (struct memo_rec){frag, rc, (uint32_t)n};
	memcpy(rec->s, out, n * sizeof(out[0]));
	if (memo->n >= MEMO_MAX)
		idmap_free(memo);  /* the records stay in the arena, unreferenced */
	idmap_put(memo, key, rec); /* out of memory: not kept, still answered */
	return rec;
}

/* The per-node memo in front of the hashed one: NODE_WAYS entries a
 * node, replaced in turn, each checked by the plain state it was scored
 * in. A hit costs a few compares where the hashed memo's key reads every
 * GPU. 48 bytes an entry: 5,000 nodes take under 1 MB of arena. */
#define NODE_WAYS 4
struct policy_node_memo {
	const struct kubeapi_podspec *spec;
	const struct policy_mix *mix;
	double total;
	int64_t cpu, mem;
	uint32_t ver;
	const struct memo_rec *rec;
};

static const struct memo_rec *node_memo_get(const struct trial *tr, size_t m, size_t i, int *err)
{
	struct policy_nodes *t = tr->t;
	const int64_t *f = &t->free[i * t->nres];
	struct policy_node_memo *e,
	    key = {tr->specs[m],          t->mix,        t->mix->total, f[KUBEAPI_RES_CPU],
	           f[KUBEAPI_RES_MEMORY], t->gpu_ver[i], NULL};

	if (!t->node_memo &&
	    !(t->node_memo = arena_calloc(tr->a, t->n * NODE_WAYS + 1, sizeof(*t->node_memo))))
		return memo_get(tr, m, i, err);
	e = &t->node_memo[i * NODE_WAYS];
	for (int w = 0; w < NODE_WAYS; w++)
		if (e[w].rec && e[w].spec == key.spec && e[w].mix == key.mix &&
		    e[w].total == key.total && e[w].cpu == key.cpu && e[w].mem == key.mem &&
		    e[w].ver == key.ver)
			return e[w].rec;
	if (!(key.rec = memo_get(tr, m, i, err)))
		return NULL;
	memmove(&e[1], &e[0], (NODE_WAYS - 1) * sizeof(*e)); /* the oldest goes */
	e[0] = key;
	return key.rec;
}

/* Do rec's shares still fit node i's GPUs? Only a key collision could
 * make them not; checked before they are used. */
static bool rec_fits(const struct trial *tr, size_t m, size_t i, const struct memo_rec *rec)
{
	const struct kubeapi_vgpu_ask *ka = kubeapi_podspec_vgpu(tr->specs[m]);
	size_t ng;
	const struct policy_gpu *g = policy_nodes_gpus(tr->t, i, &ng);

	for (uint32_t k = 0; k < rec->n; k++) {
		const struct kubeapi_vgpu_ask *a = &ka[rec->s[k].container];
		struct policy_vgpu_ask ask = {a->nums, a->mem, a->mem_pct, a->cores};

		if (rec->s[k].gpu >= ng || !policy_vgpu_fits(&g[rec->s[k].gpu], &ask))
			return false;
	}
	return true;
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

/* Member m's score on node i with registered GPUs: through the memo
 * when there is a mix to score against (*rec its record), else computed
 * (*rec NULL). 0, -ENOSPC, or another error. */
static int gpu_score(const struct trial *tr, size_t m, size_t i, double *frag,
                     const struct memo_rec **rec)
{
	struct policy_vgpu_share v[MAX_SHARES];
	size_t nv;
	int err = 0;

	*rec = NULL;
	if (!tr->t->mix || !tr->t->frag_memo)
		return shares_on(tr, m, i, v, &nv, frag);
	if (!(*rec = node_memo_get(tr, m, i, &err)))
		return err;
	*frag = (*rec)->frag;
	return (*rec)->rc;
}

/* What a member's vGPUs need of one node at least: a GPU with room
 * cores free (1 for asks of no cores: a GPU whose cores are all used
 * takes none), and alone GPUs with no share (asks of all the cores). */
struct need {
	unsigned room, alone;
};

static struct need need_of(const struct kubeapi_podspec *s)
{
	const struct kubeapi_vgpu_ask *a = kubeapi_podspec_vgpu(s);
	struct need n = {0, 0};

	for (uint16_t c = 0; c < s->nvgpu; c++) {
		if (a[c].cores >= 100)
			n.alone += a[c].nums;
		else if ((a[c].cores ? a[c].cores : 1) > n.room)
			n.room = a[c].cores ? a[c].cores : 1;
	}
	return n;
}

/* The best node for member m among cand[0..ncand), or -1; the shares it
 * gets there are in tr->held[m]: the memo's record of the winner, else
 * computed for the winner alone. */
static long best_node(const struct trial *tr, size_t m, const uint32_t *cand, size_t ncand)
{
	const struct kubeapi_podspec *s = tr->specs[m];
	const struct policy_fit *f = tr->fits[m];
	int64_t gpus = policy_spec_gpus(s);
	struct policy_vgpu_share v[MAX_SHARES];
	const struct memo_rec *rec, *best_rec = NULL;
	struct score best = {0}, sc;
	long pick = -1;
	size_t nv = 0;
	double frag;
	struct need need = need_of(s);

	for (size_t k = 0; k < ncand; k++) {
		size_t i = cand[k], ng = tr->t->gpu_first[i + 1] - tr->t->gpu_first[i];

		frag = 0;
		if (!feasible(f, i) || (s->nvgpu && (!ng || tr->t->gpu_room[i] < need.room ||
		                                     tr->t->gpu_empty[i] < need.alone)))
			continue;
		if (!policy_fits_free(tr->t, i, s))
			continue;
		rec = NULL;
		if (ng && gpu_score(tr, m, i, &frag, &rec) < 0)
			continue;
		sc = score_of(tr->t, i, s, gpus);
		sc.frag = frag;
		if (pick < 0 || score_cmp(&sc, &best) < 0) {
			best = sc;
			best_rec = rec;
			pick = (long)i;
		}
	}
	if (pick < 0 || tr->t->gpu_first[pick + 1] == tr->t->gpu_first[pick])
		return pick;
	if (best_rec && rec_fits(tr, m, (size_t)pick, best_rec)) {
		nv = best_rec->n;
		memcpy(v, best_rec->s, nv * sizeof(v[0]));
	} else if (shares_on(tr, m, (size_t)pick, v, &nv, &frag) < 0) {
		return -1;
	}
	if (tr->held[m])
		keep_shares(tr->held[m], tr->t, (size_t)pick, v, nv, s->nvgpu);
	return pick;
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
	while (tr->placed < tr->n) {
		size_t m = tr->order[tr->placed];
		long i = cand ? best_node(tr, m, cand, ncand)
		              : best_node(tr, m, tr->fits[m]->nodes, tr->fits[m]->count);

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

/* Whether member m's vGPUs lack room on node i (no GPUs, or none that
 * take its shares). */
static bool vgpu_short(const struct trial *tr, size_t m, size_t i)
{
	struct policy_vgpu_share v[MAX_SHARES];
	size_t nv;
	double frag;

	if (!tr->specs[m]->nvgpu)
		return false;
	return tr->t->gpu_first[i + 1] == tr->t->gpu_first[i] ||
	       shares_on(tr, m, i, v, &nv, &frag) < 0;
}

/* Why the first unplaced member failed, for the message: in one pass
 * over its feasible nodes, how many lack room, and which of its requests
 * (or room on one GPU, for vGPUs: POLICY_SHORT_VGPU) is short on the most
 * of them. O(feasible nodes x requests), and x GPUs for vGPUs. */
static void explain(struct trial *tr, struct policy_why *why)
{
	size_t m = tr->order[tr->placed < tr->n ? tr->placed : 0];
	const struct kubeapi_podspec *s = tr->specs[m];
	const struct kubeapi_res *r = kubeapi_podspec_requests(s);
	const struct policy_fit *f = tr->fits[m];
	const struct policy_nodes *t = tr->t;
	uint32_t lacking[KUBEAPI_MAX_RESOURCES + 1] = {0}, worst = 0, lack_vgpu = 0;
	unsigned nreq = s->nrequests < KUBEAPI_MAX_RESOURCES ? s->nrequests : KUBEAPI_MAX_RESOURCES;

	why->placed = tr->placed;
	why->fit = f;
	why->short_nodes = 0;
	why->short_res = KUBEAPI_RES_PODS;
	for (size_t k = 0; k < f->count; k++) {
		const int64_t *fr = &t->free[f->nodes[k] * t->nres];
		bool short_here = fr[KUBEAPI_RES_PODS] < 1;

		for (unsigned q = 0; q < nreq; q++) {
			bool lack =
			    r[q].amount > 0 && (r[q].res >= t->nres || fr[r[q].res] < r[q].amount);

			lacking[q] += lack;
			short_here |= lack;
		}
		if (!short_here && vgpu_short(tr, m, f->nodes[k])) {
			lack_vgpu++;
			short_here = true;
		}
		why->short_nodes += short_here;
	}
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

/* The tightest domain of level l that holds the gang, or -1. What is left
 * is counted in percent of a GPU, so whole GPUs and shares weigh alike. */
static long tightest(struct trial *tr, unsigned l, const struct ask *ask)
{
	const struct policy_level *lv = &tr->t->level[l];
	int64_t best_left = 0;
	long best = -1;

	for (uint32_t d = 0; d < lv->ndomains; d++) {
		int64_t left = 100 * (lv->free_gpu[d] - ask->gpus) + lv->free_core[d] - ask->cores;
		bool ok;

		if (lv->free_gpu[d] < ask->gpus || lv->free_core[d] < ask->cores ||
		    lv->empty_gpu[d] < ask->alone || (best >= 0 && left >= best_left))
			continue;
		ok = run(tr, lv->members + lv->start[d], lv->start[d + 1] - lv->start[d]);
		undo(tr);
		if (ok) {
			best = d;
			best_left = left;
			if (left == 0)
				break; /* nothing is tighter than exact */
		}
	}
	return best;
}

static int setup(struct trial *tr, struct policy_fitcache *fc, struct arena *a,
                 struct policy_why *why, struct ask *ask)
{
	uint32_t *order = arena_alloc(a, tr->n * sizeof(*order));

	tr->fits = arena_alloc(a, tr->n * sizeof(*tr->fits));
	tr->held = arena_calloc(a, tr->n, sizeof(*tr->held));
	if (!order || !tr->fits || !tr->held)
		return -ENOMEM;
	*ask = (struct ask){0};
	for (size_t k = 0; k < tr->n; k++) {
		const struct kubeapi_vgpu_ask *v = kubeapi_podspec_vgpu(tr->specs[k]);

		for (uint16_t c = 0; c < tr->specs[k]->nvgpu; c++) {
			ask->cores += (int64_t)v[c].nums * v[c].cores;
			ask->alone += v[c].cores >= 100 ? v[c].nums : 0;
		}
		if (!(tr->fits[k] = policy_fit_get(fc, a, tr->t, tr->specs[k])))
			return -ENOMEM;
		if (tr->specs[k]->nvgpu &&
		    !(tr->held[k] = arena_alloc(a, sizeof(struct policy_held) +
		                                       MAX_SHARES * sizeof(struct policy_share))))
			return -ENOMEM;
		ask->gpus += policy_spec_gpus(tr->specs[k]);
		if (tr->fits[k]->count == 0) {
			*why = (struct policy_why){.placed = 0, .fit = tr->fits[k]};
			return -ENOSPC; /* no node could ever take it */
		}
	}
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

int policy_place(struct policy_nodes *t, struct policy_fitcache *fc, struct arena *a,
                 const struct kubeapi_podspec *const *specs, size_t n, uint32_t *out,
                 const struct policy_held **held, struct policy_why *why)
{
	struct trial tr = {.t = t, .specs = specs, .n = n, .out = out, .a = a};
	struct ask ask;
	int rc;

	memset(why, 0, sizeof(*why));
	if (n == 0)
		return 0;
	if ((rc = setup(&tr, fc, a, why, &ask)) < 0)
		return rc;
	for (unsigned l = t->nlevels; l-- > 0;) {
		long d = tightest(&tr, l, &ask);

		if (d >= 0) {
			const struct policy_level *lv = &t->level[l];

			run(&tr, lv->members + lv->start[d], lv->start[d + 1] - lv->start[d]);
			give_held(&tr, held);
			return 0;
		}
	}
	if (run(&tr, NULL, 0)) {
		give_held(&tr, held);
		return 0;
	}
	explain(&tr, why);
	undo(&tr);
	return -ENOSPC;
}
