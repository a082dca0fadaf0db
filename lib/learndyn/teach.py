"""Instructor tools: the exercise list, student editions of the chapters, and nbgrader-ready assignments.

The one source of an exercise's metadata is its title line in the chapter (`chapters/NN_slug.md`): the title of
the chapter's `exercise` directive (sphinx-exercise; the syntax is in CONTRIBUTING.md), for example
"Halving the step (coding, ★★, 20 min)" in the Preface. The parenthesis at the end of the title
gives the kind (derivation / coding / exploration, possibly several, e.g. "derivation and coding"), the difficulty
(★ to ★★★) and the estimated time in minutes. Solutions are gated: everything from the `solution-start` directive
(naming the label) to the `solution-end` directive (markdown and code cells).

Command line (run inside the book's repository, or pass ``--book DIR``)::

    python -m learndyn.teach list
    python -m learndyn.teach notebooks --out DIR [--force] [--lang ja [--allow-untranslated]]
    python -m learndyn.teach book --out DIR [--force]
    python -m learndyn.teach assignment NAME --exercises LABEL,... [--manual LABEL,...] --out COURSE_DIR [--force]
                                        [--lang ja [--allow-untranslated]]

- ``notebooks`` writes one student notebook per chapter: every solution removed; in coding exercises the solution
  becomes a stub (``# YOUR CODE HERE`` / ``raise NotImplementedError``) followed by a self-check cell when
  `learndyn.exercises` has a checker for the exercise.
- ``book`` writes a copy of the book's sources with every solution removed (used by ``make student-book``).
- ``assignment`` writes ``COURSE_DIR/source/NAME/NAME.ipynb`` with nbgrader cell metadata: the reference solution
  between ``### BEGIN SOLUTION`` / ``### END SOLUTION``, a visible test (the answer has the right form) and a hidden
  test (the checker of `learndyn.exercises`) per autograded exercise; ``--manual`` adds manually graded written
  answers for exercises without a checker (derivations).
- ``--lang ja`` (``notebooks`` and ``assignment``): the same notebooks in Japanese. Every prose block of the markdown
  cells (paragraphs, headings, list items, table cells, admonition, theorem and exercise titles, figure captions)
  becomes its translation from the book's catalogs ``locales/ja/LC_MESSAGES/chapters/*.po`` (`learndyn.i18n`);
  code cells, math, labels and the checks stay byte for byte the English edition's. A prose block without a
  translation (a new or changed English paragraph whose catalog entry is empty or fuzzy) is an error naming the
  blocks: a student edition must not switch language silently. ``--allow-untranslated`` keeps such blocks in
  English and lists them on stderr. The languages are the folders ``locales/<lang>/LC_MESSAGES`` of the book.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import i18n
from .i18n import SELF_CHECK_LINE

__all__ = ["Exercise", "parse_title", "read_exercises", "find_exercises", "find_book", "strip_solutions",
           "chapter_name", "student_notebook", "write_student_notebooks", "write_student_book", "assignment_notebook",
           "write_assignment", "main"]

KINDS = ("derivation", "coding", "exploration")
STUB = "# YOUR CODE HERE\nraise NotImplementedError"
_EXERCISE = re.compile(r"^```\{exercise\}[ \t]*(?P<title>.*)\n:label:[ \t]*(?P<label>\S+)[ \t]*\n", re.M)
_SOLUTION_START = re.compile(r"^```\{solution-start\}[ \t]*(?P<label>\S+)[ \t]*\n(?::[^\n]*\n)*```[ \t]*\n", re.M)
_SOLUTION_END = re.compile(r"^```\{solution-end\}[ \t]*\n```[ \t]*(?:\n|$)", re.M)
_CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
_META = re.compile(r"\((?P<inside>[^()]*★[^()]*)\)\s*$")
_COPY_IGNORE = ("_build", ".venv", ".git", "tests", "bench", "examples", "lib", "scripts", "*.ipynb",
                ".ipynb_checkpoints", "__pycache__", ".pytest_cache", ".ruff_cache", "*.egg-info", ".ci")


class TeachError(ValueError):
    """Bad input to a teach command (unknown label, no checker, existing output): the message says what to do."""


class UntranslatedError(TeachError):
    """Prose without translation in a translated edition; `missing` maps a chapter to its English blocks."""

    def __init__(self, message: str, missing: dict[str, list[str]]):
        super().__init__(message)
        self.missing = missing


@dataclass(frozen=True)
class Exercise:
    """One exercise as its chapter states it.

    label: the `:label:`; chapter: the chapter's file stem (``01_linear_regression``); name: the title without the
    parenthesis; kinds: the kinds named (subset of derivation / coding / exploration); stars: 1-3; minutes: the
    estimated time (None when the title does not give one); body: the exercise's text (MyST markdown);
    solution: the gated solution's MyST source (markdown and code cells), "" when there is none.
    """

    label: str
    chapter: str
    title: str
    name: str
    kinds: tuple[str, ...]
    stars: int
    minutes: int | None
    body: str
    solution: str

    @property
    def kind(self) -> str:
        """The kinds joined by " and " (``derivation and coding``)."""
        return " and ".join(self.kinds)

    @property
    def is_coding(self) -> bool:
        return "coding" in self.kinds

    def solution_code(self) -> list[str]:
        """The sources of the code cells of the solution, in order."""
        return [m.group("body").rstrip("\n") for m in _CODE_CELL.finditer(self.solution)]

    def solution_markdown(self) -> str:
        """The solution without its code cells (the written part)."""
        return re.sub(r"\n{3,}", "\n\n", _CODE_CELL.sub("", self.solution)).strip()


def parse_title(title: str) -> tuple[str, tuple[str, ...], int, int | None]:
    """Split ``Name (kind, ★★, 20 min)`` into (name, kinds, stars, minutes); raise ValueError if kind or ★ missing."""
    if not isinstance(title, str):
        raise TypeError(f"title must be a string; got {type(title).__name__}")
    m = _META.search(title)
    if m is None:
        raise ValueError(f"exercise title {title!r} must end with '(kind, ★..., N min)', e.g. '(coding, ★★, 20 min)'")
    inside = m.group("inside")
    kinds = tuple(k for k in KINDS if re.search(rf"\b{k}\b", inside))
    if not kinds:
        raise ValueError(f"exercise title {title!r} must name its kind: one of {', '.join(KINDS)}")
    stars = inside.count("★")
    if not 1 <= stars <= 3:
        raise ValueError(f"exercise title {title!r} must have a difficulty of 1 to 3 stars; got {stars}")
    minutes = re.search(r"(\d+)\s*min\b", inside)
    return title[:m.start()].strip(), kinds, stars, int(minutes.group(1)) if minutes else None


def chapter_name(stem: str) -> str:
    """``00_preface`` -> "Preface", ``03_ssl`` -> "Chapter 3" (the book numbers chapters by their file prefix)."""
    _need_str("stem", stem)
    prefix = stem.split("_", 1)[0]
    if not prefix.isdigit():
        return stem
    return "Preface" if int(prefix) == 0 else f"Chapter {int(prefix)}"


def read_exercises(text: str, chapter: str) -> list[Exercise]:
    """The exercises of one chapter source (MyST markdown), in order of appearance, with their solutions."""
    _need_str("text", text)
    _need_str("chapter", chapter)
    solutions = {lab: src for lab, src, _, _ in _solution_regions(text)}
    out = []
    for m in _EXERCISE.finditer(text):
        close = re.compile(r"^```[ \t]*$", re.M).search(text, m.end())
        body = text[m.end():close.start() if close else len(text)].strip()
        name, kinds, stars, minutes = parse_title(m.group("title"))
        out.append(Exercise(m.group("label"), chapter, m.group("title").strip(), name, kinds, stars, minutes, body,
                            solutions.get(m.group("label"), "")))
    return out


def find_book(start: str | Path | None = None) -> Path:
    """The book's root: `start` or the first folder above the working directory with `_toc.yml` and `_config.yml`."""
    if start is not None and not isinstance(start, str | Path):
        raise TypeError(f"start (the book's folder) must be a path or None; got {type(start).__name__}")
    here = Path(start) if start is not None else Path.cwd()
    if not here.is_dir():
        raise TeachError(f"start (the book's folder) {here} is not a folder; pass --book DIR")
    for folder in [here, *here.resolve().parents]:
        if (folder / "_toc.yml").is_file() and (folder / "_config.yml").is_file():
            return folder
    raise TeachError(f"no book found at or above {here} (a folder with _toc.yml and _config.yml); pass --book DIR")


