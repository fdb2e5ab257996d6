/*
 * The queue module's face: the queues of a configuration as a quota tree,
 * which queue a gang belongs to, and the order in which a scheduling cycle
 * looks at pending gangs.
 *
 *   queue_set     a config's cohorts and queues as a quota tree
 *                 (quota.h), with the (resource, flavor) quota slots
 *                 and the per-queue policy; rebuilt when the config
 *                 changes
 *   queue_resolve the queue of a gang, or why it has none
 *   queue_cycle   one cycle's walk over the pending gangs: fair share
 *                 across the tree, priority then submission time inside
 *                 a queue, StrictFIFO or BestEffortFIFO
 *
 * Nothing here does I/O or reads a clock; the scheduler hands in what it
 * knows about each gang as plain values.
 */
#ifndef MUSTER_QUEUE_QUEUE_H
#define MUSTER_QUEUE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "queue/quota.h"

/* ---- the set ------------------------------------------------------- */

/** A quota slot: a resource (index into config.resources) on one flavor
 *  (index into config.flavors) or on any flavor (CONFIG_NO_FLAVOR). */
struct queue_slot {
	size_t resource;
	size_t flavor;
};

struct queue_set;

/**
 * Build the tree of config c. Slot 0..R-1 are the R resources on any
 * flavor; after them come the (resource, flavor) pairs that some queue
 * gives a quota, in the order first seen. A queue without a quota for a
 * slot has nominal 0 there and may borrow without limit.
 *
 * c must outlive the set (the set points into it). Returns 0, -E2BIG when
 * the config needs more than QUEUE_MAX_SLOTS slots, -ENOMEM.
 */
int queue_set_build(const struct config *c, struct queue_set **out);
void queue_set_free(struct queue_set **qs);

/** The number of slots a config needs, for config checking. */
size_t queue_set_count_slots(const struct config *c);

const struct config *queue_set_config(const struct queue_set *qs);
struct queue_tree *queue_set_tree(struct queue_set *qs);
const struct queue_tree *queue_set_tree_c(const struct queue_set *qs);
unsigned queue_set_nslots(const struct queue_set *qs);
const struct queue_slot *queue_set_slot(const struct queue_set *qs, unsigned slot);

/** The configured queue at tree node `node`, or NULL for a cohort. */
const struct config_queue *queue_set_queue(const struct queue_set *qs, int node);

/** The tree node of the queue called name, or -ENOENT (also when name is
 *  a cohort's). O(log queues). */
int queue_set_find(const struct queue_set *qs, const char *name);

/**
 * Add to req[0..nslots) the amounts amount[0..R) (per config resource,
 * in the config's units) of pods placed on nodes of `flavor` (or
 * CONFIG_NO_FLAVOR when the nodes match no flavor): each goes into the
 * resource's any-flavor slot and, when the config has one, its
 * (resource, flavor) slot.
 */
void queue_set_add_request(const struct queue_set *qs, int64_t *req, const int64_t *amount,
                           size_t flavor);

/** A slot's name: "gpu", or "gpu@a100" for a flavor's. */
void queue_set_slot_name(const struct queue_set *qs, unsigned slot, char *buf, size_t len);

/** The slot called name, or -ENOENT. O(slots). */
int queue_set_find_slot(const struct queue_set *qs, const char *name);

/** The tree node (queue or cohort, "root" for the root) called name, or
 *  -ENOENT. O(nodes): for reloads and restores, not cycles. */
int queue_set_find_node(const struct queue_set *qs, const char *name);

/** Give set `to` (a new configuration's) the fair-sharing memory of
 *  `from` for every queue and cohort, and every slot, that has the same
 *  name in both; the rest start from nothing. Nothing when `to` has no
 *  half-life. */
void queue_set_carry(struct queue_set *to, const struct queue_set *from);

/* ---- which queue ---------------------------------------------------- */

