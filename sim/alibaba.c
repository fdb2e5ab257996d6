/*
 * The Alibaba GPU trace of 2023 through the planner (sim.h): the FGD
 * paper's protocol, as bench/alibaba_pack.c replays it beside the
 * published results, with Muster's whole cycle in place of the bench's
 * placement loop.
 *
 *   - The cluster is the node list (sn, cpu_milli, memory_mib, gpu,
 *     model): each node a Node whose GPUs the Volcano device plugin
 *     registered (volcano.sh/node-vgpu-register; split 20, memory by
 *     model as sim_alibaba_gpu_mib() says), labelled nvidia.com/gpu.product with its
 *     model, 1,001 pods as the paper's node YAML has. Nodes with more GPUs
 *     than a fragmentation score reads are left out, as the bench does.
 *   - The pods are the pod list's rows (name, cpu_milli, memory_mib,
 *     num_gpu, gpu_milli, gpu_spec when the file has it), arriving in the
 *     order of an order file (bench/alibaba-order: one data row, from 0, a
 *     line; a row may come again). A pod asks Volcano's vGPU resources: a
 *     share (gpu_milli < 1000) one GPU at gpu_milli / 10 percent of its
 *     cores and memory, a whole-GPU pod num_gpu GPUs at 100 percent; a
 *     gpu_spec "A|B" is a required node affinity on the model label.
 *   - Arrival k is created at second k and given one cycle. Bound, it is
 *     written back on its node, Running, with the shares the planner gave
 *     it in the annotation Volcano's device plugin reads. Not bound, it is
 *     left out: written back as being deleted, so it is never tried again
 *     but still counts in the mix of requests the placement weighs, as
 *     every arrival so far counts in the bench's (and in FGD's).
 *   - After each arrival the allocation ratio is sampled (alloc.c).
 *
 * Cost: one cycle an arrival (kept state: a cycle reads what changed);
 * 10,866 arrivals on 1,213 nodes take 16 s on one core.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/intern.h"
#include "kubeapi/vgpu.h"
#include "policy/frag.h"
#include "queue/queue.h"
#include "sim/internal.h"

#define ALIBABA_SPLIT     20 /* shares a GPU: the smallest ask is 50 milli */
#define ALIBABA_MAX_BYTES (64u << 20)
#define ALIBABA_MAX_ROWS  1000000
#define ALIBABA_MAX_FIELD 160

struct anode {
	char name[64], model[32];
	long cpu_m, mem_mib;
	int gpus;
};

struct apod {
	char name[64], spec[ALIBABA_MAX_FIELD];
	long cpu_m, mem_mib;
	int num_gpu, gpu_milli;
};

struct alibaba {
	const struct sim_alibaba_options *o;
	struct sim_alibaba_result *res;
	struct anode *node;
	size_t nnodes;
	struct apod *pod; /* by data row */
	size_t npods;
	uint32_t *order;
	size_t norder;
	struct sim_world w;
	struct queue_set *qs;
	struct plan plan;
	struct plan_memory keep;
	uint32_t sched_id;
};

static __attribute__((format(printf, 2, 3))) int fail(struct alibaba *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->res->error, sizeof(a->res->error), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* MiB per GPU by model: the published sizes; the undisclosed G1..G3 as
 * 16 GiB. Shares ask a percentage of it, so the size never binds. */
uint32_t sim_alibaba_gpu_mib(const char *model)
{
	if (strcmp(model, "V100M32") == 0)
		return 32768;
	if (strcmp(model, "A10") == 0)
		return 24576;
	return 16384;
}

/* ---- the CSV files --------------------------------------------------------- */

/* A file's lines in place: each line NUL-terminated (CR dropped). */
struct lines {
	char *text, *at;
	size_t line;
};

static char *next_line(struct lines *l)
{
	char *s = l->at, *e;

	if (!s || !*s)
		return NULL;
	e = strchr(s, '\n');
	l->at = e ? e + 1 : NULL;
	if (e)
		*e = '\0';
	if (e && e > s && e[-1] == '\r')
		e[-1] = '\0';
	l->line++;
	return s;
}

int sim_csv_split(char *line, char **f, int max)
{
	int n = 0;

	line[strcspn(line, "\r\n")] = '\0';
	f[n++] = line;
	for (char *c = line; *c && n < max; c++)
		if (*c == ',') {
			*c = '\0';
			f[n++] = c + 1;
		}
	return n;
}

int sim_csv_column(char **hdr, int n, const char *name)
{
	for (int k = 0; k < n; k++)
		if (strcmp(hdr[k], name) == 0)
			return k;
	return -1;
}

/* A whole number in [0, max] or -1. */
static long number(const char *s, long max)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return *end || errno || v > max ? -1 : v;
}

