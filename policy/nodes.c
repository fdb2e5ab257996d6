/*
 * The cycle's node table (policy.h): free resources, flavors, topology
 * domains; and the static fit of a pod spec on a node.
 *
 * Memory per node: nres x 8 bytes of free resources (nres is the number
 * of resources the cluster uses, typically 5 to 10), 4 bytes per level,
 * a few bytes more; 5,000 nodes with 8 resources and 4 levels take about
 * 450 KB of arena.
 */
#include "policy/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"

static uint32_t str_id(struct kubeapi_model *m, const char *s)
{
	return s ? intern_find(kubeapi_model_intern(m), s, strlen(s)) : 0;
}

/* The value id of label `key` on labels, or 0 when absent (an empty
 * value has an id of its own, so 0 never means a present label). */
static uint32_t label_value(const struct kubeapi_labels *l, uint32_t key)
{
	return kubeapi_labels_get(l, key);
}

/* The flavors' node labels as string ids, looked up once per table
 * rather than once per node: kv[start[f] .. start[f+1]) are flavor f's. A
 * label no node carries has id 0, which no node label matches. */
struct policy_flavors {
	size_t n;
	size_t *start;
	struct kubeapi_kv *kv;
};

static int flavor_ids(struct arena *a, struct kubeapi_model *m, const struct config *cfg,
                      struct policy_flavors **outp)
{
	size_t nf = cfg ? cfg->n_flavors : 0, total = 0, f, k;
	struct policy_flavors *out = arena_alloc(a, sizeof(*out));

	if (!(*outp = out))
		return -ENOMEM;
	for (f = 0; f < nf; f++)
		total += cfg->flavors[f].n_labels;
	out->n = nf < POLICY_NO_FLAVOR ? nf : POLICY_NO_FLAVOR;
	out->start = arena_alloc(a, (out->n + 1) * sizeof(*out->start));
	out->kv = arena_alloc(a, (total + 1) * sizeof(*out->kv));
	if (!out->start || !out->kv)
		return -ENOMEM;
	for (f = 0, total = 0; f < out->n; f++) {
		const struct config_flavor *fl = &cfg->flavors[f];

		out->start[f] = total;
		for (k = 0; k < fl->n_labels; k++)
			out->kv[total++] = (struct kubeapi_kv){str_id(m, fl->labels[k].key),
			                                       str_id(m, fl->labels[k].value)};
	}
	out->start[out->n] = total;
	return 0;
}

/* The first flavor whose labels the node carries, or POLICY_NO_FLAVOR. */
static uint16_t flavor_of(const struct policy_flavors *fi, const struct kubeapi_node *n)
{
	for (size_t f = 0; f < fi->n; f++) {
		size_t k;

		for (k = fi->start[f]; k < fi->start[f + 1]; k++)
			if (!fi->kv[k].key || !fi->kv[k].value ||
			    label_value(n->labels, fi->kv[k].key) != fi->kv[k].value)
				break;
		if (k == fi->start[f + 1])
			return (uint16_t)f;
	}
	return POLICY_NO_FLAVOR;
}

/* lv->most: per well-known resource, the most one domain's nodes have
 * (t->free is still what they have allocatable). O(nodes). */
static void level_most(const struct policy_nodes *t, struct policy_level *lv)
{
	unsigned nr = t->nres < KUBEAPI_RES_WELL_KNOWN ? t->nres : KUBEAPI_RES_WELL_KNOWN;

	memset(lv->most, 0, sizeof(lv->most));
	for (uint32_t d = 0; d < lv->ndomains; d++)
		for (unsigned r = 0; r < nr; r++) {
			int64_t sum = 0;

			for (uint32_t k = lv->start[d]; k < lv->start[d + 1]; k++)
				sum += t->free[(size_t)lv->members[k] * t->nres + r];
			if (sum > lv->most[r])
				lv->most[r] = sum;
		}
}

/* A node with `free` GPUs counted into (sign +1) or out of (-1) domain
 * d's takes. */
static void count_takes(struct policy_level *lv, uint32_t d, int64_t free, int sign)
{
	uint32_t *k = &lv->takes[(size_t)d * POLICY_TAKES];

	for (unsigned x = 0; free > 0 && x < POLICY_TAKES; x++)
		k[x] += (uint32_t)(sign * (free >> x));
}

/* A node of domain d whose free GPUs went from was to now, counted
 * again into lv's takes. */
static void move_takes(struct policy_level *lv, uint32_t d, int64_t was, int64_t now)
{
	if (!lv->takes || was == now)
		return;
	count_takes(lv, d, was, -1);
	count_takes(lv, d, now, +1);
}

