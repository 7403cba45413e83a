import datetime as dt
import importlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.attack import attack
from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy

attack_module = importlib.import_module("blendin.attack")


def _covers(label: str, value: str, column: str) -> bool:
    """Plain-Python reading of the labels these tests release."""
    if label == "*" or label == value:
        return True
    if column == "age" and "-" in label:
        lo, hi = label.split("-")
        return int(lo) <= int(value) <= int(hi)
    if column == "zip":
        return len(label) == len(value) and value.startswith(label.rstrip("*"))
    if column == "dob":
        if len(label) in (4, 7):  # year or month
            return value.startswith(label)
        if len(label) == 9:  # decade 1960-1969
            return int(label[:4]) <= int(value[:4]) <= int(label[5:])
    return False


def _generalize(value: str, column: str, level: int) -> str:
    if level == 0:
        return value
    if level == 3:
        return "*"
    if column == "age":
        width = 10 if level == 1 else 50
        lo = int(value) // width * width
        return f"{lo}-{lo + width - 1}"
    if column == "zip":
        return value[: 5 - 2 * level] + "*" * (2 * level)
    return value[:7] if level == 1 else f"{value[:3]}0-{value[:3]}9"


def _brute_force(release: pd.DataFrame, external: pd.DataFrame, on, k, sensitive, truth):
    matches, reid, amb, hidden, none, correct, singled = [], 0, 0, 0, 0, 0, set()
    learned = dict.fromkeys(sensitive, 0)
    values = {s: [] for s in sensitive}
    for _, person in external.iterrows():
        hits = [i for i, rec in release.iterrows()
                if all(_covers(rec[c], person[c], c) for c in on)]
        matches.append(len(hits))
        if not hits:
            none += 1
        elif len(hits) == 1:
            reid += 1
            singled.add(hits[0])
            correct += truth is not None and release.loc[hits[0], truth] == person[truth]
        elif len(hits) < k:
            amb += 1
        else:
            hidden += 1
        for s in sensitive:
            seen = {release.loc[i, s] for i in hits}
            learned[s] += bool(hits) and len(seen) == 1
            values[s].append(seen.pop() if hits and len(seen) == 1 else None)
    return matches, (none, reid, amb, hidden), len(singled), correct, learned, values


def _person(draw_age, draw_zip, draw_day):
    day = dt.date(1950, 1, 1) + dt.timedelta(days=draw_day)
    return {"age": str(draw_age), "zip": draw_zip, "dob": day.isoformat()}


people = st.builds(_person, st.integers(18, 80), st.sampled_from(["02138", "02139", "02141",
                                                                   "02445", "10001"]),
                   st.integers(0, 5000))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(people, st.sampled_from(["flu", "gout"]), st.integers(0, 3),
                          st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=12),
       st.lists(people, min_size=0, max_size=8), st.integers(2, 4))
def test_attack_matches_brute_force(records, strangers, k):
    rows, ext_rows = [], []
    for i, (person, dx, la, lz, ld) in enumerate(records):
        rows.append({"age": _generalize(person["age"], "age", la),
                     "zip": _generalize(person["zip"], "zip", lz),
                     "dob": _generalize(person["dob"], "dob", ld), "dx": dx, "id": f"p{i}"})
        ext_rows.append({**person, "id": f"p{i}"})
    ext_rows += [{**p, "id": f"s{i}"} for i, p in enumerate(strangers)]
    release, external = pd.DataFrame(rows), pd.DataFrame(ext_rows)
    on = ["age", "zip", "dob"]
    matches, buckets, singled, correct, learned, values = _brute_force(
        release, external, on, k, ["dx"], "id")
    saved = attack_module.SPARSE_SHARE
    try:
        for share in (-1.0, float("inf")):  # the dense path, then the pair enumeration
            attack_module.SPARSE_SHARE = share
            report = attack(release, external, on, k=k, sensitive=["dx"], truth="id",
                            kinds={"age": "numeric", "zip": "categorical", "dob": "date"})
            assert report.matches.tolist() == matches
            assert (report.no_match, report.reidentified, report.ambiguous,
                    report.hidden) == buckets
            assert report.records_reidentified == singled
            assert report.correct == correct
            assert report.learned == learned
            assert report.learned_values["dx"].tolist() == values["dx"]
            assert report.table().column("learned_dx").to_pylist() == values["dx"]
            assert report.external == len(external) and report.release == len(release)
    finally:
        attack_module.SPARSE_SHARE = saved