/* Room for one more of n items of size bytes at *v, doubling at powers
 * of two. 0 or -ENOMEM (*v kept). */
static int grow(void **v, size_t n, size_t size)
{
	void *w;

	if (n & (n + 1))
		return 0;
	if (!(w = realloc(*v, (n + 1) * 2 * size)))
		return -ENOMEM;
	*v = w;
	return 0;
}

static int open_lines(struct alibaba *a, const char *path, struct lines *l)
{
	size_t len;
	int rc = sim__read_file(path, ALIBABA_MAX_BYTES, &l->text, &len);

	if (rc < 0)
		return rc == -ENOMEM ? rc : fail(a, "%s: %s", path, strerror(-rc));
	l->at = l->text;
	l->line = 0;
	return 0;
}

/* Columns a file's header may name, at most. */
#define MAX_COLS 32

/* Open path and read its header: the index of each of want[0..n) into
 * c (-1: absent, an error for the first `required`), and the header's
 * width into *nh. 0, or an error with a->res->error saying why (l freed
 * then). */
static int open_csv(struct alibaba *a, const char *path, const char *const *want, int n,
                    int required, int *c, struct lines *l, int *nh)
{
	char *line, *h[MAX_COLS];
	int rc;

	if ((rc = open_lines(a, path, l)) < 0)
		return rc;
	if (!(line = next_line(l))) {
		rc = fail(a, "%s: empty", path);
	} else {
		*nh = sim_csv_split(line, h, MAX_COLS);
		for (int k = 0; k < n && rc == 0; k++)
			if ((c[k] = sim_csv_column(h, *nh, want[k])) < 0 && k < required)
				rc = fail(a, "%s:1: no column %s", path, want[k]);
	}
	if (rc < 0)
		free(l->text);
	return rc;
}

#define NODE_COLS 5
static int read_nodes(struct alibaba *a, const char *path)
{
	static const char *const want[NODE_COLS] = {"sn", "cpu_milli", "memory_mib", "gpu",
	                                            "model"};
	struct lines l;
	char *line, *f[MAX_COLS];
	int c[NODE_COLS], nh, rc;

	if ((rc = open_csv(a, path, want, NODE_COLS, NODE_COLS, c, &l, &nh)) < 0)
		return rc;
	while (rc == 0 && (line = next_line(&l))) {
		struct anode *n;
		long cpu, mem, gpus;

		if (!*line)
			continue;
		if (sim_csv_split(line, f, MAX_COLS) < nh || strlen(f[c[0]]) >= sizeof(n->name) ||
		    strlen(f[c[4]]) >= sizeof(n->model) || (cpu = number(f[c[1]], 1L << 40)) < 0 ||
		    (mem = number(f[c[2]], 1L << 40)) < 0 ||
		    (gpus = number(f[c[3]], KUBEAPI_VGPU_MAX_DEVICES)) < 0) {
			rc = fail(a, "%s:%zu: not a node (sn,cpu_milli,memory_mib,gpu,model)", path,
			          l.line);
			break;
		}
		if (gpus > POLICY_FRAG_MAX_GPUS)
			continue;
		if (a->nnodes == ALIBABA_MAX_ROWS) {
			rc = fail(a, "%s:%zu: more than %d nodes", path, l.line, ALIBABA_MAX_ROWS);
			break;
		}
		if ((rc = grow((void **)&a->node, a->nnodes, sizeof(*a->node))) < 0)
			break;
		n = &a->node[a->nnodes++];
		*n = (struct anode){.cpu_m = cpu, .mem_mib = mem, .gpus = (int)gpus};
		snprintf(n->name, sizeof(n->name), "%s", f[c[0]]);
		snprintf(n->model, sizeof(n->model), "%s", f[c[4]]);
	}
	if (rc == 0 && !a->nnodes)
		rc = fail(a, "%s: no nodes", path);
	free(l.text);
	return rc;
}

