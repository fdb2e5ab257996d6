/*
 * Nodes, PodGroups (both dialects), PriorityClasses, PodDisruptionBudgets
 * and Namespaces.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeapi/decode_internal.h"

#define MUSTER_PREFIX "muster.dev/"

static bool str_is(const char *s, size_t len, const char *lit)
{
	return s && strlen(lit) == len && memcmp(s, lit, len) == 0;
}

/* ---- nodes ------------------------------------------------------------------- */

static int taint_entry(struct kubeapi__dec *d, const cJSON *t, const char *path,
                       struct kubeapi__ids *ids, struct kubeapi_taint *o)
{
	const char *key, *val, *eff;
	size_t klen, vlen, elen;
	char p[64];

	if (!cJSON_IsObject(t))
		return kubeapi__fail(d, "%s: expected an object", path);
	if (kubeapi__string(d, t, "key", kubeapi__path(p, sizeof(p), path, "key"),
	                    KUBEAPI_MAX_NAME + 64, &key, &klen) < 0 ||
	    kubeapi__string(d, t, "value", kubeapi__path(p, sizeof(p), path, "value"),
	                    KUBEAPI_MAX_NAME, &val, &vlen) < 0 ||
	    kubeapi__string(d, t, "effect", kubeapi__path(p, sizeof(p), path, "effect"), 32, &eff,
	                    &elen) < 0)
		return -EINVAL;
	if (!klen)
		return kubeapi__fail(d, "%s.key: missing", path);
	if (str_is(eff, elen, "NoSchedule"))
		o->effect = KUBEAPI_EFFECT_NO_SCHEDULE;
	else if (str_is(eff, elen, "PreferNoSchedule"))
		o->effect = KUBEAPI_EFFECT_PREFER_NO_SCHEDULE;
	else if (str_is(eff, elen, "NoExecute"))
		o->effect = KUBEAPI_EFFECT_NO_EXECUTE;
	else
		return kubeapi__fail(d, "%s.effect: unknown \"%.32s\"", path, eff ? eff : "");
	if (!(o->key = kubeapi__intern_to(d, ids, key, klen)))
		return -ENOMEM;
	if (vlen && !(o->value = kubeapi__intern_to(d, ids, val, vlen)))
		return -ENOMEM;
	return 0;
}

static int node_taints(struct kubeapi__dec *d, const cJSON *spec, const struct kubeapi_taints **out)
{
	struct kubeapi__ids ids = {0};
	struct kubeapi_taints *t = NULL;
	const cJSON *list, *e;
	char path[48];
	int rc, n = 0;

	*out = NULL;
	if ((rc = kubeapi__array(d, spec, "taints", "spec.taints", KUBEAPI_MAX_LIST, &list)) != 0)
		return rc < 0 ? rc : 0;
	t = calloc(1, sizeof(*t) + (size_t)cJSON_GetArraySize(list) * sizeof(t->e[0]));
	if (!t)
		return -ENOMEM;
	cJSON_ArrayForEach(e, list)
	{
		snprintf(path, sizeof(path), "spec.taints[%d]", n);
		if ((rc = taint_entry(d, e, path, &ids, &t->e[n])) < 0)
			goto out;
		n++;
	}
	rc = 0;
	if (n == 0)
		goto out;
	t->n = (uint32_t)n;
	*out = kubeapi__blob(d, t, sizeof(*t) + (size_t)n * sizeof(t->e[0]), &ids);
	rc = *out ? 0 : -ENOMEM;
out:
	kubeapi__ids_drop(d->m->in, &ids);
	free(t);
	return rc;
}

static int node_ready(struct kubeapi__dec *d, const cJSON *status, struct kubeapi_node *n)
{
	const cJSON *conds, *c;
	const char *type, *st;
	size_t tlen, slen;
	int rc;

	if ((rc = kubeapi__array(d, status, "conditions", "status.conditions", 64, &conds)) < 0)
		return rc;
	cJSON_ArrayForEach(c, conds)
	{
		if (kubeapi__string(d, c, "type", "status.conditions[].type", 64, &type, &tlen) <
		        0 ||
		    kubeapi__string(d, c, "status", "status.conditions[].status", 16, &st, &slen) <
		        0)
			return -EINVAL;
		if (str_is(type, tlen, "Ready"))
			n->ready = str_is(st, slen, "True");
	}
	return 0;
}

