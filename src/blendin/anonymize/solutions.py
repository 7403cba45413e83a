"""Saved solutions: a full-domain release as metadata that re-applies to new data.

A solution holds the levels, each hierarchy as its rule (never the data's values), the roles,
the models and the limits, and a digest of its spec part: :func:`solution_dict` makes one,
:func:`load_solution` reads one back (refusing what is not one), :func:`spec_from_solution`
turns it into the Spec it stands for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from blendin.errors import BlendinError, preview
from blendin.hierarchy.core import Hierarchy
from blendin.hierarchy.registry import WithUnknown, builder_from_rule, rule_of
from blendin.models import MODELS, PrivacyModel, model_from_toml
from blendin.spec import Spec

SOLUTION_FORMAT = "blendin-solution"
SOLUTION_VERSION = 5
#: the key of a saved solution's digest: a SHA-256 of its spec part, what says what must
#: hold (the levels and hierarchies may be edited: the checker proves whatever they make)
DIGEST = "digest"
#: the spec part of solutions of versions 3 and 4, whose digests cover only these keys
SPEC_PART_V3 = ("quasi_identifiers", "identifiers", "sensitive", "insensitive",
                "sensitive_hierarchies", "models", "max_suppression", "missing")
#: the spec part from version 5: also what decides how records are counted (normalized
#: values, weights, households) and what apply refuses (a person key, related tables,
#: transforms, cells), which an edit would otherwise release as it is (the key, a column)
SPEC_PART = (*SPEC_PART_V3, "normalize", "sampling_weights", "household", "person",
             "tables", "transforms", "suppression")

def plain(value):
    if isinstance(value, np.generic):
        return value.item()
    return value


def model_dict(model: PrivacyModel, base_dir: str | Path | None = None) -> dict:
    """The model's table without an attached hierarchy (saved built, with the others).

    A population table's path is saved whole (a relative one taken from ``base_dir``, the
    spec's folder, as the run read it): a solution is applied from anywhere, and a relative
    path would name another table there, or none."""
    params = dict(model.params() if hasattr(model, "params") else model.to_dict())
    if getattr(model, "needs_population", False) and hasattr(model, "path"):
        params["population"] = str(Path(model.path(base_dir)).absolute())
    return toml_keys({"model": model.key, **{k: plain(v) for k, v in params.items()
                                             if v is not None and k != "model"
                                             and not k.startswith("hierarchy")}})


def toml_keys(table: dict) -> dict:
    """A model's table with its keys as the TOML spells them (``records-at-risk``, not the
    parameter's ``records_at_risk``), which is what :func:`model_from_toml` reads back.

    >>> toml_keys({"model": "average-risk", "threshold": 0.1, "records_at_risk": 0.05})
    {'model': 'average-risk', 'threshold': 0.1, 'records-at-risk': 0.05}
    """
    _, required, optional = MODELS.get(table.get("model"), (None, (), ()))
    known = (*required, *optional)
    return {k if k in known or k.replace("_", "-") not in known else k.replace("_", "-"): v
            for k, v in table.items()}


def solution_dict(spec: Spec, hierarchies: Mapping[str, Hierarchy],
                  levels: Mapping[str, int],
                  sensitive_hierarchies: Mapping[str, Hierarchy] | None = None) -> dict:
    """The JSON form of a full-domain solution: levels, and each hierarchy as its rule.

    Rules (dates ladder, intervals, masking, flat) and trees or files as the user gave them
    are saved, never the data's values, so the solution is metadata that re-applies to new
    data (see :func:`blendin.hierarchy.registry.rule_of`).
    """
    sensitive_builders = spec.sensitive_builders()
    return with_digest({
        "format": SOLUTION_FORMAT,
        "version": SOLUTION_VERSION,
        "quasi_identifiers": list(hierarchies),
        "levels": {q: int(levels[q]) for q in hierarchies},
        "heights": {q: int(h.height) for q, h in hierarchies.items()},
        "hierarchies": {q: rule_of(spec.quasi_identifiers.get(q, h), h)
                        for q, h in hierarchies.items()},
        "identifiers": list(spec.identifiers),
        "sensitive": list(spec.sensitive),
        "insensitive": list(spec.insensitive),
        "sensitive_hierarchies": {q: rule_of(sensitive_builders.get(q, h), h)
                                  for q, h in (sensitive_hierarchies or {}).items()},
        "models": [model_dict(m, spec.base_dir) for m in spec.models],
        "max_suppression": float(spec.max_suppression),
        "missing": spec.missing,
        "normalize": list(spec.normalize),
        "sampling_weights": spec.sampling_weights,
        "household": spec.household,
        # what a re-application does not make (apply refuses them, see not_reapplied)
        "person": spec.person,
        "tables": dict(spec.tables),
        "transforms": sorted(spec.transforms),
        "suppression": spec.suppression,
    })


def with_digest(payload: dict) -> dict:
    """``payload`` with the digest of its spec part: an edit of the saved models,
    identifiers or limits no longer matches (:func:`changed_since_saved`).

    >>> saved = with_digest({"models": [{"model": "k-anonymity", "k": 5}]})
    >>> changed_since_saved(saved)
    False
    >>> saved["models"][0]["k"] = 1
    >>> changed_since_saved(saved)
    True
    """
    body = {k: v for k, v in payload.items() if k != DIGEST}
    return {**body, DIGEST: _digest(body)}


def changed_since_saved(payload: dict) -> bool | None:
    """True when a solution's content no longer matches its digest, or when a solution of a
    version that always carries one (3 on) has none (taken out with an edit); None when it
    has none and was saved by an older blendin.

    >>> changed_since_saved({"version": 4, "models": []})
    True
    >>> changed_since_saved({"version": 2, "models": []}) is None
    True
    """
    if DIGEST not in payload:
        version = payload.get("version", 1)
        if isinstance(version, int) and not isinstance(version, bool) and version >= 3:
            return True
        return None
    body = {k: v for k, v in payload.items() if k != DIGEST}
    return payload[DIGEST] != _digest(body)


def _digest(body: dict) -> str:
    version = body.get("version", SOLUTION_VERSION)
    old = isinstance(version, int) and not isinstance(version, bool) and version < 5
    part = {k: body.get(k) for k in (SPEC_PART_V3 if old else SPEC_PART)}
    text = json.dumps(part, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _saved_builders(payload: dict, unknown: str):
    """The QIs' builders of a saved solution (each at its level, told what to do with values
    a tree or file does not cover) and the sensitive attributes' builders."""
    levels = saved_levels(payload)
    rules = payload["hierarchies"]
    if not isinstance(rules, dict) or any(q not in rules for q in levels):
        raise BlendinError("the solution has no hierarchy for some quasi-identifier",
                           fix="save it again with --save-solution")
    qis = {q: WithUnknown(builder_from_rule(rules[q], q), levels[q], unknown) for q in levels}
    sens = {q: builder_from_rule(r, q)
            for q, r in (payload.get("sensitive_hierarchies") or {}).items()}
    return qis, sens


