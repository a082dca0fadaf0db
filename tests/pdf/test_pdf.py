"""Checks of the PDF edition (`make pdf` first): structure, text, references, figures, code that fits the page."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "site"))
import site_html  # noqa: E402  (the built pages, parsed once for the site tests and these)

PDF = ROOT / "_build" / "html" / "learning-dynamics-of-gradient-descent.pdf"
LOG = ROOT / "_build" / "latex" / "book.log"
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CHAPTERS = [c["file"] for p in TOC["parts"] for c in p["chapters"] if c["file"].startswith("chapters/")]


@pytest.fixture(scope="module")
def text() -> str:
    if not PDF.exists():
        pytest.fail("no PDF edition: run `make pdf` first")
    out = subprocess.run(["pdftotext", "-layout", str(PDF), "-"], capture_output=True, text=True, check=True)
    return out.stdout


def _pages() -> int:
    info = subprocess.run(["pdfinfo", str(PDF)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


def _title(chapter: str) -> str:
    for line in (ROOT / f"{chapter}.md").read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise AssertionError(f"{chapter} has no title")


def test_page_count_is_plausible():
    pages = _pages()
    assert 25 * len(CHAPTERS) <= pages <= 120 * len(CHAPTERS), pages


def test_every_chapter_title_and_the_structure_are_there(text):
    flat = " ".join(text.split())
    for chapter in CHAPTERS:
        words = " ".join(re.sub(r"[$\\{}]", "", _title(chapter)).split())
        assert words.split(":")[0][:40] in flat, f"{chapter}: title {words!r} not found"
    for heading in ("Contents", "About this book", "Notation", "Solutions to the exercises", "Bibliography"):
        assert heading.lower() in flat.lower(), heading


def test_no_undefined_reference_and_no_raw_markup(text):
    assert "??" not in text, "an undefined reference prints as ??"
    for raw in ("{exercise}", "{prf:", "$$", "{solution-start}", "{eq}`", "{cite}`", "interactive(children"):
        assert raw not in text, f"raw markup {raw!r} in the PDF"


def test_every_citation_has_its_entry_in_the_bibliography(text):
    """Each citation of the book links to an entry of the PDF's bibliography (it once had none: the page with the
    references was dropped from the LaTeX build, so every "Saxe et al. [2014]" pointed at nothing)."""
    tex = (ROOT / "_build" / "latex" / "book.tex").read_text(errors="replace")
    # sphinxcontrib-bibtex's author-year citations link with \hyperlink{cite.KEY}; Sphinx's own with \sphinxcite{KEY}
    cited = set(re.findall(r"\\sphinxcite\{([^}]+)\}", tex)) | set(re.findall(r"\\hyperlink\{cite\.([^}]+)\}", tex))
    items = set(re.findall(r"\\bibitem\[[^\]]*\]\{([^}]+)\}", tex))
    assert cited, "no citation in the LaTeX source"
    missing = sorted(cited - items)
    assert not missing, f"{len(missing)} citations without a bibliography entry, e.g. {missing[:3]}"
    tail = " ".join(text.split()).lower()
    start = tail.rfind("bibliography")
    assert start > 0 and "saxe" in tail[start:] and "soudry" in tail[start:], "the bibliography lists the references"


def test_latex_log_has_no_undefined_references_or_wide_code():
    log = LOG.read_text(errors="replace")
    assert not re.search(r"Reference .* undefined|Citation .* undefined", log)
    assert "Missing character" not in log, "a character the font lacks is silently dropped"
    # Overfull lines in code (inputs and outputs, sphinxVerbatim): at most a few points
    code: set[int] = set()
    inside = False
    for number, line in enumerate((LOG.parent / "book.tex").read_text().splitlines(), 1):
        inside = inside or line.startswith(r"\begin{sphinxVerbatim}")
        if inside:
            code.add(number)
        inside = inside and not line.startswith(r"\end{sphinxVerbatim}")
    overfull = re.findall(r"Overfull \\hbox \((\d+\.\d+)pt too wide\) in paragraph at lines (\d+)", log)
    wide = [float(w) for w, first in overfull if int(first) in code]
    assert not wide or max(wide) < 5, f"a line of code {max(wide)} pt wider than the page"


def test_every_figure_of_the_html_build_appears():
    html = ROOT / "_build" / "html"
    figures = 0
    for chapter in CHAPTERS:
        soup = site_html.shared(html / f"{chapter}.html")
        figures += len([img for img in soup.select(".cell_output img") if "widget" not in " ".join(
            img.get("class", []))])
    listed = subprocess.run(["pdfimages", "-list", str(PDF)], capture_output=True, text=True, check=True).stdout
    images = len([line for line in listed.splitlines()[2:] if line.strip() and " smask " not in line])
    assert images >= figures > 0, (images, figures)


# ---- Nothing past the margins or over the footer, on every page -----------------------------------------------------

TEX_PT = 72 / 72.27  # PDF points (bp) per TeX point
OVERHANG_BP = 2.0  # a glyph's ink may pass its box by a hair (italic overhang, a protruding digit): 2 bp is invisible
FOOTER_BAND_BP = 12.0  # the footer line's words: from its ascender to its baseline and descender


def _text_block() -> dict[str, float]:
    """The text block of the LaTeX build, in bp from the top left of the page, as the preamble logs it."""
    flat = LOG.read_text(errors="replace").replace("\n", "")  # TeX wraps its log at 79 characters
    match = re.search(r"BOOK-TEXTBLOCK (.*?maxdepth=[\d.]+pt)", flat)
    assert match, "the LaTeX log has no BOOK-TEXTBLOCK line (the preamble in _config.yml writes it)"
    return {k: float(v.removesuffix("pt")) * TEX_PT for k, v in re.findall(r"(\w+)=([\d.]+pt)", match.group(1))}


def _words() -> list[tuple[int, float, float, float, float, str]]:
    """(page, xMin, yMin, xMax, yMax, word) of every word of the PDF, from pdftotext's bounding boxes."""
    out = subprocess.run(["pdftotext", "-bbox", str(PDF), "-"], capture_output=True, text=True, check=True).stdout
    words = []
    for number, page in enumerate(re.split(r"<page ", out)[1:], 1):
        for box, word in re.findall(r'<word (xMin="[^>]*)>([^<]*)</word>', page):
            x0, y0, x1, y1 = (float(v) for v in re.findall(r'"([\d.]+)"', box))
            words.append((number, x0, y0, x1, y1, word))
    return words


