/*
 * The cycle planner's working state, shared by its parts:
 *
 *   podtab.c    the pod table kept across cycles, changed by the input's changes
 *   view.c      the node table, usage counted from what runs, pending members
 *   gangs.c     gang formation from PodGroups (either dialect) or single pods
 *   plan.c      the admission loop
 *   memo.c      the failure memo: placements that failed, per static fit
 *   timeline.c  runtimes, the timeline of ends, reservations (backfill.h)
 *   victims.c   who may be preempted (preempt.h's candidates)
 *   holds.c     preemption: asking preempt.h, evicting, holding the room
 *   podgroup.c  what a PodGroup asks beyond minMember: the minResources
 *               gate (enqueue) and minTaskMember
 *
 * Internal to the planner's files in policy/.
 */
#ifndef MUSTER_POLICY_PLAN_INTERNAL_H
#define MUSTER_POLICY_PLAN_INTERNAL_H

#include "policy/backfill.h"
#include "policy/plan.h"
#include "policy/preempt.h"
#include "policy/words.h"

/* A pod as the pod table keeps it (podtab.c): what a cycle reads of it,
 * so that counting the pods reads no pod struct and no map but for the
 * rare cases (finished members of a Volcano task, vGPU shares, assumed
 * binds, native PodGroups). 40 bytes; the pod's key is beside it, in
 * plan_podtab.keys, so that finding the changed pods reads 8 bytes a
 * record, not the record. */
struct plan_pod {
	const struct kubeapi_pod *pod; /* NULL: a hole (the pod is gone) */
	const struct kubeapi_podspec *spec;
	uint64_t gang;  /* its gang's key: a pod of ours not in a native PodGroup; else 0 */
	uint32_t node;  /* spec.nodeName's id, 0 while unbound */
	uint32_t index; /* that node's index in the table, PLAN_POD_NO_NODE, or _STALE */
	int32_t priority;
	uint8_t phase, flags;
	/* A bound pod of no PodGroup: its queue, as last worked out when
	 * flags has PLAN_POD_QUEUED (view.c). */
	int16_t queue;
};
_Static_assert(sizeof(struct plan_pod) == 40, "a pod record is 40 bytes (podtab.c's memory)");
#define PLAN_POD_NO_NODE UINT32_MAX       /* its node is not in the table */
#define PLAN_POD_STALE   (UINT32_MAX - 1) /* look it up */
enum {
	PLAN_POD_OURS = 1,     /* its schedulerName is Muster's */
	PLAN_POD_GROUP = 2,    /* it names a PodGroup */
	PLAN_POD_DELETING = 4, /* it has a deletion timestamp */
	PLAN_POD_VGPU = 8,     /* it holds vGPU shares by annotation */
	PLAN_POD_TASK = 16,    /* it names a Volcano task */
	PLAN_POD_RUNTIME = 32, /* it has the annotation muster.dev/expected-runtime */
	/* Added after the table was last read in full: its gang's records
	 * may not be in age order (not a fact of the pod: a rebuild's
	 * records lack it, and the check against one ignores it). */
	PLAN_POD_LATE = 64,
	/* queue is this pod's: kept until the record is read again or the
	 * kept gangs' facts are all forgotten (not a fact of the pod either). */
	PLAN_POD_QUEUED = 128,
};
/* Record flags that say where the table stands, not what the pod is. */
#define PLAN_POD_KEPT_FLAGS (PLAN_POD_LATE | PLAN_POD_QUEUED)

/* A bound (or assumed) pod on a node of the table. */
struct plan_bound {
	const struct kubeapi_pod *pod;
	const struct kubeapi_podspec *spec; /* the pod's (its record's: no pod read) */
	const struct policy_held *held;     /* its vGPU shares there, or NULL */
	uint32_t node;                      /* index into the node table */
	uint32_t gang;   /* index into plan.gangs, or UINT32_MAX (not Muster's) */
	uint32_t next;   /* the gang's next bound pod + 1, or 0 */
	int16_t queue;   /* the queue it is charged to, or QUEUE_NONE */
	uint8_t runtime; /* the pod has its own runtime annotation (PLAN_POD_RUNTIME) */
};

