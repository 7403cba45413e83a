"""The app without a browser: its HTTP answers, the upload limit, the spec it writes, and the
figures it shows computed again through the library."""

from __future__ import annotations

import html
import re
import socket
import threading
import time
import tomllib
from collections import Counter
from urllib.parse import quote

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

import warnings  # noqa: E402

from click.testing import CliRunner  # noqa: E402

with warnings.catch_warnings():  # starlette's notice about its httpx transport
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

import blendin as bl  # noqa: E402
from blendin.app import create_app, profile, trees, workflow  # noqa: E402
from blendin.app.server import parse_size  # noqa: E402


def same_rows(a: bytes, b: bytes) -> bool:
    """Two CSV files with the same header and the same lines in any order."""
    first, second = a.splitlines(), b.splitlines()
    return first[:1] == second[:1] and sorted(first[1:]) == sorted(second[1:])


def _client(app, **options) -> TestClient:
    """A client of the app at 127.0.0.1 (it answers to loopback names only) whose forms
    carry their session's token, as the page's forms do."""

    def send_token(request) -> None:
        parts = request.url.path.split("/")
        session = app.state.store.get(parts[2]) if parts[1:2] == ["s"] else None
        if request.method == "POST" and session is not None:
            request.headers["X-Blendin-Token"] = session.token

    client = TestClient(app, base_url="http://127.0.0.1", **options)
    client.event_hooks = {"request": [send_token], "response": []}
    return client


def _session(client: TestClient) -> str:
    response = client.get("/", follow_redirects=False)
    assert response.status_code == 303
    return response.headers["location"].rstrip("/")


def _hospital_with_marital_file(client) -> str:
    """A new page with the hospital sample, marital_status from an ARX file."""
    sid = _session(client)
    client.post(f"{sid}/load/sample", data={"sample": "hospital"})
    client.post(f"{sid}/hierarchy/marital_status/file",
                files={"file": ("marital.csv", MARITAL_ROWS.encode())})
    return sid


def _hospital_run(app, client, **limits):
    """A new page with the hospital sample, run with ``k`` and ``max_suppression``."""
    sid = _session(client)
    client.post(f"{sid}/load/sample", data={"sample": "hospital"})
    client.post(f"{sid}/models", data={"m0:k": str(limits["k"]), "action": "run",
                                       "max_suppression": str(limits["max_suppression"])})
    return sid, _wait(app, sid)


def _wait(app, sid: str, seconds: float = 60):
    session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
    deadline = time.monotonic() + seconds
    while not session.job.done and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.job.done
    return session


#: an ARX hierarchy file for the hospital sample's marital_status
MARITAL_ROWS = "\n".join(f"{v};{g};*" for v, g in (("Married", "Has married"),
                                                  ("Divorced", "Has married"),
                                                  ("Widowed", "Has married"),
                                                  ("Never married", "Never married")))


@pytest.fixture
def app():
    return create_app(upload_limit=parse_size("150MB"))


def test_a_run_shows_what_the_library_finds_with_the_same_spec(app, tmp_path):
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        form = {"m0:k": "5", "m1:attribute": "diagnosis", "m1:l": "2",
                "max_suppression": "0.05", "action": "run"}
        assert client.post(f"{sid}/models", data=form).status_code == 200
        session = _wait(app, sid)
        assert session.job.error is None
        page = client.get(f"{sid}/").text
        spec_text = client.get(f"{sid}/run/1/download/spec").text
        data = tmp_path / "hospital.csv"
        data.write_bytes(client.get(f"{sid}/input/data").content)
        release = client.get(f"{sid}/run/1/download/.csv").content
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(spec_text)
    spec = bl.Spec.from_toml(spec_path)
    result = bl.anonymize(str(data), spec)
    # the verdict comes first, and says what the independent checker says
    assert page.index('id="verdict"') < page.index('id="levels"')
    check = bl.check(result.data, spec)
    assert check.passed and "PASSED" in page
    assert f"{result.suppressed:,} (" in page
    for column, level in result.levels.items():
        assert re.search(rf"<td>{column}</td><td>{level} of ", page)
    # the risk table: the same figures as bl.risk on the input and on the release
    before = bl.risk(str(data), list(spec.quasi_identifiers))
    after = bl.risk(result.data, list(spec.quasi_identifiers))
    row = re.search(r"<td>sample uniques</td><td>([\d,]+)</td><td>([\d,]+)</td>", page)
    assert row.groups() == (f"{before.sample_uniques:,}", f"{after.sample_uniques:,}")
    for label, pick in (("highest prosecutor risk", lambda r: r.prosecutor.highest),
                        ("average prosecutor risk", lambda r: r.prosecutor.average),
                        ("marketer risk", lambda r: r.marketer)):
        assert (f"<td>{label}</td><td>{100 * pick(before):.1f}%</td>"
                f"<td>{100 * pick(after):.1f}%</td>") in page
    # the linking attack with the voter list: everyone hidden after, many found before
    attack = re.search(r"re-identified \(match exactly 1 record\)</td><td>([\d,]+)</td>"
                       r"<td>([\d,]+)</td>", page)
    patients, voters = bl.datasets.linking_tables(1000, 3000, seed=0)
    on = [q for q in spec.quasi_identifiers if q in voters.columns]
    naive = bl.attack(patients.drop(columns=["name", "ssn"]), voters, on=on)
    assert attack.group(1) == f"{naive.reidentified:,}" and attack.group(2) == "0"
    written = tmp_path / "release.csv"
    result.write(written)
    assert same_rows(written.read_bytes(), release)  # each run shuffles its rows


