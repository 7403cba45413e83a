"""The app's trust defects of issue 35: uploads that overwrite each other (item 2), a page
that answers any host name and takes forms without a token (item 11), bad upload names and
chunked uploads over the limit (item 17), and data left behind by a killed server (item 18)."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import tempfile

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

import warnings  # noqa: E402

from click.testing import CliRunner  # noqa: E402

with warnings.catch_warnings():  # starlette's notice about its httpx transport
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from test_app import _wait  # noqa: E402

from blendin.app import create_app  # noqa: E402
from blendin.app.server import parse_size  # noqa: E402

LOCAL = "http://127.0.0.1"
TOKEN = re.compile(r'name="token" value="([^"]+)"')


def _session(client: TestClient) -> tuple[str, str]:
    """A new session's address and the token its page carries ("" when it has none)."""
    response = client.get("/", follow_redirects=False)
    assert response.status_code == 303, response.text[:300]
    sid = response.headers["location"].rstrip("/")
    found = TOKEN.search(client.get(sid + "/").text)
    return sid, found.group(1) if found else ""


def _multipart(filename: str, content: bytes, boundary: str = "b0undary") -> bytes:
    """A multipart body with one file, its name as given (httpx would escape it)."""
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{filename}\"\r\nContent-Type: text/csv\r\n\r\n").encode()
    return head + content + f"\r\n--{boundary}--\r\n".encode()


def _csv(rows: int, offset: int = 0) -> bytes:
    return ("age,sex,zip,diagnosis\n" + "".join(
        f"{20 + (i + offset) % 50},{'fm'[i % 2]},021{i % 7},d{i % 3}\n" for i in range(rows))
    ).encode()


# -- item 2: every upload is its own file ---------------------------------------------------


def test_an_external_table_of_the_same_name_does_not_replace_the_data():
    from blendin.datasets import linking_tables

    patients, voters = linking_tables(200, 600, seed=0)
    data = patients.to_csv(index=False).encode()
    external = voters.head(57).to_csv(index=False).encode()
    app = create_app()
    with TestClient(app, base_url=LOCAL) as client:
        sid, token = _session(client)
        client.post(f"{sid}/load/upload", files={"file": ("t.csv", data)},
                    data={"target": "data", "token": token})
        page = client.post(f"{sid}/load/upload", files={"file": ("t.csv", external)},
                           data={"target": "external", "token": token}).text
        assert 'id="records">200<' in page and "57 records" in page
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        # each upload keeps its own bytes: the run reads the file the page shows
        assert session.data.path.read_bytes() == data
        assert session.external.path.read_bytes() == external
        client.post(f"{sid}/models", data={"action": "run", "token": token})
        session = _wait(app, sid)
        assert session.job.error is None
        assert session.runs[-1].result.records == 200
        assert session.runs[-1].attack_before.external == 57


def test_a_second_upload_of_the_same_name_leaves_the_first_tables_file_alone():
    first, second = _csv(30), _csv(40, offset=1)
    app = create_app()
    with TestClient(app, base_url=LOCAL) as client:
        sid, token = _session(client)
        client.post(f"{sid}/load/upload", files={"file": ("t.csv", first)},
                    data={"target": "data", "token": token})
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        kept = session.data
        client.post(f"{sid}/load/upload", files={"file": ("t.csv", second)},
                    data={"target": "data", "token": token})
        # a run still going on the first table reads the first table's bytes
        assert kept.path.read_bytes() == first
        assert session.data.path.read_bytes() == second
        assert session.data.path.name == "t.csv"  # the name the CLI line shows


# -- item 11: loopback host names only, and a token on every form ----------------------------


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8000",
                                  "127.0.0.1.nip.io", "localhost.attacker.example"])
def test_a_foreign_host_name_gets_400_and_no_data(tmp_path, host):
    data = tmp_path / "patients.csv"
    data.write_bytes(_csv(20))
    with TestClient(create_app(data), base_url=LOCAL) as client:
        response = client.get("/", headers={"Host": host}, follow_redirects=True)
        assert response.status_code == 400
        assert "patients.csv" not in response.text and "021" not in response.text
        assert "Fix:" in response.text and len(response.text) < 600
        sid, _ = _session(client)
        answer = client.get(f"{sid}/", headers={"Host": host})
        assert answer.status_code == 400 and "patients.csv" not in answer.text


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:41237", "localhost",
                                  "LOCALHOST:8000", "[::1]", "[::1]:41237"])
