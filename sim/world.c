/*
 * The simulated cluster: each object built as a cJSON tree, the shape the
 * API server sends, and read by kubeapi's decoders into the stores the
 * planner reads. So a simulation exercises the same decoding (requests,
 * tolerations, annotations, phases) a live cache does. An object written
 * again replaces, and releases, the one of its key. Cost: one small JSON
 * tree per write; a pod is written three times in its life.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/intern.h"
#include "kubeapi/decode.h"
#include "sim/internal.h"

int sim__world_init(struct sim_world *w, int64_t epoch_s)
{
	memset(w, 0, sizeof(*w));
	w->epoch_s = epoch_s;
	return kubeapi_model_new(&w->model);
}

/* The kinds of the stores, for releasing what they hold. */
enum { NODE, POD, GROUP, PRIORITY_CLASS };

static void release(struct sim_world *w, void *v, int kind)
{
	if (kind == NODE)
		kubeapi_node_release(w->model, v);
	else if (kind == POD)
		kubeapi_pod_release(w->model, v);
	else if (kind == GROUP)
		kubeapi_podgroup_release(w->model, v);
	else
		kubeapi_priorityclass_release(w->model, v);
	free(v);
}

static void free_map(struct sim_world *w, struct idmap *m, int kind)
{
	const struct idmap_slot *e;

	IDMAP_FOREACH(m, i, e) {
		void *v = e->value;

		release(w, v, kind);
	}
	idmap_free(m);
}

void sim__world_free(struct sim_world *w)
{
	if (!w->model)
		return;
	free_map(w, &w->nodes, NODE);
	free_map(w, &w->pods, POD);
	free_map(w, &w->groups, GROUP);
	free_map(w, &w->vcgroups, GROUP);
	free_map(w, &w->natgroups, GROUP);
	free_map(w, &w->priorityclasses, PRIORITY_CLASS);
	kubeapi_model_free(&w->model);
}

void sim__plan_input(struct sim_world *w, struct queue_set *qs, struct plan_input *in)
{
	*in = (struct plan_input){
	    .model = w->model,
	    .nodes = &w->nodes,
	    .pods = &w->pods,
	    .groups = &w->groups,
	    .vcgroups = &w->vcgroups,
	    .natgroups = &w->natgroups,
	    .priorityclasses = &w->priorityclasses,
	    .qs = qs,
	};
}

uint32_t sim__id(struct sim_world *w, const char *s)
{
	return intern_add(kubeapi_model_intern(w->model), s, strlen(s));
}

uint64_t sim__key(struct sim_world *w, const char *ns, const char *name)
{
	return (uint64_t)(ns ? sim__id(w, ns) : 0) << 32 | sim__id(w, name);
}

/* ---- JSON --------------------------------------------------------------- */

void sim__add_time(cJSON *o, const char *key, int64_t unix_s)
{
	time_t t = (time_t)unix_s;
	struct tm tm;
	char buf[32];

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_AddStringToObject(o, key, buf);
}

static void add_int(cJSON *o, const char *key, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	cJSON_AddStringToObject(o, key, buf);
}

cJSON *sim__object(struct sim_world *w, const char *ns, const char *name, cJSON **meta)
{
	cJSON *o = cJSON_CreateObject();
	char uid[40];

	*meta = o ? cJSON_AddObjectToObject(o, "metadata") : NULL;
	if (!*meta) {
		cJSON_Delete(o);
		return NULL;
	}
	snprintf(uid, sizeof(uid), "00000000-0000-0000-0000-%012" PRIx64, ++w->seq);
	cJSON_AddStringToObject(*meta, "name", name);
	if (ns)
		cJSON_AddStringToObject(*meta, "namespace", ns);
	cJSON_AddStringToObject(*meta, "uid", uid);
	cJSON_AddStringToObject(*meta, "resourceVersion", "1");
	return o;
}

static cJSON *gpu_toleration(void)
{
	cJSON *l = cJSON_CreateArray(), *t = cJSON_CreateObject();

	cJSON_AddStringToObject(t, "key", "nvidia.com/gpu");
	cJSON_AddStringToObject(t, "operator", "Exists");
	cJSON_AddStringToObject(t, "effect", "NoSchedule");
	cJSON_AddItemToArray(l, t);
	return l;
}

/* Put v under key, releasing what it replaces. */
static int put(struct sim_world *w, struct idmap *m, uint64_t key, void *v, int kind)
{
	void *old = idmap_get(m, key);

	if (old)
		release(w, old, kind);
	return idmap_put(m, key, v) < 0 ? -ENOMEM : 0;
}

/* ---- objects ------------------------------------------------------------ */

