"""blendin's SQL engine (PostgreSQL, DuckDB) next to its floors, side by side in one run.

Run from the repository root (PostgreSQL 14+ installed; psycopg and duckdb in the venv):

    python benchmarks/bench_sql.py                              # 1M rows, 3 rounds, both
    python benchmarks/bench_sql.py --rows 1000000 10000000 --runs 1
    python benchmarks/bench_sql.py --only postgres --keep       # keep the temporary folder
    python benchmarks/bench_sql.py --pg-set enable_nestloop=off --timeout 300

The data: adult-like synthetic rows drawn with numpy (seeded, skewed like adult): age 17-90
(an integer column), sex, race, marital_status, education, native_country, workclass,
occupation and salary_class (text). The spec: the first seven are the quasi-identifiers (age
in intervals of 5, 10, 20 then *, the others flat: the value or *; 5 x 2^6 = 320 nodes, so
the search takes little time and the data path is what is measured), salary_class sensitive,
occupation insensitive; k-anonymity with k=5, at most 5% of the records suppressed.

PostgreSQL: a throwaway server (the tests', tests/postgres.py) with the settings printed in the
header (fsync and synchronous_commit off: a benchmark server need not survive a crash); the
rows are loaded once (COPY of a CSV written by pyarrow, then VACUUM ANALYZE). Each round,
after a CHECKPOINT before each step (untimed):

- ``floor``: ``CREATE TABLE floor_copy AS SELECT * FROM patients`` through psycopg (then
  dropped): what copying the table costs the server at all; ``floor, shuffled``: the same
  ``ORDER BY random()`` (blendin shuffles the released rows); ``GROUP BY``: the frequency
  table's query (the eight columns and a count), fetched. The last two are context;
- ``blendin -> table``: the whole CLI, ``blendin anonymize URL --table patients --spec s.toml
  -o URL --output-table release --force --quiet``, as a subprocess (wall time: start-up,
  the database's GROUP BY, the search, the release made and checked in the database);
- ``blendin -> Parquet``: ``blendin anonymize URL --table patients --spec s.toml -o
  export.parquet --force --quiet`` (the release streamed out of the database).

DuckDB: the same rows in a .duckdb file (table patients) and as Parquet; each round, in
alternating order, ``blendin anonymize data.duckdb --table patients ... -o data.duckdb
--output-table release --force --quiet`` and the embedded engine on the Parquet file,
``blendin anonymize rows.parquet --spec s.toml -o out.parquet --force --quiet``.

Shown: the median wall seconds over ``--runs`` rounds, the ratio to the floor (PostgreSQL)
or to the embedded engine (DuckDB), and the peak RSS of the blendin process (its own
``ru_maxrss``, printed by a wrapper at exit, the process started through ``sh`` so that the
benchmark's own memory is not counted; the PostgreSQL server's memory is not in it,
DuckDB's is, as it runs in the process). Once per database, untimed, the same commands with
``--json``: the released node (levels) must equal the embedded engine's on the same rows, and
the release table must hold every record not suppressed. Ratios, not absolute claims: every
number comes from the same machine in the same run.

A blendin run that takes longer than ``--timeout`` seconds is stopped (in PostgreSQL its
statement is ended too, by pg_terminate_backend) and shown as timed out, with the ratio the
timeout gives as a lower bound; it is not run again for that size. ``--pg-set NAME=VALUE``
adds a server setting (shown in the header): ``enable_nestloop=off`` shows what the data path
costs where the planner, without statistics on blendin's temporary tables, would otherwise
pick a nested loop over the source rows (PostgreSQL 15, blendin dc1701b: quadratic, 2 minutes
at 50,000 rows).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from postgres import throwaway_server  # noqa: E402  (the tests' throwaway server)

CHUNK = 1_000_000
SEED = 20240529

SETTINGS = {
    "shared_buffers": "1GB",
    "work_mem": "256MB",
    "maintenance_work_mem": "512MB",
    "max_wal_size": "8GB",  # no checkpoint forced by WAL volume in the middle of a step
    "fsync": "off",
    "synchronous_commit": "off",
}

# adult's values, with weights of roughly adult's shape (normalized below)
VOCABULARIES: dict[str, tuple[list[str], list[float]]] = {
    "sex": (["Male", "Female"], [67, 33]),
    "race": (["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"],
             [85, 9.5, 3, 1, 1]),
    "marital_status": (["Married-civ-spouse", "Never-married", "Divorced", "Separated",
                        "Widowed", "Married-spouse-absent", "Married-AF-spouse"],
                       [46, 33, 14, 3, 3, 1.3, 0.1]),
    "education": (["HS-grad", "Some-college", "Bachelors", "Masters", "Assoc-voc", "11th",
                   "Assoc-acdm", "10th", "7th-8th", "Prof-school", "9th", "12th",
                   "Doctorate", "5th-6th", "1st-4th", "Preschool"],
                  [32, 22, 16.5, 5.4, 4.3, 3.6, 3.3, 2.8, 2, 1.7, 1.6, 1.3, 1.2, 1, 0.5,
                   0.2]),
    "native_country": (
        ["United-States", "Mexico", "Philippines", "Germany", "Puerto-Rico", "Canada",
         "El-Salvador", "India", "Cuba", "England", "Jamaica", "South", "China", "Italy",
         "Dominican-Republic", "Vietnam", "Guatemala", "Japan", "Poland", "Columbia",
         "Taiwan", "Haiti", "Iran", "Portugal", "Nicaragua", "Peru", "Greece", "France",
         "Ecuador", "Ireland", "Hong", "Cambodia", "Trinadad&Tobago", "Thailand", "Laos",
         "Yugoslavia", "Outlying-US(Guam-USVI-etc)", "Hungary", "Honduras", "Scotland"],
        None),  # 91% United-States, the rest Zipf-like
    "workclass": (["Private", "Self-emp-not-inc", "Local-gov", "State-gov", "Self-emp-inc",
                   "Federal-gov", "Without-pay", "Never-worked"],
                  [74, 8, 6.8, 4.2, 3.5, 3, 0.4, 0.1]),
    "occupation": (["Prof-specialty", "Craft-repair", "Exec-managerial", "Adm-clerical",
                    "Sales", "Other-service", "Machine-op-inspct", "Transport-moving",
                    "Handlers-cleaners", "Farming-fishing", "Tech-support",
                    "Protective-serv", "Priv-house-serv", "Armed-Forces"],
                   [13.4, 13.3, 13.2, 12.3, 11.9, 10.7, 6.5, 5.2, 4.5, 3.3, 3, 2.1, 0.5,
                    0.1]),
    "salary_class": (["<=50K", ">50K"], [76, 24]),
}
COLUMNS = ["age", "sex", "race", "marital_status", "education", "native_country", "workclass",
           "occupation", "salary_class"]
QIS = COLUMNS[:7]
SENSITIVE = "salary_class"
SCHEMA = pa.schema([("age", pa.int32())] + [(c, pa.string()) for c in COLUMNS[1:]])

SPEC = f"""\
[attributes]
sensitive = ["{SENSITIVE}"]

