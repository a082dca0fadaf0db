"""The batched simulators of the book as benchmark cases, shared by `bench_batched.py` and `gpu_check.py`.

Each case sweeps B runs of one chapter's simulator (seeds, step sizes or initial scales on the leading batch axis)
and can run them two ways on any device: as one batched call, or as a Python loop of B single-run calls doing the
same arithmetic. Both return a "signature" array (B, m) of per-run final quantities (final weights, final loss),
which is what the benchmarks compare: batched against looped (the loop must do the same work), CPU against GPU.
Not a module of `learndyn`: the cases are the benchmark's choice of representative, well-conditioned settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

import learndyn as ld

__all__ = ["Case", "CASES", "make_case"]

Runner = Callable[[torch.device], np.ndarray]


@dataclass
class Case:
    """One batched sweep: `batched(device)` -> (B, m) and `single(b, device)` -> (m,), the same runs."""

    name: str
    chapter: str
    sweep: str
    B: int
    steps: int
    batched: Runner
    single: Callable[[int, torch.device], np.ndarray]

    def looped(self, device: torch.device) -> np.ndarray:
        """The same B runs as a Python loop of single-run calls, stacked to (B, m)."""
        return np.stack([self.single(b, device) for b in range(self.B)])


def two_layer(B: int, steps: int) -> Case:
    """Ch 2: GD on a (6, 10, 8) two-layer linear network, B random small initialisations (seeds)."""
    dl = ld.deep_linear
    task = dl.svd_task(6, 8, [3, 2, 1, 0.5, 0.25, 0.1], seed=0)
    W1, W2 = dl.small_random_init(6, 10, 8, 1e-2, batch=B, seed=0, device="cpu")
    kw = dict(eta=0.01, steps=steps, record_every=max(1, steps // 10), U=task.U, V=task.V)

    def sig(h: ld.History) -> np.ndarray:
        return np.concatenate([np.atleast_1d(h["loss"][-1])[:, None], np.atleast_2d(h["modes"][-1])], axis=1)

    return Case("deep_linear.train_two_layer", "02", "seeds", B, steps,
                lambda dev: sig(dl.train_two_layer(task.Sigma, W1, W2, device=dev, **kw)),
                lambda b, dev: sig(dl.train_two_layer(task.Sigma, W1[b], W2[b], device=dev, **kw))[0])


def separable(B: int, steps: int) -> Case:
    """Ch 5: GD on the exponential loss of separable data (n = 24, d = 2), B step sizes below 2/beta."""
    ib = ld.implicit_bias
    Z = ib.separable_with_svs(24, seed=0)
    mm = ib.max_margin(Z)
    etas = np.linspace(0.05, 0.9, B) * ib.stability_limit(Z)
    kw = dict(steps=steps, checkpoints=10, mm=mm)
    return Case("implicit_bias.gd_separable", "05", "step sizes", B, steps,
                lambda dev: ib.gd_separable(Z, etas, device=dev, **kw).final["w"],
                lambda b, dev: ib.gd_separable(Z, etas[b:b + 1], device=dev, **kw).final["w"][0])


def logistic(B: int, steps: int) -> Case:
    """Ch 7: GD on the mean logistic loss of the small-margin 2-D data (n = 32), B step sizes from 0.5 to 8."""
    ls = ld.large_stepsize
    Z = ls.narrow_margin_2d(32)
    etas = np.geomspace(0.5, 8.0, B)

    def sig(h: ld.History) -> np.ndarray:
        return np.concatenate([h.final["w"], h["loss"][-1][:, None]], axis=1)

    return Case("large_stepsize.gd_logistic", "07", "step sizes", B, steps,
                lambda dev: sig(ls.gd_logistic(Z, etas, steps, device=dev, record="loss")),
                lambda b, dev: sig(ls.gd_logistic(Z, etas[b:b + 1], steps, device=dev, record="loss"))[0])


def barlow(B: int, steps: int) -> Case:
    """Ch 4: GD on linear Barlow Twins (m = 8, d = 4), B initial scales from 1e-3 to 1e-1."""
    br = ld.barlow
    Gamma, _ = br.make_gamma([1.0, 0.8, 0.6, 0.4, 0.2, 0.1], m=8, seed=0)
    W0 = br.small_init(4, 8, np.geomspace(1e-3, 1e-1, B), seed=0)  # (B, 4, 8)
    kw = dict(eta=0.02, steps=steps, record_every=max(1, steps // 10))
    return Case("barlow.train_barlow_linear", "04", "initial scales", B, steps,
                lambda dev: br.train_barlow_linear(Gamma, W0, device=dev, **kw).final["W"].reshape(B, -1),
                lambda b, dev: br.train_barlow_linear(Gamma, W0[b], device=dev, **kw).final["W"].ravel())


def noncontrastive(B: int, steps: int) -> Case:
    """Ch 3: RK4 on the population flow of the linear non-contrastive model (d2 = 4, d1 = 6), B random inits."""
    ssl = ld.ssl
    gen = np.random.default_rng(0)
    Phi0 = 0.5 * gen.standard_normal((B, 4, 6))
    A = 0.5 * gen.standard_normal((B, 4, 4))
    P0 = 0.5 * (A + np.swapaxes(A, -1, -2))
    h = 0.02
    kw = dict(sigma2=0.5, wd=0.05, h=h, t_max=h * steps, record_every=max(1, steps // 4))

    def sig(hist: ld.History) -> np.ndarray:
        Phi, P = hist.final["Phi"], hist.final["P"]
        return np.concatenate([Phi.reshape(len(Phi), -1), P.reshape(len(P), -1)], axis=1)

    return Case("ssl.simulate_noncontrastive", "03", "initialisations", B, steps,
                lambda dev: sig(ssl.simulate_noncontrastive(Phi0, P0, device=dev, **kw)),
                lambda b, dev: sig(ssl.simulate_noncontrastive(Phi0[b:b + 1], P0[b:b + 1], device=dev, **kw))[0])


#: name -> (builder, default steps); every builder takes (B, steps).
CASES: dict[str, tuple[Callable[[int, int], Case], int]] = {
    "two_layer": (two_layer, 1000),
    "noncontrastive": (noncontrastive, 400),
    "barlow": (barlow, 1000),
    "separable": (separable, 2000),
    "logistic": (logistic, 1000),
}


def make_case(key: str, B: int, steps: int | None = None) -> Case:
    """The case `key` of `CASES` with B runs and `steps` steps (default: the case's own)."""
    if key not in CASES:
        raise ValueError(f"unknown case {key!r}; choose from {sorted(CASES)}")
    builder, default = CASES[key]
    return builder(int(B), int(steps or default))