int sim__put_node(struct sim_world *w, const struct sim_node *n)
{
	struct kubeapi_node *v = calloc(1, sizeof(*v));
	struct kubeapi_decode_error err;
	cJSON *meta, *o = sim__object(w, NULL, n->name, &meta), *labels, *spec, *status, *alloc;
	cJSON *cond, *conds;
	int rc = -ENOMEM;

	if (!v || !o)
		goto out;
	labels = cJSON_AddObjectToObject(meta, "labels");
	cJSON_AddStringToObject(labels, "kubernetes.io/hostname", n->name);
	if (n->rack)
		cJSON_AddStringToObject(labels, "muster.dev/rack", n->rack);
	spec = cJSON_AddObjectToObject(o, "spec");
	if (n->gpus > 0) {
		cJSON *taints = cJSON_AddArrayToObject(spec, "taints"), *t = cJSON_CreateObject();

		cJSON_AddStringToObject(t, "key", "nvidia.com/gpu");
		cJSON_AddStringToObject(t, "value", "present");
		cJSON_AddStringToObject(t, "effect", "NoSchedule");
		cJSON_AddItemToArray(taints, t);
	}
	status = cJSON_AddObjectToObject(o, "status");
	alloc = cJSON_AddObjectToObject(status, "allocatable");
	cJSON_AddStringToObject(alloc, "cpu", "96");
	cJSON_AddStringToObject(alloc, "memory", "1Ti");
	cJSON_AddStringToObject(alloc, "pods", "110");
	if (n->gpus > 0)
		add_int(alloc, "nvidia.com/gpu", n->gpus);
	conds = cJSON_AddArrayToObject(status, "conditions");
	cond = cJSON_CreateObject();
	cJSON_AddStringToObject(cond, "type", "Ready");
	cJSON_AddStringToObject(cond, "status", "True");
	cJSON_AddItemToArray(conds, cond);
	rc = kubeapi_node_decode(w->model, o, v, &err) != 0 ? -EINVAL : 0;
	if (rc == 0 && (rc = put(w, &w->nodes, sim__key(w, NULL, n->name), v, NODE)) == 0)
		v = NULL;
out:
	free(v);
	cJSON_Delete(o);
	return rc;
}

int sim__put_group(struct sim_world *w, const struct sim_gang *g)
{
	struct kubeapi_podgroup *v = calloc(1, sizeof(*v));
	struct kubeapi_decode_error err;
	cJSON *meta, *o = sim__object(w, SIM_NAMESPACE, g->name, &meta), *spec;
	int rc = -ENOMEM;

	if (!v || !o)
		goto out;
	sim__add_time(meta, "creationTimestamp", w->epoch_s + g->at_s);
	if (g->queue)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "labels"), "muster.dev/queue",
		                        g->queue);
	if (g->declared == SIM_DECLARED_GROUP)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "annotations"),
		                        "muster.dev/expected-runtime", g->declared_value);
	spec = cJSON_AddObjectToObject(o, "spec");
	cJSON_AddNumberToObject(spec, "minMember", g->pods);
	rc = kubeapi_podgroup_decode(w->model, KUBEAPI_PG_SCHEDULER_PLUGINS, o, v, &err) != 0
	         ? -EINVAL
	         : 0;
	if (rc == 0 &&
	    (rc = put(w, &w->groups, sim__key(w, SIM_NAMESPACE, g->name), v, GROUP)) == 0)
		v = NULL;
out:
	free(v);
	cJSON_Delete(o);
	return rc;
}

static void pod_spec(cJSON *o, const struct sim_gang *g, const char *node)
{
	cJSON *spec = cJSON_AddObjectToObject(o, "spec"), *c = cJSON_CreateObject(), *req;

	cJSON_AddStringToObject(spec, "schedulerName", SIM_SCHEDULER);
	if (node)
		cJSON_AddStringToObject(spec, "nodeName", node);
	if (g->declared == SIM_DECLARED_DEADLINE)
		cJSON_AddNumberToObject(spec, "activeDeadlineSeconds", (double)g->deadline_s);
	cJSON_AddItemToObject(spec, "tolerations", gpu_toleration());
	cJSON_AddStringToObject(c, "name", "c");
	req = cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "resources"), "requests");
	cJSON_AddStringToObject(req, "cpu", "1");
	cJSON_AddStringToObject(req, "memory", "1Gi");
	if (g->gpus > 0)
		add_int(req, "nvidia.com/gpu", g->gpus);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "containers"), c);
}

int sim__put_pod(struct sim_world *w, const struct sim_gang *g, uint32_t p, const char *node,
                 const char *phase, int64_t start_s)
{
	struct kubeapi_pod *v = calloc(1, sizeof(*v));
	struct kubeapi_decode_error err;
	char name[300];
	cJSON *meta, *o, *status;
	int rc = -ENOMEM;

	snprintf(name, sizeof(name), "%s-%" PRIu32, g->name, p);
	o = sim__object(w, SIM_NAMESPACE, name, &meta);
	if (!v || !o)
		goto out;
	sim__add_time(meta, "creationTimestamp", w->epoch_s + g->at_s);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "labels"),
	                        "scheduling.x-k8s.io/pod-group", g->name);
	if (g->declared == SIM_DECLARED_POD)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "annotations"),
		                        "muster.dev/expected-runtime", g->declared_value);
	pod_spec(o, g, node);
	status = cJSON_AddObjectToObject(o, "status");
	cJSON_AddStringToObject(status, "phase", phase ? phase : node ? "Running" : "Pending");
	if (node && start_s != SIM_NO_TIME)
		sim__add_time(status, "startTime", w->epoch_s + start_s);
	rc = kubeapi_pod_decode(w->model, o, v, &err) != 0 ? -EINVAL : 0;
	if (rc == 0 && (rc = put(w, &w->pods, sim__key(w, SIM_NAMESPACE, name), v, POD)) == 0)
		v = NULL;
