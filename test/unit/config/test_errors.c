/*
 * config: every kind of bad input and the exact lines a person sees,
 * "FILE:LINE:COLUMN: message", in document order; the cap on kept errors;
 * file errors; nesting refused before libyaml loads it, and brackets
 * that are text not counted; and config_check(), the whole of
 * `muster check-config`.
 *
 * Columns were counted by hand on the YAML of each row (1-based, at the
 * first character of the offending node: a key, a value, or the '{' of a
 * mapping that misses a key).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"

#define EXAMPLE  "config/example.yaml"
#define MAX_WANT 8

static int parse(const char *text, struct config **c, struct config_errors *errs)
{
	return config_parse("t.yaml", text, strlen(text), c, errs);
}

/* Fails unless errs holds exactly the messages want[0..], in order. */
static void expect_messages(const char *label, const struct config_errors *errs,
                            const char *const *want)
{
	size_t n = 0;

	while (n < MAX_WANT && want[n])
		n++;
	for (size_t i = 0; i < errs->n && i < n; i++)
		if (strcmp(errs->v[i].msg, want[i]) != 0)
			fail_msg("%s: error %zu is\n  %s\nwant\n  %s", label, i, errs->v[i].msg,
			         want[i]);
	if (errs->n != n) {
		for (size_t i = 0; i < errs->n; i++)
			print_message("  got: %s\n", errs->v[i].msg);
		fail_msg("%s: %zu errors, want %zu", label, errs->n, n);
	}
}

/* ---- one error per file ------------------------------------------------ */

struct bad {
	const char *label;
	const char *yaml;
	const char *want[MAX_WANT];
};

#define Q1  "queues:\n  - name: q\n"
#define CPU "resources: [cpu]\n" Q1

