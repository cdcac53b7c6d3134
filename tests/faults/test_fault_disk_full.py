"""The store's disk full: the control plane's root (its SQLite file among it) on a 16 MiB
ext4 loop filesystem filled to the last block. Writes are answered with a 5xx Status that
says why, within the client's timeout (no hang), reads still answer, the process does not
die; once space is freed writes succeed again, and every object the API acknowledged is
there, also after a SIGKILL and restart."""

from __future__ import annotations

import json
import time

import pytest
from cp_process import ControlPlaneProcess
from loopfs import fill, free_bytes, loop_filesystem

pytestmark = [pytest.mark.root, pytest.mark.slow]

REQUEST_TIMEOUT = 15.0
VALUE = "x" * 200_000  # each ConfigMap ~200 kB: a handful fill what is left


def config_map(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"v": VALUE, "name": name}}


def test_store_on_a_full_disk_answers_5xx_with_a_reason_and_recovers(tmp_path):
    from kubernetes import client, config
    from kubernetes.client import ApiException

    with loop_filesystem(tmp_path / "disk.img", tmp_path / "disk") as disk:
        cp = ControlPlaneProcess(disk)  # its log beside it, off the small disk
        cp.start()
        try:
            core = client.CoreV1Api(config.new_client_from_config(str(cp.kubeconfig)))
            filler = disk / "filler"
            fill(filler, leave=1 << 20)
            acknowledged: list[str] = []
            refusals: list[tuple[int, str, float]] = []
            for i in range(200):
                t0 = time.monotonic()
                try:
                    core.create_namespaced_config_map(
                        "default", config_map(f"cm{i}"), _request_timeout=REQUEST_TIMEOUT)
                    acknowledged.append(f"cm{i}")
                except ApiException as exc:
                    body = json.loads(exc.body or "{}")
                    refusals.append((exc.status, body.get("message", ""),
                                     time.monotonic() - t0))
                    if len(refusals) >= 3:
                        break
            print(f"\n{len(acknowledged)} acknowledged, then refused: {refusals}")
            assert refusals, "the disk never filled"
            for status, message, seconds in refusals:
                assert status >= 500 or status == 429, refusals
                assert "disk is full" in message or "space" in message, refusals
                assert seconds < REQUEST_TIMEOUT, refusals
            assert cp.proc is not None
            assert cp.proc.poll() is None, "the control plane died"
            # reads go on while writes cannot
            names = {c.metadata.name for c in core.list_namespaced_config_map(
                "default", _request_timeout=REQUEST_TIMEOUT).items}
            assert set(acknowledged) <= names

            filler.unlink()
            assert free_bytes(disk) > 8 << 20
            end = time.monotonic() + 30
            while True:  # the next write after space is back succeeds
                try:
                    core.create_namespaced_config_map("default", config_map("after"),
                                                      _request_timeout=REQUEST_TIMEOUT)
                    break
                except ApiException:
                    assert time.monotonic() < end, "writes did not recover"
                    time.sleep(0.5)
            acknowledged.append("after")

            cp.kill()  # what was acknowledged is durable
            cp.start()
            core = client.CoreV1Api(config.new_client_from_config(str(cp.kubeconfig)))
            for name in acknowledged:
                cm = core.read_namespaced_config_map(name, "default",
                                                     _request_timeout=REQUEST_TIMEOUT)
                assert cm.data["name"] == name
        finally:
            cp.stop()
