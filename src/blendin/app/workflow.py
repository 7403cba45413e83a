"""The steps of the app as calls to the library: load, describe, build the spec, run, export.

Nothing here anonymizes: the spec is the TOML document a person would write
(:meth:`blendin.Spec.from_dict` reads and validates it), the release comes from
:func:`blendin.anonymize` on the very file the page loaded, and every figure from
:func:`blendin.check`, :func:`blendin.risk` and :func:`blendin.attack`. So the spec the page
offers for download, run with ``blendin anonymize``, makes the same release.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from blendin import models
from blendin.anonymize import anonymize
from blendin.app.profile import is_nested, profile
from blendin.app.state import Job, Loaded, Run, Session
from blendin.attack import attack
from blendin.datasets import linking_tables, people
from blendin.engines.databases import (
    DUCKDB_SUFFIXES,
    check_url,
    hidden,
    is_database,
    url_password,
)
from blendin.engines.sql import SqlEngine, SqlSource, TableRef, database
from blendin.errors import BlendinError
from blendin.frequency import SensitiveDomain
from blendin.hierarchy.builders import builder_from_toml
from blendin.io import Source, to_arrow, write_table, write_text
from blendin.models import DISTANCES
from blendin.project import write_project
from blendin.report.utility_html import release_keeps
from blendin.risk import risk
from blendin.search.common import POLICIES
from blendin.spec import ALGORITHMS, METRICS, SECTIONS, Spec
from blendin.utility import utility

READABLE = (".csv", ".tsv", ".txt", ".csv.gz", ".parquet", ".pq", ".xlsx")
#: k values of the privacy/utility trade-off plot
TRADEOFF_KS = (2, 3, 5, 10, 20, 50, 100)
#: the model and the records at most of the trade-off's accuracy (fast enough for every k)
TRADEOFF_MODEL = "logistic regression"
TRADEOFF_SAMPLE = 10_000
PREVIEW_ROWS = 8
PREVIEW_VALUES = 12
#: the rows of a table in a database the page reads for its profile, preview and hierarchy
#: previews (the runs read every row, in the database)
DATABASE_ROWS = 100_000


def _hospital(patients: int = 1000):
    return linking_tables(patients, 3 * patients, seed=0)


def _people():
    return people(2000, seed=0), None


#: built-in sample tables: key -> (label, maker returning (table, external table or None))
SAMPLES: dict[str, tuple[str, Callable[[], tuple[Any, Any]]]] = {
    "hospital": ("hospital records (1,000 patients) and the town's voter list", _hospital),
    "people": ("a town of 2,000 people (no sensitive column)", _people),
}


# -- loading -------------------------------------------------------------------------------


def suffix_of(name: str) -> str:
    lower = name.lower()
    return next((s for s in sorted(READABLE, key=len, reverse=True) if lower.endswith(s)),
                Path(lower).suffix)


def read_file(path: Path, label: str, *, downloadable: bool = False,
              encoding: str | None = None, delimiter: str | None = None,
              scratch: Path | None = None) -> Loaded:
    """Read a CSV/Parquet file as the CLI does (same errors), Excel through pandas (as a
    CSV file in the folder ``scratch``, by default the file's own: an upload's, private).

    ``encoding`` and ``delimiter`` are the CLI's ``--encoding``/``--delimiter`` (the spec's
    ``[input]``); they go into the downloaded spec.
    """
    if suffix_of(path.name) == ".xlsx":
        path = _excel_to_csv(path, label, scratch or path.parent)
        downloadable, encoding, delimiter = True, None, None
    signature = file_signature(path)  # (before reading: a change while it is read shows)
    table = Source(path, delimiter=delimiter, encoding=encoding).read_all()
    loaded = Loaded(label, path, table, profile(table), downloadable, signature=signature)
    loaded.options = {k: v for k, v in (("encoding", encoding), ("delimiter", delimiter)) if v}
    return loaded


def file_signature(path: Path) -> tuple[int, int]:
    """The size and modification time of a file: what changes when it is saved again."""
    info = path.stat()
    return info.st_size, info.st_mtime_ns


def check_unchanged(loaded: Loaded) -> None:
    """Refuse to run on a file that changed since the page read it (a file named on the
    command line, edited meanwhile): the run would read the new rows while the page's
    preview, risk before and side-by-side table show the old ones."""
    if loaded.path is None or loaded.signature is None:
        return
    try:
        now = file_signature(loaded.path)
    except OSError:
        now = None
    if now != loaded.signature:
        raise BlendinError(f"{loaded.label} changed since the page loaded it",
                           fix="load it again (open the address blendin app printed, or "
                               "upload it) to see and release its current rows")


def _excel_to_csv(path: Path, label: str, folder: Path) -> Path:
    """Excel becomes CSV (all values as text) in ``folder``: the CLI and the spec work on
    that file."""
    import pandas as pd


    _check_sheets(path, label)
    try:
        frame = pd.read_excel(path, dtype=str, keep_default_na=False)
    except Exception as error:  # noqa: BLE001 (openpyxl raises many kinds)
        raise BlendinError(f"cannot read {label!r} as Excel: {error}",
                           fix="save it again as .xlsx, or as .csv") from None
    if frame.empty:
        raise BlendinError(f"{label!r} has no rows", fix="give a table with a header and at "
                           "least one row")
    frame = _dates_as_dates(frame)
    out = folder / (Path(label).stem + ".csv")
    write_table(pa.Table.from_pandas(frame, preserve_index=False), out)
    return out


#: how pandas writes an Excel date cell as text: a date with a time of midnight
MIDNIGHT = r"\d{4}-\d{2}-\d{2} 00:00:00"


def _dates_as_dates(frame):
    """Columns of Excel date cells as dates (``1955-01-28``, as the sheet shows them and
    as the dates hierarchy and the profile read them), not as pandas' text for a
    timestamp (``1955-01-28 00:00:00``, which made a date of birth "text", given no
    dates ladder)."""
    for column in frame.columns:
        values = frame[column]
        filled = values[values != ""]
        if len(filled) and filled.str.fullmatch(MIDNIGHT).all():
            frame[column] = values.str.slice(0, 10)
    return frame


#: the sheets' text an Excel file may unpack to (parsing it takes about a minute a 100 MB)
SHEET_BYTES = 256 << 20


def _check_sheets(path: Path, label: str) -> None:
    """Refuse, before parsing, an Excel file whose sheets unpack to more than
    ``SHEET_BYTES`` of text, or to more than 16 MB and 200 times its own size (a small
    file built to take minutes and gigabytes)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as packed:
            sheets = sum(i.file_size for i in packed.infolist()
                         if i.filename.startswith("xl/worksheets/"))
    except (zipfile.BadZipFile, OSError):
        return  # (pandas names what is wrong with it)
    if sheets > SHEET_BYTES or sheets > max(200 * path.stat().st_size, 16 << 20):
        raise BlendinError(f"{label!r} unpacks to {sheets >> 20} MB of sheets, too many to "
                           "read here", fix="save it as .csv and load that")