#define POD_COLS 5
static int read_pods(struct alibaba *a, const char *path)
{
	static const char *const want[POD_COLS + 1] = {"name",    "cpu_milli", "memory_mib",
	                                               "num_gpu", "gpu_milli", "gpu_spec"};
	struct lines l;
	char *line, *f[MAX_COLS];
	int c[POD_COLS + 1], nh, gs, rc;

	/* gpu_spec is not in every file: asked for, its absence is no error. */
	if ((rc = open_csv(a, path, want, POD_COLS + 1, POD_COLS, c, &l, &nh)) < 0)
		return rc;
	gs = c[POD_COLS];
	while (rc == 0 && (line = next_line(&l))) {
		struct apod *p;
		long cpu, mem, ng, gm;

		if (a->npods == ALIBABA_MAX_ROWS) {
			rc = fail(a, "%s:%zu: more than %d pods", path, l.line, ALIBABA_MAX_ROWS);
			break;
		}
		if (!*line)
			continue;
		if (sim_csv_split(line, f, MAX_COLS) < nh || strlen(f[c[0]]) >= sizeof(p->name) ||
		    (gs >= 0 && strlen(f[gs]) >= sizeof(p->spec)) ||
		    (cpu = number(f[c[1]], 1L << 40)) < 0 ||
		    (mem = number(f[c[2]], 1L << 40)) < 0 ||
		    (ng = number(f[c[3]], KUBEAPI_VGPU_MAX_SHARES)) < 0 ||
		    (gm = number(f[c[4]], 1L << 20)) < 0 || gm % 10) {
			rc = fail(a,
			          "%s:%zu: not a pod (name,cpu_milli,memory_mib,num_gpu,gpu_milli "
			          "in tens[,gpu_spec])",
			          path, l.line);
			break;
		}
		if ((rc = grow((void **)&a->pod, a->npods, sizeof(*a->pod))) < 0)
			break;
		p = &a->pod[a->npods++];
		/* gpu_milli past 1000 is 1000, as the simulator's pod_csv_to_yaml.py */
		*p = (struct apod){.cpu_m = cpu,
		                   .mem_mib = mem,
		                   .num_gpu = (int)ng,
		                   .gpu_milli = gm > 1000 ? 1000 : (int)gm};
		snprintf(p->name, sizeof(p->name), "%s", f[c[0]]);
		snprintf(p->spec, sizeof(p->spec), "%s", gs >= 0 ? f[gs] : "");
	}
	if (rc == 0 && !a->npods)
		rc = fail(a, "%s: no pods", path);
	free(l.text);
	return rc;
}

static int read_order(struct alibaba *a, const char *path)
{
	struct lines l;
	char *line;
	int rc;
	long row;

	if ((rc = open_lines(a, path, &l)) < 0)
		return rc;
	while ((line = next_line(&l))) {
		if ((row = number(line, (long)a->npods - 1)) < 0) {
			rc = fail(a, "%s:%zu: not a data row of the pod list (0 to %zu)", path,
			          l.line, a->npods - 1);
			break;
		}
		if (a->norder == ALIBABA_MAX_ROWS) {
			rc = fail(a, "%s:%zu: more than %d arrivals", path, l.line,
			          ALIBABA_MAX_ROWS);
			break;
		}
		if ((rc = grow((void **)&a->order, a->norder, sizeof(*a->order))) < 0)
			break;
		a->order[a->norder++] = (uint32_t)row;
	}
	if (rc == 0 && !a->norder)
		rc = fail(a, "%s: no arrivals", path);
	free(l.text);
	return rc;
}

