/*
 * The cluster cache: every Node, Pod (all namespaces: pods of other
 * schedulers use node capacity too), PodGroup of both dialects,
 * PriorityClass, PodDisruptionBudget and Namespace, decoded into the
 * compact model and kept current by one informer per kind.
 *
 * Stores are keyed by the interned (namespace, name) ids. A relist marks
 * every stored object with a new generation as the list names it, and
 * sweeps the ones it did not name: objects deleted while the watch was
 * down are removed, never kept as ghosts. An object that cannot be decoded
 * is logged by kind, namespace and name and skipped; a stored version is
 * then kept, since dropping a bound pod would free capacity that is in use.
 * So is one too large to take (informer.h, max_object), through a relist
 * too; one that was never stored stays out, and counts in its informer's
 * stats.too_large.
 */
#ifndef MUSTER_KUBEAPI_CACHE_H
#define MUSTER_KUBEAPI_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "kubeapi/decode.h"
#include "kubeapi/http.h"
#include "base/idmap.h"
#include "kubeapi/informer.h"

enum kubeapi_store_kind {
	KUBEAPI_STORE_NODES,
	KUBEAPI_STORE_PODS,
	KUBEAPI_STORE_PODGROUPS, /* scheduling.x-k8s.io/v1alpha1 */
	KUBEAPI_STORE_VCJOBS,    /* scheduling.volcano.sh/v1beta1 PodGroups */
	KUBEAPI_STORE_NATIVEPGS, /* scheduling.k8s.io/v1beta1 PodGroups (1.37) */
	KUBEAPI_STORE_WORKLOADS, /* scheduling.k8s.io/v1beta1 Workloads: their labels */
	KUBEAPI_STORE_PRIORITYCLASSES,
	KUBEAPI_STORE_PDBS,
	KUBEAPI_STORE_NAMESPACES,
	KUBEAPI_STORE_COUNT,
};

struct kubeapi_cache_options {
	struct kubeapi_informer_options informer;
	/* Log lines (decode errors, informer state). NULL: stderr. */
	void (*log)(void *data, const char *msg);
	/* Something in store `kind` changed: mark the scheduler dirty. */
	void (*changed)(void *data, enum kubeapi_store_kind kind);
	void *data;
	/* What a hold keeps of changes, as JSON text; 0: the default below. */
	size_t hold_max_bytes;
	/* Kinds (bit 1 << kind) whose changed keys are kept for
	 * kubeapi_cache_changes(). */
	unsigned track_changes;
};

/* A kind keeps at most this many changed keys (8 MiB) between two
 * kubeapi_cache_changes_clear(); past it, any object may have changed. */
#define KUBEAPI_CACHE_CHANGES_MAX ((size_t)1 << 20)

/* A hold keeps at most this much JSON: 64 MiB is a minute of the busiest
 * pod churn measured (1,000 pod writes a second, each seen about three
 * times at ~300 bytes) many times over, and at 100,000 nodes a cycle
 * takes seconds, not minutes. */
#define KUBEAPI_CACHE_HOLD_BYTES ((size_t)64 << 20)

struct kubeapi_cache;

/** Create the cache and its informers on `http`. 0, -ENOMEM. */
int kubeapi_cache_new(uv_loop_t *loop, struct kubeapi_http *http,
                      const struct kubeapi_cache_options *opt, struct kubeapi_cache **out);

/** Start every informer. 0 or a negative errno. */
int kubeapi_cache_start(struct kubeapi_cache *c);

/** True once every kind has been listed in full at least once (an optional
 *  kind that is not installed counts as listed). */
bool kubeapi_cache_synced(const struct kubeapi_cache *c);

/** The model the objects were decoded with (strings, resources). */
struct kubeapi_model *kubeapi_cache_model(struct kubeapi_cache *c);