def test_upload_limit_refuses_a_2gb_upload_clearly_and_takes_100mb(app, tmp_path):
    # a real server: the refusal is sent before the 2 GB body is read
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        import httpx

        base = f"http://127.0.0.1:{port}"
        sid = httpx.get(base + "/", follow_redirects=True).url.path.rstrip("/")
        with socket.create_connection(("127.0.0.1", port)) as raw:
            raw.sendall((f"POST {sid}/load/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         "Content-Type: multipart/form-data; boundary=b\r\n"
                         f"Content-Length: {2 * 1024 ** 3}\r\n\r\n--b\r\n").encode())
            answer = b""
            while chunk := raw.recv(65536):
                answer += chunk
            answer = answer.decode()
        assert answer.startswith("HTTP/1.1 413")
        assert "the upload is 2.0 GB, above the limit of 150.0 MB" in answer
        assert "--max-upload" in answer

        rows = "".join(f"{i},{20 + i % 60},021{i % 50:02d},dx{i % 7}\n" for i in range(10_000))
        big = tmp_path / "big.csv"
        with big.open("wb") as handle:
            handle.write(b"id,age,zip,diagnosis\n")
            block = rows.encode()
            while handle.tell() < 100 * 1024 ** 2:
                handle.write(block)
        token = app.state.store.get(sid.rsplit("/", 1)[-1]).token
        with big.open("rb") as handle:
            response = httpx.post(base + sid + "/load/upload", files={"file": handle},
                                  data={"target": "data", "token": token}, timeout=120,
                                  follow_redirects=True)
        assert response.status_code == 200, response.text[:500]
        records = re.search(r'id="records">([\d,]+)<', response.text).group(1)
        lines = big.read_bytes().count(b"\n") - 1
        assert records == f"{lines:,}"
    finally:
        server.should_exit = True
        thread.join(10)


def test_each_session_has_its_own_private_folder_removed_at_close(app):
    store = app.state.store
    with _client(app) as client:
        first, second = _session(client), _session(client)
        assert first != second
        client.post(f"{first}/load/sample", data={"sample": "people"})
        assert "people.csv" in client.get(f"{first}/").text
        assert "people.csv" not in client.get(f"{second}/").text
        folder = store.sessions[first.rsplit("/", 1)[-1]].folder
        assert folder.is_dir() and oct(folder.stat().st_mode & 0o777) == "0o700"
        assert folder.parent == store.root
        assert oct(store.root.stat().st_mode & 0o777) == "0o700"
    assert not folder.parent.exists()  # the lifespan closed the store


def test_invalid_choices_are_explained_before_running(app):
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        # l above the number of diagnoses: the model says so, in the spec's words
        form = {"m0:k": "5", "m1:attribute": "diagnosis", "m1:l": "99", "action": "save",
                "max_suppression": "0.05"}
        page = html.unescape(client.post(f"{sid}/models", data=form).text)
        assert "Cannot run yet: distinct-l-diversity: l = 99 but 'diagnosis' has only" in page
        form.update({"m1:l": "2", "max_suppression": "2"})
        page = client.post(f"{sid}/models", data=form).text
        assert "max_suppression must be a fraction between 0 and 1" in page
        form.update({"max_suppression": "0.05", "action": "run", "algorithm": "mondrian"})
        client.post(f"{sid}/models", data=form)
        session = _wait(app, sid)
        assert session.job.error is None
        # a Mondrian release has no levels to save: no solution link
        page = client.get(f"{sid}/").text
        assert "download/solution" not in page and "download/spec" in page


def test_models_and_algorithms_come_from_the_library(monkeypatch, app):
    from blendin import models, spec

    class Fake(bl.KAnonymity):
        """A model added to the registry."""

    monkeypatch.setitem(models.MODELS, "fake-model", (Fake, ("k", "beta"), ()))
    monkeypatch.setattr(spec, "ALGORITHMS", (*spec.ALGORITHMS, "auto"))
    catalog = workflow.model_catalog()
    assert catalog["fake-model"]["required"] == ("k", "beta")
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        page = client.get(f"{sid}/").text
        assert "<option>fake-model</option>" in page and "<option >auto</option>" in page
        client.post(f"{sid}/models", data={"action": "add", "new_model": "fake-model"})
        page = client.get(f"{sid}/").text
        assert 'name="m2:beta"' in page


def test_hierarchy_preview_shows_the_levels_of_the_real_values(app):
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        html = client.post(f"{sid}/hierarchy/zip", data={"kind": "masking", "masking": ""},
                           headers={"HX-Request": "true"}).text
        assert "6 levels over 24 distinct values" in html
        assert re.search(r"<td>021\d\d</td><td>021\d\*</td><td>021\*\*</td>", html)
        html = client.post(f"{sid}/hierarchy/zip", data={"kind": "intervals", "intervals": "x"},
                           headers={"HX-Request": "true"}).text
        assert 'class="error"' in html


def test_profile_suggests_roles_with_reasons():
    table = bl.to_arrow(bl.datasets.hospital(300, seed=4))
    columns = {c.name: c for c in profile.profile(table)}
    assert columns["ssn"].role == "identifier"
    assert columns["dob"].role == "quasi-identifier"
    assert columns["dob"].reason == "date of birth: quasi-identifier"
    assert columns["zip"].kind == "code" and columns["zip"].hierarchy == {"masking": True}
    assert columns["diagnosis"].role == "sensitive"
    # the unique share is the share of records whose value occurs once
    counts = table.column("dob").to_pandas().value_counts()
    assert columns["dob"].unique_share == pytest.approx((counts == 1).sum() / table.num_rows)
    assert columns["dob"].distinct == len(counts)


def test_builder_tables_read_back_as_the_spec_reads_them():
    for kind, fields in (("intervals", {"intervals": "5, 10", "bottom": "0"}),
                         ("masking", {"masking": "5", "char": "#"}),
                         ("dates", {"dates": "month, year", "format": "%Y-%m-%d"}),
                         ("tree", {"tree": '{"a": ["x", "y"]}'}), ("flat", {})):
        table = workflow.builder_table(kind, fields)
        assert bl.builder_from_toml(table).to_toml() == table
        assert workflow.builder_table(*workflow.builder_fields(table)) == table


def test_cli_refuses_a_missing_file_and_warns_off_loopback(monkeypatch):
    from blendin.cli import main

    result = CliRunner().invoke(main, ["app", "nope.csv", "--no-browser"])
    assert result.exit_code == 2
    assert "file 'nope.csv' does not exist" in result.output

    ran = {}

    def fake_run(self, sockets):
        ran["port"] = sockets[0].getsockname()[1]
        raise KeyboardInterrupt

    monkeypatch.setattr(uvicorn.Server, "run", fake_run)
    result = CliRunner().invoke(main, ["app", "--no-browser", "--host", "0.0.0.0"])
    assert result.exit_code == 0, result.output
    assert "warning: listening on 0.0.0.0" in result.output
    assert f":{ran['port']}/" in result.output and "stopped" in result.output
    foreign = CliRunner().invoke(main, ["app", "--no-browser", "--host", "999.1.1.1"])
    assert foreign.exit_code == 2 and "give --host an address of this machine" in \
        foreign.output
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = CliRunner().invoke(main, ["app", "--no-browser", "--port",
                                         str(taken.getsockname()[1])])
    assert busy.exit_code == 2 and "choose another --port" in busy.output


