"""The anytime heuristic next to ARX's Lightning, auto next to optimal, and recode_suppressed.

Run from the repository root (the data lives in ../shared/data, ARX is built as
../shared/peers/arx/README.md says):

    python benchmarks/bench_heuristic.py                 # everything (~2 min)
    python benchmarks/bench_heuristic.py --no-arx        # blendin only

1. Many QIs (creditcard, 24 QIs, lattice 4.9e13; mach2019, 16 QIs, 8.5e7), k = 5 with 5%
   suppression. blendin's heuristic runs with a time budget and reports its best figure over
   time; ARX's Lightning runs in the same process run with growing step limits (each a
   separate ARX run: ``ArxBench DATA SET c 1 lightning STEPS``), and the node each one
   chooses is scored with blendin's ``loss`` (the same node checks and figure as blendin's
   own searches). Datafly, which was blendin's only answer for such lattices, for reference.
   The loss-over-time curves of both tools are drawn to
   ``benchmarks/results/heuristic_loss_over_time.png``.
2. adult and fars, k = 5 at 5% (and with distinct 3-diversity / 0.2-closeness): ``auto``
   must choose the optimal search and give its node.
3. ``recode_suppressed`` on adult and fars, k = 5 at 5%: records suppressed without and with
   it, recovered, loss; every release verified by the checker inside ``anonymize``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

import arx_data
from bench_search import make_spec

from blendin.anonymize import anonymize
from blendin.frequency import FrequencyTable
from blendin.models import DistinctLDiversity, KAnonymity, TCloseness
from blendin.search import find
from blendin.search.common import Context

RESULTS = Path(__file__).resolve().parent / "results"
CP = Path("/tmp/arx-build/cp.txt")
#: data set -> the heuristic's time budget (seconds): the issue's targets
TARGETS = {"creditcard": (5.0, 0.832), "mach2019": (10.0, 0.609)}
ARX_STEPS = (300, 1000, 3000, 10000)


def frequency_table(name: str) -> FrequencyTable:
    table = arx_data.read(name)
    return FrequencyTable.from_table(table, arx_data.hierarchies(name, table))


def blendin_score(ft: FrequencyTable, levels) -> float:
    """blendin's loss of a node, its violating classes suppressed (k = 5, 5%)."""
    ctx = Context(ft, [KAnonymity(5)], max_suppression=0.05, metric="loss", policy=None,
                  weights=None, progress=None)
    result = ctx.check(levels)
    if not result.acceptable:
        raise SystemExit(f"ARX's node {levels} is not acceptable for blendin")
    return ctx.score(result)


