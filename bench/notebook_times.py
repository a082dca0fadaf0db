"""Execute each chapter notebook in a fresh kernel: seconds per notebook and the share spent validating input.

Usage (from the repository root):

    .venv/bin/python bench/notebook_times.py [chapters/NN_slug.ipynb ...] [--no-profile] [--record bench/results.json]

Each notebook runs once in a fresh kernel (nbclient, as a reader's Jupyter would) for its wall time, then once more
as a script under cProfile in a fresh process of its own (`profile_notebook.py`'s machinery) for the share of its
time spent in learndyn's input checks (target: under 3 %) and the number of Hessian-vector products and training
gradients of a network it made (priced by `network_unit_seconds`, one of each timed alone on Chapter 6's network:
the least time that notebook's network arithmetic needs); the profiled run is never the timed one, whose seconds
would otherwise carry the profiler's overhead. The budgets are 30 s per notebook and 120 s for the book on 2 CPU
cores; a notebook over budget is flagged. `--record FILE` writes the measurement (seconds and validation share of
every notebook) into the benchmarks record (`bench/results.json`) as its "notebooks" entry, keeping the entry it
replaces as "notebooks_previous", so the Benchmarks page shows each number beside the previous record's; then
re-renders the page. A run on a list of notebooks is marked partial in the record (the page says so). Check records
go to a temporary folder, so the book's `_build/checks` is not touched. Not a test: timings are noisy, and a load
above the core count makes every time pessimistic.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

BUDGET_S, BOOK_BUDGET_S, VALIDATION_TARGET = 30.0, 120.0, 0.03
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


_CPU_PROBE = ("import resource as _r\n_u = _r.getrusage(_r.RUSAGE_SELF)\n"
              "print('__cpu_seconds__', _u.ru_utime + _u.ru_stime)")


def run(path: Path) -> tuple[float, float | None]:
    """Wall seconds to execute the notebook in a fresh kernel (in its own folder), and the CPU seconds its kernel
    spent in the notebook's cells (all threads; read by a probe cell before the first cell and after the last).

    On a quiet machine the wall time is the reader's number. On a loaded one it grows with the load, while the CPU
    time of a one-thread kernel stays close to the quiet wall time (it grows only through shared caches)."""
    nb = nbformat.read(path, as_version=4)
    nb.cells = [nbformat.v4.new_code_cell(_CPU_PROBE), *nb.cells, nbformat.v4.new_code_cell(_CPU_PROBE)]
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    wall = time.perf_counter() - start
    cpu = [float(line.split()[1]) for cell in (nb.cells[0], nb.cells[-1]) for out in cell.get("outputs", [])
           for line in str(out.get("text", "")).splitlines() if line.startswith("__cpu_seconds__")]
    return wall, (cpu[1] - cpu[0] if len(cpu) == 2 else None)


def profiled(path: Path) -> tuple[float, dict[str, int]]:
    """The fraction of the notebook's profiled run spent in learndyn's input checks, and the network products and
    gradients it made: `profile_notebook.py` runs the notebook's code under cProfile in a fresh process (one per
    notebook), counts each checker once, and counts the calls of the network's Hessian-vector product and gradient."""
    sys.path.insert(0, str(HERE))
    import profile_notebook  # noqa: PLC0415 (a sibling script)

    stats = profile_notebook.profile_script(path, 0)
    spent, total = profile_notebook.validation_share(stats)
    return (spent / total if total else 0.0), profile_notebook.network_calls(stats)


def network_unit_seconds(repeat: int = 30) -> dict:
    """Seconds of one Hessian-vector product and one training gradient of Chapter 6's network (64-100-100-100-10
    tanh on 1000 digits, float32, MSE), each the median of `repeat` calls timed alone, at this process's torch
    threads (OMP_NUM_THREADS, as the notebooks' kernels): with the counts of a notebook's profiled run, the time its
    network arithmetic needs at best."""
    import torch  # noqa: PLC0415 (the measurement's own imports: the timing loop above needs none)

    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from bench_sharpness import timed  # noqa: PLC0415 (a sibling script: the median of repeated calls)

    from learndyn import core, sharpness  # noqa: PLC0415

    threads = core.set_threads()
    X, Y, _ = sharpness.digits_tensors(1000, device="cpu")
    model = sharpness.make_mlp(seed=3)
    loss, params = sharpness.model_loss(model, X, Y)
    product = sharpness.hvp_operator(loss, params)
    grad = sharpness._grad_and_value(lambda p: sharpness._loss_and_out(model, p, X, Y, "mse"))
    x = torch.randn(sum(t.numel() for t in params.values()), generator=torch.Generator().manual_seed(0))

    def median(fn) -> float:
        fn()  # warm-up
        return timed(fn, repeat)[0]

    return {"product_s": median(lambda: product(x)), "gradient_s": median(lambda: grad(params)), "threads": threads,
            "model": "Ch 6: 64-100-100-100-10 tanh, 1000 digits, float32, MSE"}


