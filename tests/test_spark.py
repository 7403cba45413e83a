"""The Spark engine (local[2], one session for the module) gives the embedded engine's
answers: the same node or partitioning, the same released multiset of rows; the checker's
failures write nothing; bad input gets the same errors."""

import collections
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")
# pyspark 4 on pandas 3 warns about its own pandas conversions (the tests' toPandas)
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning",
                                        "ignore:The copy keyword is deprecated")

from engine_cases import decades_case, spec_for, table  # noqa: E402

from blendin.anonymize import anonymize, apply_solution  # noqa: E402
from blendin.check import check  # noqa: E402
from blendin.cli import main  # noqa: E402
from blendin.engines import is_spark  # noqa: E402
from blendin.engines.spark import SparkEngine  # noqa: E402
from blendin.errors import BlendinError  # noqa: E402
from blendin.models import KAnonymity, TCloseness  # noqa: E402
from blendin.risk import risk  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need pyarrow
    session = (SparkSession.builder.master("local[2]").appName("blendin-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def multiset(frame) -> collections.Counter:
    if is_spark(frame):
        frame = frame.toPandas()
    if isinstance(frame, pa.Table):
        frame = frame.to_pandas()
    return collections.Counter(map(tuple, frame.astype(str).values.tolist()))


@pytest.mark.parametrize("algorithm", ["auto", "optimal", "exhaustive", "binary", "datafly",
                                       "mondrian"])
def test_same_node_and_same_release_as_embedded(spark, algorithm):
    df = table()
    spec = spec_for(df)
    ours = anonymize(spark.createDataFrame(df), spec, algorithm=algorithm)
    embedded = anonymize(df, spec, algorithm=algorithm)
    assert is_spark(ours.data)
    assert ours.levels == embedded.levels
    if algorithm == "mondrian":
        assert np.array_equal(ours.solution.group_of_tuple, embedded.solution.group_of_tuple)
    assert (ours.suppressed, ours.classes, ours.min_class_size) == (
        embedded.suppressed, embedded.classes, embedded.min_class_size)
    assert multiset(ours.data) == multiset(embedded.data)
    assert ours.check.passed and ours.check.to_dict() == embedded.check.to_dict()


def test_cells_as_embedded_and_transforms_refused(spark):
    import dataclasses

    import blendin as bl

    df = table()
    spec = dataclasses.replace(spec_for(df), models=[KAnonymity(3)], max_suppression=0.3,
                               suppression="cells")
    ours, embedded = anonymize(spark.createDataFrame(df), spec), anonymize(df, spec)
    assert ours.check.passed and ours.cells == embedded.cells and sum(ours.cells.values())
    assert multiset(ours.data) == multiset(embedded.data)
    numeric = next(c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])
                   and c not in spec.roles())
    spec = dataclasses.replace(spec_for(df), transforms={numeric: bl.Microaggregate(3)})
    with pytest.raises(BlendinError, match="embedded engine"):
        anonymize(spark.createDataFrame(df), spec)


def test_t_closeness_kept_records_and_pandas_in(spark):
    df = table(seed=5)
    spec = spec_for(df, models=[KAnonymity(5), TCloseness("dx", 0.3)], max_suppression=0.1)
    ours = anonymize(df, spec, suppressed="keep", engine=SparkEngine(spark))
    embedded = anonymize(df, spec, suppressed="keep")
    assert isinstance(ours.data, pd.DataFrame)  # the kind given comes back
    assert ours.levels == embedded.levels and multiset(ours.data) == multiset(embedded.data)


