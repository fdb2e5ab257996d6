/*
 * Pods: metadata, group membership, phase and PodScheduled, and the
 * scheduling spec, which is built as one position-independent blob and
 * interned, so the pods of one Job or gang share it.
 *
 * Effective requests follow Kubernetes (resource helpers' PodRequests):
 *   sidecars  = running sum of init containers with restartPolicy Always
 *   init      = max over init containers of (own requests + sidecars
 *               started before it), a sidecar counting as the sum so far
 *   requests  = max(sum(containers) + sidecars, init) + overhead
 * per resource, except that pod-level requests (spec.resources, for cpu,
 * memory and hugepages-*) replace the container figure before overhead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeapi/decode_internal.h"

#define GROUP_LABEL      "scheduling.x-k8s.io/pod-group"
#define GROUP_ANNOTATION "scheduling.k8s.io/group-name"
#define TASK_KEY         "volcano.sh/task-spec"
#define MUSTER_PREFIX    "muster.dev/"

/* The spec under construction: plain arrays, laid out into a blob at the
 * end. String references taken for it are in ids. */
struct spec_builder {
	struct kubeapi_podspec h;
	struct kubeapi__amounts req;
	struct kubeapi_toleration *tol;
	struct kubeapi_kv *sel;
	struct kubeapi_term *terms; /* required, then preferred */
	struct kubeapi_requirement *reqs;
	uint32_t *values;
	struct kubeapi_vgpu_ask *vgpu;
	size_t ntol, nsel, nterms, nreqs, nvalues, nvgpu;
	struct kubeapi__ids ids;
};

static void builder_free(struct kubeapi__dec *d, struct spec_builder *b)
{
	kubeapi__ids_drop(d->m->in, &b->ids);
}

/* The arrays live in the model's scratch: no allocation per decode. */
static void builder_init(struct kubeapi__dec *d, struct spec_builder *b)
{
	struct kubeapi__scratch *s = d->m->scratch;

	memset(b, 0, sizeof(*b));
	b->tol = s->tol;
	b->sel = s->sel;
	b->terms = s->terms;
	b->reqs = s->reqs;
	b->values = s->values;
	b->vgpu = s->vgpu;
}

/* ---- requests -------------------------------------------------------------- */

/* The requests of `parent` (a container, or the pod spec for pod-level
 * resources) at parent.resources.requests. */
static int requests_of(struct kubeapi__dec *d, const cJSON *parent, const char *path,
                       struct kubeapi__amounts *out)
{
	const cJSON *res, *req;
	char rpath[80], qpath[96];
	int rc;

	memset(out, 0, sizeof(*out));
	kubeapi__path(rpath, sizeof(rpath), path, "resources");
	kubeapi__path(qpath, sizeof(qpath), rpath, "requests");
	if ((rc = kubeapi__object(d, parent, "resources", rpath, &res)) < 0 ||
	    (rc = kubeapi__object(d, res, "requests", qpath, &req)) < 0)
		return rc;
	return kubeapi__amounts_read(d, req, qpath, out);
}

static int container_requests(struct kubeapi__dec *d, const cJSON *c, const char *path,
                              struct kubeapi__amounts *out)
{
	if (!cJSON_IsObject(c))
		return kubeapi__fail(d, "%s: expected an object", path);
	return requests_of(d, c, path, out);
}

static int is_sidecar(struct kubeapi__dec *d, const cJSON *c, const char *path, bool *out)
{
	char p[80];
	const char *s;
	size_t len;
	int rc = kubeapi__string(d, c, "restartPolicy",
	                         kubeapi__path(p, sizeof(p), path, "restartPolicy"), 16, &s, &len);

	*out = rc == 0 && len == 6 && memcmp(s, "Always", 6) == 0;
	return rc < 0 ? rc : 0;
}

static int init_requests(struct kubeapi__dec *d, const cJSON *spec, struct kubeapi__amounts *init,
                         struct kubeapi__amounts *sidecars)
{
	const cJSON *list, *c;
	char path[64];
	int rc, i = 0;

	if ((rc = kubeapi__array(d, spec, "initContainers", "spec.initContainers",
	                         KUBEAPI_MAX_CONTAINERS, &list)) < 0)
		return rc;
	cJSON_ArrayForEach(c, list)
	{
		struct kubeapi__amounts r;
		bool sidecar;

		snprintf(path, sizeof(path), "spec.initContainers[%d]", i++);
		if ((rc = container_requests(d, c, path, &r)) < 0 ||
		    (rc = is_sidecar(d, c, path, &sidecar)) < 0)
			return rc;
		if (sidecar) {
			if ((rc = kubeapi__amounts_add(d, sidecars, &r, path)) < 0)
				return rc;
			kubeapi__amounts_max(init, sidecars);
		} else {
			if ((rc = kubeapi__amounts_add(d, &r, sidecars, path)) < 0)
				return rc;
			kubeapi__amounts_max(init, &r);
		}
	}
	return 0;
}

/* Pod-level requests replace the container figure for the resources
 * Kubernetes supports there (component-helpers IsSupportedPodLevelResource). */
static int pod_level_requests(struct kubeapi__dec *d, const cJSON *spec,
                              struct kubeapi__amounts *out)
{
	struct kubeapi__amounts pod;
	unsigned i;
	int rc;

