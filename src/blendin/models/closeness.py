"""t-closeness with the equal, ordered and hierarchical distances (Li et al., ICDE 2007)."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Mapping

import numpy as np

from blendin.errors import BlendinError, preview
from blendin.frequency import Classes, SensitiveDomain
from blendin.hierarchy import builders
from blendin.hierarchy.core import Hierarchy
from blendin.models.base import _attribute, _real, _SensitiveModel, at_most

DISTANCES = ("equal", "ordered", "hierarchical")


class TCloseness(_SensitiveModel):
    """The distribution of the sensitive values in every class is within ``t`` of the whole
    table's, by the Earth Mover's Distance (Li, Li, Venkatasubramanian 2007).

    With P the class's distribution and Q the whole table's over the m values:

    - ``distance = "equal"``: every two values are 1 apart, so
      ``EMD = 1/2 sum_i |p_i - q_i|``.
    - ``"ordered"``: values in order (by number when every value is a number, else numbers
      first, by value, then the rest by text), ``i`` and ``j`` are ``|i - j| / (m - 1)``
      apart, so ``EMD = 1/(m - 1) sum_i |sum_{j <= i} (p_j - q_j)|``. Here the m values are
      those present in the table, so giving a hierarchy does not change the distance.
    - ``"hierarchical"``: two values are ``level(lowest common ancestor) / H`` apart in the
      attribute's hierarchy of height H (levels above the ground; an extra root is added
      when the top level has more than one value). Bottom up, every node N gets
      ``extra(N) = sum over its leaves of (p_i - q_i)``; for its children,
      ``pos(N)`` sums the positive, ``neg(N)`` the negative extras (absolute values), and
      ``EMD = sum over inner nodes N of level(N) / H * min(pos(N), neg(N))``.

    A class holds when its distance is at most t (a slack of 1e-12 of t). Monotone without
    suppression for every distance: the EMD is convex in P (transport plans mix), and a
    merged class's distribution is a mix of its parts' (Li et al. prove the generalization
    property). NOT monotone with suppression: merging a close class with a far one can push
    it beyond t (ARX treats t-closeness as non-monotone with suppression). The figure is the
    largest distance of a class.

    ``hierarchy`` (for the hierarchical distance) is a built Hierarchy, a builder, or the
    inline TOML table of a builder; the domain's own hierarchy (Spec.sensitive_hierarchies)
    comes first.

    >>> import numpy as np
    >>> from blendin.frequency import Classes, SensitiveDomain
    >>> salary = SensitiveDomain("salary", np.array([f"{i}000" for i in range(3, 12)],
    ...                          dtype=object), np.ones(9, dtype=np.int64))
    >>> low = np.array([[1, 1, 1, 0, 0, 0, 0, 0, 0]])  # 3k, 4k, 5k (Li et al.'s example)
    >>> classes = Classes(np.array([3]), {"salary": low}, {"salary": salary})
    >>> TCloseness("salary", 0.4, "ordered").distances(classes).round(4).tolist()
    [0.375]
    >>> TCloseness("salary", 0.4, "equal").distances(classes).round(4).tolist()
    [0.6667]
    """

    key = "t-closeness"
    compares_distribution = True
    figure_name = "largest distance"
    larger_is_better = False
    monotone_with_suppression = False

    def __init__(
        self,
        attribute: str,
        t: float,
        distance: str = "equal",
        hierarchy: Mapping | Hierarchy | object | None = None,
    ) -> None:
        self.attribute = attribute
        self.t = t
        self.distance = distance
        self.hierarchy_spec = hierarchy
        self._check()
        self.t = float(t)
        self._prepared: dict[int, tuple[SensitiveDomain, object]] = {}

    def _check(self) -> None:
        self.attribute = _attribute(self.key, self.attribute)
        fix = "set t between 0 and 1, e.g. t = 0.2"
        _real(self.key, "t", self.t, fix)
        if not 0 <= self.t <= 1:
            raise BlendinError(f"{self.key}: t must be between 0 and 1, got {self.t!r}", fix=fix)
        if self.distance not in DISTANCES:
            raise BlendinError(
                f"{self.key}: unknown distance {self.distance!r}",
                fix=f"use one of {', '.join(map(repr, DISTANCES))}",
            )
        if self.hierarchy_spec is not None and self.distance != "hierarchical":
            raise BlendinError(
                f"{self.key}: a hierarchy is given for {self.attribute!r} but distance is "
                f"{self.distance!r}",
                fix='set distance = "hierarchical", or remove the hierarchy',
            )

    def params(self) -> dict:
        params = super().params()
        if params["hierarchy_spec"] is None:
            del params["hierarchy_spec"]
        return params

    def __repr__(self) -> str:
        return super().__repr__().replace("hierarchy_spec=", "hierarchy=")

    def to_dict(self) -> dict:
        table = {"model": self.key, "attribute": self.attribute, "t": self.t,
                 "distance": self.distance}
        spec = self.hierarchy_spec
        if isinstance(spec, Mapping):
            table["hierarchy"] = dict(spec)
        elif spec is not None:
            to_toml = getattr(spec, "to_toml", None)
            if to_toml is None:
                raise BlendinError(
                    f"{self.key}: the built hierarchy of {self.attribute!r} cannot be written "
                    "to TOML",
                    fix="give the model a hierarchy builder (e.g. bl.tree(...)) instead",
                )
            table["hierarchy"] = to_toml()
        return table

    def validate(self, n_records: int, domains: Mapping[str, SensitiveDomain]) -> None:
        super().validate(n_records, domains)
        if self.distance == "hierarchical":
            self._cached(domains[self.attribute], self._prepare)

    def holds(self, classes: Classes) -> np.ndarray:
        return at_most(self.distances(classes), self.t)

    def per_class(self, classes: Classes) -> np.ndarray:
        return self.distances(classes)

    def distances(self, classes: Classes) -> np.ndarray:
        """The distance of every class's distribution to the whole table's."""
        overall, shape = self._cached(self.domain(classes), self._prepare)
        diff = _shares(self.histogram(classes)) - overall
        if self.distance == "equal":
            return 0.5 * np.abs(diff).sum(axis=1)
        if self.distance == "ordered":
            return _ordered_emd(diff, shape)
        return _hierarchical_emd(diff, *shape)

    def _prepare(self, domain: SensitiveDomain) -> tuple[np.ndarray, object]:
        """The whole table's distribution, and what the distance needs of the domain: the
        values' order, or the tree's nodes."""
        overall = _shares(np.asarray(domain.overall)[None, :])[0]
        if self.distance == "ordered":
            return overall, _value_order(domain)
        if self.distance == "hierarchical":
            return overall, _tree_of(*self._hierarchy_for(domain))
        return overall, None

    def _cached(self, domain: SensitiveDomain, make):
        """What ``make(domain)`` returns, computed once per domain (searches call often)."""
        hit = self._prepared.get(id(domain))
        if hit is None or hit[0] is not domain:
            if len(self._prepared) >= 8:  # old tables: let them go
                self._prepared.clear()
            hit = (domain, make(domain))
            self._prepared[id(domain)] = hit
        return hit[1]

    def __getstate__(self) -> dict:
        return {**vars(self), "_prepared": {}}

    def _hierarchy_for(self, domain: SensitiveDomain) -> tuple[Hierarchy, np.ndarray]:
        """The hierarchy and the ground code of every histogram column."""
        labels = np.asarray(domain.labels).astype(str)
        if domain.hierarchy is not None:
            hierarchy = domain.hierarchy
            if len(hierarchy.ground) != len(labels):
                raise BlendinError(
                    f"{self.key}: the hierarchy of {self.attribute!r} has "
                    f"{len(hierarchy.ground)} values but the data has {len(labels)}",
                    fix=f"build the frequency table with the hierarchy of {self.attribute!r}",
                )
            return hierarchy, np.arange(len(labels))
        hierarchy = self._build_own(labels)
        ground = {str(v): i for i, v in enumerate(hierarchy.ground)}
        missing = [v for v in labels if v not in ground]
        if missing:
            raise BlendinError(
                f"{self.key}: the hierarchy of {self.attribute!r} does not cover "
                f"{len(missing)} value(s) of the data: {preview(missing)}",
                fix=f"add these values to the hierarchy of {self.attribute!r}",
            )
        return hierarchy, np.array([ground[v] for v in labels], dtype=np.intp)

    def _build_own(self, labels: np.ndarray) -> Hierarchy:
        spec = self.hierarchy_spec
        if spec is None:
            raise BlendinError(
                f"{self.key}: the hierarchical distance needs a hierarchy of "
                f"{self.attribute!r}, and none is given",
                fix=f"give hierarchy = {{...}} in the [[privacy]] table of {self.attribute!r} "
                '(as for a quasi-identifier), or use distance = "equal" or "ordered"',
            )
        if isinstance(spec, Hierarchy):
            return spec
        if isinstance(spec, Mapping):
            from_toml = getattr(builders, "builder_from_toml", None)
            if from_toml is None:
                raise BlendinError(
                    f"{self.key}: the hierarchy table of {self.attribute!r} cannot be built here",
                    fix="give the hierarchy through the Spec (sensitive_hierarchies)",
                )
            spec = from_toml(dict(spec), None)
        return spec.build(np.array(sorted(set(labels)), dtype=object), self.attribute)


def _shares(hist: np.ndarray) -> np.ndarray:
    """Rows of counts as distributions (an empty row stays all zero)."""
    hist = np.asarray(hist, dtype=float)
    total = hist.sum(axis=1, keepdims=True)
    return np.divide(hist, total, out=np.zeros_like(hist), where=total > 0)


def _value_order(domain: SensitiveDomain) -> np.ndarray:
    """Columns present in the table, in value order (see TCloseness, "ordered")."""
    labels = np.asarray(domain.labels).astype(str)
    present = np.flatnonzero(np.asarray(domain.overall) > 0)
    numbers = np.full(len(labels), np.nan)
    for i in present:  # the distinct values, not rows
        with contextlib.suppress(ValueError):
            numbers[i] = float(labels[i])
    is_text = np.isnan(numbers)
    # numbers first by value, then the other values by text; lexsort's last key is primary
    keys = (labels[present], np.where(is_text, 0.0, numbers)[present], is_text[present])
    return present[np.lexsort(keys)]


def _ordered_emd(diff: np.ndarray, order: np.ndarray) -> np.ndarray:
    m = len(order)
    if m < 2:
        return np.zeros(diff.shape[0])
    running = np.cumsum(diff[:, order], axis=1)[:, :-1]
    return np.abs(running).sum(axis=1) / (m - 1)


#: per hierarchy, the last histogram columns' tree (see :func:`_tree_nodes`): a new table's
#: domain needs it again, and a hierarchy file's builder returns the same hierarchy
_TREES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _tree_of(hierarchy: Hierarchy, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_tree_nodes`, kept per hierarchy (read-only arrays)."""
    key = np.asarray(columns, np.int64).tobytes()
    hit = _TREES.get(hierarchy)
    if hit is None or hit[0] != key:
        tree = _tree_nodes(hierarchy, columns)
        for array in tree:
            array.setflags(write=False)
        hit = _TREES[hierarchy] = (key, tree)
    return hit[1]


