/*
 * Placement policy: which nodes a pod may use, and where a whole gang goes.
 * Built on it: reservations and backfill (backfill.h), preemption's search
 * (preempt.h), and the cycle planner over all three (plan.h).
 *
 *   policy_nodes   one cycle's table of nodes: free resources, flavor,
 *                  topology domains, and per-domain free GPUs
 *   policy_fit     which nodes a pod spec may use at all (readiness,
 *                  taints, nodeSelector, required affinity), memoized per
 *                  spec blob for the cycle, with the reasons for the rest
 *   policy_place   a gang's members onto nodes, all or none
 *
 * No I/O and no clock; memory comes from the cycle's arena. Amounts are
 * the model's (kubeapi/model.h): CPU millicores, other resources in units.
 */
#ifndef MUSTER_POLICY_POLICY_H
#define MUSTER_POLICY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/idmap.h"
#include "config/config.h"
#include "kubeapi/model.h"
#include "policy/gpus.h"

struct policy_mix;       /* frag.h */
struct policy_node_memo; /* vshares.c */
struct policy_scratch;   /* place.c */
struct policy_dindex;    /* dindex.c */

/** Topology levels read from the configuration, coarse to fine. */
#define POLICY_MAX_LEVELS 8
#define POLICY_NO_DOMAIN  UINT32_MAX
#define POLICY_NO_FLAVOR  UINT16_MAX
/** GPU models a table tells apart (struct policy_nodes' gpu_model). */
#define POLICY_MODELS 63
/** The node label whose value names the model of the node's GPUs, as
 *  NVIDIA's GPU feature discovery sets it ("Tesla-T4"). */
#define POLICY_MODEL_LABEL "nvidia.com/gpu.product"
/** Members of 1, 2, 4 and 8 GPUs a domain's nodes could take (struct
 *  policy_level's takes): a count each. */
#define POLICY_TAKES 4
/** A start or end time that is not known (work without an estimate). */
#define POLICY_NEVER INT64_MAX

struct policy_level {
	uint32_t key;      /* label key id */
	uint32_t ndomains; /* dense domain indexes 0 .. ndomains-1 */
	uint32_t *start;   /* CSR: nodes of domain d are members[start[d] .. start[d+1]) */
	uint32_t *members; /* node indexes */
	uint32_t *value;   /* per domain, its label value id */
	int64_t *free_gpu; /* per domain, kept current as pods are placed */
	/* Per domain, the cores (percent) free on its healthy registered
	 * GPUs, kept current too: what lets placement skip a domain that
	 * cannot hold a gang's vGPUs without trying it. */
	int64_t *free_core;
	/* Per domain, its healthy registered GPUs with no share on them:
	 * what vGPU asks of all the cores (100: the GPU alone) need. */
	int64_t *empty_gpu;
	/* Per domain, for x < POLICY_TAKES, takes[d * POLICY_TAKES + x]:
	 * how many members asking 2^x whole GPUs its nodes could take by
	 * their free GPUs alone (the sum of each node's free / 2^x), kept
	 * with the counts above. A gang whose members each ask g GPUs or
	 * more fits no domain that could take fewer members than it has,
	 * counted for the most 2^x at or below g: what lets placement pass
	 * over a domain whose free GPUs are enough in sum but scattered
	 * over nodes too small for the members, without reading its nodes
	 * (at 100,000 nodes the gangs that fit no rack read every rack's
	 * nodes, a tenth of the cycle), and what the level's index filters
	 * its walk by (dindex.c). NULL on a level whose domains are single
	 * nodes. */
	uint32_t *takes;
	/* The most of each well-known resource one domain has allocatable:
	 * a gang asking more in all fits no domain of the level, and the
	 * level is passed over without reading a domain. */
	int64_t most[KUBEAPI_RES_WELL_KNOWN];
	/* Its domains ordered by what they have free (dindex.c), made by
	 * the first search of the level and kept with the counts above;
	 * NULL when the level has none (few domains) and is scanned.
	 * index_tried: made, or found not worth making. */
	struct policy_dindex *index;
	uint8_t index_tried;
};

