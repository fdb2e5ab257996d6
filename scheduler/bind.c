/*
 * Bindings (sched.h).
 *
 * Every member of an admitted gang is bound, each by its own POST to
 * pods/binding; the placement is "assumed" from the end of the cycle
 * that decided it until the watch shows the pod bound, so the next cycle
 * never hands the same room out twice, and never binds a pod twice. The
 * binds go out in the cycle's order, gang by gang, as many per loop
 * iteration as a time budget allows (run.c's on_drain()).
 *
 * An assumption is the decision for one pod: the uid it was made for.
 * Names are not identities (a pod deleted and created again under its
 * name, or a new pod given a freed name's id, base/intern.c), so every
 * step checks the cached pod's uid against the assumption's, and the
 * bind carries it as the server's precondition. An assumption is
 * forgotten only when the watch shows what became of its pod: bound
 * (anywhere), being deleted, gone, replaced; or when its node is gone
 * before the server took it. Never on a timer: a watch that lags or a
 * relist that takes minutes keeps the room assumed, since the room is in
 * use on the server.
 *
 * What an answer means (kubeapi_bind_answer()):
 *   - 201, or a 409 saying the pod is bound to this very node (an earlier
 *     attempt whose answer was lost): done, until the watch shows it.
 *   - anything that says nothing about the pod itself (no answer, 5xx,
 *     429 past the engine's own retries, 401 and 403 while a token
 *     expires or RBAC is mended, an admission webhook's refusal): the
 *     room stays assumed and the bind is sent again, with backoff from a
 *     second to half a minute, a log line and a metric. The gang keeps
 *     its room, so it is never split by an answer that will pass.
 *   - 404, a uid conflict, or bound to another node: never for this pod.
 *     It waits like a retry, for the watch to show what happened (the
 *     sweep then drops it); if the watch shows the pod still there,
 *     unbound and the same, the server's answer was wrong and the bind
 *     goes again. The rest of its gang goes on: members bound stay bound
 *     (Kubernetes has no unbind), and the next cycle places the gang's
 *     newcomers with them.
 *   - a member given vGPU shares is bound in two writes (shares.c): its
 *     annotations, against the resourceVersion the bind is sent at, then
 *     the binding. A 409 on the first says the pod changed since: it is
 *     sent again once the watch has shown the newer version, so that a
 *     pod bound meanwhile (by a leader before us, whose writes the watch
 *     had not shown) is dropped, never given other devices.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "kubeapi/writes.h"
#include "scheduler/sched.h"

/* An assumption holds its pod's namespace and name ids and its node's:
 * they stay valid for its sends and log lines after the pod or the node
 * is gone, and no other pod is given its key meanwhile (base/intern.c
 * reuses a freed id). Taken after a cycle, on the loop, like the vGPU
 * UUIDs' (shares.c); let go where it is freed. At shutdown the cache, and
 * the strings with it, is gone first. */
static void hold_ids(struct sched *s, const struct sched_assumed *e)
{
	struct intern *in = kubeapi_model_intern(kubeapi_cache_model(s->cache));

	intern_ref(in, (uint32_t)(e->key >> 32));
	intern_ref(in, (uint32_t)e->key);
	intern_ref(in, e->node);
}

static void assumed_free(struct sched *s, struct sched_assumed *e)
{
	struct intern *in = s->cache ? kubeapi_model_intern(kubeapi_cache_model(s->cache)) : NULL;

	if (in) {
		intern_unref(in, (uint32_t)(e->key >> 32));
		intern_unref(in, (uint32_t)e->key);
		intern_unref(in, e->node);
	}
	sched_shares_free(s, e);
	free(e);
}

/* Forget an assumption. A cycle in flight may be reading its vGPU
 * shares (through its own map of them) and the strings: then it is freed
 * after. */
static void drop(struct sched *s, uint64_t key)
{
	struct sched_assumed *e = idmap_del(&s->assumed, key);

	if (e && s->cyc.running) {
		e->next_dead = s->cyc.dead;
		s->cyc.dead = e;
		return;
	}
	if (e)
		assumed_free(s, e);
}