def test_blocks_give_the_same_answer(monkeypatch):
    rng = np.random.default_rng(0)
    release = pd.DataFrame({"a": rng.integers(0, 30, 300).astype(str),
                            "b": rng.choice(["x", "y", "*"], 300),
                            "dx": rng.choice(["p", "q", "r"], 300)})
    external = pd.DataFrame({"a": rng.integers(0, 40, 500).astype(str),
                             "b": rng.choice(["x", "y"], 500)})
    whole = attack(release, external, k=3)
    for share in (-1.0, float("inf")):
        monkeypatch.setattr(attack_module, "SPARSE_SHARE", share)
        monkeypatch.setattr(attack_module, "BLOCK_CELLS", 7)
        blocked = attack(release, external, k=3)
        assert whole.to_dict() == blocked.to_dict()
        assert whole.matches.tolist() == blocked.matches.tolist()


def test_sweeney_example_and_defaults():
    release = pd.DataFrame({"zip": ["02138", "02138", "021**", "021**"],
                            "dob": ["1945-07-31", "1950-01-02", "1960", "1960"],
                            "sex": ["M", "F", "M", "M"],
                            "diagnosis": ["heart", "flu", "gout", "gout"]})
    voters = pd.DataFrame({"name": ["Weld", "Ann", "Bo", "Cy"],
                           "zip": ["02138", "02138", "02139", "02141"],
                           "dob": ["1945-07-31", "1950-01-03", "1960-05-05", "1961-01-01"],
                           "sex": ["M", "F", "M", "M"]})
    report = attack(release, voters)  # joins on the shared columns
    assert report.on == ("zip", "dob", "sex")
    assert report.kinds == {"zip": "categorical", "dob": "date", "sex": "categorical"}
    assert report.matches.tolist() == [1, 0, 2, 0]
    assert report.learned == {"diagnosis": 2}  # Weld's heart, and Bo's gout (homogeneous)
    lines = "\n".join(report.lines())
    assert "match exactly 1 (re-identified)" in lines and "diagnosis learned" in lines


@pytest.mark.parametrize("person", [None, "pid"])
def test_the_counts_stand_in_one_column(person):
    release = pd.DataFrame({"pid": ["1", "1", "2"], "zip": ["021**", "021**", "022**"],
                            "dx": ["flu", "gout", "flu"]})
    voters = pd.DataFrame({"zip": ["02138", "02201"]})
    lines = attack(release, voters, on="zip", person=person).lines()
    counts = [line for line in lines if line.endswith(")") and "  (" in line]
    assert any("singled out" in line for line in counts) and len(counts) >= 5
    assert len({line.index("  (") for line in counts}) == 1, counts  # docs/demo.md shows so


def test_hierarchy_labels_cover_their_values():
    tree = Hierarchy.from_rows([["Married", "Has married", "*"],
                                ["Divorced", "Has married", "*"],
                                ["Never married", "Never married", "*"]])
    release = pd.DataFrame({"m": ["Has married", "Never married"], "dx": ["a", "b"]})
    external = pd.DataFrame({"m": ["Divorced", "Never married", "Married"]})
    without = attack(release, external, "m")
    with_tree = attack(release, external, "m", hierarchies={"m": tree})
    assert without.matches.tolist() == [0, 1, 0]
    assert with_tree.matches.tolist() == [1, 1, 1]


def test_suppressed_records_match_everyone():
    release = pd.DataFrame({"a": ["1", "*"], "b": ["x", "*"], "dx": ["p", "q"]})
    report = attack(release, pd.DataFrame({"a": ["1", "2"], "b": ["x", "y"]}))
    assert report.matches.tolist() == [2, 1]


