/*
 * Verdicts into words (words.h). Each verdict has one function that says
 * why the gang waits and what would let it in; amounts are written as the
 * queue file writes them (units_format_amount).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/units.h"
#include "policy/plan.h"
#include "policy/words.h"

/* One sentence, formatted, handed on. A sentence longer than the buffer
 * is cut: a kilobyte is ten times the longest one with long names. */
struct out {
	plan_words_fn *fn;
	void *data;
};

__attribute__((format(printf, 3, 4))) static void say(const struct out *o,
                                                      enum plan_words_list list, const char *f, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	o->fn(o->data, list, buf);
}

static void quota(const struct plan_facts *f, const struct out *o)
{
	const char *level = f->cohort ? "cohort" : "queue";
	char used[48], limit[48], need[48], over[48];

	units_format_amount(used, sizeof(used), f->res, f->usage);
	units_format_amount(limit, sizeof(limit), f->res, f->limit);
	units_format_amount(need, sizeof(need), f->res, f->need);
	units_format_amount(over, sizeof(over), f->res, f->usage + f->need - f->limit);
	say(o, PLAN_WORDS_EXPLAIN,
	    "quota: %s %s uses %s of the %s %s it may use (nominal plus what it may borrow); "
	    "the gang needs %s more",
	    level, f->at, used, limit, f->slot, need);
	say(o, PLAN_WORDS_WOULD_ADMIT,
	    "%s %s freed in %s %s: its running gangs ending, or preempted by a queue that "
	    "may preempt",
	    over, f->slot, level, f->at);
	if (f->cohort)
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "or more %s lent into cohort %s (its members' lendingLimit) or a larger "
		    "nominal quota there",
		    f->slot, f->at);
	else
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "or a larger nominal quota or borrowingLimit for queue %s", f->at);
}

bool plan_facts_fragmented(const struct plan_facts *f)
{
	return f->ask > 0 && f->free_total >= f->ask;
}

static void fit(const struct plan_facts *f, const struct out *o)
{
	char a[48], n[48];

	if (f->rejected[POLICY_TAINT])
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "tolerations for the taints of %u node(s) it cannot use now",
		    f->rejected[POLICY_TAINT]);
	if (f->rejected[POLICY_SELECTOR])
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "a node selector or affinity that %u more node(s) match",
		    f->rejected[POLICY_SELECTOR]);
	say(o, PLAN_WORDS_EXPLAIN,
	    "fit: only %u of the %u member(s) it needs together fit; %u node(s) it may use "
	    "lack %s",
	    f->placed, f->members, f->short_nodes, f->res);
	units_format_amount(a, sizeof(a), f->res, f->free_total);
	units_format_amount(n, sizeof(n), f->res, f->ask);
	if (plan_facts_fragmented(f)) {
		say(o, PLAN_WORDS_EXPLAIN,
		    "the cluster has %s %s free in all, enough for the gang's %s, but not in "
		    "the pieces its members need (each member must fit on one node)",
		    a, f->res, n);
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "whole nodes freed as running pods end (the placement packs pods to keep "
		    "nodes whole)");
	} else {
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "%u more member(s) worth of %s free on nodes it may use: running pods "
		    "ending, or more nodes",
		    f->members - f->placed, f->res);
	}
}

static void strict(const struct plan_facts *f, const struct out *o)
{
	say(o, PLAN_WORDS_EXPLAIN, "order: queue %s is StrictFIFO, and the gang at its head waits",
	    f->queue);
	say(o, PLAN_WORDS_WOULD_ADMIT,
	    "the head of queue %s being admitted or removed, or the queue set to "
	    "BestEffortFIFO",
	    f->queue);
}