void sched_assumed_bury(struct sched *s)
{
	while (s->cyc.dead) {
		struct sched_assumed *e = s->cyc.dead;

		s->cyc.dead = e->next_dead;
		assumed_free(s, e);
	}
}

/* The pod e was decided for, as the cache has it now; NULL when the pod
 * under its key is gone or is another (a different uid). */
static const struct kubeapi_pod *own_pod(struct sched *s, const struct sched_assumed *e)
{
	const struct kubeapi_pod *pod =
	    idmap_get(kubeapi_cache_store(s->cache, KUBEAPI_STORE_PODS), e->key);

	return pod && memcmp(pod->uid, e->uid, sizeof(e->uid)) == 0 ? pod : NULL;
}

static bool node_exists(struct sched *s, uint32_t node)
{
	return idmap_get(kubeapi_cache_store(s->cache, KUBEAPI_STORE_NODES),
	                 kubeapi_cache_key(0, node)) != NULL;
}

/* The names of e's pod for a log line: its key's, which e holds
 * (hold_ids()). */
static const char *key_ns(struct sched *s, const struct sched_assumed *e)
{
	return sched_str(s, (uint32_t)(e->key >> 32));
}

static const char *key_name(struct sched *s, const struct sched_assumed *e)
{
	return sched_str(s, (uint32_t)e->key);
}

/* When the binds of gang `gang` waiting to retry go next: one time for all
 * its members, drawn by the first to fail since the last went (drawn).
 * Each member drawing its own would have a gang partly bound for the
 * spread of its members' draws, up to the cap (30 s), where one time
 * makes it its own writes' (issue 55, item 10); and a big gang would
 * retry at the least of its draws, far more often than one pod. Out of
 * memory: drawn. */
static uint64_t gang_retry_ms(struct sched *s, uint64_t gang, uint64_t drawn)
{
	void **at = idmap_ref(&s->retry_at, gang);

	if (!at)
		return drawn;
	if ((uint64_t)(uintptr_t)*at <= sched_now_ms(s))
		*at = (void *)(uintptr_t)drawn;
	return (uint64_t)(uintptr_t)*at;
}

/* An answer that keeps e's room: sent again after a backoff. Logged at
 * the first such answer and then at attempts 2, 4, 8...: a token that
 * expires fails every bind, and one line per bind and retry would bury
 * the log. */
static void retry_later(struct sched *s, struct sched_assumed *e, const char *what,
                        const struct kubeapi_response *r, enum kubeapi_answer a)
{
	uint64_t rnd = uv_hrtime() ^ e->key * 0x9e3779b97f4a7c15ull, ms;

	if (e->attempts < UINT8_MAX)
		e->attempts++;
	ms = kubeapi_http_backoff_ms(e->attempts, SCHED_RETRY_BASE_MS, SCHED_RETRY_CAP_MS, rnd);
	e->state = SCHED_BIND_RETRY;
	e->retry_ms = gang_retry_ms(s, e->gang, sched_now_ms(s) + ms);
	ms = e->retry_ms - sched_now_ms(s);
	s->n.binds_retried++;
	if (a == KUBEAPI_ANSWER_GONE)
		s->n.binds_failed++;
	if ((e->attempts & (e->attempts - 1)) == 0)
		sched_logl(s, SCHED_WARN,
		           "%s of pod %s/%s to %s: %s (HTTP %ld%s%s); its room stays held, sent "
		           "again in %" PRIu64 " ms unless the watch shows the pod %s (attempt %u)",
		           what, key_ns(s, e), key_name(s, e), sched_str(s, e->node),
		           kubeapi_answer_name(a), r->status, r->err ? ", " : "",
		           r->err ? strerror(-r->err) : "", ms,
		           a == KUBEAPI_ANSWER_GONE ? "gone or bound" : "bound, gone or replaced",
		           e->attempts);
}

