"""Fair sharing's memory (fairSharing.halfLife) on the real control plane.

The order it makes is checked in the simulator (test/unit/policy/
scenarios/fair-memory.txt); here, what only a real API server can show:
the memory is written to a ConfigMap by server-side apply (created the
first time), shown in /debug/queues and /metrics, and read back by the
next instance, so a restart does not forget it.

One Muster at a time, under its own scheduler name and a config of its
own (queues fs-a and fs-b in one cohort, a half-life of one minute, the
shortest allowed, so memory builds up within seconds), writing every
second into the test's namespace. Its pod is pinned to gpu-0012.
"""

import json
import urllib.request

from conftest import Not, until, wait_for

NAME = "muster-fs"
NODE = "gpu-0012"
GPU = "nvidia.com/gpu"
CONFIG = """schedulerName: muster-fs
resources: [nvidia.com/gpu]
fairSharing: {halfLife: 1m}
defaultQueue: fs-a
cohorts:
  - name: fs
    queues:
      - {name: fs-a, quota: {nvidia.com/gpu: {nominal: 4}}}
      - {name: fs-b, quota: {nvidia.com/gpu: {nominal: 4}}}
"""


def gpu_pod(name):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"muster.dev/queue": "fs-a"}},
        "spec": {
            "schedulerName": NAME,
            "restartPolicy": "Never",
            "nodeSelector": {"kubernetes.io/hostname": NODE},
            "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {GPU: "8", "cpu": "1"}, "limits": {GPU: "8"}}}],
        },
    }


def queue(doc, name):
    """The node called name in /debug/queues' tree."""
    todo = [doc["root"]]
    while todo:
        n = todo.pop()
        if n["name"] == name:
            return n
        todo.extend(n["children"])
    return None


def remembered(m):
    doc = json.load(urllib.request.urlopen(m.debug_url() + "/debug/queues", timeout=10))
    q = queue(doc, "fs-a")
    return doc, q["resources"][GPU].get("remembered") if q else None


def stored(core, ns):
    """fs-a's remembered GPUs in the ConfigMap, or Not."""
    try:
        cm = core.read_namespaced_config_map("muster-fair-share", ns)
    except Exception as e:
        return Not(f"no configmap yet ({getattr(e, 'status', e)})")
    doc = json.loads((cm.data or {}).get("usage.json", "{}"))
    pair = doc.get("nodes", {}).get("fs-a", {}).get(GPU)
    return pair[0] if pair and pair[0] >= 2 else Not(f"fs-a remembers {pair}")


def test_memory_is_kept_in_a_configmap_and_read_back_after_a_restart(core, namespace, start_muster, tmp_path):
    config = tmp_path / "fs.yaml"
    config.write_text(CONFIG)
    flags = ("--config", str(config), "--scheduler-name", NAME, "--usage-namespace", namespace,
             "--usage-write-period", "1")
    m1 = start_muster(*flags)
    core.create_namespaced_pod(namespace, gpu_pod("hog"))
    until(m1, "hog bound", lambda: core.read_namespaced_pod("hog", namespace).spec.node_name == NODE)

    # fs-a holds 8 (4 over its quota): its memory climbs toward 8, 2 GPUs
    # after about 25 s with a half-life of a minute; fs-b's stays 0.
    def climbed():
        doc, v = remembered(m1)
        return doc if v and v >= 2 else Not(f"fs-a remembers {v}")

    doc = until(m1, "fs-a's memory in /debug/queues", climbed, timeout=90)
    assert doc["fairSharing"]["halfLifeSeconds"] == 60
    assert doc["fairSharing"]["rememberedAt"]
    assert queue(doc, "fs-b")["resources"][GPU]["remembered"] == 0
    assert queue(doc, "fs-a")["fairShare"] > 0  # it counts: over quota by memory
    metrics = urllib.request.urlopen(m1.debug_url() + "/metrics", timeout=10).read().decode()
    assert 'muster_queue_remembered_usage{queue="fs-a",kind="queue",resource="nvidia.com/gpu"}' in metrics

    # Written by server-side apply: the ConfigMap did not exist before.
    before = wait_for("fs-a's memory in the configmap", lambda: stored(core, namespace), timeout=30)
    cm = core.read_namespaced_config_map("muster-fair-share", namespace)
    assert any(f.manager == "muster" for f in cm.metadata.managed_fields)

    # The work goes and Muster with it; the next one starts from the
    # ConfigMap, not from nothing: its first tree already remembers at
    # least 1 (what was stored, 2 or more, less a GPU of rounding), where
    # one starting afresh shows 0.
    core.delete_namespaced_pod("hog", namespace, grace_period_seconds=0)
    assert m1.stop() == 0
    m2 = start_muster(*flags)
    _, v = until(m2, "a first /debug/queues", lambda: remembered(m2) if remembered(m2)[1] is not None else None)
    assert v >= 1 and v >= round(before) - 1, f"the restarted Muster remembers {v}, the configmap said {before}"
    with open(m2.log, errors="replace") as f:
        assert f"fair-share memory read from configmap {namespace}/muster-fair-share" in f.read()
