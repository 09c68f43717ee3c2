"""TREC run files, qrels and the bundled TREC-COVID round 1 data (in progress)."""

from __future__ import annotations
