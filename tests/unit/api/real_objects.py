"""Objects as a real cluster prints them, for the model's tests."""

from __future__ import annotations

from typing import Any

# A pod as a real cluster prints it (`kubectl get pod -o json`), with fields the node does
# not act on: they must survive the round trip untouched.
REAL_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-7d4b9c5f8-x2k4q",
        "generateName": "web-7d4b9c5f8-",
        "namespace": "default",
        "uid": "0b4e8a5e-0000-4000-8000-000000000001",
        "resourceVersion": "4242",
        "creationTimestamp": "2024-05-01T10:00:00Z",
        "labels": {"app": "web", "pod-template-hash": "7d4b9c5f8"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": "2024-05-01T09:59:00Z"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-7d4b9c5f8",
                "uid": "0b4e8a5e-0000-4000-8000-000000000002",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "managedFields": [
            {
                "manager": "kube-controller-manager",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2024-05-01T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
            }
        ],
    },
    "spec": {
        "volumes": [
            {
                "name": "kube-api-access-abcde",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "path": "namespace",
                                        "fieldRef": {
                                            "apiVersion": "v1",
                                            "fieldPath": "metadata.namespace",
                                        },
                                    }
                                ]
                            }
                        },
                    ],
                    "defaultMode": 420,
                },
            },
            {"name": "cfg", "configMap": {"name": "web-config", "defaultMode": 420}},
            {"name": "tls", "secret": {"secretName": "web-tls", "optional": True}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "web-data"}},
            {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
        ],
        "containers": [
            {
                "name": "web",
                "image": "nginx:1.25",
                "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                "envFrom": [{"configMapRef": {"name": "web-env"}, "prefix": "WEB_"}],
                "env": [{"name": "MODE", "value": "prod"}],
                "resources": {
                    "limits": {"cpu": "500m", "memory": "256Mi"},
                    "requests": {"cpu": "250m", "memory": "128Mi"},
                },
                "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                "volumeMounts": [
                    {
                        "name": "kube-api-access-abcde",
                        "readOnly": True,
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    },
                    {"name": "cfg", "mountPath": "/etc/web"},
                ],
                "readinessProbe": {
                    "httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"},
                    "timeoutSeconds": 1,
                    "periodSeconds": 10,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                },
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
                "securityContext": {
                    "runAsNonRoot": True,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "nodeName": "node-1",
        "securityContext": {"fsGroup": 2000},
        "imagePullSecrets": [{"name": "regcred"}],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        },
        "schedulerName": "default-scheduler",
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
        "readinessGates": [{"conditionType": "example.com/ready"}],
        "runtimeClassName": "runc",
        "ephemeralContainers": [
            {"name": "debugger", "image": "busybox", "targetContainerName": "web"}
        ],
    },
    "status": {
        "phase": "Running",
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": "2024-05-01T10:00:05Z",
            }
        ],
        "hostIP": "10.0.0.1",
        "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": "10.244.1.5",
        "podIPs": [{"ip": "10.244.1.5"}],
        "startTime": "2024-05-01T10:00:00Z",
        "containerStatuses": [
            {
                "name": "web",
                "state": {"running": {"startedAt": "2024-05-01T10:00:03Z"}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": "docker.io/library/nginx:1.25",
                "imageID": "docker.io/library/nginx@sha256:" + "a" * 64,
                "containerID": "containerd://" + "b" * 64,
                "started": True,
                "volumeMounts": [
                    {"name": "cfg", "mountPath": "/etc/web"},
                ],
            }
        ],
        "qosClass": "Burstable",
    },
}