/* Every node of level l counted into its domain's takes (zeroed). */
static void fill_takes(struct policy_nodes *t, unsigned l)
{
	struct policy_level *lv = &t->level[l];

	for (size_t i = 0; lv->takes && i < t->n; i++) {
		uint32_t d = t->domain[i * t->nlevels + l];

		if (d != POLICY_NO_DOMAIN)
			count_takes(lv, d, t->free_gpu[i], +1);
	}
}

/* Whether some domain of lv has more than one node: else a domain's
 * takes say no more than its one node's row, and it keeps none. */
static bool has_groups(const struct policy_level *lv)
{
	for (uint32_t d = 0; d < lv->ndomains; d++)
		if (lv->start[d + 1] - lv->start[d] > 1)
			return true;
	return false;
}

/* Dense domain indexes for one level: value id -> index through a map
 * (arena-free: the map is freed before returning), then CSR of members. */
static int build_level(struct policy_nodes *t, struct arena *a, unsigned l)
{
	struct policy_level *lv = &t->level[l];
	struct idmap ids = {0};
	uint32_t *fill;
	size_t i;

	/* Each domain's label value (there are at most as many domains as
	 * nodes): what policy_nodes_same_row() compares a changed node's
	 * label with. */
	if (!(lv->value = arena_alloc(a, (t->n + 1) * sizeof(*lv->value))))
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		uint32_t v = label_value(t->node[i]->labels, lv->key);
		uintptr_t d;

		t->domain[i * t->nlevels + l] = POLICY_NO_DOMAIN;
		if (!v)
			continue;
		d = (uintptr_t)idmap_get(&ids, v);
		if (!d) {
			lv->value[lv->ndomains] = v;
			d = ++lv->ndomains;
			if (idmap_put(&ids, v, (void *)d) < 0) {
				idmap_free(&ids);
				return -ENOMEM;
			}
		}
		t->domain[i * t->nlevels + l] = (uint32_t)(d - 1);
	}
	idmap_free(&ids);
	lv->start = arena_calloc(a, lv->ndomains + 1, sizeof(*lv->start));
	lv->members = arena_alloc(a, (t->n + 1) * sizeof(*lv->members));
	lv->free_gpu = arena_calloc(a, lv->ndomains + 1, sizeof(*lv->free_gpu));
	lv->free_core = arena_calloc(a, lv->ndomains + 1, sizeof(*lv->free_core));
	lv->empty_gpu = arena_calloc(a, lv->ndomains + 1, sizeof(*lv->empty_gpu));
	fill = arena_calloc(a, lv->ndomains + 1, sizeof(*fill));
	if (!lv->start || !lv->members || !lv->free_gpu || !lv->free_core || !lv->empty_gpu ||
	    !fill)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		uint32_t d = t->domain[i * t->nlevels + l];

		if (d != POLICY_NO_DOMAIN)
			lv->start[d + 1]++;
	}
	for (uint32_t d = 0; d < lv->ndomains; d++)
		lv->start[d + 1] += lv->start[d];
	for (i = 0; i < t->n; i++) {
		uint32_t d = t->domain[i * t->nlevels + l];

		if (d == POLICY_NO_DOMAIN)
			continue;
		lv->members[lv->start[d] + fill[d]++] = (uint32_t)i;
		lv->free_gpu[d] += t->free[i * t->nres + KUBEAPI_RES_GPU];
	}
	if (has_groups(lv) && !(lv->takes = arena_calloc(a, (size_t)lv->ndomains * POLICY_TAKES + 1,
	                                                 sizeof(*lv->takes))))
		return -ENOMEM;
	fill_takes(t, l);
	level_most(t, lv);
	return 0;
}

/* The resources that are GPUs or parts of one: nvidia.com/gpu and what
 * the device plugin renames it to (nvidia.com/gpu.shared, time-slicing's
 * replicas), and MIG slices (nvidia.com/mig-<profile>, mixed strategy).
 * A bit per resource index. */
static uint64_t gpu_resources(const struct policy_nodes *t)
{
	uint64_t mask = 1ull << KUBEAPI_RES_GPU;

	for (unsigned r = KUBEAPI_RES_WELL_KNOWN; r < t->nres && r < 64; r++) {
		const char *name = kubeapi_model_resource_name(t->model, r);

		if (name && (strncmp(name, "nvidia.com/gpu", 14) == 0 ||
		             strncmp(name, "nvidia.com/mig-", 15) == 0))
			mask |= 1ull << r;
	}
	return mask;
}

static void set_allocatable(struct policy_nodes *t, size_t i, uint64_t gpu_mask)
{
	const struct kubeapi_reslist *al = t->node[i]->allocatable;
	int64_t *f = &t->free[i * t->nres];

	t->gpu_node[i] = 0;
	for (uint32_t k = 0; al && k < al->n; k++)
		if (al->e[k].res < t->nres) {
			f[al->e[k].res] = al->e[k].amount;
			t->gpu_node[i] |= al->e[k].res < 64 && (gpu_mask >> al->e[k].res & 1) &&
			                  al->e[k].amount > 0;
		}
}

