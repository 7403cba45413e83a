"""delta-presence: how sure an adversary can be that a person of the population is in the
released subset (Nergiz, Atzori, Clifton, "Hiding the presence of individuals from shared
databases", SIGMOD 2007).

The input is the whole population; a 0/1 column (``subset``) marks the records that are
released. For every released class, the share of its population that is in the release,
``delta = released / population`` (both counted at the same generalization), must lie in
``[dmin, dmax]``. Only the subset's records are written; the population's class counts
come from the input's other records, so the search and the checker both see them.

Monotonicity: a class of a coarser node is the union of finer classes, some of them with
no released record at all (population only). Its delta is the mediant of theirs, never
above the largest, so ``delta <= dmax`` survives generalization; ``delta >= dmin`` does not
(a population-only class dilutes it). The model is monotone when ``dmin = 0`` and not
otherwise, and never with suppression (a suppressed class's population remains).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import COUNT, as_text, combine_keys
from blendin.errors import BlendinError, preview
from blendin.frequency import Classes, SensitiveDomain
from blendin.groupby import distinct_tuples
from blendin.hierarchy.core import Hierarchy
from blendin.io import Source
from blendin.models.base import PrivacyModel, _share, at_least, at_most

# a dense count per key when the key space is at most this many times the people's tuples
# (plus a constant), as the lattice's grouping does
_DENSE_FACTOR = 4
_DENSE_SLACK = 1 << 16

#: the texts a subset column may hold, and whether each means "released"
SUBSET_VALUES = {"1": True, "0": False, "1.0": True, "0.0": False, "true": True,
                 "false": False}


class Population:
    """The people of a population: their distinct quasi-identifier tuples, as ground codes
    of the release's hierarchies, with counts; :meth:`counts_at` counts them in classes.

    >>> h = Hierarchy.from_rows([["1", "1-2"], ["2", "1-2"], ["3", "3-4"]])
    >>> people = Population(np.array([[0], [1], [2]]), np.array([5, 3, 2]), [h])
    >>> people.counts_at([1], [np.array([1, 0])]).tolist()  # classes 3-4 and 1-2
    [2, 8]
    """

    def __init__(self, tuples: np.ndarray, counts: np.ndarray,
                 hierarchies: Sequence[Hierarchy]) -> None:
        self.tuples = np.asarray(tuples, dtype=np.int64)
        counts = np.asarray(counts)  # people, or sums of sampling weights (float)
        self.counts = counts if counts.dtype.kind == "f" else counts.astype(np.int64)
        self.hierarchies = tuple(hierarchies)
        #: one contiguous array per QI (gathers along a column of ``tuples`` are strided)
        self._columns = [np.ascontiguousarray(self.tuples[:, i]) for i in range(
            self.tuples.shape[1])]

    @classmethod
    def from_distinct(cls, distinct: pa.Table, hierarchies: Mapping[str, Hierarchy]
                      ) -> Population:
        """From distinct text tuples with counts
        (:func:`blendin.groupby.distinct_tuples`)."""
        names = list(hierarchies)
        codes = [hierarchies[n].encode(distinct.column(n), n) for n in names]
        stacked = (np.stack(codes, axis=1).astype(np.int64) if codes
                   else np.zeros((distinct.num_rows, 0), np.int64))
        return cls(stacked, distinct.column(COUNT).to_numpy().astype(np.int64),
                   [hierarchies[n] for n in names])

    @property
    def size(self) -> int:
        return int(self.counts.sum())

    def counts_at(self, levels: Sequence[int], class_codes: Sequence[np.ndarray]) -> np.ndarray:
        """People in each class, the classes given by their codes at ``levels`` (one array
        per QI); a class no person falls in counts 0."""
        n = len(class_codes[0]) if len(class_codes) else 0
        if not self.hierarchies:
            return np.full(n, self.counts.sum(), self.counts.dtype)
        radices = [len(h.labels[lv]) for h, lv in zip(self.hierarchies, levels)]
        if math.prod(radices) <= _DENSE_FACTOR * len(self.counts) + _DENSE_SLACK:
            # a small key space: one dense count per key, no sort
            ours = np.zeros(len(self.counts), np.int64)
            theirs = np.zeros(n, np.int64)
            for column, code, h, lv, radix in zip(self._columns, class_codes,
                                                   self.hierarchies, levels, radices):
                ours = ours * radix + np.take(h.codes[lv], column)
                theirs = theirs * radix + np.asarray(code, np.int64)
            dense = np.bincount(ours, weights=self.counts, minlength=math.prod(radices))
            return dense[theirs].astype(self.counts.dtype)
        ours = np.stack([np.take(h.codes[lv], column) for column, h, lv in zip(
            self._columns, self.hierarchies, levels)], axis=1).astype(np.int64)
        theirs = np.stack([np.asarray(c, np.int64) for c in class_codes], axis=1)
        # one key space for both, so ranks (past int64) agree
        key = combine_keys(np.concatenate([ours, theirs]), radices)
        uniq, inverse = np.unique(key[:len(ours)], return_inverse=True)
        sums = np.bincount(inverse.reshape(-1), weights=self.counts, minlength=len(uniq))
        if not len(uniq):
            return np.zeros(n, self.counts.dtype)
        pos = np.minimum(np.searchsorted(uniq, key[len(ours):]), len(uniq) - 1)
        return np.where(uniq[pos] == key[len(ours):], sums[pos], 0).astype(self.counts.dtype)


class PopulationModel(PrivacyModel):
    """A model over the classes' people in a population (bound with :meth:`bind`)."""

    needs_population = True
    local_recoding = False
    local_recoding_note = ("it compares each class with the population at the same "
                           "full-domain generalization; use a full-domain algorithm")

    def bind(self, population: Population) -> None:
        """Attach the population (done by ``anonymize`` when it reads the input)."""
        self._population = population

    def population_at(self, levels: Sequence[int], codes: Sequence[np.ndarray]) -> np.ndarray:
        """People of the population in each class (codes at ``levels``)."""
        population = getattr(self, "_population", None)
        if population is None:
            raise BlendinError(f"{self.key}: the population is not known",
                               fix="anonymize the whole population table (bl.anonymize), "
                               "which reads it")
        return population.counts_at(levels, codes)

    def people(self, classes: Classes) -> np.ndarray:
        if classes.population is None:
            raise BlendinError(f"{self.key}: the classes carry no population counts",
                               fix="check the release with the population (population=... "
                               "or --population)")
        return np.asarray(classes.population, dtype=float)


