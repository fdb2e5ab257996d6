/*
 * config_watch: a reload with a broken file keeps the configuration in
 * force and says why, with file:line:column; a good file becomes the next
 * configuration, whether the change is seen by the stat poll or signalled
 * with SIGHUP; unchanged bytes are not a reload; a vanished file is
 * rejected like a broken one. The parse runs in the thread pool: the
 * loop turns meanwhile, changes during it are coalesced into one more
 * parse, and stopping during it is safe. A real libuv loop, a real file,
 * a real signal.
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
	int ticks;          /* of a timer that runs while a parse does */
	int ticks_at_ready; /* its count when the last READY came */
};

static void on_reload(void *ud, enum config_reload what, const struct config_errors *errs)
{
	struct seen *s = ud;

	if (what == CONFIG_RELOAD_READY) {
		s->ready++;
		s->ticks_at_ready = s->ticks;
	}
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

/* Runs the loop until no reload is in the pool, for at most 5 s. */
static void settle(uv_loop_t *loop, struct config_watch *w)
{
	uv_timer_t timer;
	int expired = 0;

	uv_timer_init(loop, &timer);
	timer.data = &expired;
	uv_timer_start(&timer, on_deadline, 5000, 0);
	while (config_watch_busy(w) && !expired)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&timer, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	if (expired)
		fail_msg("the reload did not come back within 5 s");
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
	assert_int_equal(config_watch_reload(w, 0), 0);
	settle(&loop, w);
	assert_int_equal(s.ready, 1);
	assert_int_equal(s.rejected, 1);
	assert_int_equal(config_watch_take(w, &next), 0);
	assert_int_equal(config_watch_reload(w, 1), 0);
	wait_for(&loop, &s.ready, 1);
	assert_int_equal(config_watch_take(w, &next), 1);
	config_free(&next);

	/* Two good versions before a cycle: only the newest is handed over. */
	write_file(path, "queues: [{name: d}]\n");
	assert_int_equal(config_watch_reload(w, 0), 0);
	wait_for(&loop, &s.ready, 2);
	write_file(path, "queues: [{name: e}]\n");
	assert_int_equal(config_watch_reload(w, 0), 0);
	wait_for(&loop, &s.ready, 3);
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

/* ---- the parse in the pool ---------------------------------------------- */

/* A valid file just under CONFIG_MAX_FILE: some 13,000 queues, which
 * take tens of milliseconds to parse (more under sanitizers). */
static void write_big(const char *path)
{
	size_t cap = CONFIG_MAX_FILE - 100, used;
	char *text = malloc(CONFIG_MAX_FILE);

	assert_non_null(text);
	used = (size_t)sprintf(text, "resources: [cpu]\nqueues:\n");
	for (int n = 0; used < cap - 100; n++)
		used += (size_t)sprintf(text + used,
		                        "  - name: q%d\n    namespaces: [ns%d]\n"
		                        "    quota: {cpu: {nominal: 1}}\n",
		                        n, n);
	write_file(path, text);
	free(text);
}

static void on_tick(uv_timer_t *t)
{
	((struct seen *)t->data)->ticks++;
}

struct fixture {
	char dir[64], path[256];
	uv_loop_t loop;
	struct config_watch *w;
	struct config *cur;
	struct seen s;
};

/* A watch on a small valid file in a new directory. */
static void start(struct fixture *f)
{
	struct config_errors errs;

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/muster-watch-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/muster.yaml", f->dir);
	assert_int_equal(uv_loop_init(&f->loop), 0);
	config_errors_init(&errs);
	write_file(f->path, "queues: [{name: a}]\n");
	assert_int_equal(
	    config_watch_start(&f->loop, f->path, POLL_MS, on_reload, &f->s, &f->cur, &errs, &f->w),
	    0);
}

static void finish(struct fixture *f)
{
	config_watch_stop(&f->w);
	assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	config_free(&f->cur);
	unlink(f->path);
	rmdir(f->dir);
}

/* The reload returns at once and the loop turns (a 1 ms timer fires)
 * while a big valid file parses in the pool. */
static void test_loop_turns_during_parse(void **state)
{
	struct fixture f;
	struct config *next;
	uv_timer_t tick;

	(void)state;
	start(&f);
	write_big(f.path);
	uv_timer_init(&f.loop, &tick);
	tick.data = &f.s;
	uv_timer_start(&tick, on_tick, 1, 1);
	assert_int_equal(config_watch_reload(f.w, 1), 0);
	assert_true(config_watch_busy(f.w));
	assert_int_equal(f.s.ready, 0); /* not parsed on this thread */
	wait_for(&f.loop, &f.s.ready, 0);
	print_message("the timer fired %d times while the file parsed\n", f.s.ticks_at_ready);
	assert_true(f.s.ticks_at_ready >= 1);
	assert_int_equal(config_watch_take(f.w, &next), 1);
	assert_true(next->n_all_queues > 10000);
	config_free(&next);
	uv_close((uv_handle_t *)&tick, NULL);
	finish(&f);
}

/* Requests during a parse make one more parse after it, not one each,
 * and the last one reads the file as it is by then. */
static void test_change_during_parse(void **state)
{
	struct fixture f;
	struct config *next;

	(void)state;
	start(&f);
	write_big(f.path);
	assert_int_equal(config_watch_reload(f.w, 1), 0);
	write_file(f.path, "queues: [{name: z}]\n");
	for (int i = 0; i < 3; i++)
		assert_int_equal(config_watch_reload(f.w, 1), 0);
	settle(&f.loop, f.w);
	/* Two parses, both forced so both report READY: the first read
	 * the big file or already z, the second z. */
	assert_int_equal(f.s.ready, 2);
	assert_int_equal(f.s.rejected, 0);
	assert_int_equal(config_watch_take(f.w, &next), 1);
	assert_string_equal(only_queue(next), "z");
	config_free(&next);
	finish(&f);
}

/* Stopping while a parse is in the pool (and one more is asked for):
 * the loop waits for it, the result is dropped, nothing is called back,
 * nothing leaks (the sanitizer build checks). */
static void test_stop_during_parse(void **state)
{
	struct fixture f;

	(void)state;
	start(&f);
	write_big(f.path);
	assert_int_equal(config_watch_reload(f.w, 1), 0);
	assert_int_equal(config_watch_reload(f.w, 1), 0);
	assert_true(config_watch_busy(f.w));
	finish(&f);
	assert_int_equal(f.s.ready, 0);
	assert_int_equal(f.s.rejected, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reload),
	    cmocka_unit_test(test_loop_turns_during_parse),
	    cmocka_unit_test(test_change_during_parse),
	    cmocka_unit_test(test_stop_during_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
