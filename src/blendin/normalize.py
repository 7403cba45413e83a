"""Text normalizations: one spelling for values that mean the same.

The same value is often written more than one way: ``HIV``, ``hiv`` and `` HIV ``; ``José``
with one code point for the ``é`` (Unicode NFC, composed) or two, ``e`` and a combining
accent (NFD, decomposed), which look the same and compare different. A join on such values
misses people (:func:`blendin.attack.attack`); counting distinct sensitive values counts one
value several times. :func:`normalize_text` rewrites a whole array of texts by named steps:

- ``unicode``: Unicode NFC (composed) form;
- ``space``: whitespace stripped from both ends, inner runs of it (tabs, no-break spaces)
  made one space;
- ``case``: lower case.

Every step is one pyarrow.compute kernel over the whole array, never a loop over values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError

#: whitespace, Unicode's too (no-break and other spaces), for RE2
_SPACE = r"[\s\p{Z}]+"

#: the steps, in the order they apply (whatever order they are asked in)
STEPS: dict[str, Callable[[pa.Array | pa.ChunkedArray], pa.Array | pa.ChunkedArray]] = {
    "unicode": lambda text: pc.utf8_normalize(text, form="NFC"),
    "space": lambda text: pc.replace_substring_regex(
        pc.replace_substring_regex(text, rf"^{_SPACE}|{_SPACE}$", ""), _SPACE, " "),
    "case": pc.utf8_lower,
}


def text_steps(steps: Sequence[str] | str, known: Sequence[str] = tuple(STEPS),
               option: str = "normalize") -> list[str]:
    """The step names of ``steps`` (a list, or names separated by commas), checked against
    ``known``; an unknown name is an error naming it and the choices.

    >>> text_steps("case, space")
    ['case', 'space']
    """
    chosen = ([s.strip() for s in steps.split(",") if s.strip()] if isinstance(steps, str)
              else list(steps))
    bad = [s for s in chosen if s not in known]
    if bad:
        raise BlendinError(f"unknown normalization {bad[0]!r} in {option} "
                           f"{','.join(map(str, chosen))!r}",
                           fix=f"use one or more of {', '.join(sorted(known))}"
                           + (" (a list in the spec)" if option.startswith("[")
                              else ", separated by commas"))
    return chosen


def normalize_text(values: pa.Array | pa.ChunkedArray | np.ndarray | Sequence[str | None],
                   steps: Sequence[str] | str) -> pa.Array | pa.ChunkedArray | np.ndarray:
    """``values`` rewritten by the named ``steps`` (``unicode``, ``space``, ``case``; a list
    or names separated by commas). The steps apply in that fixed order, so the result does
    not depend on the order they are given in; nulls stay null.

    A pyarrow array comes back as one, chunked or not; a NumPy array as a NumPy array of
    objects; a list as a pyarrow array.

    >>> sick = ["HIV", " hiv ", "H\\u00a0IV", "Jose\\u0301", None]
    >>> normalize_text(sick, "case,space,unicode").to_pylist()
    ['hiv', 'hiv', 'h iv', 'josé', None]
    """
    chosen = set(text_steps(steps))
    as_numpy = isinstance(values, np.ndarray)
    text = values if isinstance(values, pa.Array | pa.ChunkedArray) else _arrow(values)
    if not (pa.types.is_string(text.type) or pa.types.is_large_string(text.type)):
        text = pc.cast(text, pa.string())
    for name, step in STEPS.items():
        if name in chosen:
            text = step(text)
    if as_numpy:
        return np.asarray(text.to_pylist(), dtype=object)
    return text


def _arrow(values: np.ndarray | Sequence[str | None]) -> pa.Array:
    """Texts as a pyarrow string array (None and NaN as null; other objects as their text)."""
    items = np.asarray(values, dtype=object).reshape(-1)
    try:
        return pa.array(items, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(items.astype(str), type=pa.string(), mask=np.equal(items, None))


def merge_spellings(table: pa.Table, columns: Sequence[str], steps: Sequence[str],
                    count: str) -> pa.Table:
    """``table`` (distinct tuples with their ``count``) with the ``columns`` normalized by
    ``steps`` and the tuples that became equal merged, their counts summed.

    >>> t = pa.table({"dx": ["HIV", "hiv ", "flu"], "n": [2, 1, 4]})
    >>> merge_spellings(t, ["dx"], ["case", "space"], "n").sort_by("dx").to_pydict()
    {'dx': ['flu', 'hiv'], 'n': [4, 3]}
    """
    if not steps or not columns:
        return table
    for name in columns:
        at = table.schema.get_field_index(name)
        column = table.column(at)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        text = normalize_text(column, steps)
        table = table.set_column(at, pa.field(name, text.type), text)
    keys = [n for n in table.column_names if n != count]
    merged = table.group_by(keys, use_threads=False).aggregate([(count, "sum")])
    return merged.rename_columns([*keys, count]).select(table.column_names)


def spelling_variants(values: pa.Array | pa.ChunkedArray, limit: int = 3) -> list[list[str]]:
    """Groups of distinct ``values`` that differ only in case, spaces or Unicode form (at
    most ``limit`` groups, each in the values' order).

    >>> spelling_variants(pa.array(["HIV", "flu", " HIV", "hiv", "Flu"]))
    [['HIV', ' HIV', 'hiv'], ['flu', 'Flu']]
    """
    text = pc.unique(values.cast(pa.string()) if not pa.types.is_string(values.type)
                     else values)
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    text = text.drop_null()
    same = normalize_text(text, list(STEPS))
    _, first, group = np.unique(np.asarray(same.to_pylist(), dtype=object).astype(str),
                                return_index=True, return_inverse=True)
    sizes = np.bincount(group.reshape(-1))
    shared = [g for g in np.argsort(first) if sizes[g] > 1][:limit]
    originals = np.asarray(text.to_pylist(), dtype=object)
    return [list(originals[group.reshape(-1) == g]) for g in shared]


def spelling_warnings(values: Mapping[str, pa.Array]) -> list[str]:
    """One warning per sensitive column whose distinct ``values`` include one value spelled
    several ways (case, spaces, Unicode form): a model counting distinct values counts it
    several times.

    >>> spelling_warnings({"dx": pa.array(["flu", "HIV", "hiv"])})[0][:45]
    "sensitive column 'dx' spells one value severa"
    """
    warnings = []
    for name, column in values.items():
        groups = spelling_variants(column)
        if groups:
            shown = "; ".join(" / ".join(repr(v) for v in g) for g in groups)
            warnings.append(
                f"sensitive column {name!r} spells one value several ways ({shown}): the "
                "models count each spelling as a value of its own; fix: normalize = "
                '["case", "space", "unicode"] under [input] (--normalize case,space,unicode)')
    return warnings