static int node_fields(struct kubeapi__dec *d, const cJSON *obj, const struct kubeapi__meta *md,
                       void *out)
{
	struct kubeapi_node *n = out;
	const cJSON *spec, *status, *alloc;
	struct kubeapi__amounts a = {0};
	bool unsched = false;
	int rc;

	if ((rc = kubeapi__object(d, obj, "spec", "spec", &spec)) < 0 ||
	    (rc = kubeapi__object(d, obj, "status", "status", &status)) < 0 ||
	    (rc = kubeapi__object(d, status, "allocatable", "status.allocatable", &alloc)) < 0)
		return rc;
	if ((rc = kubeapi__bool(d, spec, "unschedulable", "spec.unschedulable", &unsched)) < 0)
		return rc;
	n->unschedulable = unsched;
	d->offers = true;
	rc = kubeapi__amounts_read(d, alloc, "status.allocatable", &a);
	d->offers = false;
	if (rc < 0 || (rc = node_ready(d, status, n)) < 0 ||
	    (rc = kubeapi__reslist(d, &a, &n->allocatable)) < 0 ||
	    (rc = node_taints(d, spec, &n->taints)) < 0 ||
	    (rc = kubeapi__node_gpus(d, md->annotations, &a, &n->gpus)) < 0)
		return rc;
	return kubeapi__labels(d, md->labels, NULL, "", &n->labels);
}

static void node_identity(void *obj, const struct kubeapi__meta *md, const void *arg)
{
	struct kubeapi_node *n = obj;

	(void)arg;
	memcpy(n->uid, md->uid, sizeof(n->uid));
	n->name = md->name;
	n->rv = md->rv;
}

const struct kubeapi__kind kubeapi__node_kind = {
    "Node", false, sizeof(struct kubeapi_node), node_identity, node_fields, kubeapi__node_release,
};

int kubeapi_node_decode(struct kubeapi_model *m, const cJSON *obj, struct kubeapi_node *out,
                        struct kubeapi_decode_error *err)
{
	return kubeapi__decode(m, &kubeapi__node_kind, NULL, obj, out, err);
}

void kubeapi__node_release(struct kubeapi_model *m, void *obj)
{
	kubeapi_node_release(m, obj);
}

void kubeapi_node_release(struct kubeapi_model *m, struct kubeapi_node *n)
{
	intern_unref(m->in, n->name);
	kubeapi__reslist_unref(m, n->allocatable);
	kubeapi__taints_unref(m->in, n->taints);
	kubeapi__labels_unref(m->in, n->labels);
	kubeapi__gpus_unref(m->in, n->gpus);
	memset(n, 0, sizeof(*n));
}

/* ---- PodGroups ------------------------------------------------------------------- */

static int by_task(const void *a, const void *b)
{
	const struct kubeapi_min_task *x = a, *y = b;

	return (x->task > y->task) - (x->task < y->task);
}

/* Volcano spec.minTaskMember: task name -> members of that task the gang
 * needs; at most KUBEAPI_MAX_TASKS. */
static int min_tasks(struct kubeapi__dec *d, const cJSON *spec, struct kubeapi_podgroup *g)
{
	const cJSON *m, *e;
	int rc;

	if ((rc = kubeapi__object(d, spec, "minTaskMember", "spec.minTaskMember", &m)) != 0)
		return rc < 0 ? rc : 0;
	cJSON_ArrayForEach(e, m)
	{
		struct kubeapi_min_task *t = &g->min_tasks[g->ntasks];
		size_t len = strlen(e->string);

		if (g->ntasks == KUBEAPI_MAX_TASKS)
			return kubeapi__fail(d, "spec.minTaskMember: more than %d tasks",
			                     KUBEAPI_MAX_TASKS);
		if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > INT32_MAX ||
		    e->valuedouble != (double)(int32_t)e->valuedouble)
			return kubeapi__fail(d,
			                     "spec.minTaskMember.%.64s: expected an integer in "
			                     "[0, %d]",
			                     e->string, INT32_MAX);
		if (len == 0 || len > KUBEAPI_MAX_NAME)
			return kubeapi__fail(d, "spec.minTaskMember: a task name of %zu bytes",
			                     len);
		if (!(t->task = kubeapi__intern(d, e->string, len)))
			return -ENOMEM;
		t->min = (int32_t)e->valuedouble;
		g->ntasks++;
	}
	qsort(g->min_tasks, g->ntasks, sizeof(g->min_tasks[0]), by_task);
	return 0;
}

/* ---- native PodGroups (scheduling.k8s.io/v1beta1) ---- */

