/*
 * What the two files of the CLI share (cli.c: the commands and the
 * fetching, cli_format.c: the formatters). Nothing else includes this.
 */
#ifndef MUSTER_SCHEDULER_CLI_INTERNAL_H
#define MUSTER_SCHEDULER_CLI_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdio.h>

/** The string at key of object o; NULL when o is no object or the field
 *  is missing or not a string. The string is o's. */
const char *sched_cli__str_field(const cJSON *o, const char *key);

/** s on out with C0 controls and DEL as ' ' and C1 controls as '?', so
 *  text from a document or a server cannot drive the terminal. */
void sched_cli__put_clean(FILE *out, const char *s);

#endif /* MUSTER_SCHEDULER_CLI_INTERNAL_H */
