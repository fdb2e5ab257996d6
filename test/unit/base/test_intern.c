/*
 * kubeapi/intern: interned strings (ids, reference counts, id reuse,
 * length-delimited input) and hash-consed blobs, including growth through
 * many rehashes with removals interleaved, so lookups run over tombstones.
 *
 * Every test starts from a fresh table and ends by checking that the
 * statistics show exactly what the test still holds, then frees the table
 * (ASan reports anything left behind).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/intern.h"

static int setup(void **state)
{
	struct intern *t = NULL;

	if (intern_new(&t) < 0)
		return -1;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct intern *t = *state;

	intern_free(&t);
	return t == NULL ? 0 : -1;
}

static struct intern_stats stats(const struct intern *t)
{
	struct intern_stats s;

	intern_stats(t, &s);
	return s;
}

static void assert_empty(const struct intern *t)
{
	struct intern_stats s = stats(t);

	assert_int_equal(s.strings, 0);
	assert_int_equal(s.string_bytes, 0);
	assert_int_equal(s.blobs, 0);
	assert_int_equal(s.blob_bytes, 0);
}

static uint32_t intern(struct intern *t, const char *s)
{
	uint32_t id = intern_add(t, s, strlen(s));

	assert_int_not_equal(id, 0);
	return id;
}

static uint32_t find(const struct intern *t, const char *s)
{
	return intern_find(t, s, strlen(s));
}

/* ---- strings ------------------------------------------------------------ */

/* Equal strings share an id; different ones do not; the text reads back. */
static void test_str_equal_strings_share_id(void **state)
{
	struct intern *t = *state;
	uint32_t a = intern(t, "smoke"), b = intern(t, "rich-0"), a2 = intern(t, "smoke");

	assert_int_equal(a, a2);
	assert_int_not_equal(a, b);
	assert_string_equal(intern_str(t, a), "smoke");
	assert_string_equal(intern_str(t, b), "rich-0");
	assert_int_equal(intern_len(t, a), 5);
	assert_int_equal(find(t, "smoke"), a);
	assert_int_equal(find(t, "rich-1"), 0);
	assert_int_equal(stats(t).strings, 2);
	intern_unref(t, a);
	intern_unref(t, a2);
	intern_unref(t, b);
	assert_empty(t);
}

/* Ids are small and dense (they index vectors in the cache): the first
 * distinct strings get 1, 2, 3, ... */
static void test_str_ids_dense_from_one(void **state)
{
	struct intern *t = *state;
	char buf[16];
	uint32_t i;

	for (i = 1; i <= 300; i++) {
		snprintf(buf, sizeof(buf), "n%" PRIu32, i);
		assert_int_equal(intern(t, buf), i);
	}
	for (i = 1; i <= 300; i++)
		intern_unref(t, i);
	assert_empty(t);
}

/* A string lives until its last reference goes, then its id is free for
 * the next new string. find takes no reference. */
static void test_str_refcount_and_reuse(void **state)
{
	struct intern *t = *state;
	uint32_t keep = intern(t, "keep"), id = intern(t, "gang-a"), other;
	const char *text;
	int i;

	assert_int_equal(intern(t, "gang-a"), id); /* 2 */
	intern_ref(t, id);                         /* 3 */
	for (i = 0; i < 5; i++)
		assert_int_equal(find(t, "gang-a"), id);
	text = intern_str(t, id);
	intern_unref(t, id);
	intern_unref(t, id);
	/* one reference left: still there, same text at the same address */
	assert_int_equal(find(t, "gang-a"), id);
	assert_ptr_equal(intern_str(t, id), text);
	assert_string_equal(text, "gang-a");
	assert_int_equal(stats(t).strings, 2);
	intern_unref(t, id);
	assert_int_equal(find(t, "gang-a"), 0);
	assert_int_equal(stats(t).strings, 1);
	/* the freed id goes to the next new string */
	other = intern(t, "gang-b");
	assert_int_equal(other, id);
	assert_string_equal(intern_str(t, other), "gang-b");
	assert_int_equal(find(t, "gang-a"), 0);
	/* interning the old text again gives a new id with one reference */
	id = intern(t, "gang-a");
	assert_int_not_equal(id, other);
	intern_unref(t, id);
	assert_int_equal(find(t, "gang-a"), 0);
	intern_unref(t, other);
	intern_unref(t, keep);
	assert_empty(t);
}

