"""anonymize(): known answers, kinds in and out, files, refusals, figures computed otherwise."""

import importlib
import itertools
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.anonymize import anonymize, apply_solution, load_solution
from blendin.check import check
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.hierarchy.tree import tree
from blendin.metrics import utility_of_node
from blendin.models import DistinctLDiversity, KAnonymity, TCloseness
from blendin.plan import plan_node
from blendin.spec import Spec

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def brute_force_find(ft, models, *, max_suppression=0.0, metric="loss", algorithm="optimal",
                     policy=None, weights=None, progress=None):
    """Every lattice node; the feasible one of least loss (ties: lowest height, then order)."""
    best, checked = None, 0
    for node in itertools.product(*(range(h) for h in ft.heights)):
        checked += 1
        rec = plan_node(ft, node, models)
        if rec.suppressed_records > max_suppression * ft.n_records + 1e-9:
            continue
        loss = utility_of_node(ft, node, rec.suppressed_tuples)[metric]
        key = (round(loss, 12), sum(node), node)
        if best is None or key < best[0]:
            best = (key, node)
        if progress is not None:
            progress(checked, int(np.prod(ft.heights)))
    return SimpleNamespace(levels=None if best is None else best[1], nodes_checked=checked)


def age_hierarchy(ages):
    return Hierarchy.from_rows([[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*"]
                                for a in sorted(set(ages))])


SEX = Hierarchy.from_rows([["f", "*"], ["m", "*"]])


def people():
    return pd.DataFrame({
        "name": ["ann", "bea", "cy", "dan", "ed"],
        "age": [21, 22, 35, 36, 51],
        "dx": ["flu", "gout", "flu", "cold", "flu"],
        "sex": ["f", "f", "m", "m", "m"],
        "visits": [3, 1, 4, 1, 5],
    })


def people_spec(**kw):
    df = people()
    base = dict(quasi_identifiers={"age": age_hierarchy(df.age), "sex": SEX},
                identifiers=["name"], sensitive=["dx"], models=[KAnonymity(2)],
                max_suppression=0.2)
    base.update(kw)
    return Spec(**base)


def test_known_answer_drop():
    result = anonymize(people(), people_spec(), keep_order=True)
    # (decade, sex) leaves 51/m alone: 1 of 5 records suppressed (20%, the limit);
    # loss 0.3 beats (*, sex) at 0.5
    assert result.levels == {"age": 1, "sex": 0}
    out = result.data
    assert list(out.columns) == ["age", "dx", "sex", "visits"]
    assert out.age.tolist() == ["20-29", "20-29", "30-39", "30-39"]
    assert out.sex.tolist() == ["f", "f", "m", "m"]
    assert out.dx.tolist() == ["flu", "gout", "flu", "cold"]
    assert out.visits.tolist() == [3, 1, 4, 1]
    assert (result.suppressed, result.classes, result.min_class_size) == (1, 2, 2)
    assert result.records == 5
    assert result.utility["loss"] == pytest.approx(0.3)
    assert result.utility["discernibility"] == 2 * 2 + 2 * 2 + 5 * 1
    assert result.check.passed
    assert result.nodes_checked >= 1


@pytest.mark.parametrize("metric", ["loss", "height", "arx-loss", "discernibility"])
def test_a_run_keeps_nothing_of_its_tables(metric):
    """Repeated runs in one process (a notebook, a server) must not pile up memory: once a
    run's result is let go, no frequency table of it lives on (in a cache, say)."""
    import gc

    def live_tables() -> int:
        gc.collect()
        return sum(isinstance(o, FrequencyTable) for o in gc.get_objects())

    before = live_tables()
    for _ in range(3):
        assert anonymize(people(), people_spec(metric=metric)).check.passed
    assert live_tables() == before


def test_known_answer_keep_shows_star():
    result = anonymize(people(), people_spec(), suppressed="keep", keep_order=True)
    out = result.data
    assert len(out) == 5
    assert out.iloc[4][["age", "sex"]].tolist() == ["*", "*"]
    # kept, a suppressed record shows no sensitive value (its own group would show it)
    assert pd.isna(out.iloc[4]["dx"]) and out.iloc[4]["visits"] == 5
    assert result.suppressed == 1
    assert check(out, people_spec()).passed


def test_no_suppression_allowed_generalizes_further():
    result = anonymize(people(), people_spec(max_suppression=0.0))
    assert result.suppressed == 0
    assert result.levels == {"age": 2, "sex": 0}
    assert result.data.age.tolist() == ["*"] * 5


def test_infeasible_spec_is_a_clear_error():
    spec = people_spec(models=[KAnonymity(2), DistinctLDiversity("dx", 4)])
    with pytest.raises(BlendinError) as info:
        anonymize(people(), spec)
    assert info.value.fix


@pytest.mark.parametrize("kind", ["pandas", "polars", "pyarrow"])
def test_same_kind_out(kind):
    df = people()
    data = {"pandas": df, "polars": pl.from_pandas(df), "pyarrow": pa.Table.from_pandas(df)}[kind]
    result = anonymize(data, people_spec(), keep_order=True)
    assert type(result.data) is type(data)
    table = result.table
    assert table.column("age").to_pylist() == ["20-29", "20-29", "30-39", "30-39"]


def test_input_is_not_modified():
    df = people()
    before = df.copy()
    anonymize(df, people_spec())
    pd.testing.assert_frame_equal(df, before)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_file_in_and_out(tmp_path, suffix):
    src = tmp_path / f"people{suffix}"
    if suffix == ".csv":
        people().to_csv(src, index=False)
    else:
        people().to_parquet(src, index=False)
    result = anonymize(src, people_spec(), keep_order=True)
    assert isinstance(result.data, pa.Table)
    out = tmp_path / f"release{suffix}"
    result.write(out)
    back = pd.read_csv(out, dtype=str) if suffix == ".csv" else pq.read_table(out).to_pandas()
    assert list(back.columns) == ["age", "dx", "sex", "visits"]
    assert back.age.tolist() == ["20-29", "20-29", "30-39", "30-39"]
    assert check(out, people_spec()).passed
    sizes = back.groupby(["age", "sex"]).size()
    assert (result.classes, result.min_class_size) == (len(sizes), sizes.min())


def test_file_read_in_chunks_gives_the_same_release(tmp_path):
    rng = np.random.default_rng(3)
    n = 3000
    df = pd.DataFrame({"age": rng.integers(18, 90, n), "sex": rng.choice(["f", "m"], n),
                       "dx": rng.choice(["a", "b", "c", "d"], n)})
    path = tmp_path / "big.csv"
    df.to_csv(path, index=False)
    spec = Spec(quasi_identifiers={"age": age_hierarchy(df.age), "sex": SEX},
                sensitive=["dx"], models=[KAnonymity(20)], max_suppression=0.05)
    from blendin.io import Source

    chunked = anonymize(Source(path, block_size=4096), spec, keep_order=True)
    whole = anonymize(df, spec, keep_order=True)
    assert chunked.levels == whole.levels
    assert chunked.data.column("age").to_pylist() == whole.data.age.tolist()
    assert chunked.data.column("dx").to_pylist() == whole.data.dx.tolist()


def test_checker_rejection_refuses(checker_rejects):
    with pytest.raises(BlendinError, match="independent check"):
        anonymize(people(), people_spec())


def test_missing_column_and_bad_mode():
    with pytest.raises(BlendinError, match="'age'"):
        anonymize(people().drop(columns="age"), people_spec())
    with pytest.raises(BlendinError, match="drop"):
        anonymize(people(), people_spec(), suppressed="hide")
    with pytest.raises(BlendinError, match="algorithm"):
        anonymize(people(), people_spec(), algorithm="magic")


def test_uncovered_value_names_it():
    df = people()
    df.loc[0, "age"] = 99
    with pytest.raises(BlendinError, match="'99'"):
        anonymize(df, people_spec())


def random_table(seed, n=400):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": np.arange(n),
        "age": rng.integers(20, 60, n),
        "zip": rng.choice(["0213", "0214", "0215", "0311", "0312"], n),
        "sex": rng.choice(["f", "m"], n),
        "dx": rng.choice(["flu", "gout", "cold", "hiv"], n, p=[0.4, 0.3, 0.2, 0.1]),
    })


