/*
 * The node table's GPU devices (policy.h): each registered GPU of each
 * node as a struct policy_gpu, the shares pods hold on them by UUID
 * turned into table indexes, and shares counted in and out.
 *
 * A GPU in MIG mode is counted but takes no vGPU share: MIG slices are
 * extended resources of their own (nvidia.com/mig-<profile>), which the
 * node's free[] accounts.
 *
 * Memory: 32 bytes a GPU and 4 a node; 5,000 nodes of 8 GPUs take about
 * 1.3 MB of arena.
 */
#include "policy/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"

/* ---- GPU models ------------------------------------------------------- */

/* The bit of model value v (a string id) among the table's, or
 * POLICY_MODELS' bit when it is not one of them; 0 for no value. */
static uint64_t model_bit(const struct policy_nodes *t, uint32_t v)
{
	if (!v)
		return 0;
	for (unsigned b = 0; b < t->nmodels; b++)
		if (t->model_value[b] == v)
			return UINT64_C(1) << b;
	return UINT64_C(1) << POLICY_MODELS;
}

uint64_t policy__node_model(const struct policy_nodes *t, const struct kubeapi_node *n)
{
	return t->model_key ? model_bit(t, kubeapi_labels_get(n->labels, t->model_key)) : 0;
}

/* Node i's model, numbered on first sight, and its GPUs counted in. */
static void count_model(struct policy_nodes *t, size_t i, size_t ngpus)
{
	uint32_t v = t->model_key ? kubeapi_labels_get(t->node[i]->labels, t->model_key) : 0;
	uint64_t bit = model_bit(t, v);

	if (bit >> POLICY_MODELS && t->nmodels < POLICY_MODELS) {
		t->model_value[t->nmodels] = v;
		bit = UINT64_C(1) << t->nmodels++;
	}
	t->gpu_model[i] = bit;
	for (int b = 0; b < 64; b++)
		t->model_gpus[b] += (double)(bit >> b & 1) * (double)ngpus;
}

/* The models requirement q of a spec's term admits (In on the model
 * label), or 0 when it says nothing of them. */
static uint64_t requirement_models(const struct policy_nodes *t, const struct kubeapi_podspec *s,
                                   const struct kubeapi_requirement *q)
{
	const uint32_t *v = kubeapi_podspec_values(s) + q->first_value;
	uint64_t bits = 0;

	if (q->key != t->model_key || q->is_field || q->op != KUBEAPI_SEL_IN)
		return 0;
	for (uint16_t k = 0; k < q->nvalues; k++)
		bits |= model_bit(t, v[k]) | (v[k] ? 0 : UINT64_C(1) << POLICY_MODELS);
	return bits ? bits : UINT64_C(1) << POLICY_MODELS;
}

/* The models one required term admits; 0: any. */
static uint64_t term_models(const struct policy_nodes *t, const struct kubeapi_podspec *s,
                            const struct kubeapi_term *term)
{
	const struct kubeapi_requirement *q = kubeapi_podspec_requirements(s);
	uint64_t bits = 0;

	for (uint32_t k = term->first; k < term->first + term->n; k++) {
		uint64_t m = requirement_models(t, s, &q[k]);

		if (m)
			bits = bits ? bits & m : m;
	}
	return bits;
}

uint64_t policy_nodes_spec_models(const struct policy_nodes *t, const struct kubeapi_podspec *s)
{
	const struct kubeapi_kv *sel = kubeapi_podspec_selector(s);
	const struct kubeapi_term *terms = kubeapi_podspec_terms(s);
	uint64_t bits = 0, m;

	if (!t->model_key)
		return 0;
	for (uint16_t k = 0; k < s->nrequired; k++) {
		if (!(m = term_models(t, s, &terms[k])))
			return 0; /* a term that allows any model */
		bits |= m;
	}
	for (uint16_t k = 0; k < s->nselector; k++)
		if (sel[k].key == t->model_key) {
			m = model_bit(t, sel[k].value);
			bits = bits ? bits & m : m;
		}
	return bits;
}

/* ---- the devices ------------------------------------------------------ */

