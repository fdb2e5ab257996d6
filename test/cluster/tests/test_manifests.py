"""The deployment manifests (manifests/), the Dockerfile, and Muster running
with only the rights manifests/muster.yaml gives it.

- Every manifest passes a server-side dry run (`kubectl apply
  --dry-run=server`) on the local control plane; the CRDs are the very ones
  test/cluster installs; the example queue file in the ConfigMap passes
  `muster check-config`; the examples are gangs for Muster.
- The RBAC objects are applied for real. `kubectl auth can-i` as Muster's
  service account says yes to every API call Muster makes (kubeapi/cache.c,
  kubeapi/writes.c) and no to a list of things it must not do, and
  `kubectl auth can-i --list` shows nothing else beyond what every service
  account has.
- A Muster whose kubeconfig holds only that service account's token, run
  with the Deployment's flags (the ConfigMap's queue file, leader election,
  the debug server on every address with TLS and a token), takes and renews
  the lease, answers the probes without the token, evicts a lower-priority
  pod for a higher-priority one, schedules the example gangs of both
  dialects and the PyTorch job, and writes status and Events; its log shows
  no 403.
- The Dockerfile's runtime stage installs every Debian package whose
  libraries `build/muster` loads.

The RBAC objects live in muster-system, which nothing else in the suite
uses; the module fixture deletes them (and waits for the namespace to go)
at the end. The Deployment and Service are only dry-run: they would make
pods nobody runs here.
"""

import json
import os
import re
import shlex
import ssl
import subprocess
import urllib.error
import urllib.request
import uuid

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from conftest import TOP, Muster, Not, cluster_dir, until, wait_for

MANIFESTS = os.path.join(TOP, "manifests")
MUSTER_YAML = os.path.join(MANIFESTS, "muster.yaml")
CRDS = os.path.join(MANIFESTS, "crds")
EXAMPLES = os.path.join(MANIFESTS, "examples")
NS = "muster-system"
SA = f"system:serviceaccount:{NS}:muster"
LEASE = "muster"  # the Lease the Role lets Muster read and renew
USAGE_CONFIGMAP = "muster-fair-share"  # fair sharing's memory, the one ConfigMap it may write
SP = ("scheduling.x-k8s.io", "v1alpha1")
VOLCANO = ("scheduling.volcano.sh", "v1beta1")
SP_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_LABEL = "muster.dev/queue"
GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
BIND_TIMEOUT = 60
# Applied for real: everything but the workload (Deployment) and its Service.
REAL_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
              "ConfigMap")


def manifest_files():
    out = []
    for d in (CRDS, MANIFESTS, EXAMPLES):
        out += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith((".yaml", ".yml")))
    return out


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def rel(path):
    return os.path.relpath(path, TOP)


