/*
 * scheduler/log: what a tenant's string can do to a log line. Control
 * characters, line separators and bytes that are not UTF-8 become visible
 * escapes, so a value can neither end the line nor make the JSON invalid;
 * text that is already clean passes unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "scheduler/sched.h"

static void clean_is(const char *in, const char *want)
{
	char out[256];

	sched_log_clean(in, out, sizeof(out));
	assert_string_equal(out, want);
}

static void test_clean_text_unchanged(void **state)
{
	(void)state;
	clean_is("gang a/train: bound pod a/train-0 to gpu-3",
	         "gang a/train: bound pod a/train-0 to gpu-3");
	clean_is("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80",
	         "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80");
	clean_is("", "");
}

static void test_clean_controls(void **state)
{
	(void)state;
	clean_is("g\n2026-11-24T00:00:00.000Z muster: forged",
	         "g\\n2026-11-24T00:00:00.000Z muster: forged");
	clean_is("a\rb\tc\x1b[31md\x7f", "a\\rb\\tc\\x1b[31md\\x7f");
	/* C1 controls and the Unicode line separators, though valid UTF-8 */
	clean_is("x\xc2\x85y\xe2\x80\xa8z\xe2\x80\xa9", "x\\u0085y\\u2028z\\u2029");
}

static void test_clean_invalid_utf8(void **state)
{
	(void)state;
	clean_is("\xff\xfe", "\\xff\\xfe");
	clean_is("\xc0\xaf", "\\xc0\\xaf");                   /* overlong '/' */
	clean_is("\xed\xa0\x80", "\\xed\\xa0\\x80");          /* a surrogate */
	clean_is("ab\xe2\x82", "ab\\xe2\\x82");               /* cut sequence at the end */
	clean_is("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
}

/* A full buffer cuts before an escape, never inside one. */
static void test_clean_cut(void **state)
{
	char out[6];

	(void)state;
	sched_log_clean("abcd\n", out, sizeof(out));
	assert_string_equal(out, "abcd");
	sched_log_clean("ab\xe2\x82\xac", out, 5);
	assert_string_equal(out, "ab");
}

/* Any bytes give a clean string: cleaning it again changes nothing (so
 * it holds no control character and is valid UTF-8), and cJSON quotes
 * and parses it back as the JSON logger does. */
static void test_clean_any_bytes_make_json(void **state)
{
	char in[4], out[64];

	(void)state;
	for (unsigned a = 1; a < 256; a++)
		for (unsigned b = 1; b < 256; b += 7) {
			cJSON *o = cJSON_CreateObject(), *back;
			char *line;

			in[0] = (char)a;
			in[1] = (char)b;
			in[2] = 'x';
			in[3] = '\0';
			char again[64];

			sched_log_clean(in, out, sizeof(out));
			sched_log_clean(out, again, sizeof(again));
			assert_string_equal(again, out);
			cJSON_AddStringToObject(o, "msg", out);
			line = cJSON_PrintUnformatted(o);
			back = cJSON_Parse(line);
			assert_non_null(back);
			assert_string_equal(cJSON_GetObjectItem(back, "msg")->valuestring, out);
			cJSON_Delete(back);
			cJSON_free(line);
			cJSON_Delete(o);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clean_text_unchanged),      cmocka_unit_test(test_clean_controls),
	    cmocka_unit_test(test_clean_invalid_utf8),        cmocka_unit_test(test_clean_cut),
	    cmocka_unit_test(test_clean_any_bytes_make_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
