"""People, not rows: classes counted in people when a table has several rows per person.

With a person key, the unit of protection is a person. A person's *signature* is the set of
their (generalized) quasi-identifier tuples: a QI the same on every row of a person
(birth date, sex) is *person-level* and enters every tuple alike; one that varies (a
visit's ward) is *event-level*, and the set holds each of the person's distinct tuples once.
People with equal signatures form a class, whose size is its number of people; a person is
released whole or not at all.

A person's value of a sensitive attribute is the set of their values over their rows,
written ``"a; b"`` (a single value where they have one): an attacker who places a person in
a class learns one of the class's sets, so l-diversity counts distinct sets, t-closeness
compares the distribution of sets, and so on (docs/people.md has worked examples).

Everything here is vectorized: signatures are compared as byte strings (each person's
sorted, distinct tuple keys), which Arrow's hashing groups exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import COUNT, as_text, combine_keys, unique_inverse
from blendin.errors import BlendinError
from blendin.frequency import Cells, FrequencyTable, SensitiveDomain, qi_matrix
from blendin.hierarchy.core import Hierarchy, first_seen

#: how a person's several values of one column are joined into one text
JOINER = "; "
#: the engines that count people (Spark does not yet)
PERSON_ENGINES = ("embedded", "sql")


def set_ids(owner: np.ndarray, key: np.ndarray, n_owners: int) -> np.ndarray:
    """Per owner ``0 .. n_owners - 1``, the id of the set of its keys: equal sets, equal
    ids (exact: the sets are compared as byte strings, not hashed into a number).

    >>> set_ids(np.array([0, 0, 1, 1, 1, 2]), np.array([5, 7, 7, 5, 7, 5]), 3).tolist()
    [0, 0, 1]
    """
    owner = np.asarray(owner, np.int64)
    key = np.asarray(key, np.int64)
    order = np.lexsort((key, owner))
    owner, key = owner[order], key[order]
    fresh = np.ones(len(key), bool)
    fresh[1:] = (owner[1:] != owner[:-1]) | (key[1:] != key[:-1])
    owner, key = owner[fresh], key[fresh]
    offsets = np.zeros(n_owners + 1, np.int64)
    np.cumsum(np.bincount(owner, minlength=n_owners) * 8, out=offsets[1:])
    data = np.ascontiguousarray(key).view(np.uint8)
    sets = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n_owners, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return pc.dictionary_encode(sets).indices.to_numpy().astype(np.int64)


def person_codes(column: pa.ChunkedArray | pa.Array, name: str, missing: str = ""
                 ) -> tuple[np.ndarray, pa.Array]:
    """Each row's person (0, 1, ...) and the person keys, as text (person ``i`` is key
    ``i``); an empty key is an error naming how many records have one."""
    text = as_text(column, missing)
    empty = pc.sum(empty_keys(text, missing)).as_py()
    if empty:
        raise BlendinError(
            f"the person key {name!r} is empty on {empty:,} record(s): every record must "
            "name its person", fix=f"fill in {name!r} on every row, or drop those rows")
    encoded = pc.dictionary_encode(text.combine_chunks() if isinstance(text, pa.ChunkedArray)
                                   else text)
    return encoded.indices.to_numpy().astype(np.int64), encoded.dictionary


def empty_keys(column, missing: str) -> pa.ChunkedArray | pa.Array:
    """True where a person key is empty: null, or read as the ``missing`` label."""
    text = as_text(column, missing)
    return pc.or_kleene(pc.is_null(text), pc.equal(text, missing))


def require_keys(distinct: pa.Table, person: str, missing: str, rows) -> None:
    """Refuse a person key that is empty on some record, naming the first such row (1 =
    the first data row), never a key: ``rows()`` gives the person column's batches, read
    again only on that error path.

    >>> require_keys(pa.table({"id": ["a", None]}), "id", "", lambda: [pa.table(
    ...     {"id": ["a", "a", None]})])
    Traceback (most recent call last):
    ...
    blendin.errors.BlendinError: the person key 'id' is empty on row 3 (1 record(s) in all)...
    """
    if not pc.any(empty_keys(distinct.column(person), missing)).as_py():
        return
    seen, first, empty = 0, None, 0
    for batch in rows():
        gaps = np.flatnonzero(empty_keys(batch.column(person), missing)
                              .to_numpy(zero_copy_only=False))
        if first is None and len(gaps):
            first = seen + int(gaps[0]) + 1
        empty += len(gaps)
        seen += batch.num_rows
    raise BlendinError(
        f"the person key {person!r} is empty on row {first} ({empty:,} record(s) in all): "
        "every record must name its person",
        fix=f"fill in {person!r} on every row, or drop those rows")


def person_level(person: np.ndarray, first: np.ndarray, column: pa.ChunkedArray) -> bool:
    """Whether ``column`` holds one value per person: every row's value is that of the
    person's ``first`` row (rows belong to ``person``; a gather, no hashing of pairs).

    >>> column = pa.chunked_array([["f", "m", "f"]])
    >>> person_level(np.array([0, 1, 0]), np.array([0, 1]), column)
    True
    """
    values = pc.dictionary_encode(as_text(column).combine_chunks()).indices.to_numpy()
    return bool(np.array_equal(values, values[first][person]))


def each_persons_text(person: np.ndarray, n_people: int, column, missing: str = ""
                      ) -> pa.Array:
    """Per person, their distinct values of ``column`` sorted and joined by ``"; "`` (an
    empty value read as ``missing``)."""
    table = pa.table({"p": pa.array(person), "v": as_text(column, missing)})
    table = table.group_by(["p", "v"], use_threads=False).aggregate([])
    table = table.sort_by([("p", "ascending"), ("v", "ascending")])
    lists = table.group_by("p", use_threads=False).aggregate([("v", "list")])
    texts = pc.binary_join(lists.column("v_list"), JOINER).combine_chunks()
    return texts.take(pa.array(np.argsort(lists.column("p").to_numpy())))


@dataclass(frozen=True, eq=False)
class PeopleSummary:
    """What a person key made of a table: its rows, its people, the QIs that vary within
    a person (event-level) and those that do not (person-level)."""

    records: int
    people: int
    event_level: tuple[str, ...]
    person_level: tuple[str, ...]
    #: people whose number of rows alone sets them apart (no one else has as many)
    unique_by_count: int = 0
    #: the sensitive attributes whose value varies within a person (a set per person)
    event_sensitive: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"records": self.records, "people": self.people,
                "event_level": list(self.event_level), "person_level": list(self.person_level),
                "unique_by_count": self.unique_by_count,
                "event_sensitive": list(self.event_sensitive)}


def per_person(distinct: pa.Table, person: str, qis: Sequence[str], sensitive: Sequence[str],
               missing: str = "") -> tuple[pa.Table, PeopleSummary, np.ndarray | None]:
    """The distinct (person, QI, sensitive) texts of a table reduced to one row per person.

    Each QI column holds the person's value (person-level) or their distinct values joined
    by ``"; "`` (event-level), each sensitive column the person's values likewise; ``COUNT``
    is 1 a person. Also the summary, and, when two QIs or more are event-level, each
    person's signature id (the set of their joint event tuples, which the per-column sets
    do not determine), else None.

    >>> d = pa.table({"id": ["a", "a", "b"], "ward": ["x", "y", "x"], "sex": ["f", "f", "m"],
    ...               COUNT: [2, 1, 1]})
    >>> table, summary, _ = per_person(d, "id", ["ward", "sex"], [])
    >>> table.column("ward").to_pylist(), summary.event_level, summary.records
    (['x; y', 'x'], ('ward',), 4)
    """
    owner, keys = person_codes(distinct.column(person), person, missing)
    n_people = len(keys)
    counts = distinct.column(COUNT).to_numpy().astype(np.int64)
    first = first_seen(owner, n_people)  # a row of each person
    levels = {q: person_level(owner, first, distinct.column(q)) for q in [*qis, *sensitive]}
    event = tuple(q for q in qis if not levels[q])
    # a person-level column's value is that of any of the person's rows
    columns = {name: as_text(distinct.column(name), missing).take(pa.array(first))
               if levels[name] else
               each_persons_text(owner, n_people, distinct.column(name), missing)
               for name in [*qis, *sensitive]}
    signature = None
    if len(event) > 1:
        codes = [pc.dictionary_encode(as_text(distinct.column(q)).combine_chunks())
                 for q in event]
        key = combine_keys([c.indices.to_numpy() for c in codes],
                           [len(c.dictionary) for c in codes])
        signature = set_ids(owner, key, n_people)
    rows_of = np.bincount(owner, weights=counts, minlength=n_people).astype(np.int64)
    _, how_often = np.unique(rows_of, return_counts=True)
    lone = int((how_often == 1).sum())
    summary = PeopleSummary(int(counts.sum()), n_people, event,
                            tuple(q for q in qis if levels[q]), lone,
                            tuple(s for s in sensitive if not levels[s]))
    table = pa.table({**columns, COUNT: pa.array(np.ones(n_people, np.int64))})
    return table, summary, signature


@dataclass(frozen=True, eq=False)
class Signatures:
    """The frequency table of people with event-level QIs: their distinct signatures.

    ``ft`` has one tuple per (signature, one of its distinct ground QI tuples), counting the
    signature's people (the cell metrics weigh a person's distinct tuples); ``of_tuple``
    gives each tuple's signature; ``people`` the people per signature and ``values[name]``
    each signature's code of a sensitive attribute (``domains[name].labels``, counted in
    people). ``of_person`` is each person's signature, ``keys`` the person keys (sorted) it
    is indexed by, for the release.
    """

    ft: FrequencyTable
    of_tuple: np.ndarray
    people: np.ndarray
    values: Mapping[str, np.ndarray]
    domains: Mapping[str, SensitiveDomain]
    of_person: np.ndarray
    keys: pa.Array

    @property
    def n_people(self) -> int:
        return int(self.people.sum())

    def classes_at(self, levels: Sequence[int]) -> tuple[np.ndarray, int]:
        """Each signature's class at the node ``levels``, and the number of classes."""
        ft = self.ft
        radices = [len(h.labels[lv]) for h, lv in zip(ft.hierarchies, levels)]
        key = combine_keys(ft.generalized(levels), radices)
        return unique_inverse(set_ids(self.of_tuple, key, len(self.people)), len(self.people))

    @classmethod
    def of(cls, distinct: pa.Table, person: str, hierarchies: Mapping[str, Hierarchy],
           sensitive: Sequence[str], missing: str = "",
           persons: pa.Table | None = None) -> Signatures:
        """From the distinct (person, QI, sensitive) texts of a table; ``persons`` is its
        :func:`per_person` table, whose sensitive texts are then not made again."""
        names = tuple(hierarchies)
        owner, keys = person_codes(distinct.column(person), person, missing)
        n_people = len(keys)
        codes = [hierarchies[n].encode(distinct.column(n), n) for n in names]
        key = combine_keys(codes, [len(hierarchies[n].ground) for n in names])
        qi_set = set_ids(owner, key, n_people)
        labels, value_of_person = {}, []
        for name in sensitive:
            texts = pc.dictionary_encode(
                persons.column(name).combine_chunks() if persons is not None
                else each_persons_text(owner, n_people, distinct.column(name), missing))
            labels[name] = np.asarray(texts.dictionary.to_pylist(), dtype=object)
            value_of_person.append(texts.indices.to_numpy().astype(np.int64))
        whole = combine_keys([qi_set, *value_of_person],
                             [n_people, *(len(v) for v in labels.values())])
        of_person, n_sigs = unique_inverse(whole, int(whole.max(initial=0)) + 1)
        people = np.bincount(of_person, minlength=n_sigs).astype(np.int64)
        first = first_seen(of_person, n_sigs)
        values = {name: v[first] for name, v in zip(labels, value_of_person)}
        domains = {name: SensitiveDomain(name, labels[name], np.bincount(
            values[name], weights=people, minlength=len(labels[name])).astype(np.int64))
            for name in labels}
        # the (signature, ground tuple) pairs, once each
        pair_sig = of_person[owner]
        order = np.lexsort((key, pair_sig))
        pair_sig, pair_key, row = pair_sig[order], key[order], order
        fresh = np.ones(len(row), bool)
        fresh[1:] = (pair_sig[1:] != pair_sig[:-1]) | (pair_key[1:] != pair_key[:-1])
        pair_sig, row = pair_sig[fresh], row[fresh]
        tuples = qi_matrix([c[row] for c in codes], len(row))
        counts = people[pair_sig]
        ft = FrequencyTable(names, tuple(hierarchies[n] for n in names), tuples, counts,
                            {}, {})
        by_key = pc.sort_indices(keys).to_numpy()
        return cls(ft, pair_sig, people, values, domains, of_person[by_key],
                   keys.take(pa.array(by_key)))

    def cells(self, class_of: np.ndarray) -> dict[str, Cells]:
        """Per sensitive attribute, the (class, value, people) cells of the classes."""
        return {name: Cells(class_of, v, self.people) for name, v in self.values.items()}



