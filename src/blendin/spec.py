"""Spec: what a release must be. Attribute roles, hierarchies, privacy models, limits.

A Spec is made in Python or read from a TOML file (:meth:`Spec.from_toml`, format in
``docs/spec.md``) and written back with :meth:`Spec.to_toml`. Validation happens at this
boundary: every message names the key and says how to fix it.
"""

from __future__ import annotations

import copy
import difflib
import math
import os
import re
import tomllib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from blendin.codes import distinct_texts
from blendin.errors import BlendinError, preview, toml_key, toml_value
from blendin.hierarchy import Hierarchy, HierarchyBuilder
from blendin.hierarchy.registry import builder_from_toml
from blendin.models import PrivacyModel, model_from_toml
from blendin.normalize import text_steps
from blendin.roles import overlooked_identifiers, same_name
from blendin.search.common import POLICIES
from blendin.transform.microaggregation import Microaggregate
from blendin.transform.pram import Pram
from blendin.transform.table import KINDS as TRANSFORMS
from blendin.transform.table import Transform, transform_from_toml

ALGORITHMS = ("auto", "optimal", "heuristic", "exhaustive", "binary", "datafly", "mondrian")
METRICS = ("loss", "gcp", "discernibility", "aecs", "precision", "entropy", "height",
           "arx-loss")

#: the keys each TOML section accepts (None: any column name)
SECTIONS: dict[str, tuple[str, ...] | None] = {
    "input": ("delimiter", "encoding", "missing", "normalize"),
    "attributes": ("identifiers", "sensitive", "insensitive", "person", "sampling_weights",
                   "household"),
    "quasi_identifiers": None,
    "transform": None,
    "tables": None,
    "privacy": None,
    "anonymization": ("max_suppression", "algorithm", "metric", "policy", "weights",
                      "relaxed", "sets", "time_limit", "max_checks", "seed",
                      "recode_suppressed", "suppression", "cell_priority"),
}
#: how records that would violate k lose their values: whole records, or single cells
SUPPRESSION = ("records", "cells")
#: the [attributes] keys of survey microdata (docs/sdc.md): one column each
SURVEY = ("sampling_weights", "household")
#: the key of a ``[[privacy]]`` table that carries the sensitive attribute's hierarchy
MODEL_HIERARCHY_KEY = "hierarchy"


