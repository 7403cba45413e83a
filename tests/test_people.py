"""People, not rows: a person key makes every protective count count people.

The search, the checker and the release are compared with a brute force written here in
plain Python (sets of tuples per person), on random small tables of 1 to 6 rows a person.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blendin as bl
from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy
from blendin.models import DistinctLDiversity, KAnonymity

VALUES = 6


def _hierarchy() -> Hierarchy:
    """v -> v // 2 -> *: three levels over 0..5."""
    return Hierarchy.from_rows([[str(v), f"{v // 2}x", "*"] for v in range(VALUES)])


def _general(value: int, level: int) -> str:
    return [str(value), f"{value // 2}x", "*"][level]


@st.composite
def person_tables(draw):
    """A visits table: 2-10 people with 1-6 rows each; each QI person-level or not."""
    n_qis = draw(st.integers(1, 3))
    event = [draw(st.booleans()) for _ in range(n_qis)]
    rows = []
    for person in range(draw(st.integers(2, 10))):
        fixed = [draw(st.integers(0, VALUES - 1)) for _ in range(n_qis)]
        dx = draw(st.sampled_from("ab"))
        for _ in range(draw(st.integers(1, 6))):
            row = {"pid": f"p{person}"}
            for i in range(n_qis):
                row[f"q{i}"] = (str(draw(st.integers(0, VALUES - 1))) if event[i]
                                else str(fixed[i]))
            # a person's diagnoses: mostly one, sometimes a second
            row["dx"] = dx if draw(st.integers(0, 3)) else draw(st.sampled_from("abc"))
            rows.append(row)
    k = draw(st.integers(2, 3))
    models = [KAnonymity(k)]
    if draw(st.booleans()):
        models.append(DistinctLDiversity("dx", 2))
    share = draw(st.sampled_from([0.0, 0.2, 0.5]))
    return pd.DataFrame(rows).sample(frac=1.0, random_state=0), n_qis, models, share


def _classes(df: pd.DataFrame, qis: list[str], levels):
    """People by signature (a frozenset of generalized tuples), and each one's set of
    diagnoses, by sets in Python."""
    classes, values = {}, {}
    for pid, rows in df.groupby("pid"):
        signature = frozenset(tuple(_general(int(r[q]), lv) for q, lv in zip(qis, levels))
                              for _, r in rows.iterrows())
        classes.setdefault(signature, []).append(pid)
        values[pid] = frozenset(rows["dx"])
    return classes, values


def _holds(people, values, models) -> bool:
    return all(len(people) >= m.k if isinstance(m, KAnonymity)
               else len({values[p] for p in people}) >= m.l for m in models)


def _brute(df: pd.DataFrame, qis: list[str], models, levels) -> tuple[int, list[int]]:
    """People suppressed at ``levels`` and the kept classes' sizes."""
    classes, values = _classes(df, qis, levels)
    kept = [len(p) for p in classes.values() if _holds(p, values, models)]
    return df["pid"].nunique() - sum(kept), kept


def _spec(qis, models, share, **extra) -> bl.Spec:
    return bl.Spec(quasi_identifiers={q: _hierarchy() for q in qis}, sensitive=["dx"],
                   models=models, person="pid", max_suppression=share, **extra)


