"""Write the TREC-style test files derived from the bundled TREC-COVID round 1 per-rank gains.

Source: ``uncertank/datasets/_data/trec-covid-round1/round1_rbpgain.csv`` (Benham,
Moffat & Culpepper, ECIR 2021; MIT licence, see the notice beside it). Each row
holds a run's RBP(0.8) gain at one rank of one topic, ``0.2 * 0.8 ** (rank - 1) * g``
with the graded gain ``g`` in {0, 0.5, 1}. The source has no document ids, so
the document at ``rank`` of ``system`` for ``topic`` is named
``<topic>-<system>-<rank>``; its grade is ``2 * g`` (0, 1 or 2). The qrels hold
the judged documents of the three runs together, so each run misses relevant
documents that another retrieved (as in a pooled collection). Scores are
derived from the rank, in [0, 1] and tied in pairs, so that the tie rule
(descending document id) is exercised and ``--probabilities`` applies.

Run from the repository root: ``python tests/data/make_trec_covid_runs.py``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

SYSTEMS = ("BBGhelani1", "base.unipd.it", "BioinfoUA-emb")
HERE = Path(__file__).parent


def main() -> None:
    src = Path("uncertank/datasets/_data/trec-covid-round1/round1_rbpgain.csv")
    gains = pd.read_csv(src)
    gains = gains[gains["system"].isin(SYSTEMS)].sort_values(["system", "topic", "rank"])
    qrels: dict[tuple[int, str], int] = {}
    for system, rows in gains.groupby("system", sort=False):
        lines = []
        for row in rows.itertuples(index=False):
            doc = f"{row.topic}-{system}-{row.rank}"
            grade = round(2 * row.score / (0.2 * 0.8 ** (row.rank - 1)))
            qrels[(row.topic, doc)] = grade
            score = max(0, (9 - row.rank) // 2) / 4
            lines.append(f"{row.topic} Q0 {doc} {row.rank} {score} {system}\n")
        (HERE / f"trec-covid-r1.{system}.run").write_text("".join(lines), encoding="utf-8")
    text = "".join(f"{t} 0 {d} {g}\n" for (t, d), g in sorted(qrels.items()))
    (HERE / "trec-covid-r1.qrels").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
