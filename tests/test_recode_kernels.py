"""The release kernels against plain Python.

The recoders write dictionary-encoded labels and look values up through dictionaries; they
must release the same rows as a row-by-row recoding whatever the input's encoding (text with
missing values, dictionaries with duplicate or unused entries) and batching, and the checker,
regrouping the released values, must give the same verdict and still catch a bad release.
"""

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from engine_cases import decades_case
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.anonymize import anonymize, full_domain_outcome, prepare, verify
from blendin.check import check, check_regrouped
from blendin.engines.embedded import EmbeddedEngine, kept
from blendin.engines.kernels import FullDomainRecoder, decoded, ground_codes, repeated
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.io import Source
from blendin.models import KAnonymity
from blendin.plan import plan_node
from blendin.spec import Spec

MISSING = "?"
HIERARCHIES = {
    "a": Hierarchy.from_rows([[str(i), f"{i // 2}", f"{i // 4}", "*"] for i in range(6)]
                             + [[MISSING, MISSING, MISSING, "*"]]),
    "b": Hierarchy.from_rows([["x", "xy", "*"], ["y", "xy", "*"], ["z", "z", "*"],
                              [MISSING, MISSING, "*"]]),
}
VALUES = {"a": [str(i) for i in range(6)], "b": ["x", "y", "z"]}


def plain_marked(values: dict, levels: dict, k: int) -> tuple[list[tuple], list[bool]]:
    """Row by row: each value's label at its level; classes under ``k`` rows shown as ``*``."""
    maps = {q: {row[0]: row[levels[q]] for row in HIERARCHIES[q].to_rows()} for q in values}
    labelled = [tuple(maps[q][MISSING if v in (None, "") else v] for q, v in zip(values, row))
                for row in zip(*values.values())]
    sizes = Counter(labelled)
    removed = [sizes[lab] < k for lab in labelled]
    return [("*",) * len(values) if r else lab for lab, r in zip(labelled, removed)], removed


def with_duplicates(texts: list, rng: np.random.Generator) -> pa.DictionaryArray:
    """``texts`` dictionary-encoded with a duplicated entry and an unused one that no
    hierarchy holds (as a pandas category can be); None is a null index."""
    dictionary = sorted({t for t in texts if t is not None}) or ["x"]
    dictionary = [*dictionary, dictionary[0], "never used"]
    where = {t: [i for i, d in enumerate(dictionary) if d == t] for t in dictionary}
    indices = [None if t is None else int(rng.choice(where[t])) for t in texts]
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()),
                                          pa.array(dictionary))


tables = st.fixed_dictionaries({
    "qis": st.sampled_from([("a",), ("b",), ("a", "b")]),
    "rows": st.integers(1, 40),
    "seed": st.integers(0, 10_000),
    "k": st.integers(1, 8),
    "chunk": st.integers(1, 15),
    "encoding": st.sampled_from(["text", "dictionary"]),
    "levels": st.tuples(st.integers(0, 3), st.integers(0, 2)),
})


def draw_table(case):
    rng = np.random.default_rng(case["seed"])
    values = {q: [None if rng.random() < 0.15 else str(rng.choice(VALUES[q]))
                  for _ in range(case["rows"])] for q in case["qis"]}
    sensitive = [str(v) for v in rng.choice(["s1", "s2"], case["rows"])]
    if case["encoding"] == "text":
        columns = {q: pa.array(v, pa.string()) for q, v in values.items()}
    else:
        columns = {q: with_duplicates(v, rng) for q, v in values.items()}
    table = pa.table({**columns, "s": pa.array(sensitive)})
    levels = {q: lv for q, lv in zip(("a", "b"), case["levels"]) if q in case["qis"]}
    hierarchies = {q: HIERARCHIES[q] for q in case["qis"]}
    ft = FrequencyTable.from_table(decoded(table), hierarchies, missing=MISSING)
    recoding = plan_node(ft, [levels[q] for q in case["qis"]], [KAnonymity(case["k"])],
                    missing=MISSING)
    return values, table, levels, recoding


