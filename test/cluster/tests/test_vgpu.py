"""Fractional GPUs end to end: `muster run` places pods that ask for vGPUs
(volcano.sh/vgpu-number, -memory, -cores) on nodes the vGPU device plugin
registered, and writes the shares on each pod before binding it, in the
annotations the plugin reads. What is in the API server afterwards is
checked by the vGPU oracle (test/cluster/modules/vgpu-oracle): Volcano
v1.15.1's own code rebuilds every GPU and every share and finds no GPU
over-committed and no pod holding other than it asked.

The module adds two vGPU nodes to the cluster for its tests (4 V100 32 GB
each, split 10; test/cluster/nodes.py writes what the plugin writes) and
removes them afterwards. Pods that stand for work another scheduler placed
are created bound, with the shares in their annotation, as Volcano would
have left them: Muster must count them too.
"""

import collections
import os
import struct
import subprocess
import tempfile
import time
import zlib

import pytest

import nodes
from conftest import Not, until, wait_for
from test_debug import DOM, chromium, dump_dom, get_doc
from test_vgpu_oracle import oracle  # noqa: F401  (the fixture: builds the oracle)

V100 = "NVIDIA-Tesla V100-PCIE-32GB"
VGPU = {"gpus": 4, "memory": 32768, "split": 10, "type": V100}
NODES = ["vgpu-0000", "vgpu-0001"]
IDS = "volcano.sh/vgpu-ids-new"
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
SP_LABEL = "scheduling.x-k8s.io/pod-group"


@pytest.fixture(scope="module")
def vgpu_nodes(core):
    pool = {"name": "vgpu", "vgpu": VGPU}
    cap = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    for i, name in enumerate(NODES):
        core.create_node(nodes.node_manifest(pool, i, len(NODES), name, cap, None))
    nodes.wait_ready(core, set(NODES), 120)
    yield NODES
    for name in NODES:
        core.delete_node(name)
    wait_for("vGPU nodes gone", lambda: not set(NODES) & {n.metadata.name for n in core.list_node().items})


@pytest.fixture(autouse=True)
def pods_gone(core, namespace):
    """Each test's pods are deleted with grace period 0 and waited out: the
    next test's pods must find the vGPU nodes as it left them, and the
    deletion of a namespace alone may take longer than that test waits for
    a bind (CI saw test_deleting_a_pod_frees_exactly_its_share fail once,
    cause not shown, with the pods of earlier tests still terminating)."""
    yield
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_for("the test's pods deleted", lambda: not core.list_namespaced_pod(namespace).items)


def uuids(node):
    return [nodes.gpu_uuid(node, k) for k in range(VGPU["gpus"])]


def vgpu_pod(name, mem, cores, number=1, node=None, gang=None, ids=None):
    """A pod for Muster asking `number` vGPUs of mem MiB and cores percent;
    with ids, one already bound to `node` holding those shares."""
    limits = {"volcano.sh/vgpu-number": str(number), "volcano.sh/vgpu-memory": str(mem),
              "volcano.sh/vgpu-cores": str(cores)}
    spec = {"schedulerName": "muster", "restartPolicy": "Never", "tolerations": [TOLERATION],
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": limits}}]}
    meta = {"name": name, "labels": {}, "annotations": {}}
    if gang:
        meta["labels"][SP_LABEL] = gang
    if ids is not None:
        spec["nodeName"] = node
        spec["schedulerName"] = "volcano"
        meta["annotations"][IDS] = ids
    elif node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def bound(core, ns, names):
    pods = {p.metadata.name: p for p in core.list_namespaced_pod(ns).items}
    return all(n in pods and pods[n].spec.node_name for n in names) and pods


def shares(pod):
    """The GPU UUIDs of a pod's annotation, in order."""
    text = (pod.metadata.annotations or {}).get(IDS, "")
    return [s.split(",")[0] for part in text.split(";") for s in part.split(":") if s]


def cluster_state(core):
    ser = core.api_client.sanitize_for_serialization
    return {"nodes": [ser(n) for n in core.list_node().items if n.metadata.name in NODES],
            "pods": [ser(p) for p in core.list_pod_for_all_namespaces().items]}


def oracle_ok(oracle, core):  # noqa: F811
    r = oracle(cluster_state(core))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_gang_of_four_half_gpu_pods_binds_onto_two_gpus_of_one_node(core, custom, namespace, muster,
                                                                       vgpu_nodes, oracle):  # noqa: F811
    custom.create_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups",
                                           {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                            "metadata": {"name": "halves"}, "spec": {"minMember": 4}})
    names = [f"halves-{i}" for i in range(4)]
    for n in names:
        core.create_namespaced_pod(namespace, vgpu_pod(n, 16384, 50, gang="halves"))
    pods = until(muster, "the four halves bound", lambda: bound(core, namespace, names) or Not("not yet"))
    on = {pods[n].spec.node_name for n in names}
    assert len(on) == 1 and on <= set(NODES), on
    node = on.pop()
    held = [shares(pods[n]) for n in names]
    assert all(len(h) == 1 for h in held), held
    gpus = [h[0] for h in held]
    assert len(set(gpus)) == 2 and all(gpus.count(g) == 2 for g in gpus), gpus
    assert set(gpus) <= set(uuids(node)), (gpus, node)
    for n in names:
        a = pods[n].metadata.annotations
        assert a["volcano.sh/vgpu-node"] == node and a["volcano.sh/bind-phase"] == "allocating", a
        assert a["volcano.sh/devices-to-allocate"] == a[IDS], a
        assert a[IDS] == f"{gpus[names.index(n)]},{V100},16384,50:", a[IDS]
    out = oracle_ok(oracle, core)
    for g in set(gpus):
        assert f"{g}: pods 2/10 memory 32768/32768 cores 100/100" in out, out
    # The oracle is no rubber stamp: one share corrupted in what it reads.
    state = cluster_state(core)
    for p in state["pods"]:
        if p["metadata"]["name"] == names[0] and p["metadata"]["namespace"] == namespace:
            p["metadata"]["annotations"][IDS] = p["metadata"]["annotations"][IDS].replace(",50:", ",60:")
    r = oracle(state)
    assert r.returncode == 1 and "FINDING" in r.stdout, r.stdout


