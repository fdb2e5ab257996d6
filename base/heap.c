/* The process's heap (heap.h). */
#include "base/heap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The tunable that has glibc's malloc advise the kernel to back what it
 * takes for the heap with 2 MB pages (glibc 2.35 and later; older ones
 * ignore it). */
#define HUGE_TUNABLE "glibc.malloc.hugetlb="

int heap_huge_pages(char *const argv[])
{
#if defined(__GLIBC__) && defined(__linux__) && !defined(__SANITIZE_ADDRESS__) &&                  \
    !defined(__SANITIZE_THREAD__)
	const char *env = getenv("GLIBC_TUNABLES");
	char *was, *want;
	int rc = 0;

	if (env && strstr(env, HUGE_TUNABLE))
		return 0; /* set: by the exec below, or by whoever started us */
	if (!(was = strdup(env ? env : "")))
		return -ENOMEM;
	if (asprintf(&want, "%s%s" HUGE_TUNABLE "1", was, *was ? ":" : "") < 0) {
		free(was);
		return -ENOMEM;
	}
	if (setenv("GLIBC_TUNABLES", want, 1) == 0) {
		execv("/proc/self/exe", argv);
		/* Not run again: go on with the pages as they are, the
		 * variable as it was so that no child reads it as ours. */
		rc = -errno;
		if (env)
			setenv("GLIBC_TUNABLES", was, 1);
		else
			unsetenv("GLIBC_TUNABLES");
	} else {
		rc = -errno;
	}
	free(want);
	free(was);
	return rc;
#else
	(void)argv;
	return -ENOTSUP;
#endif
}