/* spec.schedulingPolicy: exactly one of gang (minCount) and basic. */
static int native_policy(struct kubeapi__dec *d, const cJSON *spec, struct kubeapi_podgroup *g)
{
	const cJSON *pol, *gang, *basic;
	int64_t v;
	int rc;

	if ((rc = kubeapi__object(d, spec, "schedulingPolicy", "spec.schedulingPolicy", &pol)) != 0)
		return rc < 0 ? rc : kubeapi__fail(d, "spec.schedulingPolicy: missing");
	if ((rc = kubeapi__object(d, pol, "gang", "spec.schedulingPolicy.gang", &gang)) < 0 ||
	    (rc = kubeapi__object(d, pol, "basic", "spec.schedulingPolicy.basic", &basic)) < 0)
		return rc;
	if (!gang == !basic)
		return kubeapi__fail(d, "spec.schedulingPolicy: expected exactly one of gang and "
		                        "basic");
	g->min_member = 1;
	g->basic = basic != NULL;
	if (basic)
		return 0;
	rc = kubeapi__int(d, gang, "minCount", "spec.schedulingPolicy.gang.minCount", 1, INT32_MAX,
	                  &v);
	if (rc != 0)
		return rc < 0 ? rc
		              : kubeapi__fail(d, "spec.schedulingPolicy.gang.minCount: missing");
	g->min_member = (int32_t)v;
	return 0;
}

/* spec.schedulingConstraints.topology: at most one key (the API's own
 * limit). */
static int native_topology(struct kubeapi__dec *d, const cJSON *spec, struct kubeapi_podgroup *g)
{
	const cJSON *c, *topo;
	int rc;

	if ((rc = kubeapi__object(d, spec, "schedulingConstraints", "spec.schedulingConstraints",
	                          &c)) != 0 ||
	    (rc = kubeapi__array(d, c, "topology", "spec.schedulingConstraints.topology", 1,
	                         &topo)) != 0)
		return rc < 0 ? rc : 0;
	if (cJSON_GetArraySize(topo) == 0)
		return 0;
	rc = kubeapi__string_id(d, cJSON_GetArrayItem(topo, 0), "key",
	                        "spec.schedulingConstraints.topology[0].key", KUBEAPI_MAX_NAME,
	                        &g->topology_key);
	if (rc < 0)
		return rc;
	if (!g->topology_key)
		return kubeapi__fail(d, "spec.schedulingConstraints.topology[0].key: missing");
	return 0;
}

/* spec.disruptionMode: {single: {}} or {all: {}}. */
static int native_disruption(struct kubeapi__dec *d, const cJSON *spec, struct kubeapi_podgroup *g)
{
	const cJSON *m, *single, *all;
	int rc;

	if ((rc = kubeapi__object(d, spec, "disruptionMode", "spec.disruptionMode", &m)) != 0)
		return rc < 0 ? rc : 0;
	if ((rc = kubeapi__object(d, m, "single", "spec.disruptionMode.single", &single)) < 0 ||
	    (rc = kubeapi__object(d, m, "all", "spec.disruptionMode.all", &all)) < 0)
		return rc;
	if (!single == !all)
		return kubeapi__fail(d,
		                     "spec.disruptionMode: expected exactly one of single and all");
	g->disruption = all ? KUBEAPI_DISRUPT_ALL : KUBEAPI_DISRUPT_SINGLE;
	return 0;
}

/* spec.priority, spec.priorityClassName and spec.preemptionPolicy, as a
 * pod's. */
static int native_priority(struct kubeapi__dec *d, const cJSON *spec, struct kubeapi_podgroup *g)
{
	static const char *const policies[] = {"PreemptLowerPriority", "Never"};
	const char *s;
	size_t len;
	int64_t v;
	int rc, at;

	if ((rc = kubeapi__int(d, spec, "priority", "spec.priority", INT32_MIN, INT32_MAX, &v)) < 0)
		return rc;
	g->has_priority = rc == 0;
	g->priority = rc == 0 ? (int32_t)v : 0;
	if ((rc = kubeapi__string_id(d, spec, "priorityClassName", "spec.priorityClassName",
	                             KUBEAPI_MAX_NAME, &g->priority_class)) < 0 ||
	    (rc = kubeapi__string(d, spec, "preemptionPolicy", "spec.preemptionPolicy", 64, &s,
	                          &len)) != 0)
		return rc < 0 ? rc : 0;
	if ((at = kubeapi__lookup(policies, 2, s, len)) < 0)
		return kubeapi__fail(d,
		                     "spec.preemptionPolicy: \"%s\" is not PreemptLowerPriority or "
		                     "Never",
		                     s);
	g->preempt_never = at == 1;
	return 0;
}

/* spec.workloadRef.workloadName: the Workload whose labels may name the
 * queue. */
static int native_workload(struct kubeapi__dec *d, const cJSON *spec, struct kubeapi_podgroup *g)
{
	const cJSON *ref;
	int rc;

	if ((rc = kubeapi__object(d, spec, "workloadRef", "spec.workloadRef", &ref)) != 0)
		return rc < 0 ? rc : 0;
	rc = kubeapi__string_id(d, ref, "workloadName", "spec.workloadRef.workloadName",
	                        KUBEAPI_MAX_NAME, &g->workload);
	return rc < 0 ? rc : 0;
}

