/*
 * A spec's vGPU shares on one node with registered GPUs (table.h): the
 * shares and the rise in fragmentation they cause (frag.h), remembered in
 * two memos so that a node is scored again only when it changed.
 *
 * The hashed memo (t->frag_memo) is keyed by everything the score reads:
 * the spec, the mix, the node's GPU model, its free CPU and memory (which
 * kinds it hosts and how much GPU their pods could use, frag.h's room_k) and each
 * GPU's state; nodes in the same state share an entry. The amounts
 * themselves, not only which kinds they admit: fewer nodes share an
 * entry (on bench-plan's 5,000 nodes, 11% more scorings, 2-3% of the
 * vGPU cycle). In front of it, each node keeps its last few answers
 * (t->node_memo), checked by a hash of its GPUs' state (t->gpu_ver) and
 * its free CPU and memory: a hit is a few compares. Records live in the
 * arena of the policy_place() call that computed them, which must live
 * as long as the table (the cycle's arena does).
 *
 * Cost: a miss is one policy_frag_best(), O(kinds x GPUs); a hit in the
 * node memo O(ways), in the hashed one O(GPUs).
 */
#include "policy/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/frag.h"

/* Shares one member may get at most: what a pod's annotation holds. */
#define MAX_SHARES KUBEAPI_VGPU_MAX_SHARES

/* Spec s's shares on node i (which has registered GPUs) into out[0..*n),
 * and the rise of the node's fragmentation they cause. Without a mix,
 * Volcano's default order and a rise of 0. 0, -ENOSPC. */
static int shares_on(const struct policy_nodes *t, const struct kubeapi_podspec *s, size_t i,
                     struct policy_vgpu_share *out, size_t *n, double *frag)
{
	const struct kubeapi_vgpu_ask *asks = kubeapi_podspec_vgpu(s);
	struct policy_gpu scratch[KUBEAPI_VGPU_MAX_DEVICES];
	size_t ngpus, nasks = s->nvgpu;
	const struct policy_gpu *g = policy_nodes_gpus(t, i, &ngpus);

	if (nasks > MAX_SHARES || ngpus > KUBEAPI_VGPU_MAX_DEVICES)
		return -ENOSPC;
	*frag = 0;
	if (t->mix) {
		const int64_t *f = &t->free[i * t->nres];
		struct policy_frag_node fn = {.cpu_m = f[KUBEAPI_RES_CPU],
		                              .mem = f[KUBEAPI_RES_MEMORY],
		                              .gpu = g,
		                              .ngpus = ngpus,
		                              .model = t->gpu_model[i]};
		struct policy_frag_ask fa = {.cpu_m = policy_spec_request(s, KUBEAPI_RES_CPU),
		                             .mem = policy_spec_request(s, KUBEAPI_RES_MEMORY),
		                             .asks = asks,
		                             .nasks = nasks};

		return policy_frag_best(t->mix, &fn, &fa, out, MAX_SHARES, n, frag);
	}
	memcpy(scratch, g, ngpus * sizeof(*g)); /* policy_vgpu_place counts them in */
	return policy_vgpu_place(scratch, ngpus, asks, nasks, out, MAX_SHARES, n);
}

/* ---- the fragmentation memo ---------------------------------------- */

/* Entries kept at most; past it the memo starts afresh (16 bytes each). */
#define MEMO_MAX (1u << 18)

static uint64_t dbits(double d)
{
	uint64_t b;

	d = d == 0 ? 0 : d; /* -0.0 is 0.0 */
	memcpy(&b, &d, sizeof(b));
	return b;
}

/* The memo's key for spec s on node i as it is now: everything the score
 * reads (the spec, the mix and its counts, the node's GPU model, free CPU
 * and memory, each GPU's state), hashed to 64 bits. Nodes in the same state share a
 * key. A collision (about one in 2^64 per pair) only misjudges a score;
 * the shares are computed afresh for the node chosen. O(GPUs of the
 * node). */
static uint64_t memo_key(const struct policy_nodes *t, size_t i, const struct kubeapi_podspec *s)
{
	const int64_t *f = &t->free[i * t->nres];
	size_t ng;
	const struct policy_gpu *g = policy_nodes_gpus(t, i, &ng);
	uint64_t h = policy__mix64((uintptr_t)s, (uintptr_t)t->mix);

	h = policy__mix64(h, dbits(t->mix->total));
	h = policy__mix64(h, (uint64_t)f[KUBEAPI_RES_CPU]);
	h = policy__mix64(h, (uint64_t)f[KUBEAPI_RES_MEMORY]);
	h = policy__mix64(h, t->gpu_model[i]);
	for (size_t k = 0; k < ng; k++) {
		h = policy__mix64(h, g[k].used_num | (uint64_t)g[k].used_core << 16 |
		                         (uint64_t)g[k].used_mem << 32);
		h = policy__mix64(h, g[k].memory | (uint64_t)g[k].split << 32 |
		                         (uint64_t)g[k].healthy << 63);
	}
	return h | 1;
}

/* Spec s on node i from the memo, or computed and kept in arena a; NULL
 * only when out of memory (*err -ENOMEM) or on another error. */
