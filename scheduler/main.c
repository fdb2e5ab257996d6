/*
 * muster: the command-line face of the scheduler.
 *
 * Subcommands are declared once in a table; each returns a process exit
 * status: 0 success, 1 failure, 2 a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/heap.h"
#include "config/config.h"
#include "scheduler/cli/cli.h"
#include "scheduler/sched.h"
#include "scheduler/version.h"
#include "sim/sim.h"

struct command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);
static int cmd_check_config(int argc, char **argv);
static int cmd_run(int argc, char **argv);
static int cmd_simulate(int argc, char **argv);

static const struct command commands[] = {
    {"run", "run the scheduler (muster run --help for its flags)", cmd_run},
    {"version", "print the version and exit", cmd_version},
    {"check-config", "check a queue configuration FILE and exit", cmd_check_config},
    {"status", "the queues and pending gangs of a running muster (reads its debug API)",
     sched_cli_status},
    {"explain", "why a gang waits and what would let it in: muster explain NS/NAME",
     sched_cli_explain},
    {"simulate", "play a trace of gangs through the planner under queue files, side by side",
     cmd_simulate},
    {"snapshot", "write the cluster as muster simulate --snapshot reads it (from the API server)",
     sched_snapshot_main},
    {"help", "show this help", cmd_help},
};

static int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("muster %s\n", MUSTER_VERSION);
	return 0;
}

/* --kubeconfig's snapshot: the API server read by this layer, for sim/. */
static int fetch_snapshot(const char *kubeconfig, const char *context, cJSON **doc, char *err,
                          size_t errlen)
{
	return sched_snapshot(kubeconfig, context, 0, doc, err, errlen);
}

/* The work is sim/'s, so its tests can run it. */
static int cmd_simulate(int argc, char **argv)
{
	return sim_main(argc, argv, stdout, stderr, fetch_snapshot);
}

/* The work is config_check()'s, so the unit tests can run it. */
static int cmd_check_config(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: muster check-config FILE\n");
		return 2;
	}
	return config_check(argv[1], stdout, stderr);
}

static const char run_usage[] =
    "usage: muster run --config FILE [options]\n"
    "\n"
    "Schedule the pods whose spec.schedulerName is Muster's, gang by gang.\n"
    "\n"
    "  --config FILE           the queue configuration (required); reloaded when it\n"
    "                          changes and on SIGHUP (see config/README.md)\n"
    "  --kubeconfig PATH       how to reach the API server; without it, the in-cluster\n"
    "                          service account (KUBERNETES_SERVICE_HOST and\n"
    "                          /var/run/secrets/kubernetes.io/serviceaccount)\n"
    "  --context NAME          a kubeconfig context other than the current one\n"
    "  --scheduler-name NAME   a spec.schedulerName to take; repeat it to take several\n"
    "                          (default: the configuration's schedulerNames or\n"
    "                          schedulerName, itself \"muster\" by default)\n"
    "  --debug-addr ADDR       serve /healthz, /readyz, /metrics and /debug on host:port\n"
    "                          (e.g. 127.0.0.1:10251); any address but loopback also\n"
    "                          needs the three flags below\n"
    "  --debug-tls-cert FILE   serve HTTPS with this PEM certificate chain ...\n"
    "  --debug-tls-key FILE    ... and this PEM private key\n"
    "  --debug-token-file FILE every request but /healthz and /readyz must carry\n"
    "                          \"Authorization: Bearer\" with the token in FILE\n"
    "  --probe-addr ADDR       also serve /healthz, /livez and /readyz alone, as plain\n"
    "                          HTTP on host:port (e.g. 0.0.0.0:8081), for the kubelet: \n"
    "                          no debug client can take its connections\n"
    "  --log-format text|json  one line per event, as text (default) or JSON\n"
    "  --log-level LEVEL       debug, info (default), warning or error\n"
    "  --period-ms N           a cycle at least every N ms (default 1000)\n"
    "  --max-object-bytes N    an API object whose JSON is larger is left out of the\n"
    "                          cache, logged and counted in\n"
    "                          muster_skipped_objects_total (default 16777216, above\n"
    "                          anything the API server stores; 1024..67108864, the\n"
    "                          cap on one response)\n"
    "  --leader-elect          one of several replicas: only the holder of a\n"
    "                          coordination.k8s.io Lease schedules, the others stand by\n"
    "  --lease-namespace NS    the Lease's namespace (default: $POD_NAMESPACE, else\n"
    "                          muster-system)\n"
    "  --lease-name NAME       the Lease's name (default muster)\n"
    "  --identity ID           this replica's holderIdentity, unique (default:\n"
    "                          $HOSTNAME_<random>)\n"
    "  --lease-duration S      a standby takes over after S seconds without a renew\n"
    "                          (default 15)\n"
    "  --renew-deadline S      a leader that cannot renew for S seconds stops with\n"
    "                          exit status 1 (default 10)\n"
    "  --retry-period S        seconds between tries (default 2); whole seconds, and\n"
    "                          retry period < renew deadline < lease duration\n"
    "  --cycle-delay-ms N      for tests: each cycle takes N ms longer (0..60000), as\n"
    "                          one of a very large cluster does\n"
    "  --forecast-share PCT    every 10 s, forecast when each waiting gang starts in\n"
    "                          at most PCT percent of the cycles' CPU time since\n"
    "                          (at least 2 ms, at most 4 cycles' time; default 15;\n"
    "                          0: no forecast, only reservations say)\n"
    "  --usage-namespace NS    where fair sharing's memory is kept (fairSharing.halfLife):\n"
    "                          a ConfigMap in NS (default: $POD_NAMESPACE, else\n"
    "                          muster-system) ...\n"
    "  --usage-configmap NAME  ... called NAME (default muster-fair-share); read when\n"
    "                          this instance starts leading, written by the leader\n"
    "  --usage-write-period S  at most every S seconds (1..3600, default 60)\n"
    "  --check-state           debug: each cycle checks the state the planner keeps\n"
    "                          across cycles against a rebuild, and warns if they differ\n"
    "  --help                  this text\n"
    "\n"
    "SIGTERM or SIGINT stops it cleanly (exit 0); SIGHUP reloads the configuration.\n";

