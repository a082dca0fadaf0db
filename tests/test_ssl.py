"""Tests of learndyn.ssl, Chapter 3 part: fast versions of checks V3.1-V3.10, independent references (autograd of the
closed-form population loss, scipy solve_ivp on the matrix ODE, a loop implementation of NT-Xent), both sides of
the weight-decay threshold, and bad input."""

import math

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp
from scipy.optimize import fsolve

from learndyn import ssl
from learndyn.core import DivergenceError

SIGMA2 = 0.5
C = 1 + SIGMA2


def _random_pair(seed, d2=5, d1=4, scale=0.5):
    rng = np.random.default_rng(seed)
    return scale * rng.normal(size=(d2, d1)), scale * rng.normal(size=(d2, d2))


def _sym_init(seed, d=6, batch=None):
    g = torch.Generator().manual_seed(seed)
    shape = (d, d) if batch is None else (batch, d, d)
    Phi = 0.3 * torch.randn(*shape, generator=g, dtype=torch.float64)
    A = 0.3 * torch.randn(*shape, generator=g, dtype=torch.float64)
    return Phi, 0.5 * (A + A.mT) + 0.3 * torch.eye(d, dtype=torch.float64)


# ---- gradients (T3.1, V3.1) ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("stopgrad", [True, False])
def test_pop_grads_equal_autograd_of_population_loss(seed, stopgrad):
    """Independent reference: the population loss in closed form, 1/2 [c|P Phi|^2 - 2 tr(P Phi Phi_t^T) + c|Phi_t|^2],
    differentiated by autograd, with Phi_t = Phi.detach() for StopGrad. Random shapes and noise levels."""
    rng = np.random.default_rng(100 + seed)
    d1, d2 = rng.integers(1, 7, size=2)
    sigma2 = float(rng.uniform(0.05, 2.0))
    Phi0, P0 = rng.normal(size=(d2, d1)), rng.normal(size=(d2, d2))
    Phi = torch.tensor(Phi0, requires_grad=True)
    P = torch.tensor(P0, requires_grad=True)
    tgt = Phi.detach() if stopgrad else Phi
    c = 1 + sigma2
    loss = 0.5 * (c * ((P @ Phi) ** 2).sum() - 2 * ((P @ Phi) * tgt).sum() + c * (tgt**2).sum())
    ref = torch.autograd.grad(loss, (Phi, P))
    got = ssl.noncontrastive_pop_grads(Phi0, P0, sigma2, stopgrad=stopgrad)
    for r, g in zip(ref, got, strict=True):
        np.testing.assert_allclose(g, r.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("stopgrad", [True, False])
def test_mc_grads_match_population_within_sampling_error(stopgrad):
    """V3.1 (fast): the mean of 8 batches of 25,000 pairs is within 4 rms sampling errors of the population value."""
    Phi, P = _random_pair(0)
    pop = ssl.noncontrastive_pop_grads(Phi, P, SIGMA2, stopgrad=stopgrad)
    mc = [ssl.noncontrastive_mc_grads(Phi, P, SIGMA2, 25_000, stopgrad=stopgrad, seed=s) for s in range(8)]
    for i in range(2):
        g = np.stack([m[i].numpy() for m in mc])
        err = np.linalg.norm(g.mean(0) - pop[i])
        rms = math.sqrt(g.var(0, ddof=1).sum() / len(mc))
        assert err <= 4 * rms, (i, err, rms)
        assert err / np.linalg.norm(pop[i]) < 0.03


@pytest.mark.parametrize("stopgrad", [True, False])
def test_mc_grads_through_moments_equal_the_sum_over_pairs(stopgrad):
    """The sample loss evaluated through the second moments of the pairs (and cached between the StopGrad and
    no-StopGrad calls) has the gradient of the explicit mean over pairs, differentiated by autograd."""
    Phi, P = _random_pair(3)
    n, seed = 5_000, 7
    x, xp = ssl.two_view_gaussian(n, Phi.shape[1], math.sqrt(SIGMA2), seed=seed, device="cpu")
    Phi_t, P_t = torch.tensor(Phi, requires_grad=True), torch.tensor(P, requires_grad=True)
    target = xp @ (Phi_t.detach() if stopgrad else Phi_t).T
    loss = 0.5 * ((x @ Phi_t.T @ P_t.T - target) ** 2).sum(dim=1).mean()
    ref = torch.autograd.grad(loss, (Phi_t, P_t))
    for _ in range(2):                                          # the second call reads the cached moments
        got = ssl.noncontrastive_mc_grads(Phi, P, SIGMA2, n, stopgrad=stopgrad, seed=seed)
        for r, g in zip(ref, got, strict=True):
            np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-10, atol=1e-12)


def test_pop_grads_torch_numpy_and_batched_agree():
    Phi, P = _random_pair(1)
    g_np = ssl.noncontrastive_pop_grads(Phi, P, SIGMA2)
    g_t = ssl.noncontrastive_pop_grads(torch.tensor(Phi), torch.tensor(P), SIGMA2)
    g_b = ssl.noncontrastive_pop_grads(np.stack([Phi, 2 * Phi]), np.stack([P, P]), SIGMA2)
    for a, b, bb in zip(g_np, g_t, g_b, strict=True):
        assert isinstance(b, torch.Tensor)
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-14)
        np.testing.assert_allclose(a, bb[0], rtol=1e-14)


def test_two_view_gaussian_moments_and_seed():
    n, d = 200_000, 3
    x, xp = ssl.two_view_gaussian(n, d, math.sqrt(SIGMA2), seed=3, device="cpu")
    assert x.shape == xp.shape == (n, d) and x.dtype == torch.float64
    se = 5 * math.sqrt(2) * C / math.sqrt(n)  # 5 standard errors of an entry of a sample second moment
    np.testing.assert_allclose((x.T @ x / n).numpy(), C * np.eye(d), atol=se)
    np.testing.assert_allclose((xp.T @ x / n).numpy(), np.eye(d), atol=se)
    x2, _ = ssl.two_view_gaussian(n, d, math.sqrt(SIGMA2), seed=3, device="cpu")
    assert torch.equal(x, x2)


