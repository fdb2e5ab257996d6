/*
 * The debug API's routes (scheduler/debug/DEBUG.md): health, readiness,
 * /metrics, and the JSON documents built from the last cycle's snapshot
 * (snap.h). Nothing here reads the cache or the plan directly, so a
 * request between cycles never sees half-changed state, and nothing
 * secret is served: names, amounts and messages only.
 *
 * Each document costs O(what it lists); lists are capped by ?limit=.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "scheduler/debug/debug.h"
#include "kubeapi/cache.h"
#include "scheduler/debug/gpus.h"
#include "scheduler/debug/page.h"
#include "scheduler/debug/metrics.h"
#include "scheduler/debug/snap.h"

static const char json_type[] = "application/json";
static const char text_type[] = "text/plain; charset=utf-8";

static void text(struct httpd_response *r, int status, const char *body)
{
	r->status = status;
	r->content_type = text_type;
	r->body = strdup(body);
	r->len = r->body ? strlen(r->body) : 0;
}

/* Send doc (consumed) as the response. */
static void send_json(struct httpd_response *r, int status, cJSON *doc)
{
	char *s = doc ? cJSON_PrintUnformatted(doc) : NULL;

	cJSON_Delete(doc);
	if (!s) {
		text(r, 500, "out of memory\n");
		return;
	}
	r->status = status;
	r->content_type = json_type;
	r->body = s;
	r->len = strlen(s);
}

static void error_json(struct httpd_response *r, int status, const char *msg)
{
	cJSON *doc = cJSON_CreateObject();

	cJSON_AddStringToObject(doc, "error", msg);
	send_json(r, status, doc);
}

