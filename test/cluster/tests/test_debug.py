"""Muster's debug API, /metrics, the `status` and `explain` commands and the
/debug/ page (scheduler/debug/DEBUG.md), against the local control plane (profile
`small`) and checked against the cluster.

Every number a test expects is computed from what the Kubernetes API says
(pods, nodes, PodGroups, read with the official client) or from
test/cluster/scheduler-config.yaml, never from Muster's own answers; where
one document of Muster's is compared with another (a gang's position with
its queue position, /metrics with /debug/queues) the test says so.

The scenario (module fixture `scenario`), in a namespace of its own, with
one Muster for all the tests that read it:

    A  PodGroup, 1 pod x 8 GPUs, queue e2e-small (8 GPUs, no borrowing),
       pinned to gpu-0009: bound, so e2e-small is full
    F  PodGroup, 3 pods x 2 GPUs, pinned to gpu-0012: bound
    B  PodGroup, 1 pod x 8 GPUs, queue e2e-small: waits on the queue's quota
    E  a single pod of 1 GPU, queue e2e-small: waits on the quota too
    C  Volcano PodGroup, minMember 4, only 3 pods of 1 GPU: Incomplete
    D  PodGroup, 3 pods x 8 GPUs, required affinity to gpu-0010 and
       gpu-0011: 2 of 3 members fit, so it waits on fit

The GPU nodes named here are used by no other test file at the same time,
and the namespace's pods are deleted (grace period 0) at the end, so the
nodes are empty again for the next test. The first test uses conftest's
`muster` fixture and stays before the scenario's tests (pytest keeps the
file's order; the module fixture lives until the file's last test), so
that two Musters of scheduler "muster" never run at once. Tests that start
a Muster of their own give it another scheduler name, so it takes no pods.
"""

import html.parser
import http.client as http_client
import json
import math
import os
import re
import shutil
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
import yaml
from kubernetes import client
from kubernetes.utils import parse_quantity

import conftest
from conftest import CLUSTER, TOP, Muster, Not, cluster_dir, kept_state_held, wait_for

SP = ("scheduling.x-k8s.io", "v1alpha1")
VOLCANO = ("scheduling.volcano.sh", "v1beta1")
SP_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_LABEL = "muster.dev/queue"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
CONFIG = os.path.join(CLUSTER, "scheduler-config.yaml")
SMALL = "e2e-small"
DEFAULT = "e2e-default"
NODE_A, NODE_F, NODES_D = "gpu-0009", "gpu-0012", ("gpu-0010", "gpu-0011")
TIMEOUT = 60  # seconds for Muster to bind, or to say why it waits


# --- Muster ------------------------------------------------------------------


def binary():
    path = os.path.join(TOP, os.environ.get("BUILD", "build"), "muster")
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: run make first")
    return path


def start_muster(cluster, name, *extra):
    """`muster run` as the `muster` fixture of conftest.py starts it, with
    `extra` flags after its own (a later --debug-addr or --scheduler-name
    wins). Its output goes to $MUSTER_CLUSTER_DIR/logs/muster-NAME.log."""
    logs = os.path.join(cluster_dir(), "logs")
    os.makedirs(logs, exist_ok=True)
    log = os.path.join(logs, f"muster-{name}.log")
    argv = [binary(), "run", "--kubeconfig", cluster["KUBECONFIG"], "--config", CONFIG,
            "--debug-addr", "127.0.0.1:0", "--check-state", *extra]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    return Muster(proc, log)


def stop_muster(m):
    status = m.stop()
    assert status == 0, f"muster exited with {status} on SIGTERM (None: killed after 15 s); {m.log}:\n{m.tail()}"
    kept_state_held(m)


def until(muster, what, fn, timeout=TIMEOUT):
    return conftest.until(muster, what, fn, timeout)


# --- HTTP --------------------------------------------------------------------


class Reply:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def text(self):
        return self.body.decode("utf-8", errors="replace")

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"HTTP {self.status} {self.headers.get('Content-Type')!r} {self.text[:300]!r}"


def http(url, method="GET", headers=None, data=None, timeout=10, context=None):
    """One request; any status is returned, not raised."""
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            return Reply(r.status, r.headers, r.read())
    except urllib.error.HTTPError as e:
        return Reply(e.code, e.headers, e.read())


def get_doc(muster, path, headers=None):
    """The JSON document at `path`, once Muster serves it (503 until its
    first cycle). Fails at once on another status or a non-JSON answer."""

    def fetch():
        r = http(muster.debug_url() + path, headers=headers)
        if r.status == 503:
            return Not(repr(r))
        assert r.status == 200, f"GET {path}: {r!r}"
        assert r.headers.get("Content-Type", "").startswith("application/json"), f"GET {path}: {r!r}"
        return r.json()

    return until(muster, f"GET {path} answered", fetch)


# --- objects -----------------------------------------------------------------


