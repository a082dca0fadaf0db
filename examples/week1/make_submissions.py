"""Write the two example submissions of assignment week1 from nbgrader's released notebook (run in course/).

Alice answers everything with the reference solutions of `learndyn.exercises`; Bob makes two classic mistakes (the
limit of GD without the null-space part of w0, and the naive ||c_alpha||^2 without Gram-Schmidt) and leaves the
derivation blank.
"""

from pathlib import Path

import nbformat

from learndyn.exercises import CHECKS

BOB = {
    "ex-pre-slope": CHECKS["ex-pre-slope"].solution,
    "ex-linreg-init": "def my_limit(X, y, w0):\n    # GD converges to the minimum-norm interpolator\n"
                      "    return np.linalg.pinv(X) @ y",
    "ex-saxe-gram-schmidt": "def my_u0(W1, W2, U, V, svals):\n    r = len(svals)\n"
                            "    c = 0.5 * ((W1 @ V)[:, :r] + (U.T @ W2)[:r].T)\n    return (c**2).sum(axis=0)",
}
ALICE_PROOF = (r"Differentiate $E(e^{\epsilon A}W_1, W_2 e^{-\epsilon A}) = E(W_1, W_2)$ at $\epsilon = 0$: "
               r"$\nabla_1 E\,W_1^\top = W_2^\top \nabla_2 E$, so $\frac{d}{dt}(W_1W_1^\top - W_2^\top W_2) = 0$ "
               r"along the flow; a GD step adds $\eta^2(\nabla_1E\nabla_1E^\top - \nabla_2E^\top\nabla_2E)$.")

released = nbformat.read("release/week1/week1.ipynb", as_version=4)
for student in ("alice", "bob"):
    nb = nbformat.reads(nbformat.writes(released), as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        for label, check in CHECKS.items():
            if grade_id == f"{label}-answer":
                cell.source = check.solution if student == "alice" else BOB[label]
        if grade_id == "ex-linreg-noether-answer" and student == "alice":
            cell.source = ALICE_PROOF
    folder = Path("submitted") / student / "week1"
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / "week1.ipynb")
    print(f"wrote {folder / 'week1.ipynb'}")
