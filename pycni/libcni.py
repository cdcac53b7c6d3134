"""The runtime side of CNI (libcni's job): add, check and delete a network list.

ADD runs the plugins in order, each getting the previous one's result as
``prevResult``; the final result is cached under ``<cache_dir>/results``.
CHECK (spec >= 0.4.0) runs them in order against the cached result. DEL runs
them in reverse with the cached result as ``prevResult``.

Where we go beyond libcni, to leak nothing:

* a failed ADD deletes what it made (DEL on the failed plugin and the ones
  before it, in reverse) before raising the error;
* DEL calls every plugin even when one fails (then raises the first error and
  keeps the cache, so a retry still has the prevResult), and the netns being
  gone is not an error for libcni: the plugins get the stale path and clean
  host-side state without it.

Plugins are found by ``type`` in the bin dirs and exec'd per the protocol, or,
for ours, called in-process (see :mod:`pycni.invoke`).
"""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pycni import cache, defaults, invoke
from pycni.errors import (
    CNIError,
    IncompatibleVersion,
    InvalidEnvironment,
    InvalidNetworkConfig,
    PluginNotAvailable,
    UnknownContainer,
)
from pycni.skel import CmdArgs
from pycni.spec import NetConfList, Result, version_at_least

log = logging.getLogger("pycni.libcni")

DEFAULT_CACHE_DIR = defaults.CACHE_DIR
_VALID_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$")


@dataclass
class RuntimeConf:
    container_id: str
    netns: str
    ifname: str = "eth0"
    args: list[tuple[str, str]] = field(default_factory=list)
    capability_args: dict[str, Any] = field(default_factory=dict)


def validate_runtime(net: NetConfList, rt: RuntimeConf) -> None:
    """libcni's utils checks on container ID, network name and interface name."""
    if not rt.container_id:
        raise UnknownContainer("missing containerID")
    if not _VALID_NAME.match(rt.container_id):
        raise InvalidEnvironment("invalid characters in containerID", rt.container_id)
    if not net.name:
        raise InvalidNetworkConfig("missing network name")
    if not _VALID_NAME.match(net.name):
        raise InvalidNetworkConfig("invalid characters found in network name", net.name)
    name = rt.ifname
    if not name:
        raise InvalidEnvironment("interface name is empty")
    if len(name) > 15:
        raise InvalidEnvironment(
            "interface name is too long", "interface name should be less than 16 characters"
        )
    if name in (".", ".."):
        raise InvalidEnvironment("interface name is . or ..")
    if any(c in "/:" or c.isspace() for c in name):
        raise InvalidEnvironment("interface name contains / or : or whitespace characters")


def _describe(plugin: dict[str, Any]) -> str:
    out = f'type="{plugin.get("type", "")}"'
    if plugin.get("name"):
        out += f' name="{plugin["name"]}"'
    return out


def _wrapped(err: CNIError, prefix: str) -> CNIError:
    """The same error (class and code) with libcni's "plugin ... failed (op): " prefix."""
    new = copy.copy(err)
    new.msg = f"{prefix}{err.msg}"
    new.args = (new.msg,)
    new.__cause__ = err
    return new


def build_one_config(
    net: NetConfList, plugin: dict[str, Any], prev: Result | None, rt: RuntimeConf | None
) -> bytes:
    """libcni's buildOneConfig: inject name, cniVersion, prevResult and runtimeConfig."""
    conf = dict(plugin)
    conf["name"] = net.name
    conf["cniVersion"] = net.cni_version
    if prev is not None:
        conf["prevResult"] = prev.to_dict(net.cni_version or prev.cni_version)
    if rt is not None:
        runtime_config = {
            cap: rt.capability_args[cap]
            for cap, supported in (plugin.get("capabilities") or {}).items()
            if supported and cap in rt.capability_args
        }
        if runtime_config:
            conf["runtimeConfig"] = runtime_config
    return json.dumps(conf, sort_keys=True).encode()


