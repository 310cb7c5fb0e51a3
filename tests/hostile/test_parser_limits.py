"""Parser limits and the error line: duplicate keys, huge integers, deep nesting, mistyped
``[tool.dtkguard]``; every exit-2 error is one ``FILE:LINE:COL field: message`` line."""

from __future__ import annotations

import json
import re

import pytest

from tests.fleet.factory import node_report, write, write_lock
from tests.hostile.conftest import one_error_line, run

POSITION = re.compile(r"^(?P<file>/[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<field>[^:]+): .+")


def _at(line: str, file, line_no: int, field: str) -> re.Match[str]:
    m = POSITION.match(line)
    assert m, line
    assert m["file"] == str(file) and int(m["line"]) == line_no and m["field"] == field, line
    assert int(m["col"]) >= 1
    return m


POLICIES = [
    # (id, text, line, field, fragment)
    ("dup-key", '[vendor]\ntorch = "2.4.1+das.a"\ntorch = "2.4.1+das.b"\n', 3, "vendor.torch",
     "defined twice"),
    ("dup-table", '[vendor]\ntorch = "2.4.1+das.a"\n[vendor]\n', 3, None, "already exists"),
    ("huge-int", "[policy]\nname = " + "9" * 5000 + "\n", 2, None, "invalid TOML"),
    ("deep", "[policy]\nname = " + "[" * 5000 + "]" * 5000 + "\n", 2, None, "nested"),
    ("non-utf8", '[policy]\nname = "ok"\ndescription = "caf\xe9"\n', 3, None, "not UTF-8"),
    ("col-0", '[vendor]\n[vendor]\n', 2, None, "already exists"),
    ("vendor-version", '[vendor]\napex = "1.0+das.x"\ntorch = "2.4.1"\n', 3, "vendor.torch",
     "no local label"),
]  # fmt: skip


@pytest.mark.parametrize("text,line,field,fragment", [p[1:] for p in POLICIES],
                         ids=[p[0] for p in POLICIES])  # fmt: skip
def test_policy_errors_have_file_line_col_and_field(tmp_path, cache, site, text, line, field,
                                                    fragment):  # fmt: skip
    policy = tmp_path / "p.toml"
    policy.write_bytes(text.encode("latin-1"))
    proc = run("check", "--path", str(site), "--policy", str(policy), cache=cache)
    assert proc.returncode == 2
    error = one_error_line(proc)
    assert fragment in error
    if field:
        _at(error, policy, line, field)
    else:
        assert error.startswith(f"{policy}:{line}:"), error
        assert re.match(rf"^{re.escape(str(policy))}:{line}:[1-9]\d*: ", error), error


def test_non_utf8_points_at_the_byte(tmp_path, cache, site):
    policy = tmp_path / "p.toml"
    policy.write_bytes(b'[policy]\nname = "ok"\ndescription = "caf\xe9"\n')
    proc = run("check", "--path", str(site), "--policy", str(policy), cache=cache)
    assert one_error_line(proc).startswith(f"{policy}:3:19: not UTF-8")


PKG = '[[packages]]\nname = "a"\nversion = "1"\ndirectory = { path = "." }\n'  # lines 5-8
LOCKS = [
    ("dup-key", '[[packages]]\nname = "a"\nname = "b"\n', 7, "packages.name"),
    ("tool-not-a-table", PKG + '[tool]\ndtkguard = "x"\n', 10, "tool.dtkguard"),
    ("installed-not-tables", PKG + "[tool.dtkguard]\ninstalled = [1, 2]\n", 10,
     "tool.dtkguard.installed[0]"),
    ("installed-name-int", PKG + "[[tool.dtkguard.installed]]\nname = 5\n", 10,
     "tool.dtkguard.installed[0].name"),
    ("pkg-tool-string", PKG + 'tool = "x"\n', 9, "packages[0].tool"),
    ("bad-version-type", '[[packages]]\nname = "a"\nversion = 5\n', 7, "packages[0].version"),
]  # fmt: skip
LOCK_HEAD = 'lock-version = "1.0"\ncreated-by = "t"\nrequires-python = ">=3.10"\n\n'


@pytest.mark.parametrize("body,line,field", [p[1:] for p in LOCKS], ids=[p[0] for p in LOCKS])
def test_lock_errors_have_file_line_col_and_field(tmp_path, cache, site, body, line, field):
    lock = tmp_path / "pylock.toml"
    lock.write_text(LOCK_HEAD + body)
    proc = run("check", "--path", str(site), "--lock", str(lock), cache=cache)
    assert proc.returncode == 2, proc.stderr
    _at(one_error_line(proc), lock, line, field)


def test_a_huge_lock_integer_is_bad_input(tmp_path, cache, site):
    lock = tmp_path / "pylock.toml"
    write_lock(lock, {"torch": "2.4.1+das.opt1.dtk25041"})
    lock.write_text(
        lock.read_text().replace('version = "2.4.1', "size = " + "9" * 5000 + '\nversion = "2.4.1')
    )
    proc = run("check", "--path", str(site), "--lock", str(lock), cache=cache)
    assert proc.returncode == 2
    assert re.match(rf"^{re.escape(str(lock))}:\d+:\d+: ", one_error_line(proc))


@pytest.mark.parametrize("kind", ["huge-int", "deep", "nan"])
def test_a_bad_node_report_is_unreadable_and_the_rest_merge(tmp_path, cache, kind):
    good = write(tmp_path / "good.json", node_report("good"))
    bad = tmp_path / "bad.json"
    text = json.dumps(node_report("bad"))
    if kind == "huge-int":
        text = text.replace('"schema_version": 1', '"schema_version": ' + "1" * 5000)
    elif kind == "deep":
        text = text[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    else:
        text = text.replace('"schema_version": 1', '"schema_version": NaN')
    bad.write_text(text)
    proc = run("report", "merge", str(good), str(bad), "-f", "json", cache=cache)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    nodes = {n["file"]: n for n in json.loads(proc.stdout)["nodes"]}
    assert nodes[str(good)]["status"] == "ok"
    assert nodes[str(bad)]["status"] == "unreadable"
