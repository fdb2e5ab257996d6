/*
 * kubeapi/http: the pure pieces of the engine's policy, with every clock
 * and random value passed in: the retry schedule and its jitter bounds,
 * Retry-After in both forms, the write token bucket, the method table,
 * and which results are retried. No sockets, no loop; milliseconds to run.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "kubeapi/http.h"

#define N(t) (sizeof(t) / sizeof((t)[0]))

/* ---- Backoff ---------------------------------------------------------- */

static void test_backoff_ceiling_doubles_then_caps(void **state)
{
	static const uint64_t want[] = {200,  400,   800,   1600,  3200,
	                                6400, 12800, 25600, 30000, 30000};

	(void)state;
	for (unsigned i = 0; i < N(want); i++)
		assert_int_equal(kubeapi_http_backoff_ceiling_ms(i + 1, 200, 30000), want[i]);
	/* Retry 0 is read as the first; huge retry counts must not overflow. */
	assert_int_equal(kubeapi_http_backoff_ceiling_ms(0, 200, 30000), 200);
	assert_int_equal(kubeapi_http_backoff_ceiling_ms(64, 200, 30000), 30000);
	assert_int_equal(kubeapi_http_backoff_ceiling_ms(65, 200, 30000), 30000);
	assert_int_equal(kubeapi_http_backoff_ceiling_ms(UINT32_MAX, 200, 30000), 30000);
	assert_int_equal(kubeapi_http_backoff_ceiling_ms(40, UINT64_MAX / 2, UINT64_MAX),
	                 UINT64_MAX);
}

/* Full jitter: every delay lies in [0, ceiling], and both ends are reached. */
static void test_backoff_jitter_bounds(void **state)
{
	uint64_t x = 0x243f6a8885a308d3u, lo = UINT64_MAX, hi = 0;

	(void)state;
	for (unsigned retry = 1; retry <= 12; retry++) {
		uint64_t ceiling = kubeapi_http_backoff_ceiling_ms(retry, 200, 30000);

		assert_int_equal(kubeapi_http_backoff_ms(retry, 200, 30000, 0), 0);
		assert_int_equal(kubeapi_http_backoff_ms(retry, 200, 30000, ceiling), ceiling);
		assert_int_equal(kubeapi_http_backoff_ms(retry, 200, 30000, ceiling + 1), 0);
		assert_true(kubeapi_http_backoff_ms(retry, 200, 30000, UINT64_MAX) <= ceiling);
		for (int i = 0; i < 2000; i++) {
			uint64_t d;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
			d = kubeapi_http_backoff_ms(retry, 200, 30000, x);
			assert_true(d <= ceiling);
			if (retry == 1) {
				lo = d < lo ? d : lo;
				hi = d > hi ? d : hi;
			}
		}
	}
	/* 2000 draws over [0, 200] spread out: not a constant. */
	assert_true(lo < 20);
	assert_true(hi > 180);
}

/* ---- Retry-After ------------------------------------------------------ */

/* 1994-11-06 08:49:37 UTC, the RFC's example date. */
#define RFC_DATE ((time_t)784111777)

struct retry_after_row {
	const char *in;
	time_t now;
	int rc;
	uint64_t ms;
};

