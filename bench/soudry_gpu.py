"""Chapter 5 at GPU scale: gradient descent on separable data with a known max-margin solution (Soudry et al. 2018).

The specification's large variant: d = 1000, n = 5000, 1e7 steps, 8 step sizes batched on one device, float64. The
data are built so that the SVM is known without solving it: the first `n_sv` rows (default d, so that the support
vectors span the data, as Theorem 4 of Soudry et al. needs) are 0.5 (e_i + noise), whose SVM
w_hat = Z_S^T alpha with Z_S Z_S^T alpha = 1 has positive multipliers alpha; every other row has margin
<w_hat, z> in [m2, m2 + 1] (in units of the SVM margin) plus a random part orthogonal to w_hat, inside the unit ball.
So w_hat stays feasible, hence optimal, and the second margin is at least m2.

The default steps are fractions of the curvature threshold 2/lambda_max(Z^T Z) at w0 = 0, far above the worst-case
condition 2/(n R^2) (which would leave almost no flow time in 1e7 steps); the script reports for how many of them the
descent lemma holds from the first iterate on, as in the chapter's "Where the theory stops". For every step size it
records, at log-spaced checkpoints: the residual ||w_k - w_hat ln k - w_tilde(eta)||
(eq-soudry-residual-rate), the shifted angle law gap x (ln k + shift) / c (eq-soudry-angle; -> 1) and the loss
constant eta k L gamma*^2 (eq-soudry-loss-asymptotic; -> 1 from below), and prints them.

    python bench/soudry_gpu.py                                   # the full size: use a GPU (about 5-10 min)
    python bench/soudry_gpu.py --n 40 --d 4 --steps 2000 --device cpu --out /tmp/s.npz   # a CPU smoke test
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import learndyn as ld
from learndyn import implicit_bias as ib


def make_data(n: int, d: int, n_sv: int | None = None, m2: float = 1.5, seed: int = 0
              ) -> tuple[np.ndarray, ib.MaxMargin]:
    """Z (n, d) with ||z_i|| <= 1 and its exact hard-margin SVM (support = the first n_sv rows, alpha > 0)."""
    n_sv = d if n_sv is None else n_sv
    if not 1 <= n_sv <= min(n, d):
        raise ValueError(f"n_sv must lie in [1, min(n, d)] = [1, {min(n, d)}]; got {n_sv}")
    if m2 <= 1:
        raise ValueError(f"m2 (the second margin) must exceed 1; got {m2}")
    rng = np.random.default_rng(seed)
    S = np.eye(n_sv, d) + rng.standard_normal((n_sv, d)) * (0.1 / np.sqrt(d))
    S *= 0.5 / np.linalg.norm(S, axis=1, keepdims=True)
    alpha = np.linalg.solve(S @ S.T, np.ones(n_sv))
    if np.any(alpha <= 0):  # pragma: no cover - the rows are nearly orthogonal
        raise ValueError("the support vectors have a non-positive multiplier; change the seed")
    w_hat = S.T @ alpha
    gamma = 1.0 / np.linalg.norm(w_hat)
    if (m2 + 1.0) * gamma >= 1.0:
        raise ValueError(f"m2 + 1 = {m2 + 1} must be below 1/gamma* = {1 / gamma:.4g} for rows in the unit ball")
    m = n - n_sv
    c = rng.uniform(m2, m2 + 1.0, m)
    side = rng.standard_normal((m, d))
    side -= np.outer(side @ w_hat, w_hat) / (w_hat @ w_hat)
    room = np.sqrt(1.0 - (c * gamma) ** 2)
    side *= (room * rng.uniform(0.0, 1.0, m) / np.linalg.norm(side, axis=1))[:, None]
    Z = np.vstack([S, np.outer(c, w_hat) / (w_hat @ w_hat) + side])
    a = np.zeros(n)
    a[:n_sv] = alpha
    return Z, ib.MaxMargin(w_hat=w_hat, gamma=float(gamma), support=np.arange(n_sv), alpha=a)


def summarise(hist: ld.core.History, Z: np.ndarray, mm: ib.MaxMargin) -> dict[str, np.ndarray]:
    """Residual, shifted angle law (ratio to its limit) and loss constant of every run, at every checkpoint >= 1."""
    k = hist.steps[1:]
    etas = hist.final["etas"]
    res, law, loss_const = [], [], []
    for b, eta in enumerate(etas):
        wt = ib.soudry_w_tilde(Z, mm, eta)
        const = ib.expansion_constants(Z, mm, wt)
        res.append(np.linalg.norm(hist["w"][1:, b] - ib.asymptotic_w(k, mm, wt), axis=1))
        sigma = np.log(k) + const["shift"]
        law.append(hist["angle_gap"][1:, b] * sigma / const["angle"])
        loss_const.append(eta * k * hist["loss"][1:, b] * mm.gamma**2)
    return {"steps": k, "etas": etas, "residual": np.array(res), "angle_law": np.array(law),
            "loss_constant": np.array(loss_const)}


def main(argv: list[str] | None = None) -> dict[str, np.ndarray]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--d", type=int, default=1000)
    p.add_argument("--n-sv", type=int, default=None, help="number of support vectors (default d: they span)")
    p.add_argument("--m2", type=float, default=1.5, help="lower bound of the second margin")
    p.add_argument("--steps", type=int, default=10_000_000)
    p.add_argument("--etas", type=float, nargs="+", default=None,
                   help="step sizes (default: 8 log-spaced steps, 0.05 ... 0.9 times 2/lambda_max(Z^T Z))")
    p.add_argument("--checkpoints", type=int, default=60)
    p.add_argument("--device", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="soudry_gpu.npz")
    args = p.parse_args(argv)
    Z, mm = make_data(args.n, args.d, args.n_sv, args.m2, args.seed)
    etas = (np.geomspace(0.05, 0.9, 8) * ib.stability_limit(Z) if args.etas is None
            else np.asarray(args.etas, dtype=float))
    w1 = etas[:, None] * Z.sum(0)  # one step from w0 = 0
    inside = np.array([e < ib.descent_step_limit(Z, w0=w) for e, w in zip(etas, w1, strict=True)])
    dev = ld.core.get_device(args.device)
    print(f"n = {args.n}, d = {args.d}, support vectors {len(mm.support)}, gamma* = {mm.gamma:.4g}, "
          f"second margin {ib.second_margin(Z, mm):.3f}, lambda_min {ib.residual_exponent(Z, mm)[0]:.3f}; "
          f"{len(etas)} step sizes, {args.steps} steps on {dev}; inside the provable step condition from step 1 on: "
          f"{inside.sum()} of {len(etas)}")
    t0 = time.perf_counter()
    hist = ib.gd_separable(Z, etas, args.steps, args.checkpoints, device=dev, mm=mm)
    elapsed = time.perf_counter() - t0
    out = summarise(hist, Z, mm)
    out["seconds"] = np.array(elapsed)
    out["provable_from_step_1"] = inside
    out["monotone_loss"] = np.all(np.diff(hist["loss"][1:], axis=0) <= 0, axis=0)
    np.savez(Path(args.out), **out)
    print(f"{elapsed:.1f} s; at the last step k = {out['steps'][-1]}:")
    for b, eta in enumerate(etas):
        print(f"  eta = {eta:.3g}: residual {out['residual'][b, -1]:.3g}, angle law {out['angle_law'][b, -1]:.4f} "
              f"(-> 1), loss constant {out['loss_constant'][b, -1]:.4f} (-> 1 from below), loss monotone at the "
              f"checkpoints: {bool(out['monotone_loss'][b])}")
    return out


if __name__ == "__main__":
    main()