def test_recoded_parts_on_spark(spark):
    df = table(seed=3)
    spec = spec_for(df, models=[KAnonymity(10)], max_suppression=0.05)
    ours = anonymize(spark.createDataFrame(df), spec, recode_suppressed=True)
    embedded = anonymize(df, spec, recode_suppressed=True)
    assert len(embedded.recoded_parts) == 2 and ours.recoded_parts == embedded.recoded_parts
    assert multiset(ours.data) == multiset(embedded.data)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_spark_result_writes_itself_through_spark(spark, tmp_path, suffix):
    df = table()
    spec = spec_for(df)
    result = anonymize(spark.createDataFrame(df), spec)
    out = tmp_path / f"release{suffix}"
    assert result.write(out) == out and out.is_dir()  # Spark's folder of part files
    read = (spark.read.parquet(str(out)) if suffix == ".parquet"
            else spark.read.csv(str(out), header=True))
    assert multiset(read) == multiset(anonymize(df, spec).data.astype(str))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]

def test_files_in_and_out_renamed_after_the_check(spark, tmp_path):
    df = table()
    spec = spec_for(df)
    data = tmp_path / "people.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), data)
    out = tmp_path / "release.parquet"
    result = anonymize(str(data), spec, output=out, engine=SparkEngine(spark))
    assert result.written == out and result.data is None and out.is_dir()
    assert multiset(pq.read_table(out)) == multiset(anonymize(df, spec).data)
    assert check(spark.read.parquet(str(out)), spec).passed  # check on a Spark DataFrame
    parts = tmp_path / "people_parts.parquet"  # a folder of part files, as Spark writes
    spark.createDataFrame(df).write.parquet(str(parts))
    again = anonymize(str(parts), spec, engine=SparkEngine(spark))
    assert multiset(again.data) == multiset(result.table)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    first = anonymize(df, spec)
    applied = apply_solution(str(data), first, output=tmp_path / "applied.csv",
                             engine=SparkEngine(spark))
    written = spark.read.csv(str(applied.written), header=True)
    assert multiset(written.toPandas()) == multiset(first.data.astype(str))


def test_checker_failure_writes_nothing(spark, tmp_path, checker_rejects):
    df = table()
    out = tmp_path / "release.parquet"
    with pytest.raises(BlendinError, match="independent check"):
        anonymize(spark.createDataFrame(df), spec_for(df), output=out)
    assert os.listdir(tmp_path) == []


def test_bad_input_gets_the_embedded_errors(spark):
    df = table(n=50)
    spec = spec_for(df)
    for frame, wrong in ((df.drop(columns="zip"), "zip"),
                         (df.assign(zip=df.zip.astype(int)), "zip")):
        with pytest.raises(BlendinError) as embedded:
            anonymize(frame, spec)
        with pytest.raises(BlendinError) as ours:
            anonymize(spark.createDataFrame(frame), spec)
        assert str(ours.value) == str(embedded.value) and wrong in str(ours.value)


@pytest.mark.parametrize("suppressed,base", [("drop", 1), ("keep", 0)])
def test_class_and_row_numbers_as_embedded(spark, tmp_path, suppressed, base):
    df = table(n=900, seed=7)
    spec = spec_for(df, models=[KAnonymity(12)], max_suppression=0.1)
    data = tmp_path / "people.csv"
    df.to_csv(data, index=False)
    options = dict(group_column="group", original_row="row", index_base=base,
                   suppressed=suppressed, keep_order=True)
    embedded = anonymize(str(data), spec, **options).table.to_pandas()
    assert embedded.group.isna().any() == (suppressed == "keep")
    # tiny splits: the file is read as several partitions, numbered where the last ended
    spark.conf.set("spark.sql.files.maxPartitionBytes", "4096")
    try:
        engine = SparkEngine(spark)
        assert engine.source(str(data), spec).df.rdd.getNumPartitions() > 2
        ours = anonymize(str(data), spec, engine=engine, **options).table.to_pandas()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert list(ours.columns) == list(embedded.columns)
    ours = ours.sort_values("row").reset_index(drop=True)
    assert ours.astype(str).equals(embedded.astype(str))
    # shuffled: the same rows, numbered from the source, the classes in the release's order
    options["keep_order"] = False
    shuffled = anonymize(str(data), spec, engine=SparkEngine(spark), **options).table
    shuffled = shuffled.to_pandas()
    assert not shuffled.row.is_monotonic_increasing
    firsts = shuffled.dropna(subset=["group"]).drop_duplicates("group").group.tolist()
    assert firsts == sorted(firsts)
    by_row = shuffled.sort_values("row").reset_index(drop=True).drop(columns="group")
    assert by_row.astype(str).equals(embedded.drop(columns="group").astype(str))
    frame = anonymize(spark.createDataFrame(df), spec, original_row="row").data.toPandas()
    assert sorted(frame.row) == sorted(anonymize(df, spec, original_row="row").data.row)


