/*
 * alibaba_pack: placement quality on the Alibaba GPU cluster trace of
 * 2023 ("openb", USENIX ATC'23 "Beware of Fragmentation", FGD), beside
 * the allocation ratios the paper's simulator published for its policies.
 *
 * usage: alibaba_pack [DIR] [--trace NAME]... [--seeds N] [--whole | --frac]
 *                     [--order-dir ODIR | --xorshift]
 *   DIR       the data folder (README.md there describes it); default
 *             $MUSTER_ALIBABA_DIR, else ../shared/data/alibaba-gpu-v2023
 *   --trace   a pod list, e.g. openb_pod_list_default (repeatable); by
 *             default every openb_pod_list_*.csv in DIR that the
 *             published results cover
 *   --seeds   seeds 42 .. 42+N-1 (default 10, as published)
 *   --whole   only the old whole-GPU placement (the baseline)
 *   --frac    only the vGPU placement; by default both are run
 *   --order-dir  where the simulator's arrival orders are, a file
 *             ODIR/<trace>-<seed>.txt each, written by bench/alibaba-order
 *             (`make bench-alibaba` builds and runs it); default
 *             $MUSTER_ALIBABA_ORDER_DIR, else build/bench/alibaba-order
 *   --xorshift  shuffle and tune here instead (xorshift64*): no Go needed,
 *             but a seed is then not the simulator's; compare means only
 *
 * The protocol is the simulator's (hkust-adsl/kubernetes-scheduler-
 * simulator, run with `-tune 1.3 -tuneseed S --shuffle-pod=true` for S in
 * 42..51; pkg/simulator/core.go, simulator.go, analysis.go,
 * scripts/analysis.py and experiments/analysis/merge_alloc_discrete.py):
 *   - the cluster is openb_node_list_gpu_node.csv: 1,213 GPU nodes, 6,212
 *     GPUs, with their CPU, memory and GPU model; pods per node 1001;
 *   - the trace's pods are sorted by name and shuffled (seed); then, when
 *     their GPU requests fall short of 1.3 x the cluster's GPUs, pods
 *     drawn at random (with replacement) from the trace are appended until
 *     the next one would pass 1.3 x; when they exceed it (multigpu50),
 *     pods drawn at random are removed until they do not. By default the
 *     order is the simulator's own, draw for draw (Go's math/rand seeded
 *     with S; bench/alibaba-order/main.go says which calls, and its test
 *     checks the orders against the published curves), so seed S here is
 *     the simulator's seed S and the published value of every seed can be
 *     compared with Muster's on the same arrivals;
 *   - pods arrive one by one in that order and never leave; each is placed
 *     or, when nothing fits, left out;
 *   - after each arrival: arrived = the GPU requests of all pods so far
 *     (num_gpu x gpu_milli, placed or not), used = those of the pods
 *     placed; the allocation ratio at X% is the mean of used / capacity
 *     over the arrivals where round(arrived / capacity) = X% (half to
 *     even), else over X-1..X+1 when none. As the script computes it:
 *     each arrival's ratio rounded to 0.01 first, summed as numpy sums,
 *     the mean rounded to 0.01 as numpy rounds; so a seed's value here is
 *     the one the CSV would hold for the same placements.
 *
 * What differs, and why. Two placements are replayed.
 *
 * vGPU shares (the Muster row): every node's GPUs are struct policy_gpu
 * (gpus.h), split count 20 (the smallest ask is 50 milli), memory by
 * model (V100M32 32 GiB, A10 24 GiB, the rest 16 GiB; G1..G3 are not
 * disclosed), kept beside the node table. A pod with gpu_milli < 1000
 * asks one GPU at gpu_milli / 10 percent of its cores and of its memory
 * (every gpu_milli in the trace is a multiple of 10), a whole-GPU pod
 * num_gpu GPUs at 100 percent; Volcano's rules (policy_vgpu_fits) decide
 * what a GPU takes. The node table (policy_nodes_build, no topology
 * levels: the trace has none) keeps CPU, memory and pods, and the static
 * fit (policy_fit_get) the GPU-model constraint: a gpu_spec such as
 * "V100M16|V100M32" becomes a required node affinity on the label
 * nvidia.com/gpu.product, which every node carries with its model. Per
 * arrival, every node that admits the pod statically and has its CPU and
 * memory free is scored by policy_frag_best() (frag.h: the rise of the
 * node's expected GPU fragmentation, where a kind's fragment also counts
 * half the GPU its pods could not use for want of the node's CPU or
 * memory, to 0.3 of the pod's GPU ask, then best fit on GPUs relative to
 * the node's size); the lowest score wins, then the node whose CPU left
 * stays closest to the mix's proportion to its GPU cores left
 * (policy_frag_balance(), as policy_place() breaks the score's ties),
 * then the lower node index, and its CPU and memory and its shares are
 * counted in. The mix the score
 * weighs is the arrivals so far, the current pod included: what Muster
 * could know, never a future pod (FGD's simulator uses the whole trace;
 * with it this replay did no better). The mix also holds the cluster's
 * GPUs per model (policy_mix.model_gpus), fixed by the node list, so a
 * kind that may use only some models weighs by how scarce they are. This
 * is the loop policy_place() is to run for nodes with GPU devices.
 *
 * Whole GPUs (the baseline, --whole): a pod asks whole nvidia.com/gpu; a
 * pod with gpu_milli < 1000 is given one whole GPU, so it holds a GPU the
 * paper's schedulers would share. Each pod is placed by policy_place()
 * alone (a gang of one): best fit on GPUs, then on CPU, ties to the node
 * whose name sorts first, as the planner orders nodes. The whole GPUs it
 * holds are reported beside ("held").
 *
 * In both, a pod's arrival and its "used" amount are its num_gpu x
 * gpu_milli, as in the paper: the ratio counts what the workload asked
 * for. With the simulator's orders, each seed's Muster - FGD at 100% and
 * 130% is printed: the same arrivals, only the placement differs.
 *
 * Output: a table per trace, and one key=value line per trace.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/synth.h"
#include "policy/frag.h"
#include "policy/policy.h"
#include "base/arena.h"
#include "sim/sim.h"

#define MAX_PODS    20000
#define MAX_NODES   4096
#define MAX_MODELS  63 /* bit 63: a model no node has */
#define GPU_SPLIT   20 /* shares per GPU: the smallest ask is 50 milli */
#define MAX_SHARES  8
#define MAX_TRACES  32
#define MAX_SEEDS   100
#define FIRST_SEED  42
#define TUNE        1.3
#define MAX_PCT     130
#define MODEL_LABEL "nvidia.com/gpu.product"
#define DEFAULT_DIR "../shared/data/alibaba-gpu-v2023"
#define NODE_CSV    "openb_node_list_gpu_node.csv"
#define RESULTS_CSV "fgd_expected_allocation.csv"
#define ORDER_DIR   "build/bench/alibaba-order"
#define MAX_ARRIVE  (MAX_PODS * 2)
#define NO_ROW      UINT32_MAX