def run_arx(name: str, steps: int) -> dict | None:
    if not CP.is_file():
        return None
    out = subprocess.run(
        ["java", "-cp", CP.read_text().strip(), "ArxBench", str(arx_data.DATA), name, "c", "1",
         "lightning", str(steps)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def many_qis(use_arx: bool) -> list[dict]:
    rows = []
    curves = {}
    for name, (budget, target) in TARGETS.items():
        ft = frequency_table(name)
        models = [KAnonymity(5)]
        start = time.perf_counter()
        greedy = find(ft, models, max_suppression=0.05, algorithm="datafly")
        greedy_s = time.perf_counter() - start
        start = time.perf_counter()
        found = find(ft, models, max_suppression=0.05, algorithm="auto", time_limit=budget)
        seconds = time.perf_counter() - start
        curve = [(t, s) for t, _, s in found.trace]
        reached = next((t for t, s in curve if s <= target), None)
        arx = []
        for steps in ARX_STEPS if use_arx else ():
            got = run_arx(name, steps)
            if got is None or not got["levels"]:
                arx.append((steps, (got or {}).get("median_ms", 0) / 1000, None))
                continue
            levels = [int(got["levels"][q]) for q in ft.qi_names]
            arx.append((steps, got["median_ms"] / 1000, blendin_score(ft, levels)))
        curves[name] = (curve, arx, target)
        rows.append({"set": name, "qis": len(ft.qi_names), "lattice": ft_size(ft),
                     "algorithm": found.algorithm, "budget_s": budget,
                     "loss": found.score, "checks": found.nodes_checked,
                     "seconds": seconds, "reached_target_s": reached,
                     "datafly_loss": greedy.score, "datafly_s": greedy_s, "arx": arx,
                     "target": target})
    plot(curves)
    return rows


def ft_size(ft: FrequencyTable) -> float:
    size = 1
    for h in ft.heights:
        size *= h
    return float(size)


def plot(curves: dict) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    RESULTS.mkdir(exist_ok=True)
    fig = Figure(figsize=(10, 4))
    FigureCanvasAgg(fig)
    for ax, (name, (curve, arx, target)) in zip(fig.subplots(1, len(curves)), curves.items()):
        xs = [t for t, _ in curve]
        ys = [s for _, s in curve]
        ax.step(xs + [max(xs[-1], max((a[1] for a in arx), default=0))], ys + [ys[-1]],
                where="post", label="blendin heuristic")
        done = [(t, s) for _, t, s in arx if s is not None]
        if done:
            ax.plot([t for t, _ in done], [s for _, s in done], "o-",
                    label="ARX Lightning (steps 300..10,000)")
        ax.axhline(target, color="grey", linestyle=":", label="target (ARX, 10,000 steps)")
        ax.set_title(f"{name}, k=5, 5% suppression")
        ax.set_xlabel("seconds")
        ax.set_ylabel("loss (blendin's metric)")
        ax.set_ylim(min(ys + [s for _, s in done]) - 0.05, 1.01)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "heuristic_loss_over_time.png", dpi=110)


def auto_vs_optimal() -> list[dict]:
    rows = []
    for name in ("adult", "fars"):
        sens = arx_data.SETS[name][2]
        table = arx_data.read(name)
        hs = arx_data.hierarchies(name, table)
        ft = FrequencyTable.from_table(table, hs, [sens])
        for case, models in (("k=5", [KAnonymity(5)]),
                             ("k=5 + distinct l=3", [KAnonymity(5), DistinctLDiversity(sens, 3)]),
                             ("k=5 + t=0.2", [KAnonymity(5), TCloseness(sens, 0.2)])):
            out = {}
            for algorithm in ("optimal", "auto"):
                start = time.perf_counter()
                got = find(ft, models, max_suppression=0.05, algorithm=algorithm)
                out[algorithm] = (got, time.perf_counter() - start)
            (o, ot), (a, at) = out["optimal"], out["auto"]
            rows.append({"set": name, "case": case + ", 5%", "auto_ran": a.algorithm,
                         "same_node": a.levels == o.levels, "loss": a.score,
                         "optimal_s": ot, "auto_s": at})
    return rows


def recoding() -> list[dict]:
    rows = []
    for name in ("adult", "fars"):
        table = arx_data.read(name)
        spec = make_spec(name, [KAnonymity(5)], 0.05)
        plain = anonymize(table, spec)
        start = time.perf_counter()
        recoded = anonymize(table, spec, recode_suppressed=True)
        rows.append({"set": name, "suppressed": plain.suppressed,
                     "suppressed_recoded": recoded.suppressed, "recovered": recoded.recovered,
                     "parts": len(recoded.recoded_parts), "loss": plain.utility["loss"],
                     "loss_recoded": recoded.utility["loss"], "seconds": plain.seconds,
                     "seconds_recoded": time.perf_counter() - start,
                     "checked": recoded.check.passed})
    return rows


def show(heur: list[dict], auto: list[dict], rec: list[dict]) -> str:
    lines = ["| data | QIs | lattice | blendin heuristic (budget) | reached ARX's loss after "
             "| ARX Lightning, steps: s, loss | blendin datafly |",
             "|---|---:|---:|---|---|---|---|"]
    for r in heur:
        arx = "; ".join(f"{steps:,}: {t:.1f} s, " + ("none found" if s is None else f"{s:.3f}")
                        for steps, t, s in r["arx"]) or "not run"
        reached = "-" if r["reached_target_s"] is None else f"{r['reached_target_s']:.2f} s"
        lines.append(f"| {r['set']} | {r['qis']} | {r['lattice']:.2g} | loss {r['loss']:.3f}, "
                     f"{r['checks']:,} checks, {r['seconds']:.1f} s ({r['budget_s']:g} s) | "
                     f"{reached} | {arx} | {r['datafly_loss']:.3f} in {r['datafly_s']:.1f} s |")
    lines += ["", "| data | case | auto ran | same node as optimal | loss | optimal s | auto s |",
              "|---|---|---|---|---:|---:|---:|"]
    for r in auto:
        lines.append(f"| {r['set']} | {r['case']} | {r['auto_ran']} | {r['same_node']} | "
                     f"{r['loss']:.4f} | {r['optimal_s']:.3f} | {r['auto_s']:.3f} |")
    lines += ["", "| data, k=5 5% | suppressed | with recode_suppressed | recovered | parts | "
              "loss | loss recoded | s | s recoded |", "|---|---:|---:|---:|---:|---:|---:|"
              "---:|---:|"]
    for r in rec:
        lines.append(f"| {r['set']} | {r['suppressed']:,} | {r['suppressed_recoded']:,} | "
                     f"{r['recovered']:,} | {r['parts'] + 1} | {r['loss']:.4f} | "
                     f"{r['loss_recoded']:.4f} | {r['seconds']:.2f} | "
                     f"{r['seconds_recoded']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-arx", action="store_true", help="skip ARX's runs")
    args = parser.parse_args()
    heur = many_qis(not args.no_arx)
    auto = auto_vs_optimal()
    rec = recoding()
    text = show(heur, auto, rec)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "heuristic.md").write_text(text + "\n", encoding="utf-8")
    print(f"\nwrote {RESULTS / 'heuristic.md'} and {RESULTS / 'heuristic_loss_over_time.png'}")


if __name__ == "__main__":
    main()
