"""Running a plugin: find it in the bin dirs, then exec it per the protocol, or,
when it is one of ours, call it in-process.

The exec path is the reference ``pkg/invoke``: env ``CNI_COMMAND`` and friends,
the config on stdin, the result or the error JSON on stdout. The in-process
path gives the same answer without a new interpreter: the executable found is
recognised as ours (a ``pycni-*`` name, or a launcher carrying
:data:`LAUNCHER_MARKER`), its module is imported once and :func:`skel.dispatch`
is called. Results are converted through the config's cniVersion either way,
so a caller cannot tell the two paths apart.

Delegation (a main plugin handing IPAM to another plugin) goes through the same
switch: :data:`in_process_enabled` (a contextvar, on by default; libcni sets it
for its calls, ``PYCNI_IN_PROCESS=0`` turns the default off) lets a delegation
to one of our IPAM plugins skip the exec; a reference IPAM binary is exec'd.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from contextvars import ContextVar

from pycni import jsonlite
from pycni.errors import (
    CNIError,
    DecodingFailure,
    InternalError,
    PluginError,
    PluginNotAvailable,
    error_from_dict,
)
from pycni.skel import CmdArgs, Plugin, dispatch
from pycni.spec import SPEC_VERSION, Result

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

LAUNCHER_MARKER = "# pycni-launcher: "
"""First lines of an executable written by ``pycni install``: ``# pycni-launcher: <module>``."""

in_process_enabled: ContextVar[bool | None] = ContextVar("pycni_in_process", default=None)

_module_by_path: dict[tuple[str, int, int], str | None] = {}


def in_process_allowed() -> bool:
    value = in_process_enabled.get()
    if value is None:
        return os.environ.get("PYCNI_IN_PROCESS", "1") != "0"
    return value


def find_plugin(type_name: str, paths: Sequence[str]) -> str:
    """The first regular file named ``type_name`` in ``paths`` (libcni's FindInPath)."""
    if not type_name:
        raise PluginNotAvailable("no plugin name provided")
    if "/" in type_name:
        raise PluginNotAvailable(f"invalid plugin name: {type_name}")
    if not paths:
        raise PluginNotAvailable(f'failed to find plugin "{type_name}": no paths provided')
    for directory in paths:
        candidate = os.path.join(directory, type_name)
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if (st.st_mode & 0o170000) == 0o100000:
            return candidate
    raise PluginNotAvailable(f'failed to find plugin "{type_name}" in path {list(paths)}')


def launcher_module(path: str) -> str | None:
    """The pycni plugin module behind executable ``path``, or None if it is not ours."""
    try:
        from pycni.plugins import IN_PROCESS
    except ImportError:  # no plugin package in this install: nothing is ours
        return None

    name = os.path.basename(path)
    if name in IN_PROCESS:
        return IN_PROCESS[name]
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_ino, st.st_mtime_ns)
    if key in _module_by_path:
        return _module_by_path[key]
    module = None
    try:
        with open(path, "rb") as f:
            head = f.read(512).decode("utf-8", "replace")
    except OSError:
        head = ""
    if head.startswith("#!"):
        for line in head.splitlines()[1:4]:
            if line.startswith(LAUNCHER_MARKER):
                candidate = line[len(LAUNCHER_MARKER) :].strip()
                if candidate in IN_PROCESS.values():
                    module = candidate
                break
    _module_by_path[key] = module
    return module


def load_plugin(module: str) -> Plugin:
    # __import__, not importlib.import_module: importlib brings warnings to an exec'd start
    plugin = getattr(__import__(module, fromlist=["PLUGIN"]), "PLUGIN", None)
    if not isinstance(plugin, Plugin):
        raise PluginNotAvailable(f"{module} has no PLUGIN")
    return plugin


def _config_version(stdin_data: bytes) -> str:
    try:
        version = jsonlite.loads(stdin_data).get("cniVersion")
    except (ValueError, AttributeError):
        return "0.1.0"
    return version if isinstance(version, str) and version else "0.1.0"


def run_in_process(module: str, args: CmdArgs) -> Result | dict[str, Any] | None:
    """One call of our plugin without exec; errors as the exec'd plugin would report them."""
    plugin = load_plugin(module)
    token = in_process_enabled.set(True)
    try:
        out = dispatch(plugin, args)
    except CNIError:
        raise
    except Exception as exc:
        import logging

        logging.getLogger("pycni.invoke").debug(
            "%s %s failed", module, args.command, exc_info=True
        )
        raise InternalError(str(exc) or type(exc).__name__) from exc
    finally:
        in_process_enabled.reset(token)
    if isinstance(out, Result):
        return out.converted(args.netconf().cni_version)
    return out


