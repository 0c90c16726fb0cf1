"""The layering contract (ARCHITECTURE.md section 3, docs/architecture.md "Layers"), checked on the source.

Every `import` and `from ... import` statement of every module under `fermix_cli/` is read from its AST:
at module level, inside functions ("not even lazily") and under `if TYPE_CHECKING:`. Layers, top to bottom:

    __main__, build  >  cli  >  the middle layer (agent, mcp, jobs, memory, channels, any new package)
                     >  tools  >  core (with the package root, fermix_cli/__init__.py)

- imports point down only (a layer may import itself or any layer below it);
- a tool family (`tools.X`, a module or a package) never imports another family `tools.Y`;
- between packages of the middle layer only the edges in `MIDDLE_ALLOWED` (acyclic) are allowed; the
  edges in `PENDING` are known to be going away and are tolerated but reported;
- no private name (`_x`, or a module whose last component starts with `_`) is imported from a module in
  another directory;
- the modules' import-time graph (module-level imports, not those inside functions or under
  TYPE_CHECKING) has no cycle; and between packages, the graph with every import (lazy ones included)
  has no cycle other than those listed in `PENDING_PACKAGE_CYCLES`.

`if TYPE_CHECKING:` imports obey the same rules as the others: a name needed only for a type hint is
still a dependency of the reader, so it may not point up or sideways either.

`fermix_cli/catalog.py` is generated data that names modules as strings; the kernel reads it by module
name, so it imports nothing and nothing imports it statically.
"""

from __future__ import annotations

import ast
import sys
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

PACKAGE = "fermix_cli"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

TOP, CLI, MIDDLE, TOOLS, CORE = 4, 3, 2, 1, 0
LAYER_NAMES = {TOP: "__main__/build", CLI: "cli", MIDDLE: "middle", TOOLS: "tools", CORE: "core"}

# Imports between packages of the middle layer: (importer, imported). Must stay acyclic.
MIDDLE_ALLOWED: frozenset[tuple[str, str]] = frozenset(
    {
        ("jobs", "agent"),  # a job run is one agent turn
        ("jobs", "memory"),  # a job's memories are forgotten with it
        ("jobs", "channels"),  # deliveries go to a channel
        ("events", "channels"),  # reminders go to the snapshotted channel
        ("events", "agent"),  # a reminder's follow-up check-in is one short agent turn
    }
)

# Edges known to be going away, between units (a top-level package, or a tool family `tools.X`): tolerated
# by every test here, and reported as warnings, until the work that removes them lands.
PENDING: frozenset[tuple[str, str]] = frozenset()

# Cycles between packages through function-level imports, known and tolerated until fixed (reported).
PENDING_PACKAGE_CYCLES: frozenset[frozenset[str]] = frozenset()


@dataclass(frozen=True)
class Import:
    """One imported module (and name, for `from m import name`) of one statement."""

    importer: str  # dotted module name of the file holding the statement
    line: int
    module: str  # the module the statement loads (for `from p import sub`, `p.sub` when sub is a module)
    name: str | None  # the name taken from `module` (`from m import name`), None for `import m`
    text: str  # the statement as written
    at_import_time: bool  # module level, not inside a function, not under TYPE_CHECKING
    type_checking: bool

    def where(self) -> str:
        return f"{self.importer} (line {self.line}: {self.text})"


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py")) if "__pycache__" not in p.parts}


def is_package(mod: str) -> bool:
    return modules()[mod].name == "__init__.py"


def resolve_relative(importer: str, level: int, module: str | None) -> str:
    base = importer.split(".")
    if not is_package(importer):
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, in_function: bool, type_checking: bool) -> Iterator[tuple[ast.stmt, bool, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, in_function, type_checking
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _walk(child, True, type_checking)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), in_function, True)
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), in_function, type_checking)
        else:
            yield from _walk(child, in_function, type_checking)


@cache
def imports() -> tuple[Import, ...]:
    """Every import of every fermix_cli module, resolved to fermix_cli module names (others dropped)."""
    out: list[Import] = []
    known = modules()
    for mod, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        for stmt, in_function, type_checking in _walk(tree, False, False):
            text = ast.unparse(stmt)
            runtime = not in_function and not type_checking
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    target = _existing(alias.name)
                    if target:
                        out.append(Import(mod, stmt.lineno, target, None, text, runtime, type_checking))
                continue
            base = resolve_relative(mod, stmt.level, stmt.module) if stmt.level else (stmt.module or "")
            target = _existing(base)
            if not target:
                continue
            for alias in stmt.names:
                sub = f"{base}.{alias.name}"
                if target == base and sub in known:
                    out.append(Import(mod, stmt.lineno, sub, None, text, runtime, type_checking))
                else:
                    out.append(Import(mod, stmt.lineno, target, alias.name, text, runtime, type_checking))
    return tuple(out)


