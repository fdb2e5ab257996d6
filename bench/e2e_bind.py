"""End-to-end bind benchmark of `muster run` (bench/e2e-bind runs it).

Two phases against a running cluster, observed only through the official
Kubernetes client (never through Muster's own code), each with a Muster of
its own that gets SIGTERM at the end of the phase:

  throughput  GANGS PodGroups (scheduler-plugins, minMember MEMBERS) and
              their pods are created while Muster is NOT running; then Muster
              starts, and a watch records when each pod is first seen with
              spec.nodeName. Pods bound per second = pods / (last bind - first
              bind), and again counting from Muster's start (cache sync,
              first cycle).
  latency     Muster starts and binds one warm-up pod (its cache has synced);
              then gangs are submitted at a steady RATE (gangs/s). For every
              pod: the time its create call returned and the time the watch
              saw it bound. Percentiles per pod, and per gang (its last create
              returned -> its last pod bound).

Each phase runs in its own namespace, deleted after Muster has stopped (pods
with grace period 0, then the namespace, waiting until it is gone): a Muster
that watches 8,000 pods go writes status for each gang that shrinks, which
is not what is measured here. The watch runs in its own process so that the
creating threads never delay its timestamps (both processes read
CLOCK_MONOTONIC, which is system-wide).

Where the time went: Muster's per-cycle lines ("cycle N: ... binds, T ms"),
the CPU seconds that Muster, the control plane and the benchmark's own
processes used, and the write requests the API server counted
(apiserver_request_total, all clients), per pod.

The API server's bind limit is measured first, in the same run, once for
each --limit shape: bench/apiserver_limit creates as many pods as the
throughput phase binds, the same pods (pod() written as its --pod
template; gangs of MEMBERS, a gang's pods bound to one node of
--limit-nodes), then binds them while the same watch as in the
throughput phase times each bind. The limit is the best first..last rate
that watch saw, so that Muster and the limit are timed by one instrument,
which costs the server the same; the client's own rate is shown beside it.
Every rate is also reported as a ratio to the limit (--baseline adds a
figure measured elsewhere). Output: progress lines, a table, then key=value
lines (prefix e2e_). Exit 1 when a pod stayed unbound or Muster did not exit
0 on SIGTERM.
"""

import argparse
import concurrent.futures
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import urllib3

import kubebench
from kubebench import (GPU_TOLERATION, Watcher, cpu_seconds, fmt_pcts, gang_names, gpu_container,
                       loadavg, percentile, status_kib, terminate, writes_between)

SP_GROUP, SP_VERSION = "scheduling.x-k8s.io", "v1alpha1"
SP_LABEL = "scheduling.x-k8s.io/pod-group"
LIMIT_SCHEDULER = "apiserver-limit-bench"  # the limit's pods: no scheduler claims them
BENCH_LABEL = "e2e.muster.dev/bench"
CYCLE_RE = re.compile(
    r"^(\S+) muster: cycle (\d+): (\d+) nodes, (\d+) pods, (\d+) pending gangs, (\d+) admitted, "
    r"(\d+) binds, (?:\d+ \w+, )*([0-9.]+) ms"
)
SETTLE_S = 5
log = kubebench.Log("e2e-bind")
CONTROL_PLANE = ("kube-apiserver", "etcd", "kwok", "kube-controller-manager")


def wait_quiet(pattern, timeout):
    """Wait until no process matches `pattern` (other benchmarks on this shared
    machine); fail after `timeout` seconds rather than measure beside them."""
    deadline, said = time.monotonic() + timeout, 0.0
    while True:
        r = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
        others = [p for p in r.stdout.split() if int(p) != os.getpid()]
        if not others:
            return
        now = time.monotonic()
        if now > deadline:
            sys.exit(f"e2e-bind: other benchmarks still running after {timeout}s (pids {' '.join(others)})")
        if now - said > 60:
            log(f"waiting for other benchmarks to finish (pids {' '.join(others)}; load {loadavg()})")
            said = now
        time.sleep(5)


# --- objects ----------------------------------------------------------------


def podgroup(name, members):
    return {
        "apiVersion": f"{SP_GROUP}/{SP_VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}},
        "spec": {"minMember": members},
    }


