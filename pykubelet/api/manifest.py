"""Reading Pod manifests: YAML or JSON text, one or many documents, or a v1 List.

Each document is decoded strictly, defaulted as the API server would, then
validated; the first problem found stops the load (nothing half-read is returned),
its message naming the document when there are several.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykubelet.api import kinds
from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.errors import APIError, DecodeError
from pykubelet.api.machinery.manifest import SyntaxProblem, parse_documents
from pykubelet.api.types import Pod
from pykubelet.api.validation import validate_pod


class ManifestError(APIError):
    """A manifest that cannot be read, naming where (source, document)."""


def load_documents(text: str, source: str = "") -> list[Any]:
    """Parse YAML/JSON text into its non-empty documents (a List expands to its items)."""
    where = f"{source}: " if source else ""
    try:
        docs = parse_documents(text)
    except SyntaxProblem as exc:
        raise ManifestError(f"{where}invalid YAML: {exc}") from None
    out: list[Any] = []
    for doc in docs:
        if isinstance(doc, Mapping) and doc.get("kind") == "List":
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise ManifestError(f"{where}items: expected an array")
            out.extend(items)
        else:
            out.append(doc)
    return out


def parse_pod(obj: Any) -> Pod:
    """Decode, default and validate one Pod object."""
    pod = decode_pod(obj)
    if isinstance(obj, Mapping):
        for key in ("apiVersion", "kind"):
            if key not in obj:
                raise DecodeError(key, "Required value")
    set_defaults_pod(pod)
    validate_pod(pod)
    return pod


def decode_api_pod(obj: Any) -> Pod:
    """A Pod as the API server sends it: already defaulted and validated there, so only
    decoded (and defaulted again, which changes nothing); a field this model lacks is
    dropped rather than refused, so a node never rejects what the API accepted."""
    pod: Pod = kinds.POD.decode(obj, unknown=[])
    set_defaults_pod(pod)
    return pod


def load_pods(text: str, source: str = "") -> list[Pod]:
    """All Pods of a manifest text; raises ManifestError / APIError on the first problem."""
    docs = load_documents(text, source)
    pods = []
    for i, doc in enumerate(docs):
        try:
            pods.append(parse_pod(doc))
        except APIError as exc:
            where = source or "manifest"
            if len(docs) > 1:
                where += f" (document {i + 1})"
            raise ManifestError(f"{where}: {exc}") from exc
    return pods
