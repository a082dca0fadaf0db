"""The Colab path: the package alone, as `pip install` of the repository gives it, runs a chapter.

Builds learndyn as a wheel, installs it into a fresh virtual environment with only what `pyproject.toml` declares
(plus what Colab already has: its own torch, a Jupyter kernel and ipywidgets; torch is pinned to this machine's CPU
build as a stand-in for Colab's), and executes chapter notebooks there with nbclient. A chapter must never depend
on something only the book's toolchain (`requirements.txt`) installs. Needs the package registry.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Colab's preinstalled stack, stood in for by what this machine can install offline-fast.
COLAB_PREINSTALLED = ["torch==2.13.0", "ipykernel", "nbclient", "nbformat", "ipywidgets"]
CHAPTERS = sorted((ROOT / "colab").glob("*.ipynb"))  # the Colab editions: what the Colab button opens


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
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *COLAB_PREINSTALLED], check=True, capture_output=True)
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True)
    return py


def test_wheel_declares_no_book_toolchain(colab_python):
    out = subprocess.run([str(colab_python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                         check=True).stdout.lower()
    for tool in ("jupyter-book", "sphinx", "pytest", "nbval", "jupytext"):
        assert f"{tool}==" not in out, f"{tool} is installed in the Colab stand-in: the test would prove nothing"


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_with_the_package_alone(colab_python, notebook, tmp_path):
    script = (
        "import nbformat\n"
        "from nbclient import NotebookClient\n"
        f"nb = nbformat.read({str(notebook)!r}, as_version=4)\n"
        f"resources = {{'metadata': {{'path': {str(tmp_path)!r}}}}}\n"
        "NotebookClient(nb, timeout=600, kernel_name='python3', resources=resources).execute()\n"
    )
    run = subprocess.run([str(colab_python), "-c", script], capture_output=True, text=True,
                         env={"PATH": str(colab_python.parent), "HOME": str(tmp_path), "MPLBACKEND": "Agg"})
    assert run.returncode == 0, f"{notebook.name} failed with the package alone:\n{run.stderr[-3000:]}"
