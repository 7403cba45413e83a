"""The report's sections on the demo's tables: the threshold tied to k, hierarchies in words,
the linking attack with an external table, the population risk, a readable histogram; and
the CLI flags that feed them (--external, --on, --population, --original-row NAME,
--index-base)."""

import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from test_report import Page, class_sizes, count, pct

from blendin.anonymize import anonymize
from blendin.cli import main
from blendin.datasets import linking_tables
from blendin.demo import JOIN, demo_spec
from blendin.report import plots, render_report
from blendin.report.words import describe_rule
from blendin.risk import risk
from blendin.spec import Spec

POPULATION = 7200


@pytest.fixture(scope="module")
def tables():
    return linking_tables(600, 1800, 3)


@pytest.fixture(scope="module")
def result(tables):
    return anonymize(tables[0], demo_spec())


@pytest.fixture(scope="module")
def page(tables, result):
    hospital, voters = tables
    return Page(render_report(result, original=hospital, external=voters, on=list(JOIN),
                              population=POPULATION))


def covers_plain(label: str, value: str) -> bool:
    """Does a released label of the demo's hierarchies cover a raw value? By hand: *,
    masks (021**), dates by month (1961-07), year (1961) or decade (1960-1969)."""
    if label in ("*", value):
        return True
    if label.endswith("*"):
        return len(label) == len(value) and value.startswith(label.rstrip("*"))
    if len(label) == 9 and label[4] == "-" and label[:4].isdigit() and label[5:].isdigit():
        return int(label[:4]) <= int(value[:4]) <= int(label[5:])
    return value.startswith(label + "-") if len(label) in (4, 7) else False


def matches_per_person(records: pd.DataFrame, people: pd.DataFrame) -> list[int]:
    """For each person, the records whose labels cover their values: plain Python over the
    distinct record tuples (few) and the people."""
    tuples = Counter(zip(*(records[c].astype(str) for c in JOIN)))
    return [sum(n for labels, n in tuples.items()
                if all(covers_plain(label, value) for label, value in zip(labels, person)))
            for person in zip(*(people[c].astype(str) for c in JOIN))]


def counted(m: np.ndarray, mask: np.ndarray) -> str:
    return f"{count(mask.sum())} ({pct(mask.sum() / len(m))})"


def test_sections_with_an_external_table(page):
    assert not page.errors
    assert "attack" in page.ids and page.tags["h2"] == 8  # keeps: the input is given
    assert "6,000" not in page.ids["attack"] and "1,800 identified people" in page.ids["attack"]


def test_attack_before_counted_by_pandas(page, tables):
    hospital, voters = tables
    joined = voters.merge(hospital[list(JOIN)].assign(one=1), on=list(JOIN), how="left")
    m = joined.groupby("name")["one"].sum().to_numpy()
    assert len(m) == len(voters)  # names are unique in the voter list
    assert page.ids["attack-before-reidentified"] == counted(m, m == 1)
    assert page.ids["attack-before-no-match"] == counted(m, m == 0)
    assert page.ids["attack-before-hidden"] == counted(m, m >= 5)


def test_attack_after_counted_label_by_label(page, tables, result):
    _, voters = tables
    m = np.array(matches_per_person(result.data, voters))
    assert page.ids["attack-after-reidentified"] == counted(m, m == 1)
    assert page.ids["attack-after-hidden"] == counted(m, m >= 5)
    assert page.ids["attack-after-no-match"] == counted(m, m == 0)
    assert page.ids["attack-after-ambiguous"] == counted(m, (m >= 2) & (m < 5))


def test_no_attack_section_without_an_external_table(result, tables):
    page = Page(render_report(result, original=tables[0]))
    assert "attack" not in page.ids and page.tags["h2"] == 7


def test_population_risk(page, tables, result):
    hospital, _ = tables
    qis = list(result.spec.quasi_identifiers)
    for side, frame in (("before", hospital), ("after", result.data)):
        sizes = class_sizes(frame, qis)
        fraction = sum(sizes) / POPULATION
        # journalist: a class of f records stands for f / fraction people
        assert page.ids[f"{side}-journalist-highest"] == pct(fraction / min(sizes)), side
        estimate = risk(frame, qis, population=POPULATION).population
        if sizes.count(1):
            assert page.ids[f"{side}-population-uniques"].startswith(
                f"{estimate.dankar:,.0f} ({pct(estimate.dankar / POPULATION)})")
        else:
            assert page.ids[f"{side}-population-uniques"] == "0 (no sample uniques)"
    assert "7,200 people" in page.ids["risk"]


