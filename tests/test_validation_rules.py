"""The rules added for the internal doors: names, (path, message) pairs and ndarrays checked in constant time."""

from __future__ import annotations

import re

import numpy as np
import pytest

from uncertank.validation import (
    as_float_array,
    check_broadcast,
    check_instances,
    check_keys,
    check_names,
    check_ndarray,
    check_ndim,
    check_nonnegative,
    check_number,
    check_path_messages,
    check_probabilities,
    check_real,
    check_scale,
    check_seed,
    check_tensor,
    check_unit_interval,
)


def test_check_names_passes_a_collection_of_str_as_a_list():
    assert check_names(("a", "b"), "conditions") == ["a", "b"]
    assert check_names([], "conditions") == []
    assert check_names(np.array(["a"]), "conditions") == ["a"]


@pytest.mark.parametrize(("value", "message"), [
    ("in-domain", r"^conditions must be a list of str; got str 'in-domain'$"),
    (0.5, r"^conditions must be a list of str; got float 0.5$"),
    ([0.5], r"^conditions must be a list of str; got float 0.5 among them$"),
    (np.array([0.5, 1.0]), r"^conditions must be a list of str; got float"),
])
def test_check_names_refuses_what_is_no_list_of_names(value, message):
    with pytest.raises(TypeError, match=message):
        check_names(value, "conditions")


def test_check_path_messages_passes_pairs_of_str_as_tuples():
    assert check_path_messages([["study.seed", "must be an integer"]]) == [("study.seed", "must be an integer")]


@pytest.mark.parametrize(("value", "message"), [
    (0.5, r"^errors must be a list of \(path, message\) pairs of str; got float 0.5$"),
    ("abc", r"^errors must be a list of \(path, message\) pairs of str; got str 'abc'$"),
    ([("a",)], r"^errors must be a list of \(path, message\) pairs of str; got \('a',\)$"),
    ([("a", 1)], r"^errors must be a list of \(path, message\) pairs of str; got \('a', 1\)$"),
])
def test_check_path_messages_refuses_anything_else(value, message):
    with pytest.raises(TypeError, match=message):
        check_path_messages(value)


def test_check_ndarray_returns_the_array_itself():
    a = np.array([0.2, 0.9])
    assert check_ndarray(a, "p") is a
    assert check_ndarray(np.zeros((2, 3), dtype=np.int64), "y2", ndim=2, kinds="iu").shape == (2, 3)


@pytest.mark.parametrize(("value", "kwargs", "message"), [
    ([0.2, 0.9], {}, r"^p must be a 1-D ndarray of float; got list \[0.2, 0.9\]$"),
    (np.zeros((2, 2)), {}, r"^p must be a 1-D ndarray of float; got an array of shape \(2, 2\) and dtype float64$"),
    (np.array(["a"]), {}, r"^p must be a 1-D ndarray of float; got an array of shape \(1,\) and dtype <U1$"),
    (np.zeros(2), {"kinds": "iu"}, r"^p must be a 1-D ndarray of int or unsigned int; got an array"),
])
def test_check_ndarray_refuses_another_type_rank_or_dtype(value, kwargs, message):
    with pytest.raises(TypeError, match=message):
        check_ndarray(value, "p", **kwargs)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"kinds": 1}, TypeError, r"^kinds must be numpy dtype kind letters such as 'f' or 'iu'; got 1$"),
    ({"kinds": ""}, TypeError, r"^kinds must be numpy dtype kind letters"),
    ({"kinds": "fz"}, TypeError, r"^kinds must be numpy dtype kind letters"),
    ({"ndim": -1}, ValueError, r"^ndim must be an integer >= 0"),
])
def test_check_ndarray_refuses_a_bad_rule(kwargs, error, message):
    with pytest.raises(error, match=message):
        check_ndarray(np.zeros(2), "p", **kwargs)


def test_check_instances_passes_a_collection_of_the_type_as_a_list():
    assert check_instances((1, 2), "sizes", int, "an int") == [1, 2]
    assert check_instances([], "sizes", int, "an int") == []
    assert check_instances(iter([1]), "sizes", int, "an int") == [1]


@pytest.mark.parametrize(("value", "message"), [
    ("ab", r"^models must be a list of which each item is a module; got str 'ab'$"),
    (0.5, r"^models must be a list of which each item is a module; got float 0.5$"),
    ({"a": 1}, r"^models must be a list of which each item is a module; got dict"),
    (np.array([1, 2]), r"^models must be a list of which each item is a module; got ndarray"),
    ([1, "x"], r"^models must be a list of which each item is a module; got str 'x' at index 1$"),
])
def test_check_instances_names_the_argument_and_the_first_item_of_another_type(value, message):
    with pytest.raises(TypeError, match=message):
        check_instances(value, "models", int, "a module")