def test_check_and_risk_on_spark_frames(spark):
    df = table()
    spec = spec_for(df)
    raw = spark.createDataFrame(df)
    assert check(raw, spec).to_dict() == check(df, spec).to_dict()
    ours, embedded = risk(raw, spec=spec), risk(df, spec=spec)
    assert (ours.records, ours.classes, ours.suppressed) == (
        embedded.records, embedded.classes, embedded.suppressed)
    assert sorted(ours.sizes) == sorted(embedded.sizes)
    assert ours.prosecutor == embedded.prosecutor and ours.homogeneity == embedded.homogeneity


CLI_SPEC = """
[attributes]
identifiers = ["id"]
sensitive = ["dx"]
[quasi_identifiers]
age = { intervals = [10, 20] }
sex = { flat = true }
zip = { masking = 5 }
[[privacy]]
model = "k-anonymity"
k = 8
[anonymization]
max_suppression = 0.05
"""


def cli_case(folder):
    """A CSV file of people and a spec file for ``blendin anonymize``."""
    data, spec = folder / "people.csv", folder / "release.toml"
    table().to_csv(data, index=False)
    spec.write_text(CLI_SPEC)
    return data, spec


def test_cli_engine_spark(spark, tmp_path):
    data, spec = cli_case(tmp_path)
    out = tmp_path / "release.csv"
    runner = CliRunner()
    args = ["anonymize", str(data), "--spec", str(spec), "-o", str(out), "--quiet"]
    assert runner.invoke(main, args + ["--engine", "spark", "--spark-master", "local[2]",
                                       "--spark-conf", "spark.ui.enabled=false"]).exit_code == 0
    again = runner.invoke(main, args + ["--engine", "spark"])  # exists: needs --force
    assert again.exit_code == 2 and "--force" in again.stderr
    assert runner.invoke(main, args + ["--engine", "spark", "--force"]).exit_code == 0
    embedded = tmp_path / "embedded.csv"
    args[5] = str(embedded)
    assert runner.invoke(main, args).exit_code == 0
    written = spark.read.csv(str(out), header=True).toPandas()
    assert multiset(written) == multiset(pd.read_csv(embedded, dtype=str))
    bad = runner.invoke(main, args + ["--spark-conf", "x"])
    assert bad.exit_code == 2 and "--engine spark" in bad.stderr


def test_uris_reach_spark_and_the_commit_is_hadoops(spark, tmp_path, monkeypatch):
    df = table()
    data = tmp_path / "people.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), data)
    spec = spec_for(df)
    out = tmp_path / "release.parquet"

    def no_os_rename(*args):
        raise AssertionError("a Spark release is committed by Hadoop's file system")

    monkeypatch.setattr(os, "rename", no_os_rename)
    monkeypatch.setattr(os, "replace", no_os_rename)
    result = anonymize(data.as_uri(), spec, output=out.as_uri(), engine=SparkEngine(spark),
                       group_column="group", keep_order=True)
    assert out.is_dir() and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    embedded = anonymize(df, spec, group_column="group", keep_order=True).data
    assert multiset(pq.read_table(out)) == multiset(embedded)
    assert result.written is not None


