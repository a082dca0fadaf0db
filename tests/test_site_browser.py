"""The built website in a real browser, the way a reader meets it, with the network cut.

Serves `_build/html` on 127.0.0.1 and drives Debian's Chromium through Playwright. Every request to another host is
blocked and counted as a failure: the site must work offline (MathJax, RequireJS and the widget manager are served by
the site itself). Run after `make book` (`make browser`). Screenshots go to `_build/screenshots/`.

SITE_HTML (a built site's folder) and SITE_TOC (its table of contents) point the tests at another build, for example
a small book of a few pages built with `jupyter-book build . --toc ... --path-output ...`.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
import time
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from learndyn import plotting as ld_plotting

ROOT = Path(__file__).resolve().parents[1]
HTML = Path(os.environ.get("SITE_HTML") or ROOT / "_build" / "html")
SHOTS = Path(os.environ.get("SITE_SHOTS") or ROOT / "_build" / "screenshots")
TOC = yaml.safe_load(Path(os.environ.get("SITE_TOC") or ROOT / "_toc.yml").read_text())
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


# Every page load of the module (the `load` events of every page, navigations included): the module reports their
# number at its end, since a chapter's load (MathJax typesetting thousands of formulas) is what these tests cost.
LOADS: list[str] = []


@pytest.fixture(scope="module")
def server(request):
    if not (HTML / "index.html").exists():
        pytest.fail("no built site in _build/html: run `make book` first")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(HTML)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    start = time.monotonic()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    paths = [urlparse(u).path for u in LOADS]
    plugins = request.config.pluginmanager
    report, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if report is not None and capture is not None and LOADS:
        with capture.global_and_fixture_disabled():
            report.write_line(f"\nbrowser: {len(LOADS)} page loads of {len(set(paths))} pages in "
                              f"{time.monotonic() - start:.0f} s")


@pytest.fixture(scope="module")
def playwright():
    """One Playwright driver for the module (the sync API allows one at a time)."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"no Chromium at {CHROMIUM}: .ci/run installs it with apt")
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium); these tests run in CI")
    with sync_api.sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright):
    b = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    yield b
    b.close()


class Visit:
    """One page load with every console error, page error, failed and external request recorded."""

    def __init__(self, browser, url: str, color_scheme: str = "light", width: int = 1280, height: int = 900,
                 mobile: bool = False):
        self.context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=color_scheme,
                                           is_mobile=mobile, has_touch=mobile)
        self.external: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"failed request: {r.url} ({r.failure})"))
        self.page.on("response", lambda r: r.status >= 400 and self.errors.append(f"HTTP {r.status}: {r.url}"))
        self.page.on("load", lambda p: LOADS.append(p.url))
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


# ---- One load per page and view --------------------------------------------------------------------------------
# A chapter page holds thousands of formulas, and MathJax typesets them in about ten seconds on a CI core: the tests
# below share one load of each page in each view (`measured`), which records everything they assert on. The checks
# that act on a page (taps, clicks, navigation) run one after the other on one load too, each from a settled page,
# and each test raises its own check's failure: the phone's on the first chapter's phone load (`_run_steps` in
# `_measure`), the desktop's on one load with a mouse (`desktop_steps`), the two of a search on one (`derived_search`).
# Only a dark-preferring browser and the other two searches load a page of their own. The module prints its number
# of page loads at the end (44 before the sharing of 2026-12-04, 38 after).

PHONE, DESKTOP = 390, 1400


@dataclass(frozen=True)
class View:
    """The viewport of a shared load. Every shared load is a touch device with scrollbars drawn as overlays (Chromium
    with `is_mobile`, scrollbars not hidden): phones, tablets and macOS show nothing of a scrollbar until the reader
    scrolls, so a box that scrolls must draw its own bar. At 1400 px the layout is the desktop one (the pages set a
    device-width viewport)."""

    width: int = DESKTOP
    height: int = 900


DESK = View()
PHONE_VIEW = View(width=PHONE, height=844)

_EQUATIONS = """() => [...document.querySelectorAll('mjx-container[display="true"]')].map((box) => {
    const math = box.querySelector('mjx-math');
    const cs = getComputedStyle(box);
    return {id: box.closest('.math')?.id || '', tex: box.textContent.slice(0, 40),
            need: Math.ceil(math ? math.getBoundingClientRect().width : box.scrollWidth), have: box.clientWidth,
            scrolls: ['auto', 'scroll'].includes(cs.overflowX) && box.scrollWidth > box.clientWidth,
            bar: box.offsetHeight - box.clientHeight};
  })"""