static void rfc3339(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void add_time(cJSON *o, const char *key, int64_t t)
{
	char when[32];

	rfc3339(t, when);
	cJSON_AddStringToObject(o, key, when);
}

/* An amount, or null when unlimited. */
static void add_amount(cJSON *o, const char *key, const char *res, int64_t v)
{
	if (v == QUEUE_UNLIMITED)
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddNumberToObject(o, key, snap_amount(res, v));
}

/* ?name=N within [lo, hi], else def. */
static long query_long(const char *q, const char *name, long def, long lo, long hi)
{
	size_t n = strlen(name);

	for (const char *p = q; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
		if (strncmp(p, name, n) == 0 && p[n] == '=') {
			char *end;
			long v = strtol(p + n + 1, &end, 10);

			if ((*end == '\0' || *end == '&') && v >= lo && v <= hi)
				return v;
			return def;
		}
	}
	return def;
}

/* ?name=VALUE into buf (no decoding needed: queue names are DNS labels). */
static const char *query_str(const char *q, const char *name, char *buf, size_t len)
{
	size_t n = strlen(name);

	for (const char *p = q; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
		if (strncmp(p, name, n) == 0 && p[n] == '=') {
			size_t v = strcspn(p + n + 1, "&");

			if (v >= len)
				return NULL;
			memcpy(buf, p + n + 1, v);
			buf[v] = '\0';
			return buf;
		}
	}
	return NULL;
}

static cJSON *header(const struct snap *sn)
{
	cJSON *doc = cJSON_CreateObject();

	cJSON_AddNumberToObject(doc, "cycle", (double)sn->cycle);
	add_time(doc, "time", sn->time_s);
	return doc;
}

/* ---- /debug/queues ------------------------------------------------------ */

static cJSON *queue_resources(const struct snap *sn, const struct snap_queue *q)
{
	cJSON *res = cJSON_CreateObject();

	for (unsigned k = 0; k < sn->nslots; k++) {
		cJSON *r = cJSON_AddObjectToObject(res, sn->slot_name[k]);
		const char *u = sn->slot_res[k];

		add_amount(r, "nominal", u, q->nominal[k]);
		if (!q->cohort) {
			add_amount(r, "borrowingLimit", u, q->borrowing[k]);
			add_amount(r, "lendingLimit", u, q->lending[k]);
		}
		add_amount(r, "usage", u, q->usage[k]);
		if (sn->half_life_ms)
			add_amount(r, "remembered", u, q->remembered[k]);
		add_amount(r, "borrowed", u, q->borrowed[k]);
		add_amount(r, "lent", u, q->lent[k]);
	}
	return res;
}

static cJSON *queue_json(const struct snap *sn, int node)
{
	const struct snap_queue *q = &sn->queues[node];
	cJSON *o = cJSON_CreateObject(), *children;

	cJSON_AddStringToObject(o, "name", q->name);
	cJSON_AddStringToObject(o, "kind", q->cohort ? "cohort" : "queue");
	cJSON_AddNumberToObject(o, "weight", (double)q->weight);
	cJSON_AddNumberToObject(o, "pending", q->pending);
	cJSON_AddNumberToObject(o, "admitted", q->admitted);
	cJSON_AddNumberToObject(o, "fairShare", q->share);
	cJSON_AddItemToObject(o, "resources", queue_resources(sn, q));
	children = cJSON_AddArrayToObject(o, "children");
	for (int i = 1; q->cohort && i < sn->nqueues; i++)
		if (sn->queues[i].parent == node)
			cJSON_AddItemToArray(children, queue_json(sn, i));
	return o;
}

static void get_queues(const struct snap *sn, const struct httpd_request *req,
                       struct httpd_response *r)
{
	cJSON *doc = header(sn), *res = cJSON_AddArrayToObject(doc, "resources");

	(void)req;
	for (unsigned k = 0; k < sn->nslots; k++)
		cJSON_AddItemToArray(res, cJSON_CreateString(sn->slot_name[k]));
	if (sn->half_life_ms) {
		cJSON *fs = cJSON_AddObjectToObject(doc, "fairSharing");

		cJSON_AddNumberToObject(fs, "halfLifeSeconds", (double)sn->half_life_ms / 1000);
		if (sn->remembered_at_s == QUEUE_NO_TIME)
			cJSON_AddNullToObject(fs, "rememberedAt");
		else
			add_time(fs, "rememberedAt", sn->remembered_at_s);
	}
	cJSON_AddItemToObject(doc, "root", queue_json(sn, 0));
	send_json(r, 200, doc);
}

/* ---- /debug/gangs ------------------------------------------------------- */

static const char *const state_name[] = {
    [PLAN_RUNNING] = "Running",       [PLAN_ADMITTED] = "Admitted", [PLAN_WAITING] = "Waiting",
    [PLAN_INCOMPLETE] = "Incomplete", [PLAN_NO_QUEUE] = "NoQueue",  [PLAN_BACKOFF] = "BackingOff",
    [PLAN_PREEMPTING] = "Preempting",
};

static const char *const why_name[] = {
    [PLAN_WHY_NONE] = "None",
    [PLAN_WHY_QUOTA] = "Quota",
    [PLAN_WHY_FIT] = "Fit",
    [PLAN_WHY_STRICT_FIFO] = "StrictFIFO",
    [PLAN_WHY_MEMBERS] = "WaitingForMembers",
    [PLAN_WHY_TIMEOUT] = "Timeout",
    [PLAN_WHY_NO_QUEUE] = "NoQueue",
    [PLAN_WHY_PREEMPTING] = "Preempting",
    [PLAN_WHY_ENQUEUE] = "MinResources",
    [PLAN_WHY_UNSUPPORTED] = "UnsupportedConstraint",
};

/* scheduler-plugins' PodGroup keeps the plain name it always had here. */
static const char *const kind_name[] = {"PodGroup", "VolcanoPodGroup", "Pod", "NativePodGroup"};

static void add_requests(const struct snap *sn, const struct snap_gang *g, cJSON *o)
{
	cJSON *req = cJSON_AddObjectToObject(o, "requests");

	for (unsigned k = 0; k < sn->nslots; k++)
		if (g->req[k])
			cJSON_AddNumberToObject(req, sn->slot_name[k],
			                        snap_amount(sn->slot_res[k], g->req[k]));
}

static void add_reservation(const struct snap *sn, const struct snap_gang *g, cJSON *o)
{
	cJSON *v, *nodes;

	if (!g->reserved || !g->nresv_nodes) {
		cJSON_AddNullToObject(o, "reservation");
		return;
	}
	v = cJSON_AddObjectToObject(o, "reservation");
	nodes = cJSON_AddArrayToObject(v, "nodes");
	for (uint32_t k = 0; k < g->nresv_nodes; k++)
		cJSON_AddItemToArray(nodes, cJSON_CreateString(sn->nodes[g->resv_nodes[k]].name));
}

/* expectedStart: a time, "unknown", or null (not estimated); and what
 * says it: the gang's reservation, or the forecast. */
static void add_start(const struct snap_gang *g, cJSON *o)
{
	bool known = g->expected_start_s != 0 && (g->reserved || g->forecast);

	if (!known)
		cJSON_AddNullToObject(o, "expectedStart");
	else if (g->expected_start_s == PLAN_NEVER)
		cJSON_AddStringToObject(o, "expectedStart", "unknown");
	else
		add_time(o, "expectedStart", g->expected_start_s);
	if (!known)
		cJSON_AddNullToObject(o, "expectedStartFrom");
	else
		cJSON_AddStringToObject(o, "expectedStartFrom",
		                        g->reserved ? "reservation" : "forecast");
}

/* The forecast the gangs' starts come from: null when none ran. */
static void add_forecast(const struct snap *sn, cJSON *doc)
{
	cJSON *f;

	if (!sn->forecast_at_s) {
		cJSON_AddNullToObject(doc, "forecast");
		return;
	}
	f = cJSON_AddObjectToObject(doc, "forecast");
	add_time(f, "at", sn->forecast_at_s);
	add_time(f, "lookedUntil", sn->forecast_until_s);
	cJSON_AddBoolToObject(f, "complete", !sn->forecast_cut);
}

static cJSON *gang_json(const struct snap *sn, const struct snap_gang *g)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "namespace", g->ns);
	cJSON_AddStringToObject(o, "name", g->name);
	cJSON_AddStringToObject(o, "kind", kind_name[g->kind]);
	if (g->queue == QUEUE_NONE)
		cJSON_AddNullToObject(o, "queue");
	else
		cJSON_AddStringToObject(o, "queue", sn->queues[g->queue].name);
	cJSON_AddNumberToObject(o, "position", g->position);
	cJSON_AddNumberToObject(o, "queuePosition", g->queue_position);
	cJSON_AddStringToObject(o, "state", state_name[g->state]);
	cJSON_AddStringToObject(o, "reason", why_name[g->block.why]);
	if (g->message)
		cJSON_AddStringToObject(o, "message", g->message);
	else
		cJSON_AddNullToObject(o, "message");
	cJSON_AddNumberToObject(o, "priority", g->priority);
	cJSON_AddNumberToObject(o, "minMember", g->min_member);
	cJSON_AddNumberToObject(o, "members", g->bound + g->succeeded + g->npending);
	cJSON_AddNumberToObject(o, "bound", g->bound);
	cJSON_AddNumberToObject(o, "pendingMembers", g->npending);
	add_requests(sn, g, o);
	add_time(o, "created", g->created_s);
	cJSON_AddNumberToObject(o, "waitingSeconds",
	                        sn->time_s > g->created_s ? (double)(sn->time_s - g->created_s)
	                                                  : 0);
	add_reservation(sn, g, o);
	add_start(g, o);
	return o;
}

