/*
 * kubeapi/writes against the real local control plane: every write is made
 * through Muster's engine and its effect is read back with kubectl.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kubeapi/writes.h"
#include "test/integration/itest.h"

struct fixture {
	struct itest t;
	char ns[64];
};

static long raw(struct fixture *fx, enum kubeapi_method m, const char *path, const char *body)
{
	return itest_call(&fx->t, m, path, body);
}

/* Wait for a typed write submitted with itest_done. */
#define WAIT(fx, call) itest_wait(&(fx)->t, (call))

/* The last answer, as the engine gave it, for kubeapi_*_answer(). */
static struct kubeapi_response last(struct fixture *fx)
{
	return (struct kubeapi_response){.status = fx->t.status,
	                                 .err = fx->t.err,
	                                 .body = fx->t.body,
	                                 .len = strlen(fx->t.body)};
}

/* kubectl's view: the output of `kubectl get ... -o jsonpath=...`. */
static char *kubectl(struct fixture *fx, const char *args)
{
	static char out[8192];
	char cmd[1200];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s -n %s %s", fx->t.kubectl, fx->ns, args);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	pclose(p);
	return out;
}

static void create_pod(struct fixture *fx, const char *name, const char *node, const char *labels)
{
	char path[200], body[1024];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", fx->ns);
	snprintf(body, sizeof(body),
	         "{\"metadata\":{\"name\":\"%s\",\"labels\":%s},\"spec\":{\"schedulerName\":"
	         "\"nobody\",%s%s%s\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}",
	         name, labels ? labels : "{}", node ? "\"nodeName\":\"" : "", node ? node : "",
	         node ? "\"," : "");
	assert_int_equal(raw(fx, KUBEAPI_POST, path, body), 201);
}

static void pod_uid(struct fixture *fx, const char *name, char *uid, size_t len)
{
	char args[200];

	snprintf(args, sizeof(args), "get pod %s -o jsonpath={.metadata.uid}", name);
	snprintf(uid, len, "%s", kubectl(fx, args));
	assert_int_equal(strlen(uid), 36);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char body[128];

	assert_non_null(fx);
	itest_open(&fx->t);
	snprintf(fx->ns, sizeof(fx->ns), "writes-%d", (int)getpid());
	snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"}}", fx->ns);
	assert_int_equal(raw(fx, KUBEAPI_POST, "/api/v1/namespaces", body), 201);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char path[128];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s", fx->ns);
	raw(fx, KUBEAPI_DELETE, path, NULL);
	itest_close(&fx->t);
	free(fx);
	return 0;
}

static void test_bind_sets_node_once(void **state)
{
	struct fixture *fx = *state;
	char uid[64];
	struct kubeapi_target t = {fx->ns, "b1", uid, NULL};

	create_pod(fx, "b1", NULL, NULL);
	pod_uid(fx, "b1", uid, sizeof(uid));
	assert_int_equal(WAIT(fx, kubeapi_bind(fx->t.http, &t, "cpu-0001", itest_done, &fx->t)),
	                 201);
	assert_string_equal(kubectl(fx, "get pod b1 -o jsonpath={.spec.nodeName}"), "cpu-0001");
	/* A second bind is refused and not retried. */
	assert_int_equal(WAIT(fx, kubeapi_bind(fx->t.http, &t, "cpu-0002", itest_done, &fx->t)),
	                 409);
	assert_int_equal(fx->t.attempts, 1);
	assert_string_equal(kubectl(fx, "get pod b1 -o jsonpath={.spec.nodeName}"), "cpu-0001");
	/* What the server's words mean (kubeapi_bind_answer): bound to
	 * another node than this bind's is never for this bind; bound to
	 * this bind's node is an earlier attempt that went through. */
	{
		struct kubeapi_response r = last(fx);

		assert_int_equal(kubeapi_bind_answer(&r, "cpu-0002"), KUBEAPI_ANSWER_GONE);
		assert_int_equal(kubeapi_bind_answer(&r, "cpu-0001"), KUBEAPI_ANSWER_BOUND);
	}
}

static void test_bind_with_a_stale_uid_is_refused(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_target t = {fx->ns, "b2", "00000000-0000-0000-0000-000000000000", NULL};

	create_pod(fx, "b2", NULL, NULL);
	assert_int_equal(WAIT(fx, kubeapi_bind(fx->t.http, &t, "cpu-0001", itest_done, &fx->t)),
	                 409);
	assert_string_equal(kubectl(fx, "get pod b2 -o jsonpath={.spec.nodeName}"), "");
	{
		struct kubeapi_response r = last(fx);

		assert_int_equal(kubeapi_bind_answer(&r, "cpu-0001"), KUBEAPI_ANSWER_GONE);
	}
	/* A pod that is not there: 404, never for this pod either. */
	t.name = "b2-never-created";
	assert_int_equal(WAIT(fx, kubeapi_bind(fx->t.http, &t, "cpu-0001", itest_done, &fx->t)),
	                 404);
	{
		struct kubeapi_response r = last(fx);

		assert_int_equal(kubeapi_bind_answer(&r, "cpu-0001"), KUBEAPI_ANSWER_GONE);
	}
}

