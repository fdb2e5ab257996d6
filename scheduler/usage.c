/*
 * Fair sharing's memory kept on the server (fairSharing.halfLife;
 * queue/quota.h says what is remembered), so that a restart or a failover
 * does not forget who used the cluster yesterday.
 *
 * Where: data key "usage.json" of a ConfigMap (--usage-configmap,
 * default muster-fair-share in the instance's namespace), written by
 * server-side apply as field manager "muster".
 *
 * When: read once this instance leads (at start without leader election,
 * else on election), and no cycle runs until the read is back (found,
 * absent or failed: a failure is logged and memory starts from nothing);
 * written by the leader after a cycle, at most once a write period
 * (--usage-write-period, 60 s), and only with a half-life in force.
 * What the last minute added is lost with the process: with a half-life
 * of hours, a minute of usage moves the memory by well under a percent.
 *
 * The document, for each queue and cohort by name and each quota slot by
 * name (so a changed configuration keeps what still matches):
 *
 *   {"version": 1, "at": <unix s>, "halfLifeMs": <ms>,
 *    "nodes": {"team-a": {"nvidia.com/gpu": [<remembered>, <held>]}}}
 *
 * Reading it is bounded: the body is the engine's (max_body), the JSON is
 * parsed once, and every number is checked before the tree takes it.
 * Cost: O(nodes x slots) each way, once a minute.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched.h"

#define USAGE_KEY     "usage.json"
#define USAGE_VERSION 1
/* A ConfigMap holds at most 1 MiB; leave room for its metadata. */
#define USAGE_MAX_DOC (900 * 1024)

/* ---- the document (pure) ------------------------------------------------ */

