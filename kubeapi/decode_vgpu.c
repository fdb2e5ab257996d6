/*
 * The vGPU device protocol in decoded objects (model.h): a Node's
 * registered GPUs, a pod's held shares, and what a container asks. The
 * texts are read by vgpu.h's codec; here they become blobs of interned
 * ids.
 *
 * An annotation that cannot be read is not a reason to drop the object:
 * the Node keeps whole-GPU accounting and the pod holds no share, and
 * the decode reports a warning the cache logs. A container's vGPU limits
 * are part of its spec, so a malformed one fails the pod like any other
 * bad quantity.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/quantity.h"
#include "kubeapi/decode_internal.h"
#include "kubeapi/vgpu.h"

/* Longest annotation read: 64 devices of ~100 bytes each. */
#define MAX_TEXT 16384

static void warn(struct kubeapi__dec *d, const char *what, int rc)
{
	snprintf(d->err->warning, sizeof(d->err->warning), "annotation %s ignored: %s", what,
	         rc == -E2BIG    ? "too many entries"
	         : rc == -ENOENT ? "no devices"
	                         : "malformed");
}

/* The text of annotation key, or 1 when absent or empty. */
static int annotation(struct kubeapi__dec *d, const cJSON *annotations, const char *key,
                      const char **s, size_t *len)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(annotations, key);

	if (!cJSON_IsString(f) || !*f->valuestring)
		return 1;
	*len = strlen(f->valuestring);
	if (*len > MAX_TEXT) {
		warn(d, key, -E2BIG);
		return 1;
	}
	*s = f->valuestring;
	return 0;
}

/* ---- a Node's GPUs ----------------------------------------------------------- */

static int gpus_blob(struct kubeapi__dec *d, const struct kubeapi_vgpu_device *v, size_t n,
                     const struct kubeapi_gpus **out)
{
	struct kubeapi__ids ids = {0};
	struct buf b;
	size_t o = 0;
	int rc = -ENOMEM;

	kubeapi__blob_buf_init(&b);
	if ((o = kubeapi__buf_add(&b, sizeof(struct kubeapi_gpus) +
	                                  n * sizeof(struct kubeapi_gpu))) == (size_t)-1)
		goto out;
	for (size_t k = 0; k < n; k++) {
		struct kubeapi_gpu *g = &((struct kubeapi_gpus *)(b.p + o))->e[k];

		g->uuid = kubeapi__intern_to(d, &ids, v[k].uuid.p, v[k].uuid.len);
		g->type =
		    v[k].type.len ? kubeapi__intern_to(d, &ids, v[k].type.p, v[k].type.len) : 0;
		if (!g->uuid || (v[k].type.len && !g->type))
			goto out;
		g->memory = v[k].memory;
		g->split = v[k].split;
		g->healthy = v[k].healthy;
		g->mig = v[k].mig;
	}
	((struct kubeapi_gpus *)(b.p + o))->n = (uint32_t)n;
	*out = kubeapi__blob(d, b.p, b.len, &ids);
	rc = *out ? 0 : -ENOMEM;
out:
	if (rc < 0)
		kubeapi__ids_drop(d->m->in, &ids);
	buf_free(&b);
	return rc;
}

/* Volcano (NewGPUDevices) takes a registration only from a node whose
 * allocatable offers all three vGPU resources: the device plugin is up. */
static const char *missing_resource(const struct kubeapi__dec *d, const struct kubeapi__amounts *a)
{
	static const char *const names[] = {KUBEAPI_VGPU_NUMBER, KUBEAPI_VGPU_CORES,
	                                    KUBEAPI_VGPU_MEMORY};

	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		int i = kubeapi_model_resource_find(d->m, names[k], strlen(names[k]));

		if (i < 0 || !(a->present >> i & 1) || a->v[i] <= 0)
			return names[k];
	}
	return NULL;
}

