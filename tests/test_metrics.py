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
from blendin.hierarchy.arx import from_csv
from blendin.hierarchy.builders import restrict
from blendin.hierarchy.core import Hierarchy, domain_shares
from blendin.metrics import CellCosts, arx_loss, class_metrics, normalized_weights, utility_of_node


def brute_metrics(t: Table, levels, suppressed_tuples: set, weights) -> dict[str, float]:
    """The metrics from their definitions, one record and one cell at a time."""
    names = t.names
    n, q = len(t.records), len(names)
    total_w = sum(weights)
    loss = ncp = prec = bits = 0.0
    arx_sums = [0.0] * q
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
                arx_sums[i] += 1.0
                loss += w
                ncp += w
                prec += w
                bits += w * -math.log2(freq[i][rec[i]] / n)
                continue
            label = t.label(i, rec[i], lv)
            gen.append(label)
            covered = [r[0] for r in rows if r[lv] == label]
            arx_sums[i] += len(covered) / len(rows)
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
        "arx-loss": brute_arx_loss(arx_sums, n, [len(t.rows[nm]) for nm in names], weights),
    }


def brute_arx_loss(sums, n, domains, weights) -> float:
    """ARX's Loss (MetricMDNMLoss, gs-factor 0.5, geometric mean) from its definition."""
    top = max(weights)
    product = 1.0
    for total, d, w in zip(sums, domains, weights):
        low = n / d
        norm = max((total - low) / (n - low), 0.0) if n > low else 0.0
        norm = math.floor(norm * 1e10) / 1e10
        product *= (norm * w / top + 1.0) ** (1.0 / len(sums))
    return product - 1.0


