/*
 * Evictions (sched.h): the planner's victims, asked to leave.
 *
 * Each victim pod first gets the condition DisruptionTarget=True
 * (reason PreemptionByScheduler, as kube-scheduler writes it) naming the
 * preemptor and a Preempted Event; once the condition's patch has been
 * answered, a POST to pods/eviction, so PodDisruptionBudgets have the last
 * word. One after the other, as kube-scheduler does it: sent together,
 * the eviction can win, and the pod be gone before it says why.
 *
 * Each pod, the one with the uid the planner chose, is asked once; a pod
 * that takes its name later is another, and is asked on its own if the
 * planner chooses it. What an answer means (kubeapi_pod_answer()):
 *   - 429, a budget refused: the victim gang is marked refused for
 *     SCHED_REFUSED_MS (the planner passes over it) and the preemptor's
 *     hold is dropped, so the next cycle plans afresh, with other victims.
 *     Members already evicted are gone: Kubernetes cannot take that back,
 *     and the planner checks budgets itself first so this is a race.
 *   - 2xx, 404 or a uid conflict: the pod chosen is gone or going, which
 *     is what was wanted.
 *   - anything else (unreachable, 5xx, another 429, 401 and 403 while a
 *     token expires or RBAC is mended, a webhook's refusal): not done.
 *     It is sent again after a backoff (a second, doubling to half a
 *     minute) while the planner still asks for it, with a log line and
 *     the refusals counted (muster_write_errors_total). Marked done, a
 *     refused eviction left the victim running and the preemptor holding
 *     its room for nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubeapi/writes.h"
#include "scheduler/sched.h"

#define SCHED_REFUSED_MS 60000

struct sched_evicted {
	struct sched *s;
	uint64_t key;    /* the pod's: namespace id << 32 | name id */
	uint64_t victim; /* gang keys */
	uint64_t preemptor;
	char uid[40];       /* the pod's: the eviction's precondition */
	uint8_t rawuid[16]; /* the same, as the cache holds it */
	/* Its namespace and name: the pod, and the ids with it, may be gone
	 * from the cache when a write of its is sent again or logged. */
	char ns[64], name[254];
	char note[320];
	uint8_t done;
	uint8_t attempts; /* answers that were not done, in a row (saturates) */
	/* A write of its is in flight (the engine holds e as its data), and
	 * e was forgotten meanwhile: then its callback frees it. */
	uint8_t inflight, orphan;
	uint64_t retry_ms; /* not done: not sent again before */
};

static void forget(struct sched *s, uint64_t key)
{
	struct sched_evicted *e = idmap_del(&s->evicted, key);

	if (e && e->inflight)
		e->orphan = 1;
	else
		free(e);
}

/* A callback of e's begins: false when e is to be left alone (freed here
 * if it was forgotten while its write was on its way). */
static bool answer_begins(struct sched_evicted *e, const struct kubeapi_response *r)
{
	e->inflight = 0;
	if (e->orphan) {
		free(e);
		return false;
	}
	/* Stopping: sched_evicted_free() frees it. Cancelled: a fenced write
	 * is not sent again. */
	return !e->s->stopping && r->err != -ECANCELED;
}

static const struct kubeapi_pod *cached_pod(struct sched *s, uint64_t key)
{
	return idmap_get(kubeapi_cache_store(s->cache, KUBEAPI_STORE_PODS), key);
}

/* Is the cached pod under e's key the one e was sent for? */
static bool same_pod(const struct sched_evicted *e, const struct kubeapi_pod *pod)
{
	return pod && memcmp(pod->uid, e->rawuid, sizeof(e->rawuid)) == 0;
}

/* Not done: sent again from retry_ms, if the planner still asks. Logged
 * at the first such answer and then at attempts 2, 4, 8... */
static void retry_later(struct sched *s, struct sched_evicted *e, const struct kubeapi_response *r)
{
	uint64_t rnd = uv_hrtime() ^ e->key * 0x9e3779b97f4a7c15ull, ms;

	if (e->attempts < UINT8_MAX)
		e->attempts++;
	ms = kubeapi_http_backoff_ms(e->attempts, SCHED_RETRY_BASE_MS, SCHED_RETRY_CAP_MS, rnd);
	e->retry_ms = sched_now_ms(s) + ms;
	s->n.write_errors++;
	if ((e->attempts & (e->attempts - 1)) == 0)
		sched_logl(s, SCHED_WARN,
		           "eviction of %s/%s: HTTP %ld%s%s; asked again in %" PRIu64
		           " ms while the preemptor still needs it (attempt %u)",
		           e->ns, e->name, r->status, r->err ? ", " : "",
		           r->err ? strerror(-r->err) : "", ms, e->attempts);
}

