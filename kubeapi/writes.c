/*
 * Typed writes: build path and body, pick the retry policy, submit.
 * A body is built as a cJSON tree and printed once (about 1 KB); nothing
 * outlives the call but the engine's own copy.
 */
#include "kubeapi/writes.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 253

/* DNS-1123 subdomain characters: what object names and namespaces use. */
static bool valid_name(const char *s)
{
	size_t n = s ? strlen(s) : 0, i;

	if (n == 0 || n > NAME_MAX_LEN)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
			return false;
	}
	return true;
}

static bool valid_target(const struct kubeapi_target *t)
{
	return t && valid_name(t->ns) && valid_name(t->name);
}

/* Print the tree, submit it, free both. */
static int submit_json(struct kubeapi_http *h, enum kubeapi_method m, const char *path, cJSON *body,
                       unsigned flags, kubeapi_http_done_cb cb, void *data)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	struct kubeapi_request req = {
	    .method = m,
	    .path = path,
	    .body = text,
	    .body_len = text ? strlen(text) : 0,
	    .flags = flags,
	    .done_cb = cb,
	    .data = data,
	};
	int rc = body && !text ? -ENOMEM : kubeapi_http_submit(h, &req, NULL);

	free(text);
	cJSON_Delete(body);
	return rc;
}

/* {"apiVersion":..,"kind":..,"metadata":{"name":..,"namespace":..}} */
static cJSON *object(const char *api_version, const char *kind, const char *ns, const char *name)
{
	cJSON *o = cJSON_CreateObject(), *md;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "apiVersion", api_version);
	cJSON_AddStringToObject(o, "kind", kind);
	md = cJSON_AddObjectToObject(o, "metadata");
	if (md && name)
		cJSON_AddStringToObject(md, "name", name);
	if (md && ns)
		cJSON_AddStringToObject(md, "namespace", ns);
	return o;
}

int kubeapi_bind(struct kubeapi_http *h, const struct kubeapi_target *t, const char *node,
                 kubeapi_http_done_cb cb, void *data)
{
	char path[640];
	cJSON *b, *target;

	if (!valid_target(t) || !valid_name(node))
		return -EINVAL;
	b = object("v1", "Binding", t->ns, t->name);
	if (!b)
		return -ENOMEM;
	if (t->uid)
		cJSON_AddStringToObject(cJSON_GetObjectItem(b, "metadata"), "uid", t->uid);
	target = cJSON_AddObjectToObject(b, "target");
	if (target) {
		cJSON_AddStringToObject(target, "apiVersion", "v1");
		cJSON_AddStringToObject(target, "kind", "Node");
		cJSON_AddStringToObject(target, "name", node);
	}
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", t->ns, t->name);
	return submit_json(h, KUBEAPI_POST, path, b, KUBEAPI_REQ_RETRY, cb, data);
}

int kubeapi_evict(struct kubeapi_http *h, const struct kubeapi_target *t, int64_t grace_s,
                  kubeapi_http_done_cb cb, void *data)
{
	char path[640];
	cJSON *e, *opts, *pre;

	if (!valid_target(t))
		return -EINVAL;
	e = object("policy/v1", "Eviction", t->ns, t->name);
	if (!e)
		return -ENOMEM;
	opts = cJSON_AddObjectToObject(e, "deleteOptions");
	if (opts && grace_s >= 0)
		cJSON_AddNumberToObject(opts, "gracePeriodSeconds", (double)grace_s);
	if (opts && t->uid) {
		pre = cJSON_AddObjectToObject(opts, "preconditions");
		if (pre)
			cJSON_AddStringToObject(pre, "uid", t->uid);
	}
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", t->ns, t->name);
	return submit_json(h, KUBEAPI_POST, path, e, KUBEAPI_REQ_RETRY | KUBEAPI_REQ_NO_RETRY_429,
	                   cb, data);
}

/* The message of a Status body, copied into out ("" when there is none). */
static void status_message(const struct kubeapi_response *r, char *out, size_t cap)
{
	cJSON *st = r->body && r->len ? cJSON_ParseWithLength(r->body, r->len) : NULL;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(st, "message");

	snprintf(out, cap, "%s", cJSON_IsString(m) ? m->valuestring : "");
	cJSON_Delete(st);
}

/* The storage layer's words when a uid precondition fails. */
#define UID_CONFLICT "Precondition failed: UID"

