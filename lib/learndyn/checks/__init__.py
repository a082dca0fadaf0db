"""The one door every numerical statement of the book goes through.

A check prints what was measured, what the derivation predicts and the tolerance with its source, then raises
`AssertionError` when it fails, so a notebook (and the site build) stops on a false statement. Each result is also
recorded as JSON under `_build/checks/<chapter>.json` (inside the book's repository, or wherever
`LEARNDYN_CHECKS_DIR` points) for the reproduction report and for `python -m learndyn.checks audit`.

Every check has a kind:

* ``"claim"`` -- a derived prediction compared with an *independent* computation, named by ``against=``
  (a simulation, autograd, an ODE solver, a separate closed form, a paper's number). Its **resolution** is the
  smallest relative change of the prediction, tried with both signs, that would make the check fail (the worse
  sign is recorded). A claim must resolve 1 %, or say why its analysis cannot (``resolution_why=``).
* ``"bound"`` -- a proven inequality (`check_less`, or a window without a point prediction). Its **slack**,
  ``1 - measured/bound``, is recorded.
* ``"observation"`` -- an empirical regularity that no derivation of the book predicts (progressive sharpening,
  the size of an overshoot) but that the text states and later claims take as a premise: asserted in a window
  fixed on calibration seeds, held at every other seed like a claim, and never counted as evidence for a
  derivation (no resolution, no slack).
* ``"sanity"`` -- bookkeeping: identities, round-off, shapes. Recorded, never counted as evidence.

Resolution only asks whether the check would notice its printed number being wrong. Three more instruments ask
whether it would notice the errors derivations actually make:

* ``rivals={"null: no effect": 0.0, "naive formula": w_naive}`` -- the predictions the claim rules out (the null
  effect, the naive formula the derivation improves on, the neighbouring theory). The check applies its own
  acceptance test to each; a rival that passes too makes the check **fail** (it discriminates nothing), unless it
  is declared ``Rival(value, indistinguishable="derived reason")``. A rival's **margin** is the factor by which
  the tolerance would have to grow for it to pass. Name the null rival ``"null..."``: the audit flags a claim whose
  tolerance accepts it. A rival may be a callable of no arguments (evaluated once).
* ``predict=f, constants={"5/12": 5 / 12, "kappa_c": kc}`` -- the prediction as a formula ``f(c)`` of its derived
  constants (a coefficient, a threshold, a phase boundary, an exponent; ``c`` is a dict). For each constant the
  check records the smallest relative change of that constant alone, with either sign (the worse is recorded),
  that makes it fail, without re-running the simulation; ``constant_why={"kappa_c": "..."}`` gives the derived
  reason where that is worse than 1 %. A boundary is a constant too: measure the outcome at fixed points on both
  sides of it and predict the outcome from the boundary (``predict=lambda c: x > c["phi_crit"]``).
* ``$LEARNDYN_SEED`` -- every seed of a chapter goes through `learndyn.seed`, so ``LEARNDYN_SEED=k`` re-runs the
  chapter on fresh draws; records then go to ``_build/checks/seed-k/`` and each record says its seed. With
  ``LEARNDYN_CHECKS_KEEP_GOING=1`` a failed check is printed and recorded without raising (``python -m
  learndyn.checks robust`` uses it to count the passes of every claim over several seeds).

    check_close("OLS risk, Gaussian design", mc_mean, theory, atol=3 * stderr,
                why="3 standard errors of the Monte Carlo mean", against="Monte Carlo, 20 000 draws",
                rivals={"null: no noise": 0.0, "naive d/n": sigma**2 * d / n})
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core import seed_offset

__all__ = ["check_close", "check_between", "check_less", "start_chapter", "records_path", "KINDS",
           "STANDARD", "close_resolution", "window_resolution", "constant_resolution", "Rival", "KEEP_GOING_ENV"]

KINDS = ("claim", "bound", "observation", "sanity")
STANDARD = 0.01  # a claim must resolve a 1 % error in its prediction (or say why it cannot)
KEEP_GOING_ENV = "LEARNDYN_CHECKS_KEEP_GOING"
CIRCULAR_RATIOS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 10.0)  # tolerance = k x the measured error: built from it
_state: dict[str, Any] = {"chapter": None, "anchors": {}}


def start_chapter(chapter: str) -> None:
    """Name the chapter whose checks follow and forget its earlier records (a re-run replaces them)."""
    if not isinstance(chapter, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", chapter):
        raise ValueError(f"chapter must be a file-name-like string (letters, digits, '_', '-', '.'); got {chapter!r}")
    _state["chapter"] = chapter
    _state["anchors"] = {}
    path = records_path()
    if path is not None:
        _written.pop(path, None)
        if path.exists():
            path.unlink()


def records_path() -> Path | None:
    """Where this chapter's records go: $LEARNDYN_CHECKS_DIR, else `_build/checks` of the enclosing book, else None."""
    chapter = _state["chapter"] or "unnamed"
    env = os.environ.get("LEARNDYN_CHECKS_DIR")
    if env:
        return Path(env) / f"{chapter}.json"
    offset = seed_offset()
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "_toc.yml").is_file() and (folder / "_config.yml").is_file():
            base = folder / "_build" / "checks"
            return (base / f"seed-{offset}" if offset else base) / f"{chapter}.json"
    return None