@settings(max_examples=150, deadline=None)
@given(tables)
def test_recoder_releases_what_plain_python_does(case):
    values, table, levels, recoding = draw_table(case)
    want, want_removed = plain_marked(values, levels, case["k"])
    recoder = FullDomainRecoder(recoding)
    for labels in recoder.dictionaries:  # "*" once, even where a level's label is "*"
        assert len(set(labels.to_pylist())) == len(labels)
    parts = [recoder(b) for b in table.to_batches(max_chunksize=case["chunk"])]
    marked = decoded(pa.concat_tables([m for m, _ in parts]))
    removed = np.concatenate([r for _, r in parts])
    got = list(zip(*(marked.column(q).to_pylist() for q in case["qis"])))
    assert got == want and removed.tolist() == want_removed
    assert marked.column("s").to_pylist() == table.column("s").to_pylist()
    assert recoding.suppressed_records == sum(want_removed)
    # the rows released, dictionaries cut to their used entries, read the same
    released = decoded(pa.concat_tables([kept(m, r, True) for m, r in parts]))
    assert list(zip(*(released.column(q).to_pylist() for q in case["qis"]))) == [
        w for w, r in zip(want, want_removed) if not r]


@settings(max_examples=60, deadline=None)
@given(tables)
def test_checker_verdict_on_the_streamed_release_is_the_plain_one(case):
    case = {**case, "k": min(case["k"], case["rows"])}  # the checker refuses k > records
    values, table, levels, recoding = draw_table(case)
    want, _ = plain_marked(values, levels, case["k"])
    spec = Spec(quasi_identifiers={q: HIERARCHIES[q] for q in case["qis"]}, sensitive=["s"],
                models=[KAnonymity(case["k"])], missing=MISSING)
    plain = check(pd.DataFrame(want, columns=list(case["qis"])).assign(
        s=table.column("s").to_pylist()), spec)
    engine = EmbeddedEngine(batch_rows=case["chunk"])
    source = Source(table)
    with engine.release(source, FullDomainRecoder(recoding), check_columns=[*case["qis"], "s"],
                        missing=MISSING, suppressed="keep", labelled=case["qis"]) as release:
        report = check_regrouped(release.regrouped, spec, release.columns)
    assert (report.passed, report.classes, report.suppressed, report.min_class_size) == (
        plain.passed, plain.classes, plain.suppressed, plain.min_class_size)
    assert report.passed  # the plan suppresses every class under k
    assert release.data.schema.field(case["qis"][0]).type == pa.string()


def test_ground_codes_of_dictionaries_read_texts():
    h = HIERARCHIES["b"]
    column = pa.chunked_array([
        pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None, 3], pa.int32()),
                                       pa.array(["y", "unused", "y", "x"])).filter(
            pa.array([True, False, True, True, True])),
        pa.array(["z", None]).dictionary_encode(),
    ])
    texts = pa.array(["y", "y", MISSING, "x", "z", MISSING])
    assert ground_codes(column, h, "b", MISSING).tolist() == h.encode(texts).tolist()
    with pytest.raises(BlendinError, match="'w'"):
        ground_codes(pa.array(["x", "w"]).dictionary_encode(), h, "b", MISSING)


def test_repeated_text_is_a_plain_string_array():
    for text in ("", "[0,99]", "é*"):
        assert repeated(pa.scalar(text), 4).equals(pa.repeat(pa.scalar(text), 4))
    assert repeated(pa.scalar(None, pa.string()), 2).null_count == 2


