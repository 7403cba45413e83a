"""The one exception type blendin raises for bad input.

Every message names the problem and the fix, so the CLI can print it as one line
(exit code 2) and a library user can show it as it is.
"""

from __future__ import annotations


class BlendinError(ValueError):
    """Bad input: the message says what is wrong, ``fix`` says what to do about it.

    >>> str(BlendinError("column 'age' is missing", fix="check the header"))
    "column 'age' is missing; fix: check the header"
    """

    def __init__(self, problem: str, *, fix: str | None = None) -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(problem if fix is None else f"{problem}; fix: {fix}")


def preview(values, limit: int = 5) -> str:
    """A few values quoted, and how many more there are: ``'a', 'b' and 3 more``."""
    values = list(values)
    shown = ", ".join(repr(str(v)) for v in values[:limit])
    rest = len(values) - limit
    return shown if rest <= 0 else f"{shown} and {rest} more"
