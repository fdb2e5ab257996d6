/* base/heap: once told, the allocator serves a big block from its heap
 * and keeps it there when freed, where it used to map it from the
 * kernel and hand it back. */
#include <errno.h>
#include <stdbool.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* The kernel's transparent huge pages mode, "[madvise]" style; "" if
 * the file is not there. */
static void thp_mode(char *mode, size_t cap)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	mode[0] = '\0';
	if (f && !fgets(mode, (int)cap, f))
		mode[0] = '\0';
	if (f)
		fclose(f);
}

/* Whether the mapping that holds p is advised for huge pages (VmFlags
 * "hg" in /proc/self/smaps). */
static bool advised_huge(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false, hg = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (in && strncmp(line, "VmFlags:", 8) == 0)
			hg = strstr(line, " hg") != NULL;
	}
	fclose(f);
	return hg;
}

/* The program run again by heap_huge_pages(): 0 when it runs with the
 * tunable set and, where the kernel's mode is madvise, a big block of
 * the heap advised for huge pages; 3 and 4 say which failed. */
static int huge_child(void)
{
	const char *env = getenv("GLIBC_TUNABLES");
	char mode[128];
	char *p;

	if (!env || !strstr(env, "glibc.malloc.hugetlb=1"))
		return 3;
	heap_keep_big_blocks(); /* from the heap, as `muster run` takes it */
	if (!(p = malloc(BIG)))
		return 4;
	memset(p, 1, BIG);
	thp_mode(mode, sizeof(mode));
	/* glibc advises only in madvise mode: "always" needs no advice,
	 * "never" takes none. */
	return strstr(mode, "[madvise]") && !advised_huge(p + BIG / 2) ? 4 : 0;
}

static void test_huge_pages_run_the_program_again(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	if (!GLIBC_HEAP) { /* a sanitizer's allocator: not run again */
		assert_int_equal(heap_huge_pages((char *[]){"test_heap", NULL}), -ENOTSUP);
		return;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsetenv("GLIBC_TUNABLES");
		heap_huge_pages((char *[]){"test_heap", "huge-child", NULL});
		_exit(5); /* it returned: not run again */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_huge_pages_leave_an_operators_choice(void **state)
{
	const char *was = getenv("GLIBC_TUNABLES");
	char *keep = was ? strdup(was) : NULL;

	(void)state;
	setenv("GLIBC_TUNABLES", "glibc.malloc.check=0:glibc.malloc.hugetlb=0", 1);
	/* Told already (here: not to): returns, no exec, the variable as it was. */
	assert_int_equal(heap_huge_pages((char *[]){"test_heap", "huge-child", NULL}),
	                 GLIBC_HEAP ? 0 : -ENOTSUP);
	assert_string_equal(getenv("GLIBC_TUNABLES"),
	                    "glibc.malloc.check=0:glibc.malloc.hugetlb=0");
	if (keep)
		setenv("GLIBC_TUNABLES", keep, 1);
	else
		unsetenv("GLIBC_TUNABLES");
	free(keep);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_big_blocks_stay_in_the_heap),
	    cmocka_unit_test(test_huge_pages_run_the_program_again),
	    cmocka_unit_test(test_huge_pages_leave_an_operators_choice),
	};

	if (argc > 1 && strcmp(argv[1], "huge-child") == 0)
		return huge_child();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