def _existing(dotted: str) -> str | None:
    """The longest prefix of `dotted` that is a fermix_cli module, or None for outside imports."""
    parts = dotted.split(".")
    while parts:
        name = ".".join(parts)
        if name in modules():
            return name
        parts.pop()
    return None


def top_package(mod: str) -> str:
    """`agent` for `fermix_cli.agent.loop`; `__init__` for the package root itself."""
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer(mod: str) -> int:
    top = top_package(mod)
    if top in ("__main__", "build"):
        return TOP
    if top == "cli":
        return CLI
    if top == "tools":
        return TOOLS
    if top in ("core", "__init__", "catalog"):
        return CORE
    return MIDDLE


def family(mod: str) -> str | None:
    """`tools.git` for any module of the git family; None outside tools/ (or for tools/__init__)."""
    parts = mod.split(".")
    return ".".join(parts[1:3]) if len(parts) > 2 and parts[1] == "tools" else None


def directory(mod: str) -> str:
    """The package a module lives in (a package's `__init__` lives in the package itself)."""
    return mod if is_package(mod) else mod.rpartition(".")[0]


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def cross_package(imp: Import) -> bool:
    return top_package(imp.importer) != top_package(imp.module)


def unit(mod: str) -> str:
    """What PENDING names: a tool family (`tools.meta`), else the top-level package (`agent`)."""
    return family(mod) or top_package(mod)


def edge(imp: Import) -> tuple[str, str]:
    return unit(imp.importer), unit(imp.module)


def report(title: str, bad: Iterable[Import], why: str = "") -> list[str]:
    """One line per offending statement (a statement naming three things is reported once)."""
    lines: dict[tuple[str, int], str] = {}
    pending: dict[tuple[str, str], list[str]] = {}
    for imp in bad:
        if edge(imp) in PENDING:
            pending.setdefault(edge(imp), []).append(imp.where())
            continue
        lines.setdefault((imp.importer, imp.line), f"{imp.where()}{why and ': ' + why.format(imp=imp)}")
    for (a, b), where in sorted(pending.items()):
        warnings.warn(f"{title}: pending {a} -> {b}: {'; '.join(sorted(set(where)))}", stacklevel=2)
    return list(lines.values())


# -- layers ---------------------------------------------------------------------------------------------


def test_imports_point_down_only() -> None:
    bad = report(
        "layers",
        (imp for imp in imports() if layer(imp.module) > layer(imp.importer)),
        "{imp.importer} is below {imp.module}",
    )
    assert not bad, "imports pointing up a layer:\n" + "\n".join(bad)


def test_core_imports_only_core() -> None:
    bad = report(
        "core",
        (imp for imp in imports() if layer(imp.importer) == CORE and layer(imp.module) != CORE),
        "core imports {imp.module}",
    )
    assert not bad, "core imports something above it (even lazily):\n" + "\n".join(bad)


def test_tools_import_neither_the_middle_layer_nor_cli() -> None:
    bad = report(
        "tools",
        (imp for imp in imports() if layer(imp.importer) == TOOLS and layer(imp.module) > TOOLS),
        "a tool family imports {imp.module}",
    )
    assert not bad, "tools import something above them:\n" + "\n".join(bad)


def test_a_family_never_imports_another_family() -> None:
    bad = report(
        "families",
        (
            imp
            for imp in imports()
            if family(imp.importer) and family(imp.module) and family(imp.importer) != family(imp.module)
        ),
        "imports {imp.module}, another family",
    )
    assert not bad, "a tool family imports another family:\n" + "\n".join(bad)


def middle_edges() -> dict[tuple[str, str], list[Import]]:
    edges: dict[tuple[str, str], list[Import]] = {}
    for imp in imports():
        if layer(imp.importer) == MIDDLE and layer(imp.module) == MIDDLE and cross_package(imp):
            edges.setdefault((top_package(imp.importer), top_package(imp.module)), []).append(imp)
    return edges


def test_middle_layer_imports_follow_the_allow_list() -> None:
    bad = report(
        "middle layer",
        (
            imp
            for (a, b), imps in sorted(middle_edges().items())
            if (a, b) not in MIDDLE_ALLOWED
            for imp in imps
        ),
        "{imp.importer} -> {imp.module} is not in MIDDLE_ALLOWED",
    )
    assert not bad, "imports between middle-layer packages outside the allow-list:\n" + "\n".join(bad)


