"""The one door every numerical claim of the book goes through.

A check prints what was measured, what the derivation predicts and the tolerance with its source, then raises
`AssertionError` when the claim fails, so a notebook (and the site build) stops on a false claim. Each result is
also recorded as JSON under `_build/checks/<chapter>.json` (when run inside the book's repository, or wherever
`LEARNDYN_CHECKS_DIR` points) for the book's reproduction report.

    check_close("OLS risk, Gaussian design", mc_mean, theory, atol=3 * stderr,
                why="3 standard errors of the Monte Carlo mean")
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["check_close", "check_between", "check_less", "start_chapter", "records_path"]

_state: dict[str, Any] = {"chapter": None}


def start_chapter(chapter: str) -> None:
    """Name the chapter whose checks follow and forget its earlier records (a re-run replaces them)."""
    if not isinstance(chapter, str) or not chapter:
        raise ValueError(f"chapter must be a non-empty string; got {chapter!r}")
    _state["chapter"] = chapter
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


def check_close(name: str, measured: Any, expected: Any, rtol: float = 0.0, atol: float = 0.0,
                why: str = "", source: str = "") -> None:
    """Assert |measured - expected| <= atol + rtol |expected| elementwise; print and record the outcome.

    `why` says where the tolerance comes from (an error bound, a sampling error); it is required.
    `source` names a paper's figure or table when the expected number is taken from one.
    """
    _require_reason(name, why)
    if rtol < 0 or atol < 0 or not (np.isfinite(rtol) and np.isfinite(atol)):
        raise ValueError(f"rtol and atol must be finite and non-negative; got rtol={rtol}, atol={atol}")
    m, e = _as_array("measured", measured), _as_array("expected", expected)
    try:
        diff = np.abs(m - e)
        allowed = atol + rtol * np.abs(e)
    except ValueError as err:
        raise ValueError(f"measured {m.shape} and expected {e.shape} do not broadcast") from err
    finite = bool(np.all(np.isfinite(m)))
    ok = finite and bool(np.all(diff <= allowed))
    worst = float(np.max(diff)) if finite else float("nan")
    tol_text = _tol_text(rtol, atol)
    if m.size == 1 and e.size == 1:
        detail = f"measured {_fmt(m.item())}, expected {_fmt(e.item())}, |diff| {_fmt(worst)}, tolerance {tol_text}"
    else:
        detail = f"max |diff| {_fmt(worst)} over {diff.size} values, tolerance {tol_text}"
    _report(name, ok, detail, why, source, measured=m, expected=e, tolerance={"rtol": rtol, "atol": atol},
            error=worst)


def check_between(name: str, measured: Any, low: float, high: float, why: str = "", source: str = "") -> None:
    """Assert low <= measured <= high (every entry); print and record the outcome."""
    _require_reason(name, why)
    if not low <= high:
        raise ValueError(f"low must not exceed high; got [{low}, {high}]")
    m = _as_array("measured", measured)
    ok = bool(np.all(np.isfinite(m)) and np.all((m >= low) & (m <= high)))
    shown = _fmt(m.item()) if m.size == 1 else f"[{_fmt(m.min())}, {_fmt(m.max())}] ({m.size} values)"
    _report(name, ok, f"measured {shown}, allowed [{_fmt(low)}, {_fmt(high)}]", why, source,
            measured=m, expected=None, tolerance={"low": low, "high": high}, error=None)


def check_less(name: str, measured: Any, bound: Any, why: str = "", source: str = "") -> None:
    """Assert measured <= bound (elementwise, bounds broadcast); print and record the outcome."""
    _require_reason(name, why)
    m, b = _as_array("measured", measured), _as_array("bound", bound)
    ok = bool(np.all(np.isfinite(m)) and np.all(m <= b))
    if m.size == 1 and b.size == 1:
        detail = f"measured {_fmt(m.item())} <= bound {_fmt(b.item())}"
    else:
        ratio = float(np.max(m / np.where(b == 0, np.nan, b))) if np.all(b > 0) else float("nan")
        detail = f"{m.size} values, worst measured/bound {_fmt(ratio)} (must be <= 1)"
    _report(name, ok, detail, why, source, measured=m, expected=None, tolerance={"bound": b}, error=None)


# ---------------------------------------------------------------------------------------------------------------
def _require_reason(name: str, why: str) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string describing the claim")
    if not isinstance(why, str) or not why.strip():
        raise ValueError(f"check {name!r}: why must say where the tolerance comes from (an error bound, a sampling "
                         "error, ...)")


def _as_array(label: str, x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor, without importing torch here
        x = x.detach().cpu().numpy()
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{label} must be a number or an array of numbers; got {type(x).__name__}") from err


def _fmt(x: float) -> str:
    return f"{x:.4g}" if np.isfinite(x) else str(x)


def _tol_text(rtol: float, atol: float) -> str:
    parts = ([f"atol {atol:.3g}"] if atol else []) + ([f"rtol {rtol:.3g}"] if rtol else [])
    return " + ".join(parts) if parts else "0 (exact)"


def _summary(x: np.ndarray | None) -> Any:
    if x is None:
        return None
    if x.size == 1:
        return float(x.item())
    return {"max": float(np.nanmax(x)), "min": float(np.nanmin(x)), "size": int(x.size)}


def _report(name: str, ok: bool, detail: str, why: str, source: str, *, measured: np.ndarray,
            expected: np.ndarray | None, tolerance: dict[str, Any], error: float | None) -> None:
    line = f"{'PASS' if ok else 'FAIL'}  {name}\n      {detail}\n      tolerance: {why}"
    print(line)
    record = {
        "chapter": _state["chapter"], "name": name, "passed": ok, "detail": detail, "why": why, "source": source,
        "measured": _summary(measured), "expected": _summary(expected),
        "tolerance": {k: _summary(np.asarray(v, dtype=float)) for k, v in tolerance.items()}, "error": error,
    }
    _record(record)
    if not ok:
        raise AssertionError(line)


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
