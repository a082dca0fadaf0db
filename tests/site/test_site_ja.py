"""Checks of the Japanese edition of the site (issue 34; `make book` and `make book-ja` first): every page is
Japanese (lang="ja", no paragraph of English prose outside code, outputs, the API reference and the bibliography),
the language switcher links each page to its English copy and back, and equations have their MathJax markup.
SITE_HTML points at another build's root (the Japanese edition is its `ja/` folder)."""

from __future__ import annotations

import functools
import json
import os
import posixpath
import re
import sys
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


# ---- The site's own words (_ext/book_i18n.py SITE_WORDS): what no page source holds -------------------------------
sys.path.insert(0, str(ROOT / "_ext"))
from book_i18n import SITE_WORDS  # noqa: E402
from book_latex import STRINGS  # noqa: E402

TITLE = yaml.safe_load((ROOT / "_config.yml").read_text())["title"]
INTRO_PO = ROOT / "locales" / "ja" / "LC_MESSAGES" / f"{TOC['root']}.po"
PARTS = [p["caption"] for p in TOC["parts"] if p.get("caption")]
# English that a Japanese page keeps in its frame (header, sidebars, footer) on purpose: the switcher names the other
# edition in its own language (lang="en"), file types and product names on buttons, the keyboard shortcut's keys, the
# conventional copyright line; screen readers' landmark names of the themes' fixed markup (not shown). The sidebar's
# entries of the API reference are its pages' English titles (ENGLISH_PAGES), and a page's contents list the headings
# it keeps English on purpose (lang="en": generated text), as the printed copy of an English page's title does;
# formulas are not words.
FRAME_ENGLISH = {"English", "Read this page in English", "Colab", "Colab logo", ".ipynb", ".md", ".pdf", "Ctrl", "K",
                 "© Copyright 2026.", "Main", "Page"}
UI_ATTRIBUTES = ("title", "aria-label", "placeholder", "data-bs-title", "alt")


@functools.cache
def _intro_catalog() -> dict[str, str]:
    from babel.messages.pofile import read_po

    with INTRO_PO.open("rb") as f:
        return {m.id: m.string for m in read_po(f) if isinstance(m.id, str) and m.string and not m.fuzzy}


def _latin_only(text: str) -> bool:
    return bool(re.search(r"[A-Za-z]{2}", text)) and not CJK.search(text)


@pytest.mark.parametrize("page", BUILT)
def test_the_sidebar_names_the_parts_in_japanese(page):
    """The sidebar's part captions (_toc.yml's, inserted by sphinx-external-toc after Sphinx translated the page) are
    the part names of the landing page's catalog, as in the PDF."""
    catalog = _intro_catalog()
    expected = [catalog.get(c) for c in PARTS]
    assert all(expected), f"{INTRO_PO.name} lacks a part name: {dict(zip(PARTS, expected, strict=True))}"
    shown = [" ".join(c.get_text().split()) for c in _soup(JA, page).select("nav.bd-docs-nav p.caption")]
    assert shown == expected, f"ja/{page}: the sidebar's parts are {shown}"


def _links_english(soup, page: str, el) -> bool:
    """Whether el is (in) a link to a page or a heading that is English on purpose."""
    link = el if el.name == "a" else el.find_parent("a")
    if link is None or not link.get("href"):
        return False
    url = urlparse(link["href"])
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page), url.path)).removesuffix(".html") \
        if url.path else page
    if target in ENGLISH_PAGES:
        return True
    section = soup.find(id=url.fragment) if url.fragment and target == page else None
    heading = section.find(re.compile("^h[1-6]$")) if section is not None else None
    return heading is not None and heading.get("lang") == "en"


@pytest.mark.parametrize("page", BUILT)
def test_the_frame_of_every_page_is_japanese(page):
    """Outside the article (header, sidebars, footer), no text and no tooltip or label is English but FRAME_ENGLISH
    and the other edition's switcher: the title, the author, the footer's line, the search field, the buttons."""
    soup = _soup(JA, page)
    article = soup.find("article")
    english = set()
    for el in soup.body.find_all(True):
        if el is article or el.find_parent("article") or el.get("lang") == "en" or el.find_parent(lang="en"):
            continue
        if "math" in (el.get("class") or []) or el.find_parent(class_="math") or _links_english(soup, page, el):
            continue
        if page in ENGLISH_PAGES and (el.get("id") == "jb-print-docs-body" or el.find_parent(id="jb-print-docs-body")):
            continue  # the title and contents that a printed page repeats
        if el.name not in ("script", "style", "code", "kbd"):
            texts = [s for s in el.find_all(string=True, recursive=False) if type(s).__name__ == "NavigableString"]
            english |= {t for t in (" ".join(s.split()) for s in texts) if _latin_only(t)}
        english |= {v for a in UI_ATTRIBUTES if isinstance(v := el.get(a), str) and _latin_only(v)}
    english -= FRAME_ENGLISH
    assert not english, f"ja/{page}: English in the page's frame: {sorted(english)}"
    title = _intro_catalog()[TITLE]
    assert soup.title.get_text().endswith(title) and soup.select_one(".logo__title").get_text(strip=True) == title


@pytest.mark.parametrize("page", CHAPTERS)
def test_the_chapters_own_interface_is_japanese(page):
    """In the article: every solution's title is 解答 (sphinx-exercise's "Solution"; STRINGS, as in the PDF), every
    folded code cell's toggle and its label are Japanese (myst-nb's "Show code cell source"), and so are the
    headings' link tooltips, the links to the API reference and the widgets' snapshot note."""
    main = _soup(JA, page).find("main")
    titles = [t.get_text(strip=True) for t in main.select(".solution > p.admonition-title")]
    assert "Solution" not in titles and all(t == STRINGS["ja"]["solution"] for t in titles), f"ja/{page}: {titles}"
    prompts = {" ".join(p.get_text().split()) for p in main.select("details.hide > summary p.admonition-title")}
    words = {w for pair in SITE_WORDS["ja"]["code_prompts"].values() for w in pair}
    assert prompts <= words, f"ja/{page}: code-cell toggles {sorted(prompts - words)}"
    text = main.get_text(" ")
    for english in ("Show code cell", "Hide code cell", "Static snapshot", "Run it on Colab"):
        assert english not in text, f"ja/{page}: {english!r}"
    labels = {el.get(a) for a in ("title", "aria-label") for el in main.select(f"[{a}]")}
    fixed = {"Toggle hidden content", "Link to this heading", "Link to this equation", "Link to this image",
             "Link to this table", "Link to this code"}
    assert not labels & fixed, f"ja/{page}: {sorted(labels & fixed)}"
    assert not [v for v in labels if v and v.endswith("in the API reference")], f"ja/{page}: English API link titles"


def test_the_chapters_have_the_translated_interface():
    """The checks above see something: solutions, folded cells and API links on the chapters' pages."""
    mains = [_soup(JA, p).find("main") for p in CHAPTERS]
    assert sum(len(m.select(".solution > p.admonition-title")) for m in mains) >= 20
    assert sum(len(m.select("details.hide > summary")) for m in mains) >= 20
    assert any(m.select("a.api-link[title^='API リファレンスの']") for m in mains)