/* ---- a deterministic PRNG --------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

/* A well-mixed, non-zero state from a small seed (splitmix64). */
static void rng_seed(struct rng *r, uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	r->s = (z ^ (z >> 31)) | 1;
}

static size_t rng_below(struct rng *r, size_t n)
{
	return (size_t)(rng_next(r) % n);
}

/* ---- the trace --------------------------------------------------------- */

enum pod_class { CLS_CPU, CLS_SHARE, CLS_1, CLS_2, CLS_4, CLS_8, CLS_COUNT };
static const char *const class_name[CLS_COUNT] = {"cpu", "share", "1gpu", "2gpu", "4gpu", "8gpu"};

struct tpod {
	char name[40];
	uint32_t row; /* its data row in the CSV, from 0 */
	long cpu_m, mem_mib;
	int num_gpu, gpu_milli;
	char gpu_spec[160];
	const struct kubeapi_podspec *spec;  /* Muster's: whole GPUs */
	const struct kubeapi_podspec *fspec; /* CPU and memory only: GPUs are vGPU asks */
	struct kubeapi_vgpu_ask ask;         /* its GPUs as vGPU shares (nums 0: none) */
	struct policy_mix_kind kind;         /* what it adds to the mix */
};

struct trace {
	char name[64];
	struct tpod *pod; /* by name */
	size_t n;
	uint32_t by_row[MAX_PODS]; /* the pod of each CSV data row, NO_ROW: not read */
	size_t rows;
};

struct cluster {
	struct synth s;
	const struct kubeapi_node *node[MAX_NODES];
	size_t n;
	long gpus;
	uint8_t ngpu[MAX_NODES];     /* node i's GPUs */
	uint32_t gpu_mem[MAX_NODES]; /* MiB each */
	uint64_t model[MAX_NODES];   /* its model's bit, 0 for none */
	char model_name[MAX_MODELS][32];
	int nmodels;
};

static long milli_of(const struct tpod *p)
{
	return (long)p->num_gpu * p->gpu_milli;
}

static enum pod_class class_of(const struct tpod *p)
{
	if (p->num_gpu == 0 || p->gpu_milli == 0)
		return CLS_CPU;
	if (p->gpu_milli < 1000)
		return CLS_SHARE;
	return p->num_gpu >= 8 ? CLS_8 : p->num_gpu >= 4 ? CLS_4 : p->num_gpu >= 2 ? CLS_2 : CLS_1;
}

static FILE *open_in(const char *dir, const char *file)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (!(f = fopen(path, "r")))
		fprintf(stderr, "alibaba_pack: %s: %s\n", path, strerror(errno));
	return f;
}

/* The bit of GPU model name, registered on first sight; bit 63 (a model
 * no node has) when the table is full or add is false. */
static uint64_t model_bit(struct cluster *c, const char *name, bool add)
{
	for (int k = 0; k < c->nmodels; k++)
		if (strcmp(c->model_name[k], name) == 0)
			return UINT64_C(1) << k;
	if (!add || c->nmodels == MAX_MODELS)
		return UINT64_C(1) << MAX_MODELS;
	snprintf(c->model_name[c->nmodels], sizeof(c->model_name[0]), "%s", name);
	return UINT64_C(1) << c->nmodels++;
}

/* One node of the CSV: its GPU model as a label, pods 1001 as the
 * simulator's node YAML has. */
static void add_node(struct cluster *c, char **f, int sn, int cm, int mm, int g, int mo)
{
	char labels[256], cpu[32], mem[32];

	if (*f[mo])
		snprintf(labels, sizeof(labels),
		         "\"kubernetes.io/hostname\":\"%s\",\"" MODEL_LABEL "\":\"%s\"", f[sn],
		         f[mo]);
	else
		snprintf(labels, sizeof(labels), "\"kubernetes.io/hostname\":\"%s\"", f[sn]);
	snprintf(cpu, sizeof(cpu), "%sm", f[cm]);
	snprintf(mem, sizeof(mem), "%sMi", f[mm]);
	c->ngpu[c->n] = (uint8_t)atoi(f[g]);
	c->gpu_mem[c->n] = sim_alibaba_gpu_mib(f[mo]);
	c->model[c->n] = *f[mo] ? model_bit(c, f[mo], true) : 0;
	c->node[c->n++] = synth_node_sized(&c->s, f[sn], cpu, mem, 1001, atoi(f[g]), labels);
	c->gpus += atoi(f[g]);
}

