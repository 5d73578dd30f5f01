"""Spend-based CUDs on Google's multiprice model as Google's own FOCUS export carries them
(gcp_billing_export_focus_*, its 55-column schema: no CommitmentDiscount* columns; the CUD is in
x_ConsumptionModelId / x_ConsumptionModelDescription / x_SubscriptionInstanceId, the usage's
default price in x_CostAtEffectivePriceDefault, the fee's FEE_UTILIZATION_OFFSET in x_Credits,
BilledCost / EffectiveCost net of every credit) loaded through finops.focus.gcp_focus, then read
by the commitments code.

The month is the one tests/commitments/test_gcp_new_spend_cud.py builds from the detailed export
(a Compute flexible 1-year CUD of $10/h, a $240 fee a day), so the figures must be the same:
  5 Oct: usage 200 + 50 at the default / list price, billed 144 + 36; offset -180, 60 unused.
  6 Oct: usage 250 + 83.25, billed 180 + 59.94; offset -239.94, 0.06 unused; plus $100 of
         on-demand n2 usage beyond the commitment (eligible, not covered).
  month: fee 480, used 419.94, unused 60.06, utilisation 0.874875, savings 103.25."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal as D
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.commitments.gcp import new_spend_cud_utilisation
from finops.commitments.query import gcp_new_spend_cud_lines, month_window
from finops.commitments.settings import parse_settings
from finops.commitments.store import refresh_period
from finops.export import export_focus
from finops.focus.gcp_focus import CONVERTER
from finops.focus_validator import DEFAULT_VENV, run_focus_validator
from finops.ingest import RawBatch, load_batch

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parents[1] / "data" / "gcp" / "gcp_billing_export_focus.schema.json"
    ).read_text()
)
SUB = "769c55ea-c50f-4258-bcf5-04b6688fa5fa"
ACCOUNT = "010101-F0FFF0-10XX01"
FEE_SKU, FEE_NAME = "5515-81A8-03A2", "Compute Flexible Committed Use Discounts - 1 Year"
CORE = ("2D4E-N2-CORE", "N2 Instance Core running in Americas")
RAM = ("5C8F-N2-RAM", "N2 Instance Ram running in Americas")
CUD_MODEL = ("D97B-0795-975B", "Compute Flexible CUD - 1 Year")
NEW_ID = f"gcp-spend-cud:{SUB}"


def _row(day: int, sku: tuple[str, str], billed: str, *, default: str | None = None, model=None,
         offset: str | None = None) -> dict:  # fmt: skip
    """One row of Google's FOCUS export. Usage runs 8 hours on an n2-standard-8; the fee bills
    its commitment as a quantity of $1 units, the offset credit netted into Billed/EffectiveCost."""
    t0 = datetime(2026, 10, day, tzinfo=UTC)
    fee = offset is not None
    listed = D(billed) - D(offset) if fee else D(default if default is not None else billed)
    qty = listed if fee else D(8)
    unit = "count" if fee else "hour"
    price = D(1) if fee else D(billed) / qty
    return {
        "BilledCost": D(billed), "EffectiveCost": D(billed), "ListCost": listed,
        "ContractedCost": listed if fee else D(billed), "ContractedUnitPrice": price, "ListUnitPrice": listed / qty,
        "PricingCurrencyContractedUnitPrice": price, "PricingCurrencyEffectiveCost": D(billed),
        "PricingCurrencyListUnitPrice": listed / qty, "PricingCurrency": "USD",
        "BillingAccountId": ACCOUNT, "BillingAccountType": "Billing Account", "BillingCurrency": "USD",
        "BillingPeriodStart": datetime(2026, 10, 1, 7, tzinfo=UTC), "BillingPeriodEnd": datetime(2026, 11, 1, 7, tzinfo=UTC),
        "ChargeCategory": "Usage", "ChargeClass": None, "ChargeDescription": sku[1],
        "ChargePeriodStart": t0, "ChargePeriodEnd": t0 + timedelta(days=1),
        "ConsumedQuantity": qty, "ConsumedUnit": unit, "PricingQuantity": qty, "PricingUnit": unit,
        "PricingCategory": "Standard", "ProviderName": "Google Cloud", "PublisherName": "Google Cloud",
        "RegionId": None if fee else "us-central1", "RegionName": None if fee else "Iowa", "AvailabilityZone": None,
        "ResourceId": None if fee else "//compute.googleapis.com/projects/ml-prod/zones/us-central1-a/instances/trainer-1",
        "ResourceName": None if fee else "trainer-1",
        "ServiceName": "Compute Engine", "SkuId": sku[0], "SkuPriceId": f"{sku[0]}:usd",
        "SubAccountId": "ml-prod", "SubAccountName": "ml-prod",
        "x_Credits": [{"Name": "Fee utilization offset", "Amount": D(offset), "FullName": "Fee utilization offset",
                       "Id": f"FEE_UTILIZATION_OFFSET:{SUB}", "Type": "FEE_UTILIZATION_OFFSET"}] if fee else [],
        "x_CostType": "regular", "x_CurrencyConversionRate": 1.0,
        "x_ExportTime": t0 + timedelta(days=1, hours=6), "x_Location": "us-central1",
        "x_Project": {"Id": "ml-prod", "Number": "123456789012", "Name": "ml-prod",
                      "AncestryNumbers": "/5678/123456789012/", "Ancestors": []},
        "x_ServiceId": "6F81-5844-456A",
        "x_SystemLabels": [] if fee else [{"Key": "compute.googleapis.com/machine_spec", "Value": "n2-standard-8"}],
        "x_Labels": [], "x_ProjectLabels": [], "x_Tags": [],
        "x_SubscriptionInstanceId": SUB if fee or model else None,
        "x_PriceEffectivePriceDefault": None if fee else D(default or billed) / qty,
        "x_PriceListPriceConsumptionModel": None, "x_CostAtListConsumptionModel": None,
        "x_CostAtEffectivePriceDefault": None if fee else D(default or billed),
        "x_ConsumptionModelId": model[0] if model else None,
        "x_ConsumptionModelDescription": model[1] if model else (None if fee else "Default"),
    }  # fmt: skip


ROWS = [
    _row(5, (FEE_SKU, FEE_NAME), "60", offset="-180"),
    _row(5, CORE, "144", default="200", model=CUD_MODEL),
    _row(5, RAM, "36", default="50", model=CUD_MODEL),
    _row(6, (FEE_SKU, FEE_NAME), "0.06", offset="-239.94"),
    _row(6, CORE, "180", default="250", model=CUD_MODEL),
    _row(6, RAM, "59.94", default="83.25", model=CUD_MODEL),
    _row(6, CORE, "100"),  # on demand beyond the commitment
]


def _arrow(fields: list[dict]) -> pa.Schema:
    def conv(f: dict) -> pa.Field:
        if f["type"] == "RECORD":
            typ: pa.DataType = pa.struct([conv(c) for c in f["fields"]])
        else:
            typ = {"STRING": pa.string(), "FLOAT": pa.float64(), "TIMESTAMP": pa.timestamp("us", tz="UTC"),
                   "NUMERIC": pa.decimal128(38, 9), "BOOLEAN": pa.bool_(), "INTEGER": pa.int64()}[f["type"]]  # fmt: skip
        return pa.field(f["name"], pa.list_(typ) if f.get("mode") == "REPEATED" else typ)

    return pa.schema([conv(f) for f in fields])


def _load(wh, tmp_path) -> None:
    path = tmp_path / "gcp_billing_export_focus.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS, schema=_arrow(SCHEMA)), path)
    entry = load_batch(wh, RawBatch("gcp-focus-export", "gcp", "2026-10", [path], "f1"), CONVERTER)
    assert entry.status == "loaded", entry.message
    assert (
        entry.raw_billed_total == entry.focus_billed_total == D("580.00")
    )  # 60 + 144 + 36 | 0.06 + 180 + 59.94 + 100


def test_focus_columns_match_the_detailed_mapping(duckdb_wh, tmp_path):
    _load(duckdb_wh, tmp_path)
    got = duckdb_wh.query(
        "SELECT CAST(charge_period_start AS DATE), sku_id, commitment_discount_id, commitment_discount_category, "
        "commitment_discount_status, commitment_discount_type, commitment_discount_name, pricing_category, "
        "contracted_cost, effective_cost, billed_cost, list_cost, x_instance_type FROM focus_costs "
        "ORDER BY 1, 2, effective_cost"
    )
    cud, n2 = CUD_MODEL[1], "n2-standard-8"
    assert got == [
        (date(2026, 10, 5), CORE[0], SUB, "Spend", "Used", "Committed Use Discount", cud, "Committed",
         D(200), D(144), D(144), D(200), n2),
        (date(2026, 10, 5), FEE_SKU, SUB, "Spend", "Unused", "Committed Use Discount", FEE_NAME, "Committed",
         D(240), D(60), D(60), D(240), None),
        (date(2026, 10, 5), RAM[0], SUB, "Spend", "Used", "Committed Use Discount", cud, "Committed",
         D(50), D(36), D(36), D(50), n2),
        (date(2026, 10, 6), CORE[0], None, None, None, None, None, "Standard", D(100), D(100), D(100), D(100), n2),
        (date(2026, 10, 6), CORE[0], SUB, "Spend", "Used", "Committed Use Discount", cud, "Committed",
         D(250), D(180), D(180), D(250), n2),
        (date(2026, 10, 6), FEE_SKU, SUB, "Spend", "Unused", "Committed Use Discount", FEE_NAME, "Committed",
         D(240), D("0.06"), D("0.06"), D(240), None),
        (date(2026, 10, 6), RAM[0], SUB, "Spend", "Used", "Committed Use Discount", cud, "Committed",
         D("83.25"), D("59.94"), D("59.94"), D("83.25"), n2),
    ]  # fmt: skip


def test_utilisation_and_coverage_as_from_the_detailed_export(any_wh, tmp_path):
    _load(any_wh, tmp_path)
    (m,) = new_spend_cud_utilisation(gcp_new_spend_cud_lines(any_wh, *month_window("2026-10")), "month")
    assert (m.commitment_id, m.fee, m.used_cost, m.unused_cost, m.utilisation) == (
        SUB, D(480), D("419.94"), D("60.06"), D("0.874875"),
    )  # fmt: skip
    assert (m.covered_list, m.covered_contracted, m.covered_effective, m.savings) == (
        D("583.25"), D("583.25"), D("419.94"), D("103.25"),
    )  # fmt: skip
    refresh_period(any_wh, "2026-10", parse_settings({"providers": ["gcp"]}))
    assert any_wh.query(
        "SELECT day, commitment_id, used_cost, unused_cost, covered_list, used_quantity, unused_quantity, unit "
        "FROM commitment_utilisation WHERE provider = 'gcp' ORDER BY day"
    ) == [
        (date(2026, 10, 5), NEW_ID, D(180), D(60), D(250), D(180), D(60), "USD"),
        (date(2026, 10, 6), NEW_ID, D("239.94"), D("0.06"), D("333.25"), D("239.94"), D("0.06"), "USD"),
    ]
    assert any_wh.query(
        "SELECT day, SUM(covered_list), SUM(covered_effective), SUM(eligible_list), SUM(unused_cost) "
        "FROM commitment_coverage WHERE provider = 'gcp' GROUP BY day ORDER BY day"
    ) == [
        (date(2026, 10, 5), D(250), D(180), D(0), D(60)),
        (date(2026, 10, 6), D("333.25"), D("239.94"), D(100), D("0.06")),
    ]


@pytest.mark.skipif(
    not (DEFAULT_VENV / "bin" / "focus-validator").exists(),
    reason="focus-validator venv missing: run `make focus-validator`",
)
def test_new_model_rows_pass_focus_validator(duckdb_wh, tmp_path):
    _load(duckdb_wh, tmp_path)
    out = tmp_path / "focus.parquet"
    assert export_focus(duckdb_wh, "2026-10", out) == len(ROWS)
    res = run_focus_validator(out)
    # only the losing branch of InvoiceId's passing OR (docs/focus-validator.md), as for every GCP shape
    assert re.findall(r"([\w]+-C-\d{3}-\w+): FAIL", res.output) == ["InvoiceId-C-004-C"], res.output[-3000:]
    assert res.failed == 1