	if ((rc = requests_of(d, spec, "spec", &pod)) < 0)
		return rc;
	for (i = 0; i < KUBEAPI_MAX_RESOURCES; i++) {
		if (!(pod.present >> i & 1) || (i != KUBEAPI_RES_CPU && i != KUBEAPI_RES_MEMORY &&
		                                strncmp(d->m->resources[i], "hugepages-", 10) != 0))
			continue;
		out->v[i] = pod.v[i];
		out->present |= 1ULL << i;
	}
	return 0;
}

/* Containers' vGPU asks, in container order (init containers ask none:
 * Volcano reads spec.containers only). */
static int container_vgpu(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *c,
                          const char *path)
{
	int rc = kubeapi__container_vgpu(d, c, path, &b->vgpu[b->nvgpu]);

	if (rc < 0)
		return rc;
	b->nvgpu += rc == 0;
	return 0;
}

static int pod_requests(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *spec,
                        struct kubeapi__amounts *out)
{
	struct kubeapi__amounts init = {0}, sidecars = {0}, r, overhead = {0};
	const cJSON *list, *c, *oh;
	char path[64];
	int rc, i = 0;

	memset(out, 0, sizeof(*out));
	if ((rc = kubeapi__array(d, spec, "containers", "spec.containers", KUBEAPI_MAX_CONTAINERS,
	                         &list)) < 0)
		return rc;
	cJSON_ArrayForEach(c, list)
	{
		snprintf(path, sizeof(path), "spec.containers[%d]", i++);
		if ((rc = container_requests(d, c, path, &r)) < 0 ||
		    (rc = kubeapi__amounts_add(d, out, &r, path)) < 0 ||
		    (rc = container_vgpu(d, b, c, path)) < 0)
			return rc;
	}
	if ((rc = init_requests(d, spec, &init, &sidecars)) < 0 ||
	    (rc = kubeapi__amounts_add(d, out, &sidecars, "spec.initContainers")) < 0)
		return rc;
	kubeapi__amounts_max(out, &init);
	if ((rc = pod_level_requests(d, spec, out)) < 0 ||
	    (rc = kubeapi__object(d, spec, "overhead", "spec.overhead", &oh)) < 0 ||
	    (rc = kubeapi__amounts_read(d, oh, "spec.overhead", &overhead)) < 0)
		return rc;
	return kubeapi__amounts_add(d, out, &overhead, "spec.overhead");
}

/* ---- tolerations and selectors ---------------------------------------------- */

static int parse_effect(const char *s, size_t len, uint8_t *out)
{
	static const char *const names[] = {"", "NoSchedule", "PreferNoSchedule", "NoExecute"};
	int i = kubeapi__lookup(names, sizeof(names) / sizeof(names[0]), s, len);

	if (i < 0)
		return -EINVAL;
	*out = (uint8_t)i;
	return 0;
}

static int toleration(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *t,
                      const char *path)
{
	struct kubeapi_toleration *o = &b->tol[b->ntol];
	const char *key, *op, *val, *eff;
	size_t klen, oplen, vlen, elen;
	char p[96];
	int64_t secs;
	int rc;

	memset(o, 0, sizeof(*o)); /* scratch: clear what a previous pod left */
	if (!cJSON_IsObject(t))
		return kubeapi__fail(d, "%s: expected an object", path);
	if (kubeapi__string(d, t, "key", kubeapi__path(p, sizeof(p), path, "key"),
	                    KUBEAPI_MAX_NAME + 64, &key, &klen) < 0 ||
	    kubeapi__string(d, t, "operator", kubeapi__path(p, sizeof(p), path, "operator"), 16,
	                    &op, &oplen) < 0 ||
	    kubeapi__string(d, t, "value", kubeapi__path(p, sizeof(p), path, "value"),
	                    KUBEAPI_MAX_NAME, &val, &vlen) < 0 ||
	    kubeapi__string(d, t, "effect", kubeapi__path(p, sizeof(p), path, "effect"), 32, &eff,
	                    &elen) < 0)
		return -EINVAL;
	if (op && !(oplen == 6 && memcmp(op, "Exists", 6) == 0) &&
	    !(oplen == 5 && memcmp(op, "Equal", 5) == 0) && oplen != 0)
		return kubeapi__fail(d, "%s.operator: unknown \"%s\"", path, op);
	o->op = op && oplen == 6 ? KUBEAPI_TOL_EXISTS : KUBEAPI_TOL_EQUAL;
	if (eff && parse_effect(eff, elen, &o->effect) < 0)
		return kubeapi__fail(d, "%s.effect: unknown \"%s\"", path, eff);
	rc = kubeapi__int(d, t, "tolerationSeconds",
	                  kubeapi__path(p, sizeof(p), path, "tolerationSeconds"),
	                  -(INT64_C(1) << 52), INT64_C(1) << 52, &secs);
	if (rc < 0)
		return rc;
	o->has_seconds = rc == 0;
	o->seconds = rc == 0 ? secs : 0;
	if (klen && !(o->key = kubeapi__intern_to(d, &b->ids, key, klen)))
		return -ENOMEM;
	if (vlen && !(o->value = kubeapi__intern_to(d, &b->ids, val, vlen)))
		return -ENOMEM;
	b->ntol++;
	return 0;
}