static enum kubeapi_answer common_answer(const struct kubeapi_response *r)
{
	if (r->err == 0 && r->status >= 200 && r->status < 300)
		return KUBEAPI_ANSWER_DONE;
	if (r->err == 0 && r->status == 404)
		return KUBEAPI_ANSWER_GONE;
	return KUBEAPI_ANSWER_RETRY;
}

enum kubeapi_answer kubeapi_bind_answer(const struct kubeapi_response *r, const char *node)
{
	char msg[512], here[300];

	if (r->err || r->status != 409)
		return common_answer(r);
	status_message(r, msg, sizeof(msg));
	if (strstr(msg, UID_CONFLICT))
		return KUBEAPI_ANSWER_GONE;
	/* "pod x is already assigned to node \"n\"": ours, its answer lost,
	 * or another scheduler's. */
	snprintf(here, sizeof(here), "already assigned to node \"%s\"", node ? node : "");
	if (strstr(msg, here))
		return KUBEAPI_ANSWER_BOUND;
	if (strstr(msg, "already assigned to node"))
		return KUBEAPI_ANSWER_GONE;
	return KUBEAPI_ANSWER_RETRY;
}

/* A merge patch naming another uid than the object's is invalid (422):
 * the validation of the update runs before the storage's preconditions. */
#define UID_IMMUTABLE "metadata.uid: Invalid value"

enum kubeapi_answer kubeapi_pod_answer(const struct kubeapi_response *r)
{
	char msg[512];

	if (r->err || (r->status != 409 && r->status != 422))
		return common_answer(r);
	status_message(r, msg, sizeof(msg));
	if (r->status == 422)
		return strstr(msg, UID_IMMUTABLE) ? KUBEAPI_ANSWER_GONE : KUBEAPI_ANSWER_RETRY;
	return strstr(msg, UID_CONFLICT) ? KUBEAPI_ANSWER_GONE : KUBEAPI_ANSWER_CHANGED;
}

