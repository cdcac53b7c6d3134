"""What the server serves, and how a user's word for a resource maps to it (client-go's
discovery, RESTMapper and shortcut expander).

``pods``, ``pod``, ``po``, ``Pod`` and ``pods.v1`` all name one resource; ``pdb.policy``
names a group too; a category (``all``) names every resource in it. The server's answer is
kept on disk for six hours as kubectl keeps it (under ``$KUBECACHEDIR`` or
``~/.kube/cache``, here in ``pykubectl/<host_port>/``), and asked again when a name is not
found in it, so commands cost no discovery requests on the hot path.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pycni.atomic_files import write_atomic
from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.client.rest import Resource, RESTClient

AGGREGATED_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                     "application/json")
CACHE_TTL = 6 * 3600.0


@dataclass(frozen=True)
class Mapping:
    """One served resource."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()

    @property
    def rest(self) -> Resource:
        return Resource(self.group, self.version, self.resource, self.namespaced)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gvr_string(self) -> str:
        """GroupVersionResource.String(): ``/v1, Resource=pods``."""
        return f"{self.group}/{self.version}, Resource={self.resource}"

    @property
    def kind_string(self) -> str:
        """``pod``, ``poddisruptionbudget.policy``: how kubectl prints the kind."""
        return f"{self.kind.lower()}.{self.group}" if self.group else self.kind.lower()

    @property
    def resource_string(self) -> str:
        """``pods``, ``poddisruptionbudgets.policy``: the resource in messages."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def names(self) -> set[str]:
        return {self.resource, self.singular or self.kind.lower(), self.kind.lower(),
                *self.short_names}


class Discovery:
    """The served resources of one server, from the disk cache or the server."""

    def __init__(self, client: RESTClient, cache_dir: Path | None) -> None:
        self.client = client
        self.cache_file = (cache_dir / "pykubectl" / _host_port(client.server) / "resources.json"
                           if cache_dir else None)
        self._mappings: list[Mapping] | None = None
        self._fresh = False  # fetched from the server by this process

    # ------------------------------------------------------------------ loading
    def mappings(self) -> list[Mapping]:
        if self._mappings is None:
            self._mappings = self._from_cache()
            if self._mappings is None:
                self.refresh()
        assert self._mappings is not None
        return self._mappings

    def refresh(self) -> list[Mapping]:
        """Ask the server (as ``kubectl api-resources`` always does)."""
        self._mappings = fetch(self.client)
        self._fresh = True
        self._save()
        return self._mappings

    def _from_cache(self) -> list[Mapping] | None:
        if self.cache_file is None:
            return None
        try:
            if time.time() - self.cache_file.stat().st_mtime > CACHE_TTL:
                return None
            data = json.loads(self.cache_file.read_text())
            return [Mapping(**{**m, "short_names": tuple(m["short_names"]),
                               "categories": tuple(m["categories"]),
                               "verbs": tuple(m["verbs"])}) for m in data["resources"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _save(self) -> None:
        if self.cache_file is None or self._mappings is None:
            return
        with contextlib.suppress(OSError):
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.cache_file,
                         json.dumps({"server": self.client.server,
                                     "resources": [asdict(m) for m in self._mappings]}),
                         durable=False)  # a cache: a crash loses it, the next run asks again

    # ------------------------------------------------------------------ lookups
    def resolve(self, word: str) -> list[Mapping]:
        """The resources a word names (several for a category); asks the server again
        before giving up, as kubectl does for unknown names."""
        found = _match(self.mappings(), word)
        if not found and not self._fresh:
            found = _match(self.refresh(), word)
        if not found:
            raise CommandError(_no_match(word))
        return found

    def resolve_one(self, word: str) -> Mapping:
        found = self.resolve(word)
        if len(found) > 1 and not _is_exact(found[0], word):
            raise CommandError(f'error: "{word}" names several resource types; name one')
        return found[0]

    def for_kind(self, api_version: str, kind: str) -> Mapping:
        """The resource of a manifest's apiVersion and kind."""
        group, _, version = api_version.rpartition("/")
        for attempt in (0, 1):
            ms = self.mappings() if attempt == 0 else (
                self.refresh() if not self._fresh else [])
            for m in ms:
                if m.kind == kind and m.group == group and m.version == version:
                    return m
        raise CommandError(f'error: no matches for kind "{kind}" in version "{api_version}"')


