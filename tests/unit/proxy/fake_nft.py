"""An in-memory ``nft`` for the nftables proxier's tests (knftables.Fake): it applies the
transactions the proxier writes (all or nothing, as the kernel) and dumps the table in
upstream's golden format, so a test compares the resulting state, not the transaction."""

from __future__ import annotations

import re

from pykubelet.proxy.iptables_restore import RestoreError
from pykubelet.proxy.nftables_rules import PREFIX

_ELEMENT = re.compile(r"^(add|delete) element ip kube-proxy (\S+) \{ (.*) \}$")


class FakeNft:
    def __init__(self) -> None:
        self.table = ""  # the "add table" line, "" when there is no table
        self.chain_map: dict[str, tuple[str, list[str]]] = {}  # name -> (declaration, rules)
        self.containers: dict[str, tuple[str, dict[str, str]]] = {}  # name -> (decl, elems)
        self.runs: list[str] = []
        self.fail = ""

    # -- what the proxier calls --

    def run(self, text: str) -> None:
        if self.fail:
            raise RestoreError(self.fail, 1)
        saved = (self.table, {k: (d, list(r)) for k, (d, r) in self.chain_map.items()},
                 {k: (d, dict(e)) for k, (d, e) in self.containers.items()})
        try:
            for line in text.splitlines():
                if line:
                    self._apply(line)
        except Exception:
            self.table, self.chain_map, self.containers = saved
            raise
        self.runs.append(text)

    def chains(self) -> set[str]:
        return set(self.chain_map)

    def sets(self) -> set[str]:
        return {k for k, (d, _) in self.containers.items() if d.startswith("add set")}

    def table_exists(self) -> bool:
        return bool(self.table) and "services" in self.chain_map

    def delete_table(self) -> None:
        self.run(f"add table {PREFIX}\ndelete table {PREFIX}\n")

    # -- the model --

    def _apply(self, line: str) -> None:
        chains = self.chain_map
        words = line.split()
        op, kind = words[0], words[1]
        if kind == "table":
            if op == "add":
                if not self.table or "{" in line:
                    self.table = line
            elif op == "delete":
                if not self.table:
                    raise RestoreError("No such file or directory: table", 0)
                self.table, self.containers = "", {}
                chains.clear()
            return
        if not self.table:
            raise RestoreError(f"no table for: {line}", 0)
        name = words[4] if len(words) > 4 else ""
        if kind == "chain":
            if op == "add":
                if name not in chains or "{" in line:
                    rules = chains[name][1] if name in chains else []
                    chains[name] = (line, rules)
            elif op == "flush":
                chains[name][1].clear()
            elif op == "delete":
                if chains[name][1]:
                    raise RestoreError(f"Device or resource busy: {name}", 0)
                if any(f"goto {name} " in r or r.endswith(f"goto {name}")
                       for _, rules in chains.values() for r in rules):
                    raise RestoreError(f"chain {name} still referenced", 0)
                del chains[name]
        elif kind == "rule":
            for target in re.findall(r"(?:goto|jump) (\S+)", line):
                if target not in chains:
                    raise RestoreError(f"No such file or directory: {target}", 0)
            chains[name][1].append(" ".join(words[5:]))
        elif kind in ("set", "map"):
            if op == "add":
                if name not in self.containers:
                    self.containers[name] = (line, {})
            elif op == "flush":
                self.containers[name][1].clear()
            elif op == "delete":
                del self.containers[name]
        elif kind == "element":
            m = _ELEMENT.match(line)
            assert m, line
            body = m.group(3)
            key = re.split(r" comment | : ", body)[0]
            elems = self.containers[m.group(2)][1]
            if op == "add":
                for target in re.findall(r"goto (\S+)", body):
                    if target not in chains:
                        raise RestoreError(f"No such file or directory: {target}", 0)
                if key in elems and elems[key] != body:
                    raise RestoreError(f"File exists: {key}", 0)
                elems[key] = body
            else:
                if key not in elems:
                    raise RestoreError(f"No such file or directory: element {key}", 0)
                del elems[key]
        else:
            raise AssertionError(f"fake nft does not know: {line}")

    def dump(self) -> list[str]:
        """Every object as the ``add`` line that makes it (knftables.Fake.Dump's lines)."""
        if not self.table:
            return []
        out = [self.table]
        for name, (decl, elems) in self.containers.items():
            out.append(decl)
            out += [f"add element {PREFIX} {name} {{ {body} }}" for body in elems.values()]
        for name, (decl, rules) in self.chain_map.items():
            out.append(decl)
            out += [f"add rule {PREFIX} {name} {r}" for r in rules]
        return out

    def chain_rules(self, name: str) -> list[str]:
        return list(self.chain_map[name][1])
