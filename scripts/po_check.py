"""Check translated message catalogs (locales/<lang>/LC_MESSAGES/**/*.po) before committing them.

    .venv/bin/python scripts/po_check.py [PATH ...] [--list untranslated|fuzzy|all] [--complete]

PATH is a .po file or a folder of them (default: locales/ja/LC_MESSAGES). For each file it prints the number of
messages and of English words, and how many are translated, fuzzy, untranslated, or verbatim (nothing to translate:
only math, code, roles, numbers), then one line per problem:

- the file does not parse (babel's reader, strict);
- a message is marked fuzzy (sphinx-intl marks a message whose English changed: check the translation against the
  new English, then remove the flag; Sphinx ignores fuzzy translations);
- a translation changes what must stay byte-identical: the inline math spans, the roles (``{eq}``, ``{cite:t}``,
  ``{prf:ref}``, ... with their targets; for ``{ref}``/``{numref}``/``{doc}`` with an explicit text ``text <label>``
  only the label), the inline code, the link and URL targets, substitutions and footnote references. Both sides
  are parsed with the book's own MyST parser (myst-parser, with the extensions of _config.yml), so a ``$`` that no
  longer opens math, or a broken backtick, shows up as a missing span. Order does not matter (Japanese word order
  differs), the multiset does;
- the number of ``**bold**`` spans differs, or the translation has a line break the English has not;
- a proof's first message starts with ``Proof. `` and its translation does not start with the language's word (ja:
  ``証明. ``); a theorem title ``(Title)`` loses its parentheses; an exercise title ``Title (kind, ★★, 20 min)``
  changes its stars or its minutes.

`--complete` checks the catalogs of the *required* pages (`required_catalogs`): every page of the table of contents
except those under `NOT_REQUIRED` (the API reference, shown in English in this round). This is the one list the
completeness test (tests/test_translations.py) and the Japanese site's tests read.

Exit status 1 if a file does not parse or a problem was found (fuzzy messages included), else 0; untranslated
messages fail only with --complete. The rules behind the checks are in locales/ja/TRANSLATING.md.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from babel.messages.pofile import PoFileError, read_po

ROOT = Path(__file__).resolve().parents[1]
PROOF_WORD = {"ja": "証明. "}  # sphinx-proof writes "Proof. " into the first paragraph of a proof
REF_ROLES = {"ref", "numref", "doc", "term", "prf:ref", "any"}  # "text <target>": the text may be translated
FOOTNOTE = re.compile(r"\[\^[^\]\s]+\]")
EXERCISE_META = re.compile(r"\(([^()]*\b(?:derivation|coding|exploration)\b[^()]*)\)\s*$")
MINUTES = re.compile(r"(\d+)\s*(?:min|分)")


# Pages whose catalogs a complete translation need not fill (prefixes of _toc.yml's page names): the API reference,
# which the Japanese edition shows in English with a note (locales/ja/TRANSLATING.md, "What stays English").
NOT_REQUIRED = ("api/",)


def toc_pages(root: Path = ROOT) -> list[str]:
    """Every page of the book's table of contents (sections included), in book order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))

    def files(entries: list[dict]) -> list[str]:
        return [f for e in entries for f in [e["file"], *files(e.get("sections", []))]]

    return [toc["root"]] + [f for part in toc.get("parts", []) for f in files(part["chapters"])]


def required_pages(root: Path = ROOT) -> list[str]:
    """The pages a complete translation translates: every page of the book but the NOT_REQUIRED ones."""
    return [p for p in toc_pages(root) if not p.startswith(NOT_REQUIRED)]


def required_catalogs(lang: str = "ja", root: Path = ROOT) -> dict[str, Path]:
    """The catalog of each required page (`locales/<lang>/LC_MESSAGES/<page>.po`; it may not exist yet)."""
    return {p: root / "locales" / lang / "LC_MESSAGES" / f"{p}.po" for p in required_pages(root)}


def _parser():
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extensions = set((config.get("parse") or {}).get("myst_enable_extensions") or [])
    return create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)


_MD = None


def fixed_parts(text: str) -> tuple[Counter, str]:
    """The parts of a MyST message that a translation keeps byte-identical, and the text left around them."""
    global _MD
    if _MD is None:
        _MD = _parser()
    parts: Counter = Counter()
    words: list[str] = []
    for block in _MD.parse(text):
        for tok in block.children or []:
            kind = tok.type
            if kind in ("math_inline", "math_inline_double"):
                parts[("math", tok.content)] += 1
            elif kind == "myst_role":
                name, content = tok.meta.get("name", ""), tok.content
                m = re.fullmatch(r"(?s)(.*?)\s*<([^<>]+)>", content)
                if name in REF_ROLES and m:
                    content = "<" + m.group(2) + ">"
                parts[("role", f"{{{name}}}`{content}`")] += 1
            elif kind == "code_inline":
                parts[("code", tok.content)] += 1
            elif kind in ("link_open", "image"):
                parts[("link", tok.attrs.get("href") or tok.attrs.get("src") or "")] += 1
            elif kind == "substitution_inline":
                parts[("substitution", tok.content.strip())] += 1
            elif kind == "html_inline":
                parts[("html", tok.content)] += 1
            elif kind == "strong_open":
                parts[("bold", "**")] += 1
            elif kind == "text":
                for ref in FOOTNOTE.findall(tok.content):
                    parts[("footnote", ref)] += 1
                words.append(tok.content)
    return parts, " ".join(words)


