"""manifests/muster-vgpu.yaml on the real API server: the pod patch Muster
needs for vGPU shares, and the ValidatingAdmissionPolicy that limits it.

Muster's service account (muster.yaml's Namespace and ServiceAccount, with
muster-vgpu.yaml applied as it is) patches pods with a token of its own
from the TokenRequest API, as the Deployment's pods would:

- The patch Muster itself sends before a binding (kubeapi/writes.c: a
  merge patch of six volcano.sh/ annotations and metadata.uid), and the
  removal of a volcano.sh/ annotation, pass; so do pods/status and
  pods/binding, which the policy does not match.
- Everything else is refused with the policy's message, each with the
  rule it breaks: the image, a toleration, activeDeadlineSeconds, the
  scheduling gates; labels, finalizers, owner references; an annotation
  outside volcano.sh/ added, changed or removed, or a key that only looks
  like one; a vGPU patch carrying a label; the volcano.sh/ annotation of a
  pod of another scheduler, of a kube-system pod of the default scheduler,
  and of a bound pod (bound at creation, or just bound by the service
  account itself).
- The very same patches all pass once the policy's binding is deleted: it
  is the policy that refuses them, not RBAC or the pod's own validation.
- The admin's patches are not looked at; the policy type-checks without
  warnings; its scheduler names and service account are muster.yaml's.
- `muster run` with only that token and the policy enforced writes a vGPU
  pod's shares and binds it, refused nothing.

A policy takes a moment to be enforced after its binding is created (and
to stop after it is deleted): the tests poll a probe patch until it is.
The module deletes everything it applied (and waits for muster-system to
go) at the end, as test_manifests.py does.
"""

import ast
import os
import re
import subprocess
import time
import uuid

import pytest
import yaml
from kubernetes import config
from kubernetes.client.rest import ApiException

import nodes
from conftest import TOP, Muster, Not, cluster_dir, until, wait_for
from test_manifests import REAL_KINDS, kubectl, load, muster_binary, queue_file_text, sa_kubeconfig, \
    wait_namespace_gone

MUSTER_YAML = os.path.join(TOP, "manifests", "muster.yaml")
VGPU_YAML = os.path.join(TOP, "manifests", "muster-vgpu.yaml")
NS = "muster-system"
SA = f"system:serviceaccount:{NS}:muster"
POLICY = "muster-pod-patch"
DENIED_BY = f"ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}' denied request: "
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
NOTE = "example.com/note"  # an annotation outside volcano.sh/ every test pod carries

# The rule each refused patch breaks: the policy's messages.
SPEC = "Muster may not change a pod's spec"
META = "Muster may not change a pod's labels, finalizers, owner references or other metadata"
OTHER_SCHEDULER = "Muster may patch only pods of its own scheduler names muster; this pod has schedulerName "
BOUND = "Muster may patch a pod only before binding it; this pod is bound to node "
ANNOTATION = "Muster may change only volcano.sh/ annotations of a pod, not "

MERGE = "application/merge-patch+json"
JSON = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def vgpu_docs():
    return load(VGPU_YAML)


def policy_binding_doc():
    (b,) = [d for d in vgpu_docs() if d["kind"] == "ValidatingAdmissionPolicyBinding"]
    return b


@pytest.fixture(scope="module")
def installed(cluster, core):
    """muster.yaml's RBAC objects (as test_manifests.py applies them), and
    muster-vgpu.yaml but the policy's binding (the tests create and delete
    it); all deleted after the module."""
    wait_namespace_gone(core, NS)  # a previous run's, still terminating
    base = [d for d in load(MUSTER_YAML) if d["kind"] in REAL_KINDS]
    rest = [d for d in vgpu_docs() if d["kind"] != "ValidatingAdmissionPolicyBinding"]
    docs = base + rest
    kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    yield docs
    everything = base + vgpu_docs()
    kubectl(cluster, "delete", "--ignore-not-found", "--wait=false", "-f", "-",
            stdin=yaml.safe_dump_all(everything[::-1]))
    wait_namespace_gone(core, NS)


