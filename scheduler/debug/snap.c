/*
 * The snapshot of a cycle for the debug API and /metrics (snap.h).
 *
 * Order of the waiting gangs: the ones the cycle tried, in the order it
 * tried them (the fair-share walk; the next cycle walks the same way
 * unless usage changes), then the ones it did not try (behind a
 * StrictFIFO head, too few members, backing off, no queue) by priority,
 * then age.
 *
 * "lent" (queues only): in each cohort, what its members borrow is taken
 * from the unused, lendable nominal of the others; each lender is shown
 * lending in proportion to what it could lend. Kubernetes' Kueue shows
 * the same quantity per cohort; this spreads it over the lenders.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "kubeapi/decode.h"
#include "scheduler/debug/snap.h"

static const char *str(const struct snap_input *s, uint32_t id)
{
	const char *v = intern_str(kubeapi_model_intern(s->model), id);

	return v ? v : "";
}

double snap_amount(const char *res, int64_t v)
{
	return strcmp(res, "cpu") == 0 ? (double)v / 1000.0 : (double)v;
}

static const char *dup_str(struct arena *a, const char *s)
{
	size_t n = strlen(s ? s : "");
	char *d = arena_alloc(a, n + 1);

	if (d) {
		memcpy(d, s ? s : "", n);
		d[n] = '\0';
	}
	return d;
}

/* ---- queues ------------------------------------------------------------ */

static const struct config_quota *quota_of(const struct config_queue *q,
                                           const struct queue_slot *slot)
{
	for (size_t k = 0; q && k < q->n_quotas; k++)
		if (q->quotas[k].resource == slot->resource && q->quotas[k].flavor == slot->flavor)
			return &q->quotas[k];
	return NULL;
}

static int64_t cohort_weight(const struct config_cohort *c, size_t n, const char *name)
{
	for (size_t k = 0; k < n; k++) {
		int64_t w;

		if (strcmp(c[k].name, name) == 0)
			return c[k].weight;
		if ((w = cohort_weight(c[k].cohorts, c[k].n_cohorts, name)) > 0)
			return w;
	}
	return 0;
}

static int queue_node(const struct snap_input *s, struct snap *sn, int node)
{
	const struct queue_tree *t = queue_set_tree_c(s->qs);
	const struct config_queue *cq = queue_set_queue(s->qs, node);
	struct snap_queue *q = &sn->queues[node];
	struct arena *a = &sn->arena;
	size_t bytes = sn->nslots * sizeof(int64_t);

	q->name = dup_str(a, node ? queue_tree_name(t, node) : "");
	q->parent = node ? queue_tree_parent(t, node) : -1;
	q->cohort = (uint8_t)queue_tree_is_cohort(t, node);
	q->weight = cq     ? cq->weight
	            : node ? cohort_weight(s->cfg->cohorts, s->cfg->n_cohorts, q->name)
	                   : 1;
	q->share = node ? queue_tree_share(t, node, node, NULL) : 0;
	q->nominal = arena_calloc(a, 7, bytes);
	if (!q->name || !q->nominal)
		return -ENOMEM;
	q->borrowing = q->nominal + sn->nslots;
	q->lending = q->borrowing + sn->nslots;
	q->usage = q->lending + sn->nslots;
	q->borrowed = q->usage + sn->nslots;
	q->lent = q->borrowed + sn->nslots;
	q->remembered = q->lent + sn->nslots;
	for (unsigned k = 0; k < sn->nslots; k++) {
		const struct config_quota *cfg = quota_of(cq, queue_set_slot(s->qs, k));

		q->nominal[k] = queue_tree_quota(t, node, k);
		q->usage[k] = queue_tree_demand(t, node, k);
		q->remembered[k] = llround(queue_tree_remembered(t, node, k));
		q->borrowing[k] = cfg && cq ? cfg->borrowing_limit : QUEUE_UNLIMITED;
		q->lending[k] = cfg && cq ? cfg->lending_limit : QUEUE_UNLIMITED;
		if (q->borrowing[k] == CONFIG_UNLIMITED)
			q->borrowing[k] = QUEUE_UNLIMITED;
		if (q->lending[k] == CONFIG_UNLIMITED)
			q->lending[k] = QUEUE_UNLIMITED;
		q->borrowed[k] =
		    node && q->usage[k] > q->nominal[k] ? q->usage[k] - q->nominal[k] : 0;
	}
	return 0;
}

