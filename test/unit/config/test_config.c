/*
 * config: the example file field by field, nested cohorts, defaults,
 * preemption and backfill keys, durations (in the file and through
 * units_duration_parse()) and lookups. Bad input is test_errors.c.
 *
 * Expected numbers are worked out by hand: 2Ti = 2 * 2^40 = 2199023255552
 * bytes, 512Gi = 512 * 2^30 = 549755813888, 256 cpu = 256000 milli-cores,
 * 1h30m = 5400000 ms. Positions are 1-based, as editors show them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"

#define EXAMPLE "config/example.yaml"

static int parse(const char *text, struct config **c, struct config_errors *errs)
{
	return config_parse("t.yaml", text, strlen(text), c, errs);
}

/* ---- the example ------------------------------------------------------- */

static void expect_quota(const struct config_quota *q, size_t resource, size_t flavor,
                         int64_t nominal, int64_t borrowing, int64_t lending)
{
	assert_int_equal(q->resource, resource);
	assert_int_equal(q->flavor, flavor);
	assert_int_equal(q->nominal, nominal);
	assert_int_equal(q->borrowing_limit, borrowing);
	assert_int_equal(q->lending_limit, lending);
}

static void check_top(const struct config *c)
{
	assert_string_equal(c->scheduler_name, "muster");
	assert_int_equal(c->resources.n, 3);
	assert_string_equal(c->resources.v[0], "cpu");
	assert_string_equal(c->resources.v[1], "memory");
	assert_string_equal(c->resources.v[2], "nvidia.com/gpu");
	assert_int_equal(c->n_flavors, 2);
	assert_string_equal(c->flavors[0].name, "h100");
	assert_int_equal(c->flavors[0].n_labels, 1);
	assert_string_equal(c->flavors[0].labels[0].key, "nvidia.com/gpu.product");
	assert_string_equal(c->flavors[0].labels[0].value, "NVIDIA-H100-80GB-HBM3");
	assert_string_equal(c->flavors[1].name, "a100");
	assert_string_equal(c->flavors[1].labels[0].value, "NVIDIA-A100-SXM4-80GB");
	assert_int_equal(c->topology.levels.n, 4);
	assert_string_equal(c->topology.levels.v[0], "topology.kubernetes.io/zone");
	assert_string_equal(c->topology.levels.v[3], "kubernetes.io/hostname");
	assert_string_equal(c->default_queue, "best-effort");
	assert_int_equal(c->backfill.reservations, 1);
	assert_int_equal(c->n_cohorts, 2);
	assert_int_equal(c->n_queues, 1);
	assert_int_equal(c->n_all_cohorts, 3);
	assert_int_equal(c->n_all_queues, 4);
}

static void check_team_a(const struct config_cohort *research)
{
	const struct config_queue *q = &research->queues[0];

	assert_string_equal(q->name, "team-a");
	assert_ptr_equal(q->parent, research);
	assert_int_equal(q->namespaces.n, 2);
	assert_string_equal(q->namespaces.v[0], "team-a");
	assert_string_equal(q->namespaces.v[1], "team-a-dev");
	assert_int_equal(q->weight, 1);
	assert_int_equal(q->ordering, CONFIG_ORDERING_BEST_EFFORT_FIFO);
	assert_int_equal(q->n_quotas, 4);
	expect_quota(&q->quotas[0], 2, CONFIG_NO_FLAVOR, 16, 8, 8);
	expect_quota(&q->quotas[1], 2, 0, 8, CONFIG_UNLIMITED, CONFIG_UNLIMITED);
	expect_quota(&q->quotas[2], 0, CONFIG_NO_FLAVOR, 256000, CONFIG_UNLIMITED,
	             CONFIG_UNLIMITED);
	expect_quota(&q->quotas[3], 1, CONFIG_NO_FLAVOR, INT64_C(2199023255552), CONFIG_UNLIMITED,
	             CONFIG_UNLIMITED);
	assert_int_equal(q->preemption.within_queue, CONFIG_WITHIN_QUEUE_LOWER_PRIORITY);
	assert_int_equal(q->preemption.reclaim_within_cohort, CONFIG_RECLAIM_ANY);
	assert_int_equal(q->preemption.min_runtime_ms, 1800000);
	assert_true(q->preemption.preemptible);
	assert_int_equal(q->gang_timeout_ms, 600000);
	assert_int_equal(q->default_runtime_ms, 14400000);
}

