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
* ``"sanity"`` -- bookkeeping: identities, round-off, shapes. Recorded, never counted as evidence.

    check_close("OLS risk, Gaussian design", mc_mean, theory, atol=3 * stderr,
                why="3 standard errors of the Monte Carlo mean", against="Monte Carlo, 20 000 draws")
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["check_close", "check_between", "check_less", "start_chapter", "records_path", "KINDS",
           "STANDARD", "close_resolution", "window_resolution"]

KINDS = ("claim", "bound", "sanity")
STANDARD = 0.01  # a claim must resolve a 1 % error in its prediction (or say why it cannot)
_state: dict[str, Any] = {"chapter": None, "anchors": {}}


def start_chapter(chapter: str) -> None:
    """Name the chapter whose checks follow and forget its earlier records (a re-run replaces them)."""
    if not isinstance(chapter, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", chapter):
        raise ValueError(f"chapter must be a file-name-like string (letters, digits, '_', '-', '.'); got {chapter!r}")
    _state["chapter"] = chapter
    _state["anchors"] = {}
    path = records_path()
    if path is not None and path.exists():
        path.unlink()


def records_path() -> Path | None:
    """Where this chapter's records go: $LEARNDYN_CHECKS_DIR, else `_build/checks` of the enclosing book, else None."""
    chapter = _state["chapter"] or "unnamed"
    env = os.environ.get("LEARNDYN_CHECKS_DIR")
    if env:
        return Path(env) / f"{chapter}.json"
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "_toc.yml").is_file() and (folder / "_config.yml").is_file():
            return folder / "_build" / "checks" / f"{chapter}.json"
    return None


# --- the three checks -------------------------------------------------------------------------------------------
def check_close(name: str, measured: Any, expected: Any, rtol: float = 0.0, atol: float = 0.0,
                why: str = "", source: str = "", *, kind: str = "claim", against: str = "",
                resolution_why: str = "") -> None:
    """Assert |measured - expected| <= atol + rtol |expected| elementwise; print and record the outcome.

    `why` says where the tolerance comes from (required); `source` names a paper's figure or table when the
    expected number is taken from one; `kind`, `against` and `resolution_why` as in the module docstring.
    """
    _validate(name, why, kind, against, resolution_why)
    rtol, atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
    m, e = _as_array("measured", measured), _as_array("expected", expected, allow_nan=False)
    _pairwise(m, e)
    diff = np.abs(m - e)
    ok = bool(np.all(np.isfinite(m)) and np.all(diff <= atol + rtol * np.abs(e)))
    worst = float(np.max(diff)) if np.all(np.isfinite(m)) else float("nan")
    tol_text = _tol_text(rtol, atol)
    if m.size == 1 and e.size == 1:
        detail = f"measured {_fmt(m.item())}, expected {_fmt(e.item())}, |diff| {_fmt(worst)}, tolerance {tol_text}"
    else:
        detail = f"max |diff| {_fmt(worst)} over {max(m.size, e.size)} values, tolerance {tol_text}"
    resolution = close_resolution(m, e, rtol, atol) if kind == "claim" and ok else None
    _report(name, ok, detail, why, source, kind=kind, against=against, resolution_why=resolution_why,
            resolution=resolution, slack=None, check="close", measured=m, expected=e,
            tolerance={"rtol": rtol, "atol": atol}, error=worst)


def check_between(name: str, measured: Any, low: float, high: float, why: str = "", source: str = "", *,
                  expected: Any = None, kind: str | None = None, against: str = "",
                  resolution_why: str = "") -> None:
    """Assert low <= measured <= high (every entry); print and record the outcome.

    With `expected=` (the prediction the window is built around) the check is a claim by default, and its
    resolution is the smallest relative change of the prediction, moving the window with it, that fails.
    Without it the window is a bound (its slack to each end is recorded) or a sanity check.
    """
    kind = kind if kind is not None else ("claim" if expected is not None else "bound")
    _validate(name, why, kind, against, resolution_why)
    low, high = _tolerance("low", low, signed=True), _tolerance("high", high, signed=True)
    if not low <= high:
        raise ValueError(f"low must not exceed high; got [{low}, {high}]")
    m = _as_array("measured", measured)
    e = None
    if expected is not None:
        e = _as_array("expected", expected, allow_nan=False)
        _pairwise(m, e)
    elif kind == "claim":
        raise ValueError(f"check {name!r}: a claim needs its prediction: pass expected=, or kind='bound' for a "
                         "window without a point prediction")
    finite = bool(np.all(np.isfinite(m)))
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
            tolerance={"low": low, "high": high}, error=error)


