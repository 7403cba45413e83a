"""Continuing a project in the app: a bundle (.zip), or a spec with the hierarchy files it
names, taken onto the loaded table as the page's roles, hierarchies, models and limits."""

from __future__ import annotations

import shutil
from pathlib import Path

from blendin.app.state import Session
from blendin.app.workflow import suffix_of
from blendin.errors import BlendinError
from blendin.io import unpack_zip
from blendin.project import csv_paths
from blendin.spec import SURVEY, TRANSFORMS, Spec, project_spec

#: the [input] keys of a project that change what a run counts and writes: the label of a
#: missing value, and the spellings of a sensitive value counted as one (l-diversity...)
INPUT_KEPT = ("missing", "normalize")


def load_project(session: Session, uploads: list[tuple[str, Path]]) -> str:
    """Take the roles, hierarchies, models and limits of a project bundle (a .zip), or of
    a spec (.toml) given with the hierarchy files it names, for the loaded table; returns
    what was loaded, in words."""
    if session.data is None:
        raise BlendinError("there is no table to apply the project to",
                           fix="load the data first, then the project")
    inbox = session.file("project")
    shutil.rmtree(inbox, ignore_errors=True)
    inbox.mkdir(mode=0o700)
    zips = [p for name, p in uploads if suffix_of(name) == ".zip"]
    specs = [(name, p) for name, p in uploads if suffix_of(name) == ".toml"]
    if len(zips) + len(specs) != 1:
        raise BlendinError("give one project: a .zip, or one .toml with its hierarchy files",
                           fix="choose the bundle the app downloaded, or the spec and the "
                               ".csv files it names")
    if zips:
        unpack_zip(zips[0], inbox)
        spec_path = project_spec(inbox, "the bundle")
    else:
        spec_path = inbox / "spec.toml"
        shutil.copyfile(specs[0][1], spec_path)
        for name, path in uploads:
            if suffix_of(name) == ".csv":
                shutil.copyfile(path, inbox / Path(name).name)
    document = _populations_given(_by_name(_toml_document(spec_path), inbox), inbox)
    Spec.from_dict(document, base_dir=inbox).validate_columns(session.data.table.column_names)
    _take(session, document, inbox)
    qis = len(document.get("quasi_identifiers", {}))
    carried = carried_text(session)
    return (f"project loaded: {qis} quasi-identifier{'s' if qis != 1 else ''}, "
            f"{len(document.get('privacy', []))} privacy model(s); run it as it is or change "
            "it" + (f". Kept as written (the page has no fields for them): {carried}"
                    if carried else ""))


def carried_text(session: Session) -> str:
    """What the page keeps of a project without showing fields for it, in words."""
    carried = session.carried
    parts = [f"{column} ({next(iter(table))})" for section in ("quasi_identifiers",
                                                               "transform")
             for column, table in carried.get(section, {}).items()]
    parts += [f"{key} {value}" for key, value in carried.get("attributes", {}).items()]
    parts += [f"[input] {key} = {value!r}" for key, value in carried.get("input", {}).items()]
    return ", ".join(parts)


def _toml_document(path: Path) -> dict:
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise BlendinError(f"the project's spec is not valid TOML ({error})",
                           fix="give the spec the app or blendin wrote") from None


def _given(inbox: Path, what: str, fix: str):
    """How a path of the spec points at the files given with it: as written when it lies
    among them (never a file outside them: /etc/..), else the given file of that name."""
    def given(where: str) -> str:
        found = (inbox / where).resolve()
        if found.is_relative_to(inbox.resolve()) and found.is_file():
            return where
        if not (inbox / Path(where).name).is_file():
            raise BlendinError(f"the spec names the {what} {where!r}, which was not given",
                               fix=fix)
        return Path(where).name
    return given


def _by_name(document: dict, inbox: Path) -> dict:
    """The ``csv`` entries of ``document`` pointed at the files given with it."""
    return csv_paths(document, _given(inbox, "hierarchy file", "give its .csv file with "
                                      "the spec, or the project's .zip"))


def _populations_given(document: dict, inbox: Path) -> dict:
    """The population tables of ``document``'s models (k-map) named relative to the spec
    pointed at the files given with it, as :func:`_by_name` points its hierarchy files; a
    whole path names a file of this machine, as typed in the page."""
    relative = _given(inbox, "population table", "give its file with the spec, or in the "
                      "project's .zip")

    def given(where: str) -> str:
        return where if Path(where).expanduser().is_absolute() else relative(where)

    privacy = document.get("privacy")
    if not isinstance(privacy, list):
        return document
    models = [dict(m, population=given(m["population"])) if isinstance(m, dict)
              and isinstance(m.get("population"), str) else m for m in privacy]
    return {**document, "privacy": models}


def _take(session: Session, document: dict, inbox: Path) -> None:
    """The page's choices from a checked spec document, its files copied to the session's
    hierarchy folder."""
    attributes = document.get("attributes", {})
    qis = document.get("quasi_identifiers", {})
    transformed = {c: t for c, t in qis.items() if any(k in t for k in TRANSFORMS)}
    qis = {c: t for c, t in qis.items() if c not in transformed}
    roles = {c: "insensitive" for c in session.data.table.column_names}
    roles |= {c: "identifier" for c in attributes.get("identifiers", [])}
    roles |= {c: "sensitive" for c in attributes.get("sensitive", [])}
    roles |= {c: "quasi-identifier" for c in qis}
    read = document.get("input", {})  # (encoding and delimiter: as the page read the file)
    session.carried = {name: section for name, section in (
        ("quasi_identifiers", transformed), ("transform", document.get("transform", {})),
        ("attributes", {k: attributes[k] for k in SURVEY if k in attributes}),
        ("input", {k: read[k] for k in INPUT_KEPT if k in read})) if section}
    if attributes.get("person"):
        roles[attributes["person"]] = "person key"
    hierarchies = dict(session.hierarchies)
    for column, table in qis.items():
        table = dict(table)
        if isinstance(table.get("csv"), str):
            dest = session.hierarchy_file(column, hierarchies)
            shutil.copyfile(inbox / table["csv"], dest)
            table["csv"] = f"hierarchies/{dest.name}"
        hierarchies[column] = table
    models = [dict(m) for m in document.get("privacy", [])]
    for model in models:  # a population table given with the project, kept in the session
        where = model.get("population")
        if isinstance(where, str) and not Path(where).expanduser().is_absolute():
            folder = session.file("populations")
            folder.mkdir(exist_ok=True, mode=0o700)
            shutil.copyfile(inbox / where, folder / Path(where).name)
            model["population"] = f"populations/{Path(where).name}"
    for model in models:  # a hierarchical t-closeness's file, beside the QIs' files
        table = model.get("hierarchy")
        if isinstance(table, dict) and isinstance(table.get("csv"), str):
            taken = hierarchies | {f"model {i}": m.get("hierarchy") for i, m in
                                   enumerate(models) if m is not model}
            dest = session.hierarchy_file(f"{model.get('attribute', 'sensitive')}_hierarchy",
                                          taken)
            shutil.copyfile(inbox / table["csv"], dest)
            model["hierarchy"] = {**table, "csv": f"hierarchies/{dest.name}"}
    anonymization = dict(document.get("anonymization", {}))
    if "cell_priority" in anonymization:  # a field of the page: the names, by commas
        anonymization["cell_priority"] = ", ".join(anonymization["cell_priority"])
    session.weights = dict(anonymization.pop("weights", {}))
    session.roles, session.hierarchies = roles, hierarchies
    session.models = models
    session.limits = anonymization
