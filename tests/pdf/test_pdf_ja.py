"""The Japanese PDF edition (`make pdf-ja`, after `make book-ja`): it is built, has every chapter under its Japanese
title, embeds its fonts (the IPAex fonts for Japanese among them), and XeLaTeX dropped no character for want of a
glyph."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[2]
PDF = ROOT / "_build" / "html" / "ja" / "learning-dynamics-of-gradient-descent-ja.pdf"
LOG = ROOT / "_build" / "latex-ja" / "book.log"
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
