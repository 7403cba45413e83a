import tomllib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy
from blendin.models import KAnonymity
from blendin.spec import ALGORITHMS, METRICS, Spec

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

FULL = """
[input]
delimiter = ";"
encoding = "latin-1"
missing = "?"

[attributes]
identifiers = ["name", "ssn"]
sensitive = ["occupation"]
insensitive = ["notes"]

[quasi_identifiers]
age = { csv = "hierarchies/age.csv" }
zip = { masking = 5 }
dob = { dates = ["month", "quarter", "year", "decade"] }
hours = { intervals = [5, 10, 20] }
sex = { flat = true }

[[privacy]]
model = "k-anonymity"
k = 5

[[privacy]]
model = "distinct-l-diversity"
attribute = "occupation"
l = 3

[anonymization]
max_suppression = 0.05
algorithm = "optimal"
metric = "loss"
"""

MINIMAL = {
    "quasi_identifiers": {"sex": {"flat": True}},
    "privacy": [{"model": "k-anonymity", "k": 2}],
}


def write_spec(folder: Path, text: str) -> Path:
    (folder / "hierarchies").mkdir(exist_ok=True)
    (folder / "hierarchies" / "age.csv").write_text(
        "\n".join(f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*" for a in range(20, 40)) + "\n")
    path = folder / "release.toml"
    path.write_text(text)
    return path


def spec_dict(**sections) -> dict:
    table = {k: (dict(v) if isinstance(v, dict) else list(v)) for k, v in MINIMAL.items()}
    table.update(sections)
    return table


def test_full_example(tmp_path):
    spec = Spec.from_toml(write_spec(tmp_path, FULL))
    assert spec.base_dir == tmp_path.resolve()
    assert (spec.delimiter, spec.encoding, spec.missing) == (";", "latin-1", "?")
    assert spec.identifiers == ["name", "ssn"]
    assert spec.sensitive == ["occupation"] and spec.insensitive == ["notes"]
    assert list(spec.quasi_identifiers) == ["age", "zip", "dob", "hours", "sex"]
    assert [m.key for m in spec.models] == ["k-anonymity", "distinct-l-diversity"]
    assert spec.models[0] == KAnonymity(5)
    assert (spec.max_suppression, spec.algorithm, spec.metric) == (0.05, "optimal", "loss")
    assert spec.roles()["notes"] == "insensitive"
    built = spec.build_hierarchies(pa.table({"age": ["21", "35"], "zip": ["02138", "02139"],
                                             "dob": ["2017-01-05", "2018-03-02"],
                                             "hours": ["40", "38"], "sex": ["f", "m"]}))
    assert built["age"].to_rows() == [["21", "20-29", "*"], ["35", "30-39", "*"]]
    assert built["sex"].to_rows() == [["f", "*"], ["m", "*"]]
    assert all(isinstance(h, Hierarchy) for h in built.values())


def test_round_trip(tmp_path):
    spec = Spec.from_toml(write_spec(tmp_path, FULL))
    text = spec.to_toml()
    assert "[[privacy]]" in text and 'age = { csv = "hierarchies/age.csv"' in text
    again = Spec.from_dict(tomllib.loads(text), base_dir=spec.base_dir)
    assert again == spec
    (tmp_path / "copy.toml").write_text(text)
    assert Spec.from_toml(tmp_path / "copy.toml") == spec


def test_round_trip_of_defaults_and_quoted_names():
    spec = Spec.from_dict(spec_dict(quasi_identifiers={"marital status": {"flat": True}}))
    text = spec.to_toml()
    assert '"marital status" = { flat = true }' in text
    assert Spec.from_dict(tomllib.loads(text)) == spec
    assert "[input]" not in text


def test_model_carried_hierarchy(tmp_path):
    (tmp_path / "occ.csv").write_text("a;x;*\nb;x;*\nc;y;*\n")
    table = spec_dict(attributes={"sensitive": ["occ"]}, privacy=[
        {"model": "t-closeness", "attribute": "occ", "t": 0.3, "distance": "hierarchical",
         "hierarchy": {"csv": "occ.csv"}}])
    spec = Spec.from_dict(table, base_dir=tmp_path)
    built = spec.build_sensitive_hierarchies(pa.table({"occ": ["a", "c"]}))
    assert built["occ"].to_rows() == [["a", "x", "*"], ["c", "y", "*"]]
    text = spec.to_toml()
    assert 'hierarchy = { csv = "occ.csv"' in text
    assert Spec.from_dict(tomllib.loads(text), base_dir=tmp_path) == spec


def test_hierarchical_distance_needs_a_hierarchy():
    table = spec_dict(attributes={"sensitive": ["occ"]}, privacy=[
        {"model": "t-closeness", "attribute": "occ", "t": 0.3, "distance": "hierarchical"}])
    with pytest.raises(BlendinError, match="has no hierarchy.*hierarchy = "):
        Spec.from_dict(table)


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"anonymisation": {}}, r"unknown section 'anonymisation'.*did you mean 'anonymization'"),
        ({"anonymization": {"max_supression": 0.1}},
         r"unknown key 'max_supression' in \[anonymization\].*did you mean 'max_suppression'"),
        ({"attributes": {"sensitve": ["x"]}}, r"did you mean 'sensitive'"),
        ({"input": {"delimeter": ";"}}, r"did you mean 'delimiter'"),
        ({"attributes": {"identifiers": "name"}}, r"identifiers must be a list.*\["),
        ({"attributes": {"identifiers": ["sex"]}}, r"'sex' is both identifier and quasi-id"),
        ({"attributes": {"sensitive": ["a"], "insensitive": ["a"]}}, r"'a' is both sensitive"),
        ({"anonymization": {"max_suppression": 1.5}}, r"max_suppression must be a fraction .*1.5"),
        ({"anonymization": {"max_suppression": -0.1}}, r"between 0 and 1"),
        ({"anonymization": {"max_suppression": "5%"}}, r"max_suppression must be a number"),
        ({"anonymization": {"algorithm": "optimum"}},
         r"unknown algorithm 'optimum' \(did you mean 'optimal'\?\).*" + ", ".join(ALGORITHMS)),
        ({"anonymization": {"metric": "los"}}, r"unknown metric 'los'.*" + ", ".join(METRICS)),
        ({"anonymization": {"algorithm": 3}}, r"algorithm must be text"),
        ({"input": {"delimiter": ";;"}}, r"delimiter must be one character"),
        ({"input": {"encoding": "klingon"}}, r"encoding 'klingon' is not a known encoding"),
        ({"quasi_identifiers": {}}, r"no quasi-identifiers.*\[quasi_identifiers\]"),
        ({"privacy": []}, r"no privacy model.*\[\[privacy\]\]"),
        ({"quasi_identifiers": {"sex": "flat"}}, r"\[quasi_identifiers\] sex must be a table"),
        ({"quasi_identifiers": {"sex": {"flatt": True}}}, r"\[quasi_identifiers\] sex: .*'flatt'"),
        ({"privacy": {"model": "k-anonymity"}}, r"\[\[privacy\]\] must be a list"),
        ({"privacy": [{"model": "k-anonymity", "k": 0}]}, r"\[\[privacy\]\] #1: .*k must be"),
        ({"privacy": [{"model": "t-closeness", "attribute": "dx", "t": 1.5}],
          "attributes": {"sensitive": ["dx"]}}, r"t must be between 0 and 1"),
        ({"privacy": [{"model": "distinct-l-diversity", "attribute": "dx", "l": 2}]},
         r"about 'dx', which is not listed as sensitive.*\[attributes\] sensitive"),
        ({"privacy": [{"model": "distinct-l-diversity", "attribute": "sex", "l": 2}]},
         r"about 'sex', which is quasi-identifier"),
        ({"privacy": [{"model": "distinct-l-diversity", "attribute": "dx", "l": 2,
                       "hierarchy": {"flat": True}}], "attributes": {"sensitive": ["dx"]}},
         r"#1: a hierarchy is given but distinct-l-diversity does not use one"),
    ],
)
def test_validation_errors_name_key_and_fix(change, pattern):
    with pytest.raises(BlendinError, match=pattern) as info:
        Spec.from_dict(spec_dict(**change))
    assert info.value.fix