def pod(name, gpus, gang=None, dialect=SP, queue=None, node_selector=None, affinity=None):
    labels, annotations = {}, {}
    if gang and dialect == SP:
        labels[SP_LABEL] = gang
    elif gang:
        annotations[VOLCANO_ANNOTATION] = gang
    if queue:
        labels[QUEUE_LABEL] = queue
    spec = {
        "schedulerName": "muster",
        "restartPolicy": "Never",
        "tolerations": [GPU_TOLERATION],
        "containers": [{"name": "main", "image": "busybox", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi", GPU: str(gpus)}, "limits": {GPU: str(gpus)}}}],
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels, "annotations": annotations}, "spec": spec}


def create_gang(core, custom, ns, name, pods, gpus, min_member=None, dialect=SP, queue=None, **pod_args):
    """A PodGroup of minMember `min_member` (default `pods`), then `pods`
    pods NAME-0 ..; the queue as a label (scheduler-plugins) or spec.queue
    (Volcano). Returns the pod names."""
    group, version = dialect
    meta, spec = {"name": name}, {"minMember": min_member or pods}
    if queue and dialect == SP:
        meta["labels"] = {QUEUE_LABEL: queue}
    elif queue:
        spec["queue"] = queue
    custom.create_namespaced_custom_object(group, version, ns, "podgroups", {
        "apiVersion": f"{group}/{version}", "kind": "PodGroup", "metadata": meta, "spec": spec})
    names = [f"{name}-{i}" for i in range(pods)]
    for n in names:
        core.create_namespaced_pod(ns, pod(n, gpus, gang=name, dialect=dialect, **pod_args))
    return names


# --- the cluster's side ------------------------------------------------------


def config():
    with open(CONFIG) as f:
        return yaml.safe_load(f)


def config_queues():
    """name -> the queue's entry in the configuration (cohorts' queues too)."""
    doc = config()
    queues = {q["name"]: q for q in doc.get("queues") or []}
    for c in doc.get("cohorts") or []:
        queues.update({q["name"]: q for q in c.get("queues") or []})
    return queues


def amount(quantity):
    """A Kubernetes quantity as the debug API gives it: cpu in cores,
    everything else as the plain number (bytes, counts)."""
    return float(parse_quantity(quantity))


def pod_requests(p):
    """The pod's effective requests (Decimal by resource): the larger of
    its containers' sum and each init container, plus overhead."""
    total = {}
    for c in p.spec.containers or []:
        for r, q in ((c.resources and c.resources.requests) or {}).items():
            total[r] = total.get(r, Decimal(0)) + parse_quantity(q)
    for c in p.spec.init_containers or []:
        for r, q in ((c.resources and c.resources.requests) or {}).items():
            total[r] = max(total.get(r, Decimal(0)), parse_quantity(q))
    for r, q in (p.spec.overhead or {}).items():
        total[r] = total.get(r, Decimal(0)) + parse_quantity(q)
    return total


def finished(p):
    return p.status.phase in ("Succeeded", "Failed")


def gang_of(p):
    """(namespace, gang name, kind) of a pod as Muster groups them."""
    ns = p.metadata.namespace
    if (p.metadata.labels or {}).get(SP_LABEL):
        return ns, p.metadata.labels[SP_LABEL], "PodGroup"
    if (p.metadata.annotations or {}).get(VOLCANO_ANNOTATION):
        return ns, p.metadata.annotations[VOLCANO_ANNOTATION], "VolcanoPodGroup"
    return ns, p.metadata.name, "Pod"


class Cluster:
    """One reading of the cluster: nodes, pods and PodGroups of every
    namespace, and what follows from them."""

    def __init__(self, core, custom):
        self.nodes = core.list_node().items
        self.pods = core.list_pod_for_all_namespaces().items
        self.groups = {}
        for dialect, kind in ((SP, "PodGroup"), (VOLCANO, "VolcanoPodGroup")):
            for g in custom.list_cluster_custom_object(*dialect, "podgroups")["items"]:
                self.groups[(g["metadata"]["namespace"], g["metadata"]["name"], kind)] = g
        self.queue_names = set(config_queues())
        self.default = config().get("defaultQueue")

    def queue_of(self, p):
        """The queue of a pod's gang (config/README.md, "Which queue a gang
        waits in"; no queue of scheduler-config.yaml lists namespaces)."""
        ns, name, kind = gang_of(p)
        if kind == "Pod":
            return (p.metadata.labels or {}).get(QUEUE_LABEL) or self.default
        g = self.groups.get((ns, name, kind), {})
        label = (g.get("metadata", {}).get("labels") or {}).get(QUEUE_LABEL)
        if label:
            return label
        spec_queue = (g.get("spec") or {}).get("queue")
        if kind == "VolcanoPodGroup" and spec_queue and (spec_queue != "default" or "default" in self.queue_names):
            return spec_queue
        return self.default

    def muster_pods(self):
        return [p for p in self.pods if p.spec.scheduler_name == "muster" and not finished(p)]

    def queue_usage(self, queue, resource=GPU):
        """What the bound, unfinished pods of the queue's gangs request."""
        return float(sum(pod_requests(p).get(resource, 0) for p in self.muster_pods()
                         if p.spec.node_name and self.queue_of(p) == queue))

    def queue_gangs(self, queue):
        """(admitted, pending): gangs of the queue with a member bound, and
        gangs with none bound yet."""
        bound, unbound = set(), set()
        for p in self.muster_pods():
            if self.queue_of(p) == queue and not p.metadata.deletion_timestamp:
                (bound if p.spec.node_name else unbound).add(gang_of(p))
        return len(bound), len(unbound - bound)

    def waiting_gangs(self):
        """(namespace, name) of every gang with a member not bound yet."""
        return {gang_of(p)[:2] for p in self.muster_pods()
                if not p.spec.node_name and not p.metadata.deletion_timestamp}

    def node_used(self, node):
        """Requests of every unfinished pod bound to the node, any scheduler's."""
        used = {}
        for p in self.pods:
            if p.spec.node_name == node and not finished(p):
                for r, q in pod_requests(p).items():
                    used[r] = used.get(r, Decimal(0)) + q
        return {r: float(v) for r, v in used.items()}


def condition(p, kind="PodScheduled"):
    return next((c for c in p.status.conditions or [] if c.type == kind), None)


def pods_of(core, ns, names):
    by_name = {p.metadata.name: p for p in core.list_namespaced_pod(ns).items}
    return [by_name[n] for n in names]


def all_bound(core, ns, names):
    got = {p.metadata.name: p.spec.node_name for p in pods_of(core, ns, names)}
    return got if all(got.values()) else Not(f"not all bound: {got}")


def waiting_with(core, ns, names, mentions):
    """name -> message once every pod waits (PodScheduled False,
    Unschedulable) with a message naming its gang and containing
    `mentions`; fails at once if one of them is bound."""
    msgs = {}
    for p in pods_of(core, ns, names):
        if p.spec.node_name:
            pytest.fail(f"{p.metadata.name} was bound to {p.spec.node_name}; it should wait")
        c = condition(p)
        if not (c and c.status == "False" and c.reason == "Unschedulable"
                and c.message.startswith(f"gang {ns}/") and mentions in c.message):
            return Not(f"{p.metadata.name}: {c and (c.status, c.reason, c.message)}")
        msgs[p.metadata.name] = c.message
    return msgs


def rfc3339(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


# --- /metrics ----------------------------------------------------------------

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def parse_labels(s, i):
    """Labels from s[i] == '{'; returns (dict, index after '}')."""
    labels = {}
    i += 1
    while True:
        if s[i] == "}":
            return labels, i + 1
        m = LABEL_NAME.match(s, i)
        assert m, f"bad label name at {s[i:]!r}"
        name, i = m.group(0), m.end()
        assert s[i:i + 2] == '="', f"bad label {name} in {s!r}"
        i += 2
        value = []
        while s[i] != '"':
            if s[i] == "\\":
                value.append({"\\": "\\", '"': '"', "n": "\n"}[s[i + 1]])
                i += 2
            else:
                value.append(s[i])
                i += 1
        i += 1
        assert name not in labels, f"label {name} twice in {s!r}"
        labels[name] = "".join(value)
        if s[i] == ",":
            i += 1
        else:
            assert s[i] == "}", f"expected , or }} at {s[i:]!r}"


class Metrics:
    """Prometheus text format 0.0.4, read strictly: every sample under a
    TYPE line of its family, no series twice, values as floats."""

    def __init__(self, text):
        self.types, self.helps, self.samples = {}, {}, []
        seen = set()
        assert text.endswith("\n"), "the exposition does not end with a newline"
        for line in text.split("\n")[:-1]:
            if line.startswith("# HELP ") or line.startswith("# TYPE "):
                _, what, name, rest = line.split(" ", 3)
                table = self.helps if what == "HELP" else self.types
                assert name not in table, f"{what} for {name} twice"
                if what == "TYPE":
                    assert rest in ("counter", "gauge", "histogram", "summary", "untyped"), line
                    own = {name, name + "_bucket", name + "_sum", name + "_count"}
                    assert not any(s[0] in own for s in self.samples), f"TYPE of {name} after its samples"
                table[name] = rest
                continue
            if not line or line.startswith("#"):
                continue
            m = METRIC_NAME.match(line)
            assert m, f"bad sample line {line!r}"
            name, i = m.group(0), m.end()
            labels = {}
            if line[i] == "{":
                labels, i = parse_labels(line, i)
            assert line[i] == " ", f"bad sample line {line!r}"
            value = line[i + 1:].split(" ")[0]
            key = (name, tuple(sorted(labels.items())))
            assert key not in seen, f"series twice: {line!r}"
            seen.add(key)
            fam = self.family(name)
            assert fam in self.types, f"{line!r}: no TYPE line for its family"
            self.samples.append((name, labels, float(value)))

    def family(self, name):
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[: -len(suffix)]
            if name.endswith(suffix) and self.types.get(base) == "histogram":
                return base
        return name

    def get(self, name, **labels):
        """The value of the one series of `name` with these labels (among
        others); fails when there is none or more than one."""
        got = [v for n, ls, v in self.samples
               if n == name and all(ls.get(k) == str(w) for k, w in labels.items())]
        assert len(got) == 1, f"{name}{labels}: {len(got)} series; all of {name}: {self.series(name)}"
        return got[0]

    def series(self, name):
        return [(ls, v) for n, ls, v in self.samples if n == name]

    def histograms(self):
        """family -> {labels without le: (buckets [(le, count)], sum, count)}"""
        out = {}
        for fam, kind in self.types.items():
            if kind != "histogram":
                continue
            hs = {}
            for n, ls, v in self.samples:
                if n not in (fam + "_bucket", fam + "_sum", fam + "_count"):
                    continue
                key = tuple(sorted((k, w) for k, w in ls.items() if k != "le"))
                h = hs.setdefault(key, {"buckets": [], "sum": None, "count": None})
                if n.endswith("_bucket"):
                    h["buckets"].append((float(ls["le"]), v))
                else:
                    h[n[len(fam) + 1:]] = v
            out[fam] = hs
        return out


def check_histogram(name, key, h):
    where = f"{name}{dict(key)}"
    assert h["count"] is not None and h["sum"] is not None, f"{where}: _sum or _count missing"
    les = [le for le, _ in h["buckets"]]
    assert les and les[-1] == math.inf, f"{where}: no +Inf bucket: {les}"
    assert les == sorted(les) and len(set(les)) == len(les), f"{where}: bounds not ascending: {les}"
    counts = [c for _, c in h["buckets"]]
    assert all(a <= b for a, b in zip(counts, counts[1:])), f"{where}: buckets not cumulative: {h['buckets']}"
    assert counts[-1] == h["count"], f"{where}: +Inf bucket {counts[-1]} != _count {h['count']}"
    assert h["sum"] >= 0 and all(c == int(c) for c in counts), f"{where}: {h}"


# --- tests: health, errors, tokens --------------------------------------------


def test_health_ready_and_http_errors(muster):
    """/healthz is 200 "ok"; /readyz becomes 200 starting with "ok" once the
    caches are synced; HEAD gets the headers without a body; an unknown path
    is 404; POST, PUT and DELETE are 405; /metrics is Prometheus text 0.0.4
    and the documents are JSON; ?limit= caps the lists."""
    url = muster.debug_url()
    r = http(url + "/healthz")
    assert (r.status, r.text.strip()) == (200, "ok"), r
    ready = until(muster, "/readyz 200", lambda: (lambda r: r if r.status == 200 else Not(repr(r)))(http(url + "/readyz")))
    assert ready.text.startswith("ok"), ready
    head = http(url + "/healthz", method="HEAD")
    assert head.status == 200 and head.body == b"", head
    for path in ("/nope", "/debug/nope", "/healthzz", "/debug/queues/x"):
        r = http(url + path)
        assert r.status == 404, f"GET {path}: {r!r}"
    for method in ("POST", "PUT", "DELETE"):
        for path in ("/healthz", "/debug/queues"):
            r = http(url + path, method=method, data=b"" if method != "DELETE" else None)
            assert r.status == 405, f"{method} {path}: {r!r}"
    m = http(url + "/metrics")
    assert m.status == 200, m
    ctype = m.headers.get("Content-Type", "")
    assert ctype.startswith("text/plain") and "version=0.0.4" in ctype, ctype
    Metrics(m.text)
    nodes = get_doc(muster, "/debug/nodes?limit=3")
    assert nodes["returned"] == len(nodes["nodes"]) == min(3, nodes["total"]), {k: nodes[k] for k in ("total", "returned")}
    page = http(url + "/debug/")
    assert page.status == 200 and page.headers.get("Content-Type", "").startswith("text/html"), page


def write_token(tmp_path, token):
    path = tmp_path / "token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    return str(path)


def test_token_guards_everything_but_health(cluster, tmp_path):
    """With --debug-token-file, /debug/queues and /metrics want
    "Authorization: Bearer TOKEN": 401 without it or with another token,
    200 with it; /healthz and /readyz answer without. This Muster takes the
    pods of scheduler "muster-token" (there are none), so it never competes
    with another test's Muster."""
    token = uuid.uuid4().hex
    m = start_muster(cluster, "token", "--scheduler-name", "muster-token",
                     "--debug-token-file", write_token(tmp_path, token))
    try:
        url = m.debug_url()
        good = {"Authorization": "Bearer " + token}

        def queues_with_token():
            r = http(url + "/debug/queues", headers=good)
            return r if r.status == 200 else Not(repr(r))

        r = until(m, "/debug/queues with the token 200", queues_with_token)
        assert r.json()["root"]["kind"] == "cohort", r
        for path in ("/debug/queues", "/debug/gangs", "/debug/nodes", "/metrics"):
            assert http(url + path).status == 401, f"GET {path} without a token: {http(url + path)!r}"
            bad = http(url + path, headers={"Authorization": "Bearer " + token[:-1] + "x"})
            assert bad.status == 401, f"GET {path} with another token: {bad!r}"
            basic = http(url + path, headers={"Authorization": "Basic " + token})
            assert basic.status == 401, f"GET {path} with Basic: {basic!r}"
            assert http(url + path, headers=good).status == 200, f"GET {path} with the token"
        r = http(url + "/healthz")
        assert (r.status, r.text.strip()) == (200, "ok"), r
        r = http(url + "/readyz")
        assert r.status == 200 and r.text.startswith("ok"), r
    finally:
        stop_muster(m)


def refused(cluster, name, *flags, timeout=30):
    """Start Muster with flags it must refuse: it exits non-zero within
    `timeout`; returns its output."""
    m = start_muster(cluster, name, "--scheduler-name", "muster-" + name, *flags)
    try:
        m.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        m.stop()
        pytest.fail(f"muster {' '.join(flags)} still runs after {timeout}s; {m.log}:\n{m.tail()}")
    with open(m.log, errors="replace") as f:
        out = f.read()
    assert m.proc.returncode != 0, f"muster {' '.join(flags)} exited 0:\n{out}"
    return out


def test_public_address_needs_tls_and_token(cluster, tmp_path):
    """--debug-addr 0.0.0.0:0 without TLS and token, or with a token but no
    TLS, makes Muster exit non-zero and say that such an address needs TLS
    and a token; so does an unreadable token file on loopback."""
    out = refused(cluster, "public", "--debug-addr", "0.0.0.0:0")
    assert "0.0.0.0" in out and re.search(r"TLS|tls", out) and "token" in out, \
        f"no reason given for refusing 0.0.0.0:\n{out}"
    out = refused(cluster, "public-token", "--debug-addr", "0.0.0.0:0",
                  "--debug-token-file", write_token(tmp_path, uuid.uuid4().hex))
    assert re.search(r"TLS|tls", out), f"no reason given for refusing 0.0.0.0 without TLS:\n{out}"
    missing = str(tmp_path / "no-such-token")
    out = refused(cluster, "no-token-file", "--debug-token-file", missing)
    assert "no-such-token" in out, f"the unreadable token file is not named:\n{out}"


def test_tls_and_token_serve_beyond_loopback(cluster, tmp_path):
    """--debug-addr 0.0.0.0:0 with a certificate, its key and a token file:
    HTTPS that a client trusting the certificate reads (/healthz without
    the token, /debug/queues only with it), nothing over plain HTTP, and
    `muster status` reads it given --cacert and --token-file (and fails
    without either). This Muster takes scheduler "muster-tls" (no pods)."""
    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=muster-debug-test",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    token = uuid.uuid4().hex
    token_file = write_token(tmp_path, token)
    m = start_muster(cluster, "tls", "--scheduler-name", "muster-tls", "--debug-addr", "0.0.0.0:0",
                     "--debug-tls-cert", cert, "--debug-tls-key", key, "--debug-token-file", token_file)
    try:
        url = m.debug_url().replace("http://", "https://")
        ctx = ssl.create_default_context(cafile=cert)
        r = until(m, "/healthz over HTTPS", lambda: http(url + "/healthz", context=ctx))
        assert (r.status, r.text.strip()) == (200, "ok"), r
        good = {"Authorization": "Bearer " + token}
        r = until(m, "/debug/queues with the token 200",
                  lambda: (lambda r: r if r.status == 200 else Not(repr(r)))(
                      http(url + "/debug/queues", headers=good, context=ctx)))
        assert r.json()["root"]["kind"] == "cohort", r
        assert http(url + "/debug/queues", context=ctx).status == 401
        try:
            plain = http(m.debug_url() + "/healthz", timeout=5)
        except (OSError, http_client.HTTPException) as e:
            plain = e
        assert not (isinstance(plain, Reply) and plain.status == 200), f"plain HTTP answered: {plain!r}"

        r = run_cli("status", "--addr", url, "--cacert", cert, "--token-file", token_file)
        assert r.returncode == 0 and SMALL in r.stdout, r
        r = run_cli("status", "--addr", url, "--cacert", cert)
        assert r.returncode == 1, f"status without the token: {r}"
        r = run_cli("status", "--addr", url, "--token-file", token_file)
        assert r.returncode == 1, f"status without trusting the certificate: {r}"
        m.check()
    finally:
        stop_muster(m)


# --- the scenario ---------------------------------------------------------------


class Scenario:
    pass


@pytest.fixture(scope="module")
def scenario(cluster, core, custom):
    """The gangs of the module docstring in a fresh namespace, with one
    Muster, once A and F are bound and B, C, D and E each say why they
    wait. Afterwards the pods are deleted (grace period 0) and waited for,
    then the namespace; Muster must exit 0 on SIGTERM."""
    ns = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    m = start_muster(cluster, "test_debug_scenario")
    try:
        s = Scenario()
        s.ns, s.muster = ns, m
        until(m, "/readyz 200", lambda: http(m.debug_url() + "/readyz").status == 200)
        s.a = create_gang(core, custom, ns, "a", 1, 8, queue=SMALL, node_selector={HOST: NODE_A})
        s.f = create_gang(core, custom, ns, "f", 3, 2, node_selector={HOST: NODE_F})
        until(m, "A and F bound", lambda: all_bound(core, ns, s.a + s.f))
        s.b = create_gang(core, custom, ns, "b", 1, 8, queue=SMALL)
        # E is submitted after B by the clock of creationTimestamp (whole
        # seconds), so the queue's order (priority, then submission) is
        # decided: B first.
        b_created = pods_of(core, ns, s.b)[0].metadata.creation_timestamp
        wait_for("a new second after B's creation",
                 lambda: datetime.now(timezone.utc) >= b_created + timedelta(seconds=1.05))
        s.e = ["e"]
        core.create_namespaced_pod(ns, pod("e", 1, queue=SMALL))
        s.c = create_gang(core, custom, ns, "c", 3, 1, min_member=4, dialect=VOLCANO)
        term = {"matchExpressions": [{"key": HOST, "operator": "In", "values": list(NODES_D)}]}
        s.d = create_gang(core, custom, ns, "d", 3, 8, affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}})
        s.msgs = {}
        for gang, names, mentions in (("b", s.b, f"queue {SMALL} at 8/8 {GPU}; the gang needs 8 more"),
                                      ("e", s.e, f"queue {SMALL} at 8/8 {GPU}; the gang needs 1 more"),
                                      ("c", s.c, "3 of 4 members exist"),
                                      ("d", s.d, "2 of 3 members fit")):
            s.msgs[gang] = until(m, f"gang {gang} waiting with {mentions!r}",
                                 lambda: waiting_with(core, ns, names, mentions))
        yield s
    finally:
        try:
            stop_muster(m)
        finally:
            core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
            wait_for("the scenario's pods deleted", lambda: not core.list_namespaced_pod(ns).items)
            core.delete_namespace(ns)


