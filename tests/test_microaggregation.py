"""MDAV microaggregation: groups of k to 2k - 1 records, means that keep the column totals,
and sdcMicro's own groups and information loss on its testdata."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.errors import BlendinError
from blendin.transform.microaggregation import Loss, aggregated, mdav

TESTDATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "testdata.csv"


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 6), st.lists(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=2),
                                   min_size=1, max_size=60))
def test_groups_hold_k_to_2k_minus_1_records_and_keep_the_totals(k, rows):
    x = np.array(rows)
    group = mdav(x, k)
    sizes = np.bincount(group)
    if len(x) < 2 * k:
        assert sizes.tolist() == [len(x)]
    else:
        assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    released = aggregated(x, group)
    assert released.sum(axis=0) == pytest.approx(x.sum(axis=0), rel=1e-9, abs=1e-3)
    # every released tuple is shared by at least k records
    _, counts = np.unique(released, axis=0, return_counts=True)
    assert counts.min() >= min(k, len(x))


def test_loss_by_hand():
    x = np.array([[1.0, 10.0], [3.0, 30.0]])
    loss = Loss.of(x, np.array([[2.0, 20.0], [2.0, 20.0]]))
    assert loss.il1 == pytest.approx(100 * (1 / 1 + 10 / 10 + 1 / 3 + 10 / 30))
    sd = np.array([np.std([1, 3], ddof=1), np.std([10, 30], ddof=1)])
    assert loss.il1s == pytest.approx(((1 + 1) / sd[0] + (10 + 10) / sd[1]) / np.sqrt(2))
    assert loss.squared_error == pytest.approx(1 + 1 + 100 + 100)


def test_missing_values_and_a_bad_k_are_refused():
    with pytest.raises(BlendinError, match="numbers in every cell"):
        mdav(np.array([[1.0], [np.nan]]), 2)
    with pytest.raises(BlendinError, match="k of 1 or more"):
        mdav(np.array([[1.0]]), 0)


@pytest.mark.parametrize("k, groups, il1s, sse", [
    # sdcMicro 5.8.1: microaggregation(x, method = "mdav", aggr = k), dUtility(.., "IL1s")
    (3, 1526, 533.3433570202, 3.5863166981e16),
    (5, 916, 742.6874150435, 6.7697024090e16),
    (10, 458, 1047.2318899819, 1.3165279881e17),
])
def test_sdcmicros_mdav_on_its_testdata(k, groups, il1s, sse):
    if not TESTDATA.is_file():
        pytest.skip("sdcMicro's testdata not available (../shared/data/sdcmicro)")
    x = pd.read_csv(TESTDATA)[["expend", "income", "savings"]].to_numpy(float)
    group = mdav(x, k)
    loss = Loss.of(x, aggregated(x, group))
    assert group.max() + 1 == groups
    assert loss.il1s == pytest.approx(il1s, abs=1e-8)
    assert loss.squared_error == pytest.approx(sse, rel=1e-9)