def saved_levels(payload: dict) -> dict[str, int]:
    """The saved level of each QI, checked (a tampered file gets a clear error)."""
    qis, levels = payload["quasi_identifiers"], payload["levels"]
    if not isinstance(qis, list) or not isinstance(levels, dict):
        raise BlendinError("the solution's quasi_identifiers or levels are malformed",
                           fix="save it again with --save-solution")
    out = {}
    for q in qis:
        level = levels.get(q)
        if isinstance(level, bool) or not isinstance(level, int) or level < 0:
            raise BlendinError(f"the solution's level of {q!r} is {level!r}, not a level "
                               "(0, 1, 2, ...)", fix="save it again with --save-solution")
        out[q] = level
    return out


def check_levels(levels: Mapping[str, int], hierarchies: Mapping[str, Hierarchy]) -> None:
    for q, level in levels.items():
        top = hierarchies[q].height - 1
        if level > top:
            raise BlendinError(f"the solution's level of {q!r} is {level}, above its "
                               f"hierarchy's top ({top})",
                               fix="save the solution again with --save-solution")


def load_solution(solution) -> dict:
    """A saved solution from a path, its dict, or a Result (its ``solution_dict()``)."""
    if hasattr(solution, "solution_dict"):
        return solution.solution_dict()
    if isinstance(solution, dict):
        payload = solution
    else:
        path = Path(solution)
        if not path.is_file():
            raise BlendinError(f"solution file {str(path)!r} does not exist",
                               fix="give the file written by --save-solution")
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise BlendinError(f"{str(path)!r} is not a JSON solution file: {error}",
                               fix="give the file written by --save-solution") from None
    if not isinstance(payload, dict) or payload.get("format") != SOLUTION_FORMAT:
        raise BlendinError("this is not a blendin solution (no \"format\": "
                           f"\"{SOLUTION_FORMAT}\")",
                           fix="give the file written by --save-solution")
    version = payload.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version > SOLUTION_VERSION:
        raise BlendinError(f"the solution's version {version!r} is not one this blendin "
                           f"reads (1 to {SOLUTION_VERSION})",
                           fix="save it again with this blendin's --save-solution, or use the "
                           "blendin that saved it")
    for key in ("quasi_identifiers", "levels", "hierarchies", "models"):
        if key not in payload:
            raise BlendinError(f"the solution has no {key!r}",
                               fix="save it again with --save-solution")
    for key in ("models", "identifiers", "sensitive", "insensitive", "normalize"):
        if key in payload and not isinstance(payload[key], list):
            raise BlendinError(f"the solution's {key} are {preview([payload[key]])}, not a "
                               "list", fix="save it again with --save-solution")
    return payload


