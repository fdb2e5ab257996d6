/*
 * sim/: traces read (and refused where they are wrong, at FILE:LINE:COLUMN),
 * runs through the planner whose starts and figures are worked out by hand
 * in the comments, `muster simulate` itself on files, and the Alibaba
 * trace's protocol on small clusters worked out the same way.
 */
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "sim/sim.h"

static const char one_queue[] = "resources: [nvidia.com/gpu]\n"
                                "queues:\n"
                                "  - name: q\n"
                                "    namespaces: [sim]\n"
                                "    quota: {nvidia.com/gpu: {nominal: 1000}}\n";

static char *write_tmp(const char *text, const char *suffix)
{
	char *path;
	FILE *f;
	int fd;

	if (asprintf(&path, "/tmp/muster-sim-XXXXXX%s", suffix) < 0)
		fail();
	fd = mkstemps(path, (int)strlen(suffix));
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static struct config *load(const char *yaml)
{
	struct config_errors errs;
	struct config *c;

	config_errors_init(&errs);
	if (config_parse("t.yaml", yaml, strlen(yaml), &c, &errs) != 0)
		fail_msg("config: %s", errs.n ? errs.v[0].msg : "?");
	return c;
}

/* ---- traces ------------------------------------------------------------- */

static void test_trace_read(void **state)
{
	char *path = write_tmp("name,at,pods,gpus,runtime,queue\n"
	                       "# a comment\n"
	                       "\n"
	                       "train-1,0,4,8,2h,team-a\r\n"
	                       "eval,90s,1,0,600\n"
	                       "x,1h30m,2,1,30,\n",
	                       ".csv");
	struct sim_trace t;

	(void)state;
	assert_int_equal(sim_trace_read(path, &t), 0);
	assert_int_equal(t.ngangs, 3);
	assert_string_equal(t.gangs[0].name, "train-1");
	assert_string_equal(t.gangs[0].queue, "team-a");
	assert_int_equal(t.gangs[0].pods, 4);
	assert_int_equal(t.gangs[0].gpus, 8);
	assert_int_equal(t.gangs[0].runtime_s, 7200);
	assert_int_equal(t.gangs[0].declared, SIM_DECLARED_POD);
	assert_string_equal(t.gangs[0].declared_value, "2h");
	assert_int_equal(t.gangs[1].at_s, 90);
	assert_null(t.gangs[1].queue);
	assert_int_equal(t.gangs[2].at_s, 5400);
	assert_null(t.gangs[2].queue);
	sim_trace_free(&t);
	unlink(path);
	free(path);
}

static void test_trace_errors_name_their_place(void **state)
{
	static const char *const want[] = {
	    ":1:1: 3 fields; expected name,at,pods,gpus,runtime[,queue]",
	    ":2:1: name: a DNS-1123 label of at most 40 bytes",
	    ":2:7: pods: a whole number from 1 to 10000",
	    ":3:6: at: seconds or a duration such as 90s or 1h30m, at most a year",
	    ":3:13: runtime: seconds or a duration such as 600 or 2h, at most a year",
	    ":4:10: gpus: a whole number from 0 to 1024",
	    ":5:15: queue: a queue's name",
	};
	char *path = write_tmp("a,b,c\n"
	                       "Bad,0,0,1,5\n"
	                       "good,-5,1,1,1.5h\n"
	                       "fine,0,1,2000,5\n"
	                       "also,0,1,1,10,Team\n",
	                       ".csv");
	struct sim_trace t;
	char buf[512];

	(void)state;
	assert_int_equal(sim_trace_read(path, &t), -EINVAL);
	assert_int_equal(t.nerrors, 7);
	for (size_t k = 0; k < 7; k++) {
		snprintf(buf, sizeof(buf), "%s%s", path, want[k]);
		assert_string_equal(t.errors[k], buf);
	}
	sim_trace_free(&t);
	unlink(path);
	free(path);
	path = write_tmp("a,0,1,1,5\nb,0,1,1,5\na,1,1,1,5\n", ".csv");
	assert_int_equal(sim_trace_read(path, &t), -EINVAL);
	assert_int_equal(t.nerrors, 1);
	snprintf(buf, sizeof(buf), "%s: gang a is given twice", path);
	assert_string_equal(t.errors[0], buf);
	sim_trace_free(&t);
	unlink(path);
	free(path);
	assert_int_equal(sim_trace_read("/nonexistent/t.csv", &t), -EINVAL);
	assert_string_equal(t.errors[0], "/nonexistent/t.csv: No such file or directory");
	sim_trace_free(&t);
}

/* ---- runs --------------------------------------------------------------- */

static const struct sim_node two_nodes[] = {{"n0", NULL, 8}, {"n1", NULL, 8}};

/*
 * x (1 x 4 GPUs) runs 0..100 on one node; y (2 x 8) arrives at 1 and needs
 * both nodes whole: it waits until 100 with 12 GPUs idle all along, then
 * runs to 110. z (1 x 4) arrives at 2 and backfills beside x (it ends at
 * 52, before y could start): y's start does not move.
 *
 *   makespan 110; GPU-seconds 4 x 100 + 16 x 10 + 4 x 50 = 760, over
 *   16 x 110: 0.4318; y waits from 1 to 100 (99 s): 12 GPUs idle from 1
 *   to 2, 8 while z runs (2 to 52), 12 again to 100:
 *   (12 + 8 x 50 + 12 x 48) / 99 = 9.98.
 */
static void test_a_run_and_its_report(void **state)
{
	const struct sim_gang gangs[] = {
	    {.name = "x",
	     .at_s = 0,
	     .pods = 1,
	     .gpus = 4,
	     .runtime_s = 100,
	     .declared = SIM_DECLARED_POD,
	     .declared_value = "100"},
	    {.name = "y",
	     .at_s = 1,
	     .pods = 2,
	     .gpus = 8,
	     .runtime_s = 10,
	     .declared = SIM_DECLARED_POD,
	     .declared_value = "10"},
	    {.name = "z",
	     .at_s = 2,
	     .pods = 1,
	     .gpus = 4,
	     .runtime_s = 50,
	     .declared = SIM_DECLARED_POD,
	     .declared_value = "50"},
	};
	struct config *cfg = load(one_queue);
	struct sim_options o = {.cfg = cfg,
	                        .nodes = two_nodes,
	                        .nnodes = 2,
	                        .gangs = gangs,
	                        .ngangs = 3,
	                        .epoch_s = 1767225600,
	                        .check_state = true};
	struct sim_result r;
	struct sim_report rep;

	(void)state;
	assert_int_equal(sim_run(&o, &r), 0);
	assert_int_equal(r.violations, 0);
	assert_int_equal(r.start_s[0], 0);
	assert_int_equal(r.start_s[1], 100);
	assert_int_equal(r.start_s[2], 2);
	assert_int_equal(r.end_s[1], 110);
	assert_int_equal(sim_report(&o, &r, &rep), 0);
	assert_int_equal(rep.makespan_s, 110);
	assert_float_equal(rep.utilisation, 760.0 / (16 * 110), 1e-9);
	assert_int_equal(rep.waiting_s, 99);
	assert_float_equal(rep.stranded_gpus, (12.0 + 8 * 50 + 12 * 48) / 99, 1e-9);
	assert_int_equal(rep.nqueues, 1);
	assert_null(rep.queues[0].queue);
	assert_int_equal(rep.queues[0].started, 3);
	assert_int_equal(rep.queues[0].p50, 0); /* waits 0, 0, 99 */
	assert_int_equal(rep.queues[0].p90, 99);
	assert_int_equal(rep.queues[0].max, 99);
	sim_report_free(&rep);
	sim_result_free(&r);
	config_free(&cfg);
}

/* A gang larger than the cluster, and names that meet, are refused. */
static void test_bad_runs_refused(void **state)
{
	const struct sim_gang big[] = {
	    {.name = "big", .pods = 3, .gpus = 8, .runtime_s = 1, .declared = SIM_DECLARED_NONE}};
	const struct sim_gang twice[] = {
	    {.name = "a", .pods = 1, .gpus = 1, .runtime_s = 1, .declared = SIM_DECLARED_NONE},
	    {.name = "a", .pods = 1, .gpus = 1, .runtime_s = 1, .declared = SIM_DECLARED_NONE}};
	struct config *cfg = load(one_queue);
	struct sim_options o = {
	    .cfg = cfg, .nodes = two_nodes, .nnodes = 2, .gangs = big, .ngangs = 1};
	struct sim_result r;

	(void)state;
	assert_int_equal(sim_run(&o, &r), -EINVAL);
	sim_result_free(&r);
	o.gangs = twice;
	o.ngangs = 2;
	assert_int_equal(sim_run(&o, &r), -EINVAL);
	sim_result_free(&r);
	config_free(&cfg);
}

/* ---- the command --------------------------------------------------------- */

static char *run_cli(int argc, char **argv, int *status, char **errtext)
{
	char *out = NULL, *err = NULL;
	size_t on = 0, en = 0;
	FILE *fo = open_memstream(&out, &on), *fe = open_memstream(&err, &en);

	*status = sim_main(argc, argv, fo, fe, NULL);
	fclose(fo);
	fclose(fe);
	*errtext = err;
	return out;
}

/* Does out hold a line that reads `want` once runs of spaces are one? */
static bool has_row(const char *out, const char *want)
{
	char line[512];

	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t n = 0;

		for (const char *c = p; *c && *c != '\n' && n + 1 < sizeof(line); c++)
			if (*c != ' ' || (n && line[n - 1] != ' '))
				line[n++] = *c;
		line[n] = 0;
		if (!strcmp(line, want))
			return true;
	}
	return false;
}

