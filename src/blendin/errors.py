"""The one exception type blendin raises for bad input.

Every message names the problem and the fix, so the CLI can print it as one line
(exit code 2) and a library user can show it as it is.
"""

from __future__ import annotations

from collections.abc import Mapping


class BlendinError(ValueError):
    """Bad input: the message says what is wrong, ``fix`` says what to do about it.

    >>> str(BlendinError("column 'age' is missing", fix="check the header"))
    "column 'age' is missing; fix: check the header"
    """

    def __init__(self, problem: str, *, fix: str | None = None) -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(problem if fix is None else f"{problem}; fix: {fix}")


class Unmeetable(BlendinError):
    """A privacy model that no release of the table can meet (k larger than the table): an
    error before a search, and a failing verdict where a release is checked."""


#: the characters of one value a message shows (a header of 20,000 is cut)
SHOWN_CHARS = 80


def preview(values, limit: int = 5) -> str:
    """A few values quoted (a long one cut short), and how many more there are:
    ``'a', 'b' and 3 more``.

    >>> len(preview(["x" * 100])), preview(["a", "b", "c"], limit=2)
    (82, "'a', 'b' and 1 more")
    """
    values = list(values)
    shown = ", ".join(repr(_cut(str(v))) for v in values[:limit])
    rest = len(values) - limit
    return shown if rest <= 0 else f"{shown} and {rest} more"


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 3] + "..."


def toml_key(key: str) -> str:
    """A TOML key: bare where it may be, else quoted."""
    bare = key and all(c.isascii() and (c.isalnum() or c in "-_") for c in key)
    return key if bare else toml_value(key)


def toml_value(value) -> str:
    """One TOML value on one line (inline tables may not span lines), as a spec's error
    quotes it.

    >>> toml_value({"flat": False, "levels": ["a"]})
    '{ flat = false, levels = ["a"] }'
    """
    import tomli_w

    if isinstance(value, Mapping):
        inner = ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return f"{{ {inner} }}" if inner else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if hasattr(value, "item") and not isinstance(value, str | bytes):  # a NumPy scalar
        value = value.item()
    try:
        return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()
    except TypeError:  # (not a TOML value: None, an object given in Python)
        return repr(value)
