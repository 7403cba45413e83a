"""Risk thresholds: models of the release as a whole (average risk, sample uniqueness).

These models bound a figure of the whole release, not of each class: the mean prosecutor
risk, the share of sample uniques. When a release misses the bound, the classes to suppress
are the smallest ones, as few as will do: suppressing the ``j`` smallest classes removes
``j`` classes with the fewest records any ``j`` classes hold, which lowers both figures the
most for the records it costs, so the first ``j`` at which the bound holds is the least
suppression that meets it (for ``highest``/``records-at-risk`` the same order is used, as
ARX does). The classes a model marks as failing (``holds`` is False) are exactly those.

Monotone without suppression: merging classes lowers the number of classes and of
uniques over the same records, so every generalization of a release that meets the bound
meets it too. NOT monotone with suppression: a generalization can merge a suppressed class
into a kept one and need a different suppression, so the searches prune nothing on them when
records may be suppressed. An empty release (everything suppressed) meets every bound.

References: El Emam, "Guide to the De-Identification of Personal Health Information" (2013)
for the average prosecutor risk; ARX's AverageReidentificationRisk and SampleUniqueness.
"""

from __future__ import annotations

import math

import numpy as np

from blendin.errors import BlendinError
from blendin.estimators import (
    DANKAR_PITMAN_LIMIT,
    pitman_uniques,
    snb_uniques,
    solved,
    spectrum,
    zayatz_uniques,
)
from blendin.frequency import Classes
from blendin.models.base import (
    PrivacyModel,
    _population,
    _population_holds,
    _share,
    at_most,
)


class ReleaseModel(PrivacyModel):
    """A bound on a figure of the whole release; see the module docstring.

    Subclasses give ``figures(sizes)``: the figure after suppressing the ``j`` smallest of
    the classes of ``sizes`` (sorted ascending), for j = 0..len(sizes), and the threshold.
    """

    #: the model bounds the whole release: searches evaluate it after the class models,
    #: on the classes those keep
    release = True
    monotone = True
    monotone_with_suppression = False
    larger_is_better = False
    local_recoding = False
    local_recoding_note = ("it bounds the whole release, and Mondrian decides each group on "
                           "its own")
    threshold: float

    def figures(self, sizes: np.ndarray) -> np.ndarray:  # pragma: no cover (abstract)
        raise NotImplementedError

    def release_holds(self, sizes: np.ndarray) -> np.ndarray:
        """Per j = 0..len(sizes): the bound holds once the j smallest classes are gone."""
        sizes = np.sort(np.asarray(sizes, dtype=np.int64))
        ok = at_most(self.figures(sizes), self.threshold)
        ok[-1] = True  # nothing released, nothing at risk
        return ok

    def holds(self, classes: Classes, budget: int | None = None) -> np.ndarray:
        """False for the classes to suppress (``budget``, the records that may still be
        suppressed, lets costly models stop early; see PopulationUniqueness)."""
        sizes = np.asarray(classes.sizes, dtype=np.int64)
        order = np.argsort(sizes, kind="stable")
        drop = int(np.argmax(self.release_holds(sizes[order])))
        keep = np.ones(len(sizes), bool)
        keep[order[:drop]] = False
        return keep

    def per_class(self, classes: Classes) -> np.ndarray:
        """The prosecutor risk of each class's records, 1 / size."""
        return 1.0 / np.asarray(classes.sizes, dtype=float)

    def figure(self, classes: Classes) -> float:
        """The figure of the release made of these classes (nan when there are none)."""
        if not len(classes):
            return float("nan")
        return float(self.figures(np.sort(np.asarray(classes.sizes, dtype=np.int64)))[0])


