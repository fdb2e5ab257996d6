/*
 * Status written back, the way kube-scheduler and each PodGroup dialect's
 * own scheduler write it (sched.h), and kept converged with what the API
 * server holds:
 *   - a waiting pod: condition PodScheduled=False, reason Unschedulable,
 *     with the planner's message; and a FailedScheduling Event when its
 *     headline (before the first ';') changes in more than its numbers, so
 *     node counts that drift with the cluster ("3 node(s) were not ready"
 *     becoming "4") update the condition without a stream of Events;
 *   - a bound pod: a Scheduled Event (bind.c); the API server sets
 *     PodScheduled=True itself on binding;
 *   - a PodGroup: phase, counts and (Volcano) its condition, in its own
 *     dialect's terms (scheduler-plugins' PodGroup controller, Volcano's
 *     session and gang plugin).
 *
 * Each cycle the intended status is compared with the watch's copy of the
 * object, not with what Muster remembers sending, so a status that is
 * stale for any reason (a lost write, another writer, a restart) repairs
 * itself. A write goes out only when they differ and
 *   - no other write to that object is in flight (one at a time: the next
 *     one carries the newest intention, computed afresh);
 *   - the watch has shown the object at least as new as Muster's last
 *     write to it (else the comparison would be with Muster's own past);
 *   - it carries the resourceVersion it was computed from, so the server
 *     refuses it (409) if the object changed meanwhile: an old intention
 *     never lands over a newer state. A bind changes the pod, so a waiting
 *     message computed before it can never land after it, and none is sent
 *     for a pod bound or being bound.
 * Per object Muster keeps one word (the version the watch must pass, << 1
 * | in flight) until the watch has passed it: a write that succeeded
 * against version V produced a later one, so a copy newer than V shows it,
 * and no response needs parsing. At most
 * status_per_cycle writes start per cycle, so a large backlog of waiting
 * pods never crowds out bindings in the engine's write budget.
 *
 * The comparison with the server's copies runs on the planner's thread,
 * after the cycle, while the cache is held still (sched_status_todo): it
 * reads every waiting pod, millions at 100,000 nodes, and on the loop it
 * would stall watch reads and the lease. The loop's pass then costs what
 * differs, not what waits.
 *
 * A waiting message that differs from the last one Muster wrote on the
 * object only in its numbers or details (the same shape) is rewritten at
 * most every STATUS_DRIFT_S; a new shape goes at once.
 *
 * A FailedScheduling Event is owed from the moment its condition goes
 * out until the server has taken the Event: the shape is remembered as
 * announced only then, and one that could not go (the engine's
 * background queue full, a slow or failing Events endpoint) waits in
 * s->owed with its message and is sent again, a second apart at first,
 * while its pod waits. Shapes carry a tag of the pod's uid, so a pod
 * created again under a waiting pod's name is announced on its own.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubeapi/writes.h"
#include "scheduler/sched.h"

#define IN_FLIGHT 1u

/* How often a waiting message may be rewritten on one object while only
 * its numbers or details change. kube-scheduler rewrites a pod's
 * condition when it tries the pod again, at most every 10 s of backoff
 * once the pod keeps failing. Without a limit, gangs waiting among room
 * that frees and is retaken ("1 of 8 members fit", then 4, 0, 6...) had
 * every member rewritten each cycle: about 60 writes a pending pod in
 * bench-native's teardown, 30 times kube-scheduler's, which slowed the
 * API server's deletions 3 to 6 times. What it costs: a count in a
 * condition may lag the planner by up to this long (/debug/gangs and
 * `muster explain` say the current one). */
#define STATUS_DRIFT_S 10

struct write_op {
	struct sched *s;
	struct idmap *map;
	uint64_t key;
	uint64_t rv; /* the precondition sent; 0 for none */
};

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
	t->resource_version = NULL;
}

/* The write is done. One that succeeded against version V is waited for
 * until the watch shows a version past V; a failed one changed nothing
 * (a 409: the object changed, and the next cycle sees how). */