struct policy_nodes {
	size_t n;
	unsigned nres; /* resources registered in the model */
	/* Levels [0, nsearch) are the configured ones, which placement
	 * searches for the smallest domain that holds a gang; the rest, up
	 * to nlevels, only constrain: label keys that gangs require (a native
	 * PodGroup's topology key) but the configuration does not list. */
	unsigned nlevels, nsearch;
	const struct kubeapi_node **node;
	int64_t *free; /* n x nres: allocatable minus what pods use */
	/* free[i * nres + KUBEAPI_RES_CPU] again, packed: the test a member
	 * fails on most nodes, made without reading each node's row. Kept
	 * with free[] by the functions below. */
	int64_t *free_cpu;
	/* And free[i * nres + KUBEAPI_RES_GPU], for the same reason: a node
	 * without the whole GPUs a member asks is passed over unread. */
	int64_t *free_gpu;
	uint32_t *domain;  /* n x nlevels */
	uint16_t *flavor;  /* config flavor index or POLICY_NO_FLAVOR */
	uint8_t *gpu_node; /* has GPUs: nvidia.com/gpu*, MIG slices or registered GPUs */
	/* Every node's registered GPUs (kubeapi_node.gpus): node i's are
	 * gpu[gpu_first[i] .. gpu_first[i + 1]). A node with none keeps
	 * whole-GPU accounting through free[]. */
	struct policy_gpu *gpu;
	uint32_t *gpu_first;
	/* Per node, kept current with its GPUs: the most cores (percent) free
	 * on one healthy GPU that takes one more share, and its healthy GPUs
	 * with no share. What lets placement pass over a node that cannot
	 * take a member's vGPUs without scoring it. */
	uint8_t *gpu_room, *gpu_empty;
	/* Per node, a hash of what its GPUs hold, kept with gpu_room (so a
	 * trial's undo brings it back); and the last few scores placement
	 * asked of it (vshares.c), valid while the hash, free CPU and memory,
	 * spec and mix are the same. A copy of the table starts with its own
	 * scores, empty. */
	uint64_t *gpu_ver;
	/* Per node: its gpu_room, gpu_empty and gpu_ver wait for
	 * policy_nodes_settle() (policy_nodes_count() left them). */
	uint8_t *room_stale;
	/* The levels' per-domain totals wait for policy_nodes_settle()
	 * (policy_nodes_tally() left them). */
	uint8_t levels_stale;
	struct policy_node_memo *node_memo;
	/* policy_place()'s working room (place.c), from the arena on first
	 * use: a level's domains and a member's nodes. It is never
	 * reentered on a table; a copy of the table starts without. */
	struct policy_scratch *scratch;
	/* The recent mix of requests that placement on GPUs minimises the
	 * fragmentation for (frag.h); the caller sets it, NULL: none. */
	const struct policy_mix *mix;
	/* What the fragmentation score said of a spec on a node in a given
	 * state (place.c): a pure function's memo, shared with copies, so a
	 * node is scored again only when it changed. Allocated by
	 * policy_nodes_build() when some node has registered GPUs. */
	struct idmap *frag_memo;
	struct policy_level level[POLICY_MAX_LEVELS];
	struct kubeapi_model *model;
	uint32_t unsched_key; /* id of node.kubernetes.io/unschedulable */
	/* The resources that are GPUs or parts of one, a bit per index
	 * (nvidia.com/gpu and its renames, MIG slices): what marks a GPU node. */
	uint64_t gpu_mask;
	const struct policy_flavors *flavors; /* the flavors' labels as ids */
	/* GPU models (frag.h): node i's is the bit of its label
	 * nvidia.com/gpu.product (GPU feature discovery's) in gpu_model[i],
	 * 0 without; the table numbers the values its nodes carry in the
	 * order it meets them, POLICY_MODELS at most (bit POLICY_MODELS:
	 * any other), and counts each model's registered GPUs. */
	uint64_t *gpu_model;
	uint32_t model_key, model_value[POLICY_MODELS];
	unsigned nmodels;
	double model_gpus[64];
	struct idmap by_name;   /* name id -> index + 1 */
	uint8_t names_borrowed; /* by_name is another table's (a clone's) */
};

