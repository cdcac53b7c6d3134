"""What the control plane keeps on disk is private: its root 0700 (etcd refuses a data
directory that is not), the store and its WAL 0600, and every key, token and kubeconfig
0600, also when an older version left them readable (issue 24: a Secret's value was read
out of the WAL by ``nobody``)."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from pykubelet.controlplane.server import ControlPlane, Options
from pykubelet.controlplane.storage.sqlite import SQLiteStorage


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_root_store_and_secrets_are_private_and_old_modes_are_fixed(tmp_path: Path) -> None:
    root = tmp_path / "cp"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    (root / "pki").mkdir(mode=0o755)
    os.chmod(root / "pki", 0o755)
    for name in ("store.db", "store.db-wal", "store.db-shm"):
        (root / name).touch()
        os.chmod(root / name, 0o644)

    async def main() -> None:
        cp = ControlPlane(Options(root=root, listen="127.0.0.1:0", scheduler=False,
                                  controllers=False))
        cp.pki.ensure_ca()
        os.chmod(cp.pki.ca_key_path, 0o644)  # as an older version might have left it
        await cp.start()
        try:
            await cp.storage.create("/pykube-test/k", b"v")  # a write: the WAL exists
            assert mode(root) == 0o700
            for name in ("store.db", "store.db-wal", "store.db-shm"):
                assert mode(root / name) == 0o600, name
            assert mode(root / "pki") == 0o700
            secrets = [*(root / "pki").iterdir(), root / "tokens.json",
                       root / "admin.kubeconfig"]
            assert {p.name for p in secrets} >= {"ca.key", "apiserver.key", "tokens.json",
                                                 "admin.kubeconfig"}
            for p in secrets:
                assert mode(p) == 0o600, p.name
        finally:
            await cp.stop()

    asyncio.run(main())


def test_a_store_elsewhere_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "state" / "store.db"

    async def main() -> None:
        s = SQLiteStorage(path)
        await s.start()
        try:
            await s.create("/k", b"v")
            assert mode(path.parent) == 0o700  # made by us
            assert mode(path) == 0o600
            assert mode(Path(f"{path}-wal")) == 0o600
        finally:
            await s.close()

    old = os.umask(0o022)
    try:
        asyncio.run(main())
    finally:
        os.umask(old)