def test_bad_input_names_the_column_and_the_fix():
    release = pd.DataFrame({"zip": ["021**"], "dob": ["1965"], "sex": ["M"]})
    with pytest.raises(BlendinError, match=r"'dob'.*external table.*fix: did you mean 'DOB'"):
        attack(release, pd.DataFrame({"zip": ["02138"], "DOB": ["1965-01-01"], "sex": ["M"]}),
               on="zip,dob,sex")
    with pytest.raises(BlendinError, match="no column in common.*pass --on"):
        attack(release, pd.DataFrame({"name": ["Ann"]}))
    with pytest.raises(BlendinError, match=r"'dob'.*'07/03/1965'.*--kind dob=categorical"):
        attack(release, pd.DataFrame({"zip": ["02138"], "dob": ["07/03/1965"], "sex": ["M"]}))
    with pytest.raises(BlendinError, match="'dob' should hold dates"):
        attack(release, pd.DataFrame({"dob": ["1965-13-01"]}), kinds={"dob": "date"})
    with pytest.raises(BlendinError, match="truth column 'id'"):
        attack(release, pd.DataFrame({"zip": ["02138"]}), truth="id")
    with pytest.raises(BlendinError, match="k must be 2"):
        attack(release, pd.DataFrame({"zip": ["02138"]}), k=1)
    with pytest.raises(BlendinError, match="unknown kind"):
        attack(release, pd.DataFrame({"zip": ["02138"]}), kinds={"zip": "zipcode"})


def test_files_and_polars_keep_codes_as_text(tmp_path):
    import polars as pl

    release = tmp_path / "release.csv"
    release.write_text("zip;sex;dx\n021**;F;flu\n021**;F;gout\n02445;M;flu\n")
    voters = pl.DataFrame({"zip": ["02138", "02445", "2445"], "sex": ["F", "M", "M"]})
    report = attack(str(release), voters)
    assert report.matches.tolist() == [2, 1, 0]
    assert report.learned == {"dx": 1}
    from blendin.risk import risk

    assert risk(str(release), "zip,sex").sample_uniques == 1


def test_cover_pairs_agree_with_the_dense_reading():
    from blendin.labels import cover_pairs, covers

    rng = np.random.default_rng(2)
    values = np.unique(rng.integers(0, 60, 40).astype(str))
    labels = np.array(["*", "1*", "2*", "10-19", "[20, 40)", ">=50", "7", "07", "x",
                       "{3,4,5}"] + values[:5].tolist(), dtype=object)
    rows, columns = cover_pairs(labels, values, "numeric")
    dense = covers(labels, values, "numeric")
    assert sorted(zip(rows.tolist(), columns.tolist())) == [tuple(p) for p in np.argwhere(
        dense).tolist()]
    brute = [[_plain_numeric(str(label), v) for v in values] for label in labels]
    assert dense.tolist() == brute


def _plain_numeric(label: str, value: str) -> bool:
    if label in ("*", value):
        return True
    if label.startswith("{"):
        return value in label[1:-1].split(",")
    if label.endswith("*"):
        return len(value) == len(label) and value.startswith(label[:-1])
    x = float(value)
    if label.startswith(">="):
        return x >= float(label[2:])
    if label.startswith("["):
        lo, hi = label[1:-1].split(",")
        return float(lo) <= x < float(hi)
    if "-" in label:
        lo, hi = label.split("-")
        return float(lo) <= x <= float(hi)
    try:
        return float(label) == x
    except ValueError:
        return False


def test_29_of_2000_reads_the_same_in_text_and_in_python():
    release = pd.DataFrame({"a": [f"u{i}" for i in range(29)] + ["c"] * 5})
    external = pd.DataFrame({"a": [f"u{i}" for i in range(29)] + ["c"] * 1971})
    report = attack(release, external, on=["a"])
    assert (report.reidentified, report.external) == (29, 2000)
    text = "\n".join(report.lines())
    shown = next(line for line in text.splitlines() if "re-identified" in line)
    assert "(1.5%)" in shown  # 29 / 2000 = 1.45%, half up
    from blendin.summaries import attack_summary

    assert "29 (1.5%)" in str(attack_summary(report).rows)
