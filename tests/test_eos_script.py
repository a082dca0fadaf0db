"""Tests of the data loading of `bench/eos_cifar.py` (Ch 6's GPU-scale script), on small data made here."""

import importlib.util
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("eos_cifar", ROOT / "bench" / "eos_cifar.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_cifar(folder: Path, sizes=(7, 6)) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10's python layout: cifar-10-batches-py/data_batch_i pickles with b'data' (m, 3072) uint8, b'labels'."""
    rng = np.random.default_rng(0)
    sub = folder / "cifar-10-batches-py"
    sub.mkdir(parents=True)
    xs, ys = [], []
    for i, m in enumerate(sizes, start=1):
        data = rng.integers(0, 256, size=(m, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, size=m).tolist()
        with open(sub / f"data_batch_{i}", "wb") as fh:
            pickle.dump({b"data": data, b"labels": labels}, fh)
        xs.append(data)
        ys.append(labels)
    return np.concatenate(xs), np.concatenate(ys)


def test_cifar_folder_reads_first_n_in_order_and_standardises(script, tmp_path):
    raw, labels = _fake_cifar(tmp_path)
    X, y = script.load_cifar10_dir(tmp_path, n=10)  # spans both batches
    assert X.shape == (10, 3072) and y.tolist() == labels[:10].tolist()
    np.testing.assert_allclose(X.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(X.std(0), 1, atol=1e-12)
    expected = (raw[:10] / 255.0 - (raw[:10] / 255.0).mean(0)) / (raw[:10] / 255.0).std(0)
    np.testing.assert_allclose(X, expected, atol=1e-12)
    X2, _ = script.load_cifar10_dir(tmp_path / "cifar-10-batches-py", n=3)  # the inner folder works too
    assert X2.shape == (3, 3072)


def test_cifar_folder_errors(script, tmp_path):
    with pytest.raises(FileNotFoundError, match="data_batch"):
        script.load_cifar10_dir(tmp_path, n=5)
    _fake_cifar(tmp_path, sizes=(4,))
    with pytest.raises(ValueError, match="only 4"):
        script.load_cifar10_dir(tmp_path, n=5)


def test_load_data_prefers_cifar10_dir(script, tmp_path, monkeypatch):
    _fake_cifar(tmp_path)
    monkeypatch.setenv("CIFAR10_DIR", str(tmp_path))
    X, y, name = script.load_data("auto", n=12)
    assert name == "cifar10" and X.shape == (12, 3072)


def test_load_data_falls_back_to_digits_without_torchvision(script, monkeypatch):
    monkeypatch.delenv("CIFAR10_DIR", raising=False)
    monkeypatch.setitem(sys.modules, "torchvision", None)  # import torchvision -> ImportError
    X, y, name = script.load_data("auto")
    assert name == "digits" and X.shape == (1797, 64) and y.shape == (1797,)
    with pytest.raises(RuntimeError, match="CIFAR10_DIR"):
        script.load_data("cifar")
    with pytest.raises(ValueError, match="source"):
        script.load_data("mnist")


def test_tiny_end_to_end_run(script, tmp_path, monkeypatch):
    monkeypatch.delenv("CIFAR10_DIR", raising=False)
    out = script.main(["--source", "digits", "--n", "100", "--steps", "4", "--eig-every", "2", "--width", "8",
                       "--depth", "1", "--eta", "0.1", "--device", "cpu", "--out", str(tmp_path / "r.npz")])
    assert out["eigs_0"].shape == (3, 2) and np.all(np.diff(out["eigs_0"], axis=1) <= 0)
    assert np.load(tmp_path / "r.npz")["loss_0"].shape == (5,)