static void test_simulate_command(void **state)
{
	char *trace = write_tmp("x,0,1,4,100\ny,1,2,8,10\nz,2,1,4,50\n", ".csv");
	char *good = write_tmp(one_queue, ".yaml");
	char *none = write_tmp(
	    "resources: [nvidia.com/gpu]\nbackfill: {reservations: 0}\n"
	    "queues:\n  - {name: q, namespaces: [sim], quota: {nvidia.com/gpu: {nominal: 16}}}\n",
	    ".yaml");
	char *broken = write_tmp("queues:\n  - name: q\n    weight: 0\n", ".yaml");
	char *argv[] = {"simulate", "--trace", trace,      "--nodes", "2",       "--gpus", "8",
	                "--config", good,      "--config", none,      "--gangs", NULL};
	char *out, *err;
	int status;

	(void)state;
	out = run_cli(12, argv, &status, &err);
	assert_int_equal(status, 0);
	assert_string_equal(err, "");
	assert_non_null(strstr(out, "3 gangs; 2 nodes x 8 GPUs (16)"));
	/* With a reservation y starts at 100; without, z and x do not hold
	 * it back either (nothing else arrives): the same here. */
	assert_true(has_row(out, "makespan 1m50s 1m50s"));
	assert_true(has_row(out, "GPU utilisation 43.2% 43.2%"));
	assert_true(has_row(out, "GPUs idle while gangs wait 9.98 9.98"));
	assert_true(has_row(out, "wait p90 1m39s 1m39s"));
	assert_true(has_row(out, "y 1m40s 1m40s"));
	free(out);
	free(err);
	argv[8] = broken;
	out = run_cli(9, argv, &status, &err);
	assert_int_equal(status, 1);
	assert_non_null(strstr(err, ":3:13: expected an integer from 1 to 1000000 for 'weight'"));
	assert_non_null(strstr(out, "failed"));
	free(out);
	free(err);
	argv[4] = "0";
	out = run_cli(9, argv, &status, &err);
	assert_int_equal(status, 2);
	assert_non_null(strstr(err, "usage: muster simulate"));
	free(out);
	free(err);
	unlink(trace);
	unlink(good);
	unlink(none);
	unlink(broken);
	free(trace);
	free(good);
	free(none);
	free(broken);
}