/* clang-format off */
static const struct bad bad_files[] = {
    {"unknown key at the root", "colour: blue\n",
     {"t.yaml:1:1: unknown key 'colour' in the configuration; expected schedulerName, schedulerNames, "
      "resources, flavors, topology, defaultQueue, backfill, fairSharing, cohorts or queues"}},
    {"unknown key in a queue", Q1 "    wieght: 2\n",
     {"t.yaml:3:5: unknown key 'wieght' in queue; expected name, namespaces, weight, "
      "ordering, quota, preemption, gangTimeout or defaultRuntime"}},
    {"unknown key in a quota entry", CPU "    quota: {cpu: {nominal: 1, limit: 2}}\n",
     {"t.yaml:4:31: unknown key 'limit' in quota entry; expected nominal, borrowingLimit "
      "or lendingLimit"}},
    {"key twice", "queues: [{name: q, weight: 1, weight: 2}]\n",
     {"t.yaml:1:31: key 'weight' appears twice in queue"}},
    {"root is a list", "- a\n",
     {"t.yaml:1:1: expected a mapping for 'the configuration', got a list"}},
    {"mapping expected", Q1 "    quota: [cpu]\n",
     {"t.yaml:3:12: expected a mapping for 'quota', got a list"}},
    {"list expected", "resources: cpu\n",
     {"t.yaml:1:12: expected a list for 'resources', got a string"}},
    {"string expected", "schedulerName: {a: b}\n",
     {"t.yaml:1:16: expected a string for 'schedulerName', got a mapping"}},
    {"string expected in a list", "queues: [{name: q, namespaces: [[a]]}]\n",
     {"t.yaml:1:33: expected a string for 'namespaces', got a list"}},
    {"integer expected", "cohorts: [{name: c, weight: heavy}]\n",
     {"t.yaml:1:29: expected an integer from 1 to 1000000 for 'weight', got 'heavy'"}},
    {"negative quantity", CPU "    quota: {cpu: {nominal: -1}}\n",
     {"t.yaml:4:28: 'nominal' must not be negative, got '-1'"}},
    {"unparsable quantity", CPU "    quota: {cpu: {nominal: 2TB}}\n",
     {"t.yaml:4:28: expected a quantity such as 16, 500m or 2Ti for 'nominal', got '2TB'"}},
    {"missing nominal", CPU "    quota: {cpu: {lendingLimit: 1}}\n",
     {"t.yaml:4:18: missing 'nominal' in quota entry"}},
    {"lendingLimit above nominal",
     "resources: [nvidia.com/gpu]\n" Q1
     "    quota:\n      nvidia.com/gpu: {nominal: 8, lendingLimit: 9}\n",
     {"t.yaml:5:50: lendingLimit (9) is above nominal (8) for 'nvidia.com/gpu'"}},
    {"lendingLimit above nominal, cpu", CPU "    quota: {cpu: {nominal: 1, lendingLimit: 1500m}}\n",
     {"t.yaml:4:45: lendingLimit (1500m) is above nominal (1000m) for 'cpu'"}},
    {"borrowingLimit negative", CPU "    quota: {cpu: {nominal: 1, borrowingLimit: -1}}\n",
     {"t.yaml:4:47: 'borrowingLimit' must not be negative, got '-1'"}},
    {"quota twice", CPU "    quota: {cpu: {nominal: 1}, \"cpu\": {nominal: 2}}\n",
     {"t.yaml:4:32: quota for 'cpu' appears twice"}},
    {"resource not listed", CPU "    quota: {memory: {nominal: 1}}\n",
     {"t.yaml:4:13: quota on 'memory', which is not listed in 'resources' (cpu)"}},
    {"unknown flavor",
     "resources: [nvidia.com/gpu]\nflavors: [{name: h100}]\n" Q1
     "    quota:\n      nvidia.com/gpu@h200: {nominal: 1}\n",
     {"t.yaml:6:7: unknown flavor 'h200' in 'nvidia.com/gpu@h200'; flavors: h100"}},
    {"a flavor without flavors", CPU "    quota: {cpu@h100: {nominal: 1}}\n",
     {"t.yaml:4:13: unknown flavor 'h100' in 'cpu@h100'; flavors: none defined"}},
    {"cohort and queue share a name", "cohorts: [{name: x}]\nqueues: [{name: x}]\n",
     {"t.yaml:2:17: name 'x' is already used by the cohort at line 1; cohorts and queues "
      "share one set of names"}},
    {"two queues share a name",
     "cohorts:\n  - name: c\n    queues: [{name: q}]\nqueues: [{name: q}]\n",
     {"t.yaml:4:17: name 'q' is already used by the queue at line 3; cohorts and queues "
      "share one set of names"}},
    {"two flavors share a name", "flavors:\n  - name: h100\n  - name: h100\n",
     {"t.yaml:3:11: flavor name 'h100' appears twice"}},
    {"namespace claimed twice",
     "queues:\n  - name: a\n    namespaces: [ns]\n  - name: b\n    namespaces: [x, ns]\n",
     {"t.yaml:5:21: namespace 'ns' is claimed by queue 'a' (line 3) and by queue 'b'"}},
    {"unknown ordering", "queues: [{name: q, ordering: FIFO}]\n",
     {"t.yaml:1:30: unknown ordering 'FIFO'; expected BestEffortFIFO or StrictFIFO"}},
    {"unknown withinQueue", "queues: [{name: q, preemption: {withinQueue: Always}}]\n",
     {"t.yaml:1:46: unknown withinQueue 'Always'; expected Never, LowerPriority or "
      "LowerOrNewerEqualPriority"}},
    {"unknown reclaimWithinCohort",
     "queues: [{name: q, preemption: {reclaimWithinCohort: all}}]\n",
     {"t.yaml:1:54: unknown reclaimWithinCohort 'all'; expected Never, LowerPriority or Any"}},
    {"unknown key in preemption", "queues: [{name: q, preemption: {minRunTime: 1m}}]\n",
     {"t.yaml:1:33: unknown key 'minRunTime' in preemption; expected withinQueue, "
      "reclaimWithinCohort, minRuntime or preemptible"}},
    {"bad minRuntime", "queues: [{name: q, preemption: {minRuntime: soon}}]\n",
     {"t.yaml:1:45: expected a duration such as 90s, 10m, 1h30m or 500ms for "
      "'minRuntime', got 'soon'"}},
    {"negative minRuntime", "queues: [{name: q, preemption: {minRuntime: -5m}}]\n",
     {"t.yaml:1:45: expected a duration such as 90s, 10m, 1h30m or 500ms for "
      "'minRuntime', got '-5m'"}},
    {"halfLife too short", "fairSharing: {halfLife: 30s}\n",
     {"t.yaml:1:25: expected 0 (no memory) or a duration of at least 1m such as 6h or 168h "
      "for 'halfLife', got '30s'"}},
    {"halfLife in days", "fairSharing:\n  halfLife: 7d\n",
     {"t.yaml:2:13: expected 0 (no memory) or a duration of at least 1m such as 6h or 168h "
      "for 'halfLife', got '7d'"}},
    {"unknown key in fairSharing", "fairSharing: {halfTime: 6h}\n",
     {"t.yaml:1:15: unknown key 'halfTime' in fairSharing; expected halfLife"}},
    {"preemptible not a boolean", "queues: [{name: q, preemption: {preemptible: yes}}]\n",
     {"t.yaml:1:46: expected true or false for 'preemptible', got 'yes'"}},
    {"preemptible a list", "queues: [{name: q, preemption: {preemptible: [true]}}]\n",
     {"t.yaml:1:46: expected a string for 'preemptible', got a list"}},
    {"reservations above 1000", "backfill: {reservations: 1001}\n",
     {"t.yaml:1:26: expected an integer from 0 to 1000 for 'reservations', got '1001'"}},
    {"reservations negative", "backfill: {reservations: -1}\n",
     {"t.yaml:1:26: expected an integer from 0 to 1000 for 'reservations', got '-1'"}},
    {"reservations not an integer", "backfill: {reservations: many}\n",
     {"t.yaml:1:26: expected an integer from 0 to 1000 for 'reservations', got 'many'"}},
    {"reservations a fraction", "backfill: {reservations: 1.5}\n",
     {"t.yaml:1:26: expected an integer from 0 to 1000 for 'reservations', got '1.5'"}},
    {"unknown key in backfill", "backfill: {depth: 2}\n",
     {"t.yaml:1:12: unknown key 'depth' in backfill; expected reservations"}},
    {"backfill not a mapping", "backfill: [1]\n",
     {"t.yaml:1:11: expected a mapping for 'backfill', got a list"}},
    {"bad duration", "queues: [{name: q, defaultRuntime: 4 hours}]\n",
     {"t.yaml:1:36: expected a duration such as 90s, 10m, 1h30m or 500ms for "
      "'defaultRuntime', got '4 hours'"}},
    {"weight zero", "queues: [{name: q, weight: 0}]\n",
     {"t.yaml:1:28: expected an integer from 1 to 1000000 for 'weight', got '0'"}},
    {"weight negative", "cohorts: [{name: c, weight: -3}]\n",
     {"t.yaml:1:29: expected an integer from 1 to 1000000 for 'weight', got '-3'"}},
    {"defaultQueue names nothing", "defaultQueue: nope\nqueues: [{name: q}]\n",
     {"t.yaml:1:15: defaultQueue 'nope' names no queue"}},
    {"defaultQueue names a cohort", "defaultQueue: c\ncohorts: [{name: c}]\n",
     {"t.yaml:1:15: defaultQueue 'c' names a cohort; expected the name of a queue"}},
    {"empty name", "queues: [{name: \"\"}]\n",
     {"t.yaml:1:17: 'name' must not be empty"}},
    {"missing name", "queues: [{namespaces: [a]}]\n",
     {"t.yaml:1:10: missing 'name' in queue"}},
    {"YAML syntax", "queues: [{name: q}\nresources: []\n",
     {"t.yaml:2:1: invalid YAML: did not find expected ',' or ']' while parsing a flow "
      "sequence started at 1:9"}},
    {"YAML syntax in a second document", "queues: []\n---\n[\n",
     {"t.yaml:4:1: invalid YAML: did not find expected node content while parsing a flow "
      "node started at 4:1"}},
    {"two documents", "queues: []\n---\nqueues: []\n",
     {"t.yaml:2:1: a second YAML document; expected exactly one"}},
    {"empty file", "", {"t.yaml: the file is empty; expected a mapping"}},
    {"no resources", "resources: []\n",
     {"t.yaml:1:12: 'resources' is empty; expected at least one resource name"}},
    {"resource listed twice", "resources: [cpu, memory, cpu]\n",
     {"t.yaml:1:26: resource 'cpu' is listed twice"}},
    {"no scheduler names", "schedulerNames: []\n",
     {"t.yaml:1:17: 'schedulerNames' is empty; expected at least one name"}},
    {"scheduler name listed twice", "schedulerNames: [volcano, muster, volcano]\n",
     {"t.yaml:1:35: scheduler name 'volcano' is listed twice"}},
    {"empty scheduler name", "schedulerNames: [muster, \"\"]\n",
     {"t.yaml:1:26: 'schedulerNames' must not be empty"}},
    {"too many scheduler names", "schedulerNames: [a, b, c, d, e, f, g, h, i]\n",
     {"t.yaml:1:17: 9 scheduler names; at most 8"}},
    {"scheduler names not a list", "schedulerNames: volcano\n",
     {"t.yaml:1:17: expected a list for 'schedulerNames', got a string"}},
};
/* clang-format on */

