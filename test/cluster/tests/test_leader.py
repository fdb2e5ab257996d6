"""Leader election: two `muster run --leader-elect` replicas against the
local control plane, observed through the Kubernetes API (the Lease's
holderIdentity, pods' nodeName, the Scheduled Events' reportingInstance)
and each replica's own log.

Each test starts its two replicas itself, on a Lease named `muster` in the
test's own namespace, with a short lease: duration 6 s, renew deadline 4 s,
retry period 1 s. Each has a distinct --identity (which Muster also uses as
the Events' reportingInstance) and its own log,
$MUSTER_CLUSTER_DIR/logs/muster-<test>-<a|b>.log.

What must hold:
  - exactly one replica leads, and a standby never takes a lease that is
    being renewed;
  - only the leader binds: every pod gets exactly one Scheduled Event, from
    the instance that led at the time, and the standby logs no bind before
    it logs "became leader";
  - after kill -9 of the leader, nothing is bound until the standby holds
    the lease, which it takes no earlier than a lease duration minus a retry
    period after the kill (it waited the lease out) and no later than a
    lease duration plus two retry periods (its last sighting of the old
    renew can lag the kill by one, its tick the expiry by another);
  - SIGTERM of the leader releases the lease before it exits (holder ""),
    so the standby takes over in about a retry period, well under the lease
    duration;
  - a leader paused past its renew deadline (SIGSTOP) while the standby
    takes over exits with status 1 as soon as it runs again, having bound
    nothing;
  - a leader whose cycles take twice its renew deadline (as at 100,000
    nodes; --cycle-delay-ms stands in for the work) keeps its lease, binds,
    and answers its debug server during a cycle: the planner runs on a
    thread of its own.

A replica started from a binary whose standby also scheduled would bind
some pods itself (two reportingInstances, or a bind logged before "became
leader"), which these checks catch.
"""

import os
import re
import signal
import subprocess
import time
import urllib.request
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from conftest import CLUSTER, TOP, Muster, Not, cluster_dir, kept_state_held, wait_for

DURATION, RENEW, RETRY = 6, 4, 1  # seconds
LEASE = "muster"
SP = ("scheduling.x-k8s.io", "v1alpha1")
SP_LABEL = "scheduling.x-k8s.io/pod-group"
BIND_TIMEOUT = 30
# What a replica logs when it binds (scheduler/bind.c, run.c): a gang's
# "binding pod P to N" line, or a cycle's "... N binds, ..." summary (not
# the "N binds sent" of its last words).
BIND_LINE = re.compile(r"binding pod | [1-9]\d* binds, ")


# --- replicas ----------------------------------------------------------------


@pytest.fixture
def coordination(admin):
    return client.CoordinationV1Api(admin)


@pytest.fixture
def ns(core, namespace):
    """The test's namespace (and the Lease's); its pods are deleted with
    grace period 0 at the end."""
    yield namespace
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_for("the test's pods deleted", lambda: not core.list_namespaced_pod(namespace).items)


@pytest.fixture
def replicas(cluster, ns, request):
    """start(tag) runs one `muster run --leader-elect` replica on the Lease
    ns/muster; each gets SIGCONT and SIGTERM at the end (those still
    running), then SIGKILL after 15 s."""
    binary = os.path.join(TOP, os.environ.get("BUILD", "build"), "muster")
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is missing: run make first")
    logs = os.path.join(cluster_dir(), "logs")
    os.makedirs(logs, exist_ok=True)
    test = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    started = []

    def start(tag, *extra):
        identity = f"muster-{tag}-{uuid.uuid4().hex[:6]}"
        log = os.path.join(logs, f"muster-{test}-{tag}.log")
        argv = [binary, "run", "--kubeconfig", cluster["KUBECONFIG"],
                "--config", os.path.join(CLUSTER, "scheduler-config.yaml"),
                "--leader-elect", "--lease-namespace", ns, "--lease-name", LEASE,
                "--identity", identity, "--lease-duration", str(DURATION),
                "--renew-deadline", str(RENEW), "--retry-period", str(RETRY), "--check-state", *extra]
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        m = Muster(proc, log)
        m.identity = identity
        started.append(m)
        return m

    yield start
    for m in started:
        if m.proc.poll() is None:
            m.proc.send_signal(signal.SIGCONT)
        m.stop()
    for m in started:
        kept_state_held(m)


