/*
 * scheduler/status: when status waits for the binds. It waits while the
 * engine is busy with them or the watch has not shown them yet, and never
 * longer than 30 s at a time: then one cycle's worth goes and it waits
 * again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "scheduler/sched.h"

static const struct sched_status_load quiet = {.writes_waiting = 3, .calls_running = 12};

static void goes_when_quiet(void **state)
{
	uint64_t held = 0;

	(void)state;
	assert_false(sched_status_waits(&quiet, 5000, &held));
	assert_int_equal(held, 0);
}

/* Each of the three, alone, holds status; at its limit it does not. */
static void each_reason_holds(void **state)
{
	struct sched_status_load l[] = {
	    {.writes_waiting = 257}, {.calls_running = 65}, {.binds_unseen = 65}};
	struct sched_status_load at[] = {
	    {.writes_waiting = 256}, {.calls_running = 64}, {.binds_unseen = 64}};

	(void)state;
	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
		uint64_t held = 0;

		assert_true(sched_status_waits(&l[i], 1000, &held));
		assert_int_not_equal(held, 0);
		assert_false(sched_status_waits(&at[i], 1100, &held));
		assert_int_equal(held, 0);
	}
}

/* A server that stays busy delays status by 30 s at most, then lets one
 * cycle through and holds the next again. */
static void never_starves(void **state)
{
	struct sched_status_load busy = {.binds_unseen = 2000};
	uint64_t held = 0;

	(void)state;
	assert_true(sched_status_waits(&busy, 0, &held)); /* the loop's clock may start at 0 */
	assert_int_not_equal(held, 0);
	for (uint64_t t = 100; t < 30000; t += 100)
		assert_true(sched_status_waits(&busy, t, &held));
	assert_false(sched_status_waits(&busy, 30000, &held));
	assert_true(sched_status_waits(&busy, 30001, &held));
	assert_true(sched_status_waits(&busy, 59999, &held));
	assert_false(sched_status_waits(&busy, 60000, &held));
}

/* Quiet again, the hold starts afresh: a later burst gets its own 30 s. */
static void quiet_resets(void **state)
{
	struct sched_status_load busy = {.calls_running = 200};
	uint64_t held = 0;

	(void)state;
	assert_true(sched_status_waits(&busy, 1000, &held));
	assert_false(sched_status_waits(&quiet, 20000, &held));
	assert_true(sched_status_waits(&busy, 40000, &held));
	assert_true(sched_status_waits(&busy, 69000, &held));
	assert_false(sched_status_waits(&busy, 70100, &held));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(goes_when_quiet),
	    cmocka_unit_test(each_reason_holds),
	    cmocka_unit_test(never_starves),
	    cmocka_unit_test(quiet_resets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
