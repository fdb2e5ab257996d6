/*
 * kubeapi/jscan: the JSON skimmer the informer cuts pages and measures
 * objects with. Tables of texts and the spans expected; every text also
 * cut short at each byte, which must say -EAGAIN (never read past the
 * end, never claim a whole value); malformed texts say -EINVAL; nesting a
 * million deep costs a pass, not a stack.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kubeapi/jscan.h"

#define N(t) (sizeof(t) / sizeof((t)[0]))

/* The values of a container, each as its text, joined by '|'. */
static int members(const char *text, size_t len, char *out, size_t cap)
{
	struct kubeapi__jiter it;
	struct kubeapi__span k, v;
	size_t n = 0;
	int rc = kubeapi__jiter_init(&it, text, len, 0);

	out[0] = '\0';
	if (rc < 0)
		return rc;
	while ((rc = kubeapi__jiter_next(&it, &k, &v)) == 1) {
		assert_true(v.off + v.len <= len);
		n += (size_t)snprintf(out + n, cap - n, "%s%.*s", n ? "|" : "", (int)v.len,
		                      text + v.off);
		assert_true(n < cap);
	}
	return rc;
}

static void test_values_are_cut_whole(void **state)
{
	static const struct {
		const char *in, *want;
	} rows[] = {
	    {"[]", ""},
	    {"{}", ""},
	    {" [ 1 , -2.5e+3 ,true,false,null ] ", "1|-2.5e+3|true|false|null"},
	    {"{\"a\":1,\"b\":\"x\"}", "1|\"x\""},
	    {"[\"a,b]\",{\"c\":[1,{\"d\":\"}\"}]}]", "\"a,b]\"|{\"c\":[1,{\"d\":\"}\"}]}"},
	    /* Escaped quotes and backslashes: a quote ends a string exactly
	     * when an even run of backslashes precedes it. */
	    {"[\"a\\\"b\",\"c\\\\\",\"\\\\\\\"\"]", "\"a\\\"b\"|\"c\\\\\"|\"\\\\\\\"\""},
	    {"{\"k\\\"\" : [ ] , \"\":{}}", "[ ]|{}"},
	};
	char got[256];

	(void)state;
	for (size_t i = 0; i < N(rows); i++) {
		assert_int_equal(members(rows[i].in, strlen(rows[i].in), got, sizeof(got)), 0);
		if (strcmp(got, rows[i].want))
			fail_msg("%s: got <%s>, want <%s>", rows[i].in, got, rows[i].want);
	}
}

/* Every prefix of a valid text ends in -EAGAIN, never 0 or -EINVAL, and
 * never a value that reaches past the cut. */
static void test_text_cut_short_says_so(void **state)
{
	static const char *const texts[] = {
	    "{\"metadata\":{\"continue\":\"x\\\"y\"},\"items\":[{\"a\":[1,2]},{\"b\":\"]}\"}]}",
	    "[true,12345,\"s\\\\\",{\"k\":null}]",
	};
	char got[256];

	(void)state;
	for (size_t t = 0; t < N(texts); t++) {
		size_t len = strlen(texts[t]);

		for (size_t cut = 0; cut < len; cut++) {
			/* A copy of exactly cut bytes, so ASan sees any read past it. */
			char *p = malloc(cut ? cut : 1);

			assert_non_null(p);
			memcpy(p, texts[t], cut);
			if (members(p, cut, got, sizeof(got)) != -EAGAIN)
				fail_msg("%s cut at %zu: not -EAGAIN", texts[t], cut);
			free(p);
		}
	}
}

/* Malformed at the level being walked. Inside a value that is only
 * skipped ([{"a":}]) only brackets and strings are checked: cJSON parses
 * whatever is kept. */