static void on_evicted(void *data, const struct kubeapi_response *r)
{
	struct sched_evicted *e = data;
	struct sched *s = e->s;
	enum kubeapi_answer a;

	if (!answer_begins(e, r))
		return;
	if (r->err == 0 && kubeapi_eviction_blocked(r)) {
		s->n.evictions_refused++;
		sched_log(s, "eviction of %s/%s refused by a PodDisruptionBudget: planning again",
		          e->ns, e->name);
		idmap_put(&s->refused, e->victim,
		          (void *)(uintptr_t)(sched_now_ms(s) + SCHED_REFUSED_MS));
		sched_hold_drop(s, e->preemptor);
		forget(s, e->key);
		sched_kick(s);
		return;
	}
	a = kubeapi_pod_answer(r);
	if (a != KUBEAPI_ANSWER_DONE && a != KUBEAPI_ANSWER_GONE) {
		retry_later(s, e, r);
		return;
	}
	e->done = 1;
	e->attempts = 0;
	if (a == KUBEAPI_ANSWER_DONE)
		s->n.evictions++;
}

/* The eviction of e's pod (the pod the planner chose: its uid). */
static void send_evict(struct sched_evicted *e)
{
	struct sched *s = e->s;
	struct kubeapi_target t = {e->ns, e->name, e->uid, NULL};

	if (kubeapi_evict(s->http, &t, -1, on_evicted, e) == 0) {
		e->inflight = 1;
	} else {
		s->n.write_errors++;
		e->retry_ms =
		    sched_now_ms(s) + SCHED_RETRY_BASE_MS; /* asked again while the hold stands */
	}
}

/* The condition is written (or not: the eviction goes anyway, the
 * condition is the pod's explanation, not its permission). A 404: the pod
 * is gone already, which is what was wanted. */
static void on_condition(void *data, const struct kubeapi_response *r)
{
	struct sched_evicted *e = data;
	struct sched *s = e->s;

	if (!answer_begins(e, r))
		return;
	if (r->err == 0 && r->status == 404) {
		e->done = 1;
		return;
	}
	if (r->err || r->status >= 300)
		s->n.write_errors++;
	send_evict(e);
}

static int send_eviction(struct sched *s, const struct plan_evict *v)
{
	const struct plan_gang *victim = &s->plan.gangs[v->victim];
	const struct plan_gang *g = &s->plan.gangs[v->preemptor];
	uint64_t key = kubeapi_pod_key(v->pod);
	struct sched_evicted *e = calloc(1, sizeof(*e));
	struct kubeapi_target t;
	char msg[300];
	int rc;

	if (!e)
		return -ENOMEM;
	e->s = s;
	e->key = key;
	memcpy(e->rawuid, v->pod->uid, sizeof(e->rawuid));
	snprintf(e->ns, sizeof(e->ns), "%s", sched_str(s, v->pod->ns));
	snprintf(e->name, sizeof(e->name), "%s", sched_str(s, v->pod->name));
	e->victim = victim->key;
	e->preemptor = g->key;
	snprintf(msg, sizeof(msg), "Muster: preempted by gang %s/%s", sched_str(s, g->ns),
	         sched_str(s, g->name));
	snprintf(e->note, sizeof(e->note), "Preempted by gang %s/%s to make room on node %s",
	         sched_str(s, g->ns), sched_str(s, g->name), sched_str(s, v->node));
	if ((rc = idmap_put(&s->evicted, key, e)) < 0) {
		free(e);
		return rc;
	}
	/* The Event goes now, as kube-scheduler's does at its decision: once
	 * the eviction is through, the pod may be gone from the cache before
	 * the answer arrives. */
	sched_event(s, v->pod, "Normal", "Preempted", "Preempting", e->note);
	sched_log_gang(s, sched_str(s, victim->ns), sched_str(s, victim->name),
	               sched_str(s, v->pod->name), "evicting %s/%s (gang %s/%s) for gang %s/%s",
	               sched_str(s, v->pod->ns), sched_str(s, v->pod->name),
	               sched_str(s, victim->ns), sched_str(s, victim->name), sched_str(s, g->ns),
	               sched_str(s, g->name));
	sched_target(s, v->pod, &t, e->uid);
	/* The condition first, so the pod says why before it goes; the
	 * eviction when it is answered (on_condition). */
	if (kubeapi_patch_pod_condition(s->http, &t, "DisruptionTarget", "True",
	                                "PreemptionByScheduler", msg, time(NULL), on_condition,
	                                e) == 0)
		e->inflight = 1;
	else
		send_evict(e);
	return 0;
}

