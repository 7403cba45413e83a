"""Related tables (a person table and event tables sharing a person key), released together
and compared with a brute force over people's signatures in plain Python."""

from __future__ import annotations

import itertools
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blendin as bl
from blendin.cli import main
from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy

AGE = Hierarchy.from_rows([[a, f"{a[0]}0s", "*"] for a in ("21", "25", "33", "38")])
SEX = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
WARD = Hierarchy.from_rows([["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]])
DRUG = Hierarchy.from_rows([["x", "*"], ["y", "*"]])
HIERARCHIES = {"age": AGE, "sex": SEX, "ward": WARD, "drug": DRUG}
TABLES = {"patients": "id", "visits": "pid", "scripts": "pid"}


@st.composite
def cohorts(draw):
    n = draw(st.integers(3, 9))
    patients = pd.DataFrame({
        "id": [f"p{i}" for i in range(n)],
        "age": draw(st.lists(st.sampled_from(["21", "25", "33", "38"]), min_size=n,
                             max_size=n)),
        "sex": draw(st.lists(st.sampled_from(["f", "m"]), min_size=n, max_size=n))})
    visits, scripts = [], []
    for i in range(n):
        for _ in range(draw(st.integers(0, 3))):
            visits.append((f"p{i}", draw(st.sampled_from("abc")), draw(st.sampled_from("uv"))))
        for _ in range(draw(st.integers(0, 2))):
            scripts.append((f"p{i}", draw(st.sampled_from("xy"))))
    return {"patients": patients,
            "visits": pd.DataFrame(visits or [("p0", "a", "u")], columns=["pid", "ward", "dx"]),
            "scripts": pd.DataFrame(scripts or [("p0", "x")], columns=["pid", "drug"])}


def signatures(tables, levels):
    """Per person: (age, sex at their levels, the set of (table, generalized tuple))."""
    def label(name, value):
        h = HIERARCHIES[name]
        return h.labels[levels[name]][h.codes[levels[name]][list(h.ground).index(value)]]
    sig = {}
    for _, row in tables["patients"].iterrows():
        sig[row["id"]] = [(label("age", row["age"]), label("sex", row["sex"])), set()]
    for _, row in tables["visits"].iterrows():
        sig[row["pid"]][1].add(("visits", label("ward", row["ward"])))
    for _, row in tables["scripts"].iterrows():
        sig[row["pid"]][1].add(("scripts", label("drug", row["drug"])))
    return {p: (s[0], frozenset(s[1])) for p, s in sig.items()}


def brute_force(tables, k, share):
    """Every node: the people suppressed (in classes under k) and the discernibility, if
    acceptable (as many suppressed as the limit allows at most)."""
    n = len(tables["patients"])
    limit = math.floor(share * n + 1e-9)
    found = {}
    for node in itertools.product(*(range(HIERARCHIES[q].height) for q in HIERARCHIES)):
        levels = dict(zip(HIERARCHIES, node))
        sig = signatures(tables, levels)
        sizes = pd.Series(list(sig.values())).value_counts()
        small = sizes[sizes < k]
        if small.sum() <= limit:
            kept = sizes[sizes >= k]
            found[node] = (int(small.sum()), float((kept ** 2).sum() + n * small.sum()))
    return found


def spec_of(k, share, **extra):
    return bl.Spec(quasi_identifiers=dict(HIERARCHIES), sensitive=["dx"],
                   tables=dict(TABLES), models=[bl.KAnonymity(k)], max_suppression=share,
                   **extra)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables=cohorts(), k=st.integers(2, 3), share=st.sampled_from([0.0, 0.2, 0.5]))
def test_related_release_is_the_best_acceptable_node_of_the_brute_force(tables, k, share):
    found = brute_force(tables, k, share)
    spec = spec_of(k, share)
    if not found:
        return
    result = bl.anonymize(tables, spec, metric="discernibility", shuffle_seed=1)
    node = tuple(result.levels[q] for q in HIERARCHIES)
    assert node in found
    assert result.people["suppressed_people"] == found[node][0]
    assert result.utility["discernibility"] == min(d for _, d in found.values())
    released = result.tables
    # each released person: a class of k people or more, counted over the released tables
    sig = {}
    for _, row in released["patients"].iterrows():
        sig[row["id"]] = [(row["age"], row["sex"]), set()]
    for name, column in (("visits", "ward"), ("scripts", "drug")):
        for _, row in released[name].iterrows():
            sig[row["pid"]][1].add((name, row[column]))
    sizes = pd.Series([(a, frozenset(b)) for a, b in sig.values()]).value_counts()
    assert sizes.min() >= k
    # a person is released whole or not at all: their rows in every table, or none
    people = len(tables["patients"]) - found[node][0]
    assert len(released["patients"]) == people
    before = {p: len(tables["visits"][tables["visits"].pid == p]) for p in tables["patients"].id}
    after = released["visits"].groupby("pid").size()
    assert sorted(after.tolist()) == sorted(
        c for p, c in before.items() if c and _kept(p, tables, node, k, found, result))


def _kept(person, tables, node, k, found, result):
    """Whether brute force keeps ``person`` at ``node``."""
    sig = signatures(tables, dict(zip(HIERARCHIES, node)))
    sizes = pd.Series(list(sig.values())).value_counts()
    return sizes[sig[person]] >= k


def test_the_key_is_replaced_by_one_random_number_a_person_in_every_table():
    tables = _cohort()
    result = bl.anonymize(tables, spec_of(2, 0.5), shuffle_seed=3)
    keys = set(tables["patients"].id)
    for name, key in TABLES.items():
        assert not keys & set(map(str, result.tables[name][key]))
    numbers = set(result.tables["patients"]["id"])
    assert len(numbers) == len(result.tables["patients"]) == 6 - result.people[
        "suppressed_people"] > 0
    assert set(result.tables["visits"]["pid"]) <= numbers
    # a person's sensitive values travel with their number
    dx = result.tables["visits"].groupby("pid")["dx"].apply(sorted).tolist()
    assert set(map(tuple, dx)) <= set(map(tuple, tables["visits"].groupby("pid")["dx"].apply(
        sorted)))
    assert "link" not in result.table.column_names and "id" not in result.table.column_names


def test_columns_keep_their_tables_and_order():
    tables = _cohort()
    tables["patients"]["note"] = "n"
    result = bl.anonymize(tables, spec_of(2, 0.5))
    assert list(result.tables["patients"].columns) == ["id", "age", "sex", "note"]
    assert list(result.tables["visits"].columns) == ["pid", "ward", "dx"]
    assert list(result.tables["scripts"].columns) == ["pid", "drug"]
    assert "related tables: patients 6 rows (" in result.summary()


def _cohort():
    return {"patients": pd.DataFrame({"id": ["a", "b", "c", "d", "e", "f"],
                                      "age": ["21", "25", "33", "38", "21", "25"],
                                      "sex": ["f", "f", "m", "m", "f", "m"]}),
            "visits": pd.DataFrame({"pid": ["a", "a", "b", "c", "e"],
                                    "ward": ["a", "b", "a", "c", "c"],
                                    "dx": ["u", "v", "u", "u", "v"]}),
            "scripts": pd.DataFrame({"pid": ["a", "d"], "drug": ["x", "y"]})}


@pytest.mark.parametrize("change, message", [
    (lambda t: t["visits"].loc.__setitem__((0, "pid"), "zz"),
     "row 1 of table 'visits' names a person who is not in 'patients'"),
    (lambda t: t["patients"].loc.__setitem__((3, "id"), "a"),
     "table 'patients', the person table, has two rows of one person (rows 1 and 4"),
    (lambda t: t["scripts"].loc.__setitem__((1, "pid"), None),
     "the person key 'pid' of table 'scripts' is empty on row 2"),
    (lambda t: t.pop("scripts"), "no input for the spec's table 'scripts'"),
    (lambda t: t.__setitem__("labs", t["scripts"]), "the spec names no table 'labs'"),
    (lambda t: t.__setitem__("visits", t["visits"].drop(columns="pid")),
     "table 'visits' has no column 'pid'"),
])
def test_bad_related_tables_are_named(change, message):
    tables = _cohort()
    change(tables)
    with pytest.raises(BlendinError, match=message.replace("(", r"\(")):
        bl.anonymize(tables, spec_of(2, 0.5))


def test_what_related_tables_refuse():
    with pytest.raises(BlendinError, match="without suppressed='keep'"):
        bl.anonymize(_cohort(), spec_of(2, 0.0), suppressed="keep")
    with pytest.raises(BlendinError, match="one table was given"):
        bl.anonymize(_cohort()["visits"], spec_of(2, 0.0))
    with pytest.raises(BlendinError, match="names one table"):
        spec_of(2, 0.0, ).__class__(quasi_identifiers={"sex": SEX}, tables={"p": "id"},
                                   models=[bl.KAnonymity(2)]).validate()


def test_spec_tables_read_and_written(tmp_path):
    spec = bl.Spec.from_dict({"attributes": {"person": "id"},
                              "tables": {"patients": {}, "visits": {"person": "pid"}},
                              "quasi_identifiers": {"sex": {"flat": True}},
                              "privacy": [{"model": "k-anonymity", "k": 2}]})
    assert spec.tables == {"patients": "id", "visits": "pid"}
    assert bl.Spec.from_dict(__import__("tomllib").loads(spec.to_toml())).tables == spec.tables
    with pytest.raises(BlendinError, match=r"unknown key 'key' in \[tables.visits\]"):
        bl.Spec.from_dict({"tables": {"patients": {"person": "id"}, "visits": {"key": "x"}},
                           "quasi_identifiers": {"sex": {"flat": True}},
                           "privacy": [{"model": "k-anonymity", "k": 2}]})


def test_cli_writes_one_file_a_table_and_refuses_a_full_folder(tmp_path: Path):
    for name, table in _cohort().items():
        table.to_csv(tmp_path / f"{name}.csv", index=False)
    args = ["anonymize", *(f"--input={n}={tmp_path / n}.csv" for n in TABLES),
            "--spec", str(_spec_file(tmp_path)), "-o", str(tmp_path / "out")]
    run = CliRunner().invoke(main, args)
    assert run.exit_code == 0, run.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "patients.csv", "scripts.csv", "visits.csv"]
    released = pd.read_csv(tmp_path / "out" / "visits.csv")
    assert list(released.columns) == ["pid", "ward", "dx"]
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 2 and "already holds files" in again.output
    assert CliRunner().invoke(main, [*args, "--force"]).exit_code == 0
    bad = CliRunner().invoke(main, ["anonymize", "--input", "visits", "--spec",
                                    str(tmp_path / "s.toml"), "-o", str(tmp_path / "o2")])
    assert bad.exit_code == 2 and "is not NAME=FILE" in bad.output
    missing = CliRunner().invoke(main, args[:2] + args[4:] + ["--force"])
    assert missing.exit_code == 2 and "no input for the spec's table" in missing.output


def test_result_write_puts_each_table_in_the_folder(tmp_path: Path):
    result = bl.anonymize(_cohort(), spec_of(2, 0.5))
    folder = result.write(tmp_path / "release")
    assert sorted(p.name for p in folder.iterdir()) == [
        "patients.csv", "scripts.csv", "visits.csv"]


def test_the_worked_example_of_the_docs():
    """docs/people.md: Ann and Bea meet at ward level ab; Cem and Dan differ by Dan's
    prescription at every level, so k = 2 suppresses them."""
    tables = {
        "patients": pd.DataFrame({"id": ["ann", "bea", "cem", "dan"],
                                  "sex": ["f", "f", "m", "m"]}),
        "visits": pd.DataFrame({"pid": ["ann", "ann", "bea", "cem", "dan"],
                                "ward": ["a", "b", "a", "c", "c"], "dx": ["u"] * 5}),
        "scripts": pd.DataFrame({"pid": ["dan"], "drug": ["x"]})}
    spec = bl.Spec(quasi_identifiers={"sex": SEX, "ward": WARD, "drug": DRUG},
                   sensitive=["dx"], tables=dict(TABLES), models=[bl.KAnonymity(2)],
                   max_suppression=0.5)
    result = bl.anonymize(tables, spec)
    assert (result.levels["ward"], result.people["suppressed_people"]) == (1, 2)
    assert sorted(result.tables["visits"]["ward"]) == ["ab", "ab", "ab"]
    assert result.tables["scripts"].empty


def test_an_event_table_may_have_a_column_named_as_the_person_tables_key():
    tables = _cohort()
    tables["visits"]["id"] = ["v1", "v2", "v3", "v4", "v5"]  # the visit's own id
    result = bl.anonymize(tables, spec_of(2, 0.5), shuffle_seed=2)
    kept = result.tables["visits"]
    assert set(kept["id"]) <= {"v1", "v2", "v3", "v4", "v5"}
    assert result.people["people"] == 6


def _people_rows(tables, keys=TABLES):
    """Each person's rows in every table, as a sorted tuple: the release up to the person
    numbers and the row order."""
    people = {}
    for name, key in keys.items():
        for row in tables[name].astype(str).itertuples(index=False):
            values = row._asdict()
            person = values.pop(key)
            people.setdefault(person, []).append((name, tuple(sorted(values.items()))))
    return sorted(tuple(sorted(rows)) for rows in people.values())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables=cohorts(), k=st.integers(2, 3))