static void test_malformed_is_einval(void **state)
{
	static const char *const bad[] = {
	    "x",         "[1,]",
	    "[,1]",      "{1:2}",
	    "{\"a\" 1}", "{\"a\":1,}",
	    "[1 2]",     "[1}",
	    "{\"a\":]}", "[#]",
	    "{\"a\":1]", "[\"a\"\"b\"]",
	    "[ABC]",     "{\"a\":1 \"b\":2}",
	};
	char got[64];

	(void)state;
	for (size_t i = 0; i < N(bad); i++)
		if (members(bad[i], strlen(bad[i]), got, sizeof(got)) != -EINVAL)
			fail_msg("%s: not -EINVAL", bad[i]);
}

static void test_find_and_string(void **state)
{
	const char *o = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a-1\",\"namespace\":\"t\\\"x\","
	                "\"rv\":7},\"spec\":{}}";
	struct kubeapi__span v;
	char s[8];

	(void)state;
	assert_int_equal(kubeapi__jfind(o, strlen(o), 0, "metadata", &v), 1);
	assert_int_equal(kubeapi__jfind(o, v.off + v.len, v.off, "name", &v), 1);
	assert_int_equal(kubeapi__jstring(o, v, s, sizeof(s)), 0);
	assert_string_equal(s, "a-1");
	assert_int_equal(kubeapi__jstring(o, v, s, 4), 0);
	assert_int_equal(kubeapi__jstring(o, v, s, 3), -EINVAL); /* no room for the NUL */
	assert_string_equal(s, "");
	assert_int_equal(kubeapi__jfind(o, strlen(o), 0, "nope", &v), 0);
	/* Escapes are not unescaped: refused. Numbers are not strings. */
	kubeapi__jfind(o, strlen(o), 0, "metadata", &v);
	assert_int_equal(kubeapi__jfind(o, v.off + v.len, v.off, "namespace", &v), 1);
	assert_int_equal(kubeapi__jstring(o, v, s, sizeof(s)), -EINVAL);
	kubeapi__jfind(o, strlen(o), 0, "metadata", &v);
	assert_int_equal(kubeapi__jfind(o, v.off + v.len, v.off, "rv", &v), 1);
	assert_int_equal(kubeapi__jstring(o, v, s, sizeof(s)), -EINVAL);
	/* Cut inside "metadata": found, partial; cut before it: not found. */
	assert_int_equal(kubeapi__jfind(o, 40, 0, "metadata", &v), -EAGAIN);
	assert_int_equal(v.off, 25);
	assert_int_equal(v.len, 15);
	assert_int_equal(kubeapi__jfind(o, 40, 0, "spec", &v), -EAGAIN);
	assert_int_equal(v.len, 0);
	/* Not an object. */
	assert_int_equal(kubeapi__jfind("[1]", 3, 0, "a", &v), -EINVAL);
}

/* A million '[' then as many ']': one pass, no recursion. */
static void test_deep_nesting_is_a_counter(void **state)
{
	size_t depth = 1000000, len = 2 * depth + 2;
	char *p = malloc(len);
	struct kubeapi__jiter it;
	struct kubeapi__span v;

	(void)state;
	assert_non_null(p);
	p[0] = '[';
	memset(p + 1, '[', depth);
	memset(p + 1 + depth, ']', depth);
	p[len - 1] = ']';
	assert_int_equal(kubeapi__jiter_init(&it, p, len, 0), 0);
	assert_int_equal(kubeapi__jiter_next(&it, NULL, &v), 1);
	assert_int_equal(v.off, 1);
	assert_int_equal(v.len, 2 * depth);
	assert_int_equal(kubeapi__jiter_next(&it, NULL, &v), 0);
	/* One ']' short: cut, not malformed. */
	assert_int_equal(kubeapi__jiter_init(&it, p, len - 2, 0), 0);
	assert_int_equal(kubeapi__jiter_next(&it, NULL, &v), -EAGAIN);
	assert_int_equal(v.len, len - 3);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values_are_cut_whole),
	    cmocka_unit_test(test_text_cut_short_says_so),
	    cmocka_unit_test(test_malformed_is_einval),
	    cmocka_unit_test(test_find_and_string),
	    cmocka_unit_test(test_deep_nesting_is_a_counter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
