"""House rules of the code base, checked on the source tree itself."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the longest a function may be, counted from its ``def`` line to its last line
MAX_FUNCTION_LINES = 60


def source_files() -> list[Path]:
    """Every Python file of the package and of the plugins."""
    return sorted(
        p
        for folder in ("dtkguard", "plugins")
        for p in (REPO / folder).rglob("*.py")
        if "__pycache__" not in p.parts
    )


def long_functions(source: str, where: str) -> list[str]:
    """``where:LINE name: N lines`` for every function of ``source`` over the limit."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"{where}:{node.lineno} {node.name}: {length} lines")
    return out


def test_no_function_is_longer_than_the_limit():
    files = source_files()
    assert REPO / "plugins" / "pip" / "_dtkguard_pip_hook.py" in files
    assert REPO / "dtkguard" / "cli.py" in files
    too_long = [
        line
        for path in files
        for line in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]
    assert too_long == [], (
        f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps):\n"
        + "\n".join(too_long)
    )


def _function(lines: int, *, decorated: bool = False, is_async: bool = False) -> str:
    """A function of exactly ``lines`` lines from ``def`` to its end."""
    head = ("@staticmethod\n" if decorated else "") + ("async " if is_async else "") + "def f():\n"
    return head + "    x = 1\n" * (lines - 1)


def test_the_length_is_counted_from_def_to_the_last_line():
    assert long_functions(_function(MAX_FUNCTION_LINES), "m.py") == []
    assert long_functions(_function(MAX_FUNCTION_LINES + 1), "m.py") == ["m.py:1 f: 61 lines"]
    assert long_functions(_function(61, decorated=True), "m.py") == ["m.py:2 f: 61 lines"]
    assert long_functions(_function(61, is_async=True), "m.py") == ["m.py:1 f: 61 lines"]


def test_methods_and_nested_functions_are_measured():
    body = "".join("    " + line + "\n" for line in _function(61).splitlines())
    assert long_functions("class C:\n" + body, "c.py") == ["c.py:2 f: 61 lines"]
    assert long_functions("def outer():\n" + body, "o.py") == [
        "o.py:1 outer: 62 lines",
        "o.py:2 f: 61 lines",
    ]
