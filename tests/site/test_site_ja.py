"""Checks of the Japanese edition of the site (issue 34; `make book` and `make book-ja` first): every page is
Japanese (lang="ja", no paragraph of English prose outside code, outputs, the API reference and the bibliography),
the language switcher links each page to its English copy and back, and equations have their MathJax markup.
SITE_HTML points at another build's root (the Japanese edition is its `ja/` folder)."""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import site_html
import yaml

ROOT = Path(__file__).resolve().parents[2]
HTML = Path(os.environ.get("SITE_HTML") or ROOT / "_build" / "html")
JA = HTML / "ja"
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())


def _files(entries: list[dict]) -> list[str]:
    return [f for e in entries for f in [e["file"], *_files(e.get("sections", []))]]


PAGES = [TOC["root"]] + [f for p in TOC.get("parts", []) for f in _files(p["chapters"])]
CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]
# Pages shown in English on purpose in this round (TRANSLATING.md, "What stays English"): the API reference (its
# docstrings, with a Japanese note at the top) and the bibliography (its entries).
ENGLISH_PAGES = {p for p in PAGES if p.startswith("api/")} | {"bibliography"}
# Everything the builder writes as a page in both editions: the table of contents' pages and its own.
BUILT = PAGES + ["genindex", "search"]


@pytest.fixture(scope="module", autouse=True)
def _built():
    if not (JA / "index.html").exists():
        pytest.fail("no Japanese edition in _build/html/ja: run `make book-ja` (after `make book`) first")


def _soup(root: Path, page: str):
    return site_html.shared(root / f"{page}.html")


def _switch(root: Path, page: str):
    links = _soup(root, page).select("a.language-switch[href]")
    assert len(links) == 1, f"{root.name}/{page}: {len(links)} language switchers"
    return links[0]


@pytest.mark.parametrize("page", BUILT)
def test_every_page_is_japanese(page):
    html = _soup(JA, page).find("html")
    assert html is not None and html.get("lang") == "ja", f"ja/{page}.html: <html lang={html and html.get('lang')!r}>"


@pytest.mark.parametrize("page", BUILT)
def test_the_switcher_links_the_same_page_both_ways(page):
    """A Japanese page's "English" link opens its English copy, whose "日本語" link opens the Japanese page again
    (relative URLs, so that the site works from file:// and from any server path)."""
    ja, en = _switch(JA, page), _switch(HTML, page)
    assert ja.get_text(strip=True) == "English" and ja.get("hreflang") == "en", ja
    assert en.get_text(strip=True) == "日本語" and en.get("hreflang") == "ja", en
    for link, here, there in ((ja, JA, HTML), (en, HTML, JA)):
        assert not urlparse(link["href"]).scheme and not link["href"].startswith("/"), f"not relative: {link}"
        target = ((here / page).parent / unquote(link["href"])).resolve()
        assert target == (there / f"{page}.html").resolve(), f"{here.name}/{page}: the switcher opens {target}"
        assert target.is_file(), f"{here.name}/{page}: the switcher's target {target} does not exist"


CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff00-\uffef]")
LATIN_WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")
# What is not prose of a paragraph: formulas, code, links (names, titles of works) and citations.
NOT_PROSE = {"names": frozenset({"script", "style", "code", "pre", "kbd", "a", "mjx-container"}),
             "classes": frozenset({"math", "bibtex-citation", "headerlink", "mjx-assistive-mml"})}
MAX_LATIN_WORDS = 8


def latin_prose(text: str) -> bool:
    """A paragraph that reads as English: more than MAX_LATIN_WORDS words of Latin letters, and more Latin letters
    than Japanese characters."""
    words = LATIN_WORD.findall(text)
    return len(words) > MAX_LATIN_WORDS and sum(map(len, words)) > len(CJK.findall(text))


def test_latin_prose_rule():
    assert latin_prose("The flow reaches the minimum in finite time when the step size is small enough.")
    assert not latin_prose("勾配降下法（gradient descent）はステップサイズ $\\eta$ の前進オイラー法である。")
    assert not latin_prose("Saxe, McClelland & Ganguli")


@functools.cache
def _english_paragraphs(page: str) -> list[str]:
    main = _soup(JA, page).find("main")
    out = []
    for p in main.find_all("p"):
        if p.find_parent(class_=["cell_output", "output", "untranslated"]) or "untranslated" in (p.get("class") or []):
            continue  # what code prints, and generated text marked as English (_ext/book_i18n.py)
        text = " ".join(site_html.text_without(p, **NOT_PROSE).split())
        if latin_prose(text):
            out.append(text[:100])
    return out


@pytest.mark.parametrize("page", [p for p in PAGES if p not in ENGLISH_PAGES])
def test_no_paragraph_of_english_prose(page):
    """Every paragraph of the page's text is Japanese: after removing formulas, code, links and citations, none is
    mostly Latin letters and longer than a few words (an untranslated or fuzzy message shows up here)."""
    english = _english_paragraphs(page)
    assert not english, f"ja/{page}: {len(english)} paragraphs in English, e.g. {english[:3]}"