static void members(const struct plan_facts *f, const struct out *o)
{
	say(o, PLAN_WORDS_EXPLAIN, "members: %u of %u pod(s) exist", f->have, f->min_member);
	if (f->gated)
		say(o, PLAN_WORDS_EXPLAIN, "%u more pod(s) wait for their schedulingGates",
		    f->gated);
	if (f->gated && f->have + f->gated >= f->min_member)
		say(o, PLAN_WORDS_WOULD_ADMIT, "the gated pods' schedulingGates removed");
	else if (f->have < f->min_member)
		say(o, PLAN_WORDS_WOULD_ADMIT, "%u more pod(s) of the gang created (minMember %u)",
		    f->min_member - f->have, f->min_member);
	else
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "its PodGroup created (the pods name one that does not exist)");
}

static void other(const struct plan_facts *f, const struct out *o)
{
	switch (f->why) {
	case PLAN_WHY_TIMEOUT:
		say(o, PLAN_WORDS_EXPLAIN,
		    "timeout: it waited past its timeout (scheduleTimeoutSeconds or the queue's "
		    "gangTimeout) and backs off");
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "the backoff ending (10 s, doubling up to 5 min), then room at its turn");
		break;
	case PLAN_WHY_NO_QUEUE:
		say(o, PLAN_WORDS_EXPLAIN, "queue: %s",
		    f->message ? f->message : "no queue takes it");
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "the label muster.dev/queue naming a queue, a queue listing its namespace, "
		    "or a defaultQueue");
		break;
	case PLAN_WHY_PREEMPTING:
		say(o, PLAN_WORDS_EXPLAIN,
		    "preempting: room is held for it while the gangs it preempted end");
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "its victims' pods ending (their termination grace period)");
		break;
	case PLAN_WHY_ENQUEUE:
		say(o, PLAN_WORDS_EXPLAIN, "minResources: %s",
		    f->message ? f->message : "its PodGroup is not enqueued");
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "its queue's quota (beside the PodGroups already enqueued) or the cluster "
		    "covering the PodGroup's minResources; or smaller minResources");
		break;
	case PLAN_WHY_UNSUPPORTED:
		say(o, PLAN_WORDS_EXPLAIN,
		    "unsupported: pod %s states %s, which Muster does not apply",
		    f->pod ? f->pod : "?", f->constraint ? f->constraint : "a constraint");
		say(o, PLAN_WORDS_WOULD_ADMIT,
		    "the pod without it, or another scheduler (spec.schedulerName) for the pod");
		break;
	default:
		say(o, PLAN_WORDS_EXPLAIN, "not tried in the last cycle");
		say(o, PLAN_WORDS_WOULD_ADMIT, "its turn in the next cycle");
		break;
	}
}

static const char *when(int64_t start_s, char *buf, size_t len);

/* The forecast's start, when it gave one and no reservation says it. */
static void forecast(const struct plan_facts *f, const struct out *o)
{
	char at[32];

	if (f->reserved || !f->forecast || !f->start_s)
		return;
	if (f->start_s == PLAN_NEVER) {
		say(o, PLAN_WORDS_EXPLAIN,
		    "forecast: the start is unknown: the work it waits for declares no runtime");
		return;
	}
	say(o, PLAN_WORDS_EXPLAIN,
	    "forecast: it starts at %s if running work ends when expected and no gang "
	    "comes ahead of it",
	    when(f->start_s, at, sizeof(at)));
}

static void reservation(const struct plan_facts *f, const struct out *o)
{
	char at[32];

	if (!f->reserved) {
		forecast(f, o);
		return;
	}
	if (f->start_s == PLAN_NEVER) {
		say(o, PLAN_WORDS_EXPLAIN,
		    "reservation: it holds %u node(s); the start is unknown because running "
		    "work there declares no runtime",
		    f->resv_nodes);
		return;
	}
	say(o, PLAN_WORDS_EXPLAIN,
	    "reservation: it holds %u node(s) and starts there by %s, when running work "
	    "ends; shorter jobs may backfill until then",
	    f->resv_nodes, when(f->start_s, at, sizeof(at)));
}