@pytest.fixture(scope="module")
def sa(cluster, installed, tmp_path_factory):
    """(API client, kubeconfig path) holding only a fresh token of
    muster-system/muster."""
    kubeconfig = sa_kubeconfig(cluster, tmp_path_factory.mktemp("sa") / "muster.kubeconfig")
    who = kubectl(cluster, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", kubeconfig=kubeconfig)
    assert who.stdout == SA
    return config.new_client_from_config(config_file=kubeconfig), kubeconfig


def patch(api, ns, name, body, ctype=MERGE, sub=None):
    """PATCH of pods/NAME (or a subresource) with this content type."""
    path = f"/api/v1/namespaces/{ns}/pods/{name}" + (f"/{sub}" if sub else "")
    return api.call_api(path, "PATCH", header_params={"Content-Type": ctype, "Accept": "application/json"},
                        body=body, auth_settings=["BearerToken"], response_type="object",
                        _return_http_data_only=True)


def refusal(api, ns, name, body, ctype=MERGE):
    """The policy's message if the patch is refused by it, None if it
    passes; any other error fails the test."""
    try:
        patch(api, ns, name, body, ctype)
        return None
    except ApiException as e:
        assert e.status == 403 and DENIED_BY in (e.body or ""), f"patch {body} of {ns}/{name}: {e.status} {e.body}"
        msg = yaml.safe_load(e.body)["message"]
        return msg.split(DENIED_BY, 1)[1]


class Pods:
    """Pods the test makes (admin), each new; deleted at the end, with any
    finalizer a patch gave them taken off first."""

    def __init__(self, core, ns, node):
        self.core, self.ns, self.node, self.made = core, ns, node, []

    def make(self, scheduler="muster", ns=None, bound=False, gated=False):
        ns = ns or self.ns
        name = f"p-{uuid.uuid4().hex[:8]}"
        spec = {"schedulerName": scheduler, "restartPolicy": "Never", "tolerations": [TOLERATION],
                "containers": [{"name": "main", "image": "busybox", "resources": {
                    "requests": {"cpu": "100m", "memory": "64Mi"}}}]}
        if bound:
            spec["nodeName"] = self.node
        if gated:
            spec["schedulingGates"] = [{"name": "example.com/wait"}]
        self.core.create_namespaced_pod(ns, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "policy-test"},
                         "annotations": {NOTE: "keep", "volcano.sh/vgpu-time": "1"}},
            "spec": spec})
        self.made.append((ns, name))
        return ns, name

    def cleanup(self):
        for ns, name in self.made:
            try:
                self.core.patch_namespaced_pod(name, ns, [{"op": "remove", "path": "/metadata/finalizers"}])
            except ApiException:
                pass  # none there, or the pod is gone
            try:
                self.core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
            except ApiException as e:
                if e.status != 404:
                    raise


@pytest.fixture
def pods(core, namespace):
    nodes = sorted(n.metadata.name for n in core.list_node().items)
    assert nodes, "no node to bind a pod to"
    p = Pods(core, namespace, nodes[0])
    yield p
    p.cleanup()


# (id, how the pod is made, patch, content type, the message's start when
# the policy refuses it).
REFUSED = [
    ("image", {}, [{"op": "replace", "path": "/spec/containers/0/image", "value": "evil:latest"}], JSON, SPEC),
    ("toleration", {}, [{"op": "add", "path": "/spec/tolerations/-",
                         "value": {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}}],
     JSON, SPEC),
    ("active-deadline", {}, {"spec": {"activeDeadlineSeconds": 1}}, MERGE, SPEC),
    ("scheduling-gates", {"gated": True}, {"spec": {"schedulingGates": None}}, MERGE, SPEC),
    ("label", {}, {"metadata": {"labels": {"muster.dev/queue": "someone-elses"}}}, MERGE, META),
    ("label-removed", {}, {"metadata": {"labels": {"app": None}}}, MERGE, META),
    ("finalizer", {}, {"metadata": {"finalizers": ["example.com/hold"]}}, MERGE, META),
    ("owner", {}, {"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody", "uid": str(uuid.uuid4())}]}}, MERGE, META),
    ("vgpu-with-label", {}, {"metadata": {"annotations": {"volcano.sh/vgpu-node": "n"},
                                          "labels": {"evil": "1"}}}, MERGE, META),
    ("annotation-added", {}, {"metadata": {"annotations": {"example.com/x": "y"}}}, MERGE, ANNOTATION + "example.com/x"),
    ("annotation-changed", {}, {"metadata": {"annotations": {NOTE: "changed"}}}, MERGE, ANNOTATION + NOTE),
    ("annotation-removed", {}, {"metadata": {"annotations": {NOTE: None}}}, MERGE, ANNOTATION + NOTE),
    ("lookalike-key", {}, {"metadata": {"annotations": {"volcano.sh.example.com/vgpu-node": "n"}}}, MERGE,
     ANNOTATION + "volcano.sh.example.com/vgpu-node"),
    ("other-scheduler", {"scheduler": "other-scheduler"},
     {"metadata": {"annotations": {"volcano.sh/vgpu-node": "n"}}}, MERGE, OTHER_SCHEDULER + "other-scheduler"),
    ("kube-system", {"scheduler": "default-scheduler", "ns": "kube-system"},
     {"metadata": {"annotations": {"volcano.sh/vgpu-node": "n"}}}, MERGE, OTHER_SCHEDULER + "default-scheduler"),
    ("bound", {"bound": True}, {"metadata": {"annotations": {"volcano.sh/vgpu-node": "n"}}}, MERGE, BOUND),
]


