"""Muster beside the gang schedulers platform teams run today, on one cluster
in one run (bench/peers runs it; bench/native-gangs runs it for two).

The schedulers, each with the PodGroup dialect it reads:

  muster        `muster run`, bench/peers.yaml; the dialect of --muster-dialect
                (scheduler-plugins by default; volcano and native too)
  coscheduling  scheduler-plugins' kube-scheduler with Coscheduling (its
                manifests' profile), scheduling.x-k8s.io/v1alpha1 PodGroups
  volcano       Volcano's scheduler (vc-scheduler, its chart's actions and
                plugins, plus preempt and network-topology-aware),
                scheduling.volcano.sh/v1beta1 PodGroups in the queue `default`
  kube          kube-scheduler 1.37 with GenericWorkload (GangScheduling in
                its default profile), scheduling.k8s.io/v1beta1 PodGroups

Every scheduler gets the same shapes of work (below), one process for all
its shapes, each shape in a namespace of its own whose pods and PodGroups
are deleted (and waited for) before the next; the runs are interleaved
(rep 1 of each scheduler in --order, then rep 2, ...). Pods ask whole GPUs
(500m CPU and 1 GiB each), tolerate the GPU taint and select the
benchmark's pool (muster.dev/pool=POOL: nodes of 8 GPUs, racks of 8).
"Filler" pods are created already bound (spec.nodeName, as if running) by
the benchmark itself, never by a scheduler.

  backlog     GANGS gangs of MEMBERS one-GPU pods created while the
              scheduler is NOT running (the first shape: it starts after).
              pods/s = pods / (last bind - first bind).
  stream      STREAM gangs arriving at RATE gangs/s (a PodGroup, then its
              pods): pods/s = pods / (first create -> last bind), create ->
              bind p50/p99 per pod and per gang (its last create -> its last
              bind). The default, 15 gangs/s (120 pods/s), is what this
              2-core machine sustains beside the API server: at 40 the
              client itself reached only 15-30 gangs/s and every scheduler's
              latency was the saturated API server's (bench/README.md).
  release     STREAM gangs whose pods are created first, without their
              PodGroup, with the scheduler running (each scheduler holds
              them back: no PodGroup, no gang); once its writes about them
              have stopped for 2 s, the PodGroups are created at
              RELEASE_RATE gangs/s, which releases the gangs. The stream
              the machine cannot offer by creating pods (1 write a gang,
              not 9): the default, 60 gangs/s (480 pods/s), is over twice
              any peer's backlog rate and half the API server's bind
              limit. pods/s = pods / (first release -> last bind);
              release -> bind p50/p99 per pod.
  rack        RACK_GANGS gangs of 4 pods x 8 GPUs (whole nodes) on a pool
              where one rack in four has its 8 nodes free and every other
              rack only 3 (fillers of 1 GPU on 5 nodes): a gang fits in one
              rack only in the free ones. Share of gangs placed in one rack;
              create -> last bind. Asked where the dialect can say it
              (native: schedulingConstraints.topology key muster.dev/rack;
              Volcano: networkTopology hard within tier 1, each rack a
              HyperNode of tier 1; Muster places every gang in the smallest
              domain of its topology levels that holds it); Coscheduling's
              PodGroup cannot, and its share is where it put them unasked.
  preempt     The pool full of low-priority gangs (fillers: 8 pods x 1 GPU
              a node, one PodGroup a node, priority class bench-low); then
              PREEMPTORS high-priority gangs of 8 (bench-high) at 2 gangs/s.
              Per preemptor: create -> last bind; victims (pods deleted) per
              preemptor; low gangs left partly running.
  smalljobs   The pool full (fillers of 8 GPUs) but SMALL_FREE nodes; a big
              gang of BIG_SHARE of the pool's nodes (8-GPU pods) waits; then
              one-pod jobs (1 GPU, their own PodGroup of 1) arrive at
              SMALL_RATE/s for SMALL_FOR s and each is deleted SMALL_RUN s
              after it is bound (its runtime, which its annotation
              muster.dev/expected-runtime tells); the fillers (whose
              annotation says when they end) are deleted FREE_AT s into the
              stream. Small jobs: pods/s and create -> bind p50/p99; the big
              gang: last bind - FREE_AT (its delay once room exists).
  contention  (bench-native) OVERCOMMIT x the pool's GPUs asked at once,
              created round by round; floor(GPUs / MEMBERS) whole gangs are
              correct, any other gang must have no pod bound.

Safety, read from the watch of every pod version (never from the
schedulers): gangs partial at the end of a shape (some but not all of
minMember bound and not deleted), gangs partial for longer than 1 s, the
time from a whole gang's first member seen bound to its last (p50 and max:
how long it stood partly bound on the way), pods seen bound twice, nodes
whose bound GPUs ever exceeded 8. Per scheduler process: CPU seconds per
shape and in all (/proc/PID/stat), peak RSS (VmHWM) before SIGTERM, its
exit status. API server write requests per
bound pod per shape (apiserver_request_total, all clients).

Output: progress lines, the table (the median over reps; the ratio is
Muster's against the best peer), then one peers_<scheduler>_<shape>_<what>=
value line each (per rep with _r<N>). Exit 1 when Muster failed a shape,
left a gang partial or over-committed a node, or a scheduler did not stop
cleanly on SIGTERM. A peer that cannot do a shape is shown so, with why.
"""

import argparse
import concurrent.futures
import json
import math
import os
import signal
import subprocess
import sys
import time

import urllib3
from kubernetes.client.rest import ApiException

import kubebench
from kubebench import (GPU, GPU_TOLERATION, Watcher, cpu_seconds, fmt_pcts, loadavg, percentile, status_kib,
                       terminate, writes_between)

BENCH_LABEL = "bench.muster.dev/peers"
POOL_LABEL = "muster.dev/pool"
RACK_LABEL = "muster.dev/rack"
SMALL_LABEL = "bench.muster.dev/small"
NODE_GPUS = 8
LONG_PARTIAL_S = 1.0
LOW, HIGH = "bench-low", "bench-high"
log = kubebench.Log("peers")


# --- dialects -----------------------------------------------------------------


class Dialect:
    """How a gang is written for one scheduler: its PodGroup and how a pod
    names it."""

    group = version = plural = ""
    rack_why = "its PodGroup has no rack constraint"

    def podgroup(self, name, members, prio=None, rack=False):
        raise NotImplementedError

    def member(self, pod, gang):
        raise NotImplementedError

    def rack_asked(self):
        return False


