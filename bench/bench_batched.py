"""Benchmark (not a test): every chapter's batched simulator against a Python loop over the same B runs.

For each case of `sim_cases.py` (Ch 2 two-layer linear GD, Ch 3 non-contrastive flow, Ch 4 Barlow Twins,
Ch 5 GD on separable data, Ch 7 large-step logistic GD): one batched call of B runs and a loop of B single-run
calls, timed side by side in one process after a warm-up, plus the largest relative difference of their results
(the loop must do the same arithmetic: it is about 1e-16). Target: batched at least 10x faster on 2 CPU cores.
Run from the repository root: `.venv/bin/python bench/bench_batched.py [--B 64] [--json out.json]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_cases import CASES, make_case  # noqa: E402

import learndyn as ld  # noqa: E402

TARGET = 10.0


def timed(fn) -> tuple[float, np.ndarray]:
    """Wall time (s) of one call and its result."""
    tic = time.perf_counter()
    out = fn()
    return time.perf_counter() - tic, out


def rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| / max |a|: the relative disagreement of two (B, m) signatures."""
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-300))


def compare(key: str, B: int, steps: int | None, device: torch.device) -> dict:
    """Batched vs looped for one case: seconds, ratio and the relative difference of the results."""
    make_case(key, 2, steps).batched(device)  # warm-up (imports, allocator, first kernels)
    case = make_case(key, B, steps)
    t_batch, a = timed(lambda: case.batched(device))
    t_loop, b = timed(lambda: case.looped(device))
    return {"case": case.name, "chapter": case.chapter, "sweep": case.sweep, "B": B, "steps": case.steps,
            "device": device.type, "batched_s": t_batch, "loop_s": t_loop, "ratio": t_loop / t_batch,
            "rel_diff": rel_diff(a, b), "target": TARGET, "met": t_loop / t_batch >= TARGET}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--B", type=int, default=64, help="runs per sweep")
    parser.add_argument("--steps", type=int, default=None, help="steps per run (default: each case's own)")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    ld.core.set_threads(args.threads)
    rows = [compare(key, args.B, args.steps, torch.device("cpu")) for key in args.cases]
    print(f"{'simulator':30s} {'sweep':16s} {'B':>4s} {'steps':>6s} {'batched s':>10s} {'loop s':>8s} "
          f"{'ratio':>7s} {'rel. diff':>9s}  target >= {TARGET:g}x")
    for r in rows:
        print(f"{r['case']:30s} {r['sweep']:16s} {r['B']:4d} {r['steps']:6d} {r['batched_s']:10.3f} "
              f"{r['loop_s']:8.2f} {r['ratio']:6.1f}x {r['rel_diff']:9.1e}  {'met' if r['met'] else 'MISSED'}")
    out = {"threads": torch.get_num_threads(), "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
