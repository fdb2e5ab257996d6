/*
 * The simulator's face: the planner (policy/plan.h), unchanged, driven by
 * a virtual clock over a cluster that lives only in memory. `muster
 * simulate` runs it over a trace of arrivals; the backfill scenarios'
 * tests (test/unit/policy/test_backfill.c) run every scenario through it.
 *
 *   world.c   the cluster: Nodes, PodGroups and Pods written as the API
 *             server would send them and read by kubeapi's own decoders,
 *             so the planner sees what it would see from a cache
 *   sim.c     the clock: arrivals and completions are events; at each,
 *             the pods that finished turn Succeeded (or Failed past a
 *             deadline), the arrivals are created Pending, and a cycle
 *             runs; its binds are applied at once (the pods bound and
 *             Running from now), and a cycle runs again at the same time
 *             until one binds nothing, as the watch of a bind brings one
 *   trace.c   arrivals from a CSV file (`muster simulate --trace`), each
 *             error at its FILE:LINE:COLUMN
 *   report.c  what a run comes to: waits per queue, utilisation, GPUs
 *             left idle while gangs waited
 *   replay.c  a snapshot of a live cluster played forward from when it
 *             was taken: what its waiting gangs would do under a queue file
 *   alibaba.c the Alibaba GPU trace by the FGD paper's protocol: pods
 *             arriving one by one, one cycle each, on vGPU nodes
 *   alloc.c   the paper's allocation ratio, shared with bench/alibaba_pack
 *   cli.c     `muster simulate`: a trace under one queue file or several,
 *             side by side
 *
 * Nothing here does I/O but reads of the trace, snapshot, node and pod
 * lists, and the command's output; only the command reads the wall clock
 * (--at's default). A gang runs exactly its runtime from its bind; nothing fails
 * but at a deadline; no preemption evicts (a run whose plan evicts says
 * so as a violation).
 */
#ifndef MUSTER_SIM_SIM_H
#define MUSTER_SIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "policy/plan.h"

/** Every simulated object's namespace: a queue that lists it takes the
 *  gangs that name no queue. */
#define SIM_NAMESPACE "sim"

/** A time that did not come (a gang that never started or ended). */
#define SIM_NO_TIME INT64_MIN

/** A node: 96 CPUs, 1 TiB, 110 pods and `gpus` whole GPUs (tainted
 *  nvidia.com/gpu, which every simulated pod tolerates), labelled with its
 *  hostname and, when rack is given, muster.dev/rack. */
struct sim_node {
	const char *name; /* DNS-1123, unique */
	const char *rack; /* or NULL */
	int64_t gpus;
};

/** What the planner is told of a gang's runtime. */
enum sim_declared {
	SIM_DECLARED_POD,      /* annotation muster.dev/expected-runtime on each pod */
	SIM_DECLARED_GROUP,    /* the same annotation on its PodGroup */
	SIM_DECLARED_DEADLINE, /* spec.activeDeadlineSeconds: the pod fails there */
	SIM_DECLARED_NONE,     /* nothing */
};

/** A gang: a scheduler-plugins PodGroup (minMember = pods) and its pods,
 *  each asking 1 CPU, 1 GiB and `gpus` GPUs. */
struct sim_gang {
	const char *name;  /* DNS-1123 label, unique */
	const char *queue; /* its PodGroup's label muster.dev/queue, or NULL */
	int64_t at_s;      /* arrival, seconds from the start */
	uint32_t pods;
	int64_t gpus;      /* per pod */
	int64_t runtime_s; /* what each pod really runs */
	enum sim_declared declared;
	/* The annotation's value as written (SIM_DECLARED_POD and _GROUP);
	 * the deadline's seconds (SIM_DECLARED_DEADLINE). */
	const char *declared_value;
	int64_t deadline_s;
};

/** What a run reports as it goes; every hook may be NULL. now_s counts
 *  from the start. */
struct sim_hooks {
	void (*arrived)(void *data, int64_t now_s, size_t gang);
	/* After each cycle, before its binds are applied: the plan, what
	 * the planner keeps (its forecast, say), and gang[i], the index of
	 * plan gang p->gangs[i] among the simulated gangs (-1: none). */
	void (*cycled)(void *data, int64_t now_s, uint64_t cycle, const struct plan *p,
	               const struct plan_memory *keep, const long *gang);
	/* node[k]: the index of member k's node. */
	void (*started)(void *data, int64_t now_s, size_t gang, const uint32_t *node);
	void (*ended)(void *data, int64_t now_s, size_t gang, bool failed);
	/* Something the planner must never do (bind a gang in part, bind a
	 * member twice, over-commit a node, evict), or a cycle that failed. */
	void (*violation)(void *data, int64_t now_s, const char *what);
	void *data;
};

