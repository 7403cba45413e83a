"""Start-up stays light: importing the package or asking for help loads no heavy library."""

import json
import subprocess
import sys

import pytest

import blendin as bl

HEAVY = ("matplotlib", "pandas", "jinja2", "openpyxl", "polars", "scipy")


def loaded_after(code: str) -> list[str]:
    """The heavy top-level packages in sys.modules after running ``code`` in a fresh
    interpreter."""
    probe = (f"{code}\nimport json, sys\n"
             f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & "
             f"set({list(HEAVY)!r}))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_loads_no_heavy_library():
    assert loaded_after("import blendin") == []


@pytest.mark.parametrize("argv", [["--help"], ["anonymize", "--help"], ["risk", "--help"],
                                  ["attack", "--help"], ["check", "--help"], ["--version"]])
def test_cli_help_loads_no_heavy_library(argv):
    code = ("from blendin.cli import main\n"
            "try:\n"
            f"    main({argv!r}, prog_name='blendin')\n"
            "except SystemExit as exit:\n"
            "    assert exit.code in (0, None), exit.code\n")
    assert loaded_after(code) == []


def test_the_probe_sees_a_heavy_import():
    """The check above can fail: using the report loads matplotlib and jinja2."""
    assert {"matplotlib", "jinja2"} <= set(loaded_after(
        "import blendin.report.plots, blendin.report.html\n"
        "blendin.report.page.template('report.html.j2')"))


def test_every_exported_name_resolves_to_what_its_module_defines():
    import importlib

    for name in bl.__all__:
        value = getattr(bl, name)
        module = importlib.import_module(bl._EXPORTS[name])
        assert value is (module if name in bl._MODULES else getattr(module, name)), name


def test_functions_stay_functions_after_their_modules_load():
    import blendin.anonymize  # noqa: F401
    import blendin.check  # noqa: F401

    assert callable(bl.anonymize) and bl.anonymize.__module__.startswith("blendin.anonymize")
    assert callable(bl.check) and callable(bl.risk) and callable(bl.attack)


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        bl.no_such_name  # noqa: B018
    assert "anonymize" in dir(bl)


def test_the_anonymize_path_imports_no_heavy_library():
    """Spec, hierarchies, metrics and the pipeline import light: pandas loads only once data
    is converted (pyarrow imports it then, when it is installed)."""
    assert loaded_after("import blendin.anonymize, blendin.spec, blendin.metrics, "
                        "blendin.hierarchy.arx, blendin.hierarchy.registry, "
                        "blendin.cli.anonymize") == []