def _tree_nodes(hierarchy: Hierarchy, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which tree nodes hold each histogram column, and each node's weight in the distance
    (see :func:`_hierarchical_emd`): a (columns, nodes) 0/1 matrix and a vector.

    The nodes are those of every level holding a column, the leaves (the columns
    themselves) included; an extra root is added when the top level has more than one
    value. With height H, a node below the root weighs 1/(2H), the root -1/2.
    """
    codes = [np.asarray(level)[columns] for level in hierarchy.codes]
    if len(hierarchy.labels[-1]) > 1:
        codes.append(np.zeros(len(columns), dtype=np.int64))  # a common root
    height = len(codes) - 1
    if height == 0:  # one value: every distance is 0
        return np.zeros((len(columns), 0)), np.zeros(0)
    # each level's nodes numbered 0.. (only those holding a column), one-hot per column
    members = [np.unique(level, return_inverse=True)[1].reshape(-1) for level in codes]
    blocks = [np.eye(int(m.max()) + 1)[m] for m in members]
    weights = [np.full(b.shape[1], 1 / (2 * height)) for b in blocks[:-1]]
    return np.hstack(blocks), np.concatenate([*weights, [-0.5]])


def _hierarchical_emd(diff: np.ndarray, members: np.ndarray,
                      weights: np.ndarray) -> np.ndarray:
    """The hierarchical EMD of every row of ``diff`` (P - Q), in closed form.

    Li et al.'s sum over the inner nodes N at level l of ``l / H * min(pos(N), neg(N))``:
    with ``extra(N)`` the sum of P - Q over N's leaves, ``pos(N) + neg(N)`` is the sum of
    |extra| over N's children and ``pos(N) - neg(N) = extra(N)``, so ``min(pos, neg) =
    (sum over the children of |extra| - |extra(N)|) / 2``. Summed level by level, the
    terms telescope: the distance is ``(sum over all nodes below the root of |extra|) /
    (2H) - |extra(root)| / 2`` -- one product with the node matrix, whatever the height.
    """
    if not len(weights):
        return np.zeros(diff.shape[0])
    # rounding can leave a distance of 0 a hair below it
    return np.maximum(np.abs(diff @ members) @ weights, 0.0)
