"""Request bodies in Kubernetes' protobuf encoding, read into the JSON shape.

kubectl's typed clients (``kubectl create``
namespace|configmap|secret|priorityclass|pdb|deployment|job|cronjob|service|role|
clusterrole|rolebinding|clusterrolebinding|serviceaccount|token, ``kubectl drain``'s
evictions) send ``application/vnd.kubernetes.protobuf`` bodies: the magic ``k8s\\0`` and a
``runtime.Unknown`` envelope whose ``raw`` is the typed message.
Responses stay JSON (those clients accept it). The messages below are the kinds those
commands create, with upstream's field numbers (k8s.io/api and apimachinery's
generated.proto); the reader is the protobuf wire format, nothing more.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from pykubelet.api.machinery.timeutil import rfc3339

MAGIC = b"k8s\x00"

# message -> field number -> (JSON name, type); a type in [] is repeated
Schema = dict[int, tuple[str, Any]]
MESSAGES: dict[str, Schema] = {
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "bytes"),
                3: ("contentEncoding", "string"), 4: ("contentType", "string")},
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
    "ObjectMeta": {
        1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
        4: ("selfLink", "string"), 5: ("uid", "string"), 6: ("resourceVersion", "string"),
        7: ("generation", "int"), 8: ("creationTimestamp", "Time"),
        9: ("deletionTimestamp", "Time"), 10: ("deletionGracePeriodSeconds", "int"),
        11: ("labels", "map<string>"), 12: ("annotations", "map<string>"),
        13: ("ownerReferences", ["OwnerReference"]), 14: ("finalizers", ["string"]),
        17: ("managedFields", ["skip"]),
    },
    "OwnerReference": {5: ("apiVersion", "string"), 1: ("kind", "string"),
                       3: ("name", "string"), 4: ("uid", "string"),
                       6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")},
    "DeleteOptions": {1: ("gracePeriodSeconds", "int"), 2: ("preconditions", "Preconditions"),
                      3: ("orphanDependents", "bool"), 4: ("propagationPolicy", "string"),
                      5: ("dryRun", ["string"])},
    "Preconditions": {1: ("uid", "string"), 2: ("resourceVersion", "string")},
    "LabelSelector": {1: ("matchLabels", "map<string>"),
                      2: ("matchExpressions", ["LabelSelectorRequirement"])},
    "LabelSelectorRequirement": {1: ("key", "string"), 2: ("operator", "string"),
                                 3: ("values", ["string"])},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec"),
                  3: ("status", "NamespaceStatus")},
    "NamespaceSpec": {1: ("finalizers", ["string"])},
    "NamespaceStatus": {1: ("phase", "string"), 2: ("conditions", ["skip"])},
    "ConfigMap": {1: ("metadata", "ObjectMeta"), 4: ("immutable", "bool"),
                  2: ("data", "map<string>"), 3: ("binaryData", "map<bytes>")},
    "Secret": {1: ("metadata", "ObjectMeta"), 5: ("immutable", "bool"),
               2: ("data", "map<bytes>"), 4: ("stringData", "map<string>"),
               3: ("type", "string")},
    "Eviction": {1: ("metadata", "ObjectMeta"), 2: ("deleteOptions", "DeleteOptions")},
    "PriorityClass": {1: ("metadata", "ObjectMeta"), 2: ("value", "int"),
                      3: ("globalDefault", "bool"), 4: ("description", "string"),
                      5: ("preemptionPolicy", "string")},
    "PodDisruptionBudget": {1: ("metadata", "ObjectMeta"), 2: ("spec", "PodDisruptionBudgetSpec"),
                            3: ("status", ["skip"])},
    "PodDisruptionBudgetSpec": {1: ("minAvailable", "IntOrString"),
                                2: ("selector", "LabelSelector"),
                                3: ("maxUnavailable", "IntOrString"),
                                4: ("unhealthyPodEvictionPolicy", "string")},
    # kubectl create deployment (k8s.io/api/apps/v1 and core/v1 generated.proto)
    "Deployment": {1: ("metadata", "ObjectMeta"), 2: ("spec", "DeploymentSpec"),
                   3: ("status", ["skip"])},
    "DeploymentSpec": {1: ("replicas", "int"), 2: ("selector", "LabelSelector"),
                       3: ("template", "PodTemplateSpec"), 4: ("strategy", "DeploymentStrategy"),
                       5: ("minReadySeconds", "int"), 6: ("revisionHistoryLimit", "int"),
                       7: ("paused", "bool"), 9: ("progressDeadlineSeconds", "int")},
    "DeploymentStrategy": {1: ("type", "string"), 2: ("rollingUpdate", "RollingUpdateDeployment")},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "IntOrString"),
                                2: ("maxSurge", "IntOrString")},
    "ContainerPort": {1: ("name", "string"), 2: ("hostPort", "int"),
                      3: ("containerPort", "int"), 4: ("protocol", "string"),
                      5: ("hostIP", "string")},
    "EnvVar": {1: ("name", "string"), 2: ("value", "string")},
    # batch/v1, as ``kubectl create job`` and ``kubectl create cronjob`` send them: the
    # template's pod spec with the fields those commands set (containers' name, image,
    # command, args; restartPolicy)
    "Job": {1: ("metadata", "ObjectMeta"), 2: ("spec", "JobSpec"), 3: ("status", ["skip"])},
    "JobSpec": {1: ("parallelism", "int"), 2: ("completions", "int"),
                3: ("activeDeadlineSeconds", "int"), 4: ("selector", "LabelSelector"),
                5: ("manualSelector", "bool"), 6: ("template", "PodTemplateSpec"),
                7: ("backoffLimit", "int"), 8: ("ttlSecondsAfterFinished", "int"),
                9: ("completionMode", "string"), 10: ("suspend", "bool"),
                14: ("podReplacementPolicy", "string")},
    "CronJob": {1: ("metadata", "ObjectMeta"), 2: ("spec", "CronJobSpec"),
                3: ("status", ["skip"])},
    "CronJobSpec": {1: ("schedule", "string"), 8: ("timeZone", "string"),
                    2: ("startingDeadlineSeconds", "int"), 3: ("concurrencyPolicy", "string"),
                    4: ("suspend", "bool"), 5: ("jobTemplate", "JobTemplateSpec"),
                    6: ("successfulJobsHistoryLimit", "int"),
                    7: ("failedJobsHistoryLimit", "int")},
    "JobTemplateSpec": {1: ("metadata", "ObjectMeta"), 2: ("spec", "JobSpec")},
    "PodTemplateSpec": {1: ("metadata", "ObjectMeta"), 2: ("spec", "PodSpec")},
    "PodSpec": {2: ("containers", ["Container"]), 3: ("restartPolicy", "string"),
                4: ("terminationGracePeriodSeconds", "int"),
                5: ("activeDeadlineSeconds", "int"), 6: ("dnsPolicy", "string"),
                7: ("nodeSelector", "map<string>"), 8: ("serviceAccountName", "string"),
                10: ("nodeName", "string"),
                16: ("hostname", "string"), 17: ("subdomain", "string"),
                19: ("schedulerName", "string")},
    "Container": {1: ("name", "string"), 2: ("image", "string"), 3: ("command", ["string"]),
                  4: ("args", ["string"]), 5: ("workingDir", "string"),
                  6: ("ports", ["ContainerPort"]), 7: ("env", ["EnvVar"]),
                  8: ("resources", ["skip"]), 13: ("terminationMessagePath", "string"),
                  14: ("imagePullPolicy", "string"), 16: ("stdin", "bool"),
                  17: ("stdinOnce", "bool"), 18: ("tty", "bool"),
                  20: ("terminationMessagePolicy", "string")},
    # kubectl create service clusterip|nodeport|loadbalancer|externalname (core/v1)
    "Service": {1: ("metadata", "ObjectMeta"), 2: ("spec", "ServiceSpec"),
                3: ("status", ["skip"])},
    "ServiceSpec": {1: ("ports", ["ServicePort"]), 2: ("selector", "map<string>"),
                    3: ("clusterIP", "string"), 18: ("clusterIPs", ["string"]),
                    4: ("type", "string"), 5: ("externalIPs", ["string"]),
                    7: ("sessionAffinity", "string"), 10: ("externalName", "string"),
                    11: ("externalTrafficPolicy", "string"),
                    13: ("publishNotReadyAddresses", "bool"),
                    17: ("ipFamilyPolicy", "string"), 19: ("ipFamilies", ["string"]),
                    22: ("internalTrafficPolicy", "string")},
    "ServicePort": {1: ("name", "string"), 2: ("protocol", "string"), 3: ("port", "int"),
                    4: ("targetPort", "IntOrString"), 5: ("nodePort", "int"),
                    6: ("appProtocol", "string")},
    # rbac.authorization.k8s.io/v1, as ``kubectl create role/clusterrole/rolebinding/
    # clusterrolebinding`` send them
    "Role": {1: ("metadata", "ObjectMeta"), 2: ("rules", ["PolicyRule"])},
    "ClusterRole": {1: ("metadata", "ObjectMeta"), 2: ("rules", ["PolicyRule"]),
                    3: ("aggregationRule", "AggregationRule")},
    "PolicyRule": {1: ("verbs", ["string"]), 2: ("apiGroups", ["string"]),
                   3: ("resources", ["string"]), 4: ("resourceNames", ["string"]),
                   5: ("nonResourceURLs", ["string"])},
    "AggregationRule": {1: ("clusterRoleSelectors", ["LabelSelector"])},
    "RoleBinding": {1: ("metadata", "ObjectMeta"), 2: ("subjects", ["Subject"]),
                    3: ("roleRef", "RoleRef")},
    "ClusterRoleBinding": {1: ("metadata", "ObjectMeta"), 2: ("subjects", ["Subject"]),
                           3: ("roleRef", "RoleRef")},
    "Subject": {1: ("kind", "string"), 2: ("apiGroup", "string"), 3: ("name", "string"),
                4: ("namespace", "string")},
    "RoleRef": {1: ("apiGroup", "string"), 2: ("kind", "string"), 3: ("name", "string")},
    # authorization.k8s.io/v1 and authentication.k8s.io/v1 reviews, as ``kubectl auth
    # can-i`` and ``kubectl auth whoami`` send them
    "SelfSubjectAccessReview": {1: ("metadata", "ObjectMeta"),
                                2: ("spec", "SelfSubjectAccessReviewSpec"),
                                3: ("status", ["skip"])},
    "SelfSubjectAccessReviewSpec": {1: ("resourceAttributes", "ResourceAttributes"),
                                    2: ("nonResourceAttributes", "NonResourceAttributes")},
    "SubjectAccessReview": {1: ("metadata", "ObjectMeta"), 2: ("spec", "SubjectAccessReviewSpec"),
                            3: ("status", ["skip"])},
    "SubjectAccessReviewSpec": {1: ("resourceAttributes", "ResourceAttributes"),
                                2: ("nonResourceAttributes", "NonResourceAttributes"),
                                3: ("user", "string"), 4: ("groups", ["string"]),
                                5: ("extra", ["skip"]), 6: ("uid", "string")},
    "ResourceAttributes": {1: ("namespace", "string"), 2: ("verb", "string"),
                           3: ("group", "string"), 4: ("version", "string"),
                           5: ("resource", "string"), 6: ("subresource", "string"),
                           7: ("name", "string"), 8: ("fieldSelector", ["skip"]),
                           9: ("labelSelector", ["skip"])},
    "NonResourceAttributes": {1: ("path", "string"), 2: ("verb", "string")},
    "SelfSubjectRulesReview": {1: ("metadata", "ObjectMeta"),
                               2: ("spec", "SelfSubjectRulesReviewSpec"),
                               3: ("status", ["skip"])},
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "string")},
    "SelfSubjectReview": {1: ("metadata", "ObjectMeta"), 2: ("status", ["skip"])},
    # core/v1 ServiceAccount and authentication.k8s.io/v1 TokenRequest, as ``kubectl create
    # serviceaccount`` and ``kubectl create token`` send them
    "ServiceAccount": {1: ("metadata", "ObjectMeta"), 2: ("secrets", ["ObjectReference"]),
                       3: ("imagePullSecrets", ["LocalObjectReference"]),
                       4: ("automountServiceAccountToken", "bool")},
    "ObjectReference": {1: ("kind", "string"), 2: ("namespace", "string"),
                        3: ("name", "string"), 4: ("uid", "string"),
                        5: ("apiVersion", "string"), 6: ("resourceVersion", "string"),
                        7: ("fieldPath", "string")},
    "LocalObjectReference": {1: ("name", "string")},
    "TokenRequest": {1: ("metadata", "ObjectMeta"), 2: ("spec", "TokenRequestSpec"),
                     3: ("status", ["skip"])},
    "TokenRequestSpec": {1: ("audiences", ["string"]), 4: ("expirationSeconds", "int"),
                         3: ("boundObjectRef", "BoundObjectReference")},
    "BoundObjectReference": {1: ("kind", "string"), 2: ("apiVersion", "string"),
                             3: ("name", "string"), 4: ("uid", "string")},
    "Time": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "IntOrString": {1: ("type", "int"), 2: ("intVal", "int"), 3: ("strVal", "string")},
}


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf message we can read (400)."""


