"""Small Sphinx fixes for the book's HTML, loaded through `_config.yml` (sphinx.local_extensions).

- Each inline script is emitted once per page: sphinx-thebe's configuration snippet is otherwise added twice under
  Jupyter Book 1.0 and the second copy throws "Identifier 'THEBE_JS_URL' has already been declared".
- No pydata-sphinx-theme header bar. sphinx-book-theme 1.3.0 leaves pydata-sphinx-theme 0.17.1's default
  `navbar_persistent = ["search-button-field"]` in place, so the (otherwise empty) pydata header is rendered: it
  duplicates the sidebar's search field and holds hidden copies of the sidebar toggles. Both themes' scripts bind
  to the *first* `.primary-toggle` / `.secondary-toggle` of the page, i.e. the hidden ones, so the visible
  hamburger and contents buttons did nothing. With `navbar_persistent = []` the header is not rendered and the
  visible buttons are the first (and only) ones.
- Widgets are marked as snapshots on the static site. A widget's saved state renders its controls, which can be
  moved, but nothing recomputes without a kernel: each widget output is wrapped in `div.widget-snapshot` with a
  note and the page's "Run it on Colab" link (the URL the launch button uses).
- Every figure image gets an alt text: its caption, else the first comment line of the cell that drew it, else the
  section it is in, never its file path (Sphinx's default when there is no alt).
- The general index is written only when some page has `{index}` entries (an empty "Index" page otherwise).
- A language switcher in the header of every page (issue 34): one site holds both editions, English at the root and
  Japanese under `ja/` (`make book`, `make book-ja`); each page links the same page of the other edition by a
  relative URL (works from file:// and from a server), "日本語" on English pages and "English" on Japanese ones,
  with a `<link rel="alternate" hreflang>` in the head. A page without a counterpart links the other edition's
  landing page. The link is the template `_ext/templates/language-switch.html`, put first among the article
  header's buttons (the theme option `article_header_end`).
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from book_latex import _language
from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _dedupe_scripts(app, pagename: str, templatename: str, context: dict[str, Any], doctree) -> None:
    seen: set[tuple[str, str]] = set()
    unique = []
    for script in context.get("script_files", []):
        key = (str(getattr(script, "filename", script) or ""), str(getattr(script, "attributes", {}).get("body", "")))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def _no_header_bar(app, config) -> None:
    options = dict(config.html_theme_options or {})
    options.setdefault("navbar_persistent", [])
    config.html_theme_options = options


# Where each edition lives, relative to the site's root, and the switcher's words for it (in its own language).
EDITIONS = {"en": "", "ja": "ja/"}
EDITION_NAMES = {"en": "English", "ja": "日本語"}
EDITION_TITLES = {"en": "Read this page in English", "ja": "このページを日本語で読む"}
SPECIAL_PAGES = ("genindex", "search")  # written by the HTML builder in every edition


def edition(config) -> str:
    """The edition a build makes: its language when the site has such an edition, else English."""
    lang = _language(config)
    return lang if lang in EDITIONS else "en"


def counterpart_url(pagename: str, lang: str, other: str, exists: bool, root: str) -> str:
    """The relative URL from page `pagename` of edition `lang` to the same page (else `root`) of edition `other`."""
    up = "../" * (pagename.count("/") + EDITIONS[lang].count("/"))
    return f"{up}{EDITIONS[other]}{pagename if exists else root}.html"


def _language_switch(app, pagename: str, templatename: str, context: dict[str, Any], doctree) -> None:
    lang = edition(app.config)
    other = "ja" if lang == "en" else "en"
    exists = pagename in app.env.found_docs or pagename in SPECIAL_PAGES  # both editions have the same sources
    from book_i18n import EDITION_PAGES  # but for a translated edition's own pages (its glossary): no English copy

    exists = exists and pagename not in EDITION_PAGES.get(lang, {})
    url = counterpart_url(pagename, lang, other, exists, app.config.root_doc)
    context["language_switch"] = {"url": url, "lang": other, "text": EDITION_NAMES[other],
                                  "title": EDITION_TITLES[other]}
    context["metatags"] = context.get("metatags", "") + (
        f'\n    <link rel="alternate" hreflang="{other}" href="{html.escape(url)}" />')


def _switcher_in_the_header(app, config) -> None:
    config.templates_path = [*config.templates_path, str(Path(__file__).parent / "templates")]
    options = dict(config.html_theme_options or {})
    options.setdefault("article_header_end", ["language-switch", "article-header-buttons"])
    config.html_theme_options = options


def colab_url(config, srcdir: str | Path, docname: str) -> str | None:
    """The Colab URL of a page, built as sphinx-book-theme's launch button builds it (None without a repository)."""
    options = config.html_theme_options or {}
    base = (options.get("launch_buttons") or {}).get("colab_url", "").strip("/")
    repo = (options.get("repository_url") or "").strip("/")
    if not base or "github.com/" not in repo:
        return None
    org_repo = repo.split("github.com/", 1)[1]
    branch = options.get("repository_branch") or "main"
    book = (options.get("path_to_docs") or "").strip("/")
    book = f"{book}/" if book else ""
    source = Path(srcdir) / docname
    colab = Path(srcdir) / "colab" / f"{Path(docname).name}.ipynb"  # the Colab edition (learndyn.colab)
    if docname.startswith("chapters/") and colab.exists():
        return f"{base}/github/{org_repo}/blob/{branch}/{book}colab/{colab.name}"
    ext = ".ipynb" if source.with_suffix(".ipynb").exists() else next(
        (s for s in (".md", ".ipynb", ".rst") if source.with_suffix(s).exists()), ".ipynb")
    return f"{base}/github/{org_repo}/blob/{branch}/{book}{docname}{ext}"


