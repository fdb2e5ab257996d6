/*
 * kubeapi/decode: the decoders on objects as a kube-apiserver 1.35 returns
 * them, and on hostile variations of those objects.
 *
 * The JSON files in testdata/ are `kubectl get -o json` lists captured from the local
 * control plane (v1.35.4, kwok nodes): the smoke namespace's rich pods, and
 * a namespace made for these tests holding a bound pod being deleted, two
 * pods of a Job (one marked Unschedulable), a pod with pod-level resources,
 * PodGroups of both CRDs, three PodDisruptionBudgets, a PriorityClass, and
 * that namespace itself while it was terminating.
 *
 * Hostile input is made by editing one field of a real object (a table of
 * path, new value, expected message) or by building oversized values. Each
 * must fail with -EINVAL and a message that starts with the field path,
 * leave the output untouched, and leave no interned string or blob behind.
 * Every test's teardown checks that the model's intern table is empty.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kubeapi/decode.h"

#define TESTDATA "test/unit/kubeapi/testdata/"
#define GI       (INT64_C(1) << 30)
#define MI       (INT64_C(1) << 20)

/* ---- fixtures and helpers ------------------------------------------------- */

static int setup(void **state)
{
	struct kubeapi_model *m = NULL;

	if (kubeapi_model_new(&m) < 0)
		return -1;
	*state = m;
	return 0;
}

/* Fails the test if anything interned is still alive. */
static int teardown(void **state)
{
	struct kubeapi_model *m = *state;
	struct intern_stats s;

	intern_stats(kubeapi_model_intern(m), &s);
	kubeapi_model_free(&m);
	if (s.strings || s.blobs) {
		print_error("leak: %zu strings and %zu blobs still live after the test\n",
		            s.strings, s.blobs);
		return -1;
	}
	return 0;
}

static struct intern_stats live(struct kubeapi_model *m)
{
	struct intern_stats s;

	intern_stats(kubeapi_model_intern(m), &s);
	return s;
}

static void assert_clean(struct kubeapi_model *m)
{
	struct intern_stats s = live(m);

	if (s.strings || s.blobs)
		fail_msg("%zu strings and %zu blobs still live", s.strings, s.blobs);
}

static const char *S(struct kubeapi_model *m, uint32_t id)
{
	return intern_str(kubeapi_model_intern(m), id);
}

static uint32_t ID(struct kubeapi_model *m, const char *s)
{
	return intern_find(kubeapi_model_intern(m), s, strlen(s));
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		fail_msg("cannot open %s (tests run from the repository root)", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static cJSON *load(const char *file)
{
	char path[256], *text;
	cJSON *doc;

	snprintf(path, sizeof(path), TESTDATA "%s", file);
	text = slurp(path);
	doc = cJSON_Parse(text);
	free(text);
	if (!doc)
		fail_msg("%s: not JSON", path);
	return doc;
}

/* A copy of the object called `name` in the list in `file`; the caller
 * deletes it. */
static cJSON *item(const char *file, const char *name)
{
	cJSON *list = load(file), *it, *copy = NULL;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "items"))
	{
		const cJSON *md = cJSON_GetObjectItemCaseSensitive(it, "metadata");
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(md, "name");

		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) {
			copy = cJSON_Duplicate(it, 1);
			break;
		}
	}
	cJSON_Delete(list);
	if (!copy)
		fail_msg("%s has no object named %s", file, name);
	return copy;
}

static cJSON *J(const char *text)
{
	cJSON *v = cJSON_Parse(text);

	if (!v)
		fail_msg("test bug: not JSON: %s", text);
	return v;
}

static cJSON *child(cJSON *o, const char *key)
{
	if (cJSON_IsArray(o))
		return cJSON_GetArrayItem(o, atoi(key));
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* Set the field at `path` (keys and array indexes separated by spaces, so
 * keys may hold dots and slashes) to `value`, taking it; objects on the way
 * are created; a NULL value deletes the field. */
static void set_path(cJSON *doc, const char *path, cJSON *value)
{
	char buf[512], *rest = buf, *key;
	cJSON *cur = doc, *old;

	snprintf(buf, sizeof(buf), "%s", path);
	key = strsep(&rest, " ");
	while (rest) {
		cJSON *next = child(cur, key);

		if (!next) {
			if (cJSON_IsArray(cur))
				fail_msg("test bug: %s: no index %s", path, key);
			next = cJSON_AddObjectToObject(cur, key);
		}
		cur = next;
		key = strsep(&rest, " ");
	}
	if (cJSON_IsArray(cur)) {
		int i = atoi(key);

		if (!value)
			cJSON_DeleteItemFromArray(cur, i);
		else if (i < cJSON_GetArraySize(cur))
			cJSON_ReplaceItemInArray(cur, i, value);
		else
			cJSON_AddItemToArray(cur, value);
		return;
	}
	old = cJSON_GetObjectItemCaseSensitive(cur, key);
	if (old && value)
		cJSON_ReplaceItemInObjectCaseSensitive(cur, key, value);
	else if (old)
		cJSON_DeleteItemFromObjectCaseSensitive(cur, key);
	else if (value)
		cJSON_AddItemToObject(cur, key, value);
}

static void set(cJSON *doc, const char *path, const char *json)
{
	set_path(doc, path, json ? J(json) : NULL);
}

static cJSON *str_of(char c, size_t n)
{
	char *s = malloc(n + 1);
	cJSON *v;

	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	v = cJSON_CreateString(s);
	free(s);
	assert_non_null(v);
	return v;
}

/* Amount of resource `res` in a sorted list, 0 when absent (lists hold no
 * zeros); also checks the order. */
static int64_t amount(const struct kubeapi_res *e, unsigned n, unsigned res)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		if (i > 0 && e[i - 1].res >= e[i].res)
			fail_msg("resource list not sorted at %u", i);
		if (e[i].amount == 0)
			fail_msg("resource list holds a zero at %u", i);
	}
	for (i = 0; i < n; i++)
		if (e[i].res == res)
			return e[i].amount;
	return 0;
}

static int64_t req(const struct kubeapi_podspec *s, unsigned res)
{
	return amount(kubeapi_podspec_requests(s), s->nrequests, res);
}

static int64_t res_of(const struct kubeapi_reslist *l, unsigned res)
{
	return l ? amount(l->e, l->n, res) : 0;
}

static unsigned RES(struct kubeapi_model *m, const char *name)
{
	int r = kubeapi_model_resource(m, name, strlen(name));

	assert_true(r >= 0);
	return (unsigned)r;
}

static const char *label(struct kubeapi_model *m, const struct kubeapi_labels *l, const char *key)
{
	uint32_t k = ID(m, key);

	return k ? S(m, kubeapi_labels_get(l, k)) : "";
}

/* ---- decoding any kind ----------------------------------------------------- */

enum kind { POD, NODE, PG_SP, PG_VC, PG_NAT, PC, PDB, NS, WL, NKINDS };

/* Each kind's name in errors and the real object hostile rows start from. */
static const struct {
	const char *name, *file, *base, *ns;
} kinds[NKINDS] = {
    [POD] = {"Pod", "pods-smoke.json", "rich-0", "smoke"},
    [NODE] = {"Node", "nodes.json", "gpu-0000", ""},
    [PG_SP] = {"PodGroup", "podgroups-x-k8s.json", "pg-sp", "tdec-helper"},
    [PG_VC] = {"PodGroup", "podgroups-volcano.json", "pg-vc", "tdec-helper"},
    [PG_NAT] = {"PodGroup", "podgroups-native.json", "pg-nat", "tdec-helper"},
    [PC] = {"PriorityClass", "priorityclasses.json", "tdec-batch-low", ""},
    [PDB] = {"PodDisruptionBudget", "pdbs.json", "pdb-sel", "tdec-helper"},
    [NS] = {"Namespace", "namespaces.json", "tdec-helper", ""},
    [WL] = {"Workload", "workloads.json", "wl-train", "tdec-helper"},
};

union obj {
	struct kubeapi_pod pod;
	struct kubeapi_node node;
	struct kubeapi_podgroup pg;
	struct kubeapi_priorityclass pc;
	struct kubeapi_pdb pdb;
	struct kubeapi_namespace ns;
	struct kubeapi_workload wl;
};

static int decode(struct kubeapi_model *m, enum kind k, const cJSON *o, union obj *out,
                  struct kubeapi_decode_error *err)
{
	switch (k) {
	case POD:
		return kubeapi_pod_decode(m, o, &out->pod, err);
	case NODE:
		return kubeapi_node_decode(m, o, &out->node, err);
	case PG_SP:
		return kubeapi_podgroup_decode(m, KUBEAPI_PG_SCHEDULER_PLUGINS, o, &out->pg, err);
	case PG_VC:
		return kubeapi_podgroup_decode(m, KUBEAPI_PG_VOLCANO, o, &out->pg, err);
	case PG_NAT:
		return kubeapi_podgroup_decode(m, KUBEAPI_PG_NATIVE, o, &out->pg, err);
	case PC:
		return kubeapi_priorityclass_decode(m, o, &out->pc, err);
	case PDB:
		return kubeapi_pdb_decode(m, o, &out->pdb, err);
	case NS:
		return kubeapi_namespace_decode(m, o, &out->ns, err);
	case WL:
		return kubeapi_workload_decode(m, o, &out->wl, err);
	default:
		fail_msg("test bug: kind %d", (int)k);
	}
	return -1;
}

static void release(struct kubeapi_model *m, enum kind k, union obj *o)
{
	switch (k) {
	case POD:
		kubeapi_pod_release(m, &o->pod);
		break;
	case NODE:
		kubeapi_node_release(m, &o->node);
		break;
	case PG_SP:
	case PG_VC:
	case PG_NAT:
		kubeapi_podgroup_release(m, &o->pg);
		break;
	case PC:
		kubeapi_priorityclass_release(m, &o->pc);
		break;
	case PDB:
		kubeapi_pdb_release(m, &o->pdb);
		break;
	case NS:
		kubeapi_namespace_release(m, &o->ns);
		break;
	case WL:
		kubeapi_workload_release(m, &o->wl);
		break;
	default:
		break;
	}
}

static void decode_ok(struct kubeapi_model *m, enum kind k, const cJSON *o, union obj *out)
{
	struct kubeapi_decode_error err;
	char buf[1024];
	int rc = decode(m, k, o, out, &err);

	if (rc != 0)
		fail_msg("decode failed (%d): %s", rc,
		         kubeapi_decode_error_str(&err, buf, sizeof(buf)));
	assert_string_equal(err.msg, "");
}

/* Decode `doc` and check it fails as described; on a mismatch print why
 * and return false (so a table reports every bad row, not just the first). */
static bool check_bad(struct kubeapi_model *m, enum kind k, const cJSON *doc, const char *want,
                      const char *what)
{
	struct kubeapi_decode_error err;
	struct intern_stats s;
	union obj out, untouched;
	bool ok = true;
	int rc;

	memset(&out, 0xa5, sizeof(out));
	memset(&untouched, 0xa5, sizeof(untouched));
	rc = decode(m, k, doc, &out, &err);
	if (rc == 0) {
		print_error("%s: decoded, want -EINVAL \"%s\"\n", what, want);
		release(m, k, &out);
		return false;
	}
	if (rc != -EINVAL) {
		print_error("%s: rc %d, want -EINVAL\n", what, rc);
		ok = false;
	}
	if (strncmp(err.msg, want, strlen(want)) != 0) {
		print_error("%s: message \"%s\"\n%*swant it to start \"%s\"\n", what, err.msg,
		            (int)strlen(what) + 2, "", want);
		ok = false;
	}
	if (strcmp(err.kind, kinds[k].name) != 0) {
		print_error("%s: kind \"%s\", want \"%s\"\n", what, err.kind, kinds[k].name);
		ok = false;
	}
	if (memcmp(&out, &untouched, sizeof(out)) != 0) {
		print_error("%s: output written on failure\n", what);
		ok = false;
	}
	s = live(m);
	if (s.strings || s.blobs) {
		print_error("%s: %zu strings and %zu blobs left behind\n", what, s.strings,
		            s.blobs);
		ok = false;
	}
	return ok;
}

/* Same, failing the test at once. */
static void expect_bad(struct kubeapi_model *m, enum kind k, const cJSON *doc, const char *want)
{
	if (!check_bad(m, k, doc, want, kinds[k].name))
		fail_msg("%s decode did not fail as expected (see above)", kinds[k].name);
}

/* ---- the model and its resource names ---------------------------------------- */

static void test_model_resources(void **state)
{
	struct kubeapi_model *m = *state;
	static const char *const known[] = {"cpu",
	                                    "memory",
	                                    "pods",
	                                    "ephemeral-storage",
	                                    "nvidia.com/gpu",
	                                    "(a resource no node offers)"};
	char name[300];
	unsigned i;

	for (i = 0; i < KUBEAPI_RES_WELL_KNOWN; i++) {
		assert_int_equal(kubeapi_model_resource(m, known[i], strlen(known[i])), i);
		assert_string_equal(kubeapi_model_resource_name(m, i), known[i]);
	}
	assert_int_equal(KUBEAPI_RES_CPU, 0);
	assert_int_equal(KUBEAPI_RES_GPU, 4);
	assert_int_equal(KUBEAPI_RES_UNOFFERED, 5);
	assert_null(kubeapi_model_resource_name(m, 6));
	/* new names are registered once; the name is length-delimited */
	assert_int_equal(kubeapi_model_resource_find(m, "example.com/fpga", 16), -ENOENT);
	assert_int_equal(kubeapi_model_resource(m, "example.com/fpga", 16), 6);
	assert_int_equal(kubeapi_model_resource(m, "example.com/fpga-x", 16), 6);
	assert_int_equal(kubeapi_model_resource(m, "example.com/fpg", 15), 7);
	assert_int_equal(kubeapi_model_resource_find(m, "example.com/fpga", 16), 6);
	assert_string_equal(kubeapi_model_resource_name(m, 6), "example.com/fpga");
	assert_string_equal(kubeapi_model_resource_name(m, 7), "example.com/fpg");
	assert_null(kubeapi_model_resource_name(m, 1000));
	/* bad names */
	assert_int_equal(kubeapi_model_resource(m, "", 0), -EINVAL);
	memset(name, 'r', sizeof(name));
	assert_int_equal(kubeapi_model_resource(m, name, 254), -EINVAL);
	assert_int_equal(kubeapi_model_resource(m, name, 253), 8);
	/* full at KUBEAPI_MAX_RESOURCES; known names still resolve */
	for (i = 9; i < KUBEAPI_MAX_RESOURCES; i++) {
		snprintf(name, sizeof(name), "example.com/r%u", i);
		assert_int_equal(kubeapi_model_resource(m, name, strlen(name)), i);
	}
	assert_int_equal(kubeapi_model_resource(m, "one/more", 8), -ENOSPC);
	assert_int_equal(kubeapi_model_resource(m, "example.com/fpga", 16), 6);
	assert_int_equal(kubeapi_model_resource(m, "cpu", 3), 0);
}

/* ---- pods -------------------------------------------------------------------- */

