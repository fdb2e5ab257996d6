/*
 * scheduler/cli and scheduler/debug/page: what `muster status` and
 * `muster explain` print for canned debug API documents (DEBUG.md),
 * compared with the exact text a person sees; documents of the wrong
 * shape, which must print without crashing; the commands against a
 * one-shot fake server (the request they send, the messages for 401, 404,
 * a refused connection and bad usage); and the /debug/ page.
 *
 * The canned documents are written with ' for " so they read as JSON;
 * json() turns them back before parsing (none of their texts has a ').
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "scheduler/cli/cli.h"
#include "scheduler/debug/page.h"

/* ---- Canned documents ----------------------------------------------------- */

/* A root cohort (memory unlimited), cohort research borrowing 8 GPUs for
 * team-a, and queue batch straight under the root, without GPUs. */
static const char queues_doc[] =
    "{'cycle': 42, 'time': '2026-11-21T20:30:00Z',"
    " 'resources': ['cpu', 'memory', 'nvidia.com/gpu'],"
    " 'root': {'name': '', 'kind': 'cohort', 'weight': 1, 'pending': 3, 'admitted': 5,"
    "  'fairShare': 0.5, 'resources': {"
    "   'cpu': {'nominal': 512, 'usage': 96.5, 'borrowed': 0, 'lent': 0},"
    "   'memory': {'nominal': null, 'usage': 824633720832, 'borrowed': 0, 'lent': 0},"
    "   'nvidia.com/gpu': {'nominal': 64, 'usage': 48, 'borrowed': 0, 'lent': 0}},"
    "  'children': ["
    "   {'name': 'research', 'kind': 'cohort', 'weight': 1, 'pending': 2, 'admitted': 3,"
    "    'fairShare': 1.25, 'resources': {"
    "     'cpu': {'nominal': 256, 'usage': 64, 'borrowed': 0, 'lent': 0},"
    "     'memory': {'nominal': 1099511627776, 'usage': 549755813888, 'borrowed': 0},"
    "     'nvidia.com/gpu': {'nominal': 32, 'usage': 40, 'borrowed': 8, 'lent': 0}},"
    "    'children': ["
    "     {'name': 'team-a', 'kind': 'queue', 'weight': 2, 'pending': 1, 'admitted': 2,"
    "      'fairShare': 1.5, 'resources': {"
    "       'cpu': {'nominal': 128, 'borrowingLimit': null, 'lendingLimit': 64,"
    "               'usage': 48, 'borrowed': 0, 'lent': 0},"
    "       'memory': {'nominal': 549755813888, 'borrowingLimit': null,"
    "                  'lendingLimit': null, 'usage': 412316860416, 'borrowed': 0},"
    "       'nvidia.com/gpu': {'nominal': 16, 'borrowingLimit': 8, 'lendingLimit': 0,"
    "                          'usage': 24, 'borrowed': 8, 'lent': 0}},"
    "      'children': []},"
    "     {'name': 'team-b', 'kind': 'queue', 'weight': 1, 'pending': 1, 'admitted': 1,"
    "      'fairShare': 1, 'resources': {"
    "       'cpu': {'nominal': 128, 'usage': 16, 'borrowed': 0, 'lent': 0},"
    "       'memory': {'nominal': 549755813888, 'usage': 137438953472, 'borrowed': 0},"
    "       'nvidia.com/gpu': {'nominal': 16, 'usage': 16, 'borrowed': 0, 'lent': 0}},"
    "      'children': []}]},"
    "   {'name': 'batch', 'kind': 'queue', 'weight': 1, 'pending': 1, 'admitted': 2,"
    "    'fairShare': 0.02, 'resources': {"
    "     'cpu': {'nominal': 0.5, 'usage': 0.25, 'borrowed': 0, 'lent': 0},"
    "     'memory': {'nominal': 1610612736, 'usage': 1000000000, 'borrowed': 0}},"
    "    'children': []}]}}";

/* Three of four gangs: quota-blocked, fit-blocked with a reservation whose
 * start is unknown, incomplete with an expected start. */
static const char gangs_doc[] =
    "{'cycle': 42, 'time': '2026-11-21T20:30:00Z', 'total': 4, 'returned': 3, 'gangs': ["
    " {'namespace': 'a', 'name': 'big', 'kind': 'PodGroup', 'queue': 'team-a',"
    "  'position': 1, 'queuePosition': 1, 'state': 'Waiting', 'reason': 'Quota',"
    "  'message': 'gang a/big: cohort research at 40/32 nvidia.com/gpu; the gang needs 8 more',"
    "  'priority': 0, 'minMember': 3, 'members': 3, 'bound': 0, 'pendingMembers': 3,"
    "  'requests': {'nvidia.com/gpu': 24}, 'created': '2026-11-21T20:24:57Z',"
    "  'waitingSeconds': 303, 'reservation': null, 'expectedStart': null},"
    " {'namespace': 'b', 'name': 'sweep-17', 'kind': 'VolcanoPodGroup', 'queue': 'team-b',"
    "  'position': 2, 'queuePosition': 1, 'state': 'Waiting', 'reason': 'Fit',"
    "  'message': 'gang b/sweep-17: 2 of 4 members fit; 0/16 nodes are available:"
    " 14 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint',"
    "  'priority': 10, 'minMember': 4, 'members': 4, 'bound': 0, 'pendingMembers': 4,"
    "  'requests': {'cpu': 16, 'memory': 68719476736, 'nvidia.com/gpu': 16},"
    "  'created': '2026-11-21T18:25:00Z', 'waitingSeconds': 7500,"
    "  'reservation': {'nodes': ['gpu-0', 'gpu-1']}, 'expectedStart': 'unknown'},"
    " {'namespace': 'c', 'name': 'etl', 'kind': 'Pod', 'queue': 'batch',"
    "  'position': 3, 'queuePosition': 1, 'state': 'Incomplete',"
    "  'reason': 'WaitingForMembers', 'message': 'gang c/etl: 1 of 2 members exist',"
    "  'priority': 0, 'minMember': 2, 'members': 1, 'bound': 1, 'pendingMembers': 0,"
    "  'requests': {'cpu': 0.5, 'memory': 536870912}, 'created': '2026-11-21T20:29:18Z',"
    "  'waitingSeconds': 42, 'reservation': null, 'expectedStart': '2026-11-21T20:40:00Z'}]}";

