"""The notation page (notation.md) against the chapters: one symbol, one meaning.

notation.md is the one source: its tables list every symbol with its meaning and the chapter that introduces it, and
its list "Deliberate reuses" names the symbols that may mean different things in different chapters. A symbol in
the tables that is not in that list is *unique*. The scanner below finds definitions in the prose of a chapter
("let $X$ be/denote", "where $X$ is/denotes", "$X$ denotes", "we write $X$ for", "$X := ...$", and "$X = ...$"
directly after a definition word such as "with the residual") and collects (symbol, chapter, line, words around
it). A definition of a unique symbol *agrees* with the page when its words share a content word with the page's
meaning, or when its right-hand side is the formula the page gives; a definition without words to compare is
accepted. Every disagreeing definition in a conforming chapter is a clash. This allows a later chapter to recall a
definition ("with the residual $\\Xi=\\Sigma-W_2W_1$") and catches a second meaning ("with the residual $G=...$"
where the page says $G$ is a group element).

CONFORMING is the list of chapters held to the page; a chapter joins it once its symbols follow the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTATION = ROOT / "notation.md"
CHAPTER_DIR = ROOT / "chapters"
CONFORMING = ["00_preface", "01_linear_regression", "02_deep_linear", "03_ssl_noncontrastive", "04_ssl_stepwise",
              "07_large_stepsize"]

# ---------------------------------------------------------------------------------------------------------------
# The page


@dataclass(frozen=True)
class Entry:
    symbol: str  # as written on the page
    key: str  # normalised (see normalise)
    meaning: str
    chapter: str  # chapter stem, e.g. "01_linear_regression"
    line: int


def chapter_stem(label: str, chapter_dir: Path = CHAPTER_DIR) -> str:
    """'Preface' -> '00_preface', '3' -> '03_ssl_noncontrastive' (the file of that number in chapter_dir)."""
    label = label.strip()
    number = 0 if label.lower() == "preface" else int(label)
    matches = sorted(chapter_dir.glob(f"{number:02d}_*.md"))
    if len(matches) != 1:
        raise ValueError(f"no unique chapter file for {label!r} in {chapter_dir}")
    return matches[0].stem


_INDEX_SUB = re.compile(r"_(?:\\alpha|\\beta|\\gamma|i|j)(?![A-Za-z])")
_INDEX_SUP = re.compile(r"\^(?:\\alpha|\\beta|\\gamma)(?![A-Za-z])")


def normalise(symbol: str) -> str:
    """A comparable form of a symbol: no spacing, single-token braces dropped, mode/example indices generic.

    `u_\\alpha`, `u_{\\beta}` and `u_i` all become `u_#`; `w_k` stays `w_k` (k is the step); a trailing argument
    list is dropped, so `R(w,\\hat w)` is `R`.
    """
    s = symbol.strip()
    for junk in (r"\,", r"\!", r"\;", r"\left", r"\right", r"\big", r"\Big", r"\displaystyle"):
        s = s.replace(junk, "")
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"(?<=[A-Za-z0-9}]) (?=[^A-Za-z])|(?<=[^A-Za-z]) (?=[A-Za-z\\])|(?<=[_^]) ", "", s)
    s = re.sub(r"([_^])\{(\\?[A-Za-z]+|\d)\}", r"\1\2", s)  # W_{1} -> W_1, u^{\alpha} -> u^\alpha
    s = re.sub(r"\\(mathrm|rm)\{([^{}]*)\}", r"\\rm \2", s)
    s = s.replace(r"\rm ", r"\rm{}")
    m = re.fullmatch(r"(.+?)\((?:[^()]*)\)", s)  # R(w,\hat w) -> R ; mu(t) -> mu
    if m and not m.group(1).endswith(("_", "^")):
        s = m.group(1)
    s = _INDEX_SUB.sub("_#", s)
    s = _INDEX_SUP.sub("^#", s)
    return s.replace(r"\star", "*").replace(r"\ast", "*")


_ROW = re.compile(r"^\|\s*\$([^$]+)\$\s*\|(.+)\|\s*([^|]+?)\s*\|\s*$")


def _exempt_chapters(text: str, chapter_dir: Path) -> frozenset[str] | None:
    """The chapters of a reuse's *other* meaning: those named after its first ', and'; None: local everywhere."""
    parts = re.split(r",\s+and\b", text, maxsplit=1)
    if len(parts) < 2:
        return None
    other = parts[1]
    stems = set()
    for group in re.findall(r"Chapters?\s+((?:\d+(?:\s*[–-]\s*\d+)?(?:\s*,\s*|\s+and\s+)?)+)", other):
        for first, last in re.findall(r"(\d+)(?:\s*[–-]\s*(\d+))?", group):
            for number in range(int(first), int(last or first) + 1):
                stems.add(chapter_stem(str(number), chapter_dir))
    return frozenset(stems) if stems else None


