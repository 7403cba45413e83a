"""delta-presence: definitions by hand, the population counted three ways, the search
against exhaustive search, the release and its check, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search import optimal_as_exhaustive
from test_search_tables import tables

import blendin as bl
from blendin.anonymize import prepare
from blendin.check import check
from blendin.errors import BlendinError
from blendin.frequency import Classes
from blendin.hierarchy.core import Hierarchy
from blendin.lattice import Checker
from blendin.metrics import utility_of_node
from blendin.models import DeltaPresence, KAnonymity, model_from_toml

AGE = Hierarchy.from_rows([[str(a), f"{a // 2 * 2}-{a // 2 * 2 + 1}", "*"] for a in range(4)])


def test_share_by_hand():
    model = DeltaPresence(0.2, 0.5, "s")
    classes = Classes(np.array([1, 2, 3, 5]), {}, {}, population=np.array([10, 4, 4, 5]))
    # shares 0.1, 0.5, 0.75, 1.0: only the second lies in [0.2, 0.5]
    assert model.per_class(classes).tolist() == [0.1, 0.5, 0.75, 1.0]
    assert model.holds(classes).tolist() == [False, True, False, False]
    assert model.figure(classes) == 1.0


def test_edge_cases():
    model = DeltaPresence(0.0, 1.0, "s")
    one = Classes(np.array([7]), {}, {}, population=np.array([7]))  # one class, all released
    assert model.holds(one).tolist() == [True] and model.figure(one) == 1.0
    unique = Classes(np.ones(3, int), {}, {}, population=np.array([1, 2, 4]))
    assert DeltaPresence(0.0, 0.5, "s").holds(unique).tolist() == [False, True, True]
    empty = Classes(np.zeros(0, int), {}, {}, population=np.zeros(0, int))
    assert model.holds(empty).tolist() == [] and np.isnan(model.figure(empty))
    with pytest.raises(BlendinError, match="no population counts"):
        model.holds(Classes(np.array([1]), {}, {}))


def test_monotone_only_with_dmin_zero():
    assert DeltaPresence(0.0, 0.5, "s").monotone
    assert not DeltaPresence(0.1, 0.5, "s").monotone
    assert not DeltaPresence(0.0, 0.5, "s").monotone_with_suppression


def frame():
    # ages 0..3; the population: 4 of age 0, 2 of age 1, 2 of age 2, 4 of age 3
    ages = [0] * 4 + [1] * 2 + [2] * 2 + [3] * 4
    released = [1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 0]
    return pd.DataFrame({"age": [str(a) for a in ages], "in": released,
                         "dx": list("abcabcabcabc")})


def test_release_by_hand():
    df = frame()
    # level 0: shares 2/4, 1/2, 1/2, 2/4 -> all 0.5; dmax 0.4 fails every class
    # level 1: 0-1 holds 3 of 6, 2-3 holds 3 of 6 -> 0.5; level 2: 6 of 12 -> 0.5
    spec = bl.Spec(quasi_identifiers={"age": AGE}, models=[DeltaPresence(0.0, 0.5, "in")])
    result = bl.anonymize(df, spec)
    assert result.levels == {"age": 0} and result.records == 6
    assert "in" not in result.data.columns and len(result.data) == 6
    assert result.check.passed and result.check.models[0].figure == 0.5
    released = df.assign(**{"in": [1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0]})
    # now age 0 holds 3 of 4 (0.75): level 0 fails, 0-1 holds 4 of 6 (0.67), * 7 of 12
    spec = bl.Spec(quasi_identifiers={"age": AGE}, models=[DeltaPresence(0.0, 0.6, "in")])
    assert bl.anonymize(released, spec).levels == {"age": 2}
    spec = bl.Spec(quasi_identifiers={"age": AGE}, models=[DeltaPresence(0.0, 0.6, "in")],
                   max_suppression=0.5)  # suppress age 0's 3 records at level 0
    result = bl.anonymize(released, spec)
    assert result.levels == {"age": 0} and result.suppressed == 3


def test_checker_counts_the_population_and_catches_a_violation():
    df = frame()
    spec = bl.Spec(quasi_identifiers={"age": AGE}, models=[DeltaPresence(0.0, 0.5, "in")])
    release = pd.DataFrame({"age": ["0-1", "0-1", "0-1", "2-3", "2-3", "2-3"],
                            "dx": list("abcabc")})
    report = check(release, spec, population=df)
    assert report.passed and report.models[0].figure == 0.5  # 3 of 6 in each
    report = check(release.iloc[:5], spec, population=df.iloc[6:])  # 0-1: 3 of 0 people
    assert not report.passed
    spec = bl.Spec(quasi_identifiers={"age": AGE}, models=[DeltaPresence(0.0, 0.4, "in")])
    report = check(release, spec, population=df)
    assert not report.passed and report.models[0].violating_records == 6
    with pytest.raises(BlendinError, match="population"):
        check(release, spec)


@st.composite
def presence_cases(draw):
    t = draw(tables(max_records=30))
    n = len(t.records)
    released = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    released[draw(st.integers(0, n - 1))] = True
    dmin = draw(st.sampled_from([0.0, 0.0, 0.1, 0.3]))
    dmax = draw(st.sampled_from([0.3, 0.5, 0.8, 1.0]))
    models = [DeltaPresence(min(dmin, dmax), dmax, "in")]
    if draw(st.booleans()):
        models.append(KAnonymity(draw(st.integers(1, 3))))
    return (t, released, models, draw(st.sampled_from([0.0, 0.1, 0.3])),
            draw(st.sampled_from(["loss", "arx-loss"])))


def spec_of(t, models, max_sup):
    return bl.Spec(quasi_identifiers=dict(t.hierarchies), sensitive=["s"], models=models,
                   max_suppression=max_sup)


@settings(max_examples=150, deadline=None)
@given(presence_cases())
def test_optimal_agrees_with_exhaustive(case):
    t, released, models, max_sup, metric = case
    df = t.frame().assign(**{"in": np.array(released, int)})
    k = next((m for m in models if isinstance(m, KAnonymity)), None)
    if k is not None and k.k > sum(released):
        return
    plan = prepare(df, spec_of(t, models, max_sup))
    ft, models = plan.ft, plan.spec.models  # (the run's own, the population bound to them)
    found = optimal_as_exhaustive(ft, models, max_sup, metric)
    if found is None:
        return
    got, suppressed = found
    figures = utility_of_node(ft, got.levels, suppressed)
    assert got.score == pytest.approx(figures[metric], rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(presence_cases(), st.data())
def test_population_counts_agree_with_pandas(case, data):
    """The node check's population per class, against a pandas group-by of the labels."""
    t, released, models, _, _ = case
    df = t.frame().assign(**{"in": np.array(released, int)})
    plan = prepare(df, spec_of(t, models[:1], 1.0))
    ft, models = plan.ft, plan.spec.models  # (the run's own, the population bound to them)
    checker = Checker(ft, models, 1.0)
    levels = tuple(data.draw(st.integers(0, h - 1)) for h in ft.heights)
    groups = checker.groups(levels)
    people = models[0].population_at(levels, groups.codes)
    labels = pd.DataFrame({q: [t.label(i, v, levels[i]) for v in df[q]]
                           for i, q in enumerate(t.names)})
    want = labels.groupby(list(t.names)).size()
    codes = groups.codes
    for j in range(len(groups)):
        key = tuple(str(ft.hierarchies[i].labels[levels[i]][codes[i][j]])
                    for i in range(len(t.names)))
        assert people[j] == want[key if len(key) > 1 else key[0]]


