/*
 * The formatters of `muster status` and `muster explain`: a parsed debug
 * API document (DEBUG.md) in, text on a FILE * out, in the manner of
 * squeue and `kubectl get`. No I/O but the writes to that FILE *; the
 * fetching is in cli.c.
 *
 * The formatters trust none of a document's fields: each is read through
 * a typed accessor that answers "missing" for a wrong type, and prints as
 * `?`. Text from a document goes to the terminal with its control
 * characters replaced, so a pod message cannot drive the terminal. A
 * table is built as cells first (one malloc'd copy each, O(cells)
 * memory), then printed with each column as wide as its widest cell.
 */
#include <errno.h>
#include <math.h> /* NAN and isnan() only: the build links no libm */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "scheduler/cli/cli.h"
#include "scheduler/cli/internal.h"

#define MAX_RESOURCES   16 /* resource columns in the queue table */
#define MAX_INDENT      16 /* queue tree levels indented, deeper ones flush */
#define MAX_NODES_SHOWN 16 /* reservation nodes listed by explain */
#define MIN_ROOM        24 /* columns a last cell needs beside the others */

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Amounts and durations --------------------------------------------- */

/* Resources counted in bytes (DEBUG.md); a name ending in '-' is a
 * prefix. Every other amount is a plain number: cores or a count. */
static const char *const byte_resources[] = {"memory", "ephemeral-storage", "hugepages-"};

/* Suffixes, largest first: an amount takes the largest that divides it. */
struct unit {
	const char *suffix;
	double factor;
};

static const struct unit binary_units[] = {{"Ei", 0x1p60}, {"Pi", 0x1p50}, {"Ti", 0x1p40},
                                           {"Gi", 0x1p30}, {"Mi", 0x1p20}, {"Ki", 0x1p10}};
static const struct unit decimal_units[] = {{"E", 1e18}, {"P", 1e15}, {"T", 1e12},
                                            {"G", 1e9},  {"M", 1e6},  {"k", 1e3}};

static int in_bytes(const char *resource)
{
	size_t n = resource ? strcspn(resource, "@") : 0, i, l;

	for (i = 0; resource && i < N_ELEMS(byte_resources); i++) {
		l = strlen(byte_resources[i]);
		if ((n == l || byte_resources[i][l - 1] == '-') && n >= l &&
		    strncmp(resource, byte_resources[i], l) == 0)
			return 1;
	}
	return 0;
}

/* v with at most `decimals` decimals, trailing zeros dropped, then
 * suffix: "0.5", "8", "1.5Gi". */
static int fmt_decimal(char *buf, size_t size, double v, int decimals, const char *suffix)
{
	char num[48];
	int n = snprintf(num, sizeof(num), "%.*f", decimals, v);

	if (n < 0 || (size_t)n >= sizeof(num))
		n = snprintf(num, sizeof(num), "%g", v);
	else if (strchr(num, '.')) {
		while (num[n - 1] == '0')
			num[--n] = '\0';
		if (num[n - 1] == '.')
			num[--n] = '\0';
	}
	return snprintf(buf, size, "%s%s", strcmp(num, "-0") == 0 ? "0" : num, suffix);
}

/* The largest of units that states v exactly with at most one decimal
 * and under 100000 of it, formatted; -1 when none does. */
static int fmt_exact(char *buf, size_t size, double v, const struct unit *units, size_t n)
{
	double q;
	size_t i;

	for (i = 0; i < n; i++) {
		q = (v < 0 ? -v : v) / units[i].factor;
		if (q >= 1 && q < 1e5 && q * 10 == (double)(long)(q * 10))
			return fmt_decimal(buf, size, v / units[i].factor, 1, units[i].suffix);
	}
	return -1;
}

/* Exact with a suffix ("64Gi", "1.5Gi", "500M"), binary ones first, else
 * rounded to one decimal of the largest binary suffix ("953.7Mi"). */
static int fmt_bytes(char *buf, size_t size, double v)
{
	int n = fmt_exact(buf, size, v, binary_units, N_ELEMS(binary_units));
	size_t i;

	if (n < 0)
		n = fmt_exact(buf, size, v, decimal_units, N_ELEMS(decimal_units));
	for (i = 0; n < 0 && i < N_ELEMS(binary_units); i++)
		if ((v < 0 ? -v : v) >= binary_units[i].factor)
			n = fmt_decimal(buf, size, v / binary_units[i].factor, 1,
			                binary_units[i].suffix);
	return n < 0 ? fmt_decimal(buf, size, v, 0, "") : n;
}

