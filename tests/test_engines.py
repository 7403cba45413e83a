"""The engine layer: the embedded engine streams a path to a path in batches, the checker
agrees with the written file, and a failure before the rename leaves nothing behind."""

import collections
import gc
import importlib
from unittest import mock

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin import engines, io
from blendin.anonymize import anonymize, apply_solution
from blendin.check import check
from blendin.codes import COUNT
from blendin.engines.embedded import BatchWriter, EmbeddedEngine
from blendin.engines.kernels import RowColumns, decoded
from blendin.errors import BlendinError
from blendin.groupby import DistinctCounter
from blendin.hierarchy.core import Hierarchy
from blendin.io import Source, write_table
from blendin.models import DistinctLDiversity, KAnonymity
from blendin.spec import Spec

SEX = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
#: a 3,000-row file read in blocks of 4 KiB and released in batches of 200 rows
TINY = EmbeddedEngine(block_size=4096, batch_rows=200)


def age_hierarchy(ages):
    return Hierarchy.from_rows([[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*"]
                                for a in sorted(set(ages))])


@pytest.fixture
def case(tmp_path):
    rng = np.random.default_rng(7)
    n = 3000
    df = pd.DataFrame({"id": np.arange(n).astype(str), "age": rng.integers(18, 90, n),
                       "sex": rng.choice(["f", "m"], n), "dx": rng.choice(list("abcd"), n),
                       "note": rng.choice(["=1+1", "ok", "-x"], n)})
    path = tmp_path / "big.csv"
    df.to_csv(path, index=False)
    spec = Spec(quasi_identifiers={"age": age_hierarchy(df.age), "sex": SEX},
                identifiers=["id"], sensitive=["dx"],
                models=[KAnonymity(40), DistinctLDiversity("dx", 3)], max_suppression=0.05)
    return path, spec


def rows(table: pa.Table) -> collections.Counter:
    return collections.Counter(zip(*(table.column(c).to_pylist() for c in table.column_names)))


@pytest.mark.parametrize("algorithm", ["optimal", "mondrian"])
@pytest.mark.parametrize("suppressed", ["drop", "keep"])
def test_streamed_release_equals_the_in_memory_one(case, tmp_path, algorithm, suppressed):
    path, spec = case
    out = tmp_path / "release.parquet"
    streamed = anonymize(path, spec, engine=TINY, algorithm=algorithm,
                         suppressed=suppressed, output=out, keep_order=True)
    whole = anonymize(Source(path).read_all(), spec, algorithm=algorithm, suppressed=suppressed,
                      keep_order=True)
    assert streamed.data is None and streamed.written == out
    written = pq.ParquetFile(out)
    assert written.metadata.num_row_groups > 5  # written batch by batch
    assert written.read().equals(whole.data)  # same rows, same order
    assert streamed.levels == whole.levels and streamed.suppressed == whole.suppressed
    # the checker on the file agrees with the checker that let it through
    again = check(out, spec)
    assert again.passed and again.classes == streamed.check.classes == whole.check.classes
    assert again.min_class_size == streamed.min_class_size
    assert streamed.table.equals(whole.data)


def test_streamed_csv_is_byte_for_byte_the_written_table(case, tmp_path):
    path, spec = case
    out = tmp_path / "release.csv"
    anonymize(path, spec, engine=TINY, output=out, output_delimiter=";",
              escape_formulas=True, keep_order=True)
    whole = anonymize(Source(path).read_all(), spec, keep_order=True)
    expected = write_table(whole.data, tmp_path / "expected.csv", delimiter=";",
                           escape_formulas=True)
    assert out.read_bytes() == expected.read_bytes()
    assert "'=1+1" in out.read_text()


def test_added_columns_numbered_across_batches(case, tmp_path):
    path, spec = case
    for algorithm in ("optimal", "mondrian"):
        for base in (0, 1):
            out = tmp_path / f"{algorithm}{base}.parquet"
            options = dict(algorithm=algorithm, group_column="group", original_row="row",
                           index_base=base, suppressed="keep")
            anonymize(path, spec, engine=TINY, output=out, **options, keep_order=True)
            whole = anonymize(Source(path).read_all(), spec, **options, keep_order=True)
            assert pq.read_table(out).equals(whole.data)


def test_apply_streams_too(case, tmp_path):
    path, spec = case
    first = anonymize(path, spec, keep_order=True)
    out = tmp_path / "applied.parquet"
    applied = apply_solution(path, first, output=out, engine=TINY, keep_order=True)
    assert pq.ParquetFile(out).metadata.num_row_groups > 5
    assert pq.read_table(out).equals(first.data) and applied.data is None


def test_excel_output_is_written_after_the_check(case, tmp_path):
    path, spec = case
    out = tmp_path / "release.xlsx"
    result = anonymize(path, spec, output=out)
    assert result.written == out and out.exists() and result.data is not None


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_checker_failure_leaves_no_file_and_no_temporary(case, tmp_path, monkeypatch):
    check_module = importlib.import_module("blendin.check")
    path, spec = case
    real = check_module.check_regrouped
    seen = []

    def failing(*a, **kw):
        seen.extend(leftovers(tmp_path))  # the temporary file exists while it is checked
        report = real(*a, **kw)
        report.passed = False
        return report

    monkeypatch.setattr(importlib.import_module("blendin.anonymize.release"), "check_regrouped",
                        failing)  # where the release stage calls it
    out = tmp_path / "release.parquet"
    with pytest.raises(BlendinError, match="independent check"):
        anonymize(path, spec, engine=TINY, output=out)
    assert seen and not out.exists() and not leftovers(tmp_path)


def test_failure_mid_write_keeps_the_old_file(case, tmp_path, monkeypatch):
    path, spec = case
    out = tmp_path / "release.csv"
    out.write_text("old\n")
    real = BatchWriter.write

    def breaking(self, table):
        if self.batches == 3:
            raise OSError(28, "No space left on device")
        real(self, table)

    monkeypatch.setattr(BatchWriter, "write", breaking)
    with pytest.raises(OSError):
        anonymize(path, spec, engine=TINY, output=out)
    assert out.read_text() == "old\n" and not leftovers(tmp_path)



def test_an_error_of_the_writing_thread_fails_the_parquet_release(case, tmp_path, monkeypatch):
    path, spec = case
    out = tmp_path / "release.parquet"
    written = []
    kind = pq.ParquetWriter

    class Breaking:  # the file writer, failing on its third table
        def __init__(self, *a, **kw):
            self.writer = kind(*a, **kw)

        def write_table(self, table):
            if len(written) == 2:
                raise OSError(28, "No space left on device")
            written.append(table.num_rows)
            self.writer.write_table(table)

        def close(self):
            self.writer.close()

    monkeypatch.setattr(pq, "ParquetWriter", Breaking)
    with pytest.raises(OSError, match="No space"):
        anonymize(path, spec, engine=TINY, output=out)
    assert len(written) == 2 and not out.exists() and not leftovers(tmp_path)


def test_an_error_writing_csv_fails_the_release(case, tmp_path, monkeypatch):
    from blendin.engines import embedded

    path, spec = case
    out = tmp_path / "release.csv"
    written = []
    put = BatchWriter._put
    monkeypatch.setattr(embedded, "workers", lambda: 2)  # pieces formatted, then written

    def breaking(self, text):  # the file's writes, failing on the third piece
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        written.append(1)
        put(self, text)

    monkeypatch.setattr(BatchWriter, "_put", breaking)
    with pytest.raises(OSError, match="No space"):
        anonymize(path, spec, engine=TINY, output=out)
    assert len(written) == 2 and not out.exists() and not leftovers(tmp_path)

@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["a", "b", None]),
                                   st.sampled_from(["x", "y", "z"])), max_size=30),
                max_size=8),
       st.integers(1, 40))