static void get_gangs(const struct snap *sn, const struct httpd_request *req,
                      struct httpd_response *r)
{
	long limit = query_long(req->query, "limit", 1000, 0, 100000);
	char qbuf[256];
	const char *queue = query_str(req->query, "queue", qbuf, sizeof(qbuf));
	cJSON *doc = header(sn), *arr;
	long n = 0, total = 0;

	arr = cJSON_CreateArray();
	for (size_t k = 0; k < sn->ngangs; k++) {
		const struct snap_gang *g = &sn->gangs[k];

		if (queue && (g->queue == QUEUE_NONE || strcmp(sn->queues[g->queue].name, queue)))
			continue;
		total++;
		if (n < limit) {
			cJSON_AddItemToArray(arr, gang_json(sn, g));
			n++;
		}
	}
	cJSON_AddNumberToObject(doc, "total", (double)total);
	cJSON_AddNumberToObject(doc, "returned", (double)n);
	add_forecast(sn, doc);
	cJSON_AddItemToObject(doc, "gangs", arr);
	send_json(r, 200, doc);
}

/* ---- /debug/nodes ------------------------------------------------------- */

static cJSON *amounts(const struct snap *sn, const int64_t *v, int skip_zero)
{
	cJSON *o = cJSON_CreateObject();

	for (unsigned k = 0; k < sn->nres; k++)
		if (!skip_zero || v[k])
			cJSON_AddNumberToObject(o, sn->res_name[k],
			                        snap_amount(sn->res_name[k], v[k]));
	return o;
}