def parse_page(text: str, chapter_dir: Path = CHAPTER_DIR) -> tuple[list[Entry], dict[str, frozenset[str] | None]]:
    """The table entries of notation.md, and its deliberate reuses: symbol -> chapters of the other meaning.

    A reuse item reads '- $X$: <the meaning of the tables>, and <the other meaning> in Chapter N ...'; its other
    meaning is allowed in the chapters named after ', and'. An item without ', and' is local everywhere (None).
    """
    entries: list[Entry] = []
    reuses: dict[str, frozenset[str] | None] = {}
    section = ""
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if line.startswith("## "):
            section = line[3:].strip().lower()
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] in ("Symbol", "") or set(cells[0]) <= set("-: "):
                continue
            m = _ROW.match(line)
            if not m:
                raise ValueError(f"notation.md:{number}: a row must be '| $symbol$ | meaning | chapter |': {line}")
            symbol, meaning, chapter = m.groups()
            entries.append(Entry(symbol, normalise(symbol), meaning.strip(), chapter_stem(chapter, chapter_dir),
                                 number))
        elif section.startswith("deliberate") and re.match(r"- \$[^$]+\$(, \$[^$]+\$)*:", line):
            item = [line]
            for more in lines[number:]:
                if not more.startswith("  "):
                    break
                item.append(more.strip())
            head, body = " ".join(item)[2:].split(":", 1)
            exempt = _exempt_chapters(body, chapter_dir)
            for symbol in re.findall(r"\$([^$]+)\$", head):
                reuses[normalise(symbol)] = exempt
    return entries, reuses


