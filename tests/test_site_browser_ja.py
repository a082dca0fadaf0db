"""The Japanese edition in a real browser (issue 34): `_build/html` served on 127.0.0.1 with both editions (English
at the root, Japanese under ja/), the network cut, Debian's Chromium through Playwright (the machinery of
tests/test_site_browser.py). At phone and desktop width, on one load each of the Preface: its equations typeset by
MathJax, the language switcher visible in the header, opening the English page whose switcher leads back, and the
"next" link opening the next chapter in Japanese. Then a search for a Japanese term. `make book` and `make book-ja`
first (`make browser`)."""

from __future__ import annotations

import functools
import threading
from http.server import ThreadingHTTPServer
from urllib.parse import quote, urlparse

import pytest
import yaml
from test_site_browser import CHROMIUM, HTML, ROOT, SHOTS, Visit, _Quiet, _visible, sync_api

TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CHAPTERS = [c["file"] for p in TOC["parts"] for c in p["chapters"] if c["file"].startswith("chapters/")]
JA = HTML / "ja"
VIEWS = {"phone": (390, 844), "desktop": (1400, 900)}


@pytest.fixture(scope="module")
def server():
    if not (JA / "index.html").exists():
        pytest.fail("no Japanese edition in _build/html/ja: run `make book` and `make book-ja` first")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(HTML)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    from pathlib import Path
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium); these tests run in CI")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _switcher(visit: Visit):
    links = _visible(visit.page, "a.language-switch")
    assert len(links) == 1, f"{len(links)} visible language switchers at {visit.page.viewport_size['width']} px"
    box = links[0].bounding_box()
    width = visit.page.viewport_size["width"]
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, f"the switcher is off the screen: {box}"
    assert box["height"] >= 16 and box["width"] >= 24, f"the switcher is too small to tap: {box}"
    header = visit.page.locator(".bd-header-article").first.bounding_box()
    icons = visit.page.locator(".article-header-buttons").first.bounding_box()
    middle = box["y"] + box["height"] / 2
    assert header["y"] <= box["y"] and box["y"] + box["height"] <= header["y"] + header["height"], (
        f"the switcher is not inside the header bar: {box} in {header}")
    assert icons["y"] <= middle <= icons["y"] + icons["height"], f"the switcher is not in the buttons' row: {box}"
    return links[0]


@pytest.fixture(scope="module", params=list(VIEWS))
def journey(request, server, browser) -> dict:
    """One load of the Japanese Preface in a view: what it shows, then the switcher to English and back, then the
    next chapter. Each step's outcome (or the exception that stopped it) for the tests below."""
    width, height = VIEWS[request.param]
    page = CHAPTERS[0]
    visit = Visit(browser, f"{server}/ja/{page}.html", width=width, height=height, mobile=request.param == "phone")
    out: dict = {"view": request.param}
    try:
        out["lang"] = visit.page.evaluate("document.documentElement.lang")
        out["mjx"] = visit.typeset()
        out["merror"] = visit.page.locator("mjx-merror").count()
        SHOTS.mkdir(parents=True, exist_ok=True)
        visit.page.screenshot(path=str(SHOTS / f"ja_{request.param}.png"))
        try:
            link = _switcher(visit)
            out["switch_text"] = link.inner_text().strip()
            link.click()
            visit.page.wait_for_url(f"**/{page}.html", timeout=30_000)
            out["english_url"] = visit.page.url
            out["english_lang"] = visit.page.evaluate("document.documentElement.lang")
            back = _switcher(visit)
            out["back_text"] = back.inner_text().strip()
            back.click()
            visit.page.wait_for_url(f"**/ja/{page}.html", timeout=30_000)
            out["back_url"] = visit.page.url
        except Exception as error:
            out["switch"] = error
        try:
            nxt = visit.page.locator("a.right-next").first
            nxt.scroll_into_view_if_needed()
            nxt.click()
            visit.page.wait_for_url(f"**/ja/{CHAPTERS[1]}.html", timeout=30_000)
            out["next_url"] = visit.page.url
            out["next_lang"] = visit.page.evaluate("document.documentElement.lang")
            out["next_mjx"] = visit.typeset()
        except Exception as error:
            out["next"] = error
        out["external"], out["errors"] = list(visit.external), list(visit.errors)
        return out
    finally:
        visit.close()


def _step(out: dict, key: str):
    if isinstance(out.get(key), Exception):
        raise out[key]


def test_japanese_page_loads_offline_and_its_equations_typeset(journey):
    assert journey["lang"] == "ja"
    assert journey["mjx"] > 20 and not journey["merror"], (journey["mjx"], journey["merror"])
    assert not journey["external"], f"requests to other hosts: {journey['external'][:5]}"
    assert not journey["errors"], journey["errors"][:5]


def test_the_switcher_opens_the_english_page_and_back(journey):
    _step(journey, "switch")
    assert journey["switch_text"] == "English" and journey["back_text"] == "日本語"
    assert journey["english_lang"] == "en" and "/ja/" not in urlparse(journey["english_url"]).path
    assert urlparse(journey["back_url"]).path == f"/ja/{CHAPTERS[0]}.html"


def test_next_link_opens_the_next_chapter_in_japanese(journey):
    _step(journey, "next")
    assert journey["next_lang"] == "ja" and journey["next_mjx"] > 20


def test_search_finds_a_japanese_term(server, browser):
    """Sphinx's Japanese index (its splitter, html_search_language ja); a query separates its words by spaces."""
    visit = Visit(browser, f"{server}/ja/search.html?q={quote('勾配 降下')}")
    try:
        visit.page.wait_for_selector("#search-results li a", timeout=60_000)
        links = visit.page.eval_on_selector_all("#search-results li a", "els => els.map(e => e.href)")
        assert any("/ja/chapters/" in h for h in links), links[:5]
        assert all("/ja/" in urlparse(h).path for h in links), "a Japanese search leads out of the edition"
        assert not visit.errors, visit.errors
    finally:
        visit.close()
