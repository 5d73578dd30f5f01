"""Benchmark finops.quality.validate_staging on a synthetic FOCUS staging parquet of N rows.

    .venv/bin/python bench/validate.py --rows 2000000

Builds the file with DuckDB from finops.focus.schema (every column, valid values), then
prints rows/s and RSS: after imports (baseline) and the peak during validation.
Not a test: figures only.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import duckdb
from rss import current_rss_mb, peak_rss_mb, reset_peak

from finops.focus.schema import (
    COLUMNS,
    MONEY_PRECISION,
    MONEY_SCALE,
    QUANTITY_PRECISION,
    QUANTITY_SCALE,
    Column,
    Kind,
)


def _expr(c: Column, y: int, m: int, period: str) -> str:
    ny, nm = (y + 1, 1) if m == 12 else (y, m + 1)
    bps, bpe = f"TIMESTAMP '{y:04d}-{m:02d}-01'", f"TIMESTAMP '{ny:04d}-{nm:02d}-01'"
    special = {
        "billing_period_start": bps,
        "billing_period_end": bpe,
        "charge_period_start": f"{bps} + to_hours((i % 600)::BIGINT)",
        "charge_period_end": f"{bps} + to_hours((i % 600)::BIGINT + 1)",
        "billing_currency": "'USD'",
        "pricing_currency": "'USD'",
        "charge_category": "CASE WHEN i % 97 = 0 THEN 'Tax' WHEN i % 89 = 0 THEN 'Credit' ELSE 'Usage' END",
        "charge_class": "NULL::VARCHAR",
        "charge_frequency": "'Usage-Based'",
        "pricing_category": "CASE WHEN i % 3 = 0 THEN 'Dynamic' ELSE 'Standard' END",
        "commitment_discount_status": "NULL::VARCHAR",
        "commitment_discount_category": "NULL::VARCHAR",
        "capacity_reservation_status": "NULL::VARCHAR",
        "service_category": "CASE WHEN i % 5 = 0 THEN 'Storage' ELSE 'Compute' END",
        "service_subcategory": "CASE WHEN i % 5 = 0 THEN 'Object Storage' ELSE 'Virtual Machines' END",
        "tags": 'CASE WHEN i % 4 = 0 THEN NULL ELSE \'{"team": "t\' || (i % 13) || \'", "env": "prod"}\' END',
        "sku_price_details": "NULL::VARCHAR",
        "x_source": "'bench'",
        "x_billing_period": f"'{period}'",
        "x_provider": "'aws'",
        "x_load_id": "'bench-load'",
    }
    if c.snake in special:
        return special[c.snake]
    if c.kind is Kind.MONEY:
        return (
            f"((i % 1000) * 0.0123456789 - (i % 7 = 0)::INT * 0.5)::DECIMAL({MONEY_PRECISION},{MONEY_SCALE})"
        )
    if c.kind is Kind.QUANTITY:
        return f"((i % 100) * 0.5)::DECIMAL({QUANTITY_PRECISION},{QUANTITY_SCALE})"
    if c.kind is Kind.TIMESTAMP:
        return bps
    return f"'{c.snake}-' || (i % 37)"


def make_staging(path: Path, rows: int, period: str = "2026-03") -> Decimal:
    """Write a valid FOCUS staging parquet; return its exact BilledCost total."""
    y, m = map(int, period.split("-"))
    sel = ",\n".join(f"{_expr(c, y, m, period)} AS {c.snake}" for c in COLUMNS)
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT {sel} FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 122880)"
    )
    total = con.execute(f"SELECT sum(billed_cost) FROM read_parquet('{path}')").fetchone()[0]
    con.close()
    return Decimal(total)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--period", default="2026-03")
    ap.add_argument("--file", type=Path, help="reuse / write the staging parquet here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        path = args.file or Path(tmp) / "staging.parquet"
        t = time.perf_counter()
        total = make_staging(path, args.rows, args.period)
        print(
            f"generated {args.rows:,} rows ({path.stat().st_size / 1e6:.0f} MB parquet) in {time.perf_counter() - t:.1f}s"
        )

        t = time.perf_counter()
        import great_expectations  # noqa: F401  # import cost reported apart from validation

        from finops.quality import validate_staging

        print(f"import great_expectations: {time.perf_counter() - t:.1f}s")
        # warm-up on a tiny slice: first GX context + SQL dialect setup, not per-batch work
        small = Path(tmp) / "small.parquet"
        small_total = make_staging(small, 1000, args.period)
        validate_staging([small], source="bench", billing_period=args.period, raw_billed_total=small_total)
        base = current_rss_mb()
        reset_peak()  # the peak below is validation's, not the generator's

        t = time.perf_counter()
        rep = validate_staging([path], source="bench", billing_period=args.period, raw_billed_total=total)
        dt = time.perf_counter() - t
        peak = peak_rss_mb()
        print(
            f"validate_staging: success={rep.success} rules={rep.stats['rules_checked']} failures={rep.failures}"
        )
        print(f"rows: {args.rows:,}  time: {dt:.2f}s  rows/s: {args.rows / dt:,.0f}")
        print(
            f"RSS: baseline after imports+warm-up {base:.0f} MB, peak {peak:.0f} MB, extra {peak - base:.0f} MB"
        )


if __name__ == "__main__":
    main()
