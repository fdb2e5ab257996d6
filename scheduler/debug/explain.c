/*
 * One waiting gang explained (debug.h): which constraint holds it, as
 * data ("blockedBy") and as sentences ("explain"), and what would let it
 * in ("wouldAdmit"). Everything comes from the planner's verdict for the
 * gang in the last cycle (struct plan_block) and the snapshot's totals;
 * nothing is searched again here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "scheduler/debug/debug.h"

__attribute__((format(printf, 2, 3))) static void line(cJSON *arr, const char *f, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
}

static void quota(const struct snap *sn, const struct snap_gang *g, cJSON *by, cJSON *ex, cJSON *to)
{
	const struct plan_block *b = &g->block;
	const struct snap_queue *q = &sn->queues[b->node];
	const char *res = sn->slot_res[b->slot], *slot = sn->slot_name[b->slot];
	const char *level = q->cohort ? "cohort" : "queue";
	const char *name = q->name[0] ? q->name : "root"; /* the unnamed top cohort */
	char used[48], limit[48], need[48], over[48];

	cJSON_AddStringToObject(by, "level", level);
	cJSON_AddStringToObject(by, "at", name);
	cJSON_AddStringToObject(by, "resource", slot);
	cJSON_AddNumberToObject(by, "usage", snap_amount(res, b->usage));
	cJSON_AddNumberToObject(by, "limit", snap_amount(res, b->limit));
	cJSON_AddNumberToObject(by, "need", snap_amount(res, b->need));
	units_format_amount(used, sizeof(used), res, b->usage);
	units_format_amount(limit, sizeof(limit), res, b->limit);
	units_format_amount(need, sizeof(need), res, b->need);
	units_format_amount(over, sizeof(over), res, b->usage + b->need - b->limit);
	line(ex,
	     "quota: %s %s uses %s of the %s %s it may use (nominal plus what it may borrow); "
	     "the gang needs %s more",
	     level, name, used, limit, slot, need);
	line(to,
	     "%s %s freed in %s %s: its running gangs ending, or preempted by a queue that "
	     "may preempt",
	     over, slot, level, name);
	if (q->cohort)
		line(to,
		     "or more %s lent into cohort %s (its members' lendingLimit) or a larger "
		     "nominal quota there",
		     slot, name);
	else
		line(to, "or a larger nominal quota or borrowingLimit for queue %s", name);
}

static int slot_of(const struct snap *sn, const char *res)
{
	for (unsigned k = 0; k < sn->nslots; k++)
		if (strcmp(sn->slot_name[k], res) == 0)
			return (int)k;
	return -1;
}

static void rejected(const struct plan_block *b, cJSON *by, cJSON *to)
{
	static const char *const why[POLICY_REJECT_COUNT] = {
	    [POLICY_NOT_READY] = "notReady",
	    [POLICY_UNSCHEDULABLE] = "unschedulable",
	    [POLICY_TAINT] = "taints",
	    [POLICY_SELECTOR] = "selector",
	};
	cJSON *o = cJSON_AddObjectToObject(by, "rejected");

	for (int k = POLICY_NOT_READY; k < POLICY_REJECT_COUNT; k++)
		if (b->rejected[k])
			cJSON_AddNumberToObject(o, why[k], b->rejected[k]);
	if (b->rejected[POLICY_TAINT])
		line(to, "tolerations for the taints of %u node(s) it cannot use now",
		     b->rejected[POLICY_TAINT]);
	if (b->rejected[POLICY_SELECTOR])
		line(to, "a node selector or affinity that %u more node(s) match",
		     b->rejected[POLICY_SELECTOR]);
}

static void fit(const struct snap *sn, const struct snap_gang *g, cJSON *by, cJSON *ex, cJSON *to)
{
	const struct plan_block *b = &g->block;
	const char *res = b->short_res < sn->nres ? sn->res_name[b->short_res] : "resources";
	int64_t free_total = 0, need = 0;
	int slot = slot_of(sn, res);
	char a[48], n[48];

	for (size_t i = 0; b->short_res < sn->nres && i < sn->nnodes; i++)
		if (sn->nodes[i].ready && sn->nodes[i].schedulable)
			free_total +=
			    sn->nodes[i].alloc[b->short_res] - sn->nodes[i].used[b->short_res];
	if (slot >= 0)
		need = g->req[slot];
	cJSON_AddNumberToObject(by, "placed", b->placed);
	cJSON_AddNumberToObject(by, "members", b->members);
	cJSON_AddNumberToObject(by, "nodes", (double)sn->nnodes);
	cJSON_AddNumberToObject(by, "shortNodes", b->short_nodes);
	cJSON_AddStringToObject(by, "resource", res);
	cJSON_AddNumberToObject(by, "freeInCluster", snap_amount(res, free_total));
	rejected(b, by, to);
	line(ex,
	     "fit: only %u of the %u member(s) it needs together fit; %u node(s) it may use "
	     "lack %s",
	     b->placed, b->members, b->short_nodes, res);
	units_format_amount(a, sizeof(a), res, free_total);
	units_format_amount(n, sizeof(n), res, need);
	if (need > 0 && free_total >= need) {
		cJSON_AddBoolToObject(by, "fragmented", 1);
		line(ex,
		     "the cluster has %s %s free in all, enough for the gang's %s, but not in "
		     "the pieces its members need (each member must fit on one node)",
		     a, res, n);
		line(to, "whole nodes freed as running pods end (the placement packs pods to keep "
		         "nodes whole)");
	} else {
		line(to,
		     "%u more member(s) worth of %s free on nodes it may use: running pods "
		     "ending, or more nodes",
		     b->members - b->placed, res);
	}
}

