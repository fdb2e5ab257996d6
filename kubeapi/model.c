/*
 * The model's handle (model.h): its string table, the resource table
 * with its slots and reference counts, and label lookup. The decoders
 * (decode_util.c) fill it; the planner and the queues read it.
 */
#include <errno.h>
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
