/*
 * Muster's configuration: queues, cohorts and quotas read from one YAML
 * document (the format is described in config/README.md, with an example
 * in config/example.yaml).
 *
 * The model is a tree: cohorts hold child cohorts and queues, to any depth
 * (at most CONFIG_MAX_DEPTH), and queues may also stand outside any cohort.
 * A queue carries its quotas as a list of (resource, flavor, nominal,
 * borrowing limit, lending limit); resource and flavor are indexes into
 * config.resources and config.flavors, so comparing them is cheap.
 *
 * Loading never stops at the first problem: every error found is recorded
 * as a "FILE:LINE:COLUMN: message" string, in document order, so one run of
 * `muster check-config` shows them all.
 *
 * A loaded config is read-only and owned by the caller until config_free().
 */
#ifndef MUSTER_CONFIG_CONFIG_H
#define MUSTER_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/units.h"
#include "base/yaml_guard.h"

/** Largest configuration file read, in bytes; larger ones are an error.
 *  The same cap as a kubeconfig's (why: base/yaml_guard.h). Lists and
 *  mappings nest at most YAML_GUARD_MAX_DEPTH deep. */
#define CONFIG_MAX_FILE YAML_GUARD_MAX_BYTES
/** Longest string accepted anywhere in the file (names, label keys and
 *  values, resource names), in bytes. */
#define CONFIG_MAX_STRING 512
/** Deepest nesting of cohorts accepted (a top-level cohort is depth 1). */
#define CONFIG_MAX_DEPTH 16
/** Errors kept in a config_errors; the rest are only counted. */
#define CONFIG_MAX_ERRORS 100

/** Quota slots a configuration may need: one per resource, plus one per
 *  (resource, flavor) pair that some queue gives a quota. The quota tree
 *  keeps a fixed vector of them per cohort and queue. */
#define CONFIG_MAX_SLOTS 64

/** A borrowing or lending limit that was not given: no limit. */
#define CONFIG_UNLIMITED UNITS_UNLIMITED
/** The flavor index of a quota that applies to every flavor. */
#define CONFIG_NO_FLAVOR SIZE_MAX

/** The order in which a queue hands out its workloads. */
enum config_ordering {
	/** Oldest first, but a workload that does not fit lets later ones
	 *  try (the default). */
	CONFIG_ORDERING_BEST_EFFORT_FIFO,
	/** Oldest first; the head blocks everything behind it. */
	CONFIG_ORDERING_STRICT_FIFO,
};

/** Which running workloads of its own queue a pending one may preempt. */
enum config_within_queue {
	CONFIG_WITHIN_QUEUE_NEVER, /**< none (the default) */
	CONFIG_WITHIN_QUEUE_LOWER_PRIORITY,
	CONFIG_WITHIN_QUEUE_LOWER_OR_NEWER_EQUAL_PRIORITY,
};

/** Which workloads of other queues in the cohort a queue may preempt to
 *  win back quota that they borrowed from it. */
enum config_reclaim {
	CONFIG_RECLAIM_NEVER, /**< none (the default) */
	CONFIG_RECLAIM_LOWER_PRIORITY,
	CONFIG_RECLAIM_ANY,
};

/** A list of strings, each NUL-terminated and owned by the config. */
struct config_strings {
	char **v;
	size_t n;
};

/** One node label a flavor's nodes carry. */
struct config_label {
	char *key;
	char *value;
};

/** A flavor: a kind of node (a GPU model, say) with its own quota, known
 *  by the labels its nodes carry. */
struct config_flavor {
	char *name;
	struct config_label *labels;
	size_t n_labels;
};

/** One quota of a queue. Amounts are in milli-cores for "cpu" and in
 *  whole units (bytes, devices) for every other resource. */
struct config_quota {
	size_t resource;         /**< index into config.resources */
	size_t flavor;           /**< index into config.flavors, or CONFIG_NO_FLAVOR */
	int64_t nominal;         /**< >= 0 */
	int64_t borrowing_limit; /**< >= 0, or CONFIG_UNLIMITED */
	int64_t lending_limit;   /**< 0..nominal, or CONFIG_UNLIMITED */
};

