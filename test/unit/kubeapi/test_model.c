/*
 * kubeapi/model: label selectors, the one matcher behind a pod's
 * nodeSelector and node affinity (policy/nodes.c) and a
 * PodDisruptionBudget's selector (policy/victims.c).
 *
 * Label sets, pod specs and selectors are decoded from small API server
 * objects, so the blobs are what the cache holds. Requirements are tried
 * one at a time from a table (key, operator, values, expected), on one
 * node's labels; then each shape's own rules: ORed terms, the empty term,
 * nodeSelector pairs, the empty selector, Gt/Lt in a label selector.
 * Every test's teardown checks that nothing interned is left alive.
 */
#include <errno.h>
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

/* ---- fixtures and helpers ------------------------------------------------- */

struct fx {
	struct kubeapi_model *m;
	uint32_t ids[64]; /* strings the test interned itself, dropped in teardown */
	size_t nids;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || kubeapi_model_new(&f->m) < 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

/* Drop the strings the test interned itself. */
static void drop(struct fx *f)
{
	for (size_t k = 0; k < f->nids; k++)
		intern_unref(kubeapi_model_intern(f->m), f->ids[k]);
	f->nids = 0;
}

/* Fails the test if anything interned is still alive. */
static int teardown(void **state)
{
	struct fx *f = *state;
	struct intern_stats s;

	drop(f);
	intern_stats(kubeapi_model_intern(f->m), &s);
	kubeapi_model_free(&f->m);
	free(f);
	if (s.strings || s.blobs) {
		print_error("leak: %zu strings and %zu blobs still live after the test\n",
		            s.strings, s.blobs);
		return -1;
	}
	return 0;
}

/* The id of s, interned for the rest of the test. */
static uint32_t V(struct fx *f, const char *s)
{
	uint32_t id = intern_add(kubeapi_model_intern(f->m), s, strlen(s));

	assert_true(id != 0);
	assert_true(f->nids < sizeof(f->ids) / sizeof(f->ids[0]));
	f->ids[f->nids++] = id;
	return id;
}

static cJSON *parse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static cJSON *parse(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	cJSON *o;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	o = cJSON_Parse(buf);
	if (!o)
		fail_msg("test bug: bad JSON: %s", buf);
	return o;
}

static void check_decoded(int rc, const struct kubeapi_decode_error *err)
{
	char b[512];

	if (rc != 0)
		fail_msg("decode: %s", kubeapi_decode_error_str(err, b, sizeof(b)));
}

/* A Ready node `name` with labels (the inside of a JSON object). */
static void node(struct fx *f, const char *name, const char *labels, struct kubeapi_node *out)
{
	struct kubeapi_decode_error err;
	cJSON *o = parse("{\"metadata\":{\"name\":\"%s\",\"uid\":\"00000000-0000-0000-0000-"
	                 "000000000001\",\"resourceVersion\":\"1\",\"labels\":{%s}},"
	                 "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"8\",\"pods\":\"110\"},"
	                 "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	                 name, labels);

	check_decoded(kubeapi_node_decode(f->m, o, out, &err), &err);
	cJSON_Delete(o);
}

/* A pending pod in namespace ns with labels and more spec JSON (or ""). */
static void pod(struct fx *f, const char *ns, const char *labels, const char *spec,
                struct kubeapi_pod *out)
{
	struct kubeapi_decode_error err;
	cJSON *o = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"%s\",\"uid\":"
	                 "\"00000000-0000-0000-0000-000000000002\",\"resourceVersion\":\"1\","
	                 "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{%s}},"
	                 "\"spec\":{\"schedulerName\":\"muster\"%s%s,\"containers\":[{\"name\":"
	                 "\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"
	                 "\"status\":{\"phase\":\"Pending\"}}",
	                 ns, labels, *spec ? "," : "", spec);

	check_decoded(kubeapi_pod_decode(f->m, o, out, &err), &err);
	cJSON_Delete(o);
}

/* A pod whose spec has this required node affinity (the inside of
 * nodeSelectorTerms) and nodeSelector (the inside of an object). */
static void pod_affinity(struct fx *f, const char *terms, const char *selector,
                         struct kubeapi_pod *out)
{
	char spec[2048];