@settings(max_examples=150, deadline=None)
@given(tables(min_qis=1), st.data())
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
    for metric in ("loss", "gcp", "precision", "entropy", "height", "arx-loss"):
        bulk = costs.unsuppressed_all(metric, nodes, w)
        for node, value in zip(nodes, bulk):
            full = utility_of_node(ft, node, costs=costs)[metric]
            assert value == pytest.approx(full, rel=1e-9, abs=1e-9)
            if metric != "arx-loss":
                assert costs.unsuppressed(metric, node, w) == pytest.approx(full, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(t=tables(min_qis=1), data=st.data())
def test_arx_loss_bounds_are_arx_loss_of_every_node_exactly(t, data):
    """The bounds gathered from per-(QI, level) factors equal arx_loss of each node's sums
    to the last bit (ties between nodes are decided on them), weights included."""
    ft = t.frequency_table()
    costs = CellCosts.of(ft)
    w = np.array([data.draw(st.sampled_from([0.5, 1.0, 2.0])) for _ in t.names])
    nodes = np.array(np.meshgrid(*[np.arange(h.height) for h in ft.hierarchies],
                                 indexing="ij")).reshape(len(t.names), -1).T
    want = arx_loss(costs.arx_aggregates(nodes), costs.n_records, costs.domain_sizes, w)
    assert np.array_equal(costs.unsuppressed_all("arx-loss", nodes, w), want)


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


def test_arx_loss_by_hand():
    # one QI, domain of 4 values (a, b in the data, c, d only in the hierarchy file):
    # level 1 groups {a, b, c} and {d}; 3 records, 1 suppressed
    whole = Hierarchy.from_rows([["a", "abc"], ["b", "abc"], ["c", "abc"], ["d", "d"]])
    h = restrict(whole, np.array(["a", "b"], dtype=object), "x", "")
    assert h.domain_size == 4 and h.domain_leaves[1].tolist() == [3]
    assert domain_shares(h, 1).tolist() == [0.75]
    # kept: 2 records at "abc" (share 3/4 each); suppressed: 1 (costs 1)
    # A = 2 * 0.75 + 1 = 2.5; L = (2.5 - 3/4) / (3 - 3/4) = 7/9
    m = class_metrics(np.array([2]), n_records=3, n_suppressed=1, arx_share=np.array([[0.75]]),
                      domain_sizes=np.array([4]))
    assert m["arx-loss"] == pytest.approx(7 / 9)
    # two QIs at 0 and 1: the geometric mean of 1 + L, minus 1
    assert arx_loss(np.array([3 / 4, 3.0]), 3, np.array([4, 4])) == pytest.approx(
        math.sqrt(2) - 1)
    # weights scale to a maximum of 1: the second QI's weight halves its loss
    assert arx_loss(np.array([3.0, 3.0]), 3, np.array([4, 4]), np.array([2, 1])) == (
        pytest.approx(math.sqrt(2 * 1.5) - 1))


def test_arx_loss_counts_repeated_rows_of_a_file_as_arx_does(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("1;1-2;*\n2;1-2;*\n2;1-2;*\n3;3;*\n")  # "2" listed twice
    h = from_csv(path).build(np.array(["1", "2", "3"], dtype=object), "x")
    assert h.domain_size == 4
    assert h.domain_leaves[0].tolist() == [1, 2, 1]
    assert domain_shares(h, 1).tolist() == [0.75, 0.25]


@settings(max_examples=40, deadline=None)
@given(t=tables(min_qis=1), data=st.data())
def test_arx_loss_scores_of_checked_nodes(t, data):
    """The search's arx-loss of a checked node (from per-level factors when nothing is
    suppressed, from the sums otherwise) against arx_loss of the node's release."""
    from blendin.models import KAnonymity
    from blendin.search.common import Context

    ft = t.frequency_table()
    k = data.draw(st.integers(1, min(3, len(t.records))))
    max_sup = data.draw(st.sampled_from([0.0, 0.5, 1.0]))
    ctx = Context(ft, [KAnonymity(k)], max_suppression=max_sup, metric="arx-loss",
                  policy=None, weights=None, progress=None)
    for _ in range(4):
        levels = tuple(data.draw(st.integers(0, h.height - 1)) for h in ft.hierarchies)
        result = ctx.check(levels)
        if not result.acceptable:
            continue
        suppressed = ctx.checker.suppressed_tuples(levels)
        want = utility_of_node(ft, levels, suppressed)["arx-loss"]
        # ARX rounds each QI's share to 10 decimals: sums added in another order may land
        # on either side of a rounding step (the search's ties are within 1e-9 too)
        assert ctx.score(result) == pytest.approx(want, rel=1e-9, abs=1e-9)
        if not suppressed.any():
            costs = CellCosts.of(ft)
            exact = arx_loss(costs.arx_aggregates(np.array([levels]))[0], costs.n_records,
                             costs.domain_sizes, np.ones(len(levels)))
            assert ctx.score(result) == pytest.approx(exact, rel=1e-14, abs=1e-15)


def per_level_costs(ft):
    """The cell costs one QI and one level at a time (the straightforward computation)."""
    out = {"loss": [], "ncp": [], "log_mass": [], "arx_share": [], "totals": []}
    for i, h in enumerate(ft.hierarchies):
        f = np.bincount(ft.tuples[:, i], weights=ft.counts, minlength=len(h.ground))
        f = f.astype(float)
        for level in range(h.height):
            codes, n_labels = h.codes[level], len(h.labels[level])
            if h.kind in ("numeric", "date") and h.numbers is not None:
                lo, hi = np.full(n_labels, np.inf), np.full(n_labels, -np.inf)
                np.fmin.at(lo, codes, h.numbers)
                np.fmax.at(hi, codes, h.numbers)
                width = np.where(np.isfinite(hi - lo), hi - lo, 0.0)
                span = (np.nanmax(h.numbers) - np.nanmin(h.numbers)
                        if np.isfinite(h.numbers).any() else 0.0)
                loss = ncp = width / span if span > 0 else np.zeros_like(width)
            else:
                leaves = np.bincount(codes, minlength=n_labels).astype(float)
                total = len(h.ground)
                loss = (leaves - 1) / (total - 1) if total > 1 else np.zeros_like(leaves)
                ncp = np.where(leaves > 1, leaves / max(total, 1), 0.0)
            mass = np.bincount(codes, weights=f, minlength=n_labels)
            log_mass = np.log2(np.where(mass > 0, mass, 1.0))
            arx = domain_shares(h, level)
            for name, value in (("loss", loss), ("ncp", ncp), ("log_mass", log_mass),
                                ("arx_share", arx)):
                out[name].append(value)
            out["totals"].append([f @ loss[codes], f @ ncp[codes], f @ log_mass[codes],
                                  f @ arx[codes]])
    return out


@settings(max_examples=80, deadline=None)
@given(tables(min_qis=1))
def test_cell_costs_equal_the_per_level_computation_to_the_last_bit(t):
    """The search's bounds and ties rest on these figures: computed for all levels at once,
    they must be the very numbers of the one-level-at-a-time computation."""
    ft = t.frequency_table()
    costs = CellCosts._compute(ft)
    want = per_level_costs(ft)
    for name in ("loss", "ncp", "log_mass", "arx_share"):
        got = [lv for qi in getattr(costs, name) for lv in qi]
        assert len(got) == len(want[name])
        for a, b in zip(got, want[name]):
            assert a.dtype == np.float64 and np.array_equal(a, b), name
    bits = want["totals"]
    for k, name in enumerate(("loss", "gcp")):
        got = [x for qi in costs.totals[name] for x in qi]
        assert got == [b[k] for b in bits], name
    got = [x for qi in costs.totals["arx-loss"] for x in qi]
    assert got == [b[3] for b in bits]


@settings(max_examples=40, deadline=None)
@given(tables(min_qis=1), st.data())
def test_cell_costs_of_tables_on_one_hierarchy_share_only_what_the_hierarchy_fixes(t, data):
    """What depends on the hierarchy alone is made once and shared (read-only); what
    depends on the records is each table's own."""
    ft = t.frequency_table()
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=len(ft.counts),
                                       max_size=len(ft.counts))))
    keep[data.draw(st.integers(0, len(keep) - 1))] = True
    other = ft.subset(keep)
    first, second = CellCosts._compute(ft), CellCosts._compute(other)
    want = per_level_costs(other)
    for name in ("loss", "ncp", "log_mass", "arx_share"):
        got = [lv for qi in getattr(second, name) for lv in qi]
        assert all(np.array_equal(a, b) for a, b in zip(got, want[name], strict=True)), name
    for a, b in zip(first.loss, second.loss):
        assert np.shares_memory(a[0], b[0]) and not b[0].flags.writeable



