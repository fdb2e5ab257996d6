/*
 * A configuration as a quota tree: slots, nodes, and the name and
 * namespace lookups that queue resolution needs.
 *
 * Memory: the tree (5 x slots x 8 bytes per node) plus two sorted arrays
 * of pointers, one entry per queue and one per namespace a queue lists.
 */
#include "queue/queue.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A name (queue or namespace) and the queue node it leads to. */
struct name_ref {
	const char *name;
	int node;
};

struct queue_set {
	const struct config *cfg;
	struct queue_tree *tree;
	unsigned nslots;
	struct queue_slot slots[QUEUE_MAX_SLOTS];
	/* flavored[r * (n_flavors) + f]: the slot of (r, f), or -1. */
	int *flavored;
	const struct config_queue **queue_at; /* per tree node; NULL for cohorts */
	struct name_ref *queues, *namespaces;
	size_t n_queues, n_namespaces;
	int default_node; /* QUEUE_NONE without defaultQueue */
};

static int cmp_ref(const void *a, const void *b)
{
	return strcmp(((const struct name_ref *)a)->name, ((const struct name_ref *)b)->name);
}

static int find_ref(const struct name_ref *v, size_t n, const char *name)
{
	struct name_ref key = {.name = name};
	const struct name_ref *hit = n ? bsearch(&key, v, n, sizeof(*v), cmp_ref) : NULL;

	return hit ? hit->node : -ENOENT;
}

/* Walk every quota of every queue; with qs, also assign slots. Returns the
 * number of slots the config needs. */
static size_t scan_slots(const struct config *c, struct queue_set *qs)
{
	size_t nf = c->n_flavors, n = c->resources.n, i, j;
	int *seen = nf ? calloc(c->resources.n * nf, sizeof(*seen)) : NULL;

	if (nf && !seen)
		return SIZE_MAX;
	for (i = 0; i < c->n_all_queues; i++) {
		const struct config_queue *q = c->all_queues[i];

		for (j = 0; j < q->n_quotas; j++) {
			const struct config_quota *k = &q->quotas[j];
			size_t at = k->resource * nf + k->flavor;

			if (k->flavor == CONFIG_NO_FLAVOR || seen[at])
				continue;
			seen[at] = 1;
			if (qs && n < QUEUE_MAX_SLOTS) {
				qs->slots[n] = (struct queue_slot){k->resource, k->flavor};
				qs->flavored[at] = (int)n;
			}
			n++;
		}
	}
	free(seen);
	return n;
}

size_t queue_set_count_slots(const struct config *c)
{
	return scan_slots(c, NULL);
}

static int slot_of(const struct queue_set *qs, size_t resource, size_t flavor)
{
	if (flavor == CONFIG_NO_FLAVOR)
		return (int)resource;
	return qs->flavored[resource * qs->cfg->n_flavors + flavor];
}

static int add_queue(struct queue_set *qs, int parent, const struct config_queue *q)
{
	int node = queue_tree_add_queue(qs->tree, parent, q->name, (double)q->weight);
	size_t i;

	if (node < 0)
		return node;
	qs->queue_at[node] = q;
	for (i = 0; i < q->n_quotas; i++) {
		const struct config_quota *k = &q->quotas[i];
		int rc = queue_tree_set_quota(qs->tree, node,
		                              (unsigned)slot_of(qs, k->resource, k->flavor),
		                              k->nominal, k->borrowing_limit, k->lending_limit);
		if (rc < 0)
			return rc;
	}
	qs->queues[qs->n_queues++] = (struct name_ref){q->name, node};
	for (i = 0; i < q->namespaces.n; i++)
		qs->namespaces[qs->n_namespaces++] = (struct name_ref){q->namespaces.v[i], node};
	return 0;
}

/* Depth-first, so every parent precedes its children (the tree needs it). */
static int add_cohort(struct queue_set *qs, int parent, const struct config_cohort *co)
{
	int node = queue_tree_add_cohort(qs->tree, parent, co->name, (double)co->weight), rc;
	size_t i;

	if (node < 0)
		return node;
	for (i = 0; i < co->n_cohorts; i++)
		if ((rc = add_cohort(qs, node, &co->cohorts[i])) < 0)
			return rc;
	for (i = 0; i < co->n_queues; i++)
		if ((rc = add_queue(qs, node, &co->queues[i])) < 0)
			return rc;
	return 0;
}

static size_t count_namespaces(const struct config *c)
{
	size_t n = 0, i;

	for (i = 0; i < c->n_all_queues; i++)
		n += c->all_queues[i]->namespaces.n;
	return n;
}