_FIGURES = """() => [...document.querySelectorAll('main img')]
  .filter((img) => img.naturalWidth > 0 && img.getBoundingClientRect().width > 0)
  .map((img) => {const r = img.getBoundingClientRect(); const cs = getComputedStyle(img);
                 return {src: img.getAttribute('src'), shown: r.width, drawn: r.width / r.height,
                         natural: img.naturalWidth, png: img.naturalWidth / img.naturalHeight,
                         output: !!img.closest('.cell_output'), widget: !!img.closest('.widget-snapshot'),
                         filter: cs.filter, background: cs.backgroundColor, alt: (img.alt || '').slice(0, 50)};})"""
_TABLES = """() => [...document.querySelectorAll('main table')].map((t) => {
    const box = t.closest('.pst-scrollable-table-container') || t.parentElement;
    const heads = [...t.querySelectorAll('th')];
    const last = heads.length ? heads[heads.length - 1].getBoundingClientRect().right : 0;
    return {head: t.querySelector('th')?.textContent, table: Math.ceil(t.getBoundingClientRect().width),
            box: box.clientWidth, last: last, screen: window.innerWidth};
  })"""
_CODE_SHARE = """() => {
    const main = document.querySelector('main article') || document.querySelector('main');
    // only what is drawn: a folded input keeps its laid-out box inside the closed <details> (Chromium's
    // content-visibility), so its getBoundingClientRect is not zero although the reader sees one summary line
    const code = [...main.querySelectorAll('.cell_input')].filter((el) => el.checkVisibility())
      .map((el) => el.getBoundingClientRect().height).reduce((a, b) => a + b, 0);
    return code / main.getBoundingClientRect().height; }"""
_WIDGETS = """() => {
    const colab = [...document.querySelectorAll(".bd-header-article a[href*='colab.research.google.com']")]
      .map((a) => a.href);
    const views = [...document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')];
    return {colab, views: views.map((v) => {
      const marker = v.closest('.widget-snapshot');
      const note = marker?.querySelector('.widget-snapshot__note');
      const link = note?.querySelectorAll('a.widget-snapshot__colab') || [];
      return {marked: !!marker, note: note && note.getClientRects().length ? note.innerText : '',
              links: [...link].map((a) => a.getAttribute('href'))};
    })};
  }"""
_CLIPPED_INLINE = """() => [...document.querySelectorAll('main span.math')]
  .filter((s) => !s.closest('div.math') && s.getBoundingClientRect().width > 0)
  .filter((s) => s.scrollWidth > s.clientWidth + 1)
  .filter((s) => !['auto', 'scroll'].includes(getComputedStyle(s).overflowX))
  .map((s) => s.textContent.slice(0, 40))"""


def _open_first_solution(page) -> dict:
    """Whether the page's first solution is hidden until its own title is clicked, and shows after the click."""
    solution = page.locator("div.solution.dropdown").first
    if not solution.count():
        return {"exists": False}
    body = solution.locator("> :not(.admonition-title)").first
    hidden = not body.is_visible()
    solution.locator("> .admonition-title").click()  # its own title, not a folded code cell's inside it
    try:
        body.wait_for(state="visible", timeout=10_000)
        opened = True
    except sync_api.TimeoutError:
        opened = False
    return {"exists": True, "hidden_before": hidden, "opened": opened}


def _screenshots(visit: Visit, page: str, view: View) -> None:
    """The landing page and the last chapter at desktop width; the first chapter at phone and desktop width, light
    and dark (the theme switched in place), at its top, its first figure and its first widget; the phone menu open."""
    if page not in (TOC["root"], CHAPTERS[0], CHAPTERS[-1]):
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = visit.page.screenshot
    if view == DESK and page != CHAPTERS[0]:
        shot(path=str(SHOTS / f"{'landing' if page == TOC['root'] else 'chapter'}.png"))
    if page != CHAPTERS[0]:
        return
    kind = "phone" if view == PHONE_VIEW else "desktop"
    for scheme in ("light", "dark"):
        visit.page.evaluate(f"document.documentElement.dataset.theme = {scheme!r}")
        visit.page.evaluate("window.scrollTo(0, 0)")
        shot(path=str(SHOTS / f"{kind}_{scheme}.png"))
        for selector, suffix in ((".cell_output img", "figure"), (".widget-snapshot", "widget")):
            target = visit.page.locator(selector).first
            if target.count():
                target.scroll_into_view_if_needed()
                shot(path=str(SHOTS / f"{kind}_{scheme}_{suffix}.png"))
    visit.page.evaluate("document.documentElement.dataset.theme = 'light'; window.scrollTo(0, 0)")
    if view == PHONE_VIEW:
        _visible(visit.page, ".primary-toggle")[0].tap()
        visit.page.wait_for_timeout(400)
        shot(path=str(SHOTS / "phone_menu_open.png"))
        visit.page.keyboard.press("Escape")