def find_exercises(book: str | Path | None = None) -> list[Exercise]:
    """All exercises of `book`'s chapters (chapters/*.md, in file order); raise TeachError on a repeated label."""
    root = find_book(book)
    out: list[Exercise] = []
    seen: dict[str, str] = {}
    for md in sorted((root / "chapters").glob("*.md")):
        for ex in read_exercises(md.read_text(encoding="utf-8"), md.stem):
            if ex.label in seen:
                raise TeachError(f"exercise label {ex.label!r} is used in {seen[ex.label]} and {md.stem}")
            seen[ex.label] = md.stem
            out.append(ex)
    return out


def strip_solutions(text: str, mode: str = "remove") -> str:
    """Remove every gated solution from a chapter source.

    mode="remove": the solution disappears (the student edition of the site).
    mode="stub": in coding exercises the solution becomes a stub code cell (``# YOUR CODE HERE`` /
    ``raise NotImplementedError``), preceded by what to define and followed by the self-check cell when
    `learndyn.exercises` has a checker for the exercise; other solutions disappear (student notebooks).
    """
    _need_str("text", text)
    if mode not in ("remove", "stub"):
        raise ValueError(f"mode must be 'remove' or 'stub'; got {mode!r}")
    exercises = {ex.label: ex for ex in read_exercises(text, "")}
    pieces, last = [], 0
    for label, _, start, end in _solution_regions(text):
        pieces.append(text[last:start])
        ex = exercises.get(label)
        if mode == "stub" and ex is not None and ex.is_coding:
            pieces.append(_stub_cells(label))
        last = end
    pieces.append(text[last:])
    return _join_blocks(pieces)