static cJSON *node_doc(const struct queue_set *qs, int node)
{
	const struct queue_tree *t = queue_set_tree_c(qs);
	cJSON *o = cJSON_CreateObject();
	char name[2 * CONFIG_MAX_STRING + 2];

	for (unsigned k = 0; o && k < queue_set_nslots(qs); k++) {
		double mem = queue_tree_remembered(t, node, k);
		int64_t held = queue_tree_held(t, node, k);
		cJSON *pair;

		if (mem == 0 && held == 0)
			continue;
		queue_set_slot_name(qs, k, name, sizeof(name));
		pair = cJSON_AddArrayToObject(o, name);
		if (!pair || !cJSON_AddItemToArray(pair, cJSON_CreateNumber(mem)) ||
		    !cJSON_AddItemToArray(pair, cJSON_CreateNumber((double)held))) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

int sched_usage_encode(const struct queue_set *qs, char **out)
{
	const struct queue_tree *t = queue_set_tree_c(qs);
	cJSON *doc = cJSON_CreateObject(), *nodes;
	int rc = -ENOMEM;

	*out = NULL;
	if (!doc)
		return -ENOMEM;
	if (queue_tree_memory_at(t) == QUEUE_NO_TIME) {
		cJSON_Delete(doc);
		return -ENOENT; /* nothing remembered yet */
	}
	cJSON_AddNumberToObject(doc, "version", USAGE_VERSION);
	cJSON_AddNumberToObject(doc, "at", (double)queue_tree_memory_at(t));
	cJSON_AddNumberToObject(doc, "halfLifeMs", (double)queue_tree_half_life(t));
	nodes = cJSON_AddObjectToObject(doc, "nodes");
	for (int n = 0; nodes && n < queue_tree_size(t); n++) {
		cJSON *o = node_doc(qs, n);

		if (!o || !cJSON_AddItemToObject(nodes, queue_tree_name(t, n), o)) {
			cJSON_Delete(o);
			goto out;
		}
	}
	if (nodes && (*out = cJSON_PrintUnformatted(doc)))
		rc = strlen(*out) > USAGE_MAX_DOC ? -EFBIG : 0;
out:
	if (rc < 0) {
		free(*out);
		*out = NULL;
	}
	cJSON_Delete(doc);
	return rc;
}

/* One node's slots into the tree; the unknown ones are skipped. */
static int decode_node(struct queue_set *qs, int node, const cJSON *o, int64_t at, size_t *kept)
{
	const cJSON *pair;

	if (!cJSON_IsObject(o))
		return -EPROTO;
	cJSON_ArrayForEach(pair, o)
	{
		const cJSON *m = cJSON_GetArrayItem(pair, 0), *h = cJSON_GetArrayItem(pair, 1);
		int slot = queue_set_find_slot(qs, pair->string);

		if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2 || !cJSON_IsNumber(m) ||
		    !cJSON_IsNumber(h) || !isfinite(m->valuedouble) || m->valuedouble < 0 ||
		    !(h->valuedouble >= 0 && h->valuedouble < 9e18))
			return -EPROTO;
		if (slot < 0)
			continue;
		if (queue_tree_recall(queue_set_tree(qs), node, (unsigned)slot, m->valuedouble,
		                      (int64_t)h->valuedouble, at) < 0)
			return -EPROTO;
		(*kept)++;
	}
	return 0;
}

int sched_usage_decode(struct queue_set *qs, const char *text, size_t len, size_t *kept)
{
	cJSON *doc = cJSON_ParseWithLength(text, len);
	const cJSON *v, *at, *nodes, *o;
	int rc = 0;

	*kept = 0;
	if (!doc)
		return -EPROTO;
	v = cJSON_GetObjectItemCaseSensitive(doc, "version");
	at = cJSON_GetObjectItemCaseSensitive(doc, "at");
	nodes = cJSON_GetObjectItemCaseSensitive(doc, "nodes");
	if (!cJSON_IsNumber(v) || v->valuedouble != USAGE_VERSION || !cJSON_IsNumber(at) ||
	    !(at->valuedouble > 0 && at->valuedouble < 1e12) || !cJSON_IsObject(nodes)) {
		cJSON_Delete(doc);
		return -EPROTO;
	}
	cJSON_ArrayForEach(o, nodes)
	{
		int node = queue_set_find_node(qs, o->string);

		if (node >= 0 &&
		    (rc = decode_node(qs, node, o, (int64_t)at->valuedouble, kept)) < 0)
			break;
	}
	cJSON_Delete(doc);
	return rc;
}

/* ---- on the server ------------------------------------------------------ */

/* The ConfigMap's data key from a GET's body, into the tree. */
static void take(struct sched *s, const struct kubeapi_response *r)
{
	cJSON *cm = cJSON_ParseWithLength(r->body, r->len);
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(cm, "data");
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(data, USAGE_KEY);
	size_t kept = 0;
	int rc = -EPROTO;

	if (cJSON_IsString(text))
		rc = sched_usage_decode(s->qs, text->valuestring, strlen(text->valuestring), &kept);
	if (rc < 0)
		sched_logl(s, SCHED_WARN,
		           "fair-share memory in configmap %s/%s: key %s is not a usage document; "
		           "starting from nothing",
		           s->opt.usage_ns, s->opt.usage_name, USAGE_KEY);
	else
		sched_log(s, "fair-share memory read from configmap %s/%s: %zu amounts",
		          s->opt.usage_ns, s->opt.usage_name, kept);
	cJSON_Delete(cm);
}

static void on_read(void *data, const struct kubeapi_response *r)
{
	struct sched *s = data;

	s->usage.reading = false;
	s->usage.ready = true;
	if (r->err == -ECANCELED)
		return;
	if (r->err == 0 && r->status == 200 && r->body)
		take(s, r);
	else if (r->err == 0 && r->status == 404)
		sched_log(s, "fair-share memory: no configmap %s/%s yet; starting from nothing",
		          s->opt.usage_ns, s->opt.usage_name);
	else
		sched_logl(s, SCHED_WARN,
		           "fair-share memory: reading configmap %s/%s failed (%s, HTTP %ld); "
		           "starting from nothing",
		           s->opt.usage_ns, s->opt.usage_name, r->err ? strerror(-r->err) : "ok",
		           r->status);
	sched_kick(s);
}

void sched_usage_read(struct sched *s)
{
	int rc;

	if (s->usage.ready || s->usage.reading)
		return;
	rc = kubeapi_configmap_get(s->http, s->opt.usage_ns, s->opt.usage_name, on_read, s);
	if (rc < 0) {
		sched_logl(s, SCHED_WARN, "fair-share memory: cannot read configmap %s/%s (%s)",
		           s->opt.usage_ns, s->opt.usage_name, strerror(-rc));
		s->usage.ready = true;
		return;
	}
	s->usage.reading = true;
}

bool sched_usage_ready(const struct sched *s)
{
	return s->usage.ready;
}

static void on_written(void *data, const struct kubeapi_response *r)
{
	struct sched *s = data;

	s->usage.writing = false;
	if (r->err == -ECANCELED)
		return;
	if (r->err == 0 && r->status >= 200 && r->status < 300) {
		s->usage.writes++;
		return;
	}
	s->n.write_errors++;
	sched_logl(
	    s, SCHED_WARN, "fair-share memory: writing configmap %s/%s failed (%s, HTTP %ld)",
	    s->opt.usage_ns, s->opt.usage_name, r->err ? strerror(-r->err) : "ok", r->status);
}

void sched_usage_write(struct sched *s)
{
	uint64_t now = sched_now_ms(s);
	char *doc = NULL;
	int rc;

	if (!queue_tree_half_life(queue_set_tree_c(s->qs)) || s->usage.writing ||
	    (s->usage.written_ms && now < s->usage.written_ms + s->opt.usage_period_ms))
		return;
	s->usage.written_ms = now;
	if ((rc = sched_usage_encode(s->qs, &doc)) == 0)
		rc = kubeapi_configmap_apply(s->http, s->opt.usage_ns, s->opt.usage_name, USAGE_KEY,
		                             doc, on_written, s);
	free(doc);
	if (rc == 0)
		s->usage.writing = true;
	else if (rc != -ENOENT)
		sched_logl(s, SCHED_WARN, "fair-share memory: not written (%s)", strerror(-rc));
}
