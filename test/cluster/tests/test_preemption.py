"""Preemption, reclaim and time-aware backfill with reservations, against the
local control plane (profile `small`), observed through the Kubernetes API
only.

The queues are in test/cluster/scheduler-config.yaml: e2e-prio (preemption
withinQueue LowerPriority), e2e-backfill (no defaultRuntime, no
preemption), and the cohort e2e-reclaim of e2e-lender (16 GPUs,
reclaimWithinCohort Any) and e2e-borrower (8 GPUs). A test picks its queue
with the label muster.dev/queue on its PodGroups.

Every test confines its pods to a few named GPU nodes (nodeSelector or
required node affinity on kubernetes.io/hostname), so that those nodes are
the whole "cluster" the rule is checked on; the other nodes are empty and
out of reach. Priorities come from PriorityClasses created per test (their
names carry the namespace) and deleted afterwards.

Many of the states to check are short-lived (a victim's DisruptionTarget
condition lasts until kwok completes its deletion, the preemptor's
"preempting" message until it is bound), so each test records every version
of every pod of its namespace from a watch (History) and asserts on what was
seen. Events outlive their pods and are read directly.
"""

import datetime
import re
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

import conftest
from conftest import Not, wait_for
from history import History, condition

SP = ("scheduling.x-k8s.io", "v1alpha1")
SP_LABEL = "scheduling.x-k8s.io/pod-group"
QUEUE_LABEL = "muster.dev/queue"
GANG_LABEL = "e2e.muster.dev/gang"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
RUNTIME = "muster.dev/expected-runtime"
KWOK_COMPLETE = "pod-complete.stage.kwok.x-k8s.io/delay"
HOLD = "e2e.muster.dev/hold"  # a finalizer of the tests' own: keeps an evicted pod Terminating
BIND_TIMEOUT = 60  # seconds a gang that fits (or preempts its way in) may take to be bound
SETTLE = 3  # seconds to watch that something does not happen
# How late a gang may start after the time its reservation announced.
# The announced time is status.startTime + runtime of the work it waits
# for; startTime has one-second resolution (truncated), kwok's
# pod-complete timer starts when kwok sees the pod Running (a little after
# startTime) and then writes Succeeded, Muster sees that through its watch
# and binds in its next cycle, and kwok writes the bound pod Running. Each
# step is well under a second on an idle machine; this one has 2 shared
# cores, so allow a few seconds for each.
START_SLACK = 10
RESERVATION = re.compile(r"; expected start (\S+) \(reservation on (\d+) node\(s\)\)$")


# --- objects ---------------------------------------------------------------