static void on_written(void *data, const struct kubeapi_response *r)
{
	struct write_op *op = data;
	bool ok = !r->err && r->status >= 200 && r->status < 300;

	if (op->s->stopping)
		goto out;
	if (ok && op->rv)
		idmap_put(op->map, op->key, (void *)(uintptr_t)((op->rv + 1) << 1));
	else
		idmap_del(op->map, op->key);
	if (!ok && r->status != 404 && r->status != 409) /* gone, or changed: no error */
		op->s->n.write_errors++;
out:
	free(op);
}

static void on_event(void *data, const struct kubeapi_response *r)
{
	struct sched *s = data;

	if (!s->stopping && (r->err || r->status >= 300) && r->status != 404)
		s->n.write_errors++;
}

int sched_event_cb(struct sched *s, const struct kubeapi_pod *pod, const char *type,
                   const char *reason, const char *action, const char *note,
                   kubeapi_http_done_cb cb, void *data)
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
	int rc;

	sched_target(s, pod, &t, uid);
	clock_gettime(CLOCK_REALTIME, &now);
	rc = kubeapi_event_create(s->http, &ev, now, cb, data);
	if (rc == 0)
		s->n.events++;
	else if (rc == -ENOBUFS) /* the server is behind; the pod's condition says it too */
		s->n.events_dropped++;
	return rc;
}

void sched_event(struct sched *s, const struct kubeapi_pod *pod, const char *type,
                 const char *reason, const char *action, const char *note)
{
	sched_event_cb(s, pod, type, reason, action, note, on_event, s);
}

/* May a write to the object at key, whose cached copy is at
 * resourceVersion rv, go out now? Forgets a last write the watch has
 * passed. */
static bool may_write(struct idmap *map, uint64_t key, uint64_t rv)
{
	uintptr_t v = (uintptr_t)idmap_get(map, key);

	if (v & IN_FLIGHT)
		return false;
	if (v && rv < (v >> 1))
		return false; /* the watch has not passed our last write yet */
	if (v)
		idmap_del(map, key);
	return true;
}

/* A write against version rv about to go out: in flight under key.
 * NULL: out of memory. */
static struct write_op *begin(struct sched *s, struct idmap *map, uint64_t key, uint64_t rv)
{
	struct write_op *op = malloc(sizeof(*op));

	if (!op)
		return NULL;
	*op = (struct write_op){s, map, key, rv};
	if (idmap_put(map, key, (void *)(uintptr_t)IN_FLIGHT) < 0) {
		free(op);
		return NULL;
	}
	return op;
}

/* The submit failed: nothing is in flight. */
static void abandon(struct write_op *op)
{
	idmap_del(op->map, op->key);
	free(op);
}

static void format_rv(uint64_t rv, char buf[24])
{
	snprintf(buf, 24, "%" PRIu64, rv);
}

/* A waiting message's shape (hash_shape()) in 32 bits, never 0. */
static uint32_t shape32(const char *msg)
{
	uint64_t h = hash_shape(msg);

	return (uint32_t)(h ^ h >> 32) | 1;
}

static uint64_t now_s(struct sched *s)
{
	return sched_now_ms(s) / 1000;
}

/* The last waiting message written on an object is kept in one word of
 * its map (shaped: pods, group_shaped: PodGroups): its shape in the high
 * half, then 16 bits of the object's uid (a pod created again under the
 * name is another), then when it was written (seconds of the loop's
 * clock, mod 2^16: only differences under STATUS_DRIFT_S are read). */

static uint16_t uid_tag(const uint8_t uid[16])
{
	uint16_t t = 0;

	for (int k = 0; k < 16; k += 2)
		t ^= (uint16_t)(uid[k] << 8 | uid[k + 1]);
	return t;
}

static uint64_t shape_word(struct sched *s, uint32_t shape, uint16_t tag)
{
	return (uint64_t)shape << 32 | (uint64_t)tag << 16 | (uint16_t)now_s(s);
}

/* Is `was` the same shape on the same object? */
static bool same_shape(uint64_t was, uint32_t shape, uint16_t tag)
{
	return was && (uint32_t)(was >> 32) == shape && (uint16_t)(was >> 16) == tag;
}

/* Would msg only drift from the message written at key less than
 * STATUS_DRIFT_S ago? */