/* The nodes (sn, cpu_milli, memory_mib, gpu, model), in the file's order,
 * which is by name, as the planner orders them. */
static int load_nodes(struct cluster *c, const char *dir)
{
	char line[512], *f[8], *h[8], hdr[512];
	FILE *in = open_in(dir, NODE_CSV);
	int nh, sn, cm, mm, g, mo;

	if (!in)
		return -errno;
	if (!fgets(hdr, sizeof(hdr), in)) {
		fclose(in);
		return -EINVAL;
	}
	nh = sim_csv_split(hdr, h, 8);
	sn = sim_csv_column(h, nh, "sn");
	cm = sim_csv_column(h, nh, "cpu_milli");
	mm = sim_csv_column(h, nh, "memory_mib");
	g = sim_csv_column(h, nh, "gpu");
	mo = sim_csv_column(h, nh, "model");
	if (sn < 0 || cm < 0 || mm < 0 || g < 0 || mo < 0) {
		fclose(in);
		return -EINVAL;
	}
	while (fgets(line, sizeof(line), in) && c->n < MAX_NODES)
		if (sim_csv_split(line, f, 8) >= nh && atoi(f[g]) <= POLICY_FRAG_MAX_GPUS)
			add_node(c, f, sn, cm, mm, g, mo);
	fclose(in);
	return c->n > 0 ? 0 : -EINVAL;
}

/* The required node affinity for a gpu_spec "A|B|C", or "" for none. */
static void affinity_of(const char *gpu_spec, char *out, size_t len)
{
	char models[512] = "", buf[160];
	size_t used = 0;

	*out = '\0';
	snprintf(buf, sizeof(buf), "%s", gpu_spec);
	for (char *save = NULL, *m = strtok_r(buf, "|", &save); m; m = strtok_r(NULL, "|", &save))
		used += (size_t)snprintf(models + used, sizeof(models) - used, "%s\"%s\"",
		                         used ? "," : "", m);
	if (!used)
		return;
	snprintf(
	    out, len,
	    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
	    "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"" MODEL_LABEL "\","
	    "\"operator\":\"In\",\"values\":[%s]}]}]}}}",
	    models);
}

/* The GPU models a gpu_spec "A|B|C" allows, a bit each; 0 for any. */
static uint64_t models_of(struct cluster *c, const char *gpu_spec)
{
	char buf[160];
	uint64_t bits = 0;

	snprintf(buf, sizeof(buf), "%s", gpu_spec);
	for (char *save = NULL, *m = strtok_r(buf, "|", &save); m; m = strtok_r(NULL, "|", &save))
		bits |= model_bit(c, m, false);
	return bits;
}

/* A trace pod's vGPU ask and its kind for the mix: a share (gpu_milli <
 * 1000) is one GPU at gpu_milli / 10 percent of its cores and memory;
 * whole GPUs are num_gpu GPUs at 100 percent. */
static void decode_ask(struct cluster *c, struct tpod *p)
{
	uint32_t pct = (uint32_t)(p->gpu_milli / 10);
	uint32_t nums = p->gpu_milli > 0 ? (uint32_t)p->num_gpu : 0;

	p->ask = (struct kubeapi_vgpu_ask){nums, 0, nums ? pct : KUBEAPI_VGPU_NO_PCT, pct};
	p->kind = (struct policy_mix_kind){
	    .cpu_m = policy_spec_request(p->fspec, KUBEAPI_RES_CPU),
	    .mem = policy_spec_request(p->fspec, KUBEAPI_RES_MEMORY),
	    .nums = nums,
	    .cores = nums ? pct : 0,
	    .gpu_mem_pct = nums ? pct : 0,
	    .models = models_of(c, p->gpu_spec),
	};
}

/* Muster's specs for a trace pod: whole GPUs (gpu_milli < 1000 asks 1),
 * and the same without GPUs for the vGPU placement. The pod objects stay
 * in the synth store (keyed by ns and name). */
static void decode_spec(struct cluster *c, const char *ns, struct tpod *p)
{
	char mem[32], aff[768], fname[48];
	const struct kubeapi_pod *pod;

	snprintf(mem, sizeof(mem), "%ldMi", p->mem_mib);
	affinity_of(p->gpu_spec, aff, sizeof(aff));
	pod = synth_pod_sized(&c->s, ns, p->name, NULL, "muster", p->cpu_m, mem,
	                      p->gpu_milli > 0 ? p->num_gpu : 0, NULL, 0, *aff ? aff : NULL);
	p->spec = pod->spec;
	snprintf(fname, sizeof(fname), "%s-v", p->name);
	pod = synth_pod_sized(&c->s, ns, fname, NULL, "muster", p->cpu_m, mem, 0, NULL, 0,
	                      *aff ? aff : NULL);
	p->fspec = pod->spec;
	decode_ask(c, p);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tpod *)a)->name, ((const struct tpod *)b)->name);
}

/* One pod list: name, cpu_milli, memory_mib, num_gpu, gpu_milli, and
 * gpu_spec when the file has it. */