def test_files_are_streamed_to_the_same_release(tables, k, tmp_path_factory):
    folder = tmp_path_factory.mktemp("streamed")
    for name, table in tables.items():
        table.to_csv(folder / f"{name}.csv", index=False)
    spec = spec_of(k, 0.5)
    try:
        in_memory = bl.anonymize(tables, spec, shuffle_seed=4)
    except BlendinError:
        return
    streamed = bl.anonymize({n: str(folder / f"{n}.csv") for n in TABLES}, spec,
                            output=folder / "out", shuffle_seed=4)
    assert streamed.tables is None and streamed.written == folder / "out"
    assert streamed.levels == in_memory.levels
    assert streamed.people == in_memory.people
    assert streamed.released_by_table == in_memory.released_by_table
    read = {n: pd.read_csv(folder / "out" / f"{n}.csv", dtype=str, keep_default_na=False)
            for n in TABLES}
    assert _people_rows(read) == _people_rows(in_memory.tables)
    assert not [p for p in folder.iterdir() if p.name.startswith(".blendin")]


def test_check_runs_on_the_released_tables_together(tmp_path: Path):
    result = bl.anonymize(_cohort(), spec_of(2, 0.5), shuffle_seed=5)
    report = bl.check(result.tables, spec_of(2, 0.5))
    assert report.passed and report.people == len(result.tables["patients"])
    assert report.tables == {n: len(t) for n, t in result.tables.items()}
    raw = bl.check(_cohort(), spec_of(2, 0.5))  # the input: people alone in their class
    assert not raw.passed and raw.people == 6
    # one visit more for a released person breaks their class
    grown = dict(result.tables)
    extra = grown["visits"].iloc[:1].assign(ward="c")
    grown["visits"] = pd.concat([grown["visits"], extra], ignore_index=True)
    assert not bl.check(grown, spec_of(2, 0.5)).passed or extra.ward.iloc[0] in set(
        result.tables["visits"][result.tables["visits"].pid == extra.pid.iloc[0]].ward)
    result.write(tmp_path / "out")
    run = CliRunner().invoke(main, ["check", *(f"--input={n}={tmp_path}/out/{n}.csv"
                                               for n in TABLES), "--spec",
                                    str(_spec_file(tmp_path))])
    assert run.exit_code == 0, run.output
    assert "tables             patients" in run.output and "PASSED" in run.output
    with pytest.raises(BlendinError, match="one table was given"):
        bl.check(result.tables["visits"], spec_of(2, 0.5))


