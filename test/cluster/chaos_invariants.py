"""The chaos run's invariant checker (docs/chaos.md).

A Recorder watches, with the admin kubeconfig straight to the API server
(never through the chaos proxy), every version of every pod, the nodes,
the leader Lease and the PodGroups of the three dialects, each event
stamped with the time it arrived. check() then replays what was recorded,
with the proxy's request log (every request Muster sent, with its arrival
time and body) and the runner's record of the faults it injected, and
counts checks and violations of:

  a  binding: no pod is bound unless a binding POST for its uid and that
     node went through the proxy; no binding POST names a pod that is not
     Muster's; pods of other schedulers created unbound stay unbound.
  b  capacity: at no point of the pod watch's order does a node hold more
     bound, non-terminal pods (deleting ones included: their containers
     still run) than its allocatable cpu, memory, nvidia.com/gpu and pods;
     no vGPU (by uuid in volcano.sh/vgpu-ids-new) holds more memory, cores
     or shares than the node registered, or is not one of the node's.
  c  gangs: no gang has 0 < bound members < minMember for more than
     GANG_TOLERANCE seconds, not counting the time inside fault windows
     that refuse or lose writes, kill the API server or leave no leader.
  d  leadership: no write other than to the Lease from a replica (named in
     its User-Agent, "muster/<identity>") once another replica holds the
     Lease (from the holder's acquireTime, or when seen, if earlier).
  e  the end, after a quiet period: every waiting pod of Muster's has
     PodScheduled=False with a message and a FailedScheduling Event
     (events.k8s.io, reportingController muster.dev/scheduler) for its uid;
     no waiting gang fits the room left (checked greedily, quota included).

Plus: no replica crashed on a signal we did not send, and none logged a
--check-state difference.
"""

import collections
import datetime
import http.client
import json
import re
import ssl
import threading
import time
import urllib.parse

GANG_TOLERANCE = 10.0  # seconds
SCHED = "muster"
SP_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
IDS = "volcano.sh/vgpu-ids-new"
VGPU_REGISTER = "volcano.sh/node-vgpu-register"
GPU = "nvidia.com/gpu"
RESOURCES = ("cpu", "memory", GPU)
BIND_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding$")
LEASE_PATH = re.compile(r"/apis/coordination\.k8s\.io/v1/namespaces/[^/]+/leases(/|$)")
DIALECTS = {
    "sp": "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups",
    "volcano": "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups",
    "native": "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups",
}

_SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QTY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([A-Za-z]*)$")