static cJSON *node_json(const struct snap *sn, const struct snap_node *n)
{
	cJSON *o = cJSON_CreateObject(), *topo, *fr, *map;

	cJSON_AddStringToObject(o, "name", n->name);
	cJSON_AddBoolToObject(o, "ready", n->ready);
	cJSON_AddBoolToObject(o, "schedulable", n->schedulable);
	cJSON_AddItemToObject(o, "allocatable", amounts(sn, n->alloc, 1));
	cJSON_AddItemToObject(o, "used", amounts(sn, n->used, 1));
	cJSON_AddItemToObject(o, "reserved", amounts(sn, n->reserved, 1));
	fr = cJSON_AddArrayToObject(o, "reservedFor");
	for (uint32_t k = 0; k < n->nreserved_for; k++) {
		const struct snap_gang *g = &sn->gangs[n->reserved_for[k]];
		char name[520];

		snprintf(name, sizeof(name), "%s/%s", g->ns, g->name);
		cJSON_AddItemToArray(fr, cJSON_CreateString(name));
	}
	topo = cJSON_AddObjectToObject(o, "topology");
	for (unsigned l = 0; l < sn->nlevels; l++)
		if (n->topo[l])
			cJSON_AddStringToObject(topo, sn->level_name[l], n->topo[l]);
	cJSON_AddItemToObject(o, "gpus", debug_gpus_devices(n));
	if ((map = debug_gpus_cells(sn, n)))
		cJSON_AddItemToObject(o, "gpuMap", map);
	return o;
}

static void get_nodes(const struct snap *sn, const struct httpd_request *req,
                      struct httpd_response *r)
{
	long limit = query_long(req->query, "limit", 10000, 0, 1000000);
	cJSON *doc = header(sn), *arr;

	cJSON_AddNumberToObject(doc, "total", (double)sn->nnodes);
	cJSON_AddNumberToObject(doc, "returned",
	                        (double)((size_t)limit < sn->nnodes ? (size_t)limit : sn->nnodes));
	arr = cJSON_AddArrayToObject(doc, "nodes");
	for (size_t k = 0; k < sn->nnodes && (long)k < limit; k++)
		cJSON_AddItemToArray(arr, node_json(sn, &sn->nodes[k]));
	send_json(r, 200, doc);
}

/* ---- /debug/gpus --------------------------------------------------------- */

static void get_gpus(const struct snap *sn, const struct httpd_request *req,
                     struct httpd_response *r)
{
	cJSON *doc = header(sn);

	(void)req;
	if (debug_gpus_domains(sn, doc) < 0) {
		cJSON_Delete(doc);
		text(r, 500, "out of memory\n");
		return;
	}
	send_json(r, 200, doc);
}

/* ---- /debug/gangs/NS/NAME ----------------------------------------------- */

static const struct snap_gang *find(const struct snap *sn, const char *ns, const char *name)
{
	for (size_t k = 0; k < sn->ngangs; k++) {
		const struct snap_gang *g = &sn->gangs[k];

		if (strcmp(g->ns, ns) == 0 && strcmp(g->name, name) == 0)
			return g;
	}
	/* A single pod's gang is named after the pod; a PodGroup's member
	 * pod finds its gang too. */
	for (size_t k = 0; k < sn->ngangs; k++) {
		const struct snap_gang *g = &sn->gangs[k];

		for (uint32_t p = 0; strcmp(g->ns, ns) == 0 && p < g->npending; p++)
			if (strcmp(g->pods[p], name) == 0)
				return g;
	}
	return NULL;
}

static void get_gang(const struct snap *sn, const struct httpd_request *req,
                     struct httpd_response *r)
{
	const char *rest = req->path + strlen("/debug/gangs/");
	const char *slash = strchr(rest, '/');
	char ns[254], name[254];
	const struct snap_gang *g;
	cJSON *doc;

	if (!slash || slash == rest || (size_t)(slash - rest) >= sizeof(ns) || !slash[1] ||
	    strchr(slash + 1, '/') || strlen(slash + 1) >= sizeof(name)) {
		error_json(r, 400, "want /debug/gangs/NAMESPACE/NAME");
		return;
	}
	memcpy(ns, rest, (size_t)(slash - rest));
	ns[slash - rest] = '\0';
	strcpy(name, slash + 1);
	if (!(g = find(sn, ns, name))) {
		error_json(
		    r, 404,
		    "no waiting gang of that name: it is not Muster's, is bound, or is gone");
		return;
	}
	doc = header(sn);
	cJSON_AddItemToObject(doc, "gang", gang_json(sn, g));
	debug_explain(sn, g, doc);
	send_json(r, 200, doc);
}

