"""SPDY/3.1 framing: frames to bytes and back, with the spec's zlib header compression.

What Kubernetes' streaming protocols ride on when a client does not speak WebSocket:
kubelet, containerd, crictl and kubectl's fallback (client-go's ``httpstream/spdy``, over
moby/spdystream) use SPDY/3.1 after an HTTP/1.1 ``Upgrade: SPDY/3.1``. This module is pure:
``Framer.encode(frame)`` gives bytes, ``Framer.feed(bytes)`` gives the frames completed so far.
The session (streams, replies, pings) is ``session.py``.

Wire format (draft 3.1):

- control frame: ``1|version(15)=3 | type(16) | flags(8) | length(24) | payload``;
- data frame: ``0|stream id(31) | flags(8) | length(24) | data``; flag FIN=1 half-closes;
- SYN_STREAM: stream id, associated-to id, priority(3 bits) + 5 unused + slot(8), header
  block; SYN_REPLY and HEADERS: stream id, header block; RST_STREAM: id, status;
  SETTINGS: count, then flags(8)+id(24), value(32) each; PING: id; GOAWAY: last good id,
  status; WINDOW_UPDATE: id, delta;
- a header block is ``count(32)`` then ``len(32) name len(32) value`` per header, names in
  lowercase, several values joined by NUL, compressed by ONE zlib stream per direction for
  the whole connection (each block ends with a sync flush) primed with the spec's
  dictionary.

Flow control: spdystream neither sends nor honours WINDOW_UPDATE, so nobody here enforces
windows either (decoded for completeness, never required).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

VERSION = 3

SYN_STREAM = 1
SYN_REPLY = 2
RST_STREAM = 3
SETTINGS = 4
PING = 6
GOAWAY = 7
HEADERS = 8
WINDOW_UPDATE = 9

FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02

# RST_STREAM status codes
PROTOCOL_ERROR = 1
INVALID_STREAM = 2
REFUSED_STREAM = 3
UNSUPPORTED_VERSION = 4
CANCEL = 5
INTERNAL_ERROR = 6

MAX_FRAME_DATA = (1 << 24) - 1
MAX_HEADER_BLOCK = 1 << 20  # what we accept decompressed (spdystream has no limit)

# The spec's header compression dictionary (SPDY/3 draft, "Compression"): 1423 bytes, the
# length-prefixed names of common headers then common values; its Adler-32 (the dictionary
# id a zlib stream names) is 0xe3c6a7c2.
DICTIONARY = bytes.fromhex(
    "000000076f7074696f6e73000000046865616400000004706f7374000000037075740000000664656c657465"
    "000000057472616365000000066163636570740000000e6163636570742d636861727365740000000f616363"
    "6570742d656e636f64696e670000000f6163636570742d6c616e67756167650000000d6163636570742d7261"
    "6e6765730000000361676500000005616c6c6f770000000d617574686f72697a6174696f6e0000000d636163"
    "68652d636f6e74726f6c0000000a636f6e6e656374696f6e0000000c636f6e74656e742d6261736500000010"
    "636f6e74656e742d656e636f64696e6700000010636f6e74656e742d6c616e67756167650000000e636f6e74"
    "656e742d6c656e67746800000010636f6e74656e742d6c6f636174696f6e0000000b636f6e74656e742d6d64"
    "350000000d636f6e74656e742d72616e67650000000c636f6e74656e742d7479706500000004646174650000"
    "0004657461670000000665787065637400000007657870697265730000000466726f6d00000004686f737400"
    "00000869662d6d617463680000001169662d6d6f6469666965642d73696e63650000000d69662d6e6f6e652d"
    "6d617463680000000869662d72616e67650000001369662d756e6d6f6469666965642d73696e63650000000d"
    "6c6173742d6d6f646966696564000000086c6f636174696f6e0000000c6d61782d666f727761726473000000"
    "06707261676d610000001270726f78792d61757468656e7469636174650000001370726f78792d617574686f"
    "72697a6174696f6e0000000572616e676500000007726566657265720000000b72657472792d616674657200"
    "00000673657276657200000002746500000007747261696c6572000000117472616e736665722d656e636f64"
    "696e6700000007757067726164650000000a757365722d6167656e7400000004766172790000000376696100"
    "0000077761726e696e67000000107777772d61757468656e746963617465000000066d6574686f6400000003"
    "6765740000000673746174757300000006323030204f4b0000000776657273696f6e00000008485454502f31"
    "2e310000000375726c000000067075626c69630000000a7365742d636f6f6b69650000000a6b6565702d616c"
    "697665000000066f726967696e31303031303132303132303232303532303633303033303233303333303433"
    "3035333036333037343032343035343036343037343038343039343130343131343132343133343134343135"
    "343136343137353032353034353035323033204e6f6e2d417574686f726974617469766520496e666f726d61"
    "74696f6e323034204e6f20436f6e74656e74333031204d6f766564205065726d616e656e746c793430302042"
    "6164205265717565737434303120556e617574686f72697a656434303320466f7262696464656e343034204e"
    "6f7420466f756e6435303020496e7465726e616c20536572766572204572726f72353031204e6f7420496d70"
    "6c656d656e746564353033205365727669636520556e617661696c61626c654a616e20466562204d61722041"
    "7072204d6179204a756e204a756c204175672053657074204f6374204e6f76204465632030303a30303a3030"
    "204d6f6e2c205475652c205765642c205468752c204672692c205361742c2053756e2c20474d546368756e6b"
    "65642c746578742f68746d6c2c696d6167652f706e672c696d6167652f6a70672c696d6167652f6769662c61"
    "70706c69636174696f6e2f786d6c2c6170706c69636174696f6e2f7868746d6c2b786d6c2c746578742f706c"
    "61696e2c746578742f6a6176617363726970742c7075626c6963707269766174656d61782d6167653d677a69"
    "702c6465666c6174652c73646368636861727365743d7574662d38636861727365743d69736f2d383835392d"
    "312c7574662d2c2a2c656e713d302e"
)

Headers = dict[str, list[str]]


class SpdyError(Exception):
    """A malformed frame or header block: the connection cannot go on."""


@dataclass
class DataFrame:
    stream_id: int
    data: bytes = b""
    fin: bool = False


@dataclass
class SynStream:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    associated_to: int = 0
    priority: int = 0
    fin: bool = False
    unidirectional: bool = False


@dataclass
class SynReply:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    fin: bool = False


@dataclass
class RstStream:
    stream_id: int
    status: int = CANCEL


@dataclass
class Settings:
    entries: list[tuple[int, int, int]] = field(default_factory=list)  # (flags, id, value)
    clear: bool = False


@dataclass
class Ping:
    id: int


@dataclass
class GoAway:
    last_good_stream_id: int = 0
    status: int = 0


@dataclass
class HeadersFrame:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    fin: bool = False


@dataclass
class WindowUpdate:
    stream_id: int
    delta: int


Frame = (DataFrame | SynStream | SynReply | RstStream | Settings | Ping | GoAway
         | HeadersFrame | WindowUpdate)


def normalize_headers(headers: Mapping[str, str | Iterable[str]]) -> Headers:
    """Lowercase names; a plain string value becomes a one-element list."""
    out: Headers = {}
    for name, value in headers.items():
        values = [value] if isinstance(value, str) else list(value)
        out.setdefault(name.lower(), []).extend(values)
    return out


def encode_header_block(headers: Mapping[str, Iterable[str]]) -> bytes:
    """The uncompressed name/value block (names lowercased, values NUL-joined)."""
    parts = [struct.pack(">I", len(headers))]
    for name, values in headers.items():
        n = name.lower().encode()
        v = b"\x00".join(str(x).encode() for x in values)
        parts.append(struct.pack(">I", len(n)) + n + struct.pack(">I", len(v)) + v)
    return b"".join(parts)


def decode_header_block(raw: bytes) -> Headers:
    try:
        (count,) = struct.unpack_from(">I", raw, 0)
        pos = 4
        out: Headers = {}
        for _ in range(count):
            (nlen,) = struct.unpack_from(">I", raw, pos)
            name = raw[pos + 4:pos + 4 + nlen].decode()
            pos += 4 + nlen
            (vlen,) = struct.unpack_from(">I", raw, pos)
            value = raw[pos + 4:pos + 4 + vlen].decode()
            pos += 4 + vlen
            if pos > len(raw):
                raise SpdyError("header block: truncated")
            if name != name.lower():
                raise SpdyError(f"header block: name {name!r} is not lowercase")
            out.setdefault(name, []).extend(value.split("\x00"))
    except (struct.error, UnicodeDecodeError) as exc:
        raise SpdyError(f"header block: malformed ({exc})") from exc
    return out


class Framer:
    """One connection's framing state: the two zlib streams of its header blocks.

    ``encode`` output must be written in the order it was produced (the compressor is one
    stream); ``feed`` accepts bytes in any chunking and returns the frames now complete.
    """

    def __init__(self) -> None:
        self._compress = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY,
                                          DICTIONARY)
        self._decompress = zlib.decompressobj(15, zdict=DICTIONARY)
        self._buf = bytearray()

    # ------------------------------------------------------------------ encoding
    def _headers(self, headers: Mapping[str, Iterable[str]]) -> bytes:
        block = encode_header_block(headers)
        return self._compress.compress(block) + self._compress.flush(zlib.Z_SYNC_FLUSH)

    @staticmethod
    def _control(ftype: int, flags: int, payload: bytes) -> bytes:
        if len(payload) > MAX_FRAME_DATA:
            raise SpdyError("control frame too large")
        return (struct.pack(">HHI", 0x8000 | VERSION, ftype, (flags << 24) | len(payload))
                + payload)

    def encode(self, frame: Frame) -> bytes:
        match frame:
            case DataFrame(stream_id=sid, data=data, fin=fin):
                if len(data) > MAX_FRAME_DATA:
                    raise SpdyError("data frame too large: split it")
                flags = FLAG_FIN if fin else 0
                return struct.pack(">II", sid & 0x7FFFFFFF, (flags << 24) | len(data)) + data
            case SynStream():
                flags = (FLAG_FIN if frame.fin else 0) | (
                    FLAG_UNIDIRECTIONAL if frame.unidirectional else 0)
                payload = struct.pack(">IIBB", frame.stream_id & 0x7FFFFFFF,
                                      frame.associated_to & 0x7FFFFFFF,
                                      (frame.priority & 7) << 5, 0) + self._headers(frame.headers)
                return self._control(SYN_STREAM, flags, payload)
            case SynReply():
                payload = struct.pack(">I", frame.stream_id & 0x7FFFFFFF) + self._headers(
                    frame.headers)
                return self._control(SYN_REPLY, FLAG_FIN if frame.fin else 0, payload)
            case HeadersFrame():
                payload = struct.pack(">I", frame.stream_id & 0x7FFFFFFF) + self._headers(
                    frame.headers)
                return self._control(HEADERS, FLAG_FIN if frame.fin else 0, payload)
            case RstStream():
                return self._control(RST_STREAM, 0, struct.pack(
                    ">II", frame.stream_id & 0x7FFFFFFF, frame.status))
            case Settings():
                payload = struct.pack(">I", len(frame.entries)) + b"".join(
                    struct.pack(">II", (fl << 24) | (sid & 0xFFFFFF), value)
                    for fl, sid, value in frame.entries)
                return self._control(SETTINGS, 1 if frame.clear else 0, payload)
            case Ping():
                return self._control(PING, 0, struct.pack(">I", frame.id))
            case GoAway():
                return self._control(GOAWAY, 0, struct.pack(
                    ">II", frame.last_good_stream_id & 0x7FFFFFFF, frame.status))
            case WindowUpdate():
                return self._control(WINDOW_UPDATE, 0, struct.pack(
                    ">II", frame.stream_id & 0x7FFFFFFF, frame.delta & 0x7FFFFFFF))
        raise TypeError(f"not a SPDY frame: {frame!r}")

    # ------------------------------------------------------------------ decoding
    def _unheaders(self, compressed: bytes) -> Headers:
        try:
            raw = self._decompress.decompress(compressed, MAX_HEADER_BLOCK)
        except zlib.error as exc:
            raise SpdyError(f"header block: {exc}") from exc
        if self._decompress.unconsumed_tail:
            raise SpdyError("header block: larger than 1 MiB")
        return decode_header_block(raw)

    def feed(self, data: bytes) -> list[Frame]:
        """Frames completed by ``data`` (the rest waits in the buffer)."""
        self._buf += data
        frames: list[Frame] = []
        buf = self._buf
        pos = 0
        while len(buf) - pos >= 8:
            word, flags_len = struct.unpack_from(">II", buf, pos)
            length = flags_len & 0xFFFFFF
            if len(buf) - pos < 8 + length:
                break
            flags = flags_len >> 24
            payload = bytes(buf[pos + 8:pos + 8 + length])
            pos += 8 + length
            if word & 0x80000000:
                frame = self._control_frame((word >> 16) & 0x7FFF, word & 0xFFFF, flags, payload)
                if frame is not None:
                    frames.append(frame)
            else:
                frames.append(DataFrame(word & 0x7FFFFFFF, payload, bool(flags & FLAG_FIN)))
        del buf[:pos]
        return frames

    def _control_frame(self, version: int, ftype: int, flags: int,
                       payload: bytes) -> Frame | None:
        if version != VERSION:
            raise SpdyError(f"unsupported SPDY version {version}")
        try:
            if ftype == SYN_STREAM:
                sid, assoc, prio, _slot = struct.unpack_from(">IIBB", payload)
                return SynStream(sid & 0x7FFFFFFF, self._unheaders(payload[10:]),
                                 assoc & 0x7FFFFFFF, prio >> 5, bool(flags & FLAG_FIN),
                                 bool(flags & FLAG_UNIDIRECTIONAL))
            if ftype in (SYN_REPLY, HEADERS):
                (sid,) = struct.unpack_from(">I", payload)
                cls = SynReply if ftype == SYN_REPLY else HeadersFrame
                return cls(sid & 0x7FFFFFFF, self._unheaders(payload[4:]), bool(flags & FLAG_FIN))
            if ftype == RST_STREAM:
                sid, status = struct.unpack_from(">II", payload)
                return RstStream(sid & 0x7FFFFFFF, status)
            if ftype == SETTINGS:
                (count,) = struct.unpack_from(">I", payload)
                entries = []
                for i in range(count):
                    fid, value = struct.unpack_from(">II", payload, 4 + 8 * i)
                    entries.append((fid >> 24, fid & 0xFFFFFF, value))
                return Settings(entries, bool(flags & 1))
            if ftype == PING:
                return Ping(struct.unpack_from(">I", payload)[0])
            if ftype == GOAWAY:
                last, status = struct.unpack_from(">I", payload)[0], 0
                if len(payload) >= 8:
                    status = struct.unpack_from(">I", payload, 4)[0]
                return GoAway(last & 0x7FFFFFFF, status)
            if ftype == WINDOW_UPDATE:
                sid, delta = struct.unpack_from(">II", payload)
                return WindowUpdate(sid & 0x7FFFFFFF, delta & 0x7FFFFFFF)
        except struct.error as exc:
            raise SpdyError(f"control frame type {ftype}: truncated payload") from exc
        return None  # unknown control frames are ignored, as the spec asks
