"""The workload controllers' status write: through the status subresource, only when it
differs, only onto the same object (uid), and a gone object is no error."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.status_writer import write_status

Obj = dict[str, Any]


class BaseStrategy:
    info = name_rule = selectable_fields = None


class Store:
    strategy = BaseStrategy()

    def __init__(self, obj: Obj | None) -> None:
        self.obj = obj
        self.calls: list[Any] = []

    async def guaranteed_update(self, ns: str, name: str, mutate: Callable[[Obj], Obj | None],
                                strategy: Any) -> Obj | None:
        self.calls.append(type(strategy).__name__)
        if self.obj is None:
            raise errors.StatusError(404, "NotFound", "gone")
        out = mutate(copy.deepcopy(self.obj))
        if out is not None:
            self.obj = out
        return self.obj


def rs(uid: str = "u1", **status: Any) -> Obj:
    return {"metadata": {"name": "web", "namespace": "ns", "uid": uid}, "status": status}


def test_writes_a_changed_status_through_the_status_subresource() -> None:
    store = Store(rs(replicas=1))
    asyncio.run(write_status(store, rs(replicas=1), {"replicas": 2}))  # type: ignore[arg-type]
    assert store.calls == ["StatusStrategy"]
    assert store.obj is not None
    assert store.obj["status"] == {"replicas": 2}


def test_an_equal_status_is_not_written() -> None:
    store = Store(rs(replicas=1))
    asyncio.run(write_status(store, rs(replicas=1), {"replicas": 1}))  # type: ignore[arg-type]
    assert store.calls == []


def test_another_object_of_that_name_is_left_alone_and_a_gone_one_is_no_error() -> None:
    store = Store(rs("u2", replicas=1))
    asyncio.run(write_status(store, rs(replicas=1), {"replicas": 3}))  # type: ignore[arg-type]
    assert store.obj is not None
    assert store.obj["status"] == {"replicas": 1}
    asyncio.run(write_status(Store(None), rs(), {"replicas": 3}))  # type: ignore[arg-type]


def test_returns_the_object_as_it_stands_after_the_write() -> None:
    """What a sync goes on with (syncDeployment's updated object): the written object,
    the object itself when nothing was written or when it is gone."""
    store = Store(rs(replicas=1))
    unchanged = rs(replicas=1)
    assert asyncio.run(write_status(store, unchanged, {"replicas": 1})) is unchanged  # type: ignore[arg-type]
    written = asyncio.run(write_status(store, rs(replicas=1), {"replicas": 2}))  # type: ignore[arg-type]
    assert written == rs(replicas=2)
    gone = rs()
    assert asyncio.run(write_status(Store(None), gone, {"replicas": 3})) is gone  # type: ignore[arg-type]
