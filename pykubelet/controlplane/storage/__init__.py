"""The store seam: a revisioned key-value log shaped like etcd v3 (as kine serves it).
Its names are interface.py's ``__all__``, listed there once."""

from pykubelet.controlplane.storage.interface import *  # noqa: F403
from pykubelet.controlplane.storage.interface import __all__ as __all__
