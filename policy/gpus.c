/*
 * The device-level GPU model (gpus.h): one more share on a GPU, and a
 * pod's containers on a node's GPUs.
 */
#include "policy/gpus.h"

#include <errno.h>

uint32_t policy_vgpu_mem_for(const struct policy_gpu *g, const struct kubeapi_vgpu_ask *a)
{
	/* Volcano: uint(float64(Memory) * float64(pct) / 100.0). */
	if (a->mem_pct != KUBEAPI_VGPU_NO_PCT)
		return (uint32_t)((double)g->memory * (double)a->mem_pct / 100.0);
	return a->mem;
}

bool policy_vgpu_fits(const struct policy_gpu *g, const struct kubeapi_vgpu_ask *a)
{
	uint32_t mem = policy_vgpu_mem_for(g, a);

	if (!g->healthy || g->split <= g->used_num)
		return false;
	if ((int64_t)g->memory - (int64_t)g->used_mem < (int64_t)mem)
		return false;
	if ((uint64_t)g->used_core + a->cores > 100)
		return false;
	if (a->cores == 100 && g->used_num > 0)
		return false; /* the GPU alone */
	return !(g->used_core == 100 && a->cores == 0);
}

void policy_vgpu_use(struct policy_gpu *g, uint32_t mem, uint32_t cores, int sign)
{
	if (sign > 0) {
		g->used_num++;
		g->used_mem += mem;
		g->used_core += cores;
		return;
	}
	g->used_num -= g->used_num > 0;
	g->used_mem = g->used_mem >= mem ? g->used_mem - mem : 0;
	g->used_core = g->used_core >= cores ? g->used_core - cores : 0;
}

/* Take shares out[from..*n) back off the GPUs. */
static void undo(struct policy_gpu *gpus, const struct policy_vgpu_share *out, size_t from,
                 size_t n)
{
	for (size_t k = n; k-- > from;)
		policy_vgpu_use(&gpus[out[k].gpu], out[k].mem, out[k].cores, -1);
}

/* One container's ask onto distinct GPUs, by descending index. */
static int place_one(struct policy_gpu *gpus, size_t ngpus, const struct kubeapi_vgpu_ask *a,
                     uint32_t container, struct policy_vgpu_share *out, size_t cap, size_t *n)
{
	uint32_t need = a->nums;

	if (need > ngpus)
		return -ENOSPC;
	for (size_t i = ngpus; i-- > 0 && need > 0;) {
		uint32_t mem;

		if (!policy_vgpu_fits(&gpus[i], a))
			continue;
		if (*n >= cap)
			return -E2BIG;
		mem = policy_vgpu_mem_for(&gpus[i], a);
		policy_vgpu_use(&gpus[i], mem, a->cores, +1);
		out[(*n)++] = (struct policy_vgpu_share){container, (uint32_t)i, mem, a->cores};
		need--;
	}
	return need ? -ENOSPC : 0;
}

int policy_vgpu_place(struct policy_gpu *gpus, size_t ngpus, const struct kubeapi_vgpu_ask *asks,
                      size_t nasks, struct policy_vgpu_share *out, size_t cap, size_t *nout)
{
	size_t n = 0;
	int rc = 0;

	for (size_t c = 0; c < nasks && rc == 0; c++)
		rc = place_one(gpus, ngpus, &asks[c], (uint32_t)c, out, cap, &n);
	if (rc < 0) {
		undo(gpus, out, 0, n);
		n = 0;
	}
	*nout = n;
	return rc;
}
