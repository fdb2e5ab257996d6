/* The process's heap (heap.h). */
#include "base/heap.h"

#include <errno.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* Blocks up to this size come from the heap: past it, a single array of
 * a million-node cluster, which may as well be the kernel's. */
#define HEAP_BIG (1024L * 1024 * 1024)

int heap_keep_big_blocks(void)
{
#if defined(__GLIBC__)
	/* Both set: a fixed threshold (no longer moved by what is freed),
	 * and the heap's top not trimmed back to the kernel below it. */
	if (!mallopt(M_MMAP_THRESHOLD, HEAP_BIG) || !mallopt(M_TRIM_THRESHOLD, HEAP_BIG))
		return -EINVAL;
	return 0;
#else
	return -EINVAL;
#endif
}
