"""What the translations' message catalogs hold (`make gettext`, locales/ja/TRANSLATING.md).

English is the source; a translated edition is built from the same sources with `language` set and the catalogs of
`locales/<lang>/LC_MESSAGES` (Sphinx's i18n: each paragraph, title, table cell, caption ... of a page is looked up by
its MyST source text and replaced by the translation, parsed as MyST). This extension only adjusts what is a message:

- Exercise titles become messages. sphinx-exercise builds the title line of ``{exercise} Title (kind, ★, 10 min)``
  as a node without source text, so Sphinx neither extracts nor translates it; here it gets its MyST source (the
  directive's argument) as in any title, in the gettext build and in a translated build.
- Not messages (gettext build only): display equations (``$$ ... $$``: math is never translated, and a label or
  words inside ``\\text{}`` stay as they are) and text that an extension generates rather than a source file holds
  (the reproduction report's counts and tables, which change with every build: a translation could never keep up),
  nor the text of a generated file a page includes (``GENERATED_INCLUDES``: the Benchmarks page's
  ``bench/results.md``, rewritten at every benchmark record); the hand-written prose around it stays messages.

In a translated build (``language`` set, e.g. ``make book-ja``):

- The generated text above (it stays English), and any paragraph an extension builds without source text, gets the
  classes ``untranslated`` and ``language-en`` (docutils writes the latter as ``lang="en"``), so that the page says
  which of its text is English on purpose.
- The API reference (``api/*``) is not translated in this round: each of its pages starts with a one-line note in
  the edition's language (``API_NOTE``) that the reference is shown in English.
- The PDF edition (``make pdf-ja``) is set with XeLaTeX in the IPAex fonts (Debian's fonts-ipaexfont), with XeTeX's
  Japanese line breaking (``LATEX_ELEMENTS``): Sphinx 7.4's defaults for ``ja`` are (u)pLaTeX's, and with xelatex
  it would load polyglossia, which has no Japanese.
- The landing page's link to the PDF edition (``a.pdf-edition``) points at the edition's own PDF
  (``<name>-<lang>.pdf``, which ``make pdf-ja`` writes beside the edition's pages).
- Pages only a translated edition has (``EDITION_PAGES``: the Japanese glossary, ``glossary.md``, whose table is
  ``locales/ja/glossary.md``'s). Their source is at the root but not in ``_toc.yml``, so the English build
  (``only_build_toc_files``) and the gettext build leave them out: no English page, no messages. A translated
  build adds each to its table of contents after a given page (config-inited, after sphinx-external-toc has read
  ``_toc.yml``), and ends the landing page's paragraph that links that page with a sentence linking the new one.
  The language switcher of such a page links the other edition's landing page (_ext/book_html.py).

None of this runs in the English build (no ``language`` or ``en``, and not the gettext builder), whose doctrees
and pages are unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform

# Files included into a page whose text a program writes (never messages; English in every edition).
GENERATED_INCLUDES = ("bench/results.md",)
# The note at the top of every API reference page of a translated edition.
API_NOTE = {"ja": "この API リファレンスは英語のまま掲載している"
                  "（docstring はコードとともに変わるため、この版では翻訳していない）。"}

# Pages only a translated edition has: page -> (the page of _toc.yml it follows, the sentence that the landing page's
# paragraph linking that page ends with: the text before the link, the link's text, the text after it).
EDITION_PAGES = {
    "ja": {"glossary": ("notation", ("専門用語の訳語とその英語の原語、意味は", "用語集", "にまとめてある。"))},
}


# The LaTeX settings of a translated PDF edition, over the English edition's (config-inited; only with xelatex).
LATEX_ELEMENTS = {
    "ja": {
        "polyglossia": "",
        "babel": "",
        # XeTeX's own line breaking between Japanese characters (xeCJK needs ctexhook.sty, which Debian ships only
        # in its 98 MB texlive-lang-chinese): the text in IPAex Mincho (its Latin letters included), headings in
        # IPAex Gothic, code in the English edition's FreeMono
        "fontpkg": "\\setmainfont{IPAexMincho}\\setsansfont{IPAexGothic}\n"
                   "\\setmonofont{FreeMono}[Extension=.otf,UprightFont=*,BoldFont=*Bold,ItalicFont=*Oblique,"
                   "BoldItalicFont=*BoldOblique,Scale=0.9]\n"
                   "\\XeTeXlinebreaklocale \"ja\"\\XeTeXlinebreakskip=0pt plus 0.1pt",
        "contents_name": "目次",
    },
}
LATEX_DOCCLASS = {"manual": "report", "howto": "article"}  # not jsbook (pLaTeX's), which Sphinx picks for ja


def _latex_for_language(app, config) -> None:
    lang = (config.language or "en").split("_")[0]
    if lang not in LATEX_ELEMENTS or config.latex_engine != "xelatex":
        return
    elements = dict(config.latex_elements or {})
    extra = dict(LATEX_ELEMENTS[lang])
    contents = extra.pop("contents_name")
    elements.update(extra)
    if "tableofcontents" in elements:
        elements["tableofcontents"] = elements["tableofcontents"].replace("{Contents}", "{" + contents + "}")
    config.latex_elements = elements
    config.latex_docclass = dict(LATEX_DOCCLASS)


def _edition_pages(app, config) -> None:
    """A translated edition's own pages into its table of contents (after sphinx-external-toc's parse_toc_to_env,
    which excluded them as files outside _toc.yml)."""
    lang = (config.language or "en").split("_")[0]
    site_map = getattr(config, "external_site_map", None)
    if lang == "en" or lang not in EDITION_PAGES or site_map is None:
        return
    from sphinx_external_toc.api import Document, FileItem

    for page, (after, _) in EDITION_PAGES[lang].items():
        tree = next(t for doc in site_map.values() for t in doc.subtrees if after in t.items)
        tree.items.insert(tree.items.index(after) + 1, FileItem(page))
        site_map[page] = Document(page)
        config.exclude_patterns = [p for p in config.exclude_patterns if p not in (page, f"{page}.md")]


class EditionPageLinks(SphinxTransform):
    """In a translated build, the landing page links the edition's own pages: the sentence of EDITION_PAGES at the
    end of the paragraph that links the page each one follows (after Sphinx's Locale transform, 20, translated it)."""

    default_priority = 25

    def apply(self, **kwargs: Any) -> None:
        lang = (self.config.language or "en").split("_")[0]
        if not _translated(self.app) or self.env.docname != self.config.root_doc or lang not in EDITION_PAGES:
            return
        for page, (after, (before, text, rest)) in EDITION_PAGES[lang].items():
            para = next((x.parent for x in self.document.findall(addnodes.pending_xref)
                         if x.get("reftarget") in (after, f"/{after}") and isinstance(x.parent, nodes.paragraph)),
                        None)
            if para is None:
                continue
            link = addnodes.pending_xref("", nodes.inline("", text, classes=["xref", "std", "std-doc"]),
                                         refdoc=self.env.docname, refdomain="std", reftype="doc",
                                         reftarget=f"/{page}", refexplicit=True, refwarn=True)
            para += [nodes.Text(before), link, nodes.Text(rest)]


def _generated_include(node: nodes.Node) -> bool:
    """Whether the node comes from a generated file: its own source, or that of an enclosing element below its
    section (a table cell of MyST carries the including page's source; its table, the included file's)."""
    while node is not None and not isinstance(node, nodes.document):
        if (node.source or "").replace("\\", "/").endswith(GENERATED_INCLUDES):
            return True
        if isinstance(node, nodes.section):
            return False
        node = node.parent
    return False


def _translated(app) -> bool:
    """True in a translated build (not English, not the gettext builder)."""
    return app.builder.name != "gettext" and (app.config.language or "en") != "en"


def _i18n(app) -> bool:
    """True in the gettext build and in a translated build."""
    return app.builder.name == "gettext" or (app.config.language or "en") != "en"


def _translatable_titles(directive_cls: type) -> type:
    class Translatable(directive_cls):  # type: ignore[misc, valid-type]
        def run(self) -> list[nodes.Node]:
            result = super().run()
            if self.arguments and _i18n(self.env.app):
                from sphinx_exercise.nodes import exercise_subtitle

                source, line = self.get_source_info()
                for node in result:
                    for subtitle in node.findall(exercise_subtitle):
                        subtitle.rawsource, subtitle.source, subtitle.line = self.arguments[0], source, line
                    if isinstance(node, nodes.Element):
                        node["i18n_title"] = (self.arguments[0], source, line)
            return result

    Translatable.__name__ = directive_cls.__name__
    return Translatable


class NotMessages(SphinxTransform):
    """In the gettext build, mark display math and generated text as not translatable (before Sphinx's own
    ApplySourceWorkaround, priority 10, gives every text node without source text its plain text as source)."""

    default_priority = 5

    def apply(self, **kwargs: Any) -> None:
        if _translated(self.app):
            _mark_generated_english(self.document)  # before ApplySourceWorkaround gives them a source text
            return
        if self.app.builder.name != "gettext":
            return
        for node in self.document.findall(nodes.TextElement):
            if isinstance(node, nodes.math_block):
                node["translatable"] = False
            elif isinstance(node, (nodes.paragraph, nodes.title)) and not node.rawsource:
                node["translatable"] = False  # built by an extension (no MyST source text): not a message
            elif _generated_include(node):
                node["translatable"] = False  # the text of a generated file (bench/results.md): not a message
        for image in self.document.findall(nodes.image):
            if _generated_include(image):  # its alt text neither: Sphinx extracts every alt text, so the gettext
                image.attributes.pop("alt", None)  # build (which writes no page) drops it


ENGLISH = ["untranslated", "language-en"]  # docutils writes the class language-en as lang="en"


def _mark_generated_english(doctree: nodes.Node) -> None:
    """Mark the English a translated edition keeps on purpose: paragraphs an extension built without source text
    (so never messages), and the text, tables and figures of a generated file (GENERATED_INCLUDES)."""
    kinds = (nodes.paragraph, nodes.table, nodes.title, nodes.figure, nodes.caption)
    for node in doctree.findall(lambda n: isinstance(n, kinds)):
        if "untranslated" in node["classes"]:
            continue
        generated = isinstance(node, nodes.paragraph) and not node.rawsource and not node.get("translated")
        if generated or _generated_include(node):
            node["classes"] = [*node["classes"], *ENGLISH]


def _translated_edition(app, doctree: nodes.document, docname: str) -> None:
    """In a translated build, once every extension has added its text (doctree-resolved, late): generated English
    marked as such, the API pages' note, the edition's PDF link."""
    if not _translated(app):
        return
    lang = app.config.language.split("_")[0]
    _mark_generated_english(doctree)  # what extensions added since reading (the exercise index's counts)
    if docname.startswith("api/") and lang in API_NOTE:
        section = next(iter(doctree.findall(nodes.section)), None)
        if section is not None and section.children and isinstance(section[0], nodes.title):
            section.insert(1, nodes.paragraph("", API_NOTE[lang], classes=["api-language-note"]))
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if 'class="pdf-edition"' in text:
            new = re.sub(r'(class="pdf-edition" href="[^"]*?)\.pdf"', rf'\1-{lang}.pdf"', text)
            raw.replace_self(nodes.raw("", new, format=raw.get("format", "html")))


class ExerciseTitleMessages(SphinxPostTransform):
    """In the gettext build, the message of an exercise's title line. A translated build translates the title while
    reading (the subtitle node above); the gettext builder extracts after the post-transforms, when sphinx-exercise
    (ResolveTitlesInExercises, priority 20) has rebuilt the title without source text: give it that text back, and the
    versioning uid that the catalog asks of every node."""

    default_priority = 25
    builders = ("gettext",)

    def run(self, **kwargs: Any) -> None:
        for node in self.document.findall(nodes.Element):
            if "i18n_title" in node and node.children and isinstance(node[0], nodes.title):
                node[0].rawsource, node[0].source, node[0].line = node["i18n_title"]
                node[0].uid = ""  # the gettext builder skips a node without one (as Sphinx does for toctrees)


def setup(app) -> dict[str, Any]:
    app.setup_extension("sphinx_exercise")
    from sphinx_exercise.directive import ExerciseDirective, ExerciseStartDirective

    app.add_directive("exercise", _translatable_titles(ExerciseDirective), override=True)
    app.add_directive("exercise-start", _translatable_titles(ExerciseStartDirective), override=True)
    app.connect("config-inited", _latex_for_language)
    app.add_transform(NotMessages)
    app.add_transform(EditionPageLinks)
    app.connect("config-inited", _edition_pages, priority=950)  # after sphinx-external-toc's (900)
    app.add_post_transform(ExerciseTitleMessages)
    app.connect("doctree-resolved", _translated_edition, priority=800)  # after the generated pages' handlers
    return {"parallel_read_safe": True, "parallel_write_safe": True}