def test_pod_asking_30_cores_and_10_gib_lands_only_on_a_gpu_with_both(core, namespace, muster, vgpu_nodes,
                                                                      oracle):  # noqa: F811
    node = NODES[1]
    g = uuids(node)
    # Work placed before (bound, shares in its annotation): GPU 0 short of
    # memory, GPU 1 short of cores, GPU 2 taken whole. Only GPU 3 has both.
    fillers = {"mem-heavy": (24576, 10, g[0]), "core-heavy": (4096, 80, g[1]), "whole": (32768, 100, g[2])}
    for n, (mem, cores, uuid) in fillers.items():
        core.create_namespaced_pod(namespace, vgpu_pod(n, mem, cores, node=node,
                                                       ids=f"{uuid},{V100},{mem},{cores}:"))
    wait_for("fillers bound", lambda: bound(core, namespace, list(fillers)))
    core.create_namespaced_pod(namespace, vgpu_pod("small", 10240, 30, node=node))
    pods = until(muster, "small bound", lambda: bound(core, namespace, ["small"]) or Not("not yet"))
    assert shares(pods["small"]) == [g[3]], shares(pods["small"])
    out = oracle_ok(oracle, core)
    assert f"{g[3]}: pods 1/10 memory 10240/32768 cores 30/100" in out, out


def test_deleting_a_pod_frees_exactly_its_share(core, namespace, muster, vgpu_nodes, oracle):  # noqa: F811
    node = NODES[0]
    names = [f"whole-{i}" for i in range(4)]
    for n in names:
        core.create_namespaced_pod(namespace, vgpu_pod(n, 32768, 100, node=node))
    pods = until(muster, "four whole GPUs bound", lambda: bound(core, namespace, names) or Not("not yet"))
    held = {n: shares(pods[n]) for n in names}
    assert sorted(h[0] for h in held.values()) == sorted(uuids(node)), held
    core.create_namespaced_pod(namespace, vgpu_pod("next", 32768, 100, node=node))
    time.sleep(3)
    assert not core.read_namespaced_pod("next", namespace).spec.node_name, "a fifth whole GPU on a node of four"
    core.delete_namespaced_pod("whole-2", namespace, grace_period_seconds=0)
    pods = until(muster, "next bound", lambda: bound(core, namespace, ["next"]) or Not("not yet"))
    assert shares(pods["next"]) == held["whole-2"], (shares(pods["next"]), held["whole-2"])
    oracle_ok(oracle, core)