/**
 * Build the table for nodes[0..n) with the flavors and topology levels of
 * cfg, then constraint-only levels for the label keys extra[0..nextra)
 * that are not among them (up to POLICY_MAX_LEVELS in all; extra may be
 * NULL), free = allocatable. Returns 0 or -ENOMEM.
 * O(n x (levels + flavors)).
 */
int policy_nodes_build(struct policy_nodes *t, struct arena *a, struct kubeapi_model *m,
                       const struct config *cfg, const uint32_t *extra, size_t nextra,
                       const struct kubeapi_node *const *nodes, size_t n);

/** The node index of name id `name`, or -1. O(1). */
long policy_nodes_find(const struct policy_nodes *t, uint32_t name);
/** Start loading what policy_nodes_find() reads for name (a walk's
 * lookahead: past about 10,000 nodes the map leaves the core's cache). */
void policy_nodes_prefetch(const struct policy_nodes *t, uint32_t name);

/** Free what the table holds outside the arena (its name index). */
void policy_nodes_release(struct policy_nodes *t);

/* A vGPU share in the table: container (among the pod's that ask) holds
 * mem MiB and cores percent of GPU t->gpu[gpu]. */
struct policy_share {
	uint32_t gpu, container;
	uint32_t mem, cores;
};

/* The shares one pod holds or is given, on one node. */
struct policy_held {
	uint32_t n, ncontainers;
	struct policy_share s[];
};

/**
 * Count a pod's requests (spec) and its vGPU shares (held, NULL for none)
 * in (sign -1) or out (+1) of node i's free resources and GPUs, domain
 * GPU totals included. One pod slot ("pods") is always part of the
 * request. Free may go negative (pods bound by others over what we think
 * is allocatable): such a node fits nothing until it frees.
 */
void policy_nodes_use(struct policy_nodes *t, size_t i, const struct kubeapi_podspec *spec,
                      const struct policy_held *held, int sign);

/**
 * policy_nodes_use() for a count of many pods before any placement (the
 * bound pods, each cycle): node i's per-GPU summary (gpu_room, gpu_empty,
 * gpu_ver) is worked out once, by policy_nodes_settle() after the last,
 * not once a pod (a vGPU node holds a share a pod). Nothing may read the
 * table in between.
 */
void policy_nodes_count(struct policy_nodes *t, size_t i, const struct kubeapi_podspec *spec,
                        const struct policy_held *held, int sign);
/**
 * policy_nodes_count() that leaves the domains' totals (free GPUs, cores,
 * empty GPUs per domain) to policy_nodes_settle() too, which sums them
 * from the nodes: for a count of most pods of a large table (the bound
 * pods, each cycle). Nothing may read the table in between.
 */
void policy_nodes_tally(struct policy_nodes *t, size_t i, const struct kubeapi_podspec *spec,
                        const struct policy_held *held, int sign);
void policy_nodes_settle(struct policy_nodes *t);
/** policy_nodes_settle() for node i alone: after counts on a few nodes
 *  of a large table. O(its GPUs) when it waits, else O(1). */
void policy_nodes_settle_node(struct policy_nodes *t, size_t i);

/**
 * The shares kh (a pod's, by GPU UUID) on node i's GPUs into *out (NULL
 * when none is on them: a share naming another node's GPU is no share
 * here), from arena a. 0 or -ENOMEM. O(shares x GPUs of the node).
 */
