/*
 * Shared inside config/: the loader that walks one libyaml document, the
 * tables of keys, and the error recorder. Not for use outside config/.
 *
 * Files: errors.c (messages), fields.c (the table-driven walk of mappings
 * and the scalar kinds), model.c (the tables of the format and the lists
 * in it), quota_map.c (quota maps), names.c (duplicate names and namespaces), load.c (reading,
 * freeing, lookups, check-config).
 */
#ifndef MUSTER_CONFIG_CONFIG_INTERNAL_H
#define MUSTER_CONFIG_CONFIG_INTERNAL_H

#include "config/config.h"

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

/* A name seen while walking, kept to find duplicates once at the end. */
struct config__seen {
	const char *name;
	const char *owner; /* for namespaces: the queue that claims it */
	const char *kind;  /* "cohort" or "queue" */
	yaml_mark_t mark;
};

struct config__seen_list {
	struct config__seen *v;
	size_t n, cap;
};

/* Mappings walked before the load gives up: aliases let a small document
 * name one node many times, and this bounds the work that can cause. */
#define CONFIG__WALK_BUDGET 100000

struct config__loader {
	const char *file;
	yaml_document_t doc;
	struct config_errors *errs; /* may be NULL: then errors are only counted */
	size_t n_errors;
	bool nomem; /* sticky: an allocation failed, the load returns -ENOMEM */
	size_t budget;
	int depth;
	struct config *cfg;
	struct config__seen_list names;      /* cohorts and queues */
	struct config__seen_list namespaces; /* with the queue as owner */
	/* The (resource, flavor) pairs quotas name, to bound the slots. */
	struct {
		size_t resource, flavor;
	} pairs[CONFIG_MAX_SLOTS];
	size_t n_pairs;
	bool slots_reported;
};

/* The kinds of value a key may hold. */
enum config__kind {
	CONFIG__STRING,   /* char *, non-empty */
	CONFIG__STRINGS,  /* struct config_strings, each non-empty */
	CONFIG__INT,      /* int64_t within [min, max] */
	CONFIG__DURATION, /* int64_t milliseconds */
	CONFIG__BOOL,     /* bool: true or false */
	CONFIG__ENUM,     /* int, index into names */
	CONFIG__MAP,      /* a mapping whose keys (sub) fill the same object */
	CONFIG__CUSTOM,   /* fn */
};

struct config__table;

/* One key of a mapping: declared once, here, with its type and bounds. */
struct config__field {
	const char *key;
	enum config__kind kind;
	size_t offset;
	bool required;
	int64_t min, max;
	const char *const *names; /* CONFIG__ENUM, NULL-terminated */
	const struct config__table *sub;
	void (*fn)(struct config__loader *l, const yaml_node_t *n, void *obj);
};

struct config__table {
	const char *what; /* "queue", "quota of 'cpu'": used in messages */
	const struct config__field *fields;
	size_t n;
};

/* Records "FILE:LINE:COLUMN: message" at node n (or "FILE: message" when
 * n is NULL). */
__attribute__((format(printf, 3, 4))) void
config__error(struct config__loader *l, const yaml_node_t *n, const char *fmt, ...);
/* As config__error() at an explicit mark. */
__attribute__((format(printf, 3, 4))) void config__error_at(struct config__loader *l,
                                                            yaml_mark_t mark, const char *fmt, ...);
/* Sorts the kept messages by position, so they read in document order. */
void config__errors_sort(struct config_errors *errs);

yaml_node_t *config__node(struct config__loader *l, yaml_node_item_t id);
bool config__is_null(const yaml_node_t *n);
/* "a mapping", "a list" or "a string". */
const char *config__type_name(const yaml_node_t *n);
/* Checks n's type; records "expected TYPE for 'what', got ..." if not. */
bool config__expect(struct config__loader *l, const yaml_node_t *n, yaml_node_type_t type,
                    const char *what);
/* A copy of scalar n's text, checked for length, NUL bytes and (if
 * nonempty) emptiness; NULL after recording an error or on no memory. */
char *config__string(struct config__loader *l, const yaml_node_t *n, const char *what);
/* calloc that records a failure in l->nomem. */
/* Reads at most CONFIG_MAX_FILE bytes of path into a new buffer (*text,
 * freed by the caller). 0, -EFBIG, -ENOMEM or the negative errno of the
 * failed open or read. */
int config__read_file(const char *path, char **text, size_t *len);

/* Reads a sequence of strings into dst (empty on entry); false after
 * recording that n is not a sequence. */
bool config__strings(struct config__loader *l, const yaml_node_t *n, const char *what,
                     struct config_strings *dst);
void *config__calloc(struct config__loader *l, size_t n, size_t size);

/* Walks mapping n by table t into obj: each key of the table is applied,
 * keys outside it and missing required keys are errors. */
void config__walk(struct config__loader *l, const yaml_node_t *n, const struct config__table *t,
                  void *obj);

/* The value of a queue's "quota" key into the queue obj; quota_map.c. */
void config__set_quota(struct config__loader *l, const yaml_node_t *n, void *obj);

/* Top-level table; model.c. */
extern const struct config__table config__root_table;

/* Remembers a name for the duplicate checks; names.c. */
void config__seen_add(struct config__loader *l, struct config__seen_list *list, const char *name,
                      const char *kind, const char *owner, const yaml_node_t *n);
/* Reports duplicate names and namespaces, and a defaultQueue naming no
 * queue. O(n log n) in the names. */
void config__check_names(struct config__loader *l, const yaml_node_t *root);

void config__free_queue(struct config_queue *q);
void config__free_cohort(struct config_cohort *c);
void config__free_strings(struct config_strings *s);

#endif /* MUSTER_CONFIG_CONFIG_INTERNAL_H */