def _load() -> float:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def measure(paths: list[Path], profile: bool = True, partial: bool = False) -> dict:
    """Every notebook timed (and profiled), failures recorded instead of raised: the record's "notebooks" entry.
    partial: `paths` is a chosen list, not the whole book (recorded, so the page does not call it the book)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.environ.get("LEARNDYN_CHECKS_DIR")
        os.environ["LEARNDYN_CHECKS_DIR"] = tmp
        try:
            for path in paths:
                load = _load()
                try:
                    (seconds, cpu), error = run(path), None
                except Exception as err:  # a failing notebook is a result too
                    seconds, cpu = None, None
                    error = f"{type(err).__name__}: {str(err).strip().splitlines()[-1][:300]}"
                row = {"notebook": path.name, "seconds": seconds, "cpu_seconds": cpu, "error": error,
                       "load_before": load, "load_after": _load(), "validation_share": None}
                if profile and error is None:
                    try:
                        row["validation_share"], calls = profiled(path)
                        row.update(calls)
                    except Exception as err:  # the time stands; the share is missing, and says why
                        row["profile_error"] = f"{type(err).__name__}: {str(err).strip()[-300:]}"
                rows.append(row)
                share = row["validation_share"]
                print(f"  {path.name}: {seconds if seconds is None else round(seconds, 1)} s"
                      f"{'' if cpu is None else f' ({cpu:.1f} s CPU)'}"
                      f"{' FAILED' if error else ''}"
                      f"{'' if share is None else f', validation {100 * share:.1f} %'}", flush=True)
        finally:
            if saved is None:
                os.environ.pop("LEARNDYN_CHECKS_DIR", None)
            else:
                os.environ["LEARNDYN_CHECKS_DIR"] = saved
    units = network_unit_seconds() if profile else None
    done = [r["seconds"] for r in rows if r["seconds"] is not None]
    cpu_done = [r["cpu_seconds"] for r in rows if r["cpu_seconds"] is not None]
    return {"cpu_total_s": sum(cpu_done),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "threads": os.environ.get("OMP_NUM_THREADS"),
            "rows": rows, "total_s": sum(done), "max_s": max(done, default=None), "budget_each_s": BUDGET_S,
            "budget_total_s": BOOK_BUDGET_S, "validation_target": VALIDATION_TARGET,
            "all_ran": all(r["error"] is None for r in rows), "partial": partial, "network_unit_s": units}


def record(entry: dict, out: Path) -> None:
    """Put `entry` into the benchmarks record `out` as "notebooks" (the old entry becomes "notebooks_previous"),
    recompute the targets and re-render the Benchmarks page's files."""
    sys.path.insert(0, str(HERE))
    from page import write  # noqa: PLC0415 (sibling scripts)
    from run_all import targets

    data = json.loads(out.read_text())
    if data.get("notebooks"):
        data["notebooks_previous"] = {**data["notebooks"], "date": data["notebooks"].get("date")
                                      or data.get("machine", {}).get("date")}
    data["notebooks"] = entry
    data["targets"] = targets(data)
    if entry.get("partial"):  # a chosen list of notebooks says nothing about the whole book's time
        print(f"warning: a partial measurement ({len(entry['rows'])} notebooks) recorded into {out}")
        for t in data["targets"]:
            if t["target"].startswith("whole book"):
                t.update(measured=f"{t['measured']} for {len(entry['rows'])} notebooks only (partial run)", met=False)
    out.write_text(json.dumps(data, indent=1) + "\n")
    for path in write(data, out.parent, out.stem):
        print(f"wrote {path}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--no-profile", action="store_true", help="wall times only (no validation share)")
    parser.add_argument("--record", type=Path, help="write into this benchmarks record (bench/results.json)")
    args = parser.parse_args(argv)
    book = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    paths = [p.resolve() for p in args.notebooks] or book
    entry = measure(paths, profile=not args.no_profile, partial={p.name for p in paths} != {p.name for p in book})
    width = max(len(r["notebook"]) for r in entry["rows"])
    print(f"{'notebook':<{width}}  seconds  CPU s  validation  budget")
    for r in entry["rows"]:
        secs, share, cpu = r["seconds"], r["validation_share"], r.get("cpu_seconds")
        print(f"{r['notebook']:<{width}}  {'failed' if secs is None else f'{secs:7.1f}'}  "
              f"{'' if cpu is None else f'{cpu:5.1f}'}  "
              f"{'' if share is None else f'{100 * share:9.1f} %'}  "
              f"{'ok' if secs is not None and secs <= BUDGET_S else 'OVER'}")
    print(f"{'total':<{width}}  {entry['total_s']:7.1f}  (budget {BOOK_BUDGET_S:g} s)")
    if args.record:
        record(entry, args.record)
    return 0 if entry["all_ran"] and entry["max_s"] <= BUDGET_S and entry["total_s"] <= BOOK_BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
