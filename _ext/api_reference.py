"""The API reference (back matter): learndyn's docstrings, written as plain text with ASCII mathematics, as Sphinx
reads reStructuredText. Loaded through `_config.yml` (sphinx.local_extensions); the pages are `api/*.md`, one per
module, each an `automodule`.

A docstring of learndyn is plain prose: names in single backquotes, formulas on indented lines, references to the
book by label (eq. `eq-saxe-time`, Theorem `thm-ssl1-grads`, Exercise `ex-pre-slope`). `autodoc-process-docstring`
turns it into reStructuredText that says the same thing:
- a label becomes a link that prints what the reader sees in the chapter: an equation its number "(2.14)", a
  theorem, proposition or exercise its title, a section its name; so each function links to the equations it
  implements (the reader text never shows a label);
- any other `name` becomes inline code;
- indented lines (formulas, tables) become a preformatted block, as they read in the source;
- the characters reStructuredText would read as markup (`*`, `|`, `\\`, a trailing `_`) are escaped.

And the other way: on a chapter's page, the first use of each `ld.<module>.<function>` (in a code cell or in the
prose's inline code) links to that function's entry, as d2l's code links to its library.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

from sphinx.locale import _

PROOF = ("thm", "prop", "lem", "cor", "def", "rem", "alg", "conj")   # sphinx-proof labels: {prf:ref}
LABEL = re.compile(r"`((?:eq|thm|prop|lem|cor|def|rem|alg|conj|ex|sec|ch|fig|tab)-[A-Za-z0-9_-]+)`")
CODE = re.compile(r"``(.+?)``|`([^`]+)`")


def _exercise_titles() -> dict[str, str]:
    """Exercise label -> its title without the (kind, difficulty, time) suffix, read from the chapter sources.

    A docstring's exercise reference links with the exercise's title as its text: a bare reference would print
    "Exercise ??" in the PDF, where the exercises are numbered by sphinx-exercise and not by the LaTeX writer."""
    root = Path(__file__).resolve().parents[1] / "chapters"
    pattern = re.compile(r"^`{3,}\{exercise\}\s*(.+?)\s*$\n:label:\s*(ex-[\w-]+)", re.M)
    return {label: re.sub(r"\s*\([^()]*\)$", "", title) for md in sorted(root.glob("*.md"))
            for title, label in pattern.findall(md.read_text(encoding="utf-8"))}


EXERCISES = _exercise_titles()


def _role(label: str) -> str:
    kind = label.split("-", 1)[0]
    if kind == "ex" and label in EXERCISES:
        return f":ref:`“{EXERCISES[label]}” <{label}>`"
    if kind == "eq":
        return f":eq:`{label}`"
    if kind in PROOF:
        return f":prf:ref:`{label}`"
    if kind in ("fig", "tab"):
        return f":numref:`{label}`"
    return f":ref:`{label}`"      # sections, chapters and exercises (sphinx-exercise writes "Exercise N" itself)


def _escape(text: str) -> str:
    """Plain prose as reStructuredText: markup characters escaped (labels and code are placed afterwards)."""
    text = text.replace("\\", "\\\\").replace("*", "\\*").replace("|", "\\|")
    return re.sub(r"(?<=\w)_(?=\W|$)", r"\\_", text)   # `name_ ` would be a hyperlink reference


FENCE = re.compile(r"`{3,}")
NAMED = (*PROOF, "fig", "tab")       # labels whose link text starts with the kind: "Theorem 3.4", "Fig. 2.1"
KIND_WORD = re.compile(r"\b(Theorem|Proposition|Lemma|Corollary|Definition|Remark|Algorithm|Conjecture|Figure|"
                       r"Fig\.|Table|Exercise)\s+$")


def inline(text: str) -> str:
    """One line of a prose paragraph as reStructuredText."""
    if text.endswith("::"):          # reStructuredText's literal-block marker: the block is written as one below
        text = text[:-1]
    if FENCE.search(text):           # Markdown fences quoted in the prose: every backquote as a character
        return _escape(text).replace("`", "\\`")
    out, pos = [], 0
    for m in CODE.finditer(text):
        out.append(_bare_labels(_escape(text[pos:m.start()])))
        body = m.group(1) if m.group(1) is not None else m.group(2)
        label = LABEL.fullmatch(f"`{body}`")
        markup = _role(label.group(1)) if label else "``" + body.replace("``", "` `") + "``"
        if label and label.group(1).split("-", 1)[0] in NAMED and out:   # the link prints "Theorem 3.4" itself
            out[-1] = KIND_WORD.sub("", out[-1])
        # inline markup must stand apart from the words around it: an escaped space joins it to them
        before = "\\ " if m.start() and text[m.start() - 1].isalnum() else ""
        after = "\\ " if m.end() < len(text) and (text[m.end()].isalnum() or text[m.end()] in "([{") else ""
        out.append(before + markup + after)
        pos = m.end()
    out.append(_bare_labels(_escape(text[pos:])))
    return "".join(out)


BARE = re.compile(r"(?<![\w`-])((?:eq|thm|prop|lem|cor)-[a-z0-9]+(?:-[a-z0-9]+)*)\b")


def _bare_labels(text: str) -> str:
    """A label written without backquotes (eq-diag-entropy) as its link, as a quoted one is."""
    parts, pos = [], 0
    for m in BARE.finditer(text):
        head = text[pos:m.start()]
        if m.group(1).split("-", 1)[0] in NAMED:
            head = KIND_WORD.sub("", head)
        parts += [head, _role(m.group(1))]
        pos = m.end()
    return "".join([*parts, text[pos:]])


def _is_rule(line: str) -> bool:
    """A line of one repeated punctuation character (reStructuredText would read it as a section underline)."""
    s = line.strip()
    return len(s) >= 2 and len(set(s)) == 1 and not s[0].isalnum()


ITEM = re.compile(r"^[-*] ")
ENUM = re.compile(r"^(\d+|[a-z])([.)]) ")


def _paragraphs(lines: list[str]) -> list[list[str]]:
    paras: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            paras[-1].append(line.rstrip())
        elif paras[-1]:
            paras.append([])
    return [p for p in paras if p]


IN_CODE = re.compile(r"\s*\(?`?((?:eq|thm|prop|lem|cor)-[a-z0-9]+(?:-[a-z0-9]+)*)`?\)?")


def _code(lines: list[str]) -> list[str]:
    """Preformatted lines; a label in them (which a preformatted block cannot link) moves to a line below."""
    labels = [m.group(1) for ln in lines for m in IN_CODE.finditer(ln)]
    lines = [IN_CODE.sub("", ln) for ln in lines]
    note = ["(" + ", ".join(_role(label) for label in labels) + ")", ""] if labels else []
    return [".. code-block:: text", "", *("   " + ln for ln in lines), "", *note]


def _prose(line: str) -> str:
    # a line that would open an enumerated list or a block quote is written as text
    return inline(ENUM.sub(lambda m: f"{m.group(1)}\\{m.group(2)} ", line))


def to_rst(lines: list[str]) -> list[str]:
    """A plain-text docstring (already dedented by autodoc) as reStructuredText lines."""
    out: list[str] = []
    for para in _paragraphs(lines):
        if all(ln.startswith(" ") or _is_rule(ln) for ln in para):          # formulas, tables: as they read
            out += _code(para)
        elif ITEM.match(para[0]):                                           # a list: items, their continuations
            items: list[list[str]] = []
            for ln in para:
                if ITEM.match(ln):
                    items.append([ln[2:].strip()])
                else:
                    items[-1].append(ln.strip())
            out += [*("- " + inline(" ".join(it)) for it in items), ""]
        else:                                                               # prose, with indented lines as code
            run: list[str] = []
            for ln in para:
                if ln.startswith(" ") or _is_rule(ln):
                    run.append(ln)
                    continue
                if run:
                    out += ["", *_code(run)]
                    run = []
                out.append(_prose(ln))
            out += ["", *_code(run)] if run else [""]
    return out


def _process(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    lines[:] = to_rst(lines)


# `ld.mod.func` as Pygments writes it in a code cell, and as inline code in the prose
_SPAN = r'<span class="n">{}</span>'
_DOT = r'<span class="o">\.</span>'
CELL_USE = re.compile(_SPAN.format("ld") + _DOT + _SPAN.format(r"(\w+)") + _DOT + _SPAN.format(r"(\w+)"))
PROSE_USE = re.compile(r'<code class="docutils literal notranslate"><span class="pre">ld\.(\w+)\.(\w+)(?:\(\))?</span>'
                       r'</code>')


def api_target(module: str, name: str) -> tuple[str, str] | None:
    """(page, anchor) of learndyn.<module>.<name>'s entry: the module that defines it (ssl re-exports barlow's)."""
    try:
        obj = getattr(importlib.import_module(f"learndyn.{module}"), name)
    except (ImportError, AttributeError):
        return None
    home = getattr(obj, "__module__", "") or ""
    if not home.startswith("learndyn.") or not callable(obj):
        return None
    return "api/" + home.removeprefix("learndyn."), f"{home}.{name}"


USE = re.compile(f"{CELL_USE.pattern}|{PROSE_USE.pattern}")


def link_first_uses(body: str, uri: Any, pages: Any = None) -> str:
    """Wrap the first use of each learndyn function on a page in a link to its entry (`uri(page)`: its address;
    `pages`: the documents of the build, when only some of the API pages are in it)."""
    seen: set[tuple[str, str]] = set()

    def link(m: re.Match) -> str:
        cell_mod, cell_fn, prose_mod, prose_fn = m.groups()
        key = (cell_mod, cell_fn) if cell_mod is not None else (prose_mod, prose_fn)
        target = None if key in seen else api_target(*key)
        if target is None or (pages is not None and target[0] not in pages):
            return m.group(0)
        seen.add(key)
        title = str(_("%s in the API reference")) % f"learndyn.{key[0]}.{key[1]}"  # ja: _ext/book_i18n.py SITE_WORDS
        return f'<a class="api-link" href="{uri(target[0])}#{target[1]}" title="{title}">{m.group(0)}</a>'

    return USE.sub(link, body)


def _page_context(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    if pagename.startswith("chapters/") and "body" in context:
        context["body"] = link_first_uses(context["body"], lambda page: app.builder.get_relative_uri(pagename, page),
                                          app.env.found_docs)


def _always_reread(app: Any, env: Any, added: set, changed: set, removed: set) -> list[str]:
    """The API pages are read again at every build: Sphinx does not see that a docstring changed."""
    return [doc for doc in env.found_docs if doc.startswith("api/")]


def setup(app: Any) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", _process)
    app.connect("env-get-outdated", _always_reread)
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
