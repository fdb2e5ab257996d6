/*
 * Status written back, the way kube-scheduler does (sched.h):
 *   - a waiting pod: condition PodScheduled=False, reason Unschedulable,
 *     with the planner's message, written when the message changes (a
 *     hash per pod), not once per cycle; and a FailedScheduling Event
 *     when its headline (before the first ';') changes in more than its
 *     numbers, so node counts that drift with the cluster ("3 node(s)
 *     were not ready" becoming "4", or appearing) update the condition
 *     without a stream of Events;
 *   - a bound pod: a Scheduled Event (bind.c); the API server sets
 *     PodScheduled=True itself on binding;
 *   - a PodGroup: its status in its own dialect, when it changes.
 * At most status_per_cycle writes start per cycle, so a large backlog of
 * waiting pods never crowds out bindings in the engine's write budget.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubeapi/writes.h"
#include "scheduler/sched.h"

struct write_op {
	struct sched *s;
	struct kubeapi_idmap *map;
	uint64_t key, hash;
};

static uint64_t hash_str(const char *p)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*p) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ull;
	}
	return h | 1; /* never 0: 0 means "nothing written" in the maps */
}

/* The message's headline (up to the first ';': what waits and on what;
 * after it come per-node details that churn with the cluster), hashed
 * with every run of digits read as one. */
static uint64_t hash_shape(const char *p)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *p && *p != ';'; p++) {
		if (*p >= '0' && *p <= '9') {
			while (p[1] >= '0' && p[1] <= '9')
				p++;
			h = (h ^ '#') * 0x100000001b3ull;
			continue;
		}
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	}
	return h | 1;
}

void sched_target(struct sched *s, const struct kubeapi_pod *pod, struct kubeapi_target *t,
                  char uid[40])
{
	const uint8_t *u = pod->uid;

	snprintf(uid, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
	         u[13], u[14], u[15]);
	t->ns = sched_str(s, pod->ns);
	t->name = sched_str(s, pod->name);
	t->uid = uid;
}

/* The hash is recorded when the write is sent, so the cycles that run
 * while it is in flight do not send it again; a write that fails is
 * forgotten, so the next cycle sends it again. */
static void on_written(void *data, const struct kubeapi_response *r)
{
	struct write_op *op = data;

	if (!op->s->stopping && (r->err || r->status < 200 || r->status >= 300)) {
		if ((uintptr_t)kubeapi_idmap_get(op->map, op->key) == op->hash)
			kubeapi_idmap_del(op->map, op->key);
		if (r->status != 404) /* a pod or group deleted meanwhile is no error */
			op->s->n.write_errors++;
	}
	free(op);
}

static void on_event(void *data, const struct kubeapi_response *r)
{
	struct sched *s = data;

	if (!s->stopping && (r->err || r->status >= 300) && r->status != 404)
		s->n.write_errors++;
}

void sched_event(struct sched *s, const struct kubeapi_pod *pod, const char *type,
                 const char *reason, const char *action, const char *note)
{
	struct kubeapi_target t;
	struct timespec now;
	char uid[40];
	struct kubeapi_event ev = {.regarding = &t,
	                           .type = type,
	                           .reason = reason,
	                           .action = action,
	                           .note = note,
	                           .controller = "muster.dev/scheduler",
	                           .instance = s->instance};

	sched_target(s, pod, &t, uid);
	clock_gettime(CLOCK_REALTIME, &now);
	if (kubeapi_event_create(s->http, &ev, now, on_event, s) == 0)
		s->n.events++;
}

/* One write, remembered in map under key with hash once it succeeds. */
static struct write_op *new_op(struct sched *s, struct kubeapi_idmap *map, uint64_t key,
                               uint64_t hash)
{
	struct write_op *op = malloc(sizeof(*op));

	if (!op)
		return NULL;
	*op = (struct write_op){s, map, key, hash};
	if (kubeapi_idmap_put(map, key, (void *)(uintptr_t)hash) < 0) {
		free(op);
		return NULL;
	}
	return op;
}

static void pod_condition(struct sched *s, const struct kubeapi_pod *pod, const char *msg,
                          unsigned *budget)
{
	uint64_t key = (uint64_t)pod->ns << 32 | pod->name, h = hash_str(msg);
	struct kubeapi_target t;
	struct write_op *op;
	char uid[40];

	if ((uintptr_t)kubeapi_idmap_get(&s->written, key) == h || *budget == 0)
		return;
	if (!(op = new_op(s, &s->written, key, h)))
		return;
	sched_target(s, pod, &t, uid);
	(*budget)--;
	if (kubeapi_patch_pod_condition(s->http, &t, "PodScheduled", "False", "Unschedulable", msg,
	                                time(NULL), on_written, op) < 0) {
		kubeapi_idmap_del(&s->written, key);
		free(op);
		return;
	}
	s->n.status_writes++;
	h = hash_shape(msg);
	if ((uintptr_t)kubeapi_idmap_get(&s->evented, key) != h &&
	    kubeapi_idmap_put(&s->evented, key, (void *)(uintptr_t)h) == 0) {
		sched_event(s, pod, "Warning", "FailedScheduling", "Scheduling", msg);
		sched_log_gang(s, sched_str(s, pod->ns),
		               sched_str(s, pod->group ? pod->group : pod->name),
		               sched_str(s, pod->name), "pod %s/%s waits: %s",
		               sched_str(s, pod->ns), sched_str(s, pod->name), msg);
	}
}

