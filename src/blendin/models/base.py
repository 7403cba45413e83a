"""The base of every privacy model, and the parameter checks they share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from numbers import Real

import numpy as np

from blendin.errors import BlendinError, preview
from blendin.frequency import Classes, SensitiveDomain

#: absolute slack when comparing a computed figure with its threshold (entropy, distance),
#: so that exact cases such as entropy == log(l) are not lost to rounding
TOLERANCE = 1e-9
#: relative slack for the strict inequality of recursive (c, l)-diversity
RELATIVE_TOLERANCE = 1e-12
#: the least slack of :func:`at_most` (a bound of 0)
FLOOR_TOLERANCE = 1e-15


def at_most(figures, bound: float):
    """``figures <= bound`` up to rounding: a slack of ``RELATIVE_TOLERANCE`` of the bound.

    The figures so bounded are shares of counts (risk, uniques, distances between
    distributions): a figure one record over its bound is over it by about 1 / records,
    which an absolute slack of 1e-9 would pass from 10^6-10^8 records on, while the
    rounding of a share is near 1e-16 of it.

    >>> at_most(2001 / 2000999, 0.001), at_most(2000 / 2000000, 0.001)
    (False, True)
    """
    return figures <= bound + RELATIVE_TOLERANCE * abs(bound) + FLOOR_TOLERANCE


def at_least(figures, bound: float):
    """``figures >= bound`` up to rounding, as :func:`at_most`."""
    return figures >= bound - RELATIVE_TOLERANCE * abs(bound) - FLOOR_TOLERANCE


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
    #: the model bounds the whole release (average risk, uniqueness), not each class: it is
    #: tested last, on the classes the other models keep, and ``holds`` marks the classes
    #: whose suppression makes the release meet it
    release: bool = False
    #: Mondrian (local recoding, group by group) can enforce the model; if not, why not
    local_recoding: bool = True
    local_recoding_note: str = ""
    #: ``holds`` needs the people of a population in each class (``Classes.population``)
    needs_population: bool = False
    #: each class is compared with the attribute's distribution over every record of the
    #: input (``SensitiveDomain.overall``; docs/spec.md)
    compares_distribution: bool = False

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

    def check_spec(self, spec) -> None:  # noqa: B027 (most models go with any spec)
        """Raise BlendinError where the rest of the spec (its other models, its limits)
        rules the model out, whatever the data."""

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


def _share(model: str, name: str, value: object, example: str, *, zero: bool = False) -> float:
    """A share in (0, 1] (or [0, 1] with ``zero``) for parameter ``name``."""
    fix = f"write it as a share, e.g. {name} = {example}"
    _real(model, name, value, fix)
    low_ok = value >= 0 if zero else value > 0
    if not low_ok or value > 1:
        interval = "[0, 1]" if zero else "(0, 1]"
        raise BlendinError(f"{model}: {name} must be in {interval}, got {value!r}", fix=fix)
    return float(value)


def _population(model: str, population: object, sampling_fraction: object) -> None:
    """Exactly one of a population size (>= 1) and a sampling fraction in (0, 1]."""
    if (population is None) == (sampling_fraction is None):
        raise BlendinError(
            f"{model}: give the population size or the sampling fraction (one of them)",
            fix="add population = 3000000 (people) or sampling_fraction = 0.01")
    if population is not None:
        _real(model, "population", population, "give the number of people")
        if population < 1:
            raise BlendinError(f"{model}: population must be >= 1, got {population!r}",
                               fix="give the number of people")
    else:
        _share(model, "sampling_fraction", sampling_fraction, "0.01")


def _population_holds(model: str, population: float | None, n_records: int) -> None:
    """A population is at least the table drawn from it."""
    if population is not None and population < n_records:
        raise BlendinError(
            f"{model}: the population ({population:g}) is smaller than the table "
            f"({n_records} records)",
            fix=f"give the size of the population the table was drawn from (>= {n_records})")


def _attribute(model: str, attribute: object) -> str:
    if not isinstance(attribute, str) or not attribute:
        raise BlendinError(f"{model}: attribute must be a column name, got {attribute!r}",
                           fix="name the sensitive column, e.g. attribute = \"diagnosis\"")
    return attribute

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
