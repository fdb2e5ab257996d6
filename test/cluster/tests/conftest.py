"""Fixtures for tests against the local control plane (test/cluster/ctl).

The cluster is started by test/cluster/run-tests before pytest runs; these
fixtures only read where it is. Everything is observed through the official
Kubernetes Python client, never through Muster's own code.
"""

import os
import subprocess
import sys
import time
import uuid

import pytest
from kubernetes import client, config

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = os.path.dirname(HERE)
sys.path.insert(0, CLUSTER)


def cluster_dir():
    top = os.path.dirname(os.path.dirname(CLUSTER))
    return os.environ.get("MUSTER_CLUSTER_DIR", os.path.join(top, ".cluster"))


def read_env():
    env = {}
    with open(os.path.join(cluster_dir(), "cluster.env")) as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            env[key] = value
    return env


@pytest.fixture(scope="session")
def cluster():
    return read_env()


def api_client(kubeconfig):
    return config.new_client_from_config(config_file=kubeconfig)


@pytest.fixture(scope="session")
def admin(cluster):
    return api_client(cluster["KUBECONFIG"])


@pytest.fixture(scope="session")
def core(admin):
    return client.CoreV1Api(admin)


@pytest.fixture
def namespace(core):
    """A fresh namespace per test, deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)


def ctl(*args):
    subprocess.run([os.path.join(CLUSTER, "ctl"), *args], check=True, env=dict(os.environ))


def wait_for(what, fn, timeout=60, interval=0.2):
    """Poll fn() until it returns a truthy value; fail with `what` on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except Exception as e:  # the server may be restarting
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
