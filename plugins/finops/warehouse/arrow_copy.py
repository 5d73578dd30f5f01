"""Arrow record batches -> PostgreSQL `COPY ... FROM STDIN (FORMAT csv)` payload.

Why CSV: pyarrow's C++ CSV writer renders a whole batch at once (no per-value Python), and
PostgreSQL's CSV dialect is unambiguous for every value we store:
- every non-NULL value is quoted (`quoting_style="all_valid"`), a NULL is an empty unquoted
  field, so NULL and '' stay distinct; quotes are doubled; tabs, newlines, backslashes, `\\.`
  lines and emoji pass through verbatim (backslash is not special in CSV mode);
- decimals are written as exact decimal text (never via float), timestamps as ISO text;
  zoned timestamps are first converted to naive UTC (the warehouse stores UTC without zone);
- JSON columns are strings holding JSON text; PostgreSQL parses them into jsonb.
PostgreSQL text cannot hold the NUL character (U+0000): a batch containing one is refused with
an error naming the column, rather than silently altering billing data.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from finops.warehouse.base import DataRefused, WarehouseError

_WRITE_OPTIONS = pacsv.WriteOptions(include_header=False, quoting_style="all_valid", batch_size=8192)


def _has_nul(arr: pa.ChunkedArray | pa.Array) -> bool:
    """Whether any string value holds U+0000: a scan of the value bytes (UTF-8 never encodes
    anything else as a zero byte), much cheaper than a per-value substring match."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    for c in chunks:
        if len(c) == 0 or c.null_count == len(c):
            continue
        width = np.int64 if pa.types.is_large_string(c.type) else np.int32
        offs = np.frombuffer(c.buffers()[1], dtype=width, count=c.offset + len(c) + 1)
        data = c.buffers()[2]
        lo, hi = int(offs[c.offset]), int(offs[-1])
        if (
            data is not None
            and hi > lo
            and np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo).min() == 0
        ):
            # a NULL slot may span bytes: confirm on the values themselves
            return bool(pc.any(pc.match_substring(c, "\x00")).as_py())
    return False


def _normalise(arr: pa.ChunkedArray | pa.Array, name: str) -> pa.ChunkedArray | pa.Array:
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.cast(t.value_type)
        t = arr.type
    if pa.types.is_timestamp(t) and t.tz is not None:
        # tz-aware -> UTC wall clock, naive (casting away the zone keeps the UTC instant).
        return arr.cast(pa.timestamp(t.unit))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if _has_nul(arr):
            raise DataRefused(
                f"column {name!r} contains a NUL character (U+0000), which PostgreSQL text cannot store"
            )
        return arr
    if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        raise WarehouseError(f"column {name!r} has type {t}, which the warehouse load does not accept")
    return arr


def normalise_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    cols = [_normalise(batch.column(i), batch.schema.field(i).name) for i in range(batch.num_columns)]
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names)


def csv_bytes(batch: pa.RecordBatch) -> bytes:
    """One batch rendered as PostgreSQL-CSV (no header)."""
    buf = io.BytesIO()
    pacsv.write_csv(normalise_batch(batch), buf, _WRITE_OPTIONS)
    return buf.getvalue()


def table_batches(table: pa.Table, max_rows: int) -> Iterator[pa.RecordBatch]:
    yield from table.to_batches(max_chunksize=max_rows)


def csv_chunks(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[int, bytes]]:
    """(rows, payload) per batch, so the caller streams without holding the whole file."""
    for b in batches:
        if b.num_rows:
            yield b.num_rows, csv_bytes(b)
