"""A node's saved credentials are reused across restarts when it talks through its load
balancer, whose port changes at every start: they are kept for the configured servers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pykubelet.client.bootstrap import BootstrapError, ca_cert_hash, join, join_in_child
from pykubelet.controlplane.pki import PKI

A, B = "https://10.0.0.1:6443", "https://10.0.0.2:6443"


def saved_state(tmp_path: Path, server: str) -> tuple[Path, str]:
    pki = PKI(tmp_path / "cp")
    paths = pki.issue("node", "system:node:n1", dns=["n1"], ips=["10.0.0.5"])
    state = tmp_path / "state"
    state.mkdir()
    shutil.copy(pki.ca_cert_path, state / "ca.crt")
    shutil.copy(paths.cert, state / "kubelet.crt")
    shutil.copy(paths.key, state / "kubelet.key")
    (state / "token").write_text("node-token\n")
    (state / "server").write_text(server + "\n")
    return state, ca_cert_hash(pki.ca_pem)


@pytest.mark.parametrize("saved", [A, B, A + "/"])
def test_credentials_saved_for_a_configured_server_are_reused_through_any_lb_port(
        tmp_path: Path, saved: str) -> None:
    state, ca_hash = saved_state(tmp_path, saved)
    for lb in ("https://127.0.0.1:40001", "https://127.0.0.1:40002"):
        # no join token: a join would fail, so this proves nothing was asked of a server
        creds = join(lb, "", ca_hash, "n1", ["10.0.0.5"], state, servers=[A, B])
        assert creds.server == lb
        assert creds.token == "node-token"


def test_credentials_for_another_server_are_not_reused(tmp_path: Path) -> None:
    state, ca_hash = saved_state(tmp_path, "https://10.9.9.9:6443")
    with pytest.raises(BootstrapError, match="token: required"):
        join("https://127.0.0.1:40001", "", ca_hash, "n1", ["10.0.0.5"], state,
             servers=[A, B])
    # without a list, the server itself is what the credentials are kept for
    with pytest.raises(BootstrapError, match="token: required"):
        join("https://127.0.0.1:40001", "", ca_hash, "n1", ["10.0.0.5"], state)
    assert join("https://10.9.9.9:6443", "", ca_hash, "n1", ["10.0.0.5"], state).token \
        == "node-token"


def test_a_join_in_a_child_process_answers_as_join_does(tmp_path: Path) -> None:
    """A worker's agent joins through a child process (issue 23 item 3: cryptography
    stays out of the agent): the same credentials as join's, from the saved state."""
    state, ca_hash = saved_state(tmp_path, A)
    here = join(A, "", ca_hash, "n1", ["10.0.0.5"], state)
    assert join_in_child(A, "", ca_hash, "n1", ["10.0.0.5"], state) == here
    through_lb = join_in_child("https://127.0.0.1:40001", "", ca_hash, "n1", ["10.0.0.5"],
                               state, servers=[A, B])
    assert (through_lb.server, through_lb.token) == ("https://127.0.0.1:40001", "node-token")


def test_a_join_in_a_child_process_says_why_it_failed(tmp_path: Path) -> None:
    state, ca_hash = saved_state(tmp_path, "https://10.9.9.9:6443")
    with pytest.raises(BootstrapError) as err:
        join_in_child(A, "", ca_hash, "n1", ["10.0.0.5"], state)
    assert str(err.value) == ("token: required to join a control plane (the join command's "
                              "--token)")
