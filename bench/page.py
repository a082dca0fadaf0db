"""The Benchmarks page's record, rendered from `bench/results.json`: the tables (Markdown) and the accuracy-cost figure.

`run_all.py` calls `write` after every run, so the page's tables, figure and printed outputs all come from one
record: `benchmarks.md` includes the Markdown file and shows the figure. Nothing is measured here.
    .venv/bin/python bench/page.py [bench/results.json]   # re-render the page's files from a record
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIGURE = "bench/accuracy_cost.png"  # relative to the book's root, where benchmarks.md is


def _f(x: object, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def _spread(s: dict | None, spec: str) -> str:
    """'median [q1–q3]'."""
    return "—" if not s else f"{s['median']:{spec}} [{s['q1']:{spec}}–{s['q3']:{spec}}]"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    cell = lambda x: str(x).replace("|", "\\|")  # noqa: E731
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(cell(x) for x in r) + " |" for r in rows), ""]


def _printout(entry: dict, label: str) -> list[str]:
    text = (entry.get("stdout") or "").strip() or (entry.get("stderr") or "").strip()
    if not text:
        return []
    return [f"{label} (`{entry['script']}`, return code {entry.get('returncode')}):", "", "````text", text, "````", ""]


def render(data: dict) -> str:
    """The Markdown of the page's record."""
    m = data.get("machine", {})
    out = []
    if data.get("quick"):
        out += ["```{warning}", "This record was written by `run_all.py --quick` (tiny sizes): not a measurement.",
                "```", ""]
    out += ["## The run", ""]
    out += _table(["Recorded", "CPU", "Threads", "Load average (start / end)", "Commit"],
                  [[m.get("date", "?"), f"{m.get('cpu', '?')} ({m.get('cores', '?')} cores)", m.get("threads", "?"),
                    f"{_f(data.get('load_start'), '.1f')} / {_f(data.get('load_end'), '.1f')}",
                    m.get("commit") or "—"]])
    versions = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items() if v)
    out += [f"Library versions: {versions}."
            + (f" Command: `{data['command']}`, {m.get('threads')} torch thread(s) per process." if data.get("command")
               else ""), ""]
    if data.get("targets"):
        out += ["## Targets", ""]
        out += _table(["Target", "Measured", "Met"],
                      [[t["target"], t["measured"], "yes" if t["met"] else "no"] for t in data["targets"]])
    sharp = data.get("sharpness_vs_pyhessian")
    if sharp and sharp.get("results"):
        out += _sharpness(sharp)
    batched = data.get("batched")
    if batched and batched.get("results"):
        res = batched["results"]
        out += ["## Batched sweeps against a Python loop over the same runs", "",
                f"Median [interquartile range] over {res.get('repeats', 1)} repeats, CPU.", ""]
        out += _table(["Simulator (chapter)", "Runs x steps", "Batched (s)", "Loop (s)", "Loop / batched",
                       "Max rel. difference"],
                      [[f"{r['case']} ({r['chapter']})", f"{r['B']} x {r['steps']}",
                        _spread(r.get("batched"), ".3f"), _spread(r.get("loop"), ".2f"),
                        _spread({"median": r["ratio"], "q1": r.get("ratio_q1", r["ratio"]),
                                 "q3": r.get("ratio_q3", r["ratio"])}, ".1f"), _f(r["rel_diff"], ".0e")]
                       for r in res["rows"]])
        out += _printout(batched, "Printed by the same run as the table above")
    nbs = data.get("notebooks")
    if nbs and nbs.get("rows"):
        out += _notebooks(nbs, data.get("notebooks_previous"))
    others = [e for k, e in data.items() if isinstance(e, dict) and "script" in e and k not in TABULATED]
    if others:
        out += ["## Other benchmark scripts (separate runs)", "",
                "These scripts ran for the same record, each in its own process. They time some of the same "
                "operations again, so their numbers differ from the tables' by the run-to-run variation.", ""]
        for e in others:
            out += _printout(e, "A separate run")
    return "\n".join(out).rstrip() + "\n"


TABULATED = ("batched", "sharpness_vs_pyhessian")


