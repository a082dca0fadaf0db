"""The PDF edition's structure (`make pdf`: Sphinx's LaTeX builder, XeLaTeX through latexmk).

The website's table of contents has an unnumbered front matter (the landing page, the notation, the Preface),
numbered parts of chapters, and back matter. Sphinx's LaTeX builder would number every document as a chapter, turn
the landing page's sections into chapters and print the widgets' text fallback. On the assembled document of the
LaTeX build only, this post-transform

- gathers the landing page's text and sections into one unnumbered chapter "About this book";
- keeps the front matter unnumbered and starts the chapter numbers at 1 with Chapter 1, as on the website;
- opens a LaTeX part for each captioned part of chapters, and puts the back matter into appendices;
- moves every exercise's solution into a last appendix "Solutions to the exercises", one section per chapter, each
  solution headed by the number of its exercise and set as text, not in a box (the exercises stay where they are);
- sets the reproduction report's per-chapter tables as one paragraph per check;
- drops the code the website folds (outside solutions), keeping its outputs;
- drops interactive widgets, whose static figure stands next to each of them, and the website's bibliography page
  (LaTeX gathers the references into the bibliography at the end of the book);
- drops the reproduction report's links back to check outputs (a PDF of the book has no "cell" to go to);
- sets the figures of exercises and solutions in place, as Sphinx does inside its own admonitions.

A translated PDF edition (``language`` set, e.g. ``make pdf-ja``) takes the words this layer writes itself from its
row of ``STRINGS`` (the chapter "About this book", the solutions appendix and its headings, the title page's author,
and LaTeX's own names: chapter, appendix and part labels, the bibliography, the running heads), and the book's title
and the parts' captions from the root document's catalog (the translations of the website's same messages);
sphinx-proof's theorem names, which its LaTeX writer leaves English, from sphinx-proof's own catalog, as on the
website. The English edition reads its row, the words it always had, and its preamble is unchanged.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node, solution_node
from sphinxcontrib.bibtex.nodes import bibliography

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# The words the LaTeX layer writes itself (the catalogs translate the pages, not these), by language of the edition.
# The Japanese row uses the words of the Japanese website where it has the same thing (練習 for an exercise, as
# sphinx-exercise's catalog, 練習問題 for the exercises, 参考文献 for the bibliography page) and a Japanese
# textbook's forms for LaTeX's names (第1章, 付録A, 第I部). Keys other than the English row's set LaTeX names in the
# preamble of a translated edition only (_latex_names).
STRINGS: dict[str, dict[str, Any]] = {
    "en": {
        "about": "About this book",
        "solutions": "Solutions to the exercises",
        "solutions_intro": "The worked solutions of the exercises, chapter by chapter. On the website each one is "
                           "folded under its exercise.",
        "solution_to": "Solution to {exercise}",
        "solution": "Solution",
        "solutions_chapter": "Solutions",  # a solution whose chapter has no title
    },
    "ja": {
        "about": "本書について",
        "solutions": "練習問題の解答",
        "solutions_intro": "練習問題の解答を章ごとにまとめる。"
                           "ウェブサイトでは、各解答はその問題の下に折りたたまれている。",
        "solution_to": "{exercise} の解答",
        "solution": "解答",
        "solutions_chapter": "解答",
        "author": "learndyn 執筆者一同",
        "chapter": ("第", "章"),  # 第1章: chapter heads and running heads
        "appendix": ("付録", ""),  # 付録A
        "part": ("第", "部"),  # 第I部
        "bibliography": "参考文献",
    },
}


def _language(config) -> str:
    return (config.language or "en").split("_")[0]


def _strings(config) -> dict[str, Any]:
    return {**STRINGS["en"], **STRINGS.get(_language(config), {})}


@cache
def _catalog(path: Path) -> dict[str, str]:
    """msgid -> msgstr of a .po file's translated, not fuzzy, messages (none when there is no such file)."""
    if not path.is_file():
        return {}
    from babel.messages.pofile import read_po

    with path.open("rb") as f:
        return {m.id: m.string for m in read_po(f) if isinstance(m.id, str) and m.id and m.string and not m.fuzzy}