class Native(Dialect):
    group, version, plural = "scheduling.k8s.io", "v1beta1", "podgroups"

    def podgroup(self, name, members, prio=None, rack=False):
        spec = {"schedulingPolicy": {"gang": {"minCount": members}}}
        if prio:
            spec["priorityClassName"] = prio
        if rack:
            spec["schedulingConstraints"] = {"topology": [{"key": RACK_LABEL}]}
        return {"apiVersion": f"{self.group}/{self.version}", "kind": "PodGroup",
                "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}}, "spec": spec}

    def member(self, pod, gang):
        pod["spec"]["schedulingGroup"] = {"podGroupName": gang}

    def rack_asked(self):
        return True


class Plugins(Dialect):
    group, version, plural = "scheduling.x-k8s.io", "v1alpha1", "podgroups"
    rack_why = "Coscheduling's PodGroup has no topology"

    def podgroup(self, name, members, prio=None, rack=False):
        return {"apiVersion": f"{self.group}/{self.version}", "kind": "PodGroup",
                "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}}, "spec": {"minMember": members}}

    def member(self, pod, gang):
        pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = gang


class Volcano(Dialect):
    """Racks are HyperNodes of tier 1 (Api.hypernodes) and a gang asks to
    stay in one with networkTopology mode hard, highest tier 1."""
    group, version, plural = "scheduling.volcano.sh", "v1beta1", "podgroups"

    def podgroup(self, name, members, prio=None, rack=False):
        spec = {"minMember": members, "queue": "default"}
        if prio:
            spec["priorityClassName"] = prio
        if rack:
            spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
        return {"apiVersion": f"{self.group}/{self.version}", "kind": "PodGroup",
                "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}}, "spec": spec}

    def member(self, pod, gang):
        pod["metadata"].setdefault("annotations", {})["scheduling.k8s.io/group-name"] = gang

    def rack_asked(self):
        return True


DIALECTS = {"native": Native(), "plugins": Plugins(), "volcano": Volcano()}


def pod(name, sched_name, pool, gpus, prio=None, node=None, runtime_s=None):
    """A benchmark pod: `gpus` GPUs, 500m CPU, 1 GiB; bound at creation when
    `node` is given (a filler)."""
    spec = {
        "schedulerName": sched_name,
        "nodeSelector": {POOL_LABEL: pool},
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "tolerations": [GPU_TOLERATION],
        "containers": [{
            "name": "main", "image": "busybox",
            "resources": {"requests": {"cpu": "500m", "memory": "1Gi", GPU: str(gpus)},
                          "limits": {GPU: str(gpus)}},
        }],
    }
    meta = {"name": name, "labels": {BENCH_LABEL: "1"}}
    if prio:
        spec["priorityClassName"] = prio
    if node:
        spec["nodeName"] = node
    if runtime_s is not None:
        meta["annotations"] = {"muster.dev/expected-runtime": str(int(math.ceil(runtime_s)))}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


# --- the API -------------------------------------------------------------------


class Api(kubebench.Api):
    def create_podgroup(self, dialect, ns, body):
        self.create_object(dialect.group, dialect.version, ns, dialect.plural, body)

    def pool_nodes(self, pool):
        """[(name, rack)] of the Ready nodes of the pool, by name."""
        r = self.core.list_node(label_selector=f"{POOL_LABEL}={pool}", _preload_content=False)
        out = []
        for n in json.loads(r.data)["items"]:
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
            if ready and int(n["status"]["allocatable"].get(GPU, "0")) == NODE_GPUS:
                out.append((n["metadata"]["name"], n["metadata"]["labels"].get(RACK_LABEL, "")))
        return sorted(out)

    def delete_pods(self, ns, names):
        """Deleted now (grace period 0), from a few threads."""
        def one(n):
            try:
                self.done(self.core.delete_namespaced_pod(n, ns, grace_period_seconds=0, _preload_content=False))
            except ApiException as e:
                if e.status != 404:
                    raise
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(one, names))

    def clear_namespace(self, ns, timeout=900):
        """Its pods (grace period 0, in one deletecollection) and PodGroups of
        every dialect deleted, and waited for; returns seconds. A
        deletecollection the server times out has gone on deleting: it is
        sent again until nothing is left."""
        t0 = time.monotonic()
        self.clear_calls = 0

        def sent(call, *args, **kw):
            self.clear_calls += 1
            try:
                self.done(call(*args, _preload_content=False, _request_timeout=120, **kw))
            except (ApiException, urllib3.exceptions.HTTPError) as e:
                log(f"clearing {ns}: {type(e).__name__} {getattr(e, 'status', '')}; again")

        def groups_left():
            return [d for d in DIALECTS.values() if json.loads(self.custom.list_namespaced_custom_object(
                d.group, d.version, ns, d.plural, limit=1, _preload_content=False).data)["items"]]

        while time.monotonic() - t0 < timeout:
            pods = json.loads(self.core.list_namespaced_pod(ns, limit=1, _preload_content=False).data)["items"]
            groups = groups_left()
            if not pods and not groups:
                return time.monotonic() - t0
            if pods:
                sent(self.core.delete_collection_namespaced_pod, ns, grace_period_seconds=0)
            for d in groups:
                sent(self.custom.delete_collection_namespaced_custom_object, d.group, d.version, ns, d.plural)
            time.sleep(0.2)
        log.fail(f"pods or PodGroups of {ns} still there after {timeout}s")

    def delete_namespaces(self, prefix):
        """Every namespace whose name starts with `prefix`, in parallel (the
        namespace controller takes 5 to 15 s each here)."""
        r = self.core.list_namespace(_preload_content=False)
        names = [n["metadata"]["name"] for n in json.loads(r.data)["items"]
                 if n["metadata"]["name"].startswith(prefix)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(self.delete_namespace, names))

    def hypernodes(self, nodes):
        """Volcano's view of the racks: a HyperNode of tier 1 per rack (its
        nodes by the rack label), all under one of tier 2."""
        racks = sorted({r for _, r in nodes})

        def hn(name, tier, members):
            body = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                    "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}},
                    "spec": {"tier": tier, "members": members}}
            try:
                self.done(self.custom.create_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes",
                                                                   body, _preload_content=False))
            except ApiException as e:
                if e.status != 409:
                    raise

        for r in racks:
            hn(f"peers-{r}", 1, [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {RACK_LABEL: r}}}}])
        hn("peers-all", 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": f"peers-{r}"}}} for r in racks])

    def priority_classes(self):
        for name, value in ((LOW, 1000), (HIGH, 100000)):
            body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}}, "value": value,
                    "preemptionPolicy": "PreemptLowerPriority"}
            try:
                self.done(self.api.call_api("/apis/scheduling.k8s.io/v1/priorityclasses", "POST", body=body,
                                            auth_settings=["BearerToken"], _preload_content=False,
                                            header_params={"Content-Type": "application/json"})[0])
            except ApiException as e:
                if e.status != 409:
                    raise


# --- the schedulers -------------------------------------------------------------


