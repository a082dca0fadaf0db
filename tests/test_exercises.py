"""learndyn.exercises: every reference solution passes its checker, and typical mistakes get a diagnosis that does
not reveal the answer."""

import re

import numpy as np
import pytest

from learndyn import exercises as ex
from learndyn.deep_linear import effective_u0


def _run(label: str):
    check = ex.CHECKS[label]
    ns: dict = {}
    exec(ex._IMPORTS + check.setup + "\n" + check.solution, ns)  # noqa: S102 - the package's own reference code
    exec(check.visible_test, ns)  # noqa: S102
    return ns[check.answer]


@pytest.mark.parametrize("label", list(ex.CHECKS))
def test_reference_solution_passes_its_checker(label, capsys):
    answer = _run(label)
    ex.CHECKS[label].checker(answer)
    assert ex.CHECKS[label].checker.__name__ in capsys.readouterr().out


def _fails(checker, answer, match: str) -> str:
    with pytest.raises(AssertionError, match=match) as info:
        checker(answer)
    return str(info.value)


def _no_digits_of(message: str, values) -> None:
    """The message must not print the answer: none of its entries, to 4 significant digits."""
    for v in np.ravel(values):
        assert f"{v:.4g}" not in message, f"the message reveals {v:.4g}: {message}"


# ---------------------------------------------------------------------------------------------------------------
def test_pre_slope_diagnoses():
    ref = ex._pre_reference()
    _no_digits_of(_fails(ex.check_pre_slope, ref[:5], r"shape \(8,\)"), ref)
    _fails(ex.check_pre_slope, -ref, "positive")
    _fails(ex.check_pre_slope, ref[::-1], "reverse order")
    _no_digits_of(_fails(ex.check_pre_slope, 2 * ref, "constant factor 2"), ref)
    wrong = ref.copy()
    wrong[-1] *= 1.2
    _no_digits_of(_fails(ex.check_pre_slope, wrong, "eta = 0.1 .*wrong further on"), ref)
    _fails(ex.check_pre_slope, np.full(8, np.nan), "nan")
    with pytest.raises(TypeError, match="errors"):
        ex.check_pre_slope("not numbers")


def test_linreg_bayes_diagnoses():
    _fails(ex.check_linreg_bayes, lambda d, n, s, t: d * s**2 * t**2 / (n * t**2), "tau -> 0")
    _fails(ex.check_linreg_bayes, lambda d, n, s, t: d * t**2, "tau -> infinity")
    _fails(ex.check_linreg_bayes, lambda d, n, s, t: 2 * d * s**2 * t**2 / (n * t**2 + s**2), "tau -> infinity")
    _fails(ex.check_linreg_bayes, lambda d, n, s, t: d * s**2 * t**2 / (n * t**2 + s**2) + 1e-3 * t**3 / (1 + t**4),
           "interpolation")
    _fails(ex.check_linreg_bayes, lambda d, n, s, t: np.ones(2), "one finite number")
    with pytest.raises(TypeError, match="function"):
        ex.check_linreg_bayes(0.3)


def test_linreg_init_diagnoses():
    pinv = np.linalg.pinv
    _fails(ex.check_linreg_init, lambda X, y, w0: pinv(X) @ y, "ignores w0")
    _fails(ex.check_linreg_init, lambda X, y, w0: pinv(X) @ y + w0, "kept all of w0")
    _fails(ex.check_linreg_init, lambda X, y, w0: pinv(X) @ y - (w0 - pinv(X) @ X @ w0), "wrong sign")
    _fails(ex.check_linreg_init, lambda X, y, w0: w0, "not where GD converges")
    _fails(ex.check_linreg_init, lambda X, y, w0: np.zeros(3), r"shape \(50,\)")
    wide_only = lambda X, y, w0: pinv(X) @ y + (np.eye(X.shape[1]) - pinv(X) @ X) @ w0 + (X.shape[0] > X.shape[1])  # noqa: E731
    _fails(ex.check_linreg_init, wide_only, "tall, full rank")


def _book_u0(**kw):
    return lambda W1, W2, U, V, s: effective_u0(W1, W2, U, V, s, **kw)