def test_a_malformed_registration_keeps_whole_gpu_accounting(core, namespace, muster, vgpu_nodes):
    """A node whose registration cannot be read is logged and takes no vGPU
    pod; Muster keeps running and places elsewhere."""
    node = NODES[1]
    core.patch_node(node, {"metadata": {"annotations": {nodes.VGPU_REGISTER: "GPU-x,ten,32768,V100,true,hami-core:"}}})
    try:
        core.create_namespaced_pod(namespace, vgpu_pod("lost", 1024, 10, node=node))
        until(muster, "the log names the node", lambda: f"{node}: annotation {nodes.VGPU_REGISTER} ignored"
              in open(muster.log).read() or Not("not logged"))
        time.sleep(3)
        assert not core.read_namespaced_pod("lost", namespace).spec.node_name
    finally:
        pool = {"name": "vgpu", "vgpu": VGPU}
        good = nodes.node_manifest(pool, 1, 2, node, {}, None)["metadata"]["annotations"][nodes.VGPU_REGISTER]
        core.patch_node(node, {"metadata": {"annotations": {nodes.VGPU_REGISTER: good}}})
    until(muster, "lost bound once the registration is good again",
          lambda: bound(core, namespace, ["lost"]) or Not("not yet"))
    muster.check()


# --- MIG slices beside whole GPUs ------------------------------------------------------

MIG_NODE = "mig-0000"
MIG = {"nvidia.com/gpu": "4", "nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "2"}


@pytest.fixture(scope="module")
def mig_node(core):
    """An H100 node of the NVIDIA device plugin's mixed strategy: four
    GPUs whole, two cut into 1g.10gb slices, two into 3g.40gb (one each)."""
    pool = {"name": "mig", "capacity": {}, "gpu": {"product": "NVIDIA-H100-80GB-HBM3", "migCapable": True}}
    cap = {"cpu": "96", "memory": "1Ti", "pods": "110", **MIG}
    core.create_node(nodes.node_manifest(pool, 0, 1, MIG_NODE, cap, pool["gpu"]))
    nodes.wait_ready(core, {MIG_NODE}, 120)
    yield MIG_NODE
    core.delete_node(MIG_NODE)
    wait_for("MIG node gone", lambda: MIG_NODE not in {n.metadata.name for n in core.list_node().items})


def gpu_pod(name, resource, count=1, gang=None):
    spec = {"schedulerName": "muster", "restartPolicy": "Never", "tolerations": [TOLERATION],
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": "1", resource: str(count)},
                                          "limits": {resource: str(count)}}}]}
    labels = {SP_LABEL: gang} if gang else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}


def waiting(core, ns, name):
    p = core.read_namespaced_pod(name, ns)
    c = next((c for c in p.status.conditions or [] if c.type == "PodScheduled"), None)
    return c and c.status == "False" and c.reason == "Unschedulable" and c.message


def test_mig_slices_and_whole_gpus_coexist_on_the_right_nodes(core, custom, namespace, muster, mig_node):
    pg = lambda name, n: {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",  # noqa: E731
                          "metadata": {"name": name}, "spec": {"minMember": n}}
    core.create_namespaced_pod(namespace, gpu_pod("slice-0", "nvidia.com/mig-1g.10gb"))
    core.create_namespaced_pod(namespace, gpu_pod("eight", "nvidia.com/gpu", 8))
    # A gang mixing a slice and a whole GPU.
    custom.create_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups",
                                           pg("mixed", 2))
    core.create_namespaced_pod(namespace, gpu_pod("mixed-slice", "nvidia.com/mig-1g.10gb", gang="mixed"))
    core.create_namespaced_pod(namespace, gpu_pod("mixed-whole", "nvidia.com/gpu", 1, gang="mixed"))
    # Three 3g.40gb slices where the node has two: the gang waits whole.
    custom.create_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups",
                                           pg("big", 3))
    for k in range(3):
        core.create_namespaced_pod(namespace, gpu_pod(f"big-{k}", "nvidia.com/mig-3g.40gb", gang="big"))
    names = ["slice-0", "eight", "mixed-slice", "mixed-whole"]
    pods = until(muster, "slices and whole GPUs bound", lambda: bound(core, namespace, names) or Not("not yet"))
    assert pods["slice-0"].spec.node_name == MIG_NODE
    assert pods["mixed-slice"].spec.node_name == MIG_NODE
    assert pods["eight"].spec.node_name.startswith("gpu-"), pods["eight"].spec.node_name
    # Until the slice's name is known (a first cycle may run before the
    # node that offers it is read, and says no node offers it).
    msg = until(muster, "big waits for room",
                lambda: "nvidia.com/mig-3g.40gb" in (waiting(core, namespace, "big-0") or "")
                and waiting(core, namespace, "big-0") or Not("not waiting for room yet"))
    assert "2 of 3 members fit" in msg and "nvidia.com/mig-3g.40gb" in msg, msg
    assert not any(p.spec.node_name for p in core.list_namespaced_pod(namespace).items
                   if p.metadata.name.startswith("big-"))