static void check_team_b(const struct config_cohort *research)
{
	const struct config_queue *q = &research->queues[1];

	assert_string_equal(q->name, "team-b");
	assert_int_equal(q->weight, 3);
	assert_int_equal(q->ordering, CONFIG_ORDERING_STRICT_FIFO);
	assert_int_equal(q->n_quotas, 3);
	expect_quota(&q->quotas[0], 2, 1, 32, CONFIG_UNLIMITED, 0);
	expect_quota(&q->quotas[1], 0, CONFIG_NO_FLAVOR, 500, CONFIG_UNLIMITED, CONFIG_UNLIMITED);
	expect_quota(&q->quotas[2], 1, CONFIG_NO_FLAVOR, INT64_C(549755813888), CONFIG_UNLIMITED,
	             CONFIG_UNLIMITED);
	assert_int_equal(q->preemption.within_queue, CONFIG_WITHIN_QUEUE_NEVER);
	assert_int_equal(q->preemption.reclaim_within_cohort, CONFIG_RECLAIM_NEVER);
	assert_int_equal(q->preemption.min_runtime_ms, 0);
	assert_true(q->preemption.preemptible);
	assert_int_equal(q->gang_timeout_ms, 5400000);
	assert_int_equal(q->default_runtime_ms, 0);
}

static void check_production(const struct config_cohort *prod)
{
	const struct config_cohort *inf = &prod->cohorts[0];
	const struct config_queue *q = &inf->queues[0];

	assert_string_equal(prod->name, "production");
	assert_int_equal(prod->weight, 1);
	assert_int_equal(prod->n_queues, 0);
	assert_int_equal(prod->n_cohorts, 1);
	assert_string_equal(inf->name, "inference");
	assert_int_equal(inf->weight, 4);
	assert_ptr_equal(inf->parent, prod);
	assert_string_equal(q->name, "serving");
	assert_ptr_equal(q->parent, inf);
	assert_int_equal(q->n_quotas, 1);
	expect_quota(&q->quotas[0], 2, CONFIG_NO_FLAVOR, 64, 0, CONFIG_UNLIMITED);
	assert_int_equal(q->preemption.within_queue,
	                 CONFIG_WITHIN_QUEUE_LOWER_OR_NEWER_EQUAL_PRIORITY);
	assert_int_equal(q->preemption.reclaim_within_cohort, CONFIG_RECLAIM_LOWER_PRIORITY);
	assert_int_equal(q->preemption.min_runtime_ms, 0);
	assert_false(q->preemption.preemptible);
	assert_int_equal(q->gang_timeout_ms, 90000);
}

static void test_example(void **state)
{
	struct config_errors errs;
	struct config *c;

	(void)state;
	config_errors_init(&errs);
	assert_int_equal(config_load(EXAMPLE, &c, &errs), 0);
	assert_int_equal(errs.n, 0);
	check_top(c);
	assert_string_equal(c->cohorts[0].name, "research");
	assert_int_equal(c->cohorts[0].weight, 2);
	assert_null(c->cohorts[0].parent);
	assert_int_equal(c->cohorts[0].n_cohorts, 0);
	assert_int_equal(c->cohorts[0].n_queues, 2);
	check_team_a(&c->cohorts[0]);
	check_team_b(&c->cohorts[0]);
	check_production(&c->cohorts[1]);
	assert_string_equal(c->queues[0].name, "best-effort");
	assert_null(c->queues[0].parent);
	assert_int_equal(c->queues[0].default_runtime_ms, 500);
	assert_int_equal(c->queues[0].gang_timeout_ms, CONFIG_DEFAULT_GANG_TIMEOUT_MS);
	config_free(&c);
	assert_null(c);
}

/* ---- nesting and defaults ---------------------------------------------- */

static const char nested[] = "cohorts:\n"
                             "  - name: a\n"
                             "    cohorts:\n"
                             "      - name: b\n"
                             "        weight: 5\n"
                             "        cohorts:\n"
                             "          - name: c\n"
                             "            queues: [{name: deep, namespaces: [d]}]\n"
                             "        queues: [{name: mid}]\n";

static void test_nested_cohorts(void **state)
{
	const struct config_cohort *a, *b, *cc;
	const struct config_queue *deep;
	struct config *c;

	(void)state;
	assert_int_equal(parse(nested, &c, NULL), 0);
	a = &c->cohorts[0];
	b = &a->cohorts[0];
	cc = &b->cohorts[0];
	assert_string_equal(cc->name, "c");
	assert_int_equal(b->weight, 5);
	assert_ptr_equal(cc->parent, b);
	assert_ptr_equal(b->parent, a);
	assert_null(a->parent);
	deep = config_find_queue(c, "deep");
	assert_non_null(deep);
	assert_ptr_equal(deep->parent, cc);
	assert_ptr_equal(config_find_queue(c, "mid")->parent, b);
	assert_ptr_equal(config_queue_for_namespace(c, "d"), deep);
	assert_int_equal(c->n_all_cohorts, 3);
	assert_int_equal(c->n_all_queues, 2);
	config_free(&c);
}

