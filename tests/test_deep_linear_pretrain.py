"""Unit tests of the correlated-input and greedy-pretraining functions of learndyn.deep_linear (Ch 2, section
"Greedy layer-wise pretraining, run"): independent references (train_chain for whitened inputs, torch autograd, the
squared loss summed over explicit data), exact decoupling, the quarter-of-the-imbalance departure of a converged
autoencoder, bad input; and a fast version of the chapter's fine-tuning check."""

import numpy as np
import pytest
import torch

from learndyn import deep_linear as dl
from learndyn.core import DivergenceError

N = 5
S5 = np.linspace(3.0, 1.0, N)
LAM = np.linspace(1.6, 0.6, N)


def _haar(n, rng):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


@pytest.fixture(scope="module")
def setup():
    task = dl.svd_task(N, N, S5, seed=3)
    Sxx = task.V @ np.diag(LAM) @ task.V.T
    return task, Sxx


def _decoupled(task, amp, rng):
    D = amp.shape[0]
    R = [task.V] + [_haar(N, rng) for _ in range(D - 1)] + [task.U]
    return [R[j + 1] @ np.diag(amp[j]) @ R[j].T for j in range(D)]


# ------------------------------------------------------------------------------------------- train_deep_linear
def test_whitened_inputs_are_train_chain(setup):
    task, _ = setup
    rng = np.random.default_rng(0)
    Ws = [0.3 * rng.standard_normal((N, N)) for _ in range(3)]
    a = dl.train_deep_linear(task.Sigma, np.eye(N), Ws, 0.05, 200, record_every=7, device="cpu")
    b = dl.train_chain(task.Sigma, Ws, 0.05, 200, record_every=7, device="cpu")
    np.testing.assert_array_equal(a.steps, b.steps)
    np.testing.assert_allclose(a["modes"], b["modes"], atol=1e-12)
    np.testing.assert_allclose(a["loss"], b["loss"], atol=1e-12)   # E - E_min = 1/2 ||Sigma - P||^2 when Sxx = I


def test_one_step_is_autograd_and_loss_is_the_data_loss(setup):
    task, Sxx = setup
    rng = np.random.default_rng(1)
    # explicit data with E[x x^T] = Sxx and E[y x^T] = Sigma exactly: x_i = Sxx^(1/2) z_i with n^-1 sum z z^T = I
    n = 40
    Z = np.linalg.qr(rng.standard_normal((n, N)))[0].T * np.sqrt(n)          # (N, n), Z Z^T / n = I
    X = task.V @ np.diag(np.sqrt(LAM)) @ task.V.T @ Z
    Y = task.Sigma @ np.linalg.inv(Sxx) @ X + rng.standard_normal((N, n)) @ (np.eye(n) - Z.T @ Z / n)
    np.testing.assert_allclose(X @ X.T / n, Sxx, atol=1e-12)
    np.testing.assert_allclose(Y @ X.T / n, task.Sigma, atol=1e-12)
    Ws = [0.5 * rng.standard_normal((N, N)) for _ in range(3)]
    eta = 0.01
    t = [torch.tensor(W, requires_grad=True) for W in Ws]
    P = t[2] @ t[1] @ t[0]
    E = 0.5 * ((torch.tensor(Y) - P @ torch.tensor(X)) ** 2).sum() / n          # 1/2 E||y - P x||^2
    E.backward()
    run = dl.train_deep_linear(task.Sigma, Sxx, Ws, eta, 1, device="cpu")
    for W, tt, W1 in zip(Ws, t, run.final["Ws"], strict=True):
        np.testing.assert_allclose(W1, W - eta * tt.grad.numpy(), atol=1e-12)
    Pstar = task.Sigma @ np.linalg.inv(Sxx)
    E_min = 0.5 * np.sum((Y - Pstar @ X) ** 2) / n
    assert np.isclose(run["loss"][0], E.item() - E_min, rtol=1e-10)


