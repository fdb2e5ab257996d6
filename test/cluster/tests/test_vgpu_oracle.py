"""The vGPU oracle (test/cluster/modules/vgpu-oracle): a Go program built
against volcano.sh/volcano through the module proxy that rebuilds every
node's GPUs and every bound pod's shares with Volcano's own vGPU code and
checks them (no GPU over-committed in pods, memory or cores; every pod
holding what it asked). Here it is checked on its own, on cluster states
written by hand in the device plugin's and Volcano's formats, so that a
later end-to-end test can trust its verdict on what Muster wrote."""

import copy
import json
import os
import re
import subprocess

import pytest

CLUSTER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.path.join(CLUSTER, "modules", "vgpu-oracle")

V100 = "NVIDIA-Tesla V100-PCIE-32GB"


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("oracle") / "vgpu-oracle")
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod", CGO_ENABLED="0")
    r = subprocess.run(["go", "build", "-o", out, "."], cwd=MODULE, env=env, capture_output=True, text=True,
                       timeout=1200)
    assert r.returncode == 0, r.stderr

    def run(state):
        return subprocess.run([out], input=json.dumps(state), capture_output=True, text=True, timeout=60)
    return run


def node(name, gpus):
    reg = "".join(f"{uuid},10,32768,{V100},true,hami-core:" for uuid in gpus)
    return {"metadata": {"name": name, "annotations": {"volcano.sh/node-vgpu-register": reg}},
            "status": {"allocatable": {"volcano.sh/vgpu-number": str(10 * len(gpus)),
                                       "volcano.sh/vgpu-memory": str(32768 * len(gpus)),
                                       "volcano.sh/vgpu-cores": str(100 * len(gpus))}}}


def pod(name, node_name, limits, ids):
    return {"metadata": {"name": name, "namespace": "t", "uid": "uid-" + name,
                         "annotations": {"volcano.sh/vgpu-ids-new": ids}},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"limits": limits}}]},
            "status": {"phase": "Running"}}


def state():
    """Two nodes of two GPUs; on gpu-0's GPU-b half a GPU by percentage
    and 10 GiB with 30% of the cores; on gpu-1 a pod of two whole GPUs."""
    half = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory-percentage": "50",
            "volcano.sh/vgpu-cores": "50"}
    small = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "10240", "volcano.sh/vgpu-cores": "30"}
    two = {"volcano.sh/vgpu-number": "2", "volcano.sh/vgpu-memory": "32768", "volcano.sh/vgpu-cores": "100"}
    return {"nodes": [node("gpu-0", ["GPU-a", "GPU-b"]), node("gpu-1", ["GPU-c", "GPU-d"])],
            "pods": [pod("half", "gpu-0", half, "GPU-b,NVIDIA,16384,50:"),
                     pod("small", "gpu-0", small, "GPU-b,NVIDIA,10240,30:"),
                     pod("two", "gpu-1", two, "GPU-d,NVIDIA,32768,100:GPU-c,NVIDIA,32768,100:")]}


def test_oracle_pins_the_volcano_version_of_the_cluster():
    versions = dict(line.strip().split("=", 1) for line in open(os.path.join(CLUSTER, "versions.env"))
                    if "=" in line and not line.startswith("#"))
    gomod = open(os.path.join(MODULE, "go.mod")).read()
    assert re.search(r"^\s*volcano\.sh/volcano v" + re.escape(versions["VOLCANO_VERSION"]) + r"$", gomod, re.M), gomod


def test_oracle_accepts_shares_within_the_gpus(oracle):
    r = oracle(state())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "gpu-0 gpu 1 GPU-b: pods 2/10 memory 26624/32768 cores 80/100" in r.stdout, r.stdout
    assert "gpu-1 gpu 0 GPU-c: pods 1/10 memory 32768/32768 cores 100/100" in r.stdout, r.stdout
    assert r.stdout.strip().endswith("vgpu-oracle: ok"), r.stdout


def test_oracle_finds_a_corrupted_annotation(oracle):
    """small's annotation says 60% of the cores where it asked 30%: GPU-b
    is then at 110% and small holds more than it asked."""
    s = copy.deepcopy(state())
    s["pods"][1]["metadata"]["annotations"]["volcano.sh/vgpu-ids-new"] = "GPU-b,NVIDIA,10240,60:"
    r = oracle(s)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FINDING gpu-0 gpu 1 GPU-b is over-committed" in r.stdout, r.stdout
    assert "FINDING t/small container 0 on GPU-b: holds 10240 MiB 60% cores, asked 10240 MiB 30%" in r.stdout, r.stdout


def test_oracle_finds_a_share_on_another_nodes_gpu_and_a_missing_one(oracle):
    s = copy.deepcopy(state())
    s["pods"][2]["metadata"]["annotations"]["volcano.sh/vgpu-ids-new"] = "GPU-a,NVIDIA,32768,100:"
    r = oracle(s)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FINDING t/two container 0: asked 2 GPUs, holds 1" in r.stdout, r.stdout
    assert "FINDING t/two container 0: GPU GPU-a is not on node gpu-1" in r.stdout, r.stdout
