/*
 * The pod table (plan_memory.pods): what a cycle needs of every pod, kept
 * from one cycle to the next in a dense array and changed by the pods the
 * input names as changed (plan_input.pod_changes), so that counting the
 * pods (view.c) walks 40-byte records in order instead of every pod's
 * struct, its node's and its gang's map entries, which at 100,000 nodes
 * were most of a cycle in cache misses.
 *
 * Records are grouped by gang when the table is read in full, and a
 * gang's records put in age order (plan__by_age()): the walk then meets
 * a gang's pods in a row and looks the gang up once, and its pending
 * members come in the order a cycle wants them. A pod that arrives later
 * goes to the end in the order it came, marked PLAN_POD_LATE (a gang's
 * new pods mostly arrive together; view.c checks the age order of a
 * gang with such a member, once for a kept run), and once the late
 * records are an eighth of the table they are put back among their
 * gangs' (regroup()); a pod that goes leaves a hole, and the holes are
 * squeezed out once they are a quarter of the table. Each time records
 * move (a read in full, a squeeze, a regroup) the table's layout
 * changes, and with it every gang's kept run of waiting records
 * (view.c), which says where it starts.
 *
 * Cost per cycle: O(changes) to file the changes plus one pass over the
 * records' keys, kept in an array of their own (a bit of a small filter
 * per key, to find the changed ones without a map of every pod; the pass
 * reads 8 bytes a pod where it read the whole record, a twentieth of a
 * steady cycle). O(P) to read every pod when the table is
 * rebuilt (the first cycle, a change feed that ran over, a new set of
 * schedulerNames): the pods' structs once, in the order of their
 * addresses (a radix sort of the pointers), a radix sort by gang and
 * each gang's sort by age. Node
 * indexes are kept in the records while the node table has the same
 * names in the same order; O(N) to check that. Memory: 48 bytes a pod
 * (record and key), and 16 more during a rebuild's sorts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/keyfilter.h"
#include "base/radix.h"
#include "policy/plan_internal.h"

/* The schedulerNames the records' OURS flag was read for. */
static uint64_t schedulers_hash(const struct plan_input *in)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t k = 0; k < in->nschedulers; k++)
		h = (h ^ in->schedulers[k]) * 0x100000001b3ull;
	return h ^ in->nschedulers;
}

static void fill(const struct plan_run *r, struct plan_pod *x, const struct kubeapi_pod *pod)
{
	bool ours = plan__is_ours(r, pod);

	*x = (struct plan_pod){
	    .pod = pod,
	    .spec = pod->spec,
	    .gang = ours && pod->group_source != KUBEAPI_GROUP_NATIVE ? plan__gang_key_of(pod) : 0,
	    .node = pod->node,
	    .index = PLAN_POD_STALE,
	    .priority = plan__pod_priority(pod),
	    .phase = pod->phase,
	    .flags = (uint8_t)((ours ? PLAN_POD_OURS : 0) | (pod->group ? PLAN_POD_GROUP : 0) |
	                       (pod->deleting ? PLAN_POD_DELETING : 0) |
	                       (pod->vgpu ? PLAN_POD_VGPU : 0) | (pod->task ? PLAN_POD_TASK : 0) |
	                       (r->runtime_key && kubeapi_labels_get(pod->muster, r->runtime_key)
	                            ? PLAN_POD_RUNTIME
	                            : 0)),
	};
}

/* Records moved: the gangs' kept runs (view.c), which say where they
 * start, are gone with their arena. */
static void moved(struct plan_podtab *t)
{
	t->layout++;
	arena_reset(&t->runs);
	t->runs_garbage = 0;
}

static int append(const struct plan_run *r, struct plan_podtab *t, const struct kubeapi_pod *pod)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		struct plan_pod *v = realloc(t->v, cap * sizeof(*v));
		uint64_t *keys;

		if (!v)
			return -ENOMEM;
		t->v = v; /* larger than cap says: harmless */
		if (!(keys = realloc(t->keys, cap * sizeof(*keys))))
			return -ENOMEM;
		t->keys = keys;
		t->cap = cap;
	}
	fill(r, &t->v[t->n], pod);
	t->keys[t->n] = kubeapi_pod_key(pod);
	if (t->built) {
		t->v[t->n].flags |= PLAN_POD_LATE;
		t->late++;
	}
	t->n++;
	return 0;
}