@dataclass
class Spec:
    """A release specification.

    ``quasi_identifiers`` maps each QI column to its hierarchy (a builder such as
    ``bl.intervals(5, 10)``, or a built Hierarchy). Identifiers are removed from a release;
    sensitive and insensitive columns are kept as they are. Columns named nowhere are
    insensitive.

    >>> from blendin.models import KAnonymity
    >>> from blendin.hierarchy import Hierarchy
    >>> sex = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
    >>> spec = Spec(quasi_identifiers={"sex": sex}, models=[KAnonymity(2)])
    >>> spec.roles()["sex"]
    'quasi-identifier'
    """

    quasi_identifiers: dict[str, HierarchyBuilder | Hierarchy] = field(default_factory=dict)
    identifiers: list[str] = field(default_factory=list)
    sensitive: list[str] = field(default_factory=list)
    insensitive: list[str] = field(default_factory=list)
    #: the column naming each record's person (a patient id): with it every count that
    #: protects people counts people, not rows (docs/people.md); never released
    person: str | None = None
    #: survey microdata (docs/sdc.md): the column of each record's sampling weight (the
    #: people it stands for) and of its household; risk measures them, and the
    #: individual-risk model bounds the risk the weights give
    sampling_weights: str | None = None
    household: str | None = None
    #: related tables released together (docs/people.md): each table's name and the column
    #: holding the person key in it; the first is the person table (one row a person)
    tables: dict[str, str] = field(default_factory=dict)
    models: list[PrivacyModel] = field(default_factory=list)
    max_suppression: float = 0.0
    algorithm: str = "auto"
    metric: str = "loss"
    #: how ties between equally good nodes are broken (search.POLICIES; None: the default)
    policy: str | None = None
    #: weight of each QI in the utility metrics (QIs not named weigh 1)
    weights: dict[str, float] = field(default_factory=dict)
    #: Mondrian: records equal to the median may go to either side (relaxed partitioning)
    relaxed: bool = False
    #: Mondrian: show categorical groups as sets of values instead of their common ancestor
    sets: bool = False
    #: the heuristic's budget: seconds and/or node checks (None: no limit on that one)
    time_limit: float | None = 10.0
    max_checks: int | None = None
    #: the heuristic's random moves (the same seed and budget in checks, the same answer)
    seed: int = 0
    #: release the suppressed records at a coarser node of their own where they can be
    recode_suppressed: bool = False
    #: "records" removes the records of violating classes; "cells" blanks the fewest of
    #: their QI cells instead, a blank matching any value (docs/sdc.md)
    suppression: str = "records"
    #: with cells: the QIs whose cells are blanked first (the rest after them, the columns
    #: with the most distinct values first)
    cell_priority: list[str] = field(default_factory=list)
    #: columns released transformed (microaggregated, PRAM), each with its transform; a
    #: quasi-identifier among them (``transformed_qis``) is protected so, not generalized
    transforms: dict[str, Transform] = field(default_factory=dict)
    transformed_qis: list[str] = field(default_factory=list)
    #: hierarchies of sensitive attributes (for t-closeness with hierarchical distance)
    sensitive_hierarchies: dict[str, HierarchyBuilder | Hierarchy] = field(default_factory=dict)
    #: input options: delimiter (None: sniffed), text encoding, the label of missing values
    delimiter: str | None = None
    encoding: str = "utf-8"
    missing: str = ""
    #: how sensitive values are normalized before the models count them ("case", "space",
    #: "unicode": ``HIV``, ``hiv`` and `` HIV`` one value); the release shows them as read
    normalize: list[str] = field(default_factory=list)
    #: where relative paths in the spec resolve from (the spec file's folder)
    base_dir: Path | None = None

    def roles(self) -> dict[str, str]:
        """Column -> role, for every column the spec names."""
        roles: dict[str, str] = {}
        for role, names in self._role_lists():
            for name in names:
                roles.setdefault(name, role)
        return roles

    def overlooked_identifiers(self, column_names: Sequence[str]) -> list[str]:
        """The columns whose names say they identify a person directly (ssn, name, email,
        phone, ...) and that the spec names in no role: they would be released as they are.

        >>> Spec(identifiers=["name"]).overlooked_identifiers(["name", "ssn", "zip"])
        ['ssn']
        """
        return overlooked_identifiers(column_names, self.roles())

    def identifiers_present(self, column_names: Sequence[str]) -> list[str]:
        """The columns that are identifiers of the spec, spelled as the spec spells them or
        in another case or spacing (``Name`` for ``name``).

        >>> Spec(identifiers=["name"]).identifiers_present(["Name", "age"])
        ['Name']
        """
        return [c for c in column_names
                if any(c == i or same_name(c, i) for i in self.identifiers)]

    def with_own_models(self) -> Spec:
        """This spec with copies of its models: what a run binds to them (a population, a
        random draw, the table's size) stays off this one's, which other runs may share
        (threads, a later run).

        >>> from blendin.models import KAnonymity
        >>> spec = Spec(models=[KAnonymity(2)])
        >>> own = spec.with_own_models()
        >>> own.models[0] is spec.models[0], own.models[0].k
        (False, 2)
        """
        return replace(self, models=[copy.copy(m) for m in self.models])

    def files_read(self) -> dict[str, Path]:
        """Every file the spec makes a run read, each with what it is: hierarchy files
        (of quasi-identifiers and sensitive attributes) and population tables. They are
        inputs: no output may replace one, ``--force`` or not.

        >>> from blendin.models import KMap
        >>> spec = Spec(models=[KMap(5, population="people.csv")], base_dir=Path("/data"))
        >>> spec.files_read()
        {'the population table of k-map (in the spec)': PosixPath('/data/people.csv')}
        """
        files: dict[str, Path] = {}
        for role, builders in (("", self.quasi_identifiers),
                               ("sensitive ", self.sensitive_builders())):
            for name, builder in builders.items():
                path = getattr(getattr(builder, "builder", builder), "path", None)
                if isinstance(path, Path):  # a hierarchy file (ARX's format)
                    files[f"the hierarchy file of {role}{name!r} (in the spec)"] = path
        for model in self.models:
            if getattr(model, "needs_population", False) and hasattr(model, "path"):
                files[f"the population table of {model.key} (in the spec)"] = model.path(
                    self.base_dir)
        return files

    def _role_lists(self) -> list[tuple[str, list[str]]]:
        return [
            ("identifier", list(self.identifiers)),
            ("person key", list(dict.fromkeys([*([self.person] if self.person else []),
                                               *self.tables.values()]))),
            ("quasi-identifier", [*self.quasi_identifiers, *self.transformed_qis]),
            ("sensitive", list(self.sensitive)),
            ("insensitive", list(self.insensitive)),
        ]

    # -- TOML ----------------------------------------------------------------------------

    @classmethod
    def from_toml(cls, path: str | Path) -> Spec:
        """Read a spec file; paths inside it resolve relative to the file's folder.

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "release.toml"
        >>> _ = path.write_text('[quasi_identifiers]\\nsex = { flat = true }\\n'
        ...                     '[[privacy]]\\nmodel = "k-anonymity"\\nk = 2\\n')
        >>> Spec.from_toml(path).models
        [KAnonymity(k=2)]
        """
        path = Path(path)
        if path.is_dir():  # an unpacked project: its spec.toml beside its hierarchies
            path = project_spec(path, path.name)
        elif path.suffix.lower() == ".zip" and path.is_file():
            return cls._from_bundle(path)
        if not path.is_file():
            raise BlendinError(f"spec file {str(path)!r} does not exist",
                               fix="check the path given to --spec")
        try:
            text = path.read_bytes().decode("utf-8")
            table = tomllib.loads(text.removeprefix("\ufeff"))  # (an editor's byte order mark)
        except tomllib.TOMLDecodeError as error:
            raise BlendinError(f"spec file {str(path)!r} is not valid TOML: {error}",
                               fix="correct the TOML syntax at that line") from None
        except UnicodeDecodeError:
            raise BlendinError(f"spec file {str(path)!r} is not UTF-8 text",
                               fix="save the spec file as UTF-8") from None
        return cls.from_dict(table, base_dir=path.resolve().parent)

    @classmethod
    def _from_bundle(cls, path: Path) -> Spec:
        """The spec of a project bundle (a .zip of spec.toml and the files it names),
        unpacked into a private folder that lives as long as the spec."""
        import shutil
        import tempfile
        import weakref

        from blendin.io import unpack_zip

        folder = Path(tempfile.mkdtemp(prefix="blendin-project-"))
        try:
            unpack_zip(path, folder)
            spec = cls.from_toml(project_spec(folder, path.name))
            _hierarchies_inside(spec, folder, path.name)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        weakref.finalize(spec, shutil.rmtree, folder, True)
        return spec

    @classmethod
    def from_dict(cls, table: Mapping[str, Any], base_dir: str | Path | None = None) -> Spec:
        """Make a spec from the parsed TOML document (a dict of sections), then validate it.

        >>> spec = Spec.from_dict({"quasi_identifiers": {"sex": {"flat": True}},
        ...                        "privacy": [{"model": "k-anonymity", "k": 3}]})
        >>> list(spec.quasi_identifiers), spec.max_suppression
        (['sex'], 0.0)
        """
        base = Path(base_dir) if base_dir is not None else None
        _expect(table, dict, "the spec", "sections such as [quasi_identifiers]")
        _check_keys(table, tuple(SECTIONS), "the spec", "section")
        inp = _section(table, "input")
        attrs = _section(table, "attributes")
        anon = _section(table, "anonymization")
        qis = _section(table, "quasi_identifiers")
        spec = cls(
            identifiers=_names(attrs, "identifiers"),
            sensitive=_names(attrs, "sensitive"),
            insensitive=_names(attrs, "insensitive"),
            person=_text(attrs, "person", None, "attributes"),
            sampling_weights=_text(attrs, "sampling_weights", None, "attributes"),
            household=_text(attrs, "household", None, "attributes"),
            tables=_tables(_section(table, "tables"), _text(attrs, "person", None,
                                                                "attributes")),
            max_suppression=_number(anon, "max_suppression", 0.0),
            algorithm=_text(anon, "algorithm", "auto", "anonymization"),
            metric=_text(anon, "metric", "loss", "anonymization"),
            policy=_text(anon, "policy", None, "anonymization"),
            weights=_weights(anon),
            relaxed=_flag(anon, "relaxed"),
            sets=_flag(anon, "sets"),
            time_limit=_number(anon, "time_limit", 10.0),
            max_checks=_whole(anon, "max_checks", None),
            seed=_whole(anon, "seed", 0),
            recode_suppressed=_flag(anon, "recode_suppressed"),
            suppression=_text(anon, "suppression", "records", "anonymization"),
            cell_priority=_names(anon, "cell_priority", "anonymization"),
            delimiter=_text(inp, "delimiter", None, "input"),
            encoding=_text(inp, "encoding", "utf-8", "input"),
            missing=_text(inp, "missing", "", "input"),
            normalize=_steps(inp),
            base_dir=base,
        )
        for name, entry in qis.items():
            where = f"[quasi_identifiers] {name}"
            _expect(entry, dict, where, f'an inline table such as {name} = {{ flat = true }}')
            if any(kind in entry for kind in TRANSFORMS):  # protected, not generalized
                spec.transforms[name] = transform_from_toml(entry, where)
                spec.transformed_qis.append(name)
                continue
            spec.quasi_identifiers[name] = _in_context(where, builder_from_toml, entry, base)
        for name, entry in _section(table, "transform").items():
            where = f"[transform] {name}"
            _expect(entry, dict, where, f"an inline table such as {name} = "
                                        "{ microaggregate = { k = 3 } }")
            spec.transforms[name] = transform_from_toml(entry, where)
        privacy = table.get("privacy", [])
        _expect(privacy, list, "[[privacy]]", '[[privacy]] tables, e.g. model = "k-anonymity"')
        for i, entry in enumerate(privacy, start=1):
            where = f"[[privacy]] #{i}"
            _expect(entry, dict, where, 'a table such as model = "k-anonymity", k = 5')
            entry = dict(entry)
            hierarchy = entry.pop(MODEL_HIERARCHY_KEY, None)
            model = _in_context(where, model_from_toml, entry)
            spec.models.append(model)
            if hierarchy is not None:
                if not _needs_hierarchy(model):
                    raise BlendinError(
                        f"{where}: a hierarchy is given but {model.key} does not use one",
                        fix='remove it, or use model = "t-closeness" with '
                        'distance = "hierarchical"')
                _expect(hierarchy, dict, f"{where} {MODEL_HIERARCHY_KEY}",
                        'an inline table such as { csv = "hierarchies/occupation.csv" }')
                spec.sensitive_hierarchies[model.attribute] = _in_context(
                    where, builder_from_toml, hierarchy, base)
        spec.validate()
        return spec

    def to_toml(self) -> str:
        """The spec as TOML text (paths relative to ``base_dir``); reads back equal.

        Written in the layout of ``docs/spec.md``: one line per hierarchy (inline tables)
        and a ``[[privacy]]`` table per model.

        >>> from blendin.models import KAnonymity
        >>> print(Spec(models=[KAnonymity(5)], max_suppression=0.1).to_toml().strip())
        [[privacy]]
        model = "k-anonymity"
        k = 5
        <BLANKLINE>
        [anonymization]
        max_suppression = 0.1
        algorithm = "auto"
        metric = "loss"
        """
        return toml_text(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        """The TOML document as a dict of sections (what :meth:`from_dict` reads)."""
        doc: dict[str, Any] = {}
        inp = {"delimiter": self.delimiter,
               "encoding": None if self.encoding == "utf-8" else self.encoding,
               "missing": self.missing or None, "normalize": list(self.normalize) or None}
        inp = {k: v for k, v in inp.items() if v is not None}
        if inp:
            doc["input"] = inp
        single = ("person", *SURVEY)
        attrs = {k: list(getattr(self, k)) for k in SECTIONS["attributes"]
                 if getattr(self, k) and k not in single}
        attrs.update({k: getattr(self, k) for k in single if getattr(self, k)})
        if attrs:
            doc["attributes"] = attrs
        if self.tables:
            doc["tables"] = {name: {"person": key} for name, key in self.tables.items()}
        if self.quasi_identifiers or self.transformed_qis:
            doc["quasi_identifiers"] = {
                name: _builder_toml(name, h, self.base_dir)
                for name, h in self.quasi_identifiers.items()}
            doc["quasi_identifiers"].update({name: self.transforms[name].to_toml()
                                             for name in self.transformed_qis})
        other = {name: t.to_toml() for name, t in self.transforms.items()
                 if name not in self.transformed_qis}
        if other:
            doc["transform"] = other
        doc["privacy"] = [self._model_toml(m) for m in self.models]
        doc["anonymization"] = {"max_suppression": float(self.max_suppression),
                                "algorithm": self.algorithm, "metric": self.metric}
        extra = {"policy": self.policy, "weights": dict(self.weights) or None,
                 "relaxed": self.relaxed or None, "sets": self.sets or None,
                 "time_limit": None if self.time_limit == 10.0 else self.time_limit,
                 "max_checks": self.max_checks, "seed": self.seed or None,
                 "recode_suppressed": self.recode_suppressed or None,
                 "suppression": None if self.suppression == "records" else self.suppression,
                 "cell_priority": list(self.cell_priority) or None}
        doc["anonymization"].update({k: v for k, v in extra.items() if v is not None})
        return doc

    def _model_toml(self, model: PrivacyModel) -> dict[str, Any]:
        builder = self.sensitive_hierarchies.get(model.attribute)
        if builder is None:
            builder = _model_hierarchy(model)
        params = model.to_dict() if builder is None else _without_hierarchy(model)
        entry = {k: v for k, v in params.items() if v is not None}
        if builder is not None and _needs_hierarchy(model):
            entry[MODEL_HIERARCHY_KEY] = _builder_toml(model.attribute, builder, self.base_dir)
        return entry

    # -- validation ----------------------------------------------------------------------

    def validate(self) -> Spec:
        """Raise BlendinError when the spec cannot work, whatever the data; returns self."""
        if not self.quasi_identifiers:
            raise BlendinError(
                "the spec names no quasi-identifiers",
                fix="add a [quasi_identifiers] section, e.g. age = { intervals = [5, 10] }")
        if not self.models:
            raise BlendinError(
                "the spec names no privacy model",
                fix='add a [[privacy]] table, e.g. model = "k-anonymity" and k = 5')
        if self.person is not None and (not isinstance(self.person, str) or not self.person):
            raise BlendinError(f"person must be one column name, got {self.person!r}",
                               fix='write person = "patient_id" under [attributes] '
                                   "(--person patient_id)")
        self._check_tables()
        for key in SECTIONS["attributes"]:
            if key in ("person", *SURVEY):
                continue
            value = getattr(self, key)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise BlendinError(f"{key} must be a list of column names, got {value!r}",
                                   fix=f'write {key} = ["column", ...]')
        self._check_roles()
        for name, hierarchy in self.quasi_identifiers.items():
            if not isinstance(hierarchy, Hierarchy | HierarchyBuilder):
                raise BlendinError(
                    f"quasi-identifier {name!r} has no hierarchy (got {hierarchy!r})",
                    fix="give a builder such as intervals(5, 10), masking(), flat(), "
                    "from_csv(path), or a Hierarchy")
        self._check_models()
        self._check_survey()
        self._check_limits()
        for model in self.models:  # what the rest of the spec rules out for a model
            model.check_spec(self)
        self._check_input()
        self._check_transforms()
        return self

    def _check_transforms(self) -> None:
        roles = self.roles()
        for name, transform in self.transforms.items():
            if not isinstance(transform, Microaggregate | Pram):
                raise BlendinError(f"the transform of {name!r} is {transform!r}",
                                   fix="give Microaggregate(k) or Pram(pd=...)")
            role = roles.get(name)
            if name in self.quasi_identifiers:
                raise BlendinError(f"{name!r} has a hierarchy and a transform",
                                   fix=f"generalize {name!r} or transform it, not both")
            if role in ("identifier", "person key"):
                raise BlendinError(f"{name!r} is an {role} and has a transform: it is not "
                                   "released", fix=f"remove the transform of {name!r}")
            if isinstance(transform, Microaggregate) and (self.person or self.tables):
                raise BlendinError(
                    f"{name!r} is microaggregated in groups of k records, and with a person "
                    "key a group of k records may be one person's (a mean only they share)",
                    fix=f"remove the microaggregate of {name!r}, or the person key")
            if isinstance(transform, Pram) and (self.person or self.tables):
                raise BlendinError(
                    f"{name!r} is randomized by PRAM record by record, and with a person key "
                    "a person's several records vote their true value back",
                    fix=f"remove the pram of {name!r}, or the person key")
            read = [m.key for m in self.models if m.attribute == name]
            if read:
                raise BlendinError(f"{read[0]} is verified on the values of {name!r}, which "
                                   "its transform would then change",
                                   fix=f"remove the transform of {name!r}, or that model")
        for name in self.transformed_qis:
            if name not in self.transforms:
                raise BlendinError(f"{name!r} is listed as a transformed quasi-identifier "
                                   "without a transform", fix=f"give {name!r} a transform")

    def _check_survey(self) -> None:
        for key in SURVEY:
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value):
                raise BlendinError(f"[attributes] {key} must be one column name, got "
                                   f"{value!r}", fix=f'write {key} = "column"')
            if value is not None and self.person is not None:
                raise BlendinError(f"[attributes] {key} is measured on records, and a person "
                                   "key counts people",
                                   fix=f"remove {key} or person from [attributes]")
        risky = [m for m in self.models if m.key == "individual-risk"]
        others = [m.key for m in self.models if m.needs_population and m not in risky]
        if risky and others:
            raise BlendinError(f"individual-risk counts the sampling weights of each class, "
                               f"and {others[0]} counts a population: one at a time",
                               fix=f"remove individual-risk or {others[0]}")
        if risky and self.person is not None:
            raise BlendinError("individual-risk is estimated on records, and a person key "
                               "counts people", fix="remove individual-risk or the person key")

    def _check_tables(self) -> None:
        if not self.tables:
            return
        if not isinstance(self.tables, Mapping) or not all(
                isinstance(k, str) and k and isinstance(v, str) and v
                for k, v in self.tables.items()):
            raise BlendinError(f"tables must map each table's name to its person key column, "
                               f"got {self.tables!r}",
                               fix='write [tables.patients] person = "patient_id", one '
                                   "section a table")
        if len(self.tables) < 2:
            raise BlendinError(
                f"[tables] names one table ({next(iter(self.tables))!r}); related tables are "
                "two or more", fix="name each table ([tables.visits] person = \"...\"), or "
                "give one table with [attributes] person = \"...\"")

    def _check_input(self) -> None:
        import codecs

        if self.delimiter is not None and (
                not isinstance(self.delimiter, str) or len(self.delimiter) != 1):
            raise BlendinError(f"[input] delimiter must be one character, got {self.delimiter!r}",
                               fix='write e.g. delimiter = ";" or delimiter = "\\t"')
        try:
            codecs.lookup(self.encoding)
        except (LookupError, TypeError):
            raise BlendinError(f"[input] encoding {self.encoding!r} is not a known encoding",
                               fix='write e.g. encoding = "utf-8" or "latin-1"') from None
        if not isinstance(self.missing, str):
            raise BlendinError(f"[input] missing must be text, got {self.missing!r}",
                               fix='write e.g. missing = "?"')
        text_steps(self.normalize, option="[input] normalize")

    def _check_roles(self) -> None:
        seen: dict[str, str] = {}
        for role, names in self._role_lists():
            for name in names:
                if name in seen and seen[name] != role:
                    raise BlendinError(
                        f"column {name!r} is both {seen[name]} and {role}",
                        fix=f"give {name!r} one role: remove it from one of the lists")
                seen[name] = role

    def _check_models(self) -> None:
        for model in self.models:
            if not isinstance(model, PrivacyModel):
                raise BlendinError(f"{model!r} is not a privacy model",
                                   fix="use e.g. KAnonymity(5) or DistinctLDiversity(col, 3)")
            attribute = model.attribute
            if attribute is not None and attribute not in self.sensitive:
                role = self.roles().get(attribute)
                shown = f"is {role}" if role else "is not listed as sensitive"
                raise BlendinError(
                    f"{model.key} is about {attribute!r}, which {shown}",
                    fix=f"list {attribute!r} in [attributes] sensitive (and only there)")
            if (_needs_hierarchy(model) and attribute not in self.sensitive_hierarchies
                    and _model_hierarchy(model) is None):
                raise BlendinError(
                    f"{model.key} on {attribute!r} uses the hierarchical distance but "
                    f"{attribute!r} has no hierarchy",
                    fix='add hierarchy = { csv = "..." } to that [[privacy]] table, or use '
                    'distance = "equal"')

    def _check_limits(self) -> None:
        value = self.max_suppression
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not 0 <= value <= 1 or math.isnan(value)):
            raise BlendinError(
                f"max_suppression must be a fraction between 0 and 1, got {value!r}",
                fix="e.g. max_suppression = 0.05 for at most 5% of the records")

        for key, valid in (("algorithm", ALGORITHMS), ("metric", METRICS),
                           ("policy", (None, *POLICIES))):
            value = getattr(self, key)
            if value not in valid:
                valid = [v for v in valid if v is not None]
                raise BlendinError(
                    f"unknown {key} {value!r}{_did_you_mean(str(value), valid)}",
                    fix=f"use one of: {', '.join(valid)}")
        self._check_budget()
        self._check_cells()
        for name, weight in self.weights.items():
            if name not in self.quasi_identifiers:
                raise BlendinError(
                    f"[anonymization] weights names {name!r}, which is not a quasi-identifier"
                    f"{_did_you_mean(name, list(self.quasi_identifiers))}",
                    fix="give weights only to the columns in [quasi_identifiers]")
            if not weight >= 0:  # 0: the column does not count in the utility
                raise BlendinError(f"[anonymization] weight of {name!r} must be >= 0, got "
                                   f"{weight!r}", fix=f"e.g. {name} = 1")
        if self.weights and len(self.weights) == len(self.quasi_identifiers) and not any(
                self.weights.values()):
            raise BlendinError("[anonymization] every weight is 0",
                               fix="give at least one quasi-identifier a weight above 0")

    def _check_cells(self) -> None:
        if self.suppression not in SUPPRESSION:
            raise BlendinError(
                f"unknown suppression {self.suppression!r}"
                f"{_did_you_mean(str(self.suppression), SUPPRESSION)}",
                fix='write suppression = "records" (whole records) or "cells" (single cells)')
        if self.cell_priority and self.suppression != "cells":
            raise BlendinError("[anonymization] cell_priority orders the cells to blank, and "
                               f"suppression is {self.suppression!r}",
                               fix='add suppression = "cells", or remove cell_priority')
        for name in self.cell_priority:
            if name not in self.quasi_identifiers:
                raise BlendinError(
                    f"[anonymization] cell_priority names {name!r}, which is not a "
                    f"quasi-identifier{_did_you_mean(name, list(self.quasi_identifiers))}",
                    fix="name only columns of [quasi_identifiers] in cell_priority")
        if self.suppression != "cells":
            return
        others = [m.key for m in self.models if m.key != "k-anonymity"]
        if others or not self.models:
            raise BlendinError(
                f'suppression = "cells" makes records compatible with k others, which '
                f"k-anonymity asks; {', '.join(others)} counts classes that blanks blur",
                fix='keep only model = "k-anonymity" with cells, or use suppression = '
                    '"records"')
        for what, used in (("a person key", self.person or self.tables),
                           ("recode_suppressed", self.recode_suppressed),
                           ('algorithm = "mondrian"', self.algorithm == "mondrian")):
            if used:
                raise BlendinError(f'suppression = "cells" does not work with {what}',
                                   fix=f'use suppression = "records", or remove {what}')

    def _check_budget(self) -> None:
        limit, checks, seed = self.time_limit, self.max_checks, self.seed
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | float)
                                  or not limit >= 0):
            raise BlendinError(f"[anonymization] time_limit must be seconds >= 0, got {limit!r}",
                               fix="write e.g. time_limit = 10 (--time-limit 10)")
        if checks is not None and (isinstance(checks, bool) or not isinstance(checks, int)
                                   or checks < 0):
            raise BlendinError(f"[anonymization] max_checks must be a whole number >= 0, got "
                               f"{checks!r}", fix="write e.g. max_checks = 5000 (--max-checks)")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise BlendinError(f"[anonymization] seed must be a whole number >= 0, got "
                               f"{seed!r}", fix="write e.g. seed = 1 (--seed 1)")

    def validate_columns(self, column_names: Sequence[str], *, released: bool = False) -> None:
        """Raise BlendinError unless every column the spec names is in ``column_names``.

        With ``released=True`` (checking a release) identifiers need not be present: a
        release has them removed. Duplicate column names are refused too.

        >>> from blendin.models import KAnonymity
        >>> Spec(quasi_identifiers={"age": None}, models=[KAnonymity(2)]).validate_columns(
        ...     ["Age", "sex"])
        Traceback (most recent call last):
        ...
        blendin.errors.BlendinError: the data has no column 'age' (quasi-identifier); fix: \
did you mean 'Age'? The columns are: 'Age', 'sex'
        """
        names = [str(c) for c in column_names]
        dupes = sorted(n for n, times in Counter(names).items() if times > 1)
        if dupes:
            raise BlendinError(f"the data has duplicate column names: {preview(dupes)}",
                               fix="give every column a distinct name in the header")
        present = set(names)
        wanted = [(f"[attributes] {k}", [getattr(self, k)]) for k in SURVEY if getattr(self, k)]
        wanted += [(role, columns) for role, columns in self._role_lists()
                   if not (released and role == "identifier")]
        wanted.append(("[transform]", [n for n in self.transforms
                                       if n not in self.transformed_qis]))
        for role, columns in wanted:
            for name in columns:
                if name not in present:
                    near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
                    hint = f"did you mean {near[0]!r}? " if near else ""
                    raise BlendinError(
                        f"the data has no column {name!r} ({role})",
                        fix=f"{hint}The columns are: {preview(names, 12)}")

    # -- hierarchies ---------------------------------------------------------------------

    def build_hierarchies(self, distinct: pa.Table) -> dict[str, Hierarchy]:
        """Every QI's hierarchy, built from the distinct values of its column in ``distinct``.

        ``distinct`` is any table holding the QI columns (e.g. the output of
        :func:`blendin.groupby.distinct_tuples`); a Hierarchy given directly is used as is.

        >>> from blendin.models import KAnonymity
        >>> h = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
        >>> spec = Spec(quasi_identifiers={"sex": h}, models=[KAnonymity(2)])
        >>> spec.build_hierarchies(pa.table({"sex": ["m"]}))["sex"] is h
        True
        """
        return _build_all(self.quasi_identifiers, distinct, self.missing)

    def build_sensitive_hierarchies(self, distinct: pa.Table) -> dict[str, Hierarchy]:
        """Hierarchies of the sensitive attributes that have one (hierarchical t-closeness).

        From ``sensitive_hierarchies``, else from a model that carries one (a t-closeness
        model's ``hierarchy``), built from the distinct values of the attribute's column.
        """
        return _build_all(self.sensitive_builders(), distinct, self.missing)

    def sensitive_builders(self) -> dict[str, HierarchyBuilder | Hierarchy]:
        """The builder (or Hierarchy) of each sensitive attribute that has one."""
        builders = dict(self.sensitive_hierarchies)
        for model in self.models:
            carried = _model_hierarchy(model)
            if carried is not None and model.attribute not in builders:
                if isinstance(carried, Mapping):
                    carried = builder_from_toml(dict(carried), self.base_dir)
                builders[model.attribute] = carried
        return builders


