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
 */
#include "config/config.h"
#include "config/config_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

struct config_watch {
	uv_fs_poll_t poll;
	uv_signal_t hup;
	int open_handles;
	char *path;
	config_watch_cb cb;
	void *ud;
	uint64_t hash;        /* of the bytes in force (or pending) */
	struct config *ready; /* valid, not yet taken */
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

enum config_reload config_watch_reload(struct config_watch *w, int force)
{
	struct config_errors errs;
	struct config *c = NULL;
	enum config_reload what;
	int rc;

	config_errors_init(&errs);
	rc = load(w->path, force, &w->hash, &c, &errs);
	if (rc == 1)
		return CONFIG_RELOAD_UNCHANGED;
	if (rc == 0) {
		config_free(&w->ready);
		w->ready = c;
		what = CONFIG_RELOAD_READY;
	} else {
		/* Remember nothing: the same broken bytes are reported again
		 * at the next change of the file's stat, which is rare. */
		what = CONFIG_RELOAD_REJECTED;
	}
	if (w->cb)
		w->cb(w->ud, what, &errs);
	config_errors_clear(&errs);
	return what;
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

static void on_close(uv_handle_t *h)
{
	struct config_watch *w = h->data;

	if (--w->open_handles > 0)
		return;
	config_free(&w->ready);
	free(w->path);
	free(w);
}

void config_watch_stop(struct config_watch **wp)
{
	struct config_watch *w = wp ? *wp : NULL;

	if (!w)
		return;
	uv_close((uv_handle_t *)&w->poll, on_close);
	uv_close((uv_handle_t *)&w->hup, on_close);
	*wp = NULL;
}
