"""Individual risk as a release target: every record's re-identification risk, estimated
from the sampling weights as sdcMicro does, at most ``threshold``.

A class of ``fk`` records whose weights sum to ``Fk`` people (the population it stands
for) gives each of its records the Benedetti-Franconi estimate
(:func:`blendin.estimators.individual_risk`); without weights every record stands for
itself and the risk is ``1 / fk``. The weights are the spec's ``[attributes]
sampling_weights`` column; their sums are the class's *population*, counted at every node
as a population table's people are (``PopulationModel``).

Not monotone: merging two classes adds to both ``fk`` and ``Fk``, and the estimate need
not fall (a class of 2 standing for 4 people has risk 0.31, a class of 3 standing for 9,
0.33), so the searches prune nothing on it; a class is suppressed alone, the others keep
their risk.
"""

from __future__ import annotations

import numpy as np

from blendin.estimators import individual_risk
from blendin.frequency import Classes
from blendin.models.base import _share, at_most
from blendin.models.presence import PopulationModel


class IndividualRisk(PopulationModel):
    """Every record's individual risk at most ``threshold`` (module docstring); the figure
    is the highest.

    >>> model = IndividualRisk(0.3)
    >>> classes = Classes(np.array([1, 2, 3]), {}, {}, population=np.array([4.0, 4.0, 6.0]))
    >>> model.holds(classes).tolist(), round(model.figure(classes), 6)
    ([False, False, True], 0.462098)
    """

    key = "individual-risk"
    figure_name = "highest individual risk"
    larger_is_better = False
    monotone = False
    monotone_with_suppression = False
    local_recoding_note = ("it counts each class's sampling weights at a full-domain "
                           "generalization; use a full-domain algorithm")

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self._check()

    def _check(self) -> None:
        self.threshold = _share(self.key, "threshold", self.threshold, "0.05")

    def holds(self, classes: Classes) -> np.ndarray:
        return at_most(self.per_class(classes), self.threshold)

    def per_class(self, classes: Classes) -> np.ndarray:
        sizes = np.asarray(classes.sizes, dtype=float)
        people = self.people(classes)
        return individual_risk(sizes, np.maximum(people, sizes))
