"""The lab's image server: its local OCI registry, as kind's and k3d's local-registry
setups (the module is not called "registry": in pykubelet that word is the API server's
generic store). Debian's docker-registry (distribution 2.8) on the host's end of the lab
bridge (10.250.K.1:5000), its config, log and data in the lab's directory, pre-loaded with
the lab's busybox as ``library/busybox:latest`` and ``library/busybox:<release>``.

It listens on the bridge's host address only: the lab's nodes reach it there (their
configs name it an insecure registry, so their runtimes pull over plain HTTP) and so does
this host, where a user pushes an image of their own with ``skopeo copy ...
docker://10.250.K.1:5000/...``; nothing outside the host does. The process is one of the
lab's, recorded in its state file as (pid, start time): `lab status` reports it,
`restart-node` and `up` of an existing lab start it again when it died (the data on disk
is kept, and the pre-loaded tags are pushed again if they are missing), and `down` stops it
and removes its directory with the rest of the lab's.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pycni.atomic_files import write_atomic
from pykubelet.lab import processes
from pykubelet.lab.layout import LabLayout
from pykubelet.lab.state import LabState, ProcessRef

REGISTRY_BIN = "/usr/bin/docker-registry"
SKOPEO = "skopeo"
BUSYBOX_REPO = "library/busybox"
START_TIMEOUT = 20.0
PUSH_TIMEOUT = 120.0
HOSTING_CONFIGMAP = "local-registry-hosting"  # KEP-1755, as kind's local registry
HOSTING_NAMESPACE = "kube-public"
MANIFEST_ACCEPT = ", ".join((
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json"))
_PROXY_VARS = {"http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
               "ALL_PROXY"}
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy


class ImageServerError(RuntimeError):
    """The registry did not start, or a pre-loaded image could not be pushed; the message
    says why, with the last line of its log."""


def registry_config(lab: LabLayout) -> dict[str, Any]:
    """docker-registry's config.yml (JSON is YAML): filesystem storage under the lab's
    directory, deletes allowed, one listener on the bridge's host address and no other
    (no debug or metrics server)."""
    return {
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(lab.registry_data_dir)},
                    "delete": {"enabled": True}},
        "http": {"addr": lab.registry_address},
    }


def preloaded_tags(version: str) -> list[str]:
    """What the registry holds from the start: busybox as ``latest`` (which kubelet pulls
    Always) and, when the binary says it, its release."""
    return [f"{BUSYBOX_REPO}:latest"] + ([f"{BUSYBOX_REPO}:{version}"] if version else [])


def lab_preloaded_tags() -> list[str]:
    from pykubelet.runtime.image_build import busybox_version

    return preloaded_tags(busybox_version())


def image_ref(lab: LabLayout, repo_tag: str) -> str:
    return f"{lab.registry_address}/{repo_tag}"


def hosting_configmap(lab: LabLayout) -> dict[str, Any]:
    """KEP-1755's ``kube-public/local-registry-hosting`` ConfigMap, as kind's local-registry
    setup writes it, so tools (Tilt, Skaffold) find where to push: ``host`` from this host,
    ``hostFromContainerRuntime`` from the nodes' runtimes (the same address here)."""
    text = (f'host: "{lab.registry_address}"\n'
            f'hostFromContainerRuntime: "{lab.registry_address}"\n')
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": HOSTING_CONFIGMAP, "namespace": HOSTING_NAMESPACE},
            "data": {"localRegistryHosting.v1": text}}


def publish(client: Any, lab: LabLayout) -> None:
    """Create (or bring up to date) the local-registry-hosting ConfigMap through the API."""
    from pykubelet.client.rest import CONFIGMAPS, MERGE_PATCH, StatusError

    cm = hosting_configmap(lab)
    try:
        client.create(CONFIGMAPS, cm, HOSTING_NAMESPACE)
    except StatusError as exc:
        if exc.code != 409:
            raise
        client.patch(CONFIGMAPS, HOSTING_CONFIGMAP, {"data": cm["data"]}, HOSTING_NAMESPACE,
                     content_type=MERGE_PATCH)


