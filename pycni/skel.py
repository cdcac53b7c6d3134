"""The plugin side of the CNI protocol: env + stdin -> one call -> stdout + exit status.

As the reference ``pkg/skel`` does: read ``CNI_*`` variables and the config on
stdin, check the versions, call the plugin's add/delete/check/status/gc, print
the result in the config's cniVersion (or the error JSON) on stdout and exit 0
(or 1). Logs go to stderr only, since stdout is the protocol.

:func:`dispatch` is the same logic without the process around it, which the
runtime side (libcni) calls directly for our own plugins: no exec, no import of
anything the plugin does not need.
"""

from __future__ import annotations

import os
import sys

from pycni import jsonlite
from pycni.errors import (
    CNIError,
    DecodingFailure,
    IncompatibleVersion,
    InternalError,
    InvalidEnvironment,
    InvalidNetworkConfig,
)
from pycni.spec import (
    SPEC_VERSION,
    SUPPORTED_VERSIONS,
    NetConf,
    Record,
    Result,
    decode_json_object,
    parse_netconf,
    parse_version,
    version_at_least,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, NoReturn

COMMANDS = ("ADD", "DEL", "CHECK", "VERSION", "STATUS", "GC")

# Which variables each command needs (the reference skel's table).
_REQUIRED: dict[str, tuple[str, ...]] = {
    "CNI_COMMAND": ("ADD", "CHECK", "DEL", "GC", "STATUS"),
    "CNI_CONTAINERID": ("ADD", "CHECK", "DEL"),
    "CNI_NETNS": ("ADD", "CHECK"),
    "CNI_IFNAME": ("ADD", "CHECK", "DEL"),
    "CNI_PATH": ("ADD", "CHECK", "DEL", "GC", "STATUS"),
}


class CmdArgs(Record):
    """One call's arguments (skel.CmdArgs); the parsed config is cached, not compared."""

    __slots__ = (
        "_netconf",
        "args",
        "command",
        "container_id",
        "ifname",
        "netns",
        "path",
        "stdin_data",
    )

    def __init__(self, command: str, container_id: str, netns: str, ifname: str, args: str,
                 path: list[str], stdin_data: bytes) -> None:
        self.command = command  # ADD, DEL, CHECK, VERSION, STATUS, GC
        self.container_id = container_id
        self.netns = netns
        self.ifname = ifname
        self.args = args  # CNI_ARGS, "K=V;K2=V2"
        self.path = path  # CNI_PATH split on ':'
        self.stdin_data = stdin_data
        self._netconf: NetConf | None = None

    def netconf(self) -> NetConf:
        """The parsed stdin config (parsed once)."""
        if self._netconf is None:
            self._netconf = parse_netconf(self.stdin_data)
        return self._netconf

    def args_dict(self) -> dict[str, str]:
        """CNI_ARGS as a dict; InvalidEnvironment for a pair without '='."""
        out: dict[str, str] = {}
        for pair in self.args.split(";"):
            if not pair:
                continue
            key, sep, value = pair.partition("=")
            if not sep:
                raise InvalidEnvironment(f'CNI_ARGS: invalid pair "{pair}" (want KEY=VALUE)')
            out[key] = value
        return out

    def env(self) -> dict[str, str]:
        """The CNI_* variables that describe this call (for exec'ing a delegate)."""
        return {
            "CNI_COMMAND": self.command,
            "CNI_CONTAINERID": self.container_id,
            "CNI_NETNS": self.netns,
            "CNI_IFNAME": self.ifname,
            "CNI_ARGS": self.args,
            "CNI_PATH": ":".join(self.path),
        }


class Plugin(Record):
    """What every plugin module exposes as ``PLUGIN``."""

    __slots__ = ("about", "add", "check", "delete", "gc", "name", "status", "versions")

    def __init__(self, name: str, add: Callable[[CmdArgs], Result],
                 delete: Callable[[CmdArgs], None], check: Callable[[CmdArgs], None],
                 status: Callable[[CmdArgs], None] | None = None,
                 versions: tuple[str, ...] = SUPPORTED_VERSIONS, about: str = "",
                 gc: Callable[[CmdArgs], None] | None = None) -> None:
        self.name = name  # "pycni-bridge"
        self.add = add
        self.delete = delete
        self.check = check
        self.status = status
        self.versions = versions
        self.about = about
        self.gc = gc


def args_from_env(environ: Mapping[str, str], stdin: bytes) -> CmdArgs:
    """CmdArgs from the process environment; InvalidEnvironment naming what is missing."""
    command = environ.get("CNI_COMMAND", "")
    if command and command not in COMMANDS:
        raise InvalidEnvironment(f'unknown CNI_COMMAND: "{command}"')
    missing = [
        var
        for var, needed_by in _REQUIRED.items()
        if (command in needed_by or (var == "CNI_COMMAND" and not command))
        and not environ.get(var)
    ]
    if missing:
        raise InvalidEnvironment(f"required env variables [{','.join(missing)}] missing")
    path = environ.get("CNI_PATH", "")
    return CmdArgs(
        command=command,
        container_id=environ.get("CNI_CONTAINERID", ""),
        netns=environ.get("CNI_NETNS", ""),
        ifname=environ.get("CNI_IFNAME", ""),
        args=environ.get("CNI_ARGS", ""),
        path=[p for p in path.split(":") if p],
        stdin_data=b"" if command == "VERSION" else stdin,
    )


def _config_version(stdin_data: bytes) -> str:
    """The config's cniVersion as the reference decoder reads it (absent -> 0.1.0)."""
    raw = decode_json_object(stdin_data)
    version = raw.get("cniVersion")
    if version is None or version == "":
        return "0.1.0"
    if not isinstance(version, str):
        raise InvalidNetworkConfig('field "cniVersion" must be a string')
    return version


def _check_version(plugin: Plugin, args: CmdArgs, minimum: str | None, verb: str) -> NetConf:
    """Validate the config and the version reconciliation, then parse the config."""
    raw = decode_json_object(args.stdin_data)
    if not raw.get("type"):
        raise InvalidNetworkConfig("missing network type")
    version = _config_version(args.stdin_data)
    try:
        parse_version(version)
    except DecodingFailure as exc:
        raise InvalidNetworkConfig(f'field "cniVersion": {exc.msg}') from exc
    if minimum is not None and not version_at_least(version, minimum):
        raise IncompatibleVersion(f"config version does not allow {verb}")
    if version not in plugin.versions:
        raise IncompatibleVersion(
            "incompatible CNI versions",
            f'config is "{version}", plugin supports {jsonlite.dumps(list(plugin.versions))}',
        )
    return args.netconf()


def dispatch(plugin: Plugin, args: CmdArgs) -> Result | dict[str, Any] | None:
    """Run one command of ``plugin``; CNIError on failure (other exceptions propagate)."""
    command = args.command
    if command == "VERSION":
        return {"cniVersion": SPEC_VERSION, "supportedVersions": list(plugin.versions)}
    if command == "ADD":
        _check_version(plugin, args, None, "ADD")
        result = plugin.add(args)
        if not isinstance(result, Result):
            raise InternalError(f"{plugin.name}: ADD returned no result")
        return result
    if command == "DEL":
        _check_version(plugin, args, None, "DEL")
        plugin.delete(args)
        return None
    if command == "CHECK":
        _check_version(plugin, args, "0.4.0", "CHECK")
        plugin.check(args)
        return None
    if command == "STATUS":
        _check_version(plugin, args, "1.1.0", "STATUS")
        if plugin.status is not None:
            plugin.status(args)
        return None
    if command == "GC":
        _check_version(plugin, args, "1.1.0", "GC")
        if plugin.gc is not None:
            plugin.gc(args)
        return None
    raise InvalidEnvironment(f'unknown CNI_COMMAND: "{command}"')


def _error_version(stdin_data: bytes) -> str:
    try:
        version = jsonlite.loads(stdin_data).get("cniVersion")
    except Exception:
        return SPEC_VERSION
    return version if version in SUPPORTED_VERSIONS else SPEC_VERSION


def package_version() -> str:
    """pykube-node's version, for the about string (what `--version` shows: a plugin run
    without CNI_COMMAND prints its about string whatever the arguments, as upstream's)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pykube-node")
    except PackageNotFoundError:
        return "unknown"


def run(plugin: Plugin, environ: Mapping[str, str], stdin: bytes) -> tuple[int, str, str]:
    """One whole plugin invocation: (exit status, stdout text, stderr text)."""
    command = environ.get("CNI_COMMAND", "")
    if not command:
        about = f"{plugin.about or plugin.name}, version {package_version()}"
        versions = ", ".join(plugin.versions)
        return 0, "", f"{about}\nCNI protocol versions supported: {versions}\n"
    try:
        args = args_from_env(environ, stdin)
        out = dispatch(plugin, args)
    except CNIError as exc:
        return 1, jsonlite.dumps(exc.to_dict(_error_version(stdin)), indent=4) + "\n", ""
    except Exception as exc:
        import logging  # only on this path: plugin start-up stays lean

        logging.getLogger("pycni.skel").exception("%s: %s failed", plugin.name, command)
        err = InternalError(str(exc) or type(exc).__name__)
        return 1, jsonlite.dumps(err.to_dict(_error_version(stdin)), indent=4) + "\n", ""
    if isinstance(out, Result):
        return 0, out.to_json(args.netconf().cni_version) + "\n", ""
    if isinstance(out, dict):
        return 0, jsonlite.dumps(out) + "\n", ""
    return 0, "", ""


def plugin_main(plugin: Plugin) -> NoReturn:
    """The exec'd entry point of a plugin executable."""
    level = os.environ.get("PYCNI_LOG_LEVEL")
    if level:  # otherwise Python's last-resort handler prints warnings to stderr
        import logging

        logging.basicConfig(stream=sys.stderr, level=level.upper())
    command = os.environ.get("CNI_COMMAND", "")
    no_stdin = not command or sys.stdin is None or sys.stdin.isatty()
    stdin = b"" if no_stdin else sys.stdin.buffer.read()
    status, out, err = run(plugin, os.environ, stdin)
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()
    if err:
        sys.stderr.write(err)
        sys.stderr.flush()
    # The answer is written and flushed, every file the plugin wrote is closed, and it
    # runs no threads or atexit hooks: skip the interpreter's teardown (freeing each
    # module and object), ~4 ms of every exec'd call. Locks and fds go with the process.
    os._exit(status)