class DeltaPresence(PopulationModel):
    """Every released class holds a share in ``[dmin, dmax]`` of its population (module
    docstring). ``subset`` names the input's 0/1 column of released records. The figure
    is the largest share.

    >>> import numpy as np
    >>> model = DeltaPresence(0.0, 0.5, "released")
    >>> classes = Classes(np.array([1, 3, 2]), {}, {}, population=np.array([10, 4, 4]))
    >>> model.holds(classes).tolist(), model.figure(classes)
    ([True, False, True], 0.75)
    """

    key = "delta-presence"
    figure_name = "largest presence"
    larger_is_better = False
    monotone_with_suppression = False

    def __init__(self, dmin: float, dmax: float, subset: str) -> None:
        self.dmin = dmin
        self.dmax = dmax
        self.subset = subset
        self._check()
        self.dmin, self.dmax = float(dmin), float(dmax)
        # only the upper bound survives generalization (module docstring)
        self.monotone = self.dmin == 0

    def _check(self) -> None:
        _share(self.key, "dmin", self.dmin, "0", zero=True)
        _share(self.key, "dmax", self.dmax, "0.5")
        if self.dmin > self.dmax:
            raise BlendinError(f"{self.key}: dmin ({self.dmin}) is above dmax ({self.dmax})",
                               fix="give dmin <= dmax, e.g. dmin = 0 and dmax = 0.5")
        if not isinstance(self.subset, str) or not self.subset:
            raise BlendinError(f"{self.key}: subset must name the 0/1 column of released "
                               f"records, got {self.subset!r}", fix='e.g. subset = "released"')

    def params(self) -> dict:
        return {"dmin": self.dmin, "dmax": self.dmax, "subset": self.subset}

    def validate(self, n_records: int, domains: Mapping[str, SensitiveDomain]) -> None:
        super().validate(n_records, domains)

    def per_class(self, classes: Classes) -> np.ndarray:
        people = self.people(classes)
        # released records without people: not drawn from this population, never safe
        empty = np.where(np.asarray(classes.sizes) > 0, np.inf, 0.0)
        return np.divide(classes.sizes, people, out=empty, where=people > 0)

    def holds(self, classes: Classes) -> np.ndarray:
        share = self.per_class(classes)
        return at_least(share, self.dmin) & at_most(share, self.dmax)


