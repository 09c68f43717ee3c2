"""The report as a document: headings, text, warnings, tables and figures, rendered as Markdown or HTML.

Sections add blocks to a :class:`Doc`; :func:`render_markdown` and
:func:`render_html` write the same blocks. Text is inline Markdown (```code```,
``**bold**``, and ``<sup>ab</sup>``: superscript letters) in both. ``report.html`` is one self-contained page (its own
small stylesheet, no scripts, no external requests) that fits the screen:
cells wrap at their spaces before a table is wider than the page, a table
still too wide (on a phone) scrolls inside its own box, and the page itself
never scrolls sideways. A column may carry a definition, shown as the
header's tooltip (``title=``); every figure links to its full-size file.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from uncertank.experiment.report.markdown import markdown_lines
from uncertank.validation import check_instance, check_name

__all__ = ["CSS", "Doc", "render_html", "render_markdown"]


@dataclass
class Heading:
    """A heading of ``level`` 1-3 with a unique anchor."""

    level: int
    text: str
    anchor: str


@dataclass
class Text:
    """A paragraph of inline Markdown."""

    text: str


@dataclass
class Alert:
    """A warning box (the smoke run's)."""

    text: str


@dataclass
class Table:
    """A table of inline-Markdown cells, with an optional title above it and notes below it.

    ``tips`` maps a column to its definition: the header's tooltip in HTML
    (the notes carry the definitions where a reader of the Markdown needs them).
    """

    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    title: str = ""
    tips: dict[str, str] = field(default_factory=dict)


@dataclass
class Figure:
    """An image (``src`` relative to the report folder) and its numbered caption."""

    src: str
    caption: str


Block = Heading | Text | Alert | Table | Figure


class Doc:
    """The blocks of a report, in order; figures are numbered as they are added."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self._anchors: set[str] = set()
        self.n_figures = 0
        self.n_tables = 0

    def heading(self, level: int, text: str) -> None:
        """Add a heading (its anchor made unique)."""
        base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
        anchor, i = base, 2
        while anchor in self._anchors:
            anchor, i = f"{base}-{i}", i + 1
        self._anchors.add(anchor)
        self.blocks.append(Heading(level, text, anchor))

    def text(self, text: str) -> None:
        """Add a paragraph."""
        self.blocks.append(Text(text))

    def warning(self, text: str) -> None:
        """Add a warning box."""
        self.blocks.append(Alert(text))

    def table(self, columns: list[str], rows: list[list[str]], notes: Sequence[str] = (), *, title: str = "",
              tips: Mapping[str, str] | None = None) -> None:
        """Add a table with its notes, its title and the definitions of its columns (``tips``)."""
        self.n_tables += 1
        self.blocks.append(Table(columns, rows, list(notes), title, dict(tips or {})))

    def figure(self, src: str, caption: str) -> None:
        """Add a figure; its caption gets the next figure number."""
        self.n_figures += 1
        self.blocks.append(Figure(src, f"Figure {self.n_figures}. {caption}"))


def render_markdown(doc: Doc) -> str:
    """``report.md``: the blocks as Markdown, a line of contents under the title."""
    check_instance(doc, "doc", Doc)
    out: list[str] = []
    toc = [b for b in doc.blocks if isinstance(b, Heading) and b.level == 2]
    for b in doc.blocks:
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + b.text + "\n")
            if b.level == 1 and toc:
                out.append("Contents: " + " · ".join(f"[{h.text}](#{h.anchor})" for h in toc) + "\n")
        elif isinstance(b, Text):
            out.append(b.text + "\n")
        elif isinstance(b, Alert):
            out.append(f"> **Warning.** {b.text}\n")
        elif isinstance(b, Table):
            if b.title:
                out.append(f"**{b.title}**\n")
            out.append(markdown_lines(b.columns, b.rows))
            out.extend(f"{n}\n" for n in b.notes)
        else:
            out.append(f"![{b.caption}]({b.src})\n\n*{b.caption}*\n")
    return "\n".join(out)


def _inline_html(text: str) -> str:
    s = html.escape(text, quote=False)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    s = re.sub(r"&lt;sup&gt;([A-Za-z]+)&lt;/sup&gt;", r"<sup>\1</sup>", s)  # a paper table's letters
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)


#: The page's stylesheet. Cells wrap at their spaces when a table would be wider than the page;
#: ``.table-wrap`` scrolls a table that is still too wide inside the page (``overflow-x: auto``).
CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;margin:0;background:#fafafa}
main{max-width:1200px;margin:0 auto;padding:1.5em 2em 4em;background:#fff;box-sizing:border-box;min-width:0}
h1{font-size:1.7em;margin:.4em 0}h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{font-size:1.1em;margin-top:1.5em}
h1,h2,h3,p,li,figcaption{overflow-wrap:break-word}
a.anchor{color:#bbb;text-decoration:none;margin-left:.35em;font-weight:normal;visibility:hidden}
h1:hover a.anchor,h2:hover a.anchor,h3:hover a.anchor{visibility:visible}
nav.toc{background:#f3f5f8;border:1px solid #e1e5eb;border-radius:6px;padding:.6em 1.2em;margin:1em 0}
nav.toc ol{margin:.3em 0;padding-left:1.4em}
@media (min-width:700px){nav.toc ol{columns:2;column-gap:2.5em}}
.warning{background:#fff4e5;border:1px solid #f0a030;border-left:6px solid #e67e00;border-radius:4px;
padding:.7em 1em;margin:1em 0}
p.table-title{margin:1.2em 0 .2em;font-size:.95em}
.table-wrap{overflow-x:auto;width:fit-content;max-width:100%;margin:.3em 0 .6em;border:1px solid #eee;
border-radius:4px}
table{border-collapse:collapse;font-size:.9em;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #e3e3e3;padding:.25em .6em;text-align:right;vertical-align:top}
td:first-child{white-space:nowrap}
th{border-bottom:2px solid #999;background:#f7f7f7;vertical-align:bottom}
th[title]{cursor:help;text-decoration:underline dotted #888;text-underline-offset:3px}
td:first-child,th:first-child,td.text,th.text{text-align:left}
tbody tr:hover{background:#f5f9ff}
p.note{font-size:.85em;color:#555;margin:.2em 0;max-width:60em}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em;background:#f2f2f2;padding:0 .2em;
border-radius:3px}
figure{margin:1.2em 0;text-align:center}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.88em;color:#444;max-width:60em;margin:.3em auto;text-align:left}
@media (max-width:640px){body{font-size:14px}main{padding:1em .8em 3em}th,td{padding:.2em .4em}}
"""


def _is_number(cell: str) -> bool:
    return bool(re.match(r"^\**[-+]?[\d.]", cell)) or cell in ("–", "n/a")


def _html_cell(tag: str, text: str, left: bool, tip: str = "") -> str:
    cls = ' class="text"' if left else ""
    title = f' title="{html.escape(tip)}"' if tip else ""
    return f"<{tag}{cls}{title}>{_inline_html(text)}</{tag}>"


def render_html(doc: Doc, title: str) -> str:
    """``report.html``: the blocks as one self-contained page, contents under the title, tables in scroll boxes."""
    check_instance(doc, "doc", Doc)
    check_name(title, "title")
    body: list[str] = []
    toc = [b for b in doc.blocks if isinstance(b, Heading) and b.level == 2]
    for b in doc.blocks:
        if isinstance(b, Heading):
            body.append(f'<h{b.level} id="{b.anchor}">{_inline_html(b.text)}'
                        f'<a class="anchor" href="#{b.anchor}" aria-label="link to this section">#</a></h{b.level}>')
            if b.level == 1 and toc:
                items = "".join(f'<li><a href="#{h.anchor}">{_inline_html(h.text)}</a></li>' for h in toc)
                body.append(f'<nav class="toc"><strong>Contents</strong><ol>{items}</ol></nav>')
        elif isinstance(b, Text):
            body.append(f"<p>{_inline_html(b.text)}</p>")
        elif isinstance(b, Alert):
            body.append(f'<div class="warning" role="alert"><strong>Warning.</strong> {_inline_html(b.text)}</div>')
        elif isinstance(b, Table):
            text_cols = {j for j in range(len(b.columns))
                         if j == 0 or any(j < len(r) and not _is_number(r[j]) for r in b.rows)}
            head = "".join(_html_cell("th", c, j in text_cols, b.tips.get(c, "")) for j, c in enumerate(b.columns))
            rows = "".join("<tr>" + "".join(_html_cell("td", c, j in text_cols) for j, c in enumerate(row)) + "</tr>"
                           for row in b.rows)
            if b.title:
                body.append(f'<p class="table-title"><strong>{_inline_html(b.title)}</strong></p>')
            body.append(f'<div class="table-wrap" tabindex="0"><table><thead><tr>{head}</tr></thead>'
                        f"<tbody>{rows}</tbody></table></div>")
            body.extend(f'<p class="note">{_inline_html(n)}</p>' for n in b.notes)
        else:
            src = html.escape(b.src)
            body.append(f'<figure><a href="{src}" title="open the full-size figure"><img src="{src}" '
                        f'alt="{html.escape(b.caption)}"></a>'
                        f"<figcaption>{_inline_html(b.caption)} <a href=\"{src}\">Full size</a>.</figcaption></figure>")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>\n"
        "<body><main>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )
