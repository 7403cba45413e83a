"""The app on a table in a database (DuckDB, PostgreSQL): loaded from its URL on the first
step, run in the database, and the password of the form shown nowhere."""

from __future__ import annotations

import html
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
duckdb = pytest.importorskip("duckdb")

import warnings  # noqa: E402

with warnings.catch_warnings():  # starlette's notice about its httpx transport
    warnings.simplefilter("ignore")

from test_app import _client, _session  # noqa: E402

import blendin as bl  # noqa: E402
from blendin.app import create_app, workflow  # noqa: E402
from blendin.app.server import parse_size  # noqa: E402
from blendin.engines.databases import hidden  # noqa: E402

PATIENTS = 600


def _state(app, sid: str):
    return app.state.store.sessions[sid.rsplit("/", 1)[-1]]


def _wait(app, sid: str, seconds: float = 120):
    session = _state(app, sid)
    deadline = time.monotonic() + seconds
    while not session.job.done and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.job.done
    return session


def _error(page: str) -> str | None:
    match = re.search(r'<p class="error flash" role="alert" id="error">(.*?)</p>', page, re.S)
    return html.unescape(match.group(1)) if match else None


@pytest.fixture
def app():
    return create_app(upload_limit=parse_size("50MB"))


@pytest.fixture(scope="module")
def patients():
    return bl.datasets.hospital(PATIENTS)


@pytest.fixture
def duckdb_file(tmp_path, patients) -> Path:
    path = tmp_path / "hospital.duckdb"
    con = duckdb.connect(str(path))
    con.register("v", patients)
    con.sql("CREATE TABLE patients AS SELECT * FROM v")
    con.close()
    return path


def test_a_duckdb_table_is_released_as_the_library_releases_it(app, duckdb_file, patients,
                                                                tmp_path):
    with _client(app) as client:
        sid = _session(client)
        response = client.post(f"{sid}/load/database",
                               data={"url": f"duckdb:///{duckdb_file}", "table": "patients"})
        assert response.status_code == 200
        page = response.text
        session = _state(app, sid)
        assert session.error is None and session.data.ref is not None
        assert session.data.path is None
        assert f'table "patients" in duckdb:///{duckdb_file}' in html.unescape(page)
        assert f'<span id="records">{PATIENTS}</span>' in page
        assert 'id="sampled"' not in page  # 600 rows: all of them are in the page
        # the input stays in its database: nothing to download, no attack against it
        assert "/input/data" not in page
        assert client.get(f"{sid}/input/data").status_code == 404
        assert re.search(r'value="external" disabled', page)

        spec = workflow.build_spec(session)
        assert client.post(f"{sid}/run").status_code == 200
        session = _wait(app, sid)
        assert session.job.error is None
        page = client.get(f"{sid}/").text
        spec_text = client.get(f"{sid}/run/1/download/spec").text
        release = client.get(f"{sid}/run/1/download/.csv")
        report = client.get(f"{sid}/run/1/download/report")

    expected = bl.anonymize(patients, spec)
    run = session.runs[0]
    assert run.result.levels == expected.levels
    assert run.result.suppressed == expected.suppressed
    assert "PASSED" in page
    for column, level in expected.levels.items():
        assert re.search(rf"<td>{column}</td><td>{level} of ", page)
    # the risk before is the input's, measured in the database
    qis = list(spec.quasi_identifiers)
    before = bl.risk(patients, qis)
    row = re.search(r"<td>sample uniques</td><td>([\d,]+)</td>", page)
    assert row.group(1) == f"{before.sample_uniques:,}"
    assert run.risk_before.records == PATIENTS
    assert run.distinct_before == {q: patients[q].nunique() for q in qis}
    # the downloads: the release as for a file, a spec without an [input] to read
    assert release.status_code == 200
    assert 'filename="patients_release.csv"' in release.headers["content-disposition"]
    written, spec_path = tmp_path / "release.csv", tmp_path / "spec.toml"
    written.write_bytes(release.content)
    spec_path.write_text(spec_text)
    downloaded = bl.Spec.from_toml(spec_path)
    assert bl.check(str(written), downloaded).passed
    assert bl.anonymize(patients, downloaded).levels == expected.levels
    assert len(release.content.splitlines()) == PATIENTS - expected.suppressed + 1
    assert "[input]" not in spec_text
    assert report.status_code == 200 and "<!DOCTYPE html>" in report.text
    assert (f"blendin anonymize duckdb:///{duckdb_file} --table patients --spec "
            "patients_spec.toml -o release.csv") in page


