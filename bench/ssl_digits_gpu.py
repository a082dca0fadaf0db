"""GPU-scale variant of Chapter 3 (off by default): minibatch SGD of the linear SimSiam model on augmented digits.

The chapter's population flow, eq. `eq-ssl1-flow`, is replaced by what a practitioner runs: minibatch SGD with
StopGrad, a learned (symmetrised) linear predictor and weight decay, on fresh augmentations of sklearn's 8x8 digits
(no download) lifted to d = 512 by a fixed random ReLU feature map. It reports, at the end, the commutator ratio
|[P, F]| / (|P||F|) (eigenspace alignment), the number of surviving modes, and the eigenvalues of P on them against the
fixed point p*_+ of eq. `eq-ssl1-fixed-points`, computed with the *measured* noise-to-signal ratio of the features
(the isotropic theory is only a guide here: the digits are anisotropic).

    python bench/ssl_digits_gpu.py                 # d = 512, 20 000 steps: minutes on a GPU
    python bench/ssl_digits_gpu.py --tiny          # d = 32, 200 steps: a CPU smoke test (tests/test_ssl.py)
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from learndyn import ssl
from learndyn.core import get_device, make_generator


def run(d: int = 512, steps: int = 20_000, batch: int = 256, eta: float = 0.05, wd: float = 0.02,
        noise: float = 0.3, seed: int = 0, device: str | None = None) -> dict:
    """Minibatch SGD of L = 1/2 |P Phi x - SG(Phi x')|^2 on augmented digits; returns a summary dict."""
    from sklearn.datasets import load_digits  # local import: only this script needs sklearn's digits

    dev = get_device(device)
    gen = make_generator(seed)
    images = torch.tensor(load_digits().data / 16.0, dtype=torch.float32)
    images = (images - images.mean(0)) / (images.std(0) + 1e-3)
    lift = torch.randn(64, d, generator=gen) / 8.0
    features = lambda x: torch.relu(x @ lift.to(x.device)) - 0.4  # noqa: E731  (fixed random feature map)
    images = images.to(dev)
    Phi = (0.3 * torch.randn(d, d, generator=gen) / np.sqrt(d)).to(dev).requires_grad_(True)
    A = 0.3 * torch.randn(d, d, generator=gen) / np.sqrt(d)
    P = (0.5 * (A + A.T) + 0.3 * torch.eye(d)).to(dev).requires_grad_(True)
    opt = torch.optim.SGD([Phi, P], lr=eta, weight_decay=wd)
    g_dev = torch.Generator(device=dev).manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(0, images.shape[0], (batch,), generator=g_dev, device=dev)
        x0 = images[idx]
        v1 = features(x0 + noise * torch.randn(x0.shape, generator=g_dev, device=dev))
        v2 = features(x0 + noise * torch.randn(x0.shape, generator=g_dev, device=dev))
        loss = 0.5 * ((v1 @ Phi.T @ P.T - (v2 @ Phi.T).detach()) ** 2).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        P.grad = 0.5 * (P.grad + P.grad.T)                       # the symmetrised predictor update
        opt.step()
    with torch.no_grad():
        F = (Phi @ Phi.T).double()
        Pd = P.double()
        s, q = torch.linalg.eigh(F)
        p_modes = (q.T @ Pd @ q).diagonal()
        alive = s > 1e-2 * s.max()
        x0 = images[:512]
        clean = features(x0)
        views = features(x0 + noise * torch.randn(x0.shape, generator=g_dev, device=dev))
        sigma2_eff = float(((views - clean) ** 2).sum() / (clean**2).sum())
        fp = ssl.tian_fixed_points(sigma2_eff, wd) if wd < 1 / (4 * (1 + sigma2_eff)) else None
    return {"d": d, "steps": steps, "final_loss": float(loss), "commutator": float(ssl.commutator_ratio(Pd, F)),
            "surviving_modes": int(alive.sum()), "p_on_survivors_median": float(p_modes[alive].median()),
            "sigma2_effective": sigma2_eff, "p_star_plus_isotropic": None if fp is None else fp[1],
            "device": str(dev)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="d = 32, 200 steps (CPU smoke test)")
    parser.add_argument("--device", default=None)
    args = parser.parse_args(argv)
    out = run(d=32, steps=200, batch=64, device=args.device or "cpu") if args.tiny else run(device=args.device)
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
