"""What the dashboard's local proxy lets through, as ``kubectl proxy`` decides it but
narrower: only the reads the page needs, only from a page served by this process.

``kubectl proxy`` carries the kubeconfig's credentials on a local port; anything that can
make the browser send a request there acts with them. Its defaults guard against that with
``--accept-hosts`` (``^localhost$,^127\\.0\\.0\\.1$,^\\[::1\\]$``: a DNS-rebinding page sends
its own host name) and ``--reject-paths`` (exec, attach). This proxy is read-only: GET only,
on an allow list of paths (nodes, pods, a pod's log and scheduling decision, events,
namespaces) and of query parameters, and a cross-origin request (an ``Origin`` that is not
this server's) is refused, so another site's script cannot read through it either.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping

# kubectl proxy's --accept-hosts default, plus the address the dashboard listens on
DEFAULT_ACCEPT_HOSTS = ("localhost", "127.0.0.1", "[::1]")

_NAME = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?"
ALLOWED_PATHS = tuple(re.compile(p) for p in (
    r"^/api/v1/nodes(/" + _NAME + ")?$",
    r"^/api/v1/namespaces$",
    r"^/api/v1/(namespaces/" + _NAME + "/)?(pods|events)$",
    r"^/api/v1/namespaces/" + _NAME + "/(pods|events)/" + _NAME + "$",
    r"^/api/v1/namespaces/" + _NAME + "/pods/" + _NAME + "/(log|scheduling)$",
))
ALLOWED_PARAMS = frozenset({
    "watch", "resourceVersion", "resourceVersionMatch", "allowWatchBookmarks",
    "timeoutSeconds", "fieldSelector", "labelSelector", "limit", "continue",
    # pods/log
    "container", "tailLines", "previous", "timestamps", "limitBytes", "sinceSeconds",
})
# request headers passed on upstream; the browser's own credentials never are
FORWARDED_HEADERS = ("Accept",)


class Refused(Exception):
    """A request the proxy does not carry; ``code`` is the HTTP status to answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def check_proxy_request(method: str, path: str, params: Iterable[str]) -> None:
    """Raise :class:`Refused` unless the page may read ``path`` through the proxy."""
    if method not in ("GET", "HEAD"):
        raise Refused(405, f"method {method} is not allowed: the dashboard is read-only")
    if "//" in path or "/../" in path or path.endswith("/..") or "%" in path:
        raise Refused(403, f"path {path!r} is not allowed")
    if not any(p.match(path) for p in ALLOWED_PATHS):
        raise Refused(403, f"path {path!r} is not one the dashboard reads")
    extra = sorted(set(params) - ALLOWED_PARAMS)
    if extra:
        raise Refused(400, f"query parameter {extra[0]!r} is not allowed")


def host_name(host_header: str) -> str:
    """The host part of a Host header (``[::1]:8001`` -> ``[::1]``)."""
    h = host_header.strip().lower()
    if h.startswith("["):
        end = h.find("]")
        return h[:end + 1] if end > 0 else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def accepted_hosts(address: str) -> tuple[str, ...]:
    """kubectl proxy's accepted hosts, plus the listen address when it is another one."""
    extra: list[str] = []
    if address and address not in ("0.0.0.0", "::"):
        try:
            ip = ipaddress.ip_address(address)
            extra.append(f"[{ip}]" if ip.version == 6 else str(ip))
        except ValueError:
            extra.append(address.lower())
    return tuple(dict.fromkeys((*DEFAULT_ACCEPT_HOSTS, *extra)))


def check_origin(headers: Mapping[str, str], accept_hosts: Iterable[str]) -> None:
    """Refuse a request whose Host is not an accepted one (DNS rebinding), or that comes
    from a page of another origin (``Origin``, or ``Sec-Fetch-Site: cross-site``)."""
    host = headers.get("Host", "")
    if host_name(host) not in set(accept_hosts):
        raise Refused(403, f"host {host!r} is not accepted")
    origin = headers.get("Origin")
    if origin is not None and origin.lower() not in (f"http://{host.lower()}",):
        raise Refused(403, f"origin {origin!r} is not this dashboard")
    if headers.get("Sec-Fetch-Site", "") == "cross-site":
        raise Refused(403, "cross-site requests are not served")
