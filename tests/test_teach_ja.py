"""learndyn.teach --lang ja: Japanese student notebooks and nbgrader assignments from the catalogs (issue 34).

Nothing is executed: the student editions are made from the chapters' sources and the catalogs
(locales/ja/LC_MESSAGES/chapters/*.po) by `learndyn.i18n`.
"""

import re
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from learndyn import i18n, teach
from learndyn.exercises import CHECKS

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ["01_linear_regression", "05_implicit_bias"]
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff01-\uff60]")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$]+\$", re.S)


def _math(text: str) -> Counter:
    """The math spans of a text, whitespace inside them normalised (a soft line break of the English source is a
    space in a translation, which is one line)."""
    return Counter(" ".join(span.split()) for span in MATH.findall(text))


def _notebooks(stem: str):
    md = ROOT / "chapters" / f"{stem}.md"
    return teach.student_notebook(md), teach.student_notebook(md, lang="ja")


@pytest.fixture(scope="module", params=CHAPTERS)
def pair(request):
    return _notebooks(request.param)


def _latin_prose(markdown: str) -> list[str]:
    """The paragraphs of a markdown cell with English words and no Japanese, once math, code, roles, link targets,
    labels, directive fences and their options are set aside (a math-only, code-only or link-only block passes)."""
    text = re.sub(r"^(`{3,}|:{3,})\{(index|code-cell|math)\}.*?^\1[ \t]*$", "", markdown, flags=re.M | re.S)
    text = re.sub(r"^\s*(`{3,}|:{3,})(\{[\w:-]+\})?|^\s*:[\w-]+:.*$|^\|[-| :]+\|$", " ", text, flags=re.M)
    text = MATH.sub(" ", text)
    text = re.sub(r"\{[\w:-]+\}`[^`]*`|`[^`]*`|\]\([^)]*\)|^\s*\([\w-]+\)=?\s*$", " ", text, flags=re.M)
    return [p.strip() for p in re.split(r"\n\s*\n", text)
            if re.search(r"[A-Za-z]{3,}", p) and not CJK.search(p)]


def test_every_prose_block_of_a_japanese_student_notebook_is_japanese(pair):
    english, japanese = pair
    assert [c.cell_type for c in english.cells] == [c.cell_type for c in japanese.cells]
    assert sum(bool(_latin_prose(c.source)) for c in english.cells if c.cell_type == "markdown") > 20
    for en, ja in zip(english.cells, japanese.cells, strict=True):
        if ja.cell_type != "markdown":
            continue
        assert _latin_prose(ja.source) == [], f"English prose left in a Japanese cell:\n{ja.source[:300]}"
        if _latin_prose(en.source):
            assert CJK.search(ja.source), ja.source[:300]


def test_japanese_student_notebook_keeps_code_math_and_structure(pair):
    english, japanese = pair
    assert japanese.metadata.get("language") == "ja"
    for en, ja in zip(english.cells, japanese.cells, strict=True):
        if en.cell_type == "code":
            assert ja.source == en.source  # byte for byte
            assert {k: v for k, v in ja.metadata.items() if k != "mystnb"} == \
                {k: v for k, v in en.metadata.items() if k != "mystnb"}
        else:
            assert _math(ja.source) == _math(en.source), en.source[:200]
            labels = re.compile(r"^\([\w-]+\)=$|^:label: \S+$|^```\{[\w:-]+\}", re.M)
            assert labels.findall(ja.source) == labels.findall(en.source)


def test_figure_captions_are_translated_and_the_self_check_line_too():
    english, japanese = _notebooks("01_linear_regression")
    captions = [(en.metadata["mystnb"]["figure"]["caption"], ja.metadata["mystnb"]["figure"]["caption"])
                for en, ja in zip(english.cells, japanese.cells, strict=True)
                if en.cell_type == "code" and "figure" in en.metadata.get("mystnb", {})]
    assert captions and all(CJK.search(ja) and _math(ja) == _math(en) for en, ja in captions)
    line = i18n.TEXT["ja"]["The self-check says what is wrong without giving the answer away:"]
    assert any(c.source.strip() == line for c in japanese.cells if c.cell_type == "markdown")


def test_notebooks_command_translates_every_chapter_completely(tmp_path, capsys):
    out = tmp_path / "student-ja"
    assert teach.main(["--book", str(ROOT), "notebooks", "--out", str(out), "--lang", "ja"]) == 0
    assert "warning" not in capsys.readouterr().err
    written = sorted(p.stem for p in out.glob("*.ipynb"))
    assert written == sorted(p.stem for p in (ROOT / "chapters").glob("*.md"))
    for path in out.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                assert _latin_prose(cell.source) == [], f"{path.name}: {cell.source[:200]}"


def test_japanese_assignment_matches_the_english_one_but_for_the_prose(tmp_path, capsys):
    autograded, manual = ["ex-pre-slope", "ex-soudry-second-margin"], ["ex-linreg-wishart"]
    assert teach.main(["--book", str(ROOT), "assignment", "wk1", "--exercises", ",".join(autograded),
                       "--manual", ",".join(manual), "--out", str(tmp_path / "course"), "--lang", "ja"]) == 0
    japanese = nbformat.read(tmp_path / "course" / "source" / "wk1" / "wk1.ipynb", as_version=4)
    english = teach.assignment_notebook("wk1", autograded, manual, book=ROOT)
    nbformat.validate(japanese)
    assert [c.cell_type for c in japanese.cells] == [c.cell_type for c in english.cells]
    for en, ja in zip(english.cells, japanese.cells, strict=True):
        assert ja.metadata.get("nbgrader") == en.metadata.get("nbgrader")
        if en.cell_type == "code":
            assert ja.source == en.source
        else:
            assert CJK.search(ja.source), ja.source[:200]
            assert _latin_prose(ja.source) == [], ja.source[:300]
            assert _math(ja.source) == _math(en.source)
    assert "## 練習 1：" in japanese.cells[2].source and "序章" in japanese.cells[2].source
    assert any("### BEGIN SOLUTION" in c.source and c.cell_type == "markdown" for c in japanese.cells)


