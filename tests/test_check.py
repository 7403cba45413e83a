import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.anonymize import anonymize, apply_solution
from blendin.check import check
from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy
from blendin.hierarchy.flat import flat
from blendin.models import (
    BetaLikeness,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from blendin.spec import Spec

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
ADULT_QIS = ["age", "education", "marital-status", "native-country", "race", "salary-class",
             "sex", "workclass"]
FLAT = Hierarchy.from_rows([["x", "*"]])  # the checker never uses QI hierarchies


def spec_for(qis, models, sensitive=(), **kwargs) -> Spec:
    return Spec(quasi_identifiers={q: FLAT for q in qis}, sensitive=list(sensitive),
                models=list(models), **kwargs)


RELEASED = pd.DataFrame({
    "age": ["20-29", "20-29", "20-29", "30-39", "30-39", "{a,b}", "*", "*", "*"],
    "zip": ["021**", "021**", "021**", "021**", "021**", "37-42", "*", "*", "021**"],
    "sex": ["*", "*", "*", "*", "*", "m", "*", "*", "*"],
    "dx": ["flu", "gout", "flu", "flu", "flu", "hiv", "flu", "gout", "gout"],
})


def test_released_labels_known_answer():
    spec = spec_for(["age", "zip", "sex"], [KAnonymity(2), DistinctLDiversity("dx", 2)],
                    ["dx"])
    report = check(RELEASED, spec)
    # classes: (20-29,021**,*) 3, (30-39,021**,*) 2, ({a,b},37-42,m) 1, (*,021**,*) 1;
    # the two all-* rows are suppressed
    assert (report.records, report.classes, report.suppressed) == (9, 4, 2)
    assert report.min_class_size == 1
    assert not report.passed
    k, ell = report.models
    assert (k.passed, k.figure, k.violating_classes, k.violating_records) == (False, 1, 2, 2)
    assert (ell.passed, ell.figure, ell.violating_classes, ell.violating_records) == (
        False, 1, 3, 4)
    assert report.violating_records == 4 and report.violating_classes == 3
    sizes = [p.size for p in report.problems]
    assert sizes == sorted(sizes) == [1, 1, 2]
    assert report.problems[0].values == {"age": "*", "zip": "021**", "sex": "*"}
    assert report.problems[1].violates == ["k-anonymity (k=2)", "distinct-l-diversity (dx, l=2)"]
    assert report.problems[2].values["age"] == "30-39"
    assert all(p.sensitive is None for p in report.problems)
    assert "flu" not in str(report)


def test_show_values():
    spec = spec_for(["age", "zip", "sex"], [DistinctLDiversity("dx", 2)], ["dx"])
    report = check(RELEASED, spec, show_values=True)
    by_age = {p.values["age"]: p.sensitive for p in report.problems}
    assert by_age["30-39"] == {"dx": {"flu": 2}}
    assert "flu: 2" in str(report)
    assert json.loads(report.to_json())["problems"][0]["sensitive"]


def test_passing_table_and_kinds_of_input():
    df = RELEASED.iloc[:5]
    spec = spec_for(["age", "zip", "sex"], [KAnonymity(2)])
    for data in (df, pa.Table.from_pandas(df), pl.from_pandas(df)):
        report = check(data, spec)
        assert report.passed and report.problems == []
        assert (report.classes, report.min_class_size, report.violating_records) == (2, 2, 0)
    assert str(report).startswith("PASSED")


def test_all_suppressed():
    df = pd.DataFrame({"a": ["*"] * 3, "b": ["*"] * 3})
    report = check(df, spec_for(["a", "b"], [KAnonymity(2)]))
    assert report.passed and report.classes == 0 and report.suppressed == 3
    out = report.to_dict()
    assert out["min_class_size"] is None and out["models"][0]["figure"] is None
    json.dumps(out)


def test_missing_values_form_their_own_label():
    df = pd.DataFrame({"a": ["x", None, "", "x"], "b": [1.0, np.nan, np.nan, 1.0]})
    report = check(df, spec_for(["a", "b"], [KAnonymity(2)], missing="?"))
    assert report.passed and report.classes == 2
    assert report.min_class_size == 2


def test_identifier_left_in_release_fails():
    df = RELEASED.assign(ssn="1")
    report = check(df, spec_for(["age", "zip", "sex"], [KAnonymity(1)], identifiers=["ssn"]))
    assert not report.passed and report.identifiers_present == ["ssn"]
    assert all(m.passed for m in report.models)
    assert "ssn" in str(report)


def test_t_closeness_uses_all_records_including_suppressed():
    df = pd.DataFrame({"q": ["a", "a", "b", "b", "*", "*"],
                       "dx": ["flu", "flu", "gout", "gout", "flu", "flu"]})
    # overall over all 6 records: flu 4/6, gout 2/6; class a (1, 0) -> 1/3, b (0, 1) -> 2/3
    report = check(df, spec_for(["q"], [TCloseness("dx", 0.5)], ["dx"]))
    (t,) = report.models
    assert t.figure == pytest.approx(2 / 3)
    assert (t.passed, t.violating_classes, t.violating_records) == (False, 1, 2)


def test_hierarchical_t_closeness_with_spec_hierarchy():
    df = pd.DataFrame({"q": ["a", "a", "b", "b"], "dx": ["flu", "cold", "hiv", "flu"]})
    tree = Hierarchy.from_rows([["flu", "viral-resp", "*"], ["cold", "viral-resp", "*"],
                                ["hiv", "other", "*"]])
    spec = spec_for(["q"], [TCloseness("dx", 0.3, "hierarchical")], ["dx"],
                    sensitive_hierarchies={"dx": tree})
    report = check(df, spec)
    # overall: flu 1/2, cold 1/4, hiv 1/4; class a: flu 1/2, cold 1/2 -> cold +1/4 and
    # hiv -1/4 meet at the root (level 2 of 2): 1/4; class b the same by symmetry
    assert report.models[0].figure == pytest.approx(0.25)
    assert report.passed


def test_models_no_release_of_the_table_can_meet_fail_it():
    """k above the records, l above the values: the table fails (anonymize refuses them)."""
    df = RELEASED
    report = check(df, spec_for(["age"], [KAnonymity(20), DistinctLDiversity("dx", 4)],
                                ["dx"]))
    assert not report.passed and [r.passed for r in report.models] == [False, False]
    assert all(r.violating_records == report.records - report.suppressed
               for r in report.models)
    with pytest.raises(BlendinError, match="k = 20 is larger than the table"):
        anonymize(df, Spec(quasi_identifiers={"age": flat()}, models=[KAnonymity(20)]))


def test_bad_models_for_the_table():
    with pytest.raises(BlendinError, match="k must be a whole number >= 1"):
        KAnonymity(0)
    with pytest.raises(BlendinError, match="t must be between 0 and 1"):
        TCloseness("dx", 1.5)


def test_bad_columns_and_roles():
    with pytest.raises(BlendinError, match=r"no column 'age'.*did you mean 'agee'"):
        check(RELEASED.rename(columns={"age": "agee"}), spec_for(["age"], [KAnonymity(2)]))
    with pytest.raises(BlendinError, match="'age' is both identifier and quasi-identifier"):
        check(RELEASED, spec_for(["age"], [KAnonymity(2)], identifiers=["age"]))
    dupes = pd.DataFrame([["a", "b"]], columns=["age", "age"])
    with pytest.raises(BlendinError, match="duplicate column names"):
        check(dupes, spec_for(["age"], [KAnonymity(1)]))
    with pytest.raises(BlendinError, match="no rows"):
        check(RELEASED.iloc[:0], spec_for(["age"], [KAnonymity(1)]))


def test_bad_files(tmp_path):
    spec = spec_for(["age"], [KAnonymity(1)])
    with pytest.raises(BlendinError, match="does not exist"):
        check(tmp_path / "nope.csv", spec)
    path = tmp_path / "semi.csv"
    path.write_text("age;zip\n20;021\n")
    with pytest.raises(BlendinError, match="--delimiter ';'"):
        check(path, spec, delimiter=",")
    assert check(path, spec).passed
    latin = tmp_path / "latin.csv"
    latin.write_bytes("age;city\n20;Zürich\n".encode("latin-1"))
    with pytest.raises(BlendinError, match="--encoding latin-1"):
        check(latin, spec)
    assert check(latin, spec, encoding="latin-1").records == 1
    (tmp_path / "empty.csv").write_text("age;zip\n")
    with pytest.raises(BlendinError, match="no rows"):
        check(tmp_path / "empty.csv", spec)
    (tmp_path / "dupe.csv").write_text("age;age\n1;2\n")
    with pytest.raises(BlendinError, match="duplicate column names"):
        check(tmp_path / "dupe.csv", spec)


def test_chunked_file_gives_the_same_answer(tmp_path):
    rng = np.random.default_rng(1)
    n = 30_000
    df = pd.DataFrame({"a": rng.choice(["1-5", "6-9", "*"], n), "b": rng.choice(["x", "*"], n),
                       "s": rng.choice(list("pqrs"), n)})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    from blendin.io import Source

    spec = spec_for(["a", "b"], [KAnonymity(5), EntropyLDiversity("s", 3)], ["s"])
    whole = check(df, spec).to_dict()
    chunked = check(Source(path, block_size=1 << 12), spec).to_dict()
    assert whole == chunked
    assert whole["suppressed"] == int(((df.a == "*") & (df.b == "*")).sum())


# -- brute force -------------------------------------------------------------------------


def brute_force(rows, models):
    """Plain-Python grouping: class sizes and per-model figures and verdicts."""
    groups = defaultdict(list)
    suppressed = 0
    for q1, q2, s in rows:
        if q1 == "*" and q2 == "*":
            suppressed += 1
        else:
            groups[(q1, q2)].append(s)
    overall = Counter(s for _, _, s in rows)
    results = []
    for model in models:
        per_class = {}
        for key, values in groups.items():
            counts = Counter(values)
            if isinstance(model, KAnonymity):
                per_class[key] = (len(values), len(values) >= model.k)
            elif isinstance(model, DistinctLDiversity):
                per_class[key] = (len(counts), len(counts) >= model.l)
            elif isinstance(model, EntropyLDiversity):
                h = -sum(c / len(values) * math.log(c / len(values)) for c in counts.values())
                per_class[key] = (math.exp(h), h >= math.log(model.l) - 1e-9)
            elif isinstance(model, TCloseness):
                n, total = len(values), len(rows)
                d = 0.5 * sum(abs(counts[v] / n - overall[v] / total) for v in overall)
                per_class[key] = (d, d <= model.t + 1e-9)
        bad = [k for k, (_, ok) in per_class.items() if not ok]
        figures = [f for f, _ in per_class.values()]
        figure = (max(figures) if isinstance(model, TCloseness) else min(figures)) \
            if figures else None
        results.append((figure, len(bad), sum(len(groups[k]) for k in bad)))
    sizes = [len(v) for v in groups.values()]
    return sizes, suppressed, results


labels = st.sampled_from(["*", "20-29", "30-39", "021**", "{a,b}", ""])
rows_strategy = st.lists(st.tuples(labels, labels, st.sampled_from(["p", "q", "r"])),
                         min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(rows=rows_strategy, k=st.integers(1, 4), ell=st.integers(1, 2),
       t=st.sampled_from([0.0, 0.2, 0.5, 1.0]))
def test_agrees_with_brute_force(rows, k, ell, t):
    # (k above the records, or l above the values: no class holds, a verdict, not an error)
    models = [KAnonymity(k), DistinctLDiversity("s", ell), EntropyLDiversity("s", ell),
              TCloseness("s", t)]
    df = pd.DataFrame(rows, columns=["q1", "q2", "s"])
    spec = spec_for(["q1", "q2"], models, ["s"])
    report = check(df, spec)
    sizes, suppressed, expected = brute_force(rows, models)
    assert report.records == len(rows) and report.suppressed == suppressed
    assert report.classes == len(sizes)
    assert report.min_class_size == (min(sizes) if sizes else None)
    for result, (figure, bad_classes, bad_records) in zip(report.models, expected):
        if figure is None:
            assert math.isnan(result.figure)
        else:
            assert result.figure == pytest.approx(figure)
        assert (result.violating_classes, result.violating_records) == (bad_classes, bad_records)
        assert result.passed == (bad_classes == 0)
    assert report.passed == (all(r.passed for r in report.models)
                             and not report.exposed_suppressed)


@settings(max_examples=30, deadline=None)
@given(rows=rows_strategy, c=st.sampled_from([0.5, 1.0, 2.0, 3.0]), ell=st.integers(1, 3))
def test_recursive_cl_agrees_with_brute_force(rows, c, ell):
    df = pd.DataFrame(rows, columns=["q1", "q2", "s"])
    groups = defaultdict(list)
    for q1, q2, s in rows:
        if (q1, q2) != ("*", "*"):
            groups[(q1, q2)].append(s)
    bad = 0
    for values in groups.values():
        r = sorted(Counter(values).values(), reverse=True)
        bad += not (len(r) >= ell and r[0] < c * sum(r[ell - 1:]))
    distinct = len({s for *_, s in rows})
    if ell > distinct:
        return
    report = check(df, spec_for(["q1", "q2"], [RecursiveCLDiversity("s", c, ell)], ["s"]))
    assert report.models[0].violating_classes == bad


# -- adult -------------------------------------------------------------------------------


def adult() -> pd.DataFrame:
    path = DATA / "adult" / "adult.csv"
    if not path.exists():
        pytest.skip("benchmark data absent")
    return pd.read_csv(path, sep=";", dtype=str, keep_default_na=False)


def test_raw_adult_is_not_2_anonymous():
    df = adult()
    spec = spec_for(ADULT_QIS, [KAnonymity(2), DistinctLDiversity("occupation", 2)],
                    ["occupation"], delimiter=";")
    report = check(DATA / "adult" / "adult.csv", spec)
    sizes = df.groupby(ADULT_QIS).size()
    distinct = df.groupby(ADULT_QIS).occupation.nunique()
    assert not report.passed
    assert (report.records, report.classes) == (30162, len(sizes))
    assert report.min_class_size == sizes.min() == 1
    k, ell = report.models
    assert k.violating_classes == (sizes < 2).sum()
    assert k.violating_records == sizes[sizes < 2].sum()
    assert ell.violating_classes == (distinct < 2).sum()
    assert ell.violating_records == sizes[distinct < 2].sum()
    assert report.violating_records == sizes[(sizes < 2) | (distinct < 2)].sum()


def test_generalized_adult_against_pandas():
    df = adult()
    levels = {"age": 2, "education": 2, "marital-status": 1, "native-country": 1, "race": 1,
              "salary-class": 0, "sex": 0, "workclass": 2}
    released = df.copy()
    for qi, level in levels.items():
        rows = (DATA / "adult" / f"adult_hierarchy_{qi}.csv").read_text().splitlines()
        mapping = {p[0]: p[level] for p in (r.split(";") for r in rows if r)}
        released[qi] = df[qi].map(mapping)
    assert released[ADULT_QIS].notna().all().all()
    # suppress the rows of classes smaller than 5, as a release would
    size = released.groupby(ADULT_QIS)[ADULT_QIS[0]].transform("size")
    released.loc[size < 5, ADULT_QIS] = "*"
    spec = spec_for(ADULT_QIS, [KAnonymity(5), EntropyLDiversity("occupation", 2)],
                    ["occupation"])
    report = check(released, spec)
    kept = released[size >= 5]
    sizes = kept.groupby(ADULT_QIS).size()
    assert report.suppressed == int((size < 5).sum()) > 0
    assert report.classes == len(sizes) and report.min_class_size == sizes.min() >= 5
    assert report.models[0].passed
    shares = kept.groupby(ADULT_QIS).occupation.value_counts(normalize=True)
    entropy = (-(shares * np.log(shares))).groupby(level=list(range(len(ADULT_QIS)))).sum()
    assert report.models[1].figure == pytest.approx(np.exp(entropy.min()))
    assert report.models[1].violating_classes == (entropy < np.log(2) - 1e-9).sum()


def test_check_names_a_t_closeness_model_that_carries_a_built_hierarchy():
    from blendin.check import model_name
    from blendin.hierarchy.core import Hierarchy
    from blendin.models import TCloseness

    tree = Hierarchy.from_rows(
        [["flu", "resp", "*"], ["cold", "resp", "*"], ["gout", "joint", "*"]])
    model = TCloseness("dx", 0.5, distance="hierarchical", hierarchy=tree)
    assert model_name(model) == "t-closeness (dx, t=0.5, distance=hierarchical)"


def test_dictionary_encoded_tuples_are_read_by_their_texts():
    """The checker reads a regrouped table's dictionary columns by their entries' texts:
    two entries holding one text (here across chunks with other dictionaries, and twice in
    one dictionary) are one label, so they can neither split a class nor add diversity."""
    from blendin.check import check_regrouped
    from blendin.codes import COUNT

    def chunk(entries, indices):
        return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()),
                                              pa.array(entries, pa.string()))

    age = pa.chunked_array([chunk(["20-29", "20-29", "*"], [0, 1, 2]),
                            chunk(["*", "20-29"], [1, 0])])
    dx = pa.chunked_array([chunk(["flu", "flu", "hiv"], [0, 1, 2]), chunk(["gout"], [0, 0])])
    encoded = pa.table({"age": age, "dx": dx, COUNT: pa.array([2, 1, 1, 3, 1], pa.int64())})
    plain = pa.table({"age": age.cast(pa.string()), "dx": dx.cast(pa.string()),
                      COUNT: encoded.column(COUNT)})
    spec = spec_for(["age"], [KAnonymity(3), DistinctLDiversity("dx", 2)], ["dx"])
    reports = [check_regrouped(t, spec, ["age", "dx"]) for t in (encoded, plain)]
    # class 20-29 holds 2 + 1 + 3 records of flu, flu and gout: 2 distinct values, not 3
    assert [(r.records, r.classes, r.suppressed, r.passed) for r in reports] == [
        (8, 1, 2, True)] * 2
    assert [m.figure for m in reports[0].models] == [m.figure for m in reports[1].models] == [
        6, 2]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(["a", "b", "", "é", "a b", "*"]),
                                   min_size=1, max_size=5),
                          st.lists(st.integers(0, 4), max_size=8)), max_size=4))
