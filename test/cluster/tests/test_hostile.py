"""What a tenant can create must not stop scheduling (issue 14).

- A pod that asks for 60 extended resources no node offers cannot fill
  Muster's resource table: a node that then arrives with a new resource
  (a MIG profile) is scheduled onto, both by a pod created after it and by
  one that was already waiting for that resource.
- A value with a newline (a Volcano group-name annotation, which Muster
  quotes when the gang waits) cannot forge a log line, in text or JSON logs.
- 500 idle and slowloris clients that reconnect whenever they are closed
  cannot keep the probes from answering: /healthz answers within 1 s, on
  the probe port and on the debug port, to a client from another address
  (127.0.0.2 stands for the kubelet's node address), and Muster keeps
  scheduling.

Each test makes its own namespace (conftest `namespace`) and removes the
node it adds.
"""

import json
import re
import selectors
import socket
import threading
import time

import pytest
from kubernetes.client.rest import ApiException

from conftest import Not, until
from nodes import FAKE_ANNOTATION

MIG = "nvidia.com/mig-1g.10gb"
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


class Siege:
    """Connections to (host, port) pairs from 127.0.0.1, each either idle
    (sends nothing) or slowloris (one byte of a never-ending head per
    second), reopened as soon as the server closes them, in one thread."""

    HEAD = b"GET /debug/gangs HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100000

    def __init__(self, targets):
        self.targets = targets  # [(port, slow), ...] one per connection
        self.sel = selectors.DefaultSelector()
        self.stop = threading.Event()
        self.reopened = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open(self, port, slow):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        self.sel.register(s, selectors.EVENT_READ, [port, slow, 0])

    def run(self):
        for port, slow in self.targets:
            self.open(port, slow)
        last = time.monotonic()
        while not self.stop.is_set():
            for key, _ in self.sel.select(timeout=0.1):
                try:
                    data = key.fileobj.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:  # closed by the server: come back at once
                    port, slow, _ = key.data
                    self.sel.unregister(key.fileobj)
                    key.fileobj.close()
                    self.reopened += 1
                    self.open(port, slow)
            if time.monotonic() - last >= 1:
                last = time.monotonic()
                for key in list(self.sel.get_map().values()):
                    port, slow, sent = key.data
                    if slow and sent < len(self.HEAD):
                        try:
                            key.fileobj.send(self.HEAD[sent:sent + 1])
                            key.data[2] += 1
                        except OSError:
                            pass
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)


def probe(port, path="/healthz", source="127.0.0.2", timeout=1.0):
    """(status line, seconds) of one GET from `source`, or (error, seconds)."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0)) as s:
            s.settimeout(max(0.01, timeout - (time.monotonic() - t0)))
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            return data.split(b"\r\n")[0].decode(errors="replace"), time.monotonic() - t0
    except OSError as e:
        return f"{type(e).__name__}: {e}", time.monotonic() - t0


# The Deployment's probes give up after this (timeoutSeconds in
# manifests/); how fast they are answered is printed, not asserted.
PROBE_TIMEOUT_S = 5


def test_probes_answer_while_500_idle_and_slowloris_clients_hold_connections(core, namespace, start_muster):
    m = start_muster("--probe-addr", "127.0.0.1:0")
    debug, probes = m.port(), m.port("probe")
    until(m, "ready", lambda: probe(probes, "/readyz", timeout=5)[0].startswith("HTTP/1.1 200") or Not("not ready"))
    # 400 at the debug port, 100 at the probe port; half of each slowloris.
    targets = [(debug, i % 2 == 0) for i in range(400)] + [(probes, i % 2 == 0) for i in range(100)]
    answers = []
    with Siege(targets) as siege:
        time.sleep(2)  # every slot taken, the slow heads started
        core.create_namespaced_pod(namespace, pod("during", {"cpu": "100m"}))
        # Past the head deadline (5 s debug, 2 s probes): slots freed by
        # deadlines are taken again by the siege.
        end = time.monotonic() + 12
        while time.monotonic() < end:
            for port in (probes, debug):
                answers.append((port, *probe(port, timeout=PROBE_TIMEOUT_S)))
            time.sleep(0.5)
        bound = until(m, "a pod bound during the siege", lambda: node_of(core, namespace, "during"), timeout=30)
        reopened = siege.reopened
    m.check()
    slowest = max(secs for _, _, secs in answers)
    print(f"{len(answers)} probes, slowest {slowest * 1000:.1f} ms; siege reopened {reopened} connections")
    bad = [(p, status, round(secs, 3)) for p, status, secs in answers if not status.startswith("HTTP/1.1 200")]
    assert not bad, f"probes that failed within {PROBE_TIMEOUT_S} s (of {len(answers)}): {bad}"
    assert bound
    assert reopened > 0, "the siege was never closed out: the deadlines did not fire"
    with open(m.log, errors="replace") as f:
        log = f.read()
    assert "closed or refused to keep room" in log
    # Room is made with one line per period, not one per connection.
    assert log.count("closed or refused to keep room") < 20
