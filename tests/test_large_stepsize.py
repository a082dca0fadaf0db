"""Unit tests of `learndyn.large_stepsize` (Ch 7): the stable loss and gradient against a naive formula and torch
autograd, the smoothness constant against the exact Hessian, the edge-of-stability bound on random instances, the
stable-phase lemma as a property test over 10^4 seeded instances, fast versions of V7.1-V7.5, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import special

from learndyn import large_stepsize as ls
from learndyn.core import DivergenceError, History

LEMMA_COEF = 1.0 - np.exp(0.5) / 4.0  # Lemma thm-wu-stable: 1 - (x/2) e^x at x = eta G <= 1/2


def _random_unit_ball(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Rows with random directions and norms uniform in [0, 1]."""
    Z = rng.standard_normal(shape)
    return Z / np.linalg.norm(Z, axis=-1, keepdims=True) * rng.uniform(0, 1, shape[:-1] + (1,))


@pytest.fixture(scope="module")
def data():
    Z = ls.narrow_margin_2d(seed=0)
    w_hat, gamma = ls.max_margin(Z)
    return Z, w_hat, gamma, ls.smoothness(Z)


# --- data and max margin ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_narrow_margin_data_is_in_the_unit_ball_with_margin_near_gamma(seed):
    Z = ls.narrow_margin_2d(n=32, gamma=0.05, seed=seed)
    assert Z.shape == (32, 2)
    assert np.linalg.norm(Z, axis=1).max() <= 1.0 + 1e-12
    w_hat, gamma = ls.max_margin(Z)
    assert np.linalg.norm(w_hat) == pytest.approx(1.0, abs=1e-12)
    assert 0.05 * 0.99 <= gamma <= 0.06
    np.testing.assert_array_equal(Z, ls.narrow_margin_2d(n=32, gamma=0.05, seed=seed))  # seeded


def test_max_margin_against_brute_force_over_directions():
    Z = ls.narrow_margin_2d(n=20, gamma=0.1, spread=0.05, seed=4)
    w_hat, gamma = ls.max_margin(Z)
    angles = np.linspace(-np.pi / 2, np.pi / 2, 200_001)
    dirs = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    brute = (dirs @ Z.T).min(axis=1).max()
    assert gamma == pytest.approx(brute, abs=1e-5)  # grid step 1.6e-5 rad
    assert gamma >= brute - 1e-12  # the solver is at least as good as the grid
    # KKT: the support vectors attain the margin
    assert np.sort(Z @ w_hat)[:2] == pytest.approx([gamma, gamma], abs=1e-10)


def test_digits_are_separable_in_the_unit_ball():
    Z = ls.digits_01()
    assert Z.shape == (360, 64)
    assert np.linalg.norm(Z, axis=1).max() == pytest.approx(1.0, abs=1e-12)
    _, gamma = ls.max_margin(Z)
    assert gamma > 0


# --- loss, gradient, smoothness ---------------------------------------------------------------------------------
def test_loss_and_grad_match_naive_formulas_where_they_do_not_overflow():
    rng = np.random.default_rng(0)
    Z, w = _random_unit_ball(rng, (50, 3)), 5.0 * rng.standard_normal((7, 3))
    m = w @ Z.T
    np.testing.assert_allclose(ls.logistic_loss(Z, w), np.log(1 + np.exp(-m)).mean(axis=1), rtol=1e-13)
    naive_grad = (-(1 / (1 + np.exp(m)))[:, :, None] * Z[None]).mean(axis=1)
    np.testing.assert_allclose(ls.logistic_grad(Z, w), naive_grad, rtol=1e-12, atol=1e-15)
    assert ls.logistic_loss(Z, np.zeros(3)) == pytest.approx(np.log(2), rel=1e-15)


def test_loss_and_grad_match_torch_autograd():
    rng = np.random.default_rng(1)
    Z, w = _random_unit_ball(rng, (40, 4)), 3.0 * rng.standard_normal(4)
    wt = torch.tensor(w, requires_grad=True)
    loss = torch.nn.functional.softplus(-(torch.tensor(Z) @ wt)).mean()
    loss.backward()
    assert ls.logistic_loss(Z, w) == pytest.approx(loss.item(), rel=1e-14)
    np.testing.assert_allclose(ls.logistic_grad(Z, w), wt.grad.numpy(), rtol=1e-12, atol=1e-16)