def _measure(browser, server: str, page: str, view: View) -> dict:
    """Everything the per-page tests assert on, from one load of `page` in `view`. Measurements that change the page
    (opening the solutions, switching the theme) come last."""
    html = (HTML / f"{page}.html").read_text(encoding="utf-8") if (HTML / f"{page}.html").exists() else ""
    visit = Visit(browser, f"{server}/{page}.html", width=view.width, height=view.height, mobile=True)
    try:
        ev = visit.page.evaluate
        out: dict = {"n_math": html.count('class="math')}
        out["mjx"] = visit.typeset() if out["n_math"] else 0
        out["merror"] = visit.page.locator("mjx-merror").count()
        out["text"] = visit.page.locator("main").inner_text() if visit.page.locator("main").count() else ""
        out["equations"] = ev(_EQUATIONS)
        out["figures"] = ev(_FIGURES)
        out["tables"] = ev(_TABLES)
        out["code_share"] = ev(_CODE_SHARE) if page.startswith("chapters/") else 0.0
        out["widgets"] = ev(_WIDGETS)
        steps = page == CHAPTERS[0] and view == PHONE_VIEW  # the phone's navigation, on this load of the chapter
        if steps:
            out["steps"] = _run_steps(visit, [_search_entry_and_favicon, _phone_contents_drawer])
        _screenshots(visit, page, view)
        if view == DESK:
            ev("document.documentElement.dataset.theme = 'dark'")
            out["dark_figures"] = ev(_FIGURES)
            ev("document.documentElement.dataset.theme = 'light'")
            out["solution"] = _open_first_solution(visit.page)
        if view == PHONE_VIEW:  # solutions open, so that their formulas count too
            ev("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
            visit.page.wait_for_timeout(200)
            out["clipped_inline"] = ev(_CLIPPED_INLINE)
        out["external"], out["errors"] = list(visit.external), list(visit.errors)
        if steps:  # last: it leaves the page
            out["steps"].update(_run_steps(visit, [_phone_menu_navigates]))
        return out
    finally:
        visit.close()


@pytest.fixture(scope="module")
def measured(server, scrollbar_browser):
    """`measured(page, view)`: the measurements of one load of the page in that view, made once per module."""
    cache: dict[tuple[str, View], dict | Exception] = {}

    def get(page: str, view: View = DESK) -> dict:
        if (page, view) not in cache:
            try:
                cache[page, view] = _measure(scrollbar_browser, server, page, view)
            except Exception as error:  # every test of this load reports the same failure
                cache[page, view] = error
        result = cache[page, view]
        if isinstance(result, Exception):
            raise result
        return result

    return get


@pytest.fixture(scope="module")
def scrollbar_browser(playwright):
    """Chromium with scrollbars drawn (Playwright hides them by default)."""
    b = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, ignore_default_args=["--hide-scrollbars"])
    yield b
    b.close()


MATH_PAGES = [p for p in PAGES if 'class="math' in (HTML / f"{p}.html").read_text(encoding="utf-8")] \
    if (HTML / "index.html").exists() else PAGES


@pytest.mark.parametrize("page", [*PAGES, "search", *(["genindex"] if (HTML / "genindex.html").exists() else [])])
def test_page_loads_offline_without_errors(measured, page):
    """MathJax fetches its fonts and extensions while it typesets: they must come from the site too."""
    m = measured(page)
    assert not m["external"], f"{page} fetched from other hosts: {m['external']}"
    assert not m["errors"], f"{page}: {m['errors']}"