class PersonMask:
    """The rows of suppressed people, batch after batch: a row's key is looked up among
    the sorted person keys, and its person's signature tells whether they are suppressed.

    >>> mask = PersonMask("id", pa.array(["a", "b"]), np.array([False, True]))
    >>> mask(pa.table({"id": ["b", "a", "b"]})).tolist()
    [True, False, True]
    """

    def __init__(self, column: str, keys: pa.Array, suppressed: np.ndarray,
                 missing: str = "", classes: np.ndarray | None = None) -> None:
        self.column, self.keys, self.suppressed = column, keys, suppressed
        self.missing = missing
        #: each person's class (for --group-column: a row's class is its person's)
        self.classes = classes

    def __call__(self, table: pa.Table) -> np.ndarray:
        return self.suppressed[self._people(table)]

    def class_of(self, table: pa.Table) -> np.ndarray:
        """Each row's person's class (-1 where the person is suppressed)."""
        people = self._people(table)
        return np.where(self.suppressed[people], -1, self.classes[people])

    def _people(self, table: pa.Table) -> np.ndarray:
        text = as_text(table.column(self.column), self.missing)
        at = pc.index_in(text, value_set=self.keys)
        if at.null_count:
            raise BlendinError(f"a record's person key ({self.column!r}) changed while it was "
                               "released", fix="release a table that does not change")
        return at.to_numpy(zero_copy_only=False)