def test_a_large_table_shows_its_first_rows_and_runs_on_all(app, duckdb_file, patients,
                                                             monkeypatch):
    monkeypatch.setattr(workflow, "DATABASE_ROWS", 100)
    with _client(app) as client:
        sid = _session(client)
        page = client.post(f"{sid}/load/database",
                           data={"url": str(duckdb_file), "table": "patients"}).text
        session = _state(app, sid)
        assert session.data.table.num_rows == 100 and session.data.rows == PATIENTS
        assert f'<span id="records">{PATIENTS}</span>' in page
        sampled = re.search(r'<span class="muted small" id="sampled">(.*?)</span>', page)
        assert "first 100 rows" in sampled.group(1) and f"all {PATIENTS}" in sampled.group(1)
        assert 'id="profile-sampled"' in page
        assert "loaded table" in page and "the first 100" in page  # the message
        # the models are checked against the whole table, not the page's first rows
        form = {"m0:k": "200", "m1:attribute": "diagnosis", "m1:l": "2",
                "max_suppression": "0.05", "action": "save"}
        assert 'id="spec-ok"' in client.post(f"{sid}/models", data=form).text
        page = client.post(f"{sid}/models", data={**form, "m0:k": "700"}).text
        assert f"larger than the table ({PATIENTS} records)" in html.unescape(page)
        client.post(f"{sid}/models", data={**form, "m0:k": "5"})
        client.post(f"{sid}/run")
        session = _wait(app, sid)
        assert session.job.error is None
        spec = session.runs[0].spec
    result = session.runs[0].result
    assert result.records == PATIENTS
    assert result.levels == bl.anonymize(patients, spec).levels
    assert session.runs[0].risk_before.records == PATIENTS


def test_a_query_names_the_rows_and_lists_are_kept_as_they_are(app, duckdb_file,
                                                                  patients):
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/database",
                    data={"url": str(duckdb_file),
                          "query": "SELECT zip, dob, sex, diagnosis, [1, 2] AS codes "
                                   "FROM patients WHERE sex = 'F'"})
        session = _state(app, sid)
        assert session.error is None
        assert session.data.label.startswith("the query in ")
        assert session.data.rows == int((patients["sex"] == "F").sum())
        assert session.data.stem == "query"
        # a list column: shown as text, suggested insensitive, refused as a QI in words
        assert session.roles["codes"] == "insensitive"
        page = client.post(f"{sid}/roles", data={"role:codes": "quasi-identifier"}).text
        assert "codes" in page and "holds lists or records" in html.unescape(page)
        preview = client.post(f"{sid}/hierarchy/codes", data={"kind": "flat"},
                              headers={"HX-Request": "true"})
        assert preview.status_code == 200 and "holds lists or records" in preview.text


@pytest.mark.parametrize("fields, words", [
    ({"table": "nurses"}, 'has no table "nurses"'),
    ({"url": "hospital.csv", "table": "patients"}, "is not a database"),
    ({"table": "patients", "query": "SELECT * FROM patients"}, "not both"),
    ({}, "no table or query"),
    ({"url": ""}, "no database was given"),
    ({"url": "missing.duckdb", "table": "patients"}, "there is no DuckDB file"),
    ({"query": "DELETE FROM patients"}, "SELECT"),
    # a page's query reads no file of the machine (the app may serve others: --host)
    ({"query": "SELECT content FROM read_text('/etc/hostname')"},
     "file system operations are disabled"),
])
def test_load_errors_are_shown_in_the_load_section(app, duckdb_file, fields, words):
    data = {"url": str(duckdb_file), **fields}
    if "url" in fields and fields["url"]:
        data["url"] = str(duckdb_file.parent / fields["url"])
    with _client(app) as client:
        sid = _session(client)
        response = client.post(f"{sid}/load/database", data=data, follow_redirects=False)
        assert response.status_code == 303
        assert response.headers["location"].endswith("#load")
        page = client.get(response.headers["location"]).text
    error = _error(page)
    assert error is not None and error.startswith("error: ") and words in error, error
    assert "; fix: " in error
    assert "Traceback" not in page
    assert _state(app, sid).data is None
    assert not (duckdb_file.parent / "missing.duckdb").exists()  # no empty file made
    # what was typed is there again, to be corrected
    assert f'value="{data["url"]}"' in page


def test_a_url_that_does_not_parse_is_explained_without_its_password(app):
    with _client(app) as client:
        sid = _session(client)
        page = client.post(f"{sid}/load/database",
                           data={"url": "postgresql://me:pa55word@db:port/x",
                                 "table": "patients"}).text
    assert "is not a valid URL" in _error(page)
    assert "postgresql://me@db:port/x" in page
    assert "pa55word" not in page


def test_the_external_table_is_refused_for_a_table_in_a_database(app, duckdb_file):
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/database", data={"url": str(duckdb_file),
                                                  "table": "patients"})
        page = client.post(f"{sid}/load/upload", data={"target": "external"},
                           files={"file": ("voters.csv", b"zip,sex\n02138,F\n")}).text
    assert "linking attack reads the input in memory" in _error(page)
    assert _state(app, sid).external is None


