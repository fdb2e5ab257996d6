/*
 * Shared by conn.c, kubeconfig.c and kubeconfig_yaml.c and nothing else:
 * the caps on what is read from a kubeconfig or the environment, and the
 * helpers for messages, secrets, paths and capped file reads.
 */
#ifndef MUSTER_KUBEAPI_CONN_INTERNAL_H
#define MUSTER_KUBEAPI_CONN_INTERNAL_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "kubeapi/conn.h"

/* Caps on strings read from a kubeconfig or the environment, in bytes. */
#define KUBEAPI__NAME_CAP  1024           /* context, cluster and user names */
#define KUBEAPI__URL_CAP   2048           /* server */
#define KUBEAPI__HOST_CAP  253            /* tls-server-name, KUBERNETES_SERVICE_HOST */
#define KUBEAPI__PATH_CAP  (PATH_MAX - 1) /* file names, before and after resolving */
#define KUBEAPI__TOKEN_CAP KUBEAPI_TOKEN_FILE_MAX
#define KUBEAPI__DATA_CAP  KUBEAPI_KUBECONFIG_MAX /* base64 text of a -data field */

/* Writes the message to err (when there is room) and returns rc. */
__attribute__((format(printf, 4, 0))) int kubeapi__conn_vfail(char *err, size_t errlen, int rc,
                                                              const char *fmt, va_list ap);

__attribute__((format(printf, 4, 5))) int kubeapi__conn_fail(char *err, size_t errlen, int rc,
                                                             const char *fmt, ...);

/* Wipes and frees *p, then clears it. */
void kubeapi__conn_free_secret(char **p, size_t len);

/* True when s[0..len) holds a control character (below 0x20, or DEL). */
bool kubeapi__conn_has_control_char(const char *s, size_t len);

/* A space as isspace() sees it in the C locale. */
bool kubeapi__conn_is_space(char c);

/* dir + "/" + name in a new string; -ENAMETOOLONG past KUBEAPI__PATH_CAP. */
int kubeapi__conn_join_path(const char *dir, const char *name, char **out);

/* Reads the regular file at path, at most cap bytes, into a new
 * NUL-terminated buffer (cap + 1 bytes are allocated) and gives its mtime.
 * -EFBIG when it is longer than cap, -EINVAL when it is not a regular file
 * (opened non-blocking, so a FIFO cannot stall the caller), else -errno. */
int kubeapi__conn_read_capped(const char *path, size_t cap, char **buf, size_t *len,
                              struct timespec *mtime);

/* Reads the token file once so that a bad path fails now; primes the cache
 * without spending the first kubeapi_conn_token() check. */
int kubeapi__conn_prime_token(struct kubeapi_conn *c);

#endif /* MUSTER_KUBEAPI_CONN_INTERNAL_H */