/* The engine cancelled e's write: a stop or a fence. Nothing is sent
 * again by this process; the assumption stays, as the room may be taken. */
static bool cancelled(struct sched *s, struct sched_assumed *e, const struct kubeapi_response *r)
{
	if (s->stopping)
		return true; /* sched_assumed_free() frees it; the cache may be gone */
	if (r->err != -ECANCELED)
		return false;
	e->state = SCHED_BIND_RETRY;
	e->retry_ms = sched_now_ms(s);
	return true;
}

static int send_bind(struct sched *s, struct sched_assumed *e, const struct kubeapi_pod *pod);

/* The vGPU annotations are answered: now the binding, or again later. */
static void on_annotated(void *data, const struct kubeapi_response *r)
{
	struct sched_assumed *e = data;
	struct sched *s = e->s;
	const struct kubeapi_pod *pod;
	enum kubeapi_answer a;

	if (cancelled(s, e, r))
		return;
	a = kubeapi_pod_answer(r);
	if (a == KUBEAPI_ANSWER_CHANGED)
		e->stale_rv = e->sent_rv; /* the watch's next version first */
	if (a != KUBEAPI_ANSWER_DONE) {
		retry_later(s, e, "writing the vGPU shares", r, a);
		return;
	}
	e->annotated = 1;
	pod = own_pod(s, e);
	if (pod && !pod->node && !pod->deleting)
		send_bind(s, e, pod);
	else
		e->state = SCHED_BIND_RETRY; /* the sweep drops it */
}

static void on_bound(void *data, const struct kubeapi_response *r)
{
	struct sched_assumed *e = data;
	struct sched *s = e->s;
	const struct kubeapi_pod *pod;
	enum kubeapi_answer a;
	char why[160];

	if (cancelled(s, e, r))
		return;
	a = kubeapi_bind_answer(r, sched_str(s, e->node));
	if (a != KUBEAPI_ANSWER_DONE && a != KUBEAPI_ANSWER_BOUND) {
		retry_later(s, e, "binding", r, a);
		return;
	}
	e->state = SCHED_BIND_DONE;
	e->attempts = 0;
	if (a == KUBEAPI_ANSWER_BOUND)
		return; /* an earlier attempt's: its Event went, or its answer was lost */
	s->n.binds_ok++;
	if ((pod = own_pod(s, e))) {
		snprintf(why, sizeof(why), "Successfully assigned %s/%s to %s",
		         sched_str(s, pod->ns), sched_str(s, pod->name), sched_str(s, e->node));
		sched_event(s, pod, "Normal", "Scheduled", "Binding", why);
	}
}

static int send_bind(struct sched *s, struct sched_assumed *e, const struct kubeapi_pod *pod)
{
	struct kubeapi_target t;
	char uid[40], rv[24];
	int rc;

	sched_target(s, pod, &t, uid); /* pod is own_pod(): its uid is e's */
	e->state = SCHED_BIND_INFLIGHT;
	if (e->vgpu && !e->annotated) { /* the binding follows in on_annotated() */
		/* kube-apiserver's resourceVersions are numbers (0: none read,
		 * sent without the precondition). */
		snprintf(rv, sizeof(rv), "%" PRIu64, pod->rv);
		t.resource_version = pod->rv ? rv : NULL;
		e->sent_rv = pod->rv;
		rc = sched_shares_write(s, e, &t, on_annotated);
	} else if ((rc = kubeapi_bind(s->http, &t, sched_str(s, e->node), on_bound, e)) == 0) {
		s->n.binds_sent++;
	}
	if (rc < 0) {
		e->state = SCHED_BIND_RETRY;
		e->retry_ms = sched_now_ms(s) + SCHED_RETRY_BASE_MS;
	}
	return rc;
}

/* A bind waiting to be sent: the pod's key, and the index of its
 * plan_bind in the plan that decided it (NO_PLAN: a retry). */
struct queued {
	uint64_t key;
	uint32_t bind;
};

#define NO_PLAN UINT32_MAX