def _join_blocks(pieces: list[str]) -> str:
    """Concatenate the kept pieces of a chapter, with at most one blank line where a solution was cut out.

    Blank lines inside the pieces stay as they are: code cells keep their PEP 8 double blank lines, so a student
    notebook's cells equal the chapter's."""
    out = pieces[0]
    for piece in pieces[1:]:
        left, right = out.rstrip("\n"), piece.lstrip("\n")
        newlines = (len(out) - len(left)) + (len(piece) - len(right))
        out = left + "\n" * min(newlines, 2) + right
    return out


def student_notebook(md_path: str | Path, lang: str | None = None, allow_untranslated: bool = False) -> Any:
    """The student notebook (nbformat) of one chapter source: solutions stubbed, see `strip_solutions`.

    lang: None or "en" for English, else a language with catalogs (``ja``): the markdown cells translated (see
    the module docstring); a prose block without translation raises TeachError unless `allow_untranslated`.
    """
    import jupytext

    if not isinstance(md_path, str | Path):
        raise TypeError(f"md_path must be a path to a chapter source; got {type(md_path).__name__}")
    md_path = Path(md_path)
    if not md_path.is_file():
        raise FileNotFoundError(f"md_path: no chapter source at {md_path}")
    root = find_book(md_path.parent) if lang not in (None, "en") else None
    lang = _check_lang(lang, root)
    nb = jupytext.reads(strip_solutions(md_path.read_text(encoding="utf-8"), mode="stub"), fmt="md:myst")
    nb.metadata.pop("jupytext", None)
    if lang is not None and root is not None:
        catalog = i18n.load_catalog(root, lang, f"chapters/{md_path.stem}", i18n.teach_messages(lang))
        i18n.translate_notebook(nb, catalog, root)
        _untranslated({md_path.stem: catalog.missing}, allow_untranslated)
        nb.metadata["language"] = lang
    return nb


