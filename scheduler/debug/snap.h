/*
 * What the debug API and /metrics show: a copy of the last cycle's
 * result, taken right after the cycle.
 *
 * Why a copy: the plan points into the cache (pods, nodes, interned
 * strings), and the cache changes between cycles as watch events arrive;
 * a request served between two cycles must not follow those pointers.
 * The copy holds plain values and its own strings, in an arena of its
 * own, replaced whole by the next one.
 *
 * Cost: O(gangs x slots + nodes x resources + pending pods): 10.7 ms of
 * CPU and 8 MiB for 10,000 waiting gangs (32,000 pods) on 5,000 nodes
 * (make bench-plan: snap_cpu_ms), about a tenth of that cycle. So it is
 * taken only with a debug address, and at most once a second, on the
 * planner's thread right after its cycle (scheduler/run.c).
 *
 * Used by the daemon (scheduler/), which owns the state it reads.
 */
#ifndef MUSTER_SCHEDULER_DEBUG_SNAP_H
#define MUSTER_SCHEDULER_DEBUG_SNAP_H

#include <stdint.h>

#include "base/arena.h"
#include "policy/plan.h"

struct snap_gang {
	const char *ns, *name;
	const char *message; /* NULL when none */
	uint8_t kind;        /* 0 PodGroup, 1 Volcano PodGroup, 2 single pod, 3 scheduling.k8s.io */
	uint8_t state;       /* enum plan_state */
	uint8_t reserved;
	uint8_t forecast; /* expected_start_s is the forecast's */
	int queue;        /* tree node, or QUEUE_NONE */
	int32_t priority;
	uint32_t min_member, bound, succeeded, npending;
	uint32_t tried;                    /* 0 not tried this cycle */
	uint32_t position, queue_position; /* 1-based among listed gangs; 0 not listed */
	int64_t created_s, expected_start_s;
	int64_t *req; /* nslots */
	struct plan_block block;
	uint32_t nresv_nodes;
	uint32_t *resv_nodes; /* indexes into snap.nodes */
	const char **pods;    /* pending members' names */
};

/* A GPU the vGPU device plugin registered, and what is on it. */
struct snap_gpu {
	const char *uuid;
	uint32_t memory, split; /* MiB; pods that may share it */
	uint32_t used_num, used_mem, used_core;
	uint8_t healthy;
};

struct snap_node {
	const char *name;
	uint8_t ready, schedulable;
	int64_t *alloc, *used, *reserved; /* nres each */
	const char **topo;                /* nlevels values, NULL when unlabelled */
	uint32_t nreserved_for;
	uint32_t *reserved_for; /* gang indexes */
	uint32_t ngpus;         /* registered GPUs (none: whole-GPU accounting) */
	struct snap_gpu *gpus;
};

struct snap_queue {
	const char *name;
	int parent; /* tree node, -1 for the root */
	uint8_t cohort;
	int64_t weight;
	double share;
	uint32_t pending, admitted;
	int64_t *nominal, *borrowing, *lending, *usage, *borrowed, *lent; /* nslots each */
	int64_t *remembered; /* fair sharing's memory of usage, rounded; nslots */
};

struct snap {
	struct arena arena;
	uint64_t cycle;
	int64_t time_s;
	/* Resources: the model's, for nodes; the configuration's slots, for
	 * queues and gang requests. */
	unsigned nres;
	const char **res_name;
	unsigned nslots;
	const char **slot_name; /* "nvidia.com/gpu" or "nvidia.com/gpu@h100" */
	const char **slot_res;  /* the resource name of each slot */
	unsigned nlevels;
	const char **level_name;   /* topology label keys */
	struct snap_queue *queues; /* by tree node; 0 is the root */
	int nqueues;
	/* fairSharing.halfLife (0: no memory) and when the memory was last
	 * brought up to date (QUEUE_NO_TIME: not yet). */
	int64_t half_life_ms, remembered_at_s;
	struct snap_gang *gangs; /* waiting gangs in order (position 1 first) */
	size_t ngangs;
	/* The forecast the gangs' starts come from: when it ran (0: none),
	 * how far it looked, and whether a budget stopped it short of some
	 * gang (plan.forecast_*). */
	int64_t forecast_at_s, forecast_until_s;
	uint8_t forecast_cut;
	size_t admitted_gangs; /* with a member bound or binding */
	struct snap_node *nodes;
	size_t nnodes;
};

/* What a snapshot is taken of: the plan of the cycle just run, with the
 * configuration, queue set and model it ran on. */
struct snap_input {
	const struct plan *plan;
	struct queue_set *qs;
	const struct config *cfg;
	struct kubeapi_model *model;
	uint64_t cycle;
	int64_t now_s;
};

/** Replace *out with a copy of the cycle in s. 0 or -ENOMEM (then *out
 *  is unchanged). */
int snap_take(const struct snap_input *s, struct snap *out);

/** Free a snapshot's memory. */
void snap_free(struct snap *sn);

/** The amount v of resource `res` as a JSON number: cpu in cores, the
 *  rest as they are. */
double snap_amount(const char *res, int64_t v);

#endif /* MUSTER_SCHEDULER_DEBUG_SNAP_H */