int kubeapi__node_gpus(struct kubeapi__dec *d, const cJSON *annotations,
                       const struct kubeapi__amounts *allocatable, const struct kubeapi_gpus **out)
{
	struct kubeapi_vgpu_device v[KUBEAPI_VGPU_MAX_DEVICES];
	const char *s, *missing;
	size_t len, n;
	int rc;

	*out = NULL;
	if (annotation(d, annotations, KUBEAPI_VGPU_REGISTER, &s, &len))
		return 0;
	if ((missing = missing_resource(d, allocatable))) {
		snprintf(
		    d->err->warning, sizeof(d->err->warning),
		    "annotation %s ignored: allocatable has no %s (the device plugin is not up)",
		    KUBEAPI_VGPU_REGISTER, missing);
		return 0;
	}
	if ((rc = kubeapi_vgpu_decode_node(s, len, v, KUBEAPI_VGPU_MAX_DEVICES, &n)) < 0) {
		warn(d, KUBEAPI_VGPU_REGISTER, rc);
		return 0;
	}
	for (size_t k = 0; k < n; k++)
		if (!v[k].uuid.len) {
			warn(d, KUBEAPI_VGPU_REGISTER, -EINVAL);
			return 0;
		}
	return n ? gpus_blob(d, v, n, out) : 0;
}

void kubeapi__gpus_unref(struct intern *in, const struct kubeapi_gpus *g)
{
	if (!g)
		return;
	if (intern_blob_refs(g) == 1)
		for (uint32_t k = 0; k < g->n; k++) {
			intern_unref(in, g->e[k].uuid);
			intern_unref(in, g->e[k].type);
		}
	intern_blob_unref(in, g);
}

/* ---- a pod's shares ---------------------------------------------------------- */

static int held_blob(struct kubeapi__dec *d, const struct kubeapi_vgpu_share *v, size_t n,
                     size_t ncontainers, const struct kubeapi_vgpu_held **out)
{
	struct kubeapi__ids ids = {0};
	struct buf b;
	size_t o;
	int rc = -ENOMEM;

	kubeapi__blob_buf_init(&b);
	if ((o = kubeapi__buf_add(&b, sizeof(struct kubeapi_vgpu_held) +
	                                  n * sizeof(struct kubeapi_vgpu_hold))) == (size_t)-1)
		goto out;
	for (size_t k = 0; k < n; k++) {
		struct kubeapi_vgpu_hold *h = &((struct kubeapi_vgpu_held *)(b.p + o))->e[k];

		if (!(h->uuid = kubeapi__intern_to(d, &ids, v[k].uuid.p, v[k].uuid.len)))
			goto out;
		h->container = v[k].container;
		h->mem = v[k].memory;
		h->cores = v[k].cores;
	}
	((struct kubeapi_vgpu_held *)(b.p + o))->n = (uint32_t)n;
	((struct kubeapi_vgpu_held *)(b.p + o))->ncontainers = (uint32_t)ncontainers;
	*out = kubeapi__blob(d, b.p, b.len, &ids);
	rc = *out ? 0 : -ENOMEM;
out:
	if (rc < 0)
		kubeapi__ids_drop(d->m->in, &ids);
	buf_free(&b);
	return rc;
}

int kubeapi__pod_vgpu(struct kubeapi__dec *d, const cJSON *annotations,
                      const struct kubeapi_vgpu_held **out)
{
	struct kubeapi_vgpu_share v[KUBEAPI_VGPU_MAX_SHARES];
	const char *s;
	size_t len, n, nc;
	int rc;

	*out = NULL;
	if (annotation(d, annotations, KUBEAPI_VGPU_IDS, &s, &len))
		return 0;
	if ((rc = kubeapi_vgpu_decode_pod(s, len, v, KUBEAPI_VGPU_MAX_SHARES, &n, &nc)) < 0) {
		warn(d, KUBEAPI_VGPU_IDS, rc);
		return 0;
	}
	for (size_t k = 0; k < n; k++)
		if (!v[k].uuid.len) {
			warn(d, KUBEAPI_VGPU_IDS, -EINVAL);
			return 0;
		}
	return n ? held_blob(d, v, n, nc, out) : 0;
}