def test_a_scheme_without_its_connector_is_named(spark, tmp_path):
    spec = tmp_path / "release.toml"
    spec.write_text('[quasi_identifiers]\nzip = { masking = 5 }\n[[privacy]]\n'
                    'model = "k-anonymity"\nk = 2\n')
    out = tmp_path / "release.parquet"
    run = CliRunner().invoke(main, ["anonymize", "s3a://bucket/people.parquet", "--spec",
                                    str(spec), "-o", str(out), "--engine", "spark",
                                    "--group-column", "group"])
    assert run.exit_code != 0 and "no file system for s3a://" in run.stderr
    assert "hadoop-aws" in run.stderr and not out.exists()
    with pytest.raises(BlendinError, match="no file system for gs://"):
        SparkEngine(spark).write(spark.range(1), "gs://bucket/release.parquet")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone Spark cluster on this machine: a master and a worker, JVMs of their own,
    the worker starting executors (and their Python workers) as a cluster node does."""
    from pyspark.find_spark_home import _find_spark_home

    home = _find_spark_home()
    folder = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(folder)}
    spark_class = os.path.join(home, "bin", "spark-class")
    url = f"spark://127.0.0.1:{_free_port()}"
    with open(folder / "cluster.log", "w") as log:
        master = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", url.rpartition(":")[2], "--webui-port", str(_free_port())],
            env=env, stdout=log, stderr=subprocess.STDOUT)
        worker = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
             "--cores", "2", "--memory", "1g", "--work-dir", str(folder / "work"),
             "--webui-port", str(_free_port())], env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while "Registering worker" not in (folder / "cluster.log").read_text():
                assert time.monotonic() < deadline, (folder / "cluster.log").read_text()[-2000:]
                assert master.poll() is None and worker.poll() is None
                time.sleep(0.5)
            yield url
        finally:
            for process in (worker, master):
                process.terminate()
                process.wait(timeout=60)


def run_cli(args, python: str | None = None):
    """``blendin`` in a process of its own (a driver of its own), its executors running
    ``python`` (by default, as the environment says)."""
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    if python is not None:
        env["PYSPARK_PYTHON"] = python
    return subprocess.run([sys.executable, "-c", "from blendin.cli import main; main()",
                           *args], env=env, capture_output=True, text=True, timeout=600)


def test_cli_on_a_standalone_cluster(cluster, tmp_path):
    data, spec = cli_case(tmp_path)
    out, embedded = tmp_path / "release.parquet", tmp_path / "embedded.parquet"
    args = ["anonymize", str(data), "--spec", str(spec), "--quiet"]
    run = run_cli([*args, "-o", str(out), "--engine", "spark", "--spark-master", cluster,
                   "--spark-conf", f"spark.pyspark.python={sys.executable}"])
    assert run.returncode == 0, run.stderr[-3000:]
    assert " WARN " not in run.stderr and "[Stage" not in run.stderr  # Spark kept quiet
    assert CliRunner().invoke(main, [*args, "-o", str(embedded)]).exit_code == 0
    assert multiset(pq.read_table(out)) == multiset(pq.read_table(embedded))


def test_executors_without_blendin_get_a_clear_error(cluster, tmp_path):
    # the Python this one was made from: no blendin installed there
    base = getattr(sys, "_base_executable", None)
    if not base or base == sys.executable or subprocess.run(
            [base, "-c", "import blendin"], capture_output=True).returncode == 0:
        pytest.skip("needs a Python without blendin")
    data, spec = cli_case(tmp_path)
    out = tmp_path / "release.parquet"
    run = run_cli(["anonymize", str(data), "--spec", str(spec), "-o", str(out), "--quiet",
                   "--engine", "spark", "--spark-master", cluster], base)
    assert run.returncode == 2, run.stderr[-3000:]
    assert "the Spark executors' Python cannot import" in run.stderr
    assert "PYSPARK_PYTHON=" in run.stderr and "Traceback" not in run.stderr
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


@pytest.mark.parametrize("master", ["bogus://x", "local[two]", "localhost"])
def test_a_master_spark_does_not_know_is_refused_before_spark_starts(master):
    with pytest.raises(BlendinError, match=re.escape(f"'{master}' is not a Spark master")) \
            as refused:
        SparkEngine(master=master)
    assert "--spark-master local[*]" in refused.value.fix
    for known in ("local", "local[*]", "local[4]", "local[4,2]", "spark://h:7077", "yarn",
                  "k8s://https://h:6443"):
        assert SparkEngine(master=known).master == known


def test_a_jvm_started_for_a_session_that_never_came_up_is_stopped(monkeypatch):
    """SIGTERM while the session comes up (the CLI's SystemExit) left Spark's JVM running
    after the process had gone: the children started meanwhile are stopped with it."""
    from pyspark.sql import SparkSession

    started = []

    def interrupted(builder):
        started.append(subprocess.Popen(["sleep", "60"]))  # (the JVM, launched)
        raise SystemExit(143)

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", interrupted)
    with pytest.raises(SystemExit):
        SparkEngine(master="local[1]").spark  # noqa: B018
    assert started[0].wait(timeout=10) == -9


def test_a_csv_is_read_and_written_with_its_values_as_they_are(spark, tmp_path):
    """Spark's CSV writer trims values by default: the file held "HIV" three times where
    the checker passed "HIV", "HIV " and " HIV" (3-diverse). A malformed row stops the
    run, as on the embedded engine, and latin-1 is read under Java's name for it."""
    import glob

    from blendin.models import DistinctLDiversity
    from blendin.spec import Spec

    data = tmp_path / "spaced.csv"
    data.write_text("sex,dx\nM,HIV\nM,HIV \nM, HIV\nF,HIV\nF,HIV \nF, HIV\n",
                    encoding="latin-1")
    spec = Spec(quasi_identifiers={"sex": bl_flat()}, sensitive=["dx"],
                models=[KAnonymity(3), DistinctLDiversity("dx", 3)])
    out = tmp_path / "release.csv"
    anonymize(str(data), spec, output=out, engine=SparkEngine(spark), keep_order=True)
    written = pd.concat(pd.read_csv(p, dtype=str, keep_default_na=False)
                        for p in sorted(glob.glob(str(out / "part-*.csv"))))
    assert sorted(written["dx"]) == sorted(["HIV", "HIV ", " HIV"] * 2)
    spec.encoding = "latin-1"
    assert anonymize(str(data), spec, engine=SparkEngine(spark)).check.passed
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("sex,dx\nM,flu\nM,flu,extra\nF,flu\n")
    with pytest.raises(BlendinError, match="a field too many or too few"):
        anonymize(str(ragged), Spec(quasi_identifiers={"sex": bl_flat()},
                                    models=[KAnonymity(1)]), engine=SparkEngine(spark))


def bl_flat():
    from blendin.hierarchy.builders import flat

    return flat()


@pytest.mark.parametrize("swaps", [True, False])
def test_a_release_replaced_on_spark_is_never_missing_from_its_name(spark, tmp_path,
                                                                   monkeypatch, swaps):
    """The old release and the new swap names in one step (renameat2's exchange): a run
    killed in the middle cannot leave the name empty. Where the system cannot swap, the
    old release is moved aside and removed, as before."""
    import blendin.engines.spark as spark_engine
    from blendin.io import exchange

    df = table()
    spec = spec_for(df)
    out = tmp_path / "release.parquet"
    anonymize(spark.createDataFrame(df), spec, output=out)
    seen = []

    def swap(a, b):
        seen.append(Path(b).exists())  # the old release is still under its name
        return exchange(a, b) if swaps else False

    monkeypatch.setattr(spark_engine, "exchange", swap)
    anonymize(spark.createDataFrame(df), spec_for(df, models=[KAnonymity(3)]), output=out)
    assert seen == [True]
    assert multiset(pq.read_table(out)) == multiset(
        anonymize(df, spec_for(df, models=[KAnonymity(3)])).data)
    assert [p.name for p in tmp_path.iterdir()] == ["release.parquet"]  # no old one left


def test_a_frame_with_timestamps_is_anonymized_as_embedded(spark, tmp_path):
    """pyspark's to_arrow_type asserts on a TimestampType given no time zone: any frame or
    Parquet file with a timestamp column, a quasi-identifier or not, ended in a bare
    AssertionError. Spark hands timestamps to Arrow in the session's time zone."""
    import datetime as dt

    from blendin.hierarchy.dates import dates

    zone = spark.conf.get("spark.sql.session.timeZone")
    when = [dt.datetime(2020, 1, 15, 12, tzinfo=dt.UTC), dt.datetime(2020, 3, 2, 8,
                                                                    tzinfo=dt.UTC)] * 4
    data = pa.table({"seen": pa.array(when, pa.timestamp("us", tz=zone)),
                     "sex": ["F", "M"] * 4,
                     "at": pa.array(when, pa.timestamp("us", tz=zone))})
    pq.write_table(data, tmp_path / "seen.parquet")
    from blendin.spec import Spec

    spec = Spec(quasi_identifiers={"seen": dates("month"), "sex": bl_flat()},
                models=[KAnonymity(2)])
    embedded = anonymize(data, spec)
    for given in (spark.read.parquet(str(tmp_path / "seen.parquet")),
                  str(tmp_path / "seen.parquet")):
        ours = anonymize(given, spec, engine=SparkEngine(spark))
        released = ours.data.toArrow() if is_spark(ours.data) else ours.data
        assert ours.levels == embedded.levels
        assert pa.types.is_timestamp(released.column("at").type)
        assert multiset(released) == multiset(embedded.data)


def test_a_line_break_between_quotes_of_a_windows_csv_is_kept(spark, tmp_path):
    """Spark's multi-line CSV reader turns CR LF between quotes into LF unless it is told
    the file's line separator: a note "line1\\r\\nline2" of a file saved on Windows was
    released as "line1\\nline2" on Spark and as it was on the embedded engine."""
    import glob

    from blendin.spec import Spec

    data = tmp_path / "notes.csv"
    data.write_bytes(b'sex,note\r\nF,"line1\r\nline2"\r\nF,"a\nb"\r\nM,x\r\nM,y\r\n')
    spec = Spec(quasi_identifiers={"sex": bl_flat()}, models=[KAnonymity(2)])
    out = tmp_path / "release.csv"
    anonymize(str(data), spec, output=out, engine=SparkEngine(spark), keep_order=True)
    written = b"".join(Path(p).read_bytes() for p in sorted(glob.glob(str(out / "part-*"))))
    assert b'"line1\r\nline2"' in written and b'"a\nb"' in written
    released = anonymize(str(data), spec, engine=SparkEngine(spark)).data
    assert sorted(released.column("note").to_pylist()) == ["a\nb", "line1\r\nline2", "x", "y"]


def test_a_pandas_frame_comes_back_from_spark_with_its_zones_and_categories(spark):
    """Spark holds no time zone per column and no categories: a pandas frame released on
    Spark gave its zoned times in the session's zone (UTC) and its categories as text,
    where the embedded engine gives them as they were."""
    frame = pd.DataFrame({
        "sex": ["F", "M"] * 4,
        "seen": pd.to_datetime(["2020-01-31 23:30"] * 8).tz_localize("America/New_York"),
        "ward": pd.Categorical(["u", "v", "u", None] * 2),
        "id": pd.array([2**53 + 1, None] * 4, dtype="Int64")})
    from blendin.spec import Spec

    spec = Spec(quasi_identifiers={"sex": bl_flat()}, models=[KAnonymity(2)])
    ours = anonymize(frame, spec, engine=SparkEngine(spark), keep_order=True).data
    embedded = anonymize(frame, spec, keep_order=True).data
    for name in ("seen", "ward", "id"):
        assert ours[name].dtype == frame[name].dtype == embedded[name].dtype, name
    assert sorted(map(str, ours["seen"])) == ["2020-01-31 23:30:00-05:00"] * 8


def test_zoned_times_are_generalized_in_their_own_zone_as_embedded(spark, tmp_path):
    """Spark hands times to Arrow in its session's zone: 2020-01-31 20:00 in New York
    (2020-02-01 01:00 UTC) was read as February on Spark and January on the embedded
    engine, so the two released other months (and other labels at the ground level)."""
    import datetime as dt

    from blendin.hierarchy.dates import dates
    from blendin.spec import Spec

    utc = [dt.datetime(2020, 2, 1, 1, tzinfo=dt.UTC), dt.datetime(2020, 1, 31, 6, tzinfo=dt.UTC),
           dt.datetime(2020, 3, 1, 2, tzinfo=dt.UTC)] * 2
    zoned = pa.array(utc, pa.timestamp("us", tz="UTC")).cast(
        pa.timestamp("us", tz="America/New_York"))
    data = pa.table({"seen": zoned, "sex": ["F", "F", "M", "M", "F", "M"], "at": zoned})
    pq.write_table(data, tmp_path / "seen.parquet")
    for levels in (("day",), ("month",)):
        spec = Spec(quasi_identifiers={"seen": dates(*levels), "sex": bl_flat()},
                    models=[KAnonymity(2)], max_suppression=0.5)
        embedded = anonymize(data, spec)
        for given in (data, str(tmp_path / "seen.parquet")):
            ours = anonymize(given, spec, engine=SparkEngine(spark))
            released = ours.data.toArrow() if is_spark(ours.data) else ours.data
            assert ours.levels == embedded.levels
            assert (sorted(released.column("seen").to_pylist())
                    == sorted(embedded.data.column("seen").to_pylist()))
            assert (sorted(released.column("at").cast(pa.timestamp("us", tz="UTC")).to_pylist())
                    == sorted(embedded.data.column("at").cast(
                        pa.timestamp("us", tz="UTC")).to_pylist()))


def test_a_table_spark_cannot_hold_is_widened_or_refused_naming_the_column(spark):
    """pyspark refused a string_view or half-float column (polars and Arrow make them)
    with its own PySparkTypeError, and a decimal256 with a bare ValueError: the first are
    cast to types that hold their values as they are; the others name the column."""
    import decimal

    from blendin.spec import Spec

    spec = Spec(quasi_identifiers={"sex": bl_flat()}, models=[KAnonymity(2)])
    table = pa.table({"sex": pa.array(["F", "M"] * 2, pa.string_view()),
                      "note": pa.array(["x", None] * 2, pa.string_view()),
                      "dose": pa.array([1.5, None] * 2, pa.float16())})
    released = anonymize(table, spec, engine=SparkEngine(spark)).data
    assert sorted(released.column("note").to_pylist(), key=str) == [None, None, "x", "x"]
    assert sorted(released.column("dose").to_pylist(), key=str) == [1.5, 1.5, None, None]
    for kind, value in ((pa.uint64(), 2**64 - 1), (pa.decimal256(40, 2), decimal.Decimal(1))):
        wide = pa.table({"sex": ["F", "M"], "big": pa.array([value, value], kind)})
        with pytest.raises(BlendinError, match=rf"column 'big' holds {re.escape(str(kind))} "
                           "values, which Spark cannot hold; fix: cast 'big'"):
            anonymize(wide, spec, engine=SparkEngine(spark))


def test_checker_counts_a_dropped_row_as_suppressed(spark, tmp_path, monkeypatch):
    # a recoder that drops a row from the release but leaves it its labels: the checker
    # must count it as suppressed (classes of 4 at k = 4 lose one), not in its class

    df, spec = decades_case()
    real = SparkEngine.release

    def release(self, source, recoder, **options):
        def dropping(batch):  # (a closure: pickled by value for the executors)
            marked, removed = recoder(batch)
            removed = removed.copy()
            removed[:1] = True
            return marked, removed
        return real(self, source, dropping, **options)

    monkeypatch.setattr(SparkEngine, "release", release)
    out = tmp_path / "release.parquet"
    with pytest.raises(BlendinError, match="independent check"):
        anonymize(spark.createDataFrame(df).coalesce(1), spec, output=out, keep_order=True)
    assert os.listdir(tmp_path) == []
