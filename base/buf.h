/*
 * A growable byte buffer with a hard cap fixed when it is created, as
 * curl's dynbuf: every buffer fed from outside (a response body, a watch
 * line, a rendered document) says at init how large it may ever get.
 *
 * Growth doubles the allocation from 256 bytes (never beyond max + 1), so
 * appending n bytes one piece at a time costs O(n) copies in all and
 * O(log n) reallocs; the memory held is at most twice the content. The
 * content is always followed by a NUL (not counted in len) once anything
 * was reserved, so p can be read as a string when the bytes are text.
 *
 * A zeroed struct buf is empty with max 0: it refuses every byte until
 * buf_init() gives it a cap.
 */
#ifndef MUSTER_BASE_BUF_H
#define MUSTER_BASE_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *p;    /* NULL until the first reserve; then p[len] == '\0' */
	size_t len; /* bytes held, without the NUL */
	size_t cap; /* bytes allocated, the NUL's included */
	size_t max; /* the cap on len, fixed at init */
};

/** An empty buffer that will hold at most max bytes (plus a NUL). */
void buf_init(struct buf *b, size_t max);

/** Room for `more` bytes past len (and the NUL). 0; -EMSGSIZE when
 *  len + more > max, the buffer unchanged; -ENOMEM. O(len) when it
 *  reallocates. */
int buf_reserve(struct buf *b, size_t more);

/** Append n bytes, all or none. 0, -EMSGSIZE (over max: nothing is
 *  added) or -ENOMEM. */
int buf_append(struct buf *b, const void *data, size_t n);

/** Append formatted text, all or none. 0, -EMSGSIZE, -ENOMEM, or -EINVAL
 *  when the format fails. Costs one vsnprintf, two when it must grow. */
__attribute__((format(printf, 2, 3))) int buf_printf(struct buf *b, const char *fmt, ...);

/** buf_printf() with a va_list (left for the caller to va_end). */
__attribute__((format(printf, 2, 0))) int buf_vprintf(struct buf *b, const char *fmt, va_list ap);

/** Forget the content, keep the memory and the cap (for reuse). O(1). */
void buf_reset(struct buf *b);

/** Hand the content over: returns p (malloc'd, NUL-terminated, the caller
 *  frees; NULL if nothing was ever reserved), its length in *len when len
 *  is not NULL, and leaves b empty with its cap. */
char *buf_steal(struct buf *b, size_t *len);

/** Free the memory; b is empty with its cap, ready for reuse. */
void buf_free(struct buf *b);

#endif /* MUSTER_BASE_BUF_H */
