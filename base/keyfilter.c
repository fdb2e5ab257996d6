/* A filter over 64-bit keys (keyfilter.h). */
#include "base/keyfilter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int keyfilter_init(struct keyfilter *f, size_t n)
{
	size_t slots = 4096;
	unsigned bits = 12;

	while (slots / 16 < n && slots < ((size_t)1 << 40)) {
		slots *= 2;
		bits++;
	}
	f->shift = 64 - (bits - 6); /* slots / 64 words */
	return (f->bits = calloc(slots / 64, sizeof(*f->bits))) ? 0 : -ENOMEM;
}

void keyfilter_free(struct keyfilter *f)
{
	free(f->bits);
	memset(f, 0, sizeof(*f));
}