/** Where a gang's queue came from. */
enum queue_source {
	QUEUE_FROM_NONE,      /**< no queue: the gang is not scheduled */
	QUEUE_FROM_LABEL,     /**< label muster.dev/queue on the PodGroup or pod */
	QUEUE_FROM_VOLCANO,   /**< a Volcano PodGroup's spec.queue */
	QUEUE_FROM_NAMESPACE, /**< the queue that lists the namespace */
	QUEUE_FROM_DEFAULT,   /**< the config's defaultQueue */
};

/** The longest reason queue_resolve() writes, NUL included. */
#define QUEUE_REASON_MAX 256

struct queue_resolution {
	int node; /**< the queue's tree node, or QUEUE_NONE */
	enum queue_source source;
	char reason[QUEUE_REASON_MAX]; /**< why there is no queue; "" otherwise */
};

/**
 * A gang's queue, in this order: the label (label, may be NULL); else a
 * Volcano PodGroup's spec.queue (volcano, may be NULL); else the queue that
 * lists namespace ns; else defaultQueue. A label or Volcano queue naming
 * no queue of the config is an error, not a fall-through: the user asked
 * for that queue. The exception is Volcano's own "default", which
 * Volcano's admission fills in when the user names none: unless the
 * config has a queue called "default", it falls through.
 *
 * Returns 0, or -ENOENT with out->reason saying why (for the PodGroup's
 * condition and an Event).
 */
int queue_resolve(const struct queue_set *qs, const char *label, const char *volcano,
                  const char *ns, struct queue_resolution *out);

const char *queue_source_name(enum queue_source s);

/* ---- one cycle's order ---------------------------------------------- */

/** What a cycle needs to know about a pending gang. */
struct queue_item {
	int node;           /**< its queue (from queue_resolve) */
	int32_t priority;   /**< higher goes first */
	int64_t submitted;  /**< submission time; earlier goes first */
	uint64_t tiebreak;  /**< orders equal items stably (a hash of the uid) */
	const int64_t *req; /**< nslots amounts it would charge, or NULL */
};

struct queue_cycle;

/**
 * Start a cycle over items[0..n) against the set's tree. Items whose
 * node is not a queue of the set are never returned. The cycle reads the
 * tree's usage each time it chooses, so gangs charged (or uncharged by
 * preemption) during the cycle move the fair share at once; call
 * queue_cycle_touch() for a change the cycle did not see go by.
 *
 * Costs O(n log n) to start and O(depth x siblings x slots) per choice
 * (only the path of the last queue served is recomputed). items must
 * outlive the cycle. Returns 0 or -ENOMEM.
 */
int queue_cycle_new(const struct queue_set *qs, const struct queue_item *items, size_t n,
                    struct queue_cycle **out);
void queue_cycle_free(struct queue_cycle **c);

/**
 * The next item to try: among the queues that still have items, the one
 * reached by walking down from the root to the child with the lowest
 * share (queue_tree_share() with that child's next item added; ties go
 * to the child with the lower share of its own quota, then to the one
 * configured first); in that queue, the highest priority, then the
 * earliest submitted. Returns the item's index, or -ENOENT when no queue
 * has items left.
 */
int queue_cycle_next(struct queue_cycle *c);

/**
 * Report what became of the item queue_cycle_next() returned. Either way
 * the queue moves on to its next item, except that a StrictFIFO queue
 * whose head was not admitted is done for this cycle: nothing behind the
 * head may pass it. Charging the tree for an admitted item is the
 * caller's job (queue_tree_charge()).
 */
void queue_cycle_done(struct queue_cycle *c, int item, bool admitted);

/** Usage under queue node `node` changed behind the cycle's back. */
void queue_cycle_touch(struct queue_cycle *c, int node);

/** Whether the queue at node was stopped by its StrictFIFO head. */
bool queue_cycle_blocked(const struct queue_cycle *c, int node);

#endif /* MUSTER_QUEUE_QUEUE_H */
