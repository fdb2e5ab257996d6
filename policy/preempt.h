/*
 * Preemption's search, on plain inputs: the live node table, the queue
 * tree, one preemptor (its queue, request and member specs) and the
 * candidate victims in their cost order. It returns the victims and where
 * the preemptor goes; it knows nothing of gangs, pods, holds or words,
 * and nothing of backfill. Who may be a candidate, and acting on the
 * answer, are the planner's (victims.c, holds.c).
 *
 * The search is topology-aware: from the finest level to the whole
 * cluster, in each domain that holds candidates (and enough GPUs with
 * them), candidates there are released in order until the preemptor fits
 * (quota and nodes); then each is given back, most valuable first, if it
 * still fits without it, so the set is minimal for that domain. The first
 * level with an answer wins, and in it the domain with the fewest
 * victims, then the lowest highest priority among them. Reclaim takes
 * from another queue only while that queue still borrows, counting the
 * victims before it as gone.
 *
 * Cost: at most PREEMPT_CHECKS placements (fit checks) per preemptor and
 * PREEMPT_CHECKS_PER_CYCLE per cycle (each a placement over the node
 * table, 0.3 to 1 ms at 5,000 nodes), and PREEMPT_ANSWERS domains with an
 * answer per level before the best of them is taken; plus O(candidates'
 * pods x log) per level to group candidates by domain. A preemptor whose
 * search runs out of budget gets no answer: evicting on a guess would
 * over-evict.
 */
#ifndef MUSTER_POLICY_PREEMPT_H
#define MUSTER_POLICY_PREEMPT_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "policy/policy.h"
#include "queue/queue.h"

#define PREEMPT_CHECKS           64
#define PREEMPT_CHECKS_PER_CYCLE 128
#define PREEMPT_ANSWERS          4

/* A running gang that may be evicted, or one member of it where the gang
 * lets its members go one by one, and where it stands in the order
 * (lower pos goes first). */
struct preempt_cand {
	uint32_t id;   /* the caller's gang index */
	uint32_t part; /* the caller's: 0 the whole gang, else which member */
	/* Between candidates of equal cost: the caller's name for it (its
	 * gang's key, a member pod's key), so that the order does not hang
	 * on the caller's indexes. */
	uint64_t tie;
	uint32_t pos; /* set by preempt_order() */
	int queue;    /* its queue tree node */
	uint8_t other_queue;
	double over; /* its queue's use beyond nominal, as a fraction of it */
	int32_t priority;
	int64_t started_s;
	/* Its bound pods (node index, spec and vGPU shares of each), and
	 * what they charge its queue together, per queue slot. */
	uint32_t npods;
	const uint32_t *node;
	const struct kubeapi_podspec *const *spec;
	const struct policy_held *const *held; /* NULL: none holds vGPU shares */
	const int64_t *req;
};

/* The preemptor, and the world it is searched in. */
struct preempt_ask {
	struct policy_nodes *nodes;
	struct policy_fitcache *fits;
	struct arena *arena;
	struct queue_tree *tree;
	unsigned nslots;
	int queue;          /* the preemptor's queue */
	const int64_t *req; /* what its members ask, per queue slot */
	const struct kubeapi_podspec *const *specs;
	size_t n;
	const struct policy_within *within; /* its topology constraint, or NULL */
};

/* The cycle's search budget, shared by its preemptors; tries counts
 * every placement made, the answer's own included. */
struct preempt_budget {
	size_t checks, tries;
};

/* An answer: victims[0..nvictims) (copies of candidates), and the node
 * index of each preemptor member, at[k], with its vGPU shares held[k]. */
struct preempt_answer {
	struct preempt_cand *victims;
	size_t nvictims;
	uint32_t *at;
	const struct policy_held **held;
};

/** Sort c[0..n) into the cost order (Kueue's: other queues' first, from
 *  the one furthest above its nominal; then lowest priority; then the
 *  most recently started) and number it. */
void preempt_order(struct preempt_cand *c, size_t n);

/** How far queue q is above its nominal quota in the slots req asks:
 *  the largest (demand - nominal) / nominal; 0 when it borrows none of
 *  them. */
double preempt_over_nominal(const struct queue_tree *t, unsigned nslots, int q, const int64_t *req);

/** Take victim v's pods off (sign +1) or back onto (-1) their nodes, and
 *  its usage out of (+1) or back into (-1) its queue. */
void preempt_release(struct policy_nodes *t, struct queue_tree *tree, const struct preempt_cand *v,
                     int sign);

/**
 * Search c[0..nc) (in the cost order) for the victims of preemptor a.
 * 1: *out is the answer, and the preemptor is counted into the table at
 * out->at and charged to its queue (the room is its own from now on),
 * while the victims stay counted until they are gone. 0: no answer
 * (none exists, or the budget ran out); nothing changed. -ENOMEM.
 */
int preempt_search(const struct preempt_ask *a, const struct preempt_cand *c, size_t nc,
                   struct preempt_budget *b, struct preempt_answer *out);

#endif /* MUSTER_POLICY_PREEMPT_H */
