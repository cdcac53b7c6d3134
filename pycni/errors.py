"""CNI errors: one exception class per well-known code of the CNI spec.

A plugin prints an error as JSON on stdout (``{"cniVersion", "code", "msg",
"details"}``) and exits non-zero; the runtime side reads that JSON back into the
matching subclass with :func:`error_from_dict`, so callers can branch on the
type (or ``code``) whichever side raised it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from typing import Any, ClassVar


class CNIError(Exception):
    """Base of every CNI error; ``code`` is the spec's numeric error code."""

    code: ClassVar[int] = 999

    def __init__(self, msg: str, details: str = "") -> None:
        super().__init__(msg)
        self.msg = msg
        self.details = details

    def __str__(self) -> str:
        return f"{self.msg}; {self.details}" if self.details else self.msg

    def to_dict(self, cni_version: str) -> dict[str, Any]:
        """The spec's error JSON for ``cni_version``."""
        out: dict[str, Any] = {"cniVersion": cni_version, "code": self.code, "msg": self.msg}
        if self.details:
            out["details"] = self.details
        return out


class IncompatibleVersion(CNIError):
    code = 1


class UnsupportedField(CNIError):
    code = 2


class UnknownContainer(CNIError):
    code = 3


class InvalidEnvironment(CNIError):
    code = 4


class IOFailure(CNIError):
    code = 5


class DecodingFailure(CNIError):
    code = 6


class InvalidNetworkConfig(CNIError):
    code = 7


class InvalidNetNS(CNIError):
    code = 8


class TryAgainLater(CNIError):
    code = 11


class PluginNotAvailable(CNIError):
    code = 50


class LimitedConnectivity(CNIError):
    code = 51


class InternalError(CNIError):
    code = 999


class PluginError(CNIError):
    """An error with a code the spec does not name (plugin-specific, >= 100).

    ``code`` is per instance here, unlike the well-known subclasses.
    """

    def __init__(self, msg: str, details: str = "", code: int = 999) -> None:
        super().__init__(msg, details)
        self.code = code  # type: ignore[misc]


_BY_CODE: dict[int, type[CNIError]] = {
    cls.code: cls
    for cls in (
        IncompatibleVersion,
        UnsupportedField,
        UnknownContainer,
        InvalidEnvironment,
        IOFailure,
        DecodingFailure,
        InvalidNetworkConfig,
        InvalidNetNS,
        TryAgainLater,
        PluginNotAvailable,
        LimitedConnectivity,
        InternalError,
    )
}


def error_from_dict(d: dict[str, Any]) -> CNIError:
    """A plugin's error JSON back into the right subclass (unknown codes keep their number)."""
    raw_code = d.get("code", 999)
    code = raw_code if isinstance(raw_code, int) and not isinstance(raw_code, bool) else 999
    msg = d.get("msg")
    msg = msg if isinstance(msg, str) else str(msg if msg is not None else "")
    details = d.get("details")
    details = details if isinstance(details, str) else ""
    cls = _BY_CODE.get(code)
    if cls is None:
        return PluginError(msg, details, code=code)
    return cls(msg, details)
