"""The package's layering, read from the source with `ast` (nothing imported): no import loops
between modules, pure layers free of Airflow and cloud SDKs, every `finops.*` import naming a
module that exists, and test modules that never import one another.

Edges are every import of a `finops` module anywhere in a file: module level, inside functions
and under `if TYPE_CHECKING:` (a lazy import is still a dependency of the layer). Importing
`finops.a.b` also runs `finops/a/__init__.py`; that edge is counted when the package's
__init__ itself imports at module level (finops.warehouse, finops.alerts)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from fnmatch import fnmatchcase as fnmatch
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLUGINS = REPO / "plugins"
TESTS = REPO / "tests"

# Loops that remain, each as the modules (fnmatch patterns) that may form one: a loop found
# must lie inside one entry. None touches the layers held to no loops at all (LAYERED). Each is
# the place to cut next: move what both sides share into a module below them.
ALLOWED_CYCLES: list[tuple[str, ...]] = [
    # config validates the commitments section; commitments.settings reads get_config() lazily.
    ("finops.config", "finops.commitments.settings"),
    # executor picks a provider (local, aws, ...) lazily; the providers raise executor's errors.
    (
        "finops.jobs.executor",
        "finops.jobs.local",
        "finops.jobs.aws",
        "finops.jobs.gcp",
        "finops.jobs.azure",
        "finops.jobs.lambda_cloud",
    ),
    # the demo prints the UI login (demo.ui constants); demo.ui reuses run.prepare_airflow_env.
    ("finops.demo.run", "finops.demo.ui"),
]

# Layers that take part in no loop, allowed or not: the billing contract and spine, the
# extractors and converters, the warehouse and the alert hook.
LAYERED = (
    "finops.batch",
    "finops.sql_text",
    "finops.periods",
    "finops.ingest",
    "finops.sources",
    "finops.focus",
    "finops.warehouse",
    "finops.alerts",
)

# Pure logic: importing these must load no Airflow or cloud SDK, directly or through the
# finops modules they import at module level, and they name none anywhere (not even lazily).
PURE = (
    "finops.focus",
    "finops.allocation",
    "finops.anomaly.detect",
    "finops.jobs.planner",
    "finops.commitments",
    "finops.forecast",
)
# The edge inside a pure package: it reads an Airflow connection (lazily) to fetch from a cloud
# API; the pure modules beside it may call it only through a function-level import.
PURE_EDGES = ("finops.commitments.sources",)
EDGE_LIBRARIES = ("airflow", "boto3", "botocore", "aiobotocore", "google", "azure")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p, PLUGINS): p for p in sorted((PLUGINS / "finops").rglob("*.py"))}


@cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports(path: Path, name: str, *, top_level_only: bool = False) -> Iterator[tuple[str, list[str], int]]:
    """(module imported, names taken from it, line) for every import in `path`, relative ones
    resolved against `name` (the module's dotted name)."""
    tree = _parse(path)
    nodes = tree.body if top_level_only else ast.walk(tree)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield module, [a.name for a in node.names], node.lineno


def _resolve(module: str, names: list[str]) -> list[str]:
    """The finops modules one import statement loads (a `from pkg import sub` takes the
    submodule; `from pkg import name` the package)."""
    mods = _modules()
    out = [f"{module}.{n}" for n in names if f"{module}.{n}" in mods]
    if len(out) < len(names) or not names:
        out.append(module)
    return [m for m in out if m in mods]


@cache
def _graph() -> dict[str, set[str]]:
    mods = _modules()
    eager = {  # packages whose __init__ imports finops modules at module level
        m
        for m, p in mods.items()
        if p.name == "__init__.py"
        and any(mod.startswith("finops") for mod, _, _ in _imports(p, m, top_level_only=True))
    }
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps: set[str] = set()
        for module, names, _ in _imports(path, name):
            if module == "finops" or module.startswith("finops."):
                deps.update(_resolve(module, names))
        own = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 2)}
        for dep in list(deps):
            parts = dep.split(".")
            deps.update(
                anc for k in range(1, len(parts)) if (anc := ".".join(parts[:k])) in eager and anc not in own
            )
        deps.discard(name)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp: set[str] = set()
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.add(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return found


def _matches(module: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch(module, p) for p in patterns)


def _in(module: str, layers: tuple[str, ...]) -> bool:
    return any(module == layer or module.startswith(layer + ".") for layer in layers)


def _loop_text(graph: dict[str, set[str]], comp: set[str]) -> str:
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & comp))}" for m in sorted(comp))


def test_cycle_finder_sees_a_loop_and_its_absence() -> None:
    """The finder itself: a three-module ring is one loop, a chain is none."""
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(ring) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_graph_reads_lazy_type_only_and_relative_imports() -> None:
    """Edges the layering rests on, of each kind: a function-level import (ingest -> quality),
    a TYPE_CHECKING one (ingest -> warehouse.base), a package re-export (warehouse -> backends)."""
    graph = _graph()
    assert "finops.quality.validate" in graph["finops.ingest"]
    assert "finops.warehouse.base" in graph["finops.ingest"]
    assert "finops.warehouse.backends" in graph["finops.warehouse"]
    assert "finops.warehouse.duckdb_wh" in graph["finops.warehouse.backends"]


