"""Adult-like tables of any size: ../shared/data/adult replicated and jittered.

    python benchmarks/adult_like.py --rows 1000000 --out /tmp/adult1m            # CSV
    python benchmarks/adult_like.py --rows 10000000 --out /tmp/adult10m --parquet

Rows are drawn from adult's rows, then jittered so that the copies are not trivially
anonymous: age moves by a uniform -3..+3 (kept within the age hierarchy's values), and every
other column is, with probability 0.1, replaced by a value drawn uniformly from the leaves of
its hierarchy. The folder gets ``adult.csv`` (ARX's format: ``;``, a header) or
``adult.parquet``, and links to adult's hierarchy files, so that both blendin and the ARX
harness (``ArxBench OUT_PARENT <folder name> ...``; every column is then a QI, as in adult9)
read it. Written in chunks of a million rows: memory does not grow with ``--rows``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import arx_data
import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

CHUNK = 1_000_000
RESAMPLE = 0.1
AGE_JITTER = 3


def _leaves(column: str) -> np.ndarray:
    """The ground values of adult's hierarchy of ``column`` (the first field of each row)."""
    first = pcsv.read_csv(arx_data.hierarchy_file("adult", column),
                          read_options=pcsv.ReadOptions(autogenerate_column_names=True),
                          parse_options=pcsv.ParseOptions(delimiter=";"),
                          convert_options=pcsv.ConvertOptions(column_types={"f0": pa.string()},
                                                              include_columns=["f0"]))
    return np.asarray(first.column(0).to_pylist(), dtype=object)


def _columns(adult: pa.Table) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per column: its values in adult (as codes), the vocabulary, the hierarchy's leaves."""
    out = {}
    for name in adult.column_names:
        leaves = _leaves(name)
        if name == "age":
            leaves = np.asarray(sorted(leaves, key=int), dtype=object)
        index = {v: i for i, v in enumerate(leaves)}
        codes = np.fromiter((index[v] for v in adult.column(name).to_pylist()), np.int64,
                            adult.num_rows)
        out[name] = (codes, leaves)
    return out


def chunks(rows: int, seed: int = 0):
    """pyarrow Tables of at most a million rows, ``rows`` in all."""
    adult = arx_data.read("adult")
    columns = _columns(adult)
    rng = np.random.default_rng(seed)
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        pick = rng.integers(0, adult.num_rows, n)
        data = {}
        for name, (codes, leaves) in columns.items():
            code = codes[pick]
            if name == "age":
                code = np.clip(code + rng.integers(-AGE_JITTER, AGE_JITTER + 1, n), 0,
                               len(leaves) - 1)
            else:
                swap = rng.random(n) < RESAMPLE
                code = np.where(swap, rng.integers(0, len(leaves), n), code)
            data[name] = pa.DictionaryArray.from_arrays(
                pa.array(code.astype(np.int32)), pa.array(leaves.tolist())).cast(pa.string())
        yield pa.table(data)


def write(rows: int, out: Path, *, parquet: bool = False, seed: int = 0) -> Path:
    """Write an adult-like table of ``rows`` rows into folder ``out``; return the data file."""
    out.mkdir(parents=True, exist_ok=True)
    for hierarchy in arx_data.path("adult").parent.glob("adult_hierarchy_*.csv"):
        link = out / hierarchy.name
        if not link.exists():
            os.symlink(hierarchy, link)
    target = out / ("adult.parquet" if parquet else "adult.csv")
    with open(target, "wb") as sink:
        writer = None
        try:
            for table in chunks(rows, seed):
                if writer is None:
                    writer = _writer(sink, table.schema, parquet)
                writer.write_table(table)
        finally:
            if writer is not None:
                writer.close()
    return target


def _writer(sink, schema: pa.Schema, parquet: bool):
    if parquet:
        return pq.ParquetWriter(sink, schema)
    # ARX's format: ';' and an unquoted header (pyarrow would quote the header's names)
    sink.write((";".join(schema.names) + "\n").encode())
    return pcsv.CSVWriter(sink, schema, write_options=pcsv.WriteOptions(
        include_header=False, delimiter=";", quoting_style="none"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True, help="folder to write into")
    parser.add_argument("--parquet", action="store_true", help="Parquet instead of CSV")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    target = write(args.rows, args.out, parquet=args.parquet, seed=args.seed)
    print(f"{args.rows:,} rows -> {target} ({target.stat().st_size / 2**20:,.0f} MiB)")


if __name__ == "__main__":
    main()