/* Move record order[k] to position k for every k, in place: one cycle
 * of the permutation at a time (order[] set to all ones once placed),
 * so the rebuild needs no second table. O(records). */
static void permute(struct plan_pod *v, uint64_t *keys, uint64_t *order, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		struct plan_pod first;
		uint64_t first_key;
		size_t at = k;

		if (order[k] == UINT64_MAX || order[k] == k) {
			order[k] = UINT64_MAX;
			continue;
		}
		first = v[k];
		first_key = keys[k];
		for (;;) {
			size_t from = (size_t)order[at];

			order[at] = UINT64_MAX;
			if (from == k) {
				v[at] = first;
				keys[at] = first_key;
				break;
			}
			v[at] = v[from];
			keys[at] = keys[from];
			at = from;
		}
	}
}

/* How far ahead gather() asks for the record it will copy. */
#define GATHER_AHEAD 8

/* Place k of the order that starts at first and wraps at n. */
static size_t turned(size_t k, size_t first, size_t n)
{
	return k + first < n ? k + first : k + first - n;
}

/* The records in the order of order[first..n) then order[0..first),
 * copied into a new array: each read is a cache miss at random, but none
 * waits for another, where permute()'s cycles chain them (three quarters
 * of the sort at 100,000 nodes, a fifth of the full cycle). Costs a
 * second table while it runs (48 bytes a record and its key); without
 * the memory, permute() in place, the order first turned in spare. */
static void gather(struct plan_podtab *t, const uint64_t *order, size_t first, uint64_t *spare)
{
	struct plan_pod *v = malloc(t->cap * sizeof(*v));
	uint64_t *keys = v ? malloc(t->cap * sizeof(*keys)) : NULL;
	size_t n = t->n;

	first = first < n ? first : 0; /* all of no gang: from the start */
	if (!keys) {
		free(v);
		for (size_t k = 0; k < n; k++)
			spare[k] = order[turned(k, first, n)];
		permute(t->v, t->keys, spare, n);
		return;
	}
	for (size_t k = 0; k < n; k++) {
		size_t at = order[turned(k, first, n)];

		if (k + GATHER_AHEAD < n) {
			const char *p =
			    (const char *)&t->v[order[turned(k + GATHER_AHEAD, first, n)]];

			/* A record may straddle two lines. */
			__builtin_prefetch(p);
			__builtin_prefetch(p + sizeof(*v) - 1);
		}
		v[k] = t->v[at];
		keys[k] = t->keys[at];
	}
	free(t->v);
	free(t->keys);
	t->v = v;
	t->keys = keys;
}

/* Put a gang's records in a row, gangs in key order and records of no
 * gang last: the records' order by gang key (radix_order(), stable, so
 * a gang's pods keep the order they were read in; the bits no key has
 * different dropped, four digits at 5,000 nodes of plan_cycle, five at
 * 100,000), then the records moved. Records of no gang, key 0, come
 * first in that order; the move starts after them. O(records) where a
 * qsort of the records was a quarter of a full cycle. */
static int group_by_gang(struct plan_podtab *t)
{
	uint64_t *v = malloc(t->n * sizeof(*v)), *scratch = malloc(t->n * sizeof(*scratch)), *order;
	size_t none = 0;
	int rc;

	if (!v || !scratch) {
		free(v);
		free(scratch);
		return -ENOMEM;
	}
	for (size_t k = 0; k < t->n; k++) {
		v[k] = t->v[k].gang;
		none += !v[k];
	}
	if ((rc = radix_order(v, scratch, t->n, &order)) == 0)
		gather(t, order, none, order == v ? scratch : v);
	free(v);
	free(scratch);
	return rc;
}

