"""`muster run` against the local control plane (profile `small`).

Gangs of both PodGroup dialects are bound whole or not at all; placement
respects resources, taints, nodeSelector, required node affinity, cordoned
nodes and racks; queue quotas hold; other schedulers' pods are left alone;
an API server killed in the middle of binding leaves no gang half bound.

Each test gets its own Muster (the `muster` fixture in conftest.py: config
test/cluster/scheduler-config.yaml, log in
$MUSTER_CLUSTER_DIR/logs/muster-<test>.log) and a fresh namespace whose pods
are deleted with grace period 0 at the end, so the next test finds the GPU
nodes empty again. Tests that need particular nodes name them (gpu-0003,
gpu-0013, gpu-0014), each a different one.

"Muster has looked at pod X and left it" is shown with a control pod created
after X: the pod watch delivers events in order, so once the control pod is
bound, a cycle has run with X in Muster's cache.

The test that kills the API server stays last in the file: if it goes
wrong, the tests before it have already run.
"""

import json
import os
import signal
import time
import urllib.request

import pytest
from kubernetes.client.rest import ApiException

from conftest import Not, cluster_dir, ctl, until, wait_for
from history import Modified

SP = ("scheduling.x-k8s.io", "v1alpha1")  # scheduler-plugins dialect
VOLCANO = ("scheduling.volcano.sh", "v1beta1")
SP_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_LABEL = "muster.dev/queue"
RACK = "muster.dev/rack"
GANG_LABEL = "e2e.muster.dev/gang"  # the tests' own: finds a gang's pods in either dialect
GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
SETTLE = 3  # seconds to watch that something does not happen


# --- objects ---------------------------------------------------------------


def pod(name, gpus=0, cpu="1", gang=None, dialect=SP, queue=None, node_selector=None, affinity=None,
        tolerate=True, scheduler="muster"):
    """A pod for Muster (or `scheduler`); in a gang when `gang` names one.
    GPU pods tolerate the GPU nodes' taint unless tolerate=False."""
    labels, annotations = {}, {}
    if gang:
        labels[GANG_LABEL] = gang
        if dialect == SP:
            labels[SP_LABEL] = gang
        else:
            annotations[VOLCANO_ANNOTATION] = gang
    if queue:
        labels[QUEUE_LABEL] = queue
    resources = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    if gpus:
        resources["requests"][GPU] = str(gpus)
        resources["limits"] = {GPU: str(gpus)}
    spec = {
        "schedulerName": scheduler,
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox", "resources": resources}],
    }
    if tolerate:
        spec["tolerations"] = [GPU_TOLERATION]
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": spec,
    }


def podgroup(name, min_member, dialect=SP, queue=None):
    """A PodGroup; its queue is a label (scheduler-plugins) or spec.queue (Volcano)."""
    group, version = dialect
    meta, spec = {"name": name}, {"minMember": min_member}
    if queue and dialect == SP:
        meta["labels"] = {QUEUE_LABEL: queue}
    elif queue:
        spec["queue"] = queue
    return {"apiVersion": f"{group}/{version}", "kind": "PodGroup", "metadata": meta, "spec": spec}


def create_gang(core, custom, ns, name, members, gpus, dialect=SP, queue=None, min_member=None, **pod_args):
    """A PodGroup (minMember = members unless given), then its pods
    NAME-0 .. NAME-(members-1). Returns the pod names."""
    custom.create_namespaced_custom_object(
        *dialect, ns, "podgroups", podgroup(name, min_member or members, dialect, queue)
    )
    names = [f"{name}-{i}" for i in range(members)]
    for n in names:
        core.create_namespaced_pod(ns, pod(n, gpus, gang=name, dialect=dialect, **pod_args))
    return names


def pin(node):
    return {"kubernetes.io/hostname": node}


def delete_pods(core, ns, names):
    """Delete with grace period 0 (kwok frees the node at once) and wait until gone."""
    for n in names:
        try:
            core.delete_namespaced_pod(n, ns, grace_period_seconds=0)
        except ApiException as e:
            if e.status != 404:
                raise
    left = lambda: set(names) & {p.metadata.name for p in core.list_namespaced_pod(ns).items}  # noqa: E731
    wait_for(f"pods {names} deleted", lambda: not left())


# --- observations -----------------------------------------------------------


