"""How long building the frequency table takes, next to reading the CSV alone.

Adult (8 quasi-identifiers, occupation sensitive, the ARX hierarchies) is replicated to the
requested row counts. For each size it times:

- ``memory``: FrequencyTable.from_table on an in-memory pyarrow table (one chunk);
- ``source``: the same table through blendin.io.Source (slices of 1M rows), as anonymize
  and check read a frame;
- ``csv``: the streaming path for files (blendin.io.Source in chunks -> distinct tuples ->
  FrequencyTable.from_distinct), on a CSV file written to a temporary folder;
- ``read_csv``: pyarrow.csv.read_csv of that file, every column as text (the floor: no
  grouping at all), and ``open_csv``: pyarrow's streaming reader alone, which ``csv`` uses.

Run: python benchmarks/bench_frequency.py --rows 1000000 10000000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import arx_data
import pyarrow as pa
import pyarrow.csv as pcsv

from blendin.frequency import FrequencyTable
from blendin.groupby import distinct_tuples
from blendin.hierarchy.core import Hierarchy
from blendin.io import Source

_, QIS, _sensitive = arx_data.SETS["adult"]
SENSITIVE = [_sensitive]


def replicate(table: pa.Table, rows: int) -> pa.Table:
    """``rows`` rows of copies of ``table``, in one chunk (as a frame from pandas would be)."""
    copies = -(-rows // table.num_rows)
    return pa.concat_tables([table] * copies).slice(0, rows).combine_chunks()


def best_of(repeat: int, run) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def from_source(data, hier: dict[str, Hierarchy]) -> FrequencyTable:
    source = Source(data, delimiter=";") if isinstance(data, Path) else Source(data)
    columns = [*QIS, *SENSITIVE]
    distinct = distinct_tuples(source.batches(columns), columns)
    return FrequencyTable.from_distinct(distinct, hier, SENSITIVE)


def read_floor(path: Path, columns: list[str]) -> pa.Table:
    convert = pcsv.ConvertOptions(column_types={c: pa.string() for c in columns})
    return pcsv.read_csv(path, parse_options=pcsv.ParseOptions(delimiter=";"),
                         convert_options=convert)


def stream_floor(path: Path, columns: list[str]) -> int:
    convert = pcsv.ConvertOptions(column_types={c: pa.string() for c in columns})
    read = pcsv.ReadOptions(block_size=64 << 20)
    reader = pcsv.open_csv(path, read_options=read,
                           parse_options=pcsv.ParseOptions(delimiter=";"),
                           convert_options=convert)
    return sum(batch.num_rows for batch in reader)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=2, help="best of this many runs")
    args = parser.parse_args()
    base = Source(arx_data.path("adult"), delimiter=";").read_all()
    hier = arx_data.hierarchies("adult", base)
    print(f"{'rows':>11} {'CSV MB':>7} {'tuples':>7} {'memory s':>9} {'source s':>9} "
          f"{'csv s':>7} "
          f"{'read_csv s':>10} {'open_csv s':>10} {'Mrows/s csv':>11}")
    with tempfile.TemporaryDirectory() as folder:
        for rows in args.rows:
            table = replicate(base, rows)
            repeat = args.repeat if rows <= 2_000_000 else 1
            t_mem, ft = best_of(repeat, lambda t=table: FrequencyTable.from_table(
                t, hier, SENSITIVE))
            t_src, _ = best_of(repeat, lambda t=table: from_source(t, hier))
            path = Path(folder) / f"adult_{rows}.csv"
            pcsv.write_csv(table, path, write_options=pcsv.WriteOptions(delimiter=";"))
            del table
            t_csv, ft_csv = best_of(repeat, lambda p=path: from_source(p, hier))
            assert ft_csv.n_records == ft.n_records == rows
            assert len(ft_csv.counts) == len(ft.counts)
            t_read, _ = best_of(repeat, lambda p=path: read_floor(p, base.column_names))
            t_stream, _ = best_of(repeat, lambda p=path: stream_floor(p, base.column_names))
            size = path.stat().st_size / 1e6
            path.unlink()
            print(f"{rows:>11,} {size:>7.0f} {len(ft.counts):>7} {t_mem:>9.2f} {t_src:>9.2f} "
                  f"{t_csv:>7.2f} "
                  f"{t_read:>10.2f} {t_stream:>10.2f} {rows / t_csv / 1e6:>11.2f}", flush=True)


if __name__ == "__main__":
    main()
