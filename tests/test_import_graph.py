"""The package's import graph: no cycles, and the two doors (cli/, web/) meet only in service/ (issue 38).

Every import counts, at module level or inside a function (a lazy import is still a dependency). A name imported
from a package is followed to the module its `__init__` takes it from, so `from gpuplan.hardware import Catalog`
is an edge to the module that defines Catalog, not to every module the package re-exports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def import_graph(src: Path, top: str) -> dict[str, set[str]]:
    """module -> the package modules it imports (every `import`/`from ... import`, absolute or relative)."""
    mods: dict[str, Path] = {}
    pkgs: set[str] = set()
    for f in (src / top).rglob("*.py"):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            pkgs.add(".".join(parts))
        mods[".".join(parts)] = f
    trees = {m: ast.parse(f.read_text(encoding="utf-8")) for m, f in mods.items()}

    def absolute(m: str, node: ast.ImportFrom) -> str:
        if node.level == 0:
            return node.module or ""
        base = m.split(".") if m in pkgs else m.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))

    def origin(pkg: str, name: str, depth: int = 0) -> str:
        if f"{pkg}.{name}" in mods:
            return f"{pkg}.{name}"
        for node in trees[pkg].body:
            if isinstance(node, ast.ImportFrom) and depth < 8:
                for a in node.names:
                    if (a.asname or a.name) == name:
                        src_mod = absolute(pkg, node)
                        if src_mod in pkgs and src_mod != pkg:
                            return origin(src_mod, a.name, depth + 1)
                        return src_mod if src_mod in mods else pkg
        return pkg

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, tree in trees.items():
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mod = absolute(m, node)
                targets = [origin(mod, a.name) for a in node.names] if mod in pkgs else [mod]
            for t in targets:
                if t in mods and t != m and not (m in pkgs and t.startswith(m + ".")):
                    edges[m].add(t)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(SRC, "gpuplan")


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


@pytest.mark.parametrize(("door", "forbidden"), [("gpuplan.service", ("gpuplan.cli", "gpuplan.web")),
                                                 ("gpuplan.cli", ("gpuplan.web",)),
                                                 ("gpuplan.web", ("gpuplan.cli",))])
def test_the_doors_meet_only_in_service(graph: dict[str, set[str]], door: str, forbidden: tuple[str, ...]) -> None:
    bad = sorted(f"{m} -> {t}" for m, ts in graph.items() if m == door or m.startswith(door + ".")
                 for t in ts if t.startswith(forbidden))
    assert bad == []


def test_the_check_finds_a_lazy_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from toy.a import f\n")
    (pkg / "a.py").write_text("def f():\n    from toy.b import g\n    return g\n")
    (pkg / "b.py").write_text("from toy import f\n\ndef g():\n    return f\n")
    (pkg / "c.py").write_text("from . import b\n")
    g = import_graph(tmp_path, "toy")
    assert g["toy.b"] == {"toy.a"} and g["toy.c"] == {"toy.b"}
    assert cycles(g) == [["toy.a", "toy.b"]]