def _colab_button_opens_the_colab_edition(app, pagename, templatename, context, doctree) -> None:
    """sphinx-book-theme's Colab button opens the page's source notebook, whose MyST directives Colab shows raw;
    point it at the chapter's Colab edition (`colab/NN_slug.ipynb`, plain Markdown) instead."""
    url = colab_url(app.config, app.srcdir, pagename)
    for group in context.get("header_buttons") or []:
        for button in group.get("buttons", []) if isinstance(group, dict) else []:
            if button.get("text") == "Colab" and url:
                button["url"] = url


def snapshot_note(url: str | None) -> str:
    """The note over a widget's snapshot, in the edition's words (each sentence a message of Sphinx's catalog: the
    English is the message, a translated edition's words are in _ext/book_i18n.py SITE_WORDS)."""
    from sphinx.locale import _

    if url:
        anchor = f'<a class="widget-snapshot__colab" href="{html.escape(url)}" target="_blank" rel="noopener">'
        link = str(_("%(link)sRun it on Colab%(end)s to explore.")) % {"link": anchor, "end": "</a>"}
    else:
        link = str(_("Run the chapter's notebook to explore."))
    badge, text = _("Static snapshot"), _("The controls below do not recompute here: the picture was drawn when the "
                                          "book was built, at the initial settings.")
    return f'<p class="widget-snapshot__note" role="note"><span class="widget-snapshot__badge">{badge}</span> {text} ' \
           f'{link}</p>'


_TEX_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "Delta": "Δ", "epsilon": "ε", "varepsilon": "ε",
    "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "Lambda": "Λ", "mu": "μ", "nu": "ν", "pi": "π",
    "rho": "ρ", "sigma": "σ", "Sigma": "Σ", "tau": "τ", "phi": "φ", "varphi": "φ", "psi": "ψ", "omega": "ω",
    "xi": "ξ", "zeta": "ζ", "top": "ᵀ", "nabla": "∇", "partial": "∂", "infty": "∞", "le": "≤", "leq": "≤",
    "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "sim": "∼", "to": "→", "in": "∈", "cdot": "·",
    "times": "×", "pm": "±", "sum": "Σ", "sqrt": "√", "ell": "ℓ", "ldots": "…", "dots": "…", "|": "‖",
}