static int native_spec(struct kubeapi__dec *d, const cJSON *spec, struct kubeapi_podgroup *g)
{
	int rc;

	if ((rc = native_policy(d, spec, g)) < 0 || (rc = native_topology(d, spec, g)) < 0 ||
	    (rc = native_disruption(d, spec, g)) < 0 || (rc = native_workload(d, spec, g)) < 0)
		return rc;
	return native_priority(d, spec, g);
}

static int podgroup_spec(struct kubeapi__dec *d, const cJSON *spec, struct kubeapi_podgroup *g)
{
	const cJSON *minres;
	struct kubeapi__amounts a = {0};
	int64_t v;
	int rc;

	if ((rc = kubeapi__int(d, spec, "minMember", "spec.minMember", 0, INT32_MAX, &v)) < 0)
		return rc;
	g->min_member = rc == 0 ? (int32_t)v : 1;
	if ((rc = kubeapi__object(d, spec, "minResources", "spec.minResources", &minres)) < 0 ||
	    (rc = kubeapi__amounts_read(d, minres, "spec.minResources", &a)) < 0 ||
	    (rc = kubeapi__reslist(d, &a, &g->min_resources)) < 0)
		return rc;
	if (g->dialect == KUBEAPI_PG_SCHEDULER_PLUGINS) {
		rc = kubeapi__int(d, spec, "scheduleTimeoutSeconds", "spec.scheduleTimeoutSeconds",
		                  0, INT32_MAX, &v);
		if (rc < 0)
			return rc;
		g->has_timeout = rc == 0;
		g->timeout_s = rc == 0 ? (int32_t)v : 0;
		return 0;
	}
	if ((rc = kubeapi__string_id(d, spec, "queue", "spec.queue", KUBEAPI_MAX_NAME, &g->queue)) <
	        0 ||
	    (rc = min_tasks(d, spec, g)) < 0)
		return rc;
	return kubeapi__string_id(d, spec, "priorityClassName", "spec.priorityClassName",
	                          KUBEAPI_MAX_NAME, &g->priority_class);
}

/* One condition of a Volcano PodGroup: kept only when it is the only one
 * (Muster writes exactly one); status writes compare against it. */
static int pg_condition(struct kubeapi__dec *d, const cJSON *c, struct kubeapi_pg_status *st)
{
	const char *s, *msg, *t;
	size_t len, mlen, tlen;
	int rc;

	if ((rc = kubeapi__string_id(d, c, "type", "status.conditions[].type", 64,
	                             &st->cond_type)) < 0 ||
	    (rc = kubeapi__string_id(d, c, "reason", "status.conditions[].reason", 256,
	                             &st->cond_reason)) < 0 ||
	    (rc = kubeapi__string_id(d, c, "transitionID", "status.conditions[].transitionID",
	                             KUBEAPI_MAX_NAME, &st->transition_id)) < 0 ||
	    (rc = kubeapi__string(d, c, "status", "status.conditions[].status", 16, &s, &len)) <
	        0 ||
	    (rc = kubeapi__string(d, c, "message", "status.conditions[].message", 32768, &msg,
	                          &mlen)) < 0 ||
	    (rc = kubeapi__string(d, c, "lastTransitionTime",
	                          "status.conditions[].lastTransitionTime", 64, &t, &tlen)) < 0)
		return rc;
	st->cond_true = s && len == 4 && memcmp(s, "True", 4) == 0;
	st->cond_msg = msg ? kubeapi_text_hash(msg, mlen) : 0;
	if (t && kubeapi__parse_time(t, tlen, &st->cond_time_s) < 0)
		return kubeapi__fail(d,
		                     "status.conditions[].lastTransitionTime: not an RFC 3339 "
		                     "time: \"%s\"",
		                     t);
	return 0;
}

/* A native PodGroup's PodGroupInitiallyScheduled condition, the one Muster
 * writes (DisruptionTarget beside it is left out). */
static const cJSON *native_condition(const cJSON *conds)
{
	const cJSON *c, *type;

	cJSON_ArrayForEach(c, conds)
	{
		type = cJSON_GetObjectItemCaseSensitive(c, "type");
		if (cJSON_IsString(type) && strcmp(type->valuestring, KUBEAPI_PG_SCHEDULED) == 0)
			return c;
	}
	return NULL;
}

static int pg_status(struct kubeapi__dec *d, const cJSON *status, bool native,
                     struct kubeapi_pg_status *st)
{
	static const char *const counts[] = {"running", "succeeded", "failed"};
	int32_t *at[] = {&st->running, &st->succeeded, &st->failed};
	const cJSON *conds;
	int64_t v;
	int rc;

