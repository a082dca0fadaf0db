"""Unit tests of learndyn.checks: a check passes, fails loudly, and records."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from learndyn import checks


def test_check_close_passes_and_prints(capsys):
    checks.start_chapter("unit")
    checks.check_close("pi", 3.1416, np.pi, atol=1e-4, why="4 digits", against="math.pi")
    out = capsys.readouterr().out
    assert out.startswith("PASS  pi\n") and "measured 3.142" in out and "atol 0.0001" in out
    assert "tolerance: 4 digits" in out


def test_check_close_fails_with_message():
    with pytest.raises(AssertionError, match="FAIL  off by one percent\n      measured 1.01, expected 1"):
        checks.check_close("off by one percent", 1.01, 1.0, rtol=1e-3, why="tight", against="x")


def test_check_close_arrays_tensors_and_nan():
    checks.check_close("arrays", torch.ones(3), np.ones(3), atol=0, why="exact", kind="sanity")
    with pytest.raises(AssertionError, match="nan"):
        checks.check_close("nan never passes", np.array([1.0, np.nan]), 1.0, atol=10, why="huge", kind="sanity")
    with pytest.raises(ValueError, match="broadcast"):
        checks.check_close("shapes", np.ones(3), np.ones(2), atol=1, why="x", kind="sanity")


def test_reason_is_required_and_tolerances_validated():
    with pytest.raises(ValueError, match="why"):
        checks.check_close("no reason", 1.0, 1.0, atol=1, against="x")
    with pytest.raises(ValueError, match="rtol"):
        checks.check_close("negative", 1.0, 1.0, rtol=-1, why="x", against="x")


def test_check_between_and_less():
    checks.check_between("ratio", [1.9, 2.1], 1.8, 2.2, why="first order")
    with pytest.raises(AssertionError, match="allowed"):
        checks.check_between("ratio", 2.3, 1.8, 2.2, why="first order")
    checks.check_less("bound", [1.0, 2.0], [1.0, 3.0], why="theorem")
    with pytest.raises(AssertionError, match="bound"):
        checks.check_less("bound", 1.1, 1.0, why="theorem")


def test_records_are_written_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("LEARNDYN_CHECKS_DIR", str(tmp_path))
    checks.start_chapter("rec")
    checks.check_close("a", 1.0, 1.0, atol=0.1, why="w", against="x")
    checks.check_close("a", 1.05, 1.0, atol=0.1, why="w", against="x")  # same name: replaced, not duplicated
    with pytest.raises(AssertionError):
        checks.check_less("b", 2.0, 1.0, why="w", source="Paper, Fig. 1")
    rows = json.loads((tmp_path / "rec.json").read_text())
    assert [r["name"] for r in rows] == ["a", "b"]
    assert rows[0]["measured"] == pytest.approx(1.05) and rows[0]["passed"]
    assert not rows[1]["passed"] and rows[1]["source"] == "Paper, Fig. 1"
    assert (tmp_path / "rec.json").read_text() == json.dumps(rows, indent=1)  # each row encoded once, same text
    (tmp_path / "rec.json").unlink()  # removed behind the writer's back: the next record starts a new file
    checks.check_close("c", 1.0, 1.0, atol=0.1, why="w", against="x")
    assert [r["name"] for r in json.loads((tmp_path / "rec.json").read_text())] == ["c"]
    checks.start_chapter("rec")  # a re-run starts afresh
    assert not (tmp_path / "rec.json").exists()


# --- kinds, resolution, slack --------------------------------------------------------------------------------------
def _passes(m, e, rtol, atol):
    """The check_close test, along the last axis (one row per perturbed prediction)."""
    return np.all(np.abs(m - e) <= atol + rtol * np.abs(e), axis=-1)


def _brute_resolution(m, e, rtol, atol, grid):
    """Perturb the prediction by (1 +- delta) on a fine grid and re-check: the first failing delta, worse sign."""
    worst = 0.0
    for s in (1.0, -1.0):
        fails = ~_passes(m[None, :], e[None, :] * (1 + s * grid[:, None]), rtol, atol)
        worst = max(worst, grid[np.argmax(fails)] if fails.any() else np.inf)
    return worst


def test_resolution_matches_brute_force_on_random_cases():
    rng = np.random.default_rng(1)
    grid = np.concatenate([np.linspace(0, 0.05, 50001)[1:], np.linspace(0.05, 3, 59001)[1:]])
    cases = 0
    while cases < 300:
        n = int(rng.integers(1, 5))
        e = rng.normal(size=n) * 10.0 ** rng.uniform(-2, 2)
        if rng.random() < 0.15:
            e[0] = 0.0
        rtol = float(rng.choice([0.0, 10 ** rng.uniform(-4, -0.3)]))
        atol = float(rng.choice([0.0, 10 ** rng.uniform(-4, 0)])) if rtol else float(10 ** rng.uniform(-4, 0))
        m = e + rng.uniform(-1, 1, size=n) * (atol + rtol * np.abs(e))
        if not _passes(m, e, rtol, atol):
            continue
        exact = checks.close_resolution(m, e, rtol, atol)
        brute = _brute_resolution(m, e, rtol, atol, grid)
        if np.isinf(exact) or exact > 2.9:
            assert brute > 2.9 or np.isinf(brute), (m, e, rtol, atol, exact, brute)
        else:
            step = 1e-6 if exact < 0.05 else 5e-5  # the grid spacing around the answer
            assert exact <= brute <= exact + step + 1e-12, (m, e, rtol, atol, exact, brute)
        cases += 1


def test_window_resolution_matches_brute_force():
    rng = np.random.default_rng(2)
    for _ in range(200):
        e = float(rng.uniform(0.5, 3) * rng.choice([-1, 1]))
        low, high = e - rng.uniform(0, 0.3), e + rng.uniform(0, 0.3)
        m = rng.uniform(low, high, size=int(rng.integers(1, 4)))
        exact = checks.window_resolution(m, e, low, high)
        grid = np.linspace(0, 1, 100001)[:, None]
        first = []
        for s in (1, -1):  # move the window with the prediction e -> e (1 + s delta) until a measurement leaves it
            out = np.any((m < low + s * grid * e) | (m > high + s * grid * e), axis=1)
            first.append(grid[np.argmax(out), 0] if out.any() else np.inf)
        brute = max(first)
        assert exact <= brute <= exact + 1e-5 + 1e-12


def test_resolution_examples():
    assert checks.close_resolution(1.005, 1.0, 0.0, 0.01) == pytest.approx(0.015)  # the + sign needs 1.5 %
    assert checks.close_resolution(1.0, 1.0, 0.01, 0.0) == pytest.approx(0.01 / 0.99)
    assert checks.close_resolution(1.0, 1.0, 0.0, 0.0) == 0.0  # an exact check catches any change
    assert checks.close_resolution(0.0, 0.0, 0.0, 1e-9) == np.inf  # a prediction of 0 cannot be moved relatively
    assert checks.close_resolution([1.0, 2.0], [1.0, 2.01], 0.0, 0.02) == pytest.approx(0.03 / 2.01)
    assert checks.window_resolution(1.0, 1.0, 0.9, 1.2) == pytest.approx(0.2)


def test_claims_print_and_record_kind_against_resolution(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LEARNDYN_CHECKS_DIR", str(tmp_path))
    checks.start_chapter("kinds")
    checks.check_close("tight", 1.0, 1.0, rtol=1e-3, why="w", against="a separate closed form")
    assert "claim against a separate closed form; resolves 0.1 %" in capsys.readouterr().out
    checks.check_close("loose", 1.0, 1.0, rtol=0.05, why="w", against="Monte Carlo",
                       resolution_why="3 standard errors are 5 % of the mean")
    assert "resolves 5.3 % (3 standard errors are 5 % of the mean)" in capsys.readouterr().out
    checks.check_close("weak", 1.0, 1.0, rtol=0.05, why="w", against="x")
    assert "weaker than 1 %, and no reason given" in capsys.readouterr().out
    checks.check_between("window", 2.05, 1.8, 2.2, expected=2.0, why="O(eta)", against="GD runs")
    checks.check_between("plain window", 0.5, 0.0, 2.0, why="theorem")
    checks.check_less("bound", 0.5, 2.0, why="theorem")
    checks.check_close("identity", 1.0, 1.0, atol=1e-12, why="round-off", kind="sanity")
    assert "sanity check (bookkeeping, not evidence)" in capsys.readouterr().out.splitlines()[-1]
    rows = {r["name"]: r for r in json.loads((tmp_path / "kinds.json").read_text())}
    assert rows["tight"]["kind"] == "claim" and rows["tight"]["against"] == "a separate closed form"
    assert rows["tight"]["resolution"] == pytest.approx(1e-3 / (1 - 1e-3))
    assert rows["loose"]["resolution_why"].startswith("3 standard errors") and rows["weak"]["resolution_why"] == ""
    assert rows["window"]["kind"] == "claim" and rows["window"]["resolution"] == pytest.approx(0.125)
    assert rows["plain window"]["kind"] == "bound" and rows["plain window"]["slack"] == {"low": 0.5, "high": 0.75}
    assert rows["bound"]["slack"] == pytest.approx(0.75) and rows["bound"]["resolution"] is None
    assert rows["identity"]["kind"] == "sanity" and rows["identity"]["resolution"] is None
    assert all(r["anchor"].startswith("check-kinds-") for r in rows.values())
    assert len({r["anchor"] for r in rows.values()}) == len(rows)


def test_an_observation_is_held_but_is_not_evidence(tmp_path, monkeypatch, capsys):
    """An observation (an empirical regularity in a calibrated window) records neither resolution nor slack, takes
    no rivals, counts apart from claims and bounds, and is held at every seed like a claim (robust.summarise)."""
    from learndyn.checks import records, robust

    monkeypatch.setenv("LEARNDYN_CHECKS_DIR", str(tmp_path))
    checks.start_chapter("06_obs")
    checks.check_between("sharpening ratio", 1.5, 1.3, 2.0, why="calibration seeds 0-2", kind="observation")
    assert "observation (an empirical regularity" in capsys.readouterr().out.splitlines()[-1]
    checks.check_less("crossing step", 300, 600, why="calibration seeds 0-2", kind="observation")
    checks.check_close("a claim", 1.0, 1.0, rtol=1e-3, why="w", against="sim", rivals={"null": 0.0})
    with pytest.raises(ValueError, match="belong to a claim"):
        checks.check_between("with a rival", 1.5, 1.3, 2.0, expected=1.5, why="w", kind="observation",
                             rivals={"none": 1.0})
    with pytest.raises(AssertionError):
        checks.check_less("fails like any check", 700, 600, why="calibration", kind="observation")
    rows = records.load(tmp_path)["06_obs"]
    obs = [r for r in rows if r["kind"] == "observation"]
    assert len(obs) == 3 and all(r["slack"] is None and r["resolution"] is None for r in obs)
    s = records.summarise(rows)
    assert (s.claims, s.bounds, s.observations, s.sanity, s.total) == (1, 0, 3, 0, 4)
    assert any("observations (at most a quarter)" in v for v in records.violations("06_obs", rows, held=True))
    held = robust.summarise(["06_obs"], [], tmp_path)["chapters"]["06_obs"]
    assert set(held) == {"sharpening ratio", "crossing step", "fails like any check", "a claim"}


def test_kind_rules():
    with pytest.raises(ValueError, match="against="):
        checks.check_close("no independent side", 1.0, 1.0, atol=1, why="w")
    with pytest.raises(ValueError, match="kind must be one of"):
        checks.check_close("k", 1.0, 1.0, atol=1, why="w", kind="proof")
    with pytest.raises(ValueError, match="check_close"):
        checks.check_less("k", 1.0, 2.0, why="w", kind="claim", against="x")
    with pytest.raises(ValueError, match="expected="):
        checks.check_between("k", 1.0, 0.0, 2.0, why="w", kind="claim", against="x")
    with pytest.raises(ValueError, match="resolution_why"):
        checks.check_between("k", 1.0, 0.0, 2.0, why="w", resolution_why="because")


def test_bad_input_to_the_checks():
    """The reliability review's cases: no silent pass on a malformed comparison."""
    with pytest.raises(ValueError, match=r"broadcast to \(3, 3\), more pairs"):
        checks.check_close("c", np.array([1.0, 2.0, 3.0]), np.array([[1.0], [2.0], [3.0]]), atol=2.0, why="w",
                           against="x")
    checks.check_close("scalar against an array", np.ones(3), 1.0, atol=0.1, why="w", against="x")
    with pytest.raises(TypeError, match="measured must be real"):
        checks.check_close("c", np.array([1 + 5j]), 1.0, atol=0.1, why="w", against="x")
    for call in (lambda: checks.check_close("c", [], 1.0, atol=1, why="w", against="x"),
                 lambda: checks.check_between("c", np.array([]), 0, 1, why="w"),
                 lambda: checks.check_less("c", np.zeros((0, 2)), 1.0, why="w")):
        with pytest.raises(ValueError, match="measured is empty"):
            call()
    with pytest.raises(ValueError, match="expected contains NaN"):
        checks.check_close("c", 1.0, np.nan, atol=1, why="w", against="x")
    with pytest.raises(ValueError, match="bound contains NaN"):
        checks.check_less("c", 1.0, [np.nan], why="w")
    with pytest.raises(TypeError, match="atol must be a real number"):
        checks.check_close("c", 1.0, 1.0, atol="0.1", why="w", against="x")
    with pytest.raises(ValueError, match="low must be a number"):
        checks.check_between("c", 1.0, np.nan, 2.0, why="w")
    with pytest.raises(ValueError, match="chapter must be"):
        checks.start_chapter("../../escape")


