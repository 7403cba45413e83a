"""The table and spec every engine is compared on (embedded, Spark, SQL): 600 patients with
age, sex and ZIP as quasi-identifiers, a diagnosis as the sensitive attribute."""

import numpy as np
import pandas as pd

from blendin.hierarchy.core import Hierarchy
from blendin.hierarchy.masking import masking
from blendin.models import DistinctLDiversity, KAnonymity
from blendin.spec import Spec

SEX = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
ZIPS = ["02138", "02139", "02141", "03101", "03102"]


def table(n=600, seed=3):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": [f"p{i}" for i in range(n)], "age": rng.integers(18, 90, n),
                         "sex": rng.choice(["f", "m"], n), "zip": rng.choice(ZIPS, n),
                         "dx": rng.choice(list("abcd"), n), "visits": rng.integers(0, 9, n)})


def spec_for(df, **kw):
    age = Hierarchy.from_rows([[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*"]
                               for a in sorted(set(df.age))])
    base = dict(quasi_identifiers={"age": age, "sex": SEX, "zip": masking()},
                identifiers=["id"], sensitive=["dx"],
                models=[KAnonymity(8), DistinctLDiversity("dx", 2)], max_suppression=0.05)
    base.update(kw)
    return Spec(**base)


def write_linking_case(folder, seed: int):
    """The demo's hospital and voter tables (300 and 600 people) and a k = 2 spec of them,
    written into ``folder``, which is returned."""
    from blendin.datasets import linking_tables

    hospital, voters = linking_tables(300, 600, seed=seed)
    hospital.to_csv(folder / "hospital.csv", index=False)
    voters.to_csv(folder / "voters.csv", index=False)
    (folder / "s.toml").write_text(
        '[attributes]\nidentifiers = ["name", "ssn"]\nsensitive = ["diagnosis"]\n'
        '[quasi_identifiers]\nzip = { masking = 5 }\nsex = { flat = true }\n'
        '[[privacy]]\nmodel = "k-anonymity"\nk = 2\n'
        '[anonymization]\nmax_suppression = 0.5\n')
    return folder


def decades_case():
    """Nine ages in classes of 4 at k = 4 (20-29, 30-39) and one to suppress: a row lost
    or dropped unseen leaves a class of 3, which the checker must see."""
    ages = [20, 21, 22, 23, 30, 31, 32, 33, 40]
    df = pd.DataFrame({"age": [str(a) for a in ages], "dx": list("abcdabcda")})
    age = Hierarchy.from_rows([[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*"]
                               for a in ages])
    return df, Spec(quasi_identifiers={"age": age}, sensitive=["dx"],
                    models=[KAnonymity(4)], max_suppression=0.2)
