"""learndyn.teach: exercise metadata, student notebooks, the student site, nbgrader assignments (issue 9).

The slow tests (marked in their names) run real tools: a chapter notebook executed up to its first stub, the
student edition of one chapter built by `make student-book`, and `nbgrader generate_assignment` + `autograde`.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from learndyn import teach
from learndyn.exercises import CHECKS

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHAPTER = """(ch-x)=
# A chapter

```{exercise} Halving the step (coding, ★★, 20 min)
:label: ex-x-halve

Halve it.
```

```{solution-start} ex-x-halve
:class: dropdown
```
Secret words.

```{code-cell} ipython3
secret = 42
```
```{solution-end}
```

```{exercise} A proof (derivation, ★, 5 min)
:label: ex-x-proof

Prove it.
```

```{solution-start} ex-x-proof
:class: dropdown
```
Secret proof.
```{solution-end}
```

## Further reading
"""


def _env() -> dict[str, str]:
    """nbgrader calls `alembic` by name: the venv's bin must be on PATH."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


# ---------------------------------------------------------------------------------------------------------------
# metadata
@pytest.mark.parametrize("title, expected", [
    ("Halving the step (coding, ★★, 20 min)", ("Halving the step", ("coding",), 2, 20)),
    ("Depth D (derivation, optional, ★★, 40 min)", ("Depth D", ("derivation",), 2, 40)),
    ("Power (derivation and coding, ★★★, 45 min)", ("Power", ("derivation", "coding"), 3, 45)),
    ("No time yet (exploration, ★)", ("No time yet", ("exploration",), 1, None)),
])
def test_parse_title(title, expected):
    assert teach.parse_title(title) == expected


@pytest.mark.parametrize("title, match", [
    ("No metadata", "must end with"),
    ("No kind (★★, 10 min)", "kind"),
    ("Too hard (coding, ★★★★, 10 min)", "1 to 3 stars"),
])
def test_parse_title_rejects_incomplete_titles(title, match):
    with pytest.raises(ValueError, match=re.escape(match)):
        teach.parse_title(title)


def test_parse_title_rejects_non_strings():
    with pytest.raises(TypeError, match="title"):
        teach.parse_title(3)


def test_read_exercises_finds_titles_bodies_and_solutions():
    first, second = teach.read_exercises(CHAPTER, "09_x")
    assert (first.label, first.kind, first.stars, first.minutes, first.is_coding) == ("ex-x-halve", "coding", 2, 20,
                                                                                       True)
    assert first.body == "Halve it." and first.solution_code() == ["secret = 42"]
    assert "Secret words." in first.solution_markdown() and "secret = 42" not in first.solution_markdown()
    assert (second.label, second.kind, second.solution_markdown()) == ("ex-x-proof", "derivation", "Secret proof.")


def test_chapter_name():
    assert [teach.chapter_name(s) for s in ("00_preface", "03_ssl", "notes")] == ["Preface", "Chapter 3", "notes"]


def test_book_exercises_have_unique_labels_and_complete_metadata():
    exercises = teach.find_exercises(ROOT)
    assert len(exercises) >= 30
    assert len({ex.label for ex in exercises}) == len(exercises)
    assert all(1 <= ex.stars <= 3 and ex.kinds for ex in exercises)


def test_every_checker_belongs_to_a_coding_exercise_of_the_book():
    book = {ex.label: ex for ex in teach.find_exercises(ROOT)}
    for label, check in CHECKS.items():
        assert label in book, f"learndyn.exercises has a checker for {label}, which no chapter has"
        assert book[label].is_coding, f"{label} has a checker but is not a coding exercise"
        assert check.checker.__name__ == "check_" + label.removeprefix("ex-").replace("-", "_")