def pods(core, ns, names):
    by_name = {p.metadata.name: p for p in core.list_namespaced_pod(ns).items}
    return {n: by_name[n] for n in names}


def nodes(core, ns, names):
    """name -> spec.nodeName (None while unbound)."""
    return {n: p.spec.node_name for n, p in pods(core, ns, names).items()}


def all_bound(core, ns, names):
    """name -> node once every pod has one, else Not."""
    got = nodes(core, ns, names)
    unbound = sorted(n for n, node in got.items() if not node)
    return Not(f"unbound: {unbound} of {sorted(got)}") if unbound else got


def condition(p, kind="PodScheduled"):
    return next((c for c in p.status.conditions or [] if c.type == kind), None)


def waiting(core, ns, names, prefix, mentions=""):
    """name -> message once every pod has PodScheduled=False, reason
    Unschedulable, a message starting with `prefix` and containing
    `mentions`; else Not. Fails the test at once if one of them is bound."""
    msgs = {}
    for n, p in pods(core, ns, names).items():
        if p.spec.node_name:
            pytest.fail(f"{n} was bound to {p.spec.node_name}; it should wait")
        c = condition(p)
        ok = c and c.status == "False" and c.reason == "Unschedulable" and (c.message or "").startswith(prefix)
        if not ok or mentions not in c.message:
            return Not(f"{n}: PodScheduled condition {c and (c.status, c.reason, c.message)}")
        msgs[n] = c.message
    return msgs


def events(core, ns, name, reason):
    sel = f"involvedObject.kind=Pod,involvedObject.name={name},reason={reason}"
    return core.list_namespaced_event(ns, field_selector=sel).items


def podgroup_phase_in(custom, ns, name, phases, dialect=SP):
    """The PodGroup's status.phase once it is one of `phases`, else Not."""
    pg = custom.get_namespaced_custom_object(*dialect, ns, "podgroups", name)
    phase = (pg.get("status") or {}).get("phase")
    return phase if phase in phases else Not(f"status: {pg.get('status')}")


def node_labels(core, name):
    return core.read_node(name).metadata.labels


def gpu_racks(core):
    """rack label -> sorted GPU node names."""
    racks = {}
    for n in core.list_node(label_selector="muster.dev/pool=gpu").items:
        racks.setdefault(n.metadata.labels[RACK], []).append(n.metadata.name)
    return {r: sorted(names) for r, names in sorted(racks.items())}


def control_pod_bound(core, muster, ns, name="control"):
    """Create a small CPU pod and wait until Muster binds it: a cycle has run
    with every pod created before it in the cache."""
    core.create_namespaced_pod(ns, pod(name, cpu="100m"))
    until(muster, f"control pod {name} bound", lambda: all_bound(core, ns, [name]))


# --- fixtures ---------------------------------------------------------------


@pytest.fixture
def ns(core, namespace):
    """The test's namespace; its pods are deleted with grace period 0 at the
    end and waited for, so their resources are free for the next test."""
    yield namespace
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_for("the test's pods deleted", lambda: not core.list_namespaced_pod(namespace).items)


# --- gangs -------------------------------------------------------------------


def test_gang_that_fits_is_bound_whole(core, custom, muster, ns):
    """4 pods x 2 GPUs, minMember 4, queue e2e-a: all four get a node, and the
    PodGroup's status.phase says Scheduled or Running."""
    names = create_gang(core, custom, ns, "fits", 4, 2, queue="e2e-a")
    got = until(muster, "gang bound", lambda: all_bound(core, ns, names))
    assert len(got) == 4
    until(muster, "PodGroup phase Scheduled or Running",
          lambda: podgroup_phase_in(custom, ns, "fits", ("Scheduled", "Running")))


def test_gang_is_not_bound_before_min_member_pods_exist(core, custom, muster, ns):
    """minMember 4 with 3 pods: none is bound after a cycle has seen them; the
    fourth pod makes the gang whole and all four are bound."""
    names = [f"partial-{i}" for i in range(4)]
    custom.create_namespaced_custom_object(*SP, ns, "podgroups", podgroup("partial", 4))
    for n in names[:3]:
        core.create_namespaced_pod(ns, pod(n, 1, gang="partial"))
    control_pod_bound(core, muster, ns)
    time.sleep(SETTLE)
    assert nodes(core, ns, names[:3]) == dict.fromkeys(names[:3])
    core.create_namespaced_pod(ns, pod(names[3], 1, gang="partial"))
    until(muster, "gang bound once whole", lambda: all_bound(core, ns, names))


