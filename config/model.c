/*
 * The format itself: one table per kind of mapping (root, flavor,
 * topology, backfill, fairSharing, cohort, queue, preemption, quota entry) and the
 * handlers for the values that are more than a scalar: the lists of
 * flavors, cohorts and queues, and node labels. Quota maps are
 * quota_map.c's.
 *
 * Lists are allocated once at their final size (the YAML sequence tells
 * it), so pointers into them (a queue's parent, the names remembered for
 * the duplicate checks) stay valid for the config's life.
 */
#include "config/config.h"
#include "config/config_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FIELDS(a)  (a), sizeof(a) / sizeof((a)[0])
#define WEIGHT_MAX 1000000

static const char *const ordering_names[] = {"BestEffortFIFO", "StrictFIFO", NULL};
static const char *const within_queue_names[] = {"Never", "LowerPriority",
                                                 "LowerOrNewerEqualPriority", NULL};
static const char *const reclaim_names[] = {"Never", "LowerPriority", "Any", NULL};

static size_t seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

/* ---- queues ------------------------------------------------------------ */

static void set_queue_name(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_queue *q = obj;

	q->name = config__string(l, n, "name");
	if (q->name)
		config__seen_add(l, &l->names, q->name, "queue", NULL, n);
}

static void set_namespaces(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_queue *q = obj;
	size_t count;

	if (!config__expect(l, n, YAML_SEQUENCE_NODE, "namespaces"))
		return;
	count = seq_len(n);
	q->namespaces.v = config__calloc(l, count, sizeof(char *));
	for (size_t i = 0; q->namespaces.v && i < count; i++) {
		const yaml_node_t *item = config__node(l, n->data.sequence.items.start[i]);
		char *s = config__string(l, item, "namespaces");

		if (!s)
			continue;
		q->namespaces.v[q->namespaces.n++] = s;
		config__seen_add(l, &l->namespaces, s, "namespace", q->name, item);
	}
}

static const struct config__field preemption_fields[] = {
    {.key = "withinQueue",
     .kind = CONFIG__ENUM,
     .offset = offsetof(struct config_queue, preemption.within_queue),
     .names = within_queue_names},
    {.key = "reclaimWithinCohort",
     .kind = CONFIG__ENUM,
     .offset = offsetof(struct config_queue, preemption.reclaim_within_cohort),
     .names = reclaim_names},
    {.key = "minRuntime",
     .kind = CONFIG__DURATION,
     .offset = offsetof(struct config_queue, preemption.min_runtime_ms)},
    {.key = "preemptible",
     .kind = CONFIG__BOOL,
     .offset = offsetof(struct config_queue, preemption.preemptible)},
};
static const struct config__table preemption_table = {"preemption", FIELDS(preemption_fields)};

static const struct config__field queue_fields[] = {
    {.key = "name", .kind = CONFIG__CUSTOM, .required = true, .fn = set_queue_name},
    {.key = "namespaces", .kind = CONFIG__CUSTOM, .fn = set_namespaces},
    {.key = "weight",
     .kind = CONFIG__INT,
     .offset = offsetof(struct config_queue, weight),
     .min = 1,
     .max = WEIGHT_MAX},
    {.key = "ordering",
     .kind = CONFIG__ENUM,
     .offset = offsetof(struct config_queue, ordering),
     .names = ordering_names},
    {.key = "quota", .kind = CONFIG__CUSTOM, .fn = config__set_quota},
    {.key = "preemption", .kind = CONFIG__MAP, .sub = &preemption_table},
    {.key = "gangTimeout",
     .kind = CONFIG__DURATION,
     .offset = offsetof(struct config_queue, gang_timeout_ms)},
    {.key = "defaultRuntime",
     .kind = CONFIG__DURATION,
     .offset = offsetof(struct config_queue, default_runtime_ms)},
};
static const struct config__table queue_table = {"queue", FIELDS(queue_fields)};

/* Reads list n into a new array of queues under parent; the defaults of
 * config.h are set before each walk. */
static void read_queues(struct config__loader *l, const yaml_node_t *n,
                        const struct config_cohort *parent, struct config_queue **out,
                        size_t *count)
{
	if (!config__expect(l, n, YAML_SEQUENCE_NODE, "queues"))
		return;
	*count = seq_len(n);
	*out = config__calloc(l, *count, sizeof(**out));
	if (!*out) {
		*count = 0;
		return;
	}
	for (size_t i = 0; i < *count; i++) {
		struct config_queue *q = &(*out)[i];

		q->weight = 1;
		q->gang_timeout_ms = CONFIG_DEFAULT_GANG_TIMEOUT_MS;
		q->preemption.preemptible = true;
		q->parent = parent;
		config__walk(l, config__node(l, n->data.sequence.items.start[i]), &queue_table, q);
	}
}

