"""What a column's name says of its role: the rules behind the app's suggested roles and the
warning that a direct identifier is about to be released.

A name says nothing for sure (a ``name`` column may hold drug names), so these are
suggestions and warnings, never decisions: a column the spec names in any role is the
user's decision and is not second-guessed.

>>> looks_like_identifier("Patient ID"), looks_like_identifier("diagnosis")
(True, False)
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

#: (pattern on the column name, role, reason); first match wins
NAME_RULES: tuple[tuple[str, str, str], ...] = (
    (r"(^|_)(name|first_?name|last_?name|surname|ssn|email|e_?mail|phone|mobile|"
     r"passport|mrn|patient_?id|person_?id|address|street)($|_)",
     "identifier", "{name}: names a person directly: identifier"),
    (r"(dob|birth|geburt)", "quasi-identifier", "date of birth: quasi-identifier"),
    (r"(^|_)(zip|zipcode|zip_?code|post_?code|postal|postal_?code|plz|county|city|town|region|"
     r"district|state)($|_)",
     "quasi-identifier", "place of residence: quasi-identifier"),
    (r"(^|_)(age|sex|gender|ethnicity|race|marital|education|occupation|job|"
     r"nationality|native|country|religion)($|_)",
     "quasi-identifier", "{name}: a demographic trait, often public: quasi-identifier"),
    (r"(diagnos|disease|icd|condition|treatment|drug|medication|salary|income|"
     r"wage|outcome|party|hiv|result)",
     "sensitive", "{name}: health, money or belief: sensitive"),
)


def name_key(name: str) -> str:
    """The name as the rules read it: lower case, runs of other characters as ``_``.

    >>> name_key("E-Mail Address")
    'e_mail_address'
    """
    return re.sub(r"[^a-z0-9]+", "_", str(name).lower())


def role_by_name(name: str) -> tuple[str, str] | None:
    """The role a column's name suggests and why, or None."""
    key = name_key(name)
    for pattern, role, reason in NAME_RULES:
        if re.search(pattern, key):
            return role, reason.format(name=name)
    return None


def looks_like_identifier(name: str) -> bool:
    """Whether the name says the column names a person directly (ssn, name, email, ...)."""
    found = role_by_name(name)
    return found is not None and found[0] == "identifier"


def overlooked_identifiers(columns: Sequence[str], named: Collection[str]) -> list[str]:
    """The ``columns`` whose names say they identify a person directly, of those the spec
    names in no role (``named``): released as they are unless someone decides otherwise.

    >>> overlooked_identifiers(["ssn", "zip", "email", "name"], named={"zip", "name"})
    ['ssn', 'email']
    """
    named = set(named)
    return [c for c in columns if c not in named and looks_like_identifier(c)]


def same_name(a: str, b: str) -> bool:
    """Two column names that differ only in case, spaces or punctuation (``Name``, ``name``,
    `` NAME ``).

    >>> same_name("Patient_ID", "patient id"), same_name("name", "names")
    (True, False)
    """
    return name_key(a).strip("_") == name_key(b).strip("_")
