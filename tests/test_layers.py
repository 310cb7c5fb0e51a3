"""The package graph of dtkguard is the layered DAG `docs/architecture.md` states.

Every module is parsed with `ast`; every import counts, at module level or inside a function or
an ``if TYPE_CHECKING:`` block, and so does a string that names a dtkguard module exactly (what
`importlib.import_module` is handed: the tables of check families, report formats, commands).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
_MODULE_NAME = re.compile(r"dtkguard(?:\.[A-Za-z_]\w*)+(?::[\w.]+)?")


def documented_layers(text: str) -> list[list[str]]:
    """The lines of the ```` ```layers ```` block of the architecture doc, bottom layer first."""
    m = re.search(r"^```layers\n(.*?)^```", text, re.M | re.S)
    assert m, "docs/architecture.md has no ```layers block"
    rows = [line.split("#", 1)[0].split() for line in m.group(1).splitlines()]
    return [row for row in rows if row]


def package_of(module: str) -> str | None:
    """The top-level unit of a dtkguard module: ``rules`` for ``dtkguard.rules.stack``,
    ``decision`` for ``dtkguard.decision``, ``__init__`` for ``dtkguard`` itself."""
    parts = module.split(".")
    if parts[0] != "dtkguard":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path: Path, root: Path) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of everything ``path`` imports or names for importlib: a module, or
    a name inside one (`resolve` finds the module)."""
    name = module_name(path, root)
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:  # `from pkg import mod` imports the module pkg.mod
                yield node.lineno, f"{module}.{alias.name}"
        elif isinstance(node, ast.Constant) and _MODULE_NAME.fullmatch(str(node.value)):
            yield node.lineno, str(node.value).partition(":")[0]


def modules(root: Path) -> set[str]:
    return {module_name(p, root) for p in (root / "dtkguard").rglob("*.py")}


def resolve(dotted: str, known: set[str]) -> str | None:
    """The longest known module ``dotted`` starts with (None for an entry point group)."""
    parts = dotted.split(".")
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts) if len(parts) > 0 and parts[0] == "dtkguard" else None


def module_edges(root: Path) -> dict[tuple[str, str], list[str]]:
    """(importing module, imported module) -> ["file:line", ...] between dtkguard modules."""
    known = modules(root)
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted((root / "dtkguard").rglob("*.py")):
        src = module_name(path, root)
        for line, dotted in imported(path, root):
            dst = resolve(dotted, known)
            if dst is not None and dst != src:
                edges.setdefault((src, dst), []).append(f"{path.relative_to(root)}:{line}")
    return edges


def package_edges(root: Path) -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> ["file:line module", ...] across units."""
    edges: dict[tuple[str, str], list[str]] = {}
    for (src, dst), places in module_edges(root).items():
        a, b = package_of(src), package_of(dst)
        if a != b:
            edges.setdefault((a, b), []).extend(f"{w} {dst}" for w in places)
    return edges


def units(root: Path) -> set[str]:
    """The packages and top-level modules of ``root``'s dtkguard (``__init__``: the root)."""
    found = {p.name for p in (root / "dtkguard").iterdir() if (p / "__init__.py").is_file()}
    found |= {p.stem for p in (root / "dtkguard").glob("*.py")}
    return found