def test_threshold_is_one_over_k_and_explained(page, tables, result):
    hospital, _ = tables
    assert "more than 0.2: 1/k for the spec's k = 5" in page.ids["threshold"]
    sizes = class_sizes(hospital, list(result.spec.quasi_identifiers))
    assert page.ids["before-prosecutor-at-risk"] == pct(sum(f for f in sizes if f < 5)
                                                        / len(hospital))
    assert page.ids["after-prosecutor-at-risk"] == "0.0%"


def test_threshold_follows_k_and_can_be_given(tables):
    hospital, _ = tables
    spec = demo_spec(k=3)
    result = anonymize(hospital, spec)
    page = Page(render_report(result, original=hospital))
    assert "1/k for the spec's k = 3" in page.ids["threshold"]
    sizes = class_sizes(hospital, list(spec.quasi_identifiers))
    assert page.ids["before-prosecutor-at-risk"] == pct(sum(f for f in sizes if f < 3)
                                                        / len(hospital))
    given = Page(render_report(result, original=hospital, threshold=0.5))
    assert "more than 0.5: as given" in given.ids["threshold"]
    assert given.ids["before-prosecutor-at-risk"] == pct(sum(f for f in sizes if f < 2)
                                                         / len(hospital))


def test_hierarchies_in_words(page, result):
    rows = page.ids["quasi-identifiers"]
    assert "masked from the right" in rows
    assert "Dates by month, then year, then decade, then *" in rows
    assert "The value as it is, or * (nothing in between)" in rows
    assert "Categories grouped: Has married (Married, Divorced, Widowed); Never married" in rows
    assert "masking(" not in rows and "dates(" not in rows and "tree(" not in rows
    h = result.hierarchies["zip"]
    assert " → ".join(f"{len(labels):,}" for labels in h.labels) in rows


def test_the_example_path_starts_at_a_released_value(page, result):
    """No value finer than the release appears: each path starts at a released label."""
    for q in result.levels:
        released = set(result.data[q].astype(str))
        h = result.hierarchies[q]
        top = str(h.labels[-1][0])
        if len(released) == 1 and released == {top}:
            continue
        first = result.data[q].astype(str).value_counts().index[0]
        assert f"Released value, then coarser: {first} →" in page.ids["quasi-identifiers"]
    for value in result.hierarchies["zip"].ground:
        if value not in set(result.data["zip"]):
            assert value not in page.ids["quasi-identifiers"]


def test_a_lost_column_is_said_so(result, page):
    lost = [q for q in result.levels if result.data[q].nunique() == 1]
    assert lost  # the demo's loss-optimal release wipes the birth date
    assert page.ids["quasi-identifiers"].count("the column is lost") == len(lost)


@pytest.mark.parametrize("builder, words", [
    ({"intervals": [5, 10], "bottom": 0, "top": 90},
     "intervals 5 wide, then 10 wide, then *; values below 0 shown as <0; values from 90 on "
     "shown as >=90"),
    ({"masking": 5}, "codes of 5 characters masked from the right, one character per level "
                     "(*), up to *"),
    ({"dates": ["quarter", "year"]}, "dates by quarter, then year, then *"),
    ({"tree": {"a": ["x", "y"], "b": ["z"], "c": ["w"], "d": ["v"]}},
     "categories grouped: a (x, y); b (z); c (w) and 1 more; then *"),
])
def test_rules_from_the_spec_keys(builder, words):
    spec = Spec.from_dict({"quasi_identifiers": {"q": builder},
                           "privacy": [{"model": "k-anonymity", "k": 2}]})
    assert describe_rule(spec.quasi_identifiers["q"]) == words


# -- the histogram ------------------------------------------------------------------------


def test_histogram_of_a_mondrian_release_is_readable():
    before = np.ones(2000, dtype=int)  # every input record alone in its class
    rng = np.random.default_rng(0)
    after = rng.integers(5, 10, 300)
    ax = plots.class_sizes_figure(after, before, k=5).axes[0]
    assert ax.get_yscale() == "log"  # 2000 singletons and ~60 groups per size both show
    bottom = ax.get_ylim()[0]
    release_bars = [p for p in ax.patches if p.get_label() != "input"
                    and p.get_height() > 0 and p.get_facecolor()[:3] != (0, 0, 0)]
    assert release_bars and all(p.get_y() + p.get_height() > 2 * bottom for p in release_bars)
    k_line = [line for line in ax.get_lines() if line.get_label() == "k = 5"][0]
    assert k_line.get_xdata()[0] == 4.5  # at the bin edge: the bar of size 5 is right of it


