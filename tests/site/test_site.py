"""Checks of the built website (`make book` first): pages, Colab links, rendering, numbering."""

import re
from pathlib import Path

import pytest
import site_html
import yaml
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO = CONFIG["repository"]["url"].removeprefix("https://github.com/")
BRANCH = CONFIG["repository"].get("branch", "main")
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
PAGES = [TOC["root"]] + [c["file"] for p in TOC.get("parts", []) for c in p["chapters"]]
CHAPTER_PAGES = [p for p in PAGES if p.startswith("chapters/")]


@pytest.fixture(scope="module", autouse=True)
def _built():
    if not (HTML / "index.html").exists():
        pytest.fail("no built site in _build/html: run `make book` first")


def _soup(page: str) -> BeautifulSoup:
    """The page's parse, shared by every test (site_html): read it, never change it."""
    return site_html.shared(HTML / f"{page}.html")


@pytest.mark.parametrize("page", PAGES)
def test_every_toc_entry_has_a_page(page):
    assert (HTML / f"{page}.html").exists(), f"{page}.html missing from the build"


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_colab_button_opens_the_colab_edition(page):
    """The Colab button opens the chapter's Colab edition (plain Markdown), not the MyST twin Colab shows raw."""
    links = [a["href"] for a in _soup(page).find_all("a", href=True) if "colab.research.google.com" in a["href"]]
    name = page.split("/")[-1]
    expected = f"https://colab.research.google.com/github/{REPO}/blob/{BRANCH}/colab/{name}.ipynb"
    assert expected in links, f"{page}: no Colab link to {expected} (found {links})"
    assert not [x for x in links if x.endswith(f"/{page}.ipynb")], f"{page}: a Colab link opens the MyST twin"
    assert (ROOT / "colab" / f"{name}.ipynb").exists()


@pytest.mark.parametrize("page", PAGES)
def test_no_traceback_or_unrendered_directive(page):
    soup = _soup(page)
    main = soup.find("main") or soup
    text = main.get_text(" ")
    assert "Traceback (most recent call last)" not in text, f"{page} shows a Python traceback"
    for leftover in ("{exercise}", "{prf:", "{solution", "{code-cell}", "{eq}`", "{cite}`", "{ref}`", "{math}"):
        assert leftover not in text, f"{page} shows unrendered directive text {leftover!r}"
    assert not main.select(".output.stderr .traceback, .output .ansi-red-fg"), f"{page} shows an error output"


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_exercises_theorems_and_equations_are_numbered(page):
    soup = _soup(page)
    md = (ROOT / f"{page}.md").read_text()
    n_ex = len(re.findall(r"^```\{exercise\}", md, re.M))
    n_thm = len(re.findall(r"^```\{prf:(theorem|lemma|proposition|corollary|definition)\}", md, re.M))
    titles = [s.get_text(" ", strip=True) for s in soup.select(".admonition-title .caption-number")]
    ex = [t for t in titles if t.startswith("Exercise")]
    thm = [t for t in titles if re.match(r"(Theorem|Lemma|Proposition|Corollary|Definition)", t)]
    assert len(ex) == n_ex and all(re.match(r"Exercise [\d.]+", t) for t in ex), f"{page}: exercises {ex}"
    assert len(thm) == n_thm and all(re.search(r" [\d.]+", t) for t in thm), f"{page}: theorems {thm}"
    n_eq = len(re.findall(r"^\$\$ *\((eq-[^)]+)\)", md, re.M))
    assert len(soup.select("span.eqno")) >= n_eq, f"{page}: fewer equation numbers than labelled equations"


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_solutions_are_hidden_dropdowns_and_figures_present(page):
    soup = _soup(page)
    sols = soup.select("div.solution")
    assert all("dropdown" in s["class"] for s in sols), f"{page}: a solution is not collapsed"
    assert soup.select(".cell_output img"), f"{page} has no figure"


def test_bibliography_page_lists_cited_works():
    text = _soup("bibliography").get_text(" ")
    assert "Saxe" in text and "Exact solutions" in text


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_every_widget_has_a_static_figure_in_its_section(page):
    """A widget needs a kernel; the static site shows the figure of a few representative settings beside it."""
    soup = _soup(page)
    for view in soup.select('script[type="application/vnd.jupyter.widget-view+json"]'):
        section = view.find_parent("section")
        assert section is not None, f"{page}: a widget outside any section"
        title = section.find(["h1", "h2", "h3"]).get_text(" ", strip=True)
        assert section.select(".cell_output img"), f"{page}: section {title!r} has a widget but no static figure"


def test_reproduction_report_has_a_summary_and_a_section_per_chapter():
    soup = _soup("reproduction")
    summary = soup.select_one("table.reproduction-summary")
    assert summary is not None, "no summary table"
    assert len(summary.select("tbody tr")) == len(CHAPTER_PAGES)
    sections = soup.select("section[id^=report-]")
    assert len(sections) == len(CHAPTER_PAGES)
    assert all(s.find(["h2", "h3"]) for s in sections), "each chapter's section has a heading (for the page TOC)"
    toc = soup.select(".bd-toc-nav a, nav.page-toc a, #pst-page-toc-nav a")
    assert len(toc) >= len(CHAPTER_PAGES), "the chapter sections appear in the page's table of contents"
    text = soup.get_text(" ")
    assert "Independent side" in text and "Resolution or slack" in text


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_every_check_output_links_to_its_report_row_and_back(page):
    report_rows = {tr["id"]: tr for tr in _soup("reproduction").select("tr[id^=check-]")}
    outputs = _soup(page).select("details.learndyn-check[id]")
    assert outputs, f"{page}: no check output with an anchor"
    for out in outputs:
        assert out["id"] in report_rows, f"{page}: check {out['id']} has no row in the report"
        link = out.select_one("a.check-report-link")
        assert link is not None and link["href"].endswith(f"reproduction.html#{out['id']}")
        back = report_rows[out["id"]].select_one("a.check-cell")
        assert back is not None and back["href"] == f"{page}.html#{out['id']}"


def test_landing_page_links_the_pdf_edition():
    link = _soup(TOC["root"]).select_one("a.pdf-edition")
    assert link is not None and (HTML / link["href"]).is_file(), "the PDF edition is linked and present (make pdf)"
