"""Large step sizes on separable logistic regression at scale (Ch 7): a GPU script built on `learndyn.large_stepsize`.

The chapter's experiments use n = 32 points in the plane. This script repeats its step-size sweep at the scale of the
book's plan: n = 10^4 points in R^100, separable with a small margin, up to 10^5 full-batch GD steps, a sweep of the
constant step size over six decades. For every step size it records
  - the last step at which the loss increased (the end of the oscillations),
  - the entry steps s (eta L <= 1/2, the stable-phase lemma) and s' (L <= min{1/(2 eta), ln2/n}),
  - the exit bound t_* of the exit theorem, and whether s' < t_*,
  - the largest ratio of the total gradient potential sum_{k<t} G(w_k) to its bound (must be <= 1),
  - C_T = gamma^2 eta T L(w_T), the stable-phase constant.

    python bench/wu_large_n.py                     # full size: use a GPU (about a minute on one)
    python bench/wu_large_n.py --tiny              # n = 200, d = 5, 2000 steps: seconds on a CPU (the unit test)
Writes a JSON summary with --json and prints one line per step size.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import learndyn as ld
from learndyn import large_stepsize as ls

FULL = {"n": 10_000, "d": 100, "steps": 100_000, "gamma": 0.05, "etas": (1.0, 1e6), "num_etas": 13}
TINY = {"n": 200, "d": 5, "steps": 2000, "gamma": 0.1, "etas": (1.0, 1e4), "num_etas": 5}


def separable_data(n: int, d: int, gamma: float, spread: float = 0.02, seed: int = 0) -> np.ndarray:
    """Rows z_i = y_i x_i in R^d, norm <= 1, separated by e_1 with margin about gamma (the chapter's data in d dims).

    z_i = (gamma + |N(0, spread^2)|, sqrt(1 - gamma^2) r_i v_i) with v_i uniform on the unit sphere of R^{d-1} and
    r_i uniform in [0, 1], each row then divided by max(1, ||z_i||).
    """
    if d < 2:
        raise ValueError(f"d must be >= 2; got {d}")
    if not 0 < gamma < 1:
        raise ValueError(f"gamma must be in (0, 1); got {gamma}")
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, d - 1))
    v *= (rng.uniform(0, 1, (n, 1)) * np.sqrt(1 - gamma**2)) / np.linalg.norm(v, axis=1, keepdims=True)
    Z = np.concatenate([gamma + np.abs(rng.normal(0, spread, (n, 1))), v], axis=1)
    return Z / np.maximum(1.0, np.linalg.norm(Z, axis=1, keepdims=True))


def sweep(Z: np.ndarray, etas: np.ndarray, steps: int, device: str | None = None) -> list[dict]:
    """Run GD for every step size in one batch and return one summary row per step size."""
    _, gamma = ls.max_margin(Z)
    n = len(Z)
    h = ls.gd_logistic(Z, etas, steps, device=device, record="loss")
    L, G = h["loss"], h["G"]
    t = np.arange(1, steps + 1)[:, None]
    mass = np.cumsum(G[:-1], axis=0)
    bound = ls.gradient_potential_bound(t, etas, gamma)
    ok = np.isfinite(bound)
    rows = []
    for j, eta in enumerate(etas):
        s = ls.stable_entry(L[:, j], eta)
        s_strong = ls.stable_entry(L[:, j], eta, n=n)
        t_star = ls.exit_step_bound(eta, gamma, n)
        rows.append({
            "eta": float(eta), "eta_beta_over_2": float(eta * ls.smoothness(Z) / 2),
            "last_increase": ls.last_increase(L[:, j]), "s": s, "s_strong": s_strong, "t_star": t_star,
            "s_strong_below_t_star": bool(s_strong is None or s_strong < t_star),
            "max_mass_over_bound": float(np.max(mass[ok[:, j], j] / bound[ok[:, j], j])) if ok[:, j].any() else 0.0,
            "C_T": float(gamma**2 * eta * steps * L[-1, j]),
        })
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a CPU-sized run (n = 200, d = 5, 2000 steps)")
    parser.add_argument("--n", type=int)
    parser.add_argument("--d", type=int)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--gamma", type=float)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: CUDA when present)")
    parser.add_argument("--json", type=Path, help="write the summary here")
    args = parser.parse_args(argv)
    cfg = dict(TINY if args.tiny else FULL)
    for key in ("n", "d", "steps", "gamma"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    Z = separable_data(cfg["n"], cfg["d"], cfg["gamma"], seed=args.seed)
    etas = np.geomspace(*cfg["etas"], cfg["num_etas"])
    device = str(ld.core.get_device(args.device))
    start = time.perf_counter()
    rows = sweep(Z, etas, cfg["steps"], device=device)
    seconds = time.perf_counter() - start
    _, gamma = ls.max_margin(Z)
    print(f"n = {cfg['n']}, d = {cfg['d']}, gamma_* = {gamma:.4f}, 2/beta = {2 / ls.smoothness(Z):.1f}, "
          f"{cfg['steps']} steps on {device} in {seconds:.1f} s")
    for r in rows:
        print(f"eta {r['eta']:10.3g} (eta beta/2 {r['eta_beta_over_2']:9.3g}): last increase {r['last_increase']:6d}, "
              f"s {r['s']}, s' {r['s_strong']}, t_* {r['t_star']}, mass/bound {r['max_mass_over_bound']:.3f}, "
              f"C_T {r['C_T']:.3g}")
    record = {"config": {**cfg, "etas": etas.tolist(), "seed": args.seed, "device": device}, "gamma": gamma,
              "seconds": seconds, "rows": rows}
    if args.json is not None:
        args.json.write_text(json.dumps(record, indent=1))
    return record


if __name__ == "__main__":
    main()