def test_loopback_host_names_are_served(tmp_path, host):
    data = tmp_path / "patients.csv"
    data.write_bytes(_csv(20))
    with TestClient(create_app(data), base_url=LOCAL) as client:
        response = client.get("/", headers={"Host": host})
        assert response.status_code == 200 and "patients.csv" in response.text


def test_the_host_the_cli_binds_is_served_too(monkeypatch):
    from blendin.cli import main

    served = {}

    def fake_run(self, sockets):
        served["app"] = self.config.app
        raise KeyboardInterrupt

    monkeypatch.setattr(uvicorn.Server, "run", fake_run)
    result = CliRunner().invoke(main, ["app", "--no-browser", "--host", "0.0.0.0"])
    assert result.exit_code == 0, result.output
    key = re.search(r"\?key=(\S+)", result.output).group(1)
    with TestClient(served["app"], base_url=LOCAL) as client:
        # bound to every address: this machine's addresses and name, no other name
        for host in ("192.0.2.7:8800", "[2001:db8::1]", "127.0.0.1"):
            entry = client.get(f"/?key={key}", headers={"Host": host}, follow_redirects=False)
            assert entry.status_code == 303, host
            assert client.get("/", headers={"Host": host}).status_code == 200, host
        assert client.get(f"/?key={key}", headers={"Host": "attacker.example"}
                          ).status_code == 400


def test_a_form_without_the_sessions_token_is_refused_with_403():
    app = create_app()
    with TestClient(app, base_url=LOCAL) as client:
        sid, token = _session(client)
        other_sid, other_token = _session(client)
        assert token and other_token and token != other_token
        for sent in ({}, {"token": "wrong"}, {"token": other_token}):
            response = client.post(f"{sid}/load/sample", data={"sample": "people", **sent})
            assert response.status_code == 403, sent
            assert "Fix: reload the page" in response.text
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        assert session.data is None  # nothing changed
        response = client.post(f"{sid}/load/upload", files={"file": ("t.csv", _csv(10))},
                               data={"target": "data"})
        assert response.status_code == 403 and session.data is None
        assert not list(session.folder.rglob("t.csv"))  # not even written
        for path in ("roles", "hierarchy/age", "models", "run", "cancel"):
            assert client.post(f"{sid}/{path}", data={}).status_code == 403, path
        # the form field or the header: both work
        ok = client.post(f"{sid}/load/sample", data={"sample": "people", "token": token})
        assert ok.status_code == 200 and session.data is not None
        ok = client.post(f"{sid}/roles", data={}, headers={"X-Blendin-Token": token})
        assert ok.status_code == 200 and "roles saved" in ok.text


def test_every_form_the_page_posts_carries_the_token():
    from blendin.app.state import Job

    app = create_app()
    with TestClient(app, base_url=LOCAL) as client:
        sid, token = _session(client)
        client.post(f"{sid}/load/sample", data={"sample": "people", "token": token})
        client.post(f"{sid}/models", data={"m0:k": "2", "max_suppression": "0.5",
                                           "action": "run", "token": token})
        session = _wait(app, sid)
        assert session.runs, session.job.error
        session.job = Job("anonymize")  # a job going on: the page shows its Cancel form
        page = client.get(f"{sid}/").text
        job = client.get(f"{sid}/job").text
    forms = re.findall(r"<form\b[^>]*>.*?</form>", page + job, flags=re.S)
    posted = [f for f in forms if 'method="post"' in f]
    actions = {re.search(r'action="([^"]+)"', f).group(1).split(sid)[-1] for f in posted}
    assert {"/load/sample", "/load/upload", "/roles", "/models", "/cancel",
            "/run/1/tradeoff"} <= actions
    for form in posted:
        assert f'name="token" value="{token}"' in form, form[:200]


# -- item 17: bad names and chunked uploads -------------------------------------------------


