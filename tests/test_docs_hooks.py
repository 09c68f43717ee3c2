"""docs/hooks/api_pages.py: numpydoc roles become optional autorefs; private bases leave the "Bases:" line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
api_pages = load_script(ROOT / "docs" / "hooks" / "api_pages.py")

KNOWN = {
    "uncertank.metrics.expected_calibration_error": ("uncertank.metrics.expected_calibration_error",
                                                     "uncertank.metrics.calibration.expected_calibration_error"),
    "uncertank.QuerySet": ("uncertank.QuerySet",),
}


def resolve(target):
    return KNOWN.get(target)


@pytest.mark.parametrize(("role", "body", "expected"), [
    ("func", "~uncertank.metrics.expected_calibration_error",
     '<autoref identifier="uncertank.metrics.expected_calibration_error" '
     'slug="uncertank.metrics.calibration.expected_calibration_error" optional>'
     "<code>expected_calibration_error()</code></autoref>"),
    ("class", "uncertank.QuerySet",
     '<autoref identifier="uncertank.QuerySet" optional><code>uncertank.QuerySet</code></autoref>'),
    ("class", "the query set <uncertank.QuerySet>",
     '<autoref identifier="uncertank.QuerySet" optional><code>the query set</code></autoref>'),
    ("meth", "fit", '<autoref identifier="fit" optional><code>fit()</code></autoref>'),
    ("func", "numpy.var", '<autoref identifier="numpy.var" optional><code>numpy.var()</code></autoref>'),
])
def test_one_role_becomes_an_optional_autoref(role, body, expected):
    assert api_pages.role_to_autoref(role, body, resolve) == expected


def test_every_role_in_a_docstring_is_rewritten_and_the_rest_kept():
    text = "As :func:`~uncertank.metrics.expected_calibration_error`; see :py:class:`uncertank.QuerySet` and `x`."
    out = api_pages.rewrite_roles(text, resolve)
    assert out.startswith("As <autoref ") and out.endswith("</autoref> and `x`.")
    assert ":func:" not in out and ":py:class:" not in out and out.count("<autoref ") == 2


def test_resolver_looks_in_enclosing_scopes_like_sphinx():
    griffe = pytest.importorskip("griffe")
    pkg = griffe.load("uncertank.metrics", resolve_aliases=False)
    ece = pkg["calibration"]["expected_calibration_error"]
    collection = pkg.modules_collection
    # A bare name is found in the docstring owner's module; a dotted one as written.
    assert api_pages._resolver(collection, ece)("reliability_curve") == (
        "uncertank.metrics.calibration.reliability_curve",)
    assert api_pages._resolver(collection, ece)("uncertank.metrics.calibration.reliability_curve") == (
        "uncertank.metrics.calibration.reliability_curve",)
    assert api_pages._resolver(collection, ece)("no_such_name") is None


def _bases(*items):
    return f'<p class="doc doc-class-bases">\n  Bases: {", ".join(items)}</p>'


def _base(path):
    return f'<code><span title="{path}">{path.rsplit(".", 1)[-1]}</span></code>'


def test_private_bases_are_dropped_and_public_ones_kept():
    public, private = _base("uncertank.protocols.Ranker"), _base("uncertank.metrics.streaming._Binned")
    assert api_pages.drop_private_bases(_bases(private)) == ""
    assert api_pages.drop_private_bases(_bases(private, public)) == _bases(public)
    assert api_pages.drop_private_bases(_bases(public, _base("typing.Protocol"))) == _bases(
        public, _base("typing.Protocol"))
    # Before autorefs' fix-up the base is still an autoref tag; a public class in a private module stays.
    pending = '<code><autoref identifier="uncertank._types._Offsets" optional hover>_Offsets</autoref></code>'
    assert api_pages.drop_private_bases(_bases(pending)) == ""
    assert api_pages.drop_private_bases(_bases(_base("uncertank._types.QuerySet"))) == _bases(
        _base("uncertank._types.QuerySet"))


def test_shared_parameter_entries_are_split_with_their_description():
    text = """Intro, n_bins, strategy stays.

Parameters
----------
probs : array-like
    Scores.
n_bins, strategy
    As in ECE,
    over two lines.

x, y : float, optional
    Both.

Returns
-------
a, b
    Not a parameter section: kept."""
    out = api_pages.split_shared_parameters(text)
    assert out == """Intro, n_bins, strategy stays.

Parameters
----------
probs : array-like
    Scores.
n_bins
    As in ECE,
    over two lines.
strategy
    As in ECE,
    over two lines.

x : float, optional
    Both.
y : float, optional
    Both.

Returns
-------
a, b
    Not a parameter section: kept."""
    assert api_pages.split_shared_parameters(out) == out
