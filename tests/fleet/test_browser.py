"""The fleet html view as a person sees it: rendered by a real Chromium (headless), at desktop
and phone widths. Failing nodes come first, text is readable, the page never scrolls sideways
(wide tables scroll inside their own box), and the summary fits the screen.

Needs Debian's ``chromium`` and the ``playwright`` test extra (which drives it; no browser is
downloaded). ``.ci/run`` installs chromium before the tests run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dtkguard.fleet.html import render_html
from dtkguard.fleet.merge import merge
from tests.fleet.factory import finding, node_report, write
from tests.support.need import missing

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.browser
if CHROMIUM is None:
    missing("chromium is not installed (apt-get install chromium)", module=True)
import playwright.sync_api as playwright  # noqa: E402 - the test extra: never a skip

DOCS_SHOT = Path(__file__).resolve().parents[2] / "docs" / "fleet-view.png"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mixed fleet of 40 nodes: clean ones, failing ones, drift, a missing and a broken report."""
    tmp = tmp_path_factory.mktemp("fleet") / "reports"
    replaced = finding("vendor-replaced", "torch", installed="2.7.0")
    denied = finding("denied-package", "nvidia-cublas-cu12", "critical")
    drift = finding("drift-version", "vllm", "high", installed="0.9.2", locked="0.8.5.post1")
    long_path = (
        "/opt/conda/envs/serving-with-a-very-long-environment-name/lib/python3.10/site-packages"
    )
    paths = []
    for i in range(1, 41):
        name = f"k100ai-node-{i:03d}"
        findings = [replaced, denied] if i % 9 == 0 else [drift] if i % 13 == 0 else []
        target = {"kind": "python", "python": f"{long_path}/../../../bin/python3"}
        paths.append(
            write(
                tmp / f"{name}.json",
                node_report(name, findings, target=target, lock="pylock.das-25041-vllm.toml"),
            )
        )
    (tmp / "k100ai-node-041.json").write_text('{"schema_version": 1, "findings": [')
    cwd = os.getcwd()
    os.chdir(tmp.parent)  # report paths as a person passes them: reports/NODE.json
    try:
        names = [p.name for p in paths] + ["k100ai-node-041.json", "k100ai-node-042.json"]
        fleet = merge([Path("reports", name) for name in names])
    finally:
        os.chdir(cwd)
    page = tmp.parent / "fleet.html"
    page.write_text(render_html(fleet), encoding="utf-8")
    return page


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _open(browser, page_file: Path, width: int):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(page_file.as_uri())
    return page


@pytest.mark.parametrize("width", [1280, 390])
def test_no_sideways_scrolling_and_summary_fits(browser, page_file: Path, width: int, tmp_path):
    page = _open(browser, page_file, width)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for selector in ("h1", ".sum"):
        box = page.locator(selector).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, selector
        fits = page.eval_on_selector(selector, "e => e.scrollWidth <= e.clientWidth")
        assert fits, f"{selector} overflows at {width}px"
    page.screenshot(path=str(tmp_path / f"fleet-{width}.png"), full_page=False)
    if width == 1280 and os.environ.get("DTKGUARD_UPDATE_SNAPSHOTS"):
        page.screenshot(path=str(DOCS_SHOT))
    page.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_text_is_readable(browser, page_file: Path, width: int):
    page = _open(browser, page_file, width)
    sizes = page.eval_on_selector_all(
        "td, p, th", "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))"
    )
    assert sizes and min(sizes) >= 12
    broken = page.eval_on_selector_all(  # a verdict badge or a header is never split mid-word
        ".badge, th",
        "els => els.filter(e => e.getBoundingClientRect().height >"
        " 1.9 * parseFloat(getComputedStyle(e).lineHeight || 20)).map(e => e.innerText)",
    )
    assert broken == []
    page.close()


def test_failing_nodes_come_first(browser, page_file: Path):
    page = _open(browser, page_file, 1280)
    headings = page.eval_on_selector_all("h2", "els => els.map(e => e.id)")
    assert headings.index("problems") < headings.index("nodes")
    verdicts = page.eval_on_selector_all(
        "#nodes + .scroll tbody tr td:nth-child(2)", "els => els.map(e => e.innerText.trim())"
    )
    assert len(verdicts) == 42
    first_ok = verdicts.index("OK") if "OK" in verdicts else len(verdicts)
    assert all(v != "OK" for v in verdicts[:first_ok])
    assert all(v == "OK" for v in verdicts[first_ok:])
    assert verdicts[0] == "MISSING" and "FAIL" in verdicts[:first_ok]
    # what a person sees first, above the fold: the verdict
    top = page.locator("h1").bounding_box()
    assert top["y"] < 200 and "FAIL" in page.locator("h1").inner_text()
    page.close()


#: the brightest pixel of a screenshot (PNG bytes), decoded by the browser itself
_BRIGHTEST = """async (data) => {
    const img = new Image();
    img.src = "data:image/png;base64," + data;
    await img.decode();
    const c = document.createElement("canvas");
    c.width = img.width; c.height = img.height;
    const g = c.getContext("2d");
    g.drawImage(img, 0, 0);
    const px = g.getImageData(0, 0, c.width, c.height).data;
    let best = 0;
    for (let i = 0; i < px.length; i += 4) {
        best = Math.max(best, (px[i] + px[i + 1] + px[i + 2]) / 3);
    }
    return best;
}"""


def _edge(page, box, side: str) -> float:
    """The brightest pixel of the 2 px at ``side`` of ``box``: white unless a shadow is there."""
    import base64

    x = box["x"] + (1 if side == "left" else box["width"] - 3)
    top = max(box["y"], 0)
    clip = {"x": x, "y": top, "width": 2, "height": min(box["y"] + box["height"], 900) - top}
    shot = base64.b64encode(page.screenshot(clip=clip)).decode()
    return page.evaluate(_BRIGHTEST, shot)  # draws on a canvas outside the page: no change


def test_a_wide_table_shows_that_it_scrolls_at_phone_width(browser, page_file: Path):
    """At 390 px the nodes table is wider than the screen: a shadow at its right edge says there
    is more; scrolled to its end, the shadow is at the left edge instead. A table that fits
    (at 1280 px) shows none."""
    page = _open(browser, page_file, 390)
    box_sel = "#nodes + .scroll"
    assert page.eval_on_selector(box_sel, "e => e.scrollWidth > e.clientWidth + 50")
    page.locator(box_sel).scroll_into_view_if_needed()
    box = page.locator(box_sel).bounding_box()
    assert _edge(page, box, "right") < 235 and _edge(page, box, "left") > 245
    page.eval_on_selector(box_sel, "e => { e.scrollLeft = e.scrollWidth; }")
    assert _edge(page, box, "right") > 245 and _edge(page, box, "left") < 235
    page.close()
    wide = _open(browser, page_file, 1280)
    fits = "#common + .scroll"
    assert wide.eval_on_selector(fits, "e => e.scrollWidth <= e.clientWidth")
    wide.locator(fits).scroll_into_view_if_needed()
    box = wide.locator(fits).bounding_box()
    assert _edge(wide, box, "right") > 245 and _edge(wide, box, "left") > 245
    wide.close()
