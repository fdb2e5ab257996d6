/*
 * A synthetic cluster for planner tests and benchmarks: Nodes, Pods and
 * PodGroups written as the JSON the API server sends and decoded by
 * kubeapi's own decoders, so the planner sees exactly what it would see
 * from a cache. Header-only (static functions), included by test and bench
 * programs; not part of libmuster.
 */
#ifndef MUSTER_BENCH_SYNTH_H
#define MUSTER_BENCH_SYNTH_H

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeapi/decode.h"
#include "base/idmap.h"
#include "base/intern.h"
#include "kubeapi/model.h"

struct synth {
	struct kubeapi_model *model;
	struct idmap nodes, pods, groups, vcgroups;
	unsigned long seq; /* uid counter */
};

static inline int synth_init(struct synth *s)
{
	memset(s, 0, sizeof(*s));
	return kubeapi_model_new(&s->model);
}

static inline uint32_t synth_id(struct synth *s, const char *str)
{
	return intern_add(kubeapi_model_intern(s->model), str, strlen(str));
}

static inline uint64_t synth_key(struct synth *s, const char *ns, const char *name)
{
	uint32_t n = ns ? synth_id(s, ns) : 0;

	return (uint64_t)n << 32 | synth_id(s, name);
}

static inline cJSON *synth_parse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline cJSON *synth_parse(const char *fmt, ...)
{
	static char buf[16384]; /* test and bench programs are single-threaded */
	va_list ap;
	cJSON *o;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	o = cJSON_Parse(buf);
	if (!o) {
		fprintf(stderr, "synth: bad JSON: %s\n", buf);
		abort();
	}
	return o;
}

/* A Ready node with the allocatable given (cpu and memory as quantities,
 * e.g. "96" and "1Ti"), `gpus` GPUs (tainted nvidia.com/gpu=present when
 * > 0), and labels: the inside of the labels JSON object, e.g.
 * "\"kubernetes.io/hostname\":\"n1\"" (NULL: none). */