@dataclass(frozen=True)
class Rival:
    """A rival prediction that a check cannot tell from its own, with the derived reason (`indistinguishable`)."""

    value: Any
    indistinguishable: str

    def __post_init__(self) -> None:
        if not isinstance(self.indistinguishable, str) or not self.indistinguishable.strip():
            raise ValueError("Rival(value, indistinguishable=...) needs the derived reason why the check cannot "
                             "tell this rival from the prediction")


# --- the three checks -------------------------------------------------------------------------------------------
def check_close(name: str, measured: Any, expected: Any = None, rtol: float = 0.0, atol: float = 0.0,
                why: str = "", source: str = "", *, kind: str = "claim", against: str = "",
                resolution_why: str = "", rivals: Mapping[str, Any] | None = None,
                predict: Callable[[dict[str, float]], Any] | None = None,
                constants: Mapping[str, float] | None = None, constant_why: Mapping[str, str] | None = None) -> None:
    """Assert |measured - expected| <= atol + rtol |expected| elementwise; print and record the outcome.

    `why` says where the tolerance comes from (required); `source` names a paper's figure or table when the
    expected number is taken from one; `kind`, `against`, `resolution_why`, `rivals`, `predict`, `constants` and
    `constant_why` as in the module docstring (with `predict=`, `expected` may be omitted: it is `predict(constants)`).
    A rival r is judged by the same rule, |measured - r| <= atol + rtol |r|.
    """
    _validate(name, why, kind, against, resolution_why)
    rtol, atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
    m = _as_array("measured", measured)
    e = _prediction(name, expected, predict, constants)
    _pairwise(m, e)
    finite = bool(np.all(np.isfinite(m)))

    def accepts(p: np.ndarray) -> bool:
        return finite and bool(np.all(np.abs(m - p) <= atol + rtol * np.abs(p)))

    def widening(p: np.ndarray) -> float:
        return _ratio(np.abs(m - p), atol + rtol * np.abs(p))

    diff = np.abs(m - e)
    ok = accepts(e)
    worst = float(np.max(diff)) if finite else float("nan")
    tol_text = _tol_text(rtol, atol)
    if m.size == 1 and e.size == 1:
        detail = f"measured {_fmt(m.item())}, expected {_fmt(e.item())}, |diff| {_fmt(worst)}, tolerance {tol_text}"
    else:
        detail = f"max |diff| {_fmt(worst)} over {max(m.size, e.size)} values, tolerance {tol_text}"
    resolution = close_resolution(m, e, rtol, atol) if kind == "claim" and ok else None
    circular = _circular(diff, atol + rtol * np.abs(e)) if kind == "claim" and ok else None
    _report(name, ok, detail, why, source, kind=kind, against=against, resolution_why=resolution_why,
            resolution=resolution, slack=None, check="close", measured=m, expected=e,
            tolerance={"rtol": rtol, "atol": atol}, error=worst, accepts=accepts, widening=widening,
            rivals=rivals, predict=predict, constants=constants, constant_why=constant_why, circular=circular)


