"""blendin next to ARX, case by case in one run: time ratio, both nodes, both losses.

Run from the repository root (data in ../shared/data, ARX built by ../shared/peers/arx):

    python benchmarks/bench_arx.py                       # the 23 cases, 10 runs each
    python benchmarks/bench_arx.py --runs 5 --only fars --case b --case e_hier
    python benchmarks/bench_arx.py --rounds 3            # each case: ARX, blendin, ARX, ...
    python benchmarks/bench_arx.py --json results.jsonl  # one JSON line per case as well
    python benchmarks/bench_arx.py --rows 1000000 --runs 3   # adult-like 1M rows, time + memory
    python benchmarks/bench_arx.py --end-to-end --runs 5     # whole processes: CLI against JVM

The cases are the harness's (../shared/peers/arx/README.md): on adult (8 QIs, sensitive
occupation) and fars (7 QIs, sensitive istatenum), ``a`` k=2, ``b`` k=5, ``c`` k=5 with 5%
suppression, ``d`` + distinct 3-diversity, ``d_ent`` + entropy 3-diversity, ``d_rec`` +
recursive (4,3)-diversity, ``e`` + 0.2-closeness (equal distance), ``e_hier`` +
0.2-closeness (hierarchical distance), ``f`` = d and ``g`` = e with 5% suppression; on adult9
(all nine columns as QIs) ``a``, ``b`` and ``c``. 0% suppression unless stated.

What is timed, per tool, alternating the tools case by case:

- ARX: ``ARXAnonymizer.anonymize()`` in a warm JVM (the harness's median of ``--runs``
  runs after its warm-up; parsing the CSV and hierarchies excluded);
- blendin: the whole ``bl.anonymize()`` call on an in-memory pyarrow table of text columns
  (frequency table, hierarchies, search, recoding and the independent check of the release),
  median of ``--runs`` runs after one warm-up. Like ARX's ``Data``, which keeps its
  dictionary-encoded handle from one ``anonymize()`` to the next, a pyarrow Table keeps its
  columns' codes from one call to the next: ``ratio`` compares these calls. ``1st ms`` is
  blendin's first call on a Table (a new Table of the same rows each run, so every text is
  hashed), with its own ratio to ARX's time.

``--rows N`` instead compares the tools on an adult-like table of N rows (adult replicated
and jittered by ``adult_like.py``; all nine columns QIs; k=5 at 0% and 5% suppression): the
same timings, plus each tool's peak memory (RSS of a process that reads the CSV and
anonymizes it: ARX ``--runs`` times after its warm-up, blendin once, then ``--runs`` times
each way; the JVM with its default heap settings).

``--end-to-end`` instead times each case as a user runs it, one fresh process per run and
tool, alternating: ``blendin anonymize DATA --spec case.toml -o release.csv`` (start-up, CSV
read, anonymize, verify, write) against the harness's whole-process mode (``ArxBench ... 0``:
JVM start-up, CSV and hierarchy parsing, one cold anonymization, the release written), with
each process's wall time and peak RSS (medians of ``--runs``).

Both tools search for the optimum under their own metric. The table shows each tool's node
and both losses of both nodes: ARX's Loss (ARX evaluates blendin's node through the
harness's ``-Dnode=``) and blendin's ``--metric``. Equal nodes, or a blendin node whose loss
under ARX's metric is no worse than ARX's, mean the same answer; ``ratio`` is blendin's time
over ARX's, and the last lines give the geometric mean and median of both ratios.

``--rounds R`` takes R turns per case (ARX's runs, blendin's runs, ARX's again, ...; a new
JVM each turn) and shows the median of each tool's R medians: the machine's slow spells,
which last seconds, then fall on both tools instead of on one tool's turn.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import adult_like
import arx_data
import arx_peer
import pyarrow as pa

from blendin.anonymize import anonymize, prepare
from blendin.hierarchy.arx import from_csv
from blendin.metrics import METRICS, utility_of_node
from blendin.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from blendin.plan import plan_node
from blendin.spec import Spec

FULL_CASES = ("a", "b", "c", "d", "d_ent", "d_rec", "e", "e_hier", "f", "g")
#: data set -> the harness's cases run on it (23 in all)
CASES = {"adult": FULL_CASES, "adult9": ("a", "b", "c"), "fars": FULL_CASES}


def models_of(case: str, sensitive: str | None) -> tuple[list, float]:
    """The privacy models and suppression limit of one harness case, as ArxBench sets them."""
    k = KAnonymity(2 if case == "a" else 5)
    extra = {
        "d": lambda: DistinctLDiversity(sensitive, 3),
        "f": lambda: DistinctLDiversity(sensitive, 3),
        "d_ent": lambda: EntropyLDiversity(sensitive, 3),
        "d_rec": lambda: RecursiveCLDiversity(sensitive, 4, 3),
        "e": lambda: TCloseness(sensitive, 0.2, "equal"),
        "g": lambda: TCloseness(sensitive, 0.2, "equal"),
        "e_hier": lambda: TCloseness(sensitive, 0.2, "hierarchical"),
    }
    models = [k] + ([extra[case]()] if case in extra else [])
    return models, 0.05 if case in ("c", "f", "g") else 0.0


def make_spec(dataset: str, case: str, metric: str) -> Spec:
    _, qis, sensitive = arx_data.SETS[dataset]
    models, limit = models_of(case, sensitive)

    def arx(column: str):
        return from_csv(arx_data.hierarchy_file(dataset, column), delimiter=";")

    needs_sensitive = len(models) > 1
    sens = [sensitive] if needs_sensitive else []
    return Spec(quasi_identifiers={q: arx(q) for q in qis}, sensitive=sens, models=models,
                max_suppression=limit, metric=metric, algorithm="optimal",
                sensitive_hierarchies={s: arx(s) for s in sens} if case == "e_hier" else {})


@dataclass
class Row:
    dataset: str
    case: str
    arx_ms: float | None
    blendin_ms: float
    blendin_first_ms: float             # a first call on a Table: every text hashed
    blendin_node: str
    arx_node: str | None
    blendin_arx_loss: float | None      # ARX's Loss of blendin's node
    arx_arx_loss: float | None          # ARX's Loss of its own node
    blendin_loss: float                 # blendin's metric, blendin's node
    arx_blendin_loss: float | None      # blendin's metric, ARX's node
    blendin_suppressed: int
    arx_suppressed: int | None

    @property
    def ratio(self) -> float | None:
        return self.blendin_ms / self.arx_ms if self.arx_ms else None

    @property
    def first_ratio(self) -> float | None:
        return self.blendin_first_ms / self.arx_ms if self.arx_ms else None

    @property
    def same_answer(self) -> str:
        if self.arx_node is None:
            return ""
        if self.arx_node == self.blendin_node:
            return "same node"
        if self.blendin_arx_loss is not None and self.arx_arx_loss is not None:
            if self.blendin_arx_loss <= self.arx_arx_loss + 1e-9:
                return "other node, ARX loss as good"
            return "other node, ARX loss worse"
        return "other node"


def time_blendin(table: pa.Table, spec: Spec, runs: int):
    """Medians (ms) of calls on ``table`` after the first and of first calls on a Table of
    its rows, alternating; and the last result."""
    result = anonymize(table, spec)  # warm-up
    times, firsts = [], []
    for _ in range(runs):
        new = table.select(table.column_names)  # the same rows, a Table never seen
        start = time.perf_counter()
        anonymize(new, spec)
        firsts.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = anonymize(table, spec)
        times.append(time.perf_counter() - start)
    assert result.check.passed
    return statistics.median(times) * 1000, statistics.median(firsts) * 1000, result


def blendin_score(table: pa.Table, spec: Spec, levels: dict[str, int], metric: str) -> float:
    """blendin's metric of the node ``levels`` (ARX's choice), suppression as blendin would."""
    ft = prepare(table, spec).ft
    node = [levels[q] for q in ft.qi_names]
    recoding = plan_node(ft, node, spec.models)
    return float(utility_of_node(ft, node, recoding.suppressed_tuples)[metric])


def bench_case(cp: str | None, dataset: str, table: pa.Table, case: str, runs: int,
               metric: str, rounds: int = 1) -> Row:
    qis = arx_data.SETS[dataset][1]
    spec = make_spec(dataset, case, metric)
    arx_ms, ms, first_ms = [], [], []
    for _ in range(rounds):  # the tools take turns, so a slow spell of the machine is shared
        arx = arx_peer.run(cp, dataset, case, runs) if cp else None
        if arx is not None:
            arx_ms.append(arx["median_ms"])
        turn_ms, turn_first_ms, result = time_blendin(table, spec, runs)
        ms.append(turn_ms)
        first_ms.append(turn_first_ms)
    ms, first_ms = statistics.median(ms), statistics.median(first_ms)
    node = arx_peer.levels_text(result.levels, qis)
    row = Row(dataset, case, None, ms, first_ms, node, None, None, None,
              float(result.utility[metric]), None, result.suppressed, None)
    if arx is None:
        return row
    row.arx_ms = statistics.median(arx_ms)
    row.arx_suppressed = arx["suppressed"]
    row.arx_arx_loss = _number(arx["loss"])
    if arx["levels"]:
        row.arx_node = arx_peer.levels_text(arx["levels"], qis)
        row.arx_blendin_loss = blendin_score(table, spec, arx["levels"], metric)
    if row.arx_node == row.blendin_node:
        row.blendin_arx_loss = row.arx_arx_loss
    else:
        other = arx_peer.run(cp, dataset, case, 1, node=result.levels)["other"]
        row.blendin_arx_loss = _number(other["loss"])
    return row


def _number(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _fmt(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


def show(rows: list[Row], metric: str) -> None:
    head = (f"{'data':<7}{'case':<8}{'ARX ms':>9}{'blendin ms':>12}{'ratio':>7}"
            f"{'1st ms':>8}{'ratio':>7}  "
            f"{'blendin node':<20}{'ARX node':<20}{'ARX loss b/A':>15}"
            f"{metric + ' b/A':>18}  answer")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r.dataset:<7}{r.case:<8}{_fmt(r.arx_ms, '.1f'):>9}{r.blendin_ms:>12.1f}"
              f"{_fmt(r.ratio, '.2f'):>7}{r.blendin_first_ms:>8.1f}{_fmt(r.first_ratio, '.2f'):>7}"
              f"  {r.blendin_node:<20}{r.arx_node or '':<20}"
              f"{_fmt(r.blendin_arx_loss, '.4f'):>7}/{_fmt(r.arx_arx_loss, '.4f'):<7}"
              f"{r.blendin_loss:>10.4f}/{_fmt(r.arx_blendin_loss, '.4f'):<7}  "
              f"{r.same_answer}")
    print()
    for what, ratios in (("", [r.ratio for r in rows if r.ratio]),
                         (" (first calls on a Table)", [r.first_ratio for r in rows
                                                        if r.first_ratio])):
        if ratios:
            geo = math.exp(statistics.fmean(math.log(x) for x in ratios))
            print(f"blendin / ARX time over {len(ratios)} cases{what}: geometric mean "
                  f"{geo:.2f}x, median {statistics.median(ratios):.2f}x, worst "
                  f"{max(ratios):.2f}x, best {min(ratios):.2f}x; cases at or under 1.0x: "
                  f"{sum(x <= 1.0 for x in ratios)} of {len(ratios)}")


BLENDIN_SCALE_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import bench_arx
import arx_data
name, case, runs, metric, file = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], \
    sys.argv[6]
arx_data.SETS[name] = (file, arx_data.SETS["adult9"][1], None)
table = arx_data.read(name)
spec = bench_arx.make_spec(name, case, metric)
ms, first_ms, result = bench_arx.time_blendin(table, spec, runs)
print(json.dumps({"median_ms": ms, "first_ms": first_ms, "levels": result.levels,
                  "suppressed": result.suppressed, "loss": result.utility[metric]}))
"""

