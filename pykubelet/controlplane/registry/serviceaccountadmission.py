"""The ServiceAccount admission plugin (plugin/pkg/admission/serviceaccount), on pod
creation: ``spec.serviceAccountName`` defaults to ``default``; the account must exist
(else 403 ``error looking up service account NS/NAME: serviceaccount "NAME" not found``);
unless ``automountServiceAccountToken`` is false on the pod, or else on the account, every
container and init container mounts a projected volume ``kube-api-access-XXXXX`` (a bound
token at ``token`` for 3607 s, ``ca.crt`` from the ConfigMap ``kube-root-ca.crt``, and
``namespace``) read-only at /var/run/secrets/kubernetes.io/serviceaccount, except one that
mounts something there already. Mirror pods are left as they are (the kubelet would not
recognise them).

One difference: a missing ``default`` account is made here rather than waited for
(upstream retries for about a second, for the serviceaccount controller to make it), so
a namespace's first pod never races the controller, and a control plane run without
controllers still admits pods."""

from __future__ import annotations

import random
from typing import Any

from pykubelet.api.types import (
    ConfigMapProjection,
    DownwardAPIProjection,
    DownwardAPIVolumeFile,
    KeyToPath,
    ObjectFieldSelector,
    ProjectedVolumeSource,
    ServiceAccountTokenProjection,
    Volume,
    VolumeMount,
    VolumeProjection,
)
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.resources import PODS, SERVICE_ACCOUNTS
from pykubelet.controlplane.registry.store import Context, GenericStore, MutatingAdmission

DEFAULT_SERVICE_ACCOUNT = "default"
VOLUME_PREFIX = "kube-api-access-"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_EXPIRATION_S = 3607  # serviceaccount.WarnOnlyBoundTokenExpirationSeconds
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
PROJECTED_DEFAULT_MODE = 0o644
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # names.SimpleNameGenerator


def token_volume_source() -> ProjectedVolumeSource:
    """TokenVolumeSource."""
    return ProjectedVolumeSource(default_mode=PROJECTED_DEFAULT_MODE, sources=[
        VolumeProjection(service_account_token=ServiceAccountTokenProjection(
            path="token", expiration_seconds=TOKEN_EXPIRATION_S)),
        VolumeProjection(config_map=ConfigMapProjection(
            name=ROOT_CA_CONFIGMAP, items=[KeyToPath(key="ca.crt", path="ca.crt")])),
        VolumeProjection(downward_api=DownwardAPIProjection(items=[DownwardAPIVolumeFile(
            path="namespace",
            field_ref=ObjectFieldSelector(api_version="v1", field_path="metadata.namespace"))])),
    ])


def should_automount(pod: Any, account: dict[str, Any]) -> bool:
    if pod.spec.automount_service_account_token is not None:
        return bool(pod.spec.automount_service_account_token)
    if account.get("automountServiceAccountToken") is not None:
        return bool(account["automountServiceAccountToken"])
    return True


def mount_token(pod: Any, rng: random.Random | None = None) -> None:
    """mountServiceAccountToken: the volume (an existing kube-api-access-* one kept) and a
    read-only mount of it in every container not already mounting the path."""
    name = next((v.name for v in pod.spec.volumes if v.name.startswith(VOLUME_PREFIX)), "")
    has_volume = bool(name)
    if not name:
        pick = (rng or random).choice
        name = VOLUME_PREFIX + "".join(pick(_NAME_CHARS) for _ in range(5))
    needed = False
    for container in [*pod.spec.init_containers, *pod.spec.containers]:
        if any(m.mount_path == MOUNT_PATH for m in container.volume_mounts):
            continue
        container.volume_mounts.append(VolumeMount(name=name, read_only=True,
                                                   mount_path=MOUNT_PATH))
        needed = True
    if needed and not has_volume:
        pod.spec.volumes.append(Volume(name=name, projected=token_volume_source()))


async def service_account(store: GenericStore, pod: Any, ctx: Context) -> None:
    if store.info is not PODS or MIRROR_POD_ANNOTATION in (pod.metadata.annotations or {}):
        return
    spec = pod.spec
    if not spec.service_account_name:
        spec.service_account_name = DEFAULT_SERVICE_ACCOUNT
    namespace, name = pod.metadata.namespace, spec.service_account_name
    accounts = store.registry.store(SERVICE_ACCOUNTS)
    entry = accounts.lookup(namespace, name)
    if entry is None and name == DEFAULT_SERVICE_ACCOUNT:
        try:
            await accounts.create(Context(), namespace, {
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace}})
        except errors.StatusError as exc:
            if exc.code != 409:
                raise
        entry = accounts.lookup(namespace, name)
    if entry is None:
        pod_name = pod.metadata.name or pod.metadata.generate_name
        raise errors.StatusError(
            403, errors.FORBIDDEN,
            f'pods "{pod_name}" is forbidden: error looking up service account '
            f'{namespace}/{name}: serviceaccount "{name}" not found',
            {"name": pod_name, "kind": "pods"})
    if should_automount(pod, entry.obj()):
        mount_token(pod)


SERVICE_ACCOUNT_ADMISSION = MutatingAdmission(service_account)
