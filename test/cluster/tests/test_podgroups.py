"""PodGroups as their own schedulers mean them, on the local control plane.

- Volcano's enqueue step: a PodGroup whose minResources fit its queue
  (beside the other enqueued PodGroups) and the cluster becomes Inqueue
  before any pod exists, and stays Inqueue while its pods wait; one whose
  minResources do not fit stays Pending with a message naming them. The
  same gate holds a scheduler-plugins PodGroup's pods.
- Volcano's minTaskMember: every named task has its minimum before the
  gang is admitted.
- One Muster under several scheduler names, with one quota for all.
- Status converges: pods created one by one with random delays end with
  every bound pod PodScheduled=True and each PodGroup's phase and counts
  matching its pods, and no pod version ever shows a node together with
  PodScheduled=False (a background watch records every version).

Everything is read back through the Kubernetes client.
"""

import random
import threading
import time

from conftest import Not, until, wait_for
from history import History, condition
from test_scheduler import GPU, SP, SP_LABEL, VOLCANO, VOLCANO_ANNOTATION, pin, pod

# The names operators write on pods: Volcano's, and scheduler-plugins' as
# Kubeflow's training-operator and KubeRay write it.
NAMES = ("--scheduler-name", "muster", "--scheduler-name", "volcano", "--scheduler-name",
         "scheduler-plugins-scheduler")
TASK = "volcano.sh/task-spec"


def group(name, min_member, dialect=VOLCANO, queue=None, min_resources=None, min_tasks=None):
    group_, version = dialect
    meta, spec = {"name": name}, {"minMember": min_member}
    if queue and dialect == VOLCANO:
        spec["queue"] = queue
    elif queue:
        meta["labels"] = {"muster.dev/queue": queue}
    if min_resources:
        spec["minResources"] = min_resources
    if min_tasks:
        spec["minTaskMember"] = min_tasks
    return {"apiVersion": f"{group_}/{version}", "kind": "PodGroup", "metadata": meta, "spec": spec}


def status(custom, ns, name, dialect=VOLCANO):
    return custom.get_namespaced_custom_object(*dialect, ns, "podgroups", name).get("status") or {}


def phase_is(custom, ns, name, want, dialect=VOLCANO):
    st = status(custom, ns, name, dialect)
    return st if st.get("phase") == want else Not(f"{name}: status {st}")


def unschedulable(custom, ns, name, reason, mentions):
    """The Volcano PodGroup's one condition once it is Unschedulable with
    `reason` and a message containing every string of `mentions`."""
    st = status(custom, ns, name)
    c = (st.get("conditions") or [{}])[0]
    ok = (c.get("type") == "Unschedulable" and c.get("status") == "True" and c.get("reason") == reason
          and all(w in (c.get("message") or "") for w in mentions) and c.get("lastTransitionTime"))
    return st if ok else Not(f"{name}: status {st}")


def member(name, gang, dialect=VOLCANO, scheduler="volcano", gpus=1, task=None, **kw):
    p = pod(name, gpus, gang=gang, dialect=dialect, scheduler=scheduler, **kw)
    if task:
        p["metadata"]["annotations"][TASK] = task
    return p


def bound(core, ns, names):
    pods = {p.metadata.name: p for p in core.list_namespaced_pod(ns).items}
    return {n for n in names if n in pods and pods[n].spec.node_name}


def message(core, ns, name):
    c = condition(core.read_namespaced_pod(name, ns))
    return c.message if c is not None and c.status == "False" else Not(f"{name}: PodScheduled {c}")


def whole_message(core, ns, name):
    """The pod's message once its cycle saw the whole gang: members are
    created one by one, so a cycle between two creates says "1 of 2
    members exist", and that is not the verdict a test is after."""
    m = message(core, ns, name)
    return Not(f"{name}: {m}") if isinstance(m, str) and "members exist" in m else m


# --- the minResources gate ---------------------------------------------------