def holder(coordination, ns):
    """The Lease's holderIdentity ("" when released), None while it does not exist."""
    try:
        return coordination.read_namespaced_lease(LEASE, ns).spec.holder_identity or ""
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def log_lines(m):
    with open(m.log, errors="replace") as f:
        return f.read().splitlines()


def logged(m, text):
    return any(text in line for line in log_lines(m))


def elect(coordination, ns, a, b):
    """Wait until one of a, b holds the lease and the other has seen it
    there; (leader, standby, when it was first seen leading)."""

    def one():
        a.check()
        b.check()
        h = holder(coordination, ns)
        return h if h in (a.identity, b.identity) else Not(f"holder {h!r}")

    leader_id = wait_for("a replica to take the lease", one, timeout=60)
    since = time.monotonic()
    leader, standby = (a, b) if leader_id == a.identity else (b, a)
    wait_for(f"{standby.log} to stand by for {leader.identity}",
             lambda: standby.check() or logged(standby, f"held by {leader.identity}; standing by"),
             timeout=30)
    return leader, standby, since


def took_over(coordination, ns, new, watch=(), core=None):
    """Wait until `new` holds the lease, failing if a pod of `watch` is
    bound before; monotonic time when it was first seen holding it."""

    def probe():
        new.check()
        h = holder(coordination, ns)
        if h == new.identity:
            return time.monotonic()
        early = sorted(n for n, node in nodes(core, ns, watch).items() if node) if watch else []
        if early:
            pytest.fail(f"{early} bound while the lease was still {h!r}'s, not {new.identity}'s")
        return Not(f"holder {h!r}")

    return wait_for(f"{new.identity} to take the lease", probe, timeout=DURATION + 4 * RETRY + 20,
                    interval=0.1)


def binds_before_leading(m):
    """The bind lines m logged before its first "became leader" line."""
    lines = log_lines(m)
    became = next((i for i, line in enumerate(lines) if "became leader" in line), len(lines))
    return [line for line in lines[:became] if BIND_LINE.search(line)]


# --- gangs -------------------------------------------------------------------