def check_less(name: str, measured: Any, bound: Any, why: str = "", source: str = "", *, kind: str = "bound",
               against: str = "") -> None:
    """Assert measured <= bound (elementwise, bounds broadcast); print and record the outcome and the slack.

    A bound or a sanity check: a claim (a prediction with a tolerance) is `check_close` or `check_between`.
    """
    if kind == "claim":
        raise ValueError(f"check {name!r}: check_less checks a bound (kind='bound') or bookkeeping "
                         "(kind='sanity'); a prediction compared with a computation is check_close or "
                         "check_between(expected=...)")
    _validate(name, why, kind, against, "")
    m, b = _as_array("measured", measured), _as_array("bound", bound, allow_nan=False)
    _pairwise(m, b)
    ok = bool(np.all(np.isfinite(m)) and np.all(m <= b))
    slack = _less_slack(m, b) if ok else None
    if m.size == 1 and b.size == 1:
        detail = f"measured {_fmt(m.item())} <= bound {_fmt(b.item())}"
    else:
        gap = np.broadcast_to(b, np.broadcast_shapes(m.shape, b.shape)) - m
        detail = f"{max(m.size, b.size)} values, smallest bound - measured {_fmt(float(np.min(gap)))} (must be >= 0)"
    _report(name, ok, detail, why, source, kind=kind, against=against, resolution_why="", resolution=None,
            slack=slack, check="less", measured=m, expected=None, tolerance={"bound": b}, error=None)


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
    if np.any(np.abs(d) > atol + rtol * np.abs(e)):
        return 0.0
    return max(_first_failure(d, e, s, rtol, atol) for s in (1.0, -1.0))


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
        return "no relative change (the prediction is 0)"
    return f"{100 * x:.2g} %" if x < 0.1 else f"{100 * x:.0f} %"


def kind_line(kind: str, against: str, resolution: float | None, resolution_why: str,
              slack: float | dict[str, float] | None) -> str:
    """The line a check prints (and the report shows) about its kind and power."""
    if kind == "sanity":
        return "sanity check (bookkeeping, not evidence)"
    if kind == "bound":
        if slack is None:
            return "bound"
        if isinstance(slack, dict):
            return f"bound, slack {_pct(slack['low'])} to the lower end, {_pct(slack['high'])} to the upper"
        return f"bound, slack {_pct(slack)}"
    text = f"claim against {against}"
    if resolution is None:
        return text
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
            expected: np.ndarray | None, tolerance: dict[str, Any], error: float | None) -> None:
    power = kind_line(kind, against, resolution, resolution_why, slack)
    line = f"{'PASS' if ok else 'FAIL'}  {name}\n      {detail}\n      tolerance: {why}\n      {power}"
    chapter = _state["chapter"]
    first = name not in _state["anchors"].values()
    anchor = _anchor(name)
    _show(line, anchor, first, ok)
    record = {
        "chapter": chapter, "name": name, "passed": ok, "detail": detail, "why": why, "source": source,
        "measured": _summary(measured), "expected": _summary(expected),
        "tolerance": {k: _summary(np.asarray(v, dtype=float)) for k, v in tolerance.items()}, "error": error,
        "kind": kind, "against": against, "resolution": resolution, "resolution_why": resolution_why,
        "slack": slack, "check": check, "anchor": anchor,
    }
    _record(record)
    if not ok:
        raise AssertionError(line)


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


def _record(record: dict[str, Any]) -> None:
    path = records_path()
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        rows = json.loads(path.read_text()) if path.exists() else []
    except ValueError:  # a record left half-written by a killed run: start the chapter's list afresh
        rows = []
    rows = [r for r in rows if r["name"] != record["name"]] + [record]
    # Write atomically: two runs of one chapter (a test beside a build) must never see a half-written file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(rows, indent=1, default=float))
    os.replace(tmp, path)