static int enqueue(struct sched *s, uint64_t key, uint32_t bind)
{
	struct queued q = {key, bind};

	return buf_append(&s->bindq, &q, sizeof(q));
}

/* Retries due now go first, a gang's together: every member of a gang
 * waiting to retry goes when one is due (its time may have been set by
 * a fence, a refused send or a standby's cycle rather than by the
 * gang's), so that the window in which a gang is partly bound is its
 * own writes', not the queue's. O(r log r) for r binds waiting to retry. */
struct due {
	uint64_t gang, key;
	bool due;
};

static int by_gang(const void *a, const void *b)
{
	const struct due *x = a, *y = b;

	return x->gang != y->gang ? (x->gang < y->gang ? -1 : 1)
	                          : (x->key < y->key ? -1 : x->key > y->key);
}

/* Forget the gang retry times that have passed (gang_retry_ms()). */
static void forget_retry_times(struct sched *s, uint64_t now)
{
	const struct idmap_slot *sl;
	uint64_t *keys = calloc(s->retry_at.n + 1, sizeof(*keys));
	size_t n = 0;

	if (!keys)
		return; /* kept: a time passed only ever gives way to a new one */
	IDMAP_FOREACH(&s->retry_at, i, sl)
		if ((uint64_t)(uintptr_t)sl->value <= now)
			keys[n++] = sl->key;
	for (size_t k = 0; k < n; k++)
		idmap_del(&s->retry_at, keys[k]);
	free(keys);
}

static void enqueue_retries(struct sched *s)
{
	const struct idmap *m = &s->assumed;
	const struct idmap_slot *sl;
	uint64_t now = sched_now_ms(s);
	struct due *d = calloc(m->n + 1, sizeof(*d));
	size_t n = 0;

	if (!d)
		return; /* they stay assumed: the next cycle tries again */
	IDMAP_FOREACH(m, i, sl) {
		const struct sched_assumed *e = sl->value;

		if (e->state == SCHED_BIND_RETRY)
			d[n++] = (struct due){e->gang, sl->key, e->retry_ms <= now};
	}
	qsort(d, n, sizeof(*d), by_gang);
	for (size_t k = 0, end; k < n; k = end) {
		bool go = false;

		for (end = k; end < n && d[end].gang == d[k].gang; end++)
			go |= d[end].due;
		for (size_t j = k; go && j < end; j++) {
			struct sched_assumed *e = idmap_get(m, d[j].key);

			if (enqueue(s, d[j].key, NO_PLAN) == 0)
				e->state = SCHED_BIND_QUEUED;
		}
	}
	free(d);
	forget_retry_times(s, now);
}

/* The cycle's binds, and again the ones whose retry is due, assumed at
 * once (the next cycle must not hand their room out again) and queued.
 * Sending them here would stall the loop: 8,000 binds of a backlog, each
 * built, logged and submitted, kept it busy for 188 ms (bench-e2e, 29
 * Nov); sched_bind_send() spreads them over the loop's iterations. */
void sched_bind_all(struct sched *s)
{
	enqueue_retries(s);
	for (size_t k = 0; k < s->plan.nbinds; k++) {
		const struct plan_bind *b = &s->plan.binds[k];
		uint64_t key = kubeapi_pod_key(b->pod);
		struct sched_assumed *e;

		if (idmap_get(&s->assumed, key))
			continue; /* never bind a pod twice */
		e = calloc(1, sizeof(*e));
		if (!e || idmap_put(&s->assumed, key, e) < 0) {
			free(e);
			continue; /* not assumed: the next cycle places it again */
		}
		*e = (struct sched_assumed){.s = s,
		                            .key = key,
		                            .node = b->node,
		                            .gang = s->plan.gangs[b->gang].key,
		                            .since_ms = sched_now_ms(s),
		                            .state = SCHED_BIND_QUEUED};
		memcpy(e->uid, b->pod->uid, sizeof(e->uid));
		hold_ids(s, e);
		if (sched_shares_keep(s, e, b) < 0 || enqueue(s, key, (uint32_t)k) < 0)
			drop(s, key); /* not assumed: the next cycle places it again */
	}
}