static const char explain_quota_doc[] =
    "{'cycle': 42, 'time': '2026-11-21T20:30:00Z',"
    " 'gang': {'namespace': 'a', 'name': 'big', 'kind': 'PodGroup', 'queue': 'team-a',"
    "  'position': 1, 'queuePosition': 1, 'state': 'Waiting', 'reason': 'Quota',"
    "  'message': 'gang a/big: cohort research at 16/16 nvidia.com/gpu; the gang needs 8 more',"
    "  'priority': 0, 'minMember': 3, 'members': 3, 'bound': 0, 'pendingMembers': 3,"
    "  'requests': {'cpu': 12, 'memory': 206158430208, 'nvidia.com/gpu': 24},"
    "  'created': '2026-11-21T20:24:57Z', 'waitingSeconds': 303, 'reservation': null,"
    "  'expectedStart': null},"
    " 'blockedBy': {'constraint': 'quota', 'level': 'cohort', 'at': 'research',"
    "  'resource': 'nvidia.com/gpu', 'usage': 16, 'limit': 16, 'need': 8},"
    " 'pods': [{'name': 'big-0', 'node': null, 'phase': 'Pending'},"
    "  {'name': 'big-1', 'node': null, 'phase': 'Pending'},"
    "  {'name': 'big-2', 'node': null, 'phase': 'Pending'}],"
    " 'explain': ['quota: cohort research uses 16 of its 16 nvidia.com/gpu;"
    " the gang needs 8 more'],"
    " 'wouldAdmit': ['8 nvidia.com/gpu freed in cohort research (gangs ending or preempted)',"
    "  'or a larger nominal quota for team-a or research']}";

static const char explain_fit_doc[] =
    "{'cycle': 42, 'time': '2026-11-21T20:30:00Z',"
    " 'gang': {'namespace': 'b', 'name': 'sweep-17', 'kind': 'VolcanoPodGroup',"
    "  'queue': 'team-b', 'position': 2, 'queuePosition': 1, 'state': 'Waiting',"
    "  'reason': 'Fit', 'message': 'gang b/sweep-17: 2 of 4 members fit',"
    "  'priority': 10, 'minMember': 4, 'members': 4, 'bound': 1, 'pendingMembers': 3,"
    "  'requests': {'cpu': 16, 'memory': 68719476736, 'nvidia.com/gpu': 16},"
    "  'created': '2026-11-21T18:25:00Z', 'waitingSeconds': 7500,"
    "  'reservation': {'nodes': ['gpu-0', 'gpu-1']}, 'expectedStart': '2026-11-21T21:15:30Z',"
    "  'expectedStartFrom': 'reservation'},"
    " 'blockedBy': {'constraint': 'fit', 'placed': 2, 'members': 4, 'nodes': 16,"
    "  'shortNodes': 14, 'resource': 'nvidia.com/gpu',"
    "  'rejected': {'Insufficient nvidia.com/gpu': 14, 'untolerated taint': 2}},"
    " 'pods': [{'name': 'sweep-17-0', 'node': 'gpu-3', 'phase': 'Running'},"
    "  {'name': 'sweep-17-1', 'node': null, 'phase': 'Pending'}],"
    " 'explain': ['fit: 2 of 4 members fit; 14 of 16 nodes lack nvidia.com/gpu,"
    " 2 have a taint the pods do not tolerate'],"
    " 'wouldAdmit': ['2 nodes with 8 free nvidia.com/gpu each']}";

/* ---- Helpers ---------------------------------------------------------------- */

