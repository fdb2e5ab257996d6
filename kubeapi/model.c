/*
 * The model's handle (model.h): its string table, the resource table
 * with its slots and reference counts, label lookup and label selectors.
 * The decoders (decode_util.c) fill it; the planner and the queues read
 * it.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "kubeapi/decode_internal.h"

/* Well-known resources, at the indexes of the KUBEAPI_RES_* enum. The
 * unoffered one's name is what a waiting message says ("Insufficient
 * ..."); it is no valid resource name, so no Node can offer it. */
static const char *const well_known[KUBEAPI_RES_WELL_KNOWN] = {
    "cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu", "(a resource no node offers)",
};

int kubeapi_model_new(struct kubeapi_model **out)
{
	struct kubeapi_model *m = calloc(1, sizeof(*m));
	unsigned i;

	if (!m || !(m->scratch = malloc(sizeof(*m->scratch))) || intern_new(&m->in) < 0)
		goto fail;
	for (i = 0; i < KUBEAPI_RES_WELL_KNOWN; i++) {
		m->resources[i] = strdup(well_known[i]);
		if (!m->resources[i])
			goto fail;
		m->res_pinned |= 1ULL << i;
		m->nres++;
	}
	*out = m;
	return 0;
fail:
	kubeapi_model_free(&m);
	return -ENOMEM;
}

void kubeapi_model_free(struct kubeapi_model **mp)
{
	struct kubeapi_model *m = mp ? *mp : NULL;
	unsigned i;

	if (!m)
		return;
	for (i = 0; i < KUBEAPI_MAX_RESOURCES; i++)
		free(m->resources[i]);
	intern_free(&m->in);
	free(m->scratch);
	free(m);
	*mp = NULL;
}

struct intern *kubeapi_model_intern(struct kubeapi_model *m)
{
	return m->in;
}

/* ---- the resource table ------------------------------------------------------ */

/* A linear search of at most 64 short names: cheaper than hashing them,
 * and only decoding a ResourceList calls it. */
int kubeapi_model_resource_find(const struct kubeapi_model *m, const char *name, size_t len)
{
	unsigned i;

	for (i = 0; i < m->nres; i++)
		if (m->resources[i] && strlen(m->resources[i]) == len &&
		    memcmp(m->resources[i], name, len) == 0)
			return (int)i;
	return -ENOENT;
}

/* The lowest free slot gets the name, with no references yet. */
int kubeapi__res_add(struct kubeapi_model *m, const char *name, size_t len)
{
	unsigned i = 0;

	while (i < KUBEAPI_MAX_RESOURCES && m->resources[i])
		i++;
	if (i == KUBEAPI_MAX_RESOURCES)
		return -ENOSPC;
	if (!(m->resources[i] = strndup(name, len)))
		return -ENOMEM;
	m->res_refs[i] = 0;
	if (i >= m->nres)
		m->nres = i + 1;
	return (int)i;
}

void kubeapi__res_free(struct kubeapi_model *m, unsigned i)
{
	free(m->resources[i]);
	m->resources[i] = NULL;
	while (m->nres && !m->resources[m->nres - 1])
		m->nres--;
}

int kubeapi_model_resource(struct kubeapi_model *m, const char *name, size_t len)
{
	int i;

	if (len == 0 || len > KUBEAPI_MAX_NAME)
		return -EINVAL;
	i = kubeapi_model_resource_find(m, name, len);
	if (i == -ENOENT && (i = kubeapi__res_add(m, name, len)) >= 0)
		m->res_gen++;
	if (i >= 0)
		m->res_pinned |= 1ULL << i;
	return i;
}

unsigned kubeapi_model_nresources(const struct kubeapi_model *m)
{
	return m->nres;
}

const char *kubeapi_model_resource_name(const struct kubeapi_model *m, unsigned res)
{
	return res < m->nres ? m->resources[res] : NULL;
}

uint64_t kubeapi_model_resource_gen(const struct kubeapi_model *m)
{
	return m->res_gen;
}

unsigned kubeapi_model_unoffered(const struct kubeapi_model *m)
{
	return m->res_refs[KUBEAPI_RES_UNOFFERED];
}

uint64_t kubeapi__res_mask(const struct kubeapi_res *e, uint32_t n)
{
	uint64_t mask = 0;

	for (uint32_t k = 0; k < n; k++)
		mask |= 1ULL << e[k].res;
	return mask;
}

void kubeapi__res_ref_mask(struct kubeapi_model *m, uint64_t mask)
{
	for (unsigned i = 0; mask; i++, mask >>= 1)
		if (mask & 1)
			m->res_refs[i]++;
}

void kubeapi__res_unref(struct kubeapi_model *m, const struct kubeapi_res *e, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		unsigned i = e[k].res;

		if (--m->res_refs[i] == 0 && !(m->res_pinned >> i & 1))
			kubeapi__res_free(m, i);
	}
}

