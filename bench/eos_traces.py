"""Precompute the sharpness traces of the Ch 6 widget and plateau check: `lib/learndyn/data/eos_traces.npz`.

The digits setup of Chapter 6 (first 1000 digits, 64-100-100-100-10 tanh, MSE, float32, seed 0), full-batch GD
for 1500 steps with each step size below, sharpness every 25 steps by the training loop's default estimator
(warm-started Krylov, relative residual <= 2e-3). About 2-3 minutes on 2 CPU cores; the file is ~100 kB. Run
from the repository root:

    .venv/bin/python bench/eos_traces.py [--out lib/learndyn/data/eos_traces.npz] [--steps 1500] [--seed 0]

The shipped file is seed 0. `make robust` runs this generator at its other seeds (`--seed k --out
_build/robust/eos_traces-seed-k.npz`), and Chapter 6 run with LEARNDYN_SEED=k reads that file, so the claims
resting on these traces are tested on fresh draws too.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import learndyn as ld

LRS = (0.25, 0.3, 0.4, 0.5, 0.67)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("lib/learndyn/data/eos_traces.npz"))
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="the draw of the network's initialisation (default 0)")
    args = parser.parse_args()
    device = ld.setup("eos_traces", threads=args.threads)
    start = time.perf_counter()
    traces = ld.sharpness.eos_sweep(LRS, args.steps, seed=args.seed, device=device)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **{k: v.astype(np.float32) if k in ("loss", "sharpness") else v
                                     for k, v in traces.items()})
    for lr, S in zip(traces["lrs"], traces["sharpness"], strict=True):
        tail = S[traces["eig_steps"] >= args.steps // 2]
        print(f"lr={lr:<5} 2/lr={2 / lr:6.3f}  median sharpness over the second half {np.median(tail):6.3f} "
              f"(ratio {np.median(tail) * lr / 2:.3f})")
    print(f"wrote {args.out} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
