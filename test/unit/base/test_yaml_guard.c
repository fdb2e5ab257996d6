/*
 * kubeapi/yaml_guard: text too large or nested too deep is refused, with
 * the line and column of the first bracket or node too deep, before
 * libyaml loads it; brackets that are not structure (in quoted scalars,
 * comments, block scalars, plain text) do not count, so real files pass.
 *
 * Which of the two checks refused shows in the message: the scan of the
 * bytes says "'[' nested ...", the event pass "a list nested ...". Tests
 * of the scan expect its message, so a bracket it missed (and the event
 * pass caught) fails them. Columns were counted by hand.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/yaml_guard.h"

#define SCAN_LIST "'[' nested deeper than 64 levels"
#define SCAN_MAP  "'{' nested deeper than 64 levels"
#define EV_LIST   "a list nested deeper than 64 levels"
#define EV_MAP    "a mapping nested deeper than 64 levels"

/* head, then n copies of unit, then tail, in a new string. */
static char *repeat(const char *head, const char *unit, size_t n, const char *tail)
{
	size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
	char *s = malloc(hl + ul * n + tl + 1), *p = s;

	assert_non_null(s);
	memcpy(p, head, hl);
	p += hl;
	for (size_t i = 0; i < n; i++, p += ul)
		memcpy(p, unit, ul);
	memcpy(p, tail, tl + 1);
	return s;
}

static void expect_ok(const char *label, const char *text)
{
	struct yaml_refusal why = {0};
	int rc = yaml_guard(text, strlen(text), &why);

	if (rc != 0)
		fail_msg("%s: refused (%d) at %zu:%zu: %s", label, rc, why.line, why.column,
		         why.msg);
}

static void expect_refused(const char *label, const char *text, size_t line, size_t column,
                           const char *msg)
{
	struct yaml_refusal why = {0};
	int rc = yaml_guard(text, strlen(text), &why);

	if (rc != -EINVAL || why.line != line || why.column != column || strcmp(why.msg, msg))
		fail_msg("%s: got %d at %zu:%zu: %s\nwant %d at %zu:%zu: %s", label, rc, why.line,
		         why.column, why.msg, -EINVAL, line, column, msg);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The attack: 1 MiB of '[' took libyaml minutes. */
static void test_megabyte_of_brackets(void **state)
{
	struct yaml_refusal why;
	char *text = malloc(YAML_GUARD_MAX_BYTES);
	double t0, ms;

	(void)state;
	assert_non_null(text);
	memset(text, '[', YAML_GUARD_MAX_BYTES);
	t0 = now_ms();
	assert_int_equal(yaml_guard(text, YAML_GUARD_MAX_BYTES, &why), -EINVAL);
	ms = now_ms() - t0;
	assert_int_equal(why.line, 1);
	assert_int_equal(why.column, 65);
	assert_string_equal(why.msg, SCAN_LIST);
	/* Generous: the old cost was minutes; the guard stops at byte 65. */
	print_message("1 MiB of '[' refused in %.3f ms\n", ms);
	assert_true(ms < 2000);
	free(text);
}

static void test_depth_limit(void **state)
{
	char *at = repeat("", "[", 64, "]"), *over;

	(void)state;
	expect_ok("64 deep", at); /* unclosed: a syntax error, not the guard's */
	free(at);
	over = repeat("", "[", 65, "");
	expect_refused("65 deep", over, 1, 65, SCAN_LIST);
	free(over);
	over = repeat("- ", "[", 65, "");
	expect_refused("in a list item", over, 1, 67, SCAN_LIST);
	free(over);
	over = repeat("\"k\": ", "[", 65, "");
	expect_refused("after a quoted key", over, 1, 70, SCAN_LIST);
	free(over);
	over = repeat("--- ", "[", 65, "");
	expect_refused("after a document marker", over, 1, 69, SCAN_LIST);
	free(over);
	over = repeat("a: &x ", "[", 65, "");
	expect_refused("after an anchor", over, 1, 71, SCAN_LIST);
	free(over);
	over = repeat("a: [&x,", "[", 64, "");
	expect_refused("after an anchor in a list", over, 1, 71, SCAN_LIST);
	free(over);
	over = repeat("\xef\xbb\xbf", "[", 65, "");
	expect_refused("after a byte order mark", over, 1, 65, SCAN_LIST);
	free(over);
	over = repeat("a:\n", "{x: ", 70, "");
	expect_refused("mappings", over, 2, 1 + 64 * 4, SCAN_MAP);
	free(over);
	/* Closed brackets give the depth back: 1000 lists of 60 pass. */
	over = repeat("",
	              "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	              "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
	              1000, "");
	expect_ok("many shallow", over);
	free(over);
	/* Lines and columns: CR LF and CR are one break each; é is one
	 * column; a byte order mark is none. */
	over = repeat("\xef\xbb\xbf# a\r\nb: 1\rc: \"\xc3\xa9\"\n\xc3\xa9: ", "[", 65, "");
	expect_refused("position", over, 4, 68, SCAN_LIST);
	free(over);
}

static void test_size_cap(void **state)
{
	struct yaml_refusal why;
	char *text = malloc(YAML_GUARD_MAX_BYTES + 1);

	(void)state;
	assert_non_null(text);
	memset(text, '#', YAML_GUARD_MAX_BYTES + 1);
	assert_int_equal(yaml_guard(text, YAML_GUARD_MAX_BYTES, &why), 0);
	assert_int_equal(yaml_guard(text, YAML_GUARD_MAX_BYTES + 1, &why), -EFBIG);
	assert_int_equal(why.line, 0);
	assert_string_equal(why.msg, "larger than 1048576 bytes");
	free(text);
}

/* Each case hides 100 brackets in prefix + "[" * 100 + suffix, then
 * opens 65 real ones after it: the scan must skip the first and count the
 * rest, so it refuses at (line, column) with its own message. */
struct hidden {
	const char *label, *prefix, *suffix;
	size_t line, column;
};

static const struct hidden hidden[] = {
    {"single-quoted", "a: '", " '' x'\nb: ", 2, 68},
    {"single-quoted over lines", "a: 'x\n  ", "'\nb: ", 3, 68},
    {"double-quoted", "a: \"\\\" \\\\ ", " \\\"\"\nb: ", 2, 68},
    {"double-quoted, escaped break", "a: \"x\\\n  ", "\"\nb: ", 3, 68},
    {"double-quoted in a flow list", "a: [\"x\\\" ", "\", y]\nb: ", 2, 68},
    {"quoted in a flow list", "a: [\"", "\", ']', x]\nb: ", 2, 68},
    {"comment", "# ", "\nb: ", 2, 68},
    {"comment after a value", "a: b # ", "\nb: ", 2, 68},
    {"comment after a value in a flow list", "a: [b #", "\n  ]\nb: ", 3, 68},
    {"comment after a comma", "a: [x, #", "\n  y]\nb: ", 3, 68},
    {"plain scalar", "a: x", "\nb: ", 2, 68},
    {"plain scalar with a quote", "a: don't ", "\nb: ", 2, 68},
    {"plain scalar over lines", "a: x\n  ", "\n  y\nb: ", 4, 68},
    {"plain scalar in a list over lines", "- x\n  y ", "\n- ", 3, 67},
    {"tag and anchor", "a: !!str &x '", "'\nb: ", 2, 68},
    {"literal block scalar", "a: |\n  ", "\n\n  more\nb: ", 5, 68},
    {"folded block scalar in a list", "- a: >+2\n    ", "\n    x\n- b: ", 4, 70},
    {"block scalar on its own line", "a:\n  |\n    ", "\nb: ", 4, 68},
    {"block scalar indented less than its '|'", "a:\n    |\n  ", "\nb: ", 4, 68},
    {"block scalar indented one space", "key: |\n ", "\nb: ", 3, 68},
    {"top-level block scalar", "--- |\n ", "\n--- ", 3, 69},
    {"top-level plain scalar", "--- x\n", "\n--- ", 3, 69},
    {"top-level plain scalar, a comment", "--- x\n", "\n# a: [\n--- ", 4, 69},
    {"block scalar in a list item's mapping", "- a: |\n    x\n    ", "\n  b: ", 4, 70},
    {"block scalar after a tag on its own line", "- a:\n    !!str\n    |\n      x\n      ",
     "\n  b: ", 6, 70},
    {"CR LF breaks", "a: |\r\n  ", "\r\nb: ", 3, 68},
    {"plain scalar over CR LF lines", "a: x\r\n  ", "\r\n  y\r\nb: ", 4, 68},
    {"plain scalar over CR lines", "a: x\r  ", "\r  y\rb: ", 4, 68},
};

static void test_hidden_brackets(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
		const struct hidden *h = &hidden[i];
		char *bait = repeat(h->prefix, "[", 100, h->suffix);
		char *text = repeat(bait, "[", 65, "");
		char *fine = repeat(bait, "[", 2, "x]]\n");

		expect_ok(h->label, fine);
		expect_refused(h->label, text, h->line, h->column, SCAN_LIST);
		free(fine);
		free(text);
		free(bait);
	}
}