/* id 0 is "none": reads as "", and ref/unref ignore it. */
static void test_str_id_zero(void **state)
{
	struct intern *t = *state;
	uint32_t a = intern(t, "a");

	assert_string_equal(intern_str(t, 0), "");
	assert_int_equal(intern_len(t, 0), 0);
	intern_ref(t, 0);
	intern_unref(t, 0);
	intern_unref(t, 0);
	assert_int_equal(stats(t).strings, 1);
	assert_int_equal(find(t, "a"), a);
	intern_unref(t, a);
	assert_empty(t);
}

/* The empty string is interned like any other: a real id, not 0. */
static void test_str_empty_string(void **state)
{
	struct intern *t = *state;
	uint32_t e = intern_add(t, "", 0), a = intern(t, "a");

	assert_int_not_equal(e, 0);
	assert_int_not_equal(e, a);
	assert_int_equal(intern_add(t, "x", 0), e); /* only len counts */
	assert_string_equal(intern_str(t, e), "");
	assert_int_equal(intern_len(t, e), 0);
	assert_int_equal(intern_find(t, "", 0), e);
	assert_int_equal(stats(t).strings, 2);
	intern_unref(t, e);
	assert_int_equal(intern_find(t, "", 0), e);
	intern_unref(t, e);
	assert_int_equal(intern_find(t, "", 0), 0);
	intern_unref(t, a);
	assert_empty(t);
}

/* Input is length-delimited: bytes after len are not read, embedded NULs
 * are part of the string, and what is stored is NUL-terminated after len. */
static void test_str_length_delimited(void **state)
{
	struct intern *t = *state;
	static const char anb[] = {'a', '\0', 'b'}, anc[] = {'a', '\0', 'c'};
	uint32_t x = intern_add(t, anb, 3), y = intern_add(t, anc, 3);
	uint32_t a = intern_add(t, "a", 1);
	uint32_t ns = intern_add(t, "namespace-x", 9);
	const char *s;

	assert_true(x && y && a && ns);
	assert_int_not_equal(x, y);
	assert_int_not_equal(x, a);
	assert_int_equal(intern_len(t, x), 3);
	assert_memory_equal(intern_str(t, x), anb, 3);
	assert_int_equal(intern_str(t, x)[3], '\0');
	assert_int_equal(intern_find(t, anb, 3), x);
	assert_int_equal(intern_find(t, anb, 2), 0); /* "a\0" was never added */
	assert_int_equal(intern_find(t, "a", 1), a);
	/* a slice of a longer buffer */
	s = intern_str(t, ns);
	assert_string_equal(s, "namespace");
	assert_int_equal(intern_len(t, ns), 9);
	assert_int_equal(find(t, "namespace"), ns);
	assert_int_equal(find(t, "namespace-x"), 0);
	intern_unref(t, x);
	intern_unref(t, y);
	intern_unref(t, a);
	intern_unref(t, ns);
	assert_empty(t);
}

#define MANY 100000

static void name_of(char *buf, size_t len, unsigned i)
{
	snprintf(buf, len, "pod-%u.ns-%u", i, i % 97);
}

/* Checks every string i < n: live ones are found under their recorded id
 * and read back, removed ones (ids[i] == 0) are not found. */
static void check_strings(const struct intern *t, const uint32_t *ids, unsigned n)
{
	char buf[32];
	unsigned i;

	for (i = 0; i < n; i++) {
		uint32_t got;

		name_of(buf, sizeof(buf), i);
		got = find(t, buf);
		if (got != ids[i])
			fail_msg("string %u (\"%s\"): find gave id %" PRIu32 ", want %" PRIu32, i,
			         buf, got, ids[i]);
		if (ids[i] && strcmp(intern_str(t, ids[i]), buf) != 0)
			fail_msg("id %" PRIu32 " reads \"%s\", want \"%s\"", ids[i],
			         intern_str(t, ids[i]), buf);
	}
}

/* 100,000 strings through many rehashes, every fourth one removed as we
 * go (leaving tombstones in the probe chains), then the removed ones put
 * back (reusing ids and tombstone slots): every lookup stays right, ids
 * of live strings never change, and the counts match. */
