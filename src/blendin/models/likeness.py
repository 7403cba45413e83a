"""Likeness of each class's sensitive distribution to the whole table's: β-likeness
(Cao & Karras, "Publishing microdata with a robust privacy guarantee", VLDB 2012) and
δ-disclosure privacy (Brickell & Shmatikov, KDD 2008).

With ``q_s`` the share of sensitive value s in the whole table (suppressed records
included, as for t-closeness) and ``p_s`` its share in a class, for every value present in
the class:

- basic β-likeness: ``(p_s - q_s) / q_s <= β`` (the relative gain of the attacker's belief);
- enhanced β-likeness: ``(p_s - q_s) / q_s <= min(β, -ln q_s)``, which keeps rare values
  from being revealed outright;
- δ-disclosure privacy: ``|log2(p_s / q_s)| < δ`` (base 2 and strict, as ARX).

β-likeness is monotone without suppression: the bound is linear in ``p``, and a merged
class's shares mix its parts'. Not with suppression (a far class merged into a close one
can fail). δ-disclosure is not monotone at all: a value absent from one part is not
checked there, yet lowers its share in the merged class. ARX treats both the same way.
"""

from __future__ import annotations

import numpy as np

from blendin.errors import BlendinError
from blendin.frequency import Classes
from blendin.models.base import _attribute, _real, _SensitiveModel, at_most

LIKENESS_VARIANTS = ("enhanced", "basic")


def _shares(model: _SensitiveModel, classes: Classes) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """(classes, values) shares in each class, the table's shares, and which are present."""
    hist = np.asarray(model.histogram(classes), dtype=float)
    overall = np.asarray(model.domain(classes).overall, dtype=float)
    q = overall / overall.sum() if overall.sum() else overall
    total = hist.sum(axis=1, keepdims=True)
    p = np.divide(hist, total, out=np.zeros_like(hist), where=total > 0)
    return p, q, hist > 0


def _positive(model: str, name: str, value: object, example: str) -> None:
    fix = f"set {name} > 0, e.g. {name} = {example}"
    _real(model, name, value, fix)
    if value <= 0:
        raise BlendinError(f"{model}: {name} must be > 0, got {value!r}", fix=fix)


class BetaLikeness(_SensitiveModel):
    """No sensitive value is much more frequent in a class than in the whole table (see the
    module docstring; ``variant`` ``"enhanced"`` or ``"basic"``). The figure is the largest
    relative gain ``(p - q) / q`` of a class.

    >>> import numpy as np
    >>> from blendin.frequency import Classes, SensitiveDomain
    >>> dx = SensitiveDomain("dx", np.array(["flu", "hiv"], dtype=object), np.array([8, 2]))
    >>> classes = Classes(np.array([5, 5]), {"dx": np.array([[5, 0], [3, 2]])}, {"dx": dx})
    >>> BetaLikeness("dx", 1.0, "basic").holds(classes).tolist()  # hiv: (0.4 - 0.2) / 0.2
    [True, True]
    >>> BetaLikeness("dx", 1.0).holds(classes).tolist()  # flu: 0.25 > -ln 0.8 = 0.22
    [False, True]
    >>> BetaLikeness("dx", 0.5).figure(classes)
    1.0
    """

    key = "beta-likeness"
    compares_distribution = True
    figure_name = "largest relative gain"
    larger_is_better = False
    monotone_with_suppression = False

    def __init__(self, attribute: str, beta: float, variant: str = "enhanced") -> None:
        self.attribute = attribute
        self.beta = beta
        self.variant = variant
        self._check()
        self.beta = float(beta)

    def _check(self) -> None:
        self.attribute = _attribute(self.key, self.attribute)
        _positive(self.key, "beta", self.beta, "3")
        if self.variant not in LIKENESS_VARIANTS:
            raise BlendinError(f"{self.key}: unknown variant {self.variant!r}",
                               fix=f"use one of {', '.join(map(repr, LIKENESS_VARIANTS))}")

    def gains(self, classes: Classes) -> np.ndarray:
        """(classes, values) relative gains (p - q) / q of the values present (else -inf)."""
        p, q, present = _shares(self, classes)
        safe_q = np.where(q > 0, q, 1.0)
        return np.where(present, (p - q) / safe_q, -np.inf)

    def holds(self, classes: Classes) -> np.ndarray:
        _, q, _ = _shares(self, classes)
        bound = np.full(len(q), self.beta)
        if self.variant == "enhanced":
            with np.errstate(divide="ignore"):
                bound = np.minimum(bound, -np.log(np.where(q > 0, q, 1.0)))
        return at_most(self.gains(classes), bound).all(axis=1)

    def per_class(self, classes: Classes) -> np.ndarray:
        gains = self.gains(classes)
        return gains.max(axis=1) if gains.shape[1] else np.zeros(len(gains))


class DeltaDisclosure(_SensitiveModel):
    """Every sensitive value present in a class has ``|log2(p / q)| < delta`` (module
    docstring). The figure is the largest ``|log2(p / q)|`` of a class.

    >>> import numpy as np
    >>> from blendin.frequency import Classes, SensitiveDomain
    >>> dx = SensitiveDomain("dx", np.array(["flu", "hiv"], dtype=object), np.array([6, 2]))
    >>> classes = Classes(np.array([4, 4]), {"dx": np.array([[4, 0], [2, 2]])}, {"dx": dx})
    >>> DeltaDisclosure("dx", 1.0).holds(classes).tolist()  # hiv: log2(0.5 / 0.25) = 1
    [True, False]
    >>> round(DeltaDisclosure("dx", 2.0).figure(classes), 4)
    1.0
    """

    key = "delta-disclosure"
    compares_distribution = True
    figure_name = "largest |log2(p / q)|"
    larger_is_better = False
    monotone = False
    monotone_with_suppression = False

    def __init__(self, attribute: str, delta: float) -> None:
        self.attribute = attribute
        self.delta = delta
        self._check()
        self.delta = float(delta)

    def _check(self) -> None:
        self.attribute = _attribute(self.key, self.attribute)
        _positive(self.key, "delta", self.delta, "2")

    def per_class(self, classes: Classes) -> np.ndarray:
        p, q, present = _shares(self, classes)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.abs(np.log2(np.where(present, p, 1.0) / np.where(q > 0, q, 1.0)))
        ratio = np.where(present, ratio, 0.0)
        return ratio.max(axis=1) if ratio.shape[1] else np.zeros(len(ratio))

    def holds(self, classes: Classes) -> np.ndarray:
        return self.per_class(classes) < self.delta