static inline const struct kubeapi_node *synth_node_sized(struct synth *s, const char *name,
                                                          const char *cpu, const char *memory,
                                                          int pods, int gpus, const char *labels)
{
	struct kubeapi_node *n = calloc(1, sizeof(*n));
	struct kubeapi_decode_error err;
	char gpu[64] = "";
	const char *taint = gpus > 0 ? "\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":"
	                               "\"present\",\"effect\":\"NoSchedule\"}]"
	                             : "";
	cJSON *o;

	if (gpus > 0)
		snprintf(gpu, sizeof(gpu), ",\"nvidia.com/gpu\":\"%d\"", gpus);
	o = synth_parse("{\"metadata\":{\"name\":\"%s\","
	                "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":\"1\","
	                "\"labels\":{%s}},\"spec\":{%s},"
	                "\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"%s\","
	                "\"pods\":\"%d\"%s},"
	                "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	                name, ++s->seq, labels ? labels : "", taint, cpu, memory, pods, gpu);
	if (!n || kubeapi_node_decode(s->model, o, n, &err) != 0) {
		char b[512];
		fprintf(stderr, "synth: node: %s\n", kubeapi_decode_error_str(&err, b, sizeof(b)));
		abort();
	}
	cJSON_Delete(o);
	idmap_put(&s->nodes, synth_key(s, NULL, name), n);
	return n;
}

/* A Ready node the vGPU device plugin registered: `gpus` GPUs of mem_mib
 * MiB shared by at most `split` pods, UUIDs GPU-<name>-<k>, with the
 * plugin's three allocatable resources, 96 CPUs, 1 TiB and 110 pods; the
 * GPU taint, and labels (the inside of metadata.labels). */
static inline const struct kubeapi_node *synth_vgpu_node(struct synth *s, const char *name,
                                                         int gpus, int mem_mib, int split,
                                                         const char *labels)
{
	struct kubeapi_node *n = calloc(1, sizeof(*n));
	struct kubeapi_decode_error err;
	char reg[2048] = "";
	size_t at = 0;
	cJSON *o;

	for (int k = 0; k < gpus && at < sizeof(reg); k++)
		at += (size_t)snprintf(
		    reg + at, sizeof(reg) - at,
		    "GPU-%s-%d,%d,%d,NVIDIA-Tesla V100-PCIE-32GB,true,hami-core:", name, k, split,
		    mem_mib);
	o = synth_parse(
	    "{\"metadata\":{\"name\":\"%s\","
	    "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":\"1\","
	    "\"labels\":{%s},\"annotations\":{\"volcano.sh/node-vgpu-register\":\"%s\"}},"
	    "\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\","
	    "\"effect\":\"NoSchedule\"}]},"
	    "\"status\":{\"allocatable\":{\"cpu\":\"96\",\"memory\":\"1Ti\","
	    "\"pods\":\"110\",\"volcano.sh/vgpu-number\":\"%d\","
	    "\"volcano.sh/vgpu-memory\":\"%d\",\"volcano.sh/vgpu-cores\":\"%d\"},"
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	    name, ++s->seq, labels ? labels : "", reg, gpus * split, gpus * mem_mib, gpus * 100);
	if (!n || kubeapi_node_decode(s->model, o, n, &err) != 0 || !n->gpus) {
		char b[512];
		fprintf(stderr, "synth: vgpu node: %s %s\n",
		        kubeapi_decode_error_str(&err, b, sizeof(b)), err.warning);
		abort();
	}
	cJSON_Delete(o);
	idmap_put(&s->nodes, synth_key(s, NULL, name), n);
	return n;
}

/* A Ready node with `gpus` GPUs (tainted nvidia.com/gpu=present when > 0),
 * 96 CPUs, 1 TiB, 110 pods, and the topology labels given (NULL: none). */
static inline const struct kubeapi_node *synth_node(struct synth *s, const char *name,
                                                    const char *zone, const char *rack, int gpus,
                                                    const char *extra_labels)
{
	char labels[512] = "";

	snprintf(labels, sizeof(labels), "\"kubernetes.io/hostname\":\"%s\"%s%s%s%s%s%s%s%s", name,
	         zone ? ",\"topology.kubernetes.io/zone\":\"" : "", zone ? zone : "",
	         zone ? "\"" : "", rack ? ",\"muster.dev/rack\":\"" : "", rack ? rack : "",
	         rack ? "\"" : "", extra_labels ? "," : "", extra_labels ? extra_labels : "");
	return synth_node_sized(s, name, "96", "1Ti", 110, gpus, labels);
}

/* A pod of scheduler `sched` asking for cpu (millicores), memory (a
 * quantity, e.g. "1Gi") and gpus, tolerating the GPU taint, in PodGroup
 * `group` (scheduler-plugins label; NULL: alone), bound to `node` (NULL:
 * pending). `extra_spec` is more JSON for spec (e.g.
 * "\"nodeSelector\":{...}"), or NULL. */
static inline struct kubeapi_pod *synth_pod_sized(struct synth *s, const char *ns, const char *name,
                                                  const char *group, const char *sched, long cpu_m,
                                                  const char *memory, int gpus, const char *node,
                                                  long created, const char *extra_spec)
{
	struct kubeapi_pod *p = calloc(1, sizeof(*p));
	struct kubeapi_decode_error err;
	char gpu[64] = "";
	cJSON *o;

	if (gpus > 0)
		snprintf(gpu, sizeof(gpu), ",\"nvidia.com/gpu\":\"%d\"", gpus);
	o = synth_parse(
	    "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
	    "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":\"1\","
	    "\"creationTimestamp\":\"2026-01-01T%02ld:%02ld:%02ldZ\""
	    "%s%s%s},"
	    "\"spec\":{\"schedulerName\":\"%s\"%s%s%s%s%s,"
	    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
	    "\"effect\":\"NoSchedule\"}],"
	    "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%ldm\","
	    "\"memory\":\"%s\"%s}}}]},"
	    "\"status\":{\"phase\":\"%s\"}}",
	    name, ns, ++s->seq, (created / 3600) % 24, (created / 60) % 60, created % 60,
	    group ? ",\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"" : "", group ? group : "",
	    group ? "\"}" : "", sched, node ? ",\"nodeName\":\"" : "", node ? node : "",
	    node ? "\"" : "", extra_spec ? "," : "", extra_spec ? extra_spec : "", cpu_m, memory,
	    gpu, node ? "Running" : "Pending");
	if (!p || kubeapi_pod_decode(s->model, o, p, &err) != 0) {
		char b[512];
		fprintf(stderr, "synth: pod: %s\n", kubeapi_decode_error_str(&err, b, sizeof(b)));
		abort();
	}
	cJSON_Delete(o);
	idmap_put(&s->pods, synth_key(s, ns, name), p);
	return p;
}

/* synth_pod_sized() with 1 GiB of memory. */
static inline struct kubeapi_pod *synth_pod(struct synth *s, const char *ns, const char *name,
                                            const char *group, const char *sched, long cpu_m,
                                            int gpus, const char *node, long created,
                                            const char *extra_spec)
{
	return synth_pod_sized(s, ns, name, group, sched, cpu_m, "1Gi", gpus, node, created,
	                       extra_spec);
}

/* A scheduler-plugins PodGroup (labels: extra metadata.labels JSON or NULL). */
static inline const struct kubeapi_podgroup *synth_group(struct synth *s, const char *ns,
                                                         const char *name, int min_member,
                                                         long created, const char *labels)
{
	struct kubeapi_podgroup *g = calloc(1, sizeof(*g));
	struct kubeapi_decode_error err;
	cJSON *o = synth_parse(
	    "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
	    "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":\"1\","
	    "\"creationTimestamp\":\"2026-01-01T%02ld:%02ld:%02ldZ\"%s%s%s},"
	    "\"spec\":{\"minMember\":%d}}",
	    name, ns, ++s->seq, (created / 3600) % 24, (created / 60) % 60, created % 60,
	    labels ? ",\"labels\":{" : "", labels ? labels : "", labels ? "}" : "", min_member);

	if (!g ||
	    kubeapi_podgroup_decode(s->model, KUBEAPI_PG_SCHEDULER_PLUGINS, o, g, &err) != 0) {
		char b[512];
		fprintf(stderr, "synth: group: %s\n", kubeapi_decode_error_str(&err, b, sizeof(b)));
		abort();
	}
	cJSON_Delete(o);
	idmap_put(&s->groups, synth_key(s, ns, name), g);
	return g;
}

static inline void synth_free(struct synth *s)
{
	struct idmap *maps[] = {&s->nodes, &s->pods, &s->groups, &s->vcgroups};
	const struct idmap_slot *e;

	for (size_t m = 0; m < 4; m++) {
		IDMAP_FOREACH(maps[m], i, e) {
			void *v = e->value;

			if (m == 0)
				kubeapi_node_release(s->model, v);
			else if (m == 1)
				kubeapi_pod_release(s->model, v);
			else
				kubeapi_podgroup_release(s->model, v);
			free(v);
		}
		idmap_free(maps[m]);
	}
	kubeapi_model_free(&s->model);
}

/* ---- pods and PodGroups at any time, in any state ------------------------
 * For simulations that move objects through their lives: each call writes
 * the object as the API server would send it at that point and replaces
 * (releasing) any object of the same key. Times are unix seconds. */

#include <time.h>

/* `t` as RFC 3339 UTC ("2026-01-01T00:10:00Z") into buf (>= 32 bytes). */
static inline const char *synth_time(char *buf, size_t len, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

/* Puts v under key in map, releasing the pod it replaces. */
static inline void synth_put_pod(struct synth *s, uint64_t key, struct kubeapi_pod *v)
{
	struct kubeapi_pod *old = idmap_get(&s->pods, key);

	if (old) {
		kubeapi_pod_release(s->model, old);
		free(old);
	}
	if (idmap_put(&s->pods, key, v) < 0)
		abort();
}

/* What synth_pod_at() writes. Zero fields are left out of the JSON. */
struct synth_pod_desc {
	const char *ns, *name;
	const char *group;       /* PodGroup (scheduler-plugins label), or NULL */
	const char *sched;       /* spec.schedulerName */
	long cpu_m;              /* cpu request, millicores */
	const char *memory;      /* memory request; NULL: "1Gi" */
	int gpus;                /* nvidia.com/gpu request (the taint is tolerated) */
	const char *node;        /* spec.nodeName; NULL: pending */
	const char *phase;       /* status.phase; NULL: Running with a node, else Pending */
	int64_t created_s;       /* metadata.creationTimestamp */
	int64_t started_s;       /* status.startTime; 0: absent */
	int64_t deadline_s;      /* spec.activeDeadlineSeconds; 0: absent */
	const char *annotations; /* the inside of metadata.annotations, or NULL */
	const char *spec;        /* more JSON inside spec (e.g. "\"priority\":10"), or NULL */
	const char *limits;      /* the inside of resources.limits (extended resources: the
	                          * requests too, as the API server defaults them), or NULL */
};

/* The pod d describes, decoded and put in s->pods (replacing the pod of
 * that key, if any). Owned by s; aborts on a decode error. */
static inline struct kubeapi_pod *synth_pod_at(struct synth *s, const struct synth_pod_desc *d)
{
	struct kubeapi_pod *p = calloc(1, sizeof(*p));
	struct kubeapi_decode_error err;
	char gpu[64] = "", created[32], started[64] = "", deadline[64] = "", node[320] = "";
	char group[320] = "", ann[1024] = "", limits[512] = "", ext[512] = "", spec[1024] = "";
	const char *phase = d->phase ? d->phase : d->node ? "Running" : "Pending";
	cJSON *o;

	if (d->gpus > 0)
		snprintf(gpu, sizeof(gpu), ",\"nvidia.com/gpu\":\"%d\"", d->gpus);
	if (d->started_s > 0) {
		char t[32];

		snprintf(started, sizeof(started), ",\"startTime\":\"%s\"",
		         synth_time(t, sizeof(t), d->started_s));
	}
	if (d->deadline_s > 0)
		snprintf(deadline, sizeof(deadline), ",\"activeDeadlineSeconds\":%lld",
		         (long long)d->deadline_s);
	if (d->node)
		snprintf(node, sizeof(node), ",\"nodeName\":\"%s\"", d->node);
	if (d->group)
		snprintf(group, sizeof(group),
		         ",\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"%s\"}", d->group);
	if (d->annotations)
		snprintf(ann, sizeof(ann), ",\"annotations\":{%s}", d->annotations);
	if (d->spec)
		snprintf(spec, sizeof(spec), ",%s", d->spec);
	if (d->limits) { /* the API server defaults requests to limits */
		snprintf(limits, sizeof(limits), ",\"limits\":{%s}", d->limits);
		snprintf(ext, sizeof(ext), ",%s", d->limits);
	}
	o = synth_parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
	                "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":\"1\","
	                "\"creationTimestamp\":\"%s\"%s%s},"
	                "\"spec\":{\"schedulerName\":\"%s\"%s%s%s,"
	                "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
	                "\"effect\":\"NoSchedule\"}],"
	                "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{"
	                "\"cpu\":\"%ldm\",\"memory\":\"%s\"%s%s}%s}}]},"
	                "\"status\":{\"phase\":\"%s\"%s}}",
	                d->name, d->ns, ++s->seq,
	                synth_time(created, sizeof(created), d->created_s), group, ann, d->sched,
	                node, deadline, spec, d->cpu_m, d->memory ? d->memory : "1Gi", gpu, ext,
	                limits, phase, started);
	if (!p || kubeapi_pod_decode(s->model, o, p, &err) != 0) {
		char b[512];
		fprintf(stderr, "synth: pod: %s\n", kubeapi_decode_error_str(&err, b, sizeof(b)));
		abort();
	}
	cJSON_Delete(o);
	synth_put_pod(s, synth_key(s, d->ns, d->name), p);
	return p;
}

/* A scheduler-plugins PodGroup created at unix time created_s, with
 * annotations and labels (the inside of metadata.annotations and
 * metadata.labels, or NULL), replacing the PodGroup of that key, if any. */
static inline const struct kubeapi_podgroup *
synth_group_labeled_at(struct synth *s, const char *ns, const char *name, int min_member,
                       int64_t created_s, const char *annotations, const char *labels)
{
	struct kubeapi_podgroup *g = calloc(1, sizeof(*g)), *old;
	struct kubeapi_decode_error err;
	uint64_t key = synth_key(s, ns, name);
	char t[32];
	cJSON *o =
	    synth_parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
	                "\"uid\":\"00000000-0000-0000-0000-%012lx\",\"resourceVersion\":\"1\","
	                "\"creationTimestamp\":\"%s\"%s%s%s%s%s%s},"
	                "\"spec\":{\"minMember\":%d}}",
	                name, ns, ++s->seq, synth_time(t, sizeof(t), created_s),
	                annotations ? ",\"annotations\":{" : "", annotations ? annotations : "",
	                annotations ? "}" : "", labels ? ",\"labels\":{" : "", labels ? labels : "",
	                labels ? "}" : "", min_member);

	if (!g ||
	    kubeapi_podgroup_decode(s->model, KUBEAPI_PG_SCHEDULER_PLUGINS, o, g, &err) != 0) {
		char b[512];
		fprintf(stderr, "synth: group: %s\n", kubeapi_decode_error_str(&err, b, sizeof(b)));
		abort();
	}
	cJSON_Delete(o);
	if ((old = idmap_get(&s->groups, key))) {
		kubeapi_podgroup_release(s->model, old);
		free(old);
	}
	if (idmap_put(&s->groups, key, g) < 0)
		abort();
	return g;
}

/* synth_group_labeled_at() without labels. */
static inline const struct kubeapi_podgroup *synth_group_at(struct synth *s, const char *ns,
                                                            const char *name, int min_member,
                                                            int64_t created_s,
                                                            const char *annotations)
{
	return synth_group_labeled_at(s, ns, name, min_member, created_s, annotations, NULL);
}

#endif /* MUSTER_BENCH_SYNTH_H */
