"""The linking attack: join an identified table to a release on the quasi-identifiers.

Sweeney joined the Cambridge voter list (name, ZIP, birth date, sex) to "anonymized"
hospital records on ZIP, birth date and sex, and found the Governor's diagnosis. This module
runs that attack: for every person of the external table it counts the release records the
person is compatible with. A released label is compatible with a person's exact value when
it covers it (``30-39`` covers 34, ``021**`` covers 02138, ``1965`` covers 1965-03-07, ``*``
covers everything; see :mod:`blendin.labels`). A person compatible with exactly one record
is re-identified; a sensitive value shared by every compatible record is learned with
certainty, re-identified or not.

The join never loops over rows: the distinct release tuples and the distinct external
tuples are matched through one small compatibility matrix per quasi-identifier (distinct
labels × distinct values), combined by gathers and a logical and, in blocks.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import as_text, combine_keys
from blendin.errors import BlendinError, preview
from blendin.hierarchy.core import SUPPRESSED, Hierarchy, first_seen
from blendin.hierarchy.dates import Dates
from blendin.hierarchy.dates import parse_dates as as_days
from blendin.hierarchy.intervals import Intervals
from blendin.hierarchy.registry import as_builder
from blendin.io import Source, to_arrow
from blendin.labels import KINDS, cover_pairs, guess_kind, parse_dates, parse_numeric, parse_values
from blendin.normalize import normalize_text, text_steps
from blendin.people import person_codes
from blendin.spec import as_spec
from blendin.summaries import attack_summary, percent_of

#: cells of the (release tuples × external tuples) matrix handled at once
BLOCK_CELLS = 1 << 22
#: enumerate compatible pairs when at most this share of all tuple pairs can be compatible
SPARSE_SHARE = 0.05


@dataclass(frozen=True)
class AttackReport:
    """Outcome of :func:`attack`; counts are of external people (rows of the external
    table). ``matches[i]`` is the number of release records external row ``i`` is compatible
    with."""

    on: tuple[str, ...]
    kinds: dict[str, str]
    k: int
    external: int
    release: int
    no_match: int
    reidentified: int
    ambiguous: int
    hidden: int
    records_reidentified: int
    correct: int | None
    learned: dict[str, int]
    matches: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    #: per sensitive attribute, the value each external row learns with certainty (else None)
    learned_values: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    #: what may make the figures wrong (most people matching nothing, and why)
    warnings: tuple[str, ...] = ()
    #: normalizations applied to the join values (``case``, ``space``, ``unicode``,
    #: ``zip-width``)
    normalized: tuple[str, ...] = ()
    #: what ``release``, ``matches`` and ``records_reidentified`` count: ``"records"``, or
    #: ``"people"`` when the release names each record's person (``person=``)
    unit: str = "records"

    @property
    def reidentified_share(self) -> float:
        """Share of the release's records singled out by some external person."""
        return self.records_reidentified / self.release if self.release else 0.0

    def __repr__(self) -> str:
        return attack_summary(self).text()

    def _repr_html_(self) -> str:
        """The summary as a small HTML table, verdict first (shown by notebooks)."""
        return attack_summary(self).html()

    def table(self) -> pa.Table:
        """Per external row: the number of matching records and the values learned."""
        columns = {"matches": pa.array(self.matches)}
        columns.update({f"learned_{name}": pa.array(values, type=pa.string())
                        for name, values in self.learned_values.items()})
        return pa.table(columns)

    def to_dict(self) -> dict:
        out = {k: v for k, v in vars(self).items() if k not in ("matches", "learned_values")}
        out["on"] = list(self.on)
        out["warnings"] = list(self.warnings)
        out["normalized"] = list(self.normalized)
        out["reidentified_share"] = self.reidentified_share
        return out

    def lines(self) -> list[str]:
        """The report as text lines."""
        n = max(self.external, 1)

        def row(label: str, count: int) -> str:
            return f"{label:<38} {count:>8}  ({percent_of(count, n)})"

        rows = [
            f"join on            {', '.join(f'{c} ({self.kinds[c]})' for c in self.on)}",
            f"external people    {self.external}; release {self.unit} {self.release}",
            row("match no record", self.no_match),
            row("match exactly 1 (re-identified)", self.reidentified),
            row(f"match 2..{self.k - 1}", self.ambiguous) if self.k > 2 else None,
            row(f"match {self.k} or more", self.hidden),
            f"{f'release {self.unit} singled out':<38} {self.records_reidentified:>8}  "
            f"({percent_of(self.records_reidentified, self.release)} of the release)",
        ]
        if self.correct is not None:
            rows.append(row("re-identifications correct", self.correct))
        for name, count in self.learned.items():
            rows.append(row(f"{name} learned with certainty", count))
        if self.normalized:
            rows.append(f"normalized         {', '.join(self.normalized)}")
        rows += [f"warning: {w}" for w in self.warnings]
        return [r for r in rows if r is not None]