def test_loss_and_grad_are_stable_at_huge_margins():
    Z = np.array([[1.0, 0.0], [0.0, 1.0]])
    big = ls.logistic_loss(Z, np.array([1e6, 1e6]))
    assert big == 0.0 or (np.isfinite(big) and big >= 0)
    assert ls.logistic_loss(Z, np.array([800.0, 800.0])) == pytest.approx(np.exp(-800.0), rel=1e-12)  # no underflow
    assert ls.logistic_loss(Z, np.array([-1e6, -1e6])) == pytest.approx(1e6, rel=1e-15)  # no overflow
    for w in ([1e6, 1e6], [-1e6, -1e6], [1e6, -1e6]):
        g = ls.logistic_grad(Z, np.array(w))
        assert np.all(np.isfinite(g)) and np.linalg.norm(g) <= 1.0


def test_self_bounding_properties_of_the_logistic_function():
    m = np.linspace(-40, 40, 100_001)
    abs_d1 = special.expit(-m)  # |l'(m)|
    d2 = special.expit(m) * special.expit(-m)  # l''(m) = |l'(m)| (1 - |l'(m)|)
    ell = np.logaddexp(0, -m)
    assert np.all(d2 > 0) and np.all(d2 <= abs_d1) and np.all(abs_d1 <= np.minimum(1, ell) + 1e-16)
    assert d2.max() == pytest.approx(0.25, abs=1e-12)
    # |d/dm log l''| = |1 - 2 expit(m)| <= 1: l''(m + delta) <= e^{|delta|} l''(m)
    delta = 0.37
    d2_shift = special.expit(m + delta) * special.expit(-(m + delta))
    assert np.all(d2_shift <= np.exp(delta) * d2 * (1 + 1e-12))


def test_smoothness_is_the_hessian_at_zero_and_bounds_it_everywhere(data):
    Z, *_ = data
    beta = ls.smoothness(Z)
    hess = torch.autograd.functional.hessian(
        lambda w: torch.nn.functional.softplus(-(torch.tensor(Z) @ w)).mean(), torch.zeros(2, dtype=torch.float64))
    assert beta == pytest.approx(np.linalg.eigvalsh(hess.numpy())[-1], rel=1e-13)
    assert beta == pytest.approx(np.linalg.eigvalsh(Z.T @ Z / len(Z))[-1] / 4, rel=1e-14)
    rng = np.random.default_rng(2)
    for w in rng.standard_normal((20, 2)) * 10:
        m = Z @ w
        H = (Z.T * (np.exp(-np.logaddexp(0, m) - np.logaddexp(0, -m)))) @ Z / len(Z)
        assert np.linalg.eigvalsh(H)[-1] <= beta * (1 + 1e-12)


# --- EoS bound and stable-phase lemma ---------------------------------------------------------------------------
def test_eos_bound_formula_and_domain():
    t, eta, gamma = 400.0, 50.0, 0.1
    x = gamma**2 * eta * t
    assert ls.eos_average_bound(t, eta, gamma) == pytest.approx((1 + np.log(x) ** 2 + eta**2 / 4) / x, rel=1e-15)
    # the last step of the proof: e^{-theta gamma} + (2 theta^2 + eta^2 / (2 gamma^2)) / (2 eta t), theta = ln x / gamma
    theta = np.log(x) / gamma
    assert ls.eos_average_bound(t, eta, gamma) == pytest.approx(
        np.exp(-theta * gamma) + (2 * theta**2 + eta**2 / (2 * gamma**2)) / (2 * eta * t), rel=1e-13)
    assert np.isinf(ls.eos_average_bound(1.0, 1.0, 0.5))  # gamma^2 eta t < 1: no bound
    assert ls.eos_average_bound(np.arange(3)[:, None], np.ones(2), 1.0).shape == (3, 2)


