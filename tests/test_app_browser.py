"""The app end to end in a real headless browser (Debian's chromium, driven by Playwright).

The server is ``blendin app`` itself, started as a subprocess and stopped with Ctrl-C. With
``BLENDIN_APP_SCREENSHOTS=docs/app`` the tests also save a screenshot of each step there
(the pictures of ``docs/app.md``); a normal run writes nothing outside its temporary folder.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="chromium is not installed (.ci/run installs it)")

SHOTS = os.environ.get("BLENDIN_APP_SCREENSHOTS")


def same_rows(a: bytes, b: bytes) -> bool:
    """Two CSV files with the same header and the same lines in any order."""
    first, second = a.splitlines(), b.splitlines()
    return first[:1] == second[:1] and sorted(first[1:]) == sorted(second[1:])


def shot(page, name: str, *, full: bool = False, locator=None) -> None:
    """Save a screenshot for the docs, only when asked to."""
    if not SHOTS:
        return
    Path(SHOTS).mkdir(parents=True, exist_ok=True)
    path = Path(SHOTS) / f"{name}.png"
    if locator is not None:
        locator.screenshot(path=path)
    else:
        page.screenshot(path=path, full_page=full)


def _app_folders(tmp: Path) -> set[str]:
    return {p.name for p in tmp.glob("blendin-app-*")}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``blendin app`` on a free port; stopped with Ctrl-C (SIGINT) at the end. Its temporary
    folder lives in a folder of its own, so that other runs on the machine cannot mix in."""
    tmp = tmp_path_factory.mktemp("app-tmp")
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; from blendin.cli import main; main()", "app",
         "--no-browser", "--max-upload", "50MB"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(tmp)})
    line = process.stdout.readline()
    match = re.search(r"http://\S+/\?key=\S+", line)  # (the key lets the browser in)
    assert match, (line, process.stderr.read() if process.poll() is not None else "")
    yield match.group(0)
    assert _app_folders(tmp), "the uploads went elsewhere than the private folder"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "stopped" in out
    assert _app_folders(tmp) == set()  # every uploaded file is gone


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def context(browser):
    context = browser.new_context(accept_downloads=True, viewport={"width": 1200, "height": 900})
    context.set_default_timeout(30_000)
    yield context
    context.close()


def submit(page, selector: str) -> None:
    """Click a button that sends a form, and wait until the next page has loaded."""
    with page.expect_navigation():
        page.click(selector)


def _download(page, selector: str, folder: Path) -> Path:
    with page.expect_download() as info:
        page.click(selector)
    download = info.value
    path = folder / download.suggested_filename
    download.save_as(path)
    return path


