"""Components stopped and started again keep the cluster's data.

These stop the API server and etcd, so they run last (file order)."""

from kubernetes import client
from kubernetes.client.rest import ApiException

from conftest import ctl, wait_for


def configmap(core, ns):
    return core.read_namespaced_config_map("keep", ns).data


def create_keep(core, ns):
    """Create the ConfigMap 'keep'; True once it exists (a retry after a lost
    response finds it there)."""
    try:
        core.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="keep"), data={"k": "v"}), _request_timeout=10
        )
    except ApiException as e:
        if e.status != 409:
            raise
    return True


def unreachable(core):
    try:
        core.list_namespace(_request_timeout=2)
        return False
    except Exception:
        return True


def test_apiserver_restarted_still_has_its_data(core, namespace):
    create_keep(core, namespace)
    ctl("stop", "kube-apiserver")
    assert unreachable(core)
    ctl("start", "kube-apiserver")
    assert wait_for("configmap back", lambda: configmap(core, namespace)) == {"k": "v"}


def test_whole_control_plane_restarted_reads_its_data_back_from_etcd(core, namespace):
    """Both stopped: the API server's watch cache is gone, so what it serves
    afterwards was read back from etcd's data directory."""
    create_keep(core, namespace)
    ctl("stop", "kube-apiserver")
    ctl("stop", "etcd")
    ctl("start", "etcd")
    ctl("start", "kube-apiserver")
    assert wait_for("configmap back", lambda: configmap(core, namespace)) == {"k": "v"}


def test_writes_fail_while_etcd_is_down_and_work_after(core, namespace):
    ctl("stop", "etcd")
    try:
        core.create_namespaced_config_map(
            namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="lost")), _request_timeout=5
        )
        wrote = True
    except Exception:
        wrote = False
    ctl("start", "etcd")
    assert not wrote, "a write succeeded with etcd stopped"
    wait_for("writes accepted again", lambda: create_keep(core, namespace), timeout=60)
    assert configmap(core, namespace) == {"k": "v"}
