"""The top of the ``hierarchy`` package: spec keys and saved rules to builders.

``core`` is at the bottom, each builder module (flat, fixed, intervals, masking, dates,
tree, arx) on it, and this module on them all. A spec's inline TOML table becomes a builder
here (:func:`builder_from_toml`); a saved solution keeps each hierarchy as its *rule*
(:func:`rule_of`, :func:`builder_from_rule`) rather than its ground values, so it carries no
data and generalizes values it has never seen; a tree or a file (which cover a fixed set of
values) is kept as the user gave it, and :class:`WithUnknown` says what becomes of values it
does not cover.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from blendin.errors import BlendinError, preview, toml_value
from blendin.hierarchy.arx import FromCsv, from_csv
from blendin.hierarchy.core import (
    SUPPRESSED,
    Hierarchy,
    HierarchyBuilder,
    distinct_text,
    isin_text,
)
from blendin.hierarchy.dates import dates
from blendin.hierarchy.fixed import Fixed
from blendin.hierarchy.flat import AsIs, Flat
from blendin.hierarchy.intervals import intervals
from blendin.hierarchy.masking import Masking, masking
from blendin.hierarchy.tree import tree


def as_builder(hierarchy: HierarchyBuilder | Hierarchy) -> HierarchyBuilder:
    """A builder for what a Spec holds: a builder as it is, a Hierarchy wrapped in fixed()."""
    if isinstance(hierarchy, HierarchyBuilder):
        return hierarchy
    if isinstance(hierarchy, Hierarchy):
        return Fixed(hierarchy)
    raise BlendinError(
        f"expected a hierarchy builder or a Hierarchy, got {type(hierarchy).__name__}",
        fix="use intervals(...), masking(), dates(...), tree({...}), flat() or "
        "from_csv('file.csv')",
    )


# ---------------------------------------------------------------------------------------------
# TOML

#: main key -> the other keys its table may have
TOML_KEYS: dict[str, tuple[str, ...]] = {
    "csv": ("delimiter", "encoding", "kind"),
    "intervals": ("bottom", "top"),
    "masking": ("char",),
    "dates": ("format",),
    "tree": (),
    "flat": (),
    "as_is": (),
}


def builder_from_toml(table: dict, base_dir: Path | None = None) -> HierarchyBuilder:
    """The builder an inline TOML table describes; relative csv paths resolve from base_dir.

    >>> builder_from_toml({"intervals": [5, 10], "bottom": 0})
    intervals(5, 10, bottom=0)
    >>> builder_from_toml({"flat": True}).to_toml()
    {'flat': True}
    """
    if not isinstance(table, dict):
        raise BlendinError(
            f"a hierarchy must be a TOML table, got {toml_value(table)}",
            fix='write e.g. { intervals = [5, 10] } or { csv = "age.csv" }',
        )
    main = [k for k in table if k in TOML_KEYS]
    if len(main) != 1:
        unknown = [k for k in table if not any(k in (m, *o) for m, o in TOML_KEYS.items())]
        if unknown:
            raise _unknown_key(unknown[0], list(TOML_KEYS))
        found = "none" if not main else " and ".join(main)
        raise BlendinError(
            f"a hierarchy table needs exactly one of {', '.join(TOML_KEYS)}; found {found}",
            fix='write e.g. { intervals = [5, 10] } or { csv = "age.csv" }',
        )
    key = main[0]
    for k in table:
        if k != key and k not in TOML_KEYS[key]:
            raise _unknown_key(k, [key, *TOML_KEYS[key]], key)
    return _MAKERS[key](table, base_dir)


def _unknown_key(key: str, valid: list[str], builder: str | None = None) -> BlendinError:
    where = f"the {builder} hierarchy table" if builder else "a hierarchy table"
    return BlendinError(
        f"unknown key {key!r} in {where}",
        fix=f"use only {', '.join(valid)}",
    )


def _make_csv(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    path = Path(str(table["csv"]))
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    return from_csv(path, table.get("delimiter"), encoding=table.get("encoding", "utf-8"),
                    kind=table.get("kind"))


def _make_intervals(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    widths = table["intervals"]
    if not isinstance(widths, list):
        widths = [widths]
    return intervals(*widths, bottom=table.get("bottom"), top=table.get("top"))


def _make_masking(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    width = table["masking"]
    if width is True:
        width = None
    elif width is False or not isinstance(width, int):
        raise BlendinError(
            f"masking = {width!r} is not a width",
            fix="write masking = true (all values have one width) or masking = 5",
        )
    return masking(width, table.get("char", "*"))


def _make_dates(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    levels = table["dates"]
    if levels is True:
        levels = []
    elif isinstance(levels, str):
        levels = [levels]
    elif not isinstance(levels, list) or not levels:
        raise BlendinError(
            f"dates = {toml_value(levels)} is not a list of levels",
            fix='write e.g. dates = ["month", "quarter", "year"] (or dates = true for the '
                "usual ones)",
        )
    return dates(*levels, format=table.get("format"))


def _make_tree(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    return tree(table["tree"])


def _make_flat(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    if table["flat"] is not True:
        raise BlendinError(f"flat = {toml_value(table['flat'])}",
                           fix="write flat = true, or choose another hierarchy")
    return Flat()


def _make_as_is(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    if table["as_is"] is not True:
        raise BlendinError(f"as_is = {toml_value(table['as_is'])}",
                           fix="write as_is = true, or choose another hierarchy")
    return AsIs()


_MAKERS = {
    "csv": _make_csv,
    "intervals": _make_intervals,
    "masking": _make_masking,
    "dates": _make_dates,
    "tree": _make_tree,
    "flat": _make_flat,
    "as_is": _make_as_is,
}


# ---------------------------------------------------------------------------------------------
# rules, as a saved solution keeps them

#: what a value a tree or a file does not cover may become on re-applying a solution
UNKNOWN_POLICIES = ("error", "suppress")
#: prefix of the label an uncovered value takes below the top (never released: suppressed)
UNKNOWN_LABEL = "\u2400unknown "


def rule_of(builder: HierarchyBuilder | Hierarchy, built: Hierarchy | None = None) -> dict:
    """The JSON-ready rule that makes ``builder``'s hierarchy again on any data.

    Rules (intervals, masking, dates, flat) are their TOML tables; a masking without a width
    gets the width of ``built``. A tree is its mapping; a file or a built Hierarchy is its
    rows as given (never cut down to, or grown from, the data).

    >>> rule_of(masking(), masking().build(["02138"]))
    {'masking': 5}
    >>> rule_of(tree({"young": ["18", "19"]}))
    {'tree': {'young': ['18', '19']}}
    """
    if isinstance(builder, WithUnknown):
        return rule_of(builder.builder, built)
    if isinstance(builder, Hierarchy):
        builder = Fixed(builder)
    if isinstance(builder, Masking) and builder.width is None and built is not None:
        builder = Masking(max(built.height - 1, 1), builder.char)
    if isinstance(builder, FromCsv | Fixed):
        return _rows_rule(builder.given())
    return builder.to_toml()


def _rows_rule(h: Hierarchy) -> dict:
    out: dict = {"rows": h.to_rows(), "kind": h.kind}
    if h.numbers is not None:
        out["numbers"] = [None if np.isnan(v) else float(v) for v in h.numbers]
    return out


def builder_from_rule(rule: dict, name: str = "column") -> HierarchyBuilder:
    """The builder a saved rule stands for (see :func:`rule_of`).

    >>> builder_from_rule({"dates": ["year"]}, "dob").build(["19780315"]).to_rows()
    [['19780315', '1978', '*']]
    """
    where = f"the saved hierarchy of {name!r}"
    if not isinstance(rule, dict):
        raise BlendinError(f"{where} is {rule!r}, not a table",
                           fix="save the solution again with --save-solution")
    if "rows" in rule:
        rows = rule["rows"]
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise BlendinError(f"{where} has rows that are not lists of labels",
                               fix="save the solution again with --save-solution")
        numbers = rule.get("numbers")
        if numbers is not None:
            numbers = np.array([np.nan if v is None else v for v in numbers], dtype=float)
        kind = rule.get("kind", "categorical")
        return Fixed(Hierarchy.from_rows(rows, kind=kind, numbers=numbers, name=where))
    if "csv" in rule:
        raise BlendinError(f"{where} refers to a file ({rule['csv']!r})",
                           fix="save the solution again with --save-solution (it keeps the "
                           "file's rows)")
    try:
        return builder_from_toml(rule)
    except BlendinError as error:
        raise BlendinError(f"{where}: {error.problem}", fix=error.fix) from None


class WithUnknown(HierarchyBuilder):
    """A builder re-applied at a saved ``level``, told what to do with values its tree or
    file does not cover.

    Rules cover any value, so they build as they are. Uncovered values get a branch of their
    own (a label no known value has, ``*`` on top): at the top level they are released as
    ``*`` like every other value; below it the policy ``"error"`` names them and stops,
    ``"suppress"`` keeps them in :attr:`unknown` so their records are suppressed.

    >>> t = WithUnknown(tree({"young": ["18", "19"]}), level=1, policy="suppress")
    >>> t.build(["18", "20"], "age").to_rows()[-1], t.unknown
    (['20', '\u2400unknown 20', '*'], ['20'])
    """

    def __init__(self, builder: HierarchyBuilder, level: int, policy: str = "error") -> None:
        if policy not in UNKNOWN_POLICIES:
            raise BlendinError(f"unknown = {policy!r} is not a choice",
                               fix=f"use one of {', '.join(UNKNOWN_POLICIES)} "
                               "(--unknown suppress)")
        self.builder = builder
        self.level = level
        self.policy = policy
        #: ground values of the last build whose records must be suppressed
        self.unknown: list[str] = []

    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        self.unknown = []
        given = self.builder.given()
        values = distinct_text(values)
        if given is None:
            return self.builder.build(values, name, missing)
        new = values[~isin_text(values, given.ground) & (values != missing)]
        if not len(new):
            return self.builder.build(values, name, missing)
        top = given.height - 1
        if self.level < top and self.policy == "error":
            raise BlendinError(
                f"the saved hierarchy of {name!r} (a tree or file, level {self.level} of "
                f"{top}) does not cover {len(new)} value(s) of the new data: {preview(new)}",
                fix="pass --unknown suppress to suppress their records (API: "
                "unknown=\"suppress\"), or add them to the hierarchy and anonymize afresh")
        rest = values[~isin_text(values, new)]
        known = self.builder.build(rest, name, missing) if len(rest) else None
        if self.level < top:
            self.unknown = list(new)
        return _with_branches(known, new, given)

    def given(self) -> Hierarchy | None:
        return self.builder.given()

    def check_type(self, kind, name: str = "column") -> None:
        self.builder.check_type(kind, name)

    def to_toml(self, base_dir: Path | None = None) -> dict:
        return self.builder.to_toml(base_dir)

    def __repr__(self) -> str:
        return repr(self.builder)


def _with_branches(known: Hierarchy | None, new: np.ndarray, given: Hierarchy) -> Hierarchy:
    """``known`` (None: no known value) with a branch per new value: its own label below the
    top, ``*`` on top."""
    rows = known.to_rows() if known is not None else []
    middle = given.height - 2
    rows += [[v] + [UNKNOWN_LABEL + v] * middle + [SUPPRESSED] for v in new]
    numbers = None
    if given.numbers is not None:
        before = known.numbers if known is not None else np.empty(0)
        numbers = np.concatenate([before, np.full(len(new), np.nan)])
    return Hierarchy.from_rows(rows, kind=given.kind, numbers=numbers,
                               name="the saved hierarchy")
