"""Our CNI plugins; each module exposes ``PLUGIN`` (a :class:`pycni.skel.Plugin`) and ``main``.

The registry maps executable names to modules so the runtime side can call a
plugin in-process instead of exec'ing it; modules are imported lazily.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from pycni.skel import Plugin

IN_PROCESS: dict[str, str] = {
    "pycni-loopback": "pycni.plugins.loopback",
    "pycni-bridge": "pycni.plugins.bridge",
    "pycni-host-local": "pycni.plugins.host_local",
}


def load(type_name: str) -> Plugin | None:
    """The PLUGIN of our plugin called ``type_name``, or None if it is not one of ours."""
    module = IN_PROCESS.get(type_name)
    if module is None:
        return None
    # __import__, not importlib.import_module: importlib brings warnings to an exec'd start
    plugin: Plugin = __import__(module, fromlist=["PLUGIN"]).PLUGIN
    return plugin
