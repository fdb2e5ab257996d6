/*
 * What an answer to a write about one pod means (kubeapi/writes.h:
 * kubeapi_bind_answer, kubeapi_pod_answer), from the Status bodies
 * kube-apiserver 1.37 writes; test/integration/kubeapi/test_writes.c
 * checks the same against the real server.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kubeapi/writes.h"

static struct kubeapi_response answer(long status, int err, const char *body)
{
	return (struct kubeapi_response){
	    .status = status, .err = err, .body = body, .len = body ? strlen(body) : 0};
}

#define BOUND_TO_N1                                                                                \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"           \
	"\"Operation cannot be fulfilled on pods/binding \\\"p\\\": pod p is already assigned "    \
	"to node \\\"n1\\\"\",\"reason\":\"Conflict\",\"code\":409}"
#define UID_CONFLICT                                                                               \
	"{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Operation cannot be "           \
	"fulfilled on pods \\\"p\\\": Precondition failed: UID in precondition: "                  \
	"00000000-0000-0000-0000-000000000000, UID in object meta: "                               \
	"5b1f2d0e-1111-2222-3333-444455556666\",\"reason\":\"Conflict\",\"code\":409}"
#define UID_IMMUTABLE                                                                              \
	"{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Pod \\\"p\\\" is "              \
	"invalid: metadata.uid: Invalid value: \\\"00000000-0000-0000-0000-000000000000\\\": "     \
	"field is immutable\",\"reason\":\"Invalid\",\"code\":422}"
#define MODIFIED                                                                                   \
	"{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Operation cannot be "           \
	"fulfilled on pods \\\"p\\\": the object has been modified; please apply your changes "    \
	"to the latest version and try again\",\"reason\":\"Conflict\",\"code\":409}"

static void test_bind_answers(void **state)
{
	struct kubeapi_response r;

	(void)state;
	r = answer(201, 0, "{}");
	assert_int_equal(kubeapi_bind_answer(&r, "n1"), KUBEAPI_ANSWER_DONE);
	r = answer(409, 0, BOUND_TO_N1);
	assert_int_equal(kubeapi_bind_answer(&r, "n1"), KUBEAPI_ANSWER_BOUND);
	assert_int_equal(kubeapi_bind_answer(&r, "n2"), KUBEAPI_ANSWER_GONE);
	/* A node whose name is a prefix of another's is not it. */
	assert_int_equal(kubeapi_bind_answer(&r, "n"), KUBEAPI_ANSWER_GONE);
	r = answer(409, 0, UID_CONFLICT);
	assert_int_equal(kubeapi_bind_answer(&r, "n1"), KUBEAPI_ANSWER_GONE);
	r = answer(404, 0, "{\"kind\":\"Status\",\"code\":404}");
	assert_int_equal(kubeapi_bind_answer(&r, "n1"), KUBEAPI_ANSWER_GONE);
}

/* What says nothing about the pod keeps its room: retried. */
static void test_bind_answers_that_keep_the_room(void **state)
{
	static const long statuses[] = {401, 403, 400, 422, 429, 500, 503};
	struct kubeapi_response r;

	(void)state;
	for (size_t k = 0; k < sizeof(statuses) / sizeof(statuses[0]); k++) {
		r = answer(statuses[k], 0, "{\"kind\":\"Status\"}");
		assert_int_equal(kubeapi_bind_answer(&r, "n1"), KUBEAPI_ANSWER_RETRY);
		assert_int_equal(kubeapi_pod_answer(&r), KUBEAPI_ANSWER_RETRY);
	}
	r = answer(0, -ECONNREFUSED, NULL);
	assert_int_equal(kubeapi_bind_answer(&r, "n1"), KUBEAPI_ANSWER_RETRY);
	r = answer(0, -ECANCELED, NULL);
	assert_int_equal(kubeapi_bind_answer(&r, "n1"), KUBEAPI_ANSWER_RETRY);
	/* A 409 that is not the server's Status (a proxy's page): unknown. */
	r = answer(409, 0, "<html>conflict</html>");
	assert_int_equal(kubeapi_bind_answer(&r, "n1"), KUBEAPI_ANSWER_RETRY);
	/* 404 with a transport error is no answer. */
	r = answer(404, -EIO, "");
	assert_int_equal(kubeapi_bind_answer(&r, "n1"), KUBEAPI_ANSWER_RETRY);
}

static void test_pod_answers(void **state)
{
	struct kubeapi_response r;

	(void)state;
	r = answer(200, 0, "{}");
	assert_int_equal(kubeapi_pod_answer(&r), KUBEAPI_ANSWER_DONE);
	r = answer(201, 0, "{}"); /* an Eviction's */
	assert_int_equal(kubeapi_pod_answer(&r), KUBEAPI_ANSWER_DONE);
	r = answer(409, 0, MODIFIED);
	assert_int_equal(kubeapi_pod_answer(&r), KUBEAPI_ANSWER_CHANGED);
	r = answer(409, 0, UID_CONFLICT);
	assert_int_equal(kubeapi_pod_answer(&r), KUBEAPI_ANSWER_GONE);
	r = answer(404, 0, "");
	assert_int_equal(kubeapi_pod_answer(&r), KUBEAPI_ANSWER_GONE);
	r = answer(422, 0, UID_IMMUTABLE);
	assert_int_equal(kubeapi_pod_answer(&r), KUBEAPI_ANSWER_GONE);
}

static void test_answer_names(void **state)
{
	(void)state;
	assert_string_equal(kubeapi_answer_name(KUBEAPI_ANSWER_DONE), "done");
	assert_string_equal(kubeapi_answer_name(KUBEAPI_ANSWER_RETRY), "retry");
	assert_string_equal(kubeapi_answer_name((enum kubeapi_answer)99), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bind_answers),
	    cmocka_unit_test(test_bind_answers_that_keep_the_room),
	    cmocka_unit_test(test_pod_answers),
	    cmocka_unit_test(test_answer_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