def zip_hierarchy():
    return Hierarchy.from_rows([[z, z[:3] + "*", z[:2] + "**", "*"]
                                for z in ["0213", "0214", "0215", "0311", "0312"]])


def random_spec(df, models, max_suppression):
    return Spec(quasi_identifiers={"age": age_hierarchy(df.age), "zip": zip_hierarchy(),
                                   "sex": SEX},
                identifiers=["id"], sensitive=["dx"], models=models,
                max_suppression=max_suppression)


@pytest.mark.parametrize("seed,models,limit", [
    (0, [KAnonymity(5)], 0.0),
    (1, [KAnonymity(10)], 0.05),
    (2, [KAnonymity(3), DistinctLDiversity("dx", 2)], 0.05),
    (3, [KAnonymity(2), TCloseness("dx", 0.3)], 0.1),
])
def test_figures_match_pandas_on_the_written_file(tmp_path, seed, models, limit):
    df = random_table(seed)
    spec = random_spec(df, models, limit)
    result = anonymize(df, spec, keep_order=True)
    path = tmp_path / "out.csv"
    result.write(path)
    back = pd.read_csv(path, dtype=str)
    assert "id" not in back.columns
    assert check(path, spec).passed
    sizes = back.groupby(["age", "zip", "sex"]).size()
    assert result.classes == len(sizes)
    assert result.min_class_size == sizes.min()
    assert result.suppressed == len(df) - len(back)
    assert result.suppressed <= limit * len(df)
    assert result.utility["discernibility"] == pytest.approx(
        float((sizes**2).sum() + len(df) * result.suppressed))
    # the levels say what each value became
    h = spec.quasi_identifiers["zip"]
    to_label = {row[0]: row[result.levels["zip"]] for row in h.to_rows()}
    kept = df.set_index(df.index).loc[
        df.index.isin(_kept_rows(df, spec, result))]
    assert back.zip.tolist() == [to_label[z] for z in kept.zip]