def test_bound_slack_with_zero_and_infinite_bounds(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LEARNDYN_CHECKS_DIR", str(tmp_path))
    checks.start_chapter("slack")
    checks.check_less("zero bound", [-1.0, -0.5], [0.0, 0.0], why="w")
    out = capsys.readouterr().out
    assert "nan" not in out and "smallest bound - measured 0.5" in out
    checks.check_between("one-sided", 3.0, 1.0, np.inf, why="w")
    rows = {r["name"]: r for r in json.loads((tmp_path / "slack.json").read_text())}
    assert rows["zero bound"]["slack"] == pytest.approx(0.5)
    assert rows["one-sided"]["slack"]["low"] == pytest.approx(2.0) and np.isinf(rows["one-sided"]["slack"]["high"])


def test_audit_lists_weak_claims_and_loose_bounds(tmp_path, monkeypatch):
    from learndyn.checks import records

    monkeypatch.setenv("LEARNDYN_CHECKS_DIR", str(tmp_path))
    checks.start_chapter("07_demo")
    checks.check_close("tight claim", 1.0, 1.0, rtol=1e-3, why="w", against="sim")
    checks.check_close("weak claim", 1.0, 1.0, rtol=0.1, why="w", against="sim")
    checks.check_less("loose bound", 0.1, 1.0, why="w")
    checks.check_less("tight bound", 0.99, 1.0, why="w")
    rows = records.load(tmp_path)["07_demo"]
    s = records.summarise(rows)
    assert (s.claims, s.bounds, s.sanity, s.resolving) == (2, 2, 0, 1) and s.worst == pytest.approx(0.1 / 0.9)
    text = records.audit(records.load(tmp_path))
    assert text.index("weak claim") < text.index("tight claim")  # worst first
    assert "loose bound" in text.split("bounds with more than 50 % slack:")[1]
    assert "tight bound" not in text.split("bounds with more than 50 % slack:")[1]
    assert records.violations("07_demo", rows, held=False) == []
    assert any("weak claim" in v for v in records.violations("07_demo", rows, held=True))
    cli = subprocess.run([sys.executable, "-m", "learndyn.checks", "audit", "07", "--dir", str(tmp_path)],
                         capture_output=True, text=True, check=True)
    assert cli.stdout.startswith("== 07_demo: 2 claims, 2 bounds, 0 observations, 0 sanity") and not cli.stderr


def test_in_a_kernel_a_check_shows_one_line_with_details_folded_and_links_its_report_row(monkeypatch):
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: type("Shell", (), {"kernel": object()})())
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append(obj))
    checks.start_chapter("03_demo")
    checks.check_close("a <claim>", 1.0, 1.0, rtol=1e-3, why="w", against="sim")
    checks.check_close("a <claim>", 1.0, 1.0, rtol=1e-3, why="w", against="sim")  # again, in a loop
    first, again = (s["text/html"] for s in shown)
    assert first.startswith('<details class="learndyn-check pass" id="check-03-demo-a-claim"><summary>&#10003; a '
                            "&lt;claim&gt; &mdash; claim against sim; resolves 0.1 %</summary>")
    assert 'href="../reproduction.html#check-03-demo-a-claim"' in first and shown[0]["text/plain"].startswith("PASS")
    assert ' id="' not in again and 'href="../reproduction.html#check-03-demo-a-claim"' in again  # ids stay unique


