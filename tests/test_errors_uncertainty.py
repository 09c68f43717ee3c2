"""The uncertainty tools and every ``seed=`` refuse a bad input in the library's words, naming it.

- :class:`NotaTask` refuses NaN or inf features and labels other than 0/1;
- a seed that is not an integer >= 0 (or a Generator, or None where
  allowed) is the library's error, not numpy's or scikit-learn's;
- the risk-aware choice of ``b`` refuses a metric that gives no number
  (NaN on a validation set where it is undefined) instead of failing with
  "attempt to get argmin of an empty sequence".
"""

from __future__ import annotations

import numpy as np
import pytest

from uncertank import PredictiveSamples, RankedLists
from uncertank.metrics import (
    expected_calibration_error,
    imbalance_sweep,
    recall_at_k,
    reliability_curve,
    resolve_metrics,
)
from uncertank.uncertainty import NotaTask, compare_nota, evaluate_nota, make_nota_task, select_risk_aversion
from uncertank.validation import check_seed


def _task_arrays(n: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((n, 3)), rng.random((n, 3)) * 0.1, np.arange(n) % 2


# --------------------------------------------------------------------------- 3. NotaTask


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nota_task_refuses_non_finite_features_naming_which(bad):
    means, var, y = _task_arrays()
    m = means.copy()
    m[3, 1] = bad
    with pytest.raises(ValueError, match=r"means must be finite; got 1 NaN or inf values, e\.g\. (nan|inf|-inf)"):
        NotaTask(m, var, y)
    v = var.copy()
    v[0, 0] = bad
    with pytest.raises(ValueError, match=r"variances must be finite; got 1 NaN or inf values"):
        NotaTask(means, v, y)


@pytest.mark.parametrize(("labels", "shown"), [([0, 2], "2"), ([0, -1], "-1"), ([0.5, 1], "0.5")])
def test_nota_task_refuses_labels_other_than_0_and_1(labels, shown):
    means, var, _ = _task_arrays()
    y = np.resize(np.asarray(labels), 20)
    with pytest.raises(ValueError, match=rf"y must hold 0 \(ANSW\) or 1 \(NOTA\) only; got 10 other labels, "
                                         rf"e\.g\. {shown}"):
        NotaTask(means, var, y)


def test_nota_task_refuses_mismatched_shapes_and_non_numbers():
    means, var, y = _task_arrays()
    with pytest.raises(ValueError, match=r"y must have one label per row of means, shape \(20,\); got \(5,\)"):
        NotaTask(means, var, y[:5])
    with pytest.raises(ValueError, match=r"variances must have the shape of means \(20, 3\); got \(20, 2\)"):
        NotaTask(means, var[:, :2], y)
    with pytest.raises(ValueError, match=r"means must be 2-D; got an array of shape \(20,\)"):
        NotaTask(means[:, 0], None, y)
    with pytest.raises(TypeError, match="y must be numeric"):
        NotaTask(means, None, np.array(["0", "1"] * 10))
    task = NotaTask(means.tolist(), None, [bool(v) for v in y])  # lists and bools are converted
    assert task.means.dtype == np.float64 and task.y.dtype == np.int64 and task.y.sum() == 10


def test_evaluate_nota_refuses_too_few_queries_of_a_class_and_compare_needs_variances():
    pytest.importorskip("sklearn")
    means, var, _ = _task_arrays()
    y = np.r_[np.ones(3, dtype=int), np.zeros(17, dtype=int)]
    with pytest.raises(ValueError, match=r"task.y must hold at least n_splits=5 queries of each class for "
                                         r"stratified folds; got 17 ANSW \(0\) and 3 NOTA \(1\)"):
        evaluate_nota(NotaTask(means, var, y))
    with pytest.raises(ValueError, match="compare_nota needs variances; make_nota_task got none"):
        compare_nota(NotaTask(means, None, np.arange(20) % 2))
    with pytest.raises(TypeError, match="task must be a NotaTask"):
        evaluate_nota((means, var, y))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- 4. seeds


def _ranked() -> RankedLists:
    rng = np.random.default_rng(0)
    return RankedLists.from_dense(rng.random((6, 4)), np.eye(4, dtype=int)[np.arange(6) % 4])


@pytest.mark.parametrize(
    ("seed", "error", "message"),
    [
        (-1, ValueError, "seed must be an integer >= 0, a numpy Generator or None; got -1"),
        (1.5, TypeError, "seed must be an integer >= 0, a numpy Generator or None; got float 1.5"),
        ("7", TypeError, "seed must be an integer >= 0, a numpy Generator or None; got str '7'"),
        (True, TypeError, "seed must be an integer >= 0, a numpy Generator or None; got bool True"),
    ],
)
def test_a_bad_seed_is_the_librarys_error(seed, error, message):
    probs, labels = [0.1, 0.2, 0.8, 0.9], [0, 1, 1, 0]
    calls = [
        lambda: make_nota_task(_ranked(), seed=seed),
        lambda: expected_calibration_error(probs, labels, balanced=True, seed=seed),
        lambda: expected_calibration_error(probs, labels, balanced=True, seed=seed, n_subsamples=2),
        lambda: reliability_curve(probs, labels, balanced=True, seed=seed),
        lambda: imbalance_sweep([[0.9, 0.2, 0.6]], [[1, 0, 0]], seed=seed),
        lambda: resolve_metrics([{"name": "ece", "balanced": True, "seed": seed}]),
        lambda: resolve_metrics([{"name": "mce", "balanced": True, "seed": seed}]),
        lambda: check_seed(seed),
    ]
    for call in calls:
        with pytest.raises(error, match=message):
            call()


@pytest.mark.parametrize(
    ("seed", "error", "message"),
    [
        (-1, ValueError, "seed must be an integer >= 0 and <= 4294967295; got -1"),
        (2**32, ValueError, "seed must be an integer >= 0 and <= 4294967295; got 4294967296"),
        (None, TypeError, "seed must be an integer >= 0 and <= 4294967295; got NoneType None"),
        (np.random.default_rng(0), TypeError, "seed must be an integer >= 0 and <= 4294967295; got Generator"),
    ],
)
def test_the_seed_of_the_nota_forest_is_an_integer_scikit_learn_takes(seed, error, message):
    means, var, y = _task_arrays()
    with pytest.raises(error, match=message):
        evaluate_nota(NotaTask(means, var, y), seed=seed)
    with pytest.raises(error, match=message):
        compare_nota(NotaTask(means, var, y), seed=seed)


def test_good_seeds_pass_as_they_are():
    gen = np.random.default_rng(0)
    assert check_seed(gen) is gen
    assert check_seed(None) is None
    assert check_seed(np.int64(3)) == 3 and type(check_seed(np.int64(3))) is int
    assert check_seed(2**70) == 2**70  # numpy takes any non-negative integer
    with pytest.raises(TypeError, match="seed must be an integer >= 0 or None; got Generator"):
        check_seed(gen, generator=False)
    probs, labels = [0.1, 0.2, 0.8, 0.9, 0.3], [0, 1, 1, 0, 0]
    a = expected_calibration_error(probs, labels, balanced=True, seed=np.int64(4))
    assert a == expected_calibration_error(probs, labels, balanced=True, seed=4)
    assert make_nota_task(_ranked(), seed=np.random.default_rng(1)).means.shape == (6, 3)


# --------------------------------------------------------------------------- 5. the choice of b


def _samples() -> tuple[PredictiveSamples, list[int]]:
    draws = np.random.default_rng(0).random((5, 6))
    return PredictiveSamples(draws, np.array([0, 3, 6])), [1, 0, 0, 0, 1, 0]


def test_a_metric_without_a_value_on_the_validation_set_is_named_with_its_b():
    samples, labels = _samples()
    with pytest.raises(ValueError, match=r"metric must return a finite number to choose b; got nan at b=-1\.0"):
        select_risk_aversion(samples, labels, lambda r: float("nan"))  # was: argmin of an empty sequence
    seen: list[float] = []

    def undefined_past_zero(r):
        seen.append(1)
        return np.inf if len(seen) > 2 else 0.5

    with pytest.raises(ValueError, match=r"got inf at b=-0\.2"):
        select_risk_aversion(samples, labels, undefined_past_zero, grid=[-1.0, -0.5, -0.2, 0.0])


def test_the_choice_of_b_refuses_empty_inputs_and_non_numbers():
    samples, labels = _samples()

    def r1(r):
        return recall_at_k(r, k=1)

    with pytest.raises(ValueError, match=r"grid must not be empty; got an array of shape \(0,\)"):
        select_risk_aversion(samples, labels, r1, grid=[])
    with pytest.raises(ValueError, match=r"labels must not be empty; got an array of shape \(0,\)"):
        select_risk_aversion(samples, [], r1)
    with pytest.raises(ValueError, match=r"labels must have shape \(6,\); got \(2,\)"):
        select_risk_aversion(samples, [1, 0], r1)
    with pytest.raises(TypeError, match=r"metric must return a real number; got NoneType None at b=-1\.0"):
        select_risk_aversion(samples, labels, lambda r: None)
    with pytest.raises(TypeError, match=r"metric must be callable \(RankedLists -> float\); got str"):
        select_risk_aversion(samples, labels, "recall_at_k")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="weights must be one of 'uniform', 'dcg'; got 'flat'"):
        select_risk_aversion(samples, labels, r1, weights="flat")  # type: ignore[arg-type]
    assert select_risk_aversion(samples, labels, r1, grid=[0.0, 0.5]).b == 0.0