def kubectl(cluster, *args, stdin=None, check=True, kubeconfig=None):
    argv = [os.path.join(cluster["BIN"], "kubectl"), "--kubeconfig", kubeconfig or cluster["KUBECONFIG"], *args]
    r = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        pytest.fail(f"{shlex.join(argv[3:])} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


def queue_file_text():
    (cm,) = [d for d in load(MUSTER_YAML) if d["kind"] == "ConfigMap"]
    return cm["data"]["queues.yaml"]


def muster_binary():
    binary = os.path.join(TOP, os.environ.get("BUILD", "build"), "muster")
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is missing: run make first")
    return binary


# --- the RBAC objects, for real ------------------------------------------------


def wait_namespace_gone(core, name):
    def gone():
        try:
            core.read_namespace(name)
            return Not(f"namespace {name} still exists")
        except ApiException as e:
            if e.status == 404:
                return True
            raise

    wait_for(f"namespace {name} deleted", gone, timeout=120)


@pytest.fixture(scope="module")
def rbac(cluster, core):
    """Namespace, ServiceAccount, roles, bindings and ConfigMap of
    manifests/muster.yaml, applied; deleted again after the module."""
    wait_namespace_gone(core, NS)  # a previous run's, still terminating
    docs = [d for d in load(MUSTER_YAML) if d["kind"] in REAL_KINDS]
    assert {d["kind"] for d in docs} == set(REAL_KINDS)
    kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    yield docs
    kubectl(cluster, "delete", "--ignore-not-found", "--wait=false", "-f", "-", stdin=yaml.safe_dump_all(docs))
    wait_namespace_gone(core, NS)


# --- manifests: dry run, CRDs, queue file, examples -------------------------------


@pytest.mark.parametrize("mode", ["client-side", "server-side"])
@pytest.mark.parametrize("path", manifest_files(), ids=rel)
def test_server_side_dry_run(cluster, rbac, namespace, path, mode):
    """`kubectl apply --dry-run=server` takes every object of every file:
    schema, defaulting and admission (PodSecurity included) on the real
    server; so does `kubectl apply --server-side`, as manifests/README.md
    applies the CRDs. Examples carry no namespace and go into a test
    namespace."""
    args = ["apply", "--dry-run=server", "-f", path]
    if mode == "server-side":
        args.append("--server-side")
    if os.path.dirname(path) == EXAMPLES:
        args += ["-n", namespace]
    r = kubectl(cluster, *args)
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    assert len(lines) == len(load(path)), r.stdout + r.stderr
    assert all(line.endswith("(server dry run)") for line in lines), r.stdout
    # Warnings are fine (a server-side apply over a client-side one says
    # that it could not migrate the last-applied annotation); nothing else.
    assert all(line.startswith("Warning:") for line in r.stderr.splitlines() if line.strip()), r.stderr
    # muster-system enforces the restricted Pod Security Standard, which
    # the Deployment's pods must meet (a violation is a warning here).
    assert "PodSecurity" not in r.stderr, r.stderr


def module_dir(module, version):
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod")
    r = subprocess.run(["go", "mod", "download", "-json", f"{module}@v{version}"], capture_output=True, text=True,
                       env=env, cwd=TOP, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["Dir"]


def test_crds_are_the_ones_the_cluster_installs():
    """manifests/crds/ holds the PodGroup CRDs test/cluster/ctl installs,
    byte for byte, at the versions pinned in test/cluster/versions.env."""
    versions = {}
    with open(os.path.join(TOP, "test", "cluster", "versions.env")) as f:
        for line in f:
            key, eq, value = line.strip().partition("=")
            if eq and not key.startswith("#"):
                versions[key] = value
    upstream = [
        os.path.join(module_dir("sigs.k8s.io/scheduler-plugins", versions["SCHEDULER_PLUGINS_VERSION"]),
                     versions["SCHEDULER_PLUGINS_PODGROUP_CRD"]),
        os.path.join(module_dir("volcano.sh/volcano", versions["VOLCANO_VERSION"]), versions["VOLCANO_PODGROUP_CRD"]),
    ]
    assert sorted(os.listdir(CRDS)) == sorted(os.path.basename(p) for p in upstream)
    for src in upstream:
        with open(src, "rb") as a, open(os.path.join(CRDS, os.path.basename(src)), "rb") as b:
            assert a.read() == b.read(), f"manifests/crds/{os.path.basename(src)} differs from {src}"


def test_queue_file_is_valid(tmp_path):
    """The ConfigMap's queue file passes `muster check-config`."""
    path = tmp_path / "queues.yaml"
    path.write_text(queue_file_text())
    r = subprocess.run([muster_binary(), "check-config", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok (1 cohort, 2 queues)" in r.stdout


def test_deployment_runs_muster_as_documented():
    """Two replicas, leader election in muster-system, the queue file where
    the ConfigMap is mounted, the debug server with TLS and a token, the
    service account, and a locked-down container."""
    docs = {d["kind"]: d for d in load(MUSTER_YAML)}
    dep = docs["Deployment"]
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "muster" and "schedulerName" not in pod
    (c,) = pod["containers"]
    args = c["args"]
    assert args[0] == "run" and "--leader-elect" in args and f"--lease-namespace={NS}" in args
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["config"]["configMap"]["name"] == docs["ConfigMap"]["metadata"]["name"]
    assert f"--config={mounts['config']}/queues.yaml" in args
    assert f"--debug-tls-cert={mounts['tls']}/tls.crt" in args and f"--debug-tls-key={mounts['tls']}/tls.key" in args
    assert f"--debug-token-file={mounts['token']}/token" in args
    assert "--debug-addr=0.0.0.0:10251" in args
    # The probes on their own listener, which debug clients cannot starve.
    assert "--probe-addr=0.0.0.0:8081" in args
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"https-metrics": 10251, "probes": 8081}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c[probe]["httpGet"]
        assert (get["path"], get["port"], get["scheme"]) == (path, "probes", "HTTP")
    sc, psc = c["securityContext"], pod["securityContext"]
    assert sc["readOnlyRootFilesystem"] and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
    assert psc["runAsNonRoot"] and psc["runAsUser"] != 0 and psc["seccompProfile"]["type"] == "RuntimeDefault"
    env = {e["name"]: e for e in c["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    # Every flag exists: `muster run` parses them all before the final --help.
    r = subprocess.run([muster_binary(), *args, "--help"], capture_output=True, text=True)
    assert r.returncode == 0, f"muster {shlex.join(args)}: {r.stderr}"
    svc = docs["Service"]
    assert svc["spec"]["selector"] == dep["spec"]["template"]["metadata"]["labels"]
    assert [p["port"] for p in svc["spec"]["ports"]] == [10251]


def example_gangs():
    """(file, PodGroup, Job) for every Job of manifests/examples/; the
    PodGroup is None for a Job in Kubernetes' own dialect (spec.scheduling:
    the Job controller makes the PodGroup)."""
    out = []
    for path in sorted(os.listdir(EXAMPLES)):
        docs = load(os.path.join(EXAMPLES, path))
        groups = {(d["apiVersion"], d["metadata"]["name"]): d for d in docs if d["kind"] == "PodGroup"}
        for job in (d for d in docs if d["kind"] == "Job"):
            meta = job["spec"]["template"].get("metadata", {})
            if "scheduling" in job["spec"]:
                pg = None
            elif SP_LABEL in meta.get("labels", {}):
                pg = groups[("/".join(SP), meta["labels"][SP_LABEL])]
            else:
                pg = groups[("/".join(VOLCANO), meta["annotations"][VOLCANO_ANNOTATION])]
            out.append((path, pg, job))
    return out


def min_member(pg, job):
    """minMember of the example's PodGroup, or the native Job's minCount."""
    if pg is None:
        return job["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"]
    return pg["spec"]["minMember"]


def test_examples_are_whole_gangs_for_muster():
    """Each example Job's pods are Muster's, name a PodGroup of the same
    file in its dialect (or, natively, ask the Job controller for a gang),
    and are exactly minMember; the three dialects and an indexed PyTorch
    job are there."""
    gangs = example_gangs()
    assert {pg["apiVersion"] if pg else "native" for _, pg, _ in gangs} == \
        {"/".join(SP), "/".join(VOLCANO), "native"}
    for path, pg, job in gangs:
        spec = job["spec"]
        assert spec["template"]["spec"]["schedulerName"] == "muster", path
        assert spec["parallelism"] == spec["completions"] == min_member(pg, job), path
        assert "namespace" not in (pg or {"metadata": {}})["metadata"] and "namespace" not in job["metadata"], path
    (torch,) = [(pg, job) for _, pg, job in gangs
                if job["spec"].get("completionMode") == "Indexed" and pg is not None]
    pg, job = torch
    assert pg["spec"]["minMember"] == 4
    (c,) = job["spec"]["template"]["spec"]["containers"]
    assert c["resources"]["limits"][GPU] == "8" and "torchrun" in " ".join(c["command"])
    env = {e["name"]: e.get("value") for e in c["env"]}
    svc = job["spec"]["template"]["spec"]["subdomain"]
    assert env["MASTER_ADDR"] == f"{job['metadata']['name']}-0.{svc}"


# --- RBAC: kubectl auth can-i ----------------------------------------------------

# (verb, resource, subresource, namespace): namespace None for cluster-scoped
# resources, "*" for all namespaces (`-A`); "team-x" stands for any namespace.
ALLOWED = [
    # The cache: list and watch across all namespaces (kubeapi/cache.c).
    *[(v, r, None, ns) for v in ("list", "watch") for r, ns in (
        ("pods", "*"), ("nodes", None), ("namespaces", None),
        ("priorityclasses.scheduling.k8s.io", None), ("poddisruptionbudgets.policy", "*"),
        ("podgroups.scheduling.x-k8s.io", "*"), ("podgroups.scheduling.volcano.sh", "*"),
        ("podgroups.scheduling.k8s.io", "*"), ("workloads.scheduling.k8s.io", "*"))],
    # Writes (kubeapi/writes.c), in any namespace.
    ("create", "pods", "binding", "team-x"),
    ("create", "pods", "eviction", "team-x"),
    ("patch", "pods", "status", "team-x"),
    ("create", "events.events.k8s.io", None, "team-x"),
    ("patch", "podgroups.scheduling.x-k8s.io", "status", "team-x"),
    ("patch", "podgroups.scheduling.volcano.sh", None, "team-x"),
    ("patch", "podgroups.scheduling.k8s.io", "status", "team-x"),
    # Leader election, in muster-system only.
    ("create", "leases.coordination.k8s.io", None, NS),
    ("get", f"leases.coordination.k8s.io/{LEASE}", None, NS),
    ("update", f"leases.coordination.k8s.io/{LEASE}", None, NS),
]

DENIED = [
    # Pods: only bound, evicted and given conditions, never changed or made.
    # (The vGPU shares' patch is in manifests/muster-vgpu.yaml, with its
    # admission policy: test_pod_patch_policy.py.)
    ("patch", "pods", None, "team-x"),
    ("patch", "pods", None, "kube-system"),
    ("create", "pods", None, "team-x"),
    ("delete", "pods", None, "team-x"),
    ("deletecollection", "pods", None, "team-x"),
    ("update", "pods", None, "team-x"),
    ("get", "pods", None, "team-x"),
    ("update", "pods", "status", "team-x"),
    ("create", "pods", "exec", "team-x"),
    ("get", "pods", "log", "team-x"),
    # Secrets and other configuration.
    ("get", "secrets", None, "*"),
    ("list", "secrets", None, "*"),
    ("get", "secrets", None, NS),
    ("get", "configmaps", None, NS),
    ("create", "serviceaccounts", "token", NS),
    # Nodes, namespaces.
    ("get", "nodes", None, None),
    ("patch", "nodes", None, None),
    ("update", "nodes", None, None),
    ("delete", "nodes", None, None),
    ("patch", "nodes", "status", None),
    ("delete", "namespaces", None, None),
    # Events: events.k8s.io only, and only created.
    ("create", "events", None, "team-x"),
    ("patch", "events.events.k8s.io", None, "team-x"),
    ("delete", "events.events.k8s.io", None, "team-x"),
    # PodGroups: scheduler-plugins' only through the status subresource.
    ("patch", "podgroups.scheduling.x-k8s.io", None, "team-x"),
    ("update", "podgroups.scheduling.x-k8s.io", "status", "team-x"),
    ("create", "podgroups.scheduling.x-k8s.io", None, "team-x"),
    ("delete", "podgroups.scheduling.x-k8s.io", None, "team-x"),
    ("get", "podgroups.scheduling.x-k8s.io", None, "team-x"),
    ("create", "podgroups.scheduling.volcano.sh", None, "team-x"),
    ("update", "podgroups.scheduling.volcano.sh", None, "team-x"),
    ("delete", "podgroups.scheduling.volcano.sh", None, "team-x"),
    # Kubernetes' own PodGroups and Workloads: read, and status alone.
    ("patch", "podgroups.scheduling.k8s.io", None, "team-x"),
    ("update", "podgroups.scheduling.k8s.io", "status", "team-x"),
    ("create", "podgroups.scheduling.k8s.io", None, "team-x"),
    ("delete", "podgroups.scheduling.k8s.io", None, "team-x"),
    ("create", "workloads.scheduling.k8s.io", None, "team-x"),
    ("update", "workloads.scheduling.k8s.io", None, "team-x"),
    # Leases: Muster's own, in muster-system; never deleted or listed.
    ("delete", f"leases.coordination.k8s.io/{LEASE}", None, NS),
    ("patch", f"leases.coordination.k8s.io/{LEASE}", None, NS),
    ("list", "leases.coordination.k8s.io", None, NS),
    ("watch", "leases.coordination.k8s.io", None, NS),
    ("get", "leases.coordination.k8s.io/kube-scheduler", None, NS),
    ("update", "leases.coordination.k8s.io/other", None, NS),
    ("create", "leases.coordination.k8s.io", None, "kube-system"),
    ("get", f"leases.coordination.k8s.io/{LEASE}", None, "kube-system"),
    ("update", f"leases.coordination.k8s.io/{LEASE}", None, "kube-system"),
    ("update", "leases.coordination.k8s.io/gpu-0000", None, "kube-node-lease"),
    ("delete", "leases.coordination.k8s.io", None, "team-x"),
    # Everything else.
    ("update", "priorityclasses.scheduling.k8s.io", None, None),
    ("create", "poddisruptionbudgets.policy", None, "team-x"),
    ("delete", "poddisruptionbudgets.policy", None, "team-x"),
    ("update", "deployments.apps", None, NS),
    ("create", "jobs.batch", None, "team-x"),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", None, None),
    ("escalate", "clusterroles.rbac.authorization.k8s.io", None, None),
    ("bind", "clusterroles.rbac.authorization.k8s.io", None, None),
    ("impersonate", "users", None, None),
    ("*", "*", None, "*"),
]


def can_i(cluster, verb, resource, sub, ns, user=SA):
    args = ["auth", "can-i", verb, resource, f"--as={user}"]
    if sub:
        args.append(f"--subresource={sub}")
    if ns == "*":
        args.append("--all-namespaces")
    elif ns:
        args += ["-n", ns]
    r = kubectl(cluster, *args, check=False)
    answer = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert answer in ("yes", "no") and r.returncode == (0 if answer == "yes" else 1), (
        f"can-i {args}: exit {r.returncode}: {r.stdout}{r.stderr}")
    # A resource the server does not know would make every answer "no".
    assert "resource type" not in r.stderr, f"can-i {args}: {r.stderr}"
    return answer == "yes"


def show(check):
    verb, resource, sub, ns = check
    where = {None: "", "*": " -A"}.get(ns, f" -n {ns}")
    return f"{verb} {resource}{'/' + sub if sub else ''}{where}"


def test_can_i_every_call_muster_makes(cluster, rbac):
    denied = [show(c) for c in ALLOWED if not can_i(cluster, *c)]
    assert not denied, f"{SA} may not: {denied}"


def test_cannot_do_anything_else(cluster, rbac):
    allowed = [show(c) for c in DENIED if can_i(cluster, *c)]
    assert not allowed, f"{SA} may: {allowed}"


def rules(cluster, user, ns):
    """`kubectl auth can-i --list` as a set of (resource or URL, names, verbs)."""
    r = kubectl(cluster, "auth", "can-i", "--list", f"--as={user}", "-n", ns)
    row = re.compile(r"^(\S*)\s+\[(.*?)\]\s+\[(.*?)\]\s+\[(.*?)\]$")
    out = set()
    for line in r.stdout.splitlines()[1:]:
        m = row.match(line)
        assert m, f"unexpected line in can-i --list: {line!r}"
        resource, urls, names, verbs = m.groups()
        out.add((resource or urls, tuple(names.split()), tuple(sorted(verbs.split()))))
    return out


def expected_rules(ns):
    list_watch = ("list", "watch")
    want = {
        ("pods", (), list_watch), ("nodes", (), list_watch), ("namespaces", (), list_watch),
        ("priorityclasses.scheduling.k8s.io", (), list_watch), ("poddisruptionbudgets.policy", (), list_watch),
        ("podgroups.scheduling.x-k8s.io", (), list_watch),
        ("podgroups.scheduling.volcano.sh", (), ("list", "patch", "watch")),
        ("pods/binding", (), ("create",)), ("pods/eviction", (), ("create",)),
        ("pods/status", (), ("patch",)), ("events.events.k8s.io", (), ("create",)),
        ("podgroups.scheduling.x-k8s.io/status", (), ("patch",)),
        ("podgroups.scheduling.k8s.io", (), list_watch), ("podgroups.scheduling.k8s.io/status", (), ("patch",)),
        ("workloads.scheduling.k8s.io", (), list_watch),
    }
    if ns == NS:
        want |= {("leases.coordination.k8s.io", (), ("create",)),
                 ("leases.coordination.k8s.io", (LEASE,), ("get", "update")),
                 ("configmaps", (), ("create",)),
                 ("configmaps", (USAGE_CONFIGMAP,), ("get", "patch"))}
    return want


@pytest.mark.parametrize("ns", [NS, "team-x"])
def test_rights_are_exactly_these(cluster, rbac, ns):
    """Beyond what every service account of muster-system may do (discovery,
    self-reviews), Muster's account may do exactly the listed things: in
    muster-system also its lease, elsewhere nothing more."""
    baseline = rules(cluster, f"system:serviceaccount:{NS}:nobody-{uuid.uuid4().hex[:6]}", ns)
    got = rules(cluster, SA, ns) - baseline
    assert got == expected_rules(ns)


# --- Muster with only these rights -------------------------------------------------


def sa_kubeconfig(cluster, path):
    """A kubeconfig holding only a fresh token of muster-system/muster."""
    token = kubectl(cluster, "create", "token", "muster", "-n", NS, "--duration=1h").stdout.strip()
    assert token
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {
            "server": cluster["SERVER"], "certificate-authority": os.path.join(cluster_dir(), "pki", "ca.crt")}}],
        "users": [{"name": "muster", "user": {"token": token}}],
        "contexts": [{"name": "muster", "context": {"cluster": "local", "user": "muster"}}],
        "current-context": "muster",
    }))
    return str(path)


