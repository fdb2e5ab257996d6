/*
 * Decoding helpers: typed and capped field access, errors with a
 * field path, metadata, resource lists, label sets and blob building.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubeapi/decode_internal.h"
#include "base/quantity.h"

/* The end of one decode: a name it brought that no blob took (the decode
 * failed, or the amount was 0) leaves no trace; one that stayed tells
 * the cache that objects asking for it may now be satisfiable. */
static void res_settle(struct kubeapi__dec *d)
{
	struct kubeapi_model *m = d->m;
	bool kept = false;

	for (unsigned i = 0; i < KUBEAPI_MAX_RESOURCES; i++) {
		if (!(d->fresh >> i & 1))
			continue;
		if (m->res_refs[i] == 0 && !(m->res_pinned >> i & 1))
			kubeapi__res_free(m, i);
		else
			kept = true;
	}
	if (kept)
		m->res_gen++;
	d->fresh = 0;
}

const char *kubeapi_decode_error_str(const struct kubeapi_decode_error *e, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s%s%s: %s", e->kind[0] ? e->kind : "object", e->ns,
	         e->ns[0] ? "/" : "", e->name[0] ? e->name : "(unnamed)", e->msg);
	return buf;
}

void kubeapi__dec_init(struct kubeapi__dec *d, struct kubeapi_model *m,
                       struct kubeapi_decode_error *err, const char *kind)
{
	d->m = m;
	d->err = err;
	d->skip_long_labels = false;
	d->offers = false;
	d->fresh = 0;
	memset(err, 0, sizeof(*err));
	snprintf(err->kind, sizeof(err->kind), "%s", kind);
}

