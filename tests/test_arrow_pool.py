"""Arrow's pool per run (blendin.heap): jemalloc's for rows worked on in this process,
the system's malloc for a database's run (on glibc), never over the user's choice. Each
case runs in a process of its own (the pool is the process's)."""

import os
import platform
import subprocess
import sys

import pyarrow as pa
import pytest

try:
    pa.jemalloc_memory_pool()
except NotImplementedError:
    pytest.skip("this pyarrow has no jemalloc pool", allow_module_level=True)
if pa.default_memory_pool().backend_name != "mimalloc":
    pytest.skip("mimalloc is not this pyarrow's default pool", allow_module_level=True)

RUNS = """
import sys
import pyarrow as pa
import blendin as bl

if sys.argv[1] == "system":
    pa.set_memory_pool(pa.system_memory_pool())
rows = pa.table({"age": [str(20 + i % 30) for i in range(200)],
                 "sex": ["f", "m"] * 100})
spec = bl.Spec.from_dict({"quasi_identifiers": {"age": {"intervals": [10, 20]},
                                                "sex": {"flat": True}},
                          "privacy": [{"model": "k-anonymity", "k": 2}]})
pools = [pa.default_memory_pool().backend_name]
bl.anonymize(rows, spec)
if sys.argv[1] == "later":  # the user's own choice, after a run
    pa.set_memory_pool(pa.mimalloc_memory_pool())
pools.append(pa.default_memory_pool().backend_name)
import duckdb
con = duckdb.connect()
con.register("rows_view", rows)
con.execute("CREATE TABLE t AS SELECT * FROM rows_view")
bl.anonymize(con, spec, table="t")
pools.append(pa.default_memory_pool().backend_name)
bl.anonymize(rows, spec)
pools.append(pa.default_memory_pool().backend_name)
print(" ".join(pools))
"""


def pools(mode: str = "", **env: str) -> list[str]:
    environment = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    return subprocess.run([sys.executable, "-c", RUNS, mode], capture_output=True, text=True,
                          check=True, env={**environment, **env}).stdout.split()


def test_rows_here_use_jemalloc_and_a_database_run_the_systems_malloc():
    # at start, after a run on rows here, after a run in DuckDB, after rows here again
    database = "system" if platform.libc_ver()[0] == "glibc" else "mimalloc"
    assert pools() == ["mimalloc", "jemalloc", database, "jemalloc"]


def test_the_users_pool_stands():
    assert pools(ARROW_DEFAULT_MEMORY_POOL="system") == ["system"] * 4
    assert pools(ARROW_DEFAULT_MEMORY_POOL="mimalloc") == ["mimalloc"] * 4
    assert pools("system") == ["system"] * 4
    assert pools("later") == ["mimalloc"] * 4