static void test_str_growth_with_tombstones(void **state)
{
	struct intern *t = *state;
	uint32_t *ids = calloc(MANY, sizeof(*ids));
	size_t live = 0, bytes = 0;
	char buf[32];
	unsigned i;

	assert_non_null(ids);
	for (i = 0; i < MANY; i++) {
		name_of(buf, sizeof(buf), i);
		ids[i] = intern(t, buf);
		live++;
		bytes += strlen(buf) + 1;
		if (i % 4 == 3) { /* drop an earlier one */
			unsigned j = i - 2;

			name_of(buf, sizeof(buf), j);
			intern_unref(t, ids[j]);
			ids[j] = 0;
			live--;
			bytes -= strlen(buf) + 1;
		}
		if (i % 10007 == 0)
			check_strings(t, ids, i + 1);
	}
	check_strings(t, ids, MANY);
	assert_int_equal(stats(t).strings, live);
	assert_true(stats(t).string_bytes >= bytes);
	/* ids stay unique: every live string reads back its own text */
	for (i = 0; i < MANY; i++) {
		if (ids[i])
			continue;
		name_of(buf, sizeof(buf), i);
		ids[i] = intern(t, buf);
		live++;
	}
	check_strings(t, ids, MANY);
	assert_int_equal(stats(t).strings, MANY);
	for (i = 0; i < MANY; i++)
		intern_unref(t, ids[i]);
	assert_empty(t);
	free(ids);
}

/* Insert-remove churn with few live strings: tombstones are cleared by
 * rebuilding at the same size, so the index does not grow without bound
 * and probing always ends. */
static void test_str_churn_bounded(void **state)
{
	struct intern *t = *state;
	uint32_t ring[100] = {0};
	size_t table_mid = 0;
	char buf[32];
	unsigned i;

	for (i = 0; i < 400000; i++) {
		uint32_t *slot = &ring[i % 100];

		intern_unref(t, *slot);
		snprintf(buf, sizeof(buf), "churn-%u", i);
		*slot = intern(t, buf);
		if (i == 200000)
			table_mid = stats(t).table_bytes;
	}
	assert_int_equal(stats(t).strings, 100);
	assert_int_equal(stats(t).table_bytes, table_mid);
	assert_true(table_mid < 16384);
	for (i = 0; i < 100; i++) {
		snprintf(buf, sizeof(buf), "churn-%u", 400000 - 100 + i);
		assert_int_equal(find(t, buf), ring[(400000 - 100 + i) % 100]);
		intern_unref(t, ring[i]);
	}
	assert_empty(t);
}

/* The string text stays put while referenced, however much the table grows. */
static void test_str_address_stable(void **state)
{
	struct intern *t = *state;
	uint32_t id = intern(t, "kube-system"), *more = calloc(20000, sizeof(*more));
	const char *p = intern_str(t, id);
	char buf[32];
	unsigned i;

	assert_non_null(more);
	for (i = 0; i < 20000; i++) {
		snprintf(buf, sizeof(buf), "x%u", i);
		more[i] = intern(t, buf);
	}
	assert_ptr_equal(intern_str(t, id), p);
	assert_string_equal(p, "kube-system");
	assert_int_equal(find(t, "kube-system"), id);
	for (i = 0; i < 20000; i++)
		intern_unref(t, more[i]);
	intern_unref(t, id);
	assert_empty(t);
	free(more);
}

/* ---- blobs -------------------------------------------------------------- */