@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("api/")])
def test_api_pages_say_they_are_english(page):
    note = _soup(JA, page).select_one("main p.api-language-note")
    assert note is not None and CJK.search(note.get_text()), f"ja/{page}: no Japanese note on the English reference"


@pytest.mark.parametrize("page", CHAPTERS)
def test_equations_have_their_mathjax_markup(page):
    soup = _soup(JA, page)
    scripts = [s["src"] for s in soup.find_all("script", src=True) if "mathjax" in s["src"].lower()]
    assert scripts, f"ja/{page}: no MathJax script"
    assert all((JA / page).parent.joinpath(unquote(urlparse(s).path)).resolve().is_file() for s in scripts), scripts
    assert soup.select("main span.math") and soup.select("main div.math"), f"ja/{page}: no math markup"
    assert "eqno" in str(soup.find("main")), f"ja/{page}: no numbered equation"


def test_the_landing_page_links_the_japanese_pdf():
    link = _soup(JA, TOC["root"]).select_one("a.pdf-edition")
    assert link is not None and link["href"].endswith("-ja.pdf"), link
    if not (JA / link["href"]).is_file():
        pytest.skip("no Japanese PDF edition in this build (make pdf-ja)")


def test_search_index_is_japanese():
    """Sphinx's Japanese splitter made the index: Japanese words are its terms, not whole sentences."""
    index = (JA / "searchindex.js").read_text(encoding="utf-8")
    terms = json.loads(index[index.index("(") + 1: index.rindex(")")])["terms"]
    assert {"勾配", "降下", "勾配流"} <= set(terms), "the Japanese search index lacks Japanese words"
    assert max(len(t) for t in terms if CJK.search(t)) < 20, "Japanese sentences indexed whole (no splitter)"


# ---- The glossary: a page of this edition only (glossary.md, _ext/book_i18n.py EDITION_PAGES) ----------------------
GLOSSARY = ROOT / "locales" / "ja" / "glossary.md"


def glossary_rows() -> list[list[str]]:
    """The rows of locales/ja/glossary.md's table, as its Markdown has them: [English, 日本語, 説明]."""
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and not set(cells[0]) <= set("-: ") and cells[:2] != ["English", "日本語"]:
            rows.append(cells)
    return rows


def _as_html_text(markdown: str) -> str:
    """A cell's text as the page shows it before MathJax runs: $x$ becomes \\(x\\)."""
    return re.sub(r"\$([^$]+)\$", r"\\(\1\\)", markdown)


def test_the_glossary_page_is_linked_from_the_landing_page_and_the_navigation():
    assert (JA / "glossary.html").is_file(), "no ja/glossary.html: the glossary page is missing from the edition"
    soup = _soup(JA, "glossary")
    assert soup.find("html").get("lang") == "ja" and soup.find("h1").get_text(strip=True).startswith("用語集")
    landing = _soup(JA, TOC["root"])
    assert landing.select("main a[href='glossary.html']"), "the Japanese landing page does not link the glossary"
    nav = [a["href"] for a in landing.select("nav.bd-docs-nav a.reference")]
    assert "glossary.html" in nav and nav.index("glossary.html") == nav.index("notation.html") + 1, nav
    # the English edition has no copy: the page's switcher opens the English landing page
    assert not (HTML / "glossary.html").exists()
    target = (JA / unquote(_switch(JA, "glossary")["href"])).resolve()
    assert target == (HTML / f"{TOC['root']}.html").resolve(), target


def test_the_glossary_page_has_every_row_with_a_japanese_gloss():
    rows = glossary_rows()
    assert len(rows) >= 150 and all(len(r) == 3 for r in rows), [r for r in rows if len(r) != 3][:3]
    no_gloss = [r[0] for r in rows if r[2] in ("", "—", "-") or not CJK.search(r[2])]
    assert not no_gloss, f"{len(no_gloss)} glossary rows without a Japanese gloss: {no_gloss[:5]}"
    shown = _soup(JA, "glossary").select("main div.glossary-table table tbody tr")
    cells = [[" ".join(td.get_text().split()) for td in tr.find_all("td")] for tr in shown]
    expected = [[_as_html_text(r[0]), _as_html_text(r[1])] for r in rows]
    assert [c[:2] for c in cells] == expected, "the page's rows (English, 日本語) differ from the glossary's"
    for (en, _, gloss), tr, (*_, text) in zip(rows, shown, cells, strict=True):
        assert CJK.search(text) and text not in ("—", "-"), f"{en}: the page shows no Japanese gloss ({text!r})"
        spans = tr.find_all("td")[2].select("span.math")
        assert len(spans) == gloss.count("$") // 2, f"{en}: {len(spans)} formulas typeset, {gloss!r}"