def _kept_rows(df, spec, result):
    """Rows of classes that satisfy every model at the chosen levels (plain pandas)."""
    labelled = df.copy()
    for q, h in spec.quasi_identifiers.items():
        m = {row[0]: row[result.levels[q]] for row in h.to_rows()}
        labelled[q] = df[q].astype(str).map(m)
    keep = []
    for _, group in labelled.groupby(["age", "zip", "sex"]):
        ok = len(group) >= spec.models[0].k
        if len(spec.models) > 1 and isinstance(spec.models[1], DistinctLDiversity):
            ok &= group.dx.nunique() >= spec.models[1].l
        if len(spec.models) > 1 and isinstance(spec.models[1], TCloseness):
            overall = df.dx.value_counts(normalize=True)
            local = group.dx.value_counts(normalize=True).reindex(overall.index, fill_value=0)
            ok &= 0.5 * (overall - local).abs().sum() <= spec.models[1].t + 1e-12
        if ok:
            keep.extend(group.index)
    return sorted(keep)


def test_result_to_dict_is_json():
    result = anonymize(people(), people_spec())
    d = json.loads(json.dumps(result.to_dict()))
    for key in ("levels", "suppressed", "classes", "min_class_size", "nodes_checked",
                "seconds", "utility"):
        assert key in d
    assert d["levels"] == {"age": 1, "sex": 0}
    assert "levels: age 1/2, sex 0/1" in result.summary()
    assert "suppressed: 1 records" in result.summary()


