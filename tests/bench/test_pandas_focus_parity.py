"""bench/pandas_focus.py maps CUR 2.0 -> FOCUS exactly as the spine's SQL does.

Why: bench/ingest.py reports "spine vs pandas"; that number means something only if the pandas
side does the same work. Each case converts one file with the real spine (DuckDB SQL ->
staging parquet) and with `map_cur2`, then compares every column: same columns, same row
count, strings / timestamps equal, money and quantities within 1e-6 (pandas uses float64).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.demo.cur_generator import CUR2_SCHEMA, GenSpec, write_cur2_period
from finops.focus.aws_cur_mapping import Cur2Converter
from finops.focus.schema import COLUMNS, Kind
from finops.ingest import ConvertContext, RawBatch, convert_to_staging
from tests.fixtures.bench_scripts import bench_script

NUMERIC = {c.snake for c in COLUMNS if c.kind in (Kind.MONEY, Kind.QUANTITY)}
TIMESTAMPS = {c.snake for c in COLUMNS if c.kind == Kind.TIMESTAMP}
# Rows are matched on every non-numeric column plus two pass-through numbers (bit-identical
# on both sides: generated amounts are whole 1e-8 / 1e-4 units), never on computed money.
SORT_KEY = [c.snake for c in COLUMNS if c.snake not in NUMERIC] + ["billed_cost", "pricing_quantity"]
LINE_TYPES = {
    "Usage",
    "SavingsPlanCoveredUsage",
    "SavingsPlanNegation",
    "DiscountedUsage",
    "SavingsPlanRecurringFee",
    "SavingsPlanUpfrontFee",
    "Fee",
    "RIFee",
    "Credit",
    "Tax",
    "Refund",
    "BundledDiscount",
}
HOSTILE_TAGS = {'quote"key/é': "tab\tnewline\ncontrol\u0001ü", "empty": "", "unicode": "日本\u2028"}


def _pandas_focus() -> ModuleType:
    return bench_script("pandas_focus")


def _spine(path: Path, period: str, tmp: Path) -> pd.DataFrame:
    ctx = ConvertContext("src", "aws", period, "load-1")
    batch = RawBatch(source="src", provider="aws", billing_period=period, files=[path], fingerprint="fp")
    res = convert_to_staging(batch, Cur2Converter(), ctx, tmp / "staging.parquet")
    return pd.read_parquet(res.staging_file)


def _canonical(df: pd.DataFrame) -> pd.DataFrame:
    """Comparable form: float64 numbers (Decimal -> float), us timestamps, object strings with None."""
    out = {}
    for name in df.columns:
        s = df[name]
        if name in NUMERIC:
            out[name] = pd.to_numeric(s.astype(object).where(s.notna(), np.nan)).astype("float64")
        elif name in TIMESTAMPS:
            out[name] = pd.to_datetime(s).astype("datetime64[us]")
        else:
            out[name] = s.astype(object).where(s.notna(), None)
    key = [k for k in SORT_KEY if k in out]
    return pd.DataFrame(out).sort_values(key, na_position="first", kind="stable").reset_index(drop=True)


def _assert_parity(path: Path, period: str, tmp: Path) -> pd.DataFrame:
    sql = _spine(path, period, tmp)
    # the whole pandas path bench/ingest.py times: read (projected), map_cur2, write parquet
    info = _pandas_focus().run(
        str(path), str(tmp / "pandas.parquet"), source="src", billing_period=period, load_id="load-1"
    )
    pdf = pd.read_parquet(tmp / "pandas.parquet")
    assert info["rows"] == len(pdf)
    assert set(pdf.columns) == set(sql.columns) == {c.snake for c in COLUMNS}
    assert len(pdf) == len(sql), f"pandas {len(pdf)} rows, spine {len(sql)}"
    a, b = _canonical(sql), _canonical(pdf[list(sql.columns)])
    bad: list[str] = []
    for name in a.columns:
        x, y = a[name], b[name]
        both_null = x.isna() & y.isna()
        if name in NUMERIC:
            same = both_null | ((x - y).abs() <= 1e-6)
        else:
            same = both_null | (x == y)
        if not same.all():
            i = int(np.flatnonzero(~same.to_numpy())[0])
            bad.append(
                f"{name}: {int((~same).sum())} rows differ, e.g. row {i} sql={x.iloc[i]!r} "
                f"pandas={y.iloc[i]!r} ({a['x_charge_type'].iloc[i]})"
            )
    assert not bad, "\n".join(bad)
    return a


@pytest.mark.parametrize(
    "spec",
    [
        GenSpec("2025-01", rows=5_000, seed=1),
        GenSpec("2025-02", rows=5_000, seed=3, extra_tags=HOSTILE_TAGS, include_purchases=False),
        GenSpec("2024-12", rows=5_000, seed=7, restatement=1, currency="EUR"),  # pricing currency differs
    ],
    ids=lambda s: f"{s.period}-seed{s.seed}",
)
def test_generated_month_parity(spec: GenSpec, tmp_path: Path) -> None:
    d = write_cur2_period(tmp_path / "export", spec)
    out = _assert_parity(tmp_path / "export" / d.data_keys[0], spec.period, tmp_path)
    assert len(out) == d.totals.focus_rows
    expected = LINE_TYPES - ({"SavingsPlanUpfrontFee", "Fee"} if not spec.include_purchases else set())
    assert set(out["x_charge_type"]) == expected  # every line-item type the generator makes was compared


def _edge_rows(base: dict[str, Any]) -> list[dict[str, Any]]:
    """Hand-made rows for the branches a generated month never takes."""
    ts = datetime(2025, 3, 2, 5)
    common = {
        **base,
        "bill_billing_period_start_date": datetime(2025, 3, 1),
        "bill_billing_period_end_date": datetime(2025, 4, 1),
        "line_item_usage_start_date": ts,
        "line_item_usage_end_date": ts.replace(hour=6),
    }

    def row(i: int, **kw: Any) -> dict[str, Any]:
        return {**common, "line_item_resource_id": f"edge-{i:03d}", **kw}

    sp, ri = "arn:aws:savingsplans::1:savingsplan/x", "arn:aws:ec2:us-east-1:1:reserved-instances/y"
    cr = "arn:aws:ec2:us-east-1:1:capacity-reservation/cr-1"
    return [
        row(
            1,
            line_item_product_code="AWSLambda",
            pricing_unit="Lambda-GB-Second",
            line_item_net_unblended_rate=" 0.5 ",
            capacity_reservation_capacity_reservation_a_r_n=cr,
            capacity_reservation_capacity_reservation_status="UNUSED",
        ),
        row(
            2,
            line_item_product_code="AmazonNewThing",
            pricing_unit="Foo-Min",
            capacity_reservation_capacity_reservation_a_r_n=cr,
            capacity_reservation_capacity_reservation_status="Used",
        ),
        row(
            3,
            bill_billing_entity="AWS Marketplace",
            line_item_legal_entity="Vendor Inc",
            pricing_unit="  ",
            line_item_usage_amount=None,
        ),
        row(4, bill_billing_entity="AWS Marketplace", line_item_legal_entity=None, pricing_unit="GB-Hr"),
        row(5, line_item_currency_code=" usd ", pricing_currency="EUR", pricing_unit="Widget-Day"),
        row(6, line_item_line_item_type="SomethingNew"),
        row(7, line_item_line_item_type="EdpDiscount", line_item_unblended_cost=-1.25),
        row(8, line_item_product_code=None, line_item_usage_type=None, product_product_family=None),
        row(
            9,
            line_item_line_item_type="SavingsPlanRecurringFee",
            savings_plan_savings_plan_a_r_n=sp,
            savings_plan_total_commitment_to_date=None,
            savings_plan_used_commitment=3.0,
            line_item_unblended_cost=10.0,
        ),
        row(
            10,
            line_item_line_item_type="DiscountedUsage",
            reservation_reservation_a_r_n=ri,
            reservation_effective_cost=None,
        ),
        row(
            11, line_item_line_item_type="Fee", reservation_reservation_a_r_n="", bill_bill_type="Anniversary"
        ),
        row(
            12,
            line_item_net_unblended_cost=None,
            pricing_public_on_demand_cost=None,
            line_item_unblended_rate="",
        ),
        row(
            13,
            line_item_product_code="AmazonEC2",
            line_item_usage_type="USE1-EBS:SnapshotUsage",
            product_product_family="Snapshot",
            pricing_unit="GB-Mo",
        ),
        row(
            14,
            line_item_line_item_type="RIFee",
            reservation_reservation_a_r_n="",
            reservation_unused_amortized_upfront_fee_for_billing_period=None,
            reservation_unused_recurring_fee=2.5,
            reservation_unused_quantity=None,
        ),
        row(15, resource_tags=None, line_item_line_item_type="Refund", bill_bill_type="Refund"),
        row(16, resource_tags=[], line_item_product_code="AmazonRDS", product_product_family="Data Transfer"),
        row(17, line_item_line_item_type=None, line_item_unblended_cost=None),
        row(
            18,
            line_item_line_item_type="SavingsPlanNegation",
            savings_plan_savings_plan_a_r_n=None,
            line_item_usage_type="USE1-SpotUsage:x",
        ),
    ]


def test_edge_branch_parity(tmp_path: Path) -> None:
    """Branches the generator never takes: optional columns, NULLs, marketplace, odd units,
    capacity reservations, unknown services and line-item types, missing commitment fields."""
    extra = pa.schema(
        [
            ("line_item_net_unblended_rate", pa.string()),
            ("capacity_reservation_capacity_reservation_a_r_n", pa.string()),
            ("capacity_reservation_capacity_reservation_status", pa.string()),
        ]
    )
    schema = pa.schema(list(CUR2_SCHEMA) + list(extra))
    d = write_cur2_period(tmp_path / "export", GenSpec("2025-03", rows=60, seed=5))
    gen = pq.read_table(tmp_path / "export" / d.data_keys[0]).to_pylist()
    base = {**next(r for r in gen if r["line_item_line_item_type"] == "Usage"), **dict.fromkeys(extra.names)}
    rows = [{**r, **dict.fromkeys(extra.names)} for r in gen] + _edge_rows(base)
    path = tmp_path / "edge.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    out = _assert_parity(path, "2025-03", tmp_path)
    assert {"Unused", "Used"} <= set(out["capacity_reservation_status"].dropna())
    assert "Vendor Inc" in set(out["publisher_name"])


def test_missing_optional_columns_parity(tmp_path: Path) -> None:
    """An export without the optional columns: both sides treat each as all NULL."""
    d = write_cur2_period(tmp_path / "export", GenSpec("2025-04", rows=2_000, seed=11))
    table = pq.read_table(tmp_path / "export" / d.data_keys[0])
    optional = [
        "bill_billing_entity",
        "bill_bill_type",
        "line_item_net_unblended_cost",
        "line_item_usage_amount",
        "pricing_currency",
        "pricing_unit",
        "pricing_public_on_demand_cost",
        "pricing_public_on_demand_rate",
        "product_product_family",
        "line_item_usage_type",
        "reservation_reservation_a_r_n",
        "reservation_effective_cost",
        "reservation_unused_recurring_fee",
        "savings_plan_savings_plan_a_r_n",
        "savings_plan_total_commitment_to_date",
        "resource_tags",
        "product_location",
        "line_item_resource_id",
    ]
    path = tmp_path / "slim.parquet"
    pq.write_table(table.drop_columns(optional), path)
    out = _assert_parity(path, "2025-04", tmp_path)
    assert out["tags"].isna().all() and out["pricing_unit"].isna().all()