/* ---- cohorts ----------------------------------------------------------- */

static void read_cohorts(struct config__loader *l, const yaml_node_t *n,
                         const struct config_cohort *parent, struct config_cohort **out,
                         size_t *count);

static void set_cohort_name(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_cohort *c = obj;

	c->name = config__string(l, n, "name");
	if (c->name)
		config__seen_add(l, &l->names, c->name, "cohort", NULL, n);
}

static void set_cohort_cohorts(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_cohort *c = obj;

	read_cohorts(l, n, c, &c->cohorts, &c->n_cohorts);
}

static void set_cohort_queues(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_cohort *c = obj;

	read_queues(l, n, c, &c->queues, &c->n_queues);
}

static const struct config__field cohort_fields[] = {
    {.key = "name", .kind = CONFIG__CUSTOM, .required = true, .fn = set_cohort_name},
    {.key = "weight",
     .kind = CONFIG__INT,
     .offset = offsetof(struct config_cohort, weight),
     .min = 1,
     .max = WEIGHT_MAX},
    {.key = "cohorts", .kind = CONFIG__CUSTOM, .fn = set_cohort_cohorts},
    {.key = "queues", .kind = CONFIG__CUSTOM, .fn = set_cohort_queues},
};
static const struct config__table cohort_table = {"cohort", FIELDS(cohort_fields)};

static void read_cohorts(struct config__loader *l, const yaml_node_t *n,
                         const struct config_cohort *parent, struct config_cohort **out,
                         size_t *count)
{
	if (!config__expect(l, n, YAML_SEQUENCE_NODE, "cohorts"))
		return;
	if (l->depth == CONFIG_MAX_DEPTH && seq_len(n) > 0) {
		config__error(l, n, "cohorts are nested more than %d deep", CONFIG_MAX_DEPTH);
		return;
	}
	*count = seq_len(n);
	*out = config__calloc(l, *count, sizeof(**out));
	if (!*out) {
		*count = 0;
		return;
	}
	l->depth++;
	for (size_t i = 0; i < *count; i++) {
		(*out)[i].weight = 1;
		(*out)[i].parent = parent;
		config__walk(l, config__node(l, n->data.sequence.items.start[i]), &cohort_table,
		             &(*out)[i]);
	}
	l->depth--;
}

/* ---- flavors ----------------------------------------------------------- */

static void set_flavor_name(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_flavor *f = obj;
	size_t i;

	f->name = config__string(l, n, "name");
	if (!f->name)
		return;
	/* Flavors are few; the ones before f are the ones already read. */
	for (i = 0; &l->cfg->flavors[i] != f; i++)
		if (l->cfg->flavors[i].name && strcmp(l->cfg->flavors[i].name, f->name) == 0)
			config__error(l, n, "flavor name '%s' appears twice", f->name);
}

static void set_labels(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_flavor *f = obj;
	size_t count;

	if (!config__expect(l, n, YAML_MAPPING_NODE, "nodeLabels"))
		return;
	count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	f->labels = config__calloc(l, count, sizeof(*f->labels));
	for (size_t i = 0; f->labels && i < count; i++) {
		const yaml_node_pair_t *p = &n->data.mapping.pairs.start[i];
		char *k = config__string(l, config__node(l, p->key), "nodeLabels key");
		char *v = config__string(l, config__node(l, p->value), "nodeLabels value");

		if (k && v) {
			f->labels[f->n_labels++] = (struct config_label){k, v};
			continue;
		}
		free(k);
		free(v);
	}
}

static const struct config__field flavor_fields[] = {
    {.key = "name", .kind = CONFIG__CUSTOM, .required = true, .fn = set_flavor_name},
    {.key = "nodeLabels", .kind = CONFIG__CUSTOM, .fn = set_labels},
};
static const struct config__table flavor_table = {"flavor", FIELDS(flavor_fields)};

static void set_flavors(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config *c = obj;

	if (!config__expect(l, n, YAML_SEQUENCE_NODE, "flavors"))
		return;
	c->n_flavors = seq_len(n);
	c->flavors = config__calloc(l, c->n_flavors, sizeof(*c->flavors));
	if (!c->flavors) {
		c->n_flavors = 0;
		return;
	}
	for (size_t i = 0; i < c->n_flavors; i++)
		config__walk(l, config__node(l, n->data.sequence.items.start[i]), &flavor_table,
		             &c->flavors[i]);
}

/* ---- the root ---------------------------------------------------------- */

/* An error at every entry of the list n (read into r) that an earlier one
 * repeats. O(entries^2): lists of a few names. */
