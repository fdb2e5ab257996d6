/*
 * vGPUs in the planner (plan_internal.h): the shares a bound or assumed
 * pod holds, the recent mix of requests the placement scores
 * fragmentation against, and a bind's shares by GPU UUID for the run
 * layer to write.
 *
 * Cost: O(pods x kinds) for the mix, once per cycle, and only when some
 * node has registered GPUs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/frag.h"
#include "policy/plan_internal.h"

int plan__held_of(struct plan_run *r, const struct kubeapi_pod *pod, size_t i,
                  const struct policy_held **out)
{
	const struct kubeapi_vgpu_held *kh = pod->vgpu;

	/* Assumed: the shares just given win over an annotation an earlier
	 * attempt may have left. */
	if (!pod->node && r->in->assumed_vgpu) {
		const struct kubeapi_vgpu_held *mine =
		    idmap_get(r->in->assumed_vgpu, kubeapi_pod_key(pod));
		if (mine)
			kh = mine;
	}
	return policy_nodes_held(&r->p->nodes, i, kh, &r->p->arena, out);
}

/* A pod's kind of request: its CPU and memory, its GPUs as nums of cores
 * percent each (the share of the container that asks most) with that
 * container's memory ask, and the GPU models it may run on. A vGPU ask
 * without cores counts by its memory percentage; whole GPUs
 * (nvidia.com/gpu) are 100 percent of cores and memory each. */
static struct policy_mix_kind kind_of(const struct policy_nodes *t, const struct kubeapi_podspec *s)
{
	struct policy_mix_kind k = {.cpu_m = policy_spec_request(s, KUBEAPI_RES_CPU),
	                            .mem = policy_spec_request(s, KUBEAPI_RES_MEMORY),
	                            .models = policy_nodes_spec_models(t, s)};
	const struct kubeapi_vgpu_ask *a = kubeapi_podspec_vgpu(s);
	int64_t gpus = policy_spec_gpus(s);

	for (uint16_t c = 0; c < s->nvgpu; c++) {
		uint32_t share = a[c].cores ? a[c].cores : a[c].mem_pct <= 100 ? a[c].mem_pct : 0;

		k.nums += a[c].nums;
		if (c == 0 || share > k.cores) {
			k.cores = share;
			k.gpu_mem = a[c].mem;
			k.gpu_mem_pct = a[c].mem_pct;
		}
	}
	if (!s->nvgpu && gpus > 0) {
		k.nums = gpus > UINT32_MAX ? UINT32_MAX : (uint32_t)gpus;
		k.cores = 100;
		k.gpu_mem_pct = 100;
	}
	return k;
}

/* Kinds in the order the mix takes them: the kind first seen earliest
 * (its oldest pod's creation) first, as they would have come one by one,
 * so that the POLICY_MIX_KINDS kept whole are the oldest ones and the
 * mix does not depend on where blobs sit in memory; ties by shape. */
static int kind_cmp(const void *a, const void *b)
{
	const struct policy_mix_kind *x = a, *y = b;

	if (x->first_s != y->first_s)
		return x->first_s < y->first_s ? -1 : 1;
	if (x->nums != y->nums)
		return x->nums < y->nums ? -1 : 1;
	if (x->cores != y->cores)
		return x->cores < y->cores ? -1 : 1;
	if (x->cpu_m != y->cpu_m)
		return x->cpu_m < y->cpu_m ? -1 : 1;
	if (x->mem != y->mem)
		return x->mem < y->mem ? -1 : 1;
	if (x->gpu_mem_pct != y->gpu_mem_pct)
		return x->gpu_mem_pct < y->gpu_mem_pct ? -1 : 1;
	if (x->gpu_mem != y->gpu_mem)
		return x->gpu_mem < y->gpu_mem ? -1 : 1;
	return (x->models > y->models) - (x->models < y->models);
}

/* What the walk counted of one spec blob (the pods of a Job share one). */
struct mix_count {
	size_t pods;
	int64_t first_s;
};

int plan__mix_count(struct plan_run *r, const struct kubeapi_podspec *spec, size_t pods,
                    int64_t first_s)
{
	struct mix_count *c;
	void **n;

	if (!plan__mixing(r) || !pods)
		return 0; /* no registered GPU: nothing to score */
	if (!(n = idmap_ref(&r->mix_specs, (uintptr_t)spec)))
		return -ENOMEM;
	if (!(c = *n)) {
		if (!(c = arena_alloc(&r->p->arena, sizeof(*c))))
			return -ENOMEM;
		*c = (struct mix_count){0, first_s};
		*n = c;
	}
	c->pods += pods;
	if (first_s < c->first_s)
		c->first_s = first_s;
	return 0;
}

int plan__mix(struct plan_run *r)
{
	struct policy_nodes *t = &r->p->nodes;
	struct policy_mix_kind *kinds;
	const struct idmap_slot *e;
	struct policy_mix *m;
	size_t n = 0;

	if (r->mix_specs.n == 0)
		return 0;
	if (!(m = arena_calloc(&r->p->arena, 1, sizeof(*m))) ||
	    !(kinds = arena_alloc(&r->p->arena, r->mix_specs.n * sizeof(*kinds))))
		return -ENOMEM;
	IDMAP_FOREACH(&r->mix_specs, s, e) {
		const struct mix_count *c = e->value;

		kinds[n] = kind_of(t, (const struct kubeapi_podspec *)(uintptr_t)e->key);
		kinds[n].first_s = c->first_s;
		kinds[n++].count = (double)c->pods;
	}
	qsort(kinds, n, sizeof(*kinds), kind_cmp);
	for (size_t k = 0; k < n; k++)
		policy_mix_add(m, &kinds[k], kinds[k].count);
	memcpy(m->model_gpus, t->model_gpus, sizeof(m->model_gpus));
	policy_mix_done(m);
	t->mix = m;
	return 0;
}

int plan_bind_vgpu(const struct plan *p, const struct plan_bind *b, struct kubeapi_vgpu_hold *out,
                   size_t cap, uint32_t *ncontainers)
{
	const struct policy_nodes *t = &p->nodes;
	long i = b->held ? policy_nodes_find(t, b->node) : -1;

	*ncontainers = 0;
	if (i < 0)
		return 0;
	if (b->held->n > cap)
		return -E2BIG;
	for (uint32_t k = 0; k < b->held->n; k++) {
		const struct policy_share *s = &b->held->s[k];

		out[k] = (struct kubeapi_vgpu_hold){
		    .container = s->container,
		    .uuid = t->node[i]->gpus->e[s->gpu - t->gpu_first[i]].uuid,
		    .mem = s->mem,
		    .cores = s->cores,
		};
	}
	*ncontainers = b->held->ncontainers;
	return (int)b->held->n;
}