def test_a_dictionary_column_codes_as_its_texts_do(chunks):
    """The labels and row codes the checker reads from a dictionary column (by its entries,
    repeated and unused ones included, in chunks with their own dictionaries) are those of
    the same values as plain text."""
    from blendin.check import _codes

    column = pa.chunked_array(
        [pa.DictionaryArray.from_arrays(pa.array([i % len(entries) for i in rows], pa.int32()),
                                        pa.array(entries, pa.string()))
         for entries, rows in chunks], pa.dictionary(pa.int32(), pa.string()))
    labels, codes = _codes(column)
    plain_labels, plain_codes = _codes(column.cast(pa.string()))
    assert labels.tolist() == plain_labels.tolist() == sorted(set(labels.tolist()))
    assert labels[codes].tolist() == plain_labels[plain_codes].tolist() == column.to_pylist()


def _regrouped(sizes, dx=None):
    """A released table given by its classes' sizes (QI ``q``), regrouped as engines do."""
    from blendin.codes import COUNT

    columns = {"q": [f"c{i}" for i in range(len(sizes))]}
    if dx is not None:
        columns["dx"] = dx
    return pa.table({**columns, COUNT: pa.array(sizes, pa.int64())})


def test_a_share_one_record_over_its_threshold_fails_at_scale():
    # 2,001 sample uniques among 2,000,999 records: 0.1% allows 2,000 (the share is over
    # 0.001 by 5e-10, which an absolute slack of 1e-9 passed); 2,000 of 2,000,000 is 0.1%
    from blendin.check import check_regrouped
    from blendin.models import AverageRisk, SampleUniqueness

    spec = Spec(quasi_identifiers={"q": flat()}, models=[SampleUniqueness(0.001)])
    over = check_regrouped(_regrouped([1] * 2001 + [2000999 - 2001]), spec, ["q"])
    at = check_regrouped(_regrouped([1] * 2000 + [2000000 - 2000]), spec, ["q"])
    assert not over.passed and at.passed
    # average risk: 200,000 classes among 19,999,999 records is over 1% (by 5e-10)
    spec = Spec(quasi_identifiers={"q": flat()}, models=[AverageRisk(0.01)])
    sizes = [100] * 199999 + [99]
    assert sum(sizes) == 19999999 and 200000 / 19999999 > 0.01
    assert not check_regrouped(_regrouped(sizes), spec, ["q"]).passed
    assert check_regrouped(_regrouped([100] * 200000), spec, ["q"]).passed


