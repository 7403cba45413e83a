"""Population uniqueness from a sample's class sizes: the estimators of Zayatz (1991),
Pitman (Hoshino 2001) and the shifted negative binomial (Chen & Keller-McNulty 1998), and
Dankar et al.'s (2012) choice among them by the sampling fraction.

Everything is a function of the class-size spectrum (how many classes have each size):
the risk report and the population-uniqueness model both estimate from it.

>>> population_uniqueness(np.array([1, 1, 2, 5]), 1000).model
'pitman'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from blendin.errors import BlendinError

#: Dankar et al.: below this sampling fraction Pitman's model is preferred
DANKAR_PITMAN_LIMIT = 0.1


@dataclass(frozen=True)
class PopulationUniqueness:
    """Estimated number of population uniques per model (NaN where a model has no
    solution) and the one Dankar's rule picks (``model``)."""

    population: float
    sampling_fraction: float
    zayatz: float
    pitman: float
    snb: float
    dankar: float
    model: str

    @property
    def share(self) -> float:
        """Estimated share of the population that is unique (Dankar's estimate)."""
        return self.dankar / self.population if self.population else 0.0

#: each estimator as it is written in prose
ESTIMATOR_NAMES = {"zayatz": "Zayatz", "pitman": "Pitman", "snb": "SNB"}


def spectrum(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct class sizes ``j`` and how many classes have each size (``f_j``).

    >>> [a.tolist() for a in spectrum(np.array([1, 1, 3]))]
    [[1, 3], [2, 1]]
    """
    return np.unique(np.asarray(sizes, dtype=np.int64), return_counts=True)


def population_uniqueness(sizes: np.ndarray, population: float) -> PopulationUniqueness:
    """Estimated population uniques by Zayatz, Pitman and SNB, and Dankar's choice.

    ``sizes`` are the sample's class sizes, ``population`` the size of the population it
    was drawn from.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    fraction = n / population
    if not (sizes == 1).any():
        return PopulationUniqueness(population, fraction, 0.0, 0.0, 0.0, 0.0, "none")
    j, f = spectrum(sizes)
    zayatz = solved(zayatz_uniques, j, f, n, population)
    pitman = solved(pitman_uniques, j, f, n, population)
    snb = solved(snb_uniques, j, f, n, population)
    dankar, model = dankar_choice(fraction, zayatz, pitman, snb)
    return PopulationUniqueness(population, fraction, zayatz, pitman, snb, dankar, model)


def solved(estimator, *args) -> float:
    """The estimate, or NaN where the model has no solution for this spectrum."""
    try:
        with np.errstate(all="ignore"):
            value = float(estimator(*args))
    except (ArithmeticError, ValueError, np.linalg.LinAlgError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def dankar_choice(fraction: float, zayatz: float, pitman: float, snb: float
                  ) -> tuple[float, str]:
    """Dankar et al.'s rule: Pitman for small samples (falling back to Zayatz), otherwise
    the smaller of Zayatz and SNB (Zayatz when SNB has no solution).

    >>> dankar_choice(0.05, 10.0, 12.0, 11.0), dankar_choice(0.5, 10.0, 12.0, 9.0)
    ((12.0, 'pitman'), (9.0, 'snb'))
    """
    def valid(x: float) -> bool:
        return not math.isnan(x) and x > 0

    if fraction <= DANKAR_PITMAN_LIMIT:
        return (pitman, "pitman") if valid(pitman) else (zayatz, "zayatz")
    if valid(snb) and snb <= zayatz:
        return snb, "snb"
    return zayatz, "zayatz"


def _log_comb(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    lg = np.vectorize(math.lgamma, otypes=[float])
    a, b = np.asarray(a, float), np.asarray(b, float)
    return lg(a + 1) - lg(b + 1) - lg(a - b + 1)


def zayatz_uniques(j: np.ndarray, f: np.ndarray, n: int, population: float) -> float:
    """Zayatz (1991): the chance that a sample unique is a population unique, with the
    sample's class sizes standing in for the population's, times the sample uniques, over
    the sampling fraction.

    ``P(one of a class of j drawn)`` is hypergeometric: ``j C(N-j, n-1) / C(N, n)``.
    """
    N = float(population)
    j = np.asarray(j, float)
    f = np.asarray(f, float)
    possible = N - j >= n - 1
    log_p = np.full(len(j), -np.inf)
    jj = j[possible]
    log_p[possible] = np.log(jj) + _log_comb(N - jj, n - 1) - _log_comb(N, n)
    p_one = np.exp(log_p)
    total = float((f * p_one).sum())
    uniques = float(f[j == 1].sum())
    if total <= 0:
        return math.nan
    conditional = uniques * float(p_one[j == 1].sum()) / total
    # at most N (uniques <= n); min() only absorbs rounding in the log-gamma terms
    return min(conditional * uniques / (n / N), N)


def _pitman_equations(theta: float, alpha: float, u: int, n: int, j: np.ndarray,
                      f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Score of the Pitman sampling formula's log-likelihood and its Jacobian."""
    i_u = np.arange(1, u, dtype=float)
    i_n = np.arange(1, n, dtype=float)
    a = 1.0 / (theta + i_u * alpha)
    b = 1.0 / (theta + i_n)
    steps = np.arange(1, int(j.max()), dtype=float)
    inv = np.concatenate([[0.0], np.cumsum(1.0 / (steps - alpha))])
    inv2 = np.concatenate([[0.0], np.cumsum(1.0 / (steps - alpha) ** 2)])
    score = np.array([
        a.sum() - b.sum(),
        (i_u * a).sum() - (f * inv[j - 1]).sum(),
    ])
    jac = np.array([
        [-(a**2).sum() + (b**2).sum(), -(i_u * a**2).sum()],
        [-(i_u * a**2).sum(), -(i_u**2 * a**2).sum() - (f * inv2[j - 1]).sum()],
    ])
    return score, jac


def pitman_parameters(j: np.ndarray, f: np.ndarray, n: int) -> tuple[float, float]:
    """Maximum-likelihood ``(theta, alpha)`` of Pitman's sampling formula (Hoshino 2001) over
    ``0 <= alpha < 1``: Newton's method from a moment-based start, else the edge
    ``alpha = 0`` (Ewens' formula) when the likelihood falls from there; NaN when neither
    (e.g. no class of two or more: ``theta`` runs off to infinity).

    >>> theta, alpha = pitman_parameters(np.array([1, 2, 3]), np.array([3, 3, 1]), 12)
    >>> round(theta, 4), alpha
    (6.1545, 0.0)
    """
    j = np.asarray(j, dtype=np.int64)
    f = np.asarray(f, dtype=float)
    theta, alpha = _pitman_newton(j, f, n)
    return (theta, alpha) if not math.isnan(theta) else _ewens_edge(j, f, n)


def _ewens_edge(j: np.ndarray, f: np.ndarray, n: int) -> tuple[float, float]:
    """``(theta, 0)`` maximizing the likelihood at ``alpha = 0``, if the likelihood does not
    rise into ``alpha > 0`` from there; else NaN (an inner maximum Newton missed)."""
    u = int(f.sum())
    if not 2 <= u < n:
        return math.nan, math.nan
    i = np.arange(1, n, dtype=float)
    # the theta score at alpha = 0, (u-1)/theta - sum 1/(theta+i), has one root: bisect log theta
    lo, hi = math.log(1e-12), math.log(1e18)
    for _ in range(64):  # the bracket shrinks to 1e-17 in log theta
        mid = (lo + hi) / 2
        if (u - 1) / math.exp(mid) > (1.0 / (math.exp(mid) + i)).sum():
            lo = mid
        else:
            hi = mid
    theta = math.exp((lo + hi) / 2)
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, int(j.max()), dtype=float))])
    alpha_slope = u * (u - 1) / 2 / theta - float((f * harmonic[j - 1]).sum())
    return (theta, 0.0) if alpha_slope <= 0 else (math.nan, math.nan)