/* --log-format and --log-level, from their tables. */
static int log_option(struct sched_options *o, int c, const char *v)
{
	static const char *const formats[] = {"text", "json"};
	static const char *const levels[] = {"debug", "info", "warning", "error"};

	for (int k = 0; c == 'F' && k < 2; k++)
		if (strcmp(v, formats[k]) == 0) {
			o->log_json = k == 1;
			return 0;
		}
	for (int k = 0; c == 'L' && k < 4; k++)
		if (strcmp(v, levels[k]) == 0) {
			o->log_level = k;
			return 0;
		}
	fprintf(stderr, "muster run: --%s wants %s\n", c == 'F' ? "log-format" : "log-level",
	        c == 'F' ? "text or json" : "debug, info, warning or error");
	return -EINVAL;
}

/* --lease-namespace, --lease-name, --identity, and the three durations in
 * whole seconds (1..86400). */
static int lease_option(struct sched_options *o, int c, const char *v)
{
	unsigned *ms = c == 'D' ? &o->lease_duration_ms : c == 'R' ? &o->renew_ms : &o->retry_ms;
	char *end;
	long n;

	if (c == 'N' || c == 'M' || c == 'I') {
		*(c == 'N' ? &o->lease_namespace : c == 'M' ? &o->lease_name : &o->identity) = v;
		return 0;
	}
	n = strtol(v, &end, 10);
	if (end == v || *end || n < 1 || n > 86400) {
		fprintf(stderr, "muster run: --%s wants whole seconds, 1..86400\n",
		        c == 'D'   ? "lease-duration"
		        : c == 'R' ? "renew-deadline"
		                   : "retry-period");
		return -EINVAL;
	}
	*ms = (unsigned)n * 1000;
	return 0;
}

/* $HOSTNAME (else the host name) and a random suffix, so that two
 * replicas on one host, or a restart, never share an identity. */
static void default_identity(char *id, size_t n)
{
	const char *host = getenv("HOSTNAME");
	char name[128] = "muster";
	uint32_t rnd;

	if (!host || !*host) {
		if (gethostname(name, sizeof(name)) == 0)
			name[sizeof(name) - 1] = 0;
		host = name;
	}
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) == (ssize_t)sizeof(rnd))
		snprintf(id, n, "%.200s_%08x", host, (unsigned)rnd);
	else
		snprintf(id, n, "%.200s_%ld", host, (long)getpid());
}