# ---- collapses (T3.2, V3.2, V3.3, V3.8) ------------------------------------------------------------------------------
def test_no_predictor_gd_is_exact():
    Phi0 = np.random.default_rng(2).normal(size=(4, 4))
    h, k = 0.05, 60
    hist = ssl.simulate_noncontrastive(Phi0, np.eye(4), SIGMA2, h=h, t_max=h * k, use_predictor=False, method="euler",
                                       record_every=k, device="cpu")
    np.testing.assert_allclose(hist.final["Phi"][0], (1 - h * SIGMA2) ** k * Phi0, rtol=1e-12)
    np.testing.assert_allclose(hist.final["P"][0], np.eye(4))


def test_no_stopgrad_norm_bound():
    Phi0, P0 = _random_pair(3, d2=4, d1=4)
    hist = ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, t_max=5.0, h=0.01, stopgrad=False, symmetric_predictor=False,
                                       record_every=10, device="cpu")
    bound = np.exp(-SIGMA2 * hist["t"]) * np.linalg.norm(Phi0)
    assert np.all(hist["phi_norm"][:, 0] <= bound * (1 + 1e-6))


def test_weight_decay_bound_above_threshold():
    Phi0, P0 = _sym_init(4)
    wd = 0.2
    hist = ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, wd=wd, t_max=40.0, h=0.05, record_every=20, device="cpu")
    bound = np.exp(-(wd - 1 / (4 * C)) * hist["t"]) * np.linalg.norm(Phi0.numpy())
    assert np.all(hist["phi_norm"][:, 0] <= bound * (1 + 1e-6))


@pytest.mark.parametrize("sigma2", [0.25, 0.5, 1.0])
def test_threshold_both_sides(sigma2):
    """Balanced start between p*- and p*+: survives just below lambda_c, collapses just above (mode ODE)."""
    c = 1 + sigma2
    lam_c = 1 / (4 * c)
    p0 = 1 / (2 * c)  # the merge point: above p*- for every lambda < lambda_c
    for factor, survives in ((0.9, True), (1.1, False)):
        p, s = ssl.integrate_modes(p0, p0**2, sigma2, factor * lam_c, [0.0, 3000.0])
        fp = ssl.tian_fixed_points(sigma2, factor * lam_c)
        if survives:
            assert fp is not None and abs(p[-1] - fp[1]) < 1e-6 and abs(s[-1] - fp[1] ** 2) < 1e-6
        else:
            assert fp is None and abs(p[-1]) < 1e-6 and s[-1] < 1e-9


def test_threshold_matrix_flow_both_sides_of_saddle():
    """V3.8 (fast): balanced init P = p0 I, Phi = p0 U at lambda = 0.1: p0 = 0.3 > p*- survives, 0.1 < p*- collapses."""
    U = np.linalg.qr(np.random.default_rng(5).normal(size=(3, 3)))[0]
    p0 = np.array([0.3, 0.1])
    hist = ssl.simulate_noncontrastive(p0[:, None, None] * U, p0[:, None, None] * np.eye(3), SIGMA2, wd=0.1,
                                       t_max=80.0, h=0.05, record_every=400, device="cpu")
    p_minus, p_plus = ssl.tian_fixed_points(SIGMA2, 0.1)
    np.testing.assert_allclose(hist["eigP"][-1, 0], p_plus, atol=1e-6)
    np.testing.assert_allclose(hist["eigF"][-1, 0], p_plus**2, atol=1e-6)
    assert np.abs(hist["eigP"][-1, 1]).max() < 1e-2 and hist["eigF"][-1, 1].max() < 1e-4


# ---- balance (T3.3, V3.4) -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ema_beta", [None, 0.5])
def test_balance_law(ema_beta):
    Phi0, P0 = _random_pair(6, d2=4, d1=4)
    wds = np.array([0.0, 0.05])
    hist = ssl.simulate_noncontrastive(np.stack([Phi0, Phi0]), np.stack([P0, P0]), SIGMA2, wd=wds, t_max=10.0, h=0.01,
                                       symmetric_predictor=False, ema_beta=ema_beta, record_every=50, device="cpu")
    D = hist["balance"]
    law = np.exp(-2 * wds[None, :, None, None] * hist["t"][:, None, None, None]) * D[0]
    assert np.abs(D - law).max() <= 1e-6 * np.abs(D[0]).max()  # RK4 error at h = 0.01
    assert np.abs(D[-1, 1] - D[0, 1]).max() > 1e-3  # weight decay really changes it


# ---- modes, fixed points, alignment (T3.4, V3.5-V3.7) ---------------------------------------------------------------
def test_matrix_rk4_against_solve_ivp_unaligned():
    """Independent reference: scipy solve_ivp on the matrix ODE written out here in numpy."""
    Phi0, P0 = _random_pair(7, d2=3, d1=4)
    wd, T = 0.03, 5.0

    def f(_t, y):
        Phi, P = y[:12].reshape(3, 4), y[12:].reshape(3, 3)
        F = Phi @ Phi.T
        dPhi = P.T @ (np.eye(3) - C * P) @ Phi - wd * Phi
        dP = (np.eye(3) - C * P) @ F - wd * P
        return np.concatenate([dPhi.ravel(), dP.ravel()])

    ref = solve_ivp(f, (0, T), np.concatenate([Phi0.ravel(), P0.ravel()]), method="DOP853", rtol=1e-12, atol=1e-14)
    hist = ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, wd=wd, t_max=T, h=0.01, symmetric_predictor=False,
                                       record_every=1000, device="cpu")
    np.testing.assert_allclose(hist.final["Phi"][0], ref.y[:12, -1].reshape(3, 4), atol=1e-7)  # RK4 at h = 0.01
    np.testing.assert_allclose(hist.final["P"][0], ref.y[12:, -1].reshape(3, 3), atol=1e-7)


