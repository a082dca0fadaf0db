"""Benchmark (not a test): the top Hessian eigenvalues of Ch 6 by every solver, at measured equal accuracy, over seeds.

Solvers, each timed with its own set-up (graph building included) and its Hessian-vector products (HVPs) counted:
- learndyn `top_eigs` with method "power", "krylov" (the default of `train_gd_sharpness`) and "lanczos", float64,
  and "krylov" in float32 (the dtype of the chapter's runs). All three take their products from `hvp_operator`:
  reverse-over-reverse, one backward pass through a gradient graph that is built once per call;
- PyHessian's own `hessian(model, criterion, data=(X, Y)).eigenvalues(maxIter, tol, top_n)` (the `pyhessian`
  package, pinned in `bench/requirements.txt`; skipped with a message when it is not installed): deflated power
  iteration through a kept gradient graph, its start vectors from `torch.manual_seed(seed)`;
- Cohen et al.'s method (2021), written here from its description, not from their code: scipy's ARPACK `eigsh`
  (largest algebraic) over a `LinearOperator` whose every product is a fresh float32 forward and double backward
  pass (autograd of <grad L, v>), start vector from the seed;
- on the narrowed model only, the dense float64 Hessian (`exact_hessian`) and `numpy.linalg.eigvalsh`.
Accuracy: relative error |lambda_i - ref_i| / ref_i against a converged reference, the worst of i = 1..k (k = 1 and
k = 3), target 1e-4. The reference is the dense spectrum on the narrowed model and, on the Ch 6 model, `eigsh` at
tol 1e-13 (its agreement with a residual-1e-10 Krylov run is recorded). For every solver and k, its stopping
tolerance is tightened along a grid until every seed reaches the target; the runs reported are those of that one
setting, for every seed (the start vector). A solver that stops on its product budget without reaching the target
is reported at that setting, marked "not reached". Ratios between two solvers are over all pairs of seeds (their
start vectors are drawn differently, so seeds do not pair): median and interquartile range.
Overhead: seconds / (set-up + products x one product), with the product each solver calls, timed alone side by
side with each run (the median of three products just before it and three just after), so that the machine's
speed, which drifts by tens of percent over a minute on a shared host, cancels in each run's ratio.
Models: the Ch 6 digits MLP (1000 digits, 64-100-100-100-10 tanh, MSE) and the narrowed 64-32-32-32-10 on 200 digits.
Run from the repository root: `.venv/bin/python bench/bench_sharpness.py [--seeds 10] [--json out.json]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

import learndyn as ld
from learndyn import sharpness as sh

TARGET = 1e-4
KS = (1, 3)
POWER_TOLS = (1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 3e-7, 1e-7)  # relative change of the estimate
RESIDUAL_TOLS = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5)  # relative residual ||Hv - lambda v|| / lambda
ARPACK_TOLS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
POWER_BUDGET = 150  # products at most per power-type run (k = 3: 50 block iterations, or 50 per deflated eigenvalue)
Run = Callable[[int, float, int], tuple[np.ndarray, int, bool]]  # (seed, tol, k) -> (values, products, budget hit)


def stats(x: list[float]) -> dict:
    """Median and quartiles."""
    q1, med, q3 = np.percentile(np.asarray(x, dtype=float), [25, 50, 75])
    return {"median": float(med), "q1": float(q1), "q3": float(q3)}


def pair_ratio(num: list[float], den: list[float]) -> dict:
    """num_i / den_j over all pairs (i, j): median and quartiles."""
    return stats((np.asarray(num)[:, None] / np.asarray(den)[None, :]).ravel().tolist())


def timed(fn: Callable, repeat: int = 1) -> tuple[float, object]:
    """Median wall time (s) of `repeat` calls and the last result."""
    times, out = [], None
    for _ in range(repeat):
        tic = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - tic)
    return float(np.median(times)), out


class Problem:
    """One model and data set in float64 and float32 (the same weights), with its losses and parameters."""

    def __init__(self, n: int, width: int):
        self.n, self.width = n, width
        self.model = {dt: sh.make_mlp(width=width, seed=0, dtype=dt) for dt in (torch.float64, torch.float32)}
        self.data = {dt: sh.digits_tensors(n, device="cpu", dtype=dt)[:2] for dt in self.model}
        self.loss, self.params = {}, {}
        for dt, model in self.model.items():
            self.loss[dt], self.params[dt] = sh.model_loss(model, *self.data[dt])
        self.size = sum(p.numel() for p in self.params[torch.float64].values())

    def fresh_hvp(self, v: torch.Tensor) -> torch.Tensor:
        """Cohen et al.'s product: a new float32 forward pass, gradient with create_graph, autograd of <g, v>."""
        model = self.model[torch.float32]
        X, Y = self.data[torch.float32]
        params = list(model.parameters())
        grads = torch.autograd.grad(sh.mse_loss(model(X), Y), params, create_graph=True)
        dot = sum((g.reshape(-1) * c).sum() for g, c in zip(grads, torch.split(v, [p.numel() for p in params]),
                                                             strict=True))
        return torch.cat([h.reshape(-1) for h in torch.autograd.grad(dot, params)])