def test_check_ndim_reads_the_rank_of_anything_with_one():
    check_ndim(np.zeros((2, 3)), "input_ids", 2)
    check_ndim(np.zeros(3), "labels", (1, 2))
    with pytest.raises(ValueError, match=r"^input_ids must be 2-D; got shape \(3,\)$"):
        check_ndim(np.zeros(3), "input_ids", 2)
    with pytest.raises(ValueError, match=r"^x must be 1-D or 2-D; got shape \(1, 1, 1\)$"):
        check_ndim(np.zeros((1, 1, 1)), "x", (1, 2))
    with pytest.raises(TypeError, match=r"^input_ids must be an array or a tensor \(with ndim\); got list"):
        check_ndim([[1, 2]], "input_ids", 2)
    with pytest.raises(TypeError, match=r"^ndim must be an int or a tuple of ints"):
        check_ndim(np.zeros(3), "x", "1")  # type: ignore[arg-type]


def test_check_probabilities_keeps_an_integer_example_in_its_message():
    with pytest.raises(ValueError, match=r"^labels must lie in \[0, 1\]; got 1 values outside, e.g. 2$"):
        check_probabilities(np.array([0, 2]), "labels")


def test_check_seed_returns_an_int_or_the_generator_given():
    gen = np.random.default_rng(0)
    assert check_seed(gen) is gen
    assert check_seed(np.int64(3), allow_none=False, generator=False) == 3
    with pytest.raises(TypeError, match=r"^seed must be an integer >= 0 or None; got Generator"):
        check_seed(gen, generator=False)


@pytest.mark.parametrize("check, want", [
    (check_real, "a finite number"),
    (check_scale, "a finite number > 0"),
    (check_nonnegative, "a finite number >= 0"),
    (check_unit_interval, "a number in (0, 1)"),
])
@pytest.mark.parametrize("value", [10**400, -(10**400)])
def test_an_integer_past_a_floats_range_is_named_not_an_overflow(check, want, value):
    """float(10**400) raises OverflowError; each numeric rule refuses it as a ValueError naming the argument."""
    with pytest.raises(ValueError, match=rf"^x must be {re.escape(want)}; got an integer of 401 digits, beyond "
                                         r"the range of a float$") as info:
        check(value, "x")
    assert isinstance(info.value.__cause__, OverflowError)


def test_check_number_takes_every_real_and_names_what_is_none():
    assert check_number(np.int64(4), "x") == 4.0 and np.isnan(check_number(np.nan, "x"))
    assert check_number(-np.inf, "x") == -np.inf
    for bad, error in ((True, TypeError), ("1", TypeError), (None, TypeError), (10**400, ValueError)):
        with pytest.raises(error, match=r"^x must be a number"):
            check_number(bad, "x")


def test_as_float_array_lets_through_only_what_it_is_told():
    assert as_float_array([1.0, -np.inf], "c", allow_infinite=True)[1] == -np.inf
    assert np.isnan(as_float_array([np.nan], "p", allow_nan=True)[0])
    assert as_float_array([], "p", allow_empty=True).shape == (0,)
    with pytest.raises(ValueError, match=r"c must be finite \(infinities allowed\); got 1 NaN or inf values"):
        as_float_array([np.nan, np.inf], "c", allow_infinite=True)
    with pytest.raises(ValueError, match=r"p must not be empty"):
        as_float_array([], "p")
    with pytest.raises(ValueError, match=r"x must be finite real numbers; got an integer beyond the range"):
        as_float_array([1, 10**400], "x")
    with pytest.raises(TypeError, match=r"allow_nan must be a bool"):
        as_float_array([1.0], "x", allow_nan=np.array([True, False]))  # type: ignore[arg-type]


def test_check_broadcast_names_every_argument_and_shape():
    assert check_broadcast({"y": (3,), "mu": (2, 1), "phi": ()}) == (2, 3)
    with pytest.raises(ValueError, match=re.escape("y, mu and phi must broadcast together (numpy's rules); got "
                                                   "shapes y (3,), mu (2, 2), phi ()")):
        check_broadcast({"y": (3,), "mu": (2, 2), "phi": ()})


def test_check_keys_lists_what_is_missing():
    check_keys({"a": 1, "b": 2}, "d", ("a", "b"))
    with pytest.raises(ValueError, match=r"^d must hold the keys 'a', 'b' and 'c'; it lacks 'b', 'c'$"):
        check_keys({"a": 1}, "d", ("a", "b", "c"))


def test_check_tensor_is_the_tensor_rule():
    torch = pytest.importorskip("torch")
    t = torch.zeros(2, 3)
    assert check_tensor(t, "x", ndim=2) is t
    assert check_tensor(torch.tensor([1.0, float("inf")]), "x", finite=False).shape == (2,)
    for bad, error, message in (
        (np.zeros(3), TypeError, "x must be a torch tensor; got ndarray"),
        (torch.tensor([True]), TypeError, "x must hold real numbers; got a tensor of torch.bool"),
        (torch.tensor([1j]), TypeError, "x must hold real numbers; got a tensor of torch.complex64"),
        (torch.tensor([float("nan"), 1.0, float("inf")]), ValueError, "x must be finite; got 2 NaN or infinite"),
    ):
        with pytest.raises(error, match="^" + re.escape(message)):
            check_tensor(bad, "x")
    with pytest.raises(ValueError, match=r"^x must be 2-D"):
        check_tensor(torch.zeros(3), "x", ndim=2)
