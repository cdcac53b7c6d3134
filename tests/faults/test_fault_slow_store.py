"""A store that answers slowly, under a control plane process: etcd behind a proxy that
delays every chunk, and SQLite with its write lock held by another process. Requests end
with kube-apiserver's 504 Timeout Status at --request-timeout, kubectl prints upstream's
words, nothing hangs, and once the store is quick again writes succeed and what was
acknowledged is there."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest
from cp_process import ControlPlaneProcess
from slow_proxy import SlowProxy

from pykubelet.controlplane.storage.etcdserver import EtcdServer

pytestmark = [pytest.mark.root, pytest.mark.slow]

DEADLINE = 2.0
WRITE_TIMEOUT = ("Timeout: request did not complete within requested timeout - "
                 "context deadline exceeded")


def timed_kubectl(cp: ControlPlaneProcess, *args: str, input: str | None = None
                  ) -> tuple[int, str, float]:
    t0 = time.monotonic()
    res = cp.kubectl(*args, check=False, timeout=DEADLINE + 30, input=input)
    return res.returncode, res.stdout + res.stderr, time.monotonic() - t0


def create(cp: ControlPlaneProcess, name: str) -> tuple[int, str, float]:
    manifest = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name}, "data": {"k": "v"}})
    return timed_kubectl(cp, "create", "-f", "-", input=manifest)


def check_timeouts_then_recovery(cp: ControlPlaneProcess, slow, quick) -> None:  # type: ignore[no-untyped-def]
    rc, out, _ = create(cp, "before")
    assert rc == 0, out
    slow()
    rc, out, seconds = create(cp, "during")
    print(f"\nslow store: kubectl create answered in {seconds:.1f}s: {out.strip()}")
    assert rc != 0
    assert "Error from server (Timeout)" in out
    assert WRITE_TIMEOUT in out
    assert seconds < DEADLINE + 10  # kubectl's own start included, no hang
    assert cp.proc is not None
    assert cp.proc.poll() is None
    quick()
    end = time.monotonic() + 30
    while True:
        rc, out, _ = create(cp, "after")
        if rc == 0:
            break
        assert time.monotonic() < end, out
        time.sleep(0.5)
    rc, out, _ = timed_kubectl(cp, "get", "configmap", "before", "after", "-o", "name")
    assert rc == 0, out
    assert out.split() == ["configmap/before", "configmap/after"]


def test_etcd_answering_slowly_gives_504s_not_hangs(tmp_path):
    etcd = EtcdServer(tmp_path / "etcd")
    etcd.start()
    host, port = etcd.client_url.removeprefix("http://").rsplit(":", 1)
    proxy = SlowProxy((host, int(port)))
    cp = ControlPlaneProcess(tmp_path / "cp", etcd_url=proxy.url,
                             extra_args=["--request-timeout", f"{DEADLINE:g}s"])
    try:
        cp.start()

        def slow() -> None:
            proxy.delay = 8.0

        def quick() -> None:
            proxy.delay = 0.0

        check_timeouts_then_recovery(cp, slow, quick)
    finally:
        cp.stop()
        proxy.close()
        etcd.remove()


def test_sqlite_with_its_lock_held_gives_504s_not_hangs(tmp_path):
    cp = ControlPlaneProcess(tmp_path / "cp", extra_args=["--request-timeout", f"{DEADLINE:g}s"])
    held: list[sqlite3.Connection] = []
    try:
        cp.start()

        def slow() -> None:
            conn = sqlite3.connect(tmp_path / "cp" / "store.db", timeout=5, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            held.append(conn)

        def quick() -> None:
            while held:
                conn = held.pop()
                conn.execute("ROLLBACK")
                conn.close()

        check_timeouts_then_recovery(cp, slow, quick)
    finally:
        for conn in held:
            conn.close()
        cp.stop()