def muster_patch(uid, node="vgpu-0000"):
    """What kubeapi_patch_pod_annotations sends for sched_shares_write."""
    ids = "GPU-0,NVIDIA-Tesla V100-PCIE-32GB,16384,50:"
    now = str(int(time.time()))
    return {"metadata": {"uid": uid, "annotations": {
        "volcano.sh/vgpu-node": node, "volcano.sh/vgpu-time": now, "volcano.sh/vgpu-ids-new": ids,
        "volcano.sh/devices-to-allocate": ids, "volcano.sh/bind-phase": "allocating",
        "volcano.sh/bind-time": now}}}


def set_binding(cluster, core, sa, pods, on):
    """Create (on) or delete the policy's binding, then wait until a probe
    patch is refused, or passes. The probe breaks every rule at once (a
    bound pod of another scheduler; a new label, annotation and
    activeDeadlineSeconds each time), so that any one of them enforced
    is seen."""
    doc = yaml.safe_dump(policy_binding_doc())
    if on:
        kubectl(cluster, "apply", "-f", "-", stdin=doc)
    else:
        kubectl(cluster, "delete", "--ignore-not-found", "-f", "-", stdin=doc)
    ns, name = pods.make(scheduler="other-scheduler", bound=True)
    n = [0]

    def probe():
        n[0] += 1
        got = refusal(sa[0], ns, name, {"metadata": {"labels": {"probe": str(n[0])},
                                                     "annotations": {"example.com/probe": str(n[0])}},
                                        "spec": {"activeDeadlineSeconds": 100000 - n[0]}})
        if on:
            return got or Not("the probe patch still passes")
        return got is None or Not(f"the probe patch is still refused: {got}")

    wait_for(f"the policy's binding {'enforced' if on else 'gone'}", probe, timeout=60, interval=0.5)


# --- the files themselves ----------------------------------------------------------


def test_the_pod_patch_comes_only_with_the_policy(installed):
    """muster.yaml grants no patch of pods; muster-vgpu.yaml grants exactly
    that to muster.yaml's service account, after the policy and its binding
    in the file, and the policy matches that service account and the queue
    file's scheduler names."""
    main = load(MUSTER_YAML)
    for role in (d for d in main if d["kind"] in ("ClusterRole", "Role")):
        for rule in role["rules"]:
            assert not ("" in rule["apiGroups"] and "pods" in rule["resources"]
                        and {"patch", "update", "*"} & set(rule["verbs"])), (role["metadata"]["name"], rule)
    (sa,) = [d for d in main if d["kind"] == "ServiceAccount"]
    assert f"system:serviceaccount:{sa['metadata']['namespace']}:{sa['metadata']['name']}" == SA

    docs = vgpu_docs()
    kinds = [d["kind"] for d in docs]
    assert kinds == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterRole",
                     "ClusterRoleBinding"]
    policy, binding, role, role_binding = docs
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}]
    assert role_binding["roleRef"]["name"] == role["metadata"]["name"]
    assert role_binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                         "namespace": sa["metadata"]["namespace"]}]
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert [c["expression"] for c in spec["matchConditions"]] == [f"request.userInfo.username == '{SA}'"]
    assert spec["matchConstraints"]["resourceRules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods"]}]
    names = {v["name"]: v["expression"] for v in spec["variables"]}["schedulerNames"]
    (cm,) = [d for d in main if d["kind"] == "ConfigMap"]
    queues = yaml.safe_load(cm["data"]["queues.yaml"])
    assert ast.literal_eval(names) == (queues.get("schedulerNames") or [queues.get("schedulerName", "muster")])