def affinity_to(nodes):
    term = {"matchExpressions": [{"key": HOST, "operator": "In", "values": list(nodes)}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def pod(name, gpus, gang, queue, nodes, priority_class=None, annotations=None, finalizers=None):
    """A GPU pod of PodGroup `gang` in `queue`, confined to `nodes` (a node
    name: nodeSelector; a list: required node affinity)."""
    spec = {
        "schedulerName": "muster",
        "restartPolicy": "Never",
        "tolerations": [GPU_TOLERATION],
        "containers": [{
            "name": "main",
            "image": "busybox",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi", GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
        }],
    }
    if isinstance(nodes, str):
        spec["nodeSelector"] = {HOST: nodes}
    else:
        spec["affinity"] = affinity_to(nodes)
    if priority_class:
        spec["priorityClassName"] = priority_class
    meta = {
        "name": name,
        "labels": {GANG_LABEL: gang, SP_LABEL: gang, QUEUE_LABEL: queue},
        "annotations": dict(annotations or {}),
    }
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def create_gang(core, custom, ns, name, queue, members, priority_class=None, pg_annotations=None, **pod_args):
    """A PodGroup NAME (minMember = len(members)) in `queue`, then a pod
    NAME-i per member; members is a list of (gpus, nodes). Returns the pod
    names."""
    meta = {"name": name, "labels": {QUEUE_LABEL: queue}, "annotations": dict(pg_annotations or {})}
    pg = {"apiVersion": "/".join(SP), "kind": "PodGroup", "metadata": meta, "spec": {"minMember": len(members)}}
    custom.create_namespaced_custom_object(*SP, ns, "podgroups", pg)
    names = []
    for i, (gpus, nodes) in enumerate(members):
        n = f"{name}-{i}"
        core.create_namespaced_pod(ns, pod(n, gpus, name, queue, nodes, priority_class, **pod_args))
        names.append(n)
    return names


# --- observations -----------------------------------------------------------


def until(muster, what, fn, timeout=BIND_TIMEOUT):
    return conftest.until(muster, what, fn, timeout)


def pods(core, ns, names):
    by_name = {p.metadata.name: p for p in core.list_namespaced_pod(ns).items}
    return {n: by_name.get(n) for n in names}


def all_bound(core, ns, names):
    """name -> node once every pod has one, else Not."""
    by_name = pods(core, ns, names)
    got = {n: p and p.spec.node_name for n, p in by_name.items()}
    unbound = sorted(n for n, node in got.items() if not node)
    if not unbound:
        return got
    why = {n: (c := by_name[n] and condition(by_name[n])) and c.message for n in unbound}
    return Not(f"unbound: {unbound} of {sorted(got)}; PodScheduled messages: {why}")


def all_running(core, ns, names):
    """name -> pod once every pod is Running with a startTime, else Not."""
    got = pods(core, ns, names)
    bad = {n: p and p.status.phase for n, p in got.items()
           if not (p and p.status.phase == "Running" and p.status.start_time)}
    return Not(f"not Running: {bad}") if bad else got


def all_gone(core, ns, names):
    left = sorted(n for n, p in pods(core, ns, names).items() if p)
    return Not(f"still there: {left}") if left else True


def waiting(core, ns, names, prefix, mentions=""):
    """name -> message once every pod has PodScheduled=False, reason
    Unschedulable, a message starting with `prefix` and containing
    `mentions`; else Not. Fails the test at once if one of them is bound."""
    msgs = {}
    for n, p in pods(core, ns, names).items():
        if p is None:
            return Not(f"{n} does not exist")
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


def preempted_event(core, ns, name, preemptor):
    """The Preempted Event on pod `name` naming gang NS/preemptor, else Not."""
    evs = events(core, ns, name, "Preempted")
    hit = [e for e in evs if f"{ns}/{preemptor}" in (e.message or "")]
    return hit[0] if hit else Not(f"Preempted events on {name}: {[e.message for e in evs]}")


def parse_time(s):
    """An RFC 3339 UTC time as Muster writes it (2026-11-21T20:30:00Z)."""
    assert s.endswith("Z"), f"not UTC: {s!r}"
    return datetime.datetime.fromisoformat(s[:-1] + "+00:00")


def reservation(msg):
    """(expected start as a datetime, reserved node count) from a waiting
    gang's PodScheduled message, or None when it has no known start."""
    m = RESERVATION.search(msg)
    return (parse_time(m.group(1)), int(m.group(2))) if m and m.group(1) != "unknown" else None


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc)


def disruption_by_muster(p, ns, preemptor):
    c = condition(p, "DisruptionTarget")
    return (c is not None and c.status == "True" and c.reason == "PreemptionByScheduler"
            and c.message == f"Muster: preempted by gang {ns}/{preemptor}")


def disruption_by_eviction_api(p):
    c = condition(p, "DisruptionTarget")
    return c is not None and c.status == "True" and c.reason == "EvictionByEvictionAPI"


def assert_preempted(core, history, ns, victims, preemptor):
    """Every pod in `victims` is gone; on its way out it carried Muster's
    DisruptionTarget condition naming the preemptor, was evicted through
    the Eviction API (the API server's own DisruptionTarget reason), and it
    has a Preempted Event naming the preemptor."""
    wait_for(f"victims {victims} gone", lambda: all_gone(core, ns, victims), timeout=BIND_TIMEOUT)
    # The watch behind `history` may lag the GETs of all_gone: its last
    # versions of a victim (the Eviction API's condition, the deletion)
    # can still be on their way. Every victim's DELETED event comes last.
    wait_for("the watch has seen every victim deleted", lambda: all(v in history.deleted for v in victims),
             timeout=BIND_TIMEOUT)
    for v in victims:
        seen = [condition(p, "DisruptionTarget") for _, p in history.of(v)]
        assert history.ever(v, lambda p: disruption_by_muster(p, ns, preemptor)), \
            f"{v}: no DisruptionTarget PreemptionByScheduler naming {ns}/{preemptor}; seen {seen}"
        assert history.ever(v, disruption_by_eviction_api), f"{v}: not evicted through the Eviction API; seen {seen}"
    def every_victim_has_one():
        missing = [v for v in victims if not preempted_event(core, ns, v, preemptor)]
        if not missing:
            return True
        evs = core.list_namespaced_event(ns).items
        seen = [(e.involved_object.kind, e.involved_object.name, e.reason, e.message) for e in evs
                if e.reason != "Scheduled"]
        return Not(f"no Preempted event naming {ns}/{preemptor} on {missing}; events: {seen}")

    wait_for(f"Preempted events naming {ns}/{preemptor} on {victims}", every_victim_has_one, timeout=30)


def assert_untouched(core, history, ns, placed):
    """Each pod of `placed` (name -> node) is still Running on its node, and
    was never marked for deletion or disruption."""
    now = pods(core, ns, placed)
    for n, node in placed.items():
        p = now[n]
        assert p is not None, f"{n} was deleted; it should keep running"
        assert p.spec.node_name == node and p.status.phase == "Running", (n, p.spec.node_name, p.status.phase)
        assert not history.ever(n, lambda q: q.metadata.deletion_timestamp), f"{n} was deleted"
        assert not history.ever(n, lambda q: condition(q, "DisruptionTarget")), f"{n} was marked for disruption"
        assert not events(core, ns, n, "Preempted"), f"{n} has a Preempted event"


# --- fixtures ---------------------------------------------------------------


@pytest.fixture
def ns(core, namespace):
    """The test's namespace. Afterwards the tests' finalizer is taken off
    every pod, and every pod is deleted with grace period 0 and waited for,
    so the nodes are empty again for the next test."""
    yield namespace
    for p in core.list_namespaced_pod(namespace).items:
        if p.metadata.finalizers:
            try:
                core.patch_namespaced_pod(p.metadata.name, namespace, {"metadata": {"finalizers": None}})
            except ApiException as e:
                if e.status != 404:
                    raise
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_for("the test's pods deleted", lambda: not core.list_namespaced_pod(namespace).items)


@pytest.fixture
def history(core, ns):
    h = History(core, ns)
    yield h
    h.stop()


@pytest.fixture
def priorities(admin, ns):
    """priorities(low=100, high=1000) creates a PriorityClass per name,
    called NS-NAME, and returns name -> class name; all deleted afterwards."""
    api = client.SchedulingV1Api(admin)
    made = []

    def make(**values):
        out = {}
        for key, value in values.items():
            name = f"{ns}-{key}"
            api.create_priority_class(client.V1PriorityClass(
                metadata=client.V1ObjectMeta(name=name), value=value, preemption_policy="PreemptLowerPriority"))
            made.append(name)
            out[key] = name
        return out

    yield make
    for name in made:
        try:
            api.delete_priority_class(name)
        except ApiException as e:
            if e.status != 404:
                raise


@pytest.fixture
def policy(admin):
    return client.PolicyV1Api(admin)


# --- priority preemption -----------------------------------------------------


def test_priority_preemption_evicts_a_minimal_set_of_whole_gangs(core, custom, muster, ns, history, priorities):
    """Three full nodes of queue e2e-prio (withinQueue LowerPriority):

        gpu-0004: a   8 GPUs, priority top
        gpu-0005: b   1 GPU,  priority lowest
                  c   3 GPUs, priority low
                  d-0 4 GPUs, priority low  } d: one gang of two pods
        gpu-0006: d-1 4 GPUs, priority low  }
                  e   4 GPUs, priority top

    A gang p of one 6-GPU pod, priority high (above low and lowest, below
    top), may use only these three nodes. a and e cannot be preempted, so
    gpu-0004 is out and gpu-0006 gives at most 4; on gpu-0005, 6 GPUs are
    freed only by c + d (7): {c, d} is the one minimal set (b is the
    lowest priority, but evicting it as well is not needed). So: every
    member of c and d (d-1 on gpu-0006 too) is evicted, with Muster's
    DisruptionTarget condition and a Preempted Event naming p; a, b and e
    keep running untouched; p said it was preempting 2 gangs, and is bound
    on gpu-0005."""
    n1, n2, n3 = "gpu-0004", "gpu-0005", "gpu-0006"
    pc = priorities(lowest=100, low=200, high=1000, top=2000)
    q = "e2e-prio"
    layout = {
        "a": ([(8, n1)], "top"),
        "b": ([(1, n2)], "lowest"),
        "c": ([(3, n2)], "low"),
        "d": ([(4, n2), (4, n3)], "low"),
        "e": ([(4, n3)], "top"),
    }
    gangs = {g: create_gang(core, custom, ns, g, q, members, pc[prio]) for g, (members, prio) in layout.items()}
    everyone = [n for names in gangs.values() for n in names]
    placed = until(muster, "the low and top gangs bound", lambda: all_bound(core, ns, everyone))
    until(muster, "the low and top gangs Running", lambda: all_running(core, ns, everyone))

    p = create_gang(core, custom, ns, "p", q, [(6, [n1, n2, n3])], pc["high"])
    got = until(muster, "the preemptor bound", lambda: all_bound(core, ns, p))
    assert got == {"p-0": n2}, got

    victims = gangs["c"] + gangs["d"]
    assert_preempted(core, history, ns, victims, "p")
    assert_untouched(core, history, ns, {n: placed[n] for n in gangs["a"] + gangs["b"] + gangs["e"]})
    msgs = history.messages("p-0")
    assert any(m.startswith(f"gang {ns}/p: preempting 2 gang(s) to make room") for m in msgs), msgs


# --- reclaim -----------------------------------------------------------------


def test_reclaim_brings_the_lender_back_to_its_nominal_quota(core, custom, muster, ns, history, priorities):
    """Cohort e2e-reclaim: e2e-lender (nominal 16 GPUs, reclaimWithinCohort
    Any) and e2e-borrower (nominal 8). The borrower fills gpu-0013 ..
    gpu-0015 with six gangs of 2 pods x 2 GPUs (24 GPUs, 16 above its
    nominal), two gangs per node:

        gpu-0013: b0, b1  priority 100, started first
        gpu-0014: b2, b3  priority 100, started at least 2 s later
        gpu-0015: b4, b5  priority 50

    Then the lender, using nothing, submits a gang of 2 x 8 GPUs confined
    to those nodes, with priority 0 (below all of them: only `Any` lets it
    reclaim). (The room, not the quota, is what the lender lacks here: the
    cohort sits beside e2e-default, whose unused 128 GPUs it may borrow,
    so no quota check would stop the lender; the borrower's gangs are
    still borrowed capacity, 16 GPUs above its nominal.) Two whole nodes
    must be emptied, four gangs: the lowest priority first (b4, b5), then
    the most recently started (b2, b3). Every member of those four is
    evicted with the condition and Event naming the lender's gang; b0 and
    b1 (the borrower's nominal 8) keep running; the lender is bound on
    gpu-0014 and gpu-0015, and said it was preempting 4 gangs."""
    n1, n2, n3 = "gpu-0013", "gpu-0014", "gpu-0015"
    pc = priorities(lowest=50, low=100)
    bq, lq = "e2e-borrower", "e2e-lender"
    gangs = {}

    def start(names, node, prio):
        for g in names:
            gangs[g] = create_gang(core, custom, ns, g, bq, [(2, node)] * 2, pc[prio])
        members = [n for g in names for n in gangs[g]]
        until(muster, f"{names} Running", lambda: all_running(core, ns, members))

    start(["b0", "b1"], n1, "low")
    time.sleep(2.5)  # status.startTime has one-second resolution
    start(["b2", "b3"], n2, "low")
    start(["b4", "b5"], n3, "lowest")
    borrower = {n: p.spec.node_name for n, p in pods(core, ns, [n for g in gangs.values() for n in g]).items()}

    lend = create_gang(core, custom, ns, "lend", lq, [(8, [n1, n2, n3])] * 2)
    got = until(muster, "the lender's gang bound", lambda: all_bound(core, ns, lend))
    assert sorted(got.values()) == [n2, n3], f"{got}; pods:\n{history.story()}"

    victims = [n for g in ("b2", "b3", "b4", "b5") for n in gangs[g]]
    assert_preempted(core, history, ns, victims, "lend")
    assert_untouched(core, history, ns, {n: borrower[n] for n in gangs["b0"] + gangs["b1"]})
    msgs = history.messages("lend-0")
    assert any(m.startswith(f"gang {ns}/lend: preempting 4 gang(s) to make room") for m in msgs), msgs


# --- PodDisruptionBudgets ----------------------------------------------------


def pdb(name, gang, min_available=None, max_unavailable=None):
    spec = {"selector": {"matchLabels": {GANG_LABEL: gang}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec}


def pdb_allows(policy, ns, name, expected_pods, allowed):
    """The PDB's status once the disruption controller has counted
    `expected_pods` healthy pods and allows `allowed` disruptions."""
    b = policy.read_namespaced_pod_disruption_budget(name, ns)
    s = b.status
    ok = (s and s.observed_generation == b.metadata.generation and s.expected_pods == expected_pods
          and s.current_healthy == expected_pods and s.disruptions_allowed == allowed)
    return b if ok else Not(f"status: {s}")


def test_pdb_protected_gang_is_passed_over(core, custom, muster, ns, history, priorities, policy):
    """Two full nodes of queue e2e-prio:

        gpu-0010: v1 = 2 pods x 4 GPUs, priority 100, PDB minAvailable 2
                  (disruptionsAllowed 0)
        gpu-0011: v2 = 1 pod x 8 GPUs, priority 200, PDB minAvailable 0
                  (disruptionsAllowed 1, enough for its one pod)

    (Integer minAvailable: for pods without a controller, the disruption
    controller cannot compute maxUnavailable.)

    A gang p of one 8-GPU pod, priority 1000, on either node. v1 is the
    lower priority, so without its PDB it would be the victim; with it, v2
    is evicted instead and p is bound on gpu-0011. v1 keeps running, was
    never marked for disruption and has no Preempted Event."""
    n1, n2 = "gpu-0010", "gpu-0011"
    pc = priorities(v1=100, v2=200, p=1000)
    q = "e2e-prio"
    v1 = create_gang(core, custom, ns, "v1", q, [(4, n1), (4, n1)], pc["v1"])
    v2 = create_gang(core, custom, ns, "v2", q, [(8, n2)], pc["v2"])
    placed = until(muster, "v1 and v2 bound", lambda: all_bound(core, ns, v1 + v2))
    until(muster, "v1 and v2 Running", lambda: all_running(core, ns, v1 + v2))
    policy.create_namespaced_pod_disruption_budget(ns, pdb("v1", "v1", min_available=2))
    policy.create_namespaced_pod_disruption_budget(ns, pdb("v2", "v2", min_available=0))
    wait_for("v1's PDB allows no disruption", lambda: pdb_allows(policy, ns, "v1", 2, 0))
    wait_for("v2's PDB allows one disruption", lambda: pdb_allows(policy, ns, "v2", 1, 1))

    p = create_gang(core, custom, ns, "p", q, [(8, [n1, n2])], pc["p"])
    got = until(muster, "the preemptor bound", lambda: all_bound(core, ns, p))
    assert got == {"p-0": n2}, got
    assert_preempted(core, history, ns, v2, "p")
    assert_untouched(core, history, ns, {n: placed[n] for n in v1})


# --- the freed room is held for the preemptor -------------------------------


def test_preemptor_gets_the_freed_capacity_first(core, custom, muster, ns, history, priorities):
    """On gpu-0012, victim v (one 8-GPU pod, priority 100, queue e2e-prio)
    carries a finalizer of the test's, so once evicted it stays Terminating
    until the test lets it go. Preemptor p (one 8-GPU pod, priority 1000)
    evicts it and says "preempting 1 gang(s) to make room" while it
    terminates. Then a competitor c (one 4-GPU pod, pinned there too) is
    submitted in e2e-default, the queue written first and less full, so it
    would be served before p; it fits the freed room. c is not bound while
    v terminates, nor when the test removes the finalizer and v goes: p is
    bound on gpu-0012 and c is still waiting."""
    node = "gpu-0012"
    pc = priorities(v=100, p=1000)
    v = create_gang(core, custom, ns, "v", "e2e-prio", [(8, node)], pc["v"], finalizers=[HOLD])
    until(muster, "the victim Running", lambda: all_running(core, ns, v))

    p = create_gang(core, custom, ns, "p", "e2e-prio", [(8, node)], pc["p"])
    until(muster, "the victim evicted (Terminating)",
          lambda: all(q and q.metadata.deletion_timestamp for q in pods(core, ns, v).values()))
    until(muster, "the preemptor waiting for it",
          lambda: waiting(core, ns, p, f"gang {ns}/p: preempting 1 gang(s) to make room"))

    c = create_gang(core, custom, ns, "c", "e2e-default", [(4, node)])
    until(muster, "the competitor seen and waiting", lambda: waiting(core, ns, c, f"gang {ns}/c: "))
    time.sleep(SETTLE)
    for n, q in pods(core, ns, p + c).items():
        assert not q.spec.node_name, f"{n} bound to {q.spec.node_name} while the victim terminates"
    assert pods(core, ns, v)["v-0"] is not None, "the victim went before its finalizer was removed"

    core.patch_namespaced_pod("v-0", ns, {"metadata": {"finalizers": None}})
    got = until(muster, "the preemptor bound once the victim is gone", lambda: all_bound(core, ns, p))
    assert got == {"p-0": node}, got
    assert history.deleted.get("v-0"), "the victim is not gone"
    time.sleep(SETTLE)
    assert not history.nodes_of("c-0"), f"the competitor was bound to {history.nodes_of('c-0')}"
    assert_preempted(core, history, ns, v, "p")


# --- reservations and backfill -------------------------------------------------


def reserved_start(muster, core, ns, gang, names, count, expected):
    """Wait until every member of the waiting gang says when it will start;
    check they agree, that the reservation is on `count` nodes and that the
    time is `expected` (startTime + runtime of the work it waits for, to
    the second). Returns the time."""
    msgs = until(muster, f"{gang} waiting with a reservation",
                 lambda: waiting(core, ns, names, f"gang {ns}/{gang}: ", mentions="; expected start "))
    got = {reservation(m) for m in msgs.values()}
    assert len(got) == 1 and None not in got, msgs
    start, nodes = got.pop()
    assert nodes == count, msgs
    assert abs((start - expected).total_seconds()) <= 1, f"expected start {start}, want {expected}: {msgs}"
    return start


def assert_started_by(muster, core, ns, history, names, start):
    """The gang is bound no later than START_SLACK seconds after `start`.
    Returns the time.time() at which its last member was seen bound."""
    timeout = max(0.0, (start - now_utc()).total_seconds()) + START_SLACK + 60
    deadline = time.time() + timeout
    while not all_bound(core, ns, names) and time.time() < deadline:
        muster.check()
        time.sleep(0.2)
    assert all_bound(core, ns, names), \
        f"{names} not bound {timeout - 60:.0f} s after the announced start {start}; pods:\n{history.story()}"
    bound = max(history.bound_at(n) for n in names)
    late = bound - start.timestamp()
    assert late <= START_SLACK, f"{names} bound {late:.1f} s after the announced start {start}"
    return bound


def test_big_gang_starts_by_its_reservation_while_short_jobs_backfill(core, custom, muster, ns, history):
    """Queue e2e-backfill, nodes gpu-0008 and gpu-0009. r (one 8-GPU pod
    on gpu-0008) runs for 60 s: kwok completes it after 60 s, and its
    PodGroup says muster.dev/expected-runtime "60s". Big gang b (2 x 8
    GPUs, either node) cannot fit; its members say "expected start
    <r's startTime + 60 s> (reservation on 2 node(s))". Then short job s
    (one 4-GPU pod, runtime "10" seconds on the pod, completed by kwok after
    10 s) and long job l (one 4-GPU pod, runtime "600s") arrive: s ends
    before b's start, so it is bound on the reserved, empty gpu-0009 before
    b starts; l would not end in time and is never bound (once b starts the
    nodes are full). b is bound no later than START_SLACK after the
    announced time."""
    n1, n2 = "gpu-0008", "gpu-0009"
    q = "e2e-backfill"
    runtime, short = 60, 10
    r = create_gang(core, custom, ns, "r", q, [(8, n1)], pg_annotations={RUNTIME: f"{runtime}s"},
                    annotations={KWOK_COMPLETE: f"{runtime}s"})
    r_start = until(muster, "r Running", lambda: all_running(core, ns, r))["r-0"].status.start_time

    b = create_gang(core, custom, ns, "b", q, [(8, [n1, n2])] * 2)
    start = reserved_start(muster, core, ns, "b", b, 2, r_start + datetime.timedelta(seconds=runtime))

    left = (start - now_utc()).total_seconds()
    assert left > short + 10, f"too slow to test backfill: {left:.0f} s left before b's start"
    s = create_gang(core, custom, ns, "s", q, [(4, [n1, n2])],
                    annotations={RUNTIME: str(short), KWOK_COMPLETE: f"{short}s"})
    long_job = create_gang(core, custom, ns, "l", q, [(4, [n1, n2])], annotations={RUNTIME: "600s"})
    got = until(muster, "the short job backfilled", lambda: all_bound(core, ns, s))
    assert got == {"s-0": n2}, got
    # Fails at once if the long job is bound.
    until(muster, "the long job seen and waiting", lambda: waiting(core, ns, long_job, f"gang {ns}/l: "))

    b_bound = assert_started_by(muster, core, ns, history, b, start)
    assert history.bound_at("s-0") < b_bound - 1, "the short job was not bound before the big gang"
    assert not history.nodes_of("l-0"), f"the long job was bound to {history.nodes_of('l-0')}"
    assert not all_bound(core, ns, long_job)


def test_job_without_runtime_does_not_delay_the_reservation(core, custom, muster, ns, history):
    """Queue e2e-backfill (no defaultRuntime), nodes gpu-0000 .. gpu-0002.
    r (one 8-GPU pod on gpu-0000, runtime "45" on the pod, completed by kwok
    after 45 s) runs; big gang b (2 x 8 GPUs on gpu-0000 or gpu-0001) gets
    a reservation on 2 nodes starting at r's end. Then two jobs of one
    4-GPU pod with no runtime at all arrive: `free` may use gpu-0001 or
    gpu-0002 and is bound on gpu-0002, the unreserved node; `long`, pinned
    to the reserved, empty gpu-0001, is never bound (before b starts it
    would not end in time, after that the node is full). b is bound no
    later than START_SLACK after the announced time."""
    n1, n2, n3 = "gpu-0000", "gpu-0001", "gpu-0002"
    q = "e2e-backfill"
    runtime = 45
    r = create_gang(core, custom, ns, "r", q, [(8, n1)],
                    annotations={RUNTIME: str(runtime), KWOK_COMPLETE: f"{runtime}s"})
    r_start = until(muster, "r Running", lambda: all_running(core, ns, r))["r-0"].status.start_time

    b = create_gang(core, custom, ns, "b", q, [(8, [n1, n2])] * 2)
    start = reserved_start(muster, core, ns, "b", b, 2, r_start + datetime.timedelta(seconds=runtime))

    free = create_gang(core, custom, ns, "free", q, [(4, [n2, n3])])
    long_job = create_gang(core, custom, ns, "long", q, [(4, n2)])
    got = until(muster, "the job without runtime bound", lambda: all_bound(core, ns, free))
    time.sleep(1)  # the long job's fate was decided in the same or the next cycle
    assert got == {"free-0": n3}, f"bound on a reserved node; pods:\n{history.story()}"
    # Fails at once if the long job is bound.
    until(muster, "the long job seen and waiting", lambda: waiting(core, ns, long_job, f"gang {ns}/long: "))

    assert_started_by(muster, core, ns, history, b, start)
    assert not history.nodes_of("long-0"), f"the long job was bound to {history.nodes_of('long-0')}"
    assert not all_bound(core, ns, long_job)


# --- the forecast ----------------------------------------------------------------

FORECAST = re.compile(r"; expected start (\S+) \((forecast|reservation on \d+ node\(s\))\)$")


def expected_starts(core, ns, names):
    """name -> (the expected start its PodScheduled message announces,
    "forecast" or "reservation"), once every pod of `names` waits with a
    known one; else Not."""
    got = {}
    for n, p in pods(core, ns, names).items():
        c = p and condition(p)
        m = c and c.status == "False" and FORECAST.search(c.message or "")
        if p and p.spec.node_name:
            pytest.fail(f"{n} was bound to {p.spec.node_name} before the test read its forecast")
        if not m or m.group(1) == "unknown":
            return Not(f"{n}: PodScheduled condition {c and (c.status, c.message)}")
        got[n] = (parse_time(m.group(1)), m.group(2).split()[0])
    return got


def test_ten_waiting_gangs_start_when_forecast(core, custom, muster, ns, history):
    """Queue e2e-backfill, nodes gpu-0003 .. gpu-0007. Running work r0 .. r4
    (one 8-GPU pod on each node; runtime 30, 36, 42, 48, 54 s, declared on
    the pod and completed by kwok after as long) fills them; then ten gangs
    g0 .. g9 of one 8-GPU pod that may go on any of the five (runtime 15 s
    each) wait behind it, two deep. Every one of the ten gets an expected
    start in its PodScheduled message: the first from its reservation, the
    rest from the forecast (the cycle's rules played forward over the ends
    of r0 .. r4 and of the gangs it starts itself). Each is then bound within
    START_SLACK seconds of the start announced for it, no earlier than
    START_SLACK before it; nothing else arrives."""
    nodes = [f"gpu-000{k}" for k in range(3, 8)]
    q = "e2e-backfill"
    running = []
    for k, node in enumerate(nodes):
        rt = 30 + 6 * k
        running += create_gang(core, custom, ns, f"r{k}", q, [(8, node)],
                               annotations={RUNTIME: str(rt), KWOK_COMPLETE: f"{rt}s"})
    until(muster, "the running work Running", lambda: all_running(core, ns, running))

    gangs = {}
    for k in range(10):
        gangs[f"g{k}"] = create_gang(core, custom, ns, f"g{k}", q, [(8, nodes)],
                                     annotations={RUNTIME: "15", KWOK_COMPLETE: "15s"})
    names = [n for ms in gangs.values() for n in ms]
    said = until(muster, "every gang's expected start", lambda: expected_starts(core, ns, names))
    starts = {n: t for n, (t, _) in said.items()}
    kinds = [kind for _, kind in said.values()]
    assert kinds.count("forecast") >= 8, f"too few starts from the forecast: {said}"
    first = min(starts.values())
    assert (first - now_utc()).total_seconds() > 5, f"too slow to test: the first start {first} is near"
    assert len(set(starts.values())) >= 6, f"the starts do not spread over the timeline: {starts}"

    for g, members in gangs.items():
        assert_started_by(muster, core, ns, history, members, starts[members[0]])
    late = {n: history.bound_at(n) - starts[n].timestamp() for n in names}
    print("bound after the expected start (s):", {n: round(v, 1) for n, v in late.items()})
    for n, v in late.items():
        assert v >= -START_SLACK, f"{n} bound {-v:.1f} s before its expected start {starts[n]}"
