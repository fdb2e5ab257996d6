"""A short chaos run (docs/chaos.md) on the test cluster: about two
minutes of faults drawn from a fixed seed (every kind at least once, the
kill -9 of kube-apiserver included: it is started again with
`ctl start kube-apiserver`, which waits for it to be ready) against Muster
replicas with leader election through the chaos proxy, while a workload of
gangs of the three dialects, single, vGPU and other schedulers' pods
streams in; then a minute with every fault off. The run's own namespace
holds the workload and the Lease; its two vGPU nodes are removed
afterwards.

What must hold is in test/cluster/chaos_invariants.py: no bind that did
not go through the proxy, no node or vGPU over-committed, no gang left
half bound, no write from a replica that lost the Lease, and at the end
every waiting pod says why and no waiting gang fits.
"""

import os

import chaos
from conftest import cluster_dir

SEED = 7
SECONDS = 110


def test_a_short_chaos_run_breaks_no_invariant(cluster, tmp_path):
    c = chaos.Chaos(cluster, cluster_dir(), str(tmp_path / "chaos"), SECONDS, SEED, kill_apiserver=True,
                    quiet=60, short=True)
    rep = c.run()
    text = c.table()
    print(text)
    with open(os.path.join(cluster_dir(), "logs", "chaos-report.txt"), "w") as f:
        f.write(text + "\n")
    fired = c.fired()
    assert all(fired.values()), f"fault kinds that never fired: {[k for k, v in fired.items() if not v]}\n{text}"
    assert rep.count() == 0, text


def test_the_checker_is_no_rubber_stamp(cluster, namespace, tmp_path):
    """Each invariant the chaos run checks, broken on purpose from outside
    Muster (no Muster runs): a pod bound by the admin, with no binding
    through the proxy (a); a node given more GPUs than it has (b); a gang
    left half bound (c); a write through the proxy from a replica that does
    not hold the Lease (d); a waiting pod with no reason and a gang that
    fits (e). The checker must report each."""
    import http.client
    import ssl
    import time

    from chaos_invariants import (Api, Recorder, Report, check_binding, check_capacity, check_end,
                                  check_gangs, check_leadership, holder_timeline, min_members, node_table,
                                  trim_pod)

    api = Api(cluster["SERVER"], cluster["ADMIN_TOKEN"], os.path.join(cluster_dir(), "pki", "ca.crt"))
    p = chaos.Proxy.start(cluster, str(tmp_path / "proxy"))
    rec = Recorder(api, namespace, [namespace])
    rec.start()
    try:
        ns = f"/api/v1/namespaces/{namespace}"
        node = "gpu-0000"

        def pod(name, gpus, node_name=None, gang=None):
            body = chaos.Workload(api, namespace, None, 0, 1).pod(name, gpus=gpus)
            if node_name:
                body["spec"]["nodeName"] = node_name
            if gang:
                body["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = gang
            st, obj = api.request("POST", ns + "/pods", body)
            assert st == 201, obj
            return obj

        # (a): bound by a binding that did not pass the proxy.
        a = pod("unproxied", 1)
        st, _ = api.request("POST", ns + "/pods/unproxied/binding",
                            {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "unproxied", "uid": a["metadata"]["uid"]},
                             "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
        assert st == 201
        # (b): 8 + 4 GPUs on an 8-GPU node (created bound: nothing checks).
        pod("big", 8, node)
        pod("over", 4, node)
        # (c): a gang of 3 with one member bound, for longer than the tolerance.
        st, obj = api.request("POST", f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups",
                              {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                               "metadata": {"name": "half"}, "spec": {"minMember": 3}})
        assert st == 201, obj
        pod("half-0", 0, "cpu-0000", gang="half")
        pod("half-1", 0, gang="half")
        pod("half-2", 0, gang="half")
        # (e): a pod that fits, waiting, with no reason given.
        pod("lonely", 0)
        # (d): the Lease held by replica y, then a write through the proxy from x.
        st, obj = api.request("POST", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
                              {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "muster"},
                               "spec": {"holderIdentity": "muster-y", "leaseDurationSeconds": 6}})
        assert st == 201, obj
        time.sleep(1)
        proxied = Api(p.url, cluster["ADMIN_TOKEN"], p.ca)
        c = http.client.HTTPSConnection(proxied.host, proxied.port, context=ssl.create_default_context(cafile=p.ca))
        c.request("POST", ns + "/events", body=b"{}", headers={"Authorization": "Bearer " + cluster["ADMIN_TOKEN"],
                                                                 "User-Agent": "muster/muster-x",
                                                                 "Content-Type": "application/json"})
        c.getresponse().read()
        time.sleep(chaos.inv.GANG_TOLERANCE + 2)
        log = p.log()
    finally:
        rec.stop()
        p.stop()
    ev = rec.snapshot()
    rep = Report()
    check_binding(rep, ev["pods"], log)
    check_capacity(rep, ev["pods"], node_table(ev["nodes"]))
    check_gangs(rep, ev["pods"], min_members({k: v for k, v in ev.items() if k.startswith("pg-")}), [], {},
                time.time_ns())
    pods_now = {q["uid"]: q for q in map(trim_pod, api.get(ns + "/pods")["items"])}
    nodes_now = node_table([(0, "SYNC", api.get("/api/v1/nodes")["items"])])
    check_end(rep, api, [namespace], pods_now, nodes_now, 128, set())
    check_leadership(rep, log, holder_timeline(ev["leases"], "muster"))
    v = rep.violations
    assert any("unproxied" in str(x) for x in v["a"]), v
    assert any("gpu-0000" in str(x) and "nvidia.com/gpu" in str(x) for x in v["b"]), v
    assert any("half" in str(x) for x in v["c"]), v
    assert any("muster-x" in str(x) and "muster-y" in str(x) for x in v["d"]), v
    assert any("PodScheduled" in str(x) for x in v["e"]) and any("fits but waits" in str(x) for x in v["e"]), v
    api.request("DELETE", ns + "/pods", {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})