def test_encoding_and_delimiter_chosen_on_upload_go_into_the_spec(app):
    rows = "city;diagnosis\n" + "".join(f"{c};d{i % 3}\n" for i, c in
                                        enumerate(["Zürich", "Genève", "Köln"] * 4))
    with _client(app) as client:
        sid = _session(client)
        response = client.post(f"{sid}/load/upload", files={"file": ("t.csv", rows.encode(
            "latin-1"))}, data={"target": "data", "encoding": "latin-1", "delimiter": ";"})
        assert "Zürich" in response.text
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        session.roles["city"] = "quasi-identifier"
        toml = workflow.build_spec(session).to_toml()
    assert '[input]\ndelimiter = ";"\nencoding = "latin-1"' in toml


def test_a_file_read_wrongly_is_fixed_with_the_load_forms_fields(app):
    """The CLI's fix names --encoding and --delimiter; the page has fields for them."""
    latin = "city;diagnosis\n" + "Zürich;d1\n" * 5
    ragged = "a,b\n1,2\n1,2,3\n"
    with _client(app) as client:
        sid = _session(client)
        for rows, encoding, said in [(latin.encode("latin-1"), "", "latin-1 in the encoding "
                                      "field"), (ragged.encode(), "", "set the delimiter "
                                                 "field")]:
            page = client.post(f"{sid}/load/upload", files={"file": ("t.csv", rows)},
                               data={"target": "data", "encoding": encoding})
            text = html.unescape(page.text)
            assert said in text and "--encoding" not in text and "--delimiter" not in text


def test_new_anonymization_keys_of_the_spec_get_a_field(monkeypatch, app):
    from blendin import spec

    keys = (*spec.SECTIONS["anonymization"], "budget")
    monkeypatch.setitem(spec.SECTIONS, "anonymization", keys)
    assert "budget" in workflow.choices()["extra_limits"]
    assert workflow.choices()["switches"] == ("relaxed", "sets", "recode_suppressed")
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        client.post(f"{sid}/models", data={"budget": "500", "sets": "1", "action": "save"})
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        assert session.limits["budget"] == 500 and session.limits["sets"] is True
        assert 'name="budget" value="500"' in client.get(f"{sid}/").text


def _visits_file(folder, rows: int):
    """A CSV file of ``rows`` visits (age, sex, diagnosis) in ``folder``."""
    data = folder / "visits.csv"
    data.write_text("age,sex,diagnosis\n" + "".join(
        f"{20 + i % 40},{'fm'[i % 2]},d{i % 4}\n" for i in range(rows)))
    return data


def test_a_file_given_on_the_command_line_is_in_every_new_page(tmp_path):
    data = _visits_file(tmp_path, 200)
    app = create_app(data)
    with _client(app) as client:
        for _ in range(2):
            page = client.get("/").text
            assert "visits.csv" in page and 'id="records">200<' in page


def test_an_arx_hierarchy_file_is_used_and_named_in_the_spec(app, tmp_path):
    with _client(app) as client:
        sid = _hospital_with_marital_file(client)
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        assert session.hierarchies["marital_status"] == {
            "csv": "hierarchies/marital_status.csv"}
        spec = workflow.build_spec(session)
        html = client.post(f"{sid}/hierarchy/marital_status", data={"kind": "csv"},
                           headers={"HX-Request": "true"}).text
    assert 'marital_status = { csv = "hierarchies/marital_status.csv" }' in spec.to_toml()
    assert "<td>Divorced</td><td>Has married</td><td>*</td>" in html


@pytest.mark.parametrize("suffix", [".xlsx", ".parquet"])
def test_excel_and_parquet_uploads(app, tmp_path, suffix):
    frame = bl.datasets.hospital(60, seed=2)
    path = tmp_path / f"visits{suffix}"
    bl.write_table(bl.to_arrow(frame), path)
    with _client(app) as client:
        sid = _session(client)
        page = client.post(f"{sid}/load/upload", files={"file": (path.name, path.read_bytes())},
                           data={"target": "data"}).text
        assert 'id="records">60<' in page
        # Excel becomes CSV (the file the spec applies to), offered for download
        assert ("/input/data" in page) == (suffix == ".xlsx")
        assert frame.zip.iloc[0] in page  # leading zeros kept: values are text


def test_an_unexpected_error_names_only_its_type(monkeypatch, app):
    def broken(session):
        raise RuntimeError("patient Jane Doe, 1961-07-31")

    monkeypatch.setattr("blendin.app.views._spec_problem", broken)
    with _client(app, raise_server_exceptions=False) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "people"})
        response = client.get(f"{sid}/")
    assert response.status_code == 500
    assert "RuntimeError" in response.text and "Jane" not in response.text


def test_tradeoff_points_are_the_releases_of_each_k(app):
    from blendin.app.state import Job

    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        client.post(f"{sid}/models", data={"m0:k": "5", "m1:attribute": "diagnosis",
                                           "m1:l": "2", "max_suppression": "0.05",
                                           "action": "run"})
        session = _wait(app, sid)
        run = session.runs[-1]
        workflow.tradeoff(session, run, Job("trade-off"))
        page = client.get(f"{sid}/").text
        assert [p["k"] for p in run.tradeoff] == list(workflow.TRADEOFF_KS)
        for point in run.tradeoff[::3]:
            spec = bl.Spec.from_dict(run.spec.to_dict(), base_dir=session.folder)
            spec.models = [bl.KAnonymity(point["k"]), *spec.models[1:]]
            result = bl.anonymize(str(session.data.path), spec)
            assert point["loss"] == pytest.approx(result.utility["loss"])
            assert point["suppressed"] == pytest.approx(result.suppressed / result.records)
            assert f"<td>{point['k']}</td><td>{100 * point['loss']:.1f}%</td>" in page


def test_a_column_name_with_a_slash_gets_its_hierarchy(app):
    rows = "ward/bed,age group,diagnosis\n" + "".join(
        f"w{i % 3}/b{i % 5},{20 + i % 7},d{i % 3}\n" for i in range(60))
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/upload", files={"file": ("t.csv", rows.encode())},
                    data={"target": "data"})
        for column in ("ward/bed", "age group"):
            html = client.post(f"{sid}/hierarchy/{quote(column)}",
                               data={"kind": "flat"}, headers={"HX-Request": "true"}).text
            assert "2 levels over" in html, (column, html[:300])
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        assert session.hierarchies["ward/bed"] == {"flat": True}