/* sim/examples/: the two teams' day (README there), run from the top of
 * the tree as make runs the tests. Without memory team-b waits 35 min on
 * average (four gangs 5 min, four 1 h 05); with a half-life of 6 h,
 * 12 min 30 s (seven 5 min, one 1 h 05), and team-a the longer. */
static void test_two_teams_example(void **state)
{
	char *argv[] = {"simulate",
	                "--trace",
	                "sim/examples/two-teams.csv",
	                "--nodes",
	                "8",
	                "--gpus",
	                "8",
	                "--config",
	                "sim/examples/two-teams.yaml",
	                "--config",
	                "sim/examples/two-teams-6h.yaml",
	                "--gangs",
	                NULL};
	char *out, *err;
	int status;

	(void)state;
	out = run_cli(12, argv, &status, &err);
	assert_int_equal(status, 0);
	assert_true(has_row(out, "wait mean 18m20s 29m35s")); /* team-a */
	assert_true(has_row(out, "wait mean 35m00s 12m30s")); /* team-b */
	assert_true(has_row(out, "b-4 25h00m 24h00m"));
	assert_true(has_row(out, "a-1 24h00m 25h00m"));
	free(out);
	free(err);
}

/* ---- a snapshot played forward --------------------------------------------- */

/* 2026-11-27T20:00:00Z: when the snapshot was taken. */
#define AT 1795809600