static void test_bad_files(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		struct config_errors errs;
		struct config *c = (struct config *)&errs; /* must be cleared */
		int rc;

		config_errors_init(&errs);
		rc = parse(bad_files[i].yaml, &c, &errs);
		if (rc != -EINVAL)
			fail_msg("%s: returned %d, want -EINVAL", bad_files[i].label, rc);
		assert_null(c);
		expect_messages(bad_files[i].label, &errs, bad_files[i].want);
		config_errors_clear(&errs);
	}
}

/* ---- many errors ------------------------------------------------------- */

static const char many[] = "resources: [cpu]\n"
                           "colour: blue\n"
                           "cohorts:\n"
                           "  - name: c\n"
                           "    weight: 0\n"
                           "    queues:\n"
                           "      - name: a\n"
                           "        namespaces: [ns]\n"
                           "        quota: {cpu: {nominal: x}, gpu: {nominal: 1}}\n"
                           "        gangTimeout: soon\n"
                           "queues:\n"
                           "  - name: c\n"
                           "    namespaces: [ns]\n"
                           "defaultQueue: b\n";

static void test_many_errors_in_one_file(void **state)
{
	static const char *const want[] = {
	    "t.yaml:2:1: unknown key 'colour' in the configuration; expected schedulerName, "
	    "schedulerNames, "
	    "resources, flavors, topology, defaultQueue, backfill, fairSharing, cohorts or "
	    "queues",
	    "t.yaml:5:13: expected an integer from 1 to 1000000 for 'weight', got '0'",
	    "t.yaml:9:32: expected a quantity such as 16, 500m or 2Ti for 'nominal', got 'x'",
	    "t.yaml:9:36: quota on 'gpu', which is not listed in 'resources' (cpu)",
	    "t.yaml:10:22: expected a duration such as 90s, 10m, 1h30m or 500ms for "
	    "'gangTimeout', got 'soon'",
	    "t.yaml:12:11: name 'c' is already used by the cohort at line 4; cohorts and queues "
	    "share one set of names",
	    "t.yaml:13:18: namespace 'ns' is claimed by queue 'a' (line 8) and by queue 'c'",
	    "t.yaml:14:15: defaultQueue 'b' names no queue",
	};
	const char *want_list[MAX_WANT + 1] = {0};
	struct config_errors errs;
	struct config *c;

	(void)state;
	memcpy(want_list, want, sizeof(want));
	config_errors_init(&errs);
	assert_int_equal(parse(many, &c, &errs), -EINVAL);
	expect_messages("many", &errs, want_list);
	assert_int_equal(errs.v[0].line, 2);
	assert_int_equal(errs.v[0].column, 1);
	config_errors_clear(&errs);
	assert_int_equal(errs.n, 0);
	/* Without an error list the result is the same. */
	assert_int_equal(parse(many, &c, NULL), -EINVAL);
	assert_null(c);
}

