"""The house's floors: pycni imports neither pykubelet nor pysched, pysched imports of pykubelet
only its ground floor (``pykubelet.api``: the object model and its machinery), and nothing
imports a face.

A cheap stand-in for import-linter's contracts: every module's imports are read
with ast (nothing is executed), so a new upward arrow fails here first.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@cache
def parsed(path: Path) -> ast.Module:
    """Each source file is parsed once per run: every test here walks the whole tree."""
    return ast.parse(path.read_text(), filename=str(path))


@cache
def imported_modules(path: Path) -> frozenset[str]:
    """Walked once per file, as parsed: several tests ask every file for its imports."""
    tree = parsed(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return frozenset(names)


def modules_of(package: str) -> list[Path]:
    return sorted(p for p in (REPO / package).rglob("*.py") if "_pb2" not in p.name)


# what each lower package may import of the packages beside it: the ground floor and itself
ALLOWED_ABOVE = {
    "pycni": ("pycni",),
    "pysched": ("pysched", "pykubelet.api"),
}


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("package", sorted(ALLOWED_ABOVE))
def test_lower_packages_import_only_the_ground_floor(package: str) -> None:
    """pycni stands alone; pysched reads the one object model (``pykubelet.api`` and its
    subpackages) and nothing else of pykubelet: no client, control plane, kubelet or CLI."""
    project = ("pycni", "pykubelet", "pysched")
    offenders = {
        str(p.relative_to(REPO)): sorted(
            m
            for m in imported_modules(p)
            if _within(m, project) and not _within(m, ALLOWED_ABOVE[package])
        )
        for p in modules_of(package)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_ground_floor_rule_can_fail(tmp_path: Path) -> None:
    """The rule's own check: an import of the client from pysched, or of pysched from pycni,
    is caught; an import of pykubelet.api's machinery is not."""
    p = tmp_path / "m.py"
    p.write_text("import pykubelet.client.rest\nfrom pykubelet.api.machinery import codec\n"
                 "import pysched.queue\n")
    mods = imported_modules(p)
    assert sorted(m for m in mods if not _within(m, ALLOWED_ABOVE["pysched"])) == [
        "pykubelet.client.rest"]
    assert sorted(m for m in mods if not _within(m, ALLOWED_ABOVE["pycni"])) == [
        "pykubelet.api.machinery", "pykubelet.client.rest", "pysched.queue"]


def test_nothing_below_the_faces_imports_a_cli() -> None:
    """`pykubelet.cli` is a face: only other faces (the CLI itself) may import it."""
    offenders = {}
    for package in ("pycni", "pysched", "pykubelet"):
        for p in modules_of(package):
            rel = p.relative_to(REPO)
            if rel.parts[:2] == ("pykubelet", "cli") or rel.name in ("cli.py", "demo.py"):
                continue
            faces = ("pykubelet.cli", "pycni.cli", "pysched.cli")
            bad = sorted(
                m
                for m in imported_modules(p)
                if m in faces or m.startswith(tuple(f + "." for f in faces))
            )
            if bad:
                offenders[str(rel)] = bad
    assert offenders == {}


def test_api_types_do_no_io() -> None:
    """pykubelet.api is pure: no subprocess, socket, grpc or runtime imports."""
    forbidden = (
        "subprocess",
        "socket",
        "grpc",
        "pykubelet.runtime",
        "pykubelet.kubelet",
        "pyroute2",
    )
    offenders = {}
    for p in sorted((REPO / "pykubelet" / "api").rglob("*.py")):
        bad = sorted(m for m in imported_modules(p) if m.startswith(forbidden))
        if bad:
            offenders[str(p.relative_to(REPO))] = bad
    assert offenders == {}