@settings(max_examples=220, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(person_tables())
def test_optimal_equals_brute_force(case):
    """The node chosen is acceptable counted in people and has the least discernibility
    (in people) of all acceptable nodes; the release drops exactly the suppressed people's
    rows; the checker's counts agree with the brute force."""
    df, n_qis, models, share = case
    qis = [f"q{i}" for i in range(n_qis)]
    n_people = df["pid"].nunique()
    limit = math.floor(share * n_people + 1e-9)
    best = None
    for levels in itertools.product(range(3), repeat=n_qis):
        suppressed, kept = _brute(df, qis, models, levels)
        if suppressed <= limit:
            figure = sum(s * s for s in kept) + n_people * suppressed
            best = figure if best is None else min(best, figure)
    spec = _spec(qis, models, share, metric="discernibility", algorithm="optimal")
    if best is None:
        with pytest.raises(BlendinError, match="no generalization|larger than|no class can"):
            bl.anonymize(df, spec)
        return
    result = bl.anonymize(df, spec)
    levels = tuple(result.levels[q] for q in qis)
    suppressed, kept = _brute(df, qis, models, levels)
    assert suppressed <= limit
    assert result.utility["discernibility"] == best
    assert result.people["suppressed_people"] == suppressed
    assert result.check.people == n_people and result.check.records == len(df)
    assert result.min_class_size == min(kept)
    gone = set(df["pid"]) - _kept_people(df, qis, models, levels)
    assert len(result.data) == int((~df["pid"].isin(gone)).sum())
    assert "pid" not in result.data.columns


def test_the_policy_breaks_ties_with_event_level_qis():
    # (0, 1) and (1, 0) are both one step up; (1, 0) suppresses 2 people, (0, 1) 3: the
    # search over signatures ignored the policy (and weighed ties without the tolerance)
    visits = [("p0", "f", "a"), ("p0", "f", "c"), ("p1", "m", "b"), ("p1", "m", "c"),
              ("p2", "m", "c"), ("p3", "f", "c"), ("p4", "m", "b"), ("p5", "m", "b"),
              ("p5", "m", "c"), ("p6", "f", "b"), ("p7", "f", "a"), ("p7", "f", "b"),
              ("p8", "m", "c")]
    df = pd.DataFrame(visits, columns=["pid", "sex", "ward"])
    hierarchies = {"sex": Hierarchy.from_rows([["f", "*"], ["m", "*"]]),
                   "ward": Hierarchy.from_rows([["a", "ab", "*"], ["b", "ab", "*"],
                                                ["c", "c", "*"]])}
    chosen = {}
    for policy in (None, "suppression"):
        spec = bl.Spec(quasi_identifiers=hierarchies, person="pid", models=[KAnonymity(2)],
                       max_suppression=0.5, metric="height", policy=policy)
        result = bl.anonymize(df, spec)
        assert result.people["event_level"] == ["ward"]
        chosen[policy] = (result.levels, result.people["suppressed_people"])
    assert chosen[None] == ({"sex": 0, "ward": 1}, 3)  # fewest steps, then smaller levels
    assert chosen["suppression"] == ({"sex": 1, "ward": 0}, 2)
    with pytest.raises(BlendinError, match="unknown (preference )?policy"):
        bl.anonymize(df, bl.Spec(quasi_identifiers=hierarchies, person="pid",
                                 models=[KAnonymity(2)], policy="fewest"))


def _kept_people(df, qis, models, levels) -> set[str]:
    classes, values = _classes(df, qis, levels)
    return {p for people in classes.values() if _holds(people, values, models)
            for p in people}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(person_tables())
def test_check_counts_people(case):
    """check on the raw table: passed, classes and smallest class as the brute force says
    at the ground level (nothing generalized, nothing suppressed)."""
    df, n_qis, models, _ = case
    qis = [f"q{i}" for i in range(n_qis)]
    try:
        report = bl.check(df, _spec(qis, models, 0.0))
    except BlendinError as error:  # a model no table of these people can meet
        assert "larger than" in str(error) or "no class can be" in str(error)
        return
    suppressed, kept = _brute(df, qis, models, (0,) * n_qis)
    assert report.passed == (suppressed == 0)
    assert report.people == df["pid"].nunique()
    assert report.records == len(df)
    assert report.violating_records == suppressed


def visits() -> pd.DataFrame:
    """The counterexample: patient p0 has five visits and is alone in their class."""
    rows = [{"pid": "p0", "age": "34", "sex": "f", "dx": "flu"}] * 5
    rows += [{"pid": f"p{i}", "age": "52", "sex": "m", "dx": "flu"} for i in range(1, 6)]
    return pd.DataFrame(rows)


def test_five_visits_are_one_person():
    """k = 5 passes counted in rows (five rows of p0) and fails counted in people: p0 is
    alone in their class, which is what an attacker who knows p0's age and sex sees."""
    spec = bl.Spec(quasi_identifiers={"age": bl.flat(), "sex": bl.flat()},
                   models=[KAnonymity(5)], sensitive=["dx"])
    rows = bl.check(visits(), spec)
    assert rows.passed and rows.min_class_size == 5
    people = bl.check(visits(), bl.Spec(**{**spec.__dict__, "person": "pid"}))
    assert not people.passed
    assert people.min_class_size == 1 and people.people == 6 and people.records == 10
    assert "1 people" in str(people)


def test_person_is_released_whole_or_not_at_all():
    spec = bl.Spec(quasi_identifiers={"age": bl.flat(), "sex": bl.flat()},
                   models=[KAnonymity(5)], person="pid", max_suppression=0.2)
    result = bl.anonymize(visits(), spec)
    assert result.levels == {"age": 0, "sex": 0}
    assert result.people["suppressed_people"] == 1 and result.suppressed == 5
    assert len(result.data) == 5 and set(result.data["age"]) == {"52"}
    assert "pid" not in result.data.columns
    assert "people: 6" in result.summary()


def test_a_release_of_nobody_is_checked_against_every_persons_values():
    # at the ground node each person is alone (1-diverse) and the limit lets both go: the
    # checker's domain is the input's people's, not the (no) released people's
    frame = pd.DataFrame({"pid": [0] * 3 + [1], "ward": ["a", "a", "b", "a"],
                          "dx": ["flu"] * 3 + ["gout"]})
    spec = bl.Spec(quasi_identifiers={"ward": bl.flat()}, sensitive=["dx"],
                   models=[KAnonymity(1), DistinctLDiversity("dx", 2)], person="pid",
                   max_suppression=1.0)
    result = bl.anonymize(frame, spec)  # the checker ran inside
    assert result.levels == {"ward": 0} and result.people["suppressed_people"] == 2
    assert len(result.data) == 0 and result.check.passed


def test_event_level_qis_are_found_and_named():
    df = pd.DataFrame({"pid": ["a", "a", "b", "b"], "ward": ["x", "y", "x", "y"],
                       "sex": ["f", "f", "m", "m"]})
    spec = bl.Spec(quasi_identifiers={"ward": bl.flat(), "sex": bl.flat()},
                   models=[KAnonymity(2)], person="pid")
    result = bl.anonymize(df, spec)
    assert result.people["event_level"] == ["ward"]
    assert result.people["person_level"] == ["sex"]
    assert result.levels == {"ward": 0, "sex": 1}
    assert sorted(result.data["ward"]) == ["x", "x", "y", "y"]


def test_two_event_level_qis_compare_joint_tuples():
    """{(x, 1), (y, 2)} and {(x, 2), (y, 1)} have the same values per column but are
    different signatures: an attacker who knows one person's visits tells them apart."""
    df = pd.DataFrame({"pid": ["a", "a", "b", "b"], "ward": ["x", "y", "x", "y"],
                       "day": ["1", "2", "2", "1"]})
    spec = bl.Spec(quasi_identifiers={"ward": bl.flat(), "day": bl.flat()},
                   models=[KAnonymity(2)], person="pid")
    report = bl.check(df, spec)
    assert not report.passed and report.classes == 2
    result = bl.anonymize(df, spec)
    assert result.levels in ({"ward": 1, "day": 0}, {"ward": 0, "day": 1})


def test_empty_person_key_is_refused_without_naming_a_key():
    df = pd.DataFrame({"pid": ["secret-1", None, "secret-1"], "age": ["1", "2", "3"]})
    spec = bl.Spec(quasi_identifiers={"age": bl.flat()}, models=[KAnonymity(2)],
                   person="pid")
    with pytest.raises(BlendinError, match="empty on row 2") as caught:
        bl.anonymize(df, spec)
    assert "secret" not in str(caught.value)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_the_row_an_empty_key_is_on_is_the_files_row(tmp_path, suffix):
    """A file's first pass keeps its rows in the release's random order: the row named
    was a place in that order, a new one each run, not the row of the file."""
    n = 3000
    df = pd.DataFrame({"pid": [f"p{i // 2}" for i in range(n)],
                       "age": [str(i % 7) for i in range(n)]})
    df.loc[1234, "pid"] = ""
    path = tmp_path / f"visits{suffix}"
    df.to_csv(path, index=False) if suffix == ".csv" else df.to_parquet(path)
    spec = bl.Spec(quasi_identifiers={"age": bl.flat()}, models=[KAnonymity(2)],
                   person="pid")
    for seed in range(3):
        with pytest.raises(BlendinError, match="empty on row 1235 "):
            bl.anonymize(str(path), spec, shuffle_seed=seed, output=tmp_path / "r.csv")
        with pytest.raises(BlendinError, match="empty on row 1235 "):
            bl.anonymize(str(path), spec, shuffle_seed=seed)


def test_check_of_a_release_without_the_key_says_how():
    spec = bl.Spec(quasi_identifiers={"age": bl.flat()}, models=[KAnonymity(2)],
                   person="pid")
    with pytest.raises(BlendinError, match="no column 'pid', the person key") as caught:
        bl.check(pd.DataFrame({"age": ["1", "1"]}), spec)
    # the key came from the spec: leaving out a --person never given changed nothing
    assert "person under the spec's [attributes]" in caught.value.fix


def test_a_k_above_the_people_names_people_not_records(tmp_path):
    """Three visits of one patient are one person: k = 2 cannot be met, and the error
    counts people (it said "the table (1 records)" of a table of 3 rows); a check of
    them fails, one person in its class."""
    df = pd.DataFrame({"pid": ["a", "a", "a"], "ward": ["x", "x", "x"]})
    spec = bl.Spec(quasi_identifiers={"ward": bl.flat()}, models=[KAnonymity(2)],
                   person="pid")
    expected = ("k = 2 is larger than the number of people: 1 in 3 records (person key "
                "'pid'); fix: choose k <= 1")
    with pytest.raises(BlendinError) as caught:
        bl.anonymize(df, spec)
    assert expected in str(caught.value)
    df.to_csv(tmp_path / "visits.csv", index=False)
    for data in (df, str(tmp_path / "visits.csv")):  # a check fails it: one person
        report = bl.check(data, spec)
        assert not report.passed and report.min_class_size == 1
    assert bl.anonymize(df, bl.Spec(quasi_identifiers={"ward": bl.flat()},
                                    models=[KAnonymity(2)])).check.passed  # 3 rows


def test_heuristic_and_mondrian_refuse_event_level_qis():
    df = pd.DataFrame({"pid": ["a", "a", "b", "b"], "ward": ["x", "y", "x", "y"]})
    spec = bl.Spec(quasi_identifiers={"ward": bl.flat()}, models=[KAnonymity(2)],
                   person="pid")
    for algorithm in ("heuristic", "mondrian", "datafly"):
        with pytest.raises(BlendinError, match="event-level"):
            bl.anonymize(df, spec, algorithm=algorithm)


def test_person_level_qis_work_with_every_algorithm():
    rng = np.random.default_rng(3)
    ages = rng.integers(20, 70, 40)
    df = pd.DataFrame({"pid": np.repeat([f"p{i}" for i in range(40)], 3),
                       "age": np.repeat(ages, 3), "sex": np.repeat(rng.choice(["f", "m"], 40), 3)})
    spec = bl.Spec(quasi_identifiers={"age": bl.intervals(5, 10, 20), "sex": bl.flat()},
                   models=[KAnonymity(4)], person="pid", max_suppression=0.1)
    for algorithm in ("optimal", "heuristic", "binary", "datafly", "mondrian"):
        result = bl.anonymize(df, spec, algorithm=algorithm)
        assert result.check.passed and result.check.people == 40
        assert result.min_class_size >= 4
        assert result.records == 120


def test_spec_round_trip_and_roles():
    spec = bl.Spec(quasi_identifiers={"age": bl.flat()}, models=[KAnonymity(2)],
                   person="pid")
    text = spec.to_toml()
    assert 'person = "pid"' in text
    assert spec.roles()["pid"] == "person key"
    with pytest.raises(BlendinError, match="both"):
        bl.Spec(quasi_identifiers={"pid": bl.flat()}, models=[KAnonymity(2)],
                person="pid").validate()


SPEC_TOML = """[attributes]
sensitive = ["dx"]
[quasi_identifiers]
age = { flat = true }
sex = { flat = true }
[[privacy]]
model = "k-anonymity"
k = 5
[anonymization]
max_suppression = 0.2
"""


def test_cli_counts_people(tmp_path):
    """--person on check, anonymize and risk; the key never reaches the release, and a
    key with a gap is exit code 2 without a traceback."""
    from click.testing import CliRunner

    from blendin.cli import main

    data, spec, out = tmp_path / "visits.csv", tmp_path / "s.toml", tmp_path / "out.csv"
    visits().to_csv(data, index=False)
    spec.write_text(SPEC_TOML)
    rows = CliRunner().invoke(main, ["check", str(data), "--spec", str(spec)])
    assert rows.exit_code == 0, rows.output
    people = CliRunner().invoke(main, ["check", str(data), "--spec", str(spec),
                                       "--person", "pid", "--json"])
    assert people.exit_code == 1
    report = json.loads(people.output)
    assert report["people"] == 6 and report["min_class_size"] == 1
    made = CliRunner().invoke(main, ["anonymize", str(data), "--spec", str(spec), "-o",
                                     str(out), "--person", "pid", "--json"])
    assert made.exit_code == 0, made.output
    payload = json.loads(made.output)
    assert payload["people"]["suppressed_people"] == 1 and payload["suppressed"] == 5
    assert "pid" not in out.read_text().splitlines()[0]
    risk = CliRunner().invoke(main, ["risk", str(data), "--qi", "age,sex", "--person", "pid"])
    assert risk.exit_code == 0 and "people             6 (10 records" in risk.output
    gap = tmp_path / "gap.csv"
    gap.write_text("pid,age,sex,dx\np1,3,f,a\n,3,f,a\n")
    bad = CliRunner().invoke(main, ["check", str(gap), "--spec", str(spec), "--person", "pid"])
    assert bad.exit_code == 2 and "empty on row 2 (1 record" in bad.output
    assert "Traceback" not in bad.output


def test_report_shows_people_and_records(tmp_path):
    spec = bl.Spec(quasi_identifiers={"age": bl.flat(), "sex": bl.flat()},
                   models=[KAnonymity(5)], person="pid", max_suppression=0.2)
    result = bl.anonymize(visits(), spec)
    page = result.report(tmp_path / "r.html", original=visits()).read_text()
    assert "People in the input" in page and "People suppressed" in page
    assert "at most 1 people" in page  # floor(0.2 * 6 people), not of the 10 records
    assert "<strong>Person key</strong>" in page and "<code>pid</code>" in page
    voters = pd.DataFrame({"age": ["34", "52"], "sex": ["f", "m"]})
    page = result.report(tmp_path / "a.html", original=visits(),
                         external=voters).read_text()
    assert "a match is a person" in page  # p0's five visits: one match
    # the release's risk counts people too: 10 people, 2 to 3 rows each, one class
    many = pd.DataFrame({"pid": np.repeat([f"q{i}" for i in range(10)], [2, 3] * 5),
                         "age": "40", "sex": "f"})
    spec = bl.Spec(quasi_identifiers={"age": bl.flat(), "sex": bl.flat()},
                   models=[KAnonymity(5)], person="pid")
    page = bl.anonymize(many, spec).report(tmp_path / "m.html", original=many).read_text()
    measured = page[page.find('id="after-risk-records"'):][:80]
    smallest = page[page.find('id="after-risk-smallest"'):][:80]
    assert ">10<" in measured and ">10<" in smallest  # people, not the 25 rows


def test_k_map_against_a_population_table_counts_people(tmp_path):
    """Person-level QIs: the visits with a key release exactly as one row a person does,
    k-map counting the population table's people; event-level QIs are refused."""
    from blendin.models import KMap

    rng = np.random.default_rng(5)
    ages = rng.integers(20, 40, 30).astype(str)
    population = pd.DataFrame({"age": np.concatenate([ages, rng.integers(20, 40, 60).astype(
        str)]), "ward": "x"})
    population.to_csv(tmp_path / "people.csv", index=False)
    repeats = rng.integers(1, 5, 30)
    df = pd.DataFrame({"pid": np.repeat([f"p{i}" for i in range(30)], repeats),
                       "age": np.repeat(ages, repeats),
                       "ward": rng.choice(["x", "y"], int(repeats.sum()))})
    model = KMap(4, population=str(tmp_path / "people.csv"))
    age = bl.intervals(2, 4, 8)
    spec = bl.Spec(quasi_identifiers={"age": age}, models=[model], person="pid",
                   max_suppression=0.1)
    by_person = bl.anonymize(df, spec, shuffle_seed=1)
    one_row = bl.anonymize(pd.DataFrame({"age": ages}), bl.Spec(
        quasi_identifiers={"age": age}, models=[KMap(4, population=str(
            tmp_path / "people.csv"))], max_suppression=0.1))
    assert by_person.levels == one_row.levels
    assert by_person.people["suppressed_people"] == one_row.suppressed
    assert by_person.check.passed and by_person.check.people == 30 - one_row.suppressed
    event = bl.Spec(quasi_identifiers={"age": age, "ward": bl.flat()}, models=[model],
                    person="pid", max_suppression=0.1)
    with pytest.raises(BlendinError, match="ward varies within a person"):
        bl.anonymize(df, event)


def test_the_attack_counts_people_with_a_person_column(tmp_path):
    """Counted in records, a patient with three visits hides among three matches; counted
    in people, they are re-identified."""
    from click.testing import CliRunner

    from blendin.cli import main

    release = pd.DataFrame({"pid": ["a", "a", "a", "b", "c"], "age": ["30-39"] * 3 + [
        "40", "40"], "dx": ["flu", "flu", "gout", "flu", "flu"]})
    voters = pd.DataFrame({"name": ["Ann", "Bob"], "age": [34, 40]})
    rows = bl.attack(release, voters, on="age", k=3)
    people = bl.attack(release, voters, on="age", k=3, person="pid")
    assert rows.matches.tolist() == [3, 2] and rows.reidentified == 0
    assert people.matches.tolist() == [1, 2] and people.reidentified == 1
    assert (people.release, people.unit, people.records_reidentified) == (3, "people", 1)
    assert "pid" not in people.learned and "release people" in "\n".join(people.lines())
    brute = [len({p for p, a in zip(release.pid, release.age)
                  if (a == "40" and v == 40) or (a == "30-39" and 30 <= v <= 39)})
             for v in voters.age]
    assert people.matches.tolist() == brute
    varies = release.assign(age=["30-39", "40", "30-39", "40", "40"])
    with pytest.raises(BlendinError, match="vary within a person"):
        bl.attack(varies, voters, on="age", person="pid")
    release.to_csv(tmp_path / "r.csv", index=False)
    voters.to_csv(tmp_path / "v.csv", index=False)
    run = CliRunner().invoke(main, ["attack", str(tmp_path / "r.csv"), "--external",
                                    str(tmp_path / "v.csv"), "--on", "age", "--k", "3",
                                    "--person", "pid"])
    assert run.exit_code == 0 and "release people 3" in run.output, run.output


@pytest.mark.parametrize("streamed", [False, True])
def test_group_and_row_columns_with_event_level_qis(tmp_path, streamed):
    """A row's class is its person's: every row of a person has one group, people of equal
    signatures share it, and the source row points back to the person's own row."""
    rng = np.random.default_rng(8)
    count = rng.integers(1, 4, 40)
    df = pd.DataFrame({"pid": np.repeat([f"p{i}" for i in range(40)], count),
                       "sex": np.repeat(rng.choice(["f", "m"], 40), count),
                       "ward": rng.choice(["a", "b"], int(count.sum()))})
    spec = bl.Spec(quasi_identifiers={"sex": bl.flat(), "ward": bl.flat()},
                   models=[KAnonymity(3)], person="pid", max_suppression=0.3)
    data = df
    output = None
    if streamed:
        df.to_csv(tmp_path / "v.csv", index=False)
        data, output = str(tmp_path / "v.csv"), tmp_path / "out.csv"
    result = bl.anonymize(data, spec, group_column="group", original_row="row",
                          output=output, shuffle_seed=2)
    out = result.table.to_pandas()
    out["pid"] = df.pid.to_numpy()[out.row.astype(int).to_numpy() - 1]
    assert out.groupby("pid").group.nunique().max() == 1  # one group a person
    signature = out.groupby("pid").apply(
        lambda rows: (rows.sex.iloc[0], frozenset(rows.ward)), include_groups=False)
    group = out.groupby("pid").group.first().astype(int)
    assert (signature.groupby(group).nunique() == 1).all()  # a group: one signature
    assert (group.groupby(signature).nunique() == 1).all()  # a signature: one group
    assert group.value_counts().min() >= 3
    assert sorted(group.unique()) == list(range(1, group.nunique() + 1))
    assert "__blendin_person_class__" not in out.columns


def test_a_release_written_to_a_file_is_measured_in_records_and_says_so(tmp_path):
    spec = bl.Spec(quasi_identifiers={"age": bl.flat(), "sex": bl.flat()},
                   models=[KAnonymity(5)], person="pid", max_suppression=0.2)
    visits().to_csv(tmp_path / "v.csv", index=False)
    result = bl.anonymize(str(tmp_path / "v.csv"), spec, output=tmp_path / "r.csv")
    assert result.release_people is None
    page = result.report(tmp_path / "r.html", original=str(tmp_path / "v.csv")).read_text()
    assert "the input in people (its person key), the release in records" in page


def test_a_solution_that_counts_people_or_transforms_is_not_reapplied():
    """A re-application counts rows and transforms nothing: it would release the person
    key, and a microaggregated column as it is. Such a solution is refused."""
    rng = np.random.default_rng(0)
    visits = pd.DataFrame({"pid": rng.integers(0, 60, 300).astype(str),
                           "ward": rng.choice(["x", "y"], 300),
                           "income": rng.integers(1000, 9000, 300)})
    by_people = bl.Spec(quasi_identifiers={"ward": bl.flat()}, models=[KAnonymity(2)],
                        person="pid", max_suppression=0.5)
    result = bl.anonymize(visits, by_people)
    assert result.solution_dict()["person"] == "pid"
    with pytest.raises(BlendinError, match=r"counts people \(person key 'pid'\).*release "
                                           "the key"):
        bl.apply_solution(visits, result)
    transformed = bl.Spec.from_dict({
        "quasi_identifiers": {"ward": {"flat": True}},
        "transform": {"income": {"microaggregate": {"k": 3}}},
        "privacy": [{"model": "k-anonymity", "k": 2}]})
    made = bl.anonymize(visits.drop(columns="pid"), transformed)
    with pytest.raises(BlendinError, match="transforms 'income'.*release them as they are"):
        bl.apply_solution(visits.drop(columns="pid"), made)
    plain = bl.Spec(quasi_identifiers={"ward": bl.flat()}, models=[KAnonymity(2)],
                    normalize=["case"])
    again = bl.apply_solution(visits.drop(columns="pid"), bl.anonymize(
        visits.drop(columns="pid"), plain))
    assert again.spec.normalize == ["case"] and again.check.passed


def test_microaggregation_with_a_person_key_is_refused():
    """MDAV groups k records: a patient with three visits fills a group of three alone, and
    the mean released is theirs only (k = 3 held in records, 1 in people). Refused."""
    visits = pd.DataFrame({"pid": np.repeat(["a", "b", "c"], 3), "sex": ["f"] * 9,
                           "income": [100, 101, 102, 500, 501, 502, 900, 901, 902]})
    doc = {"attributes": {"person": "pid"}, "quasi_identifiers": {"sex": {"flat": True}},
           "transform": {"income": {"microaggregate": {"k": 3}}},
           "privacy": [{"model": "k-anonymity", "k": 2}]}
    with pytest.raises(BlendinError, match="'income' is microaggregated.*one person's"):
        bl.Spec.from_dict(doc)
    spec = bl.Spec.from_dict({**doc, "attributes": {}})
    spec.person = "pid"
    with pytest.raises(BlendinError, match="'income' is microaggregated"):
        bl.anonymize(visits, spec)


def test_pram_with_a_person_key_is_refused():
    """PRAM draws each record's value apart: seven visits of one patient, each kept with
    probability 0.6 or more, give their true value back by a majority vote (every one of
    200 patients in a trial). Refused."""
    doc = {"attributes": {"person": "pid"}, "quasi_identifiers": {"sex": {"flat": True}},
           "transform": {"eth": {"pram": {"pd": 0.6}}},
           "privacy": [{"model": "k-anonymity", "k": 2}]}
    with pytest.raises(BlendinError, match="'eth' is randomized by PRAM.*vote"):
        bl.Spec.from_dict(doc)