	if ((rc = kubeapi__string_id(d, status, "phase", "status.phase", 64, &st->phase)) < 0)
		return rc;
	for (size_t k = 0; k < 3; k++) {
		char path[32];

		snprintf(path, sizeof(path), "status.%s", counts[k]);
		if ((rc = kubeapi__int(d, status, counts[k], path, 0, INT32_MAX, &v)) < 0)
			return rc;
		*at[k] = rc == 0 ? (int32_t)v : 0;
	}
	if ((rc = kubeapi__array(d, status, "conditions", "status.conditions", 64, &conds)) < 0)
		return rc;
	st->ncond = (uint8_t)cJSON_GetArraySize(conds);
	if (native) {
		const cJSON *c = native_condition(conds);

		st->ncond = c != NULL;
		return c ? pg_condition(d, c, st) : 0;
	}
	return st->ncond == 1 ? pg_condition(d, cJSON_GetArrayItem(conds, 0), st) : 0;
}

static int podgroup_fields(struct kubeapi__dec *d, const cJSON *obj, const struct kubeapi__meta *md,
                           void *out)
{
	struct kubeapi_podgroup *g = out;
	const cJSON *spec, *status;
	int rc;

	bool native = g->dialect == KUBEAPI_PG_NATIVE;

	if ((rc = kubeapi__object(d, obj, "spec", "spec", &spec)) < 0 ||
	    (rc = kubeapi__object(d, obj, "status", "status", &status)) < 0 ||
	    (rc = native ? native_spec(d, spec, g) : podgroup_spec(d, spec, g)) < 0 ||
	    (rc = pg_status(d, status, native, &g->status)) < 0)
		return rc;
	return kubeapi__labels(d, md->labels, md->annotations, MUSTER_PREFIX, &g->muster);
}

static void podgroup_identity(void *obj, const struct kubeapi__meta *md, const void *arg)
{
	struct kubeapi_podgroup *g = obj;

	memcpy(g->uid, md->uid, sizeof(g->uid));
	g->ns = md->ns;
	g->name = md->name;
	g->rv = md->rv;
	g->created_s = md->created_s;
	g->dialect = (uint8_t) * (const enum kubeapi_dialect *)arg;
}

const struct kubeapi__kind kubeapi__podgroup_kind = {
    "PodGroup",
    true,
    sizeof(struct kubeapi_podgroup),
    podgroup_identity,
    podgroup_fields,
    kubeapi__podgroup_release,
};

int kubeapi_podgroup_decode(struct kubeapi_model *m, enum kubeapi_dialect dialect, const cJSON *obj,
                            struct kubeapi_podgroup *out, struct kubeapi_decode_error *err)
{
	return kubeapi__decode(m, &kubeapi__podgroup_kind, &dialect, obj, out, err);
}

void kubeapi__podgroup_release(struct kubeapi_model *m, void *obj)
{
	kubeapi_podgroup_release(m, obj);
}

void kubeapi_podgroup_release(struct kubeapi_model *m, struct kubeapi_podgroup *g)
{
	intern_unref(m->in, g->ns);
	intern_unref(m->in, g->name);
	intern_unref(m->in, g->queue);
	intern_unref(m->in, g->priority_class);
	intern_unref(m->in, g->topology_key);
	intern_unref(m->in, g->workload);
	intern_unref(m->in, g->status.phase);
	intern_unref(m->in, g->status.cond_type);
	intern_unref(m->in, g->status.cond_reason);
	intern_unref(m->in, g->status.transition_id);
	for (unsigned k = 0; k < g->ntasks; k++)
		intern_unref(m->in, g->min_tasks[k].task);
	kubeapi__reslist_unref(m, g->min_resources);
	kubeapi__labels_unref(m->in, g->muster);
	memset(g, 0, sizeof(*g));
}

/* ---- PriorityClasses --------------------------------------------------------------- */

static void priorityclass_identity(void *obj, const struct kubeapi__meta *md, const void *arg)
{
	struct kubeapi_priorityclass *pc = obj;

	(void)arg;
	pc->name = md->name;
	pc->rv = md->rv;
}

static int priorityclass_fields(struct kubeapi__dec *d, const cJSON *obj,
                                const struct kubeapi__meta *md, void *out)
{
	struct kubeapi_priorityclass *pc = out;
	const char *s;
	size_t len;
	bool gd = false;
	int64_t v;
	int rc;

	(void)md;
	rc = kubeapi__int(d, obj, "value", "value", INT32_MIN, INT32_MAX, &v);
	if (rc > 0)
		return kubeapi__fail(d, "value: missing");
	if (rc < 0 || (rc = kubeapi__bool(d, obj, "globalDefault", "globalDefault", &gd)) < 0 ||
	    (rc = kubeapi__string(d, obj, "preemptionPolicy", "preemptionPolicy", 32, &s, &len)) <
	        0)
		return rc;
	pc->value = (int32_t)v;
	pc->global_default = gd;
	pc->preempt_never = str_is(s, len, "Never");
	return 0;
}

