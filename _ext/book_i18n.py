"""What the translations' message catalogs hold (`make gettext`, locales/ja/TRANSLATING.md).

English is the source; a translated edition is built from the same sources with `language` set and the catalogs of
`locales/<lang>/LC_MESSAGES` (Sphinx's i18n: each paragraph, title, table cell, caption ... of a page is looked up by
its MyST source text and replaced by the translation, parsed as MyST). This extension only adjusts what is a message:

- Exercise titles become messages. sphinx-exercise builds the title line of ``{exercise} Title (kind, ★, 10 min)``
  as a node without source text, so Sphinx neither extracts nor translates it; here it gets its MyST source (the
  directive's argument) as in any title, in the gettext build and in a translated build.
- Not messages (gettext build only): display equations (``$$ ... $$``: math is never translated, and a label or
  words inside ``\\text{}`` stay as they are) and text that an extension generates rather than a source file holds
  (the reproduction report's counts and tables, which change with every build: a translation could never keep up).

None of this runs in the English build (no ``language`` or ``en``, and not the gettext builder), whose doctrees
and pages are unchanged.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform


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
        if self.app.builder.name != "gettext":
            return
        for node in self.document.findall(nodes.TextElement):
            if isinstance(node, nodes.math_block):
                node["translatable"] = False
            elif isinstance(node, (nodes.paragraph, nodes.title)) and not node.rawsource:
                node["translatable"] = False  # built by an extension (no MyST source text): not a message


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
    app.add_transform(NotMessages)
    app.add_post_transform(ExerciseTitleMessages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