def _spec_file(folder: Path) -> Path:
    path = folder / "s.toml"
    path.write_text(
        '[attributes]\nsensitive = ["dx"]\n'
        '[tables.patients]\nperson = "id"\n[tables.visits]\nperson = "pid"\n'
        '[tables.scripts]\nperson = "pid"\n'
        '[quasi_identifiers]\nsex = { flat = true }\nward = { flat = true }\n'
        'drug = { flat = true }\nage = { flat = true }\n'
        '[[privacy]]\nmodel = "k-anonymity"\nk = 2\n'
        '[anonymization]\nmax_suppression = 0.5\n')
    return path


def test_risk_of_related_tables_counts_people(tmp_path: Path):
    result = bl.anonymize(_cohort(), spec_of(2, 0.5), shuffle_seed=6)
    report = bl.risk(result.tables, spec=spec_of(2, 0.5))
    assert report.records == len(result.tables["patients"])  # people
    assert report.sizes.min() >= 2 and report.person is not None
    raw = bl.risk(_cohort(), spec=spec_of(2, 0.5))
    assert raw.records == 6 and raw.sample_uniques == raw.classes == 6
    with pytest.raises(BlendinError, match="no spec names them"):
        bl.risk(_cohort(), "age,sex")
    with pytest.raises(BlendinError, match="no spec names them"):  # it offered --qi
        bl.risk(_cohort())
    result.write(tmp_path / "out")
    run = CliRunner().invoke(main, ["risk", *(f"--input={n}={tmp_path}/out/{n}.csv"
                                              for n in TABLES), "--spec",
                                    str(_spec_file(tmp_path))])
    assert run.exit_code == 0, run.output
    assert f"people             {len(result.tables['patients'])}" in run.output


