"""Masquerade through python-iptables (libiptc): legacy xtables hosts only.

libiptc writes the legacy tables, which an iptables-nft host's ``iptables``
does not show (ldx/python-iptables#319), so :mod:`pycni.masq.select` picks this
backend only where ``iptables`` is the legacy variant (or when asked for).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import iptc  # heavy (~300 ms); imported only when this backend is chosen

from pycni.masq import multicast_net
from pycni.spec import IPInterface


class IptcBackend:
    name = "python-iptables"

    def _table(self, version: int) -> Any:
        table = iptc.Table6(iptc.Table6.NAT) if version == 6 else iptc.Table(iptc.Table.NAT)
        table.autocommit = False
        table.refresh()
        return table

    @staticmethod
    def _rule(version: int, target: str, comment: str, src: str = "", dst: str = "",
              negate_dst: bool = False) -> Any:
        rule = iptc.Rule6() if version == 6 else iptc.Rule()
        if src:
            rule.src = src
        if dst:
            rule.dst = ("!" + dst) if negate_dst else dst
        match = rule.create_match("comment")
        match.comment = comment
        rule.create_target(target)
        return rule

    def setup(self, addrs: Sequence[IPInterface], chain: str, comment: str) -> None:
        for version in sorted({a.version for a in addrs}):
            table = self._table(version)
            ch = (iptc.Chain(table, chain) if table.is_chain(chain)
                  else table.create_chain(chain))
            ch.flush()
            post = iptc.Chain(table, "POSTROUTING")
            for addr in (a for a in addrs if a.version == version):
                ch.append_rule(self._rule(version, "ACCEPT", comment, dst=str(addr.network)))
                ch.append_rule(self._rule(version, "MASQUERADE", comment,
                                          dst=multicast_net(version), negate_dst=True))
                jump = self._rule(version, chain, comment,
                                  src=f"{addr.ip}/{addr.max_prefixlen}")
                if jump not in post.rules:
                    post.append_rule(jump)
            table.commit()

    def containers(self, network: str) -> set[str]:
        """Container IDs with a masquerade jump of ``network`` (for GC)."""
        prefix = f"name: {json.dumps(network)} id: "
        out: set[str] = set()
        for version in (4, 6):
            for rule in iptc.Chain(self._table(version), "POSTROUTING").rules:
                for m in rule.matches:
                    text = (m.get_all_parameters().get("comment") or [""])[0] \
                        if m.name == "comment" else None
                    if text and text.startswith(prefix):
                        out.add(json.loads(text[len(prefix):]))
        return out

    def start_teardown(self, addrs: Sequence[IPInterface] | None, chain: str,
                       comment: str) -> Callable[[], None]:
        """In-process and quick: done at once, nothing left to wait for."""
        self.teardown(addrs, chain, comment)
        return lambda: None

    def teardown(self, addrs: Sequence[IPInterface] | None, chain: str, comment: str) -> None:
        for version in (4, 6):
            table = self._table(version)
            if not table.is_chain(chain):
                continue
            post = iptc.Chain(table, "POSTROUTING")
            for rule in list(post.rules):
                if rule.target.name == chain:
                    post.delete_rule(rule)
            ch = iptc.Chain(table, chain)
            ch.flush()
            ch.delete()
            table.commit()