def pod(name, gang, scheduler):
    """One member: 1 GPU and a little CPU and memory, tolerating the GPU taint."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {SP_LABEL: gang, BENCH_LABEL: "1"}},
        "spec": {
            "schedulerName": scheduler,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "tolerations": [GPU_TOLERATION],
            "containers": [gpu_container()],
        },
    }


# --- the API ----------------------------------------------------------------


class Api(kubebench.Api):
    def create_podgroup(self, ns, body):
        self.create_object(SP_GROUP, SP_VERSION, ns, "podgroups", body)


# --- Muster and the processes whose CPU time is counted ------------------------


class Muster:
    """One `muster run`, its stdout and stderr appended to the run's log."""

    def __init__(self, argv, log_path, phase):
        self.log_path = log_path
        self.out = open(log_path, "ab")
        self.out.write(f"=== e2e-bind: {phase} phase ===\n".encode())
        self.out.flush()
        self.offset = os.path.getsize(log_path)
        self.t_start = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.out)
        self.status, self.stop_s, self.rss_mib = None, None, float("nan")

    def alive(self):
        return self.proc.poll() is None

    def log(self):
        """What this instance has logged so far."""
        with open(self.log_path, "rb") as f:
            f.seek(self.offset)
            return f.read().decode(errors="replace")

    def stop(self, timeout=30):
        """SIGTERM, then wait up to `timeout` s. Sets status (the exit status,
        or "killed" when it had to be killed) and stop_s. Idempotent."""
        if self.status is not None:
            return self.status
        self.rss_mib = (status_kib(self.proc.pid, "VmHWM") or float("nan")) / 1024
        self.status, self.stop_s = terminate(self.proc, timeout)
        self.out.close()
        return self.status


class CpuMeter:
    """CPU seconds used by named processes between start() and stop()."""

    def __init__(self, pids):
        self.pids = {k: v for k, v in pids.items() if v}

    def start(self):
        self.t0 = time.monotonic()
        self.c0 = {k: cpu_seconds(p) for k, p in self.pids.items()}
        self.self0 = os.times()

    def stop(self):
        wall = time.monotonic() - self.t0
        out = {}
        for k, p in self.pids.items():
            c1 = cpu_seconds(p)
            if c1 is not None and self.c0.get(k) is not None:
                out[k] = c1 - self.c0[k]
        t = os.times()
        out["bench client"] = (t.user - self.self0.user) + (t.system - self.self0.system)
        return wall, out


def cycles_in(text):
    """Muster's cycle lines that bound something: count, binds, ms stats."""
    ms = []
    binds = 0
    for line in text.splitlines():
        m = CYCLE_RE.match(line)
        if m:
            binds += int(m.group(7))
            ms.append(float(m.group(8)))
    return {"cycles": len(ms), "binds": binds, "ms_total": sum(ms), "ms_max": max(ms) if ms else 0.0,
            "ms_p50": percentile(sorted(ms), 50)}


def stopping_line(text):
    """Muster's own totals, from its "stopping: ..." line."""
    for line in text.splitlines():
        if " muster: stopping: " in line:
            return line.split(" muster: ", 1)[1]
    return "no stopping line"


def other_lines(text, limit=8):
    """Log lines other than cycle lines: warnings, failures, retries."""
    out = [ln for ln in text.splitlines() if ln and not CYCLE_RE.match(ln)]
    return out[:limit], len(out)


# --- phases -----------------------------------------------------------------


def create_all(api, ns, gangs, members, scheduler, threads):
    """All PodGroups, then all pods, from a thread pool. Returns seconds."""
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        futs = [pool.submit(api.create_podgroup, ns, podgroup(gang_names(i, members)[0], members))
                for i in range(gangs)]
        for f in futs:
            f.result()
        t_groups = time.monotonic() - t0
        futs = []
        for i in range(gangs):
            g, names = gang_names(i, members)
            futs += [pool.submit(api.create_pod, ns, pod(n, g, scheduler)) for n in names]
        for f in futs:
            f.result()
    return t_groups, time.monotonic() - t0


