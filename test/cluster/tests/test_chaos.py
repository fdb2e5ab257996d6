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