struct config_preemption {
	enum config_within_queue within_queue;
	enum config_reclaim reclaim_within_cohort;
	/** A running gang of the queue is not preempted, nor reclaimed, before
	 *  it has run this long, so a restart's cost is paid for; default 0. */
	int64_t min_runtime_ms;
	/** false: no gang of the queue is ever evicted by preemption or
	 *  reclaim (it may still wait for quota); default true. */
	bool preemptible;
};

struct config_cohort;

/** A queue: the namespaces whose workloads it takes, and its quota. */
struct config_queue {
	char *name;
	struct config_strings namespaces;
	int64_t weight; /**< >= 1, default 1 */
	enum config_ordering ordering;
	struct config_quota *quotas;
	size_t n_quotas;
	struct config_preemption preemption;
	int64_t gang_timeout_ms;            /**< default CONFIG_DEFAULT_GANG_TIMEOUT_MS */
	int64_t default_runtime_ms;         /**< 0 when not given: no estimate */
	const struct config_cohort *parent; /**< NULL for a top-level queue */
};

/** How long a gang may wait for all its members when gangTimeout is not
 *  given: 5 minutes, as Kueue's waitForPodsReady. */
#define CONFIG_DEFAULT_GANG_TIMEOUT_MS (5 * 60 * 1000)

/** A cohort: queues (and cohorts) that lend each other unused quota. */
struct config_cohort {
	char *name;
	int64_t weight; /**< >= 1, default 1 */
	struct config_cohort *cohorts;
	size_t n_cohorts;
	struct config_queue *queues;
	size_t n_queues;
	const struct config_cohort *parent; /**< NULL at the top */
};

/** Most waiting gangs that may hold a reservation. */
#define CONFIG_MAX_RESERVATIONS 1000

/** Backfill: the first `reservations` waiting gangs in the order that do
 *  not fit hold the capacity they will need, at the time it frees up; a
 *  gang behind them starts now only if it ends before, or stays outside,
 *  those reservations. 1 is EASY backfill, 0 turns reservations off. */
struct config_backfill {
	int64_t reservations; /**< 0..CONFIG_MAX_RESERVATIONS, default 1 */
};

/** Fair sharing: how the queue order weighs what queues used before.
 *  With halfLife, a queue's share counts its past use, halved every
 *  halfLife (queue/quota.h); 0, the default, counts only what it holds. */
struct config_fair_sharing {
	int64_t half_life_ms; /**< 0 (off), or at least a minute */
};

/** Shortest halfLife accepted: memory is brought up to date each cycle and
 *  written out at most once a minute, so less would remember nothing. */
#define CONFIG_MIN_HALF_LIFE_MS (60 * 1000)

struct config_topology {
	struct config_strings levels; /**< node label keys, coarse to fine */
};

/** Most names schedulerNames may list. */
#define CONFIG_MAX_SCHEDULER_NAMES 8

/** A whole configuration. */
struct config {
	char *scheduler_name; /**< default "muster" */
	/** schedulerNames: several names taken at once (one gang tree, one
	 *  quota for all); when given, scheduler_name is not used. */
	struct config_strings scheduler_names;
	struct config_strings resources;
	struct config_flavor *flavors;
	size_t n_flavors;
	struct config_topology topology;
	char *default_queue; /**< NULL when not given */
	struct config_backfill backfill;
	struct config_fair_sharing fair_sharing;
	struct config_cohort *cohorts;
	size_t n_cohorts;
	struct config_queue *queues; /**< the queues outside any cohort */
	size_t n_queues;
	/* Every queue and the number of cohorts at any depth. */
	struct config_queue **all_queues;
	size_t n_all_queues;
	size_t n_all_cohorts;
};

/** The errors of one load: the first CONFIG_MAX_ERRORS messages, each
 *  "FILE:LINE:COLUMN: message" (or "FILE: message"), sorted by position,
 *  and how many more were found. Initialise with config_errors_init(). */
struct config_error {
	char *msg;
	size_t line, column; /**< 1-based; 0 for an error about the whole file */
};

struct config_errors {
	struct config_error v[CONFIG_MAX_ERRORS];
	size_t n;
	size_t dropped;
};

/** Make errs empty. It holds no memory until a load records an error. */
void config_errors_init(struct config_errors *errs);

/** Free the messages in errs and make it empty again. */
void config_errors_clear(struct config_errors *errs);

/** Write every message in errs to out, one per line, then "N more errors"
 *  if some were dropped. */
void config_errors_print(const struct config_errors *errs, FILE *out);