def attack(
    release,
    external,
    on: Sequence[str] | str | None = None,
    *,
    k: int = 5,
    sensitive: Sequence[str] | str | None = None,
    truth: str | None = None,
    kinds: Mapping[str, str] | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    missing: str = "",
    spec=None,
    normalize: Sequence[str] | str = (),
    person: str | None = None,
) -> AttackReport:
    """Link ``external`` (identified people) to ``release`` on the columns ``on``.

    Both tables are pandas, polars or pyarrow tables or CSV/Parquet paths; join columns are
    compared as text, the way the spec reads them when a ``spec`` is given (its dates
    format; its trees and files let group labels cover their values).

    ``on`` defaults to the spec's quasi-identifiers, else to the columns both tables share
    that the release does not blank out (all ``*``). ``sensitive`` (default: the spec's
    sensitive attributes, else the release's columns the external table does not have, but
    for blanked columns and a column numbering the classes) are the values an attacker wants
    to learn; only real values count as learned, never ``*``. ``normalize`` lists fixes
    applied to the join values first (a list, or names separated by commas): ``case`` (``f``
    reads as the release's ``F``), ``space`` (`` F `` reads as ``F``: outer whitespace
    stripped, inner runs made one space), ``unicode`` (both tables' values in Unicode NFC,
    so a composed and a decomposed ``José`` meet) and ``zip-width`` (``2138`` reads as
    ``02138`` where the release's codes have 5 characters); see :mod:`blendin.normalize`.
    :attr:`AttackReport.warnings` names each join column where a noticeable share of the
    external values match no released value for a reason a normalization fixes, or that
    holds the same text in two Unicode forms, with the ``--normalize`` to use; when most
    people match nothing, it says whether a column's format is to blame or the people are
    likely not in the release. When a join column has no value any released label covers,
    the attack stops with an error naming it (it could not have matched anyone).
    ``truth`` names a column present in both tables that identifies the person (used only
    to score the attack, never to match). ``kinds`` fixes how an external column is read
    (``"numeric"``, ``"date"``, ``"categorical"``; guessed otherwise); ``hierarchies`` let
    hierarchy labels (``Married``) cover their ground values. ``person`` names a release
    column that tells whose each record is (a person key, or the person number of related
    tables): people are then counted, not records (a patient with five visits is one match,
    and re-identified when they alone match); the join columns must hold one value a person.

    >>> import pandas as pd
    >>> release = pd.DataFrame({"age": ["30-39", "30-39", "40"], "dx": ["flu", "flu", "gout"]})
    >>> voters = pd.DataFrame({"name": ["Ann", "Bob"], "age": [34, 40]})
    >>> r = attack(release, voters, on="age")
    >>> r.matches.tolist(), r.reidentified, r.learned
    ([2, 1], 1, {'dx': 2})
    >>> release = pd.DataFrame({"sex": ["F", "F", "M"], "dx": ["flu", "flu", "gout"]})
    >>> voters = pd.DataFrame({"sex": ["F", "m", "M", "M"]})
    >>> attack(release, voters).warnings[0][:68]
    "join column 'sex' (categorical): 25% of the external values match no"
    >>> attack(release, voters, normalize="case").matches.tolist()
    [2, 1, 1, 1]
    """
    rel, ext = _read(release), _read(external)
    if spec is not None:
        spec = as_spec(spec)  # (a path too, as anonymize and check take it)
        missing = spec.missing
    on = _join_columns(rel, ext, on, truth, spec, missing)
    if k < 2:
        raise BlendinError(f"k must be 2 or more, got {k}", fix="pass e.g. --k 5 (k=5 in Python)")
    unknown = [c for c in (kinds or {}) if c not in on]
    if unknown:
        raise BlendinError(f"--kind names column(s) {preview(unknown)} that are not joined on "
                           f"(the join is on {', '.join(on)})",
                           fix="give --kind for join columns only, or add the column to --on")
    normalize = _normalizations(normalize)
    sensitive = [s for s in _sensitive_columns(rel, ext, on, sensitive, truth, spec, missing)
                 if s != person]  # whose a record is: not a value to learn
    if person is not None and person in on:
        raise BlendinError(f"the person column {person!r} is a join column",
                           fix="join on the quasi-identifiers only (--on)")
    if truth is not None:
        for table, what in ((rel, "release"), (ext, "external table")):
            if truth not in table.column_names:
                raise BlendinError(f"the truth column {truth!r} is not in the {what}",
                                   fix="name a column both tables have, or leave out --truth")
    rel_text = {c: as_text(rel.column(c), missing) for c in on}
    ext_text = {c: as_text(ext.column(c), missing) for c in on}
    unicode = {} if "unicode" in normalize else _unicode_forms(on, rel_text, ext_text)
    # both sides compare in NFC; the external values lose stray spaces before they are read
    rel_text = {c: _normalized_text(t, ["unicode"] if "unicode" in normalize else [], missing)
                for c, t in rel_text.items()}
    ext_text = {c: _normalized_text(t, normalize, missing) for c, t in ext_text.items()}
    rel_codes, rel_labels = _encode(rel_text, on)
    ext_codes, ext_values = _encode(ext_text, on)
    hierarchies = dict(hierarchies or {})
    if spec is not None:
        ext_values, kinds, hierarchies = _as_spec_reads(spec, on, ext_values, dict(kinds or {}),
                                                        hierarchies)
    kinds = _kinds(on, ext_values, rel_labels, kinds or {}, missing)
    ext_values = {c: _compact_dates(v, missing) if kinds[c] == "date" else v
                  for c, v in ext_values.items()}
    for how in normalize:
        ext_values = {c: NORMALIZE[how](rel_labels[c], v, missing)
                      for c, v in ext_values.items()}
    compat = [_Compat(*cover_pairs(rel_labels[c], ext_values[c], kinds[c],
                                   hierarchies.get(c), name=c, missing=missing),
                      len(rel_labels[c]), len(ext_values[c])) for c in on]
    _check_can_match(on, compat, rel_labels, ext_values, kinds, hierarchies, normalize, missing)
    rel_tuple, rel_first, rel_counts, rel_keys = _tuples(rel_codes, [len(rel_labels[c])
                                                                    for c in on])
    released = rel.num_rows
    if person is not None:  # matches count people: each person's one tuple
        rel_counts, released = _people_per_tuple(rel, person, on, rel_tuple, len(rel_counts),
                                                 missing)
    ext_tuple, _, ext_counts, ext_keys = _tuples(ext_codes, [len(ext_values[c]) for c in on])
    histograms, dictionaries = {}, {}
    for s in sensitive:
        histograms[s], dictionaries[s] = _histogram(rel_tuple, len(rel_counts), rel.column(s),
                                                    missing)
        # '*' and the missing label are nothing learned
        blank = np.isin(np.asarray(dictionaries[s].to_pylist(), dtype=object),
                        [SUPPRESSED, missing])
        histograms[s][:, blank] = 0
    matched, only, learned = _match(compat, rel_keys, ext_keys, rel_counts, histograms)
    per_row = matched[ext_tuple]
    single = per_row == 1
    correct = None
    if truth is not None:
        guess = as_text(rel.column(truth), missing).take(
            pa.array(rel_first[only[ext_tuple[single]]]))
        actual = pc.filter(as_text(ext.column(truth), missing), pa.array(single))
        correct = int(pc.sum(pc.equal(guess, actual)).as_py() or 0)
    no_match = per_row == 0
    warnings = _warnings(on, compat, ext_codes, rel_labels, ext_values, no_match, kinds,
                         hierarchies, normalize, unicode, missing)
    return AttackReport(
        warnings=warnings,
        normalized=tuple(normalize),
        on=tuple(on),
        kinds=kinds,
        k=k,
        external=ext.num_rows,
        release=released,
        unit="records" if person is None else "people",
        no_match=int(no_match.sum()),
        reidentified=int(single.sum()),
        ambiguous=int(((per_row >= 2) & (per_row < k)).sum()),
        hidden=int((per_row >= k).sum()),
        records_reidentified=int(np.unique(only[matched == 1]).size),
        correct=correct,
        learned={s: int((v[ext_tuple] >= 0).sum()) for s, v in learned.items()},
        matches=per_row,
        learned_values={s: _values(dictionaries[s], v[ext_tuple]) for s, v in learned.items()},
    )


