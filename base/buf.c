#include "base/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first allocation: small enough for a short line, and a power of two
 * so that a first reserve of n > 256 bytes gets the same power of two as
 * doubling from any larger power of two would. */
#define BUF_FIRST 256

void buf_init(struct buf *b, size_t max)
{
	*b = (struct buf){.max = max};
}

/* The allocation for need bytes: doubled from the current one, never
 * over max + 1 (need itself is within that). */
static size_t grown_cap(const struct buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : BUF_FIRST;

	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (b->max < SIZE_MAX && cap > b->max + 1)
		cap = b->max + 1;
	return cap;
}

int buf_reserve(struct buf *b, size_t more)
{
	size_t need, cap;
	char *p;

	if (more > b->max - b->len)
		return -EMSGSIZE;
	if (more >= SIZE_MAX - b->len)
		return -ENOMEM; /* no room for the NUL in any address space */
	need = b->len + more + 1;
	if (need <= b->cap)
		return 0;
	cap = grown_cap(b, need);
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	p[b->len] = '\0';
	b->p = p;
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
	int rc = buf_reserve(b, n);

	if (rc < 0)
		return rc;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	size_t room = b->p ? b->cap - b->len : 0;
	va_list again;
	int n, rc;

	va_copy(again, ap);
	n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
	if (n >= 0 && (size_t)n < room) {
		b->len += (size_t)n;
		va_end(again);
		return 0;
	}
	/* A truncated try wrote over the NUL: put it back whatever follows. */
	if (b->p)
		b->p[b->len] = '\0';
	rc = n < 0 ? -EINVAL : buf_reserve(b, (size_t)n);
	if (rc == 0 && vsnprintf(b->p + b->len, b->cap - b->len, fmt, again) != n) {
		b->p[b->len] = '\0';
		rc = -EINVAL; /* the arguments changed under us: not ours to guess */
	}
	if (rc == 0)
		b->len += (size_t)n;
	va_end(again);
	return rc;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

char *buf_steal(struct buf *b, size_t *len)
{
	char *p = b->p;

	if (len)
		*len = b->len;
	buf_init(b, b->max);
	return p;
}

void buf_free(struct buf *b)
{
	free(b->p);
	buf_init(b, b->max);
}
