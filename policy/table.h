/*
 * Shared by the node table's files (nodes.c, devices.c, place.c,
 * vshares.c) and no one else: the GPU devices' part of building and
 * counting the table, and a spec's vGPUs on one node.
 */
#ifndef MUSTER_POLICY_TABLE_H
#define MUSTER_POLICY_TABLE_H

#include "policy/policy.h"

/** One step of a 64-bit hash: v mixed into h (a hash_combine step, then
 *  splitmix64's multiply). For the memos' keys of GPU states. */
static inline uint64_t policy__mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h ^= h >> 31;
	return h * 0xbf58476d1ce4e5b9ull;
}

/** Lay out every node's registered GPUs (t->gpu, t->gpu_first) and mark
 *  their nodes as GPU nodes. 0 or -ENOMEM. O(nodes + GPUs). */
int policy__nodes_devices(struct policy_nodes *t, struct arena *a);

/** The bit of node n's GPU model among t's (policy_nodes.gpu_model): 0
 *  without the label, POLICY_MODELS' bit for a value t did not number.
 *  O(models). */
uint64_t policy__node_model(const struct policy_nodes *t, const struct kubeapi_node *n);

/** Node i's gpu_room, gpu_empty and gpu_ver from its GPUs as they are.
 *  O(GPUs). */
void policy__node_room(struct policy_nodes *t, size_t i);

/** Shares h onto their GPUs (sign -1: taken) or off them (+1); *cores is
 *  what they hold of healthy GPUs' cores, *empty how many healthy GPUs
 *  they leave holding no share (negative) or free again, for the
 *  domains' totals. */
void policy__held_use(struct policy_nodes *t, const struct policy_held *h, int sign, int64_t *cores,
                      int64_t *empty);

/* ---- the zones' nodes by free GPUs (place.c) --------------------------- */

/** Node i's free GPUs rose from was (or may have: was 0): put it in its
 *  zones' lists for what it has now. O(levels x lists). */
void policy__gpu_rose(struct policy_nodes *t, size_t i, int64_t was);
/** Many nodes' free GPUs were set at once: list the zones again on
 *  their next trial. O(1). */
void policy__gpu_lists_stale(struct policy_nodes *t);

/* ---- a level's domains by what they have free (dindex.c) --------------- */

/** Give level lv its index (lv->index, NULL when it has too few domains
 *  or too large keys to be worth one) from its counts as they are. 0 or
 *  -ENOMEM. O(domains). */
int policy__dindex_build(struct policy_level *lv, struct arena *a);

/** Domain d's counts changed: move it in lv->index (which must be set).
 *  Out of memory, the index is dropped (lv->index = NULL). O(1). */
void policy__dindex_update(struct policy_level *lv, uint32_t d);

/* A walk of an index in (key, domain) order, from key `key` (start it at
 * the least key wanted, domain 0), over the domains in `only` (a bitmap
 * from policy__dindex_only()) or, NULL, all. A walk stays valid across
 * changes that are undone before its next step. */
struct policy__dcursor {
	int64_t key;
	uint32_t d;
	const uint64_t *only;
};

/** The domains of index x that may take n members asking 2^takes GPUs
 *  or more by their free GPUs (policy.h's takes): a bitmap for a walk's
 *  `only`, which lets through every domain whose takes reach n and few
 *  others (their tier is n's, dindex.c). NULL when the level keeps no
 *  takes. O(1); valid while x is. */
const uint64_t *policy__dindex_only(const struct policy_dindex *x, unsigned takes, uint32_t n);

/** The walk's next domain into *d, or false at the end. O(keys / 64 +
 *  domains / 64) at most. */
bool policy__dindex_next(const struct policy_dindex *x, struct policy__dcursor *c, uint32_t *d);

/* ---- a spec's vGPUs on one node (vshares.c) ---------------------------- */

/* What the memos keep of one score: its shares (GPU indexes within the
 * node) and the rise, or rc -ENOSPC when the node takes none. */
struct policy__vrec {
	double frag;
	int rc;
	uint32_t n;
	struct policy_vgpu_share s[];
};

/** Spec s's vGPUs on node i (with registered GPUs): the rise of the
 *  node's fragmentation under t->mix (0 without one) into *frag, through
 *  the memos when there is a mix (*rec the record, else NULL); records
 *  go in arena a. 0, -ENOSPC, -ENOMEM. */
int policy__vgpu_score(struct policy_nodes *t, struct arena *a, const struct kubeapi_podspec *s,
                       size_t i, double *frag, const struct policy__vrec **rec);

/** Spec s's shares on node i into out[0..*n) (KUBEAPI_VGPU_MAX_SHARES at
 *  most): rec's when given and still fitting the GPUs, else computed.
 *  0, -ENOSPC. */
int policy__vgpu_shares(const struct policy_nodes *t, const struct kubeapi_podspec *s, size_t i,
                        const struct policy__vrec *rec, struct policy_vgpu_share *out, size_t *n);

/* What a spec's vGPUs need of one node at least (gpu_room, gpu_empty):
 * a GPU with room cores free (1 for asks of no cores: a GPU whose cores
 * are all used takes none), and alone GPUs with no share (asks of all the
 * cores). */
struct policy__need {
	unsigned room, alone;
};

struct policy__need policy__vgpu_need(const struct kubeapi_podspec *s);

/** policy_frag_balance() of spec s on node i (frag.h): the tie-break
 *  after the score on registered GPUs. O(GPUs). */
double policy__vgpu_balance(const struct policy_nodes *t, const struct kubeapi_podspec *s, size_t i,
                            double cpu_per_core);

#endif /* MUSTER_POLICY_TABLE_H */
