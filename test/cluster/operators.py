"""The real Kubeflow operators against the local cluster (test/cluster/ctl).

Binaries and CRDs come from test/cluster/build-operators (built from the Go
module proxy, pinned in versions.env). Each operator runs as a plain process
with the cluster's admin kubeconfig, logging to
$MUSTER_CLUSTER_DIR/logs/<name>.log:

    install_crds(kubeconfig)                      PyTorchJob v1, MPIJob v2beta1
    op = Operator.training("volcano")             or "scheduler-plugins", or a
                                                  scheduler name (then pods get
                                                  schedulerName: that name)
    op = Operator.mpi("volcano")                  or "scheduler-plugins"
    op.wait_ready(); ...; op.stop()               or: with Operator...(...) as op:

Neither operator can put every listener on loopback: training-operator's
webhook server listens on all interfaces (only its port is a flag) and
mpi-operator's health server on :8080, fixed. Nothing calls either (no
webhook configuration is installed), so both only need to be free.

Neither exits 0 on SIGTERM: training-operator v1.9.4 panics in main (close
of a closed channel, status 2), mpi-operator dies in klog.Fatal "Leader
election stopped" (status 255). Both delete a job's PodGroup once the job
has finished.
"""

import functools
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

CLUSTER = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(CLUSTER))

CRDS = ("crd/pytorchjobs.kubeflow.org", "crd/mpijobs.kubeflow.org")
# training-operator's cert rotator waits for tls.crt at this fixed path (a
# constant in its pkg/cert), and its webhook server reads
# $TMPDIR/k8s-webhook-server/serving-certs; with TMPDIR=/tmp both are here.
WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
MPI_HEALTH_PORT = 8080  # mpi-operator's, not configurable
MPI_LOCK_NAMESPACE = "mpi-operator"


def _out(*argv, **kw):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True, **kw).stdout.strip()


@functools.cache
def _kubectl_path():
    return os.path.join(_out(os.path.join(CLUSTER, "build"), "--bindir"), "kubectl")


def kubectl(kubeconfig, *args, input=None):
    return _out(_kubectl_path(), "--kubeconfig", kubeconfig, *args, input=input)


def install_crds(kubeconfig):
    """Apply the PyTorchJob and MPIJob CRDs and wait until they are served.
    Server-side: they are too big for kubectl's last-applied annotation."""
    crds = _out(os.path.join(CLUSTER, "build-operators"), "--crds")
    kubectl(kubeconfig, "apply", "--server-side", "-f", crds)
    # Polled here, not with `kubectl wait` or a jsonpath filter: both fail
    # outright on a CRD whose status has no conditions yet, which is how
    # these big ones start out.
    deadline = time.monotonic() + 60
    while not all(
        any(c["type"] == "Established" and c["status"] == "True" for c in json.loads(line or "null") or [])
        for line in kubectl(kubeconfig, "get", *CRDS, "-o",
                            'jsonpath={range .items[*]}{.status.conditions}{"\\n"}{end}').split("\n")
    ):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{', '.join(CRDS)} not Established after 60s")
        time.sleep(0.2)


def cluster_dir():
    return os.environ.get("MUSTER_CLUSTER_DIR", os.path.join(TOP, ".cluster"))


def read_env(directory):
    with open(os.path.join(directory, "cluster.env")) as f:
        return dict(line.strip().partition("=")[::2] for line in f if "=" in line)