static void on_group_condition(void *data, const struct kubeapi_response *r)
{
	struct sched *s = data;

	if (!s->stopping && r->status != 404 && (r->err || r->status >= 300))
		s->n.write_errors++;
}

/* A native victim's PodGroup, when it goes whole (disruptionMode all),
 * says it too: DisruptionTarget=True, reason PreemptionByScheduler,
 * beside PodGroupInitiallyScheduled (a strategic merge keeps that one).
 * kube-scheduler 1.37 marks only the pods; the issue asks the group to
 * say it as well, and a group that lost one member of several (single)
 * was not disrupted as a whole, so it is left alone. */
static void group_disruption(struct sched *s, const struct plan_gang *victim,
                             const struct plan_gang *g)
{
	struct kubeapi_target t = {sched_str(s, victim->ns), sched_str(s, victim->name), NULL,
	                           NULL};
	struct timespec now = {time(NULL), 0};
	char json[700], when[32];

	kubeapi_format_microtime(now, when);
	snprintf(json, sizeof(json),
	         "{\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\","
	         "\"reason\":\"PreemptionByScheduler\",\"message\":\"Muster: preempted by gang "
	         "%s/%s\",\"lastTransitionTime\":\"%s\"}]}",
	         sched_str(s, g->ns), sched_str(s, g->name), when);
	if (kubeapi_patch_podgroup_status(s->http, KUBEAPI_PG_NATIVE, &t, json, on_group_condition,
	                                  s) < 0)
		s->n.write_errors++;
	else
		s->n.podgroup_writes++;
}

void sched_evict_all(struct sched *s)
{
	uint32_t last = UINT32_MAX; /* a victim's members come in a row */

	for (size_t k = 0; k < s->plan.nevictions; k++) {
		const struct plan_evict *v = &s->plan.evictions[k];
		const struct plan_gang *victim = &s->plan.gangs[v->victim];
		struct sched_evicted *e = idmap_get(&s->evicted, kubeapi_pod_key(v->pod));

		if (e && !same_pod(e, v->pod)) {
			forget(s, e->key); /* another pod under the name: asked on its own */
			e = NULL;
		}
		if (e && !e->done && !e->inflight && e->retry_ms &&
		    e->retry_ms <= sched_now_ms(s)) {
			e->retry_ms = 0;
			send_evict(e); /* asked again: the planner still needs it */
			continue;
		}
		if (e)
			continue;
		if (v->victim != last && v->whole && victim->group &&
		    victim->group->dialect == KUBEAPI_PG_NATIVE)
			group_disruption(s, victim, &s->plan.gangs[v->preemptor]);
		last = v->victim;
		if (send_eviction(s, v) < 0)
			s->n.write_errors++;
	}
}

/* Keys of m whose entry `stale` says to drop, then dropped by `drop`. */
static void sweep(struct sched *s, struct idmap *m, bool (*stale)(struct sched *, uint64_t, void *),
                  void (*drop)(struct sched *, uint64_t))
{
	uint64_t *keys = calloc(m->n + 1, sizeof(*keys));
	const struct idmap_slot *e;
	size_t n = 0;

	for (size_t i = 0; keys && (e = idmap_next(m, &i));)
		if (stale(s, e->key, e->value))
			keys[n++] = e->key;
	for (size_t k = 0; k < n; k++)
		drop(s, keys[k]);
	free(keys);
}

/* Done and gone, or its pod replaced; or not done and no longer asked
 * for (its pod gone, or no retry due for a minute: the planner chose
 * otherwise). */
static bool evicted_stale(struct sched *s, uint64_t key, void *v)
{
	const struct sched_evicted *e = v;
	const struct kubeapi_pod *pod = cached_pod(s, key);

	if (!same_pod(e, pod))
		return true;
	return !e->done && e->retry_ms && e->retry_ms + 60000 < sched_now_ms(s);
}

static bool refusal_stale(struct sched *s, uint64_t key, void *v)
{
	(void)key;
	return (uint64_t)(uintptr_t)v < sched_now_ms(s);
}

static void unrefuse(struct sched *s, uint64_t key)
{
	idmap_del(&s->refused, key);
}

/* Forget pods that are gone and refusals that are old. */
void sched_evict_sweep(struct sched *s)
{
	sweep(s, &s->evicted, evicted_stale, forget);
	sweep(s, &s->refused, refusal_stale, unrefuse);
}

void sched_evicted_free(struct sched *s)
{
	const struct idmap_slot *e;

	IDMAP_FOREACH(&s->evicted, i, e)
		free(e->value);
	idmap_free(&s->evicted);
	idmap_free(&s->refused);
}
