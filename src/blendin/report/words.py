"""Hierarchies described in words, for the report: the spec's rule, and one value's path.

The rule is read from the builder's TOML table (the spec's own keys: ``masking``,
``dates``, ``intervals``, ``tree``, ``flat``, ``csv``), so the words say what the spec says;
a hierarchy built in Python (no TOML form) is described by its levels alone. The path
follows one released value up the built hierarchy: ``021** → 02*** → 0**** → *``.

>>> from blendin.hierarchy.intervals import intervals
>>> describe_rule(intervals(5, 10, bottom=0))
'intervals 5 wide, then 10 wide, then *; values below 0 shown as <0'
>>> from blendin.hierarchy.builders import flat
>>> describe_rule(flat())
'the value as it is, or * (nothing in between)'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from blendin.summaries import percent

#: most groups of a tree named before "and N more"
TREE_GROUPS = 3


def describe_rule(builder: Any) -> str:
    """The hierarchy's rule in words, from the spec's TOML keys; "" when it has none."""
    try:
        table = builder.to_toml()
    except Exception:  # a hierarchy built in Python has no rule to tell, only levels
        return ""
    if not isinstance(table, Mapping):
        return ""
    for key, describe in RULES.items():
        if key in table:
            return describe(table)
    return ""


def _masking(table: Mapping) -> str:
    char = table.get("char", "*")
    width = table["masking"]
    codes = f"codes of {width} characters" if isinstance(width, int) and width is not True \
        else "codes"
    return f"{codes} masked from the right, one character per level ({char}), up to *"


def _dates(table: Mapping) -> str:
    levels = table["dates"]
    if levels is True or not levels:
        levels = ["month", "quarter", "year", "decade"]
    return "dates by " + ", then ".join(str(x) for x in levels) + ", then *"


def _intervals(table: Mapping) -> str:
    widths = ", then ".join(f"{_plain(w)} wide" for w in table["intervals"])
    text = f"intervals {widths}, then *"
    if table.get("bottom") is not None:
        text += f"; values below {_plain(table['bottom'])} shown as <{_plain(table['bottom'])}"
    if table.get("top") is not None:
        text += f"; values from {_plain(table['top'])} on shown as >={_plain(table['top'])}"
    return text


def _tree(table: Mapping) -> str:
    groups = list(table["tree"].items())
    shown = []
    for parent, children in groups[:TREE_GROUPS]:
        inner = list(children) if isinstance(children, Mapping | list | tuple) else []
        shown.append(f"{parent} ({', '.join(map(str, inner))})" if inner else str(parent))
    more = len(groups) - TREE_GROUPS
    rest = f" and {more} more" if more > 0 else ""
    return f"categories grouped: {'; '.join(shown)}{rest}; then *"


def _flat(table: Mapping) -> str:
    return "the value as it is, or * (nothing in between)"


def _csv(table: Mapping) -> str:
    name = str(table["csv"]).replace("\\", "/").rsplit("/", 1)[-1]
    return f"ARX hierarchy file {name}"


RULES = {"masking": _masking, "dates": _dates, "intervals": _intervals, "tree": _tree,
         "flat": _flat, "csv": _csv}


def _plain(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def example_path(hierarchy, level: int, label: str) -> list[str]:
    """The labels from ``label`` (at ``level``) up to the top, repeats dropped: what a
    released value becomes at the coarser levels. Nothing below ``level`` is shown, so no
    value finer than the release appears. Empty when no value has that label.

    >>> from blendin.hierarchy.core import Hierarchy
    >>> h = Hierarchy.from_rows([["31", "30-39", "30-49", "*"], ["47", "40-49", "30-49", "*"]])
    >>> example_path(h, 1, "40-49")
    ['40-49', '30-49', '*']
    """
    at_level = hierarchy.label_array(level).astype(str)
    hits = np.flatnonzero(at_level == str(label))
    if not len(hits):
        return []
    ground = int(hits[0])
    path = [str(hierarchy.label_array(up)[ground]) for up in range(level, hierarchy.height)]
    return [v for i, v in enumerate(path) if i == 0 or v != path[i - 1]]


def levels_in_words(hierarchy) -> str:
    """How many distinct labels each level has: ``24 → 8 → 3 → 1``."""
    return " → ".join(f"{len(labels):,}" for labels in hierarchy.labels)


# -- figures as people read them ----------------------------------------------------------


def count(n: int) -> str:
    return f"{int(n):,}"


def pct(x: float) -> str:
    return percent(x)


def number(x) -> str:
    """A figure as people read it: thousands separators, 4 significant digits.

    >>> number(29209.4), number(0.123456), number(None)
    ('29,209', '0.1235', '–')
    """
    if x is None:
        return "–"
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return count(x)
    x = float(x)
    if math.isnan(x):
        return "–"
    if abs(x) >= 1000:  # 29,209 reads better than 2.921e+04
        return count(round(x))
    return f"{x:.4g}"
