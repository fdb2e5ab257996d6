/*
 * The cluster as Muster's cache holds it: compact C structs with what the
 * scheduler reads, decoded from the API server's JSON (decode.c).
 *
 * Strings are interned ids (base/intern.h; 0 = absent). What many
 * objects share is a hash-consed, immutable blob: a pod's scheduling spec
 * (requests, tolerations, selectors, affinity), a node's allocatable and
 * taints, a label set. Blobs hold no pointers: arrays sit after the header
 * at the offsets it records, read through the accessors below, so equal
 * specs are equal bytes and are stored once.
 *
 * Resource amounts are int64: CPU in millicores, everything else in whole
 * units (bytes for memory and storage, devices for extended resources), as
 * Kubernetes compares them.
 */
#ifndef MUSTER_KUBEAPI_MODEL_H
#define MUSTER_KUBEAPI_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/intern.h"

/* Well-known resources have fixed indexes; others get a slot when a Node
 * offers them or the queue file names them (decode.h), up to
 * KUBEAPI_MAX_RESOURCES at once. A pod or PodGroup asking for a name no
 * slot holds asks for KUBEAPI_RES_UNOFFERED instead, which no node has: it
 * fits nowhere, and tenants cannot fill the table. */
enum {
	KUBEAPI_RES_CPU,
	KUBEAPI_RES_MEMORY,
	KUBEAPI_RES_PODS,
	KUBEAPI_RES_EPHEMERAL,
	KUBEAPI_RES_GPU,       /* nvidia.com/gpu */
	KUBEAPI_RES_UNOFFERED, /* one unit per requested name that no node offers */
	KUBEAPI_RES_WELL_KNOWN,
	KUBEAPI_MAX_RESOURCES = 64,
};

struct kubeapi_res {
	uint16_t res; /* resource index */
	uint16_t pad_;
	uint32_t pad2_;
	int64_t amount;
};

/* A resource list blob: n entries sorted by resource index, no zeros. */
struct kubeapi_reslist {
	uint32_t n;
	uint32_t pad_;
	struct kubeapi_res e[];
};

/* Ids of label keys and values, sorted by key id. */
struct kubeapi_kv {
	uint32_t key, value;
};

/* A label set blob. */
struct kubeapi_labels {
	uint32_t n;
	uint32_t pad_;
	struct kubeapi_kv e[];
};

enum kubeapi_effect {
	KUBEAPI_EFFECT_ANY, /* in a toleration: empty effect matches all */
	KUBEAPI_EFFECT_NO_SCHEDULE,
	KUBEAPI_EFFECT_PREFER_NO_SCHEDULE,
	KUBEAPI_EFFECT_NO_EXECUTE,
};

struct kubeapi_taint {
	uint32_t key, value;
	uint8_t effect;
	uint8_t pad_[7];
};

/* A node's taints blob. */
struct kubeapi_taints {
	uint32_t n;
	uint32_t pad_;
	struct kubeapi_taint e[];
};

enum kubeapi_toleration_op { KUBEAPI_TOL_EQUAL, KUBEAPI_TOL_EXISTS };

struct kubeapi_toleration {
	uint32_t key, value; /* key 0 with EXISTS tolerates everything */
	uint8_t op, effect;
	uint8_t has_seconds;
	uint8_t pad_;
	uint32_t pad2_;
	int64_t seconds; /* tolerationSeconds, when has_seconds */
};

enum kubeapi_selector_op {
	KUBEAPI_SEL_IN,
	KUBEAPI_SEL_NOT_IN,
	KUBEAPI_SEL_EXISTS,
	KUBEAPI_SEL_DOES_NOT_EXIST,
	KUBEAPI_SEL_GT,
	KUBEAPI_SEL_LT,
};

/* One matchExpressions / matchFields requirement; values are string ids at
 * spec->values[first .. first + n). Fields use key "metadata.name". */
struct kubeapi_requirement {
	uint32_t key;
	uint8_t op, is_field;
	uint16_t nvalues;
	uint32_t first_value;
};

/* A node selector term: requirements[first .. first + n), all must hold.
 * In preferred terms `weight` is 1..100; required terms have weight 0. */
struct kubeapi_term {
	uint32_t first, n;
	int32_t weight;
};