# ---------------------------------------------------------------------- the process
def running(st: LabState) -> ProcessRef | None:
    """The registry process of the lab: the recorded one while it lives, else one a person
    started again with the lab's config (which the lab then records)."""
    if st.registry is not None and st.registry.alive():
        return st.registry
    pid = processes.find("serve", str(st.layout.registry_config_file))
    if pid is not None:
        st.registry = ProcessRef.of(pid)
        return st.registry
    return None


def start(st: LabState) -> tuple[ProcessRef, bool]:
    """Start the lab's registry unless it runs; (its process, whether it was started)."""
    ref = running(st)
    if ref is not None:
        return ref, False
    lab = st.layout
    if not os.access(REGISTRY_BIN, os.X_OK):
        raise ImageServerError(f"{REGISTRY_BIN} is not installed (Debian package docker-registry)")
    lab.registry_data_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(lab.registry_config_file, json.dumps(registry_config(lab), indent=1) + "\n")
    st.registry = processes.start_detached(
        [REGISTRY_BIN, "serve", str(lab.registry_config_file)], lab.registry_log)
    return st.registry, True


def serving(address: str, timeout: float = 2.0) -> bool:
    """The distribution API's base endpoint answers 200 (no auth here)."""
    try:
        with _DIRECT.open(f"http://{address}/v2/", timeout=timeout) as r:
            return bool(r.status == 200)
    except (OSError, ValueError):
        return False


def wait_serving(lab: LabLayout, ref: ProcessRef, timeout: float = START_TIMEOUT) -> None:
    end = time.monotonic() + timeout
    while not serving(lab.registry_address):
        if processes.exited(ref):
            raise ImageServerError(f"the registry (pid {ref.pid}) exited: "
                                f"{processes.tail(lab.registry_log, 1) or 'no output'}")
        if time.monotonic() > end:
            raise ImageServerError(f"the registry did not serve on {lab.registry_address} "
                                f"within {timeout:.0f}s; see {lab.registry_log}")
        time.sleep(0.05)


def has_tag(address: str, repo_tag: str, timeout: float = 5.0) -> bool:
    repo, _, tag = repo_tag.rpartition(":")
    req = urllib.request.Request(f"http://{address}/v2/{repo}/manifests/{tag}",
                                 method="HEAD", headers={"Accept": MANIFEST_ACCEPT})
    try:
        with _DIRECT.open(req, timeout=timeout) as r:
            return bool(r.status == 200)
    except urllib.error.HTTPError:
        return False


def push(archive: Path, lab: LabLayout, repo_tag: str) -> None:
    """``skopeo copy oci-archive:ARCHIVE docker://ADDR:PORT/REPO:TAG`` over plain HTTP
    (never through a proxy: the registry is on this host)."""
    env = {k: v for k, v in os.environ.items() if k not in _PROXY_VARS}
    proc = subprocess.run(
        [SKOPEO, "copy", "-q", "--dest-tls-verify=false", f"oci-archive:{archive}",
         f"docker://{image_ref(lab, repo_tag)}"],
        capture_output=True, text=True, timeout=PUSH_TIMEOUT, env=env, check=False)
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise ImageServerError(f"skopeo copy to {image_ref(lab, repo_tag)}: {said}")


def ensure(st: LabState, archive: Path, tags: list[str] | None = None) -> bool:
    """The registry serves, with the pre-loaded tags (pushed from the lab's busybox
    archive when missing); True when its process had to be started."""
    ref, started = start(st)
    lab = st.layout
    wait_serving(lab, ref)
    for tag in lab_preloaded_tags() if tags is None else tags:
        if not has_tag(lab.registry_address, tag):
            push(archive, lab, tag)
    return started


def stop(st: LabState, timeout: float = 10.0) -> int:
    """SIGTERM (then SIGKILL) the lab's registry; how many processes were stopped."""
    ref = running(st)
    if ref is None:
        return 0
    processes.stop([ref], timeout)
    return 1
