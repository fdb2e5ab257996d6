/*
 * Decoding API objects (parsed by cJSON) into the compact model of
 * kubeapi/model.h.
 *
 * Each decoder reads only the fields the scheduler uses, checks their types
 * and sizes, and either fills *out completely (taking references on the
 * interned strings and blobs it points to) or fails without a trace,
 * describing the problem in *err so the caller can log the object by kind,
 * namespace and name and skip it. Hostile input (wrong types, huge numbers,
 * unknown quantity suffixes, oversized strings or arrays) is an error, never
 * a crash. A decoded object is released with the matching *_release().
 *
 * Cost: linear in the fields read; no allocation for specs already seen
 * (pods of one Job share one spec blob).
 */
#ifndef MUSTER_KUBEAPI_DECODE_H
#define MUSTER_KUBEAPI_DECODE_H

#include <cjson/cJSON.h>

#include "kubeapi/model.h"

/* Caps on what one object may carry; larger is an error. */
#define KUBEAPI_MAX_NAME       253  /* object names, label values, keys */
#define KUBEAPI_MAX_STRING     4096 /* any other string read */
#define KUBEAPI_MAX_CONTAINERS 256
#define KUBEAPI_MAX_LIST       1024 /* tolerations, taints, terms, requirements, values */
#define KUBEAPI_MAX_LABELS     1024

/** What went wrong, and with which object (as far as it could be read). */
struct kubeapi_decode_error {
	char kind[32];
	char ns[64];
	char name[KUBEAPI_MAX_NAME + 1];
	char msg[256]; /* "spec.containers[1].resources.requests.cpu: bad quantity \"1x\"" */
	/* After a successful decode: resource names a Node offers that got no
	 * slot (the table is full, or the Node brings more than
	 * KUBEAPI_MAX_NEW_RESOURCES); the Node is kept without them. */
	unsigned untracked;
	char untracked_name[64]; /* the first, cut at 63 bytes */
	/* After a successful decode: a part of the object that was ignored
	 * because it could not be read (a malformed vGPU annotation), or "". */
	char warning[192];
};

/** Format "Kind ns/name: msg" into buf (for log lines). Returns buf. */
const char *kubeapi_decode_error_str(const struct kubeapi_decode_error *e, char *buf, size_t len);

/* Decoders: 0 on success, -EINVAL on a malformed object (err filled), -ENOMEM. */
int kubeapi_pod_decode(struct kubeapi_model *m, const cJSON *obj, struct kubeapi_pod *out,
                       struct kubeapi_decode_error *err);
int kubeapi_node_decode(struct kubeapi_model *m, const cJSON *obj, struct kubeapi_node *out,
                        struct kubeapi_decode_error *err);
int kubeapi_podgroup_decode(struct kubeapi_model *m, enum kubeapi_dialect dialect, const cJSON *obj,
                            struct kubeapi_podgroup *out, struct kubeapi_decode_error *err);
int kubeapi_priorityclass_decode(struct kubeapi_model *m, const cJSON *obj,
                                 struct kubeapi_priorityclass *out,
                                 struct kubeapi_decode_error *err);
int kubeapi_pdb_decode(struct kubeapi_model *m, const cJSON *obj, struct kubeapi_pdb *out,
                       struct kubeapi_decode_error *err);
int kubeapi_namespace_decode(struct kubeapi_model *m, const cJSON *obj,
                             struct kubeapi_namespace *out, struct kubeapi_decode_error *err);
int kubeapi_workload_decode(struct kubeapi_model *m, const cJSON *obj, struct kubeapi_workload *out,
                            struct kubeapi_decode_error *err);

/* A second pod holding everything src references (ids and shared blobs):
 * dst may then be changed where a later state of the pod would differ
 * (phase, times, resourceVersion; its node through kubeapi_pod_set_node)
 * and is released on its own. For simulations (sim/). */
void kubeapi_pod_copy(struct kubeapi_model *m, const struct kubeapi_pod *src,
                      struct kubeapi_pod *dst);
/* The pod's spec.nodeName becomes the interned id node (0: none). */
void kubeapi_pod_set_node(struct kubeapi_model *m, struct kubeapi_pod *p, uint32_t node);

/* Release what a decoded object references and zero it. Safe on zeroed. */
void kubeapi_pod_release(struct kubeapi_model *m, struct kubeapi_pod *p);
void kubeapi_node_release(struct kubeapi_model *m, struct kubeapi_node *n);
void kubeapi_podgroup_release(struct kubeapi_model *m, struct kubeapi_podgroup *g);
void kubeapi_priorityclass_release(struct kubeapi_model *m, struct kubeapi_priorityclass *pc);
void kubeapi_pdb_release(struct kubeapi_model *m, struct kubeapi_pdb *d);
void kubeapi_namespace_release(struct kubeapi_model *m, struct kubeapi_namespace *ns);
void kubeapi_workload_release(struct kubeapi_model *m, struct kubeapi_workload *w);

#endif /* MUSTER_KUBEAPI_DECODE_H */