static int record_by_age(const void *a, const void *b)
{
	return plan__by_age(((const struct plan_pod *)a)->pod, ((const struct plan_pod *)b)->pod);
}

/* Each gang's records in plan__by_age() order, the order a cycle wants
 * its pending members in (view.c then checks rather than sorts): every
 * gang's, or (all false) only those of gangs with a record that came
 * late, the others being in order already. O(P log members) once a
 * rebuild. */
static void order_gangs(struct plan_podtab *t, bool all)
{
	for (size_t k = 0, n; k < t->n; k += n) {
		bool sorted = true, late = all || (t->v[k].flags & PLAN_POD_LATE);

		for (n = 1; k + n < t->n && t->v[k + n].gang == t->v[k].gang; n++)
			late |= (t->v[k + n].flags & PLAN_POD_LATE) != 0;
		if (!t->v[k].gang || !late)
			continue;
		for (size_t j = k + 1; sorted && j < k + n; j++)
			sorted = plan__by_age(t->v[j - 1].pod, t->v[j].pod) <= 0;
		if (sorted)
			continue;
		qsort(&t->v[k], n, sizeof(t->v[k]), record_by_age);
		for (size_t j = k; j < k + n; j++) /* the keys follow their records */
			t->keys[j] = kubeapi_pod_key(t->v[j].pod);
	}
}

/* Two pods' structs are at least this many bits of address apart, so
 * the sort by address reads none below: at 100,000 nodes the pods span
 * bits 6 to 29, three digits, where from bit 4 they were four. (Were two
 * closer, they would keep the store's order: only how near their reads
 * are hangs on it.) */
#define POD_APART_BITS 6
_Static_assert(sizeof(struct kubeapi_pod) >= 1u << POD_APART_BITS,
               "pods are apart in the bits the sort by address skips");

/* Every pod of the input appended to t, in the order of their structs'
 * addresses: the store's own order is its hash's, and each pod read in
 * it was a cache and TLB miss at random, the most of a full cycle at
 * 100,000 nodes (plan__is_ours(), the first read of each). In address
 * order the reads run forward through memory, where a pod's neighbours
 * are those created with it (a gang's members, a node's pods). The sort
 * costs a read and a write of 8 bytes a pod a digit; the store's slots
 * are read once, without a branch each (idmap_addresses(): a walk that
 * tested each slot was 5% of the full cycle at 100,000 nodes). */
static int read_store(const struct plan_run *r, struct plan_podtab *t)
{
	size_t n = r->in->pods->n, np;
	uint64_t *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
	const uint64_t *sorted;
	int rc = 0;

	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	np = idmap_addresses(r->in->pods, a);
	sorted = radix_sort(a, b, np, POD_APART_BITS);
	for (size_t k = 0; k < np && rc == 0; k++)
		rc = append(r, t, (const struct kubeapi_pod *)(uintptr_t)sorted[k]);
	free(a);
	free(b);
	return rc;
}

/* Read every pod of the input into t (emptied first). */
static int build(const struct plan_run *r, struct plan_podtab *t)
{
	int rc;

	t->n = t->holes = t->late = 0;
	t->built = 0;
	moved(t);
	if ((rc = read_store(r, t)) < 0)
		return rc;
	if (t->n > 1 && (rc = group_by_gang(t)) < 0)
		return rc;
	order_gangs(t, true);
	t->tail = t->n;
	t->schedulers = schedulers_hash(r->in);
	t->nnames = 0; /* node indexes are looked up again */
	t->built = 1;
	return 0;
}

/* Close the holes, keeping the order. O(records). */
static void squeeze(struct plan_podtab *t)
{
	size_t w = 0, tail = SIZE_MAX;

	for (size_t k = 0; k < t->n; k++) {
		if (k == t->tail)
			tail = w;
		if (t->v[k].pod) {
			t->keys[w] = t->keys[k];
			t->v[w++] = t->v[k];
		}
	}
	t->tail = tail == SIZE_MAX ? w : tail;
	t->n = w;
	t->holes = 0;
	moved(t);
}

