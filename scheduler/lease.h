/*
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection does it: the holder renews the lease every retry period;
 * a candidate takes it once it has seen the same record (holder,
 * renewTime, resourceVersion) for a whole lease duration (by its own
 * monotonic clock, never
 * comparing clocks across machines); a leader that cannot renew within the
 * renew deadline gives up leadership before anyone else may take it.
 *
 * Why that is safe: a leader counts its deadline from when it *sent* its
 * last successful write, which is before the server applied it, which is
 * before any candidate can have seen it; a candidate waits a whole lease
 * duration (> the renew deadline) from that sighting. So the old leader
 * has stopped, by duration - renew of margin, before a new one starts,
 * unless the two clocks' rates differ by that much. Every write replaces
 * the resourceVersion it read, so of two candidates only one wins.
 *
 * Internal to scheduler/.
 */
#ifndef MUSTER_SCHEDULER_LEASE_H
#define MUSTER_SCHEDULER_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kubeapi/http.h"

struct sched_lease;

struct sched_lease_options {
	const char *ns, *name; /* the Lease object */
	const char *identity;  /* holderIdentity: unique per instance */
	unsigned duration_ms;  /* leaseDurationSeconds, default 15000 */
	unsigned renew_ms;     /* renew deadline, default 10000 (< duration) */
	unsigned retry_ms;     /* retry period, default 2000 (< renew) */
	/* Leadership changed: leader true once acquired; false when lost
	 * (the caller must stop acting at once). Never called during or after
	 * sched_lease_close(). */
	void (*changed)(void *data, bool leader);
	void (*log)(void *data, const char *msg); /* may be NULL */
	void *data;
};

/** Start campaigning: a first read at once, then one request (two when
 *  taking or creating) per retry period. 0 and *out, -EINVAL (bad
 *  options: empty names or identity, not retry < renew < duration, no
 *  changed callback), -ENOMEM. Copies the strings. */
int sched_lease_start(uv_loop_t *loop, struct kubeapi_http *http,
                      const struct sched_lease_options *o, struct sched_lease **out);

/** Whether this instance holds the lease now: false from the renew
 *  deadline on, even before the loop has run the timer that reports it. */
bool sched_lease_leader(const struct sched_lease *l);

/** The current holder as last seen ("" when none or unknown). Owned by
 *  the lease; valid until its next loop callback. */
const char *sched_lease_holder(const struct sched_lease *l);

/** Stop (a leader releases the lease when it can, best effort, giving it
 *  at most min(retry period, 2 s)), then call closed_cb(data) once its
 *  handles are closed. The HTTP engine must stay open until then. Clears
 *  *lp; safe on NULL and from within the changed callback. */
void sched_lease_close(struct sched_lease **lp, void (*closed_cb)(void *), void *data);

/*
 * The pure pieces: no I/O, no clock of their own, no allocation. Public so
 * that the unit tests drive them directly.
 */

/* A Lease as read (GET) or written back (PUT, POST). */
struct sched_lease_record {
	char version[64];  /* metadata.resourceVersion */
	char holder[256];  /* spec.holderIdentity, truncated; "" when released */
	bool ours;         /* holderIdentity is exactly our identity */
	uint64_t hash;     /* of resourceVersion and spec, never 0: changes on every
	                    * write, a renew or any other */
	unsigned lease_ms; /* spec.leaseDurationSeconds in ms, 0 when absent */
	int32_t transitions;
};

/** Read a Lease's JSON body[0..len) as written by identity. 0 and *r;
 *  -EPROTO when it is not a Lease with a usable resourceVersion. */
int sched_lease_parse(const char *body, size_t len, const char *identity,
                      struct sched_lease_record *r);

/* What a candidate or leader does after a tick's read. */
enum sched_lease_action {
	SCHED_LEASE_WAIT,   /* another holder's lease is live: read again next tick */
	SCHED_LEASE_CREATE, /* no Lease exists: create it, holding it */
	SCHED_LEASE_TAKE,   /* released, expired or ours already: replace it, holding it */
	SCHED_LEASE_RENEW,  /* we lead and hold it: write a fresh renewTime */
	SCHED_LEASE_LOST,   /* we lead but must stop: past the deadline or taken */
};

/* What one tick knows. */
struct sched_lease_view {
	uint64_t now_ms;      /* monotonic, ours */
	bool leader;          /* acting as leader now */
	uint64_t renewed_ms;  /* leader: when its last successful write was sent */
	unsigned renew_ms;    /* our renew deadline */
	unsigned duration_ms; /* our lease duration: used when the record has none */
	bool absent;          /* the read found no Lease (404); rec is then unused */
	bool ever_held;       /* a Lease was read before: an absence is then a change
	                       * (someone deleted it), waited out like one */
	const struct sched_lease_record *rec;
	uint64_t observed_ms; /* when rec (or the absence) was first seen as it is */
};

/** The decision of one tick. A leader past renewed_ms + renew_ms, or that
 *  sees another holder or no Lease, has LOST. A candidate takes a released
 *  lease (or its own) at once, another holder's only once that record has
 *  been seen unchanged for the record's leaseDurationSeconds (else
 *  duration_ms); it creates a missing Lease at once, unless it had seen
 *  one before: then after duration_ms of absence. */
enum sched_lease_action sched_lease_decide(const struct sched_lease_view *v);

/* When the record last changed, by our clock. */
struct sched_lease_seen {
	bool any;      /* a record has been seen */
	uint64_t hash; /* the last one's */
	uint64_t since_ms;
};

/** Note that a record with `hash` (0: no Lease) was read at now_ms;
 *  returns when it was first seen as it is (now_ms if it differs from the
 *  last one, or is the first). */
uint64_t sched_lease_observe(struct sched_lease_seen *s, uint64_t hash, uint64_t now_ms);

#endif /* MUSTER_SCHEDULER_LEASE_H */