def test_release_from_the_page_equals_the_cli_with_the_downloaded_project(server, context,
                                                                          tmp_path):
    page = context.new_page()
    page.goto(server)
    shot(page, "0-start")
    page.select_option("#sample", "hospital")
    submit(page, "#load-sample")
    assert page.inner_text("#records") == "1,000"
    shot(page, "1-load", locator=page.locator("#load"))

    # classify: the suggestions are there with their reasons, and stay editable
    row = page.locator("#columns tr", has_text="ssn")
    assert "names a person directly" in row.inner_text()
    assert page.input_value("select[name='role:dob']") == "quasi-identifier"
    with page.expect_navigation():  # a role is saved as soon as it is chosen
        page.select_option("select[name='role:marital_status']", "quasi-identifier")
    shot(page, "2-classify", locator=page.locator("#classify"))

    # hierarchies: the preview follows the parameters, on the column's real values
    dob = page.locator(".hier", has_text="dob")
    dob.locator("input[name='dates']").fill("year, decade")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.hier')].some(h => h.textContent.includes("
        "'dob') && h.querySelectorAll('.levels th').length === 4)")
    # a tree from the column's own values: the page comes back with its editor
    marital = page.locator(".hier", has_text="marital_status")
    with page.expect_navigation():
        marital.locator("select[name='kind']").select_option("tree")
    marital = page.locator(".hier", has_text="marital_status")
    for value in ("Married", "Divorced", "Widowed"):
        marital.locator(f"input[name='items'][value='{value}']").check()
    marital.locator("input[name='group']").fill("Has married")
    submit(page, ".tree-editor button.group")
    marital = page.locator(".hier", has_text="marital_status")
    marital.locator(".levels", has_text="Has married").wait_for()
    assert "error" not in marital.inner_text()
    # an ARX file is read as soon as it is chosen
    sex = page.locator(".hier", has_text="sex")
    sex.locator("select[name='kind']").select_option("csv")
    sex.locator(".preview", has_text="choose an ARX hierarchy file").wait_for()
    (tmp_path / "sex.csv").write_text("F;*\nM;*\n")
    with page.expect_navigation():
        sex.locator("input[type=file]").set_input_files(str(tmp_path / "sex.csv"))
    assert "hierarchy of sex read from sex.csv" in page.inner_text("#hierarchies")
    shot(page, "3-hierarchies", locator=page.locator("#hierarchies"))

    # models: k = 5 and distinct 2-diversity on the diagnosis
    page.fill("input[name='m0:k']", "5")
    page.select_option("select[name='m1:attribute']", "diagnosis")
    page.fill("input[name='m1:l']", "2")
    page.fill("#max-suppression", "0.05")
    submit(page, "#save-models")
    assert page.locator("#spec-ok").is_visible(), page.locator("#models").inner_text()
    shot(page, "4-models", locator=page.locator("#models"))
    submit(page, "#run-button")
    verdict = page.locator("#verdict")
    verdict.wait_for()
    assert verdict.inner_text().startswith("PASSED")
    assert "k-anonymity" in verdict.inner_text()
    assert page.locator("#attack").is_visible()
    shot(page, "6-results", locator=page.locator("#results"))

    release = _download(page, "#dl-csv", tmp_path)
    spec = _download(page, "#dl-spec", tmp_path)
    data = _download(page, "a[href$='/input/data']", tmp_path)
    assert 'dob = { dates = ["year", "decade"] }' in spec.read_text()
    assert 'csv = "hierarchies/sex.csv"' in spec.read_text()
    # the spec names a hierarchy file: the project holds both, and runs as it is
    project = _download(page, "#dl-project", tmp_path)

    from blendin.cli import main

    out = tmp_path / "cli_release.csv"
    result = CliRunner().invoke(main, ["anonymize", str(data), "--spec", str(project), "-o",
                                       str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert same_rows(out.read_bytes(), release.read_bytes())  # each run shuffles its rows

    # a fresh page: the project loaded back onto the same table runs to the same release
    fresh = context.new_page()
    fresh.goto(server)
    fresh.select_option("#sample", "hospital")
    submit(fresh, "#load-sample")
    fresh.set_input_files("#project-files", str(project))
    submit(fresh, "#load-project")
    assert "project loaded: 5 quasi-identifiers" in fresh.inner_text("body")
    submit(fresh, "#run-button")
    fresh.locator("#verdict").wait_for()
    (tmp_path / "again").mkdir()
    again = _download(fresh, "#dl-csv", tmp_path / "again")
    assert same_rows(again.read_bytes(), release.read_bytes())
    fresh.close()

    # a second run with another k, then the two side by side
    page.fill("input[name='m0:k']", "10")
    submit(page, "#run-button")
    page.locator("h2", has_text="Results of run 2").wait_for()
    compare = page.locator("#compare")
    assert "run 1" in compare.inner_text() and "run 2" in compare.inner_text()
    assert "k = 10" in compare.inner_text()
    submit(page, "#tradeoff-run")
    page.locator("#tradeoff").wait_for()
    assert page.locator("svg.plot circle").count() >= 4
    shot(page, "7-compare", locator=page.locator("#results"))


def test_bad_uploads_get_the_clis_error_in_the_page(server, context, tmp_path):
    from blendin.app.server import in_fields
    from blendin.cli import main

    page = context.new_page()
    page.goto(server)
    bad = tmp_path / "latin.csv"
    bad.write_bytes("name,city\nJosé,Zürich\n".encode("latin-1"))
    page.set_input_files("#file", str(bad))
    submit(page, "#upload")
    error = page.locator("#error")
    shown = error.inner_text()
    spec = tmp_path / "s.toml"
    spec.write_text('[quasi_identifiers]\ncity = { flat = true }\n'
                    '[[privacy]]\nmodel = "k-anonymity"\nk = 2\n')
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        cli = CliRunner().invoke(main, ["anonymize", "latin.csv", "--spec", "s.toml", "-o",
                                        "out.csv"])
    finally:
        os.chdir(cwd)
    assert cli.exit_code == 2
    # the CLI's message, its fix said with the page's fields
    problem, _, fix = cli.output.strip().splitlines()[-1].partition("; fix: ")
    assert "--encoding latin-1" in fix
    assert shown == f"{problem}; fix: {in_fields(fix)}"
    assert "latin-1 in the encoding field" in shown
    shot(page, "8-bad-upload", locator=page.locator("#load"))
    # the fix the message names, in the page: the encoding goes into the spec's [input]
    page.set_input_files("#file", str(bad))
    page.fill("#encoding", "latin-1")
    submit(page, "#upload")
    assert "Zürich" in page.inner_text("#preview")

    empty = tmp_path / "empty.csv"
    empty.write_text("")
    page.set_input_files("#file", str(empty))
    submit(page, "#upload")
    assert "is empty" in page.inner_text("#error")

    # above the limit: refused before sending, in words (a sparse file: no disk used)
    big = tmp_path / "big.csv"
    with big.open("wb") as handle:
        handle.truncate(2 * 1024 ** 3)
    page.set_input_files("#file", str(big))
    message = page.locator(".upload-error")
    assert message.is_visible()
    assert "2.0 GB, above the limit of 50.0 MB" in message.inner_text()
    shot(page, "9-too-large", locator=page.locator("#load"))


def _long_table(path: Path) -> None:
    rng = np.random.default_rng(0)
    columns = {f"age_{i}": rng.integers(0, 100, 20_000) for i in range(1, 8)}
    lines = [",".join(columns)] + [",".join(map(str, row)) for row in zip(*columns.values())]
    path.write_text("\n".join(lines) + "\n")


def test_cancel_stops_a_long_run_and_the_page_stays_live(server, context, tmp_path):
    page = context.new_page()
    page.goto(server)
    data = tmp_path / "wide.csv"
    _long_table(data)
    page.set_input_files("#file", str(data))
    submit(page, "#upload")
    assert page.inner_text("#records") == "20,000"
    page.select_option("#algorithm", "exhaustive")
    submit(page, "#run-button")
    page.wait_for_function("() => document.querySelector('#progress') && "
                           "Number(document.querySelector('#progress').value) > 0")
    # the page answers while the search runs
    assert "nodes" in page.inner_text("#job")
    shot(page, "5-progress", locator=page.locator("#run"))
    submit(page, "#cancel")
    page.locator("#job-error", has_text="cancelled").wait_for()
    assert not page.locator("#verdict").count()


def test_two_tabs_are_two_sessions_working_at_once(server, context, tmp_path):
    first, second = context.new_page(), context.new_page()
    first.goto(server)
    second.goto(server)
    assert first.url != second.url
    # the first tab starts a long search...
    data = tmp_path / "wide.csv"
    _long_table(data)
    first.set_input_files("#file", str(data))
    submit(first, "#upload")
    first.select_option("#algorithm", "exhaustive")
    submit(first, "#run-button")
    # ...while the second loads its own table and runs to the verdict
    second.select_option("#sample", "hospital")
    submit(second, "#load-sample")
    submit(second, "#run-button")
    second.locator("#verdict").wait_for()
    assert second.inner_text("#verdict").startswith("PASSED")
    assert "hospital.csv" in second.inner_text("#loaded")
    first.reload()
    assert "wide.csv" in first.inner_text("#loaded")
    assert first.inner_text("#records") == "20,000"
    assert first.locator("#progress").count() == 1  # still searching, on its own
    submit(first, "#cancel")
    first.locator("#job-error", has_text="cancelled").wait_for()
    assert not first.locator("#verdict").count()


def test_a_role_chosen_in_the_page_is_the_one_a_run_uses(server, context, tmp_path):
    # a steward marks a column as an identifier and presses Run (in the models' form) without
    # "Save roles": the run must not release the column the page shows as removed
    page = context.new_page()
    page.goto(server)
    page.select_option("#sample", "hospital")
    submit(page, "#load-sample")
    with page.expect_navigation(timeout=10_000):  # saved as soon as it is chosen
        page.select_option('select[name="role:marital_status"]', "identifier")
    assert page.locator('select[name="role:marital_status"]').input_value() == "identifier"
    submit(page, "#run-button")
    page.locator("#verdict").wait_for()
    release = _download(page, "#dl-csv", tmp_path)
    assert "marital_status" not in release.read_text().splitlines()[0]
    assert page.locator('select[name="role:marital_status"]').input_value() == "identifier"
