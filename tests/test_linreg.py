"""Unit tests of `learndyn.linreg` (Ch 1): closed forms against independent references and simulation, both sides
of every threshold, and every bad-input path. The Monte Carlo tests are fast versions of the chapter's checks
V1.1 (OLS risk) and of the Bayes-risk check; their tolerances come from the standard error of the mean."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from learndyn import linreg
from learndyn.core import DivergenceError


def _problem(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.standard_normal(n)


# --- OLS ------------------------------------------------------------------------------------------------------
def test_ols_matches_scipy_lstsq_and_normal_equations():
    X, y = _problem(40, 7)
    w = linreg.ols(X, y)
    np.testing.assert_allclose(w, scipy.linalg.lstsq(X, y)[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(w, np.linalg.solve(X.T @ X, X.T @ y), rtol=0, atol=1e-12)
    np.testing.assert_allclose(X.T @ (X @ w - y), 0.0, atol=1e-11)  # residual orthogonal to the columns


def test_ols_recovers_w_without_noise():
    X, _ = _problem(30, 5, seed=1)
    w = np.arange(1.0, 6.0)
    np.testing.assert_allclose(linreg.ols(X, X @ w), w, atol=1e-12)


@pytest.mark.parametrize("X", [np.ones((10, 3)), np.zeros((5, 2)), np.random.default_rng(0).standard_normal((3, 5))])
def test_ols_rejects_rank_deficient_design(X):
    with pytest.raises(ValueError, match="full column rank"):
        linreg.ols(X, np.ones(X.shape[0]))


# --- risk formulas --------------------------------------------------------------------------------------------
def test_gaussian_risk_formula_and_its_domain():
    assert linreg.ols_risk_theory(50, 10, 0.7) == pytest.approx(0.49 * 10 / 39, rel=1e-15)
    assert linreg.ols_risk_theory(12, 10, 1.0) == pytest.approx(10.0)  # n = d + 2: the first n where it exists
    for n in (11, 10, 5):  # n <= d + 1: E tr (X^T X)^{-1} is infinite (or X^T X is singular)
        with pytest.raises(ValueError, match="n > d \\+ 1"):
            linreg.ols_risk_theory(n, 10, 1.0)
    with pytest.raises(ValueError, match="n > d \\+ 1"):
        linreg.simulate_ols_risk(11, 10, 1.0, reps=100)


def test_orthogonal_design_risk_is_exact():
    X = linreg.orthogonal_design(30, 6, seed=2)
    np.testing.assert_allclose(X.T @ X, 30 * np.eye(6), atol=1e-12)
    expected = linreg.ols_risk_theory(30, 6, 0.5, design="orthogonal")
    assert expected == pytest.approx(0.25 * 6 / 30, rel=1e-15)
    assert linreg.ols_risk_fixed(X, 0.5) == pytest.approx(expected, rel=1e-12)
    assert linreg.ols_risk_fixed(X, 0.5) == pytest.approx(0.25 * np.trace(np.linalg.inv(X.T @ X)), rel=1e-12)


def test_simulated_risk_orthogonal_design_within_3_standard_errors():
    mean, se = linreg.simulate_ols_risk(30, 6, 0.5, reps=20000, seed=3, design="orthogonal")
    assert abs(mean - linreg.ols_risk_theory(30, 6, 0.5, design="orthogonal")) <= 3 * se


@pytest.mark.parametrize("seed", [0, 1])
def test_v11_fast_gaussian_risk_within_3_standard_errors(seed):
    """Fast V1.1: fewer repetitions than the chapter (so a larger standard error), the same 3-SE rule."""
    mean, se = linreg.simulate_ols_risk(50, 10, 0.7, reps=5000, seed=seed)
    theory = linreg.ols_risk_theory(50, 10, 0.7)
    assert abs(mean - theory) <= 3 * se, (mean, se, theory)
    naive = 0.49 * 10 / 50  # sigma^2 d / n misses the finite-n factor n / (n - d - 1) = 1.28
    assert abs(mean - naive) > 10 * se


def test_simulated_risk_is_seeded():
    assert linreg.simulate_ols_risk(20, 3, 1.0, reps=50, seed=4) == linreg.simulate_ols_risk(20, 3, 1.0, reps=50,
                                                                                               seed=4)


# --- Bayes risk (minimax lower bound) -------------------------------------------------------------------------
def test_bayes_risk_orthogonal_closed_form_and_limit():
    n, d, sigma = 40, 5, 0.8
    X = linreg.orthogonal_design(n, d, seed=5)
    for tau in (0.1, 1.0, 10.0):
        expected = d * sigma**2 * tau**2 / (n * tau**2 + sigma**2)
        assert linreg.bayes_risk(X, sigma, tau) == pytest.approx(expected, rel=1e-12)
        assert linreg.bayes_risk(X, sigma, tau) < linreg.ols_risk_fixed(X, sigma)  # below the minimax risk
    assert linreg.bayes_risk(X, sigma, 1e6) == pytest.approx(linreg.ols_risk_fixed(X, sigma), rel=1e-9)


def test_bayes_risk_simulation_within_3_standard_errors():
    X, _ = _problem(25, 4, seed=6)
    mean, se = linreg.simulate_bayes_risk(X, 0.9, 0.5, reps=20000, seed=7)
    assert abs(mean - linreg.bayes_risk(X, 0.9, 0.5)) <= 3 * se


def test_posterior_mean_is_ridge_regression():
    X, y = _problem(15, 4, seed=8)
    lam = (0.5 / 2.0) ** 2
    expected = scipy.linalg.solve(X.T @ X + lam * np.eye(4), X.T @ y)
    np.testing.assert_allclose(linreg.posterior_mean(X, y, 0.5, 2.0), expected, atol=1e-12)
    batch = np.stack([y, 2 * y])  # leading batch axis
    np.testing.assert_allclose(linreg.posterior_mean(X, batch, 0.5, 2.0)[1], 2 * expected, atol=1e-12)


# --- gradient descent and implicit bias -----------------------------------------------------------------------
def test_v14_fast_gd_finds_min_norm_interpolator():
    """Fast V1.4: n < d, w0 = 0, eta = 0.5 / lambda_max; GD stays in the row space and converges to X^+ y."""
    X, y = _problem(20, 50, seed=9)
    eta = 0.25 * linreg.gd_stability_threshold(X)
    w = linreg.gd_least_squares(X, y, eta, 5000)
    w_star = linreg.min_norm_solution(X, y)
    np.testing.assert_allclose(w_star, X.T @ np.linalg.solve(X @ X.T, y), atol=1e-12)  # X^T (X X^T)^{-1} y
    assert np.linalg.norm(w - w_star) <= 1e-8
    np.testing.assert_allclose(X @ w, y, atol=1e-8)  # interpolates


def test_gd_limit_from_nonzero_start():
    X, y = _problem(10, 30, seed=10)
    w0 = np.random.default_rng(11).standard_normal(30)
    limit = linreg.gd_limit(X, y, w0)
    pinv = scipy.linalg.pinv(X)
    np.testing.assert_allclose(limit, pinv @ y + (np.eye(30) - pinv @ X) @ w0, atol=1e-12)
    w = linreg.gd_least_squares(X, y, 0.5 * linreg.gd_stability_threshold(X), 5000, w0=w0)
    assert np.linalg.norm(w - limit) <= 1e-8
    assert np.linalg.norm(w - linreg.min_norm_solution(X, y)) > 1.0  # a different interpolator than from 0
    np.testing.assert_allclose(linreg.gd_limit(X, y), linreg.min_norm_solution(X, y), atol=1e-12)


def test_stability_threshold_both_sides():
    X, y = _problem(30, 8, seed=12)
    thr = linreg.gd_stability_threshold(X)
    assert thr == pytest.approx(2 / scipy.linalg.eigvalsh(X.T @ X)[-1], rel=1e-12)
    w = linreg.gd_least_squares(X, y, 0.95 * thr, 3000)
    np.testing.assert_allclose(w, linreg.ols(X, y), atol=1e-8)  # below: converges
    with pytest.raises(DivergenceError, match=r"diverged at step \d+"):  # above: diverges, naming the step
        linreg.gd_least_squares(X, y, 1.05 * thr, 100000)


def test_gd_uses_the_formed_normal_equations():
    """The documented form: A = X^T X and b = X^T y formed once, w <- w - eta (A w - b), bit for bit (Chapter 1's
    rounding bound is derived for exactly this recursion)."""
    X, y = _problem(20, 50, seed=13)
    w0 = np.random.default_rng(14).standard_normal(50)
    eta = 0.5 * linreg.gd_stability_threshold(X)
    A, b, w = X.T @ X, X.T @ y, w0.copy()
    for _ in range(200):
        w = w - eta * (A @ w - b)
    np.testing.assert_array_equal(linreg.gd_least_squares(X, y, eta, 200, w0=w0), w)


def test_gd_zero_steps_returns_start():
    X, y = _problem(5, 3)
    np.testing.assert_array_equal(linreg.gd_least_squares(X, y, 0.01, 0, w0=np.ones(3)), np.ones(3))


# --- bad input ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_data_rejected(bad):
    X, y = _problem(10, 3)
    Xb, yb = X.copy(), y.copy()
    Xb[0, 0], yb[1] = bad, bad
    for fn in (linreg.ols, linreg.min_norm_solution, linreg.gd_limit):
        with pytest.raises(ValueError, match="finite"):
            fn(Xb, y)
        with pytest.raises(ValueError, match="finite"):
            fn(X, yb)
    with pytest.raises(ValueError, match="finite"):
        linreg.gd_least_squares(X, yb, 0.01, 10)
    for fn in (lambda A: linreg.ols_risk_fixed(A, 1.0), lambda A: linreg.bayes_risk(A, 1.0, 1.0),
               linreg.gd_stability_threshold):
        with pytest.raises(ValueError, match="finite"):
            fn(Xb)
    with pytest.raises(ValueError, match="finite"):
        linreg.gd_limit(X, y, w0=np.full(3, bad))


@pytest.mark.parametrize("value", [0.0, -1.0, np.nan, np.inf])
def test_non_positive_lr_and_sigma_rejected(value):
    X, y = _problem(10, 3)
    with pytest.raises(ValueError, match="eta"):
        linreg.gd_least_squares(X, y, value, 10)
    with pytest.raises(ValueError, match="sigma"):
        linreg.ols_risk_theory(50, 10, value)
    with pytest.raises(ValueError, match="sigma"):
        linreg.simulate_ols_risk(50, 10, value, reps=10)
    with pytest.raises(ValueError, match="sigma"):
        linreg.ols_risk_fixed(X, value)
    with pytest.raises(ValueError, match="tau"):
        linreg.bayes_risk(X, 1.0, value)


def test_wrong_types_rejected():
    with pytest.raises(TypeError, match="n must be an int"):
        linreg.ols_risk_theory(50.0, 10, 1.0)
    with pytest.raises(TypeError, match="sigma"):
        linreg.ols_risk_theory(50, 10, "1")
    with pytest.raises(TypeError, match="steps"):
        linreg.gd_least_squares(*_problem(5, 2), 0.1, 2.5)
    with pytest.raises(ValueError, match="reps"):
        linreg.simulate_ols_risk(50, 10, 1.0, reps=1)


def test_wrong_shapes_rejected():
    X, y = _problem(10, 3)
    with pytest.raises(ValueError, match="y must have shape"):
        linreg.ols(X, y[:-1])
    with pytest.raises(ValueError, match="X must have 2 axes"):
        linreg.ols(y, y)
    with pytest.raises(ValueError, match="w0 must have shape"):
        linreg.gd_least_squares(X, y, 0.01, 5, w0=np.zeros(4))
    with pytest.raises(ValueError, match="w0 must have shape"):
        linreg.gd_limit(X, y, w0=np.zeros(2))
    with pytest.raises(ValueError, match="y must have shape"):
        linreg.posterior_mean(X, np.ones(4), 1.0, 1.0)
    with pytest.raises(ValueError, match="X must have 2 axes"):
        linreg.bayes_risk(np.ones(3), 1.0, 1.0)


def test_design_and_domain_errors():
    with pytest.raises(ValueError, match="design must be"):
        linreg.ols_risk_theory(50, 10, 1.0, design="uniform")
    with pytest.raises(ValueError, match="n >= d"):
        linreg.ols_risk_theory(5, 10, 1.0, design="orthogonal")
    with pytest.raises(ValueError, match="n >= d"):
        linreg.orthogonal_design(5, 10)
    with pytest.raises(ValueError, match="full column rank"):
        linreg.ols_risk_fixed(np.ones((6, 2)), 1.0)
    with pytest.raises(ValueError, match="zero"):
        linreg.gd_stability_threshold(np.zeros((3, 2)))


# --- Stein's paradox ---------------------------------------------------------------------------------------------
def test_james_stein_risk_limits_and_quadrature():
    d, v = 10, 0.0098
    assert linreg.james_stein_risk(0.0, d, v) == pytest.approx(2 * v, rel=1e-12)  # w = 0: v (d - (d - 2))
    far = linreg.james_stein_risk(1e3, d, v)
    assert d * v * (1 - 1e-4) < far < d * v  # rises to the OLS risk d v, never reaches it
    risks = linreg.james_stein_risk(np.linspace(0, 3, 7), d, v)
    assert np.all(np.diff(risks) > 0) and np.all(risks < d * v)  # increasing in ||w||, below OLS everywhere
    # independent reference: E[1/Q] for Q ~ noncentral chi^2_d, integrated against scipy's density
    from scipy import stats

    for w_norm in (0.1, 0.7, 2.0):
        inv_q = stats.ncx2.expect(lambda q: 1 / q, args=(d, w_norm**2 / v))
        assert linreg.james_stein_risk(w_norm, d, v) == pytest.approx(v * (d - (d - 2) ** 2 * inv_q), rel=1e-8)


def test_james_stein_estimator_and_simulation():
    w_hat = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(linreg.james_stein(w_hat, 1.0), [[3.0 * 24 / 25, 4.0 * 24 / 25, 0.0], [0, 0, 0]])
    w = np.array([0.3, 0.0, 0.0, 0.0, 0.0])
    mc, se = linreg.simulate_james_stein_risk(w, 0.04, reps=200_000, seed=1)
    assert abs(mc - linreg.james_stein_risk(0.3, 5, 0.04)) < 4 * se


def test_james_stein_bad_input():
    with pytest.raises(ValueError, match="d >= 3"):
        linreg.james_stein(np.ones(2), 1.0)
    with pytest.raises(ValueError, match="finite"):
        linreg.james_stein(np.array([1.0, np.nan, 0.0]), 1.0)
    with pytest.raises(ValueError, match="noise_var"):
        linreg.james_stein(np.ones(3), -1.0)
    with pytest.raises(ValueError, match="d"):
        linreg.james_stein_risk(1.0, 2, 1.0)
    with pytest.raises(ValueError, match="w_norm"):
        linreg.james_stein_risk(-1.0, 5, 1.0)
    with pytest.raises(ValueError, match="d >= 3"):
        linreg.simulate_james_stein_risk(np.ones(2), 1.0, reps=10)


# --- early stopping as ridge ---------------------------------------------------------------------------------------
def test_filters_limits():
    s = np.array([0.5, 2.0, 10.0])
    np.testing.assert_allclose(linreg.gd_filter(s, 0.05, 0), 0.0)
    np.testing.assert_allclose(linreg.gd_filter(s, 0.05, 1), 0.05 * s)  # one step: eta s
    np.testing.assert_allclose(linreg.gd_filter(s, 0.05, 10_000), 1.0)  # k -> infinity: OLS
    np.testing.assert_allclose(linreg.ridge_filter(s, 1e-12), 1.0, atol=1e-11)
    np.testing.assert_allclose(linreg.ridge_filter(s, 2.0), s / (s + 2.0))
    assert linreg.gd_filter(s, 0.05, np.arange(3)[:, None]).shape == (3, 3)


def test_gd_early_stopped_matches_gd_iterations():
    for n, d in ((30, 6), (8, 20)):  # full column rank, and wide (any rank)
        X, y = _problem(n, d, seed=3)
        eta = 0.5 / np.linalg.eigvalsh(X.T @ X)[-1]
        for k in (0, 1, 7, 60):
            np.testing.assert_allclose(linreg.gd_early_stopped(X, y, eta, k), linreg.gd_least_squares(X, y, eta, k),
                                       atol=1e-12)


def test_filter_risks_against_exact_linear_map():
    X, _ = _problem(25, 5, seed=4)
    sigma, tau, eta = 0.8, 0.3, 0.2 / np.linalg.eigvalsh(X.T @ X)[-1]
    w = np.random.default_rng(5).standard_normal(5)
    F = np.zeros((5, 25))  # GD on the linear map y -> w_k, no eigendecomposition
    for k in range(40):
        bias = (np.eye(5) - F @ X)
        assert linreg.gd_risk(X, sigma, eta, k, w=w) == pytest.approx(
            np.sum((bias @ w) ** 2) + sigma**2 * np.sum(F**2), rel=1e-10)
        assert linreg.gd_risk(X, sigma, eta, k, tau=tau) == pytest.approx(
            tau**2 * np.sum(bias**2) + sigma**2 * np.sum(F**2), rel=1e-10)
        F = F - eta * X.T @ (X @ F - np.eye(25))
    kappa = 0.7  # ridge: against its explicit matrix (X^T X + kappa I)^-1 X^T
    A = np.linalg.solve(X.T @ X + kappa * np.eye(5), X.T)
    assert linreg.ridge_risk(X, sigma, kappa, w=w) == pytest.approx(
        np.sum(((np.eye(5) - A @ X) @ w) ** 2) + sigma**2 * np.sum(A**2), rel=1e-10)
    # ridge at kappa = sigma^2 / tau^2 is the Bayes estimator: its averaged risk is the Bayes risk
    assert linreg.ridge_risk(X, sigma, sigma**2 / tau**2, tau=tau) == pytest.approx(
        linreg.bayes_risk(X, sigma, tau), rel=1e-12)
    assert linreg.gd_risk(X, sigma, eta, 10**6, tau=tau) == pytest.approx(linreg.ols_risk_fixed(X, sigma), rel=1e-9)
    assert linreg.gd_risk(X, sigma, eta, np.arange(5), tau=tau).shape == (5,)


def test_simulate_gd_risk_against_closed_form():
    X, _ = _problem(20, 4, seed=6)
    eta = 0.2 / np.linalg.eigvalsh(X.T @ X)[-1]
    means, ses = linreg.simulate_gd_risk(X, 0.5, 0.4, eta, [0, 5, 30], reps=40_000, seed=7)
    np.testing.assert_array_less(np.abs(means - linreg.gd_risk(X, 0.5, eta, np.array([0, 5, 30]), tau=0.4)), 4 * ses)


def test_early_stopping_bad_input():
    X, y = _problem(10, 3)
    with pytest.raises(ValueError, match="steps"):
        linreg.gd_filter(1.0, 0.1, 1.5)
    with pytest.raises(ValueError, match="steps"):
        linreg.gd_filter(1.0, 0.1, -1)
    with pytest.raises(ValueError, match="eta"):
        linreg.gd_filter(1.0, 0.0, 1)
    with pytest.raises(ValueError, match="lam"):
        linreg.ridge_filter(1.0, 0.0)
    with pytest.raises(ValueError, match="exactly one"):
        linreg.gd_risk(X, 1.0, 0.01, 5)
    with pytest.raises(ValueError, match="exactly one"):
        linreg.gd_risk(X, 1.0, 0.01, 5, w=np.ones(3), tau=1.0)
    with pytest.raises(ValueError, match="w must"):
        linreg.ridge_risk(X, 1.0, 1.0, w=np.ones(4))
    with pytest.raises(TypeError, match="filt must be a function"):
        linreg.filter_risk(X, 1.0, 0.5, tau=1.0)
    with pytest.raises(ValueError, match="full column rank"):
        linreg.gd_risk(np.ones((6, 2)), 1.0, 0.01, 5, tau=1.0)
    with pytest.raises(ValueError, match="increasing"):
        linreg.simulate_gd_risk(X, 1.0, 1.0, 0.01, [5, 3], reps=10)
    with pytest.raises(ValueError, match="steps"):
        linreg.gd_early_stopped(X, y, 0.01, -2)


def test_nan_start_is_bad_input_not_divergence():
    """A NaN in w0 is bad input (naming w0), never a divergence blaming the step size; steps=0 returns w0."""
    X, y = _problem(20, 3)
    for steps in (0, 5):
        with pytest.raises(ValueError, match="w0 must be finite"):
            linreg.gd_least_squares(X, y, 0.01, steps, w0=np.array([np.nan, 0.0, 0.0]))
    w0 = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(linreg.gd_least_squares(X, y, 0.01, 0, w0=w0), w0)
