"""Shared fixtures: the repository root, and float64 / 2 threads for every unit test."""

from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="session")
def _torch_defaults():
    torch.set_num_threads(2)
    yield


@pytest.fixture(autouse=True)
def _no_check_records(tmp_path, monkeypatch):
    """Unit tests must not overwrite the book's check records: send them to a temporary folder."""
    monkeypatch.setenv("LEARNDYN_CHECKS_DIR", str(tmp_path / "checks"))
    yield


@pytest.fixture
def root() -> Path:
    return ROOT
