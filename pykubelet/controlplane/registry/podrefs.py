"""The API objects a pod names (upstream's ``podutil.VisitPodSecretNames`` and
``VisitPodConfigmapNames``): what the Node authorizer lets a node read for the pods bound
to it, and what NodeRestriction forbids in the pods a node creates itself."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

# volume sources whose ``secretRef`` names a secret (flexVolume, cephfs, cinder, rbd,
# iscsi, scaleIO, storageos); azureFile names it in ``secretName``; csi in
# ``nodePublishSecretRef``
_SECRET_REF_VOLUMES = ("flexVolume", "cephfs", "cinder", "rbd", "iscsi", "scaleIO",
                       "storageos")


def _containers(spec: Obj) -> list[Obj]:
    return [c for c in (*(spec.get("initContainers") or []), *(spec.get("containers") or []),
                        *(spec.get("ephemeralContainers") or [])) if isinstance(c, dict)]


def _name(ref: Any, key: str = "name") -> str:
    return str(ref.get(key) or "") if isinstance(ref, dict) else ""


def _env_names(spec: Obj, key_ref: str, from_ref: str) -> set[str]:
    """What every container's env (``valueFrom.<key_ref>``) and envFrom (``<from_ref>``)
    name: the containers' part of both visits."""
    names: set[str] = set()
    for c in _containers(spec):
        for env in c.get("env") or []:
            names.add(_name(((env or {}).get("valueFrom") or {}).get(key_ref)))
        for src in c.get("envFrom") or []:
            names.add(_name((src or {}).get(from_ref)))
    return names


def _projected_names(vol: Obj, source: str) -> set[str]:
    """What a projected volume's ``<source>`` sources name."""
    return {_name((s or {}).get(source)) for s in (vol.get("projected") or {}).get("sources") or []}


def secret_names(pod: Obj) -> set[str]:
    """Every secret the pod names: pull secrets, env, envFrom, volumes."""
    spec = pod.get("spec") or {}
    names = {_name(r) for r in spec.get("imagePullSecrets") or []}
    names |= _env_names(spec, "secretKeyRef", "secretRef")
    for vol in spec.get("volumes") or []:
        vol = vol or {}
        names.add(_name(vol.get("secret"), "secretName"))
        names.add(_name(vol.get("azureFile"), "secretName"))
        names.add(_name((vol.get("csi") or {}).get("nodePublishSecretRef")))
        for kind in _SECRET_REF_VOLUMES:
            names.add(_name((vol.get(kind) or {}).get("secretRef")))
        names |= _projected_names(vol, "secret")
    names.discard("")
    return names


def configmap_names(pod: Obj) -> set[str]:
    """Every configmap the pod names: env, envFrom, volumes."""
    spec = pod.get("spec") or {}
    names = _env_names(spec, "configMapKeyRef", "configMapRef")
    for vol in spec.get("volumes") or []:
        vol = vol or {}
        names.add(_name(vol.get("configMap")))
        names |= _projected_names(vol, "configMap")
    names.discard("")
    return names


def pvc_names(pod: Obj) -> set[str]:
    """The persistent volume claims the pod mounts: named ones, and the claim of each
    generic ephemeral volume (``<pod>-<volume>``), as the Node authorizer's graph."""
    spec = pod.get("spec") or {}
    pod_name = str((pod.get("metadata") or {}).get("name") or "")
    names: set[str] = set()
    for vol in spec.get("volumes") or []:
        vol = vol or {}
        names.add(_name(vol.get("persistentVolumeClaim"), "claimName"))
        if vol.get("ephemeral") is not None and vol.get("name"):
            names.add(f"{pod_name}-{vol['name']}")
    names.discard("")
    return names


def service_account_names(pod: Obj) -> set[str]:
    """The pod's service account (``default`` when it names none)."""
    return {str((pod.get("spec") or {}).get("serviceAccountName") or "default")}


def references(pod: Obj, resource: str) -> set[str]:
    """The names of ``resource`` (secrets, configmaps, persistentvolumeclaims,
    serviceaccounts) the pod uses."""
    if resource == "secrets":
        return secret_names(pod)
    if resource == "configmaps":
        return configmap_names(pod)
    if resource == "persistentvolumeclaims":
        return pvc_names(pod)
    if resource == "serviceaccounts":
        return service_account_names(pod)
    return set()


def uses_cluster_trust_bundles(pod: Obj) -> bool:
    return any((source or {}).get("clusterTrustBundle")
               for vol in (pod.get("spec") or {}).get("volumes") or []
               for source in ((vol or {}).get("projected") or {}).get("sources") or [])


def uses_claims(pod: Obj) -> bool:
    return any((vol or {}).get("persistentVolumeClaim")
               for vol in (pod.get("spec") or {}).get("volumes") or [])
