/*
 * The debug API (scheduler/debug/DEBUG.md): the HTTP handler behind httpd, and
 * the explanation of one waiting gang.
 *
 * Used by the daemon (scheduler/), which owns the state it reads.
 */
#ifndef MUSTER_SCHEDULER_DEBUG_DEBUG_H
#define MUSTER_SCHEDULER_DEBUG_DEBUG_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "scheduler/httpd/httpd.h"
#include "scheduler/debug/snap.h"

struct kubeapi_cache;
struct debug_metrics;

/* What the debug documents read of the daemon, as of one request. The
 * daemon fills it (struct debug_source): the debug server never sees the
 * daemon's own struct. */
struct debug_view {
	const struct kubeapi_cache *cache; /* NULL until there is one */
	bool leader;                       /* this instance schedules */
	bool elected;                      /* leader election is on */
	const char *holder;                /* elected: the lease's holder, "" unknown */
	uint64_t cycles, binds_ok, binds_failed, binds_retried, write_errors, evictions,
	    events_dropped;
	const struct debug_metrics *m;
	const struct snap *snap; /* NULL before the first cycle's copy */
};

/* The data of both handlers: view() fills *out with the daemon's state. */
struct debug_source {
	void (*view)(void *data, struct debug_view *out);
	void *data;
};

/** The httpd handler: data is a struct debug_source. Routes in debug.c. */
void debug_handle(void *data, const struct httpd_request *req, struct httpd_response *r);

/** The probe server's handler: /healthz, /livez and /readyz as the debug
 *  server answers them, 404 for anything else. */
void debug_probe_handle(void *data, const struct httpd_request *req, struct httpd_response *r);

/** Add "blockedBy", "explain", "wouldAdmit" and "pods" for gang g to doc. */
void debug_explain(const struct snap *sn, const struct snap_gang *g, cJSON *doc);

#endif /* MUSTER_SCHEDULER_DEBUG_DEBUG_H */
