"""`pykubelet lab load IMAGE|ARCHIVE`: an image onto every node of a lab (kind's
`kind load docker-image` / `kind load image-archive`).

A path to a file is read as an archive (docker-archive or OCI layout, as `pykubelet
image import` reads it); anything else names an image of this host's image store
(`pykubelet image ls --root ROOT`), copied with its tags. Each node's store is written
under its own lock, so running nodes pick the image up at once: a pod naming it with a
version tag (pull policy IfNotPresent) starts without a registry.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pykubelet.lab.create import LabError, locked_lab


@dataclass
class Loaded:
    image_id: str
    tags: list[str]
    nodes: list[str] = field(default_factory=list)


def load(name: str, source: str, state_root: Path, run_root: Path,
         host_root: Path) -> Loaded:
    """Load ``source`` (an archive file, else a reference in ``host_root``'s store) into
    every node of lab ``name``; LabError (one line) when the lab or the image is not
    found or cannot be read."""
    from pykubelet.runtime.errors import CRIError
    from pykubelet.runtime.images import ImageStore

    with locked_lab(name, state_root, run_root) as st:
        nodes = st.layout.node_layouts()
        host: ImageStore | None = None
        if not os.path.isfile(source):
            if not (host_root / "images" / "index.json").is_file():
                raise LabError(f"image {source!r}: no such file, and this host has no image "
                               f"store under {host_root} (import it there with: pykubelet "
                               f"image import FILE, or give the archive's path)")
            host = ImageStore(host_root / "images")
            try:
                host.require(source)
            except CRIError as exc:
                raise LabError(f"image {source!r}: no such file, and {exc}") from None
        done: Loaded | None = None
        for node in nodes:
            store = ImageStore(node.root_dir / "images")
            try:
                if host is not None:
                    img = store.copy_from(host, source)
                else:
                    img = store.import_archive(source)[0]
            except CRIError as exc:
                raise LabError(f"{node.name}: {exc}") from None
            if done is None:
                done = Loaded(img.id, list(img.repo_tags))
            done.nodes.append(node.name)
        if done is None:
            raise LabError(f"lab {name!r} has no nodes")
        return done