/* Whether label key `key` is one of t's levels already. */
static bool has_level(const struct policy_nodes *t, uint32_t key)
{
	for (unsigned l = 0; l < t->nlevels; l++)
		if (t->level[l].key == key)
			return true;
	return false;
}

int policy_nodes_build(struct policy_nodes *t, struct arena *a, struct kubeapi_model *m,
                       const struct config *cfg, const uint32_t *extra, size_t nextra,
                       const struct kubeapi_node *const *nodes, size_t n)
{
	const struct config_strings *levels = cfg ? &cfg->topology.levels : NULL;
	struct policy_flavors *fi = NULL;
	uint64_t gpu_mask;
	int rc;

	memset(t, 0, sizeof(*t));
	t->n = n;
	t->model = m;
	t->nres = kubeapi_model_nresources(m);
	if (t->nres < KUBEAPI_RES_WELL_KNOWN)
		t->nres = KUBEAPI_RES_WELL_KNOWN;
	t->unsched_key = str_id(m, "node.kubernetes.io/unschedulable");
	for (size_t l = 0; levels && l < levels->n && t->nlevels < POLICY_MAX_LEVELS; l++) {
		uint32_t key = str_id(m, levels->v[l]);

		if (key) /* a key no node carries is no level */
			t->level[t->nlevels++].key = key;
	}
	t->nsearch = t->nlevels;
	for (size_t k = 0; k < nextra && t->nlevels < POLICY_MAX_LEVELS; k++)
		if (extra[k] && !has_level(t, extra[k]))
			t->level[t->nlevels++].key = extra[k];
	t->node = arena_alloc(a, (n + 1) * sizeof(*t->node));
	t->free = arena_calloc(a, n * t->nres + 1, sizeof(*t->free));
	t->free_cpu = arena_alloc(a, (n + 1) * sizeof(*t->free_cpu));
	t->free_gpu = arena_alloc(a, (n + 1) * sizeof(*t->free_gpu));
	t->domain = arena_alloc(a, (n * t->nlevels + 1) * sizeof(*t->domain));
	t->flavor = arena_alloc(a, (n + 1) * sizeof(*t->flavor));
	t->gpu_node = arena_alloc(a, n + 1);
	if (!t->node || !t->free || !t->free_cpu || !t->free_gpu || !t->domain || !t->flavor ||
	    !t->gpu_node || flavor_ids(a, m, cfg, &fi) < 0)
		return -ENOMEM;
	t->flavors = fi;
	gpu_mask = t->gpu_mask = gpu_resources(t);
	for (size_t i = 0; i < n; i++) {
		t->node[i] = nodes[i];
		set_allocatable(t, i, gpu_mask);
		t->free_cpu[i] = t->free[i * t->nres + KUBEAPI_RES_CPU];
		t->free_gpu[i] = t->free[i * t->nres + KUBEAPI_RES_GPU];
		t->flavor[i] = flavor_of(t->flavors, nodes[i]);
		if (idmap_put(&t->by_name, nodes[i]->name, (void *)(uintptr_t)(i + 1)) < 0)
			return -ENOMEM;
	}
	for (unsigned l = 0; l < t->nlevels; l++)
		if ((rc = build_level(t, a, l)) < 0)
			return rc;
	return policy__nodes_devices(t, a);
}

void policy_nodes_release(struct policy_nodes *t)
{
	if (!t->names_borrowed)
		idmap_free(&t->by_name);
	memset(&t->by_name, 0, sizeof(t->by_name));
	if (t->frag_memo)
		idmap_free(t->frag_memo);
	free(t->frag_memo);
	t->frag_memo = NULL;
}

long policy_nodes_find(const struct policy_nodes *t, uint32_t name)
{
	uintptr_t v = name ? (uintptr_t)idmap_get(&t->by_name, name) : 0;

	return v ? (long)v - 1 : -1;
}

void policy_nodes_prefetch(const struct policy_nodes *t, uint32_t name)
{
	idmap_prefetch(&t->by_name, name);
}

int64_t policy_spec_request(const struct kubeapi_podspec *spec, unsigned res)
{
	const struct kubeapi_res *r = kubeapi_podspec_requests(spec);

	for (unsigned k = 0; k < spec->nrequests; k++)
		if (r[k].res == res)
			return r[k].amount;
	return 0;
}

/* What use() leaves for later: nothing; the node's GPU summary (a
 * count); that and the domains' totals (a tally). */
enum later { LATER_NONE, LATER_ROOM, LATER_LEVELS };

