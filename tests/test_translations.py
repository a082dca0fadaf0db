"""The Japanese catalogs (issue 34; locales/ja/TRANSLATING.md), checked as `scripts/po_check.py` checks them, page by
page: every catalog of a required page (`po_check.required_catalogs`: the book's pages but the API reference) parses,
has no fuzzy message, keeps every math span, role, label, URL and the rest byte-identical, and is complete; and the
translations use the glossary's terms (locales/ja/glossary.md).

The completeness test fails while a page is still being translated: that is its purpose (it is the test of a
finished edition); the others hold at every stage of the translation."""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import po_check  # noqa: E402  (the checker translators run; the rules live there)

CATALOGS = po_check.required_catalogs("ja")
GLOSSARY = ROOT / "locales" / "ja" / "glossary.md"


@functools.cache
def _report(page: str) -> po_check.Report:
    path = CATALOGS[page]
    if not path.is_file():
        pytest.fail(f"no catalog {path.relative_to(ROOT)}: run `make gettext`")
    return po_check.check_file(path)


def test_the_required_pages_are_the_book_but_the_api_reference():
    pages = po_check.required_pages()
    assert "intro" in pages and "chapters/00_preface" in pages and "benchmarks" in pages
    assert not [p for p in pages if p.startswith("api/")]
    assert set(pages) | {p for p in po_check.toc_pages() if p.startswith("api/")} == set(po_check.toc_pages())


@pytest.mark.parametrize("page", CATALOGS)
def test_catalog_has_no_fuzzy_message_and_keeps_every_fixed_part(page):
    report = _report(page)
    assert not report.problems, f"{page}.po: {len(report.problems)} problems:\n" + "\n".join(report.problems[:20])


@pytest.mark.parametrize("page", CATALOGS)
def test_catalog_is_complete(page):
    report = _report(page)
    assert not report.untranslated, (f"{page}.po: {report.untranslated} of {report.messages} messages untranslated, "
                                     f"e.g. {[po_check._short(m, 70) for m in report.lists['untranslated'][:3]]}")


def test_po_check_finds_the_problems_it_names():
    """The checker the tests above rely on: a changed math span, a dropped role, a lost line break rule."""
    assert po_check.check_message("See $x_k$ and {eq}`eq-a`.", "$x_k$ と {eq}`eq-a` を見よ。", "ja") == []
    assert po_check.check_message("See $x_k$.", "$x_{k}$ を見よ。", "ja")
    assert po_check.check_message("See {eq}`eq-a`.", "式を見よ。", "ja")
    assert po_check.check_message("See [the page](https://a.b).", "[ページ](https://c.d) を見よ。", "ja")
    assert po_check.check_message("Proof. Easy.", "易しい。", "ja")


# ---- The glossary ------------------------------------------------------------------------------------------------

def glossary(path: Path = GLOSSARY) -> list[tuple[str, str]]:
    """The glossary's rows as (English, 日本語) pairs: the first two cells of each row of its table."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or set(cells[0]) <= set("-: "):
            continue  # not a row, or the rule under the header
        if cells[:2] == ["English", "日本語"]:
            continue
        rows.append((cells[0], cells[1]))
    return rows


def terms(rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(English term, Japanese form) for each alternative of a row: `a / b` pairs with `x / y`, parenthesised
    additions are dropped (`gradient descent (GD)`, `loss (function)`), and a one-word alternative takes the noun
    of the next (`sharp / flat minimum`: `sharp minimum`)."""
    out = []
    for en, ja in rows:
        ens = [re.sub(r"\s*\([^)]*\)", "", e).strip() for e in en.split(" / ")]
        jas = [re.sub(r"\s*[（(][^）)]*[）)]", "", j).strip() for j in ja.split(" / ")]
        jas = jas if len(jas) == len(ens) else [jas[0]] * len(ens)
        for i, (e, j) in enumerate(zip(ens, jas, strict=True)):
            if len(ens) == 2 and i == 0 and " " not in e and " " in ens[1] and not e.endswith("ed"):
                e = f"{e} {ens[1].split()[-1]}"
            out.append((e, j))
    return out


def japanese_parts(form: str) -> list[str]:
    """What a translation must contain for a glossary form, allowing Japanese inflection: the form without its
    trailing kana ending or 的 (釣り合った: 釣り合, 鋭い: 鋭, 対照的: 対照), split at の (表現の崩壊: 表現, 崩壊)."""
    parts = []
    for part in re.split(r"の", form):
        stem = re.sub(r"(?:[\u3041-\u3093]+|的)$", "", part.strip())
        parts.append(stem or part.strip())
    return [p for p in parts if p]