def test_every_checked_exercise_has_a_japanese_task():
    assert set(i18n.TASKS["ja"]) == set(CHECKS)
    for label, task in i18n.TASKS["ja"].items():
        assert re.findall(r"`[^`]+`", task) == re.findall(r"`[^`]+`", CHECKS[label].task), label


@pytest.mark.parametrize("call", [
    lambda: teach.student_notebook(ROOT / "chapters" / "01_linear_regression.md", lang="xx"),
    lambda: teach.write_student_notebooks("unused-out", book=ROOT, lang="fr"),
    lambda: teach.assignment_notebook("a", ["ex-pre-slope"], book=ROOT, lang="jp"),
    lambda: i18n.check_lang(3, ROOT),
])
def test_an_unknown_language_is_a_value_error_naming_lang(call):
    with pytest.raises(ValueError, match=r"lang must be .*\bja\b"):
        call()


def test_unknown_language_on_the_command_line(tmp_path, capsys):
    assert teach.main(["--book", str(ROOT), "notebooks", "--out", str(tmp_path / "x"), "--lang", "de"]) == 2
    assert "lang must be" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_english_is_the_default_and_en_is_accepted():
    md = ROOT / "chapters" / "00_preface.md"
    explicit, default = teach.student_notebook(md, lang="en"), teach.student_notebook(md)
    assert [(c.cell_type, c.source) for c in explicit.cells] == [(c.cell_type, c.source) for c in default.cells]
    assert "language" not in default.metadata
    assert i18n.check_lang(None, ROOT) is None and "ja" in i18n.languages(ROOT)


# ---------------------------------------------------------------------------------------------------------------
# a small book: the extraction's quirks, and a message without translation
CHAPTER = """# A title

```{prf:theorem} Big result
:label: thm-x

The theorem's text with $x^2$.
```

```{prf:proof}
1. First step, by $y$.
2. Second step.
```

| Name | Value |
|---|---|
| one cell | $1$ |

- An item that goes on
  over two lines.

$$
a = b
$$ (eq-x)

A paragraph nobody translated.
"""
PO = {
    "A title": "題名",
    "(Big result)": "(大きな結果)",
    "The theorem's text with $x^2$.": "$x^2$ を含む定理の文。",
    "Proof. 1. First step, by $y$.": "証明. 1. 最初の段階、$y$ による。",
    "Second step.": "第二段階。",
    "Name": "名前",
    "Value": "値",
    "one cell": "1 つのセル",
    "An item that goes on over two lines.": "2 行にわたる項目。",
}


@pytest.fixture
def small_book(tmp_path):
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\n", encoding="utf-8")
    (tmp_path / "_config.yml").write_text("parse:\n  myst_enable_extensions: [dollarmath, amsmath, colon_fence]\n",
                                          encoding="utf-8")
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "01_x.md").write_text(CHAPTER, encoding="utf-8")
    po = tmp_path / "locales" / "ja" / "LC_MESSAGES" / "chapters" / "01_x.po"
    po.parent.mkdir(parents=True)
    entries = "".join(f'msgid "{_esc(k)}"\nmsgstr "{_esc(v)}"\n\n' for k, v in PO.items())
    entries += 'msgid "A paragraph nobody translated."\nmsgstr ""\n'
    po.write_text('msgid ""\nmsgstr ""\n"Language: ja\\n"\n"Content-Type: text/plain; charset=utf-8\\n"\n\n' + entries,
                  encoding="utf-8")
    return tmp_path


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def test_translate_myst_handles_theorem_titles_proofs_tables_and_list_items(small_book):
    catalog = i18n.load_catalog(small_book, "ja", "chapters/01_x")
    out = i18n.translate_myst(CHAPTER, catalog, small_book)
    assert "```{prf:theorem} 大きな結果\n:label: thm-x\n\n$x^2$ を含む定理の文。\n```" in out
    assert "```{prf:proof}\n1. 最初の段階、$y$ による。\n2. 第二段階。\n```" in out
    assert "| 名前 | 値 |\n|---|---|\n| 1 つのセル | $1$ |" in out
    assert "- 2 行にわたる項目。\n\n$$\na = b\n$$ (eq-x)" in out
    assert catalog.missing == ["A paragraph nobody translated."]
    assert catalog.translated == 9 and catalog.verbatim == 1  # the table cell $1$


def test_untranslated_prose_fails_or_with_the_flag_stays_english_and_is_reported(small_book, tmp_path, capsys):
    out = tmp_path / "out"
    assert teach.main(["--book", str(small_book), "notebooks", "--out", str(out), "--lang", "ja"]) == 2
    err = capsys.readouterr().err
    assert "1 prose block(s) have no translation" in err and "A paragraph nobody translated." in err
    assert not out.exists()  # nothing written
    with pytest.raises(teach.UntranslatedError) as info:
        teach.student_notebook(small_book / "chapters" / "01_x.md", lang="ja")
    assert info.value.missing == {"01_x": ["A paragraph nobody translated."]}
    assert teach.main(["--book", str(small_book), "notebooks", "--out", str(out), "--lang", "ja",
                       "--allow-untranslated"]) == 0
    assert "warning: 1 prose block(s) left in English" in capsys.readouterr().err
    text = "".join(c.source for c in nbformat.read(out / "01_x.ipynb", as_version=4).cells)
    assert "A paragraph nobody translated." in text and "題名" in text