static int tolerations(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *spec)
{
	const cJSON *list, *t;
	char path[64];
	int rc, i = 0;

	if ((rc = kubeapi__array(d, spec, "tolerations", "spec.tolerations", KUBEAPI_MAX_LIST,
	                         &list)) < 0)
		return rc;
	cJSON_ArrayForEach(t, list)
	{
		snprintf(path, sizeof(path), "spec.tolerations[%d]", i++);
		if ((rc = toleration(d, b, t, path)) < 0)
			return rc;
	}
	return 0;
}

static int kv_by_key(const void *a, const void *b)
{
	const struct kubeapi_kv *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static int node_selector(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *spec)
{
	const cJSON *map, *e;
	int rc;

	if ((rc = kubeapi__object(d, spec, "nodeSelector", "spec.nodeSelector", &map)) < 0)
		return rc;
	cJSON_ArrayForEach(e, map)
	{
		size_t klen = strlen(e->string);

		if (!cJSON_IsString(e))
			return kubeapi__fail(d, "spec.nodeSelector.%.64s: expected a string",
			                     e->string);
		if (b->nsel == KUBEAPI_MAX_LIST || klen > KUBEAPI_MAX_NAME + 64 ||
		    strlen(e->valuestring) > KUBEAPI_MAX_NAME)
			return kubeapi__fail(d, "spec.nodeSelector: too large");
		b->sel[b->nsel].key = kubeapi__intern_to(d, &b->ids, e->string, klen);
		b->sel[b->nsel].value =
		    kubeapi__intern_to(d, &b->ids, e->valuestring, strlen(e->valuestring));
		if (!b->sel[b->nsel].key || !b->sel[b->nsel].value)
			return -ENOMEM;
		b->nsel++;
	}
	qsort(b->sel, b->nsel, sizeof(b->sel[0]), kv_by_key);
	return 0;
}

static int parse_selector_op(const char *s, size_t len, uint8_t *out)
{
	static const char *const names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
	int i = kubeapi__lookup(names, sizeof(names) / sizeof(names[0]), s, len);

	if (i < 0)
		return -EINVAL;
	*out = (uint8_t)i;
	return 0;
}

/* One requirement {key, operator, values}, appended to b->reqs. */
static int requirement(struct kubeapi__dec *d, struct kubeapi__ids *ids, const cJSON *r,
                       const char *path, bool is_field, struct kubeapi_requirement *o,
                       uint32_t *values, size_t *nvalues)
{
	const char *key, *op;
	size_t klen, oplen;
	const cJSON *vals, *v;
	char p[160];

	memset(o, 0, sizeof(*o)); /* scratch: clear what a previous pod left */
	if (!cJSON_IsObject(r))
		return kubeapi__fail(d, "%s: expected an object", path);
	if (kubeapi__string(d, r, "key", kubeapi__path(p, sizeof(p), path, "key"),
	                    KUBEAPI_MAX_NAME + 64, &key, &klen) < 0 ||
	    kubeapi__string(d, r, "operator", kubeapi__path(p, sizeof(p), path, "operator"), 16,
	                    &op, &oplen) < 0 ||
	    kubeapi__array(d, r, "values", kubeapi__path(p, sizeof(p), path, "values"),
	                   KUBEAPI_MAX_LIST, &vals) < 0)
		return -EINVAL;
	if (!key)
		return kubeapi__fail(d, "%s.key: missing", path);
	if (!op)
		return kubeapi__fail(d, "%s.operator: missing", path);
	if (parse_selector_op(op, oplen, &o->op) < 0)
		return kubeapi__fail(d, "%s.operator: unknown \"%s\"", path, op);
	o->is_field = is_field;
	o->first_value = (uint32_t)*nvalues;
	if (!(o->key = kubeapi__intern_to(d, ids, key, klen)))
		return -ENOMEM;
	cJSON_ArrayForEach(v, vals)
	{
		if (!cJSON_IsString(v) || strlen(v->valuestring) > KUBEAPI_MAX_NAME)
			return kubeapi__fail(d, "%s.values: expected short strings", path);
		if (*nvalues == KUBEAPI_MAX_LIST)
			return kubeapi__fail(d, "%s.values: too many in this pod", path);
		values[*nvalues] =
		    kubeapi__intern_to(d, ids, v->valuestring, strlen(v->valuestring));
		if (!values[(*nvalues)++])
			return -ENOMEM;
		o->nvalues++;
	}
	return 0;
}

static int term_part(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *term,
                     const char *key, const char *path, bool is_field)
{
	const cJSON *list, *r;
	char p[128];
	int rc, i = 0;

	if ((rc = kubeapi__array(d, term, key, kubeapi__path(p, sizeof(p), path, key),
	                         KUBEAPI_MAX_LIST, &list)) < 0)
		return rc;
	cJSON_ArrayForEach(r, list)
	{
		if (b->nreqs == KUBEAPI_MAX_LIST)
			return kubeapi__fail(d, "%s: too many requirements", path);
		snprintf(p, sizeof(p), "%s.%s[%d]", path, key, i++);
		rc = requirement(d, &b->ids, r, p, is_field, &b->reqs[b->nreqs], b->values,
		                 &b->nvalues);
		if (rc < 0)
			return rc;
		b->nreqs++;
	}
	return 0;
}

static int term(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *t, const char *path,
                int32_t weight)
{
	struct kubeapi_term *o;
	int rc;

	if (!cJSON_IsObject(t))
		return kubeapi__fail(d, "%s: expected an object", path);
	if (b->nterms == KUBEAPI_MAX_LIST)
		return kubeapi__fail(d, "%s: too many terms", path);
	o = &b->terms[b->nterms++];
	memset(o, 0, sizeof(*o));
	o->first = (uint32_t)b->nreqs;
	o->weight = weight;
	if ((rc = term_part(d, b, t, "matchExpressions", path, false)) < 0 ||
	    (rc = term_part(d, b, t, "matchFields", path, true)) < 0)
		return rc;
	o->n = (uint32_t)b->nreqs - o->first;
	return 0;
}

static int preferred_terms(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *na)
{
	const cJSON *list, *p, *pref;
	char path[96], fpath[112];
	int64_t w;
	int rc, i = 0;

	if ((rc = kubeapi__array(d, na, "preferredDuringSchedulingIgnoredDuringExecution",
	                         "spec.affinity.nodeAffinity.preferred", KUBEAPI_MAX_LIST, &list)) <
	    0)
		return rc;
	cJSON_ArrayForEach(p, list)
	{
		snprintf(path, sizeof(path), "spec.affinity.nodeAffinity.preferred[%d]", i++);
		if ((rc = kubeapi__int(d, p, "weight",
		                       kubeapi__path(fpath, sizeof(fpath), path, "weight"), 1, 100,
		                       &w)) != 0)
			return rc < 0 ? rc : kubeapi__fail(d, "%s.weight: missing", path);
		if ((rc = kubeapi__object(d, p, "preference",
		                          kubeapi__path(fpath, sizeof(fpath), path, "preference"),
		                          &pref)) != 0)
			return rc < 0 ? rc : kubeapi__fail(d, "%s.preference: missing", path);
		if ((rc = term(d, b, pref, path, (int32_t)w)) < 0)
			return rc;
		b->h.npreferred++;
	}
	return 0;
}

static int node_affinity(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *spec)
{
	const cJSON *aff, *na, *req, *terms, *t;
	char path[96];
	int rc, i = 0;

	if ((rc = kubeapi__object(d, spec, "affinity", "spec.affinity", &aff)) < 0 ||
	    (rc = kubeapi__object(d, aff, "nodeAffinity", "spec.affinity.nodeAffinity", &na)) < 0 ||
	    (rc = kubeapi__object(d, na, "requiredDuringSchedulingIgnoredDuringExecution",
	                          "spec.affinity.nodeAffinity.required", &req)) < 0 ||
	    (rc = kubeapi__array(d, req, "nodeSelectorTerms",
	                         "spec.affinity.nodeAffinity.required.nodeSelectorTerms",
	                         KUBEAPI_MAX_LIST, &terms)) < 0)
		return rc;
	cJSON_ArrayForEach(t, terms)
	{
		snprintf(path, sizeof(path), "spec.affinity.nodeAffinity.required[%d]", i++);
		if ((rc = term(d, b, t, path, 0)) < 0)
			return rc;
		b->h.nrequired++;
	}
	return preferred_terms(d, b, na);
}

/* ---- what Muster does not apply yet (model.h) --------------------------------- */

/* Is o[key] an array with at least one entry? 1, 0, or a negative errno. */
static int nonempty(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path)
{
	const cJSON *a;
	int rc = kubeapi__array(d, o, key, path, KUBEAPI_MAX_LIST, &a);

	return rc < 0 ? rc : rc == 0 && cJSON_GetArraySize(a) > 0;
}

/* Required terms of spec.affinity.podAffinity and podAntiAffinity. */
static int pod_affinity(struct kubeapi__dec *d, const cJSON *spec, uint16_t *bits)
{
	static const struct {
		const char *key, *path;
		uint16_t bit;
	} kinds[] = {
	    {"podAffinity", "spec.affinity.podAffinity", KUBEAPI_UNSUP_POD_AFFINITY},
	    {"podAntiAffinity", "spec.affinity.podAntiAffinity", KUBEAPI_UNSUP_POD_ANTI_AFFINITY},
	};
	const cJSON *aff, *o;
	char path[96];
	int rc;

	if ((rc = kubeapi__object(d, spec, "affinity", "spec.affinity", &aff)) < 0)
		return rc;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		if ((rc = kubeapi__object(d, aff, kinds[k].key, kinds[k].path, &o)) < 0)
			return rc;
		kubeapi__path(path, sizeof(path), kinds[k].path,
		              "requiredDuringSchedulingIgnoredDuringExecution");
		if ((rc = nonempty(d, o, "requiredDuringSchedulingIgnoredDuringExecution", path)) <
		    0)
			return rc;
		if (rc)
			*bits |= kinds[k].bit;
	}
	return 0;
}