static bool drift_too_soon(struct sched *s, const struct idmap *m, uint64_t key, uint16_t tag,
                           const char *msg)
{
	uint64_t was = (uintptr_t)idmap_get(m, key);

	return same_shape(was, shape32(msg), tag) &&
	       (uint16_t)((uint16_t)now_s(s) - (uint16_t)was) < STATUS_DRIFT_S;
}

/* A message of shape `shape` was just written (or announced) at key. Out
 * of memory, nothing is kept: it is written again at the next cycle. */
static void remember_shape(struct sched *s, struct idmap *m, uint64_t key, uint32_t shape,
                           uint16_t tag)
{
	idmap_put(m, key, (void *)(uintptr_t)shape_word(s, shape, tag));
}

/* ---- FailedScheduling Events owed --------------------------------------- */

/* At most this many owed Events are kept (about 300 bytes each: 20 MiB):
 * past it, a pod's Event is lost, as kube-scheduler's broadcaster drops
 * what its queue cannot take; its condition still says why it waits. */
#define OWED_MAX 65536
/* An owed Event whose POST failed is sent again this long after. */
#define OWED_RETRY_MS 1000

struct owed {
	uint64_t word;     /* the shape word it announces (shape_word()) */
	uint64_t retry_ms; /* not before */
	uint8_t inflight;
	char msg[]; /* the message, as the condition says it */
};

/* The Event at key came back: announced when the server took it. */
struct owed_op {
	struct sched *s;
	uint64_t key, word;
};

static void owed_free(struct sched *s, uint64_t key)
{
	free(idmap_del(&s->owed, key));
}

static void on_owed_event(void *data, const struct kubeapi_response *r)
{
	struct owed_op *op = data;
	struct sched *s = op->s;
	struct owed *o;

	if (s->stopping || !(o = idmap_get(&s->owed, op->key)) || o->word != op->word)
		goto out; /* gone, or a newer message owed meanwhile */
	o->inflight = 0;
	if (r->err == 0 && r->status >= 200 && r->status < 300) {
		idmap_put(&s->shaped, op->key, (void *)(uintptr_t)op->word);
		owed_free(s, op->key);
	} else {
		o->retry_ms = sched_now_ms(s) + OWED_RETRY_MS;
		if (r->err != -ECANCELED)
			s->n.write_errors++;
	}
out:
	free(op);
}

/* Send pod's owed Event o (its key). */
static void send_owed(struct sched *s, const struct kubeapi_pod *pod, uint64_t key, struct owed *o)
{
	struct owed_op *op = malloc(sizeof(*op));
	int rc;

	if (!op)
		return;
	*op = (struct owed_op){s, key, o->word};
	rc = sched_event_cb(s, pod, "Warning", "FailedScheduling", "Scheduling", o->msg,
	                    on_owed_event, op);
	if (rc < 0) {
		free(op);
		o->retry_ms = sched_now_ms(s) + OWED_RETRY_MS;
		return;
	}
	o->inflight = 1;
}

/* msg is owed at key (word: its shape word): kept, replacing an older
 * one, and sent. */
static void owe(struct sched *s, const struct kubeapi_pod *pod, uint64_t key, uint64_t word,
                const char *msg)
{
	size_t len = strlen(msg);
	struct owed *o;

	if (s->owed.n >= OWED_MAX && !idmap_get(&s->owed, key)) {
		s->n.events_dropped++;
		return;
	}
	if (!(o = malloc(sizeof(*o) + len + 1)))
		return;
	*o = (struct owed){.word = word};
	memcpy(o->msg, msg, len + 1);
	owed_free(s, key);
	if (idmap_put(&s->owed, key, o) < 0) {
		free(o);
		return;
	}
	send_owed(s, pod, key, o);
}

/* Owed Events due again whose pods still wait, each as it was owed;
 * those of pods bound, gone or replaced are let go. O(owed). */