/* 150 queues of weight 0: the first 100 errors are kept, 50 counted. */
static void test_error_cap(void **state)
{
	size_t cap = 150 * 40 + 16, used;
	char *text = malloc(cap), *printed = NULL;
	struct config_errors errs;
	struct config *c;
	size_t len = 0;
	FILE *out;

	(void)state;
	assert_non_null(text);
	used = (size_t)snprintf(text, cap, "queues:\n");
	for (int i = 0; i < 150; i++)
		used +=
		    (size_t)snprintf(text + used, cap - used, "  - {name: q%d, weight: 0}\n", i);
	config_errors_init(&errs);
	assert_int_equal(parse(text, &c, &errs), -EINVAL);
	assert_int_equal(errs.n, CONFIG_MAX_ERRORS);
	assert_int_equal(errs.dropped, 50);
	assert_string_equal(errs.v[99].msg, "t.yaml:101:25: expected an integer from 1 to 1000000 "
	                                    "for 'weight', got '0'");
	out = open_memstream(&printed, &len);
	assert_non_null(out);
	config_errors_print(&errs, out);
	fclose(out);
	assert_non_null(strstr(printed, "'0'\n50 more errors\n"));
	free(printed);
	free(text);
	config_errors_clear(&errs);
}

/* Cohorts may nest CONFIG_MAX_DEPTH deep, and no deeper. */
static void test_too_deep(void **state)
{
	char text[2048];
	struct config_errors errs;
	struct config *c;
	size_t used = 0;

	(void)state;
	used += (size_t)snprintf(text, sizeof(text), "cohorts: ");
	for (int i = 0; i < CONFIG_MAX_DEPTH; i++)
		used +=
		    (size_t)snprintf(text + used, sizeof(text) - used, "[{name: c%d, cohorts: ", i);
	snprintf(text + used, sizeof(text) - used, "[]%.*s\n", 2 * CONFIG_MAX_DEPTH,
	         "}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]");
	assert_int_equal(parse(text, &c, NULL), 0);
	assert_int_equal(c->n_all_cohorts, CONFIG_MAX_DEPTH);
	config_free(&c);

	/* One level more: the innermost list is refused. */
	snprintf(text + used, sizeof(text) - used, "[{name: x}]%.*s\n", 2 * CONFIG_MAX_DEPTH,
	         "}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]");
	config_errors_init(&errs);
	assert_int_equal(parse(text, &c, &errs), -EINVAL);
	if (errs.n != 1)
		fail_msg("%zu errors, first %s", errs.n, errs.v[0].msg);
	assert_non_null(strstr(errs.v[0].msg, ": cohorts are nested more than 16 deep"));
	assert_int_equal(errs.v[0].column, used + 1);
	config_errors_clear(&errs);
}