def _notebooks(nbs: dict, previous: dict | None) -> list[str]:
    """Each notebook's seconds and validation share, each beside the previous record's where there is one."""
    before = {r["notebook"]: r for r in (previous or {}).get("rows", [])}

    def pct(row: dict | None) -> float | None:
        return None if row is None or row.get("validation_share") is None else 100 * row["validation_share"]

    rows = [[r["notebook"], _f(r["seconds"], ".1f"), _f(before.get(r["notebook"], {}).get("seconds"), ".1f"),
             _f(r.get("cpu_seconds"), ".1f"), _f(pct(r), ".1f"), _f(pct(before.get(r["notebook"])), ".1f"),
             "failed: " + r["error"] if r["error"] else
             ("ok" if r["seconds"] <= nbs["budget_each_s"] else "over budget")
             + ("; validation not measured (profiled run failed)" if r.get("profile_error") else "")]
            for r in nbs["rows"]]
    if nbs.get("partial"):  # the measured notebooks' total, beside the previous record's for the same notebooks
        old = [before.get(r["notebook"], {}).get("seconds") for r in nbs["rows"]]
        rows.append([f"these {len(nbs['rows'])} notebooks", _f(nbs["total_s"], ".0f"),
                     _f(None if None in old else sum(old), ".0f"), _f(nbs.get("cpu_total_s"), ".0f"), "", "",
                     f"book budget {nbs['budget_total_s']:g} s"])
    else:
        rows.append(["whole book", _f(nbs["total_s"], ".0f"), _f((previous or {}).get("total_s"), ".0f"),
                     _f(nbs.get("cpu_total_s"), ".0f"), "", "",
                     f"budget {nbs['budget_total_s']:g} s"])
    when = f" Previous: the record of {previous['date']}." if previous and previous.get("date") else ""
    loads = [x for r in nbs["rows"] for x in (r.get("load_before"), r.get("load_after")) if x is not None]
    load = f" The machine's load average during the run: {min(loads):.1f} to {max(loads):.1f}." if loads else ""
    partial = (f" Only {len(nbs['rows'])} notebooks were measured for this record (`notebook_times.py` was given a "
               "list): the book's total is theirs." if nbs.get("partial") else "")
    return ["## Notebook execution, each in a fresh kernel", "",
            *_network_floor(nbs),
            "Seconds of one run of each notebook in a fresh kernel (wall time; CPU: the seconds of CPU its kernel "
            "spent, all threads, which a load on the machine inflates far less than the wall time); validation: the "
            "percentage of the notebook's "
            "profiled run (a separate process, `profile_notebook.py`'s cProfile run of its code) spent in "
            f"validating learndyn's input, target under 3 %; previous: the same measurements in the previous record, "
            f"where it has them.{when}{load}{partial}", "",
            *_table(["Notebook", "Seconds", "Previous (s)", "CPU (s)", "Validation (%)", "Previous (%)", "Status"],
                    rows)]


def _network_floor(nbs: dict) -> list[str]:
    """The seconds that a notebook's network arithmetic needs at best: its profiled run's counts of Hessian-vector
    products and training gradients of Chapter 6's network, each at its speed timed alone in the same record."""
    units = nbs.get("network_unit_s")
    rows = [r for r in nbs["rows"] if r.get("products") or r.get("gradients")]
    if not units or not rows:
        return []
    p_ms, g_ms = 1e3 * units["product_s"], 1e3 * units["gradient_s"]
    parts = []
    for r in rows:
        floor = r.get("products", 0) * units["product_s"] + r.get("gradients", 0) * units["gradient_s"]
        parts.append(f"`{r['notebook']}` makes {r.get('products', 0)} Hessian-vector products and "
                     f"{r.get('gradients', 0)} gradients of the network (counted in its profiled run): "
                     f"{floor:.0f} s at that speed, of its {_f(r['seconds'], '.1f')} s")
    return [f"The network arithmetic: in this record one Hessian-vector product of Chapter 6's network "
            f"({units['model']}) takes {p_ms:.1f} ms and one training gradient {g_ms:.1f} ms, each the median of "
            f"calls timed alone at {units['threads']} threads. " + "; ".join(parts) + ".", ""]


def _beside(res: dict) -> bool:
    """Whether the record timed each run's product beside it (records before 2026-12-04 timed it once)."""
    return any("product_s" in run for part in ("full", "narrow") for row in (res.get(part) or {}).get("rows", [])
               for run in row.get("runs", []))


