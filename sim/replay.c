/*
 * A live cluster played forward (sim.h: sim_replay): a snapshot as the
 * API server lists it, then the planner on a virtual clock from the time
 * it was taken. Work that runs ends when the planner expects it to (its
 * runtime from its start: plan_input.ends); the gangs that wait are bound
 * as the planner decides, run their runtime, and end; nothing arrives.
 *
 * The snapshot is one JSON List (what `kubectl get nodes,pods,podgroups
 * -A -o json` prints, PriorityClasses too): items of other kinds are left
 * out, and an item the decoders refuse is skipped and counted (its reason
 * kept for the first few), so one bad object loses nothing else.
 *
 * Cost: one parse of the file (at most SIM_SNAPSHOT_MAX_BYTES); per event
 * time, the cycles until one binds nothing and a pass over the ends the
 * planner published (O(bound pods)); a pod moves by a copy of its decoded
 * record (kubeapi_pod_copy()), never through JSON again.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "queue/queue.h"
#include "sim/internal.h"

/* ---- the snapshot --------------------------------------------------------- */

int sim_snapshot_read(const char *path, struct sim_snapshot *s)
{
	char *text;
	size_t len = 0;
	int rc;

	memset(s, 0, sizeof(*s));
	if ((rc = sim__read_file(path, SIM_SNAPSHOT_MAX_BYTES, &text, &len)) < 0) {
		snprintf(s->error, sizeof(s->error), "%s: %s", path,
		         rc == -EFBIG ? "larger than the snapshot limit" : strerror(-rc));
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	s->doc = cJSON_ParseWithLength(text, len);
	free(text);
	return sim_snapshot_take(s, s->doc, path);
}

int sim_snapshot_take(struct sim_snapshot *s, cJSON *doc, const char *name)
{
	s->doc = doc;
	if (!doc || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "items"))) {
		snprintf(s->error, sizeof(s->error), "%s: not a JSON List with \"items\"", name);
		cJSON_Delete(doc);
		s->doc = NULL;
		return -EINVAL;
	}
	return 0;
}

void sim_snapshot_free(struct sim_snapshot *s)
{
	cJSON_Delete(s->doc);
	memset(s, 0, sizeof(*s));
}

/* ---- the run ---------------------------------------------------------------- */

/* A pod's end the planner published, not yet come. */
struct pending_end {
	int64_t end_s;
	uint64_t key;
};

struct replay {
	const struct sim_replay_options *o;
	struct sim_replay_result *res;
	struct sim_world w;
	struct queue_set *qs;
	struct plan plan;
	struct plan_memory keep;
	uint32_t sched[CONFIG_MAX_SCHEDULER_NAMES];
	size_t nsched;
	struct idmap known;       /* pod key -> anything: its end is filed */
	struct idmap started;     /* gang key -> its index in res->gangs + 1 */
	struct pending_end *ends; /* not sorted: few, and scanned once an event */
	size_t nends, cap_ends;
	int64_t now; /* unix seconds */
	double used; /* GPUs in use since now */
};

static int load(struct replay *r)
{
	const cJSON *item;
	char why[512];
	int rc;

	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(r->o->snapshot->doc, "items"))
	{
		if ((rc = sim__put_item(&r->w, item, why, sizeof(why))) == -ENOMEM)
			return rc;
		if (rc == -EINVAL) {
			if (!r->res->skipped++)
				snprintf(r->res->first_skip, sizeof(r->res->first_skip), "%s", why);
			continue;
		}
		r->res->objects += (size_t)rc;
	}
	return 0;
}

static void scheduler_names(struct replay *r)
{
	const struct config *c = r->o->cfg;

	if (c->scheduler_names.n)
		for (size_t k = 0; k < c->scheduler_names.n && k < CONFIG_MAX_SCHEDULER_NAMES; k++)
			r->sched[r->nsched++] = sim__id(&r->w, c->scheduler_names.v[k]);
	else
		r->sched[r->nsched++] =
		    sim__id(&r->w, c->scheduler_name ? c->scheduler_name : "muster");
}

/* The ends the planner published for pods not filed yet. */
static int file_ends(struct replay *r)
{
	for (size_t k = 0; k < r->plan.nends; k++) {
		const struct plan_end *e = &r->plan.ends[k];
		uint64_t key = kubeapi_pod_key(e->pod);

		if (e->end_s == PLAN_NEVER || e->pod->phase == KUBEAPI_POD_SUCCEEDED ||
		    e->pod->phase == KUBEAPI_POD_FAILED || idmap_get(&r->known, key))
			continue;
		if (idmap_put(&r->known, key, (void *)1) < 0 ||
		    (r->nends == r->cap_ends &&
		     !(r->ends = reallocarray(r->ends, r->cap_ends = r->cap_ends * 2 + 64,
		                              sizeof(*r->ends)))))
			return -ENOMEM;
		r->ends[r->nends++] =
		    (struct pending_end){e->end_s < r->now ? r->now : e->end_s, key};
	}
	return 0;
}