# Where a glossary term's English word is used in another sense than the glossary's, the term is not looked for. Each
# entry: a pattern of the uses that are the other sense (or None: never checked), and why. Keep this list small.
OTHER_SENSE: dict[str, tuple[str | None, str]] = {
    "bound": (None, "the glossary's sense is a kind of check (不等式); in the prose a bound is mostly an upper or "
                    "lower bound (上界, 下界), which is not a check"),
    "check": (r"(?:let's|to|and|then|we|[,;:]|self-|nobody|did|not)\s*checks?\b|\bchecks? (?:that|whether|it|them|"
              r"both|this|the|your|of|numerically)\b|section checks|^checks?\b",
              "the verb (確かめる, 照合する) and the self-check of an exercise (自己チェック); the glossary's 検証 is "
              "the noun, a numerical check of the book"),
    "claim": (r"\b(?:modes|proposition|theorem|lemma|it|paper|as) +claims?\b", "the verb (a theorem claims: 主張する)"),
    "separable data": (r"(?<!linearly )separable data", "the glossary's 線形分離可能 is *linearly* separable; "
                                                        "separable alone is 分離可能"),
    "margin": (r".", "the classification margin (マージン) is Chapters 5 and 7's; elsewhere a margin is the room a "
                     "check leaves (余裕): see MARGIN_PAGES"),
    "kernel": (r"kernel vector|kernels are|kernel of", "the kernel (null space) of a matrix: 核"),
    "balance": (r"\bbalances\b", "the verb (to balance a drive: 釣り合う, or つり合う)"),
    "minimiser": (r"numerical minimiser", "an optimisation routine (最小化), not a point"),
    "admissible": (r".", "admissible (許容的) is Chapter 1's statistical term; elsewhere it means allowed: see "
                         "ADMISSIBLE_PAGES"),
    "observation": (r"(?<!an )(?<!An )(?<!Three )(?<!Two )\bobservations?\b",
                    "data points (観測) and remarks (観察した事実) in general; the glossary's 観察 is the kind "
                    "of check (an observation, two or three observations, recorded as an observation)"),
}
MARGIN_PAGES = {"chapters/05_implicit_bias", "chapters/07_large_stepsize"}
ADMISSIBLE_PAGES = {"chapters/01_linear_regression"}


def _applies(term: str, page: str, text: str) -> bool:
    """Whether the English of the message uses the term in the glossary's sense."""
    pattern = re.compile(r"(?<![\w-])" + re.escape(term).replace(r"\ ", r"[\s-]+") + r"(?:s|es)?\b", re.I)
    if term == "margin" and page in MARGIN_PAGES or term == "admissible" and page in ADMISSIBLE_PAGES:
        return bool(pattern.search(text))
    other, _ = OTHER_SENSE.get(term, ("", ""))
    if other is None:
        return False
    for m in pattern.finditer(text):
        around = text[max(0, m.start() - 25): m.end() + 25]
        if not other or not re.search(other, around, re.I | re.M):
            return True
    return False


def test_glossary_parses_into_rows():
    rows = glossary()
    assert len(rows) >= 80, len(rows)
    assert ("sharpness", "シャープネス") in rows and ("gradient flow", "勾配流") in rows
    found = dict(terms(rows))
    assert found["gradient descent"] == "勾配降下法" and found["sharp minimum"] == "鋭い"
    assert found["eigenvector"] == "固有ベクトル" and found["loss"] == "損失"
    assert japanese_parts("表現の崩壊") == ["表現", "崩壊"] and japanese_parts("釣り合った") == ["釣り合"]
    assert all(re.search(r"[\u3040-\u9fff]", j) or j.isascii() for _, j in found.items())
    assert set(OTHER_SENSE) <= set(found), "an exception names no glossary term"


def _messages(page: str):
    with CATALOGS[page].open("rb") as f:
        for message in read_po(f):
            if message.id and isinstance(message.string, str) and message.string and not message.fuzzy:
                yield message.id, message.string


@pytest.mark.parametrize("page", [p for p in CATALOGS if CATALOGS[p].is_file()])
def test_translations_use_the_glossary_terms(page):
    """Each translated message whose English (outside math, code, roles and links) uses a glossary term, in the
    glossary's sense, has the glossary's Japanese for it (up to inflection)."""
    found = terms(glossary())
    wrong = []
    for msgid, msgstr in _messages(page):
        _, text = po_check.fixed_parts(msgid)
        msgstr = msgstr.replace("*", "")  # 勾配*流*: emphasis inside a term
        for term, form in found:
            if _applies(term, page, text) and not all(p in msgstr for p in japanese_parts(form)):
                wrong.append(f"{term!r} -> {form!r}: {po_check._short(msgid, 70)!r} / {po_check._short(msgstr, 50)!r}")
    assert not wrong, f"{page}.po: {len(wrong)} translations without the glossary's term:\n" + "\n".join(wrong[:15])


def test_every_glossary_row_has_a_one_line_japanese_gloss():
    """The third column is the reader's gloss (the Japanese edition's 用語集 page shows the table): Japanese, never
    the placeholder —; a | inside a cell would split the row (write \\lvert or \\Vert in math)."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in GLOSSARY.read_text(encoding="utf-8").splitlines() if line.startswith("|")][2:]
    assert len(rows) == len(glossary()) and all(len(r) == 3 for r in rows), [r for r in rows if len(r) != 3][:3]
    bad = [r[0] for r in rows if r[2] in ("", "—") or not re.search(r"[\u3040-\u30ff\u3400-\u9fff]", r[2])]
    assert not bad, f"{len(bad)} glossary rows without a Japanese gloss: {bad[:5]}"
