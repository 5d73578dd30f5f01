"""`finops export focus`: the warehouse's rows under the spec's names, values unchanged (both engines)."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal as D

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from finops.export import export_focus
from tests.fixtures.focus_rows import focus_row, write_focus

PART = {"x_source": "s", "x_billing_period": "2024-05"}
# 10-decimal CUR amounts with 16-17 significant digits: a float keeps only ~15-17
AMOUNTS = [
    D("1234567.8912345678"),
    D("98765.4321098765"),
    D("0.0000000001"),
    D("-25.0000000000"),
    D("0.0133333333"),
]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_keeps_money_exact(any_wh, tmp_path, fmt):
    """Money was cast to DOUBLE on the way out: 1234567.8912345678 came back 1234567.8912345679."""
    rows = [
        focus_row(
            "s",
            "2024-05",
            i,
            billed_cost=a,
            effective_cost=-a,
            pricing_quantity=D("0.123456789012"),
            tags=json.dumps({"team": "=1+2", "k": "a,b\nc"}),
        )
        for i, a in enumerate(AMOUNTS)
    ]
    any_wh.replace_partition("focus_costs", PART, [write_focus(tmp_path / "in.parquet", rows)])
    out = tmp_path / f"focus.{fmt}"
    assert export_focus(any_wh, "2024-05", out) == len(AMOUNTS)
    if fmt == "parquet":
        t = pq.read_table(out)
        billed = t.column("BilledCost").to_pylist()
        effective = t.column("EffectiveCost").to_pylist()
        qty = t.column("PricingQuantity").to_pylist()
    else:
        t = pacsv.read_csv(
            out,
            convert_options=pacsv.ConvertOptions(
                column_types={"BilledCost": "string", "EffectiveCost": "string", "PricingQuantity": "string"}
            ),
        )
        billed = [D(v) for v in t.column("BilledCost").to_pylist()]
        effective = [D(v) for v in t.column("EffectiveCost").to_pylist()]
        qty = [D(v) for v in t.column("PricingQuantity").to_pylist()]
        assert t.column("ChargePeriodStart").to_pylist()[0] == datetime(2024, 5, 1) or str(
            t.column("ChargePeriodStart").to_pylist()[0]
        ).startswith("2024-05-01")
    assert sorted(billed) == sorted(AMOUNTS)
    assert sorted(effective) == sorted(-a for a in AMOUNTS)
    assert set(qty) == {D("0.123456789012")}
    assert sum(billed, D(0)) == sum(AMOUNTS, D(0))
    assert {json.dumps(json.loads(v), sort_keys=True) for v in t.column("Tags").to_pylist()} == {
        json.dumps({"team": "=1+2", "k": "a,b\nc"}, sort_keys=True)
    }