static void test_defaults(void **state)
{
	const struct config_queue *q;
	struct config *c;

	(void)state;
	assert_int_equal(parse("resources: [cpu]\n"
	                       "queues:\n"
	                       "  - name: q\n"
	                       "    quota: {cpu: {nominal: 2}}\n",
	                       &c, NULL),
	                 0);
	assert_string_equal(c->scheduler_name, "muster");
	assert_null(c->default_queue);
	assert_int_equal(c->n_flavors, 0);
	assert_int_equal(c->topology.levels.n, 0);
	assert_int_equal(c->backfill.reservations, 1);
	q = &c->queues[0];
	assert_int_equal(q->weight, 1);
	assert_int_equal(q->ordering, CONFIG_ORDERING_BEST_EFFORT_FIFO);
	assert_int_equal(q->preemption.within_queue, CONFIG_WITHIN_QUEUE_NEVER);
	assert_int_equal(q->preemption.reclaim_within_cohort, CONFIG_RECLAIM_NEVER);
	assert_int_equal(q->preemption.min_runtime_ms, 0);
	assert_true(q->preemption.preemptible);
	assert_int_equal(q->gang_timeout_ms, 300000);
	assert_int_equal(q->default_runtime_ms, 0);
	assert_int_equal(q->namespaces.n, 0);
	expect_quota(&q->quotas[0], 0, CONFIG_NO_FLAVOR, 2000, CONFIG_UNLIMITED, CONFIG_UNLIMITED);
	config_free(&c);
}

/* Several scheduler names, in the file's order; none by default. */
static void test_scheduler_names(void **state)
{
	struct config *c;

	(void)state;
	assert_int_equal(
	    parse("schedulerNames: [muster, volcano, scheduler-plugins-scheduler]\n", &c, NULL), 0);
	assert_int_equal(c->scheduler_names.n, 3);
	assert_string_equal(c->scheduler_names.v[0], "muster");
	assert_string_equal(c->scheduler_names.v[1], "volcano");
	assert_string_equal(c->scheduler_names.v[2], "scheduler-plugins-scheduler");
	config_free(&c);
	assert_int_equal(parse("resources: [cpu]\n", &c, NULL), 0);
	assert_int_equal(c->scheduler_names.n, 0);
	config_free(&c);
}

/* ---- preemption and backfill keys ---------------------------------------- */

/* Every spelling of a boolean accepted, and a mapping present but empty
 * (or null) keeping the defaults. */
static void test_preemption_keys(void **state)
{
	static const struct {
		const char *text;
		bool want;
	} bools[] = {
	    {"true", true},   {"True", true},   {"TRUE", true},       {"false", false},
	    {"False", false}, {"FALSE", false}, {"\"false\"", false},
	};
	char text[256];
	struct config *c;

	(void)state;
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		snprintf(text, sizeof(text),
		         "queues: [{name: q, preemption: {preemptible: %s, minRuntime: 1h30m}}]\n",
		         bools[i].text);
		if (parse(text, &c, NULL) != 0)
			fail_msg("preemptible: %s rejected", bools[i].text);
		if (c->queues[0].preemption.preemptible != bools[i].want)
			fail_msg("preemptible: %s read as %d", bools[i].text,
			         c->queues[0].preemption.preemptible);
		assert_int_equal(c->queues[0].preemption.min_runtime_ms, 5400000);
		assert_int_equal(c->queues[0].preemption.within_queue, CONFIG_WITHIN_QUEUE_NEVER);
		config_free(&c);
	}
	assert_int_equal(parse("cohorts: [{name: c, queues: [{name: q, preemption: {}}]}]\n"
	                       "queues: [{name: r, preemption: {preemptible: ~}}]\n",
	                       &c, NULL),
	                 0);
	assert_true(config_find_queue(c, "q")->preemption.preemptible);
	assert_true(config_find_queue(c, "r")->preemption.preemptible);
	assert_int_equal(config_find_queue(c, "q")->preemption.min_runtime_ms, 0);
	config_free(&c);
}

