"""AWS's own FOCUS export (PascalCase FOCUS columns, Tags MAP, x_ extras) -> our columns."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from decimal import Decimal as D

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.focus.aws_focus import AwsFocusConverter
from finops.ingest import ConversionError
from tests.fixtures.focus_convert import convert


def _focus_rows() -> pa.Table:
    base = {
        "BilledCost": 10.5,
        "EffectiveCost": 7.25,
        "ListCost": 12.0,
        "ContractedCost": 10.5,
        "BillingAccountId": "111111111111",
        "BillingAccountName": "payer",
        "BillingCurrency": "USD",
        "BillingPeriodStart": datetime(2025, 3, 1),
        "BillingPeriodEnd": datetime(2025, 4, 1),
        "ChargePeriodStart": datetime(2025, 3, 2),
        "ChargePeriodEnd": datetime(2025, 3, 2, 1),
        "ChargeCategory": "Usage",
        "ChargeClass": None,
        "ChargeDescription": "p5 hour",
        "ChargeFrequency": "Usage-Based",
        "CommitmentDiscountId": "arn:aws:savingsplans::1:savingsplan/x",
        "CommitmentDiscountStatus": "Used",
        "CommitmentDiscountType": "Savings Plan",
        "CommitmentDiscountCategory": "Spend",
        "InvoiceIssuerName": "Amazon Web Services, Inc.",
        "ProviderName": "AWS",
        "PublisherName": "AWS",
        "PricingCategory": "Committed",
        "PricingQuantity": 1.0,
        "PricingUnit": "Hours",
        "ServiceCategory": "Compute",
        "ServiceName": "Amazon Elastic Compute Cloud",
        "RegionId": "us-east-1",
        "ResourceId": "i-1",
        "SubAccountId": "222222222222",
        "Tags": [("user_team", "'; drop table x;--"), ('k"q', "=cmd|")],
        "x_UsageType": "USE1-BoxUsage:p5.48xlarge",
        "x_Operation": "RunInstances",
        "x_SomethingNew": "ok",
    }
    tax = dict(
        base,
        BilledCost=1.25,
        EffectiveCost=1.25,
        ListCost=1.25,
        ContractedCost=1.25,
        ChargeCategory="Tax",
        CommitmentDiscountId=None,
        CommitmentDiscountStatus=None,
        CommitmentDiscountType=None,
        CommitmentDiscountCategory=None,
        PricingCategory=None,
        Tags=[],
        ResourceId=None,
    )
    schema = pa.schema(
        [
            (
                k,
                pa.map_(pa.string(), pa.string())
                if k == "Tags"
                else pa.timestamp("ms")
                if isinstance(v, datetime)
                else pa.float64()
                if isinstance(v, float)
                else pa.string(),
            )
            for k, v in base.items()
        ]
    )
    return pa.Table.from_pylist([base, tax], schema=schema)


def test_aws_focus_export_maps_to_our_columns(tmp_path, finops_home):
    pq.write_table(_focus_rows(), tmp_path / "focus.parquet")
    res, rows = convert(
        AwsFocusConverter(), [tmp_path / "focus.parquet"], provider="aws", period="2025-03", tmp=tmp_path
    )
    assert res.raw_billed_total == res.focus_billed_total == D("11.75")
    assert res.focus_effective_total == D("8.5")
    use = next(r for r in rows if r["charge_category"] == "Usage")
    assert (use["billed_cost"], use["effective_cost"], use["list_cost"]) == (D("10.5"), D("7.25"), D("12"))
    assert use["commitment_discount_status"] == "Used" and use["pricing_category"] == "Committed"
    assert use["x_usage_type"] == "USE1-BoxUsage:p5.48xlarge" and use["x_operation"] == "RunInstances"
    assert use["x_provider"] == "aws" and use["x_source"] == "src" and use["x_billing_period"] == "2025-03"
    assert json.loads(use["tags"]) == {"user_team": "'; drop table x;--", 'k"q': "=cmd|"}
    tax = next(r for r in rows if r["charge_category"] == "Tax")
    assert tax["tags"] is None and tax["commitment_discount_id"] is None


def test_aws_focus_export_missing_billed_cost(tmp_path, finops_home):
    pq.write_table(_focus_rows().drop(["BilledCost"]), tmp_path / "f.parquet")
    with pytest.raises(ConversionError, match="BilledCost"):
        convert(AwsFocusConverter(), [tmp_path / "f.parquet"], provider="aws", period="2025-03", tmp=tmp_path)


def test_aws_focus_csv_money_is_read_as_text_not_sniffed(tmp_path, finops_home):
    """A gzip-csv FOCUS export whose first rows all bill 0 (SP-covered usage): DuckDB's sniffer
    typed BilledCost BIGINT from its sample and read a later '1.25' as 1, raw total included,
    so the reconciliation agreed with itself and a cent-wrong month loaded."""
    cols = [
        "BilledCost",
        "EffectiveCost",
        "ListCost",
        "ContractedCost",
        "BillingAccountId",
        "BillingCurrency",
        "BillingPeriodStart",
        "BillingPeriodEnd",
        "ChargePeriodStart",
        "ChargePeriodEnd",
        "ChargeCategory",
        "SubAccountId",
        "Tags",
    ]

    def line(cost: str) -> str:
        return (
            f"{cost},{cost},{cost},{cost},012345678901,USD,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,"
            '2025-03-02T00:00:00Z,2025-03-02T01:00:00Z,Usage,000000000042,"{""user_team"":""a""}"'
        )

    body = [",".join(cols)] + [line("0")] * 30_000 + [line("1.25"), line("0.0000000325"), line("")]
    f = tmp_path / "focus-00001.csv.gz"
    f.write_bytes(gzip.compress(("\n".join(body) + "\n").encode()))
    res, rows = convert(AwsFocusConverter(), [f], provider="aws", period="2025-03", tmp=tmp_path)
    assert res.raw_billed_total == res.focus_billed_total == D("1.2500000325")
    assert sorted(r["billed_cost"] for r in rows if r["billed_cost"])[-2:] == [D("0.0000000325"), D("1.25")]
    assert {r["billing_account_id"] for r in rows} == {"012345678901"}
    assert {r["sub_account_id"] for r in rows} == {"000000000042"}
    assert json.loads(rows[0]["tags"]) == {"user_team": "a"}


def test_subcategory_of_an_export_without_one_is_its_categorys_other(tmp_path, finops_home):
    """AWS's FOCUS 1.0 export has no ServiceSubcategory: the rows loaded with it null, which
    FOCUS 1.2 forbids, so `finops export focus` of such a month failed focus-validator. A value
    the export does carry is kept when FOCUS 1.2 lists it under the row's category; otherwise a
    service the CUR mapping knows gets its subcategory there, anything else the catch-all."""
    from finops.focus.schema import SERVICE_SUBCATEGORIES

    table = _focus_rows()  # no ServiceSubcategory column, like the 1.0 export
    pq.write_table(table, tmp_path / "v10.parquet")
    _, rows = convert(
        AwsFocusConverter(), [tmp_path / "v10.parquet"], provider="aws", period="2025-03", tmp=tmp_path
    )
    # EC2 as the CUR mapping files it (one subcategory per ServiceName across CUR and FOCUS loads)
    assert [r["service_subcategory"] for r in rows] == ["Virtual Machines", "Virtual Machines"]

    cats = pa.array(["Compute", "No Such Category"])
    subs = pa.array(["Virtual Machines", " "])
    v12 = table.set_column(table.schema.get_field_index("ServiceCategory"), "ServiceCategory", cats)
    pq.write_table(v12.append_column("ServiceSubcategory", subs), tmp_path / "v12.parquet")
    _, rows = convert(
        AwsFocusConverter(), [tmp_path / "v12.parquet"], provider="aws", period="2025-03", tmp=tmp_path
    )
    assert [r["service_subcategory"] for r in rows] == ["Virtual Machines", "Other (Other)"]

    # unlisted ('Compute Instances') or under another category: the known one, else the catch-all
    names = pa.array(["Amazon Elastic Compute Cloud", "Brand New Service"])
    v13 = table.set_column(table.schema.get_field_index("ServiceName"), "ServiceName", names)
    subs = pa.array(["Compute Instances", "Object Storage"])
    pq.write_table(v13.append_column("ServiceSubcategory", subs), tmp_path / "v13.parquet")
    _, rows = convert(
        AwsFocusConverter(), [tmp_path / "v13.parquet"], provider="aws", period="2025-03", tmp=tmp_path
    )
    assert [r["service_subcategory"] for r in rows] == ["Virtual Machines", "Other (Compute)"]
    assert all(
        SERVICE_SUBCATEGORIES[r["service_subcategory"]] in (r["service_category"], "Other") for r in rows
    )
