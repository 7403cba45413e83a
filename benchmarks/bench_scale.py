"""Scale: blendin end to end (input file -> written release) on adult-like tables of growing
size, embedded and on Spark local[2], next to the floor: pyarrow reading the same file once.

    python benchmarks/bench_scale.py                                # 1M and 10M rows, CSV
    python benchmarks/bench_scale.py --rows 1000000 --rows 10000000 --format parquet
    python benchmarks/bench_scale.py --rows 100000000 --format parquet --no-spark
    python benchmarks/bench_scale.py --rows 3000000 --cores 1,2,all --no-spark
    python benchmarks/bench_scale.py --rows 10000000 --no-spark --duckdb

The tables are adult replicated and jittered (``adult_like.py``: age +-3, every other column
resampled among its hierarchy's leaves with p = 0.1), written once per size under
``$TMPDIR/blendin-scale``. The release: k=5, 5% suppression, the 8 QIs with ARX's adult
hierarchies, occupation passed through; the optimal search.

Each measurement is one fresh process, timed from start to exit (imports, JVM start-up and
the written release included), with its peak memory: the largest sum of the resident
memory of the process and all its children (Spark's JVM, its Python workers), sampled
every 50 ms, and for single processes the kernel's exact peak (``ru_maxrss``). The floor is
pyarrow reading the file once, every column as text: ``whole`` (``pyarrow.csv.read_csv`` /
``pyarrow.parquet.read_table``) up to 10M rows, ``stream`` (``open_csv`` /
``iter_batches``, batch by batch) above, where the whole table would not fit beside the
other runs (100M adult-like rows are ~11 GiB as Arrow text). The last lines give each
column's growth exponent: ``b`` in time ~ rows^b.

``--duckdb`` measures an alternative engine for files beside the embedded one: blendin's SQL
engine run in DuckDB (in memory, on as many threads as the measurement has cores) over a view
of the same file (``read_csv`` with every column as text, or ``read_parquet``), the release
written to Parquet as the embedded engine's is; and DuckDB's own floor for such a release:
the 8 QIs grouped, then the file copied to Parquet in a random order. The released node
must be the embedded engine's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import adult_like
import arx_data

HERE = Path(__file__).resolve().parent
QIS = ["age", "education", "marital-status", "native-country", "race", "salary-class", "sex",
       "workclass"]

#: above this many rows the floor streams the file (batch by batch) instead of holding it
#: whole: 100M adult-like rows take ~11 GiB as Arrow text, too much beside the other runs
WHOLE_FLOOR_ROWS = 10_000_000

FLOOR = """
import sys, pyarrow as pa, pyarrow.csv as pcsv, pyarrow.parquet as pq
path, whole = sys.argv[1], sys.argv[2] == "whole"
if path.endswith(".parquet"):
    if whole:
        rows = pq.read_table(path).num_rows
    else:
        rows = sum(b.num_rows for b in pq.ParquetFile(path).iter_batches(batch_size=1 << 20))
else:
    names = open(path).readline().strip().split(";")
    parse = pcsv.ParseOptions(delimiter=";")
    convert = pcsv.ConvertOptions(column_types={n: pa.string() for n in names})
    if whole:
        rows = pcsv.read_csv(path, parse_options=parse, convert_options=convert).num_rows
    else:
        reader = pcsv.open_csv(path, parse_options=parse, convert_options=convert)
        rows = sum(b.num_rows for b in reader)
print(rows)
"""

#: DuckDB over the file, in memory, opened as blendin opens it (its threads, no bar printed):
#: ``release PATH OUT SPEC`` runs blendin's SQL engine over a view of the file; ``floor
#: PATH OUT QI...`` is DuckDB's floor for such a release, the QIs grouped and the rows
#: copied shuffled
ON_DUCKDB = """
import json, sys
from blendin.engines.databases import DuckDB
mode, path, out, rest = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
con = DuckDB.open(":memory:").connection
source = (f"read_parquet('{path}')" if path.endswith(".parquet") else
          f"read_csv('{path}', delim=';', header=true, all_varchar=true)")
if mode == "release":
    import blendin as bl
    con.execute(f"CREATE VIEW rows AS SELECT * FROM {source}")
    result = bl.anonymize(con, rest[0], table="rows", output=out, replace=True)
    print(json.dumps({"levels": result.levels}))
else:
    names = ", ".join(f'"{q}"' for q in rest)
    con.execute(f"SELECT count(*) FROM (SELECT {names}, count(*) FROM {source} GROUP BY ALL)")
    con.execute(f"COPY (SELECT * FROM {source} ORDER BY random()) TO '{out}' (FORMAT parquet)")
