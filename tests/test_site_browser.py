"""The built website in a real browser, the way a reader meets it, with the network cut.

Serves `_build/html` on 127.0.0.1 and drives Debian's Chromium through Playwright. Every request to another host is
blocked and counted as a failure: the site must work offline (MathJax, RequireJS and the widget manager are served by
the site itself). Run after `make book` (`make site-check`). Screenshots go to `_build/screenshots/`.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
PAGES = [TOC["root"]] + [c["file"] for p in TOC.get("parts", []) for c in p["chapters"]]
CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (make test installs it)")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output readable
        pass


@pytest.fixture(scope="module")
def server():
    if not (HTML / "index.html").exists():
        pytest.fail("no built site in _build/html: run `make book` first")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(HTML)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"no Chromium at {CHROMIUM}: .ci/run installs it with apt")
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium); these tests run in CI")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Visit:
    """One page load with every console error, page error, failed and external request recorded."""

    def __init__(self, browser, url: str, color_scheme: str = "light"):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=color_scheme)
        self.external: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"failed request: {r.url} ({r.failure})"))
        self.page.set_default_timeout(90_000)  # generous: CI machines are slow and shared
        self.page.goto(url, wait_until="load")
        self.page.wait_for_timeout(300)  # let deferred scripts report their errors

    def _route(self, route):
        host = urlparse(route.request.url).hostname
        if host in ("127.0.0.1", None):
            route.continue_()
        else:
            self.external.append(route.request.url)
            route.abort()

    def typeset(self) -> int:
        """Wait for MathJax to finish; return the number of typeset formulas."""
        self.page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
        self.page.evaluate("MathJax.startup.promise")
        return self.page.locator("mjx-container").count()

    def close(self):
        self.context.close()


@pytest.mark.parametrize("page", [*PAGES, "search", "genindex"])
def test_page_loads_offline_without_errors(server, browser, page):
    visit = Visit(browser, f"{server}/{page}.html")
    try:
        if 'class="math' in (HTML / f"{page}.html").read_text(encoding="utf-8"):
            visit.typeset()  # MathJax fetches its fonts and extensions: they must come from the site too
        assert not visit.external, f"{page} fetched from other hosts: {visit.external}"
        assert not visit.errors, f"{page}: {visit.errors}"
    finally:
        visit.close()


@pytest.mark.parametrize("page", PAGES)
def test_math_is_typeset(server, browser, page):
    n_math = (HTML / f"{page}.html").read_text(encoding="utf-8").count('class="math')
    visit = Visit(browser, f"{server}/{page}.html")
    try:
        if n_math:
            assert visit.typeset() > 0, f"{page}: {n_math} formulas but no MathJax output"
        text = visit.page.locator("main").inner_text()
        for raw in ("$$", "\\(", "\\["):
            assert raw not in text, f"{page}: raw math delimiter {raw!r} left in the text"
        assert not visit.page.locator("mjx-merror").count(), f"{page}: MathJax reported a TeX error"
    finally:
        visit.close()


@pytest.mark.parametrize("page", CHAPTERS)
def test_solution_dropdown_opens(server, browser, page):
    visit = Visit(browser, f"{server}/{page}.html")
    try:
        solution = visit.page.locator("div.solution.dropdown").first
        assert solution.count(), f"{page} has no solution"
        body = solution.locator("> :not(.admonition-title)").first
        assert not body.is_visible(), "a solution must be hidden until clicked"
        solution.locator(".admonition-title").click()
        body.wait_for(state="visible")
    finally:
        visit.close()


@pytest.mark.parametrize("page", CHAPTERS)
def test_colab_button_links_an_existing_notebook(server, browser, page):
    visit = Visit(browser, f"{server}/{page}.html")
    try:
        hrefs = visit.page.eval_on_selector_all("a[href*='colab.research.google.com']", "els => els.map(e => e.href)")
        repo = CONFIG["repository"]["url"].removeprefix("https://github.com/")
        prefix = f"https://colab.research.google.com/github/{repo}/blob/{CONFIG['repository']['branch']}/"
        assert hrefs and all(h.startswith(prefix) for h in hrefs), hrefs
        assert (ROOT / hrefs[0].removeprefix(prefix)).is_file(), f"{hrefs[0]} points to no file of the repository"
    finally:
        visit.close()


def test_search_finds_a_derived_result(server, browser):
    """Search "Riccati" (Chapter 2's solution) when that chapter is in the book, else "Euler" (the preface)."""
    saxe = [p for p in CHAPTERS if "deep_linear" in p]
    term, target = ("Riccati", saxe[0]) if saxe else ("Euler", "chapters/00_preface")
    visit = Visit(browser, f"{server}/search.html?q={term}")
    try:
        visit.page.wait_for_selector("#search-results li a")
        links = visit.page.eval_on_selector_all("#search-results li a", "els => els.map(e => e.href)")
        assert any(f"{target}.html" in h for h in links), f"search for {term!r} did not link {target}: {links}"
    finally:
        visit.close()


def test_dark_mode_switch_changes_the_theme(server, browser):
    visit = Visit(browser, f"{server}/{CHAPTERS[0]}.html")
    try:
        themes = [visit.page.evaluate("document.documentElement.dataset.theme")]
        for _ in range(2):  # the switch cycles auto -> dark -> light on a light-preferring browser
            visit.page.locator(".theme-switch-button").first.click()
            themes.append(visit.page.evaluate("document.documentElement.dataset.theme"))
        assert themes == ["light", "dark", "light"], f"the theme switch went {themes}"
    finally:
        visit.close()


def test_screenshots(server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    for name, page in [("landing", TOC["root"]), ("chapter", CHAPTERS[-1])]:
        visit = Visit(browser, f"{server}/{page}.html")
        try:
            visit.typeset()
            visit.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)
        finally:
            visit.close()
        assert (SHOTS / f"{name}.png").stat().st_size > 10_000
