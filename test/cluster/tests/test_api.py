"""PodGroup CRDs of both dialects, Kubernetes' own Workload and PodGroup
(scheduling.k8s.io/v1beta1) as the Job controller makes them, and RBAC for a
client-certificate user."""

import json
import os

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from conftest import Not, api_client, cluster_dir, wait_for


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


def raw_pods(core, ns, selector):
    """The pods as the server sends them: the Python client's models (35.x)
    predate pod.spec.schedulingGroup and would drop it."""
    r = core.list_namespaced_pod(ns, label_selector=selector, _preload_content=False)
    return json.loads(r.data)["items"]


def test_job_controller_makes_a_basic_workload_and_podgroup_for_a_plain_job(admin, core, namespace):
    """The control plane serves scheduling.k8s.io/v1beta1 and runs the Job
    controller with WorkloadWithJob (test/cluster/ctl): a Job that says
    nothing about scheduling gets a Workload with one Basic PodGroupTemplate
    and a PodGroup made from it, both controlled by the Job, and each pod
    names that PodGroup in spec.schedulingGroup.podGroupName. So every
    plain Job of the other tests has such a PodGroup too. No scheduler serves the pods' schedulerName, so they
    stay pending."""
    api = client.CustomObjectsApi(admin)
    job = client.BatchV1Api(admin).create_namespaced_job(namespace, {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "plain"},
        "spec": {"parallelism": 2, "completions": 2, "template": {"spec": {
            "schedulerName": "nobody", "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}})

    def made():
        workloads = api.list_namespaced_custom_object("scheduling.k8s.io", "v1beta1", namespace, "workloads")["items"]
        groups = api.list_namespaced_custom_object("scheduling.k8s.io", "v1beta1", namespace, "podgroups")["items"]
        pods = raw_pods(core, namespace, "batch.kubernetes.io/job-name=plain")
        if len(workloads) != 1 or len(groups) != 1 or len(pods) != 2:
            return Not(f"workloads {len(workloads)}, PodGroups {len(groups)}, pods {len(pods)}")
        return workloads[0], groups[0], pods

    workload, group, pods = wait_for("the Job's Workload, PodGroup and pods", made, timeout=30)
    controller = {"apiVersion": "batch/v1", "kind": "Job", "name": "plain", "uid": job.metadata.uid,
                  "controller": True, "blockOwnerDeletion": True}
    assert controller in workload["metadata"]["ownerReferences"]
    assert workload["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "plain"}
    [template] = workload["spec"]["podGroupTemplates"]
    assert template["schedulingPolicy"] == {"basic": {}}

    assert controller in group["metadata"]["ownerReferences"]
    assert group["spec"]["schedulingPolicy"] == {"basic": {}}
    assert group["spec"]["workloadRef"] == {"workloadName": workload["metadata"]["name"],
                                            "templateName": template["name"]}
    for p in pods:
        assert p["spec"].get("schedulingGroup") == {"podGroupName": group["metadata"]["name"]}, p["metadata"]["name"]