def _pitman_newton(j: np.ndarray, f: np.ndarray, n: int) -> tuple[float, float]:
    """Newton's method on the score from a moment-based start; NaN when it does not
    converge inside ``0 <= alpha < 1``."""
    u = int(f.sum())
    c1 = float(f[j == 1].sum())
    c2 = float(f[j == 2].sum()) or 1.0
    c = c1 * (c1 - 1) / c2
    denominator = 2 * c1 * u + c1 * c - n * c
    theta = (n * u * c - c1 * (n - 1) * (2 * u + c)) / denominator if denominator else math.nan
    alpha = (theta * (c1 - n) + (n - 1) * c1) / (n * u)
    if not math.isfinite(theta) or not (0 < alpha < 1 and theta > -alpha):
        theta, alpha = 1.0, 0.5
    for _ in range(200):
        score, jac = _pitman_equations(theta, alpha, u, n, j, f)
        try:
            step = np.linalg.solve(jac, score)
        except np.linalg.LinAlgError:
            return math.nan, math.nan
        scale = 1.0
        while scale > 1e-6:  # stay where the likelihood is defined: 0 <= alpha < 1
            t, a = theta - scale * step[0], alpha - scale * step[1]
            if 0 <= a < 1 and t > -a:
                break
            scale /= 2
        else:
            return math.nan, math.nan
        theta, alpha = t, a
        if abs(step[0]) * scale < 1e-10 * max(1, abs(theta)) and abs(step[1]) * scale < 1e-12:
            return theta, alpha
    return math.nan, math.nan