def test_saxe_gram_schmidt_diagnoses():
    _fails(ex.check_saxe_gram_schmidt, _book_u0(refined=False), "naive")
    _fails(ex.check_saxe_gram_schmidt, lambda W1, W2, U, V, s: effective_u0(W1, W2, U, V, np.arange(6.0)[::-1] + 1),
           "order of the index")
    _fails(ex.check_saxe_gram_schmidt, lambda *a: np.sqrt(effective_u0(*a)), "squared norm")
    _fails(ex.check_saxe_gram_schmidt, lambda *a: 4 * effective_u0(*a), "constant factor 4")
    _fails(ex.check_saxe_gram_schmidt, lambda *a: effective_u0(*a)[:3], "shape")
    message = _fails(ex.check_saxe_gram_schmidt, lambda *a: effective_u0(*a) * np.r_[1, 1, 1, 1, 1, 1.5],
                     "wrong for the mode")
    assert "expected" not in message


def test_ssl1_ntxent_diagnoses():
    good = _run("ex-ssl1-ntxent")
    _fails(ex.check_ssl1_ntxent, lambda z1, z2, t: good(z1, z2, 1.0), "random embeddings")  # ignores temperature
    _fails(ex.check_ssl1_ntxent, lambda z1, z2, t: good(z1, z2, t) + 1.0, "random embeddings")


def test_eos_plateau_diagnoses():
    ref = _run("ex-eos-plateau")
    _no_digits_of(_fails(ex.check_eos_plateau, -ref, "wrong sign"), [ref])
    _no_digits_of(_fails(ex.check_eos_plateau, ref + 0.1, "does not match"), [ref])


def test_ssl2_merge_diagnoses():
    pred = ex._ssl2_prediction()
    _fails(ex.check_ssl2_merge, pred.T, "transpose")
    _fails(ex.check_ssl2_merge, -pred, "negative")
    lam2 = np.array(ex.SSL2_RHOS)[:, None]
    _fails(ex.check_ssl2_merge, pred / (0.01 * 8 * lam2), "GD steps")
    _fails(ex.check_ssl2_merge, pred / (8 * lam2), "flow time")
    _no_digits_of(_fails(ex.check_ssl2_merge, 3 * pred, "constant factor 3"), pred)
    off = pred.copy()
    off[3, 1] += 0.5
    _no_digits_of(_fails(ex.check_ssl2_merge, off, "rho = 0.9, eps = 1e-06"), pred)
    ex.check_ssl2_merge(pred + 0.1)  # within the 0.15 rise times the chapter's analysis allows


def test_soudry_second_margin_diagnoses():
    ref = ex._soudry_reference()
    np.testing.assert_allclose(ref, [-0.3, -0.6805, -0.12, -0.12], atol=2e-3)  # -min(lambda_min, m2 - 1)
    _fails(ex.check_soudry_second_margin, -ref, "positive")
    _fails(ex.check_soudry_second_margin, np.array([-0.3, -0.9, -0.3, -0.9]), "lambda_min")
    _fails(ex.check_soudry_second_margin, np.array([-0.001, -0.002, -0.001, 0.001]), "w_tilde_1")
    _no_digits_of(_fails(ex.check_soudry_second_margin, ref * np.array([1, 1, 1.05, 1]), "m2 = 1.3"), ref)
    _fails(ex.check_soudry_second_margin, ref[:3], "shape")
    ex.check_soudry_second_margin(ref * 1.005)  # within the 1 % the exercise's analysis allows


def test_wu_rates_diagnoses():
    ref = ex._wu_reference()
    _fails(ex.check_wu_rates, -ref, "positive")
    _fails(ex.check_wu_rates, ref[::-1], "reverse order")
    wrong = ref.copy()
    wrong[2] = -2.0
    _no_digits_of(_fails(ex.check_wu_rates, wrong, "T/5"), ref)


def test_registry_is_consistent():
    for label, check in ex.CHECKS.items():
        assert check.label == label and check.checker.__name__ in ex.__all__
        assert re.fullmatch(r"[A-Za-z_]\w*", check.answer)
        assert check.answer in check.solution and check.answer in check.visible_test
        assert check.task.startswith("Define `")