/* Leader election's defaults (a default identity goes to id[n]) and its
 * rule: retry period < renew deadline < lease duration. */
static int lease_defaults(struct sched_options *o, char *id, size_t n)
{
	const char *ns = getenv("POD_NAMESPACE");

	if (!o->lease_namespace)
		o->lease_namespace = ns && *ns ? ns : "muster-system";
	if (!o->lease_name)
		o->lease_name = "muster";
	if (!o->identity) {
		default_identity(id, n);
		o->identity = id;
	}
	o->lease_duration_ms = o->lease_duration_ms ? o->lease_duration_ms : 15000;
	o->renew_ms = o->renew_ms ? o->renew_ms : 10000;
	o->retry_ms = o->retry_ms ? o->retry_ms : 2000;
	if (o->retry_ms < o->renew_ms && o->renew_ms < o->lease_duration_ms)
		return 0;
	fprintf(stderr,
	        "muster run: leader election wants --retry-period (%u s) < --renew-deadline "
	        "(%u s) < --lease-duration (%u s)\n",
	        o->retry_ms / 1000, o->renew_ms / 1000, o->lease_duration_ms / 1000);
	return -EINVAL;
}

/* Where fair sharing's memory is kept: beside the Lease by default. */
static void usage_defaults(struct sched_options *o)
{
	const char *ns = getenv("POD_NAMESPACE");

	if (!o->usage_ns)
		o->usage_ns = o->lease_namespace ? o->lease_namespace
		              : ns && *ns        ? ns
		                                 : "muster-system";
	if (!o->usage_name)
		o->usage_name = "muster-fair-share";
	if (!o->usage_period_ms)
		o->usage_period_ms = 60 * 1000;
}

