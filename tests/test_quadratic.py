"""Unit tests of learndyn.quadratic (Preface): fast versions of V0.1 and V0.2, and bad input."""

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
    with pytest.raises(ValueError, match="lr"):
        q.gd_quadratic(H, W0, -0.1, 3)
    with pytest.raises(ValueError, match="k"):
        q.gd_quadratic_closed_form(H, W0, 0.1, 1.5)
    with pytest.raises(ValueError, match="t"):
        q.flow_quadratic(H, W0, -1.0)
    with pytest.raises(ValueError, match="finite"):
        q.flow_quadratic(H, np.array([np.nan, 1.0]), 1.0)