/* Equal bytes give the same block; `created` tells the first time. */
static void test_blob_dedupe(void **state)
{
	struct intern *t = *state;
	unsigned char a[40], b[40];
	const void *p, *q, *r, *s;
	int created = -1;
	unsigned i;

	for (i = 0; i < sizeof(a); i++)
		a[i] = b[i] = (unsigned char)(i * 7);
	p = intern_blob(t, a, sizeof(a), &created);
	assert_non_null(p);
	assert_int_equal(created, 1);
	assert_int_equal((uintptr_t)p % 16, 0);
	assert_int_equal(intern_blob_len(p), 40);
	assert_int_equal(intern_blob_refs(p), 1);
	assert_memory_equal(p, a, sizeof(a));
	assert_ptr_not_equal(p, a);

	created = -1;
	q = intern_blob(t, b, sizeof(b), &created); /* same bytes, other buffer */
	assert_ptr_equal(q, p);
	assert_int_equal(created, 0);
	assert_int_equal(intern_blob_refs(p), 2);

	b[39] ^= 1; /* one bit differs */
	r = intern_blob(t, b, sizeof(b), &created);
	assert_ptr_not_equal(r, p);
	assert_int_equal(created, 1);
	s = intern_blob(t, a, sizeof(a) - 1, NULL); /* a prefix */
	assert_ptr_not_equal(s, p);
	assert_ptr_not_equal(s, r);
	assert_int_equal(intern_blob_len(s), 39);
	assert_int_equal(stats(t).blobs, 3);
	assert_true(stats(t).blob_bytes >= 40 + 40 + 39);

	/* the block is a copy: changing the source does not change it */
	a[0] ^= 0xff;
	assert_int_equal(((const unsigned char *)p)[0], 0);

	intern_blob_unref(t, r);
	intern_blob_unref(t, s);
	intern_blob_unref(t, q);
	intern_blob_unref(t, p);
	assert_empty(t);
}

/* refs counts ref/unref; the block goes at zero, and the same bytes
 * interned afterwards are new again. */
static void test_blob_refcount(void **state)
{
	struct intern *t = *state;
	static const char data[] = "tolerations+affinity";
	const void *p = intern_blob(t, data, sizeof(data), NULL);
	int created = -1;

	assert_non_null(p);
	intern_blob_ref(t, p);
	intern_blob_ref(t, p);
	assert_int_equal(intern_blob_refs(p), 3);
	intern_blob_unref(t, p);
	intern_blob_unref(t, p);
	assert_int_equal(intern_blob_refs(p), 1);
	assert_int_equal(stats(t).blobs, 1);
	intern_blob_unref(t, p);
	assert_int_equal(stats(t).blobs, 0);
	assert_int_equal(stats(t).blob_bytes, 0);
	p = intern_blob(t, data, sizeof(data), &created);
	assert_int_equal(created, 1);
	assert_int_equal(intern_blob_refs(p), 1);
	/* NULL is ignored by ref and unref */
	intern_blob_ref(t, NULL);
	intern_blob_unref(t, NULL);
	assert_int_equal(intern_blob_refs(p), 1);
	intern_blob_unref(t, p);
	assert_empty(t);
}

/* A zero-length blob is a blob like any other. */
static void test_blob_empty(void **state)
{
	struct intern *t = *state;
	static const char x = 'x';
	int created = -1;
	const void *p = intern_blob(t, &x, 0, &created), *q;

	assert_non_null(p);
	assert_int_equal(created, 1);
	assert_int_equal(intern_blob_len(p), 0);
	q = intern_blob(t, "y", 0, &created);
	assert_ptr_equal(q, p);
	assert_int_equal(created, 0);
	intern_blob_unref(t, p);
	intern_blob_unref(t, q);
	assert_empty(t);
}

struct blob_key {
	uint64_t a, b;
};

/* Every live blob among the first n is found again: same address, not
 * created (the extra reference is dropped again). */
static void check_blobs(struct intern *t, const void **p, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		struct blob_key k = {i, ~(uint64_t)i};
		const void *q;
		int created = -1;

		if (!p[i])
			continue;
		q = intern_blob(t, &k, sizeof(k), &created);
		if (q != p[i] || created != 0)
			fail_msg("blob %u: not found again (created %d)", i, created);
		intern_blob_unref(t, q);
	}
}

/* 30,000 blobs, every third dropped as we go (lookups checked along the
 * way, over the tombstones); then each live one is found again (created
 * == 0, same address) and each dropped one is new. */