def test_errors_name_the_fix():
    df = frame()
    for table, message in [
        ({"model": "delta-presence", "dmin": 0.5, "dmax": 0.2, "subset": "in"}, "above dmax"),
        ({"model": "delta-presence", "dmin": 0, "dmax": 0, "subset": "in"}, r"dmax must be"),
        ({"model": "delta-presence", "dmin": -0.1, "dmax": 1, "subset": "in"}, "dmin must"),
        ({"model": "delta-presence", "dmin": 0, "dmax": 1.5, "subset": "in"}, "dmax must"),
        ({"model": "delta-presence", "dmin": 0, "dmax": 1, "subset": ""}, "subset must"),
        ({"model": "delta-presence", "dmin": 0, "dmax": 1}, "missing subset"),
    ]:
        with pytest.raises(BlendinError, match=message) as info:
            model_from_toml(table)
        assert info.value.fix

    def run(data, *models, algorithm=None):
        return bl.anonymize(data, bl.Spec(quasi_identifiers={"age": AGE}, models=list(models)),
                            algorithm=algorithm)

    with pytest.raises(BlendinError, match="no subset column 'out'"):
        run(df, DeltaPresence(0, 0.5, "out"))
    with pytest.raises(BlendinError, match=r"'in' holds '2', not 0/1"):
        run(df.assign(**{"in": 2}), DeltaPresence(0, 0.5, "in"))
    with pytest.raises(BlendinError, match="no record has in = 1"):
        run(df.assign(**{"in": 0}), DeltaPresence(0, 0.5, "in"))
    with pytest.raises(BlendinError, match="different subsets"):
        run(df.assign(out=1), DeltaPresence(0, 0.5, "in"), DeltaPresence(0, 0.5, "out"))
    with pytest.raises(BlendinError, match="mondrian cannot enforce delta-presence"):
        run(df, DeltaPresence(0, 0.5, "in"), algorithm="mondrian")