/* Objects as the API server lists them, in namespace team. */
#define NODE(n, hex)                                                                               \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" n "\","               \
	"\"uid\":\"00000000-0000-0000-0000-0000000000" hex "\",\"resourceVersion\":\"1\","         \
	"\"labels\":{\"kubernetes.io/hostname\":\"" n "\"}},\"spec\":{},\"status\":{"              \
	"\"allocatable\":{\"cpu\":\"96\",\"memory\":\"1Ti\",\"pods\":\"110\","                     \
	"\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
#define GROUP(n)                                                                                   \
	"{\"kind\":\"PodGroup\",\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"metadata\":{"    \
	"\"name\":\"" n "\",\"namespace\":\"team\",\"uid\":\"00000000-0000-0000-0000-00000000001"  \
	"0\",\"resourceVersion\":\"1\",\"creationTimestamp\":\"2026-11-27T19:50:00Z\"},"           \
	"\"spec\":{\"minMember\":2}}"
#define POD(n, g, node, phase, started, runtime)                                                   \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" n "\","                \
	"\"namespace\":\"team\",\"uid\":\"00000000-0000-0000-0000-000000000020\","                 \
	"\"resourceVersion\":\"1\",\"creationTimestamp\":\"2026-11-27T19:50:00Z\","                \
	"\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"" g "\"},"                                \
	"\"annotations\":{\"muster.dev/expected-runtime\":\"" runtime "\"}},"                      \
	"\"spec\":{" node "\"schedulerName\":\"muster\",\"containers\":[{\"name\":\"c\","          \
	"\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"8\"}}}]},"                \
	"\"status\":{\"phase\":\"" phase "\"" started "}}"

static const char *snapshot_json(void)
{
	return "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[" NODE("n0", "a0") "," NODE(
	    "n1", "a1") ","
	    /* run: two pods on n0 and n1 since AT - 100, for 300 s */
	    GROUP("run") "," POD("run-0", "run", "\"nodeName\":\"n0\",", "Running",
	                         ",\"startTime\":\"2026-11-27T19:58:20Z\"",
	                         "300") "," POD("run-1", "run", "\"nodeName\":\"n1\",", "Running",
	                                        ",\"startTime\":\"2026-11-27T19:58:20Z\"",
	                                        "300") ","
	    /* wait: two pods of 8 GPUs, pending, for 60 s */
	    GROUP("wait") "," POD("wait-0", "wait", "", "Pending", "", "60") "," POD(
	        "wait-1", "wait", "", "Pending", "",
	        "60") ","
	              /* what the decoders refuse, and what the planner does not read */
	              "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{}},"
	              "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s\"}}]"
	              "}";
}

