"""A module loaded from its file under a name of its own: scripts/ and bench/ are no
packages, and a test module loaded this way is not collected twice."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load(name: str, path: Path, register: bool = False) -> ModuleType:
    """``path`` executed as module ``name``; with ``register`` also in sys.modules (for a
    module whose dataclasses or pickles look themselves up there)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