/* ---- the objects ------------------------------------------------------------ */

static void add_long(cJSON *o, const char *key, long v, const char *unit)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld%s", v, unit);
	cJSON_AddStringToObject(o, key, buf);
}

/* Put object o (NULL: out of memory) in the world, and let it go. */
static int put(struct alibaba *a, cJSON *o)
{
	char err[256];
	int rc = o ? sim__put_item(&a->w, o, err, sizeof(err)) : -ENOMEM;

	cJSON_Delete(o);
	if (rc == -EINVAL)
		fail(a, "an object the decoders refused: %s", err);
	return rc < 0 ? rc : 0;
}

static int put_node(struct alibaba *a, const struct anode *n)
{
	uint32_t mib = sim_alibaba_gpu_mib(n->model);
	cJSON *meta, *o = sim__object(&a->w, NULL, n->name, &meta), *labels, *status, *alloc, *cond;
	struct buf reg;
	int rc = 0;

	buf_init(&reg, 1u << 16);
	for (int k = 0; rc == 0 && k < n->gpus; k++)
		rc = buf_printf(&reg, "GPU-%s-%d,%d,%" PRIu32 ",NVIDIA-%s,true,hami-core:", n->name,
		                k, ALIBABA_SPLIT, mib, n->model);
	if (rc < 0 || !o) {
		buf_free(&reg);
		cJSON_Delete(o);
		return -ENOMEM;
	}
	cJSON_AddStringToObject(o, "apiVersion", "v1");
	cJSON_AddStringToObject(o, "kind", "Node");
	labels = cJSON_AddObjectToObject(meta, "labels");
	cJSON_AddStringToObject(labels, "kubernetes.io/hostname", n->name);
	if (*n->model)
		cJSON_AddStringToObject(labels, POLICY_MODEL_LABEL, n->model);
	if (n->gpus)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "annotations"),
		                        KUBEAPI_VGPU_REGISTER, reg.p ? reg.p : "");
	buf_free(&reg);
	status = cJSON_AddObjectToObject(o, "status");
	alloc = cJSON_AddObjectToObject(status, "allocatable");
	add_long(alloc, "cpu", n->cpu_m, "m");
	add_long(alloc, "memory", n->mem_mib, "Mi");
	cJSON_AddStringToObject(alloc, "pods", "1001");
	add_long(alloc, KUBEAPI_VGPU_NUMBER, (long)n->gpus * ALIBABA_SPLIT, "");
	add_long(alloc, KUBEAPI_VGPU_MEMORY, (long)n->gpus * mib, "");
	add_long(alloc, KUBEAPI_VGPU_CORES, (long)n->gpus * 100, "");
	cond = cJSON_CreateObject();
	cJSON_AddStringToObject(cond, "type", "Ready");
	cJSON_AddStringToObject(cond, "status", "True");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(status, "conditions"), cond);
	return put(a, o);
}

/* A gpu_spec "A|B|C" as a required node affinity on the model label. */
static void add_affinity(cJSON *spec, const char *gpu_spec)
{
	char buf[ALIBABA_MAX_FIELD];
	cJSON *term, *expr, *values;

	if (!*gpu_spec)
		return;
	term = cJSON_CreateObject();
	expr = cJSON_CreateObject();
	cJSON_AddStringToObject(expr, "key", POLICY_MODEL_LABEL);
	cJSON_AddStringToObject(expr, "operator", "In");
	values = cJSON_AddArrayToObject(expr, "values");
	snprintf(buf, sizeof(buf), "%s", gpu_spec);
	for (char *save = NULL, *m = strtok_r(buf, "|", &save); m; m = strtok_r(NULL, "|", &save))
		cJSON_AddItemToArray(values, cJSON_CreateString(m));
	cJSON_AddItemToArray(cJSON_AddArrayToObject(term, "matchExpressions"), expr);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(
	                         cJSON_AddObjectToObject(
	                             cJSON_AddObjectToObject(
	                                 cJSON_AddObjectToObject(spec, "affinity"), "nodeAffinity"),
	                             "requiredDuringSchedulingIgnoredDuringExecution"),
	                         "nodeSelectorTerms"),
	                     term);
}

