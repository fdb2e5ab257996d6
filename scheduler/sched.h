/*
 * The running scheduler (`muster run`): one libuv loop that keeps the
 * cluster cache, starts planner cycles (each on a thread of libuv's pool,
 * run.c says why and what the loop leaves alone meanwhile), binds, and
 * writes status.
 *
 *   run.c     lifecycle: connect, cache, config reload, cycle timers,
 *             SIGTERM; a cycle
 *   bind.c    bindings: the assumed placements, retries, a gang whose
 *             member cannot be bound
 *   status.c  pod conditions, Events and PodGroup status, written only
 *             when they change
 *   timeout.c gangs waiting past their timeout, and their backoff
 *   evict.c   the planner's victims: DisruptionTarget, eviction, Event
 *   log.c     leveled logs, text or JSON, naming pod and gang
 *   lease.c   leader election (lease.h): only the leader runs cycles
 *   usage.c   fair sharing's memory, read from and written to a ConfigMap
 *
 * and beside them, each a folder of its own:
 *
 *   httpd/    the HTTP server, knowing nothing of Muster
 *   debug/    what it serves: /debug documents and page, /metrics, the
 *             probes, over a copy of the last cycle; it reads this
 *             struct only through the view run.c fills (debug_view)
 *   cli/      `muster status` and `muster explain`, clients of that API
 *
 * The planner itself is policy/plan.h: this daemon feeds it the cache
 * and carries out its decisions.
 *
 * Internal to scheduler/; main.c sees only sched_run().
 */
#ifndef MUSTER_SCHEDULER_SCHED_H
#define MUSTER_SCHEDULER_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config/config.h"
#include "kubeapi/cache.h"
#include "kubeapi/conn.h"
#include "kubeapi/http.h"
#include "base/buf.h"
#include "base/idmap.h"
#include "kubeapi/writes.h"
#include "queue/queue.h"
#include "scheduler/httpd/httpd.h"
#include "scheduler/lease.h"
#include "scheduler/debug/debug.h"
#include "scheduler/debug/metrics.h"
#include "policy/plan.h"
#include "scheduler/debug/snap.h"

/* Most scheduler names one Muster takes. */
#define SCHED_MAX_NAMES CONFIG_MAX_SCHEDULER_NAMES

struct sched_options {
	const char *kubeconfig; /* NULL: in-cluster */
	const char *context;    /* NULL: the kubeconfig's current context */
	const char *config;     /* the queue file */
	/* --scheduler-name, repeatable; none: the config's schedulerNames,
	 * else its schedulerName. */
	const char *scheduler_names[SCHED_MAX_NAMES];
	unsigned nscheduler_names;
	const char *debug_addr; /* NULL: no debug server */
	const char *probe_addr; /* NULL: no probe server (/healthz, /readyz only) */
	const char *debug_cert, *debug_key, *debug_token; /* files, for httpd */
	bool log_json;                                    /* one JSON object per line */
	int log_level;             /* enum sched_log_level: the least shown */
	unsigned debounce_ms;      /* after a change, default 20 */
	unsigned period_ms;        /* a cycle at least this often, default 1000 */
	unsigned status_per_cycle; /* status writes started per cycle, default 1000 */
	size_t max_object;         /* informers' object cap, 0: theirs (16 MiB) */
	/* For tests: the planner's thread sleeps this long after each cycle,
	 * standing in for the seconds a cycle takes at 100,000 nodes. */
	unsigned cycle_delay_ms;
	/* A debug aid: each cycle checks the planner's pod table against a
	 * rebuild and warns of any difference (plan_input.check_state). */
	bool check_state;
	/* The forecast of every waiting gang's start (policy/forecast.c):
	 * at most this percent of the cycles' CPU time (0: default, 15);
	 * forecast_off: none at all (run.c: how often, and its floor). */
	unsigned forecast_share;
	bool forecast_off;
	/* Fair sharing's memory (usage.c): the ConfigMap, and how often the
	 * leader writes it (ms, default 60000). */
	const char *usage_ns, *usage_name;
	unsigned usage_period_ms;
	/* Leader election (lease.h): without it, this instance always leads. */
	bool leader_elect;
	const char *lease_namespace, *lease_name, *identity;
	unsigned lease_duration_ms, renew_ms, retry_ms; /* main.c validates */
};

/* A pod Muster bound or is binding: what the planner must treat as bound
 * until the cache shows it. It is the decision for one pod, the one with
 * uid: a pod that takes its name (or its name's id) later is another. */
