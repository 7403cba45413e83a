"""Synthetic tables made by the package itself: a town, its hospital, its voter list.

Everything is drawn from a NumPy generator seeded by ``seed``, so the same arguments give
the same tables on every machine. The distributions are plausible, not real: ZIP codes of
Cambridge/Boston-area towns with uneven populations, an adult age pyramid, 51% women,
marital status that depends on age, diagnoses that depend on age and sex.

>>> hospital, voters = linking_tables(patients=50, voters=120, seed=1)
>>> len(hospital), len(voters), set(hospital.name) <= set(voters.name)
(50, 120, True)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from blendin.errors import BlendinError

#: the date ages are measured from (fixed, so tables do not change with the calendar)
REFERENCE_DATE = np.datetime64("2025-01-01")

#: ZIP code -> relative population (three 3-digit areas so masking has something to group)
ZIP_WEIGHTS = {
    "02138": 9, "02139": 12, "02140": 6, "02141": 4, "02142": 2, "02143": 8, "02144": 7,
    "02145": 8, "02114": 5, "02115": 9, "02116": 7, "02118": 8, "02134": 6, "02135": 10,
    "02445": 5, "02446": 7, "02451": 4, "02453": 5, "02472": 6, "02474": 7, "02476": 4,
    "02203": 1, "02210": 2, "02215": 6,
}
SEXES = ("F", "M")
ETHNICITIES = {"White": 0.58, "Hispanic": 0.14, "Black": 0.12, "Asian": 0.11, "Other": 0.05}
MARITAL = ("Never married", "Married", "Divorced", "Widowed")
DIAGNOSES = ("Hypertension", "Type 2 diabetes", "Asthma", "Influenza", "Depression",
             "Heart failure", "Fracture", "Pneumonia", "Migraine", "Breast cancer",
             "Prostate cancer", "Appendicitis")
PARTIES = {"Democrat": 0.55, "Unenrolled": 0.33, "Republican": 0.10, "Libertarian": 0.02}
FIRST_NAMES = {
    "F": ("Mary", "Patricia", "Jennifer", "Linda", "Elizabeth", "Barbara", "Susan", "Jessica",
          "Sarah", "Karen", "Lisa", "Nancy", "Betty", "Sandra", "Margaret", "Ashley", "Kimberly",
          "Emily", "Donna", "Michelle", "Carol", "Amanda", "Melissa", "Deborah", "Laura",
          "Rebecca", "Sharon", "Cynthia", "Kathleen", "Amy", "Angela", "Helen", "Anna", "Maria",
          "Olivia", "Sofia", "Mei", "Aisha", "Fatima", "Priya"),
    "M": ("James", "Robert", "John", "Michael", "David", "William", "Richard", "Joseph",
          "Thomas", "Charles", "Christopher", "Daniel", "Matthew", "Anthony", "Mark", "Donald",
          "Steven", "Paul", "Andrew", "Joshua", "Kenneth", "Kevin", "Brian", "George", "Timothy",
          "Ronald", "Edward", "Jason", "Jeffrey", "Ryan", "Jacob", "Gary", "Carlos", "Luis",
          "Wei", "Hiroshi", "Omar", "Ahmed", "Raj", "Kwame"),
}
LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
    "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor",
    "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez",
    "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright",
    "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall",
    "Rivera", "Campbell", "Mitchell", "Carter", "Roberts", "Chen", "Wang", "Kim", "Patel",
    "Murphy", "Sullivan", "O'Brien", "Kelly", "Walsh", "Cohen",
)
MIDDLE_INITIALS = tuple("ABCDEFGHJKLMNPRSTW")


def people(n: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """A town of ``n`` adults: name, ssn, zip, dob, sex, ethnicity, marital_status.

    Names and SSNs are unique; ``dob`` is an ISO date (text), ``zip`` a 5-digit text code.

    >>> town = people(200, seed=3)
    >>> town.shape, town.ssn.is_unique, town.name.is_unique
    ((200, 7), True, True)
    """
    _check_size(n, "n")
    rng = np.random.default_rng([seed, 0])
    sex = rng.choice(SEXES, size=n, p=[0.51, 0.49])
    age_days = _age_days(rng, n)
    dob = (REFERENCE_DATE - age_days.astype("timedelta64[D]")).astype(str)
    zips = np.array(list(ZIP_WEIGHTS))
    weights = np.array(list(ZIP_WEIGHTS.values()), dtype=float)
    return pd.DataFrame({
        "name": _names(rng, sex),
        "ssn": _ssns(rng, n),
        "zip": rng.choice(zips, size=n, p=weights / weights.sum()),
        "dob": dob,
        "sex": sex,
        "ethnicity": rng.choice(list(ETHNICITIES), size=n, p=list(ETHNICITIES.values())),
        "marital_status": _marital(rng, age_days / 365.25),
    })


def hospital(patients: int = 1000, seed: int = 0, town: pd.DataFrame | None = None
             ) -> pd.DataFrame:
    """Hospital discharge records: the people columns plus ``diagnosis``.

    Patients are drawn without replacement from ``town`` (default: a town of ten times as
    many people made with the same seed).

    >>> hospital(30, seed=2).columns.tolist()[-1]
    'diagnosis'
    """
    _check_size(patients, "patients")
    town = people(patients * 10, seed) if town is None else town
    if patients > len(town):
        raise BlendinError(f"cannot draw {patients} patients from a town of {len(town)}",
                           fix="ask for fewer patients or a larger town")
    rng = np.random.default_rng([seed, 1])
    chosen = town.iloc[np.sort(rng.choice(len(town), size=patients, replace=False))]
    records = chosen.reset_index(drop=True).copy()
    records["diagnosis"] = _diagnoses(rng, records)
    return records


def voter_list(town: pd.DataFrame, voters: int, must_include: pd.DataFrame | None = None,
               seed: int = 0) -> pd.DataFrame:
    """A public voter list of ``voters`` people of ``town``: name, zip, dob, sex, party.

    Everyone in ``must_include`` (e.g. the patients) is on it; the rest are drawn at random.
    Rows are shuffled.
    """
    rng = np.random.default_rng([seed, 2])
    wanted = np.zeros(len(town), dtype=bool)
    if must_include is not None:
        wanted |= town.ssn.isin(must_include.ssn).to_numpy()
    extra = voters - int(wanted.sum())
    if extra < 0 or voters > len(town):
        raise BlendinError(
            f"a voter list of {voters} cannot hold the {int(wanted.sum())} people it must "
            f"include from a town of {len(town)}",
            fix="ask for at least as many voters as patients (--voters N; voters= in Python) "
                "or a larger town",
        )
    others = np.flatnonzero(~wanted)
    wanted[rng.choice(others, size=extra, replace=False)] = True
    listed = town.iloc[rng.permutation(np.flatnonzero(wanted))].reset_index(drop=True)
    party = rng.choice(list(PARTIES), size=len(listed), p=list(PARTIES.values()))
    return pd.DataFrame({"name": listed.name, "zip": listed.zip, "dob": listed.dob,
                         "sex": listed.sex, "party": party})


def linking_tables(patients: int = 1000, voters: int = 3000, seed: int = 0
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two tables of Sweeney's linking attack: hospital records and a voter list.

    The town has ``max(4 * voters, 10 * patients)`` people; every patient is a voter.
    """
    _check_size(patients, "patients")
    town = people(max(4 * voters, 10 * patients), seed)
    records = hospital(patients, seed, town)
    return records, voter_list(town, voters, must_include=records, seed=seed)