def test_decoupled_start_stays_decoupled_and_bad_input(setup):
    task, Sxx = setup
    rng = np.random.default_rng(2)
    Ws = _decoupled(task, rng.uniform(0.8, 1.2, (3, N)), rng)
    run = dl.train_deep_linear(task.Sigma, Sxx, Ws, 0.02, 300, U=task.U, V=task.V, device="cpu")
    assert run["offdiag"].max() < 1e-12
    with pytest.raises(ValueError, match="Sigma_xx"):
        dl.train_deep_linear(task.Sigma, -Sxx, Ws, 0.02, 3, device="cpu")
    with pytest.raises(ValueError, match="Sigma_xx"):
        dl.train_deep_linear(task.Sigma, np.eye(N + 1), Ws, 0.02, 3, device="cpu")
    with pytest.raises(TypeError, match="Ws"):
        dl.train_deep_linear(task.Sigma, Sxx, Ws[0], 0.02, 3, device="cpu")
    with pytest.raises(ValueError, match="chain"):
        dl.train_deep_linear(task.Sigma, Sxx, [Ws[0], np.zeros((N, N + 1))], 0.02, 3, device="cpu")
    with pytest.raises(ValueError, match="eta"):
        dl.train_deep_linear(task.Sigma, Sxx, Ws, 0.0, 3, device="cpu")
    with pytest.raises(ValueError, match="steps"):
        dl.train_deep_linear(task.Sigma, Sxx, Ws, 0.02, -1, device="cpu")
    with pytest.raises(DivergenceError, match="diverged"):
        dl.train_deep_linear(task.Sigma, Sxx, [10 * W for W in Ws], 1.0, 50, device="cpu")


# --------------------------------------------------------------------------------------------------- gd_chains
def test_chains_are_the_decoupled_network_with_correlated_inputs(setup):
    task, Sxx = setup
    rng = np.random.default_rng(4)
    amp = rng.uniform(0.8, 1.2, (4, N))
    amp[-1] = 0.0                                     # a zero top layer: no division by a_j anywhere
    run = dl.train_deep_linear(task.Sigma, Sxx, _decoupled(task, amp, rng), 0.01, 400, U=task.U, V=task.V,
                               device="cpu")
    ch = dl.gd_chains(task.svals, LAM, amp, 0.01, 400)
    np.testing.assert_allclose(run["modes"], ch["modes"], atol=1e-12)
    np.testing.assert_allclose(run["loss"], ch["loss"], atol=1e-12)
    assert ch["modes"][-1] == pytest.approx(S5 / LAM, rel=1e-3)   # the target is s / lambda, not s


def test_chains_limits_and_bad_input():
    a0 = np.full((2, 3), 0.1)
    ch = dl.gd_chains([1.0, 2.0, 3.0], 1.0, a0, 0.05, 2000)            # lam = 1: the whitened two-layer modes
    np.testing.assert_allclose(ch["modes"][-1], [1.0, 2.0, 3.0], rtol=1e-8)
    one = dl.gd_chains([1.0, 2.0, 3.0], 1.0, a0, 0.05, 3)
    mu = 0.01
    np.testing.assert_allclose(one["modes"][1], (0.1 + 0.05 * 0.1 * (np.array([1, 2, 3]) - mu)) ** 2)
    batch = dl.gd_chains([1.0, 2.0, 3.0], [1.0, 0.5, 2.0], np.stack([a0, 2 * a0]), 0.05, 10)
    assert batch["modes"].shape == (11, 2, 3) and batch["loss"].shape == (11, 2)
    with pytest.raises(ValueError, match="a0"):
        dl.gd_chains([1.0], 1.0, [0.1, 0.2], 0.05, 3)
    with pytest.raises(ValueError, match="lam"):
        dl.gd_chains([1.0, 2.0, 3.0], [1.0, 2.0], a0, 0.05, 3)
    with pytest.raises(ValueError, match="s and lam must be positive"):
        dl.gd_chains([1.0, -2.0, 3.0], 1.0, a0, 0.05, 3)
    with pytest.raises(DivergenceError):
        dl.gd_chains([1.0, 2.0, 3.0], 1.0, 10 * a0 + 1, 5.0, 100)


# ------------------------------------------------------------------------------ decoupled_form, crossing_step
def test_decoupled_form_reads_amplitudes_and_departure(setup):
    task, _ = setup
    rng = np.random.default_rng(5)
    amp = rng.uniform(0.5, 1.5, (3, N))
    R, A, delta = dl.decoupled_form(_decoupled(task, amp, rng), task.V, U=task.U)
    np.testing.assert_allclose(A, amp, atol=1e-12)
    assert delta.max() < 1e-12 and len(R) == 4
    # an orthogonal layer is decoupled with respect to any basis, with unit amplitudes
    _, A, delta = dl.decoupled_form([_haar(N, rng)], _haar(N, rng))
    np.testing.assert_allclose(A, 1.0, atol=1e-12)
    assert delta.max() < 1e-12
    # a Gaussian layer is not; a zero top layer is (with U given)
    _, _, delta = dl.decoupled_form([rng.standard_normal((N, N)), np.zeros((N, N))], task.V, U=task.U)
    assert delta[0] > 0.1 and delta[1] == 0.0
    with pytest.raises(ValueError, match="V"):
        dl.decoupled_form([np.eye(N)], 2 * np.eye(N))
    with pytest.raises(ValueError, match=r"Ws\[0\]"):
        dl.decoupled_form([np.eye(N + 1)], np.eye(N))
    with pytest.raises(TypeError, match="Ws"):
        dl.decoupled_form(np.eye(N), np.eye(N))


