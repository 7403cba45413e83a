"""The linking attack and its defeat, end to end, on tables the package makes itself.

1. Make a hospital table (name, SSN, ZIP, birth date, sex, ethnicity, marital status,
   diagnosis) and a public voter list (name, ZIP, birth date, sex, party) of the same town;
   every patient is a voter.
2. "De-identify" the hospital table the naive way: drop names and SSNs.
3. Attack: join the voter list on ZIP, birth date and sex. Most patients are singled out
   and their diagnosis is learned.
4. Anonymize: 5-anonymity and distinct 2-diversity on the diagnosis, with a small
   suppression limit.
5. Attack again: nobody is singled out, no diagnosis is learned with certainty.
6. The longitudinal case: the same patients' visits (1 to 8 rows each). Counted in rows,
   5-anonymity holds while patients with five visits or more sit alone in their class;
   with the person key, every class holds five people.

:func:`run_demo` returns every table and figure; ``blendin demo`` prints them.
"""

from __future__ import annotations

import dataclasses
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from blendin.anonymize import anonymize
from blendin.attack import AttackReport, attack
from blendin.check import check
from blendin.datasets import linking_tables
from blendin.estimators import ESTIMATOR_NAMES
from blendin.hierarchy.builders import flat
from blendin.hierarchy.dates import dates
from blendin.hierarchy.masking import masking
from blendin.hierarchy.tree import tree
from blendin.io import write_table, write_text
from blendin.models import DistinctLDiversity, KAnonymity
from blendin.outputs import together_in
from blendin.risk import RiskReport, risk
from blendin.spec import Spec
from blendin.summaries import percent, percent_of

#: the columns Sweeney joined on
JOIN = ("zip", "dob", "sex")
QUASI_IDENTIFIERS = ("zip", "dob", "sex", "ethnicity", "marital_status")
MARITAL_TREE = {
    "Has married": ["Married", "Divorced", "Widowed"],
    "Never married": None,
}


def demo_spec(k: int = 5, l: int = 2, max_suppression: float = 0.05):  # noqa: E741
    """The release spec of the demo: ZIP masked, birth date along a date ladder, sex and
    ethnicity flat, marital status a small tree; k-anonymity and distinct l-diversity."""
    return Spec(
        identifiers=["name", "ssn"],
        quasi_identifiers={
            "zip": masking(),
            "dob": dates("month", "year", "decade"),
            "sex": flat(),
            "ethnicity": flat(),
            "marital_status": tree(MARITAL_TREE),
        },
        sensitive=["diagnosis"],
        models=[KAnonymity(k), DistinctLDiversity("diagnosis", l)],
        max_suppression=max_suppression,
    )


@dataclass(eq=False)
class Demo:
    """Everything the demo made and measured."""

    seed: int
    population: int
    hospital: pd.DataFrame
    voters: pd.DataFrame
    deidentified: pd.DataFrame
    release: pd.DataFrame
    spec: Any
    result: Any
    attack_before: AttackReport
    attack_after: AttackReport
    risk_before: RiskReport
    risk_after: RiskReport
    seconds: float
    visits: Visits | None = None

    def table(self) -> list[str]:
        """The before/after comparison as aligned text lines."""
        b, a = self.attack_before, self.attack_after
        rb, ra = self.risk_before, self.risk_after

        def pct(x: float) -> str:
            return percent(x)

        def count(n: int, total: int) -> str:
            return f"{n} ({percent_of(n, total) if total else '-'})"

        rows = [
            ("records released", str(b.release), str(a.release)),
            ("voters re-identified (1 match)", count(b.reidentified, b.external),
             count(a.reidentified, a.external)),
            ("  of them correct", str(b.correct) if b.correct is not None else "-",
             str(a.correct) if a.correct is not None else "-"),
            ("patients singled out", count(b.records_reidentified, b.release),
             count(a.records_reidentified, a.release)),
            ("diagnosis learned with certainty", count(b.learned["diagnosis"], b.external),
             count(a.learned["diagnosis"], a.external)),
            ("smallest class", str(int(rb.sizes.min())), str(int(ra.sizes.min()))),
            ("prosecutor risk, highest", pct(rb.prosecutor.highest), pct(ra.prosecutor.highest)),
            ("prosecutor risk, average", pct(rb.prosecutor.average), pct(ra.prosecutor.average)),
            (f"records at risk (> {rb.threshold:g})", pct(rb.prosecutor.records_at_risk),
             pct(ra.prosecutor.records_at_risk)),
            ("sample uniques", str(rb.sample_uniques), str(ra.sample_uniques)),
            ("population uniques (Dankar)", _uniques(rb), _uniques(ra)),
            ("classes with one diagnosis", str(rb.homogeneity["diagnosis"].classes),
             str(ra.homogeneity["diagnosis"].classes)),
        ]
        utility = self.result.utility
        if "loss" in utility:  # 0 = nothing generalized, 1 = everything suppressed
            rows.append(("information loss (0..1)", "0", f"{utility['loss']:.3f}"))
        rows.append(("records suppressed", "0", str(self.result.suppressed)))
        width = max(len(r[0]) for r in rows)
        left, right = (max(16, *(len(r[i]) for r in rows)) for i in (1, 2))
        lines = [f"{'':<{width}}  {'de-identified':>{left}}  {'anonymized':>{right}}"]
        lines += [f"{r[0]:<{width}}  {r[1]:>{left}}  {r[2]:>{right}}" for r in rows]
        lines += ["", *textwrap.wrap(
            f"The voter rows count voters (percent of the {b.external:,}): several voters "
            "can match the same patient, so more voters than patients can be re-identified. "
            "Population uniques: the people of the population estimated to be alone in "
            "their class, by the estimator Dankar's rule picks.", 88)]
        return lines


