"""DefaultBinder: binds through the Handle's binder (upstream: the API's pods/binding)."""

from __future__ import annotations

from typing import Any

from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.status import Code, Status

NAME = "DefaultBinder"


class DefaultBinder:
    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def name(self) -> str:
        return NAME

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        binder = getattr(self.handle, "binder", None)
        if binder is None:
            return Status(Code.ERROR, ["no binder configured in the framework handle"])
        try:
            binder.bind(pod, node_name)
        except Exception as err:  # the store refused: an internal error, the pod is retried
            return Status.as_status(err)
        return None


def new(args: Any, handle: Any) -> DefaultBinder:
    return DefaultBinder(handle)
