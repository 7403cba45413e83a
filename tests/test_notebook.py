"""Short representations (repr, notebook HTML) and the summary's notes: verdict first,
a few lines, never the data or the hierarchies."""

import html
import re
import tomllib

import pandas as pd
import pytest

import blendin as bl
from blendin.datasets import linking_tables
from blendin.demo import JOIN, QUASI_IDENTIFIERS, demo_spec

LONGEST_REPR = 1200
LONGEST_HTML = 5000


@pytest.fixture(scope="module")
def tables():
    hospital, voters = linking_tables(600, 1800, 3)
    return hospital, voters


@pytest.fixture(scope="module")
def result(tables):
    return bl.anonymize(tables[0], demo_spec())


def first_line(text: str) -> str:
    return text.splitlines()[0]


def html_verdict_first(page: str, verdict: str) -> None:
    assert html.escape(verdict) in page
    assert page.index(html.escape(verdict)) < page.index("<table")
    assert len(page) < LONGEST_HTML


def test_result_repr_is_short_and_starts_with_the_verdict(result):
    text = repr(result)
    assert len(text) < LONGEST_REPR
    assert first_line(text) == "Result: verified: every privacy model holds on the release"
    assert "Hierarchy" not in text and "array(" not in text and "DataFrame" not in text
    released = result.records - result.suppressed
    assert f"{result.records:,} in, {released:,} released" in text
    levels = ", ".join(f"{q} {v}/{result.hierarchies[q].height - 1}"
                       for q, v in result.levels.items())
    assert levels in text
    assert f"smallest {int(result.data.groupby(list(QUASI_IDENTIFIERS)).size().min())}" in text


def test_result_html_is_a_small_table_verdict_first(result):
    page = result._repr_html_()
    html_verdict_first(page, "Result: verified: every privacy model holds on the release")
    assert page.count("<tr>") < 30
    assert "k-anonymity" in page


def test_check_report_repr(result):
    report = bl.check(result.data, result.spec)
    text = repr(report)
    assert len(text) < LONGEST_REPR
    assert first_line(text) == "CheckReport: PASSED: all 2 privacy model(s) hold"
    html_verdict_first(report._repr_html_(), "PASSED: all 2 privacy model(s) hold")


def test_failed_check_says_so_first(tables):
    report = bl.check(tables[0].drop(columns=["name", "ssn"]), demo_spec())
    assert first_line(repr(report)).startswith("CheckReport: FAILED: 2 of 2")
    sizes = tables[0].groupby(list(QUASI_IDENTIFIERS)).size()
    assert f"{int(sizes[sizes < 5].sum()):,} records in" in repr(report)
    assert "#9b2618" in report._repr_html_()  # shown in red


def test_risk_report_repr(tables):
    report = bl.risk(tables[0], list(QUASI_IDENTIFIERS), sensitive=["diagnosis"])
    text = repr(report)
    assert len(text) < LONGEST_REPR
    sizes = tables[0].groupby(list(QUASI_IDENTIFIERS)).size()
    highest = 100 / sizes.min()
    at_risk = 100 * sizes[1 / sizes > 0.2].sum() / sizes.sum()
    assert first_line(text) == (f"RiskReport: highest risk {highest:.1f}% (a class of "
                                f"{sizes.min()}), {at_risk:.1f}% of records above 0.2")
    assert "sizes" not in text
    html_verdict_first(report._repr_html_(), first_line(text).split(": ", 1)[1])


def test_attack_report_repr(tables):
    hospital, voters = tables
    report = bl.attack(hospital.drop(columns=["name", "ssn"]), voters, list(JOIN))
    text = repr(report)
    assert len(text) < LONGEST_REPR
    per_person = voters.merge(hospital[list(JOIN)].assign(one=1), on=list(JOIN), how="left")
    matches = per_person.groupby("name")["one"].sum()
    assert first_line(text) == (f"AttackReport: {int((matches == 1).sum()):,} of "
                                f"{len(voters):,} people re-identified")
    assert "matches=" not in text
    html_verdict_first(report._repr_html_(), first_line(text).split(": ", 1)[1])


