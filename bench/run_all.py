"""Run every benchmark of `bench/` and write `bench/results.json`, the record the book's Benchmarks page renders.

Runs, each in a fresh process (so threads and random states do not leak between them), measured side by side:
- `bench_batched.py`   every chapter's batched simulator against a Python loop over the same runs, repeated
                       (target: median >= 10x);
- `bench_sharpness.py` the Ch 6 eigen-solvers (learndyn's, PyHessian's own package, Cohen et al.'s method, the
                       dense Hessian) at measured equal accuracy over 10 seeds (targets: no slower than PyHessian;
                       within 1.1x (top 1) and 1.3x (top 3) of set-up + products x one product, with the product
                       `top_eigs` calls);
- every other `bench_*.py` (e.g. `bench_deep_linear.py`), whose printed output is kept;
- `notebook_times.py`'s timing of every chapter notebook in a fresh kernel and its share of time in input validation
  (targets: each <= 30 s, the whole book <= 120 s, validation < 3 % of each), with the check records sent to a
  temporary folder so the book's `_build/checks` is not touched; the entry it replaces is kept as the previous one.
Also records the date, the CPU, the thread count, the library versions and the load average before and after each
benchmark: the machine may be shared, and a load above the number of cores slows everything down. Then `page.py`
renders the record for the Benchmarks page (`<out>.md` and the accuracy-cost figure, next to `--out`).
`make bench` installs the peers of `bench/requirements.txt` (PyHessian, `--no-deps`) and runs this.

    .venv/bin/python bench/run_all.py                 # everything, about 20 minutes on 2 quiet cores
    .venv/bin/python bench/run_all.py --quick --out /tmp/results.json   # tiny sizes, no notebooks (for tests)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STRUCTURED = {  # script -> (key in results.json, extra arguments for --quick)
    "bench_batched.py": ("batched", ["--B", "4", "--steps", "20", "--repeats", "2"]),
    "bench_sharpness.py": ("sharpness_vs_pyhessian", ["--seeds", "2", "--n", "30", "--width", "4", "--narrow-n", "20",
                                                      "--narrow-width", "3", "--solvers", "learndyn krylov",
                                                      "PyHessian"]),
}
BOOK_BUDGET_S, NOTEBOOK_BUDGET_S, VALIDATION_TARGET, BATCH_TARGET = 120.0, 30.0, 0.03, 10.0
HVP_TARGET = {1: 1.1, 3: 1.3}  # the solver's seconds over set-up + its products, by k (issue 33); 1.3 for other k
PACKAGES = ("numpy", "scipy", "torch", "matplotlib", "scikit-learn", "learndyn", "pyhessian", "jupyter-book",
            "nbclient")


def machine(threads: int = 2) -> dict:
    """Date, CPU model, cores, threads and library versions."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpu": cpu, "cores": os.cpu_count(),
            "threads": threads, "platform": platform.platform(), "versions": versions, "commit": _commit()}


def run_script(script: Path, args: list[str], timeout: float, threads: int = 2) -> dict:
    """Run one benchmark script in a fresh process; its JSON (for the structured ones) or its printed output."""
    key = STRUCTURED.get(script.name, (script.stem.removeprefix("bench_"), []))[0]
    entry: dict = {"script": f"bench/{script.name}", "load_before": _load()}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, str(script), *args] + (["--json", str(out), "--threads", str(threads)]
                                                      if script.name in STRUCTURED else [])
        tic = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                                  env=_env(tmp, threads))
            entry.update(returncode=proc.returncode, stdout=proc.stdout[-20000:], stderr=proc.stderr[-3000:])
        except subprocess.TimeoutExpired as err:
            entry.update(returncode=None, stdout=(err.stdout or b"")[-6000:].decode(errors="replace")
                         if isinstance(err.stdout, bytes) else (err.stdout or "")[-6000:],
                         stderr=f"timed out after {timeout:.0f} s")
        entry["seconds"] = time.perf_counter() - tic
        if out.exists():
            entry["results"] = json.loads(out.read_text())
    entry["load_after"] = _load()
    if script.name == "bench_deep_linear.py":
        ratios = [float(x) for x in re.findall(r"ratio ([0-9.]+)x", entry.get("stdout", ""))]
        entry["results"] = {"ratio_cpu": ratios[0]} if ratios else None
    print(f"  {script.name}: rc {entry['returncode']}, {entry['seconds']:.0f} s, load {entry['load_after']:.1f}",
          flush=True)
    return {key: entry}


def notebook_times(paths: list[Path]) -> dict:
    """Each notebook in a fresh kernel, and its validation share (bench/notebook_times.py's `measure`)."""
    sys.path.insert(0, str(HERE))
    from notebook_times import measure  # noqa: PLC0415  (a sibling script, not a package)

    return measure(paths)