def write_student_notebooks(out: str | Path, book: str | Path | None = None, force: bool = False,
                            lang: str | None = None, allow_untranslated: bool = False) -> list[Path]:
    """Write `out/NN_slug.ipynb` for every chapter of the book (in `lang`, see `student_notebook`); returns the
    paths written. Every chapter is translated before anything is written."""
    import nbformat

    root = find_book(book)
    lang = _check_lang(lang, root)
    out = _safe_out(out, root)
    notebooks = {}
    missing: dict[str, list[str]] = {}
    for md in sorted((root / "chapters").glob("*.md")):
        try:
            notebooks[md.stem] = student_notebook(md, lang, allow_untranslated)
        except UntranslatedError as err:
            missing.update(err.missing)
    _untranslated(missing, allow_untranslated)
    out = _fresh_folder(out, force)
    written = []
    for stem, nb in notebooks.items():
        path = out / f"{stem}.ipynb"
        nbformat.write(nb, path)
        written.append(path)
    data = root / "chapters" / "data"
    if data.is_dir():
        shutil.copytree(data, out / "data")
    return written


def write_student_book(out: str | Path, book: str | Path | None = None, force: bool = False) -> Path:
    """Copy the book's sources to `out` with every solution removed from the chapters; returns `out`.

    An existing `out/_build` (execution cache) is kept when `force` replaces the rest.
    """
    root = find_book(book)
    out = _safe_out(out, root)
    if out.exists() and not force:
        raise TeachError(f"output folder {out} exists; pass --force to replace it")
    out.mkdir(parents=True, exist_ok=True)
    for item in out.iterdir():
        if item.name != "_build":
            shutil.rmtree(item) if item.is_dir() else item.unlink()
    ignore = shutil.ignore_patterns(*_COPY_IGNORE)
    for item in root.iterdir():
        if ignore(str(root), [item.name]) or item.resolve() == out.resolve():
            continue
        if item.is_dir():
            shutil.copytree(item, out / item.name, ignore=ignore)
        else:
            shutil.copy2(item, out / item.name)
    for md in (out / "chapters").glob("*.md"):
        md.write_text(strip_solutions(md.read_text(encoding="utf-8"), mode="remove"), encoding="utf-8")
    _student_config(out / "_config.yml")
    return out