/* The smoke namespace's rich pod: every part of the scheduling spec. */
static void test_pod_rich(void **state)
{
	struct kubeapi_model *m = *state;
	static const uint8_t uid[16] = {0x88, 0x15, 0xe1, 0x7d, 0x21, 0xeb, 0x4e, 0x7a,
	                                0xb8, 0x24, 0xe6, 0xcf, 0xb4, 0xc6, 0xb5, 0x8b};
	cJSON *doc = item("pods-smoke.json", "rich-0");
	const struct kubeapi_podspec *s;
	const struct kubeapi_toleration *t;
	const struct kubeapi_term *terms;
	const struct kubeapi_requirement *r;
	const uint32_t *v;
	union obj o;

	decode_ok(m, POD, doc, &o);
	assert_memory_equal(o.pod.uid, uid, 16);
	assert_string_equal(S(m, o.pod.ns), "smoke");
	assert_string_equal(S(m, o.pod.name), "rich-0");
	assert_int_equal(o.pod.node, 0);
	assert_string_equal(S(m, o.pod.group), "train-7");
	assert_int_equal(o.pod.group_source, KUBEAPI_GROUP_LABEL);
	assert_int_equal(o.pod.owner_kind, 0);
	assert_int_equal(o.pod.owner_name, 0);
	assert_int_equal(o.pod.phase, KUBEAPI_POD_PENDING);
	assert_int_equal(o.pod.sched_cond, KUBEAPI_SCHED_COND_NONE);
	assert_int_equal(o.pod.deleting, 0);
	assert_int_equal(o.pod.created_s, 1795280061); /* 2026-11-21T16:54:21Z */
	assert_int_equal(o.pod.deleted_s, 0);
	assert_int_equal(o.pod.rv, 37866);

	s = o.pod.spec;
	assert_non_null(s);
	assert_string_equal(S(m, s->scheduler), "muster");
	assert_int_equal(s->priority_class, 0);
	assert_int_equal(s->has_priority, 1);
	assert_int_equal(s->priority, 0);
	assert_int_equal(s->preempt_never, 0); /* PreemptLowerPriority */
	assert_int_equal(s->active_deadline_s, 3600);

	/* containers 1250m + 2Gi + 8 GPUs, sidecar 500m + 256Mi, init 4 CPUs + 1Gi:
	 * max(1750m, 4000m) CPU, 2Gi + 256Mi memory, 8 GPUs */
	assert_int_equal(s->nrequests, 3);
	assert_int_equal(req(s, KUBEAPI_RES_CPU), 4000);
	assert_int_equal(req(s, KUBEAPI_RES_MEMORY), 2 * GI + 256 * MI);
	assert_int_equal(req(s, KUBEAPI_RES_GPU), 8);
	assert_int_equal(req(s, KUBEAPI_RES_PODS), 0);

	assert_int_equal(s->ntolerations, 3);
	t = kubeapi_podspec_tolerations(s);
	assert_string_equal(S(m, t[0].key), "nvidia.com/gpu");
	assert_int_equal(t[0].value, 0);
	assert_int_equal(t[0].op, KUBEAPI_TOL_EXISTS);
	assert_int_equal(t[0].effect, KUBEAPI_EFFECT_NO_SCHEDULE);
	assert_int_equal(t[0].has_seconds, 0);
	assert_string_equal(S(m, t[1].key), "node.kubernetes.io/not-ready");
	assert_int_equal(t[1].effect, KUBEAPI_EFFECT_NO_EXECUTE);
	assert_int_equal(t[1].has_seconds, 1);
	assert_int_equal(t[1].seconds, 300);
	assert_string_equal(S(m, t[2].key), "node.kubernetes.io/unreachable");

	assert_int_equal(s->nselector, 1);
	assert_string_equal(S(m, kubeapi_podspec_selector(s)[0].key), "nvidia.com/gpu.product");
	assert_string_equal(S(m, kubeapi_podspec_selector(s)[0].value), "NVIDIA-H100-80GB-HBM3");

	assert_int_equal(s->nrequired, 1);
	assert_int_equal(s->npreferred, 1);
	assert_int_equal(s->nrequirements, 2);
	assert_int_equal(s->nvalues, 3);
	terms = kubeapi_podspec_terms(s);
	r = kubeapi_podspec_requirements(s);
	v = kubeapi_podspec_values(s);
	assert_int_equal(terms[0].weight, 0);
	assert_int_equal(terms[0].n, 1);
	r += terms[0].first;
	assert_string_equal(S(m, r->key), "muster.dev/rack");
	assert_int_equal(r->op, KUBEAPI_SEL_IN);
	assert_int_equal(r->is_field, 0);
	assert_int_equal(r->nvalues, 2);
	assert_string_equal(S(m, v[r->first_value]), "gpu-rack-000");
	assert_string_equal(S(m, v[r->first_value + 1]), "gpu-rack-001");
	assert_int_equal(terms[1].weight, 10);
	assert_int_equal(terms[1].n, 1);
	r = kubeapi_podspec_requirements(s) + terms[1].first;
	assert_string_equal(S(m, r->key), "topology.kubernetes.io/zone");
	assert_int_equal(r->nvalues, 1);
	assert_string_equal(S(m, v[r->first_value]), "zone-a");

	/* muster.dev/ labels and annotations only */
	assert_non_null(o.pod.muster);
	assert_int_equal(o.pod.muster->n, 2);
	assert_string_equal(label(m, o.pod.muster, "muster.dev/queue"), "team-a");
	assert_string_equal(label(m, o.pod.muster, "muster.dev/runtime"), "4h");
	assert_int_equal(kubeapi_labels_get(o.pod.muster, ID(m, "app")), 0);

	kubeapi_pod_release(m, &o.pod);
	assert_null(o.pod.spec);
	assert_clean(m);
	kubeapi_pod_release(m, &o.pod); /* safe on a released (zeroed) pod */
	cJSON_Delete(doc);
}

/* Bound, being deleted, grouped by annotation; two ORed required terms,
 * one with matchFields; an extended resource registered by name. */
static void test_pod_bound_deleting(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("pods.json", "bound");
	const struct kubeapi_podspec *s;
	const struct kubeapi_term *terms;
	const struct kubeapi_requirement *r;
	const uint32_t *v;
	unsigned foo;
	union obj o;

	RES(m, "example.com/foo"); /* offered (as the queue file would name it) */
	decode_ok(m, POD, doc, &o);
	s = o.pod.spec;
	assert_string_equal(S(m, o.pod.node), "cpu-0000");
	assert_string_equal(S(m, o.pod.group), "ann-group");
	assert_int_equal(o.pod.group_source, KUBEAPI_GROUP_ANNOTATION);
	assert_int_equal(o.pod.phase, KUBEAPI_POD_RUNNING);
	assert_int_equal(o.pod.sched_cond, KUBEAPI_SCHED_COND_TRUE);
	assert_int_equal(o.pod.deleting, 1);
	assert_int_equal(o.pod.deleted_s, 1795280178); /* 2026-11-21T16:56:18Z */
	assert_int_equal(o.pod.created_s, 1795280154);
	assert_int_equal(o.pod.started_s, 1795280154); /* 2026-11-21T16:55:54Z */
	assert_string_equal(S(m, s->scheduler), "default-scheduler");
	assert_int_equal(s->active_deadline_s, -1);

	foo = RES(m, "example.com/foo");
	assert_true(foo >= KUBEAPI_RES_WELL_KNOWN);
	assert_int_equal(s->nrequests, 3);
	assert_int_equal(req(s, KUBEAPI_RES_CPU), 2000);
	assert_int_equal(req(s, KUBEAPI_RES_EPHEMERAL), 1000000000);
	assert_int_equal(req(s, foo), 3);
	assert_int_equal(req(s, KUBEAPI_RES_MEMORY), 0);

	assert_int_equal(s->nrequired, 2);
	assert_int_equal(s->npreferred, 2);
	assert_int_equal(s->nselector, 0);
	terms = kubeapi_podspec_terms(s);
	r = kubeapi_podspec_requirements(s);
	v = kubeapi_podspec_values(s);
	/* required[0]: a Gt 5 */
	assert_int_equal(terms[0].n, 1);
	assert_string_equal(S(m, r[terms[0].first].key), "a");
	assert_int_equal(r[terms[0].first].op, KUBEAPI_SEL_GT);
	assert_string_equal(S(m, v[r[terms[0].first].first_value]), "5");
	/* required[1]: b Exists and metadata.name NotIn [cpu-0001] (a field) */
	assert_int_equal(terms[1].weight, 0);
	assert_int_equal(terms[1].n, 2);
	assert_string_equal(S(m, r[terms[1].first].key), "b");
	assert_int_equal(r[terms[1].first].op, KUBEAPI_SEL_EXISTS);
	assert_int_equal(r[terms[1].first].nvalues, 0);
	assert_int_equal(r[terms[1].first].is_field, 0);
	assert_string_equal(S(m, r[terms[1].first + 1].key), "metadata.name");
	assert_int_equal(r[terms[1].first + 1].op, KUBEAPI_SEL_NOT_IN);
	assert_int_equal(r[terms[1].first + 1].is_field, 1);
	assert_int_equal(r[terms[1].first + 1].nvalues, 1);
	assert_string_equal(S(m, v[r[terms[1].first + 1].first_value]), "cpu-0001");
	/* preferred: weight 1 c Lt 9, weight 100 d DoesNotExist */
	assert_int_equal(terms[2].weight, 1);
	assert_int_equal(r[terms[2].first].op, KUBEAPI_SEL_LT);
	assert_string_equal(S(m, v[r[terms[2].first].first_value]), "9");
	assert_int_equal(terms[3].weight, 100);
	assert_string_equal(S(m, r[terms[3].first].key), "d");
	assert_int_equal(r[terms[3].first].op, KUBEAPI_SEL_DOES_NOT_EXIST);

	assert_int_equal(o.pod.muster->n, 1);
	assert_string_equal(label(m, o.pod.muster, "muster.dev/role"), "worker");
	kubeapi_pod_release(m, &o.pod);
	cJSON_Delete(doc);
}

/* A Job's pod: controller owner, label group winning over the annotation,
 * Unschedulable, priority from a Never-preempting class, tolerations with
 * Equal and a bare Exists. */
static void test_pod_job(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("pods.json", "job1-6k55d");
	const struct kubeapi_toleration *t;
	const struct kubeapi_podspec *s;
	union obj o;

	decode_ok(m, POD, doc, &o);
	s = o.pod.spec;
	assert_string_equal(S(m, o.pod.owner_kind), "Job");
	assert_string_equal(S(m, o.pod.owner_name), "job1");
	assert_string_equal(S(m, o.pod.group), "pg-sp");
	assert_int_equal(o.pod.group_source, KUBEAPI_GROUP_LABEL);
	assert_int_equal(ID(m, "ignored-by-label"), 0);
	assert_int_equal(o.pod.sched_cond, KUBEAPI_SCHED_COND_UNSCHEDULABLE);
	assert_null(o.pod.muster);
	assert_string_equal(S(m, s->priority_class), "tdec-batch-low");
	assert_int_equal(s->priority, -50);
	assert_int_equal(s->preempt_never, 1);
	assert_int_equal(s->nrequests, 2);
	assert_int_equal(req(s, KUBEAPI_RES_CPU), 100);
	assert_int_equal(req(s, KUBEAPI_RES_MEMORY), 64 * MI);
	assert_int_equal(s->ntolerations, 2);
	t = kubeapi_podspec_tolerations(s);
	assert_string_equal(S(m, t[0].key), "k");
	assert_string_equal(S(m, t[0].value), "v");
	assert_int_equal(t[0].op, KUBEAPI_TOL_EQUAL);
	assert_int_equal(t[0].effect, KUBEAPI_EFFECT_PREFER_NO_SCHEDULE);
	assert_int_equal(t[1].key, 0);
	assert_int_equal(t[1].value, 0);
	assert_int_equal(t[1].op, KUBEAPI_TOL_EXISTS);
	assert_int_equal(t[1].effect, KUBEAPI_EFFECT_ANY);
	assert_int_equal(s->nrequired + s->npreferred + s->nselector, 0);
	kubeapi_pod_release(m, &o.pod);
	cJSON_Delete(doc);
}

/* Pod-level requests (spec.resources, on by default since 1.34) replace the
 * container sum for cpu and memory, as the kube-scheduler counts them. */
static void test_pod_level_resources(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("pods.json", "podlevel");
	union obj o;

	decode_ok(m, POD, doc, &o);
	assert_int_equal(req(o.pod.spec, KUBEAPI_RES_CPU), 4000); /* not the container's 1 */
	assert_int_equal(req(o.pod.spec, KUBEAPI_RES_MEMORY), 4 * GI);
	kubeapi_pod_release(m, &o.pod);

	/* only what the pod level names is replaced; overhead comes on top */
	set(doc, "spec resources requests", "{\"cpu\":\"500m\"}");
	set(doc, "spec containers 0 resources requests", "{\"cpu\":\"2\",\"memory\":\"1Gi\"}");
	set(doc, "spec overhead", "{\"cpu\":\"100m\",\"memory\":\"10Mi\"}");
	decode_ok(m, POD, doc, &o);
	assert_int_equal(req(o.pod.spec, KUBEAPI_RES_CPU), 600);
	assert_int_equal(req(o.pod.spec, KUBEAPI_RES_MEMORY), GI + 10 * MI);
	kubeapi_pod_release(m, &o.pod);
	cJSON_Delete(doc);
}

/* Constraints Muster does not apply yet are noted, each by its bit, and so
 * are scheduling gates; their preferred forms are not constraints. */
static void test_pod_unsupported_and_gates(void **state)
{
	static const struct {
		const char *path, *json;
		unsigned bits;
	} cases[] = {
	    {"spec affinity",
	     "{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
	     "\"topologyKey\":\"kubernetes.io/hostname\"}]}}",
	     KUBEAPI_UNSUP_POD_ANTI_AFFINITY},
	    {"spec affinity",
	     "{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
	     "\"topologyKey\":\"zone\"}]},\"podAntiAffinity\":{"
	     "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":1}]}}",
	     KUBEAPI_UNSUP_POD_AFFINITY},
	    {"spec affinity",
	     "{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[]}}", 0},
	    {"spec topologySpreadConstraints",
	     "[{\"maxSkew\":1,\"whenUnsatisfiable\":\"ScheduleAnyway\"}]", 0},
	    {"spec topologySpreadConstraints",
	     "[{\"maxSkew\":1,\"whenUnsatisfiable\":\"ScheduleAnyway\"},{\"maxSkew\":1,"
	     "\"whenUnsatisfiable\":\"DoNotSchedule\"}]",
	     KUBEAPI_UNSUP_SPREAD},
	    {"spec volumes", "[{\"name\":\"a\",\"emptyDir\":{}},{\"name\":\"b\",\"configMap\":{}}]",
	     0},
	    {"spec volumes", "[{\"name\":\"d\",\"persistentVolumeClaim\":{\"claimName\":\"d\"}}]",
	     KUBEAPI_UNSUP_VOLUMES},
	    {"spec volumes", "[{\"name\":\"e\",\"ephemeral\":{}}]", KUBEAPI_UNSUP_VOLUMES},
	    {"spec containers 0 ports", "[{\"containerPort\":80}]", 0},
	    {"spec containers 0 ports", "[{\"containerPort\":80,\"hostPort\":8080}]",
	     KUBEAPI_UNSUP_HOST_PORTS},
	    {"spec resourceClaims", "[{\"name\":\"gpu\",\"resourceClaimName\":\"c\"}]",
	     KUBEAPI_UNSUP_CLAIMS},
	};
	struct kubeapi_model *m = *state;
	union obj o;

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		cJSON *doc = item("pods.json", "podlevel");

		set(doc, cases[k].path, cases[k].json);
		decode_ok(m, POD, doc, &o);
		if (o.pod.spec->unsupported != cases[k].bits)
			fail_msg("case %zu (%s): bits %u, want %u", k, cases[k].json,
			         o.pod.spec->unsupported, cases[k].bits);
		assert_int_equal(o.pod.spec->gated, 0);
		kubeapi_pod_release(m, &o.pod);
		cJSON_Delete(doc);
	}
	assert_string_equal(kubeapi_unsupported_name(KUBEAPI_UNSUP_SPREAD | KUBEAPI_UNSUP_VOLUMES),
	                    "topologySpreadConstraints (DoNotSchedule)");
	assert_null(kubeapi_unsupported_name(0));

	cJSON *doc = item("pods.json", "podlevel");
	set(doc, "spec schedulingGates", "[{\"name\":\"kueue.x-k8s.io/admission\"}]");
	decode_ok(m, POD, doc, &o);
	assert_int_equal(o.pod.spec->gated, 1);
	kubeapi_pod_release(m, &o.pod);
	set(doc, "spec schedulingGates", "[]");
	decode_ok(m, POD, doc, &o);
	assert_int_equal(o.pod.spec->gated, 0);
	kubeapi_pod_release(m, &o.pod);
	set(doc, "spec volumes", "{\"name\":\"not a list\"}");
	expect_bad(m, POD, doc, "spec.volumes");
	cJSON_Delete(doc);
}

/* Effective requests per resource: sum of containers plus sidecars against
 * the largest init step (an init container plus the sidecars started
 * before it), plus overhead. Worked through in the comments. */
