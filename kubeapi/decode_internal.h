/*
 * Shared by the decoders (decode_*.c) and nothing else: typed access to
 * cJSON fields with caps, error reporting with a field path, metadata, and
 * a scratch builder for blobs.
 */
#ifndef MUSTER_KUBEAPI_DECODE_INTERNAL_H
#define MUSTER_KUBEAPI_DECODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "kubeapi/decode.h"

/* Scratch for building one object's blobs, owned by the model and reused
 * by every decode (decoding is not reentrant: one loop, one model). Entries
 * are zeroed as they are taken, so blob bytes never carry stale padding. */
struct kubeapi__scratch {
	struct kubeapi_toleration tol[KUBEAPI_MAX_LIST];
	struct kubeapi_kv sel[KUBEAPI_MAX_LIST];
	struct kubeapi_term terms[KUBEAPI_MAX_LIST];
	struct kubeapi_requirement reqs[KUBEAPI_MAX_LIST];
	uint32_t values[KUBEAPI_MAX_LIST];
	struct kubeapi_vgpu_ask vgpu[KUBEAPI_MAX_CONTAINERS];
	struct kubeapi_kv labels[KUBEAPI_MAX_LABELS];
};

struct kubeapi_model {
	struct kubeapi__scratch *scratch;
	struct intern *in;
	char *resources[KUBEAPI_MAX_RESOURCES];   /* NULL: a free slot */
	uint32_t res_refs[KUBEAPI_MAX_RESOURCES]; /* blobs that use the index */
	uint64_t res_pinned;                      /* slots never freed */
	unsigned nres;                            /* one past the highest used */
	uint64_t res_gen;                         /* bumped when a name gets a slot */
};

/* One decode call: the model and where errors go. A decoder fills a zeroed
 * local object as it interns, and on failure releases that partial object
 * with the object's own *_release(), so nothing is tracked here. */
struct kubeapi__dec {
	struct kubeapi_model *m;
	struct kubeapi_decode_error *err;
	/* Labels over their caps are skipped, not an error: set while reading
	 * a pod's whole label set, which only PodDisruptionBudget selectors
	 * read (the API server never lets a selector name such a label). */
	bool skip_long_labels;
	/* Set while reading a Node's allocatable: names it offers get a slot.
	 * Otherwise names are only looked up. */
	bool offers;
	uint64_t fresh; /* slots this decode gave a name; freed if unused at the end */
};

/* The resource table's slots (model.c): a name into a free slot (its
 * index, -ENOSPC, -EINVAL), a slot freed, references taken on the
 * indexes in mask. */
int kubeapi__res_add(struct kubeapi_model *m, const char *name, size_t len);
void kubeapi__res_free(struct kubeapi_model *m, unsigned i);
void kubeapi__res_ref_mask(struct kubeapi_model *m, uint64_t mask);

void kubeapi__dec_init(struct kubeapi__dec *d, struct kubeapi_model *m,
                       struct kubeapi_decode_error *err, const char *kind);