def with_queue(doc, queue):
    doc = dict(doc, metadata=dict(doc["metadata"]))
    doc["metadata"]["labels"] = dict(doc["metadata"].get("labels") or {}, **{QUEUE_LABEL: queue})
    return doc


def native_with_queue(job, queue):
    """A native example Job whose pods carry the queue label."""
    job = json.loads(json.dumps(job))
    meta = job["spec"]["template"].setdefault("metadata", {})
    meta["labels"] = dict(meta.get("labels") or {}, **{QUEUE_LABEL: queue})
    return job


def native_scheduled(custom, ns, job_name):
    """The True PodGroupInitiallyScheduled condition of the native PodGroup
    the Job controller made for job_name, else Not."""
    items = custom.list_namespaced_custom_object("scheduling.k8s.io", "v1beta1", ns, "podgroups")["items"]
    for pg in items:
        if any(o.get("name") == job_name and o.get("kind") == "Job" for o in pg["metadata"].get("ownerReferences") or []):
            for c in (pg.get("status") or {}).get("conditions") or []:
                if c.get("type") == "PodGroupInitiallyScheduled" and c.get("status") == "True":
                    return c
            return Not(f"{pg['metadata']['name']}: status {pg.get('status')}")
    return Not(f"no PodGroup of Job {job_name}")