static void use(struct policy_nodes *t, size_t i, const struct kubeapi_podspec *spec,
                const struct policy_held *held, int sign, enum later later)
{
	const struct kubeapi_res *r = kubeapi_podspec_requests(spec);
	int64_t *f = &t->free[i * t->nres];
	int64_t gpus = 0, cores, empty, was = t->free_gpu[i];

	for (unsigned k = 0; k < spec->nrequests; k++) {
		if (r[k].res >= t->nres)
			continue;
		f[r[k].res] += sign * r[k].amount;
		if (r[k].res == KUBEAPI_RES_GPU)
			gpus = r[k].amount;
	}
	f[KUBEAPI_RES_PODS] += sign;
	t->free_cpu[i] = f[KUBEAPI_RES_CPU];
	t->free_gpu[i] = f[KUBEAPI_RES_GPU];
	if (t->free_gpu[i] > was)
		policy__gpu_rose(t, i, was);
	policy__held_use(t, held, sign, &cores, &empty);
	if (held && later == LATER_NONE)
		policy__node_room(t, i);
	else if (held)
		t->room_stale[i] = 1;
	if (later == LATER_LEVELS) {
		t->levels_stale = 1;
		return;
	}
	for (unsigned l = 0; (gpus || cores || empty) && l < t->nlevels; l++) {
		uint32_t d = t->domain[i * t->nlevels + l];

		if (d != POLICY_NO_DOMAIN) {
			t->level[l].free_gpu[d] += sign * gpus;
			t->level[l].free_core[d] += sign * cores;
			t->level[l].empty_gpu[d] += empty;
			move_takes(&t->level[l], d, was, t->free_gpu[i]);
			if (t->level[l].index)
				policy__dindex_update(&t->level[l], d);
		}
	}
}

void policy_nodes_use(struct policy_nodes *t, size_t i, const struct kubeapi_podspec *spec,
                      const struct policy_held *held, int sign)
{
	use(t, i, spec, held, sign, LATER_NONE);
}

void policy_nodes_count(struct policy_nodes *t, size_t i, const struct kubeapi_podspec *spec,
                        const struct policy_held *held, int sign)
{
	use(t, i, spec, held, sign, LATER_ROOM);
}

void policy_nodes_tally(struct policy_nodes *t, size_t i, const struct kubeapi_podspec *spec,
                        const struct policy_held *held, int sign)
{
	use(t, i, spec, held, sign, LATER_LEVELS);
}

/* Node i's free cores on its healthy GPUs and its healthy GPUs with no
 * share: what use() counts into the domains' totals. */
static void node_cores(const struct policy_nodes *t, size_t i, int64_t *cores, int64_t *empty)
{
	*cores = *empty = 0;
	if (!t->gpu_first)
		return;
	for (uint32_t k = t->gpu_first[i]; k < t->gpu_first[i + 1]; k++) {
		if (!t->gpu[k].healthy)
			continue;
		*cores += 100 - (int64_t)t->gpu[k].used_core;
		*empty += t->gpu[k].used_num == 0;
	}
}

/* The domains' totals summed from their nodes once, after a tally: the
 * same sums use() keeps pod by pod, where at the node level every pod
 * read and wrote arrays the size of the cluster at random (a fifth of
 * the count at 100,000 nodes). O(nodes x levels + GPUs). The levels'
 * indexes are made again by the next search. */
static void sum_levels(struct policy_nodes *t)
{
	for (unsigned l = 0; l < t->nlevels; l++) {
		struct policy_level *lv = &t->level[l];

		memset(lv->free_gpu, 0, lv->ndomains * sizeof(*lv->free_gpu));
		memset(lv->free_core, 0, lv->ndomains * sizeof(*lv->free_core));
		memset(lv->empty_gpu, 0, lv->ndomains * sizeof(*lv->empty_gpu));
		if (lv->takes)
			memset(lv->takes, 0,
			       (size_t)lv->ndomains * POLICY_TAKES * sizeof(*lv->takes));
		lv->index = NULL;
		lv->index_tried = 0;
	}
	for (size_t i = 0; i < t->n; i++) {
		int64_t cores, empty;

		node_cores(t, i, &cores, &empty);
		for (unsigned l = 0; l < t->nlevels; l++) {
			uint32_t d = t->domain[i * t->nlevels + l];

			if (d == POLICY_NO_DOMAIN)
				continue;
			t->level[l].free_gpu[d] += t->free_gpu[i];
			t->level[l].free_core[d] += cores;
			t->level[l].empty_gpu[d] += empty;
			if (t->level[l].takes)
				count_takes(&t->level[l], d, t->free_gpu[i], +1);
		}
	}
	t->levels_stale = 0;
}

void policy_nodes_settle_node(struct policy_nodes *t, size_t i)
{
	if (t->room_stale && t->room_stale[i]) {
		policy__node_room(t, i);
		t->room_stale[i] = 0;
	}
}

void policy_nodes_settle(struct policy_nodes *t)
{
	for (size_t i = 0; t->room_stale && i < t->n; i++)
		policy_nodes_settle_node(t, i);
	if (t->levels_stale)
		sum_levels(t);
}

