"""How the API pages render numpydoc's cross-reference roles and class bases.

The docstrings follow numpydoc, whose cross-references are Sphinx roles
(:func:`~uncertank.metrics.expected_calibration_error`). mkdocstrings shows
such a role as raw text, so the griffe extension :class:`SphinxRoles` turns
each role into an optional autorefs link before the docstrings are rendered:
a link to the documented object when its page exists, the name in code type
when it does not (a private helper, numpy or scipy). It also splits a
parameter entry shared by several names (``n_bins, strategy``), which griffe
would show with the first name's type and default. The mkdocs hook
``on_page_content`` drops private bases (``_Binned``) from the "Bases:" line,
which names implementation details, not API.

Wired in ``mkdocs.yml``: ``hooks: [docs/hooks/api_pages.py]`` and the
mkdocstrings option ``extensions: [docs/hooks/api_pages.py:SphinxRoles]``.
"""

from __future__ import annotations

import html
import re
from typing import Any

ROLE = re.compile(r":(?:py:)?(func|meth|class|attr|mod|data|obj|exc|const):`(?P<body>[^`]+)`")
CALLABLE_ROLES = {"func", "meth"}
BASES = re.compile(r'(<p class="doc doc-class-bases">\s*Bases:\s*)(?P<items>.*?)(</p>)', re.DOTALL)
# A base whose cross-reference (before or after autorefs: identifier= or title=) ends in a private name.
PRIVATE_BASE = re.compile(
    r'<code>(?:(?!</code>).)*?(?:identifier|title)="(?:[^"]*\.)?_[A-Za-z0-9_]*"(?:(?!</code>).)*</code>', re.DOTALL
)


def role_to_autoref(role: str, body: str, resolve: Any) -> str:
    """The HTML of one role: an optional autoref to the resolved path, its text in code.

    ``body`` is the role's target as written: ``~a.b.c`` shows ``c``,
    ``title <a.b.c>`` shows ``title``; functions and methods get ``()``.
    ``resolve(target)`` returns the full dotted path and, when it differs,
    the canonical one (where the object is defined), or ``None``; autorefs
    links the first of them that a page documents (the second goes in its
    ``slug``, its fallback), and a target that resolves to nothing is still
    tried under its own name.
    """
    text, _, explicit = body.partition(" <")
    if explicit:
        target, shown = explicit.rstrip(">").strip(), text.strip()
    else:
        target = body.strip()
        shown = target.lstrip("~").rsplit(".", 1)[-1] if target.startswith("~") else target
        target = target.lstrip("~")
        if role in CALLABLE_ROLES and not shown.endswith(")"):
            shown += "()"
    paths = resolve(target) or (target,)
    slug = f' slug="{html.escape(paths[1])}"' if len(paths) > 1 else ""
    return f'<autoref identifier="{html.escape(paths[0])}"{slug} optional><code>{html.escape(shown)}</code></autoref>'


def _lookup(collection: Any, path: str) -> Any:
    try:
        return collection.get_member(path)
    except Exception:  # griffe raises KeyError, alias and cycle errors alike
        return None


def _resolver(collection: Any, obj: Any) -> Any:
    """Resolve a role's target as Sphinx does: as written, then in each enclosing scope of ``obj``."""

    def resolve(target: str) -> tuple[str, ...] | None:
        scopes = [None]
        scope = obj if obj.is_class or obj.is_module else obj.parent
        while scope is not None:
            scopes.append(scope.path)
            scope = scope.parent
        for prefix in scopes:
            found = _lookup(collection, target if prefix is None else f"{prefix}.{target}")
            if found is not None:
                try:
                    canonical = str(found.canonical_path)
                except Exception:  # an alias griffe cannot resolve
                    canonical = str(found.path)
                return tuple(dict.fromkeys((str(found.path), canonical)))
        return None

    return resolve


def rewrite_roles(text: str, resolve: Any) -> str:
    """``text`` with every Sphinx role replaced by :func:`role_to_autoref`."""
    return ROLE.sub(lambda m: role_to_autoref(m[1], m["body"], resolve), text)


PARAMETER_SECTIONS = {"Parameters", "Other Parameters"}
MULTI_NAME = re.compile(r"^(?P<names>\*{0,2}\w+(?:, \*{0,2}\w+)+)(?P<rest>\s*:.*)?$")


def split_shared_parameters(text: str) -> str:
    """Give each name of a numpydoc entry ``a, b, c`` (with or without a type) an entry of its own.

    numpydoc allows one entry for several parameters; griffe then takes the
    first name's annotation and default for all of them, so the API tables
    would show ``strategy: int | None = None`` for ECE's ``n_bins, strategy``.
    Each name gets the entry's type and description; its own annotation and
    default come from the signature.
    """
    lines = text.split("\n")
    out: list[str] = []
    section, i = None, 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"} and line.strip():
            section = line.strip()
        match = MULTI_NAME.match(line) if section in PARAMETER_SECTIONS else None
        if match is None:
            out.append(line)
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or lines[j].startswith((" ", "\t"))):
            j += 1
        while j > i + 1 and not lines[j - 1].strip():  # the blank lines before the next entry stay after
            j -= 1
        for name in match["names"].split(", "):
            out.append(f"{name}{match['rest'] or ''}")
            out.extend(lines[i + 1:j])
        i = j
    return "\n".join(out)


def _walk(obj: Any) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


try:
    from griffe import Extension
except ImportError:  # the docs tools are not installed: only the functions above are used
    Extension = object  # type: ignore[assignment,misc]


class SphinxRoles(Extension):  # type: ignore[misc,valid-type]
    """Griffe extension: shared parameter entries are split, Sphinx roles become optional autorefs."""

    def on_package(self, *, pkg: Any, loader: Any, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            if obj.docstring is None:
                continue
            text = split_shared_parameters(obj.docstring.value)
            obj.docstring.value = rewrite_roles(text, _resolver(loader.modules_collection, obj))


def drop_private_bases(page_html: str) -> str:
    """Remove private bases (a last name part starting with ``_``) from every "Bases:" line."""

    def fix(match: re.Match[str]) -> str:
        items = [i.strip() for i in match["items"].split(",")]
        public = [i for i in items if not PRIVATE_BASE.fullmatch(i)]
        if not public:
            return ""
        return f"{match[1]}{', '.join(public)}{match[3]}"

    return BASES.sub(fix, page_html)


def on_page_content(html_text: str, **kwargs: Any) -> str:
    """mkdocs hook: see :func:`drop_private_bases`."""
    return drop_private_bases(html_text)