/* A topology spread constraint other than ScheduleAnyway (DoNotSchedule,
 * which the API server requires to be stated, or a value of a later
 * version): a filter. */
static int spread(struct kubeapi__dec *d, const cJSON *spec, uint16_t *bits)
{
	const cJSON *list, *c;
	const char *s;
	size_t len;
	int rc;

	if ((rc = kubeapi__array(d, spec, "topologySpreadConstraints",
	                         "spec.topologySpreadConstraints", KUBEAPI_MAX_LIST, &list)) < 0)
		return rc;
	cJSON_ArrayForEach(c, list)
	{
		if ((rc = kubeapi__string(d, c, "whenUnsatisfiable",
		                          "spec.topologySpreadConstraints[].whenUnsatisfiable", 32,
		                          &s, &len)) < 0)
			return rc;
		if (!(len == 14 && memcmp(s, "ScheduleAnyway", 14) == 0))
			*bits |= KUBEAPI_UNSUP_SPREAD;
	}
	return 0;
}

/* Volumes whose claim binds to a node: persistentVolumeClaim, ephemeral. */
static int volumes(struct kubeapi__dec *d, const cJSON *spec, uint16_t *bits)
{
	const cJSON *list, *v;
	int rc;

	if ((rc = kubeapi__array(d, spec, "volumes", "spec.volumes", KUBEAPI_MAX_LIST, &list)) < 0)
		return rc;
	cJSON_ArrayForEach(v, list)
	{
		if (cJSON_GetObjectItemCaseSensitive(v, "persistentVolumeClaim") ||
		    cJSON_GetObjectItemCaseSensitive(v, "ephemeral"))
			*bits |= KUBEAPI_UNSUP_VOLUMES;
	}
	return 0;
}

/* A hostPort on any port of any container, init containers included. */
static int host_ports(struct kubeapi__dec *d, const cJSON *spec, uint16_t *bits)
{
	static const char *const lists[] = {"containers", "initContainers"};
	const cJSON *list, *c, *ports, *p;
	int64_t v;
	int rc;

	for (size_t k = 0; k < 2; k++) {
		if ((rc = kubeapi__array(d, spec, lists[k], "spec.containers",
		                         KUBEAPI_MAX_CONTAINERS, &list)) < 0)
			return rc;
		cJSON_ArrayForEach(c, list)
		{
			if ((rc = kubeapi__array(d, c, "ports", "spec.containers[].ports",
			                         KUBEAPI_MAX_LIST, &ports)) < 0)
				return rc;
			cJSON_ArrayForEach(p, ports)
			{
				if ((rc = kubeapi__int(d, p, "hostPort",
				                       "spec.containers[].ports[].hostPort", 0,
				                       65535, &v)) < 0)
					return rc;
				if (rc == 0 && v > 0)
					*bits |= KUBEAPI_UNSUP_HOST_PORTS;
			}
		}
	}
	return 0;
}

/* What the spec states that Muster does not apply, and its gates. */
static int spec_unsupported(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *spec)
{
	uint16_t bits = 0;
	int rc;

	if ((rc = pod_affinity(d, spec, &bits)) < 0 || (rc = spread(d, spec, &bits)) < 0 ||
	    (rc = volumes(d, spec, &bits)) < 0 || (rc = host_ports(d, spec, &bits)) < 0)
		return rc;
	if ((rc = nonempty(d, spec, "resourceClaims", "spec.resourceClaims")) < 0)
		return rc;
	if (rc)
		bits |= KUBEAPI_UNSUP_CLAIMS;
	if ((rc = nonempty(d, spec, "schedulingGates", "spec.schedulingGates")) < 0)
		return rc;
	b->h.gated = (uint8_t)rc;
	b->h.unsupported = bits;
	return 0;
}

/* ---- spec header fields -------------------------------------------------------- */

static int spec_scalars(struct kubeapi__dec *d, struct spec_builder *b, const cJSON *spec)
{
	const char *s;
	size_t len;
	int64_t v;
	int rc;

	if ((rc = kubeapi__string(d, spec, "schedulerName", "spec.schedulerName", KUBEAPI_MAX_NAME,
	                          &s, &len)) < 0)
		return rc;
	if (len && !(b->h.scheduler = kubeapi__intern_to(d, &b->ids, s, len)))
		return -ENOMEM;
	if ((rc = kubeapi__string(d, spec, "priorityClassName", "spec.priorityClassName",
	                          KUBEAPI_MAX_NAME, &s, &len)) < 0)
		return rc;
	if (len && !(b->h.priority_class = kubeapi__intern_to(d, &b->ids, s, len)))
		return -ENOMEM;
	if ((rc = kubeapi__int(d, spec, "priority", "spec.priority", INT32_MIN, INT32_MAX, &v)) < 0)
		return rc;
	b->h.has_priority = rc == 0;
	b->h.priority = rc == 0 ? (int32_t)v : 0;
	if ((rc = kubeapi__string(d, spec, "preemptionPolicy", "spec.preemptionPolicy", 32, &s,
	                          &len)) < 0)
		return rc;
	b->h.preempt_never = len == 5 && memcmp(s, "Never", 5) == 0;
	rc = kubeapi__int(d, spec, "activeDeadlineSeconds", "spec.activeDeadlineSeconds", 1,
	                  INT64_C(1) << 52, &v);
	if (rc < 0)
		return rc;
	b->h.active_deadline_s = rc == 0 ? v : -1;
	return 0;
}

