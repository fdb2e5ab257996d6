/*
 * `muster simulate`: a trace of arrivals played through the planner under
 * one queue file or several, side by side: per queue the waits, and for
 * the whole run the makespan, utilisation and GPUs left idle while gangs
 * waited; with --gangs, every gang's start under each.
 *
 * The cluster is uniform (--nodes of --gpus GPUs, in --racks); gangs run
 * exactly their runtime, and the planner is told it. Output goes to out,
 * errors to err; exit status 0, 1 (a file refused, a run that failed or
 * broke an invariant), 2 (usage).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/sim.h"

#define MAX_CONFIGS 4
#define MAX_NODES   100000
#define EPOCH_S     1767225600 /* 2026-01-01T00:00:00Z: second 0 */
#define COLUMN_MIN  16
#define COLUMN_MAX  40

static const char usage[] =
    "usage: muster simulate --trace FILE --nodes N --gpus G [--racks R]\n"
    "                       --config FILE [--config FILE]... [--gangs]\n"
    "       muster simulate --snapshot FILE [--at TIME] --config FILE [--config FILE]...\n"
    "       muster simulate --kubeconfig FILE [--context NAME] --config FILE...\n"
    "       muster simulate --alibaba POD_LIST --order FILE [--node-list FILE]\n"
    "                       [--config FILE]\n"
    "\n"
    "Play a trace of gang arrivals, or a snapshot of a live cluster, through\n"
    "the planner under each queue configuration given (up to 4), and print\n"
    "them side by side.\n"
    "\n"
    "  --snapshot FILE a JSON List of the cluster's Nodes, Pods, PodGroups and\n"
    "                  PriorityClasses (kubectl get nodes,pods,podgroups,\n"
    "                  priorityclasses -A -o json): running work ends when the\n"
    "                  planner expects, waiting gangs start as it decides, and\n"
    "                  each gang's start is printed, from --at\n"
    "  --kubeconfig FILE  the snapshot read now from that API server, as\n"
    "                  `muster snapshot` writes it (--context: not the current one)\n"
    "  --at TIME       when the snapshot was taken: unix seconds or\n"
    "                  2026-11-27T20:00:00Z (default: now)\n"
    "  --trace FILE    CSV, one gang a line: name,at,pods,gpus,runtime[,queue]\n"
    "                  (at and runtime: seconds or durations such as 90s, 2h)\n"
    "  --nodes N       nodes in the cluster (1..100000) ...\n"
    "  --gpus G        ... of G GPUs each (0..1024), 96 CPUs and 1 TiB\n"
    "  --racks R       spread over R racks (label muster.dev/rack; default 1)\n"
    "  --config FILE   a queue file (config/README.md); gangs without a queue\n"
    "                  go to the queue listing namespace \"sim\", else defaultQueue\n"
    "  --gangs         also every gang's start under each configuration\n"
    "  --alibaba POD_LIST  a pod list of the Alibaba GPU trace (openb_pod_list_*.csv):\n"
    "                  its pods arrive one by one in the --order given (one data\n"
    "                  row a line, as bench/alibaba-order writes a seed's), each\n"
    "                  given one cycle, on the cluster of --node-list (default:\n"
    "                  openb_node_list_gpu_node.csv beside POD_LIST); prints the\n"
    "                  FGD paper's allocation ratio by share of GPUs arrived\n";

struct opts {
	int width; /* of a column: its file's name, at least COLUMN_MIN */
	const char *trace, *snapshot, *alibaba, *order, *node_list, *kubeconfig, *context;
	int64_t at_s;
	const char *configs[MAX_CONFIGS];
	size_t nconfigs;
	long nodes, gpus, racks;
	bool gangs;
};

/* One configuration's run. */
struct column {
	struct config *cfg;
	struct sim_result res;
	struct sim_report rep;
	int rc;
};

