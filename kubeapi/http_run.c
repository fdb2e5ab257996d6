/*
 * The HTTP engine's scheduler (see http.c for the design): the read,
 * write and background queues, the max_inflight slots and the write token bucket,
 * starting and finishing attempts, retries with backoff, and handing
 * finished calls to their done_cb, all from kubeapi__http_process().
 *
 * Cost. A process() run is O(calls it finishes, promotes, starts and
 * delivers), plus O(running calls) when one was cancelled since the last
 * run. A retry goes into the retry list, sorted by due time, by a walk
 * from its tail: O(1) when, as usual, it is due last. Arming the wake
 * timer is O(1). Nothing here allocates but what an attempt needs
 * (http_easy.c); a call's body buffer is kept across its attempts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <curl/curl.h>
#include <uv.h>

#include "kubeapi/http.h"
#include "kubeapi/http_internal.h"

static void on_wake(uv_timer_t *t)
{
	kubeapi__http_process(t->data);
}

/* splitmix64: the jitter needs spread, not secrecy. */
static uint64_t rng_next(struct kubeapi_http *h)
{
	uint64_t z = (h->rng += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* ---- Queues ----------------------------------------------------------- */

void kubeapi__http_enqueue(struct kubeapi_http *h, struct kubeapi_http_call *c, int front)
{
	struct kubeapi__link *q = (c->flags & KUBEAPI_REQ_URGENT)              ? &h->urgent
	                          : (c->flags & KUBEAPI_REQ_BACKGROUND)        ? &h->background
	                          : kubeapi_http_method_info(c->method)->write ? &h->writes
	                                                                       : &h->reads;

	c->state = KUBEAPI__CALL_QUEUED;
	kubeapi__list_insert_after(front ? q : q->prev, &c->link);
	h->stats.queued++;
	h->stats.background_queued += (c->flags & KUBEAPI_REQ_BACKGROUND) != 0;
}

void kubeapi__http_dequeue(struct kubeapi_http *h, struct kubeapi_http_call *c)
{
	kubeapi__list_remove(&c->link);
	if (c->state == KUBEAPI__CALL_QUEUED) {
		h->stats.queued--;
		h->stats.background_queued -= (c->flags & KUBEAPI_REQ_BACKGROUND) != 0;
	} else if (c->state == KUBEAPI__CALL_RETRYING)
		h->stats.retrying--;
}

/* Whether a background call may start now but for its write token:
 * one waits, no other call does, and fewer than max_background run. */
static int background_due(const struct kubeapi_http *h)
{
	return !kubeapi__list_empty(&h->background) && kubeapi__list_empty(&h->reads) &&
	       kubeapi__list_empty(&h->writes) &&
	       h->stats.background_running < h->opt.max_background;
}

/* The next call to start, or NULL: an urgent call, token or not; else the
 * older queue head, except that a write without a token gives way to a
 * read; a background call only when background_due(). Takes the write's
 * token. */
static struct kubeapi_http_call *next_call(struct kubeapi_http *h, uint64_t now)
{
	struct kubeapi_http_call *r =
	    kubeapi__list_empty(&h->reads) ? NULL : kubeapi__http_call_of(h->reads.next);
	struct kubeapi_http_call *w =
	    kubeapi__list_empty(&h->writes) ? NULL : kubeapi__http_call_of(h->writes.next);

	if (!kubeapi__list_empty(&h->urgent))
		return kubeapi__http_call_of(h->urgent.next);

	if (w && (!r || w->seq < r->seq)) {
		if (kubeapi_http_bucket_take(&h->bucket, now) == 0)
			return w;
		return r;
	}
	if (r || !background_due(h))
		return r;
	if (kubeapi_http_method_info(kubeapi__http_call_of(h->background.next)->method)->write &&
	    kubeapi_http_bucket_take(&h->bucket, now) < 0)
		return NULL;
	return kubeapi__http_call_of(h->background.next);
}

void kubeapi__http_kick(struct kubeapi_http *h)
{
	if (h->torn_down)
		return;
	h->kicked = 1;
	uv_timer_start(&h->wake, on_wake, 0, 0);
}

void kubeapi__http_complete(struct kubeapi_http_call *c, int err)
{
	c->err = err;
	c->state = KUBEAPI__CALL_DONE;
	kubeapi__list_insert_after(c->h->done.prev, &c->link);
}

/* ---- Starting an attempt --------------------------------------------- */

static void attempt_reset(struct kubeapi_http_call *c)
{
	c->mode = KUBEAPI__BODY_UNDECIDED;
	buf_reset(&c->resp);
	c->status = 0;
	c->http_version = 0;
	c->abort_err = 0;
	c->has_retry_after = 0;
}

/* Hand c to curl. Returns 0, or a negative errno and c is not running. */
static int start_attempt(struct kubeapi_http *h, struct kubeapi_http_call *c)
{
	CURL *e = kubeapi__http_easy_get(h);
	int rc;

	if (!e)
		return -ENOMEM;
	attempt_reset(c);
	rc = kubeapi__http_setup_easy(c, e);
	if (rc == 0 && curl_multi_add_handle(h->multi, e) != CURLM_OK) {
		curl_slist_free_all(c->headers);
		c->headers = NULL;
		rc = -ENOMEM;
	}
	if (rc < 0) {
		kubeapi__http_easy_put(h, e);
		return rc;
	}
	c->easy = e;
	c->state = KUBEAPI__CALL_RUNNING;
	kubeapi__list_insert_after(h->running.prev, &c->link);
	c->attempts++;
	h->stats.attempts++;
	h->stats.background_running += (c->flags & KUBEAPI_REQ_BACKGROUND) != 0;
	if (h->stats.background_running > h->stats.max_background_hwm)
		h->stats.max_background_hwm = h->stats.background_running;
	if (++h->stats.inflight > h->stats.max_inflight_hwm)
		h->stats.max_inflight_hwm = h->stats.inflight;
	return 0;
}

/* ---- Finishing an attempt --------------------------------------------- */

static unsigned version_number(long v)
{
	switch (v) {
	case CURL_HTTP_VERSION_1_0:
		return 10;
	case CURL_HTTP_VERSION_1_1:
		return 11;
	case CURL_HTTP_VERSION_2_0:
		return 20;
	case CURL_HTTP_VERSION_3:
		return 30;
	default:
		return 0;
	}
}

/* Connections a server without HTTP/2 may get, when the HTTP/2 shape
 * capped them lower: each holds one request at a time, so the cap of
 * eight that spreads 256 streams is eight requests at once over HTTP/1.1
 * (a proxy or load balancer in front of the API server that does not
 * speak HTTP/2). 64 connections cost 10 to 30 MiB (http.h, Costs); 256
 * HTTP/1.1 connections bound no faster than HTTP/2 on eight (bench/README,
 * 2 Dec). */
#define HTTP1_CONNS 64L

/* The server answered in HTTP/1.x: lift a cap set for HTTP/2. Once. */
static void lift_conn_cap(struct kubeapi_http *h, unsigned version)
{
	long want = h->opt.max_inflight < HTTP1_CONNS ? (long)h->opt.max_inflight : HTTP1_CONNS;

	if (!h->conn_cap || version == 0 || version >= 20 || h->conn_cap >= want)
		return;
	if (curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, want) == CURLM_OK)
		h->conn_cap = want;
}

/* Take c's easy handle back from curl; c leaves the running list. */
static void detach(struct kubeapi_http *h, struct kubeapi_http_call *c)
{
	long status = 0, version = 0;
	curl_off_t us = 0;

	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(c->easy, CURLINFO_HTTP_VERSION, &version);
	curl_easy_getinfo(c->easy, CURLINFO_TOTAL_TIME_T, &us);
	c->attempt_us = us > 0 ? (uint64_t)us : 0;
	c->status = status;
	c->http_version = version_number(version);
	lift_conn_cap(h, c->http_version);
	curl_multi_remove_handle(h->multi, c->easy);
	kubeapi__http_easy_put(h, c->easy);
	c->easy = NULL;
	curl_slist_free_all(c->headers);
	c->headers = NULL;
	kubeapi__list_remove(&c->link);
	h->stats.inflight--;
	h->stats.background_running -= (c->flags & KUBEAPI_REQ_BACKGROUND) != 0;
}

static void schedule_retry(struct kubeapi_http *h, struct kubeapi_http_call *c)
{
	const struct kubeapi_http_options *o = &h->opt;
	uint64_t delay;
	struct kubeapi__link *pos;

	if (c->has_retry_after)
		delay =
		    c->retry_after_ms < o->backoff_cap_ms ? c->retry_after_ms : o->backoff_cap_ms;
	else
		delay = kubeapi_http_backoff_ms(c->attempts, o->backoff_base_ms, o->backoff_cap_ms,
		                                rng_next(h));
	c->retry_at_ms = kubeapi__http_now_ms() + delay;
	c->state = KUBEAPI__CALL_RETRYING;
	/* Sorted by due time; a new delay is usually the latest, so walk back. */
	for (pos = h->retrying.prev; pos != &h->retrying; pos = pos->prev)
		if (kubeapi__http_call_of(pos)->retry_at_ms <= c->retry_at_ms)
			break;
	kubeapi__list_insert_after(pos, &c->link);
	h->stats.retrying++;
	h->stats.retries++;
}

/* The attempt is over: retry it, or complete the call. */
static void attempt_done(struct kubeapi_http *h, struct kubeapi_http_call *c, CURLcode result)
{
	int again = 0, err;

	detach(h, c);
	/* A stream that started was counted then (http_easy.c). */
	if (h->opt.observe && !c->cancelled && c->mode != KUBEAPI__BODY_STREAM)
		h->opt.observe(h->opt.observe_data, c->method, (c->flags & KUBEAPI_REQ_STREAM) != 0,
		               c->status, c->attempt_us);
	if (c->cancelled)
		err = -ECANCELED;
	else if (c->abort_err)
		err = c->abort_err;
	else
		err = kubeapi_http_curl_errno((int)result, &again);
	if (!c->cancelled && !h->closing && c->attempts <= h->opt.max_retries &&
	    c->mode != KUBEAPI__BODY_STREAM &&
	    kubeapi_http_should_retry(c->flags, c->status, err, again))
		schedule_retry(h, c);
	else
		kubeapi__http_complete(c, err);
}

static void reap_cancelled(struct kubeapi_http *h)
{
	struct kubeapi__link *l, *next;

	for (l = h->running.next; l != &h->running; l = next) {
		next = l->next;
		if (kubeapi__http_call_of(l)->cancelled)
			attempt_done(h, kubeapi__http_call_of(l), CURLE_OK);
	}
	h->ncancel = 0;
}

static void read_finished(struct kubeapi_http *h)
{
	CURLMsg *msg;
	char *c;
	int left;

	while ((msg = curl_multi_info_read(h->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &c);
		attempt_done(h, (struct kubeapi_http_call *)(void *)c, msg->data.result);
	}
}

/* ---- process(): the one place where work happens ---------------------- */

static void promote_retries(struct kubeapi_http *h, uint64_t now)
{
	struct kubeapi_http_call *c;

	while (!kubeapi__list_empty(&h->retrying) &&
	       kubeapi__http_call_of(h->retrying.next)->retry_at_ms <= now) {
		c = kubeapi__http_call_of(h->retrying.next);
		kubeapi__http_dequeue(h, c);
		kubeapi__http_enqueue(h, c, 1); /* it has waited its turn already */
	}
}

static void dispatch(struct kubeapi_http *h, uint64_t now)
{
	struct kubeapi_http_call *c;
	int rc;

	while (h->stats.inflight < h->opt.max_inflight && (c = next_call(h, now))) {
		kubeapi__http_dequeue(h, c);
		rc = start_attempt(h, c);
		if (rc < 0)
			kubeapi__http_complete(c, rc);
	}
}

static struct kubeapi_response response_of(const struct kubeapi_http_call *c)
{
	struct kubeapi_response r = {
	    .status = c->status,
	    .err = c->err,
	    .body = c->mode == KUBEAPI__BODY_STREAM ? NULL
	            : c->resp.p && c->resp.len      ? c->resp.p
	                                            : "",
	    .len = c->mode == KUBEAPI__BODY_STREAM ? 0 : c->resp.len,
	    .attempts = c->attempts,
	    .http_version = c->http_version,
	};
	return r;
}

static void call_free(struct kubeapi_http *h, struct kubeapi_http_call *c)
{
	buf_free(&c->resp);
	free(c);
	h->ncalls--;
}

/* done_cbs may submit, cancel or close; none of those re-enter here. */
static void deliver_done(struct kubeapi_http *h)
{
	struct kubeapi_http_call *c;
	struct kubeapi_response r;

	while (!kubeapi__list_empty(&h->done)) {
		c = kubeapi__http_call_of(h->done.next);
		kubeapi__list_remove(&c->link);
		r = response_of(c);
		c->done_cb(c->data, &r);
		h->stats.completed++;
		call_free(h, c);
	}
}

/* Sleep until the next retry is due or, if a slot is free, the next write
 * token; a kick during process() already set the timer to 0. */
static void arm_wake(struct kubeapi_http *h)
{
	uint64_t now = kubeapi__http_now_ms(), wait = UINT64_MAX, w;

	if (!kubeapi__list_empty(&h->retrying)) {
		w = kubeapi__http_call_of(h->retrying.next)->retry_at_ms;
		wait = w > now ? w - now : 0;
	}
	if ((!kubeapi__list_empty(&h->writes) || background_due(h)) &&
	    h->stats.inflight < h->opt.max_inflight) {
		w = kubeapi_http_bucket_wait_ms(&h->bucket, now);
		wait = w < wait ? w : wait;
	}
	if (wait == UINT64_MAX)
		uv_timer_stop(&h->wake);
	else
		uv_timer_start(&h->wake, on_wake, wait, 0);
}

void kubeapi__http_process(struct kubeapi_http *h)
{
	uint64_t now;

	if (h->torn_down)
		return;
	h->kicked = 0;
	if (h->ncancel)
		reap_cancelled(h);
	read_finished(h);
	now = kubeapi__http_now_ms();
	promote_retries(h, now);
	dispatch(h, now);
	deliver_done(h);
	if (h->closing && h->ncalls == 0)
		kubeapi__http_teardown(h);
	else if (!h->kicked)
		arm_wake(h);
}