/* 62 resources and the pairs r0@f0, r0@f1 make 64 slots, the most; a
 * third pair, in a second queue, is refused at its key. */
static void test_too_many_slots(void **state)
{
	char text[4096];
	struct config_errors errs;
	struct config *c;
	size_t used = 0;

	(void)state;
	used += (size_t)snprintf(text, sizeof(text), "resources: [r0");
	for (int i = 1; i < CONFIG_MAX_SLOTS - 2; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, ", r%d", i);
	used += (size_t)snprintf(text + used, sizeof(text) - used,
	                         "]\nflavors: [{name: f0}, {name: f1}, {name: f2}]\n"
	                         "queues:\n"
	                         "  - name: a\n"
	                         "    quota: {r0@f0: {nominal: 1}, r0@f1: {nominal: 1}}\n");
	assert_int_equal(parse(text, &c, NULL), 0);
	config_free(&c);

	snprintf(text + used, sizeof(text) - used,
	         "  - name: b\n"
	         "    quota: {r0@f0: {nominal: 1}, r0@f2: {nominal: 1}, r1@f2: {nominal: 1}}\n");
	config_errors_init(&errs);
	assert_int_equal(parse(text, &c, &errs), -EINVAL);
	if (errs.n != 1)
		fail_msg("%zu errors, first %s", errs.n, errs.n ? errs.v[0].msg : "");
	assert_string_equal(
	    errs.v[0].msg, "t.yaml:7:34: quota on 'r0@f2' needs quota slot 65; at most 64 (one per "
	                   "resource, plus one per resource@flavor that some queue uses)");
	config_errors_clear(&errs);
}

