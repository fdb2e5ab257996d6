"""The chaos proxy (test/cluster/chaosproxy) from Python: start it in front
of a cluster's API server, set its fault rules, read its log.

    p = Proxy.start(cluster_env, dir)       # cluster_env: ctl env as a dict
    p.rules([{"id": "x", "method": "POST", "path": "/binding$", "action": {"status": 503}}])
    p.log(since=0)   # list of dicts, one per request
    p.stop()

p.kubeconfig is the admin user's kubeconfig pointing at the proxy.
"""

import json
import sys
import os
import signal
import subprocess
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def build():
    """The chaosproxy binary's path (build-chaosproxy builds it if missing)."""
    return subprocess.run([os.path.join(HERE, "build-chaosproxy")], check=True, capture_output=True,
                          text=True).stdout.strip()


class Proxy:
    def __init__(self, proc, dir, env, logfile):
        self.proc = proc
        self.dir = dir
        self.url = env["PROXY_URL"]
        self.control = env["CONTROL_URL"]
        self.kubeconfig = env["KUBECONFIG"]
        self.ca = os.path.join(dir, "ca.crt")
        self.logfile = logfile

    @classmethod
    def start(cls, cluster_env, dir, http1=False, seed=0, listen="127.0.0.1:0", timeout=30):
        """Start a proxy in front of cluster_env["SERVER"]; its files go to dir."""
        os.makedirs(dir, exist_ok=True)
        envfile = os.path.join(dir, "proxy.env")
        if os.path.exists(envfile):
            os.unlink(envfile)
        ca = os.path.join(os.path.dirname(cluster_env["KUBECONFIG"]), "pki", "ca.crt")
        argv = [build(), "-upstream", cluster_env["SERVER"], "-upstream-ca", ca,
                "-in-kubeconfig", cluster_env["KUBECONFIG"], "-dir", dir, "-listen", listen,
                "-seed", str(seed)]
        if http1:
            argv.append("-http1")
        logfile = os.path.join(dir, "chaosproxy.log")
        with open(logfile, "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while not os.path.exists(envfile):
            if proc.poll() is not None:
                raise RuntimeError(f"chaosproxy exited {proc.returncode}: {open(logfile).read()[-2000:]}")
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("chaosproxy did not start")
            time.sleep(0.05)
        env = {}
        with open(envfile) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                env[k] = v
        return cls(proc, dir, env, logfile)

    def _call(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.control + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read().decode()

    def rules(self, rules=None):
        """Replace every rule with `rules` (a list of dicts); without an
        argument, the rules in place with their firings."""
        if rules is None:
            return json.loads(self._call("GET", "/rules"))["rules"]
        return json.loads(self._call("PUT", "/rules", {"rules": rules}))["rules"]

    def clear(self):
        return self.rules([])

    def log(self, since=0):
        text = self._call("GET", f"/log?since={int(since)}", timeout=120)
        return [json.loads(line) for line in text.splitlines() if line]

    def stats(self):
        return json.loads(self._call("GET", "/stats"))

    def http1(self, on):
        return json.loads(self._call("POST", "/http1", {"on": bool(on)}))

    def reset_connections(self):
        return json.loads(self._call("POST", "/reset-connections", {}))["closed"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --- the chaos run (test/cluster/chaos-run, tests/test_chaos.py) --------------

import collections  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402
import uuid  # noqa: E402

import chaos_invariants as inv  # noqa: E402

TOP = os.path.dirname(os.path.dirname(HERE))
GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
V100 = "NVIDIA-Tesla V100-PCIE-32GB"
VGPU = {"gpus": 4, "memory": 32768, "split": 10, "type": V100}
DURATION, RENEW, RETRY = 6, 4, 1  # the Lease's, as tests/test_leader.py
LEASE = "muster"
WRITE_TARGETS = {  # name -> [(method, path)]
    "bindings": [("POST", r"/pods/[^/]+/binding$")],
    "pod-status": [("PATCH", r"/pods/[^/]+/status$"), ("PUT", r"/pods/[^/]+/status$")],
    "evictions": [("POST", r"/pods/[^/]+/eviction$")],
    "events": [("POST", r"/events$"), ("PATCH", r"/events/[^/]+$")],
}
WATCHES = {"pods": r"^/api/v1/(namespaces/[^/]+/)?pods$", "nodes": r"^/api/v1/nodes$",
           "podgroups": r"/podgroups$"}
# Kinds of fault; a run injects each at least once, in an order drawn from the seed.
KINDS = ["stall", "reset-connections", "reset-rule", "http1", "write-status", "slow-events",
         "lose-binding", "kill-apiserver", "kill-leader", "leader-change"]
# Kinds whose windows (c) does not count: writes refused or lost, the API
# server down, or no leader.
EXCUSE = {"reset-connections", "reset-rule", "http1", "write-status", "lose-binding", "kill-apiserver",
          "kill-leader", "leader-change"}


def say(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


class Replicas:
    """Muster replicas with leader election, through the proxy; a
    supervisor restarts any that exits (a leader that lost its Lease exits
    1 by design), recording each exit and whether we caused it."""

    def __init__(self, kubeconfig, lease_ns, logdir, config, extra=()):
        self.kubeconfig, self.lease_ns, self.logdir, self.config = kubeconfig, lease_ns, logdir, config
        self.extra = list(extra)
        self.procs = {}
        self.info = {}
        self.lock = threading.Lock()
        self.stopping = False
        self.killed = set()
        self.delay = {}
        self.t = threading.Thread(target=self._supervise, daemon=True)
        self.t.start()

    def start(self, identity):
        binary = os.path.join(TOP, os.environ.get("BUILD", "build"), "muster")
        log = os.path.join(self.logdir, f"muster-chaos-{identity}.log")
        argv = [binary, "run", "--kubeconfig", self.kubeconfig, "--config", self.config,
                "--debug-addr", "127.0.0.1:0", "--check-state", "--leader-elect",
                "--lease-namespace", self.lease_ns, "--lease-name", LEASE, "--identity", identity,
                "--lease-duration", str(DURATION), "--renew-deadline", str(RENEW),
                "--retry-period", str(RETRY), *self.extra]
        with open(log, "ab") as out:
            out.write(f"=== {time.strftime('%H:%M:%S')} chaos: start {' '.join(argv)}\n".encode())
            out.flush()
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        with self.lock:
            self.procs[identity] = proc
            self.info.setdefault(identity, {"identity": identity, "log": log, "exits": [], "starts": 0})
            self.info[identity]["starts"] += 1

    def kill(self, identity, restart_after=1.0):
        """kill -9; the supervisor starts it again restart_after seconds later."""
        with self.lock:
            p = self.procs.get(identity)
            self.killed.add(identity)
            self.delay[identity] = restart_after
        if p and p.poll() is None:
            p.kill()
            return True
        return False

    def _supervise(self):
        due = {}  # identity -> monotonic time to start it again
        while True:
            time.sleep(0.3)
            with self.lock:
                if self.stopping:
                    return
                dead = [(i, p) for i, p in self.procs.items() if p.poll() is not None]
                for identity, p in dead:
                    ours = identity in self.killed
                    self.killed.discard(identity)
                    self.info[identity]["exits"].append((p.returncode, ours))
                    del self.procs[identity]
                    wait = self.delay.pop(identity, random.uniform(0.5, 2))
                    due[identity] = time.monotonic() + wait
                    say(f"replica {identity} exited {p.returncode}{' (killed by us)' if ours else ''}; "
                        f"starting it again in {wait:.1f} s")
            for identity, t in list(due.items()):
                if time.monotonic() >= t:
                    del due[identity]
                    self.start(identity)

    def ensure_running(self):
        time.sleep(1)
        with self.lock:
            return all(p.poll() is None for p in self.procs.values())

    def stop(self):
        with self.lock:
            if self.stopping:
                return list(self.info.values())
            self.stopping = True
            procs = dict(self.procs)
        for identity, p in procs.items():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for identity, p in procs.items():
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            self.info[identity]["exits"].append((p.returncode, True))
        return list(self.info.values())


class Workload:
    """Streams gangs of the three dialects, single pods, deletions,
    same-name re-creations, other schedulers' pods and vGPU pods into ns,
    through the admin kubeconfig (never the proxy)."""

    def __init__(self, api, ns, rng, gpu_budget, period):
        self.api, self.ns, self.rng, self.budget, self.period = api, ns, rng, gpu_budget, period
        self.n = 0
        self.gangs = {}  # name -> (dialect, [pod names], gpus)
        self.singles = {}  # name -> gpus
        self.vgpu_uids = set()
        self.exempt = {}  # (dialect, ns, gang) -> t_ns the workload deleted a member
        self.actions = collections.Counter()
        self.failures = collections.Counter()
        self.stop_ = threading.Event()

    def _post(self, path, body):
        st, obj = self.api.request("POST", path, body)
        if st == 409 and body.get("kind") == "Pod":
            for _ in range(20):  # same-name re-creation: the old one still going
                time.sleep(0.1)
                st, obj = self.api.request("POST", path, body)
                if st != 409:
                    break
        if st >= 300:
            raise RuntimeError(f"POST {path}: {st} {obj and obj.get('message')}")
        return obj

    def _delete(self, path):
        st, obj = self.api.request("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1",
                                                    "gracePeriodSeconds": 0})
        if st >= 300 and st != 404:
            raise RuntimeError(f"DELETE {path}: {st}")

    def pod(self, name, cpu="1", gpus=0, scheduler="muster", vgpu=None):
        resources = {"requests": {"cpu": cpu, "memory": "1Gi"}}
        if gpus:
            resources["requests"][GPU] = str(gpus)
            resources["limits"] = {GPU: str(gpus)}
        if vgpu:
            resources["limits"] = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": str(vgpu[0]),
                                   "volcano.sh/vgpu-cores": str(vgpu[1])}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": {"chaos.muster.dev/run": "1"}, "annotations": {}},
                "spec": {"schedulerName": scheduler, "restartPolicy": "Never", "tolerations": [GPU_TOLERATION],
                         "containers": [{"name": "main", "image": "busybox", "resources": resources}]}}

    def pods_path(self):
        return f"/api/v1/namespaces/{self.ns}/pods"

    def create_gang(self, vgpu=False):
        r = self.rng
        self.n += 1
        name = f"g{self.n}"
        dialect = r.choice(["sp", "volcano", "native"]) if not vgpu else "sp"
        members = r.randint(2, 8) if not vgpu else r.randint(2, 4)
        gpus = 0 if vgpu else r.choice([0, 1, 1, 2, 2, 4, 8])
        if gpus * members > 32:
            gpus = max(1, 32 // members)
        group = {"sp": ("scheduling.x-k8s.io", "v1alpha1"), "volcano": ("scheduling.volcano.sh", "v1beta1"),
                 "native": ("scheduling.k8s.io", "v1beta1")}[dialect]
        spec = {"schedulingPolicy": {"gang": {"minCount": members}}} if dialect == "native" \
            else {"minMember": members}
        self._post(f"/apis/{group[0]}/{group[1]}/namespaces/{self.ns}/podgroups",
                   {"apiVersion": f"{group[0]}/{group[1]}", "kind": "PodGroup", "metadata": {"name": name},
                    "spec": spec})
        names = []
        for i in range(members):
            v = (r.choice([4096, 8192, 16384]), r.choice([10, 25, 50])) if vgpu else None
            p = self.pod(f"{name}-{i}", cpu=str(r.choice([1, 2, 4])), gpus=gpus, vgpu=v)
            if dialect == "sp":
                p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = name
            elif dialect == "volcano":
                p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = name
            else:
                p["spec"]["schedulingGroup"] = {"podGroupName": name}
            obj = self._post(self.pods_path(), p)
            if vgpu:
                self.vgpu_uids.add(obj["metadata"]["uid"])
            names.append(p["metadata"]["name"])
        self.gangs[name] = (dialect, names, gpus * members, group)
        return "gang-vgpu" if vgpu else f"gang-{dialect}"

    def delete_gang(self):
        if not self.gangs:
            return None
        name = self.rng.choice(sorted(self.gangs))
        dialect, names, _, group = self.gangs.pop(name)
        self.exempt[(dialect, self.ns, name)] = time.time_ns()
        for n in names:
            self._delete(f"{self.pods_path()}/{n}")
        self._delete(f"/apis/{group[0]}/{group[1]}/namespaces/{self.ns}/podgroups/{name}")
        return "delete-gang"

    def create_single(self, vgpu=False):
        self.n += 1
        name = f"s{self.n}"
        r = self.rng
        gpus = 0 if vgpu else r.choice([0, 1, 2, 4, 8])
        v = (r.choice([4096, 8192, 16384]), r.choice([10, 25, 50])) if vgpu else None
        obj = self._post(self.pods_path(), self.pod(name, cpu=str(r.choice([1, 2, 8])), gpus=gpus, vgpu=v))
        if vgpu:
            self.vgpu_uids.add(obj["metadata"]["uid"])
        self.singles[name] = gpus
        return "single-vgpu" if vgpu else "single"

    def delete_single(self):
        if not self.singles:
            return None
        name = self.rng.choice(sorted(self.singles))
        del self.singles[name]
        self._delete(f"{self.pods_path()}/{name}")
        return "delete-pod"

    def recreate(self):
        if not self.singles:
            return None
        name = self.rng.choice(sorted(self.singles))
        self._delete(f"{self.pods_path()}/{name}")
        self._post(self.pods_path(), self.pod(name, gpus=self.singles[name]))
        return "same-name-recreate"

    def other_scheduler(self):
        self.n += 1
        self._post(self.pods_path(), self.pod(f"o{self.n}", scheduler="default-scheduler"))
        return "other-scheduler"

    def demand(self):
        return sum(g[2] for g in self.gangs.values()) + sum(self.singles.values())

    def step(self):
        r = self.rng
        if self.demand() > self.budget or len(self.gangs) + len(self.singles) > 120:
            return r.choice([self.delete_gang, self.delete_gang, self.delete_single])()
        x = r.random()
        for p, fn in ((0.35, self.create_gang), (0.15, self.create_single), (0.08, self.delete_gang),
                      (0.08, self.delete_single), (0.1, self.recreate), (0.06, self.other_scheduler),
                      (0.06, lambda: self.create_single(vgpu=True)), (0.04, lambda: self.create_gang(vgpu=True))):
            if x < p:
                return fn()
            x -= p
        return self.create_gang()

    def run(self):
        while not self.stop_.wait(self.rng.uniform(0.5, 1.5) * self.period):
            try:
                what = self.step()
                if what:
                    self.actions[what] += 1
            except Exception as e:  # the API server may be down
                self.failures[type(e).__name__] += 1


class Chaos:
    """One chaos run: faults from the seed against two replicas through the
    proxy while the workload streams in; then a quiet period and the checks."""

    def __init__(self, cluster_env, cluster_dir, workdir, seconds, seed, kill_apiserver=True,
                 quiet=60, short=False, log=say, logdir=None):
        self.env, self.cdir, self.workdir = cluster_env, cluster_dir, workdir
        self.seconds, self.seed, self.kill_apiserver_ok = seconds, seed, kill_apiserver
        self.quiet, self.short, self.say = quiet, short, log
        self.logdir = logdir or os.path.join(cluster_dir, "logs")
        self.rng = random.Random(seed)
        self.api = inv.Api(cluster_env["SERVER"], cluster_env["ADMIN_TOKEN"],
                           os.path.join(cluster_dir, "pki", "ca.crt"))
        tag = f"{seed}-{uuid.uuid4().hex[:5]}"
        self.ns = f"chaos-{tag}"
        self.vgpu_nodes = [f"chaos-vgpu-{tag}-{i}" for i in range(2)]
        self.rules = {}  # id -> rule
        self.faults = collections.Counter()
        self.windows = []  # (kind, start_ns, end_ns, detail)
        self.rule_ids = collections.defaultdict(list)  # kind -> rule ids
        self.n = 0
        self.identities = []
        self.per_replica = True

    # --- rules ---
    def _put(self):
        self.proxy.rules(list(self.rules.values()))

    def add(self, kind, rule):
        self.n += 1
        rule = dict(rule, id=f"{kind}-{self.n}")
        self.rules[rule["id"]] = rule
        self.rule_ids[kind].append(rule["id"])
        self._put()
        return rule["id"]

    def remove(self, *ids):
        for i in ids:
            self.rules.pop(i, None)
        self._put()

    def keep(self, ids, seconds, extra=20):
        """Sleep seconds, then up to extra more until one of rule ids has
        fired (a rule on writes fires only when Muster writes)."""
        time.sleep(seconds)
        deadline = time.monotonic() + extra
        while time.monotonic() < deadline:
            fired = self.proxy.stats().get("rules", {})
            if any(fired.get(i) for i in ids):
                return
            time.sleep(0.5)

    def dur(self, lo, hi):
        if self.short:
            hi = min(hi, max(lo, 12))
            lo = min(lo, hi)
        return self.rng.uniform(lo, hi)

    # --- the lease ---
    def holder(self):
        try:
            st, obj = self.api.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{self.ns}/leases/{LEASE}",
                                       timeout=5)
            return (obj.get("spec") or {}).get("holderIdentity") or "" if st == 200 else ""
        except Exception:
            return ""

    def ua(self, identity):
        return "^muster/" + re.escape(identity) + r"(\b|$)" if self.per_replica else "^muster"

    # --- faults: each returns a detail string; the caller times the window ---
    def f_stall(self):
        what = self.rng.choice(sorted(WATCHES))
        rid = self.add("stall", {"path": WATCHES[what], "watch": True, "action": {"stall": True}})
        time.sleep(self.dur(5, 40))
        self.remove(rid)
        return what

    def f_reset_connections(self):
        n = self.proxy.reset_connections()
        time.sleep(1)
        return f"closed {n}"

    def f_reset_rule(self):
        frac = self.rng.uniform(0.1, 0.3)
        rid = self.add("reset-rule", {"fraction": frac, "action": {"reset": True}})
        self.keep([rid], self.dur(5, 15))
        self.remove(rid)
        return f"fraction {frac:.2f}"

    def f_http1(self):
        self.proxy.http1(True)
        self.proxy.reset_connections()
        time.sleep(self.dur(10, 60))
        self.proxy.http1(False)
        self.proxy.reset_connections()
        return ""

    def f_write_status(self):
        # The first one hits writes Muster surely sends (it evicts only to
        # preempt, which the test queues do not).
        targets = sorted(WRITE_TARGETS) if self.faults["write-status"] else ["bindings", "events", "pod-status"]
        target = self.rng.choice(targets)
        code = self.rng.choice([401, 403, 429, 503])
        frac = self.rng.uniform(0.2, 0.6)
        ids = [self.add("write-status", {"method": m, "path": p, "fraction": frac, "action": {"status": code}})
               for m, p in WRITE_TARGETS[target]]
        self.faults[f"write-status {target} {code}"] += 1
        self.keep(ids, self.dur(10, 30))
        self.remove(*ids)
        return f"{target} {code} fraction {frac:.2f}"

    def f_slow_events(self):
        ms = self.rng.choice([500, 1000, 2000, 3000])
        ids = [self.add("slow-events", {"method": m, "path": p, "action": {"delay_ms": ms}})
               for m, p in WRITE_TARGETS["events"]]
        self.keep(ids, self.dur(15, 60))
        self.remove(*ids)
        return f"{ms} ms"

    def f_lose_binding(self):
        frac = self.rng.uniform(0.2, 0.5)
        rid = self.add("lose-binding", {"method": "POST", "path": WRITE_TARGETS["bindings"][0][1],
                                        "fraction": frac, "action": {"lose_answer": True}})
        self.keep([rid], self.dur(10, 30))
        self.remove(rid)
        return f"fraction {frac:.2f}"

    def f_kill_apiserver(self):
        if not self.kill_apiserver_ok:
            return None
        with open(os.path.join(self.cdir, "run", "kube-apiserver.pid")) as f:
            pid = int(f.read())
        os.kill(pid, signal.SIGKILL)
        time.sleep(self.rng.uniform(1, 6))
        self.apiserver_up()
        return f"pid {pid}"

    def apiserver_up(self, timeout=120):
        """ctl start kube-apiserver once the killed one is gone, and wait
        until it is ready. ctl takes a live pid in its pid file for a running
        server, and a killed process lingers (a zombie, where nothing reaps
        it) after SIGKILL: so wait for it to go, and drop the stale pid file."""
        pidfile = os.path.join(self.cdir, "run", "kube-apiserver.pid")
        try:
            with open(pidfile) as f:
                pid = int(f.read())
        except (OSError, ValueError):
            pid = None
        deadline = time.monotonic() + 15
        while pid and time.monotonic() < deadline:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                break  # gone
            if state == "Z":
                break
            if not self.api_ready():
                time.sleep(0.1)
                continue
            return  # the running one is ready: nothing to do
        if pid:
            try:
                os.unlink(pidfile)
            except OSError:
                pass
        subprocess.run([os.path.join(HERE, "ctl"), "start", "kube-apiserver"], check=True,
                       env=dict(os.environ, MUSTER_CLUSTER_DIR=self.cdir), capture_output=True)
        deadline = time.monotonic() + timeout
        while not self.api_ready():
            if time.monotonic() > deadline:
                raise RuntimeError("kube-apiserver not ready after ctl start")
            time.sleep(0.2)

    def api_ready(self):
        try:
            return self.api.status("/readyz", timeout=3) == 200
        except Exception:
            return False

    def wait_holder(self, pred, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            h = self.holder()
            if pred(h):
                return h
            time.sleep(0.3)
        return None

    def f_kill_leader(self):
        h = self.holder()
        if h not in self.identities:
            return None
        # Started again with its identity at once, it would find itself the
        # holder and carry on; two replicas: it comes back only after the
        # standby could have taken over, as a rescheduled pod would.
        self.replicas.kill(h, restart_after=DURATION + 2 if len(self.identities) > 1 else 1.0)
        new = self.wait_holder(lambda x: x and x != h, DURATION * 3) if len(self.identities) > 1 else \
            self.wait_holder(lambda x: x == h, DURATION * 3)
        return f"{h} -> {new}"

    def f_leader_change(self):
        h = self.holder()
        if h not in self.identities:
            return None
        rid = self.add("leader-change", {"method": "PUT", "path": r"/leases/" + LEASE + "$",
                                         "user_agent": self.ua(h), "action": {"status": 503}})
        if len(self.identities) > 1:
            new = self.wait_holder(lambda x: x and x != h, DURATION * 4)
        else:  # one replica: it loses the Lease and exits; let it come back
            time.sleep(RENEW + 2)
            new = None
        self.remove(rid)
        if new is None and len(self.identities) == 1:
            new = self.wait_holder(lambda x: x == h, DURATION * 3)
        return f"{h} -> {new}"

    def inject(self, kind):
        fn = getattr(self, "f_" + kind.replace("-", "_"))
        t0 = time.time_ns()
        try:
            detail = fn()
        except Exception as e:
            detail = f"failed: {e!r}"
        t1 = time.time_ns()
        if detail is None:
            self.say(f"fault {kind}: skipped")
            return
        self.faults[kind] += 1
        self.windows.append((kind, t0, t1, detail))
        self.say(f"fault {kind}: {detail} ({(t1 - t0) / 1e9:.1f} s)")

    def schedule(self, deadline):
        kinds = [k for k in KINDS if self.kill_apiserver_ok or k != "kill-apiserver"]
        order = list(kinds)
        self.rng.shuffle(order)
        while order or time.monotonic() < deadline:  # every kind once, even past the deadline
            kind = order.pop(0) if order else self.rng.choice(kinds)
            self.inject(kind)
            time.sleep(self.rng.uniform(1, 4) if self.short else self.rng.uniform(2, 10))

    # --- the run ---
    def setup(self):
        import nodes

        self.api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": self.ns}})
        cap = {"cpu": "32", "memory": "256Gi", "pods": "110"}
        for i, name in enumerate(self.vgpu_nodes):
            st, obj = self.api.request("POST", "/api/v1/nodes",
                                       nodes.node_manifest({"name": "vgpu", "vgpu": VGPU}, i, 2, name, cap, None))
            if st >= 300:
                raise RuntimeError(f"vGPU node {name}: {st} {obj}")
        self.proxy = Proxy.start(self.env, os.path.join(self.workdir, "proxy"), seed=self.seed)
        self.say(f"proxy {self.proxy.url}, control {self.proxy.control}, namespace {self.ns}")
        self.recorder = inv.Recorder(self.api, self.ns, [self.ns])
        self.recorder.start()
        os.makedirs(self.logdir, exist_ok=True)
        self.replicas = Replicas(self.proxy.kubeconfig, self.ns, self.logdir,
                                 os.path.join(HERE, "scheduler-config.yaml"))
        a, b = f"muster-a-{self.seed}", f"muster-b-{self.seed}"
        self.replicas.start(a)
        self.identities = [a]
        deadline = time.monotonic() + 30
        uas = set()
        while time.monotonic() < deadline and not uas:
            uas = {e["user_agent"] for e in self.proxy.log() if e["user_agent"].startswith("muster")}
            time.sleep(0.5)
        self.per_replica = any(a in u for u in uas)
        if self.per_replica:
            self.replicas.start(b)
            self.identities.append(b)
            self.say(f"User-Agent {sorted(uas)}: two replicas, {a} and {b}")
        else:
            self.say(f"User-Agent {sorted(uas)} names no replica: one replica ({a}); "
                     "leader faults kill or starve it instead")
        self.wait_holder(lambda x: x in self.identities, 30)

    def run(self):
        self.setup()
        try:
            gpus = sum(int(n["status"]["allocatable"].get(GPU, "0")) for n in self.api.get("/api/v1/nodes")["items"])
            self.workload = Workload(self.api, self.ns, random.Random(self.seed * 7919 + 1), min(gpus, 128) * 1.3,
                                     period=1.0)
            wt = threading.Thread(target=self.workload.run, daemon=True)
            wt.start()
            t_start = time.monotonic()
            self.schedule(t_start + self.seconds)
            self.workload.stop_.set()
            wt.join(30)
            self.proxy.clear()
            self.proxy.http1(False)
            self.apiserver_up()
            self.say(f"faults off; quiet for {self.quiet} s")
            time.sleep(self.quiet)
            return self.check()
        finally:
            self.teardown()

    def check(self):
        rep = inv.Report()
        t_end = time.time_ns()
        pods_now = {p["uid"]: p for p in map(inv.trim_pod, self.api.get("/api/v1/pods")["items"])}
        nodes_now = inv.node_table([(0, "SYNC", self.api.get("/api/v1/nodes")["items"])])
        quota = self.quota()
        inv.check_end(rep, self.api, [self.ns], pods_now, nodes_now, quota, self.workload.vgpu_uids)
        self.recorder.stop()
        ev = self.recorder.snapshot()
        log = self.proxy.log()
        self.stats = self.proxy.stats()
        node_tab = inv.node_table(ev["nodes"])
        node_tab.update({k: v for k, v in nodes_now.items() if k not in node_tab})
        inv.check_binding(rep, ev["pods"], log)
        inv.check_capacity(rep, ev["pods"], node_tab)
        mins = inv.min_members({k: v for k, v in ev.items() if k.startswith("pg-")})
        excused = [(a, b) for kind, a, b, _ in self.windows if kind in EXCUSE]
        inv.check_gangs(rep, ev["pods"], mins, excused, self.workload.exempt, t_end)
        inv.check_leadership(rep, log, inv.holder_timeline(ev["leases"], LEASE))
        self.replica_info = self.replicas.stop()
        inv.check_replicas(rep, self.replica_info)
        self.report = rep
        self.log_entries = len(log)
        self.save(ev, log, pods_now)
        return rep

    def save(self, ev, log, pods_now):
        """The evidence, for reading violations afterwards: what the
        watches recorded, the proxy's log, the faults' windows, the end state."""
        os.makedirs(self.workdir, exist_ok=True)
        with open(os.path.join(self.workdir, "record.json"), "w") as f:
            json.dump(ev, f)
        with open(os.path.join(self.workdir, "proxy-log.jsonl"), "w") as f:
            for e in log:
                f.write(json.dumps(e) + "\n")
        with open(os.path.join(self.workdir, "faults.json"), "w") as f:
            json.dump({"windows": self.windows, "rules": self.rule_ids, "stats": self.stats}, f, indent=1)
        with open(os.path.join(self.workdir, "end-pods.json"), "w") as f:
            json.dump([p for p in pods_now.values() if p["ns"] == self.ns], f, indent=1)

    def quota(self):
        import yaml

        with open(os.path.join(HERE, "scheduler-config.yaml")) as f:
            cfg = yaml.safe_load(f)
        for q in cfg.get("queues") or []:
            if q["name"] == cfg.get("defaultQueue"):
                return float(q["quota"][GPU]["nominal"])
        return float("inf")

    def fired(self):
        """kind -> how many times its rules fired in the proxy (stats), or
        the injections of kinds that are not rules."""
        by_rule = self.stats.get("rules", {}) if hasattr(self, "stats") else {}
        out = {}
        for kind in KINDS:
            if kind in ("stall", "reset-rule", "write-status", "slow-events", "lose-binding", "leader-change"):
                out[kind] = sum(by_rule.get(i, 0) for i in self.rule_ids.get(kind, []))
            else:
                out[kind] = self.faults.get(kind, 0)
        return out

    def table(self):
        faults = dict(self.faults)
        for k, v in self.fired().items():
            faults[f"{k} (proxy firings)" if k in self.rule_ids else k] = v
        for k, v in self.workload.actions.items():
            faults[f"workload {k}"] = v
        text = inv.table(self.report, faults)
        extra = [f"proxy: {self.log_entries} requests logged, {self.stats.get('faulted')} faulted; "
                 f"workload failures {dict(self.workload.failures)}; watch restarts {dict(self.recorder.errors)}"]
        for r in self.replica_info:
            extra.append(f"replica {r['identity']}: {r['starts']} starts, exits {r['exits']}, log {r['log']}")
        return text + "\n" + "\n".join(extra)

    def teardown(self):
        for f in (lambda: self.workload.stop_.set(), lambda: self.recorder.stop(), lambda: self.replicas.stop()):
            try:
                f()
            except Exception:
                pass
        try:
            self.proxy.stop()
        except Exception:
            pass
        for name in self.vgpu_nodes:
            try:
                self.api.request("DELETE", f"/api/v1/nodes/{name}")
            except Exception:
                pass
        try:
            self.api.request("DELETE", f"/api/v1/namespaces/{self.ns}/pods", {"kind": "DeleteOptions",
                             "apiVersion": "v1", "gracePeriodSeconds": 0})
            self.api.request("DELETE", f"/api/v1/namespaces/{self.ns}")
        except Exception:
            pass


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description="a chaos run against the cluster in $MUSTER_CLUSTER_DIR")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quiet", type=float, default=60)
    ap.add_argument("--short", action="store_true", help="short fault windows (the test's run)")
    ap.add_argument("--no-kill-apiserver", action="store_true")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args(argv)
    cdir = os.environ.get("MUSTER_CLUSTER_DIR", os.path.join(TOP, ".cluster-chaos"))
    env = {}
    with open(os.path.join(cdir, "cluster.env")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            env[k] = v
    # Outside the cluster's directory, which `ctl down` removes (ignored by git as /.cluster-*/).
    workdir = args.workdir or os.path.join(TOP, ".cluster-chaos-runs",
                                           f"run-{args.seed}-{time.strftime('%Y%m%dT%H%M%S')}")
    c = Chaos(env, cdir, workdir, args.minutes * 60, args.seed, kill_apiserver=not args.no_kill_apiserver,
              quiet=args.quiet, short=args.short, logdir=os.path.join(workdir, "logs"))
    rep = c.run()
    text = c.table()
    print(text)
    with open(os.path.join(workdir, "report.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(workdir, "violations.json"), "w") as f:
        json.dump(rep.violations, f, indent=1, default=str)
    print(f"report: {workdir}/report.txt, violations: {workdir}/violations.json")
    return 1 if rep.count() else 0


if __name__ == "__main__":
    sys.exit(main())