def test_repeated_labels_are_an_error(tmp_path):
    (tmp_path / "_toc.yml").write_text("root: a\n")
    (tmp_path / "_config.yml").write_text("title: t\n")
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "01_a.md").write_text(CHAPTER)
    (tmp_path / "chapters" / "02_b.md").write_text(CHAPTER)
    with pytest.raises(teach.TeachError, match="ex-x-halve.*01_a and 02_b"):
        teach.find_exercises(tmp_path)


def test_no_book_is_an_error(tmp_path):
    with pytest.raises(teach.TeachError, match="--book"):
        teach.find_book(tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# student editions
def test_strip_solutions_remove_keeps_exercises_and_drops_every_solution():
    out = teach.strip_solutions(CHAPTER, mode="remove")
    assert "solution-start" not in out and "solution-end" not in out
    assert "Secret" not in out and "secret = 42" not in out
    assert "Halve it." in out and "Prove it." in out and "## Further reading" in out


def test_strip_solutions_stub_replaces_coding_solutions_only():
    out = teach.strip_solutions(CHAPTER, mode="stub")
    assert "Secret" not in out and "secret = 42" not in out
    assert out.count(teach.STUB) == 1, "one stub for the one coding exercise, none for the derivation"


def test_strip_solutions_rejects_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        teach.strip_solutions(CHAPTER, mode="hide")


def test_stub_keeps_the_self_check_of_a_checked_exercise():
    text = (ROOT / "chapters" / "02_deep_linear.md").read_text()
    out = teach.strip_solutions(text, mode="stub")
    assert "solution-start" not in out and "def my_u0" not in out
    assert "check_saxe_gram_schmidt(my_u0)" in out and teach.STUB in out


@pytest.mark.parametrize("md", sorted((ROOT / "chapters").glob("*.md")), ids=lambda p: p.stem)
def test_student_notebook_of_every_chapter_has_no_solution(md):
    nb = teach.student_notebook(md)
    solutions = [ex for ex in teach.read_exercises(md.read_text(), md.stem) if ex.solution]
    sources = "\n".join(c.source for c in nb.cells)
    assert "solution-start" not in sources and "solution-end" not in sources
    for ex in solutions:
        for code in ex.solution_code():
            assert code not in sources, f"{ex.label}: solution code left in the student notebook"
    stubs = sum(c.cell_type == "code" and teach.STUB in c.source for c in nb.cells)
    assert stubs == sum(ex.is_coding for ex in solutions)


@pytest.mark.parametrize("md", sorted((ROOT / "chapters").glob("*.md")), ids=lambda p: p.stem)
def test_student_notebook_keeps_every_code_cell_before_its_first_stub(md):
    """Up to its first stub a student notebook is the chapter minus solutions, so it runs as the chapter does
    (`make notebooks`); test_slow_student_notebook_runs_up_to_its_first_stub executes one to make sure."""
    nb = teach.student_notebook(md)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    first = next((i for i, src in enumerate(code) if teach.STUB in src), len(code))
    solution_code = {src for ex in teach.read_exercises(md.read_text(), md.stem) for src in ex.solution_code()}
    twin = nbformat.read(md.with_suffix(".ipynb"), 4)
    chapter = [c.source for c in twin.cells if c.cell_type == "code" and c.source not in solution_code]
    assert code[:first] == chapter[:first]


@pytest.mark.parametrize("md", sorted((ROOT / "chapters").glob("*.md")), ids=lambda p: p.stem)
def test_student_edition_leaves_no_dangling_reference(md):
    """A label defined inside a solution and cited elsewhere would break the student site's build (-W)."""
    text = md.read_text()
    defined = set()
    for _, inner, _, _ in teach._solution_regions(text):
        defined |= set(re.findall(r"\$\$\s*\(([\w-]+)\)", inner)) | set(re.findall(r":label:\s*(\S+)", inner))
        defined |= set(re.findall(r"name:\s*(fig-[\w-]+)", inner)) | set(re.findall(r"^\(([\w-]+)\)=", inner, re.M))
    others = [p.read_text() for p in ROOT.glob("*.md")] + [p.read_text() for p in (ROOT / "chapters").glob("*.md")
                                                           if p != md]
    stripped = teach.strip_solutions(text)
    for label in defined:
        cited = re.compile(rf"[`<]{re.escape(label)}[`>]")
        assert not cited.search(stripped) and not any(cited.search(o) for o in others), (
            f"{label} is defined in a solution but cited outside it: the student edition would not build")


def test_notebooks_command_writes_one_notebook_per_chapter_and_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "student"
    assert teach.main(["--book", str(ROOT), "notebooks", "--out", str(out)]) == 0
    assert sorted(p.stem for p in out.glob("*.ipynb")) == sorted(p.stem for p in (ROOT / "chapters").glob("*.md"))
    (out / "mine.txt").write_text("a student's work")
    assert teach.main(["--book", str(ROOT), "notebooks", "--out", str(out)]) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert (out / "mine.txt").exists()
    assert teach.main(["--book", str(ROOT), "notebooks", "--out", str(out), "--force"]) == 0
    assert not (out / "mine.txt").exists()


@pytest.mark.parametrize("out", [".", "..", "chapters", "lib/learndyn"])
def test_output_folder_may_not_be_the_book_or_hold_it(out):
    for write in (teach.write_student_notebooks, teach.write_student_book):
        with pytest.raises(teach.TeachError, match="choose another --out"):
            write(ROOT / out, book=ROOT, force=True)


def test_slow_student_notebook_runs_up_to_its_first_stub(tmp_path):
    """Chapter 00 (the fastest) runs top to bottom and stops with NotImplementedError at its stub."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = teach.student_notebook(ROOT / "chapters" / "00_preface.md")
    stub = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and teach.STUB in c.source)
    with pytest.raises(CellExecutionError, match="NotImplementedError"):
        NotebookClient(nb, timeout=120, kernel_name="python3",
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    ran = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.get("execution_count")]
    code_before = [i for i, c in enumerate(nb.cells[:stub]) if c.cell_type == "code"]
    assert ran[-1] == stub and set(code_before) <= set(ran)
    for i in code_before:
        assert all(o.get("output_type") != "error" for o in nb.cells[i].outputs), f"cell {i} failed before the stub"


def test_slow_student_book_has_no_solution_in_its_html(tmp_path):
    """`make student-book` on a one-chapter table of contents: no solution admonition, no solution code."""
    toc = tmp_path / "toc.yml"
    toc.write_text("format: jb-book\nroot: chapters/00_preface\nchapters:\n  - file: exercises\n"
                   "  - file: reproduction\n  - file: bibliography\n")  # the pages the Preface refers to
    student = tmp_path / "student"
    run = subprocess.run(["make", "-o", ".venv/.installed", "student-book",
                          f"STUDENT={student}", f"STUDENT_TOC={toc}", f"BIN={BIN}"],
                         cwd=ROOT, capture_output=True, text=True, env=_env(), timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    html = (student / "_build" / "html" / "chapters" / "00_preface.html").read_text()
    assert 'id="ex-pre-slope"' in html, "the exercises stay"
    assert not [c for c in re.findall(r'class="([^"]*)"', html) if "solution" in c], "no solution admonition"
    for ex in teach.read_exercises((ROOT / "chapters" / "00_preface.md").read_text(), "00_preface"):
        for code in ex.solution_code():
            first = code.splitlines()[0]
            assert first not in html, f"solution code of {ex.label} in the student site"
    assert "sweep_errors" not in html
    assert "colab.research.google.com" not in html, "the Colab button would open the notebooks with solutions"
    assert "(student edition)" in html
    index = (student / "_build" / "html" / "exercises.html").read_text()
    assert 'href="chapters/00_preface.html#ex-pre-slope"' in index


# ---------------------------------------------------------------------------------------------------------------
# assignments
def test_assignment_rejects_an_unknown_label_listing_the_known_ones(tmp_path, capsys):
    code = teach.main(["--book", str(ROOT), "assignment", "hw", "--exercises", "ex-pre-slope,ex-nope",
                       "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "unknown exercise label 'ex-nope'" in err and "ex-linreg-init" in err
    assert not (tmp_path / "source").exists()


def test_assignment_refuses_to_autograde_an_exercise_without_checker(tmp_path, capsys):
    code = teach.main(["--book", str(ROOT), "assignment", "hw", "--exercises", "ex-linreg-noether",
                       "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "'ex-linreg-noether' has no checker" in err and "--manual ex-linreg-noether" in err


@pytest.mark.parametrize("name", ["", "a b", "../up", "-x"])
def test_assignment_rejects_bad_names(name):
    with pytest.raises(teach.TeachError, match="assignment name"):
        teach.assignment_notebook(name, ["ex-pre-slope"], book=ROOT)


def test_assignment_rejects_empty_and_repeated_lists():
    with pytest.raises(teach.TeachError, match="at least one"):
        teach.assignment_notebook("hw", [], book=ROOT)
    with pytest.raises(teach.TeachError, match="twice"):
        teach.assignment_notebook("hw", ["ex-pre-slope"], manual=["ex-pre-slope"], book=ROOT)


def test_assignment_notebook_has_nbgrader_metadata():
    nb = teach.assignment_notebook("hw", ["ex-linreg-init", "ex-pre-slope"], manual=["ex-pre-local"], book=ROOT)
    meta = [c.metadata.get("nbgrader") for c in nb.cells]
    ids = [m["grade_id"] for m in meta if m]
    assert len(ids) == len(set(ids))
    answers = [c for c, m in zip(nb.cells, meta, strict=True) if m and m["solution"]]
    assert len(answers) == 3
    for cell in answers:
        assert cell.source.startswith("### BEGIN SOLUTION") and cell.source.endswith("### END SOLUTION")
    hidden = [c for c, m in zip(nb.cells, meta, strict=True) if m and m["grade"] and "BEGIN HIDDEN TESTS" in c.source]
    assert len(hidden) == 2 and all(c.metadata["nbgrader"]["points"] >= 1 for c in hidden)
    # book order, whatever the order on the command line: the Preface comes first
    titles = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## ")]
    assert titles[0].endswith("The local truncation error") and titles[-1].endswith("non-zero start")


def test_assignment_refuses_to_overwrite_without_force(tmp_path):
    path = teach.write_assignment("hw", ["ex-pre-slope"], tmp_path, book=ROOT)
    assert path == tmp_path / "source" / "hw" / "hw.ipynb" and (tmp_path / "nbgrader_config.py").exists()
    with pytest.raises(teach.TeachError, match="--force"):
        teach.write_assignment("hw", ["ex-pre-slope"], tmp_path, book=ROOT)
    teach.write_assignment("hw", ["ex-linreg-init"], tmp_path, book=ROOT, force=True)
    assert "my_limit" in path.read_text()


def _fill_in(released: Path, submitted: Path, labels: list[str]) -> None:
    """A correct submission: the released notebook with each answer cell replaced by the reference solution."""
    nb = nbformat.read(released, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        for label in labels:
            if grade_id == f"{label}-answer":
                cell.source = CHECKS[label].solution
        if grade_id == "ex-linreg-noether-answer":
            cell.source = "Differentiate the invariance at the identity ..."
    submitted.parent.mkdir(parents=True)
    nbformat.write(nb, submitted)


def test_slow_nbgrader_generates_and_autogrades_an_assignment(tmp_path):
    """The real nbgrader: generate_assignment, then autograde a correct and an untouched submission."""
    pytest.importorskip("nbgrader")
    from nbgrader.api import Gradebook

    labels = ["ex-pre-slope", "ex-linreg-init", "ex-saxe-gram-schmidt"]
    course = tmp_path / "course"
    assert teach.main(["--book", str(ROOT), "assignment", "hw1", "--exercises", ",".join(labels),
                       "--manual", "ex-linreg-noether", "--out", str(course)]) == 0
    nbgrader = [str(BIN / "nbgrader")]
    run = subprocess.run([*nbgrader, "generate_assignment", "hw1"], cwd=course, capture_output=True, text=True,
                         env=_env(), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    released = course / "release" / "hw1" / "hw1.ipynb"
    cells = nbformat.read(released, as_version=4).cells
    student = json.dumps(cells)
    code = json.dumps([c.source for c in cells if c.cell_type == "code"])  # the exercise text may name its checker
    assert "BEGIN SOLUTION" not in student and "HIDDEN TESTS" not in student and "check_pre_slope(" not in code
    assert "def my_u0" not in student and "YOUR CODE HERE" in student
    _fill_in(released, course / "submitted" / "good" / "hw1" / "hw1.ipynb", labels)
    (course / "submitted" / "blank" / "hw1").mkdir(parents=True)
    (course / "submitted" / "blank" / "hw1" / "hw1.ipynb").write_bytes(released.read_bytes())
    run = subprocess.run([*nbgrader, "autograde", "hw1"], cwd=course, capture_output=True, text=True, env=_env(),
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {s: {g.name: (g.score, g.max_score, g.auto_score) for g in
                      gb.find_submission_notebook("hw1", "hw1", s).grades} for s in ("good", "blank")}
    auto = [k for k in scores["good"] if not k.startswith("ex-linreg-noether")]
    assert len(auto) == 2 * len(labels)
    for key in auto:
        score, max_score, _ = scores["good"][key]
        assert score == max_score > 0, f"correct submission lost points on {key}"
        assert scores["blank"][key][0] == 0, f"untouched submission got points on {key}"
    assert scores["good"]["ex-linreg-noether-answer"][2] is None, "a written answer is left to the instructor"
    assert scores["blank"]["ex-linreg-noether-answer"][0] == 0, "an unchanged written answer gets no points"


def test_worked_example_is_what_teach_writes_today():
    """examples/week1 (README "For instructors") must not go stale when an exercise changes."""
    committed = nbformat.read(ROOT / "examples" / "week1" / "course" / "source" / "week1" / "week1.ipynb", 4)
    today = teach.assignment_notebook("week1", ["ex-pre-slope", "ex-linreg-init", "ex-saxe-gram-schmidt"],
                                      manual=["ex-linreg-noether"], book=ROOT)
    assert [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in committed.cells] == \
        [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in today.cells], (
        "examples/week1 is stale: regenerate it as its README says")
    released = nbformat.read(ROOT / "examples" / "week1" / "course" / "release" / "week1" / "week1.ipynb", 4)
    text = json.dumps(released.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text and "def my_u0" not in text


def test_list_command_prints_every_exercise(capsys):
    assert teach.main(["--book", str(ROOT), "list"]) == 0
    out = capsys.readouterr().out
    for ex in teach.find_exercises(ROOT):
        assert ex.label in out
    assert out.count("self-check") == len(CHECKS)


def test_book_command_copies_the_book_without_solutions(tmp_path, capsys):
    out = tmp_path / "student"
    assert teach.main(["--book", str(ROOT), "book", "--out", str(out)]) == 0
    assert (out / "_config.yml").exists() and (out / "_ext" / "exercise_index.py").exists()
    assert not (out / "tests").exists() and not list(out.glob("chapters/*.ipynb"))
    for md in (out / "chapters").glob("*.md"):
        assert "solution-start" not in md.read_text()
    assert "(student edition)" in (out / "_config.yml").read_text()
    (out / "_build").mkdir()
    (out / "_build" / "cache").write_text("kept")
    assert teach.main(["--book", str(ROOT), "book", "--out", str(out)]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert teach.main(["--book", str(ROOT), "book", "--out", str(out), "--force"]) == 0
    assert (out / "_build" / "cache").read_text() == "kept", "--force keeps the execution cache"