class UnsupportedKind(ProtobufError):
    """A well-formed body of a kind this reader does not know (415: send JSON)."""


# what each field type must arrive as: varint (0) or length-delimited (2), as gogo's
# generated Unmarshal checks before it reads a value ("proto: wrong wireType")
VARINT, LENGTH = 0, 2
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
# the seconds metav1.Time can stand for: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z
# (beyond them Go's Time.MarshalJSON fails: "year outside of range [0,9999]")
MIN_SECONDS, MAX_SECONDS = -62135596800, 253402300799


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("unexpected EOF")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("proto: integer overflow")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """The (number, wire type, value) of each field; every length is checked against
    what is left of the body before anything is sliced."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        num, wire = key >> 3, key & 7
        if num <= 0:
            raise ProtobufError(f"proto: illegal tag {num} (wire type {wire})")
        value: int | bytes
        if wire == VARINT:
            value, pos = _varint(data, pos)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if size > len(data) - pos:
                raise ProtobufError("unexpected EOF")
            value, pos = data[pos:pos + size], pos + size
        elif wire == LENGTH:
            size, pos = _varint(data, pos)
            if size > len(data) - pos:
                raise ProtobufError("unexpected EOF")
            value, pos = data[pos:pos + size], pos + size
        else:
            raise ProtobufError(f"proto: illegal wireType {wire}")
        out.append((num, wire, value))
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _wire_of(typ: Any) -> int:
    if isinstance(typ, list):
        return _wire_of(typ[0])
    return VARINT if typ in ("int", "bool") else LENGTH


def _go_name(json_name: str) -> str:
    return json_name[:1].upper() + json_name[1:]


def _scalar(typ: str, value: Any) -> Any:
    if typ == "string":
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            raise ProtobufError("proto: invalid UTF-8 in a string field") from None
    if typ == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if typ == "bool":
        return bool(value)
    if typ == "int":
        return _signed(value)
    raise ProtobufError(f"unknown scalar type {typ}")


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    schema = MESSAGES[name]
    out: dict[str, Any] = {}
    for num, wire, value in _fields(data):
        if num not in schema:
            continue
        json_name, typ = schema[num]
        if typ != ["skip"] and wire != _wire_of(typ):
            raise ProtobufError(f"proto: wrong wireType = {wire} for field {_go_name(json_name)}")
        if isinstance(typ, list):
            (item,) = typ
            if item == "skip":
                continue
            out.setdefault(json_name, []).append(_value(item, value))
        elif typ.startswith("map<"):
            entry = {n: (w, v) for n, w, v in _fields(bytes(value))}
            key_wire, key = entry.get(1, (LENGTH, b""))
            val_wire, val = entry.get(2, (LENGTH, b""))
            if key_wire != LENGTH or val_wire != LENGTH:
                raise ProtobufError(
                    f"proto: wrong wireType = {key_wire if key_wire != LENGTH else val_wire}"
                    f" for field {_go_name(json_name)}")
            out.setdefault(json_name, {})[_scalar("string", key)] = _scalar(typ[4:-1], val)
        else:
            out[json_name] = _value(typ, value)
    return out


def _value(typ: str, value: Any) -> Any:
    if typ == "Time":
        if not value:  # metav1.Time's Marshal of the zero time: no bytes, read back as null
            return None
        t = decode_message("Time", bytes(value))
        seconds = t.get("seconds", 0)
        if not MIN_SECONDS <= seconds <= MAX_SECONDS:
            raise ProtobufError(f"Time.seconds {seconds} out of range (years 1 to 9999)")
        return rfc3339(dt.datetime.fromtimestamp(seconds, dt.UTC))
    if typ == "IntOrString":
        v = decode_message("IntOrString", bytes(value))
        return v.get("strVal", "") if v.get("type") == 1 else v.get("intVal", 0)
    if typ in MESSAGES:
        return decode_message(typ, bytes(value))
    return _scalar(typ, value)


def decode_object(body: bytes) -> dict[str, Any]:
    """A protobuf request body as the object's JSON form (kind and apiVersion included)."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    unknown = decode_message("Unknown", body[len(MAGIC):])
    type_meta = unknown.get("typeMeta") or {}
    kind = type_meta.get("kind", "")
    if kind not in MESSAGES or kind in ("Unknown", "TypeMeta", "Time", "IntOrString"):
        raise UnsupportedKind(f"cannot read kind {kind[:64]!r} from protobuf; send JSON")
    raw = base64.b64decode(unknown.get("raw", ""))
    obj = {"kind": kind, "apiVersion": type_meta.get("apiVersion", "")}
    obj.update(decode_message(kind, raw))
    meta = obj.get("metadata") or {}
    if meta.get("generation") == 0:
        meta.pop("generation")
    pruned: dict[str, Any] = _prune(obj)
    return pruned


def _prune(value: Any) -> Any:
    """Go's omitempty, which the protobuf encoding does not carry: drop "", false and
    empty lists and maps."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            v = _prune(v)
            if v is None or v == "" or v is False or v == [] or v == {}:
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value