const struct kubeapi__kind kubeapi__priorityclass_kind = {
    "PriorityClass",
    false,
    sizeof(struct kubeapi_priorityclass),
    priorityclass_identity,
    priorityclass_fields,
    kubeapi__priorityclass_release,
};

int kubeapi_priorityclass_decode(struct kubeapi_model *m, const cJSON *obj,
                                 struct kubeapi_priorityclass *out,
                                 struct kubeapi_decode_error *err)
{
	return kubeapi__decode(m, &kubeapi__priorityclass_kind, NULL, obj, out, err);
}

void kubeapi__priorityclass_release(struct kubeapi_model *m, void *obj)
{
	kubeapi_priorityclass_release(m, obj);
}

void kubeapi_priorityclass_release(struct kubeapi_model *m, struct kubeapi_priorityclass *pc)
{
	intern_unref(m->in, pc->name);
	memset(pc, 0, sizeof(*pc));
}

/* ---- PodDisruptionBudgets ---------------------------------------------------------- */

struct sel_builder {
	struct kubeapi_requirement reqs[KUBEAPI_MAX_LIST];
	uint32_t values[KUBEAPI_MAX_LIST];
	size_t nreqs, nvalues;
	struct kubeapi__ids ids;
};

static int selector_labels(struct kubeapi__dec *d, const cJSON *sel, struct sel_builder *b)
{
	const cJSON *ml, *e;
	int rc;

	if ((rc = kubeapi__object(d, sel, "matchLabels", "spec.selector.matchLabels", &ml)) < 0)
		return rc;
	cJSON_ArrayForEach(e, ml)
	{
		struct kubeapi_requirement *r = &b->reqs[b->nreqs];

		if (!cJSON_IsString(e) || strlen(e->valuestring) > KUBEAPI_MAX_NAME ||
		    strlen(e->string) > KUBEAPI_MAX_NAME + 64)
			return kubeapi__fail(d,
			                     "spec.selector.matchLabels: expected short strings");
		if (b->nreqs == KUBEAPI_MAX_LIST || b->nvalues == KUBEAPI_MAX_LIST)
			return kubeapi__fail(d, "spec.selector: too large");
		r->op = KUBEAPI_SEL_IN;
		r->nvalues = 1;
		r->first_value = (uint32_t)b->nvalues;
		r->key = kubeapi__intern_to(d, &b->ids, e->string, strlen(e->string));
		b->values[b->nvalues] =
		    kubeapi__intern_to(d, &b->ids, e->valuestring, strlen(e->valuestring));
		if (!r->key || !b->values[b->nvalues])
			return -ENOMEM;
		b->nvalues++;
		b->nreqs++;
	}
	return 0;
}

/* One matchExpressions entry {key, operator, values} appended to b. The
 * same requirement reader as pods use would do; selectors are rarer and
 * carry no fields, so this one is kept small and local. */
static int selector_expr(struct kubeapi__dec *d, const cJSON *e, const char *path,
                         struct sel_builder *b)
{
	static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist"};
	struct kubeapi_requirement *r = &b->reqs[b->nreqs];
	const cJSON *vals, *v;
	const char *key, *op;
	size_t klen, oplen;
	char p[80];
	int i;

	if (!cJSON_IsObject(e))
		return kubeapi__fail(d, "%s: expected an object", path);
	if (kubeapi__string(d, e, "key", kubeapi__path(p, sizeof(p), path, "key"),
	                    KUBEAPI_MAX_NAME + 64, &key, &klen) < 0 ||
	    kubeapi__string(d, e, "operator", kubeapi__path(p, sizeof(p), path, "operator"), 16,
	                    &op, &oplen) < 0 ||
	    kubeapi__array(d, e, "values", kubeapi__path(p, sizeof(p), path, "values"),
	                   KUBEAPI_MAX_LIST, &vals) < 0)
		return -EINVAL;
	if (!key)
		return kubeapi__fail(d, "%s.key: missing", path);
	if (!op)
		return kubeapi__fail(d, "%s.operator: missing", path);
	i = kubeapi__lookup(ops, sizeof(ops) / sizeof(ops[0]), op, oplen);
	if (i < 0)
		return kubeapi__fail(d, "%s.operator: unknown \"%.16s\"", path, op);
	r->op = (uint8_t)i;
	r->first_value = (uint32_t)b->nvalues;
	if (!(r->key = kubeapi__intern_to(d, &b->ids, key, klen)))
		return -ENOMEM;
	cJSON_ArrayForEach(v, vals)
	{
		if (!cJSON_IsString(v) || strlen(v->valuestring) > KUBEAPI_MAX_NAME)
			return kubeapi__fail(d, "%s.values: expected short strings", path);
		if (b->nvalues == KUBEAPI_MAX_LIST)
			return kubeapi__fail(d, "spec.selector: too large");
		b->values[b->nvalues] =
		    kubeapi__intern_to(d, &b->ids, v->valuestring, strlen(v->valuestring));
		if (!b->values[b->nvalues++])
			return -ENOMEM;
		r->nvalues++;
	}
	b->nreqs++;
	return 0;
}