int policy__nodes_devices(struct policy_nodes *t, struct arena *a)
{
	size_t total = 0, at = 0;

	t->model_key = intern_find(kubeapi_model_intern(t->model), POLICY_MODEL_LABEL,
	                           strlen(POLICY_MODEL_LABEL));
	if (!(t->gpu_first = arena_alloc(a, (t->n + 1) * sizeof(*t->gpu_first))) ||
	    !(t->gpu_model = arena_calloc(a, t->n + 1, sizeof(*t->gpu_model))))
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++)
		total += t->node[i]->gpus ? t->node[i]->gpus->n : 0;
	t->gpu = arena_calloc(a, total + 1, sizeof(*t->gpu));
	t->gpu_room = arena_calloc(a, t->n + 1, 1);
	t->gpu_empty = arena_calloc(a, t->n + 1, 1);
	t->gpu_ver = arena_calloc(a, t->n + 1, sizeof(*t->gpu_ver));
	t->room_stale = arena_calloc(a, t->n + 1, 1);
	if (!t->gpu || !t->gpu_room || !t->gpu_empty || !t->gpu_ver || !t->room_stale)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		const struct kubeapi_gpus *g = t->node[i]->gpus;

		t->gpu_first[i] = (uint32_t)at;
		for (uint32_t k = 0; g && k < g->n; k++)
			t->gpu[at++] = (struct policy_gpu){
			    .id = k,
			    .uuid = g->e[k].uuid,
			    .memory = g->e[k].memory,
			    .split = g->e[k].split,
			    .healthy = g->e[k].healthy && !g->e[k].mig,
			};
		t->gpu_node[i] |= g && g->n > 0;
		t->gpu_first[i + 1] = (uint32_t)at; /* for policy__node_room() */
		count_model(t, i, at - t->gpu_first[i]);
		policy__node_room(t, i);
		for (unsigned l = 0; l < t->nlevels; l++) {
			uint32_t d = t->domain[i * t->nlevels + l];

			for (uint32_t k = t->gpu_first[i]; d != POLICY_NO_DOMAIN && k < at; k++) {
				t->level[l].free_core[d] += t->gpu[k].healthy ? 100 : 0;
				t->level[l].empty_gpu[d] += t->gpu[k].healthy;
			}
		}
	}
	t->gpu_first[t->n] = (uint32_t)at;
	if (at && !(t->frag_memo = calloc(1, sizeof(*t->frag_memo))))
		return -ENOMEM;
	return 0;
}

void policy__node_room(struct policy_nodes *t, size_t i)
{
	size_t n;
	const struct policy_gpu *g = policy_nodes_gpus(t, i, &n);
	unsigned room = 0, empty = 0;
	uint64_t h = 0;

	for (size_t k = 0; k < n; k++) {
		h = policy__mix64(h, g[k].used_num | (uint64_t)g[k].used_core << 16 |
		                         (uint64_t)g[k].used_mem << 32);
		if (!g[k].healthy)
			continue;
		empty += g[k].used_num == 0;
		if (g[k].used_num < g[k].split && g[k].used_core < 100 &&
		    100 - g[k].used_core > room)
			room = 100 - g[k].used_core;
	}
	t->gpu_ver[i] = h;
	t->gpu_room[i] = (uint8_t)room;
	t->gpu_empty[i] = (uint8_t)(empty > UINT8_MAX ? UINT8_MAX : empty);
}

/* The table index of the GPU with UUID id uuid on node i, or -1. Reads
 * the table's own copy: the node's registration is a cache miss away,
 * and every bound pod's shares come through here each cycle. */
static long gpu_by_uuid(const struct policy_nodes *t, size_t i, uint32_t uuid)
{
	for (uint32_t k = t->gpu_first[i]; uuid && k < t->gpu_first[i + 1]; k++)
		if (t->gpu[k].uuid == uuid)
			return (long)k;
	return -1;
}

int policy_nodes_held(const struct policy_nodes *t, size_t i, const struct kubeapi_vgpu_held *kh,
                      struct arena *a, const struct policy_held **out)
{
	struct policy_held *h;

	*out = NULL;
	if (!kh || !kh->n || t->gpu_first[i] == t->gpu_first[i + 1])
		return 0;
	if (!(h = arena_alloc(a, sizeof(*h) + kh->n * sizeof(h->s[0]))))
		return -ENOMEM;
	h->n = 0;
	h->ncontainers = kh->ncontainers;
	for (uint32_t k = 0; k < kh->n; k++) {
		long g = gpu_by_uuid(t, i, kh->e[k].uuid);

		if (g >= 0)
			h->s[h->n++] = (struct policy_share){(uint32_t)g, kh->e[k].container,
			                                     kh->e[k].mem, kh->e[k].cores};
	}
	*out = h->n ? h : NULL;
	return 0;
}

void policy__held_use(struct policy_nodes *t, const struct policy_held *h, int sign, int64_t *cores,
                      int64_t *empty)
{
	*cores = *empty = 0;
	for (uint32_t k = 0; h && k < h->n; k++) {
		struct policy_gpu *g = &t->gpu[h->s[k].gpu];
		bool was = g->used_num == 0;

		policy_vgpu_use(g, h->s[k].mem, h->s[k].cores, -sign);
		if (!g->healthy)
			continue;
		*cores += h->s[k].cores;
		*empty += (g->used_num == 0) - was;
	}
}

void policy_nodes_gpus_in_use(const struct policy_nodes *t, double *used, double *total)
{
	*used = *total = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct kubeapi_reslist *al = t->node[i]->allocatable;
		size_t ng;
		const struct policy_gpu *g = policy_nodes_gpus(t, i, &ng);

		for (uint32_t k = 0; al && k < al->n; k++)
			if (al->e[k].res == KUBEAPI_RES_GPU) {
				*total += (double)al->e[k].amount;
				*used += (double)(al->e[k].amount -
				                  t->free[i * t->nres + KUBEAPI_RES_GPU]);
			}
		for (size_t k = 0; k < ng; k++)
			if (g[k].healthy) {
				*total += 1;
				*used += (double)g[k].used_core / 100;
			}
	}
}