void policy_nodes_adjust(struct policy_nodes *t, size_t i, unsigned res, int64_t delta)
{
	int64_t was = t->free_gpu[i];

	if (res >= t->nres)
		return;
	t->free[i * t->nres + res] += delta;
	t->free_cpu[i] = t->free[i * t->nres + KUBEAPI_RES_CPU];
	t->free_gpu[i] = t->free[i * t->nres + KUBEAPI_RES_GPU];
	if (t->free_gpu[i] > was)
		policy__gpu_rose(t, i, was);
	for (unsigned l = 0; res == KUBEAPI_RES_GPU && l < t->nlevels; l++) {
		uint32_t d = t->domain[i * t->nlevels + l];

		if (d == POLICY_NO_DOMAIN)
			continue;
		t->level[l].free_gpu[d] += delta;
		move_takes(&t->level[l], d, was, t->free_gpu[i]);
		if (t->level[l].index)
			policy__dindex_update(&t->level[l], d);
	}
}

/* bytes of src into dst when rows is set; else dst is left as it is,
 * for policy_nodes_assign() to fill (it copies the per-node counts). */
static void copy_rows(void *dst, const void *src, size_t bytes, bool rows)
{
	if (rows)
		memcpy(dst, src, bytes);
}

/* policy_nodes_copy(), with the rows' counts copied or (rows false) left
 * to an assign. */
static int copy_table(struct policy_nodes *dst, const struct policy_nodes *src, struct arena *a,
                      bool rows)
{
	*dst = *src;
	memset(&dst->by_name, 0, sizeof(dst->by_name)); /* lookups go to src */
	dst->free = arena_alloc(a, (src->n * src->nres + 1) * sizeof(*dst->free));
	if (!dst->free)
		return -ENOMEM;
	copy_rows(dst->free, src->free, src->n * src->nres * sizeof(*dst->free), rows);
	if (!(dst->free_cpu = arena_alloc(a, (src->n + 1) * sizeof(*dst->free_cpu))))
		return -ENOMEM;
	copy_rows(dst->free_cpu, src->free_cpu, src->n * sizeof(*dst->free_cpu), rows);
	if (!(dst->free_gpu = arena_alloc(a, (src->n + 1) * sizeof(*dst->free_gpu))))
		return -ENOMEM;
	copy_rows(dst->free_gpu, src->free_gpu, src->n * sizeof(*dst->free_gpu), rows);
	dst->gpu = arena_alloc(a, (src->gpu_first[src->n] + 1) * sizeof(*dst->gpu));
	if (!dst->gpu)
		return -ENOMEM;
	/* Always: a GPU's entry holds what it is (its UUID) beside its use,
	 * and the walk reads the UUIDs before the assign (shares.c). */
	memcpy(dst->gpu, src->gpu, src->gpu_first[src->n] * sizeof(*dst->gpu));
	dst->gpu_room = arena_alloc(a, src->n + 1);
	dst->gpu_empty = arena_alloc(a, src->n + 1);
	if (!dst->gpu_room || !dst->gpu_empty)
		return -ENOMEM;
	copy_rows(dst->gpu_room, src->gpu_room, src->n, rows);
	copy_rows(dst->gpu_empty, src->gpu_empty, src->n, rows);
	if (src->room_stale && !(dst->room_stale = arena_alloc(a, src->n + 1)))
		return -ENOMEM;
	if (src->room_stale)
		memcpy(dst->room_stale, src->room_stale, src->n);
	dst->node_memo = NULL; /* its versions part from src's from here */
	dst->scratch = NULL;
	if (!(dst->gpu_ver = arena_alloc(a, (src->n + 1) * sizeof(*dst->gpu_ver))))
		return -ENOMEM;
	copy_rows(dst->gpu_ver, src->gpu_ver, src->n * sizeof(*dst->gpu_ver), rows);
	for (unsigned l = 0; l < src->nlevels; l++) {
		size_t bytes = (src->level[l].ndomains + 1) * sizeof(int64_t);

		if (!(dst->level[l].free_gpu = arena_alloc(a, bytes)) ||
		    !(dst->level[l].free_core = arena_alloc(a, bytes)) ||
		    !(dst->level[l].empty_gpu = arena_alloc(a, bytes)))
			return -ENOMEM;
		memcpy(dst->level[l].free_gpu, src->level[l].free_gpu, bytes);
		memcpy(dst->level[l].free_core, src->level[l].free_core, bytes);
		memcpy(dst->level[l].empty_gpu, src->level[l].empty_gpu, bytes);
		bytes = (size_t)src->level[l].ndomains * POLICY_TAKES * sizeof(uint32_t);
		if (src->level[l].takes &&
		    !(dst->level[l].takes = arena_alloc(a, bytes + sizeof(uint32_t))))
			return -ENOMEM;
		if (src->level[l].takes)
			memcpy(dst->level[l].takes, src->level[l].takes, bytes);
		dst->level[l].index = NULL; /* src's follows src; a copy makes its own */
		dst->level[l].index_tried = 0;
	}
	return 0;
}

