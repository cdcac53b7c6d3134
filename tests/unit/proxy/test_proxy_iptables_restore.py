"""The iptables tool lines the proxier runs: the variant's binaries, legacy's xtables lock
waited for at most 5 s (utiliptables' -w 5: a stuck holder fails one sync, which is retried,
instead of hanging the proxy), inside the namespace when given; restore's error line."""

from __future__ import annotations

from pykubelet.proxy.iptables_restore import Iptables, extract_lines


def test_tool_lines() -> None:
    assert Iptables("legacy")._argv("restore", *Iptables("legacy")._wait, "--noflush") == [
        "iptables-legacy-restore", "-w", "5", "--noflush"]
    nft = Iptables("nft", netns="/run/netns/x")
    assert nft._argv("save", "-t", "nat") == [
        "nsenter", "--net=/run/netns/x", "iptables-nft-save", "-t", "nat"]
    assert nft._wait == []


def test_extract_lines_shows_the_failing_line_in_context() -> None:
    text = "\n".join(f"l{i}" for i in range(1, 11))
    assert extract_lines(text, 5, 1) == "4: l4\n5: l5\n6: l6"
