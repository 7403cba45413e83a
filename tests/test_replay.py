"""A CSV file is parsed once: the first pass keeps its rows (the coded columns as codes) in
a temporary file beside the release, and the release reads them there. The release is the
one a second parse gives; a file rewritten during a run is released as first read. The
rows are kept in the release's random order, uniformly shuffled (a compressed file's too).
A Parquet file released shuffled is kept the same way: its texts as codes, their nulls as
nulls, its numbers as read."""

import collections
import errno
import os
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blendin.anonymize import anonymize
from blendin.engines import embedded
from blendin.engines.embedded import EmbeddedEngine
from blendin.engines.replay import Replay
from blendin.hierarchy.core import Hierarchy
from blendin.io import Source
from blendin.models import DistinctLDiversity, KAnonymity
from blendin.spec import Spec

#: blocks of 4 KiB, batches of 200 rows: many of each in a few thousand rows
TINY = EmbeddedEngine(block_size=4096, batch_rows=200)


def spec_for(df: pd.DataFrame, missing: str = "") -> Spec:
    ages = sorted(set(df.age))
    age = Hierarchy.from_rows([[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*"]
                               for a in ages])
    sexes = sorted(set(df.sex) | ({missing} if missing else set()))
    sex = Hierarchy.from_rows([[s, "*"] for s in sexes])
    return Spec(quasi_identifiers={"age": age, "sex": sex}, sensitive=["dx"],
                models=[KAnonymity(4), DistinctLDiversity("dx", 2)], max_suppression=0.1,
                missing=missing, delimiter=",")


def people(n: int, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(20, 70, n), "sex": rng.choice(["f", "m"], n),
                         "dx": rng.choice(["a", "b", "c", ""], n),
                         "note": rng.choice(["x", "", "y;z", "é"], n)})


def parses(monkeypatch) -> list:
    """The CSV parses made from now on (one list of columns per pass)."""
    made = []
    parse = Source._csv_batches

    def counted(self, columns, progress=None):
        made.append(list(columns))
        return parse(self, columns, progress)

    monkeypatch.setattr(Source, "_csv_batches", counted)
    return made


def reads(monkeypatch) -> list:
    """The Parquet reads made from now on (one list of columns per pass)."""
    made = []
    read = Source._parquet_batches

    def counted(self, columns, encoded, progress=None):
        made.append(list(columns))
        return read(self, columns, encoded, progress)

    monkeypatch.setattr(Source, "_parquet_batches", counted)
    return made


def released(path, spec, out, keep_order: bool = True, seed: int = 5) -> bytes:
    """The release's bytes: in the source's order (kept rows and a second parse alike), or
    shuffled by ``seed``."""
    result = anonymize(path, spec, engine=TINY, output=out, keep_order=keep_order,
                       shuffle_seed=None if keep_order else seed)
    assert result.check.passed
    return out.read_bytes()


def lines(text: bytes) -> list[bytes]:
    """A CSV release's header, then its rows sorted."""
    head, *rows = text.splitlines()
    return [head, *sorted(rows)]


@pytest.mark.parametrize("name", ["people.csv", "people.csv.gz"])
def test_a_csv_file_is_parsed_once_and_released_as_a_second_parse_would(
        tmp_path, monkeypatch, name):
    df = people(3000)
    path = tmp_path / name
    df.to_csv(path, index=False)
    made = parses(monkeypatch)
    once = released(path, spec_for(df), tmp_path / "once.csv")
    assert len(made) == 1 and set(made[0]) == set(df.columns)  # every column, one pass
    shuffled = released(path, spec_for(df), tmp_path / "shuffled.csv", keep_order=False)
    assert len(made) == 2
    monkeypatch.setattr(embedded, "_replay_for", lambda *args: None)
    twice = released(path, spec_for(df), tmp_path / "twice.csv")
    assert len(made) == 4
    assert once == twice
    # shuffled, the same rows as a second parse shuffles (in another order)
    assert lines(shuffled) == lines(once) and shuffled != once