int policy_nodes_held(const struct policy_nodes *t, size_t i, const struct kubeapi_vgpu_held *kh,
                      struct arena *a, const struct policy_held **out);

/** The GPU models spec s may run on, a bit each as t numbers them
 *  (policy_nodes.gpu_model), 0 for any: the union over its required
 *  node affinity terms of the values an In requirement on
 *  POLICY_MODEL_LABEL lists (other requirements leave the models open),
 *  narrowed by its nodeSelector on that label. A value no node carries
 *  is bit POLICY_MODELS. O(requirements x models). */
uint64_t policy_nodes_spec_models(const struct policy_nodes *t, const struct kubeapi_podspec *s);

/** The GPUs of the table's nodes in use and in all: whole GPUs
 *  (nvidia.com/gpu) allocatable and taken, and registered healthy GPUs,
 *  each in use by the cores its shares hold (a half share is 0.5).
 *  O(nodes + GPUs). */
void policy_nodes_gpus_in_use(const struct policy_nodes *t, double *used, double *total);

/** Node i's registered GPUs, and how many. */
static inline struct policy_gpu *policy_nodes_gpus(const struct policy_nodes *t, size_t i,
                                                   size_t *n)
{
	*n = t->gpu_first[i + 1] - t->gpu_first[i];
	return &t->gpu[t->gpu_first[i]];
}

/** Add delta to node i's free amount of resource res (domain GPU totals
 *  follow when res is nvidia.com/gpu): how a reservation lowers what a
 *  gang may use of a node for one placement, and gives it back. */
void policy_nodes_adjust(struct policy_nodes *t, size_t i, unsigned res, int64_t delta);

/**
 * Make dst a scratch copy of src for what-if placements (a reservation's
 * search, a preemption's): its own free amounts, GPUs and domain GPU
 * totals, everything else shared with src. Never pass a copy to
 * policy_nodes_release(). 0 or -ENOMEM. O(nodes x resources + GPUs +
 * domains).
 */
int policy_nodes_copy(struct policy_nodes *dst, const struct policy_nodes *src, struct arena *a);

/**
 * Make dst the cycle's table from base, a table built and kept across
 * cycles with no pod counted into it: its own free amounts, GPUs, domain
 * totals and fragmentation memo, the rest (nodes, domains, flavors, the
 * names' index) base's, read only. Release dst before base. 0 or
 * -ENOMEM. O(nodes x resources + GPUs + domains), in copies of arrays:
 * a fraction of a build, which reads every node's labels.
 */
int policy_nodes_clone(struct policy_nodes *dst, const struct policy_nodes *base, struct arena *a);

/**
 * As policy_nodes_clone(), but the rows' counts (what
 * policy_nodes_assign() copies: free amounts and their per-node GPU
 * summaries; not the GPUs, whose entries say what each is) are left
 * unset, for an assign to fill before anything reads them. For the
 * cycle's table, which the counts kept across cycles are assigned into
 * (view.c): the clone's copy of base's rows was written over unread, a
 * read of the cold base and a write of the table each cycle. Domain
 * totals are copied as by the clone.
 */
int policy_nodes_clone_shape(struct policy_nodes *dst, const struct policy_nodes *base,
                             struct arena *a);

/**
 * Whether node n, at row i of t, a table no pod was counted into, would
 * build the row it has: the same node struct (the cache changes a node
 * in place), allocatable, registered GPUs, flavor and domain at every
 * level. What lets a kept table stand when a node changed only in what
 * the table reads through it as it goes (readiness, taints, labels no
 * level or flavor names). O(resources + GPUs + levels).
 */
bool policy_nodes_same_row(const struct policy_nodes *t, size_t i, const struct kubeapi_node *n);

/** Node i of t, a clone of base (or of base's clone), back to base's
 *  row: free amounts and GPUs as base has them. The levels' totals wait
 *  for policy_nodes_settle(). O(resources + node's GPUs). */
