"""Which masquerade backend this host needs, probed once per process and cached.

``iptables`` on Debian 12 is an alternatives symlink to ``xtables-nft-multi``
(rules in nf_tables, which python-iptables cannot see) or ``xtables-legacy-multi``.
Resolving the symlink costs no process; only when that is inconclusive do we ask
``iptables -V``. ``PYCNI_MASQ_BACKEND`` (``nft``, ``legacy``, ``iptc``) overrides.
"""

from __future__ import annotations

import os
from functools import cache

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from pycni.masq.backend import MasqBackend


def _which(name: str) -> str | None:
    """shutil.which without importing shutil (an exec'd plugin pays for every import)."""
    for d in os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(":"):
        path = os.path.join(d, name)
        if os.access(path, os.X_OK):
            return path
    return None


@cache
def probe_iptables_variant() -> str:
    """``nft`` or ``legacy``: the variant the host's ``iptables`` command uses."""
    path = _which("iptables") or "/usr/sbin/iptables"
    target = os.path.basename(os.path.realpath(path))
    if "nft" in target:
        return "nft"
    if "legacy" in target:
        return "legacy"
    from pycni.masq.spawn import run

    try:
        out = run([path, "-V"])[1]
    except OSError:
        return "nft"
    return "legacy" if "legacy" in out else "nft"


def get_backend() -> MasqBackend:
    """The backend for this host and this kind of call (each kind built once).

    Legacy hosts: python-iptables when running in-process (a long-lived runtime
    imports it once), but ``iptables-legacy-restore`` in an exec'd plugin, where
    importing python-iptables alone costs ~300 ms (it searches for the xtables
    libraries by running ldconfig).
    """
    choice = os.environ.get("PYCNI_MASQ_BACKEND", "") or probe_iptables_variant()
    if choice == "legacy":
        from pycni.invoke import in_process_enabled

        if in_process_enabled.get():
            choice = "iptc"
    return _backend(choice)


@cache
def _backend(choice: str) -> MasqBackend:
    from pycni.masq.restore import RestoreBackend

    if choice == "iptc":
        try:
            from pycni.masq.iptc_legacy import IptcBackend

            return IptcBackend()
        except ImportError:  # python-iptables or the xtables libraries missing
            return RestoreBackend("legacy")
    if choice == "legacy":
        return RestoreBackend("legacy")
    return RestoreBackend("nft")
