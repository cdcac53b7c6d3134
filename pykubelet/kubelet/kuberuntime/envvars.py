"""Service environment variables for containers (pkg/kubelet/envvars, and kubelet's
getServiceEnvVarMap): for every Service with a cluster IP in the pod's namespace (when
``enableServiceLinks``, the default) and always the ``kubernetes`` Service of ``default``,
``{NAME}_SERVICE_HOST``/``_SERVICE_PORT[_{PORT_NAME}]`` and Docker-link style
``{NAME}_PORT[_{port}_{PROTO}[_PROTO|_PORT|_ADDR]]``. Clients such as client-go's
in-cluster config find the API through ``KUBERNETES_SERVICE_HOST``/``_PORT``.

Input is the API's JSON (what the kubelet reads), so this module depends on no typed model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Obj = Mapping[str, Any]

#: kubelet's masterServices: the default namespace's Services every pod gets
MASTER_SERVICES = frozenset({"kubernetes"})


def _is_service_ip_set(service: Obj) -> bool:
    """v1helper.IsServiceIPSet: a cluster IP that is neither empty nor None."""
    ip = (service.get("spec") or {}).get("clusterIP") or ""
    return ip not in ("", "None")


def make_env_variable_name(name: str) -> str:
    """makeEnvVariableName: upper case, dashes as underscores."""
    return name.replace("-", "_").upper()


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def from_services(services: Iterable[Obj]) -> list[tuple[str, str]]:
    """envvars.FromServices: the variables of each Service with a cluster IP, in order."""
    out: list[tuple[str, str]] = []
    for svc in services:
        if not _is_service_ip_set(svc):
            continue
        spec = svc.get("spec") or {}
        ports = spec.get("ports") or []
        if not ports:
            continue
        ip = spec["clusterIP"]
        prefix = make_env_variable_name((svc.get("metadata") or {}).get("name") or "")
        out.append((f"{prefix}_SERVICE_HOST", ip))
        out.append((f"{prefix}_SERVICE_PORT", str(int(ports[0].get("port") or 0))))
        for p in ports:  # every named port (only the first may be unnamed)
            if p.get("name"):
                out.append((f"{prefix}_SERVICE_PORT_{make_env_variable_name(p['name'])}",
                            str(int(p.get("port") or 0))))
        out.extend(_link_variables(prefix, ip, ports))
    return out


def _link_variables(prefix: str, ip: str, ports: list[Obj]) -> list[tuple[str, str]]:
    """makeLinkVariables: Docker's link variables; the first port also as ``{NAME}_PORT``."""
    out: list[tuple[str, str]] = []
    for i, p in enumerate(ports):
        proto = (p.get("protocol") or "TCP")
        port = int(p.get("port") or 0)
        url = f"{proto.lower()}://{_host_port(ip, port)}"
        if i == 0:
            out.append((f"{prefix}_PORT", url))
        pp = f"{prefix}_PORT_{port}_{proto.upper()}"
        out += [(pp, url), (f"{pp}_PROTO", proto.lower()), (f"{pp}_PORT", str(port)),
                (f"{pp}_ADDR", ip)]
    return out


def service_env_var_map(services: Iterable[Obj], namespace: str,
                        enable_service_links: bool) -> dict[str, str]:
    """getServiceEnvVarMap: the default namespace's master services always, the pod's own
    namespace's services when ``enable_service_links``; one Service per name, the
    master service first."""
    chosen: dict[str, Obj] = {}
    for svc in services:
        if not _is_service_ip_set(svc):
            continue
        meta = svc.get("metadata") or {}
        name, ns = meta.get("name") or "", meta.get("namespace") or ""
        if ns == "default" and name in MASTER_SERVICES:
            chosen.setdefault(name, svc)
        elif ns == namespace and enable_service_links:
            chosen[name] = svc
    return dict(from_services(chosen[k] for k in sorted(chosen)))
