"""The reproduction report: one table row per numerical claim of the book, from what the checks recorded.

Every `learndyn.checks` call in a chapter writes its outcome to `_build/checks/<chapter>.json` while the notebook
runs. The directive

    ```{reproduction-report}
    ```

is replaced, after every chapter has been executed (Sphinx's write phase), by a table of those records grouped by
chapter. A chapter of the table of contents without any record is a warning (an error under `-W`): every chapter
makes claims, so every chapter must check some.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from book_tables import table_row  # _ext/ is on sys.path for the local extensions
from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)
COLUMNS = ("Check", "Measured", "Expected", "Tolerance", "Why this tolerance", "Result")


class report_placeholder(nodes.General, nodes.Element):
    pass


class ReproductionReport(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(_records_dir(self.env.app)))
        return [report_placeholder()]


def _records_dir(app) -> Path:
    return Path(app.srcdir) / "_build" / "checks"


def _chapters(app) -> list[str]:
    """Chapter docnames in table-of-contents order."""
    return [d for d in app.env.found_docs if d.startswith("chapters/")]


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict):
        if "max" in value:
            return f"{value['size']} values in [{value['min']:.4g}, {value['max']:.4g}]"
        return ", ".join(f"{k} {_fmt(v)}" for k, v in value.items() if v not in (0, 0.0, None))
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _table(records: list[dict[str, Any]]) -> nodes.table:
    table = nodes.table(classes=["reproduction-report"])
    group = nodes.tgroup(cols=len(COLUMNS))
    table += group
    for width in (30, 12, 12, 14, 26, 6):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head += table_row(list(COLUMNS))
    group += head
    body = nodes.tbody()
    for r in records:
        why = r["why"] + (f" (source: {r['source']})" if r.get("source") else "")
        body += table_row([r["name"], _fmt(r["measured"]), _fmt(r["expected"]), _fmt(r["tolerance"]), why,
                      "pass" if r["passed"] else "FAIL"])
    group += body
    return table


def _resolve(app, doctree, docname: str) -> None:
    placeholders = list(doctree.findall(report_placeholder))
    if not placeholders:
        return
    content: list[nodes.Node] = []
    total = failed = 0
    for chapter in sorted(_chapters(app)):
        path = _records_dir(app) / f"{Path(chapter).name}.json"
        if not path.exists():
            logger.warning(f"reproduction report: no check records for {chapter} ({path} missing)", location=docname)
            continue
        records = json.loads(path.read_text())
        total += len(records)
        failed += sum(not r["passed"] for r in records)
        title = app.env.titles.get(chapter)
        section = nodes.rubric(text=f"{title.astext() if title else chapter} — {len(records)} checks")
        content += [section, _table(records)]
    summary = nodes.paragraph(text=f"{total} numerical checks recorded, {total - failed} passed, {failed} failed.")
    for node in placeholders:
        node.replace_self([summary, *content])


def _always_outdated(app, env, added, changed, removed) -> list[str]:
    """The report depends on every chapter's execution: rebuild its page on every build."""
    return [d for d in env.found_docs if any(env.metadata.get(d, {}).get(k) for k in ("reproduction-report",))]


def setup(app) -> dict[str, Any]:
    app.add_node(report_placeholder)
    app.add_directive("reproduction-report", ReproductionReport)
    app.connect("doctree-resolved", _resolve)
    app.connect("env-get-outdated", _always_outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
