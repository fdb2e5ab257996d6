/*
 * vGPU shares written before the binding (sched.h).
 *
 * A pod given vGPU shares is bound in two writes, as Volcano v1.15.1
 * does it (vgpu/device_info.go, Allocate): a merge patch of the pod's
 * annotations, which the device plugin reads when the container starts
 * (the shares in volcano.sh/vgpu-ids-new and devices-to-allocate, the
 * node in vgpu-node, bind-phase "allocating", the times), then the
 * binding. The patch names the pod's uid and the resourceVersion the
 * decision saw (bind.c): it lands only on that pod, still unbound. The
 * shares stay assumed with the pod until the watch shows it
 * bound, so no cycle gives them out twice; and if the binding never
 * happens, an annotation on an unbound pod gives nothing away: the
 * planner counts shares only on bound pods and its own assumptions.
 *
 * Volcano also takes a node lock (an annotation on the Node) when
 * nodelock is enabled; Muster does not: its own assumptions already keep
 * two placements off one GPU, and it is the only scheduler placing vGPU
 * pods.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubeapi/vgpu.h"
#include "kubeapi/writes.h"
#include "scheduler/sched.h"

int sched_shares_keep(struct sched *s, struct sched_assumed *e, const struct plan_bind *b)
{
	struct kubeapi_vgpu_hold v[KUBEAPI_VGPU_MAX_SHARES];
	struct intern *in = kubeapi_model_intern(kubeapi_cache_model(s->cache));
	uint32_t nc;
	int n = plan_bind_vgpu(&s->plan, b, v, KUBEAPI_VGPU_MAX_SHARES, &nc);

	if (n <= 0)
		return n;
	e->vgpu = malloc(sizeof(*e->vgpu) + (size_t)n * sizeof(v[0]));
	if (!e->vgpu)
		return -ENOMEM;
	e->vgpu->n = (uint32_t)n;
	e->vgpu->ncontainers = nc;
	memcpy(e->vgpu->e, v, (size_t)n * sizeof(v[0]));
	for (int k = 0; k < n; k++)
		intern_ref(in, v[k].uuid); /* the node may go; the text stays ours */
	return 0;
}

void sched_shares_free(struct sched *s, struct sched_assumed *e)
{
	/* At shutdown the cache, and the strings with it, is gone first:
	 * then there is nothing left to let go of but the memory. */
	struct intern *in = s->cache ? kubeapi_model_intern(kubeapi_cache_model(s->cache)) : NULL;

	for (uint32_t k = 0; in && e->vgpu && k < e->vgpu->n; k++)
		intern_unref(in, e->vgpu->e[k].uuid);
	free(e->vgpu);
	e->vgpu = NULL;
}

/* The model of GPU uuid on node (its registration), or "". */
static const char *gpu_type(struct sched *s, const struct kubeapi_node *node, uint32_t uuid)
{
	for (uint32_t k = 0; node && node->gpus && k < node->gpus->n; k++)
		if (node->gpus->e[k].uuid == uuid)
			return node->gpus->e[k].type ? sched_str(s, node->gpus->e[k].type) : "";
	return "";
}

/* The shares' text, as Volcano's encodePodDevices writes it. */
static int encode(struct sched *s, const struct sched_assumed *e, struct buf *out)
{
	const struct kubeapi_node *node = idmap_get(
	    kubeapi_cache_store(s->cache, KUBEAPI_STORE_NODES), kubeapi_cache_key(0, e->node));
	struct kubeapi_vgpu_share v[KUBEAPI_VGPU_MAX_SHARES];

	for (uint32_t k = 0; k < e->vgpu->n; k++) {
		const char *uuid = sched_str(s, e->vgpu->e[k].uuid);
		const char *type = gpu_type(s, node, e->vgpu->e[k].uuid);

		v[k] = (struct kubeapi_vgpu_share){
		    .container = e->vgpu->e[k].container,
		    .uuid = {uuid, strlen(uuid)},
		    .type = {type, strlen(type)},
		    .memory = e->vgpu->e[k].mem,
		    .cores = e->vgpu->e[k].cores,
		};
	}
	return kubeapi_vgpu_encode_pod(v, e->vgpu->n, e->vgpu->ncontainers, out);
}

int sched_shares_write(struct sched *s, struct sched_assumed *e, const struct kubeapi_target *t,
                       kubeapi_http_done_cb cb)
{
	static const char *const keys[] = {KUBEAPI_VGPU_NODE,       KUBEAPI_VGPU_TIME,
	                                   KUBEAPI_VGPU_IDS,        KUBEAPI_VGPU_TO_ALLOCATE,
	                                   KUBEAPI_VGPU_BIND_PHASE, KUBEAPI_VGPU_BIND_TIME};
	struct buf ids;
	char now[24];
	int rc;

	buf_init(&ids, 64 * 1024);
	if ((rc = encode(s, e, &ids)) < 0 || (rc = buf_append(&ids, "", 1)) < 0) {
		buf_free(&ids);
		return rc;
	}
	snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
	{
		const char *values[] = {sched_str(s, e->node), now, ids.p, ids.p,
		                        "allocating",          now};

		rc = kubeapi_patch_pod_annotations(s->http, t, keys, values, 6, cb, e);
	}
	buf_free(&ids);
	return rc;
}