static void test_pod_requests_sidecars(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = J("{\"metadata\":{\"name\":\"calc\",\"namespace\":\"t\"},\"spec\":{"
	               "\"containers\":["
	               " {\"name\":\"main\",\"resources\":{\"requests\":"
	               "  {\"cpu\":\"1\",\"memory\":\"1Gi\"}}},"
	               " {\"name\":\"aux\",\"resources\":{\"requests\":{\"memory\":\"512Mi\","
	               "  \"nvidia.com/gpu\":\"2\",\"example.com/fpga\":\"1\"}}},"
	               " {\"name\":\"none\"}],"
	               "\"initContainers\":["
	               " {\"name\":\"s1\",\"restartPolicy\":\"Always\",\"resources\":"
	               "  {\"requests\":{\"cpu\":\"1\",\"memory\":\"100Mi\"}}},"
	               " {\"name\":\"i1\",\"resources\":{\"requests\":{\"cpu\":\"3\","
	               "  \"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"}}},"
	               " {\"name\":\"s2\",\"restartPolicy\":\"Always\",\"resources\":"
	               "  {\"requests\":{\"cpu\":\"2\"}}},"
	               " {\"name\":\"i2\",\"resources\":{\"requests\":{\"cpu\":\"2\","
	               "  \"ephemeral-storage\":\"10Gi\"}}},"
	               " {\"name\":\"i3\",\"resources\":{\"limits\":{\"cpu\":\"64\"}}}],"
	               "\"overhead\":{\"cpu\":\"250m\",\"memory\":\"120Mi\"}}}");
	const struct kubeapi_podspec *s;
	union obj o;

	RES(m, "example.com/fpga");
	decode_ok(m, POD, doc, &o);
	s = o.pod.spec;
	/* cpu: containers 1 + sidecars 3 = 4 < i2 (2 + sidecars 3) = 5; +250m */
	assert_int_equal(req(s, KUBEAPI_RES_CPU), 5250);
	/* memory: 1.5Gi + 100Mi > i1 (1Gi + 100Mi); + 120Mi (limits don't count) */
	assert_int_equal(req(s, KUBEAPI_RES_MEMORY), GI + 512 * MI + 100 * MI + 120 * MI);
	/* gpu: containers 2 > i1's 1 */
	assert_int_equal(req(s, KUBEAPI_RES_GPU), 2);
	/* ephemeral-storage only in an init container */
	assert_int_equal(req(s, KUBEAPI_RES_EPHEMERAL), 10 * GI);
	assert_int_equal(req(s, RES(m, "example.com/fpga")), 1);
	assert_int_equal(s->nrequests, 5);
	kubeapi_pod_release(m, &o.pod);

	/* boundary: one container at INT64_MAX bytes is fine */
	set(doc, "spec",
	    "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
	    "{\"memory\":\"9223372036854775807\"}}}]}");
	decode_ok(m, POD, doc, &o);
	assert_int_equal(req(o.pod.spec, KUBEAPI_RES_MEMORY), INT64_MAX);
	kubeapi_pod_release(m, &o.pod);
	cJSON_Delete(doc);
}

/* Pods with equal specs share one blob; a different spec is another blob;
 * what is not in the spec (names, nodeName, labels) does not matter. */
static void test_pod_specs_shared(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *list = load("pods-smoke.json"), *it;
	cJSON *bound = item("pods.json", "bound"), *job0 = item("pods.json", "job1-6k55d");
	cJSON *job1 = item("pods.json", "job1-6pjkl");
	union obj rich[3], b, b2, j0, j1, x;
	int n = 0;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "items"))
	{
		assert_true(n < 3);
		decode_ok(m, POD, it, &rich[n++]);
	}
	assert_int_equal(n, 3);
	assert_ptr_equal(rich[0].pod.spec, rich[1].pod.spec);
	assert_ptr_equal(rich[0].pod.spec, rich[2].pod.spec);
	assert_int_equal(intern_blob_refs(rich[0].pod.spec), 3);
	assert_ptr_equal(rich[0].pod.muster, rich[2].pod.muster);
	decode_ok(m, POD, job0, &j0);
	decode_ok(m, POD, job1, &j1);
	decode_ok(m, POD, bound, &b);
	assert_ptr_equal(j0.pod.spec, j1.pod.spec);
	assert_ptr_not_equal(j0.pod.spec, b.pod.spec);
	assert_ptr_not_equal(j0.pod.spec, rich[0].pod.spec);

	/* another node, name and labels: same spec */
	set(bound, "spec nodeName", "\"cpu-0003\"");
	set(bound, "metadata name", "\"bound-2\"");
	set(bound, "metadata labels", "{\"x\":\"y\"}");
	decode_ok(m, POD, bound, &b2);
	assert_ptr_equal(b2.pod.spec, b.pod.spec);
	assert_int_equal(intern_blob_refs(b.pod.spec), 2);
	kubeapi_pod_release(m, &b2.pod);

	/* a container change hidden by the larger init container: same
	 * effective requests, same spec */
	set(list, "items 0 spec containers 0 resources requests cpu", "\"1001m\"");
	decode_ok(m, POD, cJSON_GetArrayItem(cJSON_GetObjectItem(list, "items"), 0), &x);
	assert_ptr_equal(x.pod.spec, rich[0].pod.spec);
	kubeapi_pod_release(m, &x.pod);
	/* the init container grows: another spec */
	set(list, "items 0 spec initContainers 0 resources requests cpu", "\"5\"");
	decode_ok(m, POD, cJSON_GetArrayItem(cJSON_GetObjectItem(list, "items"), 0), &x);
	assert_ptr_not_equal(x.pod.spec, rich[0].pod.spec);
	assert_int_equal(req(x.pod.spec, KUBEAPI_RES_CPU), 5000);
	kubeapi_pod_release(m, &x.pod);
	/* tolerations in another order: another spec */
	set(job1, "spec tolerations",
	    "[{\"operator\":\"Exists\"},{\"effect\":\"PreferNoSchedule\","
	    "\"key\":\"k\",\"operator\":\"Equal\",\"value\":\"v\"}]");
	decode_ok(m, POD, job1, &x);
	assert_ptr_not_equal(x.pod.spec, j0.pod.spec);
	kubeapi_pod_release(m, &x.pod);

	/* releasing some keeps the shared spec and its strings for the rest */
	kubeapi_pod_release(m, &rich[0].pod);
	kubeapi_pod_release(m, &rich[1].pod);
	assert_int_equal(intern_blob_refs(rich[2].pod.spec), 1);
	assert_string_equal(S(m, rich[2].pod.spec->scheduler), "muster");
	assert_string_equal(S(m, kubeapi_podspec_tolerations(rich[2].pod.spec)[0].key),
	                    "nvidia.com/gpu");
	assert_int_not_equal(ID(m, "gpu-rack-001"), 0);
	kubeapi_pod_release(m, &rich[2].pod);
	assert_int_equal(ID(m, "gpu-rack-001"), 0);
	kubeapi_pod_release(m, &j0.pod);
	kubeapi_pod_release(m, &j1.pod);
	kubeapi_pod_release(m, &b.pod);
	assert_clean(m);
	cJSON_Delete(list);
	cJSON_Delete(bound);
	cJSON_Delete(job0);
	cJSON_Delete(job1);
}

/* Decoders reuse one scratch area: a smaller spec after a larger one must
 * carry nothing over, and the larger one decoded again must be byte-equal
 * (the same blob) to its first decode. */
static void test_pod_scratch_reuse(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *list = load("pods-smoke.json");
	cJSON *rich = cJSON_GetArrayItem(cJSON_GetObjectItem(list, "items"), 0);
	cJSON *small = item("pods.json", "bound");
	union obj a, b, c;
	const struct kubeapi_requirement *r;

	decode_ok(m, POD, rich, &a);
	assert_true(a.pod.spec->nrequirements >= 2 && a.pod.spec->ntolerations >= 2);
	set(small, "spec affinity",
	    "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
	    "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"k\","
	    "\"operator\":\"Exists\"}]}]}}}");
	set(small, "spec tolerations", "[{\"key\":\"t\",\"operator\":\"Exists\"}]");
	decode_ok(m, POD, small, &b);
	assert_int_equal(b.pod.spec->nrequirements, 1);
	assert_int_equal(b.pod.spec->nvalues, 0);
	assert_int_equal(b.pod.spec->ntolerations, 1);
	r = kubeapi_podspec_requirements(b.pod.spec);
	assert_int_equal(r[0].nvalues, 0);
	assert_int_equal(r[0].op, KUBEAPI_SEL_EXISTS);
	assert_false(kubeapi_podspec_tolerations(b.pod.spec)[0].has_seconds);
	decode_ok(m, POD, rich, &c);
	assert_ptr_equal(c.pod.spec, a.pod.spec);
	kubeapi_pod_release(m, &a.pod);
	kubeapi_pod_release(m, &b.pod);
	kubeapi_pod_release(m, &c.pod);
	assert_clean(m);
	cJSON_Delete(list);
	cJSON_Delete(small);
}

/* Group from the label, else the annotation; an empty label falls back. */
static void test_pod_group_source(void **state)
{
	struct kubeapi_model *m = *state;
	static const struct {
		const char *label, *annotation; /* JSON, or NULL to delete */
		const char *group;
		uint8_t source;
	} rows[] = {
	    {"\"pg-a\"", "\"pg-b\"", "pg-a", KUBEAPI_GROUP_LABEL},
	    {"\"\"", "\"pg-b\"", "pg-b", KUBEAPI_GROUP_ANNOTATION},
	    {NULL, "\"pg-b\"", "pg-b", KUBEAPI_GROUP_ANNOTATION},
	    {"\"pg-a\"", NULL, "pg-a", KUBEAPI_GROUP_LABEL},
	    {NULL, NULL, "", KUBEAPI_GROUP_NONE},
	    {NULL, "\"\"", "", KUBEAPI_GROUP_NONE},
	    {"\"\"", "\"\"", "", KUBEAPI_GROUP_NONE},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		cJSON *doc = item("pods.json", "job1-6pjkl");
		union obj o;

		set(doc, "metadata labels scheduling.x-k8s.io/pod-group", rows[i].label);
		set(doc, "metadata annotations scheduling.k8s.io/group-name", rows[i].annotation);
		decode_ok(m, POD, doc, &o);
		assert_string_equal(S(m, o.pod.group), rows[i].group);
		assert_int_equal(o.pod.group_source, rows[i].source);
		if (!rows[i].group[0])
			assert_int_equal(o.pod.group, 0);
		kubeapi_pod_release(m, &o.pod);
		cJSON_Delete(doc);
	}
	/* the annotation is only read when the label does not name a group */
	{
		cJSON *doc = item("pods.json", "job1-6pjkl");
		union obj o;

		set(doc, "metadata annotations scheduling.k8s.io/group-name", "{}");
		decode_ok(m, POD, doc, &o);
		kubeapi_pod_release(m, &o.pod);
		set(doc, "metadata labels scheduling.x-k8s.io/pod-group", NULL);
		expect_bad(m, POD, doc,
		           "metadata.annotations.scheduling.k8s.io/group-name: expected a string");
		cJSON_Delete(doc);
	}
}

/* The controller owner reference is the one with controller: true. */
static void test_pod_owner(void **state)
{
	struct kubeapi_model *m = *state;
	static const struct {
		const char *owners, *kind, *name;
	} rows[] = {
	    {"[{\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"controller\":false},"
	     "{\"kind\":\"Job\",\"name\":\"j2\",\"controller\":true}]",
	     "Job", "j2"},
	    {"[{\"kind\":\"ReplicaSet\",\"name\":\"rs\"}]", "", ""},
	    {"[\"not an object\",{\"kind\":\"Job\",\"name\":\"j3\",\"controller\":true}]", "Job",
	     "j3"},
	    {"[]", "", ""},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		cJSON *doc = item("pods.json", "job1-6pjkl");
		union obj o;

		set(doc, "metadata ownerReferences", rows[i].owners);
		decode_ok(m, POD, doc, &o);
		assert_string_equal(S(m, o.pod.owner_kind), rows[i].kind);
		assert_string_equal(S(m, o.pod.owner_name), rows[i].name);
		kubeapi_pod_release(m, &o.pod);
		cJSON_Delete(doc);
	}
}

/* status.phase and the PodScheduled condition. */
static void test_pod_phase_and_condition(void **state)
{
	struct kubeapi_model *m = *state;
	static const struct {
		const char *status;
		uint8_t phase, cond;
	} rows[] = {
	    {NULL, KUBEAPI_POD_PENDING, KUBEAPI_SCHED_COND_NONE},
	    {"{}", KUBEAPI_POD_PENDING, KUBEAPI_SCHED_COND_NONE},
	    {"{\"phase\":\"Running\"}", KUBEAPI_POD_RUNNING, KUBEAPI_SCHED_COND_NONE},
	    {"{\"phase\":\"Succeeded\"}", KUBEAPI_POD_SUCCEEDED, KUBEAPI_SCHED_COND_NONE},
	    {"{\"phase\":\"Failed\"}", KUBEAPI_POD_FAILED, KUBEAPI_SCHED_COND_NONE},
	    {"{\"phase\":\"Unknown\"}", KUBEAPI_POD_UNKNOWN, KUBEAPI_SCHED_COND_NONE},
	    {"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\"}]}",
	     KUBEAPI_POD_PENDING, KUBEAPI_SCHED_COND_TRUE},
	    {"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
	     "\"reason\":\"Unschedulable\"}]}",
	     KUBEAPI_POD_PENDING, KUBEAPI_SCHED_COND_UNSCHEDULABLE},
	    {"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
	     "\"reason\":\"SchedulerError\"}]}",
	     KUBEAPI_POD_PENDING, KUBEAPI_SCHED_COND_OTHER},
	    {"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"Unknown\"}]}",
	     KUBEAPI_POD_PENDING, KUBEAPI_SCHED_COND_OTHER},
	    {"{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}", KUBEAPI_POD_PENDING,
	     KUBEAPI_SCHED_COND_NONE},
	    {"{\"conditions\":[7,{\"type\":\"PodScheduled\",\"status\":\"True\"}]}",
	     KUBEAPI_POD_PENDING, KUBEAPI_SCHED_COND_TRUE},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		cJSON *doc = item("pods.json", "job1-6pjkl");
		union obj o;

		set(doc, "status", rows[i].status);
		decode_ok(m, POD, doc, &o);
		if (o.pod.phase != rows[i].phase || o.pod.sched_cond != rows[i].cond)
			fail_msg("status %s: phase %d cond %d, want %d %d", rows[i].status,
			         o.pod.phase, o.pod.sched_cond, rows[i].phase, rows[i].cond);
		kubeapi_pod_release(m, &o.pod);
		cJSON_Delete(doc);
	}
}

/* Timestamps: RFC 3339 with fractions and offsets; anything else fails. */
static void test_pod_timestamps(void **state)
{
	struct kubeapi_model *m = *state;
	static const struct {
		const char *ts;
		int64_t unix_s;
	} good[] = {
	    {"2026-11-21T16:55:51Z", 1795280151},
	    {"2026-11-21T16:55:51.123456789Z", 1795280151},
	    {"2026-11-21T18:55:51+02:00", 1795280151},
	    {"2026-11-21T10:25:51-06:30", 1795280151},
	    {"2026-11-21t16:55:51z", 1795280151},
	    {"1970-01-01T00:00:00Z", 0},
	    {"2000-02-29T00:00:00Z", 951782400},
	    {"1969-12-31T23:59:59Z", -1},
	};
	static const char *const bad[] = {
	    "2026-11-21T16:55:51",
	    "2026-11-21 16:55:51Z",
	    "2026-13-01T00:00:00Z",
	    "2026-00-01T00:00:00Z",
	    "2026-11-32T00:00:00Z",
	    "2026-02-30T00:00:00Z",
	    "2025-02-29T00:00:00Z",
	    "2026-11-21T24:00:00Z",
	    "2026-11-21T16:60:00Z",
	    "2026-11-21T16:55:51.Z",
	    "2026-11-21T16:55:51+2:00",
	    "2026-11-21T16:55:51+0200",
	    "2026-11-21T16:55:51+24:00",
	    "2026-11-21T16:55:51ZZ",
	    "2026-11-2116:55:51Z",
	    "",
	    "yesterday",
	    "+2026-11-21T16:55:51Z",
	    "2026-11-21T16:55:51Z ",
	    "2026-1a-21T16:55:51Z",
	    "2026-11-21T16:55:51+02:0x",
	};
	char want[128];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cJSON *doc = item("pods.json", "job1-6pjkl");
		union obj o;

		set_path(doc, "metadata creationTimestamp", cJSON_CreateString(good[i].ts));
		set_path(doc, "metadata deletionTimestamp", cJSON_CreateString(good[i].ts));
		decode_ok(m, POD, doc, &o);
		if (o.pod.created_s != good[i].unix_s || o.pod.deleted_s != good[i].unix_s)
			fail_msg("%s: %" PRId64 " / %" PRId64 ", want %" PRId64, good[i].ts,
			         o.pod.created_s, o.pod.deleted_s, good[i].unix_s);
		assert_int_equal(o.pod.deleting, 1);
		kubeapi_pod_release(m, &o.pod);
		cJSON_Delete(doc);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *doc = item("pods.json", "job1-6pjkl");

		set_path(doc, "metadata creationTimestamp", cJSON_CreateString(bad[i]));
		snprintf(want, sizeof(want),
		         "metadata.creationTimestamp: not an RFC 3339 time: \"%s\"", bad[i]);
		if (!check_bad(m, POD, doc, want, bad[i]))
			fail_msg("creationTimestamp \"%s\" accepted or misreported", bad[i]);
		cJSON_Delete(doc);
		doc = item("pods.json", "job1-6pjkl");
		set_path(doc, "metadata deletionTimestamp", cJSON_CreateString(bad[i]));
		if (!check_bad(m, POD, doc, "metadata.deletionTimestamp: not an RFC 3339 time",
		               bad[i]))
			fail_msg("deletionTimestamp \"%s\" accepted or misreported", bad[i]);
		cJSON_Delete(doc);
	}
}

