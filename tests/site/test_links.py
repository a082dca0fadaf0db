"""Every internal link, anchor and asset reference of the built site resolves (a crawler over `_build/html`)."""

from __future__ import annotations

import functools
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import site_html

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
PAGES = sorted(p for p in HTML.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)


@functools.cache
def _ids(page: Path) -> frozenset[str]:
    soup = site_html.shared(page)
    names = [t["name"] for t in soup.find_all("a", attrs={"name": True})]
    return frozenset([t["id"] for t in soup.find_all(id=True)] + names)


def _targets(page: Path):
    soup = site_html.shared(page)
    for tag, attr in (("a", "href"), ("link", "href"), ("img", "src"), ("script", "src")):
        for el in soup.find_all(tag, attrs={attr: True}):
            yield el[attr]


def test_site_was_built():
    assert PAGES, "no built site in _build/html: run `make book` first"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(HTML)))
def test_internal_links_and_anchors_resolve(page):
    broken = []
    for ref in _targets(page):
        url = urlparse(ref)
        if url.scheme or ref.startswith(("//", "mailto:", "javascript:")):
            continue  # an outbound link a reader clicks; never fetched by the page
        target = page if not url.path else (page.parent / unquote(url.path)).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            broken.append(f"{ref} (no file {target})")
            continue
        frag = unquote(url.fragment)
        if frag and target.suffix == ".html" and frag not in _ids(target):
            broken.append(f"{ref} (no anchor #{frag} in {target.name})")
    assert not broken, f"{page.relative_to(HTML)} has broken links:\n" + "\n".join(broken)
