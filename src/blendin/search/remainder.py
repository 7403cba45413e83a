"""Recoding the suppressed records: release them at a coarser node of their own.

A full-domain release suppresses the records of the classes that violate a model at its
node. Among themselves those records often form valid classes at a coarser node (ARX's
local recoding does the same): the remainder is searched as a table of its own (any node
is acceptable there, the metric weighing what stays suppressed), and the classes that meet
the models are released at that node. Rounds repeat on what is still suppressed.

The release is then one table with parts at different nodes, and the checker groups it by
the labels alone: a recovered class can share its labels with a class of an earlier part
(the same interval at two levels, say) and merge with it. Every model is therefore tested
again on the classes of the union, as the checker will see them; a recovered class that
breaks a merged class stays suppressed (the earlier class alone was valid), and a model of
the whole table (population uniques, average risk) is tested on the union too. t-closeness
keeps the distribution of the whole table as its reference. Records whose labels are all
``*`` count as suppressed, as the checker counts them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from blendin.codes import combine_keys
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import SUPPRESSED, first_seen
from blendin.metrics import CellCosts, class_metrics, normalized_weights
from blendin.models import PrivacyModel
from blendin.search import find

#: rounds of recoding at most (each on what the previous left suppressed)
MAX_ROUNDS = 3


@dataclass(frozen=True, eq=False)
class Part:
    """Tuples of the frequency table released at one node: ``tuples`` marks them."""

    levels: tuple[int, ...]
    tuples: np.ndarray

    def records(self, ft: FrequencyTable) -> int:
        return int(ft.counts[self.tuples].sum())


def recode_remainder(
    ft: FrequencyTable,
    main: Part,
    models: Sequence[PrivacyModel],
    *,
    metric: str = "loss",
    weights: Mapping[str, float] | None = None,
    time_limit: float | None = 1.0,
    max_checks: int | None = None,
    seed: int = 0,
) -> list[Part]:
    """The parts that release some of the records the part ``main`` leaves out (in
    order; empty when none can be). Each part's tuples meet every model, together with
    all earlier parts as the checker groups them.

    >>> import pandas as pd
    >>> from blendin.hierarchy.core import Hierarchy
    >>> from blendin.models import KAnonymity
    >>> h = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"],
    ...                          ["4", "3-4", "*"]])
    >>> ft = FrequencyTable.from_table(pd.DataFrame({"a": [1, 1, 2, 2, 3, 4]}), {"a": h})
    >>> parts = recode_remainder(ft, Part((0,), ft.counts >= 2), [KAnonymity(2)])
    >>> [(p.levels, p.records(ft)) for p in parts]
    [((1,), 2)]
    """
    parts: list[Part] = []
    released = main.tuples.copy()
    labels = _Labels(ft)
    monotone = all(getattr(m, "monotone_with_suppression", False) for m in models)
    for _ in range(MAX_ROUNDS):
        left = ~released
        if not left.any():
            break
        sub = ft.subset(left)
        try:
            # every node is acceptable here (what fails stays suppressed): the exact
            # search prunes with the records settled as suppressed where the models are
            # monotone with suppression, and cannot prune much otherwise, where the
            # anytime heuristic runs within the budget
            found = find(sub, models, max_suppression=1.0, metric=metric, weights=weights,
                         algorithm="auto" if monotone else "heuristic", time_limit=time_limit,
                         max_checks=max_checks, seed=seed)
        except BlendinError:
            break  # e.g. fewer records than k: nothing to release
        finally:
            # the search took the remainder's size as the table's (k-map's class size,
            # population uniques' sampling fraction follow it): the classes released are
            # tested against the whole table's, as the checker tests them
            for model in models:
                model.validate(ft.n_records, ft.domains)
        levels = tuple(int(v) for v in found.levels)
        ok = _valid_classes(sub, levels, models)
        candidate = np.zeros(len(ft.counts), bool)
        candidate[np.flatnonzero(left)[ok]] = True
        candidate &= ~labels.all_suppressed(levels)
        candidate = labels.joining(ft, [main, *parts], Part(levels, candidate), models)
        if not candidate.any():
            break
        parts.append(Part(levels, candidate))
        released |= candidate
    return parts


def _valid_classes(ft: FrequencyTable, levels: Sequence[int],
                   models: Sequence[PrivacyModel]) -> np.ndarray:
    """Bool per tuple: its class at ``levels`` meets every model."""
    classes, class_of = ft.classes_at(levels)
    ok = np.ones(len(classes), bool)
    for model in models:
        ok &= np.asarray(model.holds(classes), bool)
    return ok[class_of]


class _Labels:
    """Each QI's labels at every level as one set of ids, so that equal text is equal."""

    def __init__(self, ft: FrequencyTable) -> None:
        self.ids: list[list[np.ndarray]] = []
        self.star: list[int] = []
        for h in ft.hierarchies:
            texts = np.array([str(v) for level in h.labels for v in level] + [SUPPRESSED],
                             dtype=object)
            uniq, inverse = np.unique(texts, return_inverse=True)
            inverse = inverse.reshape(-1)
            cuts = np.cumsum([0] + [len(level) for level in h.labels])
            self.ids.append([inverse[a:b] for a, b in zip(cuts[:-1], cuts[1:])])
            self.star.append(int(inverse[-1]))
        self.radices = [max(int(ids.max()) + 1 for ids in qi) if qi else 1 for qi in self.ids]
        self.ft = ft

    def of(self, levels: Sequence[int], tuples: np.ndarray) -> np.ndarray:
        """(tuples, QIs) label ids of ``tuples`` (indices) released at ``levels``."""
        ft = self.ft
        cols = [self.ids[i][lv][h.codes[lv][ft.tuples[tuples, i]]]
                for i, (h, lv) in enumerate(zip(ft.hierarchies, levels))]
        return np.stack(cols, axis=1) if cols else np.zeros((len(tuples), 0), np.int64)

    def all_suppressed(self, levels: Sequence[int]) -> np.ndarray:
        """Bool per tuple: every label is ``*`` at ``levels`` (the checker's suppressed)."""
        ids = self.of(levels, np.arange(len(self.ft.counts)))
        return (ids == np.array(self.star)).all(axis=1)

    def union_classes(self, parts: Sequence[Part]) -> tuple[np.ndarray, np.ndarray, int]:
        """Tuples released by ``parts`` (indices), each one's class in their union, and the
        number of classes."""
        index = [np.flatnonzero(p.tuples) for p in parts]
        ids = np.concatenate([self.of(p.levels, ix) for p, ix in zip(parts, index)])
        key = combine_keys(ids, self.radices)
        _, class_of = np.unique(key, return_inverse=True)
        class_of = class_of.reshape(-1)
        return np.concatenate(index), class_of, int(class_of.max()) + 1 if len(class_of) else 0

    def joining(self, ft: FrequencyTable, earlier: Sequence[Part], new: Part,
                models: Sequence[PrivacyModel]) -> np.ndarray:
        """Bool per tuple: those of ``new`` that join the release, so that every class of
        the union meets every model. A tuple in a failing union class stays suppressed,
        and the rest is tested again: a model of the whole table (population uniques,
        average risk) may still fail. Where only earlier classes fail, none of ``new``
        joins (the earlier parts alone met the models)."""
        tuples = new.tuples
        while tuples.any():
            index, class_of, n = self.union_classes([*earlier, Part(new.levels, tuples)])
            classes = ft.classes_of(index, class_of, n)
            ok = np.ones(n, bool)
            for model in models:
                ok &= np.asarray(model.holds(classes), bool)
            if ok.all():
                break
            failing = np.zeros(len(ft.counts), bool)
            failing[index[~ok[class_of]]] = True
            failing &= tuples
            tuples = tuples & ~failing if failing.any() else np.zeros_like(tuples)
        return tuples