/* status.startTime: read as the metadata times are; absent (or null, as
 * before the kubelet takes the pod) is 0; a malformed one fails the pod. */
static void test_pod_start_time(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("pods.json", "job1-6pjkl");
	union obj o;

	set_path(doc, "status startTime", cJSON_CreateString("2026-11-21T18:55:51.5+02:00"));
	decode_ok(m, POD, doc, &o);
	assert_int_equal(o.pod.started_s, 1795280151);
	kubeapi_pod_release(m, &o.pod);
	cJSON_Delete(doc);

	doc = item("pods.json", "bound");
	set_path(doc, "status startTime", NULL);
	decode_ok(m, POD, doc, &o);
	assert_int_equal(o.pod.started_s, 0);
	kubeapi_pod_release(m, &o.pod);
	set_path(doc, "status startTime", cJSON_CreateNull());
	decode_ok(m, POD, doc, &o);
	assert_int_equal(o.pod.started_s, 0);
	kubeapi_pod_release(m, &o.pod);
	cJSON_Delete(doc);

	doc = item("pods.json", "job1-6pjkl");
	set_path(doc, "status startTime", cJSON_CreateString("2026-11-21T16:55:51"));
	expect_bad(m, POD, doc, "status.startTime: not an RFC 3339 time: \"2026-11-21T16:55:51\"");
	cJSON_Delete(doc);
	doc = item("pods.json", "job1-6pjkl");
	set_path(doc, "status startTime", cJSON_CreateNumber(1795280151));
	expect_bad(m, POD, doc, "status.startTime: ");
	cJSON_Delete(doc);
	assert_clean(m);
}

/* UIDs: 36 characters, dashes at 8, 13, 18 and 23, hex in either case. */
static void test_pod_uid(void **state)
{
	struct kubeapi_model *m = *state;
	static const uint8_t want[16] = {0xfe, 0x3d, 0x42, 0x60, 0x92, 0xcd, 0x41, 0x9f,
	                                 0x99, 0x13, 0xfb, 0xff, 0x23, 0x7f, 0x3f, 0x72};
	static const uint8_t zero[16] = {0};
	static const char *const bad[] = {
	    "fe3d426092cd419f9913fbff237f3f72",      "fe3d4260-92cd-419f-9913-fbff237f3f7",
	    "fe3d4260-92cd-419f-9913-fbff237f3f722", "fe3d4260_92cd-419f-9913-fbff237f3f72",
	    "ge3d4260-92cd-419f-9913-fbff237f3f72",  "fe3d4260-92cd-419f-9913-fbff237f3-72",
	    "fe3d42609-2cd-419f-9913-fbff237f3f72",  "",
	    " fe3d4260-92cd-419f-9913-fbff237f3f7",  "fe3d4260-92cd-419f-9913-fbff237f3f7\n",
	};
	cJSON *doc = item("pods.json", "job1-6k55d");
	union obj o;
	size_t i;

	set(doc, "metadata uid", "\"FE3D4260-92CD-419F-9913-FBFF237F3F72\"");
	decode_ok(m, POD, doc, &o);
	assert_memory_equal(o.pod.uid, want, 16);
	kubeapi_pod_release(m, &o.pod);
	set(doc, "metadata uid", NULL);
	decode_ok(m, POD, doc, &o);
	assert_memory_equal(o.pod.uid, zero, 16);
	kubeapi_pod_release(m, &o.pod);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set_path(doc, "metadata uid", cJSON_CreateString(bad[i]));
		if (!check_bad(m, POD, doc, "metadata.uid: not a UID", bad[i]))
			fail_msg("uid \"%s\" accepted or misreported", bad[i]);
	}
	cJSON_Delete(doc);
}

/* resourceVersion is kept when it is a plain decimal number, else 0. */
static void test_pod_resource_version(void **state)
{
	struct kubeapi_model *m = *state;
	static const struct {
		const char *rv;
		uint64_t want;
	} rows[] = {
	    {"38112", 38112},
	    {"0", 0},
	    {"18446744073709551615", UINT64_MAX},
	    {"18446744073709551616", 0},
	    {"", 0},
	    {"abc", 0},
	    {"12a", 0},
	    {"-1", 0},
	    {" 42", 0},
	    {"+42", 0},
	    {"0x10", 0},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		cJSON *doc = item("pods.json", "job1-6k55d");
		union obj o;

		set_path(doc, "metadata resourceVersion", cJSON_CreateString(rows[i].rv));
		decode_ok(m, POD, doc, &o);
		if (o.pod.rv != rows[i].want)
			fail_msg("resourceVersion \"%s\": %" PRIu64 ", want %" PRIu64, rows[i].rv,
			         o.pod.rv, rows[i].want);
		kubeapi_pod_release(m, &o.pod);
		cJSON_Delete(doc);
	}
}

/* An empty spec.nodeName is an unbound pod, as Kubernetes reads it. */
static void test_pod_empty_node_name(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("pods.json", "job1-6pjkl");
	union obj o;

	set(doc, "spec nodeName", "\"\"");
	decode_ok(m, POD, doc, &o);
	assert_int_equal(o.pod.node, 0);
	kubeapi_pod_release(m, &o.pod);
	cJSON_Delete(doc);
}

/* ---- other kinds -------------------------------------------------------------- */

static void test_node(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *gpu = item("nodes.json", "gpu-0000"), *cpu = item("nodes.json", "cpu-0000");
	const struct kubeapi_taint *t;
	union obj g, c, c2, g2, x;

	decode_ok(m, NODE, gpu, &g);
	assert_string_equal(S(m, g.node.name), "gpu-0000");
	assert_int_equal(g.node.rv, 37647);
	assert_int_equal(g.node.uid[0], 0x76);
	assert_int_equal(g.node.uid[15], 0x6d);
	assert_int_equal(g.node.ready, 1);
	assert_int_equal(g.node.unschedulable, 0);
	assert_int_equal(g.node.allocatable->n, 5);
	assert_int_equal(res_of(g.node.allocatable, KUBEAPI_RES_CPU), 96000);
	assert_int_equal(res_of(g.node.allocatable, KUBEAPI_RES_MEMORY), INT64_C(1) << 40);
	assert_int_equal(res_of(g.node.allocatable, KUBEAPI_RES_PODS), 110);
	assert_int_equal(res_of(g.node.allocatable, KUBEAPI_RES_EPHEMERAL), INT64_C(2) << 40);
	assert_int_equal(res_of(g.node.allocatable, KUBEAPI_RES_GPU), 8);
	assert_non_null(g.node.taints);
	assert_int_equal(g.node.taints->n, 1);
	t = g.node.taints->e;
	assert_string_equal(S(m, t[0].key), "nvidia.com/gpu");
	assert_string_equal(S(m, t[0].value), "present");
	assert_int_equal(t[0].effect, KUBEAPI_EFFECT_NO_SCHEDULE);
	/* every label, sorted by key id */
	assert_int_equal(g.node.labels->n, 16);
	assert_string_equal(label(m, g.node.labels, "muster.dev/rack"), "gpu-rack-000");
	assert_string_equal(label(m, g.node.labels, "nvidia.com/gpu.product"),
	                    "NVIDIA-H100-80GB-HBM3");
	assert_string_equal(label(m, g.node.labels, "type"), "kwok");
	assert_int_equal(kubeapi_labels_get(g.node.labels, ID(m, "kwok.x-k8s.io/node")), 0);
	assert_int_equal(kubeapi_labels_get(NULL, ID(m, "type")), 0);

	decode_ok(m, NODE, cpu, &c);
	assert_null(c.node.taints);
	assert_int_equal(c.node.allocatable->n, 4);
	assert_int_equal(res_of(c.node.allocatable, KUBEAPI_RES_CPU), 64000);
	assert_int_equal(res_of(c.node.allocatable, KUBEAPI_RES_MEMORY), 256 * GI);
	assert_int_equal(res_of(c.node.allocatable, KUBEAPI_RES_GPU), 0);

	/* a node like it shares allocatable and (same labels) the label set */
	set(cpu, "metadata name", "\"cpu-0001\"");
	decode_ok(m, NODE, cpu, &c2);
	assert_ptr_equal(c2.node.allocatable, c.node.allocatable);
	assert_ptr_equal(c2.node.labels, c.node.labels);
	kubeapi_node_release(m, &c2.node);
	set(cpu, "metadata labels kubernetes.io/hostname", "\"cpu-0001\"");
	decode_ok(m, NODE, cpu, &c2);
	assert_ptr_equal(c2.node.allocatable, c.node.allocatable);
	assert_ptr_not_equal(c2.node.labels, c.node.labels);
	assert_ptr_not_equal(c2.node.allocatable, g.node.allocatable);

	/* cordoned and not ready */
	set(gpu, "metadata name", "\"gpu-0001\"");
	set(gpu, "spec unschedulable", "true");
	set(gpu, "status conditions 0 status", "\"False\"");
	decode_ok(m, NODE, gpu, &g2);
	assert_int_equal(g2.node.unschedulable, 1);
	assert_int_equal(g2.node.ready, 0);
	assert_ptr_equal(g2.node.taints, g.node.taints);
	kubeapi_node_release(m, &g2.node);
	set(gpu, "status conditions 0 status", "\"Unknown\"");
	decode_ok(m, NODE, gpu, &x);
	assert_int_equal(x.node.ready, 0);
	kubeapi_node_release(m, &x.node);
	set(gpu, "status conditions", NULL);
	decode_ok(m, NODE, gpu, &x);
	assert_int_equal(x.node.ready, 0);
	kubeapi_node_release(m, &x.node);
	/* all three taint effects, a taint without value; no status at all */
	set(gpu, "spec taints",
	    "[{\"key\":\"a\",\"effect\":\"PreferNoSchedule\"},"
	    "{\"key\":\"b\",\"value\":\"1\",\"effect\":\"NoExecute\"},"
	    "{\"key\":\"c\",\"effect\":\"NoSchedule\"}]");
	set(gpu, "status", NULL);
	decode_ok(m, NODE, gpu, &x);
	assert_int_equal(x.node.taints->n, 3);
	assert_int_equal(x.node.taints->e[0].effect, KUBEAPI_EFFECT_PREFER_NO_SCHEDULE);
	assert_int_equal(x.node.taints->e[0].value, 0);
	assert_int_equal(x.node.taints->e[1].effect, KUBEAPI_EFFECT_NO_EXECUTE);
	assert_string_equal(S(m, x.node.taints->e[1].value), "1");
	assert_int_equal(x.node.taints->e[2].effect, KUBEAPI_EFFECT_NO_SCHEDULE);
	assert_null(x.node.allocatable);
	assert_int_equal(x.node.ready, 0);
	kubeapi_node_release(m, &x.node);

	kubeapi_node_release(m, &g.node);
	kubeapi_node_release(m, &c.node);
	kubeapi_node_release(m, &c2.node);
	assert_clean(m);
	cJSON_Delete(gpu);
	cJSON_Delete(cpu);
}

/* scheduling.x-k8s.io: minMember, minResources (quantities as strings and,
 * the CRD being int-or-string, as JSON integers), scheduleTimeoutSeconds. */
static void test_podgroup_scheduler_plugins(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("podgroups-x-k8s.json", "pg-sp");
	union obj o, o2;

	decode_ok(m, PG_SP, doc, &o);
	assert_int_equal(o.pg.dialect, KUBEAPI_PG_SCHEDULER_PLUGINS);
	assert_string_equal(S(m, o.pg.ns), "tdec-helper");
	assert_string_equal(S(m, o.pg.name), "pg-sp");
	assert_int_equal(o.pg.uid[0], 0x66);
	assert_int_equal(o.pg.rv, 38058);
	assert_int_equal(o.pg.created_s, 1795280151);
	assert_int_equal(o.pg.min_member, 4);
	assert_int_equal(o.pg.has_timeout, 1);
	assert_int_equal(o.pg.timeout_s, 120);
	assert_int_equal(o.pg.min_resources->n, 3);
	assert_int_equal(res_of(o.pg.min_resources, KUBEAPI_RES_CPU), 3500);
	assert_int_equal(res_of(o.pg.min_resources, KUBEAPI_RES_MEMORY), 8 * GI);
	assert_int_equal(res_of(o.pg.min_resources, KUBEAPI_RES_GPU), 32); /* JSON 32 */
	assert_int_equal(o.pg.queue, 0);
	assert_int_equal(o.pg.priority_class, 0);
	assert_int_equal(o.pg.status.phase, 0);
	assert_int_equal(o.pg.muster->n, 1);
	assert_string_equal(label(m, o.pg.muster, "muster.dev/queue"), "team-a");

	/* a group with the same minimum shares it; status.phase is kept */
	set(doc, "metadata name", "\"pg-sp-2\"");
	set(doc, "status", "{\"phase\":\"Running\"}");
	decode_ok(m, PG_SP, doc, &o2);
	assert_ptr_equal(o2.pg.min_resources, o.pg.min_resources);
	assert_string_equal(S(m, o2.pg.status.phase), "Running");
	kubeapi_podgroup_release(m, &o2.pg);
	/* minMember defaults to 1; no timeout; Volcano's fields are not read */
	set(doc, "spec", "{\"queue\":\"q\",\"priorityClassName\":\"p\"}");
	decode_ok(m, PG_SP, doc, &o2);
	assert_int_equal(o2.pg.min_member, 1);
	assert_int_equal(o2.pg.has_timeout, 0);
	assert_null(o2.pg.min_resources);
	assert_int_equal(o2.pg.queue, 0);
	assert_int_equal(o2.pg.priority_class, 0);
	kubeapi_podgroup_release(m, &o2.pg);
	kubeapi_podgroup_release(m, &o.pg);
	cJSON_Delete(doc);
}

/* scheduling.volcano.sh: queue and priorityClassName; no timeout. */
static void test_podgroup_volcano(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("podgroups-volcano.json", "pg-vc");
	union obj o;

	decode_ok(m, PG_VC, doc, &o);
	assert_int_equal(o.pg.dialect, KUBEAPI_PG_VOLCANO);
	assert_string_equal(S(m, o.pg.name), "pg-vc");
	assert_int_equal(o.pg.min_member, 2);
	assert_string_equal(S(m, o.pg.queue), "research");
	assert_string_equal(S(m, o.pg.priority_class), "tdec-batch-low");
	assert_int_equal(o.pg.has_timeout, 0);
	assert_int_equal(res_of(o.pg.min_resources, KUBEAPI_RES_CPU), 2000); /* JSON 2 */
	assert_int_equal(res_of(o.pg.min_resources, KUBEAPI_RES_MEMORY), GI);
	assert_string_equal(label(m, o.pg.muster, "muster.dev/note"), "hi");
	kubeapi_podgroup_release(m, &o.pg);

	/* minMember 0 is allowed; scheduleTimeoutSeconds is not read here */
	set(doc, "spec minMember", "0");
	set(doc, "spec scheduleTimeoutSeconds", "\"ignored\"");
	decode_ok(m, PG_VC, doc, &o);
	assert_int_equal(o.pg.min_member, 0);
	assert_int_equal(o.pg.has_timeout, 0);
	kubeapi_podgroup_release(m, &o.pg);
	cJSON_Delete(doc);
}

/* scheduling.k8s.io/v1beta1 (captured from a 1.37.2 API server): gang
 * minCount, the topology key, disruptionMode, priority as the priority
 * admission resolved it, and the PodGroupInitiallyScheduled condition
 * picked out beside a DisruptionTarget. */
