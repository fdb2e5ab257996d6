/*
 * Bindings (sched.h).
 *
 * Every member of an admitted gang is bound, each by its own POST to
 * pods/binding; the placement is "assumed" from the end of the cycle
 * that decided it until the watch shows the pod bound, so the next cycle
 * never hands the same room out twice, and never binds a pod twice. The
 * binds go out in the cycle's order, as many per loop iteration as a
 * time budget allows (run.c's on_drain()).
 *
 * What can go wrong, and what happens:
 *   - the API server cannot be reached, or answers 5xx or 429 after the
 *     engine's own retries: the placement stays assumed and the bind is
 *     sent again at the next cycle, for as long as the pod exists and is
 *     unbound. The gang keeps its room; when the server is back, it is
 *     bound whole. This is what makes killing the API server mid-cycle
 *     safe.
 *   - 409: the pod is bound already (our earlier attempt succeeded but
 *     its answer was lost) or was replaced (uid precondition). Treated as
 *     sent; the watch tells which, and an assumption the cache does not
 *     confirm within 30 s is dropped.
 *   - a member given vGPU shares is bound in two writes (shares.c): its
 *     annotations, then the binding; the first failing fails the bind.
 *   - 404 or another 4xx: this member can never be bound here. The rest
 *     of the gang's binds not yet sent are dropped and their room
 *     released, those in flight as soon as they answer (the engine
 *     still holds them); members already bound stay bound (Kubernetes has no
 *     unbind), which the PodGroup's status and a Warning Event show, and
 *     the gang goes back to its queue: the next cycle places the members
 *     it still needs to reach minMember.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kubeapi/writes.h"
#include "scheduler/sched.h"

#define SCHED_UNCONFIRMED_MS 30000

/* Forget an assumption. A cycle in flight may be reading its vGPU
 * shares (through its own map of them): then it is freed after. */
static void drop(struct sched *s, uint64_t key)
{
	struct sched_assumed *e = idmap_del(&s->assumed, key);

	if (e && s->cyc.running) {
		e->next_dead = s->cyc.dead;
		s->cyc.dead = e;
		return;
	}
	if (e)
		sched_shares_free(s, e);
	free(e);
}

void sched_assumed_bury(struct sched *s)
{
	while (s->cyc.dead) {
		struct sched_assumed *e = s->cyc.dead;

		s->cyc.dead = e->next_dead;
		sched_shares_free(s, e);
		free(e);
	}
}

static const struct kubeapi_pod *cached_pod(struct sched *s, uint64_t key)
{
	return idmap_get(kubeapi_cache_store(s->cache, KUBEAPI_STORE_PODS), key);
}

/* A member of gang `gang` cannot be bound: let go of the rest. */
static void release_gang(struct sched *s, uint64_t gang, const struct kubeapi_pod *pod,
                         const char *why)
{
	const struct idmap *m = &s->assumed;
	uint64_t *keys = calloc(m->n + 1, sizeof(*keys));
	const struct idmap_slot *sl;
	size_t n = 0, bound = 0;

	s->n.gangs_released++;
	for (size_t i = 0; keys && (sl = idmap_next(m, &i));) {
		struct sched_assumed *e = sl->value;

		if (e->gang != gang)
			continue;
		if (e->state == SCHED_BIND_DONE)
			bound++;
		else
			keys[n++] = sl->key;
	}
	for (size_t k = 0; k < n; k++) {
		struct sched_assumed *e = idmap_get(m, keys[k]);

		if (e->state == SCHED_BIND_INFLIGHT)
			e->released = 1; /* its callback drops it: e is its data */
		else
			drop(s, keys[k]);
	}
	free(keys);
	sched_log(s,
	          "gang %s/%s: pod %s could not be bound (%s); released %zu pending binds, %zu "
	          "members already bound stay bound; the gang is requeued",
	          pod ? sched_str(s, pod->ns) : "?", pod ? sched_str(s, pod->group) : "?",
	          pod ? sched_str(s, pod->name) : "?", why, n, bound);
	if (pod)
		sched_event(s, pod, "Warning", "FailedBinding", "Binding", why);
	sched_kick(s);
}

static int send_bind(struct sched *s, struct sched_assumed *e, const struct kubeapi_pod *pod);

/* The answer to a write of e's (ok409: a 409 counts as done): 1 it went
 * through, 0 handled here (a retry, a cancel, a failure that released
 * the gang). */
static int answered(struct sched_assumed *e, const struct kubeapi_response *r, const char *what,
                    bool ok409)
{
	struct sched *s = e->s;
	const struct kubeapi_pod *pod;
	char why[160];
	uint64_t gang = e->gang;

	if (s->stopping)
		return 0; /* sched_assumed_free() frees it; the cache may be gone */
	if (e->released) {
		drop(s, e->key); /* its gang let go while this was on its way */
		return 0;
	}
	pod = cached_pod(s, e->key);
	if (r->err == -ECANCELED) {
		drop(s, e->key);
		return 0;
	}
	if (r->err || r->status >= 500 || r->status == 429) {
		e->state = SCHED_BIND_RETRY;
		s->n.binds_retried++;
		return 0;
	}
	if ((r->status >= 200 && r->status < 300) || (r->status == 409 && ok409))
		return 1;
	s->n.binds_failed++;
	snprintf(why, sizeof(why), "%s to %s failed: HTTP %ld", what, sched_str(s, e->node),
	         r->status);
	drop(s, e->key);
	release_gang(s, gang, pod, why);
	return 0;
}