/* s with ' for ", parsed; the test fails if it is not JSON. */
static cJSON *json(const char *s)
{
	char *d = strdup(s), *p;
	cJSON *doc;

	assert_non_null(d);
	for (p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	doc = cJSON_Parse(d);
	free(d);
	if (!doc)
		fail_msg("canned document is not JSON: %.60s", s);
	return doc;
}

/* What a formatter wrote, malloc'd; *rc its result. */
struct sink {
	char *text;
	size_t len;
	FILE *f;
};

static FILE *sink_open(struct sink *s)
{
	s->text = NULL;
	s->len = 0;
	s->f = open_memstream(&s->text, &s->len);
	assert_non_null(s->f);
	return s->f;
}

static char *sink_close(struct sink *s)
{
	fclose(s->f);
	return s->text;
}

static char *status_text(const char *queues, const char *gangs, const struct sched_cli_fmt *fmt)
{
	cJSON *q = queues ? json(queues) : NULL, *g = gangs ? json(gangs) : NULL;
	struct sink s;

	assert_int_equal(sched_cli_format_status(sink_open(&s), q, g, fmt), 0);
	cJSON_Delete(q);
	cJSON_Delete(g);
	return sink_close(&s);
}

static char *explain_text(const char *doc)
{
	cJSON *d = doc ? json(doc) : NULL;
	struct sink s;

	assert_int_equal(sched_cli_format_explain(sink_open(&s), d), 0);
	cJSON_Delete(d);
	return sink_close(&s);
}

/* Fails showing both texts unless they are equal. */
static void expect_text(char *got, const char *want)
{
	if (strcmp(got, want) != 0) {
		print_message("--- want:\n%s--- got:\n%s---\n", want, got);
		free(got);
		fail_msg("the text differs");
	}
	free(got);
}

/* ---- Amounts and durations ---------------------------------------------------- */

static void test_amounts(void **state)
{
	static const struct {
		const char *resource;
		double v;
		const char *want;
	} rows[] = {
	    {"cpu", 0.5, "0.5"},
	    {"cpu", 8, "8"},
	    {"cpu", 0.25, "0.25"},
	    {"cpu", 0.1, "0.1"},
	    {"cpu", 1.125, "1.125"},
	    {"cpu", 0, "0"},
	    {"nvidia.com/gpu", 8, "8"},
	    {"nvidia.com/gpu@h100", 16, "16"},
	    {"pods", 110, "110"},
	    {"memory", 68719476736, "64Gi"},
	    {"memory", 1610612736, "1.5Gi"},
	    {"memory", 1342177280, "1280Mi"},
	    {"memory", 1099511627776, "1Ti"},
	    {"memory", 1000000000, "1G"},
	    {"memory", 1500000000, "1.5G"},
	    {"memory", 123456789, "117.7Mi"},
	    {"memory", 512, "512"},
	    {"memory", 0, "0"},
	    {"memory@big", 1073741824, "1Gi"},
	    {"ephemeral-storage", 107374182400, "100Gi"},
	    {"hugepages-2Mi", 2097152, "2Mi"},
	    {NULL, 3, "3"},
	};
	char buf[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		sched_cli_format_amount(buf, sizeof(buf), rows[i].resource, rows[i].v);
		if (strcmp(buf, rows[i].want) != 0)
			fail_msg("%s %.17g: got '%s', want '%s'", rows[i].resource, rows[i].v, buf,
			         rows[i].want);
	}
	/* A short buffer is cut, and still a string. */
	sched_cli_format_amount(buf, 3, "memory", 68719476736);
	assert_string_equal(buf, "64");
}

static void test_durations(void **state)
{
	static const struct {
		double s;
		const char *want;
	} rows[] = {
	    {0, "0s"},       {42, "42s"},      {59.9, "59s"},  {60, "1m0s"},
	    {303, "5m3s"},   {3599, "59m59s"}, {3600, "1h0m"}, {7500, "2h5m"},
	    {86400, "1d0h"}, {93784, "1d2h"},  {-5, "0s"},     {1e300, "11574074d1h"},
	};
	char buf[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		sched_cli_format_duration(buf, sizeof(buf), rows[i].s);
		if (strcmp(buf, rows[i].want) != 0)
			fail_msg("%g s: got '%s', want '%s'", rows[i].s, buf, rows[i].want);
	}
}

/* ---- muster status ---------------------------------------------------------------- */

static const char status_queues_want[] =
    "As of cycle 42, 2026-11-21T20:30:00Z.\n"
    "\n"
    "QUEUE       KIND    PENDING  ADMITTED  cpu       memory       nvidia.com/gpu  BORROWED  "
    "        SHARE\n"
    "(root)      cohort  3        5         96.5/512  768Gi/inf    48/64           -         "
    "        0.50\n"
    "  research  cohort  2        3         64/256    512Gi/1Ti    40/32           8 nvidia.c"
    "om/gpu  1.25\n"
    "    team-a  queue   1        2         48/128    384Gi/512Gi  24/16           8 nvidia.c"
    "om/gpu  1.50\n"
    "    team-b  queue   1        1         16/128    128Gi/512Gi  16/16           -         "
    "        1.00\n"
    "  batch     queue   1        2         0.25/0.5  1G/1.5Gi     -               -         "
    "        0.02\n"
    "\n";

static void test_status(void **state)
{
	const struct sched_cli_fmt wide = {0, NULL, 0};
	char want[4096];

	(void)state;
	snprintf(want, sizeof(want), "%s%s", status_queues_want,
	         "POS  GANG        QUEUE   STATE       REASON             MEMBERS  WAIT  START     "
	         "MESSAGE\n"
	         "1    a/big       team-a  Waiting     Quota              0/3      5m3s  -         "
	         "cohort research at 40/32 nvidia.com/gpu; the gang needs 8 more\n"
	         "2    b/sweep-17  team-b  Waiting     Fit                0/4      2h5m  unknown   "
	         "2 of 4 members fit; 0/16 nodes are available: 14 Insufficient nvidia.com/gpu, 2 "
	         "node(s) had untolerated taint\n"
	         "3    c/etl       batch   Incomplete  WaitingForMembers  1/2      42s   in 10m0s  "
	         "1 of 2 members exist\n"
	         "3 of 4 pending gangs shown.\n");
	expect_text(status_text(queues_doc, gangs_doc, &wide), want);
	/* NULL options are the same as all zero. */
	expect_text(status_text(queues_doc, gangs_doc, NULL), want);
}

/* Cut to 120 columns the message shares the line; at 80 it is too narrow
 * and goes on a line of its own; no line is ever wider. */
static void test_status_width(void **state)
{
	const struct sched_cli_fmt w120 = {120, NULL, 0}, w80 = {80, NULL, 0};
	char *t;
	const char *line;
	size_t n;

	(void)state;
	expect_text(
	    status_text(NULL, gangs_doc, &w120),
	    "As of cycle 42, 2026-11-21T20:30:00Z.\n"
	    "\n"
	    "Queues: ? (the document has no queue tree)\n"
	    "\n"
	    "POS  GANG        QUEUE   STATE       REASON             MEMBERS  WAIT  START     "
	    "MESSAGE\n"
	    "1    a/big       team-a  Waiting     Quota              0/3      5m3s  -         "
	    "cohort research at 40/32 nvidia.com/...\n"
	    "2    b/sweep-17  team-b  Waiting     Fit                0/4      2h5m  unknown   "
	    "2 of 4 members fit; 0/16 nodes are a...\n"
	    "3    c/etl       batch   Incomplete  WaitingForMembers  1/2      42s   in 10m0s  "
	    "1 of 2 members exist\n"
	    "3 of 4 pending gangs shown.\n");
	t = status_text(queues_doc, gangs_doc, &w80);
	assert_non_null(strstr(
	    t,
	    "POS  GANG        QUEUE   STATE       REASON             MEMBERS  WAIT  START\n"
	    "1    a/big       team-a  Waiting     Quota              0/3      5m3s  -\n"
	    "     cohort research at 40/32 nvidia.com/gpu; the gang needs 8 more\n"
	    "2    b/sweep-17  team-b  Waiting     Fit                0/4      2h5m  unknown\n"
	    "     2 of 4 members fit; 0/16 nodes are available: 14 Insufficient nvidia.com...\n"));
	line = strstr(t, "POS");
	for (; *line; line += n + 1) {
		n = strcspn(line, "\n");
		if (n > 80)
			fail_msg("a line of %zu columns at width 80: %.*s", n, (int)n, line);
	}
	free(t);
}

static void test_status_queue_and_limit(void **state)
{
	const struct sched_cli_fmt team_b = {0, "team-b", 0}, one = {0, NULL, 1};
	const struct sched_cli_fmt nobody = {0, "nobody", 0};
	char *t;

	(void)state;
	t = status_text(NULL, gangs_doc, &team_b);
	assert_non_null(strstr(t, "\n2    b/sweep-17  team-b  Waiting  Fit     0/4      2h5m  "));
	assert_null(strstr(t, "a/big"));
	assert_null(strstr(t, "c/etl"));
	free(t);
	t = status_text(NULL, gangs_doc, &one);
	assert_non_null(strstr(t, "a/big"));
	assert_null(strstr(t, "b/sweep-17"));
	assert_non_null(strstr(t, "\n1 of 4 pending gangs shown.\n"));
	free(t);
	t = status_text(NULL, gangs_doc, &nobody);
	assert_non_null(strstr(t, "\nNo pending gangs in queue nobody.\n"));
	assert_null(strstr(t, "shown"));
	free(t);
	expect_text(status_text(NULL, "{'cycle': 7, 'time': 'x', 'total': 0, 'gangs': []}", NULL),
	            "As of cycle 7, x.\n\nQueues: ? (the document has no queue tree)\n\n"
	            "No pending gangs.\n");
}

/* ---- muster explain ------------------------------------------------------------------ */

static void test_explain_quota(void **state)
{
	(void)state;
	expect_text(
	    explain_text(explain_quota_doc),
	    "Gang a/big (PodGroup), as of cycle 42\n"
	    "  queue:          team-a, position 1 (1 in its queue)\n"
	    "  state:          Waiting, reason Quota\n"
	    "  members:        0 bound of minMember 3 (3 exist, 3 pending)\n"
	    "  requests:       12 cpu, 192Gi memory, 24 nvidia.com/gpu\n"
	    "  waiting for:    5m3s (created 2026-11-21T20:24:57Z)\n"
	    "  expected start: not estimated\n"
	    "  reservation:    none\n"
	    "  message:        gang a/big: cohort research at 16/16 nvidia.com/gpu; the gang "
	    "needs 8 more\n"
	    "\n"
	    "Blocked by:\n"
	    "  quota: cohort research uses 16 of its 16 nvidia.com/gpu; the gang needs 8 "
	    "more\n"
	    "\n"
	    "Would let it in:\n"
	    "  8 nvidia.com/gpu freed in cohort research (gangs ending or preempted)\n"
	    "  or a larger nominal quota for team-a or research\n"
	    "\n"
	    "Pods:\n"
	    "  NAME   NODE  PHASE\n"
	    "  big-0  -     Pending\n"
	    "  big-1  -     Pending\n"
	    "  big-2  -     Pending\n");
}

static void test_explain_fit(void **state)
{
	(void)state;
	expect_text(explain_text(explain_fit_doc),
	            "Gang b/sweep-17 (VolcanoPodGroup), as of cycle 42\n"
	            "  queue:          team-b, position 2 (1 in its queue)\n"
	            "  state:          Waiting, reason Fit\n"
	            "  members:        1 bound of minMember 4 (4 exist, 3 pending)\n"
	            "  requests:       16 cpu, 64Gi memory, 16 nvidia.com/gpu\n"
	            "  waiting for:    2h5m (created 2026-11-21T18:25:00Z)\n"
	            "  expected start: 2026-11-21T21:15:30Z (in 45m30s) by its reservation\n"
	            "  reservation:    gpu-0, gpu-1 (2 nodes)\n"
	            "  message:        gang b/sweep-17: 2 of 4 members fit\n"
	            "\n"
	            "Blocked by:\n"
	            "  fit: 2 of 4 members fit; 14 of 16 nodes lack nvidia.com/gpu, 2 have a taint "
	            "the pods do not tolerate\n"
	            "\n"
	            "Would let it in:\n"
	            "  2 nodes with 8 free nvidia.com/gpu each\n"
	            "\n"
	            "Pods:\n"
	            "  NAME        NODE   PHASE\n"
	            "  sweep-17-0  gpu-3  Running\n"
	            "  sweep-17-1  -      Pending\n");
}

/* The gang's fields at the top level instead of under "gang"; an
 * "unknown" start; no explain lines, so the constraint is named. */
static void test_explain_flat_unknown(void **state)
{
	char *t;

	(void)state;
	t = explain_text("{'namespace': 'b', 'name': 'x', 'kind': 'Pod', 'queue': null,"
	                 " 'expectedStart': 'unknown', 'expectedStartFrom': 'forecast',"
	                 " 'reservation': {'nodes': []},"
	                 " 'requests': {}, 'blockedBy': {'constraint': 'topology'}, 'pods': []}");
	assert_non_null(strstr(t, "Gang b/x (Pod)\n  queue:          -, position ?"));
	assert_non_null(strstr(t, "  expected start: unknown (work it waits for has no runtime) "
	                          "by its forecast\n"));
	assert_non_null(strstr(t, "  reservation:    no nodes\n"));
	assert_non_null(strstr(t, "  requests:       none\n"));
	assert_non_null(strstr(t, "\nBlocked by:\n  topology\n"));
	assert_non_null(strstr(t, "\nWould let it in:\n  -\n"));
	assert_non_null(strstr(t, "\nPods:\n  none\n"));
	free(t);
}

/* ---- Malformed documents ---------------------------------------------------------------- */

static void test_malformed_status(void **state)
{
	static const char *const docs[] = {
	    "null",
	    "[]",
	    "{}",
	    "'text'",
	    "{'root': 5, 'resources': 'cpu', 'gangs': {}}",
	    "{'root': [], 'gangs': [[], 1, null, 'x', {}]}",
	    "{'root': {'name': 7, 'children': {'a': {}}}, 'resources': [3, null, 'cpu']}",
	    "{'root': {'name': 'r', 'resources': {'cpu': 1, 'memory': {'usage': 'x',"
	    " 'nominal': {}}}, 'children': [1, {'kind': 3, 'children': [{'children': null}]}]}}",
	    "{'root': {'name': '', 'resources': []}, 'resources': []}",
	    "{'cycle': 'x', 'time': 5, 'total': 'many', 'gangs': [{'namespace': 5, 'name': null,"
	    " 'position': 'one', 'bound': [], 'waitingSeconds': 'long', 'message': 3,"
	    " 'expectedStart': 4, 'queue': {}, 'requests': 1}]}",
	    "{'time': '2026-11-21T20:30:00Z', 'gangs': [{'expectedStart': 'soon',"
	    " 'waitingSeconds': -1e308}, {'expectedStart': '2020-01-01T00:00:00.5Z'}]}",
	};
	const struct sched_cli_fmt opt = {40, NULL, 0};
	size_t i, j;
	char *t;

	(void)state;
	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		for (j = 0; j < sizeof(docs) / sizeof(docs[0]); j++) {
			t = status_text(docs[i], docs[j], &opt);
			assert_non_null(strstr(t, "As of cycle "));
			free(t);
		}
	t = status_text(NULL, NULL, NULL);
	assert_string_equal(t, "As of cycle ?, ?.\n\nQueues: ? (the document has no queue "
	                       "tree)\n\nPending gangs: ? (the document has no list of gangs)\n");
	free(t);
	t = status_text(docs[6], docs[9], NULL);
	assert_non_null(strstr(t, "\nQUEUE  KIND  PENDING  ADMITTED  cpu  BORROWED  SHARE\n"
	                          "?      ?     ?        ?         -    -         ?\n"));
	assert_non_null(strstr(t, "\n?    ?/-   ?      ?      ?       ?/?      ?     ?      ?\n"));
	free(t);
}

static void test_malformed_explain(void **state)
{
	static const char *const docs[] = {
	    "null",
	    "[]",
	    "{}",
	    "7",
	    "{'gang': []}",
	    "{'gang': {}, 'pods': {}, 'explain': {}, 'wouldAdmit': 'x', 'blockedBy': []}",
	    "{'gang': {'requests': [1, 2], 'reservation': {'nodes': {}}, 'message': null},"
	    " 'pods': [null, 3, {'name': 4, 'node': [], 'phase': {}}], 'explain': [1, null, 'ok'],"
	    " 'blockedBy': {'constraint': 5}}",
	    "{'gang': {'requests': {'cpu': 'x', 'memory': null}, 'reservation': {'nodes': [1,"
	    " 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', "
	    "'q']},"
	    " 'expectedStart': '2026-13-45T99:99:99Z', 'waitingSeconds': 1e400}}",
	};
	size_t i;
	char *t;

	(void)state;
	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		t = explain_text(docs[i]);
		assert_non_null(strstr(t, "Gang "));
		assert_non_null(strstr(t, "\nPods:\n"));
		free(t);
	}
	t = explain_text(NULL);
	assert_non_null(
	    strstr(t, "Gang ?/? (?)\n  queue:          ?, position ? (? in its queue)\n"));
	assert_non_null(strstr(t, "\nBlocked by:\n  ?\n"));
	free(t);
	t = explain_text(docs[6]);
	assert_non_null(strstr(t, "  requests:       ?\n"));
	assert_non_null(strstr(t, "  message:        -\n"));
	assert_non_null(strstr(t, "\nBlocked by:\n  ?\n  ?\n  ok\n"));
	assert_non_null(strstr(t, "  ?     ?     ?\n"));
	free(t);
	t = explain_text(docs[7]);
	assert_non_null(strstr(t, "  requests:       ? cpu, inf memory\n"));
	assert_non_null(strstr(t, "  reservation:    ?, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o"
	                          " and 2 more (18 nodes)\n"));
	free(t);
}

