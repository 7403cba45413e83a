"""Privacy models: vectorized predicates over equivalence classes.

Each model answers, for every class at once, whether the class satisfies it, and says
whether it is monotone under generalization (with and without suppression), so a search
prunes only where that is proven.

Monotonicity, as used here: a model is *monotone* when every generalization of a node that
satisfies it (no record suppressed) satisfies it too. This holds when a class merged from
satisfying classes satisfies the model. It is *monotone with suppression* when, in addition,
generalizing never makes more records violate the model, so a node within the suppression
limit has every generalization within it. This holds when a class merged from a satisfying
class and any other class satisfies the model.

References: Sweeney (2002) k-anonymity; Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam,
"l-diversity: privacy beyond k-anonymity", TKDD 1(1), 2007; Li, Li, Venkatasubramanian,
"t-closeness: privacy beyond k-anonymity and l-diversity", ICDE 2007.
"""

from __future__ import annotations

import contextlib
import difflib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from numbers import Real

import numpy as np

from blendin.errors import BlendinError, preview
from blendin.frequency import Classes, SensitiveDomain
from blendin.hierarchy.core import Hierarchy

#: absolute slack when comparing a computed figure with its threshold (entropy, distance),
#: so that exact cases such as entropy == log(l) are not lost to rounding
TOLERANCE = 1e-9
#: relative slack for the strict inequality of recursive (c, l)-diversity
RELATIVE_TOLERANCE = 1e-12

DISTANCES = ("equal", "ordered", "hierarchical")