def _module_name(path: Path, root: Path = REPO) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (at any depth: a function's import counts);
    built once per run, each caller gets its own copy."""
    return {m: set(edges) for m, edges in _built_import_graph().items()}


@cache
def _built_import_graph() -> dict[str, set[str]]:
    return _graph_of(REPO, ("pycni", "pysched", "pykubelet"))


def _graph_of(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    paths = [p for package in packages
             for p in sorted(q for q in (root / package).rglob("*.py") if "_pb2" not in q.name)]
    names = {_module_name(p, root) for p in paths}
    return {_module_name(p, root): _edges(p, _module_name(p, root), names) for p in paths}


def _edges(path: Path, me: str, names: set[str]) -> set[str]:
    """The project modules one module imports: every import statement in it, a function's
    or an ``if TYPE_CHECKING:`` block's too, relative ones resolved as Python does."""
    edges: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            edges.update(a.name for a in node.names if a.name in names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                # a package's __init__ is its own package; another module's is its parent
                parts = me.split(".")
                keep = len(parts) - node.level + (path.name == "__init__.py")
                base = ".".join(parts[:keep] + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                edges.add(sub if sub in names else base)
    return {e for e in edges if e in names and e != me}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles() -> None:
    """No two modules import each other, even through a function-level import."""
    assert _cycles(_import_graph()) == []


def test_a_circle_through_function_level_and_relative_imports_is_found(tmp_path: Path) -> None:
    """The check's own check, over files: ``q.a`` imports ``q.b`` inside a function, and
    ``q.b`` imports ``a`` relatively: one circle; without the function's import, none."""
    pkg = tmp_path / "q"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f() -> None:\n    from q import b\n    b.g()\n")
    (pkg / "b.py").write_text("from . import a\n\ndef g() -> None:\n    a.f()\n")
    assert _graph_of(tmp_path, ("q",)) == {"q": set(), "q.a": {"q.b"}, "q.b": {"q.a"}}
    assert _cycles(_graph_of(tmp_path, ("q",))) == [["q.a", "q.b"]]
    (pkg / "a.py").write_text("def f() -> None:\n    pass\n")
    parsed.cache_clear()
    assert _cycles(_graph_of(tmp_path, ("q",))) == []


def _with_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph plus the arrows Python adds: importing ``a.b.c`` first runs ``a`` and
    ``a.b``, so a package whose ``__init__`` imports modules is imported by every module that
    imports any module inside it. The importer's own packages are left out: they are already
    being imported when it runs."""

    def packages(m: str) -> list[str]:
        parts = m.split(".")
        return [".".join(parts[:i]) for i in range(1, len(parts))]

    out: dict[str, set[str]] = {}
    for m, edges in graph.items():
        own = set(packages(m))
        full = set(edges)
        for e in edges:
            full.update(a for a in packages(e) if a not in own and a in graph)
        out[m] = full - {m}
    return out


def test_no_import_circles_through_packages() -> None:
    """No circle among the modules, counting function-level imports and the package
    ``__init__`` every import of a submodule runs first (such a circle hides behind a
    function-level import until someone moves that import to the top)."""
    assert _cycles(_with_packages(_import_graph())) == []


def test_a_circle_through_a_package_init_is_found() -> None:
    """The check's own check: ``p`` imports ``p.a`` in its ``__init__``, ``p.a`` (in a
    function) imports ``q``, and ``q`` imports ``p.b``: running ``p/__init__`` again."""
    graph = {"p": {"p.a"}, "p.a": {"q"}, "q": {"p.b"}, "p.b": set()}
    assert _cycles(graph) == []
    assert _cycles(_with_packages(graph)) == [["p", "p.a", "q"]]


def test_kubelet_never_imports_the_runtime() -> None:
    """The kubelet talks to any runtime over CRI only (ours or containerd)."""
    graph = _import_graph()
    offenders = {
        m: sorted(e for e in edges if e.startswith("pykubelet.runtime"))
        for m, edges in graph.items()
        if m.startswith("pykubelet.kubelet")
    }
    assert {m: e for m, e in offenders.items() if e} == {}


def test_the_ground_floor_stands_on_nothing_above_it() -> None:
    """pykubelet.api.machinery (the walker, field errors, quantities) imports only itself;
    pykubelet.api imports only itself (that machinery included)."""
    graph = _import_graph()
    ground = ("pykubelet.api.machinery",)
    offenders = {}
    for m, edges in graph.items():
        if m.startswith("pykubelet.api.machinery"):
            allowed: tuple[str, ...] = ground
        elif m.startswith("pykubelet.api"):
            allowed = (*ground, "pykubelet.api")
        else:
            continue
        bad = sorted(e for e in edges if not e.startswith(allowed))
        if bad:
            offenders[m] = bad
    assert offenders == {}


def test_test_doubles_stay_out_of_the_product() -> None:
    """``pykubelet.kubelet.testing`` (the fake runtime service) is for tests only."""
    offenders = {}
    for package in ("pycni", "pysched", "pykubelet"):
        for p in modules_of(package):
            rel = p.relative_to(REPO)
            if rel.parts[:3] == ("pykubelet", "kubelet", "testing"):
                continue
            bad = sorted(
                m for m in imported_modules(p) if m.startswith("pykubelet.kubelet.testing")
            )
            if bad:
                offenders[str(rel)] = bad
    assert offenders == {}


def test_the_kubelet_side_reaches_the_runtime_only_through_the_cri_seam() -> None:
    """Only the remote client may import grpc on the kubelet side; everything else depends
    on the RuntimeService/ImageService Protocols."""
    offenders = {}
    for p in sorted((REPO / "pykubelet" / "kubelet").rglob("*.py")):
        if p.name == "cri_client.py":
            continue
        bad = sorted(m for m in imported_modules(p) if m == "grpc" or m.startswith("grpc."))
        if bad:
            offenders[str(p.relative_to(REPO))] = bad
    assert offenders == {}


# The control plane's layers, as k8s.io/apiserver's: the HTTP layer (apiserver: decode,
# negotiate, dispatch) stands on the registry (the generic store and the strategies), which
# stands on storage (the store seam, its backends and the watch cache). Nothing below
# reaches up; the HTTP layer reaches storage only through the registry; controllers are
# clients of the registry (and of the watch cache, their in-process informer), never of
# the HTTP layer.
CP = "pykubelet.controlplane"
CP_FORBIDDEN = {
    "apiserver": ("storage", "controllers"),
    "registry": ("apiserver", "controllers"),
    "storage": ("registry", "apiserver", "controllers"),
    "controllers": ("apiserver",),
}


def control_plane_layer_violations(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """module -> the modules of a layer it may not import (function-level imports count,
    they are in the graph)."""
    offenders: dict[str, list[str]] = {}
    for m, edges in graph.items():
        for layer, forbidden in CP_FORBIDDEN.items():
            if not _within(m, (f"{CP}.{layer}",)):
                continue
            bad = sorted(e for e in edges if _within(e, tuple(f"{CP}.{f}" for f in forbidden)))
            if bad:
                offenders[m] = bad
    return offenders


def test_control_plane_layers() -> None:
    """apiserver -> registry -> storage; controllers -> registry (or the client), never
    the HTTP layer; storage imports neither the registry nor the HTTP layer."""
    assert control_plane_layer_violations(_import_graph()) == {}


def test_the_control_plane_layer_rule_can_fail() -> None:
    """The rule's own check: the registry importing the HTTP layer's patch engine (as it
    did), a controller importing an HTTP module, the HTTP layer reaching into the watch
    cache, and the cache importing the registry are each caught; the arrows downwards are
    not."""
    graph = {
        f"{CP}.registry.store": {f"{CP}.apiserver.patch", f"{CP}.storage.cacher"},
        f"{CP}.controllers.podgc": {f"{CP}.apiserver.subresources", f"{CP}.registry.store"},
        f"{CP}.apiserver.watch": {f"{CP}.storage.cacher", f"{CP}.registry.store"},
        f"{CP}.storage.cacher": {f"{CP}.registry.strategy", f"{CP}.storage.interface"},
        f"{CP}.apiserver.app": {f"{CP}.registry.store"},
    }
    assert control_plane_layer_violations(graph) == {
        f"{CP}.registry.store": [f"{CP}.apiserver.patch"],
        f"{CP}.controllers.podgc": [f"{CP}.apiserver.subresources"],
        f"{CP}.apiserver.watch": [f"{CP}.storage.cacher"],
        f"{CP}.storage.cacher": [f"{CP}.registry.strategy"],
    }


def test_the_http_layer_is_split_by_job() -> None:
    """apiserver/app.py routes and walks the handler chain; each verb family is its own
    handler module (kube-apiserver's endpoints/handlers) and each filter its own module
    (endpoints/filters), each saying why in its docstring; none of them reaches back into
    the app (a request's walk goes one way)."""
    base = REPO / "pykubelet" / "controlplane" / "apiserver"
    expected = {
        "handlers": {"rest", "get", "create", "update", "patch", "delete", "watch"},
        "filters": {"authentication", "impersonation", "authorization"},
    }
    graph = _import_graph()
    for package, modules in expected.items():
        for name in modules:
            path = base / package / f"{name}.py"
            assert path.exists(), path
            assert ast.get_docstring(ast.parse(path.read_text())), path
            module = f"{CP}.apiserver.{package}.{name}"
            assert f"{CP}.apiserver.app" not in graph[module], module
    app = ast.parse((base / "app.py").read_text())
    defined = {n.name for n in ast.walk(app)
               if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    # the verbs' and filters' bodies live in their modules, not in the app
    assert not defined & {"_list", "_watch", "_body", "_delete_options", "_object",
                          "impersonate", "check_list_options", "int64_param"}


def test_one_class_per_upstream_type() -> None:
    """One model: each upstream type (``__k8s__``) is declared by one class in the whole
    project (pysched reads pykubelet.api's; it keeps integer views, not a second model)."""
    import importlib

    declared: dict[str, list[str]] = {}
    for package in ("pysched", "pykubelet"):
        for p in modules_of(package):
            if "__k8s__ = " not in p.read_text():
                continue
            name = _module_name(p)
            module = importlib.import_module(name)
            for attr, cls in vars(module).items():
                upstream = vars(cls).get("__k8s__") if isinstance(cls, type) else None
                if upstream is not None and cls.__module__ == name:
                    declared.setdefault(upstream, []).append(f"{name}.{attr}")
    assert "io.k8s.api.core.v1.Pod" in declared
    assert {k: v for k, v in declared.items() if len(v) > 1} == {}
