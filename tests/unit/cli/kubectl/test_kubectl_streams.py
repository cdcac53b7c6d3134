"""pykubectl's streaming commands: port specs and the server's refusals, as kubectl reads
and prints them."""

from __future__ import annotations

import pytest

from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.main import main
from pykubelet.cli.kubectl.streams import parse_ports, refusal_text


def test_port_specs_as_kubectl_reads_them() -> None:
    assert parse_ports(["8080", "9000:80", ":443"]) == [(8080, 8080), (9000, 80), (0, 443)]


@pytest.mark.parametrize(("spec", "problem"), [
    ("http", "ports are numbers"), ("80:x", "ports are numbers"),
    ("0", "ports are 1-65535"), ("70000", "ports are 1-65535"), ("99999:80", "1-65535"),
])
def test_bad_port_specs_are_named(spec: str, problem: str) -> None:
    with pytest.raises(CommandError) as err:
        parse_ports([spec])
    assert f'invalid port spec "{spec}"' in str(err.value)
    assert problem in str(err.value)


def test_refusals_print_the_servers_status() -> None:
    status = ('upgrade refused: HTTP 403: {"kind":"Status","reason":"Forbidden",'
              '"message":"pods \\"web\\" is forbidden: exec not allowed"}')
    assert refusal_text(Exception(status)) == (
        'Error from server (Forbidden): pods "web" is forbidden: exec not allowed')
    assert refusal_text(Exception("upgrade refused: HTTP 502: bad gateway")) == (
        "error: unable to upgrade connection: bad gateway")


def test_exec_needs_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["exec", "web", "--kubeconfig", "/nonexistent"]) == 1
    assert "you must specify at least one command" in capsys.readouterr().err


def test_attach_takes_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attach", "web", "--kubeconfig", "/nonexistent", "--", "sh"]) == 1
    assert "attach takes no command" in capsys.readouterr().err
