"""Real kubectl against the runtime's streaming server: exec (WebSocket v5 and the SPDY
fallback), exec -i, exec -it under a pseudo-terminal, and port-forward (SPDY tunnelled in a
WebSocket, and plain SPDY).

kubectl needs an API server; until pykubelet has one, a stand-in here answers discovery and
GET of one pod, and for pods/exec and pods/portforward calls CRI Exec/PortForward on the
runtime and forwards the connection to the returned URL with ``streaming.proxy`` (what
kubelet and the API server do), so the bytes kubectl exchanges are the runtime's."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import termios
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.streaming.proxy import proxy_upgrade

pytestmark = [pytest.mark.root, pytest.mark.runc]
POD = "rtkube"


def _json_handler(doc: dict):  # type: ignore[no-untyped-def]
    async def handler(request: web.Request) -> web.Response:
        return web.json_response(doc)

    return handler


class FakeAPI:
    """Discovery, one pod, and its exec/attach/portforward proxied to the runtime."""

    def __init__(self, cri, pod_id: str, cid: str) -> None:  # type: ignore[no-untyped-def]
        self.cri, self.pod_id, self.cid = cri, pod_id, cid
        self.port = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None

    def pod(self) -> dict:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": POD, "namespace": "default", "uid": "u1"},
                "spec": {"containers": [{"name": "app", "image": "busybox"}]},
                "status": {"phase": "Running"}}

    async def exec_(self, request: web.Request) -> web.StreamResponse:
        q = request.query
        req = pb.ExecRequest(container_id=self.cid, cmd=q.getall("command"),
                             stdin=q.get("stdin") in ("true", "1"),
                             stdout=q.get("stdout") in ("true", "1"),
                             stderr=q.get("stderr") in ("true", "1"),
                             tty=q.get("tty") in ("true", "1"))
        url = await asyncio.to_thread(lambda: self.cri.runtime.Exec(req, timeout=10).url)
        return await proxy_upgrade(request, url)

    async def portforward(self, request: web.Request) -> web.StreamResponse:
        url = await asyncio.to_thread(lambda: self.cri.runtime.PortForward(
            pb.PortForwardRequest(pod_sandbox_id=self.pod_id), timeout=10).url)
        return await proxy_upgrade(request, url)

    def app(self) -> web.Application:
        resources = [{"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
                      "verbs": ["get", "list"], "shortNames": ["po"]}]
        for sub, kind in (("exec", "PodExecOptions"), ("portforward", "PodPortForwardOptions"),
                          ("attach", "PodAttachOptions")):
            resources.append({"name": f"pods/{sub}", "singularName": "", "namespaced": True,
                              "kind": kind, "verbs": ["create", "get"]})
        docs = {
            "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]},
            "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
            "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1",
                        "resources": resources},
            "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0"},
            f"/api/v1/namespaces/default/pods/{POD}": self.pod(),
        }
        app = web.Application()
        for path, doc in docs.items():
            app.router.add_get(path, _json_handler(doc))
        base = f"/api/v1/namespaces/default/pods/{POD}"
        app.router.add_route("*", base + "/exec", self.exec_)
        app.router.add_route("*", base + "/portforward", self.portforward)
        return app

    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self.loop = loop

            async def serve() -> web.AppRunner:
                runner = web.AppRunner(self.app(), access_log=None)
                await runner.setup()
                await web.TCPSite(runner, "127.0.0.1", 0).start()
                self.port = runner.addresses[0][1]
                return runner

            runner = loop.run_until_complete(serve())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
        if self.thread is not None:
            self.thread.join(10)


@pytest.fixture
def api(cri, tmp_path: Path) -> Iterator[tuple[FakeAPI, list[str], dict[str, str]]]:  # type: ignore[no-untyped-def]
    pod_id, pod_cfg = cri.run_pod(POD)
    cid = cri.start_container(pod_id, pod_cfg, "app", [
        "sh", "-c", "mkdir -p /tmp/w && echo pf-ok > /tmp/w/index.html && "
                    "exec httpd -f -p 8080 -h /tmp/w"])
    fake = FakeAPI(cri, pod_id, cid)
    fake.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")  # never the user's ~/.kube/config
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    base = ["kubectl", "--server", f"http://127.0.0.1:{fake.port}",
            "--cache-dir", str(tmp_path / "kcache"), "-n", "default"]
    try:
        yield fake, base, env
    finally:
        fake.stop()


@pytest.mark.parametrize("websockets", ["true", "false"])
def test_kubectl_exec(api, websockets) -> None:  # type: ignore[no-untyped-def]
    _, base, env = api
    env = {**env, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": websockets}
    r = subprocess.run([*base, "exec", POD, "--", "sh", "-c", "echo out; echo err >&2; exit 3"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 3, r.stderr
    assert r.stdout == "out\n"
    assert "err" in r.stderr
    r = subprocess.run([*base, "exec", "-i", POD, "--", "sh", "-c", "cat; echo done"],
                       input="piped-in\n", capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "piped-in\ndone\n"


def test_kubectl_exec_tty_under_a_pseudo_terminal(api) -> None:  # type: ignore[no-untyped-def]
    _, base, env = api
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe("kubectl", [*base, "exec", "-it", POD, "--", "sh"], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 37, 111, 0, 0))
    out = b""
    deadline = time.monotonic() + 30
    sent = False
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if not sent and (b"#" in out or b"$" in out):
            os.write(fd, b"stty size; echo tty-$((6*7)); exit 9\r")
            sent = True
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert "37 111" in text
    assert "tty-42" in text
    assert os.waitstatus_to_exitcode(status) == 9


@pytest.mark.parametrize("websockets", ["true", "false"])
def test_kubectl_port_forward(api, websockets) -> None:  # type: ignore[no-untyped-def]
    _, base, env = api
    env = {**env, "KUBECTL_PORT_FORWARD_WEBSOCKETS": websockets}
    proc = subprocess.Popen([*base, "port-forward", "--address", "127.0.0.1",
                             f"pod/{POD}", ":8080"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert "Forwarding from 127.0.0.1:" in line, (line, proc.stderr.read()
                                                      if proc.poll() is not None else "")
        lport = int(line.split("127.0.0.1:")[1].split()[0])
        for _ in range(3):
            with urllib.request.urlopen(f"http://127.0.0.1:{lport}/index.html",
                                        timeout=10) as resp:
                assert resp.read() == b"pf-ok\n"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def test_api_stand_in_answers_discovery(api) -> None:  # type: ignore[no-untyped-def]
    _, base, env = api
    r = subprocess.run([*base, "get", "pod", POD, "-o", "json"], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metadata"]["name"] == POD
