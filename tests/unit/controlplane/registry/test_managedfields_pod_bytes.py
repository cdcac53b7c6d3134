"""The bytes of a realistic pod's managedFields, pinned: a create by kubectl, then three
kubelet status patches (conditions, container states), over the registry in memory.
The field manager's shortcuts (an unchanged subtree not walked, FieldsV1 trees kept
for field sets seen before) must leave every byte as it was; the time is left out.
kubectl's entry owns what it sent and the defaults, not what admission then set
(priority, preemptionPolicy, serviceAccountName), as kube-apiserver's create handler runs
the field manager before mutating admission."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import ModuleType
from typing import Any

import module_by_path
import orjson
from registry_fixture import memory_registry

from pykubelet.controlplane.registry.patch import STRATEGIC_MERGE_PATCH
from pykubelet.controlplane.registry.resources import PODS
from pykubelet.controlplane.registry.store import Context


def _bench_workload() -> ModuleType:
    """bench/status_patch_bench.py's realistic pod and kubelet status patches: one
    workload for the bench and this pin."""
    path = Path(__file__).resolve().parents[4] / "bench" / "status_patch_bench.py"
    return module_by_path.load("status_patch_bench", path)


WORKLOAD = _bench_workload()


EXPECTED = (
    '[{"manager":"kubectl","operation":"Update","apiVersion":"v1","fieldsType":"Field'
    'sV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:example.com/owner":{}}'
    ',"f:labels":{".":{},"f:app":{},"f:pod":{},"f:tier":{}}},"f:spec":{"f:automountSe'
    'rviceAccountToken":{},"f:containers":{"k:{\\"name\\":\\"sidecar\\"}":{".":{},"f:args'
    '":{},"f:command":{},"f:env":{"k:{\\"name\\":\\"POD_IP\\"}":{".":{},"f:name":{},"f:va'
    'lueFrom":{"f:fieldRef":{}}},"k:{\\"name\\":\\"VAR_0\\"}":{".":{},"f:name":{},"f:valu'
    'e":{}},"k:{\\"name\\":\\"VAR_1\\"}":{".":{},"f:name":{},"f:value":{}},"k:{\\"name\\":\\'
    '"VAR_2\\"}":{".":{},"f:name":{},"f:value":{}},"k:{\\"name\\":\\"VAR_3\\"}":{".":{},"f'
    ':name":{},"f:value":{}},"k:{\\"name\\":\\"VAR_4\\"}":{".":{},"f:name":{},"f:value":{'
    '}},"k:{\\"name\\":\\"VAR_5\\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:i'
    'magePullPolicy":{},"f:livenessProbe":{"f:failureThreshold":{},"f:initialDelaySec'
    'onds":{},"f:periodSeconds":{},"f:successThreshold":{},"f:tcpSocket":{"f:port":{}'
    '},"f:timeoutSeconds":{}},"f:name":{},"f:ports":{"k:{\\"containerPort\\":8080,\\"pro'
    'tocol\\":\\"TCP\\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:'
    'readinessProbe":{"f:failureThreshold":{},"f:httpGet":{"f:path":{},"f:port":{},"f'
    ':scheme":{}},"f:periodSeconds":{},"f:successThreshold":{},"f:timeoutSeconds":{}}'
    ',"f:resources":{"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{'
    '},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessage'
    'Policy":{},"f:volumeMounts":{"k:{\\"mountPath\\":\\"/data\\"}":{".":{},"f:mountPath"'
    ':{},"f:name":{}},"k:{\\"mountPath\\":\\"/etc/conf\\"}":{".":{},"f:mountPath":{},"f:n'
    'ame":{},"f:readOnly":{}}}},"k:{\\"name\\":\\"web\\"}":{".":{},"f:args":{},"f:command'
    '":{},"f:env":{"k:{\\"name\\":\\"POD_IP\\"}":{".":{},"f:name":{},"f:valueFrom":{"f:fi'
    'eldRef":{}}},"k:{\\"name\\":\\"VAR_0\\"}":{".":{},"f:name":{},"f:value":{}},"k:{\\"na'
    'me\\":\\"VAR_1\\"}":{".":{},"f:name":{},"f:value":{}},"k:{\\"name\\":\\"VAR_2\\"}":{"."'
    ':{},"f:name":{},"f:value":{}},"k:{\\"name\\":\\"VAR_3\\"}":{".":{},"f:name":{},"f:va'
    'lue":{}},"k:{\\"name\\":\\"VAR_4\\"}":{".":{},"f:name":{},"f:value":{}},"k:{\\"name\\"'
    ':\\"VAR_5\\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy"'
    ':{},"f:livenessProbe":{"f:failureThreshold":{},"f:initialDelaySeconds":{},"f:per'
    'iodSeconds":{},"f:successThreshold":{},"f:tcpSocket":{"f:port":{}},"f:timeoutSec'
    'onds":{}},"f:name":{},"f:ports":{"k:{\\"containerPort\\":8080,\\"protocol\\":\\"TCP\\"'
    '}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:readinessProbe"'
    ':{"f:failureThreshold":{},"f:httpGet":{"f:path":{},"f:port":{},"f:scheme":{}},"f'
    ':periodSeconds":{},"f:successThreshold":{},"f:timeoutSeconds":{}},"f:resources":'
    '{"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f'
    ':memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{},"f:v'
    'olumeMounts":{"k:{\\"mountPath\\":\\"/data\\"}":{".":{},"f:mountPath":{},"f:name":{}'
    '},"k:{\\"mountPath\\":\\"/etc/conf\\"}":{".":{},"f:mountPath":{},"f:name":{},"f:read'
    'Only":{}}}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:nodeName":{},"f:nodeS'
    'elector":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:t'
    'erminationGracePeriodSeconds":{},"f:tolerations":{},"f:volumes":{"k:{\\"name\\":\\"conf\\"}":{"."'
    ':{},"f:configMap":{"f:defaultMode":{},"f:name":{}},"f:name":{}},"k:{\\"name\\":\\"d'
    'ata\\"}":{".":{},"f:emptyDir":{},"f:name":{}}}}}},{"manager":"kubelet","operation'
    '":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:'
    'conditions":{"k:{\\"type\\":\\"ContainersReady\\"}":{".":{},"f:lastTransitionTime":{'
    '},"f:status":{},"f:type":{}},"k:{\\"type\\":\\"Initialized\\"}":{".":{},"f:lastTrans'
    'itionTime":{},"f:status":{},"f:type":{}},"k:{\\"type\\":\\"PodScheduled\\"}":{".":{}'
    ',"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\\"type\\":\\"Ready\\"}":{'
    '".":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuse'
    's":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{"k:{\\"ip\\":\\"10.244.1.'
    '7\\"}":{".":{},"f:ip":{}}},"f:startTime":{}}},"subresource":"status"}]')


async def managed_fields(patches: int) -> list[Any]:
    async with memory_registry(("default",)) as registry:
        pods = registry.store(PODS)
        await pods.create(Context(field_manager="kubectl"), "default",
                          WORKLOAD.pod("web-0", automount=False))  # no random volume name
        status = pods.strategy.subresource_strategy("status")
        for i in range(patches):
            await pods.patch(Context(subresource="status", field_manager="kubelet"),
                             "default", "web-0", STRATEGIC_MERGE_PATCH,
                             WORKLOAD.status_patch(i), strategy=status)
        entries: list[Any] = orjson.loads(pods.get("default", "web-0").data)[
            "metadata"]["managedFields"]
        return entries


def test_a_pods_managed_fields_bytes_after_a_create_and_status_patches() -> None:
    entries = asyncio.run(managed_fields(3))
    assert all(e.pop("time") for e in entries)
    assert orjson.dumps(entries).decode() == EXPECTED


def test_the_same_bytes_twice_in_one_process() -> None:
    """A second run meets whatever the first left cached."""
    first, second = asyncio.run(managed_fields(3)), asyncio.run(managed_fields(3))
    for e in first + second:
        e.pop("time")
    assert orjson.dumps(first) == orjson.dumps(second) == EXPECTED.encode()
