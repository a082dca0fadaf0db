"""Colab editions of the chapters: the same notebooks, with MyST's directives and roles written as plain Markdown.

Colab renders Markdown and LaTeX, not MyST: a chapter's `{prf:theorem}` fences, `{eq}` roles and `(label)=` targets
would show as raw text there. `colab_notebook` rewrites every Markdown cell of a chapter source
(`chapters/NN_slug.md`) for Colab and keeps its code cells as they are:

- theorems, propositions, remarks and proofs become bold headings with their text (a proof ends with ∎),
  exercises and solutions bold headings, admonitions block quotes; `{index}` entries and targets are dropped;
- a labelled display `$$ ... $$ (label)` gets its number as `\\tag{N.M}` (N the chapter, M its place among the
  chapter's labelled displays, as on the website) and `{eq}` references print that number;
- `{numref}` figures print "Fig. N.M" (the chapter's figures in order), `{ref}` and `{prf:ref}` print the title of
  the section, exercise or theorem they point to, and citations print "Author et al. (year)" from `references.bib`.

    python -m learndyn.colab [--out colab] [--check]

writes `colab/NN_slug.ipynb` for every chapter (committed without outputs; the website's Colab button opens
them), or with `--check` exits 1 when one is missing or out of date.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

THEOREM_KINDS = {"prf:theorem": "Theorem", "prf:proposition": "Proposition", "prf:lemma": "Lemma",
                 "prf:corollary": "Corollary", "prf:remark": "Remark", "prf:definition": "Definition",
                 "prf:example": "Example"}
FENCE = re.compile(r"^(\s*)(`{3,}|:{3,})\{([a-z:-]+)\}\s*(.*)$")
PLAIN_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
EQ_LABEL = re.compile(r"^\s*\$\$\s*\(([A-Za-z0-9_:-]+)\)\s*$")
TARGET = re.compile(r"^\(([A-Za-z0-9_:.-]+)\)=\s*$")
BACK_MATTER = {"reproduction": "the reproduction report of the book's website", "notation": "the notation page"}
ROLE = re.compile(r"\{(eq|numref|ref|prf:ref|cite|cite:t|cite:p|doc|term|index)\}`([^`]*)`")


@dataclass
class Labels:
    """What a reference prints in the Colab edition, by label."""

    text: dict[str, str] = field(default_factory=dict)
    citations: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (authors, year)
    missing: list[str] = field(default_factory=list)  # references that found no label (printed as the label)


def _number(md: Path) -> str:
    return str(int(md.name[:2]))


def collect_labels(chapters: list[Path], bib: Path | None = None, extra: dict[str, str] | None = None) -> Labels:
    """Every equation, figure, section, exercise and theorem label of the chapters, and the bibliography."""
    import jupytext

    labels = Labels(text=dict(extra or {}))
    for md in chapters:
        n = _number(md)
        eq = fig = 0
        nb = jupytext.read(md)
        for cell in nb.cells:
            figure = cell.metadata.get("mystnb", {}).get("figure") if cell.cell_type == "code" else None
            if figure:
                fig += 1
                if figure.get("name"):
                    labels.text[figure["name"]] = f"Fig. {n}.{fig}"
            if cell.cell_type != "markdown":
                continue
            lines = cell.source.splitlines()
            for i, line in enumerate(lines):
                if (m := EQ_LABEL.match(line)) and i > 0:
                    eq += 1
                    labels.text[m.group(1)] = f"({n}.{eq})"
                elif (m := TARGET.match(line)) and i + 1 < len(lines):
                    heading = next((x for x in lines[i + 1:] if x.strip()), "")
                    labels.text[m.group(1)] = heading.lstrip("#").strip()
                elif (m := FENCE.match(line)) and m.group(3) in {*THEOREM_KINDS, "exercise"}:
                    title = m.group(4).strip()
                    label = next((x.split(":label:", 1)[1].strip() for x in lines[i + 1:i + 6]
                                  if x.strip().startswith(":label:")), None)
                    if label:
                        kind = THEOREM_KINDS.get(m.group(3), "Exercise")
                        title = re.sub(r"\s*\((derivation|coding|exploration)[^)]*\)\s*$", "", title)
                        labels.text[label] = f"{kind} “{title}”" if title else kind
    if bib is not None and bib.exists():
        labels.citations = _bibliography(bib.read_text())
    return labels


def _bibliography(text: str) -> dict[str, tuple[str, str]]:
    """key -> (authors as cited, year), from a BibTeX file (only the author and year fields are read)."""
    out = {}
    for entry in re.finditer(r"@\w+\s*\{\s*([^,\s]+)\s*,(.*?)\n\}", text, re.S):
        key, body = entry.group(1), entry.group(2)
        author = re.search(r"author\s*=\s*[{\"](.*?)[}\"]\s*,?\s*\n", body, re.S | re.I)
        year = re.search(r"year\s*=\s*[{\"]?(\d{4})", body, re.I)
        names = [n.strip() for n in re.split(r"\s+and\s+", " ".join((author.group(1) if author else "").split()))]
        last = [(n.split(",")[0] if "," in n else n.split()[-1]).strip("{} ") for n in names if n]
        if not last:
            cited = key
        elif len(last) == 1:
            cited = last[0]
        elif len(last) == 2:
            cited = f"{last[0]} and {last[1]}"
        else:
            cited = f"{last[0]} et al."
        out[key] = (cited, year.group(1) if year else "")
    return out


def _role(kind: str, body: str, labels: Labels) -> str:
    explicit = re.match(r"^(.*?)\s*<([^>]+)>$", body, re.S)
    text, target = (explicit.group(1), explicit.group(2)) if explicit else (None, body)
    if kind in ("cite", "cite:t", "cite:p"):
        keys = [k.strip() for k in target.split(",") if k.strip()]
        labels.missing += [k for k in keys if k not in labels.citations]
        found = [labels.citations.get(k, (k, "")) for k in keys]
        if kind == "cite:t":
            return "; ".join(f"{a} ({y})" for a, y in found)
        return "(" + "; ".join(f"{a}, {y}" for a, y in found) + ")"
    if kind == "index":
        return ""
    if target not in labels.text and not text:
        labels.missing.append(target)
    shown = labels.text.get(target, target)
    if kind == "numref" and text:
        return text.replace("%s", shown.removeprefix("Fig. "))
    if text:
        return text
    return shown


def to_markdown(source: str, labels: Labels, chapter: str = "") -> str:
    """One Markdown cell of a chapter, its MyST constructs written as plain Markdown (see the module docstring)."""
    out: list[str] = []
    stack: list[tuple[str, str]] = []  # open fences: (fence, directive)
    plain: str | None = None  # inside a plain code fence: its marker
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if plain is not None:
            out.append(line)
            if line.strip().startswith(plain) and set(line.strip()) == {plain[0]}:
                plain = None
            i += 1
            continue
        if stack and line.strip() == stack[-1][0]:
            _fence, name = stack.pop()
            if name == "prf:proof":
                out.append("∎")
            elif name == "admonition":
                pass
            i += 1
            continue
        m = FENCE.match(line)
        if m:
            _indent, fence, name, arg = m.groups()
            stack.append((fence, name))
            i += 1
            while i < len(lines) and re.match(r"^\s*:[a-z-]+:", lines[i]):  # directive options
                i += 1
            if name == "index":  # drop the entry with its body
                depth = 1
                while i < len(lines) and depth:
                    if lines[i].strip() == fence:
                        depth -= 1
                    i += 1
                stack.pop()
                continue
            head = _directive_head(name, arg.strip(), labels)
            if head:
                out += [head, ">" if head.startswith(">") else ""]
            continue
        if PLAIN_FENCE.match(line) and not FENCE.match(line):
            plain = PLAIN_FENCE.match(line).group(2)
            out.append(line)
            i += 1
            continue
        if TARGET.match(line):
            i += 1
            continue
        eq = EQ_LABEL.match(line)
        if eq:
            number = labels.text.get(eq.group(1), "").strip("()")
            out.append(rf"\tag{{{number}}}" if number else "")
            out.append("$$")
            i += 1
            continue
        line = ROLE.sub(lambda r: _role(r.group(1), r.group(2), labels), line)
        inside_admonition = any(n == "admonition" for _, n in stack)
        out.append((f"> {line}" if line.strip() else ">") if inside_admonition else line)
        i += 1
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def _directive_head(name: str, arg: str, labels: Labels) -> str:
    arg = ROLE.sub(lambda r: _role(r.group(1), r.group(2), labels), arg)
    if name in THEOREM_KINDS:
        return f"**{THEOREM_KINDS[name]}{f' — {arg}' if arg else ''}.**"
    if name == "prf:proof":
        return "*Proof.*"
    if name == "exercise":
        return f"**Exercise: {arg}**" if arg else "**Exercise**"
    if name == "solution-start":
        return "**Solution.**"
    if name == "solution-end":
        return ""
    if name == "admonition":
        return f"> **{arg}**" if arg else ""
    if name in ("note", "tip", "important", "warning", "hint", "dropdown", "margin"):
        return f"> **{arg or name.capitalize()}**"
    return f"**{arg}**" if arg else ""


def colab_notebook(md: Path, labels: Labels) -> dict:
    """The Colab edition of one chapter source, as a notebook dict (nbformat 4, no outputs)."""
    import jupytext

    nb = jupytext.read(md)
    cells = []
    for cell in nb.cells:
        cell = copy.deepcopy(cell)
        if cell.cell_type == "markdown":
            cell.source = to_markdown(cell.source, labels, md.stem)
            if not cell.source.strip():
                continue
        elif cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.id = f"colab-{len(cells):03d}"  # deterministic (jupytext gives a Markdown source's cells random ids)
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("jupytext", None)
    nb.metadata["colab"] = {"provenance": [], "name": md.with_suffix(".ipynb").name}
    return json.loads(jupytext.writes(nb, fmt="ipynb"))


def editions(root: Path) -> dict[Path, str]:
    """Every chapter's Colab edition (path under `root/colab` -> notebook JSON text)."""
    chapters = sorted((root / "chapters").glob("[0-9][0-9]_*.md"))
    labels = collect_labels(chapters, root / "references.bib", BACK_MATTER)
    return {root / "colab" / md.with_suffix(".ipynb").name:
            json.dumps(colab_notebook(md, labels), indent=1, ensure_ascii=False) + "\n" for md in chapters}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m learndyn.colab", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=".", help="the book's repository (default: .)")
    parser.add_argument("--check", action="store_true", help="only report editions missing or out of date")
    args = parser.parse_args(argv)
    root = Path(args.root)
    stale = []
    for path, text in editions(root).items():
        if path.exists() and path.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if args.check and stale:
        print("out of date (python -m learndyn.colab):", ", ".join(str(p) for p in stale))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
