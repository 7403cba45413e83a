"""blendin: release tabular data safely.

Generalize quasi-identifiers along value hierarchies and suppress what cannot be saved so
that every record blends in (k-anonymity, l-diversity, t-closeness); prove the release
before writing it; measure what was lost and what risk remains.

>>> import blendin as bl
>>> patients = bl.datasets.hospital(300, seed=1)
>>> spec = bl.Spec(
...     identifiers=["name", "ssn"],
...     quasi_identifiers={"zip": bl.masking(), "dob": bl.dates("month", "year"),
...                        "sex": bl.flat()},
...     sensitive=["diagnosis"],
...     models=[bl.KAnonymity(5)],
...     max_suppression=0.05,
... )
>>> result = bl.anonymize(patients, spec)
>>> result.min_class_size >= 5, "name" in result.data.columns
(True, False)
>>> bl.check(result.data, spec).passed
True
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it. Nothing is imported until a name is first
#: used (PEP 562), so ``import blendin`` and ``blendin --help`` stay fast: matplotlib,
#: pandas, jinja2 and openpyxl load only with the function that needs them.
_EXPORTS: dict[str, str] = {
    "datasets": "blendin.datasets",
    "Result": "blendin.anonymize",
    "anonymize": "blendin.anonymize",
    "apply_solution": "blendin.anonymize",
    "AttackReport": "blendin.attack",
    "attack": "blendin.attack",
    "CheckReport": "blendin.check",
    "check": "blendin.check",
    "BlendinError": "blendin.errors",
    "Classes": "blendin.frequency",
    "FrequencyTable": "blendin.frequency",
    "SensitiveDomain": "blendin.frequency",
    "Hierarchy": "blendin.hierarchy",
    "HierarchyBuilder": "blendin.hierarchy",
    "from_csv": "blendin.hierarchy.arx",
    "to_csv": "blendin.hierarchy.arx",
    "as_builder": "blendin.hierarchy.builders",
    "as_is": "blendin.hierarchy.builders",
    "builder_from_toml": "blendin.hierarchy.builders",
    "fixed": "blendin.hierarchy.builders",
    "flat": "blendin.hierarchy.builders",
    "dates": "blendin.hierarchy.dates",
    "intervals": "blendin.hierarchy.intervals",
    "masking": "blendin.hierarchy.masking",
    "tree": "blendin.hierarchy.tree",
    "Source": "blendin.io",
    "from_arrow": "blendin.io",
    "to_arrow": "blendin.io",
    "write_table": "blendin.io",
    "covers": "blendin.labels",
    "METRICS": "blendin.metrics",
    "utility_of_node": "blendin.metrics",
    "Microaggregate": "blendin.transform.microaggregation",
    "set_threads": "blendin.parallel",
    "Pram": "blendin.transform.pram",
    "AverageRisk": "blendin.models",
    "BetaLikeness": "blendin.models",
    "DeltaDisclosure": "blendin.models",
    "DeltaPresence": "blendin.models",
    "DifferentialPrivacy": "blendin.models",
    "DistinctLDiversity": "blendin.models",
    "EntropyLDiversity": "blendin.models",
    "IndividualRisk": "blendin.models",
    "KAnonymity": "blendin.models",
    "KMap": "blendin.models",
    "PopulationUniqueness": "blendin.models",
    "PrivacyModel": "blendin.models",
    "RecursiveCLDiversity": "blendin.models",
    "SampleUniqueness": "blendin.models",
    "TCloseness": "blendin.models",
    "model_from_toml": "blendin.models",
    "render_report": "blendin.report",
    "write_report": "blendin.report",
    "RiskReport": "blendin.risk",
    "risk": "blendin.risk",
    "utility": "blendin.utility",
    "UtilityReport": "blendin.utility",
    "POLICIES": "blendin.search",
    "Solution": "blendin.search",
    "find": "blendin.search",
    "Spec": "blendin.spec",
}

#: exported names that are modules themselves
_MODULES = frozenset({"datasets"})

__all__ = sorted(_EXPORTS, key=lambda name: (not name[0].isupper(), name))


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` on first use, then keep the value here."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'blendin' has no attribute {name!r}")
    value = importlib.import_module(module)
    if name not in _MODULES:
        value = getattr(value, name)
    setattr(sys.modules[__name__], name, value)
    return value


class _Package(types.ModuleType):
    """Keeps ``blendin.anonymize`` (and check, risk, attack) the function, as exported:
    importing a submodule binds it on its package under the same name, which would
    otherwise hide the function of that name."""

    def __setattr__(self, name: str, value: Any) -> None:
        if (isinstance(value, types.ModuleType) and name not in _MODULES
                and _EXPORTS.get(name) == value.__name__):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # for type checkers and IDEs: the names as if imported eagerly
    from blendin import datasets  # noqa: F401
    from blendin.anonymize import Result, anonymize, apply_solution  # noqa: F401
    from blendin.attack import AttackReport, attack  # noqa: F401
    from blendin.check import CheckReport, check  # noqa: F401
    from blendin.errors import BlendinError  # noqa: F401
    from blendin.frequency import Classes, FrequencyTable, SensitiveDomain  # noqa: F401
    from blendin.hierarchy import Hierarchy, HierarchyBuilder  # noqa: F401
    from blendin.hierarchy.arx import from_csv, to_csv  # noqa: F401
    from blendin.hierarchy.builders import (  # noqa: F401
        as_builder,
        as_is,
        builder_from_toml,
        fixed,
        flat,
    )
    from blendin.hierarchy.dates import dates  # noqa: F401
    from blendin.hierarchy.intervals import intervals  # noqa: F401
    from blendin.hierarchy.masking import masking  # noqa: F401
    from blendin.hierarchy.tree import tree  # noqa: F401
    from blendin.io import Source, from_arrow, to_arrow, write_table  # noqa: F401
    from blendin.labels import covers  # noqa: F401
    from blendin.metrics import METRICS, utility_of_node  # noqa: F401
    from blendin.models import (  # noqa: F401
        AverageRisk,
        BetaLikeness,
        DeltaDisclosure,
        DeltaPresence,
        DifferentialPrivacy,
        DistinctLDiversity,
        EntropyLDiversity,
        IndividualRisk,
        KAnonymity,
        KMap,
        PopulationUniqueness,
        PrivacyModel,
        RecursiveCLDiversity,
        SampleUniqueness,
        TCloseness,
        model_from_toml,
    )
    from blendin.parallel import set_threads  # noqa: F401
    from blendin.report import render_report, write_report  # noqa: F401
    from blendin.risk import RiskReport, risk  # noqa: F401
    from blendin.search import POLICIES, Solution, find  # noqa: F401
    from blendin.spec import Spec  # noqa: F401
    from blendin.transform.microaggregation import Microaggregate  # noqa: F401
    from blendin.transform.pram import Pram  # noqa: F401
