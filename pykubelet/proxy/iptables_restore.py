"""iptables-save and iptables-restore for the proxier: one variant, optionally in a netns.

Why a restore and not python-iptables rule by rule: a sync of 1,000 services x 10
endpoints is ~11,000 chains and ~32,000 rules. One ``iptables-restore --noflush`` writes
them in one process and (per table) one kernel transaction, so no packet ever sees half a
rule set; libiptc (python-iptables) would also commit whole tables, but builds every rule
through ctypes (bench/proxy_bench.py measures it: far slower than the restore) and writes
only the legacy tables, which an iptables-nft host's ``iptables`` does not show
(ldx/python-iptables#319). Measured (bench/proxy_bench.py, iptables 1.8.9, 2 shared cores,
1,000 x 10 = 32,000 rules): python-iptables ~0.4-1.2 ms per rule, ~11-35 s for the set;
iptables-legacy-restore 0.34 s full, 0.16 s for one endpoint change (legacy rewrites the
whole table blob every time); iptables-nft-restore 0.04 s for one endpoint change, and
0.86 s of CPU full since a large restore opens its tables with ``-Z`` (10.1 s without:
iptables-nft's chain cache is quadratic in the chains a --noflush restore names, see
:func:`nft_restore_input`; upstream's answer for large clusters is the nftables proxier,
:mod:`.nft_proxier`).

Where legacy's endpoint change goes (perf of one 44-line --noflush restore into a nat
table of 32,000 rules): ~0.02 s user, ~0.15 s kernel, all of it proportional to the whole
table: IPT_SO_GET_ENTRIES copies the table out (_copy_to_user, xt_*_to_user), libiptc
edits it, IPT_SO_SET_REPLACE copies it back and the kernel checks every rule again
(_copy_from_user, translate_table, xt_find_match/xt_find_target per rule,
alloc_counters). The x_tables ABI has no per-chain update, so no restore input makes it
smaller; only a smaller table (or the nftables mode) does.

The variant is the host's (pycni.masq.select: the ``iptables`` alternative), so the rules
land where ``iptables -t nat -S`` shows them; legacy tools take the xtables lock (``-w 5``),
nft commits are transactional anyway. With ``netns`` every tool runs inside that network
namespace (nsenter), which keeps tests off the host's tables.
"""

from __future__ import annotations

import re
import subprocess

from pycni.masq.select import probe_iptables_variant

LINE_RE = re.compile(r"line:? (\d+)")

#: chain declarations from which an iptables-nft restore asks for every chain (see below)
NFT_ALL_CHAINS_AT = 500


class RestoreError(RuntimeError):
    """iptables-restore refused the input; the kernel's tables are unchanged (per table)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


def extract_lines(text: str, line: int, context: int = 3) -> str:
    """utiliptables.ExtractLines: the failing line with ``context`` lines around it."""
    lines = text.splitlines()
    lo, hi = max(line - 1 - context, 0), min(line + context, len(lines))
    return "\n".join(f"{i + 1}: {lines[i]}" for i in range(lo, hi))


class Iptables:
    """The iptables tools of one variant (``nft`` or ``legacy``), in one network namespace."""

    def __init__(self, variant: str = "", netns: str = "") -> None:
        self.variant = variant or probe_iptables_variant()
        self.netns = netns
        # the xtables lock, waited for 5 s at most (utiliptables: -w 5)
        self._wait = ["-w", "5"] if self.variant == "legacy" else []

    def _argv(self, tool: str, *args: str) -> list[str]:
        argv = [f"iptables-{self.variant}-{tool}" if tool else f"iptables-{self.variant}",
                *args]
        return ["nsenter", f"--net={self.netns}", *argv] if self.netns else argv

    def restore(self, text: str) -> None:
        """``iptables-restore --noflush``: only the chains the input declares are flushed."""
        added: list[int] = []
        if self.variant == "nft":
            text, added = nft_restore_input(text)
        proc = subprocess.run(self._argv("restore", *self._wait, "--noflush"), input=text,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            err = proc.stderr.strip()
            m = LINE_RE.search(err)
            line = input_line(int(m.group(1)), added) if m else 0
            raise RestoreError(err.splitlines()[0] if err else f"exit {proc.returncode}", line)

    def save(self, table: str) -> str:
        """``iptables-save -t TABLE`` (an empty string where the table does not exist)."""
        proc = subprocess.run(self._argv("save", "-t", table), capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            raise RestoreError(f"iptables-save -t {table}: {proc.stderr.strip()}")
        return proc.stdout

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``iptables [-w] ARGS`` (a single rule operation), its status and output."""
        return subprocess.run(self._argv("", *self._wait, *args), capture_output=True,
                              text=True, check=False)

    def chain_exists(self, table: str, chain: str) -> bool:
        """``iptables -t TABLE -S CHAIN 1``: whether the chain is there (ChainExists)."""
        return self.run("-t", table, "-S", chain, "1").returncode == 0

    def has_random_fully(self) -> bool:
        """MASQUERADE --random-fully exists from iptables 1.6.2 (utiliptables' check)."""
        proc = subprocess.run(self._argv("", "--version"), capture_output=True, text=True,
                              check=False)
        m = re.search(r"v(\d+)\.(\d+)\.(\d+)", proc.stdout)
        return m is not None and tuple(int(x) for x in m.groups()) >= (1, 6, 2)


def chains_of(saved: str) -> set[str]:
    """GetChainsFromTable: the chain names an iptables-save text declares."""
    return {ln[1:].split()[0] for ln in saved.splitlines() if ln.startswith(":")}


def nft_restore_input(text: str, at: int | None = None) -> tuple[str, list[int]]:
    """``text`` for iptables-nft-restore: with ``at`` chain declarations or more, a ``-Z``
    (zero the table's counters: a command naming no chain) opens each table, and the
    numbers of the lines so added.

    Why: iptables-nft 1.8.x (nft-cache.c) collects the chains a --noflush restore names in
    a sorted linked list, a scan of it per command (cache_chain_list_insert), and then
    fetches each listed chain from the kernel with its own request; at 1,000 services x 10
    endpoints (11,000 chains, 43,000 lines) that is 8-9 s of user time, quadratic in the
    chains (0.3 s at 250 services, 1.5 s at 500). One command without a chain sets the
    cache request's ``all_chains``: no list, one dump of the table's chains. ``-Z`` is the
    one such command that changes no rule (``-F``/``-X`` would flush or delete the chains
    of others; ``-S`` fails where the nat table's built-in chains are not there yet); its
    cost is that the counters of the tables' rules restart from zero at a full sync.
    """
    if text.count("\n:") < (NFT_ALL_CHAINS_AT if at is None else at):
        return text, []
    out: list[str] = []
    added: list[int] = []
    for ln in text.split("\n"):
        out.append(ln)
        if ln.startswith("*"):
            out.append("-Z")
            added.append(len(out))
    return "\n".join(out), added


def input_line(line: int, added: list[int]) -> int:
    """A line of the text :func:`nft_restore_input` made, as a line of its input."""
    return line - sum(1 for a in added if a < line)