def test_what_a_killed_run_left_is_removed_by_the_next(tmp_path: Path):
    """A killed run leaves the stacked rows (raw) in a folder beside -o, and half-written
    tables in it: the next run removes them, and counts none as a file it would replace."""
    import subprocess

    dead = subprocess.Popen(["true"])
    dead.wait()
    for name, table in _cohort().items():
        table.to_csv(tmp_path / f"{name}.csv", index=False)
    stack = tmp_path / f".out.{dead.pid}.0123456789ab.tmp"
    stack.mkdir()
    (stack / "stack.parquet").write_text("the raw rows")
    (tmp_path / "out").mkdir()
    half = tmp_path / "out" / f".visits.csv.{dead.pid}.0123456789ab.tmp"
    half.write_text("pid,ward")
    run = CliRunner().invoke(main, ["anonymize", *(f"--input={n}={tmp_path / n}.csv"
                                                   for n in TABLES),
                                    "--spec", str(_spec_file(tmp_path)), "-o",
                                    str(tmp_path / "out")])
    assert run.exit_code == 0, run.output
    assert not stack.exists() and not half.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_failed_release_leaves_no_folder_it_made(tmp_path: Path, monkeypatch):
    import blendin.engines.embedded as embedded

    def full(self, table):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(embedded.BatchWriter, "write", full)
    out = tmp_path / "release"
    with pytest.raises(OSError):
        bl.anonymize(_cohort(), spec_of(2, 0.5), output=str(out))
    assert not out.exists()


