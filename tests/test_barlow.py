"""Unit tests of `learndyn.barlow` (Ch 4): the gradient against autograd, the logistic law against an ODE solver,
GD on the aligned family against its exact scalar map, step-time predictions, the optimum, bad input, and fast
versions of the chapter's checks V4.1-V4.4."""

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
    lr, a0 = 2e-3, LAM_V41[:4] * 1e-6
    hist = barlow.train_barlow_linear(G, barlow.aligned_init(G, 4, 1e-3), lr, 4000, record_every=2, device="cpu")
    err = np.abs(hist["eigC"] - barlow.barlow_logistic(lr * hist.steps[:, None], LAM_V41[:4], a0)).max(axis=0)
    r = 8 * lr * LAM_V41[:4]
    assert np.all(err <= 0.07 * r * np.log(1 / a0))
    assert np.all(err >= 0.03 * r * np.log(1 / a0))      # the lag is real: the bound is not vacuous


# --- small random init: step times (V4.2), plateaus (V4.3), final state (V4.4) ---------------------------------------
@pytest.fixture(scope="module")
def small_init_run():
    G, V = barlow.make_gamma(LAM_V42, 12, seed=1)
    W0 = barlow.small_init(4, 12, np.array([1e-3, 1e-5]), seed=0)
    lr = 4e-3
    k_pred = barlow.barlow_gd_steps(LAM_V42[:4], barlow.effective_a0(W0, G, 4), lr)
    hist = barlow.train_barlow_linear(G, W0, lr, int(2 * k_pred.max()), record_every=2, device="cpu")
    return G, V, W0, lr, k_pred, hist


def test_v42_refined_step_times_within_half_a_step(small_init_run):
    G, _, W0, lr, k_pred, hist = small_init_run
    k_meas = barlow.measured_step_times(hist)
    np.testing.assert_allclose(k_meas, k_pred, atol=0.5)
    naive = barlow.barlow_gd_steps(LAM_V42[:4], barlow.effective_a0(W0, G, 4, refined=False), lr)
    assert np.max(np.abs(k_meas - naive) / k_meas) > 0.01        # the naive estimate is visibly off
    flow = barlow.barlow_step_times(W0, G, 4) / lr
    np.testing.assert_allclose(k_meas / flow - 1, np.broadcast_to(2 * lr * LAM_V42[:4], flow.shape), atol=1.5e-3)  # r/4


def test_v43_plateaus(small_init_run):
    *_, lr, k_pred, hist = small_init_run
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
    lr = 0.01
    hist = barlow.train_barlow_linear(G, W0, lr, 300, record_every=100, device="cpu")
    a = hist["modes"][:, 1]
    assert a[0] == pytest.approx(-0.5 * 4e-4)
    np.testing.assert_allclose(a, barlow.barlow_gd_map(-0.5, a[0], lr, 300)[::100], rtol=1e-10)
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
    with pytest.raises(ValueError, match="lr"):
        barlow.train_barlow_linear(G, W, 0.0, 10)
    with pytest.raises(ValueError, match="lr"):
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
