"""Translated student editions: a chapter's MyST markdown in another language, from the book's gettext catalogs.

The catalogs (``locales/<lang>/LC_MESSAGES/chapters/NN_slug.po``, locales/ja/TRANSLATING.md) hold one message per
paragraph, heading, list item, table cell, admonition / theorem / exercise title and figure caption: its MyST source
with line breaks as spaces, as Sphinx's gettext builder extracts it. `translate_myst` parses a markdown cell with the
book's MyST parser, looks each such block up by its whitespace-normalised English and writes the translation in its
place (the block's source lines become one line). Everything else stays byte for byte: display math, code, ``{index}``
entries, labels, directive options. Two quirks of the extraction are handled here: a theorem title is the message
``(Title)`` and a proof's first paragraph is ``Proof. ...`` (sphinx-proof writes the word into the text).

A prose block without a (non-fuzzy, non-empty) translation is recorded in `Catalog.missing`; a block with nothing to
translate (only math, code, roles or links) is left as it is and not counted.

The text `learndyn.teach` writes itself has its translations here: `TEXT` (the stub's self-check line, the
assignment's frame) and `TASKS` (the one-line task of each self-checked exercise, by label); `Words` gathers an
assignment's translated text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Catalog", "Words", "TEXT", "TASKS", "SELF_CHECK_LINE", "languages", "check_lang", "load_catalog",
           "translate_myst", "translate_notebook", "teach_messages"]

# Directives whose body is not MyST prose (kept as is) and the prose ones whose argument is a title.
_VERBATIM_DIRECTIVES = {"code-cell", "index", "math", "code-block", "code", "sourcecode", "raw", "eval-rst",
                        "bibliography", "solution-start", "solution-end", "literalinclude", "tableofcontents",
                        "glue", "glue:figure", "glue:any", "glue:math", "glue:text", "mermaid", "csv-table"}
_NO_TITLE = {"figure", "image", "include", "list-table", "table"}  # their argument is a path or is omitted
PROOF_WORD = {"en": "Proof. ", "ja": "証明. "}  # sphinx-proof's word at the start of a proof's first message
_PROSE_INLINE = ("text",)
_LETTERS = re.compile(r"[A-Za-z]{2,}")

SELF_CHECK_LINE = "The self-check says what is wrong without giving the answer away:"
# The text `learndyn.teach` writes itself, in each translated language: the stub's line and the assignment's frame.
TEXT = {
    "ja": {
        SELF_CHECK_LINE: "自己チェックは、答えを明かさずに何が間違っているかを教えてくれる。",
        "header": "# 課題 {name}\n\n*勾配降下法の学習ダイナミクス*（*Learning dynamics of gradient "
                  "descent*）の練習問題：{count} 問、約 {minutes} 分、{total} 点。コードは "
                  "`# YOUR CODE HERE` と書かれた場所に書き（`raise NotImplementedError` は消す）、"
                  "記述式の答えは `YOUR ANSWER HERE` と書かれた場所に書くこと。各解答の後のセルが"
                  "それをテストする。テストの一部は隠されており、採点のときにだけ実行される。"
                  "提出する前にノートブック全体を実行すること（Restart & Run All）。",
        "exercise": "## 練習 {i}：{name}\n\n*{chapter}、`{label}` — {meta}*\n\n{body}",
        "task": "**課題：** {task}",
        "no answer": "（本書の解答を参照）",
        "Preface": "序章",
        "Chapter": "第 {n} 章",
    },
}
# The one-line tasks of `learndyn.exercises.CHECKS` (the assignment's "Your task"), by language and label.
TASKS = {
    "ja": {
        "ex-pre-slope": "`errors` を定義せよ。8 つのステップサイズ `etas` のそれぞれについて、"
                        "t <= 10 での GD と勾配流の誤差の最大値を、この順に並べたものである。",
        "ex-linreg-bayes": "`my_bayes_risk(d, n, sigma, tau)` を定義せよ。"
                           "X^T X = n I_d のときの事後平均のベイズリスクである。",
        "ex-linreg-init": "`my_limit(X, y, w0)` を定義せよ。"
                          "w0 から出発した最小二乗法上の GD が収束する点である。",
        "ex-saxe-gram-schmidt": "`my_u0(W1, W2, U, V, svals)` を定義せよ。"
                                "実効初期条件 u0 で、モードごとに 1 つである。",
        "ex-ssl1-ntxent": "`nt_xent(z1, z2, temperature)` を定義せよ。"
                          "ビューを表す 2 つの (N, D) の numpy 配列の NT-Xent 損失である。",
        "ex-ssl2-merge": "`gaps`（形状 (4, 2)）を定義せよ。立ち上がり時間 1/(8 lambda_2) を単位として測った "
                         "t2 - t1 で、行は `rhos` の rho、列は `epsilons` の eps である"
                         "（eta = 0.01、make_gamma の seed 4、small_init の seed 5）。",
        "ex-soudry-second-margin": "`slopes` を定義せよ。w_hat に直交する勾配流の残差の ln t に対する"
                                   "減衰率で、データセットごとに 1 つである。",
        "ex-eos-plateau": "`slope` を定義せよ。キャッシュされたスイープ `traces` における、"
                          "2/eta に対するシャープネスのプラトーの両対数の傾きである。",
        "ex-wu-rates": "`slopes` を定義せよ。eta = T/20, T/10, T/5, T/2 のそれぞれについて `Ts` 上で"
                       "当てはめた収束率の指数を、この順に並べたものである。",
        "ex-diag-mirror": "`my_mirror(w, alpha)` を定義せよ。w における双曲エントロピー Q_alpha の勾配である。",
    },
}


@dataclass
class Catalog:
    """The translations of one page: `messages` maps normalised English to the translation (fuzzy and empty ones
    left out). `translated`, `verbatim` and `missing` record what `translate_myst` met, across calls."""

    lang: str
    messages: dict[str, str]
    translated: int = 0
    verbatim: int = 0
    missing: list[str] = field(default_factory=list)

    def lookup(self, english: str) -> str | None:
        return self.messages.get(_norm(english))


def _norm(text: str) -> str:
    return " ".join(text.split())


def languages(book: str | Path) -> list[str]:
    """The languages with catalogs in `book` (folders ``locales/<lang>/LC_MESSAGES``), sorted."""
    return sorted(p.parent.name for p in (Path(book) / "locales").glob("*/LC_MESSAGES") if p.is_dir())


def check_lang(lang: object, book: str | Path) -> str | None:
    """`lang` validated: None or "en" (the English source) give None; else a language with catalogs in `book`."""
    if lang is None or lang == "en":
        return None
    available = languages(book)
    if not isinstance(lang, str) or lang not in available:
        raise ValueError(f"lang must be 'en' or one of the translated languages {', '.join(available) or '(none)'} "
                         f"(locales/<lang>/LC_MESSAGES); got {lang!r}")
    return lang


def load_catalog(book: str | Path, lang: str, page: str, extra: dict[str, str] | None = None) -> Catalog:
    """The catalog of `page` (``chapters/01_linear_regression``) in `lang`, plus `extra` messages (English ->
    translation) for text a program writes. A missing .po file gives an empty catalog (every block missing)."""
    from babel.messages.pofile import read_po

    messages: dict[str, str] = {}
    path = Path(book) / "locales" / lang / "LC_MESSAGES" / f"{page}.po"
    if path.is_file():
        with path.open("rb") as f:
            for message in read_po(f, abort_invalid=True):
                if message.id and isinstance(message.id, str) and isinstance(message.string, str) \
                        and message.string.strip() and not message.fuzzy:
                    messages[_norm(message.id)] = message.string
    for english, translation in (extra or {}).items():
        messages.setdefault(_norm(english), translation)
    return Catalog(lang, messages)


_PARSERS: dict[str, Any] = {}


def _parser(book: str | Path) -> Any:
    """The book's MyST parser (myst-parser's markdown-it with the extensions of `_config.yml`)."""
    key = str(Path(book).resolve())
    if key not in _PARSERS:
        import yaml
        from markdown_it.renderer import RendererHTML
        from myst_parser.config.main import MdParserConfig
        from myst_parser.parsers.mdit import create_md_parser

        config = yaml.safe_load((Path(book) / "_config.yml").read_text(encoding="utf-8")) or {}
        extensions = set((config.get("parse") or {}).get("myst_enable_extensions") or [])
        _PARSERS[key] = create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)
    return _PARSERS[key]


def _prose(inline: Any) -> bool:
    """Whether an inline token has words to translate outside math, code, roles and link targets."""
    return any(t.type in _PROSE_INLINE and _LETTERS.search(t.content) for t in inline.children or [])


def _message(catalog: Catalog, english: str, prose: bool, proof: str | None = None) -> str | None:
    """The translation of one block, None to keep it (nothing to translate, or missing: then recorded).

    proof: the block opens a proof; its message is ``Proof. `` + `proof` (a list item's marker ``1. `` or "") +
    the text, and the translation loses the same opening."""
    if proof is not None:
        found = catalog.lookup(PROOF_WORD["en"] + proof + english)
        if found is not None:
            catalog.translated += 1
            for opening in (PROOF_WORD.get(catalog.lang, ""), proof):
                found = found[len(opening):] if opening and found.startswith(opening) else found
            return found
    found = catalog.lookup(english)
    if found is not None:
        catalog.translated += 1
        return found
    if prose:
        catalog.missing.append(_norm(english))
    else:
        catalog.verbatim += 1
    return None


def translate_myst(text: str, catalog: Catalog, book: str | Path, proof: bool = False) -> str:
    """`text` (MyST markdown, e.g. a notebook's markdown cell) with every prose block translated from `catalog`.

    proof: `text` is the body of a proof directive (sphinx-proof's prf:proof), whose first paragraph is the message
    ``Proof. ...``.
    """
    lines = text.split("\n")
    edits: list[tuple[int, int, list[str]]] = []  # (first line, end line, new lines)
    tokens = _parser(book).parse(text)
    first_paragraph = proof
    for i, tok in enumerate(tokens):
        if tok.type == "inline" and tok.map and i and tokens[i - 1].type in ("paragraph_open", "heading_open",
                                                                              "dt_open"):
            item = tokens[i - 2] if i >= 2 and tokens[i - 2].type == "list_item_open" else None
            marker = (f"{item.info}{item.markup} " if item.info else f"{item.markup} ") if item else ""
            new = _message(catalog, tok.content, _prose(tok), proof=marker if first_paragraph else None)
            first_paragraph = False
            if new is not None:
                a, b = tok.map
                head = tok.content.split("\n", 1)[0]
                at = lines[a].find(head)
                prefix = lines[a][:at] if at >= 0 else re.match(r"\s*", lines[a]).group()
                edits.append((a, b, [prefix + new]))
        elif tok.type == "tr_open" and tok.map:
            edits.extend(_table_row(tokens, i, lines, catalog))
        elif tok.type == "fence" and tok.map:
            first_paragraph = False
            edits.extend(_directive(tok, lines, catalog, book))
    for a, b, new in sorted(edits, reverse=True):
        lines[a:b] = new
    return "\n".join(lines)


def _table_row(tokens: list[Any], i: int, lines: list[str], catalog: Catalog) -> list[tuple[int, int, list[str]]]:
    """A table row rewritten cell by cell (``| a | b |``), the row's layout kept."""
    row = tokens[i].map[0]
    cells, changed = [], False
    for tok in tokens[i + 1:]:
        if tok.type == "tr_close":
            break
        if tok.type == "inline":
            new = _message(catalog, tok.content, _prose(tok))
            cells.append(tok.content if new is None else new.replace("|", "\\|"))
            changed = changed or new is not None
    if not changed:
        return []
    indent = re.match(r"\s*", lines[row]).group()
    return [(row, row + 1, [indent + "| " + " | ".join(cells) + " |"])]


def _directive(tok: Any, lines: list[str], catalog: Catalog, book: str | Path) -> list[tuple[int, int, list[str]]]:
    """A ``{name} argument`` fence: its title argument and its body (recursively), options kept."""
    m = re.fullmatch(r"\{(?P<name>[^}\s]+)\}\s*(?P<arg>.*)", tok.info.strip())
    if m is None or m.group("name") in _VERBATIM_DIRECTIVES:
        return []  # a code block, or a directive without prose
    name, arg = m.group("name"), m.group("arg").strip()
    a, b = tok.map
    edits = []
    if arg and name not in _NO_TITLE:
        if name.startswith("prf:") and catalog.lookup(f"({arg})") is not None:
            new = catalog.lookup(f"({arg})")
            catalog.translated += 1
            new = new[1:-1] if new and new.startswith("(") and new.endswith(")") else new
        else:
            new = _message(catalog, arg, bool(_LETTERS.search(re.sub(r"\$[^$]*\$|`[^`]*`", "", arg))))
        if new is not None:
            at = lines[a].rfind(arg)
            edits.append((a, a + 1, [lines[a][:at] + new]))
    closed = b - a >= 2 and lines[b - 1].strip().startswith(tok.markup) and not lines[b - 1].strip(tok.markup[0])
    body_start, body_end = a + 1, b - 1 if closed else b
    indent = len(lines[a]) - len(lines[a].lstrip())
    body = [ln[indent:] if ln[:indent].strip() == "" else ln for ln in lines[body_start:body_end]]
    skip = 0
    if body and body[0].strip() == "---":  # YAML options
        end = next((k for k in range(1, len(body)) if body[k].strip() == "---"), None)
        skip = end + 1 if end is not None else 0
    else:
        while skip < len(body) and re.match(r":[\w-]+:", body[skip]):
            skip += 1
    if skip == len(body):
        return edits
    new_body = translate_myst("\n".join(body[skip:]), catalog, book, proof=name == "prf:proof").split("\n")
    pad = " " * indent
    edits.append((body_start + skip, body_end, [pad + ln if ln else ln for ln in new_body]))
    return edits


def translate_notebook(nb: Any, catalog: Catalog, book: str | Path) -> Any:
    """`nb` (nbformat) with its markdown cells and its figure captions (``mystnb: figure: caption``) translated in
    place; code cells' sources and outputs are not touched. Returns `nb`."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_myst(cell.source, catalog, book)
        elif cell.cell_type == "code":
            figure = (cell.metadata.get("mystnb") or {}).get("figure") or {}
            caption = figure.get("caption")
            if isinstance(caption, str) and caption.strip():
                new = _message(catalog, caption, True)
                if new is not None:
                    figure["caption"] = new
    return nb


def teach_messages(lang: str) -> dict[str, str]:
    """The catalog entries of the text `learndyn.teach` writes into a student notebook (the self-check line)."""
    return {SELF_CHECK_LINE: TEXT[lang][SELF_CHECK_LINE]} if lang in TEXT else {}


class Words:
    """The translated text of an nbgrader assignment (`learndyn.teach`): the chapters' catalogs, TEXT and TASKS;
    records the English it could not translate in `missing` (by chapter)."""

    def __init__(self, root: Path, lang: str):
        self.root, self.lang = root, lang
        self.catalogs: dict[str, Catalog] = {}
        self.missing: dict[str, list[str]] = {}

    def _catalog(self, chapter: str) -> Catalog:
        if chapter not in self.catalogs:
            self.catalogs[chapter] = load_catalog(self.root, self.lang, f"chapters/{chapter}")
            self.missing[chapter] = self.catalogs[chapter].missing
        return self.catalogs[chapter]

    def text(self, key: str) -> str:
        return TEXT[self.lang][key]

    def myst(self, chapter: str, text: str) -> str:
        return translate_myst(text, self._catalog(chapter), self.root)

    def title(self, ex: Any) -> tuple[str, str]:
        """The exercise's name and its parenthesis (kind, stars, minutes) in the language."""
        found = self._catalog(ex.chapter).lookup(ex.title)
        m = re.fullmatch(r"(?s)(.*?)\s*[（(]([^（）()]*★[^（）()]*)[）)]\s*", found or "")
        if m is None:
            self.missing[ex.chapter].append(ex.title)
            return ex.name, ex.title[len(ex.name):].strip().strip("()")
        return m.group(1), m.group(2)

    def chapter(self, stem: str) -> str:
        prefix = stem.split("_", 1)[0]
        if not prefix.isdigit():
            return stem
        return self.text("Preface") if int(prefix) == 0 else self.text("Chapter").format(n=int(prefix))

    def task(self, label: str, english: str) -> str:
        found = TASKS.get(self.lang, {}).get(label)
        if found is None:
            self.missing.setdefault("learndyn.exercises", []).append(english)
        return found or english