# -- saved solutions ------------------------------------------------------------------------


def test_save_and_apply_on_new_data(tmp_path):
    df = random_table(7, 600)
    spec = random_spec(df, [KAnonymity(5)], 0.02)
    result = anonymize(df, spec)
    path = tmp_path / "sol.json"
    result.save_solution(path)
    saved = json.loads(path.read_text())
    assert saved["levels"] == result.levels
    assert saved["hierarchies"]["zip"]["rows"][0] == ["0213", "021*", "02**", "*"]
    new = random_table(8, 900)
    applied = apply_solution(new, path)
    assert applied.levels == result.levels
    assert applied.nodes_checked == 0
    assert check(applied.data, spec).passed
    assert applied.suppressed <= 0.02 * len(new)
    assert len(applied.data) == len(new) - applied.suppressed
    assert "id" not in applied.data.columns


def test_a_solution_keeps_the_population_table_the_run_counted(tmp_path, monkeypatch):
    """k-map's population table is named relative to the spec's folder; the solution
    kept the name as written, so apply from another folder counted that folder's table of
    the same name (or found none)."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    rng = np.random.default_rng(3)
    people = pd.DataFrame({"age": rng.integers(20, 60, 400).astype(str)})
    people.to_csv(project / "people.csv", index=False)
    people.head(1).to_csv(elsewhere / "people.csv", index=False)  # one person: k-map fails
    (project / "spec.toml").write_text(
        '[quasi_identifiers]\nage = { intervals = [10, 20] }\n'
        '[[privacy]]\nmodel = "k-map"\nk = 2\npopulation = "people.csv"\n'
        '[anonymization]\nmax_suppression = 0.2\n')
    data = people.sample(100, random_state=1)
    result = anonymize(data, Spec.from_toml(project / "spec.toml"))
    result.save_solution(project / "sol.json")
    saved = json.loads((project / "sol.json").read_text())
    assert saved["models"][0]["population"] == str(project / "people.csv")
    monkeypatch.chdir(elsewhere)
    again = apply_solution(data, project / "sol.json")
    assert again.check.passed and again.levels == result.levels


def test_a_solution_with_records_at_risk_applies(tmp_path):
    """average-risk's records-at-risk was saved under the parameter's name,
    records_at_risk, which the model's TOML table refuses: no such solution applied."""
    from blendin.anonymize import with_digest
    from blendin.models import AverageRisk

    df = random_table(7, 600)
    spec = random_spec(df, [AverageRisk(0.3, highest=0.5, records_at_risk=0.1)], 0.5)
    result = anonymize(df, spec)
    result.save_solution(tmp_path / "sol.json")
    saved = json.loads((tmp_path / "sol.json").read_text())
    assert saved["models"][0] == {"model": "average-risk", "threshold": 0.3, "highest": 0.5,
                                  "records-at-risk": 0.1}
    applied = apply_solution(df, tmp_path / "sol.json")
    assert applied.check.passed and applied.spec.models == spec.models
    # one saved before, its digest over the parameter's name, applies as well
    saved["models"][0]["records_at_risk"] = saved["models"][0].pop("records-at-risk")
    assert apply_solution(df, with_digest(saved)).spec.models == spec.models


def test_apply_on_the_same_data_gives_the_same_release():
    df = random_table(9)
    spec = random_spec(df, [KAnonymity(4)], 0.05)
    result = anonymize(df, spec, keep_order=True)
    again = apply_solution(df, load_solution(result), keep_order=True)
    pd.testing.assert_frame_equal(again.data, result.data)