def gang_pods(core, ns, pg, job):
    """Pod names of the Job, once all minMember exist and are bound, else Not."""
    sel = f"batch.kubernetes.io/job-name={job['metadata']['name']}"
    got = {p.metadata.name: p.spec.node_name for p in core.list_namespaced_pod(ns, label_selector=sel).items}
    unbound = sorted(n for n, node in got.items() if not node)
    if len(got) < min_member(pg, job) or unbound:
        return Not(f"{job['metadata']['name']}: pods {got}")
    return got


def single_pod(name, gpus, queue, node=None, priority_class=None):
    spec = {
        "schedulerName": "muster",
        "restartPolicy": "Never",
        "tolerations": [GPU_TOLERATION],
        "containers": [{"name": "main", "image": "busybox", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi", GPU: str(gpus)}, "limits": {GPU: str(gpus)}}}],
    }
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {QUEUE_LABEL: queue}},
            "spec": spec}


def bound(core, ns, name):
    p = core.read_namespaced_pod(name, ns)
    return p.spec.node_name or Not(f"{name} unbound: {p.status.conditions}")


def event_reasons(core, ns, pod):
    return {e.reason for e in core.list_namespaced_event(ns, field_selector=f"involvedObject.name={pod}").items}


def free_gpu_node(core):
    """A GPU node no pod is bound to."""
    used = {p.spec.node_name for p in core.list_pod_for_all_namespaces().items if p.spec.node_name}
    free = sorted(n.metadata.name for n in core.list_node(label_selector="muster.dev/pool=gpu").items
                  if n.metadata.name not in used)
    assert free, "no free GPU node"
    return free[-1]