def free_ports(n):
    """n distinct free loopback ports (all bound at once, then released)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _apply(kubeconfig, *objects):
    kubectl(kubeconfig, "apply", "--server-side", "-f", "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def _namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _webhook_certs():
    """A self-signed serving certificate in WEBHOOK_CERT_DIR, made once and
    shared by every training-operator (nothing ever connects to it)."""
    if all(os.path.exists(os.path.join(WEBHOOK_CERT_DIR, f)) for f in ("tls.crt", "tls.key")):
        return
    os.makedirs(WEBHOOK_CERT_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WEBHOOK_CERT_DIR) as tmp:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
                        "-subj", "/CN=training-operator.kubeflow.svc",
                        "-keyout", os.path.join(tmp, "tls.key"), "-out", os.path.join(tmp, "tls.crt")],
                       check=True, capture_output=True)
        # Key first: the rotator only looks for tls.crt.
        for f in ("tls.key", "tls.crt"):
            os.replace(os.path.join(tmp, f), os.path.join(WEBHOOK_CERT_DIR, f))


class Operator:
    """One operator process. Use Operator.training or Operator.mpi."""

    def __init__(self, name, argv, env, ready, directory):
        logs = os.path.join(directory, "logs")
        os.makedirs(logs, exist_ok=True)
        self.name = name
        self.log = os.path.join(logs, name + ".log")
        self._ready = ready
        with open(self.log, "ab") as out:
            self._start = out.tell()  # the log is appended to: readiness counts from here
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env)

    @staticmethod
    def _setup(directory):
        directory = directory or cluster_dir()
        bindir = _out(os.path.join(CLUSTER, "build-operators"))  # builds only if missing
        kubeconfig = read_env(directory)["KUBECONFIG"]
        # Nothing from the caller's environment may redirect the operator: a
        # KUBEFLOW_NAMESPACE would scope it to one namespace.
        env = {k: v for k, v in os.environ.items() if k not in ("KUBEFLOW_NAMESPACE", "MY_POD_NAMESPACE")}
        env.update(KUBECONFIG=kubeconfig, TMPDIR="/tmp")
        return directory, bindir, kubeconfig, env

    @classmethod
    def training(cls, gang_scheduler_name, name="training-operator", schemes=("pytorchjob",), namespace=None,
                 directory=None):
        """training-operator with --gang-scheduler-name (volcano,
        scheduler-plugins, or any other name: treated as scheduler-plugins
        with that schedulerName). Only `schemes` run: every other job kind
        would need its CRD installed, and its MPIJob v1 CRD clashes with
        mpi-operator's v2beta1 one. With `namespace` it watches only that
        one, so two (say, one per gang dialect) can run side by side."""
        directory, bindir, kubeconfig, env = cls._setup(directory)
        # Its cert rotator fails the process unless the Secret it fills
        # already exists, in namespace kubeflow, and tls.crt is on disk.
        secret = name + "-webhook-cert"
        _apply(kubeconfig, _namespace("kubeflow"),
               {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret, "namespace": "kubeflow"}})
        _webhook_certs()
        metrics, probe, webhook = free_ports(3)
        argv = [os.path.join(bindir, "training-operator"), "--kubeconfig", kubeconfig,
                "--gang-scheduler-name", gang_scheduler_name,
                "--leader-elect=false",
                "--metrics-bind-address", f"127.0.0.1:{metrics}",
                "--health-probe-bind-address", f"127.0.0.1:{probe}",
                "--webhook-server-port", str(webhook), "--webhook-secret-name", secret]
        argv += [f"--enable-scheme={s}" for s in schemes]
        if namespace:
            argv += ["--namespace", namespace]
        # Ready once its certificates are in place; the controllers start
        # right after that.
        return cls(name, argv, env, f"http://127.0.0.1:{probe}/readyz", directory)

    @classmethod
    def mpi(cls, gang_scheduling, name="mpi-operator", directory=None):
        """mpi-operator with --gang-scheduling (volcano or scheduler-plugins).
        Leader election cannot be turned off, so it holds a Lease in namespace
        mpi-operator; a stale one from a previous process is deleted first
        (else the new one waits out its 15 s). One at a time per machine:
        its health server is always on :8080."""
        directory, bindir, kubeconfig, env = cls._setup(directory)
        with socket.socket() as s:
            try:
                s.bind(("", MPI_HEALTH_PORT))
            except OSError:
                raise RuntimeError(f"port {MPI_HEALTH_PORT} is busy: mpi-operator's health server needs it")
        _apply(kubeconfig, _namespace(MPI_LOCK_NAMESPACE))
        kubectl(kubeconfig, "delete", "lease", "-n", MPI_LOCK_NAMESPACE, "mpi-operator", "--ignore-not-found")
        argv = [os.path.join(bindir, "mpi-operator"), "--kubeConfig", kubeconfig,
                "--gang-scheduling", gang_scheduling, "--lock-namespace", MPI_LOCK_NAMESPACE,
                "--monitoring-port=0"]  # 0: no metrics server
        # It logs this once it leads and its informers have synced.
        return cls(name, argv, env, re.compile(r"Started workers"), directory)

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            if self._is_ready():
                return self
            time.sleep(0.2)
        raise TimeoutError(f"{self.name} not ready after {timeout}s; last lines of {self.log}:\n{self.tail()}")

    def _is_ready(self):
        if isinstance(self._ready, str):
            try:
                with urllib.request.urlopen(self._ready, timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False
        with open(self.log, "rb") as f:
            f.seek(self._start)
            return bool(self._ready.search(f.read().decode(errors="replace")))

    def tail(self, lines=30):
        with open(self.log, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def check(self):
        """Raise at once if the operator has exited."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited with status {self.proc.returncode}; "
                               f"last lines of {self.log}:\n{self.tail()}")

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

    def __enter__(self):
        return self.wait_ready()

    def __exit__(self, *exc):
        self.stop()