def _after_suppression(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Classes and records left after suppressing the j smallest (sizes sorted), j = 0..C."""
    c = len(sizes)
    left_records = sizes.sum() - np.concatenate([[0], np.cumsum(sizes)])
    return np.arange(c, -1, -1), left_records


class AverageRisk(ReleaseModel):
    """The mean prosecutor risk of the released records is at most ``threshold``.

    A record in a class of f records is re-identified with probability 1/f by an attacker
    who knows the person is in the data; the mean over the n released records is
    ``classes / n``. Optionally ``highest`` bounds the risk of single records as well: at
    most the share ``records_at_risk`` of the released records may be in classes of risk
    above ``highest`` (smaller than ``ceil(1 / highest)`` records). The figure is the mean
    risk.

    >>> import numpy as np
    >>> from blendin.frequency import Classes
    >>> classes = Classes(np.array([1, 4, 5]), {}, {})  # 3 classes, 10 records
    >>> AverageRisk(0.3).figure(classes)
    0.3
    >>> AverageRisk(0.25).holds(classes).tolist()  # without the unique: 2 / 9 <= 0.25
    [False, True, True]
    """

    key = "average-risk"
    figure_name = "average risk"

    def __init__(self, threshold: float, highest: float | None = None,
                 records_at_risk: float | None = None) -> None:
        self.threshold = threshold
        self.highest = highest
        self.records_at_risk = records_at_risk
        self._check()
        self.threshold = float(threshold)
        if highest is not None:
            self.highest = float(highest)
            self.records_at_risk = float(records_at_risk or 0.0)

    def _check(self) -> None:
        _share(self.key, "threshold", self.threshold, "0.05")
        if self.highest is None:
            if self.records_at_risk is not None:
                raise BlendinError(f"{self.key}: records-at-risk is given without highest",
                                   fix="add highest = 0.2 (the risk a record may not exceed)")
            return
        _share(self.key, "highest", self.highest, "0.2")
        if self.records_at_risk is not None:
            _share(self.key, "records-at-risk", self.records_at_risk, "0.01", zero=True)

    @property
    def smallest_safe(self) -> int:
        """Classes smaller than this hold records at risk (risk above ``highest``)."""
        return math.ceil(1.0 / self.highest - 1e-9) if self.highest else 1

    def figures(self, sizes: np.ndarray) -> np.ndarray:
        classes, records = _after_suppression(sizes)
        risk = np.divide(classes, records, out=np.zeros(len(records)), where=records > 0)
        if self.highest is None:
            return risk
        # at-risk records are in the smallest classes: those left after the j smallest
        small = np.where(sizes < self.smallest_safe, sizes, 0)
        at_risk = small.sum() - np.concatenate([[0], np.cumsum(small)])
        share = np.divide(at_risk, records, out=np.zeros(len(records)), where=records > 0)
        # the records-at-risk bound is folded into the figure: over it counts as over
        return np.where(at_most(share, self.records_at_risk), risk, np.inf)

    def figure(self, classes: Classes) -> float:
        if not len(classes):
            return float("nan")
        classes_, records = len(classes), float(np.sum(classes.sizes))
        return classes_ / records

    def at_risk(self, classes: Classes) -> float:
        """The share of records in classes of risk above ``highest`` (0 without it)."""
        sizes = np.asarray(classes.sizes)
        if self.highest is None or not sizes.sum():
            return 0.0
        return float(sizes[sizes < self.smallest_safe].sum() / sizes.sum())

    def params(self) -> dict:
        params = {"threshold": self.threshold}
        if self.highest is not None:
            params.update(highest=self.highest, records_at_risk=self.records_at_risk)
        return params

    def to_dict(self) -> dict:
        table = {"model": self.key, "threshold": self.threshold}
        if self.highest is not None:
            table.update({"highest": self.highest, "records-at-risk": self.records_at_risk})
        return table


class SampleUniqueness(ReleaseModel):
    """The share of released records alone in their class is at most ``threshold``.

    The figure is that share (sample uniques / released records).

    >>> import numpy as np
    >>> from blendin.frequency import Classes
    >>> classes = Classes(np.array([1, 1, 8]), {}, {})
    >>> SampleUniqueness(0.1).figure(classes)
    0.2
    >>> SampleUniqueness(0.12).holds(classes).tolist()  # one unique gone: 1 / 9
    [False, True, True]
    """

    key = "sample-uniqueness"
    figure_name = "share of sample uniques"

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self._check()
        self.threshold = float(threshold)

    def _check(self) -> None:
        _share(self.key, "threshold", self.threshold, "0.01")

    def figures(self, sizes: np.ndarray) -> np.ndarray:
        _, records = _after_suppression(sizes)
        uniques = np.maximum(int((sizes == 1).sum()) - np.arange(len(sizes) + 1), 0)
        return np.divide(uniques, records, out=np.zeros(len(records)), where=records > 0)

    def figure(self, classes: Classes) -> float:
        if not len(classes):
            return float("nan")
        sizes = np.asarray(classes.sizes)
        return float((sizes == 1).sum() / sizes.sum())


#: population-uniqueness estimators (blendin.risk), Dankar et al.'s choice first
ESTIMATORS = ("dankar", "pitman", "zayatz", "snb")


class PopulationUniqueness(ReleaseModel):
    """The estimated share of the population that is unique on the released QIs is at most
    ``threshold``.

    The population has ``population`` people, or ``n / sampling_fraction`` for a table of
    n records. From the released class sizes (suppressed records left out, so the sampling
    fraction is released records / population), :mod:`blendin.risk` estimates the
    population uniques by Zayatz, Pitman or the shifted negative binomial (SNB); ``dankar``
    (Dankar et al. 2012) takes Pitman for sampling fractions up to 10% and the smaller of
    Zayatz and SNB above. A release with no sample unique has none estimated; a release with
    sample uniques whose estimator has no solution fails (the bound cannot be shown), as in
    ARX. The figure is the estimated share.

    The estimate does not follow generalization or suppression monotonically, so the
    searches prune nothing on this model (every node within the utility bound is checked).
    When the bound fails, the smallest classes are suppressed; their number is found by
    bisection, as ARX does, so it is the least that meets the bound where the estimate falls
    as classes go (the usual case), and in any case a number that meets it.

    >>> import numpy as np
    >>> from blendin.frequency import Classes
    >>> model = PopulationUniqueness(0.01, "zayatz", population=1000)
    >>> model.validate(6, {})
    >>> round(model.figure(Classes(np.array([1, 2, 3]), {}, {})), 4)
    0.028
    """

    key = "population-uniqueness"
    figure_name = "estimated population uniques (share)"
    monotone = False

    def __init__(self, threshold: float, estimator: str = "dankar",
                 population: float | None = None,
                 sampling_fraction: float | None = None) -> None:
        self.threshold = threshold
        self.estimator = estimator
        self.population = population
        self.sampling_fraction = sampling_fraction
        self._check()
        self.threshold = float(threshold)
        self._records: int | None = None

    def _check(self) -> None:
        _share(self.key, "threshold", self.threshold, "0.01")
        if self.estimator not in ESTIMATORS:
            raise BlendinError(f"{self.key}: unknown estimator {self.estimator!r}",
                               fix=f"use one of {', '.join(map(repr, ESTIMATORS))}")
        _population(self.key, self.population, self.sampling_fraction)

    def params(self) -> dict:
        params = {"threshold": self.threshold, "estimator": self.estimator}
        if self.population is not None:
            params["population"] = self.population
        else:
            params["sampling_fraction"] = self.sampling_fraction
        return params

    def validate(self, n_records: int, domains) -> None:
        super().validate(n_records, domains)
        _population_holds(self.key, self.population, n_records)
        self._records = int(n_records)

    def population_size(self) -> float:
        """People in the population (needs the table's size for a sampling fraction)."""
        if self.population is not None:
            return float(self.population)
        if self._records is None:
            raise BlendinError(f"{self.key}: the table's size is not known yet",
                               fix="validate the model against the table first")
        return self._records / float(self.sampling_fraction)

    def estimate(self, sizes: np.ndarray) -> float:
        """The estimated share of population uniques (0 without sample uniques, nan when
        the estimator has no solution)."""
        sizes = np.asarray(sizes, dtype=np.int64)
        if not (sizes == 1).any():
            return 0.0
        n, big_n = int(sizes.sum()), self.population_size()
        j, f = spectrum(sizes)

        def solve(name: str) -> float:
            fn = {"pitman": pitman_uniques, "zayatz": zayatz_uniques, "snb": snb_uniques}[name]
            value = solved(fn, j, f, n, big_n)
            return value if value > 0 else math.nan

        if self.estimator != "dankar":
            uniques = solve(self.estimator)
        elif n / big_n <= DANKAR_PITMAN_LIMIT:
            uniques = solve("pitman")  # no fallback here, as ARX's criterion
        else:
            zayatz, snb = solve("zayatz"), solve("snb")
            uniques = zayatz if math.isnan(snb) else min(zayatz, snb)
        return uniques / big_n

    def _meets(self, sizes: np.ndarray) -> bool:
        if not sizes.sum():
            return True
        share = self.estimate(sizes)
        return not math.isnan(share) and bool(at_most(share, self.threshold))

    def holds(self, classes: Classes, budget: int | None = None) -> np.ndarray:
        """False for the classes to suppress. With a ``budget`` of records, the bisection
        stops once its answer is sure to need more (every class is then marked: the node is
        over the limit); otherwise the answer is the same as without a budget."""
        sizes = np.asarray(classes.sizes, dtype=np.int64)
        keep = np.ones(len(sizes), bool)
        if self._meets(sizes):
            return keep
        order = np.argsort(sizes, kind="stable")
        ranked = sizes[order]
        fits = len(sizes) if budget is None else int(
            np.searchsorted(np.cumsum(ranked), budget, side="right"))
        low, high = 0, len(sizes)  # the bound fails with `low` classes gone, holds with `high`
        while high - low > 1:
            if low >= fits:  # the answer is above `low`: more records than the budget
                return ~keep
            mid = (low + high) // 2
            if self._meets(ranked[mid:]):
                high = mid
            else:
                low = mid
        keep[order[:high]] = False
        return keep

    def figure(self, classes: Classes) -> float:
        if not len(classes):
            return float("nan")
        return float(self.estimate(classes.sizes))