def test_toml_round_trip():
    table = {"model": "delta-presence", "dmin": 0.0, "dmax": 0.5, "subset": "in"}
    assert model_from_toml(table).to_dict() == table


def test_cli_report_and_check_with_the_population(tmp_path):
    from click.testing import CliRunner

    from blendin.cli import main

    df = frame().assign(**{"in": [1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0]})
    df.to_csv(tmp_path / "in.csv", index=False)
    rows = "\n".join(f"{a};{a // 2 * 2}-{a // 2 * 2 + 1};*" for a in range(4))
    (tmp_path / "age.csv").write_text(rows + "\n")
    (tmp_path / "s.toml").write_text('[quasi_identifiers]\nage = { csv = "age.csv" }\n\n'
                                     '[[privacy]]\nmodel = "delta-presence"\ndmin = 0\n'
                                     'dmax = 0.6\nsubset = "in"\n\n'
                                     '[anonymization]\nmax_suppression = 0.5\n')
    runner = CliRunner()
    os_path = str(tmp_path)
    result = runner.invoke(main, ["anonymize", f"{os_path}/in.csv", "--spec",
                                  f"{os_path}/s.toml", "-o", f"{os_path}/out.csv",
                                  "--report", f"{os_path}/r.html"])
    assert result.exit_code == 0, result.output
    out = pd.read_csv(tmp_path / "out.csv", dtype=str)
    assert sorted(out["age"]) == ["1", "2", "3", "3"] and "in" not in out.columns
    assert "largest presence" in (tmp_path / "r.html").read_text()
    check_args = ["check", f"{os_path}/out.csv", "--spec", f"{os_path}/s.toml"]
    assert runner.invoke(main, check_args).exit_code == 2  # no population given
    result = runner.invoke(main, [*check_args, "--population", f"{os_path}/in.csv"])
    assert result.exit_code == 0 and "largest presence = 0.5" in result.output


def test_a_run_binds_nothing_to_the_callers_models_and_runs_side_by_side_agree():
    """The population a run binds, a draw of differential privacy, the table's size: on
    the run's own models, not the caller's Spec, which threads may share."""
    import pickle
    import threading

    import blendin as bl

    rng = np.random.default_rng(3)
    frames = [pd.DataFrame({"zip": rng.choice(["a", "b", "c", "d"], n),
                            "in": (rng.random(n) < 0.3).astype(int)}) for n in (400, 900)]
    presence = DeltaPresence(0.0, 0.6, "in")
    spec = bl.Spec(quasi_identifiers={"zip": bl.flat()}, models=[presence],
                max_suppression=0.2)
    alone = [bl.anonymize(f, spec, shuffle_seed=1) for f in frames]
    before = pickle.dumps(spec)
    found, errors = {}, []

    def run(i):
        try:
            for _ in range(4):
                found.setdefault(i, []).append(bl.anonymize(frames[i], spec, shuffle_seed=1))
        except Exception as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for i in (0, 1):
        assert all(r.levels == alone[i].levels and r.data.equals(alone[i].data)
                   for r in found[i])
    assert pickle.dumps(spec) == before and not hasattr(presence, "_population")
    drawn = bl.DifferentialPrivacy(2.0, 1e-3)  # no seed: the draw stays the run's secret
    bl.anonymize(frames[1].drop(columns="in"), bl.Spec(quasi_identifiers={"zip": bl.flat()},
                                                    models=[drawn], max_suppression=1.0))
    assert getattr(drawn, "_entropy", None) is None
