/*
 * Gang timeouts (sched.h). A gang that has waited longer than its
 * timeout (the PodGroup's scheduleTimeoutSeconds, else its queue's
 * gangTimeout) is marked timed out, with an Event, and left alone for a
 * backoff of 10 s doubling per timeout up to 5 minutes; then it competes
 * again with a fresh timeout. The backoff keeps a gang that cannot fit
 * from costing placement work every cycle, and says so to its owner.
 *
 * The bookkeeping (a lookup per waiting gang: hundreds of thousands at
 * 100,000 nodes) runs on the planner's thread after the cycle
 * (sched_timeouts_find); the loop only says what timed out. Nothing else
 * touches the waits while a cycle runs: the loop reads them before it
 * starts (sched_backoff_map).
 */
#include <stdlib.h>

#include "scheduler/sched.h"

#define BACKOFF_BASE_MS 10000u
#define BACKOFF_CAP_MS  300000u

struct wait {
	uint64_t since_ms, until_ms, seen;
	unsigned timeouts;
};

static uint64_t timeout_ms(struct sched *s, const struct plan_gang *g)
{
	const struct config_queue *q = queue_set_queue(s->qs, g->queue);

	if (g->group && g->group->has_timeout && g->group->timeout_s > 0)
		return (uint64_t)g->group->timeout_s * 1000;
	return q ? (uint64_t)q->gang_timeout_ms : CONFIG_DEFAULT_GANG_TIMEOUT_MS;
}

static uint64_t backoff_ms(unsigned timeouts)
{
	uint64_t b = BACKOFF_BASE_MS;

	while (timeouts-- > 0 && b < BACKOFF_CAP_MS)
		b *= 2;
	return b < BACKOFF_CAP_MS ? b : BACKOFF_CAP_MS;
}

static int timed_out(struct buf *out, size_t gang, struct wait *w, uint64_t now)
{
	uint64_t b = backoff_ms(w->timeouts);
	struct sched_timeout t = {(uint32_t)gang, (uint32_t)(b / 1000)};
	int rc;

	if ((rc = buf_append(out, &t, sizeof(t))) < 0)
		return rc;
	w->timeouts++;
	w->until_ms = now + b;
	w->since_ms = w->until_ms;
	return 0;
}

void sched_timeouts_say(struct sched *s, const struct buf *t)
{
	const struct sched_timeout *v = (const void *)t->p;
	char note[512];

	for (size_t k = 0; k < t->len / sizeof(*v); k++) {
		const struct plan_gang *g = &s->plan.gangs[v[k].gang];

		snprintf(note, sizeof(note),
		         "gang %s/%s timed out after %llu s waiting; next try in %u s: %s",
		         sched_str(s, g->ns), sched_str(s, g->name),
		         (unsigned long long)(timeout_ms(s, g) / 1000), v[k].backoff_s,
		         g->message ? g->message : "");
		sched_log(s, "%s", note);
		if (g->npending)
			sched_event(s, g->pending[0], "Warning", "GangTimeout", "Scheduling", note);
	}
}

int sched_timeouts_find(struct sched *s, uint64_t now, struct buf *out)
{
	uint64_t gen = s->n.cycles + 1;
	struct idmap *m = &s->waits;
	const struct idmap_slot *e;
	uint64_t *stale;
	size_t n = 0;
	int rc;

	buf_reset(out);
	for (size_t k = 0; k < s->plan.ngangs; k++) {
		const struct plan_gang *g = &s->plan.gangs[k];
		struct wait *w = idmap_get(m, g->key);

		/* A gang holding a reservation waits for a known start, not in
		 * vain: its clock restarts when it loses the reservation. One
		 * not yet enqueued holds nothing, so there is nothing to give
		 * up: like Volcano's, it waits in its queue. */
		if ((g->state != PLAN_WAITING && g->state != PLAN_INCOMPLETE &&
		     g->state != PLAN_BACKOFF) ||
		    g->reserved || g->block.why == PLAN_WHY_ENQUEUE)
			continue;
		if (!w) {
			if (!(w = calloc(1, sizeof(*w))) || idmap_put(m, g->key, w) < 0) {
				free(w);
				continue;
			}
			w->since_ms = now;
		}
		w->seen = gen;
		if (g->state != PLAN_BACKOFF && now >= w->since_ms &&
		    now - w->since_ms > timeout_ms(s, g) && (rc = timed_out(out, k, w, now)) < 0)
			return rc;
	}
	/* Gangs admitted, gone, or running: forget them. */
	stale = calloc(m->n + 1, sizeof(*stale));
	for (size_t i = 0; stale && (e = idmap_next(m, &i));)
		if (((struct wait *)e->value)->seen != gen)
			stale[n++] = e->key;
	for (size_t k = 0; k < n; k++)
		free(idmap_del(m, stale[k]));
	free(stale);
	return 0;
}

int sched_backoff_map(struct sched *s, struct idmap *out)
{
	uint64_t now = sched_now_ms(s);
	const struct idmap_slot *e;

	IDMAP_FOREACH(&s->waits, i, e) {
		const struct wait *w = e->value;

		if (w->until_ms > now && idmap_put(out, e->key, (void *)1) < 0)
			return -1;
	}
	return 0;
}

void sched_waits_free(struct sched *s)
{
	const struct idmap_slot *e;

	IDMAP_FOREACH(&s->waits, i, e)
		free(e->value);
	idmap_free(&s->waits);
}