def load_sample(session: Session, key: str) -> None:
    """Load a built-in sample table (and its external table) as CSV files."""
    if key not in SAMPLES:
        raise BlendinError(f"unknown sample table {key!r}", fix=f"use one of {', '.join(SAMPLES)}")
    table, external = SAMPLES[key][1]()
    path = write_table(to_arrow(table), session.file(f"{key}.csv"))
    set_data(session, read_file(Path(path), f"{key}.csv", downloadable=True))
    if external is not None:
        ext = write_table(to_arrow(external), session.file(f"{key}_external.csv"))
        session.external = read_file(Path(ext), f"{key}_external.csv", downloadable=True)


def load_database(session: Session, url: str, table: str = "", query: str = "",
                  schema: str = "", password: str = "", *, rows: int | None = None) -> None:
    """Load a table (or a query's rows) of a PostgreSQL or DuckDB database: the rows stay
    there (runs group them in the database); the page reads its first ``rows`` rows
    (:data:`DATABASE_ROWS`) for the profile, the preview and the hierarchy previews, and
    counts them all.

    ``password`` (the form's) goes to the driver only: no page, message or download shows
    it, nor the password of a URL.
    """
    url, table, query, schema = (str(v or "").strip() for v in (url, table, query, schema))
    # shown again in the form: never the password (nor the URL's)
    session.database_form = {"url": hidden(url), "table": table, "query": query,
                             "schema": schema}
    if not url:
        raise BlendinError("no database was given",
                           fix="give postgresql://USER@HOST:PORT/DB, duckdb:///FILE or "
                           "FILE.duckdb")
    if not is_database(url):
        raise BlendinError(f"{hidden(url)!r} is not a database blendin can read",
                           fix="give postgresql://USER@HOST:PORT/DB, duckdb:///FILE or "
                           "FILE.duckdb; upload a CSV, Parquet or Excel file instead")
    if "://" in url:
        check_url(url)
    if table and query:
        raise BlendinError("both a table and a query were given",
                           fix="give the table's name or a SELECT query, not both")
    if not table and not query:
        raise BlendinError("no table or query was given",
                           fix="give the table's name, or a SELECT query for its rows")
    url = _duckdb_file(url)
    ref = TableRef(url, table=table or None, query=query or None, schema=schema or None,
                   password=password or None)
    with connected(ref) as fresh:
        source = SqlEngine().source(fresh)
        records = int(source.db.scalar(f"SELECT count(*) FROM {source.relation}") or 0)
        if records == 0 or not source.columns:
            raise BlendinError(f"{source.name} has no rows",
                               fix="give a table with at least one row")
        sample = _first_rows(source, rows or DATABASE_ROWS)
    loaded = Loaded(ref.describe(), None, sample, profile(sample), ref=ref, records=records)
    set_data(session, loaded)
    session.message = f"loaded {loaded.label}"
    if loaded.sampled:
        session.message += (f": {records:,} records; the page shows the first "
                            f"{sample.num_rows:,}, the run reads them all in the database")