static void test_snapshot_replayed(void **state)
{
	static const char big[] = "resources: [nvidia.com/gpu]\n"
	                          "queues:\n"
	                          "  - name: q\n"
	                          "    namespaces: [team]\n"
	                          "    quota: {nvidia.com/gpu: {nominal: 16}}\n";
	static const char small[] =
	    "resources: [nvidia.com/gpu]\n"
	    "queues:\n"
	    "  - name: q\n"
	    "    namespaces: [team]\n"
	    "    quota: {nvidia.com/gpu: {nominal: 8, borrowingLimit: 0}}\n";
	char *path = write_tmp(snapshot_json(), ".json");
	struct config *cfg = load(big), *cfg2 = load(small);
	struct sim_snapshot snap;
	struct sim_replay_options o = {.cfg = cfg, .snapshot = &snap, .at_s = AT};
	struct sim_replay_result res;

	(void)state;
	assert_int_equal(sim_snapshot_read(path, &snap), 0);
	assert_int_equal(sim_replay(&o, &res), 0);
	assert_int_equal(res.objects, 8); /* 2 nodes, 2 groups, 4 pods */
	assert_int_equal(res.skipped, 1);
	assert_non_null(strstr(res.first_skip, "name"));
	/* run ends at AT + 200; wait starts then, and ends at AT + 260. */
	assert_int_equal(res.ngangs, 1);
	assert_string_equal(res.gangs[0].ns, "team");
	assert_string_equal(res.gangs[0].name, "wait");
	assert_string_equal(res.gangs[0].queue, "q");
	assert_int_equal(res.gangs[0].start_s, 200);
	assert_int_equal(res.now_s, 260);
	assert_int_equal(res.violations, 0);
	/* 16 GPUs, all in use: run's to 200, wait's from 200 to 260. */
	assert_true(res.gpus == 16 && res.gpu_seconds == 16 * 260);
	sim_replay_result_free(&res);
	/* With 8 GPUs of quota and no borrowing, wait never fits its queue. */
	o.cfg = cfg2;
	assert_int_equal(sim_replay(&o, &res), 0);
	assert_int_equal(res.ngangs, 0);
	assert_int_equal(res.now_s, 200);
	assert_true(res.gpu_seconds == 16 * 200);
	sim_replay_result_free(&res);
	sim_snapshot_free(&snap);
	config_free(&cfg);
	config_free(&cfg2);
	unlink(path);
	free(path);
}

static void test_snapshot_command(void **state)
{
	char *path = write_tmp(snapshot_json(), ".json");
	char *q = write_tmp("resources: [nvidia.com/gpu]\n"
	                    "queues:\n  - {name: q, namespaces: [team], quota: {nvidia.com/gpu: "
	                    "{nominal: 16}}}\n",
	                    ".yaml");
	char *bad = write_tmp("[]", ".json");
	char *argv[] = {"simulate", "--snapshot", path, "--at", "2026-11-27T20:00:00Z", "--config",
	                q,          NULL};
	char *out, *err;
	int status;

	(void)state;
	out = run_cli(7, argv, &status, &err);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "snapshot"));
	assert_non_null(strstr(out, "at 2026-11-27T20:00:00Z"));
	assert_non_null(strstr(out, "8 objects read, 1 refused"));
	assert_true(has_row(out, "team/wait +3m20s"));
	assert_true(has_row(out, "q: gangs started 1"));
	assert_true(has_row(out, "q: mean start +3m20s"));
	assert_true(has_row(out, "GPU utilisation (to the last end) 100.0%"));
	free(out);
	free(err);
	argv[2] = bad;
	out = run_cli(7, argv, &status, &err);
	assert_int_equal(status, 1);
	assert_non_null(strstr(err, "not a JSON List"));
	free(out);
	free(err);
	unlink(path);
	unlink(q);
	unlink(bad);
	free(path);
	free(q);
	free(bad);
}

/* ---- the Alibaba trace's protocol ------------------------------------------ */