static int build(struct queue_set *qs, const struct config *c)
{
	size_t nodes = 1 + c->n_all_cohorts + c->n_all_queues, i;
	int rc;

	qs->flavored = malloc((c->resources.n * c->n_flavors + 1) * sizeof(*qs->flavored));
	qs->queue_at = calloc(nodes, sizeof(*qs->queue_at));
	qs->queues = calloc(c->n_all_queues + 1, sizeof(*qs->queues));
	qs->namespaces = calloc(count_namespaces(c) + 1, sizeof(*qs->namespaces));
	if (!qs->flavored || !qs->queue_at || !qs->queues || !qs->namespaces)
		return -ENOMEM;
	for (i = 0; i < c->resources.n * c->n_flavors; i++)
		qs->flavored[i] = -1;
	for (i = 0; i < c->resources.n; i++)
		qs->slots[i] = (struct queue_slot){i, CONFIG_NO_FLAVOR};
	qs->nslots = (unsigned)scan_slots(c, qs);
	if ((rc = queue_tree_new(qs->nslots, &qs->tree)) < 0)
		return rc;
	for (i = 0; i < c->n_cohorts; i++)
		if ((rc = add_cohort(qs, 0, &c->cohorts[i])) < 0)
			return rc;
	for (i = 0; i < c->n_queues; i++)
		if ((rc = add_queue(qs, 0, &c->queues[i])) < 0)
			return rc;
	queue_tree_finalize(qs->tree);
	queue_tree_set_half_life(qs->tree, c->fair_sharing.half_life_ms);
	qsort(qs->queues, qs->n_queues, sizeof(*qs->queues), cmp_ref);
	qsort(qs->namespaces, qs->n_namespaces, sizeof(*qs->namespaces), cmp_ref);
	qs->default_node =
	    c->default_queue ? find_ref(qs->queues, qs->n_queues, c->default_queue) : QUEUE_NONE;
	if (qs->default_node < 0)
		qs->default_node = QUEUE_NONE;
	return 0;
}

int queue_set_build(const struct config *c, struct queue_set **out)
{
	size_t need = queue_set_count_slots(c);
	struct queue_set *qs;
	int rc;

	*out = NULL;
	if (need == SIZE_MAX)
		return -ENOMEM;
	if (need == 0 || need > QUEUE_MAX_SLOTS)
		return need ? -E2BIG : -EINVAL;
	qs = calloc(1, sizeof(*qs));
	if (!qs)
		return -ENOMEM;
	qs->cfg = c;
	if ((rc = build(qs, c)) < 0) {
		queue_set_free(&qs);
		return rc;
	}
	*out = qs;
	return 0;
}

void queue_set_free(struct queue_set **qsp)
{
	struct queue_set *qs = qsp ? *qsp : NULL;

	if (!qs)
		return;
	queue_tree_free(&qs->tree);
	free(qs->flavored);
	free(qs->queue_at);
	free(qs->queues);
	free(qs->namespaces);
	free(qs);
	*qsp = NULL;
}

const struct config *queue_set_config(const struct queue_set *qs)
{
	return qs->cfg;
}

struct queue_tree *queue_set_tree(struct queue_set *qs)
{
	return qs->tree;
}

const struct queue_tree *queue_set_tree_c(const struct queue_set *qs)
{
	return qs->tree;
}

unsigned queue_set_nslots(const struct queue_set *qs)
{
	return qs->nslots;
}

const struct queue_slot *queue_set_slot(const struct queue_set *qs, unsigned slot)
{
	return slot < qs->nslots ? &qs->slots[slot] : NULL;
}

const struct config_queue *queue_set_queue(const struct queue_set *qs, int node)
{
	return node > 0 && node < queue_tree_size(qs->tree) ? qs->queue_at[node] : NULL;
}

int queue_set_find(const struct queue_set *qs, const char *name)
{
	return name ? find_ref(qs->queues, qs->n_queues, name) : -ENOENT;
}

void queue_set_add_request(const struct queue_set *qs, int64_t *req, const int64_t *amount,
                           size_t flavor)
{
	size_t r;

	for (r = 0; r < qs->cfg->resources.n; r++) {
		int fs = flavor == CONFIG_NO_FLAVOR ? -1 : slot_of(qs, r, flavor);

		req[r] += amount[r];
		if (fs >= 0)
			req[fs] += amount[r];
	}
}

/* ---- resolution ---------------------------------------------------- */

