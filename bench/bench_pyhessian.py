"""Benchmark (not a test): the sharpness estimator of Ch 6 against PyHessian's power iteration, at equal accuracy.

PyHessian (Yao, Gholami, Keutzer & Mahoney 2020; github.com/amirgholami/PyHessian) is not installed in the book's
environment (the project installs nothing beyond its pins), so `pyhessian_power` below re-implements the algorithm
of its `hessian(model, criterion, data=(X, Y)).eigenvalues(maxIter, tol, top_n=1)` step by step:
1. once, at construction: a forward pass and `loss.backward(create_graph=True)`, keeping the gradient graph;
2. a Gaussian start v, normalised as v / (||v|| + 1e-6);
3. each iteration: v normalised again (its `orthnormal(v, [])`), Hv by double backward through the kept graph
   (`torch.autograd.grad(grads, params, grad_outputs=v, retain_graph=True)`), the estimate lambda = <Hv, v>,
   v = Hv / (||Hv|| + 1e-6); stop when |lambda - lambda_prev| / (|lambda_prev| + 1e-6) < tol.
One deliberate difference: the start vector is drawn in the parameters' dtype (PyHessian draws float32), so the
float64 comparison is not limited by a float32 start. If the real `pyhessian` package is importable, it is timed too.

Ours: `learndyn.sharpness.top_eigs` (power iteration with its relative-change stopping rule, and Lanczos), with
forward-over-reverse Hessian-vector products (HVPs). Every method gets the loosest stopping tolerance that reaches
the target relative accuracy (default 1e-4) of the top eigenvalue, taken from a Lanczos run at tolerance 1e-12.
Reported: seconds, HVPs, and seconds / (HVPs x one HVP), the overhead of the eigensolver around its products.
Model: the Ch 6 digits MLP (1000 digits, 64-100-100-100-10 tanh, MSE), float64, CPU.
Run from the repository root: `.venv/bin/python bench/bench_pyhessian.py [--target 1e-4] [--json out.json]`.
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from bench_sharpness import count_hvps, timed  # the sibling script: one definition of each
from torch import nn

import learndyn as ld
from learndyn import sharpness as sh

TOLS = (1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 1e-7, 1e-8)


def pyhessian_power(model: nn.Module, criterion: Callable, X: torch.Tensor, Y: torch.Tensor, max_iter: int = 1000,
                    tol: float = 1e-3, seed: int = 0) -> tuple[float, int]:
    """PyHessian's top-1 power iteration (see the module docstring), including its set-up; (eigenvalue, HVPs)."""
    model.zero_grad()
    with warnings.catch_warnings():  # torch warns that create_graph=True makes a reference cycle: freed below
        warnings.simplefilter("ignore", UserWarning)
        criterion(model(X), Y).backward(create_graph=True)
    params = [p for p in model.parameters() if p.requires_grad]
    grads = [p.grad for p in params]

    def normalise(v: list[torch.Tensor]) -> list[torch.Tensor]:
        s = float(sum((x * x).sum() for x in v)) ** 0.5
        return [x / (s + 1e-6) for x in v]

    gen = torch.Generator().manual_seed(seed)
    v = normalise([torch.randn(p.shape, generator=gen, dtype=p.dtype).to(p.device) for p in params])
    eigenvalue, n = None, 0
    for _ in range(max_iter):
        v = normalise(v)
        Hv = torch.autograd.grad(grads, params, grad_outputs=v, only_inputs=True, retain_graph=True)
        n += 1
        estimate = float(sum((h * x).sum() for h, x in zip(Hv, v, strict=True)))
        v = normalise([h.detach() for h in Hv])
        if eigenvalue is not None and abs(eigenvalue - estimate) / (abs(eigenvalue) + 1e-6) < tol:
            break  # PyHessian returns the previous estimate here
        eigenvalue = estimate
    model.zero_grad(set_to_none=True)
    return eigenvalue, n