def parts_utility(ft: FrequencyTable, parts: Sequence[Part],
                  weights: Mapping[str, float] | None = None) -> tuple[dict[str, float],
                                                                       np.ndarray]:
    """Every metric of a release made of ``parts`` (classes as the checker groups them:
    by their labels), and the released classes' sizes. ``height`` is left out: the parts
    sit at different heights.

    >>> import pandas as pd
    >>> from blendin.hierarchy.core import Hierarchy
    >>> h = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
    >>> ft = FrequencyTable.from_table(pd.DataFrame({"x": ["1", "2", "3", "3"]}), {"x": h})
    >>> m, sizes = parts_utility(ft, [Part((1,), np.array([True, True, False]))])
    >>> m["loss"], sizes.tolist()
    (0.75, [2])
    """
    labels = _Labels(ft)
    costs = CellCosts.of(ft)
    w = normalized_weights(ft.qi_names, weights)
    tuples, class_of, n = labels.union_classes(parts)
    part_of = np.concatenate([np.full(int(p.tuples.sum()), j) for j, p in enumerate(parts)])
    sizes = np.bincount(class_of, weights=ft.counts[tuples], minlength=n)
    first = first_seen(class_of, n)
    cells = {name: np.zeros((n, ft.tuples.shape[1])) for name in ("loss", "ncp", "share",
                                                                   "log_mass", "arx_share")}
    for j, part in enumerate(parts):
        mine = np.flatnonzero(part_of[first] == j)
        if not len(mine):
            continue
        codes = ft.generalized(part.levels)[tuples[first[mine]]]
        for name, values in costs.cells(part.levels, codes).items():
            cells[name][mine] = values
    n_sup = ft.n_records - int(sizes.sum())
    metrics = class_metrics(sizes, n_records=ft.n_records, n_suppressed=n_sup,
                            loss=cells["loss"], ncp=cells["ncp"], share=cells["share"],
                            log_mass=cells["log_mass"], ground_bits=costs.ground_bits,
                            weights=w, arx_share=cells["arx_share"],
                            domain_sizes=costs.domain_sizes)
    return metrics, sizes.astype(np.int64)
