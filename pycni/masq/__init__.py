"""Masquerade rules behind one seam, as the reference's ``pkg/ip/ipmasq_linux.go``.

Per container: a chain ``CNI-<hash>`` in the nat table that accepts traffic to
the container's own subnet and masquerades everything else except multicast,
and a POSTROUTING jump from the container's address. Which tool writes them
depends on the host (see :mod:`pycni.masq.select`): the rules must land in the
tables the host's ``iptables`` shows; each backend is a
:class:`pycni.masq.backend.MasqBackend`.
"""

from __future__ import annotations

from pycni import jsonlite

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
    return f"name: {jsonlite.dumps(network)} id: {jsonlite.dumps(container_id)}"


def multicast_net(version: int) -> str:
    return "224.0.0.0/4" if version == 4 else "ff00::/8"