/** A store: values are `struct kubeapi_pod *` and so on by kind, keyed by
 *  kubeapi_cache_key(ns, name) (ns 0 for cluster-scoped kinds). Read only;
 *  valid until control returns to the loop. */
const struct idmap *kubeapi_cache_store(const struct kubeapi_cache *c,
                                        enum kubeapi_store_kind kind);

static inline uint64_t kubeapi_cache_key(uint32_t ns, uint32_t name)
{
	return (uint64_t)ns << 32 | name;
}

/**
 * Hold the stores still: from here until kubeapi_cache_release() has
 * applied everything, what the informers receive (they keep reading:
 * watches never stall) is journaled, not applied, so that another thread
 * may read the stores and the model (a planner cycle, scheduler/run.c)
 * while this loop runs. Nothing on the loop may change them meanwhile
 * but the release. Not nested.
 *
 * Nothing is lost: the release applies the journal in the order it came
 * (as if it had just arrived, `changed` included); a store whose changes
 * ran over hold_max_bytes drops its records instead, says so in a log
 * line, and lists again (its watch carries on from the list). O(held
 * bytes) to keep and to apply.
 */
void kubeapi_cache_hold(struct kubeapi_cache *c);

/** Apply journaled changes, oldest first, for about budget_ns (at least
 *  one): true once all are applied and the hold is over; false when some
 *  remain: call again (what comes meanwhile is journaled behind them, so
 *  the order stays the API server's). Bounds what one loop iteration
 *  spends on the changes of a long hold. */
bool kubeapi_cache_release(struct kubeapi_cache *c, uint64_t budget_ns);

/**
 * The keys of store `kind`'s objects added, changed or removed since the
 * last kubeapi_cache_changes_clear() of it (repeats allowed, in order),
 * for a consumer that keeps its own state per object (the planner's pod
 * table). False when they are not known: the kind is not tracked, or they
 * ran over KUBEAPI_CACHE_CHANGES_MAX; the consumer reads every object.
 * Valid until control returns to the loop, or while held.
 */
bool kubeapi_cache_changes(const struct kubeapi_cache *c, enum kubeapi_store_kind kind,
                           const uint64_t **keys, size_t *n);
/** The consumer has them: start again from none. */
void kubeapi_cache_changes_clear(struct kubeapi_cache *c, enum kubeapi_store_kind kind);

/** Since start: journaled callbacks applied at a release, and stores
 *  listed again because their changes ran over the cap. */
void kubeapi_cache_hold_stats(const struct kubeapi_cache *c, uint64_t *replayed,
                              unsigned *relisted);

/** Informer counters for one kind. */
void kubeapi_cache_informer_stats(const struct kubeapi_cache *c, enum kubeapi_store_kind kind,
                                  struct kubeapi_informer_stats *out);

/** Decode failures logged since start. */
unsigned kubeapi_cache_decode_errors(const struct kubeapi_cache *c);

/** Node decodes that left resource names out (table full or over the
 *  per-Node cap, kubeapi/decode.h), logged since start. */
unsigned kubeapi_cache_untracked(const struct kubeapi_cache *c);
/** The same for one kind. */
unsigned kubeapi_cache_kind_decode_errors(const struct kubeapi_cache *c,
                                          enum kubeapi_store_kind kind);

/** Where a kind is listed and watched, and whether it may be missing (a
 *  CRD); NULL out of range. Static storage. */
const struct kubeapi_kind *kubeapi_cache_kind(enum kubeapi_store_kind kind);

/** A kind's name as logs and metrics give it ("Pod"); NULL out of range.
 *  Static storage. */
const char *kubeapi_cache_kind_name(enum kubeapi_store_kind kind);

/** Stop the informers and free everything once they let go; then
 *  closed_cb(data). Clears *cp. */
void kubeapi_cache_close(struct kubeapi_cache **cp, void (*closed_cb)(void *), void *data);

#endif /* MUSTER_KUBEAPI_CACHE_H */
