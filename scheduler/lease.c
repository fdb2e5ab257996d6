/*
 * Leader election (lease.h): the I/O around sched_lease_decide().
 *
 * One request counts at a time. At each tick (every retry period) a leader
 * that knows the resourceVersion of its own last write renews at once (one
 * PUT); anyone else reads (GET), decides, and writes straight from the
 * read's callback when the decision says so (PUT at the resourceVersion
 * read, or POST to create). Any failure (409, 404, 5xx, an unreachable
 * server, a body that is not a Lease) forgets the resourceVersion, so the
 * next tick reads again: nothing is retried blindly.
 *
 * A request still unanswered after half the renew deadline is abandoned at
 * a tick (its answer, when it comes, is ignored) and a fresh one starts, so
 * one stuck request cannot use up a leader's deadline. The engine's own
 * retries (5xx, 429) happen inside that bound. An abandoned write that
 * lands anyway changes the resourceVersion: the next write gets 409 and the
 * tick after reads again.
 *
 * The renew deadline has a timer of its own, armed at each successful
 * write for (when it was sent) + renew_ms: a leader stops on time even
 * while its request hangs, not up to a retry period late.
 *
 * Closing: a leader's last request is let finish, then the lease is
 * released (holder "", leaseDurationSeconds 1) so a standby takes over at
 * its next read instead of a lease duration later; all of it bounded by a
 * grace timer. Requests still unanswered then are the engine's to cancel;
 * the struct is freed when the last of them reports back.
 *
 * Cost: per retry period one GET (a candidate) or one PUT (the leader),
 * about 600 bytes each way, plus one ~40-byte allocation per request.
 * Memory: this struct (about 1.5 KB) and three timers.
 */
#include "scheduler/lease.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubeapi/writes.h"

#define RELEASE_GRACE_MS 2000u
#define RELEASE_TRIES    3u

enum phase {
	PHASE_RUN,     /* campaigning or leading */
	PHASE_RELEASE, /* closing: finishing the last request, then releasing */
	PHASE_DONE,    /* closing: timers closing, requests being abandoned */
};

enum req_kind { REQ_READ, REQ_WRITE, REQ_RELEASE };

/* One request to the API server; freed by its done callback. */
struct lease_req {
	struct sched_lease *l;
	uint64_t sent_ms;
	enum req_kind kind;
};

struct sched_lease {
	uv_loop_t *loop;
	struct kubeapi_http *http;
	struct sched_lease_options o; /* strings point to the copies below */
	char ns[254], name[254], identity[256];
	uv_timer_t tick, deadline, grace;
	enum phase phase;
	struct lease_req *cur; /* the request that counts, or NULL */
	unsigned pending;      /* requests not yet answered, abandoned included */
	unsigned handles;      /* timers not yet closed */
	bool leader, was_leader, known, ever_held;
	unsigned release_tries;
	struct sched_lease_record rec; /* the last read or write; valid when known */
	struct sched_lease_seen seen;
	uint64_t observed_ms, renewed_ms;
	struct timespec acquired; /* acquireTime of our holding */
	char err[160];            /* the last failure logged, "" after a success */
	char logged_holder[256];  /* the last holder logged */
	void (*closed_cb)(void *);
	void *closed_data;
};

/* ---- the pure pieces ---------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return (h ^ 0xff) * 0x100000001b3ULL; /* a separator: "a"+"b" != "ab"+"" */
}

static const char *string_at(const cJSON *o, const char *key)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

	return v ? v : "";
}

