/*
 * policy/plan over time: reservations and backfill as a policy, checked
 * by running text scenarios (test/unit/policy/scenarios/, one .txt file
 * each, and a README) through the simulator `muster simulate` runs
 * (sim/sim.h), with the checks below as its hooks.
 *
 * A scenario, one directive a line, `#` to the end of a line a comment:
 *
 *   nodes N gpus G [racks R]    N nodes of G GPUs (96 CPUs, 1 TiB), named
 *                               n-<rack>-<i>, split evenly over R racks
 *                               (label muster.dev/rack; default 1)
 *   reservations N              the config's `backfill: {reservations: N}`;
 *                               without it the key is left out (default 1)
 *   default-runtime D           the queue's defaultRuntime (D: 600, 600s,
 *                               10m, 1h30m)
 *   tick S                      also plan every S seconds while a gang waits
 *                               (default: only at arrivals and completions)
 *   queues NAME:GPUS ...        in place of the one queue: these (up to 4)
 *                               in one cohort, each with that nominal GPU
 *                               quota; a gang names its own with a last
 *                               `queue NAME` (its label muster.dev/queue)
 *   half-life D                 fairSharing.halfLife: the order remembers
 *   gang NAME at T pods N gpus G runtime R [declared D | declared none |
 *        group-declared D | deadline D] [queue Q]
 *                               a PodGroup NAME (minMember N) and N pods of G
 *                               GPUs (and 1 CPU), created at second T, each
 *                               running R seconds once bound. What the
 *                               planner is told: the pods' annotation
 *                               muster.dev/expected-runtime (`declared`, the
 *                               default, equal to R), the PodGroup's
 *                               (`group-declared`), spec.activeDeadlineSeconds
 *                               (`deadline`: the pod fails at D if R > D),
 *                               or nothing (`declared none`).
 *   expect NAME start T         the gang starts (is bound) at second T
 *   expect NAME promised T      the first start it was promised while
 *                               reserved (plan_gang.expected_start_s) is T,
 *                               or `unknown` (PLAN_NEVER)
 *   expect NAME reserved        it held a reservation in some cycle
 *   expect NAME never-reserved  it never did
 *   expect NAME later-than reservations N
 *                               it starts strictly later than in this same
 *                               scenario run with `reservations N`
 *   Any expectation but later-than may end in `when reservations N`: it is
 *   then about that run of the scenario instead of the scenario's own.
 *
 * The simulation is sim/sim.h's: a virtual clock in whole seconds from
 * 2026-01-01T00:00Z (plan_input.now_s); arrivals, completions and ticks
 * are its events; the binds of a cycle are applied at once and a cycle
 * runs again at the same time until one binds nothing. A gang runs its R
 * seconds from its bind.
 *
 * Checks, for every run of every scenario:
 *   1. the expectations of the file, exactly;
 *   2. the guarantee: a gang that was ever reserved starts no later than
 *      the first start it was promised (skipped, with a note, when some
 *      gang's declared runtime is below its actual one);
 *   3. every gang starts;
 *   4. gangs are bound whole (every member in one cycle, never again),
 *      nodes are never over-committed, no evictions, no promise in the past.
 * A failing run prints its timeline (every run does with MUSTER_SIM_TRACE
 * set in the environment).
 *
 * Scenarios are read from $MUSTER_SCENARIOS, else from SCENARIOS (relative
 * to the top of the tree, where make runs the tests). Arguments name the
 * scenario files to run (basenames); none: all of them.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "queue/queue.h"
#include "policy/plan.h"
#include "sim/sim.h"

#define SCENARIOS "test/unit/policy/scenarios/"

#define EPOCH_S     1767225600 /* 2026-01-01T00:00:00Z: second 0 of a scenario */
#define MAX_GANGS   64
#define MAX_PODS    64
#define MAX_NODES   64
#define MAX_EXPECT  128
#define MAX_RUNS    4
#define MAX_QUEUES  4
#define MAX_TOKENS  24
#define MAX_TIME    (30 * 24 * 3600) /* a scenario's clock stops here */
#define TEXT_CAP    (1 << 20)        /* trace and failure text of one run */
#define RES_DEFAULT -1               /* no `backfill:` key in the config */
#define RES_BASE    -2               /* an expectation about the scenario's own run */
#define NO_TIME     INT64_MIN

/* ---- scenarios --------------------------------------------------------- */

enum declared { DECL_POD, DECL_GROUP, DECL_DEADLINE, DECL_NONE };

struct sgang {
	char name[32];
	int64_t at, runtime; /* arrival, actual runtime (s) */
	int pods, gpus;
	enum declared decl;
	char declared[32];  /* the annotation value as written */
	int64_t declared_s; /* its seconds; 0 for DECL_NONE */
	char queue[24];     /* `queue Q`: its label muster.dev/queue; "" for none */
};

enum expect_kind {
	EXPECT_START,
	EXPECT_PROMISED,
	EXPECT_RESERVED,
	EXPECT_NEVER_RESERVED,
	EXPECT_LATER,
};

struct expect {
	int line, gang;
	enum expect_kind kind;
	int64_t t;
	int run;   /* reservations of the run it is about, or RES_BASE */
	int other; /* EXPECT_LATER: the run compared with */
};

struct scenario {
	char name[64];
	int nodes, gpus, racks;
	int reservations; /* or RES_DEFAULT */
	char default_runtime[32];
	int64_t tick;
	char half_life[32];          /* fairSharing.halfLife, "" for none */
	char queue[MAX_QUEUES][24];  /* `queues`: their names */
	int64_t nominal[MAX_QUEUES]; /* and GPU quotas */
	int nqueues;                 /* 0: the one queue "sim" */
	struct sgang gang[MAX_GANGS];
	int ngangs;
	struct expect expect[MAX_EXPECT];
	int nexpect;
};

/* The parser's state for one line. */
struct line {
	struct scenario *sc;
	int no;
	char *tok[MAX_TOKENS];
	int n;
	char *err;
	size_t errlen;
};

