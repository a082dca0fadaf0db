"""Where does a chapter notebook spend its time? Per-cell wall times, and optionally a cProfile of its code.

    .venv/bin/python bench/profile_notebook.py chapters/02_deep_linear.ipynb [--top 10] [--cprofile]

Cells: the notebook runs in a fresh kernel (as `notebook_times.py` does) and the slowest cells are listed with
their first line. --cprofile: the code cells are also concatenated into one script (IPython magics and shell lines
dropped), run under cProfile in a fresh process with the Agg backend, and the functions with the largest
cumulative time are printed: that is what to make cheaper; then the share of the run spent validating input (core's
argument checkers and the modules' `_check*`/`_validate*` helpers, each counted once from outside the checkers).
--no-cells skips the per-cell run. Check records go to a temporary folder either way (LEARNDYN_CHECKS_DIR), so
profiling does not touch the book's `_build/checks`. Not a test: timings are noisy.
"""

from __future__ import annotations

import argparse
import inspect
import os
import pstats
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def cell_times(path: Path) -> list[tuple[float, int, str]]:
    """(seconds, cell index, first line) for every code cell, from nbclient's execution timestamps."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    rows = []
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("execution", {})
        if cell.cell_type != "code" or "iopub.execute_input" not in meta:
            continue
        start = datetime.fromisoformat(meta["iopub.execute_input"].replace("Z", "+00:00"))
        end = datetime.fromisoformat(meta["shell.execute_reply"].replace("Z", "+00:00"))
        first = next((ln for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("#")), "")
        rows.append(((end - start).total_seconds(), i, first[:90]))
    return rows


def notebook_script(path: Path) -> str:
    """The code cells of the notebook as one Python script (magics and shell escapes dropped)."""
    nb = nbformat.read(path, as_version=4)
    lines = ["import matplotlib", "matplotlib.use('Agg')"]
    for cell in nb.cells:
        if cell.cell_type == "code":
            lines += [ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    return "\n".join(lines) + "\n"


# Input validation: core's argument checkers and the modules' private `_check*`/`_validate*` helpers.
CORE_VALIDATORS = ("as_", "_real_numpy", "expect_shape", "check_finite", "check_alloc", "broadcast", "no_overflow",
                   "steps_for", "_short", "_bad_device", "_to_numpy")


def is_validator(func: tuple[str, int, str]) -> bool:
    """Whether a pstats function key (file, line, name) is one of learndyn's input checks."""
    file, _, name = func
    if "learndyn" not in file:
        return False
    if file.endswith("core.py") and name.startswith(CORE_VALIDATORS):
        return True
    return name.startswith(("_check", "_validate")) and not name.startswith("_checkpoint")


def validation_share(stats: pstats.Stats) -> tuple[float, float]:
    """(seconds in input validation, total seconds) of a profile: each validator's time counted once, from the
    calls that came from outside the validators (a checker calling another is not counted twice)."""
    raw = stats.stats  # type: ignore[attr-defined]
    spent = 0.0
    for func, (_, _, _, _, callers) in raw.items():
        if is_validator(func):
            spent += sum(c[3] for caller, c in callers.items() if not is_validator(caller))
    return spent, stats.total_tt  # type: ignore[attr-defined]


def _nested_key(fn: object, name: str) -> tuple[str, int, str]:
    """The pstats key (file, first line, name) of the function `name` defined inside `fn`."""
    code = next(c for c in fn.__code__.co_consts if inspect.iscode(c) and c.co_name == name)  # type: ignore[attr-defined]
    return code.co_filename, code.co_firstlineno, code.co_name


def network_calls(stats: pstats.Stats) -> dict[str, int]:
    """How many Hessian-vector products (`hvp_operator`'s) and training gradients (`train_gd_sharpness`'s and
    `gf_reference`'s) of a network the profiled run made: the units of Chapter 6's arithmetic."""
    from learndyn import hessian, sharpness  # noqa: PLC0415 (the profiled library, imported only here)

    keys = {"products": _nested_key(hessian.hvp_operator, "matvec"),
            "gradients": _nested_key(sharpness._grad_and_value, "grad_and_value")}
    raw = stats.stats  # type: ignore[attr-defined]
    return {what: int(raw[key][1]) if key in raw else 0 for what, key in keys.items()}


def profile_script(path: Path, top: int, save: Path | None = None) -> pstats.Stats:
    """Run the notebook's code under cProfile (in its folder); print the top functions by cumulative time, the
    validators that cost most and the share of the run spent validating input. `save`: keep the profile there."""
    with tempfile.TemporaryDirectory() as tmp:
        script, prof = Path(tmp) / "nb.py", save.resolve() if save else Path(tmp) / "nb.prof"
        script.write_text(notebook_script(path))
        subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), str(script)], cwd=path.parent,
                       check=True, stdout=subprocess.DEVNULL)
        stats = pstats.Stats(str(prof))
    if top:
        stats.sort_stats("cumulative").print_stats(top)
        for (file, line, name), secs, caller in validators_by_caller(stats)[:top // 3]:
            print(f"  validation {secs:6.2f} s  {Path(file).name}:{line}({name}) from {caller}")
    spent, total = validation_share(stats)
    print(f"{path.name}: input validation {spent:.2f} s of {total:.1f} s profiled ({100 * spent / total:.1f} %)")
    return stats


def validators_by_caller(stats: pstats.Stats) -> list[tuple[tuple[str, int, str], float, str]]:
    """(validator, seconds, 'file:line(caller)') for each call site outside the validators, costliest first."""
    rows = []
    for func, (_, _, _, _, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if is_validator(func):
            rows += [(func, c[3], f"{Path(k[0]).name}:{k[1]}({k[2]})") for k, c in callers.items()
                     if not is_validator(k)]
    return sorted(rows, key=lambda r: -r[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--cprofile", action="store_true", help="also profile the notebook's code with cProfile")
    parser.add_argument("--no-cells", action="store_true", help="skip the per-cell timing run (with --cprofile)")
    parser.add_argument("--save", type=Path, help="keep the cProfile output in this file (with --cprofile)")
    args = parser.parse_args(argv)
    os.environ.setdefault("LEARNDYN_CHECKS_DIR", tempfile.mkdtemp(prefix="checks_"))
    if args.no_cells:
        profile_script(args.notebook.resolve(), args.top * 3, args.save)
        return 0
    tic = time.perf_counter()
    rows = cell_times(args.notebook.resolve())
    total = time.perf_counter() - tic
    print(f"{args.notebook}: {total:.1f} s in a fresh kernel, {sum(r[0] for r in rows):.1f} s in code cells")
    for secs, i, first in sorted(rows, reverse=True)[: args.top]:
        print(f"  cell {i:3d} {secs:6.1f} s  {first}")
    if args.cprofile:
        profile_script(args.notebook.resolve(), args.top * 3, args.save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