def test_gang_one_gpu_short_binds_nothing_and_says_why(core, custom, muster, ns):
    """gpu-0003 holds a 3-GPU pod; a gang of 2 x 3 GPUs pinned to gpu-0003
    needs 6 of the 5 left. No member is bound; each has PodScheduled=False,
    reason Unschedulable, message "gang <ns>/short: 1 of 2 members fit...",
    and a FailedScheduling event with that message, not repeated every
    cycle. Once the occupant is deleted the gang is bound whole on gpu-0003."""
    node = "gpu-0003"
    core.create_namespaced_pod(ns, pod("occupant", 3, node_selector=pin(node)))
    assert until(muster, "occupant bound", lambda: all_bound(core, ns, ["occupant"])) == {"occupant": node}

    names = create_gang(core, custom, ns, "short", 2, 3, node_selector=pin(node))
    # While only the first pod exists the gang waits for members; the
    # message that counts is the one about fitting.
    msgs = until(muster, "members Unschedulable, 1 of 2 fitting",
                 lambda: waiting(core, ns, names, f"gang {ns}/short: ", mentions="1 of 2 members fit"))
    until(muster, "a FailedScheduling event per member with its message",
          lambda: all(any(e.message == msgs[n] for e in events(core, ns, n, "FailedScheduling")) for n in names))
    counts = {n: len(events(core, ns, n, "FailedScheduling")) for n in names}
    time.sleep(2 * SETTLE)
    assert nodes(core, ns, names) == dict.fromkeys(names), "a member was bound one GPU short"
    after = {n: [e.message for e in events(core, ns, n, "FailedScheduling")] for n in names}
    assert {n: len(m) for n, m in after.items()} == counts, f"an event per cycle: {after}"

    delete_pods(core, ns, ["occupant"])
    got = until(muster, "gang bound after the occupant left", lambda: all_bound(core, ns, names))
    assert set(got.values()) == {node}


