"""A project bundle: one .zip that carries a release's spec with every hierarchy file it
names, and (optionally) its saved solution and report, so the work can be resumed or
handed on. ``blendin anonymize data.csv --spec project.zip`` runs it as it is, and so does
the unpacked folder; the app loads it back.

Inside: ``spec.toml``, whose ``csv = ...`` entries point into ``hierarchies/``, the
hierarchy files there, and the extra files by their names.

>>> import tempfile, pathlib
>>> import blendin as bl
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "sex.csv").write_text("F;*\\nM;*\\n")
>>> spec = bl.Spec(quasi_identifiers={"sex": bl.from_csv(folder / "sex.csv")},
...                models=[bl.KAnonymity(2)])
>>> bundle = write_project(folder / "project.zip", spec)
>>> import zipfile; sorted(zipfile.ZipFile(bundle).namelist())
['hierarchies/sex.csv', 'spec.toml']
>>> bl.Spec.from_toml(bundle).quasi_identifiers["sex"].to_toml()["csv"].endswith("sex.csv")
True
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from blendin.errors import BlendinError
from blendin.io import atomic_path
from blendin.spec import Spec, toml_text

SPEC_NAME = "spec.toml"
HIERARCHIES = "hierarchies"
POPULATIONS = "populations"


def write_project(path: str | os.PathLike, spec: Spec,
                  files: Mapping[str, str | os.PathLike] | None = None) -> Path:
    """Write the bundle of ``spec`` to ``path`` (atomically), with ``files`` (name in the
    bundle -> file) beside it."""
    document, hierarchies = _relocated(spec)
    document, populations = _populations(document, spec)
    text = toml_text(document)
    with atomic_path(path) as temp, zipfile.ZipFile(temp, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(SPEC_NAME, text)
        for name, source in hierarchies.items():
            z.write(source, f"{HIERARCHIES}/{name}")
        for name, source in populations.items():
            z.write(source, f"{POPULATIONS}/{name}")
        for name, source in (files or {}).items():
            z.write(source, name)
    return Path(path)


def _relocated(spec: Spec) -> tuple[dict[str, Any], dict[str, Path]]:
    """The spec's document with every ``csv`` entry pointing into ``hierarchies/``, and
    the files to copy there by their new names."""
    files: dict[str, Path] = {}
    document = csv_paths(spec.to_dict(),
                         lambda where: f"{HIERARCHIES}/{_name_for(where, spec, files)}")
    return document, files


def _populations(document: dict[str, Any], spec: Spec) -> tuple[dict[str, Any],
                                                                 dict[str, Path]]:
    """The document with each population table named relative to the spec's folder (one
    a project brought with it) pointing into ``populations/``, and the files to copy there;
    a whole path, a file of this machine, stays as it is."""
    files: dict[str, Path] = {}

    def moved(table: Any) -> Any:
        where = table.get("population") if isinstance(table, dict) else None
        if not isinstance(where, str) or Path(where).expanduser().is_absolute():
            return table
        source = Path(spec.base_dir or ".") / where
        if not source.is_file():
            raise BlendinError(f"the spec names the population table {where!r}, which does "
                               "not exist", fix="give the spec whose files are all there")
        name, n = source.name, 2
        while name in files and files[name].resolve() != source.resolve():
            name, n = f"{source.stem}-{n}{source.suffix}", n + 1
        files[name] = source
        return {**table, "population": f"{POPULATIONS}/{name}"}

    return {**document, "privacy": [moved(t) for t in document.get("privacy", [])]}, files


def csv_paths(node: Any, rename: Callable[[str], str]) -> Any:
    """A spec document (or part of it) with each hierarchy file's path (every ``csv``
    entry, wherever it sits) replaced by ``rename(path)``.

    >>> csv_paths({"quasi_identifiers": {"x": {"csv": "a/x.csv"}}}, str.upper)
    {'quasi_identifiers': {'x': {'csv': 'A/X.CSV'}}}
    """
    if isinstance(node, dict):
        node = {k: csv_paths(v, rename) for k, v in node.items()}
        if isinstance(node.get("csv"), str):
            node["csv"] = rename(node["csv"])
        return node
    if isinstance(node, list):
        return [csv_paths(v, rename) for v in node]
    return node


def _name_for(where: str, spec: Spec, files: dict[str, Path]) -> str:
    """A name in ``hierarchies/`` for the file ``where`` (relative to the spec's folder)."""
    source = Path(where)
    if not source.is_absolute() and spec.base_dir is not None:
        source = Path(spec.base_dir) / source
    if not source.is_file():
        raise BlendinError(f"the spec names the hierarchy file {where!r}, which does not "
                           "exist", fix="give the spec whose files are all there")
    for name, known in files.items():
        if known.resolve() == source.resolve():
            return name
    stem = re.sub(r"[^\w.-]+", "_", source.stem).strip("._") or "hierarchy"
    name, n = f"{stem}.csv", 2
    while name in files:
        name, n = f"{stem}-{n}.csv", n + 1
    files[name] = source
    return name
