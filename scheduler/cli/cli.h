/*
 * `muster status` and `muster explain NS/NAME`: clients of a running
 * Muster's debug API (scheduler/debug/DEBUG.md), for people at a terminal.
 *
 * Layers, so the output is testable without a server: the commands
 * (cli.c) fetch documents through the one HTTP client (client.c: libcurl,
 * blocking, 10 s timeouts, at most 64 MiB a response) and hand the parsed
 * cJSON to the formatters (format.c), which are pure: a document in, text
 * on a FILE * out. A
 * formatter never trusts its document: a missing or mistyped field prints
 * as `?` and the rest still prints.
 */
#ifndef MUSTER_SCHEDULER_CLI_H
#define MUSTER_SCHEDULER_CLI_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

/* How sched_cli_format_status() lays out its tables. */
struct sched_cli_fmt {
	unsigned width;    /* a gang line is cut to this many columns; 0: never cut */
	const char *queue; /* only the gangs of this queue; NULL: all */
	unsigned limit;    /* at most this many gangs; 0: all the document has */
};

/** `muster status [options]`; argv[0] is "status". Returns the process
 *  exit status: 0, 1 when the API cannot be read, 2 for a usage error. */
int sched_cli_status(int argc, char **argv);

/** `muster explain [options] NS/NAME`; argv[0] is "explain". Exit status
 *  as sched_cli_status(); 1 also when Muster has no such gang. */
int sched_cli_explain(int argc, char **argv);

/** The queue table of a /debug/queues document, then the pending gangs of
 *  a /debug/gangs document. Either may be NULL or malformed. Returns 0,
 *  -ENOMEM, or -EIO when writing to out failed. */
int sched_cli_format_status(FILE *out, const cJSON *queues, const cJSON *gangs,
                            const struct sched_cli_fmt *opt);

/** One /debug/gangs/NS/NAME document explained: the gang, what blocks it,
 *  what would let it in, its pods. doc may be NULL or malformed. Returns 0,
 *  -ENOMEM or -EIO as sched_cli_format_status(). */
int sched_cli_format_explain(FILE *out, const cJSON *doc);

/** An amount of resource as a person writes it into buf (always
 *  NUL-terminated): cpu in cores ("0.5", "8"), memory, ephemeral-storage
 *  and hugepages-* in bytes with a suffix ("64Gi", "500M", "1.5Gi"), any
 *  other resource as a count ("8"). A "@flavor" suffix of the name is
 *  ignored. Returns the length snprintf() would give. */
int sched_cli_format_amount(char *buf, size_t size, const char *resource, double v);

/** A duration of whole seconds as "42s", "5m3s", "2h5m", "3d4h" into buf
 *  (always NUL-terminated; negative counts as 0). Returns as snprintf(). */
int sched_cli_format_duration(char *buf, size_t size, double seconds);

#endif /* MUSTER_SCHEDULER_CLI_H */