def _models_from(tables: Sequence[dict]) -> list[PrivacyModel]:
    # (solutions saved before their keys were spelled as the TOML's, records_at_risk...)
    return [model_from_toml(toml_keys(dict(t)) if isinstance(t, dict) else t) for t in tables]


def spec_from_solution(payload: dict, spec: Spec | None = None, *,
                       unknown: str = "error") -> Spec:
    """The Spec a saved solution stands for (roles, models, limits from ``spec`` if given).

    Its hierarchies are the saved rules; ``unknown`` says what happens to values a saved tree
    or file does not cover (``"error"`` or ``"suppress"``; see
    :class:`blendin.hierarchy.registry.WithUnknown`).
    """
    hierarchies, sens_h = _saved_builders(payload, unknown)
    if spec is not None:
        absent = [q for q in spec.quasi_identifiers if q not in hierarchies]
        if absent:
            raise BlendinError(f"the solution has no level for QI(s) {preview(absent)}",
                               fix="use the spec the solution was made with")
        return Spec(quasi_identifiers={q: hierarchies[q] for q in spec.quasi_identifiers},
                    identifiers=list(spec.identifiers), sensitive=list(spec.sensitive),
                    insensitive=list(spec.insensitive), models=list(spec.models),
                    max_suppression=spec.max_suppression, sensitive_hierarchies={
                        **sens_h, **spec.sensitive_builders()},
                    delimiter=spec.delimiter, encoding=spec.encoding, missing=spec.missing,
                    normalize=list(spec.normalize), sampling_weights=spec.sampling_weights,
                    household=spec.household, base_dir=spec.base_dir)
    return Spec(quasi_identifiers=hierarchies, identifiers=list(payload.get("identifiers", [])),
                sensitive=list(payload.get("sensitive", [])),
                insensitive=list(payload.get("insensitive", [])),
                models=_models_from(payload["models"]),
                max_suppression=payload.get("max_suppression", 0.0),
                sensitive_hierarchies=sens_h, missing=payload.get("missing", ""),
                normalize=list(payload.get("normalize", [])),
                sampling_weights=payload.get("sampling_weights"),
                household=payload.get("household"))


def not_reapplied(payload: dict, spec: Spec | None = None) -> None:
    """Refuse a solution (or a spec given with it) that counts people, relates tables,
    transforms columns or suppresses cells: a re-application makes none of them, and would
    release a person's key, or a transformed column as it is.

    >>> not_reapplied({"person": "pid"})
    Traceback (most recent call last):
    ...
    blendin.errors.BlendinError: the solution counts people (person key 'pid'), which a \
re-application does not: it would count rows, and release the key; fix: anonymize the new \
data afresh, with the spec
    """
    person = (spec and spec.person) or payload.get("person")
    tables = (spec and spec.tables) or payload.get("tables")
    transforms = (spec and sorted(spec.transforms)) or payload.get("transforms") or []
    cells = "cells" in ((spec and spec.suppression), payload.get("suppression"))
    made = [(person, f"counts people (person key {person!r})",
             "it would count rows, and release the key"),
            (tables, "relates tables", "it reads one table"),
            (transforms, f"transforms {preview(transforms)}",
             "it would release them as they are"),
            (cells, "suppresses cells", "it suppresses records")]
    for given, what, why in made:
        if given:
            raise BlendinError(f"the solution {what}, which a re-application does not: {why}",
                               fix="anonymize the new data afresh, with the spec")




