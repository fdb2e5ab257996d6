"""Kubernetes' own gang API (scheduling.k8s.io/v1beta1, 1.37) end to end.

Jobs carry spec.scheduling; kube-controller-manager's Job controller
(feature gate WorkloadWithJob) turns each into a Workload and a PodGroup
and names the PodGroup in every pod's spec.schedulingGroup.podGroupName.
Muster places the pods and writes the PodGroup's PodGroupInitiallyScheduled
condition. Nothing here creates a PodGroup by hand: what the Job controller
writes is what Muster must read.

Observed through the Kubernetes Python client only (Jobs and native
PodGroups through its generic object calls, since its typed models
predate these fields).
"""

import time

import pytest
from kubernetes.client.rest import ApiException

from conftest import Not, until, wait_for
from test_preemption import priorities  # noqa: F401 (a fixture)
from test_scheduler import (GPU, GPU_TOLERATION, QUEUE_LABEL, RACK, SETTLE, SP, VOLCANO, all_bound,
                            create_gang, delete_pods, gpu_racks, node_labels, pin, pod)

BATCH = ("batch", "v1")
NATIVE = ("scheduling.k8s.io", "v1beta1")
SCHEDULED = "PodGroupInitiallyScheduled"
DISRUPTION = "DisruptionTarget"


def job(name, members, gpus, queue="e2e-default", min_count=None, topology=None, disruption=None,
        priority_class=None, nodes=None):
    """A Job of `members` Indexed pods of `gpus` GPUs for Muster, a gang of
    min_count (default: all) when min_count is not 0, in one domain of
    label `topology` when given."""
    scheduling = {"schedulingPolicy": {"gang": {"minCount": min_count or members}}}
    if topology:
        scheduling["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if disruption:
        scheduling["disruptionMode"] = {disruption: {}}
    spec = {
        "schedulerName": "muster",
        "restartPolicy": "Never",
        "tolerations": [GPU_TOLERATION],
        "containers": [{"name": "w", "image": "busybox",
                        "resources": {"requests": {"cpu": "1", GPU: str(gpus)}, "limits": {GPU: str(gpus)}}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if nodes:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}]}]}}}
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"parallelism": members, "completions": members, "completionMode": "Indexed",
                 "backoffLimit": 0, "scheduling": scheduling,
                 "template": {"metadata": {"labels": {QUEUE_LABEL: queue}}, "spec": spec}},
    }


def create_job(custom, ns, body):
    custom.create_namespaced_custom_object(*BATCH, ns, "jobs", body)


def job_pods(core, ns, name):
    """The Job's pods (label job-name), name -> node or None."""
    items = core.list_namespaced_pod(ns, label_selector=f"job-name={name}").items
    return {p.metadata.name: p.spec.node_name for p in items if not p.metadata.deletion_timestamp}


def job_bound(core, ns, name, n):
    got = job_pods(core, ns, name)
    if len(got) == n and all(got.values()):
        return got
    return Not(f"job {name}: pods {got}")


def job_podgroup(custom, ns, name):
    """The native PodGroup the Job controller made for Job `name` (the
    Job is its controller owner), or Not."""
    items = custom.list_namespaced_custom_object(*NATIVE, ns, "podgroups")["items"]
    for pg in items:
        owners = pg["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Job" and o.get("name") == name and o.get("controller") for o in owners):
            return pg
    return Not(f"no PodGroup owned by Job {name} among {[p['metadata']['name'] for p in items]}")


def scheduled_condition(custom, ns, name, status, reason, mentions="", kind=SCHEDULED):
    """The PodGroupInitiallyScheduled (or `kind`) condition of Job `name`'s
    PodGroup once it has `status`, `reason` and a message containing
    `mentions`."""
    pg = job_podgroup(custom, ns, name)
    if not pg:
        return pg
    conds = (pg.get("status") or {}).get("conditions") or []
    c = next((c for c in conds if c.get("type") == kind), None)
    if c and c["status"] == status and c["reason"] == reason and mentions in (c.get("message") or "") \
            and c.get("lastTransitionTime"):
        return c
    return Not(f"{pg['metadata']['name']}: conditions {conds}")


def occupy(core, ns, nodes, prefix="occupant"):
    """One 1-GPU pod pinned to each node; waits until all are bound."""
    names = []
    for i, node in enumerate(nodes):
        names.append(f"{prefix}-{i}")
        core.create_namespaced_pod(ns, pod(names[-1], 1, node_selector=pin(node)))
    return names