def listed(doc):
    return {(g["namespace"], g["name"]): g for g in doc["gangs"]}


def test_gangs_lists_the_waiting_gangs_with_their_reasons(scenario, core, custom):
    """/debug/gangs lists exactly the gangs of the cluster with a member not
    bound (B, C, D, E here; A and F are bound, their pods have nodes), each
    with its kind, queue, state and reason, the message its pods carry in
    PodScheduled, minMember, members, requests summed from its pods, its
    creation time; positions run 1..n in list order and each queue's
    positions 1..k in the same order; B, created before E, is ahead of it
    in e2e-small. ?queue= and ?limit= filter and cap."""
    s, ns = scenario, scenario.ns
    assert all(p.spec.node_name for p in pods_of(core, ns, s.a + s.f))

    def consistent():
        doc = get_doc(s.muster, "/debug/gangs")
        cl = Cluster(core, custom)
        got, want = set(listed(doc)), cl.waiting_gangs()
        if got != want:
            return Not(f"listed {sorted(got)}, the cluster's waiting gangs {sorted(want)}")
        for gang, names in (("b", s.b), ("c", s.c), ("d", s.d), ("e", s.e)):
            msgs = {condition(p).message for p in pods_of(core, ns, names)}
            if msgs != {listed(doc)[(ns, gang)]["message"]}:
                return Not(f"{gang}: message {listed(doc)[(ns, gang)]['message']!r}, its pods say {msgs}")
        # The forecast runs every 10 s: gangs newer than the last have none.
        if any(listed(doc)[(ns, gang)]["expectedStartFrom"] is None for gang in "bde"):
            return Not(f"not forecast yet: {[listed(doc)[(ns, g)] for g in 'bde']}")
        return doc, cl

    doc, cl = until(s.muster, "/debug/gangs agreeing with the cluster", consistent, timeout=30)
    gangs = listed(doc)
    assert (ns, "a") not in gangs and (ns, "f") not in gangs
    assert doc["total"] == doc["returned"] == len(doc["gangs"]), {k: doc[k] for k in ("total", "returned")}

    want = {
        "b": dict(kind="PodGroup", queue=SMALL, state="Waiting", reason="Quota", minMember=1, members=1,
                  requests={GPU: 8}),
        "e": dict(kind="Pod", queue=SMALL, state="Waiting", reason="Quota", minMember=1, members=1,
                  requests={GPU: 1}),
        "c": dict(kind="VolcanoPodGroup", queue=DEFAULT, state="Incomplete", reason="WaitingForMembers",
                  minMember=4, members=3, requests={GPU: 3}),
        "d": dict(kind="PodGroup", queue=DEFAULT, state="Waiting", reason="Fit", minMember=3, members=3,
                  requests={GPU: 24}),
    }
    for gang, fields in want.items():
        g = gangs[(ns, gang)]
        names = {"b": s.b, "c": s.c, "d": s.d, "e": s.e}[gang]
        # The queue the cluster's objects name, as config/README.md says.
        assert cl.queue_of(pods_of(core, ns, names)[0]) == fields["queue"]
        got = {k: g.get(k) for k in fields}
        assert got == fields, f"{gang}: {got} != {fields}; whole entry {g}"
        assert (g["bound"], g["pendingMembers"], g["priority"]) == (0, len(names), 0), g
        assert g["message"].startswith(f"gang {ns}/{gang}: "), g
        # created: between the gang's first object and its last pod.
        objs = [p.metadata.creation_timestamp for p in pods_of(core, ns, names)]
        if gang != "e":
            dialect = VOLCANO if gang == "c" else SP
            objs.append(custom.get_namespaced_custom_object(*dialect, ns, "podgroups", gang)["metadata"]
                        ["creationTimestamp"])
        stamps = [o if isinstance(o, datetime) else rfc3339(o) for o in objs]
        assert min(stamps) <= rfc3339(g["created"]) <= max(stamps), (g["created"], stamps)
        assert g["waitingSeconds"] == (rfc3339(doc["time"]) - rfc3339(g["created"])).total_seconds(), g
        assert g["reservation"] is None or all(isinstance(n, str) for n in g["reservation"]["nodes"]), g
        assert g["expectedStart"] is None or g["expectedStart"] == "unknown" or rfc3339(g["expectedStart"]), g
        # Where the start comes from: the gang's reservation, or the
        # forecast, whose words its message then ends with.
        frm = g["expectedStartFrom"]
        assert (frm is None) == (g["expectedStart"] is None), g
        assert frm in (None, "forecast", "reservation") and (frm == "reservation") == (g["reservation"] is not None), g
        if frm == "forecast":
            assert g["message"].endswith(f"; expected start {g['expectedStart']} (forecast)"), g
    # Waiting for members is not forecast; waiting for quota or room is.
    assert gangs[(ns, "c")]["expectedStartFrom"] is None, gangs[(ns, "c")]
    assert {gangs[(ns, k)]["expectedStartFrom"] for k in "bde"} <= {"forecast", "reservation"}, gangs
    f = doc["forecast"]
    assert f is not None and rfc3339(f["at"]) <= rfc3339(doc["time"]), f
    assert rfc3339(f["lookedUntil"]) >= rfc3339(f["at"]) and f["complete"] in (True, False), f
    assert "3 of 4 members exist (minMember 4)" in gangs[(ns, "c")]["message"]
    assert "2 of 3 members fit" in gangs[(ns, "d")]["message"]

    assert [g["position"] for g in doc["gangs"]] == list(range(1, len(doc["gangs"]) + 1))
    per_queue = {}
    for g in doc["gangs"]:
        per_queue.setdefault(g["queue"], []).append(g["queuePosition"])
    for q, positions in per_queue.items():
        assert positions == list(range(1, len(positions) + 1)), f"queue {q}: queue positions {positions}"
    assert gangs[(ns, "b")]["queuePosition"] < gangs[(ns, "e")]["queuePosition"], "e (newer) ahead of b"

    small = get_doc(s.muster, f"/debug/gangs?queue={SMALL}")
    assert [(g["namespace"], g["name"]) for g in small["gangs"]] == \
        [(g["namespace"], g["name"]) for g in doc["gangs"] if g["queue"] == SMALL]
    assert small["total"] == len(small["gangs"]) == 2, small
    one = get_doc(s.muster, "/debug/gangs?limit=1")
    assert (one["returned"], len(one["gangs"]), one["total"]) == (1, 1, doc["total"]), one
    assert one["gangs"][0]["position"] == 1, one