/* The room held for a preemptor while its victims end (plan_memory.holds):
 * each victim a gang, whole (pod 0) or one member of it (that pod's key). */
struct plan_hold {
	int64_t since_s;
	uint32_t nvictims;
	struct plan_victim {
		uint64_t gang, pod;
	} victim[];
};

/* How long a hold waits for its victims before it is planned afresh: a
 * pod's default grace period is 30 s, so this is ten of them. */
#define PLAN_HOLD_TIMEOUT_S 300

/* Preemptors tried per cycle at most (each a search within preempt.h's
 * budget); a preemptor left without its turn waits for the next cycle. */
#define PLAN_PREEMPTORS_PER_CYCLE 16

/* Preemption (holds.c, victims.c): the preemptors tried this cycle,
 * preempt.h's budget, the one candidate array, and each bound gang's
 * plain view for preempt.h (built on first use; req NULL until then). */
struct plan_preempt_state {
	size_t preemptors;
	struct preempt_budget budget;
	struct preempt_cand *cand_buf;
	size_t cap_cand;
	struct preempt_cand *view; /* per gang */
};

/* PodGroup gates (podgroup.c): finished members that name a Volcano
 * task (minTaskMember counts them), and the allocatable of ready,
 * schedulable nodes per model resource for the minResources gate, built
 * when first needed. */
struct plan_group_state {
	struct plan_task_done *done;
	size_t ndone, cap_done;
	int64_t *capacity;
};

/* Slots of plan_run.runtimes: a cluster's distinct runtime values are few. */
#define PLAN_RUNTIME_MEMO 64
#define PLAN_SLOT_MEMO    64

struct plan_run {
	struct plan *p;
	const struct plan_input *in;
	struct plan_memory *keep; /* across cycles */
	struct intern *strs;
	const struct config *cfg;
	struct queue_tree *tree;
	unsigned nslots;
	size_t nres_cfg;
	int res_map[CONFIG_MAX_SLOTS]; /* config resource -> model resource */
	uint32_t queue_label;          /* id of "muster.dev/queue" */
	uint32_t runtime_key;          /* id of "muster.dev/expected-runtime" */
	uint32_t preemptible_key;      /* id of "muster.dev/preemptible" */
	uint32_t false_value;          /* id of "false" */
	uint32_t phase_inqueue;        /* id of "Inqueue" */
	uint32_t phase_ran[5];         /* ids of the phases of a PodGroup that has run (setup) */
	size_t cap_gangs;              /* room in p->gangs */
	struct policy_fitcache fits;
	struct idmap memo; /* static fit -> struct memo */
	/* Pods of ours per spec blob, counted by plan__count_pods() for the
	 * mix (shares.c) when some node has registered GPUs. */
	struct idmap mix_specs;
	size_t cap_binds, cap_evictions;
	/* admit()'s room for a placement's nodes and shares, reused turn
	 * after turn (most turns end on the failure memo and use none). */
	uint32_t *turn_out;
	const struct policy_held **turn_held;
	size_t cap_turn;
	struct plan_bound *bound;
	size_t nbound, cap_bound;
	/* The bound pods that may have an end, ascending indexes into
	 * bound: all the timeline reads of them up front (timeline.c);
	 * the rest are ends without an estimate, added on first need. In a
	 * cluster that gives no runtimes (no queue default, no annotation,
	 * no activeDeadlineSeconds), none. */
	uint32_t *may_end;
	size_t nmay_end, cap_may_end;
	/* Some queue has a defaultRuntime: every pod may have an end. */
	uint8_t queue_runtimes;
	/* Assumed pods as plan__count_pods() met them: counted out of the
	 * cycle's table once it has the kept counts (view.c). */
	struct plan_assumed {
		const struct kubeapi_podspec *spec;
		const struct policy_held *held;
		uint32_t node; /* index into the node table */
	} * assumed;
	size_t nassumed, cap_assumed;
	/* Binds made before the timeline was built (timeline.c): those with
	 * an end are in it. */
	size_t timed_binds;
	/* The gangs in the order the cycle gave them turns (indexes into
	 * plan.gangs): the forecast's order; and the thread's CPU time when
	 * the cycle began, its budget's measure (forecast.c). */
	uint32_t *turns;
	size_t nturns;
	int64_t cpu0_ns;
	/* Runtime annotation values parsed this cycle (timeline.c), direct
	 * mapped by value id: a slot whose value is 0 is empty. */
	struct plan_runtime_memo {
		uint32_t value;
		int64_t s;
	} runtimes[PLAN_RUNTIME_MEMO];
	/* Each spec's slot vector for one pod on a node of one flavor, as
	 * worked out this cycle (view.c's add_pods()), direct mapped
	 * by spec: a slot whose spec is NULL is empty. Reached through a
	 * pointer (PLAN_SLOT_MEMO slots in the arena), so that the parts
	 * that hold the run read-only fill it too. */
	struct plan_slot_memo {
		const struct kubeapi_podspec *spec;
		uint16_t flavor;
		int64_t *v; /* the slots' amounts (r->nslots), in the arena */
	} * slot_memo;
	uint8_t preemption;   /* some queue may preempt: every bound gang a record */
	uint8_t quota_failed; /* the last plan__place failed on quota, not room */
	uint8_t holding;      /* plan__holds() runs: plan__place() skips the memo */
	/* Each part's own state: none reads another's. */
	struct backfill bf;            /* backfill.h, fed by timeline.c */
	struct plan_preempt_state pre; /* holds.c, victims.c */
	struct plan_group_state grp;   /* podgroup.c */
};