int sched_cli_format_amount(char *buf, size_t size, const char *resource, double v)
{
	return in_bytes(resource) ? fmt_bytes(buf, size, v) : fmt_decimal(buf, size, v, 3, "");
}

int sched_cli_format_duration(char *buf, size_t size, double seconds)
{
	/* Clamped so that NaN and absurd values still print a number. */
	long long s = seconds > 0 ? (long long)(seconds < 1e12 ? seconds : 1e12) : 0;

	if (s < 60)
		return snprintf(buf, size, "%llds", s);
	if (s < 3600)
		return snprintf(buf, size, "%lldm%llds", s / 60, s % 60);
	if (s < 86400)
		return snprintf(buf, size, "%lldh%lldm", s / 3600, s % 3600 / 60);
	return snprintf(buf, size, "%lldd%lldh", s / 86400, s % 86400 / 3600);
}

/* ---- Reading a document that may be anything --------------------------- */

static const cJSON *field(const cJSON *o, const char *key)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* v if it is an array, else NULL: cJSON_ArrayForEach walks an object's
 * members too, and no list here may be one. */
static const cJSON *as_array(const cJSON *v)
{
	return cJSON_IsArray(v) ? v : NULL;
}

const char *sched_cli__str_field(const cJSON *o, const char *key)
{
	const cJSON *v = field(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A string field as shown: itself, "-" for null, "?" for anything else. */
static const char *text_field(const cJSON *o, const char *key)
{
	const cJSON *v = field(o, key);

	if (cJSON_IsString(v))
		return v->valuestring;
	return cJSON_IsNull(v) ? "-" : "?";
}

/* A whole number field as shown, in buf: "-" for null, "?" if no number. */
static const char *num_text(char *buf, size_t size, const cJSON *o, const char *key)
{
	const cJSON *v = field(o, key);

	if (cJSON_IsNumber(v))
		snprintf(buf, size, "%.0f", v->valuedouble);
	else
		snprintf(buf, size, "%s", cJSON_IsNull(v) ? "-" : "?");
	return buf;
}

/* An amount as shown, in buf: null is unlimited ("inf"), "?" if no number. */
static const char *amount_text(char *buf, size_t size, const char *resource, const cJSON *v)
{
	if (cJSON_IsNumber(v))
		sched_cli_format_amount(buf, size, resource, v->valuedouble);
	else
		snprintf(buf, size, "%s", cJSON_IsNull(v) ? "inf" : "?");
	return buf;
}

static const char *duration_text(char *buf, size_t size, const cJSON *v)
{
	if (cJSON_IsNumber(v))
		sched_cli_format_duration(buf, size, v->valuedouble);
	else
		snprintf(buf, size, "%s", cJSON_IsNull(v) ? "-" : "?");
	return buf;
}

/* ---- Text for a terminal ------------------------------------------------ */

/* The byte of s at *i to show, advancing *i past what it stands for: C0
 * controls and DEL become ' ', C1 controls (U+0080..U+009F) '?'. */
static char clean_step(const char *s, size_t *i)
{
	unsigned char c = (unsigned char)s[(*i)++];

	if (c < 0x20 || c == 0x7f)
		return ' ';
	if (c == 0xc2 && (unsigned char)s[*i] >= 0x80 && (unsigned char)s[*i] <= 0x9f) {
		(*i)++;
		return '?';
	}
	return (char)c;
}

/* Columns s takes: one per UTF-8 code point (wide characters count one). */
static size_t cols(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static char *clean_dup(const char *s)
{
	size_t i = 0, n = 0;
	char *d = malloc(strlen(s) + 1);

	while (d && s[i])
		d[n++] = clean_step(s, &i);
	if (d)
		d[n] = '\0';
	return d;
}

void sched_cli__put_clean(FILE *out, const char *s)
{
	size_t i = 0;

	while (s[i])
		fputc(clean_step(s, &i), out);
}

/* s (already clean) in at most max columns, ending in "..." when cut. */
static void put_cut(FILE *out, const char *s, size_t max)
{
	size_t keep = max > 3 ? max - 3 : max, n = 0;

	if (cols(s) <= max) {
		fputs(s, out);
		return;
	}
	for (; *s; s++) {
		n += ((unsigned char)*s & 0xc0) != 0x80;
		if (n > keep)
			break;
		fputc(*s, out);
	}
	if (max > 3)
		fputs("...", out);
}

/* ---- Tables -------------------------------------------------------------- */

struct table {
	size_t ncols, indent; /* indent: spaces before each line */
	int fold;             /* a last cell without MIN_ROOM goes on a line of its own */
	size_t n, cap;        /* cells so far, row after row */
	char **cell;
	int err; /* -ENOMEM once an add failed; later adds do nothing */
};

static void table_add(struct table *t, const char *s)
{
	char **grown;

	if (t->err)
		return;
	if (t->n == t->cap) {
		grown = realloc(t->cell, (t->cap ? 2 * t->cap : 64) * sizeof(*grown));
		if (!grown) {
			t->err = -ENOMEM;
			return;
		}
		t->cell = grown;
		t->cap = t->cap ? 2 * t->cap : 64;
	}
	t->cell[t->n] = clean_dup(s);
	if (!t->cell[t->n++])
		t->err = -ENOMEM;
}

static void table_free(struct table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->cell[i]);
	free(t->cell);
	t->cell = NULL;
	t->n = t->cap = 0;
}

/* One row: every column but the last padded to its width plus two
 * spaces; the last cut to what is left of width (0: never cut), or, if
 * the table folds and too little is left, cut to width on a line of its
 * own under the second column (the header row then leaves it out). */
static void print_row(FILE *out, const struct table *t, char *const *row, const size_t *w,
                      unsigned width, int header)
{
	size_t c, last = t->ncols - 1, used = t->indent, room;
	int fold;

	for (c = 0; c < last; c++)
		used += w[c] + 2;
	room = !width ? SIZE_MAX : width > used ? width - used : 0;
	fold = t->fold && last > 0 && room < MIN_ROOM;
	fprintf(out, "%*s", (int)t->indent, "");
	for (c = 0; c < last; c++) {
		fputs(row[c], out);
		if (c + 1 < last || (room > 0 && !fold)) /* no padding before nothing */
			fprintf(out, "%*s", (int)(w[c] - cols(row[c]) + 2), "");
	}
	if (fold && !header && *row[last]) {
		used = t->indent + w[0] + 2;
		fprintf(out, "\n%*s", (int)used, "");
		put_cut(out, row[last], width > used ? width - used : 0);
	} else if (!fold)
		put_cut(out, row[last], room);
	fputc('\n', out);
}

static int table_print(FILE *out, const struct table *t, unsigned width)
{
	size_t rows = t->n / t->ncols, i;
	size_t *w;

	if (t->err)
		return t->err;
	w = calloc(t->ncols, sizeof(*w));
	if (!w)
		return -ENOMEM;
	for (i = 0; i < rows * t->ncols; i++)
		if (cols(t->cell[i]) > w[i % t->ncols])
			w[i % t->ncols] = cols(t->cell[i]);
	for (i = 0; i < rows; i++)
		print_row(out, t, t->cell + i * t->ncols, w, width, i == 0);
	free(w);
	return 0;
}

/* ---- muster status: the queue tree ---------------------------------------- */

/* The resource columns: the document's "resources" list, or failing that
 * the keys of the root's resources. Returns how many (at most max). */
static size_t resource_names(const cJSON *doc, const char **names, size_t max)
{
	const cJSON *list = field(doc, "resources"), *r;
	size_t n = 0;

	if (!cJSON_IsArray(list))
		list = field(field(doc, "root"), "resources");
	cJSON_ArrayForEach(r, list)
	{
		const char *name = cJSON_IsString(r) ? r->valuestring : r->string;

		if (name && n < max)
			names[n++] = name;
	}
	return n;
}

/* "usage/nominal" of one resource entry; "-" when the node has none. */
static const char *usage_text(char *buf, size_t size, const char *res, const cJSON *entry)
{
	char u[48], n[48];

	if (!entry)
		return "-";
	snprintf(buf, size, "%s/%s", amount_text(u, sizeof(u), res, field(entry, "usage")),
	         amount_text(n, sizeof(n), res, field(entry, "nominal")));
	return buf;
}

/* What the node borrows, "8 nvidia.com/gpu, 2 cpu", or "-". */
static const char *borrowed_text(char *buf, size_t size, const cJSON *resources, const char **names,
                                 size_t nres)
{
	const cJSON *b;
	size_t off = 0, i;
	char a[48];

	buf[0] = '\0';
	for (i = 0; i < nres && off < size; i++) {
		b = field(field(resources, names[i]), "borrowed");
		if (!cJSON_IsNumber(b) || b->valuedouble <= 0)
			continue;
		sched_cli_format_amount(a, sizeof(a), names[i], b->valuedouble);
		off += (size_t)snprintf(buf + off, size - off, "%s%s %s", off ? ", " : "", a,
		                        names[i]);
	}
	return buf[0] ? buf : "-";
}

static const char *share_text(char *buf, size_t size, const cJSON *node)
{
	const cJSON *v = field(node, "fairShare");

	if (cJSON_IsNumber(v))
		snprintf(buf, size, "%.2f", v->valuedouble);
	else
		snprintf(buf, size, "%s", cJSON_IsNull(v) ? "-" : "?");
	return buf;
}

static void queue_row(struct table *t, const cJSON *node, const char **names, size_t nres,
                      int depth)
{
	const cJSON *res = field(node, "resources");
	const char *name = sched_cli__str_field(node, "name");
	char b[512];
	size_t i;

	if (name && !*name)
		name = "(root)"; /* the unnamed top cohort */
	snprintf(b, sizeof(b), "%*s%s", 2 * (depth < MAX_INDENT ? depth : MAX_INDENT), "",
	         name ? name : "?");
	table_add(t, b);
	table_add(t, text_field(node, "kind"));
	table_add(t, num_text(b, sizeof(b), node, "pending"));
	table_add(t, num_text(b, sizeof(b), node, "admitted"));
	for (i = 0; i < nres; i++)
		table_add(t, usage_text(b, sizeof(b), names[i], field(res, names[i])));
	table_add(t, borrowed_text(b, sizeof(b), res, names, nres));
	table_add(t, share_text(b, sizeof(b), node));
}

/* The node, then its children depth first. Depth is bounded by cJSON's
 * nesting limit (1000 levels), so the recursion is too. */
static void queue_rows(struct table *t, const cJSON *node, const char **names, size_t nres,
                       int depth)
{
	const cJSON *children = field(node, "children"), *c;

	queue_row(t, node, names, nres, depth);
	if (!cJSON_IsArray(children))
		return;
	cJSON_ArrayForEach(c, children)
	{
		if (cJSON_IsObject(c))
			queue_rows(t, c, names, nres, depth + 1);
	}
}

static int print_queues(FILE *out, const cJSON *doc)
{
	static const char *const head[] = {"QUEUE", "KIND", "PENDING", "ADMITTED"};
	const char *names[MAX_RESOURCES];
	size_t nres = resource_names(doc, names, MAX_RESOURCES), i;
	struct table t = {.ncols = N_ELEMS(head) + nres + 2};
	const cJSON *root = field(doc, "root");
	int rc;

	if (!cJSON_IsObject(root)) {
		fputs("Queues: ? (the document has no queue tree)\n", out);
		return 0;
	}
	for (i = 0; i < N_ELEMS(head); i++)
		table_add(&t, head[i]);
	for (i = 0; i < nres; i++)
		table_add(&t, names[i]);
	table_add(&t, "BORROWED");
	table_add(&t, "SHARE");
	queue_rows(&t, root, names, nres, 0);
	rc = table_print(out, &t, 0);
	table_free(&t);
	return rc;
}

/* ---- muster status: the pending gangs ------------------------------------ */

/* The message without its "gang NS/NAME: " head, which the row shows. */
static const char *message_text(const cJSON *g)
{
	const char *m = text_field(g, "message");
	char head[512];
	int n = snprintf(head, sizeof(head), "gang %s/%s: ", text_field(g, "namespace"),
	                 text_field(g, "name"));

	if (n > 0 && (size_t)n < sizeof(head) && strncmp(m, head, (size_t)n) == 0)
		return m + n;
	return m;
}

/* An RFC 3339 UTC time, "2026-11-21T20:30:00Z" (fractions allowed), in
 * unix seconds. */
static int parse_time(const char *s, double *out)
{
	struct tm tm = {0};
	const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;

	if (end && *end == '.')
		end += 1 + strspn(end + 1, "0123456789");
	if (!end || strcmp(end, "Z") != 0)
		return -EINVAL;
	*out = (double)timegm(&tm);
	return 0;
}

/* The document's time, or NAN. */
static double doc_time(const cJSON *doc)
{
	double t;

	return parse_time(sched_cli__str_field(doc, "time"), &t) == 0 ? t : NAN;
}

/* An RFC 3339 start as seen from now, in buf: "in 9m42s" or "now".
 * -EINVAL when either is not a time (NaN now, "unknown", "-"). */
static int start_rel(char *buf, size_t size, const char *start, double now)
{
	double t;

	if (isnan(now) || parse_time(start, &t) < 0)
		return -EINVAL;
	if (t <= now) {
		snprintf(buf, size, "now");
		return 0;
	}
	snprintf(buf, size, "in ");
	sched_cli_format_duration(buf + 3, size - 3, t - now);
	return 0;
}

static void gang_row(struct table *t, const cJSON *g, double now)
{
	const char *start = text_field(g, "expectedStart");
	char b[512], n[48], m[48];

	table_add(t, num_text(b, sizeof(b), g, "position"));
	snprintf(b, sizeof(b), "%s/%s", text_field(g, "namespace"), text_field(g, "name"));
	table_add(t, b);
	table_add(t, text_field(g, "queue"));
	table_add(t, text_field(g, "state"));
	table_add(t, text_field(g, "reason"));
	snprintf(b, sizeof(b), "%s/%s", num_text(n, sizeof(n), g, "bound"),
	         num_text(m, sizeof(m), g, "minMember"));
	table_add(t, b);
	table_add(t, duration_text(b, sizeof(b), field(g, "waitingSeconds")));
	table_add(t, start_rel(b, sizeof(b), start, now) == 0 ? b : start);
	table_add(t, message_text(g));
}

static int in_queue(const cJSON *g, const char *queue)
{
	const char *q = sched_cli__str_field(g, "queue");

	return !queue || (q && strcmp(q, queue) == 0);
}

/* The rows of the gangs opt lets through; returns how many. */
static unsigned gang_rows(struct table *t, const cJSON *list, const struct sched_cli_fmt *opt,
                          double now)
{
	const cJSON *g;
	unsigned shown = 0;

	cJSON_ArrayForEach(g, list)
	{
		if (opt->limit && shown == opt->limit)
			break;
		if (cJSON_IsObject(g) && in_queue(g, opt->queue)) {
			gang_row(t, g, now);
			shown++;
		}
	}
	return shown;
}

/* "12 of 40 pending gangs shown." when the list was cut (by the server's
 * limit or ours). */
static void print_gangs_footer(FILE *out, const cJSON *doc, unsigned shown)
{
	const cJSON *total = field(doc, "total");

	if (shown && cJSON_IsNumber(total) && total->valuedouble > shown)
		fprintf(out, "%u of %.0f pending gangs shown.\n", shown, total->valuedouble);
}

static int print_gangs(FILE *out, const cJSON *doc, const struct sched_cli_fmt *opt)
{
	static const char *const head[] = {"POS",     "GANG", "QUEUE", "STATE",  "REASON",
	                                   "MEMBERS", "WAIT", "START", "MESSAGE"};
	const cJSON *list = field(doc, "gangs");
	struct table t = {.ncols = N_ELEMS(head), .fold = 1};
	unsigned shown;
	size_t i;
	int rc;

	if (!cJSON_IsArray(list)) {
		fputs("Pending gangs: ? (the document has no list of gangs)\n", out);
		return 0;
	}
	for (i = 0; i < N_ELEMS(head); i++)
		table_add(&t, head[i]);
	shown = gang_rows(&t, list, opt, doc_time(doc));
	rc = shown ? table_print(out, &t, opt->width) : t.err;
	if (!shown && !rc)
		fprintf(out, "No pending gangs%s%s.\n", opt->queue ? " in queue " : "",
		        opt->queue ? opt->queue : "");
	print_gangs_footer(out, doc, shown);
	table_free(&t);
	return rc;
}

/* "As of cycle 42, 2026-11-21T20:30:00Z." from whichever document has it. */
static void print_cycle(FILE *out, const cJSON *queues, const cJSON *gangs)
{
	const cJSON *doc = field(queues, "cycle") ? queues : gangs;
	char n[48];

	fprintf(out, "As of cycle %s, ", num_text(n, sizeof(n), doc, "cycle"));
	sched_cli__put_clean(out, text_field(doc, "time"));
	fputs(".\n\n", out);
}

static int finish(FILE *out, int rc)
{
	if (rc == 0 && (fflush(out) != 0 || ferror(out)))
		rc = -EIO;
	return rc;
}

int sched_cli_format_status(FILE *out, const cJSON *queues, const cJSON *gangs,
                            const struct sched_cli_fmt *opt)
{
	static const struct sched_cli_fmt all = {0};
	int rc;

	print_cycle(out, queues, gangs);
	rc = print_queues(out, queues);
	if (rc == 0) {
		fputc('\n', out);
		rc = print_gangs(out, gangs, opt ? opt : &all);
	}
	return finish(out, rc);
}

/* ---- muster explain ---------------------------------------------------------- */

/* "  key:            " then the caller's value and newline. */
static void key(FILE *out, const char *k)
{
	fprintf(out, "  %-16s", k);
}

static void kv(FILE *out, const char *k, const char *value)
{
	key(out, k);
	sched_cli__put_clean(out, value);
	fputc('\n', out);
}

/* "Gang NS/NAME (KIND), as of cycle N" */
static void explain_title(FILE *out, const cJSON *doc, const cJSON *g)
{
	char n[48];

	fputs("Gang ", out);
	sched_cli__put_clean(out, text_field(g, "namespace"));
	fputc('/', out);
	sched_cli__put_clean(out, text_field(g, "name"));
	fputs(" (", out);
	sched_cli__put_clean(out, text_field(g, "kind"));
	fputc(')', out);
	if (field(doc, "cycle"))
		fprintf(out, ", as of cycle %s", num_text(n, sizeof(n), doc, "cycle"));
	fputc('\n', out);
}

static void explain_place(FILE *out, const cJSON *g)
{
	char a[48], b[48];

	key(out, "queue:");
	sched_cli__put_clean(out, text_field(g, "queue"));
	fprintf(out, ", position %s (%s in its queue)\n", num_text(a, sizeof(a), g, "position"),
	        num_text(b, sizeof(b), g, "queuePosition"));
	key(out, "state:");
	sched_cli__put_clean(out, text_field(g, "state"));
	fputs(", reason ", out);
	sched_cli__put_clean(out, text_field(g, "reason"));
	fputc('\n', out);
}

static void explain_members(FILE *out, const cJSON *g)
{
	char b[48], m[48], e[48], p[48];

	num_text(b, sizeof(b), g, "bound");
	num_text(m, sizeof(m), g, "minMember");
	num_text(e, sizeof(e), g, "members");
	num_text(p, sizeof(p), g, "pendingMembers");
	key(out, "members:");
	fprintf(out, "%s bound of minMember %s (%s exist, %s pending)\n", b, m, e, p);
}

/* "24 nvidia.com/gpu, 8 cpu, 64Gi memory" */
static void explain_requests(FILE *out, const cJSON *g)
{
	const cJSON *req = field(g, "requests"), *r;
	const cJSON *each = cJSON_IsObject(req) ? req : NULL;
	char a[48];
	int n = 0;

	key(out, "requests:");
	if (!cJSON_IsObject(req))
		fputs(cJSON_IsNull(req) ? "none" : "?", out);
	cJSON_ArrayForEach(r, each)
	{
		fputs(n++ ? ", " : "", out);
		fputs(amount_text(a, sizeof(a), r->string, r), out);
		fputc(' ', out);
		sched_cli__put_clean(out, r->string);
	}
	fputs(cJSON_IsObject(req) && !n ? "none\n" : "\n", out);
}

static void explain_times(FILE *out, const cJSON *doc, const cJSON *g)
{
	const char *start = text_field(g, "expectedStart");
	char d[48], rel[64];

	key(out, "waiting for:");
	fputs(duration_text(d, sizeof(d), field(g, "waitingSeconds")), out);
	fputs(" (created ", out);
	sched_cli__put_clean(out, text_field(g, "created"));
	fputs(")\n", out);
	key(out, "expected start:");
	if (strcmp(start, "unknown") == 0)
		fputs("unknown (work it waits for has no runtime)", out);
	else
		sched_cli__put_clean(out, strcmp(start, "-") == 0 ? "not estimated" : start);
	if (start_rel(rel, sizeof(rel), start, doc_time(doc)) == 0)
		fprintf(out, " (%s)", rel);
	if (strcmp(start, "-") != 0 && cJSON_IsString(field(g, "expectedStartFrom"))) {
		fputs(" by its ", out);
		sched_cli__put_clean(out, text_field(g, "expectedStartFrom"));
	}
	fputc('\n', out);
}

static void explain_reservation(FILE *out, const cJSON *g)
{
	const cJSON *r = field(g, "reservation");
	const cJSON *nodes = as_array(field(r, "nodes")), *n;
	int i = 0, total = cJSON_GetArraySize(nodes);

	key(out, "reservation:");
	if (!nodes)
		fputs(cJSON_IsNull(r) ? "none" : "?", out);
	else if (total == 0)
		fputs("no nodes", out);
	cJSON_ArrayForEach(n, nodes)
	{
		if (i == MAX_NODES_SHOWN) {
			fprintf(out, " and %d more", total - i);
			break;
		}
		fputs(i++ ? ", " : "", out);
		sched_cli__put_clean(out, cJSON_IsString(n) ? n->valuestring : "?");
	}
	if (total)
		fprintf(out, " (%d node%s)", total, total == 1 ? "" : "s");
	fputc('\n', out);
}

/* title, then each string of list indented, or `none` when there is none. */
static void explain_lines(FILE *out, const char *title, const cJSON *list, const char *none)
{
	const cJSON *l;
	int n = 0;

	fprintf(out, "\n%s\n", title);
	list = as_array(list);
	cJSON_ArrayForEach(l, list)
	{
		fputs("  ", out);
		sched_cli__put_clean(out, cJSON_IsString(l) ? l->valuestring : "?");
		fputc('\n', out);
		n++;
	}
	if (!n) {
		fputs("  ", out);
		sched_cli__put_clean(out, none);
		fputc('\n', out);
	}
}

/* The explain lines; without them, the constraint's bare name. */
static void explain_blocked(FILE *out, const cJSON *doc)
{
	const char *c = sched_cli__str_field(field(doc, "blockedBy"), "constraint");

	if (c && strcmp(c, "none") == 0)
		c = "nothing (admitted)";
	explain_lines(out, "Blocked by:", field(doc, "explain"), c ? c : "?");
}

static int explain_pods(FILE *out, const cJSON *pods)
{
	struct table t = {.ncols = 3, .indent = 2};
	const cJSON *p;
	int rc;

	fputs("\nPods:\n", out);
	if (cJSON_GetArraySize(as_array(pods)) == 0) {
		fputs(cJSON_IsArray(pods) ? "  none\n" : "  ?\n", out);
		return 0;
	}
	table_add(&t, "NAME");
	table_add(&t, "NODE");
	table_add(&t, "PHASE");
	cJSON_ArrayForEach(p, pods)
	{
		table_add(&t, text_field(p, "name"));
		table_add(&t, text_field(p, "node"));
		table_add(&t, text_field(p, "phase"));
	}
	rc = table_print(out, &t, 0);
	table_free(&t);
	return rc;
}

int sched_cli_format_explain(FILE *out, const cJSON *doc)
{
	/* DEBUG.md nests the entry under "gang"; a flat one is read as well. */
	const cJSON *g = cJSON_IsObject(field(doc, "gang")) ? field(doc, "gang") : doc;

	explain_title(out, doc, g);
	explain_place(out, g);
	explain_members(out, g);
	explain_requests(out, g);
	explain_times(out, doc, g);
	explain_reservation(out, g);
	kv(out, "message:", text_field(g, "message"));
	explain_blocked(out, doc);
	explain_lines(out, "Would let it in:", field(doc, "wouldAdmit"), "-");
	return finish(out, explain_pods(out, field(doc, "pods")));
}
