/*
 * The writes Muster makes, as typed calls on the HTTP engine: each builds
 * the request path and JSON body (strings escaped by cJSON), submits it
 * with the right retry policy, and reports through the engine's done
 * callback, where the caller reads status and body.
 *
 * Names and namespaces are checked before use (DNS-1123 characters, at
 * most 253 bytes), so nothing from the cache can reshape a path. Every call
 * returns 0 or a negative errno from validation or the engine; on error the
 * callback is never called.
 */
#ifndef MUSTER_KUBEAPI_WRITES_H
#define MUSTER_KUBEAPI_WRITES_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "kubeapi/http.h"
#include "kubeapi/model.h"

struct kubeapi_target {
	const char *ns, *name;
	const char *uid; /* precondition where the API supports one; may be NULL */
	/* Status patches: the resourceVersion the change was computed from.
	 * The server refuses the patch (409) when the object has changed
	 * since, so an old intention never lands over a newer state. May be
	 * NULL: no precondition. */
	const char *resource_version;
};

/** POST pods/binding: bind pod `t` to `node`. With a uid, the server
 *  refuses (409) a pod that was deleted and recreated under the same name.
 *  A 409 because the pod is already bound is final, not retried. */
int kubeapi_bind(struct kubeapi_http *h, const struct kubeapi_target *t, const char *node,
                 kubeapi_http_done_cb cb, void *data);

/* What an answer to a write about one pod means for the writer, read
 * from its status and, for a 409, the Status message the API server
 * writes (kube-apiserver 1.37: pkg/registry/core/pod/storage). */
enum kubeapi_answer {
	KUBEAPI_ANSWER_DONE,    /* 2xx: it went through */
	KUBEAPI_ANSWER_BOUND,   /* a bind's 409: bound to that very node already */
	KUBEAPI_ANSWER_GONE,    /* 404, the uid precondition failed (a patch naming
	                         * another uid: 422), or bound to another node:
	                         * never for this pod */
	KUBEAPI_ANSWER_CHANGED, /* 409 on a resourceVersion: the pod changed since */
	KUBEAPI_ANSWER_RETRY,   /* no answer, 5xx, 429, 401, 403, or any refusal
	                         * that says nothing about the pod itself */
};

/** What r, the answer to a bind of a pod to `node`, means. O(body). */
enum kubeapi_answer kubeapi_bind_answer(const struct kubeapi_response *r, const char *node);

/** What r, the answer to a patch or eviction of a pod with a uid (and a
 *  resourceVersion) precondition, means. O(body). */
enum kubeapi_answer kubeapi_pod_answer(const struct kubeapi_response *r);

/** The answer's name for logs and metrics ("bound", "retry"). */
const char *kubeapi_answer_name(enum kubeapi_answer a);

/** POST pods/eviction (policy/v1). 429 is not retried: see
 *  kubeapi_eviction_blocked(). grace_s < 0 leaves the pod's own. */
int kubeapi_evict(struct kubeapi_http *h, const struct kubeapi_target *t, int64_t grace_s,
                  kubeapi_http_done_cb cb, void *data);

/** Whether an eviction response says a PodDisruptionBudget refused it. */
bool kubeapi_eviction_blocked(const struct kubeapi_response *r);

/** Strategic-merge patch of one pod status condition (merged by type),
 *  e.g. PodScheduled False Unschedulable "gang ...: 7 of 8 members fit". */
int kubeapi_patch_pod_condition(struct kubeapi_http *h, const struct kubeapi_target *t,
                                const char *type, const char *status, const char *reason,
                                const char *message, time_t now, kubeapi_http_done_cb cb,
                                void *data);

/** Merge patch of a pod's annotations keys[k] = values[k], k < n: how the
 *  vGPU shares chosen are written before the binding. With t->uid the
 *  patch names it, and the server refuses (409) a pod recreated under the
 *  same name; with t->resource_version, one changed since (409): the
 *  shares are written only on the pod as the decision saw it, unbound, so
 *  a decision made on a stale copy (a watch that lags, a new leader's
 *  first cycles) never points a bound pod's devices elsewhere. */
int kubeapi_patch_pod_annotations(struct kubeapi_http *h, const struct kubeapi_target *t,
                                  const char *const *keys, const char *const *values, size_t n,
                                  kubeapi_http_done_cb cb, void *data);

/** Merge patch of a PodGroup's status in its own dialect (the status
 *  subresource for scheduler-plugins; the object itself for Volcano, whose
 *  CRD has none); status_json is the JSON object to put under "status". */
int kubeapi_patch_podgroup_status(struct kubeapi_http *h, enum kubeapi_dialect dialect,
                                  const struct kubeapi_target *t, const char *status_json,
                                  kubeapi_http_done_cb cb, void *data);

/* An events.k8s.io/v1 Event about a pod. */
struct kubeapi_event {
	const struct kubeapi_target *regarding; /* the pod */
	const char *type;                       /* "Normal" or "Warning" */
	const char *reason;                     /* "Scheduled", "FailedScheduling" */
	const char *action;                     /* "Binding", "Scheduling" */
	const char *note;                       /* what a person reads */
	const char *controller;                 /* reportingController */
	const char *instance;                   /* reportingInstance */
};

/** POST an Event named <pod>.<now in hex nanoseconds>, as kube-scheduler
 *  does, in the background (http.h): behind binds and status writes, and
 *  -ENOBUFS when too many Events wait already. */
int kubeapi_event_create(struct kubeapi_http *h, const struct kubeapi_event *ev,
                         struct timespec now, kubeapi_http_done_cb cb, void *data);

/* A coordination.k8s.io/v1 Lease. */
struct kubeapi_lease {
	const char *ns, *name;
	const char *resource_version; /* NULL: create; else replace (optimistic) */
	const char *holder;
	int32_t duration_s;
	int32_t transitions;
	struct timespec acquired, renewed;
};

/** GET the lease (404 when absent). Lease calls are urgent
 *  (KUBEAPI_REQ_URGENT): ahead of every queued bind. */
int kubeapi_lease_get(struct kubeapi_http *h, const char *ns, const char *name,
                      kubeapi_http_done_cb cb, void *data);

/** Create it, or replace it at resource_version (409 when someone else
 *  wrote it since). */
int kubeapi_lease_put(struct kubeapi_http *h, const struct kubeapi_lease *l,
                      kubeapi_http_done_cb cb, void *data);

/** GET a ConfigMap (404 when absent). */
int kubeapi_configmap_get(struct kubeapi_http *h, const char *ns, const char *name,
                          kubeapi_http_done_cb cb, void *data);

/** Server-side apply of a ConfigMap holding data key = value (field
 *  manager "muster", forced): creates it when absent, and leaves keys
 *  other managers own alone. Retried like every write. */
int kubeapi_configmap_apply(struct kubeapi_http *h, const char *ns, const char *name,
                            const char *key, const char *value, kubeapi_http_done_cb cb,
                            void *data);

/** RFC 3339 with microseconds and Z, as Kubernetes' MicroTime: 28 bytes. */
void kubeapi_format_microtime(struct timespec t, char out[32]);

#endif /* MUSTER_KUBEAPI_WRITES_H */