static __attribute__((format(printf, 2, 3))) int bad(struct line *l, const char *fmt, ...)
{
	size_t off = (size_t)snprintf(l->err, l->errlen, "%s:%d: ", l->sc->name, l->no);
	va_list ap;

	va_start(ap, fmt);
	if (off < l->errlen)
		vsnprintf(l->err + off, l->errlen - off, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A non-negative whole number up to max. */
static int number(const char *s, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "600", "600s", "10m", "1h30m" in seconds (> 0). */
static int duration(const char *s, int64_t *out)
{
	int64_t total = 0;

	if (number(s, MAX_TIME, out) == 0)
		return *out > 0 ? 0 : -EINVAL;
	while (*s) {
		char *end;
		long long v;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = strtoll(s, &end, 10);
		if (v > MAX_TIME || (*end != 's' && *end != 'm' && *end != 'h'))
			return -EINVAL;
		total += v * (*end == 'h' ? 3600 : *end == 'm' ? 60 : 1);
		if (total > MAX_TIME)
			return -EINVAL;
		s = end + 1;
	}
	*out = total;
	return total > 0 ? 0 : -EINVAL;
}

/* Token i as a number (what names it, for the message). */
static int num_at(struct line *l, int i, const char *what, int64_t max, int64_t *out)
{
	if (i >= l->n)
		return bad(l, "%s: missing", what);
	if (number(l->tok[i], max, out) < 0)
		return bad(l, "%s: expected a whole number up to %" PRId64 ", got '%s'", what, max,
		           l->tok[i]);
	return 0;
}

/* Token i must be word. */
static int word_at(struct line *l, int i, const char *word)
{
	if (i >= l->n)
		return bad(l, "expected '%s' after '%s'", word, l->tok[i - 1]);
	if (strcmp(l->tok[i], word) != 0)
		return bad(l, "expected '%s', got '%s'", word, l->tok[i]);
	return 0;
}

static int gang_index(const struct scenario *sc, const char *name)
{
	for (int k = 0; k < sc->ngangs; k++)
		if (strcmp(sc->gang[k].name, name) == 0)
			return k;
	return -1;
}

/* nodes N gpus G [racks R] */
static int d_nodes(struct line *l)
{
	struct scenario *sc = l->sc;
	int64_t n, g, r = 1;
	int rc;

	if ((rc = num_at(l, 1, "nodes", MAX_NODES, &n)) < 0 || (rc = word_at(l, 2, "gpus")) < 0 ||
	    (rc = num_at(l, 3, "gpus", 1024, &g)) < 0)
		return rc;
	if (l->n > 4 &&
	    ((rc = word_at(l, 4, "racks")) < 0 || (rc = num_at(l, 5, "racks", n, &r)) < 0))
		return rc;
	if (l->n > 6 || (l->n > 4 && l->n != 6))
		return bad(l, "usage: nodes N gpus G [racks R]");
	if (n < 1 || r < 1 || n % r != 0)
		return bad(l, "%" PRId64 " nodes do not split evenly into %" PRId64 " racks", n, r);
	if (sc->nodes)
		return bad(l, "nodes given twice");
	sc->nodes = (int)n;
	sc->gpus = (int)g;
	sc->racks = (int)r;
	return 0;
}

static int d_reservations(struct line *l)
{
	int64_t v;
	int rc;

	if (l->n != 2)
		return bad(l, "usage: reservations N");
	if ((rc = num_at(l, 1, "reservations", 100, &v)) < 0)
		return rc;
	l->sc->reservations = (int)v;
	return 0;
}

static int d_default_runtime(struct line *l)
{
	int64_t v;

	if (l->n != 2)
		return bad(l, "usage: default-runtime D");
	if (duration(l->tok[1], &v) < 0 || strlen(l->tok[1]) >= sizeof(l->sc->default_runtime))
		return bad(l, "default-runtime: not a duration: '%s'", l->tok[1]);
	snprintf(l->sc->default_runtime, sizeof(l->sc->default_runtime), "%s", l->tok[1]);
	return 0;
}

static int d_tick(struct line *l)
{
	if (l->n != 2)
		return bad(l, "usage: tick S");
	return num_at(l, 1, "tick", 3600, &l->sc->tick);
}

/* queues NAME:GPUS ... : one cohort of these queues, each with that
 * nominal GPU quota (and CPU and memory nobody reaches). */
static int d_queues(struct line *l)
{
	struct scenario *sc = l->sc;

	if (l->n < 2 || l->n > 1 + MAX_QUEUES)
		return bad(l, "usage: queues NAME:GPUS ... (1 to %d)", MAX_QUEUES);
	if (sc->nqueues)
		return bad(l, "queues given twice");
	for (int k = 1; k < l->n; k++) {
		char *colon = strchr(l->tok[k], ':');

		if (!colon || colon == l->tok[k] || colon - l->tok[k] >= 24 ||
		    strspn(l->tok[k], "abcdefghijklmnopqrstuvwxyz0123456789-") !=
		        (size_t)(colon - l->tok[k]) ||
		    number(colon + 1, 100000, &sc->nominal[sc->nqueues]) < 0)
			return bad(l, "queue '%s': NAME:GPUS, the name of [a-z0-9-]", l->tok[k]);
		*colon = 0;
		snprintf(sc->queue[sc->nqueues++], sizeof(sc->queue[0]), "%s", l->tok[k]);
	}
	return 0;
}

static int d_half_life(struct line *l)
{
	int64_t v;

	if (l->n != 2)
		return bad(l, "usage: half-life D");
	if (duration(l->tok[1], &v) < 0 || strlen(l->tok[1]) >= sizeof(l->sc->half_life))
		return bad(l, "half-life: not a duration: '%s'", l->tok[1]);
	snprintf(l->sc->half_life, sizeof(l->sc->half_life), "%s", l->tok[1]);
	return 0;
}

/* A gang line's last two words `queue Q`, if there: taken off the line. */
static int gang_queue(struct line *l, struct sgang *g)
{
	const struct scenario *sc = l->sc;
	int k;

	if (l->n < 12 || strcmp(l->tok[l->n - 2], "queue") != 0)
		return 0;
	for (k = 0; k < sc->nqueues && strcmp(sc->queue[k], l->tok[l->n - 1]) != 0; k++)
		;
	if (k == sc->nqueues)
		return bad(l, "queue %s: not one of the `queues` line before", l->tok[l->n - 1]);
	snprintf(g->queue, sizeof(g->queue), "%s", l->tok[l->n - 1]);
	l->n -= 2;
	return 0;
}

/* The optional tail of a gang line: what the planner is told. */
static int gang_declared(struct line *l, struct sgang *g)
{
	static const char *const words[] = {"declared", "group-declared", "deadline"};
	int k;

	g->decl = DECL_POD;
	g->declared_s = g->runtime;
	snprintf(g->declared, sizeof(g->declared), "%" PRId64, g->runtime);
	if (l->n == 10)
		return 0;
	for (k = 0; k < 3 && strcmp(l->tok[10], words[k]) != 0; k++)
		;
	if (l->n != 12 || k == 3)
		return bad(l, "after the runtime: declared D, declared none, group-declared D or "
		              "deadline D");
	g->decl = k == 0 ? DECL_POD : k == 1 ? DECL_GROUP : DECL_DEADLINE;
	if (k == 0 && strcmp(l->tok[11], "none") == 0) {
		g->decl = DECL_NONE;
		g->declared_s = 0;
		g->declared[0] = 0;
		return 0;
	}
	if (duration(l->tok[11], &g->declared_s) < 0 || strlen(l->tok[11]) >= sizeof(g->declared))
		return bad(l, "%s: not a duration: '%s'", l->tok[10], l->tok[11]);
	if (g->decl == DECL_DEADLINE && number(l->tok[11], MAX_TIME, &g->declared_s) < 0)
		return bad(l, "deadline: seconds, without a unit: '%s'", l->tok[11]);
	snprintf(g->declared, sizeof(g->declared), "%s", l->tok[11]);
	return 0;
}

/* gang NAME at T pods N gpus G runtime R [...] */
static int d_gang(struct line *l)
{
	struct scenario *sc = l->sc;
	struct sgang *g = &sc->gang[sc->ngangs];
	int64_t v;
	int rc;

	if (l->n < 10)
		return bad(l, "usage: gang NAME at T pods N gpus G runtime R [declared D]");
	if (sc->ngangs == MAX_GANGS)
		return bad(l, "more than %d gangs", MAX_GANGS);
	if (strlen(l->tok[1]) >= 24 ||
	    strspn(l->tok[1], "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(l->tok[1]))
		return bad(l, "gang name '%s': up to 23 of [a-z0-9]", l->tok[1]);
	if (gang_index(sc, l->tok[1]) >= 0)
		return bad(l, "gang %s defined twice", l->tok[1]);
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", l->tok[1]);
	if ((rc = gang_queue(l, g)) < 0)
		return rc;
	if ((rc = word_at(l, 2, "at")) < 0 || (rc = num_at(l, 3, "at", MAX_TIME, &g->at)) < 0 ||
	    (rc = word_at(l, 4, "pods")) < 0 || (rc = num_at(l, 5, "pods", MAX_PODS, &v)) < 0)
		return rc;
	g->pods = (int)v;
	if ((rc = word_at(l, 6, "gpus")) < 0 || (rc = num_at(l, 7, "gpus", 1024, &v)) < 0)
		return rc;
	g->gpus = (int)v;
	if ((rc = word_at(l, 8, "runtime")) < 0 || duration(l->tok[9], &g->runtime) < 0)
		return rc < 0 ? rc : bad(l, "runtime: not a duration: '%s'", l->tok[9]);
	if (g->pods < 1)
		return bad(l, "gang %s: no pods", g->name);
	if (!sc->nodes)
		return bad(l, "gang before nodes");
	if (g->gpus > sc->gpus || (int64_t)g->pods * g->gpus > (int64_t)sc->nodes * sc->gpus)
		return bad(l, "gang %s can never fit %d nodes of %d GPUs", g->name, sc->nodes,
		           sc->gpus);
	if ((rc = gang_declared(l, g)) < 0)
		return rc;
	sc->ngangs++;
	return 0;
}

/* [when reservations N] from token i: the run an expectation is about. */
static int expect_run(struct line *l, int i, struct expect *e)
{
	int64_t v;
	int rc;

	e->run = RES_BASE;
	if (l->n == i)
		return 0;
	if (l->n != i + 3 || strcmp(l->tok[i], "when") != 0)
		return bad(l, "after the expectation: nothing, or 'when reservations N'");
	if ((rc = word_at(l, i + 1, "reservations")) < 0 ||
	    (rc = num_at(l, i + 2, "reservations", 100, &v)) < 0)
		return rc;
	e->run = (int)v;
	return 0;
}

/* expect NAME what ... */
static int d_expect(struct line *l)
{
	static const char *const what[] = {"start", "promised", "reserved", "never-reserved",
	                                   "later-than"};
	struct scenario *sc = l->sc;
	struct expect *e = &sc->expect[sc->nexpect];
	int k, rc;
	int64_t v;

	if (l->n < 3)
		return bad(l, "usage: expect NAME start T | promised T | reserved | never-reserved "
		              "| later-than reservations N");
	if (sc->nexpect == MAX_EXPECT)
		return bad(l, "more than %d expectations", MAX_EXPECT);
	memset(e, 0, sizeof(*e));
	e->line = l->no;
	if ((e->gang = gang_index(sc, l->tok[1])) < 0)
		return bad(l, "no gang %s (a gang is defined before what is expected of it)",
		           l->tok[1]);
	for (k = 0; k < 5 && strcmp(l->tok[2], what[k]) != 0; k++)
		;
	if (k == 5)
		return bad(l,
		           "expect: unknown '%s'; expected start, promised, reserved, "
		           "never-reserved or later-than",
		           l->tok[2]);
	e->kind = (enum expect_kind)k;
	if (e->kind == EXPECT_LATER) {
		if (l->n != 5)
			return bad(l, "usage: expect NAME later-than reservations N");
		if ((rc = word_at(l, 3, "reservations")) < 0 ||
		    (rc = num_at(l, 4, "reservations", 100, &v)) < 0)
			return rc;
		e->run = RES_BASE;
		e->other = (int)v;
	} else if (e->kind == EXPECT_PROMISED && l->n > 3 && strcmp(l->tok[3], "unknown") == 0) {
		e->t = PLAN_NEVER;
		if ((rc = expect_run(l, 4, e)) < 0)
			return rc;
	} else if (e->kind == EXPECT_START || e->kind == EXPECT_PROMISED) {
		if ((rc = num_at(l, 3, what[k], MAX_TIME, &e->t)) < 0 ||
		    (rc = expect_run(l, 4, e)) < 0)
			return rc;
	} else if ((rc = expect_run(l, 3, e)) < 0) {
		return rc;
	}
	sc->nexpect++;
	return 0;
}

static const struct directive {
	const char *name;
	int (*fn)(struct line *);
} directives[] = {
    {"nodes", d_nodes},
    {"reservations", d_reservations},
    {"default-runtime", d_default_runtime},
    {"tick", d_tick},
    {"queues", d_queues},
    {"half-life", d_half_life},
    {"gang", d_gang},
    {"expect", d_expect},
};

static int parse_line(struct line *l, char *text)
{
	char *save = NULL, *t, *hash = strchr(text, '#');

	if (hash)
		*hash = 0;
	l->n = 0;
	for (t = strtok_r(text, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (l->n == MAX_TOKENS)
			return bad(l, "more than %d words", MAX_TOKENS);
		l->tok[l->n++] = t;
	}
	if (l->n == 0)
		return 0;
	for (size_t k = 0; k < sizeof(directives) / sizeof(directives[0]); k++)
		if (strcmp(l->tok[0], directives[k].name) == 0)
			return directives[k].fn(l);
	return bad(l, "unknown directive '%s'", l->tok[0]);
}

/* Parse text (NUL-terminated, modified) of the scenario called name into
 * sc. 0, or -EINVAL with "NAME:LINE: what" in err. */
static int scenario_parse(const char *name, char *text, struct scenario *sc, char *err,
                          size_t errlen)
{
	struct line l = {.sc = sc, .err = err, .errlen = errlen};
	char *next;
	int rc;

	memset(sc, 0, sizeof(*sc));
	snprintf(sc->name, sizeof(sc->name), "%s", name);
	sc->reservations = RES_DEFAULT;
	for (char *p = text; p; p = next) {
		next = strchr(p, '\n');
		if (next)
			*next++ = 0;
		l.no++;
		if ((rc = parse_line(&l, p)) < 0)
			return rc;
	}
	if (!sc->nodes || !sc->ngangs) {
		snprintf(err, errlen, "%s: no %s", name, !sc->nodes ? "nodes" : "gangs");
		return -EINVAL;
	}
	return 0;
}

/* ---- text buffers ------------------------------------------------------- */

/* Text that grows up to TEXT_CAP, then only counts what it dropped. */
struct text {
	char *buf;
	size_t len, cap, dropped;
};

static __attribute__((format(printf, 2, 3))) void text_add(struct text *t, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (t->len + (size_t)n + 1 > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 4096;
		char *b;

		while (cap < t->len + (size_t)n + 1)
			cap *= 2;
		if (cap > TEXT_CAP || !(b = realloc(t->buf, cap))) {
			t->dropped += (size_t)n;
			return;
		}
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, line, (size_t)n + 1);
	t->len += (size_t)n;
}

static void text_free(struct text *t)
{
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

/* ---- the simulation ----------------------------------------------------- */

struct gstate {
	uint32_t name;          /* interned PodGroup name */
	uint32_t pod[MAX_PODS]; /* interned pod names */
	int node[MAX_PODS];     /* index into sim.node, -1 while pending */
	int64_t start, end;     /* NO_TIME until bound */
	int64_t promise;        /* first expected start while reserved, or NO_TIME */
	int64_t promised_at;    /* when it was first given */
	int64_t last_promise;
	int reserved_cycles;
	/* The last start the forecast gave it while waiting (not reserved),
	 * and when: NO_TIME none. */
	int64_t forecast, forecast_at;
	int arrived, finished;
};

/* One run of a scenario (with one reservations setting): what happened. */
struct run {
	int reservations; /* or RES_DEFAULT */
	/* plan_input.forecast_every_s (0: a forecast every cycle), and the
	 * starts cycles between forecasts carried, each checked against the
	 * last forecast's. */
	int64_t forecast_every;
	int carried;
	int simulated; /* the run went (its configuration was accepted) */
	int failed;    /* a check of the simulation failed */
	int missed;    /* an expectation of the file failed */
	struct gstate g[MAX_GANGS];
	struct text trace, fails;
};

/* A run of a scenario through the simulator (sim/sim.h): the scenario
 * as its nodes and gangs, and what the hooks saw. */
struct sim {
	const struct scenario *sc;
	struct run *run;
	struct config *cfg;
	struct sim_node node[MAX_NODES];
	char node_name[MAX_NODES][32], rack[MAX_NODES][16];
	struct sim_gang gang[MAX_GANGS];
	int64_t now;
};

static __attribute__((format(printf, 2, 3))) void sim_fail(struct sim *m, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	m->run->failed = 1;
	text_add(&m->run->fails, "  t=%" PRId64 ": %s\n", m->now, msg);
	text_add(&m->run->trace, "    !! %s\n", msg);
}

/* The configuration: one queue that every gang fits the quota of, or the
 * scenario's queues in one cohort. */
#define YAML_HEAD                                                                                  \
	"resources: [cpu, memory, nvidia.com/gpu]\n"                                               \
	"topology:\n"                                                                              \
	"  levels: [muster.dev/rack, kubernetes.io/hostname]\n"
#define YAML_QUEUE                                                                                 \
	"  - name: %s\n"                                                                           \
	"    namespaces: [%s]\n"                                                                   \
	"    quota: {nvidia.com/gpu: {nominal: %" PRId64 "}, cpu: {nominal: 100000}, "             \
	"memory: {nominal: 1Pi}}\n"                                                                \
	"%s%s%s"

static void sim_queues(const struct scenario *sc, struct text *y)
{
	const char *rt = sc->default_runtime;

	if (!sc->nqueues) {
		text_add(y, "queues:\n" YAML_QUEUE, "sim", SIM_NAMESPACE, (int64_t)100000,
		         rt[0] ? "    defaultRuntime: " : "", rt, rt[0] ? "\n" : "");
		return;
	}
	/* The queues are reached by their label; the namespace goes to the
	 * first. */
	text_add(y, "cohorts:\n- name: lab\n  queues:\n");
	for (int k = 0; k < sc->nqueues; k++) {
		char ns[40];

		snprintf(ns, sizeof(ns), "%s%s", k ? "unused-" : SIM_NAMESPACE,
		         k ? sc->queue[k] : "");
		text_add(y, YAML_QUEUE, sc->queue[k], ns, sc->nominal[k],
		         rt[0] ? "    defaultRuntime: " : "", rt, rt[0] ? "\n" : "");
	}
}

static int sim_config(struct sim *m)
{
	const struct scenario *sc = m->sc;
	struct text y = {0};
	struct config_errors errs;
	int rc;

	text_add(&y, YAML_HEAD);
	if (m->run->reservations != RES_DEFAULT)
		text_add(&y, "backfill: {reservations: %d}\n", m->run->reservations);
	if (sc->half_life[0])
		text_add(&y, "fairSharing: {halfLife: %s}\n", sc->half_life);
	sim_queues(sc, &y);
	config_errors_init(&errs);
	rc = y.buf && !y.dropped ? config_parse("sim.yaml", y.buf, y.len, &m->cfg, &errs) : -ENOMEM;
	if (rc < 0) {
		for (size_t k = 0; k < errs.n; k++)
			sim_fail(m, "config: %s", errs.v[k].msg);
		sim_fail(m, "the configuration was refused (%d)", rc);
	}
	config_errors_clear(&errs);
	free(y.buf);
	return rc;
}

static void sim_nodes(struct sim *m)
{
	const struct scenario *sc = m->sc;
	int per_rack = sc->nodes / sc->racks;

	for (int k = 0; k < sc->nodes; k++) {
		snprintf(m->node_name[k], sizeof(m->node_name[k]), "n-%d-%d", k / per_rack,
		         k % per_rack);
		snprintf(m->rack[k], sizeof(m->rack[k]), "r%d", k / per_rack);
		m->node[k] = (struct sim_node){m->node_name[k], m->rack[k], sc->gpus};
	}
}

/* The scenario's gangs as the simulator takes them. */
static void sim_gangs(struct sim *m)
{
	static const enum sim_declared as[] = {
	    [DECL_POD] = SIM_DECLARED_POD,
	    [DECL_GROUP] = SIM_DECLARED_GROUP,
	    [DECL_DEADLINE] = SIM_DECLARED_DEADLINE,
	    [DECL_NONE] = SIM_DECLARED_NONE,
	};

	for (int k = 0; k < m->sc->ngangs; k++) {
		const struct sgang *sg = &m->sc->gang[k];

		m->gang[k] = (struct sim_gang){
		    .name = sg->name,
		    .queue = sg->queue[0] ? sg->queue : NULL,
		    .at_s = sg->at,
		    .pods = (uint32_t)sg->pods,
		    .gpus = sg->gpus,
		    .runtime_s = sg->runtime,
		    .declared = as[sg->decl],
		    .declared_value = sg->declared,
		    .deadline_s = sg->decl == DECL_DEADLINE ? sg->declared_s : 0,
		};
	}
}

static int sim_init(struct sim *m, const struct scenario *sc, struct run *run)
{
	memset(m, 0, sizeof(*m));
	m->sc = sc;
	m->run = run;
	for (int k = 0; k < sc->ngangs; k++) {
		struct gstate *g = &run->g[k];

		memset(g, 0, sizeof(*g));
		g->start = g->end = g->promise = g->last_promise = NO_TIME;
		g->forecast = g->forecast_at = NO_TIME;
	}
	if (sim_config(m) < 0)
		return -EINVAL;
	sim_nodes(m);
	sim_gangs(m);
	return 0;
}

static void sim_free(struct sim *m)
{
	config_free(&m->cfg);
}

/* Past a deadline shorter than its run, a pod is killed: Failed then. */
static int killed(const struct sgang *sg)
{
	return sg->decl == DECL_DEADLINE && sg->declared_s < sg->runtime;
}

/* ---- the simulator's hooks ----------------------------------------------- */

static void on_arrived(void *data, int64_t now, size_t k)
{
	struct sim *m = data;
	const struct sgang *sg = &m->sc->gang[k];

	m->now = now;
	m->run->g[k].arrived = 1;
	text_add(&m->run->trace,
	         "  t=%" PRId64 ": %s arrives (%d x %d GPUs, runtime %" PRId64 ", declared %s%s)\n",
	         m->now, sg->name, sg->pods, sg->gpus, sg->runtime,
	         sg->decl == DECL_NONE ? "none" : sg->declared,
	         sg->decl == DECL_GROUP      ? " on the PodGroup"
	         : sg->decl == DECL_DEADLINE ? " as deadline"
	                                     : "");
}

static void on_started(void *data, int64_t now, size_t k, const uint32_t *node)
{
	struct sim *m = data;
	const struct sgang *sg = &m->sc->gang[k];
	struct gstate *g = &m->run->g[k];
	char where[512] = "";
	size_t len = 0;

	m->now = now;
	g->start = now;
	g->end = now + (killed(sg) ? sg->declared_s : sg->runtime);
	for (int p = 0; p < sg->pods && len < sizeof(where); p++)
		len += (size_t)snprintf(where + len, sizeof(where) - len, " %s",
		                        node[p] < (uint32_t)m->sc->nodes ? m->node_name[node[p]]
		                                                         : "?");
	text_add(&m->run->trace, "    %s starts on%s\n", sg->name, where);
}

static void on_ended(void *data, int64_t now, size_t k, bool failed)
{
	struct sim *m = data;

	m->now = now;
	m->run->g[k].finished = 1;
	text_add(&m->run->trace, "  t=%" PRId64 ": %s %s\n", m->now, m->sc->gang[k].name,
	         failed ? "fails at its deadline" : "ends");
}

static void on_violation(void *data, int64_t now, const char *what)
{
	struct sim *m = data;

	m->now = now;
	sim_fail(m, "%s", what);
}

/* Gang k's expected start from the forecast: one the cycle worked out,
 * recorded; one it carried from the last forecast, the same as that. */
static void observe_forecast(struct sim *m, const struct plan_memory *keep, int k,
                             const struct plan_gang *pg)
{
	struct gstate *g = &m->run->g[k];
	int64_t at =
	    pg->expected_start_s == PLAN_NEVER ? PLAN_NEVER : pg->expected_start_s - EPOCH_S;

	if (keep->forecast.last_s != EPOCH_S + m->now) {
		m->run->carried++;
		if (at != g->forecast)
			sim_fail(m, "%s carried a start of %" PRId64 ", the forecast said %" PRId64,
			         m->sc->gang[k].name, at, g->forecast);
		return;
	}
	g->forecast = at;
	g->forecast_at = m->now;
	if (at < m->now)
		sim_fail(m, "%s forecast to start in the past: %" PRId64, m->sc->gang[k].name, at);
}

/* What a cycle says of gangs that wait: promises and reasons. */
static void on_cycled(void *data, int64_t now, uint64_t cycle, const struct plan *pl,
                      const struct plan_memory *keep, const long *gang)
{
	struct sim *m = data;

	m->now = now;
	text_add(&m->run->trace, "  t=%" PRId64 ": cycle %" PRIu64 "\n", m->now, cycle);
	for (size_t i = 0; i < pl->ngangs; i++) {
		const struct plan_gang *pg = &pl->gangs[i];
		int k = (int)gang[i];
		struct gstate *g;
		int64_t at;

		if (k < 0) {
			sim_fail(m, "the plan has a gang the scenario does not");
			continue;
		}
		g = &m->run->g[k];
		if (pg->state == PLAN_WAITING && !pg->reserved)
			text_add(&m->run->trace, "    %s waits: %s\n", m->sc->gang[k].name,
			         pg->message ? pg->message : "(no message)");
		if (pg->state == PLAN_WAITING && pg->forecast)
			observe_forecast(m, keep, k, pg);
		if (!pg->reserved)
			continue;
		at = pg->expected_start_s == PLAN_NEVER ? PLAN_NEVER
		                                        : pg->expected_start_s - EPOCH_S;
		if (at == PLAN_NEVER)
			text_add(&m->run->trace, "    %s reserved, start unknown\n",
			         m->sc->gang[k].name);
		else
			text_add(&m->run->trace, "    %s reserved, start %" PRId64 "\n",
			         m->sc->gang[k].name, at);
		if (pg->state != PLAN_WAITING)
			sim_fail(m, "%s is reserved in state %d, not waiting", m->sc->gang[k].name,
			         pg->state);
		if (at < m->now)
			sim_fail(m, "%s promised a start in the past: %" PRId64,
			         m->sc->gang[k].name, at);
		if (g->promise == NO_TIME) {
			g->promise = at;
			g->promised_at = m->now;
		}
		g->last_promise = at;
		g->reserved_cycles++;
	}
}

/* Does some gang run longer than the planner was told? */
static int underestimated(const struct scenario *sc)
{
	for (int k = 0; k < sc->ngangs; k++)
		if (sc->gang[k].decl != DECL_NONE && sc->gang[k].declared_s < sc->gang[k].runtime &&
		    !killed(&sc->gang[k]))
			return 1;
	return 0;
}

/* Does every gang run exactly as long as the planner was told? */
static int exact(const struct scenario *sc)
{
	for (int k = 0; k < sc->ngangs; k++)
		if (sc->gang[k].decl == DECL_NONE ||
		    (sc->gang[k].declared_s != sc->gang[k].runtime && !killed(&sc->gang[k])))
			return 0;
	return 1;
}

/* The last arrival's time. */
static int64_t last_arrival(const struct scenario *sc)
{
	int64_t t = 0;

	for (int k = 0; k < sc->ngangs; k++)
		t = sc->gang[k].at > t ? sc->gang[k].at : t;
	return t;
}

/* Check 5: a forecast given once nothing more arrives is kept when no
 * runtime is under-estimated (the gang starts no later), and met to the
 * second when every runtime is exact. */
static void check_forecast(struct sim *m, int k)
{
	const struct scenario *sc = m->sc;
	const struct gstate *g = &m->run->g[k];

	if (g->forecast == NO_TIME || g->forecast == PLAN_NEVER ||
	    g->forecast_at < last_arrival(sc) || underestimated(sc))
		return;
	if (g->start > g->forecast)
		sim_fail(m,
		         "%s starts at %" PRId64 ", after the %" PRId64 " forecast at t=%" PRId64,
		         sc->gang[k].name, g->start, g->forecast, g->forecast_at);
	if (exact(sc) && g->start < g->forecast)
		sim_fail(m,
		         "%s starts at %" PRId64 ", before the %" PRId64 " forecast at t=%" PRId64
		         " (runtimes exact)",
		         sc->gang[k].name, g->start, g->forecast, g->forecast_at);
}

/* Checks 2, 3 and 5 once the clock has run out. */
static void sim_finish(struct sim *m)
{
	const struct scenario *sc = m->sc;

	for (int k = 0; k < sc->ngangs; k++) {
		const struct gstate *g = &m->run->g[k];

		if (g->start == NO_TIME) {
			sim_fail(m, "%s never starts", sc->gang[k].name);
			continue;
		}
		check_forecast(m, k);
		if (g->promise == NO_TIME || g->promise == PLAN_NEVER || underestimated(sc))
			continue;
		if (g->start > g->promise)
			sim_fail(m,
			         "%s starts at %" PRId64 ", after the %" PRId64
			         " it was first promised (at t=%" PRId64 ")",
			         sc->gang[k].name, g->start, g->promise, g->promised_at);
	}
}

static const char *run_name(int reservations, char *buf, size_t len)
{
	if (reservations == RES_DEFAULT)
		snprintf(buf, len, "reservations default");
	else
		snprintf(buf, len, "reservations %d", reservations);
	return buf;
}

/* One run of sc, into run, through the simulator (sim/sim.h). */
static void run_scenario(const struct scenario *sc, struct run *run)
{
	struct sim m;
	struct sim_result res;
	struct sim_options o = {
	    .nnodes = (size_t)sc->nodes,
	    .ngangs = (size_t)sc->ngangs,
	    .epoch_s = EPOCH_S,
	    .tick_s = sc->tick,
	    .stop_s = MAX_TIME,
	    .forecast = true,    /* every waiting gang's expected start, unbounded */
	    .check_state = true, /* what the planner keeps, against a rebuild */
	    .forecast_every_s = run->forecast_every,
	    .hooks = {on_arrived, on_cycled, on_started, on_ended, on_violation, &m},
	};
	int rc;

	if (sim_init(&m, sc, run) == 0) {
		o.cfg = m.cfg;
		o.nodes = m.node;
		o.gangs = m.gang;
		run->simulated = 1;
		if ((rc = sim_run(&o, &res)) < 0)
			sim_fail(&m, "the simulation stopped: %s", strerror(-rc));
		sim_result_free(&res);
		sim_finish(&m);
		if (underestimated(sc))
			text_add(&run->trace,
			         "  (a runtime is under-estimated: no guarantee checked)\n");
	}
	sim_free(&m);
}

/* The timeline and failures of a run that failed a check (of every run
 * with MUSTER_SIM_TRACE set); then its text is freed. */
static void run_report(const struct scenario *sc, struct run *run)
{
	char rn[32];

	if (run->failed || run->missed || getenv("MUSTER_SIM_TRACE"))
		fprintf(stderr, "%s, %s:\n%s%s%s%s", sc->name,
		        run_name(run->reservations, rn, sizeof(rn)),
		        run->trace.buf ? run->trace.buf : "",
		        run->trace.dropped ? "  (trace cut short)\n" : "",
		        run->fails.len ? "  failures:\n" : "",
		        run->fails.buf ? run->fails.buf : "");
	text_free(&run->trace);
	text_free(&run->fails);
}

/* ---- expectations -------------------------------------------------------- */

static struct run *run_of(struct run *runs, int n, int reservations)
{
	for (int k = 0; k < n; k++)
		if (runs[k].reservations == reservations)
			return &runs[k];
	return NULL;
}

/* The runs a scenario needs: its own, then those its expectations name. */
static int plan_runs(const struct scenario *sc, struct run *runs)
{
	int n = 0;

	runs[n++].reservations = sc->reservations;
	for (int k = 0; k < sc->nexpect; k++) {
		const struct expect *e = &sc->expect[k];
		int want[2] = {e->run, e->kind == EXPECT_LATER ? e->other : RES_BASE};

		for (int w = 0; w < 2; w++)
			if (want[w] != RES_BASE && !run_of(runs, n, want[w]) && n < MAX_RUNS)
				runs[n++].reservations = want[w];
	}
	return n;
}

static __attribute__((format(printf, 3, 4))) int
missed(const struct scenario *sc, const struct expect *e, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s:%d: %s: %s\n", sc->name, e->line, sc->gang[e->gang].name, msg);
	return 1;
}

/* A time for a message: a number, "never" or "unknown". */
static const char *when(int64_t t, char *buf, size_t len)
{
	if (t == NO_TIME)
		return "never";
	if (t == PLAN_NEVER)
		return "unknown";
	snprintf(buf, len, "%" PRId64, t);
	return buf;
}

static int check_expect(const struct scenario *sc, const struct expect *e, struct run *runs, int n)
{
	struct run *r = run_of(runs, n, e->run == RES_BASE ? sc->reservations : e->run);
	const struct gstate *g;
	const struct run *o;
	char rn[32], t1[24], t2[24];

	if (!r)
		return missed(sc, e, "that run was not simulated (at most %d runs)", MAX_RUNS);
	if (!r->simulated)
		return 1; /* its failure is printed with the run */
	g = &r->g[e->gang];
	run_name(r->reservations, rn, sizeof(rn));
	switch (e->kind) {
	case EXPECT_START:
		if (g->start != e->t)
			return missed(sc, e, "starts at %s, expected %" PRId64 " (%s)",
			              when(g->start, t1, sizeof(t1)), e->t, rn);
		return 0;
	case EXPECT_PROMISED:
		if (g->promise != e->t)
			return missed(sc, e, "first promised %s, expected %s (%s)",
			              when(g->promise, t1, sizeof(t1)), when(e->t, t2, sizeof(t2)),
			              rn);
		return 0;
	case EXPECT_RESERVED:
		return g->reserved_cycles ? 0 : missed(sc, e, "never reserved (%s)", rn);
	case EXPECT_NEVER_RESERVED:
		return !g->reserved_cycles
		           ? 0
		           : missed(sc, e, "reserved in %d cycles (%s)", g->reserved_cycles, rn);
	case EXPECT_LATER:
		if (!(o = run_of(runs, n, e->other)))
			return missed(sc, e, "that run was not simulated (at most %d runs)",
			              MAX_RUNS);
		if (!o->simulated)
			return 1;
		if (g->start == NO_TIME || o->g[e->gang].start == NO_TIME ||
		    g->start <= o->g[e->gang].start)
			return missed(sc, e,
			              "starts at %s (%s), not later than %s with reservations %d",
			              when(g->start, t1, sizeof(t1)), rn,
			              when(o->g[e->gang].start, t2, sizeof(t2)), e->other);
		return 0;
	}
	return 0;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && len < 1 << 20 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1))) {
		if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
			free(buf);
			buf = NULL;
		} else {
			buf[len] = 0;
		}
	}
	fclose(f);
	return buf;
}

static const char *scenario_dir(void)
{
	const char *d = getenv("MUSTER_SCENARIOS");

	return d && *d ? d : SCENARIOS;
}

/* A cmocka test: the scenario file named by *state, every run of it. */
static void test_scenario(void **state)
{
	const char *file = *state;
	struct scenario *sc = calloc(1, sizeof(*sc));
	struct run *runs = calloc(MAX_RUNS, sizeof(*runs));
	char path[512], err[1024];
	char *text;
	int n, failures = 0;

	assert_non_null(sc);
	assert_non_null(runs);
	snprintf(path, sizeof(path), "%s/%s", scenario_dir(), file);
	if (!(text = read_text(path)))
		snprintf(err, sizeof(err), "%s: cannot read", path);
	else if (scenario_parse(file, text, sc, err, sizeof(err)) == 0)
		err[0] = 0;
	free(text);
	if (err[0]) {
		free(runs);
		free(sc);
		fail_msg("%s", err);
	}
	n = plan_runs(sc, runs);
	for (int k = 0; k < n; k++) {
		run_scenario(sc, &runs[k]);
		failures += runs[k].failed;
	}
	for (int k = 0; k < sc->nexpect; k++) {
		const struct expect *e = &sc->expect[k];
		int miss = check_expect(sc, e, runs, n);
		struct run *r = run_of(runs, n, e->run == RES_BASE ? sc->reservations : e->run);

		failures += miss;
		if (miss && r)
			r->missed = 1;
	}
	for (int k = 0; k < n; k++)
		run_report(sc, &runs[k]);
	free(runs);
	free(sc);
	if (failures)
		fail_msg("%s: %d failed checks", file, failures);
}

/* A forecast every 50 s of the clock, the cycles between carrying its
 * starts: starvation.txt's checks hold, and starts were carried. */
static void test_forecast_carried(void **state)
{
	struct scenario *sc = calloc(1, sizeof(*sc));
	struct run *run = calloc(1, sizeof(*run));
	char path[512], err[1024] = "";
	char *text;

	(void)state;
	assert_non_null(sc);
	assert_non_null(run);
	snprintf(path, sizeof(path), "%s/starvation.txt", scenario_dir());
	assert_non_null(text = read_text(path));
	assert_int_equal(scenario_parse("starvation.txt", text, sc, err, sizeof(err)), 0);
	free(text);
	run->reservations = sc->reservations;
	run->forecast_every = 50;
	run_scenario(sc, run);
	run_report(sc, run); /* its timeline, if it failed */
	assert_true(run->simulated);
	assert_false(run->failed);
	assert_true(run->carried > 0);
	free(run);
	free(sc);
}

/* ---- the parser's own tests ---------------------------------------------- */

/* Every bad line has a message that names the file, the line and the
 * problem. */
static void test_parse_errors(void **state)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
	    {"frobnicate 3\n", "t.txt:1: unknown directive 'frobnicate'"},
	    {"# only a comment\n", "t.txt: no nodes"},
	    {"nodes 4 gpus 8\n", "t.txt: no gangs"},
	    {"nodes 4 gpus 8 racks 3\n", "t.txt:1: 4 nodes do not split evenly into 3 racks"},
	    {"nodes four gpus 8\n", "t.txt:1: nodes: expected a whole number up to 64, got 'four'"},
	    {"gang a at 0 pods 1 gpus 8 runtime 10\n", "t.txt:1: gang before nodes"},
	    {"nodes 1 gpus 8\ngang a at 0 pods 2 gpus 8 runtime 10\n",
	     "t.txt:2: gang a can never fit 1 nodes of 8 GPUs"},
	    {"nodes 1 gpus 8\ngang a at 0 pods 1 gpus 8 runtime soon\n",
	     "t.txt:2: runtime: not a duration: 'soon'"},
	    {"nodes 1 gpus 8\ngang a at 0 pods 1 gpus 8 runtime 10 declared\n",
	     "t.txt:2: after the runtime: declared D, declared none, group-declared D or deadline "
	     "D"},
	    {"nodes 1 gpus 8\ngang a at 0 pods 1 gpus 8 runtime 10 deadline 1m\n",
	     "t.txt:2: deadline: seconds, without a unit: '1m'"},
	    {"nodes 1 gpus 8\ngang a at 0 pods 1 gpus 8 runtime 10\ngang a at 1 pods 1 gpus 8 "
	     "runtime 10\n",
	     "t.txt:3: gang a defined twice"},
	    {"nodes 1 gpus 8\nexpect b start 3\n",
	     "t.txt:2: no gang b (a gang is defined before what is expected of it)"},
	    {"nodes 1 gpus 8\ngang a at 0 pods 1 gpus 8 runtime 10\nexpect a starts 3\n",
	     "t.txt:3: expect: unknown 'starts'; expected start, promised, reserved, "
	     "never-reserved "
	     "or later-than"},
	    {"nodes 1 gpus 8\ngang a at 0 pods 1 gpus 8 runtime 10\nexpect a start 3 when 1\n",
	     "t.txt:3: after the expectation: nothing, or 'when reservations N'"},
	    {"nodes 1 gpus 8\ngang a at 0 pods 1 gpus 8 runtime 10\nexpect a later-than 1\n",
	     "t.txt:3: usage: expect NAME later-than reservations N"},
	};
	struct scenario *sc = calloc(1, sizeof(*sc));
	char text[512], err[512];

	(void)state;
	assert_non_null(sc);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		snprintf(text, sizeof(text), "%s", cases[k].text);
		err[0] = 0;
		assert_int_equal(scenario_parse("t.txt", text, sc, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, cases[k].err);
	}
	free(sc);
}

/* A good scenario reads as written. */
static void test_parse(void **state)
{
	char text[] = "nodes 4 gpus 8 racks 2  # two racks\n"
	              "reservations 2\n"
	              "default-runtime 10m\n"
	              "gang big at 10 pods 4 gpus 8 runtime 500 declared 1h30m\n"
	              "gang x at 20 pods 1 gpus 2 runtime 60 declared none\n"
	              "gang y at 30 pods 1 gpus 2 runtime 60 group-declared 2m\n"
	              "gang z at 40 pods 1 gpus 2 runtime 60 deadline 30\n"
	              "expect big start 1000 when reservations 1\n"
	              "expect big later-than reservations 0\n"
	              "expect big promised unknown\n";
	struct scenario *sc = calloc(1, sizeof(*sc));
	char err[256] = "";

	(void)state;
	assert_non_null(sc);
	assert_int_equal(scenario_parse("t.txt", text, sc, err, sizeof(err)), 0);
	assert_int_equal(sc->nodes, 4);
	assert_int_equal(sc->racks, 2);
	assert_int_equal(sc->reservations, 2);
	assert_string_equal(sc->default_runtime, "10m");
	assert_int_equal(sc->ngangs, 4);
	assert_int_equal(sc->gang[0].declared_s, 5400);
	assert_string_equal(sc->gang[0].declared, "1h30m");
	assert_int_equal(sc->gang[1].decl, DECL_NONE);
	assert_int_equal(sc->gang[2].decl, DECL_GROUP);
	assert_int_equal(sc->gang[2].declared_s, 120);
	assert_int_equal(sc->gang[3].decl, DECL_DEADLINE);
	assert_true(killed(&sc->gang[3]));
	assert_int_equal(sc->nexpect, 3);
	assert_int_equal(sc->expect[0].run, 1);
	assert_int_equal(sc->expect[1].kind, EXPECT_LATER);
	assert_int_equal(sc->expect[1].other, 0);
	assert_true(sc->expect[2].t == PLAN_NEVER);
	free(sc);
}

/* ---- main ------------------------------------------------------------------ */

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The scenario files: those named in argv, else every *.txt in the
 * directory, sorted. NULL-terminated; the caller frees each and the array. */
static char **scenario_files(int argc, char **argv, size_t *n)
{
	char **v = calloc(256, sizeof(*v));
	DIR *d;
	struct dirent *e;

	*n = 0;
	if (!v)
		return NULL;
	for (int k = 1; k < argc && *n < 255; k++)
		v[(*n)++] = strdup(argv[k]);
	if (argc > 1)
		return v;
	if (!(d = opendir(scenario_dir()))) {
		fprintf(stderr, "test_backfill: cannot open %s: %s\n", scenario_dir(),
		        strerror(errno));
		return v;
	}
	while ((e = readdir(d)) && *n < 255) {
		size_t len = strlen(e->d_name);

		if (len > 4 && strcmp(e->d_name + len - 4, ".txt") == 0)
			v[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(v, *n, sizeof(*v), by_name);
	return v;
}

int main(int argc, char **argv)
{
	size_t n;
	char **files = scenario_files(argc, argv, &n);
	struct CMUnitTest *tests = calloc(n + 3, sizeof(*tests));
	size_t nt = 0;
	int rc;

	if (!files || !tests)
		return 1;
	if (n == 0) {
		fprintf(stderr, "test_backfill: no scenarios in %s\n", scenario_dir());
		return 1;
	}
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_forecast_carried);
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_parse_errors);
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_parse);
	for (size_t k = 0; k < n; k++)
		tests[nt++] = (struct CMUnitTest){files[k], test_scenario, NULL, NULL, files[k]};
	rc = _cmocka_run_group_tests("test_backfill", tests, nt, NULL, NULL);
	for (size_t k = 0; k < n; k++)
		free(files[k]);
	free(files);
	free(tests);
	return rc;
}
