"""The Japanese PDF edition (`make pdf-ja`, after `make book-ja`): it is built, has every chapter under its Japanese
title, embeds its fonts (the IPAex fonts for Japanese among them), and XeLaTeX dropped no character for want of a
glyph. What the LaTeX layer writes itself (running heads, chapter and part labels, the generated chapters' headings,
the title page, theorem names) is Japanese too (_ext/book_latex.py's STRINGS): English stays only where the
Japanese site has it on purpose (code, check output, the API reference, generated reports, the bibliography's
entries), never in a running head or a heading the LaTeX layer makes."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from babel.messages.pofile import read_po

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_ext"))
from book_latex import STRINGS  # noqa: E402  (the LaTeX layer's words by language)

ROOT = Path(__file__).resolve().parents[2]
PDF = ROOT / "_build" / "html" / "ja" / "learning-dynamics-of-gradient-descent-ja.pdf"
LOG = ROOT / "_build" / "latex-ja" / "book.log"
TEX = ROOT / "_build" / "latex-ja" / "book.tex"
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CHAPTERS = [c["file"] for p in TOC["parts"] for c in p["chapters"] if c["file"].startswith("chapters/")]


@pytest.fixture(scope="module")
def text() -> str:
    if not PDF.exists():
        pytest.fail("no Japanese PDF edition: run `make pdf-ja` first")
    out = subprocess.run(["pdftotext", str(PDF), "-"], capture_output=True, text=True, check=True)
    return "".join(out.stdout.split())  # Japanese has no spaces; pdftotext breaks lines anywhere


def _japanese_title(chapter: str) -> str:
    title = next(line[2:].strip() for line in (ROOT / f"{chapter}.md").read_text().splitlines()
                 if line.startswith("# "))
    with (ROOT / "locales" / "ja" / "LC_MESSAGES" / f"{chapter}.po").open("rb") as f:
        message = read_po(f).get(title)
    return message.string if message is not None and message.string and not message.fuzzy else title


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_is_there_under_its_japanese_title(text, chapter):
    words = "".join(re.sub(r"\$[^$]*\$|[\\{}]", "", _japanese_title(chapter)).split())
    head = re.split(r"[：:]", words)[0][:20]
    assert head in text, f"{chapter}: title {head!r} not in the PDF"


def test_the_front_and_back_matter_are_there(text):
    assert "目次" in text, "the table of contents is not titled 目次"
    assert text.count("勾配降下法") > 50, "the text is not Japanese"


def test_fonts_are_embedded_with_a_japanese_font():
    out = subprocess.run(["pdffonts", str(PDF)], capture_output=True, text=True, check=True).stdout.splitlines()[2:]
    assert out, "no fonts listed"
    rows = [line.split() for line in out if line.strip()]
    not_embedded = [r[0] for r in rows if r[-5] != "yes"]  # name, type, encoding, emb, sub, uni, object, gen
    assert not not_embedded, f"fonts not embedded: {not_embedded}"
    assert any("IPAex" in r[0] for r in rows), "no IPAex font: Japanese is not set in a Japanese font"


def test_no_missing_glyph_or_undefined_reference_in_the_latex_log():
    log = LOG.read_text(errors="replace")
    missing = re.findall(r"Missing character: There is no (.*?) in font (.*?)!", log)
    assert not missing, f"{len(missing)} characters dropped for want of a glyph, e.g. {missing[:5]}"
    assert not re.search(r"Reference .* undefined|Citation .* undefined", log)


@pytest.fixture(scope="module")
def pages() -> list[list[str]]:
    """Each page's non-empty lines, as laid out (the first is the running head, the last the running foot)."""
    if not PDF.exists():
        pytest.fail("no Japanese PDF edition: run `make pdf-ja` first")
    out = subprocess.run(["pdftotext", "-layout", str(PDF), "-"], capture_output=True, text=True, check=True)
    return [[line.strip() for line in page.splitlines() if line.strip()] for page in out.stdout.split("\f")]