static int load_trace(struct cluster *c, const char *dir, struct trace *t)
{
	char file[128], line[1024], hdr[1024], *f[16], *h[16];
	FILE *in;
	int nh, nm, cm, mm, ng, gm, gs;

	snprintf(file, sizeof(file), "%s.csv", t->name);
	if (!(in = open_in(dir, file)))
		return -errno;
	if (!fgets(hdr, sizeof(hdr), in) || !(t->pod = calloc(MAX_PODS, sizeof(*t->pod)))) {
		fclose(in);
		return -EINVAL;
	}
	nh = sim_csv_split(hdr, h, 16);
	nm = sim_csv_column(h, nh, "name");
	cm = sim_csv_column(h, nh, "cpu_milli");
	mm = sim_csv_column(h, nh, "memory_mib");
	ng = sim_csv_column(h, nh, "num_gpu");
	gm = sim_csv_column(h, nh, "gpu_milli");
	gs = sim_csv_column(h, nh, "gpu_spec"); /* not in every file */
	if (nm < 0 || cm < 0 || mm < 0 || ng < 0 || gm < 0) {
		fclose(in);
		return -EINVAL;
	}
	while (fgets(line, sizeof(line), in) && t->rows < MAX_PODS) {
		struct tpod *p = &t->pod[t->n];

		t->by_row[t->rows++] = NO_ROW;
		if (sim_csv_split(line, f, 16) < nh)
			continue;
		p->row = (uint32_t)(t->rows - 1);
		snprintf(p->name, sizeof(p->name), "%s", f[nm]);
		p->cpu_m = atol(f[cm]);
		p->mem_mib = atol(f[mm]);
		p->num_gpu = atoi(f[ng]);
		p->gpu_milli = atoi(f[gm]);
		if (p->gpu_milli > 1000) /* as the simulator's pod_csv_to_yaml.py */
			p->gpu_milli = 1000;
		snprintf(p->gpu_spec, sizeof(p->gpu_spec), "%s", gs >= 0 ? f[gs] : "");
		t->n++;
	}
	fclose(in);
	qsort(t->pod, t->n, sizeof(*t->pod), by_name);
	for (size_t k = 0; k < t->n; k++) {
		t->by_row[t->pod[k].row] = (uint32_t)k;
		decode_spec(c, t->name, &t->pod[k]); /* a namespace per trace */
	}
	return t->n > 0 ? 0 : -EINVAL;
}

/* ---- one replay -------------------------------------------------------- */

/* The bench's own arrival order for one seed (--xorshift): the trace
 * shuffled, then tuned to TUNE x capacity as the simulator does
 * (simulator.go SortClusterPods, TunePodsByNodeTotalResource), with
 * xorshift64* draws instead of Go's math/rand. */
static size_t arrivals(const struct trace *t, long capacity_milli, uint64_t seed, uint32_t *order,
                       size_t max)
{
	double target = TUNE * (double)capacity_milli;
	long total = 0;
	struct rng r;
	size_t n = t->n;

	rng_seed(&r, seed);
	for (size_t k = 0; k < n; k++) {
		order[k] = (uint32_t)k;
		total += milli_of(&t->pod[k]);
	}
	for (size_t k = n; k > 1; k--) {
		size_t j = rng_below(&r, k);
		uint32_t x = order[k - 1];

		order[k - 1] = order[j];
		order[j] = x;
	}
	while ((double)total > target && n > 0) { /* tuneDownPods */
		size_t j = rng_below(&r, n);

		total -= milli_of(&t->pod[order[j]]);
		memmove(&order[j], &order[j + 1], (n - j - 1) * sizeof(*order));
		n--;
	}
	while (n < max) { /* tuneUpPods: it tests the per-GPU milli, adds the total */
		size_t j = rng_below(&r, t->n);

		if ((double)(total + t->pod[j].gpu_milli) > target)
			break;
		total += milli_of(&t->pod[j]);
		order[n++] = (uint32_t)j;
	}
	return n;
}

/* The simulator's arrival order for one seed, read from dir/<trace>-<seed>.txt
 * (bench/alibaba-order: one CSV data row a line) into order[0 .. max) as
 * indexes of t->pod. The count, or -errno with a message. */
static long read_order(const char *dir, const struct trace *t, uint64_t seed, uint32_t *order,
                       size_t max)
{
	char path[1024], line[32], *end;
	FILE *in;
	long n = 0;

	snprintf(path, sizeof(path), "%s/%s-%" PRIu64 ".txt", dir, t->name, seed);
	if (!(in = fopen(path, "r"))) {
		int err = errno;

		fprintf(stderr,
		        "alibaba_pack: %s: %s (`make bench-alibaba` writes the simulator's "
		        "orders; --xorshift shuffles here instead)\n",
		        path, strerror(err));
		return -err;
	}
	while (fgets(line, sizeof(line), in)) {
		unsigned long row = strtoul(line, &end, 10);

		if (end == line || (*end != '\n' && *end) || row >= t->rows ||
		    t->by_row[row] == NO_ROW || (size_t)n == max) {
			fprintf(stderr, "alibaba_pack: %s: line %ld: %s\n", path, n + 1,
			        (size_t)n == max ? "too many arrivals" : "not a pod of the trace");
			fclose(in);
			return -EINVAL;
		}
		order[n++] = t->by_row[row];
	}
	fclose(in);
	if (n == 0)
		fprintf(stderr, "alibaba_pack: %s: no arrivals\n", path);
	return n > 0 ? n : -EINVAL;
}

/* What one seed's replay saw. */
struct replay {
	double alloc[MAX_PCT + 1]; /* used/capacity (%) per arrival bucket, as published */
	double held[MAX_PCT + 1];  /* the same for whole GPUs held */
	long failed[CLS_COUNT];    /* pods left out, by class */
	long arrived_n[CLS_COUNT]; /* pods arrived, by class */
	double first_fail_pct;     /* arrived (% of capacity) when a GPU pod was first left out */
	size_t npods;
};

/* How the replay places pods. */
enum mode { MODE_FRAC, MODE_WHOLE };

/* One replay's vGPU state: node i's GPUs are gpu[at[i] .. at[i] + ngpu[i]),
 * and the mix of the arrivals so far. */
