/*
 * The quota tree: cohorts and queues with nominal quotas, borrowing and
 * lending limits, the usage of admitted gangs, and the fair-share order of
 * siblings. Pure arithmetic: no I/O, no clock, no allocation after build.
 *
 * Quotas are per slot: one slot per (resource, flavor) pair the
 * configuration names (the caller maps them). Amounts are int64 in the
 * model's units (CPU millicores, bytes, devices).
 *
 * The rule, for every node n and slot s (B and L are infinite when unset;
 * the root cohort may not borrow):
 *
 *   Q(n)        own quota: a queue's nominal; a cohort's pool
 *               = sum over children c of lend(c)
 *   lend(n)     = min(Q(n), L(n))    what n offers its parent's pool
 *   reserve(n)  = Q(n) - lend(n)     what only n's subtree may use
 *   demand(n)   a queue's admitted usage; a cohort's
 *               = sum over children c of draw(c)
 *   draw(n)     = max(0, demand(n) - reserve(n))   what n takes from the
 *               parent's pool
 *
 *   admissible  iff for every node n on the path from the queue to the
 *               root: demand(n) <= Q(n) + B(n)   (B(root) = 0)
 *
 * So a queue uses its nominal quota first, then borrows what its siblings
 * lend (never their reserve), up to its borrowing limit, and a cohort that
 * runs out borrows from its own parent the same way. Checking a gang costs
 * O(depth x slots).
 *
 * Fair share among the children of a cohort P (Kueue's and KAI's idea,
 * dominant-resource form):
 *
 *   share(c) = max over slots s with Q(P,s) > 0 of
 *              max(0, demand(c,s) - Q(c,s)) / Q(P,s)  /  weight(c)
 *
 * that is, the largest fraction of the parent's pool the child uses beyond
 * its own quota, divided by its weight. Within its quota a child's share is
 * 0; the child with the lowest share is served first, so a child furthest
 * below its fair share goes ahead of one that already borrows a lot.
 * Shares are computed with the candidate gang's request added, so a large
 * request does not jump ahead of small ones for free.
 *
 * With a half-life set (fairSharing.halfLife), every node also remembers
 * its past demand, decayed (quota.c: the average), and the share counts
 *
 *   use(c,s)  = max(demand(c,s) + request, remembered(c,s))
 *
 * in place of demand + request: a child that borrowed the whole pool
 * yesterday ranks behind one that borrowed nothing, as if it still held
 * part of what it held, until that has decayed below what it uses now.
 * A child that stayed within its quota is not held back by its past.
 * Admission (fits) never looks at memory: only the order does.
 */
#ifndef MUSTER_QUEUE_QUOTA_H
#define MUSTER_QUEUE_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#define QUEUE_UNLIMITED INT64_MAX
#define QUEUE_MAX_SLOTS 64
#define QUEUE_NONE      (-1)
#define QUEUE_NO_TIME   INT64_MIN

struct queue_tree;

/** A tree with nslots quota slots and one root cohort (node 0, named
 *  "root"). Returns 0, -EINVAL (nslots out of 1..QUEUE_MAX_SLOTS), -ENOMEM. */
int queue_tree_new(unsigned nslots, struct queue_tree **out);

void queue_tree_free(struct queue_tree **tp);

/** Add a cohort or a queue under `parent` (a cohort). Returns the new node's
 *  index (> 0), or -EINVAL (parent is not a cohort, weight <= 0), -ENOMEM.
 *  Names are copied; the tree does not check them for uniqueness (the
 *  configuration does). */
int queue_tree_add_cohort(struct queue_tree *t, int parent, const char *name, double weight);
int queue_tree_add_queue(struct queue_tree *t, int parent, const char *name, double weight);

/** Set a queue's quota for a slot: nominal >= 0, borrowing and lending
 *  limits >= 0 or QUEUE_UNLIMITED, lending <= nominal. 0 or -EINVAL. */
int queue_tree_set_quota(struct queue_tree *t, int queue, unsigned slot, int64_t nominal,
                         int64_t borrowing_limit, int64_t lending_limit);

/** Compute the cohorts' pools. Call after the last add/set, before use. */
void queue_tree_finalize(struct queue_tree *t);

/** Why a request does not fit: the node and slot whose limit it would
 *  pass, and the amounts, for a message a person can read. */
struct queue_verdict {
	int fits;
	int node; /* where it stops: the queue or a cohort */
	unsigned slot;
	int64_t demand; /* demand(node, slot) with the request */
	int64_t limit;  /* Q + B there */
};

/** Whether req[0..nslots) fits in queue q now. O(depth x slots). */
struct queue_verdict queue_tree_fits(const struct queue_tree *t, int q, const int64_t *req);

/** Count an admitted gang's request in (sign +1) or out (sign -1) of q's
 *  usage. No check: call queue_tree_fits first to admit. 0 or -EINVAL. */
int queue_tree_charge(struct queue_tree *t, int q, const int64_t *req, int sign);

/** share(c) as defined above, with req (may be NULL) landing in queue q
 *  (c itself or a queue under it) added along the path; c is not the root. */
double queue_tree_share(const struct queue_tree *t, int c, int q, const int64_t *req);

/** Forget all usage (demand 0 everywhere), to count it again. */
void queue_tree_reset_usage(struct queue_tree *t);

/** Whether node is a cohort (the root is one). */
int queue_tree_is_cohort(const struct queue_tree *t, int node);

/** Node facts, for status and the debug page. */
const char *queue_tree_name(const struct queue_tree *t, int node);
int queue_tree_parent(const struct queue_tree *t, int node);
int64_t queue_tree_quota(const struct queue_tree *t, int node, unsigned slot);  /* Q */
int64_t queue_tree_demand(const struct queue_tree *t, int node, unsigned slot); /* demand */
/** Changes whenever the demand of node or of any node under it does. */
uint64_t queue_tree_version(const struct queue_tree *t, int node);
int queue_tree_size(const struct queue_tree *t);

/* ---- memory ---------------------------------------------------------- */

/** Turn memory on with this half-life (> 0), or off (0, the default):
 *  off, shares are exactly as without it and the calls below do nothing. */
void queue_tree_set_half_life(struct queue_tree *t, int64_t half_life_ms);
int64_t queue_tree_half_life(const struct queue_tree *t);

/** Bring the memory up to now_s (unix seconds): the demand held since the
 *  last call (queue_tree_hold()) is averaged in over the seconds between.
 *  The first call only starts the clock. O(nodes x slots). */
void queue_tree_age(struct queue_tree *t, int64_t now_s);

/** The demand as it is now is what stands until the next age(): call at
 *  the end of a cycle. */
void queue_tree_hold(struct queue_tree *t);

/** When the memory was last brought up to date, or QUEUE_NO_TIME. */
int64_t queue_tree_memory_at(const struct queue_tree *t);
double queue_tree_remembered(const struct queue_tree *t, int node, unsigned slot);
int64_t queue_tree_held(const struct queue_tree *t, int node, unsigned slot);

/** Put back what a node remembered and held at at_s (after a restart, or
 *  into the tree of a new configuration). 0, or -EINVAL for a node or
 *  slot out of range, mem negative or not finite, held < 0. */
int queue_tree_recall(struct queue_tree *t, int node, unsigned slot, double mem, int64_t held,
                      int64_t at_s);

#endif /* MUSTER_QUEUE_QUOTA_H */