# --- check power: rivals, derived constants, circular tolerances, seeds --------------------------------------------
def _rows(tmp_path, chapter="09_power"):
    from learndyn.checks import records

    return {r["name"]: r for r in records.load(tmp_path)[chapter]}


def test_a_rival_that_passes_fails_the_claim_unless_declared_indistinguishable(tmp_path, monkeypatch):
    monkeypatch.setenv("LEARNDYN_CHECKS_DIR", str(tmp_path))
    checks.start_chapter("09_power")
    checks.check_close("rejects", 1.0, 1.0, atol=0.01, why="w", against="sim",
                       rivals={"null: zero": 0.0, "naive": lambda: 1.05})
    with pytest.raises(AssertionError, match="'naive' pass"):
        checks.check_close("accepts naive", 1.0, 1.0, atol=0.1, why="w", against="sim", rivals={"naive": 1.05})
    checks.check_close("declared", 1.0, 1.0, atol=0.1, why="w", against="sim",
                       rivals={"null": 0.0, "naive": checks.Rival(1.05, indistinguishable="O(eta^2) apart")})
    with pytest.raises(AssertionError, match="pass"):  # a window is moved with its rival
        checks.check_between("window", 1.0, 0.9, 1.1, expected=1.0, why="w", against="sim", rivals={"r": 1.05})
    rows = _rows(tmp_path)
    rej = rows["rejects"]["rivals"]
    assert [v["rejected"] for v in rej] == [True, True]
    assert rej[0]["margin"] == pytest.approx(100.0) and rej[1]["margin"] == pytest.approx(5.0)
    assert rows["accepts naive"]["passed"] is False and rows["accepts naive"]["resolution"] is None
    assert rows["declared"]["passed"] and rows["declared"]["rivals"][1]["indistinguishable"]
    with pytest.raises(ValueError, match="indistinguishable"):
        checks.Rival(1.0, indistinguishable=" ")
    with pytest.raises(TypeError, match="rivals must be a dict"):
        checks.check_close("bad", 1.0, 1.0, atol=0.1, why="w", against="sim", rivals=[0.0])
    with pytest.raises(ValueError, match="belong to a claim"):
        checks.check_close("bad", 1.0, 1.0, atol=0.1, why="w", kind="sanity", rivals={"r": 0.0})
    with pytest.raises(ValueError, match="do not broadcast"):
        checks.check_close("bad", np.ones(3), 1.0, atol=0.1, why="w", against="sim", rivals={"r": np.ones(2)})


