import json
import math
from collections import Counter, defaultdict
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.errors import BlendinError
from blendin.estimators import (
    dankar_choice,
    distinct_classes_estimate,
    pitman_parameters,
    pitman_uniques,
    population_uniqueness,
    snb_probabilities,
    snb_uniques,
    spectrum,
    zayatz_uniques,
)
from blendin.risk import risk

rows_strategy = st.lists(
    st.tuples(st.sampled_from(["a", "b", "*"]), st.sampled_from(["1", "2", "3", "*"]),
              st.sampled_from(["flu", "gout", "cold"])),
    min_size=1, max_size=40)


def _brute(rows, threshold, fraction):
    kept = [r for r in rows if not (r[0] == "*" and r[1] == "*")]
    size = Counter((r[0], r[1]) for r in kept)
    values = defaultdict(set)
    for r in kept:
        values[(r[0], r[1])].add(r[2])
    n = len(kept)
    pros = [1 / size[(r[0], r[1])] for r in kept]
    jour = [fraction / size[(r[0], r[1])] for r in kept]
    homogeneous = [c for c in size if len(values[c]) == 1]
    return {
        "n": n, "suppressed": len(rows) - n, "classes": len(size),
        "pros": (max(pros), sum(pros) / n, sum(p > threshold for p in pros) / n),
        "jour": (max(jour), sum(jour) / n, sum(p > threshold for p in jour) / n),
        "marketer": sum(fraction for _ in size) / n,
        "uniques": sum(1 for c in size if size[c] == 1),
        "homogeneous": (len(homogeneous), sum(size[c] for c in homogeneous)),
    }


@settings(max_examples=80, deadline=None)
@given(rows_strategy, st.sampled_from([0.1, 0.2, 0.5, 1.0]), st.sampled_from([None, 0.5, 0.1]))
def test_risk_figures_match_brute_force(rows, threshold, fraction):
    if all(r[0] == "*" and r[1] == "*" for r in rows):
        rows = rows + [("a", "1", "flu")]
    df = pd.DataFrame(rows, columns=["x", "y", "dx"])
    report = risk(df, ["x", "y"], sensitive=["dx"], threshold=threshold,
                  sampling_fraction=fraction)
    want = _brute(rows, threshold, fraction or 1.0)
    assert (report.records, report.suppressed, report.classes) == (
        want["n"], want["suppressed"], want["classes"])
    got_pros = report.prosecutor
    assert (got_pros.highest, got_pros.average, got_pros.records_at_risk) == pytest.approx(
        want["pros"])
    got_jour = report.journalist
    assert (got_jour.highest, got_jour.average, got_jour.records_at_risk) == pytest.approx(
        want["jour"])
    assert report.marketer == pytest.approx(want["marketer"])
    assert report.sample_uniques == want["uniques"]
    h = report.homogeneity["dx"]
    assert (h.classes, h.records) == want["homogeneous"]
    assert h.share == pytest.approx(want["homogeneous"][1] / want["n"])


def test_qi_from_string_spec_and_lines():
    from blendin.hierarchy.builders import flat
    from blendin.spec import Spec

    df = pd.DataFrame({"sex": ["f", "f", "m"], "zip": ["1", "1", "2"], "dx": ["a", "b", "a"]})
    spec = Spec(quasi_identifiers={"sex": flat(), "zip": flat()}, sensitive=["dx"])
    a = risk(df, spec=spec)
    b = risk(df, "sex, zip", sensitive="dx")
    assert a.to_dict() == b.to_dict()
    text = "\n".join(a.lines())
    assert "prosecutor" in text and "homogeneous on dx: 1 classes, 1 records" in text


def test_suppressed_rows_are_not_at_risk():
    df = pd.DataFrame({"a": ["*", "*", "x", "x"], "b": ["*", "*", "1", "1"]})
    report = risk(df, ["a", "b"])
    assert report.suppressed == 2 and report.records == 2 and report.prosecutor.highest == 0.5