def test_gang_explained(scenario, core, custom):
    """/debug/gangs/NS/NAME: B is held by the quota of queue e2e-small
    (usage 8 as the cluster's bound pods in it, limit 8 = nominal +
    borrowingLimit 0, need 8), E the same with need 1 (a single pod, found
    by its pod's name); D by fit (2 of its 3 members placed, the other
    nodes rejected by its affinity); C by members (3 of minMember 4). Each
    has sentences in explain and wouldAdmit, and its pending pods. A bound
    gang and one that does not exist are 404 with a JSON error."""
    s, ns = scenario, scenario.ns
    cl = Cluster(core, custom)
    usage = cl.queue_usage(SMALL)
    assert usage == 8, f"the cluster's bound GPUs in {SMALL}: {usage}"
    nominal = config_queues()[SMALL]["quota"][GPU]
    limit = nominal["nominal"] + nominal.get("borrowingLimit", 0)

    for gang, need in (("b", 8), ("e", 1)):
        doc = get_doc(s.muster, f"/debug/gangs/{ns}/{gang}")
        assert doc["gang"]["name"] == gang and doc["gang"]["namespace"] == ns, doc["gang"]
        by = doc["blockedBy"]
        want = {"constraint": "quota", "level": "queue", "at": SMALL, "resource": GPU,
                "usage": usage, "limit": limit, "need": need}
        assert {k: by.get(k) for k in want} == want, by
        assert doc["explain"] and all(isinstance(x, str) and x for x in doc["explain"]), doc
        assert any(SMALL in x for x in doc["explain"]), doc["explain"]
        assert doc["wouldAdmit"] and all(isinstance(x, str) and x for x in doc["wouldAdmit"]), doc
        names = s.b if gang == "b" else s.e
        assert doc["pods"] == [{"name": n, "node": None, "phase": "Pending"} for n in names], doc["pods"]

    doc = get_doc(s.muster, f"/debug/gangs/{ns}/d")
    by = doc["blockedBy"]
    assert (by["constraint"], by["placed"], by["members"], by["resource"]) == ("fit", 2, 3, GPU), by
    assert by["nodes"] == len(cl.nodes), by
    others = [n.metadata.name for n in cl.nodes if n.metadata.name not in NODES_D]
    assert by["rejected"] == {"selector": len(others)}, f"rejected {by['rejected']}; off D's affinity: {len(others)}"
    assert doc["explain"] and doc["wouldAdmit"], doc
    assert sorted(p["name"] for p in doc["pods"]) == sorted(s.d), doc["pods"]

    doc = get_doc(s.muster, f"/debug/gangs/{ns}/c")
    by = doc["blockedBy"]
    assert (by["constraint"], by["have"], by["minMember"]) == ("members", 3, 4), by
    assert doc["explain"] and doc["wouldAdmit"], doc

    url = s.muster.debug_url()
    for path in (f"/debug/gangs/{ns}/a", f"/debug/gangs/{ns}/no-such-gang", "/debug/gangs/no-such-ns/b"):
        r = http(url + path)
        assert r.status == 404, f"GET {path}: {r!r}"
        assert r.headers.get("Content-Type", "").startswith("application/json") and r.json().get("error"), r