def test_streaming_group_by_equals_a_count(batches, group_rows):
    counter = DistinctCounter(["p", "q"], missing="?", group_rows=group_rows)
    for batch in batches:
        counter.add(pa.table({"p": pa.array([r[0] for r in batch], pa.string()),
                              "q": pa.array([r[1] for r in batch], pa.string())}))
    expected = collections.Counter(("?" if p is None else p, q) for b in batches for p, q in b)
    if not expected:
        with pytest.raises(BlendinError, match="no rows"):
            counter.result()
        return
    got = counter.result().to_pydict()
    assert dict(zip(zip(got["p"], got["q"]), got[COUNT])) == expected


def test_row_columns_match_the_whole_table_numbering():
    from blendin.anonymize import with_row_columns

    rng = np.random.default_rng(1)
    table = pa.table({"a": rng.choice(["x", "y", "*"], 200), "b": rng.choice(["u", "*"], 200)})
    table = table.set_column(1, "b", pa.array(np.where(table.column("a").to_numpy(
        zero_copy_only=False) == "*", "*", table.column("b").to_numpy(zero_copy_only=False))))
    whole = with_row_columns(table, ["a", "b"], group_column="g", original_row="r")
    add = RowColumns(["a", "b"], group_column="g", original_row="r")
    parts = [add(add.number_source(table.slice(i, 17))) for i in range(0, 200, 17)]
    assert pa.concat_tables(parts).equals(whole)