/* Text from a document cannot reach the terminal as control sequences. */
static void test_control_characters(void **state)
{
	cJSON *g = cJSON_Parse("{\"gangs\": [{\"namespace\": \"a\\u001b[2J\", \"name\": \"b\","
	                       " \"message\": \"x\\u001b]0;pwned\\u0007\\u0085y\\nz\"}]}");
	struct sink s;
	char *t;

	(void)state;
	assert_non_null(g);
	assert_int_equal(sched_cli_format_status(sink_open(&s), NULL, g, NULL), 0);
	t = sink_close(&s);
	assert_null(strchr(t, '\x1b'));
	assert_null(strchr(t, '\x07'));
	assert_null(strstr(t, "\xc2\x85"));
	assert_non_null(strstr(t, "a [2J/b"));
	assert_non_null(strstr(t, "x ]0;pwned ?y z\n"));
	free(t);
	cJSON_Delete(g);
}

/* ---- The commands, against a one-shot fake server ------------------------------------------ */

#define FAKE_MAX 4

/* Answers each connection with the next canned response and closes it. */
struct fake {
	int fd, port;
	const char *replies[FAKE_MAX];
	char requests[FAKE_MAX][4096];
	int served;
	pthread_t thread;
};

static void read_head(int c, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < size && (r = read(c, buf + n, size - 1 - n)) > 0) {
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[n] = '\0';
}