@pytest.mark.parametrize("page", PAGES)
def test_math_is_typeset(measured, page):
    m = measured(page)
    if m["n_math"]:
        assert m["mjx"] > 0, f"{page}: {m['n_math']} formulas but no MathJax output"
    for raw in ("$$", "\\(", "\\["):
        assert raw not in m["text"], f"{page}: raw math delimiter {raw!r} left in the text"
    assert not m["merror"], f"{page}: MathJax reported a TeX error"


@pytest.mark.parametrize("page", CHAPTERS)
def test_solution_dropdown_opens(measured, page):
    solution = measured(page)["solution"]
    assert solution["exists"], f"{page} has no solution"
    assert solution["hidden_before"], "a solution must be hidden until clicked"
    assert solution["opened"], "a click on its title does not show the solution"


@pytest.mark.parametrize("page", CHAPTERS)
def test_colab_button_links_an_existing_notebook(measured, page):
    hrefs = measured(page)["widgets"]["colab"]
    repo = CONFIG["repository"]["url"].removeprefix("https://github.com/")
    prefix = f"https://colab.research.google.com/github/{repo}/blob/{CONFIG['repository']['branch']}/"
    assert hrefs and all(h.startswith(prefix) for h in hrefs), hrefs
    assert (ROOT / hrefs[0].removeprefix(prefix)).is_file(), f"{hrefs[0]} points to no file of the repository"


@pytest.fixture(scope="module")
def derived_search(server, browser) -> dict:
    """One search for "Riccati" (Chapter 2's solution) when that chapter is in the book, else "Euler" (the
    preface): the links of its hits and their snippets (each an exception instead when it did not come)."""
    saxe = [p for p in CHAPTERS if "deep_linear" in p]
    term, target = ("Riccati", saxe[0]) if saxe else ("Euler", "chapters/00_preface")
    out: dict = {"term": term, "target": target}
    visit = Visit(browser, f"{server}/search.html?q={term}")
    try:
        try:
            visit.page.wait_for_selector("#search-results li a")
            out["links"] = visit.page.eval_on_selector_all("#search-results li a", "els => els.map(e => e.href)")
        except Exception as error:
            out["links"] = error
        try:
            visit.page.wait_for_selector("#search-results li p.context", timeout=30_000)
            visit.page.wait_for_timeout(1_000)  # every result's snippet is fetched separately
            out["snippets"] = visit.page.eval_on_selector_all("#search-results li p.context",
                                                              "els => els.map(e => e.textContent)")
        except Exception as error:
            out["snippets"] = error
        return out
    finally:
        visit.close()


def _result(value):
    """A shared load's measurement, or the exception that stopped it, raised in the test that asserts on it."""
    if isinstance(value, Exception):
        raise value
    return value


def test_search_finds_a_derived_result(derived_search):
    """Search "Riccati" (Chapter 2's solution) when that chapter is in the book, else "Euler" (the preface)."""
    term, target = derived_search["term"], derived_search["target"]
    links = _result(derived_search["links"])
    assert any(f"{target}.html" in h for h in links), f"search for {term!r} did not link {target}: {links}"


@pytest.mark.parametrize("term", ["catapult", "max-margin"])
def test_search_shows_every_hit_without_a_script_error(server, browser, term):
    """Hits whose anchor names no section once threw appendChild errors in Sphinx's searchtools and lost their
    snippet."""
    visit = Visit(browser, f"{server}/search.html?q={term}")
    try:
        visit.page.wait_for_selector("#search-results li a", timeout=30_000)
        visit.page.wait_for_timeout(1_000)  # every result's snippet is fetched separately
        assert not visit.errors, f"search for {term!r}: {visit.errors}"
    finally:
        visit.close()


def test_dark_mode_switch_changes_the_theme(desktop_steps):
    _result(desktop_steps["_dark_mode_switch"])


@pytest.mark.parametrize("name", ["landing", "chapter", "desktop_light", "desktop_dark", "phone_light", "phone_dark",
                                  "phone_menu_open"])
def test_screenshots(measured, name):
    """Reader's-eye captures for review, taken during the shared loads of the landing page and the chapters."""
    measured(TOC["root"])
    measured(CHAPTERS[-1])
    measured(CHAPTERS[0])
    measured(CHAPTERS[0], PHONE_VIEW)
    assert (SHOTS / f"{name}.png").stat().st_size > 10_000


# ---- The site as readers meet it (issue 19): navigation, widgets, equations, figures, back matter. ----