static int selector_exprs(struct kubeapi__dec *d, const cJSON *sel, struct sel_builder *b)
{
	const cJSON *list, *e;
	char path[48];
	int rc, n = 0;

	if ((rc = kubeapi__array(d, sel, "matchExpressions", "spec.selector.matchExpressions",
	                         KUBEAPI_MAX_LIST, &list)) < 0)
		return rc;
	cJSON_ArrayForEach(e, list)
	{
		if (b->nreqs == KUBEAPI_MAX_LIST)
			return kubeapi__fail(d, "spec.selector: too large");
		snprintf(path, sizeof(path), "spec.selector.matchExpressions[%d]", n++);
		if ((rc = selector_expr(d, e, path, b)) < 0)
			return rc;
	}
	return 0;
}

static int selector_blob(struct kubeapi__dec *d, struct sel_builder *b,
                         const struct kubeapi_selector **out)
{
	struct buf buf;
	struct kubeapi_selector h = {0};
	size_t oh, orq, ov;

	kubeapi__blob_buf_init(&buf);
	oh = kubeapi__buf_add(&buf, sizeof(h));
	orq = kubeapi__buf_add(&buf, b->nreqs * sizeof(b->reqs[0]));
	ov = kubeapi__buf_add(&buf, b->nvalues * sizeof(b->values[0]));
	if (oh == (size_t)-1 || orq == (size_t)-1 || ov == (size_t)-1) {
		buf_free(&buf);
		return -ENOMEM;
	}
	h.nreq = (uint32_t)b->nreqs;
	h.nvalues = (uint32_t)b->nvalues;
	h.off_requirements = (uint32_t)orq;
	h.off_values = (uint32_t)ov;
	memcpy(buf.p + oh, &h, sizeof(h));
	memcpy(buf.p + orq, b->reqs, b->nreqs * sizeof(b->reqs[0]));
	memcpy(buf.p + ov, b->values, b->nvalues * sizeof(b->values[0]));
	*out = kubeapi__blob(d, buf.p, buf.len, &b->ids);
	buf_free(&buf);
	return *out ? 0 : -ENOMEM;
}

static int pdb_selector(struct kubeapi__dec *d, const cJSON *spec, struct kubeapi_pdb *p)
{
	struct sel_builder *b;
	const cJSON *sel;
	int rc;

	if ((rc = kubeapi__object(d, spec, "selector", "spec.selector", &sel)) < 0)
		return rc;
	p->selects_nothing = sel == NULL;
	if (!sel)
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	if ((rc = selector_labels(d, sel, b)) == 0 && (rc = selector_exprs(d, sel, b)) == 0)
		rc = selector_blob(d, b, &p->selector);
	kubeapi__ids_drop(d->m->in, &b->ids);
	free(b);
	return rc;
}

void kubeapi__selector_unref(struct intern *in, const struct kubeapi_selector *s)
{
	const struct kubeapi_requirement *r;
	const uint32_t *v;
	uint32_t i;

	if (!s)
		return;
	if (intern_blob_refs(s) == 1) {
		r = kubeapi_selector_requirements(s);
		v = kubeapi_selector_values(s);
		for (i = 0; i < s->nreq; i++)
			intern_unref(in, r[i].key);
		for (i = 0; i < s->nvalues; i++)
			intern_unref(in, v[i]);
	}
	intern_blob_unref(in, s);
}

static void pdb_identity(void *obj, const struct kubeapi__meta *md, const void *arg)
{
	struct kubeapi_pdb *p = obj;

	(void)arg;
	p->ns = md->ns;
	p->name = md->name;
	p->rv = md->rv;
}

static int pdb_fields(struct kubeapi__dec *d, const cJSON *obj, const struct kubeapi__meta *md,
                      void *out)
{
	struct kubeapi_pdb *p = out;
	const cJSON *spec, *status;
	int64_t v = 0;
	int rc;

	(void)md;
	if ((rc = kubeapi__object(d, obj, "spec", "spec", &spec)) < 0 ||
	    (rc = kubeapi__object(d, obj, "status", "status", &status)) < 0 ||
	    (rc = pdb_selector(d, spec, p)) < 0 ||
	    (rc = kubeapi__int(d, status, "disruptionsAllowed", "status.disruptionsAllowed", 0,
	                       INT32_MAX, &v)) < 0)
		return rc;
	p->disruptions_allowed = (int32_t)v;
	return 0;
}