static void *fake_serve(void *arg)
{
	struct fake *f = arg;
	int c;

	while (f->served < FAKE_MAX && f->replies[f->served]) {
		c = accept(f->fd, NULL, NULL);
		if (c < 0)
			break;
		read_head(c, f->requests[f->served], sizeof(f->requests[0]));
		if (write(c, f->replies[f->served], strlen(f->replies[f->served])) < 0)
			f->served += 0; /* the client gave up; its error is the test's */
		close(c);
		f->served++;
	}
	return NULL;
}

/* A listening socket on 127.0.0.1 and a port; the caller closes it. */
static int listen_local(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void fake_start(struct fake *f)
{
	f->fd = listen_local(&f->port);
	assert_int_equal(pthread_create(&f->thread, NULL, fake_serve, f), 0);
}

/* shutdown() wakes an accept() still waiting for a request never made. */
static void fake_stop(struct fake *f)
{
	shutdown(f->fd, SHUT_RDWR);
	pthread_join(f->thread, NULL);
	close(f->fd);
}

static char *reply(int status, const char *doc)
{
	char *body = strdup(doc), *r, *p;

	assert_non_null(body);
	for (p = body; *p; p++)
		if (*p == '\'')
			*p = '"';
	assert_true(asprintf(&r,
	                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
	                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
	                     status, strlen(body), body) > 0);
	free(body);
	return r;
}

/* stdout and stderr of fn(argv), and its exit status. */
struct run {
	int rc;
	char *out, *err;
};

static char *slurp(FILE *f)
{
	long n;
	char *s;

	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	s = calloc(1, (size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

static struct run run_cli(int (*fn)(int, char **), char **argv)
{
	FILE *out = tmpfile(), *err = tmpfile();
	int argc = 0, saved_out, saved_err;
	struct run r;

	assert_non_null(out);
	assert_non_null(err);
	while (argv[argc])
		argc++;
	fflush(NULL);
	saved_out = dup(1);
	saved_err = dup(2);
	dup2(fileno(out), 1);
	dup2(fileno(err), 2);
	r.rc = fn(argc, argv);
	fflush(NULL);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(saved_out);
	close(saved_err);
	r.out = slurp(out);
	r.err = slurp(err);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static void test_cmd_status(void **state)
{
	struct fake f = {0};
	char addr[64], *argv[] = {"status",  "--addr", addr,     "--queue", "team-a",
	                          "--limit", "5",      "--wide", NULL};
	struct run r;

	(void)state;
	f.replies[0] = reply(200, queues_doc);
	f.replies[1] = reply(200, gangs_doc);
	fake_start(&f);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d/", f.port); /* read as http://, no '/' */
	r = run_cli(sched_cli_status, argv);
	fake_stop(&f);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	assert_non_null(strstr(f.requests[0], "GET /debug/queues HTTP/1.1\r\n"));
	assert_non_null(
	    strstr(f.requests[1], "GET /debug/gangs?limit=5&queue=team-a HTTP/1.1\r\n"));
	assert_null(strstr(f.requests[0], "Authorization"));
	assert_non_null(strstr(r.out, "    team-a  queue   1        2         48/128"));
	assert_non_null(strstr(r.out, "a/big"));
	assert_null(strstr(r.out, "b/sweep-17"));
	run_free(&r);
	free((char *)f.replies[0]);
	free((char *)f.replies[1]);
}

/* --json prints both documents in one, the token file's first line goes
 * out as a bearer token. */
static void test_cmd_status_json_token(void **state)
{
	struct fake f = {0};
	char addr[64], tok[] = "/tmp/muster-test-token-XXXXXX";
	char *argv[] = {"status", "--json", "--addr", addr, "--token-file", tok, NULL};
	struct run r;
	cJSON *doc;
	int fd = mkstemp(tok);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "  s3cret \nsecond line\n", 22), 22);
	close(fd);
	f.replies[0] = reply(200, "{'cycle': 1}");
	f.replies[1] = reply(200, "{'gangs': []}");
	fake_start(&f);
	snprintf(addr, sizeof(addr), "http://127.0.0.1:%d", f.port);
	r = run_cli(sched_cli_status, argv);
	fake_stop(&f);
	unlink(tok);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(f.requests[0], "\r\nAuthorization: Bearer s3cret\r\n"));
	assert_non_null(strstr(f.requests[1], "\r\nAuthorization: Bearer s3cret\r\n"));
	doc = cJSON_Parse(r.out);
	assert_non_null(doc);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "queues"), "cycle")->valueint,
	                 1);
	assert_true(cJSON_IsArray(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "gangs"), "gangs")));
	cJSON_Delete(doc);
	run_free(&r);
	free((char *)f.replies[0]);
	free((char *)f.replies[1]);
}

