"""The SQL engine on real databases (DuckDB in process, a throwaway PostgreSQL server): the
same node and the same released rows as the embedded engine, names and values that would
break naive SQL, and the safety rules (source only read, a table named only after the check,
nothing left behind by a failed or killed run)."""

import collections
import importlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

duckdb = pytest.importorskip("duckdb")

from engine_cases import SEX, ZIPS, spec_for, table  # noqa: E402

from blendin.anonymize import anonymize  # noqa: E402
from blendin.check import check  # noqa: E402
from blendin.cli import main  # noqa: E402
from blendin.errors import BlendinError  # noqa: E402
from blendin.hierarchy.core import Hierarchy  # noqa: E402
from blendin.hierarchy.masking import masking  # noqa: E402
from blendin.models import (  # noqa: E402
    AverageRisk,
    BetaLikeness,
    DeltaDisclosure,
    EntropyLDiversity,
    KAnonymity,
    PopulationUniqueness,
    RecursiveCLDiversity,
    SampleUniqueness,
    TCloseness,
)
from blendin.risk import risk  # noqa: E402
from blendin.spec import Spec  # noqa: E402


def multiset(frame) -> collections.Counter:
    if isinstance(frame, pa.Table):
        frame = frame.to_pandas()
    frame = frame.astype(object).where(frame.notna(), None)
    return collections.Counter(tuple("" if v is None else str(v) for v in row)
                               for row in frame.values.tolist())


def quoted(name):
    return '"' + name.replace('"', '""') + '"'


class DuckBackend:
    name = "duckdb"

    def __init__(self, tmp_path):
        self.path = tmp_path / "data.duckdb"
        self.url = f"duckdb:///{self.path}"

    def put(self, name, df):
        with duckdb.connect(str(self.path)) as con:
            con.register("frame", df)
            con.sql(f"CREATE TABLE {quoted(name)} AS SELECT * FROM frame")

    def read(self, name):
        with duckdb.connect(str(self.path)) as con:
            return con.sql(f"SELECT * FROM {quoted(name)}").df()

    def tables(self):
        with duckdb.connect(str(self.path)) as con:
            return sorted(r[0] for r in con.sql("SELECT table_name FROM "
                                                 "information_schema.tables").fetchall())


class PostgresBackend:
    name = "postgres"

    def __init__(self, url):
        import psycopg

        self.url, self.psycopg = url, psycopg

    def put(self, name, df):
        types = {"int64": "bigint", "float64": "double precision", "bool": "boolean"}
        columns = ", ".join(f'{quoted(c)} {types.get(str(df[c].dtype), "text")}'
                            for c in df.columns)
        buffer = io.BytesIO()
        pcsv.write_csv(pa.Table.from_pandas(df, preserve_index=False), buffer,
                       pcsv.WriteOptions(include_header=False, quoting_style="all_valid"))
        with self.psycopg.connect(self.url, autocommit=True) as con:
            con.execute(f"CREATE TABLE {quoted(name)} ({columns})")
            with con.cursor() as cursor, cursor.copy(
                    f"COPY {quoted(name)} FROM STDIN (FORMAT csv)") as copy:
                copy.write(buffer.getvalue())

    def read(self, name):
        with self.psycopg.connect(self.url) as con:
            cursor = con.execute(f"SELECT * FROM {quoted(name)}")
            return pd.DataFrame(cursor.fetchall(), columns=[d.name for d in cursor.description])

    def tables(self):
        with self.psycopg.connect(self.url) as con:
            return sorted(r[0] for r in con.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname NOT IN "
                "('pg_catalog', 'information_schema')").fetchall())


@pytest.fixture(params=["duckdb", "postgres"])
def db(request, tmp_path):
    if request.param == "duckdb":
        yield DuckBackend(tmp_path)
        return
    request.getfixturevalue("pg_conn")  # the tables a test makes are dropped after it
    yield PostgresBackend(request.getfixturevalue("postgres_url"))


@pytest.mark.parametrize("algorithm", ["auto", "optimal", "exhaustive", "binary", "datafly",
                                       "heuristic", "mondrian"])
def test_same_node_and_same_release_as_embedded(db, algorithm):
    df = table()
    db.put("patients", df)
    spec = spec_for(df)
    options = {"max_checks": 40} if algorithm == "heuristic" else {}
    ours = anonymize(db.url, spec, table="patients", algorithm=algorithm, **options)
    theirs = anonymize(df, spec, algorithm=algorithm, **options)
    assert ours.levels == theirs.levels
    assert ours.suppressed == theirs.suppressed
    assert ours.check.passed
    assert multiset(ours.data) == multiset(theirs.data)


@pytest.mark.parametrize("models,suppressed", [
    ([KAnonymity(5), TCloseness("dx", 0.3)], "keep"),
    ([AverageRisk(0.1)], "drop"),
    ([KAnonymity(20)], "keep"),
    ([KAnonymity(3), EntropyLDiversity("dx", 2.5)], "drop"),
    ([KAnonymity(3), RecursiveCLDiversity("dx", 3, 2)], "drop"),
    ([KAnonymity(3), BetaLikeness("dx", 1.0)], "keep"),
    ([KAnonymity(3), DeltaDisclosure("dx", 1.2)], "drop"),
    ([SampleUniqueness(0.02)], "drop"),
    ([PopulationUniqueness(0.05, population=20_000)], "drop"),
])
def test_models_and_kept_records_as_embedded(db, models, suppressed):
    df = table(800, seed=5)
    db.put("patients", df)
    spec = spec_for(df, models=models, max_suppression=0.1)
    ours = anonymize(db.url, spec, table="patients", suppressed=suppressed)
    theirs = anonymize(df, spec, suppressed=suppressed)
    assert (ours.levels, ours.suppressed) == (theirs.levels, theirs.suppressed)
    assert multiset(ours.data) == multiset(theirs.data)


def test_recoded_parts_as_embedded(db):
    df = table(900, seed=7)
    db.put("patients", df)
    spec = spec_for(df, models=[KAnonymity(12)], max_suppression=0.3, recode_suppressed=True)
    ours = anonymize(db.url, spec, table="patients")
    theirs = anonymize(df, spec)
    assert ours.recoded_parts == theirs.recoded_parts and ours.recovered > 0
    assert multiset(ours.data) == multiset(theirs.data)


AWKWARD = ["select", "Zip Code", 'na"me', "ÄÖ"]


def test_awkward_names_and_values(db):
    rng = np.random.default_rng(1)
    n = 300
    values = ["O'Brien", "'; DROP TABLE patients; --", 'say "hi"', "Ünïcödé", "", None,
              "a,b", "line\nbreak"]
    df = pd.DataFrame({
        "select": rng.choice(["f", "m"], n),
        "Zip Code": rng.choice(ZIPS, n),
        'na"me': [values[i % len(values)] for i in range(n)],
        "ÄÖ": rng.choice(["x", "y", None], n),
    })
    db.put("Pätients; DROP", df)
    flat = Hierarchy.from_rows([[v, "*"] for v in ["x", "y", ""]])
    spec = Spec(quasi_identifiers={"select": SEX, "Zip Code": masking(), "ÄÖ": flat},
                sensitive=['na"me'], models=[KAnonymity(5)], max_suppression=0.05)
    ours = anonymize(db.url, spec, table="Pätients; DROP", output_table="Reléase \"1\"",
                     keep_order=False)
    theirs = anonymize(df, spec)
    assert ours.levels == theirs.levels
    back = db.read('Reléase "1"')
    assert list(back.columns) == AWKWARD
    assert multiset(back) == multiset(theirs.data)
    assert "Pätients; DROP" in db.tables()  # the source is untouched
    assert len(db.read("Pätients; DROP")) == n


def test_one_row_and_no_rows(db):
    df = table(1)
    db.put("one", df)
    db.put("none", df.iloc[:0])
    spec = spec_for(df, models=[KAnonymity(1)])
    ours = anonymize(db.url, spec, table="one")
    assert multiset(ours.data) == multiset(anonymize(df, spec).data)
    with pytest.raises(BlendinError, match="has no rows"):
        anonymize(db.url, spec, table="none")


