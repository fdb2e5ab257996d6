/*
 * Reservations and backfill (EASY backfill, as Slurm's and Maui's), on
 * plain inputs: the live node table, the timeline of ends the caller
 * gives, and the pod specs of one gang at a time. It knows nothing of
 * gangs, queues, pods or preemption; the planner (plan.h) turns its
 * answers into a gang's state and words.
 *
 * Reservation: a gang that does not fit now gets the nodes where it
 * would start as running work ends. The start is found by a search over
 * the timeline of ends (doubling m, then halving the last step): place
 * the gang on a scratch copy of the node table with the first m ends
 * given back, for the smallest m that fits.
 * Each reservation then records, per node it uses, what is left there at
 * its start ("extra"). A later reservation is searched with the earlier
 * ones holding their nodes from now until they end: it may start later
 * than it could, never earlier.
 *
 * Backfill: a later placement whose own end comes after a reservation's
 * start (or is unknown) may use of a reserved node only min(free now,
 * extra), so it can never be in the way when the reservation starts; one
 * that ends before the start may use what is free now.
 *
 * Cost: the timeline is sorted once per cycle (O(E log E) for E ends); a
 * reservation that starts after the first m ends costs O(log m)
 * placements on a copy of the table and O(m) ends counted; a later
 * placement pays O(reserved nodes x resources) to see the reservations.
 * All memory is the cycle's arena.
 */
#ifndef MUSTER_POLICY_BACKFILL_H
#define MUSTER_POLICY_BACKFILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "policy/policy.h"

/* Running work that ends at end_s (POLICY_NEVER: no estimate), freeing
 * spec and its vGPU shares (held, or NULL) on node index `node`. tag is
 * the caller's (the planner's: the queue the work is charged to), kept
 * with the end and never read here. */
struct backfill_end {
	int64_t end_s;
	uint32_t node;
	int32_t tag;
	const struct kubeapi_podspec *spec;
	const struct policy_held *held;
};

/* A reservation (a decision): the caller's gang `id` starts at start_s
 * (POLICY_NEVER: only once work without an estimate ends too), member k
 * (specs[k], its shares held[k]) on node index at[k], and ends at end_s (POLICY_NEVER when
 * either is unknown). node[0..n) are the distinct nodes, extra[j x nres
 * + res] what is left of res on node[j] at start_s for anyone else. */
struct backfill_resv {
	uint32_t id;
	int64_t start_s, end_s;
	uint32_t nmembers;
	const struct kubeapi_podspec **specs;
	const struct policy_held **held;
	uint32_t *at;
	uint32_t n;
	uint32_t *node;
	int64_t *extra;
};

struct backfill_undo;

struct backfill {
	/* Inputs, from backfill_init(). */
	struct policy_nodes *nodes; /* the live table: backfill_place() uses it */
	struct policy_fitcache *fits;
	struct arena *arena;
	/* What placements on the live table allocate from (what it builds
	 * on first use stays with it): arena, unless the caller's table
	 * outlives b's arena and says so. */
	struct arena *table_arena;
	int64_t now_s;
	size_t max_resv;
	/* The timeline: ends known, by end once done; then those without
	 * (whole once backfill_forever() has run). */
	struct backfill_end *ends, *forever;
	size_t nends, cap_ends, nforever, cap_forever;
	uint8_t timeline_done;
	/* Optional, the caller's: more ends known, by end, that a search
	 * merges with the reservations' ends (a copy) and with the timeline
	 * as it reads it (not copied). */
	const struct backfill_end *more;
	size_t nmore;
	/* Optional, the caller's: give every end of the timeline (known or
	 * not) back to t, a copy of the live table with none given back, at
	 * once, for a caller that keeps what they hold together; 0, or
	 * negative with t untouched (each end is then given back alone). */
	int (*vacate)(void *arg, struct policy_nodes *t);
	void *vacate_arg;
	/* Optional, the caller's: the ends without an estimate, added on
	 * first need (backfill_forever()) rather than with the timeline, for
	 * a caller whose running work mostly has none: a search reads them
	 * only when vacate cannot stand in for them. Called once, with
	 * vacate_arg; 0 or -ENOMEM. */
	int (*forever_fill)(void *arg, struct backfill *b);
	/* The decisions: this cycle's reservations, in the order made. */
	struct backfill_resv *resv;
	size_t nresv;
	/* Placements tried by reservation searches; placements made beside
	 * standing reservations. */
	size_t tries, backfilled;
	/* Room to undo one backfill placement's lowering of reserved nodes. */
	struct backfill_undo *undo;
	size_t cap_undo;
};