static int named(const struct queue_set *qs, const char *name, enum queue_source src,
                 const char *what, struct queue_resolution *out)
{
	int node = queue_set_find(qs, name);

	if (node >= 0) {
		out->node = node;
		out->source = src;
		return 0;
	}
	snprintf(out->reason, sizeof(out->reason),
	         "%s names queue \"%.64s\", which is not a queue of the configuration", what, name);
	return -ENOENT;
}

int queue_resolve(const struct queue_set *qs, const char *label, const char *volcano,
                  const char *ns, struct queue_resolution *out)
{
	int node;

	*out = (struct queue_resolution){.node = QUEUE_NONE, .source = QUEUE_FROM_NONE};
	if (label && *label)
		return named(qs, label, QUEUE_FROM_LABEL, "label muster.dev/queue", out);
	if (volcano && *volcano &&
	    (strcmp(volcano, "default") != 0 || queue_set_find(qs, volcano) >= 0))
		return named(qs, volcano, QUEUE_FROM_VOLCANO, "spec.queue", out);
	if (ns && (node = find_ref(qs->namespaces, qs->n_namespaces, ns)) >= 0) {
		out->node = node;
		out->source = QUEUE_FROM_NAMESPACE;
		return 0;
	}
	if (qs->default_node != QUEUE_NONE) {
		out->node = qs->default_node;
		out->source = QUEUE_FROM_DEFAULT;
		return 0;
	}
	snprintf(out->reason, sizeof(out->reason),
	         "no queue: no muster.dev/queue label, no queue lists namespace \"%.64s\", "
	         "and there is no defaultQueue",
	         ns ? ns : "");
	return -ENOENT;
}

const char *queue_source_name(enum queue_source s)
{
	static const char *const names[] = {
	    [QUEUE_FROM_NONE] = "none",
	    [QUEUE_FROM_LABEL] = "label",
	    [QUEUE_FROM_VOLCANO] = "volcano",
	    [QUEUE_FROM_NAMESPACE] = "namespace",
	    [QUEUE_FROM_DEFAULT] = "defaultQueue",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

void queue_set_slot_name(const struct queue_set *qs, unsigned slot, char *buf, size_t len)
{
	const struct queue_slot *s = queue_set_slot(qs, slot);

	if (!s)
		snprintf(buf, len, "?");
	else if (s->flavor == CONFIG_NO_FLAVOR)
		snprintf(buf, len, "%s", qs->cfg->resources.v[s->resource]);
	else
		snprintf(buf, len, "%s@%s", qs->cfg->resources.v[s->resource],
		         qs->cfg->flavors[s->flavor].name);
}

int queue_set_find_slot(const struct queue_set *qs, const char *name)
{
	char buf[2 * CONFIG_MAX_STRING + 2];

	for (unsigned k = 0; k < qs->nslots; k++) {
		queue_set_slot_name(qs, k, buf, sizeof(buf));
		if (!strcmp(buf, name))
			return (int)k;
	}
	return -ENOENT;
}

int queue_set_find_node(const struct queue_set *qs, const char *name)
{
	int n = queue_tree_size(qs->tree);

	for (int i = 0; i < n; i++)
		if (!strcmp(queue_tree_name(qs->tree, i), name))
			return i;
	return -ENOENT;
}

/* O(nodes x (nodes + slots x slots)) name matching: a reload's cost, once
 * per configuration change, for trees of hundreds of nodes. */
void queue_set_carry(struct queue_set *to, const struct queue_set *from)
{
	const struct queue_tree *ft = from->tree;
	int64_t at = queue_tree_memory_at(ft);
	int map[QUEUE_MAX_SLOTS];
	char buf[2 * CONFIG_MAX_STRING + 2];

	if (at == QUEUE_NO_TIME || !queue_tree_half_life(to->tree))
		return;
	for (unsigned k = 0; k < to->nslots; k++) {
		queue_set_slot_name(to, k, buf, sizeof(buf));
		map[k] = queue_set_find_slot(from, buf);
	}
	for (int i = 0; i < queue_tree_size(to->tree); i++) {
		int f = queue_set_find_node(from, queue_tree_name(to->tree, i));

		for (unsigned k = 0; f >= 0 && k < to->nslots; k++)
			if (map[k] >= 0)
				queue_tree_recall(to->tree, i, k,
				                  queue_tree_remembered(ft, f, (unsigned)map[k]),
				                  queue_tree_held(ft, f, (unsigned)map[k]), at);
	}
}
