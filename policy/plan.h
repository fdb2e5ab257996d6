/*
 * The cycle planner: from a view of the cluster (the cache's stores plus
 * the placements Muster assumed and has not yet seen bound) to decisions:
 * which gangs are admitted and where each member goes, and why every
 * other gang waits.
 *
 * A cycle:
 *   1. the node table with every bound or assumed pod counted out of its
 *      node (pods of other schedulers included) (view.c, as is 3);
 *   2. gangs: Muster's pods grouped by PodGroup (either dialect), or
 *      alone; their queue (queue_resolve), priority, submission time;
 *      standing in for Volcano, also its PodGroups that have no pod yet
 *      (gangs.c);
 *   2b. the enqueue gate (podgroup.c): a PodGroup's minResources must
 *      fit its queue's quota, beside the other enqueued PodGroups that
 *      have not started, and the cluster's capacity, before its pods are
 *      tried (Volcano shows this as the phase Inqueue);
 *   3. queue usage counted again from the bound and assumed members of
 *      every gang, so usage is always what runs (a reload of the
 *      configuration loses nothing); with fairSharing.halfLife, the
 *      tree's memory of usage is brought up to now_s first, and takes
 *      the usage the cycle leaves after step 5 (queue/quota.h);
 *   4. preemptors holding room (plan_memory.holds) go first: placed as if their
 *      victims were gone, bound once they are (holds.c);
 *   5. the gangs with members to place, in the queue module's order: each
 *      must fit its quota along the cohort tree and be placed whole
 *      (policy_place); admitted ones are charged at once, so the rest of
 *      the cycle sees them. One that does not fit may preempt, if its
 *      queue allows (victims.c, holds.c, preempt.h), else the first
 *      backfill.reservations of them hold a reservation, and every later
 *      gang may use reserved nodes only as far as it cannot delay them
 *      (timeline.c, backfill.h);
 *   6. the forecast (forecast.c): the same rules played forward over the
 *      timeline of expected ends give every gang still waiting for room
 *      an expected start, as far as a budget allows.
 *
 * No I/O: the scheduler turns the result into bindings and status. All
 * memory of a cycle is in the plan's arena, valid until the next cycle.
 */
#ifndef MUSTER_POLICY_PLAN_H
#define MUSTER_POLICY_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/idmap.h"
#include "kubeapi/model.h"
#include "policy/policy.h"
#include "queue/queue.h"