static void test_podgroup_native(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("podgroups-native.json", "pg-nat");
	union obj o;

	decode_ok(m, PG_NAT, doc, &o);
	assert_int_equal(o.pg.dialect, KUBEAPI_PG_NATIVE);
	assert_int_equal(o.pg.min_member, 4);
	assert_int_equal(o.pg.basic, 0);
	assert_string_equal(S(m, o.pg.topology_key), "muster.dev/rack");
	assert_int_equal(o.pg.disruption, KUBEAPI_DISRUPT_ALL);
	assert_int_equal(o.pg.has_priority, 1);
	assert_int_equal(o.pg.priority, 100);
	assert_string_equal(S(m, o.pg.priority_class), "tdec-batch-low");
	assert_int_equal(o.pg.preempt_never, 0);
	assert_null(o.pg.min_resources);
	assert_int_equal(o.pg.queue, 0);
	assert_string_equal(label(m, o.pg.muster, "muster.dev/queue"), "research");
	assert_int_equal(o.pg.status.ncond, 1);
	assert_string_equal(S(m, o.pg.status.cond_type), KUBEAPI_PG_SCHEDULED);
	assert_int_equal(o.pg.status.cond_true, 0);
	assert_string_equal(S(m, o.pg.status.cond_reason), "Unschedulable");
	assert_int_equal(o.pg.status.cond_msg,
	                 kubeapi_text_hash("gang tdec-helper/pg-nat: waits",
	                                   strlen("gang tdec-helper/pg-nat: waits")));
	assert_int_equal(o.pg.status.cond_time_s, 1795536062); /* 2026-11-24T16:01:02Z */
	kubeapi_podgroup_release(m, &o.pg);
	cJSON_Delete(doc);

	doc = item("podgroups-native.json", "pg-nat-basic");
	decode_ok(m, PG_NAT, doc, &o);
	assert_int_equal(o.pg.basic, 1);
	assert_int_equal(o.pg.min_member, 1);
	assert_int_equal(o.pg.topology_key, 0);
	assert_int_equal(o.pg.disruption, KUBEAPI_DISRUPT_SINGLE);
	assert_int_equal(o.pg.status.ncond, 0);
	kubeapi_podgroup_release(m, &o.pg);
	cJSON_Delete(doc);

	doc = item("podgroups-native.json", "pg-nat-never");
	decode_ok(m, PG_NAT, doc, &o);
	assert_int_equal(o.pg.preempt_never, 1);
	assert_int_equal(o.pg.priority, 50);
	kubeapi_podgroup_release(m, &o.pg);
	/* no status at all; no priority: none (the class, if any, decides) */
	set(doc, "status", NULL);
	set(doc, "spec priority", NULL);
	decode_ok(m, PG_NAT, doc, &o);
	assert_int_equal(o.pg.has_priority, 0);
	assert_int_equal(o.pg.status.ncond, 0);
	kubeapi_podgroup_release(m, &o.pg);

	/* malformed: skipped with the field named */
	set(doc, "spec schedulingPolicy basic", "{}");
	expect_bad(m, PG_NAT, doc, "spec.schedulingPolicy: expected exactly one of gang and basic");
	set(doc, "spec schedulingPolicy", "{}");
	expect_bad(m, PG_NAT, doc, "spec.schedulingPolicy: expected exactly one of gang and basic");
	set(doc, "spec schedulingPolicy", NULL);
	expect_bad(m, PG_NAT, doc, "spec.schedulingPolicy: missing");
	set(doc, "spec schedulingPolicy", "{\"gang\":{\"minCount\":0}}");
	expect_bad(m, PG_NAT, doc, "spec.schedulingPolicy.gang.minCount");
	set(doc, "spec schedulingPolicy", "{\"gang\":{\"minCount\":3}}");
	set(doc, "spec preemptionPolicy", "\"Sometimes\"");
	expect_bad(m, PG_NAT, doc, "spec.preemptionPolicy: \"Sometimes\" is not");
	set(doc, "spec preemptionPolicy", NULL);
	set(doc, "spec disruptionMode", "{\"single\":{},\"all\":{}}");
	expect_bad(m, PG_NAT, doc, "spec.disruptionMode: expected exactly one of single and all");
	set(doc, "spec disruptionMode", NULL);
	set(doc, "spec schedulingConstraints", "{\"topology\":[{\"key\":\"a\"},{\"key\":\"b\"}]}");
	expect_bad(m, PG_NAT, doc, "spec.schedulingConstraints.topology");
	set(doc, "spec schedulingConstraints", "{\"topology\":[{}]}");
	expect_bad(m, PG_NAT, doc, "spec.schedulingConstraints.topology[0].key: missing");
	set(doc, "spec schedulingConstraints", "{\"topology\":[]}");
	decode_ok(m, PG_NAT, doc, &o);
	assert_int_equal(o.pg.min_member, 3);
	assert_int_equal(o.pg.topology_key, 0);
	kubeapi_podgroup_release(m, &o.pg);
	cJSON_Delete(doc);
}

/* A Workload: its muster.dev/ labels only; a PodGroup's workloadRef. */
static void test_workload(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("workloads.json", "wl-train");
	union obj o;

	decode_ok(m, WL, doc, &o);
	assert_string_equal(S(m, o.wl.ns), "tdec-helper");
	assert_string_equal(S(m, o.wl.name), "wl-train");
	assert_int_equal(o.wl.muster->n, 1);
	assert_string_equal(label(m, o.wl.muster, "muster.dev/queue"), "research");
	kubeapi_workload_release(m, &o.wl);
	cJSON_Delete(doc);

	doc = item("podgroups-native.json", "pg-nat");
	set(doc, "spec workloadRef",
	    "{\"workloadName\":\"wl-train\",\"templateName\":\"workers\"}");
	decode_ok(m, PG_NAT, doc, &o);
	assert_string_equal(S(m, o.pg.workload), "wl-train");
	kubeapi_podgroup_release(m, &o.pg);
	set(doc, "spec workloadRef", "{\"workloadName\":3}");
	expect_bad(m, PG_NAT, doc, "spec.workloadRef.workloadName: expected a string");
	cJSON_Delete(doc);
}

/* spec.schedulingGroup.podGroupName names a native PodGroup when the pod
 * names no CRD PodGroup: the Job controller of 1.37 gives every Job's pods
 * a (basic) native group, and a label or annotation on the template is
 * the user's own choice. */
static void test_pod_native_group(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("pods.json", "job1-6pjkl");
	union obj o;

	set(doc, "metadata labels scheduling.x-k8s.io/pod-group", NULL);
	set(doc, "metadata annotations scheduling.k8s.io/group-name", NULL);
	set(doc, "spec schedulingGroup", "{\"podGroupName\":\"pg-nat\"}");
	decode_ok(m, POD, doc, &o);
	assert_string_equal(S(m, o.pod.group), "pg-nat");
	assert_int_equal(o.pod.group_source, KUBEAPI_GROUP_NATIVE);
	kubeapi_pod_release(m, &o.pod);
	/* the label wins, then the annotation */
	set(doc, "metadata labels scheduling.x-k8s.io/pod-group", "\"pg-a\"");
	decode_ok(m, POD, doc, &o);
	assert_string_equal(S(m, o.pod.group), "pg-a");
	assert_int_equal(o.pod.group_source, KUBEAPI_GROUP_LABEL);
	kubeapi_pod_release(m, &o.pod);
	set(doc, "metadata labels scheduling.x-k8s.io/pod-group", NULL);
	set(doc, "metadata annotations scheduling.k8s.io/group-name", "\"pg-b\"");
	decode_ok(m, POD, doc, &o);
	assert_string_equal(S(m, o.pod.group), "pg-b");
	assert_int_equal(o.pod.group_source, KUBEAPI_GROUP_ANNOTATION);
	kubeapi_pod_release(m, &o.pod);
	set(doc, "metadata annotations scheduling.k8s.io/group-name", NULL);
	/* an empty schedulingGroup: no group */
	set(doc, "spec schedulingGroup", "{}");
	decode_ok(m, POD, doc, &o);
	assert_int_equal(o.pod.group, 0);
	assert_int_equal(o.pod.group_source, KUBEAPI_GROUP_NONE);
	kubeapi_pod_release(m, &o.pod);
	set(doc, "spec schedulingGroup", "{\"podGroupName\":7}");
	expect_bad(m, POD, doc, "spec.schedulingGroup.podGroupName: expected a string");
	set(doc, "spec schedulingGroup", "[]");
	expect_bad(m, POD, doc, "spec.schedulingGroup: expected an object");
	cJSON_Delete(doc);
}

static void test_priorityclass(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *low = item("priorityclasses.json", "tdec-batch-low");
	cJSON *crit = item("priorityclasses.json", "system-node-critical");
	union obj o;

	decode_ok(m, PC, low, &o);
	assert_string_equal(S(m, o.pc.name), "tdec-batch-low");
	assert_int_equal(o.pc.value, -50);
	assert_int_equal(o.pc.preempt_never, 1);
	assert_int_equal(o.pc.global_default, 0);
	assert_int_equal(o.pc.rv, 38057);
	kubeapi_priorityclass_release(m, &o.pc);
	decode_ok(m, PC, crit, &o);
	assert_int_equal(o.pc.value, 2000001000);
	assert_int_equal(o.pc.preempt_never, 0);
	kubeapi_priorityclass_release(m, &o.pc);
	set(low, "globalDefault", "true");
	set(low, "preemptionPolicy", NULL);
	set(low, "value", "-2147483648");
	decode_ok(m, PC, low, &o);
	assert_int_equal(o.pc.global_default, 1);
	assert_int_equal(o.pc.preempt_never, 0);
	assert_int_equal(o.pc.value, INT32_MIN);
	kubeapi_priorityclass_release(m, &o.pc);
	cJSON_Delete(low);
	cJSON_Delete(crit);
}

static void test_pdb(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *sel = item("pdbs.json", "pdb-sel"), *nosel = item("pdbs.json", "pdb-nosel");
	cJSON *empty = item("pdbs.json", "pdb-empty");
	const struct kubeapi_requirement *r;
	const uint32_t *v;
	union obj a, a2, b, c;

	decode_ok(m, PDB, sel, &a);
	assert_string_equal(S(m, a.pdb.ns), "tdec-helper");
	assert_string_equal(S(m, a.pdb.name), "pdb-sel");
	assert_int_equal(a.pdb.disruptions_allowed, 1);
	assert_int_equal(a.pdb.selects_nothing, 0);
	assert_non_null(a.pdb.selector);
	assert_int_equal(a.pdb.selector->nreq, 4);
	assert_int_equal(a.pdb.selector->nvalues, 4);
	r = kubeapi_selector_requirements(a.pdb.selector);
	v = kubeapi_selector_values(a.pdb.selector);
	/* matchLabels, as In with one value each */
	assert_string_equal(S(m, r[0].key), "app");
	assert_int_equal(r[0].op, KUBEAPI_SEL_IN);
	assert_int_equal(r[0].nvalues, 1);
	assert_string_equal(S(m, v[r[0].first_value]), "web");
	assert_string_equal(S(m, r[1].key), "tier");
	assert_string_equal(S(m, v[r[1].first_value]), "front");
	/* then matchExpressions */
	assert_string_equal(S(m, r[2].key), "env");
	assert_int_equal(r[2].op, KUBEAPI_SEL_IN);
	assert_int_equal(r[2].nvalues, 2);
	assert_string_equal(S(m, v[r[2].first_value]), "prod");
	assert_string_equal(S(m, v[r[2].first_value + 1]), "staging");
	assert_string_equal(S(m, r[3].key), "canary");
	assert_int_equal(r[3].op, KUBEAPI_SEL_DOES_NOT_EXIST);
	assert_int_equal(r[3].nvalues, 0);

	/* no selector: selects no pod (policy/v1) */
	decode_ok(m, PDB, nosel, &b);
	assert_int_equal(b.pdb.selects_nothing, 1);
	assert_null(b.pdb.selector);
	assert_int_equal(b.pdb.disruptions_allowed, 0);
	/* empty selector: every pod in the namespace */
	decode_ok(m, PDB, empty, &c);
	assert_int_equal(c.pdb.selects_nothing, 0);
	assert_non_null(c.pdb.selector);
	assert_int_equal(c.pdb.selector->nreq, 0);

	/* same selector elsewhere: one blob; NotIn and Exists read too */
	set(sel, "metadata name", "\"pdb-sel-2\"");
	set(sel, "status", NULL);
	decode_ok(m, PDB, sel, &a2);
	assert_ptr_equal(a2.pdb.selector, a.pdb.selector);
	assert_int_equal(a2.pdb.disruptions_allowed, 0);
	kubeapi_pdb_release(m, &a2.pdb);
	set(sel, "spec selector",
	    "{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"NotIn\","
	    "\"values\":[\"1\"]},{\"key\":\"y\",\"operator\":\"Exists\"}]}");
	decode_ok(m, PDB, sel, &a2);
	r = kubeapi_selector_requirements(a2.pdb.selector);
	assert_int_equal(a2.pdb.selector->nreq, 2);
	assert_int_equal(r[0].op, KUBEAPI_SEL_NOT_IN);
	assert_int_equal(r[1].op, KUBEAPI_SEL_EXISTS);
	kubeapi_pdb_release(m, &a2.pdb);

	kubeapi_pdb_release(m, &a.pdb);
	kubeapi_pdb_release(m, &b.pdb);
	kubeapi_pdb_release(m, &c.pdb);
	cJSON_Delete(sel);
	cJSON_Delete(nosel);
	cJSON_Delete(empty);
}

static void test_namespace(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *term = item("namespaces.json", "tdec-helper");
	cJSON *sys = item("namespaces.json", "kube-system");
	union obj o;

	decode_ok(m, NS, term, &o);
	assert_string_equal(S(m, o.ns.name), "tdec-helper");
	assert_int_equal(o.ns.terminating, 1);
	assert_int_equal(o.ns.rv, 38158);
	assert_int_equal(o.ns.muster->n, 2);
	assert_string_equal(label(m, o.ns.muster, "muster.dev/tenant"), "blue");
	assert_string_equal(label(m, o.ns.muster, "muster.dev/weight"), "3");
	kubeapi_namespace_release(m, &o.ns);
	decode_ok(m, NS, sys, &o);
	assert_int_equal(o.ns.terminating, 0);
	assert_null(o.ns.muster);
	kubeapi_namespace_release(m, &o.ns);
	/* deletionTimestamp alone, or phase alone, is enough */
	set(term, "status phase", "\"Active\"");
	decode_ok(m, NS, term, &o);
	assert_int_equal(o.ns.terminating, 1);
	kubeapi_namespace_release(m, &o.ns);
	set(sys, "status phase", "\"Terminating\"");
	decode_ok(m, NS, sys, &o);
	assert_int_equal(o.ns.terminating, 1);
	kubeapi_namespace_release(m, &o.ns);
	set(sys, "status", NULL);
	decode_ok(m, NS, sys, &o);
	assert_int_equal(o.ns.terminating, 0);
	kubeapi_namespace_release(m, &o.ns);
	/* a label wins over an annotation with the same key */
	set(term, "metadata annotations muster.dev/tenant", "\"red\"");
	decode_ok(m, NS, term, &o);
	assert_int_equal(o.ns.muster->n, 2);
	assert_string_equal(label(m, o.ns.muster, "muster.dev/tenant"), "blue");
	assert_int_equal(ID(m, "red"), 0);
	kubeapi_namespace_release(m, &o.ns);
	cJSON_Delete(term);
	cJSON_Delete(sys);
}

/* Every object captured from the API server decodes. */
static void test_all_real_objects_decode(void **state)
{
	struct kubeapi_model *m = *state;
	static const struct {
		const char *file;
		enum kind kind;
		int count;
	} files[] = {
	    {"pods-smoke.json", POD, 3},
	    {"pods.json", POD, 4},
	    {"nodes.json", NODE, 2},
	    {"podgroups-x-k8s.json", PG_SP, 1},
	    {"podgroups-volcano.json", PG_VC, 1},
	    {"podgroups-native.json", PG_NAT, 3},
	    {"priorityclasses.json", PC, 3},
	    {"pdbs.json", PDB, 3},
	    {"namespaces.json", NS, 6},
	    {"workloads.json", WL, 1},
	};
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		cJSON *list = load(files[i].file), *it;
		union obj o[8];
		int n = 0, j;

		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "items"))
		{
			assert_true(n < 8);
			decode_ok(m, files[i].kind, it, &o[n++]);
		}
		assert_int_equal(n, files[i].count);
		for (j = 0; j < n; j++)
			release(m, files[i].kind, &o[j]);
		assert_clean(m);
		cJSON_Delete(list);
	}
}

/* ---- hostile input: one field of a real object changed ------------------------ */

struct bad {
	enum kind kind;
	const char *path;  /* space-separated; NULL: value is the whole document */
	const char *value; /* JSON text; NULL deletes the field */
	const char *want;  /* the message starts with this */
};

#define DEL      NULL
#define REQ      "spec affinity nodeAffinity requiredDuringSchedulingIgnoredDuringExecution"
#define TERM     REQ " nodeSelectorTerms 0"
#define PREF     "spec affinity nodeAffinity preferredDuringSchedulingIgnoredDuringExecution"
#define C0       "spec containers 0 resources requests"
#define TERM_MSG "spec.affinity.nodeAffinity.required[0]"
#define C0_MSG   "spec.containers[0].resources.requests"