def wait_bound(watcher, muster, expect, timeout, what):
    """Until the watch has seen `expect` pods bound; progress every 10 s. A
    stall of `timeout` seconds without a new bind is a failure, and so is
    Muster's exit (muster None: no Muster binds)."""
    last_n, last_change, said = -1, time.monotonic(), time.monotonic()
    while True:
        n = watcher.bound()
        now = time.monotonic()
        if n != last_n:
            last_n, last_change = n, now
        if n >= expect:
            return True
        if muster and not muster.alive():
            log(f"{what}: Muster exited with status {muster.proc.returncode} at {n}/{expect} bound")
            return False
        if now - last_change > timeout:
            log(f"{what}: no new bind for {timeout}s at {n}/{expect} bound; giving up")
            return False
        if now - said >= 10:
            log(f"{what}: {n}/{expect} bound, load {loadavg()}")
            said = now
        time.sleep(0.2)


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def loop_stalls(muster):
    """Muster's own measure of its loop (muster_loop_stall_*, DEBUG.md):
    the longest stall, iterations observed, and how many ran over 100 ms.
    None when /metrics cannot be read."""
    try:
        r = urllib3.PoolManager().request("GET", f"http://127.0.0.1:{muster.debug_port}/metrics", timeout=5)
    except urllib3.exceptions.HTTPError:
        return None
    vals = {}
    for line in r.data.decode().splitlines():
        m = re.match(r'(muster_loop_stall_max_seconds|muster_loop_stall_seconds_count|'
                     r'muster_loop_stall_seconds_bucket\{le="0.1"\}) (\S+)$', line)
        if m:
            vals[m.group(1)] = float(m.group(2))
    if len(vals) != 3:
        return None
    count = vals["muster_loop_stall_seconds_count"]
    return {"max_ms": vals["muster_loop_stall_max_seconds"] * 1e3, "iterations": int(count),
            "over_100ms": int(count - vals['muster_loop_stall_seconds_bucket{le="0.1"}'])}


def start_muster(a, phase, running):
    port = free_port()
    m = Muster([a.muster, "run", "--kubeconfig", a.kubeconfig, "--config", a.config,
                "--debug-addr", f"127.0.0.1:{port}"], a.muster_log, phase)
    m.debug_port = port
    running.append(m)
    log(f"{phase}: Muster started (pid {m.proc.pid}), load {loadavg()}")
    return m


def finish(a, api, ns, phase, res, muster, writes0):
    """After the last bind: the trailing writes, Muster's SIGTERM, its log,
    and the namespace deleted (with Muster stopped, so that it does not
    write status for every pod that goes)."""
    time.sleep(SETTLE_S)  # writes that trail the last bind (events, status) count too
    res["writes"] = writes_between(writes0, api.write_counts())
    res["stalls"] = loop_stalls(muster)
    status = muster.stop()
    log(f"{phase}: Muster stopped by SIGTERM: exit status {status} after {muster.stop_s:.1f} s "
        f"(peak RSS {muster.rss_mib:.0f} MiB)")
    res.update(exit=status, stop_s=muster.stop_s, rss_mib=muster.rss_mib, load_after=loadavg())
    res["log"] = muster.log()
    res["cycles"] = cycles_in(res["log"])
    res["stopping"] = stopping_line(res["log"])
    res["delete_s"] = api.delete_namespace(ns)
    log(f"{phase}: namespace {ns} deleted in {res['delete_s']:.1f} s")


def phase_throughput(a, api, meter_pids, running):
    ns = f"{a.ns_prefix}-throughput"
    total = a.gangs * a.members
    wait_quiet(a.busy_pattern, a.quiet_timeout)
    res = {"load_before": loadavg()}
    api.create_namespace(ns)
    t_groups, t_create = create_all(api, ns, a.gangs, a.members, a.scheduler, a.threads)
    n, nbound, rv = api.list_rv(ns)
    res.update(create_s=t_create, create_rate=(a.gangs + total) / t_create,
               create_pod_rate=total / (t_create - t_groups), group_s=t_groups)
    log(f"throughput: created {a.gangs} PodGroups and {total} pods in {t_create:.1f} s "
        f"({res['create_rate']:.0f} objects/s; pods {res['create_pod_rate']:.0f}/s); "
        f"{n} pods listed, {nbound} bound")
    if n != total or nbound:
        sys.exit(f"e2e-bind: expected {total} unbound pods, found {n} ({nbound} bound)")
    watcher = Watcher(a.kubeconfig, ns, rv, log, total)
    meter = CpuMeter(dict(meter_pids, watch=watcher.proc.pid))
    writes0 = api.write_counts()
    meter.start()
    muster = start_muster(a, "throughput", running)
    meter.pids["muster"] = muster.proc.pid
    meter.c0["muster"] = 0.0
    ok = wait_bound(watcher, muster, total, a.stall_timeout, "throughput")
    res["cpu_wall"], res["cpu"] = meter.stop()
    bound = watcher.results()
    if not ok or len(bound) < total:
        res["failed"] = f"{len(bound)}/{total} bound"
    times = sorted(bound.values())
    if times:
        first, last = times[0] - muster.t_start, times[-1] - muster.t_start
        res.update(bound=len(bound), first_bind_s=first, last_bind_s=last,
                   rate=len(bound) / max(last - first, 1e-9), rate_from_start=len(bound) / last)
        # How the binds spread over time: pods bound in each tenth of the window.
        deciles = [0] * 10
        for t in times:
            deciles[min(9, int((t - times[0]) / max(times[-1] - times[0], 1e-9) * 10))] += 1
        res["deciles"] = deciles
        log(f"throughput: {len(bound)} pods bound; first bind {first:.2f} s after Muster's start, "
            f"last {last:.2f} s: {res['rate']:.0f}/s first..last, {res['rate_from_start']:.0f}/s from start")
    finish(a, api, ns, "throughput", res, muster, writes0)
    return res


