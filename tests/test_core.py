"""Unit tests of learndyn.core."""

import numpy as np
import pytest
import torch

import learndyn as ld
from learndyn import core


def test_get_device_defaults_and_validates():
    dev = core.get_device()
    assert dev.type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert core.get_device("cpu") == torch.device("cpu")
    with pytest.raises(TypeError, match="device"):
        core.get_device(3)


def test_set_threads_rejects_nonpositive():
    core.set_threads(2)
    assert torch.get_num_threads() == 2
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="threads"):
            core.set_threads(bad)


def test_make_generator_is_reproducible():
    a = torch.randn(5, generator=core.make_generator(3))
    b = torch.randn(5, generator=core.make_generator(3))
    assert torch.equal(a, b)
    with pytest.raises(TypeError, match="seed"):
        core.make_generator(1.5)


def test_history_access_and_stacking():
    h = core.History.from_records([0, 1, 2], {"loss": [1.0, 0.5, 0.25], "w": [torch.zeros(2)] * 3},
                                  final={"w": np.ones(2)})
    assert h["loss"].shape == (3,) and h["w"].shape == (3, 2)
    assert "loss" in h and "nope" not in h
    with pytest.raises(KeyError, match="recorded"):
        h["nope"]


@pytest.mark.parametrize("p", [-2.0, -1.0, 0.5, 1.0, 2.0])
def test_loglog_slope_recovers_power_law(p):
    x = np.geomspace(1, 100, 20)
    assert core.loglog_slope(x, 3.0 * x**p) == pytest.approx(p, abs=1e-12)


def test_loglog_slope_rejects_bad_input():
    with pytest.raises(ValueError, match="positive"):
        core.loglog_slope([1, 2], [1, -1])
    with pytest.raises(ValueError, match="same length"):
        core.loglog_slope([1, 2, 3], [1, 2])


def test_first_crossing():
    x = np.array([0.0, 0.2, 0.6, 0.4, 0.9])
    assert core.first_crossing(x, 0.5) == 2
    assert core.first_crossing(x, 0.5, steps=np.arange(5) * 10) == 20
    assert core.first_crossing(x, 2.0) is None
    with pytest.raises(ValueError, match="shape"):
        core.first_crossing(x, 0.5, steps=np.arange(3))


def test_rk4_is_fourth_order_on_exponential_decay():
    """Independent reference: y' = -y has y(1) = e^{-1}; RK4's global error scales as h^4."""
    def err(h):
        y = (torch.tensor([1.0], dtype=torch.float64),)
        for _ in range(int(round(1 / h))):
            y = core.rk4_step(lambda s: (-s[0],), y, h)
        return abs(y[0].item() - np.exp(-1))
    ratio = err(0.1) / err(0.05)
    assert 14 < ratio < 18  # 2^4 = 16
    with pytest.raises(ValueError, match="h"):
        core.rk4_step(lambda s: s, (torch.zeros(1),), 0.0)


def test_unchecked_rk4_step_is_the_same_step():
    """The solvers' loop form (no argument checks) takes exactly the step of the public rk4_step."""
    state = (torch.tensor([1.0, -2.0], dtype=torch.float64), np.array([0.5]))
    field = lambda s: (-s[0] ** 3, np.sin(s[1]))  # noqa: E731
    for a, b in zip(core.rk4_step(field, state, 0.1), core.rk4_step_unchecked(field, state, 0.1), strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_check_finite_names_the_step():
    core.check_finite("w", np.ones(3))
    with pytest.raises(core.DivergenceError, match="w .*step 7"):
        core.check_finite("w", torch.tensor([1.0, float("nan")]), step=7)


def test_argument_validators():
    assert core.as_positive("eta", 0.1) == 0.1
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="eta"):
            core.as_positive("eta", bad)
    with pytest.raises(TypeError, match="eta"):
        core.as_positive("eta", "0.1")
    assert core.as_int("steps", 3) == 3
    with pytest.raises(ValueError, match="steps"):
        core.as_int("steps", -1)
    with pytest.raises(TypeError, match="steps"):
        core.as_int("steps", 2.0)


def test_few_threads_if_small_restores_the_setting():
    torch.set_num_threads(2)
    with core.few_threads_if_small(torch.device("cpu"), 100):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with core.few_threads_if_small(torch.device("cpu"), 10**9):
        assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError), core.few_threads_if_small(torch.device("cpu"), 1):
        raise RuntimeError("restored even on error")
    assert torch.get_num_threads() == 2


# ---- the validation layer (issue 20) --------------------------------------------------------------------------
def test_get_device_refuses_unavailable_or_unknown_devices():
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device.*CUDA is not available"):
            core.get_device("cuda")
    with pytest.raises(ValueError, match="device"):
        core.get_device("gpu")


