"""The chaos proxy (test/cluster/chaosproxy, docs/chaos.md) in front of the
real API server: clients work through it, and each fault does what it says.
Everything is observed from outside: kubectl and the Python client through
the proxy, the admin kubeconfig straight to the API server, the proxy's log.
"""

import os
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

import chaos
from conftest import api_client, wait_for


def pod(name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "busybox"}]}}


@pytest.fixture
def via(proxy):
    """CoreV1Api through the proxy."""
    return client.CoreV1Api(api_client(proxy.kubeconfig))


def alpn(url, offer):
    host, port = urllib.parse.urlparse(url).netloc.rsplit(":", 1)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(offer)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname=host) as t:
            return t.selected_alpn_protocol()


def test_kubectl_and_the_python_client_work_through_it(cluster, proxy, via, namespace, core):
    core.create_namespaced_pod(namespace, pod("p0"))
    out = subprocess.run([os.path.join(cluster["BIN"], "kubectl"), "--kubeconfig", proxy.kubeconfig,
                          "-n", namespace, "get", "pods", "-o", "name"],
                         check=True, capture_output=True, text=True).stdout
    assert out.split() == ["pod/p0"], out
    assert [p.metadata.name for p in via.list_namespaced_pod(namespace).items] == ["p0"]
    log = [e for e in proxy.log() if e["path"] == f"/api/v1/namespaces/{namespace}/pods"]
    assert len(log) == 2 and all(e["status"] == 200 and e["upstream_status"] == 200 for e in log), log
    (kubectl,) = [e for e in log if e["user_agent"].startswith("kubectl")]
    assert kubectl["proto"] == "HTTP/2.0", kubectl  # Go's client negotiates h2


def test_a_status_rule_answers_without_forwarding(proxy, via, namespace, core):
    path = f"/api/v1/namespaces/{namespace}/pods"
    proxy.rules([{"id": "nope", "method": "POST", "path": "^" + path + "$", "action": {"status": 503}},
                 {"id": "slow", "method": "POST", "path": "^" + path + "$", "fraction": 0,
                  "action": {"status": 429}}])
    with pytest.raises(ApiException) as e:
        via.create_namespaced_pod(namespace, pod("p1"))
    assert e.value.status == 503 and '"reason":"ServiceUnavailable"' in e.value.body, e.value.body
    assert not core.list_namespaced_pod(namespace).items  # never reached the server
    assert via.list_namespaced_pod(namespace).items == []  # GET is not matched
    proxy.rules([{"id": "busy", "method": "POST", "path": "^" + path + "$", "count": 1,
                  "action": {"status": 429}}])
    with pytest.raises(ApiException) as e:
        via.create_namespaced_pod(namespace, pod("p1"))
    assert e.value.status == 429 and e.value.headers.get("Retry-After") == "1", e.value.headers
    via.create_namespaced_pod(namespace, pod("p1"))  # count 1: spent
    st = proxy.stats()
    assert st["rules"] == {"nope": 1, "busy": 1} and st["actions"] == {"status_503": 1, "status_429": 1}, st
    posts = [e for e in proxy.log() if e["method"] == "POST"]
    assert [(e["rule"], e["status"], e["upstream_status"]) for e in posts] == \
        [("nope", 503, 0), ("busy", 429, 0), ("", 201, 201)], posts
    assert '"name":"p1"' in posts[-1]["body"].replace(" ", "")


def test_a_stalled_pod_watch_holds_events_then_releases_them(proxy, via, namespace, core):
    proxy.rules([{"id": "lag", "path": f"^/api/v1/namespaces/{namespace}/pods$", "watch": True,
                  "action": {"stall": True}}])
    seen = []
    rv = via.list_namespaced_pod(namespace).metadata.resource_version

    def watcher():
        w = watch.Watch()
        for ev in w.stream(via.list_namespaced_pod, namespace, resource_version=rv, timeout_seconds=60,
                           _request_timeout=70):
            seen.append((time.monotonic(), ev["type"], ev["object"].metadata.name))
            if len(seen) >= 2:
                w.stop()

    t = threading.Thread(target=watcher, daemon=True)
    t.start()
    wait_for("the watch through the proxy", lambda: any(e["watch"] for e in proxy.log()), timeout=10)
    core.create_namespaced_pod(namespace, pod("w1"))
    core.create_namespaced_pod(namespace, pod("w2"))
    time.sleep(3)
    assert seen == [], seen  # held
    released = time.monotonic()
    proxy.clear()
    t.join(15)
    assert [(k, n) for _, k, n in seen] == [("ADDED", "w1"), ("ADDED", "w2")], seen
    assert all(ts - released < 5 for ts, _, _ in seen), seen
    assert proxy.stats()["actions"] == {"stall": 1}


def test_http1_offers_only_http_1_1(cluster, proxy, tmp_path):
    offer = ["h2", "http/1.1"]
    assert alpn(proxy.url, offer) == "h2"
    proxy.http1(True)
    assert alpn(proxy.url, offer) == "http/1.1"
    proxy.http1(False)
    assert alpn(proxy.url, offer) == "h2"
    p1 = chaos.Proxy.start(cluster, str(tmp_path / "h1"), http1=True)
    try:
        assert alpn(p1.url, offer) == "http/1.1"
        out = subprocess.run(["curl", "-sv", "--http2", "--cacert", p1.ca, "-H",
                              f"Authorization: Bearer {cluster['ADMIN_TOKEN']}", p1.url + "/version"],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert "ALPN: server accepted http/1.1" in out.stderr or "ALPN, server accepted to use http/1.1" \
            in out.stderr, out.stderr
        assert '"gitVersion"' in out.stdout, out.stdout
        assert {e["proto"] for e in p1.log()} == {"HTTP/1.1"}
    finally:
        p1.stop()


def test_lose_answer_applies_the_write_and_drops_the_connection(proxy, via, namespace, core):
    proxy.rules([{"id": "lost", "method": "POST", "path": f"^/api/v1/namespaces/{namespace}/pods$",
                  "count": 1, "action": {"lose_answer": True}}])
    with pytest.raises(Exception) as e:
        via.create_namespaced_pod(namespace, pod("l1"), _request_timeout=20)
    assert not isinstance(e.value, ApiException), e.value  # no answer at all
    assert [p.metadata.name for p in core.list_namespaced_pod(namespace).items] == ["l1"]
    (entry,) = [x for x in proxy.log() if x["rule"] == "lost"]
    assert entry["upstream_status"] == 201 and entry["status"] == 0, entry


def test_reset_and_reset_connections_drop_clients(proxy, via, namespace):
    # urllib3 retries a GET whose connection dropped, so every try is reset.
    proxy.rules([{"id": "rst", "method": "GET", "path": f"^/api/v1/namespaces/{namespace}/pods$",
                  "action": {"reset": True}}])
    with pytest.raises(Exception) as e:
        via.list_namespaced_pod(namespace, _request_timeout=10)
    assert not isinstance(e.value, ApiException), e.value
    assert proxy.stats()["actions"]["reset"] >= 1
    proxy.clear()
    assert via.list_namespaced_pod(namespace).items == []
    closed = proxy.reset_connections()
    assert closed >= 1
    assert via.list_namespaced_pod(namespace).items == []  # the client reconnects