# --- the GPU map ---------------------------------------------------------------------------


def png_pixels(path):
    """The RGB(A) pixels of an 8-bit, non-interlaced PNG (what Chromium
    writes) as a flat list of (r, g, b) tuples."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    at, idat, ihdr = 8, b"", None
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    width, height, depth, color, _, _, interlace = ihdr
    assert depth == 8 and color in (2, 6) and interlace == 0, ihdr
    bpp = 4 if color == 6 else 3
    raw, stride, prev, out = zlib.decompress(idat), width * bpp, bytearray(width * bpp), []
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.extend(tuple(line[i:i + 3]) for i in range(0, stride, bpp))
        prev = line
    return out


def screenshot(url, path, budget_ms=6000):
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1400,4000",
                            "--force-device-scale-factor=1", f"--virtual-time-budget={budget_ms}",
                            f"--screenshot={path}", url], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and os.path.exists(path), f"chromium exited {r.returncode}:\n{r.stderr[-3000:]}"


WHOLE, SHARED, FREE, LEFT = (0x2F, 0x6F, 0xD0), (0xF0, 0x8A, 0x24), (0xBF, 0xE3, 0xBF), (0xFD, 0xE3, 0xC8)


def test_gpu_map_shows_whole_shared_and_free_gpus(core, namespace, muster, vgpu_nodes, tmp_path):
    """One whole vGPU and one half-core share on vgpu-0001: /debug/gpus and
    /debug/nodes say so, the page draws the node's four cells (whole,
    shared with 50% left, two free), and a screenshot of the page holds
    those cells' colours: at least one whole cell and the legend's swatch
    in blue, the shared cell's used half in orange and its free half in
    light orange."""
    node = NODES[1]
    core.create_namespaced_pod(namespace, vgpu_pod("whole", 32768, 100, node=node))
    core.create_namespaced_pod(namespace, vgpu_pod("half", 16384, 50, node=node))
    until(muster, "both bound", lambda: bound(core, namespace, ["whole", "half"]) or Not("not yet"))

    def mapped():
        doc = get_doc(muster, "/debug/gpus")
        nodes = {n["name"]: n for d in doc["domains"] for n in d["nodes"]}
        n = nodes.get(node)
        return (n and sorted(n["cells"]) == ["F", "F", "S", "W"] and n["left"] == [50] and (doc, n)
                or Not(f"{node}: {n}"))
    doc, n = until(muster, "the map shows the two pods", mapped)
    assert doc["level"] == "nvidia.com/gpu.clique", doc["level"]
    assert {"gpu-0000", "gpu-0015"} <= {x["name"] for d in doc["domains"] for x in d["nodes"]}
    devices = {x["name"]: x for x in get_doc(muster, "/debug/nodes")["nodes"]}[node]["gpus"]
    assert sorted((g["used"]["shares"], g["used"]["cores"], g["used"]["memoryMiB"]) for g in devices) == [
        (0, 0, 0), (0, 0, 0), (1, 50, 16384), (1, 100, 32768)], devices

    dom = DOM(dump_dom(muster.debug_url() + "/debug/"))
    row = [e for e in dom.root.walk() if "gnode" in e.classes and e.attrs.get("data-name") == node]
    assert len(row) == 1, "no map row for " + node
    cells = [e for e in row[0].walk() if "gpu" in e.classes]
    states = sorted(c.classes[1] for c in cells)
    assert states == ["free", "free", "shared", "whole"], states
    assert [c.attrs.get("data-left") for c in cells if "shared" in c.classes] == ["50"]

    png = str(tmp_path / "page.png")
    screenshot(muster.debug_url() + "/debug/", png)
    counts = collections.Counter(p for p in png_pixels(png) if p in (WHOLE, SHARED, FREE, LEFT))
    # A cell is 14 x 14 px, a legend swatch 10 x 10; the shared cell's
    # right half is its free share.
    assert counts[WHOLE] >= 14 * 14 + 10 * 10, counts
    assert counts[SHARED] >= 7 * 14 + 10 * 10 and counts[LEFT] >= 6 * 14, counts
    assert counts[FREE] >= 3 * 14 * 14, counts