@dataclass(eq=False)
class Visits:
    """The longitudinal case: one release of the visits counted in rows, one in people.

    ``alone`` counts the patients who are the only person in their class of the release
    counted in rows (an attacker who knows their QIs finds them, however many rows the
    class has); ``by_rows`` and ``by_people`` are the two Results, ``check_rows`` the
    checker's verdict on the first release counted in people.
    """

    table: pd.DataFrame
    by_rows: Any
    by_people: Any
    check_rows: Any
    alone: int


def visits_story(hospital: pd.DataFrame, seed: int = 0) -> Visits:
    """The hospital's patients with 1 to 8 visits each, released counted in rows and then
    counted in people (the same spec, with the person key ``patient_id``)."""
    table = patient_visits(hospital, seed)
    spec = demo_spec(max_suppression=0.05)
    by_rows = anonymize(table, spec, keep_order=True,
                        original_row="row", index_base=0)
    release = _as_pandas(by_rows.data)
    # the key, joined back through the source row (for the check; never released)
    keyed = release.assign(patient_id=table["patient_id"].to_numpy()[release["row"]])
    people_spec = dataclasses.replace(spec, person="patient_id")
    check_rows = check(keyed.drop(columns=["row"]), people_spec)
    kept = keyed[keyed[list(QUASI_IDENTIFIERS)].ne("*").any(axis=1)]
    alone = int((kept.groupby(list(QUASI_IDENTIFIERS))["patient_id"].nunique() == 1).sum())
    by_people = anonymize(table, people_spec, shuffle_seed=seed)
    return Visits(table, by_rows, by_people, check_rows, alone)


