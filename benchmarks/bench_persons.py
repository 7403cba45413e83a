"""People, not rows: anonymize a visits table counted in people, next to the same table
counted in rows (time and peak memory, each run in a fresh process).

The table: N people with 1 to 10 visits each; person-level QIs age, sex and ZIP, and
(with --event) the visit's ward, which varies within a person. k = 5, 5% suppression.
With --related the same data also comes as two related tables, patients (age, sex, ZIP)
and visits (ward, diagnosis), released together from files into a folder (streamed).

    python benchmarks/bench_persons.py --people 1000000 --runs 3
    python benchmarks/bench_persons.py --people 200000 --event --related
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

SPEC = """[quasi_identifiers]
age = {{ intervals = [5, 10, 20] }}
sex = {{ flat = true }}
zip = {{ masking = true }}
{ward}
[attributes]
sensitive = ["dx"]
[[privacy]]
model = "k-anonymity"
k = 5
[anonymization]
max_suppression = 0.05
algorithm = "optimal"
"""

RUN = """
import json, resource, sys, time
import blendin as bl
start = time.perf_counter()
spec = bl.Spec.from_toml(sys.argv[1])
data = sys.argv[2]
if sys.argv[3] == "people":
    spec.person = "pid"
if sys.argv[3] == "related":
    spec.tables = {"patients": "pid", "visits": "pid"}
    data = {"patients": data.replace("visits", "patients"), "visits": data}
result = bl.anonymize(data, spec, output=sys.argv[4])
print(json.dumps({"seconds": time.perf_counter() - start,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "levels": result.levels, "classes": result.classes,
                  "smallest": result.min_class_size, "suppressed": result.suppressed,
                  "people": (result.people or {}).get("people")}))
"""


def visits(people: int, seed: int = 0) -> pd.DataFrame:
    """``people`` people with 1-10 visits each (person-level age, sex, ZIP; a ward and a
    diagnosis per visit)."""
    rng = np.random.default_rng(seed)
    count = rng.integers(1, 11, people)
    pid = np.repeat(np.arange(people), count)
    age = np.repeat(rng.integers(18, 90, people), count)
    sex = np.repeat(rng.choice(np.array(["f", "m"]), people), count)
    zips = np.repeat(rng.integers(2100, 2200, people), count)
    rows = len(pid)
    return pd.DataFrame({"pid": pid.astype(str), "age": age, "sex": sex,
                         "zip": [f"0{z}" for z in zips],
                         "ward": rng.choice(np.array(["A", "B", "C"]), rows),
                         "dx": rng.choice(np.array(["flu", "gout", "asthma", "copd"]), rows)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--event", action="store_true", help="add the event-level ward QI")
    parser.add_argument("--related", action="store_true",
                        help="also release patients and visits as related tables")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "visits.parquet"
        frame = visits(args.people)
        frame.to_parquet(data, index=False)
        if args.related:
            frame.drop(columns=["age", "sex", "zip"]).to_parquet(data, index=False)
            frame.drop_duplicates("pid")[["pid", "age", "sex", "zip"]].to_parquet(
                folder / "patients.parquet", index=False)
            frame.to_parquet(folder / "joined.parquet", index=False)
            data = folder / "joined.parquet"
        spec = folder / "s.toml"
        spec.write_text(SPEC.format(ward="ward = { flat = true }" if args.event else ""))
        print(f"{args.people:,} people, {len(frame):,} visits"
              + (", ward event-level" if args.event else ""))
        del frame
        for counted in ("rows", "people", *(["related"] if args.related else [])):
            found = []
            for _ in range(args.runs):
                out = folder / (counted if counted == "related" else f"{counted}.parquet")
                read = folder / "visits.parquet" if counted == "related" else data
                done = subprocess.run([sys.executable, "-c", RUN, str(spec), str(read),
                                       counted, str(out)], capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(done.stderr)
                found.append(json.loads(done.stdout))
                if counted == "related":
                    shutil.rmtree(out)
            best = min(found, key=lambda f: f["seconds"])
            print(f"counted in {counted:<7}  {best['seconds']:7.2f} s  "
                  f"{best['peak_mib']:7.0f} MiB peak  levels {best['levels']}  "
                  f"smallest class {best['smallest']}  suppressed {best['suppressed']:,} "
                  "records")


if __name__ == "__main__":
    main()