struct sched_assumed {
	struct sched *s;
	uint64_t key;      /* the pod's */
	uint8_t uid[16];   /* the pod's, as the decision saw it */
	uint32_t node;     /* name id */
	uint64_t gang;     /* plan_gang_key */
	uint64_t since_ms; /* when the bind was first sent */
	uint64_t retry_ms; /* RETRY: not sent again before */
	/* The resourceVersion the last vGPU patch was sent against, and the
	 * one a 409 said is stale: not sent again until the watch shows
	 * another. */
	uint64_t sent_rv, stale_rv;
	uint8_t state;     /* enum sched_bind_state */
	uint8_t annotated; /* its vGPU shares are written on the pod */
	uint8_t attempts;  /* answers that kept the room, in a row (saturates) */
	/* The vGPU shares it was given (NULL for none), holding a reference
	 * on each GPU UUID id: written before the binding (shares.c). */
	struct kubeapi_vgpu_held *vgpu;
	/* Dropped while a cycle was reading its shares: freed after it. */
	struct sched_assumed *next_dead;
};

/* A gang that timed out, found after a cycle (timeout.c). */
struct sched_timeout {
	uint32_t gang;      /* index into plan.gangs */
	uint32_t backoff_s; /* before it is tried again */
};

/* A pod or PodGroup whose status differs from the plan, found after a
 * cycle (status.c). */
struct sched_todo {
	uint32_t gang;                 /* index into plan.gangs */
	const struct kubeapi_pod *pod; /* NULL: the gang's PodGroup */
};

/* What the lists above may hold: a cycle's gangs and waiting pods, with
 * room to spare (16 bytes an entry: 64 M entries). */
#define SCHED_LIST_MAX ((size_t)1 << 30)

/* The cycle in flight on libuv's thread pool (run.c). Between its start
 * and its end on the loop, the planner's thread reads the cache (held
 * still: kubeapi_cache_hold), the configuration and queue set, and the
 * copies below, and writes s->plan, s->plan_keep, the lists below and
 * the waits (timeout.c); the loop touches none of these meanwhile. What
 * the loop would have changed waits here. */
struct sched_cycle {
	uv_work_t work;
	bool running;
	bool again; /* a kick came meanwhile or while draining: another cycle after */
	int rc;     /* plan_cycle()'s */
	uint64_t t0;
	struct plan_input in;
	uint32_t ids[SCHED_MAX_NAMES];
	/* The planner's own copies of what the loop changes as writes come
	 * back: assumed pod -> node, their vGPU shares, gangs backing off,
	 * gangs whose eviction was refused. */
	struct idmap assumed, vgpu, backoff, refused;
	struct idmap drops;         /* preemptors whose hold is to go (evict.c) */
	struct sched_assumed *dead; /* assumptions dropped meanwhile (bind.c) */
	/* The debug API's copy, taken on the thread too when one is due
	 * (it costs about a tenth of the cycle): of cycle `number`, with
	 * configuration cfg. */
	bool want_snap;
	int snap_rc;
	uint64_t number;
	const struct config *cfg;
	struct snap snap;
	/* Status that differs from the plan (status.c) and gangs that timed
	 * out (timeout.c, by the loop's clock at the start, now_ms), found on
	 * the thread too; todo_rc the first error. The arrays are kept from
	 * cycle to cycle. */
	struct buf todo;     /* struct sched_todo */
	struct buf timeouts; /* struct sched_timeout */
	uint64_t now_ms;
	int todo_rc;
	bool status_due; /* decisions carried out, their status not yet written */
};

/* Backoff of a write whose answer did not take it but kept what it is for
 * (a bind's room, an eviction the planner still asks for): the first retry
 * about a cycle period later, doubling to half a minute, with full jitter
 * (kubeapi_http_backoff_ms()), as the engine itself backs off. */
#define SCHED_RETRY_BASE_MS 1000
#define SCHED_RETRY_CAP_MS  30000

enum sched_bind_state {
	SCHED_BIND_QUEUED, /* decided, waiting in the bind queue (bind.c) */
	SCHED_BIND_INFLIGHT,
	SCHED_BIND_DONE,  /* 201: waiting for the watch to show it, however long */
	SCHED_BIND_RETRY, /* an answer that keeps the room: sent again from retry_ms */
};

struct sched_counters {
	uint64_t cycles, binds_sent, binds_ok, binds_failed, binds_retried;
	uint64_t status_writes, events, events_dropped, podgroup_writes, write_errors;
	uint64_t evictions, evictions_refused;
	double last_cycle_ms;
};

/* usage.c's state: the read done (or given up), a write in flight. */
struct sched_usage {
	bool reading, ready, writing;
	uint64_t written_ms; /* when the last write was started, 0: never */
	uint64_t writes;     /* that succeeded */
};