struct vgpus {
	struct policy_gpu *gpu;
	uint32_t at[MAX_NODES];
	struct policy_mix mix;
};

static int vgpus_init(struct vgpus *v, const struct cluster *c)
{
	uint32_t k = 0;

	memset(&v->mix, 0, sizeof(v->mix));
	/* The GPUs per model: what makes a gpu_spec kind weigh its scarcity. */
	for (size_t i = 0; i < c->n; i++)
		for (int b = 0; b < 64; b++)
			v->mix.model_gpus[b] += (double)(c->model[i] >> b & 1) * c->ngpu[i];
	if (!(v->gpu = calloc((size_t)c->gpus, sizeof(*v->gpu))))
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		v->at[i] = k;
		for (uint32_t j = 0; j < c->ngpu[i]; j++)
			v->gpu[k++] = (struct policy_gpu){
			    .id = j, .memory = c->gpu_mem[i], .split = GPU_SPLIT, .healthy = true};
	}
	return 0;
}

/* The vGPU placement, the loop policy_place() runs for nodes with GPU
 * devices: every node that admits p statically and has its CPU and
 * memory free is scored by policy_frag_best(); the lowest score wins,
 * then the lowest policy_frag_balance(), then the lower node index; its
 * CPU and memory are counted into the table and its shares onto the
 * GPUs. 0, or -ENOSPC when no node takes p. */
static int place_frac(const struct cluster *c, struct policy_nodes *t, struct policy_fitcache *fc,
                      struct arena *a, struct vgpus *v, const struct tpod *p)
{
	const struct policy_fit *fit = policy_fit_get(fc, a, t, p->fspec);
	struct policy_vgpu_share sh[MAX_SHARES], best_sh[MAX_SHARES];
	struct policy_frag_ask fa = {p->kind.cpu_m, p->kind.mem, &p->ask, p->ask.nums > 0};
	size_t nsh, best_n = 0;
	long best = -1;
	double score, best_score = 0, bal, best_bal = 0, per_core;

	if (!fit)
		return -ENOMEM;
	policy_mix_add(&v->mix, &p->kind, 1);
	policy_mix_done(&v->mix);
	per_core = policy_frag_cpu_per_core(&v->mix);
	for (size_t x = 0; x < fit->count; x++) {
		uint32_t i = fit->nodes[x];
		const int64_t *free = &t->free[(size_t)i * t->nres];
		struct policy_frag_node fn = {free[KUBEAPI_RES_CPU], free[KUBEAPI_RES_MEMORY],
		                              &v->gpu[v->at[i]], c->ngpu[i], c->model[i]};
		int rc;

		if (!policy_fits_free(t, i, p->fspec))
			continue;
		rc = policy_frag_best(&v->mix, &fn, &fa, sh, MAX_SHARES, &nsh, &score);
		if (rc == -ENOSPC)
			continue;
		if (rc < 0)
			return rc;
		bal =
		    policy_frag_balance(&fn, &fa, per_core, free[KUBEAPI_RES_CPU] - p->kind.cpu_m);
		if (best < 0 || score < best_score || (score == best_score && bal < best_bal)) {
			best = i;
			best_score = score;
			best_bal = bal;
			best_n = nsh;
			memcpy(best_sh, sh, nsh * sizeof(*sh));
		}
	}
	if (best < 0)
		return -ENOSPC;
	policy_nodes_use(t, (size_t)best, p->fspec, NULL, -1);
	for (size_t k = 0; k < best_n; k++)
		policy_vgpu_use(&v->gpu[v->at[best] + best_sh[k].gpu], best_sh[k].mem,
		                best_sh[k].cores, +1);
	return 0;
}

/* The old placement: whole GPUs by policy_place() (best fit). */
static int place_whole(struct policy_nodes *t, struct policy_fitcache *fc, struct arena *a,
                       const struct tpod *p)
{
	const struct kubeapi_podspec *specs[1] = {p->spec};
	const struct policy_held *held[1];
	struct policy_why why;
	uint32_t at;

	return policy_place(t, fc, a, specs, 1, &at, held, &why);
}

/* Replay one seed's arrivals on a fresh table: the simulator's order from
 * order_dir, or the bench's own when order_dir is NULL. */
static int replay(struct cluster *c, const struct trace *t, uint64_t seed, enum mode mode,
                  const char *order_dir, struct replay *out)
{
	uint32_t *order = calloc(MAX_ARRIVE, sizeof(*order));
	struct sim_alloc *b = sim_alloc_new(MAX_ARRIVE);
	struct vgpus *v = calloc(1, sizeof(*v));
	struct arena a = {0};
	struct policy_nodes nodes = {0};
	struct policy_fitcache fc = {0};
	long arrived = 0, used = 0, held = 0, n;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!order || !b || !v || vgpus_init(v, c) < 0)
		goto out;
	n = order_dir ? read_order(order_dir, t, seed, order, MAX_ARRIVE)
	              : (long)arrivals(t, c->gpus * 1000, seed, order, MAX_ARRIVE);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	out->npods = (size_t)n;
	if ((rc = policy_nodes_build(&nodes, &a, c->s.model, NULL, NULL, 0, c->node, c->n)) < 0)
		goto out;
	for (size_t k = 0; k < out->npods; k++) {
		const struct tpod *p = &t->pod[order[k]];

		arrived += milli_of(p);
		out->arrived_n[class_of(p)]++;
		rc = mode == MODE_FRAC ? place_frac(c, &nodes, &fc, &a, v, p)
		                       : place_whole(&nodes, &fc, &a, p);
		if (rc == 0) {
			used += milli_of(p);
			held += mode == MODE_FRAC ? milli_of(p) / 1000 : policy_spec_gpus(p->spec);
		} else if (rc == -ENOSPC) {
			if (milli_of(p) > 0 && out->first_fail_pct == 0)
				out->first_fail_pct =
				    100.0 * (double)arrived / ((double)c->gpus * 1000);
			out->failed[class_of(p)]++;
		} else {
			goto out;
		}
		if ((rc = sim_alloc_sample(b, arrived, used, held, c->gpus)) < 0)
			goto out;
	}
	for (int x = 0; x <= MAX_PCT; x++) {
		out->alloc[x] = sim_alloc_at(b, false, x);
		out->held[x] = sim_alloc_at(b, true, x);
	}
	rc = 0;
