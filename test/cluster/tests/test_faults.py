"""The write path under faults (issue 55): one test per way Muster broke
its promise, each against the real API server through chaosproxy
(test/cluster/chaosproxy), which answers, delays or holds what a test
says. What Muster sent is read from the proxy's log; what happened is read
from the API server directly (the admin client, outside the proxy).

1. A bind outlives its pod: a same-name pod of another scheduler is never
   bound by a bind decided for the deleted one.
2. A bind is forgotten only when the watch shows it: with the pods watch
   held, a bound pod is never placed again.
3. The vGPU annotation patch carries the pod's resourceVersion: a pod
   bound behind a lagging watch keeps its devices.
4. Writes are fenced the moment the lease is lost.
5. Over HTTP/1.1 only, the lease is held through a backlog of binds.
6. A FailedScheduling Event that could not go is sent later; a same-name
   pod gets its own.
7. A 403 on one member's bind keeps the gang's room: retried with
   backoff, on the same node, and the gang is bound whole once it passes.
8. A refused eviction is asked again, and the preemptor gets its room.
10. A gang's binds waiting to retry go out together.
"""

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from conftest import Not, launch, stopped_cleanly, until, wait_for
from test_preemption import GPU, HOST, all_bound, create_gang, ns, pods, priorities  # noqa: F401 (fixtures)
from test_vgpu import NODES as VGPU_NODES
from test_vgpu import vgpu_nodes, vgpu_pod  # noqa: F401 (a fixture)

MUSTER_UA = "^muster"


@pytest.fixture
def through(cluster, request):
    """through(proxy, *flags): a Muster whose every call goes through
    proxy. Stopped afterwards whatever the test's outcome (one left running
    would schedule the next test's pods); a test that expects a clean stop
    calls stopped_cleanly() itself."""
    started = []

    def start(proxy, *extra):
        started.append(launch(dict(cluster, KUBECONFIG=proxy.kubeconfig), request, extra,
                              tag=f"-{len(started)}" if started else ""))
        return started[-1]

    yield start
    for m in started:
        m.stop()


def delete_all(core, ns):
    core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
    wait_for("the test's pods deleted", lambda: not core.list_namespaced_pod(ns).items, timeout=120)


def bind_path(ns, name):
    return f"^/api/v1/namespaces/{ns}/pods/{name}/binding$"


def bindings(proxy, ns, name=None):
    """Binding POSTs the proxy saw for pods of ns (and name): a list of
    (uid, node, status answered)."""
    out = []
    for e in proxy.log():
        if e["method"] != "POST" or not e["path"].endswith("/binding"):
            continue
        parts = e["path"].split("/")
        if parts[4] != ns or (name and parts[6] != name):
            continue
        body = json.loads(e.get("body") or "{}")
        out.append((body.get("metadata", {}).get("uid"), body.get("target", {}).get("name"), e["status"]))
    return out


