"""Benchmark (not a test): one batched GD run of B = 64 seeds against a Python loop over the same 64 runs.

Same task (N1, N2, N3) = (6, 10, 8), same steps and recording, in one process; prints the speed ratio (target: at
least 10x on 2 CPU cores; threads: OMP_NUM_THREADS, else 2) and, when a GPU is present, the same comparison on the GPU.
Run: .venv/bin/python bench/bench_deep_linear.py
"""

import time

import torch

import learndyn as ld
from learndyn import deep_linear as dl

B, STEPS, EVERY = 64, 1000, 100


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def compare(device: torch.device) -> None:
    task = dl.svd_task(6, 8, [3, 2, 1, 0.5, 0.25, 0.1], seed=0)
    W1, W2 = dl.small_random_init(6, 10, 8, 1e-2, batch=B, seed=0, device="cpu")
    run = dict(eta=0.01, steps=STEPS, record_every=EVERY, U=task.U, V=task.V, device=device)
    timed(lambda: dl.train_two_layer(task.Sigma, W1[:2], W2[:2], **run))          # warm-up
    t_batch = timed(lambda: dl.train_two_layer(task.Sigma, W1, W2, **run))
    t_loop = timed(lambda: [dl.train_two_layer(task.Sigma, W1[b], W2[b], **run) for b in range(B)])
    print(f"{device.type}: batched {t_batch:.2f} s, loop {t_loop:.2f} s, ratio {t_loop / t_batch:.1f}x "
          f"(B={B}, {STEPS} steps, {torch.get_num_threads()} threads)")


if __name__ == "__main__":
    ld.core.set_threads()
    compare(torch.device("cpu"))
    if torch.cuda.is_available():
        compare(torch.device("cuda"))