static void strict(const struct snap *sn, const struct snap_gang *g, cJSON *by, cJSON *ex,
                   cJSON *to)
{
	const char *q = g->queue >= 0 ? sn->queues[g->queue].name : "?";

	cJSON_AddStringToObject(by, "queue", q);
	line(ex, "order: queue %s is StrictFIFO, and the gang at its head waits", q);
	line(to,
	     "the head of queue %s being admitted or removed, or the queue set to "
	     "BestEffortFIFO",
	     q);
}

static void members(const struct snap_gang *g, cJSON *by, cJSON *ex, cJSON *to)
{
	uint32_t have = g->bound + g->succeeded + g->npending;

	cJSON_AddNumberToObject(by, "have", have);
	cJSON_AddNumberToObject(by, "minMember", g->min_member);
	line(ex, "members: %u of %u pod(s) exist", have, g->min_member);
	if (have < g->min_member)
		line(to, "%u more pod(s) of the gang created (minMember %u)", g->min_member - have,
		     g->min_member);
	else
		line(to, "its PodGroup created (the pods name one that does not exist)");
}

static void reservation(const struct snap_gang *g, cJSON *ex)
{
	char when[32];
	time_t t = (time_t)g->expected_start_s;
	struct tm tm;

	if (!g->reserved)
		return;
	if (g->expected_start_s == PLAN_NEVER) {
		line(ex,
		     "reservation: it holds %u node(s); the start is unknown because running "
		     "work there declares no runtime",
		     g->nresv_nodes);
		return;
	}
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	line(ex,
	     "reservation: it holds %u node(s) and starts there by %s, when running work "
	     "ends; shorter jobs may backfill until then",
	     g->nresv_nodes, when);
}

static const char *const constraint_name[] = {
    [PLAN_WHY_NONE] = "none",
    [PLAN_WHY_QUOTA] = "quota",
    [PLAN_WHY_FIT] = "fit",
    [PLAN_WHY_STRICT_FIFO] = "strictFIFO",
    [PLAN_WHY_MEMBERS] = "members",
    [PLAN_WHY_TIMEOUT] = "timeout",
    [PLAN_WHY_NO_QUEUE] = "noQueue",
    [PLAN_WHY_PREEMPTING] = "preempting",
    [PLAN_WHY_ENQUEUE] = "minResources",
};

static void other(const struct snap_gang *g, cJSON *ex, cJSON *to)
{
	switch (g->block.why) {
	case PLAN_WHY_TIMEOUT:
		line(ex,
		     "timeout: it waited past its timeout (scheduleTimeoutSeconds or the queue's "
		     "gangTimeout) and backs off");
		line(to, "the backoff ending (10 s, doubling up to 5 min), then room at its turn");
		break;
	case PLAN_WHY_NO_QUEUE:
		line(ex, "queue: %s", g->message ? g->message : "no queue takes it");
		line(to,
		     "the label muster.dev/queue naming a queue, a queue listing its namespace, "
		     "or a defaultQueue");
		break;
	case PLAN_WHY_PREEMPTING:
		line(ex, "preempting: room is held for it while the gangs it preempted end");
		line(to, "its victims' pods ending (their termination grace period)");
		break;
	case PLAN_WHY_ENQUEUE:
		line(ex, "minResources: %s",
		     g->message ? g->message : "its PodGroup is not enqueued");
		line(to, "its queue's quota (beside the PodGroups already enqueued) or the cluster "
		         "covering the PodGroup's minResources; or smaller minResources");
		break;
	default:
		line(ex, "not tried in the last cycle");
		line(to, "its turn in the next cycle");
		break;
	}
}

static void pods(const struct snap_gang *g, cJSON *doc)
{
	cJSON *arr = cJSON_AddArrayToObject(doc, "pods");

	for (uint32_t k = 0; k < g->npending; k++) {
		cJSON *p = cJSON_CreateObject();

		cJSON_AddStringToObject(p, "name", g->pods[k]);
		cJSON_AddNullToObject(p, "node");
		cJSON_AddStringToObject(p, "phase", "Pending");
		cJSON_AddItemToArray(arr, p);
	}
}

void debug_explain(const struct snap *sn, const struct snap_gang *g, cJSON *doc)
{
	cJSON *by = cJSON_AddObjectToObject(doc, "blockedBy");
	cJSON *ex = cJSON_AddArrayToObject(doc, "explain");
	cJSON *to = cJSON_AddArrayToObject(doc, "wouldAdmit");

	cJSON_AddStringToObject(by, "constraint", constraint_name[g->block.why]);
	switch (g->block.why) {
	case PLAN_WHY_QUOTA:
		quota(sn, g, by, ex, to);
		break;
	case PLAN_WHY_FIT:
		fit(sn, g, by, ex, to);
		break;
	case PLAN_WHY_STRICT_FIFO:
		strict(sn, g, by, ex, to);
		break;
	case PLAN_WHY_MEMBERS:
		members(g, by, ex, to);
		break;
	default:
		other(g, ex, to);
		break;
	}
	reservation(g, ex);
	pods(g, doc);
}