/* The scheduling-relevant part of a pod spec, shared by every pod whose
 * spec is the same (the pods of one Job, one gang). A blob: the arrays
 * follow the header at the recorded offsets (bytes from the header). */
struct kubeapi_podspec {
	uint32_t scheduler;      /* spec.schedulerName */
	uint32_t priority_class; /* spec.priorityClassName */
	int32_t priority;        /* spec.priority (resolved by admission) */
	uint8_t has_priority;
	uint8_t preempt_never; /* preemptionPolicy: Never */
	uint16_t nrequests, ntolerations, nselector;
	uint16_t nrequired, npreferred, nrequirements;
	uint16_t nvgpu; /* containers that ask for vGPUs (kubeapi_podspec_vgpu) */
	uint32_t nvalues;
	uint32_t off_requests, off_tolerations, off_selector, off_terms, off_requirements,
	    off_values, off_vgpu;
	uint16_t unsupported; /* enum kubeapi_unsupported bits */
	uint8_t gated;        /* spec.schedulingGates is not empty */
	uint8_t pad2_;
	int64_t active_deadline_s; /* -1 when unset */
};

/* Constraints a pod can state that Muster does not apply yet
 * (kubeapi_podspec.unsupported). A pod stating one waits, and says which,
 * rather than be placed where its own spec forbids: the kubelet checks
 * none of them once the pod is bound. Preferred pod (anti-)affinity and
 * ScheduleAnyway spread constraints are scores, not constraints: they are
 * not read, and do not make a pod wait. */
enum kubeapi_unsupported {
	KUBEAPI_UNSUP_POD_AFFINITY = 1,      /* podAffinity, required terms */
	KUBEAPI_UNSUP_POD_ANTI_AFFINITY = 2, /* podAntiAffinity, required terms */
	KUBEAPI_UNSUP_SPREAD = 4,            /* topologySpreadConstraints, DoNotSchedule */
	KUBEAPI_UNSUP_VOLUMES = 8,           /* persistentVolumeClaim or ephemeral volumes */
	KUBEAPI_UNSUP_HOST_PORTS = 16,       /* a container's hostPort */
	KUBEAPI_UNSUP_CLAIMS = 32,           /* spec.resourceClaims (DRA) */
};
/** The field an unsupported bit stands for ("podAntiAffinity (required)"),
 *  for the lowest bit set in bits; NULL for none. */
const char *kubeapi_unsupported_name(unsigned bits);

/* What one container asks for vGPUs (the device protocol of
 * kubeapi/vgpu.h), read from its limits (then requests) as Volcano
 * v1.15.1's ExtractResourceRequest does: nums GPUs, on each mem MiB or,
 * when mem_pct is not KUBEAPI_VGPU_NO_PCT, that percent of the GPU's
 * memory (neither asked: 100 percent), and cores percent of its cores. */
#define KUBEAPI_VGPU_NO_PCT 101
/* Devices per node and shares per pod read at most: a node has a handful
 * of GPUs, a pod a few per container. */
#define KUBEAPI_VGPU_MAX_DEVICES 64
#define KUBEAPI_VGPU_MAX_SHARES  64
struct kubeapi_vgpu_ask {
	uint32_t nums, mem, mem_pct, cores;
};

static inline const struct kubeapi_res *kubeapi_podspec_requests(const struct kubeapi_podspec *s)
{
	return (const void *)((const char *)s + s->off_requests);
}
static inline const struct kubeapi_toleration *
kubeapi_podspec_tolerations(const struct kubeapi_podspec *s)
{
	return (const void *)((const char *)s + s->off_tolerations);
}
/* nodeSelector as sorted (key, value) pairs. */
static inline const struct kubeapi_kv *kubeapi_podspec_selector(const struct kubeapi_podspec *s)
{
	return (const void *)((const char *)s + s->off_selector);
}
/* Required terms first (nrequired, ORed), then preferred (npreferred). */
static inline const struct kubeapi_term *kubeapi_podspec_terms(const struct kubeapi_podspec *s)
{
	return (const void *)((const char *)s + s->off_terms);
}
static inline const struct kubeapi_requirement *
kubeapi_podspec_requirements(const struct kubeapi_podspec *s)
{
	return (const void *)((const char *)s + s->off_requirements);
}
static inline const uint32_t *kubeapi_podspec_values(const struct kubeapi_podspec *s)
{
	return (const void *)((const char *)s + s->off_values);
}
/* One ask per container that asks for vGPUs, in container order. */
static inline const struct kubeapi_vgpu_ask *kubeapi_podspec_vgpu(const struct kubeapi_podspec *s)
{
	return (const void *)((const char *)s + s->off_vgpu);
}