/* Every bind decided, traceable by pod and gang, as it goes out. */
static void log_bind(struct sched *s, const struct plan_bind *b)
{
	const struct plan_gang *g = &s->plan.gangs[b->gang];
	const struct queue_tree *t = queue_set_tree_c(s->qs);

	sched_log_gang(s, sched_str(s, g->ns), sched_str(s, g->name), sched_str(s, b->pod->name),
	               "gang %s/%s (queue %s): binding pod %s to %s", sched_str(s, g->ns),
	               sched_str(s, g->name), g->queue >= 0 ? queue_tree_name(t, g->queue) : "-",
	               sched_str(s, b->pod->name), sched_str(s, b->node));
}

/* Whether the watch shows what became of e's pod, or its node is gone
 * before the server took it: then e is to be forgotten. */
static bool settled(struct sched *s, const struct sched_assumed *e, const struct kubeapi_pod *pod)
{
	return !pod || pod->node || pod->deleting ||
	       (e->state != SCHED_BIND_DONE && !node_exists(s, e->node));
}

/* One queued bind out, or let go: the pod went, was replaced or was
 * bound elsewhere, or its node went. */
static void send_queued(struct sched *s, const struct queued *q, bool send)
{
	struct sched_assumed *e = idmap_get(&s->assumed, q->key);
	const struct kubeapi_pod *pod;

	if (!e || e->state != SCHED_BIND_QUEUED)
		return;
	if (!send) {
		e->state = SCHED_BIND_RETRY;
		e->retry_ms = 0; /* at the next cycle of a leader */
		return;
	}
	pod = own_pod(s, e);
	if (settled(s, e, pod)) {
		drop(s, q->key);
		return;
	}
	if (e->vgpu && !e->annotated && e->stale_rv && pod->rv == e->stale_rv) {
		e->state = SCHED_BIND_RETRY; /* the watch has not shown the change yet */
		return;
	}
	if (q->bind != NO_PLAN)
		log_bind(s, &s->plan.binds[q->bind]);
	send_bind(s, e, pod);
}

bool sched_bind_send(struct sched *s, bool send, uint64_t budget_ns)
{
	const struct queued *q = (const struct queued *)s->bindq.p;
	size_t n = s->bindq.len / sizeof(*q);
	uint64_t t0 = uv_hrtime();

	while (s->bindq_head < n) {
		send_queued(s, &q[s->bindq_head++], send);
		if (uv_hrtime() - t0 >= budget_ns)
			break;
	}
	if (s->bindq_head < n)
		return false;
	buf_reset(&s->bindq);
	s->bindq_head = 0;
	return true;
}

/* Forget assumptions the cache has caught up with (or contradicts). */
void sched_assumed_sweep(struct sched *s)
{
	const struct idmap *m = &s->assumed;
	uint64_t *keys = calloc(m->n + 1, sizeof(*keys));
	const struct idmap_slot *sl;
	size_t n = 0, unseen = 0;

	if (!keys)
		return;
	IDMAP_FOREACH(m, i, sl) {
		struct sched_assumed *e = sl->value;

		if (e->state == SCHED_BIND_INFLIGHT)
			continue;
		if (settled(s, e, own_pod(s, e)))
			keys[n++] = sl->key;
		else
			unseen += e->state == SCHED_BIND_DONE;
	}
	for (size_t k = 0; k < n; k++)
		drop(s, keys[k]);
	free(keys);
	s->binds_unseen = unseen;
}

void sched_assumed_free(struct sched *s)
{
	const struct idmap_slot *sl;

	sched_assumed_bury(s);
	buf_free(&s->bindq);
	idmap_free(&s->retry_at);
	IDMAP_FOREACH(&s->assumed, i, sl)
		assumed_free(s, sl->value);
	idmap_free(&s->assumed);
}
