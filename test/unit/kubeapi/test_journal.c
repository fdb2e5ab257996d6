/*
 * kubeapi/journal: what a held cache keeps of its informers' callbacks:
 * in order, each object as JSON text that parses back to the same
 * object, no more bytes than its cap (a record past it is refused whole,
 * the journal unchanged; an applied one no longer counts), and nothing
 * left after a clear.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kubeapi/journal.h"

static cJSON *pod(const char *name)
{
	cJSON *o = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(o, "metadata");

	cJSON_AddStringToObject(md, "namespace", "ns");
	cJSON_AddStringToObject(md, "name", name);
	return o;
}

static void test_records_keep_order_and_parse_back(void **state)
{
	struct kubeapi__journal j = {.max_bytes = 1 << 20};
	cJSON *a = pod("a"), *b = pod("b"), *back;

	(void)state;
	assert_int_equal(kubeapi__journal_add(&j, 1, KUBEAPI__J_SYNC_BEGIN, NULL), 0);
	assert_int_equal(kubeapi__journal_add(&j, 1, KUBEAPI__J_UPSERT, a), 0);
	assert_int_equal(kubeapi__journal_add(&j, 3, KUBEAPI__J_REMOVE, b), 0);
	assert_int_equal(kubeapi__journal_add(&j, 1, KUBEAPI__J_SYNC_END, NULL), 0);
	assert_int_equal(j.n, 4);
	assert_int_equal(j.v[0].op, KUBEAPI__J_SYNC_BEGIN);
	assert_null(j.v[0].text);
	assert_int_equal(j.v[2].store, 3);
	assert_int_equal(j.v[2].op, KUBEAPI__J_REMOVE);
	assert_int_equal(j.bytes, j.v[1].len + j.v[2].len);
	back = cJSON_ParseWithLength(j.v[1].text, j.v[1].len);
	assert_true(cJSON_Compare(back, a, true));
	cJSON_Delete(back);
	kubeapi__journal_clear(&j);
	assert_int_equal(j.n + j.bytes, 0);
	assert_null(j.v);
	assert_int_equal(j.max_bytes, 1 << 20);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* Past the cap a record is refused and nothing changes; a record that
 * fits still goes in, so the caller decides what a refusal means. */
static void test_the_cap_refuses_a_record_whole(void **state)
{
	cJSON *a = pod("a"), *big = pod("a-name-long-enough-to-go-past-the-cap");
	char *text = cJSON_PrintUnformatted(a);
	struct kubeapi__journal j = {.max_bytes = strlen(text) + 10};

	(void)state;
	assert_int_equal(kubeapi__journal_add(&j, 0, KUBEAPI__J_UPSERT, a), 0);
	assert_int_equal(kubeapi__journal_add(&j, 0, KUBEAPI__J_UPSERT, big), -EMSGSIZE);
	assert_int_equal(kubeapi__journal_add(&j, 0, KUBEAPI__J_UPSERT, a), -EMSGSIZE);
	assert_int_equal(j.n, 1);
	assert_int_equal(j.bytes, strlen(text));
	assert_int_equal(kubeapi__journal_add(&j, 0, KUBEAPI__J_SYNC_END, NULL), 0);
	assert_int_equal(j.n, 2);
	/* An applied record no longer counts: the next one fits again. */
	kubeapi__journal_done(&j, 0);
	assert_null(j.v[0].text);
	assert_int_equal(j.bytes, 0);
	assert_int_equal(kubeapi__journal_add(&j, 0, KUBEAPI__J_UPSERT, a), 0);
	assert_int_equal(j.n, 3);
	kubeapi__journal_clear(&j);
	cJSON_free(text);
	cJSON_Delete(a);
	cJSON_Delete(big);
}

/* Growth past the first allocation keeps every record. */
static void test_many_records(void **state)
{
	struct kubeapi__journal j = {.max_bytes = 64 << 20};
	cJSON *a = pod("p");

	(void)state;
	for (int i = 0; i < 5000; i++)
		assert_int_equal(kubeapi__journal_add(&j, (unsigned)i % 9, KUBEAPI__J_UPSERT, a),
		                 0);
	assert_int_equal(j.n, 5000);
	assert_int_equal(j.v[4999].store, 4999 % 9);
	assert_int_equal(j.bytes, 5000 * j.v[0].len);
	kubeapi__journal_clear(&j);
	cJSON_Delete(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_records_keep_order_and_parse_back),
	    cmocka_unit_test(test_the_cap_refuses_a_record_whole),
	    cmocka_unit_test(test_many_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
