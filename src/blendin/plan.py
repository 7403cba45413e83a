"""A full-domain solution planned on the frequency table: what to recode and suppress.

A full-domain solution is one generalization level per quasi-identifier. Applying it is one
gather per QI (ground code -> label at the chosen level), plus removing (or blanking to ``*``)
the records of the classes that still violate a privacy model at that node. Those classes are
named by their generalized key, so every chunk of a large file is recoded on its own: the
engines do that (:mod:`blendin.engines.kernels`); this module plans it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable, SensitiveDomain
from blendin.hierarchy.core import SUPPRESSED, Hierarchy
from blendin.lattice import NodeCheck, violating_of_keys
from blendin.models import PrivacyModel
from blendin.models.dp import sampled
from blendin.models.presence import subset_rows
from blendin.people import PeopleSummary, Signatures
from blendin.spec import Spec
from blendin.transform.cells import compatible, patterns, suppress_cells

#: class keys up to this many are looked up in a bit set (16 MiB at most)
DENSE_KEYS = 1 << 27


class ClassKeyer:
    """One int64 key per generalized tuple, the same in every chunk of the same data.

    Mixed radix over the QIs' label counts; where the product would overflow, the partial
    keys are re-ranked against the partial keys of the frequency table (which holds every
    tuple of the data), so the ranks do not depend on the chunk. A tuple the table does not
    hold gets a negative key (it cannot belong to a known class).

    >>> codes = np.array([[0, 1], [1, 0]])
    >>> ClassKeyer([2, 3], codes)(codes).tolist()
    [1, 3]
    """

    def __init__(self, radices: Sequence[int], table_codes: np.ndarray) -> None:
        self.radices = [int(r) for r in radices]
        self.ranks: dict[int, np.ndarray] = {}
        key = np.zeros(table_codes.shape[0], dtype=np.int64)
        span = 1
        for i, radix in enumerate(self.radices):
            if span * radix >= 2**62:
                self.ranks[i] = np.unique(key)
                key = np.searchsorted(self.ranks[i], key).astype(np.int64)
                span = len(self.ranks[i])
            if radix > 1:
                key = key * radix + table_codes[:, i]
            span *= radix

    @staticmethod
    def _rank(known: np.ndarray, key: np.ndarray) -> np.ndarray:
        if not len(known):
            return np.full(key.shape, -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(known, key), len(known) - 1)
        return np.where((known[pos] == key) & (key >= 0), pos, -1).astype(np.int64)

    def __call__(self, codes: np.ndarray) -> np.ndarray:
        key = np.zeros(codes.shape[0], dtype=np.int64)
        for i, radix in enumerate(self.radices):
            if i in self.ranks:
                key = self._rank(self.ranks[i], key)
            if radix > 1:  # a single label adds nothing to the key
                key = key * radix + codes[:, i]
        return key



@dataclass(frozen=True)
class SearchOptions:
    """How the search runs, as the spec (and the call's overrides) set it: the tie-breaking
    policy, the metric's weights, the heuristic's budget and seed, Mondrian's options, and
    whether the suppressed records are recoded at a node of their own."""

    policy: str | None = None
    weights: Mapping[str, float] | None = None
    time_limit: float | None = 10.0
    max_checks: int | None = None
    seed: int = 0
    relaxed: bool = False
    sets: bool = False
    recode_suppressed: bool = False


@dataclass(eq=False)
class Plan:
    """A spec compiled against its input (made by :func:`blendin.anonymize.prepare`).

    ``spec`` is what the release must be, kept for the independent checker and the Result;
    the stages read the rest: the ``source`` and the ``engine`` that reads and writes its
    rows, the frequency table ``ft`` and the ``hierarchies`` built from the data, the bound
    ``models``, the columns by role, the suppression limit and the ``search`` options.
    """

    spec: Spec
    source: Any
    engine: Any
    ft: FrequencyTable
    hierarchies: dict[str, Hierarchy]
    sensitive_hierarchies: dict[str, Hierarchy]
    models: tuple[PrivacyModel, ...]
    qis: tuple[str, ...]
    sensitive: tuple[str, ...]
    #: the columns not released: the identifiers, and delta-presence's subset column
    removed: tuple[str, ...]
    missing: str
    max_suppression: float
    search: SearchOptions
    #: the 0/1 column of released records (delta-presence), None when all are released
    subset: str | None = None
    #: differential privacy's model: the rows released are its sample
    sample: Any = None
    #: what the user should know before releasing (overlooked identifiers, spellings)
    warnings: list[str] = field(default_factory=list)
    #: the person key (docs/people.md): ``ft`` counts people; released rows drop it
    person: str | None = None
    #: the table's records, people and QIs by level, with a person key
    people: PeopleSummary | None = None
    #: with event-level QIs, the people's signatures (``ft`` is ``signatures.ft``)
    signatures: Signatures | None = None

    @classmethod
    def of(cls, spec: Spec, source, engine, ft: FrequencyTable,
           hierarchies: dict[str, Hierarchy], sensitive_hierarchies: dict[str, Hierarchy], *,
           subset: str | None = None, sample=None, warnings: Sequence[str] = (),
           people: PeopleSummary | None = None, signatures: Signatures | None = None) -> Plan:
        """The plan of ``spec`` on its input, everything the stages need read from it once."""
        search = SearchOptions(spec.policy, dict(spec.weights) or None, spec.time_limit,
                               spec.max_checks, spec.seed, spec.relaxed, spec.sets,
                               spec.recode_suppressed)
        return cls(spec, source, engine, ft, hierarchies, sensitive_hierarchies,
                   tuple(spec.models), tuple(spec.quasi_identifiers), tuple(spec.sensitive),
                   (*spec.identifiers, *([subset] if subset else [])), spec.missing,
                   float(spec.max_suppression), search, subset, sample, list(warnings),
                   spec.person, people, signatures)

    @property
    def domains(self) -> Mapping[str, SensitiveDomain]:
        """The input's distribution of each sensitive attribute: every record's, or with
        event-level QIs every person's (the signatures'; ``ft`` has none then)."""
        return self.ft.domains if self.signatures is None else self.signatures.domains

    def rows_of(self, recoder):
        """``recoder`` applied to the rows to release only (the subset's, for
        delta-presence; the sample's, drawn again in row order, for differential privacy)."""
        if self.subset is None and self.sample is None:
            return recoder
        return RowsOf(recoder, self.subset, self.sample)

    def unknown_values(self, name: str) -> Sequence[str]:
        """The values of QI ``name`` that a saved tree or file does not cover (re-applying a
        solution with ``--unknown suppress``)."""
        return getattr(self.spec.quasi_identifiers[name], "unknown", None) or ()


class RowsOf:
    """A recoder applied to the rows to release only: those marked in the ``subset`` column
    (delta-presence), or the ``sample`` drawn again in row order (differential privacy).
    An engine that chooses the rows itself (the SQL engine's ``WHERE``) reads the parts."""

    def __init__(self, recoder, subset: str | None, sample) -> None:
        self.recoder, self.subset, self.sample = recoder, subset, sample
        self.pending: list = []
        self.stream = None

    def __call__(self, batch):
        if self.stream is None:
            rows = sampled if self.sample is not None else subset_rows
            self.stream = rows(_drain(self.pending),
                               self.sample if self.sample is not None else self.subset)
        self.pending.append(batch)
        return self.recoder(next(self.stream))


def _drain(pending: list):
    """Yield the batches put in ``pending``, as they come (a stream fed one by one)."""
    while True:
        yield pending.pop(0)


@dataclass(frozen=True, eq=False)
class Recoding:
    """Everything needed to recode rows: hierarchies, levels, the classes to suppress.

    ``suppressed_keys`` are the sorted keys (see :class:`ClassKeyer`) of the classes whose
    records are removed; ``suppressed_records`` how many records that is in the data the
    recoding was planned on.
    """

    qi_names: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    levels: tuple[int, ...]
    keyer: ClassKeyer
    suppressed_keys: np.ndarray
    suppressed_records: int
    #: per tuple of the planned frequency table: its records are suppressed
    suppressed_tuples: np.ndarray
    #: records in each class that is kept (the released classes)
    class_sizes: np.ndarray
    identifiers: tuple[str, ...] = ()
    missing: str = ""
    #: suppression by cells: per suppressed key, the bit set of QIs whose cells its records
    #: show blank (``*``); they are then released, not removed
    blanks: np.ndarray | None = None

    def suppressed_rows(self, generalized_codes: np.ndarray) -> np.ndarray:
        """True for each row (given its generalized codes) that falls in a suppressed class."""
        if not len(self.suppressed_keys):
            return np.zeros(generalized_codes.shape[0], dtype=bool)
        keys = self.keyer(generalized_codes)
        if self._suppressed_bits is not None:
            return ((self._suppressed_bits[keys >> 3] >> (keys & 7)) & 1).astype(bool)
        pos = np.searchsorted(self.suppressed_keys, keys)
        pos = np.minimum(pos, len(self.suppressed_keys) - 1)
        return self.suppressed_keys[pos] == keys

    @cached_property
    def _suppressed_bits(self) -> np.ndarray | None:
        """A bit per possible class key (1: suppressed) when the keys span a range small
        enough: one gather per row instead of a binary search among the suppressed keys
        (100x faster when they are many: 289k on 10M adult-like rows)."""
        span = math.prod(self.keyer.radices)
        if self.keyer.ranks or span > DENSE_KEYS:
            return None
        bits = np.zeros((span + 7) // 8, np.uint8)
        np.bitwise_or.at(bits, self.suppressed_keys >> 3,
                         (1 << (self.suppressed_keys & 7)).astype(np.uint8))
        return bits


def plan_node(
    ft: FrequencyTable,
    levels: Sequence[int],
    models: Sequence[PrivacyModel],
    *,
    identifiers: Sequence[str] = (),
    missing: str = "",
    checked: NodeCheck | None = None,
    forced: np.ndarray | None = None,
) -> Recoding:
    """The recoding of a full-domain node: which classes to suppress, keyed for any chunk.

    ``checked`` is the search's check of this node: its classes and those that violate are
    taken as they are, not grouped and tested again (the checker of the release is what
    proves it, on the released values). The classes of the ``forced`` tuples (a mask) are
    suppressed whatever the models say, and the models of the whole release measured
    without them.

    >>> from blendin.hierarchy.core import Hierarchy
    >>> from blendin.models import KAnonymity
    >>> import pandas as pd
    >>> h = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
    >>> ft = FrequencyTable.from_table(pd.DataFrame({"a": [1, 2, 2, 3]}), {"a": h})
    >>> plan_node(ft, [1], [KAnonymity(2)]).suppressed_records
    1
    """
    levels = tuple(int(v) for v in levels)
    generalized = ft.generalized(levels)
    radices = [len(h.labels[lvl]) for h, lvl in zip(ft.hierarchies, levels)]
    keyer = ClassKeyer(radices, generalized)
    keys = keyer(generalized)
    if checked is not None and tuple(checked.levels) == levels and forced is None:
        bad, groups = checked.violating, checked.groups
        codes = (np.stack(groups.codes_of(np.flatnonzero(bad)), axis=1) if ft.qi_names
                 else np.zeros((int(bad.sum()), 0), np.int64))  # (the violating classes')
        # distinct classes have distinct keys: sorted, not made unique
        suppressed_keys = np.sort(keyer(codes))
        tuple_bad = _among(keys, suppressed_keys)
        sizes = groups.sizes[~bad]
    else:
        bad, class_of_tuple, classes = violating_of_keys(ft, levels, models, generalized, keys,
                                                  math.prod(radices), forced)
        tuple_bad = bad[class_of_tuple]
        suppressed_keys = np.unique(keys[tuple_bad])
        sizes = classes.sizes[~bad]
    return Recoding(
        tuple(ft.qi_names), tuple(ft.hierarchies), levels, keyer, suppressed_keys,
        int(ft.counts[tuple_bad].sum()), tuple_bad, np.asarray(sizes, np.int64),
        tuple(identifiers), missing,
    )


def _among(keys: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """``np.isin(keys, chosen)``, by a table of the keys' range where it is no larger than
    the sort would take (16 bytes a key): at 480,287 tuples, 14 MiB at most against 20.

    >>> _among(np.array([5, 2, 9]), np.array([9, 5])).tolist()
    [True, False, True]
    """
    if len(keys) and len(chosen):
        span = int(max(keys.max(), chosen.max())) - int(min(keys.min(), chosen.min())) + 1
        if span <= 16 * (len(keys) + len(chosen)):
            return np.isin(keys, chosen, kind="table")
    return np.isin(keys, chosen)


def with_cells(recoding: Recoding, ft: FrequencyTable, k: int,
               priority: Sequence[str] = ()) -> tuple[Recoding, np.ndarray, int, np.ndarray]:
    """``recoding`` with the records of its suppressed classes released, the fewest of
    their QI cells blank so that every record is compatible with ``k`` (a blank matches
    any value; :mod:`blendin.transform.cells`), the QIs named in ``priority`` blanked first.
    Also the cells blanked per QI, the records with a blank and, per released class
    (distinct released tuple), the records compatible with it.

    >>> from blendin.models import KAnonymity
    >>> import pandas as pd
    >>> flat = Hierarchy.from_rows([["a"], ["b"]])
    >>> ft = FrequencyTable.from_table(pd.DataFrame({"x": list("aab"), "y": list("aba")}),
    ...                                {"x": flat, "y": flat})
    >>> node = plan_node(ft, [0, 0], [KAnonymity(2)])
    >>> cells, blanked, records, sizes = with_cells(node, ft, 2)
    >>> blanked.tolist(), records, sorted(sizes.tolist())
    ([1, 1], 2, [2, 2, 3])
    """
    for name, hierarchy, level in zip(ft.qi_names, ft.hierarchies, recoding.levels):
        labels = [str(v) for v in hierarchy.labels[level]]
        if SUPPRESSED in labels and len(labels) > 1:
            raise BlendinError(
                f"{name!r} has the label {SUPPRESSED!r} at level {level} beside other labels: "
                "with suppression by cells it would read as a blank cell, matching any value",
                fix=f"give that group of {name!r} another label in its hierarchy, or use "
                    'suppression = "records"')
    generalized = ft.generalized(recoding.levels)
    keys, first, inverse = np.unique(recoding.keyer(generalized), return_index=True,
                                     return_inverse=True)
    counts = np.bincount(inverse.reshape(-1), weights=ft.counts).astype(np.int64)
    codes = generalized[first]
    blank = suppress_cells(codes, counts, k,
                           priority=[list(ft.qi_names).index(name) for name in priority])
    bits = patterns(blank)
    at = np.searchsorted(keys, recoding.suppressed_keys)
    if bits.any() and not np.isin(np.flatnonzero(bits), at).all():
        raise BlendinError("cell suppression blanked a class that meets k",
                           fix="this is a bug in blendin; please report it with the spec")
    blanked = (blank * counts[:, None]).sum(axis=0)
    # classes as released: the blanked tuples merge with their equals
    _, index = np.unique(np.where(blank, -1, codes), axis=0, return_index=True)
    sizes = compatible(codes, blank, counts, codes[index], blank[index])
    records = int(counts[blank.any(axis=1)].sum())
    return dataclasses.replace(recoding, blanks=bits[at]), blanked, records, sizes


def release_levels(levels: Mapping[str, int], qi_names: Sequence[str]) -> tuple[int, ...]:
    """Levels in QI order, with a clear error for a QI that has none."""
    missing = [q for q in qi_names if q not in levels]
    if missing:
        raise BlendinError(f"no level given for quasi-identifier(s) {missing}",
                           fix="give one level per quasi-identifier")
    return tuple(int(levels[q]) for q in qi_names)


def plan_part(ft: FrequencyTable, levels: Sequence[int], left: np.ndarray,
              released: np.ndarray, *, identifiers: Sequence[str] = (),
              missing: str = "") -> Recoding:
    """The recoding of a further part of a release: of the tuples ``left`` by the earlier
    parts, those ``released`` go out at node ``levels``; the others' classes (whole
    classes at that node, among ``left``) are keyed as suppressed.

    >>> from blendin.hierarchy.core import Hierarchy
    >>> import pandas as pd
    >>> h = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
    >>> ft = FrequencyTable.from_table(pd.DataFrame({"a": [1, 2, 3]}), {"a": h})
    >>> part = plan_part(ft, [1], np.array([True, True, True]), np.array([True, True, False]))
    >>> part.suppressed_records, part.class_sizes.tolist()
    (1, [2])
    """
    levels = tuple(int(v) for v in levels)
    generalized = ft.generalized(levels)[left]
    radices = [len(h.labels[lvl]) for h, lvl in zip(ft.hierarchies, levels)]
    keyer = ClassKeyer(radices, generalized)
    out = ~released[left]
    keys = np.unique(keyer(generalized)[out])
    kept_key = keyer(generalized)[~out]
    _, class_of = np.unique(kept_key, return_inverse=True)
    sizes = np.bincount(class_of.reshape(-1), weights=ft.counts[left][~out]).astype(np.int64)
    suppressed = np.zeros(len(ft.counts), bool)
    suppressed[np.flatnonzero(left)[out]] = True
    return Recoding(tuple(ft.qi_names), tuple(ft.hierarchies), levels, keyer, keys,
                    int(ft.counts[suppressed].sum()), suppressed, sizes, tuple(identifiers),
                    missing)