@pytest.fixture
def ns(core, custom, namespace):
    """The test's namespace. Afterwards its Jobs are deleted first (or the
    Job controller would make their pods again), then every pod with grace
    period 0, and waited for."""
    yield namespace
    for j in custom.list_namespaced_custom_object(*BATCH, namespace, "jobs")["items"]:
        try:
            custom.delete_namespaced_custom_object(*BATCH, namespace, "jobs", j["metadata"]["name"],
                                                   body={"propagationPolicy": "Background"})
        except ApiException as e:
            if e.status != 404:
                raise
    wait_for("the test's Jobs deleted",
             lambda: not custom.list_namespaced_custom_object(*BATCH, namespace, "jobs")["items"])
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_for("the test's pods deleted", lambda: not core.list_namespaced_pod(namespace).items)


def test_job_gang_binds_whole_in_one_rack(core, custom, muster, ns):
    """The first rack has one GPU taken on all but three nodes. A Job of
    4 x 8-GPU workers whose PodGroup asks for the rack key binds whole in
    the second rack, and its PodGroup says PodGroupInitiallyScheduled True."""
    racks = list(gpu_racks(core).values())
    assert len(racks) == 2, racks
    occupants = occupy(core, ns, racks[0][:-3])
    until(muster, "occupants bound", lambda: all_bound(core, ns, occupants))

    create_job(custom, ns, job("train", 4, 8, topology=RACK))
    got = until(muster, "the Job's 4 workers bound", lambda: job_bound(core, ns, "train", 4))
    in_racks = {node_labels(core, n)[RACK] for n in got.values()}
    assert len(in_racks) == 1 and set(got.values()) <= set(racks[1]), got
    until(muster, "PodGroupInitiallyScheduled True",
          lambda: scheduled_condition(custom, ns, "train", "True", "Scheduled"))


def test_job_gang_one_gpu_short_binds_nothing_and_says_why(core, custom, muster, ns):
    """Each rack has three whole nodes free and five with one GPU taken:
    eight 8-GPU nodes' worth would fit across racks, but no rack holds 4 x
    8 GPUs. Nothing is bound, the PodGroup's condition is False,
    Unschedulable, naming the rack key; freeing one node lets it bind."""
    racks = list(gpu_racks(core).values())
    occupants = occupy(core, ns, racks[0][:5] + racks[1][:5])
    until(muster, "occupants bound", lambda: all_bound(core, ns, occupants))

    create_job(custom, ns, job("short", 4, 8, topology=RACK))
    c = until(muster, "PodGroupInitiallyScheduled False naming the rack key",
              lambda: scheduled_condition(custom, ns, "short", "False", "Unschedulable",
                                          f"no {RACK} domain holds its 4 members"))
    time.sleep(SETTLE)
    assert not any(job_pods(core, ns, "short").values()), job_pods(core, ns, "short")
    assert "Insufficient nvidia.com/gpu" in c["message"], c

    delete_pods(core, ns, [occupants[0]])
    got = until(muster, "bound once a rack holds it", lambda: job_bound(core, ns, "short", 4))
    assert {node_labels(core, n)[RACK] for n in got.values()} == {node_labels(core, racks[0][0])[RACK]}, got
    c = until(muster, "PodGroupInitiallyScheduled True",
              lambda: scheduled_condition(custom, ns, "short", "True", "Scheduled"))
    assert c["message"] == "", f"True kept the waiting message: {c}"  # replaced, as kube-scheduler does


def test_three_dialects_share_one_queue(core, custom, muster, ns):
    """Queue e2e-small has 8 GPUs and no borrowing. A scheduler-plugins gang
    of 2 x 2 GPUs and a Volcano gang of 2 x 1 GPU take 6; a native gang of
    2 x 2 GPUs then waits on the queue's quota, and is bound once the
    scheduler-plugins gang is gone."""
    sp = create_gang(core, custom, ns, "sp", 2, 2, queue="e2e-small")
    vc = create_gang(core, custom, ns, "vc", 2, 1, dialect=VOLCANO, queue="e2e-small")
    until(muster, "the CRD gangs bound", lambda: all_bound(core, ns, sp + vc))

    create_job(custom, ns, job("nat", 2, 2, queue="e2e-small"))
    until(muster, "the native gang waits on the queue",
          lambda: scheduled_condition(custom, ns, "nat", "False", "Unschedulable", "queue e2e-small"))
    assert not any(job_pods(core, ns, "nat").values())

    delete_pods(core, ns, sp)
    until(muster, "the native gang bound", lambda: job_bound(core, ns, "nat", 2))


