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

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import COUNT, as_text, combine_keys
from blendin.engines import engine_for
from blendin.engines.sql import in_database
from blendin.errors import BlendinError, preview
from blendin.estimators import (
    ESTIMATOR_NAMES,
    PopulationUniqueness,
    individual_risk,
    population_uniqueness,
    sampling_weights,
)
from blendin.hierarchy.core import SUPPRESSED
from blendin.people import PERSON_ENGINES, per_person, require_keys
from blendin.progress import Progress, file_pass, short_name
from blendin.related import in_memory, refuse_options
from blendin.spec import as_spec
from blendin.suda import DIS_FRACTION, SpecialUniques, suda2
from blendin.summaries import percent, risk_summary
from blendin.transform.cells import compatible

#: the column that carries a person's joint set of event tuples (a class splits on it)
_SIGNATURE = "__blendin_signature__"


@dataclass(frozen=True)
class ModelRisk:
    """Risk under one attacker model: the highest and average record risk and the share of
    records whose risk is above the threshold."""

    highest: float
    average: float
    records_at_risk: float


@dataclass(frozen=True)
class IndividualRiskFigures:
    """Individual re-identification risk estimated as sdcMicro does, each class of ``fk``
    records standing for the sum of their sampling ``weights`` in the population
    (:func:`blendin.estimators.individual_risk`; without weights, ``1 / fk``): the records'
    risks summed (the expected re-identifications), their average (sdcMicro's global
    risk) and the highest. With ``household``, a household is re-identified when any
    member is: ``1 - Π(1 - risk)`` over its members, given to each of them, summed and
    averaged the same way."""

    weights: str | None
    household: str | None
    expected: float
    average: float
    highest: float
    household_expected: float | None = None
    household_average: float | None = None


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
    #: the person key: ``records``, ``suppressed`` and the class sizes then count people,
    #: ``rows`` the table's records
    person: str | None = None
    rows: int | None = None
    #: with sampling weights or households: sdcMicro's individual and household risk
    individual: IndividualRiskFigures | None = None
    #: with ``suda=True``: the special uniques (SUDA2)
    suda: SpecialUniques | None = None
    #: with ``suda=True``: each distinct tuple of the QIs, its records and SUDA and
    #: DIS-SUDA scores (every record of a tuple has its scores)
    suda_scores: pa.Table | None = field(default=None, repr=False)
    #: a ``*`` in a QI matched any value (a release with blank cells): ``sizes`` are the
    #: records compatible with each class
    cells: bool = False

    def __repr__(self) -> str:
        return risk_summary(self).text()

    def _repr_html_(self) -> str:
        """The summary as a small HTML table, verdict first (shown by notebooks)."""
        return risk_summary(self).html()

    def to_dict(self) -> dict:
        out = asdict(self)
        out.pop("sizes")
        out.pop("suda_scores")
        # the text's "smallest" (with --cells: the fewest compatible records); null when empty
        out["min_class_size"] = int(self.sizes.min()) if len(self.sizes) else None
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
        unit = "records" if self.person is None else "people"  # what each figure counts
        rows = [
            (f"records            {self.records}" if self.person is None else
             f"people             {self.records} ({self.rows} records; person key "
             f"{self.person!r})")
            + (f" (+{self.suppressed} suppressed, not at risk)" if self.suppressed else ""),
            f"quasi-identifiers  {', '.join(self.quasi_identifiers)}",
            f"classes            {self.classes} (smallest {_smallest(self.sizes)})"
            if not self.cells else f"classes            {self.classes} (the fewest "
            f"compatible records {_smallest(self.sizes)}; a * matches any value)",
            f"sample uniques     {self.sample_uniques} ({_pct(self.sample_uniques / n)})",
            f"{'risk':<12} {'highest':>8} {'average':>8}  {unit} above {self.threshold:g}",
        ]
        for name, model in (("prosecutor", self.prosecutor), ("journalist", self.journalist)):
            rows.append(f"{name:<12} {_pct(model.highest):>8} {_pct(model.average):>8}  "
                        f"{_pct(model.records_at_risk):>8}")
        rows.append(f"{'marketer':<12} {'':>8} {_pct(self.marketer):>8}")
        if self.population is not None:
            p = self.population
            rows.append(
                f"population         {p.population:.0f} (sampling fraction "
                f"{p.sampling_fraction:.4g})")
            for name, label in ESTIMATOR_NAMES.items():
                value = getattr(p, name)
                shown = "no solution" if math.isnan(value) else f"{value:.1f}"
                rows.append(f"  population uniques, {label:<7} {shown}")
            by = "no sample uniques" if p.model == "none" else f"by {p.model}"
            rows.append(f"  population uniques, Dankar  {p.dankar:.1f} = {_pct(p.share)} of "
                        f"the population ({by})")
        if self.individual is not None:
            i = self.individual
            by = f"weights {i.weights!r}" if i.weights else "no weights: 1 / class size"
            rows.append(f"individual risk    average {100 * i.average:.4f}%, highest "
                        f"{_pct(i.highest)}, expected re-identifications {i.expected:.3f} "
                        f"({by})")
            if i.household is not None:
                rows.append(f"household risk     average {100 * i.household_average:.4f}%, "
                            f"expected re-identifications {i.household_expected:.3f} "
                            f"(households {i.household!r})")
        if self.suda is not None:
            s = self.suda
            rows.append(f"special uniques    {s.records_with_msu} records with a minimal "
                        f"sample unique; SUDA score sum {s.score_sum:,.0f} (highest "
                        f"{s.score_max:,.0f}), DIS-SUDA sum {s.dis_sum:.4f} (highest "
                        f"{s.dis_max:.4f}, sampling fraction {s.dis_fraction:g})")
            rows.append("  DIS-SUDA bands   " + ", ".join(
                f"{band}: {n}" for band, n in s.bands.items()))
        for h in self.homogeneity.values():
            rows.append(f"homogeneous on {h.attribute}: {h.classes} classes, {h.records} "
                        f"{unit} ({_pct(h.share)})")
        return rows