@pytest.mark.parametrize("seed", range(4))
def test_eos_bound_never_violated_on_random_separable_instances(seed):
    rng = np.random.default_rng(seed)
    n, d = 12, 3
    w_star = rng.standard_normal(d)
    w_star /= np.linalg.norm(w_star)
    X = _random_unit_ball(rng, (n, d))
    Z = np.sign(X @ w_star)[:, None] * X  # separable by w_star
    _, gamma = ls.max_margin(Z)
    etas = np.array([0.5, 5.0, 50.0, 500.0])
    T = 3000
    L = ls.gd_logistic(Z, etas, T, device="cpu", record="loss")["loss"]
    t = np.arange(1, T + 1)[:, None]
    running = np.cumsum(L[:-1], axis=0) / t
    bound = ls.eos_average_bound(t, etas, gamma)
    assert np.all(running <= bound)
    assert np.isfinite(bound).any()


def test_stable_phase_lemma_property_10k_instances():
    rng = np.random.default_rng(0)
    K, n, d = 10_000, 6, 3
    Z = _random_unit_ball(rng, (K, n, d))
    w = rng.standard_normal((K, d)) * np.exp(rng.uniform(-3, 3, (K, 1)))
    L0, g = ls.logistic_loss(Z, w), ls.logistic_grad(Z, w)
    eta = 0.5 / L0  # eta L(w) = 1/2, the lemma's threshold
    L1 = ls.logistic_loss(Z, w - eta[:, None] * g)
    g2 = (g * g).sum(axis=1)
    coef = (L0 - L1) / (eta * g2)  # decrease per unit of eta ||grad||^2
    assert np.all(L1 <= L0 - 0.58 * eta * g2 + 1e-15)
    assert coef.min() >= LEMMA_COEF and coef.max() <= 1.0 + 1e-9  # convexity caps the decrease at eta ||g||^2


def test_stable_entry():
    losses = np.array([0.7, 2.0, 0.3, 0.04, 0.01])
    assert ls.stable_entry(losses, eta=10.0) == 3
    assert ls.stable_entry(losses, eta=10.0, c=0.2) == 4
    assert ls.stable_entry(losses, eta=1000.0) is None
    with pytest.raises(ValueError, match="eta"):
        ls.stable_entry(losses, eta=0.0)
    with pytest.raises(ValueError, match="losses"):
        ls.stable_entry(np.ones((2, 2)), eta=1.0)


# --- simulator --------------------------------------------------------------------------------------------------
def test_gd_logistic_matches_a_numpy_loop_and_records_shapes(data):
    Z, *_ = data
    etas = [0.5, 30.0]
    h = ls.gd_logistic(Z, etas, 50, device="cpu")
    assert isinstance(h, History) and h["loss"].shape == (51, 2) and h["w"].shape == (51, 2, 2)
    for b, eta in enumerate(etas):
        w = np.zeros(2)
        for t in range(50):
            assert h["loss"][t, b] == pytest.approx(ls.logistic_loss(Z, w), rel=1e-12)
            assert h["grad_norm2"][t, b] == pytest.approx(np.sum(ls.logistic_grad(Z, w) ** 2), rel=1e-10)
            w = w - eta * ls.logistic_grad(Z, w)
        np.testing.assert_allclose(h.final["w"][b], w, rtol=1e-11)
    assert h["loss"][0] == pytest.approx([np.log(2)] * 2, rel=1e-15)


def test_gd_logistic_w0_and_record_loss(data):
    Z, *_ = data
    h = ls.gd_logistic(Z, 1.0, 5, w0=[1.0, 0.0], record="loss")
    assert "w" not in h and h["loss"][0, 0] == pytest.approx(ls.logistic_loss(Z, [1.0, 0.0]))


def test_v71_v72_monotone_below_two_over_beta_and_not_above(data):
    Z, _, _, beta = data
    L = ls.gd_logistic(Z, [1.9 / beta, 50.0], 3000, device="cpu", record="loss")["loss"]
    assert np.all(np.diff(L[:, 0]) <= 0)
    assert L[:, 1].max() > np.log(2)


def test_v74_lemma_along_gd_runs(data):
    Z, *_ = data
    etas = np.array([5.0, 50.0, 200.0, 1000.0])
    h = ls.gd_logistic(Z, etas, 3000, device="cpu", record="loss")
    for b, eta in enumerate(etas):
        L, g2 = h["loss"][:, b], h["grad_norm2"][:, b]
        s = ls.stable_entry(L, eta)
        assert s is not None
        assert np.all(L[s + 1:] <= L[s:-1] * (1 + 1e-12))
        assert np.all(L[s + 1:] <= L[s:-1] - 0.58 * eta * g2[s:-1] + 1e-15)