/* GPU milli a pod asks in all, as the paper counts it. */
static long milli_of(const struct apod *p)
{
	return (long)p->num_gpu * p->gpu_milli;
}

/* Arrival k of pod p as the API server would send it: pending, or on
 * node (name) holding shares ids (Volcano's annotation text), or being
 * deleted (gone). */
static cJSON *pod_object(struct alibaba *a, size_t k, const struct apod *p, const char *node,
                         const char *ids, bool gone, int rv)
{
	char name[96];
	cJSON *meta, *o, *spec, *c, *res, *req, *lim;
	int64_t at = a->o->epoch_s + (int64_t)k;

	snprintf(name, sizeof(name), "%s-%zu", p->name, k);
	if (!(o = sim__object(&a->w, SIM_ALIBABA_NAMESPACE, name, &meta)))
		return NULL;
	cJSON_AddStringToObject(o, "apiVersion", "v1");
	cJSON_AddStringToObject(o, "kind", "Pod");
	snprintf(name, sizeof(name), "%d", rv);
	cJSON_ReplaceItemInObject(meta, "resourceVersion", cJSON_CreateString(name));
	sim__add_time(meta, "creationTimestamp", at);
	if (gone)
		sim__add_time(meta, "deletionTimestamp", at);
	if (ids)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "annotations"),
		                        KUBEAPI_VGPU_IDS, ids);
	spec = cJSON_AddObjectToObject(o, "spec");
	cJSON_AddStringToObject(spec, "schedulerName", SIM_SCHEDULER);
	if (node)
		cJSON_AddStringToObject(spec, "nodeName", node);
	add_affinity(spec, p->spec);
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "name", "c");
	res = cJSON_AddObjectToObject(c, "resources");
	req = cJSON_AddObjectToObject(res, "requests");
	add_long(req, "cpu", p->cpu_m, "m");
	add_long(req, "memory", p->mem_mib, "Mi");
	if (milli_of(p) > 0) {
		long pct = p->gpu_milli / 10;

		lim = cJSON_AddObjectToObject(res, "limits");
		add_long(lim, KUBEAPI_VGPU_NUMBER, p->num_gpu, "");
		add_long(lim, KUBEAPI_VGPU_CORES, pct, "");
		add_long(lim, KUBEAPI_VGPU_MEMORY_PCT, pct, "");
	}
	cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "containers"), c);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "status"), "phase",
	                        node ? "Running" : "Pending");
	return o;
}

static int put_pod(struct alibaba *a, size_t k, const char *node, const char *ids, bool gone,
                   int rv)
{
	return put(a, pod_object(a, k, &a->pod[a->order[k]], node, ids, gone, rv));
}

/* ---- the replay ---------------------------------------------------------- */

/* The type the node registered for GPU uuid (an id), or "". */
static const char *gpu_type(struct alibaba *a, const struct kubeapi_node *node, uint32_t uuid)
{
	const struct intern *in = kubeapi_model_intern(a->w.model);

	for (uint32_t k = 0; node && node->gpus && k < node->gpus->n; k++)
		if (node->gpus->e[k].uuid == uuid)
			return node->gpus->e[k].type ? intern_str(in, node->gpus->e[k].type) : "";
	return "";
}

/* Bind b of arrival k: the pod on its node, Running, with its shares in
 * the annotation Volcano's device plugin reads, as Muster writes it. */