struct plan_input {
	struct kubeapi_model *model;
	const struct idmap *nodes, *pods; /* the cache's stores */
	/* PodGroups of the three dialects: scheduler-plugins, Volcano and
	 * scheduling.k8s.io (natgroups may be NULL: served from 1.37 on). */
	const struct idmap *groups, *vcgroups, *natgroups;
	/* scheduling.k8s.io Workloads by namespace and name (may be NULL):
	 * the labels of a native PodGroup's Workload may name its queue. */
	const struct idmap *workloads;
	const struct idmap *priorityclasses; /* may be NULL */
	struct queue_set *qs;                /* its usage is recounted */
	/* Ids of the schedulerNames Muster takes (one gang tree and one quota
	 * for all of them); an id no pod has is harmless. */
	const uint32_t *schedulers;
	size_t nschedulers;
	/* Muster stands in for Volcano (it takes the name "volcano"): Volcano
	 * PodGroups are its own before any pod exists, to enqueue them. */
	uint8_t volcano_groups;
	/* Pods Muster bound and has not yet seen bound: pod key -> node
	 * name id (as uintptr_t). May be NULL. */
	const struct idmap *assumed;
	/* Of those, the vGPU shares Muster gave each (pod key -> const
	 * struct kubeapi_vgpu_held *), counted until the pod is seen bound
	 * with them in its annotation. May be NULL. */
	const struct idmap *assumed_vgpu;
	/* Gangs backing off after a timeout: gang key -> anything. The
	 * planner leaves them alone. May be NULL. */
	const struct idmap *backoff;
	/* The cycle's wall clock (unix seconds): runtimes, minRuntime and
	 * reservations are measured from it. */
	int64_t now_s;
	/* The cache's PodDisruptionBudgets (key -> struct kubeapi_pdb *): a
	 * gang whose eviction one would refuse is not chosen as a victim.
	 * May be NULL. */
	const struct idmap *pdbs;
	/* Gangs whose eviction the API server refused lately (a budget changed
	 * under us): gang key -> anything; not chosen as victims. May be NULL. */
	const struct idmap *refused;
	/* The pods added, changed or removed in `pods` since the last cycle
	 * that ran with the same plan_memory (keys, repeats allowed), when
	 * pods_known is set. Unset: any pod may have changed, and the cycle
	 * reads every pod again (the first cycle always does). */
	const uint64_t *pod_changes;
	size_t npod_changes;
	uint8_t pods_known;
	/* Likewise the keys of the PodGroups changed in groups, vcgroups and
	 * natgroups (in that order), when groups_known, which also says that
	 * no PriorityClass or Workload changed. Unset: any may have. What
	 * the planner keeps of each gang (gangs.c) hangs on them. */
	const uint64_t *group_changes[3];
	size_t ngroup_changes[3];
	uint8_t groups_known;
	/* Likewise the keys of the nodes changed in `nodes`, when
	 * nodes_known, a promise that config_gen changes with the
	 * configuration too: the node table is kept across cycles while the
	 * nodes it was built from stand as they were (policy/view.c).
	 * Unset: the table is built again. */
	const uint64_t *node_changes;
	size_t nnode_changes;
	uint8_t nodes_known;
	/* Changes whenever qs is another configuration's (the caller counts
	 * its reloads): the kept gangs' queues hang on it. */
	uint64_t config_gen;
	/* A debug aid: check what the planner keeps across cycles against a
	 * rebuild from the stores (plan_stats.state_mismatches). O(pods). */
	uint8_t check_state;
	/* The forecast (step 6): when set, every waiting gang the cycle found
	 * no room for gets an expected start, as far as the forecast gets
	 * within a budget of the calling thread's CPU time: forecast_pct
	 * percent of what the cycles took, and at least forecast_min_ns
	 * (both 0: no limit). */
	uint8_t forecast;
	uint8_t forecast_pct;
	int64_t forecast_min_ns;
	/* It runs when at least this many seconds passed since it last did
	 * (0: every cycle), with what the cycles since set aside (their
	 * forecast_pct, up to FORECAST_CREDIT_CYCLES times this cycle's
	 * time); the cycles between carry its answers to the gangs still
	 * waiting. */
	int64_t forecast_every_s;
	/* Publish every bound pod's expected end (plan.ends): what a
	 * simulation (sim/) needs to let running work end when the planner
	 * expects it to. O(bound pods). */
	uint8_t ends;
};

/** An end or start time that is not known (no runtime estimate). */
#define PLAN_NEVER POLICY_NEVER

enum plan_state {
	PLAN_RUNNING,    /* nothing left to place */
	PLAN_ADMITTED,   /* members placed this cycle (in binds) */
	PLAN_WAITING,    /* does not fit (quota or nodes): message says why */
	PLAN_INCOMPLETE, /* fewer members than minMember exist, or no PodGroup */
	PLAN_NO_QUEUE,   /* no queue takes it */
	PLAN_BACKOFF,    /* timed out; left alone until its backoff ends */
	PLAN_PREEMPTING, /* victims chosen: room held for it until they are gone */
};

/* Why a gang waits, as data: for the debug API's explanation. The
 * message says the same for a person. */
enum plan_why {
	PLAN_WHY_NONE,        /* not waiting (or not tried) */
	PLAN_WHY_QUOTA,       /* quota at a queue or cohort: node, slot, amounts */
	PLAN_WHY_FIT,         /* no room on the nodes: placed, members, short_* */
	PLAN_WHY_STRICT_FIFO, /* behind its StrictFIFO queue's head (gang head) */
	PLAN_WHY_MEMBERS,     /* fewer members than minMember, or no PodGroup */
	PLAN_WHY_TIMEOUT,     /* backing off after a timeout */
	PLAN_WHY_NO_QUEUE,    /* no queue takes it */
	PLAN_WHY_PREEMPTING,  /* victims chosen; waiting for them to end */
	PLAN_WHY_ENQUEUE,     /* PodGroup minResources: quota (node, slot, ...) or cluster */
	PLAN_WHY_UNSUPPORTED, /* a member states a constraint Muster does not apply yet */
};

