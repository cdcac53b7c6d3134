"""The iptables tool lines the proxier runs: the variant's binaries, legacy's xtables lock
waited for at most 5 s (utiliptables' -w 5: a stuck holder fails one sync, which is retried,
instead of hanging the proxy), inside the namespace when given; restore's error line."""

from __future__ import annotations

from pykubelet.proxy.iptables_restore import (
    Iptables,
    extract_lines,
    input_line,
    nft_restore_input,
)


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


def test_a_large_nft_restore_asks_for_every_chain_of_its_tables() -> None:
    """iptables-nft 1.8.x keeps the chains a --noflush restore names in a sorted linked
    list (cache_chain_list_insert: a scan per command) and fetches each one alone: with
    11,000 chains that is 8-9 s of user time. A command naming no chain (``-Z``) makes it
    fetch all chains at once and skip the list; below the threshold nothing changes."""
    small = "*nat\n:KUBE-A - [0:0]\n-A KUBE-A -j RETURN\nCOMMIT\n"
    assert nft_restore_input(small, at=2) == (small, [])
    big = "*nat\n:KUBE-A - [0:0]\n:KUBE-B - [0:0]\nCOMMIT\n*filter\n:KUBE-C - [0:0]\nCOMMIT\n"
    text, added = nft_restore_input(big, at=2)
    assert text == ("*nat\n-Z\n:KUBE-A - [0:0]\n:KUBE-B - [0:0]\nCOMMIT\n"
                    "*filter\n-Z\n:KUBE-C - [0:0]\nCOMMIT\n")
    assert added == [2, 7]  # the lines added, so an error's line maps back to the input
    assert input_line(8, added) == 6  # ":KUBE-C" is line 6 of what the proxier wrote
    assert input_line(3, added) == 2