static void each_once(struct config__loader *l, const yaml_node_t *n,
                      const struct config_strings *r, const char *what)
{
	for (size_t i = 1; i < r->n; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(r->v[i], r->v[j]) == 0) {
				config__error(l, config__node(l, n->data.sequence.items.start[i]),
				              "%s '%s' is listed twice", what, r->v[i]);
				break;
			}
}

/* Several scheduler names, each once: Muster stands in for the schedulers
 * operators name (volcano, scheduler-plugins-scheduler, ...). The daemon
 * takes at most CONFIG_MAX_SCHEDULER_NAMES. */
static void set_scheduler_names(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_strings *r = &((struct config *)obj)->scheduler_names;

	if (!config__strings(l, n, "schedulerNames", r))
		return;
	if (r->n == 0)
		config__error(l, n, "'schedulerNames' is empty; expected at least one name");
	if (r->n > CONFIG_MAX_SCHEDULER_NAMES)
		config__error(l, n, "%zu scheduler names; at most %d", r->n,
		              CONFIG_MAX_SCHEDULER_NAMES);
	each_once(l, n, r, "scheduler name");
}

/* Replaces the default list: at least one resource, each once, and no more
 * than the quota slots allow. */
static void set_resources(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_strings *r = &((struct config *)obj)->resources;
	size_t count;

	config__free_strings(r);
	*r = (struct config_strings){NULL, 0};
	if (!config__strings(l, n, "resources", r))
		return;
	count = seq_len(n);
	if (count == 0)
		config__error(l, n, "'resources' is empty; expected at least one resource name");
	if (count > CONFIG_MAX_SLOTS) {
		config__error(l, n, "%zu resources; at most %d", count, CONFIG_MAX_SLOTS);
		return;
	}
	each_once(l, n, r, "resource");
}

static void set_root_cohorts(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config *c = obj;

	read_cohorts(l, n, NULL, &c->cohorts, &c->n_cohorts);
}

static void set_root_queues(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config *c = obj;

	read_queues(l, n, NULL, &c->queues, &c->n_queues);
}

static const struct config__field topology_fields[] = {
    {.key = "levels", .kind = CONFIG__STRINGS, .offset = offsetof(struct config, topology.levels)},
};
static const struct config__table topology_table = {"topology", FIELDS(topology_fields)};

static const struct config__field backfill_fields[] = {
    {.key = "reservations",
     .kind = CONFIG__INT,
     .offset = offsetof(struct config, backfill.reservations),
     .min = 0,
     .max = CONFIG_MAX_RESERVATIONS},
};
static const struct config__table backfill_table = {"backfill", FIELDS(backfill_fields)};

/* 0 turns memory off; anything else must be long enough to remember. */
static void set_half_life(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	int64_t ms;

	if (!config__expect(l, n, YAML_SCALAR_NODE, "halfLife"))
		return;
	if (units_duration_ms((const char *)n->data.scalar.value, n->data.scalar.length, &ms) ||
	    (ms != 0 && ms < CONFIG_MIN_HALF_LIFE_MS)) {
		config__error(l, n,
		              "expected 0 (no memory) or a duration of at least 1m such as 6h "
		              "or 168h for 'halfLife', got '%s'",
		              n->data.scalar.value);
		return;
	}
	((struct config *)obj)->fair_sharing.half_life_ms = ms;
}

static const struct config__field fair_sharing_fields[] = {
    {.key = "halfLife", .kind = CONFIG__CUSTOM, .fn = set_half_life},
};
static const struct config__table fair_sharing_table = {"fairSharing", FIELDS(fair_sharing_fields)};

/* Resources and flavors come before cohorts and queues: the walk follows
 * this order, whatever the file's, so quotas can refer to both. */
static const struct config__field root_fields[] = {
    {.key = "schedulerName",
     .kind = CONFIG__STRING,
     .offset = offsetof(struct config, scheduler_name)},
    {.key = "schedulerNames", .kind = CONFIG__CUSTOM, .fn = set_scheduler_names},
    {.key = "resources", .kind = CONFIG__CUSTOM, .fn = set_resources},
    {.key = "flavors", .kind = CONFIG__CUSTOM, .fn = set_flavors},
    {.key = "topology", .kind = CONFIG__MAP, .sub = &topology_table},
    {.key = "defaultQueue",
     .kind = CONFIG__STRING,
     .offset = offsetof(struct config, default_queue)},
    {.key = "backfill", .kind = CONFIG__MAP, .sub = &backfill_table},
    {.key = "fairSharing", .kind = CONFIG__MAP, .sub = &fair_sharing_table},
    {.key = "cohorts", .kind = CONFIG__CUSTOM, .fn = set_root_cohorts},
    {.key = "queues", .kind = CONFIG__CUSTOM, .fn = set_root_queues},
};
const struct config__table config__root_table = {"the configuration", FIELDS(root_fields)};
