/*
 * The one way sim/ reads a file (a trace, a snapshot): whole, into memory,
 * NUL-terminated, refused past a cap. Read as a stream, so a pipe or a
 * process substitution works as well as a file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/internal.h"

int sim__read_file(const char *path, size_t max, char **text, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0, got;
	char *buf;
	int rc = 0;

	*text = NULL;
	if (!f)
		return -errno;
	if (!(buf = malloc(cap))) {
		fclose(f);
		return -ENOMEM;
	}
	while (rc == 0 && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n > max) {
			rc = -EFBIG;
		} else if (n == cap - 1) {
			char *b = realloc(buf, cap * 2);

			if (b) {
				buf = b;
				cap *= 2;
			} else {
				rc = -ENOMEM;
			}
		}
	}
	if (rc == 0 && ferror(f))
		rc = -EIO;
	fclose(f);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[n] = 0;
	*text = buf;
	*len = n;
	return 0;
}
