/*
 * Reloading the configuration file: a stat poll of the path and SIGHUP.
 *
 * uv_fs_poll rather than inotify (uv_fs_event): a Kubernetes ConfigMap
 * volume replaces the file by swapping a symlink two levels up, which a
 * watch on the file itself misses; a poll stats the path as the process
 * sees it. The poll costs one stat per poll_ms.
 *
 * A change of bytes is recognised by a 64-bit FNV-1a hash of the file, so
 * a touch or a rewrite with the same text is not reported as a reload.
 *
 * A reload reads and parses in libuv's thread pool (uv_queue_work), so
 * the loop keeps turning: a full 1 MiB file takes about 0.1 s, and the
 * loop is the scheduler. At most one parse is in the pool at a time;
 * changes seen while it runs (by the poll or SIGHUP) are coalesced into
 * one more parse after it, which reads the file as it is by then. The
 * job carries its own inputs and outputs: the worker reads only them and
 * the path, which nothing changes while it runs, and the loop reads the
 * outputs only once it is back, so no lock is needed. The first load,
 * in config_watch_start(), stays on the caller's thread: nothing can be
 * scheduled without it.
 */
#include "config/config.h"
#include "config/config_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

/* One reload in the pool: inputs copied in when it is queued, outputs
 * read by the loop only after it is back. */
struct parse_job {
	uv_work_t req;
	int force;
	uint64_t hash;      /* in: of the bytes in force; out: of the bytes read */
	int rc;             /* 1 unchanged, 0 ready, else rejected */
	struct config *cfg; /* valid, when rc is 0 */
	struct config_errors errs;
};

struct config_watch {
	uv_fs_poll_t poll;
	uv_signal_t hup;
	int open_handles;
	char *path;
	config_watch_cb cb;
	void *ud;
	uint64_t hash;        /* of the bytes in force (or pending) */
	struct config *ready; /* valid, not yet taken */
	struct parse_job job;
	bool busy;  /* job is queued or running */
	bool again; /* a change came while it ran: one more parse after */
	int again_force;
	bool stopping; /* config_watch_stop() was called: free when all is done */
};

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Reads path once: unchanged bytes (and no force) are UNCHANGED; else
 * they are parsed. A read error is worded by config_load(), which reads
 * again only on that rare path. */
static int load(const char *path, int force, uint64_t *hash, struct config **out,
                struct config_errors *errs)
{
	char *text = NULL;
	size_t len = 0;
	uint64_t h;
	int rc;

	*out = NULL;
	if (config__read_file(path, &text, &len) < 0)
		return config_load(path, out, errs);
	h = fnv1a(text, len);
	if (!force && h == *hash) {
		free(text);
		return 1;
	}
	rc = config_parse(path, text, len, out, errs);
	free(text);
	if (rc == 0)
		*hash = h;
	return rc;
}

/* In the pool: read and parse; only the job and the (unchanging) path. */
static void parse_work(uv_work_t *req)
{
	struct config_watch *w = req->data;
	struct parse_job *j = &w->job;

	j->rc = load(w->path, j->force, &j->hash, &j->cfg, &j->errs);
}

static void free_watch(struct config_watch *w)
{
	config_free(&w->ready);
	free(w->path);
	free(w);
}

static int queue_parse(struct config_watch *w, int force);

/* On the loop: the result takes effect, then a change that came during
 * the parse gets its one parse. After config_watch_stop() the result is
 * dropped and the last of the handles and the job frees the watch. */
static void parse_done(uv_work_t *req, int status)
{
	struct config_watch *w = req->data;
	struct parse_job *j = &w->job;
	enum config_reload what = CONFIG_RELOAD_REJECTED;

	w->busy = false;
	if (w->stopping || status < 0) {
		config_free(&j->cfg);
		config_errors_clear(&j->errs);
		if (w->stopping && w->open_handles == 0)
			free_watch(w);
		return;
	}
	if (j->rc == 0) {
		config_free(&w->ready);
		w->ready = j->cfg;
		j->cfg = NULL;
		w->hash = j->hash;
		what = CONFIG_RELOAD_READY;
	}
	/* REJECTED remembers nothing: the same broken bytes are reported
	 * again at the next change of the file's stat, which is rare. */
	if (j->rc != 1 && w->cb)
		w->cb(w->ud, what, &j->errs);
	config_errors_clear(&j->errs);
	if (w->again) {
		w->again = false;
		queue_parse(w, w->again_force);
	}
}

static int queue_parse(struct config_watch *w, int force)
{
	int rc;

	w->job = (struct parse_job){.req.data = w, .force = force, .hash = w->hash};
	config_errors_init(&w->job.errs);
	rc = uv_queue_work(w->poll.loop, &w->job.req, parse_work, parse_done);
	w->busy = rc == 0;
	return rc;
}

int config_watch_reload(struct config_watch *w, int force)
{
	if (w->busy) {
		w->again_force = w->again ? w->again_force || force : force;
		w->again = true;
		return 0;
	}
	return queue_parse(w, force);
}

bool config_watch_busy(const struct config_watch *w)
{
	return w->busy;
}

int config_watch_take(struct config_watch *w, struct config **out)
{
	*out = w->ready;
	w->ready = NULL;
	return *out != NULL;
}

static void on_poll(uv_fs_poll_t *h, int status, const uv_stat_t *prev, const uv_stat_t *curr)
{
	(void)prev;
	(void)curr;
	/* status < 0: the file vanished or cannot be stat'ed; a reload
	 * reports that (and keeps the old configuration). */
	(void)status;
	config_watch_reload(h->data, 0);
}

static void on_hup(uv_signal_t *h, int signum)
{
	(void)signum;
	config_watch_reload(h->data, 1);
}

int config_watch_start(struct uv_loop_s *loop, const char *path, unsigned poll_ms,
                       config_watch_cb cb, void *ud, struct config **first,
                       struct config_errors *errs, struct config_watch **out)
{
	struct config_watch *w;
	int rc;

	*out = NULL;
	*first = NULL;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		return -ENOMEM;
	}
	w->cb = cb;
	w->ud = ud;
	rc = load(path, 1, &w->hash, first, errs);
	if (rc < 0)
		goto fail;
	/* The signal first: its init can fail (the loop's signal pipe), the
	 * poll's cannot, so a failure leaves no handle to close. */
	if ((rc = uv_signal_init(loop, &w->hup)) < 0 || (rc = uv_fs_poll_init(loop, &w->poll)) < 0)
		goto fail;
	w->poll.data = w->hup.data = w;
	w->open_handles = 2;
	if ((rc = uv_fs_poll_start(&w->poll, on_poll, path, poll_ms ? poll_ms : 1000)) < 0 ||
	    (rc = uv_signal_start(&w->hup, on_hup, SIGHUP)) < 0) {
		config_free(first);
		config_watch_stop(&w);
		return rc;
	}
	*out = w;
	return 0;
fail:
	config_free(first);
	free(w->path);
	free(w);
	return rc;
}

/* The last of the two handles frees the watch, unless a parse is still
 * in the pool: then parse_done() does, once it is back. */
static void on_close(uv_handle_t *h)
{
	struct config_watch *w = h->data;

	if (--w->open_handles > 0 || w->busy)
		return;
	free_watch(w);
}

void config_watch_stop(struct config_watch **wp)
{
	struct config_watch *w = wp ? *wp : NULL;

	if (!w)
		return;
	w->stopping = true;
	w->again = false;
	uv_close((uv_handle_t *)&w->poll, on_close);
	uv_close((uv_handle_t *)&w->hup, on_close);
	*wp = NULL;
}