def released_table():
    rng = np.random.default_rng(3)
    ages = rng.integers(20, 60, 300)
    df = pd.DataFrame({"age": ages.astype(str), "dx": rng.choice(list("abc"), 300)})
    age = Hierarchy.from_rows([[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*"]
                               for a in sorted(set(ages))])
    return df, Spec(quasi_identifiers={"age": age}, sensitive=["dx"], models=[KAnonymity(5)],
                    max_suppression=0.2)


def test_the_checker_catches_a_recoder_that_forgets_to_suppress(monkeypatch):
    df, spec = released_table()
    prepared = prepare(df, spec)
    outcome = full_domain_outcome(prepared, (0,))  # ages: many classes under 5
    assert outcome.suppressed > 0
    recoding = outcome.recoder.recoding
    monkeypatch.setattr(type(recoding), "suppressed_rows",
                        lambda self, codes: np.zeros(len(codes), bool))
    with pytest.raises(BlendinError, match="failed the independent check"):
        verify(prepared, outcome, "drop")


def test_the_checker_reads_texts_not_dictionary_entries():
    df, spec = released_table()
    labels = [f"{a // 10 * 10}-{a // 10 * 10 + 9}" for a in df.age.astype(int)]
    entries = sorted(set(labels))
    index = pa.array([entries.index(v) for v in labels], pa.int32())
    same = pa.table({"age": pa.DictionaryArray.from_arrays(index, pa.array(entries)),
                     "dx": df.dx})
    duplicated = pa.table({"age": pa.DictionaryArray.from_arrays(  # each entry twice
        pa.array(np.asarray(index) + len(entries) * (np.arange(len(df)) % 2), pa.int32()),
        pa.array(entries * 2)), "dx": df.dx})
    assert check(same, spec).passed and check(duplicated, spec).passed
    assert check(duplicated, spec).classes == check(same, spec).classes == len(entries)
    # one row's entry changed to a text of its own: a class of one, which must be caught
    tampered = pa.table({"age": pa.DictionaryArray.from_arrays(
        pa.array([len(entries), *index.to_pylist()[1:]], pa.int32()),
        pa.array([*entries, labels[0] + " "])), "dx": df.dx})
    report = check(tampered, spec)
    assert not report.passed and report.min_class_size == 1


@pytest.mark.parametrize("zone", [None, "Europe/Paris"])
def test_a_parquet_release_reads_back_as_the_in_memory_one(tmp_path, zone):
    df, spec = released_table()
    table = pa.table({"age": pa.array(df.age.tolist()), "dx": pa.array(df.dx.tolist()),
                      "seen": pa.array(np.arange(len(df)) * 10**9, pa.timestamp("ns", tz=zone))})
    path = tmp_path / "in.parquet"
    import pyarrow.parquet as pq

    pq.write_table(table, path)
    from blendin.anonymize import anonymize

    whole = anonymize(table, spec, keep_order=True)
    streamed = anonymize(path, spec, output=tmp_path / "out.parquet", keep_order=True)
    back = pq.read_table(tmp_path / "out.parquet")
    assert back.schema == whole.data.schema and back.equals(whole.data)
    assert back.schema.field("age").type == pa.string()
    # labels go as indices without statistics, unless a type needs the stored schema
    columns = pq.ParquetFile(tmp_path / "out.parquet").metadata.row_group(0)
    stats = {columns.column(i).path_in_schema: columns.column(i).is_stats_set
             for i in range(columns.num_columns)}
    assert stats["dx"] and stats["seen"] and stats["age"] == (zone is not None)
    assert streamed.check.passed


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 20), st.integers(0, 10_000), st.booleans())
def test_row_columns_of_dictionary_batches_number_as_the_whole_table(rows, chunk, seed, encode):
    from blendin.anonymize import with_row_columns
    from blendin.engines.kernels import RowColumns

    rng = np.random.default_rng(seed)
    a = [str(v) for v in rng.choice(["x", "y", "*"], rows)]
    b = ["*" if v == "*" else str(w) for v, w in zip(a, rng.choice(["u", "*", ""], rows))]
    columns = {"a": with_duplicates(a, rng), "b": with_duplicates(b, rng)} if encode else {
        "a": pa.array(a), "b": pa.array(b)}
    table = pa.table(columns)
    whole = with_row_columns(decoded(table), ["a", "b"], group_column="g", original_row="r")
    add = RowColumns(["a", "b"], group_column="g", original_row="r")
    parts = [add(add.number_source(table.slice(i, chunk))) for i in range(0, rows, chunk)]
    assert decoded(pa.concat_tables(parts)).equals(whole)