def _is_exact(m: Mapping, word: str) -> bool:
    return word.lower() in m.names()


def _no_match(word: str) -> str:
    res, _, group = word.partition(".")
    if group:
        return f'error: the server doesn\'t have a resource type "{res}" in group "{group}"'
    return f'error: the server doesn\'t have a resource type "{word}"'


def _match(mappings: list[Mapping], word: str) -> list[Mapping]:
    w = word.lower()
    exact = [m for m in mappings if w in m.names()]
    if exact:
        return exact[:1]
    if "." in w:
        res, _, rest = w.partition(".")
        for m in mappings:
            if res in m.names() and rest in (m.group, f"{m.version}.{m.group}", m.version):
                return [m]
    return [m for m in mappings if w in m.categories]


def _host_port(server: str) -> str:
    """The cache directory kubectl would use for a server: ``127.0.0.1_6443``."""
    host = re.sub(r"^[a-z]+://", "", server).split("/", 1)[0]
    return re.sub(r"[^a-zA-Z0-9.-]", "_", host)


# ---------------------------------------------------------------------------- fetching


def fetch(client: RESTClient) -> list[Mapping]:
    """Aggregated discovery (two requests) when the server offers it, else the legacy
    documents, one per group version."""
    core = client.request("GET", "/api", accept=AGGREGATED_ACCEPT)
    groups = client.request("GET", "/apis", accept=AGGREGATED_ACCEPT)
    if _kind(core) == "APIGroupDiscoveryList" and _kind(groups) == "APIGroupDiscoveryList":
        return _aggregated(core) + _aggregated(groups)
    out: list[Mapping] = []
    gvs: list[tuple[str, str]] = []
    if isinstance(core, dict):
        gvs += [("", v) for v in (core.get("versions") or [])[:1]]
    if isinstance(groups, dict):
        for g in groups.get("groups") or []:
            pref = (g.get("preferredVersion") or {}).get("version") or (
                (g.get("versions") or [{}])[0].get("version"))
            if pref:
                gvs.append((g.get("name") or "", pref))
    for group, version in gvs:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        doc = client.request("GET", path)
        for r in (doc or {}).get("resources") or []:
            if "/" in r.get("name", ""):
                continue
            out.append(Mapping(group, version, r["name"], r.get("kind", ""),
                               bool(r.get("namespaced")), r.get("singularName") or "",
                               tuple(r.get("shortNames") or ()),
                               tuple(r.get("categories") or ()), tuple(r.get("verbs") or ())))
    return out


def _kind(doc: Any) -> str:
    return str(doc.get("kind") or "") if isinstance(doc, dict) else ""


def _aggregated(doc: dict[str, Any]) -> list[Mapping]:
    out = []
    for item in doc.get("items") or []:
        group = (item.get("metadata") or {}).get("name") or ""
        versions = [v for v in item.get("versions") or [] if v.get("freshness") != "Stale"]
        if not versions:
            continue
        v = versions[0]
        for r in v.get("resources") or []:
            rk = r.get("responseKind") or {}
            if not rk:
                continue
            out.append(Mapping(group, v.get("version", ""), r["resource"], rk.get("kind", ""),
                               r.get("scope") == "Namespaced", r.get("singularResource") or "",
                               tuple(r.get("shortNames") or ()),
                               tuple(r.get("categories") or ()), tuple(r.get("verbs") or ())))
    return out