def _translate(srcdir: str | Path, config, docname: str, text: str) -> str:
    """``text`` as the catalog of ``docname`` translates it in this edition (itself in English)."""
    lang = _language(config)
    if lang == "en":
        return text
    for locale_dir in config.locale_dirs:
        found = _catalog(Path(srcdir, locale_dir, lang, "LC_MESSAGES", f"{docname}.po")).get(text)
        if found:
            return found
    return text


def _latex_names(strings: dict[str, Any]) -> str:
    """The preamble that gives LaTeX's own words in the edition's language: the chapter and appendix labels of the
    chapter heads (fncychap's Bjarne style) and of the running heads (fancyhdr's marks in Sphinx's page style
    "normal"), the parts' label, the bibliography's name."""
    (chapter, chapter_after), (appendix, appendix_after) = strings["chapter"], strings["appendix"]
    part, part_after = strings["part"]
    return "\n".join([
        r"\usepackage{etoolbox}\makeatletter",
        rf"\renewcommand{{\chaptername}}{{{chapter}}}\renewcommand{{\appendixname}}{{{appendix}}}",
        rf"\def\book@chapterafter{{{chapter_after}}}",
        rf"\g@addto@macro\appendix{{\def\book@chapterafter{{{appendix_after}}}}}",
        r"\def\book@chapterlabel{\@chapapp\thechapter\book@chapterafter}",
        # the chapter head: the label between Bjarne's two rules, without its line "CHAPTER" and the number in words
        r"\@ifpackagewith{fncychap}{Bjarne}{\renewcommand{\DOCH}{\mghrulefill{\RW}\par\nobreak"
        r"\CNoV\book@chapterlabel\par\nobreak\vskip -1\baselineskip\vskip 5pt\mghrulefill{\RW}\par\nobreak"
        r"\vskip 20\p@}}{}",
        # the running heads (fancyhdr sets the marks whenever the page style "normal" starts)
        r"\def\book@chaptermark#1{\markboth{\ifnum\c@secnumdepth>\m@ne\book@chapterlabel\quad\fi #1}{}}",
        r"\def\book@sectionmark#1{\markright{\ifnum\c@secnumdepth>\z@\thesection\quad\fi #1}}",
        r"\g@addto@macro\ps@normal{\let\chaptermark\book@chaptermark\let\sectionmark\book@sectionmark}",
        # the part's label, in report's \@part, which hyperref and nameref wrap (\@part -> \H@old@part -> \NR@part)
        rf"\def\book@partlabel{{{part}\thepart{{}}{part_after}}}",  # {}: XeTeX reads a CJK letter into a name
        *(rf"\patchcmd{{{cmd}}}{{\partname\nobreakspace\thepart}}{{\book@partlabel}}{{\def\book@partdone{{}}}}{{}}"
          for cmd in (r"\@part", r"\H@old@part", r"\NR@part")),
        r"\@ifundefined{book@partdone}{\typeout{BOOK-WARNING: the part label is not in the edition's language}}{}",
        rf"\renewcommand{{\bibname}}{{{strings['bibliography']}}}",
        r"\makeatother",
    ])


def _latex_for_language(app, config) -> None:
    """A translated PDF edition: LaTeX's names in its language, in the preamble (config-inited: the LaTeX builder
    reads latex_elements when it starts)."""
    lang = _language(config)
    if lang == "en" or lang not in STRINGS or config.latex_engine != "xelatex":
        return
    elements = dict(config.latex_elements or {})
    elements["preamble"] = elements.get("preamble", "") + "\n" + _latex_names(_strings(config))
    config.latex_elements = elements


def _title_page_for_language(app, env) -> None:
    """A translated PDF edition: the title page's (and the running head's, and the PDF's metadata) title, the root
    document's title as its catalog translates it (as on the website), and its author (env-updated: after Jupyter
    Book has set the title from _config.yml, before the builder reads latex_documents when it writes)."""
    config = app.config
    lang = _language(config)
    if app.builder.name != "latex" or lang == "en" or lang not in STRINGS or config.latex_engine != "xelatex":
        return
    strings = _strings(config)
    config.latex_documents = [
        (start, target, _translate(app.srcdir, config, start, title), strings.get("author", author), *rest)
        for start, target, title, author, *rest in config.latex_documents]