static void resend_owed(struct sched *s)
{
	const struct idmap *pods = kubeapi_cache_store(s->cache, KUBEAPI_STORE_PODS);
	uint64_t now = sched_now_ms(s), *gone = calloc(s->owed.n + 1, sizeof(*gone));
	const struct idmap_slot *sl;
	size_t n = 0;

	if (!gone)
		return;
	IDMAP_FOREACH(&s->owed, i, sl) {
		struct owed *o = sl->value;
		const struct kubeapi_pod *pod = idmap_get(pods, sl->key);

		if (!pod || pod->node || pod->deleting ||
		    uid_tag(pod->uid) != (uint16_t)(o->word >> 16))
			gone[n++] = sl->key;
		else if (!o->inflight && o->retry_ms <= now &&
		         !kubeapi_http_background_full(s->http))
			send_owed(s, pod, sl->key, o);
	}
	for (size_t k = 0; k < n; k++)
		owed_free(s, gone[k]);
	free(gone);
}

void sched_owed_free(struct sched *s)
{
	const struct idmap_slot *sl;

	IDMAP_FOREACH(&s->owed, i, sl)
		free(sl->value);
	idmap_free(&s->owed);
}

/* A FailedScheduling Event and a log line when the headline changed. */
static void announce(struct sched *s, const struct kubeapi_pod *pod, uint64_t key, const char *msg)
{
	uint32_t shape = shape32(msg);
	uint16_t tag = uid_tag(pod->uid);
	const struct owed *o = idmap_get(&s->owed, key);

	if (same_shape((uintptr_t)idmap_get(&s->shaped, key), shape, tag)) {
		/* Announced: only the numbers drifted. STATUS_DRIFT_S runs from
		 * this write. */
		remember_shape(s, &s->shaped, key, shape, tag);
		return;
	}
	if (o && same_shape(o->word, shape, tag))
		return; /* owed already */
	owe(s, pod, key, shape_word(s, shape, tag), msg);
	sched_log_gang(s, sched_str(s, pod->ns), sched_str(s, pod->group ? pod->group : pod->name),
	               sched_str(s, pod->name), "pod %s/%s waits: %s", sched_str(s, pod->ns),
	               sched_str(s, pod->name), msg);
}

/* msg_hash: kubeapi_text_hash() of msg, computed once per gang. */
static void pod_condition(struct sched *s, const struct kubeapi_pod *pod, const char *msg,
                          uint32_t msg_hash, unsigned *budget)
{
	uint64_t key = kubeapi_pod_key(pod);
	struct kubeapi_target t;
	struct write_op *op;
	char uid[40], rv[24];

	if (pod->sched_cond == KUBEAPI_SCHED_COND_UNSCHEDULABLE &&
	    (pod->sched_msg == msg_hash ||
	     drift_too_soon(s, &s->shaped, key, uid_tag(pod->uid), msg)))
		return; /* the server has it, or as good as */
	/* Never for a pod bound or being bound. */
	if (pod->node || idmap_get(&s->assumed, key) || *budget == 0 ||
	    !may_write(&s->written, key, pod->rv) || !(op = begin(s, &s->written, key, pod->rv)))
		return;
	sched_target(s, pod, &t, uid);
	format_rv(pod->rv, rv);
	t.resource_version = pod->rv ? rv : NULL;
	(*budget)--;
	if (kubeapi_patch_pod_condition(s->http, &t, "PodScheduled", "False", "Unschedulable", msg,
	                                time(NULL), on_written, op) < 0) {
		abandon(op);
		return;
	}
	s->n.status_writes++;
	announce(s, pod, key, msg);
}

/* ---- PodGroups ---------------------------------------------------------- */

/* A PodGroup's status as Muster means it. cond_type NULL: no condition
 * (Volcano's and native PodGroups have them). phase NULL: none (native
 * PodGroups carry conditions only). cond_false: the condition's status
 * is False (Volcano's are always True). */
struct pg_intent {
	const char *phase;
	int32_t running, succeeded, failed;
	const char *cond_type, *reason, *message;
	bool cond_false;
};

/* Volcano's phase (its session's getPodGroupPhase): Running once minMember
 * members are scheduled (bound, or finished), Completed when all those
 * have finished; before that Inqueue once enqueued, else Pending. Unlike
 * Volcano, a PodGroup that has run keeps its phase while members come and
 * go (a pod replaced, a job's pods deleted one by one): it is not sent
 * back through enqueueing. */