static const struct option run_longopts[] = {
    {"config", required_argument, NULL, 'c'},
    {"kubeconfig", required_argument, NULL, 'k'},
    {"context", required_argument, NULL, 'x'},
    {"scheduler-name", required_argument, NULL, 'n'},
    {"debug-addr", required_argument, NULL, 'd'},
    {"probe-addr", required_argument, NULL, 'b'},
    {"debug-tls-cert", required_argument, NULL, 'C'},
    {"debug-tls-key", required_argument, NULL, 'K'},
    {"debug-token-file", required_argument, NULL, 'T'},
    {"log-format", required_argument, NULL, 'F'},
    {"log-level", required_argument, NULL, 'L'},
    {"period-ms", required_argument, NULL, 'p'},
    {"max-object-bytes", required_argument, NULL, 'B'},
    {"cycle-delay-ms", required_argument, NULL, 'Y'},
    {"check-state", no_argument, NULL, 'S'},
    {"forecast-share", required_argument, NULL, 'G'},
    {"usage-namespace", required_argument, NULL, 'u'},
    {"usage-configmap", required_argument, NULL, 'U'},
    {"usage-write-period", required_argument, NULL, 'W'},
    {"leader-elect", no_argument, NULL, 'E'},
    {"lease-namespace", required_argument, NULL, 'N'},
    {"lease-name", required_argument, NULL, 'M'},
    {"identity", required_argument, NULL, 'I'},
    {"lease-duration", required_argument, NULL, 'D'},
    {"renew-deadline", required_argument, NULL, 'R'},
    {"retry-period", required_argument, NULL, 'P'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The flags that only keep their argument. */
static const struct {
	int c;
	size_t off; /* of a const char * in struct sched_options */
} run_strings[] = {
    {'c', offsetof(struct sched_options, config)},
    {'k', offsetof(struct sched_options, kubeconfig)},
    {'x', offsetof(struct sched_options, context)},
    {'d', offsetof(struct sched_options, debug_addr)},
    {'b', offsetof(struct sched_options, probe_addr)},
    {'C', offsetof(struct sched_options, debug_cert)},
    {'K', offsetof(struct sched_options, debug_key)},
    {'T', offsetof(struct sched_options, debug_token)},
    {'u', offsetof(struct sched_options, usage_ns)},
    {'U', offsetof(struct sched_options, usage_name)},
};

/* --period-ms, --cycle-delay-ms, --forecast-share, --usage-write-period and
 * --max-object-bytes: 0, or -EINVAL (said on stderr). */
static int number_option(struct sched_options *o, int c, const char *arg)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (c == 'W') {
		if (end == arg || *end || v < 1 || v > 3600) {
			fprintf(stderr, "muster run: --usage-write-period wants 1..3600\n");
			return -EINVAL;
		}
		o->usage_period_ms = (unsigned)v * 1000;
		return 0;
	}
	if (c == 'Y') {
		if (end == arg || *end || v < 0 || v > 60000) {
			fprintf(stderr, "muster run: --cycle-delay-ms wants 0..60000\n");
			return -EINVAL;
		}
		o->cycle_delay_ms = (unsigned)v;
		return 0;
	}
	if (c == 'G') {
		if (end == arg || *end || v < 0 || v > 100) {
			fprintf(stderr, "muster run: --forecast-share wants 0..100\n");
			return -EINVAL;
		}
		o->forecast_share = (unsigned)v;
		o->forecast_off = v == 0;
		return 0;
	}
	if (c == 'p') {
		if (*end || v < 10 || v > 600000) {
			fprintf(stderr, "muster run: --period-ms wants 10..600000\n");
			return -EINVAL;
		}
		o->period_ms = (unsigned)v;
		return 0;
	}
	if (end == arg || *end || v < 1024 || v > (64L << 20)) {
		fprintf(stderr, "muster run: --max-object-bytes wants 1024..67108864\n");
		return -EINVAL;
	}
	o->max_object = (size_t)v;
	return 0;
}

/* One flag of `muster run` (not --help): 0, or -EINVAL (said on stderr). */
static int run_option(struct sched_options *o, int c, const char *arg)
{
	for (size_t k = 0; k < sizeof(run_strings) / sizeof(run_strings[0]); k++)
		if (run_strings[k].c == c) {
			*(const char **)((char *)o + run_strings[k].off) = arg;
			return 0;
		}
	switch (c) {
	case 'n':
		if (o->nscheduler_names == SCHED_MAX_NAMES) {
			fprintf(stderr, "muster run: at most %d --scheduler-name\n",
			        SCHED_MAX_NAMES);
			return -EINVAL;
		}
		o->scheduler_names[o->nscheduler_names++] = arg;
		return 0;
	case 'F':
	case 'L':
		return log_option(o, c, arg) < 0 ? -EINVAL : 0;
	case 'p':
	case 'B':
	case 'Y':
	case 'G':
	case 'W':
		return number_option(o, c, arg);
	case 'E':
		o->leader_elect = true;
		return 0;
	case 'S':
		o->check_state = true;
		return 0;
	case 'N':
	case 'M':
	case 'I':
	case 'D':
	case 'R':
	case 'P':
		return lease_option(o, c, arg) < 0 ? -EINVAL : 0;
	default:
		fputs(run_usage, stderr);
		return -EINVAL;
	}
}

static int cmd_run(int argc, char **argv)
{
	struct sched_options o = {.log_level = SCHED_INFO};
	char identity[256]; /* a default --identity: outlives sched_run() */
	int c;

	heap_keep_big_blocks(); /* the planner's big arrays, reused (base/heap.h) */
	optind = 1;
	while ((c = getopt_long(argc, argv, "", run_longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(run_usage, stdout);
			return 0;
		}
		if (run_option(&o, c, optarg) < 0)
			return 2;
	}
	if (optind != argc || !o.config) {
		fprintf(stderr, "muster run: %s\n\n%s",
		        o.config ? "unexpected arguments" : "--config is required", run_usage);
		return 2;
	}
	if (o.leader_elect && lease_defaults(&o, identity, sizeof(identity)) < 0)
		return 2;
	usage_defaults(&o);
	return sched_run(&o);
}

static void usage(FILE *out)
{
	size_t i;

	fprintf(out, "usage: muster <command> [options]\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-14s %s\n", commands[i].name, commands[i].summary);
}

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	usage(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(argc - 1, argv + 1);
	if (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "simulate") == 0)
		heap_huge_pages(argv); /* base/heap.h; returns when it did not exec */
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "muster: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