int policy_nodes_copy(struct policy_nodes *dst, const struct policy_nodes *src, struct arena *a)
{
	return copy_table(dst, src, a, true);
}

/* policy_nodes_clone() and policy_nodes_clone_shape(). */
static int clone_table(struct policy_nodes *dst, const struct policy_nodes *base, struct arena *a,
                       bool rows)
{
	int rc = copy_table(dst, base, a, rows);

	/* Whatever the copy got to: the names are base's to free, the
	 * fragmentation memo dst's own (it would grow cycle after cycle). */
	dst->by_name = base->by_name;
	dst->names_borrowed = 1;
	dst->frag_memo = NULL;
	if (rc < 0)
		return rc;
	if (base->frag_memo && !(dst->frag_memo = calloc(1, sizeof(*dst->frag_memo))))
		return -ENOMEM;
	return 0;
}

int policy_nodes_clone(struct policy_nodes *dst, const struct policy_nodes *base, struct arena *a)
{
	return clone_table(dst, base, a, true);
}

int policy_nodes_clone_shape(struct policy_nodes *dst, const struct policy_nodes *base,
                             struct arena *a)
{
	return clone_table(dst, base, a, false);
}

void policy_nodes_reset_row(struct policy_nodes *t, const struct policy_nodes *base, size_t i)
{
	uint32_t first = t->gpu_first[i], n = t->gpu_first[i + 1] - first;

	memcpy(&t->free[i * t->nres], &base->free[i * t->nres], t->nres * sizeof(*t->free));
	t->free_cpu[i] = base->free_cpu[i];
	t->free_gpu[i] = base->free_gpu[i];
	if (t->free_gpu[i] > 0)
		policy__gpu_rose(t, i, 0);
	memcpy(&t->gpu[first], &base->gpu[first], n * sizeof(*t->gpu));
	t->gpu_room[i] = base->gpu_room[i];
	t->gpu_empty[i] = base->gpu_empty[i];
	t->gpu_ver[i] = base->gpu_ver[i];
	if (t->room_stale)
		t->room_stale[i] = 0;
	t->levels_stale = 1;
}

void policy_nodes_assign(struct policy_nodes *dst, const struct policy_nodes *src)
{
	size_t n = src->n;

	memcpy(dst->free, src->free, n * src->nres * sizeof(*dst->free));
	memcpy(dst->free_cpu, src->free_cpu, n * sizeof(*dst->free_cpu));
	memcpy(dst->free_gpu, src->free_gpu, n * sizeof(*dst->free_gpu));
	policy__gpu_lists_stale(dst);
	memcpy(dst->gpu, src->gpu, src->gpu_first[n] * sizeof(*dst->gpu));
	memcpy(dst->gpu_room, src->gpu_room, n);
	memcpy(dst->gpu_empty, src->gpu_empty, n);
	memcpy(dst->gpu_ver, src->gpu_ver, n * sizeof(*dst->gpu_ver));
	if (dst->room_stale && src->room_stale)
		memcpy(dst->room_stale, src->room_stale, n);
	dst->levels_stale = src->levels_stale;
	for (unsigned l = 0; l < src->nlevels; l++) {
		size_t bytes = src->level[l].ndomains * sizeof(int64_t);

		memcpy(dst->level[l].free_gpu, src->level[l].free_gpu, bytes);
		memcpy(dst->level[l].free_core, src->level[l].free_core, bytes);
		memcpy(dst->level[l].empty_gpu, src->level[l].empty_gpu, bytes);
		if (src->level[l].takes)
			memcpy(dst->level[l].takes, src->level[l].takes,
			       (size_t)src->level[l].ndomains * POLICY_TAKES * sizeof(uint32_t));
		dst->level[l].index = NULL; /* made again by the next search */
		dst->level[l].index_tried = 0;
	}
}

size_t policy_nodes_differ(const struct policy_nodes *a, const struct policy_nodes *b)
{
	size_t rows = 0;

	if (a->n != b->n || a->nres != b->nres)
		return a->n > b->n ? a->n : b->n;
	for (size_t i = 0; i < a->n; i++) {
		uint32_t first = a->gpu_first[i], k;
		bool same = memcmp(&a->free[i * a->nres], &b->free[i * a->nres],
		                   a->nres * sizeof(*a->free)) == 0;

		for (k = first; same && k < a->gpu_first[i + 1]; k++)
			same = a->gpu[k].used_num == b->gpu[k].used_num &&
			       a->gpu[k].used_mem == b->gpu[k].used_mem &&
			       a->gpu[k].used_core == b->gpu[k].used_core;
		rows += !same;
	}
	return rows;
}