static void test_blob_growth_with_tombstones(void **state)
{
	struct intern *t = *state;
	enum { N = 30000 };
	const void **p = calloc(N, sizeof(*p));
	size_t live = 0;
	unsigned i;

	assert_non_null(p);
	for (i = 0; i < N; i++) {
		struct blob_key k = {i, ~(uint64_t)i};
		int created = -1;

		p[i] = intern_blob(t, &k, sizeof(k), &created);
		assert_non_null(p[i]);
		assert_int_equal(created, 1);
		live++;
		if (i % 3 == 2) {
			intern_blob_unref(t, p[i - 1]);
			p[i - 1] = NULL;
			live--;
		}
		if (i % 997 == 0)
			check_blobs(t, p, i + 1);
	}
	assert_int_equal(stats(t).blobs, live);
	for (i = 0; i < N; i++) {
		struct blob_key k = {i, ~(uint64_t)i};
		int created = -1;
		const void *q = intern_blob(t, &k, sizeof(k), &created);

		if (p[i]) {
			if (q != p[i] || created != 0)
				fail_msg("blob %u: not found again (created %d)", i, created);
			intern_blob_unref(t, q);
			assert_int_equal(intern_blob_refs(p[i]), 1);
		} else {
			if (created != 1)
				fail_msg("blob %u: dropped but found", i);
			p[i] = q;
		}
		assert_memory_equal(p[i], &k, sizeof(k));
	}
	assert_int_equal(stats(t).blobs, N);
	for (i = 0; i < N; i++)
		intern_blob_unref(t, p[i]);
	assert_empty(t);
	free(p);
}

/* Strings and blobs are counted apart, and the byte counts move with them. */
static void test_stats_track_live_entries(void **state)
{
	struct intern *t = *state;
	struct intern_stats s0 = stats(t), s1, s2;
	uint32_t a, b;
	const void *p;

	assert_int_equal(s0.strings, 0);
	assert_int_equal(s0.blobs, 0);
	a = intern(t, "0123456789");
	b = intern(t, "0123456789"); /* same: no new bytes */
	p = intern_blob(t, "abcdefgh", 8, NULL);
	s1 = stats(t);
	assert_int_equal(s1.strings, 1);
	assert_int_equal(s1.blobs, 1);
	assert_true(s1.string_bytes >= 11);
	assert_true(s1.blob_bytes >= 8);
	assert_true(s1.table_bytes > 0);
	intern(t, "x");
	s2 = stats(t);
	assert_int_equal(s2.strings, 2);
	assert_true(s2.string_bytes >= s1.string_bytes + 2);
	assert_int_equal(s2.blob_bytes, s1.blob_bytes);
	intern_unref(t, find(t, "x"));
	assert_int_equal(stats(t).string_bytes, s1.string_bytes);
	intern_unref(t, a);
	intern_unref(t, b);
	intern_blob_unref(t, p);
	assert_empty(t);
}

/* Freeing a table that still holds entries frees them (ASan checks) and
 * clears the caller's pointer; NULL is fine. */
static void test_free_with_live_entries(void **state)
{
	struct intern *t = NULL;
	char buf[16];
	unsigned i;

	(void)state;
	intern_free(NULL);
	intern_free(&t);
	assert_int_equal(intern_new(&t), 0);
	for (i = 0; i < 1000; i++) {
		snprintf(buf, sizeof(buf), "s%u", i);
		intern(t, buf);
		assert_non_null(intern_blob(t, buf, strlen(buf), NULL));
	}
	intern_unref(t, 1);
	intern_free(&t);
	assert_null(t);
}

/* Two tables are independent: same strings, own ids and own counts. */
static void test_tables_independent(void **state)
{
	struct intern *t = *state, *u = NULL;
	uint32_t a, b;

	assert_int_equal(intern_new(&u), 0);
	intern(t, "first");
	a = intern(t, "shared");
	b = intern(u, "shared");
	assert_int_equal(a, 2);
	assert_int_equal(b, 1);
	assert_int_equal(find(u, "first"), 0);
	assert_int_equal(stats(u).strings, 1);
	intern_unref(u, b);
	assert_empty(u);
	assert_int_equal(find(t, "shared"), a);
	intern_free(&u);
	intern_unref(t, a);
	intern_unref(t, find(t, "first"));
	assert_empty(t);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_str_equal_strings_share_id),
	    T(test_str_ids_dense_from_one),
	    T(test_str_refcount_and_reuse),
	    T(test_str_id_zero),
	    T(test_str_empty_string),
	    T(test_str_length_delimited),
	    T(test_str_growth_with_tombstones),
	    T(test_str_churn_bounded),
	    T(test_str_address_stable),
	    T(test_blob_dedupe),
	    T(test_blob_refcount),
	    T(test_blob_empty),
	    T(test_blob_growth_with_tombstones),
	    T(test_stats_track_live_entries),
	    cmocka_unit_test(test_free_with_live_entries),
	    T(test_tables_independent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