def test_bad_input():
    df = pd.DataFrame({"a": ["1"]})
    with pytest.raises(BlendinError, match="'zip'"):
        risk(df, ["a", "zip"])
    with pytest.raises(BlendinError, match="quasi-identifiers"):
        risk(df, [])
    with pytest.raises(BlendinError, match="threshold"):
        risk(df, ["a"], threshold=2)
    with pytest.raises(BlendinError, match="smaller than the table"):
        risk(pd.DataFrame({"a": list("abc")}), ["a"], population=2)
    with pytest.raises(BlendinError, match="one of"):
        risk(df, ["a"], population=10, sampling_fraction=0.1)
    with pytest.raises(BlendinError, match="every record is suppressed"):
        risk(pd.DataFrame({"a": ["*"]}), ["a"])


# -- population uniqueness ----------------------------------------------------------------


def test_zayatz_matches_exact_hypergeometric_arithmetic():
    # 3 classes of size 1, 2 of size 2, 1 of size 4: n = 11 drawn from N = 40
    sizes = np.array([1, 1, 1, 2, 2, 4])
    n, N = 11, 40
    j, f = spectrum(sizes)

    def p_one(size):  # chance that exactly one of `size` population records is drawn
        return Fraction(size * math.comb(N - size, n - 1), math.comb(N, n))

    total = sum(int(fj) * p_one(int(jj)) for jj, fj in zip(j, f))
    conditional = 3 * p_one(1) / total
    expected = 3 * conditional / Fraction(n, N)
    assert zayatz_uniques(j, f, n, N) == pytest.approx(float(expected), rel=1e-10)


def _pitman_loglik(theta, alpha, j, f, n):
    u = sum(f)
    value = sum(math.log(theta + i * alpha) for i in range(1, u))
    value -= sum(math.log(theta + i) for i in range(1, n))
    for size, count in zip(j, f):
        value += count * sum(math.log(i - alpha) for i in range(1, size))
    return value


def _zipf_sample(seed=1, population=100_000, fraction=0.05):
    rng = np.random.default_rng(seed)
    p = np.arange(1, population + 1) ** -1.3
    people = rng.choice(population, size=population, p=p / p.sum())
    sample = rng.choice(people, size=int(population * fraction), replace=False)
    sizes = np.bincount(sample)
    return sizes[sizes > 0], int((np.bincount(people) == 1).sum())


def test_pitman_parameters_maximize_the_likelihood():
    sizes, _ = _zipf_sample()
    j, f = spectrum(sizes)
    j, f = j.tolist(), f.tolist()
    n = int(sizes.sum())
    theta, alpha = pitman_parameters(np.array(j), np.array(f), n)
    assert 0 < alpha < 1
    best = _pitman_loglik(theta, alpha, j, f, n)
    for dt, da in ((1, 0), (-1, 0), (0, 1e-3), (0, -1e-3), (1, 1e-3), (-1, -1e-3)):
        assert _pitman_loglik(theta + dt * 1e-2 * theta, alpha + da, j, f, n) < best
    N = 2_000_000
    # exact: N (theta+alpha)_(N-1) / (theta+1)_(N-1), rising factorials through lgamma
    expected = N * math.exp(
        math.lgamma(theta + alpha + N - 1) - math.lgamma(theta + alpha)
        - math.lgamma(theta + N) + math.lgamma(theta + 1)
    )
    assert pitman_uniques(np.array(j), np.array(f), n, N) == pytest.approx(expected)


def test_snb_probabilities_match_summing_the_distribution():
    alpha, beta, q = 0.7, 0.3, 0.2
    p1 = p2 = 0.0
    for extra in range(0, 400):  # population class size F = 1 + NegBin(alpha, beta)
        weight = math.exp(math.lgamma(alpha + extra) - math.lgamma(alpha)
                          - math.lgamma(extra + 1)) * beta**alpha * (1 - beta) ** extra
        size = 1 + extra
        p1 += weight * size * q * (1 - q) ** (size - 1)
        p2 += weight * math.comb(size, 2) * q**2 * (1 - q) ** (size - 2)
    got1, got2 = snb_probabilities(np.array(alpha), np.array(beta), q)
    assert (float(got1), float(got2)) == pytest.approx((p1, p2), rel=1e-9)