class Scheduler:
    """One scheduler: how it is started, its name in pods' schedulerName,
    its dialect, and per rep one process with its output in a log file."""

    def __init__(self, key, label, name, dialect, argv, log_dir):
        self.key, self.label, self.name, self.dialect, self.argv = key, label, name, dialect, argv
        self.log_dir = log_dir
        self.proc = None

    def start(self, rep):
        self.log_path = os.path.join(self.log_dir, f"{self.key}-r{rep}.log")
        self.out = open(self.log_path, "wb")
        self.status, self.stop_s, self.hwm_kib, self.cpu_total = None, None, None, None
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
            return None
        self.hwm_kib = status_kib(self.proc.pid, "VmHWM")
        self.cpu_total = self.cpu()
        self.status, self.stop_s = terminate(self.proc, timeout)
        self.out.close()
        return {"status": self.status, "clean": self.clean_exit(), "hwm_kib": self.hwm_kib,
                "cpu_s": self.cpu_total}

    def clean_exit(self):
        """Exit 0; or, for a kube-scheduler without leader election (kube,
        coscheduling), its own way to stop: exit 1 with "finished without
        leader elect" (cmd/kube-scheduler/app/server.go)."""
        if self.status == 0:
            return True
        if self.key != "muster" and self.status == 1:
            with open(self.log_path, "rb") as f:
                return b"finished without leader elect" in f.read()
        return False


