# The two commands of the README: `make book` and `make test`. Both set up .venv on a fresh machine first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= 2
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PYTHONHASHSEED := 0
export OMP_NUM_THREADS := $(JOBS)

.PHONY: book pdf pdf-ja test sync lint unit notebooks seed-run robust standard site site-check browser clean help bench

help:
	@echo "make book   - set up .venv and build the website into _build/html"
	@echo "make book-ja - the Japanese edition (after make book: same executed notebooks), into _build/html/ja"
	@echo "make pdf-ja - the Japanese PDF edition (after make book-ja), into _build/html/ja"
	@echo "make test   - set up .venv and run the whole suite (lint, unit, the book executed afresh, a second seed, standard, PDF, site)"
	@echo "make pdf    - the PDF edition (after make book: same executed notebooks), into $(PDF)"
	@echo "make student-book - the site without solutions, into _build/student/_build/html"
	@echo "make sync   - regenerate the chapters/*.ipynb twins and the colab/*.ipynb editions from chapters/*.md"
	@echo "make clean  - remove the build folder (keeps .venv)"
	@echo "make robust - every chapter at LEARNDYN_SEED=1..5: each claim's pass count, into tests/records/robust.json"
	@echo "make bench  - install the benchmark peers (bench/requirements.txt) and run every benchmark into bench/results.json"

VENDOR := _vendor/.versions

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -r requirements.txt > $(VENV)/pip.log 2>&1 || (cat $(VENV)/pip.log; exit 1)
	$(BIN)/python -c "import learndyn, jupyter_book, torch, nbval"  # fails loudly if the install did not work
	touch $(STAMP)

$(VENDOR): scripts/vendor_web_assets.py | $(STAMP)
	$(BIN)/python scripts/vendor_web_assets.py

# The chapters execute first, $(JOBS) at a time on $(JOBS) cores (scripts/execute_chapters.py: one thread each,
# longest first, into the execution cache the build reads, which then executes none of them; a cell that raises
# stops here, before the build).
book: $(STAMP) $(VENDOR)
	$(BIN)/python scripts/execute_chapters.py --jobs $(JOBS)
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo "The book is at $(CURDIR)/_build/html/index.html"

# The PDF edition: Sphinx's LaTeX builder from the execution cache that `make book` filled (no second execution),
# XeLaTeX through latexmk (TeX from Debian: .ci/run installs it). The site links the copy in _build/html.
PDF := _build/html/learning-dynamics-of-gradient-descent.pdf
pdf: $(STAMP)
	mkdir -p _build && $(BIN)/jupyter-book build . --builder pdflatex -W -n --keep-going > _build/pdf.log 2>&1 \
		|| (tail -40 _build/pdf.log; exit 1)
	mkdir -p $(dir $(PDF)) && cp _build/latex/book.pdf $(PDF)
	@echo "The PDF edition is at $(CURDIR)/$(PDF)"