/* The vGPU annotations' patch lands only on the pod as the decision saw
 * it: a stale resourceVersion is refused (409: changed, read it again)
 * and so is another uid (422, metadata.uid is immutable: gone), and
 * neither changes the pod. */
static void test_annotation_patch_preconditions(void **state)
{
	struct fixture *fx = *state;
	static const char *const keys[] = {"volcano.sh/vgpu-node"};
	static const char *const values[] = {"gpu-0001"};
	char uid[64], rv[32], old[32];
	struct kubeapi_target t = {fx->ns, "a1", uid, rv};
	const char *shown = "get pod a1 -o jsonpath={.metadata.annotations}";
	struct kubeapi_response r;

	create_pod(fx, "a1", NULL, NULL);
	pod_uid(fx, "a1", uid, sizeof(uid));
	snprintf(old, sizeof(old), "%s",
	         kubectl(fx, "get pod a1 -o jsonpath={.metadata.resourceVersion}"));
	snprintf(rv, sizeof(rv), "%llu", strtoull(old, NULL, 10) - 1);
	assert_int_equal(WAIT(fx, kubeapi_patch_pod_annotations(fx->t.http, &t, keys, values, 1,
	                                                        itest_done, &fx->t)),
	                 409);
	r = last(fx);
	assert_int_equal(kubeapi_pod_answer(&r), KUBEAPI_ANSWER_CHANGED);
	assert_null(strstr(kubectl(fx, shown), "vgpu-node"));
	snprintf(rv, sizeof(rv), "%s", old);
	t.uid = "00000000-0000-0000-0000-000000000000";
	assert_int_equal(WAIT(fx, kubeapi_patch_pod_annotations(fx->t.http, &t, keys, values, 1,
	                                                        itest_done, &fx->t)),
	                 422);
	r = last(fx);
	assert_int_equal(kubeapi_pod_answer(&r), KUBEAPI_ANSWER_GONE);
	assert_null(strstr(kubectl(fx, shown), "vgpu-node"));
	t.uid = uid;
	assert_int_equal(WAIT(fx, kubeapi_patch_pod_annotations(fx->t.http, &t, keys, values, 1,
	                                                        itest_done, &fx->t)),
	                 200);
	r = last(fx);
	assert_int_equal(kubeapi_pod_answer(&r), KUBEAPI_ANSWER_DONE);
	assert_non_null(strstr(kubectl(fx, shown), "\"volcano.sh/vgpu-node\":\"gpu-0001\""));
}

static void test_names_that_could_reshape_a_path_are_refused(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_target bad = {fx->ns, "x/../y", NULL, NULL},
	                      bad2 = {"../kube-system", "y", NULL, NULL};

	assert_int_equal(kubeapi_bind(fx->t.http, &bad, "cpu-0001", itest_done, &fx->t), -EINVAL);
	assert_int_equal(kubeapi_bind(fx->t.http, &bad2, "cpu-0001", itest_done, &fx->t), -EINVAL);
	assert_int_equal(kubeapi_bind(fx->t.http, &(struct kubeapi_target){fx->ns, "y", NULL, NULL},
	                              "node?x=1", itest_done, &fx->t),
	                 -EINVAL);
}

static void test_condition_patch_is_what_kubectl_shows(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_target t = {fx->ns, "c1", NULL, NULL};
	const char *msg = "gang t/train-7: 7 of 8 members fit; queue \"team-a\" at 16/16 gpu";

	create_pod(fx, "c1", NULL, NULL);
	assert_int_equal(WAIT(fx, kubeapi_patch_pod_condition(fx->t.http, &t, "PodScheduled",
	                                                      "False", "Unschedulable", msg,
	                                                      time(NULL), itest_done, &fx->t)),
	                 200);
	assert_string_equal(
	    kubectl(fx, "get pod c1 -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")]"
	                ".reason}'"),
	    "Unschedulable");
	assert_string_equal(
	    kubectl(fx, "get pod c1 -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")]"
	                ".message}'"),
	    msg);
}

/* The resourceVersion precondition: a patch computed from an old version
 * of the pod is refused (409) and changes nothing; one from the current
 * version lands and leaves a later version. */
