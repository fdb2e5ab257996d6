/*
 * muster: the command-line face of the scheduler.
 *
 * Subcommands are declared once in a table; each returns a process exit
 * status: 0 success, 1 failure, 2 a usage error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "scheduler/sched.h"
#include "scheduler/version.h"

struct command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);
static int cmd_check_config(int argc, char **argv);
static int cmd_run(int argc, char **argv);

static const struct command commands[] = {
    {"run", "run the scheduler (muster run --help for its flags)", cmd_run},
    {"version", "print the version and exit", cmd_version},
    {"check-config", "check a queue configuration FILE and exit", cmd_check_config},
    {"help", "show this help", cmd_help},
};

static int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("muster %s\n", MUSTER_VERSION);
	return 0;
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
    "  --scheduler-name NAME   the spec.schedulerName to take (default: the\n"
    "                          configuration's schedulerName, itself \"muster\" by default)\n"
    "  --debug-addr ADDR       where to serve /debug (host:port); not served yet\n"
    "  --period-ms N           a cycle at least every N ms (default 1000)\n"
    "  --help                  this text\n"
    "\n"
    "SIGTERM or SIGINT stops it cleanly (exit 0); SIGHUP reloads the configuration.\n";

static int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"kubeconfig", required_argument, NULL, 'k'},
	    {"context", required_argument, NULL, 'x'},
	    {"scheduler-name", required_argument, NULL, 'n'},
	    {"debug-addr", required_argument, NULL, 'd'},
	    {"period-ms", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct sched_options o = {0};
	char *end;
	long v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o.config = optarg;
			break;
		case 'k':
			o.kubeconfig = optarg;
			break;
		case 'x':
			o.context = optarg;
			break;
		case 'n':
			o.scheduler_name = optarg;
			break;
		case 'd':
			o.debug_addr = optarg;
			break;
		case 'p':
			v = strtol(optarg, &end, 10);
			if (*end || v < 10 || v > 600000) {
				fprintf(stderr, "muster run: --period-ms wants 10..600000\n");
				return 2;
			}
			o.period_ms = (unsigned)v;
			break;
		case 'h':
			fputs(run_usage, stdout);
			return 0;
		default:
			fputs(run_usage, stderr);
			return 2;
		}
	}
	if (optind != argc || !o.config) {
		fprintf(stderr, "muster run: %s\n\n%s",
		        o.config ? "unexpected arguments" : "--config is required", run_usage);
		return 2;
	}
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
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "muster: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