def cycles(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one unit (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for src, dst in edges:
        graph.setdefault(src, set()).add(dst)
        graph.setdefault(dst, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def against_layers(edges: dict[tuple[str, str], list[str]], layers: list[list[str]]) -> list[str]:
    """Imports of a unit on the same or a higher layer, one line each with its place."""
    level = {unit: i for i, row in enumerate(layers) for unit in row}
    return [
        f"{where}: {src} (layer {level[src]}) imports {dst} (layer {level[dst]})"
        for (src, dst), places in sorted(edges.items())
        if level[dst] >= level[src]
        for where in places
    ]


def test_every_unit_has_one_documented_layer():
    layers = documented_layers(DOC.read_text(encoding="utf-8"))
    listed = [unit for row in layers for unit in row]
    assert len(listed) == len(set(listed)), "a unit is on two layers"
    assert set(listed) == units(REPO)


def _cycle_detail(edges: dict[tuple[str, str], list[str]]) -> str:
    return "\n".join(
        f"{a} -> {b}: {w}"
        for c in cycles(edges)
        for (a, b), places in sorted(edges.items())
        if a in c and b in c
        for w in places
    )


def test_no_package_cycle():
    edges = package_edges(REPO)
    assert cycles(edges) == [], _cycle_detail(edges)


def test_no_module_cycle():
    """No file circle either, not even inside a package (a registry names its modules by string
    and they import nothing back from it)."""
    edges = module_edges(REPO)
    assert cycles(edges) == [], _cycle_detail(edges)


def test_every_import_goes_down_the_documented_layers():
    layers = documented_layers(DOC.read_text(encoding="utf-8"))
    bad = against_layers(package_edges(REPO), layers)
    assert bad == [], "\n".join(bad)


# --- the checker itself: it finds what it must ---------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "dtkguard" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "source",
    [
        "from dtkguard.high.mod import x\n",
        "import dtkguard.high.mod\n",
        "def f():\n    from dtkguard.high import mod\n",
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from dtkguard.high.mod import T\n",
        "from dtkguard import high\n",
        "from ..high import mod\n",
        'TABLE = {"x": "dtkguard.high.mod:run"}\n',
    ],
    ids=["from", "import", "local", "type-checking", "from-root", "relative", "importlib-name"],
)
def test_an_upward_import_is_found_in_every_spelling(tmp_path, source):
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "",
            "low/mod.py": source,
            "high/__init__.py": "from dtkguard.high import mod\n",
            "high/mod.py": "from dtkguard.low.mod import y\n",
        },
    )
    edges = package_edges(root)
    assert ("low", "high") in edges
    assert cycles(edges) == [["high", "low"]]
    assert any("dtkguard.low.mod" in c for c in cycles(module_edges(root)))
    bad = against_layers(edges, [["__init__"], ["low"], ["high"]])
    assert len(bad) == 1 and bad[0].startswith("dtkguard/low/mod.py:")


def test_a_docstring_naming_a_module_is_not_an_import(tmp_path):
    root = _tree(
        tmp_path,
        {
            "low/__init__.py": '"""Called by `dtkguard.high.mod` to do things."""\n',
            "high/__init__.py": "",
        },
    )
    assert package_edges(root) == {}


def unresolved_imports(root: Path) -> list[str]:
    """``file:line name`` of each ``from dtkguard.X import N`` (anywhere: inside functions too,
    which only run on their path) whose module or name does not exist, by importing the module."""
    import importlib

    bad = []
    for path in sorted((root / "dtkguard").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if not (
                isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dtkguard")
            ):
                continue
            where = f"{path.relative_to(root)}:{node.lineno}"
            try:
                module = importlib.import_module(node.module)
            except ImportError as exc:
                bad.append(f"{where} {node.module}: {exc}")
                continue
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                if not hasattr(module, alias.name) and not _is_module(dotted):
                    bad.append(f"{where} {dotted}")
    return bad


def _is_module(dotted: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(dotted) is not None
    except ImportError:  # the parent is a module, not a package
        return False


def test_every_function_local_import_names_what_exists():
    """A move that leaves a stale import inside a function fails here, not on a user's path."""
    assert unresolved_imports(REPO) == []


def test_a_stale_import_is_found(tmp_path):
    pkg = tmp_path / "dtkguard"
    pkg.mkdir()
    (pkg / "late.py").write_text("def f():\n    from dtkguard.errors import NoSuchError\n")
    assert unresolved_imports(tmp_path) == ["dtkguard/late.py:2 dtkguard.errors.NoSuchError"]


def private_imports(root: Path) -> list[str]:
    """``file:line module.name`` of each ``from dtkguard.X import _name`` in dtkguard: a private
    name used outside its module (make it public where it belongs, or keep it at home)."""
    bad = []
    for path in sorted((root / "dtkguard").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dtkguard"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        where = f"{path.relative_to(root)}:{node.lineno}"
                        bad.append(f"{where} {node.module}.{alias.name}")
    return bad


def test_no_module_imports_another_modules_private_names(tmp_path):
    assert private_imports(REPO) == []
    pkg = tmp_path / "dtkguard"
    pkg.mkdir()
    (pkg / "a.py").write_text("from dtkguard.env.environment import _collect, __doc__\n")
    assert private_imports(tmp_path) == ["dtkguard/a.py:1 dtkguard.env.environment._collect"]