def test_crossing_step_is_exact_for_geometric_decay():
    k = np.arange(100)
    loss = np.stack([2.0 * 0.7**k, 5.0 * 0.9**k, np.ones(100)], -1)
    got = dl.crossing_step(k, loss, frac=1e-3)
    np.testing.assert_allclose(got[:2], np.log(1e-3) / np.log([0.7, 0.9]), rtol=1e-12)
    assert np.isnan(got[2])                                                # never crosses
    with pytest.raises(ValueError, match="frac"):
        dl.crossing_step(k, loss, frac=1.0)
    with pytest.raises(ValueError, match="loss"):
        dl.crossing_step(k[:-1], loss)


# ------------------------------------------------------------------------------------ train_greedy_pretraining
def test_pretraining_gives_isometries_decoupled_to_a_quarter_of_the_imbalance(setup):
    task, Sxx = setup
    run = dl.train_greedy_pretraining(Sxx, 3, 0.25 / LAM[0], 200, 1e-2, seed=7, device="cpu")
    Ws = run.final["Ws"]
    assert run["loss"].shape == (201, 3) and np.all(run["loss"][-1] < 1e-12 * run["loss"][0])
    np.testing.assert_allclose(run.final["correlations"][1], Ws[0] @ Sxx @ Ws[0].T, atol=1e-12)
    R, A, delta = dl.decoupled_form(Ws, task.V)
    off = lambda X: np.linalg.norm(X - np.diag(np.diag(X)))  # noqa: E731
    for j, B in enumerate(run.final["imbalance"]):
        pred = off(R[j + 1].T @ B @ R[j + 1]) / (4 * np.linalg.norm(A[j]))
        nB = np.linalg.norm(B, 2)
        assert abs(delta[j] - pred) <= nB * np.linalg.norm(B) / (32 * (1 - nB)) / np.linalg.norm(A[j]) + 1e-12
        assert 1e-6 < delta[j] < 1e-3                                       # small but not zero (GD's drift)
        np.testing.assert_allclose(Ws[j] @ Ws[j].T, np.eye(N), atol=5 * nB)  # an isometry, up to the imbalance
    with pytest.raises(ValueError, match="Sigma_xx"):
        dl.train_greedy_pretraining(np.ones((N, N + 1)), 2, 0.1, 10, 1e-2)
    with pytest.raises(ValueError, match="scale"):
        dl.train_greedy_pretraining(Sxx, 2, 0.1, 10, 0.0)
    with pytest.raises(TypeError, match="seed"):
        dl.train_greedy_pretraining(Sxx, 2, 0.1, 10, 1e-2, seed=None)


def test_fine_tuning_from_pretrained_start_follows_the_chains(setup):
    """Fast version of the chapter's check: D = 3, the chains from the amplitudes read off the pretrained layers,
    within the first-order size of the departure (the error is second order)."""
    task, Sxx = setup
    pre = dl.train_greedy_pretraining(Sxx, 2, 0.25 / LAM[0], 200, 1e-2, seed=8, device="cpu")
    Ws = pre.final["Ws"] + [np.zeros((N, N))]
    _, A, delta = dl.decoupled_form(Ws, task.V, U=task.U)
    eta = 0.5 / max(lv * dl.chain_sharpness(sv / lv, 3) for lv, sv in zip(LAM, S5, strict=True))
    run = dl.train_deep_linear(task.Sigma, Sxx, Ws, eta, 60, U=task.U, V=task.V, device="cpu")
    ch = dl.gd_chains(task.svals, LAM, A, eta, 60)
    assert np.abs(run["modes"] - ch["modes"]).max() <= delta.sum() * np.max(S5 / LAM)
    wrong = dl.gd_chains(task.svals, 1.0, A, eta, 60)                     # whitened constants: far off
    assert np.abs(run["modes"] - wrong["modes"]).max() > 100 * delta.sum() * np.max(S5 / LAM)
