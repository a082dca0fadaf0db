"""Tests of `bench/soudry_gpu.py` (Ch 5's GPU-scale script) at a tiny size on the CPU."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from learndyn import implicit_bias as ib

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("soudry_gpu", ROOT / "bench" / "soudry_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_data_have_the_stated_svm(script):
    Z, mm = script.make_data(60, 6, m2=1.5, seed=1)
    assert Z.shape == (60, 6) and np.all(np.linalg.norm(Z, axis=1) <= 1 + 1e-12)
    assert max(ib.kkt_residuals(Z, mm).values()) < 1e-10
    assert ib.second_margin(Z, mm) >= 1.5 and np.all(mm.alpha[:6] > 0)
    np.testing.assert_allclose(ib.max_margin(Z).w_hat, mm.w_hat, atol=1e-6)  # an independent solve agrees


def test_tiny_run_on_cpu_writes_the_summary(script, tmp_path):
    out_file = tmp_path / "s.npz"
    out = script.main(["--n", "40", "--d", "4", "--steps", "3000", "--etas", "0.02", "0.05", "--device", "cpu",
                       "--checkpoints", "12", "--out", str(out_file)])
    saved = np.load(out_file)
    assert saved["residual"].shape == (2, len(saved["steps"]))
    assert np.all(out["loss_constant"][:, -1] < 1.0) and np.all(out["loss_constant"][:, -1] > 0.5)
    assert np.all(out["residual"][:, -1] < out["residual"][:, 2])  # the residual shrinks


def test_bad_input(script):
    with pytest.raises(ValueError, match="n_sv"):
        script.make_data(10, 4, n_sv=5)
    with pytest.raises(ValueError, match="m2"):
        script.make_data(10, 4, m2=0.5)