@settings(max_examples=60, deadline=None)
@given(tables)
def test_suppressed_rows_by_bits_equal_the_binary_search(case):
    import dataclasses

    from blendin import plan as plans

    _, table, _, recoding = draw_table(case)
    recoder = FullDomainRecoder(recoding)
    _, removed = recoder(table)
    # the same recoding without the bit set (as for key spans too large for one)
    searched = dataclasses.replace(recoding)
    try:
        plans.DENSE_KEYS, saved = 0, plans.DENSE_KEYS
        assert searched._suppressed_bits is None
        assert np.array_equal(FullDomainRecoder(searched)(table)[1], removed)
    finally:
        plans.DENSE_KEYS = saved


@settings(max_examples=60, deadline=None)
@given(tables, st.sampled_from(["k", "l", "t"]), st.sampled_from([0.0, 0.1, 0.5]),
       st.sampled_from(["optimal", "heuristic", "binary"]))
def test_a_plan_from_the_search_check_is_the_plan_grouped_again(case, model, limit, algorithm):
    from blendin.models import DistinctLDiversity, TCloseness
    from blendin.search import find

    _, table, _, _ = draw_table(case)
    hierarchies = {q: HIERARCHIES[q] for q in case["qis"]}
    ft = FrequencyTable.from_table(decoded(table), hierarchies, ["s"], missing=MISSING)
    k = min(case["k"], case["rows"])
    models = {"k": [KAnonymity(k)], "l": [KAnonymity(k), DistinctLDiversity("s", 2)],
              "t": [TCloseness("s", 0.3)]}[model]
    try:
        found = find(ft, models, max_suppression=limit, algorithm=algorithm)
    except BlendinError:  # a model the table cannot meet (l above its values, say)
        return
    if found.levels is None:
        return
    fresh = plan_node(ft, found.levels, models)
    taken = plan_node(ft, found.levels, models, checked=found.check)
    assert found.check is not None
    assert np.array_equal(taken.suppressed_tuples, fresh.suppressed_tuples)
    assert np.array_equal(taken.suppressed_keys, fresh.suppressed_keys)
    assert taken.suppressed_records == fresh.suppressed_records == found.n_suppressed
    assert sorted(taken.class_sizes) == sorted(fresh.class_sizes)


def _drops_unstarred(monkeypatch):
    """A recoder that removes its first row from the release without showing it as ``*``:
    the row keeps the labels of its class."""
    real = FullDomainRecoder.__call__

    def dropping(self, batch):
        marked, removed = real(self, batch)
        removed = removed.copy()
        removed[:1] = True
        return marked, removed

    monkeypatch.setattr(FullDomainRecoder, "__call__", dropping)


@pytest.mark.parametrize("output", [None, "release.csv", "release.parquet"])
def test_the_checker_counts_a_dropped_row_as_suppressed(monkeypatch, tmp_path, output):
    # classes of 4 at k = 4: the row dropped leaves one of 3 in the release, which the
    # checker must see (it counted the row in its class, by the labels it was given)
    df, spec = decades_case()
    _drops_unstarred(monkeypatch)
    out = None if output is None else tmp_path / output
    with pytest.raises(BlendinError, match="failed the independent check"):
        anonymize(df, spec, output=out, keep_order=True)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("output", ["release.csv", "release.parquet"])
def test_a_row_lost_on_its_way_to_the_file_is_not_released(monkeypatch, tmp_path, output):
    # the writer loses the first row it is handed: the classes written are not those the
    # checker counted (one of 3 at k = 4), and the rows written say so
    from blendin.engines.embedded import BatchWriter

    df, spec = decades_case()
    real = BatchWriter.write

    def losing(self, table):
        return real(self, table.slice(1) if not self.rows else table)

    monkeypatch.setattr(BatchWriter, "write", losing)
    with pytest.raises(BlendinError, match="the release holds 7 rows"):
        anonymize(df, spec, output=tmp_path / output, keep_order=True)
    assert not list(tmp_path.iterdir())
