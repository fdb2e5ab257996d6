"""Fake nodes for the local cluster, generated from a profile.

A profile (test/cluster/profiles/NAME.yaml) is a list of node pools. Each pool
gives a count and a capacity, or a CSV file with one node per row, plus
optional GPU facts and a topology from which the labels are generated:

  topology.kubernetes.io/zone   zones[] split into contiguous blocks of racks
  muster.dev/rack               nodesPerRack consecutive nodes share a rack
  nvidia.com/gpu.clique         nodesPerClique consecutive nodes share an
                                NVLink domain (cliques never straddle racks
                                when nodesPerRack is a multiple)
  kubernetes.io/hostname        the node name

GPU pools get the GPU Feature Discovery labels (nvidia.com/gpu.product,
.memory, .count, .family, nvidia.com/mig.capable) and the taint
nvidia.com/gpu=present:NoSchedule.

A pool with `vgpu: {gpus, memory, split, type}` plays nodes of the vGPU
device plugin (Project-HAMi's volcano-vgpu-device-plugin) instead of
NVIDIA's: what the plugin writes on its node, exactly as Volcano v1.15.1
reads it (pkg/scheduler/api/devices/nvidia/vgpu: NewGPUDevices,
decodeNodeDevices): the registration annotation volcano.sh/node-vgpu-register
("UUID,split,memory MiB,type,true,hami-core:" per GPU, UUIDs derived from
the node name) and the allocatable resources volcano.sh/vgpu-number (GPUs x
split), volcano.sh/vgpu-memory (MiB in all) and volcano.sh/vgpu-cores (100
a GPU). It gets the GPU taint too, and no nvidia.com/gpu. Every node carries the annotation
kwok.x-k8s.io/node=fake, which is how kwok knows it plays that node.

  python nodes.py manifest PROFILE          print the nodes as a JSON List
  python nodes.py create PROFILE KUBECONFIG create them, then wait for Ready
"""

import concurrent.futures
import csv
import json
import os
import sys
import time
import uuid

import yaml

FAKE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
# GPU models of the Alibaba trace: (memory in MiB, family). G1-G3 are
# undisclosed there, so they get no memory or family label.
KNOWN_MODELS = {
    "V100M16": (16384, "volta"),
    "V100M32": (32768, "volta"),
    "P100": (16384, "pascal"),
    "T4": (15360, "turing"),
    "A10": (23028, "ampere"),
}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ProfileError(Exception):
    pass


def load_profile(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("pools"), list):
        raise ProfileError(f"{path}: expected a mapping with a list 'pools'")
    return doc["pools"]


def csv_rows(pool):
    spec = pool["csv"]
    path = os.path.join(ROOT, spec["path"])
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            gpus = int(row[spec["gpus"]])
            cap = dict(pool.get("capacity", {}))
            cap["cpu"] = f"{int(row[spec['cpuMilli']])}m"
            cap["memory"] = f"{int(row[spec['memoryMiB']])}Mi"
            gpu = None
            if gpus > 0:
                cap["nvidia.com/gpu"] = str(gpus)
                model = row[spec["model"]]
                mem, family = KNOWN_MODELS.get(model, (None, None))
                gpu = {"product": model, "memory": mem, "family": family, "migCapable": False}
            yield row[spec["name"]], cap, gpu


def pool_rows(pool):
    if "csv" in pool:
        yield from csv_rows(pool)
        return
    count = int(pool["count"])
    for i in range(count):
        yield f"{pool['name']}-{i:04d}", dict(pool["capacity"]), pool.get("gpu")


def gpu_labels(gpu, capacity):
    count = gpu.get("count") or capacity.get("nvidia.com/gpu")
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": gpu["product"],
        "nvidia.com/mig.capable": "true" if gpu.get("migCapable") else "false",
    }
    if count is not None:
        labels["nvidia.com/gpu.count"] = str(count)
    if gpu.get("memory"):
        labels["nvidia.com/gpu.memory"] = str(gpu["memory"])
    if gpu.get("family"):
        labels["nvidia.com/gpu.family"] = gpu["family"]
    return labels


