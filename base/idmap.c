#include "base/idmap.h"

#include <errno.h>
#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t nslots)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (nslots - 1);
}

void *idmap_get(const struct idmap *m, uint64_t key)
{
	size_t i;

	if (!m->nslots || !key)
		return NULL;
	for (i = slot_of(key, m->nslots); m->slots[i].key; i = (i + 1) & (m->nslots - 1))
		if (m->slots[i].key == key)
			return m->slots[i].value;
	return NULL;
}

void idmap_prefetch(const struct idmap *m, uint64_t key)
{
	if (m->nslots && key)
		__builtin_prefetch(&m->slots[slot_of(key, m->nslots)]);
}

static void place(struct idmap_slot *slots, size_t nslots, uint64_t key, void *value)
{
	size_t i = slot_of(key, nslots);

	while (slots[i].key && slots[i].key != key)
		i = (i + 1) & (nslots - 1);
	slots[i].key = key;
	slots[i].value = value;
}

static int resize(struct idmap *m, size_t nslots)
{
	struct idmap_slot *slots = calloc(nslots, sizeof(*slots));
	size_t i;

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < m->nslots; i++)
		if (m->slots[i].key)
			place(slots, nslots, m->slots[i].key, m->slots[i].value);
	free(m->slots);
	m->slots = slots;
	m->nslots = nslots;
	return 0;
}

void **idmap_ref(struct idmap *m, uint64_t key)
{
	size_t i;

	if (!key)
		return NULL;
	if ((m->n + 1) * 10 > m->nslots * 7 && resize(m, m->nslots ? m->nslots * 2 : 64) < 0)
		return NULL;
	for (i = slot_of(key, m->nslots); m->slots[i].key; i = (i + 1) & (m->nslots - 1))
		if (m->slots[i].key == key)
			return &m->slots[i].value;
	m->slots[i].key = key;
	m->slots[i].value = NULL;
	m->n++;
	return &m->slots[i].value;
}

int idmap_reserve(struct idmap *m, size_t n)
{
	size_t nslots = m->nslots ? m->nslots : 64;

	while (n * 10 > nslots * 7)
		nslots *= 2;
	return nslots > m->nslots ? resize(m, nslots) : 0;
}

int idmap_put(struct idmap *m, uint64_t key, void *value)
{
	void **v = idmap_ref(m, key);

	if (!v)
		return key ? -ENOMEM : -EINVAL;
	*v = value;
	return 0;
}

/* Backward-shift deletion: pull later entries of the probe run into the
 * hole when their home slot allows it, so lookups never need tombstones. */
void *idmap_del(struct idmap *m, uint64_t key)
{
	size_t mask = m->nslots - 1, i, j;
	void *value;

	if (!m->nslots || !key)
		return NULL;
	for (i = slot_of(key, m->nslots); m->slots[i].key != key; i = (i + 1) & mask)
		if (!m->slots[i].key)
			return NULL;
	value = m->slots[i].value;
	for (j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
		size_t home = slot_of(m->slots[j].key, m->nslots);

		/* Move j into the hole i unless its home lies cyclically in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].key = 0;
	m->slots[i].value = NULL;
	m->n--;
	/* Halve below a quarter of the grow threshold (load 0.175, then
	 * 0.35): a store that once held a tenant's million pods must not
	 * keep its slots, since every walk of it costs O(slots). Amortized
	 * O(1); a failed allocation just keeps the bigger table. */
	if (m->nslots > 64 && m->n * 40 < m->nslots * 7)
		resize(m, m->nslots / 2);
	return value;
}

void idmap_free(struct idmap *m)
{
	free(m->slots);
	*m = (struct idmap){0};
}

size_t idmap_addresses(const struct idmap *m, uint64_t *out)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nslots; i++) {
		out[n] = (uint64_t)(uintptr_t)m->slots[i].value; /* overwritten unless a key */
		n += m->slots[i].key != 0;
	}
	return n;
}