	snprintf(
	    spec, sizeof(spec),
	    "\"nodeSelector\":{%s},\"affinity\":{\"nodeAffinity\":{"
	    "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[%s]}}}",
	    selector, terms);
	pod(f, "ns", "", spec, out);
}

/* A budget in namespace ns with this spec.selector (JSON). */
static int pdb(struct fx *f, const char *ns, const char *selector, struct kubeapi_pdb *out,
               struct kubeapi_decode_error *err)
{
	cJSON *o = parse("{\"metadata\":{\"name\":\"b\",\"namespace\":\"%s\",\"uid\":"
	                 "\"00000000-0000-0000-0000-000000000003\",\"resourceVersion\":\"1\"},"
	                 "\"spec\":{\"selector\":%s},\"status\":{\"disruptionsAllowed\":1}}",
	                 ns, selector);
	int rc = kubeapi_pdb_decode(f->m, o, out, err);

	cJSON_Delete(o);
	return rc;
}

/* ---- one requirement at a time ------------------------------------------------ */

/* The node every row is tried on. */
static const char node_labels[] =
    "\"zone\":\"a\",\"gen\":\"5\",\"empty\":\"\",\"neg\":\"-3\",\"plus\":\"+7\","
    "\"blank\":\" 5\",\"hex\":\"0x10\",\"max\":\"9223372036854775807\","
    "\"min\":\"-9223372036854775808\",\"over\":\"9223372036854775808\","
    "\"under\":\"-9223372036854775809\",\"huge\":\"99999999999999999999\"";

struct row {
	const char *key;
	uint8_t op, is_field;
	const char *values[3]; /* NULL-terminated */
	bool want;
};

#define IN     KUBEAPI_SEL_IN
#define NOT_IN KUBEAPI_SEL_NOT_IN
#define EXISTS KUBEAPI_SEL_EXISTS
#define ABSENT KUBEAPI_SEL_DOES_NOT_EXIST
#define GT     KUBEAPI_SEL_GT
#define LT     KUBEAPI_SEL_LT
#define LABEL  0
#define FIELD  1

static const struct row rows[] = {
    /* In: present with one of the values */
    {"zone", IN, LABEL, {"a"}, true},
    {"zone", IN, LABEL, {"b", "a"}, true},
    {"zone", IN, LABEL, {"b", "c"}, false},
    {"zone", IN, LABEL, {NULL}, false},
    {"missing", IN, LABEL, {"a"}, false},
    {"missing", IN, LABEL, {""}, false}, /* absent is not the empty value */
    {"empty", IN, LABEL, {""}, true},
    /* NotIn: absent, or none of the values */
    {"zone", NOT_IN, LABEL, {"b"}, true},
    {"zone", NOT_IN, LABEL, {"b", "a"}, false},
    {"missing", NOT_IN, LABEL, {"a"}, true},
    {"empty", NOT_IN, LABEL, {""}, false},
    /* Exists / DoesNotExist: a label with an empty value is present */
    {"zone", EXISTS, LABEL, {NULL}, true},
    {"empty", EXISTS, LABEL, {NULL}, true},
    {"missing", EXISTS, LABEL, {NULL}, false},
    {"zone", ABSENT, LABEL, {NULL}, false},
    {"empty", ABSENT, LABEL, {NULL}, false},
    {"missing", ABSENT, LABEL, {NULL}, true},
    /* Gt / Lt: both sides as int64 */
    {"gen", GT, LABEL, {"4"}, true},
    {"gen", GT, LABEL, {"5"}, false},
    {"gen", LT, LABEL, {"6"}, true},
    {"gen", LT, LABEL, {"5"}, false},
    {"gen", GT, LABEL, {"-5"}, true},
    {"neg", LT, LABEL, {"0"}, true},
    {"neg", GT, LABEL, {"-4"}, true},
    {"plus", GT, LABEL, {"6"}, true}, /* ParseInt takes a leading + */
    {"max", GT, LABEL, {"9223372036854775806"}, true},
    {"min", LT, LABEL, {"-9223372036854775807"}, true},
    {"gen", LT, LABEL, {"+9223372036854775807"}, true},
    /* ... and a value that is not an int64 fails either way, both as the
     * label and as the operand: out of range is an error, not saturated */
    {"over", GT, LABEL, {"0"}, false},
    {"over", LT, LABEL, {"0"}, false},
    {"under", LT, LABEL, {"0"}, false},
    {"under", GT, LABEL, {"0"}, false},
    {"huge", GT, LABEL, {"0"}, false},
    {"gen", LT, LABEL, {"9223372036854775808"}, false},
    {"gen", GT, LABEL, {"-9223372036854775809"}, false},
    {"gen", LT, LABEL, {"99999999999999999999"}, false},
    {"blank", GT, LABEL, {"0"}, false}, /* no blanks */
    {"gen", LT, LABEL, {" 9"}, false},
    {"hex", GT, LABEL, {"0"}, false},
    {"zone", GT, LABEL, {"0"}, false},
    {"empty", LT, LABEL, {"9"}, false},
    {"gen", GT, LABEL, {""}, false},
    {"gen", GT, LABEL, {"-"}, false},
    {"gen", LT, LABEL, {"+"}, false},
    {"missing", GT, LABEL, {"0"}, false},
    {"missing", LT, LABEL, {"9"}, false},
    {"gen", GT, LABEL, {NULL}, false},     /* exactly one value */
    {"gen", GT, LABEL, {"1", "2"}, false}, /* exactly one value */
    /* matchFields: metadata.name, always present */
    {"metadata.name", IN, FIELD, {"n1"}, true},
    {"metadata.name", IN, FIELD, {"n2", "n1"}, true},
    {"metadata.name", IN, FIELD, {"n2"}, false},
    {"metadata.name", NOT_IN, FIELD, {"n1"}, false},
    {"metadata.name", NOT_IN, FIELD, {"n2"}, true},
    {"metadata.name", EXISTS, FIELD, {NULL}, true},
    {"metadata.name", ABSENT, FIELD, {NULL}, false},
    /* ... a label of that name is another thing: the node has none */
    {"metadata.name", IN, LABEL, {"n1"}, false},
};

static void test_requirements(void **state)
{
	struct fx *f = *state;
	struct kubeapi_node n;
	int bad = 0;

	node(f, "n1", node_labels, &n);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *w = &rows[i];
		uint32_t values[3];
		struct kubeapi_requirement r = {
		    .key = V(f, w->key), .op = w->op, .is_field = w->is_field};
		bool got;

		for (; r.nvalues < 3 && w->values[r.nvalues]; r.nvalues++)
			values[r.nvalues] = V(f, w->values[r.nvalues]);
		got = kubeapi_requirement_matches(f->m, n.labels, n.name, &r, values);
		if (got != w->want) {
			print_error("row %zu: %s op %u%s: %d, want %d\n", i, w->key, w->op,
			            w->is_field ? " (field)" : "", got, w->want);
			bad++;
		}
		drop(f);
	}
	kubeapi_node_release(f->m, &n);
	if (bad)
		fail_msg("%d rows wrong (see above)", bad);
}

