"""A user's mistake gets one `Error: ...` line and exit 1, never a Python traceback, and
changes nothing: a taken HTTP port, a truncated image archive, build-busybox into a missing
directory or from a wrong --busybox, an unusable runtime --root, a second daemon on the
same state directory."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_cli_state_lock import hold, stop

from pykubelet.config import API_VERSION

PYKUBELET = [sys.executable, "-m", "pykubelet.cli.main"]


def one_line_error(*args: str, usage: bool = False) -> str:
    """The command's error line; with ``usage``, click's usage error (exit 2, the usage
    and a hint above the error line) is what the command answers."""
    out = subprocess.run([*PYKUBELET, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == (2 if usage else 1), out
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == (4 if usage else 1), out.stderr
    assert lines[-1].startswith("Error: "), out.stderr
    return lines[-1]


def node_config(tmp_path: Path, **over: object) -> Path:
    cfg = {"apiVersion": API_VERSION, "kind": "KubeletConfiguration", "nodeName": "n",
           "rootDir": str(tmp_path / "root"), "runDir": str(tmp_path / "run"),
           "staticPodPath": str(tmp_path / "manifests"),
           "containerRuntimeEndpoint": f"unix://{tmp_path / 'none.sock'}", **over}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_run_with_its_healthz_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_error("run", "--config", str(node_config(tmp_path, healthzPort=port)))
    assert line == (f"Error: healthzPort {port} on 127.0.0.1: Address already in use (set "
                    "another healthzPort in the config, or 0 to turn the HTTP port off)")


def test_run_refuses_a_state_directory_another_agent_holds(tmp_path: Path) -> None:
    for held, field in (("root", "rootDir"), ("run", "runDir")):
        owner = hold(tmp_path / held / "kubelet.lock")
        try:
            line = one_line_error("run", "--config", str(node_config(tmp_path)))
        finally:
            stop(owner)
        assert line.startswith(f"Error: {field} {tmp_path / held} is in use by pid {owner.pid} (")
        assert line.endswith(f"stop it first, or give this node its own {field}")


def test_runtime_refuses_a_root_or_socket_another_runtime_holds(tmp_path: Path) -> None:
    sock = tmp_path / "cri.sock"
    for lock, option in ((tmp_path / "root" / "runtime.lock", "--root"),
                         (Path(f"{sock}.lock"), "--listen")):
        owner = hold(lock)
        try:
            line = one_line_error("runtime", "--root", str(tmp_path / "root"),
                                  "--listen", f"unix://{sock}")
        finally:
            stop(owner)
        assert f"is in use by pid {owner.pid} (" in line
        assert line.endswith(f"one runtime per {option}")
    assert not sock.exists()


@pytest.mark.parametrize("root", ["/proc/pykube-no-such-dir", "FILE/below-a-file"])
def test_runtime_on_an_unusable_root(tmp_path: Path, root: str) -> None:
    (tmp_path / "FILE").write_text("")
    root = root.replace("FILE", str(tmp_path / "FILE"))
    line = one_line_error("runtime", "--root", root, "--listen", f"unix://{tmp_path}/c.sock")
    assert line.startswith(f"Error: --root {root}: cannot create it: ")


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pykubelet.runtime.image_build import build_busybox_image

    out = tmp_path_factory.mktemp("cliimg") / "busybox.tar"
    build_busybox_image(out, name="localhost/busybox:cli")
    return out


def test_image_import_of_a_truncated_archive(tmp_path: Path, archive: Path) -> None:
    truncated = tmp_path / "truncated.tar"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    line = one_line_error("image", "--root", str(tmp_path / "root"), "import", str(truncated))
    assert line.startswith("Error: ")
    assert str(truncated) in line
    assert line.endswith("truncated: unexpected end of data")


def test_build_busybox_into_a_missing_directory_or_from_a_wrong_binary(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "bb.tar"
    line = one_line_error("image", "build-busybox", str(out), usage=True)
    assert line == f"Error: Invalid value for OUT: {out}: directory {out.parent} does not exist"
    line = one_line_error("image", "build-busybox", "--busybox", "/no/busybox",
                          str(tmp_path / "bb.tar"))
    assert line == ("Error: busybox /no/busybox: not found or not an executable file "
                    "(install Debian's busybox-static)")
    assert list(tmp_path.iterdir()) == []