struct plan_task_done {
	uint32_t gang, task;
};

/* What a gang's record takes, when first made in a cycle, from its
 * PodGroup, the pod it is first met with, the queues and the priority
 * classes (gangs.c). */
struct plan_gang_facts {
	const struct kubeapi_podgroup *group;
	int64_t submitted_s;
	int queue;
	int32_t priority;
	uint32_t min_member;
	int within_level;
	uint32_t group_runtime;
	uint8_t fixed_priority, enqueued, ran, group_tasks, group_gate;
};
/* What the gate needs of a gang's PodGroup (plan_gang.group_gate). */
enum {
	PLAN_GATE_MIN_RESOURCES = 1, /* it has minResources */
	PLAN_GATE_INQUEUE = 2,       /* a Volcano PodGroup whose phase is Inqueue */
};

/* A gang's waiting members as the walk last filed them from one run of
 * pod records (view.c), so that a cycle files them again without reading
 * those records: the pods in order, the one spec they share, the highest
 * priority and whether one has its own runtime; where the run starts,
 * and the gangs' epoch. In the pod table's arena of runs (plan_podtab),
 * in the order the walk kept them: a steady cycle reads them in a row. */
struct plan_kept_run {
	const struct kubeapi_podspec *spec;
	uint64_t epoch;
	size_t start;
	uint32_t n, cap;
	int32_t priority;
	uint8_t runtime, late; /* late: one came late (PLAN_POD_LATE) */
	/* A late run found in age order when kept: its pods need no check
	 * while it stands (view.c). */
	uint8_t ordered;
	/* Its gang's key and kept entry (NULL once the entry is freed): a
	 * walk that meets the run where it starts (plan_podtab.order) has
	 * its gang without a probe of the kept map. */
	uint64_t key;
	struct plan_kept_gang *entry;
	const struct kubeapi_pod *pods[];
};

/* A gang as plan_memory.gangs keeps it: the record it has this cycle
 * (cycle, index), its facts, valid while epoch is the memory's (0: none
 * kept: worked out afresh when next met), the last cycle anything asked
 * for it (met), when Muster first saw it waiting (seen: the queue's
 * tie-break between equal submission times; 0 not waiting), and whether
 * its PodGroup passed the minResources gate and has not started yet
 * (enqueued: the decision stands before the watch shows the PodGroup
 * Inqueue, podgroup.c). A gang absent from a cycle comes back with
 * neither (new_gang()). */
