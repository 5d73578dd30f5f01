"""Build focus_costs rows for tests (full FOCUS schema, sensible defaults)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from finops.focus.schema import arrow_schema

_DEFAULTS: dict[str, Any] = {
    "billing_account_id": "123456789012",
    "billing_account_name": "payer",
    "billing_currency": "USD",
    "charge_category": "Usage",
    "charge_description": "usage",
    "contracted_cost": Decimal(0),
    "invoice_issuer_name": "AWS",
    "list_cost": Decimal(0),
    "provider_name": "AWS",
    "publisher_name": "AWS",
    "service_category": "Compute",
    "service_name": "Amazon Elastic Compute Cloud",
    "x_source": "main-payer",
    "x_provider": "aws",
    "x_load_id": "test-load",
}


def focus_row(day: str, billed: str | Decimal, effective: str | Decimal | None = None, tags: dict | None = None,
              **kw: Any) -> dict[str, Any]:
    start = datetime.fromisoformat(day)
    period = day[:7]
    ps = datetime(start.year, start.month, 1)
    pe = datetime(ps.year + (ps.month == 12), ps.month % 12 + 1, 1)
    row = dict(_DEFAULTS)
    row.update(
        billed_cost=Decimal(str(billed)),
        effective_cost=Decimal(str(billed if effective is None else effective)),
        billing_period_start=ps, billing_period_end=pe,
        charge_period_start=start, charge_period_end=start + timedelta(hours=1),
        x_billing_period=period, tags=json.dumps(tags or {}),
    )
    row.update(kw)
    return row


def insert_focus(wh, rows: list[dict[str, Any]]) -> int:
    import pyarrow as pa

    schema = arrow_schema()
    full = [{c: r.get(c) for c in schema.names} for r in rows]
    return wh.insert_arrow("focus_costs", pa.Table.from_pylist(full, schema=schema))