out:
	policy_fitcache_free(&fc);
	policy_nodes_release(&nodes);
	arena_free(&a);
	if (v)
		free(v->gpu);
	free(v);
	free(order);
	sim_alloc_free(b);
	return rc;
}

/* ---- the published results -------------------------------------------- */

struct published {
	char policy[32];
	double at100, at130;                           /* means over seeds */
	double seed100[MAX_SEEDS], seed130[MAX_SEEDS]; /* seed FIRST_SEED + k's; -1: none */
	int seeds;
};

/* The entry of policy in p[0..n), added when there is room; -1 when full. */
static int policy_slot(struct published *p, int *n, int max, const char *policy)
{
	for (int k = 0; k < *n; k++)
		if (strcmp(p[k].policy, policy) == 0)
			return k;
	if (*n == max)
		return -1;
	snprintf(p[*n].policy, sizeof(p[0].policy), "%s", policy);
	for (int k = 0; k < MAX_SEEDS; k++)
		p[*n].seed100[k] = p[*n].seed130[k] = -1;
	return (*n)++;
}

/* The columns "100" and "130" for workload `trace`: each seed's, and their
 * means over seeds. */
static int load_published(const char *dir, const char *trace, struct published *p, int max)
{
	FILE *in = open_in(dir, RESULTS_CSV);
	char *line = NULL, *f[140];
	size_t cap = 0;
	int n = 0;

	if (!in)
		return -errno;
	memset(p, 0, (size_t)max * sizeof(*p));
	if (getline(&line, &cap, in) < 0 || sim_csv_split(line, f, 140) != 136 ||
	    strcmp(f[5 + 100], "100") != 0 || strcmp(f[5 + 130], "130") != 0) {
		free(line);
		fclose(in);
		return -EINVAL;
	}
	while (getline(&line, &cap, in) > 0) {
		int k, seed;

		if (sim_csv_split(line, f, 140) != 136 || strcmp(f[0], trace) != 0 ||
		    (k = policy_slot(p, &n, max, f[1])) < 0)
			continue;
		seed = atoi(f[3]) - FIRST_SEED;
		if (seed >= 0 && seed < MAX_SEEDS) {
			p[k].seed100[seed] = atof(f[5 + 100]);
			p[k].seed130[seed] = atof(f[5 + 130]);
		}
		p[k].at100 += atof(f[5 + 100]);
		p[k].at130 += atof(f[5 + 130]);
		p[k].seeds++;
	}
	for (int k = 0; k < n; k++) {
		p[k].at100 /= p[k].seeds;
		p[k].at130 /= p[k].seeds;
	}
	free(line);
	fclose(in);
	return n;
}

/* ---- report ------------------------------------------------------------ */

struct summary {
	double at100, at130, held100, held130, min130, max130, first_fail, curve[MAX_PCT + 1];
	double failed[CLS_COUNT], arrived[CLS_COUNT], npods;
	double seed100[MAX_SEEDS], seed130[MAX_SEEDS]; /* seed FIRST_SEED + k's */
	int seeds;
};

/* How the bench runs: where the arrival orders come from, which seeds, and
 * which placements. */
struct opts {
	const char *order_dir; /* the simulator's orders; NULL: the bench's xorshift */
	int seeds;
	unsigned modes; /* 1 << enum mode */
};

static void add_replay(struct summary *s, const struct replay *r)
{
	if (s->seeds == 0 || r->alloc[130] < s->min130)
		s->min130 = r->alloc[130];
	if (s->seeds == 0 || r->alloc[130] > s->max130)
		s->max130 = r->alloc[130];
	s->seed100[s->seeds] = r->alloc[100];
	s->seed130[s->seeds] = r->alloc[130];
	s->at100 += r->alloc[100];
	s->at130 += r->alloc[130];
	s->held100 += r->held[100];
	s->held130 += r->held[130];
	s->first_fail += r->first_fail_pct;
	for (int x = 0; x <= MAX_PCT; x++)
		s->curve[x] += r->alloc[x];
	for (int k = 0; k < CLS_COUNT; k++) {
		s->failed[k] += (double)r->failed[k];
		s->arrived[k] += (double)r->arrived_n[k];
	}
	s->npods += (double)r->npods;
	s->seeds++;
}

static void finish(struct summary *s)
{
	s->at100 /= s->seeds;
	s->at130 /= s->seeds;
	s->held100 /= s->seeds;
	s->held130 /= s->seeds;
	s->npods /= s->seeds;
	s->first_fail /= s->seeds;
	for (int x = 0; x <= MAX_PCT; x++)
		s->curve[x] /= s->seeds;
	for (int k = 0; k < CLS_COUNT; k++) {
		s->failed[k] /= s->seeds;
		s->arrived[k] /= s->seeds;
	}
}

static double unallocated(double pct, long gpus)
{
	return (100.0 - pct) / 100.0 * (double)gpus;
}

static void trace_mix(const struct trace *t, long *count)
{
	memset(count, 0, CLS_COUNT * sizeof(*count));
	for (size_t k = 0; k < t->n; k++)
		count[class_of(&t->pod[k])]++;
}