def test_a_person_key_chosen_in_the_page_counts_people(app, tmp_path):
    """A visits table: the role "person key" makes every class count patients, and the
    risk after is measured in people (a patient with three visits is one)."""
    rows = ["patient,age,sex,ward"]
    for i in range(30):
        for visit in range(1 + i % 3):
            rows.append(f"p{i},{30 + i % 2},{'fm'[i % 2]},{'ab'[visit % 2]}")
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/upload", files={"file": ("visits.csv",
                                                           "\n".join(rows).encode())},
                    data={"target": "data"})
        client.post(f"{sid}/roles", data={"role:patient": "person key",
                                          "role:age": "quasi-identifier",
                                          "role:sex": "quasi-identifier",
                                          "role:ward": "insensitive"})
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        assert session.roles["patient"] == "person key"
        assert 'person = "patient"' in workflow.build_spec(session).to_toml()
        assert client.post(f"{sid}/models", data={"m0:k": "5", "action": "run"}
                           ).status_code == 200
        session = _wait(app, sid)
        assert session.job.error is None
        record = session.runs[-1]
        assert record.result.people["people"] == 30
        assert record.risk_before.records == 30 and record.risk_after.records == 30
        assert record.risk_after.sizes.min() >= 5
        session.roles["ward"] = "person key"
        with pytest.raises(bl.BlendinError, match="2 columns are the person key"):
            workflow.build_spec(session)


def test_results_show_what_the_release_keeps_before_what_was_lost(app, tmp_path):
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        form = {"m0:k": "5", "m1:attribute": "diagnosis", "m1:l": "2",
                "max_suppression": "0.05", "action": "run"}
        client.post(f"{sid}/models", data=form)
        session = _wait(app, sid)
        assert session.job.error is None
        page = html.unescape(client.get(f"{sid}/").text)
        data = tmp_path / "hospital.csv"
        data.write_bytes(client.get(f"{sid}/input/data").content)
        (tmp_path / "spec.toml").write_text(client.get(f"{sid}/run/1/download/spec").text)
        release = tmp_path / "release.csv"
        release.write_bytes(client.get(f"{sid}/run/1/download/.csv").content)
    spec = bl.Spec.from_toml(tmp_path / "spec.toml")
    report = bl.utility(str(data), str(release), spec)
    for column in report.columns:
        assert f"<li>{column.line()}</li>" in page
    for d in report.distributions:
        assert f'<figure id="distribution-{d.name}">' in page
    quality = page[page.index('id="quality"'):page.index('id="losses"')]
    assert f"<td>discernibility</td><td>{report.table['discernibility']:.4g}</td>" in quality
    losses = page[page.index('id="losses"'):]
    result = bl.anonymize(str(data), spec)
    for name, value in result.utility.items():
        shown = f"{round(value):,}" if value >= 1000 else f"{value:.4g}"
        assert re.search(rf"<td>{name}</td><td>{shown}</td><td>lower</td>"
                         r"<td class=\"small\">\w", losses), name
    assert page.index('id="keeps-columns"') < page.index('id="losses"')


def test_the_tradeoff_predicts_a_column_on_each_release(app):
    from blendin.app.state import Job

    with _client(app) as client:
        sid, session = _hospital_run(app, client, k=5, max_suppression=0.05)
        run = session.runs[-1]
        assert "ethnicity" not in workflow.target_columns(session, run.spec)  # a QI
        workflow.tradeoff(session, run, Job("trade-off"), target="diagnosis")
        page = html.unescape(client.get(f"{sid}/").text)
        with pytest.raises(bl.BlendinError, match="cannot predict 'zip'"):
            workflow.tradeoff(session, run, Job("trade-off"), target="zip")
        assert "accuracy predicting diagnosis" in page and 'class="acc"' in page
        point = run.tradeoff[2]
        spec = bl.Spec.from_dict(run.spec.to_dict(), base_dir=session.folder)
        spec.models = [bl.KAnonymity(point["k"])]
        data = str(session.data.path)
        found = bl.utility(data, bl.anonymize(data, spec).data, spec, target="diagnosis",
                           models=["logistic regression"], sample=10_000).classification
    assert point["accuracy"] == pytest.approx(found.released["logistic regression"].accuracy)
    assert point["input_accuracy"] == pytest.approx(
        found.original["logistic regression"].accuracy)
    assert f"<td>{point['k']}</td>" in page and f"{100 * point['accuracy']:.1f}%" in page


def test_the_release_card_and_the_labels_are_the_releases(app, tmp_path):
    with _client(app) as client:
        sid, session = _hospital_run(app, client, k=10, max_suppression=0.05)
        assert session.job.error is None
        page = html.unescape(client.get(f"{sid}/").text)
        data = tmp_path / "hospital.csv"
        data.write_bytes(client.get(f"{sid}/input/data").content)
        (tmp_path / "spec.toml").write_text(client.get(f"{sid}/run/1/download/spec").text)
    result = bl.anonymize(str(data), bl.Spec.from_toml(tmp_path / "spec.toml"))
    assert (f'id="records">{result.records:,} in the input, {len(result.data):,} released'
            in page)
    for column in result.levels:
        shown = sorted({str(v) for v in result.table.column(column).to_pylist()})
        row = re.search(rf"<td>{re.escape(column)}</td><td>[^<]*</td><td>[^<]*</td>"
                        r"<td>[\d,]+ → ([\d,]+)</td><td class=\"small\">([^<]*)</td>", page)
        assert row.group(1) == f"{len(shown):,}", column
        labels = row.group(2)
        if len(shown) > 4:
            assert labels.endswith(f"({len(shown)} in all)")
        else:
            assert sorted(labels.split(", ")) == sorted(shown), column