def solvers(pb: Problem) -> dict[str, tuple[Run, tuple[float, ...], str]]:
    """name -> (run, tolerance grid, the product it calls)."""
    f64, f32 = torch.float64, torch.float32

    def ours(method: str, dt: torch.dtype, budget: int) -> Run:
        def run(seed: int, tol: float, k: int) -> tuple[np.ndarray, int, bool]:
            iters = budget // k if method == "power" else budget
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sh.EigenToleranceWarning)
                r = sh.top_eigs(pb.loss[dt], pb.params[dt], k=k, method=method, iters=iters, tol=tol, seed=seed)
            return np.asarray(r.values, dtype=float), r.hvps, r.converged is False
        return run

    out = {"learndyn power": (ours("power", f64, POWER_BUDGET), POWER_TOLS, "kept graph, float64"),
           "learndyn krylov": (ours("krylov", f64, 400), RESIDUAL_TOLS, "kept graph, float64"),
           "learndyn lanczos": (ours("lanczos", f64, 1000), ARPACK_TOLS, "kept graph, float64"),
           "learndyn krylov float32": (ours("krylov", f32, 400), RESIDUAL_TOLS, "kept graph, float32")}
    peer = _pyhessian_run(pb)
    if peer is not None:
        out["PyHessian"] = (peer, POWER_TOLS, "kept graph, float64")
    out["Cohen et al. (eigsh)"] = (_cohen_run(pb), ARPACK_TOLS, "fresh forward/backward, float32")
    return out