def load_page() -> tuple[list[Entry], dict[str, frozenset[str] | None]]:
    return parse_page(NOTATION.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------------------------
# The scanner


@dataclass(frozen=True)
class Definition:
    key: str  # normalised symbol
    symbol: str
    chapter: str
    line: int
    words: str  # the words that say what the symbol is
    rhs: str  # normalised right-hand side of "X = ..." / "X := ...", or ""


_MATH = r"\$(?!\$)([^$]+?)\$"
_AFTER = r"(?P<after>[^.;:$]{0,90})"
_DEF_WORD = r"(?:with|where|let|letting|write|writing|define|defining|denote|call|calling|name|set|setting)"
PATTERNS = [
    ("let", re.compile(r"\blet(?:ting)?\s+" + _MATH + r"\s+(?:be|denote|denotes|stand for)\b" + _AFTER, re.I)),
    ("where", re.compile(r"\bwhere\s+" + _MATH + r"\s+(?:is|are|denotes|stands for)\b" + _AFTER, re.I)),
    ("denotes", re.compile(_MATH + r"\s+(?:denotes|stands for)\b" + _AFTER, re.I)),
    ("write-for", re.compile(r"\bwrite\s+" + _MATH + r"\s+for\b" + _AFTER, re.I)),
    ("assign", re.compile(r"\b" + _DEF_WORD + r"\s+(?P<before>(?:[A-Za-z][\w–-]*\s+){0,4}?)" + _MATH, re.I)),
    ("colon-eq", re.compile(r"(?P<before>[^.;$]{0,60})" + r"\$(?!\$)([^$]*?:=[^$]*?)\$")),
]

NOT_A_NOUN_PHRASE = set("when if iff all for at every each that is are as so then since because until unless".split())

STOPWORDS = set("""
the a an of to in on at by for with from and or as is are be its it this that these those which what when where
than then there their our we us one two each every any all same other such only also here into onto over under
just very more most less least some both either neither not no so if else since because while whose who whom new
value values vector vectors matrix matrices scalar number numbers function functions quantity term terms part
given called written write note denote denotes let define defined step steps point points like used uses use
""".split())


def content_stems(text: str) -> set[str]:
    """Lower-case content words of `text` outside math, cut to 5 letters (a crude stem)."""
    text = re.sub(r"\$[^$]*\$", " ", text)
    words = re.findall(r"[A-Za-z]+", text.lower())
    return {w[:5] for w in words if len(w) >= 4 and w not in STOPWORDS}


_NUMERIC = re.compile(r"^[\s\d.,{}()\[\]^+\-−<>]*$")


def _split_assignment(math: str) -> tuple[str, str] | None:
    """'X = rhs' or 'X := rhs' or 'X \\in S' -> (X, rhs); None if the math is not a definition of a simple symbol."""
    m = re.match(r"^\s*(.+?)\s*(:=|=|\\in\b|\\sim\b)\s*(.*)$", math, re.S)
    if m:
        lhs, op, rhs = m.groups()
    else:
        lhs, op, rhs = math, "", ""
    if ":" in lhs and op != ":=":  # L:\mathbb R^d\to\mathbb R
        lhs = lhs.split(":", 1)[0]
    if op in (r"\in", r"\sim"):
        rhs = ""
    if len(lhs) > 30 or re.search(r"[+\-<>,|=]|\\(frac|sum|int|prod|le|ge|to|mapsto|cdot|approx)\b", lhs):
        return None
    if not re.search(r"[A-Za-z]", lhs) or lhs.strip().isdigit():
        return None
    if op in ("=", ":=") and rhs:
        cleaned = re.sub(r"\\(times|cdot|pm|,|;|quad|qquad)", "", rhs)
        if _NUMERIC.match(cleaned):
            return None  # a parameter setting such as $\eta=0.1$, not a definition
    return lhs, normalise(rhs) if rhs else ""


def prose(text: str) -> str:
    """The chapter text with code cells, display math and comments blanked (line numbers kept)."""

    def blank(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    text = re.sub(r"^```\{code-cell\}.*?^```[ \t]*$", blank, text, flags=re.S | re.M)
    text = re.sub(r"\$\$.*?\$\$", blank, text, flags=re.S)
    return re.sub(r"<!--.*?-->", blank, text, flags=re.S)


def scan_definitions(text: str, chapter: str) -> list[Definition]:
    """Every definition the patterns find in the prose of one chapter."""
    body = prose(text)
    found: dict[tuple[str, int], Definition] = {}
    for kind, pattern in PATTERNS:
        for m in pattern.finditer(body):
            if kind == "colon-eq":
                math, words = m.group(2), m.group("before")
            elif kind == "assign":
                math, words = m.group(2), m.group("before")
                if not re.search(r"(?<![<>!]):?=(?!=)", math):
                    continue  # "with $X$" alone is not a definition; "with the residual $G=...$" is
                if set(words.lower().split()) & NOT_A_NOUN_PHRASE:
                    continue  # "with equality exactly when all $\lambda_i=n$" is a condition
            else:
                math, words = m.group(1), m.group("after")
            split = _split_assignment(math)
            if split is None:
                continue
            lhs, rhs = split
            line = body.count("\n", 0, m.start(2 if kind in ("assign", "colon-eq") else 1)) + 1
            key = normalise(lhs)
            found.setdefault((key, line), Definition(key, lhs.strip(), chapter, line, " ".join(words.split()), rhs))
    return sorted(found.values(), key=lambda d: (d.line, d.key))


def _meaning_rhs(entry: Entry) -> set[str]:
    """Right-hand sides the page itself gives for the symbol ('$\\tau=1/\\eta$' in the meaning gives '1/\\eta')."""
    out: set[str] = set()
    for math in re.findall(r"\$([^$]+)\$", entry.meaning):
        split = _split_assignment(math)
        if split and normalise(split[0]) == entry.key and split[1]:
            out.add(split[1])
        out.add(normalise(math))
    return out


def agrees(definition: Definition, entry: Entry) -> bool:
    """Does a definition found in a chapter say the same as the page?"""
    if definition.rhs and definition.rhs in _meaning_rhs(entry):
        return True
    words = content_stems(definition.words)
    if not words:
        return True  # nothing to compare: "where $X=\dots$" alone
    return bool(words & content_stems(entry.meaning))


def clashes(chapters: dict[str, str], entries: list[Entry], reuses: dict[str, frozenset[str] | None]) -> list[str]:
    """Definitions that disagree with the page, as readable lines (empty: the chapters conform).

    A deliberate reuse is not checked in the chapters of its other meaning (nowhere, if it is local everywhere).
    """
    table = {e.key: e for e in entries}
    out = []
    for chapter, text in chapters.items():
        for d in scan_definitions(text, chapter):
            entry = table.get(d.key)
            if entry is None or (d.key in reuses and (reuses[d.key] is None or chapter in reuses[d.key])):
                continue
            if not agrees(d, entry):
                out.append(f"{chapter}.md:{d.line}: ${d.symbol}$ defined as '{d.words}'"
                           f"{' = ' + d.rhs if d.rhs else ''}; the notation page ({entry.chapter}) says: "
                           f"{entry.meaning}")
    return out


def _chapters(stems: list[str]) -> dict[str, str]:
    return {stem: (CHAPTER_DIR / f"{stem}.md").read_text(encoding="utf-8") for stem in stems}


# ---------------------------------------------------------------------------------------------------------------
# Tests of the page


def test_page_is_front_matter_in_the_toc():
    yaml = pytest.importorskip("yaml")
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert "notation" in files and files.index("notation") < files.index("chapters/00_preface")
    part = next(p for p in toc["parts"] if any(c["file"] == "notation" for c in p["chapters"]))
    assert not part.get("numbered"), "the notation page is unnumbered front matter"
    assert NOTATION.read_text(encoding="utf-8").startswith("(notation)=\n# Notation")


def test_every_symbol_appears_once_in_the_tables():
    entries, _ = load_page()
    assert len(entries) > 100, "the tables were not parsed"
    seen: dict[str, Entry] = {}
    for e in entries:
        assert e.key not in seen, (f"notation.md:{e.line}: ${e.symbol}$ is already listed at line "
                                   f"{seen[e.key].line} (${seen[e.key].symbol}$)")
        seen[e.key] = e


def test_deliberate_reuses_are_few_and_named():
    entries, reuses = load_page()
    assert 1 <= len(reuses) <= 8, reuses
    assert normalise(r"\tau") not in reuses and normalise("R") not in reuses
    assert reuses[normalise("G")] == {"07_large_stepsize"}, "G means the group element everywhere but Chapter 7"
    assert reuses[normalise(r"\sigma")] == {"02_deep_linear", "07_large_stepsize"}


def test_conforming_chapters_exist():
    for stem in CONFORMING:
        assert (CHAPTER_DIR / f"{stem}.md").exists(), stem


def test_unique_symbols_are_not_defined_with_another_meaning():
    """The check of the book: in the conforming chapters, no unique symbol has a second meaning."""
    entries, reuses = load_page()
    found = clashes(_chapters(CONFORMING), entries, reuses)
    assert not found, "symbols defined against the notation page:\n" + "\n".join(found)


# ---------------------------------------------------------------------------------------------------------------
# Unit tests of the scanner


def test_normalise():
    assert normalise(r"u_{\beta}") == normalise(r"u_\alpha") == normalise("u_i") == "u_#"
    assert normalise("w_k") == "w_k" and normalise("W_{1}") == "W_1"
    assert normalise(r"R(w,\hat w)") == "R" and normalise(r"\mu(t)") == r"\mu"
    assert normalise(r"\beta_{\rm loc}") == normalise(r"\beta_{\mathrm{loc}}")
    assert normalise(r"a^{\alpha}") == normalise(r"a^\gamma") == "a^#"
    assert normalise(r"w^\star") == normalise(r"w^\ast") == "w^*"


def test_scanner_finds_each_pattern():
    text = "\n".join([
        "Let $A$ be the generator of the group.",
        "where $B$ is the balance matrix, and",
        "Here $C$ denotes the cross-correlation.",
        "We write $D$ for the depth.",
        "with $F:=\\Phi\\Phi^\\top$ the correlation,",
        "with the residual $G=\\Sigma-W_2W_1$,",
        "at $\\eta=0.1$ and with $N_2=10$ hidden units,",  # parameter settings, not definitions
        "```{code-cell} ipython3",
        "where $Z$ is never seen in code",
        "```",
    ])
    defs = {d.key: d for d in scan_definitions(text, "xx")}
    assert set(defs) == {"A", "B", "C", "D", "F", "G"}
    assert defs["G"].words == "the residual" and defs["G"].rhs == normalise(r"\Sigma-W_2W_1")
    assert defs["D"].line == 4 and "depth" in defs["D"].words


def test_scanner_skips_conditions_written_with_iff():
    """'with equality iff $C=I$' states when a bound is tight; it does not define C (Chapter 4 had one)."""
    text = "Then L >= 0, with equality iff $C=I$, and with the residual $G=\\Sigma-W_2W_1$ we get"
    assert {d.key for d in scan_definitions(text, "xx")} == {"G"}


def _page_with(rows: str, reuses: str = "") -> tuple[list[Entry], dict[str, frozenset[str] | None]]:
    text = "## T\n\n| Symbol | Meaning | Introduced |\n|---|---|---|\n" + rows + "\n## Deliberate reuses\n\n" + reuses
    return parse_page(text)


def test_scanner_flags_a_second_meaning_and_accepts_a_recall():
    entries, reuses = _page_with("| $G$ | an element of the symmetry group | 1 |\n"
                                 "| $\\Xi$ | the residual $\\Sigma-W_2W_1$ | 1 |\n"
                                 "| $\\tau$ | the time constant $\\tau=1/\\eta$ | Preface |\n")
    good = {"01_linear_regression": "For any invertible group element $G$ ... with the residual $\\Xi=\\Sigma-W_2W_1$.",
            "02_deep_linear": "Recall the residual $\\Xi=\\Sigma-W_2W_1$ and write $\\tau=1/\\eta$ for the time."}
    assert clashes(good, entries, reuses) == []
    bad = {"02_deep_linear": "Differentiating, with the residual $G=\\Sigma-W_2W_1$, we get"}
    (line,) = clashes(bad, entries, reuses)
    assert line.startswith("02_deep_linear.md:1: $G$") and "symmetry group" in line
    # a deliberate reuse is not checked in the chapters of its other meaning, and is checked elsewhere
    entries, reuses = _page_with("| $G$ | an element of the symmetry group | 1 |\n",
                                 "- $G$: the group element, and, in Chapter 7,\n  a function of the weights.\n")
    assert reuses == {"G": {"07_large_stepsize"}}
    assert clashes({"07_large_stepsize": bad["02_deep_linear"]}, entries, reuses) == []
    assert len(clashes(bad, entries, reuses)) == 1


def test_injected_clash_in_a_copy_of_a_chapter_fails(tmp_path):
    """A conforming chapter with one bad definition added must fail the book's check; unchanged, its τ is clean."""
    entries, reuses = load_page()
    stem = "00_preface"
    original = (CHAPTER_DIR / f"{stem}.md").read_text(encoding="utf-8")
    tau = [c for c in clashes({stem: original}, entries, reuses) if "$\\tau$" in c]
    assert tau == []
    copy = tmp_path / f"{stem}.md"
    copy.write_text(original + "\nTake a Gaussian prior, where $\\tau$ is the prior scale of the weights.\n",
                    encoding="utf-8")
    found = clashes({stem: copy.read_text(encoding="utf-8")}, entries, reuses)
    assert any("$\\tau$ defined as 'the prior scale of the weights'" in c for c in found), found


def test_chapter_labels_map_to_files(tmp_path):
    (tmp_path / "00_preface.md").write_text("")
    (tmp_path / "03_ssl_noncontrastive.md").write_text("")
    assert chapter_stem("Preface", tmp_path) == "00_preface"
    assert chapter_stem("3", tmp_path) == "03_ssl_noncontrastive"
    with pytest.raises(ValueError, match="no unique chapter"):
        chapter_stem("4", tmp_path)