def test_engine_for():
    assert engines.engine_for(pd.DataFrame()).name == "embedded"
    engine = EmbeddedEngine()
    assert engines.engine_for(None, engine) is engine
    with pytest.raises(BlendinError, match="unknown engine"):
        engines.engine_for(None, "dask")


def test_csv_writer_refuses_nested_columns(tmp_path):
    with BatchWriter(str(tmp_path / "t.csv"), tmp_path / "out.csv") as writer, \
            pytest.raises(BlendinError, match="nested"):
        writer.write(pa.table({"a": [[1, 2]]}))
    assert pcsv  # the CSV writer module is pyarrow's


def test_recoded_parts_stream_too(case, tmp_path):
    path, spec = case
    spec.max_suppression = 0.3
    spec.models = [KAnonymity(60)]
    out = tmp_path / "parts.parquet"
    streamed = anonymize(path, spec, engine=TINY, output=out, recode_suppressed=True,
                         keep_order=True)
    whole = anonymize(Source(path).read_all(), spec, recode_suppressed=True, keep_order=True)
    assert pq.read_table(out).equals(whole.data)
    assert whole.recoded_parts and streamed.recoded_parts == whole.recoded_parts


@pytest.mark.parametrize("algorithm", ["optimal", "mondrian"])
@pytest.mark.parametrize("output", [None, "release.parquet", "release.csv"])
def test_parquet_text_read_as_dictionaries_is_released_with_its_types(case, tmp_path,
                                                                      algorithm, output):
    path, spec = case
    table = Source(path).read_all()
    note = pa.array([None if i % 7 == 0 else v for i, v in
                     enumerate(table.column("note").to_pylist())], pa.string())
    table = table.set_column(table.column_names.index("note"), "note", note).append_column(
        "wide", table.column("dx").cast(pa.large_string())).append_column(
        "kind", table.column("dx").dictionary_encode()).append_column(
        "n", pa.array(np.arange(table.num_rows)))
    source = tmp_path / "in.parquet"
    pq.write_table(table, source, row_group_size=300)  # a dictionary per row group
    first = next(Source(source).batches(["dx"], encoded=["dx"]))
    assert pa.types.is_dictionary(first.schema.field("dx").type)
    assert Source(source).read_all().schema == table.schema
    whole = anonymize(table, spec, algorithm=algorithm, keep_order=True)
    out = None if output is None else tmp_path / output
    read = anonymize(source, spec, engine=TINY, algorithm=algorithm, output=out, keep_order=True)
    whole = whole.data
    if out is None:
        released = read.data
    elif output.endswith(".parquet"):
        released = pq.read_table(out)
    else:
        released, whole = Source(out).read_all(), Source(
            write_table(whole, tmp_path / "whole.csv")).read_all()
    assert released.schema.remove_metadata() == whole.schema.remove_metadata()
    assert released.to_pylist() == whole.to_pylist()


@st.composite
def frames(draw):
    """An in-memory table: a text QI (nulls, empty texts, a pandas category with unused
    entries or plain), a numeric QI, a text column released as it is."""
    rows = draw(st.integers(1, 30))
    texts = draw(st.lists(st.sampled_from(["x", "y", "", None, "?"]), min_size=rows,
                          max_size=rows))
    df = pd.DataFrame({"t": texts, "n": draw(st.lists(st.integers(1, 4), min_size=rows,
                                                      max_size=rows)),
                       "note": draw(st.lists(st.sampled_from(["a", None, ""]), min_size=rows,
                                             max_size=rows))})
    if draw(st.booleans()):
        df["t"] = df["t"].astype(pd.CategoricalDtype(["x", "y", "", "?", "unused"]))
    return df