const struct kubeapi__kind kubeapi__pdb_kind = {
    "PodDisruptionBudget", true,       sizeof(struct kubeapi_pdb),
    pdb_identity,          pdb_fields, kubeapi__pdb_release,
};

int kubeapi_pdb_decode(struct kubeapi_model *m, const cJSON *obj, struct kubeapi_pdb *out,
                       struct kubeapi_decode_error *err)
{
	return kubeapi__decode(m, &kubeapi__pdb_kind, NULL, obj, out, err);
}

void kubeapi__pdb_release(struct kubeapi_model *m, void *obj)
{
	kubeapi_pdb_release(m, obj);
}

void kubeapi_pdb_release(struct kubeapi_model *m, struct kubeapi_pdb *p)
{
	intern_unref(m->in, p->ns);
	intern_unref(m->in, p->name);
	kubeapi__selector_unref(m->in, p->selector);
	memset(p, 0, sizeof(*p));
}

/* ---- Namespaces ------------------------------------------------------------------- */

static void namespace_identity(void *obj, const struct kubeapi__meta *md, const void *arg)
{
	struct kubeapi_namespace *ns = obj;

	(void)arg;
	ns->name = md->name;
	ns->rv = md->rv;
}

static int namespace_fields(struct kubeapi__dec *d, const cJSON *obj,
                            const struct kubeapi__meta *md, void *out)
{
	struct kubeapi_namespace *ns = out;
	const cJSON *status;
	const char *s = NULL;
	size_t len = 0;
	int rc;

	if ((rc = kubeapi__object(d, obj, "status", "status", &status)) < 0 ||
	    (rc = kubeapi__string(d, status, "phase", "status.phase", 32, &s, &len)) < 0 ||
	    (rc = kubeapi__labels(d, md->labels, md->annotations, MUSTER_PREFIX, &ns->muster)) < 0)
		return rc;
	ns->terminating = str_is(s, len, "Terminating") || md->deleting;
	return 0;
}

const struct kubeapi__kind kubeapi__namespace_kind = {
    "Namespace",
    false,
    sizeof(struct kubeapi_namespace),
    namespace_identity,
    namespace_fields,
    kubeapi__namespace_release,
};

int kubeapi_namespace_decode(struct kubeapi_model *m, const cJSON *obj,
                             struct kubeapi_namespace *out, struct kubeapi_decode_error *err)
{
	return kubeapi__decode(m, &kubeapi__namespace_kind, NULL, obj, out, err);
}

void kubeapi__namespace_release(struct kubeapi_model *m, void *obj)
{
	kubeapi_namespace_release(m, obj);
}

void kubeapi_namespace_release(struct kubeapi_model *m, struct kubeapi_namespace *ns)
{
	intern_unref(m->in, ns->name);
	kubeapi__labels_unref(m->in, ns->muster);
	memset(ns, 0, sizeof(*ns));
}

/* ---- Workloads ------------------------------------------------------------------- */

static void workload_identity(void *obj, const struct kubeapi__meta *md, const void *arg)
{
	struct kubeapi_workload *w = obj;

	(void)arg;
	w->ns = md->ns;
	w->name = md->name;
	w->rv = md->rv;
}

/* Only the labels: the rest (its PodGroup templates) is what the
 * PodGroups made from it say again. */
static int workload_fields(struct kubeapi__dec *d, const cJSON *obj, const struct kubeapi__meta *md,
                           void *out)
{
	struct kubeapi_workload *w = out;

	(void)obj;
	return kubeapi__labels(d, md->labels, md->annotations, MUSTER_PREFIX, &w->muster);
}

const struct kubeapi__kind kubeapi__workload_kind = {
    "Workload",
    true,
    sizeof(struct kubeapi_workload),
    workload_identity,
    workload_fields,
    kubeapi__workload_release,
};

int kubeapi_workload_decode(struct kubeapi_model *m, const cJSON *obj, struct kubeapi_workload *out,
                            struct kubeapi_decode_error *err)
{
	return kubeapi__decode(m, &kubeapi__workload_kind, NULL, obj, out, err);
}

void kubeapi__workload_release(struct kubeapi_model *m, void *obj)
{
	kubeapi_workload_release(m, obj);
}

void kubeapi_workload_release(struct kubeapi_model *m, struct kubeapi_workload *w)
{
	intern_unref(m->in, w->ns);
	intern_unref(m->in, w->name);
	kubeapi__labels_unref(m->in, w->muster);
	memset(w, 0, sizeof(*w));
}