struct plan_kept_gang {
	struct plan_gang_facts facts;
	uint64_t epoch, cycle, met, seen;
	uint32_t index;
	uint8_t enqueued;
	/* Room its pending members took last (view.c): the first size of
	 * the next cycle's list, so a gang's list is not grown pod by pod. */
	uint32_t pending_room;
	/* "gang ns/name: " (plan_words_prefix()), made when first needed:
	 * what the memo's answers are said after (plan.c). */
	char *prefix;
	uint32_t prefix_len;
	/* Its waiting members as the walk last filed them from one run of
	 * pod records (view.c): NULL none, and none unless run_layout is the
	 * pod table's (the arena it was in is gone). Dropped when a record
	 * of it changes (the gang is touched) or a member of the gang is
	 * bound (a bound pod is assumed before its record changes). */
	struct plan_kept_run *run;
	uint64_t run_layout;
};

/* gangs.c: gang formation, step 2 of plan.h. plan__gang_of: the gang of
 * a pod of Muster's, made on first sight (NULL: out of memory);
 * plan__gang_of_key the same for a pod whose gang key is known (its
 * record's), made from the kept facts when they stand, without reading
 * the pod or its PodGroup. */
int plan__group_gangs(struct plan_run *r);
struct plan_gang *plan__gang_of(struct plan_run *r, const struct kubeapi_pod *pod);
/* The gang of key made this cycle, or NULL: never makes one. */
struct plan_gang *plan__gang_this_cycle(struct plan_run *r, uint64_t key);
struct plan_gang *plan__gang_of_key(struct plan_run *r, uint64_t key,
                                    const struct kubeapi_pod *pod);
/* The same for the gang of kept entry e (NULL: none), keyed key. */
struct plan_gang *plan__gang_of_entry(struct plan_run *r, struct plan_kept_gang *e, uint64_t key,
                                      const struct kubeapi_pod *pod);
/* Before the gangs are made: a new cycle for the kept gangs, and what
 * the input says changed made to forget their facts (all of them when it
 * does not say). After the cycle: forget gangs not met lately (rc: the
 * cycle's result; a failed one forgets every fact). */
int plan__gangs_start(struct plan_run *r);
void plan__gangs_end(struct plan_run *r, int rc);
/* g's entry's prefix, made if need be: 0 or -ENOMEM. */
int plan__gang_prefix(struct plan_run *r, struct plan_gang *g);
/* Everything plan_memory.gangs holds, freed. */
void plan__gangs_free(struct plan_gangs_kept *m);
/* Gang key's facts may be stale (a member changed): they, and its kept
 * run (view.c), are dropped. */
void plan__gang_touched(struct plan_run *r, uint64_t key);
/* The queue of single pod `pod` (gang key), bound: from its kept facts
 * when they stand, without reading the pod. */
int plan__single_queue(struct plan_run *r, uint64_t key, const struct kubeapi_pod *pod);
int32_t plan__pod_priority(const struct kubeapi_pod *pod);
/* The queue of a pod in PodGroup pg (or alone, pg NULL), or of PodGroup
 * pg before it has pods (pod NULL), or QUEUE_NONE with res->reason
 * saying why. */
int plan__queue_of(const struct plan_run *r, const struct kubeapi_podgroup *pg,
                   const struct kubeapi_pod *pod, struct queue_resolution *res);

/* podtab.c: bring the pod table (plan_memory.pods) up to date with the
 * input: read again the pods it names as changed, or every pod. Then
 * plan__podtab_nodes() once the node table is built: whether the node
 * indexes the records keep still hold. Each 0 or -ENOMEM. */
int plan__podtab_sync(struct plan_run *r);
int plan__podtab_nodes(struct plan_run *r, bool *still);
/* With plan_input.check_state: records that differ from a rebuild. */
int plan__podtab_check(struct plan_run *r, size_t *mismatches);
/* The pods on node `name` (a name id) changed: the kept counts of its
 * node are made again next (view.c). */
void plan__node_touched(struct plan_run *r, uint32_t name);
/* The key of the gang a pod of ours belongs to, unless its PodGroup is
 * native (a basic one makes each pod a gang: gangs.c looks). */
uint64_t plan__gang_key_of(const struct kubeapi_pod *pod);

/* Entry e's kept run of waiting records dropped, its room counted as
 * garbage in the pod table's arena of runs (view.c). */
void plan__run_drop(struct plan_run *r, struct plan_kept_gang *e);