/* Nesting without brackets: found in libyaml's events, at the node. */
static void test_block_nesting(void **state)
{
	char *text = repeat("", "- ", 512 * 1024, "");
	char *lines = malloc(65 * 68 + 1), *p = lines;

	(void)state;
	expect_refused("a megabyte of list items", text, 1, 129, EV_LIST);
	for (int i = 0; i < 65; i++)
		p += sprintf(p, "%*sk:\n", i, "");
	expect_refused("indented mappings", lines, 65, 65, EV_MAP);
	lines[64 * 68] = '\0';
	p = lines;
	for (int i = 0; i < 64; i++)
		p += sprintf(p, "%*sk:\n", i, "");
	expect_ok("64 indented mappings", lines);
	free(lines);
	free(text);
}

/* Where the scan misreads YAML it counts fewer brackets; libyaml's
 * events count them. Here a line break that only libyaml knows (NEL,
 * U+0085) ends a plain scalar: the scan takes the brackets for its text. */
static void test_missed_by_the_scan(void **state)
{
	char *text = repeat("- x\xc2\x85"
	                    "- ",
	                    "[", 100, "");

	(void)state;
	/* Depth: the list, then 64 brackets. */
	expect_refused("after a NEL", text, 2, 66, EV_LIST);
	free(text);
}

static void test_real_files_pass(void **state)
{
	static char text[64 * 1024];
	FILE *f = fopen("config/example.yaml", "rb");
	size_t len;
	struct yaml_refusal why;

	(void)state;
	assert_non_null(f);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	assert_true(len > 0);
	assert_int_equal(yaml_guard(text, len, &why), 0);
	/* Syntax errors are the loader's to report. */
	expect_ok("unclosed", "a: [b, c\n");
	expect_ok("bad indent", "a:\n  b: 1\n c: 2\n");
	expect_ok("empty", "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_megabyte_of_brackets),
	    cmocka_unit_test(test_depth_limit),
	    cmocka_unit_test(test_size_cap),
	    cmocka_unit_test(test_hidden_brackets),
	    cmocka_unit_test(test_block_nesting),
	    cmocka_unit_test(test_missed_by_the_scan),
	    cmocka_unit_test(test_real_files_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
