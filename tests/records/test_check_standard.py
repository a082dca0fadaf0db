"""The standard of a claim, held over the records the chapters wrote when they ran (`make notebooks` first).

Every record has a kind; every claim names its independent side and has a resolution; sanity checks are at most a
quarter of a chapter's checks. For the chapters in HELD also: every claim resolving worse than 1 % says why
(`resolution_why`), and at least 90 % of the claims resolve 1 % or better. A chapter joins HELD when it meets them.
"""

from pathlib import Path

import pytest

from learndyn.checks import records

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "_build" / "checks"
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("[0-9][0-9]_*.md"))
HELD = [
    "00_preface", "01_linear_regression", "02_deep_linear", "03_ssl_noncontrastive", "04_ssl_stepwise",
    "05_implicit_bias", "06_edge_of_stability", "07_large_stepsize", "08_diagonal",
]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_records_meet_the_standard(chapter):
    path = RECORDS / f"{chapter}.json"
    assert path.exists(), f"no check records for {chapter}: run the notebooks first (make notebooks)"
    rows = records.load(RECORDS)[chapter]
    assert rows, f"{chapter} recorded no check"
    assert all(r["passed"] for r in rows), [r["name"] for r in rows if not r["passed"]]
    problems = records.violations(chapter, rows, held=chapter in HELD)
    assert not problems, "\n".join(problems)


def test_held_chapters_exist():
    assert set(HELD) <= set(CHAPTERS)
