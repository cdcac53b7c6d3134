"""Plugin registry: plugin name -> factory(args, handle) -> plugin (upstream runtime.Registry).

`args` is the decoded, defaulted args object from pysched.config (or None for
plugins without args); `handle` is the Framework the plugin belongs to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PluginFactory = Callable[[Any, Any], Any]


class RegistryError(ValueError):
    """Duplicate or unknown plugin names."""


class Registry(dict[str, PluginFactory]):
    """A dict with upstream's Register/Unregister/Merge error semantics."""

    def register(self, name: str, factory: PluginFactory) -> None:
        if name in self:
            raise RegistryError(f"a plugin named {name} already exists")
        self[name] = factory

    def unregister(self, name: str) -> None:
        if name not in self:
            raise RegistryError(f"no plugin named {name} exists")
        del self[name]

    def merge(self, other: dict[str, PluginFactory]) -> None:
        for name, factory in other.items():
            self.register(name, factory)


def in_tree_registry() -> Registry:
    """The default plugins (plugins.default_registry upstream)."""
    from pysched.plugins.registry import in_tree_factories

    r = Registry()
    r.merge(in_tree_factories())
    return r