static void test_cmd_explain(void **state)
{
	struct fake f = {0};
	char addr[64], *argv[] = {"explain", "a/big", "--addr", addr, NULL};
	struct run r;

	(void)state;
	f.replies[0] = reply(200, explain_quota_doc);
	f.replies[1] = reply(404, "{'error': 'no waiting gang of that name'}");
	fake_start(&f);
	snprintf(addr, sizeof(addr), "http://127.0.0.1:%d", f.port);
	r = run_cli(sched_cli_explain, argv);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(f.requests[0], "GET /debug/gangs/a/big HTTP/1.1\r\n"));
	assert_non_null(strstr(r.out, "\nBlocked by:\n  quota: cohort research uses 16"));
	run_free(&r);
	argv[1] = "b/gone"; /* getopt_long has moved the operand to the end */
	argv[2] = "--addr";
	argv[3] = addr;
	r = run_cli(sched_cli_explain, argv);
	fake_stop(&f);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err,
	                    "muster explain: Muster has no waiting gang b/gone (bound, gone, "
	                    "or not Muster's: is its schedulerName \"muster\"?)\n");
	run_free(&r);
	free((char *)f.replies[0]);
	free((char *)f.replies[1]);
}

static void test_cmd_http_errors(void **state)
{
	struct fake f = {0};
	char addr[64], url[64], want[256];
	char *argv[] = {"status", "--addr", addr, NULL};
	struct run r;

	(void)state;
	f.replies[0] = reply(401, "{'error': 'unauthorized'}");
	f.replies[1] = reply(503, "{'error': 'not ready: caches'}");
	f.replies[2] = reply(200, "{'cycle': ");
	fake_start(&f);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", f.port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", f.port);
	r = run_cli(sched_cli_status, argv);
	assert_int_equal(r.rc, 1);
	snprintf(want, sizeof(want),
	         "muster status: the debug API at %s needs a bearer token: --token-file FILE\n",
	         url);
	assert_string_equal(r.err, want);
	run_free(&r);
	r = run_cli(sched_cli_status, argv);
	assert_int_equal(r.rc, 1);
	snprintf(want, sizeof(want),
	         "muster status: GET %s/debug/queues: HTTP 503: not ready: caches\n", url);
	assert_string_equal(r.err, want);
	run_free(&r);
	r = run_cli(sched_cli_status, argv);
	fake_stop(&f);
	assert_int_equal(r.rc, 1);
	snprintf(want, sizeof(want), "muster status: GET %s/debug/queues: the answer is not JSON\n",
	         url);
	assert_string_equal(r.err, want);
	assert_string_equal(r.out, "");
	run_free(&r);
	for (int i = 0; i < 3; i++)
		free((char *)f.replies[i]);
}