/* Unix seconds, or RFC 3339 in UTC ("2026-11-27T20:00:00Z"). */
static int parse_time(const char *s, int64_t *out)
{
	struct tm tm = {0};
	char *end;
	long long v = strtoll(s, &end, 10);

	if (end != s && !*end && v > 0) {
		*out = v;
		return 0;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return -EINVAL;
	*out = (int64_t)timegm(&tm);
	return 0;
}

static int parse(int argc, char **argv, struct opts *o, FILE *err)
{
	static const struct option longopts[] = {
	    {"trace", required_argument, NULL, 't'},
	    {"nodes", required_argument, NULL, 'n'},
	    {"gpus", required_argument, NULL, 'g'},
	    {"racks", required_argument, NULL, 'r'},
	    {"config", required_argument, NULL, 'c'},
	    {"gangs", no_argument, NULL, 'G'},
	    {"snapshot", required_argument, NULL, 's'},
	    {"at", required_argument, NULL, 'a'},
	    {"alibaba", required_argument, NULL, 'A'},
	    {"order", required_argument, NULL, 'O'},
	    {"node-list", required_argument, NULL, 'N'},
	    {"kubeconfig", required_argument, NULL, 'K'},
	    {"context", required_argument, NULL, 'C'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->racks = 1;
	o->at_s = (int64_t)time(NULL);
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *end = NULL;
		long *num = c == 'n'   ? &o->nodes
		            : c == 'g' ? &o->gpus
		            : c == 'r' ? &o->racks
		                       : NULL;

		if (num) {
			*num = strtol(optarg, &end, 10);
			if (end == optarg || *end)
				*num = -1;
		} else if (c == 't') {
			o->trace = optarg;
		} else if (c == 's') {
			o->snapshot = optarg;
		} else if (c == 'A') {
			o->alibaba = optarg;
		} else if (c == 'O') {
			o->order = optarg;
		} else if (c == 'N') {
			o->node_list = optarg;
		} else if (c == 'K') {
			o->kubeconfig = optarg;
		} else if (c == 'C') {
			o->context = optarg;
		} else if (c == 'a') {
			if (parse_time(optarg, &o->at_s) < 0) {
				fprintf(err,
				        "muster simulate: --at wants unix seconds or "
				        "2026-11-27T20:00:00Z, got '%s'\n",
				        optarg);
				return -EINVAL;
			}
		} else if (c == 'c' && o->nconfigs < MAX_CONFIGS) {
			o->configs[o->nconfigs++] = optarg;
		} else if (c == 'G') {
			o->gangs = true;
		} else {
			fputs(usage, c == 'h' ? stdout : err);
			return c == 'h' ? 1 : -EINVAL;
		}
	}
	o->width = COLUMN_MIN;
	for (size_t k = 0; k < o->nconfigs; k++) {
		const char *base = strrchr(o->configs[k], '/');
		int len = (int)strlen(base ? base + 1 : o->configs[k]);

		o->width = len > o->width ? (len < COLUMN_MAX ? len : COLUMN_MAX) : o->width;
	}
	if (!o->snapshot != !o->kubeconfig && !o->trace && !o->alibaba && optind == argc &&
	    o->nconfigs && (!o->context || o->kubeconfig))
		return 0;
	if (o->alibaba && o->order && !o->trace && !o->snapshot && !o->kubeconfig &&
	    optind == argc && o->nconfigs <= 1)
		return 0;
	if (optind != argc || !o->trace || o->snapshot || o->alibaba || o->kubeconfig ||
	    !o->nconfigs || o->nodes < 1 || o->nodes > MAX_NODES || o->gpus < 0 || o->gpus > 1024 ||
	    o->racks < 1 || o->nodes % o->racks) {
		fprintf(err, "muster simulate: %s\n\n%s",
		        o->nodes % (o->racks > 0 ? o->racks : 1)
		            ? "--nodes must split evenly into --racks"
		            : "missing or bad arguments",
		        usage);
		return -EINVAL;
	}
	return 0;
}

/* The uniform cluster, names and racks in one block. */
static struct sim_node *cluster(const struct opts *o, char **names)
{
	struct sim_node *v = calloc((size_t)o->nodes, sizeof(*v));
	char *s = calloc((size_t)o->nodes, 48);
	long per = o->nodes / o->racks;

	if (!v || !s) {
		free(v);
		free(s);
		return NULL;
	}
	for (long i = 0; i < o->nodes; i++) {
		char *name = s + i * 48, *rack = name + 24;

		snprintf(name, 24, "n-%d-%d", (int)(i / per % 100000), (int)(i % per % 100000));
		snprintf(rack, 24, "r%d", (int)(i / per % 100000));
		v[i] = (struct sim_node){name, o->racks > 1 ? rack : NULL, o->gpus};
	}
	*names = s;
	return v;
}

static void duration(char *buf, size_t len, int64_t s)
{
	if (s >= 3600)
		snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", s / 3600, s / 60 % 60);
	else if (s >= 60)
		snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRId64 "s", s);
}

static const struct sim_queue_report *queue_in(const struct sim_report *r, const char *q)
{
	for (size_t k = 0; k < r->nqueues; k++)
		if (!r->queues[k].queue == !q && (!q || !strcmp(r->queues[k].queue, q)))
			return &r->queues[k];
	return NULL;
}

/* One row: a label, then each column's cell from fn. */
static void row(FILE *out, int width, const char *label, const struct column *col, size_t n,
                void (*fn)(char *, size_t, const struct column *, const void *), const void *arg)
{
	fprintf(out, "%-26s", label);
	for (size_t k = 0; k < n; k++) {
		char cell[64] = "failed";

		if (col[k].rc == 0)
			fn(cell, sizeof(cell), &col[k], arg);
		fprintf(out, " %*s", width, cell);
	}
	fputc('\n', out);
}

static void cell_makespan(char *b, size_t n, const struct column *c, const void *a)
{
	(void)a;
	duration(b, n, c->rep.makespan_s);
}

static void cell_util(char *b, size_t n, const struct column *c, const void *a)
{
	(void)a;
	snprintf(b, n, "%.1f%%", 100 * c->rep.utilisation);
}

static void cell_stranded(char *b, size_t n, const struct column *c, const void *a)
{
	(void)a;
	snprintf(b, n, "%.2f", c->rep.stranded_gpus);
}

static void cell_cycles(char *b, size_t n, const struct column *c, const void *a)
{
	(void)a;
	snprintf(b, n, "%" PRIu64, c->res.cycles);
}

/* Which figure of which queue a cell shows. */
struct qcell {
	const char *queue;
	int which; /* 0 started/gangs, 1 mean, 50, 90, 99, 100 */
};

static void cell_queue(char *b, size_t n, const struct column *c, const void *a)
{
	const struct qcell *q = a;
	const struct sim_queue_report *r = queue_in(&c->rep, q->queue);
	int64_t v;

	if (!r) {
		snprintf(b, n, "-");
		return;
	}
	if (q->which == 0) {
		snprintf(b, n, "%zu/%zu", r->started, r->gangs);
		return;
	}
	v = q->which == 1    ? r->mean
	    : q->which == 50 ? r->p50
	    : q->which == 90 ? r->p90
	    : q->which == 99 ? r->p99
	                     : r->max;
	duration(b, n, v);
}

static void cell_start(char *b, size_t n, const struct column *c, const void *a)
{
	size_t k = *(const size_t *)a;

	if (c->res.start_s[k] == SIM_NO_TIME)
		snprintf(b, n, "never");
	else
		duration(b, n, c->res.start_s[k]);
}

static void print(FILE *out, const struct opts *o, const struct sim_trace *t,
                  const struct column *col)
{
	const struct sim_report *first = NULL;

	fprintf(out, "trace %s: %zu gangs; %ld nodes x %ld GPUs (%ld)%s\n\n%-26s", o->trace,
	        t->ngangs, o->nodes, o->gpus, o->nodes * o->gpus, o->racks > 1 ? ", in racks" : "",
	        "");
	for (size_t k = 0; k < o->nconfigs; k++) {
		const char *base = strrchr(o->configs[k], '/');

		fprintf(out, " %*.*s", o->width, o->width, base ? base + 1 : o->configs[k]);
		if (!first && col[k].rc == 0)
			first = &col[k].rep;
	}
	fputc('\n', out);
	row(out, o->width, "makespan", col, o->nconfigs, cell_makespan, NULL);
	row(out, o->width, "GPU utilisation", col, o->nconfigs, cell_util, NULL);
	row(out, o->width, "GPUs idle while gangs wait", col, o->nconfigs, cell_stranded, NULL);
	row(out, o->width, "planner cycles", col, o->nconfigs, cell_cycles, NULL);
	for (size_t q = 0; first && q < first->nqueues; q++) {
		static const int which[] = {0, 1, 50, 90, 99, 100};
		static const char *const what[] = {"started",  "wait mean", "wait p50",
		                                   "wait p90", "wait p99",  "wait max"};
		const char *name = first->queues[q].queue;

		fprintf(out, "queue %s\n", name ? name : "(none given)");
		for (size_t w = 0; w < 6; w++) {
			struct qcell qc = {name, which[w]};
			char label[64];

			snprintf(label, sizeof(label), "  %s", what[w]);
			row(out, o->width, label, col, o->nconfigs, cell_queue, &qc);
		}
	}
	if (!o->gangs)
		return;
	fprintf(out, "\nstart of each gang (from second 0)\n");
	for (size_t k = 0; k < t->ngangs; k++) {
		char label[64];

		snprintf(label, sizeof(label), "  %.23s", t->gangs[k].name);
		row(out, o->width, label, col, o->nconfigs, cell_start, &k);
	}
}

static int run_one(const struct opts *o, const struct sim_trace *t, const struct sim_node *nodes,
                   const char *path, struct column *c, FILE *err)
{
	struct config_errors errs;
	struct sim_options so = {.nodes = nodes,
	                         .nnodes = (size_t)o->nodes,
	                         .gangs = t->gangs,
	                         .ngangs = t->ngangs,
	                         .epoch_s = EPOCH_S,
	                         .stop_s = 366 * 86400};

	config_errors_init(&errs);
	if ((c->rc = config_load(path, &c->cfg, &errs)) < 0) {
		config_errors_print(&errs, err);
		config_errors_clear(&errs);
		return c->rc;
	}
	so.cfg = c->cfg;
	if ((c->rc = sim_run(&so, &c->res)) < 0) {
		fprintf(err, "muster simulate: %s: the run failed: %s\n", path, strerror(-c->rc));
		return c->rc;
	}
	if (c->res.violations)
		fprintf(err, "muster simulate: %s: %zu violations of the planner's invariants\n",
		        path, c->res.violations);
	return c->rc = sim_report(&so, &c->res, &c->rep);
}

/* ---- a snapshot ------------------------------------------------------------ */

struct replay_column {
	struct config *cfg;
	struct sim_replay_result res;
	int rc;
};

static const struct sim_replay_gang *started_in(const struct sim_replay_result *r, const char *ns,
                                                const char *name)
{
	for (size_t k = 0; k < r->ngangs; k++)
		if (!strcmp(r->gangs[k].ns, ns) && !strcmp(r->gangs[k].name, name))
			return &r->gangs[k];
	return NULL;
}

/* Every gang some configuration started, once, in the order of the first
 * column that started it. */
/* Column k's gangs of queue q (NULL: none) that started: how many, and
 * the mean and last start. */
static size_t queue_starts(const struct replay_column *c, const char *q, int64_t *mean,
                           int64_t *last)
{
	size_t n = 0;
	int64_t sum = 0;

	*last = 0;
	for (size_t g = 0; c->rc == 0 && g < c->res.ngangs; g++) {
		const struct sim_replay_gang *x = &c->res.gangs[g];

		if (q ? !x->queue || strcmp(x->queue, q) : x->queue != NULL)
			continue;
		n++;
		sum += x->start_s;
		*last = x->start_s > *last ? x->start_s : *last;
	}
	*mean = n ? sum / (int64_t)n : 0;
	return n;
}

/* Queue names, NULL (no queue) first, then by name. */
static int queue_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;

	return !x || !y ? (x != NULL) - (y != NULL) : strcmp(x, y);
}