static void test_condition_patch_with_a_stale_resource_version_is_refused(void **state)
{
	struct fixture *fx = *state;
	char rv[32], old[32];
	struct kubeapi_target t = {fx->ns, "c2", NULL, rv};
	const char *shown =
	    "get pod c2 -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")]"
	    ".message}'";

	create_pod(fx, "c2", NULL, NULL);
	snprintf(old, sizeof(old), "%s",
	         kubectl(fx, "get pod c2 -o jsonpath={.metadata.resourceVersion}"));
	snprintf(rv, sizeof(rv), "%llu", strtoull(old, NULL, 10) - 1);
	assert_int_equal(WAIT(fx, kubeapi_patch_pod_condition(fx->t.http, &t, "PodScheduled",
	                                                      "False", "Unschedulable", "stale",
	                                                      time(NULL), itest_done, &fx->t)),
	                 409);
	assert_string_equal(kubectl(fx, shown), "");
	snprintf(rv, sizeof(rv), "%s", old);
	assert_int_equal(WAIT(fx, kubeapi_patch_pod_condition(fx->t.http, &t, "PodScheduled",
	                                                      "False", "Unschedulable", "current",
	                                                      time(NULL), itest_done, &fx->t)),
	                 200);
	/* What status.c relies on: a write that succeeded against V leaves a
	 * version past V. */
	assert_true(strtoull(kubectl(fx, "get pod c2 -o jsonpath={.metadata.resourceVersion}"),
	                     NULL, 10) > strtoull(old, NULL, 10));
	assert_string_equal(kubectl(fx, shown), "current");
	/* The same version again is now old. */
	assert_int_equal(WAIT(fx, kubeapi_patch_pod_condition(fx->t.http, &t, "PodScheduled",
	                                                      "False", "Unschedulable", "late",
	                                                      time(NULL), itest_done, &fx->t)),
	                 409);
	assert_string_equal(kubectl(fx, shown), "current");
}

static void test_podgroup_status_in_both_dialects(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_target t = {fx->ns, "pg", NULL, NULL};
	char path[256];

	snprintf(path, sizeof(path), "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups",
	         fx->ns);
	assert_int_equal(
	    raw(fx, KUBEAPI_POST, path,
	        "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":"
	        "\"PodGroup\",\"metadata\":{\"name\":\"pg\"},\"spec\":{\"minMember\":2}}"),
	    201);
	assert_int_equal(
	    WAIT(fx, kubeapi_patch_podgroup_status(fx->t.http, KUBEAPI_PG_SCHEDULER_PLUGINS, &t,
	                                           "{\"phase\":\"Scheduling\",\"running\":1}",
	                                           itest_done, &fx->t)),
	    200);
	assert_string_equal(
	    kubectl(fx, "get podgroups.scheduling.x-k8s.io pg -o jsonpath={.status.phase}/"
	                "{.status.running}"),
	    "Scheduling/1");
	snprintf(path, sizeof(path), "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups",
	         fx->ns);
	assert_int_equal(
	    raw(fx, KUBEAPI_POST, path,
	        "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":"
	        "\"PodGroup\",\"metadata\":{\"name\":\"pg\"},\"spec\":{\"minMember\":2}}"),
	    201);
	assert_int_equal(WAIT(fx, kubeapi_patch_podgroup_status(
	                              fx->t.http, KUBEAPI_PG_VOLCANO, &t,
	                              "{\"phase\":\"Inqueue\",\"running\":0}", itest_done, &fx->t)),
	                 200);
	assert_string_equal(kubectl(fx, "get podgroups.scheduling.volcano.sh pg -o "
	                                "jsonpath={.status.phase}"),
	                    "Inqueue");
}

static void test_event_is_listed_with_its_reason_and_note(void **state)
{
	struct fixture *fx = *state;
	char uid[64];
	struct kubeapi_target t = {fx->ns, "e1", uid, NULL};
	struct kubeapi_event ev = {&t,
	                           "Warning",
	                           "FailedScheduling",
	                           "Scheduling",
	                           "0/20 nodes fit: 16 lack nvidia.com/gpu",
	                           "muster.dev/scheduler",
	                           "muster-test"};
	struct timespec now;
	char want[128];

	create_pod(fx, "e1", NULL, NULL);
	pod_uid(fx, "e1", uid, sizeof(uid));
	snprintf(want, sizeof(want), "FailedScheduling/e1/%s", uid);
	clock_gettime(CLOCK_REALTIME, &now);
	if (WAIT(fx, kubeapi_event_create(fx->t.http, &ev, now, itest_done, &fx->t)) != 201)
		fail_msg("event: %ld %s", fx->t.status, fx->t.body);
	assert_string_equal(kubectl(fx, "get events.events.k8s.io -o "
	                                "jsonpath={.items[0].reason}/{.items[0].regarding.name}/"
	                                "{.items[0].regarding.uid}"),
	                    want);
	assert_string_equal(kubectl(fx, "get events.events.k8s.io -o jsonpath={.items[0].note}"),
	                    "0/20 nodes fit: 16 lack nvidia.com/gpu");
}

