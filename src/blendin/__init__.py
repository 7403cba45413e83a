"""blendin: release tabular data safely.

Generalize quasi-identifiers along value hierarchies and suppress what cannot be saved so
that every record blends in (k-anonymity, l-diversity, t-closeness); prove the release
before writing it; measure what was lost and what risk remains.
"""

from blendin.errors import BlendinError
from blendin.frequency import Classes, FrequencyTable, SensitiveDomain
from blendin.hierarchy import Hierarchy, HierarchyBuilder
from blendin.models import KAnonymity, PrivacyModel
from blendin.spec import Spec

__version__ = "0.1.0"

__all__ = [
    "BlendinError",
    "Classes",
    "FrequencyTable",
    "Hierarchy",
    "HierarchyBuilder",
    "KAnonymity",
    "PrivacyModel",
    "SensitiveDomain",
    "Spec",
]