# measures its only child: ru_maxrss of RUSAGE_CHILDREN is the largest child's peak (KiB);
# the child's wall time is taken here too, so the measuring process's start-up is left out
PEAK_RSS = ("import resource, subprocess, sys, time; start = time.perf_counter(); "
            "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "wall = time.perf_counter() - start; sys.stderr.write(p.stderr); print(p.stdout); "
            "print(wall); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def with_peak_rss(command: list[str]) -> tuple[dict, float]:
    """Run ``command`` in its own process; its last JSON line and its peak RSS in MiB."""
    found, _, rss = timed_process(command)
    return found, rss


def timed_process(command: list[str]) -> tuple[dict, float, float]:
    """Run ``command`` in its own process: its last JSON line (any JSON printed, indented or
    not), its wall time in seconds and its peak RSS in MiB."""
    proc = subprocess.run([sys.executable, "-c", PEAK_RSS, *command], capture_output=True,
                          text=True, check=True)
    *out, wall, rss = proc.stdout.strip().splitlines()
    starts = [i for i, line in enumerate(out) if line.startswith("{")]
    if not starts:
        raise RuntimeError(f"{command[0]} failed: {proc.stderr.strip()[-500:]}")
    return json.loads("\n".join(out[starts[-1]:])), float(wall), int(rss) / 1024


def bench_scale(cp: str | None, rows: int, runs: int, metric: str) -> None:
    """blendin and ARX on an adult-like table of ``rows`` rows: time and peak memory."""
    name = f"adult{rows}"
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / "blendin-bench" / name
    if not (folder / "adult.csv").is_file():
        print(f"writing {rows:,} adult-like rows to {folder}", flush=True)
        adult_like.write(rows, folder)
    arx_data.SETS[name] = (str(folder / "adult.csv"), arx_data.SETS["adult9"][1], None)
    here = str(Path(__file__).resolve().parent)
    print(f"{'case':<8}{'ARX ms':>10}{'blendin ms':>12}{'ratio':>7}{'1st ms':>9}{'ratio':>7}"
          f"{'ARX MiB':>9}{'blendin MiB':>12}  nodes")
    for case in ("b", "c"):
        ours, our_rss = with_peak_rss([sys.executable, "-c", BLENDIN_SCALE_SCRIPT, here, name,
                                       case, str(runs), metric, str(folder / "adult.csv")])
        arx = arx_rss = None
        if cp:
            arx, arx_rss = with_peak_rss(["java", "-cp", cp, "ArxBench", str(folder.parent),
                                          name, case, str(runs)])
        qis = arx_data.SETS[name][1]
        nodes = arx_peer.levels_text(ours["levels"], qis)
        if arx and arx["levels"]:
            other = arx_peer.levels_text(arx["levels"], qis)
            nodes += " same" if other == nodes else f" (ARX {other})"
        print(f"{case:<8}{_fmt(arx and arx['median_ms'], '.0f'):>10}{ours['median_ms']:>12.0f}"
              f"{_fmt(arx and ours['median_ms'] / arx['median_ms'], '.2f'):>7}"
              f"{ours['first_ms']:>9.0f}"
              f"{_fmt(arx and ours['first_ms'] / arx['median_ms'], '.2f'):>7}"
              f"{_fmt(arx_rss, '.0f'):>9}{our_rss:>12.0f}  {nodes}", flush=True)


def bench_end_to_end(cp: str | None, cases: list[tuple[str, str]], runs: int,
                     metric: str) -> None:
    """Each case as whole processes: ``blendin anonymize`` against ArxBench's cold run."""
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / "blendin-bench" / "end-to-end"
    folder.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-c", "from blendin.cli import main; main(prog_name='blendin')",
           "anonymize"]
    print(f"{'data':<7}{'case':<8}{'ARX s':>7}{'blendin s':>11}{'ratio':>7}{'ARX MiB':>9}"
          f"{'blendin MiB':>13}  nodes")
    ratios = []
    for dataset, case in cases:
        spec = make_spec(dataset, case, metric)
        spec.delimiter = ";"
        toml = folder / f"{dataset}_{case}.toml"
        toml.write_text(spec.to_toml(), encoding="utf-8")
        blendin = [*cli, str(arx_data.path(dataset)), "--spec", str(toml), "-o",
                   str(folder / "blendin.csv"), "--force", "--json", "-q"]
        arx = ["java", f"-Dout={folder / 'arx.csv'}", "-cp", cp or "", "ArxBench",
               str(arx_data.DATA), dataset, case, "0"]
        ours, theirs = [], []
        for _ in range(runs):  # the tools alternate
            ours.append(timed_process(blendin))
            if cp:
                theirs.append(timed_process(arx))
        qis = arx_data.SETS[dataset][1]
        nodes = arx_peer.levels_text(ours[-1][0]["levels"], qis)
        our_s = statistics.median(r[1] for r in ours)
        our_mib = statistics.median(r[2] for r in ours)
        arx_s = arx_mib = None
        if theirs:
            arx_s = statistics.median(r[1] for r in theirs)
            arx_mib = statistics.median(r[2] for r in theirs)
            ratios.append(our_s / arx_s)
            other = theirs[-1][0]["levels"]
            if other:
                other = arx_peer.levels_text(other, qis)
                nodes += " same" if other == nodes else f" (ARX {other})"
        print(f"{dataset:<7}{case:<8}{_fmt(arx_s, '.2f'):>7}{our_s:>11.2f}"
              f"{_fmt(arx_s and our_s / arx_s, '.2f'):>7}{_fmt(arx_mib, '.0f'):>9}"
              f"{our_mib:>13.0f}  {nodes}", flush=True)
    if ratios:
        geo = math.exp(statistics.fmean(math.log(x) for x in ratios))
        print(f"\nblendin / ARX end to end over {len(ratios)} cases: geometric mean {geo:.2f}x, "
              f"worst {max(ratios):.2f}x, best {min(ratios):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per case and tool")
    parser.add_argument("--rounds", type=int, default=1,
                        help="turns per case and tool, each of --runs runs (the median of "
                        "the turns' medians is shown)")
    parser.add_argument("--only", choices=sorted(CASES), help="one data set only")
    parser.add_argument("--case", action="append", help="only these cases (repeatable)")
    parser.add_argument("--metric", default="arx-loss" if "arx-loss" in METRICS else "loss",
                        choices=sorted(METRICS), help="blendin's metric (default: ARX's loss "
                        "when available, so both tools search for the same optimum)")
    parser.add_argument("--json", help="also write one JSON line per case to this file")
    parser.add_argument("--rows", type=int, action="append",
                        help="compare on an adult-like table of this many rows instead")
    parser.add_argument("--end-to-end", action="store_true",
                        help="time whole processes: blendin's CLI against ARX's harness "
                        "(JVM start, parsing, anonymization, the release written)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    cp = arx_peer.classpath()
    print(f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d')}")
    if cp is None:
        print(arx_peer.skip_message())
    if args.rows:
        for rows in args.rows:
            bench_scale(cp, rows, args.runs, args.metric)
        return
    if args.end_to_end:
        bench_end_to_end(cp, [(d, c) for d in ([args.only] if args.only else list(CASES))
                              for c in CASES[d] if not args.case or c in args.case],
                         args.runs, args.metric)
        return
    rows = []
    for dataset in [args.only] if args.only else list(CASES):
        table = arx_data.read(dataset)
        for case in CASES[dataset]:
            if args.case and case not in args.case:
                continue
            rows.append(bench_case(cp, dataset, table, case, args.runs, args.metric,
                                   args.rounds))
            r = rows[-1]
            print(f"  {dataset} {case}: blendin {r.blendin_ms:.1f} ms, ARX "
                  f"{_fmt(r.arx_ms, '.1f') or '-'} ms", flush=True)
    print()
    show(rows, args.metric)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            for r in rows:
                out.write(json.dumps({**asdict(r), "ratio": r.ratio}) + "\n")


if __name__ == "__main__":
    main()