struct plan_block {
	uint8_t why; /* enum plan_why */
	/* PLAN_WHY_QUOTA: the queue tree node and slot that stop it, the
	 * demand there (without the gang), the limit, the gang's request. */
	int32_t node;
	uint16_t slot;
	int64_t usage, limit, need;
	/* PLAN_WHY_FIT: members placed in the best attempt of `members`;
	 * feasible nodes short of resource short_res (a model resource id);
	 * nodes ruled out per enum policy_reject. */
	uint32_t placed, members, short_nodes, short_res;
	uint32_t rejected[POLICY_REJECT_COUNT];
	/* PLAN_WHY_STRICT_FIFO: the head's gang index. */
	uint32_t head;
	/* PLAN_WHY_MEMBERS: a task of minTaskMember is short (task id);
	 * members held by scheduling gates. */
	uint32_t task, gated;
	/* PLAN_WHY_UNSUPPORTED: the member (its index in the gang's pending
	 * list) and what it states (a kubeapi_unsupported bit). */
	uint32_t member;
	uint16_t unsupported;
	/* PLAN_WHY_ENQUEUE: node < 0 when the cluster's capacity, not a
	 * quota, is short: of resource short_res, usage = the capacity. */
};

struct plan_kept_gang; /* policy/plan_internal.h */

struct plan_gang {
	uint64_t key;                         /* plan_gang_key() */
	uint32_t ns, name;                    /* the PodGroup's, or the single pod's */
	const struct kubeapi_podgroup *group; /* NULL for a single pod */
	enum plan_state state;
	int queue; /* tree node, or QUEUE_NONE */
	int32_t priority;
	uint8_t fixed_priority; /* from the PodGroup's priority class */
	int64_t submitted_s;
	uint32_t min_member;
	uint32_t bound;             /* members bound or assumed, not finished */
	uint32_t running;           /* of those, in phase Running */
	uint32_t succeeded, failed; /* members finished */
	/* The PodGroup passed the minResources gate (Volcano: Inqueue); its
	 * pods may be admitted. Always 1 for a single pod. */
	uint8_t enqueued;
	/* The PodGroup's own phase says it has run (Running, Completed,
	 * Unknown, Finished, Failed): members coming and going do not send
	 * it back through the gate, nor its phase back to Inqueue. */
	uint8_t ran;
	uint32_t npending;
	const struct kubeapi_pod **pending; /* not yet bound, by creation then name */
	uint32_t first_bind, nbind;         /* into plan.binds */
	const char *message;                /* for WAITING, INCOMPLETE, NO_QUEUE; else NULL */
	/* Time. A runtime comes from the pods' activeDeadlineSeconds, else
	 * the annotation muster.dev/expected-runtime (pod or PodGroup), else
	 * the queue's defaultRuntime; without one, ends are PLAN_NEVER. */
	int64_t started_s; /* with preemption: the latest start of a bound member */
	int64_t runtime_s; /* expected runtime, PLAN_NEVER; 0 when the cycle did not need it */
	int64_t expected_start_s;    /* waiting gangs: 0 not estimated, PLAN_NEVER unknown */
	uint8_t reserved;            /* holds a reservation (expected_start_s is its start) */
	uint8_t forecast;            /* expected_start_s is the forecast's (forecast.c) */
	uint8_t protected_;          /* never a victim: queue or gang says so, or minRuntime */
	uint32_t preempted_by;       /* a victim: the preemptor's gang index + 1, else 0 */
	uint32_t bound_first;        /* planner-internal: first bound pod + 1 */
	struct plan_kept_gang *kept; /* planner-internal: its entry in plan_memory.gangs */
	uint32_t tried;              /* when this cycle tried it: 1, 2, ...; 0 not tried */
	const int64_t *req;          /* what its pending members ask, per queue slot; or NULL */
	/* Planner-internal, of the pending members: the one spec they all
	 * have (NULL: several), and whether one has its own runtime
	 * annotation (else their runtime is their spec's or the gang's). */
	const struct kubeapi_podspec *pending_spec;
	uint8_t pending_runtime;
	/* Planner-internal, while the pod walk files the pending members
	 * (view.c): room in pending, the run of members of one spec not yet
	 * added to req, and whether some member came late (its order then
	 * wants checking). */
	uint8_t pending_late;
	/* Planner-internal: message is the failure memo's words alone, to
	 * follow the gang's "gang ns/name: " once the cycle's turns are
	 * over (plan.c's plan__message()). */
	uint8_t said_memo;
	uint32_t cap_pending, run_pods;
	const struct kubeapi_podspec *run_spec;
	/* Planner-internal, of its PodGroup, taken with the gang's facts so
	 * that a cycle need not read the PodGroup: its minTaskMember entries,
	 * and its muster.dev/expected-runtime annotation (value id, 0 none). */
	uint8_t group_tasks;
	uint32_t group_runtime;
	/* Planner-internal, so that the gate (podgroup.c) reads neither the
	 * PodGroup nor the kept entry of each of many waiting gangs (each a
	 * cache miss at random): PLAN_GATE_* of its PodGroup, taken with the
	 * facts, and its kept entry's enqueued flag as the cycle found it. */
	uint8_t group_gate;
	uint8_t kept_enqueued;
	struct plan_block block; /* why it waits */
	/* Members held by scheduling gates (not members yet: view.c's
	 * plan__is_ours()), and the name id of one, for its message. */
	uint32_t gated, gated_name;
	/* A native PodGroup's topology constraint: level -1 none; the level
	 * of its key (a configured one, or one the table keeps for such
	 * constraints alone); past plan.nodes.nlevels when the table has no
	 * room for it (it fits nowhere); domain, once a member is bound or
	 * placed, where the rest must go. */
	struct policy_within within;
};