def test_no_word_runs_past_the_margins_or_over_the_footer():
    """Every word of every page lies between the margins (to 2 bp of ink overhang) and above the bottom of the text
    block (its last line may hang \\maxdepth below the last baseline), or in the footer line: no table, equation,
    caption or code line runs into the margin or over the footer. (Before 2026-12-02: 216 words on 41 pages.)"""
    block = _text_block()
    left = min(block["odd"], block["even"]) - OVERHANG_BP
    right = max(block["odd"], block["even"]) + block["width"] + OVERHANG_BP
    bottom = block["top"] + block["height"] + block["maxdepth"] + OVERHANG_BP  # the last line's depth
    footer = block["top"] + block["height"] + block["footskip"]
    bad = []
    for page, x0, y0, x1, y1, word in _words():
        in_footer = y0 >= footer - FOOTER_BAND_BP and y1 <= footer + FOOTER_BAND_BP / 2
        if x0 < left or x1 > right or (y1 > bottom and not in_footer):
            bad.append(f"p. {page}: {word[:20]!r} at x {x0:.0f}-{x1:.0f}, y {y0:.0f}-{y1:.0f}")
    pages = sorted({b.split(":")[0] for b in bad})
    assert not bad, (f"{len(bad)} words on {len(pages)} pages outside the text block (x {left:.0f}-{right:.0f}, "
                     f"bottom {bottom:.0f}, footer at {footer:.0f}): {bad[:8]}")
