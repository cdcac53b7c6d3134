"""Choosing the network from a CNI conf dir, with libcni's (and kubelet's) rules.

Files ending in ``.conf``, ``.conflist`` or ``.json`` (not directories), sorted
by name; the first that yields a usable network list wins:

* a ``.conflist`` is parsed as a list (an unreadable or invalid one is skipped
  with a warning);
* a ``.conf``/``.json`` is a single plugin config; without ``type`` it is
  skipped ("perhaps this is a .conflist?"), else it becomes a one-plugin list;
* a list without plugins is skipped.

An empty (or missing) dir and a dir with nothing usable are the two errors.
The loopback network (kubelet's ``getLoNetwork``) is separate and always set up
first by the caller.
"""

from __future__ import annotations

import json
import os
from typing import Any

from pycni.errors import CNIError
from pycni.spec import SPEC_VERSION, NetConfList, parse_version

EXTENSIONS = (".conf", ".conflist", ".json")


class ConfError(Exception):
    """A config file or dir that yields no usable network list."""


class NoConfigFiles(ConfError):
    def __init__(self, conf_dir: str) -> None:
        super().__init__(f"no networks found in {conf_dir}")
        self.conf_dir = conf_dir


class NetworkNotFound(ConfError):
    """libcni's NotFoundError: no network list of that name in the dir (the CRI's NotFound
    is a missing sandbox, container or image)."""

    def __init__(self, conf_dir: str, name: str) -> None:
        super().__init__(f'no net configuration with name "{name}" in {conf_dir}')
        self.conf_dir = conf_dir
        self.name = name


class NoValidNetwork(ConfError):
    def __init__(self, conf_dir: str, warnings: list[str] | None = None) -> None:
        super().__init__(f"no valid networks found in {conf_dir}")
        self.conf_dir = conf_dir
        self.warnings = list(warnings or [])


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "null" if value is None else "number"
    )


def _read_bool(raw: dict[str, Any], key: str) -> bool:
    """libcni's readBool: a JSON boolean or the strings "true"/"false" (any case)."""
    if key not in raw:
        return False
    value = raw[key]
    if isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ConfError(
            f"error parsing configuration list: invalid type {_type_name(value)} for {key}"
        )
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ConfError(f'error parsing configuration list: invalid value "{lowered}" for {key}')


def check_plugin_conf(conf: Any, where: str = "configuration") -> dict[str, Any]:
    """One plugin's config as libcni decodes it: an object with a string ``type``."""
    if not isinstance(conf, dict):
        raise ConfError(f"error parsing {where}: must be an object, got {_type_name(conf)}")
    for key in ("name", "type", "cniVersion"):
        if key in conf and conf[key] is not None and not isinstance(conf[key], str):
            raise ConfError(
                f'error parsing {where}: field "{key}" must be a string, '
                f"got {_type_name(conf[key])}"
            )
    caps = conf.get("capabilities")
    if caps is not None and (
        not isinstance(caps, dict) or not all(isinstance(v, bool) for v in caps.values())
    ):
        raise ConfError(f'error parsing {where}: "capabilities" must map names to booleans')
    ipam = conf.get("ipam")
    if ipam is not None and not isinstance(ipam, dict):
        raise ConfError(f'error parsing {where}: "ipam" must be an object')
    if not conf.get("type"):
        raise ConfError(f"error parsing {where}: missing 'type'")
    return conf


def _pick_version(raw: dict[str, Any], version: str) -> str:
    """libcni 1.2's ``cniVersions``: the highest listed version this implementation speaks."""
    if "cniVersions" not in raw:
        return version
    listed = raw["cniVersions"]
    if not isinstance(listed, list):
        raise ConfError(
            f"error parsing configuration list: invalid type for cniVersions: {_type_name(listed)}"
        )
    candidates: list[tuple[tuple[int, int, int], str]] = []
    for i, v in enumerate([*listed, version] if version else listed):
        if not isinstance(v, str):
            raise ConfError(
                f"error parsing configuration list: invalid type for cniVersions index {i}: "
                f"{_type_name(v)}"
            )
        try:
            key = parse_version(v)
        except CNIError as exc:
            raise ConfError(
                f"error parsing configuration list: invalid cniVersions entry {v} at index {i}"
            ) from exc
        if key <= parse_version(SPEC_VERSION):
            candidates.append((key, v))
    return max(candidates)[1] if candidates else version


