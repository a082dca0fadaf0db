"""Shared machinery for every chapter: devices, threads, seeds, the `History` record and small numerics.

Conventions (book §0, Preface): gradient descent w_{k+1} = w_k - lr * grad L(w_k) is compared with gradient flow
at time t = lr * k (Chapter 2 uses tau = 1/lr instead, which is the same map with time counted in steps).
Checks against closed forms run in float64 on the CPU; simulators accept `device=` and use CUDA when present.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

__all__ = [
    "History",
    "DivergenceError",
    "get_device",
    "set_threads",
    "make_generator",
    "setup",
    "loglog_slope",
    "first_crossing",
    "rk4_step",
    "check_finite",
    "as_positive",
    "as_int",
    "few_threads_if_small",
    "as_real_array",
]


class DivergenceError(FloatingPointError):
    """A simulation left the finite numbers; the message names the step."""


def get_device(device: str | torch.device | None = None) -> torch.device:
    """The device to simulate on: `device` if given, else CUDA when available, else Apple MPS, else CPU.

    MPS has no float64, so the float64 theory checks of the book fall back to the CPU there.
    """
    if device is not None:
        if not isinstance(device, str | torch.device):
            raise TypeError(f"device must be a str, a torch.device or None; got {type(device).__name__}")
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def set_threads(n: int = 2) -> None:
    """Use `n` CPU threads in torch (and in BLAS for processes started afterwards). The CI machines have 2 cores."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n (number of threads) must be a positive int; got {n!r}")
    torch.set_num_threads(n)
    os.environ.setdefault("OMP_NUM_THREADS", str(n))


def make_generator(seed: int, device: str | torch.device | None = None) -> torch.Generator:
    """A seeded `torch.Generator` on `device` (default: the CPU, so that results do not depend on the GPU)."""
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int; got {type(seed).__name__}")
    gen = torch.Generator(device=torch.device("cpu") if device is None else get_device(device))
    gen.manual_seed(int(seed))
    return gen


def setup(chapter: str, seed: int = 0, threads: int = 2) -> torch.device:
    """One call at the top of every chapter: threads, seeds, figure style, and the chapter name for the checks.

    Returns the device the chapter's simulators will use (CUDA when present). Theory checks stay in float64.
    """
    from . import checks, plotting  # local import: plotting pulls in matplotlib

    set_threads(threads)
    torch.manual_seed(seed)
    torch.set_flush_denormal(True)  # avoids sporadic slow-downs of long float32 runs on x86
    plotting.set_style()
    checks.start_chapter(chapter)
    return get_device()


@dataclass
class History:
    """What a simulator recorded, all numpy on the host, so notebooks never touch devices.

    steps:   recorded step indices (or times); always includes the first and the last.
    metrics: named arrays whose leading time axis matches `steps`, e.g. "loss" (K,) or (K, B), "modes" (K, B, N1).
    final:   anything else the caller may need (final weights, flags).
    """

    steps: np.ndarray
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    final: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self.metrics:
            raise KeyError(f"History has no metric {key!r}; recorded: {sorted(self.metrics)}")
        return self.metrics[key]

    def __contains__(self, key: str) -> bool:
        return key in self.metrics

    @classmethod
    def from_records(cls, steps: Sequence[int | float], records: Mapping[str, Sequence[Any]],
                     final: dict[str, Any] | None = None) -> History:
        """Stack per-step records (numbers, arrays or tensors) into numpy arrays."""
        metrics = {k: np.stack([_to_numpy(v) for v in vals]) for k, vals in records.items()}
        return cls(np.asarray(steps), metrics, dict(final or {}))


def loglog_slope(x: np.ndarray | Sequence[float], y: np.ndarray | Sequence[float]) -> float:
    """Least-squares slope of log y against log x: the exponent p in y ~ C x^p."""
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"x and y must have the same length >= 2; got {x.size} and {y.size}")
    if np.any(x <= 0) or np.any(y <= 0) or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite and positive for a log-log slope")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def first_crossing(x: np.ndarray | Sequence[float], thr: float,
                   steps: np.ndarray | Sequence[float] | None = None) -> int | float | None:
    """The first index (or the matching entry of `steps`) where x >= thr, or None if x never gets there."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"x must be one-dimensional; got shape {x.shape}")
    hits = np.flatnonzero(x >= thr)
    if hits.size == 0:
        return None
    i = int(hits[0])
    if steps is None:
        return i
    steps = np.asarray(steps)
    if steps.shape != x.shape:
        raise ValueError(f"steps must have the shape of x {x.shape}; got {steps.shape}")
    return steps[i].item()


State = tuple[torch.Tensor, ...]


def rk4_step(f: Callable[[State], State], state: State, h: float) -> State:
    """One classical Runge-Kutta step for dy/dt = f(y) on a tuple of tensors (local error O(h^5))."""
    if not h > 0:
        raise ValueError(f"h (step size) must be positive; got {h!r}")
    k1 = f(state)
    k2 = f(tuple(s + 0.5 * h * k for s, k in zip(state, k1, strict=True)))
    k3 = f(tuple(s + 0.5 * h * k for s, k in zip(state, k2, strict=True)))
    k4 = f(tuple(s + h * k for s, k in zip(state, k3, strict=True)))
    return tuple(s + (h / 6.0) * (a + 2 * b + 2 * c + d)
                 for s, a, b, c, d in zip(state, k1, k2, k3, k4, strict=True))


def check_finite(name: str, value: np.ndarray | torch.Tensor, step: int | None = None) -> None:
    """Raise `DivergenceError` naming `name` (and the step) if `value` holds a NaN or an infinity."""
    ok = bool(torch.isfinite(value).all()) if isinstance(value, torch.Tensor) else bool(np.isfinite(value).all())
    if not ok:
        where = f" at step {step}" if step is not None else ""
        raise DivergenceError(f"{name} is no longer finite{where}: the run diverged (try a smaller step size)")


def as_positive(name: str, value: float) -> float:
    """Validate a positive finite scalar argument (a step size, a noise level) and return it as float."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__}")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite; got {value!r}")
    return float(value)


@contextmanager
def few_threads_if_small(device: torch.device, size: int, limit: int = 1 << 16) -> Iterator[None]:
    """Run a CPU simulation of at most `limit` tensor entries on one thread, then restore the thread count.

    The book's simulators are batches of small matrices, whose cost is per-operation overhead: intra-op threads only
    add synchronisation (measured on the 2-core CI machine: GD on 32 x 32 weights took 0.2 s on one thread and 3.2 s
    on two; a batch of 12 8 x 8 predictors 6x slower on two). Large problems and GPUs are left alone.
    """
    if device.type != "cpu" or size > limit:
        yield
        return
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def as_int(name: str, value: int, minimum: int = 0) -> int:
    """Validate an integer argument (a count, a number of steps) that must be at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int; got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value}")
    return int(value)


def as_real_array(name: str, value: Any) -> np.ndarray:
    """Validate a real, finite array argument (numpy, a number, or a torch tensor from a simulator) as float64."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a real number or an array of real numbers; "
                        f"got {type(value).__name__}") from err
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return arr


def _to_numpy(v: Any) -> np.ndarray:
    if isinstance(v, torch.Tensor):
        return v.detach().cpu().numpy()
    return np.asarray(v)
