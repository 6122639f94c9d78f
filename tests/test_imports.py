"""The shape of the package: no import cycle, packages in one-way layers, torch only where it is needed.

Imports are read from the source (``ast``), every one of them: at module level, inside functions (the
lazy ones) and under ``TYPE_CHECKING``. A lazy import hides a cycle from Python at run time, not from a
reader, and a cycle is what makes a module impossible to understand or move on its own.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import specmeter

SRC = Path(specmeter.__file__).resolve().parent.parent

# Packages that must load without torch: they read records, files and servers, never run a model.
TORCH_FREE = (
    "metrics", "report", "store", "monitoring", "economics", "workloads", "selection", "modeldir",
    "goldenset", "wire", "load", "sweep", "methods", "replay", "pricing",
)  # fmt: skip


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / "specmeter").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Modules of specmeter that ``name`` imports; ``from pkg import sub`` counts as importing ``pkg.sub``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            subs = {f"{base}.{a.name}" for a in node.names} & MODULES.keys()
            found.update(subs if len(subs) == len(node.names) else {base, *subs})
    return {m for m in found if m in MODULES and m != name}


def _graph(nodes: Iterable[str], key: dict[str, str]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {n: set() for n in nodes}
    for name, path in MODULES.items():
        for target in _imports(name, path):
            if key[name] != key[target]:
                graph[key[name]].add(key[target])
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "specmeter"


def test_no_import_cycle_between_modules() -> None:
    graph = _graph(MODULES, {m: m for m in MODULES})
    assert _cycles(graph) == []


def test_packages_are_one_way_layers() -> None:
    key = {m: _package(m) for m in MODULES}
    graph = _graph(set(key.values()), key)
    assert _cycles(graph) == []
    # The bottom of the stack: records and their definitions depend on nothing else in specmeter.
    assert graph["metrics"] <= {"specmeter"}
    assert graph["engine"] <= {"metrics", "modeldir", "methods"}
    assert graph["methods"] <= {"metrics"}
    # Serving is split along the wire: the server and the load client share only the wire formats.
    assert graph["wire"] <= {"specmeter", "metrics", "workloads"}
    assert not graph["server"] & {"load", "sweep"}
    assert not graph["load"] & {"server", "sweep"}
    assert "server" not in graph["sweep"]


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_torch_free_packages_import_no_torch() -> None:
    offenders = []
    for name, path in MODULES.items():
        if _package(name) not in TORCH_FREE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{name}: {n}" for n in names if n == "torch" or n.startswith("torch.")]
    assert offenders == []


def test_cli_and_measuring_config_load_without_torch() -> None:
    # `specmeter --help` stays fast, and a library caller can build and validate a config without torch.
    code = (
        "import sys, specmeter.cli.app, specmeter.measuring; "
        "assert 'torch' not in sys.modules, 'torch imported'; "
        "assert 'transformers' not in sys.modules, 'transformers imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
