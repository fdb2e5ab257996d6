/*
 * config_watch: a reload with a broken file keeps the configuration in
 * force and says why, with file:line:column; a good file becomes the next
 * configuration, whether the change is seen by the stat poll or signalled
 * with SIGHUP; unchanged bytes are not a reload; a vanished file is
 * rejected like a broken one. A real libuv loop, a real file, a real
 * signal.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "config/config.h"

#define POLL_MS 20

struct seen {
	int ready, rejected;
	char first_error[512];
};

static void on_reload(void *ud, enum config_reload what, const struct config_errors *errs)
{
	struct seen *s = ud;

	if (what == CONFIG_RELOAD_READY)
		s->ready++;
	if (what == CONFIG_RELOAD_REJECTED) {
		s->rejected++;
		snprintf(s->first_error, sizeof(s->first_error), "%s",
		         errs->n ? errs->v[0].msg : "(none)");
	}
}

static void write_file(const char *path, const char *text)
{
	/* Write a new file and rename it over the old, as editors and
	 * ConfigMap updates do: the path never holds half a file. */
	char tmp[256];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static void on_deadline(uv_timer_t *t)
{
	*(int *)t->data = 1;
}

/* Runs the loop until *counter exceeds `before`, for at most 5 s. */
static void wait_for(uv_loop_t *loop, const int *counter, int before)
{
	uv_timer_t timer;
	int expired = 0;

	uv_timer_init(loop, &timer);
	timer.data = &expired;
	uv_timer_start(&timer, on_deadline, 5000, 0);
	while (*counter == before && !expired)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&timer, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	if (expired)
		fail_msg("nothing happened within 5 s");
}

static const char *only_queue(const struct config *c)
{
	assert_int_equal(c->n_all_queues, 1);
	return c->all_queues[0]->name;
}

static void test_reload(void **state)
{
	char dir[] = "/tmp/muster-watch-XXXXXX", path[256], want[512];
	struct config_errors errs;
	struct config_watch *w;
	struct config *cur, *next;
	struct seen s = {0};
	uv_loop_t loop;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/muster.yaml", dir);
	assert_int_equal(uv_loop_init(&loop), 0);
	config_errors_init(&errs);

	/* A broken file at start is refused, with nothing started. */
	write_file(path, "queues: [{name: a, weight: 0}]\n");
	assert_int_equal(config_watch_start(&loop, path, POLL_MS, on_reload, &s, &cur, &errs, &w),
	                 -EINVAL);
	assert_null(w);
	assert_null(cur);
	assert_int_equal(errs.n, 1);
	config_errors_clear(&errs);

	write_file(path, "queues: [{name: a}]\n");
	assert_int_equal(config_watch_start(&loop, path, POLL_MS, on_reload, &s, &cur, &errs, &w),
	                 0);
	assert_string_equal(only_queue(cur), "a");

	/* Broken, signalled: rejected with its position; nothing to take. */
	write_file(path, "queues:\n  - name: b\n    weight: lots\n");
	assert_int_equal(uv_kill(getpid(), SIGHUP), 0);
	wait_for(&loop, &s.rejected, 0);
	snprintf(want, sizeof(want),
	         "%s:3:13: expected an integer from 1 to 1000000 for 'weight', got 'lots'", path);
	assert_string_equal(s.first_error, want);
	assert_int_equal(config_watch_take(w, &next), 0);
	assert_null(next);
	assert_string_equal(only_queue(cur), "a");

	/* Good, unsignalled: the poll sees it; the next cycle takes it. */
	write_file(path, "queues:\n  - name: c\n    namespaces: [team-c]\n");
	wait_for(&loop, &s.ready, 0);
	assert_int_equal(config_watch_take(w, &next), 1);
	assert_string_equal(only_queue(next), "c");
	config_free(&cur);
	cur = next;
	assert_int_equal(config_watch_take(w, &next), 0); /* taken once */

	/* The same bytes again are no reload; SIGHUP forces one. */
	write_file(path, "queues:\n  - name: c\n    namespaces: [team-c]\n");
	assert_int_equal(config_watch_reload(w, 0), CONFIG_RELOAD_UNCHANGED);
	assert_int_equal(config_watch_reload(w, 1), CONFIG_RELOAD_READY);
	assert_int_equal(config_watch_take(w, &next), 1);
	config_free(&next);

	/* Two good versions before a cycle: only the newest is handed over. */
	write_file(path, "queues: [{name: d}]\n");
	assert_int_equal(config_watch_reload(w, 0), CONFIG_RELOAD_READY);
	write_file(path, "queues: [{name: e}]\n");
	assert_int_equal(config_watch_reload(w, 0), CONFIG_RELOAD_READY);
	assert_int_equal(config_watch_take(w, &next), 1);
	assert_string_equal(only_queue(next), "e");
	config_free(&cur);
	cur = next;

	/* The file vanishes: rejected, and what is in force stays. */
	assert_int_equal(unlink(path), 0);
	wait_for(&loop, &s.rejected, 1);
	snprintf(want, sizeof(want), "%s: cannot read: No such file or directory", path);
	assert_string_equal(s.first_error, want);
	assert_int_equal(config_watch_take(w, &next), 0);
	assert_string_equal(only_queue(cur), "e");

	config_watch_stop(&w);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
	config_free(&cur);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
