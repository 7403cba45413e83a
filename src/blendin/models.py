"""Privacy models: vectorized predicates over equivalence classes.

Each model answers, for every class at once, whether the class satisfies it, and says
whether it is monotone under generalization (with and without suppression), so a search
prunes only where that is proven.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

import numpy as np

from blendin.errors import BlendinError
from blendin.frequency import Classes, SensitiveDomain


class PrivacyModel(ABC):
    """A privacy model. Subclasses set ``key`` (the TOML name) and the monotonicity flags.

    ``holds(classes)`` returns one bool per class; ``figure(classes)`` the model's own
    figure over the given classes (smallest k, smallest l, largest distance), for reports.
    """

    key: str = ""
    attribute: str | None = None
    #: if a node satisfies the model, so does every generalization of it (no suppression)
    monotone: bool = True
    #: the same when records of violating classes are suppressed within a limit
    monotone_with_suppression: bool = True
    #: the figure is better when larger (k, l) or when smaller (t)
    figure_name: str = ""

    @abstractmethod
    def holds(self, classes: Classes) -> np.ndarray:
        """One bool per class."""

    @abstractmethod
    def figure(self, classes: Classes) -> float:
        """The model's figure over the classes (nan when there are none)."""

    def validate(self, n_records: int, domains: Mapping[str, SensitiveDomain]) -> None:
        """Raise BlendinError when the model cannot be met by a table of this shape."""
        if self.attribute is not None and self.attribute not in domains:
            raise BlendinError(
                f"{self.key} names attribute {self.attribute!r}, which is not sensitive",
                fix=f"add {self.attribute!r} to the sensitive attributes",
            )

    def to_dict(self) -> dict:
        """The TOML ``[[privacy]]`` table of this model."""
        params = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        return {"model": self.key, **params}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(vars(self).items()))))


class KAnonymity(PrivacyModel):
    """Every class holds at least ``k`` records (Sweeney 2002): ``|E| >= k``.

    >>> import numpy as np
    >>> from blendin.frequency import Classes
    >>> KAnonymity(2).holds(Classes(np.array([1, 3]), {}, {})).tolist()
    [False, True]
    """

    key = "k-anonymity"
    figure_name = "smallest class"

    def __init__(self, k: int) -> None:
        if not isinstance(k, int | np.integer) or isinstance(k, bool) or k < 1:
            raise BlendinError(f"k-anonymity: k must be a whole number >= 1, got {k!r}",
                               fix="set k = 2 or more")
        self.k = int(k)

    def holds(self, classes: Classes) -> np.ndarray:
        return classes.sizes >= self.k

    def figure(self, classes: Classes) -> float:
        return float(classes.sizes.min()) if len(classes) else float("nan")

    def validate(self, n_records: int, domains: Mapping[str, SensitiveDomain]) -> None:
        if self.k > n_records:
            raise BlendinError(
                f"k-anonymity: k = {self.k} is larger than the table ({n_records} records)",
                fix=f"choose k <= {n_records}",
            )
