"""What the Python benchmarks that drive a live cluster share
(bench/e2e_bind.py, bench/peers.py): the official client with plain
bodies, the API server's write counts, a watch of bind times in a process
of its own, per-process CPU, percentiles, and the namespaces they clean
up. Each benchmark keeps what is its own (its PodGroup dialect, its
phases, its report)."""

import json
import math
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time

import urllib3
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines

GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU, "operator": "Equal", "value": "present", "effect": "NoSchedule"}
METRIC_RE = re.compile(
    r'^apiserver_request_total\{(?=.*\bresource="(?P<resource>[^"]*)")(?=.*\bsubresource="(?P<sub>[^"]*)")'
    r'(?=.*\bverb="(?P<verb>[^"]*)").*\} (?P<n>\S+)$'
)
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION")


class Log:
    """Progress lines "<name>: [py +Ns] ...", and exits that name the
    benchmark. Picklable, so the watch process logs the same way."""

    def __init__(self, name):
        self.name, self.t0 = name, time.monotonic()

    def __call__(self, msg):
        print(f"{self.name}: [py +{time.monotonic() - self.t0:.0f}s] {msg}", flush=True)

    def fail(self, msg):
        sys.exit(f"{self.name}: {msg}")


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_seconds(pid):
    """utime + stime of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def status_kib(pid, key):
    """A "Key: N kB" line of /proc/PID/status (VmHWM: peak RSS), in KiB, or
    None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def terminate(proc, timeout):
    """SIGTERM to a subprocess, then up to `timeout` s before SIGKILL:
    (its exit status, or "killed"; the seconds it took)."""
    t0 = time.monotonic()
    status = None
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            status = "killed"
    return (proc.returncode if status is None else status), time.monotonic() - t0


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(math.ceil(p / 100.0 * len(sorted_values))) - 1))
    return sorted_values[k]


def fmt_pcts(vals):
    """p50/p90/p99/max of an ascending list, "-" when empty."""
    if not vals:
        return "-"
    return "/".join(f"{percentile(vals, p):.0f}" for p in (50, 90, 99)) + f"/{vals[-1]:.0f}"


def gang_names(i, members):
    g = f"g-{i:05d}"
    return g, [f"{g}-{k}" for k in range(members)]


def gpu_container():
    """The one container of every benchmark pod: 1 GPU and a little CPU and
    memory (busybox; kwok never runs it)."""
    return {
        "name": "main",
        "image": "busybox",
        "resources": {
            "requests": {"cpu": "500m", "memory": "1Gi", GPU: "1"},
            "limits": {GPU: "1"},
        },
    }


def writes_between(before, after):
    """Write requests made between two Api.write_counts(), largest first."""
    d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    return sorted(((n, k) for k, n in d.items() if n > 0), reverse=True)


class Api:
    """The official client with a connection pool as large as the caller's
    thread pool. Bodies go as plain dicts (the typed models predate fields
    such as spec.schedulingGroup and would drop them) and replies are not
    turned into models (_preload_content=False): the client's
    deserialization would cost more CPU than the request."""

    def __init__(self, kubeconfig, pool, log):
        cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        cfg.connection_pool_maxsize = pool
        self.log = log
        self.api = client.ApiClient(cfg)
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    @staticmethod
    def done(r):
        r.data  # read the reply so the connection goes back to the pool
        r.release_conn()

    def create_pod(self, ns, body):
        self.done(self.core.create_namespaced_pod(ns, body, _preload_content=False))

    def create_object(self, group, version, ns, plural, body):
        self.done(self.custom.create_namespaced_custom_object(group, version, ns, plural, body,
                                                              _preload_content=False))

    def list_rv(self, ns):
        """(number of pods, number bound, resourceVersion) of the namespace."""
        r = self.core.list_namespaced_pod(ns, _preload_content=False)
        doc = json.loads(r.data)
        items = doc["items"]
        bound = sum(1 for p in items if p["spec"].get("nodeName"))
        return len(items), bound, doc["metadata"]["resourceVersion"]

    def write_counts(self):
        """The API server's own count of write requests so far, by (verb,
        resource[/subresource]), from apiserver_request_total."""
        r = self.api.call_api("/metrics", "GET", auth_settings=["BearerToken"], _preload_content=False)[0]
        counts = {}
        for line in r.data.decode().splitlines():
            m = METRIC_RE.match(line)
            if m and m.group("verb") in WRITE_VERBS:
                what = m.group("resource") + ("/" + m.group("sub") if m.group("sub") else "")
                key = (m.group("verb"), what)
                counts[key] = counts.get(key, 0) + float(m.group("n"))
        return counts

    def create_namespace(self, ns):
        self.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def delete_namespace(self, ns, timeout=900):
        """Pods with grace period 0 first, in one deletecollection (kwok
        frees them at once), then the namespace; returns the seconds until it
        is gone. A busy server may time such a call out (504) or drop the
        connection: it is sent again until `timeout`."""
        t0 = time.monotonic()

        def again(call, *args, **kw):
            while True:
                try:
                    return call(*args, _preload_content=False, _request_timeout=120, **kw).release_conn()
                except ApiException as e:
                    if e.status == 404:
                        return None
                    if e.status < 500 and e.status != 429:
                        raise
                    why = f"HTTP {e.status}"
                except urllib3.exceptions.HTTPError as e:
                    why = type(e).__name__
                if time.monotonic() - t0 > timeout:
                    self.log.fail(f"cannot delete namespace {ns} ({why}) after {timeout}s")
                self.log(f"deleting {ns}: {why}; again")
                time.sleep(2)

        again(self.core.delete_collection_namespaced_pod, ns, grace_period_seconds=0)
        again(self.core.delete_namespace, ns)
        while time.monotonic() - t0 < timeout:
            try:
                self.core.read_namespace(ns, _preload_content=False).release_conn()
            except ApiException as e:
                if e.status == 404:
                    return time.monotonic() - t0
                if e.status < 500:
                    raise
            time.sleep(0.5)
        self.log.fail(f"namespace {ns} still there after {timeout}s")


