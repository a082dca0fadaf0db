"""Edge of stability at the scale of Cohen et al. (2021): a GPU script built on `learndyn.sharpness` (Ch 6).

Reference setting (the README of Cohen et al.'s code): the first 5000 CIFAR-10 training images, standardised; a
fully connected tanh network with hidden widths [200, 200] and biases; MSE 1/2 ||f - y||^2 against one-hot targets;
full-batch GD with eta in {0.01, 0.02, 0.04} (thresholds 2/eta = 200, 100, 50); the top-2 Hessian eigenvalues by
Lanczos every 50 steps; training until 99 % training accuracy (typically 1e4-1e5 steps: use a GPU).

Data, in this order:
1. `CIFAR10_DIR` (environment variable or --cifar-dir): a folder holding the python version of CIFAR-10
   (`data_batch_1` ... `data_batch_5`, either directly or in `cifar-10-batches-py/`);
2. torchvision's `CIFAR10(download=True)` into --root, where torchvision is installed and the internet is reachable
   (Colab);
3. otherwise all 1797 of scikit-learn's bundled digits with a wider, deeper network (width 512, depth 4) and a step-size
   sweep, 2e4 steps.

    python bench/eos_cifar.py                      # auto: CIFAR-10 if available, else the digits fallback
    python bench/eos_cifar.py --source digits --steps 2000 --eta 0.1 0.2
Writes an .npz with the loss, accuracy and eigenvalue traces of every run and prints the edge-of-stability summary.
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
from pathlib import Path

import numpy as np
import torch

import learndyn as ld
from learndyn import sharpness as sh

CIFAR = {"width": 200, "depth": 2, "eta": (0.01, 0.02, 0.04), "steps": 100_000, "n": 5000}
DIGITS = {"width": 512, "depth": 4, "eta": (0.1, 0.2, 0.3), "steps": 20_000, "n": 1797}


def standardise(X: np.ndarray) -> np.ndarray:
    """Centre and scale every feature to unit standard deviation (constant features are only centred)."""
    X = X.astype(np.float64)
    X = X - X.mean(axis=0)
    std = X.std(axis=0)
    return X / np.where(std > 0, std, 1.0)


def load_cifar10_dir(path: str | Path, n: int = 5000) -> tuple[np.ndarray, np.ndarray]:
    """The first `n` CIFAR-10 training images from the python pickles in `path`: X (n, 3072) standardised, y (n,)."""
    path = Path(path)
    folder = path / "cifar-10-batches-py" if (path / "cifar-10-batches-py").is_dir() else path
    batches = sorted(folder.glob("data_batch_*"))
    if not batches:
        raise FileNotFoundError(f"no CIFAR-10 python batches (data_batch_1 ...) in {folder}")
    xs, ys, have = [], [], 0
    for batch in batches:
        with open(batch, "rb") as fh:
            d = pickle.load(fh, encoding="bytes")
        xs.append(np.asarray(d[b"data"], dtype=np.uint8))
        ys.append(np.asarray(d[b"labels"], dtype=np.int64))
        have += len(ys[-1])
        if have >= n:
            break
    X, y = np.concatenate(xs)[:n], np.concatenate(ys)[:n]
    if len(y) < n:
        raise ValueError(f"n={n} requested but {folder} holds only {len(y)} training images")
    return standardise(X / 255.0), y


def load_cifar10_torchvision(root: str | Path, n: int = 5000) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 through torchvision (imported here, so the script runs without it); downloads into `root`."""
    import torchvision  # optional dependency, imported only here

    ds = torchvision.datasets.CIFAR10(root=str(root), train=True, download=True)
    X = np.asarray(ds.data[:n], dtype=np.float64).reshape(n, -1) / 255.0  # (n, 32, 32, 3) -> (n, 3072)
    return standardise(X), np.asarray(ds.targets[:n], dtype=np.int64)