/** Read and check the file at path. Returns 0 and a config in *out that the
 *  caller frees with config_free(), or -EINVAL when the file is not a valid
 *  configuration, -ENOENT (or another negative errno) when it cannot be
 *  read, -EFBIG when it is larger than CONFIG_MAX_FILE, -ENOMEM. On every
 *  error but -ENOMEM each problem is appended to errs (which may be NULL)
 *  and *out is NULL. */
int config_load(const char *path, struct config **out, struct config_errors *errs);

/** As config_load() for text[0..len) already in memory; name stands for
 *  the file in messages. */
int config_parse(const char *name, const char *text, size_t len, struct config **out,
                 struct config_errors *errs);

/** Free *c and everything in it and set *c to NULL. NULL *c is fine. */
void config_free(struct config **c);

/** The queue that takes workloads from namespace ns: the queue that lists
 *  it, else the defaultQueue, else NULL. O(namespaces of all queues). */
const struct config_queue *config_queue_for_namespace(const struct config *c, const char *ns);

/** The queue called name at any depth, or NULL. O(queues). */
const struct config_queue *config_find_queue(const struct config *c, const char *name);

/** The whole of `muster check-config PATH`: loads path and writes either
 *  every error, one per line, to err and returns 1, or
 *  "PATH: ok (N cohorts, M queues)" to out and returns 0. */
int config_check(const char *path, FILE *out, FILE *err);

/* ---- reloading ---------------------------------------------------------- */

struct uv_loop_s;
struct config_watch;

/** What a reload found. */
enum config_reload {
	CONFIG_RELOAD_UNCHANGED, /**< same bytes as the configuration in force */
	CONFIG_RELOAD_READY,     /**< a valid new configuration waits in config_watch_take() */
	CONFIG_RELOAD_REJECTED,  /**< invalid or unreadable: the old one stays in force */
};

/** Told after each reload that found a change (not for UNCHANGED): errs
 *  holds the messages of a REJECTED one and is valid only during the call. */
typedef void (*config_watch_cb)(void *ud, enum config_reload what,
                                const struct config_errors *errs);

/**
 * Watch the file at path: reload it when it changes (a stat of the path
 * every poll_ms, so an editor's rename and a ConfigMap's symlink swap are
 * both seen) and on SIGHUP. A valid new file waits until the owner takes
 * it with config_watch_take(), at the start of its next cycle; an invalid
 * one is reported through cb and changes nothing.
 *
 * Loads the file once, synchronously, before returning: on success *first
 * is the configuration in force (the caller owns it) and 0 is returned;
 * otherwise the errors are in errs and -EINVAL (or the read's negative
 * errno, or -ENOMEM) is returned with nothing started.
 *
 * A reload reads and parses the file in libuv's thread pool, never on the
 * loop thread: at most CONFIG_MAX_FILE bytes, about 0.1 s for a full file
 * of 13,000 queues, and a file made to be slow is refused by the nesting
 * guard, but the loop would not wait for either. cb is called on the
 * loop when the parse is done. One parse runs at a time: changes seen
 * while it runs are coalesced into one more parse after it.
 */
int config_watch_start(struct uv_loop_s *loop, const char *path, unsigned poll_ms,
                       config_watch_cb cb, void *ud, struct config **first,
                       struct config_errors *errs, struct config_watch **out);

/** Reload now, as SIGHUP does; `force` parses even unchanged bytes. The
 *  parse runs in the thread pool and reports through cb; while one runs,
 *  this only asks for one more after it (forced if any request was).
 *  Returns 0, or uv_queue_work()'s negative error (nothing queued). */
int config_watch_reload(struct config_watch *w, int force);

/** True while a reload is queued or parsing in the pool (its result not
 *  yet handed to the loop). */
bool config_watch_busy(const struct config_watch *w);

/** Hand over the newest valid configuration not yet taken: returns 1 and
 *  the caller owns *out, or 0 when there is none. */
int config_watch_take(struct config_watch *w, struct config **out);

/** Stop watching; the handles close on the loop, which must run once more
 *  to free them, and until a parse still in the pool is back (uv_run with
 *  UV_RUN_DEFAULT does both). Its result is dropped, cb is not called
 *  again, and a configuration not yet taken is freed. */
void config_watch_stop(struct config_watch **w);

#endif /* MUSTER_CONFIG_CONFIG_H */