def _duckdb_file(url: str) -> str:
    """The URL with a DuckDB file's ``~`` expanded; the file must exist (opening a path
    that names none would make an empty database there)."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme != "duckdb" and not (not scheme and url.lower().endswith(DUCKDB_SUFFIXES)):
        return url
    path = url.partition("://")[2] if scheme else url
    path = path[1:] if scheme and path.startswith("/") else path
    if path in ("", ":memory:"):
        raise BlendinError("an in-memory DuckDB database holds no table to load",
                           fix="give the path of a DuckDB file: duckdb:///FILE or FILE.duckdb")
    if not Path(path).expanduser().is_file():
        raise BlendinError(f"there is no DuckDB file {path!r}",
                           fix="give the path of an existing DuckDB file (duckdb:///FILE, "
                           "with the path absolute or relative to where blendin app runs)")
    return str(Path(path).expanduser()) if path.startswith("~") else url


def _first_rows(source: SqlSource, rows: int) -> pa.Table:
    """The first ``rows`` rows of ``source`` (read in batches; the rest is not read)."""
    parts, read = [], 0
    batches = source.batches()
    try:
        for batch in batches:
            part = batch.slice(0, rows - read)
            parts.append(part)
            read += part.num_rows
            if read >= rows:
                break
    finally:
        batches.close()  # ends the database's read (a COPY, a cursor) early
    if not parts:
        raise BlendinError(f"{source.name} has no rows", fix="give a table with at least one row")
    return pa.concat_tables(parts).combine_chunks()


@contextlib.contextmanager
def connected(ref: TableRef) -> Iterator[TableRef]:
    """``ref`` with a connection of its own, closed at the end: the app holds no database
    (nor a DuckDB file's lock) between its steps. DuckDB reads no other file there (a
    query's ``read_text``). A password that an unexpected error quotes is replaced by
    ``***``."""
    fresh = dataclasses.replace(ref, opened=[])
    secret = secret_of(ref)
    try:
        db = database(fresh)
        if db.dialect == "duckdb":  # a page's query reads no file of this machine
            db.execute("SET enable_external_access = false")  # (the app serves others)
        yield fresh
    except BlendinError as error:
        if secret and secret in str(error):
            raise BlendinError(error.problem.replace(secret, "***"),
                               fix=(error.fix or "").replace(secret, "***") or None) from None
        raise
    except Exception as error:
        if secret and secret in str(error):
            raise BlendinError(f"{type(error).__name__}: {str(error).replace(secret, '***')}",
                               fix="check the database, the table and the query") from None
        raise
    finally:
        for db in fresh.opened:
            with contextlib.suppress(Exception):
                db.close()


def secret_of(ref: TableRef | None) -> str | None:
    """The password of a table in a database: the form's, or the URL's."""
    if ref is None:
        return None
    url = str(ref.database)
    return ref.password or (url_password(url) if "://" in url else None)


def without_secret(text: str, ref: TableRef | None) -> str:
    secret = secret_of(ref)
    return text.replace(secret, "***") if secret else text


def set_data(session: Session, loaded: Loaded) -> None:
    """Make ``loaded`` the session's table and start from the suggested roles."""
    if session.job is not None and not session.job.done:
        session.job.cancel.set()  # a run of the table loaded before releases nothing now
    session.data = loaded
    session.external = None
    session.roles = {c.name: c.role for c in loaded.columns}
    session.hierarchies = {c.name: c.hierarchy for c in loaded.columns}
    session.weights = {}
    session.set_aside = {}
    session.runs = []
    sensitive = [c.name for c in loaded.columns if c.role == "sensitive"]
    session.models = [{"model": "k-anonymity", "k": 5}]
    if sensitive:
        session.models.append({"model": "distinct-l-diversity", "attribute": sensitive[0],
                               "l": 2})
    session.limits = {"max_suppression": 0.05}
    session.carried = {}


def preview(loaded: Loaded) -> dict:
    """The first rows as text, for the page."""
    head = loaded.table.slice(0, PREVIEW_ROWS)
    rows = [[_text(v) for v in row.values()] for row in head.to_pylist()]
    return {"columns": loaded.table.column_names, "rows": rows, "records": loaded.rows,
            "held": loaded.table.num_rows}


def _text(value) -> str:
    return "" if value is None else str(value)


# -- hierarchies ---------------------------------------------------------------------------

#: builder key -> the parameters the page asks for (name, label, example)
BUILDERS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "intervals": (("intervals", "widths", "5, 10, 20"), ("bottom", "bottom", ""),
                  ("top", "top", "")),
    "masking": (("masking", "width (empty: same width)", ""), ("char", "mask", "*")),
    "dates": (("dates", "levels", "month, year, decade"), ("format", "format", "")),
    "flat": (),
    "tree": (("tree", "tree (JSON: group -> values)", '{"Married": ["Married", "Divorced"]}'),),
    "csv": (("csv", "ARX hierarchy file", ""),),
}