def check_between(name: str, measured: Any, low: float, high: float, why: str = "", source: str = "", *,
                  expected: Any = None, kind: str | None = None, against: str = "",
                  resolution_why: str = "", rivals: Mapping[str, Any] | None = None,
                  predict: Callable[[dict[str, float]], Any] | None = None,
                  constants: Mapping[str, float] | None = None,
                  constant_why: Mapping[str, str] | None = None) -> None:
    """Assert low <= measured <= high (every entry); print and record the outcome.

    With `expected=` (the prediction the window is built around; or `predict=` and `constants=`) the check is a
    claim by default, and its resolution is the smallest relative change of the prediction, moving the window
    with it, that fails. Without it the window is a bound (its slack to each end is recorded), an observation or
    a sanity check.
    A rival r (or a changed constant) moves the window by r - expected, as a wrong prediction would.
    """
    has_prediction = expected is not None or predict is not None
    kind = kind if kind is not None else ("claim" if has_prediction else "bound")
    _validate(name, why, kind, against, resolution_why)
    low, high = _tolerance("low", low, signed=True), _tolerance("high", high, signed=True)
    if not low <= high:
        raise ValueError(f"low must not exceed high; got [{low}, {high}]")
    m = _as_array("measured", measured)
    e = None
    if has_prediction:
        e = _prediction(name, expected, predict, constants)
        _pairwise(m, e)
    elif kind == "claim":
        raise ValueError(f"check {name!r}: a claim needs its prediction: pass expected=, or kind='bound' for a "
                         "window without a point prediction")
    elif rivals or constants:
        raise ValueError(f"check {name!r}: rivals= and constants= need a prediction (expected= or predict=)")
    finite = bool(np.all(np.isfinite(m)))

    def accepts(p: np.ndarray) -> bool:
        shift = p - e
        return finite and bool(np.all((m >= low + shift) & (m <= high + shift)))

    def widening(p: np.ndarray) -> float:
        below = np.maximum(e - low, 0.0)
        above = np.maximum(high - e, 0.0)
        need = np.where(m < p, p - m, m - p)
        room = np.where(m < p, below, above)
        return _ratio(need, room)

    ok = finite and bool(np.all((m >= low) & (m <= high)))
    shown = _fmt(m.item()) if m.size == 1 else f"[{_fmt(m.min())}, {_fmt(m.max())}] ({m.size} values)"
    detail = f"measured {shown}, allowed [{_fmt(low)}, {_fmt(high)}]"
    error = None
    if e is not None:
        error = float(np.max(np.abs(m - e))) if finite else float("nan")
        detail += f", expected {_fmt(e.item()) if e.size == 1 else f'{e.size} values'}"
    resolution = window_resolution(m, e, low, high) if kind == "claim" and ok else None
    slack = _window_slack(m, low, high) if kind == "bound" and ok else None
    _report(name, ok, detail, why, source, kind=kind, against=against, resolution_why=resolution_why,
            resolution=resolution, slack=slack, check="between", measured=m, expected=e,
            tolerance={"low": low, "high": high}, error=error, accepts=accepts if e is not None else None,
            widening=widening, rivals=rivals, predict=predict, constants=constants, constant_why=constant_why,
            circular=None)


def check_less(name: str, measured: Any, bound: Any, why: str = "", source: str = "", *, kind: str = "bound",
               against: str = "") -> None:
    """Assert measured <= bound (elementwise, bounds broadcast); print and record the outcome and the slack.

    A bound, an observation or a sanity check: a claim (a prediction with a tolerance) is `check_close` or
    `check_between`.
    """
    if kind == "claim":
        raise ValueError(f"check {name!r}: check_less checks a bound (kind='bound'), an observation "
                         "(kind='observation') or bookkeeping (kind='sanity'); a prediction compared with a "
                         "computation is check_close or check_between(expected=...)")
    _validate(name, why, kind, against, "")
    m, b = _as_array("measured", measured), _as_array("bound", bound, allow_nan=False)
    _pairwise(m, b)
    ok = bool(np.all(np.isfinite(m)) and np.all(m <= b))
    slack = _less_slack(m, b) if ok and kind != "observation" else None
    if m.size == 1 and b.size == 1:
        detail = f"measured {_fmt(m.item())} <= bound {_fmt(b.item())}"
    else:
        gap = np.broadcast_to(b, np.broadcast_shapes(m.shape, b.shape)) - m
        detail = f"{max(m.size, b.size)} values, smallest bound - measured {_fmt(float(np.min(gap)))} (must be >= 0)"
    _report(name, ok, detail, why, source, kind=kind, against=against, resolution_why="", resolution=None,
            slack=slack, check="less", measured=m, expected=None, tolerance={"bound": b}, error=None)


# --- rivals and derived constants -------------------------------------------------------------------------------
_DELTAS = np.geomspace(1e-5, 10.0, 97)  # relative changes tried for a constant, then refined by bisection


def _prediction(name: str, expected: Any, predict: Callable[[dict[str, float]], Any] | None,
                constants: Mapping[str, float] | None) -> np.ndarray:
    """The prediction as an array: `expected`, or `predict(constants)` (which must agree with `expected`)."""
    if predict is None:
        if constants:
            raise ValueError(f"check {name!r}: constants= need predict=, the formula of the prediction in them")
        if expected is None:
            raise ValueError(f"check {name!r}: pass the prediction, expected= (or predict= with constants=)")
        return _as_array("expected", expected, allow_nan=False)
    if not callable(predict):
        raise TypeError(f"check {name!r}: predict must be a function of the constants dict; got "
                        f"{type(predict).__name__}")
    if not isinstance(constants, Mapping) or not constants:
        raise ValueError(f"check {name!r}: predict= needs constants=, a non-empty dict of the derived constants "
                         "it is a formula in")
    for key, value in constants.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"check {name!r}: constants must be named by non-empty strings; got {key!r}")
        _tolerance(f"constant {key!r}", value, signed=True)
        if math.isinf(float(value)):
            raise ValueError(f"check {name!r}: constant {key!r} must be finite; got {value}")
    e = _as_array("predict(constants)", predict(dict(constants)), allow_nan=False)
    if expected is not None:
        given = _as_array("expected", expected, allow_nan=False)
        if given.shape != e.shape or not np.allclose(given, e, rtol=1e-12, atol=0.0):
            raise ValueError(f"check {name!r}: expected= and predict(constants) disagree; pass one of them")
    return e


