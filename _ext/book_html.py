"""Small Sphinx fixes for the book's HTML, loaded through `_config.yml` (sphinx.local_extensions).

- Each inline script is emitted once per page: sphinx-thebe's configuration snippet is otherwise added twice under
  Jupyter Book 1.0 and the second copy throws "Identifier 'THEBE_JS_URL' has already been declared".
"""

from __future__ import annotations

from typing import Any


def _dedupe_scripts(app, pagename: str, templatename: str, context: dict[str, Any], doctree) -> None:
    seen: set[tuple[str, str]] = set()
    unique = []
    for script in context.get("script_files", []):
        key = (str(getattr(script, "filename", script) or ""), str(getattr(script, "attributes", {}).get("body", "")))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app) -> dict[str, Any]:
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
