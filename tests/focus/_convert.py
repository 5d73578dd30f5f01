"""Run a converter through the real spine conversion (DuckDB -> staging parquet) and read rows back."""

from __future__ import annotations

from pathlib import Path

import duckdb

from finops.ingest import ConvertContext, RawBatch, convert_to_staging


def convert(converter, files: list[Path], *, provider: str, period: str, source: str = "src", tmp: Path):
    batch = RawBatch(source=source, provider=provider, billing_period=period, files=list(files), fingerprint="fp")
    ctx = ConvertContext(source, provider, period, "load-1")
    res = convert_to_staging(batch, converter, ctx, tmp / "staging.parquet")
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    cur = con.execute("SELECT * FROM read_parquet(?)", [str(res.staging_file)])
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    con.close()
    return res, rows
