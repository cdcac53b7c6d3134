"""The secrets and configmaps a pod names (registry/podrefs.py: VisitPodSecretNames and
VisitPodConfigmapNames), in every place each can be named."""

from __future__ import annotations

from pykubelet.controlplane.registry.podrefs import configmap_names, secret_names

POD = {"spec": {
    "imagePullSecrets": [{"name": "pull"}],
    "initContainers": [{"env": [{"valueFrom": {"secretKeyRef": {"name": "init-env"}}}]}],
    "containers": [{
        "env": [{"name": "A", "value": "x"},
                {"valueFrom": {"secretKeyRef": {"name": "env"}}},
                {"valueFrom": {"configMapKeyRef": {"name": "cm-env"}}}],
        "envFrom": [{"secretRef": {"name": "env-from"}},
                    {"configMapRef": {"name": "cm-env-from"}}]}],
    "ephemeralContainers": [{"envFrom": [{"configMapRef": {"name": "cm-debug"}}]}],
    "volumes": [
        {"secret": {"secretName": "vol"}},
        {"azureFile": {"secretName": "azure"}},
        {"csi": {"nodePublishSecretRef": {"name": "csi"}}},
        {"rbd": {"secretRef": {"name": "rbd"}}},
        {"configMap": {"name": "cm-vol"}},
        {"projected": {"sources": [{"secret": {"name": "projected"}},
                                   {"configMap": {"name": "cm-projected"}},
                                   {"serviceAccountToken": {"path": "token"}}]}},
        {"emptyDir": {}}]}}


def test_secret_names() -> None:
    assert secret_names(POD) == {"pull", "init-env", "env", "env-from", "vol", "azure", "csi",
                                 "rbd", "projected"}


def test_configmap_names() -> None:
    assert configmap_names(POD) == {"cm-env", "cm-env-from", "cm-debug", "cm-vol",
                                    "cm-projected"}


def test_a_pod_naming_nothing() -> None:
    assert secret_names({}) == set()
    assert configmap_names({"spec": {"containers": [{"env": [None]}], "volumes": [None]}}) == set()
