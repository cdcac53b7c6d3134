"""``pycni install``: plugin executables that any CNI runtime can exec.

Each executable is a tiny launcher script, not a console-script wrapper: its
shebang names this interpreter with ``-I -S`` (isolated, no ``site``), so a
plugin start costs the interpreter and the plugin module only; the few
``sys.path`` entries ``site`` would have added are written into the launcher.
The second line, ``# pycni-launcher: <module>``, marks it as ours, which lets
the runtime side (:mod:`pycni.invoke`) call the module in-process instead of
exec'ing it, under any file name (the ``--drop-in`` reference names too).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

from pycni.atomic_files import write_atomic
from pycni.invoke import LAUNCHER_MARKER

DROP_IN_NAMES = {
    "pycni-loopback": "loopback",
    "pycni-bridge": "bridge",
    "pycni-host-local": "host-local",
}


def plugin_modules() -> dict[str, str]:
    """Executable name -> plugin module, from the plugin package's registry."""
    from pycni.plugins import IN_PROCESS

    return dict(IN_PROCESS)


def import_paths() -> list[str]:
    """What a no-``site`` interpreter needs on sys.path to import pycni and its deps."""
    here = str(Path(__file__).resolve().parent.parent)
    paths = [here]
    for key in ("purelib", "platlib"):
        p = sysconfig.get_paths()[key]
        if p not in paths:
            paths.append(p)
    return paths


def launcher_text(module: str, python: str | None = None) -> str:
    interpreter = python or sys.executable
    if not interpreter or not os.path.isabs(interpreter):
        raise RuntimeError("cannot tell the absolute path of this Python interpreter")
    return (
        f"#!{interpreter} -IS\n"
        f"{LAUNCHER_MARKER}{module}\n"
        "# Written by `pycni install`; a CNI plugin executable.\n"
        "import sys\n"
        f"sys.path[0:0] = {import_paths()!r}\n"
        f"from {module} import main\n"
        "main()\n"
    )


def _write_executable(path: str, text: str) -> None:
    """Atomically (temp file + rename), so a runtime never execs a half-written file."""
    write_atomic(path, text, mode=0o755)


def install(bin_dir: str, drop_in: bool = False, python: str | None = None) -> list[str]:
    """Write the launchers (and, with ``drop_in``, the reference names) into ``bin_dir``."""
    os.makedirs(bin_dir, mode=0o755, exist_ok=True)
    written: list[str] = []
    for name, module in sorted(plugin_modules().items()):
        text = launcher_text(module, python)
        names = [name]
        if drop_in and name in DROP_IN_NAMES:
            names.append(DROP_IN_NAMES[name])
        for exe in names:
            path = os.path.join(bin_dir, exe)
            _write_executable(path, text)
            written.append(path)
    return written
