"""Fixtures for tests against the local control plane (test/cluster/ctl).

The cluster is started by test/cluster/run-tests before pytest runs; these
fixtures only read where it is. Everything is observed through the official
Kubernetes Python client, never through Muster's own code.
"""

import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest
from kubernetes import client, config

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = os.path.dirname(HERE)
TOP = os.path.dirname(os.path.dirname(CLUSTER))
sys.path.insert(0, CLUSTER)


def cluster_dir():
    return os.environ.get("MUSTER_CLUSTER_DIR", os.path.join(TOP, ".cluster"))


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


@pytest.fixture(scope="session")
def custom(admin):
    return client.CustomObjectsApi(admin)


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


class Not:
    """A falsy answer for wait_for that says why; shown when it times out."""

    def __init__(self, why):
        self.why = why

    def __bool__(self):
        return False

    def __repr__(self):
        return self.why


def until(muster, what, fn, timeout=30):
    """wait_for, failing at once if Muster has exited."""

    def probe():
        muster.check()
        return fn()

    return wait_for(what, probe, timeout)


class Muster:
    """A running `muster run`, its log file, and a check that it still runs."""

    def __init__(self, proc, log):
        self.proc = proc
        self.log = log
        self._url = None

    def port(self, server="debug", timeout=30):
        """The port its debug (or "probe") server got: it listens on port 0
        and logs the port it got."""

        def found():
            self.check()
            with open(self.log, errors="replace") as f:
                m = re.search(server + r" server on \S+ \(port (\d+)\)", f.read())
            return m and int(m.group(1))

        return wait_for(f"the {server} server's port in {self.log}", found, timeout)

    def debug_url(self, timeout=30):
        """http://127.0.0.1:PORT of its debug server."""
        if not self._url:
            self._url = "http://127.0.0.1:%d" % self.port("debug", timeout)
        return self._url

    def tail(self, lines=30):
        with open(self.log, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def check(self):
        """Fail the test at once if Muster has exited."""
        if self.proc.poll() is not None:
            pytest.fail(f"muster exited with status {self.proc.returncode}; last lines of {self.log}:\n{self.tail()}")

    def stop(self, timeout=15):
        """SIGTERM, then the exit status (None if it had to be killed)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


def launch(cluster, request, extra=(), tag=""):
    """`muster run` (the binary in $BUILD, default build/) with the cluster's
    admin kubeconfig, test/cluster/scheduler-config.yaml and extra flags.
    Its stderr goes to $MUSTER_CLUSTER_DIR/logs/muster-<test><tag>.log.
    Every run checks, each cycle, the pod table the planner keeps across
    cycles against a rebuild (--check-state); stopped_cleanly() fails the
    test on any difference it logged."""
    binary = os.path.join(TOP, os.environ.get("BUILD", "build"), "muster")
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is missing: run make first")
    logs = os.path.join(cluster_dir(), "logs")
    os.makedirs(logs, exist_ok=True)
    log = os.path.join(logs, "muster-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name + tag) + ".log")
    config_file = os.path.join(CLUSTER, "scheduler-config.yaml")
    argv = [binary, "run", "--kubeconfig", cluster["KUBECONFIG"], "--config", config_file,
            "--debug-addr", "127.0.0.1:0", "--check-state", *extra]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    return Muster(proc, log)


def kept_state_held(m):
    """Fail if Muster (run with --check-state) logged that the pod table
    or the gangs' facts its planner keeps across cycles differed from a
    rebuild."""
    with open(m.log, errors="replace") as f:
        unlike = [line for line in f if "check-state:" in line]
    assert not unlike, f"the planner's kept state differed from a rebuild ({m.log}):\n{''.join(unlike[:5])}"


def stopped_cleanly(m):
    status = m.stop()
    assert status == 0, f"muster exited with {status} on SIGTERM (None: killed after 15 s); {m.log}:\n{m.tail()}"
    kept_state_held(m)


@pytest.fixture
def muster(cluster, request):
    """A Muster (launch()) for one test. Afterwards it gets SIGTERM, on
    which it must exit 0 within 15 s."""
    m = launch(cluster, request)
    yield m
    stopped_cleanly(m)


@pytest.fixture
def start_muster(cluster, request):
    """start_muster(*flags): a Muster with extra flags (launch()), for tests
    that need other scheduler names; each is stopped as `muster` is."""
    started = []

    def start(*extra):
        started.append(launch(cluster, request, extra, tag=f"-{len(started)}" if started else ""))
        return started[-1]

    yield start
    for m in started:
        stopped_cleanly(m)


@pytest.fixture
def proxy(cluster, request):
    """A chaos proxy (test/cluster/chaos.py) in front of the cluster's API
    server, its files in $MUSTER_CLUSTER_DIR/chaos/<test>; stopped
    afterwards. Run Muster through it with
    launch(dict(cluster, KUBECONFIG=proxy.kubeconfig), request)."""
    import chaos

    d = os.path.join(cluster_dir(), "chaos", re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name))
    p = chaos.Proxy.start(cluster, d)
    yield p
    p.stop()