/* view.c: the cycle's view, steps 1 and 3 of plan.h. Each 0 or -ENOMEM. */
int plan__build_nodes(struct plan_run *r);
int plan__count_pods(struct plan_run *r);
int plan__collect_pending(struct plan_run *r);
/* The order of a gang's pending pods: older first, then by name id. */
int plan__by_age(const struct kubeapi_pod *x, const struct kubeapi_pod *y);
/* Add pod spec s's requests on a node of flavor f to the slot vector req. */
void plan__add_pod(const struct plan_run *r, int64_t *req, const struct kubeapi_podspec *s,
                   uint16_t f);
/* What pods[0..n) ask together, unplaced, per queue slot, into req. */
void plan__request(const struct plan_run *r, int64_t *req, const struct kubeapi_pod *const *pods,
                   size_t n);
/* Add the amounts e[0..n) (a pod's requests, a PodGroup's minResources),
 * on a node of flavor f (POLICY_NO_FLAVOR: not placed yet), to the slot
 * vector req. O(configured resources x n). */
void plan__add_amounts(const struct plan_run *r, int64_t *req, const struct kubeapi_res *e,
                       size_t n, uint16_t f);

/* memo.c: a placement that failed for n members of spec (fit: the nodes
 * it may use), and the answer for a later gang that asks at least as
 * much (NULL: try it). */
struct plan_memo_shape {
	const struct kubeapi_podspec *spec;
	uint32_t n;
	int64_t runtime_s;
	const char *message; /* what follows "gang ns/name: " */
	struct plan_block block;
};
const struct plan_memo_shape *plan__memo_find(struct plan_run *r, const struct policy_fit *fit,
                                              const struct kubeapi_podspec *spec, size_t n,
                                              int64_t runtime_s);
void plan__memo_add(struct plan_run *r, const struct policy_fit *fit,
                    const struct kubeapi_podspec *spec, size_t n, int64_t runtime_s,
                    const char *message, const struct plan_block *block);

/* plan.c */
const char *plan__str(const struct plan_run *r, uint32_t id);

/* Gang g waits on quota (why: PLAN_WHY_QUOTA or PLAN_WHY_ENQUEUE): its
 * state and block say where; f gets the facts for its message. The
 * slot's name is written into slot[0..160). */
void plan__quota_wait(struct plan_run *r, struct plan_gang *g, const struct queue_verdict *v,
                      const int64_t *req, enum plan_why why, struct plan_facts *f, char slot[160]);
/* g->message from facts f (words.c); f's gang names are filled here. */
void plan__say(struct plan_run *r, struct plan_gang *g, struct plan_facts *f);
/* g->message whole, where the failure memo left its words alone (what
 * reads a message in the cycle asks this first). */
void plan__message(struct plan_run *r, struct plan_gang *g);
/* A copy of s in the cycle's arena ("" when out of memory). */
const char *plan__strdup(struct plan_run *r, const char *s);
/* Start loading gang key's slot in the kept map (a walk's lookahead),
 * and with group set its PodGroup's slots, which a gang's first sight
 * reads (find_group()). */
void plan__gang_prefetch(const struct plan_run *r, uint64_t key, bool group);
/* Start loading the PodGroup of a gang keyed key, whose slot
 * plan__gang_prefetch() asked for earlier: use_group() reads it. */
void plan__group_prefetch(const struct plan_run *r, uint64_t key);
long plan__gang_index(const struct plan_run *r, uint64_t key);
/* Place pods[0..n), a slice of g->pending (g's facts of its pending
 * members stand for theirs), whole: see plan.c. */
int plan__place(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *const *pods,
                size_t n, uint32_t *out, const struct policy_held **held);
/* Room for n members' nodes and shares in r->turn_out and r->turn_held
 * (the shares cleared), reused turn after turn: 0 or -ENOMEM. */
int plan__turn_room(struct plan_run *r, size_t n);
int plan__add_binds(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *const *pods,
                    size_t n, const uint32_t *out, const struct policy_held *const *held);

/* vGPUs (shares.c). The shares pod holds on node index i: a bound pod's
 * from its annotation, an assumed one's from the run layer. 0 or
 * -ENOMEM. */
int plan__held_of(struct plan_run *r, const struct kubeapi_pod *pod, size_t i,
                  const struct policy_held **out);
