"""The exercise index: every exercise of the book by chapter, with kind, difficulty, time and a link.

The directive

    ```{exercise-index}
    ```

is replaced, once every page has been read, by one table per chapter (in table-of-contents order). The data come
from the exercises' title lines in the chapter sources, read by `learndyn.teach` (the one parser of exercise
metadata): ``Title (kind, ★★, 20 min)`` and its ``:label:``. An exercise whose title lacks the kind or the stars, or
a label used twice, is a warning (an error under ``-W``); a missing time is shown as "—" and is caught by
tests/test_chapters.py. The column "Self-check" says whether `learndyn.exercises` has a checker for the exercise,
i.e. whether it can be autograded in an nbgrader assignment (`python -m learndyn.teach assignment`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)
COLUMNS = ("Exercise", "Label", "Kind", "Difficulty", "Time", "Self-check")
WIDTHS = (38, 22, 16, 10, 8, 8)


class exercise_index_placeholder(nodes.General, nodes.Element):
    pass


class ExerciseIndex(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        import learndyn.exercises

        for doc in _chapters(self.env):
            self.env.note_dependency(str(_source(self.env.app, doc)))
        self.env.note_dependency(learndyn.exercises.__file__)  # the "Self-check" column
        return [exercise_index_placeholder()]


def _chapters(env) -> list[str]:
    """Chapter docnames in table-of-contents order (files under chapters/ that the book builds)."""
    order = [d for d in _toc_order(env) if d.startswith("chapters/")]
    rest = sorted(d for d in env.found_docs if d.startswith("chapters/") and d not in order)
    return order + rest


def _toc_order(env) -> list[str]:
    seen: list[str] = []

    def walk(doc: str) -> None:
        if doc in seen:
            return
        seen.append(doc)
        for child in env.toctree_includes.get(doc, []):
            walk(child)

    walk(env.config.root_doc)
    return seen


def _source(app, doc: str) -> Path:
    return Path(app.srcdir) / f"{doc}.md"


def _cell(content: nodes.Node | str) -> nodes.entry:
    entry = nodes.entry()
    para = nodes.paragraph()
    para += nodes.Text(content) if isinstance(content, str) else content
    entry += para
    return entry


def _table(rows: list[list[nodes.Node | str]]) -> nodes.table:
    table = nodes.table(classes=["exercise-index"])
    group = nodes.tgroup(cols=len(COLUMNS))
    table += group
    for width in WIDTHS:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    row = nodes.row()
    for name in COLUMNS:
        row += _cell(name)
    head += row
    group += head
    body = nodes.tbody()
    for cells in rows:
        row = nodes.row()
        for content in cells:
            row += _cell(content)
        body += row
    group += body
    return table


def _resolve(app, doctree, docname: str) -> None:
    placeholders = list(doctree.findall(exercise_index_placeholder))
    if not placeholders:
        return
    from learndyn.exercises import CHECKS
    from learndyn.teach import read_exercises

    content: list[nodes.Node] = []
    seen: dict[str, str] = {}
    count = minutes = 0
    for chapter in _chapters(app.env):
        path = _source(app, chapter)
        if not path.exists():
            continue
        try:
            exercises = read_exercises(path.read_text(encoding="utf-8"), Path(chapter).name)
        except ValueError as err:
            logger.warning(f"exercise index: {chapter}: {err}", location=docname)
            continue
        if not exercises:
            continue
        uri = app.builder.get_relative_uri(docname, chapter)
        title = app.env.titles.get(chapter)
        heading = nodes.rubric()
        number = app.env.toc_secnumbers.get(chapter, {}).get("")
        prefix = ".".join(map(str, number)) + ". " if number else ""
        heading += nodes.reference("", prefix + (title.astext() if title else chapter), internal=True, refuri=uri)
        rows = []
        for ex in exercises:
            if ex.label in seen:
                logger.warning(f"exercise index: label {ex.label} is used in {seen[ex.label]} and {chapter}",
                               location=docname)
            seen[ex.label] = chapter
            link = nodes.reference("", "", internal=True, refuri=f"{uri}#{ex.label}")
            for i, part in enumerate(re.split(r"(?<!\\)\$(.+?)(?<!\\)\$", ex.name)):  # $...$ as math
                if part:
                    link += nodes.math(part, part) if i % 2 else nodes.Text(part)
            rows.append([link, nodes.literal(text=ex.label), ex.kind, "★" * ex.stars,
                         f"{ex.minutes} min" if ex.minutes else "—", "yes" if ex.label in CHECKS else ""])
            count += 1
            minutes += ex.minutes or 0
        content += [heading, _table(rows)]
    checked = sum(lab in seen for lab in CHECKS)
    hours, rest = divmod(minutes, 60)
    summary = nodes.paragraph(text=f"{count} exercises, about {hours} h {rest:02d} min of work in all; {checked} "
                                   f"with a self-check, which can be autograded.")
    for node in placeholders:
        node.replace_self([summary, *[n.deepcopy() for n in content]])


def setup(app) -> dict[str, Any]:
    app.add_node(exercise_index_placeholder)
    app.add_directive("exercise-index", ExerciseIndex)
    app.connect("doctree-resolved", _resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