/** Start a cycle's backfill on table t: at most `reservations` of them,
 *  times measured from now_s. 0 or -ENOMEM. */
int backfill_init(struct backfill *b, struct policy_nodes *t, struct policy_fitcache *fc,
                  struct arena *a, int64_t now_s, unsigned reservations);

/** Whether every reservation of the cycle is taken. */
bool backfill_full(const struct backfill *b);

/** Add running work ending at end_s (before now_s: any moment now;
 *  POLICY_NEVER: no estimate), tagged tag, to the timeline. 0 or -ENOMEM. Then once,
 *  backfill_timeline_done(), which sorts it; only then may a reservation
 *  be made. */
int backfill_timeline_add(struct backfill *b, int64_t end_s, uint32_t node, int32_t tag,
                          const struct kubeapi_podspec *spec, const struct policy_held *held);
void backfill_timeline_done(struct backfill *b);

/** Room for nends more adds (the caller's bound on them) with an end and
 *  nforever without, so the timeline is not copied as it grows: at
 *  100,000 nodes 800,000 running pods, copied about once over by
 *  doubling. Room never written costs address space, not memory. 0 or
 *  -ENOMEM. */
int backfill_timeline_room(struct backfill *b, size_t nends, size_t nforever);

/** The ends without an estimate made whole: forever_fill called if it
 *  is set and was not yet. Before reading b->forever. 0 or -ENOMEM. */
int backfill_forever(struct backfill *b);

/** Instead of backfill_timeline_add() and _done(): the caller's timeline,
 *  ends[0..n) by end (by_end's order: end, node, spec; none before
 *  now_s) and forever[0..nforever), used in place for as long as b is
 *  (it writes to neither). */
void backfill_timeline_use(struct backfill *b, struct backfill_end *ends, size_t n,
                           struct backfill_end *forever, size_t nforever);

/**
 * Reserve for gang `id` (specs[0..n), its expected runtime runtime_s or
 * POLICY_NEVER, its topology constraint w or NULL) the nodes where it
 * starts earliest. 1 with *out the new
 * reservation, 0 when it fits not even once all running work has ended
 * (nothing is held), or -ENOMEM. The live table is not changed.
 */
int backfill_reserve(struct backfill *b, uint32_t id, const struct policy_within *w,
                     const struct kubeapi_podspec *const *specs, size_t n, int64_t runtime_s,
                     const struct backfill_resv **out);

/** How many of the reservations a placement ending at end_s must keep
 *  out of the way of (monotone in end_s): placements alike in all but
 *  their ends fare alike when this is. */
size_t backfill_kept_out(const struct backfill *b, int64_t end_s);

/**
 * policy_place_within() (w: the gang's topology constraint, or NULL) on
 * the live table, within the reservations: a placement ending at end_s
 * (POLICY_NEVER: unknown) after a reservation's start may use of its
 * nodes only what the reservation leaves. On success the placement is
 * counted into the table and takes from the reservations' extra. Returns
 * as policy_place().
 */
int backfill_place(struct backfill *b, int64_t end_s, const struct policy_within *w,
                   const struct kubeapi_podspec *const *specs, size_t n, uint32_t *out,
                   const struct policy_held **held, struct policy_why *why);

#endif /* MUSTER_POLICY_BACKFILL_H */
