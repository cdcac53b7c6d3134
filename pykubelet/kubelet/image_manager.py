"""Images for containers, as kubelet's images.ImageManager: EnsureImageExists.

The pull policy decides against the node's store (CRI ImageStatus): Always pulls,
IfNotPresent pulls when absent, Never fails with ErrImageNeverPull when absent. Failed
pulls back off per (image, pod) (ImagePullBackOff), pulls of one image are serialised,
and each step is recorded as an event (Pulling, Pulled, BackOff, Failed).
"""

from __future__ import annotations

import logging
import threading
import time

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.types import Container, Pod
from pykubelet.kubelet import reasons
from pykubelet.kubelet.actions import image_pull_decision
from pykubelet.kubelet.backoff import Backoff
from pykubelet.kubelet.cri_client import CRICallError, CRIClient
from pykubelet.kubelet.events import NORMAL, WARNING, EventRecorder

log = logging.getLogger(__name__)


class ImageManager:
    """EnsureImageExists over a CRI ImageService."""

    def __init__(
        self, cri: CRIClient, backoff: Backoff, recorder: EventRecorder | None = None
    ) -> None:
        self.cri = cri
        self.image_backoff = backoff
        self.recorder = recorder
        self._image_locks: dict[str, threading.Lock] = {}
        self._image_locks_guard = threading.Lock()

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
                self.cri.pull_image(image, sandbox_config)
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

    def image_backoff_clock(self) -> float:
        return time.time()