static const char *volcano_phase(struct sched *s, const struct plan_gang *g)
{
	uint32_t scheduled = g->bound + g->nbind + g->succeeded + g->failed;

	if (scheduled > 0 && scheduled >= g->min_member)
		return scheduled == g->succeeded + g->failed ? "Completed" : "Running";
	if (g->ran)
		return sched_str(s, g->group->status.phase);
	return g->enqueued ? "Inqueue" : "Pending";
}

/* scheduler-plugins' phase (its PodGroup controller), from the pods. */
static const char *sp_phase(const struct plan_gang *g)
{
	uint32_t pods = g->bound + g->npending + g->succeeded + g->failed, min = g->min_member;

	if (pods < min)
		return "Pending";
	if (g->succeeded >= min)
		return "Finished";
	if (g->failed && g->failed + g->running + g->succeeded >= min)
		return "Failed";
	if (g->running + g->succeeded >= min)
		return "Running";
	return "Scheduling";
}

/* Volcano's reasons: NotEnoughPodsOfTask, NotEnoughTasks (too few pods),
 * NotEnoughResources (everything else: room, quota, minResources). */
static const char *volcano_reason(const struct plan_gang *g)
{
	if (g->block.why == PLAN_WHY_MEMBERS)
		return g->block.task ? "NotEnoughPodsOfTask" : "NotEnoughTasks";
	return "NotEnoughResources";
}

/* A native PodGroup's PodGroupInitiallyScheduled, as kube-scheduler
 * writes it: False with reason Unschedulable and the gang's message while
 * it waits, True with reason Scheduled once minCount members are bound;
 * never back to False once True (members that come later do not revert
 * it). No condition before the first cycle that says anything. */
static void native_intent(const struct plan_gang *g, bool waits, struct pg_intent *in)
{
	const struct kubeapi_pg_status *st = &g->group->status;

	*in = (struct pg_intent){0};
	if (st->ncond && st->cond_true)
		return;
	in->cond_type = KUBEAPI_PG_SCHEDULED;
	if (g->bound + g->nbind + g->succeeded + g->failed >= g->min_member) {
		in->reason = "Scheduled";
		in->message = ""; /* kube-scheduler's: its status says nothing more */
	} else if (waits) {
		in->reason = "Unschedulable";
		in->message = g->message;
		in->cond_false = true;
	} else {
		in->cond_type = NULL;
	}
}

static void intent(struct sched *s, const struct plan_gang *g, struct pg_intent *in)
{
	bool volcano = g->group->dialect == KUBEAPI_PG_VOLCANO;
	bool waits = g->message && g->state != PLAN_ADMITTED && g->state != PLAN_RUNNING;

	if (g->group->dialect == KUBEAPI_PG_NATIVE) {
		native_intent(g, waits, in);
		return;
	}
	*in = (struct pg_intent){.phase = volcano ? volcano_phase(s, g) : sp_phase(g),
	                         .running = (int32_t)g->running,
	                         .succeeded = (int32_t)g->succeeded,
	                         .failed = (int32_t)g->failed};
	if (!volcano)
		return;
	if (waits) {
		in->cond_type = "Unschedulable";
		in->reason = volcano_reason(g);
		in->message = g->message;
	} else if (g->bound + g->nbind + g->succeeded + g->failed >= g->min_member) {
		in->cond_type = "Scheduled";
		in->reason = "tasks in gang are ready to be scheduled";
	}
}

static bool same_str(struct sched *s, uint32_t id, const char *want)
{
	return strcmp(sched_str(s, id), want ? want : "") == 0;
}

/* Does the server's copy say what in says, its condition's message
 * aside? A native PodGroup's copy is its one condition
 * (native_condition() in kubeapi). */
static bool matches_but_message(struct sched *s, const struct kubeapi_pg_status *st,
                                const struct pg_intent *in)
{
	if (in->phase && (!same_str(s, st->phase, in->phase) || st->running != in->running ||
	                  st->succeeded != in->succeeded || st->failed != in->failed))
		return false;
	if (!in->cond_type)
		return true;
	return st->ncond == 1 && st->cond_true == !in->cond_false &&
	       same_str(s, st->cond_type, in->cond_type) &&
	       same_str(s, st->cond_reason, in->reason);
}