static const struct policy__vrec *memo_get(struct policy_nodes *t, struct arena *a,
                                           const struct kubeapi_podspec *s, size_t i, int *err)
{
	struct idmap *memo = t->frag_memo;
	uint64_t key = memo_key(t, i, s);
	struct policy_vgpu_share out[MAX_SHARES];
	struct policy__vrec *rec = idmap_get(memo, key);
	size_t n = 0;
	double frag = 0;
	int rc;

	if (rec)
		return rec;
	rc = shares_on(t, s, i, out, &n, &frag);
	if (rc < 0 && rc != -ENOSPC) {
		*err = rc;
		return NULL;
	}
	if (!(rec = arena_alloc(a, sizeof(*rec) + n * sizeof(out[0])))) {
		*err = -ENOMEM;
		return NULL;
	}
	*rec = (struct policy__vrec){frag, rc, (uint32_t)n};
	memcpy(rec->s, out, n * sizeof(out[0]));
	if (memo->n >= MEMO_MAX)
		idmap_free(memo);  /* the records stay in the arena, unreferenced */
	idmap_put(memo, key, rec); /* out of memory: not kept, still answered */
	return rec;
}

/* The per-node memo in front of the hashed one: NODE_WAYS entries a
 * node, replaced in turn, each checked by the plain state it was scored
 * in. A hit costs a few compares where the hashed memo's key reads every
 * GPU. 56 bytes an entry: 5,000 nodes take about 1.1 MB of arena. */
#define NODE_WAYS 4
struct policy_node_memo {
	const struct kubeapi_podspec *spec;
	const struct policy_mix *mix;
	double total;
	int64_t cpu, mem;
	uint64_t ver;
	const struct policy__vrec *rec;
};

static const struct policy__vrec *node_memo_get(struct policy_nodes *t, struct arena *a,
                                                const struct kubeapi_podspec *s, size_t i, int *err)
{
	const int64_t *f = &t->free[i * t->nres];
	struct policy_node_memo *e, key = {s,
	                                   t->mix,
	                                   t->mix->total,
	                                   f[KUBEAPI_RES_CPU],
	                                   f[KUBEAPI_RES_MEMORY],
	                                   t->gpu_ver[i],
	                                   NULL};

	if (!t->node_memo &&
	    !(t->node_memo = arena_calloc(a, t->n * NODE_WAYS + 1, sizeof(*t->node_memo))))
		return memo_get(t, a, s, i, err);
	e = &t->node_memo[i * NODE_WAYS];
	for (int w = 0; w < NODE_WAYS; w++)
		if (e[w].rec && e[w].spec == key.spec && e[w].mix == key.mix &&
		    e[w].total == key.total && e[w].cpu == key.cpu && e[w].mem == key.mem &&
		    e[w].ver == key.ver)
			return e[w].rec;
	if (!(key.rec = memo_get(t, a, s, i, err)))
		return NULL;
	memmove(&e[1], &e[0], (NODE_WAYS - 1) * sizeof(*e)); /* the oldest goes */
	e[0] = key;
	return key.rec;
}

/* Do rec's shares still fit node i's GPUs? Only a key collision could
 * make them not; checked before they are used. */
static bool rec_fits(const struct policy_nodes *t, const struct kubeapi_podspec *s, size_t i,
                     const struct policy__vrec *rec)
{
	const struct kubeapi_vgpu_ask *ka = kubeapi_podspec_vgpu(s);
	size_t ng;
	const struct policy_gpu *g = policy_nodes_gpus(t, i, &ng);

	for (uint32_t k = 0; k < rec->n; k++)
		if (rec->s[k].gpu >= ng ||
		    !policy_vgpu_fits(&g[rec->s[k].gpu], &ka[rec->s[k].container]))
			return false;
	return true;
}

int policy__vgpu_score(struct policy_nodes *t, struct arena *a, const struct kubeapi_podspec *s,
                       size_t i, double *frag, const struct policy__vrec **rec)
{
	struct policy_vgpu_share v[MAX_SHARES];
	size_t nv;
	int err = 0;

	*rec = NULL;
	if (!t->mix || !t->frag_memo)
		return shares_on(t, s, i, v, &nv, frag);
	if (!(*rec = node_memo_get(t, a, s, i, &err)))
		return err;
	*frag = (*rec)->frag;
	return (*rec)->rc;
}

int policy__vgpu_shares(const struct policy_nodes *t, const struct kubeapi_podspec *s, size_t i,
                        const struct policy__vrec *rec, struct policy_vgpu_share *out, size_t *n)
{
	double frag;

	if (rec && rec->rc == 0 && rec_fits(t, s, i, rec)) {
		*n = rec->n;
		memcpy(out, rec->s, rec->n * sizeof(out[0]));
		return 0;
	}
	return shares_on(t, s, i, out, n, &frag);
}

struct policy__need policy__vgpu_need(const struct kubeapi_podspec *s)
{
	const struct kubeapi_vgpu_ask *a = kubeapi_podspec_vgpu(s);
	struct policy__need n = {0, 0};

	for (uint16_t c = 0; c < s->nvgpu; c++) {
		if (a[c].cores >= 100)
			n.alone += a[c].nums;
		else if ((a[c].cores ? a[c].cores : 1) > n.room)
			n.room = a[c].cores ? a[c].cores : 1;
	}
	return n;
}

double policy__vgpu_balance(const struct policy_nodes *t, const struct kubeapi_podspec *s, size_t i,
                            double cpu_per_core)
{
	size_t ngpus, nasks = s->nvgpu < MAX_SHARES ? s->nvgpu : MAX_SHARES;
	const struct policy_gpu *g = policy_nodes_gpus(t, i, &ngpus);
	int64_t cpu = policy_spec_request(s, KUBEAPI_RES_CPU);
	struct policy_frag_node fn = {.gpu = g, .ngpus = ngpus};
	struct policy_frag_ask fa = {.cpu_m = cpu, .asks = kubeapi_podspec_vgpu(s), .nasks = nasks};

	return policy_frag_balance(&fn, &fa, cpu_per_core,
	                           t->free[i * t->nres + KUBEAPI_RES_CPU] - cpu);
}
