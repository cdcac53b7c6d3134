"""Masquerade through ``iptables-restore --noflush``: one batch per ADD and per DEL.

The reference runs the ``iptables`` binary about eight times per ADD (list, create,
check+append x3) and four times per DEL; every run reloads the whole nat table.
One restore batch does the same in one process and one kernel transaction. With
``iptables-nft-restore`` the rules are what ``iptables -t nat -S`` shows on an
iptables-nft host; with ``iptables-legacy-restore`` they go to the legacy tables.
"""

from __future__ import annotations

from pycni.masq.rules import chain_rules, jump_rule, line
from pycni.masq.spawn import Child, run
from pycni.spec import IPInterface

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

COMMENT_RE = r'--comment "name: \\"(.*?)\\" id: \\"(.*?)\\""'


class MasqError(RuntimeError):
    pass


class RestoreBackend:
    """A MasqBackend over an iptables-restore binary (nft or legacy variant)."""

    def __init__(self, variant: str = "nft") -> None:
        self.name = f"iptables-{variant}-restore"
        self.variant = variant
        # the legacy tools need the xtables lock; nft commits are transactional anyway
        self._wait = ["-w"] if variant == "legacy" else []

    def _tool(self, version: int, kind: str) -> str:
        return f"ip{'6' if version == 6 else ''}tables-{self.variant}{kind}"

    def _start_restore(self, version: int, lines: list[str]) -> Child:
        text = "*nat\n" + "\n".join(lines) + "\nCOMMIT\n"
        return Child([self._tool(version, "-restore"), *self._wait, "--noflush"], text)

    def _restore(self, version: int, lines: list[str]) -> tuple[int, str, str]:
        return self._start_restore(version, lines).wait()

    def _run(self, version: int, args: list[str]) -> tuple[int, str, str]:
        return run([self._tool(version, ""), *self._wait, "-t", "nat", *args])

    def setup(self, addrs: Sequence[IPInterface], chain: str, comment: str) -> None:
        for version in (4, 6):
            family = [a for a in addrs if a.version == version]
            if not family:
                continue
            # ":chain" creates the chain, or flushes it if it exists: a repeated ADD refills it
            lines = [f":{chain} - [0:0]"]
            for addr in family:
                lines += [line("-A", chain, r) for r in chain_rules(addr, comment)]
            # no existence check of the jumps (it would cost a process): an ADD that reaches
            # here for a container already set up has failed earlier (its interface and its
            # host-local address exist), so the jump is new
            lines += [line("-A", "POSTROUTING", jump_rule(a, chain, comment)) for a in family]
            status, _, err = self._restore(version, lines)
            if status != 0:
                raise MasqError(f"failed to set up masquerade chain {chain}: {err.strip()}")

    def teardown(self, addrs: Sequence[IPInterface] | None, chain: str, comment: str) -> None:
        self.start_teardown(addrs, chain, comment)()

    def start_teardown(self, addrs: Sequence[IPInterface] | None, chain: str,
                       comment: str) -> Callable[[], None]:
        """Start the one-batch teardown in a child process; returns the function that waits
        for it (and falls back to step-by-step deletes if the batch failed), so DEL can
        overlap it with removing the veth, which takes the kernel 15-40 ms."""
        if addrs is None:  # addresses unknown: find the jumps by chain name, both families
            def find_and_delete() -> None:
                for version in (4, 6):
                    self._teardown_slow(version, chain)

            return find_and_delete
        procs: list[tuple[int, Child]] = []
        for version in sorted({a.version for a in addrs}):
            jumps = [line("-D", "POSTROUTING", jump_rule(a, chain, comment))
                     for a in addrs if a.version == version]
            procs.append((version, self._start_restore(
                version, [*jumps, f":{chain} - [0:0]", f"-X {chain}"])))

        def finish() -> None:
            for version, proc in procs:
                if proc.wait()[0] != 0:  # a jump or the chain was already gone: step by step
                    self._teardown_slow(version, chain)

        return finish

    def containers(self, network: str) -> set[str]:
        """Container IDs with a masquerade jump of ``network`` (for GC)."""
        import re  # GC only: an ADD or DEL never pays for re's import

        out: set[str] = set()
        for version in (4, 6):
            for rule in self._postrouting(version):
                m = re.search(COMMENT_RE, rule)
                if m and m.group(1) == network:
                    out.add(m.group(2))
        return out

    def _postrouting(self, version: int) -> list[str]:
        _, out, _ = self._run(version, ["-S", "POSTROUTING"])
        return [ln for ln in out.splitlines() if ln.startswith("-A POSTROUTING")]

    def _chain_exists(self, version: int, chain: str) -> bool:
        return self._run(version, ["-S", chain])[0] == 0

    def _teardown_slow(self, version: int, chain: str) -> None:
        """Step by step, tolerating anything already gone: every jump to the chain, then it."""
        for rule in self._postrouting(version):
            if rule.split()[-2:] == ["-j", chain]:
                self._restore(version, ["-D" + rule[2:]])
        if self._chain_exists(version, chain):
            status, _, err = self._restore(version, [f":{chain} - [0:0]", f"-X {chain}"])
            if status != 0:
                raise MasqError(f"failed to delete masquerade chain {chain}: {err.strip()}")
