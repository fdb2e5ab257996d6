"""Pods, Jobs, priorities and garbage collection on kwok's fake nodes."""

from kubernetes import client

from conftest import wait_for

CPU_NODE = "cpu-0000"
COMPLETE = "pod-complete.stage.kwok.x-k8s.io/delay"


def pod(name, node=None, annotations=None, priority_class=None):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, annotations=annotations),
        spec=client.V1PodSpec(
            node_name=node,
            priority_class_name=priority_class,
            scheduler_name="nobody",  # no scheduler may claim these
            containers=[client.V1Container(name="main", image="busybox")],
        ),
    )


def phase(core, ns, name):
    return core.read_namespaced_pod(name, ns).status.phase


def test_pod_given_a_node_becomes_running(core, namespace):
    core.create_namespaced_pod(namespace, pod("p", CPU_NODE))
    wait_for("pod Running", lambda: phase(core, namespace, "p") == "Running")
    st = core.read_namespaced_pod("p", namespace).status
    assert st.pod_ip and st.container_statuses[0].state.running


def test_pod_without_a_node_stays_pending(core, namespace):
    core.create_namespaced_pod(namespace, pod("p"))
    core.create_namespaced_pod(namespace, pod("q", CPU_NODE))
    wait_for("control pod Running", lambda: phase(core, namespace, "q") == "Running")
    assert phase(core, namespace, "p") == "Pending"


def test_completion_annotation_makes_a_bare_pod_succeed_after_the_delay(core, namespace):
    core.create_namespaced_pod(namespace, pod("done", CPU_NODE, {COMPLETE: "2s"}))
    core.create_namespaced_pod(namespace, pod("runs", CPU_NODE))
    wait_for("pod Running", lambda: phase(core, namespace, "done") in ("Running", "Succeeded"))
    wait_for("pod Succeeded", lambda: phase(core, namespace, "done") == "Succeeded", timeout=30)
    st = core.read_namespaced_pod("done", namespace).status
    assert st.container_statuses[0].state.terminated.reason == "Completed"
    finished = st.container_statuses[0].state.terminated.finished_at
    assert (finished - st.start_time).total_seconds() >= 1.5  # the delay was honoured
    assert phase(core, namespace, "runs") == "Running"  # no annotation: keeps running


def test_job_creates_its_pods_and_completes(admin, core, namespace):
    batch = client.BatchV1Api(admin)
    template = client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(annotations={COMPLETE: "1s"}),
        spec=client.V1PodSpec(
            node_name=CPU_NODE,
            restart_policy="Never",
            containers=[client.V1Container(name="main", image="busybox")],
        ),
    )
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="j"),
        spec=client.V1JobSpec(completions=3, parallelism=3, template=template),
    )
    batch.create_namespaced_job(namespace, job)
    wait_for("3 job pods", lambda: len(core.list_namespaced_pod(namespace, label_selector="job-name=j").items) >= 3)
    wait_for("job complete", lambda: (batch.read_namespaced_job("j", namespace).status.succeeded or 0) == 3)


def test_deleting_a_job_garbage_collects_its_pods(admin, core, namespace):
    batch = client.BatchV1Api(admin)
    template = client.V1PodTemplateSpec(
        spec=client.V1PodSpec(
            node_name=CPU_NODE,
            restart_policy="Never",
            containers=[client.V1Container(name="main", image="busybox")],
        ),
    )
    batch.create_namespaced_job(
        namespace,
        client.V1Job(metadata=client.V1ObjectMeta(name="g"), spec=client.V1JobSpec(parallelism=2, template=template)),
    )
    pods = lambda: core.list_namespaced_pod(namespace, label_selector="job-name=g").items  # noqa: E731
    wait_for("2 running job pods", lambda: sum(p.status.phase == "Running" for p in pods()) == 2)
    batch.delete_namespaced_job("g", namespace, propagation_policy="Background")
    wait_for("job pods collected", lambda: pods() == [])


def test_graceful_deletion_completes(core, namespace):
    core.create_namespaced_pod(namespace, pod("p", CPU_NODE))
    wait_for("pod Running", lambda: phase(core, namespace, "p") == "Running")
    core.delete_namespaced_pod("p", namespace, grace_period_seconds=30)
    wait_for("pod gone", lambda: core.list_namespaced_pod(namespace, field_selector="metadata.name=p").items == [])


def test_priority_class_resolves_to_spec_priority(admin, core, namespace):
    sched = client.SchedulingV1Api(admin)
    name = f"{namespace}-high"
    sched.create_priority_class(client.V1PriorityClass(metadata=client.V1ObjectMeta(name=name), value=1000))
    try:
        core.create_namespaced_pod(namespace, pod("p", priority_class=name))
        assert core.read_namespaced_pod("p", namespace).spec.priority == 1000
    finally:
        sched.delete_priority_class(name)
