"""CUR 2.0 / legacy CUR -> FOCUS 1.2 on small hand-checked cases (real DuckDB conversion)."""

from __future__ import annotations

import gzip
from datetime import datetime
from decimal import Decimal as D
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.demo.cur_generator import CUR2_SCHEMA
from finops.focus.aws_cur_mapping import REQUIRED, Cur2Converter, CurLegacyConverter, legacy_to_snake
from finops.focus.schema import snake_names
from finops.ingest import ConversionError
from tests.fixtures.cur_rows import START, cur_row, write_cur
from tests.fixtures.focus_convert import convert

SP = "arn:aws:savingsplans::111111111111:savingsplan/sp-1"
RI = "arn:aws:ec2:us-east-1:111111111111:reserved-instances/ri-1"


def by_type(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Row per raw line-item type (a commitment fee line's Purchase row; its Unused row is left out)."""
    return {
        r["x_charge_type"]: r
        for r in rows
        if r["commitment_discount_status"] != "Unused" or r["charge_category"] != "Usage"
    }


def unused_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["x_charge_type"]: r for r in rows if r["commitment_discount_status"] == "Unused"}


@pytest.fixture
def every_type(tmp_path) -> Path:
    """One row per line-item type, numbers chosen by hand."""
    rows = [
        cur_row(
            line_item_unblended_cost=98.32,
            line_item_net_unblended_cost=90.0,
            pricing_public_on_demand_cost=98.32,
            line_item_unblended_rate="98.32",
            pricing_public_on_demand_rate="98.32",
            resource_tags={"user_team": "ml-prod", "user_env": "prod"},
        ),
        cur_row(
            line_item_line_item_type="Usage",
            line_item_usage_type="USE1-SpotUsage:g5.2xlarge",
            product_instance_type="g5.2xlarge",
            line_item_unblended_cost=0.4242,
            pricing_public_on_demand_cost=1.212,
            line_item_resource_id="i-0spot",
        ),
        cur_row(
            line_item_line_item_type="SavingsPlanCoveredUsage",
            line_item_unblended_cost=98.32,
            pricing_public_on_demand_cost=98.32,
            savings_plan_savings_plan_a_r_n=SP,
            savings_plan_savings_plan_effective_cost=70.7904,
        ),
        cur_row(
            line_item_line_item_type="SavingsPlanNegation",
            line_item_unblended_cost=-98.32,
            pricing_public_on_demand_cost=0.0,
            savings_plan_savings_plan_a_r_n=SP,
        ),
        cur_row(
            line_item_line_item_type="SavingsPlanRecurringFee",
            line_item_product_code="ComputeSavingsPlans",
            line_item_unblended_cost=100.0,
            savings_plan_savings_plan_a_r_n=SP,
            savings_plan_total_commitment_to_date=100.0,
            savings_plan_used_commitment=70.7904,
            line_item_resource_id="",
        ),
        cur_row(
            line_item_line_item_type="SavingsPlanUpfrontFee",
            line_item_product_code="ComputeSavingsPlans",
            line_item_unblended_cost=5000.0,
            savings_plan_savings_plan_a_r_n=SP,
            bill_bill_type="Purchase",
        ),
        cur_row(
            line_item_line_item_type="DiscountedUsage",
            line_item_usage_type="USE1-BoxUsage:g5.2xlarge",
            line_item_unblended_cost=0.0,
            pricing_public_on_demand_cost=1.212,
            reservation_reservation_a_r_n=RI,
            reservation_effective_cost=0.7272,
            line_item_usage_amount=1.0,
        ),
        cur_row(
            line_item_line_item_type="RIFee",
            line_item_unblended_cost=500.0,
            reservation_reservation_a_r_n=RI,
            reservation_unused_amortized_upfront_fee_for_billing_period=12.5,
            reservation_unused_recurring_fee=7.25,
            reservation_unused_quantity=24.0,
            line_item_resource_id="",
        ),
        cur_row(
            line_item_line_item_type="Fee",
            line_item_unblended_cost=3000.0,
            reservation_reservation_a_r_n=RI,
            bill_bill_type="Purchase",
            line_item_resource_id="",
        ),
        cur_row(
            line_item_line_item_type="Tax",
            line_item_unblended_cost=12.34,
            line_item_resource_id="",
            line_item_tax_type="Sales",
        ),
        cur_row(line_item_line_item_type="Credit", line_item_unblended_cost=-25.0, line_item_resource_id=""),
        cur_row(
            line_item_line_item_type="Refund",
            line_item_product_code="AmazonS3",
            line_item_unblended_cost=-3.5,
            line_item_resource_id="",
            bill_bill_type="Refund",
        ),
        cur_row(
            line_item_line_item_type="BundledDiscount",
            line_item_product_code="AWSDataTransfer",
            line_item_usage_type="USE1-DataTransfer-Out-Bytes",
            line_item_unblended_cost=-0.9,
            line_item_resource_id="",
        ),
    ]
    return write_cur(tmp_path / "cur.parquet", rows)


def test_every_line_item_type_hand_checked(every_type, finops_home, tmp_path):
    res, rows = convert(Cur2Converter(), [every_type], provider="aws", period="2025-03", tmp=tmp_path)
    assert res.row_count == 13 + 2  # 13 raw lines; SP recurring fee and RIFee each add an Unused usage row
    assert (
        res.raw_billed_total == res.focus_billed_total == D("8681.6842")
    )  # 98.32 + 0.4242 + 98.32 - 98.32 + 100 + 5000 + 500 + 3000 + 12.34 - 25 - 3.5 - 0.9
    assert set(rows[0]) == set(snake_names())
    usage = rows[0]
    assert (usage["billed_cost"], usage["effective_cost"], usage["list_cost"], usage["contracted_cost"]) == (
        D("98.32"),
        D("98.32"),
        D("98.32"),
        D("90"),
    )
    assert usage["charge_category"] == "Usage" and usage["pricing_category"] == "Standard"
    assert usage["charge_frequency"] == "Usage-Based" and usage["service_category"] == "Compute"
    assert usage["service_name"] == "Amazon Elastic Compute Cloud" and usage["provider_name"] == "AWS"
    assert usage["billing_account_id"] == "111111111111" and usage["sub_account_id"] == "222222222222"
    assert usage["region_id"] == "us-east-1" and usage["availability_zone"] == "us-east-1a"
    assert (
        usage["resource_id"] == "i-0abc"
        and usage["sku_id"] == "SKU1"
        and usage["sku_price_id"] == "SKU1.RATE"
    )
    assert usage["commitment_discount_id"] is None and usage["commitment_discount_status"] is None
    assert usage["billing_period_start"] == START and usage["charge_period_start"] == datetime(2025, 3, 2, 5)
    assert usage["x_provider"] == "aws" and usage["x_instance_type"] == "p5.48xlarge"
    assert usage["x_usage_type"] == "USE1-BoxUsage:p5.48xlarge" and usage["x_operation"] == "RunInstances"
    import json

    assert json.loads(usage["tags"]) == {"user_team": "ml-prod", "user_env": "prod"}

    spot = next(r for r in rows if r["resource_id"] == "i-0spot")
    assert (
        spot["pricing_category"] == "Dynamic"
        and spot["list_cost"] == D("1.212")
        and spot["billed_cost"] == D("0.4242")
    )
    assert spot["tags"] is None  # untagged

    t = by_type(rows)
    cov = t["SavingsPlanCoveredUsage"]
    assert (cov["billed_cost"], cov["effective_cost"], cov["list_cost"]) == (
        D("98.32"),
        D("70.7904"),
        D("98.32"),
    )
    assert (
        cov["commitment_discount_id"],
        cov["commitment_discount_type"],
        cov["commitment_discount_category"],
        cov["commitment_discount_status"],
        cov["pricing_category"],
    ) == (SP, "Savings Plan", "Spend", "Used", "Committed")
    assert cov["commitment_discount_quantity"] == D("70.7904") and cov["commitment_discount_unit"] == "USD"
    neg = t["SavingsPlanNegation"]
    assert (neg["billed_cost"], neg["effective_cost"], neg["list_cost"], neg["charge_category"]) == (
        D("-98.32"),
        D("0"),
        D("0"),
        "Usage",
    )
    # the covered usage is consumed once (on the covered row), not again on its negation
    assert (cov["consumed_quantity"], neg["consumed_quantity"]) == (D("1"), D("0"))
    rec = t["SavingsPlanRecurringFee"]
    assert (rec["billed_cost"], rec["effective_cost"], rec["charge_category"], rec["charge_frequency"]) == (
        D("100"),
        D("0"),
        "Purchase",
        "Recurring",
    )
    assert rec["commitment_discount_status"] is None and rec["resource_id"] is None
    assert rec["commitment_discount_quantity"] == D("100") and rec["pricing_unit"] == "Hours"
    u = unused_rows(rows)
    assert set(u) == {"SavingsPlanRecurringFee", "RIFee"}
    rec_u = u["SavingsPlanRecurringFee"]
    assert (rec_u["billed_cost"], rec_u["effective_cost"], rec_u["list_cost"], rec_u["contracted_cost"]) == (
        D("0"),
        D("29.2096"),
        D("0"),
        D("0"),
    )
    assert (
        rec_u["charge_category"],
        rec_u["commitment_discount_id"],
        rec_u["commitment_discount_quantity"],
        rec_u["consumed_quantity"],
        rec_u["pricing_category"],
    ) == ("Usage", SP, D("29.2096"), None, "Committed")
    up = t["SavingsPlanUpfrontFee"]
    assert (up["billed_cost"], up["effective_cost"], up["charge_category"], up["charge_frequency"]) == (
        D("5000"),
        D("0"),
        "Purchase",
        "One-Time",
    )
    ri = t["DiscountedUsage"]
    assert (ri["billed_cost"], ri["effective_cost"], ri["list_cost"]) == (D("0"), D("0.7272"), D("1.212"))
    assert (
        ri["commitment_discount_id"],
        ri["commitment_discount_type"],
        ri["commitment_discount_category"],
        ri["commitment_discount_status"],
        ri["commitment_discount_unit"],
    ) == (RI, "Reserved Instance", "Usage", "Used", "Hours")
    rif = t["RIFee"]
    assert (rif["billed_cost"], rif["effective_cost"], rif["charge_category"]) == (
        D("500"),
        D("0"),
        "Purchase",
    )
    rif_u = u["RIFee"]
    assert (rif_u["billed_cost"], rif_u["effective_cost"], rif_u["commitment_discount_status"]) == (
        D("0"),
        D("19.75"),
        "Unused",
    )
    assert rif_u["commitment_discount_quantity"] == D("24") and rif_u["charge_category"] == "Usage"
    assert rif_u["commitment_discount_unit"] == "Hours" and rif_u["consumed_unit"] is None
    fee = t["Fee"]
    assert (
        fee["billed_cost"],
        fee["effective_cost"],
        fee["charge_category"],
        fee["commitment_discount_id"],
    ) == (D("3000"), D("0"), "Purchase", RI)
    tax = t["Tax"]
    assert (tax["billed_cost"], tax["effective_cost"], tax["charge_category"], tax["pricing_category"]) == (
        D("12.34"),
        D("12.34"),
        "Tax",
        None,
    )
    assert tax["pricing_quantity"] is None
    cr = t["Credit"]
    assert (cr["billed_cost"], cr["effective_cost"], cr["charge_category"], cr["list_cost"]) == (
        D("-25"),
        D("-25"),
        "Credit",
        D("-25"),
    )
    rf = t["Refund"]
    assert (rf["billed_cost"], rf["charge_category"], rf["charge_class"], rf["service_category"]) == (
        D("-3.5"),
        "Adjustment",
        "Correction",
        "Storage",
    )
    bd = t["BundledDiscount"]
    assert (bd["billed_cost"], bd["effective_cost"], bd["service_category"]) == (
        D("-0.9"),
        D("-0.9"),
        "Networking",
    )
    # amortised total: usage + spot + SP eff + unused SP + RI eff + unused RI + tax/credit/refund/discount
    assert res.focus_effective_total == D("98.32") + D("0.4242") + D("70.7904") + D("29.2096") + D(
        "0.7272"
    ) + D("19.75") + D("12.34") - D("25") - D("3.5") - D("0.9")


def test_service_categories_and_non_usd(tmp_path, finops_home):
    rows = [
        cur_row(
            line_item_product_code="AmazonS3",
            line_item_usage_type="USE1-TimedStorage-ByteHrs",
            line_item_unblended_cost=1.0,
            line_item_currency_code="EUR",
            pricing_currency="USD",
        ),
        cur_row(
            line_item_product_code="AmazonEC2",
            line_item_usage_type="USE1-EBS:VolumeUsage.gp3",
            line_item_unblended_cost=2.0,
            line_item_currency_code="EUR",
            pricing_currency="USD",
        ),
        cur_row(
            line_item_product_code="AmazonEC2",
            line_item_usage_type="USE1-DataTransfer-Out-Bytes",
            line_item_unblended_cost=3.0,
            line_item_currency_code="EUR",
            pricing_currency="USD",
        ),
        cur_row(
            line_item_product_code="AmazonSageMaker",
            line_item_usage_type="USE1-Train:ml.g5.2xlarge",
            line_item_unblended_cost=4.0,
            line_item_currency_code="EUR",
            pricing_currency="USD",
        ),
        cur_row(
            line_item_product_code="SomeNewService",
            line_item_unblended_cost=5.0,
            line_item_currency_code="EUR",
            pricing_currency=None,
        ),
    ]
    res, out = convert(
        Cur2Converter(),
        [write_cur(tmp_path / "c.parquet", rows)],
        provider="aws",
        period="2025-03",
        tmp=tmp_path,
    )
    cats = [r["service_category"] for r in sorted(out, key=lambda r: r["billed_cost"])]
    assert cats == ["Storage", "Storage", "Networking", "AI and Machine Learning", "Other"]
    assert {r["billing_currency"] for r in out} == {"EUR"} and res.currencies == ["EUR"]
    assert {r["pricing_currency"] for r in out} == {"USD", "EUR"}
    # pricing-currency prices are only given when they are in the billing currency
    assert all(r["pricing_currency_effective_cost"] is None for r in out if r["pricing_currency"] == "USD")
    assert next(r for r in out if r["service_category"] == "Other")["service_name"] == "SomeNewService"


def test_hostile_tags_stay_inert_json(tmp_path, finops_home):
    import json

    hostile = {
        "user_team": "'; drop table x;--",
        'we"ird key\n': "=cmd|' /C calc'!A0",
        "user_emoji": "🚀💸",
        "user_big": "x" * 10_000,
        "user_nl": "line1\nline2\r\n\t\\",
    }
    rows = [cur_row(line_item_unblended_cost=1.0, resource_tags=hostile)]
    _res, out = convert(
        Cur2Converter(),
        [write_cur(tmp_path / "h.parquet", rows)],
        provider="aws",
        period="2025-03",
        tmp=tmp_path,
    )
    assert json.loads(out[0]["tags"]) == hostile


def test_missing_required_column_is_a_clear_error(tmp_path, finops_home):
    tbl = pa.Table.from_pylist([cur_row(line_item_unblended_cost=1.0)], schema=CUR2_SCHEMA).drop(
        ["line_item_unblended_cost"]
    )
    pq.write_table(tbl, tmp_path / "m.parquet")
    with pytest.raises(ConversionError, match="missing required column.*line_item_unblended_cost"):
        convert(Cur2Converter(), [tmp_path / "m.parquet"], provider="aws", period="2025-03", tmp=tmp_path)


def test_optional_columns_absent_and_unknown_extra_columns_tolerated(tmp_path, finops_home):
    keep = list(REQUIRED)  # exactly the columns the mapping cannot work without
    tbl = pa.Table.from_pylist([cur_row(line_item_unblended_cost=7.5)], schema=CUR2_SCHEMA).select(keep)
    tbl = tbl.append_column("x_brand_new_aws_column", pa.array(["surprise"]))
    pq.write_table(tbl, tmp_path / "min.parquet")
    res, out = convert(
        Cur2Converter(), [tmp_path / "min.parquet"], provider="aws", period="2025-03", tmp=tmp_path
    )
    assert (
        res.focus_billed_total == D("7.5") and out[0]["effective_cost"] == D("7.5") and out[0]["tags"] is None
    )


def test_legacy_names_to_cur2():
    assert legacy_to_snake("lineItem/UnblendedCost") == "line_item_unblended_cost"
    assert legacy_to_snake("savingsPlan/SavingsPlanARN") == "savings_plan_savings_plan_a_r_n"
    assert legacy_to_snake("pricing/publicOnDemandCost") == "pricing_public_on_demand_cost"
    assert legacy_to_snake("reservation/UnusedAmortizedUpfrontFeeForBillingPeriod") == (
        "reservation_unused_amortized_upfront_fee_for_billing_period"
    )
    assert legacy_to_snake("product/instanceType") == "product_instance_type"


LEGACY_HEADER = (
    "identity/LineItemId,bill/PayerAccountId,bill/BillingPeriodStartDate,bill/BillingPeriodEndDate,"
    "lineItem/UsageAccountId,lineItem/LineItemType,lineItem/UsageStartDate,lineItem/UsageEndDate,"
    "lineItem/ProductCode,lineItem/UsageType,lineItem/CurrencyCode,lineItem/UnblendedCost,"
    "savingsPlan/SavingsPlanARN,savingsPlan/SavingsPlanEffectiveCost,product/region,"
    '"resourceTags/user:team","resourceTags/user:Name"\n'
)


def _legacy_csv(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt", newline="") as f:
        f.write(LEGACY_HEADER)
        for line in lines:
            f.write(line + "\n")
    return path


def test_legacy_csv_hand_checked(tmp_path, finops_home):
    p = _legacy_csv(
        tmp_path / "legacy.csv.gz",
        [
            "a,111,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,222,Usage,2025-03-02T05:00:00Z,2025-03-02T06:00:00Z,"
            'AmazonEC2,USE1-SpotUsage:g5.xlarge,USD,1.5E-3,,,us-east-1,"a ""quoted"", team","=cmd|\'x\'!A1"',
            f"b,111,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,222,SavingsPlanCoveredUsage,2025-03-02T05:00:00Z,"
            f"2025-03-02T06:00:00Z,AmazonEC2,USE1-BoxUsage:p5.48xlarge,USD,98.32,{SP},70.7904,us-east-1,,",
            "c,111,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,222,Tax,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,"
            "AmazonEC2,,USD,0.0000000001,,,,,",
        ],
    )
    res, out = convert(CurLegacyConverter(), [p], provider="aws", period="2025-03", tmp=tmp_path)
    assert res.raw_billed_total == res.focus_billed_total == D("98.3215000001")
    t = by_type(out)
    import json

    assert json.loads(t["Usage"]["tags"]) == {"user_team": 'a "quoted", team', "user_Name": "=cmd|'x'!A1"}
    assert t["Usage"]["pricing_category"] == "Dynamic" and t["Usage"]["region_id"] == "us-east-1"
    assert t["SavingsPlanCoveredUsage"]["effective_cost"] == D("70.7904")
    assert t["SavingsPlanCoveredUsage"]["commitment_discount_id"] == SP
    assert t["Tax"]["tags"] is None and t["Tax"]["charge_period_end"] == datetime(2025, 4, 1)


def test_legacy_corrupt_gzip_is_a_conversion_error(tmp_path, finops_home):
    good = _legacy_csv(
        tmp_path / "g.csv.gz",
        [
            "a,111,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,222,Usage,2025-03-02T05:00:00Z,2025-03-02T06:00:00Z,"
            "AmazonEC2,x,USD,1.0,,,us-east-1,,"
        ]
        * 2000,
    )
    data = good.read_bytes()
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(data[: len(data) // 2] + b"\x00garbage" * 10)
    with pytest.raises(ConversionError):
        convert(CurLegacyConverter(), [bad], provider="aws", period="2025-03", tmp=tmp_path)
    head = tmp_path / "head.csv.gz"  # broken in its first block: the header read fails too
    head.write_bytes(data[:10] + b"\x00" * 30 + data[40:])
    with pytest.raises(ConversionError):
        convert(CurLegacyConverter(), [head], provider="aws", period="2025-03", tmp=tmp_path / "h")


def test_truncated_parquet_is_a_conversion_error(every_type, tmp_path, finops_home):
    data = every_type.read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) - 100])
    with pytest.raises(ConversionError, match="cannot read raw files"):
        convert(Cur2Converter(), [cut], provider="aws", period="2025-03", tmp=tmp_path)


def test_bad_money_text_fails_loudly_not_silently(tmp_path, finops_home):
    p = _legacy_csv(
        tmp_path / "m.csv.gz",
        [
            "a,111,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,222,Usage,2025-03-02T05:00:00Z,2025-03-02T06:00:00Z,"
            "AmazonEC2,x,USD,twelve dollars,,,us-east-1,,"
        ],
    )
    with pytest.raises(ConversionError):
        convert(CurLegacyConverter(), [p], provider="aws", period="2025-03", tmp=tmp_path)


def test_cur2_csv_export_with_json_tags(tmp_path, finops_home):
    import json

    path = tmp_path / "cur2.csv.gz"
    with gzip.open(path, "wt", newline="") as f:
        f.write(
            "bill_payer_account_id,bill_billing_period_start_date,bill_billing_period_end_date,"
            "line_item_line_item_type,line_item_unblended_cost,line_item_usage_start_date,line_item_usage_end_date,"
            "line_item_currency_code,line_item_product_code,resource_tags\n"
        )
        f.write(
            "111,2025-03-01T00:00:00.000Z,2025-04-01T00:00:00.000Z,Usage,0.25,2025-03-03T00:00:00.000Z,"
            '2025-03-03T01:00:00.000Z,USD,AmazonEC2,"{""user_team"":""a\'b""}"\n'
        )
        f.write(
            "111,2025-03-01T00:00:00.000Z,2025-04-01T00:00:00.000Z,Usage,0.5,2025-03-03T00:00:00.000Z,"
            "2025-03-03T01:00:00.000Z,USD,AmazonEC2,{}\n"
        )
    res, out = convert(Cur2Converter(), [path], provider="aws", period="2025-03", tmp=tmp_path)
    assert res.raw_billed_total == res.focus_billed_total == D("0.75")
    tags = sorted((r["tags"] for r in out), key=str)
    assert tags[0] is None and json.loads(tags[1]) == {"user_team": "a'b"}


def test_legacy_csv_tag_keys_differing_only_in_case_stay_two_tags(tmp_path, finops_home):
    """AWS tag keys are case-sensitive (user:Team and user:team are two tags); DuckDB folds
    header names by case, which renamed one to `user:team_1`, or, across the files of one
    delivery, merged both into one column."""
    import json

    head = LEGACY_HEADER.rstrip("\n")  # ... "resourceTags/user:team","resourceTags/user:Name"
    row = (
        "a,111,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,222,Usage,2025-03-02T05:00:00Z,2025-03-02T06:00:00Z,"
        "AmazonEC2,x,USD,{cost},,,us-east-1,{tags}"
    )

    def write(name, header, lines):
        with gzip.open(tmp_path / name, "wt", newline="") as f:
            f.write(header + "\n" + "".join(line + "\n" for line in lines))
        return tmp_path / name

    one = write(
        "one.csv.gz",
        head + ',"resourceTags/user:Team"',
        [row.format(cost="1", tags="web,,ml"), row.format(cost="2", tags="web,,")],
    )
    res, out = convert(CurLegacyConverter(), [one], provider="aws", period="2025-03", tmp=tmp_path / "a")
    assert res.focus_billed_total == D(3)
    assert sorted(json.dumps(json.loads(r["tags"]), sort_keys=True) for r in out) == [
        '{"user_Team": "ml", "user_team": "web"}',
        '{"user_team": "web"}',
    ]

    # across files: one file tags Team, the other team -> two keys, not one merged column
    a = write(
        "a.csv.gz",
        head.replace('"resourceTags/user:team"', '"resourceTags/user:Team"'),
        [row.format(cost="1", tags="ml,")],
    )
    b = write("b.csv.gz", head, [row.format(cost="2", tags="web,")])
    res, out = convert(CurLegacyConverter(), [a, b], provider="aws", period="2025-03", tmp=tmp_path / "b")
    assert res.focus_billed_total == res.raw_billed_total == D(3)
    assert sorted(r["tags"] for r in out) == ['{"user_Team":"ml"}', '{"user_team":"web"}']

    # the same header twice in one file is a broken file, named as such
    dup = write(
        "dup.csv.gz",
        head + ',"resourceTags/user:Team","resourceTags/user:Team"',
        [row.format(cost="1", tags="a,b,c,d")],
    )
    with pytest.raises(ConversionError, match="user:Team"):
        convert(CurLegacyConverter(), [dup], provider="aws", period="2025-03", tmp=tmp_path / "c")