static void test_long_string(void **state)
{
	char text[CONFIG_MAX_STRING + 64], name[CONFIG_MAX_STRING + 2];
	struct config_errors errs;
	struct config *c;

	(void)state;
	memset(name, 'a', sizeof(name) - 1);
	name[CONFIG_MAX_STRING] = '\0'; /* exactly the cap: fine */
	snprintf(text, sizeof(text), "queues: [{name: %s}]\n", name);
	assert_int_equal(parse(text, &c, NULL), 0);
	config_free(&c);
	name[CONFIG_MAX_STRING] = 'a';
	name[CONFIG_MAX_STRING + 1] = '\0';
	snprintf(text, sizeof(text), "queues: [{name: %s}]\n", name);
	config_errors_init(&errs);
	assert_int_equal(parse(text, &c, &errs), -EINVAL);
	assert_string_equal(errs.v[0].msg,
	                    "t.yaml:1:17: 'name' must be at most 512 bytes with no NUL byte");
	config_errors_clear(&errs);
}

/* ---- files ------------------------------------------------------------- */

/* Writes text to a new temporary file; the caller unlinks path. */
static void write_temp(char *path, const char *text, size_t len)
{
	int fd = mkstemp(path);
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void test_file_errors(void **state)
{
	char path[] = "/tmp/muster-config-XXXXXX", want[128];
	struct config_errors errs;
	struct config *c;
	char *big;

	(void)state;
	config_errors_init(&errs);
	assert_int_equal(config_load("/nonexistent/muster.yaml", &c, &errs), -ENOENT);
	assert_null(c);
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.v[0].msg,
	                    "/nonexistent/muster.yaml: cannot read: No such file or directory");
	config_errors_clear(&errs);

	big = malloc(CONFIG_MAX_FILE + 1);
	assert_non_null(big);
	memset(big, '#', CONFIG_MAX_FILE + 1);
	assert_int_equal(config_parse("big", big, CONFIG_MAX_FILE + 1, &c, NULL), -EFBIG);
	write_temp(path, big, CONFIG_MAX_FILE + 1);
	free(big);
	assert_int_equal(config_load(path, &c, &errs), -EFBIG);
	snprintf(want, sizeof(want), "%s: larger than 1048576 bytes", path);
	assert_string_equal(errs.v[0].msg, want);
	config_errors_clear(&errs);
	unlink(path);
}

/* ---- check-config ------------------------------------------------------ */

struct streams {
	FILE *out, *err;
	char *out_text, *err_text;
	size_t out_len, err_len;
};

static int check(const char *path, struct streams *s)
{
	int rc;

	s->out = open_memstream(&s->out_text, &s->out_len);
	s->err = open_memstream(&s->err_text, &s->err_len);
	assert_non_null(s->out);
	assert_non_null(s->err);
	rc = config_check(path, s->out, s->err);
	fclose(s->out);
	fclose(s->err);
	return rc;
}

static void streams_free(struct streams *s)
{
	free(s->out_text);
	free(s->err_text);
}

/* ---- nesting (base/yaml_guard.h) ------------------------------------ */

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* 1 MiB of '[' took libyaml minutes; refused now at the 65th, naming it,
 * through the same path as `muster check-config`. */