def walk(q, parent=None):
    yield q, parent
    for c in q.get("children") or []:
        yield from walk(c, q)


def test_queues_match_the_cluster(scenario, core, custom):
    """/debug/queues: the tree of scheduler-config.yaml (every queue once,
    the cohort's queues under it); each queue's nominal, borrowingLimit and
    lendingLimit as configured; each queue's nvidia.com/gpu usage equal to
    the GPUs of the cluster's bound, unfinished pods in it; a cohort's and
    the root's usage the sum of their children's; borrowed = usage above
    nominal; fairShare 0 for a queue within its quota (all of them here);
    e2e-small pending 2 (B, E) and admitted 1 (A), as counted
    from the cluster, and e2e-default at least C and D pending and F
    admitted."""
    s = scenario
    queues = config_queues()

    def agree():
        doc = get_doc(s.muster, "/debug/queues")
        cl = Cluster(core, custom)
        leaves = {q["name"]: q for q, _ in walk(doc["root"]) if q["kind"] == "queue"}
        got = {n: q["resources"][GPU]["usage"] for n, q in leaves.items()}
        want = {n: cl.queue_usage(n) for n in queues}
        return (doc, cl) if got == want else Not(f"usage {got}, the cluster's {want}")

    doc, cl = until(s.muster, "queue usage equal to the cluster's", agree, timeout=30)
    assert GPU in doc["resources"], doc["resources"]
    root = doc["root"]
    assert (root["name"], root["kind"]) == ("", "cohort"), root
    nodes = list(walk(root))
    leaves = [q for q, _ in nodes if q["kind"] == "queue"]
    assert sorted(q["name"] for q in leaves) == sorted(queues), [q["name"] for q in leaves]
    cohorts = {c["name"]: {q["name"] for q in c["queues"]} for c in config().get("cohorts") or []}
    for q, parent in nodes:
        if q["kind"] == "queue":
            assert q["children"] == [], q
            want_parent = next((c for c, members in cohorts.items() if q["name"] in members), "")
            assert parent["name"] == want_parent, f"{q['name']} under {parent['name']!r}"
            quota = queues[q["name"]]["quota"][GPU]
            r = q["resources"][GPU]
            assert r["nominal"] == quota["nominal"], (q["name"], r)
            assert r["borrowingLimit"] == quota.get("borrowingLimit"), (q["name"], r)
            assert r["lendingLimit"] == quota.get("lendingLimit"), (q["name"], r)
            assert r["borrowed"] == max(0, r["usage"] - r["nominal"]), (q["name"], r)
            assert q["pending"] >= 0 and q["admitted"] >= 0 and q["fairShare"] >= 0, q
            # fairShare: what it uses beyond its nominal, over its parent's
            # pool, per weight; 0 within quota (e2e-small at 8 of 8 too).
            if r["usage"] <= quota["nominal"]:
                assert q["fairShare"] == 0, (q["name"], q["fairShare"], r)
        else:
            usage = q["resources"][GPU]["usage"]
            assert usage == sum(c["resources"][GPU]["usage"] for c in q["children"]), (q["name"], usage)
            assert q["pending"] == sum(c["pending"] for c in q["children"]), q["name"]
            assert q["admitted"] == sum(c["admitted"] for c in q["children"]), q["name"]
    small = next(q for q in leaves if q["name"] == SMALL)
    assert small["resources"][GPU]["usage"] == 8
    assert (small["admitted"], small["pending"]) == cl.queue_gangs(SMALL) == (1, 2), \
        f"{SMALL}: admitted/pending {small['admitted']}/{small['pending']}, cluster {cl.queue_gangs(SMALL)}"
    default = next(q for q in leaves if q["name"] == DEFAULT)
    assert default["pending"] >= 2 and default["admitted"] >= 1, default
    assert (default["admitted"], default["pending"]) == cl.queue_gangs(DEFAULT), \
        f"{DEFAULT}: admitted/pending {default['admitted']}/{default['pending']}, cluster {cl.queue_gangs(DEFAULT)}"