/* Row i's allocatable (free[], untouched in a table no pod was counted
 * into) and GPU mark against node n's. The resource list is sorted by
 * index, without zeros. */
static bool same_allocatable(const struct policy_nodes *t, size_t i, const struct kubeapi_node *n)
{
	const struct kubeapi_reslist *al = n->allocatable;
	const int64_t *f = &t->free[i * t->nres];
	uint8_t gpu_node = n->gpus && n->gpus->n > 0;
	uint32_t k = 0;

	for (unsigned r = 0; r < t->nres; r++) {
		int64_t want = 0;

		while (al && k < al->n && al->e[k].res < r)
			k++;
		if (al && k < al->n && al->e[k].res == r)
			want = al->e[k].amount;
		if (f[r] != want)
			return false;
		gpu_node |= r < 64 && (t->gpu_mask >> r & 1) && want > 0;
	}
	return gpu_node == t->gpu_node[i];
}

/* Row i's registered GPUs against node n's, as policy__nodes_devices()
 * lays them out (no share on any in such a table). */
static bool same_gpus(const struct policy_nodes *t, size_t i, const struct kubeapi_node *n)
{
	const struct kubeapi_gpus *g = n->gpus;
	uint32_t first = t->gpu_first[i];

	if ((g ? g->n : 0) != t->gpu_first[i + 1] - first)
		return false;
	for (uint32_t k = 0; g && k < g->n; k++) {
		const struct policy_gpu *x = &t->gpu[first + k];

		if (x->uuid != g->e[k].uuid || x->memory != g->e[k].memory ||
		    x->split != g->e[k].split || x->healthy != (g->e[k].healthy && !g->e[k].mig))
			return false;
	}
	return true;
}

bool policy_nodes_same_row(const struct policy_nodes *t, size_t i, const struct kubeapi_node *n)
{
	if (i >= t->n || t->node[i] != n || !same_allocatable(t, i, n) || !same_gpus(t, i, n) ||
	    flavor_of(t->flavors, n) != t->flavor[i] || policy__node_model(t, n) != t->gpu_model[i])
		return false;
	for (unsigned l = 0; l < t->nlevels; l++) {
		uint32_t d = t->domain[i * t->nlevels + l],
		         v = label_value(n->labels, t->level[l].key);

		if (d == POLICY_NO_DOMAIN ? v != 0 : t->level[l].value[d] != v)
			return false;
	}
	return true;
}

bool policy_fits_free(const struct policy_nodes *t, size_t i, const struct kubeapi_podspec *spec)
{
	const struct kubeapi_res *r = kubeapi_podspec_requests(spec);
	const int64_t *f = &t->free[i * t->nres];

	if (f[KUBEAPI_RES_PODS] < 1)
		return false;
	for (unsigned k = 0; k < spec->nrequests; k++)
		/* A resource the model registered after the table was built
		 * is one no node in the table has. */
		if (r[k].amount > 0 && (r[k].res >= t->nres || f[r[k].res] < r[k].amount))
			return false;
	return true;
}

/* ---- static fit ------------------------------------------------------ */

static bool tolerates(const struct kubeapi_podspec *s, const struct kubeapi_taint *taint)
{
	const struct kubeapi_toleration *tol = kubeapi_podspec_tolerations(s);

	for (unsigned k = 0; k < s->ntolerations; k++) {
		if (tol[k].effect != KUBEAPI_EFFECT_ANY && tol[k].effect != taint->effect)
			continue;
		if (tol[k].op == KUBEAPI_TOL_EXISTS &&
		    (tol[k].key == 0 || tol[k].key == taint->key))
			return true;
		if (tol[k].op == KUBEAPI_TOL_EQUAL && tol[k].key == taint->key &&
		    tol[k].value == taint->value)
			return true;
	}
	return false;
}

static bool taints_ok(const struct kubeapi_podspec *s, const struct kubeapi_taints *taints)
{
	for (uint32_t k = 0; taints && k < taints->n; k++) {
		const struct kubeapi_taint *t = &taints->e[k];

		if (t->effect == KUBEAPI_EFFECT_PREFER_NO_SCHEDULE)
			continue;
		if (!tolerates(s, t))
			return false;
	}
	return true;
}

enum policy_reject policy_node_admits(const struct policy_nodes *t, size_t i,
                                      const struct kubeapi_podspec *spec)
{
	const struct kubeapi_node *n = t->node[i];

	if (!n->ready)
		return POLICY_NOT_READY;
	if (n->unschedulable) {
		struct kubeapi_taint u = {.key = t->unsched_key,
		                          .effect = KUBEAPI_EFFECT_NO_SCHEDULE};

		if (!t->unsched_key || !tolerates(spec, &u))
			return POLICY_UNSCHEDULABLE;
	}
	if (!taints_ok(spec, n->taints))
		return POLICY_TAINT;
	if (!kubeapi_podspec_node_matches(t->model, spec, n))
		return POLICY_SELECTOR;
	return POLICY_OK;
}

