"""Fast tests of the benchmark scripts in `bench/` (tiny sizes): the GPU check's CPU behaviour, the shared simulator
cases, the PyHessian reference, and the results record with its page renderer. Benchmarks are never timed here."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


def _load(name: str, folder: Path = BENCH):
    for sibling in {BENCH, folder}:  # scripts and extensions import their siblings (sim_cases, book_tables)
        if str(sibling) not in sys.path:
            sys.path.insert(0, str(sibling))
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gpu_check():
    return _load("gpu_check")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the no-GPU path is not taken")
def test_gpu_check_without_gpu_says_so_and_exits_0(gpu_check, tmp_path, capsys):
    out = tmp_path / "gpu.json"
    assert gpu_check.main(["--json", str(out)]) == 0
    assert "No GPU found" in capsys.readouterr().out
    record = json.loads(out.read_text())
    assert record["gpu"] is None and record["status"] == "no GPU found" and record["rows"] == []


def test_gpu_check_cpu_against_cpu_runs_every_case_and_agrees(gpu_check, tmp_path, capsys):
    out = tmp_path / "gpu.json"
    rc = gpu_check.main(["--device", "cpu", "--B", "2", "3", "--steps", "5", "--sharpness-steps", "0",
                         "--eos-steps", "0", "--json", str(out)])
    assert rc == 0
    record = json.loads(out.read_text())
    assert record["status"] == "ok" and record["device"] == "cpu"
    assert {r["case"].split(".")[0] for r in record["rows"]} == {"deep_linear", "ssl", "barlow", "implicit_bias",
                                                                 "large_stepsize"}
    for row in record["rows"]:
        assert row["agree"] and row["rel_error"] == 0.0  # the same device twice: bitwise equal
        assert [s["B"] for s in row["speed"]] == [2, 3] and all(s["speedup"] > 0 for s in row["speed"])
    assert "simulator" in capsys.readouterr().out


def test_gpu_check_flags_a_disagreement(gpu_check):
    assert gpu_check.rel_diff(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 4e-9])) == pytest.approx(2e-9)
    assert gpu_check.rel_diff(np.ones(2), np.array([1.0, np.nan])) == np.inf
    assert gpu_check.rel_diff(np.ones(2), np.ones(3)) == np.inf


@pytest.mark.parametrize("key", ["two_layer", "noncontrastive", "barlow", "separable", "logistic"])
def test_batched_and_looped_cases_do_the_same_runs(key):
    cases = _load("sim_cases")
    case = cases.make_case(key, 3, 10)
    a, b = case.batched(torch.device("cpu")), case.looped(torch.device("cpu"))
    assert a.shape == b.shape and a.shape[0] == 3 and np.all(np.isfinite(a))
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * np.abs(a).max())
    assert np.ptp(a, axis=0).max() > 0  # the runs of the sweep really differ


def test_unknown_case_is_rejected():
    with pytest.raises(ValueError, match="unknown case"):
        _load("sim_cases").make_case("nope", 2)


def test_bench_batched_rows(tmp_path):
    out = tmp_path / "b.json"
    res = _load("bench_batched").main(["--B", "2", "--steps", "3", "--cases", "barlow", "--json", str(out)])
    (row,) = res["rows"]
    assert row["case"] == "barlow.train_barlow_linear" and row["ratio"] > 0 and row["rel_diff"] < 1e-12
    assert json.loads(out.read_text())["rows"][0]["B"] == 2


def test_pyhessian_reference_finds_the_top_eigenvalue_of_the_dense_hessian():
    from learndyn import sharpness as sh

    X, Y, _ = sh.digits_tensors(40, dtype=torch.float64)
    model = sh.make_mlp(width=4, depth=1, dtype=torch.float64)
    loss, params = sh.model_loss(model, X, Y)
    eigs = np.linalg.eigvalsh(sh.exact_hessian(loss, params))
    top = eigs[np.argmax(np.abs(eigs))]  # power iteration follows the modulus
    value, n = _load("bench_pyhessian").pyhessian_power(model, sh.mse_loss, X, Y, max_iter=5000, tol=1e-12)
    assert value == pytest.approx(top, rel=1e-5) and 1 < n <= 5000  # the stopping rule tests the change only
    assert all(p.grad is None for p in model.parameters())  # the graph kept for the HVPs is released


def test_targets_summary():
    run_all = _load("run_all")
    results = {
        "batched": {"results": {"rows": [{"case": "a", "ratio": 30.0}, {"case": "b", "ratio": 9.0}]}},
        "sharpness_vs_pyhessian": {"results": {"summary": {
            "pyhessian_over_ours_power": 1.5, "pyhessian_over_ours_lanczos": 2.0, "ours_power_hvp_overhead": 1.1,
            "met_no_slower": True, "met_overhead": True}}},
        "notebooks": {"rows": [{"seconds": 50.0}], "all_ran": True, "max_s": 50.0, "total_s": 250.0},
    }
    met = {t["target"].split()[0] + t["target"].split()[-1]: t["met"] for t in run_all.targets(results)}
    assert list(met.values()) == [False, True, True, True, False]  # b is below 10x; 250 s > 240 s
    info = run_all.machine()
    assert info["versions"]["torch"] == torch.__version__.split("+")[0] or info["versions"]["torch"]
    assert info["threads"] == 2 and info["date"].endswith("Z")


def test_results_page_renders_every_section(tmp_path):
    ext = _load("bench_results", ROOT / "_ext")
    data = {
        "machine": {"date": "2026-01-01T00:00:00Z", "cpu": "x", "cores": 2, "threads": 2, "versions": {"torch": "2"}},
        "load_start": 1.0, "load_end": 1.5,
        "targets": [{"target": "t", "measured": "m", "met": True}],
        "batched": {"script": "bench/bench_batched.py", "results": {"rows": [
            {"case": "c", "chapter": "02", "sweep": "seeds", "B": 64, "steps": 10, "batched_s": 0.1, "loop_s": 2.0,
             "ratio": 20.0, "rel_diff": 0.0}]}},
        "sharpness_vs_pyhessian": {"script": "bench/bench_pyhessian.py", "results": {
            "model": {"n": 1000, "parameters": 27010, "dtype": "float64", "device": "cpu"}, "target": 1e-4,
            "hvp_s": 0.01, "grad_s": 0.004,
            "rows": [{"method": "m", "tol": 1e-4, "seconds": 1.0, "rel_error": 1e-5, "hvps": 50,
                      "hvp_overhead": 1.1}]}},
        "deep_linear": {"script": "bench/bench_deep_linear.py", "returncode": 0, "stdout": "cpu: ratio 30x"},
        "notebooks": {"rows": [{"notebook": "a.ipynb", "seconds": 10.0, "error": None, "load_before": 1,
                                "load_after": 1}], "total_s": 10.0, "budget_each_s": 60, "budget_total_s": 240},
    }
    text = "\n".join(node.astext() for node in ext._render(data))
    for expected in ("20.0x", "27010 parameters", "a.ipynb", "whole book", "cpu: ratio 30x", "yes"):
        assert expected in text