def test_check_and_risk_in_the_database(db):
    df = table(700, seed=11)
    release = anonymize(df, spec_for(df)).data
    db.put("release", release)
    spec = spec_for(df)
    ours, theirs = check(db.url, spec, table="release"), check(release, spec)
    assert ours.passed and ours.to_dict() == theirs.to_dict()
    ours = risk(db.url, "age,sex,zip", table="release", sensitive=["dx"])
    theirs = risk(release, "age,sex,zip", sensitive=["dx"])
    assert ours.to_dict() == theirs.to_dict()
    ours = risk(db.url, "age,sex", query='SELECT * FROM "release" WHERE "sex" = \'f\'')
    assert ours.records == int((release.sex == "f").sum())


def test_release_table_named_after_the_check(db, checker_rejects):
    df = table()
    db.put("patients", df)
    with pytest.raises(BlendinError, match="failed the independent check"):
        anonymize(db.url, spec_for(df), table="patients", output_table="release")
    assert db.tables() == ["patients"]  # no release, no temporary table


def test_output_table_rules(db, tmp_path):
    df = table()
    db.put("patients", df)
    spec = spec_for(df)
    with pytest.raises(BlendinError, match="is the input table"):
        anonymize(db.url, spec, table="patients", output_table="patients")
    db.put("release", df.iloc[:3])
    with pytest.raises(BlendinError, match="already has a table 'release'"):
        anonymize(db.url, spec, table="patients", output_table="release")
    assert len(db.read("release")) == 3
    result = anonymize(db.url, spec, table="patients", output_table="release", replace=True)
    assert multiset(db.read("release")) == multiset(result.table)
    assert sorted(db.tables()) == ["patients", "release"]
    written = anonymize(db.url, spec, table="patients", output=tmp_path / "r.parquet")
    assert written.written.exists()
    assert multiset(written.table) == multiset(result.table)


def test_no_spelling_of_the_input_is_replaced(db):
    # the database resolves the output's name: DuckDB reads "PATIENTS" as patients; a
    # query or a view reads the table under it, even where its plan proves it empty
    df = table()
    db.put("patients", df)
    spec = spec_for(df)
    if db.name == "duckdb":
        with duckdb.connect(str(db.path)) as con:
            con.sql('CREATE VIEW "older" AS SELECT * FROM patients WHERE age > 30')
    else:
        import psycopg

        with psycopg.connect(db.url, autocommit=True) as con:
            con.execute('CREATE VIEW "older" AS SELECT * FROM patients WHERE age > 30')
    refused = [({"table": "patients"}, "patients", "is the input table"),
               ({"table": "older"}, "patients", 'is read by table "older"'),
               ({"query": 'SELECT * FROM "patients" WHERE age > 30'}, "patients",
                "is read by the query"),
               ({"query": 'SELECT * FROM "patients" WHERE false'}, "patients",
                "is read by the query"),
               ({"query": 'WITH x AS (SELECT * FROM "older") SELECT * FROM x'}, "patients",
                "is read by the query")]
    if db.name == "duckdb":
        refused += [({"table": "patients"}, "PATIENTS", "is the input table"),
                    ({"table": "PATIENTS"}, "Patients", "is the input table"),
                    ({"query": 'SELECT * FROM "older"'}, "Patients", "is read by the query")]
    for source, output_table, why in refused:
        with pytest.raises(BlendinError, match=why):
            anonymize(db.url, spec, output_table=output_table, replace=True, **source)
    assert multiset(db.read("patients")) == multiset(df)
    if db.name == "postgres":  # quoted names keep their case there: another table
        anonymize(db.url, spec, table="patients", output_table="PATIENTS")
        assert sorted(db.tables()) == ["PATIENTS", "patients"]
    else:
        anonymize(db.url, spec, table="PATIENTS", output_table="release")
        assert sorted(db.tables()) == ["older", "patients", "release"]


def test_postgres_refuses_to_replace_a_table_a_view_reads_before_any_work(postgres_url,
                                                                         pg_conn):
    # DROP TABLE would refuse it at the end of the run: the run is refused at its start
    db = PostgresBackend(postgres_url)
    df = table()
    db.put("patients", df)
    db.put("release", df.iloc[:3])
    pg_conn.execute('CREATE VIEW "latest" AS SELECT * FROM "release"')
    with pytest.raises(BlendinError, match="rule _RETURN on view latest"):
        anonymize(db.url, spec_for(df), table="patients", output_table="release",
                  replace=True)
    assert len(db.read("release")) == 3
    assert not [t for t in db.tables() if t.startswith("__blendin")]
    pg_conn.execute('DROP VIEW "latest"')
    anonymize(db.url, spec_for(df), table="patients", output_table="release", replace=True)
    assert len(db.read("release")) > 3


def test_a_duckdb_connection_is_a_database_and_a_relation_is_rows():
    df = table()
    spec = spec_for(df)
    con = duckdb.connect()
    con.register("frame", df)
    con.sql("CREATE TABLE patients AS SELECT * FROM frame")
    con.unregister("frame")
    con.sql("SET explain_output = 'optimized_only'")  # the caller's, and left so
    result = anonymize(con, spec, table="patients", output_table="release")
    assert multiset(con.sql("SELECT * FROM release").df()) == multiset(anonymize(df, spec).data)
    assert result.records == len(df)
    assert con.sql("SELECT current_setting('explain_output')").fetchall() == [
        ("optimized_only",)]
    older = con.sql("SELECT * FROM patients WHERE age > 30")
    ours, theirs = anonymize(older, spec), anonymize(df[df.age > 30], spec)
    assert ours.levels == theirs.levels and multiset(ours.data) == multiset(theirs.data)
    assert check(ours.data, spec).passed
    assert risk(older, "age,sex,zip").records == int((df.age > 30).sum())
    with pytest.raises(BlendinError, match="a DuckDB relation is rows"):
        anonymize(older, spec, table="patients")
    # names resolved along the connection's search path, as DuckDB resolves them
    con.sql("CREATE SCHEMA ward")
    con.sql("SET search_path = 'ward,main'")
    with pytest.raises(BlendinError, match="is read by the query"):
        anonymize(con, spec, query="SELECT * FROM patients", output_table="PATIENTS",
                  replace=True)
    assert con.sql("SELECT count(*) FROM main.patients").fetchall() == [(len(df),)]
    con.close()


def test_a_sqlalchemy_engine_is_read_as_its_url(postgres_url, pg_conn):
    import sqlalchemy

    df = table()
    db = PostgresBackend(postgres_url)
    db.put("patients", df)
    engine = sqlalchemy.create_engine(postgres_url.replace("postgresql://",
                                                          "postgresql+psycopg://"))
    anonymize(engine, spec_for(df), table="patients", output_table="release")
    assert multiset(db.read("release")) == multiset(anonymize(df, spec_for(df)).data)
    password = sqlalchemy.make_url(postgres_url).password
    with pytest.raises(BlendinError) as refused:
        anonymize(engine, spec_for(df), table="absent")
    assert "no table" in str(refused.value) and password not in str(refused.value)


def test_row_and_class_numbers_refused_before_any_work(db):
    df = table()
    db.put("patients", df)
    for option in ("group_column", "original_row"):
        with pytest.raises(BlendinError, match="no row order"):
            anonymize(db.url, spec_for(df), table="patients", **{option: "n"},
                      output_table="release")
    assert db.tables() == ["patients"]


def test_a_query_is_one_select(db):
    df = table()
    db.put("patients", df)
    with pytest.raises(BlendinError, match="one SELECT"):
        anonymize(db.url, spec_for(df), query='DROP TABLE "patients"')
    with pytest.raises(BlendinError, match="one SELECT"):
        anonymize(db.url, spec_for(df), query='SELECT 1; DROP TABLE "patients"')
    if db.name == "postgres":  # a data-modifying WITH is PostgreSQL's
        with pytest.raises(BlendinError, match="changes nothing"):
            anonymize(db.url, spec_for(df), query='WITH gone AS (DELETE FROM "patients" '
                      'RETURNING *) SELECT * FROM gone')
        assert len(db.read("patients")) == len(df)
    assert db.tables() == ["patients"]
    older = anonymize(db.url, spec_for(df), query='SELECT * FROM "patients" WHERE age > 30')
    assert older.records == int((df.age > 30).sum())



