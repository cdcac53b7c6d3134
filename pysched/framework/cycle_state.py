"""CycleState: per-scheduling-cycle scratch space shared by one pod's plugins."""

from __future__ import annotations

from typing import Any, Protocol


class StateData(Protocol):
    """Data stored in a CycleState; clone() is needed for preemption's what-ifs."""

    def clone(self) -> StateData: ...


class StateNotFoundError(KeyError):
    """fwk.ErrNotFound: no data under that key (the storage's NotFoundError is a missing
    object)."""


class CycleState:
    """Keyed store; `clone()` deep-copies via each value's `clone()` (upstream StateData.Clone)."""

    __slots__ = (
        "_data",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.record_plugin_metrics = False
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.skip_pre_bind_plugins: set[str] = set()

    def write(self, key: str, data: Any) -> None:
        self._data[key] = data

    def read(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            raise StateNotFoundError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        c = CycleState()
        for k, v in self._data.items():
            clone = getattr(v, "clone", None)
            c._data[k] = clone() if clone is not None else v
        c.record_plugin_metrics = self.record_plugin_metrics
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        return c