sync: $(STAMP)
	$(BIN)/jupytext --to ipynb --update -q chapters/*.md
	$(BIN)/python -m learndyn.colab  # the Colab editions, colab/*.ipynb

lint: $(STAMP)
	$(BIN)/ruff check lib tests bench scripts _ext

unit: $(STAMP)
	$(BIN)/python -m pytest tests --ignore=tests/site --ignore=tests/records --ignore=tests/pdf --ignore=tests/test_site_browser.py \
		--ignore=tests/test_site_browser_ja.py -n $(JOBS) -q

notebooks: $(STAMP)
	$(BIN)/python -m pytest --nbval-lax chapters -n $(JOBS) --dist loadfile -q

# Every chapter once more on fresh draws (LEARNDYN_SEED=$(CI_SEED)): the records test then holds every claim of a
# held chapter to pass there too. `make robust` does the same at five seeds and records each claim's pass count
# for the reproduction report (tests/records/robust.json; not part of `make test`: about five times the notebooks).
CI_SEED ?= 1
# Chapter 6's traces at that seed ship with learndyn for CI's seed (lib/learndyn/data/eos_traces-seed-1.npz, held to the
# library by a unit test); another seed regenerates them first.
seed-run: $(STAMP) $(if $(wildcard lib/learndyn/data/eos_traces-seed-$(CI_SEED).npz),,_build/robust/eos_traces-seed-$(CI_SEED).npz)
	$(BIN)/python -m learndyn.checks robust --seeds $(CI_SEED) --jobs $(JOBS) --out _build/seed-run.json

ROBUST_SEEDS := 1 2 3 4 5
# Chapter 6's stored sharpness traces (lib/learndyn/data/eos_traces.npz, seed 0; eos_traces-seed-1.npz), regenerated at
# each robust seed: the chapter at LEARNDYN_SEED=k reads _build/robust/eos_traces-seed-k.npz when it exists.
EOS_TRACES := $(foreach k,$(ROBUST_SEEDS),_build/robust/eos_traces-seed-$(k).npz)
_build/robust/eos_traces-seed-%.npz: bench/eos_traces.py lib/learndyn/sharpness.py | $(STAMP)
	LEARNDYN_CHECKS_DIR=_build/robust $(BIN)/python bench/eos_traces.py --seed $* --out $@

robust: $(STAMP) $(EOS_TRACES)
	$(BIN)/python -m learndyn.checks robust --seeds $(ROBUST_SEEDS) --jobs $(JOBS) --out tests/records/robust.json

# The standard of a claim, over the records the notebooks just wrote (tests/records); then the weak spots.
standard: $(STAMP)
	CI_SEED=$(CI_SEED) $(BIN)/python -m pytest tests/records -q
	$(BIN)/python -m learndyn.checks audit | grep '^=='

site: book

# The website's and the PDF's tests (after `make book`, `make book-ja`, `make pdf` and `make pdf-ja`), and the
# browser's (after `make book` and `make book-ja`).
site-check: $(STAMP)
	$(BIN)/python -m pytest tests/site tests/pdf -q

browser: $(STAMP)
	$(BIN)/python -m pytest tests/test_site_browser.py tests/test_site_browser_ja.py -q

# The stages in order (scripts/stages.sh prints each one's wall time at the end). The book stage is the chapters'
# test at the default seed: it executes every chapter afresh (the execution cache and Sphinx's environment are emptied
# first, so that a change of the library is run too and every chapter writes its records), fails on any cell that raises, and writes the records the standard stage holds to the
# standard (`make notebooks` runs the same cells through nbval, for a quick look without the site). A word a+b runs
# its stages at the same time: LaTeX (one core) beside the browser. The book and the extra seed's run stay one after
# the other: side by side, torch's OpenMP threads of the two wait on each other (measured: Chapter 6 took over 35
# minutes of CPU beside the seed run's trace generator, against under 3 alone). seed-run's failures do not stop the
# run: the records test (standard) that follows reports them claim by claim.
# book-ja (the Japanese edition, from the book stage's execution cache) follows the book, and pdf-ja (LaTeX, one
# core) runs beside pdf and browser; their tests run in the browser and site-check stages, the catalogs' in unit
# (tests/test_translations.py).
STAGES := lint unit book book-ja seed-run standard pdf+pdf-ja+browser site-check
test: $(STAMP)
	@mkdir -p _build && rm -rf _build/.jupyter_cache _build/.doctrees _build/checks/*.json
	@scripts/stages.sh $(STAGES)

clean:
	rm -rf _build

# The benchmarks (not tests): the peers of bench/requirements.txt without their dependencies (so pip leaves the
# project's torch and numpy alone), then every bench/bench_*.py and the notebooks, one process each; writes bench/results.json and the page's
# bench/results.md and bench/accuracy_cost.png. About 20 minutes on two quiet cores.
bench: $(STAMP)
	$(BIN)/python -m pip install -q --no-deps -r bench/requirements.txt
	$(BIN)/python bench/run_all.py

# The student edition of the site: every solution removed from the chapter sources (not just collapsed), built from
# a copy of the book in its own folder; the site is at _build/student/_build/html. STUDENT_TOC=FILE builds only the
# pages of another table of contents (the tests use it to build one chapter).
STUDENT := _build/student
.PHONY: student-book
student-book: $(STAMP) $(VENDOR)
	$(BIN)/python -m learndyn.teach --book . book --out $(STUDENT) --force
	$(BIN)/jupyter-book build $(STUDENT) -W -n --keep-going $(if $(STUDENT_TOC),--toc $(abspath $(STUDENT_TOC)))
	@echo "The student edition is at $(abspath $(STUDENT))/_build/html/index.html"

# The message catalogs of the translated editions (issue 34; how to translate: locales/ja/TRANSLATING.md). Sphinx's
# gettext builder reads the whole book as `make book` does, from the execution cache (a chapter the cache lacks is
# executed, so that its figure captions are messages too), with its own doctrees: _build/.doctrees and _build/html
# of the English build stay untouched. One template per page in _build/gettext/**/*.pot, then sphinx-intl merges
# each into locales/<lang>/LC_MESSAGES/**/*.po: new English is added untranslated, changed English is marked fuzzy
# (with the old translation), every other translation is kept, and a message whose English is gone is dropped (git
# has it). `scripts/po_check.py` checks the translations.
LANGS ?= ja
# Jupyter Book's own build call (as `jupyter-book build . -W -n --keep-going`) with a builder, an output folder, a
# doctree folder and more configuration of one's own: $(call jb_build,BUILDER,OUTDIR,DOCTREES,EXTRA_OVERRIDES).
jb_build = import sys; from pathlib import Path; from jupyter_book.sphinx import build_sphinx; root = Path.cwd(); \
	sys.exit(build_sphinx(root, root / "$(2)", builder="$(1)", doctreedir=root / "$(3)", noconfig=True, \
	path_config=str(root / "_config.yml"), warningiserror=True, keep_going=True, confoverrides={"nitpicky": True, \
	"external_toc_path": str(root / "_toc.yml"), "latex_individualpages": False, \
	"nb_execution_cache_path": str(root / "_build/.jupyter_cache")$(4)}))