def test_a_parquet_file_released_shuffled_is_read_once(tmp_path, monkeypatch):
    """Shuffled, a Parquet file's rows are kept by the first pass and read there: the rows a
    second read gives. In its own order it is read again."""
    monkeypatch.setattr(embedded, "SHUFFLE_PART_ROWS", 500)  # several parts
    df = people(3000)
    path = tmp_path / "people.parquet"
    as_parquet(df, path)
    made = reads(monkeypatch)
    shuffled = released(path, spec_for(df), tmp_path / "shuffled.csv", keep_order=False)
    assert len(made) == 1 and set(made[0]) == set(df.columns)  # every column, one pass
    in_order = released(path, spec_for(df), tmp_path / "in_order.csv")
    assert len(made) == 3
    monkeypatch.setattr(embedded, "_replay_for", lambda *args: None)
    again = released(path, spec_for(df), tmp_path / "again.csv", keep_order=False)
    assert lines(shuffled) == lines(in_order) == lines(again) and shuffled != again


@pytest.mark.parametrize("name", ["people.csv", "people.csv.gz"])
def test_kept_rows_come_in_the_releases_random_order(tmp_path, monkeypatch, name):
    """The first pass keeps the rows shuffled by the release's seed, in parts (of a
    compressed file too, its text guessed from its size): the release writes them as it
    reads them (no shuffle of its own), the same for the same seed, another for another
    seed, one row for one row of the file."""
    monkeypatch.setattr(embedded, "PART_BYTES", 8 << 10)  # parts of 8 KiB of the file
    df = people(3000).assign(id=range(3000))
    path = tmp_path / name
    df.to_csv(path, index=False)
    shuffles = []
    init = embedded._Shuffler.__init__

    def recorded(self, target, shuffle, *args, **kwargs):
        shuffles.append(shuffle)
        init(self, target, shuffle, *args, **kwargs)

    monkeypatch.setattr(embedded._Shuffler, "__init__", recorded)
    out = {seed: released(path, spec_for(df), tmp_path / f"s{seed}.csv", False, seed)
           for seed in (5, 6)}
    assert shuffles == [None, None]  # the rows came shuffled
    assert out[5] == released(path, spec_for(df), tmp_path / "again.csv", False, 5)
    assert out[5] != out[6] and lines(out[5]) == lines(out[6])
    ids = pd.read_csv(tmp_path / "s5.csv").id
    assert ids.is_unique and set(ids) <= set(df.id)