def test_cli_options_take_effect_or_are_refused_with_related_tables(tmp_path: Path):
    """--normalize counts the spellings as one (it was dropped: an l-diverse release by
    spelling alone), and the options related tables do not take are refused, --dry-run
    first (it wrote the files)."""
    tables = _cohort()
    tables["visits"]["dx"] = ["u", "U", "u", "U", "u"]
    for name, table in tables.items():
        table.to_csv(tmp_path / f"{name}.csv", index=False)
    spec = _spec_file(tmp_path)
    spec.write_text(spec.read_text() + '[[privacy]]\nmodel = "distinct-l-diversity"\n'
                    'attribute = "dx"\nl = 2\n')
    args = ["anonymize", *(f"--input={n}={tmp_path / n}.csv" for n in TABLES),
            "--spec", str(spec), "-o", str(tmp_path / "out")]
    assert CliRunner().invoke(main, [*args, "--force"]).exit_code == 0  # u, U: two values
    run = CliRunner().invoke(main, [*args, "--normalize", "case", "--force"])
    assert run.exit_code == 2 and "no generalization meets" in run.output, run.output
    shutil.rmtree(tmp_path / "out")
    for extra in (["--dry-run"], ["--index-base", "0"], ["--external", str(spec)],
                  ["--population", "100"], ["--spark-master", "local[1]"],
                  ["--schema", "s"]):
        run = CliRunner().invoke(main, [*args, *extra])
        assert run.exit_code == 2, (extra, run.output)
        assert f"{extra[0]} does not work with related tables" in run.output
    assert not (tmp_path / "out").exists()