/* The vGPU shares a pod holds (annotation volcano.sh/vgpu-ids-new, as the
 * scheduler that placed it wrote it): container (among those that ask),
 * the GPU's UUID id, MiB and cores percent. A blob. */
struct kubeapi_vgpu_hold {
	uint32_t container, uuid, mem, cores;
};
struct kubeapi_vgpu_held {
	uint32_t n, ncontainers;
	struct kubeapi_vgpu_hold e[];
};

enum kubeapi_pod_phase {
	KUBEAPI_POD_PENDING,
	KUBEAPI_POD_RUNNING,
	KUBEAPI_POD_SUCCEEDED,
	KUBEAPI_POD_FAILED,
	KUBEAPI_POD_UNKNOWN,
};

/* How the pod names its group. */
enum kubeapi_group_source {
	KUBEAPI_GROUP_NONE,
	KUBEAPI_GROUP_LABEL,      /* label scheduling.x-k8s.io/pod-group */
	KUBEAPI_GROUP_ANNOTATION, /* annotation scheduling.k8s.io/group-name */
	KUBEAPI_GROUP_NATIVE,     /* spec.schedulingGroup.podGroupName */
};

/* PodScheduled as the pod last reported it, so status writes can be skipped
 * when nothing changed. */
enum kubeapi_sched_cond {
	KUBEAPI_SCHED_COND_NONE,
	KUBEAPI_SCHED_COND_TRUE,
	KUBEAPI_SCHED_COND_UNSCHEDULABLE,
	KUBEAPI_SCHED_COND_OTHER,
};

struct kubeapi_pod {
	uint8_t uid[16];
	uint32_t ns, name;
	uint32_t node;                   /* spec.nodeName; 0 while unbound */
	uint32_t group;                  /* PodGroup name in ns; 0 for a pod on its own */
	uint32_t owner_kind, owner_name; /* controller owner reference, or 0 */
	uint8_t phase, group_source, sched_cond, deleting;
	uint32_t task;      /* Volcano task: annotation or label volcano.sh/task-spec, or 0 */
	uint32_t sched_msg; /* kubeapi_text_hash() of PodScheduled's message, 0 if none */
	int64_t created_s, deleted_s;        /* creation, deletion timestamps (unix s) */
	int64_t started_s;                   /* status.startTime (unix s), 0 when absent */
	uint64_t rv;                         /* metadata.resourceVersion, 0 if not numeric */
	const struct kubeapi_podspec *spec;  /* shared blob */
	const struct kubeapi_labels *muster; /* labels and annotations under muster.dev/ */
	/* All labels, for PodDisruptionBudget selectors. Shared: the pods of a
	 * gang mostly carry the same set. */
	const struct kubeapi_labels *labels;
	const struct kubeapi_vgpu_held *vgpu; /* NULL: none (or unreadable, logged) */
};

/* A pod's key in the cache's store and in every map keyed by pod. */
static inline uint64_t kubeapi_pod_key(const struct kubeapi_pod *pod)
{
	return (uint64_t)pod->ns << 32 | pod->name;
}

/* One physical GPU as the node's vGPU device plugin registered it
 * (volcano.sh/node-vgpu-register), in registration order: its UUID and
 * model ids, memory in MiB, how many pods may share it. */
struct kubeapi_gpu {
	uint32_t uuid, type;
	uint32_t memory, split;
	uint8_t healthy, mig;
	uint8_t pad_[6];
};
struct kubeapi_gpus {
	uint32_t n;
	uint32_t pad_;
	struct kubeapi_gpu e[];
};

struct kubeapi_node {
	uint8_t uid[16];
	uint32_t name;
	uint8_t ready, unschedulable;
	uint16_t pad_;
	uint64_t rv;
	const struct kubeapi_reslist *allocatable;
	const struct kubeapi_taints *taints;
	const struct kubeapi_labels *labels;
	/* The registered GPUs, or NULL: the node keeps whole-GPU accounting
	 * (no registration, or one that could not be read, which is logged). */
	const struct kubeapi_gpus *gpus;
};