/* A requirement reads its values at first_value in the blob's array. */
static void test_requirement_first_value(void **state)
{
	struct fx *f = *state;
	struct kubeapi_node n;
	uint32_t values[3];
	struct kubeapi_requirement r = {.op = KUBEAPI_SEL_IN, .nvalues = 1, .first_value = 2};

	node(f, "n1", "\"zone\":\"a\"", &n);
	r.key = V(f, "zone");
	values[0] = V(f, "a");
	values[1] = V(f, "a");
	values[2] = V(f, "b");
	assert_false(kubeapi_requirement_matches(f->m, n.labels, n.name, &r, values));
	r.first_value = 0;
	assert_true(kubeapi_requirement_matches(f->m, n.labels, n.name, &r, values));
	/* no labels at all: only absence holds */
	assert_false(kubeapi_requirement_matches(f->m, NULL, n.name, &r, values));
	r.op = KUBEAPI_SEL_DOES_NOT_EXIST;
	assert_true(kubeapi_requirement_matches(f->m, NULL, n.name, &r, values));
	kubeapi_node_release(f->m, &n);
}

/* ---- a pod spec against a node ---------------------------------------------- */

#define EXPR(key, op, vals) "{\"key\":\"" key "\",\"operator\":\"" op "\",\"values\":[" vals "]}"