def overlooked_warnings(spec: Spec, column_names: Sequence[str], *,
                        strict: bool = False) -> list[str]:
    """A warning for each column that looks like a direct identifier and that the spec
    names nowhere; with ``strict`` (``--strict``) they are an error instead.

    >>> overlooked_warnings(Spec(), ["ssn", "zip"])[0].split(";")[0]
    "column 'ssn' looks like a direct identifier, and the spec names it nowhere: it would \
be released as it is"
    """
    overlooked = spec.overlooked_identifiers(column_names)
    if not overlooked:
        return []
    listed = ", ".join(f'"{c}"' for c in overlooked)
    fix = (f"add it to [attributes] identifiers = [{listed}], or, if it identifies no one, "
           f"to insensitive = [{listed}]")
    if strict:
        raise BlendinError(f"column(s) {preview(overlooked)} look like direct identifiers, and "
                           "the spec names them nowhere (--strict)", fix=fix)
    return [f"column {c!r} looks like a direct identifier, and the spec names it nowhere: it "
            f"would be released as it is; fix: add it to [attributes] identifiers, or, if it "
            "identifies no one, to insensitive" for c in overlooked]


# -- helpers -------------------------------------------------------------------------------


def _build_all(builders: Mapping[str, HierarchyBuilder | Hierarchy], distinct: pa.Table,
               missing: str) -> dict[str, Hierarchy]:
    built = {}
    for name, builder in builders.items():
        if isinstance(builder, Hierarchy):
            built[name] = builder
            continue
        if name not in distinct.column_names:
            raise BlendinError(f"the data has no column {name!r}",
                               fix="check the column names of the spec against the data")
        values = distinct_texts(distinct.column(name), missing)
        built[name] = builder.build(np.sort(values.to_numpy(zero_copy_only=False)), name,
                                    missing)
    return built


