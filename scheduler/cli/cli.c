/*
 * `muster status` and `muster explain`: the commands and their flags.
 * The debug API (DEBUG.md) is read through client.c, the documents are
 * printed by the formatters in format.c.
 *
 * The commands make at most two blocking GETs, each bounded by a 10 s
 * timeout and a 64 MiB body (client.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "scheduler/cli/cli.h"
#include "scheduler/cli/internal.h"

#define CLI_DEFAULT_ADDR "http://127.0.0.1:10251"
#define CLI_MAX_LIMIT    100000ul

/* ---- Fetching documents ------------------------------------------------------ */

struct cli_opts {
	struct sched_cli_client_opts http; /* prog, addr, token_file, cacert */
	const char *queue, *gang;
	unsigned limit;
	int json, wide;
};

/* A command's run: its options and the client, and the client's base
 * address for messages. */
struct cli_conn {
	const struct cli_opts *o;
	const char *prog;
	struct sched_cli_client *http;
	const char *base;
};

/* A response body, capped at SCHED_CLI_MAX_BODY. */
struct body {
	struct buf b;
};

static void body_init(struct body *b)
{
	buf_init(&b->b, SCHED_CLI_MAX_BODY);
}

/* An HTTP error in words: the document's "error", or its first line. */
static void http_error(const struct cli_conn *c, const char *path, long status,
                       const struct body *b)
{
	cJSON *doc = b->b.p ? cJSON_ParseWithLength(b->b.p, b->b.len) : NULL;
	const char *why = sched_cli__str_field(doc, "error");
	char line[256];

	if (status == 401 && c->o->http.token_file)
		fprintf(stderr, "%s: the debug API at %s refused the token in %s (HTTP 401)\n",
		        c->prog, c->base, c->o->http.token_file);
	else if (status == 401)
		fprintf(stderr, "%s: the debug API at %s needs a bearer token: --token-file FILE\n",
		        c->prog, c->base);
	else {
		fprintf(stderr, "%s: GET %s%s: HTTP %ld: ", c->prog, c->base, path, status);
		if (!why && b->b.p) /* not ours: its first line says the most */
			snprintf(line, sizeof(line), "%.*s", (int)strcspn(b->b.p, "\r\n"), b->b.p);
		sched_cli__put_clean(stderr, why ? why : b->b.p ? line : "");
		fputc('\n', stderr);
	}
	cJSON_Delete(doc);
}

/* GET path as a JSON document into *doc (its text stays in b). Returns
 * 0; -ENOENT for a 404, left to the caller to explain; or -EIO, said. */
static int fetch_json(struct cli_conn *c, const char *path, struct body *b, cJSON **doc)
{
	long status = 0;
	int rc = sched_cli__client_get(c->http, path, &b->b, &status);

	if (rc < 0)
		return rc;
	if (status == 404)
		return -ENOENT;
	if (status != 200) {
		http_error(c, path, status, b);
		return -EIO;
	}
	*doc = b->b.p ? cJSON_ParseWithLength(b->b.p, b->b.len) : NULL;
	if (!*doc) {
		fprintf(stderr, "%s: GET %s%s: the answer is not JSON\n", c->prog, c->base, path);
		return -EIO;
	}
	return 0;
}

/* ---- The commands ------------------------------------------------------------ */

static const char status_usage[] =
    "usage: muster status [options]\n"
    "\n"
    "The queues and the pending gangs of a running Muster, read from its debug\n"
    "API (muster run --debug-addr).\n"
    "\n"
    "  --addr URL          the debug API (default: $MUSTER_ADDR, else " CLI_DEFAULT_ADDR ")\n"
    "  --token-file FILE   send the bearer token in FILE (its first line)\n"
    "  --cacert FILE       trust the CA certificates in FILE for an https address\n"
    "  --queue NAME        only the gangs of queue NAME\n"
    "  --limit N           at most N gangs (1..100000; default 1000)\n"
    "  --wide              never cut MESSAGE (by default cut to the terminal's width,\n"
    "                      80 columns when not a terminal)\n"
    "  --json              the documents as they are: {\"queues\": ..., \"gangs\": ...}\n"
    "  --help              this text\n";

static const char explain_usage[] =
    "usage: muster explain [options] NS/NAME\n"
    "\n"
    "Why the gang NS/NAME (a PodGroup, or a single pod) waits, and what would\n"
    "let it in, read from a running Muster's debug API.\n"
    "\n"
    "  --addr URL          the debug API (default: $MUSTER_ADDR, else " CLI_DEFAULT_ADDR ")\n"
    "  --token-file FILE   send the bearer token in FILE (its first line)\n"
    "  --cacert FILE       trust the CA certificates in FILE for an https address\n"
    "  --json              the document as it is\n"
    "  --help              this text\n";