static const struct bad bad_rows[] = {
    /* not an object at all, for every kind */
    {POD, NULL, "[]", "expected a JSON object"},
    {POD, NULL, "\"pod\"", "expected a JSON object"},
    {POD, NULL, "42", "expected a JSON object"},
    {POD, NULL, "null", "expected a JSON object"},
    {POD, NULL, "true", "expected a JSON object"},
    {POD, NULL, "[{\"metadata\":{}}]", "expected a JSON object"},
    {POD, NULL, "{}", "metadata: missing"},
    {NODE, NULL, "[]", "expected a JSON object"},
    {PG_SP, NULL, "\"x\"", "expected a JSON object"},
    {PG_VC, NULL, "1", "expected a JSON object"},
    {PC, NULL, "false", "expected a JSON object"},
    {PDB, NULL, "[]", "expected a JSON object"},
    {NS, NULL, "null", "expected a JSON object"},

    /* metadata */
    {POD, "metadata", DEL, "metadata: missing"},
    {POD, "metadata", "\"rich-0\"", "metadata: expected an object"},
    {POD, "metadata", "[]", "metadata: expected an object"},
    {POD, "metadata", "7", "metadata: expected an object"},
    {POD, "metadata name", DEL, "metadata.name: missing"},
    {POD, "metadata name", "\"\"", "metadata.name: missing"},
    {POD, "metadata name", "5", "metadata.name: expected a string"},
    {POD, "metadata name", "{}", "metadata.name: expected a string"},
    {POD, "metadata name", "[\"rich-0\"]", "metadata.name: expected a string"},
    {POD, "metadata namespace", DEL, "metadata.namespace: missing"},
    {POD, "metadata namespace", "\"\"", "metadata.namespace: missing"},
    {POD, "metadata namespace", "{}", "metadata.namespace: expected a string"},
    {POD, "metadata uid", "7", "metadata.uid: expected a string"},
    {POD, "metadata uid", "\"8815e17d-21eb-4e7a-b824\"", "metadata.uid: not a UID"},
    {POD, "metadata resourceVersion", "37866", "metadata.resourceVersion: expected a string"},
    {POD, "metadata creationTimestamp", "1795280061",
     "metadata.creationTimestamp: expected a string"},
    {POD, "metadata creationTimestamp", "\"2026-11-21\"",
     "metadata.creationTimestamp: not an RFC 3339 time"},
    {POD, "metadata deletionTimestamp", "{}", "metadata.deletionTimestamp: expected a string"},
    {POD, "metadata labels", "[]", "metadata.labels: expected an object"},
    {POD, "metadata labels", "\"app=x\"", "metadata.labels: expected an object"},
    {POD, "metadata annotations", "[\"x\"]", "metadata.annotations: expected an object"},
    {POD, "metadata ownerReferences", "{}", "metadata.ownerReferences: expected an array"},
    {POD, "metadata ownerReferences", "[{\"controller\":\"true\"}]",
     "metadata.ownerReferences[].controller: expected true or false"},
    {POD, "metadata ownerReferences", "[{\"controller\":true,\"kind\":5,\"name\":\"j\"}]",
     "metadata.ownerReferences[].kind: expected a string"},
    {POD, "metadata ownerReferences", "[{\"controller\":true,\"kind\":\"Job\",\"name\":[]}]",
     "metadata.ownerReferences[].name: expected a string"},
    {POD, "metadata labels scheduling.x-k8s.io/pod-group", "7",
     "metadata.labels.scheduling.x-k8s.io/pod-group: expected a string"},
    {POD, "metadata labels muster.dev/queue", "1",
     "metadata.labels.muster.dev/queue: expected a string"},
    {POD, "metadata annotations muster.dev/runtime", "[]",
     "metadata.annotations.muster.dev/runtime: expected a string"},

    /* pod spec and status */
    {POD, "spec", DEL, "spec: missing"},
    {POD, "spec", "[]", "spec: expected an object"},
    {POD, "spec", "\"x\"", "spec: expected an object"},
    {POD, "status", "\"Pending\"", "status: expected an object"},
    {POD, "status", "[]", "status: expected an object"},
    {POD, "status phase", "1", "status.phase: expected a string"},
    {POD, "status conditions", "{}", "status.conditions: expected an array"},
    {POD, "status conditions", "[{\"type\":\"PodScheduled\",\"status\":true}]",
     "status.conditions[].status: expected a string"},
    {POD, "status conditions", "[{\"type\":1}]", "status.conditions[].type: expected a string"},
    {POD, "status conditions", "[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":{}}]",
     "status.conditions[].reason: expected a string"},
    {POD, "spec nodeName", "[]", "spec.nodeName: expected a string"},
    {POD, "spec nodeName", "42", "spec.nodeName: expected a string"},
    {POD, "spec schedulerName", "{}", "spec.schedulerName: expected a string"},
    {POD, "spec priorityClassName", "3", "spec.priorityClassName: expected a string"},
    {POD, "spec priority", "\"high\"", "spec.priority: expected an integer"},
    {POD, "spec priority", "true", "spec.priority: expected an integer"},
    {POD, "spec priority", "1.5", "spec.priority: 1.5 is not an integer in"},
    {POD, "spec priority", "1e308", "spec.priority: 1e+308 is not an integer in"},
    {POD, "spec priority", "-1e308", "spec.priority: -1e+308 is not an integer in"},
    {POD, "spec priority", "1e400", "spec.priority: inf is not an integer in"},
    {POD, "spec priority", "9223372036854775808", "spec.priority: 9.22337203685478e+18 is not"},
    {POD, "spec priority", "2147483648",
     "spec.priority: 2147483648 is not an integer in [-2147483648, 2147483647]"},
    {POD, "spec priority", "-2147483649", "spec.priority: -2147483649 is not an integer in"},
    {POD, "spec preemptionPolicy", "false", "spec.preemptionPolicy: expected a string"},
    {POD, "spec activeDeadlineSeconds", "0", "spec.activeDeadlineSeconds: 0 is not an integer"},
    {POD, "spec activeDeadlineSeconds", "2.5", "spec.activeDeadlineSeconds: 2.5 is not"},
    {POD, "spec activeDeadlineSeconds", "1e19", "spec.activeDeadlineSeconds: 1e+19 is not"},
    {POD, "spec activeDeadlineSeconds", "\"3600\"",
     "spec.activeDeadlineSeconds: expected an integer"},

    /* containers and quantities */
    {POD, "spec containers", "{}", "spec.containers: expected an array"},
    {POD, "spec containers", "\"a\"", "spec.containers: expected an array"},
    {POD, "spec containers 1", "\"b\"", "spec.containers[1]: expected an object"},
    {POD, "spec containers 1", "[]", "spec.containers[1]: expected an object"},
    {POD, "spec containers 0 resources", "[]", "spec.containers[0].resources: expected an object"},
    {POD, C0, "[]", C0_MSG ": expected an object"},
    {POD, C0, "\"cpu=1\"", C0_MSG ": expected an object"},
    {POD, C0 " cpu", "1.5", C0_MSG ".cpu: bad quantity \"1.5\""},
    {POD, C0 " cpu", "true", C0_MSG ".cpu: expected a quantity"},
    {POD, C0 " cpu", "{}", C0_MSG ".cpu: expected a quantity"},
    {POD, C0 " cpu", "null", "spec.containers[0].resources.requests.cpu: expected a quantity"},
    {POD, C0 " cpu", "\"1Zi\"", C0_MSG ".cpu: bad quantity \"1Zi\""},
    {POD, C0 " memory", "\"1KB\"", C0_MSG ".memory: bad quantity \"1KB\""},
    {POD, C0 " memory", "\"\"", C0_MSG ".memory: bad quantity \"\""},
    {POD, C0 " memory", "\"1 Gi\"", C0_MSG ".memory: bad quantity \"1 Gi\""},
    {POD, C0 " memory", "\"-1Gi\"", C0_MSG ".memory: negative quantity \"-1Gi\""},
    {POD, C0 " memory", "-1", C0_MSG ".memory: negative quantity \"-1\""},
    {POD, C0 " memory", "1e300", C0_MSG ".memory: out-of-range quantity \"1e+300\""},
    {POD, C0 " memory", "\"8Ei\"", C0_MSG ".memory: out-of-range quantity \"8Ei\""},
    {POD, C0 " cpu", "\"9223372036854775807\"", C0_MSG ".cpu: out-of-range quantity"},
    {POD, C0 " nvidia.com/gpu", "\"0.5.1\"", C0_MSG ".nvidia.com/gpu: bad quantity \"0.5.1\""},
    {POD, C0 " ", "\"1\"", C0_MSG ": resource name \"\": invalid"},
    {POD, "spec initContainers", "{}", "spec.initContainers: expected an array"},
    {POD, "spec initContainers 0", "1", "spec.initContainers[0]: expected an object"},
    {POD, "spec initContainers 1 restartPolicy", "1",
     "spec.initContainers[1].restartPolicy: expected a string"},
    {POD, "spec initContainers 1 resources requests cpu", "\"x\"",
     "spec.initContainers[1].resources.requests.cpu: bad quantity \"x\""},
    {POD, "spec overhead", "[]", "spec.overhead: expected an object"},
    {POD, "spec overhead cpu", "\"1Q\"", "spec.overhead.cpu: bad quantity \"1Q\""},
    {POD, "spec resources", "[]", "spec.resources: expected an object"},
    {POD, "spec resources requests", "7", "spec.resources.requests: expected an object"},
    {POD, "spec resources requests memory", "\"lots\"",
     "spec.resources.requests.memory: bad quantity \"lots\""},

    /* tolerations */
    {POD, "spec tolerations", "{}", "spec.tolerations: expected an array"},
    {POD, "spec tolerations 0", "\"x\"", "spec.tolerations[0]: expected an object"},
    {POD, "spec tolerations 0 key", "1", "spec.tolerations[0].key: expected a string"},
    {POD, "spec tolerations 0 operator", "\"Contains\"",
     "spec.tolerations[0].operator: unknown \"Contains\""},
    {POD, "spec tolerations 0 operator", "\"exists\"",
     "spec.tolerations[0].operator: unknown \"exists\""},
    {POD, "spec tolerations 0 operator", "[]", "spec.tolerations[0].operator: expected a string"},
    {POD, "spec tolerations 0 value", "{}", "spec.tolerations[0].value: expected a string"},
    {POD, "spec tolerations 0 effect", "\"NoSchedul\"",
     "spec.tolerations[0].effect: unknown \"NoSchedul\""},
    {POD, "spec tolerations 0 effect", "[]", "spec.tolerations[0].effect: expected a string"},
    {POD, "spec tolerations 1 tolerationSeconds", "\"300\"",
     "spec.tolerations[1].tolerationSeconds: expected an integer"},
    {POD, "spec tolerations 1 tolerationSeconds", "1.5",
     "spec.tolerations[1].tolerationSeconds: 1.5 is not an integer"},
    {POD, "spec tolerations 1 tolerationSeconds", "1e308",
     "spec.tolerations[1].tolerationSeconds: 1e+308 is not an integer"},

    /* nodeSelector and affinity */
    {POD, "spec nodeSelector", "[]", "spec.nodeSelector: expected an object"},
    {POD, "spec nodeSelector nvidia.com/gpu.product", "1",
     "spec.nodeSelector.nvidia.com/gpu.product: expected a string"},
    {POD, "spec affinity", "[]", "spec.affinity: expected an object"},
    {POD, "spec affinity nodeAffinity", "\"x\"", "spec.affinity.nodeAffinity: expected an object"},
    {POD, REQ, "[]", "spec.affinity.nodeAffinity.required: expected an object"},
    {POD, REQ " nodeSelectorTerms", "{}",
     "spec.affinity.nodeAffinity.required.nodeSelectorTerms: expected an array"},
    {POD, TERM, "[]", TERM_MSG ": expected an object"},
    {POD, TERM " matchExpressions", "{}", TERM_MSG ".matchExpressions: expected an array"},
    {POD, TERM " matchFields", "\"x\"", TERM_MSG ".matchFields: expected an array"},
    {POD, TERM " matchExpressions 0", "1", TERM_MSG ".matchExpressions[0]: expected an object"},
    {POD, TERM " matchExpressions 0 operator", "\"Near\"",
     TERM_MSG ".matchExpressions[0].operator: unknown \"Near\""},
    {POD, TERM " matchExpressions 0 operator", DEL,
     TERM_MSG ".matchExpressions[0].operator: missing"},
    {POD, TERM " matchExpressions 0 operator", "2",
     TERM_MSG ".matchExpressions[0].operator: expected a string"},
    {POD, TERM " matchExpressions 0 key", DEL, TERM_MSG ".matchExpressions[0].key: missing"},
    {POD, TERM " matchExpressions 0 key", "5",
     TERM_MSG ".matchExpressions[0].key: expected a string"},
    {POD, TERM " matchExpressions 0 values", "\"a\"",
     TERM_MSG ".matchExpressions[0].values: expected an array"},
    {POD, TERM " matchExpressions 0 values 0", "5",
     TERM_MSG ".matchExpressions[0].values: expected short strings"},
    {POD, PREF, "{}", "spec.affinity.nodeAffinity.preferred: expected an array"},
    {POD, PREF " 0", "\"x\"", "spec.affinity.nodeAffinity.preferred[0].weight: missing"},
    {POD, PREF " 0 weight", "0",
     "spec.affinity.nodeAffinity.preferred[0].weight: 0 is not an integer in [1, 100]"},
    {POD, PREF " 0 weight", "101", "spec.affinity.nodeAffinity.preferred[0].weight: 101 is not"},
    {POD, PREF " 0 weight", "1.5", "spec.affinity.nodeAffinity.preferred[0].weight: 1.5 is not"},
    {POD, PREF " 0 weight", "\"10\"",
     "spec.affinity.nodeAffinity.preferred[0].weight: expected an integer"},
    {POD, PREF " 0 weight", DEL, "spec.affinity.nodeAffinity.preferred[0].weight: missing"},
    {POD, PREF " 0 preference", DEL, "spec.affinity.nodeAffinity.preferred[0].preference: missing"},
    {POD, PREF " 0 preference", "[]",
     "spec.affinity.nodeAffinity.preferred[0].preference: expected an object"},
    {POD, PREF " 0 preference matchExpressions 0 operator", "\"Gte\"",
     "spec.affinity.nodeAffinity.preferred[0].matchExpressions[0].operator: unknown \"Gte\""},

    /* nodes */
    {NODE, "metadata name", DEL, "metadata.name: missing"},
    {NODE, "metadata name", "1", "metadata.name: expected a string"},
    {NODE, "metadata labels", "[]", "metadata.labels: expected an object"},
    {NODE, "metadata labels kubernetes.io/hostname", "1",
     "metadata.labels.kubernetes.io/hostname: expected a string"},
    {NODE, "spec", "[]", "spec: expected an object"},
    {NODE, "spec unschedulable", "\"true\"", "spec.unschedulable: expected true or false"},
    {NODE, "spec unschedulable", "1", "spec.unschedulable: expected true or false"},
    {NODE, "spec taints", "{}", "spec.taints: expected an array"},
    {NODE, "spec taints 0", "\"x\"", "spec.taints[0]: expected an object"},
    {NODE, "spec taints 0 key", DEL, "spec.taints[0].key: missing"},
    {NODE, "spec taints 0 key", "1", "spec.taints[0].key: expected a string"},
    {NODE, "spec taints 0 value", "[]", "spec.taints[0].value: expected a string"},
    {NODE, "spec taints 0 effect", "\"Sometimes\"", "spec.taints[0].effect: unknown \"Sometimes\""},
    {NODE, "spec taints 0 effect", DEL, "spec.taints[0].effect: "},
    {NODE, "spec taints 0 effect", "\"\"", "spec.taints[0].effect: unknown \"\""},
    {NODE, "status", "1", "status: expected an object"},
    {NODE, "status allocatable", "[]", "status.allocatable: expected an object"},
    {NODE, "status allocatable cpu", "\"96 cores\"",
     "status.allocatable.cpu: bad quantity \"96 cores\""},
    {NODE, "status allocatable memory", "\"-1Ti\"",
     "status.allocatable.memory: negative quantity \"-1Ti\""},
    {NODE, "status allocatable pods", "\"1Zi\"", "status.allocatable.pods: bad quantity \"1Zi\""},
    {NODE, "status conditions", "{}", "status.conditions: expected an array"},
    {NODE, "status conditions 0 status", "true", "status.conditions[].status: expected a string"},
    {NODE, "status conditions 0 type", "[]", "status.conditions[].type: expected a string"},

    /* PodGroups */
    {PG_SP, "metadata namespace", DEL, "metadata.namespace: missing"},
    {PG_SP, "spec", "\"x\"", "spec: expected an object"},
    {PG_SP, "spec minMember", "-1", "spec.minMember: -1 is not an integer in [0, 2147483647]"},
    {PG_SP, "spec minMember", "2.5", "spec.minMember: 2.5 is not an integer"},
    {PG_SP, "spec minMember", "\"4\"", "spec.minMember: expected an integer"},
    {PG_SP, "spec minMember", "1e308", "spec.minMember: 1e+308 is not an integer"},
    {PG_SP, "spec minMember", "9223372036854775808", "spec.minMember: 9.22337203685478e+18 is"},
    {PG_SP, "spec scheduleTimeoutSeconds", "-5", "spec.scheduleTimeoutSeconds: -5 is not"},
    {PG_SP, "spec scheduleTimeoutSeconds", "\"120\"",
     "spec.scheduleTimeoutSeconds: expected an integer"},
    {PG_SP, "spec minResources", "[]", "spec.minResources: expected an object"},
    {PG_SP, "spec minResources cpu", "\"lots\"", "spec.minResources.cpu: bad quantity \"lots\""},
    {PG_SP, "spec minResources cpu", "1.5", "spec.minResources.cpu: bad quantity \"1.5\""},
    {PG_SP, "spec minResources cpu", "[]", "spec.minResources.cpu: expected a quantity"},
    {PG_SP, "spec minResources nvidia.com/gpu", "-1",
     "spec.minResources.nvidia.com/gpu: negative quantity \"-1\""},
    {PG_SP, "spec minResources nvidia.com/gpu", "9007199254740993",
     "spec.minResources.nvidia.com/gpu: out-of-range quantity"},
    {PG_SP, "spec minResources", "{\"cpu\":\"1\",\"\":\"1\"}",
     "spec.minResources: resource name \"\": invalid"},
    {PG_SP, "status", "[]", "status: expected an object"},
    {PG_SP, "status phase", "1", "status.phase: expected a string"},
    {PG_SP, "metadata labels muster.dev/queue", "{}",
     "metadata.labels.muster.dev/queue: expected a string"},
    {PG_VC, "spec queue", "1", "spec.queue: expected a string"},
    {PG_VC, "spec priorityClassName", "[]", "spec.priorityClassName: expected a string"},
    {PG_VC, "spec minMember", "2147483648", "spec.minMember: 2147483648 is not an integer"},
    {PG_VC, "spec minResources cpu", "\"2 cores\"",
     "spec.minResources.cpu: bad quantity \"2 cores\""},
    {PG_VC, "metadata annotations muster.dev/note", "5",
     "metadata.annotations.muster.dev/note: expected a string"},

    /* PriorityClasses */
    {PC, "metadata", "[]", "metadata: expected an object"},
    {PC, "value", DEL, "value: missing"},
    {PC, "value", "null", "value: missing"},
    {PC, "value", "\"100\"", "value: expected an integer"},
    {PC, "value", "1e308", "value: 1e+308 is not an integer"},
    {PC, "value", "2147483648", "value: 2147483648 is not an integer"},
    {PC, "value", "-2147483649", "value: -2147483649 is not an integer"},
    {PC, "value", "0.5", "value: 0.5 is not an integer"},
    {PC, "globalDefault", "\"true\"", "globalDefault: expected true or false"},
    {PC, "globalDefault", "1", "globalDefault: expected true or false"},
    {PC, "preemptionPolicy", "1", "preemptionPolicy: expected a string"},

    /* PodDisruptionBudgets */
    {PDB, "metadata namespace", "[]", "metadata.namespace: expected a string"},
    {PDB, "spec", "[]", "spec: expected an object"},
    {PDB, "spec selector", "[]", "spec.selector: expected an object"},
    {PDB, "spec selector matchLabels", "[]", "spec.selector.matchLabels: expected an object"},
    {PDB, "spec selector matchLabels app", "1", "spec.selector.matchLabels"},
    {PDB, "spec selector matchExpressions", "{}",
     "spec.selector.matchExpressions: expected an array"},
    {PDB, "spec selector matchExpressions 0", "\"env\"",
     "spec.selector.matchExpressions[0]: expected an object"},
    {PDB, "spec selector matchExpressions 0 key", DEL,
     "spec.selector.matchExpressions[0].key: missing"},
    {PDB, "spec selector matchExpressions 0 key", "1",
     "spec.selector.matchExpressions[0].key: expected a string"},
    {PDB, "spec selector matchExpressions 0 operator", "\"Gt\"",
     "spec.selector.matchExpressions[0].operator: unknown \"Gt\""},
    {PDB, "spec selector matchExpressions 0 operator", DEL,
     "spec.selector.matchExpressions[0].operator: missing"},
    {PDB, "spec selector matchExpressions 0 values", "\"prod\"",
     "spec.selector.matchExpressions[0].values: expected an array"},
    {PDB, "spec selector matchExpressions 0 values 1", "1",
     "spec.selector.matchExpressions[0].values: expected short strings"},
    {PDB, "status", "\"ok\"", "status: expected an object"},
    {PDB, "status disruptionsAllowed", "-1",
     "status.disruptionsAllowed: -1 is not an integer in [0, 2147483647]"},
    {PDB, "status disruptionsAllowed", "\"1\"", "status.disruptionsAllowed: expected an integer"},
    {PDB, "status disruptionsAllowed", "1e308", "status.disruptionsAllowed: 1e+308 is not"},
    {PDB, "status disruptionsAllowed", "0.5", "status.disruptionsAllowed: 0.5 is not"},

    /* Namespaces */
    {NS, "metadata name", "[]", "metadata.name: expected a string"},
    {NS, "status", "[]", "status: expected an object"},
    {NS, "status phase", "1", "status.phase: expected a string"},
    {NS, "metadata labels muster.dev/tenant", "{}",
     "metadata.labels.muster.dev/tenant: expected a string"},
    {NS, "metadata annotations", "1", "metadata.annotations: expected an object"},
    {NS, "metadata deletionTimestamp", "\"now\"",
     "metadata.deletionTimestamp: not an RFC 3339 time: \"now\""},
};