def subset_mask(distinct: pa.Table, column: str) -> np.ndarray:
    """True for the distinct rows whose ``column`` marks them as released (1), with a clear
    error for any value other than 0 and 1."""
    values = pc.utf8_lower(distinct.column(column))
    known = pa.array(list(SUBSET_VALUES))
    bad = pc.invert(pc.is_in(values, value_set=known))
    if pc.any(bad).as_py():
        wrong = pc.unique(pc.filter(distinct.column(column), bad)).to_pylist()
        raise BlendinError(
            f"delta-presence: the subset column {column!r} holds {preview(wrong)}, not 0/1",
            fix=f"mark each record of {column!r} with 1 (released) or 0 (population only)")
    released = pa.array([k for k, v in SUBSET_VALUES.items() if v])
    return pc.is_in(values, value_set=released).to_numpy(zero_copy_only=False)


def subset_column(models: Sequence[PrivacyModel], columns: Sequence[str]) -> str | None:
    """The one subset column the models name (None without delta-presence), checked."""
    named = list(dict.fromkeys(m.subset for m in models if isinstance(m, DeltaPresence)))
    if not named:
        return None
    if len(named) > 1:
        raise BlendinError(f"delta-presence models name different subsets: {preview(named)}",
                           fix="release one subset: give every delta-presence the same subset")
    if named[0] not in columns:
        raise BlendinError(f"delta-presence: the data has no subset column {named[0]!r}",
                           fix=f"add a 0/1 column {named[0]!r} marking the released records, "
                           f"or name one of {preview(columns, 10)}")
    return named[0]


def bind_population(models: Sequence[PrivacyModel], distinct: pa.Table,
                    hierarchies: Mapping[str, Hierarchy], subset: str) -> pa.Table:
    """Bind the whole input as the population of the models that need one, and return the
    distinct tuples of the released subset (without the subset column)."""
    released = subset_mask(distinct, subset)
    if not released.any():
        raise BlendinError(f"delta-presence: no record has {subset} = 1, so nothing would "
                           "be released", fix=f"mark the released records with {subset} = 1")
    qis = list(hierarchies)
    people = distinct.group_by(qis).aggregate([(COUNT, "sum")]).rename_columns([*qis, COUNT])
    population = Population.from_distinct(people, hierarchies)
    for model in models:
        if isinstance(model, DeltaPresence):
            model.bind(population)
    return distinct.filter(pa.array(released)).drop_columns([subset])


def subset_rows(batches, subset: str):
    """The chunks' rows marked 1 in the subset column."""
    released = pa.array([k for k, v in SUBSET_VALUES.items() if v])
    for batch in batches:
        values = pc.utf8_lower(as_text(batch.column(subset)))
        keep = pc.is_in(values, value_set=released)
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        yield table.filter(keep)


def population_source(path, qis: Sequence[str], *, delimiter: str | None = None,
                      encoding: str | None = None):
    """The population table at ``path`` (a :class:`~blendin.io.Source`), with a clear
    error when it is absent or lacks a quasi-identifier."""
    if not os.path.isfile(path):
        raise BlendinError(f"k-map: the population table {str(path)!r} does not exist",
                           fix="give the path of a CSV or Parquet file of the population "
                           "(relative to the spec's folder)")
    source = Source(path, delimiter=delimiter, encoding=encoding)
    absent = [q for q in qis if q not in source.columns]
    if absent:
        raise BlendinError(
            f"k-map: the population table {str(path)!r} has no column(s) {preview(absent)}",
            fix="give a table with every quasi-identifier's column (its columns: "
            f"{preview(source.columns, 10)})")
    return source


def read_people(path, qis: Sequence[str], *, delimiter: str | None = None,
                encoding: str | None = None, missing: str = "") -> pa.Table:
    """The distinct quasi-identifier tuples of a population table, with counts."""
    source = population_source(path, qis, delimiter=delimiter, encoding=encoding)
    return distinct_tuples(source.batches(list(qis)), list(qis), missing)


def population_tables(spec, qis: Sequence[str]) -> list[tuple[PrivacyModel, pa.Table]]:
    """Each model with a population table (k-map), with that table's distinct tuples."""
    return [(m, read_people(m.path(spec.base_dir), qis, delimiter=spec.delimiter,
                            encoding=spec.encoding, missing=spec.missing))
            for m in spec.models if m.needs_population and hasattr(m, "path")]


def with_people(distinct: pa.Table, tables: Sequence[pa.Table], qis: Sequence[str]
                ) -> pa.Table:
    """The QI columns of ``distinct`` and of the population tables, one below the other
    (hierarchies are built from all the values that must be generalized)."""
    if not tables:
        return distinct
    return pa.concat_tables([t.select(list(qis)) for t in (distinct, *tables)])