def _visible(page, selector: str):
    """The visible elements matching a selector (the themes also render hidden copies of some buttons)."""
    loc = page.locator(selector)
    return [loc.nth(i) for i in range(loc.count()) if loc.nth(i).is_visible()]


def _dialog_open(page, dialog_id: str) -> bool:
    return page.evaluate(f"!!document.getElementById({dialog_id!r})?.open")


def _run_steps(visit: Visit, steps: list) -> dict[str, Exception | None]:
    """Run checks that act on one loaded page, one after the other, each from a settled page (no dialog open,
    scrolled to the top): step name -> None, or the exception that failed it (its test raises it)."""
    outcomes: dict[str, Exception | None] = {}
    for step in steps:
        try:
            step(visit)
            outcomes[step.__name__] = None
        except Exception as error:
            outcomes[step.__name__] = error
        if not visit.page.is_closed():
            visit.page.evaluate("document.querySelectorAll('dialog[open]').forEach((d) => d.close());"
                                "window.scrollTo(0, 0)")
    return outcomes


def _search_entry_and_favicon(visit: Visit) -> None:
    page, width = visit.page, visit.page.viewport_size["width"]
    searches = _visible(page, ".search-button-field, .search-button, #searchbox")
    assert len(searches) == 1, f"{len(searches)} search entries visible at {width} px"
    assert not _visible(page, ".bd-header"), "the empty pydata header bar is shown"
    icon = page.evaluate("document.querySelector('link[rel~=icon]')?.href")
    assert icon, "no favicon link"
    assert page.request.get(icon).ok, f"favicon {icon} does not load"
    page.wait_for_timeout(500)  # the browser asks for the icon after load
    assert not visit.errors, visit.errors


def _phone_contents_drawer(visit: Visit) -> None:
    page = visit.page
    toggles = _visible(page, ".secondary-toggle")
    assert len(toggles) == 1, f"{len(toggles)} visible contents buttons at {PHONE} px"
    toggles[0].tap()
    page.wait_for_function("document.getElementById('pst-secondary-sidebar-modal').open", timeout=5_000)
    assert _visible(page, "#pst-secondary-sidebar-modal nav a"), "the page contents are empty"
    box = page.locator("#pst-secondary-sidebar-modal").bounding_box()
    page.touchscreen.tap(5 if box["x"] > 20 else PHONE - 5, 400)  # a tap on the backdrop closes the drawer
    page.wait_for_function("!document.getElementById('pst-secondary-sidebar-modal').open", timeout=5_000)
    page.wait_for_timeout(300)
    assert not _visible(page, ".tooltip.show"), "a tooltip stays up after a tap"
    # picking a section closes the drawer and scrolls to the section
    toggles[0].tap()
    page.wait_for_function("document.getElementById('pst-secondary-sidebar-modal').open", timeout=5_000)
    link = _visible(page, "#pst-secondary-sidebar-modal nav a")[-1]
    target = link.get_attribute("href").split("#", 1)[1]
    link.tap()
    page.wait_for_function("!document.getElementById('pst-secondary-sidebar-modal').open", timeout=5_000)
    page.wait_for_timeout(500)
    top = page.evaluate(f"document.getElementById({target!r}).getBoundingClientRect().top")
    assert -5 <= top <= 300, f"the page did not scroll to the picked section (its top at {top} px)"


def _phone_menu_navigates(visit: Visit) -> None:
    page = visit.page
    toggles = _visible(page, ".primary-toggle")
    assert len(toggles) == 1, f"{len(toggles)} visible menu buttons at {PHONE} px"
    toggles[0].tap()
    page.wait_for_function("document.getElementById('pst-primary-sidebar-modal').open", timeout=5_000)
    links = _visible(page, "#pst-primary-sidebar-modal nav a.reference.internal[href$='.html']")
    assert links, "the opened menu shows no chapter links"
    target = links[-1]
    href = target.get_attribute("href")
    target.tap()
    page.wait_for_url(lambda u: u.split("#")[0].endswith(href.split("/")[-1].split("#")[0]), timeout=10_000)
    # A tap leaves no tooltip up (over the search icon, the next button of the header).
    page.wait_for_timeout(300)
    assert not _visible(page, ".tooltip.show"), "a tooltip stays up after a tap"


