"""Unit tests of learndyn.checks: a check passes, fails loudly, and records."""

import json

import numpy as np
import pytest
import torch

from learndyn import checks


def test_check_close_passes_and_prints(capsys):
    checks.start_chapter("unit")
    checks.check_close("pi", 3.1416, np.pi, atol=1e-4, why="4 digits")
    out = capsys.readouterr().out
    assert out.startswith("PASS  pi\n") and "measured 3.142" in out and "atol 0.0001" in out
    assert "tolerance: 4 digits" in out


def test_check_close_fails_with_message():
    with pytest.raises(AssertionError, match="FAIL  off by one percent\n      measured 1.01, expected 1"):
        checks.check_close("off by one percent", 1.01, 1.0, rtol=1e-3, why="tight")


def test_check_close_arrays_tensors_and_nan():
    checks.check_close("arrays", torch.ones(3), np.ones(3), atol=0, why="exact")
    with pytest.raises(AssertionError, match="nan"):
        checks.check_close("nan never passes", np.array([1.0, np.nan]), 1.0, atol=10, why="huge")
    with pytest.raises(ValueError, match="broadcast"):
        checks.check_close("shapes", np.ones(3), np.ones(2), atol=1, why="x")


def test_reason_is_required_and_tolerances_validated():
    with pytest.raises(ValueError, match="why"):
        checks.check_close("no reason", 1.0, 1.0, atol=1)
    with pytest.raises(ValueError, match="rtol"):
        checks.check_close("negative", 1.0, 1.0, rtol=-1, why="x")


def test_check_between_and_less():
    checks.check_between("ratio", [1.9, 2.1], 1.8, 2.2, why="first order")
    with pytest.raises(AssertionError, match="allowed"):
        checks.check_between("ratio", 2.3, 1.8, 2.2, why="first order")
    checks.check_less("bound", [1.0, 2.0], [1.0, 3.0], why="theorem")
    with pytest.raises(AssertionError, match="bound"):
        checks.check_less("bound", 1.1, 1.0, why="theorem")


def test_records_are_written_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("LEARNDYN_CHECKS_DIR", str(tmp_path))
    checks.start_chapter("rec")
    checks.check_close("a", 1.0, 1.0, atol=0.1, why="w")
    checks.check_close("a", 1.05, 1.0, atol=0.1, why="w")  # same name: replaced, not duplicated
    with pytest.raises(AssertionError):
        checks.check_less("b", 2.0, 1.0, why="w", source="Paper, Fig. 1")
    rows = json.loads((tmp_path / "rec.json").read_text())
    assert [r["name"] for r in rows] == ["a", "b"]
    assert rows[0]["measured"] == pytest.approx(1.05) and rows[0]["passed"]
    assert not rows[1]["passed"] and rows[1]["source"] == "Paper, Fig. 1"
    checks.start_chapter("rec")  # a re-run starts afresh
    assert not (tmp_path / "rec.json").exists()
