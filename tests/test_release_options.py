"""Release options: tie policy and weights, Mondrian's relaxed and sets, the group and
original-row columns, and coloured Excel output; in the spec, the API and the CLI."""

import json

import openpyxl
import pandas as pd
import pytest
from click.testing import CliRunner

from blendin.anonymize import anonymize
from blendin.check import check
from blendin.cli import main
from blendin.datasets import hospital
from blendin.errors import BlendinError
from blendin.hierarchy.builders import flat
from blendin.hierarchy.dates import dates
from blendin.hierarchy.masking import masking
from blendin.models import DistinctLDiversity, KAnonymity
from blendin.spec import Spec


def _spec(**options) -> Spec:
    return Spec(identifiers=["name", "ssn"],
                quasi_identifiers={"zip": masking(), "dob": dates("month", "year", "decade"),
                                   "sex": flat()},
                sensitive=["diagnosis"],
                models=[KAnonymity(4), DistinctLDiversity("diagnosis", 2)],
                max_suppression=0.05, **options)


@pytest.fixture(scope="module")
def patients() -> pd.DataFrame:
    return hospital(400, seed=3)


def test_spec_carries_the_options_through_toml():
    spec = _spec(policy="relative", weights={"zip": 2.0}, relaxed=True, sets=True)
    again = Spec.from_dict(__import__("tomllib").loads(spec.to_toml()))
    assert (again.policy, again.weights, again.relaxed, again.sets) == (
        "relative", {"zip": 2.0}, True, True)


@pytest.mark.parametrize("anonymization, message", [
    ({"policy": "smallest"}, "unknown policy"),
    ({"weights": {"age": 1}}, "not a quasi-identifier"),
    ({"weights": {"sex": -1}}, "must be >= 0"),
    ({"weights": {"sex": 0}}, "every weight is 0"),
    ({"weights": [1, 2]}, "weights must map"),
    ({"relaxed": "yes"}, "true or false"),
])
def test_spec_refuses_bad_options(anonymization, message):
    table = {"quasi_identifiers": {"sex": {"flat": True}},
             "privacy": [{"model": "k-anonymity", "k": 2}], "anonymization": anonymization}
    with pytest.raises(BlendinError, match=message):
        Spec.from_dict(table)


def test_group_column_numbers_the_released_classes(patients):
    result = anonymize(patients, _spec(), group_column="group", original_row="row")
    data = result.data
    by_labels = data.groupby(["zip", "dob", "sex"]).group.nunique()
    assert (by_labels == 1).all()  # one id per released class ...
    assert data.group.nunique() == len(by_labels) == result.classes  # ... and one class per id
    assert data.row.is_unique and set(data.row) <= set(range(1, len(patients) + 1))
    kept = patients.iloc[data.row.to_numpy() - 1]
    assert (kept.diagnosis.to_numpy() == data.diagnosis.to_numpy()).all()
    assert check(data, _spec()).passed


def test_added_column_may_not_shadow_a_release_column(patients):
    with pytest.raises(BlendinError, match="already has a column 'diagnosis'"):
        anonymize(patients, _spec(), group_column="diagnosis")


@pytest.mark.parametrize("options", [{}, {"relaxed": True}, {"sets": True}])
def test_mondrian_options_give_releases_the_checker_accepts(patients, options):
    result = anonymize(patients, _spec(algorithm="mondrian", **options))
    assert check(result.data, _spec()).passed
    assert {"gcp", "loss", "discernibility"} <= set(result.utility)
    if options.get("sets"):
        assert result.data.zip.str.startswith("{").any()


def test_excel_release_colours_each_class(tmp_path, patients):
    result = anonymize(patients, _spec(), group_column="group")
    path = result.write(tmp_path / "release.xlsx")
    sheet = openpyxl.load_workbook(path).active
    header = [c.value for c in sheet[1]]
    group_at = header.index("group")
    colour_of = {}
    for row in sheet.iter_rows(min_row=2):
        colour_of.setdefault(row[group_at].value, set()).add(row[0].fill.fgColor.rgb)
    assert sheet.freeze_panes == "A2"
    assert all(len(colours) == 1 for colours in colour_of.values())
    assert len({next(iter(c)) for c in colour_of.values()}) > 1


def test_cli_passes_the_options(tmp_path, patients):
    data = tmp_path / "patients.csv"
    patients.to_csv(data, index=False)
    spec = tmp_path / "spec.toml"
    spec.write_text(_spec().to_toml())
    out = tmp_path / "release.csv"
    run = CliRunner().invoke(main, [
        "anonymize", str(data), "--spec", str(spec), "-o", str(out), "--json",
        "--algorithm", "mondrian", "--relaxed", "--group-column", "--original-row"])
    assert run.exit_code == 0, run.output
    written = pd.read_csv(out, dtype=str)
    assert {"group", "original_row"} <= set(written.columns)
    assert json.loads(run.output)["classes"] == written.group.nunique()
