/* base/buf: growth by doubling, the hard cap (refused whole, the content
 * left as it was), formatted text past the allocation, steal and free. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"

static void test_append_grows_by_doubling(void **state)
{
	struct buf b;
	char chunk[100];
	size_t last_cap = 0, reallocs = 0;

	(void)state;
	memset(chunk, 'x', sizeof(chunk));
	buf_init(&b, 1 << 20);
	assert_null(b.p);
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(buf_append(&b, chunk, sizeof(chunk)), 0);
		if (b.cap != last_cap) {
			/* each growth at least doubles: a power of two from 256 */
			assert_true(last_cap == 0 || b.cap >= 2 * last_cap);
			assert_int_equal(b.cap & (b.cap - 1), 0);
			last_cap = b.cap;
			reallocs++;
		}
	}
	assert_int_equal(b.len, 100000);
	assert_true(b.cap >= b.len + 1 && b.cap <= 2 * (b.len + 1));
	assert_true(reallocs <= 10);
	assert_int_equal(b.p[b.len], '\0');
	assert_int_equal(b.p[0], 'x');
	assert_int_equal(b.p[b.len - 1], 'x');
	buf_free(&b);
}

/* An empty append still leaves a string to read. */
static void test_empty_append_allocates_an_empty_string(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 10);
	assert_int_equal(buf_append(&b, "", 0), 0);
	assert_non_null(b.p);
	assert_string_equal(b.p, "");
	assert_int_equal(b.len, 0);
	buf_free(&b);
}

static void test_cap_refuses_whole_and_keeps_content(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 10);
	assert_int_equal(buf_append(&b, "hello", 5), 0);
	assert_int_equal(buf_append(&b, "world!", 6), -EMSGSIZE);
	assert_int_equal(b.len, 5);
	assert_string_equal(b.p, "hello");
	assert_int_equal(buf_reserve(&b, 6), -EMSGSIZE);
	assert_int_equal(buf_printf(&b, "%s", "world!"), -EMSGSIZE);
	assert_int_equal(b.len, 5);
	assert_string_equal(b.p, "hello");
	/* exactly up to the cap is fine, and the allocation stops at max + 1 */
	assert_int_equal(buf_append(&b, "world", 5), 0);
	assert_string_equal(b.p, "helloworld");
	assert_int_equal(b.cap, 11);
	assert_int_equal(buf_append(&b, "!", 1), -EMSGSIZE);
	assert_int_equal(buf_reserve(&b, 0), 0);
	buf_free(&b);
}

/* A zeroed buffer has max 0: it takes nothing until buf_init(). */
static void test_zeroed_buffer_refuses(void **state)
{
	struct buf b = {0};

	(void)state;
	assert_int_equal(buf_append(&b, "a", 1), -EMSGSIZE);
	assert_null(b.p);
}

static void test_printf_past_capacity(void **state)
{
	struct buf b;
	char big[1000];

	(void)state;
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	buf_init(&b, 1 << 16);
	assert_int_equal(buf_printf(&b, "%d-", 42), 0);
	assert_int_equal(b.cap, 256);
	/* the first try does not fit the 256 bytes held: grown, then written */
	assert_int_equal(buf_printf(&b, "%s|%zu", big, sizeof(big)), 0);
	assert_int_equal(b.len, 3 + 999 + 5);
	assert_true(b.cap >= b.len + 1);
	assert_memory_equal(b.p, "42-yyy", 6);
	assert_string_equal(b.p + 3 + 999, "|1000");
	/* one that fits the room left is written at once */
	assert_int_equal(buf_printf(&b, "%c", '.'), 0);
	assert_string_equal(b.p + b.len - 6, "|1000.");
	buf_free(&b);
}

/* A refused printf that partly wrote into the room left restores the NUL. */
static void test_refused_printf_keeps_the_string(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 300);
	assert_int_equal(buf_printf(&b, "%s", "abc"), 0);
	assert_int_equal(b.cap, 256);
	assert_int_equal(buf_printf(&b, "%400s", "z"), -EMSGSIZE);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.p, "abc");
	buf_free(&b);
}

static void test_steal_reset_and_free(void **state)
{
	struct buf b;
	size_t len = 0;
	char *s;

	(void)state;
	buf_init(&b, 100);
	assert_null(buf_steal(&b, &len));
	assert_int_equal(len, 0);
	assert_int_equal(buf_printf(&b, "%s", "kept"), 0);
	s = buf_steal(&b, &len);
	assert_string_equal(s, "kept");
	assert_int_equal(len, 4);
	free(s);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	assert_int_equal(b.max, 100);

	assert_int_equal(buf_append(&b, "abc", 3), 0);
	buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_non_null(b.p);
	assert_string_equal(b.p, "");
	assert_int_equal(buf_append(&b, "de", 2), 0);
	assert_string_equal(b.p, "de");

	buf_free(&b);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	assert_int_equal(b.max, 100);
	buf_free(&b); /* twice is harmless */
}

/* No cap at all: max SIZE_MAX does not overflow the NUL's byte. */
static void test_uncapped_refuses_overflow(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, SIZE_MAX);
	assert_int_equal(buf_append(&b, "ab", 2), 0);
	assert_int_equal(buf_reserve(&b, SIZE_MAX - 2), -ENOMEM);
	assert_int_equal(buf_reserve(&b, SIZE_MAX - 1), -EMSGSIZE);
	assert_string_equal(b.p, "ab");
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_append_grows_by_doubling),
	    cmocka_unit_test(test_empty_append_allocates_an_empty_string),
	    cmocka_unit_test(test_cap_refuses_whole_and_keeps_content),
	    cmocka_unit_test(test_zeroed_buffer_refuses),
	    cmocka_unit_test(test_printf_past_capacity),
	    cmocka_unit_test(test_refused_printf_keeps_the_string),
	    cmocka_unit_test(test_steal_reset_and_free),
	    cmocka_unit_test(test_uncapped_refuses_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
