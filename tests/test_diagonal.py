"""Unit tests of learndyn.diagonal (Chapter 8): limits, independent references, bad input."""

import numpy as np
import pytest
import torch

from learndyn import diagonal as dg


def _problem(seed=0, n=6, d=14):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(n)
    return X, rng.standard_normal(n)


def test_entropy_and_mirror_map_against_autograd_and_limits():
    w = np.linspace(-2, 2, 9)
    for a in (0.2, 1.0, 3.0):
        wt = torch.tensor(w, requires_grad=True)
        z = wt / a**2
        (a**2 * (2 - torch.sqrt(4 + z**2) + z * torch.asinh(z / 2))).sum().backward()
        np.testing.assert_allclose(dg.mirror_map(w, a), wt.grad.numpy(), rtol=1e-12)
    assert dg.hyperbolic_entropy(np.zeros(3), 0.5) == 0.0
    big = 50.0  # l2 limit: Q ~ ||w||^2 / (4 alpha^2)
    assert dg.hyperbolic_entropy(w, big) == pytest.approx(np.sum(w**2) / (4 * big**2), rel=1e-6)


def test_entropy_interpolator_solves_the_kkt_conditions_and_matches_the_dual():
    X, y = _problem()
    for a in (0.1, 1.0, 5.0):
        w = dg.entropy_interpolator(X, y, a)
        np.testing.assert_allclose(X @ w, y, atol=1e-10)
        psi = dg.mirror_map(w, a)
        lam = np.linalg.lstsq(X.T, psi, rcond=None)[0]
        np.testing.assert_allclose(X.T @ lam, psi, atol=1e-8)
        assert dg.kkt_distance_bound(X, w, a)[0] < 1e-8


def test_entropy_interpolator_at_small_scales_interpolates_and_reaches_basis_pursuit():
    """Chapter 8's instance at the draws where the earlier primal solver stopped far from X w = y (alpha <= 1.5e-3):
    every scale interpolates, the optimum moves monotonically towards basis pursuit, and alpha = 1e-128 is it."""
    for seed in (3, 4):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((15, 40)) / np.sqrt(15)
        w_o = np.zeros(40)
        w_o[[3, 11, 27]] = [4.0, -1.6, 0.7]
        y = X @ w_o
        w_bp = dg.basis_pursuit(X, y)
        gaps = []
        for a in (1e-1, 1e-2, 1.5e-3, 1e-3, 1e-8, 1e-30):
            w = dg.entropy_interpolator(X, y, a)
            np.testing.assert_allclose(X @ w, y, atol=1e-11)
            gaps.append(np.abs(w).sum() - np.abs(w_bp).sum())
        assert all(g >= -1e-9 for g in gaps) and gaps == sorted(gaps, reverse=True)
        np.testing.assert_allclose(dg.entropy_interpolator(X, y, 1e-128), w_bp, atol=1e-9)


def test_entropy_interpolator_rests_on_the_library_mirror_map(monkeypatch):
    """The answer is polished on the optimality system written with `mirror_map`: a 5 % error in its scale moves it."""
    X, y = _problem(2)
    right = dg.entropy_interpolator(X, y, 0.3)
    wrong_map = dg.mirror_map
    monkeypatch.setattr(dg, "mirror_map", lambda w, a: wrong_map(w, 1.05 * np.asarray(a)))
    assert np.abs(dg.entropy_interpolator(X, y, 0.3) - right).max() > 1e-3


def test_large_and_small_alpha_limits():
    X, y = _problem(1)
    w_l2 = np.linalg.pinv(X) @ y
    w10 = dg.entropy_interpolator(X, y, 10.0)
    np.testing.assert_allclose(w10 - w_l2, dg.l2_correction(X, y, 10.0), rtol=0.02, atol=1e-9)
    w_bp = dg.basis_pursuit(X, y)
    assert np.abs(w_bp).sum() <= np.abs(w_l2).sum() + 1e-9
    np.testing.assert_allclose(X @ w_bp, y, atol=1e-8)