def test_kept_rows_are_shuffled_uniformly(tmp_path, monkeypatch):
    """Where each row of the file lands in the release: over 10 x 10 cells (the row's tenth
    of the file, its tenth of the release) the counts are what a uniform order gives
    (Pearson's statistic, 81 degrees of freedom: 1 in 10^6 above 170). Rows kept in the
    file's order within each part would fail by far."""
    monkeypatch.setattr(embedded, "PART_BYTES", 64 << 10)
    n = 40_000
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"age": rng.integers(20, 70, n), "sex": rng.choice(["f", "m"], n),
                       "dx": rng.choice(["a", "b", "c"], n), "id": np.arange(n)})
    path = tmp_path / "rows.csv"
    df.to_csv(path, index=False)
    spec = Spec(quasi_identifiers=spec_for(df).quasi_identifiers, sensitive=["dx"],
                models=[KAnonymity(2)], max_suppression=0.0, delimiter=",")
    for seed in (1, 2):
        out = tmp_path / f"r{seed}.csv"
        assert anonymize(path, spec, engine=TINY, output=out, shuffle_seed=seed).suppressed == 0
        ids = pd.read_csv(out).id.to_numpy()
        cells = np.zeros((10, 10))
        np.add.at(cells, (ids * 10 // n, np.arange(n) * 10 // n), 1)
        statistic = ((cells - n / 100) ** 2 / (n / 100)).sum()
        assert statistic < 170, statistic


def test_a_rows_part_does_not_depend_on_the_batches():
    from blendin.engines.replay import _parts

    whole = _parts(0, 1000, 7, 5)
    assert np.array_equal(whole, np.concatenate([_parts(0, 333, 7, 5),
                                                 _parts(333, 667, 7, 5)]))
    assert set(whole) == set(range(5)) and not np.array_equal(whole, _parts(0, 1000, 8, 5))
    counts = np.bincount(_parts(0, 100_000, 3, 4))
    assert counts.min() > 24_000  # about a quarter each


def test_a_file_rewritten_during_a_run_is_released_as_first_read(tmp_path, monkeypatch):
    df = people(3000)
    path = tmp_path / "people.csv"
    df.to_csv(path, index=False)
    distinct = EmbeddedEngine.distinct

    def then_rewritten(self, source, *args, **kwargs):
        counted = distinct(self, source, *args, **kwargs)
        pd.concat([df, df.assign(age=df.age + 1)]).to_csv(path, index=False)
        return counted

    monkeypatch.setattr(EmbeddedEngine, "distinct", then_rewritten)
    result = anonymize(path, spec_for(df), engine=TINY, output=tmp_path / "out.parquet")
    assert result.check.passed
    assert result.records == len(df)
    assert pq.read_table(tmp_path / "out.parquet").num_rows == len(df) - result.suppressed


@pytest.mark.filterwarnings("error::ResourceWarning",
                            "error::pytest.PytestUnraisableExceptionWarning")
def test_the_rows_are_kept_beside_the_release_and_leave_nothing(tmp_path, monkeypatch):
    df = people(2000)
    data, out = tmp_path / "in", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    df.to_csv(data / "people.csv", index=False)
    seen = []
    batches = Replay.batches

    def where(self, *args, **kwargs):
        if sys.platform.startswith("linux"):  # the unlinked file, by its descriptor
            seen.append(os.readlink(f"/proc/self/fd/{self.file.fileno()}"))
        yield from batches(self, *args, **kwargs)

    monkeypatch.setattr(Replay, "batches", where)
    anonymize(data / "people.csv", spec_for(df), engine=TINY, output=out / "release.csv")
    assert sorted(os.listdir(out)) == ["release.csv"]
    assert sorted(os.listdir(data)) == ["people.csv"]
    if sys.platform.startswith("linux"):
        assert seen and all(link.startswith(str(out)) and "(deleted)" in link
                            for link in seen)
        # and closed once the run is over: its space goes back at once
        assert not [fd for fd in os.listdir("/proc/self/fd")
                    if os.path.exists(f"/proc/self/fd/{fd}")
                    and os.readlink(f"/proc/self/fd/{fd}").startswith(str(out))]


def test_where_the_rows_cannot_be_kept_the_file_is_parsed_again(tmp_path, monkeypatch):
    df = people(3000)
    path = tmp_path / "people.csv"
    df.to_csv(path, index=False)
    expected = released(path, spec_for(df), tmp_path / "kept.csv")

    def full(self, table, start):
        self.failed = OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Replay, "_written", full)
    made = parses(monkeypatch)
    assert released(path, spec_for(df), tmp_path / "again.csv") == expected
    assert len(made) == 2


def test_empty_texts_read_as_missing_keep_their_spelling_in_the_release(tmp_path,
                                                                         monkeypatch):
    """With ``missing = "?"`` an empty text would be coded as ``?``: codes could not give
    the empty text back, so the release reads the file again, and a column released as it
    is (the sensitive one here) keeps its empty texts."""
    df = people(3000)
    path = tmp_path / "people.csv"
    df.to_csv(path, index=False)
    spec = spec_for(df, missing="?")
    made = parses(monkeypatch)
    result = anonymize(path, spec, engine=TINY, output=tmp_path / "out.csv", shuffle_seed=5)
    assert result.check.passed and len(made) == 2
    out = pcsv.read_csv(tmp_path / "out.csv", convert_options=pcsv.ConvertOptions(
        column_types={"dx": pa.string(), "note": pa.string()},
        strings_can_be_null=False, quoted_strings_can_be_null=False))
    assert "" in out.column("dx").to_pylist() and "?" not in out.column("dx").to_pylist()
    kept = collections.Counter(df.dx) - collections.Counter(out.column("dx").to_pylist())
    assert sum(kept.values()) == result.suppressed


texts = st.text(alphabet=st.sampled_from(["a", "b", " ", ";", '"', "é", "\n"]), max_size=3)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(20, 29), st.sampled_from(["f", "m"]), texts,
                               texts), min_size=2, max_size=300),
       missing=st.sampled_from(["", "?"]))