# What the English edition's LaTeX layer prints in running heads and generated headings.
ENGLISH_HEADS = re.compile(r"\bChapter\b|\bCHAPTER\b|\bAppendix\b|\bAPPENDIX\b|\bPart\s+[IVX]+\b|"
                           r"About this book|ABOUT THIS BOOK|Solutions? to|Solutions\b|Bibliography|BIBLIOGRAPHY|"
                           r"\bContents\b|\bIndex\b|Learning dynamics of gradient descent")
TITLE = "勾配降下法の学習ダイナミクス"  # the landing page's title in locales/ja/LC_MESSAGES/intro.po


def test_no_english_running_head_or_foot(pages):
    """The running head (the book's title) and foot (the chapter, appendix or section) of every page are Japanese
    (an API page's foot names its appendix "API reference", whose title the Japanese edition keeps English)."""
    english = [(number, line) for number, page in enumerate(pages, 1) if len(page) > 1
               for line in (page[0], page[-1]) if ENGLISH_HEADS.search(line)]
    assert not english, f"{len(english)} running heads or feet in English, e.g. {english[:5]}"
    heads = [page[0] for page in pages if page]
    assert sum(TITLE in h for h in heads) > len(pages) / 2, "the running head is not the Japanese title"
    feet = " ".join(page[-1] for page in pages if page)
    for label in ("第1章", "第8章", "付録B", "付録E", "参考文献"):
        assert label in feet.replace(" ", ""), f"no running foot with {label}"


def test_generated_headings_and_labels_are_japanese(text, pages):
    ja = STRINGS["ja"]
    for heading in (ja["about"], ja["solutions"], "第1章", "第8章", "付録A", "付録E", "第I部", "第IV部", "参考文献",
                    "索引", "定理1.1", "注意4.1", "命題2.1", "練習1.1(", ja["solution_to"].format(exercise="").strip()):
        assert heading.replace(" ", "") in text, f"{heading!r} is not in the Japanese PDF"
    first = "".join("".join(pages[0]).split())
    assert TITLE in first and ja["author"].replace(" ", "") in first, "the title page is not Japanese"
    info = subprocess.run(["pdfinfo", str(PDF)], capture_output=True, text=True, check=True).stdout
    assert re.search(rf"^Title:\s+{TITLE}$", info, re.M), "the PDF's metadata title is not Japanese"
    for english in ("Aboutthisbook", "ABOUTTHISBOOK", "Solutionstotheexercises", "Solutionto", "BIBLIOGRAPHY"):
        assert english not in text, f"the English heading {english!r} is in the Japanese PDF"


def test_the_latex_layer_writes_no_english_heading():
    """In the LaTeX source: every chapter, part and solution heading the LaTeX layer makes, and the theorem boxes'
    names, are the Japanese ones (the preamble sets LaTeX's own names)."""
    tex = TEX.read_text()
    en, ja = STRINGS["en"], STRINGS["ja"]
    parts = re.findall(r"\\part\{([^}]*)\}", tex)
    assert parts and not [p for p in parts if re.search(r"[A-Za-z]{3}", p)], f"parts in English: {parts}"
    assert f"\\chapter{{{ja['about']}}}" in tex and f"\\chapter{{{ja['solutions']}}}" in tex
    for english in (en["about"], en["solutions"], en["solutions_intro"][:30], en["solution_to"].split("{")[0]):
        assert english not in tex, f"{english!r} in the Japanese LaTeX"
    boxes = re.findall(r"\\begin\{sphinxadmonition\}\{note\}\{([A-Z][a-z]+) [0-9.]+\(", tex)
    assert not boxes, f"theorem-like boxes with English names: {sorted(set(boxes))}"
    preamble = tex.split("\\begin{document}")[0]
    assert "\\renewcommand{\\chaptername}{第}" in preamble and "\\renewcommand{\\bibname}{参考文献}" in preamble
    log = LOG.read_text(errors="replace")
    assert "BOOK-WARNING" not in log, "a LaTeX name was not set (see BOOK-WARNING in the log)"
