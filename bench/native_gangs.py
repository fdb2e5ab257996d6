"""kube-scheduler's own gang scheduling beside Muster on native PodGroups
(bench/native-gangs runs it).

Both schedulers get the same workload of Kubernetes' own PodGroups
(scheduling.k8s.io/v1beta1, spec.schedulingPolicy.gang.minCount = MEMBERS)
and their pods (spec.schedulingGroup.podGroupName, 1 GPU, 500m CPU, 1 GiB,
tolerating the GPU taint, node selector muster.dev/pool=POOL), on the same
cluster, one scheduler after the other. Each scheduler is ONE process for
its three phases, each phase in a namespace of its own whose pods and
PodGroups are deleted (and waited for) before the next:

  backlog     GANGS PodGroups and their pods are created while the scheduler
              is NOT running (the first phase: the process starts after the
              creation). Throughput = pods / (last bind - first bind), and
              from the process start (cache sync, first cycle).
  stream      The scheduler is running; STREAM gangs arrive at RATE gangs/s
              (a PodGroup, then its pods). Per pod: its create call returned
              -> the watch saw it bound; per gang: its last create returned ->
              its last pod bound. p50, p90, p99, max.
  contention  OVERCOMMIT x the pool's GPUs is asked at once, the pods created
              round by round (member 0 of every gang, then member 1, ...), so
              a pod-by-pod scheduler would strand GPUs in gangs that cannot
              complete. The phase ends when every GPU of the pool is bound and
              SETTLE s more have passed, or when no pod was bound for QUIET s
              after the last create. Correct: floor(GPUs / MEMBERS) whole
              gangs, every other gang without a single pod bound.

Gang safety is read from the watch's bind times, never from the schedulers:
a gang is partial at an instant when some but not all of its minCount
members are bound. Kubernetes binds pod by pod (one POST .../binding each),
so any gang is partial for the instants between its first and its last bind,
with any scheduler; the table therefore reports (a) gangs partial at the end
of a phase (after the settle time), which must be 0, (b) gangs partial for
longer than 1 s, and (c) the first-to-last member bind spread, p50 and max.

Teardown: after each phase its pods (one deletecollection, grace period 0)
and PodGroups are deleted with the scheduler still running, as when jobs end
or are cancelled, and waited for; the time it takes, the scheduler's CPU
meanwhile and the pod and PodGroup status writes the API server counted are
reported (after contention, the pending gangs shrink member by member). The
namespaces themselves are deleted at the end of the run.

Per scheduler process: CPU seconds (utime + stime from /proc/PID/stat) per
phase, from the phase's start to its end, and over the process's life; peak
RSS (VmHWM from /proc/PID/status) read just before SIGTERM; its exit status
(kube-scheduler without leader election always exits 1 on SIGTERM, "finished
without leader elect": that counts as clean). API server write requests per
bound pod, per phase (apiserver_request_total, all clients: kwok's one
status write a pod, marking it Running, is in it, and lags the binds when
they come fast).

The watch runs in its own process so the creating threads never delay its
timestamps (both read CLOCK_MONOTONIC). Output: progress lines, the table,
then nb_*=value lines. Exit 1 when a phase did not complete or a scheduler did
not stop cleanly on SIGTERM. Partial gangs of kube-scheduler are reported,
not a failure; Muster's are a failure.
"""

import argparse
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import time

import urllib3
from kubernetes.client.rest import ApiException

import kubebench
from kubebench import (GPU, GPU_TOLERATION, Watcher, cpu_seconds, fmt_pcts, gang_names, gpu_container,
                       loadavg, percentile, status_kib, terminate, writes_between)

NATIVE_GROUP, NATIVE_VERSION = "scheduling.k8s.io", "v1beta1"
BENCH_LABEL = "bench.muster.dev/native-gangs"
POOL_LABEL = "muster.dev/pool"
PHASES = ("backlog", "stream", "contention")
LONG_PARTIAL_S = 1.0
log = kubebench.Log("native-gangs")

# --- objects ----------------------------------------------------------------


def podgroup(name, members):
    return {
        "apiVersion": f"{NATIVE_GROUP}/{NATIVE_VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}},
        "spec": {"schedulingPolicy": {"gang": {"minCount": members}}},
    }


