"""Credentials shared through the store: the first control plane records its CA and
tokens, the next adopt them, node tokens follow, and a root with a CA of its own is
refused without being touched."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pykubelet.controlplane import shared
from pykubelet.controlplane.pki import PKI, Tokens
from pykubelet.controlplane.storage.sqlite import SQLiteStorage


def test_the_second_control_plane_adopts_the_first_ones_ca_and_tokens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared, "REFRESH_S", 0.01)

    async def main() -> None:
        store = SQLiteStorage(":memory:")
        await store.start()
        try:
            a, b = PKI(tmp_path / "a"), PKI(tmp_path / "b")
            await shared.adopt(store, a, tmp_path / "a" / "tokens.json")
            kv = await shared.adopt(store, b, tmp_path / "b" / "tokens.json")
            assert a.ca_pem == b.ca_pem
            assert a.ca_key_path.read_bytes() == b.ca_key_path.read_bytes()
            ta, tb = Tokens(tmp_path / "a" / "tokens.json"), Tokens(tmp_path / "b" / "tokens.json")
            assert (ta.admin, ta.join) == (tb.admin, tb.join)
            # a node joins through a: b learns its token
            token = ta.new_node_token("n1")
            await shared.publish_node_token(store, "n1", token)
            follow = asyncio.create_task(shared.follow_node_tokens(store, tb, kv.mod_revision))
            for _ in range(200):
                if tb.identify(token) == ("node", "n1"):
                    break
                await asyncio.sleep(0.01)
            follow.cancel()
            assert tb.identify(token) == ("node", "n1")
            # a root that made its own CA is refused and left as it was
            c = PKI(tmp_path / "c")
            c.ensure_ca()
            before = c.ca_pem
            with pytest.raises(shared.SharedCredentialsError, match="remove"):
                await shared.adopt(store, c, tmp_path / "c" / "tokens.json")
            assert c.ca_pem == before
        finally:
            await store.close()

    asyncio.run(main())


def test_every_control_plane_signs_with_the_first_ones_service_account_key(
        tmp_path: Path) -> None:
    """sa.key travels in the bootstrap record as the CA does (also into a record written
    before it had one), so a token one API server issued verifies on the others."""

    async def main() -> None:
        store = SQLiteStorage(":memory:")
        await store.start()
        try:
            a, b = PKI(tmp_path / "a"), PKI(tmp_path / "b")
            await shared.adopt(store, a, tmp_path / "a" / "tokens.json")
            key_a = await shared.adopt_sa_key(store, a.dir)
            await shared.adopt(store, b, tmp_path / "b" / "tokens.json")
            key_b = await shared.adopt_sa_key(store, b.dir)
            assert key_a == key_b
            assert (a.dir / "sa.key").read_bytes() == (b.dir / "sa.key").read_bytes()
            assert (b.dir / "sa.key").stat().st_mode & 0o777 == 0o600
        finally:
            await store.close()

    asyncio.run(main())
