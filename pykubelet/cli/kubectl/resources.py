"""From a command line's resource words to what to fetch (cli-runtime's builder, the parts
pykubectl uses): ``pods``, ``pods,nodes``, ``pod web db``, ``pod/web node/n1``, a category
(``all``), each in the right namespace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykubelet.cli.kubectl.discovery import Mapping
from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.session import Session
from pykubelet.client.rest import StatusError

TYPE_NAME_HINT = (
    "there is no need to specify a resource type as a separate argument when passing "
    "arguments in resource/name form (e.g. 'pykubectl get resource/<resource_name>' "
    "instead of 'pykubectl get resource resource/<resource_name>'")


@dataclass(frozen=True)
class Target:
    """One resource type, and one object of it or (``name == ""``) its collection."""

    mapping: Mapping
    name: str = ""
    namespace: str = ""  # "" for cluster-scoped resources and for all namespaces

    @property
    def path(self) -> str:
        return self.mapping.rest.path(self.namespace, self.name)


def targets(session: Session, words: list[str], *, all_namespaces: bool = False,
            need_names: bool = False, verb: str = "get") -> list[Target]:
    """The targets ``words`` name, in order; ``need_names`` refuses bare collections."""
    if not words:
        raise CommandError(
            f"error: You must specify the type of resource to {verb}. Use \"pykubectl "
            "api-resources\" for a complete list of supported resources.")
    ns = session.namespace
    out: list[Target] = []
    if any("/" in w for w in words):
        for w in words:
            kind, sep, name = w.partition("/")
            if not sep:
                raise CommandError(f"error: {TYPE_NAME_HINT}")
            if not kind or not name:
                raise CommandError(f'error: arguments in resource/name form must have a '
                                   f'single resource and name: "{w}"')
            m = session.discovery.resolve_one(kind)
            out.append(Target(m, name, ns if m.namespaced else ""))
        return out
    kinds, names = words[0], words[1:]
    mappings: list[Mapping] = []
    for word in kinds.split(","):
        if not word:
            continue
        for m in session.discovery.resolve(word):
            if m not in mappings:
                mappings.append(m)
    if not names and need_names:
        raise CommandError("error: resource(s) were provided, but no name was specified")
    for m in mappings:
        where = "" if not m.namespaced or (all_namespaces and not names) else ns
        if names:
            out += [Target(m, n, where) for n in names]
        else:
            out.append(Target(m, "", where))
    return out


def read_objects(session: Session, words: list[str], *, selector: str = "",
                 filenames: list[str] | None = None, need_names: bool = False,
                 latest: bool = True, verb: str = "get"
                 ) -> list[tuple[Target, dict[str, Any]] | StatusError]:
    """The builder's infos, in order: each named object read, each collection listed
    (with ``selector``), or the objects of manifest files (read again from the server when
    ``latest``, as Latest() does); a read that failed stands in its object's place, so a
    command reports it after acting on the others (ContinueOnError)."""
    out: list[tuple[Target, dict[str, Any]] | StatusError] = []
    if filenames:
        from pykubelet.cli.kubectl.manifests import read_all

        for m in read_all(filenames):
            mapping = session.discovery.for_kind(m.api_version, m.kind)
            t = Target(mapping, m.name,
                       (m.namespace or session.namespace) if mapping.namespaced else "")
            try:
                out.append((t, session.client.request("GET", t.path) if latest else m.obj))
            except StatusError as exc:
                out.append(exc)
        return out
    for t in targets(session, words, need_names=need_names, verb=verb):
        try:
            if t.name:
                out.append((t, session.client.request("GET", t.path)))
                continue
            doc = session.client.request("GET", t.path,
                                         params={"labelSelector": selector or None})
        except StatusError as exc:
            out.append(exc)
            continue
        kind = {"kind": t.mapping.kind, "apiVersion": t.mapping.group_version}
        for item in (doc or {}).get("items") or []:
            meta = item.get("metadata") or {}
            out.append((Target(t.mapping, meta.get("name", ""), meta.get("namespace", "")),
                        {**kind, **item}))
    return out