def frame_spec(df: pd.DataFrame, missing: str, k: int, one_label: bool) -> Spec:
    """A spec for :func:`frames`: ``one_label`` hierarchies have one level above the ground."""
    flat = (lambda values: Hierarchy.from_rows([[v, "*"] for v in values])) if one_label \
        else (lambda values: Hierarchy.from_rows([[v, v[:1] or "-", "*"] for v in values]))
    return Spec(quasi_identifiers={"t": flat(sorted({"x", "y", "?", missing}) if missing
                                             else ["", "?", "x", "y"]),
                                   "n": flat(["1", "2", "3", "4"])},
                sensitive=["note"], models=[KAnonymity(min(k, len(df))),
                                            DistinctLDiversity("note", 1)],
                max_suppression=1.0, missing=missing)


@settings(max_examples=40, deadline=None)
@given(frames(), st.sampled_from(["", "?"]), st.sampled_from(["optimal", "mondrian"]),
       st.integers(1, 4), st.booleans())
def test_an_in_memory_release_from_kept_codes_equals_one_from_the_texts(
        df, missing, algorithm, k, one_label):
    spec = frame_spec(df, missing, k, one_label)
    source = Source(df)
    kept = anonymize(source, spec, algorithm=algorithm, suppressed="keep", keep_order=True)
    assert set(source._codes) == {"t", "n", "note"}  # the release read the QIs as codes,
    assert source.known_texts("note") is not None  # and looked the sensitive texts up
    with mock.patch.object(Source, "keep_codes", lambda *_: None):  # every pass hashes texts
        texts = anonymize(Source(df), spec, algorithm=algorithm, suppressed="keep",
                          engine=EmbeddedEngine(batch_rows=7), keep_order=True)
    assert kept.data.equals(texts.data)
    assert kept.check.classes == texts.check.classes


def test_kept_codes_are_read_only_when_asked_for():
    source = Source(pd.DataFrame({"t": ["b", "a", "b"], "u": ["c", "c", "d"]}))
    engine = EmbeddedEngine()
    engine.distinct(source, ["t"])
    plain_batch = next(source.batches())
    assert not pa.types.is_dictionary(plain_batch.schema.field("t").type)
    encoded = next(source.batches(["t", "u"], encoded=["t", "u"]))
    assert pa.types.is_dictionary(encoded.schema.field("t").type)
    assert not pa.types.is_dictionary(encoded.schema.field("u").type)  # no codes kept
    assert encoded.column("t").to_pylist() == ["b", "a", "b"]
    assert Source(source._table).read_all().equals(source.read_all())


@settings(max_examples=30, deadline=None)
@given(frames(), st.lists(st.tuples(st.sampled_from(["", "?"]), st.integers(1, 4),
                                    st.booleans()), min_size=2, max_size=4))