class PrivacyModel(ABC):
    """A privacy model. Subclasses set ``key`` (the TOML name) and the monotonicity flags.

    ``holds(classes)`` returns one bool per class; ``figure(classes)`` the model's own
    figure over the given classes (smallest k, smallest l, largest distance), for reports;
    ``per_class(classes)`` that figure for every class.
    """

    key: str = ""
    attribute: str | None = None
    #: if a node satisfies the model, so does every generalization of it (no suppression)
    monotone: bool = True
    #: the same when records of violating classes are suppressed within a limit
    monotone_with_suppression: bool = True
    #: what ``figure`` reports, in words
    figure_name: str = ""
    #: the figure is better when larger (k, l) or when smaller (t)
    larger_is_better: bool = True

    @abstractmethod
    def holds(self, classes: Classes) -> np.ndarray:
        """One bool per class."""

    @abstractmethod
    def per_class(self, classes: Classes) -> np.ndarray:
        """The model's figure for every class (float array)."""

    def figure(self, classes: Classes) -> float:
        """The model's figure over the classes: the worst class (nan when there are none)."""
        if not len(classes):
            return float("nan")
        values = self.per_class(classes)
        return float(values.min() if self.larger_is_better else values.max())

    def validate(self, n_records: int, domains: Mapping[str, SensitiveDomain]) -> None:
        """Raise BlendinError when the model cannot be met by a table of this shape."""
        self._check()
        if self.attribute is not None and self.attribute not in domains:
            known = f" (sensitive: {preview(domains)})" if domains else ""
            raise BlendinError(
                f"{self.key} names attribute {self.attribute!r}, which is not sensitive{known}",
                fix=f"add {self.attribute!r} to the sensitive attributes",
            )

    def _check(self) -> None:  # noqa: B027 (models without parameters check nothing)
        """Check the parameters' types and ranges (constructor and validate)."""

    def params(self) -> dict:
        """The model's parameters, as given to the constructor."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def to_dict(self) -> dict:
        """The TOML ``[[privacy]]`` table of this model (read back by ``model_from_toml``)."""
        return {"model": self.key, **self.params()}

    def __str__(self) -> str:
        params = ", ".join(f"{k} = {v}" for k, v in self.params().items() if k != "attribute")
        where = f" of {self.attribute!r}" if self.attribute is not None else ""
        return f"{self.key}{where} ({params})"

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({params})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.params() == other.params()

    def __hash__(self) -> int:
        return hash((type(self), self.attribute))


def _whole_number(model: str, name: str, value: object, fix: str) -> int:
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
        raise BlendinError(f"{model}: {name} must be a whole number >= 1, got {value!r}",
                           fix=fix)
    return int(value)


def _real(model: str, name: str, value: object, fix: str) -> float:
    if not isinstance(value, Real) or isinstance(value, bool) or not np.isfinite(value):
        raise BlendinError(f"{model}: {name} must be a number, got {value!r}", fix=fix)
    return value


def _attribute(model: str, attribute: object) -> str:
    if not isinstance(attribute, str) or not attribute:
        raise BlendinError(f"{model}: attribute must be a column name, got {attribute!r}",
                           fix="name the sensitive column, e.g. attribute = \"diagnosis\"")
    return attribute


class KAnonymity(PrivacyModel):
    """Every class holds at least ``k`` records (Sweeney 2002): ``|E| >= k``.

    Monotone, with suppression too: a class of k or more records stays so when merged with
    any other class, so generalizing never adds violating records.
    The figure is the smallest class size.

    >>> import numpy as np
    >>> from blendin.frequency import Classes
    >>> KAnonymity(2).holds(Classes(np.array([1, 3]), {}, {})).tolist()
    [False, True]
    >>> KAnonymity(2).figure(Classes(np.array([1, 3]), {}, {}))
    1.0
    """

    key = "k-anonymity"
    figure_name = "smallest class"

    def __init__(self, k: int) -> None:
        self.k = k
        self._check()
        self.k = int(k)

    def _check(self) -> None:
        _whole_number(self.key, "k", self.k, "set k = 2 or more")

    def holds(self, classes: Classes) -> np.ndarray:
        return classes.sizes >= self.k

    def per_class(self, classes: Classes) -> np.ndarray:
        return classes.sizes.astype(float)

    def validate(self, n_records: int, domains: Mapping[str, SensitiveDomain]) -> None:
        super().validate(n_records, domains)
        if self.k > n_records:
            raise BlendinError(
                f"k-anonymity: k = {self.k} is larger than the table ({n_records} records)",
                fix=f"choose k <= {n_records}",
            )


class _SensitiveModel(PrivacyModel):
    """A model over the histogram of one sensitive attribute in every class."""

    def histogram(self, classes: Classes) -> np.ndarray:
        """(classes, values) counts of the attribute in every class."""
        try:
            return classes.histograms[self.attribute]
        except KeyError:
            raise BlendinError(
                f"{self.key}: the classes carry no histogram of {self.attribute!r}",
                fix=f"list {self.attribute!r} among the sensitive attributes",
            ) from None

    def domain(self, classes: Classes) -> SensitiveDomain:
        return classes.domains[self.attribute]


class _LDiversity(_SensitiveModel):
    """Shared checks of the l-diversity variants."""

    def _check_l(self) -> None:
        self.attribute = _attribute(self.key, self.attribute)
        _whole_number(self.key, "l", self.l, "set l = 2 or more")

    def validate(self, n_records: int, domains: Mapping[str, SensitiveDomain]) -> None:
        super().validate(n_records, domains)
        distinct = int(np.count_nonzero(np.asarray(domains[self.attribute].overall)))
        if self.l > distinct:
            raise BlendinError(
                f"{self.key}: l = {self.l} but {self.attribute!r} has only {distinct} distinct "
                "value(s) in the whole table, so no class can be that diverse",
                fix=f"choose l <= {distinct}",
            )


class DistinctLDiversity(_LDiversity):
    """Every class holds at least ``l`` distinct values of the sensitive attribute.

    Machanavajjhala et al. (2007), "distinct l-diversity": ``|{s : n(E, s) > 0}| >= l``.
    Monotone, with suppression too: a class with l distinct values keeps them when merged
    with any other class (ARX treats it the same way). The figure is the smallest number of
    distinct values in a class.

    >>> import numpy as np
    >>> from blendin.frequency import Classes, SensitiveDomain
    >>> dx = SensitiveDomain("dx", np.array(["flu", "gout", "hiv"], dtype=object),
    ...                      np.array([4, 3, 1]))
    >>> classes = Classes(np.array([4, 4]), {"dx": np.array([[2, 2, 0], [2, 1, 1]])},
    ...                   {"dx": dx})
    >>> DistinctLDiversity("dx", 3).holds(classes).tolist()
    [False, True]
    >>> DistinctLDiversity("dx", 3).figure(classes)
    2.0
    """

    key = "distinct-l-diversity"
    figure_name = "smallest number of distinct values"

    def __init__(self, attribute: str, l: int) -> None:  # noqa: E741 (the papers' name)
        self.attribute = attribute
        self.l = l
        self._check()
        self.l = int(l)

    def _check(self) -> None:
        self._check_l()

    def per_class(self, classes: Classes) -> np.ndarray:
        return np.count_nonzero(self.histogram(classes), axis=1).astype(float)

    def holds(self, classes: Classes) -> np.ndarray:
        return np.count_nonzero(self.histogram(classes), axis=1) >= self.l


def entropies(histograms: np.ndarray) -> np.ndarray:
    """Shannon entropy (natural log) of every row of a count matrix, with 0 log 0 = 0.

    ``H = log n - (sum r log r) / n`` for counts r summing to n; an empty row has entropy 0.

    >>> entropies(np.array([[2, 2, 0], [5, 0, 0]])).round(4).tolist()
    [0.6931, 0.0]
    """
    counts = np.asarray(histograms, dtype=float)
    n = counts.sum(axis=1)
    # r log r with log(max(r, 1)): zero where r is 0 or 1, and no log(0) warning
    weighted = (counts * np.log(np.maximum(counts, 1.0))).sum(axis=1)
    safe_n = np.maximum(n, 1.0)
    # clipped: a single value gives log n - log n, which may round a hair below zero
    return np.maximum(np.where(n > 0, np.log(safe_n) - weighted / safe_n, 0.0), 0.0)


class EntropyLDiversity(_LDiversity):
    """The sensitive values of every class have entropy at least ``log(l)``.

    Machanavajjhala et al. (2007), "entropy l-diversity":
    ``-sum_s p(E, s) log p(E, s) >= log(l)`` with ``p(E, s)`` the share of value s in class
    E and ``0 log 0 = 0``; compared with a slack of 1e-9 so that a class exactly at log(l)
    (l equally frequent values) passes. ``l`` may be fractional.

    Monotone without suppression: entropy is concave, so a merged class has at least the
    smaller entropy of its parts (the paper's monotonicity property). NOT monotone with
    suppression: merging a diverse class into a large uniform one can fall below log(l),
    so generalizing can add violating records (ARX treats it the same way). The figure is
    the smallest ``exp(entropy)``: the effective number of values, comparable with l.

    >>> import numpy as np
    >>> from blendin.frequency import Classes, SensitiveDomain
    >>> dx = SensitiveDomain("dx", np.array(["flu", "gout"], dtype=object), np.array([5, 3]))
    >>> classes = Classes(np.array([4, 4]), {"dx": np.array([[2, 2], [3, 1]])}, {"dx": dx})
    >>> EntropyLDiversity("dx", 2).holds(classes).tolist()
    [True, False]
    >>> round(EntropyLDiversity("dx", 2).figure(classes), 3)
    1.755
    """

    key = "entropy-l-diversity"
    figure_name = "smallest effective l (exp of entropy)"
    monotone_with_suppression = False

    def __init__(self, attribute: str, l: float) -> None:  # noqa: E741 (the papers' name)
        self.attribute = attribute
        self.l = l
        self._check()
        self.l = int(l) if isinstance(l, int | np.integer) else float(l)

    def _check(self) -> None:
        self.attribute = _attribute(self.key, self.attribute)
        _real(self.key, "l", self.l, "set l = 2 or more")
        if self.l < 1:
            raise BlendinError(f"{self.key}: l must be >= 1, got {self.l!r}",
                               fix="set l = 2 or more")

    def per_class(self, classes: Classes) -> np.ndarray:
        return np.exp(entropies(self.histogram(classes)))

    def holds(self, classes: Classes) -> np.ndarray:
        return entropies(self.histogram(classes)) >= np.log(self.l) - TOLERANCE



def recursive_levels(histograms: np.ndarray, c: float) -> np.ndarray:
    """For every row, the largest l for which it is recursive (c, l)-diverse (0 if none).

    Row counts sorted decreasing are r_1 >= r_2 >= ... >= r_m; (c, l) holds when
    ``r_1 < c (r_l + ... + r_m)``. The right side shrinks as l grows, so the l that hold
    are 1..L and L is the number of l that hold.

    >>> recursive_levels(np.array([[3, 2, 1], [6, 1, 1]]), 2.0).tolist()  # 3 < 2*1 fails
    [2, 1]
    """
    return _recursive_table(histograms, c).sum(axis=1)


def _recursive_table(histograms: np.ndarray, c: float) -> np.ndarray:
    """(rows, values) bool: column i tells whether (c, l = i + 1) holds."""
    r = -np.sort(-np.asarray(histograms, dtype=float), axis=1)
    tail = np.cumsum(r[:, ::-1], axis=1)[:, ::-1]  # tail[:, i] = r_{i+1} + ... + r_m
    bound = c * tail
    return bound - r[:, :1] > RELATIVE_TOLERANCE * bound


class RecursiveCLDiversity(_LDiversity):
    """In every class the most frequent value is not too frequent: ``r_1 < c (r_l + ... + r_m)``.

    Machanavajjhala et al. (2007), "recursive (c, l)-diversity", with ``r_i`` the i-th
    largest count of a sensitive value in the class (a class with fewer than l values
    fails). Monotone without suppression (proven in the paper); NOT monotone with
    suppression, for the same reason as entropy l-diversity (ARX agrees). The figure is,
    for the model's c, the largest l for which every class is (c, l)-diverse: 3 means each
    class is (c, 3)-diverse and some class is not (c, 4)-diverse; 0 means some class fails
    even l = 1.

    >>> import numpy as np
    >>> from blendin.frequency import Classes, SensitiveDomain
    >>> dx = SensitiveDomain("dx", np.array(["a", "b", "c"], dtype=object), np.array([9, 3, 2]))
    >>> classes = Classes(np.array([6, 8]), {"dx": np.array([[3, 2, 1], [6, 1, 1]])},
    ...                   {"dx": dx})
    >>> RecursiveCLDiversity("dx", 2, 2).holds(classes).tolist()  # 3 < 2*3, 6 < 2*2 fails
    [True, False]
    >>> RecursiveCLDiversity("dx", 4, 2).figure(classes)  # (4, 3): 3 < 4, 6 < 4 fails
    2.0
    """

    key = "recursive-cl-diversity"
    figure_name = "smallest l reached at the given c"
    monotone_with_suppression = False

    def __init__(self, attribute: str, c: float, l: int) -> None:  # noqa: E741
        self.attribute = attribute
        self.c = c
        self.l = l
        self._check()
        self.c = int(c) if isinstance(c, int | np.integer) else float(c)
        self.l = int(l)

    def _check(self) -> None:
        self._check_l()
        _real(self.key, "c", self.c, "set c to a positive number, e.g. c = 3")
        if self.c <= 0:
            raise BlendinError(f"{self.key}: c must be > 0, got {self.c!r}",
                               fix="set c to a positive number, e.g. c = 3")

    def per_class(self, classes: Classes) -> np.ndarray:
        return recursive_levels(self.histogram(classes), self.c).astype(float)

    def holds(self, classes: Classes) -> np.ndarray:
        table = _recursive_table(self.histogram(classes), self.c)
        if self.l > table.shape[1]:
            return np.zeros(table.shape[0], dtype=bool)
        return table[:, self.l - 1]


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

    A class holds when its distance is at most t (slack 1e-9). Monotone without
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
            self._tree(domains[self.attribute])

    def holds(self, classes: Classes) -> np.ndarray:
        return self.distances(classes) <= self.t + TOLERANCE

    def per_class(self, classes: Classes) -> np.ndarray:
        return self.distances(classes)

    def distances(self, classes: Classes) -> np.ndarray:
        """The distance of every class's distribution to the whole table's."""
        hist = self.histogram(classes)
        domain = self.domain(classes)
        diff = _shares(hist) - _shares(np.asarray(domain.overall)[None, :])
        if self.distance == "equal":
            return 0.5 * np.abs(diff).sum(axis=1)
        if self.distance == "ordered":
            return _ordered_emd(diff, self._order(domain))
        return _hierarchical_emd(diff, *self._tree(domain))

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

    def _order(self, domain: SensitiveDomain) -> np.ndarray:
        return self._cached(domain, _value_order)

    def _tree(self, domain: SensitiveDomain) -> tuple[list, float]:
        return self._cached(domain, self._make_tree)

    def _make_tree(self, domain: SensitiveDomain) -> tuple[list, float]:
        hierarchy, columns = self._hierarchy_for(domain)
        return _tree_steps(hierarchy, columns)

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
            from blendin.hierarchy import builders

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


def _group(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column order and group starts to sum columns per parent with ``np.add.reduceat``."""
    order = np.argsort(parent, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(parent[order]) != 0])
    return order, starts