def http_get(port, path):
    """(status, body) of a plain GET http://127.0.0.1:PORT/PATH."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode().strip()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode().strip()


def https_get(port, path, token=None):
    """(status, body) of GET https://127.0.0.1:PORT/PATH; the certificate
    is not checked, as the kubelet's HTTPS probes do not check it."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
            return r.status, r.read().decode().strip()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode().strip()


@pytest.fixture
def workload_ns(core, namespace):
    """The test's namespace; its Jobs and pods are deleted (grace 0) at the
    end and waited for, so their GPUs are free for the next test."""
    yield namespace
    batch = client.BatchV1Api(core.api_client)
    for j in batch.list_namespaced_job(namespace).items:
        batch.delete_namespaced_job(j.metadata.name, namespace, propagation_policy="Orphan")
    for p in core.list_namespaced_pod(namespace).items:
        try:
            core.delete_namespaced_pod(p.metadata.name, namespace, grace_period_seconds=0)
        except ApiException as e:
            if e.status != 404:
                raise
    wait_for(f"pods of {namespace} deleted", lambda: not core.list_namespaced_pod(namespace).items)


def test_muster_with_only_its_rights_schedules(cluster, rbac, core, custom, workload_ns, tmp_path):
    ns = workload_ns
    kubeconfig = sa_kubeconfig(cluster, tmp_path / "muster.kubeconfig")
    who = kubectl(cluster, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", kubeconfig=kubeconfig)
    assert who.stdout == SA
    queues = tmp_path / "queues.yaml"
    # With fair sharing's memory, written every second: the ConfigMap the
    # Role names, by server-side apply, with only these rights.
    queues.write_text("fairSharing: {halfLife: 1h}\n" + queue_file_text())

    # As the Deployment runs it: leader election on the default Lease name
    # (the one the Role names), the pod's name in HOSTNAME, the debug server
    # on every address with TLS and a token (on a port of its choosing here).
    identity = f"muster-test-{uuid.uuid4().hex[:6]}"
    token = uuid.uuid4().hex
    cert, key, token_file = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "token"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=muster-metrics.muster-system.svc", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    token_file.write_text(token + "\n")
    argv = [muster_binary(), "run", "--kubeconfig", kubeconfig, "--config", str(queues),
            "--leader-elect", "--lease-namespace", NS, "--debug-addr=0.0.0.0:0",
            f"--debug-tls-cert={cert}", f"--debug-tls-key={key}", f"--debug-token-file={token_file}",
            "--probe-addr=0.0.0.0:0", "--usage-write-period=1"]
    log = os.path.join(cluster_dir(), "logs", "muster-test_manifests.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    env = dict(os.environ, HOSTNAME=identity, POD_NAMESPACE=NS)
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env)
    muster = Muster(proc, log)
    scheduling = client.SchedulingV1Api(core.api_client)
    classes = [f"{ns}-low", f"{ns}-high"]
    try:
        # Leader election: the Lease created, then renewed (get, update).
        # The holder identity is HOSTNAME, made unique with a suffix.
        coord = client.CoordinationV1Api(core.api_client)

        def held():
            lease = coord.read_namespaced_lease(LEASE, NS)
            mine = (lease.spec.holder_identity or "").split("_")[0] == identity
            return lease if mine else Not(f"lease {lease.spec}")

        first = until(muster, "lease taken", held, timeout=60).spec.renew_time
        until(muster, "lease renewed", lambda: held().spec.renew_time > first, timeout=30)

        # The probes' view: /healthz and /readyz over HTTPS without the
        # token, and on the probe port over plain HTTP, as the kubelet asks;
        # /metrics only with the token, and never on the probe port.
        port, probes = muster.port(), muster.port("probe")
        assert until(muster, "/healthz", lambda: https_get(port, "/healthz")) == (200, "ok")
        until(muster, "/readyz says leader", lambda: https_get(port, "/readyz") == (200, "ok: leader"))
        assert http_get(probes, "/healthz") == (200, "ok")
        assert http_get(probes, "/readyz") == (200, "ok: leader")
        assert http_get(probes, "/metrics")[0] == 404
        assert https_get(port, "/metrics")[0] == 401
        status, metrics = https_get(port, "/metrics", token)
        assert status == 200 and re.search(r"^muster_leader 1$", metrics, re.M), metrics[:2000]

        # Priority preemption in team-b: an eviction and a DisruptionTarget
        # condition, with the Preempted Event.
        for name, value in zip(classes, (100, 1000)):
            scheduling.create_priority_class(client.V1PriorityClass(metadata=client.V1ObjectMeta(name=name),
                                                                    value=value))
        node = free_gpu_node(core)
        core.create_namespaced_pod(ns, single_pod("low", 8, "team-b", node, classes[0]))
        until(muster, "low-priority pod bound", lambda: bound(core, ns, "low"), BIND_TIMEOUT)
        core.create_namespaced_pod(ns, single_pod("high", 8, "team-b", node, classes[1]))
        assert until(muster, "high-priority pod bound", lambda: bound(core, ns, "high"), BIND_TIMEOUT) == node
        until(muster, "Preempted Event on the victim", lambda: "Preempted" in event_reasons(core, ns, "low"))

        # The examples, in team-a whatever the namespace: the three dialects
        # and the PyTorch job (8 + 2 + 6 + 32 GPUs: team-a's 32 and the 16 it
        # may borrow), bound whole.
        gangs = example_gangs()
        for path in sorted(os.listdir(EXAMPLES)):
            docs = [with_queue(d, "team-a") if d["kind"] == "PodGroup" else
                    native_with_queue(d, "team-a") if "scheduling" in d.get("spec", {}) else d
                    for d in load(os.path.join(EXAMPLES, path))]
            kubectl(cluster, "apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump_all(docs))
        for _, pg, job in gangs:
            until(muster, f"gang {job['metadata']['name']} bound", lambda: gang_pods(core, ns, pg, job),
                  BIND_TIMEOUT)
        # PodGroup status in the three dialects: the status subresource, the
        # Volcano object itself, and the native PodGroup's condition.
        for _, pg, job in gangs:
            if pg is None:
                until(muster, "the native PodGroup's PodGroupInitiallyScheduled",
                      lambda job=job: native_scheduled(custom, ns, job["metadata"]["name"]))
                continue
            group, version = pg["apiVersion"].split("/")

            def phase(pg=pg, group=group, version=version):
                got = custom.get_namespaced_custom_object(group, version, ns, "podgroups", pg["metadata"]["name"])
                return (got.get("status") or {}).get("phase") or Not(f"status {got.get('status')}")

            until(muster, f"status of PodGroup {pg['metadata']['name']}", phase)

        # A pod that fits no node: its PodScheduled condition and a
        # FailedScheduling Event.
        core.create_namespaced_pod(ns, single_pod("too-big", 16, "team-a"))

        def unschedulable():
            p = core.read_namespaced_pod("too-big", ns)
            c = next((c for c in p.status.conditions or [] if c.type == "PodScheduled"), None)
            return (c and c.reason == "Unschedulable") or Not(f"conditions {p.status.conditions}")

        until(muster, "too-big is Unschedulable", unschedulable)
        until(muster, "FailedScheduling Event", lambda: "FailedScheduling" in event_reasons(core, ns, "too-big"))

        # Fair sharing's memory written where the Role lets it write.
        def remembered():
            cm = core.read_namespaced_config_map(USAGE_CONFIGMAP, NS)
            doc = json.loads((cm.data or {}).get("usage.json", "{}"))
            return doc.get("nodes", {}).get("team-a") or Not(f"usage.json {cm.data}")

        until(muster, "team-a's memory in the ConfigMap", remembered, timeout=30)
        with open(log, errors="replace") as f:
            assert "fair-share memory: writing configmap" not in f.read()
        muster.check()
    finally:
        try:
            core.delete_namespaced_config_map(USAGE_CONFIGMAP, NS)
        except ApiException as e:
            if e.status != 404:
                raise
        status = muster.stop()
        for name in classes:
            try:
                scheduling.delete_priority_class(name)
            except ApiException as e:
                if e.status != 404:
                    raise
    assert status == 0, f"muster exited with {status} on SIGTERM; {log}:\n{muster.tail()}"
    with open(log, errors="replace") as f:
        text = f.read()
    forbidden = [line for line in text.splitlines() if re.search(r"\b403\b|forbidden", line, re.I)]
    assert not forbidden, "Muster was refused:\n" + "\n".join(forbidden[:20])


# --- Dockerfile --------------------------------------------------------------------


def dockerfile_stages():
    """[(base image, [instruction lines])] with continuations joined."""
    with open(os.path.join(TOP, "Dockerfile")) as f:
        text = re.sub(r"\\\n", " ", f.read())
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append((line.split()[1], []))
        elif stages:
            stages[-1][1].append(line)
    return stages


def apt_installs(lines):
    pkgs = []
    for line in lines:
        for cmd in re.split(r"&&|;", line):
            words = cmd.split()
            if "apt-get" in words and "install" in words:
                pkgs += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return pkgs


def dpkg_owner(path):
    for p in (path, os.path.realpath(path), path.replace("/lib/", "/usr/lib/", 1)):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0]
    pytest.fail(f"no Debian package holds {path}")


def depends_closure(pkgs):
    seen, todo = set(), list(pkgs)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        r = subprocess.run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", p], capture_output=True, text=True)
        if r.returncode != 0:
            continue  # not installed here: a virtual package or an alternative
        for dep in r.stdout.split(","):
            for alt in dep.split("|"):
                name = alt.strip().split(" ")[0].split(":")[0]
                if name:
                    todo.append(name)
    return seen


def test_dockerfile_runtime_has_every_library():
    """The runtime stage names the package of every library build/muster
    links directly (libc6 is in every Debian image), and every library it
    loads comes from one of those packages' dependencies. Package names are
    the build machine's: the check needs the same Debian release."""
    stages = dockerfile_stages()
    assert len(stages) >= 2, "not a multi-stage Dockerfile"
    base, lines = stages[-1]
    release = base.split(":")[1].split("-")[0]
    with open("/etc/os-release") as f:
        host = dict(line.strip().split("=", 1) for line in f if "=" in line)
    if host.get("VERSION_CODENAME") != release:
        pytest.skip(f"the runtime image is Debian {release}; this machine is {host.get('VERSION_CODENAME')}")
    binary = os.path.join(TOP, "build", "muster")  # the plain build (the image's), never a sanitized one
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is missing: run make first")
    runtime = apt_installs(lines)
    assert runtime, "the runtime stage installs nothing"

    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    paths = dict(re.findall(r"^\s*(\S+) => (/\S+)", ldd, re.M))
    needed = re.findall(r"\(NEEDED\).*\[(.+)\]",
                        subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout)
    direct = {dpkg_owner(paths[so]) for so in needed}
    missing = direct - set(runtime) - {"libc6"}
    assert not missing, f"the runtime stage lacks {sorted(missing)} (it installs {runtime})"
    closure = depends_closure(set(runtime) | {"libc6"})
    loaded = {so: dpkg_owner(p) for so, p in paths.items()}
    stray = {so: pkg for so, pkg in loaded.items() if pkg not in closure}
    assert not stray, f"libraries from packages the runtime stage does not pull in: {stray}"
    assert "ca-certificates" in runtime


def test_dockerfile_runs_unprivileged():
    """The runtime stage runs as a numeric non-root user, the entry point is
    the binary it copies from the build stage, and the build context leaves
    out build trees, local clusters and .git."""
    stages = dockerfile_stages()
    build_base, build_lines = stages[0]
    base, lines = stages[-1]
    assert base == "debian:bookworm-slim" and "bookworm" in build_base
    assert any(line.startswith("RUN") and "make" in line for line in build_lines)
    user = [line.split()[1] for line in lines if line.upper().startswith("USER ")]
    assert user and user[-1].split(":")[0].isdigit() and int(user[-1].split(":")[0]) != 0
    copies = [line.split() for line in lines if line.upper().startswith("COPY ") and "--from=" in line]
    assert copies and copies[0][-1] == "/usr/local/bin/muster"
    assert any(line == 'ENTRYPOINT ["/usr/local/bin/muster"]' for line in lines)
    with open(os.path.join(TOP, ".dockerignore")) as f:
        ignored = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    assert {".git", "build", "build-*", ".cluster", ".cluster-*"} <= ignored
