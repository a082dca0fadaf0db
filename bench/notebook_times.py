"""Execute each chapter notebook in a fresh kernel and print a table of seconds per notebook.

Usage (from the repository root): .venv/bin/python bench/notebook_times.py [chapters/NN_slug.ipynb ...]
The budget is 60 s per notebook on 2 CPU cores; a notebook over budget is flagged. Not a test: timings are noisy.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

BUDGET_S = 60.0
ROOT = Path(__file__).resolve().parents[1]


def run(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "chapters").glob("*.ipynb"))
    rows = [(p.name, run(p)) for p in paths]
    width = max(len(name) for name, _ in rows)
    print(f"{'notebook':<{width}}  seconds  budget")
    for name, secs in rows:
        print(f"{name:<{width}}  {secs:7.1f}  {'ok' if secs <= BUDGET_S else 'OVER'}")
    print(f"{'total':<{width}}  {sum(s for _, s in rows):7.1f}")
    return 0 if all(s <= BUDGET_S for _, s in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