def _tex_free(text: str) -> str:
    """Caption text (math as its TeX source) as plain text for an alt attribute."""
    text = re.sub(r"\\(?:t|d)?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", text)
    text = re.sub(r"\\([a-zA-Z]+|\|)", lambda m: _TEX_SYMBOLS.get(m.group(1), ""), text)
    text = re.sub(r"\\[,;:! ()\[\]]|[{}$]", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def _first_comment(cell: nodes.Element) -> str | None:
    for block in cell.findall(nodes.literal_block):
        for line in block.astext().splitlines():
            line = line.strip()
            if line.startswith("#") and not line.startswith(("#|", "# %%", "#!")):
                text = line.lstrip("#").strip()
                if text:
                    return text
            elif line:
                break  # only a comment at the top of the cell describes it
    return None


def _section_title(node: nodes.Node) -> str | None:
    while node is not None:
        if isinstance(node, nodes.section) and node.children and isinstance(node[0], nodes.title):
            return node[0].astext()
        node = node.parent
    return None


def figure_alt(image: nodes.image) -> str:
    """An alt text for a figure image from its caption, its cell's first comment, or its section."""
    parent = image.parent
    while parent is not None and not isinstance(parent, nodes.figure):
        if isinstance(parent, nodes.container) and parent.get("nb_element") == "cell_code":
            break
        parent = parent.parent
    if isinstance(parent, nodes.figure):
        caption = next(iter(parent.findall(nodes.caption)), None)
        if caption is not None and caption.astext().strip():
            return _tex_free(caption.astext())
    cell = image.parent
    while cell is not None and not (isinstance(cell, nodes.container) and cell.get("nb_element") == "cell_code"):
        cell = cell.parent
    comment = _first_comment(cell) if cell is not None else None
    if comment:
        return f"Figure: {comment}"
    title = _section_title(image)
    return f"Figure of the section “{title}”" if title else "Figure"


class BookHtmlOutputs(SphinxPostTransform):
    """Figure alt texts and widget snapshot markers (HTML builders; after myst-nb has chosen the mime types)."""

    default_priority = 50  # myst-nb's SelectMimeType runs at 4
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        for image in list(self.document.findall(nodes.image)):
            uri = image.get("uri", "")
            alt = image.get("alt", "")
            if not alt or alt == uri or alt.endswith((".png", ".svg", ".jpg", ".jpeg", ".gif")):
                image["alt"] = figure_alt(image)
        url = None
        for raw in list(self.document.findall(nodes.raw)):
            if "html" in raw.get("format", "").split() and WIDGET_VIEW in raw.astext():
                if url is None:
                    url = colab_url(self.config, self.env.srcdir, self.env.docname) or ""
                raw.replace_self(nodes.raw("", f'<div class="widget-snapshot">{snapshot_note(url or None)}'
                                               f"{raw.astext()}</div>", format="html"))


def _index_only_with_entries(app, env) -> None:
    builder = app.builder
    if getattr(builder, "format", "") != "html" or not hasattr(builder, "use_index"):
        return
    builder.use_index = builder.use_index and any(env.get_domain("index").entries.values())


def _hasdoc_index(app, pagename: str, templatename: str, context: dict[str, Any], doctree) -> None:
    hasdoc = context.get("hasdoc")
    if hasdoc is not None and not getattr(app.builder, "use_index", True):
        context["hasdoc"] = lambda name: name != "genindex" and hasdoc(name)


CHECK_CALL = re.compile(r"\bcheck_(?:close|between|less)\(")
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?P<body>.*?)^```\s*$", re.M | re.S)


def fold_check_code(source: str) -> str:
    """Tag `hide-input` on every code cell of a chapter source that makes a numerical check (learndyn.checks).

    The website then shows the experiment's code and every cell's result, with the code that checks a result
    against its prediction folded under "Show code cell source" (its outcome is already the folded "✓ N checks
    passed" line); notebooks, Colab and nbval keep every cell as written. Cells tagged to be removed or hidden
    already keep their tags."""
    def tag(m: re.Match) -> str:
        whole, body = m.group(0), m.group("body")
        if not CHECK_CALL.search(body) or re.search(r"(remove-cell|remove-input|hide-input|hide-cell)", body[:400]):
            return whole
        head, rest = whole.split("\n", 1)
        if rest.startswith(":tags: ["):
            return f"{head}\n:tags: [hide-input, {rest[len(':tags: ['):]}"
        if rest.startswith("---\n"):
            options, sep, tail = rest[4:].partition("\n---\n")
            if re.search(r"^tags:\s*\[", options, re.M):
                options = re.sub(r"^tags:\s*\[", "tags: [hide-input, ", options, count=1, flags=re.M)
            else:
                options = f"tags: [hide-input]\n{options}"
            return f"{head}\n---\n{options}{sep}{tail}"
        return f"{head}\n:tags: [hide-input]\n{rest}"

    return CODE_CELL.sub(tag, source)


def _fold_check_code(app, docname: str, source: list[str]) -> None:
    if docname.startswith("chapters/"):
        source[0] = fold_check_code(source[0])


def setup(app) -> dict[str, Any]:
    app.connect("config-inited", _no_header_bar)
    app.connect("config-inited", _switcher_in_the_header)
    app.connect("html-page-context", _language_switch)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("html-page-context", _hasdoc_index)
    app.connect("html-page-context", _colab_button_opens_the_colab_edition, priority=502)  # after the theme's 501
    app.connect("env-updated", _index_only_with_entries)
    app.connect("source-read", _fold_check_code)
    app.add_post_transform(BookHtmlOutputs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