/* Lay the builder's arrays out after the header and intern the result. */
static int spec_blob(struct kubeapi__dec *d, struct spec_builder *b,
                     const struct kubeapi_podspec **out)
{
	struct buf buf;
	struct kubeapi_res res[KUBEAPI_MAX_RESOURCES];
	size_t o_h, o_req, o_tol, o_sel, o_terms, o_reqs, o_vals, o_vgpu;
	unsigned nres = kubeapi__amounts_list(&b->req, res);

	kubeapi__blob_buf_init(&buf);
	o_h = kubeapi__buf_add(&buf, sizeof(b->h));
	o_req = kubeapi__buf_add(&buf, nres * sizeof(res[0]));
	o_tol = kubeapi__buf_add(&buf, b->ntol * sizeof(b->tol[0]));
	o_sel = kubeapi__buf_add(&buf, b->nsel * sizeof(b->sel[0]));
	o_terms = kubeapi__buf_add(&buf, b->nterms * sizeof(b->terms[0]));
	o_reqs = kubeapi__buf_add(&buf, b->nreqs * sizeof(b->reqs[0]));
	o_vals = kubeapi__buf_add(&buf, b->nvalues * sizeof(b->values[0]));
	o_vgpu = kubeapi__buf_add(&buf, b->nvgpu * sizeof(b->vgpu[0]));
	if (o_h == (size_t)-1 || o_req == (size_t)-1 || o_tol == (size_t)-1 ||
	    o_sel == (size_t)-1 || o_terms == (size_t)-1 || o_reqs == (size_t)-1 ||
	    o_vals == (size_t)-1 || o_vgpu == (size_t)-1) {
		buf_free(&buf);
		return -ENOMEM;
	}
	b->h.nrequests = (uint16_t)nres;
	b->h.ntolerations = (uint16_t)b->ntol;
	b->h.nselector = (uint16_t)b->nsel;
	b->h.nrequirements = (uint16_t)b->nreqs;
	b->h.nvalues = (uint32_t)b->nvalues;
	b->h.nvgpu = (uint16_t)b->nvgpu;
	b->h.off_vgpu = (uint32_t)o_vgpu;
	b->h.off_requests = (uint32_t)o_req;
	b->h.off_tolerations = (uint32_t)o_tol;
	b->h.off_selector = (uint32_t)o_sel;
	b->h.off_terms = (uint32_t)o_terms;
	b->h.off_requirements = (uint32_t)o_reqs;
	b->h.off_values = (uint32_t)o_vals;
	memcpy(buf.p + o_h, &b->h, sizeof(b->h));
	memcpy(buf.p + o_req, res, nres * sizeof(res[0]));
	memcpy(buf.p + o_tol, b->tol, b->ntol * sizeof(b->tol[0]));
	memcpy(buf.p + o_sel, b->sel, b->nsel * sizeof(b->sel[0]));
	memcpy(buf.p + o_terms, b->terms, b->nterms * sizeof(b->terms[0]));
	memcpy(buf.p + o_reqs, b->reqs, b->nreqs * sizeof(b->reqs[0]));
	memcpy(buf.p + o_vals, b->values, b->nvalues * sizeof(b->values[0]));
	memcpy(buf.p + o_vgpu, b->vgpu, b->nvgpu * sizeof(b->vgpu[0]));
	b->ids.res = kubeapi__res_mask(res, nres);
	*out = kubeapi__blob(d, buf.p, buf.len, &b->ids);
	buf_free(&buf);
	return *out ? 0 : -ENOMEM;
}

static int pod_spec(struct kubeapi__dec *d, const cJSON *spec, const struct kubeapi_podspec **out)
{
	struct spec_builder b;
	int rc;

	builder_init(d, &b);
	if ((rc = spec_scalars(d, &b, spec)) < 0 || (rc = pod_requests(d, &b, spec, &b.req)) < 0 ||
	    (rc = tolerations(d, &b, spec)) < 0 || (rc = node_selector(d, &b, spec)) < 0 ||
	    (rc = node_affinity(d, &b, spec)) < 0 || (rc = spec_unsupported(d, &b, spec)) < 0)
		goto out;
	rc = spec_blob(d, &b, out);
out:
	builder_free(d, &b);
	return rc;
}

void kubeapi__podspec_unref(struct kubeapi_model *m, const struct kubeapi_podspec *s)
{
	struct intern *in = m->in;
	const struct kubeapi_toleration *t;
	const struct kubeapi_kv *kv;
	const struct kubeapi_requirement *r;
	const uint32_t *v;
	uint32_t i;

	if (!s)
		return;
	if (intern_blob_refs(s) == 1) {
		kubeapi__res_unref(m, kubeapi_podspec_requests(s), s->nrequests);
		t = kubeapi_podspec_tolerations(s);
		kv = kubeapi_podspec_selector(s);
		r = kubeapi_podspec_requirements(s);
		v = kubeapi_podspec_values(s);
		intern_unref(in, s->scheduler);
		intern_unref(in, s->priority_class);
		for (i = 0; i < s->ntolerations; i++) {
			intern_unref(in, t[i].key);
			intern_unref(in, t[i].value);
		}
		for (i = 0; i < s->nselector; i++) {
			intern_unref(in, kv[i].key);
			intern_unref(in, kv[i].value);
		}
		for (i = 0; i < s->nrequirements; i++)
			intern_unref(in, r[i].key);
		for (i = 0; i < s->nvalues; i++)
			intern_unref(in, v[i]);
	}
	intern_blob_unref(in, s);
}

/* ---- the pod -------------------------------------------------------------------- */

/* spec.schedulingGroup.podGroupName (Kubernetes 1.36+): the PodGroup of
 * scheduling.k8s.io/v1beta1. 1: the pod names none. */
static int native_group(struct kubeapi__dec *d, const cJSON *spec, const char **s, size_t *len)
{
	const cJSON *sg;
	int rc;

	if ((rc = kubeapi__object(d, spec, "schedulingGroup", "spec.schedulingGroup", &sg)) != 0)
		return rc;
	return kubeapi__string(d, sg, "podGroupName", "spec.schedulingGroup.podGroupName",
	                       KUBEAPI_MAX_NAME, s, len);
}

