"""The field order of Go's typed apps/v1 objects, for what kubectl prints from a typed
object with ``-o json`` (json.Marshal writes struct fields in declaration order, maps
sorted): ``rollout history -o json`` prints the DaemonSets and StatefulSets its history
viewer builds. Fields of types not listed here (volume sources, probes, affinity) keep
the sorted order of a decoded map."""

from __future__ import annotations

from typing import Any

from pykubelet.api.machinery.marshal import sorted_maps

# type -> its fields in declaration order, each ``json name`` or ``json name:type`` when
# the value is itself a struct (or a list of them) whose order matters
FIELDS: dict[str, tuple[str, ...]] = {
    "DaemonSet": ("kind", "apiVersion", "metadata:ObjectMeta", "spec:DaemonSetSpec",
                  "status:DaemonSetStatus"),
    "StatefulSet": ("kind", "apiVersion", "metadata:ObjectMeta", "spec:StatefulSetSpec",
                    "status:StatefulSetStatus"),
    "ObjectMeta": ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
                   "generation", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "labels", "annotations",
                   "ownerReferences:OwnerReference", "finalizers",
                   "managedFields:ManagedFieldsEntry"),
    "OwnerReference": ("apiVersion", "kind", "name", "uid", "controller",
                       "blockOwnerDeletion"),
    "ManagedFieldsEntry": ("manager", "operation", "apiVersion", "time", "fieldsType",
                           "fieldsV1", "subresource"),
    "LabelSelector": ("matchLabels", "matchExpressions:Requirement"),
    "Requirement": ("key", "operator", "values"),
    "DaemonSetSpec": ("selector:LabelSelector", "template:PodTemplateSpec",
                      "updateStrategy:DaemonSetUpdateStrategy", "minReadySeconds",
                      "revisionHistoryLimit"),
    "DaemonSetUpdateStrategy": ("type", "rollingUpdate:RollingUpdateDaemonSet"),
    "RollingUpdateDaemonSet": ("maxUnavailable", "maxSurge"),
    "DaemonSetStatus": ("currentNumberScheduled", "numberMisscheduled",
                        "desiredNumberScheduled", "numberReady", "observedGeneration",
                        "updatedNumberScheduled", "numberAvailable", "numberUnavailable",
                        "collisionCount", "conditions:Condition"),
    "StatefulSetSpec": ("replicas", "selector:LabelSelector", "template:PodTemplateSpec",
                        "volumeClaimTemplates", "serviceName", "podManagementPolicy",
                        "updateStrategy:StatefulSetUpdateStrategy", "revisionHistoryLimit",
                        "minReadySeconds",
                        "persistentVolumeClaimRetentionPolicy:RetentionPolicy", "ordinals"),
    "StatefulSetUpdateStrategy": ("type", "rollingUpdate:RollingUpdateStatefulSet"),
    "RollingUpdateStatefulSet": ("partition", "maxUnavailable"),
    "RetentionPolicy": ("whenDeleted", "whenScaled"),
    "StatefulSetStatus": ("observedGeneration", "replicas", "readyReplicas",
                          "currentReplicas", "updatedReplicas", "currentRevision",
                          "updateRevision", "collisionCount", "conditions:Condition",
                          "availableReplicas"),
    "Condition": ("type", "status", "lastTransitionTime", "reason", "message"),
    "PodTemplateSpec": ("metadata:ObjectMeta", "spec:PodSpec"),
    "PodSpec": ("volumes", "initContainers:Container", "containers:Container",
                "ephemeralContainers:Container", "restartPolicy",
                "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy",
                "nodeSelector", "serviceAccountName", "serviceAccount",
                "automountServiceAccountToken", "nodeName", "hostNetwork", "hostPID",
                "hostIPC", "shareProcessNamespace", "securityContext", "imagePullSecrets",
                "hostname", "subdomain", "affinity", "schedulerName",
                "tolerations:Toleration", "hostAliases", "priorityClassName", "priority",
                "dnsConfig", "readinessGates", "runtimeClassName", "enableServiceLinks",
                "preemptionPolicy", "overhead", "topologySpreadConstraints",
                "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates", "resourceClaims",
                "resources:ResourceRequirements"),
    "Container": ("name", "image", "command", "args", "workingDir", "ports:ContainerPort",
                  "envFrom", "env:EnvVar", "resources:ResourceRequirements", "resizePolicy",
                  "restartPolicy", "volumeMounts:VolumeMount", "volumeDevices",
                  "livenessProbe", "readinessProbe", "startupProbe", "lifecycle",
                  "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy",
                  "securityContext", "stdin", "stdinOnce", "tty"),
    "ContainerPort": ("name", "hostPort", "containerPort", "protocol", "hostIP"),
    "EnvVar": ("name", "value", "valueFrom"),
    "ResourceRequirements": ("limits", "requests", "claims"),
    "VolumeMount": ("name", "readOnly", "recursiveReadOnly", "mountPath", "subPath",
                    "mountPropagation", "subPathExpr"),
    "Toleration": ("key", "operator", "value", "effect", "tolerationSeconds"),
}


def in_struct_order(value: Any, type_name: str) -> Any:
    """``value`` (a decoded object of ``type_name``) with its keys in the Go struct's
    order, unknown ones after them sorted; a list's items each of the type."""
    if isinstance(value, list):
        return [in_struct_order(v, type_name) for v in value]
    if not isinstance(value, dict):
        return value
    fields = FIELDS.get(type_name)
    if fields is None:
        return sorted_maps(value)
    out: dict[str, Any] = {}
    for field in fields:
        name, _, child = field.partition(":")
        if name in value:
            out[name] = in_struct_order(value[name], child) if child else sorted_maps(value[name])
    for name in sorted(set(value) - set(out)):
        out[name] = sorted_maps(value[name])
    return out