def test_histogram_of_a_small_table_has_whole_number_ticks():
    ax = plots.class_sizes_figure(np.array([3, 3, 4]), np.array([1, 1, 2, 2, 2]), k=3).axes[0]
    assert ax.get_yscale() == "linear"
    ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    xticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert all(float(t).is_integer() for t in xticks)


# -- the CLI ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory, tables):
    folder = tmp_path_factory.mktemp("demo")
    hospital, voters = tables
    hospital.to_csv(folder / "hospital.csv", index=False)
    voters.to_csv(folder / "voters.csv", index=False)
    (folder / "spec.toml").write_text(demo_spec().to_toml())
    return folder


def run(folder, *extra):
    return CliRunner().invoke(main, ["anonymize", str(folder / "hospital.csv"), "--spec",
                                     str(folder / "spec.toml"), "-o",
                                     str(folder / "release.csv"), "--quiet", "--force", *extra])


def test_cli_report_with_external_and_population(files):
    out = run(files, "--report", str(files / "report.html"), "--external",
              str(files / "voters.csv"), "--population", str(POPULATION))
    assert out.exit_code == 0, out.output
    page = Page((files / "report.html").read_text(encoding="utf-8"))
    assert "attack-after-reidentified" in page.ids and "after-population-uniques" in page.ids
    assert "zip , dob , sex" in " ".join(page.ids["attack"].split())


def test_cli_report_joins_on_the_columns_named(files):
    out = run(files, "--report", str(files / "report.html"), "--external",
              str(files / "voters.csv"), "--on", "zip,sex")
    assert out.exit_code == 0, out.output
    page = Page((files / "report.html").read_text(encoding="utf-8"))
    assert "on zip , sex ," in " ".join(page.ids["attack"].split())


def test_cli_external_needs_a_report(files):
    out = run(files, "--external", str(files / "voters.csv"))
    assert out.exit_code == 2
    assert "--external only change the report" in out.output and "--report" in out.output
    assert not (files / "never.csv").exists()


def test_cli_original_row_takes_a_name_and_the_index_base(files, tables):
    hospital, _ = tables
    out = run(files, "--original-row", "source_row", "--group-column", "class",
              "--index-base", "0", "--json")
    assert out.exit_code == 0, out.output
    released = pd.read_csv(files / "release.csv", dtype={"dob": str, "zip": str})
    assert {"source_row", "class"} <= set(released.columns)
    source = hospital.iloc[released["source_row"].to_numpy()]  # 0-based positions
    assert (source["diagnosis"].to_numpy() == released["diagnosis"].to_numpy()).all()
    assert released["class"].min() == 0
    assert released["class"].nunique() == released.groupby(
        list(demo_spec().quasi_identifiers)).ngroups
    assert json.loads(out.output)["minimal"] == []


def test_cli_index_base_one_by_default_and_refuses_two(files):
    out = run(files, "--original-row", "--group-column")
    assert out.exit_code == 0, out.output
    released = pd.read_csv(files / "release.csv")
    assert released["original_row"].min() >= 1 and released["group"].min() == 1
    assert run(files, "--index-base", "2").exit_code == 2


def test_cli_json_lists_the_k_minimal_nodes(files):
    out = run(files, "--algorithm", "binary", "--json")
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["minimal"] and all(set(node) == set(demo_spec().quasi_identifiers)
                                      for node in payload["minimal"])
    assert payload["levels"] in payload["minimal"]