def test_history_from_records_checks_lengths():
    with pytest.raises(ValueError, match=r"records\['loss'\].*3 steps"):
        core.History.from_records([0, 1, 2], {"loss": [1.0, 0.5]})
    with pytest.raises(TypeError, match="records"):
        core.History.from_records([0, 1, 2], [1.0, 2.0, 3.0])
    h = core.History.from_records([0, 1], {"loss": [1.0, 0.5]})
    assert h.steps.dtype.kind == "i"


def test_few_threads_if_small_accepts_a_device_name():
    core.set_threads(2)
    with core.few_threads_if_small("cpu", 10):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with pytest.raises(TypeError, match="size"):
        core.few_threads_if_small("cpu", "10")


def test_as_real_array_refuses_complex_strings_and_empty():
    with pytest.raises(TypeError, match="w must be real"):
        core.as_real_array("w", np.array([1 + 2j]))
    with pytest.raises(TypeError, match="w must be a real"):
        core.as_real_array("w", "abc")
    with pytest.raises(TypeError, match="w must be a real"):
        core.as_real_array("w", None)
    with pytest.raises(ValueError, match="w must not be empty"):
        core.as_real_array("w", [], nonempty=True)
    with pytest.raises(ValueError, match=r"w must have shape \(\?, 3\)"):
        core.as_real_array("w", np.ones((2, 4)), shape=(None, 3))
    assert core.as_real_array("w", torch.ones(2, requires_grad=True)).tolist() == [1.0, 1.0]


def test_as_real_tensor_refuses_requires_grad_and_nan():
    with pytest.raises(TypeError, match=r"W\.detach\(\)"):
        core.as_real_tensor("W", torch.ones(2, requires_grad=True))
    with pytest.raises(ValueError, match="W must be finite"):
        core.as_real_tensor("W", [1.0, np.nan])
    assert core.as_real_tensor("W", np.arange(3)).dtype == torch.float64


def test_steps_for_ends_at_t_max():
    assert core.steps_for(0.05, 0.01) == 5 and core.steps_for(0.0, 0.1) == 0
    with pytest.raises(ValueError, match="t_max = 0.001 is not a whole number of steps"):
        core.steps_for(0.001, 0.05)
    with pytest.raises(ValueError, match="t_max"):
        core.steps_for(-1.0, 0.1)


def test_check_alloc_refuses_huge_requests():
    core.check_alloc("small", 10)
    with pytest.raises(ValueError, match="GiB"):
        core.check_alloc("huge", 1e12)


def test_setup_respects_threads_and_leaves_denormals_alone(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    ld.setup("00_test_setup")
    assert torch.get_num_threads() == 1
    assert np.float64(1e-310) * 1.0 != 0.0                    # no process-wide flush-to-zero
    ld.setup("00_test_setup", threads=3)
    assert torch.get_num_threads() == 3
    monkeypatch.delenv("OMP_NUM_THREADS")
    ld.setup("00_test_setup")
    assert torch.get_num_threads() == 2                       # the book's default (CI)
    with pytest.raises(TypeError, match="flush_denormal"):
        ld.setup("00_test_setup", flush_denormal="yes")
    with pytest.raises(TypeError, match="seed"):
        ld.setup("00_test_setup", seed="0")
    core.set_threads(2)


def test_blas_runs_on_one_thread_beside_a_multithreaded_torch():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import scipy.linalg  # noqa: F401  (its BLAS too, once loaded)

    def blas_threads():
        return {d["num_threads"] for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas"}

    core.set_threads(2)
    assert torch.get_num_threads() == 2 and blas_threads() == {1}
    core.set_threads(1)
    assert blas_threads() == {1}
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        with core.one_blas_thread():  # a block (ARPACK in top_eigs) on one thread, then back
            assert blas_threads() == {1}
        assert blas_threads() == {2}
    core.set_threads(2)


def test_steps_times_broadcast_and_overflow_helpers():
    from learndyn.core import as_steps, as_times, broadcast, no_overflow

    np.testing.assert_array_equal(as_steps("k", [0, 2.0, 5]), [0, 2, 5])
    assert as_steps("k", 3).dtype == np.int64
    for bad in (1.5, -1, [0, np.nan]):
        with pytest.raises(ValueError, match="k "):
            as_steps("k", bad)
    with pytest.raises(TypeError, match="k must be"):
        as_steps("k", "3")
    np.testing.assert_array_equal(as_times("t", [0.0, 0.0, 1.0]), [0.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="strictly increasing"):
        as_times("t", [0.0, 0.0], strict=True)
    with pytest.raises(ValueError, match="start at t = 0"):
        as_times("t", [0.5, 1.0], start_zero=True)
    with pytest.raises(ValueError, match="t and s must broadcast"):
        broadcast("t and s", np.ones(3), np.ones(2))
    assert no_overflow("x", (np.ones(2), torch.ones(2))) is not None
    with pytest.raises(ValueError, match="x are too large"):
        no_overflow("x", np.array([1.0, np.inf]))