static int64_t lendable(const struct snap_queue *q, unsigned k)
{
	int64_t spare = q->nominal[k] - q->usage[k];

	if (spare <= 0)
		return 0;
	return q->lending[k] != QUEUE_UNLIMITED && q->lending[k] < spare ? q->lending[k] : spare;
}

/* Spread what each cohort's members borrow over its lenders. O(nodes^2)
 * in the worst case, nodes being cohorts and queues (tens). */
static void spread_lent(struct snap *sn)
{
	for (int c = 0; c < sn->nqueues; c++) {
		if (!sn->queues[c].cohort)
			continue;
		for (unsigned k = 0; k < sn->nslots; k++) {
			int64_t borrowed = 0, can = 0;

			for (int i = 1; i < sn->nqueues; i++)
				if (sn->queues[i].parent == c) {
					borrowed += sn->queues[i].borrowed[k];
					can += lendable(&sn->queues[i], k);
				}
			for (int i = 1; can > 0 && i < sn->nqueues; i++)
				if (sn->queues[i].parent == c && !sn->queues[i].cohort)
					sn->queues[i].lent[k] =
					    borrowed >= can
					        ? lendable(&sn->queues[i], k)
					        : (int64_t)((double)lendable(&sn->queues[i], k) *
					                    (double)borrowed / (double)can);
		}
	}
}

static int take_queues(const struct snap_input *s, struct snap *sn)
{
	const struct queue_tree *t = queue_set_tree_c(s->qs);
	int rc;

	sn->nslots = queue_set_nslots(s->qs);
	sn->half_life_ms = queue_tree_half_life(t);
	sn->remembered_at_s = queue_tree_memory_at(t);
	sn->nqueues = queue_tree_size(t);
	sn->slot_name = arena_calloc(&sn->arena, sn->nslots + 1, sizeof(char *));
	sn->slot_res = arena_calloc(&sn->arena, sn->nslots + 1, sizeof(char *));
	sn->queues = arena_calloc(&sn->arena, (size_t)sn->nqueues, sizeof(*sn->queues));
	if (!sn->slot_name || !sn->slot_res || !sn->queues)
		return -ENOMEM;
	for (unsigned k = 0; k < sn->nslots; k++) {
		const struct queue_slot *sl = queue_set_slot(s->qs, k);
		const char *res = s->cfg->resources.v[sl->resource];
		char buf[2 * CONFIG_MAX_STRING + 2];

		queue_set_slot_name(s->qs, k, buf, sizeof(buf));
		if (!(sn->slot_name[k] = dup_str(&sn->arena, buf)) ||
		    !(sn->slot_res[k] = dup_str(&sn->arena, res)))
			return -ENOMEM;
	}
	for (int node = 0; node < sn->nqueues; node++)
		if ((rc = queue_node(s, sn, node)) < 0)
			return rc;
	spread_lent(sn);
	return 0;
}

/* ---- nodes ------------------------------------------------------------- */

