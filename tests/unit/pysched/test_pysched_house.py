"""pysched's house rules, read from the source with ast (nothing is executed).

- no module imports another module's private names (``from pysched.x import _y``);
- the vectorised driver (pysched.fast) knows no plugin by name: it finds the plugins' batch
  twins through the framework's Protocols, so no plugin name or cycle-state key appears there;
- plugins and the framework never import the engine (scheduler, queue, cache, api, fast).
"""

from __future__ import annotations

import ast
from pathlib import Path

from pysched.plugins.registry import in_tree_factories

PKG = Path(__file__).resolve().parents[3] / "pysched"


def modules() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def test_no_private_imports_across_modules() -> None:
    offenders = []
    for p in modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pysched"):
                offenders += [
                    f"{p.relative_to(PKG.parent)}: {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert offenders == []


def test_the_vectorised_driver_names_no_plugin() -> None:
    names = set(in_tree_factories())
    keys = {f"{prefix}{n}" for n in names for prefix in ("PreFilter", "PreScore", "Score")}
    offenders = []
    for p in sorted((PKG / "fast").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Constant) and node.value in names | keys:
                offenders.append(f"{p.name}:{node.lineno}: {node.value!r}")
    assert offenders == []


def test_plugins_and_framework_stay_below_the_engine() -> None:
    engine = ("pysched.scheduler", "pysched.queue", "pysched.cache", "pysched.api", "pysched.fast")
    offenders = []
    for sub in ("framework", "plugins"):
        for p in sorted((PKG / sub).rglob("*.py")):
            for node in ast.walk(ast.parse(p.read_text())):
                mods = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    mods = [node.module]
                elif isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                offenders += [f"{sub}/{p.name}: {m}" for m in mods if m.startswith(engine)]
    assert offenders == []
