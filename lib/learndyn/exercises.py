"""Self-checks for the coding exercises: `check_<name>(answer)` says what is wrong without printing the answer.

Each checker raises AssertionError with a diagnosis (wrong shape, wrong sign, off by a constant factor, right at
small t but wrong at large t, ...) and prints one line when the answer is right. `CHECKS` maps an exercise label to
its `SelfCheck`: the checker, the name the student defines, the task in one line, and (for nbgrader assignments,
`learndyn.teach`) the set-up code, a reference solution and a visible test of the answer's form.

| exercise | chapter | answer |
|---|---|---|
| `ex-pre-slope` | Preface | `errors`: max GD-flow errors for 8 step sizes |
| `ex-linreg-bayes` | 1 | `my_bayes_risk(d, n, sigma, tau)`, eq. `eq-linreg-bayes-risk` for X^T X = n I |
| `ex-linreg-init` | 1 | `my_limit(X, y, w0)`, the limit of GD from w0, eq. `eq-linreg-gd-limit` |
| `ex-saxe-gram-schmidt` | 2 | `my_u0(W1, W2, U, V, svals)`, eq. `eq-saxe-u0-eff` |
| `ex-ssl1-ntxent` | 3 | `nt_xent(z1, z2, temperature)`, the NT-Xent loss eq. `eq-ssl1-ntxent` on numpy arrays |
| `ex-ssl2-merge` | 4 | `gaps`: measured t2 - t1 in rise times, shape (4, 2) |
| `ex-soudry-second-margin` | 5 | `slopes`: decay rates of the residual of the flow for 4 data sets |
| `ex-eos-plateau` | 6 | `slope`: log-log slope of the sharpness plateau against 2/eta over the cached sweep |
| `ex-wu-rates` | 7 | `slopes`: fitted rate exponents for eta = T/20, T/10, T/5, T/2 |

Answers that are functions are tested on fresh random problems; answers that are numbers are compared with the
library's own computation (or the chapter's prediction) within the tolerance the chapter derives.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .core import seed

__all__ = ["SelfCheck", "CHECKS", "check_pre_slope", "check_linreg_bayes", "check_linreg_init",
           "check_saxe_gram_schmidt", "check_ssl1_ntxent", "check_ssl2_merge", "check_soudry_second_margin",
           "check_eos_plateau", "check_wu_rates"]

PRE_ETAS = np.geomspace(1e-3, 1e-1, 8)
SSL2_RHOS = (0.3, 0.5, 0.7, 0.9)
SSL2_EPS = (1e-2, 1e-6)
SOUDRY_SVS = (((0.45, -0.1), (0.15, 0.35)), ((0.45, -0.1), (0.35, 0.2)))
SOUDRY_MARGINS = (1.3, 1.9)
WU_FRACTIONS = (1 / 20, 1 / 10, 1 / 5, 1 / 2)


@dataclass(frozen=True)
class SelfCheck:
    """What an autograded exercise needs: `checker(answer)`, where `answer` is the name the student defines.

    task: one line saying what to define; setup: code run before the answer (data, constants); solution: a
    reference solution defining `answer`; visible_test: an assertion on the answer's form only (it reveals nothing);
    points: points of the visible test (the hidden checker is worth the exercise's stars).
    """

    label: str
    checker: Callable[[Any], None]
    answer: str
    task: str
    setup: str
    solution: str
    visible_test: str
    points: int = 1


# ---------------------------------------------------------------------------------------------------------------
# Preface
def check_pre_slope(errors: Any) -> None:
    """Checker of `ex-pre-slope`: `errors[i]` = max_{k eta <= 10} ||w_k - w(k eta)|| for eta = geomspace(1e-3, 0.1, 8),
    on L = w^T H w / 2 with H = diag(1, 0.1), w0 = (1, 1) (GD against the exact flow, eq. `eq-pre-local-error`)."""
    got = _array("errors", errors, (len(PRE_ETAS),), "one maximal error per step size in np.geomspace(1e-3, 1e-1, 8)")
    if np.any(got <= 0):
        raise AssertionError("errors must be positive: the norm of the difference between GD and the flow")
    ref = _pre_reference()
    if np.allclose(got[::-1], ref, rtol=0.02):
        raise AssertionError("your errors are in reverse order: errors[i] belongs to np.geomspace(1e-3, 1e-1, 8)[i]"
                             " (smallest step first)")
    if np.any(np.diff(got) <= 0):
        raise AssertionError("the error must grow with the step size; it does not in your array")
    _no_constant_factor("errors", got, ref, "use the Euclidean norm over both coordinates and the maximum over "
                        "0 <= t <= 10 (not the error at t = 10 only)")
    _close_or_explain("errors", got, ref, rtol=0.02, where=lambda i: f"eta = {PRE_ETAS[i]:.3g}",
                      hint="compare GD after k steps with the flow at time t = k eta, for k eta <= 10")
    print("check_pre_slope: all 8 errors agree with the book's computation to 2% — now fit their log-log slope")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 1
def check_linreg_bayes(fn: Any) -> None:
    """Checker of `ex-linreg-bayes`: fn(d, n, sigma, tau) = Bayes risk of the posterior mean under w ~ N(0, tau^2 I)
    for an orthogonal design X^T X = n I_d, eq. `eq-linreg-bayes-risk`."""
    _callable("my_bayes_risk", fn, "my_bayes_risk(d, n, sigma, tau)")
    grid = [(d, n, s, t) for d in (3, 10) for n in (20, 50) for s in (0.5, 1.0, 2.0) for t in (0.3, 1.0, 4.0)]
    got = np.array([_scalar("my_bayes_risk", fn(*p)) for p in grid])
    ref = np.array([d * s**2 * t**2 / (n * t**2 + s**2) for d, n, s, t in grid])
    big = _scalar("my_bayes_risk", fn(10, 50, 1.0, 1e6))
    if not np.isclose(big, 10 / 50, rtol=1e-3):
        raise AssertionError("as tau -> infinity the Bayes risk must tend to the minimax risk, the OLS risk "
                             "sigma^2 d / n; yours does not (try tau = 1e6)")
    small = _scalar("my_bayes_risk", fn(10, 50, 1.0, 1e-4))
    if not np.isclose(small, 10 * 1e-8, rtol=1e-2):
        raise AssertionError("as tau -> 0 the posterior mean is ~ 0 and the risk must be the prior's E||w||^2 = "
                             "d tau^2; yours is not (try tau = 1e-4)")
    _no_constant_factor("my_bayes_risk", got, ref, "the risk is the expected squared error summed over d coordinates")
    _close_or_explain("my_bayes_risk", got, ref, rtol=1e-10, where=lambda i: f"(d, n, sigma, tau) = {grid[i]}",
                      hint="both limits are right but not the interpolation between them: the posterior variance of "
                           "each coordinate is 1 / (n / sigma^2 + 1 / tau^2)")
    print(f"check_linreg_bayes: right on {len(grid)} designs and in both limits tau -> 0 and tau -> infinity")


def check_linreg_init(fn: Any) -> None:
    """Checker of `ex-linreg-init`: fn(X, y, w0) = the limit of GD on least squares from w0, eq.
    `eq-linreg-gd-limit` (X^+ y + (I - X^+ X) w0), tested on wide and tall random designs."""
    from .linreg import gd_limit

    _callable("my_limit", fn, "my_limit(X, y, w0)")
    rng = np.random.default_rng(11)
    for n, d in ((20, 50), (8, 30), (40, 10)):
        X, y, w0 = rng.standard_normal((n, d)), rng.standard_normal(n), rng.standard_normal(d)
        got = _array("my_limit(X, y, w0)", fn(X.copy(), y.copy(), w0.copy()), (d,), "one weight per column of X")
        expected = gd_limit(X, y, w0)
        if np.allclose(got, expected, atol=1e-8):
            continue
        pinv = np.linalg.pinv(X)
        shape = f"for X of shape ({n}, {d})"
        if np.allclose(got, pinv @ y, atol=1e-8):
            raise AssertionError(f"{shape} your limit ignores w0: GD never moves the part of w0 in the null space of X")
        if np.allclose(got, pinv @ y + w0, atol=1e-8):
            raise AssertionError(f"{shape} you kept all of w0: GD removes its row-space part, only the null-space "
                                 "part survives")
        if np.allclose(got, pinv @ y - (w0 - pinv @ X @ w0), atol=1e-8):
            raise AssertionError(f"{shape} the null-space part of w0 has the wrong sign")
        if n > d:
            raise AssertionError(f"{shape} (tall, full rank) the minimiser is unique, so GD converges to it "
                                 "whatever w0; yours differs")
        raise AssertionError(f"{shape} your limit is not where GD converges: it must interpolate (X w = y) and "
                             "differ from w0 only in the row space of X")
    print("check_linreg_init: right on wide and tall designs")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 2
def check_saxe_gram_schmidt(fn: Any) -> None:
    """Checker of `ex-saxe-gram-schmidt`: fn(W1, W2, U, V, svals) = effective initial conditions u0 of the modes,
    eq. `eq-saxe-u0-eff` (Gram-Schmidt of c_alpha in decreasing order of s_alpha), on unbatched weights whose
    singular values are given in a shuffled order. Unlike `deep_linear.check_effective_u0`, prints no values."""
    from .deep_linear import effective_u0, svd_task

    _callable("my_u0", fn, "my_u0(W1, W2, U, V, svals)")
    rng = np.random.default_rng(3)
    task = svd_task(6, 8, [3.0, 2.0, 1.0, 0.5, 0.25, 0.1], seed=3)
    perm = rng.permutation(6)
    U = task.U.copy()
    U[:, :6] = U[:, perm]
    V, svals = task.V[:, perm], task.svals[perm]
    W1, W2 = 1e-3 * rng.standard_normal((10, 6)), 1e-3 * rng.standard_normal((8, 10))
    got = _array("my_u0(...)", fn(W1.copy(), W2.copy(), U.copy(), V.copy(), svals.copy()), (6,), "one value per mode")
    expected = effective_u0(W1, W2, U, V, svals)
    if np.allclose(got, expected, rtol=1e-8, atol=0.0):
        print("check_saxe_gram_schmidt: all 6 modes agree with the Gram-Schmidt effective initial strengths to 1e-8")
        return
    if np.allclose(got, effective_u0(W1, W2, U, V, svals, refined=False), rtol=1e-8, atol=0.0):
        raise AssertionError("these are the naive ||c_alpha||^2: project out the directions of the stronger modes "
                             "(Gram-Schmidt) before taking the norm")
    in_index_order = effective_u0(W1, W2, U, V, np.arange(6.0)[::-1] + 1.0)
    if np.allclose(got, in_index_order, rtol=1e-8, atol=0.0):
        raise AssertionError("you orthogonalise in the order of the index; the order must be decreasing s_alpha "
                             "(svals is shuffled here)")
    if np.allclose(got**2, expected, rtol=1e-6, atol=0.0):
        raise AssertionError("u0 is the squared norm of the projected c_alpha; you return the norm")
    _no_constant_factor("my_u0", got, expected, "c_alpha is the average (a^alpha + b^alpha) / 2")
    ok = np.isclose(got, expected, rtol=1e-8, atol=0.0)
    raise AssertionError(f"wrong for the mode(s) with s = {', '.join(f'{s:g}' for s in svals[~ok])}")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 4
def check_ssl1_ntxent(fn: Any) -> None:
    """Checker of `ex-ssl1-ntxent`: fn(z1, z2, temperature) on numpy (N, D) views = the NT-Xent loss, eq.
    `eq-ssl1-ntxent`, on random embeddings (against `ssl.info_nce`) and log(2N - 1) at collapse."""
    from .ssl import check_info_nce  # torch-backed reference, imported only when this check runs

    _callable("nt_xent", fn, "nt_xent(z1, z2, temperature)")
    check_info_nce(lambda z1, z2, temperature: _scalar("nt_xent", fn(z1, z2, temperature)))
    print("check_ssl1_ntxent: random embeddings and collapse both agree")


def check_ssl2_merge(gaps: Any) -> None:
    """Checker of `ex-ssl2-merge`: gaps[i, j] = measured (t2 - t1) * 8 lambda_2 for rho = SSL2_RHOS[i] and
    eps = SSL2_EPS[j] (m = 12, d = 4, eta = 0.01, the chapter's seeds), compared with eq. `eq-ssl2-step-time`.

    The prediction: the linear-phase strengths (eq. `eq-ssl2-linear-phase`) with the next term of the step count;
    at rho = 0.9 the Gram-Schmidt strengths miss the gap by up to a rise time on some draws. Tolerance 0.15 rise
    times: the chapter's allowance of a gap is at most a few hundredths at eps = 1e-6 and grows with the
    nonlinear-phase gain at eps = 1e-2; 0.15 also covers other reasonable ways of locating the crossings."""
    pred = _ssl2_prediction()
    arr = _numbers("gaps", gaps, "an array of real numbers") if not callable(gaps) else None
    if arr is not None and arr.shape == pred.T.shape:
        raise AssertionError(f"gaps must have shape {pred.shape} (rho along rows, eps along columns); got "
                             f"{arr.shape}: transpose it")
    got = _array("gaps", gaps, pred.shape, "rows rho = 0.3, 0.5, 0.7, 0.9; columns eps = 1e-2, 1e-6")
    if np.all(got < 0):
        raise AssertionError("the gaps are negative: the second step comes after the first, gap = t2 - t1")
    lam2 = np.array(SSL2_RHOS)[:, None]
    if np.allclose(got * 0.01 * 8 * lam2, pred, atol=0.15):
        raise AssertionError("your gaps are in GD steps: convert to flow time (times eta) and to rise times "
                             "(times 8 lambda_2)")
    if np.allclose(got * 8 * lam2, pred, atol=0.15):
        raise AssertionError("your gaps are in flow time: divide by the rise time 1 / (8 lambda_2)")
    _no_constant_factor("gaps", got, pred, "the rise time is 1 / (8 lambda_2) with lambda_2 = rho")
    _close_or_explain("gaps", got, pred, atol=0.15,
                      where=lambda i: f"rho = {SSL2_RHOS[i // 2]}, eps = {SSL2_EPS[i % 2]:g}",
                      hint="measure t_j as the first time the j-th eigenvalue of C crosses 1/2 "
                           "(`ld.barlow.measured_step_times`)")
    print("check_ssl2_merge: all 8 gaps agree with the predicted step times to 0.15 rise times")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 5
def check_soudry_second_margin(slopes: Any) -> None:
    """Checker of `ex-soudry-second-margin`: slopes[i] = slope in ln t of ln ||P e(t)||, e = w - w_hat ln t - w_tilde_1
    the flow's residual and P the projection orthogonal to w_hat, fitted where ||P e|| lies in [1e-9, 1e-5], for
    `separable_with_svs(n=6, svs=SOUDRY_SVS[i // 2], margin_ratio=SOUDRY_MARGINS[i % 2], exact=True)`.

    Compared with the prediction -min(lambda_min, m2 - 1) of eq-soudry-residual-rate to 1 % (the next mode biases
    such a fit by a few 1e-3)."""
    got = _array("slopes", slopes, (4,), "one slope per dataset, in the order of the exercise")
    if np.all(got > 0):
        raise AssertionError("the slopes are positive, but the residual decays: fit log(residual) against ln t")
    ref = _soudry_reference()
    old_rule = -(np.tile(SOUDRY_MARGINS, 2) - 1.0)
    if np.allclose(got, old_rule, atol=0.02):
        raise AssertionError("these are -(m2 - 1) for every dataset: the rule that forgets the relaxation rate "
                             "lambda_min of H_inf; measure the slopes on the flow")
    if np.all(np.abs(got) < 0.02):
        raise AssertionError("the slopes are near 0: subtract w_tilde_1 (ib.soudry_w_tilde(Z, mm, 1.0)) as well as "
                             "w_hat ln t, which flow_log_time already removes")
    _close_or_explain("slopes", got, ref, rtol=0.01,
                      where=lambda i: f"support vectors {SOUDRY_SVS[i // 2]}, m2 = {SOUDRY_MARGINS[i % 2]}",
                      hint="use the component orthogonal to w_hat, and fit only where its norm is in [1e-9, 1e-5]")
    print("check_soudry_second_margin: all 4 slopes agree with -min(lambda_min, m2 - 1) to 1 %")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 7
def check_eos_plateau(slope: Any) -> None:
    """Checker of `ex-eos-plateau`: slope = least-squares slope of log(plateau) against log(2/eta), the plateau being
    the median sharpness over steps >= 750 of the five cached runs (`sharpness` data, eos_traces.npz)."""
    got = _scalar("slope", slope)
    ref = _eos_plateau_reference()
    if abs(got + ref) < 0.02:
        raise AssertionError("slope has the right size but the wrong sign: fit log(plateau) against log(2/eta), "
                             "not against log(eta)")
    if abs(got - ref) > 0.02:
        raise AssertionError("slope does not match the cached sweep: take the median sharpness over steps >= 750 of "
                             "each run (the plateau), then the least-squares slope of the logs (ld.core.loglog_slope)")
    print("check_eos_plateau: the slope agrees with the cached sweep")


def check_wu_rates(slopes: Any) -> None:
    """Checker of `ex-wu-rates`: slopes[i] = fitted log-log slope of L(w_T) over T in (250, 500, 1000, 2000) with
    eta = WU_FRACTIONS[i] * T on `narrow_margin_2d(seed=1)`, i.e. how fast the final logistic loss falls with
    the budget T when the step size grows in proportion to T. Compared with the library's own sweep to 0.05,
    or 5% for slopes steeper than -3 (there the fit is dominated by a collapsing last point)."""
    got = _array("slopes", slopes, (len(WU_FRACTIONS),), "one slope per eta = T/20, T/10, T/5, T/2")
    if np.all(got > 0):
        raise AssertionError("the slopes are positive, but the loss decreases with the budget T")
    ref = _wu_reference()
    tol = np.maximum(0.05, 0.05 * np.abs(ref))
    if np.all(np.abs(got[::-1] - ref) <= tol):
        raise AssertionError("your slopes are in reverse order: slopes[i] belongs to eta = (T/20, T/10, T/5, T/2)[i]")
    bad = np.flatnonzero(np.abs(got - ref) > tol)
    if bad.size:
        i = int(bad[0])
        raise AssertionError(f"slope for eta = T/{1 / WU_FRACTIONS[i]:.0f} is off by more than {tol[i]:.2g}: fit "
                             "log L(w_T) against log T over T = 250, 500, 1000, 2000, one run per T with its own "
                             "eta (`ls.rate_sweep`), on narrow_margin_2d(seed=1)")
    print("check_wu_rates: all 4 slopes agree with the book's sweep")


# ---------------------------------------------------------------------------------------------------------------
_IMPORTS = "import numpy as np\nimport learndyn as ld\n"

CHECKS: dict[str, SelfCheck] = {c.label: c for c in [
    SelfCheck(
        "ex-pre-slope", check_pre_slope, "errors",
        "Define `errors`, the maximal GD-flow errors over t <= 10 for the 8 step sizes `etas`, "
        "in that order.",
        "H = np.diag([1.0, 0.1])\nw0 = np.array([1.0, 1.0])\netas = np.geomspace(1e-3, 1e-1, 8)",
        """def max_error(eta, t_max=10.0):
    k = np.arange(int(round(t_max / eta)) + 1)
    gd = ld.quadratic.gd_quadratic_closed_form(H, w0, eta, k)
    flow = ld.quadratic.flow_quadratic(H, w0, eta * k)
    return np.linalg.norm(gd - flow, axis=1).max()

errors = np.array([max_error(e) for e in etas])
print(f"log-log slope {ld.core.loglog_slope(etas, errors):.3f}")""",
        "assert np.shape(errors) == (8,), 'errors must hold one value per step size'"),
    SelfCheck(
        "ex-linreg-bayes", check_linreg_bayes, "my_bayes_risk",
        "Define `my_bayes_risk(d, n, sigma, tau)`: the Bayes risk of the posterior mean for X^T X = n I_d.",
        "",
        """def my_bayes_risk(d, n, sigma, tau):
    return d * sigma**2 * tau**2 / (n * tau**2 + sigma**2)""",
        "assert callable(my_bayes_risk), 'my_bayes_risk must be a function'\n"
        "assert np.isfinite(my_bayes_risk(3, 20, 1.0, 1.0)), 'my_bayes_risk must return a number'"),
    SelfCheck(
        "ex-linreg-init", check_linreg_init, "my_limit",
        "Define `my_limit(X, y, w0)`: the point where GD on least squares started at w0 converges.",
        "",
        """def my_limit(X, y, w0):
    pinv = np.linalg.pinv(X)
    return pinv @ y + (np.eye(X.shape[1]) - pinv @ X) @ w0""",
        "assert callable(my_limit), 'my_limit must be a function'\n"
        "assert np.shape(my_limit(np.ones((2, 3)), np.ones(2), np.zeros(3))) == (3,), 'one weight per column of X'"),
    SelfCheck(
        "ex-saxe-gram-schmidt", check_saxe_gram_schmidt, "my_u0",
        "Define `my_u0(W1, W2, U, V, svals)`: the effective initial conditions u0, one per mode.",
        "",
        """def my_u0(W1, W2, U, V, svals):
    r = len(svals)
    c = 0.5 * ((W1 @ V)[:, :r] + (U.T @ W2)[:r].T)
    basis, out = [], np.zeros(r)
    for i in np.argsort(-np.asarray(svals)):
        v = c[:, i] - sum(q * (q @ c[:, i]) for q in basis)
        out[i] = v @ v
        basis.append(v / np.linalg.norm(v))
    return out""",
        "assert callable(my_u0), 'my_u0 must be a function'"),
    SelfCheck(
        "ex-ssl1-ntxent", check_ssl1_ntxent, "nt_xent",
        "Define `nt_xent(z1, z2, temperature)`: the NT-Xent loss of two (N, D) numpy arrays of views.",
        "",
        """def nt_xent(z1, z2, temperature):
    z = np.concatenate([z1, z2])
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    n2, total = len(z), 0.0
    for i in range(n2):
        j = (i + n2 // 2) % n2
        others = [k for k in range(n2) if k != i]
        total += -z[i] @ z[j] / temperature + np.log(np.sum(np.exp(z[others] @ z[i] / temperature)))
    return total / n2""",
        "assert callable(nt_xent), 'nt_xent must be a function'\n"
        "assert np.isfinite(nt_xent(np.eye(2, 3), np.eye(2, 3), 0.5)), 'nt_xent must return a number'"),
    SelfCheck(
        "ex-ssl2-merge", check_ssl2_merge, "gaps",
        "Define `gaps`, shape (4, 2): the measured t2 - t1 in rise times 1/(8 lambda_2), rows rho in `rhos`, "
        "columns eps in `epsilons` (eta = 0.01, make_gamma seed 4, small_init seed 5).",
        "rhos = [0.3, 0.5, 0.7, 0.9]\nepsilons = np.array([1e-2, 1e-6])\neta = 0.01",
        """rows = []
for rho in rhos:
    lam = rho ** np.arange(12.0)
    G, _ = ld.barlow.make_gamma(lam, m=12, seed=ld.seed(4))
    W0 = ld.barlow.small_init(4, 12, epsilons, seed=ld.seed(5))
    k = ld.barlow.barlow_gd_steps(lam[:4], ld.barlow.effective_a0(W0, G, 4), eta)
    h = ld.barlow.train_barlow_linear(G, W0, eta, int(1.2 * k[:, 1].max()), record_every=2)
    rows.append(eta * 8 * lam[1] * np.diff(ld.barlow.measured_step_times(h)[:, :2], axis=1)[:, 0])
gaps = np.array(rows)""",
        "assert np.shape(gaps) == (4, 2), 'gaps must have shape (4, 2)'"),
    SelfCheck(
        "ex-soudry-second-margin", check_soudry_second_margin, "slopes",
        "Define `slopes`: the decay rate in ln t of the flow's residual orthogonal to w_hat, one per dataset.",
        "ib = ld.implicit_bias\nsupport_pairs = [((0.45, -0.1), (0.15, 0.35)), ((0.45, -0.1), (0.35, 0.2))]\n"
        "margins = [1.3, 1.9]",
        """s = np.linspace(1.0, 250.0, 499)
slopes = []
for svs in support_pairs:
    for m2 in margins:
        Z = ib.separable_with_svs(n=6, svs=svs, margin_ratio=m2, exact=True)
        mm = ib.max_margin(Z)
        ws = mm.w_hat / np.linalg.norm(mm.w_hat)
        e = ib.flow_log_time(Z, np.exp(s), mm) - ib.soudry_w_tilde(Z, mm, 1.0)
        ep = np.linalg.norm(e - np.outer(e @ ws, ws), axis=1)
        sel = (ep >= 1e-9) & (ep <= 1e-5)
        slopes.append(np.polyfit(s[sel], np.log(ep[sel]), 1)[0])
slopes = np.array(slopes)""",
        "assert np.shape(slopes) == (4,), 'slopes must hold one value per dataset'"),
    SelfCheck(
        "ex-eos-plateau", check_eos_plateau, "slope",
        "Define `slope`: the log-log slope of the sharpness plateau against 2/eta over the cached sweep `traces`.",
        "traces, _ = ld.sharpness.stored_eos_traces()",
        """late = traces["eig_steps"] >= 750
plateau = np.median(traces["sharpness"][:, late], axis=1)
slope = ld.core.loglog_slope(2 / traces["eta"], plateau)""",
        "assert np.ndim(slope) == 0, 'slope must be one number'"),
    SelfCheck(
        "ex-wu-rates", check_wu_rates, "slopes",
        "Define `slopes`: the fitted rate exponent over `Ts` for eta = T/20, T/10, T/5 and T/2, in that order.",
        "ls = ld.large_stepsize\nTs = np.array([250, 500, 1000, 2000])\nZ1 = ls.narrow_margin_2d(seed=ld.seed(1))",
        """slopes = np.array([ls.rate_sweep(Z1, Ts, lambda T, c=c: c * T)[1]
                   for c in (1 / 20, 1 / 10, 1 / 5, 1 / 2)])""",
        "assert np.shape(slopes) == (4,), 'slopes must hold one value per step-size schedule'"),
]}


# ---------------------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _pre_reference() -> np.ndarray:
    from .quadratic import flow_quadratic, gd_quadratic_closed_form

    H, w0 = np.diag([1.0, 0.1]), np.array([1.0, 1.0])
    out = []
    for eta in PRE_ETAS:
        k = np.arange(int(round(10.0 / eta)) + 1)
        out.append(np.linalg.norm(gd_quadratic_closed_form(H, w0, eta, k) - flow_quadratic(H, w0, eta * k),
                                  axis=1).max())
    return np.array(out)


@functools.lru_cache(maxsize=1)
def _ssl2_prediction() -> np.ndarray:
    from . import barlow

    rows = []
    for rho in SSL2_RHOS:
        lam = rho ** np.arange(12.0)
        G, _ = barlow.make_gamma(lam, m=12, seed=seed(4))  # the chapter's draws, at the seed knob
        W0 = barlow.small_init(4, 12, np.array(SSL2_EPS), seed=seed(5))
        k = barlow.barlow_gd_steps(lam[:4], barlow.linear_phase_a0(W0, G, 4), 0.01, next_term=True)
        rows.append(0.01 * 8 * lam[1] * np.diff(k[:, :2], axis=1)[:, 0])
    return np.array(rows)


@functools.lru_cache(maxsize=1)
def _soudry_reference() -> np.ndarray:
    """The prediction -min(lambda_min, m2 - 1) (eq-soudry-residual-rate) for the four datasets of the exercise."""
    from . import implicit_bias as ib

    out = []
    for svs in SOUDRY_SVS:
        for m2 in SOUDRY_MARGINS:
            Z = ib.separable_with_svs(n=6, svs=svs, margin_ratio=m2, exact=True)
            out.append(-ib.residual_exponent(Z, ib.max_margin(Z))[2])
    return np.array(out)


@functools.lru_cache(maxsize=1)
def _eos_plateau_reference() -> float:
    from .core import loglog_slope
    from .sharpness import stored_eos_traces

    traces, _ = stored_eos_traces()  # the traces the chapter reads, at the seed knob
    late = traces["eig_steps"] >= 750
    return loglog_slope(2 / traces["eta"], np.median(traces["sharpness"][:, late], axis=1))


@functools.lru_cache(maxsize=1)
def _wu_reference() -> np.ndarray:
    from . import large_stepsize as ls

    Z1 = ls.narrow_margin_2d(seed=seed(1))
    Ts = np.array([250, 500, 1000, 2000])
    return np.array([ls.rate_sweep(Z1, Ts, lambda T, c=c: c * T)[1] for c in WU_FRACTIONS])


def _callable(name: str, fn: Any, signature: str) -> None:
    if not callable(fn):
        raise TypeError(f"{name} must be a function {signature}; got {type(fn).__name__}")


def _numbers(name: str, value: Any, what: str) -> np.ndarray:
    """A student's answer as a float array, or a TypeError naming it (strings, None, complex values, ...)."""
    if hasattr(value, "detach"):                       # a torch tensor (requires_grad or not)
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be {what}; got {type(value).__name__}") from err
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be {what}; got {type(value).__name__}"
                        + (f" of dtype {arr.dtype}" if arr.dtype.kind == "c" else ""))
    return arr.astype(float)


def _scalar(name: str, value: Any) -> float:
    arr = _numbers(name, value, "one real number")
    if arr.size != 1 or not np.isfinite(arr).all():
        raise AssertionError(f"{name} must return one finite number; got shape {arr.shape}")
    return float(arr.reshape(()))


def _array(name: str, value: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    arr = _numbers(name, value, f"an array of real numbers ({what})")
    if arr.shape != shape:
        raise AssertionError(f"{name} must have shape {shape} ({what}); got {arr.shape}")
    if not np.isfinite(arr).all():
        raise AssertionError(f"{name} has nan or inf entries at {np.flatnonzero(~np.isfinite(arr.ravel())).tolist()}")
    return arr


def _no_constant_factor(name: str, got: np.ndarray, ref: np.ndarray, hint: str) -> None:
    """Raise if got = c * ref for a constant c != 1 (a classic slip), naming c but not the answer."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = got.ravel() / ref.ravel()
    ratio = ratio[np.isfinite(ratio)]
    if ratio.size and np.allclose(ratio, ratio.mean(), rtol=1e-3) and not np.isclose(ratio.mean(), 1.0, rtol=1e-3):
        sign = "and has the wrong sign " if ratio.mean() < 0 else ""
        raise AssertionError(f"{name} is off by a constant factor {abs(ratio.mean()):.3g} {sign}— {hint}")


def _close_or_explain(name: str, got: np.ndarray, ref: np.ndarray, where: Callable[[int], str], hint: str,
                      rtol: float = 0.0, atol: float = 0.0) -> None:
    """Raise naming the first entry outside the tolerance, with a hint; says whether small or large values fail."""
    bad = np.flatnonzero(np.abs(got.ravel() - ref.ravel()) > atol + rtol * np.abs(ref.ravel()))
    if bad.size == 0:
        return
    side = ""
    if got.ndim == 1 and bad.size < got.size:
        side = " (right at the start of the list, wrong further on)" if bad[0] > 0 else " (wrong at the start)"
    raise AssertionError(f"{name} is wrong at {where(int(bad[0]))} and {bad.size - 1} other entries{side}: {hint}")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 8 (appended; registered below as the others are, through CHECKS and __all__)
def check_diag_mirror(fn: Any) -> None:
    """Checker of `ex-diag-mirror`: fn(w, alpha) = grad Q_alpha(w) = arcsinh(w / (2 alpha^2)), eq. `eq-diag-mirror-map`,
    tested against a central finite difference of the hyperbolic entropy at several scales."""
    _callable("fn", fn, "fn(w, alpha)")
    from .diagonal import hyperbolic_entropy

    rng = np.random.default_rng(81)
    for alpha in (0.05, 1.0, 7.0):
        w = rng.standard_normal(6) * 2
        got = _array("fn(w, alpha)", fn(w, alpha), (6,), "one partial derivative per coordinate")
        h = 1e-6 * max(1.0, alpha**2)
        ref = np.array([(hyperbolic_entropy(w + h * e, alpha) - hyperbolic_entropy(w - h * e, alpha)) / (2 * h)
                        for e in np.eye(6)])
        _no_constant_factor("fn(w, alpha)", got, ref,
                            "compare q'(z) with arcsinh(z/2) and mind the chain rule 1/alpha^2")
        _close_or_explain("fn(w, alpha)", got, ref, lambda i, a=alpha: f"alpha = {a}, coordinate {i}",
                          "differentiate q(w_i / alpha^2) and multiply by alpha^2", rtol=1e-5, atol=1e-7)
    print("check_diag_mirror: your mirror map is the gradient of Q_alpha")


CHECKS["ex-diag-mirror"] = SelfCheck(
    "ex-diag-mirror", check_diag_mirror, "my_mirror",
    "Define `my_mirror(w, alpha)`: the gradient of the hyperbolic entropy Q_alpha at w.",
    "",
    """def my_mirror(w, alpha):
    return np.arcsinh(np.asarray(w) / (2 * alpha**2))""",
    "assert callable(my_mirror), 'my_mirror must be a function'")
__all__.append("check_diag_mirror")