def test_a_project_bundle_is_run_by_the_cli_and_loaded_back(app, tmp_path):
    import zipfile

    rows = MARITAL_ROWS
    with _client(app) as client:
        sid = _hospital_with_marital_file(client)
        client.post(f"{sid}/models", data={"m0:k": "4", "max_suppression": "0.04",
                                           "action": "run"})
        session = _wait(app, sid)
        assert session.job.error is None
        bundle = tmp_path / "project.zip"
        bundle.write_bytes(client.get(f"{sid}/run/1/download/project").content)
        data = tmp_path / "hospital.csv"
        data.write_bytes(client.get(f"{sid}/input/data").content)
        release = client.get(f"{sid}/run/1/download/.csv").content
        first = workflow.build_spec(session).to_toml()
        # a new page: the same table, then the project
        other = _session(client)
        client.post(f"{other}/load/sample", data={"sample": "hospital"})
        loaded = client.post(f"{other}/load/project",
                             files=[("files", ("project.zip", bundle.read_bytes()))])
        assert loaded.status_code == 200 and "project loaded: 5 quasi-identifiers" in \
            html.unescape(loaded.text)
        again = app.state.store.sessions[other.rsplit("/", 1)[-1]]
        assert workflow.build_spec(again).to_toml() == first
        # a spec with the hierarchy file it names, uploaded beside it
        spec_text = zipfile.ZipFile(bundle).read("spec.toml")
        third = _session(client)
        client.post(f"{third}/load/sample", data={"sample": "hospital"})
        client.post(f"{third}/load/project", files=[
            ("files", ("spec.toml", spec_text)), ("files", ("marital_status.csv", rows))])
        assert workflow.build_spec(app.state.store.sessions[third.rsplit("/", 1)[-1]]) \
            .to_toml() == first
        missing = _session(client)
        client.post(f"{missing}/load/sample", data={"sample": "hospital"})
        refused = html.unescape(client.post(f"{missing}/load/project", files=[
            ("files", ("spec.toml", spec_text))]).text)
        assert "hierarchy file 'hierarchies/marital_status.csv', which was not given" \
            in refused
    names = sorted(zipfile.ZipFile(bundle).namelist())
    assert names == ["hierarchies/marital_status.csv", "report.html", "solution.json",
                     "spec.toml"]
    assert b'csv = "hierarchies/marital_status.csv"' in spec_text
    out = tmp_path / "release.csv"
    run = CliRunner().invoke(bl_main(), ["anonymize", str(data), "--spec", str(bundle),
                                         "-o", str(out)])
    assert run.exit_code == 0, run.output
    assert same_rows(out.read_bytes(), release)


def bl_main():
    from blendin.cli import main

    return main


def test_a_project_with_hierarchical_t_closeness_runs_in_the_app(app, tmp_path):
    """A spec's hierarchical t-closeness names its hierarchy in the model's table: the app
    left the file in the project's folder, dropped it from the model at the first post of
    the page, and checked the model without it ("none is given"): nothing ran."""
    import io
    import zipfile

    spec = """[attributes]
identifiers = ["name", "ssn"]
sensitive = ["diagnosis"]
[quasi_identifiers]
sex = { flat = true }
zip = { masking = 5 }
[[privacy]]
model = "k-anonymity"
k = 3
[[privacy]]
model = "t-closeness"
attribute = "diagnosis"
t = 0.6
distance = "hierarchical"
hierarchy = { csv = "hierarchies/dx.csv" }
[anonymization]
max_suppression = 0.5
"""
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        values = sorted(set(session.data.table.column("diagnosis").to_pylist()))
        rows = "\n".join(f"{v};{'a' if i % 2 else 'b'};*" for i, v in enumerate(values))
        bundle = io.BytesIO()
        with zipfile.ZipFile(bundle, "w") as z:
            z.writestr("spec.toml", spec)
            z.writestr("hierarchies/dx.csv", rows)
        loaded = html.unescape(client.post(f"{sid}/load/project", files=[
            ("files", ("p.zip", bundle.getvalue()))]).text)
        assert "project loaded" in loaded
        client.post(f"{sid}/models", data={"m0:k": "3", "m1:t": "0.6",
                                           "max_suppression": "0.5", "action": "run"})
        session = _wait(app, sid)
        assert session.job.error is None
        result = session.runs[-1].result
        assert result.check.passed
        assert any("hierarchical" in m.name for m in result.check.models)
        again = tmp_path / "again.zip"
        again.write_bytes(client.get(f"{sid}/run/1/download/project").content)
    assert "hierarchies/diagnosis_hierarchy.csv" in zipfile.ZipFile(again).namelist()
    assert bl.Spec.from_toml(again).to_dict()["privacy"][1]["hierarchy"] == {
        "csv": "hierarchies/diagnosis_hierarchy.csv"}


def test_a_project_with_a_population_table_runs_in_the_app_and_its_bundle(app, tmp_path):
    """k-map's population table is named relative to the spec's folder: the app loaded
    the project, then looked for the table in the session's folder and the run failed
    there; the project's download left it out, so neither the CLI nor the app ran it."""
    import zipfile

    spec = """[attributes]
identifiers = ["name", "ssn"]
sensitive = ["diagnosis"]
[quasi_identifiers]
sex = { flat = true }
zip = { masking = 5 }
[[privacy]]
model = "k-map"
k = 3
population = "people.csv"
[anonymization]
max_suppression = 0.5
"""
    town = bl.datasets.hospital(3000, seed=1)[["zip", "sex"]].to_csv(index=False).encode()
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        loaded = html.unescape(client.post(f"{sid}/load/project", files=[
            ("files", ("spec.toml", spec.encode())), ("files", ("people.csv", town))]).text)
        assert "project loaded" in loaded
        client.post(f"{sid}/models", data={"m0:k": "3", "max_suppression": "0.5",
                                           "action": "run"})
        session = _wait(app, sid)
        assert session.job.error is None and session.runs[-1].result.check.passed
        bundle = tmp_path / "project.zip"
        bundle.write_bytes(client.get(f"{sid}/run/1/download/project").content)
        data = tmp_path / "hospital.csv"
        data.write_bytes(client.get(f"{sid}/input/data").content)
        again = _session(client)
        client.post(f"{again}/load/sample", data={"sample": "hospital"})
        loaded = html.unescape(client.post(f"{again}/load/project", files=[
            ("files", ("project.zip", bundle.read_bytes()))]).text)
        assert "project loaded" in loaded
        client.post(f"{again}/models", data={"m0:k": "3", "max_suppression": "0.5",
                                             "action": "run"})
        assert _wait(app, again).job.error is None
        missing = _session(client)
        client.post(f"{missing}/load/sample", data={"sample": "hospital"})
        refused = html.unescape(client.post(f"{missing}/load/project", files=[
            ("files", ("spec.toml", spec.encode()))]).text)
        assert "population table 'people.csv', which was not given" in refused
    assert "populations/people.csv" in zipfile.ZipFile(bundle).namelist()
    run = CliRunner().invoke(bl_main(), ["anonymize", str(data), "--spec", str(bundle),
                                         "-o", str(tmp_path / "r.csv")])
    assert run.exit_code == 0, run.output


