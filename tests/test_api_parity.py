"""The library takes what the command line takes."""

from __future__ import annotations

import pytest
from engine_cases import write_linking_case

import blendin as bl


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = write_linking_case(tmp_path_factory.mktemp("parity"), seed=2)
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
