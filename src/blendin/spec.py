"""Spec: what a release must be. Attribute roles, hierarchies, privacy models, limits."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from blendin.hierarchy import Hierarchy, HierarchyBuilder
from blendin.models import PrivacyModel

ALGORITHMS = ("optimal", "exhaustive", "binary", "datafly", "mondrian")
METRICS = ("loss", "discernibility", "aecs", "precision", "entropy", "height")


@dataclass
class Spec:
    """A release specification.

    ``quasi_identifiers`` maps each QI column to its hierarchy (a builder such as
    ``bl.intervals(5, 10)``, or a built Hierarchy). Identifiers are removed from a release;
    sensitive and insensitive columns are kept as they are. Columns named nowhere are
    insensitive.

    >>> from blendin.models import KAnonymity
    >>> from blendin.hierarchy import Hierarchy
    >>> sex = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
    >>> spec = Spec(quasi_identifiers={"sex": sex}, models=[KAnonymity(2)])
    >>> spec.roles()["sex"]
    'quasi-identifier'
    """

    quasi_identifiers: dict[str, HierarchyBuilder | Hierarchy] = field(default_factory=dict)
    identifiers: list[str] = field(default_factory=list)
    sensitive: list[str] = field(default_factory=list)
    insensitive: list[str] = field(default_factory=list)
    models: list[PrivacyModel] = field(default_factory=list)
    max_suppression: float = 0.0
    algorithm: str = "optimal"
    metric: str = "loss"
    #: hierarchies of sensitive attributes (for t-closeness with hierarchical distance)
    sensitive_hierarchies: dict[str, HierarchyBuilder | Hierarchy] = field(default_factory=dict)
    #: input options: delimiter (None: sniffed), text encoding, the label of missing values
    delimiter: str | None = None
    encoding: str = "utf-8"
    missing: str = ""
    #: where relative paths in the spec resolve from (the spec file's folder)
    base_dir: Path | None = None

    def roles(self) -> dict[str, str]:
        """Column -> role, for every column the spec names."""
        roles: dict[str, str] = {}
        for role, names in (
            ("identifier", self.identifiers),
            ("quasi-identifier", list(self.quasi_identifiers)),
            ("sensitive", self.sensitive),
            ("insensitive", self.insensitive),
        ):
            for name in names:
                roles.setdefault(name, role)
        return roles
