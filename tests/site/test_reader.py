"""What a reader of the built website sees (issue 19), checked in the HTML: figure alt texts and resolution, the
figure palette, no lecture-slide references or label slugs in the text, the benchmarks' printed output, and no
empty index pages. `make book` first; SITE_HTML / SITE_TOC point at another build and its table of contents."""

import functools
import json
import os
import re
import struct
import sys
from pathlib import Path

import pytest
import site_html
import yaml
from bs4 import BeautifulSoup

from learndyn import plotting as ld_plotting

ROOT = Path(__file__).resolve().parents[2]
HTML = Path(os.environ.get("SITE_HTML") or ROOT / "_build" / "html")
TOC = yaml.safe_load(Path(os.environ.get("SITE_TOC") or ROOT / "_toc.yml").read_text())
def _files(entries: list[dict]) -> list[str]:
    """The pages of table-of-contents entries, their sections included (the API reference's module pages)."""
    return [f for e in entries for f in [e["file"], *_files(e.get("sections", []))]]


PAGES = [TOC["root"]] + [f for p in TOC.get("parts", []) for f in _files(p["chapters"])]
CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]
IMAGE_FILE = re.compile(r"(^|/)[^ ]+\.(png|svg|jpe?g|gif)$|_images/", re.I)
SLIDES = re.compile(r"\bslides?\s*(?:\d|\(|version\b|of the lecture|this chapter)|\b(?:lecture|the|first)\s+slides?\b",
                    re.I)
SLUG = re.compile(r"\b(?:eq|thm)-[a-z0-9]+(?:-[a-z0-9]+)*\b")


def _path(page: str) -> Path:
    path = HTML / f"{page}.html"
    if not path.exists():
        pytest.fail(f"no {path}: run `make book` first")
    return path


def _soup(page: str) -> BeautifulSoup:
    """The page's parse, shared by every test (site_html): read it, never change it."""
    return site_html.shared(_path(page))


# What a reader does not see of a page (the selector "script, style, .cell_input, .headerlink, .mjx-assistive-mml"),
# and what the prose leaves out besides: formulas, code and outputs (".math, .cell_output, pre, code, mjx-container").
READER_HIDDEN = {"names": frozenset({"script", "style"}),
                 "classes": frozenset({"cell_input", "headerlink", "mjx-assistive-mml"})}
NOT_PROSE = {"names": READER_HIDDEN["names"] | {"pre", "code", "mjx-container"},
             "classes": READER_HIDDEN["classes"] | {"math", "cell_output"}}


@functools.cache
def _texts(page: str) -> tuple[str, str]:
    """The page's reader text (visible prose and outputs: no scripts, no code cell sources, which may name labels)
    and its prose (the reader text without formulas, code and outputs), read from the shared parse."""
    main = _soup(page).find("main") or _soup(page)
    return site_html.text_without(main, **READER_HIDDEN), site_html.text_without(main, **NOT_PROSE)


def _reader_text(page: str) -> str:
    """The page's visible prose and outputs: no scripts, no code cell sources (code may name labels)."""
    return _texts(page)[0]


@pytest.mark.parametrize("page", CHAPTERS)
def test_figure_alt_texts_describe_not_file_paths(page):
    imgs = _soup(page).select("main .cell_output img")
    assert imgs, f"{page} has no figure"
    bad = [img.get("alt", "") for img in imgs if not img.get("alt", "").strip() or IMAGE_FILE.search(img["alt"])]
    assert not bad, f"{page}: {len(bad)} of {len(imgs)} figures have an empty or file-path alt text: {bad[:3]}"


def _png_width(path: Path) -> int:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">I", head[16:20])[0]


@pytest.mark.parametrize("page", CHAPTERS)
def test_figures_are_2x_pngs_shown_at_half_size(page):
    soup = _soup(page)
    soft = []
    for img in soup.select("main .cell_output img[src$='.png']"):
        shown = re.search(r"width:\s*(\d+)px", img.get("style", "")) or re.search(r"(\d+)", img.get("width", ""))
        pixels = _png_width((HTML / page).parent / img["src"])
        if not shown or pixels < 1.9 * int(shown.group(1)):
            soft.append((img["src"].rsplit("/", 1)[-1][:12], pixels, shown and shown.group(1)))
    assert not soft, f"{page}: figures not at 2x their displayed width (name, pixels, CSS px): {soft[:4]}"