"""


def folder_for(rows: int, fmt: str) -> Path:
    base = Path(os.environ.get("TMPDIR", "/tmp")) / "blendin-scale"
    return base / f"adult{rows}-{fmt}"


def prepare(rows: int, fmt: str) -> tuple[Path, Path]:
    """The data file (written once) and the spec beside it."""
    folder = folder_for(rows, fmt)
    data = folder / ("adult.parquet" if fmt == "parquet" else "adult.csv")
    if not data.is_file():
        print(f"writing {rows:,} adult-like rows to {data}", flush=True)
        adult_like.write(rows, folder, parquet=fmt == "parquet")
    spec = folder / "release.toml"
    hierarchies = "\n".join(f'{q} = {{ csv = "adult_hierarchy_{q}.csv", delimiter = ";" }}'
                            for q in QIS)
    spec.write_text(f"""[input]
delimiter = ";"

[quasi_identifiers]
{hierarchies}

[[privacy]]
model = "k-anonymity"
k = 5

[anonymization]
max_suppression = 0.05
algorithm = "optimal"
""")
    return data, spec


def _tree(pid: int) -> dict[int, tuple[int, int]]:
    """Resident bytes and CPU ticks (user + system) of ``pid`` and each of its descendants,
    from /proc."""
    parent, usage = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parent[int(entry)] = int(fields[1])
            usage[int(entry)] = (int(fields[21]) * os.sysconf("SC_PAGE_SIZE"),
                                 int(fields[11]) + int(fields[12]))
        except (OSError, IndexError, ValueError):
            continue
    family = {pid}
    changed = True
    while changed:
        changed = False
        for child, up in parent.items():
            if up in family and child not in family:
                family.add(child)
                changed = True
    return {member: usage[member] for member in family if member in usage}


def measure(command: list[str]) -> tuple[float, float, float, str]:
    """Wall seconds, peak MiB (the process tree sampled, or the kernel's exact peak of the
    process when larger), CPU seconds of the whole tree (as sampled, or the kernel's count
    for the process and the children it waited for, when larger: it does not depend on
    what else runs on the machine as wall time does), and what the command printed."""
    import tempfile

    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        peak, ticks = 0, {}
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            tree = _tree(proc.pid)
            peak = max(peak, sum(rss for rss, _ in tree.values()))
            ticks.update({member: cpu for member, (_, cpu) in tree.items()})
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, problem = out.read(), err.read()
    if proc.returncode:
        raise RuntimeError(f"{command[:4]} failed: {problem.strip()[-800:]}")
    cpu = max(sum(ticks.values()) / os.sysconf("SC_CLK_TCK"), usage.ru_utime + usage.ru_stime)
    return seconds, max(peak, usage.ru_maxrss * 1024) / 2**20, cpu, text


def pinned(cores: str) -> list[str]:
    """The command prefix that runs a process on its first ``cores`` cores (``taskset``), or
    on every core for ``all``."""
    return [] if cores == "all" else ["taskset", "-c", f"0-{int(cores) - 1}"]


def run(rows: int, fmt: str, spark: bool, master: str, cores: str = "all",
        duckdb: bool = False) -> dict:
    data, spec = prepare(rows, fmt)
    floor = "whole" if rows <= WHOLE_FLOOR_ROWS else "stream"
    on = pinned(cores)
    floor_s, floor_mib, floor_cpu, _ = measure(
        [*on, sys.executable, "-c", FLOOR, str(data), floor])

    def blendin(engine: str) -> list[str]:
        out = data.parent / f"release-{engine}.parquet"  # a file, or Spark's folder
        return [sys.executable, "-c", "from blendin.cli import main; main()", "anonymize",
                str(data), "--spec", str(spec), "-o", str(out), "--force", "--json",
                "--engine", engine]

    row = {"rows": rows, "format": fmt, "cores": cores, "floor": floor, "floor_s": floor_s,
           "floor_mib": floor_mib, "floor_cpu": floor_cpu}
    seconds, mib, cpu, text = measure([*on, *blendin("embedded")])
    levels = json.loads(text)["levels"]
    row.update(embedded_s=seconds, embedded_mib=mib, embedded_cpu=cpu, levels=levels)
    if spark:
        seconds, mib, cpu, text = measure([*on, *blendin("spark")] + ["--spark-master", master,
                                                "--spark-conf", "spark.ui.enabled=false",
                                                "--spark-conf", "spark.driver.memory=4g"])
        row.update(spark_s=seconds, spark_mib=mib, spark_cpu=cpu,
                   spark_same=json.loads(text)["levels"] == levels)
    if duckdb:
        out = data.parent / "release-duckdb.parquet"
        seconds, mib, cpu, text = measure([*on, sys.executable, "-c", ON_DUCKDB, "release",
                                           str(data), str(out), str(spec)])
        row.update(duckdb_s=seconds, duckdb_mib=mib, duckdb_cpu=cpu,
                   duckdb_same=json.loads(text)["levels"] == levels)
        seconds, mib, cpu, _ = measure([*on, sys.executable, "-c", ON_DUCKDB, "floor",
                                        str(data), str(data.parent / "shuffled-duckdb.parquet"),
                                        *QIS])
        row.update(duckdb_floor_s=seconds, duckdb_floor_mib=mib, duckdb_floor_cpu=cpu)
    return row


def show(rows: list[dict]) -> None:
    spark = any("spark_s" in r for r in rows)
    head = (f"{'rows':>12} {'format':>8} {'cores':>5} {'floor':>7} {'floor s':>8} "
            f"{'floor MiB':>10}"
            f" {'embedded s':>11} {'x floor':>8} {'cpu s':>7} {'embedded MiB':>13}")
    if spark:
        head += f" {'spark s':>8} {'cpu s':>7} {'spark MiB':>10} {'same node':>10}"
    print(head)
    for r in rows:
        line = (f"{r['rows']:>12,} {r['format']:>8} {r.get('cores', 'all'):>5} "
                f"{r['floor']:>7} {r['floor_s']:>8.2f}"
                f" {r['floor_mib']:>10.0f} {r['embedded_s']:>11.2f}"
                f" {r['embedded_s'] / r['floor_s']:>8.1f} {r['embedded_cpu']:>7.1f}"
                f" {r['embedded_mib']:>13.0f}")
        if "spark_s" in r:
            line += (f" {r['spark_s']:>8.1f} {r['spark_cpu']:>7.1f} {r['spark_mib']:>10.0f}"
                     f" {'yes' if r['spark_same'] else 'NO':>10}")
        print(line)
    speedups(rows)
    for r in rows:
        if "duckdb_s" in r:
            ratio = r["duckdb_s"] / r["embedded_s"]
            print(f"{r['rows']:,} {r['format']} on {r.get('cores', 'all')} cores, DuckDB: "
                  f"blendin's SQL engine {r['duckdb_s']:.2f} s ({ratio:.2f}x"
                  f" embedded, {r['duckdb_cpu']:.1f} s CPU, {r['duckdb_mib']:.0f} MiB, same node: "
                  f"{'yes' if r['duckdb_same'] else 'NO'}); its floor (group, shuffled copy) "
                  f"{r['duckdb_floor_s']:.2f} s ({r['duckdb_floor_s'] / r['floor_s']:.1f}x the "
                  f"read, {r['duckdb_floor_mib']:.0f} MiB)")
    by_format: dict[str, list[dict]] = {}
    for r in rows:
        if r.get("cores", "all") == "all":
            by_format.setdefault(r["format"], []).append(r)
    for fmt, group in by_format.items():
        if len(group) < 2:
            continue
        first, last = group[0], group[-1]
        scale = math.log(last["rows"] / first["rows"])
        keys = ["floor_s", "embedded_s", "embedded_cpu", "embedded_mib"] + (
            ["spark_s", "spark_cpu", "spark_mib"] if "spark_s" in last else [])
        exps = ", ".join(f"{k} {math.log(last[k] / first[k]) / scale:.2f}" for k in keys)
        print(f"growth exponents ({fmt}, {first['rows']:,} -> {last['rows']:,} rows): {exps}")


def speedups(rows: list[dict]) -> None:
    """Per table: its times on one core over its times on each other setting."""
    one = {(r["rows"], r["format"]): r for r in rows if r.get("cores") == "1"}
    for r in rows:
        base = one.get((r["rows"], r["format"]))
        if base is not None and r.get("cores") != "1":
            print(f"{r['rows']:,} {r['format']}: 1 -> {r['cores']} cores, embedded "
                  f"{base['embedded_s'] / r['embedded_s']:.2f}x faster, the floor "
                  f"{base['floor_s'] / r['floor_s']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, action="append",
                        help="table sizes (repeatable; default 1M and 10M)")
    parser.add_argument("--format", choices=["csv", "parquet"], action="append",
                        help="input formats (repeatable; default csv)")
    parser.add_argument("--no-spark", action="store_true", help="the embedded engine only")
    parser.add_argument("--duckdb", action="store_true",
                        help="also blendin's SQL engine in DuckDB over the file, and DuckDB's "
                             "floor (an alternative engine for files)")
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--json", help="also write one JSON line per measurement here")
    parser.add_argument("--cores", default="all",
                        help="run each measurement on these many cores, by taskset, e.g. "
                             "1,2,all (default: all)")
    args = parser.parse_args()
    arx_data.path("adult")  # exits with a message when the data is absent
    settings = [c.strip() for c in args.cores.split(",") if c.strip()]
    if any(c != "all" and (not c.isdigit() or int(c) < 1) for c in settings):
        parser.error(f"--cores takes whole numbers and all, got {args.cores!r}")
    rows = []
    for fmt in args.format or ["csv"]:
        for n in args.rows or [1_000_000, 10_000_000]:
            for cores in settings:
                row = run(n, fmt, not args.no_spark, args.spark_master, cores, args.duckdb)
                rows.append(row)
                print(json.dumps(row), flush=True)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(row) + "\n")
    show(rows)


if __name__ == "__main__":
    main()