const char *kubeapi_answer_name(enum kubeapi_answer a)
{
	static const char *const names[] = {"done", "bound", "gone", "changed", "retry"};

	return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

bool kubeapi_eviction_blocked(const struct kubeapi_response *r)
{
	return r->status == 429 && r->body && strstr(r->body, "disruption budget");
}

static void format_time(time_t t, char out[32])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void kubeapi_format_microtime(struct timespec t, char out[32])
{
	struct tm tm;
	size_t n;

	gmtime_r(&t.tv_sec, &tm);
	n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%06dZ", (int)((t.tv_nsec / 1000) % 1000000));
}

/* The patch's metadata.resourceVersion: a precondition (see
 * kubeapi_target). */
static void add_precondition(cJSON *patch, const struct kubeapi_target *t)
{
	cJSON *md;

	if (!t->resource_version)
		return;
	md = cJSON_AddObjectToObject(patch, "metadata");
	if (md)
		cJSON_AddStringToObject(md, "resourceVersion", t->resource_version);
}

int kubeapi_patch_pod_condition(struct kubeapi_http *h, const struct kubeapi_target *t,
                                const char *type, const char *status, const char *reason,
                                const char *message, time_t now, kubeapi_http_done_cb cb,
                                void *data)
{
	char path[640], ts[32];
	cJSON *p, *st, *conds, *c;

	if (!valid_target(t) || !type || !status)
		return -EINVAL;
	p = cJSON_CreateObject();
	st = p ? cJSON_AddObjectToObject(p, "status") : NULL;
	conds = st ? cJSON_AddArrayToObject(st, "conditions") : NULL;
	c = conds ? cJSON_CreateObject() : NULL;
	if (!c) {
		cJSON_Delete(p);
		return -ENOMEM;
	}
	cJSON_AddItemToArray(conds, c);
	format_time(now, ts);
	cJSON_AddStringToObject(c, "type", type);
	cJSON_AddStringToObject(c, "status", status);
	if (reason)
		cJSON_AddStringToObject(c, "reason", reason);
	if (message)
		cJSON_AddStringToObject(c, "message", message);
	cJSON_AddStringToObject(c, "lastTransitionTime", ts);
	cJSON_AddStringToObject(c, "lastProbeTime", ts);
	add_precondition(p, t);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", t->ns, t->name);
	return submit_json(h, KUBEAPI_PATCH_STRATEGIC, path, p, KUBEAPI_REQ_RETRY, cb, data);
}

int kubeapi_patch_pod_annotations(struct kubeapi_http *h, const struct kubeapi_target *t,
                                  const char *const *keys, const char *const *values, size_t n,
                                  kubeapi_http_done_cb cb, void *data)
{
	char path[640];
	cJSON *p, *md, *an;

	if (!valid_target(t) || !n)
		return -EINVAL;
	p = cJSON_CreateObject();
	md = p ? cJSON_AddObjectToObject(p, "metadata") : NULL;
	an = md ? cJSON_AddObjectToObject(md, "annotations") : NULL;
	if (!an || (t->uid && !cJSON_AddStringToObject(md, "uid", t->uid)) ||
	    (t->resource_version &&
	     !cJSON_AddStringToObject(md, "resourceVersion", t->resource_version))) {
		cJSON_Delete(p);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++)
		if (!cJSON_AddStringToObject(an, keys[k], values[k])) {
			cJSON_Delete(p);
			return -ENOMEM;
		}
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", t->ns, t->name);
	return submit_json(h, KUBEAPI_PATCH_MERGE, path, p, KUBEAPI_REQ_RETRY, cb, data);
}

int kubeapi_patch_podgroup_status(struct kubeapi_http *h, enum kubeapi_dialect dialect,
                                  const struct kubeapi_target *t, const char *status_json,
                                  kubeapi_http_done_cb cb, void *data)
{
	const char *gv = dialect == KUBEAPI_PG_VOLCANO  ? "scheduling.volcano.sh/v1beta1"
	                 : dialect == KUBEAPI_PG_NATIVE ? "scheduling.k8s.io/v1beta1"
	                                                : "scheduling.x-k8s.io/v1alpha1";
	char path[700];
	cJSON *p, *st;

	if (!valid_target(t) || !status_json)
		return -EINVAL;
	st = cJSON_Parse(status_json);
	if (!cJSON_IsObject(st)) {
		cJSON_Delete(st);
		return -EINVAL;
	}
	p = cJSON_CreateObject();
	if (!p) {
		cJSON_Delete(st);
		return -ENOMEM;
	}
	cJSON_AddItemToObject(p, "status", st);
	add_precondition(p, t);
	/* scheduler-plugins' CRD has a status subresource; Volcano's has none
	 * (`subresources: {}`), so its status is patched on the object. */
	snprintf(path, sizeof(path), "/apis/%s/namespaces/%s/podgroups/%s%s", gv, t->ns, t->name,
	         dialect == KUBEAPI_PG_VOLCANO ? "" : "/status");
	/* A native PodGroup is a built-in type: a strategic merge patch
	 * merges its conditions by type, so kube-controller-manager's or an
	 * eviction's DisruptionTarget beside Muster's condition stays. */
	return submit_json(
	    h, dialect == KUBEAPI_PG_NATIVE ? KUBEAPI_PATCH_STRATEGIC : KUBEAPI_PATCH_MERGE, path,
	    p, KUBEAPI_REQ_RETRY, cb, data);
}

int kubeapi_event_create(struct kubeapi_http *h, const struct kubeapi_event *ev,
                         struct timespec now, kubeapi_http_done_cb cb, void *data)
{
	char path[400], ts[32], gen[NAME_MAX_LEN + 2];
	const struct kubeapi_target *t = ev ? ev->regarding : NULL;
	cJSON *e, *reg;

	if (!valid_target(t) || !ev->type || !ev->reason || !ev->controller || !ev->instance)
		return -EINVAL;
	if (kubeapi_http_background_full(h))
		return -ENOBUFS; /* before the body is built: a burst drops thousands */
	e = object("events.k8s.io/v1", "Event", t->ns, NULL);
	if (!e)
		return -ENOMEM;
	/* Named as kube-scheduler names them, <pod>.<nanoseconds in hex>: a
	 * generateName ending in '.' is itself invalid. */
	snprintf(gen, sizeof(gen), "%.200s.%llx", t->name,
	         (unsigned long long)now.tv_sec * 1000000000ULL + (unsigned long long)now.tv_nsec);
	cJSON_AddStringToObject(cJSON_GetObjectItem(e, "metadata"), "name", gen);
	kubeapi_format_microtime(now, ts);
	cJSON_AddStringToObject(e, "eventTime", ts);
	cJSON_AddStringToObject(e, "reportingController", ev->controller);
	cJSON_AddStringToObject(e, "reportingInstance", ev->instance);
	cJSON_AddStringToObject(e, "action", ev->action ? ev->action : ev->reason);
	cJSON_AddStringToObject(e, "reason", ev->reason);
	cJSON_AddStringToObject(e, "type", ev->type);
	if (ev->note)
		cJSON_AddStringToObject(e, "note", ev->note);
	reg = cJSON_AddObjectToObject(e, "regarding");
	if (reg) {
		cJSON_AddStringToObject(reg, "apiVersion", "v1");
		cJSON_AddStringToObject(reg, "kind", "Pod");
		cJSON_AddStringToObject(reg, "namespace", t->ns);
		cJSON_AddStringToObject(reg, "name", t->name);
		if (t->uid)
			cJSON_AddStringToObject(reg, "uid", t->uid);
	}
	snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events", t->ns);
	return submit_json(h, KUBEAPI_POST, path, e, KUBEAPI_REQ_RETRY | KUBEAPI_REQ_BACKGROUND, cb,
	                   data);
}

int kubeapi_lease_get(struct kubeapi_http *h, const char *ns, const char *name,
                      kubeapi_http_done_cb cb, void *data)
{
	char path[640];

	if (!valid_name(ns) || !valid_name(name))
		return -EINVAL;
	snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", ns,
	         name);
	return submit_json(h, KUBEAPI_GET, path, NULL, KUBEAPI_REQ_RETRY | KUBEAPI_REQ_URGENT, cb,
	                   data);
}