enum kubeapi_dialect {
	KUBEAPI_PG_SCHEDULER_PLUGINS, /* scheduling.x-k8s.io/v1alpha1 */
	KUBEAPI_PG_VOLCANO,           /* scheduling.volcano.sh/v1beta1 */
	KUBEAPI_PG_NATIVE,            /* scheduling.k8s.io/v1beta1 (Kubernetes 1.37) */
};

/* The condition a native PodGroup carries while it waits (False, reason
 * Unschedulable) and once admitted (True, never reverted), as
 * kube-scheduler writes it. */
#define KUBEAPI_PG_SCHEDULED "PodGroupInitiallyScheduled"

/* A native PodGroup's spec.disruptionMode. */
enum kubeapi_disruption {
	KUBEAPI_DISRUPT_UNSET,
	KUBEAPI_DISRUPT_SINGLE, /* single: members may be evicted one by one */
	KUBEAPI_DISRUPT_ALL,    /* all: the gang is evicted whole or not at all */
};

/* Volcano spec.minTaskMember: at most this many tasks (a training job has
 * a handful of roles: master, worker, ps, chief, evaluator, launcher). */
#define KUBEAPI_MAX_TASKS 8

struct kubeapi_min_task {
	uint32_t task; /* the name pods carry in volcano.sh/task-spec */
	int32_t min;
};

/* A PodGroup's status as the API server holds it: what status writes are
 * compared with. Volcano's conditions are read only when there is exactly
 * one (what Muster writes); several are reported as ncond > 1. */
struct kubeapi_pg_status {
	uint32_t phase; /* status.phase, or 0 */
	int32_t running, succeeded, failed;
	uint32_t cond_type, cond_reason; /* the condition's type and reason */
	uint32_t cond_msg;               /* kubeapi_text_hash() of its message */
	uint32_t transition_id;          /* its transitionID */
	int64_t cond_time_s;             /* its lastTransitionTime (unix s) */
	uint8_t ncond, cond_true;        /* how many conditions; status "True" */
	uint16_t pad_;
};

struct kubeapi_podgroup {
	uint8_t uid[16];
	uint32_t ns, name;
	uint8_t dialect;
	uint8_t has_timeout;
	uint8_t ntasks; /* entries in min_tasks */
	uint8_t basic;  /* native schedulingPolicy.basic: pods one by one, no gang */
	int32_t min_member;
	int32_t timeout_s;       /* scheduleTimeoutSeconds, when has_timeout */
	uint32_t queue;          /* Volcano spec.queue, else 0 */
	uint32_t priority_class; /* Volcano or native spec.priorityClassName, else 0 */
	/* Native only (zero for the CRD dialects): spec.priority, which wins
	 * over the class when set; preemptionPolicy Never; disruptionMode;
	 * schedulingConstraints.topology[0].key, the node label every member
	 * must share one value of (the API allows one). */
	int32_t priority;
	uint8_t has_priority, preempt_never, disruption;
	uint8_t pad_;
	uint32_t topology_key;
	uint32_t workload; /* spec.workloadRef.workloadName, else 0 */
	int64_t created_s;
	uint64_t rv;
	const struct kubeapi_reslist *min_resources;
	const struct kubeapi_labels *muster;
	struct kubeapi_pg_status status;
	struct kubeapi_min_task min_tasks[KUBEAPI_MAX_TASKS]; /* Volcano, sorted by task id */
};

/** A 32-bit hash of text[0..len) (FNV-1a, never 0): how a status message
 *  is remembered without keeping it. O(len). */
static inline uint32_t kubeapi_text_hash(const char *text, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)text[i]) * 16777619u;
	return h ? h : 1;
}

struct kubeapi_priorityclass {
	uint32_t name;
	int32_t value;
	uint8_t global_default, preempt_never;
	uint16_t pad_;
	uint64_t rv;
};

/* A label selector blob (matchLabels become In requirements with one
 * value): requirements[0 .. nreq), all must hold; values as in podspec. */