def _needs_hierarchy(model: PrivacyModel) -> bool:
    return getattr(model, "distance", None) == "hierarchical"


def _model_hierarchy(model: PrivacyModel):
    """The hierarchy a model carries itself (builder, Hierarchy or TOML table), if any."""
    return getattr(model, "hierarchy_spec", None)


def _without_hierarchy(model: PrivacyModel) -> dict[str, Any]:
    """The model's TOML table without its own hierarchy (the spec writes it, with paths
    relative to the spec's folder)."""
    params = {k: v for k, v in model.params().items() if k != "hierarchy_spec"} if hasattr(
        model, "params") else {k: v for k, v in model.to_dict().items() if k != "model"}
    return {"model": model.key, **params}


def _builder_toml(name: str, builder, base_dir: Path | None) -> dict[str, Any]:
    if isinstance(builder, Hierarchy) or not hasattr(builder, "to_toml"):
        raise BlendinError(
            f"the hierarchy of {name!r} is a built Hierarchy, which has no TOML form",
            fix="use a builder (e.g. from_csv(path) after saving its rows) to write the spec")
    return builder.to_toml(base_dir)


def _did_you_mean(word: str, valid: Sequence[str]) -> str:
    near = difflib.get_close_matches(word, list(valid), n=1, cutoff=0.5)
    return f" (did you mean {near[0]!r}?)" if near else ""