def test_t_closeness_exactly_at_t_holds_and_just_over_fails():
    from blendin.check import check_regrouped

    # the table: a 1,000,000 times, b 1,000,001 times; class 0 all a: distance
    # 1,000,001 / 2,000,001 (over 0.5 by 2.5e-7); at t of that figure less 1e-10 it fails
    dx = ["a", "b"]
    table = _regrouped([1000000, 1000001], dx)
    figure = 1000001 / 2000001
    for t, passed in ((figure, True), (figure - 1e-10, False)):
        spec = Spec(quasi_identifiers={"q": flat()}, sensitive=["dx"],
                    models=[TCloseness("dx", t)])
        assert check_regrouped(table, spec, ["q"]).passed is passed


def test_entropy_a_hair_below_log_l_fails_and_exactly_at_it_holds():
    from blendin.check import check_regrouped

    # one class of 20,000 a and 20,001 b: entropy 3e-10 below log 2 (an absolute slack of
    # 1e-9 passed it); classes of l equally frequent values, however large, are at log(l)
    spec = Spec(quasi_identifiers={"q": flat()}, sensitive=["dx"],
                models=[EntropyLDiversity("dx", 2)])
    below = pa.table({"q": ["c", "c"], "dx": ["a", "b"],
                      "__blendin_count__": pa.array([20000, 20001], pa.int64())})
    assert not check_regrouped(below, spec, ["q"]).passed
    for sizes in ([10**6, 10**6], [10**9, 10**9], [333333] * 3, [7] * 5):
        values = len(sizes)
        spec = Spec(quasi_identifiers={"q": flat()}, sensitive=["dx"],
                    models=[EntropyLDiversity("dx", values)])
        at = pa.table({"q": ["c"] * values, "dx": [f"v{i}" for i in range(values)],
                       "__blendin_count__": pa.array(sizes, pa.int64())})
        assert check_regrouped(at, spec, ["q"]).passed, sizes