def assignment_notebook(name: str, labels: Sequence[str], manual: Sequence[str] = (),
                        book: str | Path | None = None, lang: str | None = None,
                        allow_untranslated: bool = False) -> Any:
    """The nbgrader source notebook of assignment `name` (nbformat), see the module docstring.

    `labels` are autograded (each needs a checker in `learndyn.exercises`), `manual` are graded by hand. `lang`: as
    in `student_notebook` (the code cells are the English assignment's, byte for byte).
    """
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    from . import exercises as selfchecks

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", name):
        raise TeachError(f"assignment name must be letters, digits, '-' or '_'; got {name!r}")
    labels, manual = _label_list("labels", labels), _label_list("manual", manual)
    if not labels and not manual:
        raise TeachError("an assignment needs at least one exercise: --exercises LABEL,...")
    known = {ex.label: ex for ex in find_exercises(book)}
    for which, group in (("labels", labels), ("manual", manual)):
        for label in group:
            if label not in known:
                raise TeachError(f"{which}: unknown exercise label {label!r}; known labels: {', '.join(known)}")
    repeated = sorted({lab for lab in labels + manual if (labels + manual).count(lab) > 1})
    if repeated:
        raise TeachError(f"exercise(s) listed twice: {', '.join(repeated)}")
    for label in labels:
        if label not in selfchecks.CHECKS:
            raise TeachError(f"exercise {label!r} has no checker in learndyn.exercises, so it cannot be autograded; "
                             f"autogradable exercises: {', '.join(selfchecks.CHECKS)}. "
                             f"Pass it with --manual {label} to grade it by hand.")
    order = [ex.label for ex in known.values() if ex.label in labels or ex.label in manual]
    lang = _check_lang(lang, find_book(book))
    total = sum(selfchecks.CHECKS[lab].points + known[lab].stars for lab in labels if lab in order)
    total += sum(known[lab].stars for lab in manual)
    minutes = sum(known[lab].minutes or 0 for lab in order)
    root = find_book(book)
    words = i18n.Words(root, lang) if lang is not None else None
    if words is None:
        header = (f"# Assignment {name}\n\nExercises from *Learning dynamics of gradient descent*: "
                  f"{len(order)} exercise(s), about {minutes} min, {total} points. Write your code where it says "
                  "`# YOUR CODE HERE` (delete the `raise NotImplementedError`) and your written answers where it says "
                  "`YOUR ANSWER HERE`. The cells after each answer test it; some tests are hidden and run only when "
                  "the assignment is graded. Run the whole notebook (Restart & Run All) before you submit.")
    else:
        header = words.text("header").format(name=name, count=len(order), minutes=minutes, total=total)
    cells = [new_markdown_cell(header)]
    install = _install_cell(root / "chapters" / f"{known[order[0]].chapter}.md")
    cells.append(_nbgrader(new_code_cell(
        install + "import numpy as np\nimport learndyn as ld\n\n" f'device = ld.setup("{name}")'), grade_id="setup"))
    for i, label in enumerate(order, 1):
        ex = known[label]
        if words is None:
            cells.append(new_markdown_cell(
                f"## Exercise {i}: {ex.name}\n\n*{chapter_name(ex.chapter)}, `{label}` — {ex.kind}, {'★' * ex.stars}"
                + (f", about {ex.minutes} min" if ex.minutes else "") + f"*\n\n{_plain_markdown(ex.body)}"))
        else:
            title, meta = words.title(ex)
            cells.append(new_markdown_cell(words.text("exercise").format(
                i=i, name=title, chapter=words.chapter(ex.chapter), label=label, meta=meta,
                body=_plain_markdown(words.myst(ex.chapter, ex.body), words.lang))))
        if label in manual:
            written = ex.solution_markdown() if words is None else words.myst(ex.chapter, ex.solution_markdown())
            answer = _plain_markdown(written, lang) or (
                "(see the book's solution)" if words is None else words.text("no answer"))
            cells.append(_nbgrader(new_markdown_cell(f"### BEGIN SOLUTION\n{answer}\n### END SOLUTION"),
                                   grade_id=f"{label}-answer", solution=True, grade=True, points=ex.stars))
            continue
        check = selfchecks.CHECKS[label]
        cells.append(new_markdown_cell(f"**Your task:** {check.task}" if words is None
                                       else words.text("task").format(task=words.task(label, check.task))))
        if check.setup:
            cells.append(_nbgrader(new_code_cell(check.setup), grade_id=f"{label}-setup"))
        cells.append(_nbgrader(new_code_cell(f"### BEGIN SOLUTION\n{check.solution.strip()}\n### END SOLUTION"),
                               grade_id=f"{label}-answer", solution=True))
        cells.append(_nbgrader(new_code_cell(check.visible_test.strip()), grade_id=f"{label}-form", grade=True,
                               points=check.points))
        cells.append(_nbgrader(new_code_cell(
            f"# Hidden test: learndyn.exercises.{check.checker.__name__}, {_points(ex.stars)}.\n"
            f"### BEGIN HIDDEN TESTS\nfrom learndyn.exercises import {check.checker.__name__}\n\n"
            f"{check.checker.__name__}({check.answer})\n### END HIDDEN TESTS"),
            grade_id=f"{label}-check", grade=True, points=ex.stars))
    if words is not None:
        _untranslated(words.missing, allow_untranslated)
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    if lang is not None:
        nb.metadata["language"] = lang
    nbformat.validate(nb)
    return nb


