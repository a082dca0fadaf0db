"""The library's one vocabulary (CONTRIBUTING.md, "One vocabulary"), held over every public signature of learndyn.

The book writes eta for the step size and k for the step; the library says `eta` and `steps` in every signature.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import learndyn

# A name that is not the library's word for its object -> the word to use instead.
FORBIDDEN = {
    "lr": "eta (the step size)", "learning_rate": "eta", "step_size": "eta", "etas": "eta (a float or a (B,) batch)",
    "T": "steps (a number of GD steps) or t_max (a flow's horizon)", "Ts": "budgets",
    "lrs": "eta (a sequence of step sizes)", "n_steps": "steps",
    "num_steps": "steps", "nsteps": "steps", "n_iter": "steps", "epochs": "steps", "tmax": "t_max",
    "rng": "seed (an int; the function makes its generator)", "random_state": "seed", "generator": "seed",
    "dev": "device", "precision": "dtype",
}
# The annotation each shared argument carries (by its text, since annotations are strings under PEP 563).
ANNOTATIONS = {"seed": {"int"}, "device": {"str | torch.device | None", "str | torch.device"},
               "dtype": {"torch.dtype", "torch.dtype | None"}}


def _public_functions():
    for info in pkgutil.iter_modules(learndyn.__path__):
        module = importlib.import_module(f"learndyn.{info.name}")
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield module.__name__, name, obj
            elif inspect.isclass(obj):
                for meth_name, meth in vars(obj).items():
                    if inspect.isfunction(meth) and (not meth_name.startswith("_") or meth_name == "__init__"):
                        yield module.__name__, f"{name}.{meth_name}", meth


FUNCTIONS = sorted(_public_functions(), key=lambda t: (t[0], t[1]))


def test_there_are_many_public_functions():
    assert len(FUNCTIONS) > 200


@pytest.mark.parametrize("module", sorted({m for m, _, _ in FUNCTIONS}))
def test_every_signature_speaks_the_vocabulary(module):
    wrong = [f"{name}({p}): use {FORBIDDEN[p]}" for m, name, fn in FUNCTIONS if m == module
             for p in inspect.signature(fn).parameters if p in FORBIDDEN]
    assert not wrong, f"{module}: " + "; ".join(wrong)


@pytest.mark.parametrize("module", sorted({m for m, _, _ in FUNCTIONS}))
def test_shared_arguments_carry_one_annotation(module):
    wrong = []
    for m, name, fn in FUNCTIONS:
        if m != module:
            continue
        for p in inspect.signature(fn).parameters.values():
            allowed = ANNOTATIONS.get(p.name)
            if allowed and p.annotation is not inspect.Parameter.empty and str(p.annotation) not in allowed:
                wrong.append(f"{name}({p.name}: {p.annotation})")
    assert not wrong, f"{module}: expected {ANNOTATIONS}; got " + "; ".join(wrong)


def _returns(fn) -> str:
    return str(inspect.signature(fn).return_annotation)


@pytest.mark.parametrize("module", sorted({m for m, _, _ in FUNCTIONS}))
def test_every_run_returns_a_history(module):
    """A simulator (train_*, simulate_*) returns the History record; a Monte Carlo risk (simulate_*_risk) returns
    (estimate, standard error)."""
    wrong = []
    for m, name, fn in FUNCTIONS:
        short = name.rsplit(".", 1)[-1]
        if m != module or not short.startswith(("train_", "simulate_")):
            continue
        want = {"tuple[float, float]", "tuple[np.ndarray, np.ndarray]"} if short.endswith("_risk") else {"History"}
        if _returns(fn) not in want:
            wrong.append(f"{name} -> {_returns(fn)} (expected {want})")
    assert not wrong, "; ".join(wrong)


def test_the_rules_catch_a_stray_name():
    def run(W0, lr: float, T: int, seed: int = 0):  # noqa: ARG001 - a signature to test the rule on
        return None

    assert [p for p in inspect.signature(run).parameters if p in FORBIDDEN] == ["lr", "T"]