def patient_visits(hospital: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Each patient's visits: 1 to 8 rows (most have one or two), a diagnosis each."""
    rng = np.random.default_rng([seed, 3])
    count = np.minimum(rng.geometric(0.45, len(hospital)), 8)
    rows = hospital.loc[hospital.index.repeat(count)].reset_index(drop=True)
    rows.insert(0, "patient_id", np.repeat(np.arange(1, len(hospital) + 1), count))
    again = rng.random(len(rows)) < 0.3  # some visits are for something else
    rows.loc[again, "diagnosis"] = rng.permutation(rows["diagnosis"].to_numpy())[again]
    return rows


def _uniques(report: RiskReport) -> str:
    p = report.population
    if p is None:
        return "-"
    if p.model == "none":
        return "0"
    return f"{p.dankar:,.0f} of {p.population:,.0f} ({ESTIMATOR_NAMES[p.model]})"


def run_demo(
    seed: int = 0,
    patients: int = 2000,
    voters: int = 6000,
    *,
    out: str | Path | None = None,
    echo: Callable[[str], None] | None = None,
) -> Demo:
    """Run the whole story; with ``out``, write the tables, the spec and the release there.

    ``echo`` receives one line per step as it happens (None: silent).
    """
    say = echo or (lambda line: None)
    start = time.perf_counter()
    hospital, voter_list = linking_tables(patients, voters, seed)
    population = max(4 * voters, 10 * patients)  # the town linking_tables draws from
    say(f"made a hospital table of {len(hospital)} patients and a voter list of "
        f"{len(voter_list)} people (town of {population}, seed {seed})")
    deidentified = hospital.drop(columns=["name", "ssn"])
    say("removed names and SSNs: the 'de-identified' table keeps ZIP, birth date, sex, "
        "ethnicity, marital status, diagnosis")
    # the names ride along only to score the attack; the join uses ZIP, birth date, sex
    before = attack(deidentified.assign(name=hospital.name), voter_list, list(JOIN),
                    sensitive=["diagnosis"], truth="name")
    say(f"linking attack on {', '.join(JOIN)}: {before.reidentified} voters match exactly "
        f"one record ({before.correct} correctly), {before.records_reidentified} of "
        f"{before.release} patients singled out")
    risk_before = risk(deidentified, list(QUASI_IDENTIFIERS), sensitive=["diagnosis"],
                       population=population)
    spec = demo_spec()
    # the tables are made up: the same seed tells the same story, down to the rows' order
    result = anonymize(hospital, spec, shuffle_seed=seed)
    release = _as_pandas(result.data)
    say(f"anonymized (5-anonymity, distinct 2-diversity on diagnosis): levels "
        f"{_levels(result)}, {result.suppressed} records suppressed")
    after = attack(release, voter_list, list(JOIN), sensitive=["diagnosis"])
    say(f"linking attack again: {after.reidentified} voters match exactly one record, "
        f"{after.learned['diagnosis']} diagnoses learned with certainty")
    risk_after = risk(release, list(QUASI_IDENTIFIERS), sensitive=["diagnosis"],
                      population=population)
    story = visits_story(hospital, seed)
    rows, people = story.by_rows, story.by_people
    say(f"the same patients' visits: {len(story.table)} rows of {len(hospital)} patients; "
        f"counted in rows, 5-anonymity holds (smallest class {rows.min_class_size} rows) "
        f"while {story.alone} patients are alone in their class "
        f"({story.check_rows.models[0].violating_classes} classes of fewer than 5 people)")
    say(f"counted in people (person key patient_id): levels {_levels(people)}, smallest "
        f"class {people.min_class_size} people, {people.people['suppressed_people']} "
        "patients suppressed")
    demo = Demo(seed, population, hospital, voter_list, deidentified, release, spec, result,
                before, after, risk_before, risk_after, time.perf_counter() - start, story)
    if out is not None:
        for path in write_demo(demo, out):
            say(f"wrote {path}")
    return demo


def _levels(result) -> str:
    return ", ".join(f"{k}={v}" for k, v in result.levels.items()) or "-"


def _as_pandas(data) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, pa.Table):
        return data.to_pandas()
    return data.to_pandas() if hasattr(data, "to_pandas") else pd.DataFrame(data)


#: the files ``write_demo`` writes, in order
DEMO_FILES = ("hospital.csv", "deidentified.csv", "voters.csv", "release.csv", "spec.toml",
              "report.html")


def write_demo(demo: Demo, out: str | Path) -> list[Path]:
    """Write hospital.csv, deidentified.csv, voters.csv, spec.toml, release.csv and
    report.html (the release report: risk before and after, with the population; the
    linking attack with the voter list) to ``out`` (created if needed), all together."""
    folder = Path(out)
    written = []
    with together_in(folder):  # the six files take their names together, or none does
        for name, frame in (("hospital.csv", demo.hospital), ("deidentified.csv",
                            demo.deidentified), ("voters.csv", demo.voters),
                            ("release.csv", demo.release)):
            table = pa.Table.from_pandas(frame.astype(str), preserve_index=False)
            written.append(write_table(table, folder / name))
        written.append(write_text(folder / "spec.toml", demo.spec.to_toml()))
        written.append(demo.result.report(folder / "report.html", original=demo.hospital,
                                          external=demo.voters, on=list(JOIN),
                                          population=demo.population))
    return written