void kubeapi__vgpu_held_unref(struct intern *in, const struct kubeapi_vgpu_held *h)
{
	if (!h)
		return;
	if (intern_blob_refs(h) == 1)
		for (uint32_t k = 0; k < h->n; k++)
			intern_unref(in, h->e[k].uuid);
	intern_blob_unref(in, h);
}

/* ---- what a container asks --------------------------------------------------- */

/* resources.<list>.<name> of container c as a whole number in
 * [0, UINT32_MAX]: 0 with *v, 1 when absent, -EINVAL (err filled). */
static int limit(struct kubeapi__dec *d, const cJSON *c, const char *list, const char *name,
                 const char *path, uint32_t *v)
{
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(res, list);
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(l, name);
	int64_t x;

	if (!q || cJSON_IsNull(q))
		return 1;
	if (cJSON_IsString(q) && quantity_value(q->valuestring, strlen(q->valuestring), &x) == 0 &&
	    x >= 0 && x <= UINT32_MAX) {
		*v = (uint32_t)x;
		return 0;
	}
	if (cJSON_IsNumber(q) && q->valuedouble >= 0 && q->valuedouble <= UINT32_MAX &&
	    q->valuedouble == (double)(uint32_t)q->valuedouble) {
		*v = (uint32_t)q->valuedouble;
		return 0;
	}
	return kubeapi__fail(d, "%s.resources.%s.%s: not a whole number of at most %u", path, list,
	                     name, UINT32_MAX);
}

/* Limits first, then requests (Volcano's order for all but the count). */
static int limit_or_request(struct kubeapi__dec *d, const cJSON *c, const char *name,
                            const char *path, uint32_t *v)
{
	int rc = limit(d, c, "limits", name, path, v);

	return rc == 1 ? limit(d, c, "requests", name, path, v) : rc;
}

int kubeapi__container_vgpu(struct kubeapi__dec *d, const cJSON *c, const char *path,
                            struct kubeapi_vgpu_ask *out)
{
	uint32_t mem = 0;
	int rc, has_num, has_mem;

	*out = (struct kubeapi_vgpu_ask){.nums = 1, .mem_pct = KUBEAPI_VGPU_NO_PCT};
	/* The count is read from limits only; a memory limit alone asks
	 * for one GPU. */
	if ((has_num = limit(d, c, "limits", KUBEAPI_VGPU_NUMBER, path, &out->nums)) < 0 ||
	    (has_mem = limit(d, c, "limits", KUBEAPI_VGPU_MEMORY, path, &mem)) < 0)
		return -EINVAL;
	if (has_num == 1 && has_mem == 1)
		return 1;
	if ((rc = limit_or_request(d, c, KUBEAPI_VGPU_MEMORY, path, &out->mem)) < 0 ||
	    (rc = limit_or_request(d, c, KUBEAPI_VGPU_MEMORY_PCT, path, &out->mem_pct)) < 0 ||
	    (rc = limit_or_request(d, c, KUBEAPI_VGPU_CORES, path, &out->cores)) < 0)
		return rc;
	if (out->mem_pct == KUBEAPI_VGPU_NO_PCT && out->mem == 0)
		out->mem_pct = 100;
	if (out->nums == 0 || out->nums > KUBEAPI_VGPU_MAX_SHARES || out->cores > 100 ||
	    (out->mem_pct > 100 && out->mem_pct != KUBEAPI_VGPU_NO_PCT))
		return kubeapi__fail(d,
		                     "%s: vGPU ask out of range (number 1..%d, cores and memory "
		                     "percentage at most 100)",
		                     path, KUBEAPI_VGPU_MAX_SHARES);
	return 0;
}