/* Queue q's three rows: gangs started, mean and last start, per column. */
static void print_queue(FILE *out, const struct opts *o, const struct replay_column *col,
                        const char *q)
{
	static const char *const what[] = {"gangs started", "mean start", "last start"};

	for (int w = 0; w < 3; w++) {
		char label[300];

		snprintf(label, sizeof(label), "  %s: %s", q ? q : "(no queue)", what[w]);
		fprintf(out, "%-40s", label);
		for (size_t k = 0; k < o->nconfigs; k++) {
			int64_t mean, last;
			size_t n = queue_starts(&col[k], q, &mean, &last);
			char cell[64] = "+";

			if (col[k].rc)
				snprintf(cell, sizeof(cell), "failed");
			else if (w == 0)
				snprintf(cell, sizeof(cell), "%zu", n);
			else if (!n)
				snprintf(cell, sizeof(cell), "-");
			else
				duration(cell + 1, sizeof(cell) - 1, w == 1 ? mean : last);
			fprintf(out, " %*s", o->width, cell);
		}
		fputc('\n', out);
	}
}

/* Per queue (each queue a gang started in, under any file), the gangs
 * started and their mean and last start; then the GPUs in use over the
 * replay. O(gangs log gangs + queues x gangs). */
static void print_replay_queues(FILE *out, const struct opts *o, const struct replay_column *col)
{
	const char **q;
	size_t n = 0;

	for (size_t k = 0; k < o->nconfigs; k++)
		n += col[k].rc == 0 ? col[k].res.ngangs : 0;
	fprintf(out, "\n%-40s\n", "per queue (starts after --at)");
	if ((q = malloc((n + 1) * sizeof(*q)))) {
		n = 0;
		for (size_t k = 0; k < o->nconfigs; k++)
			for (size_t g = 0; col[k].rc == 0 && g < col[k].res.ngangs; g++)
				q[n++] = col[k].res.gangs[g].queue;
		qsort(q, n, sizeof(*q), queue_cmp);
		for (size_t i = 0; i < n; i++)
			if (i == 0 || queue_cmp(&q[i - 1], &q[i]))
				print_queue(out, o, col, q[i]);
		free(q);
	}
	fprintf(out, "%-40s", "GPU utilisation (to the last end)");
	for (size_t k = 0; k < o->nconfigs; k++) {
		char cell[32] = "-";
		const struct sim_replay_result *r = &col[k].res;

		if (col[k].rc == 0 && r->gpus > 0 && r->now_s > 0)
			snprintf(cell, sizeof(cell), "%.1f%%",
			         100.0 * r->gpu_seconds / (r->gpus * (double)r->now_s));
		fprintf(out, " %*s", o->width, col[k].rc ? "failed" : cell);
	}
	fputc('\n', out);
}