static double number_at(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void record_spec(const cJSON *spec, const char *identity, struct sched_lease_record *r)
{
	const char *holder = string_at(spec, "holderIdentity");
	double secs = number_at(spec, "leaseDurationSeconds");
	double tr = number_at(spec, "leaseTransitions");
	char nums[48];
	uint64_t h = 0xcbf29ce484222325ULL;

	snprintf(r->holder, sizeof(r->holder), "%s", holder);
	r->ours = holder[0] && strcmp(holder, identity) == 0;
	r->lease_ms = secs > 0 && secs < 86400 * 365 ? (unsigned)(secs * 1000) : 0;
	r->transitions = tr > 0 && tr < INT32_MAX ? (int32_t)tr : 0;
	snprintf(nums, sizeof(nums), "%u/%ld", r->lease_ms, (long)r->transitions);
	h = fnv1a(h, holder);
	h = fnv1a(h, string_at(spec, "renewTime"));
	h = fnv1a(h, string_at(spec, "acquireTime"));
	h = fnv1a(h, nums);
	r->hash = h ? h : 1;
}

int sched_lease_parse(const char *body, size_t len, const char *identity,
                      struct sched_lease_record *r)
{
	cJSON *doc = body ? cJSON_ParseWithLength(body, len) : NULL;
	const char *rv =
	    string_at(cJSON_GetObjectItemCaseSensitive(doc, "metadata"), "resourceVersion");
	int rc = -EPROTO;

	memset(r, 0, sizeof(*r));
	if (!cJSON_IsObject(doc) || strcmp(string_at(doc, "kind"), "Lease") != 0 || !rv[0] ||
	    strlen(rv) >= sizeof(r->version))
		goto out;
	snprintf(r->version, sizeof(r->version), "%s", rv);
	record_spec(cJSON_GetObjectItemCaseSensitive(doc, "spec"), identity, r);
	/* Any write at all restarts a standby's wait, not only a renew: a
	 * standby takes over only from a Lease nobody has touched for a
	 * whole duration. Stricter than client-go, never less safe. */
	r->hash = fnv1a(r->hash, rv);
	r->hash = r->hash ? r->hash : 1;
	rc = 0;
out:
	cJSON_Delete(doc);
	return rc;
}

static bool elapsed(uint64_t now_ms, uint64_t since_ms, uint64_t span_ms)
{
	return now_ms >= since_ms && now_ms - since_ms >= span_ms;
}

static enum sched_lease_action decide_absent(const struct sched_lease_view *v)
{
	if (v->leader)
		return SCHED_LEASE_LOST;
	if (!v->ever_held || elapsed(v->now_ms, v->observed_ms, v->duration_ms))
		return SCHED_LEASE_CREATE;
	return SCHED_LEASE_WAIT;
}

enum sched_lease_action sched_lease_decide(const struct sched_lease_view *v)
{
	const struct sched_lease_record *r = v->rec;
	unsigned lease_ms;

	if (v->leader && elapsed(v->now_ms, v->renewed_ms, v->renew_ms))
		return SCHED_LEASE_LOST;
	if (v->absent || !r)
		return decide_absent(v);
	if (v->leader)
		return r->ours ? SCHED_LEASE_RENEW : SCHED_LEASE_LOST;
	if (r->ours || !r->holder[0])
		return SCHED_LEASE_TAKE;
	lease_ms = r->lease_ms ? r->lease_ms : v->duration_ms;
	return elapsed(v->now_ms, v->observed_ms, lease_ms) ? SCHED_LEASE_TAKE : SCHED_LEASE_WAIT;
}

uint64_t sched_lease_observe(struct sched_lease_seen *s, uint64_t hash, uint64_t now_ms)
{
	if (!s->any || s->hash != hash) {
		s->any = true;
		s->hash = hash;
		s->since_ms = now_ms;
	}
	return s->since_ms;
}

/* ---- small helpers -------------------------------------------------------- */

static uint64_t now_ms(struct sched_lease *l)
{
	/* uv_now() is the start of this loop iteration: fresher is safer for
	 * a standby's sightings, and a leader's send times only get later. */
	uv_update_time(l->loop);
	return uv_now(l->loop);
}

static void say(struct sched_lease *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "lease NS/NAME: " and the message, to the caller's log. */
static void say(struct sched_lease *l, const char *fmt, ...)
{
	char msg[768];
	int n;
	va_list ap;

	if (!l->o.log)
		return;
	n = snprintf(msg, sizeof(msg), "lease %s/%s: ", l->ns, l->name);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	l->o.log(l->o.data, msg);
}

/* A failure, logged only when it differs from the last one: a server that
 * is down costs one line, not one per retry period. */
static void failed(struct sched_lease *l, const char *what, const struct kubeapi_response *r)
{
	char why[160];

	l->known = false;
	if (r->err)
		snprintf(why, sizeof(why), "%s: %s", what, strerror(-r->err));
	else
		snprintf(why, sizeof(why), "%s: HTTP %ld", what, r->status);
	if (strcmp(why, l->err) == 0)
		return;
	snprintf(l->err, sizeof(l->err), "%s", why);
	say(l, "%s; trying again every retry period", why);
}

static void succeeded(struct sched_lease *l)
{
	if (l->err[0])
		say(l, "reachable again");
	l->err[0] = 0;
}

static void holder_seen(struct sched_lease *l)
{
	if (l->leader || strcmp(l->rec.holder, l->logged_holder) == 0)
		return;
	snprintf(l->logged_holder, sizeof(l->logged_holder), "%s", l->rec.holder);
	if (l->rec.holder[0] && !l->rec.ours)
		say(l, "held by %s; standing by", l->rec.holder);
}

/* ---- requests --------------------------------------------------------------- */

static void on_done(void *data, const struct kubeapi_response *r);

static struct lease_req *new_req(struct sched_lease *l, enum req_kind kind)
{
	struct lease_req *q = malloc(sizeof(*q));

	if (q)
		*q = (struct lease_req){.l = l, .sent_ms = now_ms(l), .kind = kind};
	return q;
}

/* Submitted: it counts. Not: nothing to wait for (the callback never runs). */
static void submitted(struct sched_lease *l, struct lease_req *q, int rc)
{
	if (rc < 0) {
		struct kubeapi_response r = {.err = rc};

		free(q);
		failed(l, "cannot send", &r);
		return;
	}
	l->cur = q;
	l->pending++;
}

static void read_lease(struct sched_lease *l)
{
	struct lease_req *q = new_req(l, REQ_READ);

	submitted(l, q, q ? kubeapi_lease_get(l->http, l->ns, l->name, on_done, q) : -ENOMEM);
}

static void write_lease(struct sched_lease *l, enum sched_lease_action a)
{
	struct timespec wall;
	struct kubeapi_lease k = {.ns = l->ns, .name = l->name, .holder = l->identity};
	struct lease_req *q = new_req(l, REQ_WRITE);

	clock_gettime(CLOCK_REALTIME, &wall);
	if (a != SCHED_LEASE_RENEW && !(a == SCHED_LEASE_TAKE && l->rec.ours && l->acquired.tv_sec))
		l->acquired = wall;
	k.resource_version = a == SCHED_LEASE_CREATE ? NULL : l->rec.version;
	k.duration_s = (int32_t)((l->o.duration_ms + 999) / 1000);
	k.transitions = a == SCHED_LEASE_CREATE ? 0 : l->rec.transitions;
	if (a == SCHED_LEASE_TAKE && !l->rec.ours)
		k.transitions++;
	k.acquired = l->acquired;
	k.renewed = wall;
	submitted(l, q, q ? kubeapi_lease_put(l->http, &k, on_done, q) : -ENOMEM);
}

/* holderIdentity "" and leaseDurationSeconds 1, as client-go's
 * ReleaseOnCancel: a standby takes a released lease at its next read. */
static void release_lease(struct sched_lease *l)
{
	struct timespec wall;
	struct kubeapi_lease k = {.ns = l->ns,
	                          .name = l->name,
	                          .resource_version = l->rec.version,
	                          .holder = "",
	                          .duration_s = 1,
	                          .transitions = l->rec.transitions};
	struct lease_req *q = new_req(l, REQ_RELEASE);

	clock_gettime(CLOCK_REALTIME, &wall);
	k.acquired = k.renewed = wall;
	submitted(l, q, q ? kubeapi_lease_put(l->http, &k, on_done, q) : -ENOMEM);
}

/* ---- leadership ------------------------------------------------------------ */

static void lose(struct sched_lease *l, const char *why)
{
	l->leader = false;
	l->known = false;
	l->cur = NULL; /* a renew still in flight no longer counts */
	uv_timer_stop(&l->deadline);
	say(l, "leadership lost (%s); stop acting", why);
	l->o.changed(l->o.data, false);
}

static void on_deadline(uv_timer_t *t)
{
	lose(t->data, "no successful renew within the renew deadline");
}

static void act(struct sched_lease *l, enum sched_lease_action a, bool absent, bool late)
{
	char why[320];

	if (a == SCHED_LEASE_WAIT)
		return;
	if (a != SCHED_LEASE_LOST) {
		write_lease(l, a);
		return;
	}
	if (late)
		snprintf(why, sizeof(why), "no successful renew within the renew deadline");
	else if (absent)
		snprintf(why, sizeof(why), "the Lease was deleted");
	else
		snprintf(why, sizeof(why), "now held by \"%s\"", l->rec.holder);
	lose(l, why);
}

static void decide_and_act(struct sched_lease *l, bool absent)
{
	uint64_t now = now_ms(l);
	struct sched_lease_view v = {.now_ms = now,
	                             .leader = l->leader,
	                             .renewed_ms = l->renewed_ms,
	                             .renew_ms = l->o.renew_ms,
	                             .duration_ms = l->o.duration_ms,
	                             .absent = absent,
	                             .ever_held = l->ever_held,
	                             .rec = absent ? NULL : &l->rec,
	                             .observed_ms = l->observed_ms};

	act(l, sched_lease_decide(&v), absent, l->leader && elapsed(now, v.renewed_ms, v.renew_ms));
}

static void on_tick(uv_timer_t *t)
{
	struct sched_lease *l = t->data;

	if (l->cur) {
		if (!elapsed(now_ms(l), l->cur->sent_ms, l->o.renew_ms / 2))
			return;
		l->cur = NULL; /* stuck: its answer will be ignored */
		l->known = false;
	}
	if (l->leader && l->known)
		decide_and_act(l, false);
	else
		read_lease(l);
}

/* A record read or written: remember it and when it was first seen so. */
static int take_record(struct sched_lease *l, const struct kubeapi_response *r)
{
	if (sched_lease_parse(r->body, r->len, l->identity, &l->rec) < 0)
		return -EPROTO;
	l->known = true;
	l->ever_held = true;
	l->observed_ms = sched_lease_observe(&l->seen, l->rec.hash, now_ms(l));
	return 0;
}

static void on_read(struct sched_lease *l, const struct kubeapi_response *r)
{
	bool absent = r->err == 0 && r->status == 404;

	if (!absent && (r->err || r->status != 200)) {
		failed(l, "read failed", r);
		return;
	}
	if (!absent && take_record(l, r) < 0) {
		failed(l, "read an unreadable Lease", r);
		return;
	}
	succeeded(l);
	if (absent) {
		l->known = false;
		memset(&l->rec, 0, sizeof(l->rec));
		l->observed_ms = sched_lease_observe(&l->seen, 0, now_ms(l));
	}
	holder_seen(l);
	decide_and_act(l, absent);
}

/* Our write landed at some moment after q->sent_ms: the deadline runs
 * from then, the earliest it can have been, so it is never late. */
static void on_written(struct sched_lease *l, struct lease_req *q, const struct kubeapi_response *r)
{
	uint64_t now;

	if (r->err || (r->status != 200 && r->status != 201)) {
		if (r->err == 0 && (r->status == 409 || r->status == 404))
			l->known = false; /* someone wrote first, or deleted it: read again */
		else
			failed(l, "write failed", r);
		return;
	}
	succeeded(l);
	if (take_record(l, r) < 0)
		l->known = false; /* ours, but renew only after reading it again */
	now = now_ms(l);
	if (elapsed(now, q->sent_ms, l->o.renew_ms))
		return; /* too late to count; the deadline timer has acted */
	l->renewed_ms = q->sent_ms;
	uv_timer_start(&l->deadline, on_deadline, q->sent_ms + l->o.renew_ms - now, 0);
	if (l->leader)
		return;
	l->leader = l->was_leader = true;
	snprintf(l->logged_holder, sizeof(l->logged_holder), "%s", l->identity);
	say(l, "acquired as %s", l->identity);
	l->o.changed(l->o.data, true);
}

/* ---- closing ---------------------------------------------------------------- */

static void maybe_free(struct sched_lease *l)
{
	if (l->phase == PHASE_DONE && l->handles == 0 && l->pending == 0)
		free(l);
}

/* The last timer closed: free now unless a request is unanswered (then
 * its answer frees, perhaps from within closed_cb, when that closes the
 * engine), and tell the caller. */
static void timer_closed(uv_handle_t *h)
{
	struct sched_lease *l = h->data;
	void (*cb)(void *) = l->closed_cb;
	void *data = l->closed_data;

	if (--l->handles > 0)
		return;
	maybe_free(l);
	if (cb)
		cb(data);
}

static void finish(struct sched_lease *l)
{
	if (l->phase == PHASE_DONE)
		return;
	l->phase = PHASE_DONE;
	l->cur = NULL;
	l->handles = 3;
	uv_close((uv_handle_t *)&l->tick, timer_closed);
	uv_close((uv_handle_t *)&l->deadline, timer_closed);
	uv_close((uv_handle_t *)&l->grace, timer_closed);
}

/* While closing: release what we held, once we know its resourceVersion. */
static void release_step(struct sched_lease *l)
{
	if (!l->was_leader || l->release_tries++ >= RELEASE_TRIES) {
		finish(l);
		return;
	}
	if (l->known && !l->rec.ours) {
		finish(l); /* someone else holds it now */
		return;
	}
	if (l->known)
		release_lease(l);
	else
		read_lease(l);
	if (!l->cur)
		finish(l); /* could not even send */
}

static void on_released(struct sched_lease *l, const struct kubeapi_response *r)
{
	if (r->err == 0 && r->status == 200)
		say(l, "released");
	else
		failed(l, "release failed (a standby takes over after the lease duration)", r);
	finish(l);
}

static void closing_answer(struct sched_lease *l, struct lease_req *q,
                           const struct kubeapi_response *r)
{
	if (q->kind == REQ_RELEASE) {
		on_released(l, r);
		return;
	}
	if (r->err == 0 && (r->status == 200 || r->status == 201) && take_record(l, r) == 0)
		succeeded(l);
	else
		l->known = false;
	release_step(l);
}

static void on_grace(uv_timer_t *t)
{
	struct sched_lease *l = t->data;

	say(l, "not released in time; a standby takes over after the lease duration");
	finish(l);
}

static void on_done(void *data, const struct kubeapi_response *r)
{
	struct lease_req *q = data;
	struct sched_lease *l = q->l;
	bool counts = l->cur == q;

	if (counts)
		l->cur = NULL;
	if (counts && l->phase == PHASE_RELEASE)
		closing_answer(l, q, r);
	else if (counts && l->phase == PHASE_RUN && q->kind == REQ_READ)
		on_read(l, r);
	else if (counts && l->phase == PHASE_RUN)
		on_written(l, q, r);
	free(q);
	l->pending--;
	maybe_free(l);
}

void sched_lease_close(struct sched_lease **lp, void (*closed_cb)(void *), void *data)
{
	struct sched_lease *l = lp ? *lp : NULL;

	if (!l)
		return;
	*lp = NULL;
	l->closed_cb = closed_cb;
	l->closed_data = data;
	l->was_leader = l->leader;
	l->leader = false;
	l->phase = PHASE_RELEASE;
	uv_timer_stop(&l->tick);
	uv_timer_stop(&l->deadline);
	if (!l->was_leader) {
		finish(l);
		return;
	}
	uv_timer_start(&l->grace, on_grace,
	               l->o.retry_ms < RELEASE_GRACE_MS ? l->o.retry_ms : RELEASE_GRACE_MS, 0);
	if (!l->cur)
		release_step(l); /* else the answer to the last request leads there */
}

/* ---- starting ------------------------------------------------------------- */

/* DNS-1123 characters, as kubeapi/writes.c checks them at every call: a
 * bad name is refused at start, not at each tick. */
static bool valid_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 253)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.") == n;
}