@pytest.mark.parametrize("suppressed", ["drop", "keep"])
def test_a_querys_rows_are_read_once(db, suppressed):
    # each reading of this query keeps other rows: the frequency table, the release and
    # the checker must all see one reading's
    df = table(600, seed=2)
    db.put("patients", df)
    result = anonymize(db.url, spec_for(df, max_suppression=0.1), suppressed=suppressed,
                       query='SELECT * FROM "patients" WHERE random() < 0.5',
                       output_table="release")
    released = db.read("release")
    assert result.check.passed and 0 < result.records < len(df)
    kept = result.records - (result.suppressed if suppressed == "drop" else 0)
    assert len(released) == kept
    assert db.tables() == ["patients", "release"]


def test_postgres_settings_of_how_values_are_written_change_no_value(postgres_url, pg_conn,
                                                                    tmp_path):
    """A server, database or role may write dates otherwise (DateStyle SQL, DMY: 13/01/2020)
    and floats short (extra_float_digits 0: 15 digits): the values are read and released
    as they are all the same."""
    from urllib.parse import quote

    import pyarrow.parquet as pq

    pg_conn.execute("CREATE TABLE t (sex text, d date, ts timestamp, x double precision)")
    rows = [("f", "2020-01-13", "2020-01-13 10:00:01.5", 1.2345678901234567),
            ("m", "1999-12-31", "2001-02-03 04:05:06", 0.1 + 0.2)] * 3
    with pg_conn.cursor() as cursor:
        cursor.executemany("INSERT INTO t VALUES (%s, %s, %s, %s)", rows)
    expected = pg_conn.execute("SELECT sex, d, ts, x FROM t").fetchall()
    url = postgres_url + "?options=" + quote("-c DateStyle=SQL,DMY -c extra_float_digits=0")
    spec = Spec(quasi_identifiers={"sex": SEX}, models=[KAnonymity(3)])
    held = anonymize(url, spec, table="t").data
    anonymize(url, spec, table="t", output=tmp_path / "r.parquet")
    for released in (held, pq.read_table(tmp_path / "r.parquet")):
        got = [tuple(r.values()) for r in released.to_pylist()]
        assert sorted(got) == sorted(expected)


def test_postgres_names_a_time_that_arrow_cannot_hold(postgres_url, pg_conn, tmp_path):
    """A timestamp of infinity (a row still valid) is released into a table as it is; read
    out of the database (a file, memory) it is refused naming its column and the way
    round, never with Arrow's traceback of a column number."""
    pg_conn.execute("CREATE TABLE t (sex text, valid_to timestamp)")
    pg_conn.execute("INSERT INTO t SELECT CASE WHEN g % 2 = 0 THEN 'f' ELSE 'm' END, CASE "
                    "WHEN g % 3 = 0 THEN 'infinity' ELSE '2020-01-01' END::timestamp "
                    "FROM generate_series(1, 12) AS g")
    spec = Spec(quasi_identifiers={"sex": SEX}, models=[KAnonymity(3)])
    path = tmp_path / "r.parquet"
    with pytest.raises(BlendinError, match="column 'valid_to' holds 'infinity'") as raised:
        anonymize(postgres_url, spec, table="t", output=path)
    assert "--output-table" in raised.value.fix and '"valid_to"::text' in raised.value.fix
    assert list(tmp_path.iterdir()) == []
    anonymize(postgres_url, spec, table="t", output=postgres_url, output_table="r")
    assert pg_conn.execute("SELECT count(*) FROM r WHERE valid_to = 'infinity'"
                           ).fetchone()[0] == 4


def test_postgres_releases_a_text_longer_than_a_block_read(postgres_url, pg_conn, tmp_path):
    """A row longer than the blocks the rows are read in (a long note: 256 KiB a block to
    a file, 4 MiB in memory) is read whole: it stopped the release with Arrow's
    "straddling object" error."""
    import pyarrow.parquet as pq

    pg_conn.execute("CREATE TABLE t (sex text, note text)")
    pg_conn.execute("INSERT INTO t SELECT CASE WHEN g % 2 = 0 THEN 'f' ELSE 'm' END, "
                    "repeat(E'a,\"b\\n', g * 200000) FROM generate_series(1, 4) AS g")
    expected = sorted(r[0] for r in pg_conn.execute("SELECT note FROM t").fetchall())
    spec = Spec(quasi_identifiers={"sex": SEX}, models=[KAnonymity(2)])
    held = anonymize(postgres_url, spec, table="t").data.column("note").to_pylist()
    anonymize(postgres_url, spec, table="t", output=tmp_path / "r.parquet")
    anonymize(postgres_url, spec, table="t", output=tmp_path / "r.csv")
    written = pq.read_table(tmp_path / "r.parquet").column("note").to_pylist()
    read = pcsv.read_csv(tmp_path / "r.csv", pcsv.ReadOptions(block_size=1 << 24),
                         pcsv.ParseOptions(newlines_in_values=True)).column("note").to_pylist()
    assert sorted(held) == sorted(written) == sorted(read) == expected


def test_postgres_generalizes_zoned_times_in_the_sessions_zone(postgres_url, pg_conn):
    """A timestamptz is generalized in the zone the database shows it in (its TimeZone),
    as DuckDB hands its zoned times over and as the embedded engine generalizes a zoned
    time: 2020-01-31 20:00 in New York is January, not February (UTC)."""
    from urllib.parse import quote

    from blendin.hierarchy.dates import dates

    pg_conn.execute("CREATE TABLE t (seen timestamptz, sex text)")
    pg_conn.execute("INSERT INTO t SELECT '2020-01-31 20:00 America/New_York'::timestamptz "
                    "+ g * interval '1 minute', 'f' FROM generate_series(1, 3) AS g")
    pg_conn.execute("INSERT INTO t VALUES ('2020-03-01 12:00 UTC', 'f')")
    url = postgres_url + "?options=" + quote("-c TimeZone=America/New_York")
    frame = pd.DataFrame({"seen": pd.to_datetime(
        ["2020-01-31 20:01", "2020-01-31 20:02", "2020-01-31 20:03", "2020-03-01 07:00"]
    ).tz_localize("America/New_York"), "sex": "f"})
    for k in (1, 2):
        spec = Spec(quasi_identifiers={"seen": dates("month", "year"), "sex": SEX},
                    models=[KAnonymity(k)], max_suppression=0.0)
        ours, theirs = anonymize(url, spec, table="t"), anonymize(frame, spec)
        assert ours.levels == theirs.levels
        assert multiset(ours.data) == multiset(theirs.data)


def test_postgres_reads_a_query_in_a_read_only_transaction(postgres_url, pg_conn):
    """A sequence's nextval() is refused before anything runs; a function of the user's
    that writes is stopped by the read-only transaction."""
    db = PostgresBackend(postgres_url)
    df = table()
    db.put("patients", df)
    pg_conn.execute("CREATE SEQUENCE counted")
    pg_conn.execute("CREATE TABLE visits (n int)")
    pg_conn.execute("CREATE FUNCTION visit() RETURNS int VOLATILE LANGUAGE sql AS "
                    "'INSERT INTO visits VALUES (1) RETURNING n'")
    try:
        with pytest.raises(BlendinError, match=r"calls nextval\(\), which changes"):
            anonymize(db.url, spec_for(df), query="SELECT *, nextval('counted') AS n FROM "
                      '"patients"')
        assert pg_conn.execute("SELECT last_value, is_called FROM counted").fetchone() == (
            1, False)
        for call in ("pg_create_physical_replication_slot('leak', true)",
                     "lo_from_bytea(0, 'x')", "pg_catalog.setval('counted', 9)"):
            with pytest.raises(BlendinError, match="which changes the database"):
                anonymize(db.url, spec_for(df), query=f'SELECT *, {call} FROM "patients"')
        assert pg_conn.execute("SELECT count(*) FROM pg_replication_slots").fetchone() == (0,)
        with pytest.raises(BlendinError, match="read-only transaction"):
            anonymize(db.url, spec_for(df), query='SELECT *, visit() AS n FROM "patients"')
        assert pg_conn.execute("SELECT count(*) FROM visits").fetchone() == (0,)
    finally:
        pg_conn.execute("DROP FUNCTION visit(); DROP TABLE visits; DROP SEQUENCE counted")