def loosest(run: Callable[[float], tuple[float, object, int]], value: Callable[[object], float], ref: float,
            target: float) -> tuple[float, float, int, float]:
    """The loosest tolerance of TOLS whose run reaches the target: (seconds, rel. error, HVPs, tol)."""
    for tol in TOLS:
        sec, out, n = run(tol)
        err = abs(value(out) - ref) / abs(ref)
        if err <= target:
            return sec, err, n, tol
    return sec, err, n, tol


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=1e-4, help="relative accuracy of the top eigenvalue")
    parser.add_argument("--n", type=int, default=1000, help="number of digits (training examples)")
    parser.add_argument("--width", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    ld.core.set_threads(args.threads)
    X, Y, _ = sh.digits_tensors(args.n, dtype=torch.float64)
    model = sh.make_mlp(width=args.width, seed=0, dtype=torch.float64)
    loss, params = sh.model_loss(model, X, Y)
    n_params = sum(p.numel() for p in params.values())
    ref = float(sh.top_eigs(loss, params, k=1, method="lanczos", iters=1000, tol=1e-12)[0][0])
    v = {k: torch.randn_like(t) for k, t in params.items()}
    sh.hvp(loss, params, v)  # warm-up
    t_hvp, _ = timed(lambda: sh.hvp(loss, params, v), repeat=20)
    t_grad, _ = timed(lambda: torch.func.grad(loss)(params), repeat=20)

    rows = []
    sec, err, n, tol = loosest(lambda tol: count_hvps(lambda: sh.top_eigs(loss, params, iters=1000, tol=tol)),
                               lambda out: out[0][0], ref, args.target)
    rows.append({"method": "learndyn top_eigs, power", "seconds": sec, "rel_error": err, "hvps": n, "tol": tol})
    sec, err, n, tol = loosest(lambda tol: count_hvps(lambda: sh.top_eigs(loss, params, method="lanczos",
                                                                          iters=1000, tol=tol)),
                               lambda out: out[0][0], ref, args.target)
    rows.append({"method": "learndyn top_eigs, Lanczos", "seconds": sec, "rel_error": err, "hvps": n, "tol": tol})

    def py_run(tol: float) -> tuple[float, object, int]:
        sec, (val, n) = timed(lambda: pyhessian_power(model, sh.mse_loss, X, Y, tol=tol))
        return sec, val, n

    sec, err, n, tol = loosest(py_run, float, ref, args.target)
    rows.append({"method": "PyHessian power (re-implemented)", "seconds": sec, "rel_error": err, "hvps": n,
                 "tol": tol})
    rows.append(_real_pyhessian(model, X, Y, ref, args.target))
    rows = [r for r in rows if r is not None]
    for r in rows:
        r["hvp_overhead"] = r["seconds"] / (r["hvps"] * t_hvp) if r.get("hvps") else None

    ours, py = rows[0], rows[2]
    summary = {"pyhessian_over_ours_power": py["seconds"] / ours["seconds"],
               "pyhessian_over_ours_lanczos": py["seconds"] / rows[1]["seconds"],
               "ours_power_hvp_overhead": ours["hvp_overhead"], "overhead_target": 1.3,
               "met_no_slower": py["seconds"] >= ours["seconds"], "met_overhead": ours["hvp_overhead"] <= 1.3}
    print(f"digits MLP ({args.n} x 64-{args.width}x3-10 tanh, MSE), {n_params} parameters, float64, CPU, "
          f"{torch.get_num_threads()} threads; top eigenvalue {ref:.8f}; target relative error {args.target:g}")
    print(f"one HVP {t_hvp * 1e3:.2f} ms = {t_hvp / t_grad:.2f} gradients ({t_grad * 1e3:.2f} ms)")
    print(f"{'method':36s} {'tol':>7s} {'seconds':>8s} {'rel. error':>10s} {'HVPs':>5s} {'s / (HVPs x t_hvp)':>19s}")
    for r in rows:
        hvps, over = (f"{r['hvps']:5d}", f"{r['hvp_overhead']:19.2f}") if r["hvps"] else (f"{'-':>5s}", f"{'-':>19s}")
        print(f"{r['method']:36s} {r['tol']:7.0e} {r['seconds']:8.3f} {r['rel_error']:10.1e} {hvps} {over}")
    print(f"PyHessian / ours: power {summary['pyhessian_over_ours_power']:.2f}x, "
          f"Lanczos {summary['pyhessian_over_ours_lanczos']:.2f}x (target >= 1); ours (power) "
          f"{summary['ours_power_hvp_overhead']:.2f}x (HVPs x one HVP) (target <= 1.3)")
    out = {"model": {"n": args.n, "width": args.width, "parameters": n_params, "dtype": "float64", "device": "cpu"},
           "threads": torch.get_num_threads(), "target": args.target, "top_eigenvalue": ref, "hvp_s": t_hvp,
           "grad_s": t_grad, "rows": rows, "summary": summary}
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


def _real_pyhessian(model: nn.Module, X: torch.Tensor, Y: torch.Tensor, ref: float, target: float) -> dict | None:
    """The installed `pyhessian` package, when there is one (pip install pyhessian); else None."""
    try:
        from pyhessian import hessian
    except ImportError:
        print("the pyhessian package is not installed: only the re-implementation is timed")
        return None

    def run(tol: float) -> tuple[float, object, int]:
        sec, (vals, _) = timed(lambda: hessian(model, sh.mse_loss, data=(X, Y), cuda=False).eigenvalues(
            maxIter=1000, tol=tol, top_n=1))
        return sec, vals[0], 0

    sec, err, _, tol = loosest(run, float, ref, target)
    return {"method": "PyHessian package", "seconds": sec, "rel_error": err, "hvps": 0, "tol": tol}


if __name__ == "__main__":
    main()