/* Node i's registered GPUs as the cycle left them. */
static int take_gpus(const struct snap_input *s, struct snap *sn, size_t i)
{
	const struct policy_nodes *t = &s->plan->nodes;
	struct snap_node *n = &sn->nodes[i];
	size_t ng;
	const struct policy_gpu *g = policy_nodes_gpus(t, i, &ng);

	if (!ng)
		return 0;
	if (!(n->gpus = arena_calloc(&sn->arena, ng, sizeof(*n->gpus))))
		return -ENOMEM;
	n->ngpus = (uint32_t)ng;
	for (size_t k = 0; k < ng; k++) {
		n->gpus[k] = (struct snap_gpu){
		    .uuid = dup_str(&sn->arena, str(s, t->node[i]->gpus->e[k].uuid)),
		    .memory = g[k].memory,
		    .split = g[k].split,
		    .used_num = g[k].used_num,
		    .used_mem = g[k].used_mem,
		    .used_core = g[k].used_core,
		    .healthy = g[k].healthy,
		};
		if (!n->gpus[k].uuid)
			return -ENOMEM;
	}
	return 0;
}

static int take_node(const struct snap_input *s, struct snap *sn, size_t i)
{
	const struct policy_nodes *t = &s->plan->nodes;
	const struct kubeapi_node *kn = t->node[i];
	struct snap_node *n = &sn->nodes[i];
	struct arena *a = &sn->arena;

	n->name = dup_str(a, str(s, kn->name));
	n->ready = kn->ready;
	n->schedulable = !kn->unschedulable;
	n->alloc = arena_calloc(a, 3 * (size_t)sn->nres, sizeof(int64_t));
	n->topo = arena_calloc(a, sn->nlevels + 1, sizeof(char *));
	if (!n->name || !n->alloc || !n->topo)
		return -ENOMEM;
	n->used = n->alloc + sn->nres;
	n->reserved = n->used + sn->nres;
	for (uint32_t k = 0; kn->allocatable && k < kn->allocatable->n; k++)
		if (kn->allocatable->e[k].res < sn->nres)
			n->alloc[kn->allocatable->e[k].res] = kn->allocatable->e[k].amount;
	for (unsigned r = 0; r < sn->nres; r++)
		n->used[r] = n->alloc[r] - t->free[i * t->nres + r];
	for (unsigned l = 0; l < sn->nlevels; l++) {
		uint32_t v = kubeapi_labels_get(kn->labels, t->level[l].key);

		if (v && !(n->topo[l] = dup_str(a, str(s, v))))
			return -ENOMEM;
	}
	return take_gpus(s, sn, i);
}

static int take_nodes(const struct snap_input *s, struct snap *sn)
{
	const struct policy_nodes *t = &s->plan->nodes;
	struct kubeapi_model *m = s->model;
	int rc;

	sn->nres = t->nres;
	sn->nlevels = t->nsearch; /* the configured levels; not constraint-only ones */
	sn->nnodes = t->n;
	sn->res_name = arena_calloc(&sn->arena, sn->nres + 1, sizeof(char *));
	sn->level_name = arena_calloc(&sn->arena, sn->nlevels + 1, sizeof(char *));
	sn->nodes = arena_calloc(&sn->arena, sn->nnodes + 1, sizeof(*sn->nodes));
	if (!sn->res_name || !sn->level_name || !sn->nodes)
		return -ENOMEM;
	for (unsigned r = 0; r < sn->nres; r++) {
		const char *name = kubeapi_model_resource_name(m, r);

		if (!(sn->res_name[r] = dup_str(&sn->arena, name ? name : "?")))
			return -ENOMEM;
	}
	for (unsigned l = 0; l < sn->nlevels; l++)
		if (!(sn->level_name[l] = dup_str(&sn->arena, str(s, t->level[l].key))))
			return -ENOMEM;
	for (size_t i = 0; i < sn->nnodes; i++)
		if ((rc = take_node(s, sn, i)) < 0)
			return rc;
	return 0;
}

/* ---- gangs ------------------------------------------------------------- */

static bool listed(const struct plan_gang *g)
{
	return g->npending > 0 && g->state != PLAN_RUNNING && g->state != PLAN_ADMITTED;
}