def test_policy_type_checks(cluster, installed):
    """The server compiled the policy's expressions against the Pod schema
    and found nothing to warn about."""
    def checked():
        r = kubectl(cluster, "get", "validatingadmissionpolicy", POLICY, "-o", "yaml")
        status = yaml.safe_load(r.stdout).get("status") or {}
        return status.get("typeChecking") is not None and status or Not(f"status {status}")

    status = wait_for("the policy's type checking", checked, timeout=30)
    assert not status["typeChecking"].get("expressionWarnings"), status


# --- on the server -----------------------------------------------------------------


def test_without_the_policy_every_patch_passes(cluster, core, sa, pods):
    """With muster-vgpu.yaml's RBAC but no binding of the policy, every
    patch the policy refuses below goes through: neither RBAC nor the pod's
    own validation stops them."""
    set_binding(cluster, core, sa, pods, on=False)
    passed = {}
    for case, how, body, ctype, _ in REFUSED:
        ns, name = pods.make(**how)
        passed[case] = refusal(sa[0], ns, name, body, ctype)
    assert all(v is None for v in passed.values()), passed
    ns, name = pods.make()
    uid = core.read_namespaced_pod(name, ns).metadata.uid
    patch(sa[0], ns, name, muster_patch(uid))


def unchanged(core, pod):
    """A pod's spec and metadata, but the server's own bookkeeping."""
    d = core.api_client.sanitize_for_serialization(pod)
    meta = {k: v for k, v in d["metadata"].items() if k not in ("managedFields", "resourceVersion")}
    return meta, d["spec"]


@pytest.mark.parametrize("case,how,body,ctype,message", REFUSED, ids=[c[0] for c in REFUSED])
def test_policy_refuses(cluster, core, sa, pods, case, how, body, ctype, message):
    set_binding(cluster, core, sa, pods, on=True)
    ns, name = pods.make(**how)
    before = core.read_namespaced_pod(name, ns)
    got = refusal(sa[0], ns, name, body, ctype)
    assert got is not None, f"{case}: the patch passed"
    assert got.startswith(message), got
    # Nothing of it changed (its status may: a bound pod starts running).
    assert unchanged(core, before) == unchanged(core, core.read_namespaced_pod(name, ns))


def test_policy_admits_what_muster_writes(cluster, core, sa, pods):
    """The patch Muster sends before a binding passes and leaves the other
    annotations and labels as they were; a volcano.sh/ annotation may be
    removed; pods/status and pods/binding are not the policy's; after the
    binding, the pod's annotations are no longer Muster's to patch."""
    set_binding(cluster, core, sa, pods, on=True)
    ns, name = pods.make()
    uid = core.read_namespaced_pod(name, ns).metadata.uid
    body = muster_patch(uid)
    patch(sa[0], ns, name, body)
    got = core.read_namespaced_pod(name, ns)
    want = dict(body["metadata"]["annotations"], **{NOTE: "keep"})
    assert got.metadata.annotations == want
    assert got.metadata.labels == {"app": "policy-test"}
    # Taking one off (the patch's own vgpu-time was overwritten above).
    patch(sa[0], ns, name, {"metadata": {"annotations": {"volcano.sh/bind-time": None}}})
    assert "volcano.sh/bind-time" not in core.read_namespaced_pod(name, ns).metadata.annotations
    # pods/status: the PodScheduled condition, as kubeapi_patch_pod_condition.
    patch(sa[0], ns, name, {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "policy test"}]}},
        STRATEGIC, sub="status")
    # pods/binding, then the bound pod is refused.
    node = pods.node
    sa[0].call_api(f"/api/v1/namespaces/{ns}/pods/{name}/binding", "POST",
                        header_params={"Content-Type": "application/json", "Accept": "application/json"},
                        body={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                              "target": {"apiVersion": "v1", "kind": "Node", "name": node}},
                        auth_settings=["BearerToken"], response_type="object", _return_http_data_only=True)
    assert core.read_namespaced_pod(name, ns).spec.node_name == node
    got = refusal(sa[0], ns, name, {"metadata": {"annotations": {"volcano.sh/bind-phase": "success"}}})
    assert got == BOUND + node