def _pct(x: float) -> str:
    return percent(x)


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
    missing: str | None = None,
    progress: bool | Progress = False,
    table: str | None = None,
    query: str | None = None,
    schema: str | None = None,
    password_env: str | None = None,
    person: str | None = None,
    weights: str | None = None,
    household: str | None = None,
    suda: bool = False,
    dis_fraction: float | None = None,
    cells: bool | None = None,
) -> RiskReport:
    """Re-identification risk of ``data`` (a raw table or a release) on quasi-identifiers.

    ``data`` is a pandas, polars or pyarrow table or a CSV/Parquet path. ``qi`` names the
    quasi-identifier columns (a list or ``"a,b,c"``), or ``spec`` gives
    them (and the sensitive attributes; a file is then read with its [input] delimiter,
    encoding and missing label). ``population`` (or ``sampling_fraction``) turns on
    the population-uniqueness estimates. Records whose quasi-identifiers are all ``*`` are
    suppressed: they are counted apart and are not at risk. ``progress=True`` (or a
    :class:`~blendin.progress.Progress`) shows a bar while a file is read. A table in a
    database (``data`` its URL, ``table`` or ``query`` its rows) is grouped there.
    ``person`` (or the spec's person key) names the column of each record's person: every
    figure then counts people, a class holding the people of equal signatures
    (docs/people.md). ``weights`` (a column of sampling weights) and ``household`` (a
    column of household ids) add sdcMicro's individual and household risk
    (:class:`IndividualRiskFigures`; either turns it on). ``suda=True`` finds the special
    uniques (:mod:`blendin.suda`; ``dis_fraction`` the sampling fraction of the DIS-SUDA
    score: by default the one ``population`` or ``sampling_fraction`` gives, else 0.01).
    ``cells=True`` (the default for a spec with ``suppression = "cells"``) reads a
    ``*`` in a QI as a blank cell that matches any value: a record's class is then every
    record compatible with it (:mod:`blendin.transform.cells`), and a record blank in
    every QI is released, not suppressed.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": ["30-39", "30-39", "40-49"], "sex": ["f", "f", "m"]})
    >>> r = risk(df, "age,sex", threshold=0.5)
    >>> r.classes, r.prosecutor.records_at_risk, round(r.marketer, 3)
    (2, 0.3333333333333333, 0.667)
    """
    if spec is not None:
        spec = as_spec(spec)  # (a path too, as anonymize and check take it)
    if isinstance(data, Mapping) and (spec is None or not spec.tables):
        # (before the QIs: --qi alone, which their message offers, cannot measure them)
        raise BlendinError("several tables were given, and no spec names them as "
                           "related tables", fix='give --spec with [tables.NAME] person '
                                                 '= "KEY" for each (docs/people.md)')
    names, sensitive = _columns(qi, spec, sensitive)
    if isinstance(data, Mapping):  # related tables: measured as one stack, in people
        refuse_options({"table": table, "query": query, "schema": schema,
                        "password_env": password_env, "person": person, "weights": weights,
                        "household": household, "suda": suda, "cells": cells})
        stacked, whole = in_memory(data, spec)
        return risk(whole, [*names, stacked.tag], sensitive=sensitive, threshold=threshold,
                    population=population, sampling_fraction=sampling_fraction,
                    missing=spec.missing, progress=progress, person=stacked.key)
    person = person if person is not None else getattr(spec, "person", None)
    # a wrong weight is told as the user gave the column: a flag, or the spec's key
    option = "--weights" if weights is not None else "[attributes] sampling_weights"
    weights = weights if weights is not None else getattr(spec, "sampling_weights", None)
    household = household if household is not None else getattr(spec, "household", None)
    if not 0 <= threshold <= 1:
        raise BlendinError(f"the risk threshold must be between 0 and 1, got {threshold}",
                           fix="pass e.g. --threshold 0.2 (threshold=0.2 in Python; a risk of 1 "
                           "in 5)")
    data, _ = in_database(data, table=table, query=query, schema=schema,
                          password_env=password_env)
    # a file is read in batches; a Spark DataFrame stays on Spark, a table in its database
    engine = engine_for(data)
    # a file is read, and its missing values labelled, as the spec says (as the CLI does)
    source = engine.source(data, spec)
    missing = missing if missing is not None else getattr(spec, "missing", "")
    extra = [c for c in (weights, household) if c]
    _check_columns(source.columns, [*([person] if person else []), *names, *sensitive,
                                    *extra])
    if person is not None and extra:
        raise BlendinError("sampling weights and households are measured on records, and a "
                           "person key counts people", fix="leave out --person, or "
                           "--weights and --household")
    if person is not None and engine.name not in PERSON_ENGINES:
        raise BlendinError(f"the person key works on the embedded and SQL engines, not on "
                           f"{engine.name}", fix="measure a file, a DataFrame or a table in a "
                           "database, or leave out the person key (person under the spec's "
                           "[attributes], or --person)")
    with file_pass(progress, f"reading {short_name(source)}") as told:
        tuples = engine.distinct(source, list(dict.fromkeys(
            [*([person] if person else []), *names, *sensitive, *extra])), missing,
            progress=told)
    rows, joint = None, ()
    if person is not None:  # one row a person; people of equal signatures are a class
        require_keys(tuples, person, missing, lambda: source.batches([person]))
        rows = int(pc.sum(tuples.column(COUNT)).as_py() or 0)
        tuples, _, signature = per_person(tuples, person, names, sensitive, missing)
        if signature is not None:
            joint = (_SIGNATURE,)
            tuples = tuples.append_column(_SIGNATURE, pa.array(signature))
    if cells is None:
        cells = getattr(spec, "suppression", "records") == "cells"
    if cells and person is not None:
        raise BlendinError("blank cells are counted among records, and a person key counts "
                           "people", fix="leave out --person, or --cells")
    if cells:
        records, sizes, distinct = _compatible_classes(tuples, names, sensitive)
        suppressed = 0
    else:
        sizes, distinct, suppressed = class_sizes_of_tuples(tuples, names, sensitive, joint)
        records = sizes
    n = int(records.sum())
    if n == 0:
        raise BlendinError("every record is suppressed: there is no risk to measure",
                           fix="measure the risk of a table with unsuppressed records")
    fraction = _sampling_fraction(n, population, sampling_fraction)
    prosecutor = _model_risk(records, sizes.astype(float), threshold)
    expected = sizes / fraction  # expected population class sizes under random sampling
    journalist = _model_risk(records, expected, threshold)
    report = RiskReport(
        quasi_identifiers=tuple(names),
        records=n,
        suppressed=suppressed,
        classes=len(sizes),
        threshold=threshold,
        prosecutor=prosecutor,
        journalist=journalist,
        marketer=float((records / expected).sum() / n),
        sample_uniques=int(records[sizes == 1].sum()),
        population=None if population is None and sampling_fraction is None else
        population_uniqueness(sizes, n / fraction),
        homogeneity={s: _homogeneity(s, records, distinct[s]) for s in sensitive},
        sizes=sizes,
        person=person,
        rows=rows,
        individual=_individual(tuples, names, weights, household, cells, option,
                               missing) if extra
        else None,
        cells=cells,
    )
    if suda:
        if person is not None:
            raise BlendinError("special uniques are found among records, and a person key "
                               "counts people", fix="leave out --person, or --suda")
        if dis_fraction is None:  # the table's own sampling fraction, where it is known
            dis_fraction = (fraction if population is not None or sampling_fraction is not None
                            else DIS_FRACTION)
        found, scores = _special_uniques(tuples, names, dis_fraction)
        report = dataclasses.replace(report, suda=found, suda_scores=scores)
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
                           fix="name them (--qi zip,dob,sex; qi=[\"zip\", \"dob\", \"sex\"] in "
                           "Python) or give a spec (--spec s.toml; spec=)")
    twice = sorted({c for c in qi if list(qi).count(c) > 1})
    if twice:
        raise BlendinError(f"the quasi-identifiers name {preview(twice)} more than once",
                           fix="name each column once in --qi (qi= in Python)")
    return list(qi), [s for s in sensitive if s not in qi]