def _pyhessian_run(pb: Problem) -> Run | None:
    try:
        from pyhessian import hessian  # noqa: PLC0415  (optional: bench/requirements.txt)
    except ImportError:
        print("PyHessian is not installed (`make bench` installs it): its rows are skipped")
        return None
    module = sys.modules["pyhessian.hessian"]  # the package's name `pyhessian.hessian` is the class
    model, (X, Y) = pb.model[torch.float64], pb.data[torch.float64]

    def run(seed: int, tol: float, k: int) -> tuple[np.ndarray, int, bool]:
        product, orth, count, per = module.hessian_vector_product, module.orthnormal, [0], [0] * k

        def counted(*args):
            count[0] += 1
            return product(*args)

        def deflate(w, found):  # called once per iteration, with the eigenvectors found so far
            per[len(found)] += 1
            return orth(w, found)

        module.hessian_vector_product, module.orthnormal = counted, deflate
        model.zero_grad(set_to_none=True)
        try:
            with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
                torch.manual_seed(seed)
                warnings.simplefilter("ignore", UserWarning)  # backward(create_graph=True) makes a reference cycle
                vals, _ = hessian(model, sh.mse_loss, data=(X, Y), cuda=False).eigenvalues(
                    maxIter=POWER_BUDGET // k, tol=tol, top_n=k)
        finally:
            module.hessian_vector_product, module.orthnormal = product, orth
            model.zero_grad(set_to_none=True)
        return np.sort(np.asarray(vals, dtype=float))[::-1], count[0], max(per) >= POWER_BUDGET // k
    return run


def _cohen_run(pb: Problem) -> Run:
    def run(seed: int, tol: float, k: int) -> tuple[np.ndarray, int, bool]:
        count = [0]

        def matvec(x: np.ndarray) -> np.ndarray:
            count[0] += 1
            return pb.fresh_hvp(torch.as_tensor(np.asarray(x).ravel(), dtype=torch.float32)).double().numpy()

        op = LinearOperator((pb.size, pb.size), matvec=matvec, dtype=np.float32)
        v0 = np.random.default_rng(seed).standard_normal(pb.size).astype(np.float32)
        try:
            vals = eigsh(op, k=k, which="LA", v0=v0, tol=tol, maxiter=200, return_eigenvectors=False)
            hit = False
        except ArpackNoConvergence as err:
            vals, hit = err.eigenvalues if len(err.eigenvalues) == k else np.full(k, np.nan), True
        return np.sort(np.asarray(vals, dtype=float))[::-1], count[0], hit
    return run


def rel_error(vals: np.ndarray, ref: np.ndarray) -> float:
    """The worst relative error of the top k (inf if a value is missing or not finite)."""
    k = len(vals)
    err = np.abs(vals - ref[:k]) / np.abs(ref[:k])
    return float(err.max()) if np.all(np.isfinite(err)) else float("inf")


def one(run: Run, seed: int, tol: float, k: int, ref: np.ndarray, product: Callable[[], object]) -> dict:
    """One timed run: seconds, products, worst relative error, whether its product budget stopped it, and the
    seconds of one of its products timed alone around it (median of three before the run and three after)."""
    alone = [timed(product)[0] for _ in range(3)]
    sec, (vals, products, hit) = timed(lambda: run(seed, tol, k))
    alone += [timed(product)[0] for _ in range(3)]
    return {"seed": seed, "seconds": sec, "products": products, "rel_error": rel_error(vals, ref),
            "budget_hit": bool(hit), "product_s": float(np.median(alone))}


def at_target(run: Run, tols: tuple[float, ...], k: int, seeds: list[int], ref: np.ndarray,
              target: float, product: Callable[[], object]) -> dict:
    """Tighten the tolerance until every seed reaches `target`: the runs of that setting, and the ones tried before.

    A setting fails at its first seed that misses. Tightening stops at the end of the grid, or once a missing run
    was stopped by its product budget (a tighter tolerance cannot help): then every seed is run at that setting."""
    tried = []
    for i, tol in enumerate(tols):
        runs = []
        for seed in seeds:
            runs.append(one(run, seed, tol, k, ref, product))
            if runs[-1]["rel_error"] > target:
                break
        missed = runs[-1]["rel_error"] > target
        last = i == len(tols) - 1 or (missed and runs[-1]["budget_hit"])
        if missed and last:
            runs += [one(run, s, tol, k, ref, product) for s in seeds[len(runs):]]
        if not missed or last:
            break
        tried.append({"tol": tol, "runs": runs})
    errs = [r["rel_error"] for r in runs]
    return {"tol": tol, "reached": not missed, "runs": runs, "tried": tried,
            "seconds": stats([r["seconds"] for r in runs]), "products": stats([r["products"] for r in runs]),
            "rel_error": stats(errs), "max_rel_error": float(max(errs))}


def product_times(pb: Problem) -> tuple[dict, dict[str, Callable[[], object]]]:
    """Seconds of one product of each kind, timed alone (median of repeats), and of a gradient; and each kind's
    product as a callable, for timing it beside each run."""
    out, products = {}, {}
    for dt, name in ((torch.float64, "float64"), (torch.float32, "float32")):
        loss, params = pb.loss[dt], pb.params[dt]
        x = torch.randn(pb.size, dtype=dt, generator=torch.Generator().manual_seed(0))
        build, op = timed(lambda loss=loss, params=params: sh.hvp_operator(loss, params), repeat=5)
        products[f"kept graph, {name}"] = lambda op=op, x=x: op(x)
        op(x)
        out[f"kept graph, {name}"] = {"build_s": build, "product_s": timed(lambda op=op, x=x: op(x), repeat=20)[0]}
        out[f"grad_{name}_s"] = timed(lambda loss=loss, params=params: torch.func.grad(loss)(params), repeat=10)[0]
    x = torch.randn(pb.size, generator=torch.Generator().manual_seed(0))
    products["fresh forward/backward, float32"] = lambda: pb.fresh_hvp(x)
    pb.fresh_hvp(x)
    out["fresh forward/backward, float32"] = {"build_s": 0.0, "product_s": timed(lambda: pb.fresh_hvp(x), 20)[0]}
    return out, products


def compare(pb: Problem, ref: np.ndarray, seeds: list[int], target: float, only: list[str] | None = None) -> dict:
    """Every solver (or those named in `only`) at k = 1 and 3 on one problem, with its overhead over its products."""
    times, products = product_times(pb)
    rows = []
    for name, (run, tols, product) in solvers(pb).items():
        if only and name not in only:
            continue
        run(seeds[0], tols[0], 1)  # warm-up
        for k in KS:
            res = at_target(run, tols, k, seeds, ref, target, products[product])
            build = times[product]["build_s"]
            over = [r["seconds"] / (build + r["products"] * r["product_s"]) for r in res["runs"]]
            rows.append({"method": name, "k": k, "product": product, **res, "overhead": stats(over)})
            print(f"  {name:24s} k={k} tol {res['tol']:.0e}: {res['products']['median']:6.0f} products, "
                  f"{res['seconds']['median']:7.3f} s, worst error {res['max_rel_error']:.1e}"
                  f"{'' if res['reached'] else ' (target NOT reached)'}", flush=True)
    return {"model": {"n": pb.n, "width": pb.width, "parameters": pb.size}, "reference": ref.tolist(),
            "product_times": times, "rows": rows}


def ratios(rows: list[dict], ours: tuple[str, ...] = ("learndyn krylov", "learndyn power", "learndyn lanczos")) -> list:
    """Seconds of every other solver over each of ours, over all pairs of seeds, per k (only where both reached)."""
    out = []
    for k in KS:
        by = {r["method"]: r for r in rows if r["k"] == k}
        for mine in ours:
            for peer, r in by.items():
                if peer == mine or peer.startswith("learndyn") or mine not in by:
                    continue
                both = r["reached"] and by[mine]["reached"]
                out.append({"k": k, "peer": peer, "ours": mine, "both_reached": both, "seconds": pair_ratio(
                    [x["seconds"] for x in r["runs"]], [x["seconds"] for x in by[mine]["runs"]]),
                    "products": pair_ratio([x["products"] for x in r["runs"]],
                                           [x["products"] for x in by[mine]["runs"]])})
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="start vectors per solver")
    parser.add_argument("--target", type=float, default=TARGET, help="relative error of each of the top k")
    parser.add_argument("--n", type=int, default=1000, help="digits of the Ch 6 model")
    parser.add_argument("--width", type=int, default=100, help="width of the Ch 6 model")
    parser.add_argument("--narrow-n", type=int, default=200, help="digits of the narrowed model")
    parser.add_argument("--narrow-width", type=int, default=32, help="width of the narrowed model")
    parser.add_argument("--solvers", nargs="+", default=None, help="only these solvers (by name; default all)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    ld.core.set_threads(args.threads)
    seeds = list(range(args.seeds))
    out = {"target": args.target, "seeds": args.seeds, "threads": torch.get_num_threads(), "power_budget": POWER_BUDGET}

    narrow = Problem(args.narrow_n, args.narrow_width)
    t_dense, spectrum = timed(lambda: np.linalg.eigvalsh(sh.exact_hessian(narrow.loss[torch.float64],
                                                                         narrow.params[torch.float64])), repeat=3)
    dense_ref = spectrum[::-1][:max(KS) + 1].copy()
    check = _reference(narrow)
    print(f"narrowed model: {narrow.size} parameters, {args.narrow_n} digits; dense Hessian + eigvalsh {t_dense:.2f} s;"
          f" top eigenvalues {np.array2string(dense_ref, precision=6)}; eigsh reference against dense: "
          f"{np.max(np.abs(check[:len(dense_ref)] - dense_ref) / dense_ref):.1e}", flush=True)
    out["narrow"] = compare(narrow, dense_ref, seeds, args.target, args.solvers)
    out["narrow"].update(dense_s=t_dense, reference_method="dense float64 Hessian + eigvalsh",
                         eigsh_reference_vs_dense=float(np.max(np.abs(check[:len(dense_ref)] - dense_ref) / dense_ref)))

    full = Problem(args.n, args.width)
    ref = _reference(full)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sh.EigenToleranceWarning)
        second = sh.top_eigs(full.loss[torch.float64], full.params[torch.float64], k=len(ref), method="krylov",
                             iters=1500, tol=1e-10, seed=99).values
    agree = float(np.max(np.abs(second - ref) / ref))
    print(f"Ch 6 model: {full.size} parameters, {args.n} digits; reference (eigsh tol 1e-13) "
          f"{np.array2string(ref, precision=6)}; a residual-1e-10 Krylov run agrees to {agree:.1e}", flush=True)
    out["full"] = compare(full, ref, seeds, args.target, args.solvers)
    out["full"].update(reference_method="eigsh (tol 1e-13) on float64 kept-graph products", reference_check=agree)
    for key in ("narrow", "full"):
        out[key]["ratios"] = ratios(out[key]["rows"])
    mine = [r for r in out["narrow"]["rows"] if r["method"] == "learndyn krylov" and r["k"] == max(KS)]
    if mine:  # the dense route gives every eigenvalue at once: against our top 3
        out["narrow"]["dense_over_krylov_top3"] = stats([t_dense / r["seconds"] for r in mine[0]["runs"]])
    _print(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


def _reference(pb: Problem) -> np.ndarray:
    r = sh.top_eigs(pb.loss[torch.float64], pb.params[torch.float64], k=max(KS) + 1, method="lanczos", iters=3000,
                    tol=1e-13, seed=12345)
    return np.asarray(r.values, dtype=float)


def _print(out: dict) -> None:
    """The tables: per model, per k, every solver at its equal-accuracy setting; then the ratios."""
    for key in ("narrow", "full"):
        res = out[key]
        m = res["model"]
        print(f"\n{'narrowed' if key == 'narrow' else 'Ch 6'} model ({m['n']} digits, width {m['width']}, "
              f"{m['parameters']} parameters), {out['seeds']} seeds, target {out['target']:g}: "
              "median [interquartile range]")
        print(f"{'solver':24s} {'k':>1s} {'tol':>6s} {'products':>15s} {'seconds':>20s} {'worst error':>11s} "
              f"{'overhead':>17s}")
        for r in res["rows"]:
            p, s, o = r["products"], r["seconds"], r["overhead"]
            print(f"{r['method']:24s} {r['k']:1d} {r['tol']:6.0e} {p['median']:5.0f} [{p['q1']:3.0f}-{p['q3']:3.0f}] "
                  f"{s['median']:7.3f} [{s['q1']:.3f}-{s['q3']:.3f}] {r['max_rel_error']:11.1e} "
                  f"{o['median']:5.2f} [{o['q1']:.2f}-{o['q3']:.2f}]{'' if r['reached'] else '  NOT REACHED'}")
        if "dense_over_krylov_top3" in res:
            d = res["dense_over_krylov_top3"]
            print(f"dense float64 Hessian + eigvalsh: {res['dense_s']:.3f} s; over learndyn krylov's top 3: "
                  f"{d['median']:.1f} [{d['q1']:.1f}-{d['q3']:.1f}]")
        print("seconds of a peer / seconds of ours, over all pairs of seeds: median [interquartile range]")
        for q in res["ratios"]:
            s = q["seconds"]
            print(f"  k={q['k']} {q['peer']:24s} / {q['ours']:17s} {s['median']:6.2f} [{s['q1']:.2f}-{s['q3']:.2f}]"
                  f"{'' if q['both_reached'] else '  (not at equal accuracy: one did not reach the target)'}")


if __name__ == "__main__":
    main()
