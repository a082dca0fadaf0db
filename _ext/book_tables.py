"""A docutils table row of plain-text cells, shared by the book's generated pages (reproduction report, benchmarks)."""

from __future__ import annotations

from docutils import nodes


def table_row(cells: list[str]) -> nodes.row:
    row = nodes.row()
    for text in cells:
        entry = nodes.entry()
        entry += nodes.paragraph(text=text)
        row += entry
    return row