def test_a_project_is_loaded_only_onto_a_table_and_only_from_inside_its_zip(app, tmp_path):
    import io
    import zipfile

    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("spec.toml", "")
        z.writestr("../../escape.csv", "x")
    with _client(app) as client:
        sid = _session(client)
        page = client.post(f"{sid}/load/project", files=[("files", ("p.zip",
                                                                    evil.getvalue()))]).text
        assert "load the data first" in page
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        page = client.post(f"{sid}/load/project", files=[("files", ("p.zip",
                                                                    evil.getvalue()))]).text
        assert "would land outside" in html.unescape(page)
        assert not list(session.folder.rglob("escape.csv"))
        assert not (session.folder.parent / "escape.csv").exists()
        # a spec inside the project that names a file of the machine takes none of it
        outside = tmp_path / "secret.csv"
        outside.write_text("Married;*\nDivorced;*\n")
        for named in (str(outside), "../" * 12 + str(outside).lstrip("/")):
            spec = f'[quasi_identifiers]\nmarital_status = {{ csv = "{named}" }}\n'
            page = client.post(f"{sid}/load/project", files=[
                ("files", ("spec.toml", spec.encode()))]).text
            assert "which was not given" in html.unescape(page)
            assert not list(session.folder.rglob("*.csv")) or all(
                p.read_text() != outside.read_text() for p in session.folder.rglob("*.csv"))


def test_a_tree_is_built_from_the_columns_own_values(app):
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        counts = trees.value_counts(session, "marital_status")
        # choosing the tree: every value a leaf of its own, no error, the editor drawn
        chosen = client.post(f"{sid}/hierarchy/marital_status", data={"kind": "tree"},
                             headers={"HX-Request": "true"})
        assert "error" not in chosen.text and chosen.headers["HX-Redirect"].endswith(
            "#tree-" + b"marital_status".hex())
        assert session.hierarchies["marital_status"] == {"tree": {v: {} for v in counts}}
        page = client.get(f"{sid}/").text
        assert page.count('name="items"') == len(counts)
        ever = ["Married", "Divorced", "Widowed"]
        client.post(f"{sid}/hierarchy/marital_status/tree",
                    data={"items": ever, "group": "ever married"})
        tree = session.hierarchies["marital_status"]["tree"]
        assert tree["ever married"] == {v: {} for v in ever}
        client.post(f"{sid}/hierarchy/marital_status/tree",
                    data={"items": ["ever married", "Never married"], "group": "anyone"})
        items = trees.tree_items(session, "marital_status")
        assert [(i["name"], i["records"]) for i in items] == [("anyone", sum(counts.values()))]
        spec = workflow.build_spec(session)
        built = spec.build_hierarchies(session.data.table)["marital_status"]
        assert {tuple(r) for r in built.to_rows()} == {
            ("Married", "ever married", "anyone", "*"), ("Divorced", "ever married", "anyone", "*"),
            ("Widowed", "ever married", "anyone", "*"),
            ("Never married", "Never married", "anyone", "*")}
        client.post(f"{sid}/hierarchy/marital_status/tree", data={"ungroup": "anyone"})
        assert list(session.hierarchies["marital_status"]["tree"]) == ["ever married",
                                                                      "Never married"]
        for form, said in (({"group": "x"}, "no value was ticked"),
                           ({"items": ["Never married"]}, "the new group has no name"),
                           ({"items": ["Never married"], "group": "ever married"},
                            "'ever married' is already at the top of the tree")):
            page = html.unescape(client.post(f"{sid}/hierarchy/marital_status/tree",
                                             data=form).text)
            assert said in page, said
        # the ARX file builder chosen before a file: what to do, not an error
        csv = client.post(f"{sid}/hierarchy/sex", data={"kind": "csv"},
                          headers={"HX-Request": "true"}).text
        assert "choose an ARX hierarchy file" in csv and "error" not in csv


def test_a_column_with_too_many_values_gets_no_tree_editor(app, monkeypatch):
    monkeypatch.setattr(trees, "TREE_VALUES", 3)
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        answer = client.post(f"{sid}/hierarchy/ethnicity", data={"kind": "tree"},
                             headers={"HX-Request": "true"}).text
    assert "more than 3 distinct values" in answer and "error" not in answer


def test_the_release_beside_the_input(app):
    with _client(app) as client:
        sid, session = _hospital_run(app, client, k=5, max_suppression=0.05)
        result = session.runs[-1].result
        pages = {show: html.unescape(client.get(f"{sid}/?show={show}").text)
                 for show in ("all", "small", "suppressed")}
        second = html.unescape(client.get(f"{sid}/?show=all&page=2").text)
        table = session.data.table
    qis = list(result.spec.quasi_identifiers)
    released = Counter(tuple(str(v) for v in row) for row in zip(
        *(result.table.column(q).to_pylist() for q in qis)))

    def rows(page):
        body = page[page.index('id="beside-table"'):]
        body = body[:body.index("</table>")]
        return [re.findall(r"<td[^>]*>([^<]*)</td>", r)
                for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body)[1:]]

    assert "ssn" not in pages["all"][pages["all"].index('id="beside"'):].split("</table>")[0]
    for page in (pages["all"], second):
        for cells in rows(page):
            number = int(cells[0]) - 1
            given = [str(table.column(q)[number].as_py()) for q in qis]
            assert cells[1:1 + len(qis)] == given
            shown = tuple(cells[2 + len(qis):2 + 2 * len(qis)])
            if cells[-1] == "suppressed":
                assert set(shown) == {"*"}
            else:  # a released tuple, of a class as large as the release says
                assert released[shown] == int(cells[-1].replace(",", ""))
    assert rows(second)[0][0] == "51"
    sizes = [int(c[-1].replace(",", "")) for c in rows(pages["small"])]
    assert sizes == sorted(sizes) and sizes[0] == min(released.values())
    runs = [tuple(c[2 + len(qis):2 + 2 * len(qis)]) for c in rows(pages["small"])]
    starts = [t for i, t in enumerate(runs) if i == 0 or runs[i - 1] != t]
    assert len(starts) == len(set(starts))  # each class in one run of rows
    suppressed = rows(pages["suppressed"])
    assert len(suppressed) == min(result.suppressed, 50)
    assert all(c[-1] == "suppressed" for c in suppressed)