def write_assignment(name: str, labels: Sequence[str], out: str | Path, manual: Sequence[str] = (),
                     book: str | Path | None = None, force: bool = False, lang: str | None = None,
                     allow_untranslated: bool = False) -> Path:
    """Write `out/source/name/name.ipynb` (and a minimal `out/nbgrader_config.py` when missing); returns the path."""
    import nbformat

    if not isinstance(out, str | Path):
        raise TypeError(f"out (the nbgrader course folder) must be a path; got {type(out).__name__}")
    if not isinstance(force, bool):
        raise TypeError(f"force must be True or False; got {force!r}")
    nb = assignment_notebook(name, labels, manual, book, lang, allow_untranslated)
    course = _safe_out(out, find_book(book))
    folder = course / "source" / name
    if folder.exists() and not force:
        raise TeachError(f"output folder {folder} exists; pass --force to replace it")
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    config = course / "nbgrader_config.py"
    if not config.exists():
        config.write_text('c = get_config()  # noqa: F821 (nbgrader injects get_config)\n'
                          'c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\nraise NotImplementedError"}\n',
                          encoding="utf-8")
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: ``python -m learndyn.teach {list,notebooks,book,assignment} ...``."""
    if argv is not None and (not isinstance(argv, list | tuple) or not all(isinstance(a, str) for a in argv)):
        raise TypeError(f"argv must be a list of strings such as ['list'] (or None: sys.argv); got {argv!r}")
    parser = argparse.ArgumentParser(prog="python -m learndyn.teach", description=__doc__.split("\n\n")[0])
    parser.add_argument("--book", default=None, help="the book's root (default: found above the working directory)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="print every exercise with its chapter, kind, difficulty, time and checker")
    p_nb = sub.add_parser("notebooks", help="one student notebook per chapter, solutions stubbed")
    p_book = sub.add_parser("book", help="a copy of the book's sources without solutions (make student-book)")
    for p in (p_nb, p_book):
        p.add_argument("--out", required=True, help="output folder")
        p.add_argument("--force", action="store_true", help="replace the output folder if it exists")
    p_as = sub.add_parser("assignment", help="an nbgrader source notebook COURSE_DIR/source/NAME/NAME.ipynb")
    p_as.add_argument("name", help="assignment name (letters, digits, - and _)")
    p_as.add_argument("--exercises", default="", help="comma-separated labels of autograded exercises")
    p_as.add_argument("--manual", default="", help="comma-separated labels of exercises graded by hand")
    p_as.add_argument("--out", required=True, help="the nbgrader course folder")
    p_as.add_argument("--force", action="store_true", help="replace source/NAME if it exists")
    for p in (p_nb, p_as):
        p.add_argument("--lang", default="en", help="language of the prose: en (default) or a translated one "
                                                    "(locales/<lang>/LC_MESSAGES, e.g. ja)")
        p.add_argument("--allow-untranslated", action="store_true",
                       help="keep prose without translation in English (listed on stderr) instead of failing")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            from .exercises import CHECKS

            for ex in find_exercises(args.book):
                time = f"{ex.minutes} min" if ex.minutes else "? min"
                print(f"{ex.label:28s} {ex.chapter:22s} {ex.kind:22s} {'★' * ex.stars:4s} {time:>7s}"
                      f"{'  self-check' if ex.label in CHECKS else ''}")
        elif args.command == "notebooks":
            for path in write_student_notebooks(args.out, args.book, args.force, args.lang,
                                                args.allow_untranslated):
                print(f"wrote {path}")
        elif args.command == "book":
            print(f"wrote the student edition's sources to {write_student_book(args.out, args.book, args.force)}")
        else:
            path = write_assignment(args.name, _labels(args.exercises), args.out, _labels(args.manual), args.book,
                                    args.force, args.lang, args.allow_untranslated)
            print(f"wrote {path}\nnext: cd {args.out} && nbgrader generate_assignment {args.name}")
    except TeachError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


# ---------------------------------------------------------------------------------------------------------------
def _solution_regions(text: str) -> Iterable[tuple[str, str, int, int]]:
    """(label, inner source, start, end) of every gated solution, `end` past the closing fence."""
    for start in _SOLUTION_START.finditer(text):
        end = _SOLUTION_END.search(text, start.end())
        if end is None:
            raise ValueError(f"solution of {start.group('label')!r} has no closing solution-end")
        yield start.group("label"), text[start.end():end.start()].strip("\n"), start.start(), end.end()


def _stub_cells(label: str) -> str:
    from .exercises import CHECKS

    check = CHECKS.get(label)
    head = (f"{check.setup}\n\n" if check and check.setup else "") + (f"# {check.task}\n" if check else "")
    cells = f"\n```{{code-cell}} ipython3\n{head}{STUB}\n```\n"
    if check:
        name = check.checker.__name__
        cells += (f"\n{SELF_CHECK_LINE}\n\n"
                  f"```{{code-cell}} ipython3\nfrom learndyn.exercises import {name}\n\n{name}({check.answer})\n```\n")
    return cells


def _plain_markdown(text: str, lang: str | None = None) -> str:
    """MyST roles ({eq}`x`, {cite:t}`x`, {ref}`x`) as plain text for a notebook outside the book."""
    if lang == "ja":  # 式 {eq}`x` -> 本書の式 `x`
        text = re.sub(r"(?:式\s*)?\{eq\}`([^`]+)`", r"本書の式 `\1`", text)
        text = re.sub(r"\{(?:numref|ref|doc)\}`(?:[^`<]*<)?([^`>]+)>?`", r"本書の `\1`", text)
        text = re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef]) +(?=本書の)", "", text)  # no space after Japanese
    text = re.sub(r"\{eq\}`([^`]+)`", r"equation `\1` of the book", text)
    text = re.sub(r"\{(?:numref|ref|doc)\}`(?:[^`<]*<)?([^`>]+)>?`", r"`\1` in the book", text)
    return re.sub(r"\{cite(?::[a-z]+)?\}`([^`]+)`", r"[\1]", text)


def _check_lang(lang: object, root: Path | None) -> str | None:
    """`lang` checked against the book's catalogs (None for English); TeachError (a ValueError) naming `lang`."""
    if lang is None or lang == "en":
        return None
    try:
        return i18n.check_lang(lang, root if root is not None else find_book())
    except ValueError as err:
        raise TeachError(str(err)) from None