def test_higher_priority_native_gang_preempts_an_all_gang_whole(core, custom, muster, ns, priorities):
    """Queue e2e-prio preempts by priority. On two nodes a Job of 2 x 8
    GPUs, disruptionMode all, priority low, runs; a Job of 2 x 8 GPUs at
    priority high asks for the same two nodes. Both low workers are
    evicted (the gang whole), the high gang is bound there, and the low
    PodGroup says DisruptionTarget PreemptionByScheduler naming the
    preemptor while its PodGroupInitiallyScheduled stays True."""
    prio = priorities(low=100, high=1000)
    nodes = ["gpu-0014", "gpu-0015"]
    create_job(custom, ns, job("low", 2, 8, queue="e2e-prio", disruption="all",
                               priority_class=prio["low"], nodes=nodes))
    low = until(muster, "the low gang bound", lambda: job_bound(core, ns, "low", 2))
    until(muster, "the low PodGroup scheduled", lambda: scheduled_condition(custom, ns, "low", "True", "Scheduled"))

    create_job(custom, ns, job("high", 2, 8, queue="e2e-prio", priority_class=prio["high"], nodes=nodes))
    got = until(muster, "the high gang bound", lambda: job_bound(core, ns, "high", 2), timeout=60)
    assert sorted(got.values()) == nodes, got
    left = {p.metadata.name for p in core.list_namespaced_pod(ns).items if not p.metadata.deletion_timestamp}
    assert not set(low) & left, f"a low worker survived: {sorted(set(low) & left)}"
    high_pg = job_podgroup(custom, ns, "high")["metadata"]["name"]
    until(muster, "the low PodGroup's DisruptionTarget",
          lambda: scheduled_condition(custom, ns, "low", "True", "PreemptionByScheduler",
                                      f"Muster: preempted by gang {ns}/{high_pg}", kind=DISRUPTION))
    assert scheduled_condition(custom, ns, "low", "True", "Scheduled"), "PodGroupInitiallyScheduled reverted"


def test_higher_priority_native_gang_takes_one_member_of_a_single_gang(core, custom, muster, ns, priorities):
    """disruptionMode single, the API's default (the Job says nothing):
    members may be preempted one by one. A Job of 4 x 4 GPUs at priority
    low fills two nodes; a Job of 1 x 4 GPUs at priority high asks for
    them. One low worker is evicted, the other three keep running where
    they were, the high worker is bound in its place, and the low
    PodGroup is not marked disrupted (the group as a whole was not). The
    low Job (backoffLimit 4) makes the worker again, and that one waits."""
    prio = priorities(low=100, high=1000)
    nodes = ["gpu-0012", "gpu-0013"]
    low_job = job("low", 4, 4, queue="e2e-prio", priority_class=prio["low"], nodes=nodes)
    low_job["spec"]["backoffLimit"] = 4
    create_job(custom, ns, low_job)
    low = until(muster, "the low gang bound", lambda: job_bound(core, ns, "low", 4))
    until(muster, "the low PodGroup scheduled", lambda: scheduled_condition(custom, ns, "low", "True", "Scheduled"))

    create_job(custom, ns, job("high", 1, 4, queue="e2e-prio", priority_class=prio["high"], nodes=nodes))
    high = until(muster, "the high worker bound", lambda: job_bound(core, ns, "high", 1), timeout=60)
    time.sleep(SETTLE)
    now = job_pods(core, ns, "low")
    kept = {name: node for name, node in low.items() if now.get(name) == node}
    assert len(kept) == 3, f"low workers before {low}, now {now}"
    gone = (set(low) - set(kept)).pop()
    assert list(high.values()) == [low[gone]], f"high {high} is not where {gone} was ({low[gone]})"
    remade = until(muster, "the low Job makes its worker again",
                   lambda: [n for n in job_pods(core, ns, "low") if n not in low] or Not(job_pods(core, ns, "low")))
    time.sleep(SETTLE)
    assert job_pods(core, ns, "low").get(remade[0]) is None, f"the remade worker was bound: {job_pods(core, ns, 'low')}"
    pg = job_podgroup(custom, ns, "low")
    conds = {c["type"]: c for c in (pg.get("status") or {}).get("conditions") or []}
    assert DISRUPTION not in conds, f"the low PodGroup was marked as disrupted whole: {conds}"
    assert conds[SCHEDULED]["status"] == "True", conds