static int bind(struct alibaba *a, size_t k, const struct plan_bind *b)
{
	const struct intern *in = kubeapi_model_intern(a->w.model);
	const struct kubeapi_node *node = idmap_get(&a->w.nodes, b->node);
	struct kubeapi_vgpu_hold h[KUBEAPI_VGPU_MAX_SHARES];
	struct kubeapi_vgpu_share v[KUBEAPI_VGPU_MAX_SHARES];
	uint32_t nc = 0;
	int n = plan_bind_vgpu(&a->plan, b, h, KUBEAPI_VGPU_MAX_SHARES, &nc), rc;
	struct buf ids;

	if (n < 0)
		return n;
	for (int j = 0; j < n; j++) {
		const char *uuid = intern_str(in, h[j].uuid), *type = gpu_type(a, node, h[j].uuid);

		v[j] = (struct kubeapi_vgpu_share){.container = h[j].container,
		                                   .uuid = {uuid, strlen(uuid)},
		                                   .type = {type, strlen(type)},
		                                   .memory = h[j].mem,
		                                   .cores = h[j].cores};
	}
	buf_init(&ids, 1u << 16);
	rc = n ? kubeapi_vgpu_encode_pod(v, (size_t)n, nc, &ids) : 0;
	if (rc == 0)
		rc = put_pod(a, k, intern_str(in, b->node), n ? ids.p : NULL, false, 2);
	buf_free(&ids);
	return rc;
}

/* One cycle at second k, right after arrival k: 1 when it bound that
 * pod, 0 when it bound none, or an error. */
static int cycle(struct alibaba *a, size_t k)
{
	struct plan_input in;
	int rc;

	sim__plan_input(&a->w, a->qs, &in);
	in.schedulers = &a->sched_id;
	in.nschedulers = 1;
	in.now_s = a->o->epoch_s + (int64_t)k;
	a->res->cycles++;
	if ((rc = plan_cycle(&a->plan, &in, &a->keep)) < 0)
		return rc;
	if (a->plan.nbinds > 1 || a->plan.nevictions) {
		a->res->violations++; /* only the newcomer waits; nothing is to evict */
		return 0;
	}
	if (a->plan.nbinds == 0)
		return 0;
	return (rc = bind(a, k, &a->plan.binds[0])) < 0 ? rc : 1;
}

static int replay(struct alibaba *a)
{
	struct sim_alloc *s = sim_alloc_new(a->norder);
	long arrived = 0, used = 0, gpus = 0;
	int rc = 0;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < a->nnodes; i++)
		gpus += a->node[i].gpus;
	a->res->gpus = gpus;
	for (size_t k = 0; rc >= 0 && k < a->norder; k++) {
		const struct apod *p = &a->pod[a->order[k]];

		arrived += milli_of(p);
		if ((rc = put_pod(a, k, NULL, NULL, false, 1)) < 0 || (rc = cycle(a, k)) < 0)
			break;
		if (rc == 1) {
			used += milli_of(p);
			a->res->placed++;
		} else {
			a->res->left_out++;
			if ((rc = put_pod(a, k, NULL, NULL, true, 2)) < 0)
				break;
		}
		rc = sim_alloc_sample(s, arrived, used, used / 1000, gpus);
	}
	a->res->arrivals = a->norder;
	for (long x = 0; rc >= 0 && x <= SIM_ALLOC_MAX_PCT; x++)
		a->res->alloc[x] = sim_alloc_at(s, false, x);
	sim_alloc_free(s);
	return rc < 0 ? rc : 0;
}

int sim_alibaba_run(const struct sim_alibaba_options *o, struct sim_alibaba_result *res)
{
	struct alibaba a = {.o = o, .res = res};
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = read_nodes(&a, o->nodes_csv)) < 0 || (rc = read_pods(&a, o->pods_csv)) < 0 ||
	    (rc = read_order(&a, o->order)) < 0)
		goto out;
	res->nodes = a.nnodes;
	if ((rc = sim__world_init(&a.w, o->epoch_s)) < 0 ||
	    (rc = queue_set_build(o->cfg, &a.qs)) < 0)
		goto out;
	a.sched_id = sim__id(&a.w, SIM_SCHEDULER);
	for (size_t i = 0; rc == 0 && i < a.nnodes; i++)
		rc = put_node(&a, &a.node[i]);
	if (rc == 0)
		rc = replay(&a);
out:
	plan_free(&a.plan);
	plan_memory_free(&a.keep);
	queue_set_free(&a.qs);
	sim__world_free(&a.w);
	free(a.node);
	free(a.pod);
	free(a.order);
	return rc;
}
