#!/usr/bin/env bash
# Regenerate examples/week1/course from the book (run from the repository root once .venv exists; about a minute):
# the instructor's source (learndyn.teach), nbgrader's student version, two submissions, and their grades.
set -euo pipefail
export PATH="$PWD/.venv/bin:$PATH"   # nbgrader calls its own tools (alembic) by name
course=examples/week1/course
rm -rf "$course"
python -m learndyn.teach assignment week1 \
    --exercises ex-pre-slope,ex-linreg-init,ex-saxe-gram-schmidt --manual ex-linreg-noether --out "$course"
cd "$course"
nbgrader generate_assignment week1
python ../make_submissions.py
nbgrader autograde week1
nbgrader export                      # grades.csv
rm -rf gradebook.db autograded feedback .nbgrader.log