/* A gang's first bind: its start. */
static int record_start(struct replay *r, const struct plan_gang *g)
{
	struct sim_replay_gang *v;
	const char *ns = intern_str(kubeapi_model_intern(r->w.model), g->ns);
	const char *name = intern_str(kubeapi_model_intern(r->w.model), g->name);

	if (idmap_get(&r->started, g->key))
		return 0;
	v = reallocarray(r->res->gangs, r->res->ngangs + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->res->gangs = v;
	v = &v[r->res->ngangs];
	memset(v, 0, sizeof(*v));
	r->res->ngangs++; /* counted first, so that sim_replay_result_free() frees it */
	if (!(v->ns = strdup(ns)) || !(v->name = strdup(name)) ||
	    (g->queue != QUEUE_NONE &&
	     !(v->queue = strdup(queue_tree_name(queue_set_tree_c(r->qs), g->queue)))))
		return -ENOMEM;
	v->start_s = r->now - r->o->at_s;
	v->submitted_s = g->submitted_s;
	return idmap_put(&r->started, g->key, (void *)(uintptr_t)r->res->ngangs) < 0 ? -ENOMEM : 0;
}

static int apply_binds(struct replay *r)
{
	int rc = 0;

	for (size_t b = 0; rc == 0 && b < r->plan.nbinds; b++) {
		const struct plan_bind *x = &r->plan.binds[b];

		if ((rc = record_start(r, &r->plan.gangs[x->gang])) == 0)
			rc = sim__move_pod(&r->w, x->pod, x->node, KUBEAPI_POD_RUNNING, r->now);
	}
	return rc;
}

static int cycle(struct replay *r)
{
	struct plan_input in;
	int rc;

	sim__plan_input(&r->w, r->qs, &in);
	in.schedulers = r->sched;
	in.nschedulers = r->nsched;
	in.now_s = r->now;
	in.ends = 1;
	r->res->cycles++;
	if ((rc = plan_cycle(&r->plan, &in, &r->keep)) < 0)
		return rc;
	if (r->plan.nevictions)
		r->res->violations++; /* the replay does not preempt */
	if ((rc = file_ends(r)) < 0 || (rc = apply_binds(r)) < 0)
		return rc;
	return r->plan.nbinds > 0;
}

/* The ends due by now: the pods Succeeded. */
static int complete(struct replay *r)
{
	size_t k = 0;
	int rc = 0;

	while (rc == 0 && k < r->nends) {
		const struct kubeapi_pod *p;

		if (r->ends[k].end_s > r->now) {
			k++;
			continue;
		}
		if ((p = idmap_get(&r->w.pods, r->ends[k].key)))
			rc = sim__move_pod(&r->w, p, 0, KUBEAPI_POD_SUCCEEDED, 0);
		r->ends[k] = r->ends[--r->nends];
	}
	return rc;
}

static int64_t next_end(const struct replay *r)
{
	int64_t t = SIM_NO_TIME;

	for (size_t k = 0; k < r->nends; k++)
		if (t == SIM_NO_TIME || r->ends[k].end_s < t)
			t = r->ends[k].end_s;
	return t;
}

static int run(struct replay *r)
{
	int64_t stop = r->o->at_s + (r->o->stop_s ? r->o->stop_s : SIM_DEFAULT_STOP_S), t;
	int rc = 0, rounds;

	for (r->now = r->o->at_s;;) {
		if ((rc = complete(r)) < 0)
			return rc;
		for (rounds = 0; (rc = cycle(r)) > 0;)
			if (++rounds == SIM_MAX_ROUNDS)
				return -ELOOP;
		if (rc < 0)
			break;
		/* The last cycle bound nothing: its table is the cluster now. */
		policy_nodes_gpus_in_use(&r->plan.nodes, &r->used, &r->res->gpus);
		if ((t = next_end(r)) == SIM_NO_TIME || t > stop)
			break;
		r->res->gpu_seconds += r->used * (double)(t - r->now);
		r->now = t;
	}
	r->res->now_s = r->now - r->o->at_s;
	return rc;
}

int sim_replay(const struct sim_replay_options *o, struct sim_replay_result *res)
{
	struct replay r = {.o = o, .res = res};
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = sim__world_init(&r.w, o->at_s)) == 0 &&
	    (rc = queue_set_build(o->cfg, &r.qs)) == 0 && (rc = load(&r)) == 0) {
		scheduler_names(&r);
		rc = run(&r);
	}
	plan_free(&r.plan);
	plan_memory_free(&r.keep);
	queue_set_free(&r.qs);
	sim__world_free(&r.w);
	idmap_free(&r.known);
	idmap_free(&r.started);
	free(r.ends);
	return rc;
}

void sim_replay_result_free(struct sim_replay_result *res)
{
	for (size_t k = 0; k < res->ngangs; k++) {
		free(res->gangs[k].ns);
		free(res->gangs[k].name);
		free(res->gangs[k].queue);
	}
	free(res->gangs);
	memset(res, 0, sizeof(*res));
}