def _check_columns(columns: Sequence[str], wanted: Sequence[str]) -> None:
    missing = [c for c in wanted if c not in columns]
    if missing:
        raise BlendinError(
            f"the table has no column(s) {preview(missing)}",
            fix=f"use its columns: {preview(columns, 10)}",
        )


def class_sizes_of_tuples(
    tuples: pa.Table, qi: Sequence[str], sensitive: Sequence[str] = (),
    joint: Sequence[str] = (),
) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    """:func:`class_sizes` from an engine's distinct text tuples with their counts (column
    ``COUNT``), so that the rows themselves are never held; the ``joint`` columns (a
    person's signature) split the classes further.

    >>> from blendin.frequency import COUNT
    >>> t = pa.table({"a": ["1", "2", "*"], "s": ["x", "y", "x"], COUNT: [2, 1, 1]})
    >>> sizes, distinct, gone = class_sizes_of_tuples(t, ["a"], ["s"])
    >>> sorted(sizes.tolist()), sorted(distinct["s"].tolist()), gone
    ([1, 2], [1, 1], 1)
    """
    starred = _starred(tuples, qi)
    counts = tuples.column(COUNT)
    suppressed = int(pc.sum(pc.filter(counts, starred)).as_py() or 0)
    kept = tuples.filter(pc.invert(starred))
    grouped = kept.group_by([*qi, *joint]).aggregate(
        [(COUNT, "sum")] + [(s, "count_distinct") for s in sensitive])
    sizes = grouped.column(f"{COUNT}_sum").to_numpy().astype(np.int64)
    distinct = {s: grouped.column(f"{s}_count_distinct").to_numpy().astype(np.int64)
                for s in sensitive}
    return sizes, distinct, suppressed


