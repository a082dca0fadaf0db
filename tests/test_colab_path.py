"""The Colab path: the package alone, as `pip install` of the repository gives it, runs a chapter.

Builds learndyn as a wheel, installs it into a fresh virtual environment with only what `pyproject.toml` declares
(plus what Colab already has: its own torch, a Jupyter kernel and ipywidgets; torch is pinned to this machine's CPU
build as a stand-in for Colab's), and runs there the setup and imports cells of every Colab edition and one whole
chapter (the Preface: widgets, figures, checks). Every cell of every chapter already runs in the book's build; what
is particular to Colab is the environment, and that is covered without a third execution of the book: no chapter
imports a module Colab lacks, and no module of learndyn that a chapter can reach imports one either (a static scan of
every import statement, at any depth, of the package). The preinstalled stack is linked in from this machine, so
only the wheel itself is installed.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Colab's preinstalled stack, stood in for by what this machine can install offline-fast.
COLAB_PREINSTALLED = ["ipykernel", "nbclient", "nbformat", "ipywidgets"]  # and torch (linked in: colab_python)
CHAPTERS = sorted((ROOT / "colab").glob("*.ipynb"))  # the Colab editions: what the Colab button opens
WHOLE = "00_preface"  # the chapter run whole in the stand-in
# What Colab provides besides the declared dependencies (its kernel; ipywidgets is the `widgets` extra).
COLAB_PROVIDED = {"IPython", "ipykernel", "ipywidgets", "matplotlib_inline"}
# pyproject's dependencies, as imported
DECLARED = {"numpy", "scipy", "matplotlib", "torch", "sklearn", "threadpoolctl"}
# learndyn's tooling for the book's authors and instructors (notebook conversion, student editions and their
# translation): never imported by a chapter.
TOOLING = {"learndyn.colab", "learndyn.teach", "learndyn.i18n"}


def _imports(tree: ast.AST) -> set[str]:
    """The modules an AST imports, at any depth (inside functions too)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _code_cells(notebook: Path) -> list[str]:
    nb = json.loads(notebook.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def _package_modules() -> dict[str, set[str]]:
    """Each module of learndyn (dotted name) with the modules it imports."""
    lib = ROOT / "lib"
    return {".".join(p.relative_to(lib).with_suffix("").parts).removesuffix(".__init__"): _imports(ast.parse(
        p.read_text())) for p in (lib / "learndyn").rglob("*.py")}


@pytest.fixture(scope="module")
def colab_python(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("colab")
    src = tmp / "src"  # build from a copy: setuptools writes build/ and *.egg-info/ next to the sources
    shutil.copytree(ROOT / "lib", src / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(src)],
                   check=True, capture_output=True)
    wheel = next((tmp / "dist").glob("learndyn-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(tmp / "venv")], check=True)
    py = tmp / "venv" / "bin" / "python"
    # Colab's preinstalled stack (torch, the kernel and widgets, and the scientific packages learndyn declares, all
    # of which Colab has): this machine's, with what they need, linked in rather than installed again (torch alone
    # is 700 MB); pip sees them as installed and keeps them, as it keeps Colab's, so it installs only the wheel.
    # Nothing else is there: an import of an undeclared package fails as it would on a bare Python.
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    stack = ["torch", *COLAB_PREINSTALLED, *_declared_dependencies()]
    (site / "colab-preinstalled.pth").write_text(str(_link_distributions(stack, tmp / "preinstalled")) + "\n")
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True)
    return py


def _declared_dependencies() -> list[str]:
    """The distribution names of pyproject.toml's [project] dependencies."""
    text = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)\]", text, re.S | re.M).group(1)
    return [re.match(r"[A-Za-z0-9_.-]+", dep).group(0) for dep in re.findall(r'"([^"]+)"', block)]