static void test_retry_after(void **state)
{
	static const struct retry_after_row rows[] = {
	    {"1", 0, 0, 1000},
	    {"0", 0, 0, 0},
	    {"120", 0, 0, 120000},
	    {" 7\t", 0, 0, 7000},
	    {"4294967295", 0, 0, UINT64_C(4294967295000)},
	    {"4294967296", 0, -ERANGE, 0},
	    {"99999999999999999999999", 0, -ERANGE, 0},
	    {"", 0, -EINVAL, 0},
	    {"  ", 0, -EINVAL, 0},
	    {"-1", 0, -EINVAL, 0},
	    {"1.5", 0, -EINVAL, 0},
	    {"12abc", 0, -EINVAL, 0},
	    {"soon", 0, -EINVAL, 0},
	    /* The three HTTP-date forms, ten seconds ahead of now. */
	    {"Sun, 06 Nov 1994 08:49:37 GMT", RFC_DATE - 10, 0, 10000},
	    {"Sunday, 06-Nov-94 08:49:37 GMT", RFC_DATE - 10, 0, 10000},
	    {"Sun Nov  6 08:49:37 1994", RFC_DATE - 10, 0, 10000},
	    /* Now, and in the past: retry at once. */
	    {"Sun, 06 Nov 1994 08:49:37 GMT", RFC_DATE, 0, 0},
	    {"Sun, 06 Nov 1994 08:49:37 GMT", RFC_DATE + 3600, 0, 0},
	    {"Sun, 06 Nov 1994 08:49:37 GMT Sun, 06 Nov 1994 08:49:37 GMT Sun, 06", 0, -EINVAL, 0},
	};

	(void)state;
	for (size_t i = 0; i < N(rows); i++) {
		const struct retry_after_row *r = &rows[i];
		uint64_t ms = 0xdead;
		int rc = kubeapi_http_retry_after_ms(r->in, strlen(r->in), r->now, &ms);

		if (rc != r->rc)
			fail_msg("Retry-After \"%s\": rc %d, want %d", r->in, rc, r->rc);
		if (rc == 0 && ms != r->ms)
			fail_msg("Retry-After \"%s\": %" PRIu64 " ms, want %" PRIu64, r->in, ms,
			         r->ms);
		if (rc != 0 && ms != 0xdead)
			fail_msg("Retry-After \"%s\": wrote %" PRIu64 " on error", r->in, ms);
	}
}

/* The value need not be NUL-terminated: a header line is not. */
static void test_retry_after_reads_only_len(void **state)
{
	uint64_t ms = 0;

	(void)state;
	assert_int_equal(kubeapi_http_retry_after_ms("35\r\n", 2, 0, &ms), 0);
	assert_int_equal(ms, 35000);
	assert_int_equal(
	    kubeapi_http_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMTxyz", 29, RFC_DATE - 1, &ms),
	    0);
	assert_int_equal(ms, 1000);
}

/* ---- Token bucket ----------------------------------------------------- */

static void test_bucket_burst_then_rate(void **state)
{
	struct kubeapi_http_bucket b;

	(void)state;
	kubeapi_http_bucket_init(&b, 50, 5, 1000);
	for (int i = 0; i < 5; i++)
		assert_int_equal(kubeapi_http_bucket_take(&b, 1000), 0);
	assert_int_equal(kubeapi_http_bucket_take(&b, 1000), -EAGAIN);
	assert_int_equal(kubeapi_http_bucket_wait_ms(&b, 1000), 20);
	assert_int_equal(kubeapi_http_bucket_wait_ms(&b, 1019), 1);
	assert_int_equal(kubeapi_http_bucket_take(&b, 1019), -EAGAIN);
	assert_int_equal(kubeapi_http_bucket_take(&b, 1020), 0);
	assert_int_equal(kubeapi_http_bucket_wait_ms(&b, 1020), 20);
}

/* 60 takes at 50/s with a burst of 5 cannot finish before 55 * 20 ms. */
static void test_bucket_sustained_rate(void **state)
{
	struct kubeapi_http_bucket b;
	uint64_t now = 0;

	(void)state;
	kubeapi_http_bucket_init(&b, 50, 5, now);
	for (int i = 0; i < 60; i++) {
		now += kubeapi_http_bucket_wait_ms(&b, now);
		assert_int_equal(kubeapi_http_bucket_take(&b, now), 0);
	}
	assert_int_equal(now, 1100);
}

/* A wait that is rounded up always suffices, even at awkward rates. */
static void test_bucket_wait_rounds_up(void **state)
{
	struct kubeapi_http_bucket b;

	(void)state;
	kubeapi_http_bucket_init(&b, 3, 1, 0);
	assert_int_equal(kubeapi_http_bucket_take(&b, 0), 0);
	assert_int_equal(kubeapi_http_bucket_wait_ms(&b, 0), 334);
	assert_int_equal(kubeapi_http_bucket_take(&b, 333), -EAGAIN);
	assert_int_equal(kubeapi_http_bucket_take(&b, 334), 0);

	kubeapi_http_bucket_init(&b, 0.5, 1, 0);
	assert_int_equal(kubeapi_http_bucket_take(&b, 0), 0);
	assert_int_equal(kubeapi_http_bucket_wait_ms(&b, 0), 2000);
	for (uint64_t t = 1; t < 2000; t += 97)
		assert_int_equal(kubeapi_http_bucket_take(&b, t), -EAGAIN);
	assert_int_equal(kubeapi_http_bucket_take(&b, 2000), 0);
}

