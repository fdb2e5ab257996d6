/*
 * scheduler/run: what the daemon's helpers promise while it shuts down.
 * The lease is released (its log lines name the gang and the holder) for
 * up to 2 s after the cache, and the strings of its model, are gone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "scheduler/sched.h"

/* With no cache, every id names "": a log line says less, never crashes. */
static void test_str_without_cache(void **state)
{
	struct sched *s = calloc(1, sizeof(*s));

	(void)state;
	assert_non_null(s);
	assert_string_equal(sched_str(s, 0), "");
	assert_string_equal(sched_str(s, 1), "");
	assert_string_equal(sched_str(s, UINT32_MAX), "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_str_without_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
