"""PRAM (post-randomization): each value of a categorical column is replaced by a value
drawn from its row of a transition matrix, so that no released value can be trusted alone,
while the column's distribution is kept in expectation.

The matrix is given, or made *invariant* as sdcMicro's ``pram`` makes it: a matrix P keeps
each value with a probability drawn uniformly between ``pd`` and 1 and moves it to each
other value alike; Q is its reverse for the column's distribution p (``Q[k, j] = P[j, k]
p[j] / Σ_i p[i] P[i, k]``), and ``R = P Q`` leaves p unchanged (``p R = p``); the matrix
used is ``α R + (1 - α) I``. Draws are seeded: the same seed, the same release.

>>> values = np.array(["a"] * 60 + ["b"] * 30 + ["c"] * 10)
>>> pram = Pram(pd=0.8, seed=1)
>>> levels, matrix = pram.matrix(values)
>>> np.allclose(matrix.sum(axis=1), 1), np.allclose(pram.distribution(values) @ matrix,
...                                                 pram.distribution(values))
(True, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from blendin.errors import BlendinError


@dataclass(frozen=True)
class Pram:
    """PRAM of one column: invariant with retention ``pd`` and mix ``alpha`` (sdcMicro's
    defaults 0.8 and 0.5), or by the ``transition`` matrix given (value -> {value:
    probability}); ``seed`` fixes the draws."""

    pd: float = 0.8
    alpha: float = 0.5
    transition: Mapping[str, Mapping[str, float]] | None = None
    seed: int = 0
    #: only for the error messages: where the PRAM is written
    where: str = field(default="pram", compare=False)

    def __post_init__(self) -> None:
        for name, value in (("pd", self.pd), ("alpha", self.alpha)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    0 <= value <= 1):
                raise BlendinError(f"{self.where}: {name} must be a probability between 0 "
                                   f"and 1, got {value!r}",
                                   fix=f"write e.g. pram = {{ {name} = 0.8 }}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise BlendinError(f"{self.where}: seed must be a whole number, got "
                               f"{self.seed!r}", fix="write e.g. pram = { seed = 1 }")
        if self.transition is not None:
            self._check_transition()

    def _check_transition(self) -> None:
        rows = self.transition
        if not isinstance(rows, Mapping) or not all(isinstance(r, Mapping)
                                                    for r in rows.values()):
            raise BlendinError(f"{self.where}: the transition matrix must map each value to "
                               "a table of probabilities", fix='write e.g. transition = { a '
                               '= { a = 0.9, b = 0.1 }, b = { a = 0.2, b = 0.8 } }')
        for value, row in rows.items():
            unknown = sorted(set(row) - set(rows))
            if unknown:
                raise BlendinError(f"{self.where}: the row of {value!r} moves to "
                                   f"{unknown[0]!r}, which has no row of its own",
                                   fix=f"add a row for {unknown[0]!r}, or remove it")
            if any(isinstance(p, bool) or not isinstance(p, int | float) or p < 0
                   for p in row.values()) or abs(sum(row.values()) - 1) > 1e-9:
                raise BlendinError(f"{self.where}: the row of {value!r} must hold "
                                   f"probabilities that sum to 1, got {dict(row)!r}",
                                   fix=f"make the probabilities in the row of {value!r} "
                                       "add up to 1")

    @staticmethod
    def distribution(values: np.ndarray) -> np.ndarray:
        """The share of each distinct value (in sorted order)."""
        _, counts = np.unique(values, return_counts=True)
        return counts / counts.sum()

    def matrix(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The levels (sorted distinct values) and the transition matrix used on them."""
        levels = np.unique(values)
        if self.transition is not None:
            return self._given(levels)
        size = len(levels)
        if size < 2:
            return levels, np.ones((size, size))
        rng = np.random.default_rng(self.seed)
        keep = rng.uniform(self.pd, 1.0, size)
        p = np.full((size, size), 0.0) + ((1 - keep) / (size - 1))[:, None]
        np.fill_diagonal(p, keep)
        share = self.distribution(values)
        reverse = (p * share[:, None]).T / (share @ p)[:, None]
        invariant = p @ reverse
        return levels, self.alpha * invariant + (1 - self.alpha) * np.eye(size)

    def _given(self, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows = {str(k): v for k, v in self.transition.items()}
        missing = [str(v) for v in levels if str(v) not in rows]
        if missing:
            raise BlendinError(f"{self.where}: the transition matrix has no row for the "
                               f"value {missing[0]!r}",
                               fix=f"add a row for {missing[0]!r} to the transition matrix")
        names = sorted(rows)
        matrix = np.array([[float(rows[a].get(b, 0.0)) for b in names] for a in names])
        return np.array(names, dtype=levels.dtype if levels.dtype.kind == "U" else object
                        ), matrix

    def apply(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The values drawn anew (each from its value's row), the levels and the matrix.

        One uniform draw a record, looked up in its row's cumulative probabilities: a
        search, not a loop over records."""
        values = np.asarray(values)
        levels, matrix = self.matrix(values)
        if not len(values):
            return values, levels, matrix
        row = np.searchsorted(levels, values)
        cumulative = np.cumsum(matrix, axis=1)
        cumulative[:, -1] = 1.0  # rounding must not leave a draw past the last value
        draw = np.random.default_rng(self.seed + 1).uniform(size=len(values))
        # each record's draw against its own row: offset rows so one search covers all
        width = len(levels)
        flat = (cumulative + np.arange(width)[:, None]).reshape(-1)
        chosen = np.searchsorted(flat, row + draw, side="right") - row * width
        return levels[np.minimum(chosen, width - 1)], levels, matrix

    def to_toml(self) -> dict:
        out: dict = {}
        if self.transition is not None:
            out["transition"] = {str(k): dict(v) for k, v in self.transition.items()}
        else:
            out.update({"pd": self.pd, "alpha": self.alpha})
        if self.seed:
            out["seed"] = self.seed
        return {"pram": out}
