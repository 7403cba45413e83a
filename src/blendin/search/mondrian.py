"""Mondrian: multidimensional partitioning with local recoding.

Full-domain generalization recodes a whole column at one level, so a single outlier can force
a column to ``*``. Mondrian (LeFevre, DeWitt, Ramakrishnan, ICDE 2006) cuts the records into
groups instead, top-down, and each group shows only the smallest cover of its own values.

Entry points (what ``bl.anonymize(..., algorithm="mondrian")`` calls):

- :func:`mondrian` ``(ft, models, *, relaxed=False, sets=False, max_suppression=0.0) ->
  Partitioning``: the partitioning of the frequency table's tuples into groups that each
  satisfy every privacy model (``sets`` is only recorded: the label form of categories).
- :func:`group_labels` ``(ft, partitioning, *, sets=None)``: each group's released value per
  quasi-identifier: a numeric range ``37-42`` (``[lo, hi]`` for negative or fractional ends),
  a date range ``2017-01-05..2017-03-02``, the lowest common ancestor in a category's
  hierarchy (or, with ``sets=True``, the set ``{a,b}``); one value shows as itself.
- :func:`settle_starred` ``(ft, partitioning, models, *, missing="")``: the
  partitioning as a release can show it: groups whose every label is ``*`` read as
  suppressed records, so where that reading breaks a model they are suppressed.
- :func:`mondrian_utility` ``(ft, partitioning, *, sets=None) -> dict``: loss, gcp (mean
  NCP, Xu et al., KDD 2006), precision, entropy, discernibility, aecs as
  :mod:`blendin.metrics` defines them, and the number of groups.

The algorithm works on the weighted distinct tuples, never on rows (releasing the rows is
the engines' work: :class:`blendin.engines.kernels.MondrianRecoder`), and all partitions of one
depth are cut at once: per-partition statistics are segment reductions over tuples sorted by
partition. Strict Mondrian cuts a numeric attribute at the weighted median (values equal to the
median all go to one side); relaxed Mondrian lets tuples equal to the median go to either side so
the halves balance (a distinct tuple is never divided). A category is cut into the children,
in its hierarchy, of the lowest common ancestor of its values; children that fail the models
on their own are pooled into one part (which shows their common ancestor), and a pool that
still fails takes in the smallest child that holds. A cut is taken only if every part
satisfies every model; otherwise the next widest attribute is tried.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from blendin.codes import sorted_groups
from blendin.errors import BlendinError
from blendin.frequency import (
    Classes,
    FrequencyTable,
    SensitiveDomain,
    class_slices,
    in_slices,
)
from blendin.hierarchy.core import SUPPRESSED, Hierarchy
from blendin.lattice import suppression_limit
from blendin.metrics import categorical_loss, class_metrics
from blendin.models import PrivacyModel

__all__ = [
    "Partitioning",
    "group_labels",
    "mondrian",
    "mondrian_utility",
    "settle_starred",
]


@dataclass(frozen=True, eq=False)
class Partitioning:
    """Groups of the frequency table's tuples.

    ``group_of_tuple[i]`` is tuple i's group (0 .. n_groups-1, numbered in the order of their
    first tuple), or -1 when the tuple's records are suppressed. ``depth`` is the number of
    rounds of cuts, ``cuts`` the number of partitions that were cut. ``sets`` is the label
    form of categories that :func:`group_labels`, :func:`mondrian_release` and
    :func:`mondrian_utility` use unless told otherwise.
    """

    group_of_tuple: np.ndarray
    n_groups: int
    relaxed: bool = False
    depth: int = 0
    cuts: int = 0
    #: categories show as sets ``{a,b}`` rather than their lowest common ancestor
    sets: bool = False

    def sizes(self, ft: FrequencyTable) -> np.ndarray:
        """Records per group (int64)."""
        kept = self.group_of_tuple >= 0
        return np.bincount(self.group_of_tuple[kept], weights=ft.counts[kept],
                           minlength=self.n_groups).astype(np.int64)

    def suppressed(self, ft: FrequencyTable) -> int:
        """Number of suppressed records."""
        return int(ft.counts[self.group_of_tuple < 0].sum())

    def classes(self, ft: FrequencyTable) -> Classes:
        """The groups as equivalence classes (sizes, sensitive histograms)."""
        kept = np.flatnonzero(self.group_of_tuple >= 0)
        return ft.classes_of(kept, self.group_of_tuple[kept], self.n_groups)


# --------------------------------------------------------------------------------------------
# attributes: ordered (numbers, dates) or trees (categories)


@dataclass(frozen=True, eq=False)
class _Ordered:
    """A numeric or date attribute: tuples carry the rank of their number."""

    rank: np.ndarray  # rank of every ground value among the distinct numbers (NaN last)
    values: np.ndarray  # the distinct numbers, ascending, NaN last
    span: float  # range of the numbers present in the data (1 when there is one)
    kind: str

    def width(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Normalized width of [lo, hi] rank ranges; 1 where a range mixes NaN and numbers."""
        a, b = self.values[lo], self.values[hi]
        width = (b - a) / self.span
        return np.where(np.isnan(b) & ~np.isnan(a), 1.0, np.nan_to_num(width))