struct plan_bind {
	const struct kubeapi_pod *pod;
	uint32_t node; /* name id */
	uint32_t gang; /* index into plan.gangs */
	/* Its vGPU shares on the node's GPUs (plan.nodes), NULL for none:
	 * written on the pod before the binding (plan_bind_vgpu()). */
	const struct policy_held *held;
};

/* Evict pod, a member of gang `victim`, to make room for `preemptor`
 * (indexes into plan.gangs). Every bound member of a victim is listed. */
struct plan_evict {
	const struct kubeapi_pod *pod;
	uint32_t node; /* name id */
	uint32_t victim, preemptor;
	uint8_t whole; /* the victim gang goes whole (else this member alone) */
};

struct plan_stats {
	size_t nodes, pods, gangs, pending_gangs, admitted_gangs, bound_pods;
	size_t placement_tries, memo_hits;
	/* Gangs that preempted, their victims, reservations held, gangs placed
	 * while a reservation stood, and the placements each search made. */
	size_t preemptions, victims, reservations, backfilled, preempt_tries, reserve_tries;
	size_t arena_bytes;
	/* The pod table (plan_memory.pods): pods read again this cycle
	 * (every pod when it was rebuilt), and with check_state the records
	 * that differed from a rebuild, and the gangs whose kept facts
	 * differed from fresh ones (0: none). */
	size_t pods_read, state_mismatches;
	uint8_t pods_rebuilt;
	/* The pod table's late records were put back among their gangs'
	 * (podtab.c). */
	uint8_t pods_regrouped;
	/* The node table was built from the nodes (else copied from the one
	 * kept: plan_memory.base). */
	uint8_t nodes_built;
	/* Nodes whose bound pods were counted again (all of them when the
	 * counted table was not kept: plan_memory.counted). */
	size_t nodes_recounted;
	/* Waiting pods filed from their gangs' kept runs, their records not
	 * read (view.c); of them, pods that came late and were not checked
	 * for age order again, their run found in order when kept. */
	size_t pods_from_runs, late_from_runs;
	/* The forecast: gangs given an expected start, the moments it
	 * played, and the placements it tried (its reservations' searches
	 * included). */
	size_t forecast_gangs, forecast_moments, forecast_tries;
};