static const char ali_nodes[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                                "n0,8000,32768,2,T4\n"
                                "n1,8000,32768,2,V100M32\n";

/* Rows 0..5: p1 two whole V100M32s; p2 two whole T4s; p3 one whole GPU of
 * any model; p4 CPU alone; s5 and s6 half a GPU each. */
static const char ali_pods[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n"
                               "p1,1000,1024,2,1000,V100M32,LS\n"
                               "p2,1000,1024,2,1000,T4,LS\n"
                               "p3,1000,1024,1,1000,,LS\n"
                               "p4,1000,1024,0,0,,LS\n"
                               "s5,1000,1024,1,500,,LS\n"
                               "s6,1000,1024,1,500,,LS\n";

static char *run_alibaba(const char *nodes, const char *pods, const char *order, int *status,
                         char **err)
{
	char *np = write_tmp(nodes, ".csv"), *pp = write_tmp(pods, ".csv"),
	     *op = write_tmp(order, ".txt");
	char *argv[] = {"simulate", "--alibaba", pp, "--order", op, "--node-list", np};
	char *out = run_cli(7, argv, status, err);

	unlink(np);
	unlink(pp);
	unlink(op);
	free(np);
	free(pp);
	free(op);
	return out;
}

/* p1 may go to n1 alone: placed anywhere else, p2 would find no node
 * with two free GPUs of its model. p3 then finds no GPU, p4 a CPU. The
 * ratio (paper's): arrived 2, 4, 5, 5 of 4 GPUs (50%, 100%, 125%, 125%),
 * used 2, 4, 4, 4: 100.00 at 100%; nothing arrived near 130%. */
static void test_alibaba_whole_gpus(void **state)
{
	char *err, *out;
	int status;

	(void)state;
	out = run_alibaba(ali_nodes, ali_pods, "0\n1\n2\n3\n", &status, &err);
	assert_int_equal(status, 0);
	assert_string_equal(err, "");
	assert_non_null(strstr(out, "2 nodes, 4 GPUs; 4 arrivals, 3 placed, 1 left out, 4 cycles"));
	assert_true(has_row(out, "alloc_100=100.00 alloc_130=-1.00 placed=3 left_out=1"));
	free(out);
	free(err);
}

/* Half GPUs share one: on one node of one GPU, s5 and s6 both fit and a
 * third half does not (s5 again, as an order may repeat a row). Arrived
 * 50%, 100%, 150%; used 50%, 100%, 100%. */
static void test_alibaba_shares(void **state)
{
	char *err, *out;
	int status;

	(void)state;
	out = run_alibaba("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,32768,1,T4\n", ali_pods,
	                  "4\n5\n4\n", &status, &err);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "3 arrivals, 2 placed, 1 left out"));
	assert_true(has_row(out, "alloc_100=100.00 alloc_130=-1.00 placed=2 left_out=1"));
	free(out);
	free(err);
}

/* A line that is not a node, and an arrival that is not a row, are refused
 * with their file and line; nothing runs. */
static void test_alibaba_files_refused(void **state)
{
	char *err, *out;
	int status;

	(void)state;
	out = run_alibaba("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,32768,1,T4\nn1,x,1,1,T4\n",
	                  ali_pods, "0\n", &status, &err);
	assert_int_equal(status, 1);
	assert_string_equal(out, "");
	assert_non_null(strstr(err, ".csv:3: not a node"));
	free(out);
	free(err);
	out = run_alibaba(ali_nodes, ali_pods, "0\n6\n", &status, &err);
	assert_int_equal(status, 1);
	assert_non_null(strstr(err, ".txt:2: not a data row of the pod list (0 to 5)"));
	free(out);
	free(err);
	out = run_alibaba(ali_nodes, "name,cpu_milli\np,1\n", "0\n", &status, &err);
	assert_int_equal(status, 1);
	assert_non_null(strstr(err, ".csv:1: no column memory_mib"));
	free(out);
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trace_read),
	    cmocka_unit_test(test_trace_errors_name_their_place),
	    cmocka_unit_test(test_a_run_and_its_report),
	    cmocka_unit_test(test_bad_runs_refused),
	    cmocka_unit_test(test_simulate_command),
	    cmocka_unit_test(test_two_teams_example),
	    cmocka_unit_test(test_snapshot_replayed),
	    cmocka_unit_test(test_snapshot_command),
	    cmocka_unit_test(test_alibaba_whole_gpus),
	    cmocka_unit_test(test_alibaba_shares),
	    cmocka_unit_test(test_alibaba_files_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