@pytest.mark.parametrize("name", ["..", ".", "x/..", "..\\..", "a\x01b.csv"])
def test_an_upload_with_an_unusable_name_gets_a_clear_400(name):
    app = create_app()
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        sid, token = _session(client)
        response = client.post(f"{sid}/load/upload", content=_multipart(name, _csv(5)),
                               headers={"Content-Type": "multipart/form-data; boundary=b0undary",
                                        "X-Blendin-Token": token})
        assert response.status_code == 400, response.text[:300]
        assert "cannot be used as a file name" in response.text
        assert "Fix: rename the file" in response.text
        assert client.get(f"{sid}/").status_code == 200  # the session goes on


def test_a_path_in_the_upload_name_keeps_only_its_last_part():
    app = create_app()
    with TestClient(app, base_url=LOCAL) as client:
        sid, token = _session(client)
        page = client.post(f"{sid}/load/upload",
                           files={"file": ("../../etc/t.csv", _csv(5))},
                           data={"target": "data", "token": token}).text
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        assert 'id="records">5<' in page and session.data.path.name == "t.csv"
        assert session.folder in session.data.path.parents


def test_a_chunked_upload_over_the_limit_gets_413_like_a_declared_one():
    app = create_app(upload_limit=parse_size("1KB"))
    body = _multipart("t.csv", _csv(400))
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        sid, token = _session(client)
        headers = {"Content-Type": "multipart/form-data; boundary=b0undary",
                   "X-Blendin-Token": token}
        declared = client.post(f"{sid}/load/upload", content=body, headers=headers)

        def chunks():
            for start in range(0, len(body), 500):
                yield body[start:start + 500]

        chunked = client.post(f"{sid}/load/upload", content=chunks(), headers=headers)
        assert declared.status_code == 413
        assert chunked.status_code == 413, chunked.text[:300]
        tail = "above the limit of 1.0 KB. Fix: give the file's path on the command line"
        assert tail in html.unescape(declared.text) and tail in html.unescape(chunked.text)
        assert "--max-upload" in chunked.text
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        assert session.data is None and not list(session.folder.rglob("t.csv"))
        assert client.get(f"{sid}/").status_code == 200
        # a hierarchy's upload for a column whose name holds "/" is held to the limit too
        slashed = client.post(f"{sid}/hierarchy/x/y/file", content=body, headers=headers)
        assert slashed.status_code == 413 and not list(session.folder.rglob("*.csv"))


# -- item 18: a killed server's folder is removed by the next start --------------------------


