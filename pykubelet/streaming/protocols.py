"""The names and messages of Kubernetes' streaming protocols (no I/O).

remotecommand (exec, attach): over SPDY the client opens one stream per ``streamType``
(error, stdin, stdout, stderr, resize) and negotiates ``X-Stream-Protocol-Version``
(v4.channel.k8s.io down to channel.k8s.io); over WebSocket every binary message starts with
its channel byte (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize) and v5.channel.k8s.io adds
255 = "close channel N" (half-closing stdin). v4 and later send a ``metav1.Status`` JSON on
the error channel, carrying a non-zero exit code as cause ``ExitCode``; older versions send
only failure text. Resize messages are ``{"Width": w, "Height": h}`` JSON values.

portforward: SPDY ``portforward.k8s.io``, a data and an error stream per connection, paired
by the ``requestID`` header and naming the ``port``; WebSocket (v4.channel.k8s.io), channels
2i (data) and 2i+1 (error) for the i-th ``port`` query parameter, each opened by the port as
two little-endian bytes; or (kubectl >= 1.31) ``SPDY/3.1+portforward.k8s.io``: the SPDY
protocol above, its bytes carried in binary WebSocket messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

STREAM_PROTOCOL_V1 = "channel.k8s.io"
STREAM_PROTOCOL_V2 = "v2.channel.k8s.io"
STREAM_PROTOCOL_V3 = "v3.channel.k8s.io"
STREAM_PROTOCOL_V4 = "v4.channel.k8s.io"
STREAM_PROTOCOL_V5 = "v5.channel.k8s.io"  # WebSocket only
PORT_FORWARD_PROTOCOL_V1 = "portforward.k8s.io"
# kubectl >= 1.31 port-forwards over a WebSocket carrying SPDY frames (binary messages)
WS_SPDY_TUNNEL_PORT_FORWARD = "SPDY/3.1+" + PORT_FORWARD_PROTOCOL_V1

# what a server accepts, most preferred first
SPDY_REMOTECOMMAND_PROTOCOLS = (STREAM_PROTOCOL_V4, STREAM_PROTOCOL_V3, STREAM_PROTOCOL_V2,
                                STREAM_PROTOCOL_V1)
WS_REMOTECOMMAND_PROTOCOLS = (STREAM_PROTOCOL_V5, STREAM_PROTOCOL_V4, STREAM_PROTOCOL_V1)
SPDY_PORT_FORWARD_PROTOCOLS = (PORT_FORWARD_PROTOCOL_V1,)
WS_PORT_FORWARD_PROTOCOLS = (WS_SPDY_TUNNEL_PORT_FORWARD, STREAM_PROTOCOL_V4,
                             STREAM_PROTOCOL_V1)

HEADER_PROTOCOL_VERSION = "X-Stream-Protocol-Version"
HEADER_ACCEPTED_PROTOCOL_VERSIONS = "X-Accepted-Stream-Protocol-Versions"
SPDY_UPGRADE = "SPDY/3.1"

STREAM_TYPE = "streamType"
STREAM_ERROR = "error"
STREAM_STDIN = "stdin"
STREAM_STDOUT = "stdout"
STREAM_STDERR = "stderr"
STREAM_RESIZE = "resize"
STREAM_DATA = "data"
PORT_HEADER = "port"
REQUEST_ID_HEADER = "requestID"

CH_STDIN = 0
CH_STDOUT = 1
CH_STDERR = 2
CH_ERROR = 3
CH_RESIZE = 4
CH_CLOSE = 255  # v5: [255, channel] closes that channel

NON_ZERO_EXIT_CODE_REASON = "NonZeroExitCode"
EXIT_CODE_CAUSE = "ExitCode"


@dataclass(frozen=True)
class StreamOptions:
    """Which streams a remote command has (from the CRI request the token names)."""

    stdin: bool = False
    stdout: bool = True
    stderr: bool = True
    tty: bool = False

    def __post_init__(self) -> None:
        if self.tty and self.stderr:
            object.__setattr__(self, "stderr", False)  # a terminal has one output stream


@dataclass(frozen=True)
class TerminalSize:
    width: int
    height: int

    def to_json(self) -> bytes:
        return json.dumps({"Width": self.width, "Height": self.height}).encode()


class ResizeDecoder:
    """Splits a byte stream of concatenated JSON values (Go's json.Decoder input).

    kubelet's handleResizing stops at the first value that does not decode; here a value
    nested too deep to decode, or more than MAX_PENDING bytes that never complete one (a
    size is some 30 bytes), stop it likewise: later bytes are dropped, so a client cannot
    make the stream hold, and re-read at every message, an ever longer tail."""

    MAX_PENDING = 4096

    def __init__(self) -> None:
        self._buf = ""
        self._decoder = json.JSONDecoder()
        self.stopped = False

    def feed(self, data: bytes) -> list[TerminalSize]:
        if self.stopped:
            return []
        self._buf += data.decode(errors="replace")
        out: list[TerminalSize] = []
        while True:
            text = self._buf.lstrip()
            if not text:
                self._buf = ""
                return out
            try:
                value, end = self._decoder.raw_decode(text)
            except RecursionError:
                self._stop()
                return out
            except ValueError:
                self._buf = text
                if len(text) > self.MAX_PENDING:
                    self._stop()
                return out
            self._buf = text[end:]
            if isinstance(value, dict):
                w, h = value.get("Width", 0), value.get("Height", 0)
                if isinstance(w, int) and isinstance(h, int) and w >= 0 and h >= 0:
                    out.append(TerminalSize(w, h))

    def _stop(self) -> None:
        self.stopped = True
        self._buf = ""


def negotiate(client: list[str], server: tuple[str, ...]) -> str | None:
    """httpstream.Handshake's rule: the first of the client's protocols the server has."""
    for proto in client:
        if proto in server:
            return proto
    return None


def client_protocols(values: list[str]) -> list[str]:
    """``X-Stream-Protocol-Version`` values (repeated headers, or comma-separated)."""
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def status_success() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def status_exit_code(code: int) -> dict[str, Any]:
    """What kubelet writes when the command exited non-zero (client-go reads the code)."""
    return {
        "metadata": {}, "status": "Failure",
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "reason": NON_ZERO_EXIT_CODE_REASON,
        "details": {"causes": [{"reason": EXIT_CODE_CAUSE, "message": str(code)}]},
    }


def status_internal_error(message: str) -> dict[str, Any]:
    return {
        "metadata": {}, "status": "Failure", "message": f"Internal error occurred: {message}",
        "reason": "InternalError", "details": {"causes": [{"message": message}]}, "code": 500,
    }


class RemoteCommandError(Exception):
    """The remote side reported a failure other than an exit code."""


def exit_code_from_status(raw: bytes, *, json_status: bool = True) -> int:
    """client-go's reading of the error stream: 0, the exit code, or RemoteCommandError."""
    if not raw.strip():
        return 0
    if not json_status:
        raise RemoteCommandError(raw.decode(errors="replace"))
    try:
        status = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise RemoteCommandError(f"error stream: not a Status: {raw[:200]!r}") from exc
    if not isinstance(status, dict):
        raise RemoteCommandError(f"error stream: not a Status: {raw[:200]!r}")
    if status.get("status") == "Success":
        return 0
    details = status.get("details")
    if status.get("reason") == NON_ZERO_EXIT_CODE_REASON and isinstance(details, dict):
        causes = details.get("causes")
        for cause in causes if isinstance(causes, list) else []:
            if isinstance(cause, dict) and cause.get("reason") == EXIT_CODE_CAUSE:
                try:
                    return int(cause.get("message", ""))
                except (TypeError, ValueError):
                    break
    message = status.get("message")
    raise RemoteCommandError(message if isinstance(message, str) and message
                             else json.dumps(status)[:1024])