void policy_nodes_reset_row(struct policy_nodes *t, const struct policy_nodes *base, size_t i);

/** dst's free amounts, GPUs and domain totals made src's, both clones
 *  of one base (the same nodes, GPUs and domains). O(nodes x resources +
 *  GPUs + domains), in copies. */
void policy_nodes_assign(struct policy_nodes *dst, const struct policy_nodes *src);

/** Rows whose free amounts or GPUs' use differ between a and b, two
 *  clones of one base (a check of one table kept by deltas against one
 *  counted afresh). O(nodes x resources + GPUs). */
size_t policy_nodes_differ(const struct policy_nodes *a, const struct policy_nodes *b);

/** Whether spec's requests fit node i's free resources now. */
bool policy_fits_free(const struct policy_nodes *t, size_t i, const struct kubeapi_podspec *spec);

/** What a spec requests of resource res (0 when it names none). */
int64_t policy_spec_request(const struct kubeapi_podspec *spec, unsigned res);

/** GPUs a spec requests. */
static inline int64_t policy_spec_gpus(const struct kubeapi_podspec *spec)
{
	return policy_spec_request(spec, KUBEAPI_RES_GPU);
}

/* ---- static fit ------------------------------------------------------ */

/** Why a node is not usable for a spec, for messages like kube-scheduler's
 *  "0/20 nodes are available: 16 node(s) had untolerated taint". */
enum policy_reject {
	POLICY_OK,
	POLICY_NOT_READY,
	POLICY_UNSCHEDULABLE,
	POLICY_TAINT,
	POLICY_SELECTOR, /* nodeSelector or required node affinity */
	POLICY_REJECT_COUNT,
};

/** Node i's verdict for spec, ignoring resources. */
enum policy_reject policy_node_admits(const struct policy_nodes *t, size_t i,
                                      const struct kubeapi_podspec *spec);

/** The weight of spec's preferred node-affinity terms that node i meets. */
int32_t policy_preferred_score(const struct policy_nodes *t, size_t i,
                               const struct kubeapi_podspec *spec);

/** The statically feasible nodes of one spec (a bitmap and a list), and
 *  how many nodes each reason ruled out. */
struct policy_fit {
	const struct kubeapi_podspec *spec;
	uint64_t *bits;  /* n bits */
	uint32_t *nodes; /* feasible node indexes, ascending */
	size_t count;
	uint32_t rejected[POLICY_REJECT_COUNT];
};

/** Per-cycle memo of policy_fit by the static part of a spec (its
 *  tolerations, selector and affinity; not its requests), so gangs that
 *  differ only in what they request share one entry. In front of it, the
 *  last fits asked for, by spec blob (specs are shared: a cycle asks for
 *  a few of them tens of thousands of times), so the static part is
 *  hashed once per blob, not once per question. */
#define POLICY_FIT_RECENT 64
struct policy_fitcache {
	struct idmap map; /* hash of the static part -> struct policy_fit * */
	struct policy_fit_recent {
		const struct kubeapi_podspec *spec;
		const struct policy_fit *fit;
	} recent[POLICY_FIT_RECENT];
};

/** The fit of spec, computed on first use: O(nodes) then O(static part).
 *  f->spec is the first spec seen with this static part. NULL only when
 *  out of memory. */
const struct policy_fit *policy_fit_get(struct policy_fitcache *fc, struct arena *a,
                                        const struct policy_nodes *t,
                                        const struct kubeapi_podspec *spec);

void policy_fitcache_free(struct policy_fitcache *fc);

/* ---- placement ------------------------------------------------------- */

/* policy_why.short_res when what the member lacked is room on one GPU
 * (its vGPU memory, cores or a share slot), not a node's resource. */
#define POLICY_SHORT_VGPU KUBEAPI_MAX_RESOURCES