/* The flags both commands take; status adds --queue and --limit. */
/* clang-format off */
#define COMMON_FLAGS \
	{"addr", required_argument, NULL, 'a'}, \
	{"token-file", required_argument, NULL, 't'}, \
	{"cacert", required_argument, NULL, 'c'}, \
	{"json", no_argument, NULL, 'j'}, \
	{"help", no_argument, NULL, 'h'}
/* clang-format on */

static const struct option status_flags[] = {
    COMMON_FLAGS,
    {"queue", required_argument, NULL, 'q'},
    {"limit", required_argument, NULL, 'l'},
    {"wide", no_argument, NULL, 'w'},
    {NULL, 0, NULL, 0},
};

static const struct option explain_flags[] = {COMMON_FLAGS, {NULL, 0, NULL, 0}};

struct cli_command {
	const char *prog, *usage;
	const struct option *flags;
	int args; /* operands wanted: 0, or 1 (NS/NAME) */
};

static int parse_limit(const struct cli_command *cmd, const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || v < 1 || v > CLI_MAX_LIMIT) {
		fprintf(stderr, "%s: --limit wants 1..%lu, not '%s'\n", cmd->prog, CLI_MAX_LIMIT,
		        s);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

/* One flag into o. Returns -1 to go on, or an exit status to stop with. */
static int apply_flag(const struct cli_command *cmd, int c, struct cli_opts *o)
{
	switch (c) {
	case 'a':
		o->http.addr = optarg;
		return -1;
	case 't':
		o->http.token_file = optarg;
		return -1;
	case 'c':
		o->http.cacert = optarg;
		return -1;
	case 'j':
		o->json = 1;
		return -1;
	case 'q':
		o->queue = optarg;
		return -1;
	case 'w':
		o->wide = 1;
		return -1;
	case 'l':
		return parse_limit(cmd, optarg, &o->limit) < 0 ? 2 : -1;
	case 'h':
		fputs(cmd->usage, stdout);
		return 0;
	default: /* getopt_long has said what was wrong */
		fputs(cmd->usage, stderr);
		return 2;
	}
}

/* NS/NAME: two non-empty parts. */
static int gang_operand(const char *s)
{
	const char *slash = strchr(s, '/');

	return slash && slash != s && slash[1] && !strchr(slash + 1, '/') ? 0 : -EINVAL;
}

/* argv into o. Returns -1 to go on, or an exit status to stop with: 0
 * after --help, 2 for a usage error (said on stderr). */
static int parse_args(const struct cli_command *cmd, int argc, char **argv, struct cli_opts *o)
{
	const char *env = getenv("MUSTER_ADDR");
	int c, rc = -1;

	memset(o, 0, sizeof(*o));
	o->http.prog = cmd->prog;
	o->http.addr = env && *env ? env : CLI_DEFAULT_ADDR;
	argv[0] = (char *)cmd->prog; /* getopt_long's messages name it */
	optind = 1;
	while (rc < 0 && (c = getopt_long(argc, argv, "", cmd->flags, NULL)) != -1)
		rc = apply_flag(cmd, c, o);
	if (rc >= 0)
		return rc;
	if (argc - optind != cmd->args || (cmd->args && gang_operand(argv[optind]) < 0)) {
		fprintf(stderr, "%s: %s\n\n%s", cmd->prog,
		        cmd->args ? "wants one gang as NS/NAME" : "takes no operands", cmd->usage);
		return 2;
	}
	o->gang = cmd->args ? argv[optind] : NULL;
	return -1;
}

/* A document's own text, or {"queues": a, "gangs": b} when there are two,
 * then a newline. Returns 0 or -EIO. */
static int print_raw(const struct body *a, const struct body *b)
{
	if (b)
		printf("{\"queues\": %.*s, \"gangs\": %.*s}\n", (int)a->b.len, a->b.p,
		       (int)b->b.len, b->b.p);
	else
		printf("%.*s%s", (int)a->b.len, a->b.p,
		       a->b.len && a->b.p[a->b.len - 1] == '\n' ? "" : "\n");
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -EIO;
}

static unsigned term_width(void)
{
	struct winsize ws;

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/* "/debug/gangs?limit=N&queue=Q", the parts given. */
static char *gangs_path(struct cli_conn *c)
{
	char *q = c->o->queue ? sched_cli__client_escape(c->http, c->o->queue, 0) : NULL;
	char *path = NULL;

	if (c->o->queue && !q)
		return NULL;
	if (asprintf(&path, "/debug/gangs?limit=%u%s%s", c->o->limit ? c->o->limit : 1000u,
	             q ? "&queue=" : "", q ? q : "") < 0)
		path = NULL;
	free(q);
	return path;
}

static int not_found(const struct cli_conn *c, const char *path)
{
	fprintf(stderr, "%s: %s%s: 404: no debug API there (is it Muster's --debug-addr?)\n",
	        c->prog, c->base, path);
	return -EIO;
}

static int fetch_status(struct cli_conn *c, struct body *qb, cJSON **q, struct body *gb, cJSON **g)
{
	char *path = gangs_path(c);
	int rc = fetch_json(c, "/debug/queues", qb, q);

	if (rc == -ENOENT)
		rc = not_found(c, "/debug/queues");
	if (rc == 0 && !path)
		rc = -ENOMEM;
	if (rc == 0)
		rc = fetch_json(c, path, gb, g);
	if (rc == -ENOENT)
		rc = not_found(c, path);
	free(path);
	return rc;
}

static int run_status(struct cli_conn *c)
{
	struct sched_cli_fmt fmt = {c->o->wide ? 0 : term_width(), c->o->queue, c->o->limit};
	struct body qb, gb;
	cJSON *q = NULL, *g = NULL;
	int rc;

	body_init(&qb);
	body_init(&gb);
	rc = fetch_status(c, &qb, &q, &gb, &g);
	if (rc == 0 && c->o->json)
		rc = print_raw(&qb, &gb);
	else if (rc == 0)
		rc = sched_cli_format_status(stdout, q, g, &fmt);
	cJSON_Delete(q);
	cJSON_Delete(g);
	buf_free(&qb.b);
	buf_free(&gb.b);
	return rc == 0 ? 0 : 1;
}

/* "/debug/gangs/NS/NAME", each part escaped. */
static char *gang_path(struct cli_conn *c)
{
	const char *slash = strchr(c->o->gang, '/');
	char *ns = sched_cli__client_escape(c->http, c->o->gang, (size_t)(slash - c->o->gang));
	char *name = sched_cli__client_escape(c->http, slash + 1, 0);
	char *path = NULL;

	if (ns && name && asprintf(&path, "/debug/gangs/%s/%s", ns, name) < 0)
		path = NULL;
	free(ns);
	free(name);
	return path;
}

static int run_explain(struct cli_conn *c)
{
	char *path = gang_path(c);
	struct body b;
	cJSON *doc = NULL;
	int rc;

	body_init(&b);
	rc = path ? fetch_json(c, path, &b, &doc) : -ENOMEM;
	if (rc == -ENOENT)
		fprintf(stderr,
		        "%s: Muster has no waiting gang %s (bound, gone, or not Muster's: is its "
		        "schedulerName \"muster\"?)\n",
		        c->prog, c->o->gang);
	if (rc == 0 && c->o->json)
		rc = print_raw(&b, NULL);
	else if (rc == 0)
		rc = sched_cli_format_explain(stdout, doc);
	cJSON_Delete(doc);
	buf_free(&b.b);
	free(path);
	return rc == 0 ? 0 : 1;
}

/* Parse, connect, run; the client is set up and torn down around the
 * run. */
static int cli_main(const struct cli_command *cmd, int argc, char **argv,
                    int (*run)(struct cli_conn *))
{
	struct cli_opts o;
	struct cli_conn c = {&o, NULL, NULL, NULL};
	int rc = parse_args(cmd, argc, argv, &o);

	if (rc >= 0)
		return rc;
	c.prog = o.http.prog;
	rc = sched_cli__client_open(&o.http, &c.http);
	if (rc == -ENOMEM)
		fprintf(stderr, "%s: out of memory\n", o.http.prog);
	if (rc == 0)
		c.base = sched_cli__client_base(c.http);
	rc = rc == 0 ? run(&c) : 1;
	sched_cli__client_close(&c.http);
	return rc;
}

int sched_cli_status(int argc, char **argv)
{
	static const struct cli_command cmd = {"muster status", status_usage, status_flags, 0};

	return cli_main(&cmd, argc, argv, run_status);
}

int sched_cli_explain(int argc, char **argv)
{
	static const struct cli_command cmd = {"muster explain", explain_usage, explain_flags, 1};

	return cli_main(&cmd, argc, argv, run_explain);
}