def _tree_steps(hierarchy: Hierarchy, columns: np.ndarray) -> tuple[list, float]:
    """Per level above the ground: (level, order, starts) grouping the nodes below by parent.

    The first step groups histogram columns, the next ones the nodes of the level below
    (numbered 0.. in order of their codes, only those holding a column). Returns the steps
    and the tree height H.
    """
    codes = [np.asarray(level)[columns] for level in hierarchy.codes]
    if len(hierarchy.labels[-1]) > 1:
        codes.append(np.zeros(len(columns), dtype=np.int64))  # a common root
    nodes = [np.unique(level, return_inverse=True)[1].reshape(-1) for level in codes]
    steps = []
    for level in range(1, len(nodes)):
        if level == 1:
            parent = nodes[1]
        else:
            parent = np.empty(int(nodes[level - 1].max()) + 1, dtype=np.int64)
            parent[nodes[level - 1]] = nodes[level]
        steps.append((level, *_group(parent)))
    return steps, float(len(codes) - 1)


def _hierarchical_emd(diff: np.ndarray, steps: list, height: float) -> np.ndarray:
    cost = np.zeros(diff.shape[0])
    if height == 0:
        return cost
    extra = diff
    for level, order, starts in steps:
        extra = extra[:, order]
        pos = np.add.reduceat(np.maximum(extra, 0.0), starts, axis=1)
        neg = np.add.reduceat(np.maximum(-extra, 0.0), starts, axis=1)
        cost += level / height * np.minimum(pos, neg).sum(axis=1)
        extra = pos - neg
    return cost