def kube_scheduler_config(path, kubeconfig, scheduler_name, qps, coscheduling):
    """A KubeSchedulerConfiguration of one profile, no leader election, client
    limits as high as Muster's own (scheduler/run.c: 5,000 writes/s). kube:
    the default plugins (with GenericWorkload on they include GangScheduling).
    coscheduling: scheduler-plugins' manifests/coscheduling profile, the
    permit wait raised from its 10 s to 60 s so that a gang whose pods come
    slowly is not sent back."""
    plugins = """  plugins:
    multiPoint:
      enabled: [{name: Coscheduling}]
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
  pluginConfig:
  - name: Coscheduling
    args: {permitWaitingTimeSeconds: 60}
""" if coscheduling else ""
    with open(path, "w") as f:
        f.write(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
  qps: {qps}
  burst: {qps}
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {scheduler_name}
{plugins}""")


def volcano_config(path):
    """Volcano's chart's volcano-scheduler.conf (installer/helm/chart/volcano/
    config), with the preempt action and the network-topology-aware plugin
    added, as users enable them (the rack shape's HyperNodes)."""
    with open(path, "w") as f:
        f.write("""actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
""")


def schedulers(a):
    d = a.log_dir
    out = {}
    if a.muster:
        out["muster"] = Scheduler("muster", "Muster", "muster", DIALECTS[a.muster_dialect],
                                  [a.muster, "run", "--kubeconfig", a.kubeconfig, "--config", a.muster_config], d)
    if a.kube_scheduler:
        cfg = os.path.join(d, "kube-scheduler-config.yaml")
        kube_scheduler_config(cfg, a.kubeconfig, "kube-gang", a.qps, False)
        out["kube"] = Scheduler("kube", "kube-scheduler", "kube-gang", DIALECTS["native"],
                                [a.kube_scheduler, "--config", cfg, "--secure-port=0",
                                 f"--feature-gates={a.feature_gates}"], d)
    if a.coscheduling:
        cfg = os.path.join(d, "coscheduling-config.yaml")
        kube_scheduler_config(cfg, a.kubeconfig, "coscheduling", a.qps, True)
        out["coscheduling"] = Scheduler("coscheduling", "Coscheduling", "coscheduling", DIALECTS["plugins"],
                                        [a.coscheduling, "--config", cfg, "--secure-port=0"], d)
    if a.volcano:
        cfg = os.path.join(d, "volcano-scheduler.conf")
        volcano_config(cfg)
        out["volcano"] = Scheduler("volcano", "Volcano", "volcano", DIALECTS["volcano"],
                                   [a.volcano, "--kubeconfig", a.kubeconfig, "--scheduler-conf", cfg,
                                    "--scheduler-name", "volcano", "--leader-elect=false",
                                    f"--kube-api-qps={a.qps}", f"--kube-api-burst={a.qps}",
                                    "--listen-address=127.0.0.1:0", "--healthz-address=127.0.0.1:0"], d)
    return out


# --- a shape's bookkeeping ------------------------------------------------------


def gang_safety(wl, gangs, t_end):
    """From the watch: for {gang: (minMember, [pods])}, gangs whole, partial
    at the end (some but not all of minMember bound and still there), empty;
    gangs partial for longer than LONG_PARTIAL_S; first-to-last member bind
    spread of the whole gangs."""
    bound, gone = wl["bound"], wl["gone"]
    whole = partial = long_ = 0
    spreads = []
    for g, (need, names) in gangs.items():
        ts = sorted(bound[n] for n in names if n in bound)
        live = sum(1 for n in names if n in bound and n not in gone)
        if len(ts) >= need:
            whole += 1
            spreads.append(ts[need - 1] - ts[0])
            if ts[need - 1] - ts[0] > LONG_PARTIAL_S:
                long_ += 1
        elif ts and t_end - ts[0] > LONG_PARTIAL_S:
            long_ += 1
        if 0 < live < need:
            partial += 1
    spreads.sort()
    return {"whole": whole, "partial_end": partial, "empty": len(gangs) - whole - partial, "partial_long": long_,
            "spread_p50_ms": percentile(spreads, 50) * 1000, "spread_max_ms": (spreads[-1] * 1000 if spreads else 0.0),
            "double": wl["double"], "over": len(wl["over"])}


class Shape:
    """One shape of one scheduler's rep: its namespace, the watch, the clocks
    and counters, the gangs it checks, and its teardown."""

    def __init__(self, a, api, sched, name, rep):
        self.a, self.api, self.sched, self.name = a, api, sched, name
        self.ns = f"peers-{sched.key}-{name}-r{rep}"
        self.what = f"{sched.label} {name} r{rep}"
        self.res = {"load_before": loadavg()}
        self.gangs = {}  # gang -> (minMember, [pod names]): what gang_safety checks
        api.create_namespace(self.ns)
        _, _, rv = api.list_rv(self.ns)
        self.watcher = Watcher(a.kubeconfig, self.ns, rv, log, node_gpus=NODE_GPUS)
        self.writes0 = api.write_counts()
        self.cpu0, self.t0 = (sched.cpu() if sched.alive() else 0.0), time.monotonic()

    def restart_clocks(self):
        self.cpu0, self.t0 = (self.sched.cpu() if self.sched.alive() else 0.0), time.monotonic()

    def gang(self, name, members, gpus, prio=None, rack=False, node=None, runtime_s=None):
        """A PodGroup and its pods' bodies (not created); the gang is checked."""
        d = self.sched.dialect
        names = [f"{name}-{k}" for k in range(members)]
        pods = []
        for k, n in enumerate(names):
            p = pod(n, self.sched.name, self.a.pool, gpus, prio, node[k] if node else None, runtime_s)
            d.member(p, name)
            pods.append(p)
        self.gangs[name] = (members, names)
        return d.podgroup(name, members, prio, rack), pods

    def create(self, groups, pods, threads=None):
        """PodGroups, then pods, from a thread pool; returns {pod: create
        returned}."""
        created = {}

        def one_pod(p):
            self.api.create_pod(self.ns, p)
            created[p["metadata"]["name"]] = time.monotonic()

        with concurrent.futures.ThreadPoolExecutor(threads or self.a.threads) as pool:
            list(pool.map(lambda g: self.api.create_podgroup(self.sched.dialect, self.ns, g), groups))
            list(pool.map(one_pod, pods))
        return created

    def arrive(self, rate, bodies):
        """Each (PodGroup, pods) of `bodies` created at `rate` a second, its
        PodGroup first; returns ({pod: create returned}, seconds, worst lag)."""
        created = {}

        def one(i):
            g, ps = bodies[i]
            self.api.create_podgroup(self.sched.dialect, self.ns, g)
            for p in ps:
                self.api.create_pod(self.ns, p)
                created[p["metadata"]["name"]] = time.monotonic()

        submit_s, lag = arrivals(rate, len(bodies), one, self.a.threads)
        return created, submit_s, lag

    def wait(self, expect, stall, settle=0.0, quiet_after=None):
        """Until the watch has seen `expect` pods bound (then `settle` s more),
        or, with `quiet_after` a time, no new bind for `stall` s after it.
        Returns "all", "quiet", "stalled" or "exited"."""
        last_n, last_change, said = -1, time.monotonic(), time.monotonic()
        while True:
            n = self.watcher.bound()
            now = time.monotonic()
            if n != last_n:
                last_n, last_change = n, now
            if n >= expect:
                time.sleep(settle)
                return "all"
            if not self.sched.alive():
                log(f"{self.what}: {self.sched.label} exited ({self.sched.proc.returncode}) at {n}/{expect} bound")
                return "exited"
            if now - max(last_change, quiet_after or last_change) > stall:
                if quiet_after is not None:
                    return "quiet"
                log(f"{self.what}: no new bind for {stall} s at {n}/{expect} bound; giving up")
                return "stalled"
            if now - said >= 10:
                log(f"{self.what}: {n}/{expect} bound, load {loadavg()}")
                said = now
            time.sleep(0.1)

    def end(self, outcome):
        """Stops the clocks, takes the watch, counts writes; returns bind times."""
        self.res["cpu_s"] = (self.sched.cpu() or 0.0) - self.cpu0
        self.res["wall_s"] = time.monotonic() - self.t0
        t_end = time.monotonic()
        bound = self.watcher.results()
        self.wl = self.watcher.log
        self.writes_end = self.api.write_counts()
        self.res["writes"] = writes_between(self.writes0, self.writes_end)
        self.res["outcome"] = outcome
        self.res["safety"] = gang_safety(self.wl, self.gangs, t_end)
        self.res["load_after"] = loadavg()
        return bound

    def teardown(self):
        """Pods and PodGroups deleted with the scheduler still running, as
        when jobs end, and waited for."""
        cpu0 = self.sched.cpu()
        self.res["delete_s"] = self.api.clear_namespace(self.ns)
        self.res["teardown_cpu_s"] = (self.sched.cpu() or 0.0) - (cpu0 or 0.0)
        return self.res


def bound_pods(shape, bound):
    n = sum(1 for g, (_, names) in shape.gangs.items() for x in names if x in bound)
    shape.res["bound"] = n
    return n


# --- shapes -------------------------------------------------------------------


def shape_backlog(a, api, sched, rep, nodes):
    s = Shape(a, api, sched, "backlog", rep)
    groups, pods = [], []
    for i in range(a.gangs):
        g, ps = s.gang(f"g-{i:05d}", a.members, 1)
        groups.append(g)
        pods += ps
    t0 = time.monotonic()
    s.create(groups, pods)
    total = len(pods)
    log(f"{s.what}: created {a.gangs} PodGroups and {total} pods in {time.monotonic() - t0:.1f} s, "
        f"{sched.label} not running")
    s.restart_clocks()
    sched.start(rep)
    outcome = s.wait(total, a.stall_timeout, settle=a.settle)
    bound = s.end(outcome)
    times = sorted(bound.values())
    if times:
        first, last = times[0] - sched.t_start, times[-1] - sched.t_start
        s.res.update(first_bind_s=first, last_bind_s=last, rate=len(times) / max(last - first, 1e-9),
                     rate_from_start=len(times) / last)
        log(f"{s.what}: {len(times)}/{total} bound, first {first:.2f} s after start, last {last:.2f} s: "
            f"{s.res['rate']:.0f} pods/s")
    if bound_pods(s, bound) < total:
        s.res["failed"] = f"{len(bound)}/{total} bound ({outcome})"
    return s.teardown()


def arrivals(rate, count, fn, threads):
    """fn(i) at t0 + i / rate, from a pool; returns (seconds, worst lag)."""
    t0 = time.monotonic()
    lag = [0.0]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        futs = []
        for i in range(count):
            due = t0 + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            lag[0] = max(lag[0], time.monotonic() - due)
            futs.append(pool.submit(fn, i))
        for f in futs:
            f.result()
    return time.monotonic() - t0, lag[0]


def gang_latency(gangs, created, bound):
    """Per gang of {gang: (min, names)} wholly bound: last create -> last bind, ms."""
    out = []
    for _, names in gangs.values():
        if all(n in bound for n in names) and all(n in created for n in names):
            out.append((max(bound[n] for n in names) - max(created[n] for n in names)) * 1000)
    return sorted(out)


def stream_end(s, t_first, arrived, n_gangs, submit_s, lag, what):
    """The end of a stream shape (stream, release): waits for every pod
    bound, then per pod and per gang `what` -> bind, and pods/s from
    t_first; `arrived` is {pod: when it arrived}. Returns the teardown."""
    a = s.a
    total = n_gangs * a.members
    outcome = s.wait(total, a.stall_timeout, settle=a.settle)
    bound = s.end(outcome)
    per_pod = sorted((bound[n] - arrived[n]) * 1000 for n in arrived if n in bound)
    per_gang = gang_latency(s.gangs, arrived, bound)
    times = sorted(bound.values())
    s.res.update(submit_rate=n_gangs / submit_s, lag_max_ms=lag * 1000, per_pod=per_pod, per_gang=per_gang,
                 rate=len(times) / max(times[-1] - t_first, 1e-9) if times else None)
    log(f"{s.what}: {len(bound)}/{total} bound; {what}d at {n_gangs / submit_s:.1f} gangs/s; "
        f"pod {what}->bind ms p50/p90/p99/max {fmt_pcts(per_pod)}")
    if bound_pods(s, bound) < total:
        s.res["failed"] = f"{len(bound)}/{total} bound ({outcome})"
    return s.teardown()


def shape_stream(a, api, sched, rep, nodes):
    s = Shape(a, api, sched, "stream", rep)
    bodies = [s.gang(f"s-{i:05d}", a.members, 1) for i in range(a.stream_gangs)]
    t_first = time.monotonic()
    created, submit_s, lag = s.arrive(a.rate, bodies)
    return stream_end(s, t_first, created, len(bodies), submit_s, lag, "create")


def quiet_writes(api, what=("pods/status", "events"), still_s=2.0, cap_s=120.0):
    """Until the API server has taken no write of `what` (a scheduler's
    answers to pods it cannot place yet) for `still_s`; returns seconds."""
    t0 = time.monotonic()

    def n():
        return sum(v for (_, r), v in api.write_counts().items() if r in what)

    last, since = n(), time.monotonic()
    while time.monotonic() - t0 < cap_s:
        time.sleep(0.5)
        now = n()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= still_s:
            break
    return time.monotonic() - t0


def shape_release(a, api, sched, rep, nodes):
    s = Shape(a, api, sched, "release", rep)
    bodies = [s.gang(f"r-{i:05d}", a.members, 1) for i in range(a.stream_gangs)]
    t0 = time.monotonic()
    s.create([], [p for _, ps in bodies for p in ps])
    quiet = quiet_writes(api)
    log(f"{s.what}: created {len(bodies) * a.members} pods without their PodGroups in "
        f"{time.monotonic() - t0 - quiet:.1f} s; their scheduler's writes quiet after {quiet:.1f} s more")
    s.restart_clocks()
    writes0 = api.write_counts()
    released = {}

    def one(i):
        g, ps = bodies[i]
        api.create_podgroup(sched.dialect, s.ns, g)
        t = time.monotonic()
        for p in ps:
            released[p["metadata"]["name"]] = t

    t_first = time.monotonic()
    submit_s, lag = arrivals(a.release_rate, len(bodies), one, a.threads)
    out = stream_end(s, t_first, released, len(bodies), submit_s, lag, "release")
    log(f"{s.what}: writes once released: "
        + ", ".join(f"{v} {r} {n:.0f}" for n, (v, r) in writes_between(writes0, s.writes_end)[:6]))
    return out


def racks_of(nodes):
    racks = {}
    for n, r in nodes:
        racks.setdefault(r, []).append(n)
    return [racks[r] for r in sorted(racks)]


def shape_rack(a, api, sched, rep, nodes):
    s = Shape(a, api, sched, "rack", rep)
    fillers = []
    for i, members in enumerate(racks_of(nodes)):
        if i % 4 and len(members) >= 5:
            fillers += [pod(f"f-{n}", "bench-filler", a.pool, 1, node=n) for n in members[:5]]
    s.create([], fillers)
    asked = sched.dialect.rack_asked() or sched.key == "muster"
    groups, pods = [], []
    for i in range(a.rack_gangs):
        g, ps = s.gang(f"r-{i:03d}", 4, NODE_GPUS, rack=asked)
        groups.append(g)
        pods += ps
    s.restart_clocks()
    created = s.create(groups, pods)
    total = len(fillers) + len(pods)
    outcome = s.wait(total, a.stall_timeout, settle=a.settle)
    bound = s.end(outcome)
    rack_of = dict(nodes)
    one_rack = sum(1 for _, names in s.gangs.values()
                   if all(n in bound for n in names) and len({rack_of[s.wl["node"][n]] for n in names}) == 1)
    per_gang = gang_latency(s.gangs, created, bound)
    s.res.update(one_rack=one_rack, gangs=a.rack_gangs, per_gang=per_gang,
                 asked=asked, why=None if asked else sched.dialect.rack_why)
    log(f"{s.what}: {one_rack}/{a.rack_gangs} gangs in one rack ({'asked' if asked else 'not asked'}); "
        f"create->bind ms {fmt_pcts(per_gang)}")
    if bound_pods(s, bound) < len(pods):
        s.res["failed"] = f"{s.res['bound']}/{len(pods)} bound ({outcome})"
    return s.teardown()


def shape_preempt(a, api, sched, rep, nodes):
    s = Shape(a, api, sched, "preempt", rep)
    groups, fillers = [], []
    for i, (n, _) in enumerate(nodes):
        g, ps = s.gang(f"low-{i:04d}", NODE_GPUS, 1, prio=LOW, node=[n] * NODE_GPUS)
        groups.append(g)
        fillers += ps
    s.create(groups, fillers)
    low = dict(s.gangs)
    n0 = s.wait(len(fillers), 60)
    log(f"{s.what}: {len(fillers)} low-priority pods running on {len(nodes)} nodes ({n0}); "
        f"{a.preemptors} preemptors of {a.members} at 2 gangs/s")
    time.sleep(a.settle)  # the scheduler sees them all
    bodies = [s.gang(f"high-{i:03d}", a.members, 1, prio=HIGH) for i in range(a.preemptors)]
    s.restart_clocks()
    created, _, _ = s.arrive(2.0, bodies)
    total = len(fillers) + a.preemptors * a.members
    outcome = s.wait(total, a.preempt_wait, settle=a.settle, quiet_after=time.monotonic())
    bound = s.end(outcome)
    high = {g: v for g, v in s.gangs.items() if g.startswith("high-")}
    per_gang = gang_latency(high, created, bound)
    victims = sum(1 for _, names in low.values() for n in names if n in s.wl["gone"])
    broken = sum(1 for _, names in low.values()
                 if 0 < sum(1 for n in names if n not in s.wl["gone"]) < NODE_GPUS)
    whole = len(per_gang)
    s.res.update(whole=whole, preemptors=a.preemptors, per_gang=per_gang, victims=victims,
                 victims_per=(victims / whole if whole else None), low_broken=broken)
    # A low gang cut by preemption is "partial" in gang_safety: counted apart.
    s.res["safety"]["partial_end"] -= broken
    log(f"{s.what}: {whole}/{a.preemptors} preemptors bound ({outcome}); {victims} victims; "
        f"{broken} low gangs left partly running; create->bind ms {fmt_pcts(per_gang)}")
    s.res["bound"] = whole * a.members
    return s.teardown()


def shape_smalljobs(a, api, sched, rep, nodes):
    s = Shape(a, api, sched, "smalljobs", rep)
    free = nodes[:a.small_free]
    busy = nodes[a.small_free:]
    fillers = [pod(f"long-{n}", "bench-filler", a.pool, NODE_GPUS, node=n, runtime_s=a.free_at + a.settle)
               for n, _ in busy]
    s.create([], fillers)
    big_n = int(a.big_share * len(nodes))
    g, big = s.gang("big", big_n, NODE_GPUS, runtime_s=600)
    s.create([g], big)
    log(f"{s.what}: {len(fillers)} nodes full, {len(free)} free; a gang of {big_n} x {NODE_GPUS} GPUs waits; "
        f"small jobs at {a.small_rate:g}/s for {a.small_for:g} s, each {a.small_run:g} s; "
        f"the full nodes free at {a.free_at:g} s")
    count = int(a.small_rate * a.small_for)
    bodies = [s.gang(f"small-{i:05d}", 1, 1, runtime_s=a.small_run) for i in range(count)]
    for _, ps in bodies:
        ps[0]["metadata"]["labels"][SMALL_LABEL] = "1"
    s.restart_clocks()
    t0 = time.monotonic()
    s.t_free, s.stop_ender = t0 + a.free_at, False
    ender = concurrent.futures.ThreadPoolExecutor(1).submit(small_ender, a, api, s, busy)
    created, _, _ = s.arrive(a.small_rate, bodies)
    t_stream = time.monotonic()
    outcome = s.wait(len(fillers) + big_n + count, a.quiet, quiet_after=t_stream)
    s.stop_ender = True
    ender.result()
    bound = s.end(outcome)
    per_pod = sorted((bound[n] - created[n]) * 1000 for n in created if n in bound)
    small_times = sorted(bound[n] for n in created if n in bound)
    big_names = s.gangs["big"][1]
    big_at = max(bound[n] for n in big_names) if all(n in bound for n in big_names) else None
    # Room exists once the last filler is gone (the watch saw it deleted).
    gone = [s.wl["gone"].get(f["metadata"]["name"]) for f in fillers]
    t_room = max(gone) if gone and all(gone) else s.t_free
    s.res.update(per_pod=per_pod, small_bound=len(small_times), small=count,
                 rate=len(small_times) / max(t_stream - t0, 1e-9), free_s=t_room - s.t_free,
                 big_delay_s=(big_at - t_room) if big_at else None)
    log(f"{s.what}: {len(small_times)}/{count} small jobs bound, create->bind ms {fmt_pcts(per_pod)}; the "
        f"fillers gone {t_room - s.t_free:.1f} s after their deletion began; big gang "
        + (f"bound {big_at - t_room:.1f} s after" if big_at else "not bound"))
    bound_pods(s, bound)
    if big_at is None:
        s.res["failed"] = f"the big gang was not bound ({outcome})"
    return s.teardown()


def small_ender(a, api, s, busy_nodes):
    """The small jobs' runtime: each is deleted SMALL_RUN s after it was
    first seen bound (a list of the bound small jobs every 0.2 s); and the
    fillers' end at FREE_AT. Until s.stop_ender is set."""
    first, ended, freed = {}, set(), False
    while not s.stop_ender:
        now = time.monotonic()
        if not freed and now >= s.t_free:
            api.delete_pods(s.ns, [f"long-{n}" for n, _ in busy_nodes])
            freed = True
        r = api.core.list_namespaced_pod(s.ns, label_selector=SMALL_LABEL, field_selector="spec.nodeName!=",
                                         _preload_content=False)
        due = []
        for p in json.loads(r.data)["items"]:
            name = p["metadata"]["name"]
            if name not in ended and now - first.setdefault(name, now) >= a.small_run:
                ended.add(name)
                due.append(name)
        if due:
            api.delete_pods(s.ns, due)
        time.sleep(0.2)
    if not freed:
        api.delete_pods(s.ns, [f"long-{n}" for n, _ in busy_nodes])


def shape_contention(a, api, sched, rep, nodes):
    s = Shape(a, api, sched, "contention", rep)
    capacity = len(nodes) * NODE_GPUS
    gangs = int(math.ceil(a.overcommit * capacity / a.members))
    fit = capacity // a.members
    bodies = [s.gang(f"c-{i:05d}", a.members, 1) for i in range(gangs)]
    # Round by round: member 0 of every gang, then member 1, ...
    pods = [bodies[i][1][k] for k in range(a.members) for i in range(gangs)]
    s.create([b[0] for b in bodies], pods)
    t_created = time.monotonic()
    outcome = s.wait(fit * a.members, a.quiet, settle=a.settle, quiet_after=t_created)
    bound = s.end(outcome)
    times = sorted(bound.values())
    s.res.update(gangs=gangs, fit=fit, last_bind_after_create_s=(times[-1] - t_created) if times else None)
    bound_pods(s, bound)
    sf = s.res["safety"]
    log(f"{s.what}: {len(bound)} pods bound ({outcome}): {sf['whole']} gangs whole, "
        f"{sf['partial_end']} partial, {sf['empty']} empty")
    return s.teardown()


SHAPES = {"backlog": shape_backlog, "stream": shape_stream, "release": shape_release, "rack": shape_rack, "preempt": shape_preempt,
          "smalljobs": shape_smalljobs, "contention": shape_contention}


def run_rep(a, api, sched, rep, nodes):
    """Every shape on one process of `sched` (started by backlog, or here);
    returns {shape: result, "_proc": process figures}."""
    out = {}
    try:
        for name in a.shapes:
            if name != "backlog" and not sched.alive():
                if sched.proc is not None and sched.status is None and sched.proc.poll() is not None:
                    break
                sched.start(rep)
                time.sleep(a.settle)  # its cache synced
            out[name] = SHAPES[name](a, api, sched, rep, nodes)
            if not sched.alive():
                break
    finally:
        out["_proc"] = sched.stop() or {}
        log(f"{sched.label} r{rep}: SIGTERM: exit {sched.status} after {sched.stop_s or 0:.1f} s; "
            f"peak RSS {(sched.hwm_kib or 0) / 1024:.0f} MiB, CPU {sched.cpu_total or 0:.1f} s")
    return out


# --- report -----------------------------------------------------------------


def med(vals):
    vals = sorted(v for v in vals if isinstance(v, (int, float)))
    if not vals:
        return None
    m = len(vals) // 2
    return vals[m] if len(vals) % 2 else (vals[m - 1] + vals[m]) / 2


def pct(vals, p):
    return percentile(vals, p) if vals else None


# (shape, title, key, function of a shape's result, format, better): the
# table's rows and the key=value lines'. better: "high" or "low" gives the
# ratio column (Muster against the best peer), None none.
def metrics():
    f0, f1, f2 = (lambda v: f"{v:.0f}"), (lambda v: f"{v:.1f}"), (lambda v: f"{v:.2f}")
    get = lambda k: (lambda r: r.get(k))  # noqa: E731
    return [
        ("backlog", "pods/s, first to last bind", "pods_per_s", get("rate"), f0, "high"),
        ("backlog", "start -> last bind, s", "last_bind_s", get("last_bind_s"), f1, "low"),
        ("stream", "pods/s, first create to last bind", "pods_per_s", get("rate"), f0, "high"),
        ("stream", "pod create->bind p50, ms", "pod_p50_ms", lambda r: pct(r.get("per_pod"), 50), f0, "low"),
        ("stream", "pod create->bind p99, ms", "pod_p99_ms", lambda r: pct(r.get("per_pod"), 99), f0, "low"),
        ("stream", "gang create->bind p99, ms", "gang_p99_ms", lambda r: pct(r.get("per_gang"), 99), f0, "low"),
        ("release", "pods/s, first release to last bind", "pods_per_s", get("rate"), f0, "high"),
        ("release", "pod release->bind p50, ms", "pod_p50_ms", lambda r: pct(r.get("per_pod"), 50), f0, "low"),
        ("release", "pod release->bind p99, ms", "pod_p99_ms", lambda r: pct(r.get("per_pod"), 99), f0, "low"),
        ("rack", "gangs in one rack (of 4)", "one_rack", get("one_rack"), f1, "high"),
        ("rack", "gang create->bind p99, ms", "gang_p99_ms", lambda r: pct(r.get("per_gang"), 99), f0, "low"),
        ("preempt", "preemptors bound", "bound_gangs", get("whole"), f1, "high"),
        ("preempt", "preemptor create->bind p50, ms", "gang_p50_ms", lambda r: pct(r.get("per_gang"), 50), f0,
         "low"),
        ("preempt", "preemptor create->bind p99, ms", "gang_p99_ms", lambda r: pct(r.get("per_gang"), 99), f0,
         "low"),
        ("preempt", "victim pods per preemptor", "victims_per", get("victims_per"), f1, None),
        ("preempt", "low gangs left partly running", "low_broken", get("low_broken"), f1, "low"),
        ("smalljobs", "small jobs/s", "pods_per_s", get("rate"), f1, "high"),
        ("smalljobs", "small create->bind p99, ms", "pod_p99_ms", lambda r: pct(r.get("per_pod"), 99), f0, "low"),
        ("smalljobs", "big gang's delay once room exists, s", "big_delay_s", get("big_delay_s"), f1, "low"),
        ("contention", "whole gangs", "whole", lambda r: r.get("safety", {}).get("whole"), f1, "high"),
        ("contention", "last create -> last bind, s", "last_bind_s", get("last_bind_after_create_s"), f1, "low"),
        ("*", "safety: partial end/>1 s/twice/over", "safety",
         lambda r: "/".join(str(r["safety"][k]) for k in ("partial_end", "partial_long", "double", "over"))
         if "safety" in r else None, str, None),
        ("*", "gang first -> last member bound p50/max, ms", "spread",
         lambda r: f"{r['safety']['spread_p50_ms']:.0f}/{r['safety']['spread_max_ms']:.0f}"
         if r.get("safety", {}).get("whole") else None, str, None),
        ("*", "scheduler CPU s", "cpu_s", get("cpu_s"), f1, "low"),
        ("*", "API writes per bound pod", "writes_per_pod",
         lambda r: sum(n for n, _ in r.get("writes", [])) / r["bound"] if r.get("bound") else None, f2, None),
    ]


def cannot(shape, r):
    """Why a scheduler did not do a shape, or None."""
    if not r:
        return "did not run"
    if shape == "rack" and not r.get("asked"):
        return None  # measured, not asked: the why is printed under the table
    if shape == "preempt" and not r.get("whole"):
        return f"no preemptor bound in {r.get('outcome')}"
    return None


def report(a, scheds, results, nodes):
    """The table, then key=value lines. Returns the failures (Muster's)."""
    keys = [s.key for s in scheds]
    peers = [k for k in keys if k != "muster"]
    w = 16
    print()
    print(f"peers: {len(nodes)} nodes x {NODE_GPUS} GPUs (racks of 8), {a.reps} rep(s) each, interleaved; "
          f"{os.cpu_count()} cores; load at the end {loadavg()}; cells are medians over reps")
    if a.bind_limit:
        print(f"  API server bind limit (bench/apiserver_limit, HTTP/2, 64 in flight, same run): "
              f"{a.bind_limit:.0f} pods/s")
    print(f"  {'':<50}" + "".join(f"{s.label:>{w}}" for s in scheds) + f"{'Muster/best':>{w}}")
    kv = {}
    for shape_key, title, key, fn, fmt, better in metrics():
        shapes = a.shapes if shape_key == "*" else [shape_key] if shape_key in a.shapes else []
        for shape in shapes:
            vals = {}
            cells = ""
            for k in keys:
                reps = [r.get(shape) for r in results[k]]
                per = [fn(r) if r else None for r in reps]
                for i, v in enumerate(per):
                    if v is not None:
                        kv[f"peers_{k}_{shape}_{key}_r{i + 1}"] = fmt(v)
                if key == "safety":  # summed over reps: any is too many
                    v = "/".join(str(sum(int(x.split("/")[j]) for x in per if x)) for j in range(4)) \
                        if any(per) else None
                else:
                    v = med(per)
                vals[k] = v
                why = next((cannot(shape, r) for r in reps if cannot(shape, r)), None)
                cells += f"{(fmt(v) if v is not None else ('n/a' if why else '-')):>{w}}"
                if v is not None:
                    kv[f"peers_{k}_{shape}_{key}"] = fmt(v)
            ratio = ""
            pv = [vals[k] for k in peers if vals.get(k) is not None]
            if better and vals.get("muster") is not None and pv:
                best = max(pv) if better == "high" else min(pv)
                if best:
                    ratio = f"{vals['muster'] / best:.2f}x"
            print(f"  {shape + ': ' + title:<50}{cells}{ratio:>{w}}")
    for k, s in zip(keys, scheds):
        procs = [r.get("_proc") or {} for r in results[k]]
        hwm = med([p.get("hwm_kib") for p in procs])
        cpu = med([p.get("cpu_s") for p in procs])
        kv[f"peers_{k}_peak_rss_mib"] = f"{(hwm or 0) / 1024:.1f}"
        kv[f"peers_{k}_cpu_s"] = f"{cpu or 0:.1f}"
        kv[f"peers_{k}_exit"] = ",".join(str(p.get("status")) for p in procs)
    print(f"  {'process: peak RSS (VmHWM), MiB':<50}" + "".join(f"{kv[f'peers_{k}_peak_rss_mib']:>{w}}" for k in keys))
    print(f"  {'process: CPU s, all shapes':<50}" + "".join(f"{kv[f'peers_{k}_cpu_s']:>{w}}" for k in keys))
    clean = {k: all((r.get("_proc") or {}).get("clean") for r in results[k]) for k in keys}
    print(f"  {'process: stopped cleanly on SIGTERM, every rep':<50}"
          + "".join(f"{'yes' if clean[k] else 'no':>{w}}" for k in keys))
    print()
    for k, s in zip(keys, scheds):
        for shape in a.shapes:
            for i, r in enumerate(results[k]):
                r = r.get(shape)
                why = cannot(shape, r)
                if why:
                    print(f"  {s.label} {shape} r{i + 1}: n/a: {why}")
                if r and shape == "rack" and not r.get("asked") and i == 0:
                    print(f"  {s.label} rack: not asked, {r['why']}; the share is where it put the gangs unasked")
                if r and "failed" in r:
                    print(f"  {s.label} {shape} r{i + 1}: {r['failed']}")
    print()
    failed = []
    for i, r in enumerate(results.get("muster", [])):
        for shape in a.shapes:
            rr = r.get(shape)
            if not rr:
                failed.append(f"muster {shape} r{i + 1}: did not run")
                continue
            if "failed" in rr:
                failed.append(f"muster {shape} r{i + 1}: {rr['failed']}")
            sf = rr.get("safety", {})
            for what in ("partial_end", "double", "over"):
                if sf.get(what):
                    failed.append(f"muster {shape} r{i + 1}: {what} {sf[what]}")
        if not (r.get("_proc") or {}).get("clean"):
            failed.append(f"muster r{i + 1}: exit status {(r.get('_proc') or {}).get('status')}")
    for k in peers:
        for i, r in enumerate(results[k]):
            if not (r.get("_proc") or {}).get("clean"):
                failed.append(f"{k} r{i + 1}: exit status {(r.get('_proc') or {}).get('status')}")
    kv.update({"peers_nodes": len(nodes), "peers_gpus": len(nodes) * NODE_GPUS, "peers_cores": os.cpu_count(),
               "peers_bind_limit_per_s": f"{a.bind_limit or float('nan'):.1f}",
               "peers_failed": "; ".join(failed) or "none"})
    for k in sorted(kv):
        print(f"{k}={kv[k]}")
    return failed


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--log-dir", required=True)
    p.add_argument("--muster", help="the muster binary")
    p.add_argument("--muster-config")
    p.add_argument("--muster-dialect", default="plugins", choices=sorted(DIALECTS))
    p.add_argument("--kube-scheduler", help="kube-scheduler 1.37 (native PodGroups)")
    p.add_argument("--feature-gates", default="", help="kube-scheduler's --feature-gates")
    p.add_argument("--coscheduling", help="scheduler-plugins' kube-scheduler")
    p.add_argument("--volcano", help="Volcano's scheduler")
    p.add_argument("--order", default="muster,volcano,coscheduling,kube")
    p.add_argument("--shapes", default="backlog,stream,release,rack,preempt,smalljobs")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--pool", default="peers")
    p.add_argument("--bind-limit", type=float, default=None, help="the API server's bind limit, pods/s")
    p.add_argument("--gangs", type=int, default=300)
    p.add_argument("--members", type=int, default=8)
    p.add_argument("--stream-gangs", type=int, default=300)
    p.add_argument("--rate", type=float, default=15.0, help="gangs per second in the stream")
    p.add_argument("--release-rate", type=float, default=60.0, help="gangs per second released")
    p.add_argument("--rack-gangs", type=int, default=4)
    p.add_argument("--preemptors", type=int, default=8)
    p.add_argument("--preempt-wait", type=float, default=30.0,
                   help="preempt ends this long after the last preemptor without a new bind")
    p.add_argument("--small-free", type=int, default=16, help="nodes free for the small jobs at first")
    p.add_argument("--big-share", type=float, default=0.9, help="the big gang's share of the pool's nodes")
    p.add_argument("--small-rate", type=float, default=10.0)
    p.add_argument("--small-for", type=float, default=30.0)
    p.add_argument("--small-run", type=float, default=5.0)
    p.add_argument("--free-at", type=float, default=10.0)
    p.add_argument("--overcommit", type=float, default=1.25)
    p.add_argument("--threads", type=int, default=32)
    p.add_argument("--qps", type=int, default=5000, help="the peers' client qps and burst")
    p.add_argument("--settle", type=float, default=5.0)
    p.add_argument("--quiet", type=float, default=20.0)
    p.add_argument("--stall-timeout", type=int, default=180)
    a = p.parse_args()
    a.shapes = [s.strip() for s in a.shapes.split(",") if s.strip()]
    bad = [s for s in a.shapes if s not in SHAPES]
    if bad:
        p.error(f"unknown shapes {bad}; known: {', '.join(SHAPES)}")
    if "backlog" in a.shapes and a.shapes[0] != "backlog":
        p.error("backlog must come first: the scheduler starts after its pods exist")
    return a


def main():
    # SIGTERM (timeout, a CI runner) runs the finally blocks as ^C does:
    # every scheduler stopped, the namespaces deleted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    a = parse_args()
    os.makedirs(a.log_dir, exist_ok=True)
    api = Api(a.kubeconfig, a.threads + 8, log)
    nodes = api.pool_nodes(a.pool)
    gpus = len(nodes) * NODE_GPUS
    for n, what in ((a.gangs * a.members, "backlog"), (a.stream_gangs * a.members, "stream"),
                     (a.stream_gangs * a.members, "release")):
        if what in a.shapes and n > gpus:
            sys.exit(f"peers: the {what} asks {n} GPUs; pool {a.pool} has {gpus} on Ready nodes")
    api.priority_classes()
    if "volcano" in a.order:
        api.hypernodes(nodes)
    all_scheds = schedulers(a)
    order = [k.strip() for k in a.order.split(",") if k.strip() in all_scheds]
    if not order:
        sys.exit("peers: no scheduler to run (give --muster, --volcano, --coscheduling or --kube-scheduler)")
    scheds = [all_scheds[k] for k in order]
    api.delete_namespaces("peers-")  # leftovers of an interrupted run
    log(f"pool {a.pool}: {len(nodes)} nodes, {gpus} GPUs; order {','.join(order)} x {a.reps}; load {loadavg()}")
    results = {k: [] for k in order}
    try:
        for rep in range(1, a.reps + 1):
            for s in scheds:
                results[s.key].append(run_rep(a, api, s, rep, nodes))
    finally:
        for s in scheds:
            s.stop()
        api.delete_namespaces("peers-")
    log(f"logs and configurations in {a.log_dir}")
    return 1 if report(a, scheds, results, nodes) else 0


if __name__ == "__main__":
    sys.exit(main())
