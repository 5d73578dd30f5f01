"""Every AWS export variant loads as it is. Files are built from the column lists AWS documents
(finops.focus.aws_columns: CUR 2.0, FOCUS 1.0 / 1.2 with AWS columns) in each documented shape:
all columns or a custom selection, with or without resource IDs and split cost allocation,
hourly / daily / monthly, parquet or gzip csv. The matrix is docs/billing-exports/aws.md."""

from __future__ import annotations

import csv
import gzip
import json
import re
from datetime import datetime, timedelta
from decimal import Decimal as D
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.focus.aws_columns import (
    CUR2_COLUMNS,
    CUR2_RESOURCE_COLUMN,
    FOCUS_1_0_AWS_COLUMNS,
    FOCUS_1_2_AWS_COLUMNS,
    SPLIT_PREFIX,
)
from finops.focus.aws_cur_mapping import REQUIRED, Cur2Converter, CurLegacyConverter
from finops.focus.aws_focus import AwsFocusConverter
from tests.fixtures.focus_convert import convert

START, END = datetime(2025, 3, 1), datetime(2025, 4, 1)
MAPS = {"product", "resource_tags", "cost_category"}
NUMERIC = re.compile(r"(cost|rate|amount|factor|quantity|ratio|usage|fee|value|commitment|to_date)$")


def cur2_type(name: str) -> pa.DataType:
    """The parquet type a CUR 2.0 delivery has for a documented column."""
    if name in MAPS:
        return pa.map_(pa.string(), pa.string())
    if name == "discount":
        return pa.map_(pa.string(), pa.float64())
    if name.endswith(("_start_date", "_end_date")):
        return pa.timestamp("ms")
    return pa.float64() if NUMERIC.search(name) else pa.string()


def line(**kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict(
        bill_payer_account_id="111111111111", bill_invoice_id="INV-1", bill_billing_entity="AWS",
        bill_bill_type="Anniversary", bill_billing_period_start_date=START, bill_billing_period_end_date=END,
        line_item_usage_account_id="222222222222", line_item_line_item_type="Usage",
        line_item_usage_start_date=datetime(2025, 3, 2), line_item_usage_end_date=datetime(2025, 3, 2, 1),
        line_item_product_code="AmazonEC2", line_item_usage_type="USE1-BoxUsage:g5.xlarge",
        line_item_operation="RunInstances", line_item_currency_code="USD", line_item_unblended_cost=1.006,
        line_item_unblended_rate=1.006, line_item_usage_amount=1.0, pricing_unit="Hrs",
        line_item_resource_id="i-0abc", line_item_line_item_description="$1.006 per On Demand Linux g5.xlarge Instance Hour",
        product_region_code="us-east-1", resource_tags=[("user_team", "ml")],
    )  # fmt: skip
    row.update(kw)
    return row


def write_cur2(path: Path, rows: list[dict[str, Any]], columns: tuple[str, ...] = CUR2_COLUMNS) -> Path:
    schema = pa.schema([(c, cur2_type(c)) for c in columns])
    pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows], schema=schema), path)
    return path