def _brute_constant_resolution(accepts, predict, constants, key):
    deltas = np.linspace(0, 0.2, 20_001)[1:]
    worst = 0.0
    for s in (1, -1):
        bad = [d for d in deltas if not accepts(np.asarray(predict({**constants, key: constants[key] * (1 + s * d)})))]
        worst = max(worst, bad[0] if bad else np.inf)
    return worst


def test_constant_resolution_matches_brute_force():
    from learndyn.checks import constant_resolution

    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.uniform(0.5, 2, 2)
        m = a * 3.0 + b ** 2 + rng.normal(0, 0.01)
        tol = rng.uniform(0.02, 0.2)

        def accepts(p, m=m, tol=tol):
            return bool(np.all(np.abs(m - p) <= tol))

        def predict(c):
            return c["a"] * 3.0 + c["b"] ** 2

        for key in ("a", "b"):
            exact = constant_resolution(accepts, predict, {"a": a, "b": b}, key)
            assert exact == pytest.approx(_brute_constant_resolution(accepts, predict, {"a": a, "b": b}, key),
                                          abs=1e-5)


def test_derived_constants_are_recorded_and_held_to_the_standard(tmp_path, monkeypatch):
    from learndyn.checks import records

    monkeypatch.setenv("LEARNDYN_CHECKS_DIR", str(tmp_path))
    checks.start_chapter("09_power")
    x = 2.0 * np.array([0.995, 1.005])  # fixed points on both sides of a threshold kappa_c = 2
    checks.check_close("boundary", [0.0, 1.0], predict=lambda c: (x > c["kappa_c"]).astype(float),
                       constants={"kappa_c": 2.0}, atol=0.5, why="an outcome", against="sim",
                       resolution_why="an outcome: its power is the threshold's", rivals={"null: all": [1.0, 1.0]})
    checks.check_close("coefficient", 5 / 12 + 1e-4, predict=lambda c: c["5/12"] * 1.0, constants={"5/12": 5 / 12},
                       atol=3e-4, why="w", against="sim", rivals={"null": 0.0})
    checks.check_between("weak constant", 1.0, 0.9, 1.1, predict=lambda c: c["k"], constants={"k": 1.0}, why="w",
                         against="sim", rivals={"null": 0.0}, resolution_why="a 10 % window")
    rows = _rows(tmp_path)
    assert rows["boundary"]["constants"][0]["resolution"] == pytest.approx(0.005, rel=1e-6)
    assert rows["coefficient"]["constants"][0]["resolution"] == pytest.approx(4e-4 / (5 / 12), rel=1e-4)
    problems = records.violations("09_power", list(rows.values()), held=True)
    assert any("'k' resolves 10 %" in p and "constant_why" in p for p in problems)
    assert not [p for p in problems if "'boundary'" in p or "'coefficient'" in p]
    with pytest.raises(ValueError, match="disagree"):
        checks.check_close("bad", 1.0, 2.0, predict=lambda c: c["a"], constants={"a": 1.0}, atol=1, why="w",
                           against="sim")
    with pytest.raises(ValueError, match="constants="):
        checks.check_close("bad", 1.0, predict=lambda c: 1.0, atol=1, why="w", against="sim")
    with pytest.raises(ValueError, match="not in constants"):
        checks.check_close("bad", 1.0, predict=lambda c: c["a"], constants={"a": 1.0}, constant_why={"b": "x"},
                           atol=1, why="w", against="sim")
    with pytest.raises(ValueError, match="must be finite"):
        checks.check_close("bad", 1.0, predict=lambda c: 1.0, constants={"a": np.inf}, atol=1, why="w",
                           against="sim")


