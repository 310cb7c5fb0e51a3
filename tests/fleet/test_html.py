"""The html fleet view: one self-contained, escaped, well-formed file."""

from __future__ import annotations

from html.parser import HTMLParser

from dtkguard.fleet.html import render_html
from dtkguard.fleet.merge import merge
from tests.fleet.factory import finding, node_report, write

VOID = {"meta", "br", "hr", "img", "link", "input"}


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.errors: list[str] = []
        self.text: list[str] = []
        self.h2: list[str] = []
        self._in_h2 = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)
        self._in_h2 = tag == "h2"

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()
        self._in_h2 = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_h2:
            self.h2.append(data)


def _page(tmp_path):
    evil = "<script>alert(1)</script>&\"'"
    bad = finding("vendor-replaced", "torch", installed="2.4.1")
    bad_msg = finding("denied-package", evil)
    drift = finding("drift-version", "torch", "high", installed="2.5.0", locked="2.4.1")
    paths = [
        write(tmp_path / "n1.json", node_report("n1")),
        write(tmp_path / "n2.json", node_report("n2", [bad, bad_msg])),
        write(tmp_path / "n3.json", node_report("n3", [drift], lock="pylock.vllm.toml")),
        write(tmp_path / "n4.json", node_report(evil)),
        write(tmp_path / "dup.json", node_report("n1", created="2026-01-01T00:00:00+00:00")),
    ]
    (tmp_path / "n5.json").write_text('{"schema_version": 1, "findings": [')
    fleet = merge([*paths, tmp_path / "n5.json", tmp_path / "n6.json"])
    return render_html(fleet), evil


def test_html_is_well_formed_with_every_section(tmp_path):
    html, _ = _page(tmp_path)
    parser = _Collect()
    parser.feed(html)
    parser.close()
    assert parser.errors == [] and parser.stack == []
    assert html.startswith("<!DOCTYPE html>")
    assert parser.h2 == [
        "What happened",
        "Reports missing or unreadable",
        "Duplicate reports (the worst of each set is kept)",
        "Drift from the lock",
        "Most common findings",
        "Nodes",
    ]
    assert sum(1 for tag, _ in parser.tags if tag == "table") == 5
    text = "".join(parser.text)
    for needle in ("n6.json", "truncated", "missing", "pylock.vllm.toml", "~torch 2.4.1 -> 2.5.0"):
        assert needle in text


def test_html_is_self_contained(tmp_path):
    html, _ = _page(tmp_path)
    parser = _Collect()
    parser.feed(html)
    tags = {tag for tag, _ in parser.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed"}
    for _, attrs in parser.tags:
        assert not {"src", "href", "action"} & set(attrs), attrs
        assert not any(k.startswith("on") for k in attrs)
    assert "url(" not in html and "@import" not in html and "http" not in html.lower()
    assert tags >= {"style", "meta"}


def test_html_escapes_report_content(tmp_path):
    html, evil = _page(tmp_path)
    assert evil not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#x27;" in html
    parser = _Collect()
    parser.feed(html)
    assert evil in "".join(parser.text)  # shown to the reader as text