/* Mean over seeds of Muster - FGD at 100% (at130 0) or 130%, over the
 * seeds FGD has; 0 when none. */
static double mean_diff(const struct summary *s, const struct published *fgd, int at130)
{
	double sum = 0;
	int n = 0;

	for (int k = 0; k < s->seeds; k++) {
		double f = at130 ? fgd->seed130[k] : fgd->seed100[k];

		if (f >= 0) {
			sum += (at130 ? s->seed130[k] : s->seed100[k]) - f;
			n++;
		}
	}
	return n ? sum / n : 0;
}

/* Each seed's Muster - FGD, when the arrivals are the simulator's: the
 * same pods in the same order, only the placement differs. */
static void print_seeds(const struct summary *s, const struct published *fgd)
{
	printf("  %-5s %12s %9s %7s %12s %9s %7s   (same arrivals as FGD's seed)\n", "seed",
	       "Muster @100", "FGD @100", "diff", "Muster @130", "FGD @130", "diff");
	for (int k = 0; k < s->seeds; k++) {
		printf("  %-5d %11.2f%%", FIRST_SEED + k, s->seed100[k]);
		if (fgd->seed100[k] >= 0)
			printf(" %8.2f%% %+7.2f", fgd->seed100[k], s->seed100[k] - fgd->seed100[k]);
		else
			printf(" %9s %7s", "-", "-");
		printf(" %11.2f%%", s->seed130[k]);
		if (fgd->seed130[k] >= 0)
			printf(" %8.2f%% %+7.2f", fgd->seed130[k], s->seed130[k] - fgd->seed130[k]);
		else
			printf(" %9s %7s", "-", "-");
		printf("\n");
	}
	printf("  %-5s %20s %+7.2f %21s %+7.2f\n", "mean", "", mean_diff(s, fgd, 0), "",
	       mean_diff(s, fgd, 1));
}

/* Muster's rows for one mode: the ratios, then how they grew and what
 * was left out; with fgd (the simulator's orders), each seed beside FGD's. */
static void print_muster(const struct cluster *c, const char *label, const struct summary *s,
                         enum mode mode, const struct published *fgd)
{
	printf("%-28s %11.2f%% %11.2f%% %18.0f   (seeds: %.2f..%.2f%%)\n", label, s->at100,
	       s->at130, unallocated(s->at130, c->gpus), s->min130, s->max130);
	if (mode == MODE_WHOLE)
		printf("%-28s %11.2f%% %11.2f%%   GPUs Muster holds, a sharing pod holding a whole "
		       "one\n",
		       "  held by Muster", s->held100, s->held130);
	printf("  by arrival:");
	for (int x = 50; x <= MAX_PCT; x += 10)
		printf(" %d%%: %.2f%%", x, s->curve[x]);
	printf("; the first GPU pod left out at %.1f%% arrived\n", s->first_fail);
	printf("  left out by 130%% (mean per seed, of arrived):");
	for (int k = 0; k < CLS_COUNT; k++)
		printf(" %s %.0f/%.0f", class_name[k], s->failed[k], s->arrived[k]);
	printf("\n");
	if (fgd)
		print_seeds(s, fgd);
}

static double at_or_none(const struct published *p, int at130)
{
	return p ? (at130 ? p->at130 : p->at100) : -1;
}

static void print_report(const struct cluster *c, const struct trace *t, const struct published *p,
                         int np, const struct summary *frac, const struct summary *whole,
                         const struct opts *o)
{
	long mix[CLS_COUNT];
	const struct published *fgd = NULL, *best = NULL, *same;
	const struct summary *any = frac->seeds ? frac : whole;
	const char *order = o->order_dir ? "simulator" : "xorshift";

	trace_mix(t, mix);
	printf("\n== %s: %zu nodes, %ld GPUs; %zu pods (cpu %ld, share %ld, 1-GPU %ld, 2-GPU %ld, "
	       "4-GPU %ld, 8-GPU %ld); %.0f arrivals per seed (to %.0f%%, the %s's order), %d "
	       "seeds from %d\n",
	       t->name, c->n, c->gpus, t->n, mix[CLS_CPU], mix[CLS_SHARE], mix[CLS_1], mix[CLS_2],
	       mix[CLS_4], mix[CLS_8], any->npods, TUNE * 100, order, any->seeds, FIRST_SEED);
	printf("%-28s %12s %12s %18s\n", "policy", "alloc @100%", "alloc @130%",
	       "unallocated @130%");
	for (int k = 0; k < np; k++) {
		printf("%-28s %11.2f%% %11.2f%% %18.0f\n", p[k].policy, p[k].at100, p[k].at130,
		       unallocated(p[k].at130, c->gpus));
		if (strstr(p[k].policy, "FGD"))
			fgd = &p[k];
		if (strstr(p[k].policy, "BestFit"))
			best = &p[k];
	}
	same = o->order_dir ? fgd : NULL; /* a seed is FGD's seed only then */
	if (frac->seeds)
		print_muster(c, "Muster (vGPU shares)", frac, MODE_FRAC, same);
	if (whole->seeds)
		print_muster(c, "Muster (whole GPUs)", whole, MODE_WHOLE, same);
	printf("bench=alibaba_pack trace=%s order=%s nodes=%zu gpus=%ld seeds=%d arrivals=%.0f",
	       t->name, order, c->n, c->gpus, any->seeds, any->npods);
	if (frac->seeds)
		printf(" muster_alloc_100=%.2f muster_alloc_130=%.2f muster_unallocated_130=%.0f "
		       "muster_first_gpu_fail_pct=%.1f",
		       frac->at100, frac->at130, unallocated(frac->at130, c->gpus),
		       frac->first_fail);
	if (frac->seeds && same)
		printf(" muster_minus_fgd_100=%+.2f muster_minus_fgd_130=%+.2f",
		       mean_diff(frac, same, 0), mean_diff(frac, same, 1));
	if (whole->seeds)
		printf(" whole_alloc_100=%.2f whole_alloc_130=%.2f whole_held_100=%.2f "
		       "whole_held_130=%.2f",
		       whole->at100, whole->at130, whole->held100, whole->held130);
	printf(" fgd_alloc_100=%.2f fgd_alloc_130=%.2f bestfit_alloc_100=%.2f "
	       "bestfit_alloc_130=%.2f\n",
	       at_or_none(fgd, 0), at_or_none(fgd, 1), at_or_none(best, 0), at_or_none(best, 1));
	fflush(stdout);
}

