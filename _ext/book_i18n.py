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

- The words of the site's interface that no page source holds, in the edition's language (``SITE_WORDS``): the
  sidebar's part captions (the toctree of ``_toc.yml``, which sphinx-external-toc inserts after Sphinx's Locale
  transform has translated the page, so they are looked up here in the root document's catalog, as the PDF's
  parts are), the book's title in the header and the tab (also from that catalog), the author in the footer
  (``_ext/book_latex.py``'s STRINGS, as on the PDF's title page), the title of every solution (sphinx-exercise's
  "Solution", which its catalog lacks: STRINGS' ``solution``, as in the PDF), myst-nb's code-cell toggles ("Show
  code cell source": ``nb_code_prompt_show`` is set to the bare ``{type}`` and a post-transform writes the
  table's words for each type; its ``aria-label``, which myst-nb writes verbatim, too), the search field's
  placeholder and the footer's line (theme options), and English of the themes and extensions that their own
  ``ja`` catalogs lack (tooltips of the header's buttons and of the heading links, the widgets' snapshot note,
  the links to the API reference): a table per message catalog, put ahead of the installed catalogs of that
  domain (config-inited), so that Sphinx's ``_()`` and the themes' templates find them. The sidebar toggles'
  tooltips, fixed English in sphinx-book-theme's templates, go through ``_()`` in the translated build's own
  copies of those two templates (``_ext/templates/translated``).

None of this runs in the English build (no ``language`` or ``en``, and not the gettext builder), whose doctrees
and pages are unchanged.
"""

from __future__ import annotations

import gettext
import re
from pathlib import Path
from typing import Any

from book_latex import _language
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

# The words of the site's interface in each translated edition (what no page source holds; see the module's doc).
# "catalogs": English message -> translation, per Sphinx message catalog (domain) it is looked up in: "sphinx" for
# Sphinx's writers, the themes' templates and this book's extensions (``sphinx.locale._``), "booktheme" for
# sphinx-book-theme's buttons; sphinx-exercise's "Solution" comes from _ext/book_latex.py's STRINGS (_site_words).
# "theme": html_theme_options. "code_prompts": myst-nb's toggle of a folded cell, (show, hide) by the part it folds.
SITE_WORDS: dict[str, dict[str, Any]] = {
    "ja": {
        "catalogs": {
            "sphinx": {
                "Link to this heading": "この見出しへのリンク",
                "Link to this definition": "この定義へのリンク",
                "Link to this equation": "この式へのリンク",
                "Link to this image": "この画像へのリンク",
                "Link to this table": "この表へのリンク",
                "Link to this code": "このコードへのリンク",
                "Color mode": "カラーモード",
                "System Settings": "システム設定",
                "Toggle primary sidebar": "ナビゲーションの表示を切り替え",
                "Toggle secondary sidebar": "ページの目次の表示を切り替え",
                "Toggle hidden content": "折りたたまれた内容の表示を切り替え",
                # _ext/api_reference.py: the title of a link from a chapter to a function's entry
                "%s in the API reference": "API リファレンスの %s",
                # _ext/book_html.py: the note over a widget's static snapshot
                "Static snapshot": "静的スナップショット",
                "The controls below do not recompute here: the picture was drawn when the book was built, at the "
                "initial settings.": "ここでは下の操作部品を動かしても再計算されない。図は本書のビルド時に初期設定で"
                                     "描いたものである。",
                "%(link)sRun it on Colab%(end)s to explore.": "%(link)sColab で実行%(end)sすると試せる。",
                "Run the chapter's notebook to explore.": "章のノートブックを実行すると試せる。",
            },
            "booktheme": {
                "Repository": "リポジトリ",
                "Open issue": "問題を報告",
                "Source repositories": "ソースリポジトリ",
                "Launch interactive content": "インタラクティブに実行",
                "Launch on": "起動先:",  # the theme writes "Launch on" + " Colab"
            },
        },
        "theme": {
            "search_bar_text": "この本を検索...",
            "extra_footer": "本書の結果はすべて本文で導出し、シミュレーションと導出が食い違えば失敗するコードで"
                            "検証している。",
        },
        "code_prompts": {
            "source": ("コードを表示", "コードを隠す"),
            "content": ("セルを表示", "セルを隠す"),
            "output": ("出力を表示", "出力を隠す"),
            "outputs": ("出力を表示", "出力を隠す"),
        },
    },
}
TRANSLATED_TEMPLATES = Path(__file__).parent / "templates" / "translated"


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
    lang = _language(config)
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
    lang = _language(config)
    site_map = getattr(config, "external_site_map", None)
    if lang == "en" or lang not in EDITION_PAGES or site_map is None:
        return
    from sphinx_external_toc.api import Document, FileItem

    for page, (after, _) in EDITION_PAGES[lang].items():
        tree = next(t for doc in site_map.values() for t in doc.subtrees if after in t.items)
        tree.items.insert(tree.items.index(after) + 1, FileItem(page))
        site_map[page] = Document(page)
        config.exclude_patterns = [p for p in config.exclude_patterns if p not in (page, f"{page}.md")]


class _Words(gettext.NullTranslations):
    """A message catalog from a table, ahead of the catalog installed for the same domain (its fallback)."""

    def __init__(self, words: dict[str, str], installed: gettext.NullTranslations) -> None:
        super().__init__()
        self.words = words
        self.add_fallback(installed)

    def gettext(self, message: str) -> str:
        return self.words.get(message) or super().gettext(message)


def _site_words(app, config) -> None:
    """A translated edition's interface words (SITE_WORDS): the catalogs' tables ahead of the installed ones (before
    the HTML builder gives its templates Sphinx's catalog), the theme's options, the title, the author, the code
    toggles' configuration and the translated templates."""
    lang = _language(config)
    if lang == "en" or lang not in SITE_WORDS:
        return
    from book_latex import STRINGS, _translate
    from sphinx import locale

    words = SITE_WORDS[lang]
    catalogs = {**words["catalogs"], "exercise": {"Solution": STRINGS[lang]["solution"]}}
    for catalog, table in catalogs.items():
        key = ("general", catalog)
        _INSTALLED.setdefault(key, locale.translators[key])
        locale.translators[key] = _Words(table, _INSTALLED[key])
        if catalog == "sphinx":
            app.translator = locale.translators[key]
    config.html_theme_options = {**(config.html_theme_options or {}), **words["theme"]}
    if config.html_title:
        config.html_title = _translate(app.srcdir, config, config.root_doc, config.html_title)
    config.author = STRINGS[lang].get("author", config.author)
    config.nb_code_prompt_show = config.nb_code_prompt_hide = "{type}"  # the table's words by type: CodePrompts
    config.templates_path = [str(TRANSLATED_TEMPLATES), *config.templates_path]


_INSTALLED: dict[tuple[str, str], gettext.NullTranslations] = {}  # the catalogs that _site_words put a table ahead of


def _installed_words(app, exception) -> None:
    """Sphinx's catalogs as they were (build-finished): its translators are global, and another build in the same
    process (another language, English) must not find this edition's words."""
    from sphinx import locale

    for key, installed in _INSTALLED.items():
        locale.translators[key] = installed
    _INSTALLED.clear()


class PartCaptions(SphinxTransform):
    """In a translated build, the captions of the toctrees that sphinx-external-toc inserts (its InsertToctrees,
    priority 100, after the Locale transform): the sidebar's part names, from the document's catalog."""

    default_priority = 110

    def apply(self, **kwargs: Any) -> None:
        if not _translated(self.app):
            return
        from book_latex import _translate

        for toctree in self.document.findall(addnodes.toctree):
            if toctree.get("caption"):
                toctree["caption"] = _translate(self.env.srcdir, self.config, self.env.docname, toctree["caption"])


class CodePrompts(SphinxPostTransform):
    """In a translated build, the toggle of each folded code cell in the edition's words: myst-nb's HideInputCells
    (priority 199) has put the part it folds (source, outputs, ...) in place of the prompt's ``{type}``."""

    default_priority = 200
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        lang = _language(self.config)
        if not _translated(self.app) or lang not in SITE_WORDS:
            return
        from myst_nb.sphinx_ import HideCodeCellNode

        prompts = SITE_WORDS[lang]["code_prompts"]
        for node in self.document.findall(HideCodeCellNode):
            if node["prompt_show"] in prompts:
                node["prompt_show"], node["prompt_hide"] = prompts[node["prompt_show"]]


def _visit_folded_code(self, node) -> None:
    """myst-nb's opening of a folded cell, with its summary's aria-label through the catalog (it writes English)."""
    from myst_nb.sphinx_ import visit_HideCellInput
    from sphinx.locale import _

    start = len(self.body)
    visit_HideCellInput(self, node)
    label = 'aria-label="Toggle hidden content"'
    self.body[start:] = [part.replace(label, f'aria-label="{_("Toggle hidden content")}"')
                         for part in self.body[start:]]


def _folded_code_label(app, config) -> None:
    if _language(config) in SITE_WORDS:
        from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

        app.add_node(HideCodeCellNode, override=True, html=(_visit_folded_code, depart_HideCellInput))


class EditionPageLinks(SphinxTransform):
    """In a translated build, the landing page links the edition's own pages: the sentence of EDITION_PAGES at the
    end of the paragraph that links the page each one follows (after Sphinx's Locale transform, 20, translated it)."""

    default_priority = 25

    def apply(self, **kwargs: Any) -> None:
        lang = _language(self.config)
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
    lang = _language(app.config)
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
    app.add_transform(PartCaptions)
    app.add_post_transform(CodePrompts)
    app.connect("config-inited", _site_words, priority=950)  # after sphinx-external-toc sets root_doc (900)
    app.connect("config-inited", _folded_code_label)
    app.connect("build-finished", _installed_words)
    app.connect("config-inited", _edition_pages, priority=950)  # after sphinx-external-toc's (900)
    app.add_post_transform(ExerciseTitleMessages)
    app.connect("doctree-resolved", _translated_edition, priority=800)  # after the generated pages' handlers
    return {"parallel_read_safe": True, "parallel_write_safe": True}