def test_the_input_distribution_is_normalized_as_the_classes_are(tmp_path):
    # HIV spelled three ways: the classes merge them (normalize), and so must the input's
    # distribution given as the population: the table checked against itself as its
    # population was at distance 0.42 ("HIV", "hiv" and " hiv" three values there)
    dx = ["flu", "HIV", "hiv", " hiv"] * 5 + ["flu", "hiv"] * 5
    input_ = pd.DataFrame({"age": ["20"] * 20 + ["30"] * 10, "dx": dx})
    data = tmp_path / "input.csv"
    input_.to_csv(data, index=False)
    spec = Spec(quasi_identifiers={"age": flat()}, sensitive=["dx"],
                models=[TCloseness("dx", 0.2)], normalize=["case", "space"])
    with_population = check(input_, spec, population=data)
    itself = check(input_, spec)
    assert with_population.distribution == "input" and itself.distribution == "table"
    assert with_population.passed and itself.passed
    assert with_population.models[0].figure == pytest.approx(itself.models[0].figure)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), cells=st.sampled_from([1, 5, 64]),
       models=st.sampled_from([
           [DistinctLDiversity("dx", 2)], [EntropyLDiversity("dx", 1.8)],
           [RecursiveCLDiversity("dx", 2, 2)], [TCloseness("dx", 0.4)],
           [TCloseness("dx", 0.3, distance="ordered")],
           [KAnonymity(2), BetaLikeness("dx", 2.0), DeltaDisclosure("dx", 2.0)]]))