class CNIConfig:
    """Runs network lists against containers, like libcni's ``CNIConfig``."""

    def __init__(
        self,
        bin_dirs: Sequence[str],
        cache_dir: str = DEFAULT_CACHE_DIR,
        in_process: bool = True,
    ) -> None:
        self.bin_dirs = list(bin_dirs)
        self.cache_dir = cache_dir
        self.in_process = in_process

    # --- one plugin ---------------------------------------------------------------------

    def _find(self, plugin: dict[str, Any]) -> str:
        return invoke.find_plugin(str(plugin.get("type", "")), self.bin_dirs)

    def _call(
        self,
        command: str,
        net: NetConfList,
        plugin: dict[str, Any],
        prev: Result | None,
        rt: RuntimeConf,
        path: str | None = None,
    ) -> Result | None:
        path = path or self._find(plugin)
        args = CmdArgs(
            command=command,
            container_id=rt.container_id,
            netns=rt.netns,
            ifname=rt.ifname,
            args=";".join(f"{k}={v}" for k, v in rt.args),
            path=list(self.bin_dirs),
            stdin_data=build_one_config(net, plugin, prev, rt),
        )
        out = invoke.invoke(path, args, in_process=self.in_process)
        return out if isinstance(out, Result) else None

    # --- lists --------------------------------------------------------------------------

    def add_network_list(self, net: NetConfList, rt: RuntimeConf) -> Result:
        """ADD every plugin in order; on failure, undo the ones run so far and raise."""
        validate_runtime(net, rt)
        result: Result | None = None
        for i, plugin in enumerate(net.plugins):
            try:
                path = self._find(plugin)
            except CNIError as exc:  # plugin i never ran: only those before it are undone
                self._rollback(net, rt, i - 1, result)
                raise _wrapped(exc, f"plugin {_describe(plugin)} failed (add): ") from exc
            try:
                result = self._call("ADD", net, plugin, result, rt, path)
            except CNIError as exc:
                self._rollback(net, rt, i, result)
                raise _wrapped(exc, f"plugin {_describe(plugin)} failed (add): ") from exc
            except BaseException:
                self._rollback(net, rt, i, result)
                raise
            if result is None:
                self._rollback(net, rt, i, None)
                raise InvalidNetworkConfig(f"plugin {_describe(plugin)} returned no result")
        if result is None:
            raise InvalidNetworkConfig(f'network "{net.name}" has no plugins')
        att = cache.CachedAttachment(
            container_id=rt.container_id,
            network_name=net.name,
            ifname=rt.ifname,
            config=net.source or json.dumps(net.raw).encode(),
            netns=rt.netns,
            cni_args=list(rt.args),
            capability_args=dict(rt.capability_args),
        )
        try:
            cache.write_result(self.cache_dir, net.name, att, result, net.cni_version)
        except OSError as exc:
            self._rollback(net, rt, len(net.plugins) - 1, result)
            raise CNIError(
                f'failed to set network "{net.name}" cached result: {exc.strerror}'
            ) from exc
        return result

    def _rollback(
        self, net: NetConfList, rt: RuntimeConf, failed: int, prev: Result | None
    ) -> None:
        """DEL plugins ``failed`` .. 0 (the failed one may have made part of its work);
        nothing when ``failed`` is -1."""
        for plugin in reversed(net.plugins[: failed + 1]):
            try:
                self._call("DEL", net, plugin, prev, rt)
            except Exception as exc:  # best effort: the ADD error is the one to report
                log.warning("rollback of %s failed: %s", _describe(plugin), exc)

    def check_network_list(self, net: NetConfList, rt: RuntimeConf) -> None:
        """CHECK every plugin in order against the cached result (spec >= 0.4.0)."""
        if not version_at_least(net.cni_version or "0.1.0", "0.4.0"):
            raise IncompatibleVersion(
                f'configuration version "{net.cni_version}" does not support the CHECK command'
            )
        if net.disable_check:
            return
        validate_runtime(net, rt)
        cached = self.get_cached_result(net, rt)
        if cached is None:
            raise UnknownContainer(
                f'no cached result for network "{net.name}", container "{rt.container_id}", '
                f'interface "{rt.ifname}": was ADD run?'
            )
        for plugin in net.plugins:
            try:
                self._call("CHECK", net, plugin, cached, rt)
            except CNIError as exc:
                raise _wrapped(exc, f"plugin {_describe(plugin)} failed (check): ") from exc

    def del_network_list(self, net: NetConfList, rt: RuntimeConf) -> None:
        """DEL every plugin in reverse order, each even if another failed."""
        validate_runtime(net, rt)
        cached: Result | None = None
        if version_at_least(net.cni_version or "0.1.0", "0.4.0"):
            try:
                cached = self.get_cached_result(net, rt)
            except (CNIError, ValueError) as exc:
                log.warning("dropping unreadable cached result of %s: %s", net.name, exc)
                cache.delete_result(self.cache_dir, net.name, rt.container_id, rt.ifname)
        first: CNIError | None = None
        for plugin in reversed(net.plugins):
            try:
                self._call("DEL", net, plugin, cached, rt)
            except CNIError as exc:
                # a plugin that is not there has nothing of ours to delete: said by the
                # error raised below, not once more here
                level = logging.DEBUG if isinstance(exc, PluginNotAvailable) else logging.WARNING
                log.log(level, "DEL of %s in %s failed: %s", _describe(plugin), net.name, exc)
                if first is None:
                    first = _wrapped(exc, f"plugin {_describe(plugin)} failed (delete): ")
        if first is not None:
            raise first
        cache.delete_result(self.cache_dir, net.name, rt.container_id, rt.ifname)

    def get_cached_result(self, net: NetConfList, rt: RuntimeConf) -> Result | None:
        """The result ADD cached, in the list's cniVersion; None if there is none."""
        try:
            return cache.read_result(
                self.cache_dir, net.name, rt.container_id, rt.ifname, net.cni_version
            )
        except ValueError as exc:
            raise CNIError(f'failed to get network "{net.name}" cached result: {exc}') from exc

    def get_cached_config(
        self, net: NetConfList, rt: RuntimeConf
    ) -> tuple[bytes, RuntimeConf] | None:
        """The conf list bytes ADD used and ``rt`` with the cached args (libcni's
        GetNetworkListCachedConfig); None if nothing is cached."""
        try:
            att = cache.read_attachment(self.cache_dir, net.name, rt.container_id, rt.ifname)
        except ValueError as exc:
            raise CNIError(f'failed to get network "{net.name}" cached config: {exc}') from exc
        if att is None or not att.config:
            return None
        cached_rt = RuntimeConf(
            container_id=rt.container_id,
            netns=rt.netns,
            ifname=rt.ifname,
            args=list(att.cni_args) if att.cni_args else list(rt.args),
            capability_args=dict(att.capability_args),
        )
        return att.config, cached_rt

    def validate_network_list(self, net: NetConfList) -> list[str]:
        """Every plugin exists and speaks the list's version; returns the capabilities."""
        version = net.cni_version or "0.1.0"
        problems: list[str] = []
        caps: set[str] = set()
        for plugin in net.plugins:
            plugin_type = str(plugin.get("type", ""))
            try:
                info = self.version_info(plugin_type)
            except CNIError as exc:
                problems.append(str(exc))
            else:
                if version not in info.get("supportedVersions", []):
                    problems.append(
                        f'plugin {plugin_type} does not support config version "{version}"'
                    )
            caps.update(c for c, on in (plugin.get("capabilities") or {}).items() if on)
        if problems:
            raise InvalidNetworkConfig("; ".join(problems))
        return sorted(caps)

    # --- 1.1.0: STATUS and GC -----------------------------------------------------------

    def get_status_network_list(self, net: NetConfList) -> None:
        """STATUS of every plugin (spec >= 1.1.0; older lists are always ready)."""
        if not version_at_least(net.cni_version or "0.1.0", "1.1.0"):
            return
        for plugin in net.plugins:
            self._call_plain("STATUS", net, plugin, {})

    def gc_network_list(
        self, net: NetConfList, valid_attachments: Sequence[tuple[str, str]] | None = None
    ) -> None:
        """DEL cached attachments not in ``valid_attachments`` (container ID, ifname), then GC."""
        valid = set(valid_attachments or [])
        errors: list[CNIError] = []
        for att in cache.list_attachments(self.cache_dir):
            if att.network_name != net.name or (att.container_id, att.ifname) in valid:
                continue
            rt = RuntimeConf(
                att.container_id, att.netns, att.ifname, att.cni_args, att.capability_args
            )
            try:
                self.del_network_list(net, rt)
            except CNIError as exc:
                errors.append(exc)
        if version_at_least(net.cni_version or "0.1.0", "1.1.0") and not net.disable_gc:
            inject = {
                "cni.dev/valid-attachments": [
                    {"containerID": c, "ifname": i} for c, i in sorted(valid)
                ]
            }
            for plugin in net.plugins:
                try:
                    self._call_plain("GC", net, plugin, inject)
                except CNIError as exc:
                    errors.append(exc)
        if errors:
            raise errors[0]

    def _call_plain(
        self, command: str, net: NetConfList, plugin: dict[str, Any], extra: dict[str, Any]
    ) -> None:
        path = invoke.find_plugin(str(plugin.get("type", "")), self.bin_dirs)
        conf = dict(plugin, name=net.name, cniVersion=net.cni_version, **extra)
        args = CmdArgs(command, "", "", "", "", list(self.bin_dirs), json.dumps(conf).encode())
        invoke.invoke(path, args, in_process=self.in_process)

    def version_info(self, plugin_type: str) -> dict[str, Any]:
        return invoke.version_info(invoke.find_plugin(plugin_type, self.bin_dirs), self.in_process)