/** Why a gang could not be placed. */
struct policy_why {
	size_t placed;                /* members that fit in the best attempt */
	unsigned short_res;           /* a resource the first unplaced member lacked */
	const struct policy_fit *fit; /* that member's static fit */
	uint32_t short_nodes;         /* feasible nodes without room for it */
};

/**
 * Place specs[0..n) (one per member) all together, or none.
 *
 * A member that asks for vGPUs (kubeapi_podspec_vgpu) goes only onto a
 * node with registered GPUs that take its shares. On such nodes every
 * member is scored first by the rise of the node's expected GPU
 * fragmentation under t->mix (frag.h; 0 without a mix, and on nodes
 * without registered GPUs), and its shares are the ones that raise it
 * least (without a mix: Volcano's default order).
 *
 * The gang goes into the smallest topology domain that can hold it: the
 * configured levels are tried from the finest (a host) to the coarsest
 * (a zone), then the whole cluster. At a level, the domain whose free
 * GPUs (in percent of a GPU, shares and whole GPUs alike) would be
 * fewest after it wins (the tightest fit; ties go to the lower index):
 * domains are tried in that order, so the first that holds the gang
 * wins, and one whose free GPUs or, for a host, free resources fall
 * short of the gang's total is not tried. A level none of whose domains
 * is big enough (policy_level.most) is passed over, and a pod alone that
 * no domain of a level covering every node takes fits nowhere.
 *
 * Inside the domain, members go largest GPU request first, each onto the
 * node that scores lowest on, in order:
 *   1. a CPU-only member on a GPU node: GPU nodes are a last resort for
 *      pods that need no GPU;
 *   1b. the rise of the node's GPU fragmentation, as above;
 *   2. free GPUs left on the node after it (best fit: partly used nodes
 *      fill up first and whole nodes stay whole for whole-node requests);
 *   3. free CPU left after it, in millicores (best fit again); on
 *      registered GPUs under a mix, how far the CPU left is from the
 *      mix's proportion to the GPU cores left (policy_frag_balance());
 *   4. minus the preferred node-affinity weight it meets;
 *   5. the node index (deterministic).
 * Members of one spec in a row are chosen from one scored list: the first
 * costs O(nodes in the domain), each next one O(the nodes that take it),
 * as only the node the last went to is scored again. A gang costs at
 * most O(levels x members x feasible nodes).
 *
 * On success the members are counted into t (policy_nodes_use), out[k] is
 * member k's node index, held[k] its shares (NULL for a member without
 * vGPUs; from arena a), and 0 is returned. Otherwise t is unchanged, why
 * says how far it got, and -ENOSPC is returned (-ENOMEM when out of
 * memory). why may be NULL for a what-if that needs no reason: that
 * spares a pass over the feasible nodes of a member's spec.
 */
int policy_place(struct policy_nodes *t, struct policy_fitcache *fc, struct arena *a,
                 const struct kubeapi_podspec *const *specs, size_t n, uint32_t *out,
                 const struct policy_held **held, struct policy_why *why);

/* A hard topology constraint (a native PodGroup's
 * schedulingConstraints.topology): every member inside one domain of
 * t->level[level], and inside `domain` when it is not POLICY_NO_DOMAIN
 * (where the gang's members placed earlier are). level -1: none. */
struct policy_within {
	int level;
	uint32_t domain;
};

/**
 * policy_place() under constraint w (NULL or level -1: none, the same
 * call). Only the domains of w's level are tried, tightest first as
 * above, and never a coarser level or the whole cluster; a level index
 * past t->nlevels fits nowhere. Same results and cost, for one level.
 */
int policy_place_within(struct policy_nodes *t, struct policy_fitcache *fc, struct arena *a,
                        const struct policy_within *w, const struct kubeapi_podspec *const *specs,
                        size_t n, uint32_t *out, const struct policy_held **held,
                        struct policy_why *why);

#endif /* MUSTER_POLICY_POLICY_H */
