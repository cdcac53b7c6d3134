"""A controller's delete of what it owns: a NotFound is what it wanted (controllers/deletes.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.deletes import delete_unless_gone


class Store:
    def __init__(self, code: int | None) -> None:
        self.code = code
        self.deleted: list[tuple[str, str, str | None]] = []

    async def delete(self, ctx: Any, ns: str, name: str, opts: Any) -> None:
        if self.code is not None:
            raise errors.StatusError(self.code, "Reason", "message")
        self.deleted.append((ns, name, opts.propagation_policy))


def test_deletes_by_namespace_and_name() -> None:
    store = Store(None)
    asyncio.run(delete_unless_gone(store, "ns", "web"))  # type: ignore[arg-type]
    assert store.deleted == [("ns", "web", None)]


def test_a_gone_object_is_no_error_and_any_other_error_is_raised() -> None:
    asyncio.run(delete_unless_gone(Store(404), "ns", "web"))  # type: ignore[arg-type]
    with pytest.raises(errors.StatusError) as exc:
        asyncio.run(delete_unless_gone(Store(409), "ns", "web"))  # type: ignore[arg-type]
    assert exc.value.code == 409