/* ---- routes ------------------------------------------------------------- */

static void healthz(const struct debug_view *v, const struct httpd_request *req,
                    struct httpd_response *r)
{
	(void)v;
	(void)req;
	text(r, 200, "ok\n");
}

static void readyz(const struct debug_view *v, const struct httpd_request *req,
                   struct httpd_response *r)
{
	char buf[512];

	(void)req;
	if (!v->cache || !kubeapi_cache_synced(v->cache)) {
		text(r, 503, "not ready: the caches have not synced yet\n");
		return;
	}
	if (!v->elected)
		snprintf(buf, sizeof(buf), "ok\n");
	else if (v->leader)
		snprintf(buf, sizeof(buf), "ok: leader\n");
	else
		snprintf(buf, sizeof(buf), "ok: standby (leader %s)\n",
		         v->holder && v->holder[0] ? v->holder : "unknown");
	text(r, 200, buf);
}

static void metrics(const struct debug_view *v, const struct httpd_request *req,
                    struct httpd_response *r)
{
	int rc;

	(void)req;
	if ((rc = debug_metrics_render(v, &r->body, &r->len)) < 0) {
		text(r, 500, rc == -E2BIG ? "metrics too large\n" : "out of memory\n");
		return;
	}
	r->status = 200;
	r->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

static void page(const struct debug_view *v, const struct httpd_request *req,
                 struct httpd_response *r)
{
	size_t len;
	const char *html = debug_page_html(&len);

	(void)v;
	(void)req;
	r->status = 200;
	r->content_type = "text/html; charset=utf-8";
	if ((r->body = malloc(len)))
		memcpy(r->body, html, len);
	r->len = r->body ? len : 0;
}

typedef void snap_fn(const struct snap *, const struct httpd_request *, struct httpd_response *);

/* The documents need a cycle behind them. */
static void with_snap(const struct debug_view *v, snap_fn *fn, const struct httpd_request *req,
                      struct httpd_response *r)
{
	if (!v->snap) {
		error_json(r, 503,
		           v->leader ? "no cycle has run yet"
		                     : "this instance is a standby: ask the leader");
		return;
	}
	fn(v->snap, req, r);
}

static const struct route {
	const char *path;
	int prefix;
	void (*plain)(const struct debug_view *, const struct httpd_request *,
	              struct httpd_response *);
	snap_fn *doc;
} routes[] = {
    {"/healthz", 0, healthz, NULL},
    {"/livez", 0, healthz, NULL},
    {"/readyz", 0, readyz, NULL},
    {"/metrics", 0, metrics, NULL},
    {"/debug/", 0, page, NULL},
    {"/debug", 0, page, NULL},
    {"/debug/queues", 0, NULL, get_queues},
    {"/debug/gangs", 0, NULL, get_gangs},
    {"/debug/nodes", 0, NULL, get_nodes},
    {"/debug/gpus", 0, NULL, get_gpus},
    {"/debug/gangs/", 1, NULL, get_gang},
};

/* The daemon's state as of this request. */
static void view_of(void *data, struct debug_view *v)
{
	const struct debug_source *src = data;

	memset(v, 0, sizeof(*v));
	src->view(src->data, v);
}

void debug_handle(void *data, const struct httpd_request *req, struct httpd_response *r)
{
	struct debug_view view, *v = &view;

	view_of(data, v);
	for (size_t k = 0; k < sizeof(routes) / sizeof(routes[0]); k++) {
		const struct route *rt = &routes[k];

		if (rt->prefix ? strncmp(req->path, rt->path, strlen(rt->path)) != 0
		               : strcmp(req->path, rt->path) != 0)
			continue;
		if (rt->plain)
			rt->plain(v, req, r);
		else
			with_snap(v, rt->doc, req, r);
		return;
	}
	text(r, 404, "not found: try /debug/, /metrics, /healthz, /readyz\n");
}

void debug_probe_handle(void *data, const struct httpd_request *req, struct httpd_response *r)
{
	struct debug_view view, *v = &view;

	view_of(data, v);
	if (strcmp(req->path, "/readyz") == 0)
		readyz(v, req, r);
	else if (strcmp(req->path, "/healthz") == 0 || strcmp(req->path, "/livez") == 0)
		healthz(v, req, r);
	else
		text(r, 404, "not found: this port serves /healthz, /livez and /readyz\n");
}