def test_kept_rows_give_the_release_a_second_parse_gives(tmp_path_factory, monkeypatch,
                                                         rows, missing):
    folder = tmp_path_factory.mktemp("replay")
    df = pd.DataFrame(rows, columns=["age", "sex", "dx", "note"])
    path = folder / "people.csv"
    df.to_csv(path, index=False)
    spec = Spec(quasi_identifiers=spec_for(df, missing).quasi_identifiers, sensitive=["dx"],
                models=[KAnonymity(2)], max_suppression=1.0, missing=missing,
                delimiter=",")
    once = released(path, spec, folder / "once.csv")
    with monkeypatch.context() as patched:
        patched.setattr(embedded, "_replay_for", lambda *args: None)
        twice = released(path, spec, folder / "twice.csv")
    assert once == twice


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    """Whether two releases hold the same columns and the same rows, in any order."""
    by = [(name, "ascending") for name in a.column_names]
    return a.schema == b.schema and a.sort_by(by).equals(b.sort_by(by))


def as_parquet(df: pd.DataFrame, path, texts: bool = True) -> None:
    """``df`` written to Parquet, every column as text (or age as a number)."""
    table = pa.Table.from_pandas(df.astype({"age": str}) if texts else df, preserve_index=False)
    pq.write_table(table, path, row_group_size=700)


@pytest.mark.parametrize("change", ["numbers", "nulls"])
def test_a_parquet_files_numbers_and_nulls_come_back_as_read(tmp_path, monkeypatch, change):
    """Columns of numbers (a quasi-identifier, the sensitive column) are kept as read, not
    as codes, which would give them back as text; a text column's nulls are kept as nulls,
    not as the text they are coded as. The file is read once, and the release holds the
    rows a second read gives: numbers as numbers, nulls as nulls."""
    df = people(3000)
    path = tmp_path / "people.parquet"
    if change == "nulls":
        df["dx"] = df.dx.where((df.index < 2000) | (df.index % 7 != 5), None)
        as_parquet(df, path)
    else:
        df["dx"] = df.dx.map({"a": 1, "b": 2, "c": 3, "": 4})
        as_parquet(df, path, texts=False)
    spec = spec_for(df.assign(dx=df.dx.fillna("")))
    made = reads(monkeypatch)
    released(path, spec, tmp_path / "once.parquet", keep_order=False)
    assert len(made) == 1
    with monkeypatch.context() as patched:
        patched.setattr(embedded, "_replay_for", lambda *args: None)
        released(path, spec, tmp_path / "twice.parquet", keep_order=False)
    out, twice = (pq.read_table(tmp_path / f"{name}.parquet") for name in ("once", "twice"))
    assert same_rows(out, twice)
    if change == "nulls":
        assert out.column("dx").null_count > 0  # (kept as nulls, not as empty texts)
    else:
        assert out.schema.field("dx").type == pa.int64()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(20, 29), st.sampled_from(["f", "m"]),
                               st.one_of(st.none(), texts), st.one_of(st.none(), texts)),
                     min_size=2, max_size=300),
       missing=st.sampled_from(["", "?"]))
def test_a_parquet_files_kept_rows_give_the_release_a_second_read_gives(
        tmp_path_factory, monkeypatch, rows, missing):
    folder = tmp_path_factory.mktemp("replay")
    df = pd.DataFrame(rows, columns=["age", "sex", "dx", "note"])
    path = folder / "people.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=50)
    spec = Spec(quasi_identifiers=spec_for(df, missing).quasi_identifiers, sensitive=["dx"],
                models=[KAnonymity(2)], max_suppression=1.0, missing=missing)
    out = [folder / "once.parquet", folder / "twice.parquet"]
    released(path, spec, out[0], keep_order=False)
    with monkeypatch.context() as patched:
        patched.setattr(embedded, "_replay_for", lambda *args: None)
        released(path, spec, out[1], keep_order=False)
    assert same_rows(*(pq.read_table(o) for o in out))