def _untranslated(missing: dict[str, list[str]], allow: bool) -> None:
    """Fail (UntranslatedError), or with `allow` warn on stderr, when a translated edition has English prose."""
    missing = {page: blocks for page, blocks in missing.items() if blocks}
    if not missing:
        return
    count = sum(len(blocks) for blocks in missing.values())
    lines = [f"  {page}: {len(blocks)} block(s), e.g. {blocks[0][:100]!r}" for page, blocks in missing.items()]
    if not allow:
        raise UntranslatedError(f"{count} prose block(s) have no translation (empty or fuzzy in the catalogs: "
                                "translate them, locales/ja/TRANSLATING.md), or pass --allow-untranslated to keep "
                                "them in English:\n" + "\n".join(lines), missing)
    print(f"warning: {count} prose block(s) left in English (no translation):\n" + "\n".join(lines),
          file=sys.stderr)


def _nbgrader(cell: Any, grade_id: str, solution: bool = False, grade: bool = False, points: int = 0) -> Any:
    meta = {"grade": grade, "grade_id": grade_id, "locked": not solution, "schema_version": 3,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


def _install_cell(md: Path) -> str:
    """The chapter's hidden setup cell (installs learndyn on Colab), without its cell options; "" if none."""
    first = _CODE_CELL.search(md.read_text(encoding="utf-8"))
    if first is None or "pip" not in first.group("body"):
        return ""
    lines = [ln for ln in first.group("body").splitlines() if not ln.startswith(":")]
    return "\n".join(lines).strip() + "\n\n"


def _student_config(path: Path) -> None:
    """The copy's _config.yml: "(student edition)" in the title, and no Colab button, which would open the
    repository's notebooks, solutions included."""
    import yaml

    if not path.is_file():
        return
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    config["title"] = f"{config.get('title', 'The book')} (student edition)"
    buttons = config.get("launch_buttons") or {}
    for key in ("colab_url", "binderhub_url", "jupyterhub_url", "thebe"):
        buttons.pop(key, None)
    config["launch_buttons"] = buttons
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _need_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string; got {type(value).__name__}")


def _label_list(name: str, labels: Sequence[str]) -> list[str]:
    if isinstance(labels, str) or not isinstance(labels, Sequence) or not all(isinstance(x, str) for x in labels):
        raise TypeError(f"{name} must be a list of exercise labels such as ['ex-linreg-bayes']; got {labels!r}")
    return list(labels)


def _points(n: int) -> str:
    return f"{n} point" + ("" if n == 1 else "s")


def _labels(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def _safe_out(out: str | Path, root: Path) -> Path:
    """Refuse an output folder that is the book or contains it (--force would delete the book)."""
    out = Path(out)
    if out.resolve() == root.resolve() or root.resolve().is_relative_to(out.resolve()):
        raise TeachError(f"output folder {out} is or contains the book at {root}; choose another --out")
    for name in ("chapters", "lib", "_ext", "tests", "bench", "scripts", "_assets", ".git", ".venv"):  # examples/: ok
        if out.resolve().is_relative_to((root / name).resolve()):
            raise TeachError(f"output folder {out} is inside the book's {name}/; choose another --out")
    return out


def _fresh_folder(out: str | Path, force: bool) -> Path:
    out = Path(out)
    if out.exists() and not force:
        raise TeachError(f"output folder {out} exists; pass --force to replace it")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
