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
# the ground floor's quantity module is shared (standard library only, see below)
QUANTITY_FLOOR = {"pykubelet", "pykubelet.api", "pykubelet.api.machinery",
                  "pykubelet.api.machinery.quantity", "pykubelet.api.machinery.errors",
                  "pykubelet.api.machinery.field"}


def test_no_heavy_imports_on_any_command_path() -> None:
    modules = sorted({f"pykubelet.cli.kubectl.{m}" for m, _ in COMMANDS.values()})
    code = ("import json, sys\n"
            f"for m in {modules!r}: __import__(m)\n"
            "import pykubelet.client.kubeconfig, pykubelet.cli.kubectl.threeway\n"
            "print(json.dumps(sorted(sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                       text=True, check=True).stdout)
    heavy = [m for m in loaded if m.startswith(FORBIDDEN)]
    assert heavy == []


def test_main_alone_imports_only_argparse() -> None:
    code = ("import sys; before = set(sys.modules); import pykubelet.cli.kubectl.main; "
            "print(sorted(set(sys.modules) - before))")
    new = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "urllib3" not in new
    assert "yaml" not in new
    assert "ssl" not in new


def test_the_quantity_module_stands_on_the_standard_library() -> None:
    """describe reads quantities with the API's one module: importing it brings the standard
    library and its two neighbours (field errors), nothing third-party, no codec or schema."""
    code = ("import json, sys; before = set(sys.modules); "
            "import pykubelet.api.machinery.quantity; "
            "print(json.dumps(sorted(set(sys.modules) - before)))")
    new = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, check=True).stdout)
    outside = [m for m in new
               if m.split(".")[0] not in sys.stdlib_module_names and m not in QUANTITY_FLOOR]
    assert outside == []
    assert "pykubelet.api.machinery.quantity" in new
