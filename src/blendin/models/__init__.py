"""Privacy models: vectorized predicates over equivalence classes.

Each model answers, for every class at once, whether the class satisfies it, and says
whether it is monotone under generalization (with and without suppression), so a search
prunes only where that is proven.

Monotonicity, as used here: a model is *monotone* when every generalization of a node that
satisfies it (no record suppressed) satisfies it too. This holds when a class merged from
satisfying classes satisfies the model. It is *monotone with suppression* when, in addition,
generalizing never makes more records violate the model, so a node within the suppression
limit has every generalization within it. This holds when a class merged from a satisfying
class and any other class satisfies the model.

References: Sweeney (2002) k-anonymity; Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam,
"l-diversity: privacy beyond k-anonymity", TKDD 1(1), 2007; Li, Li, Venkatasubramanian,
"t-closeness: privacy beyond k-anonymity and l-diversity", ICDE 2007.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from blendin.errors import BlendinError, preview, toml_value
from blendin.frequency import Classes
from blendin.models.base import RELATIVE_TOLERANCE, TOLERANCE, PrivacyModel
from blendin.models.closeness import DISTANCES, TCloseness
from blendin.models.diversity import (
    DistinctLDiversity,
    EntropyLDiversity,
    RecursiveCLDiversity,
    entropies,
    recursive_levels,
)
from blendin.models.dp import DifferentialPrivacy, safepub_beta, safepub_delta, safepub_k
from blendin.models.individual import IndividualRisk
from blendin.models.k import KAnonymity
from blendin.models.kmap import KMAP_ESTIMATORS, KMap, derived_k
from blendin.models.likeness import LIKENESS_VARIANTS, BetaLikeness, DeltaDisclosure
from blendin.models.presence import DeltaPresence, Population, PopulationModel
from blendin.models.risk import (
    ESTIMATORS,
    AverageRisk,
    PopulationUniqueness,
    ReleaseModel,
    SampleUniqueness,
)

__all__ = [
    "DISTANCES", "ESTIMATORS", "MODELS", "RELATIVE_TOLERANCE", "TOLERANCE", "AverageRisk",
    "KMAP_ESTIMATORS", "KMap", "LIKENESS_VARIANTS", "BetaLikeness", "DeltaDisclosure",
    "PopulationUniqueness", "derived_k", "DeltaPresence", "Population", "PopulationModel",
    "DifferentialPrivacy", "safepub_beta", "safepub_delta", "safepub_k",
    "DistinctLDiversity", "EntropyLDiversity", "IndividualRisk", "KAnonymity", "PrivacyModel",
    "RecursiveCLDiversity", "ReleaseModel", "SampleUniqueness", "TCloseness", "entropies",
    "model_from_toml", "recursive_levels", "violating",
]

#: TOML name -> (model class, required keys, optional keys)
MODELS: dict[str, tuple[type[PrivacyModel], tuple[str, ...], tuple[str, ...]]] = {
    KAnonymity.key: (KAnonymity, ("k",), ()),
    DistinctLDiversity.key: (DistinctLDiversity, ("attribute", "l"), ()),
    EntropyLDiversity.key: (EntropyLDiversity, ("attribute", "l"), ()),
    RecursiveCLDiversity.key: (RecursiveCLDiversity, ("attribute", "c", "l"), ()),
    TCloseness.key: (TCloseness, ("attribute", "t"), ("distance", "hierarchy")),
    AverageRisk.key: (AverageRisk, ("threshold",), ("highest", "records-at-risk")),
    SampleUniqueness.key: (SampleUniqueness, ("threshold",), ()),
    PopulationUniqueness.key: (PopulationUniqueness, ("threshold",),
                               ("estimator", "population", "sampling_fraction")),
    KMap.key: (KMap, ("k",), ("estimator", "population", "sampling_fraction", "significance")),
    BetaLikeness.key: (BetaLikeness, ("attribute", "beta"), ("variant",)),
    DeltaDisclosure.key: (DeltaDisclosure, ("attribute", "delta"), ()),
    DeltaPresence.key: (DeltaPresence, ("dmin", "dmax", "subset"), ()),
    IndividualRisk.key: (IndividualRisk, ("threshold",), ()),
    DifferentialPrivacy.key: (DifferentialPrivacy, ("epsilon", "delta"),
                              ("generalization_budget", "seed", "degree", "steps")),
}

_EXAMPLES = {"k": "k = 5", "attribute": 'attribute = "diagnosis"', "l": "l = 3",
             "c": "c = 3", "t": "t = 0.2", "threshold": "threshold = 0.05",
             "beta": "beta = 3", "delta": "delta = 2", "dmin": "dmin = 0",
             "dmax": "dmax = 0.5", "subset": 'subset = "released"',
             "epsilon": "epsilon = 2", ("differential-privacy", "delta"): "delta = 1e-6"}


def model_from_toml(table: Mapping) -> PrivacyModel:
    """The privacy model of a ``[[privacy]]`` TOML table (the inverse of ``to_dict``).

    ``model`` is one of ``k-anonymity`` (k), ``distinct-l-diversity`` (attribute, l),
    ``entropy-l-diversity`` (attribute, l), ``recursive-cl-diversity`` (attribute, c, l),
    ``t-closeness`` (attribute, t, distance = "equal" | "ordered" | "hierarchical",
    hierarchy = {inline builder table}, kept on the model as ``hierarchy_spec``),
    ``average-risk`` (threshold, highest, records-at-risk), ``sample-uniqueness``
    (threshold), ``population-uniqueness`` (threshold, estimator, population or
    sampling_fraction), ``k-map`` (k, estimator, population or sampling_fraction,
    significance), ``beta-likeness`` (attribute, beta, variant = "enhanced" | "basic"),
    ``delta-disclosure`` (attribute, delta), ``delta-presence`` (dmin, dmax, subset),
    ``differential-privacy`` (epsilon, delta, generalization_budget, seed, degree, steps).

    >>> model_from_toml({"model": "distinct-l-diversity", "attribute": "dx", "l": 3})
    DistinctLDiversity(attribute='dx', l=3)
    >>> model_from_toml({"model": "k-anonymity", "k": 5}).to_dict()
    {'model': 'k-anonymity', 'k': 5}
    """
    choices = ", ".join(map(repr, MODELS))
    if not isinstance(table, Mapping):
        raise BlendinError(f"a [[privacy]] entry must be a table, got {toml_value(table)}",
                           fix='write [[privacy]] with model = "k-anonymity" and k = 5')
    name = table.get("model")
    if name is None:
        raise BlendinError(f"a [[privacy]] table has no model (keys: {preview(table)})",
                           fix=f"add model = ... (one of {choices})")
    if name not in MODELS:
        near = difflib.get_close_matches(str(name), MODELS, n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise BlendinError(f"unknown privacy model {name!r}",
                           fix=f"{hint}use one of {choices}")
    cls, required, optional = MODELS[name]
    params = {k: v for k, v in table.items() if k != "model"}
    allowed = ", ".join((*required, *optional))
    unknown = [k for k in params if k not in required and k not in optional]
    if unknown:
        raise BlendinError(f"privacy model {name!r}: unknown key(s) {preview(unknown)}",
                           fix=f"use only: {allowed}")
    missing = [k for k in required if k not in params]
    if missing:
        raise BlendinError(
            f"privacy model {name!r} is missing {', '.join(missing)}",
            fix="add " + ", ".join(_EXAMPLES.get((name, k), _EXAMPLES.get(k, f"{k} = ..."))
                                   for k in missing),
        )
    if "hierarchy" in params and not isinstance(params["hierarchy"], Mapping):
        raise BlendinError(
            f"privacy model {name!r}: hierarchy must be an inline table, got "
            f"{params['hierarchy']!r}",
            fix="write hierarchy = {...} as for a quasi-identifier",
        )
    # TOML keys are spelled with hyphens, Python parameters with underscores
    return cls(**{k.replace("-", "_"): v for k, v in params.items()})


def violating(classes: Classes, models: Sequence[PrivacyModel],
              levels: Sequence[int] = (), codes: Sequence[np.ndarray] = (),
              suppressed: np.ndarray | None = None) -> np.ndarray:
    """True for the classes to suppress: those failing a model of classes, then, in the
    order given, those each model of the whole release suppresses among the rest (as the
    lattice's node check does). Models with a population count it in the classes given by
    their ``codes`` (one array per QI) at the node ``levels``. ``suppressed`` marks classes
    suppressed whatever the models say (a re-application's values its hierarchy does not
    cover): the models of the whole release are then measured without them.

    >>> import numpy as np
    >>> sizes = Classes(np.array([1, 2, 6]), {}, {})
    >>> violating(sizes, [AverageRisk(0.25), KAnonymity(2)]).tolist()
    [True, False, False]
    """
    bad = (np.zeros(len(classes.sizes), bool) if suppressed is None
           else np.array(suppressed, dtype=bool))
    for model in models:
        if model.needs_population:
            people = model.population_at(levels, codes)
            bad |= ~np.asarray(model.holds(replace(classes, population=people)), dtype=bool)
        elif not model.release:
            bad |= ~np.asarray(model.holds(classes), dtype=bool)
    for model in models:
        if model.release:
            live = np.flatnonzero(~bad)
            kept = Classes(np.asarray(classes.sizes)[live], {}, classes.domains)
            bad[live[~model.holds(kept)]] = True
    return bad
