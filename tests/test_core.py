"""Unit tests of learndyn.core."""

import numpy as np
import pytest
import torch

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


def test_check_finite_names_the_step():
    core.check_finite("w", np.ones(3))
    with pytest.raises(core.DivergenceError, match="w .*step 7"):
        core.check_finite("w", torch.tensor([1.0, float("nan")]), step=7)


def test_argument_validators():
    assert core.as_positive("lr", 0.1) == 0.1
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="lr"):
            core.as_positive("lr", bad)
    with pytest.raises(TypeError, match="lr"):
        core.as_positive("lr", "0.1")
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