def submit_gangs(api, ns, a, created, lag):
    """Gang i starts at i / rate seconds: its PodGroup, then its pods one by
    one; created[pod] = monotonic time its create returned."""
    def one(i, due):
        lag.append(time.monotonic() - due)
        g, names = gang_names(i, a.members)
        api.create_podgroup(ns, podgroup(g, a.members))
        for n in names:
            api.create_pod(ns, pod(n, g, a.scheduler))
            created[n] = time.monotonic()

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.threads) as pool:
        futs = []
        for i in range(a.gangs):
            due = t0 + i / a.rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            futs.append(pool.submit(one, i, due))
        for f in futs:
            f.result()
    return time.monotonic() - t0


def warm_up(api, ns, a, timeout=120):
    """One single pod, bound by Muster: its cache has synced and it cycles."""
    name = "warm-up"
    body = pod(name, "", a.scheduler)
    del body["metadata"]["labels"][SP_LABEL]
    t0 = time.monotonic()
    api.create_pod(ns, body)
    while time.monotonic() - t0 < timeout:
        r = api.core.read_namespaced_pod(name, ns, _preload_content=False)
        if json.loads(r.data)["spec"].get("nodeName"):
            return time.monotonic() - t0
        time.sleep(0.1)
    sys.exit(f"e2e-bind: the warm-up pod was not bound within {timeout} s")


