/*
 * Fuzz target: the vGPU device protocol's texts (kubeapi/vgpu.c).
 *
 * Byte 0 picks the text (even: a node's registration, odd: a pod's
 * shares); the rest is the text, with its exact length and no NUL. What
 * kubeapi/vgpu.h promises is checked: only its documented results, at
 * most cap entries, every decoded string inside the input; and for pod
 * shares, that what decodes encodes to a text that decodes to the same
 * shares and encodes to the same bytes again.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "fuzz/fuzz.h"
#include "kubeapi/vgpu.h"

#define CAP 8

static int inside(struct kubeapi_vgpu_text t, const char *s, size_t len)
{
	return t.p >= s && t.len <= len && (size_t)(t.p - s) <= len - t.len;
}

static void node(const char *s, size_t len)
{
	struct kubeapi_vgpu_device d[CAP];
	size_t n = 0;
	int rc = kubeapi_vgpu_decode_node(s, len, d, CAP, &n);

	FUZZ_CHECK(rc == 0 || rc == -ENOENT || rc == -EINVAL || rc == -E2BIG);
	FUZZ_CHECK(n <= CAP);
	for (size_t k = 0; k < n; k++)
		FUZZ_CHECK(inside(d[k].uuid, s, len) && inside(d[k].type, s, len) &&
		           inside(d[k].mode, s, len));
}

static int same(const struct kubeapi_vgpu_share *a, const struct kubeapi_vgpu_share *b)
{
	return a->container == b->container && a->memory == b->memory && a->cores == b->cores &&
	       a->uuid.len == b->uuid.len && memcmp(a->uuid.p, b->uuid.p, a->uuid.len) == 0 &&
	       a->type.len == b->type.len && memcmp(a->type.p, b->type.p, a->type.len) == 0;
}

static void pod(const char *s, size_t len)
{
	struct kubeapi_vgpu_share v[CAP], w[CAP];
	size_t n = 0, nc = 0, m = 0, mc = 0;
	struct buf once, twice;
	int rc = kubeapi_vgpu_decode_pod(s, len, v, CAP, &n, &nc);

	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -E2BIG);
	FUZZ_CHECK(n <= CAP);
	for (size_t k = 0; k < n; k++)
		FUZZ_CHECK(inside(v[k].uuid, s, len) && inside(v[k].type, s, len));
	if (rc != 0)
		return;
	buf_init(&once, 1 << 20);
	buf_init(&twice, 1 << 20);
	FUZZ_CHECK(kubeapi_vgpu_encode_pod(v, n, nc, &once) == 0);
	FUZZ_CHECK(kubeapi_vgpu_decode_pod(once.p ? once.p : "", once.len, w, CAP, &m, &mc) == 0);
	FUZZ_CHECK(m == n);
	for (size_t k = 0; k < n; k++)
		FUZZ_CHECK(same(&v[k], &w[k]));
	/* One empty part decodes to none: the count may only shrink so. */
	FUZZ_CHECK(mc == nc || (nc == 1 && n == 0 && mc == 0));
	FUZZ_CHECK(kubeapi_vgpu_encode_pod(w, m, mc, &twice) == 0);
	FUZZ_CHECK(once.len == twice.len &&
	           (once.len == 0 || memcmp(once.p, twice.p, once.len) == 0));
	buf_free(&once);
	buf_free(&twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		pod((const char *)data + 1, size - 1);
	else
		node((const char *)data + 1, size - 1);
	return 0;
}
