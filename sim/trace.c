/*
 * A trace of arrivals as CSV (sim.h: struct sim_trace), one gang a line:
 *
 *   name,at,pods,gpus,runtime[,queue]
 *
 *   name     a DNS-1123 label (a-z, 0-9, '-'; at most 40 bytes, so its
 *            pods' names stay labels), unique
 *   at       arrival: seconds, or a duration (90s, 1h30m) from the start
 *   pods     members, 1..10000 (the gang's minMember)
 *   gpus     whole GPUs per member, 0..1024
 *   runtime  how long each member runs: seconds or a duration; the
 *            planner is told it (muster.dev/expected-runtime)
 *   queue    the queue (its label muster.dev/queue); empty or absent:
 *            the queue the configuration gives namespace "sim"
 *
 * A line starting "name," before the first gang is a header; blank lines
 * and lines starting '#' are skipped. Whitespace around a field is not allowed.
 *
 * Bounded: the file is read once, at most SIM_TRACE_MAX_BYTES, and holds
 * at most SIM_TRACE_MAX_GANGS gangs; a line is at most 1 KiB. Every
 * error found is recorded "FILE:LINE:COLUMN: message" (the first
 * SIM_TRACE_MAX_ERRORS kept), and any error refuses the whole file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "sim/internal.h"

#define FIELDS_MAX   6
#define LINE_MAX_LEN 1024
#define NAME_MAX_LEN 40

struct reader {
	const char *path;
	struct sim_trace *t;
	size_t line;
	bool data; /* a gang line was seen: no header after it */
	char **errors;
	size_t nerrors, dropped;
};