def _people_per_tuple(rel: pa.Table, person: str, on: Sequence[str], rel_tuple: np.ndarray,
                      n_tuples: int, missing: str) -> tuple[np.ndarray, int]:
    """The people of each release tuple, and of the release; each person must have one
    tuple (the join columns one value a person)."""
    if person not in rel.column_names:
        raise BlendinError(f"the release has no column {person!r} to count people by",
                           fix="name the column that tells whose each record is (--person), "
                               "or leave it out to count records")
    owner, keys = person_codes(rel.column(person), person, missing)
    first = first_seen(owner, len(keys))
    if not np.array_equal(rel_tuple, rel_tuple[first][owner]):
        raise BlendinError(
            f"the join columns ({', '.join(on)}) vary within a person, so a person is not "
            "one match", fix="join on columns that hold one value a person (--on), or "
                             "leave out --person to count records")
    return np.bincount(rel_tuple[first], minlength=n_tuples).astype(np.int64), len(keys)


def _read(data) -> pa.Table:
    return Source(data).read_all() if isinstance(data, str | os.PathLike) else to_arrow(data)


def _split(names: Sequence[str] | str | None) -> list[str] | None:
    if isinstance(names, str):
        return [c.strip() for c in names.split(",") if c.strip()]
    return None if names is None else list(names)