def pitman_uniques(j: np.ndarray, f: np.ndarray, n: int, population: float) -> float:
    """Pitman's model: the expected population uniques (:func:`pitman_expected_uniques`)
    at the parameters fitted to the sample (Hoshino 2001); with ``alpha = 0`` that is Ewens'
    ``N theta / (theta + N - 1)``. NaN when the likelihood has no maximum."""
    theta, alpha = pitman_parameters(j, f, n)
    if math.isnan(theta) or alpha < 0:
        return math.nan
    value = pitman_expected_uniques(theta, alpha, population)
    return value if 0 <= value <= population else math.nan


def pitman_expected_uniques(theta: float, alpha: float, population: float) -> float:
    """Expected number of classes of size 1 when ``population`` people are partitioned by
    Pitman's sampling formula: ``N (theta+alpha)_(N-1) / (theta+1)_(N-1)`` (rising
    factorials).

    Hoshino (2001) and ARX use its limit ``Gamma(theta+1) / Gamma(theta+alpha) * N**alpha``,
    which overstates the uniques by about ``(1 + theta/N)**(1-alpha)``: little when the
    population dwarfs ``theta``, but 30% in simulations where the fitted ``alpha`` is small
    and ``theta`` of the order of ``N``.

    >>> round(pitman_expected_uniques(0.5, 0.0, 20), 6)  # Ewens: N theta / (theta + N - 1)
    0.512821
    """
    n = float(population)
    return math.exp(math.log(n) + math.lgamma(theta + 1) - math.lgamma(theta + alpha)
                    + math.lgamma(theta + alpha + n - 1) - math.lgamma(theta + n))


def distinct_classes_estimate(j: np.ndarray, f: np.ndarray, fraction: float) -> float:
    """Number of non-empty population classes: Shlosser's estimator as modified by Haas &
    Stokes (1998).

    Every sum weighs a class size ``j`` by its count ``f_j``, the second one included:
    ``f_j (1-q)^j ((1+q)^j - 1)``. (ARX subtracts 1 once per listed size instead, so its
    estimate changes when a size with no class is listed.)
    """
    j = np.asarray(j, float)
    f = np.asarray(f, float)
    q = fraction
    f1 = float(f[j == 1].sum())
    d = float(f.sum())
    top1 = (j * q**2 * (1 - q**2) ** (j - 1) * f).sum()
    bottom1 = (((1 - q**2) ** j - (1 - q) ** j) * f).sum()  # (1-q)^j ((1+q)^j - 1)
    top2 = ((1 - q) ** j * f).sum()
    bottom2 = (j * q * (1 - q) ** (j - 1) * f).sum()
    if bottom1 <= 0 or bottom2 <= 0:
        return d
    return d + f1 * (top1 / bottom1) * (top2 / bottom2) ** 2


