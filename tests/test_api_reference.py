"""The API reference's docstring conversion (`_ext/api_reference.py`): every docstring of learndyn reads as valid
reStructuredText, labels become links, and a chapter's first use of a function links to its entry."""

import importlib
import inspect
import io
import sys
from pathlib import Path

import pytest
from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import roles
from sphinx.util.docstrings import prepare_docstring

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import api_reference as api  # noqa: E402

MODULES = sorted(p.stem for p in (ROOT / "api").glob("*.md") if p.stem != "index")
for _role in ("eq", "prf:ref", "ref", "numref"):  # Sphinx's roles, unknown to plain docutils
    roles.register_generic_role(_role, nodes.emphasis)


def _documented(module: str):
    mod = importlib.import_module(f"learndyn.{module}")
    yield module, mod
    for name, obj in vars(mod).items():
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == mod.__name__ \
                and not name.startswith("_") and obj.__doc__:
            yield name, obj


def test_every_module_has_a_page_and_the_index_lists_it():
    index = (ROOT / "api" / "index.md").read_text()
    package = {p.stem for p in (ROOT / "lib" / "learndyn").glob("*.py")} - {"__init__", "colab"}
    assert set(MODULES) == package | {"checks"}, "one API page per learndyn module (colab is build tooling)"
    for module in MODULES:
        assert f"learndyn.{module}" in index and f".. automodule:: learndyn.{module}" in (
            ROOT / "api" / f"{module}.md").read_text()


@pytest.mark.parametrize("module", MODULES)
def test_every_docstring_converts_without_a_warning(module):
    for name, obj in _documented(module):
        rst = "\n".join(api.to_rst(prepare_docstring(obj.__doc__))).replace(".. code-block:: text", "::")
        err = io.StringIO()
        publish_doctree(rst, settings_overrides={"warning_stream": err, "report_level": 2})
        assert not err.getvalue(), f"{module}.{name}: {err.getvalue()}"


def test_labels_become_links_and_markup_is_escaped():
    line = api.inline("eq. `eq-saxe-time`, Theorem `thm-ssl1-grads`, see `noncontrastive_pop_grads`(x); |W|_F * 2")
    assert ":eq:`eq-saxe-time`" in line and ":prf:ref:`thm-ssl1-grads`" in line
    assert "``noncontrastive_pop_grads``\\ (x)" in line and "\\|W\\|_F \\* 2" in line
    assert api.inline("the bound eq-diag-kkt-bound and Theorem thm-wu-exit") == (
        "the bound :eq:`eq-diag-kkt-bound` and :prf:ref:`thm-wu-exit`")
    code = api.to_rst(["    w = u + v    (eq-soudry-log-time),"])
    assert "       w = u + v," in code and "(:eq:`eq-soudry-log-time`)" in code
    out = api.to_rst(["Flow:", "", "    dW/dt = -grad L", "", "- one item", "  continued", "- two"])
    assert out[:2] == ["Flow:", ""] and ".. code-block:: text" in out and "- one item continued" in out


def test_first_use_of_a_function_links_to_its_entry():
    cell = ('<span class="n">ld</span><span class="o">.</span><span class="n">barlow</span><span class="o">.</span>'
            '<span class="n">train_barlow_linear</span>')
    prose = '<code class="docutils literal notranslate"><span class="pre">ld.ssl.tian_fixed_points</span></code>'
    body = api.link_first_uses(cell + " " + cell + " " + prose, lambda page: f"../{page}.html")
    assert body.count('class="api-link"') == 2  # the second use of train_barlow_linear is not linked
    # barlow re-exports barlow_sim's simulators: the link goes to the module that defines the function
    assert 'href="../api/barlow_sim.html#learndyn.barlow_sim.train_barlow_linear"' in body
    assert 'href="../api/ssl.html#learndyn.ssl.tian_fixed_points"' in body
    assert api.link_first_uses(cell.replace("train_barlow_linear", "no_such_function"), str) == cell.replace(
        "train_barlow_linear", "no_such_function")
