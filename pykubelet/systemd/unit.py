"""The systemd unit and the default node config that ``pykubelet install-service`` writes.

The unit's text ships inside the package (``pykubelet.service``, the same file as the
repository's ``vagrant/pykubelet.service``); installing it only puts this installation's
``pykubelet`` and the chosen config path into ``ExecStart``. Installing twice changes
nothing: a file is rewritten only when its content differs, and an existing config is
never touched (it is the operator's).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import asdict, dataclass, fields, replace
from importlib import resources
from pathlib import Path

import yaml

from pycni.atomic_files import write_atomic
from pykubelet.config import DEFAULT_CONFIG_PATH, ControlPlaneConfig, KubeletConfig

UNIT_NAME = "pykubelet.service"
DEFAULT_UNIT_DIR = Path("/etc/systemd/system")
#: where the repository's unit (and the Vagrant lab) installs the project
TEMPLATE_EXECUTABLE = "/opt/pykubelet/venv/bin/pykubelet"
TEMPLATE_EXEC_START = f"ExecStart={TEMPLATE_EXECUTABLE} run --config {DEFAULT_CONFIG_PATH}"


def unit_template() -> str:
    return resources.files("pykubelet.systemd").joinpath(UNIT_NAME).read_text()


def this_executable() -> list[str]:
    """How to start this installation's pykubelet: its console script beside the running
    interpreter, else the interpreter with ``-m``."""
    script = Path(sys.executable).parent / "pykubelet"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "pykubelet.cli.main"]


def render_unit(executable: list[str], config: Path = DEFAULT_CONFIG_PATH) -> str:
    """The unit text with ``executable`` and ``config`` in ExecStart."""
    text = unit_template()
    if TEMPLATE_EXEC_START not in text.splitlines():
        raise RuntimeError(f"{UNIT_NAME}: the packaged unit has no {TEMPLATE_EXEC_START!r}")
    exec_start = "ExecStart=" + shlex.join([*executable, "run", "--config", str(config)])
    return text.replace(TEMPLATE_EXEC_START, exec_start)


def default_config() -> str:
    """A node config with every default spelled out: this host runs the control plane and a
    node, as ``pykubelet run`` does without a config (DESIGN "Commands")."""
    cfg = KubeletConfig()
    lines = [
        "# pykubelet's node config, written by `pykubelet install-service`.",
        "# As written, this host runs the control plane and a node. For a node that joins",
        "# another control plane, remove controlPlane and set server, token and caCertHash",
        "# (`pykubelet control-plane join-command` on the control node prints them).",
        f"apiVersion: {cfg.apiVersion}",
        f"kind: {cfg.kind}",
    ]
    skip = {"apiVersion", "kind", "nodeName", "controlPlane", "server", "token", "caCertHash"}
    values = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.name not in skip}
    values["controlPlane"] = asdict(ControlPlaneConfig())
    # this node proxies Services (the code's default is off, so that tests never program
    # their host's tables); the cluster's pods are 10.244.0.0/16 as the lab and Vagrant's
    values["serviceProxy"] = asdict(replace(cfg.serviceProxy, enabled=True,
                                            clusterCIDR="10.244.0.0/16"))
    body = yaml.safe_dump(values, default_flow_style=False, sort_keys=False)
    return "\n".join(lines) + "\n" + body


@dataclass(frozen=True)
class Installed:
    """What one install did: the paths written (unchanged files are not listed)."""

    unit: Path
    config: Path
    written: tuple[Path, ...]


def install(
    executable: list[str] | None = None,
    config: Path = DEFAULT_CONFIG_PATH,
    unit_dir: Path = DEFAULT_UNIT_DIR,
) -> Installed:
    """Write the unit (when its text changed) and the default config (when absent)."""
    unit_path = unit_dir / UNIT_NAME
    text = render_unit(executable or this_executable(), config)
    written: list[Path] = []
    try:
        current = unit_path.read_text()
    except FileNotFoundError:
        current = None
    if current != text:
        unit_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(unit_path, text, mode=0o644)
        written.append(unit_path)
    if not config.exists():
        config.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(config, default_config(), mode=0o644)
        written.append(config)
    return Installed(unit_path, config, tuple(written))