def _ratio(need: np.ndarray, room: np.ndarray) -> float:
    """max over elements of need/room, with 0/0 = 0 and x/0 = inf: how much a tolerance must grow to accept."""
    need, room = np.broadcast_arrays(np.asarray(need, dtype=float), np.asarray(room, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(room > 0, need / room, np.where(need > 0, np.inf, 0.0))
    r = np.where(np.isnan(r), np.inf, r)
    return float(np.max(r))


def _circular(diff: np.ndarray, tol: np.ndarray) -> str | None:
    """A tolerance that is a round multiple of the measured error was built from it: say so (else None)."""
    diff, tol = np.broadcast_arrays(diff, tol)
    i = int(np.argmax(diff))
    if diff.flat[i] <= 0 or not np.all(np.isfinite(tol)):
        return None
    ratio = float(tol.flat[i] / diff.flat[i])
    for k in CIRCULAR_RATIOS:
        if abs(ratio - k) <= 8 * np.finfo(float).eps * k:  # k * error, up to the rounding of that product
            return f"the tolerance is {k:g} x the measured error"
    return None


def _rival_rows(name: str, rivals: Mapping[str, Any] | None, m: np.ndarray,
                accepts: Callable[[np.ndarray], bool], widening: Callable[[np.ndarray], float]) -> list[dict[str, Any]]:
    if rivals is None:
        return []
    if not isinstance(rivals, Mapping):
        raise TypeError(f"check {name!r}: rivals must be a dict of name -> prediction; got {type(rivals).__name__}")
    rows = []
    for label, value in rivals.items():
        if not isinstance(label, str) or not label.strip():
            raise TypeError(f"check {name!r}: rivals must be named by non-empty strings; got {label!r}")
        why = ""
        if isinstance(value, Rival):
            value, why = value.value, value.indistinguishable
        if callable(value):
            value = value()
        r = _as_array(f"rival {label!r}", value, allow_nan=False)
        _pairwise(m, r)
        passes = accepts(r)
        rows.append({"name": label, "rejected": not passes, "margin": widening(r), "indistinguishable": why})
    return rows


def constant_resolution(accepts: Callable[[np.ndarray], bool], predict: Callable[[dict[str, float]], Any],
                        constants: Mapping[str, float], key: str) -> float:
    """The smallest relative change of `constants[key]` alone, tried with both signs, that the check rejects.

    The constant c becomes c (1 + s delta), s = +-1; delta runs over a geometric grid from 1e-5 to 10 (every 8th
    point, then the points after the last accepted one), and the first rejected delta is refined by bisection
    against the last accepted one to a relative 1e-7. A prediction that cannot be
    evaluated (an exception, NaN) counts as rejected. The worse sign is returned; inf when no change up to 10x
    (or none at all, for a constant equal to 0) is rejected.
    """
    base = float(constants[key])
    if base == 0.0:
        return math.inf

    def rejected(delta: float, s: float) -> bool:
        trial = dict(constants)
        trial[key] = base * (1.0 + s * delta)
        try:
            with np.errstate(all="ignore"):
                p = np.asarray(predict(trial), dtype=float)
        except (ArithmeticError, ValueError):
            return True
        return bool(np.any(np.isnan(p))) or not accepts(p)

    n = len(_DELTAS)
    probes = sorted(set(range(0, n, 8)) | {n - 1})
    worst = 0.0
    for s in (1.0, -1.0):
        # The first rejected grid point: every 8th point first, then the points after the last accepted probe (the
        # point a scan of the whole grid finds when rejection is monotone in delta, for about a third of the work).
        k = next((k for k, i in enumerate(probes) if rejected(float(_DELTAS[i]), s)), None)
        if k is None:
            return math.inf
        between = range(probes[k - 1] + 1 if k else 0, probes[k])
        i = next((j for j in between if rejected(float(_DELTAS[j]), s)), probes[k])
        lo, hi = (float(_DELTAS[i - 1]) if i else 0.0), float(_DELTAS[i])
        for _ in range(60):  # bisection to a relative 1e-7 (or to 1e-5 / 2^60 when even the grid's first is rejected)
            if hi - lo <= 1e-7 * hi:
                break
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if rejected(mid, s) else (mid, hi)
        worst = max(worst, hi)
    return worst


def _constant_rows(name: str, predict: Callable[[dict[str, float]], Any] | None,
                   constants: Mapping[str, float] | None, constant_why: Mapping[str, str] | None,
                   accepts: Callable[[np.ndarray], bool] | None, ok: bool) -> list[dict[str, Any]]:
    if constant_why is not None:
        if not isinstance(constant_why, Mapping) or not all(isinstance(v, str) for v in constant_why.values()):
            raise TypeError(f"check {name!r}: constant_why must be a dict of constant name -> reason")
        unknown = set(constant_why) - set(constants or {})
        if unknown:
            raise ValueError(f"check {name!r}: constant_why names constants not in constants=: {sorted(unknown)}")
    if predict is None or not constants:
        return []
    why = dict(constant_why or {})
    return [{"name": key, "value": float(value), "why": why.get(key, ""),
             "resolution": constant_resolution(accepts, predict, constants, key) if ok and accepts else None}
            for key, value in constants.items()]


# --- resolution and slack, exactly from the recorded numbers -----------------------------------------------------
def close_resolution(measured: Any, expected: Any, rtol: float, atol: float) -> float:
    """The smallest relative change of the prediction, tried with both signs, that fails `check_close`.

    The prediction e becomes e (1 + s delta), s = +-1. Element by element the check fails when
        g_s(delta) = |d - s delta e| - atol - rtol |e| |1 + s delta| > 0,        d = measured - e.
    g_s is piecewise linear in delta, with kinks where d = s delta e and (for s = -1) at delta = 1, so its first
    zero crossing is found exactly on each piece. The result for sign s is the smallest crossing over the
    elements; the resolution is the larger (worse) of the two signs, inf when no change fails (e = 0).
    """
    m, e = np.broadcast_arrays(np.asarray(measured, dtype=float), np.asarray(expected, dtype=float))
    m, e = m.ravel(), e.ravel()
    d = m - e
    room = atol + rtol * np.abs(e)
    if np.any(np.abs(d) > room):
        return 0.0
    if d.size <= 4096:
        return max(_first_failure(d, e, s, rtol, atol) for s in (1.0, -1.0))
    # The checks of whole trajectories pass millions of values; the exact search is needed only where the smallest
    # crossing can be. For either sign, |d - s delta e| <= |d| + delta |e| and |1 + s delta| >= 1 - delta give
    # g_s <= 0 up to low = (room - |d|) / (|e| (1 + rtol)), a lower bound of the element's crossing. So search the
    # 4096 elements of smallest low first: if their smallest crossing is at most every other element's low, it is
    # the smallest of all (the same number as a search over every element); otherwise search them all.
    ae = np.abs(e)
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.where(ae > 0, (room - np.abs(d)) / (ae * (1 + rtol)), np.inf)
    first = np.argpartition(low, 4096)
    head, rest = first[:4096], first[4096:]
    floor = float(np.min(low[rest]))
    result = 0.0
    for s in (1.0, -1.0):
        found = _first_failure(d[head], e[head], s, rtol, atol)
        result = max(result, found if found <= floor else _first_failure(d, e, s, rtol, atol))
    return result


def _first_failure(d: np.ndarray, e: np.ndarray, s: float, rtol: float, atol: float) -> float:
    def g(delta: np.ndarray) -> np.ndarray:
        return np.abs(d - s * delta * e) - atol - rtol * np.abs(e) * np.abs(1 + s * delta)

    with np.errstate(divide="ignore", invalid="ignore"):
        kink = np.where(e != 0, d / (s * e), 0.0)
    kinks = [np.zeros_like(d), np.where(kink > 0, kink, 0.0), np.full_like(d, 1.0 if s < 0 else 0.0)]
    pts = np.sort(np.stack(kinks, axis=1), axis=1)
    vals = g(pts.T).T
    root = np.full(d.shape, np.inf)
    for j in (1, 0):  # earlier pieces win: fill from the last piece backwards
        cross = (vals[:, j] <= 0) & (vals[:, j + 1] > 0)
        step = np.where(cross, vals[:, j + 1] - vals[:, j], 1.0)
        root = np.where(cross, pts[:, j] - vals[:, j] * (pts[:, j + 1] - pts[:, j]) / step, root)
    tail_slope = g(pts[:, 2] + 1.0) - vals[:, 2]
    beyond = (vals[:, 1] <= 0) & (vals[:, 2] <= 0) & (tail_slope > 0)
    root = np.where(beyond & ~np.isfinite(root), pts[:, 2] - vals[:, 2] / np.where(beyond, tail_slope, 1.0), root)
    return float(np.min(root))


def window_resolution(measured: Any, expected: Any, low: float, high: float) -> float:
    """The smallest relative change of the prediction that moves the window [low, high] off a measurement.

    The window is carried with its prediction: e -> e (1 + s delta) shifts both ends by s delta e. An element
    whose shift is upwards fails once delta |e| > measured - low, one shifted downwards once delta |e| >
    high - measured. Worse of the two signs; inf when the prediction is 0 or the window unbounded that way.
    """
    m, e = np.broadcast_arrays(np.asarray(measured, dtype=float), np.asarray(expected, dtype=float))
    m, e = m.ravel(), np.abs(e.ravel())
    if np.any((m < low) | (m > high)):
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.where(e > 0, (m - low) / e, np.inf)
        down = np.where(e > 0, (high - m) / e, np.inf)
    # with e > 0, s = +1 shifts every element up; with e < 0 every element down (|e| already taken): the sign of
    # the prediction only swaps the two cases, so each sign's failure is the smallest over the elements.
    return float(max(np.min(up), np.min(down)))


def _less_slack(m: np.ndarray, b: np.ndarray) -> float:
    """1 - measured/bound for a positive bound, (bound - measured)/|bound| in general, the tightest element."""
    m, b = np.broadcast_arrays(m, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(b != 0, (b - m) / np.abs(b), b - m)
    rel = np.where(np.isinf(b), np.inf, rel)
    return float(np.min(rel))


def _window_slack(m: np.ndarray, low: float, high: float) -> dict[str, float]:
    """Distance of the measurements to each end of the window, relative to that end (absolute at an end of 0)."""
    def rel(dist: float, end: float) -> float:
        if math.isinf(end):
            return math.inf
        return dist / abs(end) if end != 0 else dist

    return {"low": rel(float(np.min(m)) - low, low), "high": rel(high - float(np.max(m)), high)}


# --- validation ---------------------------------------------------------------------------------------------------
def _validate(name: str, why: str, kind: str, against: str, resolution_why: str) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string describing the claim")
    if not isinstance(why, str) or not why.strip():
        raise ValueError(f"check {name!r}: why must say where the tolerance comes from (an error bound, a sampling "
                         "error, ...)")
    if kind not in KINDS:
        raise ValueError(f"check {name!r}: kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if not isinstance(against, str) or not isinstance(resolution_why, str):
        raise TypeError(f"check {name!r}: against and resolution_why must be strings")
    if kind == "claim" and not against.strip():
        raise ValueError(f"check {name!r}: a claim must name its independent side with against= (for example "
                         "'GD in torch, float64', 'scipy solve_ivp', 'autograd')")
    if resolution_why and kind != "claim":
        raise ValueError(f"check {name!r}: resolution_why explains a claim's resolution; this check is a {kind}")


def _tolerance(label: str, x: Any, signed: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise TypeError(f"{label} must be a real number; got {type(x).__name__} {x!r}")
    x = float(x)
    if math.isnan(x) or (not signed and (x < 0 or math.isinf(x))):
        raise ValueError(f"{label} must be {'a number, not NaN' if signed else 'finite and non-negative'}; got {x}")
    return x


def _as_array(label: str, x: Any, allow_nan: bool = True) -> np.ndarray:
    """A float array of `x` (numbers, arrays, tensors). Complex, empty or (for predictions) NaN is an error."""
    if hasattr(x, "detach"):  # a torch tensor, without importing torch here
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{label} must be a number or an array of numbers; got {type(x).__name__}") from err
    if np.iscomplexobj(arr):
        raise TypeError(f"{label} must be real; got complex values")
    try:
        arr = arr.astype(float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{label} must be a number or an array of numbers; got {type(x).__name__}") from err
    if arr.size == 0:
        raise ValueError(f"{label} is empty (shape {arr.shape}): a check needs at least one value")
    if not allow_nan and np.any(np.isnan(arr)):
        raise ValueError(f"{label} contains NaN: a prediction must be a number")
    return arr


def _pairwise(m: np.ndarray, other: np.ndarray) -> None:
    """Broadcasting may repeat a scalar or an axis of one side, never pair every entry with every other."""
    try:
        shape = np.broadcast_shapes(m.shape, other.shape)
    except ValueError as err:
        raise ValueError(f"measured {m.shape} and prediction {other.shape} do not broadcast") from err
    if int(np.prod(shape)) > max(m.size, other.size):
        raise ValueError(f"measured {m.shape} and prediction {other.shape} broadcast to {shape}, more pairs than "
                         "either has: reshape one of them")


# --- printing and recording ---------------------------------------------------------------------------------------
def _fmt(x: float) -> str:
    return f"{x:.4g}" if np.isfinite(x) else str(x)


def _tol_text(rtol: float, atol: float) -> str:
    parts = ([f"atol {atol:.3g}"] if atol else []) + ([f"rtol {rtol:.3g}"] if rtol else [])
    return " + ".join(parts) if parts else "0 (exact)"


def _pct(x: float) -> str:
    if math.isinf(x):
        return "unbounded"
    return f"{100 * x:.2g} %" if x < 0.1 else f"{100 * x:.0f} %"


def kind_line(kind: str, against: str, resolution: float | None, resolution_why: str,
              slack: float | dict[str, float] | None) -> str:
    """The line a check prints (and the report shows) about its kind and power."""
    if kind == "sanity":
        return "sanity check (bookkeeping, not evidence)"
    if kind == "observation":
        return "observation (an empirical regularity, window fixed on calibration seeds; not evidence)"
    if kind == "bound":
        if slack is None:
            return "bound"
        if isinstance(slack, dict):
            return f"bound, slack {_pct(slack['low'])} to the lower end, {_pct(slack['high'])} to the upper"
        return f"bound, slack {_pct(slack)}"
    text = f"claim against {against}"
    if resolution is None:
        return text
    if math.isinf(resolution):  # a one-sided window, or a prediction of 0: no relative change moves it off
        text += "; no relative change of the prediction fails it (one-sided, or a prediction of 0): its power is "
        text += "in the rivals it rejects"
    else:
        text += f"; resolves {_pct(resolution)}"
    if resolution > STANDARD:
        text += f" ({resolution_why})" if resolution_why else " -- weaker than 1 %, and no reason given"
    return text


def _summary(x: np.ndarray | None) -> Any:
    if x is None:
        return None
    if x.size == 1:
        return float(x.item())
    return {"max": float(np.nanmax(x)), "min": float(np.nanmin(x)), "size": int(x.size)}


def anchor_for(chapter: str, name: str) -> str:
    """The HTML id of a check: the chapter and a slug of its name."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60].strip("-")
    return f"check-{chapter}-{slug or 'x'}".replace("_", "-").replace(".", "-")


def _anchor(name: str) -> str:
    chapter = _state["chapter"] or "unnamed"
    anchor = base = anchor_for(chapter, name)
    n = 2
    while _state["anchors"].get(anchor, name) != name:
        anchor, n = f"{base}-{n}", n + 1
    _state["anchors"][anchor] = name
    return anchor


def _report(name: str, ok: bool, detail: str, why: str, source: str, *, kind: str, against: str,
            resolution_why: str, resolution: float | None, slack: Any, check: str, measured: np.ndarray,
            expected: np.ndarray | None, tolerance: dict[str, Any], error: float | None,
            accepts: Callable[[np.ndarray], bool] | None = None, widening: Callable[[np.ndarray], float] | None = None,
            rivals: Mapping[str, Any] | None = None, predict: Callable[[dict[str, float]], Any] | None = None,
            constants: Mapping[str, float] | None = None, constant_why: Mapping[str, str] | None = None,
            circular: str | None = None) -> None:
    if (rivals or constants) and kind != "claim":
        raise ValueError(f"check {name!r}: rivals= and constants= belong to a claim; this check is a {kind}")
    rival_rows = _rival_rows(name, rivals, measured, accepts, widening) if rivals and accepts else []
    constant_rows = _constant_rows(name, predict, constants, constant_why, accepts, ok)
    passing = [r["name"] for r in rival_rows if not r["rejected"] and not r["indistinguishable"]]
    if passing:
        ok = False
        resolution = None
        detail += f"; rival(s) {', '.join(map(repr, passing))} pass(es) too"
    power = kind_line(kind, against, resolution, resolution_why, slack)
    line = f"{'PASS' if ok else 'FAIL'}  {name}\n      {detail}\n      tolerance: {why}"
    extra = _rivals_line(rival_rows) + _constants_line(constant_rows)
    line += "".join(f"\n      {x}" for x in extra) + f"\n      {power}"
    chapter = _state["chapter"]
    first = name not in _state["anchors"].values()
    anchor = _anchor(name)
    _show(line, anchor, first, ok)
    record = {
        "chapter": chapter, "name": name, "passed": ok, "detail": detail, "why": why, "source": source,
        "measured": _summary(measured), "expected": _summary(expected),
        "tolerance": {k: _summary(np.asarray(v, dtype=float)) for k, v in tolerance.items()}, "error": error,
        "kind": kind, "against": against, "resolution": resolution, "resolution_why": resolution_why,
        "slack": slack, "check": check, "anchor": anchor, "rivals": rival_rows, "constants": constant_rows,
        "circular": circular, "seed": seed_offset(),
    }
    _record(record)
    if not ok and os.environ.get(KEEP_GOING_ENV, "") not in ("1", "true", "yes"):
        raise AssertionError(line)


def _rivals_line(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    parts = []
    for r in rows:
        if r["indistinguishable"]:
            parts.append(f"{r['name']} (indistinguishable: {r['indistinguishable']})")
        elif r["rejected"]:
            parts.append(f"{r['name']} (x{_fmt(r['margin'])} the tolerance)")
        else:
            parts.append(f"{r['name']} (PASSES: the claim does not rule it out)")
    return ["rivals: " + "; ".join(parts)]


def _constants_line(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    parts = [f"{r['name']} = {_fmt(r['value'])} resolves "
             + ("?" if r["resolution"] is None else "nothing up to 10x" if math.isinf(r["resolution"])
                else _pct(r["resolution"]))
             + (f" ({r['why']})" if r["why"] and (r["resolution"] or 0) > STANDARD else "") for r in rows]
    return ["derived constants: " + "; ".join(parts)]


def _show(line: str, anchor: str, first: bool, ok: bool) -> None:
    """Print the check; in a Jupyter kernel also as HTML: one summary line, the details folded under it, the
    check's id (on its first output; its row in the reproduction report has the same id) and a link to that row.
    The checks of one cell share one output: from the second on, it reads "✓ N checks passed" and folds their
    lines (each with its own details) under it, so a cell's run of checks is one line on the page."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    if not shell or not hasattr(shell, "kernel"):
        print(line)
        return
    from IPython.display import display, update_display

    head, *rest = line.split("\n")
    status, name = head.split("  ", 1)
    power = rest[-1].strip()
    ident = f' id="{anchor}"' if first else ""
    href = f"../reproduction.html#{anchor}"
    body = (f'<details class="learndyn-check {"pass" if ok else "fail"}"{ident}><summary>'
            f'{"&#10003;" if ok else "&#10007; FAIL"} {html.escape(name)} &mdash; {html.escape(power)}</summary>'
            f'<pre>{html.escape(chr(10).join(r.strip() for r in rest[:-1]))}</pre>'
            f'<a class="check-report-link" href="{href}">This check in the reproduction report</a></details>')
    count = getattr(shell, "execution_count", None)
    if count is None:  # no cell to group by: each check its own output
        display({"text/plain": line, "text/html": body}, raw=True)
        return
    cell = (id(shell), count)
    group = _state.get("group")
    if not group or group["cell"] != cell:
        group = _state["group"] = {"cell": cell, "id": f"learndyn-checks-{anchor}", "items": []}
    group["items"].append((line, body, ok))
    items = group["items"]
    if len(items) == 1:
        display({"text/plain": line, "text/html": body}, raw=True, display_id=group["id"])
        return
    failed = sum(not ok_ for _, _, ok_ in items)
    head_html = (f"&#10007; {failed} of {len(items)} checks failed" if failed
                 else f"&#10003; {len(items)} checks passed")
    grouped = (f'<details class="learndyn-checks{" fail" if failed else ""}"><summary>{head_html}</summary>'
               + "".join(b for _, b, _ in items) + "</details>")
    text = "\n".join(t for t, _, _ in items)
    update_display({"text/plain": text, "text/html": grouped}, raw=True, display_id=group["id"])


#: The rows this process has written, serialised, per records file: a record is encoded once, not once per later
#: check of the chapter (json's indented encoder is pure Python; re-encoding every row at every check was a sixth
#: of Chapter 2's run time).
_written: dict[Path, dict[str, str]] = {}


def _record(record: dict[str, Any]) -> None:
    path = records_path()
    if path is None:
        return
    rows = _written.get(path)
    if rows is None or not path.exists():  # first record here, or the file was removed: start from what is on disk
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            old = json.loads(path.read_text()) if path.exists() else []
        except ValueError:  # a record left half-written by a killed run: start the chapter's list afresh
            old = []
        rows = _written[path] = {r["name"]: _row_text(r) for r in old}
    rows.pop(record["name"], None)  # a re-run check moves to the end, as before
    rows[record["name"]] = _row_text(record)
    # Write atomically: two runs of one chapter (a test beside a build) must never see a half-written file. The
    # text is json.dumps(rows, indent=1), assembled from the rows' own encodings.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text("[\n" + ",\n".join(rows.values()) + "\n]")
    os.replace(tmp, path)


def _row_text(row: dict[str, Any]) -> str:
    """One row as json.dumps(list, indent=1) writes it inside the list: indented by one space."""
    return " " + json.dumps(row, indent=1, default=float).replace("\n", "\n ")