static bool admitted(const struct plan_gang *g)
{
	return g->bound > 0 || g->state == PLAN_ADMITTED;
}

/* Tried first, in the order tried; then by priority, age, name. */
static int by_order(const void *pa, const void *pb, void *arg)
{
	const struct plan_gang *a = *(const struct plan_gang *const *)pa;
	const struct plan_gang *b = *(const struct plan_gang *const *)pb;
	(void)arg;

	if (!a->tried != !b->tried)
		return a->tried ? -1 : 1;
	if (a->tried)
		return a->tried < b->tried ? -1 : 1;
	if (a->priority != b->priority)
		return a->priority > b->priority ? -1 : 1;
	if (a->submitted_s != b->submitted_s)
		return a->submitted_s < b->submitted_s ? -1 : 1;
	return a->key < b->key ? -1 : a->key > b->key;
}

static int take_pods(const struct snap_input *s, struct snap *sn, struct snap_gang *o,
                     const struct plan_gang *g)
{
	o->pods = arena_calloc(&sn->arena, g->npending + 1, sizeof(char *));
	if (!o->pods)
		return -ENOMEM;
	for (uint32_t k = 0; k < g->npending; k++)
		if (!(o->pods[k] = dup_str(&sn->arena, str(s, g->pending[k]->name))))
			return -ENOMEM;
	return 0;
}

static int take_gang(const struct snap_input *s, struct snap *sn, struct snap_gang *o,
                     const struct plan_gang *g)
{
	o->ns = dup_str(&sn->arena, str(s, g->ns));
	o->name = dup_str(&sn->arena, str(s, g->name));
	o->message = g->message ? dup_str(&sn->arena, g->message) : NULL;
	o->req = arena_calloc(&sn->arena, sn->nslots + 1, sizeof(int64_t));
	if (!o->ns || !o->name || (g->message && !o->message) || !o->req)
		return -ENOMEM;
	o->kind = !g->group                                 ? 2
	          : g->group->dialect == KUBEAPI_PG_VOLCANO ? 1
	          : g->group->dialect == KUBEAPI_PG_NATIVE  ? 3
	                                                    : 0;
	o->state = (uint8_t)g->state;
	o->reserved = g->reserved;
	o->forecast = g->forecast;
	o->queue = g->queue;
	o->priority = g->priority == INT32_MIN ? 0 : g->priority;
	o->min_member = g->min_member;
	o->bound = g->bound;
	o->succeeded = g->succeeded;
	o->npending = g->npending;
	o->tried = g->tried;
	o->created_s = g->submitted_s;
	o->expected_start_s = g->expected_start_s;
	o->block = g->block;
	if (g->req)
		memcpy(o->req, g->req, sn->nslots * sizeof(*o->req));
	return take_pods(s, sn, o, g);
}

/* A queue's position counter per tree node, and counts up the tree. */
static void count_gang(struct snap *sn, struct snap_gang *o, uint32_t *qpos)
{
	if (o->queue == QUEUE_NONE)
		return;
	o->queue_position = ++qpos[o->queue];
	for (int n = o->queue; n >= 0; n = sn->queues[n].parent)
		sn->queues[n].pending++;
}

/* The listed gangs in order; listed_at[plan gang index] is its index in
 * sn->gangs + 1, or 0 when not listed. */