@dataclass(frozen=True, eq=False)
class _Tree:
    """A categorical attribute: cuts follow the hierarchy."""

    codes: np.ndarray  # hierarchy codes (levels, ground values)
    leaves: tuple[np.ndarray, ...]  # ground values under each node, per level
    n_leaves: int


def _attribute(h: Hierarchy) -> _Ordered | _Tree:
    if h.kind in ("numeric", "date") and h.numbers is not None:
        numbers = np.asarray(h.numbers, dtype=float)
        values, rank = np.unique(numbers, return_inverse=True)  # NaN sorts last
        # the hierarchy's range, as the full-domain metrics use it
        finite = numbers[~np.isnan(numbers)]
        span = float(finite.max() - finite.min()) if finite.size else 0.0
        return _Ordered(rank.reshape(-1).astype(np.int64), values, span or 1.0, h.kind)
    leaves = tuple(np.bincount(c, minlength=len(lab)) for c, lab in zip(h.codes, h.labels))
    return _Tree(h.codes, leaves, h.codes.shape[1])


# --------------------------------------------------------------------------------------------
# the algorithm


def mondrian(
    ft: FrequencyTable,
    models: Sequence[PrivacyModel],
    *,
    relaxed: bool = False,
    sets: bool = False,
    max_suppression: float = 0.0,
) -> Partitioning:
    """Partition the tuples top-down so that every group satisfies every model.

    Each round cuts every open partition along its attribute of largest normalized width
    (numbers: range / whole-table range; categories: leaves under the lowest common ancestor
    / all leaves), falling back to narrower attributes when a cut would break a model; a
    partition that no attribute can cut becomes a group. With ``max_suppression`` > 0, a
    partition that cannot be cut cleanly may, as a last resort, drop the records of the parts
    that fail, while the total stays within that share of the records.

    >>> import pandas as pd
    >>> from blendin.models import KAnonymity
    >>> age = Hierarchy.from_rows([[str(a), "*"] for a in range(20, 30)], kind="numeric",
    ...                           numbers=np.arange(20, 30))
    >>> df = pd.DataFrame({"age": ["20", "21", "22", "23", "27", "28"]})
    >>> ft = FrequencyTable.from_table(df, {"age": age})
    >>> p = mondrian(ft, [KAnonymity(3)])
    >>> p.n_groups, group_labels(ft, p)[0].tolist()
    (2, ['20-22', '23-28'])
    """
    models = list(models)
    if not models:
        raise BlendinError("mondrian needs at least one privacy model",
                           fix="add a model, e.g. k-anonymity with k = 5")
    if not 0.0 <= max_suppression <= 1.0:
        raise BlendinError(f"max_suppression must be between 0 and 1, got {max_suppression!r}",
                           fix="give a share of the records, e.g. 0.02")
    for model in models:
        model.validate(ft.n_records, ft.domains)
        if not model.local_recoding:
            raise BlendinError(
                f"mondrian cannot enforce {model.key}: {model.local_recoding_note}",
                fix='use a full-domain algorithm (algorithm = "optimal", --algorithm optimal)')
    n = len(ft.counts)
    everything = ft.classes_of(np.arange(n), np.zeros(n, np.int64), 1)
    failing = [m for m in models if not m.holds(everything).all()]
    if failing:
        raise BlendinError(
            f"the whole table ({ft.n_records} records in one group) does not satisfy "
            f"{failing[0]!r}, so no grouping of it can",
            fix="relax that model (smaller k, l or larger t)",
        )
    state = _State(ft, models, relaxed, suppression_limit(max_suppression, ft.n_records))
    while state.open.size:
        state.round()
    return replace(state.result(), sets=bool(sets))


