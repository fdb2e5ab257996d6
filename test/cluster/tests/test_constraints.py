"""Constraints a pod states beyond resources, selectors and taints (issue
56), against the real API server.

Scheduling gates: a gated pod is not a member yet. Muster neither binds it
nor writes its status (the API server gives it PodScheduled=False, reason
SchedulingGated, as for kube-scheduler); its gang waits, counting it; once
the gates are removed, the gang is bound whole.

Constraints Muster does not apply yet (required pod affinity and
anti-affinity, DoNotSchedule topology spread, PersistentVolumeClaim and
ephemeral volumes, host ports, resource claims): the pod's gang waits with
a reason naming the field, where it used to be bound against it (a 2-pod
gang whose members repelled each other on kubernetes.io/hostname was bound
to one node).
"""

import time

from conftest import until
from test_scheduler import SETTLE, all_bound, condition, control_pod_bound, create_gang, nodes, pod, pods, waiting

GATE = [{"name": "example.com/admission"}]


def gated(p):
    p["spec"]["schedulingGates"] = GATE
    return p


def test_gated_pods_wait_untouched_until_their_gates_go(core, custom, muster, namespace):
    """Gang g (3 members, 1 GPU each): g-1 and g-2 are gated; pod solo (on
    its own) is gated too. Once a control pod created after them is bound,
    none of them is bound; solo's condition is still the API server's
    SchedulingGated; g-0's message counts the two gated members. The gates
    removed, g is bound whole and solo too."""
    ns = namespace
    custom.create_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", ns, "podgroups",
                                           {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                            "metadata": {"name": "g"}, "spec": {"minMember": 3}})
    names = ["g-0", "g-1", "g-2"]
    for i, n in enumerate(names):
        p = pod(n, gpus=1, gang="g")
        core.create_namespaced_pod(ns, gated(p) if i else p)
    core.create_namespaced_pod(ns, gated(pod("solo", gpus=1)))
    control_pod_bound(core, muster, ns)
    time.sleep(SETTLE)
    assert nodes(core, ns, names + ["solo"]) == dict.fromkeys(names + ["solo"])
    c = condition(pods(core, ns, ["solo"])["solo"])
    assert c and (c.status, c.reason) == ("False", "SchedulingGated"), c
    until(muster, "g-0's message", lambda: waiting(core, ns, ["g-0"], "gang ", "2 more wait for their schedulingGates"))

    for n in ["g-1", "g-2", "solo"]:
        core.patch_namespaced_pod(n, ns, [{"op": "remove", "path": "/spec/schedulingGates"}])
    got = until(muster, "the gang and solo bound", lambda: all_bound(core, ns, names + ["solo"]))
    assert len(got) == 4


def test_a_gang_whose_members_repel_each_other_waits_rather_than_share_a_node(core, custom, muster, namespace):
    """The issue's report: a 2-pod gang whose pods require anti-affinity
    on kubernetes.io/hostname was bound with both pods on one node. Until
    Muster applies pod anti-affinity, the gang waits and says why; a pod
    that only prefers anti-affinity (a score) is bound."""
    ns = namespace
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"e2e.muster.dev/gang": "apart"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    preferred = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}
    names = create_gang(core, custom, ns, "apart", 2, 1, affinity=anti)
    core.create_namespaced_pod(ns, pod("prefers", gpus=1, affinity=preferred))
    port = pod("port", cpu="100m")
    port["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    core.create_namespaced_pod(ns, port)
    control_pod_bound(core, muster, ns)
    until(muster, "prefers bound", lambda: all_bound(core, ns, ["prefers"]))
    msgs = until(muster, "the gang's message",
                 lambda: waiting(core, ns, names, "gang ", "states podAntiAffinity (required), which Muster does not apply"))
    assert all("apart-" in m for m in msgs.values()), msgs
    until(muster, "port's message", lambda: waiting(core, ns, ["port"], "gang ", "states hostPort"))
    time.sleep(SETTLE)
    assert nodes(core, ns, names + ["port"]) == dict.fromkeys(names + ["port"]), "bound against the pods' spec"
