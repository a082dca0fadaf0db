"""Shared machinery for every chapter: devices, threads, seeds, the `History` record and small numerics.

Conventions (book §0, Preface): gradient descent w_{k+1} = w_k - eta * grad L(w_k) is compared with gradient flow
at time t = eta * k (Chapter 2 uses tau = 1/eta instead, which is the same map with time counted in steps).
Checks against closed forms run in float64 on the CPU; simulators accept `device=` and use CUDA when present.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
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
    "loglog_slope",
    "first_crossing",
    "rk4_step",
    "rk4_step_unchecked",
    "one_blas_thread",
    "check_finite",
    "as_positive",
    "as_int",
    "few_threads_if_small",
    "as_real_array",
    "as_real_tensor",
    "as_real_like",
    "as_real",
    "as_nonnegative",
    "as_bool",
    "as_seed",
    "seed",
    "seed_offset",
    "SEED_ENV",
    "as_choice",
    "as_callable",
    "as_str",
    "expect_shape",
    "check_alloc",
    "steps_for",
    "as_steps",
    "as_times",
    "broadcast",
    "no_overflow",
    "MAX_BYTES",
]

#: The largest single allocation a learndyn function will attempt (bytes); bigger requests are refused up front.
MAX_BYTES = 4 << 30


class DivergenceError(FloatingPointError):
    """A simulation left the finite numbers; the message names the step."""


def get_device(device: str | torch.device | None = None) -> torch.device:
    """The device to simulate on: `device` if given, else CUDA when available, else Apple MPS, else CPU.

    MPS has no float64, so the float64 theory checks of the book fall back to the CPU there.
    """
    if device is not None:
        if not isinstance(device, str | torch.device):
            raise TypeError(f"device must be a str, a torch.device or None; got {type(device).__name__}")
        try:
            dev = torch.device(device)
        except (RuntimeError, ValueError) as err:
            raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda'; got {device!r}") from err
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device={device!r}, but CUDA is not available on this machine; use device='cpu' or "
                             "device=None (CUDA when present, else the CPU)")
        if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device={device!r}, but this machine has {torch.cuda.device_count()} CUDA device(s)")
        if dev.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
            raise ValueError(f"device={device!r}, but Apple MPS is not available here; use device='cpu'")
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


#: torch's thread count when neither `threads=` nor OMP_NUM_THREADS says otherwise (the CI machines have 2 cores).
DEFAULT_THREADS = 2


def set_threads(n: int | None = None) -> int:
    """Use `n` CPU threads in torch (and in BLAS for processes started afterwards); returns the count used.

    numpy's BLAS in this process then runs on one thread (`one_blas_thread`).

    n=None: OMP_NUM_THREADS when it is set (the Makefile exports 2 for CI), else `DEFAULT_THREADS` (2).
    """
    if n is None:
        n = _threads_from_env()
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n (number of threads) must be a positive int; got {n!r}")
    torch.set_num_threads(int(n))
    os.environ.setdefault("OMP_NUM_THREADS", str(int(n)))
    one_blas_thread()  # applied on creation; kept for the process
    return int(n)


def one_blas_thread() -> AbstractContextManager:
    """numpy's (and scipy's) BLAS on one thread: applied at once, undone on leaving a `with` block.

    torch's OpenMP threads wait spinning after each parallel region, and OpenBLAS's own threads then fight them for
    the cores: a loop that alternates the two (scipy's ARPACK over torch Hessian-vector products, Ch 6) ran 2.5x
    slower at 2 threads than with BLAS on one. The book's numpy work is small matrices, which one thread serves
    as fast. threadpoolctl comes with scikit-learn; without it nothing changes.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn brings it
        return nullcontext()
    return threadpool_limits(1, user_api="blas")


def _threads_from_env() -> int:
    raw = os.environ.get("OMP_NUM_THREADS", "").strip()
    if not raw:
        return DEFAULT_THREADS
    try:
        n = int(raw.split(",")[0])
    except ValueError as err:
        raise ValueError(f"OMP_NUM_THREADS must be a positive integer; got {raw!r}") from err
    if n < 1:
        raise ValueError(f"OMP_NUM_THREADS must be a positive integer; got {raw!r}")
    return n


def make_generator(seed: int, device: str | torch.device | None = None) -> torch.Generator:
    """A seeded `torch.Generator` on `device` (default: the CPU, so that results do not depend on the GPU)."""
    seed = as_seed("seed", seed)
    gen = torch.Generator(device=torch.device("cpu") if device is None else get_device(device))
    gen.manual_seed(seed)
    return gen


SEED_ENV = "LEARNDYN_SEED"


def seed_offset() -> int:
    """The book's one seed knob: the integer in $LEARNDYN_SEED (default 0), added to every seed a chapter uses."""
    raw = os.environ.get(SEED_ENV, "").strip()
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError as err:
        raise ValueError(f"{SEED_ENV} must be a non-negative integer; got {raw!r}") from err
    if value < 0:
        raise ValueError(f"{SEED_ENV} must be a non-negative integer; got {raw!r}")
    return value


def seed(base: int = 0) -> int:
    """The seed a chapter uses for its draw number `base`: base + $LEARNDYN_SEED.

    Every random draw of a chapter goes through this function (``rng = np.random.default_rng(ld.seed(3))``,
    ``small_init(..., seed=ld.seed(0))``), so ``LEARNDYN_SEED=k`` re-runs the whole chapter on fresh draws with its
    text and tolerances unchanged; at the default 0 the chapter's seeds are the literal ones.
    """
    return as_seed("seed", as_seed("base", base) + seed_offset())


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
        """Stack per-step records (numbers, arrays or tensors) into numpy arrays; each has one entry per step."""
        raw_steps = _to_numpy(steps)                 # kept as given (int steps stay int)
        steps = as_real_array("steps", steps, ndim=1, nonempty=True)
        if not isinstance(records, Mapping):
            raise TypeError(f"records must be a mapping name -> per-step values; got {type(records).__name__}")
        if final is not None and not isinstance(final, Mapping):
            raise TypeError(f"final must be a mapping or None; got {type(final).__name__}")
        metrics = {}
        for k, vals in records.items():
            if not isinstance(k, str):
                raise TypeError(f"records: metric names must be strings; got {k!r}")
            if isinstance(vals, str) or not hasattr(vals, "__len__") or len(vals) != steps.size:
                n = len(vals) if hasattr(vals, "__len__") else type(vals).__name__
                raise ValueError(f"records[{k!r}] must hold one value per step ({steps.size} steps); got {n}")
            try:
                metrics[k] = np.stack([_to_numpy(v) for v in vals])
            except ValueError as err:
                raise ValueError(f"records[{k!r}]: the per-step values must have one shape ({err})") from err
            if metrics[k].dtype.kind not in "biuf":
                raise TypeError(f"records[{k!r}] must hold real numbers; got dtype {metrics[k].dtype}")
        return cls(raw_steps, metrics, dict(final or {}))


def loglog_slope(x: np.ndarray | Sequence[float], y: np.ndarray | Sequence[float]) -> float:
    """Least-squares slope of log y against log x: the exponent p in y ~ C x^p."""
    x, y = as_real_array("x", x).ravel(), as_real_array("y", y).ravel()
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"x and y must have the same length >= 2; got {x.size} and {y.size}")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("x and y must be positive for a log-log slope")
    if np.ptp(np.log(x)) == 0:
        raise ValueError("x must hold at least two different values: the slope is undefined otherwise")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def first_crossing(x: np.ndarray | Sequence[float], thr: float,
                   steps: np.ndarray | Sequence[float] | None = None) -> int | float | None:
    """The first index (or the matching entry of `steps`) where x >= thr, or None if x never gets there."""
    x = as_real_array("x", x, ndim=1, nonempty=True)
    thr = as_real("thr", thr)
    if steps is not None:
        as_real_array("steps", steps)
        steps = _to_numpy(steps)                     # the values as given (int steps stay int)
        if tuple(steps.shape) != x.shape:
            raise ValueError(f"steps must have the shape of x {x.shape}; got {tuple(steps.shape)}")
    hits = np.flatnonzero(x >= thr)
    if hits.size == 0:
        return None
    i = int(hits[0])
    if steps is None:
        return i
    return steps[i].item()