def quantity(s):
    """A Kubernetes quantity as a float ("500m" -> 0.5, "1Gi" -> 2**30)."""
    m = _QTY.match(str(s).strip())
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(f"quantity {s!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2)]


def micro_time(s):
    """RFC 3339 (Kubernetes MicroTime or Time) as unix ns, None if unreadable."""
    if not s:
        return None
    try:
        d = datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(d.timestamp() * 1e9)


# --- the API, raw: list + watch as JSON, no client models -------------------


class Api:
    """Plain HTTPS to the API server with a bearer token; objects stay dicts
    (the Python client's models drop fields they predate)."""

    def __init__(self, server, token, ca):
        u = urllib.parse.urlparse(server)
        self.host, self.port = u.hostname, u.port
        self.token = token
        self.ctx = ssl.create_default_context(cafile=ca)

    def _conn(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None, timeout=30):
        c = self._conn(timeout)
        try:
            headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            c.request(method, path, body=data, headers=headers)
            r = c.getresponse()
            text = r.read()
            return r.status, (json.loads(text) if text else None)
        finally:
            c.close()

    def status(self, path, timeout=5):
        """The status of a GET, its body unread as JSON (/readyz says "ok")."""
        c = self._conn(timeout)
        try:
            c.request("GET", path, headers={"Authorization": "Bearer " + self.token})
            r = c.getresponse()
            r.read()
            return r.status
        finally:
            c.close()

    def get(self, path, timeout=60):
        st, obj = self.request("GET", path, timeout=timeout)
        if st != 200:
            raise RuntimeError(f"GET {path}: {st} {obj}")
        return obj

    def watch(self, path, rv, timeout_seconds=300):
        """Yields watch events from rv until the server ends the stream."""
        sep = "&" if "?" in path else "?"
        q = f"{path}{sep}watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds={timeout_seconds}"
        c = self._conn(timeout_seconds + 30)
        try:
            c.request("GET", q, headers={"Authorization": "Bearer " + self.token})
            r = c.getresponse()
            if r.status != 200:
                raise RuntimeError(f"watch {path}: {r.status} {r.read()[:300]!r}")
            while True:
                line = r.readline()
                if not line:
                    return
                yield json.loads(line)
        finally:
            c.close()


def trim_pod(p):
    """What the checks need of a pod."""
    md, spec, st = p["metadata"], p.get("spec") or {}, p.get("status") or {}
    ann = md.get("annotations") or {}
    req = collections.Counter()
    for c in spec.get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            if k in RESOURCES:
                req[k] += quantity(v)
    return {
        "ns": md.get("namespace"), "name": md.get("name"), "uid": md.get("uid"),
        "rv": md.get("resourceVersion"), "labels": md.get("labels") or {},
        "group": ann.get(VOLCANO_ANNOTATION), "ids": ann.get(IDS),
        "deleting": bool(md.get("deletionTimestamp")), "node": spec.get("nodeName"),
        "scheduler": spec.get("schedulerName"),
        "native": (spec.get("schedulingGroup") or {}).get("podGroupName"),
        "phase": st.get("phase"), "req": dict(req),
        "conditions": [{"type": c.get("type"), "status": c.get("status"), "reason": c.get("reason"),
                        "message": c.get("message")} for c in st.get("conditions") or []
                       if c.get("type") == "PodScheduled"],
    }


def gang_of(p):
    """(dialect, name) of a trimmed pod's gang, or None."""
    if p["native"]:
        return ("native", p["native"])
    if p["labels"].get(SP_LABEL):
        return ("sp", p["labels"][SP_LABEL])
    if p["group"]:
        return ("volcano", p["group"])
    return None


class Recorder:
    """Watches pods (all namespaces), nodes, a Lease namespace's Leases and
    the given namespaces' PodGroups; keeps every event as
    (t_ns, stream, type, object) in arrival order per stream. A relist
    (after a broken or expired watch) is recorded as a SYNC of the whole
    list, so replay can drop what vanished meanwhile."""

    def __init__(self, api, lease_ns, namespaces):
        self.api = api
        self.streams = {"pods": "/api/v1/pods", "nodes": "/api/v1/nodes",
                        "leases": f"/apis/coordination.k8s.io/v1/namespaces/{lease_ns}/leases"}
        for ns in namespaces:
            for d, path in DIALECTS.items():
                self.streams[f"pg-{d}-{ns}"] = path.format(ns=ns)
        self.events = {k: [] for k in self.streams}
        self.lock = threading.Lock()
        self.stop_ = threading.Event()
        self.threads = []
        self.errors = collections.Counter()
        self.synced = {k: threading.Event() for k in self.streams}

    def _record(self, stream, typ, obj):
        if stream == "pods" and typ != "BOOKMARK":
            obj = trim_pod(obj) if typ != "SYNC" else [trim_pod(o) for o in obj]
        with self.lock:
            self.events[stream].append((time.time_ns(), typ, obj))

    def _run(self, stream):
        path = self.streams[stream]
        while not self.stop_.is_set():
            try:
                lst = self.api.get(path)
                rv = lst["metadata"]["resourceVersion"]
                self._record(stream, "SYNC", lst["items"])
                self.synced[stream].set()
                while not self.stop_.is_set():
                    for ev in self.api.watch(path, rv, timeout_seconds=60):
                        typ, obj = ev["type"], ev["object"]
                        if typ == "ERROR":
                            raise RuntimeError(f"watch error {obj}")
                        rv = obj["metadata"]["resourceVersion"]
                        if typ != "BOOKMARK":
                            self._record(stream, typ, obj)
                        if self.stop_.is_set():
                            return
            except Exception:  # the API server restarts: list again
                self.errors[stream] += 1
                self.stop_.wait(0.5)

    def start(self):
        for s in self.streams:
            t = threading.Thread(target=self._run, args=(s,), daemon=True, name=f"watch-{s}")
            t.start()
            self.threads.append(t)
        for s, ev in self.synced.items():
            ev.wait(60)

    def stop(self):
        self.stop_.set()

    def snapshot(self):
        with self.lock:
            return {k: list(v) for k, v in self.events.items()}


# --- the checks ----------------------------------------------------------------


class Report:
    def __init__(self):
        self.checks = collections.Counter()
        self.violations = collections.defaultdict(list)
        self.notes = []

    def check(self, inv, ok, detail=None):
        self.checks[inv] += 1
        if not ok:
            self.violations[inv].append(detail)

    def count(self):
        return sum(len(v) for v in self.violations.values())


def replay(events):
    """Yields (t_ns, {uid: pod}, changed uids, index) after each pod event;
    index maps ("node", name) and ("gang", dialect, ns, name) to uid sets."""
    pods = {}
    index = collections.defaultdict(set)

    def keys(p):
        out = []
        if p["node"]:
            out.append(("node", p["node"]))
        g = gang_of(p)
        if g:
            out.append(("gang", g[0], p["ns"], g[1]))
        return out

    def drop(u):
        p = pods.pop(u, None)
        if p:
            for k in keys(p):
                index[k].discard(u)

    def put(p):
        drop(p["uid"])
        pods[p["uid"]] = p
        for k in keys(p):
            index[k].add(p["uid"])

    for t, typ, obj in events:
        if typ == "SYNC":
            before = set(pods)
            pods.clear()
            index.clear()
            for p in obj:
                put(p)
            yield t, pods, before | set(pods), index
        elif typ == "DELETED":
            drop(obj["uid"])
            yield t, pods, {obj["uid"]}, index
        else:
            put(obj)
            yield t, pods, {obj["uid"]}, index


def holds_room(p):
    return p["node"] and p["phase"] not in ("Succeeded", "Failed")


def node_table(events):
    """name -> (allocatable dict, vgpu {uuid: (count, memory)}) from the
    last version of each node; plus {name: taints/unschedulable}."""
    nodes = {}
    for _, typ, obj in events:
        items = obj if typ == "SYNC" else [obj]
        if typ == "SYNC":
            nodes = {}
        for n in items:
            name = n["metadata"]["name"]
            if typ == "DELETED":
                nodes.pop(name, None)
                continue
            alloc = {k: quantity(v) for k, v in (n.get("status") or {}).get("allocatable", {}).items()
                     if k in RESOURCES or k == "pods"}
            vgpu = {}
            reg = ((n["metadata"].get("annotations") or {}).get(VGPU_REGISTER)) or ""
            for dev in reg.split(":"):
                f = dev.split(",")
                if len(f) >= 3 and f[0]:
                    vgpu[f[0]] = (int(f[1]), int(f[2]))
            nodes[name] = {"alloc": alloc, "vgpu": vgpu, "taints": (n.get("spec") or {}).get("taints") or [],
                           "unschedulable": bool((n.get("spec") or {}).get("unschedulable")),
                           "ready": any(c.get("type") == "Ready" and c.get("status") == "True"
                                        for c in (n.get("status") or {}).get("conditions") or [])}
    return nodes


def vgpu_shares(ids):
    """[(uuid, memory, cores)] of a volcano.sh/vgpu-ids-new text."""
    out = []
    for part in (ids or "").split(";"):
        for dev in part.split(":"):
            f = dev.split(",")
            if len(f) >= 4 and f[0]:
                out.append((f[0], int(f[2]), int(f[3])))
    return out


def node_usage(pods, node, index=None):
    use = collections.Counter()
    vg = collections.defaultdict(lambda: [0, 0, 0])  # shares, memory, cores
    who = []
    for p in ([pods[u] for u in index[("node", node)]] if index is not None else pods.values()):
        if p["node"] != node or not holds_room(p):
            continue
        who.append(p)
        for k, v in p["req"].items():
            use[k] += v
        use["pods"] += 1
        for u, mem, cores in vgpu_shares(p["ids"]):
            vg[u][0] += 1
            vg[u][1] += mem
            vg[u][2] += cores
    return use, vg, who


def check_capacity(rep, pod_events, nodes):
    seen = set()
    for t, pods, changed, index in replay(pod_events):
        touched = {pods[u]["node"] for u in changed if u in pods and pods[u]["node"]}
        for node in touched:
            if node not in nodes:
                continue
            use, vg, who = node_usage(pods, node, index)
            alloc = nodes[node]["alloc"]
            over = {k: (use[k], alloc.get(k, 0)) for k in use if use[k] > alloc.get(k, 0) + 1e-9}
            for u, (n, mem, cores) in vg.items():
                reg = nodes[node]["vgpu"].get(u)
                if reg is None:
                    over[f"vgpu {u}"] = "not a GPU of this node"
                elif n > reg[0] or mem > reg[1] or cores > 100:
                    over[f"vgpu {u}"] = f"shares {n}/{reg[0]} memory {mem}/{reg[1]} cores {cores}/100"
            key = (node, tuple(sorted(over)))
            ok = not over
            if not ok and key in seen:
                rep.checks["b"] += 1  # the same over-commit again: reported once
                continue
            if not ok:
                seen.add(key)
            rep.check("b", ok, ok or {
                "t": t, "node": node, "over": over,
                "pods": sorted(f"{p['ns']}/{p['name']}{' (deleting)' if p['deleting'] else ''}"
                               for p in who)})


def check_binding(rep, pod_events, log, muster_names=(SCHED,)):
    binds = collections.defaultdict(list)  # uid -> [(t_ns, node)]
    by_uid = {}
    for _, typ, obj in pod_events:
        for p in (obj if typ == "SYNC" else [obj]):
            by_uid.setdefault(p["uid"], p)
    for e in log:
        m = BIND_PATH.match(e["path"])
        if e["method"] != "POST" or not m:
            continue
        try:
            b = json.loads(e["body"])
            uid, node = b["metadata"].get("uid"), b["target"]["name"]
        except (ValueError, KeyError, TypeError):
            rep.check("a", False, {"binding without uid/target": e["path"], "seq": e["seq"]})
            continue
        if e["forwarded"]:
            binds[uid].append((e["t_ns"], node))
        p = by_uid.get(uid)
        rep.check("a", p is None or p["scheduler"] in muster_names,
                  {"binding names another scheduler's pod": f"{m.group(1)}/{m.group(2)}", "uid": uid,
                   "scheduler": p and p["scheduler"], "seq": e["seq"]})
    first = {}  # uid -> first trimmed version
    checked = set()
    for t, typ, obj in pod_events:
        for p in (obj if typ == "SYNC" else [obj]):
            first.setdefault(p["uid"], p)
            if not p["node"] or (p["uid"], p["node"]) in checked:
                continue
            checked.add((p["uid"], p["node"]))
            created_bound = first[p["uid"]]["node"] is not None
            if created_bound and p["scheduler"] not in muster_names:
                continue  # placed by its creator, as another scheduler would
            ok = any(bt <= t and bn == p["node"] for bt, bn in binds.get(p["uid"], ()))
            rep.check("a", ok, ok or {"bound without a binding through the proxy": f"{p['ns']}/{p['name']}",
                                      "uid": p["uid"], "node": p["node"], "scheduler": p["scheduler"],
                                      "seen_ns": t})


def min_members(pg_events):
    """(dialect, ns, name) -> minMember, from the last version seen."""
    out = {}
    for stream, events in pg_events.items():
        d = stream.split("-")[1]
        for _, typ, obj in events:
            for g in (obj if typ == "SYNC" else [obj]):
                md, spec = g["metadata"], g.get("spec") or {}
                if d == "native":
                    n = ((spec.get("schedulingPolicy") or {}).get("gang") or {}).get("minCount", 1)
                else:
                    n = spec.get("minMember", 1)
                out[(d, md["namespace"], md["name"])] = int(n)
    return out


def subtract(start, end, windows):
    """Seconds of [start, end] (ns) outside the union of windows."""
    total = (end - start) / 1e9
    cut = 0.0
    last = start
    for a, b in sorted(windows):
        a, b = max(a, last), min(b, end)
        if b > a:
            cut += (b - a) / 1e9
            last = b
    return total - cut


def check_gangs(rep, pod_events, mins, windows, exempt_after, end_ns):
    """windows: [(start_ns, end_ns)] not counted; exempt_after: gang key ->
    t_ns from which the workload itself broke the gang (deleted members)."""
    below = {}  # key -> since
    gkey = {}  # uid -> gang key, kept past the pod's deletion
    for t, pods, changed, index in replay(pod_events):
        keys = set()
        for u in changed:
            p = pods.get(u)
            if p and gang_of(p):
                gkey[u] = (gang_of(p)[0], p["ns"], gang_of(p)[1])
            if u in gkey:
                keys.add(gkey[u])
        if len(changed) > 1:
            keys |= set(below)
        for key in keys:
            if key not in mins:
                continue
            n = sum(1 for u in index[("gang", *key)] if holds_room(pods[u]) and not pods[u]["deleting"])
            if 0 < n < mins[key]:
                below.setdefault(key, t)
            elif key in below:
                _gang_done(rep, key, below.pop(key), t, windows, exempt_after, n, mins)
    for key, since in below.items():
        _gang_done(rep, key, since, end_ns, windows, exempt_after, None, mins)


def _gang_done(rep, key, since, until, windows, exempt_after, n, mins):
    stop = min(until, exempt_after.get(key, until))
    if stop <= since:
        rep.checks["c"] += 1
        return
    secs = subtract(since, stop, windows)
    rep.check("c", secs <= GANG_TOLERANCE, {"gang": f"{key[0]} {key[1]}/{key[2]}", "min": mins[key],
                                            "below_from_ns": since, "until_ns": until,
                                            "seconds_outside_fault_windows": round(secs, 1),
                                            "bound_at_end": n})


def parse_identity(ua):
    m = re.match(r"^muster/(\S+)", ua or "")
    return m.group(1) if m else None


def holder_timeline(lease_events, lease_name):
    """[(t_ns, holder)] of changes of the Lease's holder."""
    out = []
    for t, typ, obj in lease_events:
        for lease in (obj if typ == "SYNC" else [obj]):
            if lease["metadata"]["name"] != lease_name:
                continue
            h = "" if typ == "DELETED" else ((lease.get("spec") or {}).get("holderIdentity") or "")
            if out and out[-1][1] == h:
                continue
            acq = micro_time((lease.get("spec") or {}).get("acquireTime"))
            te = t
            if h and acq and acq < t and (not out or acq > out[-1][0]):
                te = acq
            out.append((te, h))
    return out


def check_leadership(rep, log, timeline):
    idents = {parse_identity(e["user_agent"]) for e in log} - {None}
    if len(idents) < 1:
        rep.notes.append("d: no User-Agent names a replica (Muster sends only \"muster\"): not checked")
        return
    times = [t for t, _ in timeline]
    import bisect
    for e in log:
        me = parse_identity(e["user_agent"])
        if not me or e["method"] == "GET" or LEASE_PATH.search(e["path"]):
            continue
        i = bisect.bisect_right(times, e["t_ns"]) - 1
        h = timeline[i][1] if i >= 0 else ""
        ok = not h or h == me
        rep.check("d", ok, ok or {"writer": me, "holder": h, "since_ns": timeline[i][0], "t_ns": e["t_ns"],
                                  "method": e["method"], "path": e["path"], "status": e["status"],
                                  "forwarded": e["forwarded"]})


def free_room(nodes, pods_now):
    """name -> room left on each schedulable node (Ready, not cordoned, no
    NoSchedule taint but the GPU one, which every chaos pod tolerates)."""
    use = collections.defaultdict(collections.Counter)
    for p in pods_now.values():
        if holds_room(p):
            for k, v in p["req"].items():
                use[p["node"]][k] += v
            use[p["node"]]["pods"] += 1
    free = {}
    for name, n in nodes.items():
        if n["unschedulable"] or not n["ready"] or n["vgpu"]:
            continue
        if any(t.get("effect") in ("NoSchedule", "NoExecute") and t.get("key") != GPU for t in n["taints"]):
            continue
        free[name] = {k: n["alloc"].get(k, 0) - use[name][k] for k in (*RESOURCES, "pods")}
    return free


def take(gang_pods, free):
    """Places what it can of gang_pods in free (changed in place), first
    fit by size; returns the nodes used, None if some pod found no room."""
    used = []
    for p in sorted(gang_pods, key=lambda p: -p["req"].get(GPU, 0)):
        need = dict(p["req"], pods=1)
        for name in sorted(free, key=lambda n: free[n].get(GPU, 0)):
            f = free[name]
            if all(f.get(k, 0) + 1e-9 >= v for k, v in need.items()):
                for k, v in need.items():
                    f[k] -= v
                used.append(name)
                break
        else:
            return None
    return used


def fits(gang_pods, free, quota_left):
    """The nodes where every pod of gang_pods fits the room left, first fit
    by size, or None (a fit found is a fit; a miss of this greedy pass
    counts as no fit, so the check can only under-report). vGPU pods are
    not tried."""
    gpus = sum(p["req"].get(GPU, 0) for p in gang_pods)
    if gpus > quota_left or any(p.get("vgpu") for p in gang_pods):
        return None
    return take(gang_pods, {k: dict(v) for k, v in free.items()})


def _take_partial(gang_pods, free):
    """take(), but a pod that finds no room is skipped, not the end."""
    for p in gang_pods:
        take([p], free)
        need = dict(p["req"], pods=1)
        for name in sorted(free, key=lambda n: free[n].get(GPU, 0)):
            f = free[name]
            if all(f.get(k, 0) + 1e-9 >= v for k, v in need.items()):
                for k, v in need.items():
                    f[k] -= v
                break
        else:
            return False
    return True


def check_end(rep, api, namespaces, pods_now, nodes, quota, vgpu_uids, muster_names=(SCHED,)):
    """(e) on the state after the quiet period."""
    events = collections.defaultdict(list)
    for ns in namespaces:
        for ev in api.get(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"]:
            if ev.get("reason") == "FailedScheduling" and ev.get("reportingController") == "muster.dev/scheduler":
                events[(ev.get("regarding") or {}).get("uid")].append(ev)
    used = sum(p["req"].get(GPU, 0) for p in pods_now.values() if p["scheduler"] in muster_names
               and holds_room(p))
    waiting = [p for p in pods_now.values() if p["ns"] in namespaces and p["scheduler"] in muster_names
               and not p["node"] and not p["deleting"]]
    for p in waiting:
        c = next((c for c in p["conditions"] if c["type"] == "PodScheduled"), None)
        ok = bool(c and c["status"] == "False" and c.get("message"))
        rep.check("e", ok, ok or {"waiting pod without PodScheduled=False and a message": f"{p['ns']}/{p['name']}",
                                  "condition": c})
        ok = bool(events.get(p["uid"]))
        rep.check("e", ok, ok or {"waiting pod without a FailedScheduling Event from muster.dev/scheduler":
                                  f"{p['ns']}/{p['name']}", "uid": p["uid"]})
    free = free_room(nodes, pods_now)
    gangs = collections.defaultdict(list)
    for p in waiting:
        g = gang_of(p)
        gangs[(g[0], p["ns"], g[1]) if g else ("single", p["ns"], p["name"])].append(dict(p, vgpu=p["uid"] in vgpu_uids))
    # EASY backfill: a gang that holds a reservation ("(reservation on N
    # node(s))" in its message) keeps room on N nodes for when running work
    # there ends, and a later gang without a runtime may not use it. Which
    # N is not said, so the N nodes with the most free room are taken out:
    # whatever Muster chose, what is left is no more than that.
    holders = {}
    for k, ms in gangs.items():
        for m in ms:
            for c in m["conditions"]:
                r = re.search(r"\(reservation on (\d+) node", c.get("message") or "")
                if r:
                    holders[k] = max(holders.get(k, 0), int(r.group(1)))
    for k, n in holders.items():
        for name in sorted(free, key=lambda x: (-free[x].get(GPU, 0), -free[x].get("cpu", 0)))[:n]:
            del free[name]
    if holders:
        rep.notes.append(f"e: reservations {[f'{k[1]}/{k[2]} on {n} nodes' for k, n in holders.items()]}: "
                         "as many of the roomiest nodes left out of the fit check")
    for key, members in sorted(gangs.items()):
        bound = [p for p in pods_now.values() if p["ns"] == key[1] and gang_of(p) == (key[0], key[2]) and p["node"]]
        if bound:
            continue  # partly bound: (c)'s business
        if key in holders:
            continue
        where = fits(members, free, quota - used)
        ok = where is None
        rep.check("e", ok, ok or {"gang fits but waits": f"{key[0]} {key[1]}/{key[2]}",
                                  "members": [m["name"] for m in members],
                                  "gpus": sum(m["req"].get(GPU, 0) for m in members),
                                  "fits_on": {n: free[n] for n in sorted(set(where))},
                                  "messages": sorted({c.get("message") or "" for m in members
                                                      for c in m["conditions"]})})


def check_replicas(rep, replicas):
    """replicas: [{identity, exits: [(rc, ours)], log}]"""
    for r in replicas:
        for rc, ours in r["exits"]:
            ok = ours or rc >= 0
            rep.check("replicas", ok, ok or {"replica died of a signal": r["identity"], "rc": rc, "log": r["log"]})
        with open(r["log"], errors="replace") as f:
            diffs = [line.strip() for line in f if "check-state:" in line]
        rep.check("replicas", not diffs, {"check-state differences": r["identity"], "lines": diffs[:5]})


def table(rep, faults):
    """The report: faults by kind, checks and violations by invariant."""
    lines = ["faults injected:"]
    for k, n in sorted(faults.items()):
        lines.append(f"  {k:<28} {n:>6}")
    lines.append("invariants:             checks  violations")
    names = {"a": "a binding", "b": "b capacity", "c": "c gangs", "d": "d leadership", "e": "e end state",
             "replicas": "replicas"}
    for inv in ("a", "b", "c", "d", "e", "replicas"):
        lines.append(f"  {names[inv]:<20} {rep.checks[inv]:>8}  {len(rep.violations[inv]):>10}")
    for n in rep.notes:
        lines.append("note: " + n)
    for inv, vs in sorted(rep.violations.items()):
        for v in vs[:20]:
            lines.append(f"VIOLATION {inv}: {json.dumps(v, default=str)}")
        if len(vs) > 20:
            lines.append(f"VIOLATION {inv}: ... and {len(vs) - 20} more")
    return "\n".join(lines)