static int take_gangs(const struct snap_input *s, struct snap *sn, uint32_t *listed_at)
{
	const struct plan *p = s->plan;
	const struct plan_gang **order = malloc((p->ngangs + 1) * sizeof(*order));
	uint32_t *qpos = arena_calloc(&sn->arena, (size_t)sn->nqueues + 1, sizeof(*qpos));
	size_t n = 0;
	int rc = 0;

	if (!order || !qpos) {
		free(order);
		return -ENOMEM;
	}
	for (size_t k = 0; k < p->ngangs; k++) {
		const struct plan_gang *g = &p->gangs[k];

		if (listed(g))
			order[n++] = g;
		if (admitted(g) && g->queue != QUEUE_NONE) {
			sn->admitted_gangs++;
			for (int q = g->queue; q >= 0; q = sn->queues[q].parent)
				sn->queues[q].admitted++;
		}
	}
	qsort_r(order, n, sizeof(*order), by_order, NULL);
	if (!(sn->gangs = arena_calloc(&sn->arena, n + 1, sizeof(*sn->gangs))))
		rc = -ENOMEM;
	for (size_t k = 0; rc == 0 && k < n; k++) {
		if ((rc = take_gang(s, sn, &sn->gangs[k], order[k])) < 0)
			break;
		sn->gangs[k].position = (uint32_t)k + 1;
		listed_at[order[k] - p->gangs] = (uint32_t)k + 1;
		count_gang(sn, &sn->gangs[k], qpos);
	}
	sn->ngangs = rc == 0 ? n : 0;
	free(order);
	return rc;
}

/* ---- reservations ------------------------------------------------------ */

static int take_reservation(struct snap *sn, const struct plan_reservation *v,
                            const uint32_t *listed_at)
{
	struct snap_gang *o = listed_at[v->gang] ? &sn->gangs[listed_at[v->gang] - 1] : NULL;

	if (!o || !(o->resv_nodes = arena_calloc(&sn->arena, v->nmembers + 1, sizeof(uint32_t))))
		return o ? -ENOMEM : 0;
	for (uint32_t k = 0; k < v->nmembers; k++) {
		struct snap_node *n = &sn->nodes[v->at[k]];
		uint32_t j = 0;

		for (unsigned r = 0; r < sn->nres; r++)
			n->reserved[r] += policy_spec_request(v->specs[k], r);
		while (j < o->nresv_nodes && o->resv_nodes[j] != v->at[k])
			j++;
		if (j == o->nresv_nodes)
			o->resv_nodes[o->nresv_nodes++] = v->at[k];
	}
	for (uint32_t j = 0; j < o->nresv_nodes; j++) {
		struct snap_node *n = &sn->nodes[o->resv_nodes[j]];
		uint32_t *fr = arena_alloc(&sn->arena, (n->nreserved_for + 1) * sizeof(*fr));

		if (!fr)
			return -ENOMEM;
		if (n->nreserved_for)
			memcpy(fr, n->reserved_for, n->nreserved_for * sizeof(*fr));
		fr[n->nreserved_for++] = (uint32_t)(o - sn->gangs);
		n->reserved_for = fr;
	}
	return 0;
}

static int take_all(const struct snap_input *s, struct snap *sn)
{
	uint32_t *listed_at = arena_calloc(&sn->arena, s->plan->ngangs + 1, sizeof(*listed_at));
	int rc;

	if (!listed_at)
		return -ENOMEM;
	if ((rc = take_queues(s, sn)) < 0 || (rc = take_nodes(s, sn)) < 0 ||
	    (rc = take_gangs(s, sn, listed_at)) < 0)
		return rc;
	for (size_t k = 0; k < s->plan->nresv; k++)
		if ((rc = take_reservation(sn, &s->plan->resv[k], listed_at)) < 0)
			return rc;
	return 0;
}

int snap_take(const struct snap_input *s, struct snap *out)
{
	struct snap sn = {0};
	int rc;

	sn.cycle = s->cycle;
	sn.time_s = s->now_s;
	sn.forecast_at_s = s->plan->forecast_at_s;
	sn.forecast_until_s = s->plan->forecast_until_s;
	sn.forecast_cut = s->plan->forecast_cut;
	if ((rc = take_all(s, &sn)) < 0) {
		snap_free(&sn);
		return rc;
	}
	snap_free(out);
	*out = sn;
	return 0;
}

void snap_free(struct snap *sn)
{
	arena_free(&sn->arena);
	memset(sn, 0, sizeof(*sn));
}
