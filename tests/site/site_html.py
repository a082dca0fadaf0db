"""The built site's HTML files, each parsed once per test session and shared by every test that reads it.

A chapter page takes about a second to parse with Python's html.parser, and the site and PDF tests read each page
about twenty times (one test per property and page); parsed once, the whole site costs a few seconds. The parsed
trees are shared, so a test must not change them: `text_without` reads a page's text as it would be with some
elements removed (what `decompose()` on a private parse did), without removing them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, Tag


def shared(path: Path) -> BeautifulSoup:
    """The file's parse shared by every test of the session: read it, never change it."""
    return _parsed(Path(path).resolve())


@functools.cache
def _parsed(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def text_without(root: Tag, names: frozenset[str] = frozenset(), classes: frozenset[str] = frozenset()) -> str:
    """`root.get_text(" ")` as it would read after `el.decompose()` of every element under root whose tag name is in
    `names` or that has a class in `classes` (the CSS selector list "name, .class, ..."), computed without changing
    the tree. The strings counted are bs4's: those of root's interesting string types, by exact type (no comments,
    no script or style contents)."""
    types = root.interesting_string_types or Tag.MAIN_CONTENT_STRING_TYPES
    types = {types} if isinstance(types, type) else set(types)

    def strings(tag: Tag) -> Iterator[NavigableString]:
        for child in tag.children:
            if isinstance(child, Tag):
                if child.name not in names and not classes.intersection(child.get("class") or ()):
                    yield from strings(child)
            elif type(child) in types:
                yield child

    return " ".join(strings(root))