State = tuple[torch.Tensor, ...] | tuple[np.ndarray, ...]


def rk4_step(f: Callable[[State], State], state: State, h: float) -> State:
    """One classical Runge-Kutta step for dy/dt = f(y) on a tuple of tensors or of numpy arrays (local error
    O(h^5))."""
    f = as_callable("f", f)
    kinds = (torch.Tensor, np.ndarray)
    if not isinstance(state, tuple | list) or not state or not all(isinstance(s, kinds) for s in state):
        raise TypeError(f"state must be a non-empty tuple of tensors or numpy arrays; got {type(state).__name__}")
    for j, s in enumerate(state):
        if isinstance(s, torch.Tensor):
            as_real_tensor(f"state[{j}]", s, allow_grad=True, dtype=None)
        else:
            as_real_array(f"state[{j}]", s)
    return rk4_step_unchecked(f, tuple(state), as_positive("h", h))


def rk4_step_unchecked(f: Callable[[State], State], state: State, h: float) -> State:
    """`rk4_step` without its argument checks, for a solver's loop whose caller validated the start, the field and
    h once (a run that leaves the finite numbers is caught by the caller's `check_finite` at recorded steps)."""
    k1 = f(state)
    k2 = f(tuple(s + 0.5 * h * k for s, k in zip(state, k1, strict=True)))
    k3 = f(tuple(s + 0.5 * h * k for s, k in zip(state, k2, strict=True)))
    k4 = f(tuple(s + h * k for s, k in zip(state, k3, strict=True)))
    return tuple(s + (h / 6.0) * (a + 2 * b + 2 * c + d)
                 for s, a, b, c, d in zip(state, k1, k2, k3, k4, strict=True))


