"""Every version of every pod of a namespace, recorded by a watch, for
tests that must see short-lived states (a pod bound for a moment, a
condition written and overwritten)."""

import threading
import time

from kubernetes import watch
from kubernetes.client.rest import ApiException


def condition(p, kind="PodScheduled"):
    return next((c for c in (p.status.conditions or []) if c.type == kind), None)


class History:
    """Every version of every pod of a namespace, from a watch started
    before the test creates anything: name -> [(time.time(), V1Pod)] in
    the order the server sent them (ADDED, MODIFIED, DELETED)."""

    def __init__(self, core, ns):
        self.core, self.ns = core, ns
        self.lock = threading.Lock()
        self.versions = {}
        self.deleted = {}  # name -> time.time() of its DELETED event
        self.events = []  # (kind, V1Pod) in the order the server sent them, all pods
        self.stopped = False
        listed = core.list_namespaced_pod(ns)
        self.rv = listed.metadata.resource_version
        for p in listed.items:
            self._add("ADDED", p)
        self.watch = watch.Watch()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _add(self, kind, p):
        with self.lock:
            self.versions.setdefault(p.metadata.name, []).append((time.time(), p))
            self.events.append((kind, p))
            if kind == "DELETED":
                self.deleted[p.metadata.name] = time.time()

    def _run(self):
        while not self.stopped:
            try:
                for ev in self.watch.stream(self.core.list_namespaced_pod, self.ns, resource_version=self.rv,
                                            timeout_seconds=30):
                    obj = ev["object"]
                    if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self.rv = obj.metadata.resource_version
                        self._add(ev["type"], obj)
                    if self.stopped:
                        return
            except ApiException as e:
                if e.status == 410:  # too old to resume: start again from a fresh list
                    listed = self.core.list_namespaced_pod(self.ns)
                    self.rv = listed.metadata.resource_version
                    for p in listed.items:
                        self._add("MODIFIED", p)
                time.sleep(0.2)
            except Exception:  # the watch ends now and then; resume where it was
                time.sleep(0.2)

    def stop(self):
        self.stopped = True
        self.watch.stop()

    def of(self, name):
        with self.lock:
            return list(self.versions.get(name, []))

    def ever(self, name, pred):
        """The first version of pod `name` for which pred holds, else None."""
        return next((p for _, p in self.of(name) if pred(p)), None)

    def bound_at(self, name):
        """time.time() at which the watch first showed the pod with a node."""
        return next((t for t, p in self.of(name) if p.spec.node_name), None)

    def nodes_of(self, name):
        return {p.spec.node_name for _, p in self.of(name) if p.spec.node_name}

    def story(self, names=None):
        """What happened to each pod, for failure messages: the nodes it
        was bound to, its PodScheduled messages, whether it was deleted."""
        with self.lock:
            names = sorted(self.versions) if names is None else names
        return "\n".join(f"  {n}: nodes {sorted(self.nodes_of(n))}, deleted {n in self.deleted}, "
                         f"messages {self.messages(n)}" for n in names)

    def messages(self, name):
        """Every distinct PodScheduled message the pod had, in order."""
        out = []
        for _, p in self.of(name):
            c = condition(p)
            if c and c.message and c.message not in out:
                out.append(c.message)
        return out


class Modified:
    """How many times the server sent MODIFIED for each object of a
    namespaced list (`list_fn(*args)`), from a watch started now, in a
    thread: name -> count."""

    def __init__(self, list_fn, *args):
        self.lock = threading.Lock()
        self.count = {}
        self.stopped = False
        listed = list_fn(*args)
        meta = listed["metadata"] if isinstance(listed, dict) else listed.metadata
        self.rv = meta["resourceVersion"] if isinstance(meta, dict) else meta.resource_version
        self.watch = watch.Watch()
        self.thread = threading.Thread(target=self._run, args=(list_fn, args), daemon=True)
        self.thread.start()

    def _run(self, list_fn, args):
        while not self.stopped:
            try:
                for ev in self.watch.stream(list_fn, *args, resource_version=self.rv, timeout_seconds=30):
                    obj = ev["object"]
                    meta = obj["metadata"] if isinstance(obj, dict) else obj.metadata
                    name = meta["name"] if isinstance(meta, dict) else meta.name
                    self.rv = meta["resourceVersion"] if isinstance(meta, dict) else meta.resource_version
                    if ev["type"] == "MODIFIED":
                        with self.lock:
                            self.count[name] = self.count.get(name, 0) + 1
                    if self.stopped:
                        return
            except Exception:  # the watch ends now and then; resume where it was
                time.sleep(0.2)

    def stop(self):
        self.stopped = True
        self.watch.stop()
        with self.lock:
            return dict(self.count)
