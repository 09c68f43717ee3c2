"""``uncertank threshold``: a threshold with a guarantee, from a TREC run and its qrels.

::

    uncertank threshold --run RUN --qrels QRELS --alpha 0.1 [--delta 0.1] [--risk miss|coverage|fdr|abstain]

Every judged query of the run calibrates (or all but ``--holdout`` of them,
which then measure the threshold); the command prints the threshold (or
``k`` with ``--top-k``), the guarantee it carries and the calibration size,
or, with ``--format json``, the same as one JSON object. The run's scores
are thresholded as they are, raw scores or probabilities alike (the score
of any ranker). ``--against RUN2`` tests whether the queries of another run
(the ones the threshold is meant for) are exchangeable with the
calibration queries, by their top scores.

A bad input (a missing or malformed file, a level outside (0, 1), an
unknown risk) prints one line, ``uncertank threshold: ...``, and exits with
status 2.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import click
import numpy as np

from uncertank._types import Predictions, RankedLists
from uncertank.cli._input_error import InputError, one_line
from uncertank.validation import check_unit_interval

if TYPE_CHECKING:
    from uncertank.conformal.calibrated import ConformalThreshold

__all__ = ["threshold_command"]


def _bad(message: str) -> InputError:
    """A bad input of ``uncertank threshold``: one line, ``uncertank threshold: ...``."""
    return InputError(one_line(message), command="threshold")


class _OneLineCommand(click.Command):
    """A command whose usage errors (a missing option, a stray argument) are one line too."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: object) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            raise _bad(exc.format_message()) from None


def _number(text: str, name: str, *, closed_low: bool = False) -> float:
    """``text`` as a number in (0, 1), or in [0, 1) with ``closed_low``."""
    try:
        value = float(text)
    except ValueError:
        raise _bad(f"{name} must be a number; got {text!r}") from None
    try:
        return check_unit_interval(value, name, closed="left" if closed_low else "neither")
    except ValueError as exc:
        raise _bad(str(exc)) from None


def _unlabelled_run(path: str, system: str | None) -> Predictions:
    """The scores of a run file as lists (one per query, in the file's order of first appearance)."""
    import pandas as pd

    from uncertank.datasets.trec_files import read_trec_run

    df = read_trec_run(path)
    if system is not None:
        df = df[df["system"] == system]
        if df.empty:
            raise ValueError(f"{path}: no line of system {system!r}")
    codes, _ = pd.factorize(df["query_id"])
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return Predictions(df["score"].to_numpy(dtype=np.float64)[order], offsets, probabilistic=False)


def _threshold_sentence(th: ConformalThreshold) -> str:
    if th.risk == "abstain":
        if not th.feasible:
            return "no threshold: abstain on every query"
        return f"threshold {th.threshold:.6g}: answer with the top candidate when it scores >= {th.threshold:.6g}"
    if th.method == "topk":
        return f"k = {th.k}: keep the top {th.k} candidates of every query"
    if th.threshold == -math.inf:
        return "threshold -inf: keep every candidate"
    if th.threshold == math.inf:
        return "threshold inf: keep no candidate"
    return f"threshold {th.threshold:.6g}: keep the candidates scoring >= {th.threshold:.6g}"


def _measure(th: ConformalThreshold, lists: RankedLists) -> dict[str, float]:
    """The realised risk (and set size or answer rate) of ``th`` on labelled lists."""
    from uncertank.conformal.threshold import apply_threshold

    out = apply_threshold(th, lists)
    if th.risk == "abstain":
        return {"n_queries": lists.n_queries, "risk": out.error_rate(lists.labels),  # type: ignore[union-attr]
                "answer_rate": out.answer_rate}  # type: ignore[union-attr]
    sets = out
    if th.risk == "coverage":
        risk = 1.0 - float(sets.covered(lists.labels).mean())  # type: ignore[union-attr]
    elif th.risk == "miss":
        risk = float(sets.miss_rate(lists.labels).mean())  # type: ignore[union-attr]
    else:
        risk = float(sets.false_discovery(lists.labels).mean())  # type: ignore[union-attr]
    return {"n_queries": lists.n_queries, "risk": risk, "mean_set_size": float(sets.sizes.mean()),  # type: ignore[union-attr]
            "mean_list_length": float(lists.lengths.mean())}


_RISK_WORDS = {"coverage": "miscoverage", "miss": "miss rate", "fdr": "false discovery rate",
               "abstain": "error rate among answered"}


@click.command("threshold", cls=_OneLineCommand)
@click.option("--run", "run", required=True, metavar="PATH",
              help="The TREC run file of the ranker (raw scores or probabilities).")
@click.option("--qrels", required=True, metavar="PATH", help="The TREC qrels file of its queries.")
@click.option("--alpha", "alpha_text", default="0.1", show_default=True, metavar="FLOAT",
              help="The risk level, in (0, 1).")