#: TOML name -> (model class, required keys, optional keys)
MODELS: dict[str, tuple[type[PrivacyModel], tuple[str, ...], tuple[str, ...]]] = {
    KAnonymity.key: (KAnonymity, ("k",), ()),
    DistinctLDiversity.key: (DistinctLDiversity, ("attribute", "l"), ()),
    EntropyLDiversity.key: (EntropyLDiversity, ("attribute", "l"), ()),
    RecursiveCLDiversity.key: (RecursiveCLDiversity, ("attribute", "c", "l"), ()),
    TCloseness.key: (TCloseness, ("attribute", "t"), ("distance", "hierarchy")),
}

_EXAMPLES = {"k": "k = 5", "attribute": 'attribute = "diagnosis"', "l": "l = 3",
             "c": "c = 3", "t": "t = 0.2"}


def model_from_toml(table: Mapping) -> PrivacyModel:
    """The privacy model of a ``[[privacy]]`` TOML table (the inverse of ``to_dict``).

    ``model`` is one of ``k-anonymity`` (k), ``distinct-l-diversity`` (attribute, l),
    ``entropy-l-diversity`` (attribute, l), ``recursive-cl-diversity`` (attribute, c, l),
    ``t-closeness`` (attribute, t, distance = "equal" | "ordered" | "hierarchical",
    hierarchy = {inline builder table}, kept on the model as ``hierarchy_spec``).

    >>> model_from_toml({"model": "distinct-l-diversity", "attribute": "dx", "l": 3})
    DistinctLDiversity(attribute='dx', l=3)
    >>> model_from_toml({"model": "k-anonymity", "k": 5}).to_dict()
    {'model': 'k-anonymity', 'k': 5}
    """
    choices = ", ".join(map(repr, MODELS))
    if not isinstance(table, Mapping):
        raise BlendinError(f"a [[privacy]] entry must be a table, got {table!r}",
                           fix='write [[privacy]] with model = "k-anonymity" and k = 5')
    name = table.get("model")
    if name is None:
        raise BlendinError(f"a [[privacy]] table has no model (keys: {preview(table)})",
                           fix=f"add model = ... (one of {choices})")
    if name not in MODELS:
        near = difflib.get_close_matches(str(name), MODELS, n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise BlendinError(f"unknown privacy model {name!r}",
                           fix=f"{hint}use one of {choices}")
    cls, required, optional = MODELS[name]
    params = {k: v for k, v in table.items() if k != "model"}
    allowed = ", ".join((*required, *optional))
    unknown = [k for k in params if k not in required and k not in optional]
    if unknown:
        raise BlendinError(f"privacy model {name!r}: unknown key(s) {preview(unknown)}",
                           fix=f"use only: {allowed}")
    missing = [k for k in required if k not in params]
    if missing:
        raise BlendinError(
            f"privacy model {name!r} is missing {', '.join(missing)}",
            fix="add " + ", ".join(_EXAMPLES.get(k, f"{k} = ...") for k in missing),
        )
    if "hierarchy" in params and not isinstance(params["hierarchy"], Mapping):
        raise BlendinError(
            f"privacy model {name!r}: hierarchy must be an inline table, got "
            f"{params['hierarchy']!r}",
            fix="write hierarchy = {...} as for a quasi-identifier",
        )
    return cls(**params)