def test_saddle_sequence_orthogonal_design_and_bp():
    # orthogonal design: coordinates decouple, jump times 1/|w_i| (Chapter 2's order), last saddle = BP
    X = np.eye(3, 5)
    y = np.array([2.0, -0.5, 1.0])
    sad = dg.saddle_sequence(X, y)
    np.testing.assert_allclose(sad.times, [0.5, 1.0, 2.0], rtol=1e-12)
    np.testing.assert_allclose(sad.points[-1], [2.0, -0.5, 1.0, 0, 0], atol=1e-12)
    Xr, yr = _problem(2)
    np.testing.assert_allclose(dg.saddle_sequence(Xr, yr).points[-1], dg.basis_pursuit(Xr, yr), atol=1e-7)


def test_statistical_dimension():
    from scipy.integrate import quad

    tail = quad(lambda g: 2 * (g - 1.0) ** 2 * np.exp(-g * g / 2) / np.sqrt(2 * np.pi), 1.0, np.inf)[0]
    assert dg.l1_statistical_dimension(60, 4) <= 4 * 2 + 56 * tail + 1e-9  # the minimum is below tau = 1
    # statistical dimension: between p and d, increasing in p; p = d/2 large-d value ~ 0.8 d (Donoho-Tanner)
    assert 4 < dg.l1_statistical_dimension(60, 4) < dg.l1_statistical_dimension(60, 8) < 60


def test_gd_matches_flow_limit_and_exact_product_form():
    X, y = _problem(4)
    h = dg.gd_diagonal(X, y, np.array([1.0, 1.0]), np.array([1e-3, 2e-3]), 20_000)
    w_star = dg.entropy_interpolator(X, y, 1.0)
    for b in range(2):
        _, tol = dg.kkt_distance_bound(X, h.final["w"][b], 1.0)
        assert np.abs(h.final["w"][b] - w_star).max() <= 2 * tol.max() + 1e-9
    assert np.all(h.final["log_shrink"] <= 0) and not h.final["diverged"].any()
    assert h.metrics["loss"].shape == (20_001, 2)


