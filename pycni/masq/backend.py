"""The masquerade seam: what every backend (iptables-restore, python-iptables) provides.

A module of its own so that only type checkers import it: a ``Protocol`` class needs
``typing`` at run time, which an exec'd plugin's start does without.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from pycni.spec import IPInterface


class MasqBackend(Protocol):
    """Sets up and tears down one container's masquerade chain."""

    name: str

    def setup(self, addrs: Sequence[IPInterface], chain: str, comment: str) -> None:
        """Create (or refill) ``chain`` for ``addrs`` and jump to it from POSTROUTING."""
        ...

    def teardown(self, addrs: Sequence[IPInterface] | None, chain: str, comment: str) -> None:
        """Remove the jumps and the chain; missing pieces are fine. ``addrs=None``: the
        container's addresses are unknown (netns gone, no prevResult), find the jumps."""
        ...

    def start_teardown(self, addrs: Sequence[IPInterface] | None, chain: str,
                       comment: str) -> Callable[[], None]:
        """Begin :meth:`teardown`; the returned function completes it (raising its error)."""
        ...

    def containers(self, network: str) -> set[str]:
        """IDs of the containers of ``network`` that have masquerade rules (for GC)."""
        ...