static bool same_message(const struct kubeapi_pg_status *st, const struct pg_intent *in)
{
	return !in->cond_type ||
	       st->cond_msg ==
	           (in->message ? kubeapi_text_hash(in->message, strlen(in->message)) : 0);
}

/* Does the server's copy say what in says, or as good as: all but a
 * waiting message that only drifted from the one written there less
 * than STATUS_DRIFT_S ago? */
static bool matches(struct sched *s, uint64_t key, uint16_t tag, const struct kubeapi_pg_status *st,
                    const struct pg_intent *in)
{
	if (!matches_but_message(s, st, in))
		return false;
	if (same_message(st, in))
		return true;
	return in->message && drift_too_soon(s, &s->group_shaped, key, tag, in->message);
}

/* The condition, keeping its transition time and id while its type holds
 * (a transition is a change of type, not of message). */
static void add_condition(struct sched *s, cJSON *st, const struct kubeapi_pg_status *old,
                          const struct pg_intent *in, bool native)
{
	cJSON *list = cJSON_AddArrayToObject(st, "conditions"), *c = cJSON_CreateObject();
	struct timespec ts = {0};
	char when[32], tid[160];

	if (!list || !c) {
		cJSON_Delete(c);
		return;
	}
	if (old->ncond == 1 && old->cond_true == !in->cond_false &&
	    same_str(s, old->cond_type, in->cond_type)) {
		ts.tv_sec = old->cond_time_s;
		snprintf(tid, sizeof(tid), "%s", sched_str(s, old->transition_id));
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(tid, sizeof(tid), "%s-%llu", s->instance, (unsigned long long)s->n.cycles);
	}
	ts.tv_nsec = 0;
	kubeapi_format_microtime(ts, when);
	cJSON_AddStringToObject(c, "type", in->cond_type);
	cJSON_AddStringToObject(c, "status", in->cond_false ? "False" : "True");
	if (!native) /* metav1.Condition has no transitionID */
		cJSON_AddStringToObject(c, "transitionID", tid);
	cJSON_AddStringToObject(c, "lastTransitionTime", when);
	cJSON_AddStringToObject(c, "reason", in->reason);
	/* A native condition always says its message, "" too: the strategic
	 * merge keeps a field left out, so True would keep False's reason. */
	if (in->message || native)
		cJSON_AddStringToObject(c, "message", in->message ? in->message : "");
	cJSON_AddItemToArray(list, c);
}

static char *group_status_json(struct sched *s, const struct kubeapi_podgroup *pg,
                               const struct pg_intent *in)
{
	cJSON *st = cJSON_CreateObject();
	char *out;

	if (!st)
		return NULL;
	if (in->phase) {
		cJSON_AddStringToObject(st, "phase", in->phase);
		cJSON_AddNumberToObject(st, "running", in->running);
		cJSON_AddNumberToObject(st, "succeeded", in->succeeded);
		cJSON_AddNumberToObject(st, "failed", in->failed);
	}
	if (in->cond_type)
		add_condition(s, st, &pg->status, in, pg->dialect == KUBEAPI_PG_NATIVE);
	out = cJSON_PrintUnformatted(st);
	cJSON_Delete(st);
	return out;
}

static void group_status(struct sched *s, const struct plan_gang *g, unsigned *budget)
{
	const struct kubeapi_podgroup *pg = g->group;
	struct kubeapi_target t = {.ns = sched_str(s, g->ns), .name = sched_str(s, g->name)};
	struct pg_intent in;
	struct write_op *op;
	char *json, rv[24];

	intent(s, g, &in);
	if (matches(s, g->key, uid_tag(pg->uid), &pg->status, &in) || *budget == 0 ||
	    !may_write(&s->groups, g->key, pg->rv))
		return;
	if (!(json = group_status_json(s, pg, &in)) ||
	    !(op = begin(s, &s->groups, g->key, pg->rv))) {
		cJSON_free(json);
		return;
	}
	format_rv(pg->rv, rv);
	t.resource_version = pg->rv ? rv : NULL;
	(*budget)--;
	sched_logl(s, SCHED_DEBUG, "PodGroup %s/%s at resourceVersion %s: status %s", t.ns, t.name,
	           rv, json);
	if (kubeapi_patch_podgroup_status(s->http, pg->dialect, &t, json, on_written, op) < 0) {
		abandon(op);
	} else {
		s->n.podgroup_writes++;
		if (in.message && *in.message)
			remember_shape(s, &s->group_shaped, g->key, shape32(in.message),
			               uid_tag(pg->uid));
	}
	cJSON_free(json);
}