static void test_podspec_terms(void **state)
{
	struct fx *f = *state;
	struct kubeapi_node a, b;
	struct kubeapi_pod p;
	const struct kubeapi_term *t;

	node(f, "n-a", "\"zone\":\"a\",\"gen\":\"5\"", &a);
	node(f, "n-b", "\"zone\":\"b\",\"gen\":\"3\"", &b);

	/* Terms are ORed; a term's requirements are ANDed, matchFields with them. */
	pod_affinity(f,
	             "{\"matchExpressions\":[" EXPR("zone", "In", "\"a\"") "," EXPR(
	                 "gen", "Gt", "\"4\"") "]},"
	                                       "{\"matchFields\":[" EXPR("metadata.name", "In",
	                                                                 "\"n-b\"") "]}",
	             "", &p);
	assert_int_equal(p.spec->nrequired, 2);
	t = kubeapi_podspec_terms(p.spec);
	assert_true(kubeapi_podspec_term_matches(f->m, p.spec, &t[0], &a));
	assert_false(kubeapi_podspec_term_matches(f->m, p.spec, &t[0], &b));
	assert_false(kubeapi_podspec_term_matches(f->m, p.spec, &t[1], &a));
	assert_true(kubeapi_podspec_term_matches(f->m, p.spec, &t[1], &b));
	assert_true(kubeapi_podspec_node_matches(f->m, p.spec, &a));
	assert_true(kubeapi_podspec_node_matches(f->m, p.spec, &b));
	kubeapi_pod_release(f->m, &p);

	/* One term with a failing requirement fails as a whole. */
	pod_affinity(f,
	             "{\"matchExpressions\":[" EXPR(
	                 "zone", "In", "\"a\"") "],"
	                                        "\"matchFields\":[" EXPR("metadata.name", "NotIn",
	                                                                 "\"n-a\"") "]}",
	             "", &p);
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &a));
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &b));
	kubeapi_pod_release(f->m, &p);

	kubeapi_node_release(f->m, &a);
	kubeapi_node_release(f->m, &b);
}

/* An empty term matches no node, as upstream; beside another term it is
 * simply one that never holds. */
static void test_podspec_empty_term(void **state)
{
	struct fx *f = *state;
	struct kubeapi_node a, b;
	struct kubeapi_pod p;

	node(f, "n-a", "\"zone\":\"a\"", &a);
	node(f, "n-b", "", &b);
	pod_affinity(f, "{}", "", &p);
	assert_int_equal(p.spec->nrequired, 1);
	assert_false(kubeapi_podspec_term_matches(f->m, p.spec, kubeapi_podspec_terms(p.spec), &a));
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &a));
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &b));
	kubeapi_pod_release(f->m, &p);

	pod_affinity(
	    f, "{\"matchExpressions\":[]},{\"matchExpressions\":[" EXPR("zone", "Exists", "") "]}",
	    "", &p);
	assert_true(kubeapi_podspec_node_matches(f->m, p.spec, &a));
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &b));
	kubeapi_pod_release(f->m, &p);

	kubeapi_node_release(f->m, &a);
	kubeapi_node_release(f->m, &b);
}