def test_v75_rates_in_the_window(data):
    Z, _, gamma, beta = data
    Ts = np.array([250, 500, 1000, 2000])
    L_cl, slope_cl = ls.rate_sweep(Z, Ts, lambda T: 1 / beta, device="cpu")
    L_big, slope_big = ls.rate_sweep(Z, Ts, lambda T: T / 20, device="cpu")
    assert -1.1 <= slope_cl <= -0.9 and -2.3 <= slope_big <= -1.8
    C_cl = gamma**2 * (1 / beta) * Ts * L_cl
    C_big = gamma**2 * (Ts / 20) * Ts * L_big
    assert np.all((C_cl >= 0.5) & (C_cl <= 1.05)) and np.all(C_big <= 1.05)
    assert np.all(L_big / L_cl <= 1.1 * (1 / beta) / (Ts / 20))
    # the batched sweep reads the same numbers as a single run
    single = ls.gd_logistic(Z, 1000 / 20, 1000, device="cpu", record="loss")["loss"][-1, 0]
    assert L_big[2] == pytest.approx(single, rel=1e-12)


# --- bad input --------------------------------------------------------------------------------------------------
def test_bad_input_raises_naming_the_argument(data):
    Z, *_ = data
    with pytest.raises(ValueError, match="etas"):
        ls.gd_logistic(Z, [1.0, -1.0], 10)
    with pytest.raises(ValueError, match="etas"):
        ls.gd_logistic(Z, np.nan, 10)
    with pytest.raises(ValueError, match="T must be >= 1"):
        ls.gd_logistic(Z, 1.0, 0)
    with pytest.raises(ValueError, match="separable"):
        ls.gd_logistic(np.array([[0.5, 0.0], [-0.5, 0.0]]), 1.0, 10)
    with pytest.raises(ValueError, match="norm <= 1"):
        ls.gd_logistic(2 * Z, 1.0, 10)
    with pytest.raises(ValueError, match="Z must"):
        ls.gd_logistic(Z[:, 0], 1.0, 10)
    with pytest.raises(ValueError, match="Z must"):
        ls.logistic_loss(np.zeros((0, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="finite"):
        ls.logistic_loss(np.array([[np.nan, 0.0]]), np.zeros(2))
    with pytest.raises(ValueError, match="w must"):
        ls.logistic_grad(Z, np.zeros(3))
    with pytest.raises(ValueError, match="w0"):
        ls.gd_logistic(Z, 1.0, 5, w0=np.zeros(3))
    with pytest.raises(ValueError, match="record"):
        ls.gd_logistic(Z, 1.0, 5, record="some")
    with pytest.raises(ValueError, match="separable"):
        ls.max_margin(np.array([[1.0, 0.0], [-1.0, 0.0]]))
    with pytest.raises(ValueError, match="eta"):
        ls.eos_average_bound(10, 0.0, 0.1)
    with pytest.raises(ValueError, match="gamma"):
        ls.eos_average_bound(10, 1.0, 1.5)
    with pytest.raises(ValueError, match="gamma"):
        ls.narrow_margin_2d(gamma=1.0)
    with pytest.raises(ValueError, match="spread"):
        ls.narrow_margin_2d(spread=-0.1)
    with pytest.raises(ValueError, match="Ts"):
        ls.rate_sweep(Z, [100, 50], lambda T: 1.0)
    with pytest.raises(ValueError, match="eta_fn"):
        ls.rate_sweep(Z, [10, 20], lambda T: -1.0)
    with pytest.raises(TypeError, match="eta_fn"):
        ls.rate_sweep(Z, [10, 20], 1.0)


def test_divergence_is_reported_with_its_step():
    losses = np.array([[0.7, 0.7], [0.5, np.inf], [np.nan, np.nan]])
    with pytest.raises(DivergenceError, match="step 1 .*eta=50"):
        ls._raise_if_diverged(losses, np.array([1.0, 50.0]))
