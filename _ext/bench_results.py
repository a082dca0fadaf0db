"""The Benchmarks appendix: tables rendered at build time from the committed `bench/results.json`.

`bench/run_all.py` runs every benchmark of `bench/` and writes that file (machine, library versions, load average
and the measurements). The directive

    ```{bench-results}
    ```

is replaced by a summary of the targets, then one table per benchmark. Nothing is executed at build time: the page
shows the committed record. A missing or unreadable file, or a record made with `--quick` (tiny sizes, not a
measurement), is a warning (an error under `-W`).
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
RESULTS = Path("bench") / "results.json"


class BenchResults(SphinxDirective):
    has_content = False
    optional_arguments = 1  # the path of the results file, relative to the book root

    def run(self) -> list[nodes.Node]:
        path = Path(self.env.srcdir) / (self.arguments[0] if self.arguments else RESULTS)
        self.env.note_dependency(str(path))
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            logger.warning(f"bench-results: cannot read {path}: {err}", location=self.get_location())
            return [nodes.paragraph(text=f"No benchmark record ({path.name} missing or unreadable).")]
        if data.get("quick"):
            logger.warning(f"bench-results: {path} was written by `run_all.py --quick` (tiny sizes, not a "
                           "measurement); run `bench/run_all.py` in full", location=self.get_location())
        return _render(data)


def _render(data: dict[str, Any]) -> list[nodes.Node]:
    m = data.get("machine", {})
    versions = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items() if v)
    out: list[nodes.Node] = [
        _table(["Recorded", "CPU", "Threads", "Load average (start / end)", "Commit"],
               [[m.get("date", "?"), f"{m.get('cpu', '?')} ({m.get('cores', '?')} cores)", str(m.get("threads", "?")),
                 f"{_f(data.get('load_start'), '.1f')} / {_f(data.get('load_end'), '.1f')}",
                 str(m.get("commit") or "—")]], "bench-machine"),
        nodes.paragraph(text=f"Library versions: {versions}."),
    ]
    if data.get("targets"):
        out += [nodes.rubric(text="Targets"),
                _table(["Target", "Measured", "Met"],
                       [[t["target"], t["measured"], "yes" if t["met"] else "no"] for t in data["targets"]])]
    batched = (data.get("batched") or {}).get("results")
    if batched:
        out += [nodes.rubric(text="Batched sweeps against a Python loop over the same runs (CPU)"),
                _table(["Simulator", "Ch", "Sweep over", "B", "Steps", "Batched (s)", "Loop (s)", "Speed-up",
                        "Max rel. difference"],
                       [[r["case"], r["chapter"], r["sweep"], str(r["B"]), str(r["steps"]), _f(r["batched_s"], ".3f"),
                         _f(r["loop_s"], ".2f"), f"{r['ratio']:.1f}x", _f(r["rel_diff"], ".1e")]
                        for r in batched["rows"]])]
        out += _printed(data["batched"])
    sharp = (data.get("sharpness_vs_pyhessian") or {}).get("results")
    if sharp:
        mod = sharp["model"]
        out += [nodes.rubric(text="Top Hessian eigenvalue: learndyn against PyHessian's power iteration"),
                nodes.paragraph(text=f"Digits MLP, {mod['n']} examples, {mod['parameters']} parameters, "
                                     f"{mod['dtype']}, {mod['device']}; target relative error {sharp['target']:g}; "
                                     f"one Hessian-vector product (HVP) {1e3 * sharp['hvp_s']:.1f} ms = "
                                     f"{sharp['hvp_s'] / sharp['grad_s']:.1f} gradients."),
                _table(["Method", "Stopping tol", "Time (s)", "Rel. error", "HVPs", "Time / (HVPs x one HVP)"],
                       [[r["method"], _f(r["tol"], ".0e"), _f(r["seconds"], ".3f"), _f(r["rel_error"], ".1e"),
                         str(r["hvps"] or "—"), _f(r.get("hvp_overhead"), ".2f")] for r in sharp["rows"]])]
        out += _printed(data["sharpness_vs_pyhessian"])
    nbs = data.get("notebooks")
    if nbs and nbs.get("rows"):
        rows = [[r["notebook"], _f(r["seconds"], ".1f"), "failed: " + r["error"] if r["error"] else
                 ("ok" if r["seconds"] <= nbs["budget_each_s"] else "over budget"),
                 f"{_f(r['load_before'], '.1f')} / {_f(r['load_after'], '.1f')}"] for r in nbs["rows"]]
        rows.append(["whole book", _f(nbs["total_s"], ".0f"), f"budget {nbs['budget_total_s']:g} s", ""])
        out += [nodes.rubric(text="Notebook execution, each in a fresh kernel"),
                _table(["Notebook", "Seconds", "Status", "Load (before / after)"], rows)]
    # Scripts without a table of their own are separate runs of related measurements (the same timings, measured
    # again): under their own heading, said to be separate runs, so that their numbers are not read as the tables'.
    others = [(key, e) for key, e in data.items()
              if isinstance(e, dict) and "script" in e and key not in _TABULATED]
    if others:
        out += [nodes.rubric(text="Other benchmark scripts (separate runs)"),
                nodes.paragraph(text="These scripts ran for the same record, each in its own process after the ones "
                                     "above. They time some of the same operations again, so their numbers differ "
                                     "from the tables' by the run-to-run variation; the tables are the record.")]
        for _, entry in others:
            text = (entry.get("stdout") or "").strip() or (entry.get("stderr") or "").strip() or "(no output)"
            out += [nodes.paragraph(text=f"{entry['script']} (a separate run, return code "
                                         f"{entry.get('returncode')}):", classes=["bench-separate"]),
                    nodes.literal_block(text=text, language="text", classes=["bench-separate"])]
    return out


_TABULATED = ("batched", "sharpness_vs_pyhessian")


def _printed(entry: dict[str, Any]) -> list[nodes.Node]:
    """The printed output of the run a table comes from, right under that table."""
    text = (entry.get("stdout") or "").strip() or (entry.get("stderr") or "").strip()
    if not text:
        return []
    return [nodes.paragraph(text=f"Printed by {entry['script']} in the same run (return code "
                                 f"{entry.get('returncode')}):", classes=["bench-printed"]),
            nodes.literal_block(text=text, language="text", classes=["bench-printed"])]


def _f(x: Any, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def _table(head: list[str], rows: list[list[str]], cls: str = "bench-results") -> nodes.table:
    table = nodes.table(classes=[cls])
    group = nodes.tgroup(cols=len(head))
    table += group
    for _ in head:
        group += nodes.colspec(colwidth=10)
    thead, tbody = nodes.thead(), nodes.tbody()
    thead += table_row(head)
    for r in rows:
        tbody += table_row(r)
    group += thead
    group += tbody
    return table


def setup(app) -> dict[str, Any]:
    app.add_directive("bench-results", BenchResults)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
