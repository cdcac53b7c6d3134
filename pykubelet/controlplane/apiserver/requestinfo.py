"""What a request path asks for (apiserver's RequestInfoFactory): API group and version,
namespace, resource, name, subresource and verb."""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True)
class RequestInfo:
    is_resource_request: bool
    path: str
    verb: str = ""
    api_prefix: str = ""
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()


_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update",
                 "PATCH": "patch", "DELETE": "delete"}


def parse_request_info(method: str, path: str, watch: bool = False) -> RequestInfo:
    """RequestInfoFactory.NewRequestInfo for the ``/api`` and ``/apis`` prefixes."""
    parts = [p for p in path.strip("/").split("/") if p != ""]
    if len(parts) < 1 or parts[0] not in ("api", "apis"):
        return RequestInfo(False, path, verb=method.lower())
    prefix = parts[0]
    rest = parts[1:]
    group = ""
    if prefix == "apis":
        if len(rest) < 2:  # /apis or /apis/<group>: discovery
            return RequestInfo(False, path, verb=method.lower(), api_prefix=prefix)
        group, rest = rest[0], rest[1:]
    if len(rest) < 1:
        return RequestInfo(False, path, verb=method.lower(), api_prefix=prefix)
    version, rest = rest[0], rest[1:]
    if not rest:  # /api/v1: discovery of a group version
        return RequestInfo(False, path, verb=method.lower(), api_prefix=prefix, group=group,
                           version=version)
    verb = _METHOD_VERBS.get(method.upper(), method.lower())
    if rest[0] == "watch":  # the legacy /watch/ prefix
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name:
        if verb == "get":
            verb = "watch" if watch else "list"
        elif verb == "delete":
            verb = "deletecollection"
    elif verb == "get" and watch:
        verb = "watch"
    if resource == "namespaces" and not subresource and namespace == name:
        namespace = name if name else ""
    return RequestInfo(True, path, verb, prefix, group, version, namespace, resource,
                       subresource, name, tuple(rest))


def parse_bool(value: str | None) -> bool | None:
    """Go's strconv.ParseBool (clients send ``true`` and Python ``True``)."""
    if value is None:
        return None
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False", ""):
        return False
    raise ValueError(f"invalid boolean {value!r}")