def topology_labels(pool, index, total):
    topo = pool.get("topology", {})
    zones = topo.get("zones", ["zone-a"])
    per_rack = int(topo.get("nodesPerRack", 8))
    rack = index // per_rack
    racks = (total + per_rack - 1) // per_rack
    labels = {
        "topology.kubernetes.io/zone": zones[rack * len(zones) // racks],
        "muster.dev/rack": f"{pool['name']}-rack-{rack:03d}",
    }
    if "nodesPerClique" in topo:
        clique = index // int(topo["nodesPerClique"])
        labels["nvidia.com/gpu.clique"] = f"{pool['name']}-nvl-{clique:04d}"
    return labels


VGPU_REGISTER = "volcano.sh/node-vgpu-register"


def gpu_uuid(node, k):
    """A stable GPU UUID in NVIDIA's form (GPU-8-4-4-4-12 hex)."""
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{node}.gpu{k}.muster.dev"))


def vgpu_node(name, vgpu, capacity, annotations):
    """What the vGPU device plugin publishes on node `name`."""
    gpus, memory, split = int(vgpu["gpus"]), int(vgpu["memory"]), int(vgpu.get("split", 10))
    annotations[VGPU_REGISTER] = "".join(
        f"{gpu_uuid(name, k)},{split},{memory},{vgpu['type']},true,hami-core:" for k in range(gpus))
    capacity.update({"volcano.sh/vgpu-number": str(gpus * split),
                     "volcano.sh/vgpu-memory": str(gpus * memory),
                     "volcano.sh/vgpu-cores": str(100 * gpus)})


def node_manifest(pool, index, total, name, capacity, gpu):
    labels = {
        "type": "kwok",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "muster.dev/pool": pool["name"],
    }
    labels.update(topology_labels(pool, index, total))
    taints = list(pool.get("taints", []))
    if gpu:
        labels.update(gpu_labels(gpu, capacity))
        taints.append(GPU_TAINT)
    labels.update(pool.get("labels", {}))
    annotations = {FAKE_ANNOTATION[0]: FAKE_ANNOTATION[1], "node.alpha.kubernetes.io/ttl": "0"}
    if pool.get("vgpu"):
        capacity = dict(capacity)
        vgpu_node(name, pool["vgpu"], capacity, annotations)
        labels["nvidia.com/gpu.product"] = pool["vgpu"]["type"].replace(" ", "-")
        taints.append(GPU_TAINT)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def manifests(profile_path):
    nodes = []
    for pool in load_profile(profile_path):
        rows = list(pool_rows(pool))
        for i, (name, cap, gpu) in enumerate(rows):
            nodes.append(node_manifest(pool, i, len(rows), name, cap, gpu))
    return nodes


def create(profile_path, kubeconfig, workers=16, timeout=600):
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    nodes = manifests(profile_path)

    def one(node):
        try:
            api.create_node(node)
        except ApiException as e:
            if e.status != 409:  # already there: creating is idempotent
                raise

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, nodes))
    wait_ready(api, {n["metadata"]["name"] for n in nodes}, timeout)
    return len(nodes)


# The node lifecycle controller taints a new node until it sees it Ready; a
# node is only usable once those taints are gone too.
LIFECYCLE_TAINTS = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}


def usable(node):
    ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
    return ready and not any(t.key in LIFECYCLE_TAINTS for t in node.spec.taints or [])


def wait_ready(api, names, timeout):
    deadline = time.monotonic() + timeout
    while True:
        ready = {n.metadata.name for n in api.list_node(label_selector="type=kwok").items if usable(n)}
        missing = names - ready
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(missing)} nodes not Ready after {timeout}s, e.g. {sorted(missing)[:3]}")
        time.sleep(0.5)


def main(argv):
    if len(argv) == 3 and argv[1] == "manifest":
        json.dump({"apiVersion": "v1", "kind": "List", "items": manifests(argv[2])}, sys.stdout, indent=1)
        return 0
    if len(argv) == 4 and argv[1] == "create":
        t0 = time.monotonic()
        n = create(argv[2], argv[3])
        print(f"nodes: {n} created and Ready in {time.monotonic() - t0:.1f}s")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (ProfileError, OSError, KeyError, ValueError) as e:
        print(f"nodes: {e}", file=sys.stderr)
        sys.exit(1)