def test_attack_on_years_in_intervals():
    """Birth years released in intervals (1930-1934) are numbers, not a span of dates: the
    report's linking attack, and blendin attack with the spec, read the external years as
    numbers (they failed: 'column birth_year should hold dates')."""
    from blendin.attack import attack
    from blendin.hierarchy.flat import flat
    from blendin.hierarchy.intervals import intervals
    from blendin.models import KAnonymity

    years = [1930 + i % 40 for i in range(200)]
    data = pd.DataFrame({"sex": ["F", "M"] * 100, "birth_year": years})
    people = pd.DataFrame({"sex": ["F", "M"] * 100, "birth_year": years})
    spec = Spec(quasi_identifiers={"sex": flat(), "birth_year": intervals(5, 10)},
                models=[KAnonymity(8)], max_suppression=0.0)
    result = anonymize(data, spec)
    assert result.data["birth_year"].str.fullmatch(r"\d{4}-\d{4}").all()
    page = Page(render_report(result, original=data, external=people))
    assert not page.errors and page.ids["attack-after-reidentified"] == "0 (0.0%)"
    assert attack(result.data, people, spec=spec).reidentified == 0


def test_cli_report_on_people_measures_the_release_in_people(tmp_path):
    """With a person key the CLI's report measures the release in people, as the checker
    counted it: it measured the written rows (a class of 2 people in 4 rows read 25%, not
    50%), and its smallest class contradicted the one above it."""
    rows = [(f"p{p}", "F" if p % 2 else "M", str(1950 + p // 4), str(v))
            for p in range(40) for v in range(1 + (p % 3 == 0) * 3)]
    pd.DataFrame(rows, columns=["pid", "sex", "year", "visit"]).to_csv(
        tmp_path / "visits.csv", index=False)
    (tmp_path / "spec.toml").write_text(
        '[attributes]\nperson = "pid"\ninsensitive = ["visit"]\n[quasi_identifiers]\n'
        'sex = { flat = true }\nyear = { flat = true }\n[[privacy]]\nmodel = "k-anonymity"\n'
        'k = 2\n[anonymization]\nmax_suppression = 0\n')
    out = CliRunner().invoke(main, [
        "anonymize", str(tmp_path / "visits.csv"), "--spec", str(tmp_path / "spec.toml"),
        "-o", str(tmp_path / "release.csv"), "--report", str(tmp_path / "report.html"),
        "--json"])
    assert out.exit_code == 0, out.output
    figures = json.loads(out.output)
    assert figures["levels"] == {"sex": 0, "year": 0} and figures["min_class_size"] == 2
    page = Page((tmp_path / "report.html").read_text(encoding="utf-8"))
    assert page.ids["after-risk-records"] == "40"  # people, not the 82 rows
    assert page.ids["after-risk-smallest"] == "2"
    assert page.ids["after-prosecutor-highest"] == "50.0%"
    assert len(pd.read_csv(tmp_path / "release.csv")) == len(rows)


def test_a_report_on_people_says_people_and_draws_no_absent_k_line():
    """Where classes count people the models' promises and the class-size plot say people
    (they said 'Every record shares ... with at least 3 other records'); a spec without
    k-anonymity draws no k line, and its caption names none."""
    from blendin.hierarchy.flat import flat
    from blendin.models import AverageRisk, KAnonymity

    rows = [(f"p{p}", "F" if p % 2 else "M", str(1950 + p // 8))
            for p in range(80) for _ in range(1 + p % 3)]
    visits = pd.DataFrame(rows, columns=["pid", "sex", "year"])
    qis = {"sex": flat(), "year": flat()}
    spec = Spec(quasi_identifiers=qis, models=[KAnonymity(4)], person="pid",
                max_suppression=0.0)
    result = anonymize(visits, spec)
    page = Page(render_report(result, original=visits))
    assert "at least 3 other people (classes of at least 4 people)" in page.ids["models"]
    assert "records" not in page.ids["models"]
    assert "each size in people" in page.ids["plot-sizes"]
    assert "k line" in page.ids["plot-sizes"]
    plain = Spec(quasi_identifiers=qis, models=[AverageRisk(0.5)], max_suppression=0.0)
    page = Page(render_report(anonymize(visits.drop(columns="pid"), plain),
                              original=visits.drop(columns="pid")))
    assert "k line" not in page.ids["plot-sizes"]
    assert "each size in records" in page.ids["plot-sizes"]


def test_k_map_states_the_class_size_it_requires():
    """k-map's figure is the smallest class, compared with the class size that stands for k
    people: the report showed 'smallest class 8' against 'at least 10 people' with nothing
    under Required."""
    from blendin.hierarchy.flat import flat
    from blendin.models import KMap

    data = pd.DataFrame({"sex": ["F", "M"] * 15, "band": ["a", "b", "c"] * 10})
    spec = Spec(quasi_identifiers={"sex": flat(), "band": flat()},
                models=[KMap(5, population=3000)], max_suppression=0.0)
    result = anonymize(data, spec)
    row = " ".join(Page(render_report(result, original=data)).ids["model-0"].split())
    assert "smallest class 5 ≥ 3 pass" in row  # 30 records of 3,000: classes of 3 suffice


def test_the_release_report_shows_no_input_median_or_quartile():
    """The input's median and quartiles of a numeric quasi-identifier are ages of records,
    which the release shows only as intervals: the report (for those who get the release)
    gives the release's, and the input's mean only."""
    from blendin.hierarchy.intervals import intervals
    from blendin.models import KAnonymity

    ages = [21, 23, 26, 28, 33, 41, 44, 47, 52, 58]
    data = pd.DataFrame({"age": [str(a) for a in ages]})
    spec = Spec(quasi_identifiers={"age": intervals(10, 20)}, models=[KAnonymity(5)],
                max_suppression=0.0)
    result = anonymize(data, spec)
    assert set(result.data["age"]) == {"20-39", "40-59"}
    text = " ".join(Page(render_report(result, original=data)).ids["keeps"].split())
    assert "age: mean 37.3 → " in text and "; in the release median 39.5," in text
    median, q1, q3 = np.percentile(ages, [50, 25, 75])  # 37, 26.5, 46.25
    assert not {f"{v:g}" for v in (median, q1, q3)} & set(text.replace("–", " ").split())


def test_a_release_at_the_top_of_every_hierarchy_is_measured():
    """Every QI at its top: every record shows * and is released (none suppressed), one
    class of all of them; the report showed '–' for every figure of the release, as if
    every record had been suppressed, and left out its plots."""
    from blendin.hierarchy.flat import flat
    from blendin.models import KAnonymity

    data = pd.DataFrame({"sex": ["F", "M", "M", "F", "M", "F"], "ward": list("abcabd")})
    spec = Spec(quasi_identifiers={"sex": flat(), "ward": flat()}, models=[KAnonymity(6)],
                max_suppression=0.0)
    result = anonymize(data, spec)
    assert result.levels == {"sex": 1, "ward": 1} and result.suppressed == 0
    page = Page(render_report(result, original=data))
    assert page.ids["after-risk-records"] == "6" and page.ids["after-risk-classes"] == "1"
    assert page.ids["after-prosecutor-highest"] == pct(1 / 6)
    assert "plot-sizes" in page.ids and "plot-risk" in page.ids


def test_an_original_row_column_is_warned_of_where_the_release_shows():
    """A release with --original-row passes the checker, yet links every record back to
    its source row: the summary, the JSON and the report say so (the report's banner said
    only 'Verified', and the column stood among the columns released unchanged)."""
    from blendin.hierarchy.flat import flat
    from blendin.models import KAnonymity

    data = pd.DataFrame({"sex": ["F", "M"] * 5})
    spec = Spec(quasi_identifiers={"sex": flat()}, models=[KAnonymity(2)],
                max_suppression=0.0)
    result = anonymize(data, spec, original_row="row")
    assert any("'row' holds each record's source row number" in w for w in result.warnings)
    assert result.to_dict()["warnings"] == result.warnings
    page = Page(render_report(result, original=data))
    assert "link every released record back to its person" in page.raw
    assert not anonymize(data, spec).warnings


def test_the_risk_table_of_people_counts_people_in_its_words():
    """Where input and release are measured in people the risk section's labels and notes
    say people (they said 'Records above the threshold', 'records alone in their class',
    'classes ... records' beside figures that count people)."""
    from blendin.hierarchy.flat import flat
    from blendin.models import KAnonymity

    rows = [(f"p{p}", "F" if p % 2 else "M", str(1950 + p // 8), "xy"[p % 2 and p % 3 > 0])
            for p in range(80) for _ in range(1 + p % 3)]
    visits = pd.DataFrame(rows, columns=["pid", "sex", "year", "dx"])
    spec = Spec(quasi_identifiers={"sex": flat(), "year": flat()}, models=[KAnonymity(4)],
                person="pid", sensitive=["dx"], max_suppression=0.0)
    result = anonymize(visits, spec)
    page = Page(render_report(result, original=visits))
    text = " ".join(page.ids["risk"].split())
    assert "People above the threshold (prosecutor)" in text
    assert "fewer than k = 4 people" in text and "people alone in their class" in text
    assert "Records" not in text and " records" not in text.replace("the records", "")