def _link_distributions(names: list[str], target: Path) -> Path:
    """A folder of links to the installed files of these distributions and of everything they require (extras
    aside; pip and setuptools come with every virtual environment)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    target.mkdir()
    todo, seen = list(names), {"pip", "setuptools"}
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        dist = metadata.distribution(name)
        root = Path(dist.locate_file(""))
        for top in {Path(str(f)).parts[0] for f in dist.files or []} - {"..", "bin"}:
            if (root / top).exists() and not (target / top).exists():
                (target / top).symlink_to(root / top)
        reqs = [Requirement(r) for r in dist.requires or []]  # those that apply here (markers), extras aside
        todo += [r.name for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]
    return target


def test_wheel_declares_no_book_toolchain(colab_python):
    out = subprocess.run([str(colab_python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                         check=True).stdout.lower()
    for tool in ("jupyter-book", "sphinx", "pytest", "nbval", "jupytext"):
        assert f"{tool}==" not in out, f"{tool} is installed in the Colab stand-in: the test would prove nothing"


def _allowed(module: str) -> bool:
    top = module.split(".")[0]
    return top in sys.stdlib_module_names or top in DECLARED | COLAB_PROVIDED or (
        top == "learndyn" and not any(module == t or module.startswith(t + ".") for t in TOOLING))


def test_no_chapter_and_no_module_it_reaches_needs_the_book_toolchain():
    """Static: every import of every Colab edition, and of every learndyn module except the authors' tooling, is the
    standard library, a declared dependency or part of Colab."""
    bad = {}
    for notebook in CHAPTERS:
        with warnings.catch_warnings():  # a cell's "\\mu" in a plain string is the chapter's business, not this test's
            warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
            found = set().union(*(_imports(ast.parse("\n".join(line for line in cell.splitlines()
                                                                 if not line.lstrip().startswith(("%", "!")))))
                                  for cell in _code_cells(notebook)))
        bad.update({f"{notebook.name}: {m}": "" for m in found if not _allowed(m)})
    for module, found in _package_modules().items():
        if module not in TOOLING:
            bad.update({f"{module}: {m}": "" for m in found if not _allowed(m)})
    assert not bad, f"imports Colab does not provide: {sorted(bad)}"


def _run(colab_python: Path, notebooks: list[Path], tmp_path: Path, cells: int | None = None
         ) -> subprocess.CompletedProcess:
    """Execute the notebooks (or the first `cells` code cells of each) one after the other in one kernel of the
    stand-in, with nbclient."""
    script = (
        "import nbformat\n"
        "from nbclient import NotebookClient\n"
        "cells = []\n"
        f"for path in {[str(n) for n in notebooks]!r}:\n"
        "    nb = nbformat.read(path, as_version=4)\n"
        f"    cells += [c for c in nb.cells if c.cell_type == 'code'][:{cells}]\n"
        "nb.cells = cells\n"
        f"resources = {{'metadata': {{'path': {str(tmp_path)!r}}}}}\n"
        "NotebookClient(nb, timeout=600, kernel_name='python3', resources=resources).execute()\n"
    )
    return subprocess.run([str(colab_python), "-c", script], capture_output=True, text=True,
                          env={"PATH": str(colab_python.parent), "HOME": str(tmp_path), "MPLBACKEND": "Agg"})


def test_setup_and_imports_of_every_chapter_run_with_the_package_alone(colab_python, tmp_path):
    """Each chapter's install cell, then its imports and ld.setup, in one kernel (an import that one chapter makes
    is one the next can make: sharing the kernel hides nothing, and saves a torch import per chapter)."""
    run = _run(colab_python, CHAPTERS, tmp_path, cells=2)
    assert run.returncode == 0, f"a chapter's setup failed with the package alone:\n{run.stderr[-3000:]}"


def test_a_whole_chapter_runs_with_the_package_alone(colab_python, tmp_path):
    notebook = ROOT / "colab" / f"{WHOLE}.ipynb"
    run = _run(colab_python, [notebook], tmp_path)
    assert run.returncode == 0, f"{notebook.name} failed with the package alone:\n{run.stderr[-3000:]}"