def run_limit(argv):
    """bench/apiserver_limit; its output lines, and the rate of its phase."""
    r = subprocess.run(argv, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        print(f"  {line}", flush=True)
    m = re.search(r"^(?:create|bind): .*, ([0-9.]+)/s ", r.stdout, re.M)
    if r.returncode != 0 or not m:
        sys.exit(f"e2e-bind: apiserver_limit failed (exit {r.returncode}): {r.stderr.strip()[:400]}")
    return float(m.group(1))


def phase_limit(a, api, meter_pids, spec):
    """The API server's bind limit in one shape ("http2 256 32": protocol,
    binds in flight, streams a connection), timed by the throughput phase's
    watch."""
    proto, conc, streams = spec.split()
    name = f"{proto} {conc}" + (f", {int(conc) // int(streams)} conn" if proto == "http2" and streams != conc else "")
    ns = f"{a.ns_prefix}-limit-{proto}-{conc}-{streams}"
    total = a.gangs * a.members
    wait_quiet(a.busy_pattern, a.quiet_timeout)
    api.delete_namespace(ns)  # a leftover of an interrupted run
    api.create_namespace(ns)
    argv = [a.limit_bin, "--server", a.server, "--token", a.token, "--cacert", a.cacert, "--namespace", ns,
            "--nodes", a.limit_nodes, "--pods", str(total), "--members", str(a.members),
            "--concurrency", conc, "--streams", streams]
    if proto == "http1":
        argv.append("--http1")
    with tempfile.NamedTemporaryFile("w", suffix=".json") as template:
        json.dump(pod("{name}", "{gang}", LIMIT_SCHEDULER), template)
        template.flush()
        run_limit(argv + ["--pod", template.name, "--only", "create"])
    n, nbound, rv = api.list_rv(ns)
    if n != total or nbound:
        sys.exit(f"e2e-bind: limit: expected {total} unbound pods, found {n} ({nbound} bound)")
    res = {"name": name, "load_before": loadavg()}
    watcher = Watcher(a.kubeconfig, ns, rv, log, total)
    meter = CpuMeter(dict(meter_pids, watch=watcher.proc.pid))
    c0 = os.times()
    meter.start()
    res["client_rate"] = run_limit(argv + ["--only", "bind"])
    c1 = os.times()
    wait_bound(watcher, None, total, a.stall_timeout, f"limit ({name})")  # the watch trails the client
    res["cpu_wall"], res["cpu"] = meter.stop()
    res["cpu"]["apiserver_limit"] = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    times = sorted(watcher.results().values())
    if len(times) < total:
        sys.exit(f"e2e-bind: limit: the watch saw {len(times)} of {total} pods bound")
    res["rate"] = total / max(times[-1] - times[0], 1e-9)
    log(f"limit ({name}): {res['rate']:.0f}/s first..last bind as the watch saw them, "
        f"{res['client_rate']:.0f}/s as the client saw them")
    res["delete_s"] = api.delete_namespace(ns)
    return res


def phase_latency(a, api, meter_pids, running):
    ns = f"{a.ns_prefix}-latency"
    total = a.gangs * a.members
    wait_quiet(a.busy_pattern, a.quiet_timeout)
    res = {"load_before": loadavg()}
    api.create_namespace(ns)
    muster = start_muster(a, "latency", running)
    res["warm_up_s"] = warm_up(api, ns, a)
    log(f"latency: warm-up pod bound {res['warm_up_s']:.2f} s after Muster's start")
    _, _, rv = api.list_rv(ns)
    watcher = Watcher(a.kubeconfig, ns, rv, log, total)
    meter = CpuMeter(dict(meter_pids, muster=muster.proc.pid, watch=watcher.proc.pid))
    writes0 = api.write_counts()
    meter.start()
    created, lag = {}, []
    log(f"latency: submitting {a.gangs} gangs at {a.rate:g} gangs/s, load {loadavg()}")
    submit_s = submit_gangs(api, ns, a, created, lag)
    log(f"latency: submitted in {submit_s:.1f} s ({a.gangs / submit_s:.1f} gangs/s, "
        f"{total / submit_s:.0f} pods/s); worst start lag {max(lag) * 1000:.0f} ms")
    ok = wait_bound(watcher, muster, total, a.stall_timeout, "latency")
    res["cpu_wall"], res["cpu"] = meter.stop()
    bound = watcher.results()
    if not ok or len(bound) < total:
        res["failed"] = f"{len(bound)}/{total} bound"
    per_pod = sorted((bound[n] - created[n]) * 1000 for n in created if n in bound)
    per_gang = []
    for i in range(a.gangs):
        _, names = gang_names(i, a.members)
        if all(n in bound for n in names):
            per_gang.append((max(bound[n] for n in names) - max(created[n] for n in names)) * 1000)
    per_gang.sort()
    res.update(submit_s=submit_s, submit_rate=a.gangs / submit_s, lag_max_ms=max(lag) * 1000,
               bound=len(bound), per_pod=per_pod, per_gang=per_gang)
    if per_pod:
        log("latency: pod create->bind ms p50/p90/p99/max "
            + "/".join(f"{percentile(per_pod, p):.0f}" for p in (50, 90, 99)) + f"/{per_pod[-1]:.0f}")
    finish(a, api, ns, "latency", res, muster, writes0)
    return res


# --- report -----------------------------------------------------------------


def report(a, tp, lat):
    """The table, then key=value lines. A phase that did not run is {}."""
    base = max(a.baseline) if a.baseline else float("nan")
    total = a.gangs * a.members

    def ratio(x):
        return x / base if base == base and base > 0 else float("nan")

    def row(k, v, note=""):
        print(f"  {k:<42} {v:>16}  {note}")

    print()
    print(f"e2e-bind summary: {a.gangs} gangs x {a.members} pods (1 GPU each), profile {a.profile}, "
          f"{os.cpu_count()} cores")
    row("measure", "value", "note")
    for i, b in enumerate(a.baseline):
        row(f"API server bind limit ({a.baseline_names[i]})", f"{b:.0f}/s", a.baseline_notes[i])
    if "create_rate" in tp:
        row("creation, Muster stopped", f"{tp['create_rate']:.0f}/s",
            f"{a.gangs + total} objects in {tp['create_s']:.1f} s; pods alone {tp['create_pod_rate']:.0f}/s")
    if "rate" in tp:
        row("Muster start -> first bind", f"{tp['first_bind_s']:.2f} s", "cache sync + first cycle")
        row("Muster start -> last bind", f"{tp['last_bind_s']:.2f} s")
        row("bind throughput, first..last bind", f"{tp['rate']:.0f}/s", f"{ratio(tp['rate']):.2f} x limit")
        row("bind throughput, from Muster's start", f"{tp['rate_from_start']:.0f}/s",
            f"{ratio(tp['rate_from_start']):.2f} x limit")
    if "submit_rate" in lat:
        row("latency phase: submitted", f"{lat['submit_rate']:.1f} gangs/s",
            f"{lat['submit_rate'] * a.members:.0f} pods/s; target {a.rate:g} gangs/s; "
            f"worst start lag {lat['lag_max_ms']:.0f} ms")
        row("pod create->bind p50/p90/p99/max", fmt_pcts(lat["per_pod"]), "ms")
        row("gang last create->last bind p50/p90/p99/max", fmt_pcts(lat["per_gang"]), "ms")
    for label, r in (("throughput", tp), ("latency", lat)):
        if "exit" not in r:
            continue
        c = r["cycles"]
        row(f"{label}: cycles that bound", f"{c['cycles']}",
            f"{c['binds']} binds; cycle ms p50 {c['ms_p50']:.1f}, max {c['ms_max']:.1f}, sum {c['ms_total']:.0f}")
        row(f"{label}: Muster exit on SIGTERM", f"{r['exit']}",
            f"after {r['stop_s']:.1f} s; peak RSS {r['rss_mib']:.0f} MiB")
        st = r.get("stalls")
        row(f"{label}: longest loop stall", f"{st['max_ms']:.1f} ms" if st else "unread",
            f"{st['over_100ms']} of {st['iterations']} loop iterations over 100 ms" if st else "/metrics")
        row(f"{label}: namespace cleanup", f"{r['delete_s']:.1f} s", "Muster stopped")
    for r in a.limits:
        cpu = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["cpu"].items(), key=lambda kv: -kv[1]))
        print(f"  limit ({r['name']}): CPU s in {r['cpu_wall']:.1f} s wall (the bind phase): {cpu}")
    for label, r in (("throughput", tp), ("latency", lat)):
        if "exit" not in r:
            continue
        cpu = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["cpu"].items(), key=lambda kv: -kv[1]))
        print(f"  {label}: CPU s in {r['cpu_wall']:.1f} s wall (start to last bind): {cpu}")
        print(f"  {label}: load average before {r['load_before']}, after {r['load_after']}")
        top = ", ".join(f"{v} {k} {n / total:.2f}" for n, (v, k) in r["writes"][:8])
        print(f"  {label}: API writes per pod, until {SETTLE_S} s after the last bind (all clients): {top}")
        print(f"  {label}: Muster's totals: {r['stopping']}")
        lines, n = other_lines(r["log"])
        print(f"  {label}: Muster log, {n} lines besides cycle lines" + (":" if lines else ""))
        for ln in lines:
            print(f"    {ln[:200]}")
    if "deciles" in tp:
        print(f"  throughput: pods bound per tenth of the bind window: {tp['deciles']}")
    print()

    if len(a.rounds_done) > 1:
        for i, (limits, t) in enumerate(a.rounds_done):
            print(f"  round {i + 1}: {round_line(a, limits, t)}")
        print()

    kv = {"e2e_gangs": a.gangs, "e2e_pods": total, "e2e_cores": os.cpu_count()}
    if len(a.rounds_done) > 1:
        kv["e2e_rounds"] = len(a.rounds_done)
        kv["e2e_bind_ratio_rounds"] = ",".join(f"{round_ratio(a, *r):.3f}" for r in a.rounds_done)
    for i, b in enumerate(a.baseline):
        kv[f"e2e_baseline_{re.sub(r'[^a-z0-9]+', '_', a.baseline_names[i])}_per_s"] = f"{b:.1f}"
    for r in a.limits:
        kv[f"e2e_baseline_{re.sub(r'[^a-z0-9]+', '_', r['name'])}_client_per_s"] = f"{r['client_rate']:.1f}"
    kv["e2e_baseline_per_s"] = f"{base:.1f}"
    if "create_rate" in tp:
        kv["e2e_create_objects_per_s"] = f"{tp['create_rate']:.1f}"
        kv["e2e_create_pods_per_s"] = f"{tp['create_pod_rate']:.1f}"
    if "rate" in tp:
        kv["e2e_first_bind_s"] = f"{tp['first_bind_s']:.3f}"
        kv["e2e_last_bind_s"] = f"{tp['last_bind_s']:.3f}"
        kv["e2e_bind_per_s"] = f"{tp['rate']:.1f}"
        kv["e2e_bind_ratio"] = f"{ratio(tp['rate']):.3f}"
        kv["e2e_bind_from_start_per_s"] = f"{tp['rate_from_start']:.1f}"
        kv["e2e_bind_from_start_ratio"] = f"{ratio(tp['rate_from_start']):.3f}"
    if "submit_rate" in lat:
        kv["e2e_latency_submit_gangs_per_s"] = f"{lat['submit_rate']:.2f}"
        for name, vals in (("pod", lat["per_pod"]), ("gang", lat["per_gang"])):
            for p in (50, 90, 99):
                kv[f"e2e_latency_{name}_p{p}_ms"] = f"{percentile(vals, p):.1f}"
            kv[f"e2e_latency_{name}_max_ms"] = f"{vals[-1]:.1f}" if vals else "nan"
    for label, r in (("throughput", tp), ("latency", lat)):
        if "exit" not in r:
            continue
        w = {k: n for n, k in r["writes"]}
        status_writes = sum(w.get(k, 0) for k in (("PATCH", "pods/status"), ("PATCH", "podgroups/status"),
                                                   ("POST", "events")))
        kv[f"e2e_{label}_cycles"] = r["cycles"]["cycles"]
        kv[f"e2e_{label}_cycle_ms_max"] = f"{r['cycles']['ms_max']:.1f}"
        kv[f"e2e_{label}_binds_per_pod"] = f"{w.get(('POST', 'pods/binding'), 0) / total:.2f}"
        kv[f"e2e_{label}_status_writes_per_pod"] = f"{status_writes / total:.2f}"
        kv[f"e2e_{label}_muster_exit"] = r["exit"]
        kv[f"e2e_{label}_muster_stop_s"] = f"{r['stop_s']:.1f}"
        kv[f"e2e_{label}_muster_peak_rss_mib"] = f"{r['rss_mib']:.0f}"
        if r.get("stalls"):
            kv[f"e2e_{label}_loop_stall_max_ms"] = f"{r['stalls']['max_ms']:.1f}"
            kv[f"e2e_{label}_loop_stalls_over_100ms"] = r["stalls"]["over_100ms"]
        kv[f"e2e_{label}_load"] = r["load_before"].split()[0]
    failed = [f"{k}: {r['failed']}" for k, r in (("throughput", tp), ("latency", lat)) if "failed" in r]
    failed += [f"{k}: did not run" for k, r in (("throughput", tp), ("latency", lat)) if "exit" not in r]
    kv["e2e_failed"] = "; ".join(failed) or "none"
    for k, v in kv.items():
        print(f"{k}={v}")
    return not failed and all(r.get("exit") == 0 for r in (tp, lat))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--muster", required=True, help="the muster binary")
    p.add_argument("--config", required=True, help="the queue configuration Muster runs with")
    p.add_argument("--muster-log", required=True)
    p.add_argument("--gangs", type=int, default=1000)
    p.add_argument("--members", type=int, default=8)
    p.add_argument("--rate", type=float, default=20.0, help="gangs per second in the latency phase")
    p.add_argument("--threads", type=int, default=48)
    p.add_argument("--scheduler", default="muster")
    p.add_argument("--ns-prefix", default="e2e-bind")
    p.add_argument("--baseline", type=float, action="append", default=[], help="binds/s (repeatable)")
    p.add_argument("--baseline-name", dest="baseline_names", action="append", default=[])
    p.add_argument("--limit", dest="limit_specs", action="append", default=[],
                   help='measure the bind limit in this shape first: "PROTO INFLIGHT STREAMS" '
                        '(e.g. "http2 256 32", "http1 256 256"; repeatable)')
    p.add_argument("--limit-bin", help="bench/apiserver_limit, with --limit")
    p.add_argument("--limit-nodes", help="a file of GPU node names, one a line, with --limit")
    p.add_argument("--server", help="the API server's URL, with --limit")
    p.add_argument("--token", help="a bearer token, with --limit")
    p.add_argument("--cacert", help="the API server's CA, with --limit")
    p.add_argument("--rounds", type=int, default=1,
                   help="the limits and the throughput phase, interleaved this many times; the round of the "
                        "median ratio is reported, every round's rates in a line")
    p.add_argument("--phases", default="throughput,latency",
                   help="which phases run, comma-separated (one alone is for development: A/B runs, profiles)")
    p.add_argument("--profile", default="large")
    p.add_argument("--cluster-dir", required=True, help="for the control plane's pid files")
    p.add_argument("--busy-pattern", default=os.environ.get("E2E_BUSY_PATTERN", "plan_cycle|alibaba_pack"),
                   help="other benchmarks to wait for (default $E2E_BUSY_PATTERN)")
    p.add_argument("--quiet-timeout", type=int, default=3600)
    p.add_argument("--stall-timeout", type=int, default=300,
                   help="seconds without a new bind after which a phase fails")
    a = p.parse_args()
    while len(a.baseline_names) < len(a.baseline):
        a.baseline_names.append(f"run {len(a.baseline_names) + 1}")
    a.baseline_notes = ["given"] * len(a.baseline)
    a.baseline_given = list(a.baseline)
    a.limits, a.rounds_done = [], []
    if a.rounds < 1:
        p.error("--rounds wants at least 1")
    for spec in a.limit_specs:
        if not re.fullmatch(r"(http1|http2) [1-9]\d* [1-9]\d*", spec):
            p.error(f'--limit wants "http1|http2 INFLIGHT STREAMS", not "{spec}"')
    if a.limit_specs and not all((a.limit_bin, a.limit_nodes, a.server, a.token, a.cacert)):
        p.error("--limit needs --limit-bin, --limit-nodes, --server, --token and --cacert")
    return a


