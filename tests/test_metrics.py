"""Every metric against a record-by-record computation in plain Python."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search_tables import Table, tables

from blendin.errors import BlendinError
from blendin.metrics import (
    CellCosts,
    class_metrics,
    normalized_weights,
    utility_of_node,
)


def brute_metrics(t: Table, levels, suppressed_tuples: set, weights) -> dict[str, float]:
    """The metrics from their definitions, one record and one cell at a time."""
    names = t.names
    n, q = len(t.records), len(names)
    total_w = sum(weights)
    loss = ncp = prec = bits = 0.0
    freq = [Counter(r[i] for r in t.records) for i in range(q)]
    kept_classes: Counter = Counter()
    n_sup = 0
    for rec in t.records:
        sup = rec in suppressed_tuples
        n_sup += sup
        gen = []
        for i, name in enumerate(names):
            rows, lv, w = t.rows[name], levels[i], weights[i]
            height = len(rows[0])
            if sup:
                loss += w
                ncp += w
                prec += w
                bits += w * -math.log2(freq[i][rec[i]] / n)
                continue
            label = t.label(i, rec[i], lv)
            gen.append(label)
            covered = [r[0] for r in rows if r[lv] == label]
            if name in t.numbers:
                nums = t.numbers[name]
                span = max(nums.values()) - min(nums.values())
                width = max(nums[v] for v in covered) - min(nums[v] for v in covered)
                cell_loss = cell_ncp = width / span if span else 0.0
            else:
                total = len(rows)
                cell_loss = (len(covered) - 1) / (total - 1) if total > 1 else 0.0
                cell_ncp = len(covered) / total if len(covered) > 1 else 0.0
            loss += w * cell_loss
            ncp += w * cell_ncp
            prec += w * (lv / (height - 1) if height > 1 else 0.0)
            mass = sum(freq[i][v] for v in covered)
            bits += w * -math.log2(freq[i][rec[i]] / mass)
        if not sup:
            kept_classes[tuple(gen)] += 1
    return {
        "loss": loss / (n * total_w),
        "gcp": ncp / (n * total_w),
        "precision": prec / (n * total_w),
        "entropy": bits,
        "height": sum(w * lv for w, lv in zip(weights, levels)),
        "discernibility": sum(s * s for s in kept_classes.values()) + n * n_sup,
        "aecs": n / (len(kept_classes) + (1 if n_sup else 0)),
    }


@settings(max_examples=150, deadline=None)
@given(tables(), st.data())
def test_utility_of_node_matches_brute_force(t, data):
    ft = t.frequency_table()
    levels = [data.draw(st.integers(0, h.height - 1)) for h in ft.hierarchies]
    suppressed = np.array(data.draw(st.lists(st.booleans(), min_size=len(ft.counts),
                                             max_size=len(ft.counts))))
    raw_w = data.draw(st.one_of(st.none(), st.lists(st.integers(1, 4), min_size=len(t.names),
                                                    max_size=len(t.names))))
    weights = None if raw_w is None else dict(zip(t.names, raw_w))
    w = normalized_weights(t.names, weights)
    ground = [h.ground for h in ft.hierarchies]
    sup_tuples = {tuple(str(ground[i][c]) for i, c in enumerate(row))
                  for row in ft.tuples[suppressed]}
    got = utility_of_node(ft, levels, suppressed, weights=weights)
    want = brute_metrics(t, levels, sup_tuples, list(w))
    for name, value in want.items():
        assert got[name] == pytest.approx(value, rel=1e-9, abs=1e-9), name


@settings(max_examples=60, deadline=None)
@given(tables())
def test_unsuppressed_totals_match_node_figures(t):
    ft = t.frequency_table()
    costs = CellCosts.of(ft)
    w = np.ones(len(t.names))
    nodes = np.array(np.meshgrid(*[np.arange(h.height) for h in ft.hierarchies],
                                 indexing="ij")).reshape(len(t.names), -1).T
    for metric in ("loss", "gcp", "precision", "entropy", "height"):
        bulk = costs.unsuppressed_all(metric, nodes, w)
        for node, value in zip(nodes, bulk):
            full = utility_of_node(ft, node, costs=costs)[metric]
            assert value == pytest.approx(full, rel=1e-9, abs=1e-9)
            assert costs.unsuppressed(metric, node, w) == pytest.approx(full, abs=1e-9)


def test_class_metrics_by_hand():
    # two kept classes of 2 and 3 records over one QI, 1 record suppressed, n = 6
    m = class_metrics(np.array([2, 3]), n_records=6, n_suppressed=1,
                      loss=np.array([[0.5], [0.0]]), ncp=np.array([[0.6], [0.0]]),
                      share=np.array([[0.5], [0.5]]))
    assert m["loss"] == pytest.approx((2 * 0.5 + 1) / 6)
    assert m["gcp"] == pytest.approx((2 * 0.6 + 1) / 6)
    assert m["precision"] == pytest.approx((5 * 0.5 + 1) / 6)
    assert m["discernibility"] == 4 + 9 + 6
    assert m["aecs"] == 2.0


def test_weights_are_checked():
    with pytest.raises(BlendinError, match="'zip'"):
        normalized_weights(["age"], {"zip": 2})
    with pytest.raises(BlendinError, match="'age'"):
        normalized_weights(["age"], {"age": -1})
    assert normalized_weights(["a", "b"], {"a": 1, "b": 1}).tolist() == [1.0, 1.0]
