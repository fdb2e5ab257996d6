/*
 * Checks that need the whole document: cohort and queue names are unique
 * (they share one set of names, as a queue's parent may be either), no
 * namespace is claimed by two queues, and defaultQueue names a queue.
 *
 * Names are remembered during the walk with their position, then sorted
 * once: O(n log n) for n names, where comparing each pair would be O(n^2)
 * for a file of thousands of queues.
 */
#include "config/config.h"
#include "config/config_internal.h"

#include <stdlib.h>
#include <string.h>

void config__seen_add(struct config__loader *l, struct config__seen_list *list, const char *name,
                      const char *kind, const char *owner, const yaml_node_t *n)
{
	if (list->n == list->cap) {
		size_t cap = list->cap ? 2 * list->cap : 64;
		struct config__seen *v = realloc(list->v, cap * sizeof(*v));

		if (!v) {
			l->nomem = true;
			return;
		}
		list->v = v;
		list->cap = cap;
	}
	list->v[list->n++] = (struct config__seen){name, owner, kind, n->start_mark};
}

/* By name, then by position, so the first of equal names is the one
 * defined first and the later ones are reported. */
static int by_name(const void *a, const void *b)
{
	const struct config__seen *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->mark.line != y->mark.line)
		return x->mark.line < y->mark.line ? -1 : 1;
	return x->mark.column < y->mark.column ? -1 : x->mark.column > y->mark.column;
}

/* Equal names are adjacent after sorting, the earliest first in its run;
 * each later one is reported against it. */
static void check_duplicate_names(struct config__loader *l)
{
	struct config__seen *v = l->names.v;

	for (size_t i = 1, first = 0; i < l->names.n; i++) {
		if (strcmp(v[first].name, v[i].name) != 0) {
			first = i;
			continue;
		}
		config__error_at(l, v[i].mark,
		                 "name '%s' is already used by the %s at line %zu; cohorts and "
		                 "queues share one set of names",
		                 v[i].name, v[first].kind, (size_t)v[first].mark.line + 1);
	}
}

static void check_duplicate_namespaces(struct config__loader *l)
{
	struct config__seen *v = l->namespaces.v;

	for (size_t i = 1, first = 0; i < l->namespaces.n; i++) {
		if (strcmp(v[first].name, v[i].name) != 0) {
			first = i;
			continue;
		}
		config__error_at(
		    l, v[i].mark,
		    "namespace '%s' is claimed by queue '%s' (line %zu) and by queue '%s'",
		    v[i].name, v[first].owner ? v[first].owner : "", (size_t)v[first].mark.line + 1,
		    v[i].owner ? v[i].owner : "");
	}
}

static const yaml_node_t *root_value(struct config__loader *l, const yaml_node_t *root,
                                     const char *key)
{
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
	     p++) {
		const yaml_node_t *k = config__node(l, p->key);

		if (k->type == YAML_SCALAR_NODE &&
		    strcmp((const char *)k->data.scalar.value, key) == 0)
			return config__node(l, p->value);
	}
	return NULL;
}

static void check_default_queue(struct config__loader *l, const yaml_node_t *root)
{
	const char *name = l->cfg->default_queue;
	const struct config__seen *hit = NULL;

	if (!name)
		return;
	for (size_t i = 0; !hit && i < l->names.n; i++)
		if (strcmp(l->names.v[i].name, name) == 0)
			hit = &l->names.v[i];
	if (hit && strcmp(hit->kind, "queue") == 0)
		return;
	config__error(l, root_value(l, root, "defaultQueue"),
	              hit ? "defaultQueue '%s' names a cohort; expected the name of a queue"
	                  : "defaultQueue '%s' names no queue",
	              name);
}

void config__check_names(struct config__loader *l, const yaml_node_t *root)
{
	if (l->names.n)
		qsort(l->names.v, l->names.n, sizeof(*l->names.v), by_name);
	if (l->namespaces.n)
		qsort(l->namespaces.v, l->namespaces.n, sizeof(*l->namespaces.v), by_name);
	check_duplicate_names(l);
	check_duplicate_namespaces(l);
	check_default_queue(l, root);
}