def test_histograms_made_a_slice_of_classes_at_a_time_give_the_same_answers(seed, cells,
                                                                             models):
    """A sensitive column of many values makes (classes x values) histograms that grow with
    the square of the rows (a 200,000-row table of 100,000 diagnoses took 19.6 GB): the
    search and the checker make them a slice of classes at a time. Any slice gives the same
    node, release, verdicts, figures and listed problems as the whole."""
    from blendin import frequency

    rng = np.random.default_rng(seed)
    n = 120
    df = pd.DataFrame({"age": rng.integers(20, 60, n).astype(str),
                       "sex": rng.choice(["f", "m"], n),
                       "dx": [f"d{i}" for i in rng.integers(0, 40, n)]})
    age = Hierarchy.from_rows([[str(a), f"{a // 10 * 10}s", "*"] for a in range(20, 60)])
    spec = Spec(quasi_identifiers={"age": age, "sex": flat()}, sensitive=["dx"],
                models=models, max_suppression=0.2)

    def rounded(report):  # (a figure summed over fewer classes at once: in its last bit)
        report = report.to_dict()
        for model in report["models"]:
            if model["figure"] is not None:  # (None: no figure, NaN in JSON)
                model["figure"] = round(model["figure"], 12)
        return json.dumps(report, sort_keys=True, default=str)

    def answers():
        result = anonymize(df, spec, shuffle_seed=1)
        try:  # the chosen node's plan alone, on other rows: some classes fail there
            other = df.copy()
            other.loc[(other.age.astype(int) < 30) & (other.sex == "f"), "dx"] = "d0"
            applied = apply_solution(other, result, shuffle_seed=1)
            again = (applied.suppressed, applied.data.to_csv(index=False))
        except BlendinError as error:
            again = str(error)
        others = []
        for options in ({"algorithm": "mondrian"}, {"recode_suppressed": True}):
            try:  # Mondrian's parts, and the suppressed records' recoding, by slices too
                other = anonymize(df, spec, shuffle_seed=1, **options)
                others.append((other.suppressed, other.data.to_csv(index=False)))
            except BlendinError as error:
                others.append(str(error))
        return (result.levels, result.suppressed, result.data.to_csv(index=False),
                rounded(result.check), rounded(check(df, spec, show_values=True)), again,
                others)

    whole = answers()
    original = frequency.HISTOGRAM_CELLS
    frequency.HISTOGRAM_CELLS = cells  # a slice of classes holds at most this many cells
    try:
        sliced = answers()
    finally:
        frequency.HISTOGRAM_CELLS = original
    assert sliced == whole