def snb_probabilities(alpha: np.ndarray, beta: np.ndarray, fraction: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """P(a population class shows 1, resp. 2, records in the sample) when its size is
    ``1 + NegBin(alpha, beta)`` and records are sampled with probability ``fraction``.

    Both come from the probability generating function of the sampled count,
    ``s' (beta / (1 - (1-beta) s'))**alpha`` with ``s' = 1 - q + q s``, differentiated at
    ``s = 0``: with ``d = (1-q)(1-beta)``, ``P(2) = q^2/2 alpha (1-beta) beta^alpha
    (2 - (1-alpha) d) / (1-d)^(alpha+2)`` (ARX's current code multiplies by that power).
    """
    d = (1 - fraction) * (1 - beta)
    h = (beta / (1 - d)) ** alpha
    p1 = fraction * h * (1 + alpha * d / (1 - d))
    p2 = fraction**2 / 2 * alpha * (1 - beta) * h * (2 - (1 - alpha) * d) / (1 - d) ** 2
    return p1, p2


def snb_uniques(j: np.ndarray, f: np.ndarray, n: int, population: float) -> float:
    """Shifted negative binomial model (Chen & Keller-McNulty 1998): fit ``alpha, beta`` so
    the expected numbers of classes of size 1 and 2 match the sample's; the population has
    ``K * beta**alpha`` uniques, ``K`` the estimated number of non-empty classes."""
    j = np.asarray(j, dtype=np.int64)
    f = np.asarray(f, dtype=float)
    c1, c2 = float(f[j == 1].sum()), float(f[j == 2].sum())
    if c1 == 0 or c2 == 0:
        return math.nan
    fraction = n / population
    k = distinct_classes_estimate(j, f, fraction)

    def residual(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        alpha, beta = np.exp(x), 1 / (1 + np.exp(-y))
        p1, p2 = snb_probabilities(alpha, beta, fraction)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(k * p1 / c1), np.log(k * p2 / c2)

    # coarse grid for a start, then Newton on the log-residuals
    gx, gy = np.meshgrid(np.linspace(-8, 6, 57), np.linspace(-14, 10, 97))
    r1, r2 = residual(gx, gy)
    norm = np.where(np.isfinite(r1 + r2), r1**2 + r2**2, np.inf)
    best = np.unravel_index(np.argmin(norm), norm.shape)
    x, y = float(gx[best]), float(gy[best])
    eps = 1e-7
    for _ in range(100):
        f1, f2 = residual(np.array(x), np.array(y))
        if not np.isfinite(f1 + f2):
            return math.nan
        if abs(f1) < 1e-12 and abs(f2) < 1e-12:
            break
        d1x, d2x = residual(np.array(x + eps), np.array(y))
        d1y, d2y = residual(np.array(x), np.array(y + eps))
        jac = np.array([[d1x - f1, d1y - f1], [d2x - f2, d2y - f2]]) / eps
        try:
            step = np.linalg.solve(jac, [f1, f2])
        except np.linalg.LinAlgError:
            return math.nan
        x, y = x - float(np.clip(step[0], -2, 2)), y - float(np.clip(step[1], -2, 2))
    f1, f2 = residual(np.array(x), np.array(y))
    if not (abs(f1) < 1e-6 and abs(f2) < 1e-6):
        return math.nan
    alpha, beta = math.exp(x), 1 / (1 + math.exp(-y))
    value = float(k * beta**alpha)
    return value if 0 <= value <= population else math.nan


# -- individual and household risk with sampling weights (sdcMicro) -------------------------


def individual_risk(fk: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Each class's individual re-identification risk, as sdcMicro estimates it
    (Benedetti-Franconi, its ``approx`` method): ``fk`` records in the sample standing for
    ``Fk`` (the sum of their sampling ``weights``) in the population, ``pk = fk / Fk``;

    - ``fk = 1``: ``pk / (1 - pk) · log(1 / pk)``,
    - ``fk = 2``: ``pk / (1 - pk) - (pk / (1 - pk))² · log(1 / pk)``,
    - ``fk > 2``: ``pk / (fk - (1 - pk))``,
    - ``fk = Fk`` (the class is the whole population): ``1 / fk``.

    Without weights every record stands for itself: ``1 / fk``.

    >>> individual_risk(np.array([1, 2, 3]), np.array([4.0, 4.0, 6.0])).round(6).tolist()
    [0.462098, 0.306853, 0.2]
    """
    fk = np.asarray(fk, dtype=float)
    if weights is None:
        return 1.0 / fk
    weights = np.asarray(weights, dtype=float)
    pk = fk / weights
    # written in the people beyond the sample, e = Fk - fk (odds = fk / e, log(1 / pk) =
    # log1p(e / fk)): the two terms of fk = 2 cancel as e goes to 0, and computed as
    # written they gave 1.5 for weights summing to 2 + 1e-9 (the risk tends to 1 / fk)
    extra = np.maximum(weights - fk, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        single = np.log1p(extra) / extra
        pair = _less_its_log1p(extra / 2) / (extra / 2) ** 2
        risk = np.where(fk == 1, single, np.where(fk == 2, pair, pk / (fk - (1.0 - pk))))
    return np.where(extra == 0, 1.0 / fk, risk)


def _less_its_log1p(x: np.ndarray) -> np.ndarray:
    """``x - log1p(x)``, to full precision also where ``x`` is small (its series there:
    the difference of the two loses every digit as ``x`` goes to 0).

    >>> round(float(_less_its_log1p(np.array([1e-9]))[0] / 1e-18), 9)  # x²/2 - x³/3 ...
    0.5
    """
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < 1e-2
    series = sum((-1) ** n * x ** n / n for n in range(2, 10))  # x²/2 - x³/3 + ...
    with np.errstate(invalid="ignore"):
        return np.where(small, series, x - np.log1p(x))


def sampling_weights(column, name: str, option: str = "--weights") -> np.ndarray:
    """A column of sampling weights (any array-like of text or numbers) as numbers of 1 or
    more (a record stands for itself and others like it), or an error naming the first
    value that is not and the ``option`` that named the column.

    >>> sampling_weights(np.array(["2", "1.5"]), "w").tolist()
    [2.0, 1.5]
    """
    values = column.to_numpy(zero_copy_only=False) if hasattr(column, "to_numpy") else column
    texts, at = np.unique(np.asarray(values).astype(str), return_inverse=True)
    numbers = np.array([_number(v) for v in texts], dtype=float)  # each distinct text once
    bad = [str(v) for v, x in zip(texts, numbers) if not np.isfinite(x) or x < 1]
    if bad:
        raise BlendinError(f"the weights column {name!r} holds {bad[0]!r}: a sampling weight "
                           "is the number of people a record stands for (1 or more)",
                           fix=f"give {option} the column of sampling weights, or leave it out")
    return numbers[at.reshape(-1)]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")
