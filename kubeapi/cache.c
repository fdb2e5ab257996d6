/*
 * The cache's stores and the glue from informers to decoders. One table
 * row per kind says where it is served, how to decode it and what its key
 * is; everything else is shared.
 *
 * Memory per stored object: the compact struct plus a 4-byte generation
 * (one allocation), about 23 bytes of store index, and its share of the
 * interned strings and spec blobs (bench/cache-sync measures the total).
 */
#include "kubeapi/cache.h"

#include "kubeapi/decode_internal.h"
#include "kubeapi/journal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A store's row: where the kind is served, how to decode it (the decoder's
 * kind descriptor and its argument) and what its key is. */
struct kind_desc {
	struct kubeapi_kind kind;
	const struct kubeapi__kind *dec;
	enum kubeapi_dialect dialect; /* the decoder's argument for PodGroups */
	uint64_t (*key)(const void *obj);
};

static uint64_t key_node(const void *o)
{
	return kubeapi_cache_key(0, ((const struct kubeapi_node *)o)->name);
}
static uint64_t key_pod(const void *o)
{
	const struct kubeapi_pod *p = o;

	return kubeapi_cache_key(p->ns, p->name);
}
static uint64_t key_pg(const void *o)
{
	const struct kubeapi_podgroup *g = o;

	return kubeapi_cache_key(g->ns, g->name);
}
static uint64_t key_pc(const void *o)
{
	return kubeapi_cache_key(0, ((const struct kubeapi_priorityclass *)o)->name);
}
static uint64_t key_pdb(const void *o)
{
	const struct kubeapi_pdb *d = o;

	return kubeapi_cache_key(d->ns, d->name);
}
static uint64_t key_wl(const void *o)
{
	const struct kubeapi_workload *w = o;

	return kubeapi_cache_key(w->ns, w->name);
}
static uint64_t key_ns(const void *o)
{
	return kubeapi_cache_key(0, ((const struct kubeapi_namespace *)o)->name);
}