def _sharpness(entry: dict) -> list[str]:
    res = entry["results"]
    out = ["## Top Hessian eigenvalues at equal accuracy", "",
           f"{res['seeds']} seeds (start vectors) per solver; each solver at the loosest setting of its grid at which "
           f"every seed's worst relative error over the top k is at most {res['target']:g} (or, marked *not "
           "reached*, where its product budget stopped it first). Products: Hessian-vector products. Overhead: "
           "seconds / (set-up + products x one product), with the product that solver calls, timed alone"
           + (" beside each run (the median of three products just before it and three just after, so that a drift "
              "of the machine's speed cancels in the ratio). " if _beside(res) else ". ")
           + "Median [interquartile range] over the seeds."
           + (f" The power-type solvers (learndyn power, PyHessian) may use at most {res['power_budget']} products per "
              "run." if res.get("power_budget") else ""), ""]
    for key, title in (("full", "Ch 6 model"), ("narrow", "Narrowed model")):
        r = res.get(key)
        if not r:
            continue
        mod = r["model"]
        ref = ", ".join(f"{x:.6f}" for x in r["reference"][:3])
        d = r.get("dense_over_krylov_top3")
        extra = (f"; the dense Hessian and `eigvalsh` took {r['dense_s']:.2f} s, "
                 + (f"{_spread(d, '.1f')} times learndyn krylov's top 3" if d else "") if "dense_s" in r else
                 f"; a residual-1e-10 Krylov run agrees with it to {r['reference_check']:.0e}")
        out += [f"### {title}: {mod['n']} digits, width {mod['width']}, {mod['parameters']} parameters", "",
                f"Reference ({r['reference_method']}): {ref}{extra}.", ""]
        out += _table(["Solver (product)", "k", "Setting", "Products", "Seconds", "Worst error", "Overhead"],
                      [[f"{x['method']} ({x['product']})", x["k"], f"tol {x['tol']:.0e}", _spread(x["products"], ".0f"),
                        _spread(x["seconds"], ".3f"),
                        f"{x['max_rel_error']:.1e}" + ("" if x["reached"] else " (not reached)"),
                        _spread(x["overhead"], ".2f")] for x in r["rows"]])
        rat = [q for q in r.get("ratios", []) if q["ours"] == "learndyn krylov"]
        if rat:
            out += [f"Seconds of each peer over learndyn krylov's ({title}), over all pairs of seeds:", ""]
            out += _table(["Peer", "k", "Peer / learndyn krylov", "Products, peer / ours", "Equal accuracy"],
                          [[q["peer"], q["k"], _spread(q["seconds"], ".2f"), _spread(q["products"], ".2f"),
                            "yes" if q["both_reached"] else "no: the peer did not reach the target"] for q in rat])
        if key == "full":
            out += _figure_directive(res)
    out += _printout(entry, "Printed by the same run as the tables above (all ratios, also against power and "
                            "Lanczos)")
    return out


def _figure_directive(res: dict) -> list[str]:
    return [f"```{{figure}} {FIGURE}",
            ":alt: Scatter plots of the worst relative error over the top eigenvalue and over the top 3 eigenvalues "
            "against the number of Hessian-vector products and against seconds, one point per "
            "start vector, one colour per solver, with the target as a dashed line.", ":width: 100%", "",
            "Accuracy against cost on the Ch 6 model: the worst relative error over the top k against the "
            "Hessian-vector products (left) and the seconds (right) of each run, one marker per seed, one colour per "
            "solver; filled at the setting of the table above, hollow at the looser settings tried before it; dashed: "
            f"the target {res['target']:g}. Errors below 1e-16 are drawn at 1e-16.", "```", ""]


def figure(data: dict, path: Path) -> bool:
    """Achieved error against products and against seconds, one marker per seed, one colour per solver (Ch 6
    model; hollow markers: the looser settings tried first). False when the record has no eigen-solver results."""
    res = ((data.get("sharpness_vs_pyhessian") or {}).get("results") or {}).get("full")
    if not res:
        return False
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    import matplotlib.ticker  # noqa: PLC0415

    from learndyn.plotting import COLORS, set_style  # noqa: PLC0415

    set_style()
    palette = [COLORS[i] for i in (0, 1, 2, 5, 3, 7, 4, 6)]  # six solvers, six colours told apart
    names = list(dict.fromkeys(r["method"] for r in res["rows"]))
    ks = sorted({r["k"] for r in res["rows"]})
    fig, axes = plt.subplots(len(ks), 2, figsize=(8.4, 3.0 * len(ks)), squeeze=False, sharey=True)
    target = data["sharpness_vs_pyhessian"]["results"]["target"]
    for i, k in enumerate(ks):
        for row in (r for r in res["rows"] if r["k"] == k):
            c = palette[names.index(row["method"]) % len(palette)]
            for j, x in enumerate(("products", "seconds")):
                ax = axes[i, j]
                old = [run for t in row["tried"] for run in t["runs"]]
                if old:
                    ax.scatter([o[x] for o in old], [max(o["rel_error"], 1e-16) for o in old], s=14,
                               facecolors="none", edgecolors=c, alpha=0.5, linewidths=0.8)
                ax.scatter([o[x] for o in row["runs"]], [max(o["rel_error"], 1e-16) for o in row["runs"]], s=16,
                           color=c, label=row["method"] if i == 0 and j == 0 else None)
        for j, x in enumerate(("Hessian-vector products", "seconds")):
            ax = axes[i, j]
            ax.axhline(target, color="0.3", ls="--", lw=0.8)
            ax.set(xscale="log", yscale="log", xlabel=x, title=f"top {k}" if k > 1 else "top eigenvalue")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        axes[i, 0].set_ylabel("worst relative error")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=200, metadata={"Description": f"bench/results.json of {data['machine']['date']}"})
    plt.close(fig)
    return True


def write(data: dict, folder: Path = HERE, stem: str = "results") -> list[Path]:
    """Write `folder/<stem>.md` and the figure; returns the paths written."""
    md = folder / f"{stem}.md"
    md.write_text(render(data))
    png = folder / Path(FIGURE).name
    return [md] + ([png] if figure(data, png) else [])


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results.json"
    for p in write(json.loads(src.read_text()), src.parent, src.stem):
        print(f"wrote {p}")