def test_a_project_with_cells_and_transforms_keeps_them_in_the_app(app, tmp_path):
    spec_text = """
[attributes]
identifiers = ["name", "ssn"]
sensitive = ["diagnosis"]

[quasi_identifiers]
zip = { masking = 5 }
sex = { flat = true }
dob = { dates = ["year", "decade"] }
ethnicity = { pram = { pd = 0.7, seed = 3 } }

[transform]
marital_status = { pram = { pd = 0.9 } }

[[privacy]]
model = "k-anonymity"
k = 3

[anonymization]
max_suppression = 0.3
suppression = "cells"
cell_priority = ["sex", "zip"]
"""
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        loaded = html.unescape(client.post(f"{sid}/load/project", files=[
            ("files", ("spec.toml", spec_text.encode()))]).text)
        assert "Kept as written (the page has no fields for them): ethnicity (pram), " \
               "marital_status (pram)" in loaded
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        page = html.unescape(client.get(f"{sid}/").text)
        assert 'id="carried"' in page and 'value="sex, zip"' in page
        built = workflow.build_spec(session)
        assert built.to_dict() == bl.Spec.from_dict(
            tomllib.loads(spec_text)).to_dict()
        client.post(f"{sid}/models", data={"m0:k": "3", "max_suppression": "0.3",
                                           "suppression": "cells",
                                           "cell_priority": "sex, zip", "action": "run"})
        session = _wait(app, sid)
        assert session.job.error is None
        run = session.runs[-1]
        assert run.result.cells is not None and run.result.check.passed
        assert [a.columns for a in run.result.transformed] == [("ethnicity",),
                                                               ("marital_status",)]
        shown = html.unescape(client.get(f"{sid}/").text)
        blanked = sum(run.result.cells.values())
        assert f'id="cells">{blanked:,} (' in shown and "PRAM: marital_status" in shown


def test_a_run_ends_on_its_own_table_when_another_is_loaded_meanwhile(app, monkeypatch):
    # a run of the hospital sample still going on when the people sample is loaded must not
    # become run 1 of the people table (shown, and downloaded, under its name)
    loaded = threading.Event()
    anonymize = workflow.anonymize

    def slow(data, spec, progress=None):
        assert loaded.wait(30)
        return anonymize(data, spec)  # (deaf to Cancel: it ends all the same)

    monkeypatch.setattr(workflow, "anonymize", slow)
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        client.post(f"{sid}/models", data={"m0:k": "5", "action": "run"})
        client.post(f"{sid}/load/sample", data={"sample": "people"})
        loaded.set()
        session = _wait(app, sid)
        assert session.runs == []
        assert "hospital.csv was dropped" in session.job.error
        page = client.get(f"{sid}/").text
        assert 'id="results"' not in page and "hospital.csv was dropped" in page
        download = client.get(f"{sid}/run/1/download/.csv", follow_redirects=False)
        assert download.status_code == 303  # no run 1 of people.csv


def test_distinct_values_before_count_a_missing_value_as_the_release_does(app, tmp_path):
    # a Parquet column with nulls: the release shows them as a value of their own, so the
    # input's count holds it too (else sex at level 0 would read "2 -> 3")
    import pyarrow as pa

    path = tmp_path / "visits.parquet"
    bl.write_table(pa.table({"sex": ["F", "M", None] * 20,
                             "diagnosis": ["flu", "cold", "ok", "hiv"] * 15}), path)
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/upload", files={"file": (path.name, path.read_bytes())},
                    data={"target": "data"})
        client.post(f"{sid}/roles", data={"role:sex": "quasi-identifier",
                                          "role:diagnosis": "insensitive"})
        app.state.store.sessions[sid.rsplit('/', 1)[-1]].models = [{"model": "k-anonymity", "k": 2}]
        client.post(f"{sid}/run")
        session = _wait(app, sid)
        assert session.job.error is None
        page = html.unescape(client.get(f"{sid}/").text)
    assert "<td>sex</td><td>0 of 1</td><td>0.0%</td><td>3 → 3</td>" in page


def test_a_projects_input_keys_that_change_the_release_are_kept(app):
    # [input] normalize makes "HIV" and " hiv" one value for l-diversity, and missing labels
    # empty values: a project loaded into the page keeps them in every run, as the CLI would
    spec = ('[input]\nmissing = "?"\nnormalize = ["case", "space"]\n\n'
            '[attributes]\nidentifiers = ["name", "ssn"]\nsensitive = ["diagnosis"]\n\n'
            '[quasi_identifiers]\nzip = { masking = true }\nsex = { flat = true }\n\n'
            '[[privacy]]\nmodel = "distinct-l-diversity"\nattribute = "diagnosis"\nl = 2\n')
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        page = html.unescape(client.post(f"{sid}/load/project",
                                         files=[("files", ("spec.toml", spec.encode()))]).text)
        assert "[input] missing = '?', [input] normalize = ['case', 'space']" in page
        client.post(f"{sid}/run")
        session = _wait(app, sid)
        assert session.job.error is None
        written = tomllib.loads(client.get(f"{sid}/run/1/download/spec").text)
    assert written["input"] == {"missing": "?", "normalize": ["case", "space"]}
    assert session.runs[0].spec.normalize == ["case", "space"]


def test_the_linking_attack_names_the_table_it_joined(app):
    # a run's attack figures count the voters it joined: another external table loaded
    # afterwards does not lend them its name
    with _client(app) as client:
        sid, session = _hospital_run(app, client, k=5, max_suppression=0.05)
        assert session.job.error is None
        voters = client.get(f"{sid}/input/external").content.splitlines()
        other = b"\n".join(voters[:101]) + b"\n"
        client.post(f"{sid}/load/upload", files={"file": ("other.csv", other)},
                    data={"target": "external"})
        assert session.external.label == "other.csv"
        page = html.unescape(client.get(f"{sid}/").text)
    assert "<h3>Linking attack with hospital_external.csv</h3>" in page
    assert "Every figure counts the people of hospital_external.csv:" in page