@click.option("--delta", "delta_text", default="0.1", show_default=True, metavar="FLOAT",
              help="The failure probability of --risk fdr and abstain, in (0, 1).")
@click.option("--risk", default="miss", show_default=True, metavar="[coverage|miss|fdr|abstain]",
              help="coverage: a relevant candidate in the set (split conformal); miss: the mean miss rate "
                   "1 - recall of the set (conformal risk control); fdr: the false discovery rate of the set, and "
                   "abstain: the error rate among answered queries (Learn-then-Test, w.p. >= 1 - delta).")
@click.option("--top-k", "top_k", is_flag=True, help="Calibrate a number of candidates k instead of a score "
                                                      "threshold (--risk coverage and miss).")
@click.option("--system", default=None, metavar="NAME", help="Which run of a file that holds several.")
@click.option("--holdout", "holdout_text", default="0", show_default=True, metavar="FLOAT",
              help="Share of the queries held out (seeded) to measure the threshold on, in [0, 1).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the held-out queries.")
@click.option("--against", default=None, metavar="PATH",
              help="A run of the queries the threshold is for: test that they are exchangeable with the "
                   "calibration queries (two-sample test of the top scores).")
@click.option("--format", "fmt", default="text", show_default=True, metavar="[text|json]",
              help="A report for people, or one JSON object for machines.")
def threshold_command(run: str, qrels: str, alpha_text: str, delta_text: str, risk: str, top_k: bool,
                      system: str | None, holdout_text: str, seed: int, against: str | None, fmt: str) -> None:
    """A threshold a user can ship: calibrate on RUN and QRELS, print it with its guarantee (docs/conformal.md)."""
    from uncertank.conformal.exchangeability import exchangeability_test
    from uncertank.conformal.split import split_queries
    from uncertank.conformal.threshold import RISKS, calibrate_threshold
    from uncertank.datasets.trec import ranked_lists_from_run

    alpha = _number(alpha_text, "--alpha")
    delta = _number(delta_text, "--delta")
    holdout = _number(holdout_text, "--holdout", closed_low=True)
    if risk not in RISKS:
        raise _bad(f"--risk must be one of {', '.join(RISKS)}; got {risk!r}")
    if fmt not in ("text", "json"):
        raise _bad(f"--format must be text or json; got {fmt!r}")
    if top_k and risk not in ("coverage", "miss"):
        raise _bad(f"--top-k applies to --risk coverage and miss; got --risk {risk}")
    try:
        lists = ranked_lists_from_run(run, qrels, system=system)
        target = _unlabelled_run(against, system) if against is not None else None
    except (ValueError, TypeError, OSError) as exc:
        raise _bad(str(exc)) from None
    held: RankedLists | None = None
    cal = lists
    if holdout > 0:
        if lists.n_queries < 2:
            raise _bad(f"--holdout needs at least 2 judged queries; {run} has {lists.n_queries}")
        split = split_queries(lists, calibration=1.0 - holdout, seed=seed)
        cal, held = split.take(lists, "calibration"), split.take(lists, "test")
    try:
        th = calibrate_threshold(cal, risk=risk, alpha=alpha, delta=delta,  # type: ignore[arg-type]
                                 method="topk" if top_k else "threshold")
    except (ValueError, TypeError) as exc:
        raise _bad(str(exc)) from None
    c = _measure(th, cal)
    h = None if held is None else {**_measure(th, held), "seed": seed}
    report: dict[str, object] = {**th.to_dict(), "run": run, "qrels": qrels, "calibration": c}
    if h is not None:
        report["holdout"] = h
    checks = []
    if held is not None:
        checks.append(("holdout", exchangeability_test(cal, held)))
    if target is not None:
        checks.append((str(against), exchangeability_test(cal, target)))
    if checks:
        report["exchangeability"] = {name: c.to_dict() for name, c in checks}
    if fmt == "json":
        click.echo(json.dumps(report, indent=2, allow_nan=False))
        return
    what = _RISK_WORDS[th.risk]
    click.echo(_threshold_sentence(th))
    click.echo(f"guarantee: {th.guarantee}")
    size = (f"answers {c['answer_rate']:.1%} of them" if th.risk == "abstain"
            else f"mean set size {c['mean_set_size']:.2f} of {c['mean_list_length']:.2f} candidates")
    click.echo(f"calibration: {th.n_calibration} queries; {what} on them {c['risk']:.4f}; {size}")
    if h is not None:
        size = (f"answers {h['answer_rate']:.1%}" if th.risk == "abstain"
                else f"mean set size {h['mean_set_size']:.2f}")
        click.echo(f"held out: {h['n_queries']} queries; {what} {h['risk']:.4f}; {size}")
    for _, check in checks:
        click.echo(f"exchangeability: {check.message}")
