"""SPDY/3.1 framing against frames laid out by hand from the spec (draft 3.1, section 2),
and header blocks compressed by plain zlib with the spec's dictionary."""

from __future__ import annotations

import struct
import zlib

import pytest

from pykubelet.streaming import spdy


def control(ftype: int, flags: int, payload: bytes) -> bytes:
    """A control frame exactly as the spec draws it: C=1, version 3, type, flags, length."""
    return bytes([0x80, 0x03]) + struct.pack(">H", ftype) + bytes([flags]) + \
        len(payload).to_bytes(3, "big") + payload


def header_block(pairs: list[tuple[bytes, bytes]]) -> bytes:
    out = struct.pack(">I", len(pairs))
    for name, value in pairs:
        out += struct.pack(">I", len(name)) + name + struct.pack(">I", len(value)) + value
    return out


def zlib_with_dictionary() -> zlib._Compress:
    return zlib.compressobj(zdict=spdy.DICTIONARY)


def test_dictionary_is_the_specs() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b",*,enq=0.")
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2  # the dictionary id in the stream


def test_decodes_a_syn_stream_built_per_spec() -> None:
    c = zlib_with_dictionary()
    block = c.compress(header_block([(b"streamtype", b"error"), (b"port", b"8080"),
                                     (b"requestid", b"0")])) + c.flush(zlib.Z_SYNC_FLUSH)
    # stream id 1, associated 0, priority 0 (3 bits) + unused, slot 0
    frame = control(1, 0, struct.pack(">IIBB", 1, 0, 0, 0) + block)
    [f] = spdy.Framer().feed(frame)
    assert f == spdy.SynStream(1, {"streamtype": ["error"], "port": ["8080"],
                                   "requestid": ["0"]})


def test_header_compression_is_one_stream_per_connection() -> None:
    """The second block is compressed in the same zlib stream as the first (no new zlib
    header): a decoder that restarted per block could not read it."""
    c = zlib_with_dictionary()
    b1 = c.compress(header_block([(b"streamtype", b"stdout")])) + c.flush(zlib.Z_SYNC_FLUSH)
    b2 = c.compress(header_block([(b"streamtype", b"stderr")])) + c.flush(zlib.Z_SYNC_FLUSH)
    assert b1[:2] in (b"\x78\xbb", b"\x78\xf9", b"\x78\x7d", b"\x78\x3f")  # FDICT set
    assert struct.unpack(">I", b1[2:6])[0] == 0xE3C6A7C2
    data = (control(1, 0, struct.pack(">IIBB", 1, 0, 0, 0) + b1)
            + control(1, 1, struct.pack(">IIBB", 3, 0, 0x60, 0) + b2))
    framer = spdy.Framer()
    frames = framer.feed(data[:7]) + framer.feed(data[7:])
    assert frames == [spdy.SynStream(1, {"streamtype": ["stdout"]}),
                      spdy.SynStream(3, {"streamtype": ["stderr"]}, priority=3, fin=True)]


def test_our_header_blocks_decode_with_plain_zlib() -> None:
    enc = spdy.Framer().encode(spdy.SynReply(2, {"x-a": ["1", "2"]}))
    assert enc[:4] == b"\x80\x03\x00\x02"
    assert int.from_bytes(enc[5:8], "big") == len(enc) - 8
    d = zlib.decompressobj(zdict=spdy.DICTIONARY)
    raw = d.decompress(enc[12:])
    assert raw == header_block([(b"x-a", b"1\x002")])


def test_data_frames() -> None:
    f = spdy.Framer()
    wire = struct.pack(">I", 5) + bytes([1]) + (3).to_bytes(3, "big") + b"abc"
    assert f.feed(wire) == [spdy.DataFrame(5, b"abc", fin=True)]
    assert f.encode(spdy.DataFrame(5, b"abc", fin=True)) == wire
    assert f.encode(spdy.DataFrame(7, b"")) == struct.pack(">II", 7, 0)


@pytest.mark.parametrize(
    ("frame", "ftype", "flags", "payload"),
    [
        (spdy.RstStream(3, spdy.CANCEL), 3, 0, struct.pack(">II", 3, 5)),
        (spdy.Ping(7), 6, 0, struct.pack(">I", 7)),
        (spdy.GoAway(9, 0), 7, 0, struct.pack(">II", 9, 0)),
        (spdy.WindowUpdate(1, 65536), 9, 0, struct.pack(">II", 1, 65536)),
        (spdy.Settings([(0, 7, 65536)]), 4, 0, struct.pack(">III", 1, 7, 65536)),
    ],
)
def test_control_frames_both_ways(frame: spdy.Frame, ftype: int, flags: int,
                                  payload: bytes) -> None:
    wire = control(ftype, flags, payload)
    assert spdy.Framer().encode(frame) == wire
    assert spdy.Framer().feed(wire) == [frame]


def test_unknown_control_frames_are_skipped_and_bad_ones_refused() -> None:
    f = spdy.Framer()
    assert f.feed(control(10, 0, b"\x00" * 4) + control(6, 0, struct.pack(">I", 1))) == [
        spdy.Ping(1)]
    with pytest.raises(spdy.SpdyError, match="version"):
        spdy.Framer().feed(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")
    with pytest.raises(spdy.SpdyError, match="header block"):
        spdy.Framer().feed(control(2, 0, struct.pack(">I", 1) + b"not zlib at all"))
