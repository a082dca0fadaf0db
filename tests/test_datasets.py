"""learndyn.datasets: the bundled digits, read without importing scikit-learn's dataset module."""

import subprocess
import sys

import numpy as np
import pytest

from learndyn import datasets


@pytest.mark.parametrize("n_class", [10, 2, 1])
def test_load_digits_is_scikit_learns(n_class):
    from sklearn.datasets import load_digits

    X, y = datasets.load_digits(n_class)
    X_sk, y_sk = load_digits(n_class=n_class, return_X_y=True)
    assert X.dtype == X_sk.dtype and y.dtype == y_sk.dtype
    np.testing.assert_array_equal(X, X_sk)
    np.testing.assert_array_equal(y, y_sk)
    X[0, 0] = -1.0  # a fresh copy: the next call is untouched
    assert datasets.load_digits(n_class)[0][0, 0] == X_sk[0, 0]


@pytest.mark.parametrize("bad", [0, 11, 2.5, "10"])
def test_load_digits_refuses_other_class_counts(bad):
    with pytest.raises((ValueError, TypeError), match="n_class"):
        datasets.load_digits(bad)


def test_learndyn_loads_the_digits_without_importing_sklearn():
    code = ("import sys, learndyn.datasets as d, learndyn.sharpness as s; d.load_digits(); s.digits_tensors(10, "
            "device='cpu'); print('sklearn.datasets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