struct kubeapi_selector {
	uint32_t nreq, nvalues;
	uint32_t off_requirements, off_values;
};

static inline const struct kubeapi_requirement *
kubeapi_selector_requirements(const struct kubeapi_selector *s)
{
	return (const void *)((const char *)s + s->off_requirements);
}
static inline const uint32_t *kubeapi_selector_values(const struct kubeapi_selector *s)
{
	return (const void *)((const char *)s + s->off_values);
}

/* A PodDisruptionBudget, for preemption: which pods it guards and how many
 * of them may be disrupted now. */
struct kubeapi_pdb {
	uint32_t ns, name;
	int32_t disruptions_allowed; /* status.disruptionsAllowed */
	uint8_t selects_nothing;     /* selector absent: matches no pod (policy/v1) */
	uint8_t pad_[3];
	uint64_t rv;
	const struct kubeapi_selector *selector; /* NULL when selects_nothing */
};

/* A Workload (scheduling.k8s.io/v1beta1): only its labels under
 * muster.dev/, where its PodGroups' queue may be named. */
struct kubeapi_workload {
	uint32_t ns, name;
	uint64_t rv;
	const struct kubeapi_labels *muster;
};

struct kubeapi_namespace {
	uint32_t name;
	uint8_t terminating;
	uint8_t pad_[3];
	uint64_t rv;
	const struct kubeapi_labels *muster;
};

/* ---- the model's handle (model.c) ---------------------------------------- */

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

/** Look up a label in a label set: the value id, or 0 when absent. */
uint32_t kubeapi_labels_get(const struct kubeapi_labels *l, uint32_t key);

/* ---- label selectors (model.c) ------------------------------------------- */

/* One matcher for the two selector shapes the scheduler evaluates: a pod
 * spec's nodeSelector and node affinity against a Node, and a
 * PodDisruptionBudget's label selector against a Pod. They share the
 * requirement; they differ in what an empty list means and in the
 * operators they take, so each shape has its own entry point below. */

/** Does requirement r hold for an object with `labels` (NULL: none)
 *  whose metadata.name has id `field_value`? `values` is the value array
 *  of the blob r is in (r's are values[r->first_value ..]).
 *  A label is present when it has a value id (an empty value has one).
 *  In: present, with one of the values; NotIn: absent, or none of them;
 *  Exists / DoesNotExist: present / absent. Gt / Lt: present, exactly one
 *  value, and both read as int64 the way Go's strconv.ParseInt does (a
 *  value that is not an int64, out of range included, fails the match, as
 *  upstream). A field requirement (is_field: matchFields, whose only key
 *  Kubernetes allows is metadata.name) reads field_value and is always
 *  present. O(r->nvalues + log labels), plus the values' lengths for
 *  Gt / Lt. */
bool kubeapi_requirement_matches(const struct kubeapi_model *m, const struct kubeapi_labels *labels,
                                 uint32_t field_value, const struct kubeapi_requirement *r,
                                 const uint32_t *values);

/** Does node selector term `term` of spec s hold on node n? All its
 *  requirements must. An empty term holds on no node, as upstream
 *  (NodeSelectorTerm: "null or empty ... matches no objects"). */
bool kubeapi_podspec_term_matches(const struct kubeapi_model *m, const struct kubeapi_podspec *s,
                                  const struct kubeapi_term *term, const struct kubeapi_node *n);

/** Do spec s's nodeSelector (every pair) and required node affinity (one
 *  of the terms, when there are any) admit node n? */
bool kubeapi_podspec_node_matches(const struct kubeapi_model *m, const struct kubeapi_podspec *s,
                                  const struct kubeapi_node *n);

/** Does label selector sel select an object with `labels`? Every
 *  requirement must hold, so an empty selector selects everything (as a
 *  policy/v1 PodDisruptionBudget's `{}` does; an absent one is the
 *  caller's: kubeapi_pdb.selects_nothing). Gt and Lt select nothing: a
 *  metav1.LabelSelector has no such operators (the decoder refuses them),
 *  unlike a node selector. */
bool kubeapi_selector_matches(const struct kubeapi_model *m, const struct kubeapi_selector *sel,
                              const struct kubeapi_labels *labels);

#endif /* MUSTER_KUBEAPI_MODEL_H */
