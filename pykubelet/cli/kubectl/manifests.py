"""Objects from ``-f`` arguments as kubectl reads them: files, directories (their
``.json``, ``.yaml`` and ``.yml`` files in name order, subdirectories with ``-R``), ``-``
for standard input; multi-document YAML and JSON; ``kind: List`` flattened. YAML reads as
Kubernetes reads it: dates stay strings, as in sigs.k8s.io/yaml."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError

EXTENSIONS = (".json", ".yaml", ".yml")


@dataclass
class Manifest:
    """One object and where it came from (``"STDIN"`` or the path as given)."""

    obj: dict[str, Any]
    source: str

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion") or "")

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind") or "")

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name") or "")

    @property
    def namespace(self) -> str:
        return str((self.obj.get("metadata") or {}).get("namespace") or "")


def read_all(paths: list[str], recursive: bool = False) -> list[Manifest]:
    """Every object of every ``-f`` argument, in order."""
    out: list[Manifest] = []
    for p in paths:
        for source, text in _sources(p, recursive):
            out += list(parse(text, source))
    return out


def _sources(arg: str, recursive: bool) -> Iterator[tuple[str, str]]:
    if arg == "-":
        yield "STDIN", sys.stdin.read()
        return
    if arg.startswith(("http://", "https://")):
        raise CommandError(f'error: {arg}: reading manifests from URLs is not supported')
    path = Path(arg)
    if not path.exists():
        raise CommandError(f'error: the path "{arg}" does not exist')
    if path.is_dir():
        for f in _walk(path, recursive):
            yield str(f), _read(f)
        return
    yield arg, _read(path)


def _walk(root: Path, recursive: bool) -> Iterator[Path]:
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        p = Path(entry.path)
        if entry.is_dir():
            if recursive:
                yield from _walk(p, recursive)
        elif p.suffix in EXTENSIONS:
            yield p


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise CommandError(f"error: {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CommandError(f"error: {path}: not a text file") from None


def _loader() -> type:
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc,valid-type]
        pass

    # sigs.k8s.io/yaml keeps timestamps as strings
    Loader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
        for k, v in base.yaml_implicit_resolvers.items()
    }
    return Loader


def parse(text: str, source: str) -> Iterator[Manifest]:
    """The objects in one file's text."""
    import yaml

    try:
        docs = list(yaml.load_all(text, Loader=_loader()))
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise CommandError(f"error: error parsing {source}: {problem}") from None
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise CommandError(f"error: error parsing {source}: a manifest must be a mapping "
                               f"(an object), got {type(doc).__name__}")
        _check_keys(doc, source)
        if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List")
                                         and isinstance(doc.get("items"), list)):
            for item in doc.get("items") or []:
                if isinstance(item, dict):
                    yield _checked(item, source)
            continue
        yield _checked(doc, source)


def _checked(obj: dict[str, Any], source: str) -> Manifest:
    missing = [f for f in ("apiVersion", "kind") if not obj.get(f)]
    if missing:
        raise CommandError(f'error: error validating "{source}": error validating data: '
                           f"[{', '.join(f + ' not set' for f in missing)}]; if you choose "
                           "to ignore these errors, turn validation off with --validate=false")
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise CommandError(f'error: error validating "{source}": metadata: expected an object')
    return Manifest(obj, source)


def _check_keys(value: Any, source: str) -> None:
    """JSON has only string keys; YAML may not (``1: x``), which Kubernetes refuses."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise CommandError(f"error: error parsing {source}: error converting YAML to "
                                   f"JSON: key {k!r} is not a string")
            _check_keys(v, source)
    elif isinstance(value, list):
        for v in value:
            _check_keys(v, source)
