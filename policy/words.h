/*
 * Verdicts into words: the one place that says in sentences why a gang
 * waits and what would let it in.
 *
 * The planner decides as data (struct plan_block); whoever shows it fills
 * struct plan_facts with the names and amounts of its own world (the
 * planner from its run, the debug explanation from its copy of a cycle)
 * and asks for the words here. So the condition message on a pod, the
 * Event, the PodGroup's status and `muster explain` cannot drift apart in
 * what they claim.
 *
 * No I/O and no allocation: sentences are written into the caller's
 * buffer or handed to its callback one by one.
 */
#ifndef MUSTER_POLICY_WORDS_H
#define MUSTER_POLICY_WORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

/* The facts of one waiting gang, written out. Fields a verdict does not
 * use stay zero. */
/* What a member asking vGPUs lacks when the nodes have the resources
 * but no single GPU has room for its share (POLICY_SHORT_VGPU). */
#define PLAN_WORDS_VGPU_ROOM "room on one GPU for a vGPU share"

struct plan_facts {
	uint8_t why;           /* enum plan_why */
	const char *ns, *name; /* the gang, for messages */
	/* PLAN_WHY_QUOTA: where the quota stops it and the amounts there. */
	bool cohort;      /* a cohort, else a queue */
	const char *at;   /* its name ("root" for the unnamed top cohort) */
	const char *slot; /* "nvidia.com/gpu", or with "@flavor" */
	const char *res;  /* QUOTA: the slot's resource; FIT: the one nodes lack */
	int64_t usage, limit, need;
	/* PLAN_WHY_FIT: the best attempt and the nodes' answers. */
	uint32_t placed, members, short_nodes;
	size_t nodes; /* in the node table */
	uint32_t rejected[POLICY_REJECT_COUNT];
	int64_t free_total; /* of res, on ready schedulable nodes */
	int64_t ask;        /* the gang's request of res, 0 when unknown */
	/* A topology constraint's label key (all members in one domain of
	 * it), or NULL; within_none: no node carries that label;
	 * within_unknown: the node table has no level of that key (more
	 * distinct keys than POLICY_MAX_LEVELS). */
	const char *within;
	bool within_none, within_unknown;
	/* PLAN_WHY_STRICT_FIFO: the queue, and its head. */
	const char *queue;
	const char *head_ns, *head_name;
	/* PLAN_WHY_MEMBERS: pods that exist, and minMember; or a task of
	 * minTaskMember short (task, have, task_min); or no PodGroup. */
	uint32_t have, min_member;
	const char *task;
	int32_t task_min;
	bool no_group;
	/* PLAN_WHY_MEMBERS: members held by scheduling gates, one's name
	 * (NULL: not known). */
	uint32_t gated;
	const char *gated_pod;
	/* PLAN_WHY_UNSUPPORTED: the member, and what it states that Muster
	 * does not apply (kubeapi_unsupported_name()). */
	const char *pod, *constraint;
	/* PLAN_WHY_ENQUEUE: the cluster's capacity is short, not a quota. */
	bool cluster;
	/* PLAN_WHY_PREEMPTING: the victims chosen this cycle ("ns/a, ns/b"),
	 * or, holding room, how many and the pods still to end. */
	const char *victims;
	size_t nvictims;
	uint32_t pods_left;
	/* PLAN_WHY_NO_QUEUE, PLAN_WHY_ENQUEUE: the planner's message. */
	const char *message;
	/* A reservation held: its nodes and start (PLAN_NEVER unknown); or,
	 * forecast, the start the forecast gave it (plan.h, step 6). */
	bool reserved, forecast;
	uint32_t resv_nodes;
	int64_t start_s;
};

/* Which list a sentence of plan_words_explain() belongs to. */
enum plan_words_list {
	PLAN_WORDS_EXPLAIN,     /* why it waits */
	PLAN_WORDS_WOULD_ADMIT, /* what would let it in */
};

typedef void plan_words_fn(void *data, enum plan_words_list list, const char *sentence);

/** Is a FIT verdict fragmentation: the cluster has the gang's request of
 *  res free in all, only not in pieces its members can use? */
bool plan_facts_fragmented(const struct plan_facts *f);

/** The condition message for f, "gang NS/NAME: ...", into buf (cut to
 *  len). Returns buf. */
const char *plan_words_message(const struct plan_facts *f, char *buf, size_t len);

/** What a message says after its "gang NS/NAME: ", for another gang
 *  with the same verdict (the planner's memo). */
const char *plan_words_tail(const char *message);

/** "gang NS/NAME: ", the start of every message of that gang, into buf
 *  (cut to len). Returns its length. A tail (plan_words_tail()) after it
 *  says another gang's verdict of this one. */
size_t plan_words_prefix(const char *ns, const char *name, char *buf, size_t len);

/** msg followed by the expected start of a reservation on `nodes` nodes
 *  (PLAN_NEVER: unknown), into buf. Returns buf. */
const char *plan_words_start(const char *msg, int64_t start_s, uint32_t nodes, char *buf,
                             size_t len);

/** The explanation of f, sentence by sentence, to line(data, list, text)
 *  (each text valid during the call only). O(sentences). */
/** msg and "; expected start <time>|unknown (forecast)" into buf: the
 *  start the forecast (plan.h, step 6) gives a waiting gang. */
const char *plan_words_forecast(const char *msg, int64_t start_s, char *buf, size_t len);
void plan_words_explain(const struct plan_facts *f, plan_words_fn *line, void *data);

#endif /* MUSTER_POLICY_WORDS_H */