def check_finite(name: str, value: np.ndarray | torch.Tensor, step: int | None = None) -> None:
    """Raise `DivergenceError` naming `name` (and the step) if `value` holds a NaN or an infinity."""
    if type(name) is not str:                       # the exact-type tests first: a solver calls this every step
        name = as_str("name", name)
    if step is not None and (type(step) is not int or step < 0):
        step = as_int("step", step)
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            raise TypeError(f"{name} must be real; got a complex tensor")
        # one reduction on the happy path: a finite sum means finite entries; an infinite one (NaN, inf, or an
        # overflow of finite entries) is looked at entry by entry
        ok = math.isfinite(float(value.sum())) or bool(torch.isfinite(value).all())
    else:
        arr = _real_numpy(name, value)
        with np.errstate(over="ignore", invalid="ignore"):
            ok = math.isfinite(float(arr.sum())) or bool(np.isfinite(arr).all())
    if not ok:
        where = f" at step {step}" if step is not None else ""
        raise DivergenceError(f"{name} is no longer finite{where}: the run diverged (try a smaller step size)")


def as_positive(name: str, value: float) -> float:
    """Validate a positive finite scalar argument (a step size, a noise level) and return it as float."""
    name = as_str("name", name)
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__}")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite; got {value!r}")
    return float(value)