static cJSON *bad_doc(const struct bad *b)
{
	cJSON *doc;

	if (!b->path)
		return J(b->value);
	doc = item(kinds[b->kind].file, kinds[b->kind].base);
	set(doc, b->path, b->value);
	return doc;
}

/* The table above: each row fails as described; where the row leaves the
 * metadata alone, the error also names the object for the log line. */
static void test_hostile_fields(void **state)
{
	struct kubeapi_model *m = *state;
	size_t i, failed = 0;

	for (i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
		const struct bad *b = &bad_rows[i];
		cJSON *doc = bad_doc(b);
		char what[512];
		struct kubeapi_decode_error err;
		union obj o;

		snprintf(what, sizeof(what), "row %zu (%s %s = %s)", i, kinds[b->kind].name,
		         b->path ? b->path : "document", b->value ? b->value : "deleted");
		if (!check_bad(m, b->kind, doc, b->want, what)) {
			failed++;
		} else if (b->path && strncmp(b->path, "metadata", 8) != 0) {
			decode(m, b->kind, doc, &o, &err);
			if (strcmp(err.name, kinds[b->kind].base) != 0 ||
			    strcmp(err.ns, kinds[b->kind].ns) != 0) {
				print_error("%s: error names %s/%s\n", what, err.ns, err.name);
				failed++;
			}
		}
		cJSON_Delete(doc);
	}
	if (failed)
		fail_msg("%zu of %zu hostile rows not rejected as expected", failed,
		         sizeof(bad_rows) / sizeof(bad_rows[0]));
}

/* A NULL document (what cJSON_Parse gives for a truncated one). */
static void test_hostile_null_document(void **state)
{
	struct kubeapi_model *m = *state;
	int k;

	for (k = 0; k < NKINDS; k++)
		if (!check_bad(m, (enum kind)k, NULL, "expected a JSON object", kinds[k].name))
			fail_msg("%s: NULL document not rejected", kinds[k].name);
}

/* Every strict prefix of a real pod fails to parse, cleanly. */
static void test_hostile_truncated(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc = item("pods-smoke.json", "rich-0"), *parsed;
	char *text = cJSON_PrintUnformatted(doc);
	size_t len = strlen(text), i;

	for (i = 0; i < len; i++) {
		parsed = cJSON_ParseWithLength(text, i);
		if (parsed)
			fail_msg("prefix of %zu bytes parsed", i);
		if (!check_bad(m, POD, parsed, "expected a JSON object", "truncated"))
			fail_msg("truncated at %zu", i);
	}
	parsed = cJSON_ParseWithLength(text, len);
	assert_non_null(parsed);
	cJSON_Delete(parsed);
	free(text);
	cJSON_Delete(doc);
}

static char *nested(const char *open, const char *close, int depth)
{
	size_t lo = strlen(open), lc = strlen(close);
	char *s = malloc((lo + lc) * (size_t)depth + 1), *p = s;
	int i;

	assert_non_null(s);
	for (i = 0; i < depth; i++, p += lo)
		memcpy(p, open, lo);
	for (i = 0; i < depth; i++, p += lc)
		memcpy(p, close, lc);
	*p = '\0';
	return s;
}

/* Deep nesting where nothing is read is ignored (the spec is the same blob
 * as without it); where a field is read it is a type error; past cJSON's
 * nesting limit the parse itself fails. */
static void test_hostile_deep_nesting(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *plain = item("pods-smoke.json", "rich-0"), *doc = item("pods-smoke.json", "rich-0");
	char *objs = nested("{\"a\":", "}", 100), *arrs = nested("[", "]", 900);
	char *deep = nested("[", "]", 2000), *text;
	union obj p, o;

	/* "{"a":{"a":...}}" needs a value at the bottom */
	text = malloc(strlen(objs) + 2);
	assert_non_null(text);
	memcpy(text, objs, 500);
	text[500] = '1';
	memcpy(text + 501, objs + 500, strlen(objs) - 500 + 1);
	free(objs);
	decode_ok(m, POD, plain, &p);
	set(doc, "spec x-unknown", text);
	set(doc, "status x-unknown", arrs);
	set(doc, "metadata annotations other", arrs);
	set(doc, "x-unknown", text);
	decode_ok(m, POD, doc, &o);
	assert_ptr_equal(o.pod.spec, p.pod.spec);
	kubeapi_pod_release(m, &o.pod);
	kubeapi_pod_release(m, &p.pod);

	set(doc, "spec tolerations", arrs);
	expect_bad(m, POD, doc, "spec.tolerations[0]: expected an object");
	set(doc, "spec tolerations", NULL);
	set(doc, "spec nodeSelector", text);
	expect_bad(m, POD, doc, "spec.nodeSelector.a: expected a string");
	free(text);

	assert_null(cJSON_Parse(deep));
	assert_non_null(cJSON_GetErrorPtr());
	text = malloc(strlen(deep) + 64);
	assert_non_null(text);
	snprintf(text, strlen(deep) + 64, "{\"metadata\":{\"name\":\"x\"},\"spec\":%s}", deep);
	assert_null(cJSON_Parse(text));
	free(text);
	free(deep);
	free(arrs);
	cJSON_Delete(doc);
	cJSON_Delete(plain);
}

static cJSON *array_of(const char *json, int n)
{
	cJSON *a = cJSON_CreateArray();
	int i;

	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(a, J(json));
	return a;
}

/* n distinct entries {"<key>-<i>": "<value>"}. */
static cJSON *map_of(const char *key, const char *value, int n)
{
	cJSON *o = cJSON_CreateObject();
	char k[64];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "%s-%d", key, i);
		cJSON_AddStringToObject(o, k, value);
	}
	return o;
}

/* ["v0", "v1", ...] */
static cJSON *strings(int n)
{
	cJSON *a = cJSON_CreateArray();
	char v[16];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(v, sizeof(v), "v%d", i);
		cJSON_AddItemToArray(a, cJSON_CreateString(v));
	}
	return a;
}

/* Arrays and maps at and past their caps. */
static void test_hostile_overcap_lists(void **state)
{
	struct kubeapi_model *m = *state;
	static const char tol[] = "{\"key\":\"k\",\"operator\":\"Exists\"}";
	static const char ctr[] = "{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1m\"}}}";
	static const char taint[] = "{\"key\":\"k\",\"effect\":\"NoSchedule\"}";
	static const char expr[] = "{\"key\":\"k\",\"operator\":\"Exists\"}";
	cJSON *pod = item("pods-smoke.json", "rich-0"), *node = item("nodes.json", "gpu-0000");
	cJSON *pdb = item("pdbs.json", "pdb-sel");
	union obj o;

	set_path(pod, "spec tolerations", array_of(tol, KUBEAPI_MAX_LIST));
	decode_ok(m, POD, pod, &o);
	assert_int_equal(o.pod.spec->ntolerations, KUBEAPI_MAX_LIST);
	kubeapi_pod_release(m, &o.pod);
	set_path(pod, "spec tolerations", array_of(tol, KUBEAPI_MAX_LIST + 1));
	expect_bad(m, POD, pod, "spec.tolerations: more than 1024 entries");
	set(pod, "spec tolerations", NULL);

	set_path(pod, "spec containers", array_of(ctr, KUBEAPI_MAX_CONTAINERS));
	set(pod, "spec initContainers", NULL);
	decode_ok(m, POD, pod, &o);
	assert_int_equal(req(o.pod.spec, KUBEAPI_RES_CPU), KUBEAPI_MAX_CONTAINERS);
	kubeapi_pod_release(m, &o.pod);
	set_path(pod, "spec containers", array_of(ctr, KUBEAPI_MAX_CONTAINERS + 1));
	expect_bad(m, POD, pod, "spec.containers: more than 256 entries");
	set_path(pod, "spec containers", array_of(ctr, 1));
	set_path(pod, "spec initContainers", array_of(ctr, KUBEAPI_MAX_CONTAINERS + 1));
	expect_bad(m, POD, pod, "spec.initContainers: more than 256 entries");
	set(pod, "spec initContainers", NULL);

	set_path(pod, "spec nodeSelector", map_of("k", "v", KUBEAPI_MAX_LIST));
	decode_ok(m, POD, pod, &o);
	assert_int_equal(o.pod.spec->nselector, KUBEAPI_MAX_LIST);
	kubeapi_pod_release(m, &o.pod);
	set_path(pod, "spec nodeSelector", map_of("k", "v", KUBEAPI_MAX_LIST + 1));
	expect_bad(m, POD, pod, "spec.nodeSelector: too large");
	set(pod, "spec nodeSelector", NULL);

	/* requirement values: one list over the cap, then over the pod's total */
	set_path(pod, TERM " matchExpressions 0 values", strings(KUBEAPI_MAX_LIST + 1));
	expect_bad(m, POD, pod, TERM_MSG ".matchExpressions[0].values: more than 1024 entries");
	set_path(pod, TERM " matchExpressions 0 values", strings(KUBEAPI_MAX_LIST));
	set(pod, TERM " matchExpressions 1",
	    "{\"key\":\"k2\",\"operator\":\"In\",\"values\":[\"w\"]}");
	expect_bad(m, POD, pod, TERM_MSG ".matchExpressions[1].values: too many in this pod");

	/* terms, and requirements across terms */
	set(pod, "spec affinity", NULL);
	set_path(pod, REQ " nodeSelectorTerms", array_of("{}", KUBEAPI_MAX_LIST + 1));
	expect_bad(m, POD, pod,
	           "spec.affinity.nodeAffinity.required.nodeSelectorTerms: more than 1024 entries");
	set(pod, REQ " nodeSelectorTerms", "[{},{}]");
	set_path(pod, TERM " matchExpressions", array_of(expr, KUBEAPI_MAX_LIST));
	set_path(pod, REQ " nodeSelectorTerms 1 matchFields", array_of(expr, 1));
	expect_bad(m, POD, pod, "spec.affinity.nodeAffinity.required[1]: too many requirements");
	set(pod, "spec affinity", NULL);

	set_path(pod, "status conditions", array_of("{\"type\":\"X\"}", 65));
	expect_bad(m, POD, pod, "status.conditions: more than 64 entries");
	set(pod, "status conditions", NULL);
	set_path(pod, "metadata ownerReferences", array_of("{}", KUBEAPI_MAX_LIST + 1));
	expect_bad(m, POD, pod, "metadata.ownerReferences: more than 1024 entries");
	set(pod, "metadata ownerReferences", NULL);
	set_path(pod, "metadata labels", map_of("muster.dev/l", "v", KUBEAPI_MAX_LABELS + 1));
	expect_bad(m, POD, pod, "metadata.labels: more than 1024 entries");

	set_path(node, "spec taints", array_of(taint, KUBEAPI_MAX_LIST));
	decode_ok(m, NODE, node, &o);
	assert_int_equal(o.node.taints->n, KUBEAPI_MAX_LIST);
	kubeapi_node_release(m, &o.node);
	set_path(node, "spec taints", array_of(taint, KUBEAPI_MAX_LIST + 1));
	expect_bad(m, NODE, node, "spec.taints: more than 1024 entries");
	set(node, "spec taints", NULL);
	set_path(node, "metadata labels", map_of("l", "v", KUBEAPI_MAX_LABELS + 1));
	expect_bad(m, NODE, node, "metadata.labels: more than 1024 entries");

	set_path(pdb, "spec selector matchLabels", map_of("l", "v", KUBEAPI_MAX_LIST + 1));
	expect_bad(m, PDB, pdb, "spec.selector: too large");
	set(pdb, "spec selector matchLabels", NULL);
	set_path(pdb, "spec selector matchExpressions", array_of(expr, KUBEAPI_MAX_LIST + 1));
	expect_bad(m, PDB, pdb, "spec.selector.matchExpressions: more than 1024 entries");
	cJSON_Delete(pod);
	cJSON_Delete(node);
	cJSON_Delete(pdb);
}

