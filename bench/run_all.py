"""Run every benchmark of `bench/` and write `bench/results.json`, the record the book's Benchmarks page renders.

Runs, each in a fresh process (so threads and random states do not leak between them), measured side by side:
- `bench_batched.py`   every chapter's batched simulator against a Python loop over the same runs (target >= 10x);
- `bench_pyhessian.py` the Ch 6 sharpness estimator against PyHessian's power iteration at equal accuracy, and
                       its time against (number of HVPs) x (one HVP) (targets: no slower; within 1.3x);
- every other `bench_*.py` (e.g. `bench_deep_linear.py`, `bench_sharpness.py`), whose printed output is kept;
- `notebook_times.py`'s timing of every chapter notebook in a fresh kernel (targets: each <= 60 s, the whole book
  <= 240 s), with the check records sent to a temporary folder so the book's `_build/checks` is not touched.
Also records the date, the CPU, the thread count, the library versions and the load average before and after each
benchmark: the machine may be shared, and a load above the number of cores slows everything down.

    .venv/bin/python bench/run_all.py                 # everything, about 10 minutes on 2 cores
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
    "bench_batched.py": ("batched", ["--B", "4", "--steps", "20"]),
    "bench_pyhessian.py": ("sharpness_vs_pyhessian", ["--n", "100", "--width", "8", "--target", "1e-3"]),
}
BOOK_BUDGET_S, NOTEBOOK_BUDGET_S, BATCH_TARGET, HVP_TARGET = 240.0, 60.0, 10.0, 1.3
PACKAGES = ("numpy", "scipy", "torch", "matplotlib", "scikit-learn", "learndyn", "jupyter-book", "nbclient")


def machine() -> dict:
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
            "threads": 2, "platform": platform.platform(), "versions": versions, "commit": _commit()}


def run_script(script: Path, args: list[str], timeout: float) -> dict:
    """Run one benchmark script in a fresh process; its JSON (for the structured ones) or its printed output."""
    key = STRUCTURED.get(script.name, (script.stem.removeprefix("bench_"), []))[0]
    entry: dict = {"script": f"bench/{script.name}", "load_before": _load()}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, str(script), *args] + (["--json", str(out)] if script.name in STRUCTURED else [])
        tic = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=_env(tmp))
            entry.update(returncode=proc.returncode, stdout=proc.stdout[-6000:], stderr=proc.stderr[-3000:])
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


def notebook_times(paths: list[Path], timeout: float) -> dict:
    """Each notebook in a fresh kernel (bench/notebook_times.py's `run`), failures recorded instead of raised."""
    sys.path.insert(0, str(HERE))
    from notebook_times import run  # noqa: PLC0415  (a sibling script, not a package)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.environ.get("LEARNDYN_CHECKS_DIR")
        os.environ["LEARNDYN_CHECKS_DIR"] = tmp
        try:
            for path in paths:
                load = _load()
                try:
                    seconds, error = run(path), None
                except Exception as err:  # a failing notebook is a result too
                    seconds, error = None, f"{type(err).__name__}: {str(err).strip().splitlines()[-1][:300]}"
                rows.append({"notebook": path.name, "seconds": seconds, "error": error, "load_before": load,
                             "load_after": _load()})
                print(f"  {path.name}: {seconds if seconds is None else round(seconds, 1)} s"
                      f"{' FAILED' if error else ''}", flush=True)
        finally:
            if saved is None:
                os.environ.pop("LEARNDYN_CHECKS_DIR", None)
            else:
                os.environ["LEARNDYN_CHECKS_DIR"] = saved
    done = [r["seconds"] for r in rows if r["seconds"] is not None]
    return {"rows": rows, "total_s": sum(done), "max_s": max(done, default=None),
            "budget_each_s": NOTEBOOK_BUDGET_S, "budget_total_s": BOOK_BUDGET_S,
            "all_ran": all(r["error"] is None for r in rows)}


def targets(results: dict) -> list[dict]:
    """The targets of issue 11 with the measured values and whether each is met."""
    rows = []
    batched = (results.get("batched") or {}).get("results")
    if batched:
        worst = min(batched["rows"], key=lambda r: r["ratio"])
        rows.append({"target": f"batched sweep >= {BATCH_TARGET:g}x a Python loop (every simulator)",
                     "measured": f"{worst['ratio']:.1f}x (slowest: {worst['case']})",
                     "met": worst["ratio"] >= BATCH_TARGET})
    sharp = (results.get("sharpness_vs_pyhessian") or {}).get("results")
    if sharp:
        s = sharp["summary"]
        rows.append({"target": "sharpness no slower than PyHessian at equal accuracy",
                     "measured": f"PyHessian / ours = {s['pyhessian_over_ours_power']:.2f}x (power), "
                                 f"{s['pyhessian_over_ours_lanczos']:.2f}x (Lanczos)",
                     "met": bool(s["met_no_slower"])})
        rows.append({"target": f"sharpness within {HVP_TARGET:g}x of (HVP count) x (one HVP)",
                     "measured": f"{s['ours_power_hvp_overhead']:.2f}x (power)", "met": bool(s["met_overhead"])})
    nbs = results.get("notebooks")
    if nbs and nbs["rows"]:
        rows.append({"target": f"every notebook <= {NOTEBOOK_BUDGET_S:g} s", "met": bool(
            nbs["all_ran"] and nbs["max_s"] <= NOTEBOOK_BUDGET_S), "measured": f"max {nbs['max_s']:.1f} s"
            + ("" if nbs["all_ran"] else " (some notebooks failed)")})
        rows.append({"target": f"whole book cold <= {BOOK_BUDGET_S:g} s", "measured": f"{nbs['total_s']:.0f} s",
                     "met": bool(nbs["all_ran"] and nbs["total_s"] <= BOOK_BUDGET_S)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, only the structured benchmarks, no notebooks")
    parser.add_argument("--skip", nargs="*", default=[], help="script names to skip (e.g. bench_sharpness.py)")
    parser.add_argument("--no-notebooks", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per benchmark script")
    args = parser.parse_args(argv)
    results: dict = {"machine": machine(), "load_start": _load()}
    scripts = sorted(p for p in HERE.glob("bench_*.py") if p.name not in args.skip)
    if args.quick:
        scripts = [p for p in scripts if p.name in STRUCTURED]
    print(f"running {len(scripts)} benchmark scripts" + ("" if args.quick or args.no_notebooks else
                                                        " and the notebooks"), flush=True)
    for script in scripts:
        results.update(run_script(script, STRUCTURED.get(script.name, ("", []))[1] if args.quick else [],
                                  args.timeout))
    if not (args.quick or args.no_notebooks):
        results["notebooks"] = notebook_times(sorted((ROOT / "chapters").glob("*.ipynb")), args.timeout)
    results["load_end"] = _load()
    results["targets"] = targets(results)
    results["quick"] = bool(args.quick)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    for t in results["targets"]:
        print(f"{'met   ' if t['met'] else 'MISSED'} {t['target']}: {t['measured']}")
    print(f"wrote {args.out}")
    return 0


def _load() -> float:
    """The 1-minute load average (processes wanting a core; above the core count everything slows down)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def _env(tmp: str) -> dict[str, str]:
    env = dict(os.environ, LEARNDYN_CHECKS_DIR=str(Path(tmp) / "checks"), PYTHONHASHSEED="0", OMP_NUM_THREADS="2")
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