struct sim_options {
	const struct config *cfg; /* outlives the run */
	const struct sim_node *nodes;
	size_t nnodes;
	const struct sim_gang *gangs;
	size_t ngangs;
	int64_t epoch_s; /* the unix time of second 0 */
	int64_t tick_s;  /* also plan every tick_s while a gang waits; 0: at events only */
	int64_t stop_s;  /* no event after this (0: 30 days) */
	/* The forecast (plan_input.forecast), unbounded in CPU, every
	 * forecast_every_s (0: every cycle); check_state: what the planner
	 * keeps, against a rebuild, every cycle (a mismatch is a violation). */
	bool forecast, check_state;
	int64_t forecast_every_s;
	struct sim_hooks hooks;
};

struct sim_result {
	int64_t *start_s, *end_s; /* per gang, SIM_NO_TIME when it did not */
	int64_t now_s;            /* where the clock stopped */
	uint64_t cycles;
	size_t violations;
};

/**
 * Run o to its end: until nothing is left to arrive or end, or stop_s.
 * Returns 0 and r (free it with sim_result_free()), -EINVAL (a node or
 * gang the decoders refuse, a gang larger than the cluster's GPUs, names
 * not unique), -ENOMEM, or a cycle's error (the run stops there; r holds
 * what came before).
 */
int sim_run(const struct sim_options *o, struct sim_result *r);
void sim_result_free(struct sim_result *r);

/* ---- traces (trace.c) ----------------------------------------------------- */

#define SIM_TRACE_MAX_BYTES  (256u << 20)
#define SIM_TRACE_MAX_GANGS  1000000
#define SIM_TRACE_MAX_ERRORS 20

/** Gangs read from a CSV file (trace.c says the format); each is told
 *  its runtime (SIM_DECLARED_POD). */
struct sim_trace {
	struct sim_gang *gangs;
	size_t ngangs;
	/* "FILE:LINE:COLUMN: message" (or "FILE: message"), the first
	 * SIM_TRACE_MAX_ERRORS, and how many more. */
	char **errors;
	size_t nerrors, dropped;
};

/** 0, or -EINVAL with every problem in t->errors, -ENOMEM. Free t with
 *  sim_trace_free() either way. */
int sim_trace_read(const char *path, struct sim_trace *t);
void sim_trace_free(struct sim_trace *t);

/* ---- what a run comes to (report.c) --------------------------------------- */

/** Waits of one queue's gangs, in seconds (started ones only). */
struct sim_queue_report {
	const char *queue; /* the gangs' queue label; NULL: no label */
	size_t gangs, started;
	int64_t mean, p50, p90, p99, max;
};

struct sim_report {
	struct sim_queue_report *queues; /* by name, unlabelled first */
	size_t nqueues;
	int64_t makespan_s; /* from the first arrival to the last end */
	/* GPU-seconds run over capacity x makespan, and the GPUs idle, on
	 * average, over the seconds some gang was waiting (stranded). */
	double utilisation, stranded_gpus;
	int64_t waiting_s; /* seconds with at least one gang waiting */
};

/** What run r of options o comes to. O(gangs log gangs). 0 or -ENOMEM;
 *  free with sim_report_free(). */
int sim_report(const struct sim_options *o, const struct sim_result *r, struct sim_report *out);
void sim_report_free(struct sim_report *rep);

/* ---- a live cluster played forward (replay.c) ----------------------------- */

#define SIM_SNAPSHOT_MAX_BYTES (1u << 30)

/** A cluster as the API server lists it: one JSON List of Nodes, Pods,
 *  PodGroups (any of the three dialects) and PriorityClasses, as `kubectl
 *  get nodes,pods,podgroups,priorityclasses -A -o json` prints it. */
struct sim_snapshot {
	cJSON *doc;
	char error[512]; /* why it was refused */
};

/** 0, or -EINVAL (s->error says why), -ENOMEM. Free s either way. */
int sim_snapshot_read(const char *path, struct sim_snapshot *s);
void sim_snapshot_free(struct sim_snapshot *s);

struct sim_replay_options {
	const struct config *cfg; /* the queue file to replay it under */
	const struct sim_snapshot *snapshot;
	int64_t at_s;   /* the unix time it was taken: the clock starts there */
	int64_t stop_s; /* no event this long after at_s (0: 30 days) */
};

/** A gang the replay started: by PodGroup (or single pod) name. */
struct sim_replay_gang {
	char *ns, *name, *queue; /* queue NULL: none */
	int64_t start_s;         /* seconds after at_s */
	int64_t submitted_s;     /* unix */
};

struct sim_replay_result {
	struct sim_replay_gang *gangs; /* in the order they started */
	size_t ngangs;
	size_t objects, skipped; /* items taken, and refused by the decoders */
	char first_skip[512];    /* why the first refused one was */
	uint64_t cycles;
	size_t violations; /* plans that evicted */
	int64_t now_s;     /* where the clock stopped, after at_s */
	/* The cluster's GPUs (whole and registered), and the GPU-seconds in
	 * use from at_s to now_s (a share by its cores): utilisation is
	 * gpu_seconds / (gpus x now_s). */
	double gpus, gpu_seconds;
};