static void test_backfill_keys(void **state)
{
	static const struct {
		const char *text;
		int64_t want;
	} rows[] = {
	    {"backfill: {reservations: 0}\n", 0},
	    {"backfill: {reservations: 1}\n", 1},
	    {"backfill: {reservations: 8}\n", 8},
	    {"backfill: {reservations: 1000}\n", 1000},
	    {"backfill: {}\n", 1},
	    {"backfill: {reservations: ~}\n", 1},
	    {"backfill:\n", 1},
	};
	struct config *c;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (parse(rows[i].text, &c, NULL) != 0)
			fail_msg("rejected: %s", rows[i].text);
		if (c->backfill.reservations != rows[i].want)
			fail_msg("%s: reservations %lld, want %lld", rows[i].text,
			         (long long)c->backfill.reservations, (long long)rows[i].want);
		config_free(&c);
	}
}

static void test_fair_sharing_keys(void **state)
{
	static const struct {
		const char *text;
		int64_t want;
	} rows[] = {
	    {"fairSharing: {halfLife: 6h}\n", 6 * 3600 * 1000},
	    {"fairSharing: {halfLife: 1m}\n", 60 * 1000},
	    {"fairSharing: {halfLife: 0}\n", 0},
	    {"fairSharing: {}\n", 0},
	    {"queues: [{name: q}]\n", 0},
	};
	struct config *c;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (parse(rows[i].text, &c, NULL) != 0)
			fail_msg("rejected: %s", rows[i].text);
		if (c->fair_sharing.half_life_ms != rows[i].want)
			fail_msg("%s: halfLife %lld ms, want %lld", rows[i].text,
			         (long long)c->fair_sharing.half_life_ms, (long long)rows[i].want);
		config_free(&c);
	}
}

/* ---- durations --------------------------------------------------------- */

static const struct {
	const char *in;
	int64_t ms; /* -1: rejected */
} durations[] = {
    {"90s", 90000},
    {"10m", 600000},
    {"4h", 14400000},
    {"1h30m", 5400000},
    {"500ms", 500},
    {"0", 0},
    {"1h1m1s1ms", 3661001},
    {"2m500ms", 120500},
    {"10", -1},
    {"1.5h", -1},
    {"-1s", -1},
    {"1d", -1},
    {"1us", -1},
    {"h", -1},
    {"10 m", -1},
    {"\"\"", -1},
    {"9999999999999999h", -1},
};

static void test_durations(void **state)
{
	char text[256];

	(void)state;
	for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
		struct config *c;
		int rc;

		snprintf(text, sizeof(text), "queues: [{name: q, gangTimeout: %s}]\n",
		         durations[i].in);
		rc = parse(text, &c, NULL);
		if (durations[i].ms < 0) {
			if (rc != -EINVAL)
				fail_msg("'%s' gave %d, want -EINVAL", durations[i].in, rc);
			continue;
		}
		if (rc != 0)
			fail_msg("'%s' gave %d, want 0", durations[i].in, rc);
		if (c->queues[0].gang_timeout_ms != durations[i].ms)
			fail_msg("'%s' is %lld ms, want %lld", durations[i].in,
			         (long long)c->queues[0].gang_timeout_ms,
			         (long long)durations[i].ms);
		config_free(&c);
	}
}

/* units_duration_parse(): the file's syntax plus bare seconds, never
 * more than len bytes read. Each input is copied into a buffer of exactly
 * its length, so ASan reports a read past len. */
static const struct {
	const char *in;
	int64_t ms; /* -1: rejected */
} annotation_durations[] = {
    {"90s", 90000},
    {"10m", 600000},
    {"1h30m", 5400000},
    {"500ms", 500},
    {"0", 0},
    {"600", 600000},
    {"0600", 600000},
    {"1", 1000},
    {"9223372036854775", INT64_C(9223372036854775000)},
    {"9223372036854776", -1},    /* seconds * 1000 overflows */
    {"9223372036854775808", -1}, /* overflows as a number */
    {"9223372036854775807ms", INT64_MAX},
    {"9223372036854775808ms", -1},
    {"2562047788015h", INT64_C(9223372036854000000)},
    {"2562047788016h", -1},
    {"", -1},
    {"-1", -1},
    {"-90s", -1},
    {"+600", -1},
    {" 600", -1},
    {"600 ", -1},
    {"1.5h", -1},
    {"1d", -1},
    {"h", -1},
    {"10m5", -1},
    {"5s10", -1},
    {"1us", -1},
    {"0000000000000000000000000000000000000000000000000000000000000001", 1000}, /* 64 bytes */
    {"00000000000000000000000000000000000000000000000000000000000000001", -1},  /* 65 bytes */
};

