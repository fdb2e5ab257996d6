/*
 * The vGPU device protocol's texts (vgpu.h): Go's strings.Split over
 * ':' ',' ';' done in place, Go's number and bool grammars made strict.
 */
#include "kubeapi/vgpu.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The next piece of s[*at..end) up to sep (or end), as strings.Split
 * yields them; *at moves past the separator. False after the last. */
static bool next_piece(const char *s, size_t end, size_t *at, char sep,
                       struct kubeapi_vgpu_text *piece, bool *more)
{
	const char *hit;

	if (!*more)
		return false;
	hit = memchr(s + *at, sep, end - *at);
	piece->p = s + *at;
	piece->len = hit ? (size_t)(hit - (s + *at)) : end - *at;
	*at += piece->len + (hit != NULL);
	*more = hit != NULL;
	return true;
}

/* Fields of piece split at ',' into f[0..cap), how many there are
 * (beyond cap counted, not stored). */
static size_t fields(struct kubeapi_vgpu_text piece, struct kubeapi_vgpu_text *f, size_t cap)
{
	struct kubeapi_vgpu_text x;
	size_t at = 0, n = 0;
	bool more = true;

	while (next_piece(piece.p, piece.len, &at, ',', &x, &more)) {
		if (n < cap)
			f[n] = x;
		n++;
	}
	return n;
}

/* Decimal digits only, at most UINT32_MAX. */
static int number(struct kubeapi_vgpu_text t, uint32_t *out)
{
	uint64_t v = 0;

	if (t.len == 0 || t.len > 10)
		return -EINVAL;
	for (size_t k = 0; k < t.len; k++) {
		if (t.p[k] < '0' || t.p[k] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(t.p[k] - '0');
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static bool is(struct kubeapi_vgpu_text t, const char *word)
{
	return t.len == strlen(word) && memcmp(t.p, word, t.len) == 0;
}

/* Go's strconv.ParseBool. */
static int go_bool(struct kubeapi_vgpu_text t, bool *out)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};

	for (size_t k = 0; k < sizeof(yes) / sizeof(yes[0]); k++) {
		if (is(t, yes[k]) || is(t, no[k])) {
			*out = is(t, yes[k]);
			return 0;
		}
	}
	return -EINVAL;
}

static int device(struct kubeapi_vgpu_text piece, uint32_t id, struct kubeapi_vgpu_device *d)
{
	struct kubeapi_vgpu_text f[6];

	if (fields(piece, f, 6) < 6)
		return -EINVAL;
	*d = (struct kubeapi_vgpu_device){.id = id, .uuid = f[0], .type = f[3], .mode = f[5]};
	if (number(f[1], &d->split) < 0 || number(f[2], &d->memory) < 0 ||
	    go_bool(f[4], &d->healthy) < 0)
		return -EINVAL;
	d->mig = is(f[5], "mig");
	return 0;
}

int kubeapi_vgpu_decode_node(const char *s, size_t len, struct kubeapi_vgpu_device *out, size_t cap,
                             size_t *n)
{
	struct kubeapi_vgpu_text piece;
	size_t at = 0;
	uint32_t id = 0;
	bool more = true;
	int rc;

	*n = 0;
	if (!memchr(s, ':', len))
		return -ENOENT;
	for (; next_piece(s, len, &at, ':', &piece, &more); id++) {
		if (!memchr(piece.p, ',', piece.len))
			continue;
		if (*n >= cap)
			return -E2BIG;
		if ((rc = device(piece, id, &out[*n])) < 0)
			return rc;
		(*n)++;
	}
	return 0;
}

static int share(struct kubeapi_vgpu_text piece, uint32_t container, struct kubeapi_vgpu_share *v)
{
	struct kubeapi_vgpu_text f[4];

	if (fields(piece, f, 4) < 4)
		return -EINVAL;
	*v = (struct kubeapi_vgpu_share){.container = container, .uuid = f[0], .type = f[1]};
	/* Volcano parses these as int32. */
	if (number(f[2], &v->memory) < 0 || number(f[3], &v->cores) < 0 || v->memory > INT32_MAX ||
	    v->cores > INT32_MAX)
		return -EINVAL;
	return 0;
}

int kubeapi_vgpu_decode_pod(const char *s, size_t len, struct kubeapi_vgpu_share *out, size_t cap,
                            size_t *n, size_t *ncontainers)
{
	struct kubeapi_vgpu_text part, piece;
	size_t at = 0;
	bool more = len > 0;
	int rc;

	*n = 0;
	*ncontainers = 0;
	while (next_piece(s, len, &at, ';', &part, &more)) {
		size_t pat = 0;
		bool pmore = part.len > 0;

		while (next_piece(part.p, part.len, &pat, ':', &piece, &pmore)) {
			if (!memchr(piece.p, ',', piece.len))
				continue;
			if (*n >= cap)
				return -E2BIG;
			if ((rc = share(piece, (uint32_t)*ncontainers, &out[*n])) < 0)
				return rc;
			(*n)++;
		}
		(*ncontainers)++;
	}
	return 0;
}

/* "UUID,type,memory,cores:", the strings byte for byte (a NUL in one
 * included: printf's %.*s would stop there). */
static int encode_share(const struct kubeapi_vgpu_share *v, struct buf *out)
{
	int rc;

	if ((rc = buf_append(out, v->uuid.p, v->uuid.len)) < 0 ||
	    (rc = buf_append(out, ",", 1)) < 0 ||
	    (rc = buf_append(out, v->type.p, v->type.len)) < 0)
		return rc;
	return buf_printf(out, ",%u,%u:", v->memory, v->cores);
}

int kubeapi_vgpu_encode_pod(const struct kubeapi_vgpu_share *v, size_t n, size_t ncontainers,
                            struct buf *out)
{
	size_t k = 0;
	int rc;

	for (size_t c = 0; c < ncontainers; c++) {
		if (c && (rc = buf_append(out, ";", 1)) < 0)
			return rc;
		for (; k < n && v[k].container == c; k++)
			if ((rc = encode_share(&v[k], out)) < 0)
				return rc;
	}
	return k == n ? 0 : -EINVAL;
}
