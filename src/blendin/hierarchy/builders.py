"""Every hierarchy builder under one name (``from blendin.hierarchy.builders import ...``).

The builders live in their own modules on top of ``core`` (flat, fixed, intervals, masking,
dates, tree, arx); ``registry`` maps spec keys and saved rules to them. Nothing inside the
package imports this module: it only gathers their names.
"""

from blendin.hierarchy.core import (
    HierarchyBuilder,
    assemble,
    distinct_text,
    format_args,
    isin_text,
    restrict,
)
from blendin.hierarchy.fixed import Fixed, fixed
from blendin.hierarchy.flat import AsIs, Flat, as_is, flat
from blendin.hierarchy.registry import TOML_KEYS, as_builder, builder_from_toml

__all__ = [
    "TOML_KEYS",
    "AsIs",
    "Fixed",
    "Flat",
    "HierarchyBuilder",
    "as_builder",
    "as_is",
    "assemble",
    "builder_from_toml",
    "distinct_text",
    "fixed",
    "flat",
    "format_args",
    "isin_text",
    "restrict",
]