static void test_lease_create_renew_and_conflict(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_lease l = {.ns = fx->ns, .name = "muster", .holder = "a", .duration_s = 15};
	char rv[64], *p;

	clock_gettime(CLOCK_REALTIME, &l.acquired);
	l.renewed = l.acquired;
	assert_int_equal(WAIT(fx, kubeapi_lease_put(fx->t.http, &l, itest_done, &fx->t)), 201);
	assert_int_equal(
	    WAIT(fx, kubeapi_lease_get(fx->t.http, fx->ns, "muster", itest_done, &fx->t)), 200);
	p = strstr(fx->t.body, "\"resourceVersion\":\"");
	assert_non_null(p);
	snprintf(rv, sizeof(rv), "%s", p + 19);
	rv[strcspn(rv, "\"")] = '\0';
	l.resource_version = rv;
	l.holder = "b";
	l.transitions = 1;
	assert_int_equal(WAIT(fx, kubeapi_lease_put(fx->t.http, &l, itest_done, &fx->t)), 200);
	assert_string_equal(kubectl(fx, "get lease muster -o jsonpath={.spec.holderIdentity}"),
	                    "b");
	/* The same resourceVersion again is stale now. */
	l.holder = "c";
	assert_int_equal(WAIT(fx, kubeapi_lease_put(fx->t.http, &l, itest_done, &fx->t)), 409);
	assert_string_equal(kubectl(fx, "get lease muster -o jsonpath={.spec.holderIdentity}"),
	                    "b");
}

static void test_eviction_blocked_by_a_pdb_then_allowed_without(void **state)
{
	struct fixture *fx = *state;
	struct kubeapi_target guarded = {fx->ns, "g1", NULL, NULL},
	                      free_pod = {fx->ns, "f1", NULL, NULL};
	char path[256];
	int i;

	create_pod(fx, "g1", "cpu-0002", "{\"app\":\"guarded\"}");
	create_pod(fx, "f1", "cpu-0002", "{\"app\":\"free\"}");
	snprintf(path, sizeof(path), "/apis/policy/v1/namespaces/%s/poddisruptionbudgets", fx->ns);
	assert_int_equal(raw(fx, KUBEAPI_POST, path,
	                     "{\"metadata\":{\"name\":\"pdb\"},\"spec\":{\"minAvailable\":1,"
	                     "\"selector\":{\"matchLabels\":{\"app\":\"guarded\"}}}}"),
	                 201);
	/* Wait for the disruption controller to see the running pod. */
	for (i = 0; i < 100; i++) {
		if (!strcmp(kubectl(fx, "get pdb pdb -o jsonpath={.status.currentHealthy}"), "1"))
			break;
		usleep(200000);
	}
	assert_int_equal(WAIT(fx, kubeapi_evict(fx->t.http, &guarded, -1, itest_done, &fx->t)),
	                 429);
	assert_true(kubeapi_eviction_blocked(
	    &(struct kubeapi_response){.status = 429, .body = fx->t.body}));
	assert_int_equal(fx->t.attempts, 1); /* not retried blindly */
	assert_string_equal(kubectl(fx, "get pod g1 -o jsonpath={.metadata.name}"), "g1");
	assert_int_equal(WAIT(fx, kubeapi_evict(fx->t.http, &free_pod, 0, itest_done, &fx->t)),
	                 201);
	assert_false(kubeapi_eviction_blocked(
	    &(struct kubeapi_response){.status = 201, .body = fx->t.body}));
	for (i = 0; i < 100; i++) {
		if (!strstr(kubectl(fx, "get pods -o name"), "pod/f1"))
			break;
		usleep(200000);
	}
	assert_null(strstr(kubectl(fx, "get pods -o name"), "pod/f1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bind_sets_node_once),
	    cmocka_unit_test(test_bind_with_a_stale_uid_is_refused),
	    cmocka_unit_test(test_annotation_patch_preconditions),
	    cmocka_unit_test(test_names_that_could_reshape_a_path_are_refused),
	    cmocka_unit_test(test_condition_patch_is_what_kubectl_shows),
	    cmocka_unit_test(test_condition_patch_with_a_stale_resource_version_is_refused),
	    cmocka_unit_test(test_podgroup_status_in_both_dialects),
	    cmocka_unit_test(test_event_is_listed_with_its_reason_and_note),
	    cmocka_unit_test(test_lease_create_renew_and_conflict),
	    cmocka_unit_test(test_eviction_blocked_by_a_pdb_then_allowed_without),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