static int copy(char *dst, size_t size, const char *src)
{
	if (!src || !src[0] || strlen(src) >= size)
		return -EINVAL;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

static int check(const struct sched_lease_options *o)
{
	if (!o || !o->changed || !valid_name(o->ns) || !valid_name(o->name) || o->retry_ms == 0 ||
	    o->retry_ms >= o->renew_ms || o->renew_ms >= o->duration_ms ||
	    o->duration_ms > 86400000u)
		return -EINVAL;
	return 0;
}

int sched_lease_start(uv_loop_t *loop, struct kubeapi_http *http,
                      const struct sched_lease_options *o, struct sched_lease **out)
{
	struct sched_lease *l;
	int rc;

	if (!loop || !http || !out || (rc = check(o)) < 0)
		return -EINVAL;
	if (!(l = calloc(1, sizeof(*l))))
		return -ENOMEM;
	if ((rc = copy(l->ns, sizeof(l->ns), o->ns)) < 0 ||
	    (rc = copy(l->name, sizeof(l->name), o->name)) < 0 ||
	    (rc = copy(l->identity, sizeof(l->identity), o->identity)) < 0) {
		free(l);
		return rc;
	}
	l->loop = loop;
	l->http = http;
	l->o = *o;
	l->o.ns = l->ns;
	l->o.name = l->name;
	l->o.identity = l->identity;
	uv_timer_init(loop, &l->tick);
	uv_timer_init(loop, &l->deadline);
	uv_timer_init(loop, &l->grace);
	l->tick.data = l->deadline.data = l->grace.data = l;
	uv_timer_start(&l->tick, on_tick, 0, o->retry_ms);
	*out = l;
	return 0;
}

bool sched_lease_leader(const struct sched_lease *l)
{
	/* The deadline timer may not have run yet: after the process was
	 * paused (SIGSTOP, swapped out), the loop runs due timers in due-time
	 * order, and a cycle's may come first. */
	return l && l->leader && !elapsed(uv_now(l->loop), l->renewed_ms, l->o.renew_ms);
}

const char *sched_lease_holder(const struct sched_lease *l)
{
	if (!l)
		return "";
	return l->leader ? l->identity : l->rec.holder;
}
