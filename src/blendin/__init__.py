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

from blendin import datasets
from blendin.anonymize import Result, anonymize, apply_solution
from blendin.attack import AttackReport, attack
from blendin.check import CheckReport, check
from blendin.errors import BlendinError
from blendin.frequency import Classes, FrequencyTable, SensitiveDomain
from blendin.hierarchy import Hierarchy, HierarchyBuilder
from blendin.hierarchy.arx import from_csv, to_csv
from blendin.hierarchy.builders import as_builder, builder_from_toml, fixed, flat
from blendin.hierarchy.dates import dates
from blendin.hierarchy.intervals import intervals
from blendin.hierarchy.masking import masking
from blendin.hierarchy.tree import tree
from blendin.io import Source, from_arrow, to_arrow, write_table
from blendin.labels import covers
from blendin.metrics import METRICS, utility_of_node
from blendin.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    PrivacyModel,
    RecursiveCLDiversity,
    TCloseness,
    model_from_toml,
)
from blendin.report import render_report, write_report
from blendin.risk import RiskReport, risk
from blendin.search import POLICIES, Solution, find
from blendin.spec import Spec

__version__ = "0.1.0"

__all__ = [
    "METRICS",
    "POLICIES",
    "AttackReport",
    "BlendinError",
    "CheckReport",
    "Classes",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "FrequencyTable",
    "Hierarchy",
    "HierarchyBuilder",
    "KAnonymity",
    "PrivacyModel",
    "RecursiveCLDiversity",
    "Result",
    "RiskReport",
    "SensitiveDomain",
    "Solution",
    "Source",
    "Spec",
    "TCloseness",
    "anonymize",
    "apply_solution",
    "as_builder",
    "attack",
    "builder_from_toml",
    "check",
    "covers",
    "datasets",
    "dates",
    "find",
    "fixed",
    "flat",
    "from_arrow",
    "from_csv",
    "intervals",
    "masking",
    "model_from_toml",
    "render_report",
    "risk",
    "to_arrow",
    "to_csv",
    "tree",
    "utility_of_node",
    "write_report",
    "write_table",
]
