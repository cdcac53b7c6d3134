"""Malformed configs and environments given to our exec'd plugins.

Each one must print the CNI error JSON on stdout with the spec's code, exit
non-zero, and change nothing (no bridge, no address reserved).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pycni.install import install

pytestmark = [pytest.mark.root, pytest.mark.netns]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tmp = tmp_path_factory.mktemp("pccmal")
    install(str(tmp / "bin"))
    token = secrets.token_hex(3)
    ns_name = f"pcc-mal-{token}"
    subprocess.run(["ip", "netns", "add", ns_name], check=True)
    try:
        yield {"bin": str(tmp / "bin"), "ns": ns_name, "ipam": str(tmp / "ipam"),
               "bridge": f"pccmal{token}"}
    finally:
        subprocess.run(["ip", "netns", "del", ns_name], check=False, capture_output=True)
        subprocess.run(["ip", "link", "del", f"pccmal{token}"], check=False,
                       capture_output=True)


def _good(s: dict[str, str]) -> dict:
    return {"cniVersion": "1.0.0", "name": "pccmal", "type": "pycni-bridge",
            "bridge": s["bridge"], "isGateway": True,
            "ipam": {"type": "pycni-host-local", "dataDir": s["ipam"],
                     "ranges": [[{"subnet": "10.91.130.0/24"}]]}}


def _exec(s: dict[str, str], plugin: str, stdin: bytes, **env: str) -> tuple[int, dict]:
    base = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "pcc-mal", "CNI_NETNS":
            f"/run/netns/{s['ns']}", "CNI_IFNAME": "eth0", "CNI_PATH": s["bin"]}
    full = {k: v for k, v in {**base, **env}.items() if v is not None and v != "<unset>"}
    proc = subprocess.run([os.path.join(s["bin"], plugin)], input=stdin, env=full,
                          capture_output=True, check=False, timeout=60)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}


def _drop(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


CASES = {
    "bad-json": (lambda g: b'{"cniVersion": "1.0.0", "name": ', {}, 6, ""),
    "not-an-object": (lambda g: b"[]", {}, 6, ""),
    "missing-name": (lambda g: _drop(g, "name"), {}, 7, "name"),
    "missing-type": (lambda g: _drop(g, "type"), {}, 7, "type"),
    "missing-cniVersion": (lambda g: _drop(g, "cniVersion"), {}, 7, "cniVersion"),
    "name-not-string": (lambda g: {**g, "name": 42}, {}, 7, "name"),
    "cniVersion-not-string": (lambda g: {**g, "cniVersion": 1}, {}, 7, "cniVersion"),
    "ipam-not-object": (lambda g: {**g, "ipam": "host-local"}, {}, 7, "ipam"),
    "unknown-cniVersion": (lambda g: {**g, "cniVersion": "0.9.0"}, {}, 1, "0.9.0"),
    "missing-CNI_NETNS": (lambda g: g, {"CNI_NETNS": "<unset>"}, 4, "CNI_NETNS"),
    "missing-CNI_CONTAINERID": (lambda g: g, {"CNI_CONTAINERID": "<unset>"}, 4,
                                "CNI_CONTAINERID"),
    "missing-CNI_IFNAME": (lambda g: g, {"CNI_IFNAME": "<unset>"}, 4, "CNI_IFNAME"),
    "unknown-command": (lambda g: g, {"CNI_COMMAND": "FROB"}, 4, "FROB"),
    "check-before-0.4.0": (lambda g: {**g, "cniVersion": "0.3.1"}, {"CNI_COMMAND": "CHECK"}, 1,
                           "CHECK"),
}


@pytest.mark.parametrize("plugin", ["pycni-bridge", "pycni-host-local", "pycni-loopback"])
@pytest.mark.parametrize("case", CASES)
def test_malformed_input_yields_error_json(setup: dict[str, str], case: str, plugin: str) -> None:
    make, env, code, words = CASES[case]
    good = {**_good(setup), "type": plugin}
    doc = make(good)
    stdin = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    status, err = _exec(setup, plugin, stdin, **env)
    assert status != 0
    assert err["code"] == code, err
    assert words in err["msg"] + err.get("details", "")
    assert isinstance(err.get("cniVersion"), str)
    links = subprocess.run(["ip", "link", "show", setup["bridge"]], capture_output=True,
                           check=False)
    assert links.returncode != 0  # no bridge was made
    assert not Path(setup["ipam"], "pccmal").exists() or not [
        f for f in os.listdir(Path(setup["ipam"], "pccmal"))
        if f != "lock" and not f.startswith("last_reserved")]
