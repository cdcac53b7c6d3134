"""``--token-auth-file`` as kube-apiserver's tokenfile authenticator: CSV
token,user,uid[,"group1,group2"], every user also in system:authenticated, an empty token
skipped, fewer than three columns refused with upstream's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykubelet.controlplane.apiserver.filters.tokenfile import StaticTokens, TokenFileError
from pykubelet.controlplane.registry.store import User


def test_users_of_tokens(tmp_path: Path) -> None:
    f = tmp_path / "tokens.csv"
    f.write_text('t-alice,alice,1,"devs, ops"\n,nobody,2\nt-bob,bob,3\n')
    tokens = StaticTokens.load(f)
    assert tokens.user("t-alice") == User("alice", ("devs", "ops", "system:authenticated"))
    assert tokens.user("t-bob") == User("bob", ("system:authenticated",))
    assert tokens.user("") is None
    assert tokens.user("t-carol") is None


def test_short_lines_are_refused(tmp_path: Path) -> None:
    f = tmp_path / "tokens.csv"
    f.write_text("t-alice,alice\n")
    with pytest.raises(TokenFileError) as exc:
        StaticTokens.load(f)
    assert str(exc.value) == (f"token file '{f}' must have at least 3 columns (token, user "
                              "name, user uid), found 2")