def test_volcano_podgroup_is_inqueue_before_its_pods_and_minresources_over_quota_wait(
        start_muster, core, custom, namespace):
    """e2e-small has 8 GPUs. `a` (6) is enqueued before it has pods; `b` (6)
    would overrun the queue beside `a` and `huge` (16) could never fit: both
    stay Pending, saying so. `a` stays Inqueue while its pods wait, then
    runs; `b` is enqueued once `a` is gone."""
    m = start_muster(*NAMES)
    ns = namespace
    for name, gpus in (("a", 6), ("b", 6), ("huge", 16)):
        custom.create_namespaced_custom_object(*VOLCANO, ns, "podgroups",
                                               group(name, 2, queue="e2e-small", min_resources={GPU: gpus}))
        time.sleep(1.1)  # in this order: creation times have one-second resolution
    until(m, "a Inqueue with no pod", lambda: phase_is(custom, ns, "a", "Inqueue"))
    for name, gpus in (("b", "6"), ("huge", "16")):
        until(m, f"{name} waiting on minResources",
              lambda: unschedulable(custom, ns, name, "NotEnoughResources", ["minResources", gpus, "e2e-small"]))
        assert status(custom, ns, name)["phase"] == "Pending"
    assert core.list_namespaced_pod(ns).items == []

    # a's pods wait (no node has the label): a stays Inqueue.
    for i in range(2):
        core.create_namespaced_pod(ns, member(f"a-{i}", "a", gpus=3, queue="e2e-small",
                                              node_selector={"e2e.muster.dev/none": "x"}))
    until(m, "a's pods waiting", lambda: all(message(core, ns, f"a-{i}") for i in range(2)))
    time.sleep(2)
    assert status(custom, ns, "a")["phase"] == "Inqueue"
    assert bound(core, ns, ["a-0", "a-1"]) == set()

    # Placeable pods: a runs; b, beside a's 6 running GPUs, still waits.
    for i in range(2):
        core.delete_namespaced_pod(f"a-{i}", ns, grace_period_seconds=0)
    wait_for("a's first pods gone", lambda: not core.list_namespaced_pod(ns).items)
    for i in range(2):
        core.create_namespaced_pod(ns, member(f"a-{i}", "a", gpus=3, queue="e2e-small"))
    until(m, "a Running", lambda: phase_is(custom, ns, "a", "Running"), timeout=60)
    assert bound(core, ns, ["a-0", "a-1"]) == {"a-0", "a-1"}
    assert status(custom, ns, "b")["phase"] == "Pending"

    # a's pods end: b is enqueued; huge never is.
    for i in range(2):
        core.delete_namespaced_pod(f"a-{i}", ns, grace_period_seconds=0)
    until(m, "b Inqueue once a is gone", lambda: phase_is(custom, ns, "b", "Inqueue"), timeout=60)
    assert status(custom, ns, "huge")["phase"] == "Pending"
    assert status(custom, ns, "a")["phase"] == "Running"  # it ran: not back to Inqueue
    # Enqueued PodGroups hold e2e-small's quota for later enqueues: gone
    # before the next test.
    for name in ("a", "b", "huge"):
        custom.delete_namespaced_custom_object(*VOLCANO, ns, "podgroups", name)


def test_scheduler_plugins_minresources_hold_pods_that_fit(muster, core, custom, namespace):
    """Pods that fit are not bound while their PodGroup's minResources
    exceed the cluster (400 GPUs on 128); a smaller minResources lets them
    in."""
    ns = namespace
    custom.create_namespaced_custom_object(*SP, ns, "podgroups", group("g", 2, SP, min_resources={GPU: "400"}))
    for i in range(2):
        core.create_namespaced_pod(ns, member(f"g-{i}", "g", SP, scheduler="muster"))
    msgs = until(muster, "g waiting on minResources",
                 lambda: [whole_message(core, ns, f"g-{i}") for i in range(2)] if all(
                     isinstance(whole_message(core, ns, f"g-{i}"), str) for i in range(2)) else None)
    assert all("minResources ask 400 nvidia.com/gpu" in x and "128" in x for x in msgs), msgs
    assert bound(core, ns, ["g-0", "g-1"]) == set()
    custom.patch_namespaced_custom_object(*SP, ns, "podgroups", "g", {"spec": {"minResources": {GPU: "2"}}})
    until(muster, "g bound", lambda: bound(core, ns, ["g-0", "g-1"]) == {"g-0", "g-1"}, timeout=60)
    until(muster, "g Running", lambda: phase_is(custom, ns, "g", "Running", SP), timeout=60)


# --- minTaskMember -------------------------------------------------------------


def test_min_task_member_admits_a_master_not_two_workers(muster, core, custom, namespace):
    """minMember 2 with one master and one worker: two workers alone wait
    (NotEnoughPodsOfTask); once the master exists, the two members placed
    are the master and a worker, on a node with room for two."""
    ns = namespace
    custom.create_namespaced_custom_object(
        *VOLCANO, ns, "podgroups", group("job", 2, min_tasks={"master": 1, "worker": 1}))
    for i in range(2):
        core.create_namespaced_pod(ns, member(f"worker-{i}", "job", scheduler="muster", gpus=4, task="worker",
                                              node_selector=pin("gpu-0005")))
    until(muster, "the workers waiting for a master",
          lambda: unschedulable(custom, ns, "job", "NotEnoughPodsOfTask", ["task master has 0 of 1"]))
    assert "task master has 0 of 1 members" in message(core, ns, "worker-0")
    time.sleep(2)
    core.create_namespaced_pod(ns, member("master", "job", scheduler="muster", gpus=4, task="master",
                                          node_selector=pin("gpu-0005")))
    names = ["master", "worker-0", "worker-1"]
    until(muster, "two members bound", lambda: len(bound(core, ns, names)) == 2, timeout=60)
    assert "master" in bound(core, ns, names)
    until(muster, "job Running", lambda: phase_is(custom, ns, "job", "Running"), timeout=60)