/* A reservation held this cycle (see backfill.h): gang `gang` starts at
 * start_s (PLAN_NEVER: unknown), member k (spec[k]) on node table index
 * at[k]. */
struct plan_reservation {
	uint32_t gang;
	int64_t start_s;
	uint32_t nmembers;
	const struct kubeapi_podspec *const *specs;
	const uint32_t *at;
};

/* What the planner keeps from one cycle to the next, outside any arena.
 * The caller owns it (zeroed at first) and passes it to every
 * plan_cycle(), which reads and updates it; nothing else changes it but
 * plan_hold_drop() (a refused eviction). Freed by plan_memory_free(). */
struct plan_memory {
	/* Preemptor gang key -> struct plan_hold *: the room held for it
	 * while its victims end. */
	struct idmap holds;
	/* The last number given to a gang first seen waiting (kept with
	 * the gang: plan_kept_gang.seen). */
	uint64_t seen_seq;
	/* The gated pods of Muster's in PodGroups that a cycle's pod walk
	 * met, filed into their gangs after it (view.c); the room is kept. */
	struct plan_gated {
		uint64_t gang;
		uint32_t name;
	} * gated;
	size_t ngated, cap_gated;
	/* What a cycle needs of every pod, in a dense array kept current
	 * from plan_input.pod_changes (policy/podtab.c): a cycle walks it
	 * instead of every pod's struct and the lookups each pod costs. */
	struct plan_podtab {
		struct plan_pod *v; /* records; one whose pod is NULL is a hole */
		uint64_t *keys;     /* keys[k]: record k's pod's key (0: a hole) */
		size_t n, cap, holes;
		/* Records marked PLAN_POD_LATE since the table was last put in
		 * gang order, holes among them included; tail: where the ones
		 * appended since begin (every record from there on is late). */
		size_t late, tail;
		uint64_t schedulers; /* a hash of the schedulerNames it was read for */
		uint32_t *names;     /* the node table's names when node indexes were kept */
		size_t nnames;
		/* Counts the times records moved (a read in full, a squeeze):
		 * a gang's kept run of records (view.c) names where it starts
		 * in one layout, and lives in `runs`, emptied when the layout
		 * changes (garbage: bytes of runs since replaced). */
		uint64_t layout;
		struct arena runs;
		size_t runs_garbage;
		/* The runs the last walk used or kept, in the order of their
		 * starts, for the layout order_layout: the next walk meets each
		 * where it starts and reads none of its records (view.c). The
		 * walk makes the next list in `next`, then swaps the two. */
		struct plan_kept_run **order, **next;
		size_t norder, nnext, cap_order, cap_next;
		uint64_t order_layout;
		uint8_t built;
	} pods;
	/* Every gang met lately: key -> struct plan_kept_gang * (gangs.c),
	 * its record index in the cycle it was last met (cycle), the facts
	 * its record is made from, kept while nothing they hang on changed
	 * (epoch; config and levels: what the facts were worked out under),
	 * and when it was first seen waiting. */
	struct plan_gangs_kept {
		struct idmap map;
		uint64_t epoch, cycle, config, levels;
		/* The epoch the last cycle started with; forgot: this cycle's
		 * is another (what the pod table keeps of gangs is stale). */
		uint64_t last_epoch;
		uint8_t forgot;
	} gangs;
	/* The node store's keys in slot order when the nodes were last put
	 * in name order, and that order (slot[k]: the store position of the
	 * k-th name): kept while the store holds the same keys in the same
	 * slots (policy/view.c). */
	struct plan_nodeorder {
		uint64_t *keys;
		uint32_t *slot;
		size_t n;
	} nodes;
	/* The node table as built from the nodes, before any pod is counted
	 * into it, in an arena of its own: each cycle starts from a copy
	 * (policy_nodes_clone()) while the nodes, the configuration and the
	 * table's level keys are as they were (sig; valid: built whole). */
	struct plan_nodebase {
		struct arena arena;
		struct policy_nodes t;
		uint64_t sig, gen; /* gen: counts its builds */
		uint8_t valid;
	} base;
	/* The base's clone with every bound pod counted out of its node (not
	 * the assumed ones: those the cycle counts into its own copy), kept
	 * across cycles (policy/view.c): each cycle counts again only the
	 * nodes named in `names`, those of pods the pod table read again
	 * since (podtab.c), from the base's rows. Valid for the base of
	 * build base_gen; over: names ran over their cap, count them all. */
	struct plan_counted {
		struct arena arena;
		struct policy_nodes t;
		uint8_t *dirty; /* per node: counted again this cycle */
		uint32_t *names;
		size_t nnames, cap_names;
		uint64_t base_gen;
		uint8_t valid, over;
	} counted;
	/* The forecast (policy/forecast.c): its room for one moment,
	 * emptied for the next; when it last ran, the CPU time the cycles
	 * since set aside for it, how far it looked, and what it said (gang
	 * key -> expected start), which the cycles until the next one give
	 * the gangs still waiting. */
	struct plan_forecast_kept {
		struct arena scratch;
		int64_t last_s, credit_ns, until_s;
		uint64_t *keys;
		int64_t *starts;
		size_t n, cap;
		uint8_t ran, cut;
	} forecast;
};

