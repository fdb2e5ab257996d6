/*
 * The pure pieces of the HTTP engine's policy (see kubeapi/http.h): the
 * retry schedule, Retry-After, the write token bucket, the method table
 * and the meaning of libcurl's result codes. No I/O, no allocation, no
 * clock: every time is passed in, so each piece is tested on its own.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include <curl/curl.h>

#include "kubeapi/http.h"

/* Longest Retry-After value read; an IMF-fixdate is 29 bytes. */
#define RETRY_AFTER_MAX_LEN 64

uint64_t kubeapi_http_backoff_ceiling_ms(unsigned retry, uint64_t base_ms, uint64_t cap_ms)
{
	unsigned shift = retry > 0 ? retry - 1 : 0;

	if (shift >= 64 || base_ms > (cap_ms >> shift))
		return cap_ms;
	return base_ms << shift;
}

uint64_t kubeapi_http_backoff_ms(unsigned retry, uint64_t base_ms, uint64_t cap_ms, uint64_t rnd)
{
	uint64_t ceiling = kubeapi_http_backoff_ceiling_ms(retry, base_ms, cap_ms);

	/* The modulo bias is below 2^-40 for any ceiling under 2^24 ms. */
	return ceiling == UINT64_MAX ? rnd : rnd % (ceiling + 1);
}

/* delta-seconds: digits only, at most UINT32_MAX. */
static int parse_seconds(const char *s, size_t len, uint64_t *ms)
{
	uint64_t secs = 0;

	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -EINVAL;
		secs = secs * 10 + (uint64_t)(s[i] - '0');
		if (secs > UINT32_MAX)
			return -ERANGE;
	}
	*ms = secs * 1000;
	return 0;
}

/* An HTTP-date, by curl's parser, which reads all three RFC 9110 forms. */
static int parse_date(const char *s, size_t len, time_t now, uint64_t *ms)
{
	char buf[RETRY_AFTER_MAX_LEN + 1];
	time_t t;

	memcpy(buf, s, len);
	buf[len] = '\0';
	t = curl_getdate(buf, NULL);
	if (t == -1)
		return -EINVAL;
	if (t <= now) {
		*ms = 0;
		return 0;
	}
	if ((uint64_t)(t - now) > UINT32_MAX)
		return -ERANGE;
	*ms = (uint64_t)(t - now) * 1000;
	return 0;
}