def round_ratio(a, limits, t):
    """Muster's first..last rate over the best limit of its round."""
    best = max([r["rate"] for r in limits] + a.baseline_given, default=float("nan"))
    return t.get("rate", float("nan")) / best if best > 0 else float("nan")


def round_line(a, limits, t):
    parts = [f"limit ({r['name']}) {r['rate']:.0f}/s" for r in limits]
    if "rate" in t:
        parts.append(f"Muster {t['rate']:.0f}/s, {round_ratio(a, limits, t):.2f}x")
    return "; ".join(parts)


def median_round(a):
    """The round of the median ratio (the lower middle one of an even
    count) becomes the report's limits and throughput phase: the limit and
    Muster swing by a third from minute to minute on this shared machine,
    and rounds interleave them."""
    def ratio(i):  # a round without a ratio (no limit, no throughput) sorts last
        v = round_ratio(a, *a.rounds_done[i])
        return float("inf") if math.isnan(v) else v

    order = sorted(range(len(a.rounds_done)), key=ratio)
    limits, t = a.rounds_done[order[(len(order) - 1) // 2]]
    for r in limits:
        a.limits.append(r)
        a.baseline.append(r["rate"])
        a.baseline_names.append(r["name"])
        a.baseline_notes.append(f"watch; the client saw {r['client_rate']:.0f}/s")
    return t


def main():
    a = parse_args()
    api = Api(a.kubeconfig, a.threads + 4, log)
    for suffix in ("throughput", "latency"):  # leftovers of an interrupted run
        api.delete_namespace(f"{a.ns_prefix}-{suffix}")
    meter_pids = {}
    for c in CONTROL_PLANE:
        try:
            with open(os.path.join(a.cluster_dir, "run", f"{c}.pid")) as f:
                meter_pids[c] = int(f.read())
        except (OSError, ValueError):
            pass
    with open(a.muster_log, "wb"):
        pass  # a fresh log for this run
    running, tp, lat = [], {}, {}
    phases = set(a.phases.split(","))
    if phases - {"throughput", "latency"}:
        sys.exit(f"e2e-bind: unknown phase in --phases {a.phases}")
    try:
        for i in range(a.rounds):
            limits = [phase_limit(a, api, meter_pids, spec) for spec in a.limit_specs]
            t = phase_throughput(a, api, meter_pids, running) if "throughput" in phases else {}
            a.rounds_done.append((limits, t))
            if a.rounds > 1:
                log(f"round {i + 1} of {a.rounds}: {round_line(a, limits, t)}")
        tp = median_round(a)
        if "latency" in phases:
            lat = phase_latency(a, api, meter_pids, running)
    finally:
        for m in running:  # after an error: never leave a Muster behind
            m.stop()
    log(f"Muster's log: {a.muster_log}")
    return 0 if report(a, tp, lat) else 1


if __name__ == "__main__":
    sys.exit(main())