def test_pending_edges_are_still_used() -> None:
    # Once an edge is gone it leaves PENDING too, so it cannot quietly come back.
    gone = PENDING - {edge(imp) for imp in imports()}
    assert not gone, f"PENDING edges no longer used, remove them from PENDING: {sorted(gone)}"


def test_the_middle_layer_allow_list_is_acyclic() -> None:
    middle_pending = {
        (a, b) for a, b in PENDING if MIDDLE == layer(f"{PACKAGE}.{a}") == layer(f"{PACKAGE}.{b}")
    }
    cycles = cycles_of(graph_of(MIDDLE_ALLOWED | middle_pending))
    assert not cycles, f"MIDDLE_ALLOWED (with the middle-layer PENDING edges) has a cycle: {cycles}"


def test_the_middle_layer_allow_list_names_middle_packages() -> None:
    for a, b in MIDDLE_ALLOWED:
        for pkg in (a, b):
            assert layer(f"{PACKAGE}.{pkg}") == MIDDLE, f"{pkg} in the allow-list is not a middle package"


# -- private names --------------------------------------------------------------------------------------


def test_no_private_name_is_imported_across_packages() -> None:
    bad = []
    for imp in imports():
        private_name = imp.name is not None and is_private(imp.name)
        private_module = any(is_private(part) for part in imp.module.split(".")[1:])
        if (private_name or private_module) and directory(imp.importer) != directory(imp.module):
            bad.append(f"{imp.where()}: imports private {imp.name or imp.module} from {imp.module}")
    assert not bad, "private names imported across packages:\n" + "\n".join(bad)


# -- cycles ---------------------------------------------------------------------------------------------


def graph_of(edges: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    return graph


def cycles_of(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_cycle_at_run_time() -> None:
    runtime = [imp for imp in imports() if imp.at_import_time]
    cycles = cycles_of(graph_of((imp.importer, imp.module) for imp in runtime))
    lines = []
    for cycle in cycles:
        members = set(cycle)
        lines.append(" <-> ".join(cycle))
        lines += [
            f"    {imp.where()}"
            for imp in runtime
            if imp.importer in members and imp.module in members and imp.importer != imp.module
        ]
    assert not cycles, "import cycles at run time:\n" + "\n".join(lines)


def package_of(mod: str) -> str:
    return directory(mod)


def test_no_cycle_between_packages_even_lazily() -> None:
    all_imports = imports()
    edges = {(package_of(i.importer), package_of(i.module)) for i in all_imports}
    # A package and its subpackages are one unit here: `core` importing `core.net` is inside one package.
    edges = {(a, b) for a, b in edges if not (b.startswith(a + ".") or a.startswith(b + "."))}
    cycles = cycles_of(graph_of(edges))
    new = [c for c in cycles if frozenset(c) not in PENDING_PACKAGE_CYCLES]
    lines = []
    for cycle in new:
        members = set(cycle)
        lines.append(" <-> ".join(cycle))
        lines += [
            f"    {i.where()}"
            for i in all_imports
            if package_of(i.importer) in members
            and package_of(i.module) in members
            and package_of(i.importer) != package_of(i.module)
        ]
    assert not new, "import cycles between packages (lazy imports included):\n" + "\n".join(lines)
    for cycle in cycles:
        warnings.warn(f"pending package cycle: {' <-> '.join(cycle)}", stacklevel=1)


# -- the checker itself ---------------------------------------------------------------------------------


def test_the_walk_sees_lazy_and_type_checking_imports() -> None:
    found = imports()
    assert any(not i.at_import_time and not i.type_checking for i in found)
    assert any(i.type_checking for i in found)
    assert len(modules()) > 50


@pytest.mark.parametrize(
    ("mod", "expected"),
    [
        ("fermix_cli.__main__", TOP),
        ("fermix_cli.build.docs", TOP),
        ("fermix_cli.cli.app", CLI),
        ("fermix_cli.jobs.runner", MIDDLE),
        ("fermix_cli.agent.loop", MIDDLE),
        ("fermix_cli.tools.files", TOOLS),
        ("fermix_cli.core.net.guard", CORE),
        ("fermix_cli", CORE),
    ],
)
def test_layer_of(mod: str, expected: int) -> None:
    assert layer(mod) == expected


def test_cycles_of_finds_a_cycle() -> None:
    assert cycles_of(graph_of([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])) == [["a", "b", "c"]]
    assert cycles_of(graph_of([("a", "b"), ("b", "c")])) == []


@pytest.mark.parametrize(
    "package", ["fermix_cli.core.net", "fermix_cli.core.search", "fermix_cli.core.shell"]
)
def test_every_lazy_export_of_a_curated_package_resolves(package: str) -> None:
    """A name in `__all__` that loads on first use (PEP 562) must load: a typo'd module fails only then."""
    import importlib

    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