def _dark_mode_switch(visit: Visit) -> None:
    themes = [visit.page.evaluate("document.documentElement.dataset.theme")]
    for _ in range(2):  # the switch cycles auto -> dark -> light on a light-preferring browser
        visit.page.locator(".theme-switch-button").first.click()
        themes.append(visit.page.evaluate("document.documentElement.dataset.theme"))
    assert themes == ["light", "dark", "light"], f"the theme switch went {themes}"


def _desktop_menu_collapses_the_sidebar(visit: Visit) -> None:
    page = visit.page
    sidebar = page.locator("#pst-primary-sidebar")
    assert sidebar.is_visible()
    toggles = _visible(page, ".primary-toggle")
    assert len(toggles) == 1, f"{len(toggles)} visible menu buttons at {DESKTOP} px"
    toggles[0].click()
    page.wait_for_timeout(600)  # the collapse is animated (.25 s)
    assert not sidebar.is_visible(), "the sidebar did not collapse"
    assert not _dialog_open(page, "pst-primary-sidebar-modal"), "desktop opened the phone drawer"
    toggles[0].click()
    page.wait_for_timeout(600)
    assert sidebar.is_visible(), "the sidebar did not come back"


@pytest.fixture(scope="module")
def desktop_steps(server, browser) -> dict[str, Exception | None]:
    """The desktop checks of the first chapter (a mouse, no touch, 1400 px), on one load of it."""
    visit = Visit(browser, f"{server}/{CHAPTERS[0]}.html", width=DESKTOP)
    try:
        return _run_steps(visit, [_search_entry_and_favicon, _dark_mode_switch, _desktop_menu_collapses_the_sidebar])
    finally:
        visit.close()


def test_phone_menu_opens_on_a_tap_and_its_links_navigate(measured):
    _result(measured(CHAPTERS[0], PHONE_VIEW)["steps"]["_phone_menu_navigates"])


def test_phone_contents_button_opens_the_page_toc(measured):
    _result(measured(CHAPTERS[0], PHONE_VIEW)["steps"]["_phone_contents_drawer"])


def test_desktop_menu_button_collapses_the_sidebar(desktop_steps):
    _result(desktop_steps["_desktop_menu_collapses_the_sidebar"])


@pytest.mark.parametrize("width", [PHONE, DESKTOP])
def test_one_search_entry_and_a_favicon(measured, desktop_steps, width):
    steps = measured(CHAPTERS[0], PHONE_VIEW)["steps"] if width == PHONE else desktop_steps
    _result(steps["_search_entry_and_favicon"])


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_widget_is_marked_as_a_snapshot_with_a_colab_link(measured, page):
    n_views = (HTML / f"{page}.html").read_text(encoding="utf-8").count("application/vnd.jupyter.widget-view+json")
    if not n_views:
        pytest.skip(f"{page} has no widget")
    widgets = measured(page)["widgets"]
    assert len(widgets["views"]) == n_views
    for i, view in enumerate(widgets["views"], 1):
        assert view["marked"], f"{page}: widget {i} is not wrapped as a snapshot"
        assert "snapshot" in view["note"].lower(), f"{page}: widget {i} unmarked"
        assert len(view["links"]) == 1 and view["links"][0] in widgets["colab"], (
            f"{page}: widget {i} has no Colab link matching the launch button {widgets['colab']}")


@pytest.mark.parametrize("view", [DESK, PHONE_VIEW], ids=["desktop", "phone"])
@pytest.mark.parametrize("page", MATH_PAGES)
def test_display_equations_fit_or_scroll_visibly(measured, page, view):
    """No display equation is wider than its box, unless the box scrolls and shows a scrollbar even where
    scrollbars are overlays."""
    report = measured(page, view)["equations"]
    wide = [r for r in report if r["need"] > r["have"] + 1]
    hidden = [r for r in wide if not (r["scrolls"] and r["bar"] >= 4)]
    assert not hidden, (f"{page} at {view.width} px: {len(hidden)} of {len(report)} display equations are cut off "
                        f"with no visible scrollbar: {hidden[:5]}")


def test_a_dark_preferring_browser_gets_the_dark_theme(server, browser):
    visit = Visit(browser, f"{server}/{CHAPTERS[0]}.html", color_scheme="dark")
    try:
        assert visit.page.evaluate("document.documentElement.dataset.theme") == "dark"
    finally:
        visit.close()