def test_file_errors(tmp_path):
    with pytest.raises(BlendinError, match="does not exist"):
        Spec.from_toml(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[input\ndelimiter = ;\n")
    with pytest.raises(BlendinError, match="not valid TOML.*line 1"):
        Spec.from_toml(bad)


def test_validate_columns():
    spec = Spec.from_dict(spec_dict(attributes={"identifiers": ["ssn"], "sensitive": ["dx"]},
                                    privacy=[{"model": "k-anonymity", "k": 2}]))
    spec.validate_columns(["ssn", "sex", "dx"])
    spec.validate_columns(["sex", "dx"], released=True)
    with pytest.raises(BlendinError, match=r"no column 'ssn' \(identifier\)"):
        spec.validate_columns(["sex", "dx"])
    with pytest.raises(BlendinError, match=r"no column 'sex'.*did you mean 'Sex'"):
        spec.validate_columns(["ssn", "Sex", "dx"])
    with pytest.raises(BlendinError, match="duplicate column names: 'dx'"):
        spec.validate_columns(["ssn", "sex", "dx", "dx"])


def test_build_hierarchies_uses_given_hierarchy_and_missing_label():
    given = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
    spec = Spec(quasi_identifiers={"sex": given, "zip": Spec.from_dict(
        spec_dict(quasi_identifiers={"zip": {"masking": 5}})).quasi_identifiers["zip"]},
        models=[KAnonymity(2)], missing="?")
    built = spec.build_hierarchies(pa.table({"sex": ["f", "m"], "zip": ["02138", None]}))
    assert built["sex"] is given
    assert "?" in set(built["zip"].ground)
    assert "02138" in set(built["zip"].ground)


def test_built_hierarchy_has_no_toml_form():
    spec = Spec(quasi_identifiers={"sex": Hierarchy.from_rows([["f", "*"]])},
                models=[KAnonymity(2)])
    with pytest.raises(BlendinError, match="no TOML form"):
        spec.to_toml()


def test_validate_in_python():
    with pytest.raises(BlendinError, match="no hierarchy"):
        Spec(quasi_identifiers={"sex": "flat"}, models=[KAnonymity(2)]).validate()
    with pytest.raises(BlendinError, match="not a privacy model"):
        Spec(quasi_identifiers={"sex": Hierarchy.from_rows([["f", "*"]])},
             models=["k=2"]).validate()


def test_adult_spec_with_arx_hierarchies(tmp_path):
    folder = DATA / "adult"
    if not folder.exists():
        pytest.skip("benchmark data absent")
    qis = ["age", "education", "marital-status", "native-country", "race", "salary-class",
           "sex", "workclass"]
    lines = ["[input]", 'delimiter = ";"', "[attributes]", 'sensitive = ["occupation"]',
             "[quasi_identifiers]"]
    lines += [f'"{q}" = {{ csv = "{folder}/adult_hierarchy_{q}.csv" }}' for q in qis]
    lines += ["[[privacy]]", 'model = "k-anonymity"', "k = 5"]
    path = tmp_path / "adult.toml"
    path.write_text("\n".join(lines) + "\n")
    spec = Spec.from_toml(path)
    from blendin.io import Source

    table = Source(folder / "adult.csv").read_all()
    built = spec.build_hierarchies(table)
    assert [built[q].height for q in qis] == [5, 4, 3, 3, 2, 2, 2, 3]
    assert np.prod([built[q].height for q in qis]) == 4320


def test_a_spec_saved_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('\ufeff[quasi_identifiers]\nsex = { flat = true }\n[[privacy]]\n'
                    'model = "k-anonymity"\nk = 2\n', encoding="utf-8")
    assert [m.k for m in Spec.from_toml(path).models] == [2]