uint32_t kubeapi_labels_get(const struct kubeapi_labels *l, uint32_t key)
{
	uint32_t lo = 0, hi = l ? l->n : 0;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (l->e[mid].key == key)
			return l->e[mid].value;
		if (l->e[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* ---- label selectors ------------------------------------------------------- */

static bool value_in(const uint32_t *values, unsigned n, uint32_t v)
{
	for (unsigned k = 0; k < n; k++)
		if (values[k] == v)
			return true;
	return false;
}

/* A label value as Go's strconv.ParseInt(s, 10, 64) reads it, which is
 * what Kubernetes uses for Gt/Lt: an optional sign and decimal digits,
 * nothing else (no blanks), and a value outside int64 is an error, not a
 * saturated number. strtoll would accept " 5" and clamp "9e99...". */
static bool parse_int64(const char *s, long long *out)
{
	bool neg = *s == '-';
	unsigned long long v = 0, lim;

	if (*s == '+' || *s == '-')
		s++;
	if (!*s)
		return false;
	lim = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	for (; *s; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (d > 9 || v > (lim - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = !neg ? (long long)v : v > LLONG_MAX ? LLONG_MIN : -(long long)v;
	return true;
}

/* Gt/Lt compare the label value and the one operand as integers; a value
 * that is not an int64 fails the requirement, as upstream. */
static bool int_compare(const struct kubeapi_model *m, uint32_t have, uint32_t want, int op)
{
	const char *a = intern_str(m->in, have), *b = intern_str(m->in, want);
	long long x, y;

	if (!a || !b || !parse_int64(a, &x) || !parse_int64(b, &y))
		return false;
	return op == KUBEAPI_SEL_GT ? x > y : x < y;
}

bool kubeapi_requirement_matches(const struct kubeapi_model *m, const struct kubeapi_labels *labels,
                                 uint32_t field_value, const struct kubeapi_requirement *r,
                                 const uint32_t *values)
{
	const uint32_t *v = values + r->first_value;
	uint32_t have = r->is_field ? field_value : kubeapi_labels_get(labels, r->key);
	/* Value ids are never 0 (an empty value has an id of its own), so 0
	 * means the label is absent. */
	bool present = r->is_field || have != 0;

	switch (r->op) {
	case KUBEAPI_SEL_IN:
		return present && value_in(v, r->nvalues, have);
	case KUBEAPI_SEL_NOT_IN:
		return !present || !value_in(v, r->nvalues, have);
	case KUBEAPI_SEL_EXISTS:
		return present;
	case KUBEAPI_SEL_DOES_NOT_EXIST:
		return !present;
	case KUBEAPI_SEL_GT:
	case KUBEAPI_SEL_LT:
		return present && r->nvalues == 1 && int_compare(m, have, v[0], r->op);
	}
	return false;
}

bool kubeapi_podspec_term_matches(const struct kubeapi_model *m, const struct kubeapi_podspec *s,
                                  const struct kubeapi_term *term, const struct kubeapi_node *n)
{
	const struct kubeapi_requirement *req = kubeapi_podspec_requirements(s);
	const uint32_t *values = kubeapi_podspec_values(s);

	/* Unlike an empty label selector, which selects everything. */
	if (term->n == 0)
		return false;
	for (uint32_t k = 0; k < term->n; k++)
		if (!kubeapi_requirement_matches(m, n->labels, n->name, &req[term->first + k],
		                                 values))
			return false;
	return true;
}

bool kubeapi_podspec_node_matches(const struct kubeapi_model *m, const struct kubeapi_podspec *s,
                                  const struct kubeapi_node *n)
{
	const struct kubeapi_kv *sel = kubeapi_podspec_selector(s);
	const struct kubeapi_term *terms = kubeapi_podspec_terms(s);
	unsigned k;

	for (k = 0; k < s->nselector; k++)
		if (kubeapi_labels_get(n->labels, sel[k].key) != sel[k].value)
			return false;
	if (s->nrequired == 0)
		return true;
	for (k = 0; k < s->nrequired; k++) /* terms are ORed */
		if (kubeapi_podspec_term_matches(m, s, &terms[k], n))
			return true;
	return false;
}

/* A selector has no fields (the decoder sets no is_field), so the field
 * value passed is 0. */
bool kubeapi_selector_matches(const struct kubeapi_model *m, const struct kubeapi_selector *sel,
                              const struct kubeapi_labels *labels)
{
	const struct kubeapi_requirement *req = kubeapi_selector_requirements(sel);
	const uint32_t *values = kubeapi_selector_values(sel);

	for (uint32_t k = 0; k < sel->nreq; k++) {
		if (req[k].op == KUBEAPI_SEL_GT || req[k].op == KUBEAPI_SEL_LT)
			return false;
		if (!kubeapi_requirement_matches(m, labels, 0, &req[k], values))
			return false;
	}
	return true;
}

const char *kubeapi_unsupported_name(unsigned bits)
{
	static const char *const names[] = {
	    "podAffinity (required)",
	    "podAntiAffinity (required)",
	    "topologySpreadConstraints (DoNotSchedule)",
	    "PersistentVolumeClaim or ephemeral volumes",
	    "hostPort",
	    "resourceClaims (DRA)",
	};

	for (unsigned k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (bits & 1u << k)
			return names[k];
	return NULL;
}