def test_a_waiting_message_that_only_drifts_is_rewritten_at_most_every_10_s(core, custom, muster, ns):
    """A Volcano gang of 3 x 8 GPUs may use gpu-0004 .. gpu-0006; a 1-GPU
    occupant on gpu-0004 makes it wait, "2 of 3 members fit". gpu-0005 is
    then cordoned and uncordoned six times, so the message flips between
    1 and 2 of 3 fitting: the same headline, other numbers. Each member's
    condition, and the PodGroup's, is rewritten at most once per 10 s of
    that beyond the first (kube-scheduler's longest backoff), not at every
    flip (which made 30 times kube-scheduler's writes in bench-native's
    teardown); and once the flips stop the members say what is true."""
    hosts = ["gpu-0004", "gpu-0005", "gpu-0006"]
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": hosts}]}
    core.create_namespaced_pod(ns, pod("occupant", 1, node_selector=pin(hosts[0])))
    until(muster, "occupant bound", lambda: all_bound(core, ns, ["occupant"]))
    names = create_gang(core, custom, ns, "g", 3, 8, dialect=VOLCANO, affinity={
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}})
    until(muster, "members waiting, 2 of 3 fitting",
          lambda: waiting(core, ns, names, f"gang {ns}/g: ", mentions="2 of 3 members fit"))

    pods_seen = Modified(core.list_namespaced_pod, ns)
    groups_seen = Modified(custom.list_namespaced_custom_object, *VOLCANO, ns, "podgroups")
    planned = set()  # the headlines the planner gave the gang meanwhile (/debug/gangs)

    def headline():
        gangs = json.load(urllib.request.urlopen(muster.debug_url() + "/debug/gangs", timeout=10))
        return {g["message"].split(";")[0] for g in gangs["gangs"] if g["name"] == "g"}

    start = time.monotonic()
    try:
        for _ in range(6):
            for cordoned in (True, False):
                core.patch_node(hosts[1], {"spec": {"unschedulable": cordoned}})
                # A cycle or two with it: at least 0.6 s, and until the
                # planner has said what the flip makes true (a loaded
                # machine's watch may bring both flips of a pair at once,
                # and one cycle then sees neither), 5 s at most.
                want = f"gang {ns}/g: {1 if cordoned else 2} of 3 members fit"
                flip = time.monotonic()
                time.sleep(0.6)
                planned |= headline()
                while want not in planned and time.monotonic() - flip < 5:
                    time.sleep(0.1)
                    planned |= headline()
    finally:
        core.patch_node(hosts[1], {"spec": {"unschedulable": False}})
    took = time.monotonic() - start
    time.sleep(1)
    pod_writes, group_writes = pods_seen.stop(), groups_seen.stop()
    most = int(took // 10) + 2
    print(f"flips took {took:.1f} s; planned {planned}; modifications: pods {pod_writes}, "
          f"PodGroups {group_writes}; at most {most}")
    assert {f"gang {ns}/g: 1 of 3 members fit", f"gang {ns}/g: 2 of 3 members fit"} <= planned, planned
    assert all(pod_writes.get(n, 0) <= most for n in names), (pod_writes, most)
    assert group_writes.get("g", 0) <= most, (group_writes, most)

    until(muster, "members say 2 of 3 fit again",
          lambda: waiting(core, ns, names, f"gang {ns}/g: ", mentions="2 of 3 members fit"))


def test_gang_that_waits_past_its_timeout_says_so_and_backs_off(core, custom, muster, ns):
    """A scheduler-plugins gang of 2 x 9 GPUs (no node has 9) whose PodGroup
    says scheduleTimeoutSeconds: 2 times out: a GangTimeout Event on its
    first member names the timeout, the 10 s backoff and why it waits; the
    members then say they are backing off."""
    body = podgroup("late", 2)
    body["spec"]["scheduleTimeoutSeconds"] = 2
    custom.create_namespaced_custom_object(*SP, ns, "podgroups", body)
    names = ["late-0", "late-1"]
    for n in names:
        core.create_namespaced_pod(ns, pod(n, 9, gang="late"))

    def timed_out():
        got = [e.message for n in names for e in events(core, ns, n, "GangTimeout")]
        return got or Not("no GangTimeout event yet")

    got = until(muster, "a GangTimeout event", timed_out)
    assert len(got) == 1, got
    assert got[0].startswith(f"gang {ns}/late timed out after 2 s waiting; next try in 10 s: "), got
    assert "Insufficient nvidia.com/gpu" in got[0], got
    until(muster, "members backing off", lambda: waiting(core, ns, names, f"gang {ns}/late: ", mentions="timed out"))


def test_volcano_podgroup_is_bound_whole(core, custom, muster, ns):
    """A Volcano PodGroup (minMember 3, spec.queue e2e-a) and 3 pods x 2 GPUs
    carrying the group-name annotation: all bound, status.phase Inqueue or
    Running."""
    names = create_gang(core, custom, ns, "vc", 3, 2, dialect=VOLCANO, queue="e2e-a")
    until(muster, "Volcano gang bound", lambda: all_bound(core, ns, names))
    until(muster, "Volcano PodGroup phase Inqueue or Running",
          lambda: podgroup_phase_in(custom, ns, "vc", ("Inqueue", "Running"), VOLCANO))


def test_single_pod_is_bound_with_a_scheduled_event(core, muster, ns):
    """A pod without a group is a gang of one: bound, with a Scheduled event."""
    core.create_namespaced_pod(ns, pod("solo", 1))
    until(muster, "single pod bound", lambda: all_bound(core, ns, ["solo"]))
    until(muster, "Scheduled event", lambda: events(core, ns, "solo", "Scheduled"))


def test_unknown_queue_is_not_scheduled_and_named(core, custom, muster, ns):
    """A PodGroup labelled with a queue that does not exist is not bound, and
    its members' message names the queue."""
    names = create_gang(core, custom, ns, "lost", 1, 1, queue="no-such-queue")
    until(muster, "members Unschedulable naming the queue",
          lambda: waiting(core, ns, names, f"gang {ns}/lost: ", mentions="no-such-queue"))
    control_pod_bound(core, muster, ns)
    assert nodes(core, ns, names) == dict.fromkeys(names)


# --- placement ---------------------------------------------------------------


def test_gang_of_whole_nodes_lands_in_one_rack(core, custom, muster, ns):
    """The first rack has one GPU taken on all but three nodes, so a gang of
    4 x 8 GPUs fits only in the second rack; filling nodes in name order
    would straddle both. All four land in one rack, none on an occupied node."""
    racks = gpu_racks(core)
    assert len(racks) == 2, racks
    first = next(iter(racks.values()))
    occupied = first[:-3]
    for i, node in enumerate(occupied):
        core.create_namespaced_pod(ns, pod(f"occupant-{i}", 1, node_selector=pin(node)))
    occupants = [f"occupant-{i}" for i in range(len(occupied))]
    until(muster, "occupants bound", lambda: all_bound(core, ns, occupants))

    names = create_gang(core, custom, ns, "wide", 4, 8)
    got = until(muster, "gang of whole nodes bound", lambda: all_bound(core, ns, names))
    in_racks = {node: node_labels(core, node)[RACK] for node in got.values()}
    assert len(set(in_racks.values())) == 1, f"gang spread over racks: {in_racks}"
    assert not set(got.values()) & set(occupied), got
    assert len(set(got.values())) == 4, got


def test_taints_are_respected(core, muster, ns):
    """GPU nodes carry nvidia.com/gpu=present:NoSchedule. Without the
    toleration, a GPU pod and a pod too big for a CPU node (70 CPUs; CPU
    nodes have 64) are never bound; a small CPU pod goes to an untainted
    node. The big pod with the toleration is bound to a GPU node."""
    core.create_namespaced_pod(ns, pod("gpu-untolerated", 1, tolerate=False))
    core.create_namespaced_pod(ns, pod("big-untolerated", cpu="70", tolerate=False))
    core.create_namespaced_pod(ns, pod("small-untolerated", cpu="1", tolerate=False))
    core.create_namespaced_pod(ns, pod("big-tolerated", cpu="70"))
    got = until(muster, "tolerated and small pods bound",
                lambda: all_bound(core, ns, ["big-tolerated", "small-untolerated"]))
    assert GPU in core.read_node(got["big-tolerated"]).status.allocatable
    taints = core.read_node(got["small-untolerated"]).spec.taints or []
    assert not [t for t in taints if t.key == GPU], f"untolerated pod on {got['small-untolerated']}"
    never = ["gpu-untolerated", "big-untolerated"]
    until(muster, "untolerated pods Unschedulable", lambda: waiting(core, ns, never, f"gang {ns}/"))
    time.sleep(SETTLE)
    assert nodes(core, ns, never) == dict.fromkeys(never)


def test_node_selector_is_respected(core, muster, ns):
    """A pod pinned to gpu-0013 by nodeSelector is bound there (the emptiest
    node by name order would be gpu-0000)."""
    core.create_namespaced_pod(ns, pod("pinned", 2, node_selector=pin("gpu-0013")))
    assert until(muster, "pinned pod bound", lambda: all_bound(core, ns, ["pinned"])) == {"pinned": "gpu-0013"}


def test_required_node_affinity_is_respected(core, custom, muster, ns):
    """A gang of 2 x 4 GPUs with required node affinity to the second rack
    lands there."""
    rack = list(gpu_racks(core))[1]
    term = {"matchExpressions": [{"key": RACK, "operator": "In", "values": [rack]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    names = create_gang(core, custom, ns, "affine", 2, 4, affinity=affinity)
    got = until(muster, "gang with affinity bound", lambda: all_bound(core, ns, names))
    assert {node_labels(core, node)[RACK] for node in got.values()} == {rack}, got


def test_cordoned_node_is_not_used(core, muster, ns):
    """A pod pinned to cordoned gpu-0014 waits (Unschedulable); uncordoned,
    the node takes it."""
    node = "gpu-0014"
    core.patch_node(node, {"spec": {"unschedulable": True}})
    try:
        core.create_namespaced_pod(ns, pod("on-cordoned", 1, node_selector=pin(node)))
        until(muster, "pod Unschedulable", lambda: waiting(core, ns, ["on-cordoned"], f"gang {ns}/"))
        control_pod_bound(core, muster, ns)
        time.sleep(SETTLE)
        assert nodes(core, ns, ["on-cordoned"]) == {"on-cordoned": None}
    finally:
        core.patch_node(node, {"spec": {"unschedulable": False}})
    got = until(muster, "pod bound once uncordoned", lambda: all_bound(core, ns, ["on-cordoned"]))
    assert got == {"on-cordoned": node}


# --- queues ------------------------------------------------------------------


def test_queue_quota_holds_until_a_gang_leaves(core, custom, muster, ns):
    """Queue e2e-small has 8 GPUs and may not borrow. Of two gangs of
    2 x 4 GPUs in it, one is bound whole, the other binds nothing and its
    message names the queue; once the first is deleted, the second binds."""
    gangs = {g: create_gang(core, custom, ns, g, 2, 4, queue="e2e-small") for g in ("q1", "q2")}

    def one_bound_one_waiting():
        bound = [g for g, names in gangs.items() if all_bound(core, ns, names)]
        if len(bound) != 1:
            return Not(f"gangs bound: {bound}")
        other = next(g for g in gangs if g not in bound)
        if not waiting(core, ns, gangs[other], f"gang {ns}/{other}: ", mentions="e2e-small"):
            return Not(f"{other}: {waiting(core, ns, gangs[other], '')!r}")
        return bound[0], other

    first, second = until(muster, "one gang bound, the other waiting on e2e-small", one_bound_one_waiting)
    time.sleep(SETTLE)
    assert nodes(core, ns, gangs[second]) == dict.fromkeys(gangs[second]), "quota exceeded"

    delete_pods(core, ns, gangs[first])
    custom.delete_namespaced_custom_object(*SP, ns, "podgroups", first)
    until(muster, f"{second} bound after {first} left", lambda: all_bound(core, ns, gangs[second]))


# --- other schedulers --------------------------------------------------------


def test_pods_of_other_schedulers_are_left_alone(core, custom, muster, ns):
    """Pods for default-scheduler (which does not run here), one of them in
    a PodGroup, get no node, no condition and no event from Muster."""
    core.create_namespaced_pod(ns, pod("foreign", 1, scheduler="default-scheduler"))
    foreign = ["foreign"] + create_gang(core, custom, ns, "foreign-gang", 1, 1, scheduler="default-scheduler")
    control_pod_bound(core, muster, ns)
    time.sleep(SETTLE)
    for n, p in pods(core, ns, foreign).items():
        assert p.spec.node_name is None, f"{n} bound to {p.spec.node_name}"
        assert not p.status.conditions, f"{n}: {p.status.conditions}"
        sel = f"involvedObject.kind=Pod,involvedObject.name={n}"
        assert not core.list_namespaced_event(ns, field_selector=sel).items, f"events on {n}"


# --- failures ----------------------------------------------------------------


def kill_apiserver():
    """SIGKILL the API server, then let ctl forget it. Not `ctl stop`: on
    SIGTERM the server keeps serving open connections until it is killed 10 s
    later, so Muster's binds would all go through."""
    with open(os.path.join(cluster_dir(), "run", "kube-apiserver.pid")) as f:
        os.kill(int(f.read()), signal.SIGKILL)
    ctl("stop", "kube-apiserver")


def test_apiserver_killed_mid_cycle_leaves_no_gang_half_bound(core, custom, muster, ns):
    """Muster, once running, is paused (SIGSTOP) while six gangs of 4 x 2
    GPUs (both dialects) are submitted, then resumed, and the API server is
    killed at once, so the cycle that places them binds against a dead
    server. The server comes back 3 s later. Muster survives, and every gang
    ends up bound whole; a gang left partly bound fails the test with its
    count."""
    control_pod_bound(core, muster, ns)  # synced and cycling before the pause
    gangs = {}
    muster.proc.send_signal(signal.SIGSTOP)
    try:
        for i in range(6):
            dialect = SP if i % 2 == 0 else VOLCANO
            gangs[f"r{i}"] = create_gang(core, custom, ns, f"r{i}", 4, 2, dialect=dialect)
    finally:
        muster.proc.send_signal(signal.SIGCONT)
    time.sleep(0.02)  # let it start binding
    kill_apiserver()
    time.sleep(3)
    muster.check()
    ctl("start", "kube-apiserver")

    def every_gang_whole():
        got = {g: nodes(core, ns, names) for g, names in gangs.items()}
        counts = {g: sum(1 for node in placed.values() if node) for g, placed in got.items()}
        return counts if all(c == 4 for c in counts.values()) else Not(f"members bound per gang: {counts}")

    until(muster, "every gang bound whole after the restart", every_gang_whole, timeout=120)