/* Fill err->msg; returns -EINVAL. */
int kubeapi__fail(struct kubeapi__dec *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "parent.key" into buf (truncated to len), for messages about a field of
 * an array entry whose own path is built at run time. Returns buf. */
const char *kubeapi__path(char *buf, size_t len, const char *parent, const char *key);

/* Intern s[0..len); 0 when out of memory (the caller returns -ENOMEM). */
uint32_t kubeapi__intern(struct kubeapi__dec *d, const char *s, size_t len);

/* String references held by a blob under construction. */
struct kubeapi__ids {
	uint32_t *v;
	size_t n, cap;
	uint64_t res; /* resource slots the blob uses: a new blob counts them */
};

/* Intern s[0..len) into ids; 0 when out of memory. */
uint32_t kubeapi__intern_to(struct kubeapi__dec *d, struct kubeapi__ids *ids, const char *s,
                            size_t len);

/* Intern a built blob holding the string references in ids, and consume
 * ids: a new blob keeps those references, an existing one already holds its
 * own so they are dropped, and on failure (NULL: out of memory) too. */
const void *kubeapi__blob(struct kubeapi__dec *d, const void *data, size_t len,
                          struct kubeapi__ids *ids);

/* Drop every reference in ids and free it. */
void kubeapi__ids_drop(struct intern *in, struct kubeapi__ids *ids);

/* Field access. `o` may be NULL (then the field is absent). A JSON null is
 * absent too. Return 0 when present and valid, 1 when absent, or a negative
 * errno with err filled (`path` names the field in messages). */
int kubeapi__object(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                    const cJSON **out);
int kubeapi__array(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                   size_t max, const cJSON **out);
int kubeapi__string(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                    size_t max, const char **s, size_t *len);
int kubeapi__int(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                 int64_t min, int64_t max, int64_t *v);
int kubeapi__bool(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                  bool *v);
/* A string field interned (0 when absent or empty: Kubernetes omits empty
 * strings, so "" means unset). */
int kubeapi__string_id(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                       size_t max, uint32_t *id);

/* The index of s[0..len) in names[0..n), or -1: how enum-valued fields
 * (operators, effects, phases) are read. */
int kubeapi__lookup(const char *const *names, size_t n, const char *s, size_t len);

/* RFC 3339 time ("2026-11-21T16:35:22Z", fractions and offsets allowed) to
 * unix seconds. 0 or -EINVAL. */
int kubeapi__parse_time(const char *s, size_t len, int64_t *out);

/* "123e4567-e89b-12d3-a456-426614174000" to 16 bytes. 0 or -EINVAL. */
int kubeapi__parse_uid(const char *s, size_t len, uint8_t out[16]);

struct kubeapi__meta {
	uint8_t uid[16];
	uint32_t ns, name;
	uint64_t rv;
	int64_t created_s, deleted_s;
	bool deleting;
	const cJSON *labels, *annotations, *owners;
};

/* Read metadata (name required; namespace required when `namespaced`);
 * also records kind/namespace/name in err for the caller's log line. */
int kubeapi__meta(struct kubeapi__dec *d, const cJSON *obj, bool namespaced,
                  struct kubeapi__meta *out);

/* One kind's decoder, driven by kubeapi__decode(): identity() copies what
 * metadata gave (it cannot fail, so the references it moves are always
 * released with the object), fields() reads the rest. `arg` is per call
 * (the PodGroup dialect). */
struct kubeapi__kind {
	const char *name;
	bool namespaced;
	size_t size;
	void (*identity)(void *obj, const struct kubeapi__meta *md, const void *arg);
	int (*fields)(struct kubeapi__dec *d, const cJSON *obj, const struct kubeapi__meta *md,
	              void *out);
	void (*release)(struct kubeapi_model *m, void *obj);
};

/* Scratch big and aligned enough for any decoded object. */
union kubeapi__any_object {
	struct kubeapi_pod pod;
	struct kubeapi_node node;
	struct kubeapi_podgroup pg;
	struct kubeapi_priorityclass pc;
	struct kubeapi_pdb pdb;
	struct kubeapi_namespace ns;
	struct kubeapi_workload wl;
};

/* The kinds, for the driver and the cache's stores. */
extern const struct kubeapi__kind kubeapi__node_kind, kubeapi__pod_kind, kubeapi__podgroup_kind,
    kubeapi__priorityclass_kind, kubeapi__pdb_kind, kubeapi__namespace_kind, kubeapi__workload_kind;

/* The typed *_release functions behind a void pointer. */
void kubeapi__node_release(struct kubeapi_model *m, void *obj);
void kubeapi__pod_release(struct kubeapi_model *m, void *obj);
void kubeapi__podgroup_release(struct kubeapi_model *m, void *obj);
void kubeapi__priorityclass_release(struct kubeapi_model *m, void *obj);
void kubeapi__pdb_release(struct kubeapi_model *m, void *obj);
void kubeapi__namespace_release(struct kubeapi_model *m, void *obj);
void kubeapi__workload_release(struct kubeapi_model *m, void *obj);

/* Decode obj as kind k: all of *out on success, nothing (and no reference
 * left behind) on failure. */
int kubeapi__decode(struct kubeapi_model *m, const struct kubeapi__kind *k, const void *arg,
                    const cJSON *obj, void *out, struct kubeapi_decode_error *err);

/* Resource amounts by index, as decoded from a ResourceList. */
struct kubeapi__amounts {
	int64_t v[KUBEAPI_MAX_RESOURCES];
	uint64_t present; /* bit per index */
};

/* Add a ResourceList object into *a. Quantities are exact strings or JSON
 * integers; overflow is an error. */
int kubeapi__amounts_read(struct kubeapi__dec *d, const cJSON *list, const char *path,
                          struct kubeapi__amounts *a);
int kubeapi__amounts_add(struct kubeapi__dec *d, struct kubeapi__amounts *a,
                         const struct kubeapi__amounts *b, const char *path);
void kubeapi__amounts_max(struct kubeapi__amounts *a, const struct kubeapi__amounts *b);
/* Non-zero entries as kubeapi_res sorted by index; returns the count. */
unsigned kubeapi__amounts_list(const struct kubeapi__amounts *a, struct kubeapi_res *out);
/* Intern them as a reslist blob (NULL, not an error, when empty). */
int kubeapi__reslist(struct kubeapi__dec *d, const struct kubeapi__amounts *a,
                     const struct kubeapi_reslist **out);
/* Drop a reslist blob; with its last reference, its resource slots. */
void kubeapi__reslist_unref(struct kubeapi_model *m, const struct kubeapi_reslist *l);
/* The slots of n entries: a new blob takes them in kubeapi__blob(). */
uint64_t kubeapi__res_mask(const struct kubeapi_res *e, uint32_t n);
/* Release the slots of n entries of a blob about to be freed. */
void kubeapi__res_unref(struct kubeapi_model *m, const struct kubeapi_res *e, uint32_t n);

/* Intern the labels (and then annotations) whose keys start with `prefix`
 * ("" for all) as a label blob; a label wins over an annotation with the
 * same key. NULL, not an error, when none match. */
int kubeapi__labels(struct kubeapi__dec *d, const cJSON *labels, const cJSON *annotations,
                    const char *prefix, const struct kubeapi_labels **out);

/* Blobs are built in a struct buf (base/buf.h) set up by
 * kubeapi__blob_buf_init(): uncapped, as it always was, since its size
 * follows from the decoded object, bounded where its JSON was read. */
static inline void kubeapi__blob_buf_init(struct buf *b)
{
	buf_init(b, SIZE_MAX);
}
/* Reserve n zeroed bytes aligned to 8 at the end of b; returns their
 * offset, or (size_t)-1 when out of memory. */
size_t kubeapi__buf_add(struct buf *b, size_t n);

/* The vGPU device protocol (decode_vgpu.c). A Node's registered GPUs and
 * a pod's held shares: NULL when absent or unreadable (then
 * err->warning says so); 0 or -ENOMEM. What container c (at path) asks:
 * 0 with *out, 1 when it asks for no vGPU, -EINVAL. */
int kubeapi__node_gpus(struct kubeapi__dec *d, const cJSON *annotations,
                       const struct kubeapi__amounts *allocatable, const struct kubeapi_gpus **out);
int kubeapi__pod_vgpu(struct kubeapi__dec *d, const cJSON *annotations,
                      const struct kubeapi_vgpu_held **out);
int kubeapi__container_vgpu(struct kubeapi__dec *d, const cJSON *c, const char *path,
                            struct kubeapi_vgpu_ask *out);
void kubeapi__gpus_unref(struct intern *in, const struct kubeapi_gpus *g);
void kubeapi__vgpu_held_unref(struct intern *in, const struct kubeapi_vgpu_held *h);

/* Release the string ids held inside blobs before their last unref. */
void kubeapi__labels_unref(struct intern *in, const struct kubeapi_labels *l);
void kubeapi__taints_unref(struct intern *in, const struct kubeapi_taints *t);
void kubeapi__podspec_unref(struct kubeapi_model *m, const struct kubeapi_podspec *s);
void kubeapi__selector_unref(struct intern *in, const struct kubeapi_selector *s);

#endif /* MUSTER_KUBEAPI_DECODE_INTERNAL_H */