/* nodeSelector: every pair, beside the affinity; none of either admits all. */
static void test_podspec_node_selector(void **state)
{
	struct fx *f = *state;
	struct kubeapi_node a, b, c;
	struct kubeapi_pod p;

	node(f, "n-a", "\"zone\":\"a\",\"disk\":\"ssd\"", &a);
	node(f, "n-b", "\"zone\":\"a\"", &b);
	node(f, "n-c", "\"zone\":\"a\",\"disk\":\"\"", &c);

	pod(f, "ns", "", "", &p);
	assert_true(kubeapi_podspec_node_matches(f->m, p.spec, &a));
	assert_true(kubeapi_podspec_node_matches(f->m, p.spec, &b));
	kubeapi_pod_release(f->m, &p);

	pod(f, "ns", "", "\"nodeSelector\":{\"disk\":\"ssd\",\"zone\":\"a\"}", &p);
	assert_true(kubeapi_podspec_node_matches(f->m, p.spec, &a));
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &b)); /* missing label */
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &c)); /* other value */
	kubeapi_pod_release(f->m, &p);

	/* an empty value asks for the empty value, not for presence */
	pod(f, "ns", "", "\"nodeSelector\":{\"disk\":\"\"}", &p);
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &a));
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &b));
	assert_true(kubeapi_podspec_node_matches(f->m, p.spec, &c));
	kubeapi_pod_release(f->m, &p);

	/* both must hold */
	pod_affinity(f, "{\"matchFields\":[" EXPR("metadata.name", "In", "\"n-b\"") "]}",
	             "\"disk\":\"ssd\"", &p);
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &a));
	assert_false(kubeapi_podspec_node_matches(f->m, p.spec, &b));
	kubeapi_pod_release(f->m, &p);

	kubeapi_node_release(f->m, &a);
	kubeapi_node_release(f->m, &b);
	kubeapi_node_release(f->m, &c);
}

/* Preferred terms are matched the same way (their weights are the
 * caller's); they follow the required ones. */
static void test_podspec_preferred_term(void **state)
{
	struct fx *f = *state;
	struct kubeapi_node a, b;
	struct kubeapi_pod p;
	const struct kubeapi_term *t;

	node(f, "n-a", "\"zone\":\"a\"", &a);
	node(f, "n-b", "\"zone\":\"b\"", &b);
	pod(f, "ns", "",
	    "\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
	    "{\"weight\":7,\"preference\":{\"matchExpressions\":[" EXPR(
	        "zone", "NotIn", "\"b\"") "]}},"
	                                  "{\"weight\":3,\"preference\":{}}]}}",
	    &p);
	assert_int_equal(p.spec->nrequired, 0);
	assert_int_equal(p.spec->npreferred, 2);
	t = kubeapi_podspec_terms(p.spec);
	assert_int_equal(t[0].weight, 7);
	assert_true(kubeapi_podspec_term_matches(f->m, p.spec, &t[0], &a));
	assert_false(kubeapi_podspec_term_matches(f->m, p.spec, &t[0], &b));
	assert_false(kubeapi_podspec_term_matches(f->m, p.spec, &t[1], &a)); /* empty */
	/* no required terms: every node is admitted */
	assert_true(kubeapi_podspec_node_matches(f->m, p.spec, &b));
	kubeapi_pod_release(f->m, &p);
	kubeapi_node_release(f->m, &a);
	kubeapi_node_release(f->m, &b);
}

/* ---- a label selector against a pod --------------------------------------------- */