struct sched {
	uv_loop_t *loop;
	struct sched_options opt;
	struct kubeapi_conn conn;
	/* Three engines on one API server, each with connections of its own
	 * (run.c's connect_api() says why): http for writes, watch_http for
	 * the cache's lists and watches, lease_http for leader election. */
	struct kubeapi_http *http, *watch_http, *lease_http;
	struct kubeapi_cache *cache;
	struct config_watch *watch;
	struct config *cfg;
	struct queue_set *qs;
	uint64_t config_gen;    /* configurations applied: plan_input.config_gen */
	struct plan plan;       /* the last cycle's results */
	struct sched_cycle cyc; /* the one in flight, if any */
	/* Sending the last cycle's binds, then applying what came during
	 * it, a slice per loop iteration (run.c); no cycle starts until it is
	 * done. */
	uv_idle_t drain;
	bool draining;
	struct plan_memory plan_keep;       /* what the planner keeps across cycles */
	const char *names[SCHED_MAX_NAMES]; /* scheduler names in force */
	unsigned nnames;
	char instance[128];
	uv_timer_t debounce, period;
	/* Runs just before each wait for I/O: the loop's stalls (run.c). */
	uv_prepare_t stall;
	uint64_t stall_ns, stall_idle_ns; /* at the last: hrtime, idle time */
	uv_signal_t sigterm, sigint;
	bool started, stopping;
	int exit_code;
	unsigned closing;     /* handles and clients still closing */
	struct idmap assumed; /* pod key -> struct sched_assumed * */
	/* Binds decided and not yet sent, sent a slice per loop iteration
	 * after the cycle (bind.c): its struct queued from bindq_head on. */
	struct buf bindq;
	size_t bindq_head;
	struct idmap retry_at; /* gang key -> when its binds waiting to retry go (ms, bind.c) */
	/* Binds the server has answered and the watch has not shown yet, as
	 * of the last sweep (bind.c): how far the watch lags Muster's own
	 * writes. status_held_ms: sched_status_waits()'s. */
	size_t binds_unseen;
	uint64_t status_held_ms;
	/* status.c: a write to the object in flight, or the version the
	 * watch must pass before the next (written: pods, groups: PodGroups);
	 * and the shape of the last waiting message written to it with when
	 * (shaped: pods, group_shaped: PodGroups). */
	struct idmap written, groups;
	struct idmap shaped, group_shaped;
	/* FailedScheduling Events not yet taken by the server: pod key ->
	 * their message and shape (status.c). */
	struct idmap owed;
	size_t swept[4];      /* where the sweep of each goes on (status.c) */
	struct idmap waits;   /* gang key -> its wait (timeout.c) */
	struct idmap evicted; /* pod key -> struct sched_evicted * (evict.c) */
	struct idmap refused; /* victim gang key -> until (ms) a budget said no */
	struct sched_counters n;
	struct sched_lease *lease; /* NULL without --leader-elect */
	bool leader;               /* this instance schedules */
	struct debug_metrics m;
	struct httpd *httpd;       /* NULL without --debug-addr */
	struct httpd *probe;       /* NULL without --probe-addr */
	struct snap snap;          /* a recent cycle, for httpd */
	struct debug_source debug; /* how the debug servers see this struct */
	uint64_t snap_at_ms;       /* when it was taken */
	int64_t plan_now_s;        /* the last cycle's clock */
	struct sched_usage usage;
};

enum sched_log_level { SCHED_DEBUG, SCHED_INFO, SCHED_WARN, SCHED_ERROR };

/** `muster run` with these options: returns the process exit status. */
int sched_run(const struct sched_options *opt);

/* snapshot.c: the cluster as `muster simulate --snapshot` reads it */

/** The cluster's Nodes, Pods, PodGroups (three dialects) and
 *  PriorityClasses as one JSON List (*out, the caller's to free), listed
 *  from the API server of kubeconfig (context NULL: its current one;
 *  kubeconfig NULL: in-cluster), page items a request (0: 500). 0, or a
 *  negative errno with err saying why. Runs a loop of its own: not from
 *  within sched_run(). */
int sched_snapshot(const char *kubeconfig, const char *context, long page, cJSON **out, char *err,
                   size_t errlen);
/** `muster snapshot`: its exit status. */
int sched_snapshot_main(int argc, char **argv);

/* run.c: forget a preemptor's hold (plan_hold_drop), after the cycle in
 * flight if one is. */
void sched_hold_drop(struct sched *s, uint64_t key);

/* bind.c. sched_bind_all, after a cycle: the plan's binds, and those
 * the server missed, assumed and queued (O(binds)). sched_bind_send,
 * while the cache is still held as the cycle saw it: sends queued binds
 * for about budget_ns (send false: sends none, and each stays assumed,
 * to be sent at the next cycle of a leader); true when none is left. */
void sched_bind_all(struct sched *s);
bool sched_bind_send(struct sched *s, bool send, uint64_t budget_ns);
/* Free assumptions dropped while a cycle was in flight. */
void sched_assumed_bury(struct sched *s);
void sched_assumed_sweep(struct sched *s);
void sched_assumed_free(struct sched *s);

