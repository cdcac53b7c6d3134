"""Fuzzed streaming parsers (issue 29 item 3): SPDY/3.1 frames, their compressed header
blocks, the terminal-resize channel's JSON stream and the error channel's Status either
parse or raise their declared errors (SpdyError, RemoteCommandError), in bounded time and
memory, whatever the chunking."""

from __future__ import annotations

import itertools
import time

from fuzz_strategies import FUZZ, check_message
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pykubelet.streaming import spdy
from pykubelet.streaming.protocols import (
    RemoteCommandError,
    ResizeDecoder,
    TerminalSize,
    exit_code_from_status,
)

U31 = st.integers(1, 2 ** 31 - 1)
# a header's values travel NUL-separated, so a value holds no NUL
HEADERS = st.dictionaries(st.from_regex(r"\A[a-z][a-z0-9-]{0,10}\Z"),
                          st.lists(st.text(st.characters(blacklist_categories=("Cs",),
                                                         blacklist_characters="\x00"),
                                           max_size=10), min_size=1, max_size=2), max_size=3)
FRAMES = st.one_of(
    st.builds(spdy.DataFrame, U31, st.binary(max_size=64), st.booleans()),
    st.builds(spdy.SynStream, U31, HEADERS, st.integers(0, 2 ** 31 - 1), st.integers(0, 7),
              st.booleans(), st.booleans()),
    st.builds(spdy.SynReply, U31, HEADERS, st.booleans()),
    st.builds(spdy.RstStream, U31, st.integers(1, 11)),
    st.builds(spdy.Ping, st.integers(0, 2 ** 32 - 1)),
    st.builds(spdy.GoAway, st.integers(0, 2 ** 31 - 1), st.integers(0, 2)),
    st.builds(spdy.HeadersFrame, U31, HEADERS, st.booleans()),
    st.builds(spdy.WindowUpdate, U31, st.integers(1, 2 ** 31 - 1)),
)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@settings(FUZZ, max_examples=60)  # a framer's zlib streams cost ~0.1 s each
@given(st.lists(FRAMES, min_size=1, max_size=6), st.lists(st.integers(0, 10_000), max_size=6))
def test_frames_read_back_whatever_the_chunking(frames: list[object], cuts: list[int]) -> None:
    """One session's framer writes, another's reads (header compression is stateful)."""
    writer = spdy.Framer()
    wire = b"".join(writer.encode(f) for f in frames)
    reader = spdy.Framer()
    got = [f for chunk in _chunks(wire, cuts) for f in reader.feed(chunk)]
    assert got == frames


@FUZZ
@given(st.lists(st.binary(max_size=80), max_size=8))
@example([b"\x80\x03\x00\x01\x00\x00\x00\x0a" + b"\x00" * 10])  # SYN_STREAM, no headers
@example([b"\x80\x03\x00\x08\x00\x00\x00\x04\x00\x00\x00\x01"])  # WINDOW_UPDATE, short
@example([b"\x80\x02\x00\x01\x00\x00\x00\x00"])  # SPDY/2
def test_random_bytes_are_frames_or_spdy_errors(chunks: list[bytes]) -> None:
    framer = spdy.Framer()
    try:
        for chunk in chunks:
            framer.feed(chunk)
    except spdy.SpdyError as exc:
        check_message(exc)


@FUZZ
@given(st.binary(max_size=200))
def test_header_blocks_decode_or_are_spdy_errors(raw: bytes) -> None:
    try:
        spdy.decode_header_block(raw)
    except spdy.SpdyError as exc:
        check_message(exc)


@FUZZ
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(
    [b'{"Width":80,"Height":24}', b'{"Width":', b"[", b"{", b"}", b"\xff", b" "])),
    max_size=12))
def test_the_resize_stream_never_fails(chunks: list[bytes]) -> None:
    decoder = ResizeDecoder()
    for chunk in chunks:
        decoder.feed(chunk)
    assert len(decoder._buf) <= ResizeDecoder.MAX_PENDING + 100


def test_resize_sizes_come_out_whole_across_messages() -> None:
    d = ResizeDecoder()
    assert d.feed(b'{"Width":80,') == []
    assert d.feed(b'"Height":24}{"Width":100,"Height":40} ') == [
        TerminalSize(80, 24), TerminalSize(100, 40)]


def test_a_resize_stream_that_cannot_decode_stops_it() -> None:
    """kubelet stops handling resizes at the first bad value; a nest too deep for the JSON
    decoder raised RecursionError out of the exec session, and an unending value was kept
    and re-read at every message (quadratic: 2,000 messages of 500 bytes took 1.4 s)."""
    d = ResizeDecoder()
    assert d.feed(b"[" * 100_000) == []
    assert d.stopped
    assert d.feed(b'{"Width":1,"Height":1}') == []
    d = ResizeDecoder()
    t = time.monotonic()
    for _ in range(2000):
        d.feed(b'{"Width": ' + b"1" * 500)
    assert time.monotonic() - t < 0.5
    assert d.stopped
    assert d._buf == ""


@FUZZ
@given(st.binary(max_size=120))
@example(b'{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":'
         b'[{"reason":"ExitCode","message":"x"}]}}')
@example(b'{"status":"Failure","details":{"causes":[null]}}')
@example(b"[" * 50_000)  # RecursionError out of the JSON decoder
@example(b"1")  # AttributeError: a Status is an object
@example(b'{"reason":"NonZeroExitCode","details":{"causes":[1,{"reason":"ExitCode",'
         b'"message":null}]}}')
def test_error_channel_statuses_or_remote_command_errors(raw: bytes) -> None:
    try:
        code = exit_code_from_status(raw)
    except RemoteCommandError as exc:
        check_message(exc)
    else:
        assert isinstance(code, int)
