"""A minimal rtnetlink socket: requests, acks, dumps and attribute packing.

Why not pyroute2: importing it costs ~300 ms, three times the reference bridge
plugin's whole ADD+DEL, and an exec'd plugin pays that on every call. The few
messages the plugins need (links, addresses, routes) are small enough to build
with ``struct`` directly. The socket belongs to the netns it was created in.
"""

from __future__ import annotations

import _socket  # the C module: ``socket`` adds ~5 ms of imports (enum, selectors) we never use
import os
import struct

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from collections.abc import Iterator

NETLINK_ROUTE = 0

NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLM_F_DUMP = 0x300
NLM_F_REPLACE = 0x100
NLM_F_EXCL = 0x200
NLM_F_CREATE = 0x400
NLM_F_APPEND = 0x800

NLMSG_ERROR = 2
NLMSG_DONE = 3

RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK, RTM_SETLINK = 16, 17, 18, 19
RTM_NEWADDR, RTM_DELADDR, RTM_GETADDR = 20, 21, 22
RTM_NEWROUTE, RTM_DELROUTE, RTM_GETROUTE = 24, 25, 26

NLA_F_NESTED = 0x8000
NLA_TYPE_MASK = 0x3FFF

_HDR = struct.Struct("=IHHII")


class NetlinkError(OSError):
    """A negative ack from the kernel; ``errno`` says which."""


def nla(kind: int, data: bytes) -> bytes:
    """One attribute, padded to 4 bytes."""
    length = 4 + len(data)
    return struct.pack("=HH", length, kind) + data + b"\0" * (-length % 4)


def nla_str(kind: int, value: str) -> bytes:
    return nla(kind, value.encode() + b"\0")


def nla_u32(kind: int, value: int) -> bytes:
    return nla(kind, struct.pack("=I", value))


def nla_u8(kind: int, value: int) -> bytes:
    return nla(kind, struct.pack("=B", value))


def nla_nested(kind: int, *parts: bytes) -> bytes:
    return nla(kind | NLA_F_NESTED, b"".join(parts))


def parse_attrs(data: bytes, offset: int = 0) -> dict[int, bytes]:
    """Attributes from ``offset`` on, keyed by type (nested flag masked off)."""
    out: dict[int, bytes] = {}
    end = len(data)
    while offset + 4 <= end:
        length, kind = struct.unpack_from("=HH", data, offset)
        if length < 4:
            break
        out[kind & NLA_TYPE_MASK] = data[offset + 4 : offset + length]
        offset += (length + 3) & ~3
    return out


def attr_str(value: bytes) -> str:
    return value.split(b"\0", 1)[0].decode()


def attr_u32(value: bytes) -> int:
    return int(struct.unpack_from("=I", value)[0])


class RtNetlink:
    """One NETLINK_ROUTE socket in the netns of the thread that created it."""

    def __init__(self) -> None:
        self.sock = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW | _socket.SOCK_CLOEXEC,
                                   NETLINK_ROUTE)
        self.sock.bind((0, 0))
        self._seq = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RtNetlink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, msg_type: int, payload: bytes, flags: int = 0) -> list[bytes]:
        """Send one request and return the payloads of the replies (ack or dump end excluded).

        Raises NetlinkError for an error ack.
        """
        self._seq += 1
        seq = self._seq
        dump = (flags & NLM_F_DUMP) == NLM_F_DUMP
        flags |= NLM_F_REQUEST if dump else NLM_F_REQUEST | NLM_F_ACK
        self.sock.send(_HDR.pack(_HDR.size + len(payload), msg_type, flags, seq, 0) + payload)
        replies: list[bytes] = []
        while True:
            for mtype, mseq, body in self._messages(self.sock.recv(1 << 17)):
                if mseq != seq:
                    continue
                if mtype == NLMSG_DONE:
                    return replies
                if mtype == NLMSG_ERROR:
                    code = -struct.unpack_from("=i", body)[0]
                    if code:
                        raise NetlinkError(code, os.strerror(code))
                    return replies
                replies.append(body)

    @staticmethod
    def _messages(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
        offset = 0
        while offset + _HDR.size <= len(buf):
            length, mtype, _flags, seq, _pid = _HDR.unpack_from(buf, offset)
            if length < _HDR.size:
                break
            yield mtype, seq, buf[offset + _HDR.size : offset + length]
            offset += (length + 3) & ~3
