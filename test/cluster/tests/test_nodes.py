"""The fake nodes match the profile the cluster was started with."""

import os

import nodes as profile_nodes
from conftest import CLUSTER


def expected(cluster):
    path = os.path.join(CLUSTER, "profiles", cluster["PROFILE"] + ".yaml")
    return {n["metadata"]["name"]: n for n in profile_nodes.manifests(path)}


def is_ready(node):
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def test_every_profile_node_is_ready_with_its_labels_capacity_and_taints(cluster, core):
    want = expected(cluster)
    got = {n.metadata.name: n for n in core.list_node(label_selector="type=kwok").items}
    assert set(got) == set(want)
    for name, node in got.items():
        w = want[name]
        assert is_ready(node), name
        for k, v in w["metadata"]["labels"].items():
            assert node.metadata.labels.get(k) == v, (name, k)
        assert node.status.allocatable == w["status"]["allocatable"], name
        taints = sorted((t.key, t.value, t.effect) for t in node.spec.taints or [])
        assert taints == sorted((t["key"], t["value"], t["effect"]) for t in w["spec"].get("taints", []))


def test_small_profile_shape(cluster, core):
    """The acceptance shape of `small`: 20 nodes, 16 with 8 GPUs in 2 racks."""
    assert cluster["PROFILE"] == "small", "make test runs on the small profile"
    items = core.list_node(label_selector="type=kwok").items
    gpu = [n for n in items if n.status.allocatable.get("nvidia.com/gpu") == "8"]
    assert len(items) == 20 and all(is_ready(n) for n in items)
    assert len(gpu) == 16
    assert len({n.metadata.labels["muster.dev/rack"] for n in gpu}) == 2
    assert len({n.metadata.labels["nvidia.com/gpu.clique"] for n in gpu}) == 2
    for n in gpu:
        assert n.metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
        assert n.metadata.labels["nvidia.com/gpu.count"] == "8"
        assert n.metadata.labels["kubernetes.io/hostname"] == n.metadata.name
        assert [(t.key, t.value, t.effect) for t in n.spec.taints] == [("nvidia.com/gpu", "present", "NoSchedule")]