int32_t policy_preferred_score(const struct policy_nodes *t, size_t i,
                               const struct kubeapi_podspec *spec)
{
	const struct kubeapi_term *terms = kubeapi_podspec_terms(spec) + spec->nrequired;
	int32_t score = 0;

	for (unsigned k = 0; k < spec->npreferred; k++)
		if (kubeapi_podspec_term_matches(t->model, spec, &terms[k], t->node[i]))
			score += terms[k].weight;
	return score;
}

/* The parts of a spec that decide static fit: tolerations, nodeSelector,
 * affinity terms, requirements and values; not the requests. Pods that
 * differ only in what they request share one fit. */
struct static_part {
	const void *p[5];
	size_t len[5];
};

static struct static_part static_part(const struct kubeapi_podspec *s)
{
	struct static_part sp = {
	    {kubeapi_podspec_tolerations(s), kubeapi_podspec_selector(s), kubeapi_podspec_terms(s),
	     kubeapi_podspec_requirements(s), kubeapi_podspec_values(s)},
	    {s->ntolerations * sizeof(struct kubeapi_toleration),
	     s->nselector * sizeof(struct kubeapi_kv),
	     (size_t)(s->nrequired + s->npreferred) * sizeof(struct kubeapi_term),
	     s->nrequirements * sizeof(struct kubeapi_requirement), s->nvalues * sizeof(uint32_t)},
	};
	return sp;
}

static uint64_t static_hash(const struct kubeapi_podspec *s)
{
	struct static_part sp = static_part(s);
	uint64_t h = 0xcbf29ce484222325ull ^ s->nrequired;

	for (int k = 0; k < 5; k++) {
		const unsigned char *b = sp.p[k];

		h = (h ^ sp.len[k]) * 0x100000001b3ull;
		for (size_t i = 0; i < sp.len[k]; i++)
			h = (h ^ b[i]) * 0x100000001b3ull;
	}
	return h ? h : 1; /* key 0 is reserved in the map */
}

static bool same_static(const struct kubeapi_podspec *a, const struct kubeapi_podspec *b)
{
	struct static_part x = static_part(a), y = static_part(b);

	if (a->nrequired != b->nrequired)
		return false;
	for (int k = 0; k < 5; k++)
		if (x.len[k] != y.len[k] || memcmp(x.p[k], y.p[k], x.len[k]) != 0)
			return false;
	return true;
}

static struct policy_fit *compute_fit(struct arena *a, const struct policy_nodes *t,
                                      const struct kubeapi_podspec *spec)
{
	struct policy_fit *f = arena_calloc(a, 1, sizeof(*f));

	if (!f)
		return NULL;
	f->spec = spec;
	f->bits = arena_calloc(a, t->n / 64 + 1, sizeof(*f->bits));
	f->nodes = arena_alloc(a, (t->n + 1) * sizeof(*f->nodes));
	if (!f->bits || !f->nodes)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		enum policy_reject why = policy_node_admits(t, i, spec);

		f->rejected[why]++;
		if (why != POLICY_OK)
			continue;
		f->bits[i / 64] |= 1ull << (i % 64);
		f->nodes[f->count++] = (uint32_t)i;
	}
	return f;
}

/* Memoized by the static part's hash, checked byte for byte: a collision
 * (two different static parts, one hash) gets a fit of its own, uncached. */
static const struct policy_fit *fit_of(struct policy_fitcache *fc, struct arena *a,
                                       const struct policy_nodes *t,
                                       const struct kubeapi_podspec *spec)
{
	uint64_t key = static_hash(spec);
	struct policy_fit *f = idmap_get(&fc->map, key);

	if (f && (f->spec == spec || same_static(f->spec, spec)))
		return f;
	if (f)
		return compute_fit(a, t, spec);
	f = compute_fit(a, t, spec);
	if (f && idmap_put(&fc->map, key, f) < 0)
		return NULL;
	return f;
}

const struct policy_fit *policy_fit_get(struct policy_fitcache *fc, struct arena *a,
                                        const struct policy_nodes *t,
                                        const struct kubeapi_podspec *spec)
{
	uintptr_t h = (uintptr_t)spec;
	struct policy_fit_recent *e = &fc->recent[(h >> 4 ^ h >> 12) % POLICY_FIT_RECENT];

	if (e->spec != spec || !e->fit) {
		e->spec = spec;
		e->fit = fit_of(fc, a, t, spec);
	}
	return e->fit;
}

void policy_fitcache_free(struct policy_fitcache *fc)
{
	idmap_free(&fc->map);
	memset(fc->recent, 0, sizeof(fc->recent));
}