/* shares.c: a bind's vGPU shares kept with its assumption (0, or
 * -ENOMEM: bind it not), freed, and written on the pod t names, under
 * t's uid and resourceVersion preconditions (the engine's error, or 0 and
 * cb called with e). */
int sched_shares_keep(struct sched *s, struct sched_assumed *e, const struct plan_bind *b);
void sched_shares_free(struct sched *s, struct sched_assumed *e);
int sched_shares_write(struct sched *s, struct sched_assumed *e, const struct kubeapi_target *t,
                       kubeapi_http_done_cb cb);

/* evict.c */
void sched_evict_all(struct sched *s);
void sched_evict_sweep(struct sched *s);
void sched_evicted_free(struct sched *s);

/* timeout.c. sched_timeouts_find, on the planner's thread after the
 * cycle: each gang's wait kept (now: the loop's clock when the cycle
 * started), the gangs that timed out into out (its array reused; 0 or
 * -ENOMEM; O(gangs)). sched_timeouts_say, on the loop: a log line and an
 * Event for each. */
int sched_timeouts_find(struct sched *s, uint64_t now, struct buf *out);
void sched_timeouts_say(struct sched *s, const struct buf *t);
int sched_backoff_map(struct sched *s, struct idmap *out);
void sched_waits_free(struct sched *s);

/* status.c. sched_status_todo, on the planner's thread after the cycle
 * (the cache held still): the pods and PodGroups whose copy on the server
 * differs from what the plan means, in gang order, into out (its array
 * reused; 0 or -ENOMEM; O(gangs + waiting pods)). sched_status_write, on
 * the loop: writes those that may go now (O(todo)). */
int sched_status_todo(struct sched *s, struct buf *out);
void sched_status_write(struct sched *s, const struct buf *todo);
void sched_status_sweep(struct sched *s);

/* How busy the server is with the binds, as status is about to go. */
struct sched_status_load {
	unsigned writes_waiting; /* in the engine's queue or retrying; Events not */
	unsigned calls_running;  /* on the writes' engine, Events not */
	size_t binds_unseen;     /* struct sched's */
};
/** Should status wait for a later cycle (status.c says when)? *held_ms:
 *  since when it has waited, plus one (the loop's clock; 0: it has not),
 *  which this updates. O(1). */
bool sched_status_waits(const struct sched_status_load *l, uint64_t now_ms, uint64_t *held_ms);
void sched_event(struct sched *s, const struct kubeapi_pod *pod, const char *type,
                 const char *reason, const char *action, const char *note);
/* The same, cb(data) called with the answer: 0, or the engine's error
 * (-ENOBUFS: the background queue is full) and cb is not called. */
int sched_event_cb(struct sched *s, const struct kubeapi_pod *pod, const char *type,
                   const char *reason, const char *action, const char *note,
                   kubeapi_http_done_cb cb, void *data);
void sched_owed_free(struct sched *s);
void sched_target(struct sched *s, const struct kubeapi_pod *pod, struct kubeapi_target *t,
                  char uid[40]);

/* usage.c. sched_usage_read: once this instance leads, the memory from
 * the ConfigMap; no cycle runs until sched_usage_ready(). sched_usage_write:
 * after a cycle, when a write is due. The document's encoding, for tests:
 * encode 0, -ENOENT (nothing remembered), -EFBIG, -ENOMEM; decode 0 with
 * the amounts taken in *kept, or -EPROTO (the tree may have taken some). */
void sched_usage_read(struct sched *s);
bool sched_usage_ready(const struct sched *s);
void sched_usage_write(struct sched *s);
int sched_usage_encode(const struct queue_set *qs, char **out);
int sched_usage_decode(struct queue_set *qs, const char *text, size_t len, size_t *kept);

/* run.c (log.c): sched_log() logs at SCHED_INFO. */
void sched_log(struct sched *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sched_logl(struct sched *s, enum sched_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A decision about one gang (and pod, may be NULL), at SCHED_INFO: in
 * JSON, the names are fields of their own. */
void sched_log_gang(struct sched *s, const char *ns, const char *gang, const char *pod,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/** What every log line goes through: in, with control characters,
 *  U+2028/2029 and invalid UTF-8 escaped (\n, \x1b, \u2028, \xff), into
 *  out (NUL-terminated, cut at cap). Exported for tests. */
void sched_log_clean(const char *in, char *out, size_t cap);
uint64_t sched_now_ms(struct sched *s);
const char *sched_str(struct sched *s, uint32_t id);
void sched_kick(struct sched *s); /* a cycle soon */

#endif /* MUSTER_SCHEDULER_SCHED_H */
