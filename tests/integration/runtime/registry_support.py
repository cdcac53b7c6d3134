"""A real registry for pull tests: Debian's docker-registry (distribution 2.8) on loopback,
with no auth, htpasswd auth, or token auth served by a small token server of our own
(aiohttp, JWTs signed RS256 with a self-signed key the registry trusts); images are pushed
with skopeo from locally built archives."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import json
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

REGISTRY_BIN = "/usr/bin/docker-registry"
SERVICE = "pyk-test-registry"
ISSUER = "pyk-test-issuer"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenServer:
    """Docker Hub's token dance in miniature: GET /token?service=&scope= with optional
    Basic credentials answers {"token": JWT} granting what the user may do."""

    def __init__(self, base: Path, users: dict[str, str]) -> None:
        self.users = users
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pyk-token-signer")])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(minutes=5))
                     .not_valid_after(now + datetime.timedelta(days=1))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
                     .sign(self.key, hashes.SHA256()))
        self.cert_path = base / "token-signer.pem"
        self.cert_path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        self.port = free_port()
        self.requests: list[dict[str, str]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def realm(self) -> str:
        return f"http://127.0.0.1:{self.port}/token"

    def jwt(self, subject: str, access: list[dict]) -> str:
        der = self.cert.public_bytes(serialization.Encoding.DER)
        header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(der).decode()]}
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": subject, "aud": SERVICE, "exp": now + 300,
                  "nbf": now - 10, "iat": now, "jti": uuid.uuid4().hex, "access": access}
        signing = (_b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims).encode()))
        sig = self.key.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing + "." + _b64(sig)

    async def _token(self, request: web.Request) -> web.Response:
        user = ""
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            if self.users.get(user) != password:
                return web.Response(status=401, text="bad credentials")
        self.requests.append({"user": user, "scope": request.query.get("scope", ""),
                              "service": request.query.get("service", "")})
        access = []
        for scope in request.query.getall("scope", []):
            kind, _, rest = scope.partition(":")
            repo, _, actions = rest.rpartition(":")
            granted = [a for a in actions.split(",") if a == "pull" or (a == "push" and user)]
            if user or repo.startswith("public/"):  # anonymous: public/* only
                access.append({"type": kind, "name": repo, "actions": granted})
        return web.json_response({"token": self.jwt(user, access), "expires_in": 300})

    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop

            async def serve() -> None:
                app = web.Application()
                app.router.add_get("/token", self._token)
                self._runner = web.AppRunner(app, access_log=None)
                await self._runner.setup()
                await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

            loop.run_until_complete(serve())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True, name="token-server")
        self._thread.start()
        ready.wait(10)

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(10)


@dataclass
class Registry:
    base: Path
    auth: str = ""  # "", "htpasswd" or "token"
    users: dict[str, str] = field(default_factory=lambda: {"alice": "s3cret"})
    log_level: str = "warn"  # "info" logs every request ("response completed")
    port: int = 0
    proc: subprocess.Popen | None = None
    token_server: TokenServer | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self.port = free_port()
        self.base.mkdir(parents=True, exist_ok=True)
        cfg: dict = {
            "version": 0.1, "log": {"level": self.log_level},
            "storage": {"filesystem": {"rootdirectory": str(self.base / "data")},
                        "delete": {"enabled": True}},
            "http": {"addr": self.host},
        }
        if self.auth == "htpasswd":
            htpasswd = self.base / "htpasswd"
            lines = [subprocess.run(["htpasswd", "-Bbn", u, pw], check=True, text=True,
                                    capture_output=True).stdout.strip()
                     for u, pw in self.users.items()]
            htpasswd.write_text("\n".join(lines) + "\n")
            cfg["auth"] = {"htpasswd": {"realm": "pyk-basic", "path": str(htpasswd)}}
        elif self.auth == "token":
            self.token_server = TokenServer(self.base, self.users)
            self.token_server.start()
            cfg["auth"] = {"token": {"realm": self.token_server.realm, "service": SERVICE,
                                     "issuer": ISSUER,
                                     "rootcertbundle": str(self.token_server.cert_path)}}
        (self.base / "config.yml").write_text(json.dumps(cfg))  # JSON is YAML
        log = open(self.base / "registry.log", "ab")  # noqa: SIM115 (the child owns it)
        self.proc = subprocess.Popen([REGISTRY_BIN, "serve", str(self.base / "config.yml")],
                                     stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        log.close()
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://{self.host}/v2/", timeout=1)
                return
            except urllib.error.HTTPError:
                return  # 401: up, and asking for auth
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("registry did not start:\n" + self.log()) from None
                time.sleep(0.05)

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.base / "registry.log").read_text(errors="replace")[-4000:]
        return ""

    def push(self, archive: Path, repo_tag: str, *, creds: str = "",
             fmt: str = "oci-archive") -> None:
        """skopeo copy ARCHIVE docker://127.0.0.1:PORT/REPO:TAG (plain HTTP)."""
        args = ["skopeo", "copy", "-q", "--dest-tls-verify=false"]
        if creds:
            args += ["--dest-creds", creds]
        if fmt == "docker-v2s2":
            args += ["--format", "v2s2"]
        subprocess.run([*args, f"oci-archive:{archive}", f"docker://{self.host}/{repo_tag}"],
                       check=True, timeout=120, capture_output=True)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.token_server is not None:
            self.token_server.stop()