out:
	free(v);
	cJSON_Delete(o);
	return rc;
}

/* ---- a snapshot's objects ------------------------------------------------ */

/* Which store an item goes to, by kind and API group. */
static int kind_of(const cJSON *item, enum kubeapi_dialect *dialect)
{
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "kind"));
	const char *api =
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "apiVersion"));

	if (!kind || !api)
		return -1;
	if (!strcmp(kind, "Node") && !strcmp(api, "v1"))
		return NODE;
	if (!strcmp(kind, "Pod") && !strcmp(api, "v1"))
		return POD;
	if (!strcmp(kind, "PriorityClass") && !strncmp(api, "scheduling.k8s.io/", 18))
		return PRIORITY_CLASS;
	if (strcmp(kind, "PodGroup"))
		return -1;
	if (!strncmp(api, "scheduling.x-k8s.io/", 20))
		*dialect = KUBEAPI_PG_SCHEDULER_PLUGINS;
	else if (!strncmp(api, "scheduling.volcano.sh/", 22))
		*dialect = KUBEAPI_PG_VOLCANO;
	else if (!strncmp(api, "scheduling.k8s.io/", 18))
		*dialect = KUBEAPI_PG_NATIVE;
	else
		return -1;
	return GROUP;
}

static struct idmap *group_store(struct sim_world *w, enum kubeapi_dialect d)
{
	return d == KUBEAPI_PG_SCHEDULER_PLUGINS ? &w->groups
	       : d == KUBEAPI_PG_VOLCANO         ? &w->vcgroups
	                                         : &w->natgroups;
}

int sim__put_item(struct sim_world *w, const cJSON *item, char *err, size_t errlen)
{
	enum kubeapi_dialect d = KUBEAPI_PG_SCHEDULER_PLUGINS;
	int kind = kind_of(item, &d), rc = -EINVAL;
	struct kubeapi_decode_error e = {0};
	void *v = NULL;
	uint64_t key = 0;

	if (kind < 0)
		return 0;
	if (kind == NODE && (v = calloc(1, sizeof(struct kubeapi_node)))) {
		rc = kubeapi_node_decode(w->model, item, v, &e);
		key = rc == 0 ? ((struct kubeapi_node *)v)->name : 0;
	} else if (kind == POD && (v = calloc(1, sizeof(struct kubeapi_pod)))) {
		rc = kubeapi_pod_decode(w->model, item, v, &e);
		key = rc == 0 ? kubeapi_pod_key(v) : 0;
	} else if (kind == GROUP && (v = calloc(1, sizeof(struct kubeapi_podgroup)))) {
		rc = kubeapi_podgroup_decode(w->model, d, item, v, &e);
		key = rc == 0 ? (uint64_t)((struct kubeapi_podgroup *)v)->ns << 32 |
		                    ((struct kubeapi_podgroup *)v)->name
		              : 0;
	} else if (kind == PRIORITY_CLASS &&
	           (v = calloc(1, sizeof(struct kubeapi_priorityclass)))) {
		rc = kubeapi_priorityclass_decode(w->model, item, v, &e);
		key = rc == 0 ? ((struct kubeapi_priorityclass *)v)->name : 0;
	}
	if (!v)
		return -ENOMEM;
	if (rc < 0) {
		kubeapi_decode_error_str(&e, err, errlen);
		free(v);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	rc = put(w,
	         kind == NODE             ? &w->nodes
	         : kind == POD            ? &w->pods
	         : kind == PRIORITY_CLASS ? &w->priorityclasses
	                                  : group_store(w, d),
	         key, v, kind);
	if (rc < 0)
		release(w, v, kind);
	return rc < 0 ? rc : 1;
}

int sim__move_pod(struct sim_world *w, const struct kubeapi_pod *p, uint32_t node, uint8_t phase,
                  int64_t started_s)
{
	struct kubeapi_pod *v = malloc(sizeof(*v));
	int rc;

	if (!v)
		return -ENOMEM;
	kubeapi_pod_copy(w->model, p, v);
	if (node)
		kubeapi_pod_set_node(w->model, v, node);
	v->phase = phase;
	if (started_s)
		v->started_s = started_s;
	v->rv++;
	if ((rc = put(w, &w->pods, kubeapi_pod_key(v), v, POD)) < 0)
		release(w, v, POD);
	return rc;
}