def test_policy_leaves_others_alone(cluster, core, sa, pods):
    """Only Muster's service account is held to the policy: the admin may
    still relabel a pod of Muster's."""
    set_binding(cluster, core, sa, pods, on=True)
    ns, name = pods.make()
    core.patch_namespaced_pod(name, ns, [{"op": "add", "path": "/metadata/labels/admin", "value": "yes"}])
    assert core.read_namespaced_pod(name, ns).metadata.labels["admin"] == "yes"


VGPU_NODE = "vgpu-policy-0"


@pytest.fixture
def vgpu_node(core):
    """One vGPU node (4 V100 32 GB split 10, as test_vgpu.py's), removed
    afterwards."""
    pool = {"name": "vgpu", "vgpu": {"gpus": 4, "memory": 32768, "split": 10, "type": "NVIDIA-Tesla V100-PCIE-32GB"}}
    core.create_node(nodes.node_manifest(pool, 0, 1, VGPU_NODE, {"cpu": "32", "memory": "256Gi", "pods": "110"},
                                         None))
    nodes.wait_ready(core, {VGPU_NODE}, 120)
    yield VGPU_NODE
    core.delete_node(VGPU_NODE)
    wait_for("the vGPU node gone", lambda: VGPU_NODE not in {n.metadata.name for n in core.list_node().items})


def test_muster_with_the_vgpu_rights_binds_a_vgpu_pod(cluster, core, sa, pods, vgpu_node, tmp_path):
    """`muster run` holding only the service account's token (muster.yaml
    and muster-vgpu.yaml), the policy enforced: it writes a vGPU pod's
    shares and binds it, and is refused nothing."""
    set_binding(cluster, core, sa, pods, on=True)
    queues = tmp_path / "queues.yaml"
    queues.write_text(queue_file_text())
    log = os.path.join(cluster_dir(), "logs", "muster-test_pod_patch_policy.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    argv = [muster_binary(), "run", "--kubeconfig", sa[1], "--config", str(queues), "--debug-addr=127.0.0.1:0"]
    with open(log, "wb") as out:
        muster = Muster(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out), log)
    try:
        name = f"vgpu-{uuid.uuid4().hex[:6]}"
        limits = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "16384", "volcano.sh/vgpu-cores": "50"}
        core.create_namespaced_pod(pods.ns, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"muster.dev/queue": "team-a"}, "annotations": {NOTE: "keep"}},
            "spec": {"schedulerName": "muster", "restartPolicy": "Never", "tolerations": [TOLERATION],
                     "nodeSelector": {"kubernetes.io/hostname": vgpu_node},
                     "containers": [{"name": "main", "image": "busybox", "resources": {
                         "requests": {"cpu": "1", "memory": "1Gi"}, "limits": limits}}]}})
        pods.made.append((pods.ns, name))

        def bound():
            p = core.read_namespaced_pod(name, pods.ns)
            return p.spec.node_name and p or Not(f"unbound: {p.status.conditions}")

        p = until(muster, "the vGPU pod bound", bound, timeout=60)
        a = p.metadata.annotations
        assert p.spec.node_name == vgpu_node
        assert a["volcano.sh/vgpu-node"] == vgpu_node and a["volcano.sh/bind-phase"] == "allocating", a
        assert a["volcano.sh/vgpu-ids-new"].split(",")[0] in [nodes.gpu_uuid(vgpu_node, k) for k in range(4)], a
        assert a[NOTE] == "keep"
        muster.check()
    finally:
        status = muster.stop()
    assert status == 0, f"muster exited with {status} on SIGTERM; {log}:\n{muster.tail()}"
    with open(log, errors="replace") as f:
        refused = [line for line in f if re.search(r"\b403\b|forbidden|denied", line, re.I)]
    assert not refused, "Muster was refused:\n" + "".join(refused[:20])
