"""Build small FOCUS tables / parquet files (typed by finops.focus.schema.arrow_schema())."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from finops.focus.schema import arrow_schema


def focus_row(source: str, period: str, i: int = 0, **over: Any) -> dict[str, Any]:
    """One valid FOCUS row; `over` replaces any column (snake_case)."""
    y, m = (int(x) for x in period.split("-"))
    start = datetime(y, m, 1)
    end = datetime(y + (m == 12), m % 12 + 1, 1)
    row: dict[str, Any] = {
        "billed_cost": Decimal("1.2500000000"),
        "billing_account_id": "123456789012",
        "billing_account_name": "payer",
        "billing_currency": "USD",
        "billing_period_start": start,
        "billing_period_end": end,
        "charge_category": "Usage",
        "charge_description": f"row {i}",
        "charge_period_start": start,
        "charge_period_end": datetime(y, m, 1, 1),
        "contracted_cost": Decimal("1.25"),
        "effective_cost": Decimal("1.25"),
        "invoice_issuer_name": "AWS",
        "list_cost": Decimal("1.5"),
        "pricing_quantity": Decimal("1.000000000001"),
        "provider_name": "AWS",
        "publisher_name": "AWS",
        "service_category": "Compute",
        "service_name": "Amazon EC2",
        "resource_id": f"i-{i:08x}",
        "tags": json.dumps({"team": f"team-{i % 3}"}),
        "x_source": source,
        "x_billing_period": period,
        "x_provider": "aws",
        "x_load_id": f"load-{source}-{period}",
    }
    row.update(over)
    return row


def focus_table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=arrow_schema())


def write_focus(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(focus_table(rows), path)
    return path