def test_a_release_that_generalizes_nothing_has_no_entropy_loss():
    """The entropy figure is a difference of two sums of the same records' terms: where no
    value is generalized or suppressed it is 0, not what rounding leaves (-2.9e-11 here),
    while a real loss is kept however small beside the sums."""
    import pyarrow as pa

    import blendin as bl

    i = np.arange(5000)
    rows = pa.table({"age": (17 + i * 7919 % 70).astype(str), "sex": np.where(i % 2, "f", "m"),
                     "race": ["w"] * 5000, "job": ["sales"] * 5000})
    spec = bl.Spec.from_dict({"quasi_identifiers": {
        "age": {"intervals": [5, 10]}, "sex": {"flat": True}, "race": {"flat": True},
        "job": {"flat": True}}, "privacy": [{"model": "k-anonymity", "k": 5}]})
    result = bl.anonymize(rows, spec)
    assert set(result.levels.values()) == {0}
    assert result.utility["entropy"] == 0.0
    # one record of a value generalized with five of another: 6 log2 6 - 5 log2 5 bits
    m = class_metrics(np.array([6]), n_records=6, log_mass=np.array([[math.log2(6)]]),
                      ground_bits=np.array([5 * math.log2(5)]))
    assert m["entropy"] == pytest.approx(6 * math.log2(6) - 5 * math.log2(5))
