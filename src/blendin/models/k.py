"""k-anonymity (Sweeney 2002)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from blendin.errors import Unmeetable
from blendin.frequency import Classes, SensitiveDomain
from blendin.models.base import PrivacyModel, _whole_number


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
            raise Unmeetable(
                f"k-anonymity: k = {self.k} is larger than the table ({n_records} records)",
                fix=f"choose k <= {n_records}",
            )