def _check_size(n: int, name: str) -> None:
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 1:
        raise BlendinError(f"{name} must be a whole number >= 1, got {n!r}",
                           fix=f"pass e.g. {name}=1000")


def _age_days(rng: np.random.Generator, n: int) -> np.ndarray:
    """Adult ages 18-95 in days: flat to 60, thinning after (a rough US pyramid)."""
    years = np.arange(18, 96)
    weight = np.where(years < 60, 1.0, np.exp(-(years - 60) / 12))
    age = rng.choice(years, size=n, p=weight / weight.sum())
    return age * 365 + rng.integers(0, 365, size=n)


def _names(rng: np.random.Generator, sex: np.ndarray) -> np.ndarray:
    """Unique full names: first (by sex), middle initial, last; clashes get a number."""
    n = len(sex)
    first = np.where(
        sex == "F",
        rng.choice(FIRST_NAMES["F"], size=n),
        rng.choice(FIRST_NAMES["M"], size=n),
    ).astype(object)
    names = (first + " " + rng.choice(MIDDLE_INITIALS, size=n).astype(object) + ". "
             + rng.choice(LAST_NAMES, size=n).astype(object))
    order = np.argsort(names, kind="stable")
    ranked = names[order]
    start = np.r_[True, ranked[1:] != ranked[:-1]]
    group_start = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    nth = np.arange(n) - group_start
    suffix = np.where(nth > 0, " " + (nth + 1).astype(str).astype(object), "")
    out = np.empty(n, dtype=object)
    out[order] = ranked + suffix
    return out


def _ssns(rng: np.random.Generator, n: int) -> np.ndarray:
    numbers = rng.choice(899_999_999, size=n, replace=False) + 100_000_000
    area = (numbers // 1_000_000).astype(str)
    group = np.char.zfill(((numbers // 10_000) % 100).astype(str), 2)
    serial = np.char.zfill((numbers % 10_000).astype(str), 4)
    return (area.astype(object) + "-" + group.astype(object) + "-" + serial.astype(object))


def _marital(rng: np.random.Generator, age: np.ndarray) -> np.ndarray:
    """Young people are mostly never married, old people more often widowed."""
    young = np.array([0.70, 0.25, 0.04, 0.01])
    middle = np.array([0.20, 0.60, 0.16, 0.04])
    old = np.array([0.07, 0.50, 0.13, 0.30])
    probs = np.where((age < 30)[:, None], young, np.where((age < 65)[:, None], middle, old))
    pick = (rng.random(len(age))[:, None] > probs.cumsum(axis=1)).sum(axis=1)
    return np.array(MARITAL, dtype=object)[np.minimum(pick, len(MARITAL) - 1)]


def _diagnoses(rng: np.random.Generator, records: pd.DataFrame) -> np.ndarray:
    """Diagnoses weighted by age band and sex (cancers by sex, chronic ones with age)."""
    age = (REFERENCE_DATE - pd.to_datetime(records.dob).to_numpy().astype("datetime64[D]")
           ).astype(int) / 365.25
    base = np.array([3, 2, 2, 3, 2, 1, 2, 2, 2, 1, 1, 1], dtype=float)
    chronic = np.array([3, 2, 0, 0, 0, 3, 1, 1, 0, 1, 1, 0], dtype=float)
    weights = base[None, :] + (age[:, None] / 40) * chronic[None, :]
    is_male = (records.sex.to_numpy() == "M")
    weights[:, DIAGNOSES.index("Breast cancer")] *= np.where(is_male, 0.02, 1.0)
    weights[:, DIAGNOSES.index("Prostate cancer")] *= np.where(is_male, 1.0, 0.0)
    cumulative = (weights / weights.sum(axis=1, keepdims=True)).cumsum(axis=1)
    pick = (rng.random(len(records))[:, None] > cumulative).sum(axis=1)
    return np.array(DIAGNOSES, dtype=object)[np.minimum(pick, len(DIAGNOSES) - 1)]