/* Writes waiting in the engine beyond which status waits for a later
 * cycle: the engine sends in order, and binds must not queue behind a
 * backlog of status. Events waiting in the background do not count: they
 * go behind everything (kubeapi/http.h), and thousands of them after a
 * burst of binds would hold status back until they had all gone. */
#define STATUS_BACKLOG 256
/* Calls running on the writes' engine (Events not; the watches have one of
 * their own) beyond which status waits
 * too. A burst of binds keeps max_inflight (256) running until its last
 * ones, and the queue test above lets status out for the last 512 binds:
 * 1,000 PodGroup patches beside a burst's tail share the server's CPU
 * with its last binds. Under 64, a steady stream of binds (150 a second
 * answered within 300 ms: about 45) still lets status through. */
#define STATUS_BUSY 64
/* Binds answered but not yet shown by Muster's own watch beyond which
 * status waits as well. The server answers a bind before it has sent the
 * change to every pod watcher (the kubelets, the controllers, Muster): in
 * bench-e2e's burst of 8,000 binds, answered at 840 a second, Muster's
 * watch was up to 2,500 behind, and caught up 1.3 s after the last answer
 * (2 Dec). That catch-up is when kubelets learn where their pods go, and
 * 1,000 PodGroup patches sent into it (as they were before this test)
 * stretch it. A steady stream of binds, seen within a cycle or two, stays
 * well under. */
#define STATUS_UNSEEN 64
/* The longest status waits at a time for any of the three: then one
 * cycle's worth goes anyway, so that a server that stays busy delays
 * status but never starves it (a waiting pod's condition is what the
 * cluster autoscaler reads). Longer than a burst of 8,000 binds and its
 * catch-up (about 11 s here). */
#define STATUS_HOLD_MS 30000

bool sched_status_waits(const struct sched_status_load *l, uint64_t now_ms, uint64_t *held_ms)
{
	if (l->writes_waiting <= STATUS_BACKLOG && l->calls_running <= STATUS_BUSY &&
	    l->binds_unseen <= STATUS_UNSEEN) {
		*held_ms = 0;
		return false;
	}
	if (!*held_ms)
		*held_ms = now_ms + 1; /* since now, plus one: 0 means not waiting */
	if (now_ms + 1 - *held_ms < STATUS_HOLD_MS)
		return true;
	*held_ms = now_ms + 1; /* this one goes; the next waits again */
	return false;
}

/* The engine's queue and the watch's lag, for sched_status_waits(). */
static void status_load(struct sched *s, struct sched_status_load *l)
{
	struct kubeapi_http_stats st;

	kubeapi_http_get_stats(s->http, &st);
	l->writes_waiting = st.queued - st.background_queued + st.retrying;
	l->calls_running = st.inflight - st.background_running;
	l->binds_unseen = s->binds_unseen;
}

static int todo_add(struct buf *t, size_t gang, const struct kubeapi_pod *pod)
{
	struct sched_todo e = {(uint32_t)gang, pod};

	return buf_append(t, &e, sizeof(e));
}

/* Does the server's copy of g's PodGroup say other than the plan means?
 * Reads the plan and the cache only. */
static bool group_differs(struct sched *s, const struct plan_gang *g)
{
	struct pg_intent in;

	intent(s, g, &in);
	return !matches_but_message(s, &g->group->status, &in) ||
	       !same_message(&g->group->status, &in);
}