static void test_cmd_refused(void **state)
{
	char addr[64], want[256], *argv[] = {"status", "--addr", addr, NULL};
	int port, fd = listen_local(&port);
	struct run r;

	(void)state;
	close(fd); /* nobody listens there now */
	snprintf(addr, sizeof(addr), "http://127.0.0.1:%d", port);
	r = run_cli(sched_cli_status, argv);
	assert_int_equal(r.rc, 1);
	snprintf(want, sizeof(want),
	         "muster status: cannot reach the debug API at %s (is muster run --debug-addr "
	         "set?)\n",
	         addr);
	assert_string_equal(r.err, want);
	run_free(&r);
}

static void test_cmd_usage(void **state)
{
	static const struct {
		int explain;
		const char *args[4];
		int rc;
		const char *err; /* the start of stderr */
	} rows[] = {
	    {0, {"--limit", "0"}, 2, "muster status: --limit wants 1..100000, not '0'\n"},
	    {0, {"--limit", "12x"}, 2, "muster status: --limit wants 1..100000, not '12x'\n"},
	    {0, {"--limit", "100001"}, 2, "muster status: --limit wants 1..100000"},
	    {0, {"extra"}, 2, "muster status: takes no operands\n\nusage: muster status"},
	    {0, {"--bogus"}, 2, "muster status: unrecognized option '--bogus'\nusage:"},
	    {0, {"--addr"}, 2, "muster status: option '--addr' requires an argument\nusage:"},
	    {1, {0}, 2, "muster explain: wants one gang as NS/NAME\n"},
	    {1, {"noslash"}, 2, "muster explain: wants one gang as NS/NAME\n"},
	    {1, {"a/b/c"}, 2, "muster explain: wants one gang as NS/NAME\n"},
	    {1, {"/b"}, 2, "muster explain: wants one gang as NS/NAME\n"},
	    {1, {"a/b", "c/d"}, 2, "muster explain: wants one gang as NS/NAME\n"},
	    {1, {"--queue", "x", "a/b"}, 2, "muster explain: unrecognized option '--queue'\n"},
	    {0, {"--help"}, 0, ""},
	    {1, {"--help", "not/read"}, 0, ""},
	    {0,
	     {"--token-file", "/nonexistent/muster-token"},
	     1,
	     "muster status: cannot read the token file /nonexistent/muster-token: No such file"},
	    {0,
	     {"--token-file", "/dev/null"},
	     1,
	     "muster status: the token file /dev/null is empty\n"},
	};
	size_t i, k;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *argv[8] = {rows[i].explain ? "explain" : "status"};
		struct run r;

		for (k = 0; k < 4 && rows[i].args[k]; k++)
			argv[k + 1] = (char *)rows[i].args[k];
		r = run_cli(rows[i].explain ? sched_cli_explain : sched_cli_status, argv);
		if (r.rc != rows[i].rc || strncmp(r.err, rows[i].err, strlen(rows[i].err)) != 0)
			fail_msg("row %zu: exit %d, stderr:\n%s", i, r.rc, r.err);
		if (rows[i].rc == 0)
			assert_non_null(strstr(r.out, "usage: muster "));
		if (rows[i].rc == 1 && strchr(r.err, '\n') != r.err + strlen(r.err) - 1)
			fail_msg("row %zu: more than one line of stderr:\n%s", i, r.err);
		run_free(&r);
	}
}

