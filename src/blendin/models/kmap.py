"""k-map with an estimated population (the cell size estimators of ARX's KMap).

k-map (Sweeney 2002; El Emam & Dankar 2008) asks that every released class stand for at
least k people of the population. Without the population itself, the number of people
behind a sample class is estimated: a population class of k people appears in a sample
drawn with sampling fraction ``f`` a Poisson(``lambda = f k``) number of times (or
zero-truncated Poisson, as it appears at all). The released classes must then be at least
as large as the smallest size ``d`` that such a class of k people would exceed only with
probability ``significance``:

- Poisson: ``d = i + 2`` for the smallest ``i >= 0`` with ``P(X <= i) >= 1 - significance``;
- zero-truncated Poisson: ``d = c + 1`` for the smallest ``c >= 1`` with
  ``P(X <= c | X >= 1) >= 1 - significance``;

both capped at k and at the table's size (as ARX derives it). The model is then
k-anonymity with ``d``: monotone, with suppression too, and Mondrian can enforce it.

With the population itself (``population`` naming a table with the QIs of its people),
nothing is estimated: the people of every released class are counted in that table at
the same generalization, and there must be at least k. Counts only grow when classes
merge, so this is monotone with suppression too; Mondrian cannot enforce it (its groups
are not a generalization the population can be counted at).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from blendin.errors import BlendinError
from blendin.frequency import Classes, SensitiveDomain
from blendin.models.base import _population, _population_holds, _real, _whole_number
from blendin.models.presence import PopulationModel

KMAP_ESTIMATORS = ("poisson", "zero-truncated-poisson")


def _poisson_pmf(c: int, lam: float) -> float:
    return math.exp(-lam + c * math.log(lam) - math.lgamma(c + 1)) if lam > 0 else float(c == 0)


def derived_k(k: int, sampling_fraction: float, significance: float,
              estimator: str = "poisson") -> int:
    """The smallest sample class size that shows k people behind it (module docstring).

    >>> derived_k(5, 0.01, 0.01)  # lambda 0.05: P(X <= 1) = 0.9988 >= 0.99
    3
    >>> derived_k(5, 1.0, 0.01)  # the sample is the population: k itself
    5
    """
    lam = sampling_fraction * k
    threshold = 1.0 - significance
    if estimator == "poisson":
        cdf, i = 0.0, 0
        while True:
            cdf += _poisson_pmf(i, lam)
            if cdf >= threshold or i + 1 >= k:
                return min(k, i + 2)
            i += 1
    p0 = _poisson_pmf(0, lam)
    cdf, c = 0.0, 1
    while True:
        cdf += _poisson_pmf(c, lam) / (1.0 - p0) if p0 < 1 else 1.0
        if cdf >= threshold or c + 1 >= k:
            return min(k, c + 1)
        c += 1


class KMap(PopulationModel):
    """Every released class stands for at least ``k`` people of the population, as
    estimated from the sampling fraction (module docstring): every class holds at least
    :meth:`derived` records. The population is ``population`` people, or the table's size
    over ``sampling_fraction``. The figure is the smallest class. With ``population`` the
    path of a table of the population's quasi-identifiers, its people are counted in every
    class instead, and the figure is the fewest people behind a class.

    >>> import numpy as np
    >>> from blendin.frequency import Classes
    >>> model = KMap(5, population=3000)  # 30 records: f = 1%, so classes of 3 suffice
    >>> model.validate(30, {})
    >>> model.derived(), model.holds(Classes(np.array([2, 3, 25]), {}, {})).tolist()
    (3, [False, True, True])
    """

    key = "k-map"
    figure_name = "smallest class"

    def __init__(self, k: int, estimator: str = "poisson", population: float | None = None,
                 sampling_fraction: float | None = None, significance: float = 0.01) -> None:
        self.k = k
        self.estimator = estimator
        self.population = population
        self.sampling_fraction = sampling_fraction
        self.significance = significance
        if isinstance(population, os.PathLike):
            self.population = population = str(population)
        self._check()
        self.k = int(k)
        self.significance = float(significance)
        self._records: int | None = None
        # with a table, people are counted, not estimated
        self.needs_population = isinstance(population, str)
        self.local_recoding = not self.needs_population
        self.figure_name = "fewest people" if self.needs_population else "smallest class"

    def path(self, base_dir: Path | None = None) -> Path:
        """The population table's path (relative paths from the spec's folder)."""
        path = Path(str(self.population)).expanduser()
        return path if path.is_absolute() or base_dir is None else Path(base_dir) / path

    def _check(self) -> None:
        _whole_number(self.key, "k", self.k, "set k = 2 or more")
        if isinstance(self.population, str):
            if not self.population:
                raise BlendinError(f"{self.key}: population is an empty path",
                                   fix='name the population table, e.g. population = '
                                   '"census.csv"')
            if self.sampling_fraction is not None or self.estimator != "poisson" or (
                    self.significance != 0.01):
                raise BlendinError(
                    f"{self.key}: a population table ({self.population!r}) is counted, so "
                    "estimator, sampling_fraction and significance do not apply",
                    fix="drop them, or give population as a number of people")
            return
        if self.estimator not in KMAP_ESTIMATORS:
            raise BlendinError(f"{self.key}: unknown estimator {self.estimator!r}",
                               fix=f"use one of {', '.join(map(repr, KMAP_ESTIMATORS))}")
        _population(self.key, self.population, self.sampling_fraction)
        _real(self.key, "significance", self.significance, "e.g. significance = 0.01")
        if not 0 < self.significance < 1:
            raise BlendinError(f"{self.key}: significance must be in (0, 1), got "
                               f"{self.significance!r}", fix="e.g. significance = 0.01")

    def params(self) -> dict:
        if self.needs_population:
            return {"k": self.k, "population": self.population}
        params: dict = {"k": self.k, "estimator": self.estimator}
        if self.population is not None:
            params["population"] = self.population
        else:
            params["sampling_fraction"] = self.sampling_fraction
        params["significance"] = self.significance
        return params

    def validate(self, n_records: int, domains: Mapping[str, SensitiveDomain]) -> None:
        super().validate(n_records, domains)
        if self.needs_population:
            return
        _population_holds(self.key, self.population, n_records)
        self._records = int(n_records)

    def derived(self) -> int:
        """The least class size that meets the model (needs the table's size: validate)."""
        if self._records is None:
            raise BlendinError(f"{self.key}: the table's size is not known yet",
                               fix="validate the model against the table first")
        n = self._records
        fraction = (n / float(self.population) if self.population is not None
                    else float(self.sampling_fraction))
        return max(1, min(derived_k(self.k, fraction, self.significance, self.estimator), n))

    def holds(self, classes: Classes) -> np.ndarray:
        if self.needs_population:
            return self.people(classes) >= self.k
        return np.asarray(classes.sizes) >= self.derived()

    def per_class(self, classes: Classes) -> np.ndarray:
        if self.needs_population:
            return self.people(classes)
        return np.asarray(classes.sizes, dtype=float)