def conflist_from_bytes(data: bytes, file: str | None = None) -> NetConfList:
    """libcni's ConfListFromBytes (a list may lack ``plugins``: the caller skips it)."""
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfError(f"error parsing configuration list: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfError("error parsing configuration list: must be a JSON object")
    if "name" not in raw:
        raise ConfError("error parsing configuration list: no name")
    name = raw["name"]
    if not isinstance(name, str):
        raise ConfError(f"error parsing configuration list: invalid name type {_type_name(name)}")
    version = raw.get("cniVersion", "")
    if not isinstance(version, str):
        raise ConfError(
            f"error parsing configuration list: invalid cniVersion type {_type_name(version)}"
        )
    version = _pick_version(raw, version)
    disable_check = _read_bool(raw, "disableCheck")
    disable_gc = _read_bool(raw, "disableGC")
    out = NetConfList(
        cni_version=version,
        name=name,
        plugins=[],
        disable_check=disable_check,
        raw=raw,
        file=file,
        disable_gc=disable_gc,
        source=bytes(data),
    )
    if "plugins" not in raw:
        return out
    plugins = raw["plugins"]
    if not isinstance(plugins, list):
        raise ConfError(
            f"error parsing configuration list: invalid 'plugins' type {_type_name(plugins)}"
        )
    if not plugins:
        raise ConfError("error parsing configuration list: no plugins in list")
    for i, conf in enumerate(plugins):
        try:
            out.plugins.append(check_plugin_conf(conf))
        except ConfError as exc:
            raise ConfError(f"failed to parse plugin config {i}: {exc}") from exc
    return out


def conf_from_bytes(data: bytes) -> dict[str, Any]:
    """A single-plugin ``.conf``/``.json`` file (``type`` may be missing: the caller checks)."""
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfError(f"error parsing configuration: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfError("error parsing configuration: must be a JSON object")
    for key in ("name", "type", "cniVersion"):
        if key in raw and raw[key] is not None and not isinstance(raw[key], str):
            raise ConfError(
                f'error parsing configuration: field "{key}" must be a string, '
                f"got {_type_name(raw[key])}"
            )
    return raw


def conflist_from_conf(conf: dict[str, Any], file: str | None = None) -> NetConfList:
    """libcni's ConfListFromConf: a single config up-converted into a one-plugin list."""
    data = json.dumps(
        {
            "name": conf.get("name") or "",
            "cniVersion": conf.get("cniVersion") or "",
            "plugins": [conf],
        }
    ).encode()
    return conflist_from_bytes(data, file=file)


def conf_files(conf_dir: str, extensions: tuple[str, ...] = EXTENSIONS) -> list[str]:
    """libcni's ConfFiles, sorted: a missing dir has no files; other read errors raise."""
    try:
        entries = list(os.scandir(conf_dir))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfError(f"cannot read CNI conf dir {conf_dir}: {exc.strerror}") from exc
    files = [
        e.path
        for e in entries
        if not e.is_dir() and os.path.splitext(e.name)[1] in extensions
    ]
    return sorted(files)


def load_conf_file(path: str) -> NetConfList:
    """One file into a network list, by its extension; ConfError says why it is unusable."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConfError(f"Error loading CNI config file {path}: {exc.strerror}") from exc
    if path.endswith(".conflist"):
        try:
            return conflist_from_bytes(data, file=path)
        except ConfError as exc:
            raise ConfError(f"Error loading CNI config list file {path}: {exc}") from exc
    try:
        conf = conf_from_bytes(data)
    except ConfError as exc:
        raise ConfError(f"Error loading CNI config file {path}: {exc}") from exc
    if not conf.get("type"):
        raise ConfError(
            f"Error loading CNI config file {path}: no 'type'; perhaps this is a .conflist?"
        )
    try:
        return conflist_from_conf(conf, file=path)
    except ConfError as exc:
        raise ConfError(f"Error converting CNI config file {path} to list: {exc}") from exc


def load_conf_dir(conf_dir: str) -> tuple[NetConfList, list[str]]:
    """The default network of ``conf_dir`` and the warnings for the files skipped before it."""
    files = conf_files(conf_dir)
    if not files:
        raise NoConfigFiles(conf_dir)
    warnings: list[str] = []
    for path in files:
        try:
            net = load_conf_file(path)
        except ConfError as exc:
            warnings.append(str(exc))
            continue
        if not net.plugins:
            warnings.append(f"CNI config list {path} has no networks, skipping")
            continue
        return net, warnings
    raise NoValidNetwork(conf_dir, warnings)


def load_conf_list(conf_dir: str, name: str) -> NetConfList:
    """libcni's LoadConfList: the network called ``name`` (what cnitool runs).

    ``.conflist`` files first (by name order; an invalid one is an error here, as
    in libcni), then ``.conf``/``.json`` files up-converted to a list.
    """
    lists = conf_files(conf_dir, (".conflist",))
    for path in lists:
        net = load_conf_file(path)
        if net.name == name:
            return net
    singles = conf_files(conf_dir, (".conf", ".json"))
    if not singles:
        if lists:
            raise NetworkNotFound(conf_dir, name)
        raise ConfError(f"no net configurations found in {conf_dir}")
    for path in singles:
        try:
            with open(path, "rb") as f:
                conf = conf_from_bytes(f.read())
        except OSError as exc:
            raise ConfError(f"error reading {path}: {exc.strerror}") from exc
        if conf.get("name") == name:
            return load_conf_file(path)
    raise NetworkNotFound(conf_dir, name)


LOOPBACK_CONFLIST = b"""{
  "cniVersion": "0.2.0",
  "name": "cni-loopback",
  "plugins": [{
    "type": "loopback"
  }]
}"""


def loopback_network(plugin_type: str = "loopback") -> NetConfList:
    """kubelet's getLoNetwork: the ``lo`` network every sandbox gets first."""
    if plugin_type == "loopback":
        return conflist_from_bytes(LOOPBACK_CONFLIST)
    data = LOOPBACK_CONFLIST.replace(b'"loopback"', json.dumps(plugin_type).encode())
    return conflist_from_bytes(data)
