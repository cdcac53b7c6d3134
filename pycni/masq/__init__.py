"""Masquerade rules behind one seam, as the reference's ``pkg/ip/ipmasq_linux.go``.

Per container: a chain ``CNI-<hash>`` in the nat table that accepts traffic to
the container's own subnet and masquerades everything else except multicast,
and a POSTROUTING jump from the container's address. Which tool writes them
depends on the host (see :mod:`pycni.masq.select`): the rules must land in the
tables the host's ``iptables`` shows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Protocol

from pycni.spec import IPInterface

try:  # the builtin implementation: hashlib loads OpenSSL (~4 ms) for one digest
    from _sha512 import sha512 as _sha512  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import sha512 as _sha512

MAX_CHAIN_LENGTH = 28


def chain_name(network: str, container_id: str, prefix: str = "") -> str:
    """utils.FormatChainName: ``CNI-`` + hex sha512(name+id), cut to 28 characters."""
    digest = _sha512((network + container_id).encode()).hexdigest()
    return f"CNI-{prefix}{digest}"[:MAX_CHAIN_LENGTH]


def comment(network: str, container_id: str) -> str:
    """utils.FormatComment: Go's %q of both (JSON quoting matches it for plain text)."""
    return f"name: {json.dumps(network)} id: {json.dumps(container_id)}"


def multicast_net(version: int) -> str:
    return "224.0.0.0/4" if version == 4 else "ff00::/8"


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