[quasi_identifiers]
age = {{ intervals = [5, 10, 20] }}
""" + "".join(f"{c} = {{ flat = true }}\n" for c in QIS[1:]) + """
[[privacy]]
model = "k-anonymity"
k = 5

[anonymization]
max_suppression = 0.05
"""

# runs blendin's CLI, then prints the process's own peak RSS (KiB on Linux) to stderr
WRAPPER = """\
import resource, sys
from blendin.cli import main
try:
    main(prog_name="blendin")
finally:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"BENCH_MAXRSS_KB={rss}", file=sys.stderr, flush=True)
"""


def _weights(name: str) -> np.ndarray:
    values, weights = VOCABULARIES[name]
    if weights is None:  # native_country
        tail = 1 / np.arange(1, len(values)) ** 1.1
        weights = np.concatenate([[0.91], 0.09 * tail / tail.sum()])
    w = np.asarray(weights, dtype=float)
    return w / w.sum()


def chunk(rng: np.random.Generator, rows: int) -> pa.Table:
    ages = np.clip(np.rint(rng.normal(38.6, 13.6, rows)), 17, 90).astype(np.int32)
    arrays = [pa.array(ages)]
    for name in COLUMNS[1:]:
        codes = rng.choice(len(VOCABULARIES[name][0]), size=rows, p=_weights(name))
        arrays.append(pa.array(VOCABULARIES[name][0]).take(pa.array(codes.astype(np.int32))))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def generate(rows: int, folder: Path, csv: bool) -> tuple[Path, Path | None]:
    """rows.parquet (and rows.csv for COPY), written a million rows at a time."""
    parquet_path = folder / "rows.parquet"
    csv_path = folder / "rows.csv" if csv else None
    writer = pq.ParquetWriter(parquet_path, SCHEMA)
    csv_writer = pcsv.CSVWriter(csv_path, SCHEMA) if csv else None
    try:
        for i, start in enumerate(range(0, rows, CHUNK)):
            table = chunk(np.random.default_rng([SEED, i]), min(CHUNK, rows - start))
            writer.write_table(table)
            if csv_writer is not None:
                csv_writer.write_table(table)
    finally:
        writer.close()
        if csv_writer is not None:
            csv_writer.close()
    return parquet_path, csv_path


class TimedOut(Exception):
    """A blendin run took longer than --timeout (killed; its server backend terminated)."""


TIMEOUT = 600.0  # seconds a blendin run may take (--timeout)


def blendin(args: list[str], *, json_out: bool = False, url: str | None = None
            ) -> tuple[float, float, dict | None]:
    """Run ``blendin ARGS`` in a fresh process: wall seconds, peak RSS in MiB, --json's dict.

    Past ``TIMEOUT`` the process is killed and, with ``url``, every other backend of that
    database terminated (a statement runs on in the server after its client is gone)."""
    # through sh, which forks it: a process exec'd straight from this one would count this
    # process's peak RSS as its own (Linux keeps the exec'ing image's high-water mark)
    command = ["sh", "-c", '"$@"; exit $?', "sh", sys.executable, "-c", WRAPPER, *args]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        if url is not None:
            pg_terminate_others(url)
        raise TimedOut from None
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        shown = " ".join(re.sub(r"://([^:/@]+):[^@]+@", r"://\1:***@", a) for a in args)
        raise RuntimeError(f"blendin {shown} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    found = re.findall(r"BENCH_MAXRSS_KB=(\d+)", proc.stderr)
    mib = int(found[-1]) / 1024 if found else float("nan")
    return seconds, mib, (parse_json(proc.stdout, args) if json_out else None)


#: what --json printed besides its JSON object (shown under the tables: it should be nothing)
STRAY_OUTPUT: list[str] = []


def parse_json(stdout: str, args: list[str]) -> dict:
    """The JSON object ``--json`` printed; any other text on stdout is kept in STRAY_OUTPUT."""
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        pass
    start = stdout.find("\n{") + 1 if not stdout.startswith("{") else 0
    try:
        result, end = json.JSONDecoder().raw_decode(stdout, start)
    except json.JSONDecodeError as error:
        raise RuntimeError(f"blendin {args[1]} ... --json printed no JSON object ({error}):\n"
                           f"{stdout[:3000]}") from None
    STRAY_OUTPUT.append(f"{args[1]}: {(stdout[:start] + stdout[end:]).strip()[:500]!r}")
    return result


class Rounds:
    """The timings of one backend's steps over the rounds: seconds and blendin's peak MiB
    per step; a step that timed out is not run again."""

    def __init__(self, steps: list[str]) -> None:
        self.times: dict[str, list[float]] = {step: [] for step in steps}
        self.mib: dict[str, list[float]] = {step: [] for step in steps}
        self.timed_out: set[str] = set()

    def blendin(self, step: str, args: list[str], url: str | None = None) -> None:
        """Time ``blendin ARGS`` as ``step``."""
        try:
            seconds, peak, _ = blendin(args, url=url)
        except TimedOut:
            self.timed_out.add(step)
            return
        self.times[step].append(seconds)
        self.mib[step].append(peak)

    def say(self, backend: str, r: int) -> None:
        print(f"  {backend} round {r + 1}: " + ", ".join(
            f"{k} {v[-1]:.2f}s" if k not in self.timed_out else f"{k} timed out"
            for k, v in self.times.items() if v or k in self.timed_out),
            file=sys.stderr, flush=True)


def median(values: list[float]) -> float:
    return statistics.median(values)


def fmt_row(name: str, seconds: list[float], base: float, mib: list[float] | None,
            timed_out: bool = False) -> str:
    if timed_out and not seconds:
        return f"| {name} | > {TIMEOUT:.0f} (timed out) | > {TIMEOUT / base:.0f} | – |"
    m = median(seconds)
    peak = f"{max(mib):.0f}" if mib else "–"
    return f"| {name} | {m:.2f} | {m / base:.2f} | {peak} |"


def _levels(result: dict) -> object:
    return result.get("levels")


def _suppressed(result: dict) -> object:
    return result.get("suppressed")


# --- PostgreSQL --------------------------------------------------------------------------


def pg_load(url: str, csv_path: Path) -> float:
    import psycopg

    start = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS patients, release, release_json, floor_copy")
        conn.execute("CREATE TABLE patients (age integer, "
                     + ", ".join(f"{c} text" for c in COLUMNS[1:]) + ")")
        with conn.cursor() as cur, cur.copy(
                "COPY patients FROM STDIN WITH (FORMAT csv, HEADER true)") as copy, \
                open(csv_path, "rb") as f:
            while block := f.read(8 << 20):
                copy.write(block)
        conn.execute("VACUUM ANALYZE patients")
    return time.perf_counter() - start


def pg_timed(url: str, sql: str, fetch: bool = False, drop: str | None = None) -> float:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        start = time.perf_counter()
        cur = conn.execute(sql)
        if fetch:
            cur.fetchall()
        seconds = time.perf_counter() - start
        if drop:
            conn.execute(f"DROP TABLE {drop}")
    return seconds


def pg_drop(url: str, tables: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {tables}")


def pg_terminate_others(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                      "AND backend_type = 'client backend'")
        time.sleep(1)


def pg_checkpoint(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def bench_postgres(url: str, rows: int, folder: Path, parquet_path: Path, csv_path: Path,
                   spec: Path, runs: int, embedded: dict) -> list[str]:
    import psycopg

    load = pg_load(url, csv_path)
    qis = ", ".join([*QIS, SENSITIVE])
    floor_sql = "CREATE TABLE floor_copy AS SELECT * FROM patients"
    shuffled_sql = floor_sql + " ORDER BY random()"
    group_sql = f"SELECT {qis}, count(*) FROM patients GROUP BY {qis}"
    to_table = ["anonymize", url, "--table", "patients", "--spec", str(spec), "-o", url,
                "--output-table", "release", "--force", "--quiet"]
    to_parquet = ["anonymize", url, "--table", "patients", "--spec", str(spec), "-o",
                  str(folder / "export.parquet"), "--force", "--quiet"]
    rounds = Rounds(["floor", "shuffled", "group", "table", "parquet"])
    times, mib, timed_out = rounds.times, rounds.mib, rounds.timed_out
    for r in range(runs):
        steps = list(times)
        if r % 2:
            steps.reverse()
        for step in steps:
            if step in timed_out:
                continue
            if step == "floor":
                times[step].append(pg_timed(url, floor_sql, drop="floor_copy"))
            elif step == "shuffled":
                times[step].append(pg_timed(url, shuffled_sql, drop="floor_copy"))
            elif step == "group":
                times[step].append(pg_timed(url, group_sql, fetch=True))
            else:
                pg_checkpoint(url)
                rounds.blendin(step, to_table if step == "table" else to_parquet, url=url)
        rounds.say("postgres", r)
    base = median(times["floor"])
    table = [
        f"PostgreSQL: load (COPY of {csv_path.stat().st_size / 1e6:.0f} MB CSV + VACUUM "
        f"ANALYZE, once) {load:.1f} s",
        "",
        "| PostgreSQL | median s | / floor | peak MiB |",
        "|---|---:|---:|---:|",
        fmt_row("floor: CREATE TABLE AS SELECT *", times["floor"], base, None),
        fmt_row("floor, shuffled: ... ORDER BY random()", times["shuffled"], base, None),
        fmt_row("GROUP BY the 8 columns, fetched", times["group"], base, None),
        fmt_row("blendin -> table (whole CLI)", times["table"], base, mib["table"],
                "table" in timed_out),
        fmt_row("blendin -> Parquet (whole CLI)", times["parquet"], base, mib["parquet"],
                "parquet" in timed_out),
        "",
    ]
    if "table" in timed_out:
        return [*table, "levels: not compared (blendin -> table timed out)"]
    # the node, once, untimed
    _, _, result = blendin([*to_table[:-1], "--json"], json_out=True, url=url)
    with psycopg.connect(url, autocommit=True) as conn:
        released = conn.execute("SELECT count(*) FROM release").fetchone()[0]
    exported = (pq.ParquetFile(folder / "export.parquet").metadata.num_rows
                if (folder / "export.parquet").exists() else None)
    same = _levels(result) == _levels(embedded)
    expected = rows - result["suppressed"] if isinstance(result.get("suppressed"), int) else None
    lines = [
        *table,
        f"levels: PostgreSQL {_levels(result)}, embedded {_levels(embedded)}: "
        f"{'same' if same else 'DIFFERENT'}; suppressed {_suppressed(result)} vs "
        f"{_suppressed(embedded)}; rows in release {released:,}"
        + (f" (expected {expected:,})" if expected is not None else "")
        + (f", in export.parquet {exported:,}" if exported is not None else ""),
    ]
    return lines


# --- DuckDB ------------------------------------------------------------------------------


def bench_duckdb(rows: int, folder: Path, parquet_path: Path, spec: Path, runs: int,
                 embedded: dict) -> list[str]:
    import duckdb

    db = folder / "data.duckdb"
    db.unlink(missing_ok=True)
    start = time.perf_counter()
    with duckdb.connect(str(db)) as con:
        con.execute(f"CREATE TABLE patients AS SELECT * FROM read_parquet('{parquet_path}')")
    load = time.perf_counter() - start
    in_duckdb = ["anonymize", str(db), "--table", "patients", "--spec", str(spec), "-o", str(db),
                 "--output-table", "release", "--force", "--quiet"]
    on_parquet = ["anonymize", str(parquet_path), "--spec", str(spec), "-o",
                  str(folder / "out.parquet"), "--force", "--quiet"]
    rounds = Rounds(["embedded", "duckdb"])
    times, mib, timed_out = rounds.times, rounds.mib, rounds.timed_out
    for r in range(runs):
        steps = ["embedded", "duckdb"] if r % 2 == 0 else ["duckdb", "embedded"]
        for step in steps:
            if step not in timed_out:
                rounds.blendin(step, on_parquet if step == "embedded" else in_duckdb)
        rounds.say("duckdb", r)
    if timed_out:
        return [f"DuckDB: {', '.join(sorted(timed_out))} timed out (> {TIMEOUT:.0f} s)"]
    _, _, result = blendin([*in_duckdb[:-1], "--json"], json_out=True)
    with duckdb.connect(str(db), read_only=True) as con:
        released = con.execute("SELECT count(*) FROM release").fetchone()[0]
    base = median(times["embedded"])
    same = _levels(result) == _levels(embedded)
    return [
        f"DuckDB: load (CREATE TABLE AS SELECT * FROM read_parquet, once) {load:.1f} s; "
        f"data.duckdb {db.stat().st_size / 1e6:.0f} MB at the end, rows.parquet "
        f"{parquet_path.stat().st_size / 1e6:.0f} MB",
        "",
        "| DuckDB | median s | / embedded | peak MiB |",
        "|---|---:|---:|---:|",
        fmt_row("embedded: rows.parquet -> out.parquet", times["embedded"], base,
                mib["embedded"]),
        fmt_row("DuckDB: table -> table", times["duckdb"], base, mib["duckdb"]),
        "",
        f"levels: DuckDB {_levels(result)}, embedded {_levels(embedded)}: "
        f"{'same' if same else 'DIFFERENT'}; suppressed {_suppressed(result)} vs "
        f"{_suppressed(embedded)}; rows in release {released:,}",
    ]


# --- main --------------------------------------------------------------------------------


def pg_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SHOW server_version").fetchone()[0]


def revision() -> str:
    """blendin's commit, with ``+changes`` where src/ differs from it (or ``unknown``)."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=root, check=True,
                               capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def run_size(rows: int, args, url: str | None, version: str, settings: dict[str, str]
             ) -> None:
    folder = Path(tempfile.mkdtemp(prefix=f"bench-sql-{rows}-"))
    try:
        start = time.perf_counter()
        parquet_path, csv_path = generate(rows, folder, csv=url is not None)
        made = time.perf_counter() - start
        spec = folder / "s.toml"
        spec.write_text(SPEC)
        # the embedded engine's node on the same rows, once, untimed
        _, _, embedded = blendin(["anonymize", str(parquet_path), "--spec", str(spec), "-o",
                                  str(folder / "out.parquet"), "--force", "--json"],
                                 json_out=True)
        today = datetime.date.today().isoformat()
        header = [
            f"## blendin's SQL engine: {rows:,} adult-like rows, k=5, max suppression 5%",
            "",
            f"{today}, {platform.node() or 'this machine'}: {os.cpu_count()} cores, "
            f"{platform.machine()}, Python {platform.python_version()}, blendin {revision()}; "
            + (f"PostgreSQL {version} (" + ", ".join(f"{k}={v}" for k, v in settings.items())
               + ", max_parallel_workers_per_gather default); " if url else "")
            + f"{args.runs} round(s), alternating, medians; a blendin run is stopped after "
            f"{TIMEOUT:.0f} s; data generated in {made:.1f} s",
            "",
        ]
        print("\n".join(header), flush=True)  # each section as soon as it is measured
        if url is not None:
            lines = bench_postgres(url, rows, folder, parquet_path, csv_path, spec, args.runs,
                                   embedded)
            print("\n".join([*lines, ""]), flush=True)
            pg_drop(url, "patients, release, release_json")
        if args.only in (None, "duckdb"):
            lines = bench_duckdb(rows, folder, parquet_path, spec, args.runs, embedded)
            print("\n".join([*lines, ""]), flush=True)
        if STRAY_OUTPUT:
            print("odd: --json printed more than its JSON object: " + "; ".join(STRAY_OUTPUT),
                  flush=True)
            STRAY_OUTPUT.clear()
    finally:
        if args.keep:
            print(f"(kept {folder})", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    global TIMEOUT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--runs", type=int, default=3, help="rounds, alternating (median)")
    parser.add_argument("--only", choices=["postgres", "duckdb"])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    parser.add_argument("--timeout", type=float, default=TIMEOUT,
                        help="seconds a blendin run may take; past them it is stopped, shown "
                        "as timed out, and not run again for that size (default: %(default)s)")
    parser.add_argument("--pg-set", action="append", default=[], metavar="NAME=VALUE",
                        help="another PostgreSQL server setting (repeatable), e.g. "
                        "enable_nestloop=off; shown in the header")
    args = parser.parse_args()
    TIMEOUT = args.timeout
    settings = dict(SETTINGS)
    for item in args.pg_set:
        name, _, value = item.partition("=")
        settings[name.strip()] = value.strip()
    if args.only in (None, "postgres"):
        with throwaway_server(settings) as url:
            version = pg_version(url)
            for rows in args.rows:
                run_size(rows, args, url, version, settings)
    else:
        for rows in args.rows:
            run_size(rows, args, None, "", settings)


if __name__ == "__main__":
    main()