/* The vGPU annotations are written: now the binding. */
static void on_annotated(void *data, const struct kubeapi_response *r)
{
	struct sched_assumed *e = data;
	const struct kubeapi_pod *pod;

	if (!answered(e, r, "writing the vGPU shares for binding", false))
		return;
	e->annotated = 1;
	pod = cached_pod(e->s, e->key);
	if (pod && !pod->node && !pod->deleting)
		send_bind(e->s, e, pod);
	else
		e->state = SCHED_BIND_RETRY; /* the sweep drops it */
}

static void on_bound(void *data, const struct kubeapi_response *r)
{
	struct sched_assumed *e = data;
	struct sched *s = e->s;
	const struct kubeapi_pod *pod;
	char why[160];

	if (!answered(e, r, "binding", true))
		return;
	/* 409: bound already (our earlier attempt, its answer lost) or
	 * replaced; the watch tells which. It gets SCHED_UNCONFIRMED_MS from
	 * now, not from when the bind was queued, to show the pod bound. */
	pod = cached_pod(s, e->key);
	e->state = SCHED_BIND_DONE;
	e->since_ms = sched_now_ms(s);
	s->n.binds_ok += r->status != 409;
	if (r->status != 409 && pod) {
		snprintf(why, sizeof(why), "Successfully assigned %s/%s to %s",
		         sched_str(s, pod->ns), sched_str(s, pod->name), sched_str(s, e->node));
		sched_event(s, pod, "Normal", "Scheduled", "Binding", why);
	}
}

static int send_bind(struct sched *s, struct sched_assumed *e, const struct kubeapi_pod *pod)
{
	struct kubeapi_target t;
	char uid[40];
	int rc;

	sched_target(s, pod, &t, uid);
	e->state = SCHED_BIND_INFLIGHT;
	if (e->vgpu && !e->annotated) /* the binding follows in on_annotated() */
		rc = sched_shares_write(s, e, pod, on_annotated);
	else if ((rc = kubeapi_bind(s->http, &t, sched_str(s, e->node), on_bound, e)) == 0)
		s->n.binds_sent++;
	if (rc < 0)
		e->state = SCHED_BIND_RETRY;
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

/* The cycle's binds, and again the ones the server missed, assumed at
 * once (the next cycle must not hand their room out again) and queued.
 * Sending them here would stall the loop: 8,000 binds of a backlog, each
 * built, logged and submitted, kept it busy for 188 ms (bench-e2e, 29
 * Nov); sched_bind_send() spreads them over the loop's iterations. */
void sched_bind_all(struct sched *s)
{
	const struct idmap *m = &s->assumed;
	const struct idmap_slot *sl;

	IDMAP_FOREACH(m, i, sl) {
		struct sched_assumed *e = sl->value;

		if (e->state == SCHED_BIND_RETRY && enqueue(s, sl->key, NO_PLAN) == 0)
			e->state = SCHED_BIND_QUEUED;
	}
	for (size_t k = 0; k < s->plan.nbinds; k++) {
		const struct plan_bind *b = &s->plan.binds[k];
		uint64_t key = kubeapi_pod_key(b->pod);
		struct sched_assumed *e;

		if (idmap_get(m, key))
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

/* One queued bind out, or let go: its gang released it meanwhile (or a
 * 4xx of another member did), or the pod went or was bound elsewhere. */
static void send_queued(struct sched *s, const struct queued *q, bool send)
{
	struct sched_assumed *e = idmap_get(&s->assumed, q->key);
	const struct kubeapi_pod *pod;

	if (!e || e->state != SCHED_BIND_QUEUED)
		return;
	if (!send) {
		e->state = SCHED_BIND_RETRY;
		return;
	}
	pod = cached_pod(s, q->key);
	if (!pod || pod->node || pod->deleting) {
		drop(s, q->key);
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
	uint64_t now = sched_now_ms(s), *keys = calloc(m->n + 1, sizeof(*keys));
	const struct idmap_slot *sl;
	size_t n = 0, unseen = 0;

	if (!keys)
		return;
	IDMAP_FOREACH(m, i, sl) {
		struct sched_assumed *e = sl->value;
		const struct kubeapi_pod *pod;

		if (e->state == SCHED_BIND_INFLIGHT)
			continue;
		pod = cached_pod(s, sl->key);
		if (!pod || pod->node || pod->deleting ||
		    (e->state == SCHED_BIND_DONE && now - e->since_ms > SCHED_UNCONFIRMED_MS))
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
	IDMAP_FOREACH(&s->assumed, i, sl) {
		sched_shares_free(s, sl->value);
		free(sl->value);
	}
	idmap_free(&s->assumed);
}
