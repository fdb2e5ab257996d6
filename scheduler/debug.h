/*
 * The debug API (scheduler/DEBUG.md): the HTTP handler behind httpd, and
 * the explanation of one waiting gang.
 *
 * Internal to scheduler/.
 */
#ifndef MUSTER_SCHEDULER_DEBUG_H
#define MUSTER_SCHEDULER_DEBUG_H

#include <cjson/cJSON.h>

#include "scheduler/httpd/httpd.h"
#include "scheduler/snap.h"

/** The httpd handler: data is the struct sched. Routes in debug.c. */
void debug_handle(void *data, const struct httpd_request *req, struct httpd_response *r);

/** The probe server's handler: /healthz, /livez and /readyz as the debug
 *  server answers them, 404 for anything else. */
void debug_probe_handle(void *data, const struct httpd_request *req, struct httpd_response *r);

/** Add "blockedBy", "explain", "wouldAdmit" and "pods" for gang g to doc. */
void debug_explain(const struct snap *sn, const struct snap_gang *g, cJSON *doc);

#endif /* MUSTER_SCHEDULER_DEBUG_H */
