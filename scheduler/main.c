/*
 * muster: the command-line face of the scheduler.
 *
 * Subcommands are declared once in a table; each returns a process exit
 * status. The scheduler loop itself (`muster run`) arrives with the planner.
 */
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "scheduler/version.h"

struct command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);
static int cmd_check_config(int argc, char **argv);

static const struct command commands[] = {
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
