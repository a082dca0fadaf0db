"""Execute the book's chapter notebooks into Jupyter Book's execution cache, several at a time, before the build.

    python scripts/execute_chapters.py [--jobs 2] [CHAPTER ...]
    python scripts/execute_chapters.py --check      # only say which chapters the cache lacks (exit 1 if any)

`jupyter-book build` (execute_notebooks: cache) executes every notebook it finds no cached run of, one after the
other, each kernel with OMP_NUM_THREADS threads. The chapters are mostly small tensors and Python loops, which a
second thread does not speed up, so `make book` first runs them here `--jobs` at a time, each kernel on
OMP_NUM_THREADS / jobs threads (at least one), and stores each run in `_build/.jupyter_cache` exactly as myst-nb
would; the build then finds every chapter cached ("Using cached notebook" in its log) and executes none.

Each chapter is read the way the build reads it: its source after the book's `source-read` transforms
(`_ext/book_html.fold_check_code` tags the check cells `hide-input`; a tag is cell metadata, which the cache's
hash covers) through myst-nb's MyST reader; a chapter the cache already holds is skipped. The kernel runs in the
chapter's folder (execute.run_in_temp is off), so its check records land in `_build/checks/` as in the build.
Longest chapters start first (the last run's times, `_build/chapter-seconds.json`, else a fixed order).

Exit status 1 when a cell raised (its traceback is printed) or a notebook timed out: the build would stop there too
(nb_execution_raise_on_error), and the failed chapter is not cached.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path

import nbformat
import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution
from myst_nb.core.read import read_myst_markdown_notebook
from myst_parser.config.main import MdParserConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from book_html import fold_check_code  # noqa: E402  (the build's source-read transform of chapter sources)

CACHE = ROOT / "_build" / ".jupyter_cache"
TIMES = ROOT / "_build" / "chapter-seconds.json"  # the last run's time of each chapter (kept by `make test`)
# Without a record of the last run: the chapters roughly from slowest to fastest (2 cores, 2026-12).
DEFAULT_ORDER = ["06", "02", "07", "04", "03", "05", "01", "08", "00"]


def chapters(toc: dict) -> list[Path]:
    """The chapter sources of the table of contents (chapters/NN_*.md), in book order."""
    files = [c["file"] for part in toc.get("parts", []) for c in part["chapters"]]
    return [ROOT / f"{f}.md" for f in files if f.startswith("chapters/") and (ROOT / f"{f}.md").is_file()]


def read_as_built(path: Path, extensions: list[str]) -> nbformat.NotebookNode:
    """The notebook myst-nb makes of a chapter during `jupyter-book build` (same transform, reader and options)."""
    source = fold_check_code(path.read_text(encoding="utf-8"))
    config = MdParserConfig(enable_extensions=set(extensions))
    return read_myst_markdown_notebook(source, config=config, add_source_map=True, path=str(path))


def _execute(nb: nbformat.NotebookNode, cwd: str, timeout: int, threads: int) -> tuple[dict, float, str | None]:
    """Run one notebook in a fresh kernel (in a worker process); the executed notebook, seconds, traceback."""
    os.environ["OMP_NUM_THREADS"] = str(threads)  # the kernel inherits it; learndyn.setup() follows it
    result = single_nb_execution(nb, cwd=cwd, timeout=timeout, allow_errors=False, meta_override=True)
    return result.nb, result.time, result.exc_string if result.err is not None else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter name prefixes (default: every chapter of _toc.yml)")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at once (default 2)")
    parser.add_argument("--check", action="store_true",
                        help="execute nothing: exit 1 naming the chapters whose current source the cache lacks "
                             "(a translated edition is built from the cache of `make book`, never executed again)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    execute = config.get("execute", {})
    if execute.get("execute_notebooks") != "cache" or execute.get("cache") or execute.get("run_in_temp"):
        print("execute_notebooks is not `cache` into _build/.jupyter_cache in the book's folder: nothing to do")
        return 0
    timeout = int(execute.get("timeout", 30))
    extensions = config.get("parse", {}).get("myst_enable_extensions", [])
    threads = max(1, int(os.environ.get("OMP_NUM_THREADS") or 2) // args.jobs)

    cache = get_cache(str(CACHE))
    todo: dict[Path, nbformat.NotebookNode] = {}
    excluded = execute.get("exclude_patterns") or []
    for path in chapters(toc):
        if args.chapters and not any(path.stem.startswith(c) for c in args.chapters):
            continue
        if any(fnmatch.fnmatch(str(p), pattern) for pattern in excluded for p in (path, path.relative_to(ROOT))):
            continue  # the build does not execute it either
        nb = read_as_built(path, extensions)
        try:
            cache.match_cache_notebook(nb)
            if not args.check:
                print(f"{path.stem}: cached")
        except KeyError:
            todo[path] = nb
    if args.check:
        if todo:
            print(f"the execution cache ({CACHE.relative_to(ROOT)}) has no run of the current source of: "
                  + ", ".join(p.stem for p in todo) + ". Run `make book` first (it executes them), then this again.",
                  file=sys.stderr)
            return 1
        return 0
    last = json.loads(TIMES.read_text()) if TIMES.is_file() else {}
    rank = {p: (-last.get(p.stem, 0.0), next((i for i, k in enumerate(DEFAULT_ORDER) if p.stem.startswith(k)), 99))
            for p in todo}
    queue = sorted(todo, key=rank.__getitem__)
    if not queue:
        return 0
    print(f"executing {len(queue)} chapters, {args.jobs} at a time, {threads} thread(s) each: "
          + " ".join(p.stem[:2] for p in queue), flush=True)

    failed, begin = [], time.time()
    # spawned workers: a forked one would share the parent's open connection to the cache's SQLite database
    with ProcessPoolExecutor(max_workers=min(args.jobs, len(queue)), mp_context=multiprocessing.get_context("spawn")) \
            as pool:
        running: dict[Future, Path] = {pool.submit(_execute, todo[p], str(p.parent), timeout, threads): p
                                       for p in queue}
        pending = set(running)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                path = running[future]
                try:
                    nb, seconds, error = future.result()
                except Exception as crash:  # the kernel died, or the worker: the chapter did not run
                    failed.append(path.stem)
                    print(f"{path.stem}: the notebook did not run: {crash!r}", flush=True)
                    continue
                last[path.stem] = round(seconds, 1)
                if error:
                    failed.append(path.stem)
                    print(f"{path.stem}: a cell raised after {seconds:.0f} s\n{error}", flush=True)
                    continue
                record = cache.cache_notebook_bundle(
                    CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
                    check_validity=False, overwrite=True)
                print(f"{path.stem}: executed in {seconds:.0f} s (cache ID {record.pk})", flush=True)
    TIMES.write_text(json.dumps(last, indent=1) + "\n")
    print(f"chapters executed in {time.time() - begin:.0f} s" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