void plan_words_explain(const struct plan_facts *f, plan_words_fn *line, void *data)
{
	const struct out o = {line, data};

	switch (f->why) {
	case PLAN_WHY_QUOTA:
		quota(f, &o);
		break;
	case PLAN_WHY_FIT:
		fit(f, &o);
		break;
	case PLAN_WHY_STRICT_FIFO:
		strict(f, &o);
		break;
	case PLAN_WHY_MEMBERS:
		members(f, &o);
		break;
	default:
		other(f, &o);
		break;
	}
	reservation(f, &o);
}

/* ---- the condition message ------------------------------------------ */

/* The nodes' answers to a gang that did not fit: "3 node(s) had
 * untolerated taints, 2 Insufficient nvidia.com/gpu" (kube-scheduler's
 * phrases), into buf. */
static void fit_detail(const struct plan_facts *f, char *buf, size_t cap)
{
	static const char *const what[POLICY_REJECT_COUNT] = {
	    [POLICY_NOT_READY] = "node(s) were not ready",
	    [POLICY_UNSCHEDULABLE] = "node(s) were unschedulable",
	    [POLICY_TAINT] = "node(s) had untolerated taints",
	    [POLICY_SELECTOR] = "node(s) didn't match the node selector or affinity",
	};
	size_t len = 0;

	buf[0] = '\0';
	for (int k = POLICY_NOT_READY; k < POLICY_REJECT_COUNT; k++)
		if (f->rejected[k] && len < cap)
			len += (size_t)snprintf(buf + len, cap - len, "%s%u %s", len ? ", " : "",
			                        f->rejected[k], what[k]);
	if (f->short_nodes && len < cap)
		snprintf(buf + len, cap - len, "%s%u Insufficient %s", len ? ", " : "",
		         f->short_nodes, f->res ? f->res : "resources");
}

static void fit_message(const struct plan_facts *f, char *buf, size_t len)
{
	char detail[512];

	if (f->within && f->within_unknown) {
		snprintf(buf, len,
		         "gang %s/%s: its PodGroup asks for every member in one domain of %s, "
		         "past the %d topology levels Muster keeps",
		         f->ns, f->name, f->within, POLICY_MAX_LEVELS);
		return;
	}
	if (f->within && f->within_none) {
		snprintf(buf, len,
		         "gang %s/%s: its PodGroup asks for every member in one domain of %s, and "
		         "no node has that label",
		         f->ns, f->name, f->within);
		return;
	}
	fit_detail(f, detail, sizeof(detail));
	if (f->within) {
		snprintf(buf, len,
		         "gang %s/%s: no %s domain holds its %u members; 0/%zu nodes are "
		         "available%s%s",
		         f->ns, f->name, f->within, f->members, f->nodes, detail[0] ? ": " : "",
		         detail);
		return;
	}
	snprintf(buf, len, "gang %s/%s: %u of %u members fit; 0/%zu nodes are available%s%s", f->ns,
	         f->name, f->placed, f->members, f->nodes, detail[0] ? ": " : "", detail);
}

static void quota_message(const struct plan_facts *f, char *buf, size_t len)
{
	const char *level = f->cohort ? "cohort" : "queue";
	char used[48], limit[48], need[48];

	units_format_amount(used, sizeof(used), f->res, f->usage);
	units_format_amount(limit, sizeof(limit), f->res, f->limit);
	units_format_amount(need, sizeof(need), f->res, f->need);
	if (f->why == PLAN_WHY_QUOTA)
		snprintf(buf, len, "gang %s/%s: %s %s at %s/%s %s; the gang needs %s more", f->ns,
		         f->name, level, f->at, used, limit, f->slot, need);
	else if (f->cluster)
		snprintf(buf, len,
		         "gang %s/%s: PodGroup minResources ask %s %s; the cluster's ready nodes "
		         "have %s",
		         f->ns, f->name, need, f->res, used);
	else
		snprintf(buf, len,
		         "gang %s/%s: PodGroup minResources need %s %s; %s %s is at %s/%s (running "
		         "and enqueued PodGroups)",
		         f->ns, f->name, need, f->slot, level, f->at, used, limit);
}

