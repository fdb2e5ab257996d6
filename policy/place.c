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
	int64_t gpu_left;
	double cpu_left; /* on registered GPUs with a mix: how far from balance */
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
	    .cpu_left = (double)(f[KUBEAPI_RES_CPU] - policy_spec_request(s, KUBEAPI_RES_CPU)),
	    .pref = s->npreferred ? policy_preferred_score(t, i, s) : 0,
	};
	return sc;
}

static bool feasible(const struct policy_fit *f, size_t i)
{
	return f->bits[i / 64] >> (i % 64) & 1;
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

/* The best node for member m among cand[0..ncand), or -1; the shares it
 * gets there are in tr->held[m]: the memo's record of the winner, else
 * computed for the winner alone. */
static long best_node(const struct trial *tr, size_t m, const uint32_t *cand, size_t ncand)
{
	const struct kubeapi_podspec *s = tr->specs[m];
	const struct policy_fit *f = tr->fits[m];
	int64_t gpus = policy_spec_gpus(s);
	struct policy_vgpu_share v[MAX_SHARES];
	const struct policy__vrec *rec, *best_rec = NULL;
	struct score best = {0}, sc;
	long pick = -1;
	size_t nv = 0;
	double frag;
	struct policy__need need = policy__vgpu_need(s);
	double cpu_per_core = tr->t->mix ? policy_frag_cpu_per_core(tr->t->mix) : 0;

	for (size_t k = 0; k < ncand; k++) {
		size_t i = cand[k], ng = tr->t->gpu_first[i + 1] - tr->t->gpu_first[i];

		frag = 0;
		if (!feasible(f, i) || (s->nvgpu && (!ng || tr->t->gpu_room[i] < need.room ||
		                                     tr->t->gpu_empty[i] < need.alone)))
			continue;
		if (!policy_fits_free(tr->t, i, s))
			continue;
		rec = NULL;
		if (ng && policy__vgpu_score(tr->t, tr->a, s, i, &frag, &rec) < 0)
			continue;
		sc = score_of(tr->t, i, s, gpus);
		sc.frag = frag;
		if (ng && tr->t->mix)
			sc.cpu_left = policy__vgpu_balance(tr->t, s, i, cpu_per_core);
		if (pick < 0 || score_cmp(&sc, &best) < 0) {
			best = sc;
			best_rec = rec;
			pick = (long)i;
		}
	}
	if (pick < 0 || tr->t->gpu_first[pick + 1] == tr->t->gpu_first[pick])
		return pick;
	if (policy__vgpu_shares(tr->t, s, (size_t)pick, best_rec, v, &nv) < 0)
		return -1; /* only a memo collision can get here */
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

	if (!tr->specs[m]->nvgpu)
		return false;
	return tr->t->gpu_first[i + 1] == tr->t->gpu_first[i] ||
	       policy__vgpu_shares(tr->t, tr->specs[m], i, NULL, v, &nv) < 0;
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
