"""`finops export focus`: the warehouse's FOCUS rows under the spec's own column names
(BilledCost, ChargePeriodStart, ...; our extension columns keep their x_ prefix, which FOCUS
reserves for custom columns), as parquet or CSV, ready for the FinOps Foundation validator.

InvoiceId stays in: focus-validator 2.2.1 (rules model 1.2.0.1) checks InvoiceId-C-004-C
("MUST be null") and InvoiceId-C-005-C ("MUST NOT be null") both WITHOUT their conditions, so
a filled column always fails exactly C-004-C (1 rule), and leaving the column out fails 7
(CostAndUsage-D-033-O, InvoiceId-C-000..005). That one failure is the validator's, not ours.
Validate parquet, not CSV: CSV makes the validator guess types (account ids become numbers).
See docs/focus-validator.md."""

from __future__ import annotations

import logging
from pathlib import Path

from finops.focus.schema import COLUMNS, Kind
from finops.orchestration.periods import parse_period
from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)


def _select_list(dialect: str, for_csv: bool) -> str:
    # Money and quantities leave as the warehouse's exact decimals (parquet DECIMAL, CSV decimal
    # text): a DOUBLE turned 1234567.8912345678 into ...679, and focus-validator 2.2.1 gives
    # decimal columns the very same verdict (136 passed, 1 failed, 441 skipped).
    parts = []
    for c in COLUMNS:
        expr = c.snake
        if c.kind is Kind.TIMESTAMP and for_csv:
            # ISO 8601 UTC with Z, as FOCUS requires for date/time values.
            expr = (f"strftime({c.snake}, '%Y-%m-%dT%H:%M:%SZ')" if dialect == "duckdb"
                    else f"to_char({c.snake}, 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
        elif c.kind is Kind.JSON:
            expr = f"CAST({c.snake} AS {'VARCHAR' if dialect == 'duckdb' else 'TEXT'})"
        parts.append(f'{expr} AS "{c.name}"')
    return ", ".join(parts)


def export_focus(wh: Warehouse, period: str, out: str | Path, source: str | None = None) -> int:
    """Write one billing period (all sources, or one) to `out` (.parquet or .csv). Returns rows."""
    parse_period(period)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fmt = out.suffix.lower().lstrip(".")
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"--out must end with .parquet or .csv, got {out.name!r}")
    where, params = "x_billing_period = ?", [period]
    if source:
        where += " AND x_source = ?"
        params.append(source)
    sql = (f"SELECT {_select_list(wh.dialect, fmt == 'csv')} FROM focus_costs WHERE {where} "
           "ORDER BY x_source, charge_period_start")
    table = wh.query_arrow(sql, params)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, out, compression="zstd")
    else:
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, out)
    log.info("exported %d FOCUS rows for %s to %s", table.num_rows, period, out)
    return table.num_rows