def test_a_duckdb_query_cannot_advance_a_sequence_and_a_missing_file_is_not_made(tmp_path):
    import duckdb

    path = tmp_path / "hospital.duckdb"
    df = table()
    with duckdb.connect(str(path)) as con:
        con.sql("CREATE TABLE patients AS SELECT * FROM df")
        con.sql("CREATE SEQUENCE counted")
    for where in ("", "WHERE NEXTVAL('counted') > 0"):
        with pytest.raises(BlendinError, match=r"calls (nextval|NEXTVAL)\(\), which changes"):
            anonymize(str(path), spec_for(df), output=tmp_path / "s.csv",
                      query=f"SELECT *, nextval('counted') FROM patients {where}")
    with duckdb.connect(str(path)) as con:  # in a view or macro: told, and the run stops
        con.sql("CREATE VIEW numbered AS SELECT *, nextval('counted') AS n FROM patients")
    with pytest.raises(BlendinError, match="advanced a sequence"):
        anonymize(str(path), spec_for(df), table="numbered", output=tmp_path / "s.csv")
    with pytest.raises(BlendinError, match="there is no DuckDB file"):
        anonymize(str(tmp_path / "ghost.duckdb"), spec_for(df), table="patients",
                  output=tmp_path / "s.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hospital.duckdb"]


def test_a_query_reads_whole_with_a_comment_or_semicolon_after_it(tmp_path):
    duck = DuckBackend(tmp_path)
    df = table()
    duck.put("patients", df)
    for tail in (" -- this year's", ";", "; -- done", "\n/* done */ ;;"):
        result = anonymize(duck.url, spec_for(df), query="SELECT * FROM patients" + tail)
        assert result.records == len(df)
    with pytest.raises(BlendinError, match=r"not valid SQL: line 1, column 12, at 'from"):
        anonymize(duck.url, spec_for(df), query="selec * from patients")


def test_a_postgres_group_by_runs_on_the_servers_workers(postgres_url, pg_conn):
    """The GROUP BYs of a run (the frequency table, the checker's) are planned on
    PostgreSQL's parallel workers, for their transaction only; the counts are the same."""
    from blendin.engines.databases import connect
    from blendin.engines.sql import group_by

    pg_conn.execute('CREATE TABLE "rows" AS SELECT i % 97 AS a, (i % 89)::text AS b '
                    "FROM generate_series(1, 50000) AS i")
    pg_conn.execute('ANALYZE "rows"')
    database = connect(postgres_url)
    statement = 'SELECT "a", "b", count(*) FROM "rows" GROUP BY "a", "b"'
    try:
        with database.transaction(read_only=True):
            # (a table this small is scanned in parallel only when told it may be)
            database.execute("SET LOCAL min_parallel_table_scan_size = 0")
            grouped = group_by(database, '"rows"', ["a", "b"])
            plan = "\n".join(row[0] for row in database.connection.execute(
                f"EXPLAIN {statement}").fetchall())
        after = database.scalar("SHOW parallel_tuple_cost")
    finally:
        database.close()
    assert "Gather" in plan and "Partial HashAggregate" in plan, plan
    assert after == "0.1"  # the server's own setting, once the transaction ended
    expected = {(a, b): n for a, b, n in pg_conn.execute(statement).fetchall()}
    assert grouped.num_rows == len(expected) == 97 * 89
    assert {(a, b): n for a, b, n in zip(
        grouped.column("a").to_pylist(), grouped.column("b").to_pylist(),
        grouped.column("__blendin_count__").to_pylist())} == expected


def test_rows_written_to_a_postgres_table_during_a_run_are_not_read(
        postgres_url, pg_conn, monkeypatch):
    db = PostgresBackend(postgres_url)
    df = table(400, seed=4)
    db.put("patients", df)
    run = importlib.import_module("blendin.anonymize.run")
    found = run.prepare

    def written_meanwhile(*args, **kwargs):  # after the frequency table, before the release
        plan = found(*args, **kwargs)
        pg_conn.execute('INSERT INTO "patients" SELECT * FROM "patients"')
        return plan

    monkeypatch.setattr(run, "prepare", written_meanwhile)
    result = anonymize(db.url, spec_for(df, max_suppression=0.1), table="patients",
                       output_table="release")
    assert len(db.read("patients")) == 2 * len(df)
    assert result.check.passed and result.records == len(df)
    assert len(db.read("release")) == len(df) - result.suppressed
    assert pg_conn.execute("SELECT count(*) FROM pg_stat_activity WHERE state = "
                           "'idle in transaction'").fetchone() == (0,)  # the holder is gone



def test_a_role_allowed_one_connection_reads_the_table_twice_and_is_told(
        postgres_url, pg_conn):
    db = PostgresBackend(postgres_url)
    df = table()
    db.put("patients", df)
    pg_conn.execute("CREATE ROLE solo LOGIN PASSWORD 'solo' CONNECTION LIMIT 1")
    try:
        pg_conn.execute('GRANT SELECT ON "patients" TO solo')
        pg_conn.execute("GRANT CREATE ON SCHEMA public TO solo")
        url = re.sub(r"//[^@]*@", "//solo:solo@", postgres_url)
        result = anonymize(url, spec_for(df), table="patients", output_table="release")
        assert result.check.passed
        assert len(db.read("release")) == len(df) - result.suppressed
        assert any("not at one snapshot" in w and "too many connections" in w
                   for w in result.warnings)
    finally:
        pg_conn.execute("DROP TABLE IF EXISTS release")
        pg_conn.execute("DROP OWNED BY solo")
        pg_conn.execute("DROP ROLE solo")