def create_gang(core, custom, ns, name, members=3):
    """A scheduler-plugins PodGroup (minMember = members) and its small CPU
    pods NAME-0 ..; the pod names."""
    group, version = SP
    custom.create_namespaced_custom_object(group, version, ns, "podgroups", {
        "apiVersion": f"{group}/{version}", "kind": "PodGroup",
        "metadata": {"name": name}, "spec": {"minMember": members}})
    names = [f"{name}-{i}" for i in range(members)]
    for n in names:
        core.create_namespaced_pod(ns, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": n, "labels": {SP_LABEL: name}},
            "spec": {"schedulerName": "muster", "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}})
    return names


def nodes(core, ns, names):
    by_name = {p.metadata.name: p.spec.node_name for p in core.list_namespaced_pod(ns).items}
    return {n: by_name.get(n) for n in names}


def all_bound(core, ns, names, *alive):
    for m in alive:
        m.check()
    unbound = sorted(n for n, node in nodes(core, ns, names).items() if not node)
    return Not(f"unbound: {unbound}") if unbound else True


def scheduled_by(core, ns, names):
    """pod -> the reportingInstance of each of its Scheduled Events, once
    every pod has at least one (else Not)."""
    got = {n: [] for n in names}
    for e in core.list_namespaced_event(ns, field_selector="reason=Scheduled").items:
        if e.involved_object.name in got:
            got[e.involved_object.name].append(e.reporting_instance)
    missing = sorted(n for n, v in got.items() if not v)
    return Not(f"no Scheduled Event yet for {missing}") if missing else got


def assert_bound_once_by(core, ns, who):
    """who: identity -> pod names. Each pod has exactly one Scheduled Event,
    from that identity (read again after a settle, so a late second bind
    would show)."""
    names = [n for pods in who.values() for n in pods]
    wait_for("Scheduled Events for every pod", lambda: scheduled_by(core, ns, names), timeout=30)
    time.sleep(2)
    got = scheduled_by(core, ns, names)
    want = {n: [identity] for identity, pods in who.items() for n in pods}
    assert got == want, f"Scheduled Events by pod (reportingInstance): {got}, want {want}"


# --- tests -------------------------------------------------------------------


def test_only_the_leader_binds_and_the_standby_takes_over_after_kill_9(
        core, custom, coordination, replicas, ns):
    a, b = replicas("a"), replicas("b")
    leader, standby, since = elect(coordination, ns, a, b)

    first = create_gang(core, custom, ns, "g1") + create_gang(core, custom, ns, "g2")
    wait_for("g1, g2 bound", lambda: all_bound(core, ns, first, leader, standby), timeout=BIND_TIMEOUT)
    # A standby never takes a lease that is being renewed.
    time.sleep(max(0.0, since + DURATION + 2 * RETRY - time.monotonic()))
    assert holder(coordination, ns) == leader.identity
    assert not logged(standby, "became leader"), standby.tail()
    assert_bound_once_by(core, ns, {leader.identity: first})

    leader.proc.kill()
    leader.proc.wait()
    killed = time.monotonic()
    second = create_gang(core, custom, ns, "g3") + create_gang(core, custom, ns, "g4")
    took = took_over(coordination, ns, standby, second, core) - killed
    print(f"kill -9: the standby took the lease {took:.2f} s after the kill "
          f"(lease {DURATION} s, retry {RETRY} s)")
    assert took >= DURATION - RETRY - 0.5, f"took over {took:.2f} s after the kill: it did not wait the lease out"
    assert took <= DURATION + 2 * RETRY + 1, f"took over only {took:.2f} s after the kill"

    wait_for("g3, g4 bound", lambda: all_bound(core, ns, second, standby), timeout=BIND_TIMEOUT)
    assert_bound_once_by(core, ns, {leader.identity: first, standby.identity: second})
    assert binds_before_leading(standby) == []
    assert sum("became leader" in line for line in log_lines(standby)) == 1

    assert standby.stop() == 0
    assert holder(coordination, ns) == "", "the last leader did not release the lease on SIGTERM"


def test_sigterm_of_the_leader_releases_the_lease_for_a_quick_takeover(
        core, custom, coordination, replicas, ns):
    a, b = replicas("a"), replicas("b")
    leader, standby, _ = elect(coordination, ns, a, b)
    before = create_gang(core, custom, ns, "g0")
    wait_for("g0 bound", lambda: all_bound(core, ns, before, leader, standby), timeout=BIND_TIMEOUT)
    assert_bound_once_by(core, ns, {leader.identity: before})

    stopped = time.monotonic()
    assert leader.stop() == 0, leader.tail()
    # Released before it exited: nobody holds it, or the standby already.
    assert holder(coordination, ns) in ("", standby.identity)
    assert logged(leader, "released"), leader.tail()
    took = took_over(coordination, ns, standby) - stopped
    print(f"SIGTERM: the standby took the lease {took:.2f} s after the signal "
          f"(lease {DURATION} s, retry {RETRY} s)")
    assert took <= 2 * RETRY + 1, f"took over {took:.2f} s after SIGTERM: the lease was not released"

    pods = create_gang(core, custom, ns, "g1")
    wait_for("g1 bound", lambda: all_bound(core, ns, pods, standby), timeout=BIND_TIMEOUT)
    assert_bound_once_by(core, ns, {leader.identity: before, standby.identity: pods})
    assert binds_before_leading(standby) == []


def test_a_leader_paused_past_its_deadline_exits_when_it_runs_again(
        core, custom, coordination, replicas, ns):
    a, b = replicas("a"), replicas("b")
    leader, standby, _ = elect(coordination, ns, a, b)
    before = create_gang(core, custom, ns, "g0")
    wait_for("g0 bound", lambda: all_bound(core, ns, before, leader, standby), timeout=BIND_TIMEOUT)
    assert_bound_once_by(core, ns, {leader.identity: before})

    os.kill(leader.proc.pid, signal.SIGSTOP)
    paused = time.monotonic()
    took = took_over(coordination, ns, standby) - paused
    print(f"SIGSTOP: the standby took the lease {took:.2f} s after the pause")
    assert took >= DURATION - RETRY - 0.5
    pods = create_gang(core, custom, ns, "g1")
    wait_for("g1 bound", lambda: all_bound(core, ns, pods, standby), timeout=BIND_TIMEOUT)

    seen = len(log_lines(leader))
    os.kill(leader.proc.pid, signal.SIGCONT)
    try:
        status = leader.proc.wait(15)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the old leader still runs 15 s after it resumed:\n{leader.tail()}")
    assert status == 1, leader.tail()
    after = log_lines(leader)[seen:]
    assert any("lost leadership" in line for line in after), leader.tail()
    assert [line for line in after if BIND_LINE.search(line)] == []
    assert_bound_once_by(core, ns, {leader.identity: before, standby.identity: pods})
    assert binds_before_leading(standby) == []
    assert holder(coordination, ns) == standby.identity


def test_a_leader_whose_cycles_outlast_its_renew_deadline_keeps_the_lease(
        core, custom, coordination, replicas, ns):
    delay = 2 * RENEW  # seconds a cycle takes
    flags = ("--cycle-delay-ms", str(delay * 1000), "--debug-addr", "127.0.0.1:0")
    a, b = replicas("a", *flags), replicas("b", *flags)
    leader, standby, _ = elect(coordination, ns, a, b)
    url = leader.debug_url()
    pods = create_gang(core, custom, ns, "g1")
    start = time.monotonic()
    holders, answers = set(), []
    # Three cycles and more: the lease is sampled, and the debug server
    # asked, all along; the gang is bound by the second cycle after it.
    while time.monotonic() - start < 3 * delay + 2:
        leader.check()
        standby.check()
        holders.add(holder(coordination, ns))
        t = time.monotonic()
        with urllib.request.urlopen(url + "/healthz", timeout=delay) as r:
            assert r.status == 200
        answers.append(time.monotonic() - t)
        time.sleep(0.3)
    wait_for("g1 bound", lambda: all_bound(core, ns, pods, leader, standby), timeout=BIND_TIMEOUT)
    assert holders == {leader.identity}, holders
    assert not logged(leader, "lost leadership") and not logged(standby, "became leader")
    assert_bound_once_by(core, ns, {leader.identity: pods})
    # Cycles of `delay` seconds ran (the log's cycle line says how long),
    # while no debug answer took a quarter of one.
    took = [float(m.group(1)) for line in log_lines(leader)
            if (m := re.search(r" binds, .* ([0-9.]+) ms$", line))]
    assert took and min(took) >= delay * 1000, took
    assert max(answers) < delay / 4, sorted(answers)[-3:]
    with urllib.request.urlopen(url + "/metrics", timeout=delay) as r:
        metrics = dict(line.split()[:2] for line in r.read().decode().splitlines()
                       if line and not line.startswith("#"))
    assert float(metrics["muster_loop_stall_max_seconds"]) < delay / 4, metrics
    # The gang's pods (and their binds) came while cycles ran: the watch
    # read them during the cycle, and they were applied after it.
    assert int(metrics["muster_cache_held_changes_total"]) >= len(pods), metrics
    assert int(metrics["muster_cache_hold_relists_total"]) == 0, metrics
