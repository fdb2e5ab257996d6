/*
 * Where the API server is and how to authenticate to it: what a kubeconfig
 * file or the in-cluster environment says, before any connection is made.
 *
 * Filled in by kubeapi_conn_from_kubeconfig() (kubeconfig.c) or
 * kubeapi_conn_in_cluster() (conn.c) and read by the HTTP engine (http.c,
 * http_easy.c). Every string is owned by the struct and freed by
 * kubeapi_conn_free().
 */
#ifndef MUSTER_KUBEAPI_CONN_H
#define MUSTER_KUBEAPI_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/yaml_guard.h"

/** Largest kubeconfig file read, in bytes: the cap of every YAML file. */
#define KUBEAPI_KUBECONFIG_MAX YAML_GUARD_MAX_BYTES

/** Largest token file read, in bytes, before whitespace is trimmed. */
#define KUBEAPI_TOKEN_FILE_MAX (64 * 1024)

/** How often kubeapi_conn_token() may stat() the token file, in ms. */
#define KUBEAPI_TOKEN_RECHECK_MS 10000

/* Bytes held in memory, e.g. a decoded certificate-authority-data. */
struct kubeapi_blob {
	char *data;
	size_t len;
};

struct kubeapi_conn {
	char *server;                /* "https://host:port[/prefix]", no trailing '/' */
	char *ca_file;               /* PEM bundle to verify the server, or NULL */
	struct kubeapi_blob ca_data; /* PEM bytes, or {NULL, 0} */
	char *cert_file, *key_file;  /* client certificate and key (PEM), or NULL */
	struct kubeapi_blob cert_data, key_data;
	char *token;                  /* static bearer token, or NULL */
	char *token_file;             /* bearer token read from here (rotated), or NULL */
	int insecure_skip_tls_verify; /* only when the kubeconfig says so */
	char *tls_server_name;        /* verify the server's cert for this name, or NULL */

	/* Token file cache, managed by kubeapi_conn_token(). */
	char *token_cached;
	struct timespec token_mtime;
	uint64_t token_checked_ms;
};

/** Load a kubeconfig file: `context` or, when NULL, the current-context.
 *  Relative file paths in the file are resolved against its directory.
 *  Returns 0, -ENOENT (file, context, cluster or user missing), -EINVAL
 *  (malformed; a message naming file:line:column goes to err), -ENOMEM.
 *  On failure *out is untouched.
 *  Also: -EFBIG when the file exceeds KUBEAPI_KUBECONFIG_MAX bytes,
 *  -ENOTSUP when the chosen user or cluster needs something this loader
 *  does not do (basic auth, exec or auth-provider plugins, impersonation,
 *  proxy-url), and the negated errno of open()/read() for other I/O
 *  failures, including a certificate, key or token file that cannot be read.
 *  err is always NUL-terminated when errlen > 0; it may be NULL. Cost: one
 *  bounded read of the kubeconfig and of a token file, an access() per
 *  referenced file. */
int kubeapi_conn_from_kubeconfig(const char *path, const char *context, struct kubeapi_conn *out,
                                 char *err, size_t errlen);

/** In-cluster configuration: KUBERNETES_SERVICE_HOST/PORT, the service
 *  account token file and CA under `sa_dir` (NULL means
 *  /var/run/secrets/kubernetes.io/serviceaccount). Returns 0, -ENOENT when
 *  not in a cluster, -ENOMEM.
 *  Also: -EINVAL when the variables hold something that is not a host and
 *  a port, the negated errno when the token or CA file cannot be read
 *  (-ENOENT when it is missing); a message goes to err (may be NULL). The
 *  token is read once here to check it, then kept as token_file so that
 *  rotation is picked up; no namespace is read. */
int kubeapi_conn_in_cluster(const char *sa_dir, struct kubeapi_conn *out, char *err, size_t errlen);

/** The bearer token to send now, or NULL for none. With a token file, the
 *  file is stat()ed at most once per 10 s (now_ms is a monotonic clock) and
 *  re-read when its mtime changed, so a rotated token is picked up without a
 *  restart. The returned string stays valid until the next call.
 *  Cost: this is a small synchronous stat() and, after a change, a read of
 *  at most KUBEAPI_TOKEN_FILE_MAX bytes on the calling (loop) thread, done
 *  at most once per KUBEAPI_TOKEN_RECHECK_MS, like client-go's cached token
 *  source. Surrounding whitespace is trimmed. If the file vanishes, grows
 *  past the cap, is empty or holds control characters, the last good token
 *  (or the static token) is kept and the file is tried again later. */
const char *kubeapi_conn_token(struct kubeapi_conn *c, uint64_t now_ms);

/** Free every string and zero the struct; safe on a zeroed struct. Secrets
 *  (tokens, client key bytes) are wiped before they are freed. */
void kubeapi_conn_free(struct kubeapi_conn *c);

#endif /* MUSTER_KUBEAPI_CONN_H */