static void test_selector(void **state)
{
	struct fx *f = *state;
	struct kubeapi_decode_error err;
	struct kubeapi_pod web, web2, db, bare;
	struct kubeapi_pdb b;

	pod(f, "ns", "\"app\":\"web\",\"tier\":\"front\"", "", &web);
	pod(f, "ns", "\"app\":\"web\"", "", &web2);
	pod(f, "ns", "\"app\":\"db\",\"tier\":\"\"", "", &db);
	pod(f, "ns", "", "", &bare);

	/* matchLabels and matchExpressions, all must hold */
	assert_int_equal(pdb(f, "ns",
	                     "{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":["
	                     "{\"key\":\"tier\",\"operator\":\"Exists\"}]}",
	                     &b, &err),
	                 0);
	assert_true(kubeapi_selector_matches(f->m, b.selector, web.labels));
	assert_false(kubeapi_selector_matches(f->m, b.selector, web2.labels));
	assert_false(kubeapi_selector_matches(f->m, b.selector, db.labels));
	assert_false(kubeapi_selector_matches(f->m, b.selector, bare.labels));
	kubeapi_pdb_release(f->m, &b);

	assert_int_equal(pdb(f, "ns",
	                     "{\"matchExpressions\":["
	                     "{\"key\":\"app\",\"operator\":\"NotIn\",\"values\":[\"db\"]},"
	                     "{\"key\":\"gone\",\"operator\":\"DoesNotExist\"}]}",
	                     &b, &err),
	                 0);
	assert_true(kubeapi_selector_matches(f->m, b.selector, web.labels));
	assert_true(kubeapi_selector_matches(f->m, b.selector, web2.labels));
	assert_false(kubeapi_selector_matches(f->m, b.selector, db.labels));
	assert_true(kubeapi_selector_matches(f->m, b.selector, bare.labels)); /* NotIn: absent */
	kubeapi_pdb_release(f->m, &b);

	assert_int_equal(pdb(f, "ns",
	                     "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\","
	                     "\"values\":[\"\",\"back\"]}]}",
	                     &b, &err),
	                 0);
	assert_false(kubeapi_selector_matches(f->m, b.selector, web.labels));
	assert_true(kubeapi_selector_matches(f->m, b.selector, db.labels)); /* empty value */
	assert_false(kubeapi_selector_matches(f->m, b.selector, bare.labels));
	kubeapi_pdb_release(f->m, &b);

	/* {}: every pod, unlike an empty node selector term */
	assert_int_equal(pdb(f, "ns", "{}", &b, &err), 0);
	assert_int_equal(b.selects_nothing, 0);
	assert_true(kubeapi_selector_matches(f->m, b.selector, web.labels));
	assert_true(kubeapi_selector_matches(f->m, b.selector, bare.labels));
	assert_true(kubeapi_selector_matches(f->m, b.selector, NULL));
	kubeapi_pdb_release(f->m, &b);

	kubeapi_pod_release(f->m, &web);
	kubeapi_pod_release(f->m, &web2);
	kubeapi_pod_release(f->m, &db);
	kubeapi_pod_release(f->m, &bare);
}

/* A selector blob with one requirement, laid out as the decoder lays one. */
struct hand_selector {
	struct kubeapi_selector h;
	struct kubeapi_requirement r[1];
	uint32_t v[1];
};

/* Gt and Lt belong to node selectors only: a budget's selector with one is
 * refused by the decoder, and a selector blob holding one (made by hand
 * here) selects nothing, where a node requirement would compare. */
static void test_selector_no_gt_lt(void **state)
{
	struct fx *f = *state;
	struct kubeapi_decode_error err;
	struct kubeapi_pod p;
	struct kubeapi_pdb b;
	struct hand_selector sel = {{.nreq = 1, .nvalues = 1}, {{.nvalues = 1}}, {0}};

	memset(&b, 0xa5, sizeof(b));
	assert_int_equal(pdb(f, "ns",
	                     "{\"matchExpressions\":[{\"key\":\"gen\",\"operator\":\"Gt\","
	                     "\"values\":[\"4\"]}]}",
	                     &b, &err),
	                 -EINVAL);
	assert_non_null(strstr(err.msg, "operator: unknown \"Gt\""));

	pod(f, "ns", "\"gen\":\"5\"", "", &p);
	sel.h.off_requirements = (uint32_t)offsetof(struct hand_selector, r);
	sel.h.off_values = (uint32_t)offsetof(struct hand_selector, v);
	sel.r[0].key = V(f, "gen");
	sel.v[0] = V(f, "4");
	sel.r[0].op = KUBEAPI_SEL_GT;
	assert_true(kubeapi_requirement_matches(f->m, p.labels, 0, sel.r, sel.v));
	assert_false(kubeapi_selector_matches(f->m, &sel.h, p.labels));
	sel.r[0].op = KUBEAPI_SEL_LT;
	sel.v[0] = V(f, "6");
	assert_true(kubeapi_requirement_matches(f->m, p.labels, 0, sel.r, sel.v));
	assert_false(kubeapi_selector_matches(f->m, &sel.h, p.labels));
	sel.r[0].op = KUBEAPI_SEL_EXISTS;
	assert_true(kubeapi_selector_matches(f->m, &sel.h, p.labels));
	kubeapi_pod_release(f->m, &p);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_requirements),
	    T(test_requirement_first_value),
	    T(test_podspec_terms),
	    T(test_podspec_empty_term),
	    T(test_podspec_node_selector),
	    T(test_podspec_preferred_term),
	    T(test_selector),
	    T(test_selector_no_gt_lt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