/* Idle time refills to the burst and no further; a clock that goes back
 * (it cannot, being monotonic, but) neither refills nor drains. */
static void test_bucket_refill_caps_at_burst(void **state)
{
	struct kubeapi_http_bucket b;
	int n = 0;

	(void)state;
	kubeapi_http_bucket_init(&b, 100, 3, 0);
	while (kubeapi_http_bucket_take(&b, 0) == 0)
		n++;
	assert_int_equal(n, 3);
	n = 0;
	while (kubeapi_http_bucket_take(&b, 3600000) == 0)
		n++;
	assert_int_equal(n, 3);
	assert_int_equal(kubeapi_http_bucket_take(&b, 5), -EAGAIN);
	assert_int_equal(kubeapi_http_bucket_wait_ms(&b, 3600000), 10);
}

static void test_bucket_unlimited_and_stopped(void **state)
{
	struct kubeapi_http_bucket b;

	(void)state;
	kubeapi_http_bucket_init(&b, -1, 1, 0);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(kubeapi_http_bucket_take(&b, 0), 0);
	kubeapi_http_bucket_init(&b, 0, 1, 0);
	assert_int_equal(kubeapi_http_bucket_take(&b, 0), 0);
	assert_int_equal(kubeapi_http_bucket_wait_ms(&b, 1000000), UINT64_MAX);
}

/* ---- Methods ---------------------------------------------------------- */

static void test_method_table(void **state)
{
	static const struct {
		enum kubeapi_method m;
		const char *name, *custom, *type;
		unsigned write, body;
	} rows[] = {
	    {KUBEAPI_GET, "GET", NULL, NULL, 0, 0},
	    {KUBEAPI_POST, "POST", NULL, "application/json", 1, 1},
	    {KUBEAPI_PUT, "PUT", "PUT", "application/json", 1, 1},
	    {KUBEAPI_PATCH_MERGE, "PATCH", "PATCH", "application/merge-patch+json", 1, 1},
	    {KUBEAPI_PATCH_STRATEGIC, "PATCH", "PATCH", "application/strategic-merge-patch+json", 1,
	     1},
	    {KUBEAPI_PATCH_JSON, "PATCH", "PATCH", "application/json-patch+json", 1, 1},
	    {KUBEAPI_DELETE, "DELETE", "DELETE", "application/json", 1, 0},
	    {KUBEAPI_PATCH_APPLY, "PATCH", "PATCH", "application/apply-patch+yaml", 1, 1},
	};

	(void)state;
	for (size_t i = 0; i < N(rows); i++) {
		const struct kubeapi_http_method_info *m = kubeapi_http_method_info(rows[i].m);

		assert_non_null(m);
		assert_string_equal(m->name, rows[i].name);
		if (rows[i].custom)
			assert_string_equal(m->custom_request, rows[i].custom);
		else
			assert_null(m->custom_request);
		if (rows[i].type)
			assert_string_equal(m->content_type, rows[i].type);
		else
			assert_null(m->content_type);
		assert_int_equal(m->write, rows[i].write);
		assert_int_equal(m->body_required, rows[i].body);
	}
	assert_null(kubeapi_http_method_info((enum kubeapi_method)(KUBEAPI_PATCH_APPLY + 1)));
	assert_null(kubeapi_http_method_info((enum kubeapi_method) - 1));
}

/* ---- What is retried -------------------------------------------------- */