static const struct kind_desc kinds[KUBEAPI_STORE_COUNT] = {
    [KUBEAPI_STORE_NODES] = {{"Node", "/api/v1/nodes", false}, &kubeapi__node_kind, 0, key_node},
    [KUBEAPI_STORE_PODS] = {{"Pod", "/api/v1/pods", false}, &kubeapi__pod_kind, 0, key_pod},
    [KUBEAPI_STORE_PODGROUPS] = {{"PodGroup", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", true},
                                 &kubeapi__podgroup_kind,
                                 KUBEAPI_PG_SCHEDULER_PLUGINS,
                                 key_pg},
    [KUBEAPI_STORE_VCJOBS] = {{"PodGroup(volcano)", "/apis/scheduling.volcano.sh/v1beta1/podgroups",
                               true},
                              &kubeapi__podgroup_kind,
                              KUBEAPI_PG_VOLCANO,
                              key_pg},
    [KUBEAPI_STORE_NATIVEPGS] = {{"PodGroup(scheduling.k8s.io)",
                                  "/apis/scheduling.k8s.io/v1beta1/podgroups", true},
                                 &kubeapi__podgroup_kind,
                                 KUBEAPI_PG_NATIVE,
                                 key_pg},
    [KUBEAPI_STORE_WORKLOADS] = {{"Workload", "/apis/scheduling.k8s.io/v1beta1/workloads", true},
                                 &kubeapi__workload_kind,
                                 0,
                                 key_wl},
    [KUBEAPI_STORE_PRIORITYCLASSES] = {{"PriorityClass",
                                        "/apis/scheduling.k8s.io/v1/priorityclasses", false},
                                       &kubeapi__priorityclass_kind,
                                       0,
                                       key_pc},
    [KUBEAPI_STORE_PDBS] = {{"PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets", false},
                            &kubeapi__pdb_kind,
                            0,
                            key_pdb},
    [KUBEAPI_STORE_NAMESPACES] = {{"Namespace", "/api/v1/namespaces", false},
                                  &kubeapi__namespace_kind,
                                  0,
                                  key_ns},
};

struct store {
	struct kubeapi_cache *cache;
	enum kubeapi_store_kind kind;
	const struct kind_desc *desc;
	struct idmap map;
	uint32_t gen;
	struct kubeapi_informer *inf;
	unsigned decode_errors;
	/* Changed keys for kubeapi_cache_changes(), when the kind is
	 * tracked; over: they ran over the cap (v freed). */
	struct {
		uint64_t *v;
		size_t n, cap;
		bool over;
	} changes;
};

struct kubeapi_cache {
	struct kubeapi_model *model;
	struct kubeapi_cache_options opt;
	struct store stores[KUBEAPI_STORE_COUNT];
	unsigned decode_errors;
	unsigned untracked; /* Nodes decoded without some of their resources */
	uint64_t res_gen;   /* the model's resource generation last acted on */
	uint64_t replayed;  /* journaled callbacks applied at release, since start */
	unsigned relisted;  /* stores listed again: their journal ran over */
	unsigned closing;   /* informers still closing */
	/* Held (kubeapi_cache_hold): callbacks go to the journal; stores
	 * whose records ran over its cap (bit per kind) list again. */
	bool held;
	struct kubeapi__journal journal;
	size_t next; /* the journal's first record not yet applied */
	unsigned lost;
	void (*closed_cb)(void *);
	void *closed_data;
};

static uint32_t *gen_of(const struct store *s, void *obj)
{
	return (uint32_t *)((char *)obj + s->desc->dec->size);
}

static void log_line(struct kubeapi_cache *c, const char *msg)
{
	if (c->opt.log)
		c->opt.log(c->opt.data, msg);
	else
		fprintf(stderr, "muster: %s\n", msg);
}

/* A name got a slot since we last looked, and some pod or PodGroup asks
 * for a name no Node offered when it was decoded: list those kinds again,
 * so their requests are read against the table as it is now. Costs one
 * list of each per arrival of a new resource name (a new device plugin,
 * a new MIG profile), only while such requests exist. */
static void resolve_unoffered(struct kubeapi_cache *c)
{
	static const enum kubeapi_store_kind consumers[] = {
	    KUBEAPI_STORE_PODS, KUBEAPI_STORE_PODGROUPS, KUBEAPI_STORE_VCJOBS};
	uint64_t gen = kubeapi_model_resource_gen(c->model);

	if (gen == c->res_gen)
		return;
	c->res_gen = gen;
	if (kubeapi_model_unoffered(c->model) == 0)
		return;
	log_line(c, "a resource name got a slot while some pods or PodGroups ask for names no "
	            "node offered; listing them again");
	for (size_t k = 0; k < sizeof(consumers) / sizeof(consumers[0]); k++)
		kubeapi_informer_relist(c->stores[consumers[k]].inf);
}

/* A Node kept without some of its resources: said each time it is decoded
 * (that is, when it changes), since pods needing those cannot go there. */
static void report_untracked(struct kubeapi_cache *c, const struct kubeapi_decode_error *err)
{
	char line[512];

	c->untracked++;
	snprintf(line, sizeof(line),
	         "%s %s: %u resource name(s) not tracked, first \"%s\" (a Node brings at most %d "
	         "new names and %d fit in all); pods asking for them will not be placed on it",
	         err->kind, err->name, err->untracked, err->untracked_name,
	         KUBEAPI_MAX_NEW_RESOURCES, KUBEAPI_MAX_RESOURCES);
	log_line(c, line);
}

/* Keep key as changed, when the kind is tracked: past the cap, or out of
 * memory, the keys are dropped and the consumer reads everything. */
static void note_change(struct store *s, uint64_t key)
{
	uint64_t *v;
	size_t cap;

	if (!(s->cache->opt.track_changes & 1u << s->kind) || s->changes.over)
		return;
	if (s->changes.n == s->changes.cap) {
		cap = s->changes.cap ? s->changes.cap * 2 : 1024;
		if (s->changes.n >= KUBEAPI_CACHE_CHANGES_MAX ||
		    !(v = realloc(s->changes.v, cap * sizeof(*v)))) {
			free(s->changes.v);
			s->changes.v = NULL;
			s->changes.n = s->changes.cap = 0;
			s->changes.over = true;
			return;
		}
		s->changes.v = v;
		s->changes.cap = cap;
	}
	s->changes.v[s->changes.n++] = key;
}

static void changed(struct store *s, uint64_t key)
{
	note_change(s, key);
	if (s->cache->opt.changed)
		s->cache->opt.changed(s->cache->opt.data, s->kind);
}

bool kubeapi_cache_changes(const struct kubeapi_cache *c, enum kubeapi_store_kind kind,
                           const uint64_t **keys, size_t *n)
{
	const struct store *s = &c->stores[kind];

	*keys = s->changes.v;
	*n = s->changes.n;
	return (c->opt.track_changes & 1u << kind) && !s->changes.over;
}

void kubeapi_cache_changes_clear(struct kubeapi_cache *c, enum kubeapi_store_kind kind)
{
	struct store *s = &c->stores[kind];

	s->changes.n = 0;
	s->changes.over = false;
}

/* ---- informer callbacks ---------------------------------------------------------- */

static void on_log(void *data, const char *msg)
{
	struct store *s = data;

	log_line(s->cache, msg);
}

static void apply_sync_begin(struct store *s)
{
	s->gen++;
}

static void apply_upsert(struct store *s, const cJSON *obj)
{
	struct kubeapi_cache *c = s->cache;
	struct kubeapi_decode_error err;
	union kubeapi__any_object tmp;
	void *old;
	uint64_t key;
	char line[768], ebuf[700];
	int rc = kubeapi__decode(c->model, s->desc->dec, &s->desc->dialect, obj, &tmp, &err);

	if (rc < 0) {
		c->decode_errors++;
		s->decode_errors++;
		if (rc == -ENOMEM)
			snprintf(err.msg, sizeof(err.msg), "out of memory");
		snprintf(line, sizeof(line), "skipping %s",
		         kubeapi_decode_error_str(&err, ebuf, sizeof(ebuf)));
		log_line(c, line);
		return;
	}
	if (err.untracked)
		report_untracked(c, &err);
	if (err.warning[0]) {
		snprintf(line, sizeof(line), "%s %s%s%s: %s", err.kind, err.ns, *err.ns ? "/" : "",
		         err.name, err.warning);
		log_line(c, line);
	}
	resolve_unoffered(c);
	key = s->desc->key(&tmp);
	old = idmap_get(&s->map, key);
	if (old) {
		s->desc->dec->release(c->model, old); /* after decoding: shared blobs stay */
	} else {
		old = malloc(s->desc->dec->size + sizeof(uint32_t));
		if (!old || idmap_put(&s->map, key, old) < 0) {
			free(old);
			s->desc->dec->release(c->model, &tmp);
			c->decode_errors++;
			log_line(c, "out of memory storing an object");
			return;
		}
	}
	memcpy(old, &tmp, s->desc->dec->size);
	*gen_of(s, old) = s->gen;
	changed(s, key);
}

/* The key of a deleted object, without interning anything new: names that
 * are not interned belong to no stored object. */
static uint64_t find_key(struct store *s, const cJSON *obj)
{
	struct intern *in = kubeapi_model_intern(s->cache->model);
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
	uint32_t nsid = 0, nameid;

	if (!cJSON_IsString(name))
		return 0;
	nameid = intern_find(in, name->valuestring, strlen(name->valuestring));
	if (cJSON_IsString(ns)) {
		nsid = intern_find(in, ns->valuestring, strlen(ns->valuestring));
		if (!nsid)
			return 0;
	}
	return nameid ? kubeapi_cache_key(nsid, nameid) : 0;
}

static void drop(struct store *s, uint64_t key)
{
	void *obj = idmap_del(&s->map, key);

	if (!obj)
		return;
	s->desc->dec->release(s->cache->model, obj);
	free(obj);
	changed(s, key);
}

/* An object too large to decode: what was stored for it stays, through
 * this list's sweep too. Dropping a bound pod would free capacity that is
 * in use. */
static void apply_keep(struct store *s, const cJSON *obj)
{
	uint64_t key = find_key(s, obj);
	void *old = key ? idmap_get(&s->map, key) : NULL;

	if (old)
		*gen_of(s, old) = s->gen;
}

static void apply_remove(struct store *s, const cJSON *obj)
{
	uint64_t key = find_key(s, obj);

	if (key)
		drop(s, key);
}

/* Drop what the list just finished did not name. */
static void apply_sync_end(struct store *s)
{
	struct idmap_slot *e;
	uint64_t *stale;
	size_t i, n = 0;

	stale = malloc((s->map.n + 1) * sizeof(*stale));
	if (!stale) {
		log_line(s->cache, "out of memory sweeping a store; stale objects kept");
		return;
	}
	IDMAP_FOREACH(&s->map, at, e)
		if (*gen_of(s, e->value) != s->gen)
			stale[n++] = e->key;
	for (i = 0; i < n; i++)
		drop(s, stale[i]);
	free(stale);
}

/* ---- holding ------------------------------------------------------------------------ */

/* While the cache is held, a callback is journaled instead of applied (or
 * dropped, once its store's records ran over the cap: that store lists
 * again at release). True when it is not to be applied now. */
static bool journaled(struct store *s, enum kubeapi__journal_op op, const cJSON *obj)
{
	struct kubeapi_cache *c = s->cache;

	if (!c->held)
		return false;
	if (!(c->lost & 1u << s->kind) && kubeapi__journal_add(&c->journal, s->kind, op, obj) < 0)
		c->lost |= 1u << s->kind;
	return true;
}

static void on_sync_begin(void *data)
{
	if (!journaled(data, KUBEAPI__J_SYNC_BEGIN, NULL))
		apply_sync_begin(data);
}

static void on_upsert(void *data, const cJSON *obj)
{
	if (!journaled(data, KUBEAPI__J_UPSERT, obj))
		apply_upsert(data, obj);
}

static void on_keep(void *data, const cJSON *obj)
{
	if (!journaled(data, KUBEAPI__J_KEEP, obj))
		apply_keep(data, obj);
}

static void on_remove(void *data, const cJSON *obj)
{
	if (!journaled(data, KUBEAPI__J_REMOVE, obj))
		apply_remove(data, obj);
}

static void on_sync_end(void *data)
{
	if (!journaled(data, KUBEAPI__J_SYNC_END, NULL))
		apply_sync_end(data);
}

/* One journaled callback, applied. False when its text no longer parses
 * (it was printed from a parse: out of memory). */
static bool replay(struct kubeapi_cache *c, const struct kubeapi__journal_rec *r)
{
	struct store *s = &c->stores[r->store];
	cJSON *obj = NULL;

	if (r->text && !(obj = cJSON_ParseWithLength(r->text, r->len)))
		return false;
	switch (r->op) {
	case KUBEAPI__J_SYNC_BEGIN:
		apply_sync_begin(s);
		break;
	case KUBEAPI__J_UPSERT:
		apply_upsert(s, obj);
		break;
	case KUBEAPI__J_REMOVE:
		apply_remove(s, obj);
		break;
	case KUBEAPI__J_KEEP:
		apply_keep(s, obj);
		break;
	default:
		apply_sync_end(s);
		break;
	}
	cJSON_Delete(obj);
	return true;
}

void kubeapi_cache_hold(struct kubeapi_cache *c)
{
	c->held = true;
}

/* The journal is all applied: the hold ends, and the stores that lost
 * records list again. */
static void unhold(struct kubeapi_cache *c)
{
	unsigned lost = c->lost;
	char line[256];

	c->held = false;
	c->lost = 0;
	c->next = 0;
	kubeapi__journal_clear(&c->journal);
	for (unsigned k = 0; k < KUBEAPI_STORE_COUNT; k++) {
		if (!(lost & 1u << k))
			continue;
		snprintf(
		    line, sizeof(line),
		    "%s: changes that came while the cache was held ran over %zu bytes (or out "
		    "of memory); listing again",
		    kinds[k].kind.name, c->journal.max_bytes);
		log_line(c, line);
		c->relisted++;
		kubeapi_informer_relist(c->stores[k].inf);
	}
}

bool kubeapi_cache_release(struct kubeapi_cache *c, uint64_t budget_ns)
{
	struct kubeapi__journal *j = &c->journal;
	uint64_t t0 = uv_hrtime();

	while (c->next < j->n) {
		size_t k = c->next++;

		if (!(c->lost & 1u << j->v[k].store) && !replay(c, &j->v[k]))
			c->lost |= 1u << j->v[k].store;
		kubeapi__journal_done(j, k);
		c->replayed++;
		if (uv_hrtime() - t0 >= budget_ns)
			break;
	}
	if (c->next < j->n)
		return false;
	unhold(c);
	return true;
}

void kubeapi_cache_hold_stats(const struct kubeapi_cache *c, uint64_t *replayed, unsigned *relisted)
{
	*replayed = c->replayed;
	*relisted = c->relisted;
}

static const struct kubeapi_informer_ops informer_ops = {
    .sync_begin = on_sync_begin,
    .upsert = on_upsert,
    .remove = on_remove,
    .sync_end = on_sync_end,
    .log = on_log,
    .keep = on_keep,
};

/* ---- lifetime -------------------------------------------------------------------- */

static void free_stores(struct kubeapi_cache *c)
{
	struct idmap_slot *e;
	unsigned k;

	for (k = 0; k < KUBEAPI_STORE_COUNT; k++) {
		struct store *s = &c->stores[k];

		IDMAP_FOREACH(&s->map, i, e) {
			s->desc->dec->release(c->model, e->value);
			free(e->value);
		}
		idmap_free(&s->map);
		free(s->changes.v);
	}
}

static void cache_free(struct kubeapi_cache *c)
{
	kubeapi__journal_clear(&c->journal);
	free_stores(c);
	kubeapi_model_free(&c->model);
	free(c);
}

int kubeapi_cache_new(uv_loop_t *loop, struct kubeapi_http *http,
                      const struct kubeapi_cache_options *opt, struct kubeapi_cache **out)
{
	struct kubeapi_cache *c = calloc(1, sizeof(*c));
	unsigned k;
	int rc = -ENOMEM;

	if (!c)
		return -ENOMEM;
	if (opt)
		c->opt = *opt;
	c->journal.max_bytes =
	    c->opt.hold_max_bytes ? c->opt.hold_max_bytes : KUBEAPI_CACHE_HOLD_BYTES;
	if ((rc = kubeapi_model_new(&c->model)) < 0)
		goto fail;
	for (k = 0; k < KUBEAPI_STORE_COUNT; k++) {
		struct store *s = &c->stores[k];

		s->cache = c;
		s->kind = (enum kubeapi_store_kind)k;
		s->desc = &kinds[k];
		rc = kubeapi_informer_new(loop, http, &kinds[k].kind, &c->opt.informer,
		                          &informer_ops, s, &s->inf);
		if (rc < 0)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	for (k = 0; k < KUBEAPI_STORE_COUNT; k++)
		kubeapi_informer_close(&c->stores[k].inf, NULL, NULL);
	/* Informers free themselves once their timers close; nothing here
	 * refers to the cache after this point, so it can go now. */
	cache_free(c);
	return rc;
}

int kubeapi_cache_start(struct kubeapi_cache *c)
{
	unsigned k;
	int rc;

	for (k = 0; k < KUBEAPI_STORE_COUNT; k++)
		if ((rc = kubeapi_informer_start(c->stores[k].inf)) < 0)
			return rc;
	return 0;
}

bool kubeapi_cache_synced(const struct kubeapi_cache *c)
{
	struct kubeapi_informer_stats st;
	unsigned k;

	for (k = 0; k < KUBEAPI_STORE_COUNT; k++) {
		kubeapi_informer_get_stats(c->stores[k].inf, &st);
		if (!st.synced && !st.absent)
			return false;
	}
	return true;
}

struct kubeapi_model *kubeapi_cache_model(struct kubeapi_cache *c)
{
	return c->model;
}

const struct idmap *kubeapi_cache_store(const struct kubeapi_cache *c, enum kubeapi_store_kind kind)
{
	return &c->stores[kind].map;
}

void kubeapi_cache_informer_stats(const struct kubeapi_cache *c, enum kubeapi_store_kind kind,
                                  struct kubeapi_informer_stats *out)
{
	kubeapi_informer_get_stats(c->stores[kind].inf, out);
}

unsigned kubeapi_cache_decode_errors(const struct kubeapi_cache *c)
{
	return c->decode_errors;
}

unsigned kubeapi_cache_untracked(const struct kubeapi_cache *c)
{
	return c->untracked;
}

unsigned kubeapi_cache_kind_decode_errors(const struct kubeapi_cache *c,
                                          enum kubeapi_store_kind kind)
{
	return c->stores[kind].decode_errors;
}

const struct kubeapi_kind *kubeapi_cache_kind(enum kubeapi_store_kind kind)
{
	return (unsigned)kind < KUBEAPI_STORE_COUNT ? &kinds[kind].kind : NULL;
}

const char *kubeapi_cache_kind_name(enum kubeapi_store_kind kind)
{
	return (unsigned)kind < KUBEAPI_STORE_COUNT ? kinds[kind].kind.name : NULL;
}

static void informer_closed(void *data)
{
	struct kubeapi_cache *c = data;

	if (--c->closing)
		return;
	if (c->closed_cb)
		c->closed_cb(c->closed_data);
	cache_free(c);
}

void kubeapi_cache_close(struct kubeapi_cache **cp, void (*closed_cb)(void *), void *data)
{
	struct kubeapi_cache *c = cp ? *cp : NULL;
	unsigned k;

	if (!c)
		return;
	*cp = NULL;
	c->closed_cb = closed_cb;
	c->closed_data = data;
	c->closing = KUBEAPI_STORE_COUNT;
	for (k = 0; k < KUBEAPI_STORE_COUNT; k++)
		kubeapi_informer_close(&c->stores[k].inf, informer_closed, c);
}
