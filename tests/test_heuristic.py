"""The anytime heuristic, algorithm auto and the recoding of suppressed records.

The heuristic is never unsafe: on random small tables, where exhaustive search knows the
optimum, its node is acceptable (the independent checker passes its release) and its figure
is never below the optimum; with no budget it proves the optimum. Recoding the suppressed
records never suppresses more, and its releases pass the checker.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search import cases, run
from test_search_tables import tables

from blendin.anonymize import anonymize
from blendin.check import check
from blendin.engines.kernels import blanked, recode_all_marked
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.lattice import Checker
from blendin.metrics import utility_of_node
from blendin.models import (
    AverageRisk,
    DistinctLDiversity,
    KAnonymity,
    KMap,
    PopulationUniqueness,
    RecursiveCLDiversity,
    TCloseness,
)
from blendin.plan import plan_node
from blendin.search import find
from blendin.search.remainder import Part, parts_utility, recode_remainder
from blendin.spec import Spec


def released_ok(t, models, max_sup, levels) -> bool:
    """The release at ``levels`` passes the independent checker."""
    ft = t.frequency_table()
    recoding = plan_node(ft, levels, models)
    if recoding.suppressed_records > max_sup * ft.n_records + 1e-9:
        return False
    marked, removed = recode_all_marked([pa_table(t)], recoding)
    spec = Spec(quasi_identifiers=dict(t.hierarchies), sensitive=["s"], models=list(models),
                max_suppression=max_sup)
    # as released: the suppressed records show no sensitive value; the classes are compared
    # with the input's distribution
    return check(blanked(marked, removed, ["s"]), spec, population=pa_table(t)).passed


def pa_table(t):
    import pyarrow as pa

    return pa.Table.from_pandas(t.frame(), preserve_index=False)


@settings(max_examples=120, deadline=None)
@given(case=cases(), checks=st.integers(0, 12), seed=st.integers(0, 3))
def test_heuristic_is_never_unsafe_nor_better_than_the_optimum(case, checks, seed):
    t, models, max_sup, metric, policy, weights = case
    ft = t.frequency_table()
    want = run(ft, models, max_sup, metric, policy, weights, "exhaustive")
    try:
        got = find(ft, models, max_suppression=max_sup, metric=metric, policy=policy,
                   weights=weights, algorithm="heuristic", time_limit=None,
                   max_checks=checks, seed=seed)
    except BlendinError as e:
        assert "no generalization" in str(e)
        # only when the top fails (a zero budget checks nothing else) or nothing passes
        assert want is None or not Checker(ft, models, max_sup).check(
            ft.heights and tuple(h - 1 for h in ft.heights)).acceptable
        return
    assert want is not None
    assert got.score >= want.score - 1e-9 * max(1.0, abs(want.score))
    assert released_ok(t, models, max_sup, got.levels)
    suppressed = Checker(ft, models, max_sup).suppressed_tuples(got.levels)
    figures = utility_of_node(ft, got.levels, suppressed, weights=weights)
    assert got.score == pytest.approx(figures[metric], rel=1e-9, abs=1e-9)
    if got.optimal:
        assert got.score == pytest.approx(want.score, rel=1e-9, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(cases())
def test_heuristic_without_budget_proves_the_optimum(case):
    t, models, max_sup, metric, policy, weights = case
    ft = t.frequency_table()
    want = run(ft, models, max_sup, metric, policy, weights, "exhaustive")
    if want is None:
        return
    got = find(ft, models, max_suppression=max_sup, metric=metric, policy=policy,
               weights=weights, algorithm="heuristic", time_limit=None)
    assert got.optimal and got.algorithm == "heuristic"
    assert got.score == pytest.approx(want.score, rel=1e-9, abs=1e-12)
    assert got.levels == want.levels  # ties broken as the exact searches break them
    # the best figure only falls over time; a tie (within 1e-9) may replace the best when
    # the tie rule prefers it, its figure a rounding off
    scores = [s for _, _, s in got.trace]
    assert all(b <= a + 1e-9 * max(1.0, abs(a)) for a, b in zip(scores, scores[1:]))


@pytest.mark.parametrize("policy", ["distribution", "suppression", None])
def test_a_proven_optimum_breaks_ties_as_the_optimal_search(policy):
    # (1, 0) and (0, 1) are both one step up (height 1): (0, 1) keeps 2 classes and
    # suppresses nothing, (1, 0) keeps 1 class and suppresses 5 of the 10 records. The
    # heuristic met (1, 0) first and called it proven optimal without checking (0, 1)
    recs = [("0", "0")] * 4 + [("0", "1")] * 4 + [("1", "1"), ("1", "0")]
    frame = pd.DataFrame({"q0": [r[0] for r in recs], "q1": [r[1] for r in recs],
                          "s": list("aaabaaaaab")})
    flat = Hierarchy.from_rows([["0", "*"], ["1", "*"]])
    ft = FrequencyTable.from_table(frame, {"q0": flat, "q1": flat}, ["s"])
    models = [KAnonymity(2), DistinctLDiversity("s", 2)]
    want = find(ft, models, max_suppression=0.5, metric="height", policy=policy,
                algorithm="optimal")
    for checks in (3, None):
        got = find(ft, models, max_suppression=0.5, metric="height", policy=policy,
                   algorithm="heuristic", time_limit=None, max_checks=checks)
        if got.optimal:
            assert (got.levels, got.n_suppressed) == (want.levels, want.n_suppressed) == (
                (0, 1), 0)


def wide_table(n: int = 300, q: int = 8, seed: int = 0) -> FrequencyTable:
    """A table whose lattice (4^8 nodes) the tests treat as large."""
    rng = np.random.default_rng(seed)
    data, hierarchies = {}, {}
    for i in range(q):
        values = [str(v) for v in range(8)]
        hierarchies[f"c{i}"] = Hierarchy.from_rows(
            [[v, f"{int(v) // 2}", f"{int(v) // 4}", "*"] for v in values])
        data[f"c{i}"] = rng.choice(values, n, p=np.linspace(2, 0.5, 8) / 10)
    return FrequencyTable.from_table(pd.DataFrame(data), hierarchies)


def test_zero_budget_returns_the_top():
    ft = wide_table()
    got = find(ft, [KAnonymity(3)], algorithm="heuristic", max_checks=0)
    assert got.levels == tuple(h - 1 for h in ft.heights) and got.nodes_checked == 1
    got = find(ft, [KAnonymity(3)], algorithm="heuristic", time_limit=0)
    assert got.levels == tuple(h - 1 for h in ft.heights)


def test_zero_budget_error_when_even_the_top_fails():
    race = Hierarchy.from_rows([["a", "a"], ["b", "b"]])
    ft = FrequencyTable.from_table(pd.DataFrame({"race": ["a", "a", "b"]}), {"race": race})
    with pytest.raises(BlendinError, match="no generalization"):
        find(ft, [KAnonymity(2)], algorithm="heuristic", max_checks=0)


def test_same_seed_same_answer_and_budget_in_checks():
    ft = wide_table()
    runs = [find(ft, [KAnonymity(4)], max_suppression=0.05, algorithm="heuristic",
                 time_limit=None, max_checks=150, seed=7) for _ in range(2)]
    assert runs[0].levels == runs[1].levels and runs[0].score == runs[1].score
    assert [c for _, c, _ in runs[0].trace] == [c for _, c, _ in runs[1].trace]
    assert runs[0].nodes_checked <= 150
    # more budget never ends worse (the path is the same, only longer)
    longer = find(ft, [KAnonymity(4)], max_suppression=0.05, algorithm="heuristic",
                  time_limit=None, max_checks=400, seed=7)
    assert longer.score <= runs[0].score


def test_heuristic_beats_datafly_on_a_wide_table():
    ft = wide_table(600)
    greedy = find(ft, [KAnonymity(4)], max_suppression=0.05, algorithm="datafly")
    got = find(ft, [KAnonymity(4)], max_suppression=0.05, algorithm="heuristic",
               time_limit=None, max_checks=600)
    assert got.score <= greedy.score


def test_progress_shows_checks_and_best_figure():
    ft = wide_table()
    calls = []

    class Show:
        shows_best = True

        def __call__(self, done, total, best=None):
            calls.append((done, total, best))

    got = find(ft, [KAnonymity(3)], max_suppression=0.05, algorithm="heuristic",
               time_limit=None, max_checks=50, progress=Show())
    assert calls[-1][0] == got.nodes_checked and calls[0][1] == 50
    bests = [b for _, _, b in calls if b is not None]
    assert bests[-1] == pytest.approx(got.score) and bests == sorted(bests, reverse=True)


def test_auto_runs_optimal_on_small_lattices_and_heuristic_on_large():
    ft = wide_table()
    small = find(ft, [KAnonymity(3)], max_suppression=0.05)
    exact = find(ft, [KAnonymity(3)], max_suppression=0.05, algorithm="optimal")
    assert small.algorithm == "optimal" and small.optimal and "exact search" in small.reason
    assert small.levels == exact.levels
    large = find(ft, [KAnonymity(3)], max_suppression=0.05, max_nodes=1000, max_checks=40)
    assert large.algorithm == "heuristic" and "anytime heuristic" in large.reason
    # t-closeness with suppression prunes little: a lower limit
    ft2 = wide_table(q=7)
    tight = find(ft2, [KAnonymity(3)], max_suppression=0.05, max_checks=20)
    assert tight.algorithm == "optimal"


def test_a_node_not_proven_optimal_says_why_by_algorithm(tmp_path):
    # Datafly and binary search have no budget: "found within the budget" sent users to
    # raise a time limit that changes nothing
    frame = pd.DataFrame({"a": list("0011223344") * 2, "b": list("0123401234") * 2})
    h = Hierarchy.from_rows([[str(v), f"{v // 2}x", "*"] for v in range(5)])
    for algorithm, why in (("datafly", "greedy climb"), ("binary", "k-minimal node"),
                           ("heuristic", "budget of time and checks")):
        spec = Spec(quasi_identifiers={"a": h, "b": h}, models=[KAnonymity(3)],
                    algorithm=algorithm, max_checks=1 if algorithm == "heuristic" else None)
        result = anonymize(frame, spec)
        assert result.proven_optimal is False
        assert "proven optimal: no (" in result.summary() and why in result.summary()
        assert ("budget" in result.summary()) == (algorithm == "heuristic")
        path = tmp_path / f"{algorithm}.html"
        result.report(path)
        assert why in path.read_text()


def test_budget_errors_name_the_key():
    ft = wide_table()
    with pytest.raises(BlendinError, match="time_limit"):
        find(ft, [KAnonymity(3)], algorithm="heuristic", time_limit=-1)
    with pytest.raises(BlendinError, match="max_checks"):
        find(ft, [KAnonymity(3)], algorithm="heuristic", max_checks=-5)


def test_anonymize_says_what_ran_and_why():
    ft_rows = wide_table(200)
    frame = pd.DataFrame({n: [str(h.labels[0][c]) for c in ft_rows.tuples[:, i].repeat(
        ft_rows.counts)] for i, (n, h) in enumerate(zip(ft_rows.qi_names, ft_rows.hierarchies))})
    spec = Spec(quasi_identifiers=dict(zip(ft_rows.qi_names, ft_rows.hierarchies)),
                models=[KAnonymity(3)], max_suppression=0.05)
    result = anonymize(frame, spec, max_checks=30, time_limit=None)
    assert result.algorithm == "optimal" and result.requested_algorithm == "auto"
    assert result.proven_optimal is True and "proven optimal: yes" in result.summary()
    heur = anonymize(frame, spec, algorithm="heuristic", max_checks=30, time_limit=None)
    assert heur.algorithm == "heuristic" and heur.to_dict()["proven_optimal"] in (True, False)
    assert heur.nodes_checked <= 31  # the budget, plus the final re-check of the node


# -- recoding the suppressed records ---------------------------------------------------------


@st.composite
def recode_cases(draw):
    t = draw(tables(max_records=40, n_secrets=3))
    n = len(t.records)
    models = [KAnonymity(draw(st.integers(2, max(2, min(4, n)))))]
    extra = draw(st.sampled_from(["none", "distinct", "closeness", "uniques", "risk"]))
    if extra == "distinct" and len(set(t.secret)) >= 2:
        models.append(DistinctLDiversity("s", 2))
    elif extra == "closeness":
        models.append(TCloseness("s", draw(st.sampled_from([0.3, 0.5]))))
    elif extra == "uniques":  # models of the whole table: tested on the union of the parts
        models = [PopulationUniqueness(draw(st.sampled_from([0.02, 0.1])), population=500)]
    elif extra == "risk":
        models = [AverageRisk(draw(st.sampled_from([0.2, 0.4])))]
    max_sup = draw(st.sampled_from([0.1, 0.25, 0.5]))
    return t, models, max_sup


@settings(max_examples=60, deadline=None)
@given(recode_cases())
def test_recode_suppressed_passes_the_checker_and_never_suppresses_more(case):
    t, models, max_sup = case
    spec = Spec(quasi_identifiers=dict(t.hierarchies), sensitive=["s"], models=models,
                max_suppression=max_sup, algorithm="optimal")
    try:
        plain = anonymize(t.frame(), spec)
    except BlendinError as e:
        assert "no generalization" in str(e) or "larger than the table" in str(e)
        return
    recoded = anonymize(t.frame(), spec, recode_suppressed=True)  # the checker ran inside
    assert recoded.check.passed
    assert recoded.suppressed <= plain.suppressed
    assert recoded.recovered == plain.suppressed - recoded.suppressed
    assert recoded.levels == plain.levels
    assert len(recoded.data) == len(plain.data) + recoded.recovered
    # the release with the suppressed rows kept as * passes the checker again, outside
    # anonymize (t-closeness compares each class with the input's distribution, all records)
    kept = anonymize(t.frame(), spec, recode_suppressed=True, suppressed="keep")
    spec_check = check(kept.data, spec, population=t.frame())
    assert spec_check.passed and spec_check.classes == recoded.classes


@settings(max_examples=60, deadline=None)
@given(recode_cases())
def test_parts_utility_adds_up_from_each_part(case):
    """The loss of a release in parts, from each part's own figures (utility_of_node with
    the other tuples counted as suppressed)."""
    t, models, max_sup = case
    ft = t.frequency_table()
    try:
        levels = find(ft, models, max_suppression=max_sup, algorithm="optimal").levels
    except BlendinError as e:
        assert "no generalization" in str(e) or "larger than the table" in str(e)
        return
    main = Part(levels, ~Checker(ft, models, max_sup).suppressed_tuples(levels))
    parts = [main, *recode_remainder(ft, main, models)]
    got, sizes = parts_utility(ft, parts)
    n, q = ft.n_records, len(ft.qi_names)
    kept = 0.0
    for p in parts:
        loss = utility_of_node(ft, p.levels, ~p.tuples)["loss"]
        kept += loss * n * q - (n - p.records(ft)) * q
    released = sum(p.records(ft) for p in parts)
    assert got["loss"] == pytest.approx((kept + (n - released) * q) / (n * q), abs=1e-9)
    assert int(sizes.sum()) == released


def adult_like():
    """Records of which a handful are unique at the best node but pair up when coarser."""
    rows = [("31", "m")] * 5 + [("35", "f")] * 5 + [("52", "m"), ("44", "m"), ("67", "f"),
                                                    ("78", "f")]
    age = Hierarchy.from_rows([[a, f"{a[0]}0-{a[0]}9", "*"] for a in
                               ("31", "35", "52", "44", "67", "78")])
    sex = Hierarchy.from_rows([["m", "*"], ["f", "*"]])
    frame = pd.DataFrame(rows, columns=["age", "sex"])
    spec = Spec(quasi_identifiers={"age": age, "sex": sex}, models=[KAnonymity(2)],
                max_suppression=0.3)
    return frame, spec


def test_recode_suppressed_worked_example():
    frame, spec = adult_like()
    plain = anonymize(frame, spec, keep_order=True)
    assert plain.levels == {"age": 0, "sex": 0} and plain.suppressed == 4
    recoded = anonymize(frame, spec, recode_suppressed=True, keep_order=True)
    assert recoded.suppressed == 0 and recoded.recovered == 4
    part = recoded.recoded_parts[0]
    assert part["records"] == 4
    assert part["levels"] == {"age": 2, "sex": 0}
    tail = recoded.data.iloc[10:]
    assert tail.values.tolist() == [["*", "m"], ["*", "m"], ["*", "f"], ["*", "f"]]
    assert "part 2: 4 suppressed records recovered" in recoded.summary()
    assert recoded.to_dict()["recovered"] == 4


def test_recovered_records_never_break_a_model_of_the_whole_table():
    # recovered at a coarser node, the two suppressed records would raise the estimated
    # population uniques of the whole release past the threshold: they stay suppressed
    age = Hierarchy.from_rows([[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*"]
                               for a in range(40)])
    frame = pd.DataFrame([("a", 0)] * 3 + [("a", 1)] * 2 + [("a", a) for a in (2, 3, 10, 20)]
                         + [("b", 0)], columns=["s", "age"])
    spec = Spec(quasi_identifiers={"s": Hierarchy.from_rows([["a", "*"], ["b", "*"]]),
                                   "age": age},
                models=[PopulationUniqueness(0.05, population=100)], max_suppression=0.2)
    plain = anonymize(frame, spec)
    recoded = anonymize(frame, spec, recode_suppressed=True)  # the checker ran inside
    assert plain.suppressed == recoded.suppressed == 2 and recoded.recoded_parts == []
    assert recoded.check.models[0].figure == plain.check.models[0].figure <= 0.05


def test_recovered_records_are_tested_against_the_whole_tables_size():
    # k-map's least class size follows the table's size: the remainder of one record, taken
    # as a table of its own, would let its class of one through
    frame = pd.DataFrame({"t": ["a"] * 9 + ["b"]})
    spec = Spec(quasi_identifiers={"t": Hierarchy.from_rows([["a", "*"], ["b", "*"]])},
                models=[KMap(2, population=300)], max_suppression=0.1)
    recoded = anonymize(frame, spec, recode_suppressed=True)  # the checker ran inside
    assert recoded.suppressed == 1 and recoded.recoded_parts == []
    assert recoded.spec.models[0].derived() == 2  # as the whole table left it (the run's)


# -- spec keys and CLI flags ------------------------------------------------------------------


def test_spec_keys_read_and_write_back():
    toml = {"quasi_identifiers": {"sex": {"flat": True}},
            "privacy": [{"model": "k-anonymity", "k": 2}],
            "anonymization": {"algorithm": "heuristic", "time_limit": 3, "max_checks": 500,
                              "seed": 4, "recode_suppressed": True}}
    spec = Spec.from_dict(toml)
    assert (spec.algorithm, spec.time_limit, spec.max_checks, spec.seed,
            spec.recode_suppressed) == ("heuristic", 3.0, 500, 4, True)
    again = Spec.from_dict(spec.to_dict())
    assert (again.time_limit, again.max_checks, again.seed, again.recode_suppressed) == (
        3.0, 500, 4, True)
    assert Spec.from_dict({k: v for k, v in toml.items() if k != "anonymization"}).algorithm \
        == "auto"
    for key, bad in (("time_limit", -1), ("max_checks", 1.5), ("seed", "x")):
        with pytest.raises(BlendinError, match=key):
            Spec.from_dict({**toml, "anonymization": {key: bad}})


def test_cli_flags(tmp_path):
    from click.testing import CliRunner

    from blendin.cli import main

    frame, _ = adult_like()
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    spec = tmp_path / "spec.toml"
    spec.write_text('[quasi_identifiers]\nage = { csv = "age.csv" }\nsex = { flat = true }\n'
                    '[[privacy]]\nmodel = "k-anonymity"\nk = 2\n'
                    '[anonymization]\nmax_suppression = 0.3\n')
    (tmp_path / "age.csv").write_text("\n".join(
        f"{a};{a[0]}0-{a[0]}9;*" for a in ("31", "35", "52", "44", "67", "78")))
    out = tmp_path / "out.csv"
    run = CliRunner().invoke(main, ["anonymize", str(data), "--spec", str(spec), "-o", str(out),
                                    "--algorithm", "heuristic", "--max-checks", "3",
                                    "--seed", "2", "--recode-suppressed", "--json"])
    assert run.exit_code == 0, run.output
    payload = json.loads(run.output)
    assert payload["algorithm"] == "heuristic" and payload["nodes_checked"] <= 4
    assert payload["suppressed"] + payload["recovered"] <= 4
    plain = CliRunner().invoke(main, ["anonymize", str(data), "--spec", str(spec), "-o",
                                      str(out), "--force"])
    assert "auto: lattice of 6 nodes" in plain.output and "proven optimal: yes" in plain.output
    bad = CliRunner().invoke(main, ["anonymize", str(data), "--spec", str(spec), "-o",
                                    str(out), "--time-limit", "-2"])
    assert bad.exit_code == 2 and "--time-limit" in bad.output


def test_report_shows_both_parts(tmp_path):
    frame, spec = adult_like()
    recoded = anonymize(frame, spec, recode_suppressed=True)
    html = recoded.report(tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Part 2: suppressed records recovered" in html and "Proven optimal" in html
    assert "age 2, sex 0" in html


def test_recode_suppressed_is_for_full_domain_searches():
    frame, spec = adult_like()
    with pytest.raises(BlendinError, match="recode_suppressed.*mondrian"):
        anonymize(frame, spec, algorithm="mondrian", recode_suppressed=True)


def test_heuristic_finds_a_node_below_a_failing_top_when_the_models_are_not_monotone():
    """Recursive (c,l)-diversity with suppression: the Datafly climb meets no acceptable node
    and the top fails, so only the proof phase finds (0, 0, 1), before any best node."""
    rows = {"q0": [["0", "*"], ["1", "*"]],
            "q1": [["0", "a", "x"], ["1", "b", "y"], ["2", "a", "x"], ["3", "a", "x"]],
            "q2": [["0", "*"], ["1", "*"]]}
    frame = pd.DataFrame([("0", "0", "0"), ("0", "0", "0"), ("1", "0", "0"), ("0", "1", "0"),
                          ("0", "1", "1")], columns=["q0", "q1", "q2"])
    frame["s"] = ["a", "b", "a", "a", "b"]
    ft = FrequencyTable.from_table(frame, {q: Hierarchy.from_rows(r) for q, r in rows.items()},
                                   ["s"])
    models = [KAnonymity(1), RecursiveCLDiversity("s", 2.0, 2)]
    want = find(ft, models, max_suppression=0.25, metric="loss", algorithm="exhaustive")
    got = find(ft, models, max_suppression=0.25, metric="loss", algorithm="heuristic",
               time_limit=None)
    assert got.levels == want.levels == (0, 0, 1) and got.optimal