def test_euler_is_first_order():
    Phi0, P0 = _random_pair(8, d2=3, d1=3)
    ref = ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, t_max=2.0, h=0.01, symmetric_predictor=False, record_every=1000)
    errs = [np.abs(ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, t_max=2.0, h=h, method="euler",
                                               symmetric_predictor=False, record_every=1000).final["Phi"]
                   - ref.final["Phi"]).max()
            for h in (0.02, 0.01)]
    assert 1.7 < errs[0] / errs[1] < 2.3


def test_aligned_init_follows_mode_ode():
    rng = np.random.default_rng(9)
    Q = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    p0, s0 = np.array([-0.1, 0.05, 0.4, 0.9]), np.array([0.2, 0.05, 0.3, 0.6])
    hist = ssl.simulate_noncontrastive(Q @ np.diag(np.sqrt(s0)), Q @ np.diag(p0) @ Q.T, SIGMA2, wd=0.1, t_max=5.0,
                                       h=0.01, record_every=50, device="cpu")
    p, s = ssl.integrate_modes(p0, s0, SIGMA2, 0.1, hist["t"])
    np.testing.assert_allclose(np.sort(p, axis=1), hist["eigP"][:, 0], atol=1e-8)
    np.testing.assert_allclose(np.sort(s, axis=1), hist["eigF"][:, 0], atol=1e-8)
    assert hist["commutator"].max() < 1e-12


@pytest.mark.parametrize("sigma2,wd", [(0.5, 0.1), (0.5, 0.02), (1.0, 0.1), (0.25, 0.19)])
def test_fixed_points_against_root_finder(sigma2, wd):
    p_minus, p_plus = ssl.tian_fixed_points(sigma2, wd)
    for guess, expected in ((0.95 * p_minus, p_minus), (1.05 * p_plus, p_plus)):
        root = fsolve(lambda y: np.array(ssl.tian_mode_rhs(y[0], y[1], sigma2, wd)), [guess, guess**2], xtol=1e-12)
        np.testing.assert_allclose(root, [expected, expected**2], atol=1e-10)
    # stability: Jacobian (exact, quadratic field) has Re < 0 at p*+ and one positive eigenvalue at p*-
    c = 1 + sigma2
    for p, stable in ((p_plus, True), (p_minus, False)):
        J = np.array([[-c * p**2 - wd, 1 - c * p], [2 * p**2 * (1 - 2 * c * p), 2 * p * (1 - c * p) - 2 * wd]])
        assert (np.linalg.eigvals(J).real.max() < 0) == stable


def test_fixed_points_limits():
    assert ssl.tian_fixed_points(SIGMA2, 0.0) == pytest.approx((0.0, 1 / C))
    lam_c = 1 / (4 * C)
    assert ssl.tian_fixed_points(SIGMA2, lam_c) == pytest.approx((1 / (2 * C), 1 / (2 * C)))
    assert ssl.tian_fixed_points(SIGMA2, lam_c * (1 + 1e-9)) is None


def test_mode_rhs_balanced_cubic_and_conservation():
    p = np.linspace(-0.5, 1.0, 13)
    pm, pp = ssl.tian_fixed_points(SIGMA2, 0.1)
    np.testing.assert_allclose(ssl.tian_mode_rhs(p, p**2, SIGMA2, 0.1)[0], -C * p * (p - pm) * (p - pp), atol=1e-15)
    s = np.linspace(0.0, 1.0, 13)
    dp, ds = ssl.tian_mode_rhs(p, s, SIGMA2, 0.1)
    np.testing.assert_allclose(ds - 2 * p * dp, -0.2 * (s - p**2), atol=1e-14)  # d/dt (s - p^2) = -2 wd (s - p^2)
    dp_t, ds_t = ssl.tian_mode_rhs(p, s, SIGMA2, 0.1, tau=s)
    np.testing.assert_allclose(dp_t, dp)
    np.testing.assert_allclose(ds_t, ds)


def test_alignment_symmetric_vs_unsymmetrised():
    """V3.6a / V3.7 (fast): a symmetric predictor aligns; an unsymmetrised one with wd = 0 does not."""
    Phi0, P0 = _sym_init(10, d=5, batch=2)
    sym = ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, wd=0.0, t_max=60.0, h=0.05, record_every=1200, device="cpu")
    uns = ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, wd=0.0, t_max=60.0, h=0.05, symmetric_predictor=False,
                                      record_every=1200, device="cpu")
    assert sym["commutator"][-1].max() < 1e-6
    assert uns["commutator"][-1].min() > 1e-2


def test_commutator_ratio_values():
    A, B = np.diag([1.0, 0.0]), np.array([[0.0, 1.0], [1.0, 0.0]])
    assert ssl.commutator_ratio(A, B) == pytest.approx(1.0)
    assert ssl.commutator_ratio(A, np.diag([3.0, -1.0])) == 0.0
    assert ssl.commutator_ratio(np.zeros((2, 2)), B) == 0.0
    batch = ssl.commutator_ratio(torch.tensor(np.stack([A, A])), torch.tensor(np.stack([B, A])))
    np.testing.assert_allclose(batch, [1.0, 0.0])