def _raw(tex: str) -> nodes.raw:
    return nodes.raw("", tex + "\n", format="latex")


def _inside(node: nodes.Node, kind: type) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, kind):
            return True
        parent = parent.parent
    return False


def _toc_parts(srcdir: Path) -> list[tuple[str, bool, list[str]]]:
    """(caption, numbered, docnames) of each part of `_toc.yml`."""
    toc = yaml.safe_load((srcdir / "_toc.yml").read_text())
    return [(p.get("caption", ""), bool(p.get("numbered")), [c["file"] for c in p.get("chapters", [])])
            for p in toc.get("parts", [])]


class BookStructure(SphinxPostTransform):
    """Front matter, parts, appendices and the solutions appendix of the LaTeX edition."""

    builders = ("latex",)
    default_priority = 3  # before myst-nb selects a mime type (4): widgets are recognised by their bundle

    def run(self, **kwargs: Any) -> None:
        if self.document.get("docname") != self.env.config.root_doc:
            return  # only the assembled book (single documents are not built for the PDF)
        files = {n["docname"]: n for n in self.document.findall(addnodes.start_of_file)}
        if not files:
            return
        self._drop_widgets()
        self._drop_folded_code()
        self._drop_report_cell_links()
        self._report_tables_as_paragraphs()
        self._drop_bibliography_page(files)
        self._about_this_book()
        self._parts_and_numbering(files)

    def _drop_widgets(self) -> None:
        for bundle in list(self.document.findall(nodes.container)):
            if bundle.get("nb_element") == "mime_bundle" and any(
                    c.get("mime_type") == WIDGET_MIME for c in bundle.children):
                bundle.parent.remove(bundle)

    def _drop_report_cell_links(self) -> None:
        for ref in list(self.document.findall(nodes.reference)):
            if "check-cell" in ref.get("classes", []):
                para = ref.parent
                index = para.index(ref)
                # the link sits in "(cell)": remove the brackets with it
                before = para[index - 1] if index else None
                after = para[index + 1] if index + 1 < len(para) else None
                para.remove(ref)
                if isinstance(before, nodes.Text) and before.endswith(" ("):
                    para.replace(before, nodes.Text(before[:-2]))
                if isinstance(after, nodes.Text) and after.startswith(")"):
                    para.replace(after, nodes.Text(after[1:]))

    def _drop_folded_code(self) -> None:
        """The code the website folds (hide-input: the checks' and the figures' code) is not printed; the outputs stay,
        and the notebooks have every line. Solutions keep their code: it is the answer."""
        for cell in list(self.document.findall(nodes.container)):
            if "tag_hide-input" not in cell.get("classes", []) or _inside(cell, solution_node):
                continue
            for source in [c for c in cell.children if "cell_input" in c.get("classes", [])]:
                cell.remove(source)

    def _report_tables_as_paragraphs(self) -> None:
        """The reproduction report's per-chapter tables have eight columns whose cells run to many lines: a longtable
        row cannot break across pages, so tall rows printed under the footer and narrow columns split numbers and
        code names. On paper each check becomes a paragraph, its check name in bold, then each column as "Name: value"
        (the website keeps the tables)."""
        for table in list(self.document.findall(nodes.table)):
            if "reproduction-report" not in table.get("classes", []):
                continue
            group = next(iter(table.findall(nodes.tgroup)))
            heads = [e.astext() for e in next(iter(group.findall(nodes.thead))).findall(nodes.entry)]
            items = nodes.bullet_list(classes=["reproduction-checks"])
            for row in next(iter(group.findall(nodes.tbody))).findall(nodes.row):
                # the row's targets (the chapters link to a check's row) move to its paragraph
                para = nodes.paragraph(ids=[i for n in (row, *row.findall(nodes.entry)) for i in n.get("ids", [])])
                for index, (head, entry) in enumerate(zip(heads, row.findall(nodes.entry), strict=False)):
                    content = [c.deepcopy() for p in entry.findall(nodes.paragraph)
                               for c in (*p.children, nodes.Text("; "))][:-1]
                    if not content or not entry.astext().strip():
                        continue
                    if index == 0:
                        para += nodes.strong("", "", *content)
                        para += nodes.Text(". ")
                    else:
                        para += nodes.emphasis("", f"{head}: ")
                        para.extend(content)
                        para += nodes.Text(". " if index < len(heads) - 1 else "")
                items += nodes.list_item("", para)
            table.replace_self(items)

    @staticmethod
    def _drop_bibliography_page(files: dict[str, nodes.Element]) -> None:
        """The website's bibliography page loses its heading in LaTeX, not its references: its bibliography node
        (sphinxcontrib-bibtex turns it into citations at priority 5, after this transform) and any citation stay in
        the document, and Sphinx gathers the citations into the book's bibliography, a chapter of its own at the
        end, which every citation links to. (Removing the page with its references left a PDF whose citations
        pointed at nothing.)"""
        page = files.pop("bibliography", None)
        if page is None:
            return
        citations = [n for n in page.findall(nodes.Element) if isinstance(n, (nodes.citation, bibliography))]
        for citation in citations:
            citation.parent.remove(citation)
        parent, index = page.parent, page.parent.index(page)
        parent.remove(page)
        for offset, citation in enumerate(citations):
            parent.insert(index + offset, citation)

    def _about_this_book(self) -> None:
        """The landing page's own content (before the first inlined document) becomes one unnumbered chapter."""
        top = next(iter(self.document.findall(nodes.section)), None)
        if top is None:
            return
        first_file = next((i for i, c in enumerate(top.children) if isinstance(c, addnodes.start_of_file)
                           or any(True for _ in c.findall(addnodes.start_of_file))), len(top.children))
        own = [c for c in top.children[1:first_file]]  # after the title
        if not own:
            return
        about = nodes.section(ids=["about-this-book"])
        about += nodes.title(text=_strings(self.env.config)["about"])
        for child in own:
            top.remove(child)
            about += child
        top.insert(1, about)

    def _parts_and_numbering(self, files: dict[str, nodes.Element]) -> None:
        """Raw LaTeX before each document: parts, unnumbered front matter, appendices for the back matter."""
        parts = _toc_parts(Path(self.env.srcdir))
        about = next(iter(self.document.findall(nodes.section)), None)
        if about is not None and about.children and isinstance(about.children[1], nodes.section):
            about.insert(1, _raw(r"\setcounter{secnumdepth}{-1}"))
        seen_numbered = False
        for caption, numbered, docnames in parts:
            present = [d for d in docnames if d in files]
            if not present:
                continue
            first = files[present[0]]
            if numbered:
                tex = r"\setcounter{secnumdepth}{2}" if not seen_numbered else ""
                caption = _translate(self.env.srcdir, self.env.config, self.env.config.root_doc, caption)
                tex += rf"\part{{{caption}}}"
                seen_numbered = True
            elif seen_numbered:  # back matter after the numbered parts
                tex = r"\appendix\setcounter{secnumdepth}{2}"
                seen_numbered = False
            else:
                tex = ""
            if tex:
                first.parent.insert(first.parent.index(first), _raw(tex))