/* One cycle's results (in its arena, replaced by the next cycle). */
/* A bound pod and when the planner expects it to end (PLAN_NEVER: no
 * runtime): its start (status.startTime, else creation) plus its
 * runtime, as the timeline counts it. */
struct plan_end {
	const struct kubeapi_pod *pod;
	int64_t end_s;
};

struct plan {
	struct arena arena;
	struct policy_nodes nodes;
	struct plan_gang *gangs;
	size_t ngangs;
	struct plan_bind *binds;
	size_t nbinds;
	struct plan_evict *evictions; /* decided this cycle: send each once */
	size_t nevictions;
	struct plan_stats stats;
	struct plan_reservation *resv; /* this cycle's reservations */
	size_t nresv;
	/* The forecast whose answers the gangs carry: when it ran (0: none
	 * has), the last moment it played, and whether a budget or the
	 * horizon stopped it before every gang it took had an answer. */
	int64_t forecast_at_s, forecast_until_s;
	uint8_t forecast_cut;
	/* With plan_input.ends: every bound pod of the cycle's view. */
	struct plan_end *ends;
	size_t nends;
};

/** Forget the hold of gang `key` (its victims' eviction was refused): it
 *  is planned afresh next cycle. */
void plan_hold_drop(struct plan_memory *keep, uint64_t key);

/** Free everything keep holds. */
void plan_memory_free(struct plan_memory *keep);

/** The key of a gang: its PodGroup (ns, name) with bit 63 clear, or a
 *  single pod's (ns, name) with bit 63 set, so the two never collide. */
uint64_t plan_gang_key(uint32_t ns, uint32_t name, int single);

/** Run one cycle into p (whose previous result it replaces), with and
 *  updating the memory of the cycles before, keep. 0, -ENOMEM. A p that
 *  failed is only for the next cycle or plan_free(): its node table's
 *  rows may never have been counted. */
int plan_cycle(struct plan *p, const struct plan_input *in, struct plan_memory *keep);

/**
 * Bind b's vGPU shares as the protocol names them (the GPU's UUID id)
 * into out[0..cap): how many (0 for none), with *ncontainers the
 * containers that ask; -E2BIG past cap. Valid until the next cycle.
 */
int plan_bind_vgpu(const struct plan *p, const struct plan_bind *b, struct kubeapi_vgpu_hold *out,
                   size_t cap, uint32_t *ncontainers);

/** Free everything p holds (not the memory). */
void plan_free(struct plan *p);

#endif /* MUSTER_POLICY_PLAN_H */