.PHONY: gettext book-lang
gettext: $(STAMP)
	$(BIN)/python -c '$(call jb_build,gettext,_build/gettext,_build/.doctrees-gettext)'
	$(BIN)/sphinx-intl update -p _build/gettext -d locales --no-obsolete $(foreach l,$(LANGS),-l $(l))

# The Japanese edition (issue 34): `make book`'s build with language=ja and the catalogs of locales/ja (untranslated
# messages stay English), published into _build/html/ja, so that one site holds both editions (English at the root,
# Japanese under ja/; each page's language switcher links the other's copy, _ext/book_html.py). It reads the
# execution cache that `make book` filled and executes nothing: a chapter whose current source the cache lacks stops
# it first (scripts/execute_chapters.py --check: "run `make book` first"), and a build that still executed one fails.
# Sphinx builds into _build/ja/html, with its own doctrees (_build/ja/.doctrees) and myst-nb's outputs beside it
# (_build/ja/jupyter_execute: myst-nb puts them next to the output folder, which would be inside the English site),
# then the finished pages replace _build/html/ja; Sphinx compiles each .po into a .mo beside it, which git ignores.
# Warning-free with -W -n like the English build; Japanese search by Sphinx's built-in splitter
# (html_search_language follows language). `make book` leaves _build/html/ja alone, and this writes nothing else there.
BOOK_LANG ?= ja
LANG_OVERRIDES = , "language": "$(BOOK_LANG)"
LANG_BUILD := _build/$(BOOK_LANG)/html
LANG_HTML := _build/html/$(BOOK_LANG)
LANG_LOG := _build/book-$(BOOK_LANG).log
.PHONY: book-ja
book-ja: $(STAMP) $(VENDOR)
	$(BIN)/python scripts/execute_chapters.py --check
	@mkdir -p _build
	$(BIN)/python -c '$(call jb_build,html,$(LANG_BUILD),_build/$(BOOK_LANG)/.doctrees,$(LANG_OVERRIDES))' \
		> $(LANG_LOG) 2>&1 || (grep -E "WARNING|ERROR" $(LANG_LOG) | head -40; tail -15 $(LANG_LOG); exit 1)
	@! grep -n "Executing notebook" $(LANG_LOG) || (echo "the $(BOOK_LANG) build executed a notebook: run \
		\`make book\` first, so that it reads every chapter from the execution cache"; exit 1)
	rm -rf $(LANG_HTML) && mkdir -p $(dir $(LANG_HTML)) && cp -a $(LANG_BUILD) $(LANG_HTML)
	@echo "The $(BOOK_LANG) edition is at $(CURDIR)/$(LANG_HTML)/index.html (log: $(LANG_LOG))"

# The Japanese PDF edition (after `make book-ja`: the same doctrees and execution cache): Sphinx's LaTeX builder with
# language=ja (_ext/book_i18n.py sets the IPAex fonts, Debian's fonts-ipaexfont, and XeTeX's Japanese line breaking
# over the English edition's LaTeX settings), XeLaTeX through latexmk, into $(PDF_JA), which the Japanese landing
# page links (and into the staging folder of book-ja, so that a later book-ja keeps it).
PDF_NAME := $(basename $(notdir $(PDF)))-$(BOOK_LANG).pdf
PDF_JA := $(LANG_HTML)/$(PDF_NAME)
LATEX_LANG := _build/latex-$(BOOK_LANG)
.PHONY: pdf-ja
pdf-ja: $(STAMP)
	$(BIN)/python scripts/execute_chapters.py --check
	mkdir -p _build && $(BIN)/python -c '$(call jb_build,latex,$(LATEX_LANG),_build/$(BOOK_LANG)/.doctrees,$(LANG_OVERRIDES))' \
		> _build/pdf-$(BOOK_LANG).log 2>&1 || (grep -E "WARNING|ERROR" _build/pdf-$(BOOK_LANG).log | head -20; \
		tail -20 _build/pdf-$(BOOK_LANG).log; exit 1)
	$(MAKE) -C $(LATEX_LANG) all-pdf LATEXMKOPTS="-silent" >> _build/pdf-$(BOOK_LANG).log 2>&1 \
		|| (tail -40 _build/pdf-$(BOOK_LANG).log; exit 1)
	mkdir -p $(LANG_BUILD) $(LANG_HTML) && cp $(LATEX_LANG)/book.pdf $(LANG_BUILD)/$(PDF_NAME) \
		&& cp $(LATEX_LANG)/book.pdf $(PDF_JA)
	@echo "The $(BOOK_LANG) PDF edition is at $(CURDIR)/$(PDF_JA)"

# The former name of book-ja.
book-lang: book-ja