int kubeapi_http_retry_after_ms(const char *s, size_t len, time_t now, uint64_t *ms)
{
	while (len > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (len == 0 || len > RETRY_AFTER_MAX_LEN)
		return -EINVAL;
	if (isdigit((unsigned char)s[0]))
		return parse_seconds(s, len, ms);
	return parse_date(s, len, now, ms);
}

/* Tokens are doubles; this slack keeps 0.9999999999 from costing a
 * millisecond more wait. It can over-spend at most 1e-9 of a token. */
#define BUCKET_EPSILON 1e-9

void kubeapi_http_bucket_init(struct kubeapi_http_bucket *b, double rate, unsigned burst,
                              uint64_t now_ms)
{
	b->rate = rate;
	b->burst = burst;
	b->tokens = burst;
	b->last_ms = now_ms;
}

static void bucket_refill(struct kubeapi_http_bucket *b, uint64_t now_ms)
{
	if (now_ms <= b->last_ms)
		return;
	b->tokens += (double)(now_ms - b->last_ms) * b->rate / 1000.0;
	if (b->tokens > b->burst)
		b->tokens = b->burst;
	b->last_ms = now_ms;
}

uint64_t kubeapi_http_bucket_wait_ms(struct kubeapi_http_bucket *b, uint64_t now_ms)
{
	double ms;

	if (b->rate < 0)
		return 0;
	bucket_refill(b, now_ms);
	if (b->tokens >= 1.0 - BUCKET_EPSILON)
		return 0;
	if (b->rate == 0 || b->burst < 1)
		return UINT64_MAX;
	ms = (1.0 - BUCKET_EPSILON - b->tokens) * 1000.0 / b->rate;
	return (uint64_t)ms + ((double)(uint64_t)ms < ms);
}

int kubeapi_http_bucket_take(struct kubeapi_http_bucket *b, uint64_t now_ms)
{
	if (kubeapi_http_bucket_wait_ms(b, now_ms) != 0)
		return -EAGAIN;
	if (b->rate < 0)
		return 0;
	b->tokens -= 1.0;
	if (b->tokens < 0)
		b->tokens = 0;
	return 0;
}

static const struct kubeapi_http_method_info methods[] = {
    [KUBEAPI_GET] = {"GET", NULL, NULL, 0, 0},
    [KUBEAPI_POST] = {"POST", NULL, "application/json", 1, 1},
    [KUBEAPI_PUT] = {"PUT", "PUT", "application/json", 1, 1},
    [KUBEAPI_PATCH_MERGE] = {"PATCH", "PATCH", "application/merge-patch+json", 1, 1},
    [KUBEAPI_PATCH_STRATEGIC] = {"PATCH", "PATCH", "application/strategic-merge-patch+json", 1, 1},
    [KUBEAPI_PATCH_JSON] = {"PATCH", "PATCH", "application/json-patch+json", 1, 1},
    [KUBEAPI_DELETE] = {"DELETE", "DELETE", "application/json", 1, 0},
    [KUBEAPI_PATCH_APPLY] = {"PATCH", "PATCH", "application/apply-patch+yaml", 1, 1},
};

const struct kubeapi_http_method_info *kubeapi_http_method_info(enum kubeapi_method m)
{
	if ((unsigned)m >= sizeof(methods) / sizeof(methods[0]))
		return NULL;
	return &methods[m];
}

/* Result codes that mean something other than -EIO, not retried. */
static const struct {
	CURLcode code;
	int err;
	int retryable;
} curl_errors[] = {
    {CURLE_COULDNT_CONNECT, -ECONNREFUSED, 1},
    {CURLE_OPERATION_TIMEDOUT, -ETIMEDOUT, 1},
    {CURLE_COULDNT_RESOLVE_HOST, -EHOSTUNREACH, 1},
    {CURLE_COULDNT_RESOLVE_PROXY, -EHOSTUNREACH, 1},
    {CURLE_SEND_ERROR, -EIO, 1},
    {CURLE_RECV_ERROR, -EIO, 1},
    {CURLE_GOT_NOTHING, -EIO, 1},
    {CURLE_PARTIAL_FILE, -EIO, 1},
    {CURLE_HTTP2, -EIO, 1},
    {CURLE_HTTP2_STREAM, -EIO, 1},
    {CURLE_SSL_CONNECT_ERROR, -EIO, 1}, /* e.g. reset mid-handshake by a restart */
    {CURLE_OUT_OF_MEMORY, -ENOMEM, 0},
    {CURLE_ABORTED_BY_CALLBACK, -ECANCELED, 0},
};

int kubeapi_http_curl_errno(int curl_code, int *retryable)
{
	int err = curl_code == CURLE_OK ? 0 : -EIO, again = 0;

	for (size_t i = 0; i < sizeof(curl_errors) / sizeof(curl_errors[0]); i++) {
		if ((int)curl_errors[i].code == curl_code) {
			err = curl_errors[i].err;
			again = curl_errors[i].retryable;
			break;
		}
	}
	if (retryable)
		*retryable = again;
	return err;
}

int kubeapi_http_should_retry(unsigned flags, long status, int err, int err_retryable)
{
	if (!(flags & KUBEAPI_REQ_RETRY))
		return 0;
	if (err != 0)
		return err_retryable;
	if (status == 429)
		return !(flags & KUBEAPI_REQ_NO_RETRY_429);
	return status >= 500 && status <= 599 && status != 501 && status != 505;
}
