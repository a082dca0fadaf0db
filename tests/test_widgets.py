"""Unit tests of learndyn.widgets: argument checks, and the kernel-side drawing that keeps nbclient from stalling."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from learndyn import widgets as wg  # noqa: E402


def test_sliders_validate():
    assert wg.float_slider(0.5, 0.0, 1.0, 0.1, "x").value == 0.5
    with pytest.raises(ValueError, match="value"):
        wg.float_slider(2.0, 0.0, 1.0, 0.1, "x")
    with pytest.raises(ValueError, match="lo"):
        wg.float_slider(0.5, 1.0, 0.0, 0.1, "x")
    with pytest.raises(TypeError, match="value"):
        wg.int_slider("5", 1, 10, "n")
    with pytest.raises(ValueError, match="value"):
        wg.log_slider(10.0, -2, 0, "eta")
    with pytest.raises(TypeError, match="description"):
        wg.float_slider(0.5, 0.0, 1.0, 0.1, None)


def test_interactive_plot_draws_into_outputs_without_redirecting():
    calls = []

    def plot(x):
        calls.append(x)
        print("x =", x)
        plt.plot([0, 1], [0, x])

    w = wg.interactive_plot(plot, x=wg.float_slider(0.5, 0.0, 1.0, 0.1, "x"))
    assert calls == [0.5]
    assert not w.out.msg_id                                    # never asked a front end to redirect outputs
    assert any(o["output_type"] == "stream" and "x = 0.5" in o["text"] for o in w.out.outputs)
    w.children[0].value = 0.7
    assert calls == [0.5, 0.7] and any("x = 0.7" in o.get("text", "") for o in w.out.outputs)
    with pytest.raises(TypeError, match="plot"):
        wg.interactive_plot(None)


def test_a_failing_plot_shows_its_traceback():
    def plot(x):
        raise RuntimeError("boom")

    w = wg.interactive_plot(plot, x=wg.float_slider(0.5, 0.0, 1.0, 0.1, "x"))
    assert any("boom" in o.get("text", "") for o in w.out.outputs)
