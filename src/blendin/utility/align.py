"""The input's records matched with their releases (see :mod:`blendin.utility`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import as_text, combine_keys
from blendin.errors import BlendinError, preview
from blendin.hierarchy.core import SUPPRESSED, Hierarchy


@dataclass(frozen=True, eq=False)
class Aligned:
    """The input's records beside their releases: per QI the level the release shows and
    each record's code at that level; which records were suppressed."""

    qis: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    levels: tuple[int, ...]
    #: (records, QIs) ground codes of the input, and the codes at the released levels
    ground: np.ndarray
    general: np.ndarray
    suppressed: np.ndarray

    @property
    def records(self) -> int:
        return len(self.suppressed)


def align(original: pa.Table, release: pa.Table, qis: Sequence[str],
          hierarchies: Sequence[Hierarchy], missing: str = "") -> Aligned:
    """Match ``original``'s records with ``release``'s (see the module): the level of each
    QI, each record's released codes, and the suppressed records.

    >>> h = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3", "*"]])
    >>> a = align(pa.table({"x": ["1", "2", "3"]}), pa.table({"x": ["1-2", "1-2"]}),
    ...           ["x"], [h])
    >>> a.levels, a.suppressed.tolist()
    ((1,), [False, False, True])
    """
    ground = np.stack([h.encode(as_text(original.column(q), missing), q)
                       for q, h in zip(qis, hierarchies)], axis=1).astype(np.int64)
    shown = [as_text(release.column(q), missing) for q in qis]
    starred = np.logical_and.reduce([np.asarray(pc.equal(s, SUPPRESSED).to_numpy(
        zero_copy_only=False), bool) for s in shown]) if qis else np.zeros(0, bool)
    levels, released = [], []
    for q, h, labels in zip(qis, hierarchies, shown):
        labels = pc.filter(labels, pa.array(~starred))
        level = _level_of(q, h, pc.unique(labels))
        levels.append(level)
        codes = pc.index_in(labels, value_set=pa.array(h.labels[level].astype(str).tolist()))
        released.append(codes.to_numpy(zero_copy_only=False).astype(np.int64))
    general = np.stack([h.codes[lv][ground[:, i]] for i, (h, lv) in
                        enumerate(zip(hierarchies, levels))], axis=1).astype(np.int64)
    radices = [len(h.labels[lv]) for h, lv in zip(hierarchies, levels)]
    suppressed = _suppressed(general, np.stack(released, axis=1) if released else
                             np.zeros((0, 0), np.int64), radices, int(starred.sum()))
    return Aligned(tuple(qis), tuple(hierarchies), tuple(levels), ground, general,
                   suppressed)


def _level_of(name: str, hierarchy: Hierarchy, labels: pa.Array) -> int:
    """The lowest level whose labels hold every released label of the column."""
    shown = {str(v) for v in labels.to_pylist()}
    if not shown:  # every record shows *: the top
        return hierarchy.height - 1
    for level in range(hierarchy.height):
        if shown <= {str(v) for v in hierarchy.labels[level]}:
            return level
    odd = sorted(shown - {str(v) for v in hierarchy.labels[0]})
    if odd == [SUPPRESSED] and any(shown - {SUPPRESSED} <= {str(v) for v in labels}
                                   for labels in hierarchy.labels):
        raise BlendinError(
            f"the release's column {name!r} shows * in some records and labels of a lower "
            "level in others: single cells were blanked (suppression = \"cells\"), which "
            "utility does not measure yet (it matches records suppressed whole)",
            fix="measure such a release's risk with blendin risk or blendin check; utility "
                "compares a release whose records are suppressed whole with its input")
    raise BlendinError(
        f"the release's column {name!r} shows labels no single level of its hierarchy has "
        f"({preview(odd)}): utility compares a full-domain release with its input",
        fix="give the input the release was made from and its spec (a Mondrian release, "
            "which recodes each group on its own, cannot be matched record by record)")


def _suppressed(general: np.ndarray, released: np.ndarray, radices: Sequence[int],
                starred: int) -> np.ndarray:
    """Which input records were suppressed: those of the classes the release lacks,
    checked against the release's own counts (a class is released whole or not at all)."""
    key = combine_keys([general[:, i] for i in range(general.shape[1])], list(radices))
    shown = combine_keys([released[:, i] for i in range(released.shape[1])], list(radices))
    classes, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    kept = np.zeros(len(classes), np.int64)
    found = np.searchsorted(classes, shown)
    inside = (found < len(classes))
    inside[inside] = classes[found[inside]] == shown[inside]
    np.add.at(kept, found[inside], 1)
    whole = (kept == 0) | (kept == counts)
    gone = int(counts[kept == 0].sum())
    if not inside.all() or not whole.all() or (starred and starred != gone):
        raise BlendinError(
            "the release does not come from this input record by record (a class holds "
            "other counts than the input's at the released levels)",
            fix="give the input the release was made from, with its spec")
    return (kept == 0)[inverse.reshape(-1)]