def test_nodes_match_the_cluster(scenario, core, custom):
    """/debug/nodes has every node of the cluster once, with ready and
    schedulable as the Node says, allocatable equal to
    status.allocatable (cpu in cores, memory in bytes, pods, GPUs), used
    cpu, memory and GPUs equal to the requests of the unfinished pods bound
    there (A's 8 GPUs on gpu-0009, F's 6 on gpu-0012), and the node's
    labels of the configured topology levels. A node a gang reserves
    names it in reservedFor, and the gang lists the node."""
    s = scenario
    levels = config()["topology"]["levels"]

    def agree():
        doc = get_doc(s.muster, "/debug/nodes")
        cl = Cluster(core, custom)
        got = {n["name"]: n.get("used", {}).get(GPU, 0) for n in doc["nodes"]}
        want = {n.metadata.name: cl.node_used(n.metadata.name).get(GPU, 0) for n in cl.nodes}
        return (doc, cl) if got == want else Not(f"used GPUs {got}, the cluster's {want}")

    doc, cl = until(s.muster, "used GPUs per node equal to the cluster's", agree, timeout=30)
    assert doc["total"] == doc["returned"] == len(doc["nodes"]) == len(cl.nodes), \
        {k: doc[k] for k in ("total", "returned")}
    got = {n["name"]: n for n in doc["nodes"]}
    assert len(got) == len(doc["nodes"]), "a node listed twice"
    for node in cl.nodes:
        name = node.metadata.name
        n = got[name]
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        assert (n["ready"], n["schedulable"]) == (ready, not node.spec.unschedulable), (name, n)
        alloc = {r: amount(q) for r, q in node.status.allocatable.items()}
        for r in ("cpu", "memory", "pods") + ((GPU,) if alloc.get(GPU) else ()):
            assert r in n["allocatable"], f"{name}: no allocatable {r}: {n['allocatable']}"
        for r, v in n["allocatable"].items():
            assert v == alloc.get(r), f"{name}: allocatable {r} {v}, the Node says {alloc.get(r)}"
        used = cl.node_used(name)
        for r in ("cpu", "memory", GPU):
            assert math.isclose(n["used"].get(r, 0), used.get(r, 0), abs_tol=1e-9), \
                f"{name}: used {r} {n['used'].get(r, 0)}, its pods request {used.get(r, 0)}"
        labels = node.metadata.labels or {}
        assert n["topology"] == {k: labels[k] for k in levels if k in labels}, (name, n["topology"])
    assert got[NODE_A]["used"][GPU] == 8 and got[NODE_F]["used"][GPU] == 6

    gangs = get_doc(s.muster, "/debug/gangs")["gangs"]
    reserved = {f"{g['namespace']}/{g['name']}": set(g["reservation"]["nodes"]) for g in gangs if g["reservation"]}
    for n in doc["nodes"]:
        for g in n["reservedFor"]:
            assert g in reserved and n["name"] in reserved[g], f"{n['name']} reserved for {g}; gangs say {reserved}"