def verbatim(msgid: str) -> bool:
    """A message with nothing to translate: no letters outside math, code, roles and links."""
    _, rest = fixed_parts(msgid)
    return not re.search(r"[A-Za-z]{2,}", rest)


@dataclass
class Report:
    path: Path
    messages: int = 0
    words: int = 0
    translated: int = 0
    fuzzy: int = 0
    untranslated: int = 0
    verbatim: int = 0
    problems: list[str] = field(default_factory=list)
    lists: dict[str, list[str]] = field(default_factory=lambda: {"untranslated": [], "fuzzy": []})


def _short(text: str, n: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _diff(a: Counter, b: Counter) -> str:
    missing, extra = a - b, b - a
    out = []
    for label, cnt in (("missing", missing), ("extra", extra)):
        if cnt:
            out.append(label + " " + ", ".join(f"{k[0]} {k[1]!r}" + (f" x{v}" if v > 1 else "")
                                               for k, v in sorted(cnt.items())))
    return "; ".join(out)


def check_message(msgid: str, msgstr: str, lang: str) -> list[str]:
    """The problems of one translated message (empty when it keeps every fixed part)."""
    problems = []
    a, _ = fixed_parts(msgid)
    b, _ = fixed_parts(msgstr)
    if a != b:
        problems.append(_diff(a, b))
    if "\n" in msgstr and "\n" not in msgid:
        problems.append("line break in the translation (write one line: the English has none)")
    if msgid.startswith("Proof. ") and lang in PROOF_WORD and not msgstr.startswith(PROOF_WORD[lang]):
        problems.append(f"a proof's translation starts with {PROOF_WORD[lang]!r}")
    if re.fullmatch(r"\(.*\)", msgid) and not re.fullmatch(r"\(.*\)", msgstr):
        problems.append("a theorem title keeps its parentheses: '(…)'")
    meta = EXERCISE_META.search(msgid)
    if meta:
        stars, minutes = meta.group(1).count("★"), MINUTES.findall(meta.group(1))
        if msgstr.count("★") != stars or MINUTES.findall(msgstr) != minutes:
            problems.append(f"an exercise title keeps its {stars} star(s) and its minutes {minutes}")
    return problems


def check_file(path: Path) -> Report:
    report = Report(path)
    try:
        with path.open("rb") as f:
            catalog = read_po(f, abort_invalid=True)
    except (PoFileError, UnicodeDecodeError, ValueError) as exc:
        report.problems.append(f"does not parse: {exc}")
        return report
    lang = str(catalog.locale or "").split("_")[0]
    for message in catalog:
        msgid = message.id
        if not msgid or isinstance(msgid, tuple):
            continue  # the header (and plural forms, which Sphinx never writes)
        msgstr = message.string if isinstance(message.string, str) else ""
        report.messages += 1
        report.words += len(msgid.split())
        if message.fuzzy:
            report.fuzzy += 1
            report.lists["fuzzy"].append(msgid)
            report.problems.append(f"fuzzy: {_short(msgid)!r}")
        elif msgstr:
            report.translated += 1
        elif verbatim(msgid):
            report.verbatim += 1
            continue
        else:
            report.untranslated += 1
            report.lists["untranslated"].append(msgid)
            continue
        for problem in check_message(msgid, msgstr, lang) if msgstr else []:
            report.problems.append(f"{_short(msgid)!r}: {problem}")
    return report


def po_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*.po")) if p.is_dir() else [p]
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "locales" / "ja" / "LC_MESSAGES")])
    parser.add_argument("--required", metavar="LANG",
                        help="check the catalogs of the required pages of LANG (not the API reference) and fail "
                             "on a missing one; with --complete, the test of a finished translation")
    parser.add_argument("--list", choices=("untranslated", "fuzzy", "all"), help="print these messages' English")
    parser.add_argument("--complete", action="store_true", help="fail on untranslated messages too")
    args = parser.parse_args(argv)
    files = po_files(args.paths)
    if args.required:
        catalogs = required_catalogs(args.required)
        missing = [str(path.relative_to(ROOT)) for path in catalogs.values() if not path.is_file()]
        if missing:
            print("no catalog for required pages: " + ", ".join(missing) + " (make gettext)", file=sys.stderr)
            return 1
        files = list(catalogs.values())
    if not files:
        print("no .po files in " + ", ".join(args.paths), file=sys.stderr)
        return 1
    failed = False
    total = Counter()
    for path in files:
        r = check_file(path)
        name = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        print(f"{name}: {r.messages} messages ({r.words} words): {r.translated} translated, {r.fuzzy} fuzzy, "
              f"{r.untranslated} untranslated, {r.verbatim} verbatim")
        for problem in r.problems:
            print(f"  {problem}")
        for kind in ("untranslated", "fuzzy"):
            if args.list in (kind, "all"):
                for msgid in r.lists[kind]:
                    print(f"  {kind}: {msgid}")
        failed |= bool(r.problems) or (args.complete and r.untranslated > 0)
        total.update(messages=r.messages, words=r.words, translated=r.translated, fuzzy=r.fuzzy,
                     untranslated=r.untranslated, verbatim=r.verbatim, problems=len(r.problems))
    if len(files) > 1:
        print(f"total, {len(files)} files: {total['messages']} messages ({total['words']} words): "
              f"{total['translated']} translated, {total['fuzzy']} fuzzy, {total['untranslated']} untranslated, "
              f"{total['verbatim']} verbatim; {total['problems']} problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