def test_apply_refuses_uncovered_values_and_broken_limit():
    df = random_table(10)
    spec = random_spec(df, [KAnonymity(5)], 0.0)
    result = anonymize(df, spec)
    saved = load_solution(result)
    other = df.copy()
    other.loc[0, "zip"] = "9999"
    with pytest.raises(BlendinError, match="'9999'"):
        apply_solution(other, saved)
    assert result.levels != {"age": 2, "zip": 3, "sex": 1}
    few = df.head(6)  # too few records for the saved levels to keep every class >= 5
    with pytest.raises(BlendinError, match="does not hold on this data"):
        apply_solution(few, saved)


def test_bad_solution_files(tmp_path):
    with pytest.raises(BlendinError, match="does not exist"):
        apply_solution(people(), tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(BlendinError, match="not a blendin solution"):
        apply_solution(people(), bad)


def test_mondrian_dispatch_release_passes_the_checker():
    df = random_table(11)
    spec = random_spec(df, [KAnonymity(5)], 0.0)
    result = anonymize(df, spec, algorithm="mondrian")
    assert result.levels == {}
    assert result.algorithm == "mondrian"
    assert check(result.data, spec).passed
    sizes = result.data.groupby(["age", "zip", "sex"]).size()
    assert (result.classes, result.min_class_size) == (len(sizes), sizes.min())
    with pytest.raises(BlendinError, match="no levels"):
        result.save_solution("x.json")


# -- the ARX benchmark data -----------------------------------------------------------------


def adult_spec(k, limit):
    folder = DATA / "adult"
    qis = ["age", "education", "marital-status", "native-country", "race", "salary-class",
           "sex", "workclass"]
    hierarchies = {}
    for q in qis:
        text = (folder / f"adult_hierarchy_{q}.csv").read_text().replace("\r\n", "\n")
        rows = [line.split(";") for line in text.splitlines() if line]
        hierarchies[q] = Hierarchy.from_rows(rows, name=q)
    return Spec(quasi_identifiers=hierarchies, sensitive=["occupation"],
                models=[KAnonymity(k)], max_suppression=limit, delimiter=";")


@pytest.mark.skipif(not (DATA / "adult").is_dir(), reason="benchmark data not present")
def test_adult_k5_release_matches_pandas(tmp_path):
    spec = adult_spec(5, 0.0)
    result = anonymize(DATA / "adult" / "adult.csv", spec)
    out = tmp_path / "adult_k5.csv"
    result.write(out)
    assert check(out, spec, delimiter=",").passed
    back = pd.read_csv(out, dtype=str, keep_default_na=False)
    sizes = back.groupby(list(spec.quasi_identifiers)).size()
    assert result.records == 30162 == len(back) + result.suppressed
    assert result.suppressed == 0
    assert (result.classes, result.min_class_size) == (len(sizes), sizes.min())
    assert sizes.min() >= 5
    ft = FrequencyTable.from_table(
        pd.read_csv(DATA / "adult" / "adult.csv", sep=";", dtype=str),
        {q: h for q, h in spec.quasi_identifiers.items()})
    assert result.utility["loss"] == pytest.approx(
        utility_of_node(ft, list(result.levels.values()))["loss"])


def test_solution_with_hierarchical_t_closeness_round_trips(tmp_path):
    df = random_table(12, 800)
    dx = Hierarchy.from_rows([["flu", "infection", "*"], ["cold", "infection", "*"],
                              ["gout", "chronic", "*"], ["hiv", "chronic", "*"]])
    spec = random_spec(df, [KAnonymity(3), TCloseness("dx", 0.25, "hierarchical")], 0.05)
    spec.sensitive_hierarchies = {"dx": dx}
    result = anonymize(df, spec, keep_order=True)
    path = tmp_path / "sol.json"
    result.save_solution(path)
    saved = json.loads(path.read_text())
    assert saved["sensitive_hierarchies"]["dx"]["rows"][0][0] == "cold"
    assert saved["models"][1] == {"model": "t-closeness", "attribute": "dx", "t": 0.25,
                                  "distance": "hierarchical"}
    again = apply_solution(df, path, keep_order=True)
    pd.testing.assert_frame_equal(again.data, result.data)
    assert again.levels == result.levels


def test_apply_with_a_spec_takes_its_hierarchical_t_closeness(tmp_path):
    """The spec given to apply rules the models, and a model's hierarchy is part of it:
    a hierarchy file named in the spec's t-closeness table was dropped (only built
    hierarchies were kept), and apply said the spec had none."""
    df = random_table(12, 800)
    result = anonymize(df, random_spec(df, [KAnonymity(3)], 0.05))
    (tmp_path / "dx.csv").write_text("flu;infection;*\ncold;infection;*\n"
                                     "gout;chronic;*\nhiv;chronic;*\n")
    (tmp_path / "spec.toml").write_text(
        '[attributes]\nsensitive = ["dx"]\n[quasi_identifiers]\n'
        + "".join(f'{q} = {{ flat = true }}\n' for q in result.levels)
        + '[[privacy]]\nmodel = "k-anonymity"\nk = 3\n'
        '[[privacy]]\nmodel = "t-closeness"\nattribute = "dx"\nt = 0.4\n'
        'distance = "hierarchical"\nhierarchy = { csv = "dx.csv" }\n'
        '[anonymization]\nmax_suppression = 0.5\n')
    spec = Spec.from_toml(tmp_path / "spec.toml")
    again = apply_solution(df, load_solution(result), spec)
    assert again.check.passed and again.levels == result.levels
    assert "hierarchical" in again.check.models[-1].name


@pytest.mark.parametrize("seed", range(4))
def test_chosen_node_has_the_least_loss_of_all_acceptable_nodes(seed):
    df = random_table(20 + seed, 300)
    spec = random_spec(df, [KAnonymity(3 + seed)], [0.0, 0.02, 0.05, 0.1][seed])
    result = anonymize(df, spec)
    ft = FrequencyTable.from_table(df, spec.quasi_identifiers, ["dx"])
    best = brute_force_find(ft, spec.models, max_suppression=spec.max_suppression)
    rec = plan_node(ft, best.levels, spec.models)
    assert result.utility["loss"] == pytest.approx(
        utility_of_node(ft, best.levels, rec.suppressed_tuples)["loss"])


def test_a_node_over_the_suppression_limit_is_refused(monkeypatch):
    def careless(ft, models, **kw):
        return SimpleNamespace(levels=(0, 0), nodes_checked=1)

    monkeypatch.setattr(importlib.import_module("blendin.anonymize.search"), "find", careless)
    with pytest.raises(BlendinError, match="over the limit"):
        anonymize(people(), people_spec())


def test_failed_write_leaves_no_file(tmp_path, monkeypatch):
    io_module = importlib.import_module("blendin.io")

    def broken(table, path, **kw):
        Path(path).write_text("age,dx\n20-29,")
        raise OSError("disk full")

    monkeypatch.setattr(io_module, "_write_csv", broken)
    result = anonymize(people(), people_spec())
    out = tmp_path / "release.csv"
    with pytest.raises(OSError, match="disk full"):
        result.write(out)
    assert list(tmp_path.iterdir()) == []
    out.write_text("old")
    with pytest.raises(OSError):
        result.write(out)
    assert out.read_text() == "old"  # an existing file is left as it was


def test_report_is_written(tmp_path):
    result = anonymize(people(), people_spec())
    path = result.report(tmp_path / "report.html", original=people())
    assert path.read_text().startswith("<!DOCTYPE html>")


def test_to_dict_with_a_model_carrying_a_hierarchy_is_json():
    df = random_table(13, 300)
    dx = tree({"inf": ["flu", "cold"], "chr": ["gout", "hiv"]})
    spec = random_spec(df, [KAnonymity(2), TCloseness("dx", 0.4, "hierarchical", dx)], 0.1)
    d = json.loads(json.dumps(anonymize(df, spec).to_dict()))
    assert d["models"][1]["distance"] == "hierarchical"


def test_missing_values_take_the_missing_label():
    df = people()
    df["sex"] = ["f", None, "m", "m", np.nan]
    sex = Hierarchy.from_rows([["", "*"], ["f", "*"], ["m", "*"]])
    spec = people_spec(quasi_identifiers={"age": age_hierarchy(df.age), "sex": sex})
    result = anonymize(df, spec, keep_order=True)
    # missing sex is a value of its own ("" here): (*, "") holds bea and ed, (*, m) cy and
    # dan; ann, the only f, is suppressed
    assert result.levels == {"age": 2, "sex": 0}
    assert result.data.sex.tolist() == ["", "m", "m", ""]
    assert result.data.dx.tolist() == ["gout", "flu", "cold", "flu"]
    assert check(result.data, spec).passed


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_random_releases_keep_and_drop_agree_with_pandas(data):
    seed = data.draw(st.integers(0, 10_000))
    n = data.draw(st.integers(20, 200))
    df = random_table(seed, n)
    k = data.draw(st.integers(2, 6))
    models = [KAnonymity(k)]
    extra = data.draw(st.sampled_from(["none", "l", "t"]))
    if extra == "l":
        models.append(DistinctLDiversity("dx", 2))
    elif extra == "t":
        models.append(TCloseness("dx", 0.4))
    limit = data.draw(st.sampled_from([0.0, 0.05, 0.2]))
    spec = random_spec(df, models, limit)
    try:
        dropped = anonymize(df, spec, keep_order=True)
    except BlendinError as error:  # e.g. the whole table is not 2-diverse
        assert error.fix
        return
    kept = anonymize(df, spec, suppressed="keep", keep_order=True)
    qis = ["age", "zip", "sex"]
    assert kept.levels == dropped.levels and len(kept.data) == n
    stars = (kept.data[qis] == "*").all(axis=1).to_numpy()
    top = all(dropped.levels[q] == h.height - 1 for q, h in dropped.hierarchies.items())
    if not top:  # below the top node, rows all * are exactly the suppressed ones
        assert stars.sum() == dropped.suppressed <= limit * n
        pd.testing.assert_frame_equal(dropped.data,
                                      kept.data[~stars].reset_index(drop=True))
        assert dropped.data.dx.tolist() == df.dx[~stars].tolist()
    sizes = dropped.data.groupby(qis).size()
    assert (dropped.classes, dropped.min_class_size) == (len(sizes), sizes.min())
    assert sizes.min() >= k


def _tampered_recoder(monkeypatch, tamper):
    """Every full-domain release passes through ``tamper(marked) -> marked``."""
    module = importlib.import_module("blendin.anonymize.search")

    class Tampered(module.FullDomainRecoder):
        def __call__(self, batch):
            marked, removed = super().__call__(batch)
            return tamper(marked), removed

    monkeypatch.setattr(module, "FullDomainRecoder", Tampered)


def test_checker_refuses_a_release_that_shows_ground_values(monkeypatch):
    ages = pa.array([str(a) for a in people().age]).dictionary_encode()
    _tampered_recoder(monkeypatch, lambda marked: marked.set_column(
        marked.column_names.index("age"), "age", ages))
    with pytest.raises(BlendinError, match="independent check"):
        anonymize(people(), people_spec())


def test_checker_groups_texts_not_dictionary_entries(monkeypatch):
    def duplicated(marked):  # each label twice in the dictionary; the second used by row 0
        column = marked.column("age").combine_chunks()
        labels = column.dictionary
        index = column.indices.to_numpy().copy()
        index[0] += len(labels)
        twice = pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()),
                                               pa.concat_arrays([labels, labels]))
        return marked.set_column(marked.column_names.index("age"), "age", twice)

    plain = anonymize(people(), people_spec(), keep_order=True)
    _tampered_recoder(monkeypatch, duplicated)
    result = anonymize(people(), people_spec(), keep_order=True)
    assert result.data.equals(plain.data) and result.check.passed
