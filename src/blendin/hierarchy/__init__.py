"""Value hierarchies and the builders that make them (core <- builders <- registry)."""

from blendin.hierarchy.core import SUPPRESSED, Hierarchy, HierarchyBuilder

__all__ = ["SUPPRESSED", "Hierarchy", "HierarchyBuilder"]