def test_the_next_start_removes_a_dead_servers_folder_only(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    with pytest.raises(ProcessLookupError):
        os.kill(dead_pid, 0)
    folders = {}
    for name, pid in (("stale", dead_pid), ("live", os.getpid()), ("unknown", None)):
        folder = tmp_path / f"blendin-app-{name}"
        (folder / "session").mkdir(parents=True, mode=0o700)
        (folder / "session" / "data.csv").write_bytes(_csv(3))
        if pid is not None:
            (folder / "pid").write_text(f"{pid}\n")
        folders[name] = folder
    app = create_app()
    with TestClient(app, base_url=LOCAL) as client:
        client.get("/")
        assert not folders["stale"].exists()  # its server was killed: its data goes
        assert folders["live"].exists()  # a live server's: never
        assert folders["unknown"].exists()  # no owner recorded: not provably dead
        root = app.state.store.root
        assert (root / "pid").read_text().split()[0] == str(os.getpid())
    assert not root.exists()


def test_an_excel_file_given_to_the_app_leaves_its_folder_as_it_was(tmp_path):
    """Its CSV copy goes into the session's private folder: a data.csv beside the Excel
    file (the user's) is neither replaced nor made."""
    import pandas as pd

    pd.DataFrame({"zip": ["02138", "02139"], "sex": ["f", "m"]}).to_excel(
        tmp_path / "patients.xlsx", index=False)
    beside = tmp_path / "patients.csv"
    beside.write_text("my,own\n1,2\n")
    with TestClient(create_app(tmp_path / "patients.xlsx"), base_url=LOCAL) as client:
        assert client.get("/").status_code == 200
    assert beside.read_text() == "my,own\n1,2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["patients.csv", "patients.xlsx"]


def test_only_a_browser_that_opened_the_printed_address_is_served(tmp_path):
    """Every user of the machine reaches a loopback port: without the key (the address
    blendin app prints) nothing is served, not even a new session of the table."""
    data = tmp_path / "patients.csv"
    data.write_bytes(_csv(20))
    app = create_app(data, key="s3cret-key")
    with TestClient(app, base_url=LOCAL) as stranger:
        for path in ("/", "/static/app.css", "/s/x/", "/?key=wrong", "/?key=%C3%A9"):
            refused = stranger.get(path, follow_redirects=False)
            assert refused.status_code == 403 and "patients" not in refused.text, path
            assert "open that address" in refused.text
        assert stranger.post("/s/x/run", data={"token": "t"}).status_code == 403
    with TestClient(app, base_url=LOCAL) as owner:
        entry = owner.get("/?key=s3cret-key", follow_redirects=False)
        assert entry.status_code == 303 and entry.headers["location"] == "/"
        assert "HttpOnly" in entry.headers["set-cookie"]
        assert "SameSite=Strict" in entry.headers["set-cookie"]
        page = owner.get("/")  # the cookie from now on; the key is no longer in the address
        assert page.status_code == 200 and "patients.csv" in page.text
        assert "s3cret-key" not in page.text


@pytest.mark.parametrize("name", ["data$(id).csv", "a b;id;.csv", "--help.csv"])
def test_the_command_to_repeat_a_release_quotes_the_files_name(name):
    """Pasted into a shell, the command names the file: it runs nothing else."""
    import shlex

    from blendin.app.workflow import script_command

    app = create_app()
    with TestClient(app, base_url=LOCAL) as client:
        sid, token = _session(client)
        client.post(f"{sid}/load/upload", files={"file": (name, _csv(5))},
                    data={"target": "data", "token": token})
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        words = shlex.split(script_command(session))
    assert words[:3] == ["blendin", "anonymize", name if not name.startswith("-")
                         else f"./{name}"]
    assert words[3] == "--spec" and words[4].endswith("_spec.toml") and len(words) == 7


def test_two_columns_named_alike_keep_a_hierarchy_file_each(tmp_path):
    data = tmp_path / "groups.csv"
    data.write_text("age group,age_group\n" + "".join(f"{a},{b}\n" for a, b in
                                                      [("a", "x"), ("b", "y")] * 5))
    app = create_app(data)
    with TestClient(app, base_url=LOCAL) as client:
        sid, token = _session(client)
        for column, rows in (("age group", "a;*\nb;*\n"), ("age_group", "x;*\ny;*\n")):
            client.post(f"{sid}/hierarchy/{column}/file", data={"token": token},
                        files={"file": ("h.csv", rows.encode())})
        session = app.state.store.sessions[sid.rsplit("/", 1)[-1]]
        files = {c: session.folder / session.hierarchies[c]["csv"]
                 for c in ("age group", "age_group")}
        assert files["age group"] != files["age_group"]
        assert files["age group"].read_text() == "a;*\nb;*\n"
        assert files["age_group"].read_text() == "x;*\ny;*\n"


def test_a_step_posted_before_any_table_is_loaded_is_sent_back_to_the_first():
    app = create_app()
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        sid, token = _session(client)
        for path, form in (("run", {}), ("models", {"action": "run"}), ("roles", {}),
                           ("hierarchy/x", {"kind": "flat"}), ("hierarchy/x/tree",
                                                               {"group": "g"})):
            sent = client.post(f"{sid}/{path}", data={"token": token, **form},
                               follow_redirects=False)
            assert sent.status_code == 303 and sent.headers["location"].endswith("#load")
            assert "no table is loaded yet" in html.unescape(client.get(f"{sid}/").text)
        client.post(f"{sid}/load/sample", data={"token": token, "sample": "hospital"})
        odd = client.post(f"{sid}/models", data={"token": token, "action": "remove:x"},
                          follow_redirects=False)
        assert odd.status_code == 303


def test_an_excel_file_that_unpacks_to_far_more_than_itself_is_refused(tmp_path):
    """A small .xlsx whose sheet unpacks to 40 MB took minutes and gigabytes to read."""
    import zipfile

    from blendin.app.workflow import read_file
    from blendin.errors import BlendinError

    bomb = tmp_path / "b.xlsx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as packed:
        packed.writestr("xl/worksheets/sheet1.xml", "<c>0</c>" * (40 << 17))
    with pytest.raises(BlendinError, match="unpacks to 40 MB of sheets") as refused:
        read_file(bomb, "b.xlsx")
    assert "save it as .csv" in refused.value.fix