int kubeapi_configmap_get(struct kubeapi_http *h, const char *ns, const char *name,
                          kubeapi_http_done_cb cb, void *data)
{
	char path[640];

	if (!valid_name(ns) || !valid_name(name))
		return -EINVAL;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", ns, name);
	return submit_json(h, KUBEAPI_GET, path, NULL, KUBEAPI_REQ_RETRY, cb, data);
}

int kubeapi_configmap_apply(struct kubeapi_http *h, const char *ns, const char *name,
                            const char *key, const char *value, kubeapi_http_done_cb cb, void *data)
{
	char path[704];
	cJSON *o, *d;

	if (!valid_name(ns) || !valid_name(name) || !key || !*key || !value)
		return -EINVAL;
	o = object("v1", "ConfigMap", ns, name);
	d = o ? cJSON_AddObjectToObject(o, "data") : NULL;
	if (!d || !cJSON_AddStringToObject(d, key, value)) {
		cJSON_Delete(o);
		return -ENOMEM;
	}
	snprintf(path, sizeof(path),
	         "/api/v1/namespaces/%s/configmaps/%s?fieldManager=muster&force=true", ns, name);
	return submit_json(h, KUBEAPI_PATCH_APPLY, path, o, KUBEAPI_REQ_RETRY, cb, data);
}

int kubeapi_lease_put(struct kubeapi_http *h, const struct kubeapi_lease *l,
                      kubeapi_http_done_cb cb, void *data)
{
	char path[640], acq[32], ren[32];
	cJSON *o, *spec;

	if (!l || !valid_name(l->ns) || !valid_name(l->name) || !l->holder || l->duration_s <= 0)
		return -EINVAL;
	o = object("coordination.k8s.io/v1", "Lease", l->ns, l->name);
	if (!o)
		return -ENOMEM;
	if (l->resource_version)
		cJSON_AddStringToObject(cJSON_GetObjectItem(o, "metadata"), "resourceVersion",
		                        l->resource_version);
	spec = cJSON_AddObjectToObject(o, "spec");
	kubeapi_format_microtime(l->acquired, acq);
	kubeapi_format_microtime(l->renewed, ren);
	if (spec) {
		cJSON_AddStringToObject(spec, "holderIdentity", l->holder);
		cJSON_AddNumberToObject(spec, "leaseDurationSeconds", l->duration_s);
		cJSON_AddNumberToObject(spec, "leaseTransitions", l->transitions);
		cJSON_AddStringToObject(spec, "acquireTime", acq);
		cJSON_AddStringToObject(spec, "renewTime", ren);
	}
	if (l->resource_version)
		snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
		         l->ns, l->name);
	else
		snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
		         l->ns);
	/* Writes with a precondition are not retried past a 409: the caller
	 * must re-read the lease. Urgent: a renewal must not wait behind the
	 * binds (http.h). */
	return submit_json(h, l->resource_version ? KUBEAPI_PUT : KUBEAPI_POST, path, o,
	                   KUBEAPI_REQ_RETRY | KUBEAPI_REQ_URGENT, cb, data);
}