/* The pod's group: the scheduler-plugins label, then Volcano's
 * annotation, then Kubernetes' own field. The CRDs' names come first
 * because they are the user's (or operator's) choice on the pod, while
 * from 1.37 the Job controller gives every Job's pods a native group,
 * basic (no gang) unless the Job asked for one: a Job whose template
 * names a scheduler-plugins PodGroup stays that gang. */
static int pod_group(struct kubeapi__dec *d, const struct kubeapi__meta *md, const cJSON *spec,
                     struct kubeapi_pod *p)
{
	const char *s = NULL;
	size_t len = 0;
	int rc;

	rc = kubeapi__string(d, md->labels, GROUP_LABEL, "metadata.labels." GROUP_LABEL,
	                     KUBEAPI_MAX_NAME, &s, &len);
	if (rc < 0)
		return rc;
	p->group_source = KUBEAPI_GROUP_LABEL;
	if (rc > 0 || len == 0) {
		rc = kubeapi__string(d, md->annotations, GROUP_ANNOTATION,
		                     "metadata.annotations." GROUP_ANNOTATION, KUBEAPI_MAX_NAME, &s,
		                     &len);
		if (rc < 0)
			return rc;
		p->group_source = KUBEAPI_GROUP_ANNOTATION;
	}
	if (rc > 0 || len == 0) {
		if ((rc = native_group(d, spec, &s, &len)) < 0)
			return rc;
		p->group_source = KUBEAPI_GROUP_NATIVE;
	}
	if (rc > 0 || !s || len == 0) {
		p->group_source = KUBEAPI_GROUP_NONE;
		return 0;
	}
	p->group = kubeapi__intern(d, s, len);
	return p->group ? 0 : -ENOMEM;
}

/* The Volcano task (role) a pod plays, for minTaskMember: the annotation,
 * else the label, as Volcano's own scheduler reads it. */
static int pod_task(struct kubeapi__dec *d, const struct kubeapi__meta *md, struct kubeapi_pod *p)
{
	const char *s;
	size_t len;
	int rc = kubeapi__string(d, md->annotations, TASK_KEY, "metadata.annotations." TASK_KEY,
	                         KUBEAPI_MAX_NAME, &s, &len);

	if (rc < 0)
		return rc;
	if (len == 0 && (rc = kubeapi__string(d, md->labels, TASK_KEY, "metadata.labels." TASK_KEY,
	                                      KUBEAPI_MAX_NAME, &s, &len)) < 0)
		return rc;
	if (len == 0)
		return 0;
	p->task = kubeapi__intern(d, s, len);
	return p->task ? 0 : -ENOMEM;
}

/* The controller owner reference (controller: true), if any. */
static int pod_owner(struct kubeapi__dec *d, const cJSON *owners, struct kubeapi_pod *p)
{
	const cJSON *o;
	int rc;

	cJSON_ArrayForEach(o, owners)
	{
		bool controller = false;

		if ((rc = kubeapi__bool(d, o, "controller", "metadata.ownerReferences[].controller",
		                        &controller)) < 0)
			return rc;
		if (!controller)
			continue;
		if ((rc = kubeapi__string_id(d, o, "kind", "metadata.ownerReferences[].kind", 64,
		                             &p->owner_kind)) < 0 ||
		    (rc = kubeapi__string_id(d, o, "name", "metadata.ownerReferences[].name",
		                             KUBEAPI_MAX_NAME, &p->owner_name)) < 0)
			return rc;
		return 0;
	}
	return 0;
}

static int pod_phase(struct kubeapi__dec *d, const cJSON *status, struct kubeapi_pod *p)
{
	static const char *const phases[] = {"Pending", "Running", "Succeeded", "Failed",
	                                     "Unknown"};
	const char *s;
	size_t len;
	int i, rc = kubeapi__string(d, status, "phase", "status.phase", 32, &s, &len);

	if (rc < 0)
		return rc;
	i = rc == 0 ? kubeapi__lookup(phases, sizeof(phases) / sizeof(phases[0]), s, len) : -1;
	p->phase = i < 0 ? KUBEAPI_POD_PENDING : (uint8_t)i;
	return 0;
}

static int pod_scheduled_condition(struct kubeapi__dec *d, const cJSON *status,
                                   struct kubeapi_pod *p)
{
	const cJSON *conds, *c;
	const char *type, *st, *reason, *msg;
	size_t tlen, slen, rlen, mlen;
	int rc;

	if ((rc = kubeapi__array(d, status, "conditions", "status.conditions", 64, &conds)) < 0)
		return rc;
	cJSON_ArrayForEach(c, conds)
	{
		if (kubeapi__string(d, c, "type", "status.conditions[].type", 64, &type, &tlen) <
		        0 ||
		    kubeapi__string(d, c, "status", "status.conditions[].status", 16, &st, &slen) <
		        0 ||
		    kubeapi__string(d, c, "reason", "status.conditions[].reason", 128, &reason,
		                    &rlen) < 0 ||
		    kubeapi__string(d, c, "message", "status.conditions[].message", 32768, &msg,
		                    &mlen) < 0)
			return -EINVAL;
		if (!type || tlen != 12 || memcmp(type, "PodScheduled", 12) != 0)
			continue;
		p->sched_msg = msg ? kubeapi_text_hash(msg, mlen) : 0;
		if (st && slen == 4 && memcmp(st, "True", 4) == 0)
			p->sched_cond = KUBEAPI_SCHED_COND_TRUE;
		else if (reason && rlen == 13 && memcmp(reason, "Unschedulable", 13) == 0)
			p->sched_cond = KUBEAPI_SCHED_COND_UNSCHEDULABLE;
		else
			p->sched_cond = KUBEAPI_SCHED_COND_OTHER;
	}
	return 0;
}