static void print_replay(FILE *out, const struct opts *o, const struct replay_column *col)
{
	char when[64];
	struct tm tm;
	time_t at = (time_t)o->at_s;

	gmtime_r(&at, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(out, "snapshot %s at %s\n", o->snapshot ? o->snapshot : o->kubeconfig, when);
	for (size_t k = 0; k < o->nconfigs; k++)
		if (col[k].rc == 0)
			fprintf(out, "  %s: %zu objects read, %zu refused%s%s; %zu gangs start\n",
			        o->configs[k], col[k].res.objects, col[k].res.skipped,
			        col[k].res.skipped ? ", the first: " : "", col[k].res.first_skip,
			        col[k].res.ngangs);
	fprintf(out, "\n%-40s", "start of each gang (after --at)");
	for (size_t k = 0; k < o->nconfigs; k++) {
		const char *base = strrchr(o->configs[k], '/');

		fprintf(out, " %*.*s", o->width, o->width, base ? base + 1 : o->configs[k]);
	}
	fputc('\n', out);
	for (size_t c = 0; c < o->nconfigs; c++)
		for (size_t g = 0; col[c].rc == 0 && g < col[c].res.ngangs; g++) {
			const struct sim_replay_gang *x = &col[c].res.gangs[g];
			char label[300];
			bool seen = false;

			for (size_t e = 0; e < c && !seen; e++)
				seen = col[e].rc == 0 && started_in(&col[e].res, x->ns, x->name);
			if (seen)
				continue;
			snprintf(label, sizeof(label), "  %s/%s", x->ns, x->name);
			fprintf(out, "%-40s", label);
			for (size_t k = 0; k < o->nconfigs; k++) {
				const struct sim_replay_gang *y =
				    col[k].rc == 0 ? started_in(&col[k].res, x->ns, x->name) : NULL;
				char cell[64] = "-";

				if (y) {
					cell[0] = '+';
					duration(cell + 1, sizeof(cell) - 1, y->start_s);
				}
				fprintf(out, " %*s", o->width, col[k].rc ? "failed" : cell);
			}
			fputc('\n', out);
		}
	print_replay_queues(out, o, col);
}

/* The snapshot: the file, else the cluster of --kubeconfig as it is now. */
static int read_snapshot(const struct opts *o, struct sim_snapshot *snap, sim_fetch_fn fetch)
{
	cJSON *doc = NULL;

	memset(snap, 0, sizeof(*snap));
	if (o->snapshot)
		return sim_snapshot_read(o->snapshot, snap);
	if (!fetch) {
		snprintf(snap->error, sizeof(snap->error), "--kubeconfig: no API client here");
		return -ENOTSUP;
	}
	if (fetch(o->kubeconfig, o->context, &doc, snap->error, sizeof(snap->error)) < 0)
		return -EIO;
	return sim_snapshot_take(snap, doc, o->kubeconfig);
}

static int replay_main(const struct opts *o, FILE *out, FILE *err, sim_fetch_fn fetch)
{
	struct replay_column col[MAX_CONFIGS] = {0};
	struct sim_snapshot snap;
	int status = 0;

	if (read_snapshot(o, &snap, fetch) < 0) {
		fprintf(err, "muster simulate: %s\n", snap.error);
		sim_snapshot_free(&snap);
		return 1;
	}
	for (size_t k = 0; k < o->nconfigs; k++) {
		struct config_errors errs;
		struct sim_replay_options ro = {.snapshot = &snap, .at_s = o->at_s};

		config_errors_init(&errs);
		if ((col[k].rc = config_load(o->configs[k], &col[k].cfg, &errs)) < 0) {
			config_errors_print(&errs, err);
			config_errors_clear(&errs);
			status = 1;
			continue;
		}
		ro.cfg = col[k].cfg;
		if ((col[k].rc = sim_replay(&ro, &col[k].res)) < 0) {
			fprintf(err, "muster simulate: %s: the replay failed: %s\n", o->configs[k],
			        strerror(-col[k].rc));
			status = 1;
		} else if (col[k].res.violations) {
			fprintf(err,
			        "muster simulate: %s: %zu cycles evicted; the replay does not\n",
			        o->configs[k], col[k].res.violations);
			status = 1;
		}
	}
	print_replay(out, o, col);
	for (size_t k = 0; k < o->nconfigs; k++) {
		sim_replay_result_free(&col[k].res);
		config_free(&col[k].cfg);
	}
	sim_snapshot_free(&snap);
	return status;
}

/* The queue file given, else one queue without quota that takes the
 * trace's namespace: every pod admitted. */
#define ALIBABA_CONFIG                                                                             \
	"resources: [nvidia.com/gpu]\n"                                                            \
	"queues: [{name: trace, namespaces: [" SIM_ALIBABA_NAMESPACE "]}]\n"
static int alibaba_config(const struct opts *o, struct config **cfg, FILE *err)
{
	struct config_errors errs;
	int rc;

	config_errors_init(&errs);
	rc = o->nconfigs
	         ? config_load(o->configs[0], cfg, &errs)
	         : config_parse("(default)", ALIBABA_CONFIG, strlen(ALIBABA_CONFIG), cfg, &errs);
	if (rc < 0)
		config_errors_print(&errs, err);
	config_errors_clear(&errs);
	return rc;
}

static void print_alibaba(FILE *out, const struct opts *o, const struct sim_alibaba_result *r)
{
	fprintf(out,
	        "%s in the order of %s: %zu nodes, %ld GPUs; %zu arrivals, %zu placed, "
	        "%zu left out, %" PRIu64 " cycles\n",
	        o->alibaba, o->order, r->nodes, r->gpus, r->arrivals, r->placed, r->left_out,
	        r->cycles);
	fprintf(out, "%-10s %s\n", "arrived", "allocated (FGD paper's ratio)");
	for (int x = 50; x <= SIM_ALLOC_MAX_PCT; x += 10)
		if (r->alloc[x] >= 0)
			fprintf(out, "%3d%%       %6.2f%%\n", x, r->alloc[x]);
	fprintf(out, "alloc_100=%.2f alloc_130=%.2f placed=%zu left_out=%zu\n", r->alloc[100],
	        r->alloc[SIM_ALLOC_MAX_PCT], r->placed, r->left_out);
}

static int alibaba_main(const struct opts *o, FILE *out, FILE *err)
{
	struct sim_alibaba_result r;
	struct sim_alibaba_options ao = {
	    .pods_csv = o->alibaba, .order = o->order, .epoch_s = EPOCH_S};
	char path[4096];
	const char *slash = strrchr(o->alibaba, '/');
	struct config *cfg = NULL;
	int rc;

	if (o->node_list)
		snprintf(path, sizeof(path), "%s", o->node_list);
	else
		snprintf(path, sizeof(path), "%.*s%s", slash ? (int)(slash - o->alibaba + 1) : 0,
		         o->alibaba, "openb_node_list_gpu_node.csv");
	ao.nodes_csv = path;
	if (alibaba_config(o, &cfg, err) < 0)
		return 1;
	ao.cfg = cfg;
	rc = sim_alibaba_run(&ao, &r);
	config_free(&cfg);
	if (rc < 0) {
		fprintf(err, "muster simulate: %s\n", *r.error ? r.error : strerror(-rc));
		return 1;
	}
	print_alibaba(out, o, &r);
	if (r.violations) {
		fprintf(err, "muster simulate: %zu cycles bound a pod that had not just arrived\n",
		        r.violations);
		return 1;
	}
	return 0;
}

int sim_main(int argc, char **argv, FILE *out, FILE *err, sim_fetch_fn fetch)
{
	struct column col[MAX_CONFIGS] = {0};
	struct sim_trace t;
	struct sim_node *nodes = NULL;
	char *names = NULL;
	struct opts o;
	int rc = parse(argc, argv, &o, err), status = 0;

	if (rc)
		return rc > 0 ? 0 : 2;
	if (o.snapshot || o.kubeconfig)
		return replay_main(&o, out, err, fetch);
	if (o.alibaba)
		return alibaba_main(&o, out, err);
	if (sim_trace_read(o.trace, &t) < 0) {
		for (size_t k = 0; k < t.nerrors; k++)
			fprintf(err, "%s\n", t.errors[k]);
		if (t.dropped)
			fprintf(err, "%zu more errors\n", t.dropped);
		sim_trace_free(&t);
		return 1;
	}
	if (!(nodes = cluster(&o, &names))) {
		sim_trace_free(&t);
		return 1;
	}
	for (size_t k = 0; k < o.nconfigs; k++)
		if (run_one(&o, &t, nodes, o.configs[k], &col[k], err) < 0 || col[k].res.violations)
			status = 1;
	print(out, &o, &t, col);
	for (size_t k = 0; k < o.nconfigs; k++) {
		sim_report_free(&col[k].rep);
		sim_result_free(&col[k].res);
		config_free(&col[k].cfg);
	}
	free(nodes);
	free(names);
	sim_trace_free(&t);
	return status;
}
