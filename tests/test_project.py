"""Project bundles: a spec with its hierarchy files in one .zip (or its folder), run as it
is by the CLI and read back equal."""

from __future__ import annotations

import zipfile

from click.testing import CliRunner

import blendin as bl
from blendin.cli import main
from blendin.project import write_project


def project(tmp_path):
    (tmp_path / "maps").mkdir()
    (tmp_path / "maps" / "marital status.csv").write_text(
        "Married;ever;*\nDivorced;ever;*\nWidowed;ever;*\nNever married;never;*\n")
    spec = bl.Spec(identifiers=["name", "ssn"], quasi_identifiers={
        "marital_status": bl.from_csv(tmp_path / "maps" / "marital status.csv"),
        "zip": bl.masking(), "sex": bl.flat()}, models=[bl.KAnonymity(4)],
        max_suppression=0.05)
    (tmp_path / "notes.txt").write_text("why k = 4")
    return spec, write_project(tmp_path / "project.zip", spec,
                               {"notes.txt": tmp_path / "notes.txt"})


def test_a_bundle_holds_the_spec_its_files_and_reads_back_equal(tmp_path):
    spec, bundle = project(tmp_path)
    with zipfile.ZipFile(bundle) as z:
        assert sorted(z.namelist()) == ["hierarchies/marital_status.csv", "notes.txt",
                                        "spec.toml"]
        assert 'csv = "hierarchies/marital_status.csv"' in z.read("spec.toml").decode()
    again = bl.Spec.from_toml(bundle)
    df = bl.datasets.hospital(500, seed=4)
    assert bl.anonymize(df, again).levels == bl.anonymize(df, spec).levels
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(bundle).extractall(unpacked)
    assert bl.Spec.from_toml(unpacked).to_dict() == again.to_dict()


def test_the_cli_runs_a_bundle_and_its_folder_alike(tmp_path):
    _, bundle = project(tmp_path)
    bl.datasets.hospital(500, seed=4).to_csv(tmp_path / "data.csv", index=False)
    outputs = []
    zipfile.ZipFile(bundle).extractall(tmp_path / "folder")
    for given, out in ((bundle, "a.csv"), (tmp_path / "folder", "b.csv")):
        run = CliRunner().invoke(main, ["anonymize", str(tmp_path / "data.csv"), "--spec",
                                        str(given), "-o", str(tmp_path / out),
                                        "--shuffle-seed", "1"])
        assert run.exit_code == 0, run.output
        outputs.append((tmp_path / out).read_bytes())
    assert outputs[0] == outputs[1]


def test_a_folder_without_a_spec_and_a_zip_that_escapes_are_refused(tmp_path):
    bl.datasets.hospital(50, seed=4).to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "empty").mkdir()
    run = CliRunner().invoke(main, ["anonymize", str(tmp_path / "data.csv"), "--spec",
                                    str(tmp_path / "empty"), "-o", str(tmp_path / "o.csv")])
    assert run.exit_code == 2 and "'empty' holds no spec.toml" in run.output
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as z:
        z.writestr("spec.toml", "")
        z.writestr("/etc/escape.csv", "x")
    run = CliRunner().invoke(main, ["anonymize", str(tmp_path / "data.csv"), "--spec",
                                    str(tmp_path / "evil.zip"), "-o", str(tmp_path / "o.csv")])
    assert run.exit_code == 2 and "would land outside" in run.output
    assert "Traceback" not in run.output and not (tmp_path / "o.csv").exists()


def test_a_bundle_whose_spec_names_a_hierarchy_file_outside_it_is_refused(tmp_path):
    """A bundle carries its hierarchies: one whose spec names a file of this machine (an
    absolute path, or .. out of the folder it unpacks to) had the run read it, and the
    solution and report copy its rows; the app refuses such a file too."""
    bl.datasets.hospital(50, seed=4).to_csv(tmp_path / "data.csv", index=False)
    outside = tmp_path / "secret.csv"
    outside.write_text("F;*\nM;*\n")
    for named in (str(outside), "../" * 12 + str(outside).lstrip("/")):
        bundle = tmp_path / "p.zip"
        with zipfile.ZipFile(bundle, "w") as z:
            z.writestr("spec.toml", f'[attributes]\nidentifiers = ["name", "ssn"]\n'
                                    f'[quasi_identifiers]\nsex = {{ csv = "{named}" }}\n'
                                    '[[privacy]]\nmodel = "k-anonymity"\nk = 2\n')
        run = CliRunner().invoke(main, ["anonymize", str(tmp_path / "data.csv"), "--spec",
                                        str(bundle), "-o", str(tmp_path / "o.csv")])
        assert run.exit_code == 2 and "outside the bundle" in run.output, run.output
        assert not (tmp_path / "o.csv").exists()