/* The phase of a gang in the PodGroup's dialect. */
static const char *phase_of(const struct plan_gang *g)
{
	uint32_t bound = g->bound + g->nbind;
	int volcano = g->group->dialect == KUBEAPI_PG_VOLCANO;

	if (bound == 0 && g->npending == 0 && g->succeeded + g->failed > 0)
		return volcano ? "Completed" : g->failed ? "Failed" : "Finished";
	if (bound + g->succeeded >= g->min_member)
		return volcano ? "Running" : "Scheduled";
	if (bound > 0)
		return volcano ? "Inqueue" : "Scheduling";
	return "Pending";
}

static char *group_status_json(const struct plan_gang *g)
{
	cJSON *st = cJSON_CreateObject(), *conds, *c;
	char now[32];
	struct timespec ts;
	char *out;

	cJSON_AddStringToObject(st, "phase", phase_of(g));
	cJSON_AddNumberToObject(st, "running", g->bound + g->nbind);
	cJSON_AddNumberToObject(st, "succeeded", g->succeeded);
	cJSON_AddNumberToObject(st, "failed", g->failed);
	if (g->group->dialect == KUBEAPI_PG_VOLCANO) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec = 0; /* seconds: an unchanged status hashes the same */
		kubeapi_format_microtime(ts, now);
		conds = cJSON_AddArrayToObject(st, "conditions");
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "type", g->message ? "Unschedulable" : "Scheduled");
		cJSON_AddStringToObject(c, "status", "True");
		cJSON_AddStringToObject(c, "reason",
		                        g->message ? "NotEnoughResources"
		                                   : "tasks in gang are ready to be scheduled");
		if (g->message)
			cJSON_AddStringToObject(c, "message", g->message);
		cJSON_AddItemToArray(conds, c);
	}
	out = cJSON_PrintUnformatted(st);
	cJSON_Delete(st);
	return out;
}

static void group_status(struct sched *s, const struct plan_gang *g, unsigned *budget)
{
	char *json = group_status_json(g);
	uint64_t h;
	struct write_op *op;
	struct kubeapi_target t = {.ns = sched_str(s, g->ns), .name = sched_str(s, g->name)};

	if (!json)
		return;
	/* The condition's time is left out of the comparison. */
	h = hash_str(phase_of(g)) ^ (g->message ? hash_str(g->message) : 0) ^
	    ((uint64_t)(g->bound + g->nbind) << 1) ^ ((uint64_t)g->succeeded << 21) ^
	    ((uint64_t)g->failed << 41);
	h |= 1;
	if ((uintptr_t)kubeapi_idmap_get(&s->groups, g->key) != h && *budget > 0 &&
	    (op = new_op(s, &s->groups, g->key, h))) {
		(*budget)--;
		if (kubeapi_patch_podgroup_status(s->http, g->group->dialect, &t, json, on_written,
		                                  op) < 0) {
			kubeapi_idmap_del(&s->groups, g->key);
			free(op);
		} else
			s->n.podgroup_writes++;
	}
	cJSON_free(json);
}

/* Writes waiting in the engine beyond which status waits for a later
 * cycle: the engine sends in order, and binds must not queue behind a
 * backlog of status. */
#define STATUS_BACKLOG 256

void sched_status_write(struct sched *s)
{
	unsigned budget = s->opt.status_per_cycle;
	struct kubeapi_http_stats st;

	kubeapi_http_get_stats(s->http, &st);
	if (st.queued + st.retrying > STATUS_BACKLOG)
		return;
	if (budget > STATUS_BACKLOG)
		budget = STATUS_BACKLOG;

	for (size_t k = 0; k < s->plan.ngangs; k++) {
		const struct plan_gang *g = &s->plan.gangs[k];

		if (g->group)
			group_status(s, g, &budget);
		if (!g->message || g->state == PLAN_ADMITTED)
			continue;
		for (uint32_t m = 0; m < g->npending; m++)
			pod_condition(s, g->pending[m], g->message, &budget);
	}
}

/* Forget what was written for pods now bound or gone, and for PodGroups
 * gone: without it the maps would grow with every pod ever seen. */
void sched_status_sweep(struct sched *s)
{
	const struct kubeapi_idmap *pods = kubeapi_cache_store(s->cache, KUBEAPI_STORE_PODS);
	const struct kubeapi_idmap *pg = kubeapi_cache_store(s->cache, KUBEAPI_STORE_PODGROUPS);
	const struct kubeapi_idmap *vc = kubeapi_cache_store(s->cache, KUBEAPI_STORE_VCJOBS);
	struct kubeapi_idmap *maps[3] = {&s->written, &s->evented, &s->groups};

	for (int k = 0; k < 3; k++) {
		struct kubeapi_idmap *m = maps[k];
		uint64_t *stale = calloc(m->n + 1, sizeof(*stale));
		size_t n = 0;

		for (size_t i = 0; stale && i < m->nslots; i++) {
			uint64_t key = m->slots[i].key & ~(1ull << 63);
			const struct kubeapi_pod *pod;

			if (!m->slots[i].key)
				continue;
			if (k < 2) {
				pod = kubeapi_idmap_get(pods, key);
				if (!pod || pod->node)
					stale[n++] = m->slots[i].key;
			} else if (!kubeapi_idmap_get(pg, key) && !kubeapi_idmap_get(vc, key)) {
				stale[n++] = m->slots[i].key;
			}
		}
		for (size_t j = 0; j < n; j++)
			kubeapi_idmap_del(m, stale[j]);
		free(stale);
	}
}
