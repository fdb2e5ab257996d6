/*
 * A queue's quota map: keys "resource" or "resource@flavor" resolved to
 * indexes into config.resources and config.flavors, values read as
 * Kubernetes quantities (base/quantity.h), milli-cores for "cpu" and
 * whole units for everything else.
 *
 * Cost: resolving a key is O(resources + flavors), and a key given twice
 * is found by comparing with the quotas already read, O(quotas^2) per
 * queue; a queue has a handful.
 */
#include "config/config.h"
#include "config/config_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/quantity.h"

#define FIELDS(a) (a), sizeof(a) / sizeof((a)[0])

/* "a, b, c" of the strings in s into buf, for messages. */
static void join(const struct config_strings *s, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", s->v[i]);
}

/* ---- quotas ------------------------------------------------------------ */

/* Reads quantity n into *v: milli-cores for "cpu", whole units else. */
static void set_quantity(struct config__loader *l, const yaml_node_t *n, struct config_quota *q,
                         const char *key, int64_t *v)
{
	const char *s = (const char *)n->data.scalar.value;
	int64_t got;
	int rc;

	if (!config__expect(l, n, YAML_SCALAR_NODE, key))
		return;
	if (strcmp(l->cfg->resources.v[q->resource], "cpu") == 0)
		rc = quantity_milli(s, n->data.scalar.length, &got);
	else
		rc = quantity_value(s, n->data.scalar.length, &got);
	if (rc) {
		config__error(
		    l, n, "expected a quantity such as 16, 500m or 2Ti for '%s', got '%s'", key, s);
		return;
	}
	if (got < 0) {
		config__error(l, n, "'%s' must not be negative, got '%s'", key, s);
		return;
	}
	*v = got;
}

static void set_nominal(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	set_quantity(l, n, obj, "nominal", &((struct config_quota *)obj)->nominal);
}

static void set_borrowing(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	set_quantity(l, n, obj, "borrowingLimit", &((struct config_quota *)obj)->borrowing_limit);
}

/* Runs after nominal (table order); a nominal that failed is still -1. */
static void set_lending(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_quota *q = obj;
	const char *unit = strcmp(l->cfg->resources.v[q->resource], "cpu") == 0 ? "m" : "";

	set_quantity(l, n, q, "lendingLimit", &q->lending_limit);
	if (q->nominal >= 0 && q->lending_limit != CONFIG_UNLIMITED &&
	    q->lending_limit > q->nominal)
		config__error(l, n, "lendingLimit (%lld%s) is above nominal (%lld%s) for '%s'",
		              (long long)q->lending_limit, unit, (long long)q->nominal, unit,
		              l->cfg->resources.v[q->resource]);
}

static const struct config__field quota_fields[] = {
    {.key = "nominal", .kind = CONFIG__CUSTOM, .required = true, .fn = set_nominal},
    {.key = "borrowingLimit", .kind = CONFIG__CUSTOM, .fn = set_borrowing},
    {.key = "lendingLimit", .kind = CONFIG__CUSTOM, .fn = set_lending},
};
static const struct config__table quota_table = {"quota entry", FIELDS(quota_fields)};

static int find_string(const struct config_strings *s, const char *name, size_t len, size_t *i)
{
	for (*i = 0; *i < s->n; (*i)++)
		if (strlen(s->v[*i]) == len && memcmp(s->v[*i], name, len) == 0)
			return 0;
	return -1;
}

static int find_flavor(const struct config *c, const char *name, size_t *i)
{
	for (*i = 0; *i < c->n_flavors; (*i)++)
		if (c->flavors[*i].name && strcmp(c->flavors[*i].name, name) == 0)
			return 0;
	return -1;
}

/* Resolves key "resource" or "resource@flavor" into q; false after
 * recording why not. */
static bool quota_key(struct config__loader *l, const yaml_node_t *k, struct config_quota *q)
{
	const char *key = (const char *)k->data.scalar.value, *at = strchr(key, '@');
	size_t rlen = at ? (size_t)(at - key) : strlen(key);
	char known[512];

	if (find_string(&l->cfg->resources, key, rlen, &q->resource)) {
		join(&l->cfg->resources, known, sizeof(known));
		config__error(l, k, "quota on '%.*s', which is not listed in 'resources' (%s)",
		              (int)rlen, key, known);
		return false;
	}
	q->flavor = CONFIG_NO_FLAVOR;
	if (at && find_flavor(l->cfg, at + 1, &q->flavor)) {
		struct config_strings names = {NULL, 0};
		char *v[64];

		for (names.v = v; names.n < l->cfg->n_flavors && names.n < 64; names.n++)
			v[names.n] =
			    l->cfg->flavors[names.n].name ? l->cfg->flavors[names.n].name : "?";
		join(&names, known, sizeof(known));
		config__error(l, k, "unknown flavor '%s' in '%s'; flavors: %s", at + 1, key,
		              names.n ? known : "none defined");
		return false;
	}
	return true;
}

static bool quota_seen(const struct config_queue *q, const struct config_quota *nq)
{
	for (size_t i = 0; i < q->n_quotas; i++)
		if (q->quotas[i].resource == nq->resource && q->quotas[i].flavor == nq->flavor)
			return true;
	return false;
}

/* Counts the slot (resource, flavor) needs; reports, once, the key that
 * takes the total past CONFIG_MAX_SLOTS. */
static void count_slot(struct config__loader *l, const yaml_node_t *k,
                       const struct config_quota *nq)
{
	size_t i, total;

	if (nq->flavor == CONFIG_NO_FLAVOR)
		return;
	for (i = 0; i < l->n_pairs; i++)
		if (l->pairs[i].resource == nq->resource && l->pairs[i].flavor == nq->flavor)
			return;
	total = l->cfg->resources.n + l->n_pairs + 1;
	if (total <= CONFIG_MAX_SLOTS) {
		l->pairs[l->n_pairs].resource = nq->resource;
		l->pairs[l->n_pairs++].flavor = nq->flavor;
		return;
	}
	if (!l->slots_reported)
		config__error(l, k,
		              "quota on '%s' needs quota slot %zu; at most %d (one per resource, "
		              "plus one per resource@flavor that some queue uses)",
		              k->data.scalar.value, total, CONFIG_MAX_SLOTS);
	l->slots_reported = true;
}

static void quota_entry(struct config__loader *l, const yaml_node_pair_t *p, struct config_queue *q)
{
	const yaml_node_t *k = config__node(l, p->key);
	struct config_quota nq = {0};

	if (!config__expect(l, k, YAML_SCALAR_NODE, "quota key") || !quota_key(l, k, &nq))
		return;
	if (quota_seen(q, &nq)) {
		config__error(l, k, "quota for '%s' appears twice", k->data.scalar.value);
		return;
	}
	nq.nominal = -1;
	nq.borrowing_limit = CONFIG_UNLIMITED;
	nq.lending_limit = CONFIG_UNLIMITED;
	config__walk(l, config__node(l, p->value), &quota_table, &nq);
	if (nq.nominal < 0)
		return; /* already reported */
	count_slot(l, k, &nq);
	q->quotas[q->n_quotas++] = nq;
}

void config__set_quota(struct config__loader *l, const yaml_node_t *n, void *obj)
{
	struct config_queue *q = obj;
	size_t count;

	if (!config__expect(l, n, YAML_MAPPING_NODE, "quota"))
		return;
	count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	q->quotas = config__calloc(l, count, sizeof(*q->quotas));
	for (size_t i = 0; q->quotas && i < count; i++)
		quota_entry(l, &n->data.mapping.pairs.start[i], q);
}