def test_history_shapes_and_recording():
    Phi0, P0 = _sym_init(11, d=4, batch=3)
    hist = ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, wd=[0.0, 0.01, 0.02], t_max=1.1, h=0.1, record_every=4)
    assert list(hist.steps) == [0, 4, 8, 11]
    np.testing.assert_allclose(hist["t"], hist.steps * 0.1)
    assert hist["eigP"].shape == hist["eigF"].shape == hist["modeP"].shape == (4, 3, 4)
    assert hist["balance"].shape == hist["P"].shape == hist["F"].shape == (4, 3, 4, 4) and hist["loss"].shape == (4, 3)
    assert hist.final["Phi"].shape == (3, 4, 4)
    np.testing.assert_allclose(hist["P"][-1], hist.final["P"])
    np.testing.assert_allclose(hist["F"][-1], hist.final["Phi"] @ hist.final["Phi"].swapaxes(-1, -2), rtol=1e-14)
    np.testing.assert_allclose(hist["balance"], hist["F"] - hist["P"].swapaxes(-1, -2) @ hist["P"], atol=1e-14)
    np.testing.assert_allclose(hist["commutator"], ssl.commutator_ratio(hist["P"], hist["F"]), atol=1e-14)


def test_recorded_states_continue_a_run_exactly():
    """A run recorded every 5 steps passes through the states that 5-step runs restarted from each other reach."""
    Phi0, P0 = _sym_init(4, d=4)
    whole = ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, wd=0.02, t_max=0.2, h=0.01, record_every=5, device="cpu")
    Phi, P = Phi0.numpy(), P0.numpy()
    for k in range(1, 5):
        seg = ssl.simulate_noncontrastive(Phi, P, SIGMA2, wd=0.02, t_max=0.05, h=0.01, record_every=5, device="cpu")
        Phi, P = seg.final["Phi"][0], seg.final["P"][0]
        np.testing.assert_allclose(whole["P"][k, 0], P, rtol=0, atol=1e-15)
        np.testing.assert_allclose(whole["F"][k, 0], Phi @ Phi.T, rtol=0, atol=1e-15)


def test_torch_loop_of_other_devices_matches_the_numpy_loop(monkeypatch):
    """Off the CPU the simulators loop on the tensors themselves: that path (forced here on the CPU) gives the numpy
    loop's records to rounding, for all three simulators."""
    from learndyn import ssl_sim

    Phi0, P0 = _sym_init(8, d=4, batch=2)
    runs = [lambda: ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, wd=[0.0, 0.05], t_max=2.0, h=0.05, record_every=8,
                                                ema_beta=0.5, alpha_p=[1.0, 2.0], device="cpu"),
            lambda: ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, t_max=1.0, h=0.05, stopgrad=False,
                                                symmetric_predictor=False, method="euler", device="cpu"),
            lambda: ssl.simulate_directpred(Phi0, SIGMA2, wd=[0.0, 0.02], t_max=2.0, h=0.05, record_every=8,
                                            device="cpu"),
            lambda: ssl.simulate_spectral_contrastive(Phi0, SIGMA2, wd=[0.0, 0.5], t_max=0.5, h=0.01, record_every=8,
                                                      device="cpu")]
    on_numpy = [run() for run in runs]
    monkeypatch.setattr(ssl_sim, "_host", lambda x: x)
    for run, ref in zip(runs, on_numpy, strict=True):
        hist = run()
        assert sorted(hist.metrics) == sorted(ref.metrics)
        for key, value in ref.metrics.items():
            np.testing.assert_allclose(hist[key], value, rtol=1e-10, atol=1e-12, err_msg=key)
        np.testing.assert_allclose(hist.final["Phi"], ref.final["Phi"], rtol=1e-12, atol=1e-14)


def test_numpy_loop_matches_the_torch_arithmetic():
    """The CPU loop runs on numpy views; one RK4 step of the same field in torch (core.rk4_step) agrees."""
    from learndyn.core import rk4_step

    Phi0, P0 = _random_pair(21, d2=4, d1=5)
    h = 0.05
    run = ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, wd=0.03, h=h, t_max=h, symmetric_predictor=False,
                                      record_every=1, device="cpu")

    def field(state):
        g_phi, g_p = ssl.noncontrastive_pop_grads(state[0], state[1], SIGMA2)
        return (-g_phi - 0.03 * state[0], -g_p - 0.03 * state[1])

    Phi1, P1 = rk4_step(field, (torch.tensor(Phi0), torch.tensor(P0)), h)
    np.testing.assert_allclose(run.final["Phi"][0], Phi1.numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(run.final["P"][0], P1.numpy(), rtol=1e-13, atol=1e-15)


def test_loss_metric_matches_monte_carlo_free_formula():
    Phi0, P0 = _random_pair(12, d2=3, d1=3)
    hist = ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, t_max=0.1, h=0.1, symmetric_predictor=False, record_every=1)
    x, xp = ssl.two_view_gaussian(200_000, 3, math.sqrt(SIGMA2), seed=1, device="cpu")
    r = x.numpy() @ (P0 @ Phi0).T - xp.numpy() @ Phi0.T
    per = 0.5 * (r**2).sum(1)
    assert abs(per.mean() - hist["loss"][0, 0]) < 5 * per.std() / math.sqrt(len(per))


