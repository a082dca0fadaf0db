"""Unit tests of `learndyn.barlow` (Ch 4): the gradient against autograd, the logistic law against an ODE solver,
GD on the aligned family against its exact scalar map, step-time predictions, the optimum, bad input, and fast
versions of the chapter's checks (logistic lag, step times, plateaus, final state)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

from learndyn import barlow
from learndyn.core import DivergenceError, History

LAM_V41 = np.array([1.0, 0.7, 0.5, 0.35, 0.2, 0.1, 0.05, 0.02, 0.0, -0.05])
LAM_V42 = np.array([1.0, 0.5, 0.25, 0.125, 0.06, 0.03, 0.015, 0.008, 0.004, 0.0, -0.05, -0.1])


def _random_gamma(m: int = 6, seed: int = 0) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((m, m))
    return (A + A.T) / 2


# --- Gamma ------------------------------------------------------------------------------------------------------
def test_gamma_matrix_is_the_symmetrised_cross_correlation():
    rng = np.random.default_rng(0)
    X, Xp = rng.standard_normal((50, 4)), rng.standard_normal((50, 4))
    loop = sum(np.outer(x, xp) + np.outer(xp, x) for x, xp in zip(X, Xp, strict=True)) / 100
    np.testing.assert_allclose(barlow.gamma_matrix(X, Xp), loop, atol=1e-13)
    W = rng.standard_normal((2, 4))
    C_emb = ((X @ W.T).T @ (Xp @ W.T) + (Xp @ W.T).T @ (X @ W.T)) / 100   # from the embeddings
    np.testing.assert_allclose(C_emb, W @ barlow.gamma_matrix(X, Xp) @ W.T, atol=1e-12)


def test_make_gamma_spectrum_and_padding():
    G, V = barlow.make_gamma([2.0, -1.0, 0.5], 5, seed=3)
    np.testing.assert_allclose(V.T @ V, np.eye(5), atol=1e-12)
    np.testing.assert_allclose(G @ V[:, 0], 2.0 * V[:, 0], atol=1e-12)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(G)), [-1, 0, 0, 0.5, 2], atol=1e-12)


# --- loss and gradient --------------------------------------------------------------------------------------------
def test_grad_matches_autograd_batched():
    G = _random_gamma(6)
    W = np.random.default_rng(1).standard_normal((3, 2, 6))
    Wt = torch.tensor(W, requires_grad=True)
    barlow.barlow_loss(Wt, G).sum().backward()
    np.testing.assert_allclose(barlow.barlow_grad(W, G), Wt.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(barlow.barlow_loss(W, G), barlow.barlow_loss(Wt, G).detach().numpy(), rtol=1e-13)


# --- logistic law -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_logistic_solves_the_mode_ode(seed):
    rng = np.random.default_rng(seed)
    lam, a0 = rng.uniform(-0.5, 2.0, 5), 10 ** rng.uniform(-8, -1, 5)
    t = np.linspace(0, 6, 50)
    sol = solve_ivp(lambda _, a: 8 * lam * a * (1 - a), (0, 6), a0, t_eval=t, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(barlow.barlow_logistic(t[:, None], lam, a0), sol.y.T, rtol=1e-7, atol=1e-12)


def test_logistic_limits_and_time():
    lam, a0 = np.array([1.0, 0.3]), np.array([1e-6, 1e-3])
    np.testing.assert_allclose(barlow.barlow_logistic(0.0, lam, a0), a0)
    np.testing.assert_allclose(barlow.barlow_logistic(1e4, lam, a0), 1.0)
    t = barlow.barlow_time(lam, a0)
    np.testing.assert_allclose(barlow.barlow_logistic(t, lam, a0), 0.5, atol=1e-13)
    t9 = barlow.barlow_time(lam, a0, level=0.9)
    np.testing.assert_allclose(barlow.barlow_logistic(t9, lam, a0), 0.9, atol=1e-13)
    assert np.isinf(barlow.barlow_time(-0.1, 1e-3))
    assert barlow.barlow_logistic(5.0, -0.1, 1e-3) < 1e-3          # lam < 0: the mode decays


# --- the aligned family (V4.1) ---------------------------------------------------------------------------------------
def test_aligned_family_is_invariant_and_gd_follows_the_scalar_map():
    G, _ = barlow.make_gamma(LAM_V41, 10, seed=0)
    Q = np.linalg.qr(np.random.default_rng(2).standard_normal((4, 4)))[0]
    W0 = barlow.aligned_init(G, 4, 1e-3, Q=Q)
    hist = barlow.train_barlow_linear(G, W0, 2e-3, 1500, record_every=10, device="cpu")
    a_map = barlow.barlow_gd_map(LAM_V41[:4], LAM_V41[:4] * 1e-6, 2e-3, 1500)[::10]
    np.testing.assert_allclose(hist["eigC"], a_map, atol=1e-12)
    np.testing.assert_allclose(hist["modes"][:, 4:], 0.0, atol=1e-25)    # other modes stay exactly off


def test_v41_gd_within_the_lag_bound_of_the_logistic():
    G, _ = barlow.make_gamma(LAM_V41, 10, seed=0)
    eta, a0 = 2e-3, LAM_V41[:4] * 1e-6
    hist = barlow.train_barlow_linear(G, barlow.aligned_init(G, 4, 1e-3), eta, 4000, record_every=2, device="cpu")
    err = np.abs(hist["eigC"] - barlow.barlow_logistic(eta * hist.steps[:, None], LAM_V41[:4], a0)).max(axis=0)
    r = 8 * eta * LAM_V41[:4]
    assert np.all(err <= 0.07 * r * np.log(1 / a0))
    assert np.all(err >= 0.03 * r * np.log(1 / a0))      # the lag is real: the bound is not vacuous


# --- small random init: step times (V4.2), plateaus (V4.3), final state (V4.4) ---------------------------------------
@pytest.fixture(scope="module")
def small_init_run():
    G, V = barlow.make_gamma(LAM_V42, 12, seed=1)
    W0 = barlow.small_init(4, 12, np.array([1e-3, 1e-5]), seed=0)
    eta = 4e-3
    k_pred = barlow.barlow_gd_steps(LAM_V42[:4], barlow.effective_a0(W0, G, 4), eta)
    hist = barlow.train_barlow_linear(G, W0, eta, int(2 * k_pred.max()), record_every=2, device="cpu")
    return G, V, W0, eta, k_pred, hist


def test_v42_refined_step_times_within_half_a_step(small_init_run):
    G, _, W0, eta, k_pred, hist = small_init_run
    k_meas = barlow.measured_step_times(hist)
    np.testing.assert_allclose(k_meas, k_pred, atol=0.5)
    naive = barlow.barlow_gd_steps(LAM_V42[:4], barlow.effective_a0(W0, G, 4, refined=False), eta)
    assert np.max(np.abs(k_meas - naive) / k_meas) > 0.01        # the naive estimate is visibly off
    flow = barlow.barlow_step_times(W0, G, 4) / eta
    r_over_4 = np.broadcast_to(2 * eta * LAM_V42[:4], flow.shape)
    np.testing.assert_allclose(k_meas / flow - 1, r_over_4, atol=1.5e-3)


def test_v43_plateaus(small_init_run):
    *_, eta, k_pred, hist = small_init_run
    mids = np.sqrt(k_pred[:, :-1] * k_pred[:, 1:])
    for b in range(2):
        L = np.interp(mids[b], hist.steps, hist["loss"][:, b])
        np.testing.assert_allclose(L, [3, 2, 1], atol=0.05)


def test_v44_final_state_is_the_whitened_top_subspace(small_init_run):
    G, V, *_, hist = small_init_run
    W = hist.final["W"]
    C = W @ G @ np.swapaxes(W, -1, -2)
    assert np.abs(C - np.eye(4)).max() < 1e-10
    Ws = barlow.barlow_optimum(G, 4)
    np.testing.assert_allclose(Ws @ G @ Ws.T, np.eye(4), atol=1e-12)
    off = np.linalg.norm(W - W @ V[:, :4] @ V[:, :4].T, axis=(-2, -1)) / np.linalg.norm(W, axis=(-2, -1))
    assert off[0] < 0.05 and off[1] < off[0] / 5
    gap = np.linalg.norm(np.swapaxes(W, -1, -2) @ W - Ws.T @ Ws, axis=(-2, -1)) / np.linalg.norm(Ws.T @ Ws)
    assert gap[1] < 5e-3


def test_optimum_has_minimum_norm_among_global_minima():
    G, _ = barlow.make_gamma(LAM_V42, 12, seed=1)
    Ws = barlow.barlow_optimum(G, 4)
    lam, V = np.linalg.eigh(G)
    other = (V[:, -5:-1][:, ::-1] / np.sqrt(lam[-5:-1][::-1])).T      # uses modes 2..5: also C = I
    np.testing.assert_allclose(other @ G @ other.T, np.eye(4), atol=1e-10)
    assert np.linalg.norm(Ws) ** 2 == pytest.approx(np.sum(1 / LAM_V42[:4]))
    assert np.linalg.norm(other) > np.linalg.norm(Ws)


def test_effective_a0_refined_is_gram_schmidt():
    G, V = barlow.make_gamma(LAM_V42, 12, seed=1)
    W0 = barlow.small_init(4, 12, 1e-3, seed=5)
    Qr, R = np.linalg.qr(W0 @ V[:, :4])          # QR = Gram-Schmidt of the columns w_j = W0 v_j
    np.testing.assert_allclose(barlow.effective_a0(W0, G, 4), LAM_V42[:4] * np.diag(R) ** 2, rtol=1e-10)
    np.testing.assert_allclose(barlow.effective_a0(W0, G, 4, refined=False),
                               LAM_V42[:4] * np.sum((W0 @ V[:, :4]) ** 2, axis=0), rtol=1e-12)


def test_negative_modes_decay_under_gd():
    G, V = barlow.make_gamma([1.0, -0.5], 2, seed=0)
    W0 = 0.02 * V[:, 1][None, :]                                     # only the mode with lambda = -0.5
    eta = 0.01
    hist = barlow.train_barlow_linear(G, W0, eta, 300, record_every=100, device="cpu")
    a = hist["modes"][:, 1]
    assert a[0] == pytest.approx(-0.5 * 4e-4)
    np.testing.assert_allclose(a, barlow.barlow_gd_map(-0.5, a[0], eta, 300)[::100], rtol=1e-10)
    assert abs(a[-1]) < abs(a[0]) * 1e-4


def test_measured_step_times_interpolates():
    h = History(np.array([0, 10, 20]), {"eigC": np.array([[0.0, 0.0], [0.4, 0.0], [0.6, 0.2]])})
    np.testing.assert_allclose(barlow.measured_step_times(h), [15.0, np.nan])


def test_digits_views_shapes_and_masking():
    X, Xp = barlow.digits_views(200, seed=1)
    assert X.shape == Xp.shape == (200, 64)
    assert 0.15 < np.mean(X == 0) < 0.3
    G = barlow.gamma_matrix(X, Xp)
    assert np.linalg.eigvalsh(G)[-1] > 0.2


# --- bad input ------------------------------------------------------------------------------------------------
def test_bad_input_raises_naming_the_argument():
    G = _random_gamma(5)
    W = np.zeros((2, 5))
    with pytest.raises(ValueError, match="Gamma must be symmetric"):
        barlow.barlow_grad(W, G + np.triu(np.ones((5, 5)), 1))
    with pytest.raises(ValueError, match="d \\(embedding dimension\\)"):
        barlow.barlow_optimum(G, 6)
    with pytest.raises(ValueError, match="d \\(embedding dimension\\)"):
        barlow.small_init(6, 5, 1e-3)
    with pytest.raises(ValueError, match="eta"):
        barlow.train_barlow_linear(G, W, 0.0, 10)
    with pytest.raises(ValueError, match="eta"):
        barlow.train_barlow_linear(G, W, -1e-3, 10)
    with pytest.raises(ValueError, match="fewer than d"):
        barlow.barlow_optimum(-np.eye(3), 2)
    with pytest.raises(ValueError, match="W must have shape"):
        barlow.barlow_grad(np.zeros((2, 4)), G)
    with pytest.raises(ValueError, match="eigs"):
        barlow.make_gamma(np.ones(4), 3)
    with pytest.raises(ValueError, match="a0"):
        barlow.barlow_time(1.0, 0.0)
    with pytest.raises(TypeError, match="steps"):
        barlow.train_barlow_linear(G, W, 0.1, 2.5)


def test_divergence_names_the_step():
    G, _ = barlow.make_gamma([1.0, 0.5], 2, seed=0)
    with pytest.raises(DivergenceError, match="at step"):
        barlow.train_barlow_linear(G, np.full((1, 2), 3.0), 5.0, 200, device="cpu")


# --- linear-phase criterion, frozen remainder, GD lag ------------------------------------------------------------
def test_linear_phase_a0_reduces_to_gram_schmidt_for_separated_modes():
    lam = np.array([1.0, 0.2, 0.04, 0.008, 0.0016, 0.0])
    G, _ = barlow.make_gamma(lam, 6, seed=0)
    W0 = barlow.small_init(3, 6, 1e-6, seed=1)
    np.testing.assert_allclose(barlow.linear_phase_a0(W0, G, 3), barlow.effective_a0(W0, G, 3), rtol=1e-3)


def test_linear_phase_a0_against_a_high_precision_eigenvalue():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 120
    lam = np.array([1.0, 0.9, 0.8, 0.5, 0.1, -0.2])
    G, V = barlow.make_gamma(lam, 6, seed=2)
    W0 = barlow.small_init(3, 6, 1e-4, seed=3)
    a = barlow.linear_phase_a0(W0, G, 3)
    w = mpmath.matrix((W0 @ V).tolist())
    for j in range(3):
        t = np.log((1 - a[j]) / a[j]) / (8 * lam[j])                  # the crossing time the function solved for
        D = mpmath.diag([mpmath.mpf(x) * mpmath.exp(8 * mpmath.mpf(x) * mpmath.mpf(t)) for x in lam])
        mu = sorted(mpmath.eigsy(w * D * w.T, eigvals_only=True), reverse=True)[j]
        assert abs(float(mu) * (1 + np.exp(-8 * lam[j] * t)) - 1) < 1e-7


def test_linear_phase_predicts_gd_with_close_eigenvalues():
    lam = 0.9 ** np.arange(12.0)
    G, _ = barlow.make_gamma(lam, 12, seed=4)
    W0 = barlow.small_init(4, 12, np.array([1e-2, 1e-6]), seed=7)
    k = barlow.barlow_gd_steps(lam[:4], barlow.linear_phase_a0(W0, G, 4), 2e-3)
    h = barlow.train_barlow_linear(G, W0, 2e-3, int(1.1 * k.max()), device="cpu")
    rise = 1 / (8 * 2e-3 * lam[:4])
    assert np.all(np.abs(barlow.measured_step_times(h) - k) / rise < 0.1)


def test_frozen_remainder_against_gd():
    lam = np.array([1.0, 0.5, 0.25, 0.125, 0.06, 0.03, 0.0, -0.1])
    G, V = barlow.make_gamma(lam, 8, seed=5)
    W0 = barlow.small_init(3, 8, np.array([1e-3, 1e-5]), seed=6)
    k = barlow.barlow_gd_steps(lam[:3], barlow.linear_phase_a0(W0, G, 3), 4e-3)
    steps = int(2 * k.max())
    W = barlow.train_barlow_linear(G, W0, 4e-3, steps, record_every=steps, device="cpu").final["W"]
    measured = np.sum((W @ V[:, 3:]) ** 2, axis=-2)                   # ||w_k||^2, k > d
    np.testing.assert_allclose(barlow.frozen_remainder(W0, G, 3, 4e-3, steps), measured, rtol=3e-3)


def test_lag_max_against_the_gd_map():
    lam = np.array([1.0, 0.3])
    a0 = 1e-6 * lam
    a = barlow.barlow_gd_map(lam, a0, 2e-3, 6000)
    err = np.abs(a - barlow.barlow_logistic(2e-3 * np.arange(6001)[:, None], lam, a0)).max(axis=0)
    np.testing.assert_allclose(barlow.barlow_lag_max(lam, a0, 2e-3), err, rtol=1e-3)
    r = 8 * 2e-3 * lam                                                 # leading order, eq. (ssl2-lag-max)
    approx = r / 16 * np.log(1 / a0) * (1 - 3 * np.log(2) / np.log(1 / a0))
    np.testing.assert_allclose(barlow.barlow_lag_max(lam, a0, 2e-3), approx, rtol=5e-3)


# --- VICReg and SimCLR ------------------------------------------------------------------------------------------------
def test_vicreg_gradient_and_modes():
    lam = np.array([1.0, 0.5, 0.2, 0.0, -0.1])
    G, V = barlow.make_gamma(lam, 5, seed=1)
    S = G + 0.3 * np.eye(5)
    W = np.random.default_rng(2).standard_normal((2, 5))
    Wt = torch.tensor(W, requires_grad=True)
    barlow.vicreg_loss(Wt, S, G, beta=0.7).backward()
    grad = 4 * (W @ S @ W.T - np.eye(2)) @ W @ S + 2 * 0.7 * W @ (2 * (S - G))
    np.testing.assert_allclose(Wt.grad.numpy(), grad, atol=1e-12)
    np.testing.assert_allclose(barlow.vicreg_loss(W, S, G, beta=0.7), barlow.vicreg_loss(Wt, S, G, 0.7).item())
    kappa, a_star, s = barlow.vicreg_modes(S, G, beta=1.0)
    np.testing.assert_allclose(kappa, 8 * lam, atol=1e-12)            # beta = 1: Barlow Twins' rates
    np.testing.assert_allclose(a_star, lam / (lam + 0.3), atol=1e-12)
    np.testing.assert_allclose(barlow.vicreg_modes(S, G, beta=0.0)[0], 8 * (lam + 0.3), atol=1e-12)


def test_vicreg_aligned_mode_follows_its_logistic():
    lam = np.array([1.0, 0.5, 0.25, 0.1])
    G, V = barlow.make_gamma(lam, 4, seed=3)
    S = G + 0.2 * np.eye(4)
    kappa, a_star, s = barlow.vicreg_modes(S, G, beta=1.0)
    W0 = 1e-3 * V[:, :2].T                                             # aligned, varsigma = 1e-3
    h = barlow.train_vicreg_linear(S, G, W0, 1e-3, 3000, device="cpu")
    u = barlow.barlow_gd_map(kappa[:2] / 8, s[:2] * 1e-6 / a_star[:2], 1e-3, 3000)   # exact for the aligned family
    np.testing.assert_allclose(h["eigC"], u * a_star[:2], atol=1e-12)


def test_info_nce_linear_linear_phase_is_two_over_tau_w_gamma():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4))
    Xp = X + 0.5 * rng.standard_normal((50, 4))
    X, Xp = X - X.mean(0), Xp - Xp.mean(0)
    W = torch.tensor(1e-6 * rng.standard_normal((2, 4)), requires_grad=True)
    barlow.info_nce_linear(W, torch.tensor(X), torch.tensor(Xp), 0.5).backward()
    expected = -(2 / 0.5) * W.detach().numpy() @ barlow.gamma_matrix(X, Xp)
    np.testing.assert_allclose(W.grad.numpy(), expected, rtol=1e-6, atol=1e-16)
    h = barlow.train_simclr_linear(X, Xp, W.detach().numpy(), 0.01, 3, tau=0.5, device="cpu")
    assert h["eigC"].shape == (4, 2) and h["modes"].shape == (4, 4)


def test_new_functions_reject_bad_input():
    G, _ = barlow.make_gamma([1.0, 0.5, -0.2], 3, seed=0)
    W0 = barlow.small_init(2, 3, 1e-3)
    with pytest.raises(ValueError, match="positive eigenvalues"):
        barlow.linear_phase_a0(barlow.small_init(3, 3, 1e-3), G, 3)
    with pytest.raises(ValueError, match="rows but d"):
        barlow.frozen_remainder(W0, G, 1, 1e-3, 10)
    with pytest.raises(ValueError, match="eta"):
        barlow.barlow_lag_max(1.0, 1e-6, -1.0)
    with pytest.raises(ValueError, match="a0"):
        barlow.barlow_lag_max(1.0, 0.7, 1e-3)
    with pytest.raises(ValueError, match="commute"):
        barlow.vicreg_modes(_random_gamma(3, 1), G)
    with pytest.raises(ValueError, match="tau"):
        barlow.train_simclr_linear(np.ones((4, 3)), np.ones((4, 3)), W0, 1e-3, 2, tau=0.0)
    with pytest.raises(ValueError, match="W0"):
        barlow.train_vicreg_linear(G + np.eye(3), G, np.ones(3), 1e-3, 2)


def test_dual_gd_equals_primal_gd():
    rng = np.random.default_rng(8)
    n, M = 20, 7
    F, Fp = rng.standard_normal((n, M)), rng.standard_normal((n, M))
    F, Fp = F + Fp, F + 0.5 * Fp                                        # correlated views
    A = np.vstack([F, Fp])
    G = barlow.gamma_matrix(F, Fp)
    B0 = 1e-2 * rng.standard_normal((2 * n, 2))
    hd = barlow.train_barlow_dual(A @ A.T, B0, 5e-3, 200, record_every=50, device="cpu")
    hp = barlow.train_barlow_linear(G, B0.T @ A, 5e-3, 200, record_every=50, device="cpu")
    np.testing.assert_allclose(hd["eigC"], hp["eigC"], atol=1e-12)
    np.testing.assert_allclose(A @ A.T @ hd.final["B"], A @ hp.final["W"].T, atol=1e-12)
    with pytest.raises(ValueError, match="K must be"):
        barlow.train_barlow_dual(np.ones((3, 3)), B0, 1e-3, 2)
    with pytest.raises(ValueError, match="B0"):
        barlow.train_barlow_dual(A @ A.T, B0[:5], 1e-3, 2)


def test_gd_map_reports_the_step_it_diverges():
    """a -> a (1 + r (1 - a) / 2)^2 at eta = 100 overflows at step 5, not at the last step of the run."""
    a, first = 0.01, None
    for k in range(1, 20):
        a = a * (1 + 4 * 100 * 0.5 * (1 - a)) ** 2 if np.isfinite(a) else a
        if not np.isfinite(a) and first is None:
            first = k
    with pytest.raises(DivergenceError, match=f"at step {first}:"):
        barlow.barlow_gd_map(0.5, 0.01, eta=100.0, steps=5000)
    with pytest.raises(ValueError, match="a0 must be finite"):
        barlow.barlow_gd_map(0.5, np.nan, eta=0.01, steps=5)


def test_empty_views_are_refused():
    with pytest.raises(ValueError, match="n, m >= 1"):
        barlow.gamma_matrix(np.zeros((0, 6)), np.zeros((0, 6)))


def test_next_term_of_the_step_count_against_the_exact_map():
    lam = np.array([1.0, 0.7, 0.5, 0.35])
    for eta, s in [(2e-3, 1e-6), (1e-2, 1e-12), (3e-2, 1e-9)]:
        a0 = lam * s
        steps = int(1.3 * barlow.barlow_gd_steps(lam, a0, eta).max())
        hist = History(np.arange(steps + 1), {"eigC": barlow.barlow_gd_map(lam, a0, eta, steps)})
        k = barlow.measured_step_times(hist)
        r = 8 * eta * lam
        old = np.abs(k - barlow.barlow_gd_steps(lam, a0, eta))
        new = np.abs(k - barlow.barlow_gd_steps(lam, a0, eta, next_term=True))
        assert np.all(new <= r / 8)                            # what is left: O(r) without the logarithm
        assert np.all(new < 0.6 * old)


def test_nonlinear_gain_vanishes_for_aligned_and_scales_with_chi():
    lam = np.array([1.0, 0.5, 0.25, 0.125, 0.06, 0.03])
    G, V = barlow.make_gamma(lam, m=6, seed=1)
    W_al = barlow.aligned_init(G, 3, varsigma=1e-3)
    assert np.allclose(barlow.nonlinear_gain(W_al, G, 3), 0.0, atol=1e-20)
    W0 = barlow.small_init(3, 6, np.array([1e-3, 1e-6]), seed=2)
    th = barlow.nonlinear_gain(W0, G, 3)
    assert th.shape == (2, 3) and np.all(th[:, 0] == 0) and np.all(th[:, 1:] > 0)
    assert np.all(th[1, 1:] < th[0, 1:])                       # smaller init, smaller gain


def test_nonlinear_gain_between_steps_covers_the_early_crossing():
    # the extra rate 8 (lam_i - lam_j) theta_ij acts from t_i to t_j: the factor multiplies theta, never lowers it
    lam = np.array([1.0, 0.5, 0.25, 0.125, 0.06, 0.03])
    G, _ = barlow.make_gamma(lam, m=6, seed=1)
    W0 = barlow.small_init(3, 6, np.array([1e-3, 1e-6]), seed=2)
    a0 = barlow.linear_phase_a0(W0, G, 3)
    th = barlow.nonlinear_gain(W0, G, 3, a0)
    th2 = barlow.nonlinear_gain(W0, G, 3, a0, between_steps=True)
    assert np.all(th2[:, 0] == 0) and np.all(th2[:, 1:] > 2 * th[:, 1:])
    # two modes, by hand: theta (1 + 8 (lam_1 - lam_2)(t_2 - t_1))
    t = barlow.barlow_time(lam[:3], a0[0])
    assert np.isclose(th2[0, 1], th[0, 1] * (1 + 8 * (lam[0] - lam[1]) * (t[1] - t[0])))
    # it covers the early crossing of mode 2 on a draw with a large chi (rho = 0.5, eps = 1e-2)
    lam_r = 0.5 ** np.arange(12.0)
    G_r, _ = barlow.make_gamma(lam_r, m=12, seed=13)
    W_r = barlow.small_init(4, 12, 1e-2, seed=14)
    mu = barlow.linear_phase_a0(W_r, G_r, 4)
    k = barlow.barlow_gd_steps(lam_r[:4], mu, 0.01, next_term=True)
    hist = barlow.train_barlow_linear(G_r, W_r, 0.01, int(1.2 * k[1]), device="cpu")
    err = np.abs(barlow.measured_step_times(hist)[1] - k[1])
    r2 = 8 * 0.01 * lam_r[1]
    gain2 = barlow.nonlinear_gain(W_r, G_r, 4, mu, between_steps=True)[1] / r2
    assert err > barlow.nonlinear_gain(W_r, G_r, 4, mu)[1] / r2   # theta alone undercounts
    assert err < gain2 + r2 / 48 * np.log(1 / mu[1]) + r2 / 10
    with pytest.raises((TypeError, ValueError)):
        barlow.nonlinear_gain(W0, G, 3, a0, between_steps="yes")