def test_no_import_cycles_between_modules() -> None:
    graph = _graph()
    problems = []
    for comp in _cycles(graph):
        layered = sorted(m for m in comp if _in(m, LAYERED))
        if layered:
            problems.append(f"loop through {layered}: {_loop_text(graph, comp)}")
        elif not any(all(_matches(m, allowed) for m in comp) for allowed in ALLOWED_CYCLES):
            problems.append(f"new loop: {_loop_text(graph, comp)}")
    assert not problems, "\n".join(problems)


def test_layers_point_down() -> None:
    """Extractors and converters take the contract from finops.batch, never from the spine or
    the orchestration; the contract and the period helpers import no finops module but the error
    hierarchy; the warehouse protocol imports no backend."""
    graph = _graph()
    rules = {
        "finops.sources": ("finops.ingest", "finops.orchestration"),
        "finops.focus": ("finops.ingest", "finops.sources", "finops.orchestration", "finops.quality"),
        "finops.batch": ("finops",),
        "finops.sql_text": ("finops",),
        "finops.periods": ("finops",),
    }
    bad = [
        f"{m} imports {d}"
        for layer, banned in rules.items()
        for m, deps in graph.items()
        if _in(m, (layer,))
        for d in sorted(deps)
        if _in(d, banned) and not _in(d, (layer, "finops.exceptions"))
    ]
    bad += [
        f"finops.warehouse.base imports {d}"
        for d in sorted(graph["finops.warehouse.base"])
        if d != "finops.exceptions"
    ]
    assert not bad, "\n".join(bad)


def test_pure_layers_import_no_airflow_or_cloud_sdk() -> None:
    mods = _modules()
    pure = [m for m in mods if _in(m, PURE) and m not in PURE_EDGES]
    assert {"finops.focus.aws_cur_mapping", "finops.anomaly.detect", "finops.jobs.planner"} <= set(pure)
    bad = [
        f"{m}:{line} imports {module}"
        for m in pure
        for module, _, line in _imports(mods[m], m)
        if module.split(".")[0] in EDGE_LIBRARIES
    ]

    # what `import <pure module>` loads: the finops modules reached through module-level imports,
    # with the packages above each (their __init__ runs first)
    def loaded_by(m: str, p: Path) -> set[str]:
        deps = {d for mod, names, _ in _imports(p, m, top_level_only=True) for d in _resolve(mod, names)}
        return {".".join(d.split(".")[:k]) for d in deps for k in range(1, d.count(".") + 2)} & set(mods)

    top = {m: loaded_by(m, p) for m, p in mods.items()}
    for m in pure:
        seen, todo = {m}, [m]
        while todo:
            for d in top[todo.pop()] - seen:
                seen.add(d)
                todo.append(d)
        bad += [f"{m} loads the edge module {e} at module level" for e in PURE_EDGES if e in seen]
        for loaded in sorted(seen - {m}):
            bad += [
                f"{m} loads {loaded}, which imports {module} at module level (line {line})"
                for module, _, line in _imports(mods[loaded], loaded, top_level_only=True)
                if module.split(".")[0] in EDGE_LIBRARIES
            ]
    assert not bad, "\n".join(bad)


def test_every_finops_import_names_a_module() -> None:
    """A moved module leaves no import of its old path behind (the package, dags/ and bench/)."""
    mods = _modules()
    missing = []
    roots = [(PLUGINS / "finops", PLUGINS), (REPO / "dags", REPO), (REPO / "bench", REPO)]
    for folder, root in roots:
        for path in sorted(folder.rglob("*.py")):
            name = _module_name(path, root)
            for module, _, line in _imports(path, name):
                if module.split(".")[0] != "finops":
                    continue
                if module not in mods:
                    missing.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert not missing, "\n".join(missing)


def _test_modules() -> dict[str, Path]:
    return {_module_name(p, REPO): p for p in sorted(TESTS.rglob("test_*.py"))}


def test_test_modules_import_no_other_test_module() -> None:
    """Shared helpers live in tests/fixtures/ (or conftest fixtures); a test module imported by
    another runs its tests' module-level setup twice and couples two files' fixtures."""
    tests = _test_modules()
    bad = []
    for name, path in tests.items():
        for module, names, line in _imports(path, name):
            taken = [module, *(f"{module}.{n}" for n in names)]
            hits = [t for t in taken if t in tests or t.rsplit(".", 1)[-1] == "conftest"]
            bad += [f"{path.relative_to(REPO)}:{line} imports {t}" for t in hits]
    assert not bad, "\n".join(bad)