static void members_message(const struct plan_facts *f, char *buf, size_t len)
{
	if (f->no_group)
		snprintf(buf, len, "gang %s/%s: PodGroup %s/%s not found", f->ns, f->name, f->ns,
		         f->name);
	else if (f->task)
		snprintf(buf, len, "gang %s/%s: task %s has %u of %d members (minTaskMember)",
		         f->ns, f->name, f->task, f->have, f->task_min);
	else if (f->gated)
		snprintf(
		    buf, len,
		    "gang %s/%s: %u of %u members exist (minMember %u); %u more wait for their "
		    "schedulingGates%s%s%s",
		    f->ns, f->name, f->have, f->min_member, f->min_member, f->gated,
		    f->gated_pod ? " (" : "", f->gated_pod ? f->gated_pod : "",
		    f->gated_pod ? f->gated > 1 ? ", ...)" : ")" : "");
	else
		snprintf(buf, len, "gang %s/%s: %u of %u members exist (minMember %u)", f->ns,
		         f->name, f->have, f->min_member, f->min_member);
}

const char *plan_words_message(const struct plan_facts *f, char *buf, size_t len)
{
	switch (f->why) {
	case PLAN_WHY_QUOTA:
	case PLAN_WHY_ENQUEUE:
		quota_message(f, buf, len);
		break;
	case PLAN_WHY_FIT:
		fit_message(f, buf, len);
		break;
	case PLAN_WHY_MEMBERS:
		members_message(f, buf, len);
		break;
	case PLAN_WHY_UNSUPPORTED:
		snprintf(buf, len,
		         "gang %s/%s: pod %s states %s, which Muster does not apply yet; it waits "
		         "rather than be placed against it",
		         f->ns, f->name, f->pod ? f->pod : "?",
		         f->constraint ? f->constraint : "a constraint");
		break;
	case PLAN_WHY_STRICT_FIFO:
		snprintf(buf, len, "gang %s/%s: queue %s is StrictFIFO and its head %s/%s waits",
		         f->ns, f->name, f->queue, f->head_ns, f->head_name);
		break;
	case PLAN_WHY_TIMEOUT:
		snprintf(
		    buf, len,
		    "gang %s/%s: timed out waiting to be scheduled; backing off before the next "
		    "try",
		    f->ns, f->name);
		break;
	case PLAN_WHY_PREEMPTING:
		if (f->victims)
			snprintf(buf, len, "gang %s/%s: preempting %zu gang(s) to make room: %s",
			         f->ns, f->name, f->nvictims, f->victims);
		else
			snprintf(buf, len,
			         "gang %s/%s: preempting %zu gang(s) to make room: waiting for %u "
			         "pod(s) "
			         "to end",
			         f->ns, f->name, f->nvictims, f->pods_left);
		break;
	default: /* PLAN_WHY_NO_QUEUE: the queue module's reason */
		snprintf(buf, len, "gang %s/%s: %s", f->ns, f->name, f->message ? f->message : "");
		break;
	}
	return buf;
}

/* start_s as RFC 3339 UTC, or "unknown" for PLAN_NEVER. */
static const char *when(int64_t start_s, char *buf, size_t len)
{
	struct tm tm;
	time_t t = (time_t)start_s;

	if (start_s == PLAN_NEVER)
		return "unknown";
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

const char *plan_words_start(const char *msg, int64_t start_s, uint32_t nodes, char *buf,
                             size_t len)
{
	char at[32];

	snprintf(buf, len, "%s; expected start %s (reservation on %u node(s))", msg ? msg : "",
	         when(start_s, at, sizeof(at)), nodes);
	return buf;
}

const char *plan_words_forecast(const char *msg, int64_t start_s, char *buf, size_t len)
{
	char at[32];

	snprintf(buf, len, "%s; expected start %s (forecast)", msg ? msg : "",
	         when(start_s, at, sizeof(at)));
	return buf;
}

const char *plan_words_tail(const char *message)
{
	const char *tail = strstr(message, ": ");

	return tail ? tail + 2 : message;
}

size_t plan_words_prefix(const char *ns, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "gang %s/%s: ", ns, name);

	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len ? len - 1 : 0;
}
