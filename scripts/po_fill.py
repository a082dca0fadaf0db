"""Move translations between a message catalog and a JSON file (for translating a page in chunks).

    python scripts/po_fill.py dump locales/ja/LC_MESSAGES/chapters/01_linear_regression.po > /tmp/ch01.json
    python scripts/po_fill.py fill locales/ja/LC_MESSAGES/chapters/01_linear_regression.po /tmp/ch01-done.json

`dump` prints the page's messages as a JSON list of {"id": English, "str": translation} in page order (`--todo`:
only the untranslated ones; verbatim messages, nothing but math, code, roles or numbers, are left out). `fill`
reads such a list (or a {English: translation} object) and sets each message's translation; a non-empty "str"
replaces the catalog's, an empty one leaves it alone, and an English text the catalog does not hold is reported
and skipped (exit status 1). The catalog is written the way `sphinx-intl update` writes it (Babel, 76 columns), so
`git diff` shows only the translations. Check the result with `scripts/po_check.py`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from babel.messages import pofile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from po_check import verbatim as is_verbatim  # noqa: E402  (a sibling script)


def _read(path: Path):
    with open(path, "rb") as f:
        return pofile.read_po(f, charset="utf-8")


def _write(path: Path, catalog) -> None:
    with open(path, "wb") as f:
        pofile.write_po(f, catalog, width=76)


def dump(path: Path, todo: bool) -> list[dict[str, str]]:
    """The page's messages (header excluded) as [{"id", "str"}], in the catalog's order."""
    out = []
    for message in _read(path):
        if not message.id or (todo and (message.string or is_verbatim(message.id))):
            continue
        out.append({"id": message.id, "str": message.string or ""})
    return out


def fill(path: Path, translations: dict[str, str]) -> tuple[int, list[str]]:
    """Set the translations; (messages changed, English texts the catalog lacks)."""
    catalog = _read(path)
    changed, missing = 0, []
    for english, japanese in translations.items():
        message = catalog.get(english)
        if message is None:
            missing.append(english)
            continue
        if japanese and japanese != message.string:
            message.string = japanese
            message.flags.discard("fuzzy")
            changed += 1
    _write(path, catalog)
    return changed, missing


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="print the messages as JSON")
    d.add_argument("po", type=Path)
    d.add_argument("--todo", action="store_true", help="only the untranslated, non-verbatim messages")
    f = sub.add_parser("fill", help="set translations from a JSON file")
    f.add_argument("po", type=Path)
    f.add_argument("json", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        print(json.dumps(dump(args.po, args.todo), ensure_ascii=False, indent=1))
        return 0
    data = json.loads(args.json.read_text(encoding="utf-8"))
    pairs = {m["id"]: m.get("str", "") for m in data} if isinstance(data, list) else data
    changed, missing = fill(args.po, pairs)
    print(f"{args.po}: {changed} translations set")
    for english in missing:
        print(f"not in the catalog (skipped): {english[:100]!r}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