def _contrast_on_white(hex_colour: str) -> float:
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 1.05 / (0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] + 0.05)


def test_figure_palette_has_3_to_1_contrast_on_white():
    sys.path.insert(0, str(ROOT / "lib"))
    from learndyn.plotting import COLORS
    low = {c: round(_contrast_on_white(c), 2) for c in COLORS if _contrast_on_white(c) < 3.0}
    assert not low, f"palette colours below 3:1 on white (WCAG non-text contrast): {low}"


@pytest.mark.parametrize("page", PAGES)
def test_no_lecture_slide_references_in_the_text(page):
    hits = [m.group(0) for m in SLIDES.finditer(_reader_text(page))]
    assert not hits, f"{page} refers to lecture slides the reader does not have: {hits[:5]}"


# Slugs printed by code outside the site's files, pending their owners' fix (a slug leaves when it is printed no more).
SLUGS_PENDING: dict[str, set[str]] = {}


@pytest.mark.parametrize("page", PAGES)
def test_no_label_slugs_in_the_text(page):
    text = _reader_text(page)
    hits = sorted({m.group(0) for m in SLUG.finditer(text)} - SLUGS_PENDING.get(page, set()))
    assert not hits, f"{page} shows {len(hits)} internal label names instead of numbers: {hits[:8]}"


def test_benchmark_printouts_come_from_the_run_of_their_tables():
    if "benchmarks" not in PAGES:
        pytest.skip("no benchmarks page in this build")
    record = json.loads((ROOT / "bench" / "results.json").read_text())
    tabulated = {"batched", "sharpness_vs_pyhessian"}
    by_output = {(e.get("stdout") or "").strip(): k for k, e in record.items() if isinstance(e, dict) and "script" in e}
    main = _soup("benchmarks").find("main")
    blocks = [pre for pre in main.select("pre") if pre.get_text().strip() in by_output]
    assert blocks, "the benchmarks page shows no printed output of its record"
    for key in tabulated & set(record):
        assert (record[key].get("stdout") or "").strip() in {b.get_text().strip() for b in blocks}, (
            f"the printed output of {record[key]['script']} (the run of its table) is not on the page")
    for pre in blocks:
        key = by_output[pre.get_text().strip()]
        if key not in tabulated:
            label = pre.find_previous(["p", "h2", "h3", "h4"]).get_text(" ")
            assert "separate run" in label, f"{record[key]['script']}'s printout is not marked as a separate run"


def test_no_empty_index_pages():
    genindex = HTML / "genindex.html"
    if genindex.exists():
        entries = site_html.shared(genindex).select("main table.indextable a")
        assert entries, "an empty Index page is built (give it {index} entries or leave it out)"
    prf = HTML / "prf-prf.html"
    if prf.exists():
        text = site_html.shared(prf).find("main").get_text(" ")
        assert not re.search(r"\b(thm|lem|prop|def|cor)-[a-z0-9-]+", text), "the Proof Index lists raw labels"


# ---- Figures (issue 19, item 4): numbered and captioned, at most two panels in a row --------------------------------

# Chapters whose owners are still fixing their figures (none now).
FIGURES_PENDING: dict[str, str] = {}
MIN_FONT_KEY, PANELS_KEY = "learndyn:min-font-px", "learndyn:panels-per-row"  # learndyn.plotting writes these


@functools.cache
def _figures(page: str):
    """The chapter's figures: images of cell outputs (not widget snapshots), from the shared parse."""
    return [img for img in _soup(page).select("main .cell_output img")
            if not img.find_parent(class_="widget-snapshot")]


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_figure_is_numbered_and_captioned(page):
    if page in FIGURES_PENDING:
        pytest.skip(FIGURES_PENDING[page])
    bad = []
    for img in _figures(page):
        fig = img.find_parent("figure")
        number = fig and fig.select_one("figcaption .caption-number")
        text = fig and fig.select_one("figcaption .caption-text")
        if not (number and re.match(r"Fig\. \d+(\.\d+)?", number.get_text().strip()) and text
                and re.search(r"\w.*[.!?]\s*$", text.get_text(" ").strip(), re.S)):
            bad.append(img.get("alt", img["src"])[:60])
    assert not bad, f"{page}: {len(bad)} figures without a number and a captioning sentence: {bad[:4]}"


