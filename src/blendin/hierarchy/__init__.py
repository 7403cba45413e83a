"""Value hierarchies and the builders that make them."""

from blendin.hierarchy.builders import HierarchyBuilder
from blendin.hierarchy.core import SUPPRESSED, Hierarchy

__all__ = ["SUPPRESSED", "Hierarchy", "HierarchyBuilder"]
