"""An exec'd plugin's start imports only what its ADD needs (issue 23 item 6).

Every CNI ADD and DEL of an exec'd pycni plugin starts a fresh interpreter, so each
module its path imports is paid per call: tempfile (shutil, random, bz2, lzma),
dataclasses (inspect, ast, dis, tokenize), typing, contextlib and friends made
pycni-bridge's ADD+DEL ~2x the reference plugin's; json (re, enum) later ~20 ms of
each start. These tests run the interpreter as the launcher does (``-I -S``, the
launcher's sys.path) and name what must stay out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pycni.install import install, launcher_text

# The modules the bridge's ADD and DEL import, its function-level imports included
# (IPAM delegated in-process to host-local, the masquerade backend chosen and run).
ADD_PATH_MODULES = (
    "pycni.plugins.bridge",
    "pycni.plugins.host_local",
    "pycni.plugins.loopback",
    "pycni.invoke",
    "pycni.masq",
    "pycni.masq.select",
    "pycni.masq.restore",
    "pycni.ipam.configure",
)

HEAVY = (
    "tempfile", "shutil", "random", "bz2", "lzma",
    "dataclasses", "inspect", "ast", "dis", "tokenize", "typing", "contextlib",
    "ctypes", "asyncio", "logging", "subprocess", "socket", "selectors", "threading",
    "importlib.metadata", "hashlib", "pathlib", "pyroute2", "iptc", "yaml", "click",
    # json's pure-Python half compiles regular expressions at import: json brings re,
    # enum and friends (~20 ms of a ~45 ms start); pycni.jsonlite uses _json's C parts.
    "json", "re", "enum", "warnings", "importlib",
)


def launcher_prelude() -> str:
    """The launcher's lines before ``from <module> import main``: its sys.path."""
    lines = launcher_text("pycni.plugins.bridge").splitlines()
    assert lines[0].endswith(" -IS")
    assert lines[-1] == "main()"
    return "\n".join(lines[1:-2])


def test_importing_the_add_path_loads_no_heavy_module() -> None:
    code = "\n".join([launcher_prelude(), "before = set(sys.modules)",
                      *(f"import {m}" for m in ADD_PATH_MODULES),
                      "print('\\n'.join(sorted(set(sys.modules) - before)))", ""])
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True,
                         text=True, check=True).stdout.split()
    assert set(ADD_PATH_MODULES) <= set(out)
    assert sorted(set(HEAVY) & set(out)) == []


def test_the_installed_executable_starts_without_heavy_modules(tmp_path: Path) -> None:
    """The real launcher and entry point (VERSION: no namespace needed), under -X importtime."""
    install(str(tmp_path))
    launcher = tmp_path / "pycni-bridge"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CNI_COMMAND": "VERSION"}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-I", "-S", str(launcher)],
                          input=b'{"cniVersion": "1.0.0"}', env=env, capture_output=True,
                          check=True)
    assert "1.0.0" in json.loads(proc.stdout)["supportedVersions"]
    imported = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "pycni.plugins.bridge" in imported
    assert sorted(set(HEAVY) & imported) == []


def _run_bridge_main(command: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    """The launcher's lines with an atexit hook set before ``main()``: it runs only
    if the interpreter tears itself down."""
    code = "\n".join([launcher_prelude(), "import atexit",
                      "atexit.register(lambda: sys.stderr.write('torn down\\n'))",
                      "from pycni.plugins.bridge import main", "main()", ""])
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CNI_COMMAND": command}
    return subprocess.run([sys.executable, "-I", "-S", "-c", code], input=stdin, env=env,
                          capture_output=True, check=False)


def test_the_plugin_exits_without_tearing_the_interpreter_down() -> None:
    """The answer is flushed, then the process ends (os._exit): no module teardown."""
    ok = _run_bridge_main("VERSION", b'{"cniVersion": "1.0.0"}')
    assert ok.returncode == 0
    assert "1.0.0" in json.loads(ok.stdout)["supportedVersions"]
    assert b"torn down" not in ok.stderr

    bad = _run_bridge_main("ADD", b'{"cniVersion": "1.0.0", "name": "n", "type": "x"}')
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["code"] == 4  # no CNI_CONTAINERID: InvalidEnvironment
    assert b"torn down" not in bad.stderr