/* The late records put back among their gangs' when they are an eighth
 * of the table: holes squeezed out, the records sorted by gang again and
 * the gangs with late ones by age, and no record late any more. Late
 * records sit at the end in the order they came, a gang's among other
 * gangs', so each costs the walk a gang lookup and leaves its gang no
 * kept run (view.c): in a scheduler that has run for a while, every gang
 * created since it started. O(P) a time, amortized over the P / 8
 * arrivals before it; without the memory for the sort, the table stays
 * as it is. */
static void regroup(struct plan_run *r, struct plan_podtab *t)
{
	if (t->late <= t->n / 8)
		return;
	r->p->stats.pods_regrouped = 1;
	if (t->holes)
		squeeze(t);
	if (t->n > 1 && group_by_gang(t) < 0)
		return;
	order_gangs(t, false);
	for (size_t k = 0; k < t->n; k++)
		t->v[k].flags &= (uint8_t)~PLAN_POD_LATE;
	t->late = 0;
	t->tail = t->n;
	moved(t);
}

/* The changed keys: a map (key -> 1, 2 once met in the table) and a
 * filter over it that most records pass without reading the map. */
struct changes {
	struct idmap keys;
	struct keyfilter filter;
};

static int changes_new(const struct plan_input *in, struct changes *c)
{
	memset(c, 0, sizeof(*c));
	if (keyfilter_init(&c->filter, in->npod_changes) < 0 ||
	    idmap_reserve(&c->keys, in->npod_changes) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < in->npod_changes; k++) {
		keyfilter_add(&c->filter, in->pod_changes[k]);
		if (idmap_put(&c->keys, in->pod_changes[k], (void *)1) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void changes_free(struct changes *c)
{
	idmap_free(&c->keys);
	keyfilter_free(&c->filter);
}

static void **changed(struct changes *c, uint64_t key)
{
	if (!keyfilter_may(&c->filter, key))
		return NULL;
	return idmap_get(&c->keys, key) ? idmap_ref(&c->keys, key) : NULL; /* no new entry */
}

/* File the input's changes: records of changed pods read again, of gone
 * ones made holes, pods not in the table appended. */
static int apply(struct plan_run *r, struct plan_podtab *t)
{
	struct changes c;
	size_t n = t->n;
	int rc = changes_new(r->in, &c);

	for (size_t k = 0; rc == 0 && k < n; k++) {
		struct plan_pod *x = &t->v[k];
		const struct kubeapi_pod *pod;
		void **seen;

		/* The keys alone, in a row: a hole's is 0, which no map holds. */
		if (!(seen = changed(&c, t->keys[k])) || !x->pod)
			continue;
		*seen = (void *)2;
		r->p->stats.pods_read++;
		plan__gang_touched(r, x->gang); /* a member changed: its gang's facts may */
		plan__node_touched(r, x->node); /* and what its node has free */
		if ((pod = idmap_get(r->in->pods, t->keys[k]))) {
			uint8_t late = x->flags & PLAN_POD_LATE; /* where it sits is unchanged */
			uint64_t gang = x->gang;

			fill(r, x, pod);
			x->flags |= late;
			/* Moved to another gang, it sits outside that gang's
			 * records: as out of place as a pod that came late. */
			if (x->gang != gang && !late) {
				x->flags |= PLAN_POD_LATE;
				t->late++;
			}
			plan__gang_touched(r, x->gang);
			plan__node_touched(r, x->node);
			continue;
		}
		x->pod = NULL;
		t->keys[k] = 0;
		t->holes++;
	}
	/* In the order the input names them, which is the order they came
	 * in: a gang's pods, created together, then sit together. */
	for (size_t k = 0; rc == 0 && k < r->in->npod_changes; k++) {
		uint64_t key = r->in->pod_changes[k];
		void **seen = idmap_ref(&c.keys, key);
		const struct kubeapi_pod *pod;

		if (!seen || *seen != (void *)1 || !(pod = idmap_get(r->in->pods, key)))
			continue;
		*seen = (void *)2; /* named twice: appended once */
		r->p->stats.pods_read++;
		if ((rc = append(r, t, pod)) == 0) {
			plan__gang_touched(r, t->v[t->n - 1].gang);
			plan__node_touched(r, t->v[t->n - 1].node);
		}
	}
	changes_free(&c);
	if (t->holes > t->n / 4)
		squeeze(t);
	if (rc == 0)
		regroup(r, t);
	return rc;
}

int plan__podtab_sync(struct plan_run *r)
{
	struct plan_podtab *t = &r->keep->pods;
	int rc;

	/* Runs replaced outweigh the rest: keep them afresh. */
	if (t->runs_garbage > 4096 && t->runs_garbage > t->runs.used_total / 2)
		moved(t);
	if (r->in->pods_known && t->built && t->schedulers == schedulers_hash(r->in)) {
		if (r->in->npod_changes && (rc = apply(r, t)) < 0) {
			t->built = 0; /* half filed: read them all next time */
			return rc;
		}
		return 0;
	}
	r->p->stats.pods_rebuilt = 1;
	r->p->stats.pods_read = r->in->pods->n;
	if ((rc = build(r, t)) < 0)
		t->built = 0;
	return rc;
}

int plan__podtab_nodes(struct plan_run *r, bool *still)
{
	struct plan_podtab *t = &r->keep->pods;
	const struct policy_nodes *nodes = &r->p->nodes;
	uint32_t *names;

	*still = t->nnames == nodes->n;
	for (size_t k = 0; *still && k < nodes->n; k++)
		*still = t->names[k] == nodes->node[k]->name;
	if (*still)
		return 0;
	if (!(names = realloc(t->names, (nodes->n + 1) * sizeof(*names)))) {
		t->nnames = 0;
		return -ENOMEM;
	}
	for (size_t k = 0; k < nodes->n; k++)
		names[k] = nodes->node[k]->name;
	t->names = names;
	t->nnames = nodes->n;
	return 0;
}

/* Two records of one pod agree on all a cycle reads (not the node index:
 * the walk looks that up when it is not kept; not PLAN_POD_KEPT_FLAGS). */
static bool same(const struct plan_pod *x, const struct plan_pod *y)
{
	return x->pod == y->pod && x->spec == y->spec && x->gang == y->gang && x->node == y->node &&
	       x->priority == y->priority && x->phase == y->phase &&
	       (x->flags & ~PLAN_POD_KEPT_FLAGS) == (y->flags & ~PLAN_POD_KEPT_FLAGS);
}

/* Records of a fresh read out of gang order (group_by_gang()): a gang's
 * key below the one before it, or after a record of no gang. */
static size_t out_of_order(const struct plan_podtab *t)
{
	size_t n = 0;

	for (size_t k = 1; k < t->n; k++)
		n += t->v[k].gang && (!t->v[k - 1].gang || t->v[k].gang < t->v[k - 1].gang);
	return n;
}

int plan__podtab_check(struct plan_run *r, size_t *mismatches)
{
	const struct plan_podtab *t = &r->keep->pods;
	struct plan_podtab fresh = {0};
	struct idmap at = {0};
	int rc;

	*mismatches = 0;
	if ((rc = build(r, &fresh)) < 0 || (rc = idmap_reserve(&at, fresh.n)) < 0)
		goto out;
	*mismatches += out_of_order(&fresh);
	for (size_t k = 0; k < fresh.n; k++)
		if ((rc = idmap_put(&at, fresh.keys[k], &fresh.v[k])) < 0)
			goto out;
	for (size_t k = 0; k < t->n; k++) {
		const struct plan_pod *y;

		if (!t->v[k].pod)
			continue;
		y = idmap_get(&at, t->keys[k]);
		*mismatches += !y || !same(&t->v[k], y);
		if (y)
			idmap_del(&at, t->keys[k]); /* a pod twice counts once more */
	}
	*mismatches += at.n; /* pods the table lacks */
out:
	idmap_free(&at);
	free(fresh.v);
	free(fresh.keys);
	free(fresh.names);
	return rc;
}