static void test_nested_file(void **state)
{
	char path[] = "/tmp/muster-config-XXXXXX", want[256];
	char *text = malloc(CONFIG_MAX_FILE);
	struct streams s;
	double t0, ms;

	(void)state;
	assert_non_null(text);
	memcpy(text, "queues: ", 8);
	memset(text + 8, '[', CONFIG_MAX_FILE - 8);
	write_temp(path, text, CONFIG_MAX_FILE);
	free(text);
	t0 = now_ms();
	assert_int_equal(check(path, &s), 1);
	ms = now_ms() - t0;
	snprintf(want, sizeof(want), "%s:1:73: '[' nested deeper than 64 levels\n", path);
	assert_string_equal(s.err_text, want);
	assert_string_equal(s.out_text, "");
	/* Generous, so a loaded machine does not fail it; the old cost of
	 * this file was minutes. */
	print_message("1 MiB nested file refused in %.3f ms\n", ms);
	assert_true(ms < 2000);
	streams_free(&s);
	unlink(path);
}

/* Nesting without brackets is refused at the node too deep. */
static void test_nested_blocks(void **state)
{
	char text[65 * 70], *p = text;
	struct config_errors errs;
	struct config *c;

	(void)state;
	config_errors_init(&errs);
	for (int i = 0; i < 65; i++)
		p += sprintf(p, "%*squeues:\n", i, "");
	assert_int_equal(parse(text, &c, &errs), -EINVAL);
	assert_null(c);
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.v[0].msg, "t.yaml:65:65: a mapping nested deeper than 64 levels");
	config_errors_clear(&errs);
}

/* Brackets in quoted strings, comments and block scalars are text. */
static void test_brackets_in_text(void **state)
{
	static const char text[] =
	    "# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n"
	    "schedulerName: |-\n"
	    "  {{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{\n"
	    "queues:\n"
	    "  - name: '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['\n"
	    "    namespaces: "
	    "[\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"]\n";
	struct config *c;

	(void)state;
	assert_int_equal(parse(text, &c, NULL), 0);
	assert_true(strlen(c->scheduler_name) > 64);
	assert_int_equal(strspn(c->scheduler_name, "{"), strlen(c->scheduler_name));
	assert_true(strlen(c->all_queues[0]->name) > 64);
	assert_int_equal(strspn(c->all_queues[0]->name, "["), strlen(c->all_queues[0]->name));
	config_free(&c);
}

static void test_check_ok(void **state)
{
	struct streams s;

	(void)state;
	assert_int_equal(check(EXAMPLE, &s), 0);
	assert_string_equal(s.out_text, "config/example.yaml: ok (3 cohorts, 4 queues)\n");
	assert_string_equal(s.err_text, "");
	streams_free(&s);
}

static void test_check_errors(void **state)
{
	static const char text[] = "queues:\n  - name: q\n    weight: 0\n  - name: q\n";
	char path[] = "/tmp/muster-config-XXXXXX", want[512];
	struct streams s;

	(void)state;
	write_temp(path, text, strlen(text));
	assert_int_equal(check(path, &s), 1);
	snprintf(want, sizeof(want),
	         "%s:3:13: expected an integer from 1 to 1000000 for 'weight', got '0'\n"
	         "%s:4:11: name 'q' is already used by the queue at line 2; cohorts and queues "
	         "share one set of names\n",
	         path, path);
	assert_string_equal(s.err_text, want);
	assert_string_equal(s.out_text, "");
	streams_free(&s);
	unlink(path);

	assert_int_equal(check("/nonexistent/muster.yaml", &s), 1);
	assert_string_equal(s.err_text,
	                    "/nonexistent/muster.yaml: cannot read: No such file or directory\n");
	streams_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_files),      cmocka_unit_test(test_many_errors_in_one_file),
	    cmocka_unit_test(test_error_cap),      cmocka_unit_test(test_too_deep),
	    cmocka_unit_test(test_too_many_slots), cmocka_unit_test(test_long_string),
	    cmocka_unit_test(test_file_errors),    cmocka_unit_test(test_check_ok),
	    cmocka_unit_test(test_check_errors),   cmocka_unit_test(test_nested_file),
	    cmocka_unit_test(test_nested_blocks),  cmocka_unit_test(test_brackets_in_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