def _compatible_classes(tuples: pa.Table, qi: Sequence[str], sensitive: Sequence[str]
                        ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """A release with blank cells: per class of equal QI values (``*`` a value), its
    records, the records compatible with it (a ``*`` matches any value; the size that
    gives its risk) and its distinct sensitive values, 2 where its own records share one
    value but a compatible record holds another (the class is the compatible records:
    it does not give the value away)."""
    if sensitive:  # per tuple: are the records compatible with it all of its value?
        codes, blank = _qi_codes(tuples, qi)
        count = tuples.column(COUNT).to_numpy().astype(np.int64)
        total = compatible(codes, blank, count)
        for s in sensitive:
            value = pc.dictionary_encode(tuples.column(s).combine_chunks(),
                                         null_encoding="encode").indices
            same = compatible(np.column_stack([codes, value.to_numpy(zero_copy_only=False)]),
                              np.column_stack([blank, np.zeros(len(blank), bool)]), count)
            tuples = tuples.append_column(f"{_PURE}{s}", pa.array(same == total))
    grouped = tuples.group_by(list(qi)).aggregate(
        [(COUNT, "sum")] + [(s, "count_distinct") for s in sensitive]
        + [(f"{_PURE}{s}", "min") for s in sensitive])
    records = grouped.column(f"{COUNT}_sum").to_numpy().astype(np.int64)
    distinct = {s: np.where(grouped.column(f"{_PURE}{s}_min").to_numpy(zero_copy_only=False),
                            grouped.column(f"{s}_count_distinct").to_numpy(), 2
                            ).astype(np.int64) for s in sensitive}
    return records, compatible(*_qi_codes(grouped, qi), records), distinct


#: a column of :func:`_compatible_classes`: whether a tuple's compatible records share its value
_PURE = "__blendin_pure_"


def _qi_codes(table: pa.Table, qi: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's QI values as codes (rows × QIs, int64) and where they are ``*``."""
    codes = np.stack([pc.dictionary_encode(table.column(c).combine_chunks()).indices
                      .to_numpy(zero_copy_only=False) for c in qi], axis=1).astype(np.int64)
    blank = np.stack([pc.equal(table.column(c), SUPPRESSED).to_numpy(zero_copy_only=False)
                      for c in qi], axis=1)
    return codes, blank


def _starred(tuples: pa.Table, qi: Sequence[str]) -> pa.ChunkedArray:
    """Which tuples show ``*`` in every quasi-identifier (suppressed records)."""
    starred = None
    for c in qi:
        at = pc.equal(tuples.column(c), SUPPRESSED)
        starred = at if starred is None else pc.and_(starred, at)
    return starred


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


def _individual(tuples: pa.Table, qi: Sequence[str], weights: str | None,
                household: str | None, cells: bool = False,
                option: str = "--weights", missing: str = "") -> IndividualRiskFigures:
    """sdcMicro's individual (and household) risk from the distinct tuples of the QIs with
    the weight and household columns (suppressed records are not at risk). With ``cells``
    a ``*`` matches any value: a class's ``fk`` and ``Fk`` sum the records (and weights)
    compatible with it, as sdcMicro's ``freqCalc`` counts missing keys."""
    kept = tuples if cells else tuples.filter(pc.invert(_starred(tuples, qi)))
    count = kept.column(COUNT).to_numpy().astype(float)
    codes, blank = _qi_codes(kept, qi)
    key = combine_keys(codes, [int(c.max(initial=0)) + 1 for c in codes.T])
    _, first, cls = np.unique(key, return_index=True, return_inverse=True)
    cls = cls.reshape(-1)
    fk = np.bincount(cls, weights=count)
    total = None
    if weights is not None:
        total = np.bincount(cls, weights=count * sampling_weights(kept.column(weights), weights,
                                                                 option))
    if cells:  # each class's fk and Fk: the records and weights compatible with it
        fk, total = (None if t is None else compatible(codes[first], blank[first], t)
                     for t in (fk, total))
    rk = individual_risk(fk, total)
    record = rk[cls]
    expected = float((count * record).sum())
    n = float(count.sum())
    out = dict(weights=weights, household=household, expected=expected,
               average=expected / n, highest=float(rk.max()))
    if household is not None:
        ids = as_text(kept.column(household), missing)
        homes = pc.dictionary_encode(ids.combine_chunks())
        home = homes.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        # a record without a household id shares it with no one: its own risk
        alone = pc.fill_null(pc.equal(ids, missing), True).to_numpy(zero_copy_only=False)
        home[alone] = -1
        # 1 - prod(1 - r) over each household's members, through logs (no underflow)
        with np.errstate(divide="ignore"):  # a risk of 1 is a log of -inf: a sure 1
            safe = np.log1p(-np.minimum(record, 1.0))
        within = ~alone
        home_risk = -np.expm1(np.bincount(home[within], weights=(count * safe)[within],
                                          minlength=len(homes.dictionary)))
        members = np.bincount(home[within], weights=count[within],
                              minlength=len(homes.dictionary))
        out["household_expected"] = float((home_risk * members).sum()
                                          + (count * record)[alone].sum())
        out["household_average"] = out["household_expected"] / n
    return IndividualRiskFigures(**out)


def _special_uniques(tuples: pa.Table, qi: Sequence[str], fraction: float
                     ) -> tuple[SpecialUniques, pa.Table]:
    """SUDA2 on the distinct tuples of the QIs (suppressed records have no key values)."""
    if not 0 < fraction <= 1:
        raise BlendinError(f"the DIS-SUDA sampling fraction must be in (0, 1], got "
                           f"{fraction}", fix="pass e.g. --dis-fraction 0.01")
    grouped = tuples.filter(pc.invert(_starred(tuples, qi))).group_by(list(qi)).aggregate(
        [(COUNT, "sum")])
    counts = grouped.column(f"{COUNT}_sum").to_numpy().astype(np.int64)
    score, dis = suda2(_qi_codes(grouped, qi)[0], counts, fraction)
    scores = pa.table({**{c: grouped.column(c) for c in qi}, "records": counts,
                       "suda_score": score, "dis_suda_score": dis})
    return SpecialUniques.of(score, dis, counts, fraction), scores


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