/* Whether pod is Muster's to plan: its schedulerName is one of the
 * input's (plan__names_us) and it has no scheduling gates. */
bool plan__is_ours(const struct plan_run *r, const struct kubeapi_pod *pod);
bool plan__names_us(const struct plan_run *r, const struct kubeapi_pod *pod);
/* The recent mix of requests, for the placement's fragmentation score:
 * every pod of ours, pending or bound, once there are registered GPUs.
 * plan__mix_count() counts `pods` pods of ours of one spec, the oldest
 * created at first_s (unix), as plan__count_pods() meets them (so
 * that the pods are walked once), plan__mix() then builds the mix. Each
 * 0 or -ENOMEM. */
int plan__mix_count(struct plan_run *r, const struct kubeapi_podspec *spec, size_t pods,
                    int64_t first_s);
/* Is there a mix to count (some node has registered GPUs)? Else the walk
 * reads no pod for it. Inline: the walk asks it of every pod of ours. */
static inline bool plan__mixing(const struct plan_run *r)
{
	const struct policy_nodes *t = &r->p->nodes;

	return t->gpu_first[t->n] != 0;
}
int plan__mix(struct plan_run *r);
/* The specs of pods[0..n), a slice of g->pending, in the arena (NULL:
 * out of memory): no pod is read when g's pending share one spec. */
const struct kubeapi_podspec **plan__specs(struct plan_run *r, const struct plan_gang *g,
                                           const struct kubeapi_pod *const *pods, size_t n);

/* timeline.c: runtimes, ends, a waiting gang's reservation */
int64_t plan__pod_start(const struct kubeapi_pod *pod);
int64_t plan__runtime(struct plan_run *r, struct plan_gang *g);
/* When g would end if it started now (PLAN_NEVER: no runtime). */
int64_t plan__end(struct plan_run *r, struct plan_gang *g);
int plan__reserve(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *const *pods,
                  size_t n);
/* The timeline of ends in r->bf, built if it is not yet: 0 or -ENOMEM. */
int plan__timeline(struct plan_run *r);
/* plan.ends, for plan_input.ends: 0 or -ENOMEM. */
int plan__publish_ends(struct plan_run *r);

/* forecast.c: step 6, after the turns (out of memory, it is dropped and
 * the cycle stands). plan__cpu_ns: the calling thread's CPU time, its
 * budget's clock. */
void plan__forecast(struct plan_run *r);
int64_t plan__cpu_ns(void);

/* podgroup.c */
bool plan__group_ran(const struct plan_run *r, const struct kubeapi_podgroup *pg);
int plan__enqueue(struct plan_run *r);
int plan__task_done(struct plan_run *r, const struct plan_gang *g, const struct kubeapi_pod *pod);
bool plan__tasks_short(struct plan_run *r, struct plan_gang *g);
uint32_t plan__task_order(struct plan_run *r, struct plan_gang *g, uint32_t need);

/* victims.c: the candidates of preemptor g asking req, in *out (the
 * cycle's arena) in preempt.h's cost order. 0 or -ENOMEM. */
int plan__candidates(struct plan_run *r, struct plan_gang *g, const int64_t *req,
                     struct preempt_cand **out, size_t *nout);
/* Bound gang `gang` as preempt.h sees it, or NULL when out of memory. */
const struct preempt_cand *plan__victim_view(struct plan_run *r, uint32_t gang);
/* Its member at r->bound[b - 1] alone (part b), or NULL when out of
 * memory. Built afresh each call, in the cycle's arena. */
const struct preempt_cand *plan__member_view(struct plan_run *r, uint32_t gang, uint32_t b);
/* Does gang v's PodGroup let preemption take its members one by one? */
bool plan__by_member(const struct plan_gang *v);
/* Mark the gangs never to be victims (protected_), once a cycle. */
void plan__protect(struct plan_run *r);

/* holds.c */
int plan__holds(struct plan_run *r);
int plan__preempt(struct plan_run *r, struct plan_gang *g, const struct kubeapi_pod *const *pods,
                  size_t n);

#endif /* MUSTER_POLICY_PLAN_INTERNAL_H */