/* Every seed of one mode into s. */
static int run_mode(struct cluster *c, const struct trace *t, const struct opts *o, enum mode mode,
                    struct summary *s)
{
	struct replay *r = calloc(1, sizeof(*r));
	int rc = r ? 0 : -ENOMEM;

	for (int k = 0; k < o->seeds && rc == 0; k++)
		if ((rc = replay(c, t, FIRST_SEED + (uint64_t)k, mode, o->order_dir, r)) == 0)
			add_replay(s, r);
	if (s->seeds > 0)
		finish(s);
	free(r);
	return rc;
}

static int run_trace(struct cluster *c, const char *dir, const char *name, const struct opts *o)
{
	struct published pub[16];
	struct summary frac = {0}, whole = {0};
	struct trace t = {0};
	int np, rc = 0;

	snprintf(t.name, sizeof(t.name), "%s", name);
	np = load_published(dir, name, pub, 16);
	if (np < 0 || load_trace(c, dir, &t) < 0) {
		fprintf(stderr, "alibaba_pack: %s: cannot load the trace or the results\n", name);
		free(t.pod);
		return -EINVAL;
	}
	if (o->modes & (1u << MODE_FRAC))
		rc = run_mode(c, &t, o, MODE_FRAC, &frac);
	if (rc == 0 && (o->modes & (1u << MODE_WHOLE)))
		rc = run_mode(c, &t, o, MODE_WHOLE, &whole);
	if (frac.seeds > 0 || whole.seeds > 0)
		print_report(c, &t, pub, np, &frac, &whole, o);
	free(t.pod);
	return rc;
}

/* ---- main -------------------------------------------------------------- */

/* The traces the published results cover and DIR holds. */
static int default_traces(const char *dir, char names[][64], int max)
{
	static const char *const known[] = {"openb_pod_list_default", "openb_pod_list_gpuspec33",
	                                    "openb_pod_list_multigpu50",
	                                    "openb_pod_list_gpushare100"};
	struct published pub[16];
	int n = 0;

	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]) && n < max; k++) {
		char file[128];
		FILE *f;

		snprintf(file, sizeof(file), "%s/%s.csv", dir, known[k]);
		if (!(f = fopen(file, "r")))
			continue;
		fclose(f);
		if (load_published(dir, known[k], pub, 16) > 0)
			snprintf(names[n++], 64, "%s", known[k]);
	}
	return n;
}

int main(int argc, char **argv)
{
	static char names[MAX_TRACES][64];
	const char *dir = getenv("MUSTER_ALIBABA_DIR");
	struct cluster *c = calloc(1, sizeof(*c));
	struct opts o = {getenv("MUSTER_ALIBABA_ORDER_DIR"), 10,
	                 1u << MODE_FRAC | 1u << MODE_WHOLE};
	int ntraces = 0, rc = 0, bad = 0;

	if (!dir || !*dir)
		dir = DEFAULT_DIR;
	if (!o.order_dir || !*o.order_dir)
		o.order_dir = ORDER_DIR;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc && ntraces < MAX_TRACES)
			snprintf(names[ntraces++], 64, "%s", argv[++i]);
		else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
			o.seeds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--whole") == 0)
			o.modes = 1u << MODE_WHOLE;
		else if (strcmp(argv[i], "--frac") == 0)
			o.modes = 1u << MODE_FRAC;
		else if (strcmp(argv[i], "--order-dir") == 0 && i + 1 < argc)
			o.order_dir = argv[++i];
		else if (strcmp(argv[i], "--xorshift") == 0)
			o.order_dir = NULL;
		else if (argv[i][0] != '-')
			dir = argv[i];
		else
			bad = 1;
	}
	if (!c || bad || o.seeds < 1 || o.seeds > MAX_SEEDS) {
		fprintf(stderr, "usage: alibaba_pack [DIR] [--trace NAME]... [--seeds N] "
		                "[--whole | --frac] [--order-dir ODIR | --xorshift]\n");
		free(c);
		return 2;
	}
	if (synth_init(&c->s) < 0 || load_nodes(c, dir) < 0) {
		fprintf(stderr, "alibaba_pack: cannot read the nodes in %s\n", dir);
		return 1;
	}
	if (ntraces == 0)
		ntraces = default_traces(dir, names, MAX_TRACES);
	printf("alibaba_pack: %s; arrivals: %s%s; vGPU shares: each pod onto the node where "
	       "policy_frag_best() scores lowest; whole GPUs: policy_place(), a sharing pod "
	       "(gpu_milli < 1000) holding a whole GPU\n",
	       dir, o.order_dir ? "the simulator's orders in " : "the bench's xorshift64* shuffle",
	       o.order_dir ? o.order_dir : "");
	for (int k = 0; k < ntraces && rc == 0; k++)
		rc = run_trace(c, dir, names[k], &o);
	synth_free(&c->s);
	free(c);
	return rc < 0;
}