def test_metrics_match_the_cluster(scenario, core, custom):
    """/metrics: every family of DEBUG.md, each series under its TYPE; queue
    series labelled queue and kind, e2e-small's pending gangs 2 and usage
    8 (the cluster's bound GPUs there) and nominal 8, the cohort
    e2e-reclaim present with kind="cohort"; binds at least the 4 pods this
    Muster bound (A, F), POST 201 at least that; no eviction or preemption
    (no pod has DisruptionTarget); cycles counted, at least the cycle
    /debug/queues reported; histograms cumulative with +Inf = _count; A's
    and F's admissions observed with waits in seconds; ready and leader 1."""
    s = scenario
    before = get_doc(s.muster, "/debug/queues")["cycle"]

    def scrape():
        r = http(s.muster.debug_url() + "/metrics")
        assert r.status == 200, r
        m = Metrics(r.text)
        cl = Cluster(core, custom)
        usage = m.get("muster_queue_usage", queue=SMALL, kind="queue", resource=GPU)
        return (m, cl) if usage == cl.queue_usage(SMALL) else Not(f"usage {usage}, cluster {cl.queue_usage(SMALL)}")

    m, cl = until(s.muster, "muster_queue_usage of e2e-small equal to the cluster's", scrape, timeout=30)
    families = {
        "muster_queue_pending_gangs": "gauge", "muster_queue_admitted_gangs": "gauge",
        "muster_queue_usage": "gauge", "muster_queue_nominal": "gauge", "muster_queue_borrowed": "gauge",
        "muster_queue_fair_share": "gauge", "muster_cycle_duration_seconds": "histogram",
        "muster_admission_wait_seconds": "histogram", "muster_binds_total": "counter",
        "muster_bind_failures_total": "counter", "muster_evictions_total": "counter",
        "muster_preemptions_total": "counter", "muster_cycles_total": "counter",
        "muster_events_dropped_total": "counter", "muster_bind_retries_total": "counter",
        "muster_write_errors_total": "counter",
        "muster_api_requests_total": "counter", "muster_api_request_duration_seconds": "histogram",
        "muster_leader": "gauge", "muster_ready": "gauge",
        "muster_loop_stall_seconds": "histogram", "muster_loop_stall_max_seconds": "gauge",
        "muster_cache_held_changes_total": "counter", "muster_cache_hold_relists_total": "counter",
        "muster_plan_pods_read_total": "counter", "muster_plan_pod_table_rebuilds_total": "counter",
    }
    assert {f: m.types.get(f) for f in families} == families
    assert set(m.helps) >= set(families)
    # No cycle here runs long enough for its changes to outgrow the hold.
    assert m.get("muster_cache_hold_relists_total") == 0
    for name, labels, _ in m.samples:
        if name.startswith("muster_queue_"):
            assert labels.get("kind") in ("queue", "cohort") and labels.get("queue"), (name, labels)
    queues = config_queues()
    assert {ls["queue"] for ls, _ in m.series("muster_queue_pending_gangs") if ls["kind"] == "queue"} == set(queues)
    for c in config().get("cohorts") or []:
        m.get("muster_queue_pending_gangs", queue=c["name"], kind="cohort")

    assert m.get("muster_queue_pending_gangs", queue=SMALL, kind="queue") == cl.queue_gangs(SMALL)[1] == 2
    assert m.get("muster_queue_admitted_gangs", queue=SMALL, kind="queue") == cl.queue_gangs(SMALL)[0] == 1
    assert m.get("muster_queue_nominal", queue=SMALL, kind="queue", resource=GPU) == 8
    assert m.get("muster_queue_borrowed", queue=SMALL, kind="queue", resource=GPU) == 0
    for q in queues:
        assert m.get("muster_queue_usage", queue=q, kind="queue", resource=GPU) == cl.queue_usage(q), q
    doc = get_doc(s.muster, "/debug/queues")
    for q, _ in walk(doc["root"]):
        if q["name"]:
            share = m.get("muster_queue_fair_share", queue=q["name"], kind=q["kind"])
            assert math.isclose(share, q["fairShare"], rel_tol=1e-5, abs_tol=1e-9), (q["name"], share, q)

    bound = len(s.a) + len(s.f)
    binds = m.get("muster_binds_total")
    assert binds >= bound, f"muster_binds_total {binds}; this Muster bound {bound} pods"
    assert m.get("muster_api_requests_total", verb="POST", code="201") >= binds
    assert m.get("muster_api_requests_total", verb="GET", code="200") >= 1
    disrupted = [p.metadata.name for p in cl.pods if condition(p, "DisruptionTarget")]
    assert m.get("muster_evictions_total") == 0 and m.get("muster_preemptions_total") == 0, disrupted
    assert m.get("muster_cycles_total") >= before > 0
    assert (m.get("muster_ready"), m.get("muster_leader")) == (1, 1)
    # The pod table is read in full once, then kept by the watch's changes;
    # every pod there is now was read into it, in full or as a change.
    rebuilds = m.get("muster_plan_pod_table_rebuilds_total")
    assert 1 <= rebuilds < m.get("muster_cycles_total"), (rebuilds, m.get("muster_cycles_total"))
    assert m.get("muster_plan_pods_read_total") >= len(cl.pods)

    hists = m.histograms()
    for fam, series in hists.items():
        assert series, f"{fam}: no series"
        for key, h in series.items():
            check_histogram(fam, key, h)
    cycle = hists["muster_cycle_duration_seconds"][()]
    assert cycle["count"] > 0 and cycle["sum"] > 0, cycle
    assert cycle["sum"] / cycle["count"] < 10, f"a mean cycle over 10 s: not in seconds? {cycle}"
    # Every loop iteration is observed (far more than cycles), and the
    # longest is the max gauge: it lies in the first bucket that holds
    # every observation, above the bound before it.
    stall = hists["muster_loop_stall_seconds"][()]
    assert stall["count"] > cycle["count"], (stall["count"], cycle["count"])
    longest = m.get("muster_loop_stall_max_seconds")
    bounds = [le for le, n in stall["buckets"] if n == stall["count"]]
    below = [le for le, n in stall["buckets"] if n < stall["count"]]
    assert 0 < longest <= min(bounds), (longest, stall)
    assert not below or longest > max(below), (longest, stall)
    wait = hists["muster_admission_wait_seconds"][()]
    assert wait["count"] >= 2, f"A and F were admitted: {wait}"
    # A and F waited seconds; anything in ms or us would land far above.
    assert dict(wait["buckets"])[60.0] >= 2, wait
    assert {dict(k)["verb"] for k in hists["muster_api_request_duration_seconds"]} >= {"GET", "POST"}
    assert hists["muster_api_request_duration_seconds"][(("verb", "POST"),)]["count"] >= binds
    # Its informers hold watches open (pods, nodes, PodGroups, ...): each
    # was a request answered 200 (client-go counts a watch when its
    # response starts, not when the stream ends).
    assert m.get("muster_api_requests_total", verb="WATCH", code="200") >= 1


