/* kubeapi/idmap: a randomized run against a plain array as the reference,
 * with keys chosen to collide in their home slots so that backward-shift
 * deletion has long probe runs to repair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "base/idmap.h"

#define UNIVERSE 4096

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void check_all(const struct idmap *m, void *const *ref)
{
	size_t n = 0;
	uint64_t k;

	for (k = 1; k <= UNIVERSE; k++) {
		assert_ptr_equal(idmap_get(m, k), ref[k]);
		n += ref[k] != NULL;
	}
	assert_int_equal(m->n, n);
}

static void test_random_ops_match_reference(void **state)
{
	struct idmap m = {0};
	void **ref = calloc(UNIVERSE + 1, sizeof(*ref));
	uint64_t s = 88172645463325252ULL;
	int i;

	(void)state;
	assert_non_null(ref);
	for (i = 0; i < 200000; i++) {
		uint64_t k = next_rand(&s) % UNIVERSE + 1;
		void *v = (void *)(uintptr_t)(next_rand(&s) | 1);

		if (next_rand(&s) % 3) {
			assert_int_equal(idmap_put(&m, k, v), 0);
			ref[k] = v;
		} else {
			assert_ptr_equal(idmap_del(&m, k), ref[k]);
			ref[k] = NULL;
		}
		if (i % 20000 == 0)
			check_all(&m, ref);
	}
	check_all(&m, ref);
	idmap_free(&m);
	free(ref);
}

/* A map that held many entries gives its slots back as they go, and
 * what stays is still found. */
static void test_shrinks_after_deletes(void **state)
{
	struct idmap m = {0};
	enum { N = 100000, KEEP = 10 };

	(void)state;
	for (uint64_t k = 1; k <= N; k++)
		assert_int_equal(idmap_put(&m, k * 7919, (void *)(uintptr_t)k), 0);
	assert_true(m.nslots >= N);
	for (uint64_t k = KEEP + 1; k <= N; k++)
		assert_int_equal((uintptr_t)idmap_del(&m, k * 7919), k);
	assert_int_equal(m.n, KEEP);
	assert_int_equal(m.nslots, 64);
	for (uint64_t k = 1; k <= KEEP; k++)
		assert_int_equal((uintptr_t)idmap_get(&m, k * 7919), k);
	idmap_free(&m);
}

static void test_key_zero_is_refused_and_absent_keys_are_null(void **state)
{
	struct idmap m = {0};
	int x;

	(void)state;
	idmap_prefetch(&m, 7); /* no slots yet: nothing to load, no fault */
	assert_null(idmap_get(&m, 7));
	assert_null(idmap_del(&m, 7));
	assert_int_equal(idmap_put(&m, 0, &x), -22);
	assert_int_equal(idmap_put(&m, 7, &x), 0);
	assert_int_equal(idmap_put(&m, 7, &x + 1), 0); /* replace */
	assert_int_equal(m.n, 1);
	assert_ptr_equal(idmap_get(&m, 7), &x + 1);
	assert_null(idmap_get(&m, 8));
	idmap_prefetch(&m, 0);
	idmap_prefetch(&m, 8);
	assert_int_equal(m.n, 1); /* a prefetch changes nothing */
	idmap_free(&m);
	assert_int_equal(m.nslots, 0);
}

/* idmap_ref: an absent key comes in holding NULL and counts once; a
 * present one gives its own slot; key 0 has none. Counting through it
 * matches counting by hand, across the map's growth. */
static void test_ref_inserts_once_and_counts(void **state)
{
	struct idmap m = {0};
	enum { N = 5000 };
	void **v;

	(void)state;
	assert_null(idmap_ref(&m, 0));
	assert_non_null(v = idmap_ref(&m, 9));
	assert_null(*v);
	*v = (void *)(uintptr_t)1;
	assert_ptr_equal(idmap_ref(&m, 9), v);
	assert_int_equal(m.n, 1);
	for (uint64_t i = 0; i < 3 * N; i++) {
		v = idmap_ref(&m, i % N + 100);
		assert_non_null(v);
		*v = (void *)((uintptr_t)*v + 1);
	}
	assert_int_equal(m.n, N + 1);
	for (uint64_t k = 100; k < 100 + N; k++)
		assert_int_equal((uintptr_t)idmap_get(&m, k), 3);
	assert_int_equal((uintptr_t)idmap_get(&m, 9), 1);
	idmap_free(&m);
}

