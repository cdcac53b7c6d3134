"""The request deadline (issue 29 item 1, a store that answers slowly): with the SQLite
store's write lock held by someone else, a write ends with kube-apiserver's 504 Timeout
Status at --request-timeout (or the request's shorter ?timeout=) instead of waiting on the
store's 30 s busy timeout; reads go on; the write the store was handed lands once the lock
is gone, as upstream's post-timeout activity does; watches have no deadline."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cp_live import LiveAPI

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.filters.timeout import (
    WRITE_TIMEOUT_MESSAGE,
    is_long_running,
    request_deadline,
    timeout_error,
)
from pykubelet.controlplane.apiserver.requestinfo import parse_request_info
from pykubelet.controlplane.server import ControlPlaneThread, Options

REQUEST_TIMEOUT = 1.5


@pytest.fixture(scope="module")
def slow_cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveAPI, Path]]:
    root: Path = tmp_path_factory.mktemp("cp-timeout")
    thread = ControlPlaneThread(Options(root=root, listen="127.0.0.1:0", scheduler=False,
                                        controllers=False, request_timeout=REQUEST_TIMEOUT))
    thread.start()
    api = LiveAPI(thread)
    try:
        yield api, root / "store.db"
    finally:
        api.close()
        thread.stop()


@contextlib.contextmanager
def write_lock_held(db: Path) -> Iterator[None]:
    """Another connection holding SQLite's write lock: the store's writer waits on it."""
    conn = sqlite3.connect(db, timeout=0.1, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def config_map(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"k": "v"}}


def test_a_write_on_a_locked_store_ends_with_upstreams_504(slow_cp) -> None:
    api, db = slow_cp
    path = "/api/v1/namespaces/default/configmaps"
    with write_lock_held(db):
        reply = api.call("POST", path, config_map("slow"))
        assert reply.status == 504, reply.body
        assert REQUEST_TIMEOUT <= reply.seconds < REQUEST_TIMEOUT + 2
        assert reply.json() == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Timeout: request did not complete within requested timeout - "
                       "context deadline exceeded",
            "reason": "Timeout", "details": {}, "code": 504}
        assert "Retry-After" not in reply.headers
        # the request's own ?timeout= is shorter
        short = api.call("POST", path + "?timeout=300ms", config_map("shorter"))
        assert short.status == 504
        assert short.seconds < 1.2
        # reads do not wait on the writer
        got = api.call("GET", path)
        assert got.status == 200
        assert got.seconds < 1.0
    # the writes handed to the store land once it can take them (post-timeout activity)
    end = time.monotonic() + 10
    while api.call("GET", path + "/slow").status != 200:
        assert time.monotonic() < end, "the timed-out write never landed"
        time.sleep(0.1)
    assert api.call("POST", path, config_map("after")).status == 201


def test_a_malformed_timeout_is_a_bad_request(slow_cp) -> None:
    api, _ = slow_cp
    reply = api.call("GET", "/api/v1/namespaces/default/configmaps?timeout=soon")
    assert reply.status == 400
    assert reply.json()["message"] == ('invalid timeout specified in the request URL - '
                                       'time: invalid duration "soon"')


def test_deadlines_and_long_running_requests() -> None:
    assert request_deadline({}, 60) == 60
    assert request_deadline({"timeout": "2s"}, 60) == 2
    assert request_deadline({"timeout": "0s"}, 60) == 60  # 0: no shorter timeout asked
    assert request_deadline({"timeout": "5m"}, 60) == 60  # never past the maximum
    with pytest.raises(errors.StatusError):
        request_deadline({"timeout": "5"}, 60)  # Go durations need a unit
    assert is_long_running(parse_request_info("GET", "/api/v1/pods", True))
    assert is_long_running(parse_request_info("GET", "/api/v1/namespaces/d/pods/p/log"))
    assert is_long_running(parse_request_info("POST", "/api/v1/namespaces/d/pods/p/exec"))
    assert not is_long_running(parse_request_info("GET", "/api/v1/pods"))
    assert not is_long_running(parse_request_info("POST", "/api/v1/namespaces/d/pods/p/binding"))
    assert timeout_error("create").message == WRITE_TIMEOUT_MESSAGE
    assert timeout_error("list").message == (
        "Timeout: request did not complete within the allotted timeout")