def run_cli(*args, timeout=30):
    r = subprocess.run([binary(), *args], capture_output=True, text=True, timeout=timeout)
    return r


def test_status_and_explain_commands(scenario):
    """`muster status --addr URL` exits 0 and names e2e-small and the
    waiting gangs; `muster explain NS/b` names the quota of e2e-small and
    the numbers; --json prints the documents; a gang Muster does not have
    makes explain exit 1."""
    ns, url = scenario.ns, scenario.muster.debug_url()
    r = run_cli("status", "--addr", url)
    assert r.returncode == 0, r
    for word in (SMALL, DEFAULT, f"{ns}/b", f"{ns}/c", f"{ns}/d", f"{ns}/e"):
        assert word in r.stdout, f"{word!r} not in `muster status`:\n{r.stdout}"
    r = run_cli("status", "--addr", url, "--json")
    assert r.returncode == 0, r
    doc = json.loads(r.stdout)
    assert doc["queues"]["root"]["kind"] == "cohort"
    assert {(ns, g) for g in "bcde"} <= set(listed(doc["gangs"]))

    r = run_cli("explain", "--addr", url, f"{ns}/b")
    assert r.returncode == 0, r
    assert SMALL in r.stdout and re.search(r"quota", r.stdout, re.I) and "8" in r.stdout, r.stdout
    r = run_cli("explain", "--addr", url, "--json", f"{ns}/b")
    assert r.returncode == 0, r
    doc = json.loads(r.stdout)
    assert (doc["gang"]["name"], doc["blockedBy"]["constraint"], doc["blockedBy"]["at"]) == ("b", "quota", SMALL)
    r = run_cli("explain", "--addr", url, f"{ns}/no-such-gang")
    assert r.returncode == 1, r


# --- the page ------------------------------------------------------------------


def chromium():
    for name in ("chromium", "/usr/bin/chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium is not installed: scripts/deps --venv (run by test/cluster/run-tests) installs "
                "Debian's chromium package; run it, or apt-get install chromium")


def dump_dom(url, budget_ms=6000):
    """The page's DOM after `budget_ms` of virtual time in headless Chromium."""
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([chromium(), "--headless=new", "--no-sandbox", "--disable-gpu",
                            "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                            f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "<html" in r.stdout, f"chromium exited {r.returncode}:\n{r.stderr[-3000:]}"
    return r.stdout


class Element:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, dict(attrs), parent, [], []

    @property
    def classes(self):
        return (self.attrs.get("class") or "").split()

    def all_text(self):
        return "".join(self.text + [c.all_text() for c in self.children])

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()

    def find(self, pred):
        return [e for e in self.walk() if pred(e)]


class DOM(html.parser.HTMLParser):
    """A tree of the dumped DOM; what is inside <template> is left out (it
    is not shown, and the page's templates hold empty rows)."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {}, None)
        self.cur = self.root
        self.in_template = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "template":
            self.in_template += 1
        if self.in_template:
            return
        e = Element(tag, attrs, self.cur)
        self.cur.children.append(e)
        if tag not in self.VOID:
            self.cur = e

    def handle_endtag(self, tag):
        if tag == "template":
            self.in_template -= 1
            return
        if self.in_template:
            return
        e = self.cur
        while e is not self.root and e.tag != tag:
            e = e.parent
        if e is not self.root:
            self.cur = e.parent

    def handle_data(self, data):
        if not self.in_template:
            self.cur.text.append(data)


def test_page_shows_queues_and_gangs(scenario, core, custom):
    """/debug/ in headless Chromium: after its scripts ran, the page has a
    row (class "queue", data-name) for every queue and cohort of the
    configuration, e2e-small's with pending 2, admitted 1 and its GPU bar
    labelled with the cluster's usage over the nominal ("8 / 8"); a gang
    row (class "gang", data-name NS/NAME) for each waiting gang of the
    scenario; #cycle a number, #status "ok"."""
    s, ns = scenario, scenario.ns
    before = get_doc(s.muster, "/debug/queues")["cycle"]
    dom = DOM(dump_dom(s.muster.debug_url() + "/debug/"))
    by_id = {e.attrs.get("id"): e for e in dom.root.walk() if e.attrs.get("id")}
    status = by_id["status"].all_text().strip()
    assert status == "ok", f"#status says {status!r}"
    cycle = by_id["cycle"].all_text().strip()
    assert re.fullmatch(r"\d+", cycle) and int(cycle) >= before, f"#cycle shows {cycle!r} (a cycle before: {before})"

    rows = {e.attrs.get("data-name"): e for e in dom.root.find(lambda e: "queue" in e.classes)}
    want = set(config_queues()) | {c["name"] for c in config().get("cohorts") or []} | {""}
    assert set(rows) == want, f"queue rows {sorted(rows)}, the configuration's {sorted(want)}"
    for c in config().get("cohorts") or []:
        assert rows[c["name"]].attrs.get("data-kind") == "cohort", rows[c["name"]].attrs
    small = rows[SMALL]
    assert small.attrs.get("data-kind") == "queue", small.attrs
    text = " ".join(small.all_text().split())
    cl = Cluster(core, custom)
    admitted, pending = cl.queue_gangs(SMALL)
    assert f"pending {pending}" in text and f"admitted {admitted}" in text, text
    bars = small.find(lambda e: "bar" in e.classes and e.attrs.get("data-resource") == GPU)
    assert len(bars) == 1, text
    usage, nominal = cl.queue_usage(SMALL), config_queues()[SMALL]["quota"][GPU]["nominal"]
    assert f"{usage:g} / {nominal:g}" in bars[0].all_text(), bars[0].all_text()

    gang_rows = {e.attrs.get("data-name"): e for e in dom.root.find(lambda e: e.tag == "tr" and "gang" in e.classes)}
    for g in "bcde":
        assert f"{ns}/{g}" in gang_rows, f"no gang row {ns}/{g}: rows {sorted(gang_rows)}"
    assert f"{ns}/a" not in gang_rows and f"{ns}/f" not in gang_rows
    b = " ".join(gang_rows[f"{ns}/b"].all_text().split())
    assert SMALL in b and "Quota" in b, b


def test_page_asks_for_the_token(cluster, tmp_path):
    """With a token file the page itself loads without a token, and, its
    documents answering 401, shows the token form (#auth) and the 401 in
    #status. This Muster takes scheduler "muster-page" (no pods)."""
    m = start_muster(cluster, "page-token", "--scheduler-name", "muster-page",
                     "--debug-token-file", write_token(tmp_path, uuid.uuid4().hex))
    try:
        url = m.debug_url()
        until(m, "/readyz 200", lambda: http(url + "/readyz").status == 200)
        r = http(url + "/debug/")
        assert r.status == 200 and "text/html" in r.headers.get("Content-Type", ""), r
        dom = DOM(dump_dom(url + "/debug/"))
        by_id = {e.attrs.get("id"): e for e in dom.root.walk() if e.attrs.get("id")}
        assert "401" in by_id["status"].all_text(), by_id["status"].all_text()
        assert "display: block" in by_id["auth"].attrs.get("style", ""), by_id["auth"].attrs
        assert not dom.root.find(lambda e: "queue" in e.classes), "queues shown without the token"
    finally:
        stop_muster(m)
