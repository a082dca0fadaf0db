"""Reading the check records: per-chapter counts, the standard of a claim, and the `audit` command.

    python -m learndyn.checks audit [CHAPTER] [--dir _build/checks]

prints, from the records the chapters wrote when they last ran, the claims sorted by resolution (worst first),
every claim without an independent side, and every bound whose slack exceeds 50 %, so an author sees where a
chapter is weakest. The same functions feed the reproduction report and the test that holds the book to the
standard (`tests/test_check_standard.py`).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import KINDS, STANDARD, kind_line

LOOSE_BOUND = 0.5  # audit lists bounds with more slack than this


def load(folder: Path | str) -> dict[str, list[dict[str, Any]]]:
    """Every chapter's records in `folder` (`<chapter>.json`), by chapter name, in file-name order."""
    folder = Path(folder)
    rows = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    return {chapter: r for chapter, r in rows.items() if isinstance(r, list)}  # a chapter's records are a list


def min_slack(slack: Any) -> float | None:
    """A bound's slack as one number: the tighter end of a window."""
    if slack is None:
        return None
    return min(slack.values()) if isinstance(slack, dict) else float(slack)


@dataclass
class Summary:
    """The counts of one chapter's records."""

    claims: int
    bounds: int
    sanity: int
    resolving: int  # claims resolving STANDARD or better (`resolves`)
    worst: float | None  # the largest resolution of a claim
    with_rivals: int = 0  # claims rejecting at least one named rival
    constants: int = 0  # named derived constants
    constants_resolved: int = 0  # ... resolving STANDARD or better
    flagged: int = 0  # claims with a flagged (circular) tolerance
    observations: int = 0  # empirical regularities asserted in calibrated windows (not evidence)

    @property
    def total(self) -> int:
        return self.claims + self.bounds + self.sanity + self.observations

    @property
    def share(self) -> float:
        return self.resolving / self.claims if self.claims else 1.0


def summarise(records: list[dict[str, Any]]) -> Summary:
    kinds = [r.get("kind") for r in records]
    claims = [r for r in records if r.get("kind") == "claim"]
    res = [r["resolution"] for r in claims if r.get("resolution") is not None]
    consts = [c for r in claims for c in r.get("constants") or []]
    return Summary(claims=len(claims), bounds=kinds.count("bound"), sanity=kinds.count("sanity"),
                   resolving=sum(resolves(r) for r in claims), worst=max(res) if res else None,
                   with_rivals=sum(bool(rejected_rivals(r)) for r in claims), constants=len(consts),
                   constants_resolved=sum(c.get("resolution") is not None and c["resolution"] <= STANDARD
                                          for c in consts),
                   flagged=sum(bool(flags(r)) for r in claims), observations=kinds.count("observation"))


def resolves(record: dict[str, Any]) -> bool:
    """A claim resolves the standard when a 1 % change of its printed prediction fails it, or, for a prediction
    that is an outcome of derived constants (a boundary, a threshold), when a 1 % change of each constant does."""
    res = record.get("resolution")
    if res is not None and res <= STANDARD:
        return True
    consts = record.get("constants") or []
    return bool(consts) and all(c.get("resolution") is not None and c["resolution"] <= STANDARD for c in consts)


