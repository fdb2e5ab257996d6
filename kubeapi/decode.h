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

#include "base/intern.h"
#include "kubeapi/model.h"

/* Caps on what one object may carry; larger is an error. */
#define KUBEAPI_MAX_NAME       253  /* object names, label values, keys */
#define KUBEAPI_MAX_STRING     4096 /* any other string read */
#define KUBEAPI_MAX_CONTAINERS 256
#define KUBEAPI_MAX_LIST       1024 /* tolerations, taints, terms, requirements, values */
#define KUBEAPI_MAX_LABELS     1024

/* The interned strings and the resource names shared by all decoded objects. */
struct kubeapi_model;

/** Create a model with the well-known resources registered. 0 or -ENOMEM. */
int kubeapi_model_new(struct kubeapi_model **out);

/** Free it; every object decoded with it must be released first. */
void kubeapi_model_free(struct kubeapi_model **mp);

/** Its string and blob table. */
struct intern *kubeapi_model_intern(struct kubeapi_model *m);

/* The resource table. A slot is held by the decoded objects whose blobs
 * use its index (counted) or pinned for the model's life (the well-known
 * names and those passed to kubeapi_model_resource()). Only a Node's
 * allocatable brings a new name in, at most KUBEAPI_MAX_NEW_RESOURCES per
 * Node; a name no object uses any more frees its slot. A pod or PodGroup
 * only looks names up (KUBEAPI_RES_UNOFFERED when absent), so what
 * tenants create cannot fill the table; when a name arrives, objects that
 * asked for an unoffered one must be decoded again
 * (kubeapi_model_resource_gen() tells when). */
#define KUBEAPI_MAX_NEW_RESOURCES 16

/** Index of resource `name`, registering and pinning it; -ENOSPC when
 *  every slot is taken, -EINVAL for an empty or oversized name. */
int kubeapi_model_resource(struct kubeapi_model *m, const char *name, size_t len);

/** Index of resource `name` if it has a slot, else -ENOENT. */
int kubeapi_model_resource_find(const struct kubeapi_model *m, const char *name, size_t len);

/** One past the highest slot in use: indexes run 0 .. n-1 (some of them
 *  may be free: their name is NULL). */
unsigned kubeapi_model_nresources(const struct kubeapi_model *m);

/** Name of resource index `res`, or NULL for a free slot. */
const char *kubeapi_model_resource_name(const struct kubeapi_model *m, unsigned res);

/** Bumped each time a name gets a slot. */
uint64_t kubeapi_model_resource_gen(const struct kubeapi_model *m);

/** Objects holding KUBEAPI_RES_UNOFFERED (a decoded pod spec or PodGroup
 *  counts once per shared blob). */
unsigned kubeapi_model_unoffered(const struct kubeapi_model *m);

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

/* Release what a decoded object references and zero it. Safe on zeroed. */
void kubeapi_pod_release(struct kubeapi_model *m, struct kubeapi_pod *p);
void kubeapi_node_release(struct kubeapi_model *m, struct kubeapi_node *n);
void kubeapi_podgroup_release(struct kubeapi_model *m, struct kubeapi_podgroup *g);
void kubeapi_priorityclass_release(struct kubeapi_model *m, struct kubeapi_priorityclass *pc);
void kubeapi_pdb_release(struct kubeapi_model *m, struct kubeapi_pdb *d);
void kubeapi_namespace_release(struct kubeapi_model *m, struct kubeapi_namespace *ns);

/** Look up a label in a label set: the value id, or 0 when absent. */
uint32_t kubeapi_labels_get(const struct kubeapi_labels *l, uint32_t key);

#endif /* MUSTER_KUBEAPI_DECODE_H */