def test_circular_tolerances_and_missing_rivals_are_flagged(tmp_path, monkeypatch):
    from learndyn.checks import records

    monkeypatch.setenv("LEARNDYN_CHECKS_DIR", str(tmp_path))
    checks.start_chapter("09_power")
    measured, theory = 1.0 + np.pi * 1e-3, 1.0
    checks.check_close("circular", measured, theory, atol=2 * abs(measured - theory), why="w", against="sim",
                       rivals={"naive": 1.5})
    checks.check_close("null accepted", 1.0, 1.0, atol=0.2, why="w", against="sim",
                       rivals={"null": checks.Rival(0.9, "too close"), "naive": 2.0})
    checks.check_close("no rival", 1.0, 1.0, atol=1e-3, why="w", against="sim")
    checks.check_close("fine", measured, theory, atol=1e-2, why="w", against="sim", rivals={"naive": 1.5})
    rows = _rows(tmp_path)
    assert rows["circular"]["circular"] == "the tolerance is 2 x the measured error"
    assert rows["fine"]["circular"] is None
    got = {n: records.claim_power_problems(r) for n, r in rows.items()}
    assert any("measured error" in p for p in got["circular"])
    assert any("null rival" in p for p in got["null accepted"])
    assert any("names no rival" in p for p in got["no rival"])
    assert got["fine"] == []
    s = records.summarise(list(rows.values()))
    assert (s.with_rivals, s.flagged) == (3, 2)
    assert "check-power exceptions" in records.audit({"09_power": list(rows.values())})


