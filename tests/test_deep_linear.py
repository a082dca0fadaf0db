"""Unit tests of learndyn.deep_linear (Ch 1-2): limits, independent references (scipy solve_ivp, torch autograd),
both sides of thresholds, bad input, divergence; and fast versions of the chapter's checks V2.1-V2.9."""

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

from learndyn import deep_linear as dl
from learndyn.core import DivergenceError

S6 = [3.0, 2.0, 1.0, 0.5, 0.25, 0.1]


@pytest.fixture(scope="module")
def task():
    return dl.svd_task(6, 8, S6, seed=0)


def _ode(f, y0, t, **kw):
    return solve_ivp(f, (0, t[-1]), y0, t_eval=t, method="DOP853", rtol=1e-12, atol=1e-14, **kw)


# ---------------------------------------------------------------------------------------------- Ch 1 functions
def test_two_layer_grads_match_autograd(task):
    W1, W2 = dl.small_random_init(6, 10, 8, 0.5, seed=1, device="cpu")
    A, B = W1.clone().requires_grad_(), W2.clone().requires_grad_()
    dl.two_layer_loss(torch.as_tensor(task.Sigma), A, B).backward()
    g1, g2 = dl.two_layer_grads(task.Sigma, W1.numpy(), W2.numpy())
    np.testing.assert_allclose(g1, A.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(g2, B.grad.numpy(), atol=1e-12)
    assert np.isclose(dl.two_layer_loss(task.Sigma, W1.numpy(), W2.numpy()), 0.5 * np.sum(
        (task.Sigma - W2.numpy() @ W1.numpy()) ** 2))
    with pytest.raises(ValueError, match="shapes"):
        dl.two_layer_grads(task.Sigma, np.zeros((10, 5)), W2.numpy())


def test_balance_and_origin_hessian(task):
    W1, W2 = np.ones((4, 6)), np.ones((8, 4))
    np.testing.assert_allclose(dl.balance(W1, W2), 6 * np.ones((4, 4)) - 8 * np.ones((4, 4)))
    loss = lambda p: dl.two_layer_loss(torch.as_tensor(task.Sigma), p[:24].reshape(4, 6), p[24:].reshape(8, 4))  # noqa: E731
    H = torch.autograd.functional.hessian(loss, torch.zeros(56, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(np.linalg.eigvalsh(H), dl.origin_hessian_spectrum(S6, 4, 6, 8), atol=1e-10)
    with pytest.raises(ValueError, match="svals"):
        dl.origin_hessian_spectrum([-1.0], 3)


def test_scalar_gd_converges_and_diverges():
    u = dl.scalar_gd(1.0, 0.1, 0.1, 0.05, 2000)
    assert abs(u[-1] - 1.0) < 1e-10 and u.shape == (2001,)
    with pytest.raises(DivergenceError, match="step"):
        dl.scalar_gd(1.0, 3.0, 3.0, 1.0, 100)
    with pytest.raises(ValueError, match="eta"):
        dl.scalar_gd(1.0, 0.1, 0.1, -0.1, 10)


# ---------------------------------------------------------------------------------------------- tasks
def test_svd_task(task):
    np.testing.assert_allclose(task.U @ task.S @ task.V.T, task.Sigma, atol=1e-12)
    np.testing.assert_allclose(task.U.T @ task.U, np.eye(8), atol=1e-12)
    np.testing.assert_allclose(np.linalg.svd(task.Sigma, compute_uv=False), S6, atol=1e-12)
    with pytest.raises(ValueError, match="svals"):
        dl.svd_task(2, 3, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="svals"):
        dl.svd_task(3, 3, [1.0, -2.0])


def test_hierarchical_task_groups():
    t = dl.hierarchical_task(levels=5, n_features=1000, flip=0.1, seed=0)
    assert t.Sigma.shape == (1000, 32) and set(np.unique(t.Sigma)) == {-1.0, 1.0}
    s = t.svals
    # one group per tree level: sizes 1, 1, 2, 4, 8, 16, separated by gaps (V2.9 data)
    bounds = np.cumsum([1, 1, 2, 4, 8, 16])[:-1]
    for b in bounds:
        assert s[b - 1] - s[b] > 0.5 * np.max(np.abs(np.diff(s[b:b + 2]))) and s[b - 1] > s[b] + 1.0
    assert 75 < s[0] < 85 and 15 < s[-1] < 22
    with pytest.raises(ValueError, match="flip"):
        dl.hierarchical_task(flip=0.7)


# ---------------------------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("s,u0", [(0.5, 1e-2), (1.0, 1e-4), (3.0, 2.5), (2.0, 3.0)])
def test_riccati_against_ode_and_limits(s, u0):
    t = np.linspace(0, 8, 81)
    ode = _ode(lambda _, u: 2 * u * (s - u) / 2.0, [u0], t).y[0]
    np.testing.assert_allclose(dl.riccati_u(t, s, u0, tau=2.0), ode, atol=1e-9)
    assert dl.riccati_u(0.0, s, u0) == pytest.approx(u0, rel=1e-14)
    assert dl.riccati_u(1e4, s, u0) == pytest.approx(s, rel=1e-14)


def test_riccati_time_roundtrip_and_bad_input():
    s, u0, uf = np.array([0.5, 1.0, 3.0]), np.array([1e-3, 0.2, 1.0]), np.array([0.25, 0.99, 2.5])
    np.testing.assert_allclose(dl.riccati_u(dl.riccati_time(u0, uf, s, tau=3.0), s, u0, tau=3.0), uf, rtol=1e-11)
    eps = 1e-3
    assert dl.riccati_time(eps, 2.0 - eps, 2.0) == pytest.approx(np.log((2.0 - eps) / eps) / 2.0, rel=1e-12)
    with pytest.raises(ValueError, match="u0"):
        dl.riccati_time(1.5, 0.5, 1.0)
    with pytest.raises(ValueError, match="uf"):
        dl.riccati_time(0.1, 1.0, 1.0)
    with pytest.raises(ValueError, match="tau"):
        dl.riccati_u(1.0, 1.0, 0.1, tau=0.0)
    with pytest.raises(ValueError, match="s must be positive"):
        dl.riccati_u(1.0, -1.0, 0.1)


@pytest.mark.parametrize("s,u0", [(0.5, 1e-2), (1.0, 1e-4), (3.0, 1e-4)])
def test_gd_tracks_riccati_first_order(s, u0):  # V2.2
    def gap(eta):
        K = int(4 * dl.riccati_time(u0, s / 2, s, tau=1 / eta))
        u = dl.scalar_gd(s, np.sqrt(u0), np.sqrt(u0), eta, K)
        return np.abs(u - dl.riccati_u(np.arange(K + 1), s, u0, tau=1 / eta)).max()
    g1, g2 = gap(0.05 / s), gap(0.025 / s)
    assert g1 <= 0.15 * (0.05 / s) * s**2 * np.log(s / u0)
    assert 1.8 <= g1 / g2 <= 2.2


@pytest.mark.parametrize("s", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("eta_s", [0.01, 0.05, 0.15])
def test_gd_half_steps_within_one_step(s, eta_s):  # V2.3
    eta, u0 = eta_s / s, np.array([1e-2, 1e-4])
    u = dl.scalar_gd(s, np.sqrt(u0), np.sqrt(u0), eta, int(3 * np.log(s / 1e-4) / eta_s) + 10)
    k = dl.half_times(np.arange(len(u)), u[:, :, None], [s])[:, 0]
    assert np.all(np.abs(k - dl.gd_half_steps(s, u0, eta)) <= 1.0)


def test_gd_half_steps_flow_limit():
    s, u0 = 2.0, 1e-3
    for eta in (1e-3, 1e-5):
        ratio = dl.gd_half_steps(s, u0, eta, corrected=False) / dl.riccati_time(u0, s / 2, s, tau=1 / eta)
        assert ratio == pytest.approx(1 + eta * s / 2, abs=(eta * s) ** 2)


STARTS = [(0.3, 0.01), (0.01, 0.3), (0.5, -0.2), (1.0, 0.0), (0.05, 0.04), (-0.4, 0.7)]


@pytest.mark.parametrize("a0,b0", STARTS)
def test_hyperbolic_against_ode(a0, b0):  # V2.5
    s, tau, t = 2.0, 10.0, np.linspace(0, 80, 161)
    f = lambda _, y: [y[1] * (s - y[0] * y[1]) / tau, y[0] * (s - y[0] * y[1]) / tau]  # noqa: E731
    y = _ode(f, [a0, b0], t).y
    np.testing.assert_allclose(dl.hyperbolic_u(t, s, a0, b0, tau), y[0] * y[1], atol=1e-8)
    c0 = a0**2 - b0**2
    u = _ode(lambda _, u: dl.general_u_rhs(u, s, c0, tau), [a0 * b0], t).y[0]
    np.testing.assert_allclose(dl.hyperbolic_u(t, s, a0, b0, tau), u, atol=1e-8)
    if a0 * b0 < 1.0:
        hit = lambda _, y: y[0] * y[1] - 1.0  # noqa: E731
        hit.terminal = True
        t_ev = solve_ivp(f, (0, 500), [a0, b0], events=hit, method="DOP853", rtol=1e-12, atol=1e-14).t_events[0][0]
        assert dl.hyperbolic_time(1.0, s, a0, b0, tau) == pytest.approx(t_ev, rel=1e-7)


def test_hyperbolic_random_properties():
    rng = np.random.default_rng(1)
    for _ in range(20):
        s, a0, b0 = rng.uniform(0.2, 3), rng.uniform(-1, 1), rng.uniform(-1, 1)
        t = np.linspace(0, 20, 41)
        f = lambda _, y, s=s: [y[1] * (s - y[0] * y[1]), y[0] * (s - y[0] * y[1])]  # noqa: E731
        y = _ode(f, [a0, b0], t).y
        np.testing.assert_allclose(dl.hyperbolic_u(t, s, a0, b0), y[0] * y[1], atol=1e-8)


def test_hyperbolic_limits():
    s, t = 1.5, np.linspace(0, 30, 61)
    # balanced limit: both sides of the switch to the Riccati branch
    for rel in (1e-7, 1e-13):
        np.testing.assert_allclose(dl.hyperbolic_u(t, s, 0.1 * (1 + rel), 0.1), dl.riccati_u(t, s, 0.01), atol=1e-9)
    # balanced with u0 < 0: decays to the saddle; u0 = 0 stays
    assert abs(dl.hyperbolic_u(50.0, s, 0.3, -0.3)) < 1e-20 and dl.hyperbolic_u(5.0, s, 0.0, 0.0) == 0.0
    # lazy limit
    for a0 in (10.0, 30.0):
        lazy = dl.shallow_flow(t, s, 0.0, tau=1 / a0**2)
        assert np.abs(dl.hyperbolic_u(t, s, a0, 0.0) - lazy).max() <= s * (s / a0**2) ** 2
    assert dl.hyperbolic_u(0.0, s, 0.7, 0.2) == pytest.approx(0.14, rel=1e-12)
    assert dl.hyperbolic_u(1e3, s, 0.7, 0.2) == pytest.approx(s, rel=1e-12)


def test_hyperbolic_time_bad_input():
    with pytest.raises(ValueError, match="uf"):
        dl.hyperbolic_time(2.5, 2.0, 0.3, 0.1)
    with pytest.raises(ValueError, match="a0, b0"):
        dl.hyperbolic_time(1.0, 2.0, 0.3, -0.3)
    assert dl.hyperbolic_time(1.0, 2.0, 0.3, 0.3) == pytest.approx(dl.riccati_time(0.09, 1.0, 2.0), rel=1e-12)


def test_general_u_rhs_and_deep_rhs():
    u = np.linspace(0.01, 2, 7)
    np.testing.assert_allclose(dl.general_u_rhs(u, 1.5, 0.0, tau=2.0), 2 * u * (1.5 - u) / 2.0)
    np.testing.assert_allclose(dl.deep_balanced_rhs(u, 1.5, 2), 2 * u * (1.5 - u))
    np.testing.assert_allclose(dl.deep_balanced_rhs(u, 1.5, 1), 1.5 - u)
    with pytest.raises(ValueError, match="u must be non-negative"):
        dl.deep_balanced_rhs(-0.1, 1.0, 3)
    with pytest.raises(ValueError, match="D"):
        dl.deep_balanced_rhs(0.1, 1.0, 0)


def test_scalar_flows_match_closed_forms_and_check_once():
    """general_u_flow / deep_balanced_flow (DOP853 on the unchecked right-hand sides) against the closed forms and the
    quadrature; bad input is refused once, naming the argument."""
    t = np.linspace(0, 40, 81)
    for a0, b0 in [(0.3, 0.01), (0.5, -0.2), (0.05, 0.04)]:
        np.testing.assert_allclose(dl.general_u_flow(t, 2.0, a0 * b0, a0**2 - b0**2, tau=10.0),
                                   dl.hyperbolic_u(t, 2.0, a0, b0, tau=10.0), atol=1e-9)
    np.testing.assert_allclose(dl.deep_balanced_flow(t / 10, 1.5, 1e-2, 2), dl.riccati_u(t / 10, 1.5, 1e-2), atol=1e-10)
    t_h = float(dl.deep_balanced_time(1e-3, 0.5, 1.0, 3))
    u = dl.deep_balanced_flow(np.array([0.0, t_h]), 1.0, 1e-3, 3)
    assert u[0] == 1e-3 and u[1] == pytest.approx(0.5, rel=1e-8)
    assert dl.general_u_flow([0.0], 1.0, 0.2, 0.0).tolist() == [0.2]
    for bad, match in [({"t_eval": [1.0, 2.0]}, "t_eval"), ({"t_eval": [0.0, 2.0, 1.0]}, "t_eval"), ({"s": -1.0}, "s"),
                       ({"u0": np.nan}, "u0"), ({"c0": "x"}, "c0"), ({"tau": 0.0}, "tau"), ({"rtol": -1.0}, "rtol")]:
        with pytest.raises((ValueError, TypeError), match=match):
            dl.general_u_flow(**{"t_eval": t, "s": 1.0, "u0": 0.1, "c0": 0.0, **bad})
    for bad, match in [({"u0": -0.1}, "u0"), ({"D": 0}, "D"), ({"s": 0.0}, "s")]:
        with pytest.raises(ValueError, match=match):
            dl.deep_balanced_flow(**{"t_eval": t, "s": 1.0, "u0": 0.1, "D": 3, **bad})


def test_scalar_gd_names_the_first_bad_step():
    """The run is checked once, at the end: the step named is still the first non-finite one."""
    def first_bad(a: np.ndarray, b: np.ndarray) -> int:  # GD with a check after every step
        with np.errstate(over="ignore", invalid="ignore"):
            for k in range(1, 100):
                r = 1.0 - a * b
                a, b = a + b * r, b + a * r
                if not np.all(np.isfinite(a) & np.isfinite(b)):
                    return k
        return -1

    k = first_bad(np.full(2, 3.0), np.array([3.0, 0.1]))
    assert k > 1
    with pytest.raises(DivergenceError, match=f"at step {k} "):
        dl.scalar_gd_path(1.0, np.full(2, 3.0), np.array([3.0, 0.1]), 1.0, 100)


def test_torch_loops_match_numpy_loops(task, monkeypatch):
    """On the CPU the simulators' loops run in numpy, on an accelerator in torch, written once for both: run the torch
    path on the CPU (as an accelerator would) and compare every metric."""
    from learndyn import deep_linear_sim as dls
    W1, W2 = dl.small_random_init(6, 10, 8, 0.3, batch=3, seed=4, device="cpu")
    Sxx = task.V @ np.diag(np.linspace(1.5, 0.5, 6)) @ task.V.T
    runs = {
        "two_layer": lambda: dl.train_two_layer(task.Sigma, W1, W2, eta=torch.tensor([0.02, 0.05, 2.0]), steps=60,
                                                record_every=7, U=task.U, V=task.V, track=dls.TRACKS, device="cpu",
                                                on_divergence="flag"),
        "chain": lambda: dl.train_chain(task.Sigma, [W1, W2], eta=0.03, steps=40, record_every=3, device="cpu"),
        "shallow": lambda: dl.train_shallow(task.Sigma, W2 @ W1, eta=0.1, steps=30, device="cpu"),
        "deep": lambda: dl.train_deep_linear(task.Sigma[:6], Sxx, [W1, W1.transpose(-1, -2), 0.5 * torch.eye(6)[None]
                                                                   .expand(3, 6, 6)], 0.05, 40, device="cpu"),
    }
    ref = {name: run() for name, run in runs.items()}
    monkeypatch.setattr(dls, "_backend", lambda dev, *xs: list(xs))      # keep the tensors, as on an accelerator
    for name, run in runs.items():
        got = run()
        np.testing.assert_array_equal(got.steps, ref[name].steps)
        pairs = [(key, got[key], ref[name][key]) for key in ref[name].metrics]
        for key, val in ref[name].final.items():                        # final: arrays or lists of layers
            vals = val if isinstance(val, list) else [val]
            pairs += [(f"final {key}", np.asarray(g), v) for g, v in zip(
                got.final[key] if isinstance(val, list) else [got.final[key]], vals, strict=True)]
        for key, g, r in pairs:                                         # a diverged run: NaN or inf alike
            np.testing.assert_allclose(*(np.where(np.isfinite(x), x, np.nan) for x in (g, r)), rtol=1e-11, atol=1e-13,
                                       err_msg=f"{name}: {key}")
    at = ref["two_layer"].final["diverged_at"]
    assert at[0] == at[1] == -1 and at[2] > 0


def test_shallow_closed_forms(task):
    assert dl.shallow_flow(0.0, 2.0, 0.3) == pytest.approx(0.3, rel=1e-15)
    assert dl.shallow_flow(1e3, 2.0, 0.3) == pytest.approx(2.0)
    h = dl.train_shallow(task.Sigma, np.zeros((8, 6)), eta=0.05, steps=100, U=task.U, V=task.V, device="cpu")
    np.testing.assert_allclose(h["modes"], dl.shallow_gd(h.steps[:, None], S6, 0.0, 0.05), atol=1e-12)  # V2.7
    gap = np.abs(h["modes"] - dl.shallow_flow(h.steps[:, None], S6, 0.0, tau=20.0)).max(axis=0)
    assert np.all(gap <= np.array(S6) * 0.05 / (2 * np.e * 0.95))
    with pytest.raises(ValueError, match="eta"):
        dl.shallow_gd(3, 1.0, 0.0, 0.0)


def test_deep_balanced_time():
    s, u0 = 1.0, np.array([1e-4, 1e-2])
    np.testing.assert_allclose(dl.deep_balanced_time(u0, 0.5, s, 2, tau=3.0), dl.riccati_time(u0, 0.5, s, 3.0),
                               rtol=1e-10)
    np.testing.assert_allclose(dl.deep_balanced_time(u0, 0.5, s, 1), np.log((s - u0) / 0.5), rtol=1e-10)
    for D in (3, 4):
        ratio = dl.deep_balanced_time(1e-9, 0.5, 1.0, D) / (1e-9 ** (-(D - 2) / D) / (D - 2))
        assert 0.97 < ratio < 1.03
    with pytest.raises(ValueError, match="u0"):
        dl.deep_balanced_time(0.0, 0.5, 1.0, 3)


def test_chain_flow_and_gd(task):  # V2.8, fast
    s, u0, eta = 1.0, 1e-2, 0.01
    for D in (2, 3, 4):
        T = dl.deep_balanced_time(u0, 0.5, s, D)
        t = np.linspace(0, 2 * T, 30)
        a = _ode(lambda _, a, D=D: a ** (D - 1) * (s - a**D), [u0 ** (1 / D)], t).y[0]
        u = _ode(lambda _, u, D=D: dl.deep_balanced_rhs(u, s, D), [u0], t).y[0]
        np.testing.assert_allclose(a**D, u, atol=1e-8)
        h = dl.train_chain([[s]], [np.full((1, 1), u0 ** (1 / D))] * D, eta=eta, steps=int(1.2 * T / eta),
                           device="cpu")
        k = dl.half_times(h.steps, h["modes"], [s])[0]
        assert k * eta == pytest.approx(T, rel=eta * s)


# ---------------------------------------------------------------------------------------------- modes and u0
def test_decoupled_init_structure(task):
    a0 = np.array([0.3, 0.2, 0.1, 0.05, 0.02, 0.01])
    W1, W2 = dl.decoupled_init(task, 10, a0, 2 * a0, seed=3, device="cpu")
    M = task.U.T @ W2.numpy() @ W1.numpy() @ task.V
    np.testing.assert_allclose(M[:6, :6], np.diag(2 * a0**2), atol=1e-14)
    np.testing.assert_allclose(dl.mode_strengths(W1, W2, task.U, task.V), 2 * a0**2, atol=1e-14)
    W1b, W2b = dl.decoupled_init(task, 10, 0.1, 0.1, batch=3, seed=0, device="cpu")
    assert W1b.shape == (3, 10, 6) and W2b.shape == (3, 8, 10)
    with pytest.raises(ValueError, match="N2"):
        dl.decoupled_init(task, 4, 0.1, 0.1)
    with pytest.raises(ValueError, match="R must be an orthogonal"):
        dl.decoupled_init(task, 10, 0.1, 0.1, R=np.ones((10, 10)))
    with pytest.raises(ValueError, match="a0 and b0"):
        dl.decoupled_init(task, 10, np.ones(5), 0.1)


def test_small_random_init():
    A = dl.small_random_init(3, 4, 5, 0.1, batch=2, seed=7, device="cpu")
    B = dl.small_random_init(3, 4, 5, 0.1, batch=2, seed=7, device="cpu")
    assert A[0].shape == (2, 4, 3) and A[1].shape == (2, 5, 4) and A[0].dtype == torch.float64
    assert torch.equal(A[0], B[0]) and torch.equal(A[1], B[1])
    with pytest.raises(ValueError, match="scale"):
        dl.small_random_init(3, 4, 5, 0.0)
    with pytest.raises(TypeError, match="N1"):
        dl.small_random_init(3.0, 4, 5, 0.1)


def test_effective_u0(task):
    amp = np.array([0.3, 0.1, 0.05, 0.02, 0.01, 0.005])
    W1, W2 = dl.decoupled_init(task, 10, amp, amp, seed=4, device="cpu")
    np.testing.assert_allclose(dl.effective_u0(W1, W2, task.U, task.V, S6), amp**2, rtol=1e-12)
    W1, W2 = dl.small_random_init(6, 10, 8, 1e-3, batch=4, seed=2, device="cpu")
    ref, naive = (dl.effective_u0(W1, W2, task.U, task.V, S6, refined=r) for r in (True, False))
    assert ref.shape == (4, 6) and np.all(ref <= naive * (1 + 1e-12)) and np.allclose(ref[:, 0], naive[:, 0])
    np.testing.assert_allclose(dl.effective_u0(W1[1], W2[1], task.U, task.V, S6), ref[1], rtol=1e-12)
    with pytest.raises(ValueError, match="svals"):
        dl.effective_u0(W1, W2, task.U, task.V, np.ones(7))


def test_check_effective_u0_checker(task):
    dl.check_effective_u0(lambda W1, W2, U, V, s: dl.effective_u0(W1, W2, U, V, s))
    with pytest.raises(AssertionError, match="mode with s"):
        dl.check_effective_u0(lambda W1, W2, U, V, s: dl.effective_u0(W1, W2, U, V, s, refined=False))
    with pytest.raises(AssertionError, match="shape"):
        dl.check_effective_u0(lambda *args: np.zeros(3))


def test_half_times():
    steps = np.arange(0, 101, 10)
    modes = np.stack([steps / 100.0, steps / 400.0], axis=1)         # (K, 2): crosses 1/2 at 50 and never
    t = dl.half_times(steps, modes, [1.0, 1.0])
    assert t[0] == pytest.approx(50.0) and np.isnan(t[1])
    with pytest.raises(ValueError, match="modes"):
        dl.half_times(steps, modes[:5], [1.0, 1.0])


# ---------------------------------------------------------------------------------------------- simulators
def test_train_two_layer_decoupled_matches_scalar(task):  # V2.1, fast
    W1, W2 = dl.decoupled_init(task, 10, 1e-2, 1e-2, seed=0, device="cpu")
    h = dl.train_two_layer(task.Sigma, W1, W2, eta=0.01, steps=1500, U=task.U, V=task.V,
                           track=("modes", "offdiag"), device="cpu")
    np.testing.assert_allclose(h["modes"], dl.scalar_gd(S6, 1e-2, 1e-2, 0.01, 1500), atol=1e-10)
    assert h["offdiag"].max() <= 1e-12 and h.steps[0] == 0 and h.steps[-1] == 1500


def test_train_two_layer_one_step_and_batched_lr(task):
    W1, W2 = dl.small_random_init(6, 10, 8, 0.3, batch=3, seed=1, device="cpu")
    lrs = torch.tensor([0.01, 0.02, 0.05], dtype=torch.float64)
    h = dl.train_two_layer(task.Sigma, W1, W2, eta=lrs, steps=20, track=("loss",), device="cpu")
    for i, eta in enumerate(lrs.tolist()):
        A, B = W1[i].numpy().copy(), W2[i].numpy().copy()
        for _ in range(20):
            g1, g2 = dl.two_layer_grads(task.Sigma, A, B)
            A, B = A - eta * g1, B - eta * g2
        np.testing.assert_allclose(h.final["W1"][i], A, atol=1e-12)
        np.testing.assert_allclose(h.final["W2"][i], B, atol=1e-12)
    assert h["loss"].shape == (21, 3)
    with pytest.raises(ValueError, match="eta"):
        dl.train_two_layer(task.Sigma, W1, W2, eta=torch.ones(2), steps=1)
    with pytest.raises(ValueError, match="eta"):
        dl.train_two_layer(task.Sigma, W1, W2, eta=-0.1, steps=1)
    with pytest.raises(ValueError, match="track"):
        dl.train_two_layer(task.Sigma, W1, W2, eta=0.1, steps=1, track=("sharpness",))
    with pytest.raises(ValueError, match="shapes"):
        dl.train_two_layer(task.Sigma.T, W1, W2, eta=0.1, steps=1)


def test_train_two_layer_divergence(task):
    W1, W2 = dl.decoupled_init(task, 10, 0.5, 0.5, seed=0, device="cpu")
    with pytest.raises(DivergenceError, match="at step [0-9]+"):
        dl.train_two_layer(task.Sigma, W1, W2, eta=1.0, steps=200, device="cpu")
    Wb1, Wb2 = W1.expand(2, -1, -1), W2.expand(2, -1, -1)
    h = dl.train_two_layer(task.Sigma, Wb1, Wb2, eta=torch.tensor([1.0, 0.01]), steps=200, device="cpu",
                           on_divergence="flag")
    assert h.final["diverged_at"][0] > 0 and h.final["diverged_at"][1] == -1
    assert np.isfinite(h["loss"][-1, 1]) and not np.isfinite(h["loss"][-1, 0])
    with pytest.raises(ValueError, match="on_divergence"):
        dl.train_two_layer(task.Sigma, W1, W2, eta=0.1, steps=1, on_divergence="ignore")


def test_conservation_flow_and_gd_drift():  # V2.4, fast
    task = dl.svd_task(6, 8, S6, seed=0)
    V1, V2 = dl.small_random_init(6, 16, 8, 1.0, seed=3, device="cpu")
    V1, V2 = 0.3 * V1.numpy(), 0.01 * V2.numpy()
    flow = dl.flow_two_layer(task.Sigma, V1, V2, np.linspace(0, 30, 31))
    assert flow["balance_drift"].max() <= 1e-7 * (1 + np.linalg.norm(dl.balance(V1, V2), 2))
    g1, g2 = dl.two_layer_grads(task.Sigma, V1, V2)
    dC = dl.balance(V1 - 0.02 * g1, V2 - 0.02 * g2) - dl.balance(V1, V2)
    np.testing.assert_allclose(dC, 0.02**2 * (g1 @ g1.T - g2.T @ g2), atol=1e-12 * np.abs(dC).max())
    drift = []
    for eta in (0.04, 0.02):
        K = int(round(30 / eta))
        h = dl.train_two_layer(task.Sigma, V1, V2, eta=eta, steps=K, record_every=K,
                               track=("balance_drift", "drift_bound"), device="cpu")
        assert h["balance_drift"][-1] <= h["drift_bound"][-1]
        drift.append(h["balance_drift"][-1])
    assert 1.9 <= drift[0] / drift[1] <= 2.1


def test_flow_two_layer_matches_hyperbolic_and_gd(task):
    W1, W2 = dl.decoupled_init(task, 10, [0.3, 0.2, 0.1, 0.1, 0.05, 0.02], [0.01, 0.05, 0.1, -0.05, 0.1, 0.0],
                               seed=0, device="cpu")
    t = np.linspace(0, 10, 21)
    flow = dl.flow_two_layer(task.Sigma, W1.numpy(), W2.numpy(), t, U=task.U, V=task.V)
    a0, b0 = np.array([0.3, 0.2, 0.1, 0.1, 0.05, 0.02]), np.array([0.01, 0.05, 0.1, -0.05, 0.1, 0.0])
    np.testing.assert_allclose(flow["modes"], dl.hyperbolic_u(t[:, None], S6, a0, b0), atol=1e-8)
    with pytest.raises(ValueError, match="t_eval"):
        dl.flow_two_layer(task.Sigma, W1.numpy(), W2.numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match="unbatched"):
        dl.flow_two_layer(task.Sigma, W1.numpy()[None], W2.numpy(), t)
    some = dl.flow_two_layer(task.Sigma, W1.numpy(), W2.numpy(), t, U=task.U, V=task.V, track=("modes", "W2"))
    assert sorted(some.metrics) == ["W2", "modes"]
    np.testing.assert_array_equal(some["modes"], flow["modes"])
    np.testing.assert_array_equal(some.final["W1"], flow.final["W1"])
    with pytest.raises(ValueError, match="track"):
        dl.flow_two_layer(task.Sigma, W1.numpy(), W2.numpy(), t, track=("offdiag",))


def test_train_chain_matches_two_layer_and_autograd(task):
    W1, W2 = dl.small_random_init(6, 10, 8, 0.3, seed=2, device="cpu")
    h2 = dl.train_two_layer(task.Sigma, W1, W2, eta=0.02, steps=50, device="cpu")
    hc = dl.train_chain(task.Sigma, [W1, W2], eta=0.02, steps=50, device="cpu")
    np.testing.assert_allclose(hc["modes"], h2["modes"], atol=1e-12)
    W3 = 0.3 * torch.randn(8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    Ws = [W1.clone().requires_grad_(), W2.clone().requires_grad_(), W3.clone().requires_grad_()]
    loss = 0.5 * ((torch.as_tensor(task.Sigma) - Ws[2] @ Ws[1] @ Ws[0]) ** 2).sum()
    loss.backward()
    h3 = dl.train_chain(task.Sigma, [W1, W2, W3], eta=0.01, steps=1, device="cpu")
    for W, Wn in zip(Ws, h3.final["Ws"], strict=True):
        np.testing.assert_allclose(Wn, (W - 0.01 * W.grad).detach().numpy(), atol=1e-13)
    hs = dl.train_shallow(task.Sigma, np.zeros((8, 6)), eta=0.05, steps=30, device="cpu")
    h1 = dl.train_chain(task.Sigma, [np.zeros((8, 6))], eta=0.05, steps=30, device="cpu")
    np.testing.assert_allclose(h1["modes"], hs["modes"], atol=1e-13)
    with pytest.raises(ValueError, match="chain"):
        dl.train_chain(task.Sigma, [W1, W1], eta=0.01, steps=1)
    with pytest.raises(DivergenceError, match="step"):
        dl.train_chain([[1.0]], [np.full((1, 1), 2.0)] * 3, eta=1.0, steps=50)


def test_random_init_half_times(task):  # V2.6, fast
    eta = 0.01
    W1, W2 = dl.small_random_init(6, 10, 8, 1e-3, batch=2, seed=5, device="cpu")
    u_gs = dl.effective_u0(W1, W2, task.U, task.V, S6)
    K = int(1.2 * dl.gd_half_steps(S6[4], u_gs[:, 4], eta).max())
    h = dl.train_two_layer(task.Sigma, W1, W2, eta=eta, steps=K, record_every=5, U=task.U, V=task.V,
                           track=("modes",), device="cpu")
    k = dl.half_times(h.steps, h["modes"], S6)[:, :5]
    assert np.abs(k / dl.gd_half_steps(np.array(S6[:5]), u_gs[:, :5], eta) - 1).max() <= 0.01
    assert np.all(np.diff(k, axis=1) > 0)


def test_hierarchical_half_times():  # V2.9, fast
    tree = dl.hierarchical_task()
    W1, W2 = dl.small_random_init(32, 32, 32, np.sqrt(2e-4 / 32), seed=0, device="cpu")
    h = dl.train_two_layer(tree.U[:, :32].T @ tree.Sigma, W1, W2, eta=5e-4, steps=3000, record_every=10,
                           U=np.eye(32), V=tree.V, track=("modes",), device="cpu")
    shown = np.array([1, 2, 3, 5, 12, 18, 31]) - 1
    k = dl.half_times(h.steps, h["modes"], tree.svals)[shown]
    pred = dl.gd_half_steps(tree.svals[shown], dl.effective_u0(W1, W2, np.eye(32), tree.V, tree.svals)[shown], 5e-4)
    assert np.abs(k / pred - 1).max() <= 0.05


# --- Ch 2 additions: logit-corrected half-time, lag coefficient, depth laws, tree spectrum -----------------------
def test_gd_half_steps_corrected_against_gd():
    for s, es in ((0.5, 0.05), (3.0, 0.15)):
        u0 = np.array([1e-2, 1e-4])
        u_gd = dl.scalar_gd(s, np.sqrt(u0), np.sqrt(u0), es / s, int(3 * np.log(s / 1e-4) / es) + 10)
        k = dl.half_times(np.arange(len(u_gd)), u_gd[:, :, None], [s])[:, 0]
        assert np.all(np.abs(k - dl.gd_half_steps(s, u0, es / s)) <= 0.5 * es**2 + es / s * 1e-2)
    lead = dl.gd_half_steps(1.0, 1e-4, 0.01, corrected=False)
    offset = 0.75 * np.log(2 * (1 - 1e-4)) - 0.2259 * 0.01
    assert np.isclose(lead - dl.gd_half_steps(1.0, 1e-4, 0.01), offset, atol=1e-4)


def test_gd_riccati_lag_coefficient():
    s, u0 = 1.0, 1e-2
    gaps = []
    for eta in (0.02, 0.01):
        K = int(4 * dl.riccati_time(u0, s / 2, s, tau=1 / eta))
        u = dl.scalar_gd(s, np.sqrt(u0), np.sqrt(u0), eta, K)
        gaps.append(np.abs(u - dl.riccati_u(np.arange(K + 1), s, u0, tau=1 / eta)).max() / eta)
    assert np.isclose(2 * gaps[1] - gaps[0], dl.gd_riccati_lag_coefficient(s, u0), rtol=2e-3)
    with pytest.raises(ValueError):
        dl.gd_riccati_lag_coefficient(1.0, 2.0)


def test_chain_sharpness_and_depth_laws():
    assert np.isclose(dl.chain_sharpness(2.0, 2), 4.0) and np.isclose(dl.chain_sharpness(3.0, 1), 1.0)
    h = 1e-5                                                   # finite-difference Hessian of the chain at its minimum
    D, s = 3, 2.0
    a = np.full(D, s ** (1 / D))
    E = lambda w: 0.5 * (s - np.prod(w)) ** 2                  # noqa: E731
    H = np.array([[(E(a + h * (np.eye(D)[i] + np.eye(D)[j])) - E(a + h * np.eye(D)[i]) - E(a + h * np.eye(D)[j])
                    + E(a)) / h**2 for j in range(D)] for i in range(D)])
    assert np.isclose(np.linalg.eigvalsh(H).max(), dl.chain_sharpness(s, D), rtol=1e-3)
    for D in (3, 5):
        assert np.isclose(dl.deep_half_time_small_u0(1e-6, 1.0, D), dl.deep_balanced_time(1e-6, 0.5, 1.0, D), rtol=1e-8)
    t = dl.deep_balanced_time(1e-3, 0.5, 1.0, 2048)
    assert np.isclose(dl.deep_half_time_large_D(1e-3, 1.0, 2048) * (1 - 2 * (np.log(1e3) - 1) / 2048), t, rtol=1e-4)
    with pytest.raises(ValueError):
        dl.deep_half_time_small_u0(1e-3, 1.0, 2)
    with pytest.raises(ValueError):
        dl.deep_half_time_large_D(0.7, 1.0, 8)
    with pytest.raises(TypeError):
        dl.chain_sharpness(1.0, 2.5)


def test_tree_spectrum():
    lam = dl.tree_spectrum(3, 1, 0.1) ** 2                  # against the eigenvalues of the covariance, built directly
    rho, n = 0.64, 8
    def h(i, j):
        k = 0
        while i != j:
            i, j, k = i // 2, j // 2, k + 1
        return k
    K = np.array([[rho ** h(i, j) for j in range(n)] for i in range(n)])
    np.testing.assert_allclose(np.sort(lam), np.sort(np.linalg.eigvalsh(K)), rtol=1e-12)
    assert dl.tree_spectrum(5).shape == (32,)
    with pytest.raises(ValueError):
        dl.tree_spectrum(5, 1000, 0.6)


def test_gram_schmidt_delay():
    from scipy import integrate, stats
    assert dl.gram_schmidt_delay(10, 1) == pytest.approx(0.0, abs=1e-15)          # nothing to project out
    for N2, alpha in [(10, 2), (10, 5), (4, 4), (32, 31)]:                        # E[-ln beta] by quadrature
        p, q = (N2 - alpha + 1) / 2, (alpha - 1) / 2
        ref = integrate.quad(lambda x, p=p, q=q: -np.log(x) * stats.beta.pdf(x, p, q), 0, 1, limit=200)[0]
        assert dl.gram_schmidt_delay(N2, alpha) == pytest.approx(ref, rel=1e-7)
    rng = np.random.default_rng(0)                                               # Monte Carlo of the definition
    z = rng.standard_normal((200_000, 6)) ** 2
    mc = np.mean(np.log(z.sum(1) / z[:, 2:].sum(1)))                             # alpha = 3 in N2 = 6
    assert mc == pytest.approx(dl.gram_schmidt_delay(6, 3), rel=0.02)
    steps = dl.gram_schmidt_delay(10, np.array([2, 3]), s=0.5, eta=0.01)
    assert np.allclose(steps, dl.gram_schmidt_delay(10, np.array([2, 3])) / (2 * np.log1p(0.005)))
    with pytest.raises(ValueError, match="alpha"):
        dl.gram_schmidt_delay(10, 11)
    with pytest.raises(ValueError, match="alpha"):
        dl.gram_schmidt_delay(10, 2.5)
    with pytest.raises(TypeError, match="both"):
        dl.gram_schmidt_delay(10, 2, s=1.0)
    with pytest.raises(ValueError, match="eta"):
        dl.gram_schmidt_delay(10, 2, s=1.0, eta=-0.1)


def test_balanced_matrix_modes():
    rng = np.random.default_rng(3)
    s = np.array([2.0, 1.0, 0.9])
    Psi = 0.1 * rng.standard_normal((5, 3))
    t = np.linspace(0, 8, 41)
    mu = dl.balanced_matrix_modes(t, s, Psi, tau=2.0)
    # against the balanced matrix flow tau dA/dt = A S - A A^T A, integrated directly
    rhs = lambda _, y: (lambda A: (A @ np.diag(s) - A @ A.T @ A).ravel() / 2.0)(y.reshape(5, 3))  # noqa: E731
    A = solve_ivp(rhs, (0, 8), Psi.ravel(), t_eval=t, method="DOP853", rtol=1e-12, atol=1e-14).y.T.reshape(-1, 5, 3)
    assert np.allclose(mu, np.sum(A**2, axis=1), atol=1e-9)
    assert np.allclose(mu[0], np.sum(Psi**2, axis=0))
    assert np.allclose(dl.balanced_matrix_modes([400.0], s, Psi, tau=2.0), s, rtol=1e-9)   # the global minimum
    # orthogonal columns: independent Riccati laws
    Q = np.linalg.qr(rng.standard_normal((5, 3)))[0] * np.array([0.1, 0.02, 0.03])
    assert np.allclose(dl.balanced_matrix_modes(t, s, Q), dl.riccati_u(t[:, None], s, np.sum(Q**2, 0)), rtol=1e-10)
    # the full two-layer flow from a balanced (non-decoupled) start
    task = dl.svd_task(N1=3, N3=3, svals=s, seed=4)
    W1 = Psi @ task.V.T
    W2 = task.U @ Psi.T
    fl = dl.flow_two_layer(task.Sigma, W1, W2, t_eval=t[:11], rtol=1e-11, atol=1e-14)
    assert np.allclose(fl["modes"], dl.balanced_matrix_modes(t[:11], s, Psi), atol=1e-8)
    with pytest.raises(ValueError, match="full column rank"):
        dl.balanced_matrix_modes(t, s, np.ones((5, 3)))
    with pytest.raises(ValueError, match="shape"):
        dl.balanced_matrix_modes(t, s, Psi[:, :2])
    with pytest.raises(ValueError, match="non-negative"):
        dl.balanced_matrix_modes(-t[1:], s, Psi)


def test_balanced_matrix_modes_tree_other_seed():  # the tree check of the chapter, on a seed it does not use
    tree = dl.hierarchical_task(levels=3, n_features=400, flip=0.1, seed=5)
    W1, W2 = dl.small_random_init(8, 8, 8, scale=1e-3, seed=6)
    W1, W2 = W1.numpy(), W2.numpy()
    U8 = tree.U[:, :8]
    t = np.linspace(0, 1.0, 4001)
    fl = dl.flow_two_layer(U8.T @ tree.Sigma, W1, W2, t_eval=t, U=np.eye(8), V=tree.V, rtol=1e-10, atol=1e-14)
    Psi = 0.5 * (W1 @ tree.V + W2.T)
    pred = dl.half_times(t, dl.balanced_matrix_modes(t, tree.svals, Psi), tree.svals)
    assert np.allclose(dl.half_times(t, fl["modes"], tree.svals), pred, rtol=1e-4)


def test_closed_forms_refuse_what_their_twins_refuse():
    """shallow_gd overflows like iterated GD (DivergenceError with the step); a huge tree is refused up front."""
    from learndyn.core import DivergenceError

    with pytest.raises(DivergenceError, match="at step"):
        dl.shallow_gd(np.arange(2000), 2.0, 0.1, eta=3.0)
    with pytest.raises(ValueError, match="GiB"):
        dl.hierarchical_task(levels=16, n_features=10)
    with pytest.raises(ValueError, match="W2"):
        dl.two_layer_loss(np.ones((3, 4)), np.ones((3, 4)), np.ones(3))