/* One string field over its cap, on a copy of a real object. */
static void expect_long(struct kubeapi_model *m, enum kind k, const char *base, const char *path,
                        cJSON *value, const char *want)
{
	cJSON *doc = item(kinds[k].file, base);

	set_path(doc, path, value);
	if (!check_bad(m, k, doc, want, path))
		fail_msg("%s over its cap not rejected as expected", path);
	cJSON_Delete(doc);
}

#define TEN_MB (10u << 20)

/* Strings past their caps: names, label values, quantities, selector
 * values, ten megabytes at a time. */
static void test_hostile_overcap_strings(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *doc;
	union obj o;

	expect_long(m, POD, "rich-0", "metadata name", str_of('n', 300),
	            "metadata.name: longer than 253 bytes");
	expect_long(m, POD, "rich-0", "metadata namespace", str_of('n', 64),
	            "metadata.namespace: longer than 63 bytes");
	expect_long(m, NODE, "gpu-0000", "metadata name", str_of('n', TEN_MB),
	            "metadata.name: longer than 253 bytes");
	expect_long(m, POD, "rich-0", "metadata uid", str_of('a', TEN_MB),
	            "metadata.uid: longer than 64 bytes");
	expect_long(m, POD, "rich-0", "metadata creationTimestamp", str_of('1', TEN_MB),
	            "metadata.creationTimestamp: longer than 64 bytes");
	expect_long(m, POD, "rich-0", "metadata resourceVersion", str_of('1', TEN_MB),
	            "metadata.resourceVersion: longer than 64 bytes");
	expect_long(m, NODE, "gpu-0000", "metadata labels big", str_of('v', TEN_MB),
	            "metadata.labels.big: too long");
	expect_long(m, POD, "rich-0", "metadata labels scheduling.x-k8s.io/pod-group",
	            str_of('g', TEN_MB),
	            "metadata.labels.scheduling.x-k8s.io/pod-group: longer than 253 bytes");
	expect_long(m, POD, "rich-0", "metadata labels muster.dev/queue", str_of('q', TEN_MB),
	            "metadata.labels.muster.dev/queue: too long");
	expect_long(m, POD, "rich-0", "spec nodeName", str_of('n', TEN_MB),
	            "spec.nodeName: longer than 253 bytes");
	expect_long(m, POD, "rich-0", "spec schedulerName", str_of('s', TEN_MB),
	            "spec.schedulerName: longer than 253 bytes");
	expect_long(m, POD, "rich-0", "spec tolerations 0 value", str_of('v', TEN_MB),
	            "spec.tolerations[0].value: longer than 253 bytes");
	expect_long(m, POD, "rich-0", "spec nodeSelector nvidia.com/gpu.product",
	            str_of('v', TEN_MB), "spec.nodeSelector: too large");
	expect_long(m, POD, "rich-0", TERM " matchExpressions 0 values 0", str_of('v', TEN_MB),
	            TERM_MSG ".matchExpressions[0].values: expected short strings");
	expect_long(m, POD, "rich-0", C0 " cpu", str_of('1', TEN_MB),
	            C0_MSG ".cpu: bad quantity \"1111");
	expect_long(m, PG_VC, "pg-vc", "spec queue", str_of('q', TEN_MB),
	            "spec.queue: longer than 253 bytes");
	expect_long(m, PDB, "pdb-sel", "spec selector matchLabels app", str_of('v', TEN_MB),
	            "spec.selector.matchLabels");
	expect_long(m, PDB, "pdb-sel", "spec selector matchExpressions 0 values 0",
	            str_of('v', TEN_MB),
	            "spec.selector.matchExpressions[0].values: expected short strings");
	expect_long(m, NS, "tdec-helper", "metadata annotations muster.dev/weight",
	            str_of('w', TEN_MB), "metadata.annotations.muster.dev/weight: too long");

	/* keys too: a 10 MB resource name and a 10 MB label key */
	{
		char *key = malloc(TEN_MB + 1);

		assert_non_null(key);
		memset(key, 'k', TEN_MB);
		key[TEN_MB] = '\0';
		doc = item("nodes.json", "gpu-0000");
		cJSON_AddStringToObject(child(child(doc, "status"), "allocatable"), key, "1");
		expect_bad(m, NODE, doc, "status.allocatable: resource name \"kkkk");
		cJSON_Delete(doc);
		doc = item("nodes.json", "gpu-0000");
		cJSON_AddStringToObject(child(child(doc, "metadata"), "labels"), key, "v");
		expect_bad(m, NODE, doc, "metadata.labels.kkkk");
		cJSON_Delete(doc);
		free(key);
	}

	/* at the caps: accepted */
	doc = item("pods-smoke.json", "rich-0");
	set_path(doc, "metadata name", str_of('n', KUBEAPI_MAX_NAME));
	set_path(doc, "metadata namespace", str_of('s', 63));
	decode_ok(m, POD, doc, &o);
	assert_int_equal(strlen(S(m, o.pod.name)), KUBEAPI_MAX_NAME);
	kubeapi_pod_release(m, &o.pod);
	/* a label the decoder does not read is not checked */
	set_path(doc, "metadata labels unread", str_of('u', TEN_MB));
	decode_ok(m, POD, doc, &o);
	kubeapi_pod_release(m, &o.pod);
	cJSON_Delete(doc);
}

/* Sums that overflow int64, wherever requests are added up. */
static void test_hostile_sum_overflow(void **state)
{
	struct kubeapi_model *m = *state;
	static const struct {
		const char *spec, *want;
	} rows[] = {
	    {"{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"4Ei\"}}},"
	     "{\"resources\":{\"requests\":{\"memory\":\"4Ei\"}}}]}",
	     "spec.containers[1]: sum of requests overflows"},
	    {"{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"9223372036854775807m\"}}},"
	     "{\"resources\":{\"requests\":{\"cpu\":\"1m\"}}}]}",
	     "spec.containers[1]: sum of requests overflows"},
	    {"{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"4Ei\"}}}],"
	     "\"initContainers\":[{\"restartPolicy\":\"Always\","
	     "\"resources\":{\"requests\":{\"memory\":\"4Ei\"}}}]}",
	     "spec.initContainers: sum of requests overflows"},
	    {"{\"containers\":[],\"initContainers\":[{\"restartPolicy\":\"Always\","
	     "\"resources\":{\"requests\":{\"memory\":\"4Ei\"}}},"
	     "{\"resources\":{\"requests\":{\"memory\":\"4Ei\"}}}]}",
	     "spec.initContainers[1]: sum of requests overflows"},
	    {"{\"containers\":[],\"initContainers\":[{\"restartPolicy\":\"Always\","
	     "\"resources\":{\"requests\":{\"memory\":\"4Ei\"}}},{\"restartPolicy\":\"Always\","
	     "\"resources\":{\"requests\":{\"memory\":\"4Ei\"}}}]}",
	     "spec.initContainers[1]: sum of requests overflows"},
	    {"{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"9223372036854775807\"}}}]"
	     ","
	     "\"overhead\":{\"memory\":\"1\"}}",
	     "spec.overhead: sum of requests overflows"},
	    {"{\"containers\":[],\"resources\":{\"requests\":{\"memory\":\"8Ei\"}}}",
	     "spec.resources.requests.memory: out-of-range quantity"},
	    {"{\"containers\":[],\"resources\":{\"requests\":{\"memory\":\"4Ei\"}},"
	     "\"overhead\":{\"memory\":\"4Ei\"}}",
	     "spec.overhead: sum of requests overflows"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		cJSON *doc = item("pods.json", "job1-6pjkl");

		set(doc, "spec", rows[i].spec);
		if (!check_bad(m, POD, doc, rows[i].want, rows[i].spec))
			fail_msg("overflow row %zu not rejected as expected", i);
		cJSON_Delete(doc);
	}
}

/* Only a Node's allocatable gives a name a slot, at most
 * KUBEAPI_MAX_NEW_RESOURCES per Node: past that the Node decodes without
 * the rest (counted in err), and a pod asking for a name no Node offers
 * asks for KUBEAPI_RES_UNOFFERED. */
static void test_hostile_too_many_resources(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *node = item("nodes.json", "cpu-0000"), *pod = item("pods.json", "job1-6pjkl");
	struct kubeapi_decode_error err;
	union obj n, p;
	char path[64];
	int i;

	for (i = 0; i < KUBEAPI_MAX_RESOURCES; i++) {
		snprintf(path, sizeof(path), "status allocatable example.com/r%d", i);
		set(node, path, "\"1\"");
	}
	assert_int_equal(kubeapi_node_decode(m, node, &n.node, &err), 0);
	assert_int_equal(n.node.allocatable->n, 4 + KUBEAPI_MAX_NEW_RESOURCES);
	assert_int_equal(err.untracked, KUBEAPI_MAX_RESOURCES - KUBEAPI_MAX_NEW_RESOURCES);
	assert_int_equal(kubeapi_model_nresources(m),
	                 KUBEAPI_RES_WELL_KNOWN + KUBEAPI_MAX_NEW_RESOURCES);

	set(pod, "spec containers 0 resources requests example.com/r3", "\"2\"");
	set(pod, "spec containers 0 resources requests example.com/zzz", "\"2\"");
	set(pod, "spec containers 0 resources requests example.com/yyy", "\"5\"");
	decode_ok(m, POD, pod, &p);
	assert_int_equal(req(p.pod.spec, kubeapi_model_resource_find(m, "example.com/r3", 14)), 2);
	assert_int_equal(req(p.pod.spec, KUBEAPI_RES_UNOFFERED), 2); /* one per name */
	assert_int_equal(kubeapi_model_resource_find(m, "example.com/zzz", 15), -ENOENT);
	assert_int_equal(kubeapi_model_unoffered(m), 1);
	kubeapi_pod_release(m, &p.pod);
	assert_int_equal(kubeapi_model_unoffered(m), 0);
	kubeapi_node_release(m, &n.node);
	/* the Node's names are gone with it: the table is as it began */
	assert_int_equal(kubeapi_model_nresources(m), KUBEAPI_RES_WELL_KNOWN);
	assert_int_equal(kubeapi_model_resource_find(m, "example.com/r3", 14), -ENOENT);
	cJSON_Delete(node);
	cJSON_Delete(pod);
}

/* A Node whose decode fails after its allocatable was read leaves no name
 * behind; a name two Nodes offer stays until the last goes; a freed slot
 * is taken again. */
static void test_resources_reclaimed(void **state)
{
	struct kubeapi_model *m = *state;
	cJSON *a = item("nodes.json", "cpu-0000"), *b = item("nodes.json", "cpu-0000");
	struct kubeapi_decode_error err;
	union obj x, y;
	uint64_t gen = kubeapi_model_resource_gen(m);

	set(a, "status allocatable example.com/a", "\"1\"");
	set(a, "spec taints", "[{\"key\":\"k\",\"effect\":\"Sometimes\"}]");
	assert_int_equal(kubeapi_node_decode(m, a, &x.node, &err), -EINVAL);
	assert_int_equal(kubeapi_model_resource_find(m, "example.com/a", 13), -ENOENT);
	assert_int_equal(kubeapi_model_nresources(m), KUBEAPI_RES_WELL_KNOWN);
	assert_int_equal(kubeapi_model_resource_gen(m), gen);

	set(a, "spec taints", "[]");
	set(a, "metadata name", "\"a\"");
	set(b, "status allocatable example.com/a", "\"2\"");
	set(b, "status allocatable example.com/b", "\"2\"");
	set(b, "metadata name", "\"b\"");
	decode_ok(m, NODE, a, &x);
	decode_ok(m, NODE, b, &y);
	assert_true(kubeapi_model_resource_gen(m) > gen);
	assert_int_equal(kubeapi_model_resource_find(m, "example.com/a", 13),
	                 KUBEAPI_RES_WELL_KNOWN);
	assert_int_equal(kubeapi_model_resource_find(m, "example.com/b", 13),
	                 KUBEAPI_RES_WELL_KNOWN + 1);
	kubeapi_node_release(m, &x.node);
	assert_int_equal(kubeapi_model_resource_find(m, "example.com/a", 13),
	                 KUBEAPI_RES_WELL_KNOWN);
	kubeapi_node_release(m, &y.node);
	assert_int_equal(kubeapi_model_resource_find(m, "example.com/a", 13), -ENOENT);
	assert_int_equal(kubeapi_model_nresources(m), KUBEAPI_RES_WELL_KNOWN);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* ---- error formatting ------------------------------------------------------------ */

static void test_error_str(void **state)
{
	struct kubeapi_model *m = *state;
	struct kubeapi_decode_error err;
	cJSON *pod = item("pods-smoke.json", "rich-0"), *node = item("nodes.json", "gpu-0000");
	char buf[512], small[16];
	union obj o;

	set(pod, C0 " cpu", "\"1Zi\"");
	assert_int_equal(kubeapi_pod_decode(m, pod, &o.pod, &err), -EINVAL);
	assert_ptr_equal(kubeapi_decode_error_str(&err, buf, sizeof(buf)), buf);
	assert_string_equal(
	    buf,
	    "Pod smoke/rich-0: spec.containers[0].resources.requests.cpu: bad quantity \"1Zi\"");
	/* truncated to the buffer, still terminated */
	assert_ptr_equal(kubeapi_decode_error_str(&err, small, sizeof(small)), small);
	assert_string_equal(small, "Pod smoke/rich-");

	set(node, "status allocatable cpu", "\"x\"");
	assert_int_equal(kubeapi_node_decode(m, node, &o.node, &err), -EINVAL);
	assert_string_equal(kubeapi_decode_error_str(&err, buf, sizeof(buf)),
	                    "Node gpu-0000: status.allocatable.cpu: bad quantity \"x\"");

	set(pod, "metadata namespace", NULL);
	assert_int_equal(kubeapi_pod_decode(m, pod, &o.pod, &err), -EINVAL);
	assert_string_equal(kubeapi_decode_error_str(&err, buf, sizeof(buf)),
	                    "Pod rich-0: metadata.namespace: missing");
	set(pod, "metadata", NULL);
	assert_int_equal(kubeapi_pod_decode(m, pod, &o.pod, &err), -EINVAL);
	assert_string_equal(kubeapi_decode_error_str(&err, buf, sizeof(buf)),
	                    "Pod (unnamed): metadata: missing");
	assert_int_equal(kubeapi_podgroup_decode(m, KUBEAPI_PG_VOLCANO, NULL, &o.pg, &err),
	                 -EINVAL);
	assert_string_equal(kubeapi_decode_error_str(&err, buf, sizeof(buf)),
	                    "PodGroup (unnamed): expected a JSON object");

	memset(&err, 0, sizeof(err));
	snprintf(err.msg, sizeof(err.msg), "x");
	assert_string_equal(kubeapi_decode_error_str(&err, buf, sizeof(buf)),
	                    "object (unnamed): x");

	/* a later success clears the message */
	set(node, "status allocatable cpu", "\"1\"");
	decode_ok(m, NODE, node, &o);
	kubeapi_node_release(m, &o.node);
	cJSON_Delete(pod);
	cJSON_Delete(node);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_model_resources),
	    T(test_pod_rich),
	    T(test_pod_bound_deleting),
	    T(test_pod_job),
	    T(test_pod_level_resources),
	    T(test_pod_unsupported_and_gates),
	    T(test_pod_requests_sidecars),
	    T(test_pod_specs_shared),
	    T(test_pod_scratch_reuse),
	    T(test_pod_group_source),
	    T(test_pod_owner),
	    T(test_pod_phase_and_condition),
	    T(test_pod_timestamps),
	    T(test_pod_start_time),
	    T(test_pod_uid),
	    T(test_pod_resource_version),
	    T(test_pod_empty_node_name),
	    T(test_node),
	    T(test_podgroup_scheduler_plugins),
	    T(test_podgroup_volcano),
	    T(test_podgroup_native),
	    T(test_pod_native_group),
	    T(test_workload),
	    T(test_priorityclass),
	    T(test_pdb),
	    T(test_namespace),
	    T(test_all_real_objects_decode),
	    T(test_hostile_fields),
	    T(test_hostile_null_document),
	    T(test_hostile_truncated),
	    T(test_hostile_deep_nesting),
	    T(test_hostile_overcap_lists),
	    T(test_hostile_overcap_strings),
	    T(test_hostile_sum_overflow),
	    T(test_hostile_too_many_resources),
	    T(test_resources_reclaimed),
	    T(test_error_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