def write_csv_gz(path: Path, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> Path:
    """Data Exports' gzip csv: the same column names, text values, maps as JSON."""

    def text(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, list):
            return json.dumps(dict(v))
        return v.strftime("%Y-%m-%dT%H:%M:%S.000Z") if isinstance(v, datetime) else str(v)

    with gzip.open(path, "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        w.writerows([[text(r.get(c)) for c in columns] for r in rows])
    return path


def raw_view(conv: Any, files: list[Path]) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    """The spine's two raw views (files as read -> normalised) on a fresh connection."""
    con = duckdb.connect()
    con.execute(f"CREATE VIEW src AS {conv.reader_sql([str(f) for f in files])}")
    cols = {r[0]: r[1] for r in con.execute("DESCRIBE src").fetchall()}
    con.execute(f"CREATE VIEW raw AS {conv.normalize_sql('src', cols)}")
    return con, list(cols)


def derived(conv: Any, files: list[Path]) -> dict[str, int]:
    con, _ = raw_view(conv, files)
    out = {c: int(n) for c, n in con.execute(conv.derived_counts_sql("raw")).fetchall() if n}
    con.close()
    return out


SPLIT_ROWS = [
    line(line_item_unblended_cost=10.0, line_item_resource_id="i-0node"),
    line(line_item_unblended_cost=0.0, line_item_resource_id="arn:aws:eks:us-east-1:2:pod/c/ns/p1",
         split_line_item_parent_resource_id="i-0node", split_line_item_split_cost=4.0,
         split_line_item_split_usage_ratio=0.4),
    line(line_item_unblended_cost=0.0, line_item_resource_id="arn:aws:eks:us-east-1:2:pod/c/ns/p2",
         split_line_item_parent_resource_id="i-0node", split_line_item_split_cost=6.0,
         split_line_item_split_usage_ratio=0.6),
]  # fmt: skip


def test_cur2_all_documented_columns_with_resources_and_split_cost(tmp_path, finops_home):
    f = write_cur2(tmp_path / "all.parquet", SPLIT_ROWS)
    conv = Cur2Converter()
    _, cols = raw_view(conv, [f])
    assert conv.variant(cols) == (
        "AWS CUR 2.0 (Data Exports), with resource IDs, split cost allocation, all documented columns"
    )
    res, rows = convert(conv, [f], provider="aws", period="2025-03", tmp=tmp_path)
    # split lines carry the pods' share in split_line_item_*; the invoice stays the node's line
    assert res.raw_billed_total == res.focus_billed_total == D("10") and res.row_count == 3
    assert {r["resource_id"] for r in rows} >= {"i-0node", "arn:aws:eks:us-east-1:2:pod/c/ns/p1"}


def test_cur2_without_resource_ids(tmp_path, finops_home):
    columns = tuple(c for c in CUR2_COLUMNS if c != CUR2_RESOURCE_COLUMN and not c.startswith(SPLIT_PREFIX))
    f = write_cur2(
        tmp_path / "nores.parquet",
        [line(), line(line_item_line_item_type="Tax", line_item_unblended_cost=0.1)],
        columns,
    )
    conv = Cur2Converter()
    _, cols = raw_view(conv, [f])
    assert conv.variant(cols) == "AWS CUR 2.0 (Data Exports), no resource IDs, all documented columns"
    res, rows = convert(conv, [f], provider="aws", period="2025-03", tmp=tmp_path)
    assert res.focus_billed_total == D("1.106") and {r["resource_id"] for r in rows} == {None}


@pytest.mark.parametrize("form", ["parquet", "csv.gz"])
def test_cur2_custom_column_selection(tmp_path, finops_home, form):
    """A custom Data Export selecting only the columns the mapping needs, plus tags."""
    columns = (*REQUIRED, "line_item_usage_amount", "pricing_unit", "resource_tags")
    rows = [line(), line(line_item_unblended_cost=0.0000000049, line_item_currency_code="EUR")]
    f = (write_cur2(tmp_path / "sel.parquet", rows, columns) if form == "parquet"
         else write_csv_gz(tmp_path / "sel-00001.csv.gz", rows, columns))  # fmt: skip
    conv = Cur2Converter()
    _, cols = raw_view(conv, [f])
    assert conv.variant(cols).startswith("AWS CUR 2.0 (Data Exports), no resource IDs, 12 of ")
    res, out = convert(conv, [f], provider="aws", period="2025-03", tmp=tmp_path)
    assert res.raw_by_currency == {"USD": D("1.006"), "EUR": D("0.0000000049")}
    assert res.focus_billed_total == D("1.0060000049")
    # no description column selected: every row's ChargeDescription is derived, and counted
    assert {r["charge_description"] for r in out} == {"Amazon Elastic Compute Cloud"}
    assert derived(conv, [f]) == {"ChargeDescription": 2}
    assert {json.dumps(json.loads(r["tags"])) for r in out} == {'{"user_team": "ml"}'}


@pytest.mark.parametrize(("granularity", "step", "n"), [
    ("hourly", timedelta(hours=1), 744), ("daily", timedelta(days=1), 31), ("monthly", END - START, 1)])  # fmt: skip
def test_cur2_granularity(tmp_path, finops_home, granularity, step, n):
    """TIME_GRANULARITY changes how many lines a month has, not what they add up to."""
    hours = D(step.total_seconds()) / 3600
    rows = [line(line_item_usage_start_date=START + i * step, line_item_usage_end_date=START + (i + 1) * step,
                 line_item_usage_amount=float(hours), line_item_unblended_cost=float(hours * D("0.5")))
            for i in range(n)]  # fmt: skip
    res, out = convert(Cur2Converter(), [write_cur2(tmp_path / f"{granularity}.parquet", rows)], provider="aws",
                       period="2025-03", tmp=tmp_path)  # fmt: skip
    assert res.row_count == n and res.focus_billed_total == res.raw_billed_total == D("372")
    assert (
        min(r["charge_period_start"] for r in out) == START
        and max(r["charge_period_end"] for r in out) == END
    )
    assert sum(r["pricing_quantity"] for r in out) == D(744) and {r["pricing_unit"] for r in out} == {"Hours"}


def test_charge_description_derived_only_where_missing(tmp_path, finops_home):
    sp = "arn:aws:savingsplans::1:savingsplan/sp-1"
    rows = [
        line(),  # has its own description: kept
        line(line_item_line_item_description=""),
        line(line_item_line_item_description=None, line_item_line_item_type="Tax", line_item_usage_type=None,
             line_item_operation=None, line_item_product_code="AWSLambda"),
        line(line_item_line_item_description=None, line_item_line_item_type="SavingsPlanRecurringFee",
             line_item_product_code="ComputeSavingsPlans", line_item_usage_type="ComputeSP:1yrNoUpfront",
             line_item_operation=None, savings_plan_savings_plan_a_r_n=sp, savings_plan_total_commitment_to_date=5.0,
             savings_plan_used_commitment=4.0, line_item_unblended_cost=5.0),
        line(line_item_line_item_description=None, line_item_product_code="AmazonNewService",
             line_item_usage_type=None, line_item_operation=None),
    ]  # fmt: skip
    f = write_cur2(tmp_path / "d.parquet", rows)
    _, out = convert(Cur2Converter(), [f], provider="aws", period="2025-03", tmp=tmp_path)
    assert sorted({r["charge_description"] for r in out}) == [
        "$1.006 per On Demand Linux g5.xlarge Instance Hour",
        "Amazon Elastic Compute Cloud USE1-BoxUsage:g5.xlarge (RunInstances)",
        "AmazonNewService",
        "SavingsPlanRecurringFee: Savings Plans for AWS Compute usage ComputeSP:1yrNoUpfront",
        "Tax: AWS Lambda",
    ]
    assert all(r["charge_description"] for r in out)
    # the fee line is two FOCUS rows (Purchase + Unused commitment): 1 + 1 + 2 + 1
    assert derived(Cur2Converter(), [f]) == {"ChargeDescription": 5}


def test_legacy_csv_variant_names_its_form(tmp_path, finops_home):
    head = "bill/PayerAccountId,lineItem/UnblendedCost,resourceTags/user:team,resourceTags/user:Team"
    assert CurLegacyConverter().variant(head.split(",")) == (
        "AWS legacy CUR, csv headers (lineItem/UnblendedCost), 2 tag column(s), no resource IDs"
    )
    assert CurLegacyConverter().variant(["line_item_unblended_cost", "line_item_resource_id", "resource_tags_user_a"]) == (
        "AWS legacy CUR, parquet / Athena names (line_item_unblended_cost), 1 tag column(s), with resource IDs")  # fmt: skip


def focus_row(columns: tuple[str, ...], **kw: Any) -> dict[str, Any]:
    base = dict(
        BilledCost=2.5, EffectiveCost=2.5, ListCost=2.5, ContractedCost=2.5, BillingAccountId="111111111111",
        BillingCurrency="USD", BillingPeriodStart=START, BillingPeriodEnd=END, ChargePeriodStart=datetime(2025, 3, 2),
        ChargePeriodEnd=datetime(2025, 3, 3), ChargeCategory="Usage", ChargeFrequency="Usage-Based",
        ProviderName="AWS", PublisherName="AWS", InvoiceIssuerName="AWS", ServiceCategory="Storage",
        ServiceName="Amazon Simple Storage Service", SubAccountId="222222222222", PricingQuantity=10.0,
        PricingUnit="GB-Mo", x_UsageType="USE1-TimedStorage-ByteHrs", x_Operation="StandardStorage",
        x_ServiceCode="AmazonS3", SkuMeter="USE1-TimedStorage-ByteHrs", ServiceSubcategory="Object Storage",
        ChargeDescription=None,
    )  # fmt: skip
    base.update(kw)
    return {c: base.get(c) for c in columns}


def focus_type(name: str) -> pa.DataType:
    if name in ("Tags", "x_CostCategories", "SkuPriceDetails"):
        return pa.map_(pa.string(), pa.string())
    if name == "x_Discounts":
        return pa.map_(pa.string(), pa.float64())
    if name.endswith(("PeriodStart", "PeriodEnd")):
        return pa.timestamp("ms")
    return pa.float64() if re.search(r"(Cost|Price|Quantity)$", name) else pa.string()


@pytest.mark.parametrize(
    ("version", "columns"), [("1.0", FOCUS_1_0_AWS_COLUMNS), ("1.2", FOCUS_1_2_AWS_COLUMNS)]
)
def test_aws_focus_exports(tmp_path, finops_home, version, columns):
    rows = [focus_row(columns), focus_row(columns, ChargeDescription="S3 standard storage", BilledCost=0.25,
                                          EffectiveCost=0.25, ListCost=0.25, ContractedCost=0.25)]  # fmt: skip
    schema = pa.schema([(c, focus_type(c)) for c in columns])
    f = tmp_path / f"focus-{version}.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), f)
    conv = AwsFocusConverter()
    _, cols = raw_view(conv, [f])
    assert conv.variant(cols) == f"AWS FOCUS {version} export, all documented columns"
    res, out = convert(conv, [f], provider="aws", period="2025-03", tmp=tmp_path)
    assert res.raw_billed_total == res.focus_billed_total == D("2.75")
    descriptions = sorted(r["charge_description"] for r in out)
    usage_type = "USE1-TimedStorage-ByteHrs"
    assert descriptions == [
        "Amazon Simple Storage Service " + usage_type + " (StandardStorage)",
        "S3 standard storage",
    ]
    subcategory = "Object Storage"  # the export's (1.2); for 1.0, the CUR mapping's for S3
    assert {r["service_subcategory"] for r in out} == {subcategory}
    assert {r["pricing_unit"] for r in out} == {"GB-Months"}  # CUR's 'GB-Mo' in FOCUS UnitFormat
    expected = {"ChargeDescription": 1} | ({"ServiceSubcategory": 2} if version == "1.0" else {})
    assert derived(conv, [f]) == expected
