"""Benchmark (not a test): every chapter's batched simulator against a Python loop over the same B runs.

For each case of `sim_cases.py` (Ch 2 two-layer linear GD, Ch 3 non-contrastive flow, Ch 4 Barlow Twins,
Ch 5 GD on separable data, Ch 7 large-step logistic GD): one batched call of B runs and a loop of B single-run
calls, timed side by side in one process after a warm-up and repeated (default 5 times, batched and loop alternating),
plus the largest relative difference of their results (the loop must do the same arithmetic: it is about 1e-16).
Reported: the median and interquartile range over repeats of each time and of the ratio loop / batched within a
repeat. Target: batched at least 10x faster on 2 CPU cores (the median ratio).
Run from the repository root: `.venv/bin/python bench/bench_batched.py [--B 64] [--repeats 5] [--json out.json]`.
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


def stats(x: list[float]) -> dict:
    """Median and quartiles."""
    q1, med, q3 = np.percentile(np.asarray(x, dtype=float), [25, 50, 75])
    return {"median": float(med), "q1": float(q1), "q3": float(q3)}


def compare(key: str, B: int, steps: int | None, device: torch.device, repeats: int = 5) -> dict:
    """Batched vs looped for one case, `repeats` times: medians (and quartiles) of the seconds and of the ratio."""
    make_case(key, 2, steps).batched(device)  # warm-up (imports, allocator, first kernels)
    case = make_case(key, B, steps)
    t_batch, t_loop, diff = [], [], 0.0
    for _ in range(repeats):
        tb, a = timed(lambda: case.batched(device))
        tl, b = timed(lambda: case.looped(device))
        t_batch.append(tb)
        t_loop.append(tl)
        diff = max(diff, rel_diff(a, b))
    ratio = stats([lo / ba for lo, ba in zip(t_loop, t_batch, strict=True)])
    return {"case": case.name, "chapter": case.chapter, "sweep": case.sweep, "B": B, "steps": case.steps,
            "device": device.type, "repeats": repeats, "batched_s": float(np.median(t_batch)),
            "loop_s": float(np.median(t_loop)), "ratio": ratio["median"], "ratio_q1": ratio["q1"],
            "ratio_q3": ratio["q3"], "batched": stats(t_batch), "loop": stats(t_loop), "rel_diff": diff,
            "target": TARGET, "met": ratio["median"] >= TARGET}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--B", type=int, default=64, help="runs per sweep")
    parser.add_argument("--steps", type=int, default=None, help="steps per run (default: each case's own)")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--repeats", type=int, default=5, help="timings of each sweep (median and quartiles)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    ld.core.set_threads(args.threads)
    rows = [compare(key, args.B, args.steps, torch.device("cpu"), args.repeats) for key in args.cases]
    print(f"{args.repeats} repeats: median [interquartile range]")
    print(f"{'simulator':30s} {'B':>3s} {'steps':>5s} {'batched s':>21s} {'loop s':>18s} {'loop / batched':>19s} "
          f"{'rel. diff':>9s}  target >= {TARGET:g}x")
    for r in rows:
        b, lo = r["batched"], r["loop"]
        print(f"{r['case']:30s} {r['B']:3d} {r['steps']:5d} {b['median']:6.3f} [{b['q1']:.3f}-{b['q3']:.3f}] "
              f"{lo['median']:5.2f} [{lo['q1']:.2f}-{lo['q3']:.2f}] {r['ratio']:6.1f}x [{r['ratio_q1']:.1f}-"
              f"{r['ratio_q3']:.1f}] {r['rel_diff']:9.1e}  {'met' if r['met'] else 'MISSED'}")
    out = {"threads": torch.get_num_threads(), "repeats": args.repeats, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