def test_calls_on_one_arrow_table_share_its_codes_and_answer_as_fresh_ones(df, runs):
    """Every call on the same pyarrow Table after the first reads the codes kept before,
    whatever changed in between (the missing text, the hierarchies, k): each release equals
    one made from a new Table of the same rows, which hashes every text. So does a release
    from one Source used again and again."""
    table = pa.Table.from_pandas(df, preserve_index=False)
    source = Source(df)  # one source for every call: it keeps its own codes the same way
    for missing, k, one_label in runs:
        spec = frame_spec(df, missing, k, one_label)
        shared = anonymize(table, spec, suppressed="keep", keep_order=True)
        fresh = anonymize(table.select(table.column_names), spec, suppressed="keep",
                          keep_order=True)
        assert shared.levels == fresh.levels
        assert shared.data.equals(fresh.data)
        assert shared.check.classes == fresh.check.classes
        reused = anonymize(source, spec, suppressed="keep", keep_order=True)
        again = anonymize(Source(df), spec, suppressed="keep", keep_order=True)
        assert reused.data.equals(again.data)
    kept = io._TABLE_CODES[id(table)]  # the texts' (numbers may be NumPy's memory)
    texts = [f.name for f in table.schema
             if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    assert set(kept) == {(name, missing) for name in texts for missing, _, _ in runs}


def test_codes_are_shared_by_sources_of_one_arrow_table_only_and_go_with_it():
    table = pa.table({"t": ["b", "a", "b", None], "u": ["c", "c", "d", "c"]})
    first = EmbeddedEngine().distinct(Source(table), ["t", "u"], missing="?")
    again = Source(table)
    assert again.recall_codes(["t", "u"], "?") == ["t", "u"]
    assert Source(table).recall_codes(["t"], "") == []  # kept for another missing text
    assert Source(table.select(["t", "u"])).recall_codes(["t"], "?") == []  # another Table
    kept = dict(io._TABLE_CODES[id(table)])
    second = EmbeddedEngine().distinct(again, ["t", "u"], missing="?")
    assert decoded(second).to_pydict() == decoded(first).to_pydict()
    # codes read from the Table stay kept as they were, not made and kept again
    assert all(io._TABLE_CODES[id(table)][k] is v for k, v in kept.items())
    frame = pd.DataFrame({"t": ["b"]})
    EmbeddedEngine().distinct(Source(frame), ["t"])
    assert Source(frame).recall_codes(["t"]) == []  # a DataFrame may change: none kept
    key = id(table)
    del table, again
    gc.collect()
    assert key not in io._TABLE_CODES


@pytest.mark.parametrize("algorithm", ["optimal", "mondrian"])
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_one_thread_and_every_core_write_the_same_file(case, tmp_path, algorithm, suffix):
    """Blocks parsed, recoded and formatted on several threads at once come out as one
    thread makes them: the same rows in the same order (the same shuffle seed); CSV byte for
    byte (Parquet's dictionary pages of Mondrian's labels may differ from run to run)."""
    from blendin import parallel

    path, spec = case
    written = {}
    for threads in (1, None):
        out = tmp_path / f"r{threads}{suffix}"
        try:
            parallel.set_threads(threads)
            anonymize(path, spec, algorithm=algorithm, engine=TINY, output=out,
                      shuffle_seed=3, escape_formulas=True)
        finally:
            parallel.set_threads(None)
        written[threads] = out.read_bytes() if suffix == ".csv" else pq.read_table(out)
    assert written[1] == written[None] if suffix == ".csv" else written[1].equals(written[None])


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_csv_formatted_in_pieces_is_arrows_csv(tmp_path, monkeypatch, threads):
    """The release's CSV, formatted a piece at a time on several threads, is the text
    Arrow's own CSV writer makes of the tables in turn."""
    from blendin.engines import embedded

    monkeypatch.setattr(embedded, "workers", lambda: threads)
    monkeypatch.setattr(embedded, "CSV_PIECE_ROWS", 7)
    labels = pa.array(["20-29", "*", "30-39"])
    def ages(n):
        return pa.DictionaryArray.from_arrays(pa.array([i % 3 for i in range(n)], pa.int32()),
                                              labels)

    tables = [pa.table({"age": ages(n),
                        "note": [f'say "{i}",\n=1+{i}' if i % 4 else None for i in range(n)],
                        "n": list(range(n))}) for n in (40, 0, 9, 23)]
    shown = pa.schema([("age", pa.string()), ("note", pa.string()), ("n", pa.int64())])
    with BatchWriter(str(tmp_path / "t.csv"), tmp_path / "out.csv", delimiter=";",
                     shown=lambda schema: shown) as writer:
        for table in tables:
            writer.write(table)
    expected = pa.BufferOutputStream()
    with pcsv.CSVWriter(expected, shown, write_options=pcsv.WriteOptions(delimiter=";")) as w:
        for table in tables:
            w.write_table(table.cast(shown))
    assert (tmp_path / "t.csv").read_bytes() == expected.getvalue().to_pybytes()
    assert writer.rows == 72 and writer.batches == 3


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
@pytest.mark.parametrize("source", ["a file, rows numbered", "a table in memory"])
def test_a_shuffled_release_of_no_rows_is_a_file_of_its_columns(tmp_path, suffix, source):
    """Every record suppressed (and removed): the release's own shuffle hands on no rows,
    and the file still holds the columns (a Parquet file of none, a CSV file's header)."""
    df = pd.DataFrame({"age": [20, 21], "sex": ["m", "f"], "dx": ["a", "b"]})
    path = tmp_path / "few.csv"
    df.to_csv(path, index=False)
    spec = Spec(quasi_identifiers={"age": age_hierarchy(df.age), "sex": SEX},
                sensitive=["dx"], models=[KAnonymity(2)], max_suppression=1.0)
    out = tmp_path / f"release{suffix}"
    result = (anonymize(path, spec, engine=TINY, output=out, original_row="row")
              if source.startswith("a file") else anonymize(df, spec, output=out))
    assert result.check.passed and result.suppressed == len(df)
    written = pq.read_table(out) if suffix == ".parquet" else pcsv.read_csv(out)
    assert written.num_rows == 0
    assert {"age", "sex", "dx"} <= set(written.column_names)