def as_real(name: str, value: float) -> float:
    """Validate a finite real scalar (any sign) and return it as float."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value!r}")
    return float(value)


def as_nonnegative(name: str, value: float) -> float:
    """Validate a finite scalar >= 0 (a weight decay, a noise level where zero is meaningful) as float."""
    value = as_real(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0; got {value!r}")
    return value


def as_bool(name: str, value: bool) -> bool:
    """Validate a flag: True/False (or numpy's bool); a string such as 'False' is refused, not read as True."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def as_seed(name: str, value: int) -> int:
    """Validate a random seed: an int in [0, 2**64) (None is refused: it would make a run irreproducible)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int (a fixed seed keeps runs reproducible); got {value!r}")
    if not 0 <= int(value) < 2**64:
        raise ValueError(f"{name} must be in [0, 2**64); got {value}")
    return int(value)


def as_choice(name: str, value: str, choices: Sequence[str]) -> str:
    """Validate an option that must be one of `choices` (exact spelling)."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def as_callable(name: str, value: Callable[..., Any]) -> Callable[..., Any]:
    """Validate a function argument."""
    if not callable(value):
        raise TypeError(f"{name} must be a function; got {type(value).__name__}")
    return value


def as_str(name: str, value: str) -> str:
    """Validate a string argument."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string; got {type(value).__name__}")
    return value


def few_threads_if_small(device: str | torch.device, size: int, limit: int = 1 << 16):
    """Run a CPU simulation of at most `limit` tensor entries on one thread, then restore the thread count.

    The book's simulators are batches of small matrices, whose cost is per-operation overhead: intra-op threads only
    add synchronisation (measured on the 2-core CI machine: GD on 32 x 32 weights took 0.2 s on one thread and 3.2 s
    on two; a batch of 12 8 x 8 predictors 6x slower on two). Large problems and GPUs are left alone.
    A context manager; its arguments are checked when it is called.
    """
    if not isinstance(device, torch.device):
        device = get_device(device) if isinstance(device, str) else _bad_device(device)
    return _few_threads(device, as_int("size", size), as_int("limit", limit))


def _bad_device(device: Any) -> torch.device:
    raise TypeError(f"device must be a torch.device or a str such as 'cpu'; got {type(device).__name__}")


@contextmanager
def _few_threads(device: torch.device, size: int, limit: int) -> Iterator[None]:
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
    name = as_str("name", name)
    if isinstance(minimum, bool) or not isinstance(minimum, int | np.integer):
        raise TypeError(f"minimum must be an int; got {type(minimum).__name__}")
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int; got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value}")
    return int(value)


Shape = Sequence[int | str | None]


def expect_shape(name: str, shape: Sequence[int], expected: Shape, hint: str = "") -> None:
    """Raise ValueError unless `shape` matches `expected`, whose entries are sizes, or None / a symbol for any size.

    `expect_shape("W1", W1.shape, (None, 4), "(N2, N1) with N1 = columns of Sigma")` says what was expected.
    """
    shape = tuple(int(n) for n in shape)
    ok = len(shape) == len(expected) and all(e is None or isinstance(e, str) or int(e) == n
                                             for n, e in zip(shape, expected, strict=False))
    if not ok:
        want = "(" + ", ".join("?" if e is None else str(e) for e in expected) + ("," if len(expected) == 1 else "") \
            + ")"
        raise ValueError(f"{name} must have shape {want}{' ' + hint if hint else ''}; got {shape}")


def check_alloc(what: str, entries: int | float, itemsize: int = 8, limit: int | None = None) -> None:
    """Refuse (ValueError) a request that would allocate more than `limit` bytes (default `MAX_BYTES`, 4 GiB)."""
    limit = MAX_BYTES if limit is None else limit
    need = float(entries) * itemsize
    if need > limit:
        raise ValueError(f"{what} would allocate {need / 2**30:.3g} GiB (more than the {limit / 2**30:.3g} GiB this "
                         "function allows); choose smaller sizes")


def steps_for(t_max: float, h: float, name_t: str = "t_max", name_h: str = "h") -> int:
    """The number of steps of size h that end exactly at time t_max (t_max = 0: 0 steps, the run returns its start).

    Refuses a t_max that is not a whole number of steps (to 1e-9 relative): the run would otherwise stop before or
    after t_max without saying so.
    """
    t_max, h = as_nonnegative(name_t, t_max), as_positive(name_h, h)
    n = t_max / h
    k = round(n)
    if abs(n - k) > 1e-9 * max(1.0, n):
        raise ValueError(f"{name_t} = {t_max:g} is not a whole number of steps {name_h} = {h:g} (t_max/h = {n:.6g}): "
                         f"choose {name_t} = k * {name_h}, e.g. {name_t} = {max(k, 1) * h:g}")
    if k > 10**9:
        raise ValueError(f"{name_t}/{name_h} = {n:.3g} steps is more than this simulator allows (1e9)")
    return int(k)


def as_steps(name: str, value: Any, *, nonempty: bool = True) -> np.ndarray:
    """Validate step counts: non-negative whole numbers (an int, a list, an int or integer-valued float array),
    returned as an int64 array of the same shape."""
    k = as_real_array(name, value, nonempty=nonempty)
    if np.any(k < 0) or np.any(k != np.round(k)):
        raise ValueError(f"{name} must hold non-negative whole numbers (step counts); got {_short(value)}")
    if np.any(k > 2**62):
        raise ValueError(f"{name} holds a step count beyond int64; got {_short(value)}")
    return k.astype(np.int64)


def as_times(name: str, value: Any, *, strict: bool = False, start_zero: bool = False) -> np.ndarray:
    """Validate a 1-D array of times >= 0, increasing (strictly if `strict`; starting at 0 if `start_zero`)."""
    t = as_real_array(name, value, nonempty=True).ravel()
    steps = np.diff(t)
    if t[0] < 0 or np.any(steps < 0) or (strict and np.any(steps == 0)):
        raise ValueError(f"{name} must be {'strictly ' if strict else ''}increasing times >= 0; got {_short(value)}")
    if start_zero and t[0] != 0:
        raise ValueError(f"{name} must start at t = 0; got {name}[0] = {t[0]:g}")
    return t


def broadcast(names: str, *arrays: np.ndarray) -> list[np.ndarray]:
    """np.broadcast_arrays, with a ValueError naming the arguments (`names`, e.g. "t, s and u0") when they clash."""
    try:
        return list(np.broadcast_arrays(*arrays))
    except ValueError as err:
        raise ValueError(f"{names} must broadcast together; got shapes "
                         f"{', '.join(str(np.shape(a)) for a in arrays)}") from err


def no_overflow(names: str, value: Any) -> Any:
    """`value` (a closed form's result from finite inputs; an array, a tensor, a number or a tuple of them) if it is
    finite; else a ValueError saying that `names` are too large."""
    parts = value if isinstance(value, tuple | list) else (value,)
    finite = all(bool(torch.isfinite(v.detach()).all()) if isinstance(v, torch.Tensor) else bool(np.all(np.isfinite(v)))
                 for v in parts)
    if not finite:
        raise ValueError(f"{names} are too large: the result overflows float64 (NaN or inf); rescale the input")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _real_numpy(name: str, value: Any) -> np.ndarray:
    """value as a real numpy array (not converted to float), or a TypeError naming `name`."""
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            raise TypeError(f"{name} must be real; got a complex tensor")
        value = value.detach().cpu().numpy()
    if value is None or isinstance(value, str | bytes):
        raise TypeError(f"{name} must be a real number or an array of real numbers; got {type(value).__name__}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as err:          # ragged nested lists
        raise TypeError(f"{name} must be a real number or an array of real numbers (a ragged list?); "
                        f"got {type(value).__name__}") from err
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} must be real; got a complex array (dtype {arr.dtype})")
    if arr.dtype.kind not in "biuf":
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name} must be a real number or an array of real numbers; got an array of "
                            f"{arr.dtype} ({type(value).__name__})") from err
    return arr


def as_real_array(name: str, value: Any, *, ndim: int | Sequence[int] | None = None, shape: Shape | None = None,
                  nonempty: bool = False, finite: bool = True) -> np.ndarray:
    """Validate a real array argument (numpy, a number, a list, or a torch tensor from a simulator) as float64.

    Refused with a TypeError naming `name`: strings, None, complex values, non-numeric lists. With a ValueError:
    NaN/inf entries (unless finite=False), a wrong number of axes (`ndim`: one int or the allowed ints), a wrong
    `shape` (see `expect_shape`), or no entries at all when `nonempty`. A tensor with requires_grad is read
    (detached): the function only uses its values.
    """
    name = as_str("name", name)
    arr = _real_numpy(name, value).astype(float, copy=False)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(map(str, allowed))
            raise ValueError(f"{name} must have {want} axes; got shape {arr.shape}")
    if shape is not None:
        expect_shape(name, arr.shape, shape)
    if nonempty and arr.size == 0:
        raise ValueError(f"{name} must not be empty; got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return arr


def as_real_tensor(name: str, value: Any, *, device: str | torch.device | None = None,
                   dtype: torch.dtype | None = torch.float64, ndim: int | Sequence[int] | None = None,
                   shape: Shape | None = None, nonempty: bool = True, allow_grad: bool = False) -> torch.Tensor:
    """Validate a real, finite, non-empty array or tensor argument of a torch simulator; returns a tensor.

    As `as_real_array`, and: a tensor with requires_grad is refused unless `allow_grad` (a simulator does not
    differentiate through its run; pass `x.detach()`). dtype=None keeps a floating tensor's dtype (ints become
    float64); device=None keeps a tensor's device (arrays go to the CPU).
    """
    if isinstance(value, torch.Tensor):
        if value.requires_grad and not allow_grad:
            raise TypeError(f"{name} is a tensor with requires_grad=True; pass {name}.detach() (the simulator does "
                            "not differentiate through its run)")
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must be a real floating-point tensor; got dtype {value.dtype}")
        t = value
        if not t.is_floating_point():
            t = t.to(torch.float64)
    else:
        t = torch.as_tensor(as_real_array(name, value, finite=False))
    if dtype is not None:
        t = t.to(dtype)
    if device is not None:
        t = t.to(get_device(device))
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if t.ndim not in allowed:
            raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} axes; got shape {tuple(t.shape)}")
    if shape is not None:
        expect_shape(name, t.shape, shape)
    if nonempty and t.numel() == 0:
        raise ValueError(f"{name} must not be empty; got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t.detach()).all()):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return t


def as_real_like(name: str, value: Any, *, nonempty: bool = True, allow_grad: bool = True) -> np.ndarray | torch.Tensor:
    """A real, finite argument of a function that works on numpy and torch alike: a tensor stays a tensor (ints
    become float64), anything else becomes a float64 numpy array."""
    if isinstance(value, torch.Tensor):
        return as_real_tensor(name, value, dtype=None, nonempty=nonempty, allow_grad=allow_grad)
    return as_real_array(name, value, nonempty=nonempty)


def _to_numpy(v: Any) -> np.ndarray:
    if isinstance(v, torch.Tensor):
        return v.detach().cpu().numpy()
    return np.asarray(v)
