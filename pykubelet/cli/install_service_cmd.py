"""`pykubelet install-service`: install pykubelet as a systemd service.

Writes ``/etc/systemd/system/pykubelet.service`` (this installation's ``pykubelet`` in
ExecStart) and, when absent, a default ``/etc/pykubelet/config.yaml``; then reloads
systemd. Running it again changes nothing that is already right, so provisioning can
call it on every run.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import click

from pykubelet.config import DEFAULT_CONFIG_PATH
from pykubelet.systemd.unit import DEFAULT_UNIT_DIR, UNIT_NAME, install


def _systemctl(*args: str) -> None:
    if shutil.which("systemctl") is None:
        raise click.ClickException("systemctl not found: is this host run by systemd?")
    proc = subprocess.run(["systemctl", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise click.ClickException(
            f"systemctl {' '.join(args)} failed: {detail[-1] if detail else proc.returncode}"
        )


@click.command("install-service")
@click.option("--config", "config", type=click.Path(dir_okay=False, path_type=Path),
              default=DEFAULT_CONFIG_PATH, show_default=True,
              help="The node config the service runs with (a default one is written if absent).")
@click.option("--unit-dir", type=click.Path(file_okay=False, path_type=Path),
              default=DEFAULT_UNIT_DIR, show_default=True, help="Where the unit is written.")
@click.option("--enable", is_flag=True, help="Also enable the service (start at boot).")
@click.option("--now", "start_now", is_flag=True,
              help="Also start (or restart, when the unit changed) the service now.")
@click.option("--no-reload", is_flag=True,
              help="Do not run systemctl (write the files only, e.g. into an image).")
def install_service(config: Path, unit_dir: Path, enable: bool, start_now: bool,
                    no_reload: bool) -> None:
    """Install the pykubelet systemd unit and a default node config."""
    if not config.is_absolute():
        raise click.BadParameter(f"{config}: must be an absolute path", param_hint="--config")
    try:
        done = install(config=config, unit_dir=unit_dir)
    except OSError as exc:
        raise click.ClickException(f"{exc.filename}: {exc.strerror}") from None
    for path in done.written:
        click.echo(f"wrote {path}")
    if done.unit not in done.written:
        click.echo(f"{done.unit} is up to date")
    if done.config not in done.written:
        click.echo(f"{done.config} exists: left as it is")
    if no_reload:
        return
    if done.unit in done.written:
        _systemctl("daemon-reload")
    if enable:
        _systemctl("enable", UNIT_NAME)
    if start_now:
        # a changed unit (or config) takes effect only by a restart; else start is enough
        _systemctl("restart" if done.written else "start", UNIT_NAME)
