"""The library takes what the command line takes."""

from __future__ import annotations

import pytest

import blendin as bl
from blendin.datasets import linking_tables


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("parity")
    hospital, voters = linking_tables(300, 600, seed=2)
    hospital.to_csv(folder / "hospital.csv", index=False)
    voters.to_csv(folder / "voters.csv", index=False)
    (folder / "s.toml").write_text(
        '[attributes]\nidentifiers = ["name", "ssn"]\nsensitive = ["diagnosis"]\n'
        '[quasi_identifiers]\nzip = { masking = 5 }\nsex = { flat = true }\n'
        '[[privacy]]\nmodel = "k-anonymity"\nk = 2\n'
        '[anonymization]\nmax_suppression = 0.5\n')
    bl.anonymize(str(folder / "hospital.csv"), str(folder / "s.toml"),
                 output=folder / "release.csv")
    return folder


@pytest.mark.parametrize("call", [
    lambda f, s: bl.risk(f / "hospital.csv", spec=s),
    lambda f, s: bl.attack(str(f / "release.csv"), str(f / "voters.csv"), spec=s),
    lambda f, s: bl.utility(str(f / "hospital.csv"), str(f / "release.csv"), s),
])
def test_a_spec_may_be_given_as_its_path(files, call):
    """anonymize, check and apply_solution took the spec's path (as --spec does); risk,
    attack and utility failed with an AttributeError on it."""
    by_path = call(files, str(files / "s.toml")).to_dict()
    assert by_path == call(files, bl.Spec.from_toml(files / "s.toml")).to_dict()
    with pytest.raises(bl.BlendinError, match="expected a Spec or the path"):
        call(files, 5)