/* status.startTime: when the kubelet took the pod (before pulling its
 * images), from which a running pod's elapsed time is counted. */
static int pod_start_time(struct kubeapi__dec *d, const cJSON *status, struct kubeapi_pod *p)
{
	const char *s;
	size_t len;
	int rc = kubeapi__string(d, status, "startTime", "status.startTime", 64, &s, &len);

	if (rc)
		return rc < 0 ? rc : 0;
	if (kubeapi__parse_time(s, len, &p->started_s) < 0)
		return kubeapi__fail(d, "status.startTime: not an RFC 3339 time: \"%s\"", s);
	return 0;
}

static int pod_fields(struct kubeapi__dec *d, const cJSON *obj, const struct kubeapi__meta *md,
                      void *out)
{
	struct kubeapi_pod *p = out;
	const cJSON *spec, *status;
	int rc;

	if ((rc = kubeapi__object(d, obj, "spec", "spec", &spec)) != 0)
		return rc < 0 ? rc : kubeapi__fail(d, "spec: missing");
	if ((rc = kubeapi__object(d, obj, "status", "status", &status)) < 0)
		return rc;
	if ((rc = kubeapi__string_id(d, spec, "nodeName", "spec.nodeName", KUBEAPI_MAX_NAME,
	                             &p->node)) < 0 ||
	    (rc = pod_group(d, md, spec, p)) < 0 || (rc = pod_task(d, md, p)) < 0 ||
	    (rc = pod_owner(d, md->owners, p)) < 0 || (rc = pod_phase(d, status, p)) < 0 ||
	    (rc = pod_scheduled_condition(d, status, p)) < 0 ||
	    (rc = pod_start_time(d, status, p)) < 0 ||
	    (rc = kubeapi__labels(d, md->labels, md->annotations, MUSTER_PREFIX, &p->muster)) < 0 ||
	    (rc = kubeapi__pod_vgpu(d, md->annotations, &p->vgpu)) < 0)
		return rc;
	d->skip_long_labels = true;
	rc = kubeapi__labels(d, md->labels, NULL, "", &p->labels);
	d->skip_long_labels = false;
	if (rc < 0)
		return rc;
	return pod_spec(d, spec, &p->spec);
}

static void pod_identity(void *obj, const struct kubeapi__meta *md, const void *arg)
{
	struct kubeapi_pod *p = obj;

	(void)arg;
	memcpy(p->uid, md->uid, sizeof(p->uid));
	p->ns = md->ns;
	p->name = md->name;
	p->rv = md->rv;
	p->created_s = md->created_s;
	p->deleted_s = md->deleted_s;
	p->deleting = md->deleting;
}

const struct kubeapi__kind kubeapi__pod_kind = {
    "Pod", true, sizeof(struct kubeapi_pod), pod_identity, pod_fields, kubeapi__pod_release,
};

int kubeapi_pod_decode(struct kubeapi_model *m, const cJSON *obj, struct kubeapi_pod *out,
                       struct kubeapi_decode_error *err)
{
	return kubeapi__decode(m, &kubeapi__pod_kind, NULL, obj, out, err);
}

void kubeapi__pod_release(struct kubeapi_model *m, void *obj)
{
	kubeapi_pod_release(m, obj);
}

void kubeapi_pod_copy(struct kubeapi_model *m, const struct kubeapi_pod *src,
                      struct kubeapi_pod *dst)
{
	struct intern *in = m->in;
	const uint32_t ids[] = {src->ns,   src->name,       src->node,      src->group,
	                        src->task, src->owner_kind, src->owner_name};
	const void *blobs[] = {src->spec, src->muster, src->labels, src->vgpu};

	*dst = *src;
	for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++)
		if (ids[k])
			intern_ref(in, ids[k]);
	for (size_t k = 0; k < sizeof(blobs) / sizeof(blobs[0]); k++)
		if (blobs[k])
			intern_blob_ref(in, blobs[k]);
}

void kubeapi_pod_set_node(struct kubeapi_model *m, struct kubeapi_pod *p, uint32_t node)
{
	if (node)
		intern_ref(m->in, node);
	intern_unref(m->in, p->node);
	p->node = node;
}

void kubeapi_pod_release(struct kubeapi_model *m, struct kubeapi_pod *p)
{
	struct intern *in = m->in;

	intern_unref(in, p->ns);
	intern_unref(in, p->name);
	intern_unref(in, p->node);
	intern_unref(in, p->group);
	intern_unref(in, p->task);
	intern_unref(in, p->owner_kind);
	intern_unref(in, p->owner_name);
	kubeapi__podspec_unref(m, p->spec);
	kubeapi__labels_unref(in, p->muster);
	kubeapi__labels_unref(in, p->labels);
	kubeapi__vgpu_held_unref(in, p->vgpu);
	memset(p, 0, sizeof(*p));
}
