"""Reading tables of any kind into Arrow, and giving results back in the kind given."""

from __future__ import annotations

import pyarrow as pa

from blendin.errors import BlendinError


def to_arrow(data) -> pa.Table:
    """A pyarrow Table from a pandas or polars DataFrame or a pyarrow Table.

    >>> import pandas as pd
    >>> to_arrow(pd.DataFrame({"a": [1, 2]})).num_rows
    2
    """
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        return pa.Table.from_pandas(data, preserve_index=False)
    if module == "polars":
        return data.to_arrow()
    raise BlendinError(
        f"cannot read a {type(data).__name__} as a table",
        fix="pass a pandas or polars DataFrame, a pyarrow Table, or a file path",
    )
