"""nftables for the nftables proxier: one transaction per sync, optionally in a netns.

Text, not JSON: upstream's knftables writes nft's text syntax to ``nft -f -``, so our
transactions read exactly as its tests' goldens; and the text is the faster input.
Measured on this host (nftables 1.0.6, kernel 6.18, 2 shared cores; 1,000 services x 10
endpoints with a chain per endpoint: 11,000 chains, 22,000 rules, 4.3 MB of text): ``nft
-f`` 1.2 s wall, 0.4 s of it user (parsing), the rest the kernel's; the same table as
JSON (8.8 MB, ``nft -j -f``) 2.2 s, 0.7 s user. Since services without affinity DNAT
through a numgen map (:mod:`.nftables_rules`): 1,000 chains, 1.4 MB, 0.17 s user and 0.2 s
system; elements batched into one ``add element`` per set would save another ~0.04 s.

In process, not the tool, where libnftables loads (:class:`LibNft`, ctypes over the
library the ``nft`` tool and python3-nftables both wrap; python3-nftables itself is a
Debian package outside the venv): an endpoint change costs 43 ms of CPU instead of 60 ms
(no fork and exec of nsenter and nft, no tool start-up); what remains is mostly nft 1.0.6
reading the table's chains from the kernel before any transaction that names one. A
full sync is the same either way (the kernel's commit). :class:`Nft` runs the tool, where
the library is missing. Either way, one input is one kernel transaction: all of it
applies or none does, so a refused sync leaves the last good rules serving.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pykubelet.proxy.iptables_restore import RestoreError
from pykubelet.proxy.nftables_rules import FAMILY, TABLE

_LINE_RE = re.compile(r"^[^:\s]*:(\d+):")  # /dev/stdin:LINE:COLS: Error: ...
_CHAIN_RE = re.compile(r"^\s*chain (\S+) \{")
_SET_RE = re.compile(r"^\s*set (\S+) \{")


class NftError(RestoreError):
    """``nft -f`` refused the transaction; nothing in it was applied."""


class Nft:
    """``nft`` on the proxier's table, in one network namespace (``netns``: a path)."""

    def __init__(self, netns: str = "") -> None:
        self.netns = netns

    @staticmethod
    def default(netns: str = "") -> Nft:
        """libnftables in this process where the library loads, else the ``nft`` tool."""
        try:
            return LibNft(netns)
        except OSError:
            return Nft(netns)

    def _argv(self, *args: str) -> list[str]:
        argv = ["nft", *args]
        return ["nsenter", f"--net={self.netns}", *argv] if self.netns else argv

    def run(self, text: str) -> None:
        """``nft -f -``: the whole text as one transaction."""
        proc = subprocess.run(self._argv("-f", "-"), input=text, capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            err = proc.stderr.strip()
            first = next((ln for ln in err.splitlines() if "Error" in ln),
                         err.splitlines()[0] if err else f"exit {proc.returncode}")
            m = _LINE_RE.match(first)
            raise NftError(first, int(m.group(1)) if m else 0)

    def _list(self, what: str) -> str:
        proc = subprocess.run(self._argv("list", what, FAMILY), capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            raise NftError(f"nft list {what} {FAMILY}: {proc.stderr.strip()}")
        return proc.stdout

    def _ours(self, text: str, pattern: re.Pattern[str]) -> set[str]:
        """Names matched in the ``table ip kube-proxy`` block of a listing."""
        out: set[str] = set()
        inside = False
        for ln in text.splitlines():
            if ln.startswith("table "):
                inside = ln.split()[1:3] == [FAMILY, TABLE]
            elif inside and (m := pattern.match(ln)):
                out.add(m.group(1))
        return out

    def chains(self) -> set[str]:
        """Our table's chains (``nft list chains ip``: names only, quick at 11,000)."""
        return self._ours(self._list("chains"), _CHAIN_RE)

    def sets(self) -> set[str]:
        return self._ours(self._list("sets"), _SET_RE)

    def table_exists(self) -> bool:
        """Whether our table and its dispatch chain are there (someone may have run
        ``nft flush ruleset``)."""
        proc = subprocess.run(self._argv("list", "chain", FAMILY, TABLE, "services"),
                              capture_output=True, text=True, check=False)
        return proc.returncode == 0

    def delete_table(self) -> None:
        """CleanupLeftovers: the table and everything in it; no table is fine."""
        self.run(f"add table {FAMILY} {TABLE}\ndelete table {FAMILY} {TABLE}\n")


CLONE_NEWNET = 0x40000000


class LibNft(Nft):
    """The same transactions through libnftables (the library ``nft`` is a front of), in
    this process: an endpoint change then costs no fork and exec of nsenter and nft and no
    start-up of the tool, about half of it at 1,000 services (libnftables still reads the
    table's 11,000 chains from the kernel before a transaction that names one: nft 1.0.6's
    cache). One context, used under a lock; with ``netns``, each call switches the calling
    thread into that namespace (setns) and back, so the netlink socket is always there."""

    def __init__(self, netns: str = "") -> None:
        super().__init__(netns)
        lib = ctypes.CDLL(ctypes.util.find_library("nftables") or "libnftables.so.1",
                          use_errno=True)
        lib.nft_ctx_new.restype = ctypes.c_void_p
        lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
        lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
        lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.nft_run_cmd_from_buffer.restype = ctypes.c_int
        for fn in ("nft_ctx_buffer_output", "nft_ctx_buffer_error"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p]
        for fn in ("nft_ctx_get_output_buffer", "nft_ctx_get_error_buffer"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p]
            getattr(lib, fn).restype = ctypes.c_char_p
        self._lib = lib
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._mu = threading.Lock()
        with self._inside():
            self._ctx = lib.nft_ctx_new(0)
        if not self._ctx:
            raise OSError("nft_ctx_new failed")
        lib.nft_ctx_buffer_output(self._ctx)
        lib.nft_ctx_buffer_error(self._ctx)

    @contextmanager
    def _inside(self) -> Iterator[None]:
        if not self.netns:
            yield
            return
        own = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
        target = os.open(self.netns, os.O_RDONLY)
        try:
            if self._libc.setns(target, CLONE_NEWNET) != 0:
                raise NftError(f"setns {self.netns}: {os.strerror(ctypes.get_errno())}")
            try:
                yield
            finally:
                self._libc.setns(own, CLONE_NEWNET)
        finally:
            os.close(target)
            os.close(own)

    def _cmd(self, text: str) -> str:
        with self._mu, self._inside():
            rc = self._lib.nft_run_cmd_from_buffer(self._ctx, text.encode())
            out = (self._lib.nft_ctx_get_output_buffer(self._ctx) or b"").decode()
            err = (self._lib.nft_ctx_get_error_buffer(self._ctx) or b"").decode()
        if rc != 0:
            lines = err.strip().splitlines()
            first = next((ln for ln in lines if "Error" in ln),
                         lines[0] if lines else f"nft returned {rc}")
            m = _LINE_RE.match(first)
            raise NftError(first, int(m.group(1)) if m else 0)
        return out

    def run(self, text: str) -> None:
        self._cmd(text)

    def _list(self, what: str) -> str:
        return self._cmd(f"list {what} {FAMILY}")

    def table_exists(self) -> bool:
        try:
            self._cmd(f"list chain {FAMILY} {TABLE} services")
        except NftError:
            return False
        return True