/* ---- The /debug/ page --------------------------------------------------------------------- */

static void test_page(void **state)
{
	size_t len = 0;
	const char *page = debug_page_html(&len);

	(void)state;
	assert_non_null(page);
	assert_true(len > 1000);
	assert_int_equal(strlen(page), len);
	assert_ptr_equal(debug_page_html(NULL), page);
	assert_true(strncmp(page, "<!doctype html>", 15) == 0);
	assert_non_null(strstr(page, "class=\"queue\""));
	assert_non_null(strstr(page, "class=\"gang\""));
	assert_non_null(strstr(page, "<span id='cycle'>"));
	assert_non_null(strstr(page, "<span id='status'>"));
	assert_non_null(strstr(page, "get('queues')"));
	assert_non_null(strstr(page, "get('gangs?limit=200')"));
	assert_non_null(strstr(page, "sessionStorage"));
	/* Self-contained: nothing from elsewhere, no way to put data in as HTML. */
	assert_null(strstr(page, "http:"));
	assert_null(strstr(page, "https:"));
	assert_null(strstr(page, "src="));
	assert_null(strstr(page, "<link"));
	assert_null(strstr(page, "@import"));
	assert_null(strstr(page, "innerHTML"));
	assert_null(strstr(page, "outerHTML"));
	assert_null(strstr(page, "document.write"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_amounts),
	    cmocka_unit_test(test_durations),
	    cmocka_unit_test(test_status),
	    cmocka_unit_test(test_status_width),
	    cmocka_unit_test(test_status_queue_and_limit),
	    cmocka_unit_test(test_explain_quota),
	    cmocka_unit_test(test_explain_fit),
	    cmocka_unit_test(test_explain_flat_unknown),
	    cmocka_unit_test(test_malformed_status),
	    cmocka_unit_test(test_malformed_explain),
	    cmocka_unit_test(test_control_characters),
	    cmocka_unit_test(test_cmd_status),
	    cmocka_unit_test(test_cmd_status_json_token),
	    cmocka_unit_test(test_cmd_explain),
	    cmocka_unit_test(test_cmd_http_errors),
	    cmocka_unit_test(test_cmd_refused),
	    cmocka_unit_test(test_cmd_usage),
	    cmocka_unit_test(test_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
