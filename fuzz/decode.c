/*
 * Fuzz target: the object decoders (kubeapi/decode_*.c).
 *
 * The input is JSON, parsed by cJSON as the informer does. A List (an
 * object with "items", as the list calls return) has each item decoded;
 * anything else is decoded as one object, whatever its JSON type, since a
 * list's items reach the cache without a type check. Every decoder runs on
 * every object: Pod, Node, PodGroup in its three dialects, Workload, PriorityClass,
 * PodDisruptionBudget, Namespace.
 *
 * Checked, as kubeapi/decode.h promises: a decoder returns 0, -EINVAL or
 * -ENOMEM; a failure leaves *out untouched (here: still zero) and an error
 * whose strings are terminated; decoding the same object twice succeeds
 * twice (the second shares the first's interned blobs); a release zeroes
 * the object; and once everything is released the model's intern table is
 * empty, so no reference was lost (ASan alone would not see that: freeing
 * the model frees what a lost reference kept alive).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz/fuzz.h"
#include "kubeapi/decode.h"
#include "kubeapi/decode_internal.h"

/* Big enough for any decoded kind: the decoders' own scratch union. */
typedef union kubeapi__any_object object_t;

/* One decoder and its release, behind void pointers. */
struct decoder {
	int (*decode)(struct kubeapi_model *m, const cJSON *obj, void *out,
	              struct kubeapi_decode_error *err);
	void (*release)(struct kubeapi_model *m, void *obj);
};

static int pod(struct kubeapi_model *m, const cJSON *o, void *out, struct kubeapi_decode_error *e)
{
	return kubeapi_pod_decode(m, o, out, e);
}

static void pod_rel(struct kubeapi_model *m, void *obj)
{
	kubeapi_pod_release(m, obj);
}

static int node(struct kubeapi_model *m, const cJSON *o, void *out, struct kubeapi_decode_error *e)
{
	return kubeapi_node_decode(m, o, out, e);
}

static void node_rel(struct kubeapi_model *m, void *obj)
{
	kubeapi_node_release(m, obj);
}

static int pg_x_k8s(struct kubeapi_model *m, const cJSON *o, void *out,
                    struct kubeapi_decode_error *e)
{
	return kubeapi_podgroup_decode(m, KUBEAPI_PG_SCHEDULER_PLUGINS, o, out, e);
}

static int pg_volcano(struct kubeapi_model *m, const cJSON *o, void *out,
                      struct kubeapi_decode_error *e)
{
	return kubeapi_podgroup_decode(m, KUBEAPI_PG_VOLCANO, o, out, e);
}

static int pg_native(struct kubeapi_model *m, const cJSON *o, void *out,
                     struct kubeapi_decode_error *e)
{
	return kubeapi_podgroup_decode(m, KUBEAPI_PG_NATIVE, o, out, e);
}

static void pg_rel(struct kubeapi_model *m, void *obj)
{
	kubeapi_podgroup_release(m, obj);
}

static int pc(struct kubeapi_model *m, const cJSON *o, void *out, struct kubeapi_decode_error *e)
{
	return kubeapi_priorityclass_decode(m, o, out, e);
}

static void pc_rel(struct kubeapi_model *m, void *obj)
{
	kubeapi_priorityclass_release(m, obj);
}

static int pdb(struct kubeapi_model *m, const cJSON *o, void *out, struct kubeapi_decode_error *e)
{
	return kubeapi_pdb_decode(m, o, out, e);
}

static void pdb_rel(struct kubeapi_model *m, void *obj)
{
	kubeapi_pdb_release(m, obj);
}

static int ns(struct kubeapi_model *m, const cJSON *o, void *out, struct kubeapi_decode_error *e)
{
	return kubeapi_namespace_decode(m, o, out, e);
}

static void ns_rel(struct kubeapi_model *m, void *obj)
{
	kubeapi_namespace_release(m, obj);
}

static int wl(struct kubeapi_model *m, const cJSON *o, void *out, struct kubeapi_decode_error *e)
{
	return kubeapi_workload_decode(m, o, out, e);
}

static void wl_rel(struct kubeapi_model *m, void *obj)
{
	kubeapi_workload_release(m, obj);
}

static const struct decoder decoders[] = {
    {pod, pod_rel}, {node, node_rel}, {pg_x_k8s, pg_rel}, {pg_volcano, pg_rel}, {pg_native, pg_rel},
    {pc, pc_rel},   {pdb, pdb_rel},   {ns, ns_rel},       {wl, wl_rel},
};

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static bool terminated(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL;
}

static void check_error(const struct kubeapi_decode_error *err)
{
	char line[1024];

	FUZZ_CHECK(terminated(err->kind, sizeof(err->kind)));
	FUZZ_CHECK(terminated(err->ns, sizeof(err->ns)));
	FUZZ_CHECK(terminated(err->name, sizeof(err->name)));
	FUZZ_CHECK(terminated(err->msg, sizeof(err->msg)));
	FUZZ_CHECK(err->msg[0] != '\0');
	kubeapi_decode_error_str(err, line, sizeof(line));
}

static void decode_with(struct kubeapi_model *m, const struct decoder *d, const cJSON *obj)
{
	object_t a, b;
	struct kubeapi_decode_error err;
	int rc;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&err, 0, sizeof(err));
	rc = d->decode(m, obj, &a, &err);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc < 0) {
		FUZZ_CHECK(all_zero(&a, sizeof(a)));
		if (rc == -EINVAL)
			check_error(&err);
		return;
	}
	rc = d->decode(m, obj, &b, &err);
	FUZZ_CHECK(rc == 0 || rc == -ENOMEM);
	d->release(m, &a);
	d->release(m, &b);
	FUZZ_CHECK(all_zero(&a, sizeof(a)));
	FUZZ_CHECK(all_zero(&b, sizeof(b)));
}

static void decode_all(struct kubeapi_model *m, const cJSON *obj)
{
	size_t i;

	for (i = 0; i < sizeof(decoders) / sizeof(decoders[0]); i++)
		decode_with(m, &decoders[i], obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kubeapi_model *m = NULL;
	struct intern_stats st;
	cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
	const cJSON *items, *it;

	if (!doc)
		return 0;
	if (kubeapi_model_new(&m) < 0)
		goto out;
	items = cJSON_GetObjectItemCaseSensitive(doc, "items");
	if (cJSON_IsArray(items)) {
		cJSON_ArrayForEach(it, items) decode_all(m, it);
	} else {
		decode_all(m, doc);
	}
	intern_stats(kubeapi_model_intern(m), &st);
	FUZZ_CHECK(st.strings == 0 && st.blobs == 0);
	kubeapi_model_free(&m);
out:
	cJSON_Delete(doc);
	return 0;
}
