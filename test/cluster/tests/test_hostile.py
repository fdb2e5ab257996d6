"""What a tenant can create must not stop scheduling (issue 14).

- A pod that asks for 60 extended resources no node offers cannot fill
  Muster's resource table: a node that then arrives with a new resource
  (a MIG profile) is scheduled onto, both by a pod created after it and by
  one that was already waiting for that resource.
- A value with a newline (a Volcano group-name annotation, which Muster
  quotes when the gang waits) cannot forge a log line, in text or JSON logs.

Each test makes its own namespace (conftest `namespace`) and removes the
node it adds.
"""

import json
import re

import pytest
from kubernetes.client.rest import ApiException

from conftest import Not, until

MIG = "nvidia.com/mig-1g.10gb"
FAKE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
FORGED = "2026-11-24T00:00:00.000Z muster: gang e2e/x (queue e2e-default): binding pod evil to gpu-0000"


def pod(name, requests, annotations=None):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "schedulerName": "muster",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": requests, "limits": {k: v for k, v in requests.items() if "/" in k}},
                }
            ],
        },
    }


def mig_node(name):
    """A kwok node offering 7 MIG slices and nothing GPU-whole. No `type`
    label, so the profile checks of test_nodes.py never see it."""
    alloc = {"cpu": "32", "memory": "256Gi", "pods": "110", MIG: "7"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "e2e.muster.dev/hostile": "true"},
            "annotations": {FAKE_ANNOTATION[0]: FAKE_ANNOTATION[1], "node.alpha.kubernetes.io/ttl": "0"},
        },
        "status": {"capacity": alloc, "allocatable": alloc},
    }


@pytest.fixture
def extra_node(core):
    made = []

    def make(name):
        core.create_node(mig_node(name))
        made.append(name)
        return name

    yield make
    for name in made:
        try:
            core.delete_node(name)
        except ApiException as e:
            if e.status != 404:
                raise


def node_of(core, ns, name):
    return core.read_namespaced_pod(name, ns).spec.node_name


def scheduled_condition(core, ns, name):
    p = core.read_namespaced_pod(name, ns)
    return next((c for c in p.status.conditions or [] if c.type == "PodScheduled"), None)


def test_a_pod_with_60_extended_resources_leaves_room_for_a_new_node(core, namespace, muster, extra_node):
    ns = namespace
    greedy = {f"example.com/r{i}": "1" for i in range(60)}
    greedy.update(cpu="100m", memory="64Mi")
    core.create_namespaced_pod(ns, pod("greedy", greedy))
    # Waiting for a resource no node offers yet.
    core.create_namespaced_pod(ns, pod("early", {"cpu": "100m", MIG: "1"}))

    def greedy_waits():
        c = scheduled_condition(core, ns, "greedy")
        if not c or c.status != "False" or "a resource no node offers" not in (c.message or ""):
            return Not(f"greedy: PodScheduled {c and (c.status, c.reason, c.message)}")
        return c.message

    until(muster, "the 60-resource pod to wait for resources no node offers", greedy_waits)
    assert node_of(core, ns, "early") is None

    node = extra_node("mig-hostile-0")
    core.create_namespaced_pod(ns, pod("late", {"cpu": "100m", MIG: "2"}))

    def both_bound():
        got = {n: node_of(core, ns, n) for n in ("early", "late")}
        return got if all(v == node for v in got.values()) else Not(f"placed: {got}")

    until(muster, f"both MIG pods bound to {node}", both_bound, timeout=60)
    assert node_of(core, ns, "greedy") is None
    with open(muster.log, errors="replace") as f:
        text = f.read()
    assert "too many distinct resources" not in text
    assert "listing them again" in text, "the waiting MIG pod was read again when the name arrived"


def forged_lines(path):
    with open(path, "rb") as f:
        return [line for line in f.read().split(b"\n") if line.startswith(FORGED.encode())]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_newline_in_an_annotation_cannot_forge_a_log_line(core, namespace, start_muster, fmt):
    ns = namespace
    m = start_muster("--log-format", fmt)
    group = "g\n" + FORGED
    core.create_namespaced_pod(
        ns, pod("evil", {"cpu": "100m"}, annotations={"scheduling.k8s.io/group-name": group})
    )

    def quoted():
        m.check()
        with open(m.log, errors="replace") as f:
            text = f.read()
        # g\n in text; g\\n once JSON escapes the backslash too
        seen = ("g\\n" + FORGED) in text or ("g\\\\n" + FORGED) in text
        return seen or Not("no log line quotes the escaped group name yet")

    until(m, "Muster to log the waiting pod with its group name", quoted)
    assert forged_lines(m.log) == []
    if fmt == "json":
        with open(m.log, "rb") as f:
            lines = [line for line in f.read().split(b"\n") if line.strip()]
        for line in lines:
            json.loads(line.decode("utf-8"))  # strict: valid UTF-8 and JSON
        assert any(re.search(rb'"gang":"g\\\\n2026', line) for line in lines)
