"""Images for containers, as kubelet's images.ImageManager: EnsureImageExists.

The pull policy decides against the node's store (CRI ImageStatus): Always pulls,
IfNotPresent pulls when absent, Never fails with ErrImageNeverPull when absent. Failed
pulls back off per (image, pod) (ImagePullBackOff), pulls of one image are serialised,
and each step is recorded as an event (Pulling, Pulled, BackOff, Failed).

Credentials: the pod's ``imagePullSecrets`` (dockerconfigjson Secrets, through
``pull_secrets``) matched against the image; each matching entry is tried in turn, as
kubelet's puller does, else the pull goes anonymous. ``secret_source`` fetches a pod's
Secrets; until the API server serves them it is None and every pull is anonymous.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.types import Container, Pod
from pykubelet.kubelet.cri.runtime_service import CRICallError, ImageService
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.events.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.kubelet.images.pull_secrets import (
    PullSecretError,
    credentials_for_image,
    keyring_from_secrets,
)
from pykubelet.kubelet.kuberuntime.actions import image_pull_decision
from pykubelet.kubelet.util.backoff import Backoff

log = logging.getLogger(__name__)


class ImageManager:
    """EnsureImageExists over a CRI ImageService."""

    def __init__(
        self, cri: ImageService, backoff: Backoff, recorder: EventRecorder | None = None
    ) -> None:
        self.cri = cri
        self.image_backoff = backoff
        self.recorder = recorder
        self._image_locks: dict[str, threading.Lock] = {}
        self._image_locks_guard = threading.Lock()
        # (namespace, [secret names]) -> the Secrets. TODO(issue 8): the agent sets this
        # once pods come from the API server (a Secret getter over its client); static
        # pods cannot name secrets, so until then every pull is anonymous.
        self.secret_source: Callable[[str, list[str]], list[Mapping[str, Any]]] | None = None

    def pull_auths(self, pod: Pod, image: str) -> list[pb.AuthConfig | None]:
        """What to try, in order: matching imagePullSecrets entries, else anonymous."""
        names = [ref.name for ref in (pod.spec.image_pull_secrets or []) if ref.name]
        if not names or self.secret_source is None:
            return [None]
        try:
            keyring = keyring_from_secrets(self.secret_source(pod.namespace, names))
            found = credentials_for_image(keyring, image)
        except (PullSecretError, ValueError) as exc:
            log.warning("imagePullSecrets of %s: %s", pod.format(), exc)
            return [None]
        return [a.to_pb() for a in found] or [None]

    def _event(self, pod: Pod, type_: str, reason: str, msg: str, ctr: str = "") -> None:
        if self.recorder is not None:
            self.recorder.event(pod, type_, reason, msg, ctr)

    def _image_lock(self, image: str) -> threading.Lock:
        with self._image_locks_guard:
            return self._image_locks.setdefault(image, threading.Lock())

    def ensure_image(
        self, pod: Pod, container: Container, sandbox_config: pb.PodSandboxConfig
    ) -> tuple[str, str]:
        """EnsureImageExists: returns (image, "") or ("", reason) with the message logged.
        Raises nothing: failures come back as ErrImagePull / ImagePullBackOff /
        ErrImageNeverPull / InvalidImageName reasons in the second element."""
        image = container.image
        name = container.name
        if not image or any(ch.isspace() for ch in image):
            self._event(pod, WARNING, reasons.EVENT_FAILED,
                        f"Error: {reasons.INVALID_IMAGE_NAME}", name)
            return "", reasons.INVALID_IMAGE_NAME
        key = f"{image}_{pod.uid}"
        with self._image_lock(image):
            present = self.cri.image_status(image) is not None
            decision = image_pull_decision(container, present)
            if decision.error_reason:
                self._event(pod, WARNING, reasons.EVENT_ERR_IMAGE_NEVER_PULL,
                            decision.message, name)
                self._event(pod, WARNING, reasons.EVENT_FAILED,
                            f"Error: {decision.error_reason}", name)
                return "", decision.error_reason
            if not decision.pull:
                self._event(pod, NORMAL, reasons.EVENT_PULLED, decision.message, name)
                return image, ""
            now = self.image_backoff_clock()
            # images/puller: IsInBackOffSinceUpdate(key, now)
            if self.image_backoff.is_in_backoff_since_update(key, now):
                self._event(pod, NORMAL, reasons.EVENT_BACK_OFF,
                            reasons.image_pull_back_off_message(image), name)
                self._event(pod, WARNING, reasons.EVENT_FAILED,
                            f"Error: {reasons.IMAGE_PULL_BACK_OFF}", name)
                return "", reasons.IMAGE_PULL_BACK_OFF
            self._event(pod, NORMAL, reasons.EVENT_PULLING,
                        reasons.pulling_image_message(image), name)
            t0 = time.monotonic()
            try:
                self._pull(pod, image, sandbox_config)
            except CRICallError as exc:
                log.warning("pull %s for %s: %s", image, pod.format(), exc)
                self.image_backoff.next(key, now)
                self._event(pod, WARNING, reasons.EVENT_FAILED,
                            f'Failed to pull image "{image}": {exc.details}', name)
                self._event(pod, WARNING, reasons.EVENT_FAILED,
                            f"Error: {reasons.ERR_IMAGE_PULL}", name)
                return "", reasons.ERR_IMAGE_PULL
            self._event(pod, NORMAL, reasons.EVENT_PULLED,
                        f'Successfully pulled image "{image}" in '
                        f"{time.monotonic() - t0:.3f}s", name)
        return image, ""

    def _pull(self, pod: Pod, image: str, sandbox_config: pb.PodSandboxConfig) -> None:
        """Each candidate credential in turn; the last failure is the answer."""
        auths = self.pull_auths(pod, image)
        for i, auth in enumerate(auths):
            try:
                self.cri.pull_image(image, sandbox_config, auth=auth)
                return
            except CRICallError:
                if i == len(auths) - 1:
                    raise

    def image_backoff_clock(self) -> float:
        return time.time()
