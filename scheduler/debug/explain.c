/*
 * One waiting gang explained (debug.h): which constraint holds it, as
 * data ("blockedBy"), and in sentences ("explain", "wouldAdmit") that
 * policy/words.c writes from the same facts. Everything comes from the
 * planner's verdict for the gang in the last cycle (struct plan_block)
 * and the snapshot's totals; nothing is searched again here.
 */
#include <string.h>

#include "policy/words.h"
#include "scheduler/debug/debug.h"

static void quota(const struct snap *sn, const struct snap_gang *g, cJSON *by, struct plan_facts *f)
{
	const struct plan_block *b = &g->block;
	const struct snap_queue *q = &sn->queues[b->node];

	f->cohort = q->cohort;
	f->at = q->name[0] ? q->name : "root"; /* the unnamed top cohort */
	f->slot = sn->slot_name[b->slot];
	f->res = sn->slot_res[b->slot];
	f->usage = b->usage;
	f->limit = b->limit;
	f->need = b->need;
	cJSON_AddStringToObject(by, "level", f->cohort ? "cohort" : "queue");
	cJSON_AddStringToObject(by, "at", f->at);
	cJSON_AddStringToObject(by, "resource", f->slot);
	cJSON_AddNumberToObject(by, "usage", snap_amount(f->res, b->usage));
	cJSON_AddNumberToObject(by, "limit", snap_amount(f->res, b->limit));
	cJSON_AddNumberToObject(by, "need", snap_amount(f->res, b->need));
}

static int slot_of(const struct snap *sn, const char *res)
{
	for (unsigned k = 0; k < sn->nslots; k++)
		if (strcmp(sn->slot_name[k], res) == 0)
			return (int)k;
	return -1;
}

static void rejected(const struct plan_block *b, cJSON *by)
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
}

static void fit(const struct snap *sn, const struct snap_gang *g, cJSON *by, struct plan_facts *f)
{
	const struct plan_block *b = &g->block;
	int slot;

	f->res = b->short_res < sn->nres             ? sn->res_name[b->short_res]
	         : b->short_res == POLICY_SHORT_VGPU ? PLAN_WORDS_VGPU_ROOM
	                                             : "resources";
	slot = slot_of(sn, f->res);
	for (size_t i = 0; b->short_res < sn->nres && i < sn->nnodes; i++)
		if (sn->nodes[i].ready && sn->nodes[i].schedulable)
			f->free_total +=
			    sn->nodes[i].alloc[b->short_res] - sn->nodes[i].used[b->short_res];
	if (slot >= 0)
		f->ask = g->req[slot];
	f->placed = b->placed;
	f->members = b->members;
	f->short_nodes = b->short_nodes;
	memcpy(f->rejected, b->rejected, sizeof(f->rejected));
	cJSON_AddNumberToObject(by, "placed", b->placed);
	cJSON_AddNumberToObject(by, "members", b->members);
	cJSON_AddNumberToObject(by, "nodes", (double)sn->nnodes);
	cJSON_AddNumberToObject(by, "shortNodes", b->short_nodes);
	cJSON_AddStringToObject(by, "resource", f->res);
	cJSON_AddNumberToObject(by, "freeInCluster", snap_amount(f->res, f->free_total));
	rejected(b, by);
	if (plan_facts_fragmented(f))
		cJSON_AddBoolToObject(by, "fragmented", 1);
}

static void members(const struct snap_gang *g, cJSON *by, struct plan_facts *f)
{
	f->have = g->bound + g->succeeded + g->npending;
	f->min_member = g->min_member;
	f->gated = g->block.gated;
	cJSON_AddNumberToObject(by, "have", f->have);
	cJSON_AddNumberToObject(by, "minMember", g->min_member);
	if (f->gated)
		cJSON_AddNumberToObject(by, "gated", f->gated);
}

static void unsupported(const struct snap_gang *g, cJSON *by, struct plan_facts *f)
{
	f->pod = g->block.member < g->npending ? g->pods[g->block.member] : NULL;
	f->constraint = kubeapi_unsupported_name(g->block.unsupported);
	if (f->pod)
		cJSON_AddStringToObject(by, "pod", f->pod);
	if (f->constraint)
		cJSON_AddStringToObject(by, "field", f->constraint);
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
    [PLAN_WHY_UNSUPPORTED] = "unsupported",
};

/* The facts of g's verdict, and its "blockedBy" data on the way. */
static void facts(const struct snap *sn, const struct snap_gang *g, cJSON *by, struct plan_facts *f)
{
	f->why = g->block.why;
	f->message = g->message;
	f->reserved = g->reserved;
	f->forecast = g->forecast;
	f->resv_nodes = g->nresv_nodes;
	f->start_s = g->expected_start_s;
	cJSON_AddStringToObject(by, "constraint", constraint_name[g->block.why]);
	switch (g->block.why) {
	case PLAN_WHY_QUOTA:
		quota(sn, g, by, f);
		break;
	case PLAN_WHY_FIT:
		fit(sn, g, by, f);
		break;
	case PLAN_WHY_STRICT_FIFO:
		f->queue = g->queue >= 0 ? sn->queues[g->queue].name : "?";
		cJSON_AddStringToObject(by, "queue", f->queue);
		break;
	case PLAN_WHY_MEMBERS:
		members(g, by, f);
		break;
	case PLAN_WHY_UNSUPPORTED:
		unsupported(g, by, f);
		break;
	default:
		break;
	}
}

/* The two arrays the sentences go to. */
struct lists {
	cJSON *explain, *would_admit;
};

static void add_line(void *data, enum plan_words_list list, const char *sentence)
{
	const struct lists *l = data;

	cJSON_AddItemToArray(list == PLAN_WORDS_EXPLAIN ? l->explain : l->would_admit,
	                     cJSON_CreateString(sentence));
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
	struct lists l = {cJSON_AddArrayToObject(doc, "explain"),
	                  cJSON_AddArrayToObject(doc, "wouldAdmit")};
	struct plan_facts f = {0};

	facts(sn, g, by, &f);
	plan_words_explain(&f, add_line, &l);
	pods(g, doc);
}
