"""The linking attack's trust defects of issue 35 (items 14 and 15)."""

import unicodedata

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner

from blendin.attack import attack
from blendin.cli import main
from blendin.datasets import linking_tables
from blendin.errors import BlendinError

JOIN = ["zip", "dob", "sex"]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _column_lines(report) -> list[str]:
    """The warnings that blame a join column."""
    return [w for w in report.warnings if w.startswith("join column")]


# -- 14: a part of one column written differently is named, with its cause and fix ------------


@pytest.fixture(scope="module")
def sweeney():
    """The demo's naive release (names and SSNs dropped) and its voter list, most of whom
    are not patients (so most voters match no record, rightly)."""
    hospital, voters = linking_tables(1000, 3000, seed=0)
    return hospital.drop(columns=["name", "ssn"]), voters


def test_lower_case_in_a_part_of_sex_is_blamed_not_the_dates(sweeney):
    release, voters = sweeney
    clean = attack(release, voters, JOIN, sensitive="diagnosis")
    assert clean.reidentified > 500
    # voters not in the hospital match nothing: no join column is written differently
    assert _column_lines(clean) == []
    lowered = voters.copy()
    rows = np.random.default_rng(7).permutation(len(voters))[: 3 * len(voters) // 10]
    lowered.loc[rows, "sex"] = lowered.loc[rows, "sex"].str.lower()
    report = attack(release, lowered, JOIN, sensitive="diagnosis")
    assert report.reidentified < clean.reidentified  # the figures understate the risk
    lines = _column_lines(report)
    assert len(lines) == 1, report.warnings
    # 30% of the voters, counted another way: the rows changed above
    share = (lowered.sex != voters.sex).mean()
    assert f"{share:.0%}" == "30%"
    assert lines[0].startswith("join column 'sex' (categorical): 30% of the external values")
    assert "case" in lines[0] and "--normalize case" in lines[0]
    assert not any("'dob'" in w or "format" in w for w in report.warnings)
    fixed = attack(release, lowered, JOIN, sensitive="diagnosis", normalize="case")
    assert fixed.reidentified == clean.reidentified
    assert fixed.matches.tolist() == clean.matches.tolist()
    assert _column_lines(fixed) == []


def _small_release() -> pd.DataFrame:
    return pd.DataFrame({"dob": ["1978-Q3", "1978-Q3", "1980-Q1", "1980-Q1"],
                         "sex": ["F", "F", "M", "M"], "zip": ["021**"] * 4,
                         "dx": ["flu", "gout", "flu", "flu"]})


@pytest.mark.parametrize("column,broken,cause,fix", [
    ("sex", {"F": "f", "M": "m"}, "case", "case"),
    ("sex", {"F": " F", "M": "M  "}, "spaces", "space"),
    ("zip", {"02138": "2138", "02139": "2139"}, "leading zeros", "zip-width"),
])
def test_a_part_written_differently_warns_though_most_people_match(column, broken, cause, fix):
    voters = pd.DataFrame({"dob": ["1978-08-15", "1980-02-03"] * 5, "sex": ["F", "M"] * 5,
                           "zip": ["02138", "02139"] * 5})
    voters.loc[[0, 3], column] = voters.loc[[0, 3], column].map(broken)  # 2 of 10 people
    report = attack(_small_release(), voters, on="dob,sex,zip")
    assert report.no_match == 2  # most people match: the old warning stayed silent
    lines = _column_lines(report)
    assert len(lines) == 1, report.warnings
    assert lines[0].startswith(f"join column '{column}'")
    assert "20% of the external values match no released value" in lines[0]
    assert cause in lines[0] and f"--normalize {fix}" in lines[0]
    fixed = attack(_small_release(), voters, on="dob,sex,zip", normalize=fix)
    assert fixed.no_match == 0 and fixed.warnings == ()
    assert fixed.normalized == (fix,)


def test_values_the_release_does_not_hold_are_no_false_alarm():
    # 1981 is simply not released: no spelling of it would match, so nothing is blamed
    voters = pd.DataFrame({"dob": ["1978-08-15", "1980-02-03", "1981-01-01"] * 2,
                           "sex": ["F", "M", "F"] * 2, "zip": ["02138"] * 6})
    report = attack(_small_release(), voters, on="dob,sex,zip")
    assert report.no_match == 2 and report.warnings == ()


def test_most_matching_nothing_blames_a_format_only_where_it_differs():
    voters = pd.DataFrame({"dob": ["1978-08-15", "1980-02-03"] * 3,
                           "sex": ["Female", "Male", "F", "M", "Female", "Male"],
                           "zip": ["02138", "02139"] * 3})
    report = attack(_small_release(), voters, on="dob,sex,zip")
    assert report.no_match == 4
    assert report.warnings[0].startswith("67% of the external people match no record")
    assert _column_lines(report) == [
        "join column 'sex' (categorical): 67% of the external values match no released "
        "value; likely cause: format ('Female' is written unlike the values that match); "
        "write 'sex' as the release does"]


# -- 15: the same text in two Unicode forms matches itself under --normalize unicode ----------

CITIES = ["José", "Zoë Hill", "Ñuñoa", "Plain"]


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _unicode_tables():
    """A release and an external table whose city names are half composed (NFC), half
    decomposed (NFD), on both sides."""
    rng = np.random.default_rng(3)
    city = rng.choice(CITIES, 40)
    release = pd.DataFrame({"city": [_nfd(c) if i % 2 else c for i, c in enumerate(city)],
                            "sex": rng.choice(["F", "M"], 40),
                            "dx": rng.choice(["flu", "gout", "asthma"], 40)})
    people = pd.DataFrame({"city": rng.choice(CITIES, 30), "sex": rng.choice(["F", "M"], 30)})
    external = people.copy()
    external["city"] = [c if i % 2 else _nfd(c) for i, c in enumerate(people.city)]
    assert (external.city != people.city).sum() > 5  # decomposed values differ as text
    return release, external, people


def _brute_force_matches(release: pd.DataFrame, people: pd.DataFrame) -> list[int]:
    """Matches per person when every text is compared in NFC (plain Python)."""
    nfc = [(unicodedata.normalize("NFC", c), s) for c, s in zip(release.city, release.sex)]
    return [sum(r == (c, s) for r in nfc) for c, s in zip(people.city, people.sex)]


def test_mixed_unicode_forms_warn_and_normalize_unicode_joins_them():
    release, external, people = _unicode_tables()
    expected = _brute_force_matches(release, people)
    report = attack(release, external, on="city,sex")
    assert report.matches.tolist() != expected  # composed and decomposed did not meet
    lines = _column_lines(report)
    assert len(lines) == 1, report.warnings
    assert lines[0].startswith("join column 'city'")
    assert "Unicode" in lines[0] and "--normalize unicode" in lines[0]
    fixed = attack(release, external, on="city,sex", normalize="unicode")
    assert fixed.matches.tolist() == expected
    assert fixed.normalized == ("unicode",) and fixed.warnings == ()
    # the release side is normalized too: a decomposed release meets a composed list
    decomposed = release.assign(city=[_nfd(c) for c in release.city])
    composed = people
    assert attack(decomposed, composed, on="city,sex",
                  normalize="unicode").matches.tolist() == expected


def test_unicode_forms_that_never_meet_do_not_warn():
    release, _, people = _unicode_tables()
    decomposed = release.assign(city=[_nfd(c) for c in release.city])
    external = people.assign(city=[_nfd(c) for c in people.city])
    report = attack(decomposed, external, on="city,sex")
    assert report.matches.tolist() == _brute_force_matches(release, people)
    assert report.warnings == ()


def test_cli_normalize_unicode_and_space(tmp_path):
    release, external, people = _unicode_tables()
    external.loc[0, "sex"] = f" {external.loc[0, 'sex']} "
    rel, ext = tmp_path / "r.csv", tmp_path / "e.csv"
    release.to_csv(rel, index=False)
    external.to_csv(ext, index=False)
    result = run("attack", rel, "--external", ext, "--on", "city,sex", "--json")
    assert result.exit_code == 0, result.output
    assert "--normalize unicode" in result.output and "--normalize space" in result.output
    result = run("attack", rel, "--external", ext, "--on", "city,sex", "--json",
                 "--normalize", "unicode,space")
    assert result.exit_code == 0, result.output
    import json

    figures = json.loads(result.output)
    assert figures["normalized"] == ["unicode", "space"] and figures["warnings"] == []
    expected = _brute_force_matches(release, people)
    assert figures["no_match"] == expected.count(0)
    assert figures["reidentified"] == expected.count(1)
    result = run("attack", rel, "--external", ext, "--normalize", "accents")
    assert result.exit_code == 2 and "'accents'" in result.output
    assert "unicode" in result.output
    helped = run("attack", "--help").output
    assert "unicode" in helped and "space" in helped


# -- the shared text normalizations -------------------------------------------------------------


def test_normalize_text_steps():
    from blendin.normalize import STEPS, normalize_text

    assert list(STEPS) == ["unicode", "space", "case"]
    values = pa.array(["HIV", "hiv", " HIV ", "H\u00a0 I\tV", None, "Jose\u0301", "JOSÉ"])
    out = normalize_text(values, "case,space,unicode")
    assert isinstance(out, pa.Array)
    assert out.to_pylist() == ["hiv", "hiv", "hiv", "h i v", None, "josé", "josé"]
    assert normalize_text(values, ["unicode", "case", "space"]).equals(out)  # order-free
    assert normalize_text(values, []).equals(values)
    assert normalize_text(values, "case").to_pylist()[2] == " hiv "
    assert normalize_text(values, "unicode").to_pylist()[5] == "José"  # one code point é
    assert len(normalize_text(values, "unicode").to_pylist()[5]) == 4
    chunked = normalize_text(pa.chunked_array([["A "], ["b"]]), "space,case")
    assert isinstance(chunked, pa.ChunkedArray) and chunked.to_pylist() == ["a", "b"]
    numpy = normalize_text(np.array([" X", "y"], dtype=object), "space")
    assert isinstance(numpy, np.ndarray) and numpy.tolist() == ["X", "y"]
    assert normalize_text(["A", "B"], "case").to_pylist() == ["a", "b"]
    with pytest.raises(BlendinError, match=r"'title'.*fix: .*case, space, unicode"):
        normalize_text(values, "case,title")
