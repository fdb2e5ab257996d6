/*
 * Shared by kubeconfig.c and kubeconfig_yaml.c and nothing else: one
 * kubeconfig being read, the field tables' types, and the reading of its
 * libyaml document.
 */
#ifndef MUSTER_KUBEAPI_KUBECONFIG_INTERNAL_H
#define MUSTER_KUBEAPI_KUBECONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

#include "kubeapi/conn.h"

/* Longest "users[123].user.client-certificate-data" style field path. */
#define KUBEAPI__WHAT_LEN 96

/* One kubeconfig being read: where it is, its parsed tree, where errors go. */
struct kubeapi__loader {
	const char *file; /* as the caller named it, for messages */
	char *dir;        /* its absolute directory, for relative paths */
	yaml_document_t doc;
	char *err;
	size_t errlen;
};

enum kubeapi__field_kind {
	KUBEAPI__FIELD_STRING,     /* char *, no control characters */
	KUBEAPI__FIELD_PATH,       /* char *, resolved against the kubeconfig's directory */
	KUBEAPI__FIELD_DATA,       /* struct kubeapi_blob, from base64 */
	KUBEAPI__FIELD_BOOL,       /* int, from true/false */
	KUBEAPI__FIELD_UNSUPPORTED /* any value that is not null or empty is an error */
};

/* One key of a cluster or user mapping and where its value goes. */
struct kubeapi__field {
	const char *key;
	enum kubeapi__field_kind kind;
	size_t off; /* into struct kubeapi_conn */
	size_t cap;
	const char *why; /* KUBEAPI__FIELD_UNSUPPORTED: the message */
};

/* "FILE:LINE:COLUMN: message" for node n (1-based), or "FILE: message"
 * when there is no node; returns rc. */
__attribute__((format(printf, 4, 5))) int kubeapi__yaml_fail_at(struct kubeapi__loader *l,
                                                                const yaml_node_t *n, int rc,
                                                                const char *fmt, ...);

/* Absent, an empty value or a plain null (~, null): "not set". */
bool kubeapi__yaml_is_unset(const yaml_node_t *n);

/* 0 when n is of the type, else -EINVAL and a message naming what. */
int kubeapi__yaml_expect_type(struct kubeapi__loader *l, const yaml_node_t *n,
                              yaml_node_type_t type, const char *what);

/* The optional string under key in map into *s ("" when unset). */
int kubeapi__yaml_optional_text(struct kubeapi__loader *l, const yaml_node_t *map, const char *key,
                                const char *prefix, const char **s);

/* Wipes every scalar so tokens and keys do not linger in freed memory. */
void kubeapi__yaml_wipe_document(yaml_document_t *doc);

/* Finds the entry named name in the top-level list `list` ("clusters") and
 * gives its index (-1 if none) and its `inner` mapping (NULL if unset).
 * Every entry's shape is checked; a name that appears twice is an error.
 * O(entries). */
int kubeapi__yaml_find_named(struct kubeapi__loader *l, const yaml_node_t *root, const char *list,
                             const char *inner, const char *name, long *index,
                             const yaml_node_t **value);

/* Reads the fields of table[] found in map (the cluster or user mapping
 * at `prefix`) into c. Unknown keys are ignored. O(fields * pairs). */
int kubeapi__yaml_apply_fields(struct kubeapi__loader *l, const yaml_node_t *map,
                               const char *prefix, const struct kubeapi__field *table, size_t count,
                               struct kubeapi_conn *c);

/* Parses text into l->doc; a syntax error names its line and column, as
 * does nesting deeper than YAML_GUARD_MAX_DEPTH (yaml_guard.h). */
int kubeapi__yaml_parse(struct kubeapi__loader *l, const char *text, size_t len);

#endif /* MUSTER_KUBEAPI_KUBECONFIG_INTERNAL_H */