class SolutionsAppendix(SphinxPostTransform):
    """Every solution moves to a last appendix, by chapter, headed by the number and title of its exercise."""

    builders = ("latex",)
    default_priority = 30  # after sphinx-exercise has numbered the exercises and resolved the solutions' targets

    def run(self, **kwargs: Any) -> None:
        if self.document.get("docname") != self.env.config.root_doc:
            return
        chapter_of: dict[int, str] = {}  # id(solution) -> title of the document that holds it
        for sof in self.document.findall(addnodes.start_of_file):  # outer files first: inner ones overwrite
            section = next(iter(sof.findall(nodes.section)), None)
            title = section.next_node(nodes.title).astext() if section is not None else sof["docname"]
            for sol in sof.findall(solution_node):
                chapter_of[id(sol)] = title
        exercises = {n.get("label"): n.next_node(nodes.title).astext() for n in self.document.findall(
            lambda n: isinstance(n, exercise_enumerable_node | exercise_node)) if n.next_node(nodes.title)}
        solutions = list(self.document.findall(solution_node))
        if not solutions:
            return
        registry = getattr(self.env, "sphinx_exercise_registry", {})
        strings = _strings(self.env.config)
        top = next(iter(self.document.findall(nodes.section)))
        appendix = nodes.section(ids=["solutions-to-the-exercises"])
        appendix += nodes.title(text=strings["solutions"])
        appendix += nodes.paragraph(text=strings["solutions_intro"])
        by_chapter: dict[str, nodes.section] = {}
        for sol in solutions:
            chapter = chapter_of.get(id(sol), strings["solutions_chapter"])
            if chapter not in by_chapter:
                by_chapter[chapter] = nodes.section(ids=[f"solutions-{len(by_chapter)}"])
                by_chapter[chapter] += nodes.title(text=chapter)
                appendix += by_chapter[chapter]
            sol.parent.remove(sol)
            # Not a box: a code cell is a framed box itself, and a framed box inside another cannot break across
            # pages (long solution code ran under the footer); the heading names the exercise (the box said only
            # "Solution"), and the label that links to the solution stays.
            exercise = exercises.get(sol.get("target_label"))
            entry = registry.get(sol.get("label"))
            if entry is not None:
                by_chapter[chapter] += _raw(f"\\phantomsection\\label{{{entry.get('docname')}:{sol['label']}}}")
            heading = nodes.paragraph(ids=list(sol.get("ids", [])), classes=["solution-heading"])
            heading += nodes.strong(text=strings["solution_to"].format(exercise=exercise) if exercise
                                    else strings["solution"])
            by_chapter[chapter] += heading
            by_chapter[chapter].extend(c for c in sol.children if not isinstance(c, nodes.title))
        if not any(isinstance(n, nodes.raw) and "\\appendix" in n.astext() for n in self.document.findall(nodes.raw)):
            top += _raw(r"\appendix")
        top += appendix