# --- the watch (its own process) ---------------------------------------------


def pod_gpus(pod):
    """The GPUs a pod asks (its containers' requests)."""
    return sum(int(c.get("resources", {}).get("requests", {}).get(GPU, "0"))
               for c in pod["spec"].get("containers", []))


class WatchLog:
    """What the watch keeps of every pod version it sees: when each pod was
    first seen bound and where, when it was first seen going (deletion
    started or gone), pods seen bound to a second node, and nodes whose
    bound GPUs ever exceeded `node_gpus` (a pod holds its GPUs from its bind
    until it is gone, as schedulers count them)."""

    def __init__(self, node_gpus):
        self.bound, self.node, self.gone = {}, {}, {}
        self.double, self.over = 0, set()
        self.node_gpus, self.used, self.holds = node_gpus, {}, {}

    def see(self, kind, obj, now):
        name = obj["metadata"]["name"]
        node = obj["spec"].get("nodeName")
        if node and name not in self.bound:
            self.bound[name], self.node[name] = now, node
            gpus = pod_gpus(obj)
            if gpus and kind != "DELETED":
                self.holds[name] = gpus
                self.used[node] = self.used.get(node, 0) + gpus
                if self.node_gpus and self.used[node] > self.node_gpus:
                    self.over.add(node)
        elif node and self.node.get(name) != node:
            self.double += 1
        if (kind == "DELETED" or obj["metadata"].get("deletionTimestamp")) and name not in self.gone:
            self.gone[name] = now
        if kind == "DELETED" and name in self.holds:
            self.used[self.node[name]] -= self.holds.pop(name)

    def result(self):
        return {"bound": self.bound, "node": self.node, "gone": self.gone, "double": self.double,
                "over": sorted(self.over)}


def watch_main(kubeconfig, ns, rv, expect, log, conn, count, connected, stop, node_gpus):
    """Watch the pods of `ns` from resourceVersion `rv` into a WatchLog (the
    monotonic time each pod is first seen with spec.nodeName, and the rest).
    Sets `connected` once the server has answered the watch, keeps `count`
    (pods bound) current, and sends WatchLog.result() through `conn` when
    `expect` pods are bound (None: never) or `stop` is set."""
    api = Api(kubeconfig, 2, log)
    wl = WatchLog(node_gpus)

    def done():
        return stop.is_set() or (expect is not None and len(wl.bound) >= expect)

    while not done():
        resp = api.core.list_namespaced_pod(
            ns, watch=True, resource_version=rv, allow_watch_bookmarks=True,
            timeout_seconds=5,  # short, so `stop` is seen without an event
            _preload_content=False)
        connected.set()
        try:
            for line in iter_resp_lines(resp):
                now = time.monotonic()
                if not line:
                    continue
                ev = json.loads(line)
                obj = ev.get("object") or {}
                if ev.get("type") == "ERROR":
                    log.fail(f"watch error: {obj.get('message')}")
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                    wl.see(ev["type"], obj, now)
                    count.value = len(wl.bound)
                if done():
                    break
        finally:
            resp.close()
            resp.release_conn()
    conn.send(wl.result())
    conn.close()


class Watcher:
    """watch_main() in a process of its own, so the creating threads never
    delay its timestamps (both read CLOCK_MONOTONIC, which is system-wide)."""

    def __init__(self, kubeconfig, ns, rv, log, expect=None, node_gpus=0):
        ctx = multiprocessing.get_context("spawn")
        self.count = ctx.Value("l", 0)
        self.connected, self.stop_ev = ctx.Event(), ctx.Event()
        self.rx, tx = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=watch_main,
                                args=(kubeconfig, ns, rv, expect, log, tx, self.count, self.connected,
                                      self.stop_ev, node_gpus),
                                daemon=True)
        self.proc.start()
        if not self.connected.wait(60):
            log.fail("the watch did not connect within 60 s")

    def bound(self):
        return self.count.value

    def results(self):
        """{pod: first seen bound}; the rest of the WatchLog in self.log."""
        self.stop_ev.set()
        self.log = self.rx.recv() if self.rx.poll(60) else WatchLog(0).result()
        self.proc.join(10)
        return self.log["bound"]