def test_seed_knob_moves_every_draw_and_the_records(tmp_path, monkeypatch):
    import learndyn as ld

    monkeypatch.delenv("LEARNDYN_SEED", raising=False)
    assert ld.seed(3) == 3 and ld.core.seed_offset() == 0
    monkeypatch.setenv("LEARNDYN_SEED", "4")
    assert ld.seed(3) == 7 and ld.seed() == 4
    for bad in ("-1", "x", "1.5"):
        monkeypatch.setenv("LEARNDYN_SEED", bad)
        with pytest.raises(ValueError, match="LEARNDYN_SEED"):
            ld.seed(0)
    monkeypatch.setenv("LEARNDYN_SEED", "2")
    with pytest.raises(TypeError, match="base"):
        ld.seed(1.0)
    (tmp_path / "_toc.yml").write_text("root: intro\n")
    (tmp_path / "_config.yml").write_text("title: t\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LEARNDYN_CHECKS_DIR", raising=False)
    checks.start_chapter("09_power")
    assert checks.records_path() == tmp_path / "_build" / "checks" / "seed-2" / "09_power.json"
    monkeypatch.setenv("LEARNDYN_CHECKS_KEEP_GOING", "1")
    checks.check_close("fails quietly", 1.0, 2.0, atol=0.1, why="w", against="sim", rivals={"null": 0.0})
    rec = json.loads(checks.records_path().read_text())[0]
    assert rec["passed"] is False and rec["seed"] == 2