def test_utility_report_repr_shows_no_value_of_the_input(tables, result):
    """Its repr was the dataclass's: 40 kB holding every input value's count (the birth
    dates, the ZIP codes), where the README promises a few lines, never the data."""
    report = bl.utility(tables[0], result.data, result.spec)
    text = repr(report)
    released = result.records - result.suppressed
    assert first_line(text) == (f"UtilityReport: {released:,} of {result.records:,} records "
                                f"released ({100 * released / result.records:.1f}%)")
    assert len(text) < LONGEST_REPR
    for column in ("dob", "zip"):
        shown = set(result.data[column])
        hidden = set(tables[0][column]) - shown
        assert not [v for v in hidden if v in text], column
    page = report._repr_html_()
    html_verdict_first(page, first_line(text).removeprefix("UtilityReport: "))
    assert not [v for v in set(tables[0]["dob"]) if v in page]


def test_html_escapes_names():
    from blendin.summaries import Summary

    page = Summary("X", "<b>", None, [("<i>", "&")]).html()
    assert "<b>" not in page and "&lt;b&gt;" in page and "&amp;" in page


def test_binary_search_lists_its_k_minimal_nodes(tables):
    result = bl.anonymize(tables[0], demo_spec(), algorithm="binary")
    minimal = result.solution.minimal
    assert len(minimal) >= 1
    named = [dict(zip(QUASI_IDENTIFIERS, node)) for node in minimal]
    assert result.to_dict()["minimal"] == named
    summary = result.summary()
    assert f"k-minimal nodes at the lowest feasible height ({len(minimal)}" in summary
    for node in named:
        assert "  " + ", ".join(f"{q} {v}" for q, v in node.items()) in summary
    # every k-minimal node is at the same height, and the chosen one is among them
    assert len({sum(node) for node in minimal}) == 1
    assert tuple(result.levels.values()) in set(map(tuple, minimal))


def test_other_searches_list_no_minimal_nodes(result):
    assert result.to_dict()["minimal"] == []
    assert "k-minimal" not in result.summary()


def test_a_column_with_one_value_left_is_named_with_the_way_out():
    df = pd.DataFrame({"a": [str(i) for i in range(12)], "b": ["x", "y"] * 6})
    a = bl.Hierarchy.from_rows([[str(i), str(i // 6), "*"] for i in range(12)])
    b = bl.Hierarchy.from_rows([["x", "*"], ["y", "*"]])
    spec = bl.Spec(quasi_identifiers={"a": a, "b": b}, models=[bl.KAnonymity(12)])
    result = bl.anonymize(df, spec)
    assert result.levels == {"a": 2, "b": 1}
    assert set(result.data["a"]) == {"*"} and set(result.data["b"]) == {"*"}
    assert result.to_dict()["fully_generalized"] == ["a", "b"]
    note = result.summary().splitlines()[-1]
    assert note.startswith("note: a, b ended where every record shows the same value")
    assert "weights = { a = 5, b = 5 }" in note and "--algorithm mondrian" in note
    spaced = bl.anonymize(df.rename(columns={"a": "Age (years)"}), bl.Spec(
        quasi_identifiers={"Age (years)": a, "b": b}, models=[bl.KAnonymity(12)]))
    weights = re.search(r"weights = \{[^}]*\}", spaced.summary().splitlines()[-1])[0]
    assert tomllib.loads(weights) == {"weights": {"Age (years)": 5, "b": 5}}  # TOML, as told
    # a re-applied solution keeps its levels: the way out is a new run, not Mondrian
    again = bl.apply_solution(df, result).summary().splitlines()[-1]
    assert "a saved solution keeps its levels" in again and "mondrian" not in again
    # a heuristic stopped by its checks, not its time, says budget without naming time only
    stopped = bl.anonymize(df, spec, algorithm="heuristic", max_checks=1).summary()
    assert "proven optimal: no (the best node found within its budget of time and checks)" \
        in stopped


def test_a_column_kept_is_not_named(result):
    kept = [q for q in result.levels if result.data[q].nunique() > 1]
    lost = result.to_dict()["fully_generalized"]
    assert not set(kept) & set(lost)
    for q in lost:
        assert result.data[q].nunique() == 1
    if not lost:
        assert not re.search("the same value", result.summary())
    else:
        assert f"note: {', '.join(lost)} ended where" in result.summary()


def test_mondrian_and_reapplied_results_have_short_reprs(tables, result):
    mondrian = bl.anonymize(tables[0], demo_spec(), algorithm="mondrian")
    text = repr(mondrian)
    assert len(text) < LONGEST_REPR and first_line(text).startswith("Result: verified")
    assert "  algorithm   mondrian, " in text and "levels" not in text
    again = bl.apply_solution(tables[0], result)
    text = repr(again)
    assert len(text) < LONGEST_REPR and "saved solution re-applied" in text
    html_verdict_first(again._repr_html_(), "verified: every privacy model holds")