def test_check_and_risk_refuse_what_related_tables_do_not_take(tmp_path: Path):
    """--table, --query, --person, --weights, --suda, --cells (and their keywords) were
    accepted beside --input and changed nothing (a --weights column that is in no table
    even), and risk read the tables with a --delimiter of its own."""
    for name, table in _cohort().items():
        table.to_csv(tmp_path / f"{name}.csv", index=False, sep=";")
    tables = [f"--input={n}={tmp_path / n}.csv" for n in TABLES]
    spec = str(_spec_file(tmp_path))
    for command, extra in [("check", ["--table", "t"]), ("check", ["--query", "q"]),
                           ("check", ["--person", "id"]), ("risk", ["--table", "t"]),
                           ("risk", ["--person", "id"]), ("risk", ["--weights", "w"]),
                           ("risk", ["--household", "h"]), ("risk", ["--suda"]),
                           ("risk", ["--cells"])]:
        run = CliRunner().invoke(main, [command, *tables, "--spec", spec, *extra])
        assert run.exit_code == 2, (command, extra, run.output)
        assert extra[0] in run.output and "does not work with related tables" in run.output
    for keyword in ({"weights": "w"}, {"suda": True}, {"table": "t"}):
        with pytest.raises(BlendinError, match=f"--{next(iter(keyword))} .* related tables"):
            bl.risk(_cohort(), spec=spec_of(2, 0.5), **keyword)
    with pytest.raises(BlendinError, match="--query .* related tables"):
        bl.check(_cohort(), spec_of(2, 0.5), query="SELECT 1")
    run = CliRunner().invoke(main, ["risk", *tables, "--spec", spec, "--delimiter", "|"])
    assert run.exit_code == 2 and "with delimiter '|'" in run.output, run.output
    run = CliRunner().invoke(main, ["risk", *tables, "--spec", spec, "--delimiter", ";"])
    assert run.exit_code == 0, run.output


@pytest.mark.parametrize("extra", [["--output-delimiter", ";"], ["--escape-formulas"],
                                   ["--encoding", "latin-1"], ["--delimiter", ";"]])
def test_csv_options_are_refused_for_related_parquet_tables(tmp_path: Path, extra):
    """Each table is written as its input: with Parquet in and out they changed nothing."""
    for name, table in _cohort().items():
        table.to_parquet(tmp_path / f"{name}.parquet")
    run = CliRunner().invoke(main, ["anonymize", *(f"--input={n}={tmp_path / n}.parquet"
                                                   for n in TABLES), "--spec",
                                    str(_spec_file(tmp_path)), "-o", str(tmp_path / "out"),
                                    *extra])
    assert run.exit_code == 2 and extra[0] in run.output, run.output
    assert not (tmp_path / "out").exists()
