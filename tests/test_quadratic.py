"""Unit tests of learndyn.quadratic (Preface): its checks, fast; the error expansion; the exact modified Hessian."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from learndyn import quadratic as q
from learndyn.core import DivergenceError

H = np.array([[1.0, 0.3], [0.3, 0.4]])
W0 = np.array([1.0, -2.0])


def test_gd_path_equals_closed_form_v02():
    path = q.gd_quadratic(H, W0, 0.3, 50)
    np.testing.assert_allclose(path, q.gd_quadratic_closed_form(H, W0, 0.3, np.arange(51)), atol=1e-13)
    np.testing.assert_allclose(q.gd_quadratic_closed_form(H, W0, 0.3, 7), path[7], atol=1e-13)


def test_flow_against_expm_and_ode_solver():
    t = np.array([0.0, 0.5, 3.0])
    ref = np.stack([expm(-H * s) @ W0 for s in t])
    np.testing.assert_allclose(q.flow_quadratic(H, W0, t), ref, atol=1e-13)
    sol = solve_ivp(lambda _, w: -H @ w, (0, 3), W0, t_eval=t, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(q.flow_quadratic(H, W0, t), sol.y.T, atol=1e-10)
    np.testing.assert_allclose(q.flow_quadratic(H, W0, 0.0), W0)


def test_first_and_second_order_v01():
    def errs(eta):
        k = np.arange(int(10 / eta) + 1)
        gd = q.gd_quadratic_closed_form(H, W0, eta, k)
        return (np.abs(gd - q.flow_quadratic(H, W0, eta * k)).max(),
                np.abs(gd - q.modified_flow_quadratic(H, W0, eta, eta * k)).max())
    (e1, m1), (e2, m2) = errs(0.04), errs(0.02)
    assert 1.8 < e1 / e2 < 2.2
    assert 3.6 < m1 / m2 < 4.4


def test_divergence_above_threshold_names_step():
    lam_max = np.linalg.eigvalsh(H)[-1]
    q.gd_quadratic(H, W0, 1.95 / lam_max, 2000)  # below 2/lambda: fine
    with pytest.raises(DivergenceError, match="step"):
        q.gd_quadratic(H, W0, 2.5 / lam_max, 5000)


def test_bad_input():
    with pytest.raises(ValueError, match="symmetric"):
        q.flow_quadratic(np.array([[1.0, 1.0], [0.0, 1.0]]), W0, 1.0)
    with pytest.raises(ValueError, match="square"):
        q.flow_quadratic(np.ones((2, 3)), W0, 1.0)
    with pytest.raises(ValueError, match="w0"):
        q.gd_quadratic(H, np.ones(3), 0.1, 3)
    with pytest.raises(ValueError, match="eta"):
        q.gd_quadratic(H, W0, -0.1, 3)
    with pytest.raises(ValueError, match="k"):
        q.gd_quadratic_closed_form(H, W0, 0.1, 1.5)
    with pytest.raises(ValueError, match="t"):
        q.flow_quadratic(H, W0, -1.0)
    with pytest.raises(ValueError, match="finite"):
        q.flow_quadratic(H, np.array([np.nan, 1.0]), 1.0)


def _brute_max_error(lam, amp, eta, against):
    """max over the grid t = eta k of |GD - reference| in one component, straight from the two formulas."""
    k = np.arange(int(round(20 / (eta * lam))) + 1)
    gd = (1 - eta * lam) ** k
    rate = lam if against == "flow" else lam + eta * lam**2 / 2
    return abs(amp) * np.abs(gd - np.exp(-rate * eta * k)).max()


@pytest.mark.parametrize("against, p", [("flow", 1), ("modified", 2)])
def test_error_expansion_against_brute_force(against, p):
    lam, amp = 2.0, -0.7
    C, a = q.gd_error_expansion(lam, amp, against)
    for eta in (1e-3, 4e-3):  # 1/(eta lam) integer: the residual is the O(eta^2) term, < 0.4 (eta lam)^2
        measured = _brute_max_error(lam, amp, eta, against) / eta**p
        assert abs(measured / (C * (1 + a * eta)) - 1) < 0.4 * (eta * lam) ** 2
    # the leading constant alone is off by a * eta: the first-order term is really there
    eta = 4e-3
    assert abs(_brute_max_error(lam, amp, eta, against) / eta**p / C - 1 - a * eta) < 0.1 * a * eta
    # and the named constants: 1/(2e) and 1/(3e) at lam = amp = 1
    assert np.isclose(q.gd_error_expansion(1.0, 1.0, against)[0], 1 / (p + 1) / np.e)


def test_error_expansion_bad_input():
    with pytest.raises(ValueError, match="lam"):
        q.gd_error_expansion(-1.0, 1.0)
    with pytest.raises(ValueError, match="against"):
        q.gd_error_expansion(1.0, 1.0, against="euler")
    with pytest.raises(ValueError, match="amp"):
        q.gd_error_expansion(1.0, np.nan)
    with pytest.raises(TypeError, match="amp"):
        q.gd_error_expansion(1.0, "0.5")


def test_exact_modified_hessian_reproduces_gd():
    eta = 0.8 / np.linalg.eigvalsh(H)[-1]
    Ht = q.exact_modified_hessian(H, eta)
    np.testing.assert_allclose(Ht, Ht.T, atol=1e-14)
    k = np.arange(40)
    np.testing.assert_allclose(q.flow_quadratic(Ht, W0, eta * k), q.gd_quadratic(H, W0, eta, 39), atol=1e-13)
    # independent reference: the matrix logarithm of scipy, and the series H + eta H^2/2 + eta^2 H^3/3 at small eta
    from scipy.linalg import logm
    np.testing.assert_allclose(Ht, -logm(np.eye(2) - eta * H).real / eta, atol=1e-12)
    small = 1e-3
    series = H + small * H @ H / 2 + small**2 * H @ H @ H / 3
    np.testing.assert_allclose(q.exact_modified_hessian(H, small), series, atol=small**3)


def test_exact_modified_hessian_bad_input():
    lam_max = np.linalg.eigvalsh(H)[-1]
    with pytest.raises(ValueError, match="eta"):
        q.exact_modified_hessian(H, 1.0 / lam_max)  # GD kills the stiff component in one step: no flow does that
    with pytest.raises(ValueError, match="eta"):
        q.exact_modified_hessian(H, 1.5 / lam_max)
    with pytest.raises(ValueError, match="square"):
        q.exact_modified_hessian(np.ones(3), 0.1)
    with pytest.raises(ValueError, match="symmetric"):
        q.exact_modified_hessian(np.array([[1.0, 1.0], [0.0, 1.0]]), 0.1)


def test_closed_form_diverges_like_the_iteration():
    H, w0 = np.diag([2.0, 0.5]), np.array([1.0, -1.0])
    with pytest.raises(DivergenceError, match="diverged at step"):
        q.gd_quadratic_closed_form(H, w0, 50.0, np.arange(200))
    with pytest.raises(DivergenceError, match="diverged at step"):
        q.gd_quadratic(H, w0, 50.0, 200)


def test_bad_arrays_are_named():
    H, w0 = np.diag([2.0, 0.5]), np.array([1.0, -1.0])
    with pytest.raises(ValueError, match="H must be finite"):
        q.gd_quadratic(np.diag([np.nan, 1.0]), w0, 0.1, 3)
    with pytest.raises(TypeError, match="w0 must be real"):
        q.flow_quadratic(H, w0 + 1j, 1.0)
    with pytest.raises(ValueError, match="t must not be empty"):
        q.flow_quadratic(H, w0, [])
