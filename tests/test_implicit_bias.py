"""Tests of learndyn.implicit_bias (Ch 5): the SVM against independent solvers, KKT, the gradient-flow bounds on
both sides, the GD simulator against a numpy loop, fast versions of V5.1-V5.5, and bad input."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from learndyn import implicit_bias as ib

SVS = np.array([[0.45, -0.1], [0.15, 0.35]])


@pytest.fixture(scope="module")
def fast():
    Z = ib.separable_with_svs(n=24, svs=SVS, margin_ratio=2.0, seed=0)
    return Z, ib.max_margin(Z)


def _random_separable(seed, n=30, d=3):
    rng = np.random.default_rng(seed)
    w_star = rng.standard_normal(d)
    w_star /= np.linalg.norm(w_star)
    Z = rng.uniform(-1, 1, (4 * n, d))
    Z = Z[np.linalg.norm(Z, axis=1) <= 1]
    Z = Z[Z @ w_star > 0.05][:n]
    return Z


# ------------------------------------------------------------------------------------------ data and SVM
def test_constructed_dataset_has_the_svm_of_its_support_vectors(fast):
    Z, mm = fast
    assert Z.shape == (24, 2) and np.all(np.linalg.norm(Z, axis=1) <= 1)
    np.testing.assert_allclose(Z[:2], SVS)
    np.testing.assert_allclose(mm.w_hat, np.linalg.solve(SVS, np.ones(2)), atol=1e-12)
    np.testing.assert_allclose(mm.w_hat, [2.6087, 1.7391], atol=1e-4)
    assert mm.gamma == pytest.approx(0.31895, abs=1e-5)
    np.testing.assert_allclose(mm.alpha[:2], [3.7807, 6.0491], atol=1e-4)
    assert list(mm.support) == [0, 1] and np.all(mm.alpha[2:] == 0)
    assert ib.second_margin(Z, mm) >= 2.0


def test_same_seed_same_data_and_labels():
    np.testing.assert_array_equal(ib.separable_with_svs(seed=3), ib.separable_with_svs(seed=3))
    X, y = ib.to_xy(ib.separable_with_svs(), seed=1)
    np.testing.assert_array_equal(y[:, None] * X, ib.separable_with_svs())
    assert set(np.unique(y)) <= {-1.0, 1.0}


def test_wedge_dataset_is_slow_and_in_the_unit_ball():
    Z = ib.wedge_dataset()
    assert np.linalg.norm(Z, axis=1).max() == pytest.approx(1.0, abs=1e-12)
    m2 = ib.second_margin(Z, ib.max_margin(Z))
    assert 1.0 < m2 < 1.1


@pytest.mark.parametrize("seed", range(5))
def test_slsqp_agrees_with_sklearn_and_satisfies_kkt(seed):
    Z = _random_separable(seed)
    mm, mk = ib.max_margin(Z), ib.max_margin(Z, method="sklearn")
    np.testing.assert_allclose(mm.w_hat, mk.w_hat, atol=1e-5 * np.linalg.norm(mm.w_hat))
    res = ib.kkt_residuals(Z, mm)
    assert max(res.values()) <= 1e-8 * max(1.0, np.linalg.norm(mm.w_hat)), res
    assert mm.gamma == pytest.approx(1 / np.linalg.norm(mm.w_hat))
    assert np.all(Z @ mm.w_hat >= 1 - 1e-9)


def test_kkt_residuals_see_a_wrong_solution(fast):
    Z, mm = fast
    wrong = ib.MaxMargin(1.1 * mm.w_hat, mm.gamma / 1.1, mm.support, mm.alpha)
    res = ib.kkt_residuals(Z, wrong)
    assert res["primal"] == 0.0 and res["dual"] == 0.0
    assert res["stationarity"] == pytest.approx(0.1 * np.linalg.norm(mm.w_hat), rel=1e-9)
    assert res["complementarity"] == pytest.approx(0.1 * mm.alpha.max(), rel=1e-9)
    neg = ib.MaxMargin(mm.w_hat, mm.gamma, mm.support, -mm.alpha)
    assert ib.kkt_residuals(Z, neg)["dual"] == pytest.approx(mm.alpha.max())


def test_complementary_slackness_is_one_directional():
    Z = np.array([[0.5, 0.0], [0.5, 0.5]])  # z_2 on the margin with a forced zero multiplier
    mm = ib.max_margin(Z)
    np.testing.assert_allclose(Z @ mm.w_hat, [1.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(mm.alpha, [4.0, 0.0], atol=1e-9)
    with pytest.raises(ValueError, match="strict complementarity"):
        ib.soudry_w_tilde(Z, mm, 0.1)
    Z3 = np.array([[1.0, 1.0], [1.0, -1.0], [1.0, 0.0]])  # E5.4: non-unique multipliers
    mm3 = ib.max_margin(Z3)
    np.testing.assert_allclose(mm3.w_hat, [1.0, 0.0], atol=1e-9)
    for alpha in ([0.0, 0.0, 1.0], [0.5, 0.5, 0.0], [0.25, 0.25, 0.5]):
        choice = ib.MaxMargin(mm3.w_hat, mm3.gamma, mm3.support, np.array(alpha))
        assert max(ib.kkt_residuals(Z3, choice).values()) <= 1e-9


def test_non_separable_data_are_rejected(fast):
    Z, _ = fast
    bad = np.vstack([Z, -Z[:1]])
    for method in ("slsqp", "sklearn"):
        with pytest.raises(ValueError, match="not linearly separable"):
            ib.max_margin(bad, method=method)
    with pytest.raises(ValueError, match="not linearly separable"):
        ib.gd_separable(bad, 0.01, 10)


def test_unit_ball_check_raises_or_rescales_on_request():
    Z = np.array([[2.0, 0.0], [0.5, 0.5]])
    with pytest.raises(ValueError, match="norm 2"):
        ib.check_unit_ball(Z)
    np.testing.assert_allclose(ib.check_unit_ball(Z, rescale=True), Z / 2)
    np.testing.assert_array_equal(ib.check_unit_ball(Z / 2), Z / 2)


# -------------------------------------------------------------------------------------- flow bounds (T5.1)
def _flow(Z, t_eval):
    sol = solve_ivp(lambda t, w: np.exp(-Z @ w) @ Z, (0, t_eval[-1]), np.zeros(Z.shape[1]), method="DOP853",
                    t_eval=t_eval, rtol=1e-12, atol=1e-14)
    return np.exp(-Z @ sol.y).sum(0), np.linalg.norm(sol.y, axis=0)


def test_flow_bounds_are_attained_on_one_repeated_unit_vector():
    Z = np.tile([[0.6, 0.8]], (4, 1))
    t = np.geomspace(1e-3, 1e3, 25)
    L, r = _flow(Z, t)
    for bound in ib.gf_loss_bounds(t, 4.0, 1.0):
        np.testing.assert_allclose(L, bound, rtol=1e-8)
    for bound in ib.gf_norm_bounds(t, 4.0, 1.0, 4):
        np.testing.assert_allclose(r, bound, rtol=1e-8)


def test_flow_bounds_hold_on_both_sides(fast):
    Z, mm = fast
    t = np.geomspace(1e-2, 1e4, 30)
    L, r = _flow(Z, t)
    lo, up = ib.gf_loss_bounds(t, len(Z), mm.gamma)
    assert np.all(lo <= L) and np.all(L <= up)
    rlo, rup = ib.gf_norm_bounds(t, len(Z), mm.gamma, len(Z))
    assert np.all(rlo <= r) and np.all(r <= rup)
    assert L[-1] * (1 / len(Z) + mm.gamma**2 * t[-1]) > 0.9  # the upper bound is nearly tight late
    lo0, up0 = ib.gf_loss_bounds(0.0, 5.0, 0.5)
    assert lo0 == up0 == 5.0


# ------------------------------------------------------------------------------------------------ simulator
@pytest.mark.parametrize(("loss", "reduction"), [("exp", "sum"), ("logistic", "mean"), ("exp", "mean")])
def test_gd_matches_a_numpy_loop(fast, loss, reduction):
    Z, mm = fast
    etas = np.array([0.02, 0.05]) * (len(Z) if reduction == "mean" else 1)
    hist = ib.gd_separable(Z, etas, 200, np.array([50, 200]), loss=loss, reduction=reduction, mm=mm)
    W = np.zeros((2, 2))
    for _ in range(200):
        m = W @ Z.T
        g = np.exp(-m) if loss == "exp" else 1 / (1 + np.exp(m))
        W = W + (etas[:, None] / (len(Z) if reduction == "mean" else 1)) * (g @ Z)
    np.testing.assert_allclose(hist.final["w"], W, rtol=1e-12)
    np.testing.assert_array_equal(hist.steps, [0, 50, 200])
    ell = np.exp(-W @ Z.T) if loss == "exp" else np.log1p(np.exp(-W @ Z.T))
    np.testing.assert_allclose(hist["loss"][-1], ell.sum(1) / (len(Z) if reduction == "mean" else 1), rtol=1e-12)
    assert hist["w"].shape == (3, 2, 2) and hist["loss"].shape == (3, 2)


def test_gd_asymptotics_v52(fast):
    Z, mm = fast
    eta, T = 0.1, 100_000
    hist = ib.gd_separable(Z, eta, T, np.array([10_000, T]), mm=mm)
    w_tilde = ib.soudry_w_tilde(Z, mm, eta)
    np.testing.assert_allclose(eta * np.exp(-Z[:2] @ w_tilde), mm.alpha[:2], rtol=1e-12)
    res = np.linalg.norm(hist["w"][1:, 0] - ib.asymptotic_w(hist.steps[1:], mm, w_tilde), axis=1)
    assert res[1] <= 0.1 and 4 * res[1] <= res[0]
    assert 0.95 <= eta * T * hist["loss"][-1, 0] * mm.gamma**2 <= 1.0
    w_pred = ib.asymptotic_w(T, mm, w_tilde)
    u = hist["w"][-1, 0] / hist["norm"][-1, 0]
    assert np.linalg.norm(u - w_pred / np.linalg.norm(w_pred)) <= 0.1 * hist["angle_gap"][-1, 0]
    assert 0.2 <= hist["angle_gap"][-1, 0] * np.log(T) <= 0.6


def test_gd_respects_the_flow_bounds_v53(fast):
    Z, mm = fast
    n = len(Z)
    etas = np.array([0.25, 1.0, 2.0]) / n
    hist = ib.gd_separable(Z, etas, 20_000, 30, mm=mm)
    t = hist.steps[:, None] * etas
    assert np.all(hist["loss"] <= 1.02 * ib.gf_loss_bounds(t, n, mm.gamma)[1])
    lo, up = ib.gf_norm_bounds(t, n, mm.gamma, n)
    assert np.all(lo <= hist["norm"] + 1e-12) and np.all(hist["norm"] <= up + 1e-12)


def test_logistic_loss_same_direction_v55(fast):
    Z, mm = fast
    hist = ib.gd_separable(Z, 2.4, 100_000, np.array([20_000, 100_000]), loss="logistic", reduction="mean", mm=mm)
    gap = hist["angle_gap"][1:, 0]
    assert gap[1] <= 0.06 and gap[1] < gap[0]


def test_slow_dataset_residual_stays_large_v54():
    Z = ib.wedge_dataset()
    mm = ib.max_margin(Z)
    hist = ib.gd_separable(Z, 0.1, 20_000, np.array([20_000]), mm=mm)
    res = np.linalg.norm(hist.final["w"][0] - ib.asymptotic_w(20_000, mm, ib.soudry_w_tilde(Z, mm, 0.1)))
    assert res > 1.0


def test_theory_functions_broadcast_and_mean_equals_rescaled_sum(fast):
    Z, mm = fast
    wt = ib.soudry_w_tilde(Z, mm, np.array([0.1, 0.2, 0.4]))
    assert wt.shape == (3, 2)
    np.testing.assert_allclose(ib.soudry_w_tilde(Z, mm, 0.1 * len(Z), reduction="mean"), wt[0], atol=1e-12)
    np.testing.assert_allclose(wt[1] - wt[0], np.log(2) * mm.w_hat, atol=1e-12)  # eta -> w_hat ln eta shift
    assert ib.asymptotic_w(np.array([1.0, 10.0]), mm, wt).shape == (2, 3, 2)
    np.testing.assert_allclose(ib.asymptotic_w(1.0, mm, wt[0]), wt[0])
    assert ib.stability_limit(Z) == pytest.approx(2 / np.linalg.eigvalsh(Z.T @ Z)[-1])
    assert ib.stability_limit(Z, "logistic", "mean") == pytest.approx(8 * len(Z) / np.linalg.eigvalsh(Z.T @ Z)[-1])
    R2 = np.max(np.sum(Z**2, axis=1))
    assert ib.descent_step_limit(Z) == pytest.approx(2 / (len(Z) * R2))
    w1 = 0.1 * Z.sum(0)
    assert ib.descent_step_limit(Z, w0=w1) == pytest.approx(2 / (np.exp(-Z @ w1).sum() * R2))
    assert ib.descent_step_limit(Z, "logistic", "mean") == pytest.approx(ib.stability_limit(Z, "logistic", "mean"))


# -------------------------------------------------------------------------------------------------- bad input
def test_bad_input_names_the_argument(fast):
    Z, mm = fast
    cases = [
        (lambda: ib.gd_separable(Z, 0.0, 10), "eta"),
        (lambda: ib.gd_separable(Z, -0.1, 10), "eta"),
        (lambda: ib.gd_separable(Z, np.inf, 10), "eta"),
        (lambda: ib.descent_step_limit(Z, loss="hinge"), "loss"),
        (lambda: ib.descent_step_limit(Z, w0=np.zeros(3)), "w0"),
        (lambda: ib.gd_loss_bound(np.array([1, 2]), 1.0, 24.0, 0.3), "eta"),
        (lambda: ib.gd_loss_bound(np.array([-1]), 0.01, 24.0, 0.3), "k"),
        (lambda: ib.margin_bounds(0.0, 24, 0.3), "r"),
        (lambda: ib.flow_log_time(Z, np.array([2.0, 1.0]), mm), "increasing"),
        (lambda: ib.normalized_gd(Z, -1.0, 10, mm=mm), "eta0"),
        (lambda: ib.normalized_gd(Z, 1.0, 10, power=-1.0, mm=mm), "power"),
        (lambda: ib.expansion_constants(Z, mm, np.zeros(3)), "w_tilde"),
        (lambda: ib.separable_with_svs(n=2, exact=True), "exact"),
        (lambda: ib.gd_separable(Z, 0.1, 10, loss="hinge"), "loss"),
        (lambda: ib.gd_separable(Z, 0.1, 10, reduction="max"), "reduction"),
        (lambda: ib.gd_separable(Z, 0.1, 10, w0=np.zeros(3)), "w0"),
        (lambda: ib.gd_separable(Z, 0.1, 10, checkpoints=np.array([5, 20])), "checkpoints"),
        (lambda: ib.gd_separable(Z[:, 0], 0.1, 10), "Z"),
        (lambda: ib.max_margin(Z, method="cvx"), "method"),
        (lambda: ib.gf_loss_bounds(1.0, 5.0, 1.5), "gamma"),
        (lambda: ib.gf_loss_bounds(-1.0, 5.0, 0.5), "t"),
        (lambda: ib.gf_norm_bounds(1.0, 5.0, 0.5, 4, r0=-1.0), "r0"),
        (lambda: ib.asymptotic_w(0.0, mm, np.zeros(2)), "t"),
        (lambda: ib.asymptotic_w(10.0, mm, np.zeros(3)), "w_tilde"),
        (lambda: ib.soudry_w_tilde(Z, mm, 0.0), "eta"),
        (lambda: ib.separable_with_svs(svs=[[2.0, 0.0]]), "svs"),
        (lambda: ib.separable_with_svs(margin_ratio=10.0), "margin_ratio"),
        (lambda: ib.kkt_residuals(Z, ib.MaxMargin(mm.w_hat, mm.gamma, mm.support, mm.alpha[:3])), "mm"),
    ]
    for call, word in cases:
        with pytest.raises(ValueError, match=word):
            call()
    with pytest.raises(TypeError, match="steps"):
        ib.gd_separable(Z, 0.1, 10.5)



# ------------------------------------------------------------------------------- rates, log time, new bounds
def test_large_steps_above_the_stability_limit_are_accepted_and_converge(fast):
    Z, mm = fast
    eta = 2.0 * ib.stability_limit(Z)
    hist = ib.gd_separable(Z, eta, 5_000, np.array([1, 100, 5_000]), mm=mm)
    assert np.all(np.diff(hist["loss"][1:, 0]) < 0) and hist["angle_gap"][-1, 0] < 0.1
    assert eta < ib.descent_step_limit(Z, w0=hist["w"][1, 0])  # inside the provable condition from step 1 on


def test_residual_matrix_has_the_time_shift_mode_and_the_2d_determinant(fast):
    Z, mm = fast
    H = ib.residual_matrix(Z, mm)
    np.testing.assert_allclose(H @ mm.w_hat, mm.w_hat, atol=1e-12)
    mu, m2, expo = ib.residual_exponent(Z, mm)
    S = mm.support
    assert mu == pytest.approx(np.prod(mm.alpha[S]) * np.linalg.det(Z[S]) ** 2, rel=1e-12)
    assert mu == pytest.approx(0.6805, abs=1e-4) and m2 == pytest.approx(ib.second_margin(Z, mm))
    assert expo == pytest.approx(min(mu, m2 - 1))
    Zw = ib.wedge_dataset()
    assert ib.residual_exponent(Zw, ib.max_margin(Zw))[0] < 0.1  # nearly parallel support vectors


def test_flow_log_time_matches_an_ordinary_time_solve_and_the_closed_form(fast):
    Z, mm = fast
    t = np.array([0.5, 1.0, 10.0, 200.0])
    sol = solve_ivp(lambda _, w: np.exp(-Z @ w) @ Z, (0, t[-1]), np.zeros(2), method="DOP853", t_eval=t,
                    rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ib.flow_log_time(Z, t, mm), sol.y.T - np.log(t)[:, None] * mm.w_hat, atol=1e-8)
    Zu = np.tile([[0.6, 0.8]], (3, 1))  # one unit vector: w(t) = z ln(1 + 3 t), exactly
    mmu = ib.max_margin(Zu)
    tt = np.exp(np.array([5.0, 40.0]))
    np.testing.assert_allclose(ib.flow_log_time(Zu, tt, mmu), np.outer(np.log1p(3 * tt) - np.log(tt), [0.6, 0.8]),
                               atol=1e-9)
    e = ib.flow_log_time(Z, np.exp([25.0]), mm)[0] - ib.soudry_w_tilde(Z, mm, 1.0)
    assert np.linalg.norm(e) < 2e-6  # the residual has died out (1.07e-6 ~ 2.3 e^{-0.68 x 25})


def test_expansion_constants_against_the_flow(fast):
    Z, mm = fast
    wt1 = ib.soudry_w_tilde(Z, mm, 1.0)
    const = ib.expansion_constants(Z, mm, wt1)
    assert const["margin"] > 0
    np.testing.assert_allclose(ib.expansion_constants(Z, mm, ib.soudry_w_tilde(Z, mm, 0.1))["shift"],
                               const["shift"] + np.log(0.1), atol=1e-12)
    s = 30.0
    w = s * mm.w_hat + ib.flow_log_time(Z, np.exp([s]), mm)[0]
    gap = np.linalg.norm(w / np.linalg.norm(w) - mm.w_hat / np.linalg.norm(mm.w_hat))
    sig = s + const["shift"]
    assert gap * sig == pytest.approx(const["angle"], rel=1e-3)


def test_gd_loss_bound_holds_and_tends_to_the_flow_bound(fast):
    Z, mm = fast
    n, R = len(Z), np.linalg.norm(Z, axis=1).max()
    for eta in np.array([0.25, 1.0, 1.9]) / n:
        hist = ib.gd_separable(Z, eta, 5_000, 20, mm=mm)
        B = ib.gd_loss_bound(hist.steps, eta, n, mm.gamma, R)
        assert np.all(hist["loss"][:, 0] <= B * (1 + 1e-12))
    big = ib.gd_loss_bound(np.array([0, 10**6]), 0.01, float(n), mm.gamma, R)
    assert big[0] == n
    assert big[1] * (1 / n + mm.gamma**2 * 0.01 * 10**6) == pytest.approx(1.0, rel=2e-3)


def test_norm_bounds_use_the_better_upper_bound():
    t = np.array([1e-3, 1e4])
    lo, up = ib.gf_norm_bounds(t, 5.0, 0.5, 5)
    first, second = np.log1p(0.25 * 5 * t) / 0.25, np.log1p(5 * t) / 0.5
    np.testing.assert_allclose(up, np.minimum(first, second))
    assert up[0] == first[0] and up[1] == second[1]


def test_margin_bounds_hold_along_the_flow(fast):
    Z, mm = fast
    s = np.linspace(0.0, 20.0, 41)
    w = np.outer(s, mm.w_hat) + ib.flow_log_time(Z, np.exp(s), mm)
    r = np.linalg.norm(w, axis=1)
    u = w / r[:, None]
    mg, ag = ib.margin_bounds(r, len(Z), mm.gamma)
    assert np.all(mm.gamma - np.min(u @ Z.T, axis=1) <= mg)
    assert np.all(np.linalg.norm(u - mm.w_hat * mm.gamma, axis=1) <= ag)


def test_normalized_gd_matches_a_loop_and_follows_the_flow_path(fast):
    Z, mm = fast
    h = ib.normalized_gd(Z, 1.0, 300, np.array([300]), mm=mm)
    w = np.zeros(2)
    for j in range(300):
        L = np.exp(-Z @ w).sum()
        w = w + 1.0 / (L * np.sqrt(j + 1)) * (np.exp(-Z @ w) @ Z)
    np.testing.assert_allclose(h.final["w"][0], w, rtol=1e-10)
    h = ib.normalized_gd(Z, 2.0, 5_000, np.array([5_000]), mm=mm)
    s = np.linspace(1.0, 60.0, 3000)
    wp = np.outer(s, mm.w_hat) + ib.flow_log_time(Z, np.exp(s), mm)
    rp = np.linalg.norm(wp, axis=1)
    gp = np.linalg.norm(wp / rp[:, None] - mm.w_hat * mm.gamma, axis=1)
    assert h["angle_gap"][-1, 0] == pytest.approx(np.interp(h["norm"][-1, 0], rp, gp), rel=1e-2)


def test_exact_second_margin():
    for m in (1.3, 1.9):
        Z = ib.separable_with_svs(n=6, margin_ratio=m, exact=True)
        mm = ib.max_margin(Z)
        assert ib.second_margin(Z, mm) == pytest.approx(m, abs=1e-9)
        assert np.all(np.linalg.norm(Z, axis=1) <= 1) and list(mm.support) == [0, 1]


def test_companion_mm_and_zero_steps_are_checked():
    """An mm from other data is refused (the gaps would be measured against another SVM); T = 0 is the start."""
    Z = ib.separable_with_svs(n=12, seed=0)
    Z_other = ib.separable_with_svs(n=12, svs=((0.5, 0.1), (0.1, 0.5)), seed=3)
    with pytest.raises(ValueError, match="mm is not the max-margin solution"):
        ib.gd_separable(Z, 0.1, 200, 10, mm=ib.max_margin(Z_other), device="cpu")
    with pytest.raises(TypeError, match="mm must be"):
        ib.kkt_residuals(Z, None)
    with pytest.raises(ValueError, match="w0 must be finite"):
        ib.stability_limit(Z, w0=[np.nan, 0.0])
    hist = ib.gd_separable(Z, 0.1, 0, device="cpu")
    np.testing.assert_array_equal(hist.steps, [0])
    np.testing.assert_array_equal(hist.final["w"], np.zeros((1, 2)))
