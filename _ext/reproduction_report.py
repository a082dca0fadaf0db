"""The reproduction report: a summary per chapter, then one section per chapter with a row per numerical check.

Every `learndyn.checks` call in a chapter writes its outcome to `_build/checks/<chapter>.json` while the notebook
runs. The directive

    ```{reproduction-report}
    ```

is replaced, when its page is read, by a summary table (per chapter: claims, bounds, observations, sanity checks,
the share of claims resolving 1 %, the worst resolution) and one section per chapter (so the page has a table of
contents) with one row per check: what it checks, its kind, the numbers, the tolerance and where it comes from, its
resolution or slack (for a claim also each rival with the margin by which it is rejected, each derived constant's
resolution, and its passes at the other seeds of the last `make robust` run, `tests/records/robust.json`), the
independent side, and a link to the cell that made it. Each row's id is the id of the check's output in the chapter,
which links back here. Sphinx reads documents in name order, so every chapter (`chapters/...`) has been executed,
and its records written, before this page (`reproduction`) is read; the page is re-read on every build. A chapter of
the table of contents without records is a warning (an error under `-W`).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from learndyn.checks import STANDARD, kind_line
from learndyn.checks.records import summarise

logger = logging.getLogger(__name__)
SUMMARY_COLUMNS = ("Chapter", "Checks", "Claims", "Bounds", "Obser\u00advations", "Sanity", "Claims resolving 1 %",
                   "Worst resolution", "Claims rejecting a named rival", "Derived constants resolving 1 %",
                   "Claims passing every seed")
SUMMARY_WIDTHS = (20, 6, 6, 6, 8, 6, 10, 9, 10, 10, 9)
ROBUST = Path(__file__).resolve().parents[1] / "tests" / "records" / "robust.json"  # `make robust` writes it
COLUMNS = ("Check", "Kind", "Measured", "Predicted", "|Difference|", "Tolerance, and where it comes from",
           "Resolution or slack", "Independent side")
WIDTHS = (26, 7, 10, 10, 9, 22, 11, 14)


def _records_dir(app) -> Path:
    """Where the chapters wrote their records: $LEARNDYN_CHECKS_DIR, as for `learndyn.checks`, else `_build/checks`."""
    env = os.environ.get("LEARNDYN_CHECKS_DIR")
    return Path(env) if env else Path(app.srcdir) / "_build" / "checks"


def _chapters(env) -> list[str]:
    """Chapter docnames in table-of-contents order (their file names start with the chapter number)."""
    return sorted(d for d in env.found_docs if d.startswith("chapters/"))


def _title(env, docname: str) -> str:
    title = env.titles.get(docname)
    if title is not None:
        return title.astext()
    source = Path(env.srcdir) / f"{docname}.md"
    for line in source.read_text().splitlines() if source.exists() else []:
        if line.startswith("# "):
            return line[2:].strip()
    return docname


def _num(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict):
        if "max" in value:
            return f"{value['size']} values in [{value['min']:.4g}, {value['max']:.4g}]"
        return ", ".join(f"{k} {_num(v)}" for k, v in value.items() if v not in (0, 0.0, None))
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _pct(x: float) -> str:
    return "none (prediction 0)" if math.isinf(x) else f"{100 * x:.2g} %"


def _inline(text: str) -> list[nodes.Node]:
    """Plain text with $...$ spans as inline math, so names and reasons render as the chapters do."""
    out: list[nodes.Node] = []
    for i, part in enumerate(re.split(r"(?<!\\)\$(.+?)(?<!\\)\$", text)):
        if part:
            out.append(nodes.math(part, part) if i % 2 else nodes.Text(part))
    return out


def _cell(*content: nodes.Node | str) -> nodes.entry:
    entry = nodes.entry()
    para = nodes.paragraph()
    for c in content:
        para += _inline(c) if isinstance(c, str) else c
    entry += para
    return entry


def _table(columns: tuple[str, ...], widths: tuple[int, ...], rows: list[nodes.row], classes: list[str]) -> nodes.table:
    # colwidths-given: the LaTeX writer then sets the columns to these shares of the line (tabulary would let the
    # eight columns of a chapter's table run off the page)
    table = nodes.table(classes=[*classes, "colwidths-given"])
    group = nodes.tgroup(cols=len(columns))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    header = nodes.row()
    for c in columns:
        header += _cell(c)
    head += header
    group += head
    body = nodes.tbody()
    for row in rows:
        body += row
    group += body
    return table


def _robust() -> dict[str, Any]:
    """The last `make robust` run: per chapter and claim, pass (true/false) or not reached (null) at each seed."""
    return json.loads(ROBUST.read_text()) if ROBUST.exists() else {"seeds": [], "chapters": {}}


def _seed_text(passes: list[bool | None] | None, seeds: list[int]) -> str:
    if not passes:
        return ""
    ok = sum(p is True for p in passes)
    failed = [str(k) for k, p in zip(seeds, passes, strict=True) if p is not True]
    return f"passes at {ok} of {len(passes)} other seeds" + (f" (not at {', '.join(failed)})" if failed else "")


def _power(r: dict[str, Any], passes: list[bool | None] | None = None, seeds: list[int] | None = None) -> str:
    kind = r.get("kind", "")
    if kind == "claim" and r.get("resolution") is not None:
        text = _pct(r["resolution"])
        if r["resolution"] > STANDARD:
            text += f" — {r['resolution_why']}" if r.get("resolution_why") else " — weaker than 1 %, no reason given"
        rivals = r.get("rivals") or []
        if rivals:
            text += "; rivals: " + "; ".join(
                f"{v['name']} (indistinguishable: {v['indistinguishable']})" if v.get("indistinguishable")
                else f"{v['name']} rejected, {_margin(v['margin'])} the tolerance away" for v in rivals)
        for c in r.get("constants") or []:
            res = c.get("resolution")
            text += f"; constant {c['name']} = {c['value']:.4g} resolves " + (
                "—" if res is None else "nothing up to 10×" if math.isinf(res) else _pct(res))
            if res is not None and res > STANDARD and c.get("why"):
                text += f" — {c['why']}"
        seed_text = _seed_text(passes, seeds or [])
        return text + (f"; {seed_text}" if seed_text else "")
    if kind == "bound" and r.get("slack") is not None:
        return kind_line("bound", "", None, "", r["slack"]).removeprefix("bound, ")
    return "—"


def _margin(x: float) -> str:
    return "∞ ×" if math.isinf(x) else f"{x:.3g}×"


def _check_row(r: dict[str, Any], docname_of_chapter: str, robust: dict[str, Any] | None = None) -> nodes.row:
    row = nodes.row(ids=[r["anchor"]] if r.get("anchor") else [])
    link = nodes.reference("", "cell", refuri=f"{docname_of_chapter}.html#{r['anchor']}", classes=["check-cell"])
    name = _cell(r["name"], " (", link, ")")
    if not r["passed"]:
        name[0] += nodes.strong(text=" FAILED")
    why = r["why"] + (f" (source: {r['source']})" if r.get("source") else "")
    tolerance = _num(r["tolerance"])
    row += [name, _cell(r.get("kind", "—")), _cell(_num(r["measured"])), _cell(_num(r["expected"])),
            _cell(_num(r.get("error"))), _cell(f"{tolerance}: {why}"),
            _cell(_power(r, (robust or {}).get("chapters", {}).get(r.get("chapter") or "", {}).get(r["name"]),
                         (robust or {}).get("seeds", []))),
            _cell(r.get("against") or "—")]
    return row


def _summary_row(title: str, target: str, records: list[dict[str, Any]], passes: dict[str, Any]) -> nodes.row:
    s = summarise(records)
    row = nodes.row()
    ref = nodes.reference("", "", refid=target)
    ref += nodes.Text(title)
    share = f"{s.resolving} of {s.claims} ({100 * s.share:.0f} %)" if s.claims else "—"
    robust = "—"
    if passes:
        names = [r["name"] for r in records if r.get("kind") == "claim"]
        robust = f"{sum(all(x is True for x in passes.get(n) or [False]) for n in names)} of {len(names)}"
    row += [_cell(ref), _cell(str(s.total)), _cell(str(s.claims)), _cell(str(s.bounds)), _cell(str(s.observations)),
            _cell(str(s.sanity)),
            _cell(share), _cell("—" if s.worst is None else _pct(s.worst)),
            _cell(f"{s.with_rivals} of {s.claims}"), _cell(f"{s.constants_resolved} of {s.constants}"),
            _cell(robust)]
    return row


class ReproductionReport(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        folder = _records_dir(self.env.app)
        self.env.note_dependency(str(folder))
        robust = _robust()
        summary_rows, sections = [], []
        total = failed = 0
        for docname in _chapters(self.env):
            chapter = Path(docname).name
            path = folder / f"{chapter}.json"
            if not path.exists():
                logger.warning(f"reproduction report: no check records for {docname} ({path} missing)",
                               location=self.env.docname)
                continue
            records = json.loads(path.read_text())
            total += len(records)
            failed += sum(not r["passed"] for r in records)
            title = _title(self.env, docname)
            target = f"report-{chapter.replace('_', '-')}"
            summary_rows.append(_summary_row(title, target, records, robust["chapters"].get(chapter, {})))
            section = nodes.section(ids=[target], names=[target])
            section += nodes.title(text=title)
            s = summarise(records)
            obs = f"{s.observations} observations, " if s.observations else ""
            section += nodes.paragraph(text=f"{s.claims} claims, {s.bounds} bounds, {obs}{s.sanity} sanity checks; "
                                            f"{s.resolving} of the claims resolve an error of 1 % or less, "
                                            f"{s.with_rivals} reject a named rival, and {s.constants_resolved} of "
                                            f"{s.constants} named derived constants resolve 1 %.")
            rows = [_check_row(r, f"chapters/{chapter}", robust) for r in records]
            section += _table(COLUMNS, WIDTHS, rows, ["reproduction-report"])
            sections.append(section)
        intro = nodes.paragraph(text=f"{total} numerical checks recorded in this build, {total - failed} passed, "
                                     f"{failed} failed.")
        seeds = robust.get("seeds") or []
        robust_text = (f"The last run of every chapter on fresh draws (LEARNDYN_SEED = "
                       f"{', '.join(map(str, seeds))}, make robust) is in the last column and in each claim's "
                       "row." if seeds else "No run on other seeds is recorded (make robust).")
        intro += nodes.Text(" " + robust_text)
        summary = _table(SUMMARY_COLUMNS, SUMMARY_WIDTHS, summary_rows, ["reproduction-summary"])
        return [intro, summary, *sections]


def _always_outdated(app, env, added, changed, removed) -> list[str]:
    """The report depends on every chapter's execution: re-read its page on every build."""
    return [d for d in env.found_docs if env.metadata.get(d, {}).get("reproduction-report")]


def setup(app) -> dict[str, Any]:
    app.add_directive("reproduction-report", ReproductionReport)
    app.connect("env-get-outdated", _always_outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