@pytest.mark.parametrize("page", CHAPTERS)
def test_dark_mode_shows_figures_on_a_light_card_undimmed(measured, page):
    styles = [(f["filter"], f["background"]) for f in measured(page)["dark_figures"] if f["output"]]
    assert styles, f"{page} has no figure"
    bad = [s for s in styles if s[0] != "none" or s[1] not in ("rgb(255, 255, 255)", "rgba(255, 255, 255, 1)")]
    assert not bad, f"{page}: {len(bad)} of {len(styles)} figures dimmed or without a light card: {bad[:3]}"


@pytest.mark.parametrize("page_name", ["benchmarks", "reproduction"])
def test_tables_show_every_column_at_desktop_width(measured, page_name):
    """The benchmark tables and the reproduction report's tables fit the column at 1400 px: the last columns (a
    claim's Resolution and Independent side) are on the screen, not behind a sideways scroll."""
    if page_name not in PAGES:
        pytest.skip(f"no {page_name} page in this build")
    tables = measured(page_name)["tables"]
    assert tables, f"no table on the {page_name} page"
    cut = [t for t in tables if t["table"] > t["box"] + 1 or t["last"] > t["screen"]]
    assert not cut, f"{page_name}: tables wider than the column (last columns cut off): {cut[:3]}"


def test_search_snippets_show_no_raw_tex(derived_search):
    snippets = _result(derived_search["snippets"])
    raw = [s for s in snippets if any(t in s for t in ("\\(", "\\)", "\\[", "$$", "\\frac", "\\eta"))]
    assert not raw, f"{len(raw)} of {len(snippets)} search snippets show raw TeX: {raw[:2]}"


# ---- Equations fit (issue 19, item 3) -----------------------------------------------------------------------------

# Pages whose owners are still breaking their wide equations; a page leaves this set when all its equations fit.
EQUATIONS_PENDING = {"chapters/03_ssl_noncontrastive", "chapters/04_ssl_stepwise", "chapters/06_edge_of_stability"}
# Equations a few per cent wider than the column at 1400 px, still to be broken: they scroll with a visible
# scrollbar meanwhile (test_display_equations_fit_or_scroll_visibly). An equation leaves this list when it fits.
WIDE_PENDING = {
    "chapters/01_linear_regression": {"eq-linreg-js-risk", "eq-linreg-filter-risk"},
    "chapters/02_deep_linear": {"eq-saxe-gs-tol"},
    "chapters/05_implicit_bias": {"eq-soudry-margin-bound", "eq-soudry-bounded-residual", "eq-soudry-lnln",
                                  "eq-soudry-residual-rate"},
}
# The equations broken onto several lines for item 3 that fit the column on a phone too. Still wider than their
# box at 390 px (they scroll there, with a visible scrollbar): (2.12) eq-saxe-conservation (399 px in 277),
# (5.10) eq-soudry-kkt (274 in 210, inside a theorem), (7.13) eq-wu-stable (347 in 210, inside a theorem) and the
# Chapter 7 proof's eq-wu-u2-term (333 in 245) and eq-wu-rate-lower (389 in 210).
BROKEN_EQUATIONS = {"chapters/02_deep_linear": ["eq-saxe-mode-eqs"]}


@pytest.mark.parametrize("page", MATH_PAGES)
def test_display_equations_fit_the_column_at_desktop_width(measured, page):
    """At 1400 px no display equation needs its scrollbar: the wide ones are broken onto lines."""
    wide = [r for r in measured(page)["equations"] if r["need"] > r["have"] + 1
            and r["id"].removeprefix("equation-") not in WIDE_PENDING.get(page, set())]
    if page in EQUATIONS_PENDING and wide:
        pytest.skip(f"pending (its owner is breaking them): {[r['id'] or r['tex'] for r in wide]}")
    assert not wide, f"{page} at {DESKTOP} px: {len(wide)} display equations wider than the column: {wide[:5]}"


@pytest.mark.parametrize("page", sorted(BROKEN_EQUATIONS))
def test_broken_equations_fit_a_phone(measured, page):
    rows = {r["id"]: r for r in measured(page, PHONE_VIEW)["equations"]}
    for label in BROKEN_EQUATIONS[page]:
        row = rows.get(f"equation-{label}")
        assert row, f"{page}: no display equation {label}"
        assert row["need"] <= row["have"] + 1, f"{page} at {PHONE} px: ({label}) is wider than its box: {row}"


# ---- Figure text size (issue 19, item 4) --------------------------------------------------------------------------