static void test_curl_errno(void **state)
{
	static const struct {
		CURLcode code;
		int err, retryable;
	} rows[] = {
	    {CURLE_OK, 0, 0},
	    {CURLE_COULDNT_CONNECT, -ECONNREFUSED, 1},
	    {CURLE_OPERATION_TIMEDOUT, -ETIMEDOUT, 1},
	    {CURLE_COULDNT_RESOLVE_HOST, -EHOSTUNREACH, 1},
	    {CURLE_RECV_ERROR, -EIO, 1},
	    {CURLE_SEND_ERROR, -EIO, 1},
	    {CURLE_HTTP2_STREAM, -EIO, 1},
	    {CURLE_GOT_NOTHING, -EIO, 1},
	    {CURLE_PEER_FAILED_VERIFICATION, -EIO, 0},
	    {CURLE_SSL_CACERT_BADFILE, -EIO, 0},
	    {CURLE_URL_MALFORMAT, -EIO, 0},
	    {CURLE_OUT_OF_MEMORY, -ENOMEM, 0},
	    {CURLE_WRITE_ERROR, -EIO, 0},
	};

	(void)state;
	for (size_t i = 0; i < N(rows); i++) {
		int again = -1;

		assert_int_equal(kubeapi_http_curl_errno(rows[i].code, &again), rows[i].err);
		assert_int_equal(again, rows[i].retryable);
	}
	assert_int_equal(kubeapi_http_curl_errno(CURLE_COULDNT_CONNECT, NULL), -ECONNREFUSED);
}

static void test_should_retry(void **state)
{
	static const unsigned R = KUBEAPI_REQ_RETRY, NO429 = KUBEAPI_REQ_NO_RETRY_429;
	static const struct {
		unsigned flags;
		long status;
		int err, err_retryable, want;
	} rows[] = {
	    {R, 429, 0, 0, 1},           {R | NO429, 429, 0, 0, 0},
	    {R, 500, 0, 0, 1},           {R, 502, 0, 0, 1},
	    {R, 503, 0, 0, 1},           {R, 504, 0, 0, 1},
	    {R, 501, 0, 0, 0},           {R, 505, 0, 0, 0},
	    {R | NO429, 503, 0, 0, 1},   {R, 200, 0, 0, 0},
	    {R, 201, 0, 0, 0},           {R, 400, 0, 0, 0},
	    {R, 401, 0, 0, 0},           {R, 403, 0, 0, 0},
	    {R, 404, 0, 0, 0},           {R, 409, 0, 0, 0},
	    {R, 410, 0, 0, 0},           {R, 422, 0, 0, 0},
	    {R, 0, -ECONNREFUSED, 1, 1}, {R, 0, -ETIMEDOUT, 1, 1},
	    {R, 200, -EIO, 1, 1}, /* reset mid-body */
	    {R, 200, -EMSGSIZE, 0, 0},   {R, 0, -ECANCELED, 0, 0},
	    {0, 429, 0, 0, 0},           {0, 503, 0, 0, 0},
	    {0, 0, -ECONNREFUSED, 1, 0}, {NO429, 503, 0, 0, 0},
	};

	(void)state;
	for (size_t i = 0; i < N(rows); i++) {
		int got = kubeapi_http_should_retry(rows[i].flags, rows[i].status, rows[i].err,
		                                    rows[i].err_retryable);

		if (got != rows[i].want)
			fail_msg("row %zu: flags %#x status %ld err %d: %d, want %d", i,
			         rows[i].flags, rows[i].status, rows[i].err, got, rows[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_backoff_ceiling_doubles_then_caps),
	    cmocka_unit_test(test_backoff_jitter_bounds),
	    cmocka_unit_test(test_retry_after),
	    cmocka_unit_test(test_retry_after_reads_only_len),
	    cmocka_unit_test(test_bucket_burst_then_rate),
	    cmocka_unit_test(test_bucket_sustained_rate),
	    cmocka_unit_test(test_bucket_wait_rounds_up),
	    cmocka_unit_test(test_bucket_refill_caps_at_burst),
	    cmocka_unit_test(test_bucket_unlimited_and_stopped),
	    cmocka_unit_test(test_method_table),
	    cmocka_unit_test(test_curl_errno),
	    cmocka_unit_test(test_should_retry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