class _State:
    """The partitions during the top-down cut."""

    def __init__(self, ft: FrequencyTable, models: list[PrivacyModel], relaxed: bool,
                 budget: int) -> None:
        self.ft, self.models, self.relaxed, self.budget = ft, models, relaxed, budget
        # histograms are summed only for the attributes some model reads
        self.sensitive = {m.attribute for m in models if m.attribute is not None}
        self.attrs = [_attribute(h) for h in ft.hierarchies]
        self.is_tree = np.array([isinstance(a, _Tree) for a in self.attrs], bool)
        # per attribute, each tuple's value used for cuts: rank (ordered) or ground code
        # (tree); one contiguous array per attribute keeps the gathers cache-friendly
        self.columns = [
            (a.rank[ft.tuples[:, i]] if isinstance(a, _Ordered) else ft.tuples[:, i])
            .astype(np.int64) for i, a in enumerate(self.attrs)]
        self.part = np.zeros(len(ft.counts), np.int64)  # partition id per tuple, -1 dropped
        self.open = np.array([0], np.int64)
        self.next_id = 1
        self.depth = self.cuts = 0

    def round(self) -> None:
        """Try to cut every open partition once; the parts are the next round's."""
        lookup = np.full(self.next_id, -1, np.int64)
        lookup[self.open] = np.arange(len(self.open))
        members = np.flatnonzero(self.part >= 0)
        local = lookup[self.part[members]]
        members, local = members[local >= 0], local[local >= 0]
        order = np.argsort(local, kind="stable")
        members, local = members[order], local[order]
        stats = _Stats(self, members, local, len(self.open))
        opened = self._cut(stats, members, local, allow_drop=False)
        if self.budget > 0:
            opened.extend(self._cut(stats, members, local, allow_drop=True))
        self.open = np.concatenate(opened) if opened else np.zeros(0, np.int64)
        self.depth += 1

    def _cut(self, stats: _Stats, members: np.ndarray, local: np.ndarray,
             allow_drop: bool) -> list[np.ndarray]:
        """Attempt the attributes widest first; returns the ids of the new partitions."""
        opened = []
        pending = ~stats.done
        for attempt in range(stats.order.shape[1]):
            dim = stats.order[:, attempt]
            pending &= stats.splittable[np.arange(len(dim)), dim]
            if not pending.any():
                break
            sel = pending[local]
            t, p = members[sel], local[sel]
            side = np.zeros(len(t), np.int64)
            for d in np.unique(dim[pending]):
                on = dim[p] == d
                side[on] = self._sides(d, t[on], p[on], stats)
            poolable = self.is_tree[dim[p]]
            accepted, new_ids = self._evaluate(t, p, side, len(dim), allow_drop, poolable)
            if accepted.any():
                stats.done |= accepted
                pending &= ~accepted
                self.cuts += int(accepted.sum())
                opened.append(new_ids)
        return opened

    def _sides(self, d: int, t: np.ndarray, p: np.ndarray, stats: _Stats) -> np.ndarray:
        """Which part each tuple goes to when its partition is cut along attribute d."""
        attr, v, c = self.attrs[d], self.columns[d][t], self.ft.counts[t]
        if isinstance(attr, _Tree):
            level = stats.lca[p, d] - 1
            return attr.codes[level, v].astype(np.int64)
        # p is sorted and t ascending within each partition, so a stable sort on (p, v) keeps
        # tuple order among ties (and is far faster than lexsort)
        order = np.argsort(p * (int(v.max()) + 1) + v, kind="stable")
        ps, vs, cs = p[order], v[order], c[order]
        n_parts = len(stats.size)
        half = stats.size / 2
        # records before each tuple within its partition (partitions are contiguous in ps)
        total = np.bincount(ps, weights=cs, minlength=n_parts)
        before = np.cumsum(cs) - cs - (np.cumsum(total) - total)[ps]
        if self.relaxed:  # cut between tuples: each goes where its middle record falls
            side = np.empty(len(order), np.int64)
            side[order] = before + cs / 2 >= half[ps]
            return side
        # strict: the weighted median value, then all tuples with it go to the side that
        # balances the parts better (both parts must be non-empty)
        median = np.full(n_parts, np.iinfo(np.int64).max)
        reached = before + cs >= half[ps]
        np.minimum.at(median, ps[reached], vs[reached])
        m = median[p]
        w_le = np.bincount(p, weights=c * (v <= m), minlength=n_parts)
        w_lt = np.bincount(p, weights=c * (v < m), minlength=n_parts)
        le_ok = median < stats.hi[:, d]
        use_le = le_ok & ((w_lt == 0) | (np.abs(w_le - half) <= np.abs(w_lt - half)))
        return np.where(use_le[p], v > m, v >= m).astype(np.int64)

    def _evaluate(self, t: np.ndarray, p: np.ndarray, side: np.ndarray, n_parts: int,
                  allow_drop: bool, poolable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Accept the cuts whose parts all satisfy the models; give the parts new ids.

        In a cut along a category's children, the children that fail on their own are pooled
        into one part (shown as their common ancestor); a pool that still fails takes in the
        smallest child that holds.
        """
        sub, parent, sub_side, ok, sizes = self._parts(t, p, side)
        if poolable.any() and not ok.all():
            pool = int(side.max()) + 1
            side = np.where(poolable & ~ok[sub], pool, side)
            sub, parent, sub_side, ok, sizes = self._parts(t, p, side)
            weak = (sub_side == pool) & ~ok
            if weak.any():
                side = np.where(poolable & _smallest_holding(parent, ok, sizes, weak)[sub],
                                pool, side)
                sub, parent, sub_side, ok, sizes = self._parts(t, p, side)
        bad = np.bincount(parent, weights=~ok, minlength=n_parts) > 0
        if not allow_drop:
            accepted = ~bad & (np.bincount(parent, minlength=n_parts) > 1)
            keep_sub = accepted[parent]
        else:
            accepted = self._drops(parent, ok, sizes, bad, n_parts)
            keep_sub = accepted[parent] & ok
            dropped = accepted[parent[sub]] & ~ok[sub]
            self.part[t[dropped]] = -1
        new_ids = self.next_id + np.cumsum(keep_sub) - 1
        self.part[t[keep_sub[sub]]] = new_ids[sub[keep_sub[sub]]]
        self.next_id += int(keep_sub.sum())
        return accepted, new_ids[keep_sub]

    def _parts(self, t: np.ndarray, p: np.ndarray, side: np.ndarray):
        """Part of every tuple, each part's partition and side, whether it holds, its size."""
        radix = int(side.max()) + 1
        uniq, sub = sorted_groups(p * radix + side)  # (keys in sorted runs, by partition)
        n = len(uniq)
        names = self.ft.cells if self.sensitive is None else self.sensitive
        widest = max((len(self.ft.domains[name].labels) for name in names), default=1)
        sizes = np.bincount(sub, weights=self.ft.counts[t], minlength=n).astype(np.int64)
        ok = np.ones(n, bool)
        parts = class_slices(n, widest)  # (many parts by many sensitive values)
        for part, inside in zip(parts, in_slices(sub, parts)):
            classes = self.ft.classes_of(t[inside], sub[inside] - part.start,
                                         part.stop - part.start, self.sensitive)
            for model in self.models:
                ok[part] &= model.holds(classes)
        return sub, uniq // radix, uniq % radix, ok, sizes

    def _drops(self, parent: np.ndarray, ok: np.ndarray, sizes: np.ndarray, bad: np.ndarray,
               n_parts: int) -> np.ndarray:
        """Cuts that keep at least one part and drop failing parts within the budget."""
        kept = np.bincount(parent, weights=ok, minlength=n_parts) > 0
        cost = np.bincount(parent, weights=sizes * ~ok, minlength=n_parts).astype(np.int64)
        candidates = np.flatnonzero(bad & kept)
        candidates = candidates[np.argsort(cost[candidates], kind="stable")]
        affordable = candidates[np.cumsum(cost[candidates]) <= self.budget]
        self.budget -= int(cost[affordable].sum())
        accepted = np.zeros(n_parts, bool)
        accepted[affordable] = True
        return accepted

    def result(self) -> Partitioning:
        kept = self.part >= 0
        uniq, first = np.unique(self.part[kept], return_index=True)
        rank = np.empty(len(uniq), np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
        group = np.full(len(self.part), -1, np.int64)
        group[kept] = rank[np.searchsorted(uniq, self.part[kept])]
        return Partitioning(group, len(uniq), self.relaxed, self.depth, self.cuts)


class _Stats:
    """Per open partition: size, top rank (ordered attributes), lowest common ancestor (trees),
    which attributes can be cut and in which order (widest first)."""

    def __init__(self, state: _State, members: np.ndarray, local: np.ndarray,
                 n_parts: int) -> None:
        starts = np.searchsorted(local, np.arange(n_parts))
        q = len(state.attrs)
        self.size = np.bincount(local, weights=state.ft.counts[members], minlength=n_parts)
        self.hi = np.zeros((n_parts, q), np.int64)
        self.lca = np.zeros((n_parts, q), np.int64)
        width = np.zeros((n_parts, q))
        splittable = np.zeros((n_parts, q), bool)
        for d, attr in enumerate(state.attrs):
            values = state.columns[d][members]
            if isinstance(attr, _Ordered):
                lo = np.minimum.reduceat(values, starts)
                self.hi[:, d] = np.maximum.reduceat(values, starts)
                width[:, d] = attr.width(lo, self.hi[:, d])
                splittable[:, d] = lo < self.hi[:, d]
            else:
                lca, node = _lca(attr.codes, values, starts)
                self.lca[:, d] = lca
                top = lca >= attr.codes.shape[0]
                leaves = np.ones(n_parts)
                for level in np.unique(lca[~top]):
                    at = lca == level
                    leaves[at] = attr.leaves[level][node[at]]
                width[:, d] = np.where(top, 1.0, leaves / attr.n_leaves)
                splittable[:, d] = lca > 0
        width[~splittable] = -1.0
        # widest first; ties go to the attribute listed first
        self.order = np.argsort(-width, axis=1, kind="stable")
        self.splittable = splittable
        self.done = ~splittable.any(axis=1) if q else np.ones(n_parts, bool)


def _smallest_holding(parent: np.ndarray, ok: np.ndarray, sizes: np.ndarray,
                      weak: np.ndarray) -> np.ndarray:
    """Per part: is it the smallest part that holds in a partition that has a weak pool?"""
    needy = np.zeros(int(parent.max()) + 1, bool)
    needy[parent[weak]] = True
    candidates = np.flatnonzero(ok & needy[parent])
    candidates = candidates[np.lexsort((candidates, sizes[candidates], parent[candidates]))]
    first = np.ones(len(candidates), bool)
    first[1:] = parent[candidates][1:] != parent[candidates][:-1]
    chosen = np.zeros(len(ok), bool)
    chosen[candidates[first]] = True
    return chosen


def _lca(codes: np.ndarray, ground: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray,
                                                                              np.ndarray]:
    """Per segment: level of the lowest common ancestor (height if none) and its code."""
    height = codes.shape[0]
    lca = np.full(len(starts), height, np.int64)
    node = np.zeros(len(starts), np.int64)
    for level in range(height - 1, -1, -1):
        c = codes[level, ground]
        lo = np.minimum.reduceat(c, starts)
        same = lo == np.maximum.reduceat(c, starts)
        lca[same] = level
        node[same] = lo[same]
    return lca, node


# --------------------------------------------------------------------------------------------
# what each group shows


@dataclass(frozen=True, eq=False)
class _Covers:
    """Per group and attribute: rank bounds (ordered attributes), the lowest common ancestor
    in the hierarchy (every attribute) and the number of distinct ground values."""

    lo: np.ndarray
    hi: np.ndarray
    lca: np.ndarray
    node: np.ndarray
    distinct: np.ndarray
    kept: np.ndarray  # tuples not suppressed, sorted by group
    starts: np.ndarray  # first position of each group in ``kept``


def _covers(ft: FrequencyTable, p: Partitioning) -> tuple[list, _Covers]:
    attrs = [_attribute(h) for h in ft.hierarchies]
    kept = np.flatnonzero(p.group_of_tuple >= 0)
    kept = kept[np.argsort(p.group_of_tuple[kept], kind="stable")]
    group = p.group_of_tuple[kept]
    starts = np.searchsorted(group, np.arange(p.n_groups))
    shape = (p.n_groups, len(attrs))
    lo, hi, lca, node, distinct = (np.zeros(shape, np.int64) for _ in range(5))
    for d, (attr, h) in enumerate(zip(attrs, ft.hierarchies)):
        if p.n_groups == 0:
            break
        ground = ft.tuples[kept, d].astype(np.int64)
        distinct[:, d] = _count_distinct(group, ground, p.n_groups)
        lca[:, d], node[:, d] = _lca(h.codes, ground, starts)
        if isinstance(attr, _Ordered):
            r = attr.rank[ground]
            lo[:, d] = np.minimum.reduceat(r, starts)
            hi[:, d] = np.maximum.reduceat(r, starts)
    return attrs, _Covers(lo, hi, lca, node, distinct, kept, starts)


def _count_distinct(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    pairs = np.unique(group * (int(values.max()) + 1) + values)
    return np.bincount(pairs // (int(values.max()) + 1), minlength=n)


def group_labels(ft: FrequencyTable, p: Partitioning, *,
                 sets: bool | None = None) -> list[np.ndarray]:
    """Released value of every group, per quasi-identifier (object arrays of text).

    A group with one value shows it as it is; several numbers show as ``lo-hi`` (``[lo, hi]``
    when an end is negative or fractional), dates as ``first..last``, categories as their
    lowest common ancestor in the hierarchy, or with ``sets=True`` as ``{a,b}`` (sorted).
    A group mixing missing and present numbers shows ``*``. ``sets=None`` follows
    ``p.sets``.
    """
    sets = p.sets if sets is None else sets
    attrs, cov = _covers(ft, p)
    kept = cov.kept
    out = []
    for d, (attr, h) in enumerate(zip(attrs, ft.hierarchies)):
        single = cov.distinct[:, d] == 1
        first = ft.tuples[kept[cov.starts], d] if p.n_groups else np.zeros(0, np.int64)
        labels = np.asarray(h.ground, dtype=object)[first].copy()
        many = ~single
        if isinstance(attr, _Ordered):
            labels[many] = _ranges(attr, cov.lo[many, d], cov.hi[many, d])
        elif sets:
            labels[many] = _sets(ft, p, kept, d, many)
        else:
            level, node = cov.lca[many, d], cov.node[many, d]
            top = level >= h.height
            lab = np.full(int(many.sum()), SUPPRESSED, dtype=object)
            for lv in np.unique(level[~top]):
                at = level == lv
                lab[at] = h.labels[lv][node[at]]
            labels[many] = lab
        out.append(labels)
    return out


def _number_text(x: np.ndarray, kind: str) -> np.ndarray:
    if kind == "date":
        return np.datetime_as_string(x.astype(np.int64).astype("datetime64[D]")).astype(object)
    return np.array([np.format_float_positional(v, trim="-") for v in x], dtype=object)


def _ranges(attr: _Ordered, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    a, b = attr.values[lo], attr.values[hi]
    out = np.full(len(a), SUPPRESSED, dtype=object)
    ok = ~np.isnan(a) & ~np.isnan(b)
    if not ok.any():
        return out
    # format each distinct number once, then pick (few distinct numbers, many groups)
    text = np.full(len(attr.values), "", dtype=object)
    finite = ~np.isnan(attr.values)
    text[finite] = _number_text(attr.values[finite], attr.kind)
    ta, tb = text[lo[ok]], text[hi[ok]]
    if attr.kind == "date":
        out[ok] = ta + ".." + tb
        return out
    plain = (a[ok] >= 0) & (a[ok] == np.floor(a[ok])) & (b[ok] == np.floor(b[ok]))
    out[ok] = np.where(plain, ta + "-" + tb, "[" + ta + ", " + tb + "]")
    return out


def _sets(ft: FrequencyTable, p: Partitioning, kept: np.ndarray, d: int,
          many: np.ndarray) -> np.ndarray:
    ground = np.asarray(ft.hierarchies[d].ground, dtype=object).astype(str)
    text_rank = np.empty(len(ground), np.int64)
    text_rank[np.argsort(ground, kind="stable")] = np.arange(len(ground))
    group = p.group_of_tuple[kept]
    radix = len(ground)
    pairs = np.unique(group * radix + text_rank[ft.tuples[kept, d]])
    by_rank = np.sort(ground)
    members = by_rank[pairs % radix]
    bounds = np.searchsorted(pairs // radix, np.arange(p.n_groups + 1))
    wanted = np.flatnonzero(many)
    return np.array(["{" + ",".join(members[bounds[i]:bounds[i + 1]]) + "}" for i in wanted],
                    dtype=object)


def settle_starred(ft: FrequencyTable, p: Partitioning, models: Sequence[PrivacyModel], *,
                   missing: str = "") -> Partitioning:
    """``p`` with its groups whose every label is ``*`` suppressed, where a release would
    otherwise break a model on a sensitive attribute.

    Nothing in a release tells such a group from suppressed records: its rows and the
    suppressed records (their sensitive values empty, that is ``missing``) form one group
    anyone can read, which the checker holds to every sensitive model (docs/spec.md; a
    release is checked with its suppressed records, whether it keeps or drops them). Where
    that group fails (or a hierarchy of its values lacks the empty value), the starred
    groups are suppressed too and show no values; the records suppressed may then pass
    ``max_suppression``, as those rows showed ``*`` already.

    >>> import pandas as pd
    >>> from blendin.models import DistinctLDiversity
    >>> sex = Hierarchy.from_rows([["f", "*"], ["m", "*"], ["x", "*"], ["y", "*"]])
    >>> df = pd.DataFrame({"sex": list("fffmmxy"), "dx": list("abcabaa")})
    >>> ft = FrequencyTable.from_table(df, {"sex": sex}, ["dx"])
    >>> p = Partitioning(np.array([0, 1, 1, -1]), 2)  # f; m and x; y suppressed
    >>> [labels.tolist() for labels in group_labels(ft, p)]
    [['f', '*']]
    >>> l3 = [DistinctLDiversity("dx", 3)]
    >>> settle_starred(ft, p, l3).group_of_tuple.tolist()  # a, b, a and y's empty dx
    [0, 1, 1, -1]
    >>> p = Partitioning(np.array([0, 1, 1, 1]), 2)  # y too: a, b, a, a
    >>> settle_starred(ft, p, l3).group_of_tuple.tolist()
    [0, -1, -1, -1]
    """
    sensitive = [m for m in models if m.attribute is not None]
    if not sensitive or not p.n_groups:
        return p
    starred = np.ones(p.n_groups, bool)  # no QI at all: every row reads as suppressed
    for labels in group_labels(ft, p):
        starred &= labels == SUPPRESSED
    group = np.maximum(p.group_of_tuple, 0)
    on_star = (p.group_of_tuple >= 0) & starred[group]  # per tuple
    if not on_star.any() or _starred_hold(ft, p, on_star, sensitive, missing):
        return p
    renumber = np.cumsum(~starred) - 1
    return replace(p, group_of_tuple=np.where(on_star | (p.group_of_tuple < 0), -1,
                                              renumber[group]),
                   n_groups=int((~starred).sum()))


def _starred_hold(ft: FrequencyTable, p: Partitioning, on_star: np.ndarray,
                  models: Sequence[PrivacyModel], missing: str) -> bool:
    """Do the tuples ``on_star``, with the suppressed records as missing values, meet the
    ``models`` as one class?"""
    members = np.flatnonzero(on_star)
    one = ft.classes_of(members, np.zeros(len(members), np.int64), 1)
    hidden = p.suppressed(ft)
    if hidden:
        histograms, domains = {}, dict(ft.domains)
        for name, hist in one.histograms.items():
            widened = _with_value(ft.domains[name], missing)
            if widened is None:
                return False
            domains[name], at = widened
            histograms[name] = np.zeros((1, len(domains[name].labels)), np.int64)
            histograms[name][:, :hist.shape[1]] = hist
            histograms[name][0, at] += hidden
        one = Classes(one.sizes + hidden, histograms, domains)
    return all(np.asarray(m.holds(one), dtype=bool).all() for m in models)


def _with_value(domain: SensitiveDomain, value: str) -> tuple[SensitiveDomain, int] | None:
    """``domain`` holding ``value`` (appended, none of the table's records having it, as the
    checker adds a value the input lacks) and its index; None where a hierarchy serves the
    domain and lacks the value."""
    at = np.flatnonzero(np.asarray(domain.labels).astype(str) == value)
    if len(at):
        return domain, int(at[0])
    if domain.hierarchy is not None:
        return None
    return replace(domain, labels=np.append(domain.labels, value).astype(object),
                   overall=np.append(domain.overall, 0)), len(domain.labels)


# --------------------------------------------------------------------------------------------
# utility


def mondrian_utility(ft: FrequencyTable, p: Partitioning, *,
                     sets: bool | None = None) -> dict:
    """Utility figures of a partitioning, as :mod:`blendin.metrics` defines them.

    Each group's cell on a QI is its released value: a range (numbers, dates), the lowest
    common ancestor (categories) or, with ``sets=True``, the set of values. So ``gcp`` uses
    NCP = range / hierarchy range for numbers and leaves covered / all leaves for
    categories (Xu et al. 2006); ``loss`` is Iyengar's LM; ``precision`` uses the level of
    the lowest common ancestor in the hierarchy; ``entropy`` the records the cell covers;
    ``discernibility`` and ``aecs`` the group sizes. Suppressed records count as ``*``.
    ``groups`` is the number of groups. ``sets=None`` follows ``p.sets``.

    >>> from blendin.models import KAnonymity
    >>> import pandas as pd
    >>> age = Hierarchy.from_rows([[str(a), "*"] for a in range(20, 30)], kind="numeric",
    ...                           numbers=np.arange(20, 30))
    >>> ft = FrequencyTable.from_table(pd.DataFrame({"age": ["20", "22", "24", "29"]}),
    ...                                {"age": age})
    >>> u = mondrian_utility(ft, mondrian(ft, [KAnonymity(2)]))
    >>> u["discernibility"], round(u["gcp"], 4), u["groups"]
    (8.0, 0.3889, 2)
    """
    sets = p.sets if sets is None else sets
    attrs, cov = _covers(ft, p)
    shape = (p.n_groups, len(attrs))
    loss, ncp, share, log_mass = (np.zeros(shape) for _ in range(4))
    bits = np.zeros(len(attrs))
    for d, (attr, h) in enumerate(zip(attrs, ft.hierarchies)):
        freq = np.bincount(ft.tuples[:, d], weights=ft.counts, minlength=len(h.ground))
        bits[d] = float((freq[freq > 0] * np.log2(freq[freq > 0])).sum())
        level, node = cov.lca[:, d], cov.node[:, d]
        share[:, d] = level / (h.height - 1) if h.height > 1 else 0.0
        if isinstance(attr, _Ordered):
            loss[:, d] = ncp[:, d] = attr.width(cov.lo[:, d], cov.hi[:, d])
            by_rank = np.concatenate([[0.0], np.cumsum(np.bincount(
                attr.rank, weights=freq, minlength=len(attr.values)))])
            mass = by_rank[cov.hi[:, d] + 1] - by_rank[cov.lo[:, d]]
        else:
            leaves, mass = _node_sums(h, level, node, np.ones(len(h.ground)), freq)
            if sets:
                leaves = cov.distinct[:, d].astype(float)
                mass = _set_mass(ft, p, cov, d, freq)
            loss[:, d] = categorical_loss(leaves, attr.n_leaves)
            ncp[:, d] = np.where(cov.distinct[:, d] > 1, leaves / attr.n_leaves, 0.0)
        log_mass[:, d] = np.log2(np.maximum(mass, 1.0))
    figures = class_metrics(
        p.sizes(ft), n_records=ft.n_records, n_suppressed=p.suppressed(ft), loss=loss,
        ncp=ncp, share=share, log_mass=log_mass, ground_bits=bits)
    return {**figures, "groups": p.n_groups}


def _node_sums(h: Hierarchy, level: np.ndarray, node: np.ndarray,
               *weights: np.ndarray) -> list[np.ndarray]:
    """Per group, sums of per-ground-value ``weights`` under its node (everything at the top)."""
    out = [np.full(len(level), float(w.sum())) for w in weights]
    for lv in np.unique(level[level < h.height]):
        at = level == lv
        for o, w in zip(out, weights):
            o[at] = np.bincount(h.codes[lv], weights=w, minlength=len(h.labels[lv]))[node[at]]
    return out


def _set_mass(ft: FrequencyTable, p: Partitioning, cov: _Covers, d: int,
              freq: np.ndarray) -> np.ndarray:
    """Per group, records of the table whose value is among the group's values."""
    radix = len(freq)
    pairs = np.unique(p.group_of_tuple[cov.kept] * radix + ft.tuples[cov.kept, d])
    return np.bincount(pairs // radix, weights=freq[pairs % radix], minlength=p.n_groups)
