"""PodGroup CRDs of both dialects, and RBAC for a client-certificate user."""

import json
import os

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from conftest import api_client, cluster_dir


def podgroup(group, version, spec):
    return {"apiVersion": f"{group}/{version}", "kind": "PodGroup", "metadata": {"name": "pg"}, "spec": spec}


DIALECTS = [
    # (group, version, valid spec, invalid spec and why)
    ("scheduling.x-k8s.io", "v1alpha1", {"minMember": 4, "scheduleTimeoutSeconds": 60}, {"minMember": 0}),
    ("scheduling.volcano.sh", "v1beta1", {"minMember": 4, "queue": "default"}, {"minMember": "four"}),
]


@pytest.mark.parametrize("group,version,valid,invalid", DIALECTS)
def test_podgroup_crd_accepts_valid_and_rejects_invalid(admin, namespace, group, version, valid, invalid):
    api = client.CustomObjectsApi(admin)
    created = api.create_namespaced_custom_object(group, version, namespace, "podgroups", podgroup(group, version, valid))
    assert created["spec"]["minMember"] == 4
    got = api.get_namespaced_custom_object(group, version, namespace, "podgroups", "pg")
    assert got["spec"] == created["spec"]
    bad = podgroup(group, version, invalid)
    bad["metadata"]["name"] = "bad"
    with pytest.raises(ApiException) as e:
        api.create_namespaced_custom_object(group, version, namespace, "podgroups", bad)
    assert e.value.status == 422
    assert "minMember" in e.value.body


def test_rbac_denies_a_client_certificate_user_without_rights(core, namespace):
    nobody = client.CoreV1Api(api_client(os.path.join(cluster_dir(), "users", "nobody.kubeconfig")))
    with pytest.raises(ApiException) as e:
        nobody.list_namespaced_pod(namespace)
    # 403, not 401: the certificate authenticated the user, RBAC refused it.
    assert e.value.status == 403
    assert 'User "muster-nobody" cannot list resource "pods"' in json.loads(e.value.body)["message"]
    assert core.list_namespaced_pod(namespace).items == []  # the admin may