def plain_pod(name, cpu="1", scheduler="muster", node=None, gpus=0, labels=None):
    requests = {"cpu": cpu, "memory": "1Gi"}
    spec = {"schedulerName": scheduler, "restartPolicy": "Never",
            "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}]}
    if gpus:
        requests[GPU] = str(gpus)
        spec["containers"][0]["resources"]["limits"] = {GPU: str(gpus)}
    if node:
        spec["nodeSelector"] = {HOST: node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def node_of(core, ns, name):
    try:
        return core.read_namespaced_pod(name, ns).spec.node_name
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def delete_now(core, ns, name):
    core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    wait_for(f"{name} gone", lambda: node_of_missing(core, ns, name))


def node_of_missing(core, ns, name):
    try:
        core.read_namespaced_pod(name, ns)
        return False
    except ApiException as e:
        return e.status == 404


# --- 1 -------------------------------------------------------------------------


def test_a_bind_never_outlives_its_pod(core, through, proxy, namespace):
    """Binds of pod x answer 501 (which the engine does not retry itself:
    Muster keeps its room and sends the bind again later). With the pods
    watch held, x is deleted and a pod of another scheduler is created
    under its name, so Muster's cache sees both at once, as a watch that
    lags shows them, and the new pod gets x's name id back (base/intern.c
    reuses the last id freed; a pod of Muster's keeps the namespace's id
    alive meanwhile, as in any namespace with more than one pod). Once the
    watch and then the binds pass again, no binding names the new pod's
    uid and it stays unbound: it was never Muster's to place. A binary
    that keyed a bind by names alone sent it the deleted pod's bind."""
    ns = namespace
    refuse = {"id": "x-501", "method": "POST", "path": bind_path(ns, "x"), "action": {"status": 501}}
    hold = {"id": "hold-pods", "path": "^/api/v1/pods$", "watch": True, "action": {"stall": True}}
    proxy.rules([refuse])
    m = through(proxy)
    core.create_namespaced_pod(ns, plain_pod("x", node="cpu-0001"))
    until(m, "a bind of x refused and sent again",
          lambda: len(bindings(proxy, ns, "x")) >= 2 or Not(bindings(proxy, ns, "x")), timeout=60)
    core.create_namespaced_pod(ns, plain_pod("t-0", node="cpu-0002"))
    until(m, "a second pod of the namespace bound", lambda: node_of(core, ns, "t-0"))
    old_uid = core.read_namespaced_pod("x", ns).metadata.uid
    proxy.rules([refuse, hold])
    delete_now(core, ns, "x")
    core.create_namespaced_pod(ns, plain_pod("x", node="cpu-0001", scheduler="default-scheduler"))
    new_uid = core.read_namespaced_pod("x", ns).metadata.uid
    assert new_uid != old_uid
    proxy.rules([refuse])
    time.sleep(5)  # the cache has both; retries come due
    # A retry goes out at a cycle, and a cycle needs work: a pod of Muster's
    # now, and one after the refusals end.
    core.create_namespaced_pod(ns, plain_pod("t-1", node="cpu-0002"))
    until(m, "a pod created meanwhile bound", lambda: node_of(core, ns, "t-1"))
    proxy.clear()
    core.create_namespaced_pod(ns, plain_pod("t-2", node="cpu-0002"))
    until(m, "a pod created after bound", lambda: node_of(core, ns, "t-2"))
    time.sleep(8)  # several cycles and retries' backoff
    sent = bindings(proxy, ns, "x")
    assert not [b for b in sent if b[0] == new_uid], f"a bind named the other scheduler's pod: {sent}"
    assert not node_of(core, ns, "x"), "the other scheduler's pod was bound"
    stopped_cleanly(m)


def test_a_bind_answered_after_its_pod_is_gone(core, through, proxy, namespace):
    """Binds of three pods answer 503, so the engine is retrying them when
    the pods are deleted: the answers come back for pods whose names are
    gone from the cache. Muster keeps running (it read the freed names of
    such pods to log the retry, and died of it in a 30-minute chaos run)
    and binds a pod created after."""
    ns = namespace
    names = [f"d-{i}" for i in range(3)]
    proxy.rules([{"id": "d-503", "method": "POST", "path": f"^/api/v1/namespaces/{ns}/pods/d-[0-9]/binding$",
                  "action": {"status": 503}}])
    m = through(proxy)
    for n in names:
        core.create_namespaced_pod(ns, plain_pod(n, node="cpu-0001"))
    until(m, "every bind refused", lambda: (lambda seen: seen >= set(names) or Not(sorted(seen)))(
        {e["path"].split("/")[6] for e in proxy.log() if e["path"].endswith("/binding")}))
    for n in names:
        core.delete_namespaced_pod(n, ns, grace_period_seconds=0)
    time.sleep(12)  # the engine's retries end, and Muster's own come due
    m.check()
    proxy.clear()
    core.create_namespaced_pod(ns, plain_pod("after", node="cpu-0001"))
    until(m, "a pod created after bound", lambda: node_of(core, ns, "after"))
    stopped_cleanly(m)


# --- 2 -------------------------------------------------------------------------


def test_a_bind_is_forgotten_only_when_the_watch_shows_it(core, through, proxy, namespace):
    """Binds answer 503 until Muster has tried each pod; then the pods
    watch is held and the binds pass, so the 201s come back but Muster's
    cache never shows the pods bound. For 40 s (past the 30 s after which
    Muster used to forget a confirmed bind and place the pod again) no pod
    is sent a bind after the one the server took, and none moves."""
    ns = namespace
    names = [f"w-{i}" for i in range(4)]
    binds = f"^/api/v1/namespaces/{ns}/pods/[^/]+/binding$"
    proxy.rules([{"id": "binds-503", "method": "POST", "path": binds, "action": {"status": 503}}])
    m = through(proxy)
    for n in names:
        core.create_namespaced_pod(ns, plain_pod(n, node="cpu-0002"))
    until(m, "every pod tried", lambda: (lambda tried: tried >= set(names) or Not(sorted(tried)))(
        {e["path"].split("/")[6] for e in proxy.log() if e["path"].endswith("/binding")}))
    proxy.rules([{"id": "hold-pods", "path": "^/api/v1/pods$", "watch": True, "action": {"stall": True}}])
    first = {n: wait_for(f"{n} bound", lambda n=n: node_of(core, ns, n), timeout=60) for n in names}
    time.sleep(40)
    log = [e for e in proxy.log() if e["method"] == "POST" and e["path"].endswith("/binding")
           and e["path"].split("/")[4] == ns]
    for n in names:
        mine = [e for e in log if e["path"].split("/")[6] == n]
        ok = [e["t_ns"] for e in mine if e["status"] == 201]
        assert len(ok) == 1, f"{n}: {len(ok)} binds taken: {mine}"
        after = [e for e in mine if e["t_ns"] > ok[0]]
        assert not after, f"{n} sent a bind again after the server took one, while the watch lagged: {after}"
    assert {n: node_of(core, ns, n) for n in names} == first
    proxy.clear()
    stopped_cleanly(m)


# --- 3 -------------------------------------------------------------------------


def test_the_vgpu_patch_lands_only_on_the_pod_as_decided(core, through, proxy, namespace, vgpu_nodes):
    """A vGPU pod's annotation patch answers 503 at first. Meanwhile the
    pods watch is held and the pod is bound elsewhere by someone else, with
    that binder's annotations. Once the 503s stop, Muster's patch (against
    the resourceVersion it saw) is refused and it binds nothing: the pod
    keeps its node and the devices its binder gave it."""
    ns = namespace
    node, other = VGPU_NODES
    proxy.rules([{"id": "patch-503", "method": "PATCH", "path": f"^/api/v1/namespaces/{ns}/pods/v$",
                  "action": {"status": 503}}])
    m = through(proxy)
    core.create_namespaced_pod(ns, vgpu_pod("v", 1024, 10, node=node))
    until(m, "the vGPU patch refused", lambda: [e for e in proxy.log() if e["method"] == "PATCH"
                                                and e["path"].endswith(f"/{ns}/pods/v")] or Not("none yet"))
    proxy.rules([{"id": "patch-503", "method": "PATCH", "path": f"^/api/v1/namespaces/{ns}/pods/v$",
                  "action": {"status": 503}},
                 {"id": "hold-pods", "path": "^/api/v1/pods$", "watch": True, "action": {"stall": True}}])
    theirs = {"volcano.sh/vgpu-node": other, "volcano.sh/vgpu-ids-new": "theirs"}
    core.patch_namespaced_pod("v", ns, {"metadata": {"annotations": theirs}})
    core.create_namespaced_binding(ns, client.V1Binding(
        metadata=client.V1ObjectMeta(name="v"), target=client.V1ObjectReference(kind="Node", name=other)),
        _preload_content=False)
    proxy.rules([{"id": "hold-pods", "path": "^/api/v1/pods$", "watch": True, "action": {"stall": True}}])
    time.sleep(10)
    p = core.read_namespaced_pod("v", ns)
    assert p.spec.node_name == other
    got = {k: p.metadata.annotations.get(k) for k in theirs}
    assert got == theirs, f"Muster's patch landed on a pod bound elsewhere: {got}"
    proxy.clear()
    stopped_cleanly(m)


# --- 4 and 5: the lease ------------------------------------------------------------

LEASE_FLAGS = ("--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "1")


def leader_flags(ns, identity):
    return ("--leader-elect", "--lease-namespace", ns, "--lease-name", "muster-faults",
            "--identity", identity, *LEASE_FLAGS)


def lease_holder(admin, ns):
    try:
        return client.CoordinationV1Api(admin).read_namespaced_lease("muster-faults", ns).spec.holder_identity
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def test_writes_are_fenced_the_moment_the_lease_is_lost(core, admin, through, proxy, namespace):
    """A leader whose binds answer 503 (the engine keeps retrying them)
    and whose cycles take 5 s. Its lease renewals are then refused: from
    its renew deadline on, counted from its last renewal the server took,
    the proxy sees no write from it but to the Lease."""
    ns = namespace
    ident = f"fence-{ns}"
    proxy.rules([{"id": "binds-503", "method": "POST", "path": f"^/api/v1/namespaces/{ns}/pods/[^/]+/binding$",
                  "action": {"status": 503}}])
    m = through(proxy, *leader_flags(ns, ident), "--cycle-delay-ms", "5000")
    until(m, "it leads", lambda: lease_holder(admin, ns) == ident, timeout=30)
    for i in range(6):
        core.create_namespaced_pod(ns, plain_pod(f"f-{i}", node="cpu-0003"))
    until(m, "binds refused and retried", lambda: len(bindings(proxy, ns)) >= 6 or Not(bindings(proxy, ns)),
          timeout=60)
    proxy.rules([{"id": "binds-503", "method": "POST", "path": f"^/api/v1/namespaces/{ns}/pods/[^/]+/binding$",
                  "action": {"status": 503}},
                 {"id": "no-renew", "method": "PUT", "path": "/leases/muster-faults$", "action": {"status": 503}}])
    status = wait_for("it stops on the lost lease", lambda: m.proc.poll() is not None and m.proc.returncode + 1000,
                      timeout=30) - 1000
    assert status == 1
    log = proxy.log()
    renewed = [e["t_ns"] for e in log if e["method"] == "PUT" and e["path"].endswith("/leases/muster-faults")
               and e["upstream_status"] == 200]
    assert renewed, "no renewal reached the server"
    deadline = renewed[-1] + 3_000_000_000  # --renew-deadline, from the last renewal that landed
    late = [(e["method"], e["path"], (e["t_ns"] - deadline) / 1e6) for e in log
            if e["t_ns"] > deadline and e["method"] != "GET" and "/leases/" not in e["path"]
            and e["user_agent"].startswith("muster")]
    assert not late, f"writes after the renew deadline (ms past it): {late[:10]}"
    proxy.clear()


def test_over_http1_the_lease_is_held_through_a_backlog(core, custom, admin, cluster, request, through, namespace):
    """A proxy that speaks only HTTP/1.1, as a load balancer without HTTP/2:
    the leader's watches each hold a connection of their own. It is
    elected, and holds its lease while 300 two-pod gangs are bound."""
    import conftest
    import chaos
    import os

    ns = namespace
    d = os.path.join(conftest.cluster_dir(), "chaos", request.node.name)
    proxy = chaos.Proxy.start(cluster, d, http1=True)
    ident = f"h1-{ns}"
    try:
        m = through(proxy, *leader_flags(ns, ident))
        until(m, "it leads over HTTP/1.1", lambda: lease_holder(admin, ns) == ident, timeout=30)
        names = []
        for g in range(300):
            pg = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                  "metadata": {"name": f"g{g}"}, "spec": {"minMember": 2}}
            custom.create_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", ns, "podgroups", pg)
            for i in range(2):
                labels = {"scheduling.x-k8s.io/pod-group": f"g{g}"}
                core.create_namespaced_pod(ns, plain_pod(f"g{g}-{i}", cpu="100m", labels=labels))
                names.append(f"g{g}-{i}")
        until(m, "600 pods bound", lambda: (lambda n: n >= 600 or Not(f"{n} of 600 bound"))(
            sum(1 for p in core.list_namespaced_pod(ns).items if p.spec.node_name)), timeout=300)
        assert lease_holder(admin, ns) == ident
        with open(m.log, errors="replace") as f:
            assert "lost leadership" not in f.read()
        versions = {e.get("proto") for e in proxy.log() if e.get("proto")}
        assert not versions or versions == {"HTTP/1.1"}, versions
        stopped_cleanly(m)
    finally:
        delete_all(core, ns)
        proxy.stop()


# --- 6 -------------------------------------------------------------------------


def failed_scheduling(admin, ns, name, uid):
    ev = client.EventsV1Api(admin).list_namespaced_event(ns).items
    return [e for e in ev if e.reason == "FailedScheduling" and e.regarding and e.regarding.name == name
            and e.regarding.uid == uid and e.reporting_controller == "muster.dev/scheduler"]


def test_failed_scheduling_events_are_sent_once_the_endpoint_is_back(core, admin, through, proxy, namespace):
    """Events answer 403 while ten pods that fit nowhere get their
    conditions. Once Events pass again, each pod gets its FailedScheduling
    Event; a pod then created again under one of their names gets one of
    its own."""
    ns = namespace
    proxy.rules([{"id": "events-403", "method": "POST", "path": f"^/apis/events.k8s.io/v1/namespaces/{ns}/events$",
                  "action": {"status": 403}}])
    m = through(proxy)
    names = [f"e-{i}" for i in range(10)]
    for n in names:
        core.create_namespaced_pod(ns, plain_pod(n, cpu="1000"))

    def conditions_written():
        ps = pods(core, ns, names)
        left = [n for n, p in ps.items() if not (p.status.conditions and any(
            c.type == "PodScheduled" and c.reason == "Unschedulable" for c in p.status.conditions))]
        return not left or Not(f"no condition yet: {left}")

    until(m, "every pod's condition", conditions_written)
    time.sleep(2)
    proxy.clear()
    uids = {n: p.metadata.uid for n, p in pods(core, ns, names).items()}
    until(m, "every pod's Event", lambda: (lambda left: not left or Not(f"no Event: {left}"))(
        [n for n in names if not failed_scheduling(admin, ns, n, uids[n])]), timeout=60)
    delete_now(core, ns, "e-0")
    core.create_namespaced_pod(ns, plain_pod("e-0", cpu="1000"))
    uid = core.read_namespaced_pod("e-0", ns).metadata.uid
    until(m, "the new e-0's own Event", lambda: failed_scheduling(admin, ns, "e-0", uid) or Not("none"), timeout=60)
    stopped_cleanly(m)


# --- 7 -------------------------------------------------------------------------


def test_a_403_on_one_bind_keeps_the_gangs_room(core, custom, admin, through, proxy, namespace):
    """A 4-pod gang of 2 GPUs each on gpu-0014; the binds of member 1
    answer 403 for 8 s (an RBAC fix rolling out). The other members bind;
    member 1 is retried with backoff (a handful of times, not every cycle)
    on the node first chosen; once the 403s stop, the gang is whole. No
    FailedBinding Warning: the gang was never let go."""
    ns = namespace
    proxy.rules([{"id": "m1-403", "method": "POST", "path": bind_path(ns, "g-1"), "action": {"status": 403}}])
    m = through(proxy)
    names = create_gang(core, custom, ns, "g", "e2e-default", [(2, "gpu-0014")] * 4)
    until(m, "member 1 refused", lambda: bindings(proxy, ns, "g-1") or Not("no bind of g-1 yet"))
    time.sleep(8)
    refused = bindings(proxy, ns, "g-1")
    proxy.clear()
    got = until(m, "the gang bound whole", lambda: all_bound(core, ns, names), timeout=60)
    assert set(got.values()) == {"gpu-0014"}, got
    assert 1 <= len(refused) <= 6, f"member 1 sent {len(refused)} times in 8 s: {refused}"
    assert {b[1] for b in refused} == {"gpu-0014"}, refused
    warnings = [e for e in client.EventsV1Api(admin).list_namespaced_event(ns).items if e.reason == "FailedBinding"]
    assert not warnings, [e.note for e in warnings]
    stopped_cleanly(m)


# --- 8 -------------------------------------------------------------------------


def test_a_refused_eviction_is_asked_again(core, custom, through, proxy, ns, priorities):
    """Victim v (8 GPUs on gpu-0015, priority 100, queue e2e-prio); its
    evictions answer 403 for 6 s. Preemptor p (8 GPUs there, priority 1000)
    is bound once they pass: the eviction was asked again, not marked
    done."""
    node = "gpu-0015"
    pc = priorities(v=100, p=1000)
    m = through(proxy)
    v = create_gang(core, custom, ns, "v", "e2e-prio", [(8, node)], pc["v"])
    until(m, "the victim bound", lambda: all_bound(core, ns, v))
    proxy.rules([{"id": "evict-403", "method": "POST", "path": f"^/api/v1/namespaces/{ns}/pods/v-0/eviction$",
                  "action": {"status": 403}}])
    p = create_gang(core, custom, ns, "p", "e2e-prio", [(8, node)], pc["p"])
    until(m, "an eviction refused", lambda: [e for e in proxy.log() if e["path"].endswith("/v-0/eviction")]
          or Not("none yet"))
    time.sleep(6)
    proxy.clear()
    got = until(m, "the preemptor bound", lambda: all_bound(core, ns, p), timeout=90)
    assert got == {"p-0": node}
    stopped_cleanly(m)


# --- 10 ------------------------------------------------------------------------


def test_a_gangs_retried_binds_go_out_together(core, custom, through, proxy, namespace):
    """Three 4-pod gangs (1 GPU each, one gang a node); every bind in the
    namespace answers 403 for 10 s (a token rotating). Each member is sent
    again with backoff, and each gang's members go out at one time, not
    each at its own draw: once the 403s stop, the four binds the server
    takes for a gang (201 at the proxy) are sent within half a second,
    where members drawing their own times (up to 8 s apart by then, a
    cycle a second) left gangs partly bound for seconds."""
    ns = namespace
    proxy.rules([{"id": "all-403", "method": "POST", "path": f"^/api/v1/namespaces/{ns}/pods/[^/]+/binding$",
                  "action": {"status": 403}}])
    m = through(proxy)
    names = {g: create_gang(core, custom, ns, g, "e2e-default", [(1, node)] * 4)
             for g, node in (("a", "gpu-0011"), ("b", "gpu-0012"), ("c", "gpu-0013"))}
    until(m, "every member refused", lambda: len({b[0] for b in bindings(proxy, ns)}) >= 12
          or Not(f"{len(bindings(proxy, ns))} binds so far"))
    time.sleep(10)
    proxy.clear()
    for g, pods_ in names.items():
        until(m, f"gang {g} bound whole", lambda p=pods_: all_bound(core, ns, p), timeout=90)
    taken = {}
    for e in proxy.log():
        if e["method"] == "POST" and e["path"].endswith("/binding") and e["status"] == 201:
            name = e["path"].split("/")[6]
            if e["path"].split("/")[4] == ns:
                taken.setdefault(name.split("-")[0], []).append(e["t_ns"])
    assert sorted(taken) == ["a", "b", "c"] and all(len(t) == 4 for t in taken.values()), taken
    spread = {g: (max(t) - min(t)) / 1e6 for g, t in taken.items()}
    retried = len([b for b in bindings(proxy, ns) if b[2] == 403])
    assert retried >= 24, f"only {retried} refused binds: the members were not retried"
    assert all(ms < 500 for ms in spread.values()), f"ms from a gang's first bind taken to its last: {spread}"
    stopped_cleanly(m)