@pytest.mark.parametrize("call", [
    lambda: dg.hyperbolic_entropy(np.ones(3), -1.0),
    lambda: dg.mirror_map(np.ones(3), np.ones(2)),
    lambda: dg.entropy_interpolator(np.ones((2, 3)), np.ones(3), 1.0),
    lambda: dg.l2_correction(np.ones((2, 3)), np.ones(2), 0.0),
    lambda: dg.l1_statistical_dimension(10, 10),
    lambda: dg.gd_diagonal(np.ones((2, 3)), np.ones(2), np.array([1.0]), np.array([1.0, 2.0]), 10),
    lambda: dg.gd_diagonal(np.ones((2, 3)), np.ones(2), np.array([1.0]), np.array([1.0]), -1),
    lambda: dg.gd_diagonal(np.ones((2, 3)), np.array([1.0, np.nan]), np.array([1.0]), np.array([1.0]), 5),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


def test_zero_steps_return_the_start():
    hist = dg.gd_diagonal(np.ones((2, 3)), np.ones(2), np.array([0.5]), np.array([0.1]), 0)
    np.testing.assert_array_equal(hist.final["w"], np.zeros((1, 3)))      # u_+ = u_- = alpha: w = 0
    assert hist["loss"].shape == (1, 1)


def test_statistical_dimension_type_error():
    with pytest.raises(TypeError):
        dg.l1_statistical_dimension(10.0, 2)


def test_gd_limit_solves_the_biased_program_at_the_effective_scale():
    """Even et al.'s exact characterisation: with the run's log_shrink and bend, GD's limit is
    argmin Q_{alpha_inf} + <bend, w> over the interpolators (to solver precision), not argmin Q_alpha."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((4, 9)) / 2
    y = X @ np.r_[2.0, -1.0, np.zeros(7)]
    h = dg.gd_diagonal(X, y, np.array([0.3]), np.array([0.05]), 8000)
    assert not np.any(np.isnan(h.final["bend"]))
    a_inf = 0.3 * np.exp(h.final["log_shrink"][0] / 2)
    w_ex = dg.entropy_interpolator(X, y, a_inf, bias=h.final["bend"][0])
    assert np.abs(h.final["w"][0] - w_ex).max() < 1e-8
    assert np.abs(h.final["w"][0] - dg.entropy_interpolator(X, y, a_inf)).max() > 1e-6
    with pytest.raises(ValueError):
        dg.entropy_interpolator(X, y, 0.3, bias=np.zeros(3))


def test_descent_cone_distances_exact_minimum_and_bound():
    """Per-sample minimum over tau equals a brute-force grid minimum; the mean lies in ALMT's window."""
    v = dg.l1_descent_cone_distances(12, 2, 50, seed=1)
    g = np.random.default_rng(1).standard_normal((50, 12))
    taus = np.linspace(0, 5, 50_001)[:, None, None]
    f = ((g[None, :, :2] - taus) ** 2).sum(2) + (np.maximum(np.abs(g[None, :, 2:]) - taus, 0) ** 2).sum(2)
    assert np.allclose(v, f.min(0), atol=1e-6)
    delta = dg.l1_descent_cone_distances(60, 4, 20_000, seed=0).mean()
    n_l1 = dg.l1_statistical_dimension(60, 4)
    assert n_l1 - 2 * np.sqrt(60 / 4) <= delta <= n_l1


def test_descent_cone_distances_against_nnls_projection():
    """delta against the definition E |Pi_C g|^2 by a generic solver on separate draws.

    C, the l1 descent cone at w (eq-diag-statdim-exact), is the cone generated by the 2d vectors
    +-||w||_1 e_j - w; it contains the line space L = {h_S orthogonal to sign(w_S), h_off = 0}, so Pi_C g =
    Pi_L g + Pi_{cone(P A)}(P g) with P the projection onto L's complement, where cone(P A) is pointed and
    scipy's NNLS (Lawson-Hanson) projects onto it. Random support and magnitudes of w, draws seeded apart from
    the formula's; tolerance 4 standard errors of the difference.
    """
    from scipy.optimize import nnls

    d, p, n = 60, 4, 3000
    rng = np.random.default_rng(12345)
    w = np.zeros(d)
    support = rng.choice(d, p, replace=False)
    w[support] = rng.standard_normal(p)
    s, r = np.sign(w[support]), np.abs(w).sum()
    A = np.hstack([r * np.eye(d) - w[:, None], -r * np.eye(d) - w[:, None]])
    B = np.zeros((d, p))
    B[support] = np.eye(p) - np.outer(s, s) / p
    Q = np.linalg.svd(B, full_matrices=False)[0][:, : p - 1]  # orthonormal basis of L
    P = np.eye(d) - Q @ Q.T
    PA = P @ A
    PA = PA[:, np.linalg.norm(PA, axis=0) > 1e-9 * r]
    g = rng.standard_normal((n, d))
    proj_sq = np.empty(n)
    for i in range(n):
        z, _ = nnls(PA, P @ g[i])
        q = PA @ z
        assert (PA.T @ (P @ g[i] - q)).max() < 1e-8  # the polar condition: q is the projection
        proj_sq[i] = q @ q + np.sum((Q.T @ g[i]) ** 2)
    v = dg.l1_descent_cone_distances(d, p, 40_000, seed=7)
    se = np.hypot(proj_sq.std() / np.sqrt(n), v.std() / np.sqrt(len(v)))
    assert abs(proj_sq.mean() - v.mean()) < 4 * se
    assert abs(proj_sq.mean() - dg.l1_statistical_dimension(d, p)) > 3 * se  # ALMT's upper bound is off


def test_descent_cone_distances_bad_input():
    with pytest.raises(ValueError):
        dg.l1_descent_cone_distances(5, 5, 10, seed=0)
    with pytest.raises(TypeError, match="seed"):
        dg.l1_descent_cone_distances(5, 2, 10, np.random.default_rng(0))


def test_bend_is_exact_past_the_sign_flip():
    """With ln|(1 + x)/(1 - x)| the product form stays exact after some |2 eta g_k| > 1."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((15, 40)) / np.sqrt(15)
    w_o = np.zeros(40)
    w_o[[3, 11, 27]] = [4.0, -1.6, 0.7]
    y = X @ w_o
    eta, steps = 0.1, 4000
    up = um = np.full(40, 0.2)
    big = 0.0
    for _ in range(steps):  # numpy replay: the run does flip a sign
        eg = 2 * eta * X.T @ (X @ (up**2 - um**2) - y)
        big = max(big, np.abs(eg).max())
        up, um = up * (1 - eg), um * (1 + eg)
    assert big > 1
    h = dg.gd_diagonal(X, y, np.array([0.2]), np.array([eta]), steps)
    assert np.isfinite(h.final["bend"]).all() and h.metrics["loss"][-1, 0] < 1e-20
    a_inf = 0.2 * np.exp(h.final["log_shrink"][0] / 2)
    w_ex = dg.entropy_interpolator(X, y, a_inf, bias=h.final["bend"][0])
    assert np.abs(h.final["w"][0] - w_ex).max() < 1e-8
    assert np.abs(h.final["w"][0] - dg.entropy_interpolator(X, y, a_inf)).max() > 1e-3


def test_depth_h_odd_increasing_and_inverse():
    """h_D of eq-diag-depth-h is odd and increasing on (-1, 1); depth_mirror_map inverts it."""
    s = np.linspace(-0.99, 0.99, 201)
    for depth in (3, 4, 6):
        h = dg.depth_h(s, depth)
        assert np.allclose(h, -h[::-1]) and np.all(np.diff(h) > 0)
        assert np.allclose(dg.depth_mirror_map(h * 0.7**depth, 0.7, depth), s, atol=1e-12)
    # small s: h_D(s) = 2 D/(D - 2) s + O(s^3) (the l2 end)
    assert dg.depth_h(np.array([1e-6]), 3)[0] == pytest.approx(6e-6, rel=1e-9)


def test_depth_entropy_gradient_and_convexity():
    rng = np.random.default_rng(3)
    w, e = 3 * rng.standard_normal(7), 1e-6 * rng.standard_normal(7)
    for depth in (3, 5):
        num = (dg.depth_entropy(w + e, 0.6, depth) - dg.depth_entropy(w - e, 0.6, depth)) / 2
        assert num == pytest.approx(dg.depth_mirror_map(w, 0.6, depth) @ e, rel=1e-6)
        v = 3 * rng.standard_normal(7)
        mid = dg.depth_entropy((w + v) / 2, 0.6, depth)
        assert mid < (dg.depth_entropy(w, 0.6, depth) + dg.depth_entropy(v, 0.6, depth)) / 2
    assert dg.depth_entropy(np.zeros(3), 1.0, 3) == 0.0


def test_depth_interpolator_kkt_and_gd_first_order():
    """argmin Q^3_alpha solves eq-diag-depth-entropy's KKT system; GD's limit is O(eta) from it (halving the step
    halves the distance: the ratio of successive step-halving differences is 2 to first order)."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((4, 9)) / 2
    y = X @ np.array([2.0, -1.0, 0, 0, 0, 0, 0, 0, 0])
    w = dg.depth_interpolator(X, y, 0.4, 3)
    assert np.allclose(X @ w, y, atol=1e-10)
    psi = dg.depth_mirror_map(w, 0.4, 3)
    lam = np.linalg.lstsq(X.T, psi, rcond=None)[0]
    assert np.abs(psi - X.T @ lam).max() < 1e-9
    runs = [dg.gd_depth(X, y, 0.4, 3, eta, int(60 / eta)) for eta in (0.02, 0.01, 0.005)]
    d1, d2 = np.abs(runs[0] - runs[1]).max(), np.abs(runs[1] - runs[2]).max()
    assert 1.8 < d1 / d2 < 2.2
    assert np.abs(runs[2] - w).max() < 2 * d2


def test_depth_bad_input():
    with pytest.raises(ValueError, match="depth"):
        dg.depth_h(np.zeros(2), 2)
    with pytest.raises(TypeError, match="depth"):
        dg.depth_entropy(np.zeros(2), 1.0, 3.0)
    with pytest.raises(ValueError, match="s must"):
        dg.depth_h(np.array([1.0]), 3)
    with pytest.raises(ValueError, match="alpha"):
        dg.depth_mirror_map(np.zeros(2), -1.0, 3)