# --- several names --------------------------------------------------------------


def test_several_scheduler_names_share_one_quota(start_muster, core, custom, namespace):
    """One Muster takes pods of `scheduler-plugins-scheduler` and `volcano`;
    both gangs are in e2e-small (8 GPUs): the first is bound, the second
    waits on that one quota. A default-scheduler pod is left alone."""
    m = start_muster(*NAMES)
    ns = namespace
    custom.create_namespaced_custom_object(*SP, ns, "podgroups", group("sp", 2, SP, queue="e2e-small"))
    for i in range(2):
        core.create_namespaced_pod(ns, member(f"sp-{i}", "sp", SP, scheduler="scheduler-plugins-scheduler",
                                              gpus=4, queue="e2e-small"))
    until(m, "sp bound", lambda: bound(core, ns, ["sp-0", "sp-1"]) == {"sp-0", "sp-1"}, timeout=60)
    custom.create_namespaced_custom_object(*VOLCANO, ns, "podgroups", group("vc", 2, queue="e2e-small"))
    for i in range(2):
        core.create_namespaced_pod(ns, member(f"vc-{i}", "vc", gpus=4))
    core.create_namespaced_pod(ns, pod("other", 0, scheduler="default-scheduler"))
    msg = until(m, "vc waiting on the shared quota", lambda: whole_message(core, ns, "vc-0"))
    assert "queue e2e-small at 8/8 nvidia.com/gpu" in msg, msg
    assert bound(core, ns, ["vc-0", "vc-1", "other"]) == set()
    assert condition(core.read_namespaced_pod("other", ns)) is None


# --- status that converges --------------------------------------------------------

GANGS = 50


def make_gang(core, custom, ns, k, rng):
    """Gang g<k>: a PodGroup (dialects alternate), then 2 to 4 pods, each
    after a random delay: mostly under 60 ms, so a waiting message and the
    gang's bind are decided a cycle apart (20 ms of debounce) and race to
    the server, sometimes up to 0.4 s, so the gang waits a few cycles."""
    dialect = SP if k % 2 == 0 else VOLCANO
    n = rng.randint(2, 4)
    custom.create_namespaced_custom_object(*dialect, ns, "podgroups", group(f"g{k}", n, dialect))
    for i in range(n):
        time.sleep(rng.random() * (0.06 if rng.random() < 0.75 else 0.4))
        p = pod(f"g{k}-{i}", 0, cpu="100m", gang=f"g{k}", dialect=dialect,
                scheduler="scheduler-plugins-scheduler" if dialect == SP else "volcano")
        core.create_namespaced_pod(ns, p)
    return dialect, n


def converged(core, custom, ns, gangs):
    pods = {p.metadata.name: p for p in core.list_namespaced_pod(ns).items}
    for k, (dialect, n) in gangs.items():
        names = [f"g{k}-{i}" for i in range(n)]
        for name in names:
            p = pods.get(name)
            c = p and condition(p)
            if not p or not p.spec.node_name or p.status.phase != "Running" or not c or c.status != "True":
                return Not(f"{name}: {p and p.spec.node_name} {p and p.status.phase} {c}")
        st = status(custom, ns, f"g{k}", dialect)
        if st.get("phase") != "Running" or st.get("running") != n:
            return Not(f"g{k}: status {st} with {n} pods running")
    return True


def test_status_converges_when_pods_arrive_one_by_one(start_muster, core, custom, namespace):
    """50 gangs, half of each dialect, created at once; each gang's pods come
    one by one with random delays, so every gang first waits for members
    and is then bound. In the end every pod is bound with PodScheduled=True
    and every PodGroup says Running with its pods' count; no version of any
    pod ever carried a node and PodScheduled=False."""
    m = start_muster(*NAMES)
    ns = namespace
    history = History(core, ns)
    gangs, errors = {}, []
    rng = random.Random(13)
    seeds = [rng.randrange(1 << 30) for _ in range(GANGS)]

    def run(k):
        try:
            gangs[k] = make_gang(core, custom, ns, k, random.Random(seeds[k]))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(GANGS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    try:
        until(m, "every pod bound and PodScheduled=True, every PodGroup Running",
              lambda: converged(core, custom, ns, gangs), timeout=120)
        time.sleep(3)  # a late write would land now
        assert converged(core, custom, ns, gangs) is True
        stale = [(name, c.message) for name in history.versions for _, p in history.of(name)
                 if p.spec.node_name and (c := condition(p)) is not None and c.status == "False"]
        assert not stale, f"bound pods shown PodScheduled=False: {stale[:5]}"
        waited = sum(1 for name in history.versions if history.messages(name))
        assert waited > 0, "no gang ever waited for its members: the test did not race"
    finally:
        history.stop()