static __attribute__((format(printf, 3, 4))) void bad(struct reader *r, size_t column,
                                                      const char *fmt, ...)
{
	char msg[512], *line;
	va_list ap;

	if (r->nerrors == SIM_TRACE_MAX_ERRORS) {
		r->dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if ((r->line ? asprintf(&line, "%s:%zu:%zu: %s", r->path, r->line, column, msg)
	             : asprintf(&line, "%s: %s", r->path, msg)) < 0)
		return;
	r->errors[r->nerrors++] = line;
}

static bool is_label(const char *s, size_t n)
{
	if (n == 0 || n > NAME_MAX_LEN || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

/* A whole number in [lo, hi] from f[0..n). */
static int number(const char *f, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
	int64_t v = 0;

	if (n == 0 || n > 19)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (f[i] < '0' || f[i] > '9')
			return -EINVAL;
		v = v * 10 + (f[i] - '0');
	}
	if (v < lo || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

/* Seconds, or a duration, from f[0..n), whole seconds at most a year. */
static int seconds(const char *f, size_t n, int64_t *out)
{
	int64_t ms;

	if (units_duration_parse(f, n, &ms) < 0 || ms % 1000 || ms / 1000 > 366 * 86400)
		return -EINVAL;
	*out = ms / 1000;
	return 0;
}

static char *dup_field(const char *f, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, f, n);
		s[n] = 0;
	}
	return s;
}

/* One gang from the fields of a line. 0, or -EINVAL (said), -ENOMEM. */
static int gang(struct reader *r, const char **f, const size_t *n, const size_t *col, size_t nf,
                struct sim_gang *g)
{
	int64_t v;

	memset(g, 0, sizeof(*g));
	if (nf < 5 || nf > 6) {
		bad(r, 1, "%zu fields; expected name,at,pods,gpus,runtime[,queue]", nf);
		return -EINVAL;
	}
	if (!is_label(f[0], n[0]))
		bad(r, col[0], "name: a DNS-1123 label of at most %d bytes", NAME_MAX_LEN);
	if (seconds(f[1], n[1], &g->at_s) < 0)
		bad(r, col[1], "at: seconds or a duration such as 90s or 1h30m, at most a year");
	if (number(f[2], n[2], 1, 10000, &v) < 0)
		bad(r, col[2], "pods: a whole number from 1 to 10000");
	else
		g->pods = (uint32_t)v;
	if (number(f[3], n[3], 0, 1024, &g->gpus) < 0)
		bad(r, col[3], "gpus: a whole number from 0 to 1024");
	if (seconds(f[4], n[4], &g->runtime_s) < 0)
		bad(r, col[4], "runtime: seconds or a duration such as 600 or 2h, at most a year");
	if (nf == 6 && n[5] && !is_label(f[5], n[5]))
		bad(r, col[5], "queue: a queue's name");
	if (r->nerrors || r->dropped)
		return -EINVAL;
	g->declared = SIM_DECLARED_POD;
	if (!(g->name = dup_field(f[0], n[0])) || !(g->declared_value = dup_field(f[4], n[4])) ||
	    (nf == 6 && n[5] && !(g->queue = dup_field(f[5], n[5]))))
		return -ENOMEM;
	return 0;
}

/* Split line[0..len) at commas. */
static size_t split(const char *line, size_t len, const char **f, size_t *n, size_t *col)
{
	size_t nf = 0, start = 0;

	for (size_t i = 0; i <= len && nf <= FIELDS_MAX; i++) {
		if (i < len && line[i] != ',')
			continue;
		if (nf < FIELDS_MAX) {
			f[nf] = line + start;
			n[nf] = i - start;
			col[nf] = start + 1;
		}
		nf++;
		start = i + 1;
	}
	return nf;
}

static int line_of(struct reader *r, const char *line, size_t len)
{
	const char *f[FIELDS_MAX];
	size_t n[FIELDS_MAX], col[FIELDS_MAX], nf;
	struct sim_gang *g;
	int rc;

	if (len == 0 || line[0] == '#')
		return 0;
	if (!r->data && len >= 5 && !memcmp(line, "name,", 5))
		return 0; /* the header, before any gang */
	r->data = true;
	if (len > LINE_MAX_LEN) {
		bad(r, LINE_MAX_LEN + 1, "a line longer than %d bytes", LINE_MAX_LEN);
		return 0;
	}
	if (r->t->ngangs == SIM_TRACE_MAX_GANGS) {
		bad(r, 1, "more than %d gangs", SIM_TRACE_MAX_GANGS);
		return 0;
	}
	if (r->t->ngangs % 1024 == 0) {
		struct sim_gang *v =
		    realloc(r->t->gangs, (r->t->ngangs + 1024) * sizeof(*r->t->gangs));

		if (!v)
			return -ENOMEM;
		r->t->gangs = v;
	}
	nf = split(line, len, f, n, col);
	g = &r->t->gangs[r->t->ngangs];
	rc = gang(r, f, n, col, nf, g);
	if (rc == 0 || rc == -ENOMEM)
		r->t->ngangs++; /* counted so that sim_trace_free() frees it */
	return rc == -ENOMEM ? rc : 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp((*(const struct sim_gang *const *)a)->name,
	              (*(const struct sim_gang *const *)b)->name);
}

/* Names must be unique: one sort of pointers. */
static void unique(struct reader *r)
{
	struct sim_trace *t = r->t;
	const struct sim_gang **v = malloc((t->ngangs + 1) * sizeof(*v));

	if (!v)
		return;
	for (size_t k = 0; k < t->ngangs; k++)
		v[k] = &t->gangs[k];
	qsort(v, t->ngangs, sizeof(*v), cmp_name);
	r->line = 0;
	for (size_t k = 1; k < t->ngangs; k++)
		if (!strcmp(v[k]->name, v[k - 1]->name))
			bad(r, 1, "gang %s is given twice", v[k]->name);
	free(v);
}

int sim_trace_read(const char *path, struct sim_trace *t)
{
	struct reader r = {.path = path, .t = t};
	char *text = NULL;
	size_t len = 0, at = 0;
	int rc;

	memset(t, 0, sizeof(*t));
	if (!(t->errors = r.errors = calloc(SIM_TRACE_MAX_ERRORS, sizeof(char *))))
		return -ENOMEM;
	if ((rc = sim__read_file(path, SIM_TRACE_MAX_BYTES, &text, &len)) < 0) {
		bad(&r, 0, "%s", rc == -EFBIG ? "larger than the trace limit" : strerror(-rc));
		rc = rc == -ENOMEM ? rc : -EINVAL;
		goto out;
	}
	while (at < len && rc == 0) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - text) : len, n = end - at;

		r.line++;
		if (n && text[at + n - 1] == '\r')
			n--;
		rc = line_of(&r, text + at, n);
		at = end + 1;
	}
	if (rc == 0 && !r.nerrors)
		unique(&r);
out:
	free(text);
	t->nerrors = r.nerrors;
	t->dropped = r.dropped;
	if (rc == 0 && (r.nerrors || r.dropped))
		rc = -EINVAL;
	return rc;
}

void sim_trace_free(struct sim_trace *t)
{
	for (size_t k = 0; k < t->ngangs; k++) {
		free((char *)t->gangs[k].name);
		free((char *)t->gangs[k].queue);
		free((char *)t->gangs[k].declared_value);
	}
	for (size_t k = 0; k < t->nerrors; k++)
		free(t->errors[k]);
	free(t->errors);
	free(t->gangs);
	memset(t, 0, sizeof(*t));
}
