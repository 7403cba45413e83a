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

from blendin.check import anonymity_floor
from blendin.codes import COUNT, distinct_texts
from blendin.engines import engine_for
from blendin.engines.kernels import decoded
from blendin.engines.sql import SqlSource
from blendin.errors import BlendinError
from blendin.estimators import sampling_weights
from blendin.frequency import FrequencyTable
from blendin.heap import hand_back_memory, tune_heap
from blendin.hierarchy.core import Hierarchy
from blendin.io import Source
from blendin.models import IndividualRisk, PrivacyModel, dp, presence
from blendin.normalize import merge_spellings, spelling_warnings
from blendin.people import (
    PERSON_ENGINES,
    PeopleSummary,
    Signatures,
    per_person,
    require_keys,
)
from blendin.plan import Plan
from blendin.progress import Progress, file_pass, short_name
from blendin.spec import Spec, as_spec, overlooked_warnings  # noqa: F401 (as_spec re-exported)

ProgressCallback = Callable[[int, int], None]


def check_choice(what: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise BlendinError(f"unknown {what} {value!r}",
                           fix=f"use one of {', '.join(dict.fromkeys(choices))}")


def prepare(data, spec: Spec, engine=None, bars: Progress | None = None, *,
            strict: bool = False, scratch: str | os.PathLike | None = None,
            order: int | None = None) -> Plan:
    """Spec and columns checked, rows reduced to distinct tuples (by the engine), hierarchies
    built, the frequency table encoded, the models' feasibility checked (``bars`` show the
    pass over a file; a CSV file's rows are kept for the release in the folder ``scratch``,
    else the system's temporary folder; with ``order``, the seed of the release's random
    order, kept in that order). Columns that look like direct identifiers the spec
    names nowhere are warned of, or with ``strict`` refused; sensitive values are
    normalized as ``[input] normalize`` says, and a value spelled several ways is warned
    of."""
    spec.validate()
    spec = spec.with_own_models()
    engine = engine_for(data, engine)
    tune_heap(getattr(engine, "small_process", False))
    source = engine.source(data, spec)
    spec.validate_columns(source.columns)
    warnings = overlooked_warnings(spec, source.columns, strict=strict)
    types = source.types()
    for name, builder in spec.quasi_identifiers.items():
        if hasattr(builder, "check_type"):  # codes read as numbers, say
            builder.check_type(types[name], name)
    subset = presence.subset_column(spec.models, source.columns)
    sample = dp.sample_model(spec)
    if spec.person is not None:
        refuse_with_person(spec, engine, sample, subset)
    columns = list(dict.fromkeys([*([spec.person] if spec.person else []),
                                  *spec.quasi_identifiers, *spec.sensitive,
                                  *([subset] if subset else [])]))
    if sample is not None:  # SafePub: the population is the input, the sample released
        source, distinct = engine.sample(read_once(source, scratch, order), columns, spec.missing,
                                         sample)
    else:
        with pass_bar(bars, "reading", source) as told:
            source = read_once(source, scratch, order)
            distinct = engine.distinct(source, columns, spec.missing, _ground_texts(spec),
                                       progress=told)
        hand_back_memory()  # what reading the rows took, beyond the tuples
    if getattr(source, "unpinned", None):
        warnings.append(f"{source.name} is read twice, for the frequency table and for the "
                        f"release, not at one snapshot ({source.unpinned}): rows written to "
                        "it meanwhile would be released but not counted; fix: release it "
                        "while nothing writes to it, or allow this role a second connection")
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
    weighed = [m for m in spec.models if isinstance(m, IndividualRisk)]
    if weighed:  # each tuple's people: the sum of its records' sampling weights
        people = weights_of_tuples(engine, source, spec, distinct, bars)
        for model in weighed:
            model.bind(presence.Population.from_distinct(people, hierarchies))
    if sample is not None:
        distinct = dp.sample_of(sample, distinct)
    elif subset is not None:  # the input is the population; the subset is released
        distinct = presence.bind_population(spec.models, distinct, hierarchies, subset)
    people = signatures = None
    if spec.person is not None:
        require_keys(distinct, spec.person, spec.missing,
                     lambda: source.batches([spec.person], in_order=True))
        reduced, people, _ = per_person(distinct, spec.person, qis, list(spec.sensitive),
                                        spec.missing)
        refuse_sets(spec, people)
        refuse_population(spec, people)
        warnings += people_warnings(people)
        if people.event_level:
            signatures = Signatures.of(distinct, spec.person, hierarchies,
                                       list(spec.sensitive), spec.missing, persons=reduced)
        distinct = reduced
    if signatures is not None:
        ft, n, domains = signatures.ft, signatures.n_people, signatures.domains
    else:
        ft = FrequencyTable.from_distinct(distinct, hierarchies, list(spec.sensitive),
                                          sensitive_hierarchies=sensitive_hierarchies)
        n, domains = ft.n_records, ft.domains
    if people is not None:
        enough_people(spec.models, people.people, people.records, spec.person)
    for model in spec.models:
        model.validate(n, domains)
    plan = Plan.of(spec, source, engine, ft, hierarchies, sensitive_hierarchies,
                   subset=subset, sample=sample, warnings=warnings, people=people,
                   signatures=signatures)
    del distinct  # (the tuples as Arrow text: encoded in the plan, no longer needed)
    hand_back_memory()
    return plan


def weights_of_tuples(engine, source, spec: Spec, distinct: pa.Table,
                      bars: Progress | None) -> pa.Table:
    """The distinct QI tuples with the people each stands for (column ``COUNT``): the sum
    of their records' ``[attributes] sampling_weights``, or their records without."""
    qis = list(spec.quasi_identifiers)
    if spec.sampling_weights is None:
        return decoded(distinct.group_by(qis).aggregate([(COUNT, "sum")])
                       .rename_columns([*qis, COUNT]))
    with pass_bar(bars, "reading the weights", source) as told:
        weighted = decoded(engine.distinct(source, [*qis, spec.sampling_weights],
                                           spec.missing, progress=told))
    people = sampling_weights(weighted.column(spec.sampling_weights),
                              spec.sampling_weights, "[attributes] sampling_weights")
    people = people * weighted.column(COUNT).to_numpy()
    return (weighted.select(qis).append_column(COUNT, pa.array(people))
            .group_by(qis).aggregate([(COUNT, "sum")]).rename_columns([*qis, COUNT]))


def refuse_with_person(spec: Spec, engine, sample, subset: str | None) -> None:
    """What a person key does not work with yet, refused before any work."""
    key = f"the person key {spec.person!r}"
    if engine.name not in PERSON_ENGINES:
        raise BlendinError(f"{key} works on the embedded and SQL engines, not on "
                           f"{engine.name}", fix="anonymize a file, a DataFrame or a table in "
                           "a database, or leave out the person key (person under the spec's "
                           "[attributes], or --person)")
    if sample is not None:
        raise BlendinError(f"{key} cannot be used with differential privacy, which samples "
                           "rows, not people", fix="remove the person key or the DP model")
    if subset is not None:
        raise BlendinError(f"{key} cannot be used with delta-presence over a subset column "
                           "yet (it marks rows, not people)",
                           fix="remove the person key, or give delta-presence a population "
                               "table (population = \"people.csv\")")


def refuse_population(spec: Spec, people: PeopleSummary) -> None:
    """A population table holds one row a person: its people are matched on person-level
    values only."""
    counting = [m.key for m in spec.models if m.needs_population]
    if counting and people.event_level:
        raise BlendinError(
            f"{', '.join(counting)} counts the people of a population table, one row a "
            f"person, and {', '.join(people.event_level)} varies within a person",
            fix="make those quasi-identifiers one value a person, or remove the model")


def refuse_sets(spec: Spec, people: PeopleSummary) -> None:
    """A sensitive value that varies within a person is a set: the ordered and hierarchical
    distances of t-closeness have no meaning for sets."""
    for model in spec.models:
        if (model.attribute in people.event_sensitive
                and getattr(model, "distance", "equal") in ("ordered", "hierarchical")):
            raise BlendinError(
                f"sensitive attribute {model.attribute!r} varies within a person, so a "
                f"person's value is a set of values, which the {model.distance} distance of "
                "t-closeness cannot order", fix='use distance = "equal" for it, or make it '
                "one value per person")


def people_warnings(people: PeopleSummary) -> list[str]:
    """A note when most people are told apart by their number of records alone."""
    if people.unique_by_count * 2 <= people.people:
        return []
    return [f"{people.unique_by_count:,} of {people.people:,} people have a number of records "
            "no one else has: whoever can count a person's rows in the release (through a "
            "column kept as it is) tells them apart; fix: release one row per person, or "
            "generalize or remove the columns that link a person's rows"]


def read_once(source, scratch: str | os.PathLike | None = None, order: int | None = None):
    """The source as every later step reads it, the release too (:meth:`SqlSource.read_once`:
    a database query's rows read once into a temporary table, a PostgreSQL table at one
    snapshot; a CSV or Parquet file's first pass keeps its rows in the folder ``scratch``,
    shuffled by the seed ``order`` where given, see :mod:`blendin.engines.replay`); any
    other source as it is."""
    if isinstance(source, SqlSource):
        return source.read_once()
    if isinstance(source, Source) and source.kind in ("csv", "parquet"):
        source.once, source.scratch, source.order = True, scratch, order
    return source


def pass_bar(bars: Progress | None, doing: str, source):
    """The bar of one pass over ``source`` (shown only for a file that takes a while)."""
    return file_pass(bars, f"{doing} {short_name(source)}")


def _ground_texts(spec: Spec) -> dict[str, pa.Array]:
    """The ground values of the quasi-identifiers whose hierarchy is given whole (a file, a
    tree): the texts their columns are expected to hold."""
    given = {name: builder if isinstance(builder, Hierarchy) else builder.given()
             for name, builder in spec.quasi_identifiers.items()}
    return {name: h.ground_texts for name, h in given.items() if h is not None}


def enough_people(models: Sequence[PrivacyModel], people: int, records: int,
                  person: str) -> None:
    """With a person key k counts people: say so where there are fewer than k (the
    model's own check would call them records).

    >>> from blendin.models import KAnonymity
    >>> try:
    ...     enough_people([KAnonymity(2)], 1, 3, "pid")
    ... except BlendinError as error:
    ...     print(error.problem)
    k-anonymity: k = 2 is larger than the number of people: 1 in 3 records (person key 'pid')
    """
    k = anonymity_floor(models)
    if k > people:
        raise BlendinError(
            f"k-anonymity: k = {k} is larger than the number of people: {people:,} in "
            f"{records:,} records (person key {person!r})",
            fix=f"choose k <= {people:,}, or check the person key")