def builder_table(kind: str, fields: dict[str, str]) -> dict:
    """The spec's TOML table of a hierarchy from the form's text fields.

    >>> builder_table("intervals", {"intervals": "5, 10", "bottom": "0", "top": ""})
    {'intervals': [5, 10], 'bottom': 0}
    >>> builder_table("dates", {"dates": "month, year"})
    {'dates': ['month', 'year']}
    """
    import json

    if kind == "flat":
        return {"flat": True}
    if kind == "intervals":
        table = {"intervals": [number(w) for w in _items(fields.get("intervals", ""))]}
        for key in ("bottom", "top"):
            if fields.get(key, "").strip():
                table[key] = number(fields[key])
        return table
    if kind == "masking":
        width = fields.get("masking", "").strip()
        table = {"masking": int(width) if width.isdigit() else True}
        if fields.get("char", "*") not in ("", "*"):
            table["char"] = fields["char"]
        return table
    if kind == "dates":
        table = {"dates": _items(fields.get("dates", ""))}
        if fields.get("format", "").strip():
            table["format"] = fields["format"].strip()
        return table
    if kind == "tree":
        try:
            return {"tree": json.loads(fields.get("tree", "") or "{}")}
        except json.JSONDecodeError as error:
            raise BlendinError(f"the tree is not valid JSON: {error}",
                               fix='write e.g. {"Married": ["Married", "Divorced"]}') from None
    if kind == "csv":
        return {"csv": fields.get("csv", "")}
    raise BlendinError(f"unknown hierarchy {kind!r}", fix=f"use one of {', '.join(BUILDERS)}")


def builder_fields(table: dict) -> tuple[str, dict[str, str]]:
    """The inverse of :func:`builder_table`: which builder, and its fields as text."""
    import json

    kind = next((k for k in BUILDERS if k in table), "flat")
    fields: dict[str, str] = {}
    for key, value in table.items():
        if isinstance(value, list):
            fields[key] = ", ".join(str(v) for v in value)
        elif isinstance(value, dict):
            fields[key] = json.dumps(value)
        elif value is True:
            fields[key] = ""
        else:
            fields[key] = str(value)
    return kind, fields


def _items(text: str) -> list[str]:
    return [t.strip() for t in str(text).split(",") if t.strip()]