int kubeapi__fail(struct kubeapi__dec *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->err->msg, sizeof(d->err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

const char *kubeapi__path(char *buf, size_t len, const char *parent, const char *key)
{
	snprintf(buf, len, "%s.%s", parent, key);
	return buf;
}

uint32_t kubeapi__intern(struct kubeapi__dec *d, const char *s, size_t len)
{
	return intern_add(d->m->in, s, len);
}

uint32_t kubeapi__intern_to(struct kubeapi__dec *d, struct kubeapi__ids *ids, const char *s,
                            size_t len)
{
	uint32_t id;

	if (ids->n == ids->cap) {
		size_t cap = ids->cap ? ids->cap * 2 : 16;
		uint32_t *v = realloc(ids->v, cap * sizeof(*v));

		if (!v)
			return 0;
		ids->v = v;
		ids->cap = cap;
	}
	id = intern_add(d->m->in, s, len);
	if (id)
		ids->v[ids->n++] = id;
	return id;
}

void kubeapi__ids_drop(struct intern *in, struct kubeapi__ids *ids)
{
	size_t i;

	for (i = 0; i < ids->n; i++)
		intern_unref(in, ids->v[i]);
	free(ids->v);
	*ids = (struct kubeapi__ids){0};
}

const void *kubeapi__blob(struct kubeapi__dec *d, const void *data, size_t len,
                          struct kubeapi__ids *ids)
{
	int created = 0;
	const void *b = intern_blob(d->m->in, data, len, &created);

	if (b && created) {
		free(ids->v); /* the new blob owns the references */
		kubeapi__res_ref_mask(d->m, ids->res);
		*ids = (struct kubeapi__ids){0};
	} else {
		kubeapi__ids_drop(d->m->in, ids);
	}
	return b;
}

/* ---- field access -------------------------------------------------------- */

static const cJSON *field(const cJSON *o, const char *key)
{
	const cJSON *f;

	if (!o || !cJSON_IsObject(o))
		return NULL;
	f = cJSON_GetObjectItemCaseSensitive(o, key);
	return f && !cJSON_IsNull(f) ? f : NULL;
}

int kubeapi__object(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                    const cJSON **out)
{
	const cJSON *f = field(o, key);

	*out = NULL;
	if (!f)
		return 1;
	if (!cJSON_IsObject(f))
		return kubeapi__fail(d, "%s: expected an object", path);
	*out = f;
	return 0;
}

int kubeapi__array(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                   size_t max, const cJSON **out)
{
	const cJSON *f = field(o, key);

	*out = NULL;
	if (!f)
		return 1;
	if (!cJSON_IsArray(f))
		return kubeapi__fail(d, "%s: expected an array", path);
	if ((size_t)cJSON_GetArraySize(f) > max)
		return kubeapi__fail(d, "%s: more than %zu entries", path, max);
	*out = f;
	return 0;
}

int kubeapi__string(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                    size_t max, const char **s, size_t *len)
{
	const cJSON *f = field(o, key);
	size_t n;

	*s = NULL;
	*len = 0;
	if (!f)
		return 1;
	if (!cJSON_IsString(f))
		return kubeapi__fail(d, "%s: expected a string", path);
	n = strlen(f->valuestring);
	if (n > max)
		return kubeapi__fail(d, "%s: longer than %zu bytes", path, max);
	*s = f->valuestring;
	*len = n;
	return 0;
}

int kubeapi__string_id(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                       size_t max, uint32_t *id)
{
	const char *s;
	size_t len;
	int rc = kubeapi__string(d, o, key, path, max, &s, &len);

	*id = 0;
	if (rc || len == 0)
		return rc;
	*id = kubeapi__intern(d, s, len);
	return *id ? 0 : -ENOMEM;
}

/* JSON numbers arrive as doubles: an integer field must hold an integral
 * value within [min, max], both well inside the 2^53 exact range. */
int kubeapi__int(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                 int64_t min, int64_t max, int64_t *v)
{
	const cJSON *f = field(o, key);
	double x;

	if (!f)
		return 1;
	if (!cJSON_IsNumber(f))
		return kubeapi__fail(d, "%s: expected an integer", path);
	x = f->valuedouble;
	if (!(x >= (double)min && x <= (double)max) || x != (double)(int64_t)x)
		return kubeapi__fail(d, "%s: %.15g is not an integer in [%lld, %lld]", path, x,
		                     (long long)min, (long long)max);
	*v = (int64_t)x;
	return 0;
}

int kubeapi__bool(struct kubeapi__dec *d, const cJSON *o, const char *key, const char *path,
                  bool *v)
{
	const cJSON *f = field(o, key);

	if (!f)
		return 1;
	if (!cJSON_IsBool(f))
		return kubeapi__fail(d, "%s: expected true or false", path);
	*v = cJSON_IsTrue(f);
	return 0;
}

int kubeapi__lookup(const char *const *names, size_t n, const char *s, size_t len)
{
	size_t i;

	for (i = 0; s && i < n; i++)
		if (strlen(names[i]) == len && memcmp(names[i], s, len) == 0)
			return (int)i;
	return -1;
}

/* ---- times and uids ------------------------------------------------------ */

static int digits(const char *s, size_t n, int *out)
{
	size_t i;
	int v = 0;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* The zone part after the seconds: "Z", ".123Z", "+02:00", ".5-07:30". */
static int parse_zone(const char *s, size_t len, int *offset_s)
{
	int hh, mm;

	if (len && s[0] == '.') {
		size_t i = 1;

		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == 1)
			return -EINVAL;
		s += i;
		len -= i;
	}
	if (len == 1 && (s[0] == 'Z' || s[0] == 'z')) {
		*offset_s = 0;
		return 0;
	}
	if (len != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' || digits(s + 1, 2, &hh) ||
	    digits(s + 4, 2, &mm) || hh > 23 || mm > 59)
		return -EINVAL;
	*offset_s = (s[0] == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
	return 0;
}

int kubeapi__parse_time(const char *s, size_t len, int64_t *out)
{
	struct tm tm = {0};
	int y, mo, da, h, mi, se, off;
	time_t t;

	if (len < 20 || len > 40 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
	    s[13] != ':' || s[16] != ':' || digits(s, 4, &y) || digits(s + 5, 2, &mo) ||
	    digits(s + 8, 2, &da) || digits(s + 11, 2, &h) || digits(s + 14, 2, &mi) ||
	    digits(s + 17, 2, &se) || parse_zone(s + 19, len - 19, &off))
		return -EINVAL;
	if (mo < 1 || mo > 12 || da < 1 || da > 31 || h > 23 || mi > 59 || se > 60)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = da;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	t = timegm(&tm);
	if (tm.tm_mday != da) /* timegm moved Feb 30 to Mar 2: no such day */
		return -EINVAL;
	*out = (int64_t)t - off;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int kubeapi__parse_uid(const char *s, size_t len, uint8_t out[16])
{
	size_t i, j = 0;

	if (len != 36)
		return -EINVAL;
	for (i = 0; i < len;) {
		int hi, lo;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i++] != '-')
				return -EINVAL;
			continue;
		}
		hi = hexval(s[i]);
		lo = hexval(s[i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[j++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	return 0;
}

/* ---- metadata ------------------------------------------------------------ */

static void note_identity(struct kubeapi__dec *d, const char *ns, size_t nslen, const char *name,
                          size_t namelen)
{
	snprintf(d->err->ns, sizeof(d->err->ns), "%.*s", (int)nslen, ns ? ns : "");
	snprintf(d->err->name, sizeof(d->err->name), "%.*s", (int)namelen, name ? name : "");
}

static int meta_time(struct kubeapi__dec *d, const cJSON *md, const char *key, int64_t *out,
                     bool *present)
{
	char path[48];
	const char *s;
	size_t len;
	int rc = kubeapi__string(d, md, key, kubeapi__path(path, sizeof(path), "metadata", key), 64,
	                         &s, &len);

	*present = rc == 0;
	if (rc)
		return rc < 0 ? rc : 0;
	if (kubeapi__parse_time(s, len, out) < 0)
		return kubeapi__fail(d, "metadata.%s: not an RFC 3339 time: \"%s\"", key, s);
	return 0;
}

static int meta_names(struct kubeapi__dec *d, const cJSON *md, bool namespaced,
                      struct kubeapi__meta *out)
{
	const char *ns = NULL, *name = NULL;
	size_t nslen = 0, namelen = 0;
	int rc;

	rc = kubeapi__string(d, md, "name", "metadata.name", KUBEAPI_MAX_NAME, &name, &namelen);
	if (rc < 0)
		return rc;
	if (namespaced &&
	    kubeapi__string(d, md, "namespace", "metadata.namespace", 63, &ns, &nslen) < 0)
		return -EINVAL;
	note_identity(d, ns, nslen, name, namelen);
	if (!name || !namelen)
		return kubeapi__fail(d, "metadata.name: missing");
	if (namespaced && (!ns || !nslen))
		return kubeapi__fail(d, "metadata.namespace: missing");
	out->name = kubeapi__intern(d, name, namelen);
	if (!out->name)
		return -ENOMEM;
	if (namespaced) {
		out->ns = kubeapi__intern(d, ns, nslen);
		if (!out->ns)
			return -ENOMEM;
	}
	return 0;
}

static int meta_rest(struct kubeapi__dec *d, const cJSON *md, struct kubeapi__meta *out)
{
	const char *s;
	size_t len;
	char *end;
	bool present;
	int rc;

	rc = kubeapi__string(d, md, "uid", "metadata.uid", 64, &s, &len);
	if (rc < 0)
		return rc;
	if (rc == 0 && kubeapi__parse_uid(s, len, out->uid) < 0)
		return kubeapi__fail(d, "metadata.uid: not a UID: \"%s\"", s);
	rc = kubeapi__string(d, md, "resourceVersion", "metadata.resourceVersion", 64, &s, &len);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		errno = 0;
		out->rv = strtoull(s, &end, 10);
		if (errno || *end || end == s || s[0] < '0' || s[0] > '9')
			out->rv = 0; /* opaque by contract: only ordered when numeric */
	}
	if ((rc = meta_time(d, md, "creationTimestamp", &out->created_s, &present)) < 0)
		return rc;
	if ((rc = meta_time(d, md, "deletionTimestamp", &out->deleted_s, &out->deleting)) < 0)
		return rc;
	if (kubeapi__object(d, md, "labels", "metadata.labels", &out->labels) < 0 ||
	    kubeapi__object(d, md, "annotations", "metadata.annotations", &out->annotations) < 0 ||
	    kubeapi__array(d, md, "ownerReferences", "metadata.ownerReferences", KUBEAPI_MAX_LIST,
	                   &out->owners) < 0)
		return -EINVAL;
	return 0;
}

int kubeapi__meta(struct kubeapi__dec *d, const cJSON *obj, bool namespaced,
                  struct kubeapi__meta *out)
{
	const cJSON *md;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!obj || !cJSON_IsObject(obj))
		return kubeapi__fail(d, "expected a JSON object");
	if ((rc = kubeapi__object(d, obj, "metadata", "metadata", &md)) < 0)
		return rc;
	if (!md)
		return kubeapi__fail(d, "metadata: missing");
	rc = meta_names(d, md, namespaced, out);
	if (rc == 0)
		rc = meta_rest(d, md, out);
	if (rc < 0) {
		intern_unref(d->m->in, out->name);
		intern_unref(d->m->in, out->ns);
		out->name = out->ns = 0;
	}
	return rc;
}

/* ---- the driver --------------------------------------------------------------- */

int kubeapi__decode(struct kubeapi_model *m, const struct kubeapi__kind *k, const void *arg,
                    const cJSON *obj, void *out, struct kubeapi_decode_error *err)
{
	struct kubeapi__dec d;
	struct kubeapi__meta md;
	union kubeapi__any_object tmp;
	int rc;

	if (k->size > sizeof(tmp))
		return -EINVAL;
	memset(&tmp, 0, sizeof(tmp));
	kubeapi__dec_init(&d, m, err, k->name);
	if ((rc = kubeapi__meta(&d, obj, k->namespaced, &md)) < 0)
		return rc;
	k->identity(&tmp, &md, arg);
	rc = k->fields(&d, obj, &md, &tmp);
	if (rc < 0)
		k->release(m, &tmp);
	res_settle(&d);
	if (rc < 0)
		return rc;
	memcpy(out, &tmp, k->size);
	return 0;
}

/* ---- resources ------------------------------------------------------------ */

/* One quantity: a string, or a JSON integer (CRD fields such as a PodGroup's
 * minResources are int-or-string, and the API server keeps what was sent).
 * *text is what to quote in messages (num holds a number's text). */
static int quantity(const cJSON *q, bool milli, char num[32], const char **text, int64_t *v)
{
	double x = q->valuedouble;

	if (cJSON_IsString(q)) {
		*text = q->valuestring;
		return milli ? quantity_milli(*text, strlen(*text), v)
		             : quantity_value(*text, strlen(*text), v);
	}
	snprintf(num, 32, "%.15g", x);
	*text = num;
	if (!(x > -0x1p53 && x < 0x1p53))
		return -ERANGE;
	if (x != (double)(int64_t)x)
		return -EINVAL;
	*v = (int64_t)x * (milli ? 1000 : 1);
	return 0;
}

/* The slot for a non-zero amount of `name` (found: its index, or -ENOENT).
 * An offer (a Node's allocatable) gives a new name a slot, within the
 * per-object cap and the table; what gets none is counted in err and
 * left out (*res < 0). A request for a name without a slot becomes one
 * unit of KUBEAPI_RES_UNOFFERED. */
static int amount_slot(struct kubeapi__dec *d, const char *name, size_t len, int found, int *res,
                       int64_t *v)
{
	struct kubeapi_decode_error *e = d->err;
	int i = found;

	*res = found;
	if (found >= 0)
		return 0;
	if (!d->offers) {
		*res = KUBEAPI_RES_UNOFFERED;
		*v = 1;
		return 0;
	}
	if (__builtin_popcountll(d->fresh) >= KUBEAPI_MAX_NEW_RESOURCES ||
	    (i = kubeapi__res_add(d->m, name, len)) == -ENOSPC) {
		if (e->untracked++ == 0)
			snprintf(e->untracked_name, sizeof(e->untracked_name), "%.*s",
			         (int)(len < 63 ? len : 63), name);
		return 0;
	}
	if (i < 0)
		return i;
	d->fresh |= 1ULL << i;
	*res = i;
	return 0;
}

int kubeapi__amounts_read(struct kubeapi__dec *d, const cJSON *list, const char *path,
                          struct kubeapi__amounts *a)
{
	const cJSON *q;

	if (!list)
		return 0;
	if (!cJSON_IsObject(list))
		return kubeapi__fail(d, "%s: expected a map of quantities", path);
	cJSON_ArrayForEach(q, list)
	{
		size_t klen = strlen(q->string);
		const char *text;
		char num[32];
		int64_t v;
		int res, rc;

		if (!cJSON_IsString(q) && !cJSON_IsNumber(q))
			return kubeapi__fail(d, "%s.%s: expected a quantity", path, q->string);
		if (klen == 0 || klen > KUBEAPI_MAX_NAME)
			return kubeapi__fail(d, "%s: resource name \"%.64s\": invalid", path,
			                     q->string);
		res = kubeapi_model_resource_find(d->m, q->string, klen);
		if (res == KUBEAPI_RES_UNOFFERED)
			return kubeapi__fail(d, "%s: resource name \"%.64s\": invalid", path,
			                     q->string);
		rc = quantity(q, res == KUBEAPI_RES_CPU, num, &text, &v);
		if (rc < 0)
			return kubeapi__fail(d, "%s.%.64s: %s quantity \"%.40s\"", path, q->string,
			                     rc == -ERANGE ? "out-of-range" : "bad", text);
		if (v < 0)
			return kubeapi__fail(d, "%s.%.64s: negative quantity \"%.40s\"", path,
			                     q->string, text);
		if (v == 0 && res < 0)
			continue; /* asks for nothing, offers nothing: no slot */
		if ((rc = amount_slot(d, q->string, klen, res, &res, &v)) < 0)
			return rc;
		if (res < 0)
			continue;
		if (__builtin_add_overflow(a->v[res], v, &a->v[res]))
			return kubeapi__fail(d, "%s.%.64s: sum overflows", path, q->string);
		a->present |= 1ULL << res;
	}
	return 0;
}

int kubeapi__amounts_add(struct kubeapi__dec *d, struct kubeapi__amounts *a,
                         const struct kubeapi__amounts *b, const char *path)
{
	unsigned i;

	for (i = 0; i < KUBEAPI_MAX_RESOURCES; i++) {
		if (!(b->present >> i & 1))
			continue;
		if (__builtin_add_overflow(a->v[i], b->v[i], &a->v[i]))
			return kubeapi__fail(d, "%s: sum of requests overflows", path);
		a->present |= 1ULL << i;
	}
	return 0;
}

void kubeapi__amounts_max(struct kubeapi__amounts *a, const struct kubeapi__amounts *b)
{
	unsigned i;

	for (i = 0; i < KUBEAPI_MAX_RESOURCES; i++) {
		if (!(b->present >> i & 1))
			continue;
		if (!(a->present >> i & 1) || b->v[i] > a->v[i])
			a->v[i] = b->v[i];
		a->present |= 1ULL << i;
	}
}

unsigned kubeapi__amounts_list(const struct kubeapi__amounts *a, struct kubeapi_res *out)
{
	unsigned i, n = 0;

	for (i = 0; i < KUBEAPI_MAX_RESOURCES; i++)
		if ((a->present >> i & 1) && a->v[i] != 0)
			out[n++] = (struct kubeapi_res){.res = (uint16_t)i, .amount = a->v[i]};
	return n;
}

int kubeapi__reslist(struct kubeapi__dec *d, const struct kubeapi__amounts *a,
                     const struct kubeapi_reslist **out)
{
	struct {
		struct kubeapi_reslist h;
		struct kubeapi_res e[KUBEAPI_MAX_RESOURCES];
	} buf;
	struct kubeapi__ids none = {0};

	memset(&buf, 0, sizeof(buf));
	buf.h.n = kubeapi__amounts_list(a, buf.e);
	*out = NULL;
	if (buf.h.n == 0)
		return 0;
	none.res = kubeapi__res_mask(buf.e, buf.h.n);
	*out = kubeapi__blob(d, &buf, sizeof(buf.h) + buf.h.n * sizeof(buf.e[0]), &none);
	return *out ? 0 : -ENOMEM;
}

void kubeapi__reslist_unref(struct kubeapi_model *m, const struct kubeapi_reslist *l)
{
	if (l && intern_blob_refs(l) == 1)
		kubeapi__res_unref(m, l->e, l->n);
	intern_blob_unref(m->in, l);
}

/* ---- labels -------------------------------------------------------------- */

static int kv_by_key(const void *a, const void *b)
{
	const struct kubeapi_kv *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static bool has_key(const struct kubeapi_kv *kv, size_t n, uint32_t key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (kv[i].key == key)
			return true;
	return false;
}

/* Append the matching entries of one map to kv[*n]. */
static int labels_collect(struct kubeapi__dec *d, const cJSON *map, const char *what,
                          const char *prefix, struct kubeapi__ids *ids, struct kubeapi_kv *kv,
                          size_t *n)
{
	size_t plen = strlen(prefix), base = *n;
	const cJSON *e;

	cJSON_ArrayForEach(e, map)
	{
		size_t klen = strlen(e->string), vlen;
		uint32_t key;

		if (klen < plen || memcmp(e->string, prefix, plen) != 0)
			continue;
		if (!cJSON_IsString(e))
			return kubeapi__fail(d, "metadata.%s.%.64s: expected a string", what,
			                     e->string);
		vlen = strlen(e->valuestring);
		if ((klen > KUBEAPI_MAX_NAME + 64 || vlen > KUBEAPI_MAX_STRING) &&
		    d->skip_long_labels)
			continue;
		if (klen > KUBEAPI_MAX_NAME + 64 || vlen > KUBEAPI_MAX_STRING)
			return kubeapi__fail(d, "metadata.%s.%.64s: too long", what, e->string);
		if (*n == KUBEAPI_MAX_LABELS)
			return kubeapi__fail(d, "metadata.%s: more than %d entries", what,
			                     KUBEAPI_MAX_LABELS);
		key = kubeapi__intern_to(d, ids, e->string, klen);
		if (!key)
			return -ENOMEM;
		if (has_key(kv, base, key)) { /* a label shadows an annotation */
			intern_unref(d->m->in, key);
			ids->n--;
			continue;
		}
		kv[*n].key = key;
		kv[*n].value = kubeapi__intern_to(d, ids, e->valuestring, vlen);
		if (!kv[*n].value)
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}

int kubeapi__labels(struct kubeapi__dec *d, const cJSON *labels, const cJSON *annotations,
                    const char *prefix, const struct kubeapi_labels **out)
{
	struct kubeapi__ids ids = {0};
	struct kubeapi_kv *kv = d->m->scratch->labels;
	struct kubeapi_labels *l = NULL;
	size_t n = 0;
	int rc;

	*out = NULL;
	if (labels && (rc = labels_collect(d, labels, "labels", prefix, &ids, kv, &n)) < 0)
		goto out;
	if (annotations &&
	    (rc = labels_collect(d, annotations, "annotations", prefix, &ids, kv, &n)) < 0)
		goto out;
	rc = 0;
	if (n == 0)
		goto out;
	/* Only the blob itself is allocated: header and n entries, zeroed. */
	rc = -ENOMEM;
	l = calloc(1, sizeof(*l) + n * sizeof(l->e[0]));
	if (!l)
		goto out;
	memcpy(l->e, kv, n * sizeof(kv[0]));
	qsort(l->e, n, sizeof(l->e[0]), kv_by_key);
	l->n = (uint32_t)n;
	*out = kubeapi__blob(d, l, sizeof(*l) + n * sizeof(l->e[0]), &ids);
	rc = *out ? 0 : -ENOMEM;
out:
	kubeapi__ids_drop(d->m->in, &ids);
	free(l);
	return rc;
}

/* ---- blobs ---------------------------------------------------------------- */

size_t kubeapi__buf_add(struct buf *b, size_t n)
{
	size_t off = (b->len + 7) & ~(size_t)7, pad = off - b->len;

	if (n > SIZE_MAX - off || buf_reserve(b, pad + n) < 0)
		return (size_t)-1;
	memset(b->p + b->len, 0, pad + n);
	b->len = off + n;
	return off;
}

/* Each release below runs only for the last reference: the blob's own
 * string references go with it. */
void kubeapi__labels_unref(struct intern *in, const struct kubeapi_labels *l)
{
	uint32_t i;

	if (!l)
		return;
	if (intern_blob_refs(l) == 1)
		for (i = 0; i < l->n; i++) {
			intern_unref(in, l->e[i].key);
			intern_unref(in, l->e[i].value);
		}
	intern_blob_unref(in, l);
}

void kubeapi__taints_unref(struct intern *in, const struct kubeapi_taints *t)
{
	uint32_t i;

	if (!t)
		return;
	if (intern_blob_refs(t) == 1)
		for (i = 0; i < t->n; i++) {
			intern_unref(in, t->e[i].key);
			intern_unref(in, t->e[i].value);
		}
	intern_blob_unref(in, t);
}