def _check_keys(table: Mapping, valid: Sequence[str], where: str, what: str = "key") -> None:
    for key in table:
        if key not in valid:
            raise BlendinError(
                f"unknown {what} {key!r} in {where}{_did_you_mean(str(key), valid)}",
                fix=f"use one of: {', '.join(valid)}")


def _section(table: Mapping, name: str) -> dict:
    section = table.get(name, {})
    _expect(section, dict, f"[{name}]", f"a [{name}] table")
    keys = SECTIONS[name]
    if keys is not None:
        _check_keys(section, keys, f"[{name}]")
    return section


def _expect(value, kind: type, where: str, example: str) -> None:
    if not isinstance(value, kind):
        raise BlendinError(f"{where} must be {_kind_name(kind)}, got {toml_value(value)}",
                           fix=f"write {example}")


def _kind_name(kind: type) -> str:
    return {dict: "a table", list: "a list", str: "text"}.get(kind, kind.__name__)


def _names(section: Mapping, key: str, where: str = "attributes") -> list[str]:
    value = section.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BlendinError(f"[{where}] {key} must be a list of column names, got "
                           f"{toml_value(value)}",
                           fix=f'write {key} = ["column", ...]')
    twice = sorted({v for v in value if value.count(v) > 1})
    if twice:
        raise BlendinError(f"[{where}] {key} names {preview(twice)} more than once",
                           fix="name each column once")
    return list(value)