# The smallest text a figure may show, in CSS px at the desktop column: the body's small print (0.75 of the 16 px
# body text; the theme's own smallest text, its footer and the check summaries, is 12-13.6 px).
MIN_FIGURE_TEXT_PX = 12.0
# Chapters whose owners are still enlarging their figures' text (none now).
FIGURE_TEXT_PENDING: set[str] = set()
MIN_FONT_KEY = "learndyn:min-font-px"  # learndyn.plotting records the smallest text of a figure under this key


@pytest.mark.parametrize("page", CHAPTERS)
def test_figure_text_is_at_least_small_print_at_desktop_width(measured, page):
    """Each figure's PNG records the pixel height of its smallest text (learndyn.plotting); shown at its displayed
    width on the page, that text must be at least the small print of the body."""
    shown = [f for f in measured(page)["figures"] if f["output"] and not f["widget"]]
    if page in FIGURE_TEXT_PENDING and not shown:
        pytest.skip("pending: no figure in this build")
    assert shown, f"{page} has no figure"
    small, unknown = [], []
    for fig in shown:
        meta = ld_plotting.png_text((HTML / page).parent / fig["src"])
        if MIN_FONT_KEY not in meta:
            unknown.append(fig["alt"])
            continue
        px = float(meta[MIN_FONT_KEY]) * fig["shown"] / fig["natural"]
        if px < MIN_FIGURE_TEXT_PX:
            small.append((fig["alt"], round(px, 1)))
    if page in FIGURE_TEXT_PENDING and (small or unknown):
        pytest.skip(f"pending: {len(small)} figures with small text, {len(unknown)} unmeasured")
    assert not unknown, f"{page}: figures with no recorded text size (not drawn by learndyn.plotting): {unknown}"
    assert not small, (f"{page}: {len(small)} of {len(shown)} figures show text smaller than "
                       f"{MIN_FIGURE_TEXT_PX} px at {DESKTOP} px (alt text, px): {small[:5]}")


@pytest.mark.parametrize("page", [*CHAPTERS, "benchmarks"])
def test_figures_keep_their_aspect_ratio_on_a_phone(measured, page):
    """At 390 px every figure is shrunk to the column: its drawn aspect ratio must stay its PNG's (to 1 %), not be
    squashed by a fixed height beside a shrunk width."""
    imgs = measured(page, PHONE_VIEW)["figures"]
    assert imgs, f"{page} has no figure"
    bad = [(i["alt"], round(i["drawn"], 3), round(i["png"], 3)) for i in imgs if abs(i["drawn"] / i["png"] - 1) > 0.01]
    assert not bad, f"{page}: {len(bad)} of {len(imgs)} figures drawn out of shape at {PHONE} px: {bad[:4]}"


@pytest.mark.parametrize("page", MATH_PAGES)
def test_inline_formulas_are_never_clipped_on_a_phone(measured, page):
    """An inline formula wider than the room it has must scroll (the theme's span.math hides overflow, which cut
    182 formulas off at the right edge of a phone): every inline formula is either whole or scrollable. Solutions
    are opened first, so their formulas count too."""
    clipped = measured(page, PHONE_VIEW)["clipped_inline"]
    assert not clipped, f"{page}: {len(clipped)} inline formulas clipped at {PHONE} px, e.g. {clipped[:4]}"


CODE_SHARE_MAX = 0.25
# Folding the check cells (book_html.fold_check_code) brings every chapter to 3-8 % at 1400 px (2026-12-02). The
# measurement once counted the folded inputs' boxes too (43-76 %): it now counts what is drawn. A chapter whose share
# is above the target while its owner folds or moves code goes into this set.
CODE_SHARE_PENDING: set[str] = set()


@pytest.mark.parametrize("page", CHAPTERS)
def test_code_is_at_most_a_quarter_of_a_chapter_at_desktop_width(measured, page):
    """A chapter page is mostly text: the code a reader sees unfolded (the experiments; the code that checks a
    result is folded under "Show code cell source", its outcome already in the "✓ N checks passed" line) is at
    most a quarter of the page's height at 1400 px."""
    share = measured(page)["code_share"]
    if page in CODE_SHARE_PENDING:
        pytest.skip(f"pending: code is {100 * share:.0f} % of the page at {DESKTOP} px")
    assert share <= CODE_SHARE_MAX, f"{page}: code is {100 * share:.0f} % of the page at {DESKTOP} px"
