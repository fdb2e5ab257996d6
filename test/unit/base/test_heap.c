/* base/heap: once told, the allocator serves a big block from its heap
 * and keeps it there when freed, where it used to map it from the
 * kernel and hand it back. */
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/heap.h"

#define BIG ((size_t)64 << 20)

/* A sanitizer brings its own allocator, which glibc's counters do not
 * see (the plain build, which CI runs too, checks the behaviour). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GLIBC_HEAP 0
#else
#define GLIBC_HEAP 1
#endif

static void test_big_blocks_stay_in_the_heap(void **state)
{
	char *p;

	(void)state;
	if (!GLIBC_HEAP) { /* it may refuse (ASan's does): harmless either way */
		int rc = heap_keep_big_blocks();

		assert_true(rc == 0 || rc == -EINVAL);
		p = malloc(BIG);
		assert_non_null(p);
		free(p);
		return;
	}
	/* As glibc starts: a block this big is mapped apart. */
	p = malloc(BIG);
	assert_non_null(p);
	memset(p, 1, BIG);
	assert_true(mallinfo2().hblkhd >= BIG);
	free(p);
	assert_int_equal(heap_keep_big_blocks(), 0);
	p = malloc(BIG);
	assert_non_null(p);
	memset(p, 1, BIG);
	assert_true(mallinfo2().hblkhd < BIG); /* from the heap */
	free(p);
	assert_true(mallinfo2().fordblks >= BIG); /* kept there, free */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_big_blocks_stay_in_the_heap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
