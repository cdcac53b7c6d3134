"""ControlPlane.start unwinds what it opened when a step fails midway (an AsyncExitStack,
as aiohttp's runner cleans up): the listening port is released, the watch cache stopped,
the store closed; stop() then has nothing left to do."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from unittest import mock

import pytest

from pykubelet.controlplane.server import ControlPlane, Options
from pykubelet.controlplane.storage.cacher import Cacher


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _control_plane(tmp_path: Path) -> ControlPlane:
    return ControlPlane(Options(root=tmp_path / "cp", listen="127.0.0.1:0", scheduler=False,
                                controllers=False))


async def _force_close(cp: ControlPlane) -> None:
    """What the test itself opened, closed whatever start() did (cleanup on failure)."""
    await cp.stop()
    await cp.cacher.stop()
    if cp._runner is not None:
        await cp._runner.cleanup()
    await cp.storage.close()


def test_a_late_failure_closes_the_port_the_cache_and_the_store(tmp_path: Path) -> None:
    async def run() -> None:
        cp = _control_plane(tmp_path)
        try:
            with mock.patch.object(ControlPlane, "_write_kubeconfig",
                                   side_effect=RuntimeError("disk full")), \
                    pytest.raises(RuntimeError, match="disk full"):
                await cp.start()
            assert cp.port != 0  # it was listening when the step failed
            assert _port_free(cp.port)
            assert cp._runner is None
            assert cp.cacher._task is None
            assert cp.storage._conn is None  # type: ignore[attr-defined]
            await cp.stop()  # nothing left to undo, and no error
        finally:
            await _force_close(cp)

    asyncio.run(run())


def test_an_early_failure_closes_the_store(tmp_path: Path) -> None:
    async def run() -> None:
        cp = _control_plane(tmp_path)
        try:
            with mock.patch.object(Cacher, "start", side_effect=RuntimeError("no cache")), \
                    pytest.raises(RuntimeError, match="no cache"):
                await cp.start()
            assert cp.storage._conn is None  # type: ignore[attr-defined]
            assert cp._runner is None
        finally:
            await _force_close(cp)

    asyncio.run(run())


def test_stop_after_a_start_releases_everything(tmp_path: Path) -> None:
    async def run() -> None:
        cp = _control_plane(tmp_path)
        try:
            await cp.start()
            port = cp.port
            assert not _port_free(port)
            await cp.stop()
            assert _port_free(port)
            assert cp.storage._conn is None  # type: ignore[attr-defined]
            assert cp.cacher._task is None
        finally:
            await _force_close(cp)

    asyncio.run(run())