static void test_duration_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(annotation_durations) / sizeof(annotation_durations[0]);
	     i++) {
		size_t len = strlen(annotation_durations[i].in);
		char *exact = malloc(len ? len : 1);
		int64_t ms = -42;
		int rc;

		assert_non_null(exact);
		memcpy(exact, annotation_durations[i].in, len);
		rc = units_duration_parse(exact, len, &ms);
		free(exact);
		if (annotation_durations[i].ms < 0) {
			if (rc != -EINVAL || ms != -42)
				fail_msg("'%s' gave %d (%lld ms), want -EINVAL and *ms untouched",
				         annotation_durations[i].in, rc, (long long)ms);
			continue;
		}
		if (rc != 0 || ms != annotation_durations[i].ms)
			fail_msg("'%s' gave %d, %lld ms; want %lld ms", annotation_durations[i].in,
			         rc, (long long)ms, (long long)annotation_durations[i].ms);
	}
}

/* len, not a NUL, ends the text; the longest text taken is 64 bytes. */
static void test_duration_parse_len(void **state)
{
	char buf[80];
	int64_t ms = 0;

	(void)state;
	assert_int_equal(units_duration_parse("90sXYZ", 3, &ms), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(units_duration_parse("600junk", 3, &ms), 0);
	assert_int_equal(ms, 600000);
	assert_int_equal(units_duration_parse("10ms", 3, &ms), 0); /* "10m" */
	assert_int_equal(ms, 600000);
	assert_int_equal(units_duration_parse("1h30m", 2, &ms), 0);
	assert_int_equal(ms, 3600000);
	assert_int_equal(units_duration_parse("90s", 0, &ms), -EINVAL);
	assert_int_equal(units_duration_parse(NULL, 0, &ms), -EINVAL);
	assert_int_equal(units_duration_parse("9\0s", 3, &ms), -EINVAL);
	assert_int_equal(units_duration_parse("5\0", 2, &ms), -EINVAL);

	/* 64 bytes (zeros, then "5s") are taken; one byte more is refused. */
	memset(buf, '0', sizeof(buf));
	buf[UNITS_MAX_DURATION_TEXT - 2] = '5';
	buf[UNITS_MAX_DURATION_TEXT - 1] = 's';
	assert_int_equal(units_duration_parse(buf, UNITS_MAX_DURATION_TEXT, &ms), 0);
	assert_int_equal(ms, 5000);
	buf[UNITS_MAX_DURATION_TEXT - 1] = '0';
	buf[UNITS_MAX_DURATION_TEXT] = 's';
	ms = -42;
	assert_int_equal(units_duration_parse(buf, UNITS_MAX_DURATION_TEXT + 1, &ms), -EINVAL);
	assert_int_equal(ms, -42);
}

/* ---- lookups ----------------------------------------------------------- */

static void test_queue_for_namespace(void **state)
{
	struct config *c;

	(void)state;
	assert_int_equal(config_load(EXAMPLE, &c, NULL), 0);
	assert_string_equal(config_queue_for_namespace(c, "team-a-dev")->name, "team-a");
	assert_string_equal(config_queue_for_namespace(c, "team-b")->name, "team-b");
	assert_string_equal(config_queue_for_namespace(c, "serving")->name, "serving");
	assert_string_equal(config_queue_for_namespace(c, "default")->name, "best-effort");
	/* Not listed anywhere: the defaultQueue takes it. */
	assert_string_equal(config_queue_for_namespace(c, "kube-system")->name, "best-effort");
	assert_null(config_find_queue(c, "research")); /* a cohort, not a queue */
	assert_null(config_find_queue(c, "nope"));
	config_free(&c);

	assert_int_equal(parse("queues: [{name: q, namespaces: [a]}]\n", &c, NULL), 0);
	assert_ptr_equal(config_queue_for_namespace(c, "a"), &c->queues[0]);
	assert_null(config_queue_for_namespace(c, "b"));
	config_free(&c);
}

#define TEST(fn) cmocka_unit_test(fn)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_example),
	    TEST(test_nested_cohorts),
	    TEST(test_defaults),
	    TEST(test_scheduler_names),
	    TEST(test_preemption_keys),
	    TEST(test_backfill_keys),
	    TEST(test_fair_sharing_keys),
	    TEST(test_durations),
	    TEST(test_duration_parse),
	    TEST(test_duration_parse_len),
	    TEST(test_queue_for_namespace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