def load_digits_all() -> tuple[np.ndarray, np.ndarray]:
    """All 1797 bundled digits, standardised (no download)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return standardise(d.data / 16.0), d.target.astype(np.int64)


def load_data(source: str = "auto", cifar_dir: str | None = None, root: str = "data",
              n: int | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """(X, y, name) for `source` in {"auto", "cifar", "digits"}; "auto" falls back to digits as the docstring says."""
    if source not in ("auto", "cifar", "digits"):
        raise ValueError(f"source must be 'auto', 'cifar' or 'digits'; got {source!r}")
    cifar_dir = cifar_dir or os.environ.get("CIFAR10_DIR")
    if source in ("auto", "cifar") and cifar_dir:
        X, y = load_cifar10_dir(cifar_dir, n or CIFAR["n"])  # an explicit folder that fails is an error
        return X, y, "cifar10"
    if source in ("auto", "cifar"):
        try:
            X, y = load_cifar10_torchvision(root, n or CIFAR["n"])
            return X, y, "cifar10"
        except Exception as err:  # no torchvision, no internet, a broken download: fall back (or fail if asked)
            if source == "cifar":
                raise RuntimeError("CIFAR-10 is not available: set CIFAR10_DIR or install torchvision") from err
            print(f"CIFAR-10 unavailable ({type(err).__name__}: {err}); falling back to the digits data")
    X, y = load_digits_all()
    return (X[:n], y[:n], "digits") if n else (X, y, "digits")


def main(argv: list[str] | None = None) -> dict[str, np.ndarray]:
    parser = argparse.ArgumentParser(description="Edge of stability at the scale of Cohen et al. (2021)")
    parser.add_argument("--source", default="auto", choices=["auto", "cifar", "digits"])
    parser.add_argument("--cifar-dir", default=None, help="folder with CIFAR-10 python batches (or $CIFAR10_DIR)")
    parser.add_argument("--root", default="data", help="torchvision download folder")
    parser.add_argument("--n", type=int, default=None, help="number of training examples")
    parser.add_argument("--eta", type=float, nargs="+", default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--width", type=int, default=None)
    parser.add_argument("--depth", type=int, default=None)
    parser.add_argument("--eig-every", type=int, default=50)
    parser.add_argument("--stop-acc", type=float, default=0.99)
    parser.add_argument("--loss", default="mse", choices=["mse", "ce"])
    parser.add_argument("--device", default=None)
    parser.add_argument("--out", type=Path, default=Path("eos_cifar.npz"))
    args = parser.parse_args(argv)

    device = ld.setup("eos_cifar")
    device = ld.get_device(args.device) if args.device else device
    X, y, name = load_data(args.source, args.cifar_dir, args.root, args.n)
    cfg = CIFAR if name == "cifar10" else DIGITS
    eta_values, steps = args.eta or cfg["eta"], args.steps or cfg["steps"]
    width, depth = args.width or cfg["width"], args.depth or cfg["depth"]
    Xt = torch.as_tensor(X, dtype=torch.float32, device=device)
    Yt = torch.as_tensor(np.eye(10)[y], dtype=torch.float32, device=device)
    print(f"{name}: X {tuple(Xt.shape)}, fc-tanh {[width] * depth}, {args.loss}, eta {list(eta_values)}, "
          f"up to {steps} steps, device {device}")
    out: dict[str, np.ndarray] = {"eta": np.asarray(eta_values), "data": np.asarray(name)}
    for i, eta in enumerate(eta_values):
        model = sh.make_mlp(in_dim=Xt.shape[1], width=width, depth=depth, out_dim=10, seed=0)
        tic = time.perf_counter()
        hist = sh.train_gd_sharpness(model, Xt, Yt, eta, steps, eig_every=args.eig_every, loss=args.loss,
                                     device=device, eig_k=2, eig_method="lanczos", stop_acc=args.stop_acc)
        summary = sh.eos_summary(hist, eta)
        print(f"eta={eta:g} (2/eta={2 / eta:g}): {len(hist.steps) - 1} steps in {time.perf_counter() - tic:.0f} s, "
              f"final acc {hist['acc'][-1]:.3f}; " + ", ".join(f"{k} {v:.3g}" for k, v in summary.items()
                                                               if v is not None))
        out.update({f"loss_{i}": hist["loss"], f"acc_{i}": hist["acc"], f"eig_steps_{i}": hist.final["eig_steps"],
                    f"eigs_{i}": hist.final["eigs"]})
    np.savez_compressed(args.out, **out)
    print(f"wrote {args.out}")
    return out


if __name__ == "__main__":
    main()