def _steps(section: Mapping) -> list[str]:
    """``[input] normalize``: a list of steps (or one text of them, comma-separated)."""
    value = section.get("normalize", [])
    if not isinstance(value, str | list) or (
            isinstance(value, list) and not all(isinstance(v, str) for v in value)):
        raise BlendinError(f"[input] normalize must be a list of steps, got {toml_value(value)}",
                           fix='write e.g. normalize = ["case", "space"]')
    return text_steps(value, option="[input] normalize")


def _text(section: Mapping, key: str, default, where: str):
    value = section.get(key, default)
    if value is not default and not isinstance(value, str):
        raise BlendinError(f"[{where}] {key} must be text, got {toml_value(value)}",
                           fix=f'write {key} = "..." in quotes')
    return value


def _number(section: Mapping, key: str, default: float) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BlendinError(f"[anonymization] {key} must be a number, got {toml_value(value)}",
                           fix=f"write e.g. {key} = 0.05")
    return float(value)


def _whole(section: Mapping, key: str, default: int | None) -> int | None:
    value = section.get(key, default)
    if value is not default and (isinstance(value, bool) or not isinstance(value, int)):
        raise BlendinError(f"[anonymization] {key} must be a whole number, got {toml_value(value)}",
                           fix=f"write e.g. {key} = 1000")
    return value


