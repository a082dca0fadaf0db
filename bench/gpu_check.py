"""The GPU path: every chapter's simulator on CUDA against the CPU, batched speed-ups, and the Ch 6 GPU-scale script.

For each batched simulator of `sim_cases.py` (Ch 2, 3, 4, 5, 7), Ch 6's `sharpness.train_gd_sharpness` and the
sharpness solver `sharpness.top_eigs` (methods power, krylov and lanczos, top 3, from the same start vector):
- agreement: the same runs on the CPU and on the GPU, both float64, compared by max |gpu - cpu| / max |cpu|. The
  tolerance is 1e-9: the GPU rounds differently (other kernels, other summation orders), about 1e-16 relative
  per operation, and these cases do not amplify errors: perturbing their inputs by 1e-14 (relative) on the CPU
  moved every signature by at most 2.3e-14 (measured when this script was written), so even an error of 1e-16
  added at each of 2000 steps stays below 1e-12. 1e-9 leaves that margin and still catches a wrong computation.
- speed: one batched sweep of B runs (default B = 64 and 256) on the CPU and on the GPU, and their ratio; for
  `top_eigs`, one solve on the Ch 6 digits MLP at width 100 and, for its default method, at a width where a GPU
  should win (default 512);
- Ch 6 at scale: a few hundred steps (default 300) of `bench/eos_cifar.py` on the GPU (CIFAR-10 where available,
  else its digits fallback), with its time per step.
Prints one table and writes JSON (default `bench/gpu_check.json`). Without a GPU it says so and exits 0 (nothing to
check); `--device cpu` runs the whole comparison CPU against CPU, which tests this script on a machine without one.
Run from the repository root: `.venv/bin/python bench/gpu_check.py [--B 64 256] [--eos-steps 300]`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from sim_cases import CASES, make_case  # noqa: E402

import learndyn as ld  # noqa: E402

RTOL = {"float64": 1e-9}


def rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| / max |a| (inf if either holds a non-finite value)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-300))


def timed(fn, device: torch.device) -> tuple[float, object]:
    """Wall time of fn() with the device synchronised before and after."""
    _sync(device)
    tic = time.perf_counter()
    out = fn()
    _sync(device)
    return time.perf_counter() - tic, out


def check_case(key: str, Bs: list[int], steps: int | None, device: torch.device) -> dict:
    """Agreement at B = min(Bs) and the CPU / device time of a batched sweep at every B."""
    cpu = torch.device("cpu")
    case = make_case(key, min(Bs), steps)
    a, b = case.batched(cpu), case.batched(device)
    row = {"case": case.name, "chapter": case.chapter, "dtype": "float64", "steps": case.steps,
           "rel_error": rel_diff(a, b), "rtol": RTOL["float64"], "speed": []}
    row["agree"] = row["rel_error"] <= row["rtol"]
    for B in Bs:
        sweep = make_case(key, B, steps)
        t_cpu, _ = timed(lambda s=sweep: s.batched(cpu), cpu)
        t_dev, _ = timed(lambda s=sweep: s.batched(device), device)
        row["speed"].append({"B": B, "cpu_s": t_cpu, "device_s": t_dev, "speedup": t_cpu / t_dev})
    return row


def check_sharpness(steps: int, device: torch.device) -> dict:
    """Ch 6: GD with sharpness tracking on the digits MLP (float64), CPU against the device (no batch axis)."""
    sh = ld.sharpness
    X, Y, _ = sh.digits_tensors(1000, dtype=torch.float64)

    def run(dev: torch.device) -> tuple[float, np.ndarray]:
        model = sh.make_mlp(seed=0, dtype=torch.float64)
        t, h = timed(lambda: sh.train_gd_sharpness(model, X, Y, 0.1, steps, eig_every=max(1, steps // 2),
                                                   eig_iters=20, device=dev), dev)
        return t, np.concatenate([h["loss"], h.final["sharpness"]])

    t_cpu, a = run(torch.device("cpu"))
    t_dev, b = run(device)
    err = rel_diff(a, b)
    return {"case": "sharpness.train_gd_sharpness", "chapter": "06", "dtype": "float64", "steps": steps,
            "rel_error": err, "rtol": RTOL["float64"], "agree": err <= RTOL["float64"],
            "speed": [{"B": 1, "cpu_s": t_cpu, "device_s": t_dev, "speedup": t_cpu / t_dev}]}


def check_top_eigs(widths: list[int], device: torch.device, n: int = 1000, iters: int = 45) -> list[dict]:
    """Ch 6's solver: the top 3 eigenvalues of the digits MLP (float64) on the CPU and on the device.

    Every method at widths[0], then the default method ("krylov") at each further width (where a GPU should win):
    per row, the agreement of the eigenvalues and the CPU / device time of one solve. Fixed budgets (power and
    krylov: tol 0 and `iters` products; lanczos: tol 1e-10), so both devices do the same products from one start."""
    sh = ld.sharpness
    cpu = torch.device("cpu")
    budget = {"power": {"iters": iters // 3, "tol": 0.0}, "krylov": {"iters": iters, "tol": 0.0},
              "lanczos": {"iters": 300, "tol": 1e-10}}

    def solve(method: str, width: int, dev: torch.device) -> tuple[float, np.ndarray]:
        X, Y, _ = sh.digits_tensors(n, device=dev, dtype=torch.float64)
        loss, params = sh.model_loss(sh.make_mlp(width=width, dtype=torch.float64).to(dev), X, Y)
        sh.top_eigs(loss, params, k=3, method="krylov", iters=3, tol=0.0)  # warm-up (kernels, allocator)
        sec, res = timed(lambda: sh.top_eigs(loss, params, k=3, method=method, seed=0, **budget[method]), dev)
        return sec, np.asarray(res.values, dtype=float)

    rows = []
    for method, width in [(m, widths[0]) for m in budget] + [("krylov", w) for w in widths[1:]]:
        (t_cpu, a), (t_dev, b) = solve(method, width, cpu), solve(method, width, device)
        err = rel_diff(a, b)
        rows.append({"case": f"sharpness.top_eigs[{method}, width {width}]", "chapter": "06", "dtype": "float64",
                     "steps": budget[method]["iters"], "rel_error": err, "rtol": RTOL["float64"],
                     "agree": err <= RTOL["float64"],
                     "speed": [{"B": 1, "cpu_s": t_cpu, "device_s": t_dev, "speedup": t_cpu / t_dev}]})
    return rows


def run_eos_script(steps: int, device: torch.device, extra: list[str] | None = None) -> dict:
    """A few hundred steps of bench/eos_cifar.py (Ch 6 at the scale of Cohen et al.) on `device`.

    `extra`: more arguments for the script (e.g. ["--n", "100", "--width", "16"] for a quick test)."""
    spec = importlib.util.spec_from_file_location("eos_cifar", HERE / "eos_cifar.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["--steps", str(steps), "--eta", "0.04", "--stop-acc", "1.01", "--device", device.type,
                "--out", str(Path(tmp) / "eos.npz"), *(extra or [])]  # CIFAR-10 is cached in eos_cifar's --root
        seconds, out = timed(lambda: module.main(argv), device)
    return {"script": "bench/eos_cifar.py", "data": str(out["data"]), "steps": steps, "seconds": seconds,
            "ms_per_step": 1e3 * seconds / steps, "final_loss": float(out["loss_0"][-1]),
            "final_sharpness": float(out["eigs_0"][-1][0])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--B", type=int, nargs="+", default=[64, 256], help="batch sizes of the speed comparison")
    parser.add_argument("--steps", type=int, default=None, help="steps per run (default: each case's own)")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--sharpness-steps", type=int, default=40, help="0 skips the Ch 6 agreement check")
    parser.add_argument("--eig-widths", type=int, nargs="*", default=[100, 512],
                        help="widths of the top_eigs check (every method at the first); none skips it")
    parser.add_argument("--eig-n", type=int, default=1000, help="digits of the top_eigs check")
    parser.add_argument("--eos-steps", type=int, default=300, help="steps of bench/eos_cifar.py; 0 skips it")
    parser.add_argument("--eos-args", nargs=argparse.REMAINDER, default=[],
                        help="the rest of the command line goes to bench/eos_cifar.py (e.g. --n 100 --width 16)")
    parser.add_argument("--device", default="cuda", help="the device to check against the CPU (default cuda)")
    parser.add_argument("--json", type=Path, default=HERE / "gpu_check.json")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of the CPU side")
    args = parser.parse_args(argv)
    ld.core.set_threads(args.threads)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "torch": torch.__version__,
            "python": platform.python_version(), "requested_device": args.device}
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("No GPU found: torch.cuda.is_available() is False. Nothing to check on this machine; the CPU path is "
              "what the notebooks run. (Run this script where CUDA is available, or `--device cpu` to test it.)")
        args.json.write_text(json.dumps({**meta, "gpu": None, "status": "no GPU found", "rows": []}, indent=1))
        return 0
    device = torch.device(args.device)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    rows = [check_case(key, args.B, args.steps, device) for key in args.cases]
    if args.sharpness_steps:
        rows.append(check_sharpness(args.sharpness_steps, device))
    if args.eig_widths:
        rows += check_top_eigs(args.eig_widths, device, args.eig_n)
    eos = run_eos_script(args.eos_steps, device, args.eos_args) if args.eos_steps else None
    _print_table(rows, eos, device, gpu)
    ok = all(r["agree"] for r in rows)
    args.json.write_text(json.dumps({**meta, "gpu": gpu, "device": str(device), "status": "ok" if ok else "DISAGREE",
                                     "rows": rows, "eos_cifar": eos}, indent=1))
    print(f"wrote {args.json}")
    return 0 if ok else 1


def _print_table(rows: list[dict], eos: dict | None, device: torch.device, gpu: str | None) -> None:
    Bs = [s["B"] for s in rows[0]["speed"]] if rows else []
    print(f"device {device}{f' ({gpu})' if gpu else ''} against the CPU, float64")
    head = f"{'simulator':30s} {'ch':>3s} {'steps':>6s} {'rel. error':>10s} {'tol':>7s} {'agree':>5s}"
    print(head + "".join(f"  {f'B={B}: cpu s / device s = speed-up':>32s}" for B in Bs))
    for r in rows:
        line = (f"{r['case']:30s} {r['chapter']:>3s} {r['steps']:6d} {r['rel_error']:10.1e} {r['rtol']:7.0e} "
                f"{'yes' if r['agree'] else 'NO':>5s}")
        for s in r["speed"]:
            line += f"  {s['cpu_s']:8.3f} / {s['device_s']:8.3f} = {s['speedup']:5.1f}x"
        print(line)
    if eos:
        print(f"bench/eos_cifar.py on {device}: {eos['data']}, {eos['steps']} steps in {eos['seconds']:.1f} s "
              f"({eos['ms_per_step']:.1f} ms/step), final loss {eos['final_loss']:.4g}, sharpness "
              f"{eos['final_sharpness']:.4g}")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


if __name__ == "__main__":
    sys.exit(main())