def targets(results: dict) -> list[dict]:
    """The targets of issue 11 with the measured values and whether each is met."""
    rows = []
    batched = (results.get("batched") or {}).get("results")
    if batched:
        worst = min(batched["rows"], key=lambda r: r["ratio"])
        rows.append({"target": f"batched sweep >= {BATCH_TARGET:g}x a Python loop (every simulator, median)",
                     "measured": f"{worst['ratio']:.1f}x [{worst.get('ratio_q1', worst['ratio']):.1f}–"
                                 f"{worst.get('ratio_q3', worst['ratio']):.1f}] (slowest: {worst['case']})",
                     "met": worst["ratio"] >= BATCH_TARGET})
    record = (results.get("sharpness_vs_pyhessian") or {}).get("results") or {}
    if record.get("full"):
        rows += sharpness_targets(record["full"], budget=record.get("power_budget"))
    nbs = results.get("notebooks")
    if nbs and nbs["rows"]:
        rows.append({"target": f"every notebook <= {NOTEBOOK_BUDGET_S:g} s", "met": bool(
            nbs["all_ran"] and nbs["max_s"] <= NOTEBOOK_BUDGET_S), "measured": f"max {nbs['max_s']:.1f} s"
            + ("" if nbs["all_ran"] else " (some notebooks failed)")})
        rows.append({"target": f"whole book cold <= {BOOK_BUDGET_S:g} s", "measured": f"{nbs['total_s']:.0f} s",
                     "met": bool(nbs["all_ran"] and nbs["total_s"] <= BOOK_BUDGET_S)})
        shares = [r["validation_share"] for r in nbs["rows"] if r.get("validation_share") is not None]
        if shares:
            rows.append({"target": f"input validation < {100 * VALIDATION_TARGET:g} % of every notebook",
                         "measured": f"max {100 * max(shares):.1f} %",
                         "met": len(shares) == len(nbs["rows"]) and max(shares) < VALIDATION_TARGET})
    return rows


def sharpness_targets(full: dict, ours: str = "learndyn krylov", budget: int | None = None) -> list[dict]:
    """Per k: PyHessian's seconds over ours at equal accuracy, and our overhead over our own products (medians)."""
    rows = []
    for k in sorted({r["k"] for r in full["rows"]}):
        mine = next((r for r in full["rows"] if r["k"] == k and r["method"] == ours), None)
        q = next((q for q in full.get("ratios", []) if q["k"] == k and q["ours"] == ours and q["peer"] == "PyHessian"),
                 None)
        if q:
            s = q["seconds"]
            rows.append({"target": f"top {k}: {ours} no slower than PyHessian at equal accuracy (1e-4)",
                         "measured": f"PyHessian / ours = {s['median']:.2f}x [{s['q1']:.2f}–{s['q3']:.2f}]"
                                     + ("" if q["both_reached"] else " (PyHessian did not reach the accuracy within "
                                        + (f"its budget of {budget} products)" if budget else "its product budget)")),
                         "met": bool(mine and mine["reached"] and (s["median"] >= 1.0 or not q["both_reached"]))})
        if mine:
            o, limit = mine["overhead"], HVP_TARGET.get(k, 1.3)
            rows.append({"target": f"top {k}: {ours} within {limit:g}x of set-up + products x one product "
                                   f"({mine['product']})",
                         "measured": f"{o['median']:.2f}x [{o['q1']:.2f}–{o['q3']:.2f}]",
                         "met": bool(o["median"] <= limit)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, only the structured benchmarks, no notebooks")
    parser.add_argument("--skip", nargs="*", default=[], help="script names to skip (e.g. bench_sharpness.py)")
    parser.add_argument("--no-notebooks", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per benchmark script")
    parser.add_argument("--args", nargs="*", default=[], metavar="SCRIPT=ARGS",
                        help="extra arguments of one script, e.g. 'bench_sharpness.py=--n 300' (a smaller run)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of every benchmark and notebook (on a "
                        "loaded machine, 1: two threads wait on each other when other programs hold the cores)")
    args = parser.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the notebooks' kernels follow it (learndyn.setup)
    extra = {name: more.split() for name, more in (a.split("=", 1) for a in args.args)}
    results: dict = {"machine": machine(args.threads), "load_start": _load(), "complete": False,
                     "command": " ".join(["bench/run_all.py", *(argv if argv is not None else sys.argv[1:])])}
    scripts = sorted(p for p in HERE.glob("bench_*.py") if p.name not in args.skip)
    if args.quick:
        scripts = [p for p in scripts if p.name in STRUCTURED]
    print(f"running {len(scripts)} benchmark scripts" + ("" if args.quick or args.no_notebooks else
                                                        " and the notebooks"), flush=True)
    # the record's notebook entry, read before anything is saved over it, to be shown beside the new one
    previous = json.loads(args.out.read_text()).get("notebooks") if args.out.exists() else None
    for script in scripts:
        results.update(run_script(script, (STRUCTURED.get(script.name, ("", []))[1] if args.quick else [])
                                  + extra.get(script.name, []), args.timeout, args.threads))
        _save(results, args.out)  # a record of what ran so far, should a later benchmark not finish
    if not (args.quick or args.no_notebooks):
        if previous:
            results["notebooks_previous"] = {**previous, "date": previous.get("date") or "before"}
        results["notebooks"] = notebook_times(sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")))
    results["load_end"] = _load()
    results["targets"] = targets(results)
    results["quick"] = bool(args.quick)
    results["complete"] = True
    _save(results, args.out)
    sys.path.insert(0, str(HERE))
    from page import write  # noqa: PLC0415  (a sibling script)

    for path in write(results, args.out.parent, args.out.stem):
        print(f"wrote {path}")
    for t in results["targets"]:
        print(f"{'met   ' if t['met'] else 'MISSED'} {t['target']}: {t['measured']}")
    print(f"wrote {args.out}")
    return 0


def _save(results: dict, out: Path) -> None:
    out.write_text(json.dumps(results, indent=1) + "\n")


def _load() -> float:
    """The 1-minute load average (processes wanting a core; above the core count everything slows down)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def _env(tmp: str, threads: int = 2) -> dict[str, str]:
    env = dict(os.environ, LEARNDYN_CHECKS_DIR=str(Path(tmp) / "checks"), PYTHONHASHSEED="0",
               OMP_NUM_THREADS=str(threads))
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _commit() -> str | None:
    """The checked-out commit (read only), or None outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


if __name__ == "__main__":
    sys.exit(main())
