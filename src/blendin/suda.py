"""Special uniques (SUDA2, Elliot et al.; sdcMicro's ``suda2``): how many small sets of key
values single a record out.

A **minimal sample unique** (MSU) of a record is a set of its key variables on which it is
alone in the table while on every smaller subset of that set it is not. A record with many
small MSUs is riskier than one unique only on all its keys. Its **SUDA score** sums, over its
MSUs, ``(M - size)!`` for ``M`` key variables (sdcMicro's default, "original scores"); the
**DIS-SUDA score** turns the scores into a probability of a correct match, with the share of
the population in the sample (``dis_fraction``) as sdcMicro does:

    Dis = U·f / (U·f + P·(1 - f)),   Q = 1 + (8 - M) / 20,
    DIS = 1 / (1 + (U / Dis - U) / (score^Q · Σ score^-Q))

where ``U`` counts the records unique on all keys and ``P`` the records in pairs of equal
keys. Records with equal keys have equal scores, so everything is computed on the distinct
tuples with their counts: a subset's counts are one hash and one ``bincount`` each, over
``2^M - 1`` subsets (``M`` up to 16).

>>> import numpy as np
>>> codes = np.array([[0, 0], [0, 1], [1, 1], [1, 1]])
>>> score, dis = suda2(codes, np.array([1, 1, 1, 1]))
>>> score.tolist()
[1.0, 1.0, 0.0, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from math import factorial

import numpy as np

from blendin.errors import BlendinError

#: key variables SUDA2 takes at most (2^16 subsets)
MAX_KEYS = 16
#: distinct tuples × subsets SUDA2 keeps a flag for at most (2 GiB)
MAX_CELLS = 2 * 2**30
#: sdcMicro's default share of the population in the sample, for the DIS score
DIS_FRACTION = 0.01
#: the bands sdcMicro reports DIS scores in: 0, then (0, 0.1], ..., (0.6, 0.7], above 0.7
DIS_BANDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


def suda2(codes: np.ndarray, counts: np.ndarray, dis_fraction: float = DIS_FRACTION
          ) -> tuple[np.ndarray, np.ndarray]:
    """The SUDA and DIS-SUDA scores of each distinct tuple (``codes``: distinct tuples ×
    keys, any integer codes; ``counts``: the records of each). A tuple held by two records
    or more has no MSU (score 0)."""
    codes = np.asarray(codes, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    tuples, m = codes.shape
    if not 1 <= m <= MAX_KEYS:
        raise BlendinError(f"SUDA2 takes 1 to {MAX_KEYS} key variables, got {m}",
                           fix=f"measure special uniques on at most {MAX_KEYS} keys")
    if tuples * (1 << m) > MAX_CELLS:
        raise BlendinError(f"SUDA2 over {m} keys and {tuples:,} distinct tuples needs more "
                           "memory than it takes", fix="measure special uniques on fewer "
                           "key variables (sdcMicro's limit is similar)")
    cards = codes.max(axis=0, initial=0) + 1 if tuples else np.ones(m, np.int64)
    unique = np.zeros((tuples, 1 << m), dtype=bool)
    score = np.zeros(tuples)
    for mask in range(1, 1 << m):
        found = _subset_key(codes, cards, mask)
        alone = np.bincount(found, weights=counts)[found] == 1
        unique[:, mask] = alone
        minimal = alone.copy()
        for j in range(m):
            if mask >> j & 1 and mask != 1 << j:
                minimal &= ~unique[:, mask & ~(1 << j)]
        score += minimal * factorial(m - bin(mask).count("1"))
    return score, _dis(score, counts, unique[:, -1] if tuples else unique[:, 0], m,
                       dis_fraction)


def _subset_key(codes: np.ndarray, cards: np.ndarray, mask: int) -> np.ndarray:
    """Dense codes 0..g-1 of the tuples' values on the key variables in ``mask`` (mixed
    radix, made dense again before it could overflow)."""
    import pandas as pd  # a hash, not a sort: loaded when special uniques are asked for

    key = None
    for j in range(codes.shape[1]):
        if not mask >> j & 1:
            continue
        if key is None:
            key = codes[:, j]
            continue
        if int(key.max(initial=0)) + 1 > (1 << 62) // int(cards[j]):
            key = pd.factorize(key)[0].astype(np.int64)
        key = key * cards[j] + codes[:, j]
    return pd.factorize(key)[0]


def _dis(score: np.ndarray, counts: np.ndarray, unique: np.ndarray, m: int,
         fraction: float) -> np.ndarray:
    """sdcMicro's DIS-SUDA score, in its single-precision steps where it takes them."""
    f32 = np.float32
    uniques = int(counts[unique].sum())
    if not uniques:  # no record is unique on all keys: none has an MSU
        return np.zeros(len(score))
    pairs = 2 * int((counts == 2).sum())
    f = f32(fraction)
    dis = f32(f32(uniques) * f / (f32(uniques) * f + f32(pairs) * (f32(1) - f)))
    q = float(f32(1) + (f32(8) - f32(m)) / f32(20))
    out = np.zeros(len(score))
    scored = score > 0
    if not scored.any() or dis == 0:
        return out
    adjust = float((counts[scored] / score[scored] ** q).sum())
    gap = float(f32(f32(uniques) / dis) - f32(uniques))
    out[scored] = 1.0 / (1.0 + gap / (score[scored] ** q * adjust))
    return out


@dataclass(frozen=True)
class SpecialUniques:
    """What SUDA2 found: the records with an MSU, the scores' sum and highest, and how
    many records fall in each DIS-SUDA band (sdcMicro's: 0, (0, 0.1], ..., above 0.7)."""

    records_with_msu: int
    score_sum: float
    score_max: float
    dis_sum: float
    dis_max: float
    dis_fraction: float
    bands: dict[str, int]

    @classmethod
    def of(cls, score: np.ndarray, dis: np.ndarray, counts: np.ndarray,
           fraction: float) -> SpecialUniques:
        """The summary of per-tuple ``score`` and ``dis`` held by ``counts`` records."""
        edges = [*DIS_BANDS, np.inf]
        bands = {"0": int(counts[dis == 0].sum())}
        for low, high in zip(edges[:-1], edges[1:]):
            name = f"> {low:g}" if np.isinf(high) else f"({low:g}, {high:g}]"
            bands[name] = int(counts[(dis > low) & (dis <= high)].sum())
        return cls(int(counts[score > 0].sum()), float((counts * score).sum()),
                   float(score.max(initial=0)), float((counts * dis).sum()),
                   float(dis.max(initial=0)), fraction, bands)