def _flag(section: Mapping, key: str) -> bool:
    value = section.get(key, False)
    if not isinstance(value, bool):
        raise BlendinError(f"[anonymization] {key} must be true or false, got {toml_value(value)}",
                           fix=f"write {key} = true")
    return value


def _tables(section: Mapping, person: str | None) -> dict[str, str]:
    """``[tables.NAME] person = "KEY"`` sections: each table's key column (by default the
    ``[attributes] person``)."""
    tables = {}
    for name, entry in section.items():
        where = f"[tables.{name}]"
        _expect(entry, dict, where, 'a section such as person = "patient_id"')
        _check_keys(entry, ("person",), where)
        key = _text(entry, "person", person, f"tables.{name}")
        if key is None:
            raise BlendinError(f"{where} names no person key column",
                               fix=f'write person = "patient_id" under {where}, or once '
                                   "under [attributes]")
        tables[str(name)] = key
    return tables


def _weights(section: Mapping) -> dict[str, float]:
    value = section.get("weights", {})
    if not isinstance(value, dict) or not all(
            isinstance(w, int | float) and not isinstance(w, bool) for w in value.values()):
        raise BlendinError(f"[anonymization] weights must map QIs to numbers, got "
                           f"{toml_value(value)}",
                           fix="write weights = { age = 2, zip = 1 }")
    return {k: float(w) for k, w in value.items()}


