"""framework.Status: a plugin's verdict. "Does not fit" is a value, not an exception."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Code(enum.IntEnum):
    """fwk.Code, same numbering and names as upstream."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    def __str__(self) -> str:
        return _CODE_NAMES[self]


_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


@dataclass(slots=True)
class Status:
    """Code plus reasons; `plugin` names who returned it (set by the runtime)."""

    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""
    error: BaseException | None = None

    @classmethod
    def new(cls, code: Code, *reasons: str) -> Status:
        """fwk.NewStatus(code, reasons...)."""
        return cls(code, list(reasons))

    @classmethod
    def as_status(cls, err: BaseException) -> Status:
        """fwk.AsStatus: an internal error."""
        return cls(Code.ERROR, [str(err)], error=err)

    def message(self) -> str:
        """Reasons joined by ", " (Status.Message)."""
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in _REJECTED

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = plugin
        return self

    def as_error(self) -> BaseException | None:
        """The error for an Error status (None for success)."""
        if self.is_success():
            return None
        if self.error is not None:
            return self.error
        return RuntimeError(self.message())

    def __str__(self) -> str:
        return f"{self.code}: {self.message()}" if self.reasons else str(self.code)


SUCCESS = Status()  # shared read-only success; never mutate (use Status() for one to modify)


def is_success(status: Status | None) -> bool:
    """A nil status is success, as in Go."""
    return status is None or status.code == Code.SUCCESS


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, list(reasons))


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons))


def error(msg: str, err: BaseException | None = None) -> Status:
    return Status(Code.ERROR, [msg], error=err)


def skip() -> Status:
    return Status(Code.SKIP)