def test_snb_solution_reproduces_the_observed_uniques_and_pairs():
    sizes, _ = _zipf_sample(fraction=0.2)
    j, f = spectrum(sizes)
    n, N = int(sizes.sum()), 100_000
    uniques = snb_uniques(j, f, n, N)
    assert 0 < uniques < N
    # the returned uniques come from (alpha, beta) solving both moment equations
    k = distinct_classes_estimate(j, f, n / N)
    c1, c2 = int(f[j == 1].sum()), int(f[j == 2].sum())
    grid_a = np.exp(np.linspace(-6, 4, 400))
    best = None
    for a in grid_a:  # for each alpha, beta follows from K beta^alpha = uniques
        b = (uniques / k) ** (1 / a)
        if not 0 < b < 1:
            continue
        p1, p2 = snb_probabilities(np.array(a), np.array(b), n / N)
        err = abs(k * float(p1) / c1 - 1) + abs(k * float(p2) / c2 - 1)
        best = err if best is None else min(best, err)
    assert best is not None and best < 0.02


def test_shlosser_haas_estimate():
    j, f = np.array([1, 2, 5]), np.array([10, 4, 2])
    assert distinct_classes_estimate(j, f, 1.0) == 16  # a full census: the classes seen
    q = 0.1
    f1 = 10
    top1 = sum(jj * q**2 * (1 - q**2) ** (jj - 1) * ff for jj, ff in zip(j, f))
    bottom1 = sum((1 - q) ** jj * ((1 + q) ** jj - 1) * ff for jj, ff in zip(j, f))
    top2 = sum((1 - q) ** jj * ff for jj, ff in zip(j, f))
    bottom2 = sum(jj * q * (1 - q) ** (jj - 1) * ff for jj, ff in zip(j, f))
    expected = 16 + f1 * top1 / bottom1 * (top2 / bottom2) ** 2
    assert distinct_classes_estimate(j, f, q) == pytest.approx(expected)
    assert distinct_classes_estimate(j, f, 0.01) > distinct_classes_estimate(j, f, 0.1) > 16


@pytest.mark.parametrize("fraction", [0.02, 0.05, 0.2])
def test_estimators_land_near_the_truth_on_a_simulated_population(fraction):
    sizes, truth = _zipf_sample(seed=3, fraction=fraction)
    estimate = population_uniqueness(sizes, 100_000)
    for name in ("zayatz", "pitman", "dankar"):
        assert abs(getattr(estimate, name) / truth - 1) < 0.5, name
    assert estimate.model == ("pitman" if fraction <= 0.1 else estimate.model)


def test_no_sample_uniques_means_no_population_uniques():
    estimate = population_uniqueness(np.array([2, 3, 5]), 1000)
    assert (estimate.zayatz, estimate.pitman, estimate.snb, estimate.dankar) == (0, 0, 0, 0)


@pytest.mark.parametrize("fraction,z,p,s,expected", [
    (0.05, 10.0, 12.0, 11.0, (12.0, "pitman")),
    (0.1, 10.0, math.nan, 11.0, (10.0, "zayatz")),
    (0.3, 10.0, 12.0, 9.0, (9.0, "snb")),
    (0.3, 10.0, 12.0, 11.0, (10.0, "zayatz")),
    (0.3, 10.0, 12.0, math.nan, (10.0, "zayatz")),
])
def test_dankar_rule(fraction, z, p, s, expected):
    assert dankar_choice(fraction, z, p, s) == expected


