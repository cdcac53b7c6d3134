"""Where CNI lives on a host by default, in one place for the runtime side and the CLIs.

Plugins are looked up along a search path, as CNI_PATH and containerd's ``bin_dir`` list
are: pycni's own plugins (``/opt/cni/bin``, where scripts/install.sh writes them), then
Debian's reference plugins (``/usr/lib/cni``, package containernetworking-plugins), so a
chain may mix them (loopback and portmap from Debian, pycni-bridge from us).
"""

from __future__ import annotations

CONF_DIR = "/etc/cni/net.d"
BIN_DIRS: tuple[str, ...] = ("/opt/cni/bin", "/usr/lib/cni")
BIN_PATH = ":".join(BIN_DIRS)  # the same, as CNI_PATH spells it
CACHE_DIR = "/var/lib/cni"


def split_path(*values: str) -> list[str]:
    """Directories from CNI_PATH-style values (``A:B``, repeatable), empty parts dropped."""
    return [d for v in values for d in v.split(":") if d]