def number(text: str):
    """A form field as a TOML number; anything else is returned as typed (the spec explains).

    >>> number("5"), number("2.5"), number(" 1e-3 "), number("five")
    (5, 2.5, 0.001, 'five')
    """
    text = str(text).strip()
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text and "e" not in text else value


def hierarchy_preview(session: Session, column: str, table: dict) -> dict:
    """The levels the hierarchy gives the column's real values (a few of them)."""
    loaded = session.data
    _check_flat(loaded.table, [column])
    values = pc.unique(pc.cast(loaded.table.column(column), pa.string())).to_numpy(
        zero_copy_only=False)
    builder = builder_from_toml(table, base_dir=session.folder)
    hierarchy = builder.build(values.astype(object), name=column)
    rows = hierarchy.to_rows()
    step = max(len(rows) // PREVIEW_VALUES, 1)
    shown = rows[::step][:PREVIEW_VALUES]
    return {"height": hierarchy.height, "distinct": len(rows), "rows": shown}


# -- models and the spec -------------------------------------------------------------------


def model_catalog() -> dict[str, dict]:
    """Every privacy model the library reads from a ``[[privacy]]`` table, with its keys.

    Read from :data:`blendin.models.MODELS`, so models added there show up in the page.

    >>> model_catalog()["k-anonymity"]["required"]
    ('k',)
    """
    registry = getattr(models, "MODELS", {})
    out = {}
    for key, entry in registry.items():
        try:
            cls, required, optional = entry[0], tuple(entry[1]), tuple(entry[2])
        except (TypeError, IndexError, KeyError):  # a registry of objects with attributes
            cls = entry if isinstance(entry, type) else getattr(entry, "cls", type(entry))
            required = tuple(getattr(entry, "required", ()))
            optional = tuple(getattr(entry, "optional", ()))
        doc = (cls.__doc__ or "").strip().split("\n")[0].replace("``", "")
        out[key] = {"required": required,
                    "optional": tuple(k for k in optional if k != "hierarchy"),
                    "doc": doc}
    return out


#: [anonymization] keys the page has its own fields for; any other key the spec accepts
#: (e.g. a search budget) gets a plain field
LIMIT_FIELDS = ("max_suppression", "algorithm", "metric", "policy", "weights")
#: [anonymization] keys that are switches
SWITCHES = ("relaxed", "sets", "recode_suppressed")
#: how the page names [anonymization] keys (a key not listed shows as it is)
LABELS = {"relaxed": "relaxed (Mondrian)", "sets": "sets (Mondrian)",
          "recode_suppressed": "recode suppressed records (full-domain)",
          "time_limit": "time limit, s (heuristic)", "max_checks": "node checks (heuristic)",
          "seed": "seed (heuristic)", "suppression": "suppression (records or cells)",
          "cell_priority": "cells blanked first (QIs, by commas)"}


def choices() -> dict[str, tuple]:
    """Algorithms, metrics, tie-break policies and further [anonymization] keys, as the spec
    module lists them (so what the library adds shows up in the page)."""
    keys = SECTIONS.get("anonymization") or ()
    extra = tuple(k for k in keys if k not in LIMIT_FIELDS)
    return {"algorithms": tuple(ALGORITHMS), "metrics": tuple(METRICS),
            "policies": tuple(POLICIES), "distances": tuple(DISTANCES),
            "switches": tuple(k for k in extra if k in SWITCHES),
            "extra_limits": tuple(k for k in extra if k not in SWITCHES),
            "labels": {k: LABELS.get(k, k) for k in extra}}


def spec_document(session: Session) -> dict:
    """The spec as the TOML document (dict of sections) a person would have written."""
    roles = session.roles
    qis = [c for c, r in roles.items() if r == "quasi-identifier"]
    attributes: dict = {key: [c for c, r in roles.items() if r == role]
                        for key, role in (("identifiers", "identifier"),
                                          ("sensitive", "sensitive"))}
    keys = [c for c, r in roles.items() if r == "person key"]
    if len(keys) > 1:
        raise BlendinError(f"{len(keys)} columns are the person key ({', '.join(keys)}); a "
                           "table has one", fix="make one of them the person key, the "
                                                "others identifiers")
    if keys:  # every count then counts people (docs/people.md)
        attributes["person"] = keys[0]
    anonymization = {k: v for k, v in session.limits.items() if v not in (None, "")}
    if isinstance(anonymization.get("cell_priority"), str):  # the field's names, by commas
        anonymization["cell_priority"] = _items(anonymization["cell_priority"])
    weights = {q: w for q, w in session.weights.items() if q in qis and w != 1}
    if weights:
        anonymization["weights"] = weights
    carried = session.carried  # a project's sections the page has no fields for
    attributes |= carried.get("attributes", {})
    read = dict(session.data.options) | carried.get("input", {})
    doc = {"input": read} if read else {}
    if carried.get("transform"):
        doc["transform"] = dict(carried["transform"])
    return doc | {
        "attributes": {k: v for k, v in attributes.items() if v},
        "quasi_identifiers": {q: session.hierarchies.get(q) or {"flat": True} for q in qis}
        | carried.get("quasi_identifiers", {}),
        "privacy": [dict(m) for m in session.models],
        "anonymization": anonymization,
    }


def build_spec(session: Session):
    """The validated Spec of the page's choices; BlendinError says what does not fit."""
    check_unchanged(session.data)
    spec = Spec.from_dict(spec_document(session), base_dir=session.folder)
    spec.validate_columns(session.data.table.column_names)
    _check_flat(session.data.table, [*spec.quasi_identifiers, *spec.sensitive])
    _check_models_on_data(spec, session.data.table, session.data.rows)
    return spec


def _check_flat(table: pa.Table, columns) -> None:
    """Quasi-identifiers and sensitive attributes hold single values, not lists or records."""
    for name in columns:
        if name in table.column_names and is_nested(table.schema.field(name).type):
            raise BlendinError(f"column {name!r} holds lists or records, which cannot be "
                               "a quasi-identifier or sensitive",
                               fix=f"mark {name!r} insensitive (or identifier, to remove it)")


def _check_models_on_data(spec, table: pa.Table, records: int | None = None) -> None:
    """Let each model say whether this table can meet it at all (l above the distinct
    values, k above the records...), before anything runs.

    When ``table`` holds only the first of ``records`` rows (a table in a database), the
    models of a sensitive attribute are left to the run: its values are counted there."""
    import numpy as np

    if records is not None and records > table.num_rows:
        for model in spec.models:
            if model.attribute is None or model.attribute not in spec.sensitive:
                model.validate(records, {})  # (the latter explains the attribute)
        return
    domains = {}
    # a hierarchical t-closeness's hierarchy, as a run builds it (its values coded by it)
    hierarchies = spec.build_sensitive_hierarchies(table.select(
        [n for n in spec.sensitive_builders() if n in table.column_names]))
    for name in spec.sensitive:
        counts = pc.value_counts(pc.cast(table.column(name), pa.string()).combine_chunks())
        values = counts.field("values")
        number = np.asarray(counts.field("counts").to_numpy(), dtype=np.int64)
        hierarchy = hierarchies.get(name)
        if hierarchy is None:
            domains[name] = SensitiveDomain(name, values.to_numpy(zero_copy_only=False),
                                            number)
            continue
        codes = hierarchy.encode(pc.fill_null(values, spec.missing), name)
        domains[name] = SensitiveDomain(name, hierarchy.ground, np.bincount(
            codes, weights=number, minlength=len(hierarchy.ground)).astype(np.int64),
            hierarchy)
    for model in spec.models:
        if model.attribute is None or model.attribute in domains:
            model.validate(table.num_rows, domains)


# -- running -------------------------------------------------------------------------------


def run(session: Session, spec, job: Job) -> Run:
    """Anonymize the loaded file with ``spec``, then measure risk (and the linking attack)
    before and after; the result joins the session's runs.

    A table in a database is anonymized there (the SQL engine groups its rows; the release
    comes back in memory), and its risk and distinct values are measured there too, on
    every row, not on the page's first rows."""
    data = session.data
    qis = list(spec.quasi_identifiers)
    if data.ref is not None:
        with connected(data.ref) as ref:
            result = anonymize(ref, spec, progress=job.progress)
            record = Run(len(session.runs) + 1, spec, result)
            job.step = "measuring risk"
            record.risk_before = risk(ref, qis, person=spec.person)
            record.distinct_before = distinct_counts(SqlEngine().source(ref), qis)
    else:
        result = anonymize(str(data.path), spec, progress=job.progress)
        job.step = "measuring risk"
        record = Run(len(session.runs) + 1, spec, result)
        record.risk_before = risk(data.table, qis, person=spec.person)
        job.step = "measuring what the release keeps"
        record.keeps = release_keeps(result, data.table, input_values=True)
    if result.table.num_rows:
        counted = result.release_people is not None  # the release's rows, by person
        record.risk_after = risk(result.table_with_people(), qis,
                                 person=spec.person if counted else None)
    external = session.external  # (the one the figures name, even if another is loaded)
    if external is not None:
        _still_loaded(session, data)
        job.step = "linking attack"
        record.attack_before, record.attack_after = linking_attack(session, result,
                                                                   external)
        record.external = external.label
    with session.lock:
        _still_loaded(session, data)
        # numbered on from the runs of tables loaded before: a page still open on one of
        # them never downloads another table's release under its run's number
        session.numbered += 1
        record.number = session.numbered
        session.runs.append(record)
    return record


def _still_loaded(session: Session, data: Loaded) -> None:
    """A run ends only on the table it started from: loading another one drops it (else
    its release would be shown, and downloaded, under the new table's name)."""
    if session.data is not data:
        raise BlendinError(f"the run of {data.label} was dropped: {session.data.label} was "
                           "loaded while it ran",
                           fix=f"run again to release {session.data.label}")


def distinct_counts(source: SqlSource, columns: list[str]) -> dict[str, int]:
    """The distinct values of each column, counted by the database in one pass; NULL is
    one of them (the release keeps it as a value of its own), as in a loaded file."""
    if not columns:
        return {}
    counts = ", ".join(f"count(DISTINCT {source.db.quote(c)}) + max(CASE WHEN "
                       f"{source.db.quote(c)} IS NULL THEN 1 ELSE 0 END) AS "
                       f"{source.db.quote(c)}" for c in columns)
    row = source.db.arrow(f"SELECT {counts} FROM {source.relation}").to_pylist()[0]
    return {c: int(row[c] or 0) for c in columns}


def linking_attack(session: Session, result, loaded: Loaded | None = None):
    """The attack on the input with identifiers removed, and on the release, by the
    people of ``loaded`` (the session's external table)."""
    external = (loaded or session.external).table
    qis = [q for q in result.spec.quasi_identifiers if q in external.column_names]
    if not qis:
        return None, None
    k = k_of(result.spec) or 5
    naive = session.data.table.drop_columns(
        [c for c in result.spec.identifiers if c in session.data.table.column_names])
    person = result.person_counted(qis)  # a patient with five visits is one match
    before = attack(naive, external, on=qis, k=max(k, 2), person=person)
    released = result.table_with_people()
    after = attack(released, external, on=qis, k=max(k, 2), hierarchies=result.hierarchies,
                   person=person if person in released.column_names else None
                   ) if result.table.num_rows else None
    return before, after


def k_of(spec) -> int | None:
    return next((int(m.k) for m in spec.models if getattr(m, "k", None) is not None), None)


def tradeoff(session: Session, run_: Run, job: Job, target: str | None = None) -> None:
    """Re-run the spec of ``run_`` for several k: loss and suppression against k; with a
    ``target`` column, also the accuracy of a model trained on each release to predict it
    (logistic regression, :data:`TRADEOFF_SAMPLE` records at most)."""
    check_unchanged(session.data)
    base = run_.spec.to_dict()
    ks = [k for k in TRADEOFF_KS if k <= session.data.rows]
    if target is not None:
        choices = target_columns(session, run_.spec)
        if target not in choices:
            raise BlendinError(f"cannot predict {target!r} in the trade-off",
                               fix=f"choose one of {', '.join(choices) or '(none)'}: a "
                                   "column of a file that is not a quasi-identifier")
    with _input_of(session) as data:
        run_.tradeoff = _tradeoff_points(session, base, ks, data, job, target)


def target_columns(session: Session, spec) -> list[str]:
    """The columns the trade-off may predict: those of a loaded file (not a table in a
    database) that the spec neither generalizes nor removes."""
    if session.data.ref is not None:
        return []
    taken = {*spec.quasi_identifiers, *spec.identifiers}
    return [c for c in session.data.table.column_names if c not in taken]


@contextlib.contextmanager
def _input_of(session: Session):
    """What the library reads: the file's path, or the table in a database (connected)."""
    if session.data.ref is None:
        yield str(session.data.path)
    else:
        with connected(session.data.ref) as ref:
            yield ref


def _tradeoff_points(session: Session, base: dict, ks: list[int], data, job: Job,
                     target: str | None = None) -> list[dict]:
    points = []
    for i, k in enumerate(ks):
        job.checked, job.total, job.step = i, len(ks), f"k = {k}"
        if job.cancel.is_set():
            break
        doc = dict(base)
        doc["privacy"] = [m for m in base["privacy"] if m.get("model") != "k-anonymity"]
        doc["privacy"].insert(0, {"model": "k-anonymity", "k": k})
        try:
            spec = Spec.from_dict(doc, base_dir=session.folder)
            result = anonymize(data, spec, progress=job.stop_if_cancelled)
            point = {"k": k, "loss": float(result.utility.get("loss", math.nan)),
                     "suppressed": result.suppressed / max(result.records, 1), "note": ""}
            if target is not None:
                point |= _accuracy(session.data.table, result, target)
        except BlendinError as error:
            point = {"k": k, "loss": None, "suppressed": None,
                     "note": without_secret(str(error), session.data.ref)}
        points.append(point)
    return points


def _accuracy(table, result, target: str) -> dict:
    """How well a model trained on the release predicts ``target``, beside the input's."""
    found = utility(table, result.table, result.spec, target=target,
                    models=[TRADEOFF_MODEL], sample=TRADEOFF_SAMPLE).classification
    return {"accuracy": found.released[TRADEOFF_MODEL].accuracy,
            "input_accuracy": found.original[TRADEOFF_MODEL].accuracy,
            "baseline": found.baseline.accuracy, "target": target}


# -- downloads -----------------------------------------------------------------------------

RELEASE_FORMATS = (".csv", ".parquet", ".xlsx")


def download(session: Session, run_: Run, what: str) -> Path:
    """Write one download of ``run_`` into the session folder and return its path."""
    result = run_.result
    stem = session.data.stem
    folder = session.file(f"run{run_.number}")
    folder.mkdir(exist_ok=True, mode=0o700)
    if what in RELEASE_FORMATS:
        return result.write(folder / f"{stem}_release{what}")
    if what == "spec":
        return write_text(folder / f"{stem}_spec.toml", run_.spec.to_toml())
    if what == "solution":
        return result.save_solution(folder / f"{stem}_solution.json")
    if what == "project":
        return _project(session, run_, folder, stem)
    if what == "report":
        if session.data.ref is None:
            check_unchanged(session.data)  # (the report reads the input's risk again)
            return result.report(folder / f"{stem}_report.html",
                                 original=str(session.data.path))
        with connected(session.data.ref) as ref:  # the input's risk, read in the database
            return result.report(folder / f"{stem}_report.html",
                                 original=SqlEngine().source(ref))
    raise BlendinError(f"unknown download {what!r}", fix="use the links in the page")


def _project(session: Session, run_: Run, folder: Path, stem: str) -> Path:
    """The run's bundle: its spec with every hierarchy file, the saved solution (a
    full-domain release) and the report."""
    files = {"report.html": download(session, run_, "report")}
    if run_.result.levels:
        files["solution.json"] = download(session, run_, "solution")
    return write_project(folder / f"{stem}_project.zip", run_.spec, files)


def script_command(session: Session) -> str:
    """The command that repeats the page's release from a script (with the spec download)."""
    data = session.data
    spec = f"{data.stem}_spec.toml"
    if data.ref is None:  # (quoted: a file's name may hold spaces, $( ), or begin with -)
        def file(name: str) -> str:  # (a name that begins with - is no option)
            return f"./{name}" if name.startswith("-") else name

        return shlex.join(["blendin", "anonymize", file(data.path.name), "--spec", file(spec),
                           "-o", "release.csv"])
    ref = data.ref
    words = ["blendin", "anonymize", hidden(str(ref.database))]
    for option, value in (("--table", ref.table), ("--query", ref.query),
                          ("--schema", ref.schema)):
        if value is not None:
            words += [option, value]
    words += ["--spec", spec, "-o", "release.csv"]
    if ref.password:
        words += ["--password-env", "BLENDIN_DB_PASSWORD"]
    return shlex.join(words)

