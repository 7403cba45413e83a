"""The steps of the app as calls to the library: load, describe, build the spec, run, export.

Nothing here anonymizes: the spec is the TOML document a person would write
(:meth:`blendin.Spec.from_dict` reads and validates it), the release comes from
:func:`blendin.anonymize` on the very file the page loaded, and every figure from
:func:`blendin.check`, :func:`blendin.risk` and :func:`blendin.attack`. So the spec the page
offers for download, run with ``blendin anonymize``, makes the same release.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from blendin import models
from blendin.anonymize import anonymize
from blendin.app.profile import profile
from blendin.app.state import Job, Loaded, Run, Session
from blendin.attack import attack
from blendin.datasets import linking_tables, people
from blendin.errors import BlendinError
from blendin.frequency import SensitiveDomain
from blendin.hierarchy.builders import builder_from_toml
from blendin.io import Source, to_arrow, write_table, write_text
from blendin.models import DISTANCES
from blendin.risk import risk
from blendin.search.common import POLICIES
from blendin.spec import ALGORITHMS, METRICS, SECTIONS, Spec

READABLE = (".csv", ".tsv", ".txt", ".csv.gz", ".parquet", ".pq", ".xlsx")
#: k values of the privacy/utility trade-off plot
TRADEOFF_KS = (2, 3, 5, 10, 20, 50, 100)
PREVIEW_ROWS = 8
PREVIEW_VALUES = 12


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
              encoding: str | None = None, delimiter: str | None = None) -> Loaded:
    """Read a CSV/Parquet file as the CLI does (same errors), Excel through pandas.

    ``encoding`` and ``delimiter`` are the CLI's ``--encoding``/``--delimiter`` (the spec's
    ``[input]``); they go into the downloaded spec.
    """
    if suffix_of(path.name) == ".xlsx":
        path = _excel_to_csv(path, label)
        downloadable, encoding, delimiter = True, None, None
    table = Source(path, delimiter=delimiter, encoding=encoding).read_all()
    loaded = Loaded(label, path, table, profile(table), downloadable)
    loaded.options = {k: v for k, v in (("encoding", encoding), ("delimiter", delimiter)) if v}
    return loaded


def _excel_to_csv(path: Path, label: str) -> Path:
    """Excel becomes CSV (all values as text): the CLI and the spec work on that file."""
    import pandas as pd


    try:
        frame = pd.read_excel(path, dtype=str, keep_default_na=False)
    except Exception as error:  # noqa: BLE001 (openpyxl raises many kinds)
        raise BlendinError(f"cannot read {label!r} as Excel: {error}",
                           fix="save it again as .xlsx, or as .csv") from None
    if frame.empty:
        raise BlendinError(f"{label!r} has no rows", fix="give a table with a header and at "
                           "least one row")
    out = path.with_name(Path(label).stem + ".csv")
    write_table(pa.Table.from_pandas(frame, preserve_index=False), out)
    return out


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


def set_data(session: Session, loaded: Loaded) -> None:
    """Make ``loaded`` the session's table and start from the suggested roles."""
    session.data = loaded
    session.external = None
    session.roles = {c.name: c.role for c in loaded.columns}
    session.hierarchies = {c.name: c.hierarchy for c in loaded.columns}
    session.weights = {}
    session.runs = []
    sensitive = [c.name for c in loaded.columns if c.role == "sensitive"]
    session.models = [{"model": "k-anonymity", "k": 5}]
    if sensitive:
        session.models.append({"model": "distinct-l-diversity", "attribute": sensitive[0],
                               "l": 2})
    session.limits = {"max_suppression": 0.05}


def preview(loaded: Loaded) -> dict:
    """The first rows as text, for the page."""
    head = loaded.table.slice(0, PREVIEW_ROWS)
    rows = [[_text(v) for v in row.values()] for row in head.to_pylist()]
    return {"columns": loaded.table.column_names, "rows": rows, "records": loaded.table.num_rows}


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
          "seed": "seed (heuristic)"}


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
    attributes = {key: [c for c, r in roles.items() if r == role]
                  for key, role in (("identifiers", "identifier"), ("sensitive", "sensitive"))}
    anonymization = {k: v for k, v in session.limits.items() if v not in (None, "")}
    weights = {q: w for q, w in session.weights.items() if q in qis and w != 1}
    if weights:
        anonymization["weights"] = weights
    doc = {"input": dict(session.data.options)} if session.data.options else {}
    return doc | {
        "attributes": {k: v for k, v in attributes.items() if v},
        "quasi_identifiers": {q: session.hierarchies.get(q) or {"flat": True} for q in qis},
        "privacy": [dict(m) for m in session.models],
        "anonymization": anonymization,
    }