class ProofNames(SphinxPostTransform):
    """A translated edition: the names of sphinx-proof's theorems, lemmas, remarks ... in its language, from
    sphinx-proof's catalog as on the website (its LaTeX writer prints the English name: ``realtype.title()``)."""

    builders = ("latex",)
    default_priority = 900  # after the references are resolved (their text comes from the domain, translated)

    def run(self, **kwargs: Any) -> None:
        if _language(self.env.config) == "en":
            return
        from sphinx.locale import get_translation

        translate = get_translation("proof")
        for node in self.document.findall(nodes.Element):
            if type(node).__module__.startswith("sphinx_proof") and node.get("realtype"):
                node["realtype"] = str(translate(node["realtype"].title()))


def _no_floats_inside(app) -> None:
    """Exercises and solutions are admonition boxes in LaTeX, where a float (a captioned figure) is an error:
    count them as Sphinx counts its own admonitions, so their figures are set in place ([H])."""
    from sphinx_exercise import nodes as ex

    for node, visit, depart in ((solution_node, ex.visit_solution_node, ex.depart_solution_node),
                                (exercise_node, ex.visit_exercise_node, ex.depart_exercise_node),
                                (exercise_enumerable_node, ex.visit_exercise_enumerable_node,
                                 ex.depart_exercise_enumerable_node)):
        def enter(self, n, visit=visit):
            visit(self, n)
            self.no_latex_floats += 1

        def leave(self, n, depart=depart):
            self.no_latex_floats -= 1
            depart(self, n)

        app.registry.add_translation_handlers(node, latex=(enter, leave))


def setup(app) -> dict[str, Any]:
    app.add_post_transform(BookStructure)
    app.add_post_transform(SolutionsAppendix)
    app.add_post_transform(ProofNames)
    app.connect("config-inited", _latex_for_language)
    app.connect("env-updated", _title_page_for_language)
    app.connect("builder-inited", _no_floats_inside)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