KILLED = textwrap.dedent("""
    import sys, time
    import blendin.engines.sql as sql
    from blendin.anonymize import anonymize
    sys.path.insert(0, sys.argv[3])
    from engine_cases import spec_for, table
    real = sql._ReleasePlan.regrouped
    def slow(self, *args):
        out = real(self, *args)
        print("made", flush=True)
        time.sleep(60)
        return out
    sql._ReleasePlan.regrouped = slow
    anonymize(sys.argv[1], spec_for(table()), table="patients", output_table=sys.argv[2])
""")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_run_leaves_no_table(db, how):
    db.put("patients", table())
    here = os.path.dirname(__file__)
    child = subprocess.Popen([sys.executable, "-c", KILLED, db.url, "release", here],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "made"  # the release table exists, unnamed
        child.send_signal(how)
        child.wait(30)
    finally:
        child.kill()
    time.sleep(0.2)
    assert db.tables() == ["patients"]


def test_password_never_shown(postgres_url, pg_conn, tmp_path, monkeypatch):
    import re

    secret = re.search(r"//[^:/]+:([^@]+)@", postgres_url).group(1)
    db = PostgresBackend(postgres_url)
    df = table()
    db.put("patients", df)
    bare = postgres_url.replace(f":{secret}@", "@")
    monkeypatch.setenv("BLENDIN_TEST_PASSWORD", secret)
    result = anonymize(bare, spec_for(df), table="patients", output_table="release",
                       password_env="BLENDIN_TEST_PASSWORD")
    assert secret not in repr(result) and secret not in json.dumps(result.to_dict())
    assert secret not in result.save_solution(tmp_path / "s.json").read_text()
    report = result.report(tmp_path / "r.html", original=result.source)
    assert secret not in report.read_text()
    wrong = postgres_url.replace(f":{secret}@", ":wrong-password@")
    with pytest.raises(BlendinError) as error:
        anonymize(wrong, spec_for(df), table="patients")
    assert "wrong-password" not in str(error.value) and "password" in str(error.value)
    assert "check the user and the password" in error.value.fix  # one was given: wrong
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-pgpass"))
    with pytest.raises(BlendinError) as error:
        anonymize(bare, spec_for(df), table="patients")
    assert "give the password in PGPASSWORD" in error.value.fix  # none was given
    from click.testing import CliRunner

    out = CliRunner().invoke(main, ["anonymize", postgres_url, "--table", "patients",
                                    "--spec", str(write_spec(tmp_path)), "-o", postgres_url,
                                    "--output-table", "again"])
    assert out.exit_code == 0, out.output
    assert secret not in out.output and 'table "again"' in out.output
    with pytest.raises(BlendinError) as error:  # a password given as the URL's parameter
        anonymize(f"{bare}?password=wrong-password", spec_for(df), table="patients")
    assert "wrong-password" not in str(error.value)
    assert "check the user and the password" in error.value.fix


@pytest.mark.parametrize("url", [
    "postgresql://me@127.0.0.1:1/db?sslmode=disable&password=SECRETPW",
    "postgresql://me:a@SECRETPW@127.0.0.1:1/db",  # libpq would take SECRETPW@... as the host
    "postgresql://me:a/SECRETPW@127.0.0.1:1/db",
    "postgresql://me:a#SECRETPW@127.0.0.1:1/db",
    "postgresql://me:a?SECRETPW@127.0.0.1:1/db",
    "postgresql://me@127.0.0.1:1/db?password=a#SECRETPW",
    "postgresql://me@127.0.0.1:1/db?sslpassword=SECRETPW",
    "postgresql://me@127.0.0.1:1/db?passwor%64=SECRETPW",  # (libpq decodes the name)
    "POSTGRESQL://me:SECRET%50W@127.0.0.1:1/db",  # (a driver quotes it as typed)
    "Postgres://me:SECRETPW@127.0.0.1:1/db",
    "postgresql://me:SECRETPW@127.0.0.1:99999/db",
    "postgresql://me:SECRETPW@127.0.0.1:abc/db",
    "postgresql://me:SECRETPW@[::1:1/db",
])
def test_a_url_that_reaches_no_server_never_shows_its_password(url, tmp_path):
    from click.testing import CliRunner

    out = CliRunner().invoke(main, ["anonymize", url, "--table", "t", "--spec",
                                    str(write_spec(tmp_path)), "-o", str(tmp_path / "r.csv")])
    assert out.exit_code == 2 and "SECRET" not in out.output, out.output
    assert "Traceback" not in out.output and "fix:" in out.output


def write_spec(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text(textwrap.dedent("""
        [attributes]
        identifiers = ["id"]
        sensitive = ["dx"]
        [quasi_identifiers]
        sex = { flat = true }
        zip = { masking = true }
        [[privacy]]
        model = "k-anonymity"
        k = 5
        [anonymization]
        max_suppression = 0.05
    """))
    return path


def test_cli(db, tmp_path):
    from click.testing import CliRunner

    df = table()
    db.put("patients", df)
    spec = str(write_spec(tmp_path))
    run = CliRunner().invoke
    out = run(main, ["anonymize", db.url, "--table", "patients", "--spec", spec,
                     "-o", db.url, "--output-table", "release"])
    assert out.exit_code == 0, out.output
    assert "release" in db.tables()
    again = run(main, ["anonymize", db.url, "--table", "patients", "--spec", spec,
                       "-o", db.url, "--output-table", "release"])
    assert again.exit_code == 2 and "--force" in again.output
    out = run(main, ["check", db.url, "--table", "release", "--spec", spec])
    assert out.exit_code == 0 and "PASSED" in out.output
    out = run(main, ["risk", db.url, "--table", "release", "--qi", "sex,zip"])
    assert out.exit_code == 0 and "prosecutor" in out.output
    parquet = tmp_path / "r.parquet"
    out = run(main, ["anonymize", db.url, "--query", "SELECT * FROM patients", "--spec", spec,
                     "-o", str(parquet)])
    assert out.exit_code == 0 and parquet.exists()
    for args, words in [
        ([db.url, "--spec", spec, "-o", str(tmp_path / "x.csv")], "--table NAME"),
        ([db.url, "--table", "nope", "--spec", spec, "-o", str(tmp_path / "x.csv")],
         'no table "nope"'),
        ([db.url, "--table", "patients", "--spec", spec, "-o", db.url], "--output-table"),
        ([str(tmp_path / "x.csv"), "--table", "t", "--spec", spec, "-o", "y.csv"],
         "is a file"),
    ]:
        out = run(main, ["anonymize", *args])
        assert out.exit_code == 2, out.output
        assert words in out.output and "Traceback" not in out.output


def test_delta_presence_releases_the_subset_as_embedded(db):
    from blendin.models import DeltaPresence

    df = table(800, seed=13)
    df["in"] = np.where(np.arange(len(df)) % 3 == 0, "True", "0")
    db.put("people", df)
    spec = spec_for(df, models=[KAnonymity(3), DeltaPresence(0.0, 0.7, "in")],
                    max_suppression=0.2)
    ours = anonymize(db.url, spec, table="people")
    theirs = anonymize(df, spec)
    assert (ours.levels, ours.suppressed) == (theirs.levels, theirs.suppressed)
    assert "in" not in ours.data.column_names
    assert multiset(ours.data) == multiset(theirs.data)


def test_differential_privacy_sample_drawn_in_the_database(db):
    import math

    from blendin.models import DifferentialPrivacy

    df = table(3000, seed=17)
    db.put("patients", df)
    model = DifferentialPrivacy(1.0, 1e-5, seed=3)
    spec = spec_for(df, models=[model], max_suppression=1.0)
    first = anonymize(db.url, spec, table="patients")
    assert first.check.passed and first.check.min_class_size >= model.k
    sampled = first.spec.models[0].records_in_input and first.records  # (the run's model)
    spread = math.sqrt(model.beta * (1 - model.beta) * len(df))
    assert abs(sampled - model.beta * len(df)) < 5 * spread
    assert db.tables() == ["patients"]  # the sample's table is gone
    if db.name == "postgres":  # one seeded scan: the same sample again
        again = anonymize(db.url, spec_for(df, models=[DifferentialPrivacy(1.0, 1e-5, seed=3)],
                                            max_suppression=1.0), table="patients")
        assert multiset(again.data) == multiset(first.data)


def test_dry_run_prints_the_sql_and_writes_nothing(db, tmp_path):
    from click.testing import CliRunner

    db.put("patients", table())
    spec = str(write_spec(tmp_path))
    out = CliRunner().invoke(main, ["anonymize", db.url, "--table", "patients", "--spec", spec,
                                    "-o", db.url, "--output-table", "release", "--dry-run"])
    assert out.exit_code == 0, out.output
    assert "dry run: nothing was written" in out.output
    assert 'GROUP BY CAST("sex" AS VARCHAR) COLLATE' in out.output and "CREATE TABLE" in out.output
    assert "ROLLBACK" in out.output
    assert db.tables() == ["patients"]
    # an existing output table: refused as in a real run, unless --force; never touched
    db.put("release", table().head(2))
    dry = ["anonymize", db.url, "--table", "patients", "--spec", spec, "-o", db.url,
           "--output-table", "release", "--dry-run"]
    out = CliRunner().invoke(main, dry)
    assert out.exit_code == 2 and "--force to replace it" in out.output
    out = CliRunner().invoke(main, [*dry, "--force"])
    assert out.exit_code == 0, out.output
    assert "CREATE TABLE" in out.output and "ROLLBACK" in out.output
    assert sorted(db.tables()) == ["patients", "release"] and len(db.read("release")) == 2
    out = CliRunner().invoke(main, ["anonymize", str(tmp_path / "x.csv"), "--spec", spec,
                                    "-o", str(tmp_path / "y.csv"), "--dry-run"])
    assert out.exit_code == 2 and "leave --dry-run out" in out.output
    # what only a written run makes was accepted, and nothing made (the report, the solution)
    for extra in (["--report", str(tmp_path / "r.html")],
                  ["--save-solution", str(tmp_path / "s.json")], ["--group-column"],
                  ["--escape-formulas"]):
        out = CliRunner().invoke(main, [*dry, "--force", *extra])
        assert out.exit_code == 2, out.output
        assert f"--dry-run writes nothing, and {extra[0]}" in out.output
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "s.json").exists()
    out = CliRunner().invoke(main, [*dry, "--force", "-q"])  # it printed the SQL regardless
    assert out.exit_code == 2 and "leave out --quiet, or --dry-run" in out.output


def test_duckdb_runs_on_the_threads_blendin_may_use(tmp_path, monkeypatch):
    """--threads (BLENDIN_THREADS) and the cores the process may run on (taskset) limit
    DuckDB's threads as they limit blendin's own: DuckDB alone would count the machine's."""
    from blendin.parallel import THREADS_VARIABLE, cores

    duckdb.connect(str(tmp_path / "x.duckdb")).close()
    url = f"duckdb:///{tmp_path / 'x.duckdb'}"
    ask = ("from blendin.engines.databases import connect; "
           f"print(connect({url!r}).scalar(\"SELECT current_setting('threads')\"))")

    def threads(*prefix: str) -> int:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        out = subprocess.run([*prefix, sys.executable, "-c", ask], env=env, check=True,
                             capture_output=True, text=True)
        return int(out.stdout)

    monkeypatch.setenv(THREADS_VARIABLE, "1")
    assert threads() == 1
    monkeypatch.delenv(THREADS_VARIABLE)
    assert threads() == cores()
    if shutil.which("taskset") and cores() > 1:
        assert threads("taskset", "-c", str(min(os.sched_getaffinity(0)))) == 1


def test_the_bars_of_a_release_in_the_database_run_to_the_end(db, tmp_path):
    from blendin.progress import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    db.put("patients", table())
    out = Terminal()
    with Progress(stream=out, delay=0.0, interval=0.0) as bars:
        result = anonymize(db.url, write_spec(tmp_path), table="patients", progress=bars,
                           output=tmp_path / "release.parquet")
    assert result.check.passed
    shown = out.getvalue()
    assert 'reading table "patients": 100%' in shown
    assert 'releasing table "patients":  20%' in shown  # the release's statement runs
    assert 'releasing table "patients": 100%' in shown


def test_a_long_statement_tells_how_far_it_is(db):
    """DuckDB measures a running statement: the bar hears shares within the step's band,
    growing; PostgreSQL does not, and the bar hears None (its clock moves on)."""
    from blendin.engines.databases import TICK, connect, ticking

    if db.name == "postgres":
        database = connect(db.url)
        heard = []
        with ticking(database, heard.append, 0.2, 0.7):
            database.scalar("SELECT pg_sleep(%s)", [4 * TICK])
        database.close()
        assert len(heard) >= 2 and set(heard) == {None}
        return
    database = connect("duckdb:///:memory:")
    rows = 100_000_000
    while True:  # a statement long enough for a few looks, whatever the machine
        heard = []
        start = time.perf_counter()
        with ticking(database, heard.append, 0.2, 0.7):
            database.scalar(f"SELECT sum(hash(i)) FROM range({rows}) AS t(i)")
        if time.perf_counter() - start > 6 * TICK or rows > 10**10:
            break
        rows *= 3
    database.close()
    shares = [h for h in heard if h is not None]
    assert shares and shares == sorted(shares) and shares[0] > 0.2 and shares[-1] <= 0.7


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_an_export_reads_small_blocks_and_writes_whole_row_groups(tmp_path, suffix):
    """The rows come in small blocks (PostgreSQL's reader holds blocks read ahead: small
    ones keep the memory down), their texts as dictionaries, a block's own each; the file
    holds plain texts, in row groups of EXPORT_WRITE_ROWS."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from blendin.engines.databases import Database
    from blendin.engines.sql import EXPORT_READ_ROWS, EXPORT_WRITE_ROWS, export

    asked = []

    class Blocks(Database):
        def batches(self, sql, rows=1 << 16, encoded=False):
            asked.append((rows, encoded))
            for start in range(0, 300_000, 1000):
                texts = pa.array([f"v{start // 7000}", f"w{start}"] * 500)
                yield pa.record_batch({"a": pa.array(range(start, start + 1000)),
                                       "t": texts.dictionary_encode() if encoded else texts})

    temp = tmp_path / f"release{suffix}.tmp"
    export(Blocks(), "SELECT a, t FROM t", str(temp), tmp_path / f"release{suffix}", ",",
           False)
    assert asked == [(EXPORT_READ_ROWS, True)]
    starts = [i // 1000 * 1000 for i in range(300_000)]
    expected = pa.table({"a": range(300_000),
                         "t": [f"w{s}" if i % 2 else f"v{s // 7000}"
                               for i, s in enumerate(starts)]})
    if suffix == ".csv":
        assert pcsv.read_csv(temp).equals(expected)
        return
    meta = pq.ParquetFile(temp).metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(groups) == 300_000 and len(groups) == -(-300_000 // EXPORT_WRITE_ROWS)
    assert pq.read_table(temp).equals(expected)


def test_tables_in_a_schema(db):
    df = table()
    if db.name == "duckdb":
        with duckdb.connect(str(db.path)) as con:
            con.sql('CREATE SCHEMA "Ward 1"')
            con.register("frame", df)
            con.sql('CREATE TABLE "Ward 1".patients AS SELECT * FROM frame')
    else:
        import psycopg

        with psycopg.connect(db.url, autocommit=True) as con:
            con.execute('DROP SCHEMA IF EXISTS "Ward 1" CASCADE')
            con.execute('CREATE SCHEMA "Ward 1"')
        db.put("patients_public", df)
        with psycopg.connect(db.url, autocommit=True) as con:
            con.execute('ALTER TABLE patients_public SET SCHEMA "Ward 1"')
            con.execute('ALTER TABLE "Ward 1".patients_public RENAME TO patients')
    try:
        result = anonymize(db.url, spec_for(df), table="patients", schema="Ward 1",
                           output_table="release")
        assert multiset(result.table) == multiset(anonymize(df, spec_for(df)).data)
        with pytest.raises(BlendinError, match='no table "patients"'):
            anonymize(db.url, spec_for(df), table="patients")  # not in the default schema
    finally:
        if db.name == "postgres":
            import psycopg

            with psycopg.connect(db.url, autocommit=True) as con:
                con.execute('DROP SCHEMA "Ward 1" CASCADE')


def test_a_full_domain_node_is_mapped_column_by_column(db):
    """The release maps each QI on its own for a full-domain node, each distinct tuple for
    Mondrian and a release in parts: the same rows either way (tests above), and the
    per-column maps hold values, not tuples."""
    from blendin.engines.sql import SqlEngine

    df = table()
    db.put("patients", df)
    made = {}
    for algorithm, parts in [("optimal", False), ("mondrian", False), ("optimal", True)]:
        spec = spec_for(df, recode_suppressed=parts, models=[KAnonymity(12)],
                        max_suppression=0.3)
        result = anonymize(db.url, spec, table="patients", algorithm=algorithm,
                           engine=SqlEngine(dry_run=True))
        made[algorithm, parts] = " ".join(result.source.db.log)
    assert "_column0" in made["optimal", False] and "_tuples" not in made["optimal", False]
    assert "_tuples" in made["mondrian", False] and "_column0" not in made["mondrian", False]
    assert "_tuples" in made["optimal", True]


@pytest.mark.parametrize("suppressed", ["keep", "drop"])
def test_values_held_equal_but_spelled_apart_are_all_released(db, suppressed):
    """-0.0 and 0.0 are one value to a GROUP BY and two texts (as 1.0 and 1.00 of a
    numeric): each row's own text finds its label, none is lost, and the frequency table
    counts them apart, as the embedded engine does."""
    from blendin.hierarchy.intervals import intervals

    df = pd.DataFrame({"x": [0.0, -0.0] * 4 + [7.0, 8.0, 9.0], "y": [f"r{i}" for i in range(11)]})
    db.put("t", df)
    for k in (2, 4):
        spec = Spec(quasi_identifiers={"x": intervals(5, 10)}, models=[KAnonymity(k)],
                    max_suppression=0.3)
        ours = anonymize(db.url, spec, table="t", suppressed=suppressed)
        theirs = anonymize(df, spec, suppressed=suppressed)
        assert (ours.levels, ours.suppressed) == (theirs.levels, theirs.suppressed)
        assert multiset(ours.data) == multiset(theirs.data)
        assert ours.data.num_rows == len(theirs.data)


@pytest.mark.parametrize("options", [{"algorithm": "mondrian"},
                                     {"recode_suppressed": True, "max_suppression": 0.3}])
def test_tuples_held_equal_but_spelled_apart_are_mapped_apart(db, options):
    """Mondrian and a release in parts map each distinct QI tuple: -0.0 and 0.0 (1.0 and
    1.00 of a numeric) are two, as the frequency table counted them, each released as
    the embedded engine releases it (one stood for both)."""
    df = table(900, seed=7)
    df["ratio"] = np.where(np.arange(len(df)) % 2 == 0, 0.0, -0.0)
    db.put("patients", df)
    options = dict(options)  # (shared by both backends)
    algorithm = options.pop("algorithm", "optimal")
    base = spec_for(df)
    spec = spec_for(df, quasi_identifiers={**base.quasi_identifiers, "ratio": Hierarchy.from_rows(
        [["0", "*"], ["-0", "*"]])}, models=[KAnonymity(12)], **options)
    ours = anonymize(db.url, spec, table="patients", algorithm=algorithm)
    theirs = anonymize(df, spec, algorithm=algorithm)
    assert (ours.levels, ours.suppressed) == (theirs.levels, theirs.suppressed)
    assert multiset(ours.data) == multiset(theirs.data)


@pytest.mark.parametrize("options", [{"algorithm": "mondrian"},
                                     {"recode_suppressed": True, "max_suppression": 0.3}])
def test_a_qi_of_nothing_but_nulls_maps_every_tuple(db, options):
    """A release that maps each distinct QI tuple matches a null by a flag: a column of
    nulls only (no value to stand in for them) released nothing at all."""
    from blendin.hierarchy.flat import flat

    df = table(900, seed=7).assign(unknown=None)
    options = dict(options)  # (shared by both backends)
    algorithm = options.pop("algorithm", "optimal")
    base = spec_for(df)
    spec = spec_for(df, quasi_identifiers={**base.quasi_identifiers, "unknown": flat()},
                    models=[KAnonymity(12)], **options)
    db.put("patients", df)
    ours = anonymize(db.url, spec, table="patients", algorithm=algorithm)
    theirs = anonymize(df, spec, algorithm=algorithm)
    assert ours.data.num_rows == len(theirs.data) > 0
    assert ours.recovered == theirs.recovered
    assert multiset(ours.data) == multiset(theirs.data)


def test_postgres_maps_tuples_of_a_type_without_min(postgres_url, pg_conn):
    """PostgreSQL has no min() of a boolean or a uuid: a null among them is matched all
    the same (Mondrian and a release in parts failed with an SQL error)."""
    from blendin.hierarchy.flat import flat

    df = table(200, seed=4)
    pg_conn.execute("CREATE TABLE t (id text, age bigint, sex text, zip text, dx text, "
                    "visits bigint, smoker boolean, card uuid)")
    smoker = [None, True, False]
    card = [None, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000000"]
    rows = [(*r, smoker[i % 3], card[i % 3]) for i, r in enumerate(df.itertuples(index=False))]
    with pg_conn.cursor() as cursor:
        cursor.executemany("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", rows)
    base = spec_for(df)
    spec = spec_for(df, quasi_identifiers={**base.quasi_identifiers, "smoker": flat(),
                                           "card": flat()}, models=[KAnonymity(6)])
    ours = anonymize(postgres_url, spec, table="t", algorithm="mondrian")
    assert ours.check.passed and ours.data.num_rows == len(df) - ours.suppressed


@pytest.mark.parametrize("algorithm", ["optimal", "mondrian"])
def test_a_collation_that_holds_a_and_A_equal_counts_them_apart(db, algorithm):
    """A text QI with a case-blind collation (DuckDB's NOCASE, a nondeterministic one of
    PostgreSQL): "A" and "a" are two values, as in the file the release is written to.
    The database counted them as one class, released both, and its checker (which grouped
    the same way) passed classes smaller than k."""
    from blendin.hierarchy.flat import flat

    rows = [("A", "r1"), ("a", "r2"), ("A", "r3"), ("a", "r4"), ("B", "r5"), ("B", "r6"),
            ("b", "r7"), ("b", "r8"), ("b", "r9")]
    if db.name == "duckdb":
        with duckdb.connect(str(db.path)) as con:
            con.execute("CREATE TABLE t (x VARCHAR COLLATE NOCASE, y VARCHAR)")
            con.executemany("INSERT INTO t VALUES (?, ?)", rows)
    else:
        import psycopg

        with psycopg.connect(db.url, autocommit=True) as con:
            con.execute("DROP COLLATION IF EXISTS blind")
            con.execute("CREATE COLLATION blind (provider = icu, locale = "
                        "'und-u-ks-level2', deterministic = false)")
            con.execute("CREATE TABLE t (x text COLLATE blind, y text)")
            with con.cursor() as cursor:
                cursor.executemany("INSERT INTO t VALUES (%s, %s)", rows)
    frame = pd.DataFrame(rows, columns=["x", "y"])
    spec = Spec(quasi_identifiers={"x": flat()}, models=[KAnonymity(3)], max_suppression=0.0)
    ours = anonymize(db.url, spec, table="t", algorithm=algorithm)
    theirs = anonymize(frame, spec, algorithm=algorithm)
    assert check(ours.data, spec).passed
    assert (ours.levels, ours.suppressed) == (theirs.levels, theirs.suppressed)
    assert multiset(ours.data) == multiset(theirs.data)


def visits_table(people: int = 60, seed: int = 3) -> pd.DataFrame:
    """A visits table: person-level age and sex, an event-level ward, 1 to 3 rows a
    person."""
    rng = np.random.default_rng(seed)
    count = rng.integers(1, 4, people)
    rows = int(count.sum())
    return pd.DataFrame({"pid": np.repeat([f"p{i}" for i in range(people)], count),
                         "age": np.repeat(rng.integers(20, 60, people), count),
                         "sex": np.repeat(rng.choice(["f", "m"], people), count),
                         "ward": rng.choice(["a", "b"], rows),
                         "dx": rng.choice(["flu", "cold", "gout"], rows)})


@pytest.mark.parametrize("event", [False, True])
@pytest.mark.parametrize("suppressed", ["drop", "keep"])
def test_a_person_key_counts_people_in_the_database_as_embedded(db, event, suppressed):
    from blendin.hierarchy.intervals import intervals

    df = visits_table()
    db.put("visits", df)
    qis = {"age": intervals(10, 20), "sex": Hierarchy.from_rows([["f", "*"], ["m", "*"]])}
    if event:
        qis["ward"] = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    spec = Spec(quasi_identifiers=qis, sensitive=["dx"], models=[KAnonymity(3)],
                person="pid", max_suppression=0.3)
    ours = anonymize(db.url, spec, table="visits", suppressed=suppressed)
    theirs = anonymize(df, spec, suppressed=suppressed)
    assert ours.levels == theirs.levels and ours.people == theirs.people
    assert ours.check.people == 60 and ours.check.passed
    assert "pid" not in ours.table.column_names
    assert multiset(ours.data) == multiset(theirs.data)
    assert check(db.url, spec, table="visits").to_dict() == check(df, spec).to_dict()
    assert risk(db.url, list(qis), table="visits", person="pid").to_dict() == risk(
        df, list(qis), person="pid").to_dict()


def test_a_release_held_in_memory_measures_its_risk_in_people(db):
    """The app measures a database table's release as it comes back: counted in people, as
    the input is (in records a person of three visits would fill a class of three)."""
    df = visits_table(people=40, seed=1)
    db.put("visits", df)
    spec = Spec(quasi_identifiers={"sex": Hierarchy.from_rows([["f", "*"], ["m", "*"]])},
                models=[KAnonymity(3)], person="pid", max_suppression=0.3)
    ours, theirs = anonymize(db.url, spec, table="visits"), anonymize(df, spec)
    assert ours.release_people is not None and "pid" not in ours.table.column_names
    assert len(ours.release_people) == ours.table.num_rows
    measured = risk(ours.table_with_people(), ["sex"], person="pid").to_dict()
    assert measured == risk(theirs.table_with_people(), ["sex"], person="pid").to_dict()
    assert measured["records"] == 40


def test_a_person_keys_release_table_holds_no_key(db):
    df = visits_table(seed=4)
    db.put("visits", df)
    spec = Spec(quasi_identifiers={"sex": Hierarchy.from_rows([["f", "*"], ["m", "*"]]),
                                   "ward": Hierarchy.from_rows([["a", "*"], ["b", "*"]])},
                models=[KAnonymity(3)], person="pid", max_suppression=0.3)
    ours = anonymize(db.url, spec, table="visits", output=db.url, output_table="released")
    released = db.read("released")
    assert list(released.columns) == ["age", "sex", "ward", "dx"]  # the source's order
    assert len(released) == ours.check.records - ours.check.suppressed
    assert multiset(released[["sex", "ward"]]) == multiset(
        anonymize(df, spec).data[["sex", "ward"]])


def related_tables():
    sys.path.insert(0, os.path.dirname(__file__))
    from test_related import _cohort

    return _cohort()


def test_related_tables_in_the_database_as_in_memory(db, tmp_path):
    from test_related import TABLES, _people_rows, spec_of

    tables = related_tables()
    for name, frame in tables.items():
        db.put(name, frame)
    spec = spec_of(2, 0.5)
    ours = anonymize(db.url, spec, output=db.url, output_table="{table}_release",
                     shuffle_seed=3)
    theirs = anonymize(tables, spec, shuffle_seed=3)
    assert ours.levels == theirs.levels and ours.people == theirs.people
    assert ours.released_by_table == theirs.released_by_table
    released = {n: db.read(f"{n}_release") for n in TABLES}
    assert _people_rows(released) == _people_rows(theirs.tables)
    assert not [t for t in db.tables() if t.startswith("__blendin")]
    folder = anonymize(db.url, spec, output=tmp_path / "out", shuffle_seed=3)
    files = {n: pd.read_csv(tmp_path / "out" / f"{n}.csv", dtype=str,
                            keep_default_na=False) for n in TABLES}
    assert folder.written == tmp_path / "out"
    assert _people_rows(files) == _people_rows(theirs.tables)
    with pytest.raises(BlendinError, match="already has a table"):
        anonymize(db.url, spec, output=db.url, output_table="{table}_release")
    with pytest.raises(BlendinError, match="put {table} in the name"):
        anonymize(db.url, spec, output=db.url, output_table="release")


def test_related_tables_in_the_database_are_checked_first(db):
    from test_related import spec_of

    tables = related_tables()
    tables["visits"].loc[0, "pid"] = "zz"
    tables["patients"].loc[3, "id"] = "a"
    for name, frame in tables.items():
        db.put(name, frame)
    with pytest.raises(BlendinError, match="has 1 people on two rows or more"):
        anonymize(db.url, spec_of(2, 0.5), output=db.url, output_table="{table}_r")
    assert "visits_r" not in db.tables()
    with pytest.raises(BlendinError, match="'patients' is an input table"):
        anonymize(db.url, spec_of(2, 0.5), output=db.url, output_table="{table}",
                  replace=True)


def test_related_tables_in_the_database_from_the_cli(db, tmp_path):
    from click.testing import CliRunner
    from test_related import _spec_file

    for name, frame in related_tables().items():
        db.put(name, frame)
    run = CliRunner().invoke(main, ["anonymize", db.url, "--spec", str(_spec_file(tmp_path)),
                                    "-o", db.url, "--output-table", "{table}_out"])
    assert run.exit_code == 0, run.output
    assert "related tables: patients 6 rows" in run.output
    assert {"patients_out", "visits_out", "scripts_out"} <= set(db.tables())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, "", "?", "a", "b"]),
                          st.sampled_from([None, 1.5, float("nan"), 2.25]),
                          st.integers(1, 5)), min_size=1, max_size=12))
def test_grouped_rows_read_as_text_are_counted_once(rows):
    """The database's distinct tuples, read as text: values that read as one text (a null,
    NaN and an empty text all read as the missing text) are counted together, and any
    other tuple is left as it is (the regrouping skipped where no column merges values)."""
    from blendin.engines.sql import texts_counted

    distinct = {}
    for a, b, count in rows:  # as a GROUP BY gives them: each tuple of values once
        key = (a, "nan" if b != b else b)
        distinct[key] = (a, b, distinct.get(key, (0, 0, 0))[2] + count)
    a, b, counts = zip(*distinct.values())
    grouped = pa.table({"a": pa.array(a, pa.string()), "b": pa.array(b, pa.float64()),
                        "__blendin_count__": pa.array(counts, pa.int64())})
    got = texts_counted(grouped, ["a", "b"], "?").to_pylist()
    expected = collections.Counter()
    for a, b, count in distinct.values():
        text = "?" if b is None or b != b else str(b)
        expected["?" if a in (None, "") else a, text] += count
    assert len(got) == len(expected)
    assert {(r["a"], r["b"]): r["__blendin_count__"] for r in got} == expected


def test_a_duckdb_release_refuses_row_columns_and_an_empty_table_name_before_work(tmp_path):
    from click.testing import CliRunner

    duck = DuckBackend(tmp_path)
    duck.put("patients", table())
    spec = str(write_spec(tmp_path))
    numbered = CliRunner().invoke(main, ["anonymize", str(duck.path), "--table", "patients",
                                         "--spec", spec, "-o", str(tmp_path / "r.csv"),
                                         "--group-column", "g"])
    assert numbered.exit_code == 2 and "has no row order" in numbered.output
    unnamed = CliRunner().invoke(main, ["anonymize", str(duck.path), "--table", "patients",
                                        "--spec", spec, "-o", str(duck.path),
                                        "--output-table", ""])
    assert unnamed.exit_code == 2 and "--output-table names no table" in unnamed.output
    assert duck.tables() == ["patients"]


def test_postgres_never_replaces_a_table_the_input_reads_through_a_function(postgres_url,
                                                                           pg_conn):
    """A function the input calls may read the output table where no plan or name shows
    it: the run counts the table's scans in each transaction, and refuses to replace it."""
    db = PostgresBackend(postgres_url)
    df = table()
    db.put("patients", df)
    db.put("copy", df)
    pg_conn.execute('CREATE FUNCTION all_copy() RETURNS SETOF "patients" LANGUAGE plpgsql AS '
                    '$$BEGIN RETURN QUERY SELECT * FROM "copy"; END$$')
    pg_conn.execute('CREATE VIEW through AS SELECT * FROM all_copy()')
    try:
        for source in ({"query": "SELECT * FROM all_copy()"}, {"table": "through"}):
            with pytest.raises(BlendinError, match="is read by the input .through a "
                                                   "function"):
                anonymize(db.url, spec_for(df), output_table="copy", replace=True, **source)
            assert len(db.read("copy")) == len(df)  # the table as it was
        released = anonymize(db.url, spec_for(df), table="patients", output_table="copy",
                             replace=True)  # another input: replaced, as asked
        assert released.check.passed and "copy" in db.tables()
    finally:
        pg_conn.execute("DROP VIEW IF EXISTS through; DROP FUNCTION IF EXISTS all_copy()")


def test_a_dotted_name_is_taken_as_written_and_the_schema_is_named_apart(db):
    """``--output-table main.x`` made a table named "main.x"; now the schema is asked for
    apart, and a missing ``schema.table`` input names the flags that read it."""
    df = table(60)
    db.put("patients", df)
    schema = "main" if db.name == "duckdb" else "public"
    spec = spec_for(df)
    with pytest.raises(BlendinError, match=f"--schema {schema} --output-table x"):
        anonymize(db.url, spec, table="patients", output_table=f"{schema}.x")
    with pytest.raises(BlendinError, match=f"--schema {schema} --table patients"):
        anonymize(db.url, spec, table=f"{schema}.patients")
    db.put("a.b", df)  # a dotted name, given with its schema, is taken as written
    anonymize(db.url, spec, table="a.b", schema=schema, output_table="a.c")
    assert "a.c" in db.tables() and "x" not in db.tables()
