"""Prepare: the spec compiled against the input, once.

The columns are checked, the rows reduced by the engine to their distinct (QI, sensitive)
tuples, the hierarchies built from the distinct values, the models bound to their columns
and populations, and the frequency table encoded. What comes out, the
:class:`~blendin.plan.Plan`, is all the later stages read: they never go back to the rows
nor to the spec.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import pyarrow as pa

from blendin.codes import COUNT, distinct_texts
from blendin.engines import engine_for
from blendin.engines.kernels import decoded
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.heap import keep_freed_memory
from blendin.hierarchy.core import Hierarchy
from blendin.models import dp, presence
from blendin.normalize import merge_spellings, spelling_warnings
from blendin.plan import Plan
from blendin.progress import Progress, file_pass, short_name
from blendin.spec import Spec, overlooked_warnings

ProgressCallback = Callable[[int, int], None]


def as_spec(spec) -> Spec:
    """A Spec, or the spec file (TOML) a path names."""
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, str | os.PathLike):
        return Spec.from_toml(spec)
    raise BlendinError(f"expected a Spec or the path of a spec file, got {type(spec).__name__}",
                       fix="pass bl.Spec(...) or a path such as \"release.toml\"")


def check_choice(what: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise BlendinError(f"unknown {what} {value!r}",
                           fix=f"use one of {', '.join(dict.fromkeys(choices))}")


def prepare(data, spec: Spec, engine=None, bars: Progress | None = None, *,
            strict: bool = False) -> Plan:
    """Spec and columns checked, rows reduced to distinct tuples (by the engine), hierarchies
    built, the frequency table encoded, the models' feasibility checked (``bars`` show the
    pass over a file). Columns that look like direct identifiers the spec names nowhere are
    warned of, or with ``strict`` refused; sensitive values are normalized as
    ``[input] normalize`` says, and a value spelled several ways is warned of."""
    keep_freed_memory()
    spec.validate()
    engine = engine_for(data, engine)
    source = engine.source(data, spec)
    spec.validate_columns(source.columns)
    warnings = overlooked_warnings(spec, source.columns, strict=strict)
    types = source.types()
    for name, builder in spec.quasi_identifiers.items():
        if hasattr(builder, "check_type"):  # codes read as numbers, say
            builder.check_type(types[name], name)
    subset = presence.subset_column(spec.models, source.columns)
    sample = dp.sample_model(spec)
    columns = list(dict.fromkeys([*spec.quasi_identifiers, *spec.sensitive,
                                  *([subset] if subset else [])]))
    if sample is not None:  # SafePub: the population is the input, the sample released
        source, distinct = engine.sample(source, columns, spec.missing, sample)
    else:
        with pass_bar(bars, "reading", source) as told:
            distinct = engine.distinct(source, columns, spec.missing, _ground_texts(spec),
                                       progress=told)
    distinct = merge_spellings(distinct, spec.sensitive, spec.normalize, COUNT)
    warnings += spelling_warnings({name: distinct_texts(distinct.column(name))
                                   for name in spec.sensitive})
    qis = list(spec.quasi_identifiers)
    # k-map against a population table; the population models read the tuples as text
    tables = [(m, decoded(people)) for m, people in presence.population_tables(spec, qis)]
    if tables or subset is not None:
        distinct = decoded(distinct)
    hierarchies = spec.build_hierarchies(presence.with_people(
        distinct, [t for _, t in tables], qis))
    sensitive_hierarchies = spec.build_sensitive_hierarchies(distinct)
    for model, people in tables:
        model.bind(presence.Population.from_distinct(people, hierarchies))
    if sample is not None:
        distinct = dp.sample_of(sample, distinct)
    elif subset is not None:  # the input is the population; the subset is released
        distinct = presence.bind_population(spec.models, distinct, hierarchies, subset)
    ft = FrequencyTable.from_distinct(distinct, hierarchies, list(spec.sensitive),
                                      sensitive_hierarchies=sensitive_hierarchies)
    for model in spec.models:
        model.validate(ft.n_records, ft.domains)
    return Plan.of(spec, source, engine, ft, hierarchies, sensitive_hierarchies,
                   subset=subset, sample=sample, warnings=warnings)


def pass_bar(bars: Progress | None, doing: str, source):
    """The bar of one pass over ``source`` (shown only for a file that takes a while)."""
    return file_pass(bars, f"{doing} {short_name(source)}")


def _ground_texts(spec: Spec) -> dict[str, pa.Array]:
    """The ground values of the quasi-identifiers whose hierarchy is given whole (a file, a
    tree): the texts their columns are expected to hold."""
    given = {name: builder if isinstance(builder, Hierarchy) else builder.given()
             for name, builder in spec.quasi_identifiers.items()}
    return {name: h.ground_texts for name, h in given.items() if h is not None}


