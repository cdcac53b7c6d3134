"""Domain errors of the CRI runtime.

Handlers raise these; ``pykubelet.runtime.cri.instrument`` maps each class to one gRPC
status code in one place (containerd's errdefs -> grpc mapping), so no handler knows gRPC.
"""

from __future__ import annotations

from typing import ClassVar


class CRIError(Exception):
    """Base of every runtime error a CRI client may see; ``grpc_code`` names the status."""

    grpc_code: ClassVar[str] = "UNKNOWN"

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg


# The name the contract gives the base (an alias: RuntimeError would shadow the builtin).
RuntimeError_ = CRIError


class NotFound(CRIError):
    """The sandbox, container or image does not exist."""

    grpc_code = "NOT_FOUND"


class AlreadyExists(CRIError):
    """A sandbox or container with the same name/metadata already exists."""

    grpc_code = "ALREADY_EXISTS"


class InvalidArgument(CRIError):
    """The request is malformed: the message names the field and the problem."""

    grpc_code = "INVALID_ARGUMENT"


class FailedPrecondition(CRIError):
    """The object is in the wrong state for the operation (e.g. start a running container)."""

    grpc_code = "FAILED_PRECONDITION"


class Unavailable(CRIError):
    """A dependency (CNI, runc, the image store lock) is not usable right now; retry later."""

    grpc_code = "UNAVAILABLE"


__all__ = [
    "AlreadyExists",
    "CRIError",
    "FailedPrecondition",
    "InvalidArgument",
    "NotFound",
    "RuntimeError_",
    "Unavailable",
]


class PermissionDenied(CRIError):
    """A registry refused our credentials (or asked for some we do not have)."""

    grpc_code = "PERMISSION_DENIED"
