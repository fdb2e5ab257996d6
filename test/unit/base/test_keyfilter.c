/* base/keyfilter: no key added is ever said absent, keys not added mostly
 * are, and the filter grows with the keys it is sized for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "base/keyfilter.h"

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void check_filter(size_t n)
{
	struct keyfilter f;
	uint64_t *keys = malloc((n + 1) * sizeof(*keys)), s = 0x9e3779b97f4a7c15ull + n;
	size_t passed = 0, probes = 100000;

	assert_non_null(keys);
	assert_int_equal(keyfilter_init(&f, n), 0);
	for (size_t k = 0; k < n; k++) {
		/* pod keys: (namespace id << 32 | name id), small ids */
		keys[k] = (uint64_t)(next_rand(&s) % 64 + 1) << 32 | (next_rand(&s) % 1000000 + 1);
		keyfilter_add(&f, keys[k]);
	}
	for (size_t k = 0; k < n; k++)
		assert_true(keyfilter_may(&f, keys[k]));
	/* Keys of another namespace were never added: about 1 in 60 pass
	 * (a filter full of ones would pass them all; one bit a key, 1 in 16). */
	for (size_t k = 0; k < probes; k++)
		passed += keyfilter_may(&f, (uint64_t)1000 << 32 | (k + 1));
	assert_true(passed < probes / 30);
	keyfilter_free(&f);
	assert_null(f.bits);
	free(keys);
}

static void test_added_keys_pass_and_others_mostly_do_not(void **state)
{
	(void)state;
	check_filter(0);
	check_filter(1);
	check_filter(1000);
	check_filter(200000); /* past the smallest size: the filter grows */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_added_keys_pass_and_others_mostly_do_not),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
