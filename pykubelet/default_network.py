"""The node's default CNI network, written when the conf dir has none (as k3s writes its
own flannel config): without one the runtime reports NetworkReady=false and the node never
becomes Ready, which is what a first `pykubelet run` or `install-service` otherwise gives.

The network is a bridge (``cni0``, the pods' gateway, masquerading traffic that leaves the
pod CIDR) with host-local addresses from the node's ``podCIDR``. Plugins are pycni's when
`pycni install` put them on the search path, else Debian's reference plugins of the same
name. A conf dir that holds any network file (``.conf``, ``.conflist``, ``.json``) is the
user's: it is never touched.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pycni import defaults as cni_defaults
from pycni.atomic_files import write_atomic
from pycni.conf import EXTENSIONS

log = logging.getLogger(__name__)

FILE_NAME = "10-pykubelet.conflist"
NETWORK_NAME = "pykubelet"
BRIDGE = "cni0"


def plugin_type(name: str, bin_dirs: list[str]) -> str:
    """``pycni-NAME`` when it is on the search path, else the reference ``NAME``."""
    for d in bin_dirs:
        if os.access(os.path.join(d, f"pycni-{name}"), os.X_OK):
            return f"pycni-{name}"
    return name


def default_conflist(pod_cidr: str, bin_dirs: list[str]) -> dict[str, Any]:
    return {
        "cniVersion": "1.0.0",
        "name": NETWORK_NAME,
        "plugins": [{
            "type": plugin_type("bridge", bin_dirs), "bridge": BRIDGE, "isGateway": True,
            "ipMasq": True, "hairpinMode": True,
            "ipam": {"type": plugin_type("host-local", bin_dirs),
                     "ranges": [[{"subnet": pod_cidr}]], "routes": [{"dst": "0.0.0.0/0"}]},
        }],
    }


def has_network(conf_dir: Path) -> bool:
    """The conf dir holds a file libcni would read as a network."""
    try:
        return any(e.is_file() and e.name.endswith(EXTENSIONS) for e in conf_dir.iterdir())
    except FileNotFoundError:
        return False


def ensure_default_network(conf_dir: str | Path, pod_cidr: str,
                           bin_path: str = cni_defaults.BIN_PATH) -> Path | None:
    """Write the default network into ``conf_dir`` unless it has one; returns the file
    written (None: the conf dir already had a network)."""
    d = Path(conf_dir)
    if has_network(d):
        return None
    d.mkdir(parents=True, exist_ok=True)
    path = d / FILE_NAME
    conf = default_conflist(pod_cidr, cni_defaults.split_path(bin_path))
    write_atomic(path, json.dumps(conf, indent=2) + "\n")
    log.info("no CNI network in %s: wrote %s (bridge %s, pod CIDR %s, as k3s writes its "
             "own)", d, path, BRIDGE, pod_cidr)
    return path