/* The iterator: nothing in an empty (or NULL) map, and after puts and
 * deletes each key left comes exactly once with its value. */
static void test_next_visits_each_key_once(void **state)
{
	struct idmap m = {0};
	enum { N = 1000 };
	unsigned char *seen = calloc(N + 1, 1);
	struct idmap_slot *e;
	size_t i = 0, n = 0;

	(void)state;
	assert_non_null(seen);
	assert_null(idmap_next(&m, &i));
	assert_null(idmap_next(NULL, &i));
	IDMAP_FOREACH(NULL, j, e)
		fail();
	for (uint64_t k = 1; k <= N; k++)
		assert_int_equal(idmap_put(&m, k, (void *)(uintptr_t)(k * 3)), 0);
	for (uint64_t k = 2; k <= N; k += 2)
		assert_int_equal((uintptr_t)idmap_del(&m, k), k * 3);
	IDMAP_FOREACH(&m, j, e) {
		assert_true(e->key >= 1 && e->key <= N);
		assert_int_equal(e->key % 2, 1);
		assert_int_equal((uintptr_t)e->value, e->key * 3);
		assert_int_equal(seen[e->key], 0);
		seen[e->key] = 1;
		n++;
	}
	assert_int_equal(n, N / 2);
	assert_int_equal(n, m.n);
	/* The cursor ends past the last slot and stays at the end. */
	i = 0;
	while (idmap_next(&m, &i))
		;
	assert_true(i <= m.nslots);
	assert_null(idmap_next(&m, &i));
	idmap_free(&m);
	i = 0;
	assert_null(idmap_next(&m, &i));
	free(seen);
}

/* idmap_addresses(): each entry's value once, in the slot order of a
 * walk, m->n of them, in room for m->n + 1 (ASan checks the bound). */
static void test_addresses_are_the_walks_values(void **state)
{
	struct idmap m = {0};
	enum { N = 3000 };
	uint64_t *out = malloc(sizeof(*out));
	struct idmap_slot *e;
	size_t n = 0;

	(void)state;
	assert_non_null(out);
	assert_int_equal(idmap_addresses(&m, out), 0); /* no slots */
	free(out);
	for (uint64_t k = 1; k <= N; k++)
		assert_int_equal(
		    idmap_put(&m, k * 0x9e3779b97f4a7c15ull | 1, (void *)(uintptr_t)(k * 16)), 0);
	for (uint64_t k = 3; k <= N; k += 3)
		assert_non_null(idmap_del(&m, k * 0x9e3779b97f4a7c15ull | 1));
	out = malloc((m.n + 1) * sizeof(*out));
	assert_non_null(out);
	assert_int_equal(idmap_addresses(&m, out), m.n);
	IDMAP_FOREACH(&m, j, e)
		assert_int_equal(out[n++], (uintptr_t)e->value);
	assert_int_equal(n, N - N / 3);
	free(out);
	idmap_free(&m);
}

/* Room reserved for n entries: n puts rebuild nothing (the slots stay
 * where they are) and every entry is found. */
static void test_reserve_takes_n_without_rebuild(void **state)
{
	struct idmap m = {0};
	const struct idmap_slot *slots;

	(void)state;
	assert_int_equal(idmap_reserve(&m, 10000), 0);
	slots = m.slots;
	assert_true(m.nslots * 7 >= 10000 * 10);
	for (uint64_t k = 1; k <= 10000; k++)
		assert_int_equal(idmap_put(&m, k * 7919, (void *)(uintptr_t)k), 0);
	assert_ptr_equal(m.slots, slots);
	for (uint64_t k = 1; k <= 10000; k++)
		assert_int_equal((uintptr_t)idmap_get(&m, k * 7919), k);
	assert_int_equal(idmap_reserve(&m, 10), 0); /* never shrinks */
	assert_ptr_equal(m.slots, slots);
	idmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_ops_match_reference),
	    cmocka_unit_test(test_shrinks_after_deletes),
	    cmocka_unit_test(test_key_zero_is_refused_and_absent_keys_are_null),
	    cmocka_unit_test(test_next_visits_each_key_once),
	    cmocka_unit_test(test_addresses_are_the_walks_values),
	    cmocka_unit_test(test_ref_inserts_once_and_counts),
	    cmocka_unit_test(test_reserve_takes_n_without_rebuild),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