def build_spec(session: Session):
    """The validated Spec of the page's choices; BlendinError says what does not fit."""
    spec = Spec.from_dict(spec_document(session), base_dir=session.folder)
    spec.validate_columns(session.data.table.column_names)
    _check_models_on_data(spec, session.data.table)
    return spec


def _check_models_on_data(spec, table: pa.Table) -> None:
    """Let each model say whether this table can meet it at all (l above the distinct
    values, k above the records...), before anything runs."""
    import numpy as np


    domains = {}
    for name in spec.sensitive:
        counts = pc.value_counts(pc.cast(table.column(name), pa.string()).combine_chunks())
        domains[name] = SensitiveDomain(
            name, counts.field("values").to_numpy(zero_copy_only=False),
            np.asarray(counts.field("counts").to_numpy(), dtype=np.int64))
    for model in spec.models:
        if model.attribute is None or model.attribute in domains:
            model.validate(table.num_rows, domains)


# -- running -------------------------------------------------------------------------------


def run(session: Session, spec, job: Job) -> Run:
    """Anonymize the loaded file with ``spec``, then measure risk (and the linking attack)
    before and after; the result joins the session's runs."""
    path = session.data.path
    result = anonymize(str(path), spec, progress=job.progress)
    job.step = "measuring risk"
    qis = list(spec.quasi_identifiers)
    record = Run(len(session.runs) + 1, spec, result)
    record.risk_before = risk(session.data.table, qis)
    if result.table.num_rows:
        record.risk_after = risk(result.table, qis)
    if session.external is not None:
        job.step = "linking attack"
        record.attack_before, record.attack_after = linking_attack(session, result)
    with session.lock:
        session.runs.append(record)
    return record


def linking_attack(session: Session, result):
    """The attack on the input with identifiers removed, and on the release."""
    external = session.external.table
    qis = [q for q in result.spec.quasi_identifiers if q in external.column_names]
    if not qis:
        return None, None
    k = k_of(result.spec) or 5
    naive = session.data.table.drop_columns(
        [c for c in result.spec.identifiers if c in session.data.table.column_names])
    before = attack(naive, external, on=qis, k=max(k, 2))
    after = attack(result.table, external, on=qis, k=max(k, 2),
                   hierarchies=result.hierarchies) if result.table.num_rows else None
    return before, after


def k_of(spec) -> int | None:
    return next((int(m.k) for m in spec.models if getattr(m, "k", None) is not None), None)


def tradeoff(session: Session, run_: Run, job: Job) -> None:
    """Re-run the spec of ``run_`` for several k: loss and suppression against k."""
    base = run_.spec.to_dict()
    records = session.data.table.num_rows
    ks = [k for k in TRADEOFF_KS if k <= records]
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
            result = anonymize(str(session.data.path), spec, progress=job.stop_if_cancelled)
        except BlendinError as error:
            points.append({"k": k, "loss": None, "suppressed": None, "note": str(error)})
            continue
        points.append({"k": k, "loss": float(result.utility.get("loss", math.nan)),
                       "suppressed": result.suppressed / max(result.records, 1),
                       "note": ""})
    run_.tradeoff = points


# -- downloads -----------------------------------------------------------------------------

RELEASE_FORMATS = (".csv", ".parquet", ".xlsx")


def download(session: Session, run_: Run, what: str) -> Path:
    """Write one download of ``run_`` into the session folder and return its path."""
    result = run_.result
    stem = Path(session.data.label).name.split(".")[0]
    folder = session.file(f"run{run_.number}")
    folder.mkdir(exist_ok=True, mode=0o700)
    if what in RELEASE_FORMATS:
        return result.write(folder / f"{stem}_release{what}")
    if what == "spec":
        return write_text(folder / f"{stem}_spec.toml", run_.spec.to_toml())
    if what == "solution":
        return result.save_solution(folder / f"{stem}_solution.json")
    if what == "report":
        return result.report(folder / f"{stem}_report.html", original=str(session.data.path))
    raise BlendinError(f"unknown download {what!r}", fix="use the links in the page")

