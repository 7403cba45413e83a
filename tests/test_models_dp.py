"""Differential privacy by SafePub: the derived parameters against the paper's formulas
(computed here with scipy), reproducibility, the sampling rate, the exponential mechanism,
the release and its check, errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy.stats import binom

import blendin as bl
from blendin.check import check
from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy
from blendin.models import (
    DifferentialPrivacy,
    KAnonymity,
    model_from_toml,
    safepub_beta,
    safepub_delta,
    safepub_k,
)
from blendin.models.dp import exponential_choice, loss_score, sampled


def paper_delta(k: int, epsilon: float) -> float:
    """d(k) of Bild et al. (2018), Theorem 1: max over n >= n_m of the binomial tail,
    searched until the Chernoff bound c_n is below the maximum found."""
    beta = 1 - math.exp(-epsilon)
    gamma = (math.exp(epsilon) - 1 + beta) / math.exp(epsilon)
    n = math.ceil(k / gamma - 1)
    best = 0.0
    while True:
        best = max(best, binom.sf(math.floor(gamma * n), n, beta))  # P(X > floor(gamma n))
        if best > math.exp(-n * (gamma * math.log(gamma / beta) - (gamma - beta))):
            return best
        n += 1


@pytest.mark.parametrize(("epsilon", "delta"), [(2.0, 1e-6), (1.9, 1e-6), (1.0, 1e-5),
                                                (0.5, 1e-4), (3.0, 1e-8)])
def test_derived_parameters_follow_the_paper(epsilon, delta):
    assert safepub_beta(epsilon) == pytest.approx(1 - math.exp(-epsilon), rel=1e-15)
    k = safepub_k(epsilon, delta)
    # k - 1 is the smallest k with d(k) < delta (ARX returns one more)
    assert paper_delta(k - 1, epsilon) < delta <= paper_delta(k - 2, epsilon)
    for j in (k - 2, k - 1, k):
        assert safepub_delta(j, epsilon) == pytest.approx(paper_delta(j, epsilon), rel=1e-6)


def test_arx_figures():
    # ArxBench's dp: epsilon 2, delta 1e-6: ARX's smallest released class is 132
    model = DifferentialPrivacy(2.0, 1e-6)
    assert model.k == 132 and model.beta == pytest.approx(0.8646647167633873)
    # dpdd spends 0.1 of epsilon on the search: 5%
    assert DifferentialPrivacy(2.0, 1e-6, 0.05).k == safepub_k(1.9, 1e-6) == 119


def test_sampling_rate_over_many_seeds():
    table = pa.table({"x": np.arange(2000)})
    model_rates = []
    for seed in range(100):
        model = DifferentialPrivacy(1.0, 1e-5, seed=seed)
        kept = sum(t.num_rows for t in sampled(table.to_batches(max_chunksize=300), model))
        model_rates.append(kept / 2000)
    beta = safepub_beta(1.0)
    spread = math.sqrt(beta * (1 - beta) / 2000)
    assert abs(np.mean(model_rates) - beta) < 4 * spread / math.sqrt(100)
    assert np.std(model_rates) == pytest.approx(spread, rel=0.25)


def test_sampling_is_the_same_in_any_chunking():
    table = pa.table({"x": np.arange(1000)})
    model = DifferentialPrivacy(1.0, 1e-5, seed=7)
    one = pa.concat_tables(sampled([table], model))
    many = pa.concat_tables(sampled(table.to_batches(max_chunksize=77), model))
    assert one.equals(many)


AGE = Hierarchy.from_rows([[str(a), f"{a // 2 * 2}-{a // 2 * 2 + 1}",
                            f"{a // 4 * 4}-{a // 4 * 4 + 3}", "*"] for a in range(8)])
SEX = Hierarchy.from_rows([["f", "*"], ["m", "*"]])


def data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(0, 8, n).astype(str),
                         "sex": rng.choice(["f", "m"], n), "dx": rng.choice(list("abc"), n)})


def spec(model):
    return bl.Spec(quasi_identifiers={"age": AGE, "sex": SEX}, sensitive=["dx"],
                   models=[model], max_suppression=1.0)


@pytest.mark.parametrize("budget", [0.0, 0.1])
def test_a_fixed_seed_reproduces_the_release(budget):
    df = data()
    first = bl.anonymize(df, spec(DifferentialPrivacy(1.0, 1e-5, budget, seed=3)), keep_order=True)
    again = bl.anonymize(df, spec(DifferentialPrivacy(1.0, 1e-5, budget, seed=3)), keep_order=True)
    other = bl.anonymize(df, spec(DifferentialPrivacy(1.0, 1e-5, budget, seed=4)), keep_order=True)
    assert first.data.equals(again.data) and first.levels == again.levels
    assert not first.data.equals(other.data)
    assert first.check.passed and first.check.min_class_size >= first.spec.models[0].k


def test_data_independent_node_and_suppression_by_hand():
    df = data()
    model = DifferentialPrivacy(1.0, 1e-5, seed=1, degree=0.5)
    result = bl.anonymize(df, spec(model))
    # round(0.5 * 3) = 2 for age, round(0.5 * 1) = 1 (halves up) for sex
    assert result.levels == {"age": 2, "sex": 1}
    assert model.fixed_levels([4, 2, 5]) == (2, 1, 2)
    kept = result.data.groupby(["age", "sex"]).size()
    assert (kept >= model.k).all()
    small = pd.DataFrame({"age": ["0"] * 30 + ["7"] * 100, "sex": "f", "dx": "a"})
    result = bl.anonymize(small, spec(DifferentialPrivacy(1.0, 1e-5, seed=1, degree=0.0)))
    # at the ground level, age 0 samples about 19 records, below k = 62: suppressed
    assert result.levels == {"age": 0, "sex": 0}
    assert set(result.data["age"]) <= {"7"} and result.suppressed >= 1


def test_the_checker_verifies_k():
    model = DifferentialPrivacy(1.0, 1e-5)
    release = pd.DataFrame({"age": ["0-3"] * 62 + ["4-7"] * 61, "sex": "*", "dx": "a"})
    report = check(release, spec(model))
    assert not report.passed and report.models[0].violating_records == 61


def test_exponential_mechanism():
    assert loss_score([np.array([0.5, 1.0])], np.array([4, 1]), np.array([True, False]),
                      10, 3) == -(10 - 4 + 0.5 * 4) / 1 / 2
    rng = np.random.default_rng(0)
    scores = np.array([0.0, -1.0, -2.0])
    draws = np.bincount([exponential_choice(scores, 2.0, rng) for _ in range(20000)],
                        minlength=3) / 20000
    want = np.exp(scores) / np.exp(scores).sum()  # exp(eps * s / 2) with eps = 2
    assert draws == pytest.approx(want, abs=0.015)
    assert exponential_choice(np.array([-5.0, 0.0]), 1e6, rng) == 1


@pytest.mark.parametrize(("make", "message"), [
    (lambda: DifferentialPrivacy(0, 1e-6), "epsilon must be > 0"),
    (lambda: DifferentialPrivacy(-1, 1e-6), "epsilon must be > 0"),
    (lambda: DifferentialPrivacy(8, 1e-6), "epsilon must be between 0.001 and 5"),
    (lambda: DifferentialPrivacy(1e-4, 1e-6), "epsilon must be between"),
    (lambda: DifferentialPrivacy(1, 0), r"delta must be in \(0, 1\)"),
    (lambda: DifferentialPrivacy(1, 1e-6, 1.0), "generalization_budget must be below 1"),
    (lambda: DifferentialPrivacy(1, 1e-6, -0.1), "generalization_budget must be in"),
    (lambda: DifferentialPrivacy(1, 1e-6, seed=-1), "seed must be"),
    (lambda: DifferentialPrivacy(1, 1e-6, steps=0), "steps must be"),
])
def test_bad_parameters(make, message):
    with pytest.raises(BlendinError, match=message) as info:
        make()
    assert info.value.fix


def test_bad_combinations():
    df = data(200)
    with pytest.raises(BlendinError, match="cannot be combined"):
        bl.anonymize(df, bl.Spec(quasi_identifiers={"age": AGE}, max_suppression=1.0,
                                 models=[DifferentialPrivacy(1, 1e-5), KAnonymity(2)]))
    with pytest.raises(BlendinError, match="set max_suppression = 1"):
        bl.anonymize(df, bl.Spec(quasi_identifiers={"age": AGE},
                                 models=[DifferentialPrivacy(1, 1e-5)]))
    with pytest.raises(BlendinError, match="mondrian cannot enforce differential-privacy"):
        bl.anonymize(df, spec(DifferentialPrivacy(1, 1e-5)), algorithm="mondrian")
    # the spec alone says so, before any data (the app's "Cannot run yet", a TOML file)
    document = {"quasi_identifiers": {"age": {"intervals": [10]}},
                "privacy": [{"model": "differential-privacy", "epsilon": 1, "delta": 1e-5}]}
    with pytest.raises(BlendinError, match="set max_suppression = 1"):
        bl.Spec.from_dict(document)
    document["anonymization"] = {"max_suppression": 1}
    document["privacy"].append({"model": "k-anonymity", "k": 2})
    with pytest.raises(BlendinError, match="cannot be combined"):
        bl.Spec.from_dict(document)


def test_toml_round_trip():
    table = {"model": "differential-privacy", "epsilon": 2.0, "delta": 1e-06,
             "generalization_budget": 0.05, "seed": 1, "steps": 300}
    assert model_from_toml(table).to_dict() == table
    with pytest.raises(BlendinError, match="missing epsilon"):
        model_from_toml({"model": "differential-privacy", "delta": 1e-6})


def test_report_compares_with_the_sample_drawn(tmp_path):
    df = data(2000)
    result = bl.anonymize(df, spec(DifferentialPrivacy(1.0, 1e-5)))  # fresh randomness
    result.report(tmp_path / "r.html", original=df)
    assert "differentially private" in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize("budget", [0.0, 0.1])
def test_safepub_is_named_for_what_it_did(budget):
    """SafePub draws a sample and fixes (or draws) its node: the summary, the JSON and the
    report name it so, with the input's size, and claim no search, no nodes checked and no
    metric minimized (they said 'auto search, metric loss', 'nodes checked: 0')."""
    from test_report import Page

    from blendin.report import render_report

    df = data(2000)
    result = bl.anonymize(df, spec(DifferentialPrivacy(1.0, 1e-5, budget, seed=3)))
    text = result.summary()
    sample = f"a random sample of {result.records:,} of the input's 2,000 records"
    assert result.records < 2000 and result.algorithm == "safepub"
    assert f"(SafePub: {sample}, generalization " in text.splitlines()[0]
    assert "nodes checked" not in text and "metric" not in text.splitlines()[0]
    assert ("note: sex ended" in text) == (not budget)
    assert "mondrian" not in text and "weights" not in text
    assert result.to_dict()["algorithm"] == "safepub"
    page = Page(render_report(result, original=df))
    released = page.ids["released"]
    assert "Records sampled" in released and sample in released
    assert "Nodes checked" not in released and "did not minimize a metric" in released
    assert "marks the one the search minimized" not in page.ids["utility"]


@pytest.mark.parametrize("option", [{"algorithm": "optimal"}, {"metric": "gcp"},
                                    {"seed": 4}, {"time_limit": 5}, {"max_checks": 9},
                                    {"recode_suppressed": True}])
def test_search_options_are_refused_not_ignored(option, tmp_path):
    """SafePub chooses its node: an algorithm, a metric or a search seed given beside it
    changed nothing (a --seed N read as the mechanism's seed did not repeat the release)."""
    from click.testing import CliRunner

    from blendin.cli import main

    name = next(iter(option))
    with pytest.raises(BlendinError, match=f"{name}= is not used with differential"):
        bl.anonymize(data(200), spec(DifferentialPrivacy(1, 1e-5, seed=1)), **option)
    data(200).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text(
        '[quasi_identifiers]\nage = { intervals = [10] }\n[[privacy]]\n'
        'model = "differential-privacy"\nepsilon = 1\ndelta = 1e-5\n'
        '[anonymization]\nmax_suppression = 1\n')
    flag = "--" + name.replace("_", "-")
    value = [] if name == "recode_suppressed" else [str(option[name])]
    run = CliRunner().invoke(main, ["anonymize", str(tmp_path / "d.csv"), "--spec",
                                    str(tmp_path / "s.toml"), "-o", str(tmp_path / "r.csv"),
                                    flag, *value])
    assert run.exit_code == 2 and f"{flag} is not used with differential" in run.output