/**
 * Play the snapshot forward under o->cfg: running work ends when the
 * planner expects (its runtime, from its start), waiting gangs are bound
 * as it decides and run their runtime; nothing arrives. Until nothing with
 * a runtime is left to end, or stop_s. 0 and *res (free it with
 * sim_replay_result_free(), also on error), -ENOMEM, -ELOOP (binds that
 * never settle).
 */
int sim_replay(const struct sim_replay_options *o, struct sim_replay_result *res);
void sim_replay_result_free(struct sim_replay_result *res);

/* ---- the FGD paper's allocation ratio (alloc.c) ---------------------------- */

/** The samples of one replay of a GPU trace: one per arrival. */
struct sim_alloc;

/** Room for max arrivals; NULL when out of memory. */
struct sim_alloc *sim_alloc_new(size_t max);
void sim_alloc_free(struct sim_alloc *a);

/** One arrival: the GPU milli of every pod arrived so far (placed or not)
 *  and of those placed, the whole GPUs they hold, on a cluster of gpus.
 *  0, -E2BIG past max, -EINVAL for no GPUs. */
int sim_alloc_sample(struct sim_alloc *a, long arrived_milli, long used_milli, long held_gpus,
                     long gpus);

/** The allocation ratio (%) at pct% arrived, as the paper's script gives
 *  it: the mean of used / capacity (held: of the GPUs held) over the
 *  arrivals whose arrived share rounds (half to even) to pct, else over
 *  pct-1..pct+1; each ratio rounded to 0.01 first, summed as numpy sums,
 *  the mean rounded as numpy rounds. -1 when no arrival is near.
 *  O(arrivals). */
double sim_alloc_at(struct sim_alloc *a, bool held, long pct);

/* ---- the Alibaba GPU trace (alibaba.c) ------------------------------------ */

/** The namespace of the trace's pods. */
#define SIM_ALIBABA_NAMESPACE "alibaba"

/** The columns of the fractional allocation ratio: 0 .. 130% arrived. */
#define SIM_ALLOC_MAX_PCT 130

/** The FGD paper's protocol through the planner: the trace's pods arrive
 *  one by one in a given order on the trace's cluster, each given one
 *  cycle; placed, it stays; not placed, it is left out. alibaba.c says
 *  how the files become objects. */
struct sim_alibaba_options {
	const struct config *cfg; /* its queues: one must take SIM_ALIBABA_NAMESPACE */
	const char *nodes_csv;    /* openb_node_list_gpu_node.csv */
	const char *pods_csv;     /* openb_pod_list_*.csv */
	const char *order;        /* one data row of pods_csv a line (bench/alibaba-order) */
	int64_t epoch_s;          /* the unix time of the first arrival */
};

struct sim_alibaba_result {
	size_t nodes, arrivals, placed, left_out;
	long gpus;
	/* The allocation ratio (%) at X% of the GPUs arrived, as the paper
	 * reports it (sim_alloc_at()); -1 where no arrival came near. */
	double alloc[SIM_ALLOC_MAX_PCT + 1];
	uint64_t cycles;
	size_t violations; /* cycles that bound another pod, or evicted */
	char error[512];   /* why a file was refused: "FILE:LINE: ..." */
};

/** 0 and *res; -EINVAL (a file refused: res->error), -ENOMEM, another
 *  negative errno (a file unread: res->error; a cycle's error). */
int sim_alibaba_run(const struct sim_alibaba_options *o, struct sim_alibaba_result *res);

/** A CSV line split at its commas in place (a line end dropped): up to
 *  max fields into f, their count. The trace's files quote nothing. */
int sim_csv_split(char *line, char **f, int max);
/** The index of the header field `name` among hdr[0..n), or -1. */
int sim_csv_column(char **hdr, int n, const char *name);

/** MiB a GPU of the trace's model has: the published sizes (V100M32 32
 *  GiB, A10 24 GiB), 16 GiB for the rest (G1..G3 are not disclosed). */
uint32_t sim_alibaba_gpu_mib(const char *model);

/* ---- the command (cli.c) ----------------------------------------------------- */

/** How `muster simulate --kubeconfig` reads a live cluster: a List as
 *  sim_snapshot_read() reads one into *doc (the caller frees it), from the
 *  API server of kubeconfig (context NULL: its current one); 0, or a
 *  negative errno with err saying why. The layer that speaks to the API
 *  server gives it (scheduler/snapshot.c); sim/ never does. */
typedef int (*sim_fetch_fn)(const char *kubeconfig, const char *context, cJSON **doc, char *err,
                            size_t errlen);

/** s takes doc (a List with "items"; freed with s): 0, or -EINVAL with
 *  s->error saying why (doc freed then too). */
int sim_snapshot_take(struct sim_snapshot *s, cJSON *doc, const char *name);

/** `muster simulate` with argv[0] = "simulate": the exit status (0; 1 a
 *  file refused or a run that failed; 2 usage). fetch NULL: --kubeconfig
 *  is refused. */
int sim_main(int argc, char **argv, FILE *out, FILE *err, sim_fetch_fn fetch);

#endif /* MUSTER_SIM_SIM_H */