#: a builder's Python call opening its message (``intervals(10, 5): ...``)
_CALL = re.compile(r"^(intervals|masking|dates|tree|flat|from_csv)\(.*?\): ", re.DOTALL)


def _in_context(where: str, make, *args):
    """Call a maker from another module, prefixing its errors with the spec location (and,
    for a table of the spec, naming it as written there, not as a Python call).

    >>> _in_context("[quasi_identifiers] age", builder_from_toml, {"intervals": [10, 5]})
    Traceback (most recent call last):
    ...
    blendin.errors.BlendinError: [quasi_identifiers] age = { intervals = [10, 5] }: width 5 \
is not a multiple (2 or more times) of 10, so the intervals would not nest; fix: make each \
width a multiple of the one before, e.g. intervals = [5, 10, 20] (Python: intervals(5, 10, \
20))
    """
    try:
        return make(*args)
    except BlendinError as error:
        problem = error.problem
        if args and isinstance(args[0], Mapping) and _CALL.match(problem):
            where, problem = f"{where} = {toml_value(dict(args[0]))}", _CALL.sub("", problem)
        raise BlendinError(f"{where}: {problem}", fix=error.fix) from None
    except (TypeError, KeyError, ValueError) as error:
        raise BlendinError(f"{where}: {error}",
                           fix="see docs/spec.md for the keys this table takes") from None


def toml_text(document: Mapping[str, Any]) -> str:
    """A spec's document (sections of key/values, lists of tables) as the TOML text
    :meth:`Spec.to_toml` writes."""
    chunks = []
    for section, body in document.items():
        entries = body if isinstance(body, list) else [body]
        header = f"[[{section}]]" if isinstance(body, list) else f"[{section}]"
        for entry in entries:
            lines = [f"{toml_key(k)} = {toml_value(v)}" for k, v in entry.items()]
            chunks.append("\n".join([header, *lines]))
    return "\n\n".join(chunks) + "\n"


def _hierarchies_inside(spec: Spec, folder: Path, name: str) -> None:
    """Refuse a bundle whose spec names a hierarchy file outside it (an absolute path, or
    ``..``): a bundle carries its hierarchies, and one from elsewhere would have the run
    read, and its solution and report copy, a file of this machine (as the app refuses)."""
    inside = folder.resolve()
    for builders in (spec.quasi_identifiers, spec.sensitive_builders()):
        for column, builder in builders.items():
            path = getattr(getattr(builder, "builder", builder), "path", None)
            if isinstance(path, Path) and not path.resolve().is_relative_to(inside):
                raise BlendinError(
                    f"project {name!r} names the hierarchy file of {column!r} outside the "
                    f"bundle ({str(path)!r})",
                    fix="give a bundle that holds its hierarchy files (as the app writes "
                    "them, in hierarchies/), or unpack it yourself and give the folder")


def project_spec(folder: Path, name: str) -> Path:
    """The spec.toml of a project folder (``name``: the folder or bundle, for errors), or
    its only .toml file."""
    found = folder / "spec.toml"
    if not found.is_file():
        specs = sorted(p.name for p in folder.glob("*.toml"))
        if len(specs) != 1:
            raise BlendinError(f"{name!r} holds no spec.toml" + (
                f" but {len(specs)} .toml files" if specs else ""),
                fix="give the project's folder or .zip with its spec.toml, or the .toml "
                    "file itself")
        found = folder / specs[0]
    return found


def as_spec(spec) -> Spec:
    """A Spec, or the spec file (TOML) a path names."""
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, str | os.PathLike):
        return Spec.from_toml(spec)
    raise BlendinError(f"expected a Spec or the path of a spec file, got {type(spec).__name__}",
                       fix="pass bl.Spec(...) or a path such as \"release.toml\"")