def _join_columns(rel: pa.Table, ext: pa.Table, on, truth, spec=None,
                  missing: str = "") -> list[str]:
    on = _split(on)
    if on is None:
        shared = [c for c in rel.column_names if c in ext.column_names and c != truth]
        if spec is not None:
            on = [c for c in spec.quasi_identifiers if c in shared]
        else:  # a column the release blanks out (a redacted name) tells nothing
            on = [c for c in shared if not _blank(rel.column(c), missing)]
        if not on:
            raise BlendinError(
                "the release and the external table have no column in common to join on "
                f"(release: {preview(rel.column_names, 8)}; external: "
                f"{preview(ext.column_names, 8)})",
                fix="rename the external columns to match the release, or pass --on",
            )
        return on
    if not on:
        raise BlendinError("no join columns given", fix="pass e.g. --on dob,sex,zip")
    for table, what in ((rel, "release"), (ext, "external table")):
        absent = [c for c in on if c not in table.column_names]
        if absent:
            near = [c for c in table.column_names if c.lower() == absent[0].lower()]
            near = near or difflib.get_close_matches(absent[0], table.column_names, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise BlendinError(
                f"join column(s) {preview(absent)} not in the {what} (it has "
                f"{preview(table.column_names, 10)})",
                fix=f"{hint}give the {what}'s column holding {absent[0]!r} that name, or "
                f"leave {absent[0]!r} out of --on",
            )
    return on


def _blank(column, missing: str) -> bool:
    """Every value is ``*`` or missing: the column was suppressed or redacted."""
    text = pc.unique(as_text(column, missing)).to_pylist()
    return all(v in (SUPPRESSED, missing) for v in text)


def _sensitive_columns(rel, ext, on, sensitive, truth, spec=None, missing: str = ""
                       ) -> list[str]:
    chosen = _split(sensitive)
    if chosen is None:
        if spec is not None and any(c in rel.column_names for c in spec.sensitive):
            return [c for c in spec.sensitive if c in rel.column_names]
        return [c for c in rel.column_names
                if c not in on and c not in ext.column_names and c != truth
                and not _blank(rel.column(c), missing)
                and not _numbers_classes(rel, on, c, missing)]
    absent = [c for c in chosen if c not in rel.column_names]
    if absent:
        raise BlendinError(f"sensitive column(s) {preview(absent)} not in the release",
                           fix=f"use release columns: {preview(rel.column_names, 10)}")
    return chosen


def _numbers_classes(rel: pa.Table, on: Sequence[str], column: str, missing: str) -> bool:
    """The column numbers the release's classes (``--group-column``): whole numbers, one
    per class of the join columns and a different one for each class."""
    values = as_text(rel.column(column), missing)
    if not pc.all(pc.match_substring_regex(values, r"^\d+$|^$")).as_py():
        return False
    codes, _ = _encode({**{c: as_text(rel.column(c), missing) for c in on},
                        column: values}, [*on, column])
    classes = np.unique(codes[:, :-1], axis=0)
    pairs = np.unique(codes, axis=0)
    numbers = np.unique(codes[:, -1])
    return len(pairs) == len(classes) == len(numbers)


def _as_spec_reads(spec, on, ext_values, kinds, hierarchies):
    """External values read the way the spec reads them: dates in the spec's format (as
    ISO dates), and trees or files built on the external values to cover group labels."""
    values = dict(ext_values)
    for c in on:
        builder = spec.quasi_identifiers.get(c)
        if builder is None:
            continue
        builder = as_builder(builder)
        if isinstance(builder, Dates):
            values[c] = _iso_dates(values[c], c, builder.format, spec.missing)
            kinds.setdefault(c, "date")
        elif isinstance(builder, Intervals):  # 1930-1934 is years, not a span of dates
            kinds.setdefault(c, "numeric")
        elif builder.given() is not None and c not in hierarchies:
            hierarchies[c] = _covering(builder, values[c], c, spec.missing)
    return values, kinds, hierarchies


def _covering(builder, values: np.ndarray, name: str, missing: str) -> Hierarchy | None:
    """The tree or file cut down to the external values it covers (others match nothing)."""
    given = builder.given()
    known = values[np.isin(values.astype(str), given.ground.astype(str)) | (values == missing)]
    return builder.build(known, name, missing) if len(known) else None


def _iso_dates(values: np.ndarray, name: str, format: str | None, missing: str) -> np.ndarray:
    out = values.copy()
    present = values != missing
    if present.any():
        days = as_days(values[present], name, format)
        out[present] = np.datetime_as_string(days, unit="D").astype(object)
    return out


def _compact_dates(values: np.ndarray, missing: str) -> np.ndarray:
    """``YYYYMMDD`` dates as ``YYYY-MM-DD`` (the form labels are compared with); other
    values as they are."""
    text = pa.array(values.astype(str).tolist(), type=pa.string())
    compact = pc.match_substring_regex(text, r"^\d{8}$").to_numpy(zero_copy_only=False)
    if not compact.any():
        return values
    parsed = pc.strptime(text.filter(pa.array(compact)), format="%Y%m%d", unit="s",
                         error_is_null=True)
    iso = pc.strftime(parsed, format="%Y-%m-%d").to_pylist()
    out = values.copy()
    idx = np.flatnonzero(compact)
    good = np.array([v is not None for v in iso], dtype=bool)
    out[idx[good]] = np.asarray(iso, dtype=object)[good]
    return out


# -- normalization and diagnosis --------------------------------------------------------------


def _normalizations(normalize: Sequence[str] | str) -> list[str]:
    return text_steps(normalize, tuple(NORMALIZE), "--normalize")


def _exact_labels(labels: np.ndarray) -> np.ndarray:
    text = labels.astype(str)
    return labels[(text != SUPPRESSED) & ~np.char.endswith(text, "*")]


def _texts(values: np.ndarray) -> pa.Array:
    return pa.array(values.astype(str).tolist(), type=pa.string())


def _respell(labels: np.ndarray, values: np.ndarray, missing: str, step: str,
             rewrite: bool) -> np.ndarray:
    """Values spelled as the release spells them where they equal a released label up to
    the text normalization ``step`` (:mod:`blendin.normalize`); the others normalized too
    when ``rewrite``, else as they are."""
    if not len(values):
        return values
    keys = normalize_text(_texts(values), step)
    out = np.asarray(keys.to_pylist(), dtype=object) if rewrite else values.copy()
    out[values == missing] = missing
    exact = _exact_labels(labels).astype(str)
    if not len(exact):
        return out
    at = pc.index_in(keys, value_set=normalize_text(_texts(exact), step))
    at = np.asarray(pc.fill_null(at, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    found = (at >= 0) & (values != missing)
    out[found] = exact[at[found]]
    return out


def _fold_case(labels: np.ndarray, values: np.ndarray, missing: str) -> np.ndarray:
    """Values spelled as the release spells them, up to case (``f`` -> ``F``)."""
    return _respell(labels, values, missing, "case", rewrite=False)


def _fold_space(labels: np.ndarray, values: np.ndarray, missing: str) -> np.ndarray:
    """Values stripped of outer whitespace, inner runs made one space, and spelled as the
    release spells them up to whitespace (`` F`` -> ``F``)."""
    return _respell(labels, values, missing, "space", rewrite=True)


def _nfc(labels: np.ndarray, values: np.ndarray, missing: str) -> np.ndarray:
    """Values in Unicode NFC (composed) form (the release's labels are made NFC too, see
    :func:`attack`)."""
    return normalize_text(values, "unicode") if len(values) else values


def _zip_width(labels: np.ndarray, values: np.ndarray, missing: str) -> np.ndarray:
    """Digit codes padded with leading zeros to the width of the release's codes."""
    text = labels.astype(str)
    shown = text[(text != SUPPRESSED) & (text != missing)]
    widths = np.unique(np.char.str_len(shown)) if len(shown) else []
    if len(widths) != 1:
        return values
    width = int(widths[0])
    arrow = _texts(values)
    digits = pc.match_substring_regex(arrow, r"^\d+$").to_numpy(zero_copy_only=False)
    short = digits & (pc.utf8_length(arrow).to_numpy(zero_copy_only=False) < width)
    out = values.copy()
    if short.any():
        padded = pc.utf8_lpad(arrow.filter(pa.array(short)), width=width, padding="0")
        out[short] = np.asarray(padded.to_pylist(), dtype=object)
    return out


#: ``--normalize`` choices: how external values are rewritten before the join (``unicode``
#: rewrites the release's labels too)
NORMALIZE = {"case": _fold_case, "space": _fold_space, "unicode": _nfc, "zip-width": _zip_width}
#: the normalizations that rewrite text before it is read (dates, numbers), in this order
TEXT_FIRST = ("unicode", "space")
#: what each normalization fixes, as a likely cause of values matching nothing
CAUSES = {"case": "case", "space": "spaces", "unicode": "Unicode form",
          "zip-width": "leading zeros lost"}


def _normalized_text(text: pa.ChunkedArray, steps: Sequence[str], missing: str
                     ) -> pa.ChunkedArray:
    """Text rewritten by the text normalizations among ``steps``; text left empty (a value
    of spaces only) is missing."""
    chosen = [s for s in TEXT_FIRST if s in steps]
    if not chosen:
        return text
    text = normalize_text(text, chosen)
    return pc.if_else(pc.equal(text, ""), missing, text) if missing != "" else text


def _covered(compat: _Compat, general: np.ndarray) -> np.ndarray:
    """Per external value: some release label other than ``*`` covers it."""
    hit = np.zeros(compat.shape[1], dtype=bool)
    hit[compat.values[~general[compat.labels]]] = True
    return hit


def _check_can_match(on, compat, rel_labels, ext_values, kinds, hierarchies, normalize,
                     missing: str) -> None:
    """Stop when a join column has no external value a released label covers: the join
    could not work, and its answer (nobody matched) would be false reassurance."""
    for c, cm in zip(on, compat):
        blank = np.isin(rel_labels[c], [SUPPRESSED, missing])
        if blank.all() or not len(ext_values[c]):
            continue
        if not _covered(cm, blank).any():
            how, _, value, fixed = _best_fix(c, rel_labels[c], ext_values[c],
                                             np.ones(len(ext_values[c]), dtype=bool),
                                             np.ones(len(ext_values[c]), dtype=np.int64),
                                             kinds[c], hierarchies.get(c), normalize, missing)
            cause = (_fix_cause(how, value, fixed) if how else
                     "likely cause: format (the values are written differently from the "
                     "labels)")
            raise BlendinError(
                f"join column {c!r}: no external value matches any released value "
                f"(release shows {preview(rel_labels[c][~blank], 3)}; external has "
                f"{preview(ext_values[c], 3)}); {cause}",
                fix=f"write {c!r} as the release does (--normalize case,space,unicode,zip-width "
                "fixes case, stray spaces, Unicode forms and lost leading zeros; --kind "
                "COLUMN=date reads YYYYMMDD), or leave it out of --on")


def _fix_cause(how: str, value, fixed) -> str:
    if how == "unicode":
        return (f"likely cause: Unicode form ({ascii(value)} is decomposed, the release "
                f"writes it composed); --normalize unicode")
    return f"likely cause: {CAUSES[how]} ({value!r} for {fixed!r}); --normalize {how}"


def _best_fix(name: str, labels: np.ndarray, values: np.ndarray, lost: np.ndarray,
              people: np.ndarray, kind: str, hierarchy: Hierarchy | None,
              skip: Sequence[str], missing: str) -> tuple[str | None, int, object, object]:
    """The normalization (not in ``skip``) that makes the most people's ``lost`` values
    (those no released label covers) match: its name, the people it matches, and the
    commonest of those values with its fixed spelling; ``(None, 0, None, None)`` if none
    does. ``people`` counts the people holding each value."""
    best: tuple[str | None, int, object, object] = (None, 0, None, None)
    at = np.flatnonzero(lost & (values != missing))
    if not len(at):
        return best
    blank = np.isin(labels, [SUPPRESSED, missing])
    for how in NORMALIZE:
        if how in skip:
            continue
        fixed = NORMALIZE[how](labels, values[at], missing)
        changed = np.flatnonzero(fixed != values[at])
        if not len(changed):
            continue
        try:
            rows, cols = cover_pairs(labels, fixed[changed], kind, hierarchy, name=name,
                                     missing=missing)
        except BlendinError:  # the fixed values do not read as the column's kind
            continue
        hit = np.zeros(len(changed), dtype=bool)
        hit[cols[~blank[rows]]] = True
        held = people[at[changed]] * hit
        if held.sum() > best[1]:
            top = int(np.argmax(held))
            best = (how, int(held.sum()), values[at[changed[top]]], fixed[changed[top]])
    return best


def _shapes(values: np.ndarray) -> pa.Array:
    """How each value is written: digit runs as ``9``, capitals as ``A``, other letter runs
    as ``a``, whitespace runs as one space (``Male`` -> ``Aa``, ``1965-03-07`` -> ``9-9-9``)."""
    text = _texts(values)
    for pattern, shape in ((r"\d+", "9"), (r"\p{Lu}", "A"),
                           (r"[\p{Ll}\p{Lm}\p{Lo}\p{Lt}\p{M}]+", "a"), (r"[\s\p{Z}]+", " ")):
        text = pc.replace_substring_regex(text, pattern, shape)
    return text


def _odd_format(values: np.ndarray, lost: np.ndarray, people: np.ndarray, missing: str):
    """The commonest lost value written unlike every value that matches, when most of the
    lost people's values are (else None): a format difference, not people absent from the
    release."""
    kept = ~lost & (values != missing)
    if not kept.any():
        return None
    shapes = _shapes(values)
    seen = pc.is_in(shapes, value_set=pc.unique(shapes.filter(pa.array(kept))))
    odd = lost & ~np.asarray(seen.to_numpy(zero_copy_only=False), dtype=bool)
    odd &= values != missing
    if people[odd].sum() * 2 <= people[lost].sum():
        return None
    return values[odd][np.argmax(people[odd])]


def _unicode_forms(on: Sequence[str], rel_text: Mapping[str, pa.ChunkedArray],
                   ext_text: Mapping[str, pa.ChunkedArray]) -> dict[str, str]:
    """Per join column where the same text is written in two Unicode forms (composed and
    decomposed, which look alike but do not match), on one side or across the two: what
    to say."""
    out = {}
    for c in on:
        both = pc.unique(pa.chunked_array(rel_text[c].chunks + ext_text[c].chunks,
                                          type=pa.string()))
        nfc = normalize_text(both, "unicode")
        if len(pc.unique(nfc)) == len(both):
            continue  # each text has one form (whatever it is): they meet
        shares = []
        for text, what in ((ext_text[c], "external"), (rel_text[c], "released")):
            off = pc.not_equal(text, normalize_text(text, "unicode"))
            share = pc.mean(pc.cast(off, pa.int8())).as_py() or 0.0
            shares.append(f"{share:.0%} of the {what} values")
        odd = np.asarray(pc.not_equal(both, nfc).to_numpy(zero_copy_only=False), dtype=bool)
        example = both.filter(pa.array(odd))[0].as_py()
        out[c] = (f"the same text is written in two Unicode forms that do not match "
                  f"({' and '.join(shares)} are not composed (NFC), e.g. {ascii(example)}); "
                  "--normalize unicode")
    return out


#: warn when more than this share of external people match no record
NO_MATCH_WARNING = 0.5
#: name a join column when at least this share of the external people hold a value there
#: that matches no released value but would once normalized
PART_WARNING = 0.01


def _warnings(on, compat, ext_codes, rel_labels, ext_values, no_match, kinds, hierarchies,
              normalize, unicode: Mapping[str, str], missing: str) -> tuple[str, ...]:
    """Which join columns hold values written unlike the release's (even a part of them:
    case, spaces, Unicode forms, lost leading zeros), and, when most people match nothing,
    whether a column's format is to blame or the people are likely not in the release."""
    n = len(no_match)
    if not n:
        return ()
    most = no_match.mean() > NO_MATCH_WARNING
    out = []
    for q, c in enumerate(on):
        head = f"join column {c!r} ({kinds[c]})"
        if c in unicode:
            out.append(f"{head}: {unicode[c]}")
        labels, values = rel_labels[c], ext_values[c]
        blank = np.isin(labels, [SUPPRESSED, missing])
        if blank.all():
            continue
        people = np.bincount(ext_codes[:, q], minlength=len(values))
        lost = ~(_covered(compat[q], blank) | (values == missing))
        share = people[lost].sum() / n
        if not share:
            continue
        skip = [*normalize, "unicode"] if c in unicode else normalize
        how, fixed_people, value, fixed = _best_fix(c, labels, values, lost, people, kinds[c],
                                                    hierarchies.get(c), skip, missing)
        said = f"{head}: {share:.0%} of the external values match no released value"
        if how is not None and fixed_people / n >= PART_WARNING:
            out.append(f"{said}; {_fix_cause(how, value, fixed)} makes "
                       f"{fixed_people / n:.0%} of the external values match")
        elif most and share > NO_MATCH_WARNING:
            odd = _odd_format(values, lost, people, missing)
            if odd is not None:
                out.append(f"{said}; likely cause: format ({odd!r} is written unlike the "
                           f"values that match); write {c!r} as the release does")
    if most:
        out.insert(0, f"{no_match.mean():.0%} of the external people match no record: " + (
            "the join may not work, so these figures may understate the risk" if out else
            "no join column's values look written unlike the release's, so most are likely "
            "not in it (if they are, these figures understate the risk)"))
    return tuple(out)


def _encode(text: Mapping[str, pa.ChunkedArray], on: Sequence[str]
            ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Dictionary codes per column (rows × columns) and each column's distinct values."""
    codes, values = [], {}
    for c in on:
        encoded = pc.dictionary_encode(text[c]).combine_chunks()
        values[c] = np.asarray(encoded.dictionary.to_pylist(), dtype=object)
        codes.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
    return np.stack(codes, axis=1), values


def _tuples(codes: np.ndarray, radices: Sequence[int]):
    """Row -> tuple id, a row of each tuple, tuple counts, and tuple codes."""
    key = combine_keys(codes, radices)
    _, first, row_tuple, counts = np.unique(key, return_index=True, return_inverse=True,
                                            return_counts=True)
    row_tuple = row_tuple.reshape(-1)
    return row_tuple, first, counts.astype(np.int64), codes[first]


def _histogram(row_tuple: np.ndarray, n_tuples: int, column, missing: str
               ) -> tuple[np.ndarray, pa.Array]:
    """Per release tuple, the count of each value of a column; and the values."""
    encoded = pc.dictionary_encode(as_text(column, missing)).combine_chunks()
    width = len(encoded.dictionary)
    value = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    flat = np.bincount(row_tuple * width + value, minlength=n_tuples * width)
    return flat.reshape(n_tuples, width), encoded.dictionary


def _values(dictionary: pa.Array, index: np.ndarray) -> np.ndarray:
    """``dictionary[index]``, None where ``index`` is -1."""
    taken = dictionary.take(pa.array(index, mask=index < 0))
    return np.asarray(taken.to_pylist(), dtype=object)


def _kinds(on, ext_values, rel_labels, given: Mapping[str, str], missing: str
           ) -> dict[str, str]:
    """How each external column is read; a column the release shows as dates must parse."""
    kinds = {}
    for c in on:
        if c in given:
            if given[c] not in KINDS:
                raise BlendinError(f"unknown kind {given[c]!r} for column {c!r}",
                                   fix=f"use one of {', '.join(KINDS)}")
            kinds[c] = given[c]
            continue
        kinds[c] = guess_kind(ext_values[c], missing)
        shown = _release_kind(rel_labels[c])
        if shown == "date" and kinds[c] != "date":  # YYYYMMDD reads as a number, too
            parse_values(_compact_dates(ext_values[c], missing), "date", c, missing)
            kinds[c] = "date"
        elif kinds[c] == "categorical" and shown is not None:
            # the release shows dates/numbers: the values must parse
            parse_values(ext_values[c], shown, c, missing)
    return kinds


def _release_kind(labels: np.ndarray) -> str | None:
    """``"date"`` or ``"numeric"`` when every shown label of a release column is one."""
    shown = labels[(labels != "*") & (labels != "")]
    if not len(shown):
        return None
    if not np.isnan(parse_dates(shown)[0]).any():
        return "date"
    if not np.isnan(parse_numeric(shown)[0]).any():
        return "numeric"
    return None


class _Compat:
    """Which released labels of one column cover which external values: the pairs, and
    a lookup for any (label, value) arrays (a dense matrix when small, else a sorted key
    search)."""

    def __init__(self, labels: np.ndarray, values: np.ndarray, n_labels: int,
                 n_values: int) -> None:
        self.labels, self.values = labels, values
        self.shape = (n_labels, n_values)
        self.keys = labels * n_values + values  # sorted: cover_pairs returns them in order
        self._dense = None
        if n_labels * n_values <= BLOCK_CELLS:
            self._dense = self.matrix()

    def matrix(self) -> np.ndarray:
        if self._dense is None:
            dense = np.zeros(self.shape, dtype=bool)
            dense[self.labels, self.values] = True
            return dense
        return self._dense

    def lookup(self, labels: np.ndarray, values: np.ndarray) -> np.ndarray:
        if self._dense is not None:
            return self._dense[labels, values]
        wanted = labels.astype(np.int64) * self.shape[1] + values
        at = np.minimum(np.searchsorted(self.keys, wanted), max(len(self.keys) - 1, 0))
        return self.keys[at] == wanted if len(self.keys) else np.zeros(len(wanted), bool)


def _match(compat, rel_keys, ext_keys, rel_counts, histograms):
    """Per external tuple: compatible release records, the one compatible tuple (when the
    match is unique), and per sensitive attribute the index of its one compatible value
    (-1 when there are several or none).

    When one quasi-identifier is selective (exact values, as in a raw table), the
    compatible pairs are enumerated from its covering pairs and filtered by the others;
    otherwise the full (release × external) matrix is built in blocks.
    """
    n_rel, n_ext = len(rel_keys), len(ext_keys)
    pairs, q = _fewest_pairs(compat, rel_keys, ext_keys)
    if pairs <= SPARSE_SHARE * n_rel * n_ext:
        return _match_sparse(compat, q, rel_keys, ext_keys, rel_counts, histograms)
    return _match_dense(compat, rel_keys, ext_keys, rel_counts, histograms)


def _fewest_pairs(compat, rel_keys, ext_keys) -> tuple[float, int]:
    """The quasi-identifier whose covering pairs alone admit the fewest tuple pairs."""
    best = (np.inf, 0)
    for q, c in enumerate(compat):
        per_label = np.bincount(rel_keys[:, q], minlength=c.shape[0]).astype(float)
        per_value = np.bincount(ext_keys[:, q], minlength=c.shape[1]).astype(float)
        best = min(best, (float((per_label[c.labels] * per_value[c.values]).sum()), q))
    return best


def _match_dense(compat, rel_keys, ext_keys, rel_counts, histograms):
    n_rel, n_ext = len(rel_keys), len(ext_keys)
    matched = np.zeros(n_ext, dtype=np.int64)
    only = np.full(n_ext, -1, dtype=np.int64)
    learned = {s: np.full(n_ext, -1, dtype=np.int64) for s in histograms}
    block = max(1, BLOCK_CELLS // max(n_rel, 1))
    weights = rel_counts.astype(np.float64)
    matrices = [c.matrix() for c in compat]
    for start in range(0, n_ext, block):  # blocks of distinct external tuples
        stop = min(start + block, n_ext)
        ok = np.ones((n_rel, stop - start), dtype=bool)
        for q, matrix in enumerate(matrices):
            ok &= matrix[np.ix_(rel_keys[:, q], ext_keys[start:stop, q])]
        counts = np.rint(weights @ ok).astype(np.int64)
        matched[start:stop] = counts
        only[start:stop] = np.where(counts == 1, ok.argmax(axis=0), -1)
        for s, hist in histograms.items():
            seen = (ok.T.astype(np.float64) @ hist) > 0
            certain = (counts >= 1) & (seen.sum(axis=1) == 1)
            learned[s][start:stop] = np.where(certain, seen.argmax(axis=1), -1)
    return matched, only, learned


def _match_sparse(compat, q, rel_keys, ext_keys, rel_counts, histograms):
    n_ext = len(ext_keys)
    matched = np.zeros(n_ext, dtype=np.int64)
    tuple_sum = np.zeros(n_ext, dtype=np.int64)
    # one value per release tuple and attribute: its only value, or -1 when it has several
    single = {s: np.where((h > 0).sum(axis=1) == 1, (h > 0).argmax(axis=1), -1)
              for s, h in histograms.items()}
    low = {s: np.full(n_ext, np.iinfo(np.int64).max) for s in histograms}
    high = {s: np.full(n_ext, -2, dtype=np.int64) for s in histograms}
    for r, e in _pairs(compat[q], rel_keys[:, q], ext_keys[:, q]):
        keep = np.ones(len(r), dtype=bool)
        for p, c in enumerate(compat):
            if p != q:
                keep &= c.lookup(rel_keys[r, p], ext_keys[e, p])
        r, e = r[keep], e[keep]
        matched += np.bincount(e, weights=rel_counts[r], minlength=n_ext).astype(np.int64)
        tuple_sum += np.bincount(e, weights=r, minlength=n_ext).astype(np.int64)
        for s, value in single.items():
            np.minimum.at(low[s], e, value[r])
            np.maximum.at(high[s], e, value[r])
    # a unique match is one pair with a one-record tuple: the sum of its tuples is that tuple
    only = np.where(matched == 1, tuple_sum, -1)
    learned = {s: np.where((matched >= 1) & (low[s] == high[s]) & (low[s] >= 0), low[s], -1)
               for s in histograms}
    return matched, only, learned


def _pairs(compat: _Compat, rel_label: np.ndarray, ext_value: np.ndarray):
    """Chunks of (release tuple, external tuple) pairs whose labels cover the values, made
    from runs of tuples sharing a label / value (no loop over tuples)."""
    r_order = np.argsort(rel_label, kind="stable")
    r_count = np.bincount(rel_label, minlength=compat.shape[0])
    r_start = np.concatenate([[0], np.cumsum(r_count)[:-1]])
    e_order = np.argsort(ext_value, kind="stable")
    e_count = np.bincount(ext_value, minlength=compat.shape[1])
    e_start = np.concatenate([[0], np.cumsum(e_count)[:-1]])
    labels, values = compat.labels, compat.values
    a, b = r_count[labels], e_count[values]
    size = a * b
    keep = size > 0
    labels, values, b, size = labels[keep], values[keep], b[keep], size[keep]
    ends = np.cumsum(size)
    first = 0
    while first < len(size):  # chunks of about BLOCK_CELLS pairs
        base = ends[first] - size[first]
        last = max(int(np.searchsorted(ends, base + BLOCK_CELLS, side="right")), first + 1)
        k = np.arange(first, last)
        owner = np.repeat(k, size[k])
        offset = np.arange(len(owner)) - np.repeat(ends[k] - size[k] - base, size[k])
        i, j = offset // b[owner], offset % b[owner]
        yield r_order[r_start[labels[owner]] + i], e_order[e_start[values[owner]] + j]
        first = last