@pytest.mark.parametrize("page", CHAPTERS)
def test_figures_have_at_most_two_panels_in_a_row(page):
    if page in FIGURES_PENDING:
        pytest.skip(FIGURES_PENDING[page])
    wide, unknown = [], []
    for img in _figures(page):
        meta = ld_plotting.png_text((HTML / page).parent / img["src"])
        if PANELS_KEY not in meta:
            unknown.append(img["src"].rsplit("/", 1)[-1][:12])
        elif int(meta[PANELS_KEY]) > 2:
            wide.append((img.get("alt", "")[:50], int(meta[PANELS_KEY])))
    assert not unknown, f"{page}: figures not drawn through learndyn.plotting (no panel count recorded): {unknown}"
    assert not wide, f"{page}: figures with more than two panels in a row (alt text, panels): {wide}"


# ---- Check outputs (issue 19, item 6): a cell's run of checks is one line ----------------------------------------

@pytest.mark.parametrize("page", CHAPTERS)
def test_a_cells_checks_fold_into_one_line(page):
    cells = _soup(page).select("main .cell_output")
    loose = [len(c.find_all("details", class_="learndyn-check", recursive=True)) for c in cells
             if len([d for d in c.find_all("details", class_="learndyn-check")
                     if not d.find_parent("details", class_="learndyn-checks")]) > 1]
    assert not loose, f"{page}: {len(loose)} cells show their checks one per line instead of '✓ N checks passed'"
    groups = _soup(page).select("main details.learndyn-checks > summary")
    assert all(re.fullmatch(r"✓ \d+ checks passed", g.get_text().strip()) for g in groups), \
        [g.get_text() for g in groups][:3]


# ---- Back matter (issue 19, item 7): an index with entries, bibliography names with their capitals -------------

# Chapters whose {index} entries are still to come (their owners add them).
INDEX_PENDING: set[str] = set()


def test_the_index_has_entries_from_every_chapter():
    genindex = HTML / "genindex.html"
    assert genindex.exists(), "no Index page: give the main concepts {index} entries"
    links = [a["href"] for a in site_html.shared(genindex).select("main table.indextable a[href]")]
    missing = [c for c in CHAPTERS if c not in INDEX_PENDING and not any(h.startswith(f"{c}.html") for h in links)]
    assert not missing, f"chapters with no entry in the Index: {missing}"
    assert "genindex.html" in _soup(TOC["root"]).find("main").decode(), "the landing page does not link the Index"


def test_bibliography_names_keep_their_capitals():
    text = _reader_text("bibliography")
    for name in ("PyHessian", "Hessian", "Barlow Twins", "Siamese"):
        assert name in text, f"the bibliography prints {name!r} without its capitals"


WARNING = re.compile(r"\b\w*Warning\b:|/tmp/|site-packages/")


@pytest.mark.parametrize("page", CHAPTERS)
def test_no_warning_reaches_a_page(page):
    """A library warning (with its temporary file path) printed by a cell is noise to a reader: none may reach a
    page. A chapter that expects a warning catches it and says in words what it means."""
    main = _soup(page).find("main")
    hits = [o.get_text(" ", strip=True)[:120] for o in main.select(".cell_output")
            if WARNING.search(o.get_text(" "))]
    assert not hits, f"{page}: {len(hits)} cell outputs show a warning or a file path, e.g. {hits[:2]}"


RAW_TEX = re.compile(r"\\(?:[A-Za-z]{2,}|[{}_^])")


@pytest.mark.parametrize("page", PAGES)
def test_no_raw_tex_in_the_prose(page):
    """Outside formulas, code and outputs, a page shows no TeX source: a paragraph that MyST misreads (a line
    starting "(c) ... )=" became a label and swapped prose and math in a solution) shows it."""
    prose = _texts(page)[1]  # without script, style, .math, .cell_input, .cell_output, pre, code, .headerlink,
    # .mjx-assistive-mml, mjx-container
    hits = sorted({m.group(0) for m in RAW_TEX.finditer(prose)})
    assert not hits, f"{page}: raw TeX in the text: {hits[:8]}"
