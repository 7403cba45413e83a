"""Re-identification risk of a table: prosecutor, journalist and marketer (El Emam).

A record's class is the set of records that share its quasi-identifier values (released
labels count as values: ``30-39`` is one value). Under the **prosecutor** model the attacker
knows the target is in the table and picks one record of its class: the risk is ``1/f``
for a class of ``f`` records. Under the **journalist** model the attacker does not know the
target is in the table and matches against the population, where the class has ``F >= f``
people: ``1/F``. Without population figures ``F = f``; given the population size ``N``
(sampling fraction ``pi = n/N``) the expected population class size ``f/pi`` is used. The
**marketer** re-identifies as many records as possible: the expected share re-identified is
``sum(f/F)/n``.

Sample uniques are records alone in their class; with a population size, the number of
**population uniques** is estimated from the class-size spectrum with the models of Zayatz
(1991), Pitman (Hoshino 2001) and the shifted negative binomial (Chen & Keller-McNulty
1998), and Dankar et al. (2012) choose among them by the sampling fraction.

**Attribute disclosure**: a class whose records all carry the same sensitive value gives the
value away without re-identifying anyone (homogeneity attack).

Everything is computed from class sizes (one pyarrow group-by), never row by row.

>>> import pandas as pd
>>> df = pd.DataFrame({"zip": ["021**"] * 3 + ["022**"], "dx": ["flu", "flu", "gout", "flu"]})
>>> r = risk(df, ["zip"], sensitive=["dx"])
>>> r.prosecutor.highest, r.prosecutor.average, r.sample_uniques
(1.0, 0.5, 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError, preview
from blendin.frequency import as_text
from blendin.hierarchy.core import SUPPRESSED
from blendin.progress import Progress, file_pass

#: Dankar et al.: below this sampling fraction Pitman's model is preferred
DANKAR_PITMAN_LIMIT = 0.1


@dataclass(frozen=True)
class ModelRisk:
    """Risk under one attacker model: the highest and average record risk and the share of
    records whose risk is above the threshold."""

    highest: float
    average: float
    records_at_risk: float


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


@dataclass(frozen=True)
class Homogeneity:
    """Classes whose records all have the same value of ``attribute``, and their records."""

    attribute: str
    classes: int
    records: int
    share: float


@dataclass(frozen=True)
class RiskReport:
    """What :func:`risk` measures; ``lines()`` gives it as text, ``to_dict()`` as data."""

    quasi_identifiers: tuple[str, ...]
    records: int
    suppressed: int
    classes: int
    threshold: float
    prosecutor: ModelRisk
    journalist: ModelRisk
    marketer: float
    sample_uniques: int
    population: PopulationUniqueness | None = None
    homogeneity: dict[str, Homogeneity] = field(default_factory=dict)
    #: class sizes, one per class (what every figure is computed from)
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)

    def __repr__(self) -> str:
        from blendin.report.notebook import risk_summary

        return risk_summary(self).text()

    def _repr_html_(self) -> str:
        """The summary as a small HTML table, verdict first (shown by notebooks)."""
        from blendin.report.notebook import risk_summary

        return risk_summary(self).html()

    def to_dict(self) -> dict:
        out = asdict(self)
        out.pop("sizes")
        out["quasi_identifiers"] = list(self.quasi_identifiers)
        if self.population is not None:
            population = out["population"]
            population["share"] = self.population.share
            # a model without a solution is null in JSON (NaN is not JSON)
            out["population"] = {k: None if isinstance(v, float) and math.isnan(v) else v
                                 for k, v in population.items()}
        return out

    def lines(self) -> list[str]:
        """The report as aligned text lines."""
        n = max(self.records, 1)
        rows = [
            f"records            {self.records}"
            + (f" (+{self.suppressed} suppressed, not at risk)" if self.suppressed else ""),
            f"quasi-identifiers  {', '.join(self.quasi_identifiers)}",
            f"classes            {self.classes} (smallest {_smallest(self.sizes)})",
            f"sample uniques     {self.sample_uniques} ({_pct(self.sample_uniques / n)})",
            f"{'model':<12} {'highest':>8} {'average':>8} {'> ' + str(self.threshold):>8}",
        ]
        for name, model in (("prosecutor", self.prosecutor), ("journalist", self.journalist)):
            rows.append(f"{name:<12} {_pct(model.highest):>8} {_pct(model.average):>8} "
                        f"{_pct(model.records_at_risk):>8}")
        rows.append(f"{'marketer':<12} {'':>8} {_pct(self.marketer):>8}")
        if self.population is not None:
            p = self.population
            rows.append(
                f"population         {p.population:.0f} (sampling fraction "
                f"{p.sampling_fraction:.4g})")
            for name in ("zayatz", "pitman", "snb"):
                value = getattr(p, name)
                shown = "no solution" if math.isnan(value) else f"{value:.1f}"
                rows.append(f"  uniques ({name:<6})  {shown}")
            by = "no sample uniques" if p.model == "none" else f"by {p.model}"
            rows.append(f"  uniques (Dankar)  {p.dankar:.1f} = {_pct(p.share)} of the "
                        f"population ({by})")
        for h in self.homogeneity.values():
            rows.append(f"homogeneous on {h.attribute}: {h.classes} classes, {h.records} "
                        f"records ({_pct(h.share)})")
        return rows


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.1f}%"


def _smallest(sizes: np.ndarray) -> str:
    return str(int(sizes.min())) if len(sizes) else "-"


def risk(
    data,
    qi: Sequence[str] | str | None = None,
    *,
    spec=None,
    sensitive: Sequence[str] | str = (),
    threshold: float = 0.2,
    population: float | None = None,
    sampling_fraction: float | None = None,
    missing: str = "",
    progress: bool | Progress = False,
) -> RiskReport:
    """Re-identification risk of ``data`` (a raw table or a release) on quasi-identifiers.

    ``data`` is a pandas, polars or pyarrow table or a CSV/Parquet path. ``qi`` names the
    quasi-identifier columns (a list or ``"a,b,c"``), or ``spec`` gives
    them (and the sensitive attributes). ``population`` (or ``sampling_fraction``) turns on
    the population-uniqueness estimates. Records whose quasi-identifiers are all ``*`` are
    suppressed: they are counted apart and are not at risk. ``progress=True`` (or a
    :class:`~blendin.progress.Progress`) shows a bar while a file is read.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": ["30-39", "30-39", "40-49"], "sex": ["f", "f", "m"]})
    >>> r = risk(df, "age,sex", threshold=0.5)
    >>> r.classes, r.prosecutor.records_at_risk, round(r.marketer, 3)
    (2, 0.3333333333333333, 0.667)
    """
    from blendin.engines import engine_for

    names, sensitive = _columns(qi, spec, sensitive)
    if not 0 <= threshold <= 1:
        raise BlendinError(f"the risk threshold must be between 0 and 1, got {threshold}",
                           fix="pass e.g. --threshold 0.2 (a risk of 1 in 5)")
    engine = engine_for(data)  # a file is read in batches; a Spark DataFrame stays on Spark
    source = engine.source(data)
    _check_columns(source.columns, [*names, *sensitive])
    with file_pass(progress, f"reading {Path(source.name).name}") as told:
        tuples = engine.distinct(source, list(dict.fromkeys([*names, *sensitive])), missing,
                                 progress=told)
    sizes, distinct, suppressed = class_sizes_of_tuples(tuples, names, sensitive)
    n = int(sizes.sum())
    if n == 0:
        raise BlendinError("every record is suppressed: there is no risk to measure",
                           fix="measure the risk of a table with unsuppressed records")
    fraction = _sampling_fraction(n, population, sampling_fraction)
    prosecutor = _model_risk(sizes, sizes.astype(float), threshold)
    expected = sizes / fraction  # expected population class sizes under random sampling
    journalist = _model_risk(sizes, expected, threshold)
    report = RiskReport(
        quasi_identifiers=tuple(names),
        records=n,
        suppressed=suppressed,
        classes=len(sizes),
        threshold=threshold,
        prosecutor=prosecutor,
        journalist=journalist,
        marketer=float((sizes / expected).sum() / n),
        sample_uniques=int((sizes == 1).sum()),
        population=None if population is None and sampling_fraction is None else
        population_uniqueness(sizes, n / fraction),
        homogeneity={s: _homogeneity(s, sizes, distinct[s]) for s in sensitive},
        sizes=sizes,
    )
    return report


def _columns(qi, spec, sensitive) -> tuple[list[str], list[str]]:
    if isinstance(qi, str):
        qi = [c.strip() for c in qi.split(",") if c.strip()]
    if isinstance(sensitive, str):
        sensitive = [c.strip() for c in sensitive.split(",") if c.strip()]
    sensitive = list(sensitive)
    if qi is None and spec is not None:
        qi = list(spec.quasi_identifiers)
        sensitive = sensitive or list(spec.sensitive)
    if not qi:
        raise BlendinError("no quasi-identifiers to measure the risk on",
                           fix="name them (--qi zip,dob,sex) or give a spec (--spec s.toml)")
    return list(qi), [s for s in sensitive if s not in qi]


def _check_columns(columns: Sequence[str], wanted: Sequence[str]) -> None:
    missing = [c for c in wanted if c not in columns]
    if missing:
        raise BlendinError(
            f"the table has no column(s) {preview(missing)}",
            fix=f"use its columns: {preview(columns, 10)}",
        )


def class_sizes_of_tuples(
    tuples: pa.Table, qi: Sequence[str], sensitive: Sequence[str] = ()
) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    """:func:`class_sizes` from an engine's distinct text tuples with their counts (column
    ``COUNT``), so that the rows themselves are never held.

    >>> from blendin.frequency import COUNT
    >>> t = pa.table({"a": ["1", "2", "*"], "s": ["x", "y", "x"], COUNT: [2, 1, 1]})
    >>> sizes, distinct, gone = class_sizes_of_tuples(t, ["a"], ["s"])
    >>> sorted(sizes.tolist()), sorted(distinct["s"].tolist()), gone
    ([1, 2], [1, 1], 1)
    """
    from blendin.frequency import COUNT

    starred = None
    for c in qi:
        at = pc.equal(tuples.column(c), SUPPRESSED)
        starred = at if starred is None else pc.and_(starred, at)
    counts = tuples.column(COUNT)
    suppressed = int(pc.sum(pc.filter(counts, starred)).as_py() or 0)
    kept = tuples.filter(pc.invert(starred))
    grouped = kept.group_by(list(qi)).aggregate(
        [(COUNT, "sum")] + [(s, "count_distinct") for s in sensitive])
    sizes = grouped.column(f"{COUNT}_sum").to_numpy().astype(np.int64)
    distinct = {s: grouped.column(f"{s}_count_distinct").to_numpy().astype(np.int64)
                for s in sensitive}
    return sizes, distinct, suppressed


def class_sizes(
    table: pa.Table, qi: Sequence[str], sensitive: Sequence[str] = (), missing: str = ""
) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    """Class sizes, distinct sensitive values per class, and the suppressed record count.

    One pyarrow group-by over the text of the quasi-identifiers; a record whose every
    quasi-identifier is ``*`` is suppressed and left out.

    >>> sizes, distinct, gone = class_sizes(pa.table({"a": ["1", "1", "2", "*"]}), ["a"])
    >>> sorted(sizes.tolist()), gone
    ([1, 2], 1)
    """
    columns = {c: as_text(table.column(c), missing) for c in qi}
    keep = None
    for c in qi:
        starred = pc.equal(columns[c], SUPPRESSED)
        keep = starred if keep is None else pc.and_(keep, starred)
    keep = pc.invert(keep)
    suppressed = table.num_rows - int(pc.sum(keep).as_py() or 0)
    text = {c: pc.filter(col, keep) for c, col in columns.items()}
    text.update({f"__s_{s}": pc.filter(as_text(table.column(s), missing), keep)
                 for s in sensitive})
    grouped = pa.table(text).group_by(list(qi)).aggregate(
        [([], "count_all")] + [(f"__s_{s}", "count_distinct") for s in sensitive])
    sizes = grouped.column("count_all").to_numpy().astype(np.int64)
    distinct = {s: grouped.column(f"__s_{s}_count_distinct").to_numpy().astype(np.int64)
                for s in sensitive}
    return sizes, distinct, suppressed


def _model_risk(sizes: np.ndarray, classes_at_risk_of: np.ndarray, threshold: float
                ) -> ModelRisk:
    """Record risk ``1/F`` for the ``f`` records of each class."""
    record_risk = 1.0 / classes_at_risk_of
    n = sizes.sum()
    return ModelRisk(
        highest=float(record_risk.max()),
        average=float((sizes * record_risk).sum() / n),
        records_at_risk=float(sizes[record_risk > threshold].sum() / n),
    )


def _homogeneity(attribute: str, sizes: np.ndarray, distinct: np.ndarray) -> Homogeneity:
    same = distinct == 1
    records = int(sizes[same].sum())
    return Homogeneity(attribute, int(same.sum()), records, records / int(sizes.sum()))


def _sampling_fraction(n: int, population: float | None, fraction: float | None) -> float:
    if population is not None and fraction is not None:
        raise BlendinError("both a population size and a sampling fraction were given",
                           fix="give one of --population and --sampling-fraction")
    if population is not None:
        if not math.isfinite(population):
            raise BlendinError(f"the population must be a finite number, got {population}",
                               fix=f"pass e.g. --population {max(10 * n, 1)} (the number of "
                               "people the table was drawn from)")
        if population < n:
            raise BlendinError(
                f"the population ({population}) is smaller than the table ({n} records)",
                fix=f"give the size of the population the table was drawn from (>= {n})")
        return n / population
    if fraction is not None:
        if not 0 < fraction <= 1:
            raise BlendinError(f"the sampling fraction must be in (0, 1], got {fraction}",
                               fix="pass e.g. --sampling-fraction 0.01 (1 in 100 sampled)")
        return fraction
    return 1.0


# -- population uniqueness -------------------------------------------------------------


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
    zayatz = _solved(zayatz_uniques, j, f, n, population)
    pitman = _solved(pitman_uniques, j, f, n, population)
    snb = _solved(snb_uniques, j, f, n, population)
    dankar, model = dankar_choice(fraction, zayatz, pitman, snb)
    return PopulationUniqueness(population, fraction, zayatz, pitman, snb, dankar, model)


def _solved(estimator, *args) -> float:
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