def test_postgres_password_is_shown_nowhere(app, postgres_url, pg_conn, patients,
                                            monkeypatch):
    monkeypatch.setattr(workflow, "DATABASE_ROWS", 50)  # ends the first read early
    password = urlsplit(postgres_url).password
    assert password and password in postgres_url
    url = hidden(postgres_url)
    assert password not in url
    columns = ["zip", "dob", "sex", "ethnicity", "marital_status", "diagnosis"]
    pg_conn.execute("CREATE TABLE visits (zip text, dob text, sex text, ethnicity text, "
                    "marital_status text, diagnosis text)")
    with pg_conn.cursor() as cursor, cursor.copy(
            "COPY visits FROM STDIN") as copy:
        for row in patients[columns].itertuples(index=False):
            copy.write_row(row)
    bodies = []
    with _client(app) as client:
        sid = _session(client)
        # a wrong password: refused, and neither password is shown
        page = client.post(f"{sid}/load/database",
                           data={"url": url, "table": "visits",
                                 "password": "not-" + password}).text
        bodies.append(page)
        assert "cannot connect" in _error(page)
        assert "not-" + password not in page
        response = client.post(f"{sid}/load/database",
                               data={"url": url, "table": "visits", "password": password})
        bodies.append(response.text)
        session = _state(app, sid)
        assert session.error is None, session.error
        assert session.data.rows == PATIENTS and session.data.table.num_rows == 50
        assert f"table &#34;visits&#34; in {url}" in response.text
        client.post(f"{sid}/run")
        session = _wait(app, sid)
        assert session.job.error is None, session.job.error
        bodies.append(client.get(f"{sid}/job").text)
        page = client.get(f"{sid}/").text
        bodies.append(page)
        assert "PASSED" in page
        assert "--password-env BLENDIN_DB_PASSWORD" in page
        for what in ("spec", ".csv", "report", "solution"):
            response = client.get(f"{sid}/run/1/download/{what}")
            assert response.status_code == 200, what
            bodies.append(response.text)
        client.post(f"{sid}/run/1/tradeoff")
        _wait(app, sid)
        bodies.append(client.get(f"{sid}/").text)
        run = session.runs[0]
        # the URL with its password in it: shown without it
        page = client.post(f"{sid}/load/database",
                           data={"url": postgres_url, "table": "visits"}).text
        bodies.append(page)
        assert _state(app, sid).error is None
        page = client.post(f"{sid}/load/database",
                           data={"url": postgres_url, "table": "nurses"}).text
        bodies.append(page)
        assert 'has no table "nurses"' in _error(page)
    assert run.result.levels == bl.anonymize(patients[columns], run.spec).levels
    assert run.risk_before.records == PATIENTS
    assert [p["k"] for p in run.tradeoff][:2] == [2, 3]
    assert all(p["loss"] is not None for p in run.tradeoff[:3]), run.tradeoff
    for body in bodies:
        assert password not in body


# -- in a browser ----------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
SHOTS = os.environ.get("BLENDIN_APP_SCREENSHOTS")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``blendin app`` on a free port, stopped with Ctrl-C at the end."""
    pytest.importorskip("uvicorn")
    tmp = tmp_path_factory.mktemp("app-db-tmp")
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; from blendin.cli import main; main()", "app",
         "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(tmp)})
    line = process.stdout.readline()
    match = re.search(r"http://\S+/\?key=\S+", line)  # (the key lets the browser in)
    assert match, (line, process.stderr.read() if process.poll() is not None else "")
    yield match.group(0)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=20)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium is not installed")
def test_the_database_card_in_a_browser(server, duckdb_file):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.set_default_timeout(30_000)
            page.goto(server)
            assert page.get_attribute("#db-password", "type") == "password"
            assert page.get_attribute("#db-password", "autocomplete") == "off"
            page.fill("#db-url", str(duckdb_file.with_name("nothing.duckdb")))
            page.fill("#db-table", "patients")
            with page.expect_navigation():
                page.click("#load-database")
            assert "there is no DuckDB file" in page.inner_text("#error")
            if SHOTS:
                Path(SHOTS).mkdir(parents=True, exist_ok=True)
                page.locator("#load").screenshot(path=Path(SHOTS) / "db-0-error.png")
            page.fill("#db-url", str(duckdb_file))
            with page.expect_navigation():
                page.click("#load-database")
            assert page.inner_text("#records") == f"{PATIENTS}"
            if SHOTS:
                page.locator("#load").screenshot(path=Path(SHOTS) / "db-1-load.png")
            with page.expect_navigation():
                page.click("#run-button")
            page.locator("#verdict").wait_for()
            assert page.inner_text("#verdict").startswith("PASSED")
            assert "--table patients" in page.inner_text("#script")
        finally:
            browser.close()


def test_distinct_values_before_count_null_as_the_release_does(app, tmp_path):
    # NULL in the database is one more value of the release (its own label): counted in
    # the input too, else a column left as it is reads "2 -> 3"
    path = tmp_path / "visits.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE visits AS SELECT CASE i % 3 WHEN 0 THEN 'F' WHEN 1 THEN 'M' "
                "END AS sex, 'flu' AS diagnosis FROM range(60) t(i)")
    con.close()
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/database", data={"url": str(path), "table": "visits"})
        client.post(f"{sid}/roles", data={"role:sex": "quasi-identifier",
                                          "role:diagnosis": "insensitive"})
        _state(app, sid).models = [{"model": "k-anonymity", "k": 2}]
        client.post(f"{sid}/run")
        session = _wait(app, sid)
        assert session.job.error is None
        page = html.unescape(client.get(f"{sid}/").text)
    assert "<td>sex</td><td>0 of 1</td><td>0.0%</td><td>3 → 3</td>" in page