def pod(name, gang, scheduler, pool):
    """One member: 1 GPU and a little CPU and memory, tolerating the GPU
    taint, kept to the benchmark's pool of nodes."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}},
        "spec": {
            "schedulerName": scheduler,
            "schedulingGroup": {"podGroupName": gang},
            "nodeSelector": {POOL_LABEL: pool},
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "tolerations": [GPU_TOLERATION],
            "containers": [gpu_container()],
        },
    }


def gang_of(pod_name):
    return pod_name.rsplit("-", 1)[0]


# --- the API ----------------------------------------------------------------


class Api(kubebench.Api):
    def create_podgroup(self, ns, body):
        self.create_object(NATIVE_GROUP, NATIVE_VERSION, ns, "podgroups", body)

    def pool_gpus(self, pool):
        """(nodes, GPUs) of the Ready, untainted-by-lifecycle nodes of the pool."""
        r = self.core.list_node(label_selector=f"{POOL_LABEL}={pool}", _preload_content=False)
        nodes = gpus = 0
        for n in json.loads(r.data)["items"]:
            ready = any(c["type"] == "Ready" and c["status"] == "True"
                        for c in n["status"].get("conditions", []))
            if ready:
                nodes += 1
                gpus += int(n["status"]["allocatable"].get(GPU, "0"))
        return nodes, gpus

    def clear_namespace(self, ns, timeout=900):
        """Its pods (grace period 0, in one deletecollection: kwok frees them
        at once) and PodGroups deleted, and waited for; returns seconds. The
        namespace itself stays until the end of the run: the namespace
        controller takes 5 to 15 s a namespace here, none of it the
        schedulers' doing. A deletecollection the server times out (504
        after its 60 s) has gone on deleting: it is sent again until nothing
        is left."""
        t0 = time.monotonic()
        self.clear_calls = 0

        def sent(call, *args, **kw):
            self.clear_calls += 1
            try:
                self.done(call(*args, _preload_content=False, _request_timeout=120, **kw))
            except (ApiException, urllib3.exceptions.HTTPError) as e:
                log(f"clearing {ns}: {type(e).__name__} {getattr(e, 'status', '')}; again")

        def left():
            pods = json.loads(self.core.list_namespaced_pod(ns, limit=1, _preload_content=False).data)
            pgs = json.loads(self.custom.list_namespaced_custom_object(
                NATIVE_GROUP, NATIVE_VERSION, ns, "podgroups", limit=1, _preload_content=False).data)
            return bool(pods["items"]), bool(pgs["items"])

        while time.monotonic() - t0 < timeout:
            pods, pgs = left()
            if not pods and not pgs:
                return time.monotonic() - t0
            if pods:
                sent(self.core.delete_collection_namespaced_pod, ns, grace_period_seconds=0)
            if pgs:
                sent(self.custom.delete_collection_namespaced_custom_object,
                     NATIVE_GROUP, NATIVE_VERSION, ns, "podgroups")
            time.sleep(0.2)
        log.fail(f"pods or PodGroups of {ns} still there after {timeout}s")


# --- the schedulers -------------------------------------------------------------


class Scheduler:
    """One scheduler process, its output in its own log file."""

    def __init__(self, key, label, scheduler_name, argv, log_path):
        self.key, self.label, self.name, self.argv, self.log_path = key, label, scheduler_name, argv, log_path
        self.proc = None
        self.status, self.stop_s, self.hwm_kib, self.cpu_total = None, None, None, None

    def start(self):
        self.out = open(self.log_path, "wb")
        self.t_start = time.monotonic()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.out)
        log(f"{self.label}: started (pid {self.proc.pid}): {' '.join(self.argv)}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def cpu(self):
        return cpu_seconds(self.proc.pid) if self.proc else None

    def stop(self, timeout=30):
        """Peak RSS and CPU, then SIGTERM and up to `timeout` s. Idempotent."""
        if self.proc is None or self.status is not None:
            return self.status
        self.hwm_kib = status_kib(self.proc.pid, "VmHWM")
        self.cpu_total = self.cpu()
        self.status, self.stop_s = terminate(self.proc, timeout)
        self.out.close()
        return self.status

    def clean_exit(self):
        """Exit 0; or, for kube-scheduler without leader election, its own
        way to stop: exit 1 with "finished without leader elect"
        (cmd/kube-scheduler/app/server.go, whatever the reason it stopped)."""
        if self.status == 0:
            return True
        if self.key == "kube" and self.status == 1:
            with open(self.log_path, "rb") as f:
                return b"finished without leader elect" in f.read()
        return False

    def status_text(self):
        if self.status is None:
            return None
        if self.status != 0 and self.clean_exit():
            return f"{self.status} (its normal stop)"
        return str(self.status)


def kube_scheduler_config(path, kubeconfig, scheduler_name, qps, burst):
    """The KubeSchedulerConfiguration: one profile with the defaults (with
    GenericWorkload on they include GangScheduling, with
    TopologyAwareWorkloadScheduling TopologyPlacementGenerator and
    PodGroupPodsCount), no leader election, client limits as high as
    Muster's own (scheduler/run.c: 5,000 writes/s)."""
    with open(path, "w") as f:
        f.write(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
  qps: {qps}
  burst: {burst}
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: {scheduler_name}
""")


# --- phases -----------------------------------------------------------------


def wait_until(watcher, sched, expect, stall, what, settle=0.0, quiet_after=None):
    """Until the watch has seen `expect` pods bound (then `settle` s more),
    or, when `quiet_after` is a time, no new bind for `stall` s after it.
    Progress every 10 s. Returns "all", "quiet", "stalled" or "exited"."""
    last_n, last_change, said = -1, time.monotonic(), time.monotonic()
    while True:
        n = watcher.bound()
        now = time.monotonic()
        if n != last_n:
            last_n, last_change = n, now
        if n >= expect:
            time.sleep(settle)
            return "all"
        if not sched.alive():
            log(f"{what}: {sched.label} exited with status {sched.proc.returncode} at {n}/{expect} bound")
            return "exited"
        if now - max(last_change, quiet_after or last_change) > stall:
            if quiet_after is not None:
                return "quiet"
            log(f"{what}: no new bind for {stall} s at {n}/{expect} bound; giving up")
            return "stalled"
        if now - said >= 10:
            log(f"{what}: {n}/{expect} bound, load {loadavg()}")
            said = now
        time.sleep(0.1)


def gang_safety(bound, gangs, members, t_end):
    """From the bind times: gangs whole, partial at the end, empty; gangs
    partial for longer than LONG_PARTIAL_S; first-to-last member bind spread
    of the whole gangs, and the longest any gang stayed partial."""
    by_gang = {}
    for name, t in bound.items():
        by_gang.setdefault(gang_of(name), []).append(t)
    whole = partial = 0
    spreads, partial_for = [], []
    for i in range(gangs):
        g, _ = gang_names(i, members)
        ts = sorted(by_gang.get(g, []))
        if not ts:
            continue
        if len(ts) >= members:
            whole += 1
            spreads.append(ts[members - 1] - ts[0])
            partial_for.append(ts[members - 1] - ts[0])
        else:
            partial += 1
            partial_for.append(t_end - ts[0])
    spreads.sort()
    return {"whole": whole, "partial_end": partial, "empty": gangs - whole - partial,
            "partial_long": sum(1 for s in partial_for if s > LONG_PARTIAL_S),
            "spread_p50_ms": percentile(spreads, 50) * 1000, "spread_max_ms": (spreads[-1] * 1000 if spreads else 0.0),
            "partial_max_s": max(partial_for) if partial_for else 0.0}


class Phase:
    """Shared bookkeeping of one phase of one scheduler."""

    def __init__(self, a, api, sched, name):
        self.a, self.api, self.sched, self.name = a, api, sched, name
        self.ns = f"nb-{sched.key}-{name}"
        self.what = f"{sched.label} {name}"
        self.res = {"load_before": loadavg()}

    def begin(self):
        """The watch from the namespace's current resourceVersion, the CPU
        and write counters."""
        _, _, rv = self.api.list_rv(self.ns)
        self.watcher = Watcher(self.a.kubeconfig, self.ns, rv, log)
        self.writes0 = self.api.write_counts()

    def cpu_start(self):
        self.cpu0, self.t0 = (self.sched.cpu() if self.sched.alive() else 0.0), time.monotonic()

    def end(self, gangs, outcome):
        """Stop the clocks, collect the binds, count writes; returns bind times."""
        self.res["cpu_s"] = (self.sched.cpu() or 0.0) - self.cpu0
        self.res["wall_s"] = time.monotonic() - self.t0
        t_end = time.monotonic()
        bound = self.watcher.results()
        self.res["writes"] = writes_between(self.writes0, self.api.write_counts())
        self.res["bound"] = len(bound)
        self.res["outcome"] = outcome
        self.res["safety"] = gang_safety(bound, gangs, self.a.members, t_end)
        self.res["rss_kib"] = status_kib(self.sched.proc.pid, "VmRSS")
        self.res["load_after"] = loadavg()
        return bound

    def cleanup(self):
        """Teardown with the scheduler still running, as when jobs end or are
        cancelled: the pods and PodGroups deleted, and what the scheduler
        did meanwhile (CPU, status writes of everyone, mostly its own)."""
        cpu0, w0 = self.sched.cpu(), self.api.write_counts()
        self.res["delete_s"] = self.api.clear_namespace(self.ns)
        d = {k: n for n, k in writes_between(w0, self.api.write_counts())}
        self.res["teardown"] = {
            "s": self.res["delete_s"],
            "cpu_s": (self.sched.cpu() or 0.0) - (cpu0 or 0.0),
            "pod_status": d.get(("PATCH", "pods/status"), 0) + d.get(("PUT", "pods/status"), 0),
            "podgroup_status": d.get(("PATCH", "podgroups/status"), 0) + d.get(("PUT", "podgroups/status"), 0),
            "binds": d.get(("POST", "pods/binding"), 0),
        }
        log(f"{self.what}: pods and PodGroups of {self.ns} deleted in {self.res['delete_s']:.1f} s "
            f"({self.api.clear_calls} deletecollection calls)")


def create_all(api, ns, a, scheduler, gangs, interleave):
    """All PodGroups, then all pods (gang by gang, or round by round when
    `interleave`), from a thread pool. Returns seconds."""
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.threads) as pool:
        for f in [pool.submit(api.create_podgroup, ns, podgroup(gang_names(i, a.members)[0], a.members))
                  for i in range(gangs)]:
            f.result()
        if interleave:
            order = [(i, k) for k in range(a.members) for i in range(gangs)]
        else:
            order = [(i, k) for i in range(gangs) for k in range(a.members)]
        futs = []
        for i, k in order:
            g, names = gang_names(i, a.members)
            futs.append(pool.submit(api.create_pod, ns, pod(names[k], g, scheduler.name, a.pool)))
        for f in futs:
            f.result()
    return time.monotonic() - t0


def phase_backlog(a, api, sched):
    p = Phase(a, api, sched, "backlog")
    total = a.gangs * a.members
    api.create_namespace(p.ns)
    create_s = create_all(api, p.ns, a, sched, a.gangs, interleave=False)
    n, nbound, _ = api.list_rv(p.ns)
    log(f"{p.what}: created {a.gangs} PodGroups and {total} pods in {create_s:.1f} s, "
        f"{sched.label} not running; {n} pods listed, {nbound} bound")
    if n != total or nbound:
        sys.exit(f"native-gangs: expected {total} unbound pods, found {n} ({nbound} bound)")
    p.begin()
    p.cpu_start()
    sched.start()
    outcome = wait_until(p.watcher, sched, total, a.stall_timeout, p.what, settle=a.settle)
    bound = p.end(a.gangs, outcome)
    times = sorted(bound.values())
    if times:
        first, last = times[0] - sched.t_start, times[-1] - sched.t_start
        p.res.update(first_bind_s=first, last_bind_s=last,
                     rate=len(times) / max(last - first, 1e-9), rate_from_start=len(times) / last)
        log(f"{p.what}: {len(times)}/{total} bound; first {first:.2f} s after start, last {last:.2f} s: "
            f"{p.res['rate']:.0f} pods/s first..last, {p.res['rate_from_start']:.0f}/s from start")
    if len(bound) < total:
        p.res["failed"] = f"{len(bound)}/{total} bound ({outcome})"
    p.cleanup()
    return p.res


def phase_stream(a, api, sched):
    p = Phase(a, api, sched, "stream")
    gangs = a.stream_gangs
    total = gangs * a.members
    api.create_namespace(p.ns)
    p.begin()
    p.cpu_start()
    created, lag = {}, []

    def one(i, due):
        lag.append(time.monotonic() - due)
        g, names = gang_names(i, a.members)
        api.create_podgroup(p.ns, podgroup(g, a.members))
        for name in names:
            api.create_pod(p.ns, pod(name, g, sched.name, a.pool))
            created[name] = time.monotonic()

    log(f"{p.what}: submitting {gangs} gangs at {a.rate:g} gangs/s, load {loadavg()}")
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.threads) as pool:
        futs = []
        for i in range(gangs):
            due = t0 + i / a.rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            futs.append(pool.submit(one, i, due))
        for f in futs:
            f.result()
    submit_s = time.monotonic() - t0
    outcome = wait_until(p.watcher, sched, total, a.stall_timeout, p.what, settle=a.settle)
    bound = p.end(gangs, outcome)
    per_pod = sorted((bound[n] - created[n]) * 1000 for n in created if n in bound)
    per_gang = []
    for i in range(gangs):
        _, names = gang_names(i, a.members)
        if all(n in bound for n in names):
            per_gang.append((max(bound[n] for n in names) - max(created[n] for n in names)) * 1000)
    per_gang.sort()
    p.res.update(submit_s=submit_s, submit_rate=gangs / submit_s, lag_max_ms=max(lag) * 1000,
                 per_pod=per_pod, per_gang=per_gang)
    if per_pod:
        log(f"{p.what}: {len(bound)}/{total} bound; pod create->bind ms p50/p90/p99/max {fmt_pcts(per_pod)}")
    if len(bound) < total:
        p.res["failed"] = f"{len(bound)}/{total} bound ({outcome})"
    p.cleanup()
    return p.res


def phase_contention(a, api, sched, capacity):
    p = Phase(a, api, sched, "contention")
    gangs = int(math.ceil(a.overcommit * capacity / a.members))
    fit = capacity // a.members
    api.create_namespace(p.ns)
    p.begin()
    p.cpu_start()
    log(f"{p.what}: {gangs} gangs x {a.members} = {gangs * a.members} GPUs asked of {capacity}, "
        f"pods created round by round; {fit} gangs fit")
    create_s = create_all(api, p.ns, a, sched, gangs, interleave=True)
    t_created = time.monotonic()
    log(f"{p.what}: created in {create_s:.1f} s; {p.watcher.bound()} pods bound so far")
    outcome = wait_until(p.watcher, sched, fit * a.members, a.quiet, p.what, settle=a.settle,
                         quiet_after=t_created)
    bound = p.end(gangs, outcome)
    times = sorted(bound.values())
    p.res.update(gangs=gangs, fit=fit, create_s=create_s,
                 last_bind_after_create_s=(times[-1] - t_created) if times else float("nan"))
    s = p.res["safety"]
    log(f"{p.what}: {len(bound)} pods bound ({outcome}): {s['whole']} gangs whole, "
        f"{s['partial_end']} partial, {s['empty']} empty")
    p.cleanup()
    return p.res


def run_scheduler(a, api, sched, capacity):
    """The three phases on one process of `sched`; returns {phase: result}."""
    out = {}
    try:
        out["backlog"] = phase_backlog(a, api, sched)
        if sched.alive():
            out["stream"] = phase_stream(a, api, sched)
        if sched.alive():
            out["contention"] = phase_contention(a, api, sched, capacity)
    finally:
        status = sched.stop()
        log(f"{sched.label}: SIGTERM: exit status {status} after {sched.stop_s or 0:.1f} s; "
            f"peak RSS {(sched.hwm_kib or 0) / 1024:.0f} MiB, CPU {sched.cpu_total or 0:.1f} s")
    return out


# --- report -----------------------------------------------------------------


def report(a, scheds, results, capacity, nodes):
    """The side-by-side table, then key=value lines. Returns success."""
    ks = [s for s in scheds]
    print()
    print(f"native-gangs: {a.gangs} gangs x {a.members} one-GPU pods (backlog), {a.stream_gangs} at "
          f"{a.rate:g} gangs/s (stream), {a.overcommit:g} x the pool's {capacity} GPUs on {nodes} nodes "
          f"(contention); {os.cpu_count()} cores; order {', '.join(s.label for s in scheds)}")
    if a.bind_limit:
        print(f"  API server bind limit (bench/apiserver_limit, HTTP/2, 64 in flight, same run): "
              f"{a.bind_limit:.0f} pods/s")
    labels = [s.label for s in ks]
    w = 24
    print(f"  {'':<44}" + "".join(f"{x:>{w}}" for x in labels) + f"{'Muster/kube':>14}")

    def get(s, phase, *path):
        v = results.get(s.key, {}).get(phase, {})
        for k in path:
            if not isinstance(v, dict) or k not in v:
                return None
            v = v[k]
        return v

    def row(title, fn, fmt, ratio=True):
        vals = [fn(s) for s in ks]
        cells = "".join(f"{(fmt(v) if v is not None else '-'):>{w}}" for v in vals)
        r = ""
        if ratio and len(vals) == 2 and all(isinstance(v, (int, float)) for v in vals):
            kv = dict(zip([s.key for s in ks], vals))
            if kv.get("kube") and kv.get("muster") is not None:
                r = f"{kv['muster'] / kv['kube']:.2f}x"
        print(f"  {title:<44}{cells}{r:>14}")

    n1 = lambda v: f"{v:.1f}"  # noqa: E731
    n0 = lambda v: f"{v:.0f}"  # noqa: E731
    row("backlog: pods/s, first to last bind", lambda s: get(s, "backlog", "rate"), n0)
    if a.bind_limit:
        row("backlog: first to last bind / API bind limit", lambda s: (get(s, "backlog", "rate") or 0) / a.bind_limit,
            lambda v: f"{v:.2f}", ratio=False)
    row("backlog: pods/s, from process start", lambda s: get(s, "backlog", "rate_from_start"), n0)
    row("backlog: start -> first bind, s", lambda s: get(s, "backlog", "first_bind_s"), lambda v: f"{v:.2f}")
    row("backlog: start -> last bind, s", lambda s: get(s, "backlog", "last_bind_s"), lambda v: f"{v:.2f}")
    row("stream: pod create->bind p50, ms", lambda s: pct(get(s, "stream", "per_pod"), 50), n0)
    row("stream: pod create->bind p99, ms", lambda s: pct(get(s, "stream", "per_pod"), 99), n0)
    row("stream: gang last create->bind p50, ms", lambda s: pct(get(s, "stream", "per_gang"), 50), n0)
    row("stream: gang last create->bind p99, ms", lambda s: pct(get(s, "stream", "per_gang"), 99), n0)
    row("contention: whole gangs / that fit",
        lambda s: (f"{get(s, 'contention', 'safety', 'whole')}/{get(s, 'contention', 'fit')}"
                   if get(s, "contention", "fit") is not None else None), str, ratio=False)
    row("contention: last create -> last bind, s",
        lambda s: get(s, "contention", "last_bind_after_create_s"), lambda v: f"{v:.2f}")
    for ph in PHASES:
        row(f"{ph}: gangs partial at the end", lambda s, ph=ph: get(s, ph, "safety", "partial_end"), str,
            ratio=False)
    for ph in PHASES:
        row(f"{ph}: gangs partial > {LONG_PARTIAL_S:g} s",
            lambda s, ph=ph: get(s, ph, "safety", "partial_long"), str, ratio=False)
    for ph in PHASES:
        row(f"{ph}: member bind spread p50/max, ms",
            lambda s, ph=ph: (f"{get(s, ph, 'safety', 'spread_p50_ms'):.0f}/"
                              f"{get(s, ph, 'safety', 'spread_max_ms'):.0f}"
                              if get(s, ph, "safety") else None), str, ratio=False)
    for ph in PHASES:
        row(f"{ph}: scheduler CPU s", lambda s, ph=ph: get(s, ph, "cpu_s"), n1)
    for ph in PHASES:
        row(f"{ph} teardown: seconds to delete", lambda s, ph=ph: get(s, ph, "teardown", "s"), n1)
    for ph in PHASES:
        row(f"{ph} teardown: scheduler CPU s", lambda s, ph=ph: get(s, ph, "teardown", "cpu_s"), n1)
    for ph in PHASES:
        row(f"{ph} teardown: pod+PodGroup status writes",
            lambda s, ph=ph: (f"{get(s, ph, 'teardown', 'pod_status'):.0f}+"
                              f"{get(s, ph, 'teardown', 'podgroup_status'):.0f}"
                              if get(s, ph, "teardown") else None), str, ratio=False)
    row("scheduler CPU s, whole process", lambda s: s.cpu_total, n1)
    row("scheduler peak RSS (VmHWM), MiB", lambda s: s.hwm_kib / 1024 if s.hwm_kib else None, n0)
    row("exit status on SIGTERM", lambda s: s.status_text(), str, ratio=False)
    for ph in PHASES:
        def wpp(s, ph=ph):
            r = results.get(s.key, {}).get(ph)
            if not r or "writes" not in r:
                return None
            pods = r.get("bound") or 1
            d = {k: n for n, k in r["writes"]}
            return (f"{d.get(('POST', 'pods/binding'), 0) / pods:.2f}b "
                    f"{(d.get(('PATCH', 'pods/status'), 0) + d.get(('PUT', 'pods/status'), 0)) / pods:.2f}s "
                    f"{(d.get(('POST', 'events'), 0) + d.get(('PATCH', 'events'), 0)) / pods:.2f}e")
        row(f"{ph}: writes/bound pod (bind status event)", wpp, str, ratio=False)
    for s in ks:
        for ph in PHASES:
            r = results.get(s.key, {}).get(ph)
            if r:
                print(f"  {s.label} {ph}: load {r['load_before']} -> {r['load_after']}; "
                      f"{r['bound']} pods bound ({r['outcome']}); wall {r['wall_s']:.1f} s; "
                      f"pods deleted in {r.get('delete_s', float('nan')):.1f} s"
                      + (f"; submitted at {r['submit_rate']:.1f} gangs/s, worst start lag {r['lag_max_ms']:.0f} ms"
                         if "submit_rate" in r else ""))
    print()

    kv = {"nb_gangs": a.gangs, "nb_members": a.members, "nb_nodes": nodes, "nb_gpus": capacity,
          "nb_cores": os.cpu_count(), "nb_bind_limit_per_s": f"{a.bind_limit or float('nan'):.1f}"}
    failed = []
    for s in ks:
        p = f"nb_{s.key}"
        r = results.get(s.key, {})
        b, st, c = r.get("backlog", {}), r.get("stream", {}), r.get("contention", {})
        if "rate" in b:
            kv[f"{p}_bind_per_s"] = f"{b['rate']:.1f}"
            kv[f"{p}_bind_from_start_per_s"] = f"{b['rate_from_start']:.1f}"
        for name in ("per_pod", "per_gang"):
            vals = st.get(name) or []
            for q in (50, 99):
                kv[f"{p}_{name.replace('per_', '')}_p{q}_ms"] = f"{percentile(vals, q):.1f}"
        for ph, rr in (("backlog", b), ("stream", st), ("contention", c)):
            if "safety" in rr:
                kv[f"{p}_{ph}_partial_end"] = rr["safety"]["partial_end"]
                kv[f"{p}_{ph}_partial_long"] = rr["safety"]["partial_long"]
                kv[f"{p}_{ph}_cpu_s"] = f"{rr['cpu_s']:.2f}"
            if "failed" in rr:
                failed.append(f"{s.key} {ph}: {rr['failed']}")
            elif not rr:
                failed.append(f"{s.key} {ph}: did not run")
        if "safety" in c:
            kv[f"{p}_contention_whole"] = c["safety"]["whole"]
            kv[f"{p}_contention_fit"] = c["fit"]
        for ph, rr in (("backlog", b), ("stream", st), ("contention", c)):
            if "teardown" in rr:
                t = rr["teardown"]
                kv[f"{p}_{ph}_teardown_s"] = f"{t['s']:.1f}"
                kv[f"{p}_{ph}_teardown_cpu_s"] = f"{t['cpu_s']:.2f}"
                kv[f"{p}_{ph}_teardown_status_writes"] = f"{t['pod_status'] + t['podgroup_status']:.0f}"
        kv[f"{p}_cpu_s"] = f"{s.cpu_total or 0:.2f}"
        kv[f"{p}_peak_rss_mib"] = f"{(s.hwm_kib or 0) / 1024:.1f}"
        kv[f"{p}_exit"] = s.status
        if not s.clean_exit():
            failed.append(f"{s.key}: exit status {s.status}")
        if s.key == "muster":
            for ph, rr in r.items():
                if rr.get("safety", {}).get("partial_end"):
                    failed.append(f"muster {ph}: {rr['safety']['partial_end']} partial gangs")
    kv["nb_failed"] = "; ".join(failed) or "none"
    for k, v in kv.items():
        print(f"{k}={v}")
    return not failed


def pct(vals, p):
    return percentile(vals, p) if vals else None


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--muster", required=True, help="the muster binary")
    p.add_argument("--muster-config", required=True)
    p.add_argument("--kube-scheduler", required=True, help="the kube-scheduler binary")
    p.add_argument("--feature-gates", required=True, help="kube-scheduler's --feature-gates")
    p.add_argument("--log-dir", required=True)
    p.add_argument("--pool", default="nbench", help="the muster.dev/pool of the benchmark's nodes")
    p.add_argument("--bind-limit", type=float, default=None,
                   help="the API server's bind limit, pods/s, measured in the same run")
    p.add_argument("--gangs", type=int, default=200)
    p.add_argument("--members", type=int, default=8)
    p.add_argument("--stream-gangs", type=int, default=100)
    p.add_argument("--rate", type=float, default=5.0, help="gangs per second in the stream phase")
    p.add_argument("--overcommit", type=float, default=1.25, help="GPUs asked / the pool's GPUs in contention")
    p.add_argument("--threads", type=int, default=32)
    p.add_argument("--order", default="kube,muster", help="which scheduler runs first")
    p.add_argument("--qps", type=int, default=5000, help="kube-scheduler's clientConnection qps (and burst)")
    p.add_argument("--settle", type=float, default=5.0, help="seconds watched after the expected binds")
    p.add_argument("--quiet", type=float, default=15.0,
                   help="contention ends this long after the last create without a new bind")
    p.add_argument("--stall-timeout", type=int, default=180)
    return p.parse_args()


def main():
    a = parse_args()
    api = Api(a.kubeconfig, a.threads + 4, log)
    nodes, capacity = api.pool_gpus(a.pool)
    if not capacity:
        sys.exit(f"native-gangs: no GPUs on Ready nodes of pool {a.pool}")
    if a.gangs * a.members > capacity or a.stream_gangs * a.members > capacity:
        sys.exit(f"native-gangs: {a.gangs} or {a.stream_gangs} gangs of {a.members} do not fit in {capacity} GPUs")
    os.makedirs(a.log_dir, exist_ok=True)
    ks_config = os.path.join(a.log_dir, "kube-scheduler-config.yaml")
    kube_scheduler_config(ks_config, a.kubeconfig, "kube-gang", a.qps, a.qps)
    all_scheds = {
        "kube": Scheduler("kube", "kube-scheduler", "kube-gang",
                          [a.kube_scheduler, "--config", ks_config, "--secure-port=0",
                           f"--feature-gates={a.feature_gates}"],
                          os.path.join(a.log_dir, "kube-scheduler.log")),
        "muster": Scheduler("muster", "Muster", "muster",
                            [a.muster, "run", "--kubeconfig", a.kubeconfig, "--config", a.muster_config],
                            os.path.join(a.log_dir, "muster.log")),
    }
    scheds = [all_scheds[k.strip()] for k in a.order.split(",")]
    for s in all_scheds.values():  # leftovers of an interrupted run
        for ph in PHASES:
            api.delete_namespace(f"nb-{s.key}-{ph}")
    log(f"pool {a.pool}: {nodes} nodes, {capacity} GPUs; load {loadavg()}")
    results = {}
    try:
        for s in scheds:
            results[s.key] = run_scheduler(a, api, s, capacity)
    finally:
        for s in scheds:
            s.stop()
        with concurrent.futures.ThreadPoolExecutor(len(PHASES) * len(all_scheds)) as pool:
            list(pool.map(api.delete_namespace, [f"nb-{s.key}-{ph}" for s in scheds for ph in PHASES]))
    log(f"logs and kube-scheduler's configuration in {a.log_dir}")
    return 0 if report(a, scheds, results, capacity, nodes) else 1


if __name__ == "__main__":
    sys.exit(main())