def test_risk_reports_population_estimates():
    sizes, _ = _zipf_sample(fraction=0.05)
    df = pd.DataFrame({"id": np.repeat(np.arange(len(sizes)), sizes).astype(str)})
    report = risk(df, ["id"], population=100_000)
    direct = population_uniqueness(sizes, 100_000)
    assert report.population.dankar == pytest.approx(direct.dankar)
    assert report.population.share == pytest.approx(direct.dankar / 100_000)
    text = "\n".join(report.lines())
    assert "population uniques, Dankar" in text and "population uniques, SNB" in text
    assert "(snb" not in text and "records above 0.2" in text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=60), st.floats(1.0, 200.0))
def test_estimators_never_fail_and_stay_in_range(sizes, scale):
    sizes = np.array(sizes)
    population = float(np.ceil(sizes.sum() * scale))
    estimate = population_uniqueness(sizes, population)
    for name in ("zayatz", "pitman", "snb", "dankar"):
        value = getattr(estimate, name)
        assert math.isnan(value) or 0 <= value <= population, name
    assert not math.isnan(estimate.dankar)


def test_json_has_no_nan(tmp_path):
    from click.testing import CliRunner

    from blendin.cli import main

    data = tmp_path / "d.csv"
    data.write_text("a\n" + "\n".join(str(i) for i in range(30)) + "\n")
    result = CliRunner().invoke(main, ["risk", str(data), "--qi", "a", "--population", "300",
                                       "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output, parse_constant=lambda c: pytest.fail(c))
    assert report["population"]["pitman"] is None  # all unique: no solution
    assert report["sample_uniques"] == 30 and report["prosecutor"]["highest"] == 1.0


def test_the_cli_reads_a_file_in_batches(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from blendin.cli import main
    from blendin.io import Source

    def whole(self):
        raise AssertionError("blendin risk holds no whole table")

    monkeypatch.setattr(Source, "read_all", whole)
    data = tmp_path / "d.csv"
    data.write_text("a;b\n" + "\n".join(f"{i % 3};x" for i in range(30)) + "\n")
    result = CliRunner().invoke(main, ["risk", str(data), "--qi", "a,b", "--delimiter", ";",
                                       "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["classes"] == 3
    # every figure the text shows: "classes 3 (smallest 10)" (the JSON had no smallest)
    assert json.loads(result.output)["min_class_size"] == 10
    text = CliRunner().invoke(main, ["risk", str(data), "--qi", "a,b", "--delimiter", ";"])
    assert "classes            3 (smallest 10)" in text.output


def test_the_cli_reads_a_file_in_the_specs_encoding(tmp_path):
    """risk took the spec's delimiter, not its encoding: a latin-1 file with encoding =
    "latin-1" in the spec failed, its fix saying to set what was set."""
    from click.testing import CliRunner

    from blendin.cli import main

    data = tmp_path / "l1.csv"
    data.write_bytes(b"city,sex\n" + "".join(
        f"{c},{'fm'[i % 2]}\n" for i, c in enumerate(["Zürich", "Genève"] * 6)).encode("latin-1"))
    spec = tmp_path / "s.toml"
    spec.write_text('[input]\nencoding = "latin-1"\n[quasi_identifiers]\ncity = { flat = true }\n'
                    'sex = { flat = true }\n[[privacy]]\nmodel = "k-anonymity"\nk = 2\n')
    result = CliRunner().invoke(main, ["risk", str(data), "--spec", str(spec)])
    assert result.exit_code == 0, result.output
    assert "classes            2 (smallest 6)" in result.output
    # and so does the library, as the CLI: it read the file as UTF-8 whatever the spec said
    from blendin.spec import Spec

    assert risk(str(data), spec=Spec.from_toml(spec)).to_dict() == json.loads(
        CliRunner().invoke(main, ["risk", str(data), "--spec", str(spec), "--json"]).output)


def test_the_library_labels_missing_values_as_the_spec_says(tmp_path):
    """With missing = "?" the CLI counts an empty cell and "?" as one value; the library,
    given the same spec, counted them apart."""
    from blendin.spec import Spec

    data = tmp_path / "m.csv"
    data.write_text("city,sex\n" + "".join(f"{c},f\n" for c in ["", "?"] * 3 + ["x"] * 6))
    spec = Spec.from_dict({"input": {"missing": "?"},
                           "quasi_identifiers": {"city": {"flat": True}, "sex": {"flat": True}},
                           "privacy": [{"model": "k-anonymity", "k": 2}]})
    assert risk(str(data), spec=spec).classes == 2
    assert risk(str(data), spec=spec, missing="").classes == 3


def test_a_share_neither_vanishes_nor_fills_in_rounding():
    """1 record of 5,001 alone in its class: its share at risk, counted again here, is
    above 0 and below 1, and no printed figure may read 0.0% or 100.0% for it (the
    records above the threshold read 0.0% beside a highest risk of 100.0%)."""
    from blendin.utility import utility

    df = pd.DataFrame({"q": ["a"] * 3000 + ["b"] * 2000 + ["c"]})
    report = risk(df, ["q"])
    sizes = df.groupby("q")["q"].transform("size")
    at_risk = float((1 / sizes > 0.2).mean())
    assert report.prosecutor.records_at_risk == pytest.approx(at_risk) and 0 < at_risk < 0.001
    text = "\n".join(report.lines())
    assert "sample uniques     1 (<0.1%)" in text
    assert f"{100 * 3 / 5001:.1f}" == "0.1"  # the average: 3 classes over 5,001 records
    assert "prosecutor     100.0%     0.1%     <0.1%" in text, text
    # the other way round: all but one of 5,001 records blend in
    row = {r["key"]: r for r in _report_rows(report)}
    assert row["prosecutor-at-risk"]["before"] == "<0.1%"
    spec_df = pd.DataFrame({"x": ["1"] * 5000 + ["2"]})
    import blendin as bl

    spec = bl.Spec(quasi_identifiers={"x": bl.flat()}, models=[bl.KAnonymity(2)],
                   max_suppression=0.01)
    released = bl.anonymize(spec_df, spec).data
    assert len(released) == 5000
    assert "released 5,000 (>99.9%)" in str(utility(spec_df, released, spec))


def _report_rows(report):
    from blendin.report.html import _risk_rows

    return _risk_rows(report, report, ())


def test_with_a_person_key_the_lines_count_people():
    """With a person key the shares are of people: the homogeneous line's count, counted
    again from the people here, is people (its share of the people, not of the records);
    it read 'records'."""
    df = pd.DataFrame({"pid": [1, 1, 1, 2, 3, 3, 4, 4],
                       "q": ["a", "a", "a", "a", "b", "b", "b", "b"],
                       "dx": ["x", "x", "x", "x", "y", "z", "y", "z"]})
    people = df.groupby("pid").agg(q=("q", "first"),
                                   dx=("dx", lambda s: tuple(sorted(set(s)))))
    same = people.groupby("q")["dx"].transform("nunique") == 1
    assert int(same.sum()) == 4 and len(df) == 8  # every person, half the records
    report = risk(df, ["q"], sensitive=["dx"], person="pid")
    assert report.homogeneity["dx"].records == int(same.sum())
    text = "\n".join(report.lines())
    assert "homogeneous on dx: 2 classes, 4 people (100.0%)" in text
    assert "people above 0.2" in text and "records above" not in text


def test_suppressed_records_are_named_in_text_and_the_smallest_class_in_json():
    """A release with its suppressed records kept (all *): the text says they were left
    out (it did so only for people), and the JSON gives the smallest class the text shows."""
    data = pd.DataFrame({"a": ["x"] * 4 + ["y"] * 3 + ["*"] * 2, "b": ["1"] * 7 + ["*"] * 2})
    report = risk(data, ["a", "b"])
    assert report.lines()[0] == "records            7 (+2 suppressed, not at risk)"
    assert "(smallest 3)" in report.lines()[2]
    assert report.to_dict()["min_class_size"] == 3