def test_comparing_runs_that_are_gone_shows_the_runs_there_are(app):
    # /compare?a=3&b=4 kept in the history (Back after another table was loaded and run
    # twice) named runs that no longer exist: a 500 page
    with _client(app) as client:
        sid, _ = _hospital_run(app, client, k=5, max_suppression=0.05)
        client.post(f"{sid}/models", data={"m0:k": "3", "action": "run"})
        _wait(app, sid)
        for query in ("a=3&b=4", "a=x&b=1", "a=0&b=-1"):
            answer = client.get(f"{sid}/compare?{query}")
            assert answer.status_code == 200, query
            assert re.search(r"<th>run [12]</th><th>run [12]</th>", answer.text), query


def test_run_numbers_go_on_across_tables(app):
    # a page still open on the hospital's run 1 (another tab of the same session) must not
    # download the people table's first run as "run 1"
    with _client(app) as client:
        sid, session = _hospital_run(app, client, k=5, max_suppression=0.05)
        assert [r.number for r in session.runs] == [1]
        client.post(f"{sid}/load/sample", data={"sample": "people"})
        client.post(f"{sid}/run")
        _wait(app, sid)
        assert session.job.error is None
        assert [r.number for r in session.runs] == [2]
        stale = client.get(f"{sid}/run/1/download/.csv", follow_redirects=False)
        assert stale.status_code == 303
        assert "Results of run 2" in client.get(f"{sid}/").text


def test_a_file_named_on_the_command_line_and_edited_since_is_not_run(tmp_path):
    # the run reads the file again: edited meanwhile, it released the new rows beside the
    # old rows' preview and risk ("200 in the input" under "400 records", 385 classes before)
    data = _visits_file(tmp_path, 400)
    app = create_app(data)
    with _client(app) as client:
        sid = _session(client)
        data.write_text("".join(data.read_text().splitlines(keepends=True)[:201]))
        page = html.unescape(client.get(f"{sid}/").text)
        assert "Cannot run yet: visits.csv changed since the page loaded it" in page
        page = html.unescape(client.post(f"{sid}/models", data={"action": "run"}).text)
        assert "error: visits.csv changed since the page loaded it" in page
        assert app.state.store.get(sid.rsplit("/", 1)[-1]).job is None
        # a new page reads it anew, and runs
        sid = _session(client)
        assert 'id="records">200<' in client.get(f"{sid}/").text
        client.post(f"{sid}/models", data={"action": "run"})
        assert _wait(app, sid).job.error is None


def test_a_tree_or_a_file_is_found_again_after_another_builder_was_tried(app):
    # trying another builder in the drop-down and coming back lost the groups made by hand
    # (the editor started again from the leaves) and the ARX file chosen
    hx = {"hx-request": "true"}
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        session = app.state.store.get(sid.rsplit("/", 1)[-1])
        client.post(f"{sid}/hierarchy/marital_status", data={"kind": "tree"}, headers=hx)
        client.post(f"{sid}/hierarchy/marital_status/tree",
                    data={"items": ["Married", "Divorced", "Widowed"], "group": "Has married"})
        grouped = session.hierarchies["marital_status"]
        assert "Has married" in grouped["tree"]
        client.post(f"{sid}/hierarchy/marital_status", data={"kind": "flat"}, headers=hx)
        client.post(f"{sid}/hierarchy/marital_status", data={"kind": "tree"}, headers=hx)
        assert session.hierarchies["marital_status"] == grouped
        client.post(f"{sid}/hierarchy/ethnicity/file",
                    files={"file": ("ethnicity.csv", b"Asian;*\nBlack;*\nHispanic;*\n"
                                                     b"Other;*\nWhite;*\n")})
        chosen = session.hierarchies["ethnicity"]
        assert "csv" in chosen
        client.post(f"{sid}/hierarchy/ethnicity", data={"kind": "flat"}, headers=hx)
        answer = client.post(f"{sid}/hierarchy/ethnicity", data={"kind": "csv"}, headers=hx)
        assert "choose an ARX hierarchy file" not in answer.text
        assert session.hierarchies["ethnicity"] == chosen


@pytest.mark.parametrize("weight", ["abc", "inf", "1e400", "-1", "nan"])
def test_a_weight_that_is_no_weight_is_refused_in_place(app, weight):
    # "abc" got Python's "could not convert string to float" (with the hierarchy saved), and
    # "inf" passed the page's check ("The spec is complete") to fail only in the run
    with _client(app) as client:
        sid = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "hospital"})
        answer = html.unescape(client.post(f"{sid}/hierarchy/sex",
                                           data={"kind": "flat", "weight": weight},
                                           headers={"hx-request": "true"}).text)
        assert f"error: the weight of 'sex' must be a number >= 0, got '{weight}'" in answer
        session = app.state.store.get(sid.rsplit("/", 1)[-1])
        assert session.weights.get("sex", 1) == 1


@pytest.mark.parametrize("name", ["Post code", "post_code", "postcode", "Postal code"])
def test_a_post_code_is_suggested_as_a_quasi_identifier(name):
    # "Post code" (as spreadsheets name it) matched no rule: suggested insensitive, released
    # as it is with "no rule matched"
    table = bl.to_arrow(bl.datasets.hospital(60, seed=4)).rename_columns(
        [name if c == "zip" else c for c in bl.datasets.hospital(60, seed=4).columns])
    column = {c.name: c for c in profile.profile(table)}[name]
    assert (column.role, column.reason) == ("quasi-identifier",
                                            "place of residence: quasi-identifier")


def test_excel_date_cells_are_dates(app, tmp_path):
    # a date cell came out as "1955-01-28 00:00:00": the profile called a date of birth text
    # and gave it no dates ladder (flat: the release kept nothing of it)
    import datetime

    import pandas as pd

    path = tmp_path / "ward.xlsx"
    pd.DataFrame({"dob": [datetime.datetime(1950 + i % 30, 1 + i % 12, 1 + i % 28)
                          for i in range(60)],
                  "seen": [datetime.datetime(2024, 1, 1, 9, 30)] * 60,
                  "sex": ["f", "m"] * 30}).to_excel(path, index=False)
    with _client(app) as client:
        sid = _session(client)
        page = client.post(f"{sid}/load/upload", files={"file": (path.name, path.read_bytes())},
                           data={"target": "data"}).text
        session = app.state.store.get(sid.rsplit("/", 1)[-1])
    assert "1950-01-01" in page and "1950-01-01 00:00:00" not in page
    assert "2024-01-01 09:30:00" in page  # (a time of day is kept)
    dob = {c.name: c for c in session.data.columns}["dob"]
    assert dob.kind == "date" and "dates" in session.hierarchies["dob"]