# ---- NT-Xent (V3.9, V3.10) ------------------------------------------------------------------------------------------
def _nt_xent_loops(z1, z2, T):
    z = np.concatenate([z1, z2])
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    n2, total = len(z), 0.0
    for i in range(n2):
        j = (i + n2 // 2) % n2
        denom = sum(math.exp(z[i] @ z[k] / T) for k in range(n2) if k != i)
        total += -math.log(math.exp(z[i] @ z[j] / T) / denom)
    return total / n2


@pytest.mark.parametrize("seed", range(3))
def test_info_nce_against_loops(seed):
    rng = np.random.default_rng(seed)
    n, d = rng.integers(1, 7), rng.integers(2, 9)
    T = float(rng.uniform(0.2, 2.0))
    z1, z2 = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    got = ssl.info_nce(torch.tensor(z1), torch.tensor(z2), temperature=T).item()
    assert got == pytest.approx(_nt_xent_loops(z1, z2, T), rel=1e-12)


@pytest.mark.parametrize("n", [1, 2, 16])
def test_info_nce_at_collapse(n):
    v = torch.randn(7, dtype=torch.float64)
    z = (0.5 + torch.rand(2 * n, 1, dtype=torch.float64)) * v  # one direction, random positive lengths
    for T in (0.05, 0.5, 5.0):
        assert ssl.info_nce(z[:n], z[n:], T).item() == pytest.approx(math.log(2 * n - 1), abs=1e-12)


def test_check_info_nce_accepts_right_and_rejects_wrong():
    ssl.check_info_nce(_nt_xent_loops)
    with pytest.raises(AssertionError, match="random embeddings"):
        ssl.check_info_nce(lambda z1, z2, T: 1.01 * _nt_xent_loops(z1, z2, T))
    with pytest.raises(AssertionError, match="collapse"):  # right on random embeddings, wrong at collapse
        ssl.check_info_nce(lambda z1, z2, T: math.log(2 * len(z1)) if np.allclose(
            z1 / np.linalg.norm(z1, axis=1, keepdims=True), z1[:1] / np.linalg.norm(z1[:1])) and len(z1) > 1
            else _nt_xent_loops(z1, z2, T))


def test_info_nce_is_differentiable():
    z1 = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(4, 3, dtype=torch.float64)
    ssl.info_nce(z1, z2).backward()
    assert torch.isfinite(z1.grad).all()


# ---- bad input ---------------------------------------------------------------------------------------------------
def test_bad_input_raises_naming_the_argument():
    Phi, P = _random_pair(13)
    with pytest.raises(ValueError, match="sigma2"):
        ssl.noncontrastive_pop_grads(Phi, P, -0.1)
    with pytest.raises(ValueError, match="sigma2"):
        ssl.tian_mode_rhs(0.1, 0.1, -1.0)
    with pytest.raises(ValueError, match="wd"):
        ssl.tian_fixed_points(0.5, -0.1)
    with pytest.raises(ValueError, match="wd"):
        ssl.simulate_noncontrastive(Phi, P, SIGMA2, wd=-0.01, symmetric_predictor=False)
    with pytest.raises(ValueError, match="wd"):
        ssl.simulate_noncontrastive(Phi, P, SIGMA2, wd=[0.1, 0.2], symmetric_predictor=False)
    with pytest.raises(ValueError, match="square"):
        ssl.noncontrastive_pop_grads(Phi, P[:, :3], SIGMA2)
    with pytest.raises(ValueError, match="do not match"):
        ssl.noncontrastive_pop_grads(Phi[:4], P, SIGMA2)
    with pytest.raises(ValueError, match="h"):
        ssl.simulate_noncontrastive(Phi, P, SIGMA2, h=0.0, symmetric_predictor=False)
    with pytest.raises(ValueError, match="P0 must be symmetric"):
        ssl.simulate_noncontrastive(Phi, P, SIGMA2)
    with pytest.raises(ValueError, match="method"):
        ssl.simulate_noncontrastive(Phi, P, SIGMA2, method="leapfrog", symmetric_predictor=False)
    with pytest.raises(ValueError, match="ema_beta"):
        ssl.simulate_noncontrastive(Phi, P, SIGMA2, ema_beta=0.5, stopgrad=False, symmetric_predictor=False)
    with pytest.raises(ValueError, match="temperature"):
        ssl.info_nce(torch.ones(2, 3), torch.ones(2, 3), temperature=0.0)
    with pytest.raises(ValueError, match="z1 and z2"):
        ssl.info_nce(torch.ones(2, 3), torch.ones(3, 3))
    with pytest.raises(ValueError, match="t_eval"):
        ssl.integrate_modes(0.1, 0.1, SIGMA2, 0.0, [1.0, 0.5])
    with pytest.raises(ValueError, match="s0"):
        ssl.integrate_modes(0.1, -0.1, SIGMA2, 0.0, [0.0, 1.0])
    with pytest.raises(ValueError, match="sigma"):
        ssl.two_view_gaussian(10, 3, -1.0)
    with pytest.raises(TypeError, match="n"):
        ssl.noncontrastive_mc_grads(Phi, P, SIGMA2, 10.5)


def test_divergence_names_the_step():
    Phi0, P0 = 10 * np.eye(3), 10 * np.eye(3)
    with pytest.raises(DivergenceError, match="step"):
        ssl.simulate_noncontrastive(Phi0, P0, SIGMA2, h=1.0, t_max=200.0, method="euler", record_every=1, device="cpu")


# ---- closed forms and simulators added for the Ch 3 dynamics ------------------------------------------------------
def test_final_state_lambda0_against_ode():
    p0 = np.array([0.9, 0.9, -0.2, -0.2, 0.3, 0.1])
    s0 = np.array([0.5, 0.1, 0.3, 0.01, 0.05, 0.5])
    p_inf, s_inf = ssl.tian_final_state_lambda0(p0, s0, SIGMA2)
    p_ode, s_ode = ssl.integrate_modes(p0, s0, SIGMA2, 0.0, [0.0, 4000.0])
    np.testing.assert_allclose(p_inf, p_ode[-1], atol=1e-6)
    np.testing.assert_allclose(s_inf, s_ode[-1], atol=1e-6)
    assert s_inf[1] == 0 and s_inf[3] == 0          # the two collapsing cases
    with pytest.raises(ValueError, match="s0"):
        ssl.tian_final_state_lambda0(0.1, -1.0, SIGMA2)


@pytest.mark.parametrize("wd", [0.0, 0.02, 0.1])
def test_balanced_time_against_ode(wd):
    fp = (0.0, 1 / C) if wd == 0 else ssl.tian_fixed_points(SIGMA2, wd)
    p0 = np.array([fp[0] + 0.05, fp[1] + 0.3]) if wd else np.array([0.1, 1.0])
    t = np.array([0.0, 1.0, 5.0, 20.0])
    p_t, _ = ssl.integrate_modes(p0, p0**2, SIGMA2, wd, t)
    got = ssl.balanced_time(np.broadcast_to(p0, p_t.shape)[1:], p_t[1:], SIGMA2, wd)
    np.testing.assert_allclose(got, np.broadcast_to(t[:, None], p_t.shape)[1:], rtol=1e-7)
    with pytest.raises(ValueError):
        ssl.balanced_time(0.1, 0.2, SIGMA2, 0.3)            # above the threshold


def test_optimal_predictor_limits_and_gradient():
    rng = np.random.default_rng(0)
    Phi = rng.normal(size=(4, 4))
    F = Phi @ Phi.T
    P = ssl.optimal_predictor(F, SIGMA2, 0.1)
    np.testing.assert_allclose(C * P @ F - F + 0.1 * P, 0, atol=1e-12)
    np.testing.assert_allclose(ssl.optimal_predictor(F, SIGMA2, 0.0), np.eye(4) / C, atol=1e-12)
    with pytest.raises(ValueError, match="symmetric"):
        ssl.optimal_predictor(Phi, SIGMA2)


def test_directpred_follows_balanced_ode():
    rng = np.random.default_rng(1)
    Phi0 = 0.2 * rng.normal(size=(4, 4))
    run = ssl.simulate_directpred(Phi0, SIGMA2, wd=0.02, h=0.02, t_max=10.0, record_every=100, device="cpu")
    s0 = np.linalg.eigvalsh(Phi0 @ Phi0.T)
    _, s_ode = ssl.integrate_modes(np.sqrt(s0), s0, SIGMA2, 0.02, run["t"])
    np.testing.assert_allclose(run["eigF"][:, 0], s_ode, rtol=1e-7, atol=1e-12)
    with pytest.raises(ValueError):
        ssl.simulate_directpred(np.ones(3), SIGMA2)


def test_alignment_rate_and_commutator_equation():
    rng = np.random.default_rng(2)
    A, Phi = rng.normal(size=(5, 5)), rng.normal(size=(5, 5))
    P, F, wd = 0.5 * (A + A.T), Phi @ Phi.T, 0.05
    dP = F - 0.5 * C * (P @ F + F @ P) - wd * P
    dF = P @ F + F @ P - C * (P @ P @ F + F @ P @ P) - 2 * wd * F
    K, dK = P @ F - F @ P, dP @ F - F @ dP + P @ dF - dF @ P
    M = 0.5 * C * F + C * P @ P - P
    np.testing.assert_allclose(dK, -(M @ K + K @ M) - 3 * wd * K, atol=1e-10)
    m = np.linalg.eigvalsh(M)
    assert ssl.alignment_rate(P, F, SIGMA2, wd) == pytest.approx(m[0] + m[1] + 3 * wd)
    with pytest.raises(ValueError):
        ssl.alignment_rate(np.eye(1), np.eye(1), SIGMA2)


def test_integrate_modes_general_matches_matrix_flow_and_scaling():
    rng = np.random.default_rng(3)
    Q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    phi0, p0 = np.array([0.2, 0.5, 0.9]), np.array([0.05, 0.3, 0.6])
    sim = ssl.simulate_noncontrastive(Q @ np.diag(phi0), Q @ np.diag(p0) @ Q.T, SIGMA2, wd=0.05, t_max=10.0, h=0.01,
                                      record_every=200, alpha_p=2.0, ema_beta=0.5, device="cpu")
    _, phi, _ = ssl.integrate_modes_general(p0, phi0, SIGMA2, 0.05, sim["t"], alpha_p=2.0, ema_beta=0.5)
    np.testing.assert_allclose(np.sort(phi**2, axis=1), sim["eigF"][:, 0], atol=1e-9)
    # alpha_p rescaling: s(alpha; phi0/sqrt(alpha)) = s(1; phi0) / alpha
    _, phi_a, _ = ssl.integrate_modes_general(p0, phi0 / 2.0, SIGMA2, 0.05, [0.0, 5.0], alpha_p=4.0)
    _, phi_1, _ = ssl.integrate_modes_general(p0, phi0, SIGMA2, 0.05, [0.0, 5.0])
    np.testing.assert_allclose(phi_a[-1] ** 2, phi_1[-1] ** 2 / 4.0, rtol=1e-8)
    with pytest.raises(ValueError, match="alpha_p"):
        ssl.simulate_noncontrastive(Q, Q @ Q.T, SIGMA2, alpha_p=-1.0)


def test_info_nce_grad_autograd_and_collapse():
    gen = torch.Generator().manual_seed(0)
    z1 = torch.randn(5, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(5, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    ref = torch.autograd.grad(ssl.info_nce(z1, z2, 0.3), (z1, z2))
    got = ssl.info_nce_grad(z1.detach(), z2.detach(), 0.3)
    for r, g in zip(ref, got, strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), atol=1e-14)
    z = torch.outer(torch.rand(10, dtype=torch.float64) + 0.5, torch.ones(4, dtype=torch.float64))
    assert max(g.abs().max().item() for g in ssl.info_nce_grad(z[:5], z[5:], 0.5)) < 1e-14
    with pytest.raises(ValueError):
        ssl.info_nce_grad(z1.detach(), z2.detach()[:3])


def test_info_nce_collapse_curvature():
    rng = np.random.default_rng(4)
    v = rng.normal(size=(6, 5))
    v[:, 0] = 0
    u = np.eye(5)[0]
    eps = 1e-3
    z = torch.tensor(u + eps * v)
    drop = (math.log(11) - ssl.info_nce(z, z, 0.7).item()) / eps**2
    assert drop == pytest.approx(ssl.info_nce_collapse_curvature(v, 0.7), rel=1e-4)
    assert ssl.info_nce_collapse_curvature(np.ones((3, 2)), 0.5) == 0.0
    with pytest.raises(ValueError):
        ssl.info_nce_collapse_curvature(np.ones(3), 0.5)


def test_spectral_contrastive_loss_grad_and_logistic():
    rng = np.random.default_rng(5)
    Phi = 0.5 * rng.normal(size=(3, 4))
    x, xp = ssl.two_view_gaussian(100_000, 4, math.sqrt(SIGMA2), seed=1)
    Phi_t = torch.tensor(Phi, requires_grad=True)
    g = torch.autograd.grad(ssl.spectral_contrastive_loss(x @ Phi_t.T, xp @ Phi_t.T), Phi_t)[0].numpy()
    pop = ssl.spectral_contrastive_pop_grad(Phi, SIGMA2)
    assert np.linalg.norm(g - pop) / np.linalg.norm(pop) < 0.03
    # the O(N D^2) loss equals the explicit double sum
    z1, z2 = torch.tensor(rng.normal(size=(6, 3))), torch.tensor(rng.normal(size=(6, 3)))
    gram = z1 @ z2.T
    explicit = -2 * gram.diagonal().mean() + ((gram**2).sum() - (gram.diagonal() ** 2).sum()) / 30
    assert ssl.spectral_contrastive_loss(z1, z2).item() == pytest.approx(explicit.item(), rel=1e-12)
    run = ssl.simulate_spectral_contrastive(0.05 * rng.normal(size=(4, 4)), SIGMA2, wd=0.3, h=0.005, t_max=2.0,
                                            record_every=50, device="cpu")
    s0 = run["eigF"][0, 0]
    np.testing.assert_allclose(run["eigF"][:, 0], ssl.spectral_contrastive_modes(s0, SIGMA2, 0.3, run["t"][:, None]),
                               rtol=1e-7, atol=1e-12)
    assert ssl.spectral_contrastive_modes(0.1, SIGMA2, 0.3, 1e3) == pytest.approx((1 - 0.3 / 4) / C**2)
    with pytest.raises(ValueError):
        ssl.spectral_contrastive_modes(0.1, SIGMA2, 5.0, 1.0)
    with pytest.raises(ValueError):
        ssl.spectral_contrastive_loss(z1[:1], z2[:1])


def test_spectral_contrastive_mc_grad_is_autograd_of_the_sampled_loss():
    rng = np.random.default_rng(6)
    Phi = 0.5 * rng.normal(size=(3, 4))
    x, xp = ssl.two_view_gaussian(20_000, 4, math.sqrt(SIGMA2), seed=2)
    Phi_t = torch.tensor(Phi, requires_grad=True)
    ref = torch.autograd.grad(ssl.spectral_contrastive_loss(x @ Phi_t.T, xp @ Phi_t.T), Phi_t)[0].numpy()
    got = ssl.spectral_contrastive_mc_grad(Phi, SIGMA2, 20_000, seed=2)
    assert isinstance(got, torch.Tensor) and got.shape == (3, 4)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-14)
    pop = ssl.spectral_contrastive_pop_grad(Phi, SIGMA2)
    mean = np.mean([ssl.spectral_contrastive_mc_grad(Phi, SIGMA2, 20_000, seed=s).numpy() for s in range(5)], axis=0)
    assert np.linalg.norm(mean - pop) / np.linalg.norm(pop) < 0.05
    with pytest.raises(ValueError, match="sigma2"):
        ssl.spectral_contrastive_mc_grad(Phi, -0.5, 100)
    with pytest.raises(ValueError, match="n"):
        ssl.spectral_contrastive_mc_grad(Phi, SIGMA2, 1)
    with pytest.raises(ValueError, match="Phi"):
        ssl.spectral_contrastive_mc_grad(np.ones(4), SIGMA2, 100)
    with pytest.raises(ValueError, match="Phi"):
        ssl.spectral_contrastive_mc_grad(np.full((3, 4), np.nan), SIGMA2, 100)
    with pytest.raises(TypeError, match="seed"):
        ssl.spectral_contrastive_mc_grad(Phi, SIGMA2, 100, seed=1.5)


def test_mode_field_is_the_mode_rhs_checked_once():
    field = ssl.tian_mode_field(SIGMA2, 0.1, alpha_p=2.0)
    p, s = np.array([0.3, -0.1, 0.8]), np.array([0.2, 0.05, 0.6])
    want = np.stack(ssl.tian_mode_rhs(p, s, SIGMA2, 0.1, alpha_p=2.0))
    np.testing.assert_allclose(field(0.0, np.stack([p, s])), want, rtol=1e-15)
    np.testing.assert_allclose(field(1.0, np.array([0.3, 0.2])), want[:, 0], rtol=1e-15)
    sol = solve_ivp(ssl.tian_mode_field(SIGMA2, 0.1), (0.0, 50.0), [0.3, 0.09], method="DOP853", rtol=1e-12,
                    atol=1e-14)
    p_ode, s_ode = ssl.integrate_modes(0.3, 0.09, SIGMA2, 0.1, [0.0, 50.0])
    np.testing.assert_allclose(sol.y[:, -1], [p_ode[-1], s_ode[-1]], rtol=1e-9)
    with pytest.raises(ValueError, match="sigma2"):
        ssl.tian_mode_field(-1.0, 0.1)
    with pytest.raises(ValueError, match="wd"):
        ssl.tian_mode_field(SIGMA2, -0.1)
    with pytest.raises(TypeError, match="wd"):
        ssl.tian_mode_field(SIGMA2, "0.1")
    with pytest.raises(ValueError, match="alpha_p"):
        ssl.tian_mode_field(SIGMA2, 0.1, alpha_p=0.0)


def test_gpu_variant_script_runs_tiny():
    """The GPU-scale variant (bench/ssl_digits_gpu.py, off by default) at a tiny size on the CPU."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "ssl_digits_gpu.py"
    spec = importlib.util.spec_from_file_location("ssl_digits_gpu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--tiny"])
    assert out["d"] == 32 and np.isfinite(out["final_loss"]) and 0 <= out["commutator"] <= 2


# ---- issue 20: bad input, zero-length runs, t_eval = [0] ------------------------------------------------------
def test_runs_stop_at_T_and_T0_returns_the_start():
    Phi0, P0 = 0.5 * np.eye(3, 4), 0.3 * np.eye(3)
    with pytest.raises(ValueError, match="t_max = 0.001 is not a whole number of steps h = 0.05"):
        ssl.simulate_noncontrastive(Phi0, P0, 0.25, h=0.05, t_max=0.001, device="cpu")
    with pytest.raises(ValueError, match="t_max"):
        ssl.simulate_directpred(Phi0, 0.25, h=1.0, t_max=1.5, device="cpu")
    hist = ssl.simulate_noncontrastive(Phi0, P0, 0.25, h=0.05, t_max=0.0, device="cpu")
    assert hist.steps.tolist() == [0] and np.allclose(hist.final["Phi"][0], Phi0)
    assert ssl.simulate_noncontrastive(Phi0, P0, 0.25, h=0.05, t_max=0.1, device="cpu")["t"][-1] == pytest.approx(0.1)


def test_nan_inputs_are_bad_input_not_divergence():
    Phi0, P0 = 0.5 * np.eye(3, 4), 0.3 * np.eye(3)
    with pytest.raises(ValueError, match="Phi0 must be finite"):
        ssl.simulate_noncontrastive(np.full((3, 4), np.nan), P0, 0.25, t_max=1.0, device="cpu")
    with pytest.raises(ValueError, match="P0 must be finite"):
        ssl.simulate_noncontrastive(Phi0, np.full((3, 3), np.nan), 0.25, t_max=1.0, device="cpu")
    with pytest.raises(TypeError, match="Phi must be real"):
        ssl.noncontrastive_pop_grads(Phi0 + 1j, P0, 0.25)
    with pytest.raises(TypeError, match="stopgrad"):
        ssl.noncontrastive_pop_grads(Phi0, P0, 0.25, stopgrad="False")
    with pytest.raises(TypeError, match="Phi0.*requires_grad"):
        ssl.simulate_directpred(torch.ones(3, 4, requires_grad=True), 0.25, t_max=0.1, h=0.05, device="cpu")


def test_t_eval_zero_and_zero_noise():
    p, s = ssl.integrate_modes(0.3, 0.2, 0.25, 0.01, [0.0])
    assert p.tolist() == [0.3] and s.tolist() == [0.2]
    p, phi, phi_a = ssl.integrate_modes_general(0.3, 0.4, 0.25, 0.01, [0.0])
    assert p.tolist() == [0.3] and phi.tolist() == [0.4]
    x, xp = ssl.two_view_gaussian(5, 3, 0.0, device="cpu")
    assert torch.equal(x, xp)                                   # identical views
    g_phi, g_p = ssl.noncontrastive_pop_grads(0.5 * np.eye(3, 4), 0.3 * np.eye(3), 0.0)
    assert np.all(np.isfinite(g_phi)) and np.all(np.isfinite(g_p))
    with pytest.raises(ValueError, match="two_view_gaussian.*GiB"):
        ssl.two_view_gaussian(10**7, 10**4, 0.1)


def test_mixed_numpy_and_torch_arguments():
    Phi, P = torch.eye(3, 4, dtype=torch.float64), 0.3 * np.eye(3)
    g_phi, _ = ssl.noncontrastive_pop_grads(Phi, P, 0.25)
    assert isinstance(g_phi, torch.Tensor)
    A = torch.eye(3, dtype=torch.float32)
    assert np.isfinite(ssl.commutator_ratio(A, torch.ones(3, 3, dtype=torch.float64))).all()
    assert np.isfinite(ssl.commutator_ratio(np.eye(3, dtype=int), np.ones((3, 3), dtype=int))).all()


def test_integrate_modes_work_is_bounded_on_stiff_input():
    """A stiff start (|c p0| ~ 900) finishes within the work bound (Radau after DOP853) or says so, in seconds."""
    import time

    start = time.perf_counter()
    p, s = ssl.integrate_modes(686.8, 0.1, 0.25, 0.01, np.linspace(0, 5, 6))
    assert time.perf_counter() - start < 30
    # far from the fixed points p decays like exp(-wd t) once s ~ 0: p(5) ~ 686.8 e^{-0.05}
    assert np.isfinite(p).all() and abs(p[-1] - 686.8 * np.exp(-0.05)) < 1.0 and abs(s[-1]) < 1e-10
    # too many stiff modes for the sparse Radau fallback: a clear error, not minutes of work
    with pytest.raises(RuntimeError, match="too stiff .* work bound"):
        ssl.integrate_modes(np.full(2000, 686.8), 0.1, 0.25, 0.01, np.linspace(0, 5, 6))
    assert time.perf_counter() - start < 60
    # the chapter's inputs stay on the fast path and are unchanged
    p, s = ssl.integrate_modes(0.3, 0.09, SIGMA2, 0.1, [0.0, 200.0])
    assert abs(p[-1] - ssl.tian_fixed_points(SIGMA2, 0.1)[1]) < 1e-9