def rejected_rivals(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The named rivals a claim rejects (declared-indistinguishable ones do not count)."""
    return [v for v in record.get("rivals") or [] if v.get("rejected") and not v.get("indistinguishable")]


def flags(record: dict[str, Any]) -> list[str]:
    """Why a claim's tolerance looks circular: built from its measured error, or wide enough for the null rival."""
    out = []
    if record.get("circular"):
        out.append(f"{record['circular']} (a tolerance must not be computed from the measurement it judges)")
    for v in record.get("rivals") or []:
        if v["name"].lower().startswith("null") and (v.get("indistinguishable") or not v.get("rejected")):
            out.append(f"its tolerance accepts the null rival {v['name']!r}")
    return out


def violations(chapter: str, records: list[dict[str, Any]], held: bool, power: bool = True) -> list[str]:
    """What keeps a chapter's records from the standard; `held` adds the per-claim and 90 % rules, and with
    `power` the check-power rules (`claim_power_problems`)."""
    out = []
    for r in records:
        kind = r.get("kind")
        if kind not in KINDS:
            out.append(f"{chapter}: {r['name']!r} has no kind")
        elif kind == "claim" and not str(r.get("against", "")).strip():
            out.append(f"{chapter}: claim {r['name']!r} names no independent side (against=)")
        elif kind == "claim" and r.get("resolution") is None:
            out.append(f"{chapter}: claim {r['name']!r} has no resolution")
        elif held and kind == "claim" and r["resolution"] > STANDARD and not r.get("resolution_why", "").strip():
            out.append(f"{chapter}: claim {r['name']!r} resolves {100 * r['resolution']:.3g} % and gives no "
                       "resolution_why")
        if held and power and kind == "claim":
            out += [f"{chapter}: claim {r['name']!r}: {p}" for p in claim_power_problems(r)]
    s = summarise(records)
    if s.total and s.sanity > s.total / 4:
        out.append(f"{chapter}: {s.sanity} of {s.total} checks are sanity checks (at most a quarter)")
    if s.total and s.observations > s.total / 4:
        out.append(f"{chapter}: {s.observations} of {s.total} checks are observations (at most a quarter)")
    if held and s.claims and s.share < 0.9:
        out.append(f"{chapter}: only {s.resolving} of {s.claims} claims ({100 * s.share:.0f} %) resolve 1 %")
    return out


def claim_power_problems(record: dict[str, Any]) -> list[str]:
    """The check-power rules for one claim: a rejected named rival, resolved constants, no circular tolerance."""
    out = []
    if not rejected_rivals(record):
        out.append("names no rival that it rejects (rivals=: the null effect, the naive formula, the neighbouring "
                   "theory)")
    for c in record.get("constants") or []:
        res = c.get("resolution")
        if res is None:
            out.append(f"derived constant {c['name']!r} has no resolution")
        elif res > STANDARD and not str(c.get("why", "")).strip():
            out.append(f"derived constant {c['name']!r} resolves {_pct(res)} and gives no constant_why")
    out += flags(record)
    return out


def audit(records: dict[str, list[dict[str, Any]]]) -> str:
    """The weak spots of the given chapters, as text."""
    lines = []
    for chapter, rows in records.items():
        s = summarise(rows)
        worst = "—" if s.worst is None else _pct(s.worst)
        lines += [f"== {chapter}: {s.claims} claims, {s.bounds} bounds, {s.observations} observations, "
                  f"{s.sanity} sanity; "
                  f"{s.resolving}/{s.claims} claims resolve 1 %; worst {worst}; {s.with_rivals}/{s.claims} "
                  f"reject a named rival; {s.constants_resolved}/{s.constants} derived constants resolve 1 %; "
                  f"{s.flagged} flagged tolerances"]
        claims = sorted((r for r in rows if r.get("kind") == "claim"),
                        key=lambda r: -(r["resolution"] if r.get("resolution") is not None else math.inf))
        lines += ["  claims by resolution (worst first):"]
        lines += [f"    {_pct(r['resolution']) if r.get('resolution') is not None else '?':>10}  {r['name']}"
                  + (f"   [why: {r['resolution_why']}]" if r.get("resolution_why") else "") for r in claims]
        missing = [r["name"] for r in rows if r.get("kind") == "claim" and not r.get("against")]
        if missing:
            lines += ["  claims without an independent side:"] + [f"    {n}" for n in missing]
        loose = [r for r in rows if r.get("kind") == "bound" and (min_slack(r.get("slack")) or 0) > LOOSE_BOUND]
        if loose:
            lines += ["  bounds with more than 50 % slack:"]
            lines += [f"    {kind_line('bound', '', None, '', r['slack'])[7:]:>10}  {r['name']}" for r in loose]
        unkinded = [r["name"] for r in rows if r.get("kind") not in KINDS]
        if unkinded:
            lines += ["  checks without a kind:"] + [f"    {n}" for n in unkinded]
        problems = [(r["name"], p) for r in rows if r.get("kind") == "claim" for p in claim_power_problems(r)]
        if problems:
            lines += ["  check-power exceptions (rivals, derived constants, circular tolerances):"]
            lines += [f"    {n}: {p}" for n, p in problems]
    return "\n".join(lines)


def _pct(x: float) -> str:
    return "inf" if math.isinf(x) else f"{100 * x:.3g} %"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m learndyn.checks", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("audit", help="list the weakest claims and loosest bounds of the recorded chapters")
    p.add_argument("chapter", nargs="?", help="a chapter name or prefix (01, 02_deep_linear); default: all")
    p.add_argument("--dir", default="_build/checks", help="folder of the records (default: _build/checks)")
    args = parser.parse_args(argv)
    records = load(args.dir)
    if not records:
        print(f"no check records in {args.dir}: run the chapters first (make notebooks)")
        return 1
    if args.chapter:
        records = {c: r for c, r in records.items() if c.startswith(args.chapter)}
        if not records:
            print(f"no chapter matching {args.chapter!r} in {args.dir}")
            return 1
    print(audit(records))
    return 0