def test_robust_summary_counts_each_claim_at_each_seed(tmp_path):
    from learndyn.checks import robust

    base = tmp_path / "checks"
    (base / "seed-1").mkdir(parents=True)
    (base / "seed-2").mkdir()
    claim = {"kind": "claim", "passed": True}
    (base / "01_x.json").write_text(json.dumps([{**claim, "name": "a"}, {**claim, "name": "b"},
                                                {"kind": "bound", "passed": True, "name": "c"}]))
    (base / "seed-1" / "01_x.json").write_text(json.dumps([{**claim, "name": "a"}, {**claim, "name": "b",
                                                                                     "passed": False}]))
    (base / "seed-2" / "01_x.json").write_text(json.dumps([{**claim, "name": "a"}]))
    out = robust.summarise(["01_x"], [1, 2], base)
    assert out["chapters"]["01_x"] == {"a": [True, True], "b": [False, None]}


def test_resolution_of_long_arrays_is_the_full_search():
    """Past 4096 values close_resolution searches the elements that can cross first; the number is the full one."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        n = int(rng.integers(4097, 20000))
        e = rng.normal(size=n) * 10.0 ** rng.uniform(-2, 2, size=n)
        e[rng.random(n) < 0.05] = 0.0
        rtol = float(rng.choice([0.0, 10 ** rng.uniform(-6, -0.1)]))
        atol = float(rng.choice([0.0, 10 ** rng.uniform(-6, 0)])) if rtol else float(10 ** rng.uniform(-4, 0))
        m = e + rng.uniform(-1, 1, size=n) ** int(rng.integers(1, 8)) * (atol + rtol * np.abs(e))
        full = max(checks._first_failure(m - e, e, s, rtol, atol) for s in (1.0, -1.0))
        assert checks.close_resolution(m, e, rtol, atol) == full