def exec_plugin(
    path: str,
    command: str,
    stdin_data: bytes,
    env: Mapping[str, str],
    timeout: float = 60,
) -> dict[str, Any] | None:
    """Exec ``path`` and decode its stdout (ADD/VERSION) or its error JSON (raised).

    ``env`` is the whole environment of the child; ``CNI_COMMAND`` is set to
    ``command``. "text file busy" (a plugin being written) is retried, as libcni does.
    """
    import subprocess

    child_env = dict(env)
    child_env["CNI_COMMAND"] = command
    for attempt in range(6):
        try:
            proc = subprocess.run(
                [path],
                input=stdin_data,
                env=child_env,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
            break
        except OSError as exc:
            if exc.errno == errno.ETXTBSY and attempt < 5:
                time.sleep(0.2)
                continue
            raise PluginNotAvailable(f"cannot exec plugin {path}: {exc.strerror}") from exc
        except subprocess.TimeoutExpired as exc:
            raise InternalError(f"plugin {path} timed out after {timeout:g}s") from exc
    stdout, stderr = proc.stdout, proc.stderr
    if stderr:
        sys.stderr.write(stderr.decode("utf-8", "replace"))
    if proc.returncode != 0:
        raise _plugin_error(proc.returncode, stdout, stderr)
    if command not in ("ADD", "VERSION"):
        return None
    try:
        out = jsonlite.loads(stdout) if stdout.strip() else None
    except ValueError as exc:
        raise DecodingFailure(
            f"failed to unmarshal raw result of {path}: {exc}", stdout.decode("utf-8", "replace")
        ) from exc
    if out is None:
        out = {}
    if not isinstance(out, dict):
        raise DecodingFailure(f"result of {path} is not a JSON object")
    if command == "ADD" and not out.get("cniVersion"):
        out["cniVersion"] = _config_version(stdin_data)  # libcni's fixupResultVersion
    return out


def _plugin_error(status: int, stdout: bytes, stderr: bytes) -> CNIError:
    if not stdout.strip():
        if not stderr.strip():
            return PluginError(f"netplugin failed with no error message: exit status {status}")
        return PluginError(f"netplugin failed: {stderr.decode('utf-8', 'replace')!r}")
    try:
        doc = jsonlite.loads(stdout)
    except ValueError as exc:
        text = stdout.decode("utf-8", "replace")
        return PluginError(
            f"netplugin failed but error parsing its diagnostic message {text!r}: {exc}"
        )
    if not isinstance(doc, dict):
        return PluginError(f"netplugin failed: {stdout.decode('utf-8', 'replace')!r}")
    return error_from_dict(doc)


def invoke(
    path: str, args: CmdArgs, in_process: bool | None = None
) -> Result | dict[str, Any] | None:
    """Run ``args.command`` of the plugin at ``path``: in-process if allowed and ours, else exec.

    ADD returns a Result (in the config's cniVersion), VERSION a dict, the rest None.
    """
    allowed = in_process_allowed() if in_process is None else in_process
    module = launcher_module(path) if allowed else None
    if module is not None:
        return run_in_process(module, args)
    env = dict(os.environ)
    env.update(args.env())
    out = exec_plugin(path, args.command, args.stdin_data, env)
    if args.command == "ADD":
        return Result.from_dict(out)
    return out


def _delegate(command: str, ipam_type: str, args: CmdArgs, stdin_data: bytes) -> Any:
    path = find_plugin(ipam_type, args.path)
    call = CmdArgs(
        command=command,
        container_id=args.container_id,
        netns=args.netns,
        ifname=args.ifname,
        args=args.args,
        path=list(args.path),
        stdin_data=stdin_data,
    )
    return invoke(path, call)


def delegate_add(ipam_type: str, args: CmdArgs, stdin_data: bytes) -> Result:
    """ADD of the IPAM plugin ``ipam_type`` (found in CNI_PATH) with ``stdin_data``."""
    result = _delegate("ADD", ipam_type, args, stdin_data)
    if not isinstance(result, Result):
        raise DecodingFailure(f'IPAM plugin "{ipam_type}" returned no result')
    return result


def delegate_del(ipam_type: str, args: CmdArgs, stdin_data: bytes) -> None:
    _delegate("DEL", ipam_type, args, stdin_data)


def delegate_check(ipam_type: str, args: CmdArgs, stdin_data: bytes) -> None:
    _delegate("CHECK", ipam_type, args, stdin_data)


def version_info(path: str, in_process: bool | None = None) -> dict[str, Any]:
    """The plugin's VERSION answer (``cniVersion``, ``supportedVersions``)."""
    stdin = jsonlite.dumps({"cniVersion": SPEC_VERSION}).encode()
    args = CmdArgs("VERSION", "", "", "", "", [], stdin)
    try:
        out = invoke(path, args, in_process)
    except CNIError as exc:
        if exc.code == 1:  # a plugin from before VERSION: it speaks 0.1.0 only
            return {"cniVersion": "0.1.0", "supportedVersions": ["0.1.0"]}
        raise
    if not isinstance(out, dict) or not isinstance(out.get("supportedVersions"), list):
        raise DecodingFailure(f"plugin {path}: bad VERSION answer {out!r}")
    return out
