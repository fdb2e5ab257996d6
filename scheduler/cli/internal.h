/*
 * What the files of the CLI share (cli.c: the commands; client.c: the
 * debug API over HTTP, the only file that knows libcurl; format.c: the
 * formatters). Nothing else includes this.
 */
#ifndef MUSTER_SCHEDULER_CLI_INTERNAL_H
#define MUSTER_SCHEDULER_CLI_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

#include "base/buf.h"

/** The string at key of object o; NULL when o is no object or the field
 *  is missing or not a string. The string is o's. */
const char *sched_cli__str_field(const cJSON *o, const char *key);

/** s on out with C0 controls and DEL as ' ' and C1 controls as '?', so
 *  text from a document or a server cannot drive the terminal. */
void sched_cli__put_clean(FILE *out, const char *s);

/* ---- client.c ------------------------------------------------------- */

/** The most a document may be: give a body buf this cap. */
#define SCHED_CLI_MAX_BODY ((size_t)64 << 20)

/** Where the debug API is and how to reach it. prog ("muster status")
 *  starts every message. addr "127.0.0.1:10251/" is read as
 *  "http://127.0.0.1:10251"; token_file (its first line is the bearer
 *  token) and cacert may be NULL. */
struct sched_cli_client_opts {
	const char *prog, *addr, *token_file, *cacert;
};

struct sched_cli_client;

/** A client for o (which must outlive it) in *out. 0, -ENOMEM, or -EIO
 *  / -EINVAL having said why on stderr. */
int sched_cli__client_open(const struct sched_cli_client_opts *o, struct sched_cli_client **out);

/** The address requests go to, for messages. */
const char *sched_cli__client_base(const struct sched_cli_client *c);

/** GET base+path, the body appended to body (an empty buf with its cap),
 *  *status the HTTP status. 0, -ENOMEM, or -EIO having said why. */
int sched_cli__client_get(struct sched_cli_client *c, const char *path, struct buf *body,
                          long *status);

/** s[0..n) (n 0: all of s) percent-encoded for a URL, malloc'd; NULL
 *  when out of memory. */
char *sched_cli__client_escape(struct sched_cli_client *c, const char *s, size_t n);

/** Tear down *c and set it NULL; NULL is fine. */
void sched_cli__client_close(struct sched_cli_client **c);

#endif /* MUSTER_SCHEDULER_CLI_INTERNAL_H */
