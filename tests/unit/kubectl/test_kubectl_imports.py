"""pykubectl's start-up stays small: no command pulls in grpc, aiohttp, the scheduler or
the control plane (they cost hundreds of milliseconds and pykubectl needs none of them),
nor urllib3 (pykubectl's client rides on http.client; urllib3's import is a third of a
short command's run)."""

from __future__ import annotations

import json
import subprocess
import sys

from pykubelet.cli.kubectl.main import COMMANDS

FORBIDDEN = ("grpc", "aiohttp", "pysched", "pykubelet.controlplane", "pykubelet.runtime",
             "pykubelet.kubelet", "click", "numpy", "google.protobuf", "urllib3")
# the one quantity parser (standard library only) is shared, not the scheduler
ALLOWED = ("pysched", "pykubelet.api.machinery.quantity")


def test_no_heavy_imports_on_any_command_path() -> None:
    modules = sorted({f"pykubelet.cli.kubectl.{m}" for m, _ in COMMANDS.values()})
    code = ("import json, sys\n"
            f"for m in {modules!r}: __import__(m)\n"
            "import pykubelet.client.kubeconfig, pykubelet.cli.kubectl.threeway\n"
            "print(json.dumps(sorted(sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                       text=True, check=True).stdout)
    heavy = [m for m in loaded if m.startswith(FORBIDDEN) and m not in ALLOWED]
    assert heavy == []


def test_main_alone_imports_only_argparse() -> None:
    code = ("import sys; before = set(sys.modules); import pykubelet.cli.kubectl.main; "
            "print(sorted(set(sys.modules) - before))")
    new = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "urllib3" not in new
    assert "yaml" not in new
    assert "ssl" not in new