int sched_status_todo(struct sched *s, struct buf *out)
{
	int rc;

	buf_reset(out);
	for (size_t k = 0; k < s->plan.ngangs; k++) {
		const struct plan_gang *g = &s->plan.gangs[k];
		uint32_t h;

		if (g->group && group_differs(s, g) && (rc = todo_add(out, k, NULL)) < 0)
			return rc;
		if (!g->message || g->state == PLAN_ADMITTED || g->npending == 0)
			continue;
		h = kubeapi_text_hash(g->message, strlen(g->message));
		for (uint32_t m = 0; m < g->npending; m++) {
			const struct kubeapi_pod *pod = g->pending[m];

			if (pod->node || (pod->sched_cond == KUBEAPI_SCHED_COND_UNSCHEDULABLE &&
			                  pod->sched_msg == h))
				continue;
			if ((rc = todo_add(out, k, pod)) < 0)
				return rc;
		}
	}
	return 0;
}

void sched_status_write(struct sched *s, const struct buf *todo)
{
	const struct sched_todo *v = (const void *)todo->p;
	unsigned budget = s->opt.status_per_cycle;
	uint32_t gang = UINT32_MAX, h = 0;
	struct sched_status_load load;

	status_load(s, &load);
	if (sched_status_waits(&load, sched_now_ms(s), &s->status_held_ms))
		return;
	if (budget > STATUS_BACKLOG)
		budget = STATUS_BACKLOG;
	for (size_t k = 0; k < todo->len / sizeof(*v) && budget > 0; k++) {
		const struct plan_gang *g = &s->plan.gangs[v[k].gang];

		if (!v[k].pod) {
			group_status(s, g, &budget);
			continue;
		}
		if (v[k].gang != gang) {
			gang = v[k].gang;
			h = kubeapi_text_hash(g->message, strlen(g->message));
		}
		pod_condition(s, v[k].pod, g->message, h, &budget);
	}
	resend_owed(s);
}

/* Slots of each map the sweep looks at per cycle. The map of shapes holds
 * an entry per waiting pod ever written, millions at 100,000 nodes: swept
 * whole every 60 cycles, with a cache lookup per entry, it would stall the
 * loop for a tenth of a second or more. A slice costs well under a
 * millisecond, and goes round a map of 4 M slots in 1,024 cycles; a
 * stale entry only holds memory until then. */
#define SWEEP_SLOTS 4096

/* Is the entry at key of map k (0, 1: pods; 2, 3: PodGroups) stale: its
 * pod bound or gone, its PodGroup gone? */
static bool stale(struct sched *s, int k, uint64_t key)
{
	const struct kubeapi_pod *pod;

	key &= ~(1ull << 63);
	if (k < 2)
		return !(pod = idmap_get(kubeapi_cache_store(s->cache, KUBEAPI_STORE_PODS), key)) ||
		       pod->node;
	return !idmap_get(kubeapi_cache_store(s->cache, KUBEAPI_STORE_PODGROUPS), key) &&
	       !idmap_get(kubeapi_cache_store(s->cache, KUBEAPI_STORE_VCJOBS), key) &&
	       !idmap_get(kubeapi_cache_store(s->cache, KUBEAPI_STORE_NATIVEPGS), key);
}

/* Forget what was written for pods now bound or gone, and for PodGroups
 * gone, SWEEP_SLOTS slots of each map a call, going round: without it the
 * maps would grow with every pod ever seen. An entry a deletion moves
 * past the cursor waits for the next round. */
void sched_status_sweep(struct sched *s)
{
	struct idmap *maps[4] = {&s->written, &s->shaped, &s->groups, &s->group_shaped};
	uint64_t keys[256];

	for (int k = 0; k < 4; k++) {
		struct idmap *m = maps[k];
		size_t i = s->swept[k] < m->nslots ? s->swept[k] : 0, end = i + SWEEP_SLOTS, n = 0;
		const struct idmap_slot *e;

		while (i < end && (e = idmap_next(m, &i))) {
			if (stale(s, k, e->key))
				keys[n++] = e->key;
			if (n == sizeof(keys) / sizeof(keys[0]))
				break; /* the rest next time */
		}
		s->swept[k] = i < m->nslots ? i : 0;
		for (size_t j = 0; j < n; j++)
			idmap_del(m, keys[j]);
	}
}
